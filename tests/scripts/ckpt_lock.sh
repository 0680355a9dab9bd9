#!/bin/bash
# A job with checkpoints enabled (mpiexec --ckpt) but none requested runs
# with the library lock off (issue 20: no measurable slowdown; the lock is
# taken only while a checkpoint is requested, framework/core/lock.c,
# "Checkpoints").  Counted in instructions with valgrind's callgrind, which
# does not depend on the machine's load: tests/mpi/ckpt_calls's loop of three
# cheap calls per round (MPI_Comm_rank, MPI_Iprobe, MPI_Type_size), one rank,
# with and without --ckpt.  --ckpt may add at most CKPT_MAX_PER_CALL (30)
# instructions per call (counting the call costs about 20; the lock taken in
# every call, kumi_ckpt_lock_always=1, costs about 170).  That the lock-off
# job still checkpoints (blocked in MPI_Recv, computing, in a call) is
# tests/scripts/ckpt_mpi.sh's.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${MPIEXEC:=$top_builddir/tools/mpiexec/mpiexec}"
: "${TESTBIN:=$top_builddir/tests/mpi}"
PROG=$TESTBIN/ckpt_calls
command -v valgrind > /dev/null || { echo "SKIP: valgrind not installed"; exit 77; }
[ -x "$PROG" ] || { echo "FAIL: $PROG not built"; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kumi-ckptlock.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
N=20000 MAX=${CKPT_MAX_PER_CALL:-30}
count() { # NAME MPIEXEC-OPTIONS...: instructions of ckpt_calls_loop
    local name=$1; shift
    "$MPIEXEC" --timeout 300 "$@" -n 1 valgrind --tool=callgrind --collect-atstart=no \
        --toggle-collect=ckpt_calls_loop --callgrind-out-file="$TMP/cg.$name" "$PROG" $N > "$TMP/$name.log" 2>&1 < /dev/null \
        || { sed 's/^/    | /' "$TMP/$name.log" | tail -15; echo "FAIL: $name: the job failed"; exit 1; }
    sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$TMP/cg.$name"
}
plain=$(count plain)
ckpt=$(count ckpt --ckpt)
[ -n "$plain" ] && [ -n "$ckpt" ] && [ "$plain" -gt 0 ] || { echo "FAIL: no instruction counts ('$plain', '$ckpt')"; exit 1; }
per=$(awk -v a="$plain" -v b="$ckpt" -v n=$N 'BEGIN { printf "%.1f", (b - a) / (3 * n) }')
echo "instructions in $N rounds of 3 calls: plain $plain, --ckpt $ckpt: $per more per call (ratio $(awk -v a="$plain" -v b="$ckpt" 'BEGIN { printf "%.3f", b / a }'))"
if awk -v p="$per" -v m="$MAX" 'BEGIN { exit !(p <= m) }'; then
    echo "ok: --ckpt adds $per instructions per call (at most $MAX)"
else
    echo "FAIL: --ckpt adds $per instructions per call (more than $MAX): is the library lock on in every call?"; exit 1
fi
always=$(KUMI_CKPT_LOCK_ALWAYS=1 count always --ckpt)
echo "note: with the lock on in every call (kumi_ckpt_lock_always=1): $always, $(awk -v a="$plain" -v b="$always" -v n=$N 'BEGIN { printf "%.1f", (b - a) / (3 * n) }') more per call"
echo "all passed"
