! fortran_spawn: MPI_COMM_SPAWN and MPI_COMM_SPAWN_MULTIPLE from Fortran (use mpi):
! string arrays (ARGV(*) ended by a blank item, ARRAY_OF_ARGV(COUNT,*)), leading
! blanks of a command stripped, MPI_ARGV_NULL, MPI_ERRCODES_IGNORE; the children
! (this program with the argument "child") check their argv, MPI_APPNUM and
! their parent, exchange a value with the parents, and disconnect.
program fortran_spawn
  use mpi
  implicit none
  integer :: ierr, rank, size, parent, inter, rsize, i, v, n
  integer :: errs(3), np(2), infos(2)
  logical :: flag
  integer(kind=MPI_ADDRESS_KIND) :: appnum
  character(len=512) :: self, arg1, arg2, arg3
  character(len=40) :: argv(4)
  character(len=512) :: cmds(2)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call MPI_Comm_get_parent(parent, ierr)
  n = command_argument_count()
  if (n >= 1) then
    call get_command_argument(1, arg1)
    if (trim(arg1) /= 'child') stop 'unexpected argument'
    if (parent == MPI_COMM_NULL) call fail('a spawned process has no parent')
    call get_command_argument(2, arg2)
    call get_command_argument(3, arg3)
    call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, appnum, flag, ierr)
    if (.not. flag) call fail('no MPI_APPNUM')
    if (trim(arg2) == 'single') then
      if (size /= 3 .or. appnum /= 0) call fail('single: size or appnum')
      if (trim(arg3) /= 'a b') call fail('single: argument 3 is not "a b"')
      if (n /= 3) call fail('single: not 3 arguments')
    else
      if (size /= 3) call fail('multiple: size')
      if (rank == 0 .and. (appnum /= 0 .or. trim(arg3) /= 'first' .or. n /= 3)) call fail('multiple: command 0')
      if (rank > 0 .and. (appnum /= 1 .or. trim(arg3) /= 'second' .or. n /= 4)) call fail('multiple: command 1')
    end if
    call MPI_Comm_remote_size(parent, rsize, ierr)
    if (rank == 0) then
      call MPI_Recv(v, 1, MPI_INTEGER, 0, 5, parent, MPI_STATUS_IGNORE, ierr)
      v = v + 1
      call MPI_Send(v, 1, MPI_INTEGER, 0, 6, parent, ierr)
    end if
    call MPI_Comm_disconnect(parent, ierr)
    call MPI_Finalize(ierr)
    stop
  end if

  if (parent /= MPI_COMM_NULL) call fail('mpiexec started a process with a parent')
  call get_command(self)
  i = index(self, ' ')
  if (i > 0) self = self(1:i-1)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)

  ! MPI_COMM_SPAWN: the command with leading blanks, argv ended by a blank item
  argv(1) = 'child'
  argv(2) = 'single'
  argv(3) = 'a b'
  argv(4) = ' '
  errs = -1
  call MPI_Comm_spawn('  ' // trim(self), argv, 3, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, errs, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_COMM_SPAWN failed')
  do i = 1, 3
    if (errs(i) /= MPI_SUCCESS) call fail('MPI_COMM_SPAWN: an error code')
  end do
  call MPI_Comm_remote_size(inter, rsize, ierr)
  if (rsize /= 3) call fail('MPI_COMM_SPAWN: remote size')
  if (rank == 0) then
    v = 41
    call MPI_Send(v, 1, MPI_INTEGER, 0, 5, inter, ierr)
    call MPI_Recv(v, 1, MPI_INTEGER, 0, 6, inter, MPI_STATUS_IGNORE, ierr)
    if (v /= 42) call fail('MPI_COMM_SPAWN: the child did not answer 42')
  end if
  call MPI_Comm_disconnect(inter, ierr)

  ! MPI_COMM_SPAWN_MULTIPLE: 1 + 2 children, ARRAY_OF_ARGV(2, 5) (each
  ! command's list ends at its first blank item; command 1 has 4 arguments)
  cmds(1) = self
  cmds(2) = self
  np(1) = 1
  np(2) = 2
  infos(1) = MPI_INFO_NULL
  infos(2) = MPI_INFO_NULL
  call spawn_multiple()
  ! a program that does not exist: MPI_ERR_SPAWN, MPI_ARGV_NULL and MPI_ERRCODES_IGNORE
  call MPI_Comm_spawn('/nonexistent/kumi-no-such-program', MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, &
                      MPI_COMM_WORLD, inter, MPI_ERRCODES_IGNORE, ierr)
  call MPI_Error_class(ierr, i, v)
  if (i /= MPI_ERR_SPAWN) call fail('a missing program: not MPI_ERR_SPAWN')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
  if (rank == 0) print *, 'fortran_spawn: ok'

contains

  subroutine spawn_multiple()
    character(len=40) :: av(2, 5)
    av = ' '
    av(1, 1) = 'child'
    av(1, 2) = 'multiple'
    av(1, 3) = 'first'
    av(2, 1) = 'child'
    av(2, 2) = 'multiple'
    av(2, 3) = 'second'
    av(2, 4) = 'extra'
    errs = -1
    call MPI_Comm_spawn_multiple(2, cmds, av, np, infos, 0, MPI_COMM_WORLD, inter, errs, ierr)
    if (ierr /= MPI_SUCCESS) call fail('MPI_COMM_SPAWN_MULTIPLE failed')
    do i = 1, 3
      if (errs(i) /= MPI_SUCCESS) call fail('MPI_COMM_SPAWN_MULTIPLE: an error code')
    end do
    call MPI_Comm_remote_size(inter, rsize, ierr)
    if (rsize /= 3) call fail('MPI_COMM_SPAWN_MULTIPLE: remote size')
    if (rank == 0) then
      v = 9
      call MPI_Send(v, 1, MPI_INTEGER, 0, 5, inter, ierr)
      call MPI_Recv(v, 1, MPI_INTEGER, 0, 6, inter, MPI_STATUS_IGNORE, ierr)
      if (v /= 10) call fail('MPI_COMM_SPAWN_MULTIPLE: the child did not answer 10')
    end if
    call MPI_Comm_disconnect(inter, ierr)
  end subroutine

  subroutine fail(msg)
    character(len=*), intent(in) :: msg
    integer :: e
    print *, 'FAIL: ', msg
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
  end subroutine
end program
