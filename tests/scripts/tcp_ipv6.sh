#!/bin/bash
# p2p/tcp over IPv6 and over a chosen subnet (issue 18 item 4), and
# KUMI_VERBOSE=1's line per peer saying which transport (and for tcp which
# address) serves it:
#  1. p2p_tcp_family=ipv6 + p2p_tcp_if_include=::1: the ring and the
#     collectives run, and every rank reaches every other at [::1]:port;
#  2. p2p_tcp_if_include=<the IPv4 subnet of a non-loopback interface> (CIDR):
#     peers are reached at that interface's address; the same with its IPv6
#     subnet where it has a global one;
#  3. prefer_ipv6 puts [::1] first, ipv4 leaves IPv6 out;
#  4. a bad list item (10.0.0.0/33) or family is named in a warning and
#     leaves tcp out (MPI_Init fails at once, no hang);
#  5. default components on one host: shmem / self lines for each peer.
set -u
fail() { echo "FAIL: $*"; exit 1; }
export MPI_COMPONENTS="p2p=self,tcp"
run() { timeout 120 "$MPIEXEC" --timeout 100 "$@" 2>&1; }

# every rank names every other with the transport line wanted ("tcp [::1]:")
expect_peers() { # output, n, pattern (extended regex after "-> rank P: "), what
    local out=$1 n=$2 pat=$3 what=$4
    for ((r = 0; r < n; r++)); do
        for ((p = 0; p < n; p++)); do
            [ $r = $p ] && continue
            echo "$out" | grep -Eq "^kumi\[$r\]: rank $r -> rank $p: $pat" ||
                { echo "$out" | grep -- '->' | head -20; fail "$what: rank $r -> rank $p is not '$pat'"; }
        done
        echo "$out" | grep -Eq "^kumi\[$r\]: rank $r -> rank $r: self" || fail "$what: rank $r -> itself is not self"
    done
}

# 1. IPv6 loopback only
if ! python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0))' 2>/dev/null; then
    echo "SKIP: no IPv6 loopback (::1) here"; exit 77
fi
v6=(--param p2p_tcp_family=ipv6 --param p2p_tcp_if_include=::1)
out=$(run -n 4 "${v6[@]}" -x KUMI_VERBOSE=1 "$TESTBIN/p2p_ring" 300) || { echo "$out" | tail -20; fail "ring over [::1]"; }
expect_peers "$out" 4 'tcp \[::1\]:[0-9]+$' "ring over [::1]"
out=$(run -n 4 "${v6[@]}" "$TESTBIN/coll_all") || { echo "$out" | tail -20; fail "coll_all over [::1]"; }
out=$(run -n 3 "${v6[@]}" "$TESTBIN/tcp_sizes" 1100000) || { echo "$out" | tail -20; fail "tcp_sizes over [::1]"; }
echo "$out" | grep -q "tcp_sizes: ok" || fail "tcp_sizes over [::1]: no ok line: $out"
echo "ok: ring, collectives and sizes over [::1]"

# 2. a subnet of a non-loopback interface
read -r dev cidr < <(ip -o -4 addr show scope global 2>/dev/null | awk '{print $2, $4; exit}')
if [ -n "${cidr:-}" ]; then
    addr=${cidr%/*}
    net=$(python3 -c "import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network)" "$cidr")
    out=$(run -n 3 --param p2p_tcp_if_include="$net" -x KUMI_VERBOSE=1 "$TESTBIN/p2p_ring" 300) ||
        { echo "$out" | tail -20; fail "ring with if_include=$net"; }
    expect_peers "$out" 3 "tcp ${addr//./\\.}:[0-9]+\$" "if_include=$net"
    # excluding the subnet by name of its interface as well as by CIDR leaves loopback
    out=$(run -n 2 --param p2p_tcp_if_exclude="$net" -x KUMI_VERBOSE=1 "$TESTBIN/tcp_sizes" 2>&1) ||
        { echo "$out" | tail -20; fail "if_exclude=$net"; }
    echo "$out" | grep -q "tcp ${addr}:" && fail "if_exclude=$net: $addr still used"
    echo "ok: if_include=$net ($dev) reaches peers at $addr"
else
    echo "no global IPv4 address here: the IPv4 subnet case not tried"
fi
read -r dev6 cidr6 < <(ip -o -6 addr show scope global 2>/dev/null | grep -v tentative | awk '{print $2, $4; exit}')
if [ -n "${cidr6:-}" ]; then
    addr6=${cidr6%/*}
    net6=$(python3 -c "import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network)" "$cidr6")
    out=$(run -n 3 --param p2p_tcp_if_include="$net6" -x KUMI_VERBOSE=1 "$TESTBIN/p2p_ring" 300) ||
        { echo "$out" | tail -20; fail "ring with if_include=$net6"; }
    expect_peers "$out" 3 "tcp \\[${addr6}\\]:[0-9]+\$" "if_include=$net6"
    echo "ok: if_include=$net6 ($dev6) reaches peers at [$addr6]"
else
    echo "no global IPv6 address here: the IPv6 subnet case not tried"
fi

# 3. preference and exclusion of a version
out=$(run -n 2 --param p2p_tcp_family=prefer_ipv6 -x KUMI_VERBOSE=1 "$TESTBIN/tcp_sizes") || fail "prefer_ipv6: $out"
expect_peers "$out" 2 'tcp \[::1\]:' "prefer_ipv6"
out=$(run -n 2 --param p2p_tcp_family=ipv4 -x KUMI_VERBOSE=1 "$TESTBIN/tcp_sizes") || fail "ipv4: $out"
expect_peers "$out" 2 'tcp 127\.0\.0\.1:' "family=ipv4"
out=$(run -n 2 -x KUMI_VERBOSE=1 "$TESTBIN/tcp_sizes") || fail "default family: $out"
expect_peers "$out" 2 'tcp 127\.0\.0\.1:' "default family (IPv4 first)"
echo "ok: prefer_ipv6 / ipv4 / default"

# 4. bad values: named, and the job ends at once
for bad in "p2p_tcp_if_include=eth0,10.0.0.0/33" "p2p_tcp_if_exclude=fd00::/200" "p2p_tcp_family=ipv5"; do
    out=$(run -n 2 --param "$bad" "$TESTBIN/tcp_sizes")
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "$bad: exit $rc (expected a quick failure): $out"
    item=${bad#*=}; item=${item#eth0,}
    echo "$out" | grep -F "p2p/tcp: not used" | grep -qF "$item" || fail "$bad: no warning naming \"$item\": $out"
done
echo "ok: bad lists and family are named"

# 5. the table with the default components (one host: shmem and self)
out=$(unset MPI_COMPONENTS; run -n 3 -x KUMI_VERBOSE=1 "$TESTBIN/p2p_ring" 100) || fail "default components: $out"
expect_peers "$out" 3 'shmem$' "default components on one host"
echo "ok: KUMI_VERBOSE=1 names the transport of every peer"
exit 0
