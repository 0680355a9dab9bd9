#!/bin/bash
# ckpt_hosts: coordinated checkpoints of jobs across hosts (issue 20;
# tools/mpiexec/ckpt.c, remote.c, proxy.c) in the namespace lab (netlab.sh:
# hosts with their own sshd, /dev/shm and /tmp), with tests/mpi/ckpt_job.c
# (p2p with a derived datatype, rendezvous and unexpected messages, a pending
# MPI_Iallreduce, collectives on a split communicator): tcp between hosts,
# shmem inside each.  The checkpoint folder is under the lab's folder
# (/var/tmp: the same path on every host, as a shared file system would be).
#  1. 2 hosts (h1:2,h2:2): checkpoint-and-continue twice (SIGQUIT at random
#     times): written, the manifest names each rank's host, kumi_ckpt --info
#     checks the images, the result bit for bit the uninterrupted run's.
#  2. restart of that checkpoint on the manifest's hosts (no -host: h1, h2)
#     and on other hosts (-host h3:2,h4:2, -host h5:4); the same result.
#  3. 4 hosts, 8 ranks, proxies as a tree (--fanout 2): checkpoint-and-stop at
#     a random time (exit 0, no result), restarted on the same hosts (as a
#     tree again) and on two others (-host h5:4,h6:4); the same result.
#  4. a host lost during a checkpoint (its proxy killed): the job ends with a
#     message naming the host and the failed checkpoint; the previous
#     checkpoint stays usable (restarted: the same result).
#  5. RMA windows (tests/mpi/ckpt_rma: lock / unlock epochs on targets of
#     the other host too) stopped on 2 hosts, restarted on two others and on
#     one (the same result); a restart that separates ranks which shared a
#     host refused by mpiexec with a clear message (windows, and ckpt_job).
#  6. coll/sm's segments (tests/mpi/ckpt_coll): 4 ranks on one host stopped
#     with their segments in use, restarted on another host (segments shared
#     again, the same result); on two hosts refused by mpiexec as in 5.
#  7. p2p/ofi (tcp;ofi_rxm) between hosts: stopped on h1:2,h2:2, restarted on
#     h3:2,h4:2 (the provider chosen again there); the same result.
# After every job: nothing left in /dev/shm (nor processes) on any host.
# A long test (about 3.5 minutes on a loaded 2-core machine): runs under
# `./check.sh --long` (KUMI_TEST_LONG=1) or when KUMI_TEST_CKPT_HOSTS=1.
set -u
if [ "${KUMI_TEST_LONG:-0}" != 1 ] && [ "${KUMI_TEST_CKPT_HOSTS:-0}" != 1 ]; then
    echo "SKIP: a long test (./check.sh --long, or KUMI_TEST_CKPT_HOSTS=1)"; exit 77
fi
: "${MPIEXEC:?}" "${TESTBIN:?}" "${top_srcdir:?}"
: "${top_builddir:=$top_srcdir}"
KCKPT=$top_builddir/components/ckpt/image/kumi_ckpt
export KUMI_CKPT_RESTART_PROGRAM=$top_builddir/components/ckpt/image/kumi_restart
PROG=./ckpt_job
if [ ! -x "$KCKPT" ] || [ ! -x "$KUMI_CKPT_RESTART_PROGRAM" ]; then
    [ "$(uname -m)-$(uname -s)" = x86_64-Linux ] || { echo "SKIP: ckpt/image is for x86_64 Linux"; exit 77; }
    echo "FAIL: kumi_ckpt / kumi_restart not built (components/ckpt/image)"; exit 1
