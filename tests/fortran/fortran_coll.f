! Collectives and communicators from fixed-form Fortran with mpif.h: bcast,
! allreduce with MPI_IN_PLACE, reduce, comm_split and a user-defined op.
      program fcoll
      implicit none
      include 'mpif.h'
      integer ierr, rank, size, i, newcomm, nrank, nsize, op, nfail
      integer ival(4), isum(4)
      double precision dval(3)
      external mymax
      nfail = 0
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
!     bcast from the last rank
      do i = 1, 4
         ival(i) = 0
         if (rank .eq. size - 1) ival(i) = 40 + i
      end do
      call MPI_BCAST(ival, 4, MPI_INTEGER, size - 1, MPI_COMM_WORLD,
     &     ierr)
      if (ierr .ne. MPI_SUCCESS .or. ival(4) .ne. 44) then
         print *, rank, 'bcast', ival
         nfail = nfail + 1
      end if
!     allreduce in place
      do i = 1, 3
         dval(i) = rank + i
      end do
      call MPI_ALLREDUCE(MPI_IN_PLACE, dval, 3, MPI_DOUBLE_PRECISION,
     &     MPI_SUM, MPI_COMM_WORLD, ierr)
      if (dval(2) .ne. size * (size - 1) / 2.0d0 + 2 * size) then
         print *, rank, 'allreduce in place', dval
         nfail = nfail + 1
      end if
!     reduce to rank 0
      do i = 1, 4
         ival(i) = rank * i
      end do
      call MPI_REDUCE(ival, isum, 4, MPI_INTEGER, MPI_SUM, 0,
     &     MPI_COMM_WORLD, ierr)
      if (rank .eq. 0 .and. isum(3) .ne. 3 * size * (size - 1) / 2) then
         print *, rank, 'reduce', isum
         nfail = nfail + 1
      end if
!     split into even and odd ranks, reversed order
      call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), -rank,
     &     newcomm, ierr)
      call MPI_COMM_SIZE(newcomm, nsize, ierr)
      call MPI_COMM_RANK(newcomm, nrank, ierr)
      if (newcomm .eq. MPI_COMM_NULL .or.
     &    nsize .ne. (size + 1 - mod(rank, 2)) / 2 .or.
     &    nrank .ne. nsize - 1 - rank / 2) then
         print *, rank, 'split', nsize, nrank
         nfail = nfail + 1
      end if
      call MPI_ALLREDUCE(1, i, 1, MPI_INTEGER, MPI_SUM, newcomm, ierr)
      if (i .ne. nsize) then
         print *, rank, 'allreduce on split', i
         nfail = nfail + 1
      end if
      call MPI_COMM_FREE(newcomm, ierr)
      if (newcomm .ne. MPI_COMM_NULL) then
         print *, rank, 'comm_free did not set MPI_COMM_NULL'
         nfail = nfail + 1
      end if
!     user op: element-wise maximum of absolute values
      call MPI_OP_CREATE(mymax, .true., op, ierr)
      do i = 1, 4
         ival(i) = (rank + 1) * i
         if (mod(rank, 2) .eq. 1) ival(i) = -ival(i)
      end do
      call MPI_ALLREDUCE(ival, isum, 4, MPI_INTEGER, op,
     &     MPI_COMM_WORLD, ierr)
      if (ierr .ne. MPI_SUCCESS .or. isum(2) .ne. 2 * size) then
         print *, rank, 'user op', isum
         nfail = nfail + 1
      end if
      call MPI_OP_FREE(op, ierr)
      if (op .ne. MPI_OP_NULL) then
         print *, rank, 'op_free did not set MPI_OP_NULL'
         nfail = nfail + 1
      end if
      call MPI_FINALIZE(ierr)
      if (nfail .gt. 0) stop 1
      end

      subroutine mymax(invec, inoutvec, len, datatype)
      implicit none
      include 'mpif.h'
      integer len, datatype, i
      integer invec(len), inoutvec(len)
      if (datatype .ne. MPI_INTEGER) then
         print *, 'user op: datatype', datatype
         stop 2
      end if
      do i = 1, len
         inoutvec(i) = max(abs(invec(i)), abs(inoutvec(i)))
      end do
      end
