/*
 * clock.h — the plugin's one clock: CLOCK_MONOTONIC nanoseconds, read from
 * the TSC on the hot path, plus the test-only skew.
 *
 * Every timestamp collprof writes comes from cp_clock_now() (collprof_now_ns
 * returns it too), so host times in the trace, the MPI clock sync and the GPU
 * offset estimate agree.  With an invariant TSC (cpuid 0x80000007 EDX bit 8,
 * or the kernel itself using the "tsc" clocksource) a read is rdtsc and a
 * multiply, inlined: no system call, no vDSO.  The TSC-to-ns mapping is anchored to
 * CLOCK_MONOTONIC at load and re-anchored at growing intervals (2 ms .. 1 s),
 * the rate always measured from the load anchor, so drift against the
 * kernel's clock stays below a microsecond and later re-anchors move the
 * clock by nanoseconds.  Without an invariant TSC: clock_gettime.
 *
 * COLLPROF_TEST_CLOCK_SKEW_NS: one number, or "s0,s1,..." indexed by
 * OMPI_COMM_WORLD_RANK / PMIX_RANK; added to every reading.
 */
#ifndef COLLPROF_CLOCK_H
#define COLLPROF_CLOCK_H
#include <stdint.h>
#include "hot.h"

#if defined(__x86_64__) || defined(__i386__)
#include <stdatomic.h>
#include <x86intrin.h>
#define CP_CLOCK_TSC 1
#endif

/* Calibrate (idempotent, thread-safe; also run by a library constructor). */
void cp_clock_init(void);
/* Now, in ns (monotonic + skew).  Inline fast path below. */
static inline uint64_t cp_clock_now(void);
uint64_t cp_clock_now_slow(void);   /* also re-anchors when due */
/* CLOCK_MONOTONIC/REALTIME at load (without/with skew as documented). */
uint64_t cp_clock_start_mono(void);   /* includes the skew, like cp_clock_now */
int64_t cp_clock_start_wall(void);    /* CLOCK_REALTIME at the same instant */
int64_t cp_clock_skew(void);
int cp_clock_uses_tsc(void);

/* One TSC-to-ns mapping.  Published by pointer (release), never changed
 * while current; a ring of them is reused long after (clock.c).  Before
 * calibration, and without a TSC, the pointer names a map no reading fits
 * (lim 0, tsc0 at the top), so the inline read needs no NULL test. */
typedef struct cp_clock_map {
  uint64_t tsc0, ns0, mult, lim;   /* ns = ns0 + (tsc - tsc0) * mult >> 32; ns0 includes the skew */
} cp_clock_map;
/* The current map, on hot.h's line (one line fewer per timestamp). */
#define cp_clock_cur (cp_hot.clock_cur)

static inline uint64_t cp_clock_now(void) {
#ifdef CP_CLOCK_TSC
  const cp_clock_map *m = atomic_load_explicit(&cp_clock_cur, memory_order_acquire);
  /* Unsigned: a TSC below tsc0 wraps to a d far above any lim. */
  const uint64_t d = __rdtsc() - __atomic_load_n(&m->tsc0, __ATOMIC_RELAXED);
  if (__builtin_expect(d <= __atomic_load_n(&m->lim, __ATOMIC_RELAXED), 1)) {
    __extension__ typedef unsigned __int128 u128;
    return __atomic_load_n(&m->ns0, __ATOMIC_RELAXED) +
           (uint64_t)(((u128)d * __atomic_load_n(&m->mult, __ATOMIC_RELAXED)) >> 32);
  }
#endif
  return cp_clock_now_slow();
}

#endif
