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
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
out=${KUMI_BENCH_OUT:-$top_builddir/tests/bench-logs}
quick=${KUMI_BENCH_QUICK:-0}
reps=${KUMI_BENCH_REPS:-$([ "$quick" = 1 ] && echo 3 || echo 5)}
limit=${KUMI_BENCH_TIMEOUT:-240}
peers=${KUMI_BENCH_PEERS:-ompi mpich}
ncomm=${KUMI_BENCH_MATCH_COMMS:-1000}
nue=${KUMI_BENCH_MATCH_UE:-100000}
iters=$([ "$quick" = 1 ] && echo 2000 || echo 20000)
mkdir -p "$out" || exit 1
mpiexec=$top_builddir/tools/mpiexec/mpiexec
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
status() { echo "$1" > "$out/match.kumi.status"; }
name() { case $1 in kumi) echo Kumi ;; ompi) echo "Open MPI" ;; mpich) echo MPICH ;; esac; }

${CC:-cc} -std=gnu11 -O2 -I"$top_builddir/framework/include" -I"$top_srcdir/framework/include" \
    -o "$work/matchbench.kumi" "$here/matchbench.c" -L"$top_builddir/framework/.libs" \
    -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi 2> "$out/build.match.kumi.err" ||
    { echo "match: building matchbench.c with Kumi failed (see $out/build.match.kumi.err)"; status "build failed"; exit 1; }
impls=(kumi)
for p in $peers; do
    case $p in ompi) cc_=mpicc.openmpi run_=mpirun.openmpi ;; mpich) cc_=mpicc.mpich run_=mpirun.mpich ;; *) continue ;; esac
    command -v $cc_ > /dev/null 2>&1 && command -v $run_ > /dev/null 2>&1 || { echo "match: $(name $p) not installed: skipped"; continue; }
    if $cc_ -O2 -o "$work/matchbench.$p" "$here/matchbench.c" 2> "$out/build.match.$p.err"; then impls+=("$p")
    else echo "match: building matchbench.c with $cc_ failed (see $out/build.match.$p.err)"; fi
done

# run IMPL MODE N: one launch, bound one rank per core; prints the latency
run() {
    local a=("$work/matchbench.$1" "$2" "$3" "$iters")
    case $1 in
    kumi) timeout "$limit" "$mpiexec" --bind-to core -n 2 "${a[@]}" ;;
    ompi) timeout "$limit" mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to core -n 2 "${a[@]}" ;;
    mpich) timeout "$limit" mpirun.mpich -bind-to core -n 2 "${a[@]}" ;;
    esac 2>> "$out/match.$1.err" | awk 'NF == 3 { print $3; ok = 1 } END { exit !ok }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
modes=("base 0" "comms $ncomm" "ue $nue")
for ((r = 1; r <= reps; r++)); do
    for m in "${modes[@]}"; do
        for i in "${impls[@]}"; do
            set -- $m
            run "$i" "$1" "$2" >> "$work/$i.$1" || echo "match: a $(name "$i") run ($m) failed (see $out/match.$i.err)"
        done
    done
done
[ -s "$work/kumi.base" ] || { status "runs failed"; exit 1; }
{
    echo "-- matching that scales: 8 B ping-pong latency (us, half round trip; median of $reps launches, each the best of 5 rounds)"
    printf "  %-10s %12s %26s %28s\n" "" "base" "$ncomm comms with a receive" "$nue unexpected elsewhere"
    for i in "${impls[@]}"; do
        v=()
        for m in base comms ue; do
            x=$( [ -s "$work/$i.$m" ] && median < "$work/$i.$m" || echo failed)
            echo "$x" > "$work/$i.$m.med"
            v+=("$x")
        done
        rc=$(awk -v b="${v[0]}" -v x="${v[1]}" 'BEGIN { if (b + 0 > 0 && x + 0 > 0) printf "(%.2fx)", x / b }')
        ru=$(awk -v b="${v[0]}" -v x="${v[2]}" 'BEGIN { if (b + 0 > 0 && x + 0 > 0) printf "(%.2fx)", x / b }')
        printf "  %-10s %12s %18s %7s %20s %7s\n" "$(name "$i")" "${v[0]}" "${v[1]}" "$rc" "${v[2]}" "$ru"
    done
    b=$(cat "$work/kumi.base.med")
    for m in comms ue; do
        x=$(cat "$work/kumi.$m.med")
        met=$(awk -v b="$b" -v x="$x" 'BEGIN { print (b + 0 > 0 && x + 0 > 0 && x <= 1.2 * b) ? 1 : 0 }')
        what=$([ $m = comms ] && echo "$ncomm communicators with a posted receive" || echo "$nue unexpected messages on another communicator")
        echo "match|ping-pong latency with $what within 1.2x of none|$met|1" >> "$out/targets"
    done
} | tee "$out/match.txt"
status ok
