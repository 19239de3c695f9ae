/*
 * merge.h — combining the numbers of one call path, or of the run counters,
 * from two disjoint groups of ranks: exact integer sums, min/max with the
 * lowest rank on ties (MPI_MINLOC/MAXLOC semantics).  Every combination is
 * commutative and associative, so the result does not depend on the order
 * or grouping of merges: the MPI tree and the offline tool agree.  The
 * sets of paths themselves are in pset.h.  Also the host and communicator
 * entries that sets carry.  MPI-free.
 */
#ifndef COLLPROF_MERGE_H
#define COLLPROF_MERGE_H
#include "rundata.h"

typedef struct cp_mhost { const char *name; uint32_t len; uint64_t ranks; } cp_mhost;

typedef struct cp_mcomm {
  uint64_t comm_id;
  const char *name; uint32_t nlen;
  int32_t nranks, nnodes;
  uint64_t members, events;
} cp_mcomm;

/* Combine numbers of one path from two disjoint groups of ranks. */
void cp_pstat_combine(cp_pstat *into, const cp_pstat *from);
/* Its sums and the events' min/max alone (no rank counts, no tmin/tmax):
 * for the same path twice in one rank (collate/pset_rank.c). */
void cp_pstat_add(cp_pstat *into, const cp_pstat *from);
/* The numbers of one path of one rank. */
void cp_pstat_from_rec(cp_pstat *s, const cp_path_rec *p, int rank);
/* One rank's message-size classes of a path (its "gpuSizes") added into
 * c[CP_SIZE_CLASSES]; returns whether it had any. */
int cp_size_add_rec(cp_size_sum *c, const cp_path_rec *p);
/* into += from, every class (ranks disjoint or not: all sums). */
void cp_size_combine(cp_size_sum *into, const cp_size_sum *from);
void cp_agg_init(cp_agg *a);
void cp_agg_combine(cp_agg *into, const cp_agg *from);
/* Sets a->overhead_ns from its parts (rundata.h): the in-situ ranks'
 * figures; the other ranks' events at the in-situ ranks' cost per event
 * (their windows timed NCCL's callbacks where they ran, counted calls'
 * included; the start-up figure is a hot loop's, and leaves counted calls
 * out) where there are such ranks, else at the start-up figure; and every
 * rank's set-ups.  A pure function of sums, so any order of combining
 * settles on the same figure. */
void cp_agg_settle_overhead(cp_agg *a);
/* The in-situ ranks' cost per event (recorded and counted), set-ups left
 * out; 0 when there is none. */
double cp_agg_overhead_ns_per_event(const cp_agg *a);
/* The estimated overhead (summed over ranks) over ranks x the longest
 * rank's run time: collprof's share of the run; -1 when no rank ran. */
double cp_agg_overhead_share(const cp_agg *a);

#endif
