/*
 * tree_collate.h — the MPI transport of the collation: every rank's set of
 * call paths (collate/merge.h) merged up a binomial tree to rank 0 in
 * ceil(log2 P) rounds of point-to-point messages, then each rank's
 * local-to-global mapping sent back down the same tree.
 *
 * Up: in round k a rank with bit k set sends its merged subtree set (paths
 * with their combined numbers, hosts, communicators, run counters; packed,
 * collate/pset.h) to rank - 2^k and is done; a rank merges its own set and
 * all its children's in one k-way pass.  A path string crosses each tree
 * edge at most once (sets are unique), nobody loops over all ranks, and no
 * rank holds more than its subtree's set.  Per-path numbers are combined in
 * the merge (exact integer sums, min/max with the lowest rank on ties:
 * MPI_MINLOC/MAXLOC semantics), so a path absent on a rank is never a zero
 * on it and no dense array of all global paths is ever reduced.  Rank 0
 * merges straight into the summary.
 * Down: rank 0's output positions are the global ids; each parent sends
 * each child the global ids of the set that child sent up (u32 array, in
 * the child's order, no strings), in reverse round order.
 * The per-rank byte counts ride up with the sets (no gather at the end).
 *
 * Used by libcollprof-mpi.so at MPI_Finalize and by the collation
 * benchmark (mpi_wrap/bench/), so the benchmark measures this code.
 */
#ifndef COLLPROF_TREE_COLLATE_H
#define COLLPROF_TREE_COLLATE_H
#include <mpi.h>
#include "rundata.h"

typedef struct cp_tree_info {
  int rounds;                 /* up-phase rounds: ceil(log2 P) */
  uint64_t bytes_sent, bytes_recv;   /* this rank, both phases, payload bytes */
  double wall_s;              /* this rank, from the start barrier to done */
} cp_tree_info;

/* Collective over comm.  mine: this rank's data (rank field = rank in
 * comm).  gids[i]: global id of mine->paths[i] (out, mine->npaths long).
 * On rank 0, *out (may be NULL: ids only) receives the summary with its
 * collation info filled (rounds, per-rank bytes, max receive, rank 0's wall
 * time from the barrier to the finished summary); out is unused elsewhere.  Returns 0; -1 on a local failure (the rank
 * still takes part in every message, with an empty set, so no rank hangs). */
int cp_tree_collate(MPI_Comm comm, const cp_rank_data *mine, int hash_bits,
                    int64_t *gids, cp_summary *out, cp_tree_info *info);

#endif
