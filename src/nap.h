/*
 * nap.h — how collprof's timer threads wait: until a CLOCK_MONOTONIC
 * deadline, in slices, so that the thread stops within one slice once its
 * stop flag is set (profiling_windows.c's periods, cost_sample.c's
 * cost windows).  Why not pthread_cancel: it would stop the thread at
 * once, but unwinding a cancelled thread upsets AddressSanitizer and
 * anything with cleanup handlers.
 */
#ifndef COLLPROF_NAP_H
#define COLLPROF_NAP_H
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns (the system call's, not the plugin's TSC clock:
 * the deadlines are the kernel's). */
static inline uint64_t cp_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleep until t_ns in slices of at most slice_ns; 1 at the deadline, 0 as
 * soon as *stop is seen set. */
static inline int cp_nap_until(uint64_t t_ns, atomic_int *stop, uint64_t slice_ns) {
  for (;;) {
    if (atomic_load(stop)) return 0;
    const uint64_t now = cp_mono_ns();
    if (now >= t_ns) return 1;
    const uint64_t until = t_ns - now > slice_ns ? now + slice_ns : t_ns;
    const struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);   /* EINTR: loop */
  }
}

#endif
