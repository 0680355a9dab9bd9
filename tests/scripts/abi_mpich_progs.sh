#!/bin/bash
# abi_mpich_progs: C programs built with Debian's mpicc.mpich (against MPICH's mpi.h and
# libmpich.so.12) run unmodified on Kumi through the MPICH ABI shim (components/abi/mpich:
# libmpich.so.12, here the build tree's copy) at 1, 2 and 4 ranks: tests/abi/mpich_xlate.c
# (ompi_xlate.c's checks with MPICH's constants, plus MPICH's own: int handles with the kind
# bits, table entries given back on free and completion, persistent requests, the 20-byte
# status with a count beyond 32 bits, MPI_UNWEIGHTED), tests/abi/mpich_threads.c
# (MPI_THREAD_MULTIPLE: threads creating and freeing communicators, datatypes and requests at
# once), tests/abi/mpich_large.c (MPI 4.0's large-count forms MPI_X_c: counts beyond INT_MAX,
# MPI_Aint displacements), tests/abi/mpich_reqs.c (the request table: a completed handle's slot
# reused under a new generation, thousands outstanding, Testany / Waitsome over arrays with
# nulls, frees while active, persistent and generalized requests, messages),
# tests/abi/mpich_wtypes.c (MPI_Alltoallw_init, MPI_Neighbor_alltoallw_init and their _c forms,
# MPI_Type_get_envelope_c / MPI_Type_get_contents_c), examples/ring.c and the tests/mpi programs that abi_ompi_progs.sh runs.  mpiexec
# picks the shim by itself (KUMI_ABI_DIR: a folder with this build's shim; nothing but Kumi's
# libmpi.so.0 on LD_LIBRARY_PATH), also through the libmpi.so.12 name.  A run on MPICH's own
# libmpich.so.12 (no shim) must fail the Kumi check.  Skips (77) where mpicc.mpich is absent.
set -u
: "${top_builddir:?}" "${top_srcdir:?}" "${MPIEXEC:?}"
fail() { echo "FAIL: $*"; exit 1; }
MPICHCC=${MPICHCC:-mpicc.mpich}
command -v "$MPICHCC" > /dev/null 2>&1 || { echo "SKIP: $MPICHCC not found (Debian: mpich, libmpich-dev)"; exit 77; }
SHIMDIR=$top_builddir/components/abi/mpich/.libs
[ -f "$SHIMDIR/libmpich.so.12" ] || fail "no shim $SHIMDIR/libmpich.so.12 (components/abi/mpich not built)"
[ -L "$SHIMDIR/libmpi.so.12" ] || fail "no libmpi.so.12 link next to the shim"
work=$(mktemp -d "${TMPDIR:-/tmp}/abi_mpich.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/abi/mpich"
ln -s "$SHIMDIR/libmpich.so.12" "$work/abi/mpich/libmpich.so.12"
ln -s libmpich.so.12 "$work/abi/mpich/libmpi.so.12"
# mcc OUT SRC [flags...]: a binary of MPICH's ABI (it must need libmpich.so.12)
mcc() {
    local out=$1 src=$2; shift 2
    "$MPICHCC" -O1 -I"$top_srcdir/tests/mpi" -o "$work/$out" "$src" "$@" -lm > "$work/$out.cc.log" 2>&1 ||
        { cat "$work/$out.cc.log"; fail "$MPICHCC $src $*"; }
    readelf -d "$work/$out" | grep -q 'NEEDED.*\[libmpich\.so\.12\]' || fail "$out does not need libmpich.so.12"
}
# onshim N PROG: Kumi's mpiexec chooses the shim (in KUMI_ABI_DIR) by itself
onshim() {
    local n=$1; shift
    (cd "$work" && KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs \
        timeout 200 "$MPIEXEC" --timeout 180 -n "$n" "$@")
}
mcc xlate "$top_srcdir/tests/abi/mpich_xlate.c"
mcc threads "$top_srcdir/tests/abi/mpich_threads.c" -pthread
mcc ring "$top_srcdir/examples/ring.c"
mcc large "$top_srcdir/tests/abi/mpich_large.c"   # MPI 4.0 large-count forms (MPI_X_c)
mcc reqs "$top_srcdir/tests/abi/mpich_reqs.c"     # the request table: generations, many at once, frees
mcc wtypes "$top_srcdir/tests/abi/mpich_wtypes.c" # Alltoallw_init (_c), Neighbor_alltoallw_init (_c), Type_get_contents_c
progs1="coll_all coll_ops coll_userop coll_derived dt_bottom dt_comm p2p_types p2p_persist p2p_trunc core_comm
        core_errors grp_algebra topo_cart topo_graph rma_ops nbc_multi attr_predef attr_errors greq_basic
        comm_threads"
progs2="p2p_probe p2p_wait p2p_match p2p_cancel p2p_early err_call inter_basic inter_coll"
for p in $progs1 $progs2; do mcc "$p" "$top_srcdir/tests/mpi/$p.c"; done
bad=0
run() { # N PROG
    local log=$work/run.$2.$1.log
    if onshim "$1" "./$2" > "$log" 2>&1; then echo "ok: $2 at $1"
    else echo "FAILED: $2 at $1 rank(s):"; sed 's/^/    | /' "$log" | tail -8; bad=$((bad + 1)); fi
}
for n in 1 2 4; do
    run "$n" xlate
    grep -q "mpich_xlate: $n ranks ok" "$work/run.xlate.$n.log" || { echo "FAILED: xlate at $n printed no result"; bad=$((bad + 1)); }
    run "$n" threads
    grep -q "mpich_threads: $n ranks x 4 threads ok" "$work/run.threads.$n.log" || { echo "FAILED: threads at $n printed no result"; bad=$((bad + 1)); }
    run "$n" ring
    run "$n" large
    grep -q "mpich_large: $n ranks ok" "$work/run.large.$n.log" || { echo "FAILED: large at $n printed no result"; bad=$((bad + 1)); }
    for p in reqs wtypes; do
        run "$n" $p
        grep -q "mpich_$p: $n ranks ok" "$work/run.$p.$n.log" || { echo "FAILED: $p at $n printed no result"; bad=$((bad + 1)); }
    done
    for p in $progs1; do run "$n" "$p"; done
    [ "$n" -ge 2 ] && for p in $progs2; do run "$n" "$p"; done
done
grep -q "got the token 45 back" "$work/run.ring.4.log" || { echo "FAILED: ring at 4 ranks: no token back"; bad=$((bad + 1)); }
# the shim was the one in the process (xlate checks /proc/self/maps for .../abi/mpich.../libmpich.so.12)
# a program that needs libmpi.so.12 (the other name of MPICH's library): linked against a stub
# of that soname defining what ring imports; at run time mpiexec gives it the shim's link
mkdir -p "$work/l12"
nm -D --undefined-only "$work/ring" | awk '/ P?MPI_/ { print "void " $2 "(void) {}" }' > "$work/l12/stub.c"
gcc -shared -fPIC -o "$work/l12/libmpi.so.12" -Wl,-soname,libmpi.so.12 "$work/l12/stub.c" > "$work/l12/cc.log" 2>&1 ||
    { cat "$work/l12/cc.log"; fail "stub libmpi.so.12"; }
gcc -O1 $("$MPICHCC" -show | tr ' ' '\n' | grep '^-I' | tr '\n' ' ') -o "$work/ring12" \
    "$top_srcdir/examples/ring.c" -L"$work/l12" -l:libmpi.so.12 > "$work/ring12.cc.log" 2>&1 || { cat "$work/ring12.cc.log"; fail "ring12"; }
readelf -d "$work/ring12" | grep -q 'NEEDED.*\[libmpi\.so\.12\]' || fail "ring12 does not need libmpi.so.12"
readelf -d "$work/ring12" | grep -q 'NEEDED.*\[libmpich\.so\.12\]' && fail "ring12 needs libmpich.so.12 too"
run 2 ring12
grep -q "got the token 43 back" "$work/run.ring12.2.log" || { echo "FAILED: ring12 at 2 ranks: no token back"; bad=$((bad + 1)); }
# without the shim (mpiexec told the program is of the standard ABI, so it puts no shim on
# LD_LIBRARY_PATH) the program gets MPICH's own libmpich.so.12, which is not Kumi: it must fail
if (cd "$work" && timeout 120 "$MPIEXEC" --abi standard --timeout 100 -n 1 ./xlate) > "$work/noshim.log" 2>&1; then
    fail "xlate passed without the shim (its Kumi check is broken)"
fi
grep -q "not Kumi\|libmpich.so.12" "$work/noshim.log" || { sed 's/^/    | /' "$work/noshim.log" | tail -5; echo "note: without the shim it failed otherwise"; }
[ "$bad" -eq 0 ] || fail "$bad run(s) failed"
echo "all runs passed"
