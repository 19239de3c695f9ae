/*
 * init_thread.c — MPI program for test/mpi_collate.t: MPI_Init_thread with
 * the level given as argv[1] (0..3); prints "provided P query Q" (Q from
 * MPI_Query_thread) so the test can check that the wrapper passes the
 * request on and returns what MPI set.  Never loads NCCL: under
 * libcollprof-mpi.so it is also "a rank without NCCL".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int want = argc > 1 ? atoi(argv[1]) : 3, levels[4] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED,
                                                        MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE};
  int provided = -1, q = -1, rank = 0;
  if (MPI_Init_thread(&argc, &argv, levels[want & 3], &provided) != MPI_SUCCESS) return 1;
  MPI_Query_thread(&q);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) printf("provided %d query %d\n", provided, q);
  MPI_Finalize();
  return 0;
}
