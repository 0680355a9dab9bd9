! Point-to-point from Fortran with `use mpi`: statuses (fields, MPI_STATUS_IGNORE,
! MPI_STATUSES_IGNORE, get_count), nonblocking calls with request arrays, the
! 1-based index of MPI_WAITANY, sendrecv, probe, and a string out argument.
program fortran_p2p
  use mpi
  implicit none
  integer :: ierr, rank, size, i, peer, cnt, idx, nfail
  integer :: status(MPI_STATUS_SIZE), stats(MPI_STATUS_SIZE, 2), reqs(2)
  integer :: ibuf(10), ibuf2(10)
  double precision :: dbuf(5)
  character(len=MPI_MAX_OBJECT_NAME) :: name
  integer :: namelen
  logical :: flag

  nfail = 0
  call MPI_INIT(ierr)
  call check(ierr == MPI_SUCCESS, 'init')
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  call check(size >= 2, 'needs at least 2 ranks')

  ! send / recv with a status, in a ring
  peer = mod(rank + 1, size)
  do i = 1, 10
     ibuf(i) = rank * 100 + i
  end do
  if (mod(rank, 2) == 0) then
     call MPI_SEND(ibuf, 10, MPI_INTEGER, peer, 7, MPI_COMM_WORLD, ierr)
     call MPI_RECV(ibuf2, 10, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status, ierr)
  else
     call MPI_RECV(ibuf2, 10, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status, ierr)
     call MPI_SEND(ibuf, 10, MPI_INTEGER, peer, 7, MPI_COMM_WORLD, ierr)
  end if
  call check(ierr == MPI_SUCCESS, 'send/recv ierr')
  call check(status(MPI_SOURCE) == mod(rank + size - 1, size), 'status(MPI_SOURCE)')
  call check(status(MPI_TAG) == 7, 'status(MPI_TAG)')
  call MPI_GET_COUNT(status, MPI_INTEGER, cnt, ierr)
  call check(cnt == 10, 'get_count')
  do i = 1, 10
     call check(ibuf2(i) == mod(rank + size - 1, size) * 100 + i, 'received values')
  end do

  ! a different buffer type to the same procedure, MPI_STATUS_IGNORE
  dbuf = rank + 0.5d0
  call MPI_SENDRECV_REPLACE(dbuf, 5, MPI_DOUBLE_PRECISION, peer, 3, mod(rank + size - 1, size), 3, &
       MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. dbuf(5) == mod(rank + size - 1, size) + 0.5d0, 'sendrecv_replace')

  ! nonblocking with request arrays, MPI_STATUSES_IGNORE then real statuses
  call MPI_IRECV(ibuf2, 10, MPI_INTEGER, mod(rank + size - 1, size), 11, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_ISEND(ibuf, 10, MPI_INTEGER, peer, 11, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS, 'waitall')
  call check(reqs(1) == MPI_REQUEST_NULL .and. reqs(2) == MPI_REQUEST_NULL, 'requests set to MPI_REQUEST_NULL')
  call check(ibuf2(3) == mod(rank + size - 1, size) * 100 + 3, 'irecv values')

  call MPI_IRECV(ibuf2, 10, MPI_INTEGER, mod(rank + size - 1, size), 12, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_ISEND(ibuf, 4, MPI_INTEGER, peer, 12, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_WAITALL(2, reqs, stats, ierr)
  call check(stats(MPI_TAG, 1) == 12 .and. stats(MPI_SOURCE, 1) == mod(rank + size - 1, size), 'waitall statuses')
  call MPI_GET_COUNT(stats(1, 1), MPI_INTEGER, cnt, ierr)
  call check(cnt == 4, 'waitall count')

  ! MPI_WAITANY returns a 1-based index
  reqs(1) = MPI_REQUEST_NULL
  call MPI_IRECV(ibuf2, 10, MPI_INTEGER, mod(rank + size - 1, size), 13, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_SEND(ibuf, 1, MPI_INTEGER, peer, 13, MPI_COMM_WORLD, ierr)
  call MPI_WAITANY(2, reqs, idx, status, ierr)
  call check(idx == 2, 'waitany index is 1-based')
  call MPI_WAITANY(2, reqs, idx, status, ierr)
  call check(idx == MPI_UNDEFINED, 'waitany with no active request')

  ! probe / iprobe (LOGICAL out)
  call MPI_SEND(ibuf, 2, MPI_INTEGER, peer, 14, MPI_COMM_WORLD, ierr)
  call MPI_PROBE(mod(rank + size - 1, size), 14, MPI_COMM_WORLD, status, ierr)
  call MPI_IPROBE(mod(rank + size - 1, size), 14, MPI_COMM_WORLD, flag, status, ierr)
  call check(flag, 'iprobe flag')
  call MPI_RECV(ibuf2, 10, MPI_INTEGER, mod(rank + size - 1, size), 14, MPI_COMM_WORLD, status, ierr)
  call MPI_IPROBE(MPI_ANY_SOURCE, 14, MPI_COMM_WORLD, flag, MPI_STATUS_IGNORE, ierr)
  call check(.not. flag, 'iprobe flag false')

  ! strings: the name of COMM_WORLD, blank-padded
  call MPI_COMM_GET_NAME(MPI_COMM_WORLD, name, namelen, ierr)
  call check(name == 'MPI_COMM_WORLD' .and. namelen == 14, 'comm_get_name')

  call MPI_FINALIZE(ierr)
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
end program fortran_p2p
