/*
 * launch_timer.h — GPU time of sampled kernel launches, measured as an
 * application measures it: a CUDA event recorded on the launch stream at
 * the KernelLaunch start and another at its stop.
 *
 * Why: KernelCh spans (the only GPU time NCCL hands a plugin) start at the
 * first channel's timestamp, after the kernel's launch, argument load and
 * set-up.  At 1-2 MiB that part is 3.5-8 us of a 20-40 us call on H200, so
 * a KernelCh-based GPU time is 20-40% below what the application's own
 * CUDA events show (README, "GPU time lower than CUDA-event time").  Two
 * events around the launch on the same stream see what the application
 * sees: the second completes when the kernel has ended, the first when the
 * stream reached the launch (the previous work on it ended, or at once when
 * the stream was idle).
 *
 * Which launches: one API call in N per thread (COLLPROF_LAUNCH_SAMPLE,
 * default 64; 0 = never, 1 = every call), independent of KernelCh
 * sampling, plus the thread's first launch (marked "first": it carries
 * connection set-up, and is kept out of the per-path mean).  When calls
 * come fast, further apart: no closer than COLLPROF_LAUNCH_INTERVAL_US
 * (default 5 ms) on average, the count chosen from the pace of the
 * previous spacing (cp_lt_spacing), since a timed launch costs the same
 * whatever the call's size.  Systematic sampling by count, so the
 * per-path mean times the calls estimates the path's total without the
 * size bias of KernelCh samples (gpu_estimate.h).
 *
 * Attribution: NCCL starts KernelLaunch (parent GroupApi) on the calling
 * thread before the group's Coll/P2p events; the Coll/P2p that start on
 * that thread before its next GroupApi start are the launch's work.  With
 * exactly one, the time is that path's; with none or several (an
 * all-to-all, grouped collectives) it is counted as not attributed.
 *
 * Runs (COLLPROF_LAUNCH_RUN=K, default 8): the event pair goes around K
 * consecutive launches of the thread instead of one, and the span over K
 * is each one's time.  Why: the events themselves cost the GPU 3-8 us
 * around the launch they bracket (an event between two NCCL kernels keeps
 * the second from starting before the first has ended, where they would
 * otherwise overlap), which is 20-40% of a 1 MiB call on H200; around K
 * back-to-back calls that cost is shared K ways.  A run goes on only while
 * each call launches one kernel on the same stream for one Coll/P2p of the
 * same path and size, and the application spends at most COLLPROF_LAUNCH_RUN_GAP_US
 * (default 2) between the end of one call and the start of the next: work
 * it queued on the stream in between would be inside the span, and no CUDA
 * call that queues work returns that fast.  A run that cannot go on is
 * dropped (its launches counted skipped), since its stop event was not yet
 * recorded and the stream may since hold other work; one whose start event
 * had completed before its last launch was queued is idle (below).  So K
 * suits loops of one collective issued back to back on a stream of their
 * own (benchmarks, bucketed gradient reductions).  It is on by default
 * (K = 8) because single timed launches missed the application's CUDA-event
 * time by more than 20% at 1 MiB on 4 H200s (all-gather, reduce-scatter
 * and reduce: 1.41-1.46) where runs of 8 were within it at all 35 sizes of
 * 1-64 MiB in the same job (test/gpu/run.sh 4, steps gs4 and gt4); where
 * calls are not back to back the runs are dropped at the gap and shrink
 * to single launches, so such loops lose at most half their samples.  The
 * case it cannot tell: a kernel queued on the same stream between two
 * calls in less than the gap (by another thread, say) is counted as the
 * path's; COLLPROF_LAUNCH_RUN=1 rules that out.
 *
 * Small calls (COLLPROF_LAUNCH_MIN_BYTES, default 64 KiB; 0 = any size):
 * a launch is timed only where its call holds a CollApi/P2pApi of that
 * many bytes or more (or of unknown size); the launches of smaller calls
 * are neither timed nor counted towards the next timed one.  Why: such a
 * call is host-bound in a loop (8-12 us of launch call against a kernel of
 * a few), so its timed launch finds the stream run dry and is set aside
 * as idle (below) anyway, while the timing itself cost 0.7-0.8% of every
 * 8 B-64 KiB all-reduce (4 H100s, test/gpu/ab.sh, six alternated passes:
 * 1.0443 of paused with it, 1.0366 with COLLPROF_LAUNCH_SAMPLE=0); the
 * spacing by time lets a burst of small calls between idle stretches take
 * a timed launch every few hundred calls.  Their GPU time comes from the
 * KernelCh samples, as for any call without a launch sample.
 *
 * Idle streams: when the start event has completed by the KernelLaunch
 * stop (one cuEventQuery), the stream had run dry and the GPU waited for
 * the host's launch (8-12 us of NCCL 2.28's launch call on H200), which
 * the span holds: such a launch is counted (idle) and traced, not put in
 * the path's numbers.  So a host-bound loop yields few launch samples and
 * the KernelCh estimate stands; where the GPU is the bottleneck the
 * samples are the kernels' times.  The few busy ones of a host-bound
 * collective read high: its stream is busy mostly because a peer fell
 * behind, and its kernels wait for that peer too (1 MiB on 2 H200s: up to
 * 1.64 of the loop's CUDA-event time; test/gpu/launch_skew.py sets one
 * rank's timed launches beside another's, share/doc/performance.md, "Judged where
 * CUDA events time the GPU").
 *
 * Costs: nothing on a call that is not sampled beyond a countdown; on a
 * sampled one cuStreamIsCapturing, cuCtxGetCurrent, two cuEventRecord, one
 * cuEventQuery (the idle test) and the capture-mode switches around them
 * (no system call), and later one query and cuEventElapsedTime.  On the
 * GPU a timed launch costs 5-9 us (H200, 4 ranks, all-reduce 16-64 MiB,
 * where the loop is GPU-bound: +0.3-0.6 us per call at one in 16 against
 * COLLPROF_LAUNCH_SAMPLE=0, measured with test/gpu/overhead.sh
 * EXTRA=collprof-nolaunch), presumably because an event between two NCCL
 * kernels keeps the second from starting before the first has ended; the
 * timed call is that much slower itself (launch times 1.06-1.12 of the
 * CUDA-event time at 1-4 MiB, 1.00-1.02 from 16 MiB).  One in 16 cost
 * about 1% of the sweep's mean bus bandwidth, hence one in 64 by default,
 * and the least interval for small calls.  Results are read with
 * cuEventQuery at the thread's next sampled launch, never waited for, and
 * at finalize with a bounded wait (200 ms).  A launch on a stream being
 * captured into a CUDA graph is never timed (an event record would become
 * a node of the user's graph), and nothing else is called then; every
 * other event call runs in relaxed capture mode, since a cuEventQuery
 * while the thread (or, in global mode, any thread) captures invalidates
 * the application's graph.  At most CP_LT_SLOTS launches are in flight per
 * process; beyond that a sample is skipped and counted.  The CUDA driver
 * is found with dlopen at plugin init; without it nothing is timed,
 * nothing is counted and nothing is said (CPU machines, the replay tool).
 */
