/*
 * gpu_sample_rule.c — which API call gets KernelCh: the decision that
 * cp_mask_on_api_call makes at every call for the next one, published by
 * mask_control.c at the next outermost group stop.
 *
 * GPU sampling rule (N = COLLPROF_GPU_SAMPLE, calls numbered k = 0, 1, ...
 * in the order cp_mask_on_api_call sees them on one thread: each thread
 * numbers its own calls, so the hook shares no written cache line between
 * threads; S(k) = KernelCh on for k):
 *   - N == 0: KernelCh never (even if the base mask has it).
 *   - N == 1: KernelCh always.
 *   - N >= 2: calls fall in blocks of N (block b = k / N).  Exactly one call
 *     per block is a periodic sample, at position p(b) = 0 for b = 0 (the
 *     very first call is sampled: the mask at attach has KernelCh; not
 *     while the start delay runs, start_delay.c, which is the default) and
 *     p(b) = splitmix64(b) % N after.  A fixed position (k % N == 0) would
 *     alias with loops: in a loop of 2 collectives with N = 16 only the
 *     first would ever be sampled.  The pseudo-random position keeps the
 *     rate at exactly 1/N while every path of a loop gets 1/N in expectation.
 *   - Spacing (COLLPROF_GPU_SAMPLE_US = S > 0; default 0, off): a call
 *     with KernelCh costs NCCL several microseconds at the smallest sizes
 *     (4 us for an 8 B all-reduce on 4 H100s), which on a call of 10 us is
 *     a third of it: one in 16 put 8 B-4 KiB all-reduces 4-8% above the
 *     same calls with collprof paused (test/gpu/ab.sh; 0.2-1.3% with GPU
 *     sampling off).  With S, each thread's calls fall in blocks of
 *     N x 2^j, j (0..2) the least for which a block spans S at the
 *     thread's pace: a running mean of the time per call, measured from
 *     one clock read at each block's start (a block across a time
 *     recording was off does not count).  One call per block is sampled,
 *     at a position drawn per block.  Calls more than S/N apart keep one
 *     in N; a tight loop of 10 us calls gets one in 4 N.  Off by default
 *     because the estimate suffers: a size class's mean then weighs its
 *     calls by their pace, and a block sized in a fast phase runs on into
 *     a slow one (the test app's sweep, then its contended split phase):
 *     test/gpu/estimate_check.sh put the app's all-reduce at 0.58 of the
 *     measured GPU time with S = 500 against 0.76 with S = 0, on one
 *     4-H100 host (up to 64 N instead of 4 N: 0.47).
 *   - Small calls (COLLPROF_GPU_SAMPLE_SMALL = M, default 16, and
 *     COLLPROF_GPU_SAMPLE_SMALL_BYTES = B, default 1 MiB): KernelCh's cost
 *     to NCCL is about fixed per call (4 us for an 8 B all-reduce on 4
 *     H100s: 12.8 us a call with it, 8.8 without), so one in N costs a
 *     call of 10 us 3% and one of 100 us 0.3%.  The defaults put calls
 *     under 1 MiB (under 40 us on 2-4 H100s) at one in 256: with one in
 *     64 under 64 KiB, 64-512 KiB all-reduces at one in 16 were 1.05-1.07
 *     of paused on 2 H100s, and 4 H100s had 11 of 18 sizes of 8 B-1 MiB
 *     above 1.03, none with these (test/gpu/ab.sh, share/doc/performance.md,
 *     "Small calls' GPU samples").  So with M > 1 a thread's
 *     decisions fall in two streams, each in blocks with one periodic
 *     sample as above: those made at a call of fewer than B bytes (its
 *     CollApi/P2pApi count x datatype size; 0 bytes does not count as
 *     small) in blocks of M x N, the others in blocks of N, each stream
 *     numbering its own decisions (the other stream's, and so the whole,
 *     stays what it would be alone: with no small call at all, exactly
 *     the rule above).  The decision is for the next call, so it takes
 *     the next call to be like this one, as in a loop; in a loop that
 *     alternates small and large calls the two rates trade places, which
 *     costs the small calls what one in N would and no more.  B is a power
 *     of two (config.c rounds it up), so a size class of the GPU estimate
 *     (gpu_estimate.h) is all small or all not, and within a class every
 *     call is sampled at one rate: its mean still stands for its calls.
 *     Spacing (above) replaces both streams.
 *   - Forcing: when call k was not sampled, call k+1 is not a periodic
 *     sample, and k's path has no GPU sample yet (cp_path_gpu_seen == 0),
 *     call k+1 is sampled as well — at most once per path, ever (a bitmap of
 *     paths that forced), and only while forced samples so far are fewer
 *     than 64 or fewer than (k+1)/N.  So a stream of new paths cannot keep
 *     KernelCh on (long-run rate at most 2/N), and a path whose forced
 *     sample landed on a different path (a loop) falls back to the periodic
 *     rate.  Paths with ids >= 65536 never force.
 *   - Class forcing: likewise per size class (gpu_estimate.h: log2 of the
 *     call's count x datatype size).  When call k is the second of its
 *     class on its path (the class recurs, so the next call is likely of
 *     it too), neither it nor the class's first call was sampled, and k+1
 *     is not a sample anyway (periodic, or the path's forced one, which
 *     takes its class), call k+1 is sampled -- once per path and class
 *     (bitmaps per path), within the same budget as above, for paths with
 *     ids < 4096.  It follows from the calls alone, not from when KernelCh
 *     arrives, so ranks that make the same calls with the same seed sample
 *     the same ones; a forced sample that is then skipped (one being in
 *     flight) is not asked for again.
 *     Why: the estimate stands each class's mean for that class's calls
 *     and lends a class without samples its neighbours' means; with one
 *     call in 256 under 1 MiB a sweep left most classes without, and on 2
 *     H200s (the test app's network run: all-reduce 8 B-4 MiB, 25 calls a
 *     size) the one class sampled, 4 MiB, lent 1.4 ms to every smaller
 *     call: 7.7 times the path's GPU time.  In a sweep or a loop of
 *     repeated sizes the next call is of the same size, so the sample
 *     lands in the class that asked.  Unlike a path's forced sample it is
 *     periodic, not a first-call one: it stands for its class's calls.
 *   - First-call samples: call 0, forced samples and the first call of a
 *     profiling window are not chosen at random; they are the first calls of
 *     a thread, a path or a window, which carry connection set-up and the
 *     wait for peers that have not arrived yet (milliseconds to seconds on
 *     H200, against microseconds later).  Such a sample is marked
 *     (cp_mask_sample_first) and counted once in the path's GPU estimate
 *     instead of standing for N calls (collate/reduce.c).
 *   S(k+1) is decided in the hook of call k, because NCCL reads the mask
 *   before the call's first callback (ABI doc: a change reaches the next
 *   API call).  Sampled calls are counted from the caller's `sampled` flag.
 *   With several threads issuing calls, "the next call" is whichever reads
 *   the mask next; the rate stays 1/N overall.
 *   A wanted sample is not always published: while an earlier sample's
 *   KernelCh are due (sample_in_flight.c), while the start delay runs
 *   (start_delay.c), right after a window opened (profiling_windows.c)
 *   and once the mask is frozen (mask_control.c) it is held back.
 */
