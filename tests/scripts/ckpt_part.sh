#!/bin/bash
# Checkpoints of jobs with partitioned requests (issue 20; framework/mpi/ckpt.c,
# framework/mpi/partitioned.c).  tests/mpi/ckpt_part keeps three pairs of
# persistent partitioned requests on a ring of 4 ranks: one started every
# iteration with its partitions made ready one by one (a checkpoint comes
# between MPI_Start and the completion, partitions delivered and not ready
# yet), one of rendezvous-sized partitions into a non-contiguous datatype
# started every 5th iteration (inactive at most checkpoints), one started for
# the first time after the last checkpoint (never started when the image was
# written: its channel, made at MPI_Psend_init / MPI_Precv_init, serves
# after the restart's new wire-up).
#  1. checkpoint-and-continue twice at random times (shmem): both written, the
#     result bit for bit the uninterrupted run's;
#  2. --checkpoint-and-stop at a random time, then mpiexec --restart: the same
#     result; over shmem and over tcp;
# after every job nothing of it left in /dev/shm.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${MPIEXEC:=$top_builddir/tools/mpiexec/mpiexec}"
: "${TESTBIN:=$top_builddir/tests/mpi}"
KCKPT=$top_builddir/components/ckpt/image/kumi_ckpt
PROG=$TESTBIN/ckpt_part
if [ ! -x "$KCKPT" ]; then
    [ "$(uname -m)-$(uname -s)" = x86_64-Linux ] || { echo "SKIP: ckpt/image is for x86_64 Linux"; exit 77; }
    echo "FAIL: kumi_ckpt not built (components/ckpt/image)"; exit 1
fi
[ -x "$PROG" ] || { echo "FAIL: $PROG not built"; exit 1; }
export KUMI_CKPT_RESTART_PROGRAM=$top_builddir/components/ckpt/image/kumi_restart
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kumi-ckptpart.XXXXXX")
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures+1)); }
ok() { echo "ok: $*"; }
show() { sed 's/^/    | /' "$1" | tail -${2:-15}; }
NP=4 ITERS=${CKPT_ITERS:-300}
jobid() { sed -n 's/^mpiexec: job \([0-9][0-9]*\).*/\1/p' "$1" | head -1; }
shm_clean() { # WHAT LOG
    local j; j=$(jobid "$2")
    [ -n "$j" ] || { fail "$1: no job id in mpiexec's output"; return; }
    local l; l=$(ls /dev/shm 2>/dev/null | grep -E "^(sem\.)?kumi\.$j\." | head -3)
    [ -z "$l" ] && ok "$1: nothing of job $j left in /dev/shm" || fail "$1: left in /dev/shm: $l"
}
result() { sed -n 's/^result //p' "$1"; }
wait_for() { # LOG PATTERN SECONDS
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 -n $NP "$PROG" $ITERS > ref.log 2>&1 < /dev/null
REF=$(result ref.log)
[ -n "$REF" ] && ok "reference: result $REF" || { show ref.log; fail "reference run"; exit 1; }

# 1. checkpoint-and-continue twice
mkdir -p cc
KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --ckpt-dir cc -n $NP "$PROG" $ITERS > cc.log 2>&1 < /dev/null &
pid=$!
for k in 1 2; do
    wait_for cc.log "^iteration $((k * 40))" 120
    sleep "0.0$((RANDOM % 9))"
    kill -QUIT $pid
    if ! wait_for cc.log "checkpoint $k \(written\|not written\)" 120; then show cc.log; fail "continue: checkpoint $k did not end"; break; fi
    grep -q "checkpoint $k written to" cc.log && ok "continue: checkpoint $k written at $(grep '^iteration' cc.log | tail -1)" \
        || { show cc.log; fail "continue: checkpoint $k not written"; break; }
done
wait $pid; rc=$?
[ $rc -eq 0 ] && [ "$(result cc.log)" = "$REF" ] && ok "continue: exit 0, result bit for bit the uninterrupted run's" \
    || { show cc.log; fail "continue: exit $rc, result '$(result cc.log)', expected $REF"; }
shm_clean continue cc.log

# 2. stop at a random time, restart
stop_restart() { # NAME [env...]
    local name=$1; shift
    mkdir -p "st_$name"
    env "$@" KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --checkpoint-and-stop --ckpt-dir "st_$name" -n $NP "$PROG" $ITERS \
        > "st_$name.log" 2>&1 < /dev/null &
    local pid=$!
    wait_for "st_$name.log" "^iteration $((10 + RANDOM % 8 * 10))" 120 && sleep "0.0$((RANDOM % 9))" && kill -QUIT $pid
    wait $pid; local rc=$?
    if [ $rc -eq 0 ] && grep -q "checkpoint 1 written" "st_$name.log" && ! grep -q "^result" "st_$name.log"; then
        ok "$name: stopped at $(grep '^iteration' "st_$name.log" | tail -1) with a checkpoint"
    else show "st_$name.log"; fail "$name: checkpoint-and-stop exit $rc"; return; fi
    shm_clean "$name (stopped)" "st_$name.log"
    env "$@" KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --restart "st_$name" > "rs_$name.log" 2>&1 < /dev/null; rc=$?
    [ $rc -eq 0 ] && [ "$(result "rs_$name.log")" = "$REF" ] && ok "$name: restarted, exit 0, result bit for bit the uninterrupted run's" \
        || { show "rs_$name.log"; fail "$name: restart exit $rc, result '$(result "rs_$name.log")', expected $REF"; }
    shm_clean "$name (restarted)" "rs_$name.log"
}
stop_restart shmem
stop_restart tcp MPI_COMPONENTS=p2p=self,tcp

[ $failures -eq 0 ] && { echo "all passed"; exit 0; }
echo "$failures failure(s)"; exit 1