#ifndef COLLPROF_LAUNCH_TIMER_H
#define COLLPROF_LAUNCH_TIMER_H
#include <stdint.h>
#include "tls.h"

#define CP_LT_SLOTS 64

/* COLLPROF_LAUNCH_SAMPLE, set by cp_lt_setup (0 until then, and where
 * there is no CUDA driver: off). */
extern int cp_lt_every;
/* COLLPROF_LAUNCH_MIN_BYTES, set by cp_lt_setup. */
extern uint64_t cp_lt_min_bytes;
/* Most launches between two timed ones however fast they come. */
#define CP_LT_MAX_STEP (1u << 20)

/* Launches from one timed launch to the next: every (COLLPROF_LAUNCH_SAMPLE),
 * and no fewer than fill interval_ns (COLLPROF_LAUNCH_INTERVAL_US, 0 =
 * none) at the pace of the previous spacing: prev_step launches that took
 * took_ns (prev_step 0: the thread's first, no pace known).  At a steady
 * pace the timed launches settle interval_ns apart, or every-th apart when
 * that is further; after an idle stretch the spacing falls back to every.
 * Capped at CP_LT_MAX_STEP.  (launch_timer.c, schedule_next, says why.) */
static inline uint32_t cp_lt_spacing(uint32_t every, uint64_t interval_ns, uint32_t prev_step, uint64_t took_ns) {
  uint64_t step = every ? every : 1;
  if (interval_ns && prev_step) {
    if (!took_ns) took_ns = 1;
    if (interval_ns > UINT64_MAX / prev_step) return CP_LT_MAX_STEP;
    const uint64_t pace = (interval_ns * prev_step + took_ns - 1) / took_ns;
    if (pace > step) step = pace;
  }
  return step > CP_LT_MAX_STEP ? CP_LT_MAX_STEP : (uint32_t)step;
}

/* Read the configuration (plugin init; idempotent). */
void cp_lt_setup(void);

