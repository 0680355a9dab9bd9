#!/bin/bash
# Matching that scales (issue 22 item 5), the "match" configuration of
# run-bench.sh (which runs this script; it can also run alone):
# tests/bench/matchbench.c, 8-byte ping-pong latency on MPI_COMM_WORLD between
# 2 ranks whose receive always matches the first entry of its sender's
# queue, while nothing else waits (base), while 1000 other communicators each
# have a receive posted (comms), and while 100,000 messages on another
# communicator wait in both ranks' unexpected queues (ue; sent to themselves).  Kumi, Open MPI
# and MPICH, built with each one's compiler, in one run: KUMI_BENCH_REPS
# interleaved launches each (each the best of 5 rounds), medians.
#
# Env: top_srcdir, top_builddir, KUMI_BENCH_OUT (default $top_builddir/tests/bench-logs),
#      KUMI_BENCH_REPS (default 5), KUMI_BENCH_QUICK=1 (3 launches, fewer round trips),
#      KUMI_BENCH_TIMEOUT (one launch, default 240 s), KUMI_BENCH_PEERS ("ompi mpich"),
#      KUMI_BENCH_MATCH_COMMS (default 1000), KUMI_BENCH_MATCH_UE (default 100000).
# Appends its targets to $KUMI_BENCH_OUT/targets and writes $KUMI_BENCH_OUT/match.kumi.status.
set -u
. "$(dirname "$0")/bench-common.sh"
bench_setup match 3 5
ncomm=${KUMI_BENCH_MATCH_COMMS:-1000}
nue=${KUMI_BENCH_MATCH_UE:-100000}
iters=$([ "$quick" = 1 ] && echo 2000 || echo 20000)
bench_build matchbench

# bench_one IMPL MODE ROUND: one launch, bound one rank per core; prints the latency
bench_one() {
    local n; case $2 in base) n=0 ;; comms) n=$ncomm ;; ue) n=$nue ;; esac
    bench_launch "$1" 2 bind "$work/matchbench.$1" "$2" "$n" "$iters" |
        awk 'NF == 3 { print $3; ok = 1 } END { exit !ok }'
}
bench_rounds base comms ue
[ -s "$work/kumi.base" ] || { bench_status "runs failed"; exit 1; }
{
    echo "-- matching that scales: 8 B ping-pong latency (us, half round trip; median of $reps launches, each the best of 5 rounds)"
    printf "  %-10s %12s %26s %28s\n" "" "base" "$ncomm comms with a receive" "$nue unexpected elsewhere"
    for i in "${impls[@]}"; do
        v=()
        for m in base comms ue; do
            x=$(bench_med "$i" $m)
            echo "$x" > "$work/$i.$m.med"
            v+=("$x")
        done
        rc=$(awk -v b="${v[0]}" -v x="${v[1]}" 'BEGIN { if (b + 0 > 0 && x + 0 > 0) printf "(%.2fx)", x / b }')
        ru=$(awk -v b="${v[0]}" -v x="${v[2]}" 'BEGIN { if (b + 0 > 0 && x + 0 > 0) printf "(%.2fx)", x / b }')
        printf "  %-10s %12s %18s %7s %20s %7s\n" "$(bench_name "$i")" "${v[0]}" "${v[1]}" "$rc" "${v[2]}" "$ru"
    done
    b=$(cat "$work/kumi.base.med")
    for m in comms ue; do
        x=$(cat "$work/kumi.$m.med")
        met=$(awk -v b="$b" -v x="$x" 'BEGIN { print (b + 0 > 0 && x + 0 > 0 && x <= 1.2 * b) ? 1 : 0 }')
        what=$([ $m = comms ] && echo "$ncomm communicators with a posted receive" || echo "$nue unexpected messages on another communicator")
        bench_target "ping-pong latency with $what within 1.2x of none" "$met"
    done
} | tee "$out/match.txt"
bench_status ok
