! fortran_hello.f90 — a Fortran MPI program (use mpi: mpi_init_ and
! mpi_finalize_) finalized through libcollprof-mpi.so (test/mpi_collate.t).
program fortran_hello
  use mpi
  implicit none
  integer :: ierr, rank
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program fortran_hello
