! The removed MPI-1 calls from fixed-form Fortran with mpif.h, as the NAS
! benchmarks' generation calls them (issue 16 item 10): MPI_ADDRESS,
! MPI_TYPE_EXTENT / LB / UB, MPI_TYPE_HVECTOR, MPI_TYPE_HINDEXED and
! MPI_TYPE_STRUCT with default INTEGER displacements (and the MPI_LB / MPI_UB
! markers: data moves with their extent), MPI_ERRHANDLER_CREATE / SET / GET
! (the handler runs), and the deprecated MPI_KEYVAL_CREATE / MPI_ATTR_*.
! 2 ranks.
      program fremoved
      implicit none
      include 'mpif.h'
      integer ierr, rank, size, peer, nfail, i
      integer a0, a3, lb, ext, ub, tsize, hv, hi, st, evry
      integer bl(3), dp(3), ty(3), src(12), got(3)
      double precision arr(4)
      integer comm, eh, geh, key, val, dupc
      logical flag
      integer nhand, hclass
      common /hand/ nhand, hclass
      external handler
      nfail = 0
      nhand = 0
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
      peer = 1 - rank
!     MPI_ADDRESS: differences of INTEGER addresses
      call MPI_ADDRESS(arr(1), a0, ierr)
      call MPI_ADDRESS(arr(4), a3, ierr)
      if (ierr .ne. MPI_SUCCESS .or. a3 - a0 .ne. 24) then
         print *, rank, 'address', a0, a3
         nfail = nfail + 1
      end if
!     MPI_TYPE_HVECTOR: 3 blocks of 2 integers 20 bytes apart
      call MPI_TYPE_HVECTOR(3, 2, 20, MPI_INTEGER, hv, ierr)
      call MPI_TYPE_EXTENT(hv, ext, ierr)
      call MPI_TYPE_LB(hv, lb, ierr)
      call MPI_TYPE_UB(hv, ub, ierr)
      call MPI_TYPE_SIZE(hv, tsize, ierr)
      if (ext .ne. 48 .or. lb .ne. 0 .or. ub .ne. 48
     &    .or. tsize .ne. 24) then
         print *, rank, 'hvector', lb, ext, ub, tsize
         nfail = nfail + 1
      end if
!     MPI_TYPE_HINDEXED: 1 integer at 8, 2 at 24
      bl(1) = 1
      bl(2) = 2
      dp(1) = 8
      dp(2) = 24
      call MPI_TYPE_HINDEXED(2, bl, dp, MPI_INTEGER, hi, ierr)
      call MPI_TYPE_LB(hi, lb, ierr)
      call MPI_TYPE_EXTENT(hi, ext, ierr)
      if (ierr .ne. MPI_SUCCESS .or. lb .ne. 8 .or. ext .ne. 24) then
         print *, rank, 'hindexed', lb, ext
         nfail = nfail + 1
      end if
!     MPI_TYPE_STRUCT with MPI_LB at -8 and MPI_UB at 40
      bl(1) = 1
      bl(2) = 1
      bl(3) = 1
      dp(1) = -8
      dp(2) = 0
      dp(3) = 40
      ty(1) = MPI_LB
      ty(2) = MPI_DOUBLE_PRECISION
      ty(3) = MPI_UB
      call MPI_TYPE_STRUCT(3, bl, dp, ty, st, ierr)
      call MPI_TYPE_LB(st, lb, ierr)
      call MPI_TYPE_EXTENT(st, ext, ierr)
      call MPI_TYPE_UB(st, ub, ierr)
      if (ierr .ne. MPI_SUCCESS .or. lb .ne. -8 .or. ext .ne. 48
     &    .or. ub .ne. 40) then
         print *, rank, 'struct with markers', lb, ext, ub
         nfail = nfail + 1
      end if
!     an integer every 16 bytes: MPI_LB at 0, the integer at 4, MPI_UB at 16
      dp(1) = 0
      dp(2) = 4
      dp(3) = 16
      ty(2) = MPI_INTEGER
      call MPI_TYPE_STRUCT(3, bl, dp, ty, evry, ierr)
      call MPI_TYPE_COMMIT(evry, ierr)
      do i = 1, 12
         src(i) = 100 * rank + i
      end do
      call MPI_SENDRECV(src, 3, evry, peer, 1, got, 3, MPI_INTEGER,
     &     peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      do i = 1, 3
         if (got(i) .ne. 100 * peer + 2 + 4 * (i - 1)) then
            print *, rank, 'struct data', got
            nfail = nfail + 1
         end if
      end do
      call MPI_TYPE_FREE(hv, ierr)
      call MPI_TYPE_FREE(hi, ierr)
      call MPI_TYPE_FREE(st, ierr)
      call MPI_TYPE_FREE(evry, ierr)
!     MPI_ERRHANDLER_CREATE / SET / GET
      call MPI_COMM_DUP(MPI_COMM_WORLD, comm, ierr)
      call MPI_ERRHANDLER_CREATE(handler, eh, ierr)
      call MPI_ERRHANDLER_SET(comm, eh, ierr)
      call MPI_ERRHANDLER_GET(comm, geh, ierr)
      if (ierr .ne. MPI_SUCCESS .or. geh .ne. eh) then
         print *, rank, 'errhandler_get', geh, eh
         nfail = nfail + 1
      end if
      call MPI_ERRHANDLER_FREE(geh, ierr)
      call MPI_SEND(i, 1, MPI_INTEGER, 7, 0, comm, ierr)
      if (ierr .eq. MPI_SUCCESS .or. nhand .ne. 1
     &    .or. hclass .ne. MPI_ERR_RANK) then
         print *, rank, 'handler', ierr, nhand, hclass
         nfail = nfail + 1
      end if
      call MPI_ERRHANDLER_SET(comm, MPI_ERRORS_RETURN, ierr)
      call MPI_ERRHANDLER_FREE(eh, ierr)
!     MPI_KEYVAL_CREATE / MPI_ATTR_*: MPI_DUP_FN copies at dup
      call MPI_KEYVAL_CREATE(MPI_DUP_FN, MPI_NULL_DELETE_FN, key, 0,
     &     ierr)
      call MPI_ATTR_PUT(comm, key, 42, ierr)
      call MPI_COMM_DUP(comm, dupc, ierr)
      call MPI_ATTR_GET(dupc, key, val, flag, ierr)
      if (ierr .ne. MPI_SUCCESS .or. .not. flag .or. val .ne. 42) then
         print *, rank, 'attr_get on the dup', flag, val
         nfail = nfail + 1
      end if
      call MPI_ATTR_DELETE(comm, key, ierr)
      call MPI_ATTR_GET(comm, key, val, flag, ierr)
      if (flag) then
         print *, rank, 'attr_delete left the attribute'
         nfail = nfail + 1
      end if
      call MPI_KEYVAL_FREE(key, ierr)
      if (key .ne. MPI_KEYVAL_INVALID) then
         print *, rank, 'keyval_free', key
         nfail = nfail + 1
      end if
      call MPI_COMM_FREE(dupc, ierr)
      call MPI_COMM_FREE(comm, ierr)
      call MPI_FINALIZE(ierr)
      if (nfail .gt. 0) stop 1
      if (rank .eq. 0) print *, 'fortran_removed: ok'
      end

      subroutine handler(comm, code)
      implicit none
      include 'mpif.h'
      integer comm, code, ierr
      integer nhand, hclass
      common /hand/ nhand, hclass
      nhand = nhand + 1
      call MPI_ERROR_CLASS(code, hclass, ierr)
      end