fi
[ -x "$TESTBIN/ckpt_job" ] && [ -x "$TESTBIN/ckpt_coll" ] || { echo "FAIL: ckpt_job or ckpt_coll not built"; exit 1; }
. "$top_srcdir/tests/scripts/netlab.sh"
netlab_up 6 || { echo "FAIL: the lab does not come up"; exit 1; }
D=$NETLAB_DIR
cd "$TESTBIN" || exit 1
export MPIEXEC_TIMEOUT=240
ITERS=${CKPT_ITERS:-200}
# fail, ok, show, result, wait_for
. "$top_srcdir/tests/scripts/lib/ckpt_frame.sh"
SHOW_LINES=20
# mpiexec on the head h0, over the lab's ssh
# (tcp between hosts, shmem inside: p2p/ofi is left out)
XC="MPI_COMPONENTS=p2p=self,shmem,tcp"
mx() { KUMI_VERBOSE=1 netlab_exec 0 "$MPIEXEC" --launch-agent "$NETLAB_SSH" -x "$XC" "$@"; }
mx_bg() { # LOG mpiexec-args...: $MP is its pid
    local log=$1
    shift
    netlab_bg 0 "$log" "$log.err" env KUMI_VERBOSE=1 "$MPIEXEC" --launch-agent "$NETLAB_SSH" -x "$XC" "$@"
    MP=$NETLAB_BG
}
merge() { cat "$1.err" >> "$1" 2> /dev/null; rm -f "$1.err"; }
# nothing of any job left on the hosts (processes, /dev/shm)
clean_hosts() { # WHAT
    local i left all=
    sleep 0.3
    for ((i = 0; i <= 6; i++)); do
        left=$(netlab_ps "$i" | grep -v -E " (sshd|sleep)$"; netlab_exec "$i" ls /dev/shm)
        [ -z "$left" ] || all="$all h$i: $(echo $left)"
    done
    [ -z "$all" ] && ok "$1: nothing left on any host" || fail "$1: left:$all"
}
hosts_of() { sed -n 's/^rank [0-9]* host \([^ ]*\) .*/\1/p' "$1/manifest" | tr '\n' ' '; }

# the references: uninterrupted runs (4 ranks on 2 hosts, 8 on 4)
mx -host h1:2,h2:2 -x KUMI_VERBOSE=1 $PROG $ITERS > "$D/ref4" 2>&1 < /dev/null || { show "$D/ref4"; fail "reference run (4 ranks)"; exit 1; }
grep -q "kumi\[0\]: p2p/shmem serves ranks 1$" "$D/ref4" && grep -q "kumi\[0\]: p2p/tcp serves ranks 2-3" "$D/ref4" \
    || { show "$D/ref4"; fail "rank 0: not shmem to rank 1 (h1) and tcp to ranks 2-3 (h2)"; }
REF4=$(result "$D/ref4")
mx -host h1:2,h2:2,h3:2,h4:2 $PROG $ITERS > "$D/ref8" 2>&1 < /dev/null || { show "$D/ref8"; fail "reference run (8 ranks)"; exit 1; }
REF8=$(result "$D/ref8")
[ -n "$REF4" ] && [ -n "$REF8" ] && ok "references: $REF4 (4 ranks), $REF8 (8 ranks)" || { fail "no reference result"; exit 1; }

# 1. 2 hosts, checkpoint-and-continue twice
C2=$D/c2
mkdir -p "$C2"
L=$D/cont2
mx_bg "$L" --ckpt-dir "$C2" -host h1:2,h2:2 $PROG $ITERS
if wait_for "$L.err" "iteration 0" 60; then
    for k in 1 2; do
        wait_for "$L.err" "^iteration $((k * 40))" 120
        sleep "0.0$((RANDOM % 9))"
        kill -QUIT $MP
        wait_for "$L.err" "checkpoint $k \(written\|not written\)" 120 || { fail "2 hosts: checkpoint $k did not end"; break; }
        grep -q "checkpoint $k written to $C2: 4 images" "$L.err" && ok "2 hosts: checkpoint $k written ($(sed -n "s/.*checkpoint $k written to [^:]*: //p" "$L.err"))" \
            || { show "$L.err"; fail "2 hosts: checkpoint $k not written"; break; }
    done
else
    fail "2 hosts: the job did not start"
fi
wait $MP
rc=$?
merge "$L"
[ $rc = 0 ] && [ "$(result "$L")" = "$REF4" ] && ok "2 hosts, continued twice: exit 0, result bit for bit the uninterrupted run's" \
    || { show "$L"; fail "2 hosts, continued: exit $rc, result '$(result "$L")', expected $REF4"; }
[ "$(hosts_of "$C2")" = "h1 h1 h2 h2 " ] && ok "the manifest names each rank's host: $(hosts_of "$C2")" \
    || { cat "$C2/manifest"; fail "manifest hosts: '$(hosts_of "$C2")'"; }
"$KCKPT" --info "$C2" > "$D/info" 2>&1 && [ "$(grep -c ': ok$' "$D/info")" = 4 ] && ok "kumi_ckpt --info: 4 images check out" \
    || { show "$D/info"; fail "kumi_ckpt --info $C2"; }
