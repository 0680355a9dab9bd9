#!/bin/bash
# Coordinated checkpoints (issue 20): how long after a checkpoint request the
# calls of a rank asleep in poll() (MPI_Recv, MPI_Barrier of tests/mpi/ckpt_job
# "block": ranks 1-3 wait, rank 0 computes outside MPI) have left the library
# for the checkpoint (each rank logs it: "checkpoint N: the library's calls out
# X ms after the request"), with the request's wake-up (kumi_ckpt_wake=1, the
# default) and without it (0: the call goes over to the lock at the end of its
# sleep, kumi_base_progress_sleep_ms), interleaved, ROUNDS jobs each.  Only the
# first checkpoint of a job counts: after it the blocked calls hold the lock
# and release it in every sleep.  Not part of make check or make bench.
#
#   top_builddir=BUILD tests/bench/ckpt-wake-bench.sh   (ROUNDS: 5)
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
MPIEXEC=$top_builddir/tools/mpiexec/mpiexec
PROG=$top_builddir/tests/mpi/ckpt_job
[ -x "$PROG" ] || { echo "$PROG not built (make -C tests check-programs)"; exit 1; }
KUMI_COMPONENT_PATH=$(ls -d "$top_builddir"/components/*/*/.libs 2>/dev/null | tr '\n' ':')
export KUMI_COMPONENT_PATH KUMI_INTERNAL_NO_PKGLIBDIR=1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kumi-ckptwake.XXXXXX")
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
ROUNDS=${ROUNDS:-5}
. "$top_srcdir/tests/scripts/lib/ckpt_frame.sh"     # wait_for
for r in $(seq "$ROUNDS"); do
    for w in 0 1; do
        rm -rf d go
        mkdir d
        KUMI_CKPT_WAKE=$w KUMI_VERBOSE=1 "$MPIEXEC" --timeout 120 --ckpt-dir d -n 4 "$PROG" 20 block 5 \
            > "job.$w.$r.log" 2>&1 < /dev/null &
        pid=$!
        wait_for "job.$w.$r.log" "^blocking" 60
        sleep 0.3
        kill -QUIT $pid
        wait_for "job.$w.$r.log" "checkpoint 1 \(written\|not written\)" 60 || echo "round $r, wake $w: no checkpoint"
        touch go
        wait $pid
    done
done
for w in 0 1; do
    echo -n "kumi_ckpt_wake=$w: ms from the request to the calls out, ranks 1-3, first checkpoint: "
    grep -h "kumi\[[123]\].*checkpoint 1: the library.s calls out" job.$w.*.log | sed 's/.*calls out \([0-9.]*\) ms.*/\1/' \
        | sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "n %d, min %.3f, median %.3f, max %.3f\n", NR, a[1], a[int((NR + 1) / 2)], a[NR]; else print "none" }'
done
