! 2-D Jacobi iteration with `use mpi`: a Cartesian communicator (Dims_create,
! Cart_create, Cart_shift, Cart_coords), halo rows as a vector type and halo
! columns as a contiguous type, Sendrecv with MPI_PROC_NULL at the borders.
! Prints values at probe points (bitwise the same at any number of ranks) and
! the sum of the grid (the same up to rounding); fortran_jacobi.sh compares runs.
program fortran_jacobi
  use mpi
  implicit none
  integer, parameter :: n = 24, iters = 200
  integer :: ierr, size, rank, comm2d, dims(2), coords(2), nx, ny, i0, j0
  integer :: up, down, left, right, rowtype, coltype, it, i, j, p
  logical :: periods(2)
  double precision, allocatable :: u(:,:), unew(:,:)
  double precision :: lsum, gsum, probe(3), gprobe(3)
  integer :: pi(3) = (/ 1, 12, 24 /), pj(3) = (/ 1, 12, 5 /)

  call MPI_INIT(ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  dims = 0
  call MPI_DIMS_CREATE(size, 2, dims, ierr)
  periods = .false.
  call MPI_CART_CREATE(MPI_COMM_WORLD, 2, dims, periods, .true., comm2d, ierr)
  if (ierr /= MPI_SUCCESS .or. comm2d == MPI_COMM_NULL) stop 2
  call MPI_COMM_RANK(comm2d, rank, ierr)
  call MPI_CART_COORDS(comm2d, rank, 2, coords, ierr)
  if (mod(n, dims(1)) /= 0 .or. mod(n, dims(2)) /= 0) stop 3
  nx = n / dims(1)
  ny = n / dims(2)
  i0 = coords(1) * nx
  j0 = coords(2) * ny
  call MPI_CART_SHIFT(comm2d, 0, 1, up, down, ierr)
  call MPI_CART_SHIFT(comm2d, 1, 1, left, right, ierr)

  allocate(u(0:nx+1, 0:ny+1), unew(0:nx+1, 0:ny+1))
  u = 0d0
  if (coords(1) == 0) u(0, :) = 1d0          ! the global top border is hot
  if (coords(2) == 0) u(:, 0) = 0.5d0        ! the left border is warm
  unew = u

  ! a row u(i, 1:ny) is strided in Fortran's column-major order; a column is contiguous
  call MPI_TYPE_VECTOR(ny, 1, nx + 2, MPI_DOUBLE_PRECISION, rowtype, ierr)
  call MPI_TYPE_COMMIT(rowtype, ierr)
  call MPI_TYPE_CONTIGUOUS(nx, MPI_DOUBLE_PRECISION, coltype, ierr)
  call MPI_TYPE_COMMIT(coltype, ierr)

  do it = 1, iters
     call MPI_SENDRECV(u(1, 1), 1, rowtype, up, 1, u(nx + 1, 1), 1, rowtype, down, 1, comm2d, MPI_STATUS_IGNORE, ierr)
     call MPI_SENDRECV(u(nx, 1), 1, rowtype, down, 2, u(0, 1), 1, rowtype, up, 2, comm2d, MPI_STATUS_IGNORE, ierr)
     call MPI_SENDRECV(u(1, 1), 1, coltype, left, 3, u(1, ny + 1), 1, coltype, right, 3, comm2d, MPI_STATUS_IGNORE, ierr)
     call MPI_SENDRECV(u(1, ny), 1, coltype, right, 4, u(1, 0), 1, coltype, left, 4, comm2d, MPI_STATUS_IGNORE, ierr)
     do j = 1, ny
        do i = 1, nx
           unew(i, j) = 0.25d0 * ((u(i - 1, j) + u(i + 1, j)) + (u(i, j - 1) + u(i, j + 1)))
        end do
     end do
     u(1:nx, 1:ny) = unew(1:nx, 1:ny)
  end do

  lsum = sum(u(1:nx, 1:ny))
  call MPI_ALLREDUCE(lsum, gsum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm2d, ierr)
  do p = 1, 3
     probe(p) = -huge(1d0)
     if (pi(p) > i0 .and. pi(p) <= i0 + nx .and. pj(p) > j0 .and. pj(p) <= j0 + ny) &
          probe(p) = u(pi(p) - i0, pj(p) - j0)
  end do
  call MPI_REDUCE(probe, gprobe, 3, MPI_DOUBLE_PRECISION, MPI_MAX, 0, comm2d, ierr)
  if (rank == 0) then
     do p = 1, 3
        write (*, '(A, I3, I3, ES26.17)') 'probe', pi(p), pj(p), gprobe(p)
     end do
     write (*, '(A, ES26.17)') 'sum', gsum
  end if
  call MPI_TYPE_FREE(rowtype, ierr)
  call MPI_TYPE_FREE(coltype, ierr)
  call MPI_COMM_FREE(comm2d, ierr)
  call MPI_FINALIZE(ierr)
end program fortran_jacobi