clean_hosts "2 hosts, continued"

# 2. restart: the manifest's hosts, then other hosts
restart() { # NAME REF DIR mpiexec-args...
    local name=$1 ref=$2 dir=$3
    shift 3
    local log=$D/rs_$name
    mx --restart "$dir" "$@" > "$log" 2>&1 < /dev/null
    local rc=$?
    [ $rc = 0 ] && [ "$(result "$log")" = "$ref" ] && ok "restart $name: exit 0, result bit for bit the uninterrupted run's" \
        || { show "$log"; fail "restart $name: exit $rc, result '$(result "$log")', expected $ref"; }
    local j0 j1
    j0=$(sed -n 's/^jobid \([0-9]*\)$/\1/p' "$dir/manifest")
    j1=$(sed -n 's/^mpiexec: job \([0-9][0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$j1" ] && [ "$j1" != "$j0" ] || fail "restart $name: job id '$j0' -> '$j1' (not a new job)"
    RSLOG=$log
}
restart "on the manifest's hosts" "$REF4" "$C2"
grep -q "host h1: proxy ready" "$RSLOG" && grep -q "host h2: proxy ready" "$RSLOG" && ! grep -q "host h[3-6]: proxy" "$RSLOG" \
    && ok "restart without -host: on h1 and h2, through their proxies" || { show "$RSLOG"; fail "restart without -host: not on h1, h2"; }
clean_hosts "restart on h1, h2"
restart "on h3:2,h4:2" "$REF4" "$C2" -host h3:2,h4:2
grep -q "host h3: proxy ready" "$RSLOG" && grep -q "host h4: proxy ready" "$RSLOG" && ! grep -q "host h[12]: proxy" "$RSLOG" \
    || { show "$RSLOG"; fail "restart -host h3,h4: not on h3, h4"; }
restart "on h5:4 (the 4 ranks on one host)" "$REF4" "$C2" -host h5:4
clean_hosts "restarts on other hosts"

# 3. 4 hosts, 8 ranks, a tree of proxies: checkpoint-and-stop, restarts
C4=$D/c4
mkdir -p "$C4"
L=$D/stop4
mx_bg "$L" --checkpoint-and-stop --ckpt-dir "$C4" --fanout 2 -host h1:2,h2:2,h3:2,h4:2 $PROG $ITERS
wait_for "$L.err" "iteration $((RANDOM % 5 * 10 + 10))" 120 && sleep "0.0$((RANDOM % 9))" && kill -QUIT $MP
wait $MP
rc=$?
merge "$L"
[ $rc = 0 ] && grep -q "checkpoint 1 written to $C4: 8 images" "$L" && [ -z "$(result "$L")" ] \
    && ok "4 hosts (tree, --fanout 2): stopped at $(grep '^iteration' "$L" | tail -1) with a checkpoint" \
    || { show "$L"; fail "4 hosts, checkpoint-and-stop: exit $rc"; }
[ "$(hosts_of "$C4")" = "h1 h1 h2 h2 h3 h3 h4 h4 " ] || { cat "$C4/manifest"; fail "4 hosts: manifest hosts '$(hosts_of "$C4")'"; }
clean_hosts "4 hosts, stopped"
restart "of 8 ranks on the same 4 hosts (--fanout 2)" "$REF8" "$C4" --fanout 2
clean_hosts "restart on the 4 hosts"
restart "of 8 ranks on h5:4,h6:4" "$REF8" "$C4" -host h5:4,h6:4
clean_hosts "restart on h5, h6"

# 4. a host lost during a checkpoint: the proxy of h2 killed right after the request
L=$D/lost
mx_bg "$L" --ckpt-dir "$C2" -host h1:2,h2:2 $PROG $ITERS mem 64
if wait_for "$L.err" "iteration 20" 120; then
    px=$(netlab_ps 2 | awk '$2 == "kumi_proxy" {print $1}')
    kill -QUIT $MP
    [ -n "$px" ] && kill -KILL $px
fi
wait $MP
rc=$?
merge "$L"
if [ $rc != 0 ] && grep -q "host h2 lost" "$L" && grep -q "checkpoint 1 not written: host h2 was lost during the checkpoint" "$L"; then
    ok "a host lost during a checkpoint: exit $rc, $(grep -o 'checkpoint 1 not written.*' "$L" | head -1)"
else
    show "$L"; fail "a host lost during a checkpoint: exit $rc, no clear message"
fi
# its ranks were killed with their proxy (SIGKILL, as in a crash): segments
# they had could stay on h2, nobody being left there to remove them
left=$(netlab_exec 2 ls /dev/shm)
[ -z "$left" ] || echo "note: left on h2 by the ranks killed with their proxy: $(echo $left)"
netlab_exec 2 sh -c 'rm -f /dev/shm/kumi.* /dev/shm/sem.kumi.*'
clean_hosts "a host lost"
restart "of the checkpoint before the loss" "$REF4" "$C2"
clean_hosts "the last restart"

# 5. RMA windows (tests/mpi/ckpt_rma: an MPI_Win_allocate window in each
#    host's shared segment, an MPI_Win_create one reached with CMA) stopped
#    on h1:2,h2:2: restarted on other hosts with the same pairs, and with the
#    4 ranks on one host (ranks of different hosts reach each other with
#    messages, also on one host); the same result.  A restart that puts
#    ranks 0 and 1 (which shared h1's segment) on two hosts is refused by
#    mpiexec, and leaves nothing behind.  (The ranks ready for a checkpoint
#    serve the others until every rank is: an exclusive lock on a target of
#    another host ends with the target's reply.)
[ -x "$TESTBIN/ckpt_rma" ] || { fail "ckpt_rma not built"; exit 1; }
mx -host h1:2,h2:2 ./ckpt_rma $ITERS > "$D/refw" 2>&1 < /dev/null || { show "$D/refw"; fail "reference run (windows)"; }
REFW=$(result "$D/refw")
CW=$D/cw
mkdir -p "$CW"
L=$D/stopw
mx_bg "$L" --checkpoint-and-stop --ckpt-dir "$CW" -host h1:2,h2:2 ./ckpt_rma $ITERS
wait_for "$L" "^iteration $((RANDOM % 5 * 10 + 10))" 120 && sleep "0.0$((RANDOM % 9))" && kill -QUIT $MP
wait $MP
rc=$?
merge "$L"
[ $rc = 0 ] && grep -q "checkpoint 1 written to $CW: 4 images" "$L" && [ -z "$(result "$L")" ] \
    && ok "windows, 2 hosts: stopped at $(grep '^iteration' "$L" | tail -1) with a checkpoint" \
    || { show "$L"; fail "windows, 2 hosts, checkpoint-and-stop: exit $rc"; }
clean_hosts "windows, stopped"
restart "of the windows on h3:2,h4:2" "$REFW" "$CW" -host h3:2,h4:2
restart "of the windows on h5:4 (both hosts' pairs on one host)" "$REFW" "$CW" -host h5:4
clean_hosts "windows, restarted"
# ranks that shared a host apart: refused by mpiexec before anything starts
split() { # NAME DIR -host...
    local L=$D/rs_split_$1
    mx --restart "$2" -host "$3" > "$L" 2>&1 < /dev/null
    local rc=$?
    if [ $rc != 0 ] && grep -q "ranks 0 and 1 shared host h1 at the checkpoint, but would run on h3 and h4" "$L" \
        && ! grep -q "proxy ready" "$L"; then
        ok "$1: a restart with ranks 0 and 1 apart refused: exit $rc, $(grep -o 'ranks 0 and 1 shared.*share one again' "$L")"
    else
        show "$L"; fail "$1: restart with ranks 0 and 1 apart: exit $rc, no clear refusal"
    fi
}
split windows "$CW" h3:1,h4:3
split "p2p (single-copy messages kept)" "$C2" h3:1,h4:1,h5:2
clean_hosts "refused restarts"

# 6. coll/sm's segments (tests/mpi/ckpt_coll: small collectives on
#    MPI_COMM_WORLD and on halves), 4 ranks on h5 stopped while they use
#    them; restarted on h6:4 (the same grouping on another host): every
#    segment shared again at its old address, the result bit for bit the
#    uninterrupted run's.  A restart on h5:2,h6:2 would separate ranks that
#    shared h5: refused by mpiexec (see 5), nothing left behind.
[ -x "$TESTBIN/ckpt_coll" ] || { fail "ckpt_coll not built"; exit 1; }
mx -host h5:4 ./ckpt_coll 3000 > "$D/refc" 2>&1 < /dev/null || { show "$D/refc"; fail "reference run (coll/sm)"; }
REFC=$(result "$D/refc")
CS=$D/csm
mkdir -p "$CS"
L=$D/csm_stop
mx_bg "$L" --checkpoint-and-stop --ckpt-dir "$CS" -host h5:4 ./ckpt_coll 3000
wait_for "$L.err" "^iteration $((100 + RANDOM % 8 * 100))" 120 && sleep "0.0$((RANDOM % 9))" && kill -QUIT $MP
wait $MP
rc=$?
merge "$L"
n=$(grep -c "coll/sm: 2 segments kept through the checkpoint" "$L")
[ $rc = 0 ] && [ "$n" = 4 ] && ok "coll/sm: 4 ranks on h5 stopped with their segments in use" \
    || { show "$L"; fail "coll/sm: stop on h5: exit $rc, $n of 4 ranks with 2 segments kept"; }
clean_hosts "coll/sm, stopped"
restart "of the coll-sm segments on h6:4" "$REFC" "$CS" -host h6:4
n=$(grep -c 'coll/sm: restart: 2 segments shared again' "$RSLOG")
[ "$n" = 4 ] && ok "coll/sm: restarted on h6:4: every rank shared its 2 segments again" \
    || { show "$RSLOG"; fail "coll/sm: restart on h6:4: $n of 4 ranks shared 2 segments again"; }
L=$D/csm_rs
mx --restart "$CS" -host h5:2,h6:2 > "$L" 2>&1 < /dev/null
rc=$?
[ $rc != 0 ] && grep -q "shared host h5 at the checkpoint, but would run on h5 and h6" "$L" && ! grep -q "proxy ready" "$L" \
    && ok "coll/sm: a restart on h5:2,h6:2 refused: exit $rc, $(grep -o 'ranks [0-9]* and [0-9]* shared host h5.*h6' "$L" | head -1)" \
    || { show "$L"; fail "coll/sm: restart on h5:2,h6:2: exit $rc, no clear refusal"; }
clean_hosts "coll/sm's restarts"

# 7. p2p/ofi (libfabric's tcp;ofi_rxm) between hosts: stopped on h1:2,h2:2
#    with rendezvous messages parked at the cut, restarted on h3:2,h4:2.  The
#    image's provider record names h1's or h2's interface, which h3 and h4
#    do not have: ofi chooses the same provider again after a checkpoint.
XC="MPI_COMPONENTS=p2p=self,ofi"
mx -host h1:2,h2:2 -x KUMI_VERBOSE=1 $PROG $ITERS > "$D/refo" 2>&1 < /dev/null || { show "$D/refo"; fail "reference run (ofi)"; }
grep -q "kumi\[0\]: p2p/ofi serves ranks 1-3$" "$D/refo" || { show "$D/refo"; fail "ofi reference: rank 0 not served by p2p/ofi"; }
REFO=$(result "$D/refo")
CO=$D/co
mkdir -p "$CO"
L=$D/stopo
mx_bg "$L" --checkpoint-and-stop --ckpt-dir "$CO" -host h1:2,h2:2 $PROG $ITERS
wait_for "$L.err" "^iteration $((RANDOM % 5 * 10 + 20))" 120 && sleep "0.0$((RANDOM % 9))" && kill -QUIT $MP
wait $MP
rc=$?
merge "$L"
n=$(grep -c "p2p/ofi: released for a checkpoint" "$L")
[ $rc = 0 ] && grep -q "checkpoint 1 written to $CO: 4 images" "$L" && [ "$n" = 4 ] && [ -z "$(result "$L")" ] \
    && ok "ofi, 2 hosts: stopped at $(grep '^iteration' "$L" | tail -1), every rank's p2p/ofi released" \
    || { show "$L"; fail "ofi, 2 hosts, checkpoint-and-stop: exit $rc, $n of 4 ranks released p2p/ofi"; }
clean_hosts "ofi, stopped"
restart "over ofi on h3:2,h4:2" "$REFO" "$CO" -host h3:2,h4:2
clean_hosts "ofi, restarted"
[ $failures = 0 ] || { echo "$failures failure(s)"; exit 1; }
exit 0
