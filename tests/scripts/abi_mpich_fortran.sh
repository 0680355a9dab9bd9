#!/bin/bash
# abi_mpich_fortran: Fortran programs built with MPICH's mpif90 (mpif90.mpich: mpif.h and `use
# mpi`, linked against libmpichfort.so.12; Debian's `use mpi` imports the same mpi_xxx_ symbols
# as mpif.h, no module procedures) run unmodified on Kumi through the Fortran shim
# (components/abi/mpich-fortran: libmpichfort.so.12 over the C shim libmpich.so.12), with the
# shims chosen by Kumi's mpiexec (KUMI_ABI_DIR: this build's libraries), at 1, 2 and 4 ranks:
# the programs of abi_ompi_fortran.sh (tests/abi/ompi_fortran.f90 as `use mpi` and as mpif.h:
# the library is Kumi, handles, statuses of MPICH's 5 integers, MPI_ANY_SOURCE,
# MPI_STATUS(ES)_IGNORE, MPI_IN_PLACE and MPI_BOTTOM (in MPICH's COMMON blocks mpipriv1_ /
# mpipriv2_ at offsets), LOGICALs, strings, 1-based indices, derived types, errors; Kumi's
# fortran_coll.f, fortran_jacobi.f90, misc3_buffers.f90, fortran_attr.f90, fortran_errh.f90,
# fortran_removed.f; the mixed C / Fortran program, its C part built with mpicc.mpich);
# tests/abi/mpich_fortran_sentinels.f90 (MPI_UNWEIGHTED, MPI_STATUSES_IGNORE, MPI_SIZEOF);
# that a program needing a procedure the shim lacks stops at load; that
# data/abi/mpich-fortran.json is what the probe derives; and that without the shims
# (MPICH's own libraries) the Kumi check fails.
set -u
: "${top_builddir:?}" "${top_srcdir:?}" "${MPIEXEC:?}"
fail() { echo "FAIL: $*"; exit 1; }
MPICHFC=${MPICHFC:-mpif90.mpich}
command -v "$MPICHFC" > /dev/null 2>&1 || { echo "SKIP: $MPICHFC not found (Debian: mpich, libmpich-dev, gfortran)"; exit 77; }
CSHIM=$top_builddir/components/abi/mpich/.libs/libmpich.so.12
FSHIM=$top_builddir/components/abi/mpich-fortran/.libs/libmpichfort.so.12
[ -f "$CSHIM" ] || fail "no C shim $CSHIM (components/abi/mpich not built)"
[ -f "$FSHIM" ] || fail "no Fortran shim $FSHIM (components/abi/mpich-fortran not built)"
work=$(mktemp -d "${TMPDIR:-/tmp}/abi_mpich_fortran.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/abi/mpich"
ln -s "$CSHIM" "$work/abi/mpich/libmpich.so.12"
ln -s "$CSHIM" "$work/abi/mpich/libmpi.so.12"
ln -s "$FSHIM" "$work/abi/mpich/libmpichfort.so.12"
# mfc OUT SRC [flags]: a binary of MPICH's Fortran ABI (it must need libmpichfort.so.12)
mfc() {
    local out=$1 src=$2; shift 2
    "$MPICHFC" -O1 -o "$work/$out" "$src" "$@" > "$work/$out.fc.log" 2>&1 ||
        { cat "$work/$out.fc.log"; fail "$MPICHFC $src $*"; }
    readelf -d "$work/$out" | grep -q 'NEEDED.*\[libmpichfort\.so\.12\]' || fail "$out does not need libmpichfort.so.12"
}
mfc usempi "$top_srcdir/tests/abi/ompi_fortran.f90"
sed '/^  use mpi$/{N;s/.*\n  implicit none/  implicit none\n  include "mpif.h"/}' "$top_srcdir/tests/abi/ompi_fortran.f90" > "$work/mpifh.f90"
grep -q 'include "mpif.h"' "$work/mpifh.f90" || fail "could not make the mpif.h variant"
# MPICH's mpif.h does not declare the functions MPI_AINT_ADD / DIFF (Open MPI's does)
sed -i 's/^  include "mpif.h"$/&\n  integer(kind=MPI_ADDRESS_KIND), external :: MPI_Aint_add, MPI_Aint_diff/' "$work/mpifh.f90"
mfc mpifh "$work/mpifh.f90" -fallow-argument-mismatch -w
# the sentinels of the mpif.h program are MPICH's COMMON blocks
nm "$work/mpifh" | grep -q ' mpipriv1_$' || fail "the mpif.h program defines no mpipriv1_"
mfc coll "$top_srcdir/tests/fortran/fortran_coll.f" -fallow-argument-mismatch -w
mfc jacobi "$top_srcdir/tests/fortran/fortran_jacobi.f90"
mfc buffers "$top_srcdir/tests/fortran/misc3_buffers.f90"
mfc attr "$top_srcdir/tests/fortran/fortran_attr.f90"
MPICHCC=${MPICHCC:-mpicc.mpich}
command -v "$MPICHCC" > /dev/null 2>&1 || fail "$MPICHCC not found (it comes with $MPICHFC)"
"$MPICHCC" -O1 -c -o "$work/mixed_c.o" "$top_srcdir/tests/abi/ompi_fortran_mixed_c.c" || fail "$MPICHCC ompi_fortran_mixed_c.c"
mfc mixed "$top_srcdir/tests/abi/ompi_fortran_mixed.f90" "$work/mixed_c.o"
mfc errh "$top_srcdir/tests/fortran/fortran_errh.f90"
mfc sentinels "$top_srcdir/tests/abi/mpich_fortran_sentinels.f90"
mfc removed "$top_srcdir/tests/fortran/fortran_removed.f" -fallow-argument-mismatch -w
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
    run "$n" sentinels
    grep -q "mpich_fortran_sentinels: $n ranks ok" "$work/run.sentinels.$n.log" || { echo "FAILED: sentinels at $n printed no result"; bad=$((bad + 1)); }
    [ "$n" -eq 2 ] && run "$n" removed   # written for 2 ranks
done
grep -q '^probe' "$work/run.jacobi.1.log" || { echo "FAILED: jacobi printed no probe values"; bad=$((bad + 1)); }
for n in 2 4; do
    diff <(grep '^probe' "$work/run.jacobi.1.log") <(grep '^probe' "$work/run.jacobi.$n.log") > /dev/null ||
        { echo "FAILED: jacobi probe values differ at $n ranks"; bad=$((bad + 1)); }
done
# a program that needs a procedure the shim does not translate (file I/O: Kumi has none yet)
# is stopped at load, naming it, not at its first call
cat > "$work/needfile.f90" <<'EOS'
program needfile
  use mpi
  integer :: ierr, fh
  call MPI_Init(ierr)
  print *, 'needfile: started'
  call MPI_File_open(MPI_COMM_WORLD, 'x', MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
  call MPI_Finalize(ierr)
end program
EOS
mfc needfile "$work/needfile.f90"
if (cd "$work" && KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs \
        timeout 150 "$MPIEXEC" --timeout 120 -n 1 ./needfile) > "$work/run.needfile.1.log" 2>&1; then
    echo "FAILED: needfile ran"; bad=$((bad + 1))
elif grep -q 'started' "$work/run.needfile.1.log" || ! grep -q 'mpi_file_open_ is not provided yet' "$work/run.needfile.1.log"; then
    echo "FAILED: needfile was not stopped at load naming mpi_file_open_:"; sed 's/^/    | /' "$work/run.needfile.1.log" | tail -5; bad=$((bad + 1))
else echo "ok: a program needing mpi_file_open_ is stopped at load"; fi
# the Fortran facts are what tools/abi-probe-fortran.py derives from this MPICH
if "${PYTHON3:-python3}" "$top_srcdir/tools/abi-probe-fortran.py" --name mpich --fc "$MPICHFC" \
        --lib /usr/lib/x86_64-linux-gnu/libmpichfort.so.12 -o "$work/mpich-fortran.json" 2> "$work/probe.log"; then
    cmp -s "$work/mpich-fortran.json" "$top_srcdir/data/abi/mpich-fortran.json" ||
        { echo "FAILED: data/abi/mpich-fortran.json is not what tools/abi-probe-fortran.py derives now"; bad=$((bad + 1)); }
else
    echo "note: the Fortran probe did not run here: $(tail -1 "$work/probe.log")"
fi
grep -q 'procedures exported' "$top_builddir/components/abi/mpich-fortran/mpich-fortran-coverage.txt" ||
    { echo "FAILED: no coverage list"; bad=$((bad + 1)); }
# without the shims the program gets MPICH's own libraries, which are not Kumi: it must fail
if (cd "$work" && timeout 120 "$MPIEXEC" --abi standard --timeout 100 -n 1 ./usempi) > "$work/noshim.log" 2>&1; then
    fail "usempi passed without the shims (its Kumi check is broken)"
fi
grep -q "not Kumi\|libmpi" "$work/noshim.log" || { sed 's/^/    | /' "$work/noshim.log" | tail -5; echo "note: without the shims it failed otherwise"; }
[ "$bad" -eq 0 ] || fail "$bad run(s) failed"
echo "all runs passed"
