#!/bin/bash
# slurmlab: a throw-away Slurm cluster on this machine, for tests.
#
# Sourced by the Slurm tests (tests/scripts/slurm_*.sh):
#     . "$top_srcdir/tests/scripts/slurmlab.sh"
#     slurmlab_require            # exit 77 (skip) with the reason when it cannot work here
#     slurmlab_up 2               # munged, slurmctld and 2 slurmds ("nodes" kn1, kn2)
#     slurmlab_srun -N 2 -n 4 --mpi=pmix ./prog
# and everything it made goes when the test's shell exits, also on failure
# (an EXIT trap; a test that sets its own EXIT trap calls slurmlab_down in it).
# Run directly (bash slurmlab.sh), it is the lab's own test: up with two
# nodes, a step over both, down, nothing left.
#
# The lab (names carry this shell's pid, so that labs of concurrent test
# runs do not meet):
#   - a folder (mktemp under /var/tmp, not /tmp: each slurmd has its own /tmp)
#     with a munge key, slurm.conf, state, spool and logs;
#   - munged as root on a private socket and key (AuthInfo=socket=...), not the
#     machine's munged;
#   - network namespace ksl<pid>h ("hub"): a bridge 10.250.0.1/24, slurmctld;
#     srun runs there (slurmstepd connects back to it);
#   - per node k, namespace ksl<pid>n<k> with eth0 = 10.250.0.(10+k) on a veth
#     whose other end is on the hub's bridge; slurmd -N kn<k> inside, entered
#     with nsenter (not `ip netns exec`, which remounts /sys and hides the
#     cgroup tree), in a private mount namespace with its own tmpfs /tmp (the
#     PMIx plugin's /tmp/spmix_appdir_* would collide between slurmds).
#   The nodes share the machine's host name (same UTS namespace): which ranks
#   share a node comes from Slurm/PMIx, not from gethostname().
# slurm.conf: MpiDefault=pmix (mpi/pmix_v4, OpenPMIx 4.2), proctrack/linuxproc,
# task/none, CPUs=2 per node (the machine's), OverSubscribe=YES.
#
# Exported after slurmlab_up: SLURMLAB_DIR, SLURMLAB_HUB (namespace name),
# SLURMLAB_NODES (names), SLURMLAB_UP_SECS (seconds from nothing to all nodes
# idle), SLURM_CONF.

SLURMLAB_SELFTEST=0
[ "${BASH_SOURCE[0]}" = "$0" ] && SLURMLAB_SELFTEST=1

. "$(dirname "${BASH_SOURCE[0]}")/tmp_keep.inc"

slurmlab_skip() {
    echo "SKIP: $*"
    exit 77
}

