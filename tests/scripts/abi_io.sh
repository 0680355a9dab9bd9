#!/bin/bash
# abi_io: MPI-IO through the foreign-ABI shims: tests/abi/abi_io.c built with mpicc.openmpi
# (libmpi.so.40) and with mpicc.mpich (libmpich.so.12) runs unmodified on Kumi at 1, 2 and 4
# ranks, mpiexec picking the shim by itself (KUMI_ABI_DIR: this build's shims; nothing but
# Kumi's libmpi.so.0 on LD_LIBRARY_PATH).  The program checks file contents byte for byte
# after write_at_all, a view of a derived filetype (set_view / get_view: etype, a new
# filetype handle, the datarep string), MPI_DISPLACEMENT_CURRENT on a sequential file and the
# shared file pointer, iread_at/iwrite_at through MPI_Waitall, a file error handler (called
# with the program's own MPI_File handle) and MPI_Register_datarep with user conversion and
# extent functions that get the program's datatype handles.  A compiler that is absent skips
# its half; both absent: skip (77).  tests/abi/abi_io.f90 does the same from Fortran (mpif.h,
# mpif90.openmpi / mpif90.mpich: MPI_FILE_* of the Fortran shims, MPI_FILE_CREATE_ERRHANDLER and
# MPI_REGISTER_DATAREP with Fortran procedures), tests/abi/abi_io_cxx.cc from C++ (mpicxx.*:
# MPI::File methods, File::Create_errhandler / Call_errhandler, MPI::Register_datarep with C++
# conversion functions, MPI::ERRORS_THROW_EXCEPTIONS on a file).
set -u
: "${top_builddir:?}" "${top_srcdir:?}" "${MPIEXEC:?}"
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/abi_io.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/abi/ompi" "$work/abi/mpich"
built=0
OMPICC=${OMPICC:-mpicc.openmpi}
MPICHCC=${MPICHCC:-mpicc.mpich}
if command -v "$OMPICC" > /dev/null 2>&1; then
    shim=$top_builddir/components/abi/ompi/.libs/libmpi.so.40
    [ -f "$shim" ] || fail "no shim $shim"
    ln -s "$shim" "$work/abi/ompi/libmpi.so.40"
    "$OMPICC" -O1 -o "$work/io_ompi" "$top_srcdir/tests/abi/abi_io.c" > "$work/cc.log" 2>&1 ||
        { cat "$work/cc.log"; fail "$OMPICC abi_io.c"; }
    readelf -d "$work/io_ompi" | grep -q 'NEEDED.*\[libmpi\.so\.40\]' || fail "io_ompi does not need libmpi.so.40"
    built=$((built + 1))
else
    echo "note: $OMPICC not found: the Open MPI half is skipped"
fi
if command -v "$MPICHCC" > /dev/null 2>&1; then
    shim=$top_builddir/components/abi/mpich/.libs/libmpich.so.12
    [ -f "$shim" ] || fail "no shim $shim"
    ln -s "$shim" "$work/abi/mpich/libmpich.so.12"
    ln -s libmpich.so.12 "$work/abi/mpich/libmpi.so.12"
    "$MPICHCC" -O1 -o "$work/io_mpich" "$top_srcdir/tests/abi/abi_io.c" > "$work/cc.log" 2>&1 ||
        { cat "$work/cc.log"; fail "$MPICHCC abi_io.c"; }
    readelf -d "$work/io_mpich" | grep -q 'NEEDED.*\[libmpich\.so\.12\]' || fail "io_mpich does not need libmpich.so.12"
    built=$((built + 1))
else
    echo "note: $MPICHCC not found: the MPICH half is skipped"
fi
# the Fortran halves (mpif.h): libmpi_mpifh.so.40 / libmpichfort.so.12 next to the C shims
OMPIFC=${OMPIFC:-mpif90.openmpi}
MPICHFC=${MPICHFC:-mpif90.mpich}
if [ -e "$work/abi/ompi/libmpi.so.40" ] && command -v "$OMPIFC" > /dev/null 2>&1; then
    fshim=$top_builddir/components/abi/ompi-fortran/.libs/libmpi_mpifh.so.40
    [ -f "$fshim" ] || fail "no shim $fshim"
    ln -s "$fshim" "$work/abi/ompi/libmpi_mpifh.so.40"
    "$OMPIFC" -O1 -J "$work" -o "$work/iof_ompi" "$top_srcdir/tests/abi/abi_io.f90" > "$work/fc.log" 2>&1 ||
        { cat "$work/fc.log"; fail "$OMPIFC abi_io.f90"; }
fi
if [ -e "$work/abi/mpich/libmpich.so.12" ] && command -v "$MPICHFC" > /dev/null 2>&1; then
    fshim=$top_builddir/components/abi/mpich-fortran/.libs/libmpichfort.so.12
    [ -f "$fshim" ] || fail "no shim $fshim"
    ln -s "$fshim" "$work/abi/mpich/libmpichfort.so.12"
    "$MPICHFC" -O1 -J "$work" -o "$work/iof_mpich" "$top_srcdir/tests/abi/abi_io.f90" > "$work/fc.log" 2>&1 ||
        { cat "$work/fc.log"; fail "$MPICHFC abi_io.f90"; }
fi
# the C++ halves: libmpi_cxx.so.40 / libmpichcxx.so.12 next to the C shims
OMPICXX=${OMPICXX:-mpicxx.openmpi}
MPICHCXX=${MPICHCXX:-mpicxx.mpich}
if [ -e "$work/abi/ompi/libmpi.so.40" ] && command -v "$OMPICXX" > /dev/null 2>&1; then
    ln -s "$top_builddir/components/abi/ompicxx/.libs/libmpi_cxx.so.40" "$work/abi/ompi/libmpi_cxx.so.40"
    "$OMPICXX" -O1 -o "$work/ioc_ompi" "$top_srcdir/tests/abi/abi_io_cxx.cc" > "$work/cxx.log" 2>&1 ||
        { cat "$work/cxx.log"; fail "$OMPICXX abi_io_cxx.cc"; }
fi
if [ -e "$work/abi/mpich/libmpich.so.12" ] && command -v "$MPICHCXX" > /dev/null 2>&1; then
    ln -s "$top_builddir/components/abi/mpichcxx/.libs/libmpichcxx.so.12" "$work/abi/mpich/libmpichcxx.so.12"
    "$MPICHCXX" -O1 -o "$work/ioc_mpich" "$top_srcdir/tests/abi/abi_io_cxx.cc" > "$work/cxx.log" 2>&1 ||
        { cat "$work/cxx.log"; fail "$MPICHCXX abi_io_cxx.cc"; }
fi
[ "$built" -gt 0 ] || { echo "SKIP: neither $OMPICC nor $MPICHCC found"; exit 77; }
bad=0
for p in io_ompi io_mpich iof_ompi iof_mpich ioc_ompi ioc_mpich; do
    [ -x "$work/$p" ] || continue
    for n in 1 2 4; do
        log=$work/run.$p.$n.log
        rm -f "$work"/f.$p.$n.*
        if (cd "$work" && KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs \
                timeout 200 "$MPIEXEC" --timeout 180 -n "$n" "./$p" "$work/f.$p.$n") > "$log" 2>&1 &&
           grep -q "abi_io\(_f\|_cxx\)\?: $n ranks ok" "$log"; then
            echo "ok: $p at $n"
        else
            echo "FAILED: $p at $n rank(s):"; sed 's/^/    | /' "$log" | tail -12; bad=$((bad + 1))
        fi
    done
done
[ "$bad" -eq 0 ] || fail "$bad run(s) failed"
echo "all runs passed"