#include "mask_state.h"
#include "config.h"
#include "tls.h"
#include "clock.h"
#include "hot.h"
#include "mix64.h"
#include "gpu_estimate.h"   /* cp_gcls_of: class forcing */

#include <stdatomic.h>
#pragma GCC visibility push(hidden)

#define FORCE_CAP (1u << 16)          /* paths tracked for forcing */
#define CLS_FORCE_CAP 4096u           /* paths tracked for forcing per size class (32 KiB) */
#define FORCE_BURST 64                /* forced samples before rate-limiting */

static _Atomic uint64_t g_forced[FORCE_CAP / 64]; /* paths that will not force: forced, or GPU-seen */
static _Atomic uint64_t g_cls_once[CLS_FORCE_CAP];   /* per path, bit k: a call of class k was seen */
static _Atomic uint64_t g_cls_forced[CLS_FORCE_CAP]; /* per path, bit k: class k will not force (forced, or sampled) */
static atomic_uint_fast64_t g_forced_total;

static __attribute__((noinline)) int periodic_spaced(cp_thr *t, uint64_t k1);

/* Is decision j of a stream in blocks of n a periodic sample?  Block
 * b = j / n has its sample at pos = 0 for b = 0, else splitmix64(b) % n
 * (header).  Decisions come numbered 1, 2, 3...: the block's place and
 * sample are carried from the decision before, so the divisions and
 * cp_mix64 (mix64.h: splitmix64) run once per block, not at every API
 * call (they were three 64-bit divisions a call, the most of this hook's
 * cost).  A number that
 * does not follow the last one (a counter reset, the block threads share)
 * is placed afresh by the rule itself.  A zeroed stream stands at
 * decision 0 of block 0. */
