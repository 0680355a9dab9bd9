! Fortran completeness: the deprecated MPI_KEYVAL_CREATE / MPI_ATTR_PUT /
! MPI_ATTR_GET / MPI_ATTR_DELETE / MPI_KEYVAL_FREE with INTEGER values and
! callbacks, MPI_NEIGHBOR_ALLTOALLW on a periodic ring, MPI_PCONTROL,
! MPI_INTERCOMM_CREATE_FROM_GROUPS and MPI_TYPE_SET_NAME, all through `use mpi`.
module misc3_cb
  implicit none
  integer :: ncopy = 0, ndel = 0, lastdel = -1
contains
  subroutine my_copy(oldcomm, keyval, extra, valin, valout, flag, ierr)
    integer :: oldcomm, keyval, extra, valin, valout, ierr
    logical :: flag
    ncopy = ncopy + 1
    valout = valin + extra
    flag = .true.
    ierr = 0
  end subroutine
  subroutine my_delete(comm, keyval, val, extra, ierr)
    integer :: comm, keyval, val, extra, ierr
    ndel = ndel + 1
    lastdel = val
    ierr = 0
  end subroutine
end module

program misc3_deprecated
  use mpi
  use misc3_cb
  implicit none
  integer :: ierr, rank, nprocs, key, key2, val, dup, ring, i, n
  integer :: sendtypes(2), recvtypes(2), scounts(2), rcounts(2), sbuf(2), rbuf(2)
  integer(kind=MPI_ADDRESS_KIND) :: sdispls(2), rdispls(2), aval
  integer :: wg, eg, og, ic, lsize, rsize, vt
  integer, allocatable :: ev(:), od(:)
  character(len=MPI_MAX_OBJECT_NAME) :: tname
  logical :: flag

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)

  ! deprecated keyvals: INTEGER extra state and values
  call MPI_KEYVAL_CREATE(my_copy, my_delete, key, 5, ierr)
  if (ierr /= MPI_SUCCESS) stop 'keyval_create'
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call MPI_ATTR_PUT(dup, key, 100 + rank, ierr)
  call MPI_ATTR_GET(dup, key, val, flag, ierr)
  if (.not. flag .or. val /= 100 + rank) stop 'attr_get'
  ! the same value through the MPI-2 call (address-sized)
  call MPI_COMM_GET_ATTR(dup, key, aval, flag, ierr)
  if (.not. flag .or. aval /= 100 + rank) stop 'comm_get_attr of an attr_put value'
  ! negative values survive (sign extension)
  call MPI_ATTR_PUT(dup, key, -7, ierr)
  call MPI_COMM_GET_ATTR(dup, key, aval, flag, ierr)
  if (aval /= -7) stop 'negative attribute'
  if (ndel /= 1 .or. lastdel /= 100 + rank) stop 'delete callback on replace'
  ! copy callback on dup: value + extra state
  call MPI_COMM_DUP(dup, ring, ierr)
  if (ncopy /= 1) stop 'copy callback'
  call MPI_ATTR_GET(ring, key, val, flag, ierr)
  if (.not. flag .or. val /= -2) stop 'copied value'
  call MPI_COMM_FREE(ring, ierr)
  if (ndel /= 2 .or. lastdel /= -2) stop 'delete callback on free'
  call MPI_ATTR_DELETE(dup, key, ierr)
  if (ndel /= 3 .or. lastdel /= -7) stop 'delete callback on attr_delete'
  call MPI_ATTR_GET(dup, key, val, flag, ierr)
  if (flag) stop 'deleted attribute still there'
  ! predefined attribute through MPI_ATTR_GET
  call MPI_ATTR_GET(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  if (.not. flag .or. val < 32767) stop 'MPI_TAG_UB'
  ! the predefined deprecated callbacks
  call MPI_KEYVAL_CREATE(MPI_DUP_FN, MPI_NULL_DELETE_FN, key2, 0, ierr)
  call MPI_ATTR_PUT(dup, key2, 42, ierr)
  call MPI_COMM_DUP(dup, ring, ierr)
  call MPI_ATTR_GET(ring, key2, val, flag, ierr)
  if (.not. flag .or. val /= 42) stop 'MPI_DUP_FN'
  call MPI_COMM_FREE(ring, ierr)
  call MPI_KEYVAL_FREE(key2, ierr)
  if (key2 /= MPI_KEYVAL_INVALID) stop 'keyval_free'
  call MPI_KEYVAL_FREE(key, ierr)
  call MPI_COMM_FREE(dup, ierr)

  ! MPI_NEIGHBOR_ALLTOALLW on a periodic 1-D ring
  call MPI_CART_CREATE(MPI_COMM_WORLD, 1, (/ nprocs /), (/ .true. /), .false., ring, ierr)
  call MPI_COMM_RANK(ring, rank, ierr)
  sbuf = (/ 10 * rank + 1, 10 * rank + 2 /)
  rbuf = -1
  scounts = 1
  rcounts = 1
  sendtypes = MPI_INTEGER
  recvtypes = MPI_INTEGER
  n = storage_size(sbuf(1)) / 8
  sdispls = (/ 0_MPI_ADDRESS_KIND, int(n, MPI_ADDRESS_KIND) /)
  rdispls = sdispls
  call MPI_NEIGHBOR_ALLTOALLW(sbuf, scounts, sdispls, sendtypes, rbuf, rcounts, rdispls, recvtypes, ring, ierr)
  if (ierr /= MPI_SUCCESS) stop 'neighbor_alltoallw'
  ! neighbor 0 is rank-1 (it sent us its "+" element, index 2), neighbor 1 is rank+1 (its "-" element)
  if (rbuf(1) /= 10 * modulo(rank - 1, nprocs) + 2 .or. rbuf(2) /= 10 * modulo(rank + 1, nprocs) + 1) then
    print *, 'rank', rank, 'got', rbuf
    stop 'neighbor_alltoallw values'
  end if
  call MPI_COMM_FREE(ring, ierr)

  call MPI_PCONTROL(1)
  call MPI_PCONTROL(0)

  ! names
  call MPI_TYPE_CONTIGUOUS(2, MPI_INTEGER, vt, ierr)
  call MPI_TYPE_SET_NAME(vt, 'pair of integers', ierr)
  call MPI_TYPE_GET_NAME(vt, tname, n, ierr)
  if (tname /= 'pair of integers' .or. n /= 16) stop 'type name'
  call MPI_TYPE_FREE(vt, ierr)

  ! MPI_INTERCOMM_CREATE_FROM_GROUPS: even against odd world ranks
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  if (nprocs >= 2) then
    call MPI_COMM_GROUP(MPI_COMM_WORLD, wg, ierr)
    allocate(ev((nprocs + 1) / 2), od(nprocs / 2))
    ev = (/ (2 * i, i = 0, (nprocs + 1) / 2 - 1) /)
    od = (/ (2 * i + 1, i = 0, nprocs / 2 - 1) /)
    call MPI_GROUP_INCL(wg, size(ev), ev, eg, ierr)
    call MPI_GROUP_INCL(wg, size(od), od, og, ierr)
    if (mod(rank, 2) == 0) then
      call MPI_INTERCOMM_CREATE_FROM_GROUPS(eg, 0, og, 0, 'misc3.f', MPI_INFO_NULL, MPI_ERRORS_RETURN, ic, ierr)
    else
      call MPI_INTERCOMM_CREATE_FROM_GROUPS(og, 0, eg, 0, 'misc3.f', MPI_INFO_NULL, MPI_ERRORS_RETURN, ic, ierr)
    end if
    if (ierr /= MPI_SUCCESS) stop 'intercomm_create_from_groups'
    call MPI_COMM_SIZE(ic, lsize, ierr)
    call MPI_COMM_REMOTE_SIZE(ic, rsize, ierr)
    if (mod(rank, 2) == 0 .and. (lsize /= size(ev) .or. rsize /= size(od))) stop 'intercomm sizes'
    if (mod(rank, 2) == 1 .and. (lsize /= size(od) .or. rsize /= size(ev))) stop 'intercomm sizes'
    call MPI_COMM_FREE(ic, ierr)
    call MPI_GROUP_FREE(eg, ierr)
    call MPI_GROUP_FREE(og, ierr)
    call MPI_GROUP_FREE(wg, ierr)
  end if

  call MPI_FINALIZE(ierr)
  if (rank == 0) print *, 'misc3_deprecated: ok'
end program
