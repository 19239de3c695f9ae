/*
 * cost_sample.h — what collprof costs the threads NCCL calls it on,
 * measured there, by sampling in time (cost_sample.c says how and why).
 *
 * The plugin's exported structs name the plain callbacks; for a window of
 * COLLPROF_COST_WINDOW_US every COLLPROF_COST_SAMPLE_MS or so (at random)
 * they name timing wrappers instead (plugin.c, cp_plugin_timed), which add
 * each callback's own time to its thread's block.  Outside the windows a
 * callback pays nothing for this.
 */
#ifndef COLLPROF_COST_SAMPLE_H
#define COLLPROF_COST_SAMPLE_H
#include <stdint.h>
#include "clock.h"

/* At first init: calibrate, start the window thread (config).  Idempotent. */
void cp_cost_start(void);
/* Stop the window thread (within 5 ms) and name the plain callbacks again. */
void cp_cost_shutdown(void);
/* In a forked child: no window thread there; plain callbacks. */
void cp_cost_after_fork(void);

/* The timing wrappers' two halves (plugin.c): the clock before the
 * callback, then after it the time spent added to this thread's block,
 * less the one-off set-ups in it (oneoff.h: `oneoff0` is cp_oneoff_mine()
 * before the callback), which the estimate adds whole. */
static inline uint64_t cp_cost_begin(void) { return cp_clock_now(); }
void cp_cost_end(uint64_t t0, uint64_t oneoff0);

/* A part of the run scaled by its own windows (cost_sample.c, "Short
 * runs"): its time, its windows, their time and callbacks, and the sums of
 * the windows' callback times and of their squares. */
typedef struct cp_cost_stratum {
  uint64_t span_ns, windows, window_ns, timed_ns, callbacks, closed;
  long double s1, s2;
} cp_cost_stratum;

/* Where the measurement stands (snapshot.c). */
typedef struct cp_cost_stats {
  uint64_t callbacks;   /* callbacks timed, all threads */
  uint64_t timed_ns;    /* their time, less the timing's own (calibrated) */
  uint64_t windows;     /* windows opened (always on: 1) */
  uint64_t window_ns;   /* time windows were open, the one open now included */
  uint64_t span_ns;     /* since the window thread started */
  uint64_t slow_ns;     /* of window_ns (and span_ns), the timing's own: callbacks
                           x what a wrapper adds (calibrated at start) */
  uint64_t est_ns;      /* timed_ns x (span_ns - slow_ns) / (window_ns - slow_ns)
                           + setup_ns: every callback's time, estimated; 0 when
                           no window has opened */
  uint64_t setup_ns;    /* one-off set-ups, timed whole (oneoff.h); not in timed_ns */
  uint64_t err_ns;      /* its standard error, from the spread of the windows */
  int err_known;        /* err_ns holds (every callback timed: 0; 2 windows or more
                           in each stratum) */
  /* the dense phase, where the run is scaled as two strata (span_ns 0:
   * as one); est_ns and slow_ns include its share */
  cp_cost_stratum dense;
  uint64_t dense_est_ns, dense_slow_ns;
} cp_cost_stats;
void cp_cost_read(cp_cost_stats *out);

/* timed x span / window, rounded, without overflow; 0 when window is 0
 * (exposed for the unit test) */
uint64_t cp_cost_scale(uint64_t timed_ns, uint64_t span_ns, uint64_t window_ns);

#endif
