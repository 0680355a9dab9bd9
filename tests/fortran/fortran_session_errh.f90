! Sessions from Fortran with `use mpi`: MPI_SESSION_CREATE_ERRHANDLER's
! procedure is called with the session and the code when a session call
! fails (an out-of-range pset index), MPI_SESSION_CALL_ERRHANDLER reaches it
! too, and a session without it returns the error code.
module sess_state
  integer :: calls = 0, last_code = 0, last_session = -1
end module sess_state

subroutine sess_handler(session, code)
  use sess_state
  implicit none
  integer :: session, code
  calls = calls + 1
  last_session = session
  last_code = code
end subroutine sess_handler

program fortran_session_errh
  use mpi
  use sess_state
  implicit none
  external sess_handler
  integer :: ierr, session, eh, npsets, plen, cls, nfail
  character(len=MPI_MAX_PSET_NAME_LEN) :: pname

  nfail = 0
  call MPI_SESSION_CREATE_ERRHANDLER(sess_handler, eh, ierr)
  if (ierr /= MPI_SUCCESS) call fail('session_create_errhandler')
  call MPI_SESSION_INIT(MPI_INFO_NULL, eh, session, ierr)
  if (ierr /= MPI_SUCCESS) call fail('session_init')
  call MPI_SESSION_GET_NUM_PSETS(session, MPI_INFO_NULL, npsets, ierr)
  if (ierr /= MPI_SUCCESS .or. npsets < 2) call fail('get_num_psets')
  ! an index past the last pset: the handler is called, the call returns
  plen = len(pname)
  call MPI_SESSION_GET_NTH_PSET(session, MPI_INFO_NULL, npsets + 5, plen, pname, ierr)
  if (calls /= 1) call fail('handler not called for a bad pset index')
  if (last_session /= session) call fail('handler got another session')
  call MPI_ERROR_CLASS(last_code, cls, ierr)
  if (cls /= MPI_ERR_ARG) call fail('handler code is not of class MPI_ERR_ARG')
  call MPI_SESSION_CALL_ERRHANDLER(session, MPI_ERR_OTHER, ierr)
  if (calls /= 2 .or. last_code /= MPI_ERR_OTHER) call fail('session_call_errhandler')
  call MPI_SESSION_FINALIZE(session, ierr)
  if (ierr /= MPI_SUCCESS) call fail('session_finalize')
  call MPI_ERRHANDLER_FREE(eh, ierr)
  ! errors return on a session made with MPI_ERRORS_RETURN
  call MPI_SESSION_INIT(MPI_INFO_NULL, MPI_ERRORS_RETURN, session, ierr)
  plen = len(pname)
  call MPI_SESSION_GET_NTH_PSET(session, MPI_INFO_NULL, 1000, plen, pname, ierr)
  if (ierr == MPI_SUCCESS) call fail('bad pset index returned MPI_SUCCESS')
  if (calls /= 2) call fail('handler of a finalized session called again')
  call MPI_SESSION_FINALIZE(session, ierr)
  if (nfail /= 0) stop 1
  print '(a)', 'fortran_session_errh ok'
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(2a)', 'FAIL: ', what
    nfail = nfail + 1
  end subroutine fail
end program fortran_session_errh
