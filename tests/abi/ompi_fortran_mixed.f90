! ompi_fortran_mixed: a program of Fortran (mpif90.openmpi) and C (mpicc.openmpi) parts on
! Kumi through the Open MPI shims: handles cross between the parts as Fortran integers
! (MPI_X_f2c / MPI_X_c2f in C), and C's integers are the Fortran library's (predefined ones
! included), for MPI_COMM_WORLD and for a communicator of the program's own.
program ompi_fortran_mixed
  use mpi
  implicit none
  integer :: ierr, rank, nproc, dupc, n, w, it, s, back, ok, nbad
  nbad = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  call cside(MPI_COMM_WORLD, n, w, it, s, back, ok)
  if (ok /= 1 .or. n /= nproc) call bad('C part on MPI_COMM_WORLD')
  if (w /= MPI_COMM_WORLD) call bad('MPI_Comm_c2f(MPI_COMM_WORLD) in C is not Fortran''s MPI_COMM_WORLD')
  if (it /= MPI_INTEGER) call bad('MPI_Type_c2f(MPI_INTEGER) in C is not Fortran''s MPI_INTEGER')
  if (s /= MPI_SUM) call bad('MPI_Op_c2f(MPI_SUM) in C is not Fortran''s MPI_SUM')
  if (back /= MPI_COMM_WORLD) call bad('f2c then c2f of MPI_COMM_WORLD')
  call MPI_Comm_split(MPI_COMM_WORLD, 0, nproc - rank, dupc, ierr)
  call cside(dupc, n, w, it, s, back, ok)
  if (ok /= 1 .or. n /= nproc) call bad('C part on a communicator of the program''s own')
  if (back /= dupc) call bad('f2c then c2f of a communicator of the program''s own')
  call MPI_Comm_free(dupc, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, nbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. nbad == 0) print '(A,I0,A)', 'ompi_fortran_mixed: ', nproc, ' ranks ok'
  call MPI_Finalize(ierr)
  if (nbad /= 0) stop 1
contains
  subroutine bad(what)
    character(len=*), intent(in) :: what
    print '(A,I0,2A)', 'ompi_fortran_mixed: rank ', rank, ': FAILED: ', what
    nbad = nbad + 1
  end subroutine
end program
