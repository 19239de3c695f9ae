/*
 * snapshot.h — a collprof_snapshot (include/collprof.h, taken by the MPI
 * layer at MPI_Finalize) as a cp_rank_data (rundata.h), the same record the
 * offline reader makes from a rank file, so online and offline collation
 * start from the same fields.  Only reads the struct: no link dependency
 * on libcollprof.so.
 */
#ifndef COLLPROF_SNAPSHOT_H
#define COLLPROF_SNAPSHOT_H
#include "collprof.h"
#include "rundata.h"

/* Copies everything (the snapshot may be freed after).  0, -1 no memory. */
int cp_rank_from_snapshot(const collprof_snapshot *s, const char *command, cp_rank_data *out);

#endif
