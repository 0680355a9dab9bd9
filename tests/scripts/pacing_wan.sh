#!/bin/bash
# pacing/sockrate on the wide-area lab (issue 19 items 6 and 7):
#  1. kumi_info lists the pacing framework, sockrate's parameters, and what it
#     would set (the link from the topology file, the share per sender);
#     without a link it says why it is unavailable;
#  2. 2 x 2 ranks in two clusters behind a 100 Mbit/s bottleneck with 2 ms
#     each way: during MPI_Alltoall / MPI_Alltoallv (and only then: not
#     during MPI_Allgather / MPI_Bcast), the sockets to the other cluster's
#     ranks (and only those) carry SO_MAX_PACING_RATE = 12.5 MB/s x 0.95 / 2
#     ranks / 2 peers across (divide=auto, the default: coll/tuned sends to
#     every peer at once at p = 4, so a rank's share is split among its two
#     sockets across; before: 12.5 MB/s x 0.95 / 2 on each, twice the rank's
#     share) as read back
#     with getsockopt (pacing_sockrate_verbose), and get their previous rate
#     back afterwards; a socket opened during the call is paced at once; the
#     results are right, paced and unpaced;
#  2b. 4 x 4 ranks, divide=auto: MPI_Alltoall goes pairwise at p = 8, each
#     socket gets the rank's share 12.5 MB/s x 0.95 / 4; MPI_Alltoallv is
#     linear up to 16 ranks: that / 4 peers across;
#     divide=dynamic follows the algorithm: coll/tuned's pairwise all-to-all
#     (one peer a round) starts at the sockets rate; a socket sending alone
#     gets the rank's share (12.5 MB/s x 0.95 / 2) less the quarter of one
#     peer's part its done socket keeps: 5937500 - 742187 = 5195312 B/s;
#     divide=senders sets that share on every socket at once;
#  2d. the coll component's hint (coll contract 1.2 pace_hint) instead of a
#     guess from coll/tuned's default rules: pairwise forced with
#     coll_tuned_alltoall_algorithm at 2 + 2 ranks (one peer at a time) gets
#     the rank's whole share on each socket, 12.5 MB/s x 0.95 / 2 = 5937500
#     B/s (the guess: 2968750, as for linear), MPI_Alltoallv (linear) keeps
#     2968750; coll/lact's aggregated all-to-all (2 fake hosts of 2 ranks,
#     one a cluster) sends across from the host leaders 0 and 2 only: their
#     socket gets the whole link share, 12.5 MB/s x 0.95 = 11875000 B/s, the
#     other ranks none (the guess: every rank a sender, 2968750 on each
#     socket: the one socket that carries the data at a quarter of the link);
#  3. pacing_sockrate_remote + _bandwidth instead of the topology file;
#     pacing_sockrate_colls chooses the collectives; _divide=sockets shares
#     a rank's part among its peers across; _enable=0 turns it off;
#  4. the bottleneck's drop counter (tc -s qdisc) with and without pacing
#     over a bandwidth-bound all-to-all.
# Skipped where network namespaces cannot be made.
set -u
fail() { echo "FAIL: $*"; exit 1; }
. "$top_srcdir/tests/scripts/wanlab.sh"
TMP=$(mktemp -d)
topo=$TMP/topo
cat > "$topo" <<EOF
# the lab: cluster A and cluster B behind a 100 Mbit/s (12.5 MB/s) link
cluster A 198.18.1.0/24
cluster B 198.18.2.0/24
link A B 2000 12.5
EOF

# 1. kumi_info
info=$("$KUMI_INFO" --parsable 2>&1)
echo "$info" | grep -q '^framework:pacing:contract:' || fail "kumi_info lists no pacing framework"
echo "$info" | grep -q '^component:pacing:sockrate:status:unavailable' ||
    { echo "$info" | grep pacing; fail "pacing/sockrate without a link must be unavailable"; }
echo "$info" | grep -q '^component:pacing:sockrate:reason:.*no wide-area link' ||
    { echo "$info" | grep pacing; fail "no reason given for pacing/sockrate being unavailable"; }
info=$(KUMI_PACING_SOCKRATE_TOPOLOGY=$topo "$KUMI_INFO" 2>&1)
echo "$info" | grep -q 'available (during alltoall,alltoallv: SO_MAX_PACING_RATE = link x 0.95 / this cluster.s ranks.*links: A-B 12.5 MB/s' ||
    { echo "$info" | grep -i -A2 pacing; fail "kumi_info does not say what pacing/sockrate would set"; }
