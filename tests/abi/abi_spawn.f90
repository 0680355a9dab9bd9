! abi_spawn: what tests/fortran/fortran_spawn.f90 leaves out of MPI_COMM_SPAWN(_MULTIPLE)
! from Fortran (use mpi), for a foreign ABI's Fortran shim (built with mpif90.openmpi /
! mpif90.mpich by tests/scripts/abi_fortran_common.inc): MPI_ARGVS_NULL and
! MPI_ERRCODES_IGNORE of MPI_COMM_SPAWN_MULTIPLE, arrays and count that are garbage
! away from the root (significant at the root only), error codes at every parent
! (also away from the root) in this ABI's numbering, a failed spawn's codes
! (MPI_ERR_SPAWN of this ABI), a command padded with blanks, an argument with
! leading blanks (kept) and one of the full length (no trailing blank).
! The children (this program: with no argument, or "child" and more) check what
! they got and answer their parents.  Prints "abi_spawn: N ranks ok".
program abi_spawn
  use mpi
  implicit none
  integer :: ierr, rank, size, parent, inter, rsize, i, v, n, cls, cnt, root
  integer :: errs(8), np(3), infos(3)
  logical :: flag
  integer(kind=MPI_ADDRESS_KIND) :: appnum
  character(len=512) :: self, arg
  character(len=8) :: av(1, 4), blank(1)
  character(len=512) :: cmds(3)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call MPI_Comm_get_parent(parent, ierr)
  n = command_argument_count()
  if (parent /= MPI_COMM_NULL) then
    call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, appnum, flag, ierr)
    if (.not. flag) call fail('child: no MPI_APPNUM')
    if (n == 0) then
      ! MPI_ARGVS_NULL: commands 0 and 1, 1 + 2 processes
      if (size /= 3) call fail('argvs_null child: size')
      if ((rank == 0 .and. appnum /= 0) .or. (rank > 0 .and. appnum /= 1)) call fail('argvs_null child: appnum')
    else
      call get_command_argument(1, arg)
      if (trim(arg) /= 'child') call fail('child: argument 1')
      if (n /= 3) call fail('child: not 3 arguments')
      call get_command_argument(2, arg)
      if (arg /= '  lead') call fail('child: argument 2 lost its leading blanks')
      call get_command_argument(3, arg)
      if (trim(arg) /= 'fulllen8') call fail('child: argument 3 (the full length)')
      if (size /= 2 .or. appnum /= 0) call fail('child: size or appnum')
    end if
    call MPI_Comm_remote_size(parent, rsize, ierr)
    if (rank == 0) then
      call MPI_Recv(v, 1, MPI_INTEGER, 0, 5, parent, MPI_STATUS_IGNORE, ierr)
      v = v + rsize
      call MPI_Send(v, 1, MPI_INTEGER, 0, 6, parent, ierr)
    end if
    call MPI_Comm_disconnect(parent, ierr)
    call MPI_Finalize(ierr)
    stop
  end if

  call get_command(self)
  i = index(self, ' ')
  if (i > 0) self = self(1:i-1)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  root = size - 1

  ! MPI_COMM_SPAWN_MULTIPLE with MPI_ARGVS_NULL and MPI_ERRCODES_IGNORE; away from the
  ! root count and the arrays are garbage
  if (rank == root) then
    cnt = 2
    cmds(1) = '   ' // trim(self) // '   '
    cmds(2) = self
    np(1) = 1
    np(2) = 2
    infos(1) = MPI_INFO_NULL
    infos(2) = MPI_INFO_NULL
  else
    cnt = 3
    cmds = 'garbage'
    np = -7
    infos = -12345
  end if
  call MPI_Comm_spawn_multiple(cnt, cmds, MPI_ARGVS_NULL, np, infos, root, MPI_COMM_WORLD, inter, &
                               MPI_ERRCODES_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_COMM_SPAWN_MULTIPLE (MPI_ARGVS_NULL) failed')
  call exchange(inter, 3, 100)

  ! MPI_COMM_SPAWN_MULTIPLE with arguments, codes written at every parent
  if (rank == root) then
    cnt = 1
    np(1) = 2
    av = ' '
    av(1, 1) = 'child'
    av(1, 2) = '  lead'
    av(1, 3) = 'fulllen8'
  else
    np = 0
    av = 'x'
  end if
  errs = -1
  call MPI_Comm_spawn_multiple(cnt, cmds(2:), av, np, infos, root, MPI_COMM_WORLD, inter, errs, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_COMM_SPAWN_MULTIPLE (arguments) failed')
  do i = 1, 2
    if (errs(i) /= MPI_SUCCESS) call fail('MPI_COMM_SPAWN_MULTIPLE: an error code is not MPI_SUCCESS')
  end do
  if (errs(3) /= -1) call fail('MPI_COMM_SPAWN_MULTIPLE: wrote more codes than children')
  call exchange(inter, 2, 200)

  ! a failed spawn: MPI_ERR_SPAWN of this ABI, in ierror and in every code, at every parent
  blank = ' '   ! an empty argument list (not MPI_ARGV_NULL)
  errs = -1
  call MPI_Comm_spawn('/nonexistent/kumi-no-such-program', blank, 2, MPI_INFO_NULL, root, &
                      MPI_COMM_WORLD, inter, errs, ierr)
  call MPI_Error_class(ierr, cls, v)
  if (cls /= MPI_ERR_SPAWN) call fail('a missing program: not MPI_ERR_SPAWN')
  if (errs(1) /= MPI_ERR_SPAWN .or. errs(2) /= MPI_ERR_SPAWN) call fail('a missing program: codes not MPI_ERR_SPAWN')
  if (errs(3) /= -1) call fail('a missing program: more codes than asked')
  if (inter /= MPI_COMM_NULL) then
    ! Open MPI and MPICH leave it; Kumi sets MPI_COMM_NULL: either is fine, but not a live one
    call MPI_Comm_test_inter(inter, flag, ierr)
    if (ierr == MPI_SUCCESS) call fail('a missing program: an intercommunicator came back')
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a)', 'abi_spawn: ', size, ' ranks ok'
  call MPI_Finalize(ierr)

contains

  subroutine exchange(ic, children, base)
    integer, intent(inout) :: ic
    integer, intent(in) :: children, base
    integer :: w
    call MPI_Comm_remote_size(ic, rsize, ierr)
    if (rsize /= children) call fail('remote size')
    if (rank == 0) then
      w = base
      call MPI_Send(w, 1, MPI_INTEGER, 0, 5, ic, ierr)
      call MPI_Recv(w, 1, MPI_INTEGER, 0, 6, ic, MPI_STATUS_IGNORE, ierr)
      if (w /= base + size) call fail('the children did not answer')
    end if
    call MPI_Comm_disconnect(ic, ierr)
  end subroutine

  subroutine fail(msg)
    character(len=*), intent(in) :: msg
    integer :: e
    print *, 'FAIL: ', msg
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
  end subroutine
end program
