/*
 * bench_tree.c — the measuring child of collprof-bench (see bench.h).
 *
 * One API call's event tree, as NCCL 2.28 sends it for an all-reduce over
 * the network transport (the ar_net capture), with C channels and S steps:
 *   GroupApi start, state 23, CollApi start/stop, state 24,
 *   KernelLaunch start/stop, Group start, Coll start (parent CollApi),
 *   Coll stop, Group stop, GroupApi stop, then, as the proxy thread does
 *   after the Coll has stopped (most KernelCh/ProxyOp start after it, ABI
 *   doc): every channel's KernelCh start (parent Coll); per channel its
 *   state 22 and stop, ProxyOp
 *   start (parent Coll), state 19, per step ProxyStep start, states 8, 20, 9,
 *   stop; ProxyOp stop; and one ProxyCtrl start, state 14, stop.
 * Types are emitted as NCCL would under the mask read at the GroupApi start
 * (emission rules of the ABI doc), so the plugin's live mask is honoured.
 * Events counted = starts; the time includes stops and states.
 *
 * With COLLPROF_BENCH_PROXY=1 each thread gets a proxy thread on its
 * communicator, as NCCL runs one: the application thread sends everything
 * up to the GroupApi stop and hands the Coll over (a queue); the proxy
 * thread sends, per call, what an NVLink all-reduce makes it send (the
 * ar_nvlink capture): every channel's KernelCh start (parent the Coll),
 * then per channel state 22 and stop, and one ProxyCtrl start, state 14,
 * stop.  The application thread's time is what the profiler's work on two
 * threads of one communicator costs the application; the proxy thread's
 * (its callbacks per proxy start, states and stops included, timed calls
 * only) is what it costs NCCL's proxy thread.
 */
#include "bench.h"
#include "nccl_profiler_abi.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { STEPS = 2, WARMUP = 2000, MAXSLICE = 64, MAXT_SLICE = 256, MAXCH = 64 };
/* KernelCh per call (COLLPROF_BENCH_CHANNELS, default 2, at most MAXCH):
 * NCCL sends one per channel, 24 for a small all-reduce on 2 H200s; the
 * ProxyOp and ProxyStep of a network call follow the same count. */
static int CHANNELS = 2;

static ncclProfiler_v5_t *g_p;
static int g_mask;                  /* NCCL's one process-wide mask int */
static pthread_barrier_t g_bar;
static long g_iters;
static int g_threads;
static pid_t g_pid;                 /* getpid() is a system call: once */
/* COLLPROF_BENCH_SLICES=S (T >= 2, not with a proxy): the timed calls are
 * cut into S pairs of slices, one thread alone (each in turn) then all of
 * them, each slice iters/S calls per thread running; see bench.h. */
static int g_slices;
/* Slice mode: calls per running thread in one slice. */
static long slice_calls(void) { return g_iters / g_slices > 0 ? g_iters / g_slices : 1; }

/* One per thread, on its own cache lines: the counters are written at every
 * event, and two threads' counters on one line would make the driver itself
 * stop scaling (what the 2-thread column measures is the plugin). */
typedef struct thr {
  _Alignas(64) int idx;
  void *ctx;
  uint64_t events, states, ns;
  uint64_t timed_events;            /* proxy thread: its starts in timed calls */
  struct pq *q;                     /* proxy mode: the queue to its proxy thread */
  /* slice mode: each slice's time and events (0 where it sat out) */
  uint64_t slice_ns[2 * MAXSLICE], slice_ev[2 * MAXSLICE], slice_st[2 * MAXSLICE];
} thr;

/* Proxy mode: calls handed from an application thread to its proxy
 * thread (single producer, single consumer; indices on lines of their
 * own).  A full queue makes the application thread wait (counted).  16
 * calls deep, not more: with KernelCh on NCCL's calls wait for its proxy
 * thread, and collprof takes a KernelCh's span only while fewer than 32
 * later KernelCh-on calls started (parent_link.h, CP_KC_SLOT_TRUST).  With 1024
 * the application ran far ahead, and 97% of the proxy's KernelCh took the
 * "fell behind" way (span dropped, affinity hook), which runs rarely do. */
