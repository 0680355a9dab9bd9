! Attributes with `use mpi_f08` (the program of fortran_attr.f90): MPI_TAG_UB, a keyval
! with copy and delete procedures of the f08 abstract interfaces
! (MPI_Comm_copy_attr_function, MPI_Comm_delete_attr_function), and the predefined
! MPI_COMM_DUP_FN / MPI_COMM_NULL_DELETE_FN.
module attr_state
  use mpi_f08
  implicit none
  integer :: copies = 0, deletes = 0
contains
  subroutine my_copy(oldcomm, keyval, extra, valin, valout, flag, ierr)
    type(MPI_Comm) :: oldcomm
    integer :: keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
    logical :: flag
    copies = copies + 1
    valout = valin + extra
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine my_copy

  subroutine my_delete(comm, keyval, val, extra, ierr)
    type(MPI_Comm) :: comm
    integer :: keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    deletes = deletes + 1
    if (val < 42) deletes = deletes + 1000
    ierr = MPI_SUCCESS
  end subroutine my_delete
end module attr_state

program f08_attr
  use mpi_f08
  use attr_state
  implicit none
  integer :: ierr, key1, key2, nfail
  type(MPI_Comm) :: dup
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  logical :: flag

  nfail = 0
  call MPI_Init(ierr)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  if (ierr /= MPI_SUCCESS .or. .not. flag .or. val < 32767) call fail('MPI_TAG_UB')

  extra = 1
  call MPI_Comm_create_keyval(my_copy, my_delete, key1, extra, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key2, extra, ierr)
  if (ierr /= MPI_SUCCESS) call fail('create_keyval')
  val = 42
  call MPI_Comm_set_attr(MPI_COMM_SELF, key1, val, ierr)
  val = 7
  call MPI_Comm_set_attr(MPI_COMM_SELF, key2, val)
  call MPI_Comm_get_attr(MPI_COMM_SELF, key1, val, flag)
  if (.not. flag .or. val /= 42) call fail('get_attr after set_attr')

  call MPI_Comm_dup(MPI_COMM_SELF, dup, ierr)
  if (copies /= 1) call fail('copy procedure not called once at dup')
  call MPI_Comm_get_attr(dup, key1, val, flag, ierr)
  if (.not. flag .or. val /= 43) call fail('copied value (in + extra state)')
  call MPI_Comm_get_attr(dup, key2, val, flag, ierr)
  if (.not. flag .or. val /= 7) call fail('MPI_COMM_DUP_FN')
  call MPI_Comm_free(dup, ierr)
  if (deletes /= 1) call fail('delete procedure not called once at free')
  call MPI_Comm_delete_attr(MPI_COMM_SELF, key1, ierr)
  if (deletes /= 2) call fail('delete procedure not called at delete_attr')
  call MPI_Comm_get_attr(MPI_COMM_SELF, key1, val, flag, ierr)
  if (flag) call fail('attribute still there after delete_attr')
  call MPI_Comm_free_keyval(key1, ierr)
  if (key1 /= MPI_KEYVAL_INVALID) call fail('free_keyval sets MPI_KEYVAL_INVALID')
  call MPI_Finalize(ierr)
  if (nfail > 0) stop 1
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'check failed: ', what
    nfail = nfail + 1
  end subroutine fail
end program f08_attr