printf 'cluster A %s\ncluster B %s\nlink A B 100 12.5\n' $WL_NET_A $WL_NET_B > $TMP/lan
info=$(KUMI_PACING_SOCKRATE_TOPOLOGY=$TMP/lan "$KUMI_INFO" 2>&1)
echo "$info" | grep -q 'links: A-B not paced (latency 100 us < pacing_sockrate_min_latency_us)' ||
    { echo "$info" | grep -i -A2 pacing; fail "kumi_info does not say that a 100 us link is not paced"; }
params=$("$KUMI_INFO" --param pacing sockrate 2>&1)
for p in enable colls topology remote bandwidth share min_latency_us verbose; do
    echo "$params" | grep -q "pacing_sockrate_$p" || { echo "$params"; fail "kumi_info --param: no pacing_sockrate_$p"; }
done
echo "ok: kumi_info shows the pacing framework, its parameters and what it would set"

# 2. the lab
trap 'rm -rf "$TMP"; wanlab_down' EXIT
wanlab_up 2000 100 || exit $?
trap 'rm -rf "$TMP"; wanlab_down' EXIT
run() { # ranks per cluster, mpiexec arguments..., -- program args
    local n=$1; shift
    timeout 200 "$MPIEXEC" --timeout 180 -n $((2 * n)) -x MPI_COMPONENTS=p2p=self,shmem,tcp "$@" 2>&1
}
wrap2=(python3 "$top_srcdir/tests/scripts/netns_rank.py" 2 "$WL_NS_A" "$WL_NS_B")
rate=2968750    # 12.5e6 * 0.95 / 2 senders / 2 peers across (divide=auto, the default, at p = 4)
out=$(run 2 -x KUMI_PACING_SOCKRATE_TOPOLOGY="$topo" -x KUMI_PACING_SOCKRATE_VERBOSE=1 "${wrap2[@]}" -- \
      "$TESTBIN/wan_a2a" -k mix -b 65536 -n 3) || { echo "$out" | tail -30; fail "paced all-to-all over the lab"; }
echo "$out" | grep -q '^wan_a2a: mix 4 ranks' || { echo "$out" | tail; fail "wan_a2a said nothing"; }
for r in 0 1 2 3; do
    cl=A; [ $r -ge 2 ] && cl=B
    echo "$out" | grep -q "^pacing/sockrate\[$r\]: cluster $cl, 2 of 4 ranks in other clusters" ||
        { echo "$out" | grep sockrate | head; fail "rank $r: not in cluster $cl with 2 remote ranks"; }
    others="2 3"; [ $r -ge 2 ] && others="0 1"
    set_lines=$(echo "$out" | grep -E "^pacing/sockrate\[$r\]: [a-z]+: rank [0-9]+ fd [0-9]+ rate ")
    for o in $others; do
        echo "$set_lines" | grep -Eq "^pacing/sockrate\[$r\]: (alltoall|alltoallv|opened): rank $o fd [0-9]+ rate $rate B/s \(was unlimited\)\$" ||
            { echo "$out" | grep "sockrate\[$r\]"; fail "rank $r: its socket to rank $o was not paced at $rate B/s"; }
        echo "$out" | grep -Eq "^pacing/sockrate\[$r\]: restored rank $o fd [0-9]+ rate unlimited" ||
            { echo "$out" | grep "sockrate\[$r\]"; fail "rank $r: the rate of its socket to rank $o was not restored"; }
    done
    # only the other cluster's ranks, only alltoall / alltoallv (the counts' alltoall too)
    bad=$(echo "$set_lines" | grep -Ev "rank (${others// /|}) fd" ; echo "$set_lines" | grep -Ev ': (alltoall|alltoallv|opened): ')
    [ -z "$bad" ] || { echo "$bad"; fail "rank $r paced a socket it must not"; }
    echo "$set_lines" | grep -q ': alltoallv: ' || fail "rank $r: nothing paced during MPI_Alltoallv"
