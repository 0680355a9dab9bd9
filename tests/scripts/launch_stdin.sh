#!/bin/bash
# launch_stdin: mpiexec's stdin reaches rank 0 intact; other ranks read
# /dev/null; --stdin none; a stdin that never closes does not hold the job.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
prog=$TESTBIN/launch_stdin
[ -x "$prog" ] || { echo "SKIP: $prog not built"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

seq 1 300000 > "$tmp/in"                       # about 2 MB
timeout 120 "$MPIEXEC" -n 3 "$prog" < "$tmp/in" > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err"; fail "run with stdin failed"; }
cmp -s "$tmp/in" "$tmp/out" || fail "rank 0 did not get stdin intact ($(wc -c < "$tmp/out") of $(wc -c < "$tmp/in") bytes)"
grep -q "rank 1 read 0 bytes" "$tmp/err" && grep -q "rank 2 read 0 bytes" "$tmp/err" || fail "ranks 1, 2 did not read empty stdin"

# through a pipe as well
seq 1 5000 | timeout 60 "$MPIEXEC" -n 2 "$prog" > "$tmp/out2" 2>/dev/null || fail "piped stdin run failed"
seq 1 5000 | cmp -s - "$tmp/out2" || fail "piped stdin not forwarded intact"

# --stdin none: rank 0 gets /dev/null
timeout 60 "$MPIEXEC" --stdin none -n 2 "$prog" < "$tmp/in" > "$tmp/out3" 2> "$tmp/err3" || fail "--stdin none run failed"
[ ! -s "$tmp/out3" ] || fail "--stdin none still forwarded stdin"

# a stdin that stays open must not keep a finished job alive
mkfifo "$tmp/fifo" || fail "mkfifo"
exec 7<> "$tmp/fifo"                          # held open: no EOF ever
start=$(date +%s)
timeout 20 "$MPIEXEC" -n 2 "$TESTBIN/launch_env" < "$tmp/fifo" > /dev/null 2>&1
rc=$?
exec 7>&-
[ "$rc" -eq 0 ] || fail "job with open stdin exited $rc"
[ $(( $(date +%s) - start )) -lt 10 ] || fail "job with open stdin waited for stdin"
echo "launch_stdin: ok"
exit 0
