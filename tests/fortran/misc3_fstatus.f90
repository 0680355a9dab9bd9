! MPI_F_STATUS_IGNORE / MPI_F_STATUSES_IGNORE: C code (misc3_fstatus_c.c)
! recognises the Fortran MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE by address.
program misc3_fstatus
  use mpi
  implicit none
  integer :: ierr, st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2)
  integer, external :: misc3_which
  call MPI_INIT(ierr)
  if (misc3_which(MPI_STATUS_IGNORE) /= 1) stop 'MPI_STATUS_IGNORE not seen as MPI_F_STATUS_IGNORE'
  if (misc3_which(MPI_STATUSES_IGNORE) /= 2) stop 'MPI_STATUSES_IGNORE not seen as MPI_F_STATUSES_IGNORE'
  if (misc3_which(st) /= 0) stop 'a status seen as a sentinel'
  if (misc3_which(sts) /= 0) stop 'a status array seen as a sentinel'
  call MPI_FINALIZE(ierr)
  print *, 'misc3_fstatus: ok'
end program
