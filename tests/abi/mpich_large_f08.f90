! mpich_large_f08: the large-count forms of MPICH 4.0's use mpi_f08 (the generic names resolve to
! mpi_<name>_f08(ts)_large when a count is INTEGER(KIND=MPI_COUNT_KIND)), built with mpif90.mpich
! and run on Kumi through libmpichfort.so.12 (tests/scripts/abi_mpich_f08.sh): a type of 3 * 2^30
! bytes (its size and extent beyond HUGE(0), a status set to that many elements), a ring with
! MPI_COUNT_KIND counts (blocking, nonblocking), Bcast, Allreduce (also MPI_IN_PLACE),
! Alltoallv with MPI_COUNT_KIND counts and MPI_ADDRESS_KIND displacements, Pack / Unpack with
! MPI_COUNT_KIND positions, the persistent MPI_Alltoallw_init with MPI_COUNT_KIND counts (an
! array of datatype handles), MPI_Type_get_envelope / MPI_Type_get_contents with MPI_COUNT_KIND
! counts (a subarray's combiner, order and type).  Prints "mpich_large_f08: N ranks ok".
program mpich_large_f08
  use mpi_f08
  implicit none
  integer :: rank, size, next, prev, i, ierr
  integer(kind=MPI_COUNT_KIND) :: big, sz, lb, ext, got, c1, c8, pos, upos, psz
  integer(kind=MPI_COUNT_KIND), allocatable :: sc(:), rc(:)
  integer(kind=MPI_ADDRESS_KIND), allocatable :: sd(:), rd(:)
  integer, allocatable :: sb(:), rb(:)
  integer :: out(8), in(8), s, r, back(4)
  character :: pbuf(256)
  type(MPI_Datatype) :: t
  type(MPI_Status) :: st
  type(MPI_Request) :: rq(2), prq
  type(MPI_Datatype), allocatable :: wt(:)
  type(MPI_Datatype) :: sa, ctypes(2)
  integer(kind=MPI_COUNT_KIND) :: ni, na, nc, nd, cls(8)
  integer :: comb, cints(16), sizes(2), subs(2), starts(2)
  integer(kind=MPI_ADDRESS_KIND) :: cads(2)
  integer(kind=MPI_ADDRESS_KIND), allocatable :: wsd(:), wrd(:)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  next = mod(rank + 1, size)
  prev = mod(rank + size - 1, size)
  c1 = 1
  c8 = 8

  big = 3_MPI_COUNT_KIND * 2_MPI_COUNT_KIND**30
  call MPI_Type_contiguous(big, MPI_BYTE, t)
  call MPI_Type_commit(t)
  call MPI_Type_size(t, sz)
  if (sz /= big) call fail('MPI_Type_size (large)')
  call MPI_Type_get_extent(t, lb, ext)
  if (lb /= 0 .or. ext /= big) call fail('MPI_Type_get_extent (large)')
  call MPI_Type_free(t)
  call MPI_Status_set_elements_x(st, MPI_BYTE, big)
  call MPI_Get_count(st, MPI_BYTE, got)
  if (got /= big) call fail('MPI_Get_count (large) of a status set to 3 GiB')

  do i = 1, 8
    out(i) = rank * 100 + i
  end do
  in = 0
  call MPI_Sendrecv(out, c8, MPI_INTEGER, next, 7, in, c8, MPI_INTEGER, prev, 7, MPI_COMM_WORLD, st)
  call MPI_Get_count(st, MPI_INTEGER, got)
  if (got /= 8 .or. st%MPI_SOURCE /= prev .or. in(8) /= prev * 100 + 8) call fail('MPI_Sendrecv (large)')
  in = 0
  call MPI_Irecv(in, c8, MPI_INTEGER, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, rq(1))
  call MPI_Isend(out, 5_MPI_COUNT_KIND, MPI_INTEGER, next, 8, MPI_COMM_WORLD, rq(2))
  call MPI_Wait(rq(2), MPI_STATUS_IGNORE)
  call MPI_Wait(rq(1), st)
  call MPI_Get_count(st, MPI_INTEGER, got)
  if (got /= 5 .or. in(5) /= prev * 100 + 5) call fail('MPI_Isend / MPI_Irecv (large)')
  if (rank == 0) then
    call MPI_Send(out, 3_MPI_COUNT_KIND, MPI_INTEGER, 0, 9, MPI_COMM_SELF)
    call MPI_Recv(in, c8, MPI_INTEGER, 0, 9, MPI_COMM_SELF, st)
    call MPI_Get_count(st, MPI_INTEGER, got)
    if (got /= 3) call fail('MPI_Send / MPI_Recv (large) to self')
  end if

  s = 0
  if (rank == 0) s = 4242
  call MPI_Bcast(s, c1, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (s /= 4242) call fail('MPI_Bcast (large)')
  s = rank + 1
  call MPI_Allreduce(s, r, c1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (r /= size * (size + 1) / 2) call fail('MPI_Allreduce (large)')
  s = rank
  call MPI_Allreduce(MPI_IN_PLACE, s, c1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  if (s /= size - 1) call fail('MPI_Allreduce (large) in place')

  allocate(sb(2 * size), rb(2 * size), sc(size), rc(size), sd(size), rd(size))
  do i = 0, size - 1
    sc(i + 1) = 2
    rc(i + 1) = 2
    sd(i + 1) = 2 * (size - 1 - i)
    rd(i + 1) = 2 * i
    sb(2 * (size - 1 - i) + 1) = rank * 1000 + i
    sb(2 * (size - 1 - i) + 2) = -(rank * 1000 + i)
  end do
  call MPI_Alltoallv(sb, sc, sd, MPI_INTEGER, rb, rc, rd, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 0, size - 1
    if (rb(2 * i + 1) /= i * 1000 + rank .or. rb(2 * i + 2) /= -(i * 1000 + rank)) call fail('MPI_Alltoallv (large)')
  end do

  ! the same exchange as a persistent MPI_Alltoallw_init (byte displacements), started twice
  allocate(wt(size), wsd(size), wrd(size))
  wt = MPI_INTEGER
  wsd = sd * 4
  wrd = rd * 4
  call MPI_Alltoallw_init(sb, sc, wsd, wt, rb, rc, wrd, wt, MPI_COMM_WORLD, MPI_INFO_NULL, prq)
  do s = 1, 2
    rb = 0
    call MPI_Start(prq)
    call MPI_Wait(prq, MPI_STATUS_IGNORE)
    do i = 0, size - 1
      if (rb(2 * i + 1) /= i * 1000 + rank .or. rb(2 * i + 2) /= -(i * 1000 + rank)) call fail('MPI_Alltoallw_init (large)')
    end do
  end do
  call MPI_Request_free(prq)

  ! a type's envelope and contents with MPI_COUNT_KIND counts
  sizes = (/ 8, 6 /)
  subs = (/ 4, 3 /)
  starts = (/ 1, 2 /)
  call MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_REAL, sa)
  call MPI_Type_get_envelope(sa, ni, na, nc, nd, comb)
  if (comb /= MPI_COMBINER_SUBARRAY .or. ni /= 8 .or. na /= 0 .or. nc /= 0 .or. nd /= 1) &
    call fail('MPI_Type_get_envelope (large) of a subarray')
  call MPI_Type_get_contents(sa, 16_MPI_COUNT_KIND, 2_MPI_COUNT_KIND, 8_MPI_COUNT_KIND, 2_MPI_COUNT_KIND, &
                             cints, cads, cls, ctypes)
  if (cints(1) /= 2 .or. cints(2) /= 8 .or. cints(8) /= MPI_ORDER_FORTRAN .or. ctypes(1) /= MPI_REAL) &
    call fail('MPI_Type_get_contents (large) of a subarray')
  call MPI_Type_free(sa)

  call MPI_Pack_size(4_MPI_COUNT_KIND, MPI_INTEGER, MPI_COMM_WORLD, psz)
  if (psz < 16) call fail('MPI_Pack_size (large)')
  pos = 0
  call MPI_Pack(out, 4_MPI_COUNT_KIND, MPI_INTEGER, pbuf, 256_MPI_COUNT_KIND, pos, MPI_COMM_WORLD)
  if (pos /= 16) call fail('MPI_Pack (large) position')
  upos = 0
  call MPI_Unpack(pbuf, pos, upos, back, 4_MPI_COUNT_KIND, MPI_INTEGER, MPI_COMM_WORLD)
  if (upos /= 16 .or. back(4) /= out(4)) call fail('MPI_Unpack (large)')

  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) print '(a,i0,a)', 'mpich_large_f08: ', size, ' ranks ok'
  call MPI_Finalize(ierr)

contains

  subroutine fail(msg)
    character(len=*), intent(in) :: msg
    print *, 'FAIL: ', msg
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine
end program
