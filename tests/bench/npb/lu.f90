! NAS-style LU kernel, written for Kumi from the NPB specification's description of LU (not
! NASA's code): symmetric successive over-relaxation (SSOR) on an n^3 grid of 5-component
! unknowns, parallelised as NPB's LU is, by a 2-D (x, y) split of the grid with a pipelined
! wavefront: in the lower (forward) sweep a rank takes, plane by plane in z, the updated
! boundary values of plane k from its west and south neighbours, updates plane k and sends
! its own east and north boundaries on (many small messages), and the upper (backward) sweep
! runs the other way; a halo exchange (MPI_Sendrecv) precedes each sweep.
! The system is a simpler stand-in for LU's Navier-Stokes operator, a linear elliptic one:
! D u(p) - sum of u at the six neighbours of p = f(p), D a fixed 5x5 coupling block (diagonal
! 6.05..6.25, 0.01 between neighbouring components; strictly diagonally dominant), u = 0 outside
! the grid, f smooth; relaxation factor 1.2.  The order of the updates is that of the
! sequential lexicographic sweep, so the result does not depend on the number of ranks (the
! norms only through the rounding of their per-rank partial sums).
!   lu [CLASS [ITERATIONS]]   CLASS S (12^3, 50 iterations), W (33^3, 300), A (64^3, 250).
!                             Default A.  ITERATIONS overrides the class's count.
! Verification: the five residual norms sqrt(sum r^2 / n^3) all fall (final below the
! initial); the "result:" line must be the same for every build.
program lu
  use mpi
  implicit none
  real(8), parameter :: omega = 1.2d0
  integer :: n, itmax, ierr, rank, np, px, py, ix, iy, west, east, south, north
  integer :: i0, i1, j0, j1, nxl, nyl, it, m, liblen
  real(8), allocatable :: u(:,:,:,:), f(:,:,:,:), sb(:), rb(:), sendw(:,:), sends(:,:)
  real(8) :: d(5, 5), dinv(5, 5), rn0(5), rn1(5), t0, t1
  character(len=16) :: cls, arg
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
  logical :: ok

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  cls = 'A'
  if (command_argument_count() >= 1) call get_command_argument(1, cls)
  select case (cls(1:1))
  case ('S'); n = 12; itmax = 50
  case ('W'); n = 33; itmax = 300
  case ('A'); n = 64; itmax = 250
  case default
    if (rank == 0) print '(a)', 'lu: class must be S, W or A'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end select
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) itmax
  end if
  ! px * py ranks, py the largest divisor of np not above sqrt(np)
  py = int(sqrt(real(np, 8)) + 1d-9)
  do while (mod(np, py) /= 0)
    py = py - 1
  end do
  px = np / py
  if (n / px < 1 .or. n / py < 1) then
    if (rank == 0) print '(a)', 'lu: too many ranks for the grid'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  ix = mod(rank, px)
  iy = rank / px
  west = MPI_PROC_NULL; east = MPI_PROC_NULL; south = MPI_PROC_NULL; north = MPI_PROC_NULL
  if (ix > 0) west = rank - 1
  if (ix < px - 1) east = rank + 1
  if (iy > 0) south = rank - px
  if (iy < py - 1) north = rank + px
  i0 = ix * n / px + 1; i1 = (ix + 1) * n / px
  j0 = iy * n / py + 1; j1 = (iy + 1) * n / py
  nxl = i1 - i0 + 1
  nyl = j1 - j0 + 1
  allocate(u(5, 0:nxl + 1, 0:nyl + 1, 0:n + 1), f(5, nxl, nyl, n))
  allocate(sb(5 * max(nxl, nyl) * n), rb(5 * max(nxl, nyl) * n), sendw(5 * nyl, n), sends(5 * nxl, n))
  call setup()

  u = 0d0
  call norms(rn0)
  ! one untimed iteration, then start again (as the benchmark does)
  call ssor_iteration()
  u = 0d0
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  t0 = MPI_Wtime()
  do it = 1, itmax
    call ssor_iteration()
  end do
  t1 = MPI_Wtime() - t0
  call norms(rn1)
  call MPI_Allreduce(MPI_IN_PLACE, t1, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  ok = .true.
  do m = 1, 5
    if (.not. (rn1(m) < rn0(m))) ok = .false.
  end do
  if (rank == 0) then
    print '(a,i0,a,i0,a,i0,a,i0,a)', ' grid ', n, '^3, ', itmax, ' iterations, ', px, 'x', py, ' ranks'
    do m = 1, 5
      print '(a,i2,a,es20.12,a,es20.12)', ' component', m, '  residual norm', rn0(m), ' ->', rn1(m)
    end do
    write (arg, '(i0)') itmax
    print '(a,a,a,i0,a,f12.6,a,a,a,a)', 'kernel=LU class=', trim(cls), ' ranks=', np, ' time=', t1, &
      ' verified=', merge('yes', 'no ', ok), ' iterations=', trim(arg)
    call MPI_Get_library_version(lib, liblen, ierr)
    print '(a,a)', 'library: ', lib(1:min(liblen, 40))
    print '(a,5es25.17)', 'result: norms=', rn1
  end if
  call MPI_Finalize(ierr)
  if (.not. ok) stop 1

contains

  subroutine setup()
    integer :: i, j, k, l, c, q
    real(8) :: x, y, z, a(5, 10), piv
    d = 0d0
    do c = 1, 5
      d(c, c) = 6d0 + 0.05d0 * c
      if (c > 1) d(c, c - 1) = 0.01d0
      if (c < 5) d(c, c + 1) = 0.01d0
    end do
    ! dinv by Gauss-Jordan elimination (D is diagonally dominant: no pivoting needed)
    a = 0d0
    a(:, 1:5) = d
    do c = 1, 5
      a(c, 5 + c) = 1d0
    end do
    do c = 1, 5
      piv = a(c, c)
      a(c, :) = a(c, :) / piv
      do q = 1, 5
        if (q /= c) a(q, :) = a(q, :) - a(q, c) * a(c, :)
      end do
    end do
    dinv = a(:, 6:10)
    do k = 1, n
      z = real(k, 8) / (n + 1)
      do j = 1, nyl
        y = real(j0 + j - 1, 8) / (n + 1)
        do i = 1, nxl
          x = real(i0 + i - 1, 8) / (n + 1)
          do l = 1, 5
            f(l, i, j, k) = l * (1d0 + x * (1d0 - x) + 2d0 * y * (1d0 - y) + 3d0 * z * (1d0 - z)) &
                          + sin(3d0 * l * x) * cos(2d0 * y + l * z)
          end do
        end do
      end do
    end do
  end subroutine

  ! u(p) <- (1 - omega) u(p) + omega D^-1 (f(p) + sum of the six neighbours)
  subroutine relax(i, j, k)
    integer, intent(in) :: i, j, k
    real(8) :: s(5)
    s = f(:, i, j, k) + u(:, i - 1, j, k) + u(:, i + 1, j, k) + u(:, i, j - 1, k) + u(:, i, j + 1, k) &
      + u(:, i, j, k - 1) + u(:, i, j, k + 1)
    u(:, i, j, k) = (1d0 - omega) * u(:, i, j, k) + omega * matmul(dinv, s)
  end subroutine

  ! the halo: the boundary columns of every plane from the four neighbours
  subroutine exchange()
    integer :: cx, cy
    cx = 5 * nyl * n
    cy = 5 * nxl * n
    sb(1:cx) = reshape(u(:, nxl, 1:nyl, 1:n), (/ cx /))
    call MPI_Sendrecv(sb, cx, MPI_DOUBLE_PRECISION, east, 11, rb, cx, MPI_DOUBLE_PRECISION, west, 11, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    if (west /= MPI_PROC_NULL) u(:, 0, 1:nyl, 1:n) = reshape(rb(1:cx), (/ 5, nyl, n /))
    sb(1:cx) = reshape(u(:, 1, 1:nyl, 1:n), (/ cx /))
    call MPI_Sendrecv(sb, cx, MPI_DOUBLE_PRECISION, west, 12, rb, cx, MPI_DOUBLE_PRECISION, east, 12, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    if (east /= MPI_PROC_NULL) u(:, nxl + 1, 1:nyl, 1:n) = reshape(rb(1:cx), (/ 5, nyl, n /))
    sb(1:cy) = reshape(u(:, 1:nxl, nyl, 1:n), (/ cy /))
    call MPI_Sendrecv(sb, cy, MPI_DOUBLE_PRECISION, north, 13, rb, cy, MPI_DOUBLE_PRECISION, south, 13, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    if (south /= MPI_PROC_NULL) u(:, 1:nxl, 0, 1:n) = reshape(rb(1:cy), (/ 5, nxl, n /))
    sb(1:cy) = reshape(u(:, 1:nxl, 1, 1:n), (/ cy /))
    call MPI_Sendrecv(sb, cy, MPI_DOUBLE_PRECISION, south, 14, rb, cy, MPI_DOUBLE_PRECISION, north, 14, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    if (north /= MPI_PROC_NULL) u(:, 1:nxl, nyl + 1, 1:n) = reshape(rb(1:cy), (/ 5, nxl, n /))
  end subroutine

  subroutine ssor_iteration()
    integer :: i, j, k, nreq, req(4 * n)
    real(8) :: bw(5 * nyl), bs(5 * nxl)
    ! lower sweep: from the south-west corner, planes k = 1..n
    call exchange()
    nreq = 0
    do k = 1, n
      if (west /= MPI_PROC_NULL) then
        call MPI_Recv(bw, 5 * nyl, MPI_DOUBLE_PRECISION, west, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        u(:, 0, 1:nyl, k) = reshape(bw, (/ 5, nyl /))
      end if
      if (south /= MPI_PROC_NULL) then
        call MPI_Recv(bs, 5 * nxl, MPI_DOUBLE_PRECISION, south, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        u(:, 1:nxl, 0, k) = reshape(bs, (/ 5, nxl /))
      end if
      do j = 1, nyl
        do i = 1, nxl
          call relax(i, j, k)
        end do
      end do
      if (east /= MPI_PROC_NULL) then
        sendw(:, k) = reshape(u(:, nxl, 1:nyl, k), (/ 5 * nyl /))
        nreq = nreq + 1
        call MPI_Isend(sendw(1, k), 5 * nyl, MPI_DOUBLE_PRECISION, east, k, MPI_COMM_WORLD, req(nreq), ierr)
      end if
      if (north /= MPI_PROC_NULL) then
        sends(:, k) = reshape(u(:, 1:nxl, nyl, k), (/ 5 * nxl /))
        nreq = nreq + 1
        call MPI_Isend(sends(1, k), 5 * nxl, MPI_DOUBLE_PRECISION, north, k, MPI_COMM_WORLD, req(nreq), ierr)
      end if
    end do
    call MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE, ierr)
    ! upper sweep: from the north-east corner, planes k = n..1
    call exchange()
    nreq = 0
    do k = n, 1, -1
      if (east /= MPI_PROC_NULL) then
        call MPI_Recv(bw, 5 * nyl, MPI_DOUBLE_PRECISION, east, n + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        u(:, nxl + 1, 1:nyl, k) = reshape(bw, (/ 5, nyl /))
      end if
      if (north /= MPI_PROC_NULL) then
        call MPI_Recv(bs, 5 * nxl, MPI_DOUBLE_PRECISION, north, n + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        u(:, 1:nxl, nyl + 1, k) = reshape(bs, (/ 5, nxl /))
      end if
      do j = nyl, 1, -1
        do i = nxl, 1, -1
          call relax(i, j, k)
        end do
      end do
      if (west /= MPI_PROC_NULL) then
        sendw(:, k) = reshape(u(:, 1, 1:nyl, k), (/ 5 * nyl /))
        nreq = nreq + 1
        call MPI_Isend(sendw(1, k), 5 * nyl, MPI_DOUBLE_PRECISION, west, n + k, MPI_COMM_WORLD, req(nreq), ierr)
      end if
      if (south /= MPI_PROC_NULL) then
        sends(:, k) = reshape(u(:, 1:nxl, 1, k), (/ 5 * nxl /))
        nreq = nreq + 1
        call MPI_Isend(sends(1, k), 5 * nxl, MPI_DOUBLE_PRECISION, south, n + k, MPI_COMM_WORLD, req(nreq), ierr)
      end if
    end do
    call MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE, ierr)
  end subroutine

  ! sqrt(sum over the grid of r^2 / n^3) per component, r = f - (D u - sum of the neighbours)
  subroutine norms(rn)
    real(8), intent(out) :: rn(5)
    integer :: i, j, k
    real(8) :: r(5)
    call exchange()
    rn = 0d0
    do k = 1, n
      do j = 1, nyl
        do i = 1, nxl
          r = f(:, i, j, k) - matmul(d, u(:, i, j, k)) + u(:, i - 1, j, k) + u(:, i + 1, j, k) &
            + u(:, i, j - 1, k) + u(:, i, j + 1, k) + u(:, i, j, k - 1) + u(:, i, j, k + 1)
          rn = rn + r * r
        end do
      end do
    end do
    call MPI_Allreduce(MPI_IN_PLACE, rn, 5, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    rn = sqrt(rn / (real(n, 8)**3))
  end subroutine

end program lu
