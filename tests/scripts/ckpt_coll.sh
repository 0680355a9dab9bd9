#!/bin/bash
# Checkpoints of jobs whose small collectives run on coll/sm's shared-memory
# segments (issue 20; components/coll/sm/coll_sm.c "checkpoints",
# framework/mpi/ckpt.c).  tests/mpi/ckpt_coll runs small blocking
# collectives on MPI_COMM_WORLD and on a split communicator in a loop, with
# uneven computation between them (ranks wait inside collectives), 4 ranks
# on one host:
#  1. checkpoint-and-continue twice at random times: both written, coll/sm's
#     segments in use at each (its KUMI_VERBOSE line), the result bit for bit
#     the uninterrupted run's;
#  2. --checkpoint-and-stop at a random time, then mpiexec --restart (the
#     segments made again under the new job's names): the same result; with
#     p2p over shmem and over tcp, and with the thread schedule engine;
# after every job nothing of it left in /dev/shm.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${MPIEXEC:=$top_builddir/tools/mpiexec/mpiexec}"
: "${TESTBIN:=$top_builddir/tests/mpi}"
KCKPT=$top_builddir/components/ckpt/image/kumi_ckpt
PROG=$TESTBIN/ckpt_coll
if [ ! -x "$KCKPT" ]; then
    [ "$(uname -m)-$(uname -s)" = x86_64-Linux ] || { echo "SKIP: ckpt/image is for x86_64 Linux"; exit 77; }
    echo "FAIL: kumi_ckpt not built (components/ckpt/image)"; exit 1
fi
[ -x "$PROG" ] || { echo "FAIL: $PROG not built"; exit 1; }
export KUMI_CKPT_RESTART_PROGRAM=$top_builddir/components/ckpt/image/kumi_restart
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kumi-ckptcoll.XXXXXX")
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
cd "$TMP" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures+1)); }
ok() { echo "ok: $*"; }
show() { sed 's/^/    | /' "$1" | tail -${2:-15}; }
NP=4 ITERS=${CKPT_ITERS:-3000}
jobid() { sed -n 's/^mpiexec: job \([0-9][0-9]*\).*/\1/p' "$1" | head -1; }
shm_clean() { # WHAT LOG
    local j; j=$(jobid "$2")
    [ -n "$j" ] || { fail "$1: no job id in mpiexec's output"; return; }
    local l; l=$(ls /dev/shm 2>/dev/null | grep -E "^(sem\.)?kumi\.$j\." | head -3)
    [ -z "$l" ] && ok "$1: nothing of job $j left in /dev/shm" || fail "$1: left in /dev/shm: $l"
}
result() { sed -n 's/^result //p' "$1"; }
# coll/sm ran (each rank has a segment of MPI_COMM_WORLD and one of its half)
# and kept them through each checkpoint: its KUMI_VERBOSE line, once per rank
# and checkpoint
sm_used() { # WHAT LOG COUNT
    local n b; n=$(grep -c "coll/sm: 2 segments kept through the checkpoint" "$2")
    b=$(grep -c "coll/sm: 2 segments kept through the checkpoint ([1-9]" "$2")
    [ "$n" = "$3" ] && ok "$1: coll/sm's segments in use at the checkpoint ($n lines; $b with a collective in progress)" \
        || { show "$2"; fail "$1: $n of $3 lines of coll/sm's segments kept through the checkpoint"; }
}
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
    wait_for cc.log "^iteration $((k * 400))" 120
    sleep "0.0$((RANDOM % 9))"
    kill -QUIT $pid
    if ! wait_for cc.log "checkpoint $k \(written\|not written\)" 120; then show cc.log; fail "continue: checkpoint $k did not end"; break; fi
    grep -q "checkpoint $k written to" cc.log && ok "continue: checkpoint $k written at $(grep '^iteration' cc.log | tail -1)" \
        || { show cc.log; fail "continue: checkpoint $k not written"; break; }
done
sm_used continue cc.log $((NP * 2))
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
    sm_used "$name (stopped)" "st_$name.log" $NP
    env "$@" KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --restart "st_$name" > "rs_$name.log" 2>&1 < /dev/null; rc=$?
    [ $rc -eq 0 ] && [ "$(result "rs_$name.log")" = "$REF" ] && ok "$name: restarted, exit 0, result bit for bit the uninterrupted run's" \
        || { show "rs_$name.log"; fail "$name: restart exit $rc, result '$(result "rs_$name.log")', expected $REF"; }
    local made; made=$(grep -c "coll/sm: restart: 2 segments shared again, 0 given up" "rs_$name.log")
    [ "$made" = $NP ] && ok "$name: every rank's two segments shared again at the restart" \
        || { show "rs_$name.log"; fail "$name: $made of $NP ranks said they shared their 2 segments again"; }
    shm_clean "$name (restarted)" "rs_$name.log"
}
stop_restart shmem
stop_restart tcp MPI_COMPONENTS=p2p=self,tcp
stop_restart thread KUMI_BASE_SCHED_ENGINE=thread

[ $failures -eq 0 ] && { echo "all passed"; exit 0; }
echo "$failures failure(s)"; exit 1