static inline int periodic_stream(struct cp_gs_stream *s, uint64_t j, uint64_t n) {
  if (n <= 1) return (int)n;
  if (__builtin_expect(j == s->j + 1, 1)) {
    if (++s->i == n) {   /* a new block */
      s->i = 0;
      s->pos = cp_mix64(++s->b) % n;
    }
  } else {
    s->b = j / n;
    s->i = j % n;
    s->pos = s->b == 0 ? 0 : cp_mix64(s->b) % n;
  }
  s->j = j;
  return s->i == s->pos;
}

/* The periodic decision for the call after call k of thread t, a call of
 * `bytes` (header: spacing, small calls, or one stream). */
static int periodic_next(cp_thr *t, uint64_t k, uint64_t bytes) {
  if (cp_mk.space_ns) return periodic_spaced(t, k + 1);
  if (cp_mk.small_m <= 1) return periodic_stream(&t->gs_one, k + 1, cp_mk.n);
  if (bytes && bytes < cp_mk.small_bytes)
    return periodic_stream(&t->gs_small, t->gs_small.j + 1, (uint64_t)cp_mk.n * cp_mk.small_m);
  return periodic_stream(&t->gs_large, t->gs_large.j + 1, cp_mk.n);
}

/* Spacing (header): is call k1 of thread t the sample of its block?  A
 * block begins when the last one has been used up, sized from the pace. */
#define GS_MAX_LG 2
static __attribute__((noinline)) int periodic_spaced(cp_thr *t, uint64_t k1) {
  if (t->gs_i >= t->gs_blk) {
    const uint64_t now = cp_clock_now();
    const uint32_t ep = atomic_load_explicit(&cp_hot.off_epoch, memory_order_relaxed);
    if (t->gs_blk && t->gs_epoch == ep && now > t->gs_t0) {
      const uint64_t per = (now - t->gs_t0) / t->gs_blk;
      t->gs_pace = t->gs_pace ? (3 * t->gs_pace + per) / 4 : per;
    }
    t->gs_epoch = ep;
    t->gs_t0 = now;
    uint32_t n = cp_mk.n;   /* no pace measured yet: N */
    for (int j = 0; t->gs_pace && j < GS_MAX_LG && (uint64_t)n * t->gs_pace < cp_mk.space_ns; j++) n <<= 1;
    t->gs_blk = n;
    t->gs_pos = (uint32_t)(cp_mix64(k1 ^ cp_thr_seed(t)) % n);
    t->gs_i = 0;
  }
  return t->gs_i++ == t->gs_pos;
}

/* May one more call be forced, `calls` calls having been seen?  The first
 * FORCE_BURST freely (a program's distinct paths, early), then at most one
 * per N calls, so KernelCh stays on for at most 2 calls in N in the long run
 * whatever the stream of new paths. */
static int force_budget(uint64_t calls) {
  uint64_t f = atomic_load_explicit(&g_forced_total, memory_order_relaxed);
  return f < FORCE_BURST || f * cp_mk.n < calls;
}

/* Whether the call after call k is forced for `path`, whose bit in
 * g_forced is clear; out of line (the hook below then calls nothing in a
 * loop and saves no register). */
static __attribute__((noinline)) int force_or_settle(uint32_t path, uint64_t k, unsigned cls) {
  const uint64_t bit = 1ull << (path % 64);
  _Atomic uint64_t *w = &g_forced[path / 64];
  if (cp_path_gpu_seen(path)) {
    atomic_fetch_or_explicit(w, bit, memory_order_relaxed);   /* settled: not forced */
    return 0;
  }
  if (!force_budget(k + 1) || (atomic_fetch_or_explicit(w, bit, memory_order_relaxed) & bit)) return 0;
  atomic_fetch_add_explicit(&g_forced_total, 1, memory_order_relaxed);
  /* the path's first sample is of its class: that class forces no more */
  if (path < CLS_FORCE_CAP) atomic_fetch_or_explicit(&g_cls_forced[path], 1ull << cls, memory_order_relaxed);
  return 1;
}

