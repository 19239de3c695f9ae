/*
 * reduce.h — finishing a cp_summary (rundata.h) whose paths the final
 * merge filled (pset.h): configuration, hash collisions, the total of self
 * times, and the numbers derived per path when they are printed.  Used by
 * the MPI layer (rank 0, after the tree merge) and by collprof-collate
 * (after merging every rank file), so both write the same summary.
 *
 * Derived numbers (cp_gpath_derive), per global path:
 *   avg_ns        = total_ns / nranks: mean of the per-rank totals over the
 *                   ranks that have the path (a rank without it is not a 0)
 *   imbalance_pct = Vftrace's: 100*max(|tmax-avg|, |tmin-avg|)/avg, negative
 *                   when the minimum is the larger deviation; imbalance_rank
 *                   the rank holding that extreme
 *   self_pct      = self_ns / sum of self_ns of all paths
 *   gpu_est_ns    = KernelCh: gpu_ns (exact); Coll/P2p: gpu_ns when every
 *                   call was sampled (exact), else E + m x (calls - C):
 *                   E, C = gpu_est_ns, gpu_est_calls summed over ranks, each
 *                   rank's estimate per message-size class of the calls it
 *                   covers (src/gpu_estimate.h: first-call samples and
 *                   outliers once, each class's periodic mean for its other
 *                   calls); m = the mean of every rank's periodic samples,
 *                   (G - F) / (S - Sf) (G, S: gpu_ns, gpu_samples; F, Sf:
 *                   their first-call part), for the calls no rank's classes
 *                   cover (a rank without a periodic sample of the path;
 *                   files from before size classes: C = Sf, E = F, so
 *                   F + m x (calls - Sf)); when every sample is a first-call
 *                   one (Sf = S < calls) there is no m: gpu_est_ns = G, the
 *                   sampled calls alone (a lower bound), gpu_first_only set
 *                   (first-call samples hold NCCL's set-up: lent to the other
 *                   calls they made the bundled demo's all-gather 12x too long)
 *   gpu_call_ns   = gpu_est_ns / calls: the GPU time per call behind it;
 *                   gpu_first_only: G / S, the first-call samples' mean
 *   gpu_borrowed_calls = of an estimate (not exact, not gpu_first_only),
 *                   the calls whose time is another size's: the ranks'
 *                   calls of classes without a periodic sample of their own
 *                   (src/gpu_estimate.h) plus calls - C, given m
 *   launch_call_ns = Coll/P2p: gpu_launch_ns / gpu_launch_samples, the mean
 *                   GPU time of its timed kernel launches (CUDA events on
 *                   the launch stream, src/launch_timer.h: one call in N,
 *                   systematic, so the mean needs no size classes);
 *                   launch_est_ns = that x gpu_launch_calls, the calls of
 *                   a size the launch timer times (COLLPROF_LAUNCH_MIN_BYTES
 *                   or more; files from before: all calls)
 *   algbw/busbw   = Coll/P2p: S / t, x factor, nccl-tests' S and factors
 *                   (ABI doc), t = gpu_call_ns; none without KernelCh
 *                   samples or when gpu_first_only (a Coll's host time is
 *                   NCCL's enqueue, not the transfer); n = the size of the
 *                   communicators (agg.bw_nranks; unknown: no Coll bw)
 */
#ifndef COLLPROF_REDUCE_H
#define COLLPROF_REDUCE_H
#include "pset.h"

/* Configuration fields of *out from cfg (the rank whose configuration is
 * reported: rank 0; may be NULL), the job's size and the hash width. */
void cp_summary_config(cp_summary *out, const cp_rank_data *cfg, int world_size, int hash_bits);

/* After the paths are in: self_total_ns, ncollisions, each path's collides. */
void cp_summary_finish(cp_summary *s);

/* The derived numbers of p (s: its summary, for the self-time total and the
 * communicator size; NULL leaves self_pct 0 and no bandwidth). */
void cp_gpath_derive(const cp_summary *s, const cp_gpath *p, cp_gderived *d);

/* nccl-tests' bus bandwidth for a Coll (leaf_type 2, its func) or P2p (4)
 * on communicators of n ranks: S = the per-rank bytes x *bytes_mult,
 * algbw = S / time, busbw = algbw x *factor.  0 where there is none (not a
 * Coll/P2p, or a Coll with n <= 0: no size, or sizes that disagree). */
int cp_bw_factors(uint32_t leaf_type, const char *func, int n, double *bytes_mult, double *factor);

/* Paths ordered for the profile table: by total time, then id.  Returns a
 * malloc'd array of indices into s->paths. */
size_t *cp_summary_order_by_total(const cp_summary *s);

#endif
