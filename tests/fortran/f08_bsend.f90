! The program of fortran_bsend.f90 with `use mpi_f08`: MPI_Buffer_attach / MPI_Bsend /
! MPI_Buffer_detach, whose BUFFER_ADDR is a TYPE(C_PTR) in the f08 binding: it gets
! the address of the attached buffer, and SIZE its size; MPI_BUFFER_AUTOMATIC.
! Ring over 2 or more ranks.
program f08_bsend
  use mpi_f08
  use, intrinsic :: iso_c_binding
  implicit none
  integer, parameter :: n = 100
  integer :: ierr, rank, nprocs, right, left, bsize, dsize, i, psize
  integer, target :: buf(1000)
  integer :: msg(n), got(n)
  type(c_ptr) :: addr
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  call MPI_Pack_size(n, MPI_INTEGER, MPI_COMM_WORLD, psize, ierr)
  bsize = 4 * 1000
  if (psize + MPI_BSEND_OVERHEAD > bsize) stop 'buffer too small'
  call MPI_Buffer_attach(buf, bsize, ierr)
  if (ierr /= MPI_SUCCESS) stop 'attach'
  msg = (/ (rank * 1000 + i, i = 1, n) /)
  call MPI_Bsend(msg, n, MPI_INTEGER, right, 1, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) stop 'bsend'
  call MPI_Recv(got, n, MPI_INTEGER, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (any(got /= (/ (left * 1000 + i, i = 1, n) /))) stop 'message'
  addr = c_null_ptr
  dsize = -1
  call MPI_Buffer_detach(addr, dsize, ierr)
  if (ierr /= MPI_SUCCESS) stop 'detach'
  if (dsize /= bsize) stop 'detach size'
  ! compared as integers: gfortran may assume a dummy without TARGET (the buffer given to
  ! MPI_Buffer_attach) does not escape, and fold c_associated(addr, c_loc(buf)) to .false.
  if (transfer(addr, 0_c_intptr_t) /= transfer(c_loc(buf), 0_c_intptr_t)) stop 'detach: BUFFER_ADDR is not the attached buffer'
  ! automatic buffering, then a buffer again (nothing stale)
  call MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0, ierr)
  if (ierr /= MPI_SUCCESS) stop 'attach MPI_BUFFER_AUTOMATIC'
  call MPI_Bsend(msg, n, MPI_INTEGER, right, 2, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) stop 'bsend automatic'
  call MPI_Recv(got, n, MPI_INTEGER, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (got(n) /= left * 1000 + n) stop 'message automatic'
  call MPI_Buffer_detach(addr, dsize)
  call MPI_Buffer_attach(buf, bsize, ierr)
  if (ierr /= MPI_SUCCESS) stop 'attach again'
  call MPI_Buffer_detach(addr, dsize, ierr)
  if (dsize /= bsize .or. transfer(addr, 0_c_intptr_t) /= transfer(c_loc(buf), 0_c_intptr_t)) stop 'detach again'
  call MPI_Finalize(ierr)
  if (rank == 0) print *, 'f08_bsend: ok'
end program f08_bsend
