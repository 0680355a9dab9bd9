#!/bin/bash
# launch_hosts_fail: failures of mpiexec across hosts (netlab.sh: hosts made
# of namespaces with sshd).
#   - host list errors: bad hostfile syntax (FILE:LINE named), too few slots
#     (an error unless --oversubscribe), an unknown host (named, reported
#     before any rank starts);
#   - a host that dies mid-run (every process of it killed): the job ends
#     within seconds, naming the host and its ranks, non-zero status; also
#     a host in the middle of a tree of proxies (the hosts behind it named);
#   - a host whose link is cut (silence, no FIN): the same after
#     --host-timeout, and the cut-off proxy kills its own ranks;
#   - mpiexec SIGKILLed: the proxies see their channel close and kill their
#     ranks;
# and after each, nothing of the job left on any host (processes, /dev/shm).
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}" "${top_srcdir:?}"
[ -x "$TESTBIN/launch_fail" ] || { echo "SKIP: launch_fail not built"; exit 77; }
. "$top_srcdir/tests/scripts/netlab.sh"
netlab_up 4 || { echo "FAIL: the lab does not come up"; exit 1; }
D=$NETLAB_DIR
cd "$TESTBIN" || exit 1
export MPIEXEC_TIMEOUT=60
fail() { echo "FAIL: $*"; exit 1; }
mx() { netlab_exec 0 "$MPIEXEC" --launch-agent "$NETLAB_SSH" "$@"; }
count_on() { # host, process name: how many run there
    netlab_ps "$1" | awk -v n="$2" '$2 == n' | wc -l
}
clean_on() { # host...: nothing of a job left there
    local h left
    for h in "$@"; do
        left=$(netlab_ps "$h" | grep -E " (kumi_proxy|launch_fail)$"; netlab_exec "$h" ls /dev/shm)
        [ -z "$left" ] || return 1
    done
}
wait_clean() { # seconds, hosts...
    local t=$1 i
    shift
    local end=$((SECONDS + t))
    while [ $SECONDS -lt $end ]; do
        clean_on "$@" && return 0
        sleep 0.2
    done
    clean_on "$@" && return 0
    for h in "$@"; do { netlab_ps "$h"; netlab_exec "$h" ls /dev/shm; } | sed "s/^/h$h: /"; done
    return 1
}
wait_ranks() { # hosts...: each runs the hanging job's 2 ranks (+ their children)
    local h i
    for i in $(seq 300); do
        local ok=1
        for h in "$@"; do [ "$(count_on "$h" launch_fail)" -ge 4 ] || ok=0; done
        [ $ok = 1 ] && { sleep 1; return 0; }
        sleep 0.1
    done
    return 1
}

# ---- host lists
printf 'h1 slots=2\nh2 slot=2\n' > "$D/bad"
mx --hostfile "$D/bad" hostname > "$D/out" 2> "$D/err"
rc=$?
[ $rc != 0 ] || fail "bad hostfile: exit 0"
grep -q "$D/bad:2: unexpected 'slot=2'" "$D/err" || { cat "$D/err"; fail "bad hostfile: no FILE:LINE message"; }
mx -host h1:2,h2 -n 4 hostname > "$D/out" 2> "$D/err" && fail "4 ranks on 3 slots: exit 0"
grep -q "4 processes asked for, but the host list has 3 slots" "$D/err" || { cat "$D/err"; fail "slots: message"; }
mx -host h1:2,h2 -n 4 --oversubscribe hostname > "$D/out" 2> "$D/err" || { cat "$D/err"; fail "--oversubscribe"; }
[ "$(grep -c . "$D/out")" = 4 ] || fail "--oversubscribe: $(cat "$D/out")"
t0=$SECONDS
mx -host h1,nosuchhost,h2 --tag-output hostname > "$D/out" 2> "$D/err"
rc=$?
[ $rc != 0 ] || fail "unknown host: exit 0"
grep -q "cannot start the proxy on host nosuchhost: .*: ssh: Could not resolve hostname nosuchhost" "$D/err" ||
    { cat "$D/err"; fail "unknown host: not named with ssh's reason"; }
