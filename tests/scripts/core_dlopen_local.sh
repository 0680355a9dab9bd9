#!/bin/bash
# core_dlopen_local: libmpi loaded by dlopen(RTLD_LOCAL), as a Python extension
# module or any plug-in host loads it (issue 16 item 12c).  The program
# (tests/scripts/lib/dlopen_local.c) is not linked with libmpi; it finds
# MPI_Init, MPI_Comm_rank, MPI_Allreduce and MPI_Finalize with dlsym and runs
# at 2 ranks under mpiexec, so that the p2p, coll and rpim components load:
# they must resolve libmpi's symbols although libmpi is not in the global
# scope (they failed with "undefined symbol: kumi_param_register_string" and
# the ranks exited 127).  Run with the default components and with TCP.
set -u
: "${MPIEXEC:?}" "${top_srcdir:?}" "${top_builddir:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
lib=$top_builddir/framework/.libs/libmpi.so
[ -f "$lib" ] || fail "no $lib"
"${CC:-cc}" -std=gnu11 -Wall -I"$top_builddir/framework/include" -I"$top_srcdir/framework/include" \
    -o "$tmp/dlopen_local" "$top_srcdir/tests/scripts/lib/dlopen_local.c" -ldl 2> "$tmp/cc.err" ||
    { cat "$tmp/cc.err"; fail "dlopen_local.c does not build"; }
if readelf -d "$tmp/dlopen_local" | grep -q 'NEEDED.*libmpi'; then
    fail "dlopen_local is linked with libmpi: the test would prove nothing"
fi
for comps in "" "p2p=self,tcp"; do
    what=${comps:-default components}
    out=$(MPI_COMPONENTS=$comps timeout 60 "$MPIEXEC" -n 2 "$tmp/dlopen_local" "$lib" 2>&1)
    rc=$?
    [ $rc -eq 0 ] || fail "($what) exit $rc: $out"
    for r in 0 1; do
        echo "$out" | grep -q "^dlopen_local: rank $r of 2 sum 3$" || fail "($what) no right sum from rank $r: $out"
    done
done
echo "core_dlopen_local: ok"
exit 0
