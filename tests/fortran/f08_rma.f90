! One-sided communication with `use mpi_f08`: MPI_Win_allocate's TYPE(C_PTR) baseptr
! (C_F_POINTER onto it), MPI_Put / MPI_Get between fences, MPI_Alloc_mem / MPI_Free_mem,
! a non-contiguous origin buffer refused through the window's error handler, and a
! window error handler of the f08 form.
module rma_state
  use mpi_f08
  implicit none
  integer :: calls = 0, last_code = 0
  type(MPI_Win) :: last_win
contains
  subroutine win_handler(win, code)
    type(MPI_Win) :: win
  type(MPI_Errhandler) :: eh
    integer :: code
    calls = calls + 1
    last_win = win
    last_code = code
  end subroutine win_handler
end module rma_state

program f08_rma
  use mpi_f08
  use rma_state
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: n = 8
  integer :: rank, size, right, left, i, nfail, ierr, cls
  integer(MPI_ADDRESS_KIND) :: bytes
  type(MPI_Win) :: win
  type(MPI_Errhandler) :: eh
  type(c_ptr) :: base, mem
  integer, pointer :: wbuf(:), abuf(:)
  integer :: src(2 * n), got(n)

  nfail = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)
  bytes = n * 4
  call MPI_Win_allocate(bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, base, win, ierr)
  call check(ierr == MPI_SUCCESS .and. c_associated(base), 'win_allocate baseptr')
  call c_f_pointer(base, wbuf, [n])
  wbuf = -1
  src = [(rank * 100 + i, i = 1, 2 * n)]
  call MPI_Win_fence(0, win)
  call MPI_Put(src, n, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, n, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  call check(all(wbuf == [(left * 100 + i, i = 1, n)]), 'put into the right neighbour')
  call MPI_Get(got, n, MPI_INTEGER, left, 0_MPI_ADDRESS_KIND, n, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  call check(all(got == [(mod(left + size - 1, size) * 100 + i, i = 1, n)]), 'get from the left neighbour')

  call MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN)
  call MPI_Put(src(1:2*n:2), n, MPI_INTEGER, right, 0_MPI_ADDRESS_KIND, n, MPI_INTEGER, win, ierr)
  call MPI_Error_class(ierr, cls)
  call check(cls == MPI_ERR_BUFFER, 'non-contiguous origin: MPI_ERR_BUFFER from the window')
  ! a window error handler of the f08 form (MPI_Win_errhandler_function)
  call MPI_Win_create_errhandler(win_handler, eh, ierr)
  call check(ierr == MPI_SUCCESS .and. eh /= MPI_ERRHANDLER_NULL, 'win_create_errhandler')
  call MPI_Win_set_errhandler(win, eh)
  call MPI_Errhandler_free(eh)
  call MPI_Put(src, n, MPI_INTEGER, size + 3, 0_MPI_ADDRESS_KIND, n, MPI_INTEGER, win, ierr)
  call check(calls == 1 .and. last_win == win, 'window handler called with the window')
  call MPI_Error_class(last_code, cls)
  call check(cls == MPI_ERR_RANK, 'window handler code: MPI_ERR_RANK')
  call MPI_Win_fence(0, win)
  call MPI_Win_free(win)
  call check(win == MPI_WIN_NULL, 'win_free sets MPI_WIN_NULL')

  call MPI_Alloc_mem(bytes, MPI_INFO_NULL, mem, ierr)
  call check(ierr == MPI_SUCCESS .and. c_associated(mem), 'alloc_mem')
  call c_f_pointer(mem, abuf, [n])
  abuf = rank
  call MPI_Allreduce(MPI_IN_PLACE, abuf, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call check(abuf(n) == size * (size - 1) / 2, 'allreduce on alloc_mem memory')
  call MPI_Free_mem(abuf, ierr)
  call check(ierr == MPI_SUCCESS, 'free_mem')
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
end program f08_rma
