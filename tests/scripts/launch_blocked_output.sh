#!/bin/bash
# launch_blocked_output: mpiexec's stdout is a pipe that nobody reads (full).
# mpiexec must still (1) stop the job on SIGINT, and (2) notice a dead rank
# and stop the others, without waiting for the pipe to drain; its memory
# stays bounded (it stops reading the ranks' pipes instead).
set -u
: "${MPIEXEC:?}"
command -v mkfifo > /dev/null || { echo "SKIP: no mkfifo"; exit 77; }
tmp=$(mktemp -d) || exit 1
fifo=$tmp/out
mkfifo "$fifo" || { echo "SKIP: cannot make a FIFO"; exit 77; }
cleanup() { exec 3<&- 2>/dev/null; [ -n "${mp:-}" ] && kill -KILL "$mp" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
# the writer: every rank prints lines as fast as it can (no MPI)
writer=$tmp/blocked_writer_u$$
printf '#!/bin/sh\nexec yes "rank $KUMI_RANK: a line that nobody reads"\n' > "$writer"
chmod +x "$writer"
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1; [ "$st" != Z ]; }
ranks_of() { pgrep -P "$1" | tr '\n' ' '; }
wait_gone() { # seconds pids...: 0 when none is alive in time
    local n=$(( $1 * 20 )); shift
    for _ in $(seq $n); do
        local any=
        for p in "$@"; do alive "$p" && any=1; done
        [ -z "$any" ] && return 0
        sleep 0.05
    done
    return 1
}
exec 3<> "$fifo"                      # keeps the FIFO open; nobody reads it

# 1. SIGINT
set -m                                # a background job that keeps SIGINT (not ignored)
"$MPIEXEC" -n 3 "$writer" > "$fifo" 2> "$tmp/err1" < /dev/null 3<&- &
mp=$!
set +m
sleep 1.5                             # the FIFO is full long before
ranks=$(ranks_of $mp)
[ -n "$ranks" ] || fail "no ranks found"
rss1=$(awk '/^VmRSS/ {print $2}' /proc/$mp/status)
kill -INT $mp
# shellcheck disable=SC2086
wait_gone 3 $mp || fail "mpiexec with a blocked stdout did not end within 3 s of SIGINT"
wait $mp; rc=$?
mp=
[ $rc -eq 130 ] || fail "mpiexec exited $rc after SIGINT, not 130"
# shellcheck disable=SC2086
wait_gone 2 $ranks || fail "ranks left running after SIGINT: $ranks"
grep -q 'received signal 2' "$tmp/err1" || { cat "$tmp/err1"; fail "no 'received signal' message"; }
[ "${rss1:-0}" -lt 65536 ] || fail "mpiexec holds ${rss1} KiB while its stdout is blocked"
echo "SIGINT: mpiexec (RSS ${rss1} KiB) ended with 130 and stopped its ranks although its stdout was full"

# 2. a rank killed
"$MPIEXEC" -n 3 "$writer" > "$fifo" 2> "$tmp/err2" < /dev/null 3<&- &
mp=$!
sleep 1.5
ranks=$(ranks_of $mp)
set -- $ranks
[ $# -eq 3 ] || fail "expected 3 ranks, found: $ranks"
victim=$2
kill -KILL "$victim"
shift; shift
others="$1 $(echo "$ranks" | awk '{print $1}')"
# shellcheck disable=SC2086
wait_gone 3 $others || fail "other ranks still running 3 s after rank pid $victim was killed (stdout blocked)"
grep -q 'killed by signal 9' "$tmp/err2" || { cat "$tmp/err2"; fail "no message about the killed rank"; }
echo "dead rank: the others were stopped while stdout was full"
# mpiexec may now wait for its reader; draining the FIFO lets it end
cat <&3 > /dev/null &
drainer=$!
wait_gone 10 $mp || fail "mpiexec did not end once its stdout was read"
wait $mp; rc=$?
mp=
kill $drainer 2>/dev/null
wait $drainer 2>/dev/null
[ $rc -eq 137 ] || fail "mpiexec exited $rc, not 137 (rank killed by SIGKILL)"
echo "launch_blocked_output: ok"
exit 0
