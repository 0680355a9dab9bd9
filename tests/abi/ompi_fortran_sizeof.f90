! ompi_fortran_sizeof: a `use mpi` program of Open MPI's mpif90 that needs what the MPI_SIZEOF and
! TYPE(C_PTR) forms of Open MPI's `use mpi` call: MPI_SIZEOF on every type gfortran has, scalar and
! arrays (Open MPI's mpi_sizeof_<type>_scalar_ / _r1_ ... procedures, which make the program need
! libmpi_usempif08.so.40), and MPI_ALLOC_MEM, MPI_WIN_ALLOCATE, MPI_WIN_ALLOCATE_SHARED and
! MPI_WIN_SHARED_QUERY with a TYPE(C_PTR) baseptr (mpi_alloc_mem_cptr_, ...), the memory used
! through C_F_POINTER and by RMA; tests/scripts/abi_ompi_fortran.sh runs it on Kumi.
program ompi_fortran_sizeof
  use mpi
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: ierr, rank, nproc, bad, s, win, du, i, all
  character :: ch, cha(3)
  integer(kind=1) :: i1, i1a(2, 2)
  integer(kind=2) :: i2
  integer :: i4, i4a(4)
  integer(kind=8) :: i8a(2, 2, 2)
  logical :: l, la(5)
  real :: r4a(3)
  double precision :: r8
  real(kind=16) :: r16
  complex :: c8a(2)
  complex(kind=8) :: c16
  complex(kind=16) :: c32
  integer(kind=MPI_ADDRESS_KIND) :: sz, qsz
  type(c_ptr) :: base, b2, b3
  integer, pointer :: a(:), w(:), q(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  bad = 0
  call MPI_Sizeof(ch, s, ierr); call expect('character', s, 1)
  call MPI_Sizeof(cha, s, ierr); call expect('character(3)', s, 1)
  call MPI_Sizeof(i1, s, ierr); call expect('integer(1)', s, 1)
  call MPI_Sizeof(i1a, s, ierr); call expect('integer(1) rank 2', s, 1)
  call MPI_Sizeof(i2, s, ierr); call expect('integer(2)', s, 2)
  call MPI_Sizeof(i4, s, ierr); call expect('integer', s, 4)
  call MPI_Sizeof(i4a, s, ierr); call expect('integer(4)', s, 4)
  call MPI_Sizeof(i8a, s, ierr); call expect('integer(8) rank 3', s, 8)
  call MPI_Sizeof(l, s, ierr); call expect('logical', s, 4)
  call MPI_Sizeof(la, s, ierr); call expect('logical(5)', s, 4)
  call MPI_Sizeof(r4a, s, ierr); call expect('real(3)', s, 4)
  call MPI_Sizeof(r8, s, ierr); call expect('double precision', s, 8)
  call MPI_Sizeof(r16, s, ierr); call expect('real(16)', s, 16)
  call MPI_Sizeof(c8a, s, ierr); call expect('complex(2)', s, 8)
  call MPI_Sizeof(c16, s, ierr); call expect('complex(8)', s, 16)
  call MPI_Sizeof(c32, s, ierr); call expect('complex(16)', s, 32)

  ! TYPE(C_PTR) baseptrs
  sz = 40
  call MPI_Alloc_mem(sz, MPI_INFO_NULL, base, ierr)
  if (ierr /= MPI_SUCCESS .or. .not. c_associated(base)) call fail('MPI_Alloc_mem (C_PTR)')
  call c_f_pointer(base, a, [10])
  a = 7
  if (sum(a) /= 70) call fail('memory of MPI_Alloc_mem')
  call MPI_Free_mem(a, ierr)
  call MPI_Win_allocate(sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, b2, win, ierr)
  if (ierr /= MPI_SUCCESS .or. .not. c_associated(b2)) call fail('MPI_Win_allocate (C_PTR)')
  call c_f_pointer(b2, w, [10])
  w = -1
  call MPI_Win_fence(0, win, ierr)
  call MPI_Put(rank, 1, MPI_INTEGER, mod(rank + 1, nproc), int(0, MPI_ADDRESS_KIND), 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  if (w(1) /= mod(rank + nproc - 1, nproc)) call fail('MPI_Put into the C_PTR window')
  call MPI_Win_free(win, ierr)
  call MPI_Win_allocate_shared(sz, 4, MPI_INFO_NULL, MPI_COMM_SELF, b2, win, ierr)
  if (ierr /= MPI_SUCCESS .or. .not. c_associated(b2)) call fail('MPI_Win_allocate_shared (C_PTR)')
  call c_f_pointer(b2, w, [10])
  w = 100 + rank
  call MPI_Win_shared_query(win, 0, qsz, du, b3, ierr)
  call c_f_pointer(b3, q, [10])
  if (ierr /= MPI_SUCCESS .or. qsz /= 40 .or. du /= 4 .or. q(10) /= 100 + rank) &
      call fail('MPI_Win_shared_query (C_PTR)')
  call MPI_Win_free(win, ierr)

  call MPI_Allreduce(bad, all, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. all == 0) print '(a, i0, a)', 'ompi_fortran_sizeof: ', nproc, ' ranks ok'
  call MPI_Finalize(ierr)
contains
  subroutine expect(what, got, want)
    character(len=*), intent(in) :: what
    integer, intent(in) :: got, want
    if (got /= want .or. ierr /= MPI_SUCCESS) then
      print '(a, a, a, i0, a, i0, a, i0)', 'FAILED MPI_SIZEOF ', what, ': ', got, ' want ', want, ' ierror ', ierr
      bad = bad + 1
    end if
  end subroutine
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a, a)', 'FAILED ', what
    bad = bad + 1
  end subroutine
end program
