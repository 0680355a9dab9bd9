program mpich_fortran_sentinels
  ! MPICH's sentinels in its COMMON blocks (mpif90.mpich): MPI_UNWEIGHTED (mpifcmb5_) must reach
  ! Kumi as unweighted, MPI_STATUSES_IGNORE (mpipriv2_) as ignored; and MPI_SIZEOF (module
  ! procedures of MPICH's `use mpi` in its Fortran library); run by abi_mpich_fortran.sh
  use mpi
  implicit none
  integer :: ierr, rank, size, comm, src(1), dst(1), indeg, outdeg, req(2), a, b
  logical :: wtd
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: v
  integer :: vl, sz
  real(kind=8) :: d
  integer(kind=2) :: i2(3)
  character :: ch
  call MPI_Init(ierr)
  d = 1; i2 = 1; ch = 'a'
  call MPI_Sizeof(d, sz, ierr)
  if (ierr /= 0 .or. sz /= 8) stop 6
  call MPI_Sizeof(i2, sz, ierr)
  if (ierr /= 0 .or. sz /= 2) stop 7
  call MPI_Sizeof(ch, sz, ierr)
  if (ierr /= 0 .or. sz /= 1) stop 8
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  src(1) = mod(rank + size - 1, size); dst(1) = mod(rank + 1, size)
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, MPI_UNWEIGHTED, 1, dst, MPI_UNWEIGHTED, &
       MPI_INFO_NULL, .false., comm, ierr)
  if (ierr /= 0) stop 2
  call MPI_Dist_graph_neighbors_count(comm, indeg, outdeg, wtd, ierr)
  if (wtd .or. indeg /= 1) stop 3
  a = rank
  call MPI_Irecv(b, 1, MPI_INTEGER, src(1), 0, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(a, 1, MPI_INTEGER, dst(1), 0, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
  if (b /= src(1)) stop 4
  call MPI_Get_library_version(v, vl, ierr)
  if (v(1:4) /= 'Kumi') stop 5
  if (rank == 0) print '(A,I0,A)', 'mpich_fortran_sentinels: ', size, ' ranks ok'
  call MPI_Comm_free(comm, ierr)
  call MPI_Finalize(ierr)
end program
