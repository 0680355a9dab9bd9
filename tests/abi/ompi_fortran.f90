! ompi_fortran: a `use mpi` program built with Open MPI's mpif90 (mpif90.openmpi) that runs on
! Kumi through libmpi_mpifh.so.40 (components/abi/ompi-fortran) over the C shim libmpi.so.40.
! Checks each kind of translation of the Fortran library: predefined and user handles,
! statuses (MPI_STATUS_SIZE integers, MPI_SOURCE/MPI_TAG/MPI_ERROR, MPI_ANY_SOURCE,
! MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE), LOGICALs, strings in and out, 1-based indices of
! Waitany / Waitsome, MPI_IN_PLACE, MPI_BOTTOM with absolute addresses, arrays of handles
! (Waitall, Type_create_struct), error codes and classes with MPI_ERRORS_RETURN.
program ompi_fortran
  use mpi
  implicit none
  integer :: ierr, rank, nproc, i, n, cnt, src, idx, newc, dupc, res, nbad, sub, subr, subn
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 4), reqs(4), idxs(4)
  integer :: buf(8), rbuf(8), vtype, stype, cls, blens(2), types(2), ll
  integer(kind=MPI_ADDRESS_KIND) :: disps(2), a1
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: ver
  character(len=MPI_MAX_OBJECT_NAME) :: cname
  character(len=MPI_MAX_ERROR_STRING) :: estr
  logical :: flag
  integer :: eh, ehcomm, ehcode, info
  common /ehrec/ ehcomm, ehcode
  external myeh
  integer :: gfreed
  common /grec/ gfreed
  external gquery, gfree, gcancel
  double precision :: t0
  nbad = 0
  call MPI_Initialized(flag, ierr)
  call chk(.not. flag, 'Initialized before Init')
  call MPI_Init(ierr)
  call chk(ierr == MPI_SUCCESS, 'Init')
  call MPI_Initialized(flag, ierr)
  call chk(flag, 'Initialized after Init')
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  call MPI_Get_library_version(ver, ll, ierr)
  call chk(index(ver, 'Kumi') > 0, 'library is not Kumi: '//trim(ver))
  call chk(ll >= len_trim(ver) .and. ll > 0, 'library version length')
  t0 = MPI_Wtime()
  call chk(t0 >= 0.0d0 .and. MPI_Wtick() > 0.0d0 .and. MPI_Wtime() >= t0, 'Wtime / Wtick')
  call MPI_Comm_get_name(MPI_COMM_WORLD, cname, ll, ierr)
  call chk(cname == 'MPI_COMM_WORLD' .and. ll == 14, 'name of MPI_COMM_WORLD: '//trim(cname))
  call MPI_Comm_set_name(MPI_COMM_WORLD, 'world   ', ierr)
  call MPI_Comm_get_name(MPI_COMM_WORLD, cname, ll, ierr)
  call chk(cname == 'world' .and. ll == 5, 'set name (trailing blanks dropped)')

  ! point to point: every rank > 0 sends to 0, which receives from MPI_ANY_SOURCE
  if (rank == 0) then
    do i = 1, nproc - 1
      call MPI_Recv(rbuf, 8, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
      src = st(MPI_SOURCE)
      call chk(ierr == MPI_SUCCESS .and. src >= 1 .and. src < nproc, 'Recv source')
      call chk(st(MPI_TAG) == 100 + src, 'Recv tag')
      call chk(rbuf(1) == src .and. rbuf(src + 1) == 7, 'Recv data')
      call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
      call chk(cnt == src + 1, 'Get_count')
    end do
  else
    buf = 7
    buf(1) = rank
    call MPI_Send(buf, rank + 1, MPI_INTEGER, 0, 100 + rank, MPI_COMM_WORLD, ierr)
    call chk(ierr == MPI_SUCCESS, 'Send')
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)   ! no message of the ring below may meet MPI_ANY_TAG
  ! MPI_PROC_NULL and MPI_STATUS_IGNORE
  call MPI_Recv(rbuf, 1, MPI_INTEGER, MPI_PROC_NULL, 0, MPI_COMM_WORLD, st, ierr)
  call chk(st(MPI_SOURCE) == MPI_PROC_NULL .and. st(MPI_TAG) == MPI_ANY_TAG, 'status from MPI_PROC_NULL')
  call MPI_Recv(rbuf, 1, MPI_INTEGER, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call chk(ierr == MPI_SUCCESS, 'Recv with MPI_STATUS_IGNORE')

  ! nonblocking: a ring with Waitall (statuses), then Waitany / Waitsome (1-based indices)
  buf(1) = rank
  call MPI_Irecv(rbuf, 1, MPI_INTEGER, mod(rank + nproc - 1, nproc), 5, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(buf, 1, MPI_INTEGER, mod(rank + 1, nproc), 5, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, sts, ierr)
  call chk(ierr == MPI_SUCCESS .and. rbuf(1) == mod(rank + nproc - 1, nproc), 'ring data')
  call chk(sts(MPI_SOURCE, 1) == mod(rank + nproc - 1, nproc) .and. sts(MPI_TAG, 1) == 5, 'Waitall status')
  call chk(reqs(1) == MPI_REQUEST_NULL .and. reqs(2) == MPI_REQUEST_NULL, 'Waitall frees requests')
  reqs(1) = MPI_REQUEST_NULL
  call MPI_Irecv(rbuf, 1, MPI_INTEGER, rank, 6, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Send(buf, 1, MPI_INTEGER, rank, 6, MPI_COMM_WORLD, ierr)
  call MPI_Waitany(2, reqs, idx, st, ierr)
  call chk(idx == 2 .and. st(MPI_TAG) == 6, 'Waitany index is 1-based')
  call MPI_Waitany(2, reqs, idx, st, ierr)
  call chk(idx == MPI_UNDEFINED, 'Waitany of null requests')
  call MPI_Irecv(rbuf, 1, MPI_INTEGER, rank, 8, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Send(buf, 1, MPI_INTEGER, rank, 8, MPI_COMM_WORLD, ierr)
  call MPI_Waitsome(3, reqs, n, idxs, MPI_STATUSES_IGNORE, ierr)
  call chk(n == 1 .and. idxs(1) == 3, 'Waitsome index is 1-based')
  call MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, flag, st, ierr)
  call chk(.not. flag, 'Iprobe with nothing pending')

  ! collectives: MPI_IN_PLACE, Bcast, Reduce
  buf(1) = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, buf, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call chk(ierr == MPI_SUCCESS .and. buf(1) == nproc * (nproc + 1) / 2, 'Allreduce MPI_IN_PLACE')
  buf(1) = rank
  call MPI_Allreduce(buf, rbuf, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call chk(rbuf(1) == nproc - 1, 'Allreduce MPI_MAX')
  if (rank == 0) buf(1:3) = (/ 4, 5, 6 /)
  call MPI_Bcast(buf, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call chk(buf(2) == 5, 'Bcast')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  ! communicators: split, dup, compare, free
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, sub, ierr)
  call MPI_Comm_rank(sub, subr, ierr)
  call MPI_Comm_size(sub, subn, ierr)
  call chk(subn == (nproc + 1 - mod(rank, 2)) / 2, 'Comm_split size')
  call chk(subr == subn - 1 - rank / 2, 'Comm_split order by key')
  call MPI_Comm_dup(MPI_COMM_WORLD, dupc, ierr)
  call MPI_Comm_compare(MPI_COMM_WORLD, dupc, res, ierr)
  call chk(res == MPI_CONGRUENT, 'Comm_compare of a dup')
  call MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, res, ierr)
  call chk(res == MPI_IDENT, 'Comm_compare ident')
  call MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, newc, ierr)
  call chk(newc == MPI_COMM_NULL, 'Comm_split MPI_UNDEFINED gives MPI_COMM_NULL')
  call MPI_Comm_free(dupc, ierr)
  call chk(dupc == MPI_COMM_NULL, 'Comm_free sets MPI_COMM_NULL')
  call MPI_Comm_free(sub, ierr)

  ! derived types: a vector, and a struct of absolute addresses used with MPI_BOTTOM
  call MPI_Type_vector(2, 1, 2, MPI_INTEGER, vtype, ierr)
  call MPI_Type_commit(vtype, ierr)
  buf = (/ 1, 2, 3, 4, 5, 6, 7, 8 /)
  rbuf = 0
  call MPI_Sendrecv(buf, 1, vtype, rank, 1, rbuf, 2, MPI_INTEGER, rank, 1, MPI_COMM_WORLD, st, ierr)
  call chk(rbuf(1) == 1 .and. rbuf(2) == 3, 'vector type')
  call MPI_Get_address(buf(2), disps(1), ierr)
  call MPI_Get_address(buf(5), disps(2), ierr)
  blens = (/ 1, 2 /)
  types = (/ MPI_INTEGER, MPI_INTEGER /)
  call MPI_Type_create_struct(2, blens, disps, types, stype, ierr)
  call MPI_Type_commit(stype, ierr)
  rbuf = 0
  call MPI_Sendrecv(MPI_BOTTOM, 1, stype, rank, 2, rbuf, 3, MPI_INTEGER, rank, 2, MPI_COMM_WORLD, st, ierr)
  call chk(ierr == MPI_SUCCESS .and. rbuf(1) == 2 .and. rbuf(2) == 5 .and. rbuf(3) == 6, 'struct with MPI_BOTTOM')
  call chk(MPI_Aint_diff(disps(2), disps(1)) == 12 .and. MPI_Aint_add(disps(1), 12_MPI_ADDRESS_KIND) == disps(2), &
           'MPI_Aint_add / MPI_Aint_diff')
  call MPI_Type_size(stype, n, ierr)
  call chk(n == 12, 'Type_size')
  call MPI_Type_get_extent(vtype, a1, disps(1), ierr)
  call chk(a1 == 0 .and. disps(1) == 12, 'Type_get_extent')
  call MPI_Type_free(vtype, ierr)
  call chk(vtype == MPI_DATATYPE_NULL, 'Type_free sets MPI_DATATYPE_NULL')
  call MPI_Type_free(stype, ierr)

  ! info: strings in (blanks around them dropped) and out (blank padded), LOGICAL flags
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, ' kumikey ', 'a value  ', ierr)
  call chk(ierr == MPI_SUCCESS, 'Info_set')
  cname = 'untouched'
  call MPI_Info_get(info, 'kumikey', 20, cname, flag, ierr)
  call chk(flag .and. cname == 'a value', 'Info_get: '//trim(cname))
  cname = 'untouched'
  call MPI_Info_get(info, 'nokey', 20, cname, flag, ierr)
  call chk(.not. flag .and. cname == 'untouched', 'Info_get of a missing key')
  call MPI_Info_get_nkeys(info, n, ierr)
  call chk(n == 1, 'Info_get_nkeys')
  call MPI_Info_get_nthkey(info, 0, cname, ierr)
  call chk(cname == 'kumikey', 'Info_get_nthkey')
  call MPI_Info_free(info, ierr)
  call chk(info == MPI_INFO_NULL, 'Info_free sets MPI_INFO_NULL')

  ! MPI_Neighbor_alltoallw on a periodic ring: the type arrays have the topology's degrees
  call MPI_Cart_create(MPI_COMM_WORLD, 1, (/ nproc /), (/ .true. /), .false., newc, ierr)
  call chk(ierr == MPI_SUCCESS, 'Cart_create')
  buf(1:2) = (/ 10 * rank, 10 * rank + 1 /)
  rbuf(1:2) = -1
  call MPI_Neighbor_alltoallw(buf, (/ 1, 1 /), (/ 0_MPI_ADDRESS_KIND, 4_MPI_ADDRESS_KIND /), (/ MPI_INTEGER, MPI_INTEGER /), &
       rbuf, (/ 1, 1 /), (/ 0_MPI_ADDRESS_KIND, 4_MPI_ADDRESS_KIND /), (/ MPI_INTEGER, MPI_INTEGER /), newc, ierr)
  call chk(ierr == MPI_SUCCESS, 'Neighbor_alltoallw')
  ! from the left neighbour its second block (sent to its right), from the right one its first
  call chk(rbuf(1) == 10 * mod(rank + nproc - 1, nproc) + 1 .and. rbuf(2) == 10 * mod(rank + 1, nproc), &
           'Neighbor_alltoallw data')
  call MPI_Comm_free(newc, ierr)
  call MPI_F_sync_reg(buf)

  ! a generalized request with Fortran query / free / cancel procedures
  gfreed = 0
  call MPI_Grequest_start(gquery, gfree, gcancel, 41_MPI_ADDRESS_KIND, reqs(1), ierr)
  call chk(ierr == MPI_SUCCESS, 'Grequest_start')
  call MPI_Grequest_complete(reqs(1), ierr)
  call MPI_Wait(reqs(1), st, ierr)
  call chk(ierr == MPI_SUCCESS .and. st(MPI_TAG) == 42 .and. st(MPI_SOURCE) == 3, 'Grequest status from the query procedure')
  call chk(gfreed == 41 .and. reqs(1) == MPI_REQUEST_NULL, 'Grequest free procedure with the extra state')

  ! errors: MPI_ERRORS_RETURN, ierror and its class
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_Send(buf, 1, MPI_INTEGER, nproc, 0, MPI_COMM_WORLD, ierr)
  call chk(ierr /= MPI_SUCCESS, 'Send to rank nproc succeeded')
  call MPI_Error_class(ierr, cls, ierr)
  call chk(cls == MPI_ERR_RANK, 'class of a bad rank')
  call MPI_Error_string(MPI_ERR_RANK, estr, ll, ierr)
  call chk(ll > 0 .and. ll == len_trim(estr), 'Error_string')
  call MPI_Send(buf, -1, MPI_INTEGER, 0, 0, MPI_COMM_WORLD, ierr)
  call MPI_Error_class(ierr, cls, ierr)
  call chk(cls == MPI_ERR_COUNT, 'class of a bad count')
  call MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD, ierr)
  call MPI_Error_class(ierr, cls, ierr)
  call chk(cls == MPI_ERR_TYPE, 'class of MPI_DATATYPE_NULL')
  call MPI_Comm_size(12345, n, ierr)
  call chk(ierr /= MPI_SUCCESS, 'a bad communicator was accepted')
  ! the program's own error handler (a Fortran subroutine), called with its communicator
  call MPI_Comm_dup(MPI_COMM_WORLD, dupc, ierr)
  call MPI_Comm_create_errhandler(myeh, eh, ierr)
  call chk(ierr == MPI_SUCCESS, 'Comm_create_errhandler')
  call MPI_Comm_set_errhandler(dupc, eh, ierr)
  ehcomm = -1
  ehcode = -1
  call MPI_Send(buf, 1, MPI_INTEGER, nproc, 0, dupc, ierr)
  call chk(ehcomm == dupc, 'error handler called with the communicator')
  call MPI_Error_class(ehcode, cls, ierr)
  call chk(cls == MPI_ERR_RANK, 'error handler called with the code')
  call MPI_Errhandler_free(eh, ierr)
  call MPI_Comm_free(dupc, ierr)

  call MPI_Allreduce(nbad, n, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. n == 0) print '(A,I0,A)', 'ompi_fortran: ', nproc, ' ranks ok'
  call MPI_Finalize(ierr)
  if (n /= 0) stop 1
contains
  subroutine chk(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(A,I0,2A)', 'ompi_fortran: rank ', rank, ': FAILED: ', what
      nbad = nbad + 1
    end if
  end subroutine
end program

subroutine myeh(comm, code)
  implicit none
  integer :: comm, code, ehcomm, ehcode
  common /ehrec/ ehcomm, ehcode
  ehcomm = comm
  ehcode = code
end subroutine

subroutine gquery(extra, status, ierr)
  use mpi
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra
  integer :: status(MPI_STATUS_SIZE), ierr
  status(MPI_SOURCE) = 3
  status(MPI_TAG) = int(extra) + 1
  call MPI_Status_set_elements(status, MPI_INTEGER, 0, ierr)
  call MPI_Status_set_cancelled(status, .false., ierr)
  ierr = MPI_SUCCESS
end subroutine

subroutine gfree(extra, ierr)
  use mpi
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra
  integer :: ierr, gfreed
  common /grec/ gfreed
  gfreed = int(extra)
  ierr = MPI_SUCCESS
end subroutine

subroutine gcancel(extra, complete, ierr)
  use mpi
  implicit none
  integer(kind=MPI_ADDRESS_KIND) :: extra
  logical :: complete
  integer :: ierr
  ierr = MPI_SUCCESS
end subroutine
