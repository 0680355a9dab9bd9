! The program of fortran_jacobi.f90 with `use mpi_f08` (TYPE(MPI_Comm), TYPE(MPI_Datatype),
! LOGICAL arrays in, no ierror).  2-D Jacobi iteration: a Cartesian communicator (Dims_create,
! Cart_create, Cart_shift, Cart_coords), halo rows as a vector type and halo
! columns as a contiguous type, Sendrecv with MPI_PROC_NULL at the borders.
! Prints values at probe points (bitwise the same at any number of ranks) and
! the sum of the grid (the same up to rounding); fortran_jacobi.sh compares runs.
program f08_jacobi
  use mpi_f08
  implicit none
  integer, parameter :: n = 24, iters = 200
  integer :: ierr, size, rank, dims(2), coords(2), nx, ny, i0, j0
  integer :: up, down, left, right, it, i, j, p
  type(MPI_Comm) :: comm2d
  type(MPI_Datatype) :: rowtype, coltype
  logical :: periods(2)
  double precision, allocatable :: u(:,:), unew(:,:)
  double precision :: lsum, gsum, probe(3), gprobe(3)
  integer :: pi(3) = (/ 1, 12, 24 /), pj(3) = (/ 1, 12, 5 /)

  call MPI_Init(ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  dims = 0
  call MPI_Dims_create(size, 2, dims)
  periods = .false.
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .true., comm2d)
  if (comm2d == MPI_COMM_NULL) stop 2
  call MPI_Comm_rank(comm2d, rank)
  call MPI_Cart_coords(comm2d, rank, 2, coords)
  if (mod(n, dims(1)) /= 0 .or. mod(n, dims(2)) /= 0) stop 3
  nx = n / dims(1)
  ny = n / dims(2)
  i0 = coords(1) * nx
  j0 = coords(2) * ny
  call MPI_Cart_shift(comm2d, 0, 1, up, down)
  call MPI_Cart_shift(comm2d, 1, 1, left, right)

  allocate(u(0:nx+1, 0:ny+1), unew(0:nx+1, 0:ny+1))
  u = 0d0
  if (coords(1) == 0) u(0, :) = 1d0          ! the global top border is hot
  if (coords(2) == 0) u(:, 0) = 0.5d0        ! the left border is warm
  unew = u

  ! a row u(i, 1:ny) is strided in Fortran's column-major order; a column is contiguous
  call MPI_Type_vector(ny, 1, nx + 2, MPI_DOUBLE_PRECISION, rowtype)
  call MPI_Type_commit(rowtype)
  call MPI_Type_contiguous(nx, MPI_DOUBLE_PRECISION, coltype)
  call MPI_Type_commit(coltype)

  do it = 1, iters
     call MPI_Sendrecv(u(1, 1), 1, rowtype, up, 1, u(nx + 1, 1), 1, rowtype, down, 1, comm2d, MPI_STATUS_IGNORE)
     call MPI_Sendrecv(u(nx, 1), 1, rowtype, down, 2, u(0, 1), 1, rowtype, up, 2, comm2d, MPI_STATUS_IGNORE)
     call MPI_Sendrecv(u(1, 1), 1, coltype, left, 3, u(1, ny + 1), 1, coltype, right, 3, comm2d, MPI_STATUS_IGNORE)
     call MPI_Sendrecv(u(1, ny), 1, coltype, right, 4, u(1, 0), 1, coltype, left, 4, comm2d, MPI_STATUS_IGNORE)
     do j = 1, ny
        do i = 1, nx
           unew(i, j) = 0.25d0 * ((u(i - 1, j) + u(i + 1, j)) + (u(i, j - 1) + u(i, j + 1)))
        end do
     end do
     u(1:nx, 1:ny) = unew(1:nx, 1:ny)
  end do

  lsum = sum(u(1:nx, 1:ny))
  call MPI_Allreduce(lsum, gsum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm2d)
  do p = 1, 3
     probe(p) = -huge(1d0)
     if (pi(p) > i0 .and. pi(p) <= i0 + nx .and. pj(p) > j0 .and. pj(p) <= j0 + ny) &
          probe(p) = u(pi(p) - i0, pj(p) - j0)
  end do
  call MPI_Reduce(probe, gprobe, 3, MPI_DOUBLE_PRECISION, MPI_MAX, 0, comm2d)
  if (rank == 0) then
     do p = 1, 3
        write (*, '(A, I3, I3, ES26.17)') 'probe', pi(p), pj(p), gprobe(p)
     end do
     write (*, '(A, ES26.17)') 'sum', gsum
  end if
  call MPI_Type_free(rowtype)
  call MPI_Type_free(coltype)
  call MPI_Comm_free(comm2d)
  call MPI_Finalize(ierr)
end program f08_jacobi
