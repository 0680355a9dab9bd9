#!/bin/bash
# conf_mpiexec_timeout: mpiexec honours MPIEXEC_TIMEOUT, the variable test
# runners use to bound a job (as Open MPI's and MPICH's launchers do; issue
# 16 item 15): a hung job stops after that many seconds with status 124 and
# the timeout message, nothing left running; --timeout wins over the
# variable; 0 or empty means no limit; a bad value is refused, naming it.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
[ -x "$TESTBIN/launch_fail" ] || { echo "SKIP: launch_fail not built"; exit 77; }
tmp=$(mktemp -d) || exit 1
prog=$tmp/conf_timeout_u$$
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

# the variable bounds a hung job
t0=$(now)
MPIEXEC_TIMEOUT=2 timeout 60 "$MPIEXEC" -n 2 "$prog" hang > "$tmp/out" 2> "$tmp/err"
rc=$?
el=$(elapsed "$t0")
[ $rc -eq 124 ] || { cat "$tmp/err"; fail "MPIEXEC_TIMEOUT=2: status $rc, expected 124"; }
grep -q '^mpiexec: job timed out after 2 seconds; stopping the job$' "$tmp/err" ||
    { cat "$tmp/err"; fail "MPIEXEC_TIMEOUT=2: no timeout message"; }
awk -v e="$el" 'BEGIN { exit !(e >= 1.9 && e < 15) }' || fail "MPIEXEC_TIMEOUT=2 took ${el}s"
nothing_left || fail "MPIEXEC_TIMEOUT: processes left"
echo "MPIEXEC_TIMEOUT=2: stopped after ${el}s"

# --timeout wins over the variable
MPIEXEC_TIMEOUT=600 timeout 60 "$MPIEXEC" --timeout 1 -n 2 "$prog" hang > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 124 ] && grep -q 'timed out after 1 seconds' "$tmp/err" ||
    { cat "$tmp/err"; fail "--timeout 1 with MPIEXEC_TIMEOUT=600: status $rc"; }
nothing_left || fail "--timeout: processes left"

# 0 and empty: no limit (a job that ends by itself passes)
for v in 0 ""; do
    MPIEXEC_TIMEOUT=$v timeout 60 "$MPIEXEC" -n 2 "$TESTBIN/launch_fail" ok > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ $rc -eq 0 ] || { cat "$tmp/err"; fail "MPIEXEC_TIMEOUT='$v': status $rc"; }
done

# a bad value is refused before anything starts
MPIEXEC_TIMEOUT=soon timeout 60 "$MPIEXEC" -n 2 "$prog" hang > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 1 ] || { cat "$tmp/err"; fail "MPIEXEC_TIMEOUT=soon: status $rc, expected 1"; }
grep -q "MPIEXEC_TIMEOUT: invalid number of seconds 'soon'" "$tmp/err" ||
    { cat "$tmp/err"; fail "MPIEXEC_TIMEOUT=soon: the message does not name the variable"; }
nothing_left || fail "bad MPIEXEC_TIMEOUT: processes left"
echo "--timeout wins; 0 and empty mean no limit; a bad value is refused"
exit 0
