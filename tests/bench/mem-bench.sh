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
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
out=${KUMI_BENCH_OUT:-$top_builddir/tests/bench-logs}
quick=${KUMI_BENCH_QUICK:-0}
reps=${KUMI_BENCH_REPS:-$([ "$quick" = 1 ] && echo 1 || echo 3)}
limit=${KUMI_BENCH_TIMEOUT:-240}
peers=${KUMI_BENCH_PEERS:-ompi mpich}
ranks=${KUMI_BENCH_MEM_RANKS:-2 16 64}
mkdir -p "$out" || exit 1
mpiexec=$top_builddir/tools/mpiexec/mpiexec
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
status() { echo "$1" > "$out/mem.kumi.status"; }
name() { case $1 in kumi) echo Kumi ;; ompi) echo "Open MPI" ;; mpich) echo MPICH ;; esac; }

${CC:-cc} -std=gnu11 -O2 -I"$top_builddir/framework/include" -I"$top_srcdir/framework/include" \
    -o "$work/membench.kumi" "$here/membench.c" -L"$top_builddir/framework/.libs" \
    -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi 2> "$out/build.mem.kumi.err" ||
    { echo "mem: building membench.c with Kumi failed (see $out/build.mem.kumi.err)"; status "build failed"; exit 1; }
impls=(kumi)
for p in $peers; do
    case $p in ompi) cc_=mpicc.openmpi run_=mpirun.openmpi ;; mpich) cc_=mpicc.mpich run_=mpirun.mpich ;; *) continue ;; esac
    command -v $cc_ > /dev/null 2>&1 && command -v $run_ > /dev/null 2>&1 || { echo "mem: $(name $p) not installed: skipped"; continue; }
    if $cc_ -O2 -o "$work/membench.$p" "$here/membench.c" 2> "$out/build.mem.$p.err"; then impls+=("$p")
    else echo "mem: building membench.c with $cc_ failed (see $out/build.mem.$p.err)"; fi
done

# run IMPL NP: one launch; prints "NP RSS_MED RSS_MAX PSS_MED PSS_MAX" (KiB)
run() {
    case $1 in
    kumi) timeout "$limit" "$mpiexec" -n "$2" "$work/membench.kumi" ;;
    ompi) timeout "$limit" mpirun.openmpi --allow-run-as-root --oversubscribe -n "$2" "$work/membench.ompi" ;;
    mpich) timeout "$limit" mpirun.mpich -n "$2" "$work/membench.mpich" ;;
    esac 2>> "$out/mem.$1.err" | awk 'NF == 5 { print; ok = 1 } END { exit !ok }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
for ((r = 1; r <= reps; r++)); do
    for np in $ranks; do
        for i in "${impls[@]}"; do
            run "$i" "$np" >> "$work/$i.$np" || echo "mem: a $(name "$i") run at $np ranks failed (see $out/mem.$i.err)"
        done
    done
done
ok=1
{
    echo "-- memory per rank after start-up (MiB of the median rank: VmRSS / Pss; median of $reps launches)"
    printf "  %-10s" ""
    for np in $ranks; do printf " %18s" "$np ranks"; done
    echo
    for i in "${impls[@]}"; do
        printf "  %-10s" "$(name "$i")"
        for np in $ranks; do
            if [ -s "$work/$i.$np" ]; then
                rss=$(awk '{ print $2 }' "$work/$i.$np" | median); pss=$(awk '{ print $4 }' "$work/$i.$np" | median)
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
        best=0
        for i in "${impls[@]}"; do
            [ "$i" = kumi ] || [ ! -f "$work/$i.$np.rss" ] && continue
            v=$(cat "$work/$i.$np.rss")
            best=$(awk -v a="$best" -v b="$v" 'BEGIN { print (a == 0 || b < a) ? b : a }')
        done
        [ "$best" = 0 ] && continue
        k=$(cat "$work/kumi.$np.rss")
        met=$(awk -v k="$k" -v b="$best" 'BEGIN { print (k <= b) ? 1 : 0 }')
        echo "mem|resident memory of a rank at $np ranks no larger than the better peer's|$met|1" >> "$out/targets"
    done
} | tee "$out/mem.txt"
[ $ok = 1 ] && status ok || status "runs failed"
