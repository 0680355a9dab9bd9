#!/bin/bash
# launch_orphan: mpiexec SIGKILLed while its ranks run.  The ranks notice that
# their launcher is gone (rpim/fork watches the control connection; the
# parent-death signal for a rank that is not in MPI) and end within about a
# second, removing the job's shared-memory objects (/dev/shm/kumi.<jobid>.*)
# that mpiexec can no longer remove.  Modes of tests/mpi/launch_orphan.c:
# computing without MPI calls, blocked in MPI_Recv, and never calling MPI_Init.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
[ -x "$TESTBIN/launch_orphan" ] || { echo "SKIP: launch_orphan not built"; exit 77; }
[ -d /dev/shm ] || { echo "SKIP: no /dev/shm"; exit 77; }
tmp=$(mktemp -d) || exit 1
prog=$tmp/launch_orphan_u$$
cp "$TESTBIN/launch_orphan" "$prog" || exit 1
cleanup() { pkill -KILL -f "$prog" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
alive() { # pid: running and not a zombie
    local st
    st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

for mode in compute recv noinit; do
    "$MPIEXEC" -n 4 "$prog" "$mode" > "$tmp/out.$mode" 2> "$tmp/err.$mode" < /dev/null &
    mp=$!
    job=
    for _ in $(seq 400); do
        job=$(sed -n 's/^ready \([0-9][0-9]*\)$/\1/p' "$tmp/out.$mode")
        [ -n "$job" ] && [ "$(grep -c '^rank ' "$tmp/out.$mode")" -eq 4 ] && break
        job=
        sleep 0.05
    done
    [ -n "$job" ] || { kill -KILL $mp; cat "$tmp/err.$mode"; fail "$mode: the job did not get ready"; }
    pids=$(sed -n 's/^rank [0-9]* pid \([0-9]*\)$/\1/p' "$tmp/out.$mode")
    if [ "$mode" != noinit ] && ! ls /dev/shm | grep -q "^kumi\.$job\."; then
        echo "note: $mode: no /dev/shm/kumi.$job.* while the job runs (no shared memory here?)"
    fi
    kill -KILL $mp
    wait $mp 2>/dev/null
    t0=$(date +%s.%N)
    left=
    for _ in $(seq 40); do           # 2 s
        left=
        for p in $pids; do alive "$p" && left="$left $p"; done
        shm=$(ls /dev/shm | grep -E "^(sem\.)?kumi\.$job\.")
        [ -z "$left" ] && [ -z "$shm" ] && break
        sleep 0.05
    done
    t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')
    [ -z "$left" ] || fail "$mode: ranks still running 2 s after mpiexec was killed:$left"
    [ -z "$shm" ] || fail "$mode: left in /dev/shm 2 s after mpiexec was killed: $(echo $shm)"
    echo "$mode: every rank ended and /dev/shm is clean ${t} s after mpiexec was SIGKILLed (job $job)"
done
exit 0
