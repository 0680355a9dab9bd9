#!/bin/bash
# launch_stray: junk written to mpiexec's control port from outside (bash
# /dev/tcp) while a job runs does not harm the job; the port is read from a
# rank's environment.  (tests/mpi/launch_stray.c covers more cases from inside.)
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
[ -x "$TESTBIN/launch_stray" ] || { echo "SKIP: launch_stray not built"; exit 77; }
tmp=$(mktemp -d) || exit 1
prog=$tmp/launch_stray_u$$
cp "$TESTBIN/launch_stray" "$prog" || exit 1
cleanup() { exec 4>&- 5>&- 2>/dev/null; pkill -KILL -f "$prog" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

timeout 60 "$MPIEXEC" -n 3 "$prog" sleep 4 > "$tmp/out" 2> "$tmp/err" &
mp=$!
port=
for _ in $(seq 100); do
    for p in $(pgrep -f "$prog"); do
        port=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | sed -n 's/^KUMI_CONTROL=127.0.0.1://p')
        [ -n "$port" ] && break 2
    done
    sleep 0.05
done
[ -n "$port" ] || { kill $mp; fail "could not find the control port"; }
# junk, then a connection that never says anything, then random bytes
exec 4<> "/dev/tcp/127.0.0.1/$port" || fail "cannot connect to $port"
printf 'hello there, this is not a rank\r\n' >&4
exec 5<> "/dev/tcp/127.0.0.1/$port" || fail "cannot connect to $port"
exec 6<> "/dev/tcp/127.0.0.1/$port" && head -c 4096 /dev/urandom >&6 2>/dev/null
exec 6>&-
wait $mp
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/err"; fail "job with stray connections exited $rc"; }
grep -q 'stray ok' "$tmp/out" || fail "job did not finish its work"
echo "launch_stray: ok"
exit 0
