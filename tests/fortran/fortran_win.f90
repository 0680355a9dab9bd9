! Windows from Fortran with `use mpi`: MPI_WIN_ALLOCATE's BASEPTR (an
! INTEGER(KIND=MPI_ADDRESS_KIND) address, read here through C_F_POINTER),
! MPI_ALLOC_MEM, MPI_PUT between fences, and a window error handler
! (MPI_WIN_CREATE_ERRHANDLER) called with the window and the code.
module win_state
  integer :: calls = 0, last_code = 0, last_win = -1
end module win_state

subroutine win_handler(win, code)
  use win_state
  implicit none
  integer :: win, code
  calls = calls + 1
  last_win = win
  last_code = code
end subroutine win_handler

program fortran_win
  use mpi
  use win_state
  use, intrinsic :: iso_c_binding
  implicit none
  external win_handler
  integer, parameter :: n = 4
  integer :: ierr, rank, size, win, eh, cls, i, nfail
  integer(kind=MPI_ADDRESS_KIND) :: bytes, baseptr, memptr
  integer, pointer :: wbuf(:), mbuf(:)
  integer :: src(n)

  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  bytes = 4 * n
  baseptr = 0
  call MPI_WIN_ALLOCATE(bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, baseptr, win, ierr)
  if (ierr /= MPI_SUCCESS .or. baseptr == 0) call fail('win_allocate baseptr')
  call c_f_pointer(transfer(baseptr, c_null_ptr), wbuf, [n])
  wbuf = -1
  src = (/ (rank * 10 + i, i = 1, n) /)
  call MPI_WIN_FENCE(0, win, ierr)
  call MPI_PUT(src, n, MPI_INTEGER, mod(rank + 1, size), 0_MPI_ADDRESS_KIND, n, MPI_INTEGER, win, ierr)
  call MPI_WIN_FENCE(0, win, ierr)
  if (wbuf(n) /= mod(rank + size - 1, size) * 10 + n) call fail('put through the window')

  call MPI_WIN_CREATE_ERRHANDLER(win_handler, eh, ierr)
  if (ierr /= MPI_SUCCESS .or. eh == MPI_ERRHANDLER_NULL) call fail('win_create_errhandler')
  call MPI_WIN_SET_ERRHANDLER(win, eh, ierr)
  call MPI_ERRHANDLER_FREE(eh, ierr)
  call MPI_PUT(src, n, MPI_INTEGER, size + 3, 0_MPI_ADDRESS_KIND, n, MPI_INTEGER, win, ierr)
  if (calls /= 1 .or. last_win /= win) call fail('window handler not called with the window')
  call MPI_ERROR_CLASS(last_code, cls, ierr)
  if (cls /= MPI_ERR_RANK) call fail('window handler code is not MPI_ERR_RANK')
  call MPI_WIN_FENCE(0, win, ierr)
  call MPI_WIN_FREE(win, ierr)

  memptr = 0
  call MPI_ALLOC_MEM(bytes, MPI_INFO_NULL, memptr, ierr)
  if (ierr /= MPI_SUCCESS .or. memptr == 0) call fail('alloc_mem')
  call c_f_pointer(transfer(memptr, c_null_ptr), mbuf, [n])
  mbuf = 7
  call MPI_FREE_MEM(mbuf, ierr)
  if (ierr /= MPI_SUCCESS) call fail('free_mem')
  call MPI_FINALIZE(ierr)
  if (nfail > 0) stop 1
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'rank', rank, ': check failed: ', what
    nfail = nfail + 1
  end subroutine fail
end program fortran_win