done
echo "$out" | grep -Eq 'pacing/sockrate\[[0-9]\]: (allgather|bcast)' && fail "MPI_Allgather / MPI_Bcast were paced"
# every "set" is followed by a "restored" before the next collective that is not paced:
# the restore happened after the call (queue 0 or at the next call)
nset=$(echo "$out" | grep -Ec '^pacing/sockrate\[[0-9]\]: (alltoall|alltoallv|opened): rank')
nres=$(echo "$out" | grep -Ec '^pacing/sockrate\[[0-9]\]: restored rank')
[ "$nres" -ge 8 ] || fail "only $nres restores for $nset rates set"
echo "ok: the sockets to the other cluster are paced during MPI_Alltoall(v) only and restored ($nset set, $nres restored)"

out=$(run 2 -x KUMI_PACING_SOCKRATE_TOPOLOGY="$topo" -x KUMI_PACING_SOCKRATE_VERBOSE=1 \
      -x KUMI_PACING_SOCKRATE_ENABLE=0 "${wrap2[@]}" -- "$TESTBIN/wan_a2a" -k mix -b 65536 -n 3) ||
    { echo "$out" | tail -30; fail "unpaced all-to-all over the lab"; }
echo "$out" | grep -q 'pacing/sockrate' && { echo "$out" | grep sockrate | head; fail "pacing_sockrate_enable=0 still paced"; }
echo "$out" | grep -q '^wan_a2a: mix 4 ranks' || fail "unpaced run said nothing"
echo "ok: pacing_sockrate_enable=0: nothing paced, results right"

# 2b. 4 + 4 ranks, the default (auto): pairwise MPI_Alltoall, linear MPI_Alltoallv
wrap4=(python3 "$top_srcdir/tests/scripts/netns_rank.py" 4 "$WL_NS_A" "$WL_NS_B")
out=$(run 4 -x KUMI_PACING_SOCKRATE_TOPOLOGY="$topo" -x KUMI_PACING_SOCKRATE_VERBOSE=1 "${wrap4[@]}" -- \
      "$TESTBIN/wan_a2a" -k mix -b 65536 -n 1) || { echo "$out" | tail -30; fail "4 + 4 ranks, divide=auto"; }
echo "$out" | grep -Eq "^pacing/sockrate\[0\]: (alltoall|opened): rank [4-7] fd [0-9]+ rate 2968750 B/s \(was unlimited\)\$" ||
    { echo "$out" | grep "sockrate\[0\]" | head; fail "divide=auto, 8 ranks: MPI_Alltoall (pairwise) not at 12.5e6 x 0.95 / 4 a socket"; }
echo "$out" | grep -Eq "^pacing/sockrate\[0\]: alltoallv: rank [4-7] fd [0-9]+ rate 742187 B/s \(was unlimited\)\$" ||
    { echo "$out" | grep "sockrate\[0\]" | head; fail "divide=auto, 8 ranks: MPI_Alltoallv (linear) not at 12.5e6 x 0.95 / 4 / 4 a socket"; }
echo "ok: divide=auto, 4 + 4 ranks: pairwise MPI_Alltoall 2968750 B/s a socket, linear MPI_Alltoallv 742187"

# 2c. divide=dynamic with a pairwise all-to-all: the socket that sends alone gets the rank's share
out=$(run 2 -x KUMI_PACING_SOCKRATE_TOPOLOGY="$topo" -x KUMI_PACING_SOCKRATE_VERBOSE=2 -x KUMI_COLL_TUNED_ALLTOALL_ALGORITHM=pairwise \
      -x KUMI_PACING_SOCKRATE_DIVIDE=dynamic \
      "${wrap2[@]}" -- "$TESTBIN/wan_a2a" -k a2a -b 1048576 -n 2) || { echo "$out" | tail -30; fail "pairwise all-to-all, divide=dynamic"; }
for r in 0 1 2 3; do
    echo "$out" | grep -Eq "^pacing/sockrate\[$r\]: alltoall: rank [0-9]+ fd [0-9]+ rate 2968750 B/s" ||
        { echo "$out" | grep "sockrate\[$r\]" | head; fail "divide=dynamic, rank $r: not 2968750 B/s at the start of the call"; }
    echo "$out" | grep -Eq "^pacing/sockrate\[$r\]: dynamic: rank [0-9]+ fd [0-9]+ rate 5195312 B/s \(1 of the rank's sockets to cluster [AB] sending\)" ||
        { echo "$out" | grep "sockrate\[$r\]" | head -20; fail "divide=dynamic, pairwise, rank $r: the socket sending alone did not get 5195312 B/s"; }
