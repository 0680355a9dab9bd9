! mix_flib: tests/abi/mix_lib.c's two functions written in Fortran (use mpi) and built with
! mpif90.mpich as a shared library: linked into a program built with mpicc.openmpi
! (tests/abi/mix_main.c), its calls reach MPICH's Fortran shim libmpichfort.so.12, whose own
! calls into the C library (PMPI_X) must reach MPICH's C shim, not Open MPI's, which the loader
! binds first: the GOT swap agent swaps both.  tests/scripts/abi_mix.sh.
integer(c_int) function mixlib_sum(v) bind(C, name='mixlib_sum')
  use, intrinsic :: iso_c_binding
  use mpi
  implicit none
  integer(c_int), value :: v
  integer :: x, r, ierr
  x = v
  r = -1
  call MPI_Allreduce(x, r, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) r = -1
  mixlib_sum = r
end function

integer(c_int) function mixlib_check() bind(C, name='mixlib_check')
  use, intrinsic :: iso_c_binding
  use mpi
  implicit none
  integer :: rank, size, d, ierr, out, in, st(MPI_STATUS_SIZE), l
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
  mixlib_check = 1
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  if (ierr /= MPI_SUCCESS) return
  mixlib_check = 2
  call MPI_Comm_dup(MPI_COMM_WORLD, d, ierr)
  if (ierr /= MPI_SUCCESS) return
  mixlib_check = 4
  out = rank * 7
  in = -1
  call MPI_Sendrecv(out, 1, MPI_INTEGER, mod(rank + 1, size), 3, in, 1, MPI_INTEGER, &
                    mod(rank + size - 1, size), 3, d, st, ierr)
  if (ierr /= MPI_SUCCESS .or. st(MPI_SOURCE) /= mod(rank + size - 1, size) .or. st(MPI_TAG) /= 3 &
      .or. in /= mod(rank + size - 1, size) * 7) return
  call MPI_Comm_free(d, ierr)
  mixlib_check = 5
  call MPI_Get_library_version(lib, l, ierr)
  if (index(lib, 'Kumi') == 0) return
  mixlib_check = 0
end function
