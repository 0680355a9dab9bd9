#!/bin/bash
# slurm_mpiexec: Kumi's mpiexec inside a Slurm allocation (salloc, sbatch),
# on the Slurm lab (tests/scripts/slurmlab.sh: two "nodes" kn1, kn2, each a
# network namespace with its own slurmd):
#   - no -host/--hostfile: the hosts and slots come from the allocation
#     (SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE), -n from its slots, and the
#     proxies are started by one srun step (--launcher slurm, chosen by
#     itself); salloc -N 2 -n 4: the collectives test with ranks 0-1 on kn1
#     and 2-3 on kn2 (their eth0 addresses), ofi between the nodes; a ring
#     over tcp;
#   - a rank's exit code and MPI_Abort's code are mpiexec's;
#   - the job secret is on no command line (srun's, the proxies');
#   - the address the proxies call back to follows rpim_if_include /
#     rpim_if_exclude, IPv6 included; a bad list is a clear error;
#   - a proxy killed (SIGKILL) and the step cancelled (scancel) end the job
#     within seconds, naming the host and its ranks, non-zero exit, no rank
#     left running;
#   - sbatch: the same from a batch script;
#   - --launcher slurm outside an allocation: a clear refusal.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}" "${top_srcdir:?}"
. "$top_srcdir/tests/scripts/slurmlab.sh"
for p in coll_all p2p_ring launch_fail; do
    [ -x "$TESTBIN/$p" ] || slurmlab_skip "$TESTBIN/$p not built"
done
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cd "$TESTBIN" || exit 1

# outside any allocation: a clear refusal (no lab needed)
out=$(env -u SLURM_JOB_ID -u SLURM_JOB_NODELIST "$MPIEXEC" --launcher slurm -n 2 ./coll_all 2>&1)
rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q 'launcher slurm: not inside a Slurm allocation' ||
    { echo "$out"; fail "--launcher slurm outside an allocation: exit $rc, no clear message"; }

slurmlab_require
slurmlab_up 2 || { echo "FAIL: the Slurm lab did not come up"; exit 1; }
echo "slurm lab up in ${SLURMLAB_UP_SECS}s"
D=$(mktemp -d /var/tmp/kumi-slurmmx.XXXXXX) || exit 1
bgpid=
cleanup() {
    [ -n "$bgpid" ] && kill -KILL "$bgpid" 2> /dev/null
    slurmlab_down
    rm -rf "$D"
}
trap cleanup EXIT
# the hanging jobs' program under a name of this test's own (pgrep -x)
LF=kmxlf$$
cp "$TESTBIN/launch_fail" "$D/$LF" || exit 1

# a shell command inside "salloc -N 2 -n 4" (time-limited: a hang fails)
in_alloc() { # seconds, command
    timeout -k 5 "$1" nsenter --net=/var/run/netns/"$SLURMLAB_HUB" env SLURM_CONF="$SLURM_CONF" MPIEXEC="$MPIEXEC" \
        salloc -N 2 -n 4 bash -c "$2"
}

# 1. collectives over both nodes, the host list and slots from the allocation
t0=$(date +%s.%N)
in_alloc 120 'KUMI_VERBOSE=2 $MPIEXEC ./coll_all' > "$D/out" 2>&1
rc=$?
t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
echo "salloc -N 2 -n 4 mpiexec ./coll_all: exit $rc in ${t}s"
if [ $rc -ne 0 ]; then
    tail -30 "$D/out"
    fail "mpiexec ./coll_all inside salloc -N 2 -n 4 exited $rc"
else
    n=$(grep -c 'rank [0-3] of 4 on .*(rpim fork)' "$D/out")
    [ "$n" = 4 ] || { grep 'rank .* of' "$D/out"; fail "expected 4 ranks of 4 (the allocation's 4 slots), saw $n"; }
    grep -q 'srun.*--nodelist=kn1,kn2.*kumi_proxy --slurm' "$D/out" ||
        { grep 'srun' "$D/out"; fail "the proxies were not started by one srun over kn1,kn2"; }
    grep -q 'kumi\[0\]: p2p/ofi serves ranks 2-3' "$D/out" ||
        { grep 'serves' "$D/out"; fail "rank 0 does not reach ranks 2-3 (the other node) over p2p/ofi"; }
    for h in kn1 kn2; do grep -q "host $h: proxy ready" "$D/out" || fail "no proxy ready on $h"; done
