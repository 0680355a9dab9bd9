#!/bin/bash
# launch_hosts_local: the host options of mpiexec on this machine alone (no
# namespaces needed): -host/--hostfile slots on the local host (today's path,
# slots counted, --oversubscribe), -wdir, and the per-host proxies with
# --launcher fork (every "host" a proxy on this machine): an MPI ring, output
# tags, stdin to rank 0, exit codes, binding by each proxy, and mpiexec
# SIGKILLed (the proxies kill their ranks and remove the job's /dev/shm objects).
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
for p in p2p_ring launch_stdin launch_fail; do
    [ -x "$TESTBIN/$p" ] || { echo "SKIP: $p not built"; exit 77; }
done
tmp=$(mktemp -d) || exit 1
prog=$tmp/launch_fail_h$$
cp "$TESTBIN/launch_fail" "$prog" || exit 1
cleanup() { pkill -KILL -f "$prog" 2> /dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$TESTBIN" || exit 1
export MPIEXEC_TIMEOUT=60

# slots of the local host
"$MPIEXEC" -host localhost:2 -n 3 hostname > "$tmp/out" 2> "$tmp/err" && fail "3 ranks on 2 local slots: exit 0"
grep -q "3 processes asked for, but the host list has 2 slots" "$tmp/err" || { cat "$tmp/err"; fail "slots message"; }
"$MPIEXEC" -host localhost:2 -n 3 --oversubscribe hostname > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err"; fail "--oversubscribe"; }
[ "$(grep -c . "$tmp/out")" = 3 ] || fail "--oversubscribe: 3 lines expected"
printf '# one host\nlocalhost slots=3\n' > "$tmp/hf"
"$MPIEXEC" --hostfile "$tmp/hf" hostname > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err"; fail "hostfile"; }
[ "$(grep -c . "$tmp/out")" = 3 ] || fail "hostfile: -n defaults to the 3 slots"
printf 'localhost slots=3\nother :4\n' > "$tmp/hf"
"$MPIEXEC" --hostfile "$tmp/hf" hostname > "$tmp/out" 2> "$tmp/err" && fail "bad hostfile: exit 0"
grep -q "$tmp/hf:2: unexpected ':4'" "$tmp/err" || { cat "$tmp/err"; fail "bad hostfile: message"; }
mkdir "$tmp/wd"
"$MPIEXEC" -n 2 -wdir "$tmp/wd" pwd > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err"; fail "-wdir"; }
[ "$(grep -c "^$tmp/wd$" "$tmp/out")" = 2 ] || fail "-wdir: $(cat "$tmp/out")"
echo "ok: local slots, hostfile, -wdir"

# the launch agent runs in a session of its own, away from mpiexec's
# terminal (ssh in the terminal's background process group stalled)
printf '#!/bin/sh\nread -r _ _ _ _ _ sid _ < /proc/$$/stat\necho "$$ $sid" > "%s/agent.$1"\nshift\nexec "$@"\n' "$tmp" > "$tmp/agent"
chmod +x "$tmp/agent"
"$MPIEXEC" --launch-agent "$tmp/agent" -host a,b hostname > "$tmp/out" 2> "$tmp/err" ||
    { cat "$tmp/err"; fail "a launch agent on this machine"; }
for h in a b; do
    [ -s "$tmp/agent.$h" ] || fail "the launch agent did not run for host $h"
    read -r apid asid < "$tmp/agent.$h"
    [ "$apid" = "$asid" ] || fail "the launch agent (pid $apid) is in session $asid, not one of its own"
done
echo "ok: launch agents in a session of their own"

# proxies on this machine
"$MPIEXEC" --launcher fork -host a:2,b:2 ./p2p_ring > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err"; fail "ring through proxies"; }
"$MPIEXEC" --launcher fork -host a,b,c --tag-output hostname > "$tmp/out" 2> "$tmp/err" || fail "tag-output"
[ "$(grep -c '^\[[0-9]*,[0-2]\]<stdout>: ' "$tmp/out")" = 3 ] || fail "tag-output: $(cat "$tmp/out")"
seq 1 30000 > "$tmp/in"
"$MPIEXEC" --launcher fork -host a,b:2 ./launch_stdin < "$tmp/in" > "$tmp/out" 2> "$tmp/err" || fail "stdin"
cmp -s "$tmp/in" "$tmp/out" || fail "stdin: rank 0 did not get mpiexec's stdin through its proxy"
"$MPIEXEC" --launcher fork -host a:2,b:2 ./launch_fail exit 3 9 > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc = 9 ] || { cat "$tmp/err"; fail "exit(9) of rank 3: exit $rc"; }
echo "ok: ring, tags, stdin, exit status through proxies"
if [ -x "$TESTBIN/bind_check" ] && [ "$(nproc)" -ge 2 ]; then
    # each proxy binds its host's ranks as mpiexec does on one host; the
    # ranks see each other's binding in the key-value table (bind_check)
    "$MPIEXEC" --launcher fork -host a:2,b:2 ./bind_check > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/out" "$tmp/err"; fail "binding through proxies"; }
    [ "$(grep -c '^rank [0-9] cpus [0-9]* env [0-9]*$' "$tmp/out")" = 4 ] || { cat "$tmp/out"; fail "binding: every rank bound to a CPU"; }
    [ -s "$tmp/err" ] && { cat "$tmp/err"; fail "binding through proxies: something on stderr without --report-bindings"; }
    # --report-bindings: each proxy reports its ranks, as the rank saw its CPUs
    "$MPIEXEC" --launcher fork -host a:2,b:2 --report-bindings ./bind_check > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/out" "$tmp/err"; fail "--report-bindings through proxies"; }
    for r in 0 1 2 3; do
        h=a; [ $r -ge 2 ] && h=b
        seen=$(sed -n "s/^rank $r cpus \([^ ]*\) env .*/\1/p" "$tmp/out")
        rep=$(sed -n "s/^mpiexec: host $h: rank $r bound to core [0-9]* (cpus \([^)]*\))$/\1/p" "$tmp/err")
        [ -n "$seen" ] && [ "$rep" = "$seen" ] || { cat "$tmp/out" "$tmp/err"; fail "--report-bindings: rank $r on host $h reported '$rep', saw '$seen'"; }
    done
    "$MPIEXEC" --launcher fork -host a:2,b:2 --bind-to none --report-bindings true > "$tmp/out" 2> "$tmp/err" || fail "--bind-to none --report-bindings"
    [ "$(grep -c '^mpiexec: host [ab]: rank [0-3] not bound (--bind-to none)$' "$tmp/err")" = 4 ] || { cat "$tmp/err"; fail "--report-bindings --bind-to none: 4 ranks not bound"; }
    n=$(($(nproc) + 1))
    "$MPIEXEC" --launcher fork -host a:$n,b --bind-to core true > "$tmp/out" 2> "$tmp/err" && fail "--bind-to core, $n ranks on a host: exit 0"
    grep -q "host a: cannot bind $n processes as asked" "$tmp/err" || { cat "$tmp/err"; fail "--bind-to core: message"; }
    echo "ok: binding on each host"
