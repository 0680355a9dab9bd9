! Error handling with `use mpi_f08` (the program of fortran_errh.f90): a user
! communicator error handler in the f08 form (TYPE(MPI_Comm), INTEGER), MPI_ERRORS_RETURN
! with ierror, error classes and strings; a non-contiguous array section as a buffer is
! refused with MPI_ERR_BUFFER (MPI_SUBARRAYS_SUPPORTED is .FALSE.).
module errh_state
  use mpi_f08
  implicit none
  integer :: calls = 0, last_code = 0
  type(MPI_Comm) :: last_comm
contains
  subroutine my_handler(comm, code)
    type(MPI_Comm) :: comm
    integer :: code
    calls = calls + 1
    last_comm = comm
    last_code = code
  end subroutine my_handler
end module errh_state

program f08_errh
  use mpi_f08
  use errh_state
  implicit none
  integer :: ierr, rank, size, cls, slen, nfail
  integer :: buf(10)
  type(MPI_Comm) :: dup
  type(MPI_Errhandler) :: eh
  character(len=MPI_MAX_ERROR_STRING) :: msg

  nfail = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_create_errhandler(my_handler, eh, ierr)
  if (ierr /= MPI_SUCCESS .or. eh == MPI_ERRHANDLER_NULL) call fail('create_errhandler')
  call MPI_Comm_set_errhandler(dup, eh, ierr)
  call MPI_Errhandler_free(eh, ierr)
  if (eh /= MPI_ERRHANDLER_NULL) call fail('errhandler_free sets MPI_ERRHANDLER_NULL')

  ! an invalid destination: the handler runs with our communicator
  call MPI_Send(rank, 1, MPI_INTEGER, size + 5, 0, dup, ierr)
  if (calls /= 1) call fail('user handler not called once')
  if (last_comm /= dup) call fail('user handler got another communicator')
  call MPI_Error_class(last_code, cls, ierr)
  if (cls /= MPI_ERR_RANK) call fail('error class of the handler code is not MPI_ERR_RANK')

  ! MPI_ERRORS_RETURN: the code comes back in ierror
  call MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN, ierr)
  call MPI_Send(rank, 1, MPI_INTEGER, 0, -5, dup, ierr)
  call MPI_Error_class(ierr, cls, ierr)
  if (cls /= MPI_ERR_TAG) call fail('negative tag: class is not MPI_ERR_TAG')
  call MPI_Bcast(rank, 1, MPI_Datatype(12345), 0, dup, ierr)
  call MPI_Error_class(ierr, cls, ierr)
  if (cls /= MPI_ERR_TYPE) call fail('invalid datatype handle: class is not MPI_ERR_TYPE')
  call MPI_Error_string(MPI_ERR_TRUNCATE, msg, slen, ierr)
  if (slen <= 0 .or. slen > MPI_MAX_ERROR_STRING .or. len_trim(msg) /= slen) call fail('error_string')
  if (calls /= 1) call fail('user handler called after MPI_ERRORS_RETURN was set')

  ! a non-contiguous section: refused through the communicator's handler (dup
  ! returns errors; COMM_WORLD's would abort)
  if (MPI_SUBARRAYS_SUPPORTED) call fail('MPI_SUBARRAYS_SUPPORTED is .TRUE. but sections are refused')
  buf = 0
  call MPI_Send(buf(1:10:2), 5, MPI_INTEGER, rank, 9, dup, ierr)
  call MPI_Error_class(ierr, cls)
  if (cls /= MPI_ERR_BUFFER) call fail('non-contiguous section: class is not MPI_ERR_BUFFER')
  ! a contiguous section is fine
  call MPI_Sendrecv(buf(2:6), 5, MPI_INTEGER, rank, 9, buf(6:10), 5, MPI_INTEGER, rank, 9, &
       dup, MPI_STATUS_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS) call fail('contiguous section')

  call MPI_Comm_free(dup, ierr)
  call MPI_Finalize(ierr)
  if (nfail > 0) stop 1
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'rank', rank, ': check failed: ', what
    nfail = nfail + 1
  end subroutine fail
end program f08_errh
