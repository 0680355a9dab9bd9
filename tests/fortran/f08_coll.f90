! Collectives and communicators with `use mpi_f08` (the program of fortran_coll.f):
! bcast, allreduce with MPI_IN_PLACE, reduce, comm_split, a user-defined op in the
! f08 form (MPI_User_function: TYPE(C_PTR) buffers), a derived datatype
! (vector of a column-major matrix's rows), and a nonblocking collective.
module coll_ops
  use mpi_f08
  use, intrinsic :: iso_c_binding
  implicit none
contains
  subroutine mymax(invec, inoutvec, len, datatype)
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: datatype
    integer, pointer :: a(:), b(:)
    integer :: i
    if (datatype /= MPI_INTEGER) then
       print *, 'user op: datatype', datatype%MPI_VAL
       stop 2
    end if
    call c_f_pointer(invec, a, [len])
    call c_f_pointer(inoutvec, b, [len])
    do i = 1, len
       b(i) = max(abs(a(i)), abs(b(i)))
    end do
  end subroutine mymax
end module coll_ops

program f08_coll
  use mpi_f08
  use coll_ops
  implicit none
  integer :: ierr, rank, size, i, j, nrank, nsize, nfail
  type(MPI_Comm) :: newcomm
  type(MPI_Op) :: op
  type(MPI_Datatype) :: rowtype
  type(MPI_Request) :: req
  integer :: ival(4), isum(4), mat(3, 4), row(4)
  integer, asynchronous :: aval(2)
  double precision :: dval(3)
  integer(MPI_ADDRESS_KIND) :: lb, extent

  nfail = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  ! bcast from the last rank
  ival = 0
  if (rank == size - 1) ival = [(40 + i, i = 1, 4)]
  call MPI_Bcast(ival, 4, MPI_INTEGER, size - 1, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. ival(4) == 44, 'bcast')
  ! allreduce in place
  dval = [(rank + i, i = 1, 3)]
  call MPI_Allreduce(MPI_IN_PLACE, dval, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(dval(2) == size * (size - 1) / 2.0d0 + 2 * size, 'allreduce in place')
  ! reduce to rank 0 (large-count specific)
  ival = [(rank * i, i = 1, 4)]
  call MPI_Reduce(ival, isum, 4_MPI_COUNT_KIND, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) call check(isum(3) == 3 * size * (size - 1) / 2, 'reduce')
  ! split into even and odd ranks, reversed order
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, newcomm, ierr)
  call MPI_Comm_size(newcomm, nsize)
  call MPI_Comm_rank(newcomm, nrank)
  call check(newcomm /= MPI_COMM_NULL .and. nsize == (size + 1 - mod(rank, 2)) / 2 &
       .and. nrank == nsize - 1 - rank / 2, 'split')
  call MPI_Allreduce(1, i, 1, MPI_INTEGER, MPI_SUM, newcomm)
  call check(i == nsize, 'allreduce on split')
  call MPI_Comm_free(newcomm)
  call check(newcomm == MPI_COMM_NULL, 'comm_free sets MPI_COMM_NULL')
  ! user op: element-wise maximum of absolute values
  call MPI_Op_create(mymax, .true., op, ierr)
  ival = [((rank + 1) * i, i = 1, 4)]
  if (mod(rank, 2) == 1) ival = -ival
  call MPI_Allreduce(ival, isum, 4, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. isum(2) == 2 * size, 'user op')
  call MPI_Op_free(op)
  call check(op == MPI_OP_NULL, 'op_free sets MPI_OP_NULL')
  ! derived datatype: row 2 of a 3x4 column-major matrix (stride 3) from the last rank
  do j = 1, 4
     do i = 1, 3
        mat(i, j) = rank * 1000 + i * 10 + j
     end do
  end do
  call MPI_Type_vector(4, 1, 3, MPI_INTEGER, rowtype, ierr)
  call MPI_Type_commit(rowtype)
  call MPI_Type_get_extent(rowtype, lb, extent)
  call check(lb == 0 .and. extent == 10 * 4, 'type_get_extent')
  call MPI_Bcast(mat(2, 1), 1, rowtype, size - 1, MPI_COMM_WORLD)
  call check(all(mat(2, :) == [((size - 1) * 1000 + 20 + j, j = 1, 4)]), 'bcast with a vector type')
  if (size > 1) call check(rank == size - 1 .or. mat(1, 2) == rank * 1000 + 12, 'vector type leaves other rows')
  row = 0
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, row, 1, MPI_INTEGER, MPI_COMM_SELF)
  call MPI_Type_free(rowtype)
  call check(rowtype == MPI_DATATYPE_NULL, 'type_free sets MPI_DATATYPE_NULL')
  ! nonblocking collective on an ASYNCHRONOUS buffer
  aval = [rank, 1]
  call MPI_Iallreduce(MPI_IN_PLACE, aval, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  call MPI_F_sync_reg(aval)
  call check(aval(1) == size * (size - 1) / 2 .and. aval(2) == size, 'iallreduce in place')
  call MPI_Finalize(ierr)
  if (nfail > 0) stop 1
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
       print *, 'rank', rank, ': check failed: ', what
       nfail = nfail + 1
    end if
  end subroutine check
end program f08_coll
