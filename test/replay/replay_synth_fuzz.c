/*
 * replay_synth_fuzz.c — `--synthetic fuzz`: seeded random callback
 * sequences, the misuse badinput lists by hand (replay_synth_badinput.c)
 * drawn at random and mixed with well-formed calls, so that the plugin's
 * checks are tried in orders and states no list foresees: handles that
 * are live, stopped, stopped twice, of a finalized or re-registered
 * communicator, of another thread's lane, and handles with one field
 * changed (path, communicator, lane, slot, generation, the counted and
 * lean bits: the values most likely to pass the tag test and reach a
 * table); random types, parents, descriptor fields, states and state
 * arguments; communicators initialized and finalized at random with events
 * live on them.  No expected counts: the test (replay_synthetic.t) checks
 * that the process ends normally, says nothing but collprof: lines on
 * stderr, and leaves output that parses; sanitizer builds run it too.
 *
 * Only what NCCL could hand over is random: strings are valid or NULL
 * (NCCL's are static), the state-argument pointer is valid or NULL, and
 * a handle that the plugin returned is stopped from any thread, as NCCL's
 * proxy thread stops events the application thread started.
 *
 * Meanwhile the main thread does what the MPI layer and an application
 * do to the plugin from outside NCCL's calls: collprof_pause/resume,
 * snapshots (collprof_snapshot_take, as MPI_Finalize's collation), and
 * halfway collprof_write_local; with COLLPROF_FUZZ_SHUTDOWN=1 instead
 * collprof_shutdown an eighth of the way, while the threads go on
 * calling (events after shutdown); with COLLPROF_FUZZ_SHUTDOWN=mpi under
 * --mpi, MPI_Finalize there (the MPI layer's snapshot and collation, as
 * in a job whose NCCL threads, a watchdog say, still call meanwhile).
 *
 * --count N: steps per thread (default 100000); --threads T (default 2).
 * COLLPROF_FUZZ_SEED (default 1): the sequences (each thread one of its
 * own drawn from it; how the threads interleave is the machine's).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "replay_synth.h"
#include "replay_mpi.h"
#include "collprof.h"

enum { RING = 256, SHARED = 64, NPRIV = 2 };

/* Communicators every thread may use, up for the whole run. */
static void *g_shared_ctx[3];
/* Every thread's own communicators as they come and go: others send
 * events on them too, also while their owner finalizes one (NCCL's proxy
 * thread calling while the application destroys the communicator). */
static _Atomic(void *) g_any_ctx[16];
/* Handles any thread may take as a parent or stop (the latest few). */
static _Atomic uint64_t g_shared_h[SHARED];

typedef struct fz {
  uint64_t rng;
  int me;
  void *priv[NPRIV];          /* this thread's own communicators, NULL when down */
  void *dead[NPRIV];          /* the last finalized one of each slot */
  uint64_t ring[RING];        /* handles returned to this thread */
  unsigned nring;
  uint64_t inits;
  sy_tab tab;                 /* the well-formed calls' table (not flushed) */
} fz;