void cp_lt_launch_start_slow(cp_thr *t, void *stream, uint64_t launch_handle, uint32_t comm_index,
                             int32_t rank);
void cp_lt_launch_stop_slow(cp_thr *t);
void cp_lt_claim_slow(cp_thr *t, uint32_t path, uint32_t type, uint64_t bytes, uint64_t handle);
void cp_lt_close_slow(cp_thr *t);
void cp_lt_group_stop_slow(cp_thr *t, uint64_t now);
/* A launch while the thread has a timed one open: 1 when it is the next
 * call of a run (and so taken into it); else 0, the open one closed: a
 * second launch of one group (its work is spread over launches, so the
 * timed one is not attributed) or a run that cannot go on. */
int cp_lt_open_launch_slow(cp_thr *t, void *stream);

/* KernelLaunch start on the calling thread: time it when it is this
 * thread's first or its turn (lt_left counts down to it; the slow path
 * sets the next spacing, cp_lt_spacing), or take it into the open run. */
/* The commonest KernelLaunch start in one test: no timing, or no launch
 * open and this one skipped (counted off lt_left).  0: call
 * cp_lt_launch_start, which does all the rest (start_counted.c's counted starts
 * use this to make no call at all). */
static inline int cp_lt_launch_quick(cp_thr *t) {
  if (!cp_lt_every) return 1;
  if (t->lt_cur != 0) return 0;
  if (!t->lt_big) return 1;   /* a small call's launch: not counted towards the next */
  if (t->lt_left == 0) return 0;
  t->lt_left--;
  return 1;
}
static inline void cp_lt_launch_start(cp_thr *t, void *stream, uint64_t launch_handle, uint32_t comm_index,
                                      int32_t rank) {
  if (!cp_lt_every) return;
  if (__builtin_expect(t->lt_cur != 0, 0) && cp_lt_open_launch_slow(t, stream)) return;
  if (!t->lt_big) return;
  if (t->lt_left) {
    t->lt_left--;
    return;
  }
  cp_lt_launch_start_slow(t, stream, launch_handle, comm_index, rank);
}
/* KernelLaunch stop on the thread that started it. */
static inline void cp_lt_launch_stop(cp_thr *t) {
  if (__builtin_expect(t->lt_cur != 0, 0)) cp_lt_launch_stop_slow(t);
}
/* A Coll/P2p start on the calling thread (a timed launch's work). */
static inline void cp_lt_claim(cp_thr *t, uint32_t path, uint32_t type, uint64_t bytes, uint64_t handle) {
  if (__builtin_expect(t->lt_cur != 0, 0)) cp_lt_claim_slow(t, path, type, bytes, handle);
}
/* A GroupApi start: the previous group's launch takes no more work (a run
 * may go on to this call's launch). */
static inline void cp_lt_group_start(cp_thr *t) {
  t->lt_big = cp_lt_min_bytes == 0;
  if (__builtin_expect(t->lt_cur != 0, 0)) cp_lt_close_slow(t);
}
/* A CollApi/P2pApi start of bytes (0: not known) on the calling thread:
 * whether its call's launch is large enough to time ("Small calls"). */
static inline void cp_lt_api(cp_thr *t, uint64_t bytes) {
  if (bytes >= cp_lt_min_bytes || bytes == 0) t->lt_big = 1;
}
/* A GroupApi stop at now (host clock): where a run's host gap begins. */
static inline void cp_lt_group_stop(cp_thr *t, uint64_t now) {
  if (__builtin_expect(t->lt_cur != 0, 0)) cp_lt_group_stop_slow(t, now);
}

/* Read every launch still in flight, waiting at most wait_ms for the GPU
 * (finalize, exit; never from a signal handler or a callback). */
void cp_lt_finish(int wait_ms);
#define CP_LT_FINISH_MS 200

/* Counters for the rank record (process-wide). */
typedef struct cp_lt_counts {
  uint64_t timed;         /* launches whose time was read */
  uint64_t unattributed;  /* of those: none or several Coll/P2p in the launch */
  uint64_t skipped;       /* wanted, not timed: stream capturing, all slots in
                             flight, no context, a CUDA error */
  uint64_t unread;        /* recorded, never read (GPU not done by finalize) */
  /* all five count launches: a run (COLLPROF_LAUNCH_RUN) counts each of its
   * own; a run that could not go on is counted skipped */
  uint64_t idle;          /* of the timed: the stream had run dry before the
                             kernel arrived (so the time holds host launch
                             latency): kept out of the per-path numbers */
} cp_lt_counts;
void cp_lt_get_counts(cp_lt_counts *out);

#endif
