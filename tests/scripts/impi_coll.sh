#!/bin/bash
# The IMPI collectives (issue 19 item 4, components/coll/impi): jobs of several IMPI clients
# (impi_server + one `mpiexec -n K --impi-client C` per client) run tests/mpi/impi_coll:
# Barrier, Bcast, Reduce (commutative and not), Allreduce, Gather(v), Scatter(v),
# Allgather(v), Alltoall(v), Reduce_scatter(_block), Scan with every root, on
# MPI_COMM_WORLD, on a communicator whose order interleaves the clients, and on halves of
# world (one inside one client: not coll/impi's), a vector type with gaps against plain
# ints, every value checked.
#  1. 2 clients of 3 and 2 ranks, long messages (20000 ints: rendezvous over IMPI);
#     coll/impi serves exactly the communicators spanning both clients.
#  2. 3 clients of 1, 3 and 2 ranks: linear global phase (3 masters <= MAXLINEAR 4).
#  3. the same with coll_impi_maxlinear=1 in every client: the binomial trees; packets of
#     1000 bytes (300 ints go by rendezvous) and the forced two-copy external32 path.
#  4. 5 clients (2, 1, 1, 2, 1 ranks): more masters than MAXLINEAR: the trees by default.
#  7. the binomial trees on the wire: 5 clients, impi_testcoll as client 3 (master 3 of 5)
#     checks whom it hears from (its parent M1 in barrier and bcast; M4, M0 and M2 in a
#     reduce to it) and the partial sums each master sends it.
#  6. make check's collective tests (coll_all, coll_userop, coll_derived, coll_wide,
#     conf_coll_mismatch: every datatype family, user ops, counts that disagree) across
#     clients of uneven sizes.
#  5. the wire: a made-up foreign IMPI implementation (tools/impi_server/impi_testcoll,
#     one proc, client 1) against Kumi's 3 ranks (client 0) checks every collective
#     packet Kumi sends it (pk_cid 1, IMPI's tags, source, external32 bytes) by the
#     IMPI algorithms and plays its part in them; Kumi checks what it sent.
#  8. communicators by IMPI's context-id rule: the foreign proc (client 1) and Kumi's 3 ranks
#     make a dup, a split, a Comm_create and a second dup of world, free the first three,
#     and the foreign proc checks the pk_cid (2, 4, 6, 8; collectives + 1) of the
#     point-to-point and collective packets on them, the context-id Allreduce and the
#     split's triples, and the barriers of MPI_Comm_free.
#  9. one rank per client, each launch under taskset on one CPU with --bind-to none: the rank
#     spins as a bound one (KUMI_VERBOSE=2's progress line), not as an oversubscribed one.
# 10. coll/lact with coll/impi left out: its clusters are the IMPI clients (client0, client1;
#     the other client's ranks on hosts named by IMPI's host numbering), every value checked;
#     with coll_lact_impi_clusters=0 its rules apply (one cluster: not used).
set -u
SERVER=$top_builddir/tools/impi_server/impi_server
TESTCOLL=$top_builddir/tools/impi_server/impi_testcoll
PROG=$TESTBIN/impi_coll
FPROG=$TESTBIN/impi_coll_foreign
for f in "$SERVER" "$TESTCOLL" "$PROG" "$FPROG"; do [ -x "$f" ] || { echo "FAIL: $f not built"; exit 1; }; done
dir=$(mktemp -d /tmp/kumi-impicoll.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
has() { # FILE PATTERN WHAT
    grep -Eq -- "$2" "$1" && { ok "$3"; return 0; }
    fail "$3: /$2/ not in $(basename "$1"):"; sed 's/^/    | /' "$1" | tail -25; return 1
}

# job NAME "N0 N1 ..." EXTRA-MPIEXEC-ARGS -- PROG ARGS: one client per count; waits; sets rcs
job() {
    local name=$1 counts=$2; shift 2
    local extra=()
    while [ "$1" != -- ]; do extra+=("$1"); shift; done; shift
    local nc; nc=$(echo $counts | wc -w)
    rm -f "$dir/$name.port"
    timeout 200 "$SERVER" -n "$nc" -portfile "$dir/$name.port" -timeout 60 > /dev/null 2> "$dir/$name.serr" &
    local spid=$!; pids+=("$spid")
    for _ in $(seq 1 100); do [ -s "$dir/$name.port" ] && break; sleep 0.05; done
    local hp; hp=$(cat "$dir/$name.port" 2>/dev/null)
    [ -n "$hp" ] || { fail "$name: the server wrote no port"; return; }
    local k=0 cp=()
    for c in $counts; do
        timeout 190 "$MPIEXEC" --timeout 180 -n "$c" --impi-client $k --impi-server "$hp" \
            --param coll_impi_verbose=1 "${extra[@]}" "$@" > "$dir/$name.c$k.out" 2> "$dir/$name.c$k.err" &
        cp+=($!); pids+=($!); k=$((k + 1))
    done
    rcs=""
    for p in "${cp[@]}"; do wait "$p"; rcs="$rcs $?"; done
    wait "$spid"; rcs="$rcs server $?"
}
# passed NAME SIZE: every rank printed its line, every exit 0
passed() {
    local n; n=$(cat "$dir/$1".c*.out | grep -c ': all checks passed$')
    if [ "$n" = "$2" ] && ! echo "$rcs" | grep -Eq '[1-9]'; then ok "$1: all $2 ranks checked every value (exits:$rcs)"
    else fail "$1: $n of $2 ranks passed (exits:$rcs)"; tail -n 15 "$dir/$1".c*.err "$dir/$1".c*.out | grep -v '^$' | head -60; fi
}

# ---- 0. the parameters, in kumi_info ----
"$KUMI_INFO" --param coll impi > "$dir/info" 2>&1
for p in coll_impi_priority coll_impi_maxlinear coll_impi_verbose; do
    has "$dir/info" "parameter \"$p\"" "kumi_info shows $p"
done
has "$dir/info" 'parameter "coll_impi_priority" \(current value: "60"' "coll/impi's priority 60 is above coll/lact's and coll/tuned's"

# ---- 1. two clients of 3 and 2 ranks, long messages ----
job two "3 2" -- "$PROG" 5 20000
passed two 5
has "$dir/two.c0.err" "coll/impi\[0\]: a communicator of 5 ranks over 2 IMPI clients; masters 0 \(client 0, 3 ranks\), 3 \(client 1, 2 ranks\); global phase linear" \
    "coll/impi serves MPI_COMM_WORLD over 2 clients (masters 0 and 3)"
n=$(cat "$dir"/two.c*.err | grep -c 'coll/impi\[[0-9]*\]: a communicator of 5 ranks over 2')
[ "$n" = 2 ] && ok "and the interleaved communicator of 5 ranks" || fail "$n communicators of 5 ranks served, expected 2 (world, mixed)"
has "$dir/two.c0.err" "coll/impi\[2\]: a communicator of 3 ranks over 2 IMPI clients; masters 0 \(client 0, 1 ranks\), 1 \(client 1, 2 ranks\)" \
    "the half {2, 3, 4} spans both clients: coll/impi (its rank 0 is world rank 2)"
grep -q 'a communicator of 2 ranks' "$dir"/two.c*.err && fail "coll/impi took the half {0, 1}, which lies in client 0"

# ---- 2. three clients of 1, 3, 2 ranks ----
job three "1 3 2" -- "$PROG" 6 300
passed three 6
has "$dir/three.c0.err" "a communicator of 6 ranks over 3 IMPI clients; masters 0 \(client 0, 1 ranks\), 1 \(client 1, 3 ranks\), 4 \(client 2, 2 ranks\); global phase linear" \
    "3 clients: masters 0, 1, 4; linear"

# ---- 3. the trees: coll_impi_maxlinear=1 in every client ----
job tree "1 3 2" --param coll_impi_maxlinear=1 --param p2p_impi_datalen=1000 --param p2p_impi_external32_copy=1 -- "$PROG" 6 300
passed tree 6
has "$dir/tree.c0.err" "a communicator of 6 ranks over 3 IMPI clients; .*; global phase binomial tree" "3 clients with MAXLINEAR 1: trees"

# ---- 4. five clients: more masters than the default MAXLINEAR (4) ----
job five "2 1 1 2 1" -- "$PROG" 7 50
passed five 7
has "$dir/five.c0.err" "a communicator of 7 ranks over 5 IMPI clients; masters 0 \(client 0, 2 ranks\), 2 \(client 1, 1 ranks\), 3 \(client 2, 1 ranks\), 4 \(client 3, 2 ranks\), 6 \(client 4, 1 ranks\); global phase binomial tree" \
    "5 clients: masters 0, 2, 3, 4, 6; trees by default"

# ---- 6. make check's collective tests across the clients (coll/impi serves world) ----
for t in "2 1 2:coll_all" "3 2:coll_userop" "1 3:coll_derived" "3 2:coll_wide" "1 3:conf_coll_mismatch"; do
    counts=${t%%:*}; prog=${t#*:}
    job "g_$prog" "$counts" -- "$TESTBIN/$prog"
    if ! echo "$rcs" | grep -Eq '[1-9]' && grep -q 'coll/impi\[0\]: a communicator of' "$dir/g_$prog.c0.err"; then
        ok "$prog over IMPI clients of $counts ranks, coll/impi on MPI_COMM_WORLD"
    else
        fail "$prog over IMPI clients of $counts ranks (exits:$rcs)"; tail -n 8 "$dir/g_$prog".c*.err "$dir/g_$prog".c*.out
    fi
done

# ---- 5. the bytes on the wire, against a foreign IMPI implementation ----
rm -f "$dir/f.port"
timeout 100 "$SERVER" -n 2 -portfile "$dir/f.port" -timeout 60 > /dev/null 2> "$dir/f.serr" &
spid=$!; pids+=("$spid")
for _ in $(seq 1 100); do [ -s "$dir/f.port" ] && break; sleep 0.05; done
hp=$(cat "$dir/f.port")
timeout 90 "$MPIEXEC" --timeout 80 -n 3 --impi-client 0 --impi-server "$hp" "$FPROG" > "$dir/f.k.out" 2> "$dir/f.k.err" &
kpid=$!; pids+=("$kpid")
timeout 90 "$TESTCOLL" -server "$hp" -rank 1 -n 3 -timeout 60 > "$dir/f.h.out" 2> "$dir/f.h.err"; rh=$?
wait $kpid; rk=$?; wait $spid; rs=$?
if [ $rh = 0 ] && [ $rk = 0 ] && [ $rs = 0 ]; then ok "foreign collectives: the foreign proc, Kumi and the server exit 0"
else fail "foreign collectives: foreign proc $rh, Kumi $rk, server $rs"
    sed 's/^/    | /' "$dir/f.h.out" "$dir/f.h.err" "$dir/f.k.out" "$dir/f.k.err" "$dir/f.serr" | tail -30; fi
has "$dir/f.h.out" "^impi_testcoll: all checks passed" "the foreign proc read every collective packet as the IMPI algorithms say"
for w in "MPI_Barrier: rank 0 -> 3, cid 1, tag 110" "MPI_Bcast from root 1 \(not a master\): rank 1 -> 3, cid 1, tag 120" \
         "client 0's partial sum from its master: rank 0 -> 3, cid 1, tag 190, 2 ints" \
         "MPI_Reduce \(non-commutative\) to root F: rank 1 -> 3" "MPI_Gather to root F: client 0's blocks in one message: rank 0 -> 3, cid 1, tag 130, 3 ints" \
         "MPI_Scan: the prefix from rank N-1: rank 2 -> 3, cid 1, tag 200"; do
    has "$dir/f.h.out" "ok: .*$w" "wire: $w"
done
n=$(grep -c ': all checks passed$' "$dir/f.k.out")
[ "$n" = 3 ] && ok "Kumi's 3 ranks read the foreign proc's contributions right" || fail "$n of 3 Kumi ranks passed"

# ---- 7. the trees on the wire: 5 clients, the foreign proc is client 3 (master 3 of 5) ----
rm -f "$dir/t.port"
timeout 100 "$SERVER" -n 5 -portfile "$dir/t.port" -timeout 60 > /dev/null 2> "$dir/t.serr" &
spid=$!; pids+=("$spid")
for _ in $(seq 1 100); do [ -s "$dir/t.port" ] && break; sleep 0.05; done
hp=$(cat "$dir/t.port")
kp=()
for kc in 0:2 1:1 2:2 4:1; do
    timeout 90 "$MPIEXEC" --timeout 80 -n "${kc#*:}" --impi-client "${kc%%:*}" --impi-server "$hp" "$FPROG" tree 5 \
        > "$dir/t.k${kc%%:*}.out" 2> "$dir/t.k${kc%%:*}.err" &
    kp+=($!); pids+=($!)
done
timeout 90 "$TESTCOLL" -server "$hp" -rank 3 -tree 1 -timeout 60 > "$dir/t.h.out" 2> "$dir/t.h.err"; rh=$?
rk=""; for p in "${kp[@]}"; do wait "$p"; rk="$rk $?"; done
wait $spid; rs=$?
if [ $rh = 0 ] && ! echo "$rk" | grep -q '[1-9]' && [ $rs = 0 ]; then ok "trees: the foreign proc, Kumi's 4 clients and the server exit 0"
else fail "trees: foreign proc $rh, Kumi$rk, server $rs"
    sed 's/^/    | /' "$dir/t.h.out" "$dir/t.h.err" "$dir"/t.k*.err "$dir/t.serr" | tail -30; fi
has "$dir/t.h.out" "^impi_testcoll: all checks passed" "the foreign master 3 of 5 read every packet of the binomial trees"
for w in "MPI_Barrier \(tree\): from my parent M1: rank 2 -> 5, cid 1, tag 110" \
         "MPI_Bcast root 0 \(tree\): from my parent M1: rank 2 -> 5, cid 1, tag 120, 3 ints" \
         "MPI_Reduce root F \(tree\): clients 0 and 1 from M0: rank 0 -> 5, cid 1, tag 190" \
         "MPI_Reduce root F \(tree\): client 2's sum from M2: rank 3 -> 5, cid 1, tag 190"; do
    has "$dir/t.h.out" "ok: $w" "wire: $w"
done
n=$(cat "$dir"/t.k*.out | grep -c ': all checks passed$')
[ "$n" = 6 ] && ok "Kumi's 6 ranks in 4 clients got the foreign proc's broadcast and the sums" || fail "$n of 6 Kumi ranks passed the tree script"

# ---- 8. communicators by IMPI's context-id rule, on the wire (sheet §5.2-§5.7) ----
rm -f "$dir/m.port"
timeout 100 "$SERVER" -n 2 -portfile "$dir/m.port" -timeout 60 > /dev/null 2> "$dir/m.serr" &
spid=$!; pids+=("$spid")
for _ in $(seq 1 100); do [ -s "$dir/m.port" ] && break; sleep 0.05; done
hp=$(cat "$dir/m.port")
timeout 90 "$MPIEXEC" --timeout 80 -n 3 --impi-client 0 --impi-server "$hp" "$FPROG" comms > "$dir/m.k.out" 2> "$dir/m.k.err" &
kpid=$!; pids+=("$kpid")
timeout 90 "$TESTCOLL" -server "$hp" -rank 1 -comms 1 -timeout 60 > "$dir/m.h.out" 2> "$dir/m.h.err"; rh=$?
wait $kpid; rk=$?; wait $spid; rs=$?
if [ $rh = 0 ] && [ $rk = 0 ] && [ $rs = 0 ]; then ok "communicators: the foreign proc, Kumi and the server exit 0"
else fail "communicators: foreign proc $rh, Kumi $rk, server $rs"
    sed 's/^/    | /' "$dir/m.h.out" "$dir/m.h.err" "$dir/m.k.out" "$dir/m.k.err" "$dir/m.serr" | tail -30; fi
has "$dir/m.h.out" "^impi_testcoll: all checks passed" "the foreign proc agreed on every communicator's pk_cid"
for w in "MPI_Comm_dup: the context-id Allreduce's result \(IMPI_UINT8 1\) from rank 0: rank 0 -> 3, cid 1, tag 120" \
         "MPI_Send on the dup: rank 0 -> 3, cid 2, tag 7, lsrank 0" "MPI_Barrier on the dup: rank 0 -> 3, cid 3, tag 110" \
         "the \(colour, key, rank\) triples of every rank: rank 0 -> 3, cid 1, tag 120, lsrank 0, 48 bytes" \
         "MPI_Send on the split's colour 1: rank 1 -> 3, cid 4, tag 9, lsrank 1" \
         "MPI_Barrier on the created communicator: rank 1 -> 3, cid 7, tag 110" \
         "MPI_Comm_free of the split: its barrier: rank 1 -> 3, cid 5, tag 110" \
         "MPI_Send on the second dup: rank 2 -> 3, cid 8, tag 11, lsrank 2"; do
    has "$dir/m.h.out" "ok: .*$w" "wire: $w"
done
n=$(grep -c ': all checks passed$' "$dir/m.k.out")
[ "$n" = 3 ] && ok "Kumi's 3 ranks got the foreign proc's messages on the dup, the split and the created communicator" \
    || fail "$n of 3 Kumi ranks passed the communicator script"

# ---- 9. a launch of one rank kept on one CPU by taskset, --bind-to none (the impi bench's set-up) ----
# Its MPI_COMM_WORLD holds the other client's rank too; counting that one made the rank
# "oversubscribed" (yield at every poll, then sleep): with another process busy on its CPU
# each 8 B message took milliseconds through IMPI.  Now it spins as a bound rank does.
if [ "$(nproc)" -ge 2 ] && command -v taskset > /dev/null; then
    rm -f "$dir/p.port"
    timeout 100 "$SERVER" -n 2 -portfile "$dir/p.port" -timeout 60 > /dev/null 2> "$dir/p.serr" &
    spid=$!; pids+=("$spid")
    for _ in $(seq 1 100); do [ -s "$dir/p.port" ] && break; sleep 0.05; done
    hp=$(cat "$dir/p.port")
    kp=()
    for k in 0 1; do
        taskset -c $k timeout 90 "$MPIEXEC" --timeout 80 --bind-to none -n 1 --impi-client $k --impi-server "$hp" \
            -x KUMI_VERBOSE=2 "$TESTBIN/coll_all" > "$dir/p.c$k.out" 2> "$dir/p.c$k.err" &
        kp+=($!); pids+=($!)
    done
    rk=""; for p in "${kp[@]}"; do wait "$p"; rk="$rk $?"; done
    wait $spid
    echo "$rk" | grep -q '[1-9]' && { fail "pinned launches: exits$rk"; grep -hv "^kumi\[" "$dir"/p.c*.err | tail -n 5; }
    for k in 0 1; do
        has "$dir/p.c$k.err" "progress: kept on fewer CPUs than the machine's, one per rank of its launch: spin 300 rounds and 2000 us idle" \
            "client $k's one rank under taskset -c $k spins as a bound one (its world holds the other client's rank too)"
    done
fi

# ---- 10. coll/lact's clusters are the IMPI clients ----
job lact "3 2" -x MPI_COMPONENTS=coll=^impi --param coll_lact_verbose=1 -- "$PROG" 5 300
passed lact 5
has "$dir/lact.c0.err" "coll/lact\[0\]: 5 ranks, 2 levels \(node wan\), 2 hosts, 2 clusters: client0\{[^ :]+:0,1,2\} client1\{client1-host[0-9]+:3,4\}" \
    "coll/lact on world, seen from client 0: clusters client0 {0,1,2} and client1 {3,4}"
has "$dir/lact.c1.err" "coll/lact\[[34]\]: allreduce of [0-9]+ elements: node, wan" \
    "client 1's ranks run coll/lact's levels too (node, then wan)"
job lactoff "3 2" -x MPI_COMPONENTS=coll=^impi --param coll_lact_verbose=1 --param coll_lact_impi_clusters=0 -- "$PROG" 5 300
passed lactoff 5
grep -q '2 clusters' "$dir"/lactoff.c*.err && fail "coll_lact_impi_clusters=0: coll/lact still made 2 clusters" \
    || ok "coll_lact_impi_clusters=0: no clusters from the IMPI clients"

[ $fails -eq 0 ] && { echo "impi_coll: all passed"; exit 0; }
echo "impi_coll: $fails failure(s)"; exit 1
