#!/bin/bash
# launch_many: mpiexec's memory grows with what it starts, not with -n (it
# once allocated 128 KiB of line buffers per rank up front: 90 KiB of RSS per
# rank, 8.9 GiB for -n 100000); a job this host cannot hold is refused with a
# clear message before anything starts.
set -u
: "${MPIEXEC:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
true_bin=$(command -v true)
[ "${true_bin#/}" != "$true_bin" ] || true_bin=/bin/true

# 1. refused before starting anything: more processes than descriptors allow
t0=$(date +%s%N)
( ulimit -n 1024 2>/dev/null || exit 77; exec "$MPIEXEC" -n 1000000 "$true_bin" ) > "$tmp/o" 2> "$tmp/e"
rc=$?
t=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $rc -eq 77 ] && { echo "SKIP: cannot lower the descriptor limit"; exit 77; }
[ $rc -eq 1 ] || { cat "$tmp/e"; fail "-n 1000000 with ulimit -n 1024: exit $rc, expected 1"; }
grep -q 'cannot start 1000000 processes: .*file descriptors.*ulimit -n' "$tmp/e" ||
    { cat "$tmp/e"; fail "-n 1000000: no clear message"; }
[ $t -lt 3000 ] || fail "refusing -n 1000000 took $t ms"
echo "refused: $(cat "$tmp/e")"
"$MPIEXEC" -n 1000001 "$true_bin" > /dev/null 2> "$tmp/e"
[ $? -eq 1 ] && grep -q "invalid number of processes '1000001'" "$tmp/e" || { cat "$tmp/e"; fail "-n 1000001 not refused"; }

# 2. memory per started rank (maximum RSS of mpiexec, /usr/bin/time)
if [ -x /usr/bin/time ]; then
    rss() { /usr/bin/time -f 'maxrss %M' "$MPIEXEC" -n "$1" "$true_bin" 2>&1 > /dev/null | sed -n 's/^maxrss //p' | tail -1; }
    a=$(rss 10); b=$(rss 1000)
    [ -n "$a" ] && [ -n "$b" ] || fail "could not measure mpiexec's memory"
    per=$(( (b - a) * 1024 / 990 ))
    echo "mpiexec max RSS: -n 10 ${a} KiB, -n 1000 ${b} KiB: $per bytes per rank"
    [ $per -lt 8192 ] || fail "mpiexec grows by $per bytes per rank (more than 8 KiB)"
else
    echo "note: no /usr/bin/time; memory per rank not measured"
fi
exit 0
