/*
 * replay_mpi.c — the only MPI in collprof-replay.  Launched by mpirun (or
 * with --mpi) the tool behaves like an MPI application: MPI_Init first,
 * MPI_Finalize last, so libcollprof-mpi.so (LD_PRELOADed by the launcher)
 * sees the same lifecycle as in a real job and collates at MPI_Finalize.
 * Rank r replays capture file r mod nfiles.
 */
#include <mpi.h>
#include <stdlib.h>
#include "replay_mpi.h"

int rp_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK");
}

int rp_mpi_init(int *argc, char ***argv, int *rank, int *size) {
  /* Only the main thread calls MPI (replay threads never do): plain MPI_Init. */
  if (MPI_Init(argc, argv) != MPI_SUCCESS) return -1;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return 0;
}

int rp_mpi_active(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

void rp_mpi_finalize(void) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}