fi
# where each rank ran: its node's eth0 address
in_alloc 60 '$MPIEXEC --tag-output sh -c "ip -4 -o addr show eth0 | awk \"{print \\\$4}\""' > "$D/out" 2>&1
rc=$?
got=$(grep -o '^\[[0-9]*,[0-3]\]<stdout>: 10\.250\.0\.1[12]' "$D/out" | sed 's/^\[[0-9]*,//; s/\]<stdout>: / /' | sort | tr '\n' ' ')
[ $rc -eq 0 ] && [ "$got" = "0 10.250.0.11 1 10.250.0.11 2 10.250.0.12 3 10.250.0.12 " ] ||
    { cat "$D/out"; fail "ranks 0-1 on kn1 (10.250.0.11), 2-3 on kn2 (10.250.0.12): exit $rc, saw '$got'"; }
echo "ranks by node: $got"

# 2. a ring between the nodes over tcp
in_alloc 120 'MPI_COMPONENTS="p2p=self,shmem,tcp" KUMI_VERBOSE=2 $MPIEXEC ./p2p_ring 100' > "$D/out" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -20 "$D/out"; fail "mpiexec ./p2p_ring inside salloc exited $rc"; }
grep -q 'kumi\[3\]: p2p/tcp serves ranks 0-1' "$D/out" ||
    { grep 'serves' "$D/out"; fail "rank 3 does not reach ranks 0-1 (the other node) over p2p/tcp"; }
echo "ring over tcp: exit $rc"

# 2b. the address the proxies call back to: rpim_if_include / _exclude,
# IPv6 (the lab gets fd00:250::/64 beside its IPv4 subnet)
ip -n "$SLURMLAB_HUB" -6 addr add fd00:250::1/64 dev br0 nodad 2> /dev/null
k=1
for ns in "${SLURMLAB_NS[@]}"; do
    ip -n "$ns" -6 addr add "fd00:250::$((10 + k))/64" dev eth0 nodad 2> /dev/null
    k=$((k + 1))
done
in_alloc 120 'KUMI_RPIM_IF_INCLUDE=fd00:250::/64 KUMI_VERBOSE=2 $MPIEXEC ./coll_all' > "$D/out" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -20 "$D/out"; fail "rpim_if_include=fd00:250::/64: mpiexec ./coll_all exited $rc"; }
grep -q 'kumi_proxy --slurm \[fd00:250::1\]:[0-9]*$' "$D/out" ||
    { tail -20 "$D/out"; fail "rpim_if_include=fd00:250::/64: the proxies were not told [fd00:250::1]:PORT alone"; }
in_alloc 120 'KUMI_VERBOSE=2 $MPIEXEC --param rpim_if_exclude=10.250.0.0/16,lo ./coll_all' > "$D/out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q 'kumi_proxy --slurm \[fd00:250::1\]:[0-9]*$' "$D/out" ||
    { grep 'kumi_proxy\|exit' "$D/out"; fail "--param rpim_if_exclude=10.250.0.0/16,lo: exit $rc, or not [fd00:250::1]:PORT alone"; }
in_alloc 60 'KUMI_RPIM_IF_INCLUDE=10.250.0.0/33 $MPIEXEC ./coll_all' > "$D/out" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q 'rpim_if_include / rpim_if_exclude: .*10.250.0.0/33' "$D/out" ||
    { cat "$D/out"; fail "rpim_if_include=10.250.0.0/33: exit $rc, no message naming the bad item"; }
in_alloc 60 'KUMI_RPIM_IF_INCLUDE=192.0.2.0/24 $MPIEXEC ./coll_all' > "$D/out" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q 'no address of this host is left for the proxies' "$D/out" ||
    { cat "$D/out"; fail "rpim_if_include=192.0.2.0/24 (no such address): exit $rc, no clear message"; }
echo "call-back addresses: ok"

# 3. exit codes
in_alloc 60 '$MPIEXEC ./launch_fail exit 3 7' > "$D/out" 2>&1
rc=$?
[ $rc = 7 ] || { tail "$D/out"; fail "rank 3 (on kn2) exits 7: mpiexec exit $rc"; }
grep -q "rank 3 .*exited with status 7" "$D/out" || { tail "$D/out"; fail "exit 7: no message naming rank 3"; }
in_alloc 60 '$MPIEXEC ./launch_fail abort 2 5' > "$D/out" 2>&1
rc=$?
[ $rc = 5 ] || { tail "$D/out"; fail "MPI_Abort(5) on kn2: mpiexec exit $rc"; }
echo "exit codes: ok"

