/* replay_mpi.h — MPI lifecycle of collprof-replay (replay_mpi.c). */
#ifndef COLLPROF_REPLAY_MPI_H
#define COLLPROF_REPLAY_MPI_H
/* Started by mpirun (OMPI_COMM_WORLD_SIZE or PMIX_RANK set). */
int rp_mpi_launched(void);
/* MPI_Init; rank and size of MPI_COMM_WORLD.  0 on success. */
int rp_mpi_init(int *argc, char ***argv, int *rank, int *size);
/* MPI_Init done and MPI_Finalize not yet. */
int rp_mpi_active(void);
/* MPI_Finalize, unless already done (the fuzz may have called it). */
void rp_mpi_finalize(void);
#endif
