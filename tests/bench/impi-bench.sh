#!/bin/bash
# IMPI vs Kumi's native tcp across the wide-area lab (issue 19 "Done when": the IMPI
# path within 10 % of the native tcp path for large messages on the same link): the
# "impi" configuration of run-bench.sh (which runs this script; it can also run alone,
# as root where network namespaces can be made).
#
# The lab (tests/scripts/wanlab.sh): two clusters as network namespaces behind a router
# with a 100 Mbit/s tbf bottleneck and a one-way delay of 0, 5 and 10 ms.  One rank in
# each cluster, tests/bench/mpibench (ping-pong latency, uni-directional bandwidth):
#   tcp   one mpiexec -n 2, rank 0 in cluster A, rank 1 in B (netns_rank.py),
#         p2p=self,shmem,tcp: Kumi's own path across the router;
#   impi  the IMPI server in A, `mpiexec -n 1 --impi-client 0` in A and
#         `--impi-client 1` in B: p2p/impi over the one connection between the two IMPI
#         hosts (a host of one proc: the rank reads and writes it itself; with more procs
#         the host's mpiexec relays what comes in), external32, IMPI flow control.
#         The two launches share this machine: each runs on its own core (taskset -c 0 /
#         1, --bind-to none inside), as on two machines; else each would bind its rank 0
#         to core 0 (two spinning ranks on one core: milliseconds a message).
# and "relayed": client 1 of two ranks (rank 1, measured, is behind a host of two procs,
# whose mpiexec relays what comes in; the ranks write to the connection themselves);
# "per-rank": client 1 of two ranks with p2p_impi_host_per_rank=1 (each rank an IMPI host
# of its own, reading its connections itself: no relay hop).
# Sizes: latency at 8 bytes, bandwidth at 64 KiB and 4 MiB.  Ratios impi / tcp
# (bandwidth: >= 0.90 is the target at 4 MiB; latency: the extra time of the relay).
#
# Env: top_srcdir, top_builddir, KUMI_BENCH_OUT, KUMI_BENCH_REPS (3), KUMI_BENCH_QUICK=1
#      (delays 0 and 10 ms), KUMI_BENCH_IMPI_DELAYS="0 5 10" (ms), KUMI_BENCH_IMPI_MBIT (100),
#      KUMI_BENCH_IMPI_NOLAT=1 (bandwidth only).
# Writes $KUMI_BENCH_OUT/impi.table, appends to $KUMI_BENCH_OUT/targets and writes
# $KUMI_BENCH_OUT/impi.kumi.status (ok, or why not).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
out=${KUMI_BENCH_OUT:-$top_builddir/tests/bench-logs}
quick=${KUMI_BENCH_QUICK:-0}
reps=${KUMI_BENCH_REPS:-3}
delays=${KUMI_BENCH_IMPI_DELAYS:-$([ "$quick" = 1 ] && echo "0 10" || echo "0 5 10")}
mbit=${KUMI_BENCH_IMPI_MBIT:-100}
mkdir -p "$out" || exit 1
status() { echo "$1" > "$out/impi.kumi.status"; }
MPIEXEC=$top_builddir/tools/mpiexec/mpiexec
SERVER=$top_builddir/tools/impi_server/impi_server
TESTBIN=$top_builddir/tests/mpi
export KUMI_COMPONENT_PATH=${KUMI_COMPONENT_PATH:-$(ls -d "$top_builddir"/components/*/*/.libs 2>/dev/null | tr '\n' ':')}
export KUMI_INTERNAL_NO_PKGLIBDIR=1
[ -x "$SERVER" ] || { echo "impi: $SERVER not built"; status "not built"; exit 1; }
if [ ! -x "$TESTBIN/wan_delay" ]; then
    make -C "$top_builddir/tests" mpi/wan_delay > /dev/null 2>&1 || { echo "impi: cannot build wan_delay"; status "build failed"; exit 1; }