static uint64_t rnd(fz *f) {   /* splitmix64 */
  uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static unsigned below(fz *f, unsigned n) { return (unsigned)(rnd(f) % n); }

static const char *const g_funcs[] = {
  "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "Send", "Recv",
  "SendRecv", "AllToAll", "", "a name far longer than any NCCL function, with \"quotes\", \\ and \t tabs",
  NULL,
};
static const char *const g_types[] = {"ncclFloat32", "ncclInt8", "ncclBfloat16", "ncclUint64", "bogus", "", NULL};
static const char *const g_algos[] = {"RING", "TREE", "NVLS", "COLLNET_DIRECT", "", NULL};
static const char *const g_protos[] = {"LL", "LL128", "Simple", "", NULL};
#define PICK(f, a) (a[below(f, sizeof a / sizeof a[0])])

static const int g_states[] = {
  ncclProfilerProxyOpInProgress_v4, ncclProfilerProxyStepSendGPUWait, ncclProfilerProxyStepSendPeerWait_v4,
  ncclProfilerProxyStepSendWait, ncclProfilerProxyStepRecvWait, ncclProfilerProxyStepRecvFlushWait,
  ncclProfilerProxyStepRecvGPUWait, ncclProfilerProxyCtrlIdle, ncclProfilerProxyCtrlActive,
  ncclProfilerProxyCtrlSleep, ncclProfilerProxyCtrlWakeup, ncclProfilerProxyCtrlAppend,
  ncclProfilerProxyCtrlAppendEnd, ncclProfilerNetPluginUpdate, ncclProfilerKernelChStop,
  ncclProfilerGroupStartApiStop, ncclProfilerGroupEndApiStart, 0, 7, 25, 31, 32, 255, -1, 1 << 30,
};

/* A handle one field away from h: the values that pass the tag test. */
static uint64_t mutate(fz *f, uint64_t h) {
  switch (below(f, 9)) {
  case 0: return h ^ (1 + below(f, 255));                               /* generation */
  case 1: return (h & ~(0xFFFFull << 44)) | ((uint64_t)below(f, 70000) << 44);   /* path */
  case 2: return (h & ~(0xFFFull << 32)) | ((uint64_t)below(f, 12) << 32);      /* comm, low */
  case 3: return (h & ~(0xFFFull << 32)) | (4095ull << 32);                   /* the scratch pool */
  case 4: return h ^ ((uint64_t)(1 + below(f, 15)) << 28);                     /* lane */
  case 5: return (h & ~(0xFFFFFFull << 8)) | ((uint64_t)below(f, 1u << 24) << 8);   /* slot */
  case 6: return h & ~0xFFull;                                               /* generation 0: counted */
  case 7: return h ^ (1ull << below(f, 60));                                  /* any bit below the tag */
  default: return h ^ (1ull << (60 + below(f, 4)));                           /* the tag */
  }
}

static void keep(fz *f, void *h) {
  if (!h) return;
  f->ring[f->nring++ % RING] = (uint64_t)(uintptr_t)h;
  if (below(f, 4) == 0) atomic_store_explicit(&g_shared_h[below(f, SHARED)], (uint64_t)(uintptr_t)h, memory_order_relaxed);
}

/* A handle to hand back: ours (live or not), another thread's, changed, or junk. */
static void *some_handle(fz *f) {
  unsigned k = below(f, 100);
  uint64_t h = f->nring ? f->ring[(f->nring - 1 - below(f, f->nring < 8 ? f->nring : 8)) % RING] : 0;
  if (k < 45) return (void *)(uintptr_t)h;                                   /* recent: mostly live */
  if (k < 65 && f->nring) return (void *)(uintptr_t)f->ring[below(f, f->nring < RING ? f->nring : RING)];
  if (k < 75) return (void *)(uintptr_t)atomic_load_explicit(&g_shared_h[below(f, SHARED)], memory_order_relaxed);
  if (k < 92) return (void *)(uintptr_t)mutate(f, h ? h : 0xC000100000000101ull);
  if (k < 96) return NULL;
  return (void *)(uintptr_t)rnd(f);
}

static void *some_ctx(fz *f) {
  unsigned k = below(f, 100);
  if (k < 45) return g_shared_ctx[below(f, 3)];
  if (k < 75) return f->priv[below(f, NPRIV)];   /* may be NULL: down */
  if (k < 85) return atomic_load_explicit(&g_any_ctx[below(f, 16)], memory_order_relaxed);
  if (k < 92) return f->dead[below(f, NPRIV)];   /* finalized */
  if (k < 95) return NULL;
  if (k < 98) {                                  /* a context value one bit off */
    void *c = g_shared_ctx[below(f, 3)];
    return (void *)((uintptr_t)c ^ (1ull << below(f, 64)));
  }
  return (void *)(uintptr_t)rnd(f);
}

static void fz_start(fz *f) {
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof d);
  unsigned k = below(f, 100);
  d.type = k < 94 ? 1ull << below(f, 12) : k < 97 ? rnd(f) : below(f, 8);
  d.rank = (int)below(f, 4) - (below(f, 50) == 0);
  unsigned p = below(f, 10);
  d.parentObj = p < 2 ? NULL : some_handle(f);
  switch (d.type) {
  case ncclProfileGroupApi:
    d.groupApi.groupDepth = (int)below(f, 3);
    d.groupApi.graphCaptured = below(f, 200) == 0;
    break;
  case ncclProfileCollApi:
    d.collApi.func = PICK(f, g_funcs); d.collApi.count = below(f, 3) ? below(f, 1u << 20) : rnd(f);
    d.collApi.datatype = PICK(f, g_types); d.collApi.root = (int)below(f, 4);
    d.collApi.graphCaptured = below(f, 200) == 0;
    break;
  case ncclProfileP2pApi:
    d.p2pApi.func = PICK(f, g_funcs); d.p2pApi.count = below(f, 1u << 20);
    d.p2pApi.datatype = PICK(f, g_types); d.p2pApi.graphCaptured = below(f, 200) == 0;
    break;
  case ncclProfileColl:
    d.coll.seqNumber = rnd(f); d.coll.func = PICK(f, g_funcs); d.coll.count = below(f, 1u << 20);
    d.coll.datatype = PICK(f, g_types); d.coll.nChannels = (uint8_t)rnd(f); d.coll.nWarps = (uint8_t)rnd(f);
    d.coll.algo = PICK(f, g_algos); d.coll.proto = PICK(f, g_protos);
    d.coll.parentGroup = below(f, 2) ? some_handle(f) : NULL;
    break;
  case ncclProfileP2p:
    d.p2p.func = PICK(f, g_funcs); d.p2p.datatype = PICK(f, g_types); d.p2p.count = below(f, 1u << 20);
    d.p2p.peer = (int)below(f, 8); d.p2p.nChannels = (uint8_t)rnd(f);
    d.p2p.parentGroup = below(f, 2) ? some_handle(f) : NULL;
    break;
  case ncclProfileProxyOp:
    d.proxyOp.pid = below(f, 4) ? getpid() : (pid_t)rnd(f);
    d.proxyOp.channelId = (uint8_t)rnd(f); d.proxyOp.peer = (int)below(f, 8);
    d.proxyOp.nSteps = (int)below(f, 64) - 1; d.proxyOp.chunkSize = (int)rnd(f); d.proxyOp.isSend = (int)below(f, 2);
    break;
  case ncclProfileProxyStep: d.proxyStep.step = (int)rnd(f); break;
  case ncclProfileKernelCh:
    d.kernelCh.channelId = (uint8_t)rnd(f);
    d.kernelCh.pTimer = below(f, 2) ? sy_gpu_now() : rnd(f);
    break;
  case ncclProfileNetPlugin: d.netPlugin.id = (int64_t)rnd(f); d.netPlugin.data = (void *)(uintptr_t)rnd(f); break;
  default: break;
  }
  void *h = NULL;
  if (below(f, 100) == 0) { rp_host_start(some_ctx(f), NULL, &d); return; }
  rp_host_start(some_ctx(f), &h, below(f, 200) ? &d : NULL);
  keep(f, h);
}