fi

# mpiexec SIGKILLed: the proxies kill their ranks
"$MPIEXEC" --launcher fork -host a:2,b:2 "$prog" hang > "$tmp/out" 2> "$tmp/err" < /dev/null &
mp=$!
for _ in $(seq 300); do
    [ "$(pgrep -c -f "$prog")" -ge 8 ] && break
    sleep 0.1
done
[ "$(pgrep -c -f "$prog")" -ge 8 ] || { kill -KILL $mp; cat "$tmp/err"; fail "the hanging job did not start"; }
sleep 0.5
kill -KILL $mp
wait $mp 2> /dev/null
# (the proxies, orphans now, remove the job's /dev/shm objects once their ranks
# are gone: wait for both, up to 10 s, so a loaded machine's slower clean-up is
# not taken for none)
for _ in $(seq 100); do
    pgrep -f "$prog" > /dev/null || ls /dev/shm | grep -q "^kumi\.$mp\." || break
    sleep 0.1
done
pgrep -f "$prog" > /dev/null && fail "ranks left after mpiexec was SIGKILLed: $(pgrep -a -f "$prog")"
ls /dev/shm | grep -q "^kumi\.$mp\." && fail "/dev/shm objects of job $mp left"
echo "ok: mpiexec SIGKILLed: no rank left, /dev/shm clean"
exit 0
