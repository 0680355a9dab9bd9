#!/bin/bash
# launch_fail: when one rank exits non-zero, is killed by a signal, calls
# MPI_Abort or exits without MPI_Finalize, mpiexec stops the other ranks
# (blocked forever in MPI_Recv, each with a child process) within seconds,
# says which rank failed and how, returns the right status, and leaves
# nothing running.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
[ -x "$TESTBIN/launch_fail" ] || { echo "SKIP: launch_fail not built"; exit 77; }
tmp=$(mktemp -d) || exit 1
prog=$tmp/launch_fail_u$$                       # unique name for pgrep
cp "$TESTBIN/launch_fail" "$prog" || exit 1
cleanup() { pkill -KILL -f "$prog" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

now() { date +%s.%N; }
# nothing_left: no process of the unique program within 2 s
nothing_left() {
    for _ in $(seq 20); do
        pgrep -f "$prog" > /dev/null || return 0
        sleep 0.1
    done
    echo "left running:"; pgrep -af "$prog"
    return 1
}

# run NAME EXPECTED_STATUS PATTERN mpiexec-args...
run() {
    local name=$1 want=$2 pat=$3; shift 3
    local t0 t1 rc
    t0=$(now)
    timeout 60 "$MPIEXEC" "$@" > "$tmp/out" 2> "$tmp/err"
    rc=$?
    t1=$(now)
    local el; el=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    [ $rc -ne 124 ] || fail "$name: mpiexec did not end (killed by timeout)"
    [ $rc -eq "$want" ] || { cat "$tmp/err"; fail "$name: exit status $rc, expected $want"; }
    [ -z "$pat" ] || grep -Eq "$pat" "$tmp/err" || { cat "$tmp/err"; fail "$name: no message matching /$pat/"; }
    awk -v e="$el" 'BEGIN { exit !(e < 8) }' || fail "$name: took ${el}s"
    nothing_left || fail "$name: processes left running"
    echo "$name: status $rc in ${el}s"
}

run exit   3   '^mpiexec: rank 2 \(pid [0-9]+\) exited with status 3; stopping the job$' -n 4 "$prog" exit 2 3
run segv   139 '^mpiexec: rank 1 \(pid [0-9]+\) was killed by signal 11 \(Segmentation fault\); stopping the job$' -n 4 "$prog" segv 1
run abort  5   '^mpiexec: rank 1 called MPI_Abort\(MPI_COMM_WORLD, 5\)' -n 3 "$prog" abort 1 5
run abort0 7   '^mpiexec: rank 0 called MPI_Abort\(MPI_COMM_WORLD, 7\)' -n 2 "$prog" abort 0 7
run nofin  1   '^mpiexec: rank 0 \(pid [0-9]+\) exited without calling MPI_Finalize; stopping the job$' -n 3 "$prog" nofinal 0
run ok     0   '' -n 4 "$prog" ok
[ ! -s "$tmp/err" ] || { cat "$tmp/err"; fail "a good run printed on stderr"; }
# ranks that ignore SIGTERM get SIGKILL a second later
run stubborn 3 'rank 1 \(pid [0-9]+\) exited with status 3' -n 3 "$prog" stubborn 1 3
# only the first failure is reported, not the ranks mpiexec stopped
run exit1  3   'rank 2' -n 4 "$prog" exit 2 3
[ "$(grep -c '^mpiexec:' "$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "more than one failure reported"; }
echo "launch_fail: ok"
exit 0
