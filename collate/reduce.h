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
 *                   call was sampled (exact), else a stratified estimate:
 *                   first-call samples (gpu_first_*: a thread's, a path's
 *                   or a window's first sampled call, chosen by rule, not at
 *                   random) count once as they are, and the periodic
 *                   samples' mean stands for every other call:
 *                     F + (G - F) / (S - Sf) x (calls - Sf)
 *                   (G, S: gpu_ns, gpu_samples; F, Sf: their first-call
 *                   part).  Plain mean x calls let one first call (NCCL's
 *                   connection set-up, a peer still starting: up to seconds
 *                   on H200 against microseconds later) stand for N calls:
 *                   4-9x the exact total on the bundled captures at N = 16.
 *                   Only first-call samples: G / S x calls.
 *   gpu_call_ns   = the per-call GPU time behind it: (G - F) / (S - Sf),
 *                   or G / S when every sample is a first-call one
 *   algbw/busbw   = Coll/P2p: S / t, x factor, nccl-tests' S and factors
 *                   (ABI doc), t = gpu_call_ns when there are samples, else
 *                   mean host time per call; n = the size of
 *                   the communicators (agg.bw_nranks; unknown: no Coll bw)
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

/* Paths ordered for the profile table: by total time, then id.  Returns a
 * malloc'd array of indices into s->paths. */
size_t *cp_summary_order_by_total(const cp_summary *s);

#endif
