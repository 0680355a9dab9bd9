! MPI-IO from Fortran (use mpi): open, explicit-offset writes and reads,
! a collective write through a vector view, the file size, a user file
! error handler (called with the file and the code), close and delete.
module io_state
  integer :: calls = 0, last_code = 0, last_file = -1
end module io_state

subroutine my_file_handler(fh, code)
  use io_state
  implicit none
  integer :: fh, code
  calls = calls + 1
  last_file = fh
  last_code = code
end subroutine my_file_handler

subroutine wconv(userbuf, datatype, count, filebuf, position, extra_state, ierror)
  use mpi
  implicit none
  integer :: userbuf(*), filebuf(*), datatype, count, ierror, i
  integer(kind=MPI_OFFSET_KIND) :: position
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  do i = 1, count
    filebuf(i) = userbuf(i + position) + int(extra_state)
  end do
  ierror = MPI_SUCCESS
end subroutine wconv

subroutine rconv(userbuf, datatype, count, filebuf, position, extra_state, ierror)
  use mpi
  implicit none
  integer :: userbuf(*), filebuf(*), datatype, count, ierror, i
  integer(kind=MPI_OFFSET_KIND) :: position
  integer(kind=MPI_ADDRESS_KIND) :: extra_state
  do i = 1, count
    userbuf(i + position) = filebuf(i) - int(extra_state)
  end do
  ierror = MPI_SUCCESS
end subroutine rconv

subroutine dext(datatype, extent, extra_state, ierror)
  use mpi
  implicit none
  integer :: datatype, ierror
  integer(kind=MPI_ADDRESS_KIND) :: extent, extra_state
  extent = 4
  ierror = MPI_SUCCESS
end subroutine dext

program fortran_io
  use mpi
  use io_state
  implicit none
  external my_file_handler, wconv, rconv, dext
  integer(kind=MPI_ADDRESS_KIND) :: es
  integer :: ierr, rank, size, fh, eh, cls, vec, i, nfail, cnt
  integer :: status(MPI_STATUS_SIZE)
  integer(kind=MPI_OFFSET_KIND) :: off, fsize, disp
  integer :: buf(10), inb(10)
  character(len=64) :: fname

  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  fname = 'kumi_fortran_io.dat'
  if (rank == 0) call MPI_FILE_DELETE(fname, MPI_INFO_NULL, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_FILE_OPEN(MPI_COMM_WORLD, fname, MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
  if (ierr /= MPI_SUCCESS .or. fh == MPI_FILE_NULL) call fail('open')
  do i = 1, 10
    buf(i) = rank * 100 + i
  end do
  off = rank * 40
  call MPI_FILE_WRITE_AT(fh, off, buf, 10, MPI_INTEGER, status, ierr)
  if (ierr /= MPI_SUCCESS) call fail('write_at')
  call MPI_GET_COUNT(status, MPI_INTEGER, cnt, ierr)
  if (cnt /= 10) call fail('write_at count')
  call MPI_FILE_SYNC(fh, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  off = mod(rank + 1, size) * 40
  call MPI_FILE_READ_AT(fh, off, inb, 10, MPI_INTEGER, status, ierr)
  do i = 1, 10
    if (inb(i) /= mod(rank + 1, size) * 100 + i) call fail('read_at data')
  end do
  call MPI_FILE_GET_SIZE(fh, fsize, ierr)
  if (fsize /= 40 * size) call fail('get_size')

  ! a collective write through a vector view: int i of rank r at (i-1)*size + r
  call MPI_TYPE_VECTOR(10, 1, size, MPI_INTEGER, vec, ierr)
  call MPI_TYPE_COMMIT(vec, ierr)
  disp = 4 * size * 10 + rank * 4
  call MPI_FILE_SET_VIEW(fh, disp, MPI_INTEGER, vec, 'native', MPI_INFO_NULL, ierr)
  call MPI_FILE_WRITE_ALL(fh, buf, 10, MPI_INTEGER, status, ierr)
  if (ierr /= MPI_SUCCESS) call fail('write_all')
  call MPI_FILE_SET_VIEW(fh, 4 * size * 10_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native', MPI_INFO_NULL, ierr)
  off = rank
  call MPI_FILE_READ_AT(fh, off, inb, 1, MPI_INTEGER, status, ierr)
  if (inb(1) /= rank * 100 + 1) call fail('write_all placement')

  ! a Fortran data representation: the file holds each integer + 1000
  es = 1000
  call MPI_REGISTER_DATAREP('plus1000', rconv, wconv, dext, es, ierr)
  if (ierr /= MPI_SUCCESS) call fail('register_datarep')
  disp = 4 * size * 20
  call MPI_FILE_SET_VIEW(fh, disp, MPI_INTEGER, MPI_INTEGER, 'plus1000', MPI_INFO_NULL, ierr)
  if (ierr /= MPI_SUCCESS) call fail('set_view plus1000')
  off = rank * 10
  call MPI_FILE_WRITE_AT(fh, off, buf, 10, MPI_INTEGER, status, ierr)
  call MPI_FILE_READ_AT(fh, off, inb, 10, MPI_INTEGER, status, ierr)
  do i = 1, 10
    if (inb(i) /= buf(i)) call fail('plus1000 read back')
  end do
  call MPI_FILE_SET_VIEW(fh, disp, MPI_INTEGER, MPI_INTEGER, 'native', MPI_INFO_NULL, ierr)
  call MPI_FILE_READ_AT(fh, off, inb, 10, MPI_INTEGER, status, ierr)
  do i = 1, 10
    if (inb(i) /= buf(i) + 1000) call fail('plus1000 file contents')
  end do

  ! a Fortran file error handler
  call MPI_FILE_CREATE_ERRHANDLER(my_file_handler, eh, ierr)
  call MPI_FILE_SET_ERRHANDLER(fh, eh, ierr)
  call MPI_FILE_SEEK(fh, 0_MPI_OFFSET_KIND, 12345, ierr)
  if (calls /= 1) call fail('file handler not called once')
  if (last_file /= fh) call fail('file handler got another file')
  call MPI_ERROR_CLASS(last_code, cls, ierr)
  if (cls /= MPI_ERR_ARG) call fail('file handler class')
  call MPI_ERRHANDLER_FREE(eh, ierr)
  call MPI_TYPE_FREE(vec, ierr)
  call MPI_FILE_CLOSE(fh, ierr)
  if (fh /= MPI_FILE_NULL) call fail('close sets MPI_FILE_NULL')
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  if (rank == 0) call MPI_FILE_DELETE(fname, MPI_INFO_NULL, ierr)
  call MPI_FILE_OPEN(MPI_COMM_WORLD, 'kumi_no_such_dir/x', MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
  call MPI_ERROR_CLASS(ierr, cls, ierr)
  if (cls /= MPI_ERR_NO_SUCH_FILE) call fail('open of a missing file: class')
  call MPI_FINALIZE(ierr)
  if (nfail > 0) stop 1
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print *, 'FAIL rank', rank, ': ', what
    nfail = nfail + 1
  end subroutine fail
end program fortran_io
