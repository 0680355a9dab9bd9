! NAS-style FT kernel, written for Kumi from the NPB specification (not NASA's code).
! The 3-D heat equation solved by FFT: u0 is nx*ny*nz complex numbers from NPB's generator
! (x <- 5^13 x mod 2^46, seed 314159265; real then imaginary part, x fastest); its forward
! 3-D FFT is multiplied, once per iteration t = 1..6, by exp(-4 alpha pi^2 |k|^2) (alpha =
! 1e-6, k the signed frequency), transformed back, and the checksum is the sum of u(q mod nx,
! 3q mod ny, 5q mod nz) for q = 1..1024 (of the normalised inverse transform).
! The grid is split in z planes (layout A: x and y transforms local); the transpose to y rows
! (layout B: z transforms local) is one MPI_Alltoall.  Radix-2 FFTs, done on many lines at
! once.  nz and ny must be multiples of the number of ranks.
!   ft [CLASS]     CLASS S (64^3), W (128x128x32), A (256x256x128); 6 iterations.  Default A.
! Verification: every checksum equals the one the NPB specification publishes for the class
! to 1e-12; the "result:" line must be the same for every build.
program ft
  use mpi
  implicit none
  integer, parameter :: niter = 6
  real(8), parameter :: alpha = 1d-6, pi = 3.141592653589793238d0
  integer :: nx, ny, nz, nyl, nzl, ierr, rank, np, it, liblen, blk
  complex(8), allocatable :: u0(:,:,:), u1(:,:,:), u2(:,:,:), w(:,:,:), sbuf(:), rbuf(:), pl(:,:)
  real(8), allocatable :: ex(:,:,:)
  complex(8) :: chk(niter), ref(niter)
  real(8) :: t0, t1, err
  character(len=8) :: cls
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
  logical :: ok

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  cls = 'A'
  if (command_argument_count() >= 1) call get_command_argument(1, cls)
  select case (cls(1:1))
  case ('S')
    nx = 64; ny = 64; nz = 64
    ref = (/ (554.6087004964d0, 484.5363331978d0), (554.6385409189d0, 486.5304269511d0), &
             (554.6148406171d0, 488.3910722336d0), (554.5423607415d0, 490.1273169046d0), &
             (554.4255039624d0, 491.7475857993d0), (554.2683411902d0, 493.2597244941d0) /)
  case ('W')
    nx = 128; ny = 128; nz = 32
    ref = (/ (567.3612178944d0, 529.3246849175d0), (563.1436885271d0, 528.2149986629d0), &
             (559.4024089970d0, 527.0996558037d0), (556.0698047020d0, 526.0027904925d0), &
             (553.0898991250d0, 524.9400845633d0), (550.4159734538d0, 523.9212247086d0) /)
  case ('A')
    nx = 256; ny = 256; nz = 128
    ref = (/ (504.6735008193d0, 511.4047905510d0), (505.9412319734d0, 509.8809666433d0), &
             (506.9376896287d0, 509.8144042213d0), (507.7892868474d0, 510.1336130759d0), &
             (508.5233095391d0, 510.4914655194d0), (509.1487099959d0, 510.7917842803d0) /)
  case default
    if (rank == 0) print '(a)', 'ft: class must be S, W or A'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end select
  if (mod(ny, np) /= 0 .or. mod(nz, np) /= 0) then
    if (rank == 0) print '(a)', 'ft: the number of ranks must divide ny and nz'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  nyl = ny / np
  nzl = nz / np
  blk = nx * nyl * nzl
  allocate(u0(nx, ny, nzl), u2(nx, ny, nzl), u1(nx, nyl, nz), w(nx, nyl, nz), ex(nx, nyl, nz))
  allocate(sbuf(blk * np), rbuf(blk * np), pl(ny, nx))

  ! one untimed forward transform (warms up the code and the pages), as the benchmark does
  call init_u0()
  call fft3_forward(u0, u1)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  t0 = MPI_Wtime()
  call init_u0()
  call init_ex()
  call fft3_forward(u0, u1)
  do it = 1, niter
    u1 = u1 * ex
    w = u1
    call fft3_inverse(w, u2)
    chk(it) = checksum(u2)
  end do
  t1 = MPI_Wtime() - t0
  call MPI_Allreduce(MPI_IN_PLACE, t1, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  ok = .true.
  do it = 1, niter
    err = abs(chk(it) - ref(it)) / abs(ref(it))
    if (.not. (err <= 1d-12)) ok = .false.
  end do
  if (rank == 0) then
    do it = 1, niter
      print '(a,i3,a,2f22.12)', ' it', it, '  checksum', chk(it)
    end do
    print '(a,a,a,i0,a,f12.6,a,a)', 'kernel=FT class=', trim(cls), ' ranks=', np, ' time=', t1, &
      ' verified=', merge('yes', 'no ', ok)
    call MPI_Get_library_version(lib, liblen, ierr)
    print '(a,a)', 'library: ', lib(1:min(liblen, 40))
    print '(a,2es25.17,a,2es25.17)', 'result: checksum1=', chk(1), ' checksum6=', chk(niter)
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

  ! this rank's planes of u0: the generator's stream from number 2 nx ny (first plane - 1) on
  subroutine init_u0()
    integer(8), parameter :: am = 1220703125_8
    integer(8) :: x
    integer :: i, j, k
    real(8) :: re, im
    x = mulmod46(314159265_8, powmod46(am, 2_8 * nx * ny * (int(rank, 8) * nzl)))
    do k = 1, nzl
      do j = 1, ny
        do i = 1, nx
          x = mulmod46(am, x); re = real(x, 8) * 2d0**(-46)
          x = mulmod46(am, x); im = real(x, 8) * 2d0**(-46)
          u0(i, j, k) = cmplx(re, im, 8)
        end do
      end do
    end do
  end subroutine

  integer function freq(i, n)
    integer, intent(in) :: i, n
    freq = mod(i - 1 + n / 2, n) - n / 2
  end function

  subroutine init_ex()
    integer :: i, j, k
    real(8) :: ap
    ap = -4d0 * alpha * pi * pi
    do k = 1, nz
      do j = 1, nyl
        do i = 1, nx
          ex(i, j, k) = exp(ap * real(freq(i, nx)**2 + freq(rank * nyl + j, ny)**2 + freq(k, nz)**2, 8))
        end do
      end do
    end do
  end subroutine

  ! radix-2 transform of x(r, :) for every r (length n, a power of two), sign sgn
  subroutine fft_multi(x, m, n, sgn)
    integer, intent(in) :: m, n, sgn
    complex(8), intent(inout) :: x(m, 0:n - 1)
    complex(8) :: tmp(m), wt, t
    complex(8), allocatable :: tw(:)
    integer :: i, j, k, len, half, st, q, r
    allocate(tw(0:max(n / 2 - 1, 0)))
    do q = 0, n / 2 - 1
      tw(q) = cmplx(cos(2d0 * pi * q / n), sgn * sin(2d0 * pi * q / n), 8)
    end do
    j = 0
    do i = 0, n - 2
      if (i < j) then
        tmp = x(:, i); x(:, i) = x(:, j); x(:, j) = tmp
      end if
      k = n / 2
      do while (k <= j)
        j = j - k
        k = k / 2
      end do
      j = j + k
    end do
    len = 2
    do while (len <= n)
      half = len / 2
      do q = 0, half - 1
        wt = tw(q * (n / len))
        do st = 0, n - 1, len
          do r = 1, m
            t = wt * x(r, st + q + half)
            x(r, st + q + half) = x(r, st + q) - t
            x(r, st + q) = x(r, st + q) + t
          end do
        end do
      end do
      len = 2 * len
    end do
  end subroutine

  ! x and y transforms of every local z plane of a(nx, ny, nzl)
  subroutine fft_xy(a, sgn)
    complex(8), intent(inout) :: a(nx, ny, nzl)
    integer, intent(in) :: sgn
    integer :: k
    do k = 1, nzl
      pl = transpose(a(:, :, k))
      call fft_multi(pl, ny, nx, sgn)
      a(:, :, k) = transpose(pl)
      call fft_multi(a(:, :, k), nx, ny, sgn)
    end do
  end subroutine

  ! layout A (nx, ny, nzl) -> layout B (nx, nyl, nz), and back
  subroutine transpose_ab(a, b)
    complex(8), intent(in) :: a(nx, ny, nzl)
    complex(8), intent(out) :: b(nx, nyl, nz)
    integer :: d, k, j, off
    do d = 0, np - 1
      do k = 1, nzl
        do j = 1, nyl
          off = d * blk + ((k - 1) * nyl + (j - 1)) * nx
          sbuf(off + 1:off + nx) = a(:, d * nyl + j, k)
        end do
      end do
    end do
    call MPI_Alltoall(sbuf, blk, MPI_DOUBLE_COMPLEX, rbuf, blk, MPI_DOUBLE_COMPLEX, MPI_COMM_WORLD, ierr)
    do d = 0, np - 1
      do k = 1, nzl
        do j = 1, nyl
          off = d * blk + ((k - 1) * nyl + (j - 1)) * nx
          b(:, j, d * nzl + k) = rbuf(off + 1:off + nx)
        end do
      end do
    end do
  end subroutine

  subroutine transpose_ba(b, a)
    complex(8), intent(in) :: b(nx, nyl, nz)
    complex(8), intent(out) :: a(nx, ny, nzl)
    integer :: d, k, j, off
    do d = 0, np - 1
      do k = 1, nzl
        do j = 1, nyl
          off = d * blk + ((k - 1) * nyl + (j - 1)) * nx
          sbuf(off + 1:off + nx) = b(:, j, d * nzl + k)
        end do
      end do
    end do
    call MPI_Alltoall(sbuf, blk, MPI_DOUBLE_COMPLEX, rbuf, blk, MPI_DOUBLE_COMPLEX, MPI_COMM_WORLD, ierr)
    do d = 0, np - 1
      do k = 1, nzl
        do j = 1, nyl
          off = d * blk + ((k - 1) * nyl + (j - 1)) * nx
          a(:, d * nyl + j, k) = rbuf(off + 1:off + nx)
        end do
      end do
    end do
  end subroutine

  subroutine fft3_forward(a, b)
    complex(8), intent(inout) :: a(nx, ny, nzl)
    complex(8), intent(out) :: b(nx, nyl, nz)
    call fft_xy(a, -1)
    call transpose_ab(a, b)
    call fft_multi(b, nx * nyl, nz, -1)
  end subroutine

  ! normalised inverse; b is overwritten
  subroutine fft3_inverse(b, a)
    complex(8), intent(inout) :: b(nx, nyl, nz)
    complex(8), intent(out) :: a(nx, ny, nzl)
    call fft_multi(b, nx * nyl, nz, 1)
    call transpose_ba(b, a)
    call fft_xy(a, 1)
    a = a * (1d0 / (real(nx, 8) * ny * nz))
  end subroutine

  complex(8) function checksum(a)
    complex(8), intent(in) :: a(nx, ny, nzl)
    integer :: q, k
    checksum = (0d0, 0d0)
    do q = 1, 1024
      k = mod(5 * q, nz) + 1 - rank * nzl
      if (k >= 1 .and. k <= nzl) checksum = checksum + a(mod(q, nx) + 1, mod(3 * q, ny) + 1, k)
    end do
    call MPI_Allreduce(MPI_IN_PLACE, checksum, 1, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  end function

end program ft
