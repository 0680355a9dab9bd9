# The frame of the checkpoint tests (tests/scripts/ckpt_*.sh; sourced, not
# run): result checks, the /dev/shm check, waiting on a log, and the cycle
# that ckpt_rma, ckpt_part and ckpt_coll share.
#
#   ckpt_setup PROGRAM TAG    checks kumi_ckpt and tests/mpi/PROGRAM (SKIP off
#                             x86_64 Linux), sets KCKPT and PROG, works in a
#                             new folder kumi-TAG.* that the exit removes
#   ckpt_reference ARGS...    the uninterrupted run: REF (exits on failure)
#   ckpt_continue STEP ARGS...   checkpoint-and-continue at iterations STEP
#                             and 2*STEP (plus up to 80 ms), the result REF
#   ckpt_stop_restart NAME [VAR=VALUE...] -- ARGS...   --checkpoint-and-stop at
#                             a random iteration (10..80), mpiexec --restart,
#                             the result REF; the environment in both launches
# ARGS: the program's arguments.  Optional hooks, called when defined:
# ckpt_hook_continued LOG, ckpt_hook_stopped NAME LOG, ckpt_hook_restarted
# NAME LOG.  NP: ranks (default 4).  SHOW_LINES: lines show() prints (15).
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${MPIEXEC:=$top_builddir/tools/mpiexec/mpiexec}"
: "${TESTBIN:=$top_builddir/tests/mpi}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
show() { sed 's/^/    | /' "$1" | tail -"${2:-${SHOW_LINES:-15}}"; }
result() { sed -n 's/^result //p' "$1"; }
jobid() { sed -n 's/^mpiexec: job \([0-9][0-9]*\).*/\1/p' "$1" | head -1; }
# nothing of the job whose mpiexec wrote LOG left in /dev/shm
shm_clean() { # WHAT LOG
    local j; j=$(jobid "$2")
    [ -n "$j" ] || { fail "$1: no job id in mpiexec's output"; return; }
    local l; l=$(ls /dev/shm 2> /dev/null | grep -E "^(sem\.)?kumi\.$j\." | head -3)
    [ -z "$l" ] && ok "$1: nothing of job $j left in /dev/shm" || fail "$1: left in /dev/shm: $l"
}
wait_for() { # LOG PATTERN SECONDS
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        grep -q -- "$2" "$1" 2> /dev/null && return 0
        sleep 0.05
    done
    return 1
}
ckpt_finish() {
    [ $failures -eq 0 ] && { echo "all passed"; exit 0; }
    echo "$failures failure(s)"; exit 1
}

ckpt_setup() { # PROGRAM TAG
    KCKPT=$top_builddir/components/ckpt/image/kumi_ckpt
    PROG=$TESTBIN/$1
    if [ ! -x "$KCKPT" ]; then
        [ "$(uname -m)-$(uname -s)" = x86_64-Linux ] || { echo "SKIP: ckpt/image is for x86_64 Linux"; exit 77; }
        echo "FAIL: kumi_ckpt not built (components/ckpt/image)"; exit 1
    fi
    [ -x "$PROG" ] || { echo "FAIL: $PROG not built"; exit 1; }
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/kumi-$2.XXXXXX")
    trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
    cd "$TMP" || exit 1
}

ckpt_reference() { # ARGS...
    KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 -n "${NP:-4}" "$PROG" "$@" > ref.log 2>&1 < /dev/null
    REF=$(result ref.log)
    [ -n "$REF" ] && ok "reference: result $REF" || { show ref.log; fail "reference run"; exit 1; }
}

ckpt_continue() { # STEP ARGS...
    local step=$1 k pid rc
    shift
    mkdir -p cc
    : > cc.log   # a log of an earlier call here must not answer wait_for: SIGQUIT before mpiexec listens is lost
    KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --ckpt-dir cc -n "${NP:-4}" "$PROG" "$@" > cc.log 2>&1 < /dev/null &
    pid=$!
    for k in 1 2; do
        wait_for cc.log "^iteration $((k * step))" 120
        sleep "0.0$((RANDOM % 9))"
        kill -QUIT $pid
        if ! wait_for cc.log "checkpoint $k \(written\|not written\)" 120; then show cc.log; fail "continue: checkpoint $k did not end"; break; fi
        grep -q "checkpoint $k written to" cc.log && ok "continue: checkpoint $k written at $(grep '^iteration' cc.log | tail -1)" \
            || { show cc.log; fail "continue: checkpoint $k not written"; break; }
    done
    wait $pid; rc=$?
    ! declare -F ckpt_hook_continued > /dev/null || ckpt_hook_continued cc.log
    [ $rc -eq 0 ] && [ "$(result cc.log)" = "$REF" ] && ok "continue: exit 0, result bit for bit the uninterrupted run's" \
        || { show cc.log; fail "continue: exit $rc, result '$(result cc.log)', expected $REF"; }
    shm_clean continue cc.log
}

ckpt_stop_restart() { # NAME [VAR=VALUE...] -- ARGS...
    local name=$1 envs=() pid rc
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    mkdir -p "st_$name"
    : > "st_$name.log"
    env "${envs[@]}" KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --checkpoint-and-stop --ckpt-dir "st_$name" \
        -n "${NP:-4}" "$PROG" "$@" > "st_$name.log" 2>&1 < /dev/null &
    pid=$!
    wait_for "st_$name.log" "^iteration $((10 + RANDOM % 8 * 10))" 120 && sleep "0.0$((RANDOM % 9))" && kill -QUIT $pid
    wait $pid; rc=$?
    if [ $rc -eq 0 ] && grep -q "checkpoint 1 written" "st_$name.log" && ! grep -q "^result" "st_$name.log"; then
        ok "$name: stopped at $(grep '^iteration' "st_$name.log" | tail -1) with a checkpoint"
    else show "st_$name.log"; fail "$name: checkpoint-and-stop exit $rc"; return; fi
    shm_clean "$name (stopped)" "st_$name.log"
    ! declare -F ckpt_hook_stopped > /dev/null || ckpt_hook_stopped "$name" "st_$name.log"
    env "${envs[@]}" KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --restart "st_$name" > "rs_$name.log" 2>&1 < /dev/null
    rc=$?
    [ $rc -eq 0 ] && [ "$(result "rs_$name.log")" = "$REF" ] && ok "$name: restarted, exit 0, result bit for bit the uninterrupted run's" \
        || { show "rs_$name.log"; fail "$name: restart exit $rc, result '$(result "rs_$name.log")', expected $REF"; }
    ! declare -F ckpt_hook_restarted > /dev/null || ckpt_hook_restarted "$name" "rs_$name.log"
    shm_clean "$name (restarted)" "rs_$name.log"
}
