! Point-to-point with `use mpi_f08` (the program of fortran_p2p.f90): TYPE(MPI_Status)
! components, MPI_STATUS(ES)_IGNORE, get_count, nonblocking calls on ASYNCHRONOUS
! buffers with request arrays, the 1-based index of MPI_Waitany, sendrecv_replace,
! probe, a string out argument, and calls without ierror.
program f08_p2p
  use mpi_f08
  implicit none
  integer :: ierr, rank, size, i, peer, left, cnt, idx, nfail
  type(MPI_Status) :: status, stats(2)
  type(MPI_Request) :: reqs(2)
  type(MPI_Comm) :: comm
  integer, asynchronous :: ibuf(10), ibuf2(10)
  double precision :: dbuf(5)
  integer(MPI_COUNT_KIND) :: ccount
  character(len=MPI_MAX_OBJECT_NAME) :: name
  integer :: namelen, fstat(MPI_STATUS_SIZE)
  logical :: flag

  nfail = 0
  call MPI_Init(ierr)
  call check(ierr == MPI_SUCCESS, 'init')
  comm = MPI_COMM_WORLD
  call check(comm == MPI_COMM_WORLD .and. comm /= MPI_COMM_NULL, 'handle comparison')
  call MPI_Comm_rank(comm, rank)              ! no ierror
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call check(size >= 2, 'needs at least 2 ranks')
  peer = mod(rank + 1, size)
  left = mod(rank + size - 1, size)

  ! send / recv with a status, in a ring
  do i = 1, 10
     ibuf(i) = rank * 100 + i
  end do
  if (mod(rank, 2) == 0) then
     call MPI_Send(ibuf, 10, MPI_INTEGER, peer, 7, MPI_COMM_WORLD, ierr)
     call MPI_Recv(ibuf2, 10, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status, ierr)
  else
     call MPI_Recv(ibuf2, 10, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status, ierr)
     call MPI_Send(ibuf, 10, MPI_INTEGER, peer, 7, MPI_COMM_WORLD, ierr)
  end if
  call check(ierr == MPI_SUCCESS, 'send/recv ierr')
  call check(status%MPI_SOURCE == left, 'status%MPI_SOURCE')
  call check(status%MPI_TAG == 7, 'status%MPI_TAG')
  call check(status%MPI_ERROR == MPI_SUCCESS .or. .true., 'status%MPI_ERROR')
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  call check(cnt == 10, 'get_count')
  call MPI_Get_count(status, MPI_INTEGER, ccount)    ! the large-count specific
  call check(ccount == 10_MPI_COUNT_KIND, 'get_count with INTEGER(MPI_COUNT_KIND)')
  do i = 1, 10
     call check(ibuf2(i) == left * 100 + i, 'received values')
  end do

  ! status conversions to and from the `use mpi` form
  call MPI_Status_f082f(status, fstat)
  call check(fstat(MPI_STATUS_SIZE) == fstat(MPI_STATUS_SIZE), 'f082f')
  stats(1) = MPI_STATUS_IGNORE
  call MPI_Status_f2f08(fstat, stats(1))
  call check(stats(1)%MPI_SOURCE == left .and. stats(1)%MPI_TAG == 7, 'f2f08 round trip')

  ! a different buffer type to the same procedure, MPI_STATUS_IGNORE
  dbuf = rank + 0.5d0
  call MPI_Sendrecv_replace(dbuf, 5, MPI_DOUBLE_PRECISION, peer, 3, left, 3, &
       MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. dbuf(5) == left + 0.5d0, 'sendrecv_replace')

  ! nonblocking on ASYNCHRONOUS buffers, MPI_STATUSES_IGNORE then real statuses
  call MPI_Irecv(ibuf2, 10, MPI_INTEGER, left, 11, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(ibuf, 10, MPI_INTEGER, peer, 11, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  if (.not. MPI_ASYNC_PROTECTS_NONBLOCKING) call MPI_F_sync_reg(ibuf2)
  call check(ierr == MPI_SUCCESS, 'waitall')
  call check(reqs(1) == MPI_REQUEST_NULL .and. reqs(2) == MPI_REQUEST_NULL, 'requests set to MPI_REQUEST_NULL')
  call check(ibuf2(3) == left * 100 + 3, 'irecv values')

  call MPI_Irecv(ibuf2, 10, MPI_INTEGER, left, 12, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(ibuf, 4_MPI_COUNT_KIND, MPI_INTEGER, peer, 12, MPI_COMM_WORLD, reqs(2))   ! large count
  call MPI_Waitall(2, reqs, stats)
  call check(stats(1)%MPI_TAG == 12 .and. stats(1)%MPI_SOURCE == left, 'waitall statuses')
  call MPI_Get_count(stats(1), MPI_INTEGER, cnt, ierr)
  call check(cnt == 4, 'waitall count')

  ! MPI_Waitany returns a 1-based index
  reqs(1) = MPI_REQUEST_NULL
  call MPI_Irecv(ibuf2, 10, MPI_INTEGER, left, 13, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Send(ibuf, 1, MPI_INTEGER, peer, 13, MPI_COMM_WORLD, ierr)
  call MPI_Waitany(2, reqs, idx, status, ierr)
  call check(idx == 2, 'waitany index is 1-based')
  call MPI_Waitany(2, reqs, idx, status, ierr)
  call check(idx == MPI_UNDEFINED, 'waitany with no active request')

  ! probe / iprobe (LOGICAL out)
  call MPI_Send(ibuf, 2, MPI_INTEGER, peer, 14, MPI_COMM_WORLD, ierr)
  call MPI_Probe(left, 14, MPI_COMM_WORLD, status, ierr)
  call MPI_Iprobe(left, 14, MPI_COMM_WORLD, flag, status, ierr)
  call check(flag, 'iprobe flag')
  call MPI_Recv(ibuf2, 10, MPI_INTEGER, left, 14, MPI_COMM_WORLD, status, ierr)
  call MPI_Iprobe(MPI_ANY_SOURCE, 14, MPI_COMM_WORLD, flag, MPI_STATUS_IGNORE, ierr)
  call check(.not. flag, 'iprobe flag false')

  ! a scalar buffer
  if (mod(rank, 2) == 0) then
     call MPI_Send(rank, 1, MPI_INTEGER, peer, 15, MPI_COMM_WORLD)
     call MPI_Recv(cnt, 1, MPI_INTEGER, left, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  else
     call MPI_Recv(cnt, 1, MPI_INTEGER, left, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
     call MPI_Send(rank, 1, MPI_INTEGER, peer, 15, MPI_COMM_WORLD)
  end if
  call check(cnt == left, 'scalar buffer')

  ! strings: the name of COMM_WORLD, blank-padded
  call MPI_Comm_get_name(MPI_COMM_WORLD, name, namelen, ierr)
  call check(name == 'MPI_COMM_WORLD' .and. namelen == 14, 'comm_get_name')

  call MPI_Finalize()
  if (nfail > 0) stop 1
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
       print *, 'rank', rank, ': check failed: ', what
       nfail = nfail + 1
    end if
  end subroutine check
end program f08_p2p
