! NAS-style MG kernel, written for Kumi from the NPB specification (not NASA's code).
! V-cycle multigrid for the 3-D Poisson problem on an n^3 periodic grid: v is zero except +1 at
! the ten points with the largest and -1 at the ten with the smallest of n^3 numbers from
! NPB's generator (x <- 5^13 x mod 2^46, seed 314159265, x fastest); u = 0; each iteration
! is r = v - A u followed by one V-cycle (restriction P down to the coarsest grid, smoother S
! there, then up: interpolation Q, residual, smoother), with the specification's 27-point
! operators (coefficients by distance: centre, face, edge, corner):
!   A = (-8/3, 0, 1/6, 1/12)   P = (1/2, 1/4, 1/8, 1/16)   Q = (1, 1/2, 1/4, 1/8)
!   S = (-3/8, 1/32, -1/64, 0)
! The grid is split in slabs of z planes (n divisible by the number of ranks); ghost planes
! come from the neighbours by MPI_Sendrecv.  The coarse grids with fewer than two planes per
! rank are held whole by every rank (MPI_Allgather after the restriction), so the V-cycle
! goes down to 2^3 as NPB's does and the norm does not depend on the number of ranks.
!   mg [CLASS]     CLASS S (32^3), W (128^3), A (256^3); 4 iterations.  Default A.
! Verification: the residual norm sqrt(sum r^2 / n^3) falls in every iteration and by a
! factor of at least 10 overall, and equals the value the NPB specification publishes for
! the class to 1e-8 (S 0.5307707005734e-04, W 0.6467329375339e-05, A 0.2433365309069e-05);
! the "result:" line must be the same for every build.
program mg
  use mpi
  implicit none
  type level
    integer :: n, nz, z0              ! size, planes held here, global index of plane 1 minus 1
    logical :: rep                    ! replicated: every rank holds the whole grid
    real(8), allocatable :: u(:,:,:), r(:,:,:)
  end type
  type(level), allocatable :: g(:)
  real(8), allocatable :: v(:,:,:)
  real(8) :: a(0:3), c(0:3), p(0:3), rnm(0:20), t0, t1, rref
  integer :: n, nit, ierr, rank, np, lt, lb, k, it, up, down, liblen
  character(len=8) :: cls
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
  logical :: ok

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  cls = 'A'
  if (command_argument_count() >= 1) call get_command_argument(1, cls)
  nit = 4
  select case (cls(1:1))
  case ('S'); n = 32; rref = 0.5307707005734d-04
  case ('W'); n = 128; rref = 0.6467329375339d-05
  case ('A'); n = 256; rref = 0.2433365309069d-05
  case default
    if (rank == 0) print '(a)', 'mg: class must be S, W or A'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end select
  if (mod(n, np) /= 0 .or. n / np < 2) then
    if (rank == 0) print '(a,i0,a)', 'mg: the number of ranks must divide ', n, ' (at least two planes each)'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  a = (/ -8d0 / 3d0, 0d0, 1d0 / 6d0, 1d0 / 12d0 /)
  c = (/ -3d0 / 8d0, 1d0 / 32d0, -1d0 / 64d0, 0d0 /)
  p = (/ 0.5d0, 0.25d0, 0.125d0, 0.0625d0 /)
  up = mod(rank + 1, np)
  down = mod(rank - 1 + np, np)
  lt = nint(log(real(n, 8)) / log(2d0))
  lb = 1
  allocate(g(lb:lt))
  do k = lb, lt
    g(k)%n = 2**k
    g(k)%rep = 2**k / np < 2
    if (g(k)%rep) then
      g(k)%nz = 2**k; g(k)%z0 = 0
    else
      g(k)%nz = 2**k / np; g(k)%z0 = rank * g(k)%nz
    end if
    allocate(g(k)%u(0:g(k)%n + 1, 0:g(k)%n + 1, 0:g(k)%nz + 1))
    allocate(g(k)%r(0:g(k)%n + 1, 0:g(k)%n + 1, 0:g(k)%nz + 1))
  end do
  allocate(v(0:n + 1, 0:n + 1, 0:n / np + 1))
  call zran3()

  ! one untimed V-cycle, then start again (as the benchmark does)
  g(lt)%u = 0d0
  call resid(g(lt)%u, v, g(lt)%r, n, n / np, .false.)
  call mg3p()
  g(lt)%u = 0d0
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  t0 = MPI_Wtime()
  call resid(g(lt)%u, v, g(lt)%r, n, n / np, .false.)
  rnm(0) = norm2r(g(lt)%r, n, n / np)
  do it = 1, nit
    call mg3p()
    call resid(g(lt)%u, v, g(lt)%r, n, n / np, .false.)
    rnm(it) = norm2r(g(lt)%r, n, n / np)
  end do
  t1 = MPI_Wtime() - t0
  call MPI_Allreduce(MPI_IN_PLACE, t1, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  ok = rnm(nit) * 10d0 < rnm(0) .and. abs(rnm(nit) - rref) <= 1d-8 * rref
  do it = 1, nit
    if (rnm(it) >= rnm(it - 1) .or. rnm(it) /= rnm(it)) ok = .false.
  end do
  if (rank == 0) then
    do it = 0, nit
      print '(a,i3,a,es20.12)', ' it', it, '  residual norm', rnm(it)
    end do
    print '(a,a,a,i0,a,f12.6,a,a)', 'kernel=MG class=', trim(cls), ' ranks=', np, ' time=', t1, &
      ' verified=', merge('yes', 'no ', ok)
    call MPI_Get_library_version(lib, liblen, ierr)
    print '(a,a)', 'library: ', lib(1:min(liblen, 40))
    print '(a,i0,a,es25.17,a,es20.13,a)', 'result: grid=', n, '^3 rnm=', rnm(nit), ' (published', rref, ')'
  end if
  call MPI_Finalize(ierr)
  if (.not. ok) stop 1

contains

  function mulmod46(x, y) result(z)
    integer(8), intent(in) :: x, y
    integer(8) :: z, t
    integer(8), parameter :: m23 = 8388607_8, m46 = 70368744177663_8
    t = iand(ishft(x, -23) * iand(y, m23) + iand(x, m23) * ishft(y, -23), m23)
    z = iand(ishft(t, 23) + iand(x, m23) * iand(y, m23), m46)
  end function

  ! b^e mod 2^46
  function powmod46(b, e) result(z)
    integer(8), intent(in) :: b, e
    integer(8) :: z, q, k
    z = 1; q = b; k = e
    do while (k > 0)
      if (iand(k, 1_8) == 1) z = mulmod46(z, q)
      q = mulmod46(q, q)
      k = ishft(k, -1)
    end do
  end function

  ! v: +1 at the ten largest, -1 at the ten smallest random values of the whole grid
  subroutine zran3()
    integer, parameter :: mm = 10
    integer(8), parameter :: am = 1220703125_8
    integer(8) :: x, pos, big_p(mm), small_p(mm)
    real(8) :: r, big(mm), small(mm)
    real(8), allocatable :: allv(:), allp(:)
    integer :: i, j, kk, m, nz
    real(8) :: sendv(4 * mm)
    nz = n / np
    big = -1d0; small = 2d0; big_p = -1; small_p = -1
    x = mulmod46(314159265_8, powmod46(am, int(rank, 8) * nz * n * n))
    v = 0d0
    do kk = 1, nz
      do j = 1, n
        do i = 1, n
          x = mulmod46(am, x)
          r = real(x, 8) * 2d0**(-46)
          pos = (int(rank * nz + kk - 1, 8) * n + (j - 1)) * n + (i - 1)
          if (r > big(mm)) then          ! keep big() sorted, largest first
            m = mm
            do while (m > 1)
              if (big(m - 1) >= r) exit
              big(m) = big(m - 1); big_p(m) = big_p(m - 1); m = m - 1
            end do
            big(m) = r; big_p(m) = pos
          end if
          if (r < small(mm)) then        ! small() sorted, smallest first
            m = mm
            do while (m > 1)
              if (small(m - 1) <= r) exit
              small(m) = small(m - 1); small_p(m) = small_p(m - 1); m = m - 1
            end do
            small(m) = r; small_p(m) = pos
          end if
        end do
      end do
    end do
    sendv(1:mm) = big; sendv(mm + 1:2 * mm) = real(big_p, 8)
    sendv(2 * mm + 1:3 * mm) = small; sendv(3 * mm + 1:4 * mm) = real(small_p, 8)
    allocate(allv(4 * mm * np), allp(1))
    call MPI_Allgather(sendv, 4 * mm, MPI_DOUBLE_PRECISION, allv, 4 * mm, MPI_DOUBLE_PRECISION, &
                       MPI_COMM_WORLD, ierr)
    ! the global ten of each: repeatedly take the best remaining candidate
    call mark(allv, 0, 1d0, nz)
    call mark(allv, 2 * mm, -1d0, nz)
    call comm3(v, n, nz, .false.)
  end subroutine

  subroutine mark(cand, off, sgn, nz)
    real(8), intent(inout) :: cand(:)
    integer, intent(in) :: off, nz
    integer :: i, j, kk
    integer, parameter :: mm = 10
    real(8), intent(in) :: sgn
    integer :: t, q, s, bq
    integer(8) :: gp
    real(8) :: best
    do t = 1, mm
      best = 0d0; bq = -1
      do q = 0, np - 1
        do s = 1, mm
          if (cand(q * 4 * mm + off + mm + s) < 0d0) cycle     ! taken or none
          if (bq < 0 .or. sgn * cand(q * 4 * mm + off + s) > sgn * best) then
            best = cand(q * 4 * mm + off + s); bq = q * 4 * mm + off + s
          end if
        end do
      end do
      gp = int(cand(bq + mm), 8)
      cand(bq + mm) = -1d0
      kk = int(gp / (int(n, 8) * n)) - rank * nz + 1
      if (kk >= 1 .and. kk <= nz) then
        j = int(mod(gp / n, int(n, 8))) + 1
        i = int(mod(gp, int(n, 8))) + 1
        v(i, j, kk) = sgn
      end if
    end do
  end subroutine

  ! ghost cells: periodic in x and y, z planes from the neighbouring ranks
  subroutine comm3(w, m, nz, rp)
    integer, intent(in) :: m, nz
    logical, intent(in) :: rp
    real(8), intent(inout) :: w(0:m + 1, 0:m + 1, 0:nz + 1)
    integer :: cnt
    w(0, 1:m, 1:nz) = w(m, 1:m, 1:nz)
    w(m + 1, 1:m, 1:nz) = w(1, 1:m, 1:nz)
    w(:, 0, 1:nz) = w(:, m, 1:nz)
    w(:, m + 1, 1:nz) = w(:, 1, 1:nz)
    if (rp) then
      w(:, :, 0) = w(:, :, nz)
      w(:, :, nz + 1) = w(:, :, 1)
      return
    end if
    cnt = (m + 2) * (m + 2)
    call MPI_Sendrecv(w(0, 0, nz), cnt, MPI_DOUBLE_PRECISION, up, 1, &
                      w(0, 0, 0), cnt, MPI_DOUBLE_PRECISION, down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Sendrecv(w(0, 0, 1), cnt, MPI_DOUBLE_PRECISION, down, 2, &
                      w(0, 0, nz + 1), cnt, MPI_DOUBLE_PRECISION, up, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end subroutine

  ! out = cf(0) w + cf(1) faces + cf(2) edges + cf(3) corners  (+ add * out if accumulate)
  ! with, per line, u1 = the four face neighbours in y and z, u2 = the four yz-diagonals
  subroutine stencil(w, out, m, nz, cf, mode, rhs, rp)
    integer, intent(in) :: m, nz, mode      ! mode 0: out = S w + out; 1: out = rhs - A w
    logical, intent(in) :: rp
    real(8), intent(in) :: w(0:m + 1, 0:m + 1, 0:nz + 1), cf(0:3)
    real(8), intent(inout) :: out(0:m + 1, 0:m + 1, 0:nz + 1)
    real(8), intent(in) :: rhs(0:m + 1, 0:m + 1, 0:nz + 1)
    real(8) :: u1(0:m + 1), u2(0:m + 1), s
    integer :: i, j, k
    do k = 1, nz
      do j = 1, m
        do i = 0, m + 1
          u1(i) = w(i, j - 1, k) + w(i, j + 1, k) + w(i, j, k - 1) + w(i, j, k + 1)
          u2(i) = w(i, j - 1, k - 1) + w(i, j + 1, k - 1) + w(i, j - 1, k + 1) + w(i, j + 1, k + 1)
        end do
        do i = 1, m
          s = cf(0) * w(i, j, k) + cf(1) * (w(i - 1, j, k) + w(i + 1, j, k) + u1(i)) &
            + cf(2) * (u2(i) + u1(i - 1) + u1(i + 1)) + cf(3) * (u2(i - 1) + u2(i + 1))
          if (mode == 0) then
            out(i, j, k) = out(i, j, k) + s
          else
            out(i, j, k) = rhs(i, j, k) - s
          end if
        end do
      end do
    end do
    call comm3(out, m, nz, rp)
  end subroutine

  subroutine resid(w, rhs, out, m, nz, rp)
    integer, intent(in) :: m, nz
    logical, intent(in) :: rp
    real(8), intent(in) :: w(0:m + 1, 0:m + 1, 0:nz + 1), rhs(0:m + 1, 0:m + 1, 0:nz + 1)
    real(8), intent(inout) :: out(0:m + 1, 0:m + 1, 0:nz + 1)
    call stencil(w, out, m, nz, a, 1, rhs, rp)
  end subroutine

  subroutine psinv(rr, w, m, nz, rp)
    integer, intent(in) :: m, nz
    logical, intent(in) :: rp
    real(8), intent(in) :: rr(0:m + 1, 0:m + 1, 0:nz + 1)
    real(8), intent(inout) :: w(0:m + 1, 0:m + 1, 0:nz + 1)
    call stencil(rr, w, m, nz, c, 0, rr, rp)
  end subroutine

  ! coarse = P fine: coarse point i sits on fine point 2i; a replicated coarse grid made from
  ! a split fine one is completed by MPI_Allgather
  subroutine rprj3(kf)
    integer, intent(in) :: kf
    integer :: m, mc, nzf, nzc, i, j, k, kc0, i2, j2, k2
    real(8), allocatable :: x1(:), y1(:)
    m = g(kf)%n; mc = g(kf - 1)%n; nzf = g(kf)%nz; nzc = g(kf - 1)%nz
    kc0 = g(kf)%z0 / 2 - g(kf - 1)%z0
    allocate(x1(0:m + 1), y1(0:m + 1))
    associate (f => g(kf)%r, co => g(kf - 1)%r)
      do k = 1, nzf / 2
        k2 = 2 * k
        do j = 1, mc
          j2 = 2 * j
          do i2 = 0, m + 1
            x1(i2) = f(i2, j2 - 1, k2) + f(i2, j2 + 1, k2) + f(i2, j2, k2 - 1) + f(i2, j2, k2 + 1)
            y1(i2) = f(i2, j2 - 1, k2 - 1) + f(i2, j2 + 1, k2 - 1) + f(i2, j2 - 1, k2 + 1) + f(i2, j2 + 1, k2 + 1)
          end do
          do i = 1, mc
            i2 = 2 * i
            co(i, j, kc0 + k) = p(0) * f(i2, j2, k2) + p(1) * (f(i2 - 1, j2, k2) + f(i2 + 1, j2, k2) + x1(i2)) &
                        + p(2) * (y1(i2) + x1(i2 - 1) + x1(i2 + 1)) + p(3) * (y1(i2 - 1) + y1(i2 + 1))
          end do
        end do
      end do
      if (g(kf - 1)%rep .and. .not. g(kf)%rep) &
        call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, co(0, 0, 1), (mc + 2) * (mc + 2) * (nzf / 2), &
                           MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
      call comm3(co, mc, nzc, g(kf - 1)%rep)
    end associate
  end subroutine

  ! fine += Q coarse: fine point 2i takes coarse i, fine 2i-1 half of coarse i-1 and i
  subroutine interp(kf)
    integer, intent(in) :: kf
    integer :: m, nzf, i, j, k, ia(2), ja(2), ka(2), ni, nj, nk, a1, b1, c1
    real(8) :: wi, wj, wk, s
    m = g(kf)%n; nzf = g(kf)%nz
    associate (f => g(kf)%u, co => g(kf - 1)%u)
      do k = 1, nzf
        call split(g(kf)%z0 + k, ka, nk, wk)
        ka = ka - g(kf - 1)%z0
        do j = 1, m
          call split(j, ja, nj, wj)
          do i = 1, m
            call split(i, ia, ni, wi)
            s = 0d0
            do c1 = 1, nk
              do b1 = 1, nj
                do a1 = 1, ni
                  s = s + co(ia(a1), ja(b1), ka(c1))
                end do
              end do
            end do
            f(i, j, k) = f(i, j, k) + wi * wj * wk * s
          end do
        end do
      end do
      call comm3(f, m, nzf, g(kf)%rep)
    end associate
  end subroutine

  subroutine split(q, idx, cnt, w)
    integer, intent(in) :: q
    integer, intent(out) :: idx(2), cnt
    real(8), intent(out) :: w
    if (mod(q, 2) == 0) then
      idx(1) = q / 2; idx(2) = idx(1); cnt = 1; w = 1d0
    else
      idx(1) = (q - 1) / 2; idx(2) = (q + 1) / 2; cnt = 2; w = 0.5d0
    end if
  end subroutine

  subroutine mg3p()
    integer :: kk
    do kk = lt, lb + 1, -1
      call rprj3(kk)
    end do
    g(lb)%u = 0d0
    call psinv(g(lb)%r, g(lb)%u, g(lb)%n, g(lb)%nz, g(lb)%rep)
    do kk = lb + 1, lt - 1
      g(kk)%u = 0d0
      call interp(kk)
      call resid(g(kk)%u, g(kk)%r, g(kk)%r, g(kk)%n, g(kk)%nz, g(kk)%rep)
      call psinv(g(kk)%r, g(kk)%u, g(kk)%n, g(kk)%nz, g(kk)%rep)
    end do
    if (lt > lb) then
      call interp(lt)
      call resid(g(lt)%u, v, g(lt)%r, g(lt)%n, g(lt)%nz, .false.)
      call psinv(g(lt)%r, g(lt)%u, g(lt)%n, g(lt)%nz, .false.)
    end if
  end subroutine

  function norm2r(w, m, nz) result(rn)
    integer, intent(in) :: m, nz
    real(8), intent(in) :: w(0:m + 1, 0:m + 1, 0:nz + 1)
    real(8) :: rn
    rn = sum(w(1:m, 1:m, 1:nz)**2)
    call MPI_Allreduce(MPI_IN_PLACE, rn, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    rn = sqrt(rn / (real(m, 8)**3))
  end function

end program mg
