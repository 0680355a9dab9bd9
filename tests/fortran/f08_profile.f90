! The profiling interface of `use mpi_f08`: the specific procedures are external
! procedures, so a tool defines its own MPI_Send_f08 / MPI_Allreduce_f08 (here in
! the program) that count and call PMPI_Send / PMPI_Allreduce; the program's
! MPI_Send and MPI_Allreduce (generic names) reach them, and the calls still work.
subroutine MPI_Send_f08(buf, count, datatype, dest, tag, comm, ierror)
  use mpi_f08, only: MPI_Datatype, MPI_Comm, PMPI_Send
  implicit none
  type(*), dimension(..), intent(in) :: buf
  integer, intent(in) :: count, dest, tag
  type(MPI_Datatype), intent(in) :: datatype
  type(MPI_Comm), intent(in) :: comm
  integer, optional, intent(out) :: ierror
  integer :: nsend, nreduce
  common /prof_counts/ nsend, nreduce
  nsend = nsend + 1
  call PMPI_Send(buf, count, datatype, dest, tag, comm, ierror)
end subroutine MPI_Send_f08

subroutine MPI_Allreduce_f08(sendbuf, recvbuf, count, datatype, op, comm, ierror)
  use mpi_f08, only: MPI_Datatype, MPI_Comm, MPI_Op, PMPI_Allreduce
  implicit none
  type(*), dimension(..), intent(in) :: sendbuf
  type(*), dimension(..) :: recvbuf
  integer, intent(in) :: count
  type(MPI_Datatype), intent(in) :: datatype
  type(MPI_Op), intent(in) :: op
  type(MPI_Comm), intent(in) :: comm
  integer, optional, intent(out) :: ierror
  integer :: nsend, nreduce
  common /prof_counts/ nsend, nreduce
  nreduce = nreduce + 1
  call PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm, ierror)
end subroutine MPI_Allreduce_f08

program f08_profile
  use mpi_f08
  implicit none
  integer :: rank, size, v, total, ierr
  integer :: nsend, nreduce
  common /prof_counts/ nsend, nreduce
  nsend = 0
  nreduce = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  if (rank == 0) then
     call MPI_Send(42, 1, MPI_INTEGER, size - 1, 5, MPI_COMM_WORLD, ierr)
     if (ierr /= MPI_SUCCESS) stop 'send'
  end if
  if (rank == size - 1) then
     call MPI_Recv(v, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
     if (v /= 42) stop 'value through the profiled send'
  end if
  call MPI_Allreduce(1, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (total /= size) stop 'profiled allreduce'
  if (nreduce /= 1) stop 'MPI_Allreduce_f08 of the program not called'
  if (rank == 0 .and. nsend /= 1) stop 'MPI_Send_f08 of the program not called'
  call MPI_Finalize()
end program f08_profile
