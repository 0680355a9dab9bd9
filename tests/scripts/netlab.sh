# netlab.sh: hosts made of namespaces, for tests of mpiexec across hosts.
# Sourced by tests (not run):
#
#   . "$top_srcdir/tests/scripts/netlab.sh"
#   netlab_up 4 || exit $?        # hosts h0 (the head) .. h4; exits 77 with a reason when impossible
#   netlab_exec 0 "$MPIEXEC" --hostfile "$NETLAB_DIR/hosts4" ...   # run on the head
#   netlab_exec 2 ls /dev/shm     # run on host h2
#   netlab_bg 0 OUT ERR cmd...    # in the background; $NETLAB_BG is cmd's own pid
#   netlab_ps 2                   # "pid name" of h2's processes (pgrep sees every host)
#   netlab_kill_host 2            # every process of h2 dies at once (a host crash)
#   netlab_cut_link 2             # h2's cable is pulled (no FIN, no RST: silence)
#
# Every host hI is a network namespace (its own veth "eth0", address
# 198.18.77.(10+I)/24, on a bridge in a switch namespace: nothing is added to
# the machine's own network), a UTS namespace (host name hI) and a mount
# namespace with a private /tmp, a private /dev/shm and its own /etc/hosts
# naming every lab host.  A namespace is held by a "holder" process (sleep)
# and entered with nsenter -t PID (never "ip netns exec", which remounts
# /sys).  On h1..hN a real sshd (Debian's openssh-server) listens with a
# throw-away host key and accepts a throw-away client key for root;
# $NETLAB_SSH is the ssh command that reaches them by name
# ("ssh -F $NETLAB_DIR/ssh_config"), $NETLAB_DIR/agent HOST CMD... is a
# launch agent that enters host HOST with nsenter (no ssh), and
# $NETLAB_DIR/hostsN is a hostfile of h1..hN.  Files live in NETLAB_DIR
# (under /var/tmp, visible from every host, unlike /tmp).
#
# netlab_down (run by the EXIT trap netlab_up sets; call it yourself if you
# replace the trap) kills every process in every lab namespace, the holders
# and sshds included; the namespaces vanish with their last process.

NETLAB_DIR=
NETLAB_HOLD=()        # holder pid per host, index 0 = head
NETLAB_NS=()          # their network namespaces ("net:[inode]"), the switch's last
NETLAB_SW=
NETLAB_N=0
NETLAB_SSH=

netlab_skip() { echo "SKIP: $*"; exit 77; }

# pids of every process in network namespace $1 ("net:[inode]")
netlab_pids_ns() {
    local ns=$1
    find /proc/[0-9]*/ns/net -maxdepth 0 -printf '%p %l\n' 2> /dev/null |
        awk -v ns="$ns" '$2 == ns { split($1, a, "/"); print a[3] }'
}

# pids of every process in the network namespace of holder pid $1
netlab_pids_in() {
    local ns
    ns=$(readlink "/proc/$1/ns/net" 2>/dev/null) || return 0
    netlab_pids_ns "$ns"
}

# "pid name" of every process of host $1 but its holder (pgrep and ps see
# every host: the lab shares one pid namespace)
netlab_ps() {
    local p
    for p in $(netlab_pids_in "${NETLAB_HOLD[$1]}"); do
        [ "$p" = "${NETLAB_HOLD[$1]}" ] && continue
        echo "$p $(cat "/proc/$p/comm" 2> /dev/null)"
    done
}

netlab_exec() { # host-index command...
    local i=$1
    shift
    nsenter -t "${NETLAB_HOLD[$i]}" -n -u -m --wd="$PWD" -- "$@"
}

# run command on host $1 in the background, stdout to $2, stderr to $3;
# NETLAB_BG is its pid (the command itself: nsenter execs it, no subshell
# in between, so that signals sent to NETLAB_BG reach it)
netlab_bg() {
    local i=$1 out=$2 err=$3
    shift 3
    (exec nsenter -t "${NETLAB_HOLD[$i]}" -n -u -m --wd="$PWD" -- "$@" > "$out" 2> "$err" < /dev/null) &
    NETLAB_BG=$!
}

netlab_addr() { echo "198.18.77.$((10 + $1))"; }

netlab_kill_host() { # every process of the host but its holder (the host can be used again)
    local p
    for p in $(netlab_pids_in "${NETLAB_HOLD[$1]}"); do
        [ "$p" = "${NETLAB_HOLD[$1]}" ] || kill -KILL "$p" 2>/dev/null
    done
}

netlab_cut_link() {
    nsenter -t "$NETLAB_SW" -n -- ip link set "p$1" down
}