done
too=$(echo "$out" | grep -E "^pacing/sockrate\[[0-9]\]: dynamic: .* rate [0-9]+ B/s" | awk '{ for (i = 1; i < NF; i++) if ($i == "rate" && $(i + 1) > 5937500) print }')
[ -z "$too" ] || { echo "$too"; fail "divide=dynamic set more than a rank's share on a socket"; }
echo "ok: divide=dynamic: the one socket a pairwise all-to-all sends on gets the rank's share less a done socket's (5195312 B/s)"
out=$(run 2 -x KUMI_PACING_SOCKRATE_TOPOLOGY="$topo" -x KUMI_PACING_SOCKRATE_VERBOSE=2 -x KUMI_PACING_SOCKRATE_DIVIDE=senders \
      "${wrap2[@]}" -- "$TESTBIN/wan_a2a" -k a2a -b 65536 -n 2) || { echo "$out" | tail -30; fail "divide=senders"; }
for o in 2 3; do
    echo "$out" | grep -Eq "^pacing/sockrate\[0\]: (alltoall|opened): rank $o fd [0-9]+ rate 5937500 B/s \(was unlimited\)\$" ||
        { echo "$out" | grep "sockrate\[0\]" | head; fail "divide=senders: rank 0's socket to rank $o not at 5937500 B/s"; }
done
echo "$out" | grep -q "^pacing/sockrate\[[0-9]\]: dynamic:" && fail "divide=senders: rates changed during the call"
echo "ok: divide=senders: every socket across at the rank's share (5937500 B/s), unchanged"

# 2d. the coll component's hint: a forced pairwise all-to-all, coll/lact's aggregated one
out=$(run 2 -x KUMI_PACING_SOCKRATE_TOPOLOGY="$topo" -x KUMI_PACING_SOCKRATE_VERBOSE=1 \
      -x KUMI_COLL_TUNED_ALLTOALL_ALGORITHM=pairwise "${wrap2[@]}" -- "$TESTBIN/wan_a2a" -k mix -b 65536 -n 2) ||
    { echo "$out" | tail -30; fail "pairwise forced, divide=auto"; }
for r in 0 1 2 3; do
    others="2 3"; [ $r -ge 2 ] && others="0 1"
    for o in $others; do
        echo "$out" | grep -Eq "^pacing/sockrate\[$r\]: (alltoall|opened): rank $o fd [0-9]+ rate 5937500 B/s \(was unlimited\)\$" ||
            { echo "$out" | grep "sockrate\[$r\]" | head; fail "pairwise forced at 2 + 2 ranks: rank $r's socket to rank $o not at 5937500 B/s during MPI_Alltoall"; }
        echo "$out" | grep -Eq "^pacing/sockrate\[$r\]: alltoallv: rank $o fd [0-9]+ rate 2968750 B/s \(was unlimited\)\$" ||
            { echo "$out" | grep "sockrate\[$r\]" | head; fail "pairwise forced for MPI_Alltoall only: rank $r's socket to rank $o not at 2968750 B/s during MPI_Alltoallv"; }
    done
done
bad=$(echo "$out" | grep -E '^pacing/sockrate\[[0-9]\]: alltoall: rank [0-9]+ fd [0-9]+ rate ' | grep -v ' rate 5937500 B/s')
[ -z "$bad" ] || { echo "$bad"; fail "pairwise forced: an MPI_Alltoall rate other than 5937500 B/s"; }
echo "ok: coll_tuned_alltoall_algorithm=pairwise at 2 + 2 ranks: MPI_Alltoall 5937500 B/s a socket (coll/tuned's hint), MPI_Alltoallv 2968750"
out=$(run 2 -x KUMI_PACING_SOCKRATE_TOPOLOGY="$topo" -x KUMI_PACING_SOCKRATE_VERBOSE=1 --param coll_lact_ranks_per_host=2 \
      --param coll_lact_hosts_per_cluster=1 --param coll_lact_verbose=1 "${wrap2[@]}" -- "$TESTBIN/wan_a2a" -k a2a -b 65536 -n 2) ||
    { echo "$out" | tail -30; fail "coll/lact, divide=auto"; }
