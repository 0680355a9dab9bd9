! ficount: the Fortran counterpart of icount.c (tests/bench/abi-icount.sh, its Fortran rows):
! one kind of MPI call from Fortran (`use mpi`), N times (arguments: N KIND), for counting the
! instructions per call under callgrind, built with Kumi's mpif90 and with mpif90.openmpi /
! mpif90.mpich (through the foreign Fortran library and the C shim).  KIND is rank
! (MPI_Comm_rank), recv (MPI_Recv from MPI_PROC_NULL, MPI_STATUS_IGNORE: the calls of
! tests/bench/npb/lu.f90), isend (MPI_Isend to MPI_PROC_NULL + MPI_Wait) or waitall
! (4 MPI_Isend, MPI_Waitall with MPI_STATUSES_IGNORE, as LU's sweeps end).
program ficount
  use mpi
  implicit none
  integer :: n, i, j, ierr, r, req, reqs(4)
  double precision :: buf(8)
  character(len=16) :: arg, k
  call get_command_argument(1, arg)
  read (arg, *) n
  call get_command_argument(2, k)
  buf = 0d0
  call MPI_Init(ierr)
  select case (trim(k))
  case ('rank')
    do i = 1, n
      call MPI_Comm_rank(MPI_COMM_WORLD, r, ierr)
    end do
  case ('recv')
    do i = 1, n
      call MPI_Recv(buf, 8, MPI_DOUBLE_PRECISION, MPI_PROC_NULL, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    end do
  case ('isend')
    do i = 1, n
      call MPI_Isend(buf, 8, MPI_DOUBLE_PRECISION, MPI_PROC_NULL, i, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    end do
  case ('waitall')
    do i = 1, n
      do j = 1, 4
        call MPI_Isend(buf, 8, MPI_DOUBLE_PRECISION, MPI_PROC_NULL, j, MPI_COMM_WORLD, reqs(j), ierr)
      end do
      call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE, ierr)
    end do
  end select
  call MPI_Finalize(ierr)
end program ficount
