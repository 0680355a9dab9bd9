#!/bin/bash
# The wide-area lab (issue 19 item 7): two clusters as network namespaces
# behind a router namespace, on this one machine.
#
#     cluster A  198.18.1.2/24 --veth-- router --veth-- 198.18.2.2/24  cluster B
#                                (forwarding through a TUN delay line, then a
#                                 tbf bottleneck on each egress)
#
# Sourced by tests and benchmarks:
#     . "$top_srcdir/tests/scripts/wanlab.sh"
#     wanlab_up DELAY_US [RATE_MBIT] [TBF_LIMIT_BYTES] || exit $?   (77: skip, reason printed)
#     ... run ranks in "$WL_NS_A" / "$WL_NS_B" (paths under /run/netns) ...
#     wanlab_drops          packets the bottleneck dropped so far (both directions)
#     wanlab_down           (also run on EXIT: wanlab_up installs the trap)
# The one-way delay is added once per direction by tests/mpi/wan_delay (built
# with the test programs: $TESTBIN/wan_delay); DELAY_US 0 leaves it out.  The
# addresses come from 198.18.0.0/15 (RFC 2544, benchmarking) and never leave
# the machine.  WL_CC (default cubic) is the congestion control of the
# clusters' TCP (this kernel defaults to bbr, which paces on its own; the
# lab models the loss-based TCP that all-to-all traffic overruns); where a
# namespace may not use it, reno.  WL_CC_USED says which one the lab got.
#
# Run as a script, it checks itself: the round trip across is about twice the
# delay, and the bottleneck limits the rate.
WL=${WL:-kw$$}
WL_NS_A=/run/netns/${WL}a WL_NS_B=/run/netns/${WL}b WL_R=${WL}r
WL_ADDR_A=198.18.1.2 WL_ADDR_B=198.18.2.2 WL_NET_A=198.18.1.0/24 WL_NET_B=198.18.2.0/24
WL_DELAY_PID=

wanlab_down() {
    if [ -n "$WL_DELAY_PID" ]; then
        kill "$WL_DELAY_PID" 2>/dev/null
        wait "$WL_DELAY_PID" 2>/dev/null
        WL_DELAY_PID=
    fi
    local n
    for n in ${WL}a $WL_R ${WL}b; do ip netns del "$n" 2>/dev/null; done
    return 0
}

wanlab_skip() { echo "SKIP: $*"; wanlab_down; return 77; }

# wanlab_up DELAY_US [RATE_MBIT (100)] [TBF_LIMIT_BYTES (64000)]
wanlab_up() {
    local delay=${1:-0} rate=${2:-100} limit=${3:-64000} n
    command -v ip > /dev/null || { echo "SKIP: no ip(8)"; return 77; }
    command -v tc > /dev/null || { echo "SKIP: no tc(8)"; return 77; }
    trap wanlab_down EXIT
    for n in ${WL}a $WL_R ${WL}b; do
        ip netns add "$n" 2> /dev/null || { wanlab_skip "cannot make network namespaces here (ip netns add)"; return 77; }
        ip -n "$n" link set lo up
    done
    local A=${WL}a B=${WL}b R=$WL_R
    ip link add vA netns $A type veth peer name rA netns $R &&
        ip link add vB netns $B type veth peer name rB netns $R &&
        ip -n $A addr add $WL_ADDR_A/24 dev vA && ip -n $A link set vA up &&
        ip -n $A route add default via 198.18.1.1 &&
        ip -n $B addr add $WL_ADDR_B/24 dev vB && ip -n $B link set vB up &&
        ip -n $B route add default via 198.18.2.1 &&
        ip -n $R addr add 198.18.1.1/24 dev rA && ip -n $R addr add 198.18.2.1/24 dev rB &&
        ip -n $R link set rA up && ip -n $R link set rB up &&
        ip netns exec $R sysctl -qw net.ipv4.ip_forward=1 ||
        { wanlab_skip "cannot set up veth pairs and routes between namespaces"; return 77; }
    WL_CC_USED=
    for n in $A $B; do      # cubic is not allowed in a namespace on some kernels: reno then
        ip netns exec $n sysctl -qw net.ipv4.tcp_congestion_control="${WL_CC:-cubic}" 2>/dev/null ||
            ip netns exec $n sysctl -qw net.ipv4.tcp_congestion_control=reno 2>/dev/null
        WL_CC_USED=$(ip netns exec $n cat /proc/sys/net/ipv4/tcp_congestion_control)
    done
    # the bottleneck: tbf on the router's egress both ways
    for n in rA rB; do
        tc -n $R qdisc add dev $n root tbf rate "${rate}mbit" burst 32kb limit "$limit" ||
            { wanlab_skip "cannot add a tbf qdisc"; return 77; }
    done
    if [ "$delay" -gt 0 ]; then
        local prog=${WL_DELAY_PROG:-$TESTBIN/wan_delay}
        [ -x "$prog" ] || { wanlab_skip "no delay-line program $prog (make check-programs)"; return 77; }
        [ -c /dev/net/tun ] || { wanlab_skip "no /dev/net/tun"; return 77; }
        ip -n $R tuntap add dev dly0 mode tun 2>/dev/null && ip -n $R link set dly0 up mtu 1500 ||
            { wanlab_skip "cannot make a TUN device in a namespace"; return 77; }
        ip netns exec $R sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
            net.ipv4.conf.dly0.rp_filter=0 net.ipv4.conf.rA.rp_filter=0 net.ipv4.conf.rB.rp_filter=0
        # what comes in from either cluster goes into the delay line; what it
        # writes back (iif dly0) is routed normally
        ip -n $R route add default dev dly0 table 100 && ip -n $R rule add iif rA lookup 100 pref 100 &&
            ip -n $R rule add iif rB lookup 100 pref 101 || { wanlab_skip "cannot route through the delay line"; return 77; }
        local fifo; fifo=$(mktemp -u /tmp/wanlab.XXXXXX)
        mkfifo "$fifo"
        ip netns exec $R "$prog" dly0 "$delay" > "$fifo" 2> "${WL_DELAY_LOG:-/dev/null}" &
        WL_DELAY_PID=$!
        local line=
        read -r -t 5 line < "$fifo"
        rm -f "$fifo"
        [ "$line" = ready ] || { wanlab_skip "the delay line did not start"; return 77; }
    fi
    # the links take a moment to carry packets
    wanlab_rtt 3 > /dev/null && return 0
    echo "FAIL: cluster A cannot reach cluster B through the router"
    wanlab_down
    return 1
}

