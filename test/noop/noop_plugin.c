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

/* The mask while paused: GroupApi alone, as collprof's, or NOOP_OFF_MASK. */
static int noop_off_mask(void) {
  const char *o = getenv("NOOP_OFF_MASK");
  return o ? atoi(o) : 256;
}

static void noop_set_ctx(void **context, int *mask) {
  const char *c = getenv("NOOP_CLOCK");
  noop_clock = c ? atoi(c) : 0;
  if (context) *context = (void *)(uintptr_t)(atomic_fetch_add(&noop_next_ctx, 1) << 4);
  if (mask) {
    atomic_store(&noop_mask_ptr, mask);
    /* a pause before this init: off from the start */
    __atomic_store_n(mask, atomic_load(&noop_paused) ? noop_off_mask() : noop_mask_from_env(), __ATOMIC_RELAXED);
  }
}

/* Pause and resume, as collprof's (previous state returned). */
static int noop_switch(int pause) {
  const int was = atomic_exchange(&noop_paused, pause);
  int *m = atomic_load(&noop_mask_ptr);
  if (m) __atomic_store_n(m, pause ? noop_off_mask() : noop_mask_from_env(), __ATOMIC_RELAXED);
  return was;
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
  (void)context; (void)d;
  noop_tick(1);
  if (eHandle) *eHandle = noop_handle();
  return NCCL_OK;
}

static ncclResult_t noop_start_v4(void *context, void **eHandle,
                                  ncclProfilerEventDescr_v4_t *d) {
  (void)context; (void)d;
  if (eHandle) *eHandle = noop_handle();
  return NCCL_OK;
}

static ncclResult_t noop_stop(void *eHandle) {
  (void)eHandle;
  noop_tick(1);
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
