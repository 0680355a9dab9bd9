#!/bin/bash
# launch_hosts_spawn: the launcher side of MPI_Comm_spawn across hosts made
# of namespaces (netlab.sh), through tests/mpi/spawn_rpim.c (kumi_rpim_spawn):
# a parent on the head places its children on other hosts (info host), whose
# world then spans two hosts; a parent behind proxies (-host) spawns onto a
# third host, onto the head, and onto the free slots of its own --hostfile; an unreachable
# host fails the request (MPI_ERR_SPAWN) while the parent goes on; a remote
# child's exit status and MPI_Abort; MPI_Comm_spawn itself (tests/mpi/dpm_spawn.c) with
# children on other hosts talking to their parents; nothing left on the hosts afterwards.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}" "${top_srcdir:?}"
[ -x "$TESTBIN/spawn_rpim" ] || { echo "FAIL: spawn_rpim not built (kumi_rpim_spawn missing?)"; exit 1; }
[ -x "$TESTBIN/dpm_spawn" ] || { echo "FAIL: dpm_spawn not built"; exit 1; }
. "$top_srcdir/tests/scripts/netlab.sh"
netlab_up 3 || { echo "FAIL: the lab does not come up"; exit 1; }
D=$NETLAB_DIR
cd "$TESTBIN" || exit 1
export MPIEXEC_TIMEOUT=120
P=$TESTBIN/spawn_rpim
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$D/out"; echo "--- stderr"; cat "$D/err"; exit 1; }
run() { # mpiexec arguments...: on the head h0, over the lab's ssh; status in $rc, seconds in $took
    local t0=$SECONDS
    netlab_exec 0 "$MPIEXEC" --launch-agent "$NETLAB_SSH" "$@" > "$D/out" 2> "$D/err" < /dev/null
    rc=$?
    took=$((SECONDS - t0))
}
must() { # description, mpiexec arguments...
    local what=$1
    shift
    run "$@"
    [ $rc -eq 0 ] || fail "$what: exit status $rc"
    echo "ok: $what ($took s)"
}
placed() { # "RANK:HOST " of the children, by rank
    sed -n 's/^child [a-z]* rank \([0-9]*\) of [0-9]* .* host \(h[0-9]*\)$/\1:\2/p' "$D/out" | sort -n | tr '\n' ' '
}
parents_ok() {
    grep -q "^parent 0: goes on ok" "$D/out" && grep -q "^parent 1: goes on ok" "$D/out"
}

# a parent on the head, its children on h1 (2) and h2 (1): one world over two hosts
must "children on other hosts (info host)" -n 2 "$P" info "host=h1:2,h2" 3
[ "$(placed)" = "0:h1 1:h1 2:h2 " ] || fail "placement: $(placed)"
grep -c "^child info rank [0-9] of 3 appnum 0 sum 3 " "$D/out" | grep -qx 3 || fail "the children's world"
parents_ok || fail "the parent did not go on"

# a parent behind proxies (h1, h2) spawns onto h3
must "parent across hosts, children on h3" -host h1,h2 -n 2 "$P" info "host=h3:2" 2
[ "$(placed)" = "0:h3 1:h3 " ] || fail "placement: $(placed)"
parents_ok || fail "the parent did not go on"

# a parent behind proxies spawns onto mpiexec's own host (h0: no proxy there)
must "parent across hosts, children on the head" -host h1,h2 -n 2 "$P" info "host=h0:2" 2
[ "$(placed)" = "0:h0 1:h0 " ] || fail "placement: $(placed)"
parents_ok || fail "the parent did not go on"

# the job's own hostfile: the parent fills h1, the children get h2's slots
printf 'h1 slots=2\nh2 slots=2\n' > "$D/hf"
must "children on the free slots of the job's hostfile" --hostfile "$D/hf" -n 2 "$P" multi 1 1
[ "$(placed)" = "0:h2 1:h2 " ] || fail "placement: $(placed)"
run --hostfile "$D/hf" -n 2 "$P" infofail wdir=/ 3
[ $rc -eq 0 ] || fail "too many children for the hostfile: exit status $rc"
grep -q "refused: .*2 free slots on the job's hosts" "$D/out" || fail "too many children: no refusal"
echo "ok: the hostfile's slots are counted"

# an unreachable host: the request fails, the parent goes on, mpiexec exits 0
must "unreachable host" -n 2 "$P" infofail "host=h9" 1
grep -q "refused: .*h9" "$D/out" || fail "unreachable host: no refusal naming h9"
parents_ok || fail "unreachable host: the parent did not go on"

# a remote child's exit status, and its MPI_Abort (which ends every job)
printf 'h1\nh2 slots=4\n' > "$D/hf2"
run --hostfile "$D/hf2" -n 2 "$P" then exit 3
[ $rc -eq 3 ] || fail "remote child exit 3: mpiexec exit status $rc"
[ "$(placed)" = "0:h2 1:h2 " ] || fail "remote child exit: placement $(placed)"
grep -q "of spawned job [0-9]*\.1 exited with status 3" "$D/err" || fail "remote child exit: no message"
parents_ok || fail "remote child exit: the parent did not go on"
run --hostfile "$D/hf2" -n 2 -x SPAWN_PARENT_WAIT=40 "$P" then abort 6
[ $rc -eq 6 ] && [ $took -lt 30 ] || fail "remote child abort 6: exit status $rc after $took s"
grep -q "finished after the wait" "$D/out" && fail "remote child abort: the parent ran on"
echo "ok: remote children's exit status and MPI_Abort"

# MPI_Comm_spawn itself (tests/mpi/dpm_spawn.c): children on other hosts talk
# to their parents (point-to-point, bcast both ways, merge + allreduce,
# disconnect), from a parent on the head and from parents behind proxies
spawned_on() { # "HOST HOST ..." of the single-mode children, sorted
    sed -n 's/^dpm_spawn child single rank [0-9]* of 3 on host \(h[0-9]*\)$/\1/p' "$D/out" | sort | tr '\n' ' '
}
# (--oversubscribe: the children of one round may still be finishing when the
# next round asks for the same hosts' slots)
must "MPI_Comm_spawn onto h1 and h2 from the head" --oversubscribe -n 2 "$TESTBIN/dpm_spawn" host=h1:2,h2
grep -q "^dpm_spawn: ok" "$D/out" || fail "dpm_spawn from the head: no ok"
on=$(spawned_on)
[ "$(echo "$on" | wc -w)" = 6 ] && ! echo "$on" | grep -q h0 && echo "$on" | grep -q h1 && echo "$on" | grep -q h2 ||
    fail "dpm_spawn from the head: children on $on (want 6 on h1 and h2)"
must "MPI_Comm_spawn onto h3 from parents on h1 and h2" --oversubscribe -host h1:4,h2:4 -n 2 "$TESTBIN/dpm_spawn" host=h3:3
grep -q "^dpm_spawn: ok" "$D/out" || fail "dpm_spawn across hosts: no ok"
[ "$(spawned_on)" = "h3 h3 h3 h3 h3 h3 " ] || fail "dpm_spawn across hosts: children on $(spawned_on)"

# nothing left on the hosts
sleep 1
for i in 1 2 3; do
    left=$(netlab_ps "$i" | grep -v -E " (sshd|sleep)$"; netlab_exec "$i" ls /dev/shm)
    [ -z "$left" ] || fail "left on h$i: $left"
done
exit 0
