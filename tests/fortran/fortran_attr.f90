! Attributes from Fortran: a predefined attribute (MPI_TAG_UB) as an integer,
! a keyval with Fortran copy and delete procedures (called at dup and free with
! the extra state), and the predefined MPI_COMM_DUP_FN / MPI_COMM_NULL_DELETE_FN.
module attr_state
  integer :: copies = 0, deletes = 0
end module attr_state

subroutine my_copy(oldcomm, keyval, extra, valin, valout, flag, ierr)
  use mpi
  use attr_state
  implicit none
  integer :: oldcomm, keyval, ierr
  integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
  logical :: flag
  copies = copies + 1
  valout = valin + extra
  flag = .true.
  ierr = MPI_SUCCESS
end subroutine my_copy

subroutine my_delete(comm, keyval, val, extra, ierr)
  use mpi
  use attr_state
  implicit none
  integer :: comm, keyval, ierr
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  deletes = deletes + 1
  if (val < 42) deletes = deletes + 1000
  ierr = MPI_SUCCESS
end subroutine my_delete

program fortran_attr
  use mpi
  use attr_state
  implicit none
  external my_copy, my_delete
  integer :: ierr, key1, key2, dup, nfail
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  logical :: flag

  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  if (ierr /= MPI_SUCCESS .or. .not. flag .or. val < 32767) call fail('MPI_TAG_UB')

  extra = 1
  call MPI_COMM_CREATE_KEYVAL(my_copy, my_delete, key1, extra, ierr)
  call MPI_COMM_CREATE_KEYVAL(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key2, extra, ierr)
  if (ierr /= MPI_SUCCESS) call fail('create_keyval')
  val = 42
  call MPI_COMM_SET_ATTR(MPI_COMM_SELF, key1, val, ierr)
  val = 7
  call MPI_COMM_SET_ATTR(MPI_COMM_SELF, key2, val, ierr)
  call MPI_COMM_GET_ATTR(MPI_COMM_SELF, key1, val, flag, ierr)
  if (.not. flag .or. val /= 42) call fail('get_attr after set_attr')

  call MPI_COMM_DUP(MPI_COMM_SELF, dup, ierr)
  if (copies /= 1) call fail('copy procedure not called once at dup')
  call MPI_COMM_GET_ATTR(dup, key1, val, flag, ierr)
  if (.not. flag .or. val /= 43) call fail('copied value (in + extra state)')
  call MPI_COMM_GET_ATTR(dup, key2, val, flag, ierr)
  if (.not. flag .or. val /= 7) call fail('MPI_COMM_DUP_FN')
  call MPI_COMM_FREE(dup, ierr)
  if (deletes /= 1) call fail('delete procedure not called once at free')
  call MPI_COMM_DELETE_ATTR(MPI_COMM_SELF, key1, ierr)
  if (deletes /= 2) call fail('delete procedure not called at delete_attr')
  call MPI_COMM_GET_ATTR(MPI_COMM_SELF, key1, val, flag, ierr)
  if (flag) call fail('attribute still there after delete_attr')
  call MPI_COMM_FREE_KEYVAL(key1, ierr)
  if (key1 /= MPI_KEYVAL_INVALID) call fail('free_keyval sets MPI_KEYVAL_INVALID')
  call MPI_FINALIZE(ierr)
  if (nfail > 0) stop 1
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'check failed: ', what
    nfail = nfail + 1
  end subroutine fail
end program fortran_attr
