#!/bin/bash
# Clusters as IMPI clients in the wide-area lab (tests/scripts/wanlab.sh: two network
# namespaces behind a router with a 100 Mbit/s tbf bottleneck and 2 ms each way): the
# IMPI server in cluster A, `mpiexec -n 2 --impi-client 0` in cluster A and
# `--impi-client 1` in cluster B, tests/mpi/impi_border (point-to-point across the border,
# collectives, split, external32 bit for bit) through the router; each client's hosts
# advertise their cluster's address (the one they reach the server from); each cluster
# is ONE IMPI host holding its two procs (mpiexec the agent: one connection across the
# router carries both ranks' packets), shmem stays inside each cluster.
# Pacing on the shared host connections (issue 19 item 2): during MPI_Alltoall(v) over the
# IMPI clients, the one connection from each cluster to the other carries both of its ranks'
# packets, so it is paced at the link x 0.95 x 2 (its senders) / 2 (the cluster's senders)
# = 11875000 B/s, set and restored by the launch's lowest rank only (0 in A, 2 in B), back
# to unlimited after the call by the last of the launch's ranks out of it; the other rank sets no
# rate.  (Before: p2p/impi gave
# pacing/sockrate no sockets, so nothing was paced.)
# Then a rank of cluster B dies: both clusters' jobs and the server end, no hang.
set -u
. "$top_srcdir/tests/scripts/wanlab.sh"
SERVER=$top_builddir/tools/impi_server/impi_server
PROG=$TESTBIN/impi_border
[ -x "$SERVER" ] && [ -x "$PROG" ] || { echo "FAIL: impi_server or impi_border not built"; exit 1; }
TMP=$(mktemp -d /tmp/kumi-impiw.XXXXXX)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
trap 'rm -rf "$TMP"; wanlab_down' EXIT
wanlab_up 2000 100 || exit $?
trap 'rm -rf "$TMP"; wanlab_down' EXIT
A=${WL_NS_A##*/} B=${WL_NS_B##*/}

# run NAME PROGRAM-ARGS...: the server in A, client 0 in A, client 1 in B; sets r0 r1 rs
run() {
    local name=$1; shift
    rm -f "$TMP/$name.port"
    ip netns exec "$A" timeout 150 "$SERVER" -n 2 -host "$WL_ADDR_A" -portfile "$TMP/$name.port" -timeout 60 \
        > /dev/null 2> "$TMP/$name.serr" &
    local sp=$!
    for _ in $(seq 1 100); do [ -s "$TMP/$name.port" ] && break; sleep 0.05; done
    local hp; hp=$(cat "$TMP/$name.port")
    KUMI_VERBOSE=1 ip netns exec "$A" timeout 140 "$MPIEXEC" --timeout 130 -n 2 --impi-client 0 --impi-server "$hp" \
        "$PROG" "$@" > "$TMP/$name.a.out" 2> "$TMP/$name.a.err" &
    local pa=$!
    KUMI_VERBOSE=1 ip netns exec "$B" timeout 140 "$MPIEXEC" --timeout 130 -n 2 --impi-client 1 --impi-server "$hp" \
        "$PROG" "$@" > "$TMP/$name.b.out" 2> "$TMP/$name.b.err" &
    local pb=$!
    wait $pa; r0=$?; wait $pb; r1=$?; wait $sp; rs=$?
}

t0=$(date +%s)
run border 4 2
t=$(( $(date +%s) - t0 ))
if [ $r0 = 0 ] && [ $r1 = 0 ] && [ $rs = 0 ]; then ok "2 x 2 ranks across the router in ${t}s: both clusters and the server exit 0"
else fail "2 x 2 ranks across the router: A $r0, B $r1, server $rs"; tail -15 "$TMP/border.a.err" "$TMP/border.b.err" "$TMP/border.serr"; fi
n=$(cat "$TMP/border.a.out" "$TMP/border.b.out" | grep -c ': all checks passed$')
[ "$n" = 4 ] && ok "every rank passed its checks" || fail "$n of 4 ranks passed"
grep -Eq "kumi\[0\]: rank 0 -> rank 2: impi IMPI host 1 of client 1 \($WL_ADDR_B:[0-9]+\)" "$TMP/border.a.err" &&
    ok "cluster A reaches cluster B's ranks at B's address through p2p/impi" ||
    { fail "rank 0 does not reach rank 2 at $WL_ADDR_B through p2p/impi"; grep -- '-> rank' "$TMP/border.a.err"; }
grep -Eq "kumi\[3\]: rank 3 -> rank 1: impi IMPI host 0 of client 0 \($WL_ADDR_A:[0-9]+\)" "$TMP/border.b.err" &&
    ok "cluster B reaches cluster A's ranks at A's address" || fail "rank 3 does not reach rank 1 at $WL_ADDR_A"
grep -Eq "kumi\[2\]: rank 2 -> rank 3: shmem" "$TMP/border.b.err" && ok "inside cluster B the ranks keep shmem" ||
    fail "rank 2 does not reach rank 3 through shmem"
grep -Eq "IMPI client 0 of 2 .*: IMPI host 0 of 2 holding ranks 0-1 of 4" "$TMP/border.a.err" &&
    grep -Eq "IMPI client 1 of 2 .*: IMPI host 1 of 2 holding ranks 2-3 of 4" "$TMP/border.b.err" &&
    ok "each cluster is one IMPI host holding its two procs" || fail "the clusters' IMPI hosts"
echo "bottleneck drops: $(wanlab_drops)"

# pacing on the shared host connections
printf 'cluster A %s\ncluster B %s\nlink A B 2000 12.5\n' "$WL_NET_A" "$WL_NET_B" > "$TMP/topo"
KUMI_PACING_SOCKRATE_TOPOLOGY=$TMP/topo KUMI_PACING_SOCKRATE_VERBOSE=1 PROG=$TESTBIN/wan_a2a run pace -k mix -b 65536 -n 3
if [ $r0 = 0 ] && [ $r1 = 0 ] && [ $rs = 0 ] && grep -q '^wan_a2a: mix 4 ranks' "$TMP/pace.a.out"; then
    ok "paced all-to-all over the IMPI clients: right results, both clusters and the server exit 0"
else fail "paced all-to-all over the IMPI clients: A $r0, B $r1, server $rs"; tail -15 "$TMP/pace.a.err" "$TMP/pace.b.err"; fi
for rc in "0 A 2 3 1" "2 B 0 1 3"; do
    set -- $rc   # the launch's lead rank, its cluster, the other cluster's ranks, its other rank
    f=$TMP/pace.$(echo "$2" | tr AB ab).err
    grep -q "^pacing/sockrate\[$1\]: cluster $2, 2 of 4 ranks in other clusters" "$f" &&
        ok "rank $1 is in cluster $2 and sees the other cluster's 2 ranks through p2p/impi's host address" ||
        { fail "rank $1: not in cluster $2 with 2 remote ranks"; grep sockrate "$f" | head -5; }
    grep -Eq "^pacing/sockrate\[$1\]: (alltoall|alltoallv): rank ($3|$4) fd [0-9]+ rate 11875000 B/s \(was unlimited\) shared by the launch's ranks\$" "$f" &&
        ok "rank $1 paces cluster $2's shared connection at 11875000 B/s (link x 0.95 x 2 / 2)" ||
        { fail "rank $1 did not pace the shared connection at 11875000 B/s"; grep "sockrate\[$1\]" "$f" | head -8; }
    # the last of the launch's ranks out of the call (its queue drained) restores it
    grep -Eq "^pacing/sockrate\[($1|$5)\]: restored rank ($3|$4) fd [0-9]+ rate unlimited" "$f" &&
        ok "the launch restores it to unlimited" || { fail "the shared connection was not restored"; grep "sockrate" "$f" | head -8; }
    grep -Eq "^pacing/sockrate\[$5\]: [a-z]+: rank" "$f" &&
        { fail "rank $5 (not the launch's lowest) set a rate"; grep "sockrate\[$5\]" "$f" | head -5; } ||
        ok "rank $5 sets no rate on the shared connection"
    # once per call, not once per peer behind it: every set names the first of the two peers
    n=$(grep -Ec "^pacing/sockrate\[$1\]: [a-z]+: rank $3 " "$f")
    grep -Eq "^pacing/sockrate\[$1\]: [a-z]+: rank $4 " "$f" &&
        fail "rank $1 set the shared connection's rate again for its second peer" ||
        ok "rank $1 sets the shared connection's rate once per paced call ($n calls)"
done

# Two communicators' paced calls on the same shared connection (X = {0, 2}, Y = {1, 3}: rank 1
# sets and ends Y's pacing while rank 0 is still inside X's call; tests/mpi/wan_pace_race.c):
# the connection stays paced until X's call is over too, then goes back to unlimited.  Before
# (the launch's lowest rank of each communicator restored when its own call was over): rank 1
# restored it to unlimited in the middle of X's call.
KUMI_PACING_SOCKRATE_TOPOLOGY=$TMP/topo KUMI_PACING_SOCKRATE_VERBOSE=1 PROG=$TESTBIN/wan_pace_race run race 11875000
cat "$TMP/race.a.out" | sed 's/^/  /'
if [ $r0 = 0 ] && [ $r1 = 0 ] && [ $rs = 0 ] && grep -q '^wan_pace_race: both checks passed' "$TMP/race.a.out"; then
    ok "a communicator's paced call that ends leaves the rate another's call set until that one ends too"
else fail "two communicators' paced calls on one shared connection: A $r0, B $r1, server $rs"; grep sockrate "$TMP/race.a.err" | head -12; fi
grep -Eq "^pacing/sockrate\[1\]: rank [23] fd [0-9]+ stays paced: 1 other paced call of the launch on it" "$TMP/race.a.err" &&
    ok "rank 1 leaves the connection paced for rank 0's call" || { fail "rank 1 did not say it left the rate"; grep sockrate "$TMP/race.a.err" | head -12; }

run die 4 2 die 3
[ $r0 != 0 ] && [ $r0 != 124 ] && [ $r1 != 0 ] && [ $r1 != 124 ] && [ $rs = 1 ] &&
    ok "a rank of cluster B dies: A exits $r0, B $r1, the server 1" || fail "a dying rank: A $r0, B $r1, server $rs"
grep -Eq "IMPI host 1 \(ranks 2-3 of IMPI client 1\): it closed its connection without FINI|IMPI server .* closed the connection" \
    "$TMP/die.a.err" && ok "cluster A says what it lost" || { fail "cluster A's message"; tail -5 "$TMP/die.a.err"; }

[ $fails -eq 0 ] && { echo "impi_wan: all passed"; exit 0; }
echo "impi_wan: $fails failure(s)"; exit 1
