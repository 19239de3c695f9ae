/*
 * timed_plugin.c — libnccl-profiler-timed.so, a diagnostic NCCL profiler
 * plugin (v5, NCCL 2.28) that wraps another one and measures what each of
 * its callbacks costs on the NCCL thread that makes it.
 *
 *   NCCL_PROFILER_PLUGIN=.../libnccl-profiler-timed.so
 *   TIMED_INNER=.../libcollprof.so (or libnccl-profiler-noop.so)
 *
 * Why: collprof-bench measures the calling thread on a CPU; on a GPU host
 * the callbacks that matter most arrive on NCCL's proxy thread (KernelCh,
 * ProxyCtrl, ProxyOp, ProxyStep), whose speed NCCL itself may wait on.
 * This plugin reads the TSC around every call into the inner plugin and
 * keeps per-thread sums (no lock, no allocation: a fixed table of threads);
 * when the last communicator is finalized (or at exit) it prints one line
 * per thread to stderr: "timed: pid P tid T: starts N (mean, max ns) [by type],
 * stops N (mean, max ns), states N (mean ns) [by state]".  Comparing the lines of collprof
 * with those of the do-nothing plugin gives collprof's own cost per
 * callback on NCCL's threads.
 *
 * TIMED_SPIN_NS=S (default 0) adds S ns of busy waiting to every KernelCh
 * start and KernelCh-stop state (2S per KernelCh): wrapped around the
 * do-nothing plugin it makes a plugin whose proxy-thread callbacks are
 * slower by a known amount, so a run shows whether NCCL's speed depends on
 * them.  Measured times include the spin.
 *
 * TIMED_ILINES=I and TIMED_DLINES=D (default 0) make every callback also
 * run I cache lines of code (a chain of short jumps, one per line) and
 * update one word in each of D cache lines of its thread's own 1 MiB
 * buffer (lines scattered, the same ones each time, independent of each
 * other).  Wrapped around the do-nothing plugin this is a plugin that
 * touches I + D more lines per callback and does nothing else: what a
 * line costs when NCCL's own work between two callbacks has pushed it out
 * (test/bench/lines_per_event.sh counts collprof's lines; this prices them
 * on a real host).
 *
 * TIMED_SKIP_KC=1 keeps KernelCh from the inner plugin: their starts get a
 * handle of this wrapper's, whose states and stops end here.  Around
 * collprof it is collprof with everything but its KernelCh work (on NCCL's
 * proxy thread), so a run splits collprof's cost between the application's
 * thread and the proxy thread.  TIMED_NOTIME=1 makes the wrapper a plain
 * forwarder (no clock read, no statistics, no report): its own cost is then
 * a call through a pointer, and runs that compare a wrapped plugin with
 * another one wrapped the same way see NCCL's speed, not the wrapper's.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
#include "nccl_profiler_abi.h"

#define EXPORT __attribute__((visibility("default")))
enum { MAX_THREADS = 256, NTYPES = 12 };

typedef struct {
  _Atomic int tid;                 /* 0: slot unused */
  uint64_t start_n[NTYPES], start_ticks[NTYPES], start_max[NTYPES];
  uint64_t stop_n, stop_ticks, state_n, state_ticks;
  uint64_t stop_max, by_state_n[32], by_state_ticks[32], by_state_max[32];   /* states by number (ncclProfilerEventState_t) */
} thr_stats;

static thr_stats g_thr[MAX_THREADS];
static atomic_int g_nthr, g_live, g_printed;
static _Thread_local thr_stats *t_me;
static ncclProfiler_v5_t *inner;
static uint64_t g_tsc0, g_mono0, g_spin_ticks;
static double g_ticks_per_ns = 1.0;
static int g_skip_kc, g_notime;
static char g_kc_handle;             /* TIMED_SKIP_KC: every KernelCh's handle */

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* TIMED_ILINES / TIMED_DLINES */
enum { DBUF = 1 << 20, MAX_LINES = 4096 };
static void (*g_sled)(void);
static unsigned g_dlines, g_doff[MAX_LINES];
static _Thread_local unsigned char *t_dbuf;