netlab_down() {
    local h p ns
    # by namespace, not by holder: the holders may be gone already (a
    # signal to the whole process group) while sshd and others live on
    for ns in "${NETLAB_NS[@]}"; do
        for p in $(netlab_pids_ns "$ns"); do kill -KILL "$p" 2>/dev/null; done
    done
    for h in "${NETLAB_HOLD[@]}" $NETLAB_SW; do
        [ -n "$h" ] && kill -KILL "$h" 2>/dev/null
    done
    # gone (or a zombie waiting for init) before returning
    for h in "${NETLAB_HOLD[@]}" $NETLAB_SW; do
        for p in $(seq 50); do
            [ -e "/proc/$h" ] && [ "$(awk '{print $3}' "/proc/$h/stat" 2> /dev/null)" != Z ] || break
            sleep 0.05
        done
    done
    NETLAB_HOLD=()
    NETLAB_NS=()
    NETLAB_SW=
    [ -n "$NETLAB_DIR" ] && rm -rf "$NETLAB_DIR"
    NETLAB_DIR=
}

# start a holder in new namespaces; prints its pid
netlab_holder() { # unshare options...
    local fifo=$NETLAB_DIR/fifo.$RANDOM pid
    mkfifo "$fifo"
    # the holder says it is ready once in its namespaces
    unshare "$@" -- bash -c 'echo $$ > "$0"; exec sleep infinity' "$fifo" > /dev/null 2>&1 &
    read -r pid < "$fifo"
    rm -f "$fifo"
    echo "$pid"
}

. "$(dirname "${BASH_SOURCE[0]}")/tmp_keep.inc"

netlab_up() { # number of hosts besides the head
    local n=$1 i a
    [ "$(id -u)" = 0 ] || netlab_skip "netlab needs root (namespaces, sshd)"
    command -v nsenter > /dev/null && command -v unshare > /dev/null || netlab_skip "nsenter/unshare missing"
    command -v ip > /dev/null || netlab_skip "iproute2 (ip) missing"
    unshare --net --uts --mount -- true 2> /dev/null || netlab_skip "network/UTS/mount namespaces are not allowed here"
    [ -x /usr/sbin/sshd ] || netlab_skip "no /usr/sbin/sshd (Debian package openssh-server)"
    command -v ssh > /dev/null && command -v ssh-keygen > /dev/null || netlab_skip "no ssh client (openssh-client)"
    NETLAB_DIR=$(mktemp -d /var/tmp/kumi-netlab.XXXXXX) || return 1
    chmod 755 "$NETLAB_DIR"
    trap netlab_down EXIT
    NETLAB_N=$n
    ssh-keygen -q -t ed25519 -N '' -f "$NETLAB_DIR/id" > /dev/null || return 1
    ssh-keygen -q -t ed25519 -N '' -f "$NETLAB_DIR/hostkey" > /dev/null || return 1
    cp "$NETLAB_DIR/id.pub" "$NETLAB_DIR/authorized_keys"
    : > "$NETLAB_DIR/empty_rc"
    chmod 600 "$NETLAB_DIR/id" "$NETLAB_DIR/hostkey"
    mkdir -p /run/sshd
    cat > "$NETLAB_DIR/sshd_config" <<EOF
HostKey $NETLAB_DIR/hostkey
AuthorizedKeysFile $NETLAB_DIR/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
MaxStartups 200
MaxSessions 200
LogLevel ERROR
EOF
    {
        echo "127.0.0.1 localhost"
        for ((i = 0; i <= n; i++)); do echo "$(netlab_addr $i) h$i"; done
    } > "$NETLAB_DIR/hosts"
    {
        for ((i = 0; i <= n; i++)); do printf 'Host h%d\n  HostName %s\n' "$i" "$(netlab_addr $i)"; done
        cat <<EOF
Host *
  User root
  IdentityFile $NETLAB_DIR/id
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  GlobalKnownHostsFile /dev/null
  BatchMode yes
  ConnectTimeout 5
  LogLevel ERROR
EOF
    } > "$NETLAB_DIR/ssh_config"
    NETLAB_SSH="ssh -F $NETLAB_DIR/ssh_config"
    for ((i = 1; i <= n; i++)); do echo "h$i"; done > "$NETLAB_DIR/hosts$n"
    # the launch agent without ssh: nsenter into the host's namespaces
    {
        echo '#!/bin/bash'
        echo 'h=$1; shift'
        echo 'case $h in'
        for ((i = 0; i <= n; i++)); do echo "  h$i) pid=@PID$i@ ;;"; done
        echo '  *) echo "agent: unknown host $h" >&2; exit 255 ;;'
        echo 'esac'
        echo 'exec nsenter -t $pid -n -u -m -- "$@"'
    } > "$NETLAB_DIR/agent"
    chmod 755 "$NETLAB_DIR/agent"

    NETLAB_SW=$(netlab_holder --net)
    [ -n "$NETLAB_SW" ] || netlab_skip "cannot create a network namespace"
    NETLAB_NS[1000]=$(readlink "/proc/$NETLAB_SW/ns/net")
    nsenter -t "$NETLAB_SW" -n -- ip link add br0 type bridge || netlab_skip "cannot create a bridge in a namespace"
    nsenter -t "$NETLAB_SW" -n -- ip link set br0 up
    for ((i = 0; i <= n; i++)); do
        NETLAB_HOLD[$i]=$(netlab_holder --net --uts --mount --propagation private)
        local h=${NETLAB_HOLD[$i]}
        [ -n "$h" ] || { echo "netlab: cannot create host h$i"; return 1; }
        NETLAB_NS[$i]=$(readlink "/proc/$h/ns/net")
        sed -i "s/@PID$i@/$h/" "$NETLAB_DIR/agent"
        ip link add eth0 netns "$h" type veth peer name "p$i" netns "$NETLAB_SW" || return 1
        nsenter -t "$NETLAB_SW" -n -- ip link set "p$i" master br0 up || return 1
        netlab_exec "$i" ip link set lo up || return 1
        netlab_exec "$i" ip addr add "$(netlab_addr $i)/24" dev eth0 || return 1
        netlab_exec "$i" ip link set eth0 up || return 1
        netlab_exec "$i" hostname "h$i" || return 1
        # the private /tmp hides what lives under /tmp (a checkout or build tree
        # there, e.g. CI's clone): those trees are carried over into it
        local k=0 keep
        for keep in $(lab_tmp_keep); do
            mkdir -p "$NETLAB_DIR/keep.$k" &&
                netlab_exec "$i" mount --bind "$keep" "$NETLAB_DIR/keep.$k" || return 1
            k=$((k + 1))
        done
        netlab_exec "$i" mount -t tmpfs -o size=1g,mode=1777 tmpfs /tmp || return 1
        k=0
        for keep in $(lab_tmp_keep); do
            netlab_exec "$i" mkdir -p "$keep" &&
                netlab_exec "$i" mount --move "$NETLAB_DIR/keep.$k" "$keep" || return 1
            k=$((k + 1))
        done
        netlab_exec "$i" mount -t tmpfs -o mode=1777 tmpfs /dev/shm || return 1
        netlab_exec "$i" mount --bind "$NETLAB_DIR/hosts" /etc/hosts || return 1
        # a fresh node: no rc file of the build machine's login account.
        # bash sources ~/.bashrc for every ssh command; here it may run
        # pyenv (a hundred processes and a rehash under a lock: 8 logins
        # at once took seconds, and a stale lock 60 s), which no launcher
        # can help and which drowned the launchers' own cost in the bench.
        local rc
        for rc in "$HOME/.bashrc" "$HOME/.zshenv"; do
            [ -f "$rc" ] && { netlab_exec "$i" mount --bind "$NETLAB_DIR/empty_rc" "$rc" || return 1; }
        done
        if ((i > 0)); then
            netlab_exec "$i" /usr/sbin/sshd -f "$NETLAB_DIR/sshd_config" -o "ListenAddress=$(netlab_addr $i)" ||
                { echo "netlab: sshd does not start on h$i"; return 1; }
        fi
    done
    # every sshd answers (a few tries: sshd forks into the background)
    for ((i = 1; i <= n; i++)); do
        for a in $(seq 50); do
            netlab_exec 0 $NETLAB_SSH "h$i" true 2> /dev/null && break
            sleep 0.1
        done
        netlab_exec 0 $NETLAB_SSH "h$i" true || { echo "netlab: ssh to h$i fails"; return 1; }
    done
    return 0
}

