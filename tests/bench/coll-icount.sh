#!/bin/bash
# coll-icount: instructions per call of 8 B MPI_Bcast and of MPI_Barrier at 2 ranks (issue 22 item 4),
# counted with callgrind, so independent of the machine's load (not part of make bench: run it by
# hand).  tests/bench/coll_icount.c under valgrind --tool=callgrind, collecting only inside the MPI
# function (--toggle-collect), with coll_sm_spin=0; prints the instructions per call with the
# waiting (kumi_coll_wait_until, inclusive) left out: for Bcast the root's and the receiver's (whose
# data is there), for Barrier each rank's when rank 0 / rank 1 arrives last.  KEEP=1 keeps the
# callgrind files.  Usage: top_builddir=... tests/bench/coll-icount.sh [N (100)]
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
B=${top_builddir:-$top_srcdir/_build}
N=${1:-100}
command -v valgrind > /dev/null || { echo "coll-icount: no valgrind"; exit 77; }
O=$(mktemp -d) || exit 1
if [ -n "${KEEP:-}" ]; then echo "coll-icount: callgrind files kept in $O"; else trap 'rm -rf "$O"' EXIT; fi
${CC:-cc} -std=gnu11 -O2 -I"$B/framework/include" -I"$top_srcdir/framework/include" -o "$O/ic" \
    "$here/coll_icount.c" -L"$B/framework/.libs" -Wl,-rpath,"$B/framework/.libs" -lmpi || exit 1
export KUMI_INTERNAL_NO_PKGLIBDIR=1 KUMI_COMPONENT_PATH=$(ls -d "$B"/components/*/*/.libs | tr '\n' ':')
incl() { # FILE FUNCTION: its inclusive instruction count
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2> /dev/null |
        awk -v f="$2" '{ g = $0; sub(/.*:/, "", g); sub(/ .*/, "", g); c = $1; gsub(/,/, "", c) }
                       g == f { print c; exit }'
}
tot() { awk '/^summary:|^totals:/ { print $2; exit }' "$1"; }
per() { # FILE CALLS LABEL
    awk -v a="$(tot "$1")" -v w="$(incl "$1" kumi_coll_wait_until)" -v n="$2" -v t="$3" \
        'BEGIN { printf "  %-22s %8.1f  (%.1f with the waiting)\n", t, (a - w) / n, a / n }'
}
echo "instructions per call, waiting left out (N=$N):"
for kind in bcast barrier barrier1; do
    fn=PMPI_Barrier; [ $kind = bcast ] && fn=PMPI_Bcast
    LD_LIBRARY_PATH=$B/framework/.libs timeout 900 env -u MPI_COMPONENTS KUMI_COLL_SM_SPIN=0 "$B/tools/mpiexec/mpiexec" \
        -n 2 valgrind --tool=callgrind --collect-atstart=no --toggle-collect=$fn \
        --callgrind-out-file="$O/cg.$kind.%q{KUMI_RANK}" "$O/ic" "$N" "$kind" > "$O/run.$kind.log" 2>&1 ||
        { echo "coll-icount: $kind run failed"; tail -20 "$O/run.$kind.log"; exit 1; }
    case $kind in
    bcast) per "$O/cg.$kind.0" $((N * 16)) "MPI_Bcast root"; per "$O/cg.$kind.1" $((N * 16)) "MPI_Bcast receiver" ;;
    barrier) per "$O/cg.$kind.0" "$N" "MPI_Barrier rank 0 last"; per "$O/cg.$kind.1" "$N" "MPI_Barrier rank 1 first" ;;
    barrier1) per "$O/cg.$kind.1" "$N" "MPI_Barrier rank 1 last"; per "$O/cg.$kind.0" "$N" "MPI_Barrier rank 0 first" ;;
    esac
done