/* Class forcing (header): a call of size class cls on `path`, whose bit
 * in g_cls_forced is clear.  A class's first call only notes it (a call
 * after it of the same size is not known to come); at its second the call
 * after is forced, unless either call had KernelCh or the next is a
 * sample anyway (`taken`), or beyond the budget; the class is then marked,
 * so it asks once.  Decided from the calls alone, not from when KernelCh
 * arrives, so ranks that make the same calls sample the same ones. */
static __attribute__((noinline)) int cls_call(uint32_t path, uint64_t k, unsigned cls, int sampled, int taken) {
  const uint64_t bit = 1ull << cls;
  if (!(atomic_fetch_or_explicit(&g_cls_once[path], bit, memory_order_relaxed) & bit)) {
    if (sampled) atomic_fetch_or_explicit(&g_cls_forced[path], bit, memory_order_relaxed);
    return 0;
  }
  if (atomic_fetch_or_explicit(&g_cls_forced[path], bit, memory_order_relaxed) & bit) return 0;
  if (taken || !force_budget(k + 1)) return 0;
  atomic_fetch_add_explicit(&g_forced_total, 1, memory_order_relaxed);
  return 1;
}

void cp_mask_on_api_call(uint32_t path, int sampled, uint64_t bytes) {
  /* Counted per thread (tls.h): this hook runs at every API call, and a
   * shared counter would be a locked read-modify-write on a cache line all
   * calling threads write.  k numbers this thread's calls; the rate stays
   * 1/N on every thread and so overall. */
  cp_thr *t = cp_thr_get();
  if (sampled) cp_inc(&t->api_sampled, 1);
  uint64_t k = cp_ld(&t->api_calls);
  cp_inc(&t->api_calls, 1);
  if (cp_mk.n <= 1) return;   /* N = 1: always on, N = 0: always off (init) */
  if (atomic_load_explicit(&cp_mk.frozen, memory_order_relaxed)) return;
  if (__builtin_expect(atomic_load_explicit(&cp_mk.start_delay, memory_order_relaxed), 0)) {
    /* start delay (start_delay.c): no sample wanted, and no path marked forced */
    if (atomic_load_explicit(&cp_mk.next_kc, memory_order_relaxed))
      atomic_store_explicit(&cp_mk.next_kc, 0, memory_order_relaxed);
    if (atomic_load_explicit(&cp_mk.next_first, memory_order_relaxed))
      atomic_store_explicit(&cp_mk.next_first, 0, memory_order_relaxed);
    return;
  }
  /* Decided here, published at the group stop (mask_control.c: never
   * inside a group). */
  int next = periodic_next(t, k, bytes), first = 0;
  /* Forcing (header).  A path's bit in g_forced says it will never force
   * again: it forced, or it was found GPU-seen (which it stays).  So in a
   * loop each call reads one word, not the budget and the path table.
   * Then its size class's bit in g_cls_forced, likewise (class forcing:
   * a periodic sample, not a first-call one). */
  const unsigned cls = cp_gcls_of(bytes);
  if (!next && !sampled && path < FORCE_CAP &&
      !(atomic_load_explicit(&g_forced[path / 64], memory_order_relaxed) & (1ull << (path % 64))))
    next = first = force_or_settle(path, k, cls);
  if (path < CLS_FORCE_CAP && !(atomic_load_explicit(&g_cls_forced[path], memory_order_relaxed) & (1ull << cls)))
    next |= cls_call(path, k, cls, sampled, sampled || next);
  if (atomic_load_explicit(&cp_mk.next_kc, memory_order_relaxed) != next)
    atomic_store_explicit(&cp_mk.next_kc, next, memory_order_relaxed);
  if (atomic_load_explicit(&cp_mk.next_first, memory_order_relaxed) != first)
    atomic_store_explicit(&cp_mk.next_first, first, memory_order_relaxed);
}

int cp_mask_sample_first(void) {
  return atomic_load_explicit(&cp_mk.next_first, memory_order_relaxed);
}

uint64_t cp_mask_sampled_calls(void) {
  uint64_t n = 0;
  for (cp_thr *t = cp_thr_all(); t; t = t->next) n += cp_ld(&t->api_sampled);
  return n;
}

#pragma GCC visibility pop