# Run as a test (not sourced): the lab itself works and leaves nothing behind.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -u
    netlab_up 2 || { echo "FAIL: the lab does not come up"; exit 1; }
    [ "$(netlab_exec 0 $NETLAB_SSH h2 hostname)" = h2 ] || { echo "FAIL: ssh h2 from h0"; exit 1; }
    [ "$(netlab_exec 1 $NETLAB_SSH h2 cat /proc/sys/kernel/hostname)" = h2 ] || { echo "FAIL: ssh h2 from h1"; exit 1; }
    netlab_exec 1 touch /dev/shm/netlab-probe /tmp/netlab-probe
    netlab_exec 2 test -e /dev/shm/netlab-probe && { echo "FAIL: /dev/shm is shared between hosts"; exit 1; }
    netlab_exec 2 test -e /tmp/netlab-probe && { echo "FAIL: /tmp is shared between hosts"; exit 1; }
    [ -e /dev/shm/netlab-probe ] && { echo "FAIL: a host's /dev/shm is the machine's"; exit 1; }
    [ "$(netlab_exec 2 getent hosts h1 | awk '{print $1}')" = "$(netlab_addr 1)" ] || { echo "FAIL: h1 unknown on h2"; exit 1; }
    $NETLAB_DIR/agent h1 hostname | grep -qx h1 || { echo "FAIL: the nsenter agent"; exit 1; }
    holders="${NETLAB_HOLD[*]} $NETLAB_SW"
    dir=$NETLAB_DIR
    netlab_down
    trap - EXIT
    for h in $holders; do
        [ -e "/proc/$h" ] && [ "$(awk '{print $3}' "/proc/$h/stat" 2> /dev/null)" != Z ] && { echo "FAIL: holder $h left"; exit 1; }
    done
    [ -e "$dir" ] && { echo "FAIL: $dir left"; exit 1; }
    echo "netlab: 3 hosts up (ssh, private /tmp and /dev/shm, names) and removed"
    exit 0
fi
