! MUST NOT COMPILE: a REAL where the communicator handle goes.
program misc3_badtype
  use mpi
  implicit none
  integer :: ierr, n
  real :: comm
  comm = 0.0
  call MPI_INIT(ierr)
  call MPI_COMM_SIZE(comm, n, ierr)
  call MPI_FINALIZE(ierr)
end program
