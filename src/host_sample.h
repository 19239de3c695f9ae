/*
 * host_sample.h — the arithmetic of host sampling (call_modes.h, "Host
 * sampling"): how many API calls share one timed call when the rate is
 * chosen from the calls themselves (COLLPROF_HOST_SAMPLE=auto), and the
 * estimate of a path's time from its timed events.  Pure functions, so
 * that test/unit checks them without a plugin.
 *
 * Why "auto": timing and tracing a call costs about a microsecond on an
 * H200 host (share/doc/performance.md, "`make bench`"), which is nothing beside a
 * call every millisecond and a tenth of a 10-us all-reduce issued in a
 * tight loop.  So auto times every call while a thread's calls are at
 * least COLLPROF_HOST_SAMPLE_US apart, and one call in N when they come
 * faster, N the power of two that keeps the timed calls about that far
 * apart (at most 64): sparse calls keep their full trace, a tight loop
 * costs what `COLLPROF_HOST_SAMPLE=N` costs.  The spacing is 1 ms by
 * default: at 100 us a loop of 10-us all-reduces had one call in 16 timed,
 * and that cost about 1% of every call at 8 B-64 KiB on 2 H200s against
 * 1 ms's one in 64 (test/gpu/ab.sh, three alternated passes, medians
 * 1.056 and 1.042 of paused); one in 64 of such a loop is still over a
 * thousand timed calls a second.
 *
 * Why weights: N then changes with the rate, so calls of a fast phase are
 * timed less often than those of a slow one; a plain mean of the timed
 * events would over-weight the slow phase.  Each timed event carries the
 * N of its block (a power of two: log2 in 3 bits of its slot), its time
 * is added N times and its weight N counted (Horvitz-Thompson), and a
 * path's estimate is its weighted mean times its calls.  With a fixed N
 * (or every call timed) every weight is 1 and this is the plain mean.
 */
#ifndef COLLPROF_HOST_SAMPLE_H
#define COLLPROF_HOST_SAMPLE_H
#include <stdint.h>

#define CP_HOST_SAMPLE_AUTO (-1)   /* config.h host_sample: COLLPROF_HOST_SAMPLE=auto */
#define CP_HS_MAX_LG 6             /* auto: at most 1 call in 64 timed */

/* log2 of the block for a thread whose calls came gap_ns apart (a running
 * mean; 0 = not measured yet) when timed calls should be about target_ns
 * apart: the least power of two N with N * gap >= target, capped.  No gap
 * measured yet, or calls slower than the target: 0 (every call timed). */
static inline unsigned cp_hs_auto_lg(uint64_t target_ns, uint64_t gap_ns) {
  if (!gap_ns || gap_ns >= target_ns) return 0;
  unsigned lg = 0;
  while (lg < CP_HS_MAX_LG && (gap_ns << lg) < target_ns) lg++;
  return lg;
}

/* The running mean of the gap between a thread's calls: the new span of
 * `calls` calls weighs a quarter, so one idle pause moves N for a few
 * timed calls only.  gap 0: the first measurement. */
static inline uint64_t cp_hs_gap_update(uint64_t gap_ns, uint64_t span_ns, uint64_t calls) {
  if (!calls) return gap_ns;
  const uint64_t g = span_ns / calls;
  return gap_ns ? (3 * gap_ns + g) / 4 : g;
}

/* A path's estimated total (or self) time: weighted_ns is the sum of its
 * timed events' times each times its weight, timed their number, wextra
 * their weights beyond 1 summed; calls its events, timed or not.  Exact
 * (weighted_ns itself) when every call was timed with weight 1; 0 when
 * none was timed. */
static inline uint64_t cp_hs_estimate(uint64_t weighted_ns, uint64_t calls, uint64_t timed, uint64_t wextra) {
  const uint64_t w = timed + wextra;
  if (!w) return 0;
  if (w == calls) return weighted_ns;
  return (uint64_t)((unsigned __int128)weighted_ns * calls / w);
}

#endif