static void fz_state(fz *f) {
  ncclProfilerEventStateArgs_v5_t a;
  a.pTimer = below(f, 2) ? sy_gpu_now() : rnd(f);
  const int st = g_states[below(f, sizeof g_states / sizeof g_states[0])];
  rp_host_state(some_handle(f), st, below(f, 10) ? &a : NULL);
}

/* One well-formed call on a live communicator (children under its Coll,
 * whose handles the ring keeps for the random steps to misuse). */
static void fz_call(fz *f) {
  void *ctx = below(f, 2) ? g_shared_ctx[below(f, 3)] : f->priv[below(f, NPRIV)];
  if (!ctx) return;
  sy_apicall c;
  sy_apicall_run(&f->tab, &c, ctx, 0, "AllReduce", "CollApi:AllReduce", "Coll:AllReduce", rnd(f) & 0xFFFF,
                 (size_t)1 << below(f, 24), 2, 0, 0);
  keep(f, c.ga.h); keep(f, c.ca.h); keep(f, c.coll.h);
  ncclProfilerEventDescr_v5_t d;
  for (int ch = 0; ch < 2; ch++) {
    sy_ev kc;
    uint64_t g0 = sy_gpu_now();
    sy_d_kernelch(&d, 0, ch, g0);
    sy_start(&f->tab, &kc, &c.call, ctx, &c.coll, NULL, &d, "KernelCh", 0);
    keep(f, kc.h);
    if (below(f, 4)) sy_state(&kc, ncclProfilerKernelChStop, RP_ARG_PTIMER, g0 + 100);
    if (below(f, 8)) sy_stop(&f->tab, &kc);
  }
  if (below(f, 8)) sy_stop(&f->tab, &c.coll);
}