fi
work=$(mktemp -d) || exit 1
bench=$work/mpibench
${CC:-cc} -std=gnu11 -O2 -I"$top_builddir/framework/include" -I"$top_srcdir/framework/include" -o "$bench" \
    "$here/mpibench.c" -L"$top_builddir/framework/.libs" -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi ||
    { echo "impi: building mpibench failed"; status "build failed"; rm -rf "$work"; exit 1; }
. "$top_srcdir/tests/scripts/wanlab.sh"
A=${WL_NS_A##*/} B=${WL_NS_B##*/}
table=$out/impi.table
: > "$table"

# metric runs: mpibench arguments for each measured value (value = column 4, the median)
LAT=(-m lat -s 8 -x 0.05 -r "$reps")
BW64=(-m bw -s 65536 -x 0.4 -r "$reps")
BW4M=(-m bw -s 4194304 -x 0.4 -r "$reps")

tcp1() { # mpibench args -> its output
    timeout 300 "$MPIEXEC" --timeout 280 -n 2 -x MPI_COMPONENTS=p2p=self,shmem,tcp \
        python3 "$top_srcdir/tests/scripts/netns_rank.py" 1 "$WL_NS_A" "$WL_NS_B" -- "$bench" "$@" 2>> "$out/impi.err"
}
# each IMPI launch on its own core, as on two machines (p2p/tcp's mpiexec binds its
# ranks 0 and 1 to cores 0 and 1 the same way); --bind-to none inside it
PIN_A=() PIN_B=()
if command -v taskset > /dev/null && [ "$(nproc)" -ge 2 ]; then PIN_A=(taskset -c 0) PIN_B=(taskset -c 1); fi
IMPI_B=()   # more mpiexec arguments for client 1
impi1() { # NB mpibench args -> client 0's output (client 1 has NB ranks: NB > 1 makes its host relay)
    local nb=$1; shift
    rm -f "$work/port"
    ip netns exec "$A" timeout 300 "$SERVER" -n 2 -host "$WL_ADDR_A" -portfile "$work/port" -timeout 60 \
        > /dev/null 2>> "$out/impi.err" &
    local sp=$! hp
    for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.05; done
    hp=$(cat "$work/port" 2>/dev/null)
    ip netns exec "$B" "${PIN_B[@]}" timeout 290 "$MPIEXEC" --timeout 280 --bind-to none -n "$nb" --impi-client 1 --impi-server "$hp" \
        "${IMPI_B[@]}" "$bench" "$@" > /dev/null 2>> "$out/impi.err" &
    local pb=$!
    ip netns exec "$A" "${PIN_A[@]}" timeout 290 "$MPIEXEC" --timeout 280 --bind-to none -n 1 --impi-client 0 --impi-server "$hp" \
        "$bench" "$@" 2>> "$out/impi.err"
    wait $pb; wait $sp
}
val() { awk -v m="$1" '$1 == m {print $4; exit}'; }   # METRIC -> median
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b}'; }

hdr=$(printf "%6s | %8s %8s %6s %8s %6s %8s %6s | %8s %8s %6s | %8s %8s %6s %8s %6s %8s %6s" delay "lat tcp" \
    "lat impi" ratio "relayed" ratio "per-rank" ratio "64K tcp" "64K impi" ratio "4M tcp" "4M impi" ratio "relayed" \
    ratio "per-rank" ratio)
