/*
 * noop_plugin.c — the do-nothing NCCL profiler plugin (libnccl-profiler-noop.so).
 *
 * Two uses: collprof-replay is developed and tested against it when the real
 * plugin is not there, and it is the floor that collprof-bench compares the
 * real plugin with (what a callback costs when the plugin does nothing).
 *
 * Exports ncclProfiler_v5 and ncclProfiler_v4.  Every function returns
 * success; startEvent hands out a distinct non-NULL handle (a per-thread
 * counter tagged with a thread number: no shared cache line, no atomics on
 * the hot path) and init a distinct non-NULL context.  init sets the
 * activation mask NCCL passes (NCCL_PROFILE_EVENT_MASK, default 4095): left at
 * NCCL's 0 no callback would ever arrive, and a floor that receives nothing
 * measures nothing.
 *
 * NOOP_CLOCK=1 makes it read the clock collprof reads (the TSC on x86-64,
 * else CLOCK_MONOTONIC) once per start and once per stop, NOOP_CLOCK=2 also
 * once per state: a profiler that times every event cannot cost less, so
 * collprof-bench shows these as the floors for "trace off" and "trace on".
 *
 * It also exports collprof_pause/collprof_resume/collprof_paused
 * (include/collprof.h), so that the GPU test application's in-process
 * A/B (test/gpu/ab.sh, "noop-*") measures the floor as it measures
 * collprof: paused, the mask NCCL reads is GroupApi alone, as collprof's
 * is while paused (NOOP_OFF_MASK changes it); resumed, the mask init set.
 * Found with dlsym(RTLD_DEFAULT) when this library is preloaded; never
 * load it beside collprof's.
 *
 * NOOP_GPU_SAMPLE=N (default 0: off) makes it sample KernelCh as collprof
 * does by default, and nothing else: KernelCh on in the mask for one API
 * call in N, one in N x NOOP_GPU_SAMPLE_SMALL (default 16) for calls of
 * fewer than 1 MiB (CollApi/P2pApi count x datatype size), decided at
 * each CollApi/P2pApi for the next call and published at the outermost
 * GroupApi stop (src/gpu_sample_rule.c's rule, at a fixed place in each
 * block instead of a drawn one: in a loop of one kind of call the rate
 * is the same).  With NCCL_PROFILE_EVENT_MASK=4031 it is the floor of
 * collprof's defaults: what NCCL itself costs for the events and the
 * KernelCh samples collprof asks for (test/gpu/ab.sh, "noop-sampled").
 * One calling thread, as collprof's sampling assumes.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include "nccl_profiler_abi.h"

#define NOOP_EXPORT __attribute__((visibility("default")))

static atomic_uint_fast64_t noop_next_thread = 1;
static atomic_uint_fast64_t noop_next_ctx = 1;
static _Thread_local uint64_t noop_thread_tag; /* thread number << 40 */
static _Thread_local uint64_t noop_counter;
static _Thread_local uint64_t noop_sink;            /* keeps the clock reads */
static int noop_clock;                              /* NOOP_CLOCK, read at init */

static inline void noop_tick(int level) {
  if (__builtin_expect(noop_clock < level, 1)) return;
#if defined(__x86_64__)
  noop_sink += __rdtsc();
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  noop_sink += (uint64_t)ts.tv_nsec;
#endif
}

static int noop_mask_from_env(void) {
  const char *s = getenv("NCCL_PROFILE_EVENT_MASK");
  if (!s || !*s) return NCCL_PROFILE_ALL_EVENTS;
  char *end = NULL;
  long v = strtol(s, &end, 0);
  if (*end || v < 0 || v > 0x7fffffff) return NCCL_PROFILE_ALL_EVENTS;
  return (int)v;
}

static _Atomic(int *) noop_mask_ptr;                /* NCCL's process-wide mask int */
static atomic_int noop_paused;
/* NOOP_GPU_SAMPLE (header): N, the small calls' factor, the decisions of
 * each stream so far, the one for the next call, open GroupApi events */
static int noop_gs_n, noop_gs_m, noop_gs_base;   /* ...and the mask init read (no getenv per call) */
static uint64_t noop_gs_k[2];
static atomic_int noop_gs_next, noop_gs_open;
#define NOOP_KC 64
#define NOOP_GROUPAPI_BIT 2u   /* in a GroupApi's handle (the others' low 4 bits are 0) */

/* The mask while paused: GroupApi alone, as collprof's, or NOOP_OFF_MASK. */
static int noop_off_mask(void) {
  const char *o = getenv("NOOP_OFF_MASK");
  return o ? atoi(o) : 256;
}

/* The mask while not paused: the base, with KernelCh when sampling wants
 * it for the next call. */
static int noop_on_mask(void) {
  if (!noop_gs_n) return noop_mask_from_env();
  return (noop_gs_base & ~NOOP_KC) | (atomic_load_explicit(&noop_gs_next, memory_order_relaxed) ? NOOP_KC : 0);
}

static void noop_set_ctx(void **context, int *mask) {
  const char *c = getenv("NOOP_CLOCK");
  noop_clock = c ? atoi(c) : 0;
  c = getenv("NOOP_GPU_SAMPLE");
  noop_gs_n = c && atoi(c) > 0 ? atoi(c) : 0;
  c = getenv("NOOP_GPU_SAMPLE_SMALL");
  noop_gs_m = c && atoi(c) > 0 ? atoi(c) : 16;
  noop_gs_base = noop_mask_from_env();
  if (context) *context = (void *)(uintptr_t)(atomic_fetch_add(&noop_next_ctx, 1) << 4);
  if (mask) {
    atomic_store(&noop_mask_ptr, mask);
    /* a pause before this init: off from the start */
    __atomic_store_n(mask, atomic_load(&noop_paused) ? noop_off_mask() : noop_on_mask(), __ATOMIC_RELAXED);
  }
}

