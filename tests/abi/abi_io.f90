! abi_io.f90: MPI-IO from Fortran (mpif.h) through a foreign-ABI Fortran shim (built with
! mpif90.openmpi or mpif90.mpich).  Argument 1: a file name prefix in a folder the ranks
! share.  Checks write_at_all and its status, a view of a derived filetype (set_view /
! get_view: disp, etype, filetype, datarep), read_all through it, iread_at + MPI_WAITALL, a file
! error handler (MPI_FILE_CREATE_ERRHANDLER: called with the program's file handle and code),
! MPI_REGISTER_DATAREP with Fortran conversion and extent procedures, and the file contents
! through a plain view.  Prints "abi_io_f: N ranks ok".
module abi_io_cb
    implicit none
    include 'mpif.h'
    integer, save :: eh_calls = 0, eh_file = -1, eh_code = -1
    integer, save :: conv_calls = 0, ext_calls = 0, cb_bad = 0
contains
    subroutine file_eh(fh, code)
        integer :: fh, code
        eh_calls = eh_calls + 1
        eh_file = fh
        eh_code = code
    end subroutine
    ! "negated": integers stored as their negation
    subroutine rep_read(userbuf, datatype, count, filebuf, position, extra, ierror)
        integer :: userbuf(*), filebuf(*), datatype, count, ierror, i
        integer(kind=MPI_OFFSET_KIND) :: position
        integer(kind=MPI_ADDRESS_KIND) :: extra
        if (datatype /= MPI_INTEGER .or. extra /= 77) cb_bad = cb_bad + 1
        conv_calls = conv_calls + 1
        do i = 1, count
            userbuf(position + i) = -filebuf(i)
        end do
        ierror = MPI_SUCCESS
    end subroutine
    subroutine rep_write(userbuf, datatype, count, filebuf, position, extra, ierror)
        integer :: userbuf(*), filebuf(*), datatype, count, ierror, i
        integer(kind=MPI_OFFSET_KIND) :: position
        integer(kind=MPI_ADDRESS_KIND) :: extra
        if (datatype /= MPI_INTEGER .or. extra /= 77) cb_bad = cb_bad + 1
        conv_calls = conv_calls + 1
        do i = 1, count
            filebuf(i) = -userbuf(position + i)
        end do
        ierror = MPI_SUCCESS
    end subroutine
    subroutine rep_extent(datatype, extent, extra, ierror)
        integer :: datatype, ierror
        integer(kind=MPI_ADDRESS_KIND) :: extent, extra
        if (datatype /= MPI_INTEGER .or. extra /= 77) cb_bad = cb_bad + 1
        ext_calls = ext_calls + 1
        extent = 4
        ierror = MPI_SUCCESS
    end subroutine
end module

program abi_io_f
    use abi_io_cb
    implicit none
    integer :: ierr, rank, nprocs, fh, i, cnt, bad, allbad, one, ft, et2, ft2, eh, cls, rc, iw
    integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2), reqs(2)
    integer :: mine(4), got(4), w3(3), r3(3), allv(64), uw(3), ur(3)
    integer(kind=MPI_OFFSET_KIND) :: off, disp, base
    integer(kind=MPI_ADDRESS_KIND) :: lb, ext, extra
    character(len=256) :: prefix, fname, rname
    character(len=MPI_MAX_DATAREP_STRING) :: rep

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
    call get_command_argument(1, prefix)
    fname = trim(prefix) // '.fdat'
    rname = trim(prefix) // '.frep'
    bad = 0

    call MPI_FILE_OPEN(MPI_COMM_WORLD, fname, MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
    if (ierr /= MPI_SUCCESS .or. fh == MPI_FILE_NULL) call die('open')
    do i = 1, 4
        mine(i) = rank * 100 + i
    end do
    off = rank * 16
    call MPI_FILE_WRITE_AT_ALL(fh, off, mine, 4, MPI_INTEGER, st, ierr)
    call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
    if (cnt /= 4) call fail('write_at_all count')

    ! a view of a derived filetype: rank r's integers at r, r+n, ... after base
    base = nprocs * 16
    call MPI_TYPE_CONTIGUOUS(1, MPI_INTEGER, one, ierr)
    lb = 0
    ext = nprocs * 4
    call MPI_TYPE_CREATE_RESIZED(one, lb, ext, ft, ierr)
    call MPI_TYPE_COMMIT(ft, ierr)
    disp = base + rank * 4
    call MPI_FILE_SET_VIEW(fh, disp, MPI_INTEGER, ft, 'native', MPI_INFO_NULL, ierr)
    if (ierr /= MPI_SUCCESS) call die('set_view')
    disp = -9
    rep = 'garbage'
    call MPI_FILE_GET_VIEW(fh, disp, et2, ft2, rep, ierr)
    if (ierr /= MPI_SUCCESS) call die('get_view')
    if (disp /= base + rank * 4) call fail('get_view disp')
    if (et2 /= MPI_INTEGER) call fail('get_view etype')
    if (trim(rep) /= 'native') call fail('get_view datarep')
    call MPI_TYPE_GET_EXTENT(ft2, lb, ext, ierr)
    if (ierr /= MPI_SUCCESS .or. ext /= nprocs * 4) call fail('get_view filetype extent')
    call MPI_TYPE_FREE(ft2, ierr)
    do i = 1, 3
        w3(i) = 1000 + rank * 10 + i
    end do
    call MPI_FILE_WRITE_ALL(fh, w3, 3, MPI_INTEGER, st, ierr)
    call MPI_FILE_SYNC(fh, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_FILE_SYNC(fh, ierr)
    off = 0
    call MPI_FILE_SEEK(fh, off, MPI_SEEK_SET, ierr)
    r3 = 0
    call MPI_FILE_READ_ALL(fh, r3, 3, MPI_INTEGER, st, ierr)
    call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
    if (cnt /= 3 .or. any(r3 /= w3)) call fail('read_all through the view')
    call MPI_TYPE_FREE(ft, ierr)
    call MPI_TYPE_FREE(one, ierr)

    ! back to bytes: iread_at + iwrite_at through MPI_WAITALL, and the whole file
    disp = 0
    call MPI_FILE_SET_VIEW(fh, disp, MPI_BYTE, MPI_BYTE, 'native', MPI_INFO_NULL, ierr)
    off = rank * 16
    got = 0
    call MPI_FILE_IREAD_AT(fh, off, got, 4, MPI_INTEGER, reqs(1), ierr)
    off = base + nprocs * 12 + rank * 4
    iw = rank + 9000
    call MPI_FILE_IWRITE_AT(fh, off, iw, 1, MPI_INTEGER, reqs(2), ierr)
    call MPI_WAITALL(2, reqs, sts, ierr)
    call MPI_GET_COUNT(sts(:, 1), MPI_INTEGER, cnt, ierr)
    if (cnt /= 4 .or. any(got /= mine)) call fail('iread_at')
    if (reqs(1) /= MPI_REQUEST_NULL .or. reqs(2) /= MPI_REQUEST_NULL) call fail('requests not freed')
    call MPI_FILE_SYNC(fh, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_FILE_SYNC(fh, ierr)
    if (rank == 0) then
        off = 0
        call MPI_FILE_READ_AT(fh, off, allv, 8 * nprocs, MPI_INTEGER, st, ierr)
        do i = 0, 4 * nprocs - 1
            if (allv(i + 1) /= (i / 4) * 100 + mod(i, 4) + 1) call fail('file contents (write_at_all)')
        end do
        do i = 0, 3 * nprocs - 1
            if (allv(4 * nprocs + i + 1) /= 1000 + mod(i, nprocs) * 10 + i / nprocs + 1) call fail('file contents (view)')
        end do
        do i = 0, nprocs - 1
            if (allv(7 * nprocs + i + 1) /= 9000 + i) call fail('file contents (iwrite_at)')
        end do
    end if

    ! an error handler on the file
    call MPI_FILE_CREATE_ERRHANDLER(file_eh, eh, ierr)
    if (ierr /= MPI_SUCCESS) call die('file_create_errhandler')
    call MPI_FILE_SET_ERRHANDLER(fh, eh, ierr)
    call MPI_FILE_CALL_ERRHANDLER(fh, MPI_ERR_OTHER, ierr)
    if (eh_calls /= 1 .or. eh_file /= fh .or. eh_code /= MPI_ERR_OTHER) call fail('call_errhandler')
    off = -8
    call MPI_FILE_READ_AT(fh, off, got, 1, MPI_INTEGER, st, rc)
    call MPI_ERROR_CLASS(eh_code, cls, ierr)
    if (rc == MPI_SUCCESS .or. eh_calls /= 2 .or. eh_file /= fh .or. cls /= MPI_ERR_ARG) call fail('error on a bad offset')
    call MPI_FILE_SET_ERRHANDLER(fh, MPI_ERRORS_RETURN, ierr)
    call MPI_ERRHANDLER_FREE(eh, ierr)
    call MPI_FILE_CLOSE(fh, ierr)
    if (fh /= MPI_FILE_NULL) call fail('close did not set MPI_FILE_NULL')

    ! a user data representation
    extra = 77
    call MPI_REGISTER_DATAREP('abi_io_negated', rep_read, rep_write, rep_extent, extra, ierr)
    if (ierr /= MPI_SUCCESS) call die('register_datarep')
    call MPI_FILE_OPEN(MPI_COMM_WORLD, rname, MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
    disp = rank * 12
    call MPI_FILE_SET_VIEW(fh, disp, MPI_INTEGER, MPI_INTEGER, 'abi_io_negated', MPI_INFO_NULL, ierr)
    if (ierr /= MPI_SUCCESS) call die('set_view with the user datarep')
    uw = (/ rank + 1, 5, -7 /)
    off = 0
    call MPI_FILE_WRITE_AT(fh, off, uw, 3, MPI_INTEGER, st, ierr)
    ur = 0
    call MPI_FILE_READ_AT(fh, off, ur, 3, MPI_INTEGER, st, ierr)
    if (any(ur /= uw)) call fail('read back with the user datarep')
    if (cb_bad /= 0 .or. conv_calls < 2 .or. ext_calls < 1) call fail('conversion procedures')
    call MPI_FILE_SYNC(fh, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_FILE_SYNC(fh, ierr)
    disp = 0
    call MPI_FILE_SET_VIEW(fh, disp, MPI_BYTE, MPI_BYTE, 'native', MPI_INFO_NULL, ierr)
    if (rank == 0) then
        call MPI_FILE_READ_AT(fh, off, allv, 3 * nprocs, MPI_INTEGER, st, ierr)
        do i = 0, nprocs - 1
            if (allv(3 * i + 1) /= -(i + 1) .or. allv(3 * i + 2) /= -5 .or. allv(3 * i + 3) /= 7) &
                call fail('user datarep bytes')
        end do
    end if
    call MPI_FILE_CLOSE(fh, ierr)

    call MPI_ALLREDUCE(bad, allbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0 .and. allbad == 0) print '(a,i0,a)', 'abi_io_f: ', nprocs, ' ranks ok'
    call MPI_FINALIZE(ierr)
    if (allbad /= 0) stop 1
contains
    subroutine fail(what)
        character(len=*) :: what
        print '(a,i0,2a)', 'rank ', rank, ': ', what
        bad = bad + 1
    end subroutine
    subroutine die(what)
        character(len=*) :: what
        print '(a,i0,3a,i0)', 'rank ', rank, ': ', what, ' failed: ', ierr
        call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
    end subroutine
end program
