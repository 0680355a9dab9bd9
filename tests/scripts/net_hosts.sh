#!/bin/bash
# Two "hosts" made of network namespaces of this machine, with the SAME host
# name (no UTS namespace), joined by a veth pair (10.231.7.1/24 and .2,
# fd42:7::1/64 and ::2).  Ranks 0, 1 run in the first, 2, 3 in the second
# (tests/scripts/netns_rank.py; mpiexec still starts them all here, and the
# job is told that it spans 2 hosts).  Issue 18 item 4:
#  1. "same host" is the network namespace, not the host name: shmem serves
#     the peer in one's own namespace only, tcp the others, at the veth
#     address (KUMI_VERBOSE=1's per-peer lines); the ring, the collectives
#     and RMA run; MPI_COMM_TYPE_SHARED splits by namespace (rma_ops skips
#     shared windows);
#  2. the same over IPv6 (p2p_tcp_family=ipv6: [fd42:7::2]); with IPv4 to
#     the other host cut (a prohibit route), peers are reached over IPv6;
#  3. p2p/ofi (tcp;ofi_rxm) across the two: it serves the other host's ranks
#     at the veth address; p2p_ofi_if_include names the subnet; an
#     if_exclude that leaves no interface leaves ofi out.
# Creates and removes its namespaces; skipped where they cannot be made.
set -u
fail() { echo "FAIL: $*"; exit 1; }
command -v ip > /dev/null || { echo "SKIP: no ip(8)"; exit 77; }
A=kn$$a B=kn$$b
cleanup() { ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null; }
trap cleanup EXIT
if ! ip netns add $A 2>/dev/null || ! ip netns add $B 2>/dev/null; then
    echo "SKIP: cannot make network namespaces here (ip netns add)"; exit 77
fi
ip -n $A link set lo up && ip -n $B link set lo up &&
    ip link add ${A}v netns $A type veth peer name ${B}v netns $B &&
    ip -n $A addr add 10.231.7.1/24 dev ${A}v && ip -n $B addr add 10.231.7.2/24 dev ${B}v &&
    ip -n $A addr add fd42:7::1/64 dev ${A}v nodad && ip -n $B addr add fd42:7::2/64 dev ${B}v nodad &&
    ip -n $A link set ${A}v up && ip -n $B link set ${B}v up || { echo "SKIP: cannot set up a veth pair"; exit 77; }
# the link takes a moment to carry packets
for _ in $(seq 50); do
    ip -n $A -o link show ${A}v | grep -q 'state UP' && ip -n $B -o link show ${B}v | grep -q 'state UP' && break
    sleep 0.1
done
sleep 1

hosts() { # mpiexec arguments...; the program and its arguments after --
    timeout 150 "$MPIEXEC" --timeout 120 -n 4 "$@" 2>&1
}
wrap=(python3 "$top_srcdir/tests/scripts/netns_rank.py" 2 /run/netns/$A /run/netns/$B)

# rank r's line for peer p matches pattern
expect() { # output, r, p, pattern, what
    echo "$1" | grep -Eq "^kumi\[$2\]: rank $2 -> rank $3: $4" ||
        { echo "$1" | grep -E -- '->|serves' | head -30; fail "$5: rank $2 -> rank $3 is not '$4'"; }
}
addr_of() { [ "$1" -lt 2 ] && echo "$2" || echo "$3"; }

# 1. tcp between the namespaces, shmem within
out=$(hosts -x MPI_COMPONENTS=p2p=self,shmem,tcp -x KUMI_VERBOSE=1 "${wrap[@]}" -- "$TESTBIN/p2p_ring" 300) ||
    { echo "$out" | tail -30; fail "ring over two namespace hosts"; }
for r in 0 1 2 3; do
    mate=$((r ^ 1)) o1=$(( (r / 2 == 0) ? 2 : 0 ))
    echo "$out" | grep -q "kumi\[$r\]: p2p/shmem serves ranks $mate\$" ||
        { echo "$out" | grep serves; fail "rank $r: shmem must serve rank $mate only (its own namespace)"; }
    echo "$out" | grep -q "kumi\[$r\]: p2p/tcp serves ranks $o1-$((o1 + 1))\$" ||
        { echo "$out" | grep serves; fail "rank $r: tcp must serve the other namespace's ranks"; }
    for p in $o1 $((o1 + 1)); do
        expect "$out" $r $p "tcp $(addr_of $p 10.231.7.1 10.231.7.2):[0-9]+\$" "tcp across namespaces"
    done
    expect "$out" $r $mate 'shmem$' "shmem within a namespace"
done
out=$(hosts -x MPI_COMPONENTS=p2p=self,shmem,tcp "${wrap[@]}" -- "$TESTBIN/coll_all") ||
    { echo "$out" | tail -30; fail "coll_all over two namespace hosts"; }
out=$(hosts -x MPI_COMPONENTS=p2p=self,shmem,tcp "${wrap[@]}" -- "$TESTBIN/rma_ops") ||
    { echo "$out" | tail -30; fail "rma_ops over two namespace hosts"; }