static void fz_comm(fz *f) {
  const unsigned i = below(f, NPRIV);
  if (f->priv[i]) {
    f->dead[i] = f->priv[i];
    f->priv[i] = NULL;
    rp_host_fini(f->dead[i], 1);
    if (below(f, 4) == 0) rp_host_fini(f->dead[i], 0);   /* twice */
  } else {
    void *ctx = NULL;
    const uint64_t id = 0xF0220000ull + (uint64_t)f->me * 0x10000 + f->inits++;
    rp_host_init(&ctx, id, below(f, 2) ? "fuzz" : "fuzz \"split\"", 1, 2 + (int)below(f, 3), (int)below(f, 2));
    f->priv[i] = ctx;
    if (ctx) atomic_store_explicit(&g_any_ctx[below(f, 16)], ctx, memory_order_relaxed);
  }
}

static _Atomic long g_steps_done;   /* over all threads */
/* COLLPROF_FUZZ_SHUTDOWN=mpi: a worker halfway through waits until the
 * main thread is about to call MPI_Finalize, so that half of every
 * worker's steps come after it began even where the main thread is
 * descheduled while the workers run (a loaded 2-core machine: without the
 * wait, some ranks' workers had finished before their MPI_Finalize); and
 * at seven eighths until it has returned, so that the last eighth comes
 * after the MPI layer took the run's numbers (inside MPI_Finalize: on the
 * same machine, one run in five had every worker done before that, and
 * no event came after the run's end). */
static atomic_int g_fin_wait, g_fin_begun, g_fin_done;

static void run(fz *f, long steps) {
  long counted = 0;   /* steps added to g_steps_done so far */
  for (long s = 0; s < steps; s++) {
    if ((s & 255) == 255) {
      atomic_fetch_add_explicit(&g_steps_done, s + 1 - counted, memory_order_relaxed);
      counted = s + 1;
    }
    if (s == steps / 2 && atomic_load(&g_fin_wait)) {
      atomic_fetch_add_explicit(&g_steps_done, s - counted, memory_order_relaxed);
      counted = s;
      while (!atomic_load(&g_fin_begun)) usleep(100);
    }
    if (s == steps - steps / 8 && atomic_load(&g_fin_wait)) {
      atomic_fetch_add_explicit(&g_steps_done, s - counted, memory_order_relaxed);
      counted = s;
      while (!atomic_load(&g_fin_done)) usleep(100);
    }
    const unsigned k = below(f, 1000);
    if (k < 380) fz_start(f);
    else if (k < 620) rp_host_stop(some_handle(f));
    else if (k < 900) fz_state(f);
    else if (k < 990) fz_call(f);
    else if (k < 998) fz_comm(f);
    else rp_host_fini(below(f, 2) ? NULL : (void *)(uintptr_t)rnd(f), 0);   /* foreign finalize */
  }
  atomic_fetch_add_explicit(&g_steps_done, steps - counted, memory_order_relaxed);   /* the rest: drive sees them all */
  for (int i = 0; i < NPRIV; i++)
    if (f->priv[i]) rp_host_fini(f->priv[i], 1);
}

/* The main thread while the workers run (see the head comment): until
 * they have made nearly all `total` steps, a random pause, resume or
 * snapshot about every 100 us; write_local at half, or, when asked,
 * collprof_shutdown at an eighth. */
