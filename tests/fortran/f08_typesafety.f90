! Must NOT compile: with `use mpi_f08` a communicator where a datatype is expected
! is a type error (tests/scripts/fortran_f08_typesafety.sh).
program f08_typesafety
  use mpi_f08
  implicit none
  integer :: buf(4)
  call MPI_Init()
  call MPI_Send(buf, 4, MPI_COMM_WORLD, 0, 0, MPI_COMM_WORLD)
  call MPI_Finalize()
end program f08_typesafety
