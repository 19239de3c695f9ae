/*
 * gpu_estimate.h — GPU time of a Coll/P2p path estimated per message-size
 * class, on one rank.
 *
 * KernelCh (the only GPU time) is on for one API call in N (mask_control.h),
 * so a path's GPU time is estimated from its samples.  One mean for the
 * whole path is biased when the path mixes sizes: a long kernel keeps its
 * sample in flight longer, later wanted samples are skipped meanwhile, so
 * the samples come mostly from small, short calls (H200, 4 ranks, sweep of
 * 8 B-64 MB at N = 4: 0.33-0.57 of the CUDA-event time).  Here every call
 * is counted in its log2 size class, every sample in its call's class, and
 * each class's mean stands for that class's calls only.
 *
 * Within a class:
 *   - first-call samples (mask_control.h: set-up, late peers) count once;
 *   - every call sampled: the exact sum;
 *   - an outlier, a periodic sample more than CP_GCLS_OUTLIER times the
 *     mean of the class's other periodic samples (at least one), counts
 *     once too: a rank waiting for peers still setting up another
 *     communicator (H200: one 33 ms sample of a 1 MB all-reduce against
 *     ~40 us, standing for 21 calls, made the path 10-17x too long);
 *   - a lone periodic sample (the class's only one) of a class with
 *     sampled classes on both sides, more than CP_GCLS_OUTLIER times the
 *     mean those neighbours would lend it (below), counts once too, and
 *     its class borrows: with one call in 256 sampled under 1 MiB, a
 *     class often has a single sample, and one of a rank waiting for its
 *     peers (H100, 4 ranks, the test app's broadcast: 6.8 ms in the 64 KiB
 *     class between 1.3 us at 32 B and 3.3 us at 256 KiB) made the path
 *     up to 30x too long, lent as it was to every class in between;
 *   - the remaining periodic samples' mean stands for the other calls.
 * A class with calls but no periodic sample takes its mean from the
 * nearest sampled classes: between two, geometric in the class (log-linear
 * in size); beyond the smallest or largest, that class's mean.  Not the
 * slope of the last two: GPU time is not monotone in size when the span
 * includes waiting for peers (a bundled capture: 27 us at 1 KiB, 198 us at
 * 8 KiB, 45 us at 64 KiB), and extrapolating made one path 6x too long.
 *
 * The result is a sum over calls, so ranks' estimates add up (collate):
 * est_ns covers est_calls calls.  A path without any periodic sample on this
 * rank covers only its first-call samples; the collator gives its other
 * calls the mean of every rank's periodic samples.
 */
#ifndef COLLPROF_GPU_ESTIMATE_H
#define COLLPROF_GPU_ESTIMATE_H
#include <stddef.h>
#include <stdint.h>

/* Class 0: 0 bytes (or datatype unknown); class k >= 1: [2^(k-1), 2^k)
 * bytes; the last class holds everything from 2^(CP_GCLS-2) bytes up. */
#define CP_GCLS 42
#define CP_GCLS_OUTLIER 10.0

typedef struct cp_gcls_ent {
  uint64_t calls;          /* stopped calls of this size (class 0: cp_gcls_fill_unsized);
                              first: a counted memo points here (counted_memo.h) */
  uint64_t samples, ns;    /* GPU samples and their spans, first-call ones included */
  uint64_t first_samples, first_ns;
  uint64_t max_ns;         /* the longest periodic (not first-call) sample */
  uint64_t lean;           /* of calls, those counted from their CollApi/P2pApi in a
                              lean call (start_counted.c, lean_derive) */
  uint64_t seen;           /* of calls, those not lean whose proxy events carry the
                              class: recorded, or counted with CP_CLS_BIT (call_modes.h;
                              lean_estimate.h) */
} cp_gcls_ent;
_Static_assert(offsetof(cp_gcls_ent, calls) == 0, "a counted memo's class pointer is its entry's");

/* A Coll/P2p path's table.  A proxy path (ProxyOp, ProxyStep, NetPlugin)
 * has one too, of another meaning: c[k].calls counts its events of the
 * calls seen (above) whose Coll/P2p is of class k (lean_estimate.h), the
 * rest stays 0. */
typedef struct cp_gcls { cp_gcls_ent c[CP_GCLS]; } cp_gcls;
static inline uint64_t cp_gcls_lean(const cp_gcls *g) {
  uint64_t n = 0;
  for (unsigned k = 0; k < CP_GCLS; k++) n += g->c[k].lean;
  return n;
}

static inline unsigned cp_gcls_of(uint64_t bytes) {
  if (!bytes) return 0;
  unsigned k = 64u - (unsigned)__builtin_clzll(bytes);
  return k < CP_GCLS ? k : CP_GCLS - 1;
}

/* The value of class k, which has none, from the classes ks[0..n)
 * (ascending, n >= 1) that have values vs: geometric in the class between
 * the nearest two (linear when either is 0), the nearest one's beyond
 * them (the rule above for a class without periodic samples). */
double cp_gcls_borrow(unsigned k, const unsigned *ks, const double *vs, unsigned n);

/* One sample into its class (single writer: relaxed stores, see tls.h). */
void cp_gcls_add_sample(cp_gcls *g, uint64_t bytes, uint64_t ns, int first);
/* into += from (max combined). */
void cp_gcls_add(cp_gcls *into, const cp_gcls *from);

/* Class 0's calls: those of the path's `calls` that the other classes do
 * not hold (the hot path counts only calls with bytes). */
void cp_gcls_fill_unsized(cp_gcls *g, uint64_t calls);

/* The calls of a filled table that may be of min_bytes or more: every
 * class that holds such sizes counts whole (exact when min_bytes is a power
 * of two), and class 0 (size unknown) too; min_bytes 0: all.  What the
 * launch timer (COLLPROF_LAUNCH_MIN_BYTES) may time, so the calls its mean
 * stands for. */
uint64_t cp_gcls_calls_from(const cp_gcls *g, uint64_t min_bytes);

/* The rank's estimate of a path from its filled table: *est_ns covers
 * *est_calls of its calls.  *outliers: samples counted once as outliers.
 * *borrowed: of est_calls, those whose class had no periodic sample of its
 * own (none, or only first-call or outlier ones), given the mean the
 * nearest sampled classes lend (cp_gcls_borrow): where those are larger
 * sizes, as for a sweep's small sizes that passed in the start delay, an
 * estimate that is usually too long.  outliers and borrowed may be NULL. */
void cp_gpu_estimate(const cp_gcls *g, uint64_t *est_ns, uint64_t *est_calls, uint64_t *outliers,
                     uint64_t *borrowed);

/* The same rule class by class: what cp_gpu_estimate sums.  Class k's
 * estimate ns covers its calls (fewer than c[k].calls only where the path
 * has no periodic sample at all: the collator pools those); outliers and
 * outlier_ns: its samples counted once as outliers (a lone one: its
 * value); lent: of its calls, those given the mean of the nearest sampled
 * classes.  Each ns is rounded so that the classes add up to the path's
 * rounded total.  The rank file writes these per class ("gpuSizes"), so
 * collprof-collate --sizes adds them up over ranks instead of restating
 * the rule. */
typedef struct cp_gcls_est { uint64_t ns, calls, outliers, outlier_ns, lent; } cp_gcls_est;
void cp_gpu_estimate_classes(const cp_gcls *g, cp_gcls_est c[CP_GCLS]);

#endif
