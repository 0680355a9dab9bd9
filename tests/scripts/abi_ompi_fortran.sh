#!/bin/bash
# abi_ompi_fortran: Fortran programs built with Open MPI's mpif90 (mpif90.openmpi: mpif.h and
# `use mpi`, linked against libmpi_mpifh.so.40) run unmodified on Kumi through the Fortran
# shim (components/abi/ompi-fortran: libmpi_mpifh.so.40 over the C shim libmpi.so.40), with
# the shims chosen by Kumi's mpiexec (KUMI_ABI_DIR: this build's two libraries), at 1, 2 and
# 4 ranks: tests/abi/ompi_fortran.f90 as `use mpi` and as mpif.h (checks that the library is
# Kumi, and handles, statuses, MPI_ANY_SOURCE, MPI_STATUS(ES)_IGNORE, LOGICALs, strings,
# 1-based indices, MPI_IN_PLACE, MPI_BOTTOM, derived types, Comm_split/dup/free, error
# classes with MPI_ERRORS_RETURN, a Fortran error handler), and Kumi's own Fortran tests that
# Open MPI's mpif90 compiles: fortran_coll.f (fixed form, mpif.h, a Fortran user op),
# fortran_jacobi.f90 (Cartesian topology; the same result at every size), misc3_buffers.f90,
# fortran_attr.f90 (MPI_TAG_UB, keyvals with Fortran copy / delete procedures, MPI_COMM_DUP_FN)
# fortran_errh.f90 and fortran_removed.f (MPI-1's MPI_ADDRESS, MPI_TYPE_STRUCT with MPI_LB /
# MPI_UB, MPI_TYPE_EXTENT, MPI_KEYVAL_CREATE, MPI_ERRHANDLER_SET, ...); that a program needing
# a procedure the shim lacks stops at load; tests/abi/ompi_fortran_mixed.f90 with its C part
# (handles passed between C and Fortran: MPI_X_c2f / f2c agree with mpif.h); and that data/abi/ompi-fortran.json is what the probe derives.
# Without the shims (mpiexec --abi standard: Open MPI's own libraries) the Kumi check fails.
set -u
: "${top_builddir:?}" "${top_srcdir:?}" "${MPIEXEC:?}"
fail() { echo "FAIL: $*"; exit 1; }
OMPIFC=${OMPIFC:-mpif90.openmpi}
command -v "$OMPIFC" > /dev/null 2>&1 || { echo "SKIP: $OMPIFC not found (Debian: openmpi-bin, libopenmpi-dev, gfortran)"; exit 77; }
CSHIM=$top_builddir/components/abi/ompi/.libs/libmpi.so.40
FSHIM=$top_builddir/components/abi/ompi-fortran/.libs/libmpi_mpifh.so.40
[ -f "$CSHIM" ] || fail "no C shim $CSHIM (components/abi/ompi not built)"
[ -f "$FSHIM" ] || fail "no Fortran shim $FSHIM (components/abi/ompi-fortran not built)"
work=$(mktemp -d "${TMPDIR:-/tmp}/abi_ompi_fortran.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/abi/ompi"
ln -s "$CSHIM" "$work/abi/ompi/libmpi.so.40"
ln -s "$FSHIM" "$work/abi/ompi/libmpi_mpifh.so.40"
# ompifc OUT SRC [flags]: a binary of Open MPI's Fortran ABI (it must need libmpi_mpifh.so.40)
ompifc() {
    local out=$1 src=$2; shift 2
    "$OMPIFC" -O1 -o "$work/$out" "$src" "$@" > "$work/$out.fc.log" 2>&1 ||
        { cat "$work/$out.fc.log"; fail "$OMPIFC $src $*"; }
    readelf -d "$work/$out" | grep -q 'NEEDED.*\[libmpi_mpifh\.so\.40\]' || fail "$out does not need libmpi_mpifh.so.40"
}
ompifc usempi "$top_srcdir/tests/abi/ompi_fortran.f90"
sed '/^  use mpi$/{N;s/.*\n  implicit none/  implicit none\n  include "mpif.h"/}' "$top_srcdir/tests/abi/ompi_fortran.f90" > "$work/mpifh.f90"
grep -q 'include "mpif.h"' "$work/mpifh.f90" || fail "could not make the mpif.h variant"
ompifc mpifh "$work/mpifh.f90" -fallow-argument-mismatch -w   # no interfaces: gfortran >= 10 wants it
ompifc coll "$top_srcdir/tests/fortran/fortran_coll.f" -fallow-argument-mismatch -w
ompifc jacobi "$top_srcdir/tests/fortran/fortran_jacobi.f90"
ompifc buffers "$top_srcdir/tests/fortran/misc3_buffers.f90"
ompifc attr "$top_srcdir/tests/fortran/fortran_attr.f90"
# a program of Fortran and C parts (handles cross as integers: the C shim's MPI_X_c2f / f2c
# answer the Fortran library's values)
OMPICC=${OMPICC:-mpicc.openmpi}
command -v "$OMPICC" > /dev/null 2>&1 || fail "$OMPICC not found (it comes with $OMPIFC)"
"$OMPICC" -O1 -c -o "$work/mixed_c.o" "$top_srcdir/tests/abi/ompi_fortran_mixed_c.c" || fail "$OMPICC ompi_fortran_mixed_c.c"
ompifc mixed "$top_srcdir/tests/abi/ompi_fortran_mixed.f90" "$work/mixed_c.o"
ompifc errh "$top_srcdir/tests/fortran/fortran_errh.f90"
ompifc removed "$top_srcdir/tests/fortran/fortran_removed.f" -fallow-argument-mismatch -w
bad=0
run() { # N PROG
    local log=$work/run.$2.$1.log
    if (cd "$work" && KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs \
            timeout 150 "$MPIEXEC" --timeout 120 -n "$1" "./$2") > "$log" 2>&1; then echo "ok: $2 at $1"
    else echo "FAILED: $2 at $1 rank(s):"; sed 's/^/    | /' "$log" | tail -8; bad=$((bad + 1)); fi
}
for n in 1 2 4; do
    for p in usempi mpifh; do
        run "$n" "$p"
        grep -q "ompi_fortran: $n ranks ok" "$work/run.$p.$n.log" || { echo "FAILED: $p at $n printed no result"; bad=$((bad + 1)); }
    done
    for p in coll jacobi buffers attr errh; do run "$n" "$p"; done
    run "$n" mixed
    grep -q "ompi_fortran_mixed: $n ranks ok" "$work/run.mixed.$n.log" || { echo "FAILED: mixed at $n printed no result"; bad=$((bad + 1)); }
    [ "$n" -eq 2 ] && run "$n" removed   # written for 2 ranks
done
grep -q '^probe' "$work/run.jacobi.1.log" || { echo "FAILED: jacobi printed no probe values"; bad=$((bad + 1)); }
for n in 2 4; do
    diff <(grep '^probe' "$work/run.jacobi.1.log") <(grep '^probe' "$work/run.jacobi.$n.log") > /dev/null ||
        { echo "FAILED: jacobi probe values differ at $n ranks"; bad=$((bad + 1)); }
done
# a program that needs a procedure the shim does not translate (file I/O: Kumi has none yet;
# pick another one when it has) is stopped at load, naming it, not at its first call
cat > "$work/needfile.f90" <<'EOF'
program needfile
  use mpi
  integer :: ierr, fh
  call MPI_Init(ierr)
  print *, 'needfile: started'
  call MPI_File_open(MPI_COMM_WORLD, 'x', MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
  call MPI_Finalize(ierr)
end program
EOF
ompifc needfile "$work/needfile.f90"
if (cd "$work" && KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs \
        timeout 150 "$MPIEXEC" --timeout 120 -n 1 ./needfile) > "$work/run.needfile.1.log" 2>&1; then
    echo "FAILED: needfile ran"; bad=$((bad + 1))
elif grep -q 'started' "$work/run.needfile.1.log" || ! grep -q 'mpi_file_open_ is not provided yet' "$work/run.needfile.1.log"; then
    echo "FAILED: needfile was not stopped at load naming mpi_file_open_:"; sed 's/^/    | /' "$work/run.needfile.1.log" | tail -5; bad=$((bad + 1))
else echo "ok: a program needing mpi_file_open_ is stopped at load"; fi
# the Fortran facts are what tools/abi-probe-fortran.py derives from this Open MPI
if "${PYTHON3:-python3}" "$top_srcdir/tools/abi-probe-fortran.py" --name ompi --fc "$OMPIFC" \
        --lib /usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40 -o "$work/ompi-fortran.json" 2> "$work/probe.log"; then
    cmp -s "$work/ompi-fortran.json" "$top_srcdir/data/abi/ompi-fortran.json" ||
        { echo "FAILED: data/abi/ompi-fortran.json is not what tools/abi-probe-fortran.py derives now"; bad=$((bad + 1)); }
else
    echo "note: the Fortran probe did not run here: $(tail -1 "$work/probe.log")"
fi
# the shim's coverage list is installed beside it
grep -q 'procedures exported' "$top_builddir/components/abi/ompi-fortran/ompi-fortran-coverage.txt" ||
    { echo "FAILED: no coverage list"; bad=$((bad + 1)); }
# without the shims the program gets Open MPI's own libraries, which are not Kumi: it must fail
if (cd "$work" && timeout 120 "$MPIEXEC" --abi standard --timeout 100 -n 1 ./usempi) > "$work/noshim.log" 2>&1; then
    fail "usempi passed without the shims (its Kumi check is broken)"
fi
grep -q "not Kumi\|libmpi" "$work/noshim.log" || { sed 's/^/    | /' "$work/noshim.log" | tail -5; echo "note: without the shims it failed otherwise"; }
[ "$bad" -eq 0 ] || fail "$bad run(s) failed"
echo "all runs passed"
