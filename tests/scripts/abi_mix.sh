#!/bin/bash
# abi_mix: processes that mix Open MPI's and MPICH's ABIs run on Kumi with both shims and the GOT
# swap agent libkumi_abimix.so (components/abi/gotswap/abimix.c), which Kumi's mpiexec sets up by
# itself: tests/abi/mix_main.c built with mpicc.openmpi, linked with tests/abi/mix_lib.c built
# with mpicc.mpich (mpiexec finds both ABIs among the DT_NEEDED: automatic), and loading it with
# dlopen (mpiexec --abi ompi+mpich), and the same library in Fortran (tests/abi/mix_flib.f90,
# mpif90.mpich: MPICH's Fortran shim calls the C library, which must be MPICH's shim), at 1, 2 and
# 4 ranks: each part calls MPI with its own ABI's handles and statuses and the results agree;
# and the other way round: mix_main.c built with mpicc.mpich, linked with, and loading, mix_lib.c
# built with mpicc.openmpi (an MPICH program with an Open MPI plug-in); in each, a failed call's
# error code comes back in the numbering of the ABI that called (MPI_ERR_ARG: 13 or 12);
# without the agent the linked program is refused, naming what is missing.  Skips (77) without mpicc.openmpi / mpicc.mpich or without libelf.
set -u
: "${top_builddir:?}" "${top_srcdir:?}" "${MPIEXEC:?}"
fail() { echo "FAIL: $*"; exit 1; }
for c in mpicc.openmpi mpicc.mpich; do
    command -v "$c" > /dev/null 2>&1 || { echo "SKIP: $c not found (Debian: openmpi-bin, libopenmpi-dev, mpich, libmpich-dev)"; exit 77; }
done
L=$top_builddir/components/abi
AGENT=$L/gotswap/.libs/libkumi_abimix.so
if [ ! -f "$AGENT" ]; then
    [ -f "$L/gotswap/.libs/libkumi_gotswap.so" ] && fail "gotswap is built but not its agent $AGENT"
    echo "SKIP: no $AGENT (configure found no libelf: no gotswap)"; exit 77
