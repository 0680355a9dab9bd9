#!/bin/bash
# abi_entries: libmpi exports, for each MPI procedure its generated binding
# defines, the non-colliding entry kumi_abi_MPI_X that the foreign-ABI shims
# call (an alias of PMPI_X: the same address), so that a shim which itself
# exports MPI_X / PMPI_X of another ABI never calls itself.  Only the handle
# conversions (c2f/f2c, toint/fromint) and the variadic MPI_Pcontrol, written
# by hand, have none.
set -u
: "${top_builddir:?}"
lib=$top_builddir/framework/.libs/libmpi.so
[ -f "$lib" ] || { echo "FAIL: no $lib"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
nm -D --defined-only "$lib" | awk '{print $1, $3}' > "${TMPDIR:-/tmp}/abi_entries.$$" || fail "nm $lib"
trap 'rm -f "${TMPDIR:-/tmp}/abi_entries.$$"' EXIT
awk '
    { addr[$2] = $1 }
    END {
        n = 0; bad = 0
        for (s in addr) {
            if (s !~ /^MPI_/) continue
            if (s ~ /_(c2f|f2c|toint|fromint|c2f08|f082c|f082f|f2f08)$/ || s == "MPI_Pcontrol") continue
            n++
            if (!(("kumi_abi_" s) in addr)) { print "missing: kumi_abi_" s; bad++ }
            else if (addr["kumi_abi_" s] != addr["P" s]) { print "not an alias of P" s ": kumi_abi_" s; bad++ }
        }
        for (s in addr) if (s ~ /^kumi_abi_MPI_/ && !(substr(s, 10) in addr)) { print "no MPI procedure: " s; bad++ }
        print n " procedures checked"
        exit bad ? 1 : 0
    }' "${TMPDIR:-/tmp}/abi_entries.$$" > "${TMPDIR:-/tmp}/abi_entries.out.$$"
rc=$?
tail -1 "${TMPDIR:-/tmp}/abi_entries.out.$$"
[ $rc -eq 0 ] || { head -20 "${TMPDIR:-/tmp}/abi_entries.out.$$"; rm -f "${TMPDIR:-/tmp}/abi_entries.out.$$"; fail "entries missing or wrong (above)"; }
n=$(tail -1 "${TMPDIR:-/tmp}/abi_entries.out.$$" | awk '{print $1}')
rm -f "${TMPDIR:-/tmp}/abi_entries.out.$$"
[ "$n" -gt 400 ] || fail "only $n procedures found in $lib"
