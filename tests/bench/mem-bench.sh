#!/bin/bash
# Memory per rank (issue 22 item 6), the "mem" configuration of run-bench.sh
# (which runs this script; it can also run alone): tests/bench/membench.c at
# 2, 16 and 64 ranks on this host (more ranks than cores: no binding, Open
# MPI --oversubscribe), Kumi, Open MPI and MPICH with their default
# transports, built with each one's compiler, in one run: KUMI_BENCH_REPS
# interleaved launches each, medians.  Resident memory (VmRSS) of the median
# rank, and its proportional share (Pss: shared pages such as libraries and
# shared-memory segments divided among the processes mapping them).
#
# Env: top_srcdir, top_builddir, KUMI_BENCH_OUT (default $top_builddir/tests/bench-logs),
#      KUMI_BENCH_REPS (default 3), KUMI_BENCH_QUICK=1 (1 launch),
#      KUMI_BENCH_TIMEOUT (one launch, default 240 s), KUMI_BENCH_PEERS ("ompi mpich"),
#      KUMI_BENCH_MEM_RANKS (default "2 16 64").
# Appends its targets to $KUMI_BENCH_OUT/targets and writes $KUMI_BENCH_OUT/mem.kumi.status.
set -u
. "$(dirname "$0")/bench-common.sh"
bench_setup mem 1 3
ranks=${KUMI_BENCH_MEM_RANKS:-2 16 64}
bench_build membench

# bench_one IMPL NP ROUND: one launch, unbound; prints "NP RSS_MED RSS_MAX PSS_MED PSS_MAX" (KiB)
bench_one() {
    bench_launch "$1" "$2" nobind "$work/membench.$1" | awk 'NF == 5 { print; ok = 1 } END { exit !ok }'
}
# shellcheck disable=SC2086
bench_rounds $ranks
ok=1
{
    echo "-- memory per rank after start-up (MiB of the median rank: VmRSS / Pss; median of $reps launches)"
    printf "  %-10s" ""
    for np in $ranks; do printf " %18s" "$np ranks"; done
    echo
    for i in "${impls[@]}"; do
        printf "  %-10s" "$(bench_name "$i")"
        for np in $ranks; do
            if [ -s "$work/$i.$np" ]; then
                rss=$(bench_med "$i" "$np" 2); pss=$(bench_med "$i" "$np" 4)
                echo "$rss" > "$work/$i.$np.rss"
                printf " %18s" "$(awk -v a="$rss" -v b="$pss" 'BEGIN { printf "%.1f / %.1f", a / 1024, b / 1024 }')"
            else
                printf " %18s" failed
                [ "$i" = kumi ] && ok=0
            fi
        done
        echo
    done
    for np in $ranks; do
        [ -f "$work/kumi.$np.rss" ] || continue
        best=$(bench_best low "$np.rss")
        [ "$best" = 0 ] && continue
        k=$(cat "$work/kumi.$np.rss")
        met=$(awk -v k="$k" -v b="$best" 'BEGIN { print (k <= b) ? 1 : 0 }')
        bench_target "resident memory of a rank at $np ranks no larger than the better peer's" "$met"
    done
} | tee "$out/mem.txt"
[ $ok = 1 ] && bench_status ok || bench_status "runs failed"
