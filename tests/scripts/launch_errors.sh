#!/bin/bash
# launch_errors: mpiexec's usage errors, program look-up (PATH), exec
# failures, and exit-status propagation with plain (non-MPI) programs.
set -u
: "${MPIEXEC:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# expect STATUS PATTERN args...: status and a stderr line matching PATTERN
expect() {
    local want=$1 pat=$2; shift 2
    timeout 30 "$MPIEXEC" "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null
    local rc=$?
    [ $rc -eq "$want" ] || { cat "$tmp/err"; fail "mpiexec $*: status $rc, expected $want"; }
    [ -z "$pat" ] || grep -Eq "$pat" "$tmp/err" || { cat "$tmp/err"; fail "mpiexec $*: no message /$pat/"; }
}

expect 0 '' --help
grep -q '^Usage: mpiexec' "$tmp/out" || fail "--help prints no usage"
expect 0 '' --version
grep -q 'Kumi' "$tmp/out" || fail "--version prints no version"
expect 1 'no program' -n 2
expect 1 'invalid number of processes' -n 0 /bin/true
expect 1 'invalid number of processes' -n abc /bin/true
expect 1 'unknown option' --bogus /bin/true
expect 1 'timeout' --timeout -3 /bin/true
expect 127 "^mpiexec: cannot find program 'kumi_no_such_program_x' in PATH$" -n 2 kumi_no_such_program_x
expect 127 "^mpiexec: cannot find program './kumi_nope'" -n 2 ./kumi_nope
printf '#!/bin/sh\nexit 0\n' > "$tmp/noexec"; chmod 644 "$tmp/noexec"
expect 126 "cannot execute '$tmp/noexec'" "$tmp/noexec"
# exec fails inside the child (missing interpreter): reported per rank
printf '#!/kumi/no/such/interpreter\n' > "$tmp/badinterp"; chmod 755 "$tmp/badinterp"
expect 127 "^mpiexec: rank [01]: cannot execute '$tmp/badinterp': No such file or directory$" -n 2 "$tmp/badinterp"
grep -Eq '^mpiexec: rank [01] \(pid [0-9]+\) exited with status 127; stopping the job$' "$tmp/err" || fail "exec failure: no exit report"

# plain programs: found through PATH, status propagated
expect 0 '' -n 3 true
expect 0 '' -n 3 -- sh -c 'test "$KUMI_SIZE" = 3 && test "$KUMI_RANK" -ge 0 && test "$KUMI_RANK" -lt 3'
expect 4 'rank 1 \(pid [0-9]+\) exited with status 4' -n 3 sh -c 'if [ "$KUMI_RANK" = 1 ]; then exit 4; fi; exec sleep 30'
expect 137 'rank 2 \(pid [0-9]+\) was killed by signal 9 \(Killed\)' -n 3 sh -c 'if [ "$KUMI_RANK" = 2 ]; then kill -9 $$; fi; exec sleep 30'
# the environment is passed on by default; -x overrides and adds
LAUNCH_INHERITED=yes expect 0 '' -n 2 -x LAUNCH_NEW=v1 -x LAUNCH_INHERITED=changed \
    sh -c 'test "$LAUNCH_NEW" = v1 && test "$LAUNCH_INHERITED" = changed && test -n "$PATH"'
LAUNCH_INHERITED=yes expect 0 '' -n 2 sh -c 'test "$LAUNCH_INHERITED" = yes'
expect 0 '' --param p2p_tcp_some_thing=42 -n 1 sh -c 'test "$KUMI_P2P_TCP_SOME_THING" = 42'
# each rank leads its own process group
expect 0 '' -n 3 sh -c 'test "$(ps -o pgid= -p $$ | tr -d " ")" = $$'
# ... in mpiexec's session (rpim/fork: one scheduler autogroup for the launch's ranks, which
# hand their CPU to each other when they yield)
expect 0 '' -n 3 sh -c 'test "$(ps -o sid= -p $$)" = "$(ps -o sid= -p $PPID)"'
# a normal run prints nothing of its own
expect 0 '' -n 4 sh -c 'echo "out $KUMI_RANK"; echo "err $KUMI_RANK" >&2'
[ "$(sort "$tmp/out")" = "$(printf 'out 0\nout 1\nout 2\nout 3')" ] || fail "stdout of plain ranks: $(cat "$tmp/out")"
[ "$(sort "$tmp/err")" = "$(printf 'err 0\nerr 1\nerr 2\nerr 3')" ] || fail "stderr of plain ranks: $(cat "$tmp/err")"
echo "launch_errors: ok"
exit 0
