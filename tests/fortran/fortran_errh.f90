! Error handling from Fortran: a user communicator error handler (called with
! the communicator and the code), MPI_ERRORS_RETURN with IERROR, error classes
! and strings.
module errh_state
  integer :: calls = 0, last_code = 0, last_comm = -1
end module errh_state

subroutine my_handler(comm, code)
  use errh_state
  implicit none
  integer :: comm, code
  calls = calls + 1
  last_comm = comm
  last_code = code
end subroutine my_handler

program fortran_errh
  use mpi
  use errh_state
  implicit none
  external my_handler
  integer :: ierr, rank, size, dup, eh, cls, slen, nfail
  character(len=MPI_MAX_ERROR_STRING) :: msg

  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call MPI_COMM_CREATE_ERRHANDLER(my_handler, eh, ierr)
  if (ierr /= MPI_SUCCESS .or. eh == MPI_ERRHANDLER_NULL) call fail('create_errhandler')
  call MPI_COMM_SET_ERRHANDLER(dup, eh, ierr)
  call MPI_ERRHANDLER_FREE(eh, ierr)
  if (eh /= MPI_ERRHANDLER_NULL) call fail('errhandler_free sets MPI_ERRHANDLER_NULL')

  ! an invalid destination: the handler runs with our communicator
  call MPI_SEND(rank, 1, MPI_INTEGER, size + 5, 0, dup, ierr)
  if (calls /= 1) call fail('user handler not called once')
  if (last_comm /= dup) call fail('user handler got another communicator')
  call MPI_ERROR_CLASS(last_code, cls, ierr)
  if (cls /= MPI_ERR_RANK) call fail('error class of the handler code is not MPI_ERR_RANK')

  ! MPI_ERRORS_RETURN: the code comes back in IERROR
  call MPI_COMM_SET_ERRHANDLER(dup, MPI_ERRORS_RETURN, ierr)
  call MPI_SEND(rank, 1, MPI_INTEGER, 0, -5, dup, ierr)
  call MPI_ERROR_CLASS(ierr, cls, ierr)
  if (cls /= MPI_ERR_TAG) call fail('negative tag: class is not MPI_ERR_TAG')
  call MPI_BCAST(rank, 1, 12345, 0, dup, ierr)
  call MPI_ERROR_CLASS(ierr, cls, ierr)
  if (cls /= MPI_ERR_TYPE) call fail('invalid integer datatype handle: class is not MPI_ERR_TYPE')
  call MPI_ERROR_STRING(MPI_ERR_TRUNCATE, msg, slen, ierr)
  if (slen <= 0 .or. slen > MPI_MAX_ERROR_STRING .or. len_trim(msg) /= slen) call fail('error_string')
  if (calls /= 1) call fail('user handler called after MPI_ERRORS_RETURN was set')

  call MPI_COMM_FREE(dup, ierr)
  call MPI_FINALIZE(ierr)
  if (nfail > 0) stop 1
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'rank', rank, ': check failed: ', what
    nfail = nfail + 1
  end subroutine fail
end program fortran_errh
