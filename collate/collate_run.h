/*
 * collate_run.h — offline collation of a whole run read from its files
 * (rankfile_read.h): every rank's set packed and all merged at once into
 * the summary (pset.h, reduce.h), each rank's path records given their
 * global ids.  The MPI layer does the same steps over a tree
 * (mpi_wrap/tree_collate.c); both end in the same merge into the summary,
 * so their summaries agree.
 */
#ifndef COLLPROF_COLLATE_RUN_H
#define COLLPROF_COLLATE_RUN_H
#include "rundata.h"

/* Returns 0, -1 on no memory.  Sets run->ranks[*].paths[*].id. */
int cp_collate_run(cp_run *run, int hash_bits, cp_summary *out);

/* Global id of (hash truncated to s->hash_bits, path) in s; -1 if absent. */
int64_t cp_summary_find(const cp_summary *s, uint64_t hash, const char *path);

#endif