static void drive(fz *f, long total) {
  int (*pause_fn)(void) = (int (*)(void))rp_host_sym("collprof_pause");
  int (*resume_fn)(void) = (int (*)(void))rp_host_sym("collprof_resume");
  int (*snap_take)(collprof_snapshot *) = (int (*)(collprof_snapshot *))rp_host_sym("collprof_snapshot_take");
  void (*snap_free)(collprof_snapshot *) = (void (*)(collprof_snapshot *))rp_host_sym("collprof_snapshot_free");
  int (*write_local)(void) = (int (*)(void))rp_host_sym("collprof_write_local");
  void (*shutdown_fn)(void) = (void (*)(void))rp_host_sym("collprof_shutdown");
  const char *s = getenv("COLLPROF_FUZZ_SHUTDOWN");
  const int do_shutdown = s && *s == '1';
  const int do_finalize = atomic_load(&g_fin_wait);   /* rp_synth_fuzz decided it */
  int halfway = 0;
  for (long done; (done = atomic_load_explicit(&g_steps_done, memory_order_relaxed)) < total - 1024;) {
    const unsigned k = below(f, 100);
    if (k < 30 && pause_fn) pause_fn();
    else if (k < 70 && resume_fn) resume_fn();
    else if (k < 80 && snap_take && snap_free) {
      collprof_snapshot sn;
      if (snap_take(&sn) == 0) snap_free(&sn);
    }
    const int early = do_shutdown || do_finalize;
    if (!halfway && done >= (early ? total / 8 : total / 2)) {
      halfway = 1;
      if (resume_fn) resume_fn();
      if (!early && write_local) write_local();
      if (early && (do_finalize || shutdown_fn)) {
        const long d0 = atomic_load(&g_steps_done);
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (do_finalize) {
          atomic_store(&g_fin_begun, 1);
          rp_mpi_finalize();   /* the MPI layer collates */
          atomic_store(&g_fin_done, 1);
        } else {
          shutdown_fn();       /* writes the local data itself */
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        rp_log("fuzz: %s took %.1f ms; the threads made %ld steps meanwhile",
               do_finalize ? "MPI_Finalize" : "collprof_shutdown",
               (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) * 1e-6, atomic_load(&g_steps_done) - d0);
      }
    }
    usleep(100);
  }
  atomic_store(&g_fin_begun, 1);   /* a run too short to reach the finalize: release the workers */
  atomic_store(&g_fin_done, 1);
  if (resume_fn) resume_fn();
}

typedef struct { fz *f; long steps; } fz_arg;
static void *worker(void *p) {
  fz_arg *a = p;
  run(a->f, a->steps);
  return NULL;
}

int rp_synth_fuzz(const rp_synth_opts *o) {
  const int nt = o->threads > 0 ? o->threads : 2;
  const long steps = o->count > 0 ? o->count : 100000;
  const char *s = getenv("COLLPROF_FUZZ_SEED");
  const uint64_t seed = s && *s ? strtoull(s, NULL, 0) : 1;
  for (int i = 0; i < 3; i++)
    rp_host_init(&g_shared_ctx[i], 0xF0210000ull + (uint64_t)i, i ? "fuzz-shared" : "world", 1, 4, i);
  const char *sd = getenv("COLLPROF_FUZZ_SHUTDOWN");
  atomic_store(&g_fin_wait, sd && !strcmp(sd, "mpi") && rp_mpi_active());
  fz *fs = calloc((size_t)nt, sizeof *fs);
  pthread_t *th = calloc((size_t)nt, sizeof *th);
  fz_arg *args = calloc((size_t)nt, sizeof *args);
  int started = 0;
  for (int i = 0; i < nt && fs && th && args; i++) {
    fs[i].rng = seed * 0x100000001b3ull + (uint64_t)i;
    fs[i].me = i;
    args[i] = (fz_arg){&fs[i], steps};
    if (pthread_create(&th[i], NULL, worker, &args[i]) != 0) break;
    started++;
  }
  drive(&(fz){.rng = seed ^ 0xD1B54A32D192ED03ull}, (long)started * steps);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 3; i++) rp_host_fini(g_shared_ctx[i], 1);
  free(fs); free(th); free(args);
  return started;
}
