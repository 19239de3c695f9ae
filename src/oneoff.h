/*
 * oneoff.h — collprof's one-off set-ups, timed whole wherever they run.
 *
 * A thread's first callback makes its block (tls.c) and trace ring
 * (trace_writer.c), the first record starts the trace writer, a new path
 * gets a profile chunk (profile.c), a pool grows (pool.c), a proxy thread
 * gets its deferral queue (proxy_defer.c): 0.2-1.7 ms each on the CPU
 * (page faults on fresh megabytes), against 30-100 ns for a callback.  The
 * in-situ cost estimate (cost_sample.c) times callbacks in windows at
 * random times and scales them up by about 25: a window that caught one
 * of these made that rank's estimate 5-20 times the truth, with an error
 * as large (test/gpu/run.sh's short steps on 2 H200s).  Set-ups are rare,
 * so they are timed exactly, two clock reads each: their time adds to a
 * per-thread sum that a timing wrapper subtracts from the callback it
 * timed (so the windows sample only the steady cost), and to a process
 * total that the estimate adds unscaled (costSetupNs).  Nested set-ups
 * count once, as the outermost.
 */
#ifndef COLLPROF_ONEOFF_H
#define COLLPROF_ONEOFF_H
#include <stdatomic.h>
#include <stdint.h>
#include "clock.h"
#include "tls.h"

/* All threads' set-up time (cost_sample.c reads it). */
extern _Atomic uint64_t cp_oneoff_total_ns;

/* Open a set-up: its start time (0 inside another, which counts it). */
static inline uint64_t cp_oneoff_begin(void) {
  return cp_tls_hot.oneoff_depth++ == 0 ? cp_clock_now() : 0;
}

/* Close it: the time since `t0` to this thread's sum and the total. */
static inline void cp_oneoff_end(uint64_t t0) {
  if (--cp_tls_hot.oneoff_depth != 0 || t0 == 0) return;
  const uint64_t now = cp_clock_now(), d = now > t0 ? now - t0 : 0;
  cp_tls_hot.oneoff_ns += d;
  atomic_fetch_add_explicit(&cp_oneoff_total_ns, d, memory_order_relaxed);
}

/* This thread's set-up time so far (a timing wrapper's before and after). */
static inline uint64_t cp_oneoff_mine(void) { return cp_tls_hot.oneoff_ns; }

#endif
