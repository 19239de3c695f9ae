/*
 * mpi_layer.h — the pieces of libcollprof-mpi.so and how they connect:
 *   wrappers.c     MPI_Init/_thread/Finalize and Fortran entry points; the
 *                  constructor that points NCCL_PROFILER_PLUGIN at
 *                  libcollprof.so; calls the two hooks below once each
 *   init_hook.c    after MPI init: output folder from rank 0, identity,
 *                  clock offset, signal handlers
 *   clock_sync.c   clock offset of each rank to rank 0 (ping-pong, tree)
 *   signals.c      SIGTERM/SIGINT: flush what is measured, then chain
 *   finalize_hook.c before PMPI_Finalize: write local data, collate
 *                  (tree_collate.c), write global ids and the summaries
 * Internal symbols are hidden; only the MPI/Fortran entry points are
 * exported.
 */
#ifndef COLLPROF_MPI_LAYER_H
#define COLLPROF_MPI_LAYER_H
#include <mpi.h>
#include <stdint.h>

#define CP_HIDDEN __attribute__((visibility("hidden")))

/* 1 when MPI is initialized and not finalized (our calls are allowed). */
CP_HIDDEN int cp_mpi_usable(void);

/* After the application's MPI init succeeded (idempotent). */
CP_HIDDEN void cp_mpi_after_init(void);
/* Before PMPI_Finalize (idempotent). */
CP_HIDDEN void cp_mpi_before_finalize(void);

/* Offset to add to this rank's collprof_now_ns() to get rank 0's, and the
 * round trip of the best exchange.  Collective over comm. */
CP_HIDDEN void cp_clock_sync(MPI_Comm comm, int64_t *offset_ns, int64_t *rtt_ns);
/* What cp_mpi_after_init measured (0/0 before). */
CP_HIDDEN void cp_clock_result(int *valid, int64_t *offset_ns, int64_t *rtt_ns);

/* Install the SIGTERM/SIGINT handlers (once). */
CP_HIDDEN void cp_signals_install(void);

#endif
