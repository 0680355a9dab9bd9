#!/bin/bash
# The cost of the foreign-ABI shims (issue 17), the "abi" configuration of
# run-bench.sh (which runs this script; it can also run alone):
# tests/abi/callcost.c built with Kumi's own compiler (native) and with each
# foreign wrapper whose shim is built (mpicc.openmpi -> libmpi.so.40, mpicc.mpich ->
# libmpich.so.12), run on
# Kumi at 2 ranks, one per core, with mpiexec choosing the shim by itself.
# Per call: MPI_Comm_rank (handles only), MPI_Recv from MPI_PROC_NULL (a
# status), MPI_Isend to MPI_PROC_NULL with MPI_Wait (a request handle made, read and
# given back: the shims' request tables), and the one-way time of an 8-byte ping-pong; the median of
# KUMI_BENCH_REPS launches (each the best of 5 inner repetitions).  Targets:
# at most 2 ns added per handle-only call, at most 10 ns with a status.
#
# Env: top_srcdir, top_builddir, KUMI_BENCH_OUT (default $top_builddir/tests/bench-logs),
#      KUMI_BENCH_REPS (default 5), KUMI_BENCH_QUICK=1 (fewer iterations), KUMI_BENCH_TIMEOUT.
# Appends its targets to $KUMI_BENCH_OUT/targets (run-bench.sh's summary) and
# writes $KUMI_BENCH_OUT/abi.kumi.status (ok, or why not).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
out=${KUMI_BENCH_OUT:-$top_builddir/tests/bench-logs}
reps=${KUMI_BENCH_REPS:-5}
quick=${KUMI_BENCH_QUICK:-0}
limit=${KUMI_BENCH_TIMEOUT:-240}
iters=$([ "$quick" = 1 ] && echo 1000000 || echo 10000000)
mkdir -p "$out" || exit 1
mpiexec=$top_builddir/tools/mpiexec/mpiexec
src=$top_srcdir/tests/abi/callcost.c
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
status() { echo "$1" > "$out/abi.kumi.status"; }
bind=(--bind-to core)
"$mpiexec" --help 2>&1 | grep -q -- '--bind-to' || bind=()

${CC:-cc} -std=gnu11 -O2 -I"$top_builddir/framework/include" -I"$top_srcdir/framework/include" \
    -o "$work/callcost.native" "$src" -L"$top_builddir/framework/.libs" \
    -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi 2> "$out/build.abi.native.err" ||
    { echo "abi: building callcost.c with Kumi failed (see $out/build.abi.native.err)"; status "build failed"; exit 1; }
# the shims of this build tree, where mpiexec finds them (KUMI_ABI_DIR)
shims=()
mkdir -p "$work/abi"
if [ -f "$top_builddir/components/abi/ompi/.libs/libmpi.so.40" ] && command -v mpicc.openmpi > /dev/null 2>&1; then
    mkdir -p "$work/abi/ompi"
    ln -s "$top_builddir/components/abi/ompi/.libs/libmpi.so.40" "$work/abi/ompi/libmpi.so.40"
    if mpicc.openmpi -O2 -o "$work/callcost.ompi" "$src" 2> "$out/build.abi.ompi.err"; then shims+=(ompi)
    else echo "abi: building callcost.c with mpicc.openmpi failed (see $out/build.abi.ompi.err)"; fi
else
    echo "abi: the Open MPI shim or mpicc.openmpi is missing: not measured"
fi
if [ -f "$top_builddir/components/abi/mpich/.libs/libmpich.so.12" ] && command -v mpicc.mpich > /dev/null 2>&1; then
    mkdir -p "$work/abi/mpich"
    ln -s "$top_builddir/components/abi/mpich/.libs/libmpich.so.12" "$work/abi/mpich/libmpich.so.12"
    if mpicc.mpich -O2 -o "$work/callcost.mpich" "$src" 2> "$out/build.abi.mpich.err"; then shims+=(mpich)
    else echo "abi: building callcost.c with mpicc.mpich failed (see $out/build.abi.mpich.err)"; fi
else
    echo "abi: the MPICH shim or mpicc.mpich is missing: not measured"
fi

# run VARIANT: one launch; prints "rank recv pingpong request" (ns ns us ns)
run() {
    KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        timeout "$limit" "$mpiexec" "${bind[@]}" -n 2 "$work/callcost.$1" "$iters" 2>> "$out/abi.$1.err" |
        awk '/^MPI_Comm_rank/ { a = $2 } /^MPI_Recv/ { b = $2 } /^pingpong/ { c = $4 } /^MPI_Isend/ { d = $2 }
             END { if (a != "" && b != "" && c != "" && d != "") print a, b, c, d; else exit 1 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
: > "$out/abi.txt"
for v in native "${shims[@]}"; do
    : > "$work/$v.runs"
    for ((r = 0; r < reps; r++)); do
        run "$v" >> "$work/$v.runs" || { echo "abi: a $v run failed (see $out/abi.$v.err)"; }
    done
    [ -s "$work/$v.runs" ] || { [ "$v" = native ] && { status "native runs failed"; exit 1; }; continue; }
    for k in 1 2 3 4; do awk -v k=$k '{ print $k }' "$work/$v.runs" | median > "$work/$v.$k"; done
done
line() { printf "  %-34s %12s %12s %12s %8s\n" "$@"; }
{
    echo "-- foreign-ABI shims: the same program (tests/abi/callcost.c) native and through each shim, 2 ranks on Kumi"
    for s in "${shims[@]}"; do
        [ -s "$work/$s.runs" ] || continue
        line "" "native" "$s shim" "added" "target"
        for k in 1 2 4 3; do
            n=$(cat "$work/native.$k"); f=$(cat "$work/$s.$k")
            case $k in
            1) what="MPI_Comm_rank (ns per call)"; tgt=2 ;;
            2) what="MPI_Recv from MPI_PROC_NULL (ns)"; tgt=10 ;;
            3) what="8 B ping-pong, one way (us)"; tgt= ;;
            4) what="MPI_Isend+MPI_Wait, PROC_NULL (ns)"; tgt= ;;
            esac
            add=$(awk -v a="$f" -v b="$n" 'BEGIN { printf "%+.2f", a - b }')
            line "$what" "$n" "$f" "$add" "${tgt:+<= $tgt}"
            if [ -n "$tgt" ]; then
                met=$(awk -v a="$f" -v b="$n" -v t="$tgt" 'BEGIN { print (a - b <= t) ? 1 : 0 }')
                echo "abi|$s shim: at most $tgt ns added to $(echo "$what" | sed 's/ (.*//')|$met|1" >> "$out/targets"
            fi
        done
    done
    [ ${#shims[@]} -gt 0 ] || echo "  (no shim measured)"
} | tee "$out/abi.txt"
status ok
