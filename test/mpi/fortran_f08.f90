! fortran_f08.f90 — the same with the mpi_f08 module: in Open MPI 4.1 its
! MPI_Init_thread/MPI_Finalize reach PMPI directly (mpi_init_thread_f08_,
! mpi_finalize_f08_), the case the wrapper must catch (test/mpi_collate.t).
program fortran_f08
  use mpi_f08
  implicit none
  integer :: provided, rank
  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  if (rank == 0) print '(a,i0)', 'provided ', provided
  call MPI_Finalize()
end program fortran_f08
