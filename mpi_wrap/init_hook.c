/*
 * init_hook.c — what happens right after MPI init (mpi_layer.h): rank 0
 * picks the output folder (the plugin's rule, collprof_output_dir) and
 * broadcasts it, every rank tells the plugin its identity (its trace
 * becomes rank<R>.jsonl there), measures its clock offset to rank 0, and
 * installs the signal handlers.
 */
#include "mpi_layer.h"
#include "collprof.h"
#include <stdio.h>
#include <string.h>

static int g_clock_valid;
static int64_t g_off, g_rtt;

void cp_clock_result(int *valid, int64_t *offset_ns, int64_t *rtt_ns) {
  *valid = g_clock_valid; *offset_ns = g_off; *rtt_ns = g_rtt;
}

void cp_mpi_after_init(void) {
  static int done;
  if (done) return;
  done = 1;
  if (!cp_mpi_usable()) return;
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm comm;
  if (PMPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) return;
  char dir[4096];
  memset(dir, 0, sizeof dir);
  if (rank == 0) snprintf(dir, sizeof dir, "%s", collprof_output_dir());
  PMPI_Bcast(dir, (int)sizeof dir, MPI_CHAR, 0, comm);
  dir[sizeof dir - 1] = 0;
  collprof_set_identity(rank, size, dir);
  cp_clock_sync(comm, &g_off, &g_rtt);
  g_clock_valid = 1;
  collprof_set_clock_offset(g_off, g_rtt);
  PMPI_Comm_free(&comm);
  cp_signals_install();
}