echo "IMPI (p2p/impi through each launch's IMPI host) vs Kumi's native tcp, one rank per cluster" | tee -a "$table"
echo "latency: one-way us at 8 B (ratio impi/tcp); bandwidth: MB/s (ratio impi/tcp, target >= 0.90 at 4 MiB)" | tee -a "$table"
echo "impi: client 1 one rank (its host's only proc reads the connection itself); relayed: client 1 two ranks" | tee -a "$table"
echo "(rank 1 of the measured pair is behind a host of two procs: what comes in goes through its mpiexec)" | tee -a "$table"
echo "per-rank: client 1 two ranks with p2p_impi_host_per_rank=1 (each its own IMPI host: no relay)" | tee -a "$table"
echo "$hdr" | tee -a "$table"
ok=1 rows=0 met=0 metr=0
for d in $delays; do
    wanlab_up $((d * 1000)) "$mbit" > "$work/lab.out" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        cat "$work/lab.out"
        [ $rc -eq 77 ] && { echo "impi: skipped"; status ok; rm -rf "$work"; exit 0; }
        status "lab failed"; rm -rf "$work"; exit 1
    fi
    A=${WL_NS_A##*/} B=${WL_NS_B##*/}
    lt=; li=; lr=; lp=; [ "${KUMI_BENCH_IMPI_NOLAT:-0}" = 1 ] ||
        { lt=$(tcp1 "${LAT[@]}" | val lat) li=$(impi1 1 "${LAT[@]}" | val lat) lr=$(impi1 2 "${LAT[@]}" | val lat)
          IMPI_B=(--param p2p_impi_host_per_rank=1); lp=$(impi1 2 "${LAT[@]}" | val lat); IMPI_B=(); }
    bt=$(tcp1 "${BW64[@]}" | val bw) bi=$(impi1 1 "${BW64[@]}" | val bw)
    Bt=$(tcp1 "${BW4M[@]}" | val bw) Bi=$(impi1 1 "${BW4M[@]}" | val bw) Br=$(impi1 2 "${BW4M[@]}" | val bw)
    IMPI_B=(--param p2p_impi_host_per_rank=1); Bp=$(impi1 2 "${BW4M[@]}" | val bw); IMPI_B=()
    for v in "$bt" "$bi" "$Bt" "$Bi" "$Br"; do [ -n "$v" ] || ok=0; done
    [ "${KUMI_BENCH_IMPI_NOLAT:-0}" = 1 ] || { [ -n "$lt" ] && [ -n "$li" ]; } || ok=0
    r4=$(ratio "$Bi" "$Bt")
    printf "%3s ms | %8s %8s %6s %8s %6s %8s %6s | %8s %8s %6s | %8s %8s %6s %8s %6s %8s %6s\n" "$d" "${lt:--}" \
        "${li:--}" "$(ratio "$li" "$lt")" "${lr:--}" "$(ratio "$lr" "$lt")" "${lp:--}" "$(ratio "$lp" "$lt")" \
        "${bt:--}" "${bi:--}" "$(ratio "$bi" "$bt")" "${Bt:--}" "${Bi:--}" "$r4" "${Br:--}" "$(ratio "$Br" "$Bt")" \
        "${Bp:--}" "$(ratio "$Bp" "$Bt")" | tee -a "$table"
    rows=$((rows + 1))
    awk -v r="$r4" 'BEGIN {exit !(r != "-" && r >= 0.90)}' && met=$((met + 1))
    awk -v r="$(ratio "$Br" "$Bt")" 'BEGIN {exit !(r != "-" && r >= 0.90)}' && metr=$((metr + 1))
    wanlab_down
done
echo "(1 + 1 ranks, ${mbit} Mbit/s tbf bottleneck, TCP ${WL_CC_USED:-?}, median of $reps; mpibench -x 0.05 (lat), 0.4 (bw))" | tee -a "$table"
echo "impi|IMPI bandwidth within 10 % of native tcp at 4 MiB|$met|$rows" >> "$out/targets"
echo "impi|IMPI bandwidth through a relaying host within 10 % of native tcp at 4 MiB|$metr|$rows" >> "$out/targets"
rm -rf "$work"
[ $ok = 1 ] && status ok || { status "a run failed (see $out/impi.err)"; echo "impi: a run failed (see $out/impi.err)"; }
[ $ok = 1 ]
