#!/bin/bash
# p2p/impi against a made-up foreign IMPI implementation (tools/impi_server/impi_testhost,
# written from the fact sheet: one host of one proc) as client 1, Kumi (mpiexec -n 1
# --impi-client 0, tests/mpi/impi_foreign) as client 0: the connection dance, every packet
# header big-endian with the sheet's field values, user data in external32 byte for byte
# (MPI_INT, MPI_DOUBLE, MPI_SHORT), a synchronous send answered by SYNCACK, long messages
# both ways (DATASYNC first packet, SYNCACK with the receiver's drqid, DATA packets), a
# CANCEL of an unknown message answered CANCELNO, PROTOACKs every ackmark packets with
# never more than hiwater unacknowledged (the foreign host announces 2 / 4 and packets of
# 1000 bytes: the job takes the minima), FINI both ways, FINI of both clients to the server.
# With Kumi's client of 2 ranks: it is ONE IMPI host holding both procs (C_NHOSTS 1,
# H_NPROCS 2: the foreign host checks the labels), the dance makes one connection and
# rank 1's packets come on it too (pk_src, flow control per proc pair); MPI_TAG_UB in
# Kumi's ranks is the job's IMPI_Tag_ub (the foreign host's 32767), tag 32768 refused.
set -u
SERVER=$top_builddir/tools/impi_server/impi_server
HOST=$top_builddir/tools/impi_server/impi_testhost
PROG=$TESTBIN/impi_foreign
for f in "$SERVER" "$HOST" "$PROG"; do [ -x "$f" ] || { echo "FAIL: $f not built"; exit 1; }; done
dir=$(mktemp -d /tmp/kumi-impif.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

for run in "1000 1" "4096 1" "1000 2" "4096 2"; do
    set -- $run; datalen=$1 np=$2
    rm -f "$dir/port"
    timeout 60 "$SERVER" -n 2 -portfile "$dir/port" -timeout 30 > /dev/null 2> "$dir/s.err" &
    spid=$!; pids+=("$spid")
    for _ in $(seq 1 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
    hp=$(cat "$dir/port")
    timeout 60 "$MPIEXEC" --timeout 50 -n $np --impi-client 0 --impi-server "$hp" "$PROG" "$datalen" \
        > "$dir/k.out" 2> "$dir/k.err" &
    kpid=$!; pids+=("$kpid")
    timeout 60 "$HOST" -server "$hp" -rank 1 -datalen "$datalen" -kumi-procs $np -timeout 30 > "$dir/h.out" 2> "$dir/h.err"; rh=$?
    wait $kpid; rk=$?; wait $spid; rs=$?
    if [ $rh = 0 ] && [ $rk = 0 ] && [ $rs = 0 ]; then
        ok "$np Kumi ranks, packets of $datalen bytes: the foreign host, Kumi and the server exit 0"
    else
        fail "$np Kumi ranks, packets of $datalen bytes: foreign host $rh, Kumi $rk, server $rs"
        sed 's/^/    | /' "$dir/h.out" "$dir/h.err" "$dir/k.out" "$dir/k.err" "$dir/s.err" | tail -20
    fi
    grep -q "^impi_testhost: all checks passed" "$dir/h.out" && ok "the foreign host read every packet as the sheet says" ||
        fail "the foreign host's checks: $(cat "$dir/h.err")"
    [ $np = 1 ] || { grep -q "^impi_foreign: rank 1: all checks passed" "$dir/k.out" &&
        ok "rank 1 reached the foreign proc through the same IMPI host" || fail "rank 1's checks: $(tail -3 "$dir/k.err")"; }
    grep -q "^impi_foreign: rank 0: all checks passed" "$dir/k.out" && ok "Kumi read the foreign host's external32 data" ||
        fail "Kumi's checks: $(tail -3 "$dir/k.err")"
done
[ $fails -eq 0 ] && { echo "impi_foreign: all passed"; exit 0; }
echo "impi_foreign: $fails failure(s)"; exit 1
