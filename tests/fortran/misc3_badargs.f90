! MUST NOT COMPILE: `use mpi` has explicit interfaces, so a missing IERROR
! (and a REAL where a communicator handle goes) is a compile-time error.
program misc3_badargs
  use mpi
  implicit none
  integer :: ierr, n
  call MPI_INIT(ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, n)
  call MPI_FINALIZE(ierr)
end program