static void make_sled(unsigned n) {
  unsigned char *c = mmap(NULL, (size_t)n * 64 + 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (c == MAP_FAILED) return;
  for (unsigned i = 0; i < n; i++) { c[64 * i] = 0xEB; c[64 * i + 1] = 62; }   /* jmp to the next line */
  c[64 * (size_t)n] = 0xC3;                                                     /* ret */
  if (mprotect(c, (size_t)n * 64 + 64, PROT_READ | PROT_EXEC) == 0) g_sled = (void (*)(void))(void *)c;
}

static void make_doff(unsigned n) {   /* n distinct lines of the buffer, in a scattered order */
  uint64_t x = 0x9E3779B97F4A7C15ull;
  unsigned char used[DBUF / 64] = {0};
  for (unsigned i = 0; i < n; i++) {
    unsigned l;
    do { x ^= x << 13; x ^= x >> 7; x ^= x << 17; l = (unsigned)(x % (DBUF / 64)); } while (used[l]);
    used[l] = 1;
    g_doff[i] = l * 64;
  }
  g_dlines = n;
}

static void touch_lines(void) {
  if (g_sled) g_sled();
  if (!g_dlines) return;
  if (!t_dbuf && !(t_dbuf = aligned_alloc(64, DBUF))) return;
  for (unsigned i = 0; i < g_dlines; i++) t_dbuf[g_doff[i]]++;
}

static thr_stats *me(void) {
  if (t_me) return t_me;
  int i = atomic_fetch_add(&g_nthr, 1);
  if (i >= MAX_THREADS) {             /* more threads than slots: they share the last */
    t_me = &g_thr[MAX_THREADS - 1];
  } else {
    t_me = &g_thr[i];
    atomic_store(&t_me->tid, (int)syscall(SYS_gettid));
  }
  return t_me;
}

static int type_index(uint64_t type) {
  for (int i = 0; i < NTYPES; i++)
    if (type == (1ull << i)) return i;
  return NTYPES - 1;
}

static void spin(void) {
  if (!g_spin_ticks) return;
  const uint64_t until = __rdtsc() + g_spin_ticks;
  while (__rdtsc() < until) _mm_pause();
}

static const char *type_name[NTYPES] = {"Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl",
                                        "KernelCh", "NetPlugin", "GroupApi", "CollApi", "P2pApi", "KernelLaunch"};

static void report(void) {
  if (atomic_exchange(&g_printed, 1)) return;
  const uint64_t dt = mono() - g_mono0, dticks = __rdtsc() - g_tsc0;
  const double tpn = dt > 1000000 ? (double)dticks / (double)dt : g_ticks_per_ns;
  const int n = atomic_load(&g_nthr) < MAX_THREADS ? atomic_load(&g_nthr) : MAX_THREADS;
  for (int i = 0; i < n; i++) {
    thr_stats *s = &g_thr[i];
    char line[2048];
    int k = 0;
    uint64_t sn = 0, st = 0;
    for (int j = 0; j < NTYPES; j++) { sn += s->start_n[j]; st += s->start_ticks[j]; }
    k += snprintf(line + k, sizeof line - (size_t)k, "timed: pid %d tid %d: starts %llu (%.1f ns) [",
                  (int)getpid(), atomic_load(&s->tid), (unsigned long long)sn, sn ? (double)st / tpn / (double)sn : 0.0);
    for (int j = 0; j < NTYPES; j++)
      if (s->start_n[j] && k < (int)sizeof line - 64)
        k += snprintf(line + k, sizeof line - (size_t)k, " %s %llu (%.1f, max %.0f ns)", type_name[j],
                      (unsigned long long)s->start_n[j], (double)s->start_ticks[j] / tpn / (double)s->start_n[j],
                      (double)s->start_max[j] / tpn);
    k += snprintf(line + k, sizeof line - (size_t)k, " ], stops %llu (%.1f, max %.0f ns), states %llu (%.1f ns) [",
                  (unsigned long long)s->stop_n, s->stop_n ? (double)s->stop_ticks / tpn / (double)s->stop_n : 0.0,
                  (double)s->stop_max / tpn,
                  (unsigned long long)s->state_n, s->state_n ? (double)s->state_ticks / tpn / (double)s->state_n : 0.0);
    for (int j = 0; j < 32; j++)
      if (s->by_state_n[j] && k < (int)sizeof line - 64)
        k += snprintf(line + k, sizeof line - (size_t)k, " %d: %llu (%.1f, max %.0f ns)", j,
                      (unsigned long long)s->by_state_n[j], (double)s->by_state_ticks[j] / tpn / (double)s->by_state_n[j],
                      (double)s->by_state_max[j] / tpn);
    snprintf(line + k, sizeof line - (size_t)k, " ]");
    fprintf(stderr, "%s\n", line);
  }
}

__attribute__((destructor)) static void at_unload(void) {
  if (atomic_load(&g_nthr)) report();
}

static void load_inner(void) {
  const char *p = getenv("TIMED_INNER");
  if (!p || !*p) { fprintf(stderr, "timed: TIMED_INNER is not set\n"); return; }
  void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "timed: cannot open %s: %s\n", p, dlerror()); return; }
  inner = dlsym(h, "ncclProfiler_v5");
  if (!inner) fprintf(stderr, "timed: %s has no ncclProfiler_v5\n", p);
  g_mono0 = mono();
  g_tsc0 = __rdtsc();
  const uint64_t m1 = g_mono0 + 2000000;          /* 2 ms to calibrate the spin */
  while (mono() < m1) {}
  g_ticks_per_ns = (double)(__rdtsc() - g_tsc0) / (double)(mono() - g_mono0);
  const char *k = getenv("TIMED_SKIP_KC"), *nt = getenv("TIMED_NOTIME");
  g_skip_kc = k && atoi(k) > 0;
  g_notime = nt && atoi(nt) > 0;
  const char *s = getenv("TIMED_SPIN_NS");
  if (s && *s) g_spin_ticks = (uint64_t)(atof(s) * g_ticks_per_ns);
  const char *il = getenv("TIMED_ILINES"), *dl = getenv("TIMED_DLINES");
  const long ni = il ? atol(il) : 0, nd = dl ? atol(dl) : 0;
  if (ni > 0) make_sled(ni < MAX_LINES ? (unsigned)ni : MAX_LINES);
  if (nd > 0) make_doff(nd < MAX_LINES ? (unsigned)nd : MAX_LINES);
}