enum { QCAP = 16 };
typedef struct pq_ent { void *co; uint64_t seq; int m; } pq_ent;
typedef struct pq {
  _Alignas(64) _Atomic uint64_t head;
  _Alignas(64) _Atomic uint64_t tail;
  _Alignas(64) _Atomic int done;
  uint64_t full_waits;              /* application thread only */
  thr px;                           /* the proxy thread's own counters */
  pq_ent e[QCAP];
} pq;
static int g_proxy;                 /* COLLPROF_BENCH_PROXY=1 */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void logger(int level, unsigned long flags, const char *file, int line,
                   const char *fmt, ...) {
  (void)level; (void)flags; (void)file; (void)line; (void)fmt;
}

/* NCCL 2.28's emission rules (ABI doc), for the mask m read at a call. */
#define ANY(m, bits) (((m) & (bits)) != 0)
enum {
  GA = ncclProfileGroupApi, CA = ncclProfileCollApi, KL = ncclProfileKernelLaunch,
  GR = ncclProfileGroup, CO = ncclProfileColl, PO = ncclProfileProxyOp,
  PS = ncclProfileProxyStep, PC = ncclProfileProxyCtrl, KC = ncclProfileKernelCh,
  NP = ncclProfileNetPlugin, P2 = ncclProfileP2p, PA = ncclProfileP2pApi
};

/* COLLPROF_BENCH_POLLUTE=KB: before every callback the thread writes KB
 * of a buffer of its own, as NCCL's own work between two callbacks pushes
 * the profiler's cache lines out (a hot loop keeps every line the plugin
 * touches in L1, which NCCL never does).  Both plugins pay the same
 * writes, so "own ns" is then the plugin's cost with cold lines: what a
 * callback costs per line it touches.  The buffer is per thread (no
 * sharing between threads), one store per cache line. */
static size_t g_pollute;            /* bytes, 0: off */
static __thread unsigned char *t_dirt;
/* COLLPROF_BENCH_IPOLLUTE=KB: the same for instructions: before every
 * callback the thread runs KB of code, one short jump per 64-byte line
 * (NCCL's own code between two callbacks pushes the plugin's code out of
 * the instruction cache as well).  Shared by the threads: code is read. */