[ ! -s "$D/out" ] || fail "unknown host: ranks started anyway: $(cat "$D/out")"
echo "ok: host list errors ($((SECONDS - t0)) s for the unknown host): $(grep nosuchhost "$D/err" | tail -1)"
wait_clean 5 1 2 || fail "unknown host: left on h1/h2"

# ---- a host dies mid-run
netlab_bg 0 "$D/out" "$D/err" "$MPIEXEC" --launch-agent "$NETLAB_SSH" -host h1:2,h2:2,h3:2 ./launch_fail hang
mp=$NETLAB_BG
wait_ranks 1 2 3 || { kill -KILL $mp; cat "$D/err"; fail "host death: the job did not start"; }
t0=$(date +%s.%N)
netlab_kill_host 2
wait $mp
rc=$?
t=$(echo "$(date +%s.%N) - $t0" | bc)
[ $rc != 0 ] || fail "host death: exit 0"
grep -q "host h2 lost.*ranks 2-3 \(lost\|had ended\)" "$D/err" || { cat "$D/err"; fail "host death: message"; }
echo "ok: host h2 killed: mpiexec ended in $t s with status $rc: $(grep 'host h2 lost' "$D/err")"
wait_clean 5 1 3 || fail "host death: left on h1/h3"
netlab_exec 2 /usr/sbin/sshd -f "$D/sshd_config" -o "ListenAddress=$(netlab_addr 2)"

# ---- a proxy in the middle of a tree dies (--fanout 1: h1 starts h2, h2 starts h4)
netlab_bg 0 "$D/out" "$D/err" "$MPIEXEC" --launch-agent "$NETLAB_SSH" --fanout 1 -host h1:2,h2:2,h4:2 ./launch_fail hang
mp=$NETLAB_BG
wait_ranks 1 2 4 || { kill -KILL $mp; cat "$D/err"; fail "tree: the job did not start"; }
netlab_kill_host 2
wait $mp
rc=$?
[ $rc != 0 ] || fail "tree: exit 0"
grep -q "host h2 lost.*ranks 2-3 \(lost\|had ended\)" "$D/err" || { cat "$D/err"; fail "tree: h2 not named"; }
grep -q "host h4 lost (started by host h2, which was lost): ranks 4-5 lost" "$D/err" || { cat "$D/err"; fail "tree: h4 not named"; }
wait_clean 5 1 4 || fail "tree: left on h1/h4"
echo "ok: the middle of a tree killed: $(grep -c 'lost' "$D/err") hosts named"
netlab_exec 2 /usr/sbin/sshd -f "$D/sshd_config" -o "ListenAddress=$(netlab_addr 2)"

# ---- a link cut: silence
netlab_bg 0 "$D/out" "$D/err" "$MPIEXEC" --launch-agent "$NETLAB_SSH" --host-timeout 3 -host h1:2,h3:2 ./launch_fail hang
mp=$NETLAB_BG
wait_ranks 1 3 || { kill -KILL $mp; cat "$D/err"; fail "link cut: the job did not start"; }
t0=$(date +%s.%N)
netlab_cut_link 3
wait $mp
rc=$?
t=$(echo "$(date +%s.%N) - $t0" | bc)
[ $rc != 0 ] || fail "link cut: exit 0"
grep -q "host h3 lost.*ranks 2-3 lost" "$D/err" || { cat "$D/err"; fail "link cut: message"; }
echo "ok: link of h3 cut: mpiexec ended in $t s with status $rc"
wait_clean 5 1 || fail "link cut: left on h1"
wait_clean 15 3 || fail "link cut: the cut-off proxy on h3 did not kill its ranks"
echo "ok: the cut-off proxy on h3 killed its ranks"

# ---- mpiexec SIGKILLed
netlab_bg 0 "$D/out" "$D/err" "$MPIEXEC" --launch-agent "$NETLAB_SSH" -host h1:2,h4:2 ./launch_fail hang
mp=$NETLAB_BG
wait_ranks 1 4 || { kill -KILL $mp; cat "$D/err"; fail "SIGKILL: the job did not start"; }
kill -KILL $mp
wait $mp 2> /dev/null
t0=$(date +%s.%N)
wait_clean 10 1 4 || fail "mpiexec SIGKILLed: ranks or /dev/shm objects left"
echo "ok: mpiexec SIGKILLed: hosts clean after $(echo "$(date +%s.%N) - $t0" | bc) s"
exit 0
