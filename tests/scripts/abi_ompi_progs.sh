#!/bin/bash
# abi_ompi_progs: C programs built with mpicc.openmpi run unmodified on Kumi through the Open
# MPI ABI shim at 1, 2 and 4 ranks: tests/abi/ompi_xlate.c (checks that the library is Kumi,
# reached through the shim, and each kind of translation: handles, ranks and tags, statuses
# and their arrays, error classes and handlers, comparison results, combiners, MPI_IN_PLACE,
# MPI_BOTTOM, user ops, attribute keyvals, datatype contents, RMA asserts and attributes,
# info keys, Fortran integers of handles), examples/ring.c, tests/abi/ompi_nbrw.c (MPI_Ialltoallw
# and MPI_Ineighbor_alltoallw, whose converted type arrays are freed on return), and project tests of tests/mpi
# (p2p with statuses and wildcards, probe, Waitall/Waitany/Testsome, cancel, persistent requests,
# generalized requests, truncation, collectives, reduction ops, derived datatypes, attributes,
# communicators, intercommunicators with MPI_ROOT, groups, error classes, topologies, RMA,
# threads, nonblocking collectives).  A run on Open MPI's own libmpi.so.40 (no shim) must fail the
# Kumi check.
set -u
. "$top_srcdir/tests/scripts/abi_ompi_common.inc"
ompicc xlate "$top_srcdir/tests/abi/ompi_xlate.c"
ompicc ring "$top_srcdir/examples/ring.c"
ompicc nbrw "$top_srcdir/tests/abi/ompi_nbrw.c"
progs1="coll_all coll_ops coll_userop coll_derived dt_bottom dt_comm p2p_types p2p_persist p2p_trunc core_comm
        core_errors grp_algebra topo_cart topo_graph rma_ops nbc_multi attr_predef attr_errors greq_basic
        comm_threads nbc_basic"
progs2="p2p_probe p2p_wait p2p_match p2p_cancel p2p_early err_call inter_basic inter_coll"
for p in $progs1 $progs2; do ompicc "$p" "$top_srcdir/tests/mpi/$p.c"; done
bad=0
run() { # N PROG
    local log=$work/run.$2.$1.log
    if onshim "$1" "./$2" > "$log" 2>&1; then echo "ok: $2 at $1"
    else echo "FAILED: $2 at $1 rank(s):"; sed 's/^/    | /' "$log" | tail -8; bad=$((bad + 1)); fi
}
for n in 1 2 4; do
    run "$n" xlate
    grep -q "ompi_xlate: $n ranks ok" "$work/run.xlate.$n.log" || { echo "FAILED: xlate at $n printed no result"; bad=$((bad + 1)); }
    run "$n" ring
    run "$n" nbrw
    grep -q "ompi_nbrw: $n ranks ok" "$work/run.nbrw.$n.log" || { echo "FAILED: nbrw at $n printed no result"; bad=$((bad + 1)); }
    for p in $progs1; do run "$n" "$p"; done
    [ "$n" -ge 2 ] && for p in $progs2; do run "$n" "$p"; done
done
grep -q "got the token 45 back" "$work/run.ring.4.log" || { echo "FAILED: ring at 4 ranks: no token back"; bad=$((bad + 1)); }
# mpiexec chooses the shim by itself (the program needs libmpi.so.40): nothing on
# LD_LIBRARY_PATH but Kumi's own libmpi.so.0; KUMI_ABI_DIR points at this build's shim
mkdir -p "$work/abi/ompi" && ln -sf "$SHIMDIR/libmpi.so.40" "$work/abi/ompi/libmpi.so.40"
if (cd "$work" && KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs \
        timeout 120 "$MPIEXEC" --timeout 100 -n 2 ./xlate) > "$work/auto.log" 2>&1 &&
   grep -q "ompi_xlate: 2 ranks ok" "$work/auto.log"; then
    echo "ok: xlate at 2 with the shim chosen by mpiexec"
else
    echo "FAILED: xlate with the shim chosen by mpiexec:"; sed 's/^/    | /' "$work/auto.log" | tail -8; bad=$((bad + 1))
fi
# without the shim (mpiexec told the program is of the standard ABI, so it puts no shim on
# LD_LIBRARY_PATH) the program gets Open MPI's libmpi.so.40, which is not Kumi: it must fail
if (cd "$work" && timeout 120 "$MPIEXEC" --abi standard --timeout 100 -n 1 ./xlate) > "$work/noshim.log" 2>&1; then
    fail "xlate passed without the shim (its Kumi check is broken)"
fi
grep -q "not Kumi\|libmpi.so.40" "$work/noshim.log" || { sed 's/^/    | /' "$work/noshim.log" | tail -5; echo "note: without the shim it failed otherwise"; }
[ "$bad" -eq 0 ] || fail "$bad run(s) failed"
echo "all runs passed"