# 4./5. a hanging job: the secret on no command line; then a proxy killed,
# and (another job) the proxies' step cancelled
# this test's hanging processes that still live (zombies wait for init)
live() {
    for p in $(pgrep -x "$LF"); do
        [ "$(awk '{print $3}' "/proc/$p/stat" 2> /dev/null)" = Z ] || echo "$p"
    done
}
hang_job() { # tag: starts the job in the background, waits for its 4 ranks
    : > "$D/$1.out"
    in_alloc 120 'echo "jobid=$SLURM_JOB_ID"; $MPIEXEC '"$D/$LF"' hang; echo "mpiexec-exit=$?"' > "$D/$1.out" 2>&1 &
    bgpid=$!
    for _ in $(seq 1 100); do
        [ "$(live | wc -l)" -ge 8 ] && return 0   # 4 ranks, a child each
        sleep 0.2
    done
    return 1
}
# the proxy processes of node $1 in job $2 (their environment says which)
proxies_of() {
    for p in $(pgrep -x kumi_proxy); do
        tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx "SLURMD_NODENAME=$1" &&
            tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx "SLURM_JOB_ID=$2" && echo "$p"
    done
}
ended_within() { # seconds: the background job has ended
    for _ in $(seq 1 $(($1 * 5))); do
        kill -0 "$bgpid" 2> /dev/null || { wait "$bgpid"; bgpid=; return 0; }
        sleep 0.2
    done
    return 1
}
if hang_job kill; then
    s=$(for p in $(live); do
            tr '\0' '\n' < "/proc/$p/environ" | grep -a -o '^KUMI_JOB_SECRET=[0-9a-f]*'; done | head -1)
    s=${s#KUMI_JOB_SECRET=}
    if [ -z "$s" ]; then
        fail "no job secret in the ranks' environment"
    else
        echo "$s" > "$D/secret"
        grep -l -a -F -f "$D/secret" /proc/[0-9]*/cmdline > "$D/cmdl" 2> /dev/null
        [ -s "$D/cmdl" ] && fail "the job secret is on a command line: $(cat "$D/cmdl")"
    fi
    pk=$(proxies_of kn2 "$(sed -n 's/^jobid=//p' "$D/kill.out")")
    [ -n "$pk" ] || fail "no kumi_proxy of node kn2 found"
    t0=$(date +%s)
    kill -KILL $pk
    ended_within 20 || fail "a proxy killed: the job did not end within 20 s"
    echo "proxy of kn2 killed: the job ended in $(($(date +%s) - t0))s"
    grep -q 'mpiexec-exit=0' "$D/kill.out" && fail "a proxy killed: mpiexec exit 0"
    grep -q 'host kn2 lost.*ranks 2-3' "$D/kill.out" || { cat "$D/kill.out"; fail "a proxy killed: no message naming kn2 and ranks 2-3"; }
    sleep 2
    left=$(live)
    [ -z "$left" ] || { fail "a proxy killed: ranks left running: $left"; kill -KILL $left; }
else
    fail "the hanging job did not start its 4 ranks"
    cat "$D/kill.out"
fi
if hang_job cancel; then
    jid=$(sed -n 's/^jobid=//p' "$D/cancel.out")
    step=$(slurmlab_run squeue -h -s -j "$jid" -o '%i %j' | awk '$2 == "kumi_proxy" {print $1}')
    [ -n "$step" ] || { slurmlab_run squeue -s; fail "no step named kumi_proxy in job $jid"; }
    t0=$(date +%s)
    slurmlab_run scancel "$step"
    ended_within 30 || fail "step cancelled: the job did not end within 30 s"
    echo "step $step cancelled: the job ended in $(($(date +%s) - t0))s"
    grep -q 'mpiexec-exit=0' "$D/cancel.out" && fail "step cancelled: mpiexec exit 0"
    grep -q 'host kn[12] lost' "$D/cancel.out" || { cat "$D/cancel.out"; fail "step cancelled: no message naming a host lost"; }
    sleep 2
    left=$(live)
    [ -z "$left" ] || { fail "step cancelled: ranks left running: $left"; kill -KILL $left; }
else
    fail "the hanging job did not start its 4 ranks"
    cat "$D/cancel.out"
fi

# 6. sbatch: the same from a batch script
printf '#!/bin/bash\ncd %s\n%s ./coll_all\necho "mpiexec-exit=$?"\n' "$TESTBIN" "$MPIEXEC" > "$D/job.sh"
timeout -k 5 120 nsenter --net=/var/run/netns/"$SLURMLAB_HUB" env SLURM_CONF="$SLURM_CONF" \
    sbatch --wait -N 2 -n 4 -o "$D/batch.out" "$D/job.sh" > "$D/sb" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q 'mpiexec-exit=0' "$D/batch.out" 2> /dev/null ||
    { cat "$D/sb" "$D/batch.out" 2> /dev/null | tail -20; fail "sbatch -N 2 -n 4 with mpiexec ./coll_all: exit $rc"; }
echo "sbatch: exit $rc"

if [ $fails -ne 0 ]; then
    slurmlab_logs 10
    exit 1
fi
echo "slurm_mpiexec: ok"
exit 0