/* Pause and resume, as collprof's (previous state returned). */
static int noop_switch(int pause) {
  const int was = atomic_exchange(&noop_paused, pause);
  int *m = atomic_load(&noop_mask_ptr);
  if (m) __atomic_store_n(m, pause ? noop_off_mask() : noop_on_mask(), __ATOMIC_RELAXED);
  return was;
}

/* Bytes of one element of an NCCL datatype name ("ncclFloat32", ...). */
static uint64_t noop_dt_size(const char *dt) {
  if (!dt) return 1;
  for (const char *p = dt; *p; p++) {
    if (p[0] == '6' && p[1] == '4') return 8;
    if (p[0] == '3' && p[1] == '2') return 4;
    if (p[0] == '1' && p[1] == '6') return 2;
  }
  return 1;
}

/* At a CollApi/P2pApi: whether the next call samples KernelCh. */
static void noop_gs_decide(uint64_t bytes) {
  const int small = bytes && bytes < 1048576;
  const uint64_t n = (uint64_t)noop_gs_n * (small ? (uint64_t)noop_gs_m : 1);
  atomic_store_explicit(&noop_gs_next, ++noop_gs_k[small] % n == 0, memory_order_relaxed);
}
NOOP_EXPORT int collprof_pause(void) { return noop_switch(1); }
NOOP_EXPORT int collprof_resume(void) { return noop_switch(0); }
NOOP_EXPORT int collprof_paused(void) { return atomic_load(&noop_paused); }

static ncclResult_t noop_init_v5(void **context, uint64_t commId, int *mask,
                                 const char *commName, int nNodes, int nranks,
                                 int rank, ncclDebugLogger_t logfn) {
  (void)commId; (void)commName; (void)nNodes; (void)nranks; (void)rank; (void)logfn;
  noop_set_ctx(context, mask);
  return NCCL_OK;
}

static ncclResult_t noop_init_v4(void **context, int *mask, const char *commName,
                                 uint64_t commHash, int nNodes, int nranks,
                                 int rank, ncclDebugLogger_t logfn) {
  (void)commName; (void)commHash; (void)nNodes; (void)nranks; (void)rank; (void)logfn;
  noop_set_ctx(context, mask);
  return NCCL_OK;
}

static inline void *noop_handle(void) {
  if (!noop_thread_tag)
    noop_thread_tag = atomic_fetch_add(&noop_next_thread, 1) << 40;
  return (void *)(uintptr_t)(noop_thread_tag | ((++noop_counter) << 4));
}

static ncclResult_t noop_start_v5(void *context, void **eHandle,
                                  ncclProfilerEventDescr_v5_t *d) {
  (void)context;
  noop_tick(1);
  if (!eHandle) return NCCL_OK;
  *eHandle = noop_handle();
  if (__builtin_expect(noop_gs_n != 0, 0) && d) {
    if (d->type == ncclProfileGroupApi) {
      atomic_fetch_add_explicit(&noop_gs_open, 1, memory_order_relaxed);
      *eHandle = (void *)((uintptr_t)*eHandle | NOOP_GROUPAPI_BIT);
    } else if (d->type == ncclProfileCollApi) {
      noop_gs_decide((uint64_t)d->collApi.count * noop_dt_size(d->collApi.datatype));
    } else if (d->type == ncclProfileP2pApi) {
      noop_gs_decide((uint64_t)d->p2pApi.count * noop_dt_size(d->p2pApi.datatype));
    }
  }
  return NCCL_OK;
}

static ncclResult_t noop_start_v4(void *context, void **eHandle,
                                  ncclProfilerEventDescr_v4_t *d) {
  (void)context; (void)d;
  if (eHandle) *eHandle = noop_handle();
  return NCCL_OK;
}

static ncclResult_t noop_stop(void *eHandle) {
  noop_tick(1);
  /* the outermost GroupApi stop: the one point where KernelCh may change */
  if (__builtin_expect(noop_gs_n != 0, 0) && ((uintptr_t)eHandle & NOOP_GROUPAPI_BIT) &&
      atomic_fetch_sub_explicit(&noop_gs_open, 1, memory_order_relaxed) == 1 &&
      !atomic_load(&noop_paused)) {
    int *m = atomic_load(&noop_mask_ptr);
    if (m) __atomic_store_n(m, noop_on_mask(), __ATOMIC_RELAXED);
  }
  return NCCL_OK;
}

static ncclResult_t noop_state_v5(void *eHandle, ncclProfilerEventState_v5_t s,
                                  ncclProfilerEventStateArgs_v5_t *a) {
  (void)eHandle; (void)s; (void)a;
  noop_tick(2);
  return NCCL_OK;
}

static ncclResult_t noop_state_v4(void *eHandle, ncclProfilerEventState_v4_t s,
                                  ncclProfilerEventStateArgs_v4_t *a) {
  (void)eHandle; (void)s; (void)a;
  return NCCL_OK;
}

static ncclResult_t noop_finalize(void *context) { (void)context; return NCCL_OK; }

NOOP_EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
  "noop", noop_init_v5, noop_start_v5, noop_stop, noop_state_v5, noop_finalize,
};

NOOP_EXPORT ncclProfiler_v4_t ncclProfiler_v4 = {
  "noop", noop_init_v4, noop_start_v4, noop_stop, noop_state_v4, noop_finalize,
};
