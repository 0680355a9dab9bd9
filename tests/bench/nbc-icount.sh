#!/bin/bash
# nbc-icount: instructions per issuing call of an 8 B MPI_Iallreduce and MPI_Ibcast waited at once
# (issue 22 item 4: building and starting the schedule), counted with callgrind, so independent of
# the machine's load (not part of make bench: run it by hand).  tests/bench/nbc_icount.c under
# valgrind --tool=callgrind collecting only inside PMPI_Iallreduce / PMPI_Ibcast (--toggle-collect);
# prints rank 0's and rank 1's instructions per call (N calls plus 10 of warm-up), and the same with
# MPI_Wait's counted too (for MPI_Ibcast's root, whose sends end at once, that is the whole cost of
# the operation; elsewhere it includes the polls while waiting).  The engine is
# the environment's (KUMI_BASE_SCHED_ENGINE).  KEEP=1 keeps the callgrind files.  LIBMPI=FILE: the
# ranks preload that libmpi.so.0 instead (a copy of an older build's, for a before / after count).
# Usage: top_builddir=... tests/bench/nbc-icount.sh [N (200)] [NP (2)]
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
B=${top_builddir:-$top_srcdir/_build}
N=${1:-200} NP=${2:-2}
command -v valgrind > /dev/null || { echo "nbc-icount: no valgrind"; exit 77; }
O=$(mktemp -d) || exit 1
if [ -n "${KEEP:-}" ]; then echo "nbc-icount: callgrind files kept in $O"; else trap 'rm -rf "$O"' EXIT; fi
${CC:-cc} -std=gnu11 -O2 -I"$B/framework/include" -I"$top_srcdir/framework/include" -o "$O/ic" \
    "$here/nbc_icount.c" -L"$B/framework/.libs" -Wl,-rpath,"$B/framework/.libs" -lmpi || exit 1
export KUMI_INTERNAL_NO_PKGLIBDIR=1 KUMI_COMPONENT_PATH=$(ls -d "$B"/components/*/*/.libs | tr '\n' ':')
tot() { awk '/^summary:|^totals:/ { print $2; exit }' "$1"; }
echo "instructions per issuing call, engine ${KUMI_BASE_SCHED_ENGINE:-loop}, $NP ranks (N=$N):"
for kind in iallreduce ibcast; do
    fn=PMPI_Iallreduce; [ $kind = ibcast ] && fn=PMPI_Ibcast
    for w in 0 1; do
        tw=(); [ $w = 1 ] && tw=(--toggle-collect=PMPI_Wait)
        LD_LIBRARY_PATH=$B/framework/.libs timeout 900 env -u MPI_COMPONENTS "$B/tools/mpiexec/mpiexec" \
            -n "$NP" ${LIBMPI:+-x LD_PRELOAD="$LIBMPI"} valgrind --tool=callgrind --collect-atstart=no --toggle-collect=$fn \
            "${tw[@]}" --callgrind-out-file="$O/cg.$kind.$w.%q{KUMI_RANK}" "$O/ic" "$N" "$kind" > "$O/run.$kind.log" 2>&1 ||
            { echo "nbc-icount: $kind run failed"; tail -20 "$O/run.$kind.log"; exit 1; }
    done
    for r in 0 1; do
        awk -v a="$(tot "$O/cg.$kind.0.$r")" -v b="$(tot "$O/cg.$kind.1.$r")" -v n=$((N + 10)) -v t="$fn rank $r" \
            'BEGIN { printf "  %-24s %8.1f   with MPI_Wait %8.1f\n", t, a / n, b / n }'
    done
done