# Everything the lab needs, or a skip saying what is missing.
slurmlab_require() {
    local c missing=()
    for c in slurmctld slurmd srun sinfo munged ip nsenter unshare; do
        command -v "$c" > /dev/null 2>&1 || missing+=("$c")
    done
    [ ${#missing[@]} -eq 0 ] ||
        slurmlab_skip "Slurm lab: missing ${missing[*]} (Debian: slurmctld slurmd slurm-client munge iproute2 util-linux; ./check.sh installs them)"
    [ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so ] || [ -n "$(ls /usr/lib/*/slurm*/mpi_pmix*.so 2>/dev/null)" ] ||
        slurmlab_skip "Slurm lab: Slurm's mpi/pmix plugin is not installed"
    [ "$(id -u)" = 0 ] || slurmlab_skip "Slurm lab: needs root (network namespaces, slurmd)"
    local probe=kslprobe$$
    ip netns add "$probe" > /dev/null 2>&1 || slurmlab_skip "Slurm lab: network namespaces cannot be created here"
    if ! nsenter --net=/var/run/netns/"$probe" unshare -m --propagation private true > /dev/null 2>&1; then
        ip netns del "$probe" 2> /dev/null
        slurmlab_skip "Slurm lab: cannot enter a network namespace and make a private mount namespace"
    fi
    ip netns del "$probe" 2> /dev/null
    return 0
}

SLURMLAB_DIR=
SLURMLAB_HUB=
SLURMLAB_NODES=()
SLURMLAB_NS=()           # node namespaces
SLURMLAB_MUNGED_PID=

slurmlab_log() { echo "slurmlab: $*" >&2; }

# Processes in a network namespace (our lab's only: the names are ours).
slurmlab_ns_pids() { ip netns pids "$1" 2> /dev/null; }

slurmlab_kill_ns() { # namespace: TERM, then KILL what is left after 3 s
    local ns=$1 p i
    [ -e /var/run/netns/"$ns" ] || return 0
    for p in $(slurmlab_ns_pids "$ns"); do kill -TERM "$p" 2> /dev/null; done
    for i in $(seq 30); do
        [ -z "$(slurmlab_ns_pids "$ns")" ] && break
        sleep 0.1
    done
    for p in $(slurmlab_ns_pids "$ns"); do kill -KILL "$p" 2> /dev/null; done
    for i in $(seq 20); do
        [ -z "$(slurmlab_ns_pids "$ns")" ] && break
        sleep 0.1
    done
}

slurmlab_down() {
    local ns
    [ -n "$SLURMLAB_DIR$SLURMLAB_HUB" ] || return 0
    for ns in "${SLURMLAB_NS[@]}"; do slurmlab_kill_ns "$ns"; done
    [ -n "$SLURMLAB_HUB" ] && slurmlab_kill_ns "$SLURMLAB_HUB"
    if [ -n "$SLURMLAB_MUNGED_PID" ]; then
        kill -TERM "$SLURMLAB_MUNGED_PID" 2> /dev/null
        for _ in $(seq 20); do kill -0 "$SLURMLAB_MUNGED_PID" 2> /dev/null || break; sleep 0.1; done
        kill -KILL "$SLURMLAB_MUNGED_PID" 2> /dev/null
    fi
    for ns in "${SLURMLAB_NS[@]}" $SLURMLAB_HUB; do ip netns del "$ns" 2> /dev/null; done
    [ -n "$SLURMLAB_DIR" ] && [ -d "$SLURMLAB_DIR" ] && rm -rf "$SLURMLAB_DIR"
    SLURMLAB_DIR= SLURMLAB_HUB= SLURMLAB_NS=() SLURMLAB_NODES=() SLURMLAB_MUNGED_PID=
}

slurmlab_on_signal() { exit 130; }

# Show the daemons' logs (on failure).
slurmlab_logs() {
    local f
    [ -d "$SLURMLAB_DIR/log" ] || return 0
    for f in "$SLURMLAB_DIR"/log/*; do
        echo "---- $(basename "$f") (last lines)"
        tail -n "${1:-15}" "$f"
    done
}

# slurmlab_up NNODES: the lab, up and every node idle; 1 when it cannot come up.
slurmlab_up() {
    local n=${1:-2} k t0 ctl i line
    t0=$(date +%s.%N)
    trap slurmlab_down EXIT
    trap slurmlab_on_signal INT TERM HUP
    SLURMLAB_DIR=$(mktemp -d /var/tmp/kumi-slurmlab.XXXXXX) || { slurmlab_log "mktemp failed"; return 1; }
    chmod 700 "$SLURMLAB_DIR"
    mkdir -p "$SLURMLAB_DIR"/{log,state,spool,munge}
    chmod 700 "$SLURMLAB_DIR/munge"
    # munged: private key and socket
    dd if=/dev/urandom of="$SLURMLAB_DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 600 "$SLURMLAB_DIR/munge/munge.key"
    munged --force --socket="$SLURMLAB_DIR/munge/sock" --key-file="$SLURMLAB_DIR/munge/munge.key" \
        --pid-file="$SLURMLAB_DIR/munge/munged.pid" --log-file="$SLURMLAB_DIR/log/munged.log" \
        --seed-file="$SLURMLAB_DIR/munge/seed" > "$SLURMLAB_DIR/log/munged.out" 2>&1 ||
        { slurmlab_log "munged did not start"; cat "$SLURMLAB_DIR/log/munged.out" >&2; return 1; }
    SLURMLAB_MUNGED_PID=$(cat "$SLURMLAB_DIR/munge/munged.pid" 2> /dev/null)
    # network: hub with a bridge, one namespace per node
    SLURMLAB_HUB=ksl$$h
    ip netns add "$SLURMLAB_HUB" || { SLURMLAB_HUB=; slurmlab_log "ip netns add failed"; return 1; }
    ip -n "$SLURMLAB_HUB" link set lo up
    ip -n "$SLURMLAB_HUB" link add br0 type bridge
    ip -n "$SLURMLAB_HUB" addr add 10.250.0.1/24 dev br0
    ip -n "$SLURMLAB_HUB" link set br0 up
    for k in $(seq "$n"); do
        local ns=ksl$$n$k
        ip netns add "$ns" || { slurmlab_log "ip netns add $ns failed"; return 1; }
        SLURMLAB_NS+=("$ns")
        SLURMLAB_NODES+=("kn$k")
        ip -n "$ns" link set lo up
        ip link add eth0 netns "$ns" type veth peer name p$k netns "$SLURMLAB_HUB" ||
            { slurmlab_log "veth for $ns failed"; return 1; }
        ip -n "$ns" addr add 10.250.0.$((10 + k))/24 dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$SLURMLAB_HUB" link set p$k master br0
        ip -n "$SLURMLAB_HUB" link set p$k up
    done
    # slurm.conf
    ctl=$(hostname -s)
    export SLURM_CONF=$SLURMLAB_DIR/slurm.conf
    {
        echo "ClusterName=kumilab"
        echo "SlurmctldHost=$ctl(10.250.0.1)"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        echo "AuthInfo=socket=$SLURMLAB_DIR/munge/sock"
        echo "StateSaveLocation=$SLURMLAB_DIR/state"
        echo "SlurmdSpoolDir=$SLURMLAB_DIR/spool/%n"
        echo "SlurmctldPidFile=$SLURMLAB_DIR/slurmctld.pid"
        echo "SlurmdPidFile=$SLURMLAB_DIR/slurmd.%n.pid"
        echo "SlurmctldLogFile=$SLURMLAB_DIR/log/slurmctld.log"
        echo "SlurmdLogFile=$SLURMLAB_DIR/log/slurmd.%n.log"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core"
        echo "SchedulerType=sched/builtin"
        echo "MpiDefault=pmix"
        echo "ReturnToService=2"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "SlurmctldDebug=info"
        echo "SlurmdDebug=info"
        echo "SlurmdTimeout=30"
        echo "InactiveLimit=0"
        echo "KillWait=2"
        echo "MessageTimeout=10"
        for k in $(seq "$n"); do
            echo "NodeName=kn$k NodeAddr=10.250.0.$((10 + k)) CPUs=2 State=UNKNOWN"
        done
        echo "PartitionName=lab Nodes=kn[1-$n] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
    } > "$SLURM_CONF"
    nsenter --net=/var/run/netns/"$SLURMLAB_HUB" slurmctld -f "$SLURM_CONF" > "$SLURMLAB_DIR/log/slurmctld.out" 2>&1 ||
        { slurmlab_log "slurmctld did not start"; slurmlab_logs >&2; return 1; }
    # each slurmd's private /tmp gets the trees the tests run from that live
    # under /tmp (tmp_keep.inc), carried over by bind mounts
    local keep pre="" post="" j=0
    for keep in $(lab_tmp_keep); do
        mkdir -p "$SLURMLAB_DIR/keep.$j" || return 1
        pre="$pre mount --bind '$keep' '$SLURMLAB_DIR/keep.$j' &&"
        post="$post mkdir -p '$keep' && mount --move '$SLURMLAB_DIR/keep.$j' '$keep' &&"
        j=$((j + 1))
    done
    for k in $(seq "$n"); do
        nsenter --net=/var/run/netns/ksl$$n$k unshare -m --propagation private \
            sh -c "$pre mount -t tmpfs -o mode=1777 tmpfs /tmp && $post exec slurmd -f '$SLURM_CONF' -N kn$k" \
            > "$SLURMLAB_DIR/log/slurmd.kn$k.out" 2>&1 ||
            { slurmlab_log "slurmd kn$k did not start"; slurmlab_logs >&2; return 1; }
    done
    # every node idle (slurmd registered)
    for i in $(seq 600); do
        line=$(slurmlab_run sinfo -h -N -o '%T' 2> /dev/null | grep -c '^idle$')
        [ "$line" = "$n" ] && break
        sleep 0.1
    done
    if [ "$line" != "$n" ]; then
        slurmlab_log "only ${line:-0} of $n nodes idle after 60 s"
        slurmlab_run sinfo -N >&2
        slurmlab_logs >&2
        return 1
    fi
    SLURMLAB_UP_SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    export SLURMLAB_DIR SLURMLAB_HUB SLURMLAB_UP_SECS
    slurmlab_log "up: $n node(s) in ${SLURMLAB_UP_SECS}s (conf $SLURM_CONF)"
    return 0
}

# A command in the hub namespace (where srun, sinfo, salloc run).
slurmlab_run() {
    nsenter --net=/var/run/netns/"$SLURMLAB_HUB" env SLURM_CONF="$SLURM_CONF" "$@"
}

slurmlab_srun() { slurmlab_run srun "$@"; }

if [ "$SLURMLAB_SELFTEST" = 1 ]; then
    # the lab's own test: up, a step over two nodes, down, nothing left
    set -u
    slurmlab_require
    slurmlab_up 2 || exit 1
    out=$(timeout 60 nsenter --net=/var/run/netns/"$SLURMLAB_HUB" env SLURM_CONF="$SLURM_CONF" \
          srun -N 2 -n 2 --mpi=none sh -c 'echo "$SLURM_NODEID $(ip -4 -o addr show eth0 | awk "{print \$4}")"' 2>&1)
    rc=$?
    echo "$out"
    [ $rc -eq 0 ] || { slurmlab_logs; echo "FAIL: srun -N 2 exited $rc"; exit 1; }
    echo "$out" | grep -q '^0 10.250.0.11/24$' && echo "$out" | grep -q '^1 10.250.0.12/24$' ||
        { echo "FAIL: the step's two tasks did not run one in each node's namespace"; exit 1; }
    dir=$SLURMLAB_DIR hub=$SLURMLAB_HUB nss="${SLURMLAB_NS[*]}" mpid=$SLURMLAB_MUNGED_PID
    t0=$(date +%s.%N)
    slurmlab_down
    down=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    for ns in $hub $nss; do
        [ -e /var/run/netns/"$ns" ] && { echo "FAIL: namespace $ns left"; exit 1; }
    done
    [ -d "$dir" ] && { echo "FAIL: $dir left"; exit 1; }
    kill -0 "$mpid" 2> /dev/null && { echo "FAIL: munged $mpid left running"; exit 1; }
    echo "slurmlab: ok (up in ${SLURMLAB_UP_SECS}s, down in ${down}s)"
    exit 0
fi