# wanlab_rtt COUNT: the median round trip (ms) of UDP probes from A to an echo
# in B (no ping(8) here); fails when none comes back within 5 s.
wanlab_rtt() {
    local n=${1:-5} pid rc
    ip netns exec ${WL}b python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 7007)); s.settimeout(8)
try:
    while True:
        d, a = s.recvfrom(64); s.sendto(d, a)
except socket.timeout:
    pass' $WL_ADDR_B &
    pid=$!
    ip netns exec ${WL}a python3 -c '
import socket, sys, time
n = int(sys.argv[2]); s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(0.5)
rtt = []; end = time.time() + 5
while len(rtt) < n and time.time() < end:
    t = time.monotonic()
    s.sendto(b"x", (sys.argv[1], 7007))
    try:
        s.recvfrom(64); rtt.append((time.monotonic() - t) * 1e3); time.sleep(0.05)
    except socket.timeout:
        pass
if not rtt: sys.exit(1)
rtt.sort(); print("%.2f" % rtt[len(rtt) // 2])' $WL_ADDR_B "$n"
    rc=$?
    kill $pid 2>/dev/null; wait $pid 2>/dev/null
    return $rc
}

# Packets the bottleneck dropped (both directions) since wanlab_up.
wanlab_drops() {
    tc -n $WL_R -s qdisc show 2>/dev/null | awk '/^qdisc tbf/ {t=1; next} t && /dropped/ {
        for (i = 1; i < NF; i++) if ($i == "(dropped" || $i == "dropped") { v = $(i+1); sub(",", "", v); s += v }
        t=0 } END {print s+0}'
}

# Run as a test: the lab works.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -u
    TESTBIN=${TESTBIN:-$PWD}
    wanlab_up 5000 100 || exit $?
    rtt=$(wanlab_rtt 5) || { echo "FAIL: no round trip"; exit 1; }
    echo "round trip with 5 ms each way: ${rtt} ms"
    awk -v r="$rtt" 'BEGIN { exit !(r >= 9.5 && r < 40) }' || { echo "FAIL: round trip $rtt ms, not about 10"; exit 1; }
    d0=$(wanlab_drops)
    [ "$d0" = 0 ] || { echo "FAIL: $d0 drops before any load"; exit 1; }
    # a burst of UDP far above the bottleneck's rate: the counter must move
    ip netns exec ${WL}a python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(3000): s.sendto(b"x" * 1400, (sys.argv[1], 7009))' $WL_ADDR_B
    d1=$(wanlab_drops)
    echo "drops after a UDP burst: $d1"
    [ "$d1" -gt 0 ] || { echo "FAIL: the drop counter did not move"; tc -n $WL_R -s qdisc show; exit 1; }
    tc -n $WL_R qdisc show dev rB | grep -q 'tbf.*rate 100Mbit' || { echo "FAIL: no tbf bottleneck"; tc -n $WL_R qdisc show; exit 1; }
    wanlab_down
    ip netns list | grep -q "^${WL}" && { echo "FAIL: namespaces left"; exit 1; }
    echo "ok: lab up (delay line, bottleneck) and down"
    exit 0
fi