echo "$out" | grep -q 'rma_ops: 4 ranks OK' || { echo "$out" | tail -20; fail "rma_ops said nothing"; }
# MPI_COMM_TYPE_SHARED groups the ranks of one namespace: no shared windows across
echo "$out" | grep -q 'the ranks span hosts: no shared windows' ||
    { echo "$out" | tail -20; fail "MPI_COMM_TYPE_SHARED put both namespaces in one node communicator"; }
echo "ok: tcp between namespaces with one host name, shmem within; ring, collectives, RMA"

# 2. IPv6 between them
out=$(hosts -x MPI_COMPONENTS=p2p=self,shmem,tcp --param p2p_tcp_family=ipv6 -x KUMI_VERBOSE=1 "${wrap[@]}" -- \
      "$TESTBIN/p2p_ring" 300) || { echo "$out" | tail -30; fail "ring over IPv6 between namespaces"; }
expect "$out" 0 2 'tcp \[fd42:7::2\]:[0-9]+$' "IPv6 across namespaces"
expect "$out" 3 1 'tcp \[fd42:7::1\]:[0-9]+$' "IPv6 across namespaces"
out=$(hosts -x MPI_COMPONENTS=p2p=self,shmem,tcp --param p2p_tcp_family=ipv6 "${wrap[@]}" -- "$TESTBIN/coll_all") ||
    { echo "$out" | tail -30; fail "coll_all over IPv6 between namespaces"; }
echo "ok: IPv6 between namespaces"

# 2b. the first address does not work (IPv4 to the other host prohibited in the
# first namespace): the next one (IPv6) serves, and KUMI_VERBOSE says so
ip -n $A route add prohibit 10.231.7.2/32 || fail "cannot add a prohibit route"
out=$(hosts -x MPI_COMPONENTS=p2p=self,shmem,tcp --param p2p_tcp_connect_timeout=1 -x KUMI_VERBOSE=1 "${wrap[@]}" -- \
      "$TESTBIN/p2p_ring" 300) || { echo "$out" | tail -30; fail "ring with IPv4 between namespaces cut"; }
ip -n $A route del prohibit 10.231.7.2/32
# the ring's pairs across (1 -> 2, 3 -> 0): one connection serves both directions of a pair
# (p2p_tcp_share_connections), reported by the rank that opened it, which may be either
for rp in "1 2" "3 0"; do
    set -- $rp
    echo "$out" | grep -Eq "^kumi\[$1\]: rank $1 -> rank $2: tcp \[fd42:7::$(( $2 / 2 + 1 ))\]:[0-9]+ \(after 1 address that failed\)|^kumi\[$2\]: rank $2 -> rank $1: tcp \[fd42:7::$(( $1 / 2 + 1 ))\]:[0-9]+ \(after 1 address that failed\)" ||
        { echo "$out" | grep -E -- '->|serves' | head -30; fail "fallback to IPv6: neither rank $1 -> rank $2 nor back reports it"; }
done
echo "ok: a peer is reached at its next address when the first fails"

# 3. p2p/ofi across the namespaces
if "$KUMI_INFO" --parsable 2>/dev/null | grep -q '^component:p2p:ofi:status:available'; then
    ofi=(-x MPI_COMPONENTS=p2p=self,shmem,ofi --param 'p2p_ofi_provider=tcp;ofi_rxm')
    out=$(hosts "${ofi[@]}" --param p2p_ofi_if_include=10.231.7.0/24 -x KUMI_VERBOSE=1 "${wrap[@]}" -- \
          "$TESTBIN/p2p_ring" 300) || { echo "$out" | tail -30; fail "ring over ofi between namespaces"; }
    for r in 0 3; do
        o1=$(( (r / 2 == 0) ? 2 : 0 ))
        echo "$out" | grep -q "kumi\[$r\]: p2p/ofi serves ranks $o1-$((o1 + 1))\$" ||
            { echo "$out" | grep serves; fail "rank $r: ofi must serve the other namespace's ranks"; }
        expect "$out" $r $o1 "ofi tcp;ofi_rxm $(addr_of $o1 10.231.7.1 10.231.7.2):[0-9]+\$" "ofi across namespaces"
    done
    out=$(hosts "${ofi[@]}" "${wrap[@]}" -- "$TESTBIN/coll_all") ||
        { echo "$out" | tail -30; fail "coll_all over ofi between namespaces"; }
    out=$(hosts "${ofi[@]}" "${wrap[@]}" -- "$TESTBIN/rma_ops") ||
        { echo "$out" | tail -30; fail "rma_ops over ofi between namespaces"; }
    # no interface left for ofi: it is not used, and nothing reaches the other host
    out=$(hosts "${ofi[@]}" --param p2p_ofi_if_exclude=10.231.7.0/24,fd42:7::/64 "${wrap[@]}" -- "$TESTBIN/p2p_ring" 10)
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "ofi with every interface excluded: exit $rc: $out"
    echo "$out" | grep -q "no transport reaches rank" || fail "ofi with every interface excluded: $out"
    echo "ok: ofi (tcp;ofi_rxm) between namespaces"
else
    echo "p2p/ofi not available here: its case not tried"
fi
exit 0