echo "$out" | grep -q '^coll/lact\[0\]: alltoall of 65536 bytes per block: host leaders aggregate' ||
    { echo "$out" | grep '^coll/lact' | head; fail "coll/lact did not aggregate the all-to-all"; }
for r in 0 2; do
    o=$((2 - r))
    echo "$out" | grep -Eq "^pacing/sockrate\[$r\]: (alltoall|opened): rank $o fd [0-9]+ rate 11875000 B/s \(was unlimited\)\$" ||
        { echo "$out" | grep "sockrate\[$r\]" | head; fail "coll/lact: host leader $r's socket to leader $o not at 11875000 B/s"; }
done
bad=$(echo "$out" | grep -E '^pacing/sockrate\[[0-9]\]: (alltoall|opened): rank [0-9]+ fd' | grep -Ev '^pacing/sockrate\[(0|2)\]: (alltoall|opened): rank (2|0) fd [0-9]+ rate 11875000 B/s')
[ -z "$bad" ] || { echo "$bad"; fail "coll/lact: a rate set other than on the host leaders' sockets to each other"; }
echo "ok: coll/lact's aggregated all-to-all: the host leaders' socket 11875000 B/s, the other ranks not paced"

# 3. remote networks and a bandwidth instead of the file; another list of collectives
out=$(run 2 --param pacing_sockrate_remote=$WL_NET_B --param pacing_sockrate_bandwidth=25 \
      --param pacing_sockrate_colls=allgather --param pacing_sockrate_divide=sockets -x KUMI_PACING_SOCKRATE_VERBOSE=1 "${wrap2[@]}" -- \
      "$TESTBIN/wan_a2a" -k mix -b 65536 -n 2) || { echo "$out" | tail -30; fail "paced allgather over the lab"; }
echo "$out" | grep -q "^pacing/sockrate\[1\]: cluster local, 2 of 4" || { echo "$out" | grep sockrate | head; fail "remote networks: rank 1 not local"; }
echo "$out" | grep -q "^pacing/sockrate\[2\]: cluster remote, 2 of 4" || { echo "$out" | grep sockrate | head; fail "remote networks: rank 2 not remote"; }
# 25 MB/s x 0.95 / 2 senders / 2 peers across
echo "$out" | grep -Eq "^pacing/sockrate\[0\]: (allgather|opened): rank 2 fd [0-9]+ rate 5937500 B/s" ||
    { echo "$out" | grep sockrate | head; fail "pacing_sockrate_colls=allgather, 25 MB/s, divide=sockets: not 5937500 B/s on rank 0's socket to rank 2"; }
echo "$out" | grep -Eq 'pacing/sockrate\[[0-9]\]: (alltoall|alltoallv):' && fail "alltoall paced although not listed"
echo "ok: pacing_sockrate_remote / _bandwidth / _colls / _divide"

# 4. drops at the bottleneck, bandwidth-bound all-to-all (5 ms each way)
wanlab_down
wanlab_up 5000 100 || exit $?
trap 'rm -rf "$TMP"; wanlab_down' EXIT
drops() { # extra arguments for mpiexec
    local d0 d1 o
    d0=$(wanlab_drops)
    o=$(run 2 "$@" "${wrap2[@]}" -- "$TESTBIN/wan_a2a" -k a2a -b 1048576 -n 4) || { echo "$o" | tail; return 1; }
    d1=$(wanlab_drops)
    echo "$((d1 - d0)) $(echo "$o" | sed -n 's/^wan_a2a: .*: \([0-9.]*\) s .*/\1/p')"
}
un=$(drops -x KUMI_PACING_SOCKRATE_ENABLE=0) || fail "unpaced bandwidth-bound all-to-all"
pa=$(drops -x KUMI_PACING_SOCKRATE_TOPOLOGY="$topo") ||
    fail "paced bandwidth-bound all-to-all"
set -- $un $pa
echo "bottleneck drops, 4 x 1 MiB all-to-all, 2 x 2 ranks, 5 ms: unpaced $1 (${2}s), paced (divide=auto, the default) $3 (${4}s)"
[ "$3" -le "$1" ] || fail "pacing dropped more packets ($3) than no pacing ($1)"
[ "$1" -lt 50 ] || [ "$3" -lt $(( $1 / 2 + 1 )) ] || fail "pacing did not at least halve the drops ($1 -> $3)"
echo "ok: drop counter read; pacing does not add drops"
exit 0
