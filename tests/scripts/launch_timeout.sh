#!/bin/bash
# launch_timeout: --timeout S (or MPIEXEC_TIMEOUT) stops a hung job after S seconds (status 124),
# and SIGTERM / SIGINT to mpiexec stop the whole job (status 128+signal);
# nothing is left running.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
[ -x "$TESTBIN/launch_fail" ] || { echo "SKIP: launch_fail not built"; exit 77; }
tmp=$(mktemp -d) || exit 1
prog=$tmp/launch_hang_u$$
cp "$TESTBIN/launch_fail" "$prog" || exit 1
cleanup() { pkill -KILL -f "$prog" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
nothing_left() {
    for _ in $(seq 20); do pgrep -f "$prog" > /dev/null || return 0; sleep 0.1; done
    pgrep -af "$prog"; return 1
}
# wait until N processes of the program run (ranks and their children)
wait_procs() {
    for _ in $(seq 100); do [ "$(pgrep -fc "$prog")" -ge "$1" ] && return 0; sleep 0.1; done
    return 1
}

# --timeout
t0=$(now)
timeout 60 "$MPIEXEC" --timeout 2 -n 3 "$prog" hang > "$tmp/out" 2> "$tmp/err"
rc=$?
el=$(elapsed "$t0")
[ $rc -eq 124 ] || { cat "$tmp/err"; fail "--timeout: status $rc, expected 124"; }
grep -q '^mpiexec: job timed out after 2 seconds; stopping the job$' "$tmp/err" || { cat "$tmp/err"; fail "--timeout: no message"; }
awk -v e="$el" 'BEGIN { exit !(e >= 1.9 && e < 7) }' || fail "--timeout 2 took ${el}s"
nothing_left || fail "--timeout: processes left"
echo "timeout: ${el}s"

# MPIEXEC_TIMEOUT, the variable test runners use to bound a job (Open MPI's
# and MPICH's launchers honour it; issue 16 item 15): the same stop;
# --timeout wins over it; 0 or empty: no limit; a bad value is refused
t0=$(now)
MPIEXEC_TIMEOUT=2 timeout 60 "$MPIEXEC" -n 2 "$prog" hang > "$tmp/out" 2> "$tmp/err"
rc=$?
el=$(elapsed "$t0")
[ $rc -eq 124 ] || { cat "$tmp/err"; fail "MPIEXEC_TIMEOUT=2: status $rc, expected 124"; }
grep -q '^mpiexec: job timed out after 2 seconds; stopping the job$' "$tmp/err" ||
    { cat "$tmp/err"; fail "MPIEXEC_TIMEOUT=2: no timeout message"; }
awk -v e="$el" 'BEGIN { exit !(e >= 1.9 && e < 15) }' || fail "MPIEXEC_TIMEOUT=2 took ${el}s"
nothing_left || fail "MPIEXEC_TIMEOUT: processes left"
MPIEXEC_TIMEOUT=600 timeout 60 "$MPIEXEC" --timeout 1 -n 2 "$prog" hang > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 124 ] && grep -q 'timed out after 1 seconds' "$tmp/err" ||
    { cat "$tmp/err"; fail "--timeout 1 with MPIEXEC_TIMEOUT=600: status $rc"; }
nothing_left || fail "--timeout over MPIEXEC_TIMEOUT: processes left"
for v in 0 ""; do
    MPIEXEC_TIMEOUT=$v timeout 60 "$MPIEXEC" -n 2 "$TESTBIN/launch_fail" ok > "$tmp/out" 2> "$tmp/err" ||
        { cat "$tmp/err"; fail "MPIEXEC_TIMEOUT='$v': status $?"; }
done
MPIEXEC_TIMEOUT=soon timeout 60 "$MPIEXEC" -n 2 "$prog" hang > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q "MPIEXEC_TIMEOUT: invalid number of seconds 'soon'" "$tmp/err" ||
    { cat "$tmp/err"; fail "MPIEXEC_TIMEOUT=soon: status $rc, or the message does not name the variable"; }
nothing_left || fail "bad MPIEXEC_TIMEOUT: processes left"
echo "MPIEXEC_TIMEOUT=2: stopped after ${el}s; --timeout wins; 0 and empty: no limit; a bad value refused"

# SIGTERM to mpiexec
"$MPIEXEC" -n 3 "$prog" hang > "$tmp/out" 2> "$tmp/err" &
mp=$!
wait_procs 6 || { kill -KILL $mp; fail "SIGTERM: job did not start"; }
t0=$(now)
kill -TERM $mp
timeout 20 tail --pid=$mp -f /dev/null
wait $mp
rc=$?
el=$(elapsed "$t0")
[ $rc -eq 143 ] || { cat "$tmp/err"; fail "SIGTERM: status $rc, expected 143"; }
awk -v e="$el" 'BEGIN { exit !(e < 5) }' || fail "SIGTERM: mpiexec took ${el}s to stop"
nothing_left || fail "SIGTERM: processes left"
echo "SIGTERM: ${el}s"

# SIGINT (a background job of a script ignores SIGINT: undo that first)
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$MPIEXEC" -n 2 "$prog" hang > "$tmp/out" 2> "$tmp/err" &
mp=$!
wait_procs 4 || { kill -KILL $mp; fail "SIGINT: job did not start"; }
kill -INT $mp
timeout 20 tail --pid=$mp -f /dev/null
wait $mp
rc=$?
[ $rc -eq 130 ] || { cat "$tmp/err"; fail "SIGINT: status $rc, expected 130"; }
nothing_left || fail "SIGINT: processes left"
echo "launch_timeout: ok"
exit 0