static ncclResult_t t_init(void **context, uint64_t commId, int *mask, const char *commName, int nNodes,
                           int nranks, int rank, ncclDebugLogger_t logfn) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, load_inner);
  if (!inner) return NCCL_INTERNAL_ERROR;
  atomic_fetch_add(&g_live, 1);
  return inner->init(context, commId, mask, commName, nNodes, nranks, rank, logfn);
}

/* The inner plugin's callbacks; with TIMED_SKIP_KC it never sees a
 * KernelCh (their handle is g_kc_handle, which ends here). */
static ncclResult_t fwd_start(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *d) {
  if (g_skip_kc && d && d->type == ncclProfileKernelCh && eHandle) {
    *eHandle = &g_kc_handle;
    return NCCL_OK;
  }
  return inner->startEvent(context, eHandle, d);
}
static ncclResult_t fwd_stop(void *eHandle) {
  return eHandle == &g_kc_handle ? NCCL_OK : inner->stopEvent(eHandle);
}
static ncclResult_t fwd_state(void *eHandle, ncclProfilerEventState_v5_t st, ncclProfilerEventStateArgs_v5_t *a) {
  return eHandle == &g_kc_handle ? NCCL_OK : inner->recordEventState(eHandle, st, a);
}

static ncclResult_t t_start(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *d) {
  if (g_notime) return fwd_start(context, eHandle, d);
  thr_stats *s = me();
  const uint64_t t0 = __rdtsc();
  touch_lines();
  ncclResult_t r = fwd_start(context, eHandle, d);
  if (d && d->type == ncclProfileKernelCh) spin();
  const int i = d ? type_index(d->type) : NTYPES - 1;
  const uint64_t dt = __rdtsc() - t0;
  s->start_n[i]++;
  s->start_ticks[i] += dt;
  if (dt > s->start_max[i]) s->start_max[i] = dt;
  return r;
}

static ncclResult_t t_stop(void *eHandle) {
  if (g_notime) return fwd_stop(eHandle);
  thr_stats *s = me();
  const uint64_t t0 = __rdtsc();
  touch_lines();
  ncclResult_t r = fwd_stop(eHandle);
  const uint64_t dt = __rdtsc() - t0;
  s->stop_n++;
  s->stop_ticks += dt;
  if (dt > s->stop_max) s->stop_max = dt;
  return r;
}

static ncclResult_t t_state(void *eHandle, ncclProfilerEventState_v5_t st, ncclProfilerEventStateArgs_v5_t *a) {
  if (g_notime) return fwd_state(eHandle, st, a);
  thr_stats *s = me();
  const uint64_t t0 = __rdtsc();
  touch_lines();
  ncclResult_t r = fwd_state(eHandle, st, a);
  if (st == ncclProfilerKernelChStop) spin();
  const uint64_t dt = __rdtsc() - t0;
  s->state_n++;
  s->state_ticks += dt;
  s->by_state_n[(unsigned)st & 31]++;
  s->by_state_ticks[(unsigned)st & 31] += dt;
  if (dt > s->by_state_max[(unsigned)st & 31]) s->by_state_max[(unsigned)st & 31] = dt;
  return r;
}

static ncclResult_t t_finalize(void *context) {
  ncclResult_t r = inner->finalize(context);
  if (atomic_fetch_sub(&g_live, 1) == 1 && !g_notime) report();
  return r;
}

EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {"timed", t_init, t_start, t_stop, t_state, t_finalize};