static void (*g_sled)(void);
static void make_sled(long kb) {
  const size_t n = (size_t)kb * 1024;
  unsigned char *c = mmap(NULL, n + 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (c == MAP_FAILED) return;
  for (size_t i = 0; i < n; i += 64) { c[i] = 0xEB; c[i + 1] = 62; }   /* jmp to the next line */
  c[n] = 0xC3;                                                            /* ret */
  if (mprotect(c, n + 64, PROT_READ | PROT_EXEC) != 0) return;
  g_sled = (void (*)(void))(void *)c;
}
static void pollute(void) {
  if (g_sled) g_sled();
  if (!g_pollute) return;
  if (!t_dirt && !(t_dirt = aligned_alloc(64, g_pollute))) { g_pollute = 0; return; }
  static __thread unsigned char v;
  v++;
  for (size_t i = 0; i < g_pollute; i += 64) t_dirt[i] = v;
  __asm__ volatile("" ::: "memory");
}

static void *start(thr *t, ncclProfilerEventDescr_v5_t *d) {
  void *h = NULL;
  if (g_pollute || g_sled) {   /* NCCL fills the descriptor just before the call: hot */
    pollute();
    ncclProfilerEventDescr_v5_t hot = *d;
    g_p->startEvent(t->ctx, &h, &hot);
    t->events++;
    return h;
  }
  g_p->startEvent(t->ctx, &h, d);
  t->events++;
  return h;
}
static void state(thr *t, void *h, int s, uint64_t arg) {
  if (!h) return;
  ncclProfilerEventStateArgs_v5_t a;
  a.pTimer = arg;
  pollute();
  g_p->recordEventState(h, (ncclProfilerEventState_v5_t)s, &a);
  t->states++;
}
static void stop(void *h) {
  if (!h) return;
  pollute();
  g_p->stopEvent(h);
}

/* The application thread's part of one API call, up to the GroupApi stop:
 * returns the Coll (NULL if none) and, in *mp, the mask read (0: the call
 * sent nothing). */
static void *app_part(thr *t, uint64_t seq, char *buf, int *mp) {
  int m = *mp = __atomic_load_n(&g_mask, __ATOMIC_RELAXED);
  if (m == 0) return NULL;
  int want_ga = ANY(m, GA | CA | PA | KL | GR | CO | P2 | PO | PS | KC | NP);
  int want_ca = ANY(m, CA | CO | PO | PS | KC | NP);
  int want_gr = ANY(m, GR | CO | P2 | PO | PS | KC | NP);
  int want_co = ANY(m, CO | PO | PS | KC | NP);
  ncclProfilerEventDescr_v5_t d;
  void *ga = NULL, *ca = NULL, *kl = NULL, *gr = NULL, *co = NULL;

  if (want_ga) {
    memset(&d, 0, sizeof d);
    d.type = GA;
    d.groupApi.groupDepth = 1;
    ga = start(t, &d);
    state(t, ga, ncclProfilerGroupStartApiStop, 0);
  }
  if (want_ca) {
    memset(&d, 0, sizeof d);
    d.type = CA;
    d.parentObj = ga;
    d.collApi.func = "AllReduce";
    d.collApi.count = 1024;
    d.collApi.datatype = "ncclFloat32";
    d.collApi.stream = buf;
    ca = start(t, &d);
    stop(ca);
  }
  if (ga) state(t, ga, ncclProfilerGroupEndApiStart, 0);
  if (m & KL) {
    memset(&d, 0, sizeof d);
    d.type = KL;
    d.parentObj = ga;
    d.kernelLaunch.stream = buf;
    kl = start(t, &d);
    stop(kl);
  }
  if (want_gr) {
    memset(&d, 0, sizeof d);
    d.type = GR;
    gr = start(t, &d);
  }
  if (want_co) {
    memset(&d, 0, sizeof d);
    d.type = CO;
    d.parentObj = ca;
    d.rank = t->idx;
    d.coll.seqNumber = seq;
    d.coll.func = "AllReduce";
    d.coll.sendBuff = buf;
    d.coll.recvBuff = buf + 64;
    d.coll.count = 1024;
    d.coll.datatype = "ncclFloat32";
    d.coll.nChannels = CHANNELS;
    d.coll.nWarps = 16;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    d.coll.parentGroup = gr;
    co = start(t, &d);
    stop(co);
  }
  stop(gr);
  stop(ga);
  return co;
}

/* The proxy side of a call, after its Coll stopped; net: with the network
 * transport's ProxyOp and ProxySteps (the default tree), else as over
 * NVLink (KernelCh and ProxyCtrl only). */
static void proxy_part(thr *t, void *co, int m, uint64_t seq, int net) {
  ncclProfilerEventDescr_v5_t d;
  void *kc[MAXCH] = {NULL};
  /* every channel's KernelCh starts before the first stops (as in every
   * capture: NCCL starts them when it sees the kernel launched, stops each
   * when its channel's stop time arrives) */
  for (int c = 0; c < CHANNELS && (m & KC); c++) {
    memset(&d, 0, sizeof d);
    d.type = KC;
    d.parentObj = co;
    d.kernelCh.channelId = (uint8_t)c;
    d.kernelCh.pTimer = 1800000000000000000ull + seq * 10000;
    kc[c] = start(t, &d);
  }
  for (int c = 0; c < CHANNELS; c++) {
    if (m & KC) {
      state(t, kc[c], ncclProfilerKernelChStop, 1800000000000000000ull + seq * 10000 + 5000);
      stop(kc[c]);
    }
    if (net && (m & (PO | PS | NP))) {
      void *po = NULL;
      if (m & PO) {
        memset(&d, 0, sizeof d);
        d.type = PO;
        d.parentObj = co;
        d.rank = t->idx;
        d.proxyOp.pid = g_pid;
        d.proxyOp.channelId = (uint8_t)c;
        d.proxyOp.peer = 1 - (t->idx & 1);
        d.proxyOp.nSteps = STEPS;
        d.proxyOp.chunkSize = 131072;
        d.proxyOp.isSend = 1;
        po = start(t, &d);
        state(t, po, ncclProfilerProxyOpInProgress_v4, 0);
      }
      if (m & (PS | NP))
        for (int s = 0; s < STEPS; s++) {
          memset(&d, 0, sizeof d);
          d.type = PS;
          d.parentObj = po;
          d.rank = t->idx;
          d.proxyStep.step = s;
          void *ps = start(t, &d);
          state(t, ps, ncclProfilerProxyStepSendGPUWait, 4096);
          state(t, ps, ncclProfilerProxyStepSendPeerWait_v4, 4096);
          state(t, ps, ncclProfilerProxyStepSendWait, 4096);
          stop(ps);
        }
      stop(po);
    }
  }
  if (m & PC) {
    memset(&d, 0, sizeof d);
    d.type = PC;
    void *pc = start(t, &d);
    state(t, pc, ncclProfilerProxyCtrlActive, 0);
    stop(pc);
  }
}

/* One API call on one thread. */
static void one_call(thr *t, uint64_t seq, char *buf) {
  int m;
  void *co = app_part(t, seq, buf, &m);
  if (m) proxy_part(t, co, m, seq, 1);
}

/* Proxy mode: the application thread's call, its proxy part queued. */
static void app_call(thr *t, uint64_t seq, char *buf) {
  int m;
  void *co = app_part(t, seq, buf, &m);
  if (!m) return;
  pq *q = t->q;
  const uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  while (h - atomic_load_explicit(&q->tail, memory_order_acquire) >= QCAP) {
    q->full_waits++;
    sched_yield();
  }
  q->e[h % QCAP] = (pq_ent){co, seq, m};
  atomic_store_explicit(&q->head, h + 1, memory_order_release);
}

static void *proxy_main(void *arg) {
  pq *q = arg;
  uint64_t tail = 0;
  for (;;) {
    if (tail == atomic_load_explicit(&q->head, memory_order_acquire)) {
      if (atomic_load_explicit(&q->done, memory_order_acquire) &&
          tail == atomic_load_explicit(&q->head, memory_order_acquire))
        break;
      sched_yield();                /* NCCL's proxy sleeps when idle too */
      continue;
    }
    const pq_ent e = q->e[tail % QCAP];
    /* The proxy thread's own cost, for calls of the timed loop only: its
     * callbacks are what NCCL's proxy thread pays (on 2 H200 its speed
     * bounds 128 KiB-8 MiB all-reduces: test/gpu/timed_plugin.c). */
    const int timed = e.seq >= WARMUP;
    const uint64_t t0 = timed ? now_ns() : 0, ev0 = q->px.events;
    proxy_part(&q->px, e.co, e.m, e.seq, 0);
    if (timed) {
      q->px.ns += now_ns() - t0;
      q->px.timed_events += q->px.events - ev0;
    }
    atomic_store_explicit(&q->tail, ++tail, memory_order_release);
  }
  return NULL;
}

static void *thread_main(void *arg) {
  thr *t = arg;
  char buf[256];
  /* Each thread its own communicator, as one rank of a T-rank job; of two
   * ranks at least, since NCCL 2.28 sends no event for a one-rank
   * communicator's calls (and collprof says so on stderr). */
  if (g_p->init(&t->ctx, 0x1000 + (uint64_t)t->idx, &g_mask, "bench", 1, g_threads < 2 ? 2 : g_threads, t->idx,
                logger) != NCCL_OK) {
    fprintf(stderr, "collprof-bench: init failed\n");
    return NULL;
  }
  uint64_t seq = 0;
  pthread_t px;
  if (g_proxy) {
    t->q->px.ctx = t->ctx;
    t->q->px.idx = t->idx;
    if (pthread_create(&px, NULL, proxy_main, t->q) != 0) {
      fprintf(stderr, "collprof-bench: cannot start a proxy thread\n");
      return NULL;
    }
  }
  void (*call)(thr *, uint64_t, char *) = g_proxy ? app_call : one_call;
  for (int i = 0; i < WARMUP; i++) call(t, seq++, buf);
  t->events = t->states = 0;
  bench_bind_self(t->idx);          /* after the plugin made its threads (bench_bind.c) */
  pthread_barrier_wait(&g_bar);
  if (g_slices) {
    /* Every thread passes every barrier; one that sits a slice out blocks
     * in the next one, so the lone thread has a core to itself (and the
     * trace writer the other).  Each thread times only its own calls: a
     * thread woken late does not count the wake-up. */
    const long n = slice_calls();
    for (int s = 0; s < 2 * g_slices; s++) {
      if (s) pthread_barrier_wait(&g_bar);
      if ((s & 1) || t->idx == (s / 2) % g_threads) {
        bench_sched q0, q1;
        if (bench_slice_detail()) bench_schedstat(&q0);
        const uint64_t e0 = t->events, s0 = t->states, t0 = now_ns();
        for (long i = 0; i < n; i++) call(t, seq++, buf);
        t->slice_ns[s] = now_ns() - t0;
        t->slice_ev[s] = t->events - e0;
        t->slice_st[s] = t->states - s0;
        if (bench_slice_detail()) {
          bench_schedstat(&q1);
          fprintf(stderr, "slice %d%s thread %d on CPU %d: %.2f ms, CPU time %.2f ms, run delay %.2f ms, "
                  "%llu switches, %.1f ns/event\n",
                  s / 2, s & 1 ? " all " : " lone", t->idx, sched_getcpu(), (double)t->slice_ns[s] / 1e6,
                  (double)(q1.cpu_ns - q0.cpu_ns) / 1e6, (double)(q1.wait_ns - q0.wait_ns) / 1e6,
                  q1.switches - q0.switches,
                  t->slice_ev[s] ? (double)t->slice_ns[s] / (double)t->slice_ev[s] : 0.0);
        }
      }
    }
  } else {
    uint64_t t0 = now_ns();
    for (long i = 0; i < g_iters; i++) call(t, seq++, buf);
    t->ns = now_ns() - t0;
  }
  if (g_proxy) {                    /* its last calls' proxy parts, untimed */
    atomic_store_explicit(&t->q->done, 1, memory_order_release);
    pthread_join(px, NULL);
  }
  pthread_barrier_wait(&g_bar);
  g_p->finalize(t->ctx);
  return NULL;
}

static int cmp_d(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Slice mode: the RESULT figures from the all-thread slices alone (events,
 * states, their summed slowest-thread times, ns per event), and the
 * scaling: per pair, the all slice's events per second (all threads, by
 * the slowest) over those of the lone slice just before it; the median of
 * the pairs goes to *scale. */
static void slice_result(const thr *ts, bench_result *r, double *scale, int *pairs) {
  double ratio[MAXSLICE];
  uint64_t ns_all[MAXT_SLICE] = {0}, ev_all[MAXT_SLICE] = {0};   /* per thread, all-thread slices */
  int np = 0;
  for (int k = 0; k < g_slices; k++) {
    const int a = 2 * k, b = 2 * k + 1, lone = k % g_threads;
    uint64_t ev = 0, slow = 0;
    for (int i = 0; i < g_threads; i++) {
      ev += ts[i].slice_ev[b];
      r->states += ts[i].slice_st[b];
      if (ts[i].slice_ns[b] > slow) slow = ts[i].slice_ns[b];
      ns_all[i] += ts[i].slice_ns[b];
    }
    r->events += ev;
    r->max_ns += slow;
    const thr *l = &ts[lone];
    if (slow && l->slice_ns[a] && l->slice_ev[a])
      ratio[np++] = ((double)ev / (double)slow) / ((double)l->slice_ev[a] / (double)l->slice_ns[a]);
  }
  for (int i = 0; i < g_threads; i++) {
    for (int k = 0; k < g_slices; k++) ev_all[i] += ts[i].slice_ev[2 * k + 1];
    if (ev_all[i]) r->ns_per_event += (double)ns_all[i] / (double)ev_all[i] / g_threads;
  }
  *pairs = np;
  if (!np) return;
  qsort(ratio, (size_t)np, sizeof ratio[0], cmp_d);
  *scale = np % 2 ? ratio[np / 2] : (ratio[np / 2 - 1] + ratio[np / 2]) / 2;
}

int bench_child(const char *plugin, int threads, long iters) {
  void *lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "collprof-bench: cannot load %s: %s\n", plugin, dlerror());
    return 2;
  }
  g_p = dlsym(lib, "ncclProfiler_v5");
  if (!g_p) {
    fprintf(stderr, "collprof-bench: %s has no ncclProfiler_v5\n", plugin);
    return 2;
  }
  g_iters = iters;
  g_pid = getpid();
  g_threads = threads;
  g_proxy = getenv("COLLPROF_BENCH_PROXY") && atoi(getenv("COLLPROF_BENCH_PROXY")) == 1;
  if (getenv("COLLPROF_BENCH_SLICES") && threads >= 2 && threads <= MAXT_SLICE && !g_proxy) {
    const long s = atol(getenv("COLLPROF_BENCH_SLICES"));
    g_slices = s > 0 ? (int)(s < MAXSLICE ? s : MAXSLICE) : 0;
  }
  if (getenv("COLLPROF_BENCH_CHANNELS")) {
    const long c = atol(getenv("COLLPROF_BENCH_CHANNELS"));
    CHANNELS = c >= 1 && c <= MAXCH ? (int)c : 2;
  }
  if (getenv("COLLPROF_BENCH_POLLUTE")) {
    const long kb = atol(getenv("COLLPROF_BENCH_POLLUTE"));
    g_pollute = kb > 0 && kb <= (1L << 20) ? (size_t)kb * 1024 : 0;
  }
  if (getenv("COLLPROF_BENCH_IPOLLUTE")) {
    const long kb = atol(getenv("COLLPROF_BENCH_IPOLLUTE"));
    if (kb > 0 && kb <= 4096) make_sled(kb);
  }
  bench_bind_init(threads);
  pthread_barrier_init(&g_bar, NULL, (unsigned)threads);
  thr *ts = aligned_alloc(64, (size_t)threads * sizeof *ts);
  memset(ts, 0, (size_t)threads * sizeof *ts);
  pq *qs = NULL;
  if (g_proxy) {
    qs = aligned_alloc(64, (size_t)threads * sizeof *qs);
    memset(qs, 0, (size_t)threads * sizeof *qs);
    for (int i = 0; i < threads; i++) ts[i].q = &qs[i];
  }
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  for (int i = 0; i < threads; i++) {
    ts[i].idx = i;
    pthread_create(&tid[i], NULL, thread_main, &ts[i]);
  }
  bench_result r = {0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0};
  for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
  double scale = 0;
  int pairs = 0;
  if (g_slices) slice_result(ts, &r, &scale, &pairs);
  /* the calls behind r.events: every thread's timed calls, or in slice
   * mode its calls in the all-thread slices */
  r.calls = (uint64_t)threads * (uint64_t)(g_slices ? slice_calls() * g_slices : g_iters);
  for (int i = 0; i < threads && !g_slices; i++) {
    r.events += ts[i].events;
    r.states += ts[i].states;
    if (ts[i].ns > r.max_ns) r.max_ns = ts[i].ns;
    if (ts[i].events) r.ns_per_event += (double)ts[i].ns / (double)ts[i].events / threads;
  }
  /* proxy mode: the proxy threads' events and the application threads'
   * waits on a full queue follow (informational) */
  uint64_t pxe = 0, waits = 0, pxns = 0, pxtimed = 0;
  for (int i = 0; qs && i < threads; i++) {
    pxe += qs[i].px.events;
    waits += qs[i].full_waits;
    pxns += qs[i].px.ns;
    pxtimed += qs[i].px.timed_events;
  }
  printf("RESULT %llu %llu %llu %.3f %llu %llu %.3f %llu\n", (unsigned long long)r.events,
         (unsigned long long)r.states, (unsigned long long)r.max_ns, r.ns_per_event,
         (unsigned long long)pxe, (unsigned long long)waits, pxtimed ? (double)pxns / (double)pxtimed : 0.0,
         (unsigned long long)r.calls);
  if (pairs) printf("SCALE %.4f %d\n", scale, pairs);
  fflush(stdout);
  free(qs);
  free(ts);
  free(tid);
  /* The plugin writes its own output at exit (atexit/destructor): not timed. */
  return r.events ? 0 : 3;
}
