/*
 * reduce.h — from the global merged set (merge.h) to a cp_summary
 * (rundata.h): global IDs, copies of the strings, derived numbers.  Used by
 * the MPI layer (rank 0, after the tree merge) and by collprof-collate
 * (after merging every rank file), so both write the same summary.
 *
 * Derived numbers (cp_summary_finish), per global path:
 *   avg_ns        = total_ns / nranks: mean of the per-rank totals over the
 *                   ranks that have the path (a rank without it is not a 0)
 *   imbalance_pct = Vftrace's: 100*max(|tmax-avg|, |tmin-avg|)/avg, negative
 *                   when the minimum is the larger deviation; imbalance_rank
 *                   the rank holding that extreme
 *   self_pct      = self_ns / sum of self_ns of all paths
 *   gpu_est_ns    = KernelCh: gpu_ns (exact); Coll/P2p: gpu_ns/gpu_samples
 *                   x calls, exact when gpu_samples == calls
 *   algbw/busbw   = Coll/P2p: S / t, x factor, nccl-tests' S and factors
 *                   (ABI doc), t = mean sampled GPU span when there are
 *                   samples, else mean host time per call; n = the size of
 *                   the communicators (agg.bw_nranks; unknown: no Coll bw)
 */
#ifndef COLLPROF_REDUCE_H
#define COLLPROF_REDUCE_H
#include "merge.h"

/* Build *out from the global set g.  cfg: the rank whose configuration is
 * reported (rank 0; may be NULL).  world_size: ranks in the job.  The
 * summary owns copies of every string.  collation info is left zero.
 * Returns 0, -1 on no memory. */
int cp_summary_build(const cp_mset *g, const cp_rank_data *cfg, int world_size,
                     int hash_bits, cp_summary *out);

/* Derived numbers of every path (called by cp_summary_build). */
void cp_summary_finish(cp_summary *s);

/* Paths ordered for the profile table: by total time, then id.  Returns a
 * malloc'd array of indices into s->paths. */
size_t *cp_summary_order_by_total(const cp_summary *s);

#endif
