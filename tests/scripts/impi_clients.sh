#!/bin/bash
# Clusters as IMPI clients on one machine (issue 19 items 2 and 3): impi_server and two
# `mpiexec -n 2 --impi-client K --impi-server HOST:PORT` runs of tests/mpi/impi_border.
#  1. MPI_COMM_WORLD spans both clients in client order (ranks 0-1 client 0, 2-3 client 1);
#     point-to-point across the border both ways (eager, rendezvous, synchronous, 200
#     tags, any-source with probe, cancel), collectives and a split communicator across
#     it, external32 values bit for bit; p2p/impi serves exactly the other client's ranks,
#     shmem / self the own ones; every client sends FINI (the server exits 0).  Each
#     client is ONE IMPI host holding its procs (its mpiexec is the host's agent).
#  1b. p2p_impi_host_per_rank=1 in client 1 (issue 19 item 3): each of its ranks is an IMPI
#     host of its own (3 hosts in the job), reading and writing its connections itself:
#     mpiexec relays nothing in (KUMI_VERBOSE=2's count), the checks pass as in 1.
#  2. With a key (--impi-auth), client 1 announcing smaller packets and flow-control
#     windows (p2p_impi_datalen / _ackmark / _hiwater: the job takes the minima, as
#     client 0's mpiexec reports) and forcing the two-copy external32 path for bytes too.
#  3. A rank of client 1 killed after the first exchange: both clients end non-zero with
#     a message naming the lost host / the server's close, the server exits 1; no hang.
#  4. A client that never comes (the server's -timeout), a wrong key, a client number the
#     server has no room for, and usage errors: clear messages, no hang.
set -u
SERVER=$top_builddir/tools/impi_server/impi_server
PROG=$TESTBIN/impi_border
[ -x "$SERVER" ] || { echo "FAIL: impi_server not built"; exit 1; }
[ -x "$PROG" ] || { echo "FAIL: $PROG not built"; exit 1; }
dir=$(mktemp -d /tmp/kumi-impic.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
has() { # FILE PATTERN WHAT
    grep -Eq -- "$2" "$1" && return 0
    fail "$3: /$2/ not in $(basename "$1"):"; sed 's/^/    | /' "$1" | tail -25; return 1
}

# start_server NAME ARGS...: in the background; sets hp (host:port) and spid
start_server() {
    local name=$1; shift
    timeout 100 "$SERVER" -portfile "$dir/$name.port" "$@" > "$dir/$name.sout" 2> "$dir/$name.serr" &
    spid=$!; pids+=("$spid")
    for _ in $(seq 1 100); do [ -s "$dir/$name.port" ] && break; sleep 0.05; done
    hp=$(cat "$dir/$name.port" 2>/dev/null)
    [ -n "$hp" ] || { fail "$name: no port file"; cat "$dir/$name.serr"; }
}
# client NAME K ARGS... (mpiexec options, then the program's): in the background, pid in cpid
client() {
    local name=$1 k=$2; shift 2
    timeout 90 "$MPIEXEC" --timeout 80 -n 2 --impi-client "$k" --impi-server "$hp" "$@" \
        > "$dir/$name.c$k.out" 2> "$dir/$name.c$k.err" &
    cpid=$!; pids+=("$cpid")
}

# ---- 1. two clients of two ranks ----
start_server basic -n 2 -timeout 60
KUMI_VERBOSE=1 client basic 0 "$PROG" 4 2; c0=$cpid
KUMI_VERBOSE=1 client basic 1 "$PROG" 4 2; c1=$cpid
wait $c0; r0=$?; wait $c1; r1=$?; wait $spid; rs=$?
if [ "$r0" = 0 ] && [ "$r1" = 0 ] && [ "$rs" = 0 ]; then ok "2 clients x 2 ranks: both exit 0, the server too (every FINI came)"
else fail "2 clients x 2 ranks: exit $r0 / $r1, server $rs"; tail -20 "$dir/basic.c0.err" "$dir/basic.c1.err" "$dir/basic.serr"; fi
for r in 0 1; do has "$dir/basic.c0.out" "^impi_border: rank $r of 4 \(client 0\)" "client 0 runs world rank $r"; done
for r in 2 3; do has "$dir/basic.c1.out" "^impi_border: rank $r of 4 \(client 1\)" "client 1 runs world rank $r"; done
n=$(cat "$dir/basic.c0.out" "$dir/basic.c1.out" | grep -c ': all checks passed$')
[ "$n" = 4 ] && ok "every rank passed its checks (p2p, collectives, split, external32)" || fail "$n of 4 ranks passed"
has "$dir/basic.c0.err" "IMPI client 0 of 2 \(server $hp\): IMPI host 0 of 2 holding ranks 0-1 of 4" \
    "mpiexec reports client 0's place: one IMPI host holding its two procs"
has "$dir/basic.c1.err" "IMPI client 1 of 2 \(server $hp\): IMPI host 1 of 2 holding ranks 2-3 of 4" \
    "client 1 is one IMPI host holding its two procs"
for r in 0 1; do
    has "$dir/basic.c0.err" "kumi\[$r\]: p2p/impi serves ranks 2-3$" "rank $r reaches client 1 through p2p/impi"
    has "$dir/basic.c0.err" "kumi\[$r\]: rank $r -> rank $((1 - r)): (shmem|tcp)" "rank $r keeps its own transport for rank $((1 - r))"
done
for r in 2 3; do has "$dir/basic.c1.err" "kumi\[$r\]: p2p/impi serves ranks 0-1$" "rank $r reaches client 0 through p2p/impi"; done
grep -q 'p2p/impi serves ranks [0-9-]*[^0-9-]' "$dir/basic.c0.err" && fail "p2p/impi serves more than the other client"

# ---- 1b. client 1 with one IMPI host per rank: no relay ----
start_server perrank -n 2 -timeout 60
KUMI_VERBOSE=1 client perrank 0 "$PROG" 4 2; c0=$cpid
KUMI_VERBOSE=2 client perrank 1 --param p2p_impi_host_per_rank=1 "$PROG" 4 2; c1=$cpid
wait $c0; r0=$?; wait $c1; r1=$?; wait $spid; rs=$?
n=$(cat "$dir/perrank.c0.out" "$dir/perrank.c1.out" | grep -c ': all checks passed$')
if [ "$r0" = 0 ] && [ "$r1" = 0 ] && [ "$rs" = 0 ] && [ "$n" = 4 ]; then
    ok "client 1 with one IMPI host per rank: every rank passed its checks, all exit 0"
else fail "host per rank: exit $r0 / $r1, server $rs, $n of 4 passed"; tail -20 "$dir/perrank.c0.err" "$dir/perrank.c1.err"; fi
has "$dir/perrank.c1.err" "IMPI client 1 of 2 \(server $hp\): IMPI hosts 1-\.\.\., one per rank, of 3 holding ranks 2-3 of 4" \
    "client 1 is two IMPI hosts (1 and 2), one per rank" && ok "client 1 is two IMPI hosts, one per rank"
has "$dir/perrank.c0.err" "kumi\[0\]: rank 0 -> rank 3: impi IMPI host 2 of client 1 " "rank 3 is IMPI host 2" &&
    ok "client 0 reaches rank 3 as IMPI host 2"
has "$dir/perrank.c1.err" "kumi\[2\]: rank 2 -> rank 0: impi IMPI host 0 of client 0 .* directly" \
    "rank 2 reads and writes its host's connections itself" && ok "rank 2 reaches client 0 directly"
has "$dir/perrank.c1.err" "IMPI host 1: [0-9]+ packets relayed out, 0 in" "client 1's mpiexec relays nothing in" &&
    ok "client 1's mpiexec relayed nothing in"

# ---- 2. a key; client 1 announces small packets and windows, forces the external32 copy ----
start_server tuned -n 2 -timeout 60 -auth 0x5eed
KUMI_VERBOSE=1 client tuned 0 --impi-auth 0x5eed "$PROG" 4 2; c0=$cpid
client tuned 1 --impi-auth 0x5eed --param p2p_impi_datalen=20000 --param p2p_impi_ackmark=4 \
    --param p2p_impi_hiwater=6 --param p2p_impi_external32_copy=1 "$PROG" 4 2; c1=$cpid
wait $c0; r0=$?; wait $c1; r1=$?; wait $spid; rs=$?
if [ "$r0" = 0 ] && [ "$r1" = 0 ] && [ "$rs" = 0 ]; then ok "keyed job with small packets, windows and the forced external32 copy"
else fail "keyed / small packets: exit $r0 / $r1, server $rs"; tail -20 "$dir/tuned.c0.err" "$dir/tuned.c1.err" "$dir/tuned.serr"; fi
has "$dir/tuned.c0.err" "packets of 20000 bytes, ackmark 4, hiwater 6" "the job uses the minima of both clients' announcements"
n=$(cat "$dir/tuned.c0.out" "$dir/tuned.c1.out" | grep -c ': all checks passed$')
[ "$n" = 4 ] && ok "every rank passed with 20000-byte packets" || fail "$n of 4 ranks passed with small packets"

# ---- 3. a rank of client 1 dies after the first exchange ----
start_server die -n 2 -timeout 60
client die 0 "$PROG" 4 2 die 2; c0=$cpid
client die 1 "$PROG" 4 2 die 2; c1=$cpid
t0=$(date +%s)
wait $c0; r0=$?; wait $c1; r1=$?; wait $spid; rs=$?
t=$(( $(date +%s) - t0 ))
[ "$r0" != 0 ] && [ "$r0" != 124 ] && ok "client 0 ends (exit $r0) when a rank of client 1 dies" || fail "client 0: exit $r0 (124: hung)"
[ "$r1" != 0 ] && [ "$r1" != 124 ] && ok "client 1 ends (exit $r1)" || fail "client 1: exit $r1"
[ "$rs" = 1 ] && ok "the server exits 1" || fail "the server: exit $rs"
[ "$t" -lt 40 ] && ok "within ${t}s" || fail "took ${t}s"
has "$dir/die.c0.err" "IMPI host 1 \(ranks 2-3 of IMPI client 1\): it closed its connection without FINI|IMPI server .* closed the connection" \
    "client 0 says what was lost"
has "$dir/die.c1.err" "rank 0 .* killed by signal 9" "client 1's mpiexec names the killed rank"
has "$dir/die.serr" "client 1 .*closed its connection before FINI|client 0 .*closed its connection before FINI" "the server names a failed client"

# ---- 4. start-up failures and usage errors ----
start_server lone -n 2 -timeout 2
client lone 0 "$PROG" 4 2; c0=$cpid
wait $c0; r0=$?; wait $spid; rs=$?
[ "$r0" != 0 ] && [ "$r0" != 124 ] && ok "a client whose partner never comes fails (exit $r0)" || fail "lone client: exit $r0"
has "$dir/lone.c0.err" "IMPI client 0, server $hp, .*:" "the lone client names the server and the step"
grep -q "impi_border: rank" "$dir/lone.c0.out" && fail "ranks started although the start-up failed"

start_server key -n 1 -timeout 5 -auth 7
client key 0 --impi-auth 8 "$PROG" 2 2; c0=$cpid
wait $c0; r0=$?; wait $spid
[ "$r0" != 0 ] && [ "$r0" != 124 ] && ok "a wrong key fails (exit $r0)" || fail "wrong key: exit $r0"
has "$dir/key.c0.err" "IMPI client 0, server $hp, (AUTH|IMPI)" "the wrong key's failure names the step"

start_server room -n 1 -timeout 5
client room 1 "$PROG" 2 2; c0=$cpid
wait $c0; r0=$?; wait $spid
[ "$r0" != 0 ] && [ "$r0" != 124 ] && ok "client 1 of a 1-client server fails (exit $r0)" || fail "client number out of range: exit $r0"

"$MPIEXEC" -n 2 --impi-client 0 "$PROG" 4 2 > "$dir/u1" 2>&1 && fail "--impi-client without --impi-server accepted"
has "$dir/u1" "--impi-client needs --impi-server HOST:PORT" "usage: --impi-client alone"
"$MPIEXEC" -n 2 --impi-client 32 --impi-server 127.0.0.1:1 "$PROG" > "$dir/u2" 2>&1 && fail "--impi-client 32 accepted"
has "$dir/u2" "expected a client rank from 0 to 31" "usage: client rank out of range"

[ $fails -eq 0 ] && { echo "impi_clients: all passed"; exit 0; }
echo "impi_clients: $fails failure(s)"; exit 1