fi
for f in "$L/ompi/.libs/libmpi.so.40" "$L/mpich/.libs/libmpich.so.12"; do [ -f "$f" ] || fail "no shim $f"; done
work=$(mktemp -d "${TMPDIR:-/tmp}/abi_mix.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/abi/ompi" "$work/abi/mpich" "$work/noagent/ompi" "$work/noagent/mpich"
for d in abi noagent; do
    ln -s "$L/ompi/.libs/libmpi.so.40" "$work/$d/ompi/libmpi.so.40"
    ln -s "$L/mpich/.libs/libmpich.so.12" "$work/$d/mpich/libmpich.so.12"
done
ln -s "$AGENT" "$work/abi/libkumi_abimix.so"
mpicc.mpich -shared -fPIC -O1 -o "$work/libmixmpich.so" "$top_srcdir/tests/abi/mix_lib.c" > "$work/cc.log" 2>&1 &&
mpicc.openmpi -DMIX_LINKED -O1 -o "$work/linked" "$top_srcdir/tests/abi/mix_main.c" -L"$work" -lmixmpich \
    -Wl,-rpath,"$work" >> "$work/cc.log" 2>&1 &&
mpicc.openmpi -O1 -o "$work/plug" "$top_srcdir/tests/abi/mix_main.c" -ldl >> "$work/cc.log" 2>&1 ||
    { cat "$work/cc.log"; fail "cannot build the programs"; }
readelf -d "$work/linked" | grep -q 'NEEDED.*\[libmixmpich\.so\]' || fail "linked does not need libmixmpich.so"
# the reverse: an MPICH program, an Open MPI library
mkdir -p "$work/r"
mpicc.openmpi -shared -fPIC -O1 -o "$work/r/libmixompi.so" "$top_srcdir/tests/abi/mix_lib.c" > "$work/rcc.log" 2>&1 &&
mpicc.mpich -DMIX_LINKED -O1 -o "$work/rlinked" "$top_srcdir/tests/abi/mix_main.c" -L"$work/r" -lmixompi \
    -Wl,-rpath,"$work/r" >> "$work/rcc.log" 2>&1 &&
mpicc.mpich -O1 -o "$work/rplug" "$top_srcdir/tests/abi/mix_main.c" -ldl >> "$work/rcc.log" 2>&1 ||
    { cat "$work/rcc.log"; fail "cannot build the reverse programs (MPICH program, Open MPI library)"; }
bad=0
run() { # LOG N ARGS...
    local log=$work/run.$1.log n=$2; shift 2
    if (cd "$work" && KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs \
            timeout 150 "$MPIEXEC" --timeout 120 -n "$n" "$@") > "$log" 2>&1 &&
       grep -q "mix_main: $n ranks ok" "$log"; then echo "ok: $*: $n rank(s)"
    else echo "FAILED: $* at $n rank(s):"; sed 's/^/    | /' "$log" | tail -8; bad=$((bad + 1)); fi
}
# the same functions in Fortran (tests/abi/mix_flib.f90, mpif90.mpich): MPICH's Fortran shim, whose
# calls into the C library (PMPI_X) the loader binds to Open MPI's C shim, is swapped to MPICH's
fortran=
if command -v mpif90.mpich > /dev/null 2>&1; then
    ln -s "$L/mpich-fortran/.libs/libmpichfort.so.12" "$work/abi/mpich/libmpichfort.so.12"
    mkdir -p "$work/f"
    mpif90.mpich -shared -fPIC -O1 -o "$work/f/libmixmpich.so" "$top_srcdir/tests/abi/mix_flib.f90" > "$work/fc.log" 2>&1 &&
    mpicc.openmpi -DMIX_LINKED -O1 -o "$work/flinked" "$top_srcdir/tests/abi/mix_main.c" -L"$work/f" -lmixmpich \
        -Wl,-rpath,"$work/f" >> "$work/fc.log" 2>&1 || { cat "$work/fc.log"; fail "cannot build the Fortran library case"; }
    fortran=1
else
    echo "(no mpif90.mpich: the Fortran library case is not run)"
fi
for n in 1 2 4; do
    run "linked.$n" "$n" ./linked
    run "plug.$n" "$n" --abi ompi+mpich ./plug "$work/libmixmpich.so"
    [ -n "$fortran" ] && run "flinked.$n" "$n" ./flinked
    run "rlinked.$n" "$n" ./rlinked
    run "rplug.$n" "$n" --abi ompi+mpich ./rplug "$work/r/libmixompi.so"
done
# the reverse: the Open MPI plug-in's calls were swapped to Open MPI's shim, the program's were not
(cd "$work" && KUMI_ABIMIX_VERBOSE=1 KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs \
    timeout 150 "$MPIEXEC" --timeout 120 --abi ompi+mpich -n 1 ./rplug "$work/r/libmixompi.so") > "$work/rverbose.log" 2>&1
grep -q "libmixompi\.so: MPI_Allreduce -> Open MPI's" "$work/rverbose.log" ||
    { echo "FAILED: the agent did not swap the Open MPI plug-in's MPI_Allreduce"; sed 's/^/    | /' "$work/rverbose.log" | tail -5; bad=$((bad + 1)); }
grep -q "(program): " "$work/rverbose.log" && { echo "FAILED: the agent swapped the MPICH program's own calls"; bad=$((bad + 1)); }
if [ -n "$fortran" ]; then
    (cd "$work" && KUMI_ABIMIX_VERBOSE=1 KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs \
        timeout 150 "$MPIEXEC" --timeout 120 -n 1 ./flinked) > "$work/fverbose.log" 2>&1
    grep -q "libmpichfort\.so\.12: PMPI_Allreduce -> MPICH's" "$work/fverbose.log" ||
        { echo "FAILED: the agent did not swap MPICH's Fortran library's PMPI_Allreduce"; bad=$((bad + 1)); }
fi
# the agent swapped the library's calls (and only those: the program's own reach Open MPI's shim)
(cd "$work" && KUMI_ABIMIX_VERBOSE=1 KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs \
    timeout 150 "$MPIEXEC" --timeout 120 -n 1 ./linked) > "$work/verbose.log" 2>&1
grep -q "libmixmpich\.so: MPI_Allreduce -> MPICH's" "$work/verbose.log" ||
    { echo "FAILED: the agent did not report the library's MPI_Allreduce"; sed 's/^/    | /' "$work/verbose.log" | tail -5; bad=$((bad + 1)); }
grep -q "(program): " "$work/verbose.log" && { echo "FAILED: the agent swapped the program's own calls"; bad=$((bad + 1)); }
# without the agent the mixed program is refused before it starts, naming it
if (cd "$work" && KUMI_ABI_DIR=$work/noagent LD_LIBRARY_PATH=$top_builddir/framework/.libs \
        timeout 60 "$MPIEXEC" --timeout 50 -n 1 ./linked) > "$work/noagent.log" 2>&1; then
    echo "FAILED: linked ran without the agent"; bad=$((bad + 1))
elif ! grep -q "needs both Open MPI's libmpi\.so\.40 and MPICH's libmpich\.so\.12.*libkumi_abimix\.so is missing" "$work/noagent.log"; then
    echo "FAILED: no message naming the missing agent:"; sed 's/^/    | /' "$work/noagent.log" | tail -3; bad=$((bad + 1))
else echo "ok: without the agent the mixed program is refused"; fi
if (cd "$work" && KUMI_ABI_DIR=$work/noagent timeout 60 "$MPIEXEC" --abi ompi+mpich -n 1 ./plug x) > "$work/noagent2.log" 2>&1 ||
   ! grep -q "no GOT swap agent" "$work/noagent2.log"; then :; fi
grep -q "no GOT swap agent" "$work/noagent2.log" || { echo "FAILED: --abi ompi+mpich without the agent:"; sed 's/^/    | /' "$work/noagent2.log" | tail -3; bad=$((bad + 1)); }
[ "$bad" -eq 0 ] || fail "$bad check(s) failed"
echo "all runs passed"
