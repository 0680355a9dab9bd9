#!/bin/bash
# MPI-IO (issue 23), the "io" configuration of run-bench.sh (which runs this
# script; it can also run alone): tests/bench/iobench.c, a 3-D array of
# doubles block-distributed over 4 ranks (MPI_Dims_create; the filetype is
# MPI_Type_create_subarray), written with MPI_File_write_all (+ MPI_File_sync)
# and read back with MPI_File_read_all, with Kumi, Open MPI (mpirun.openmpi
# --allow-run-as-root --oversubscribe: its default io component, OMPIO) and
# MPICH (ROMIO), built with each one's compiler, in one run: KUMI_BENCH_REPS
# interleaved launches each (each the best of 3 inner repetitions), medians.
# No hints: each implementation's defaults.  The first launch checks the data
# read back (-c).
#
# Env: top_srcdir, top_builddir, KUMI_BENCH_OUT (default $top_builddir/tests/bench-logs),
#      KUMI_BENCH_REPS (default 5), KUMI_BENCH_QUICK=1 (64 MiB, 3 launches),
#      KUMI_BENCH_TIMEOUT (one launch, default 240 s), KUMI_BENCH_PEERS ("ompi mpich"),
#      KUMI_BENCH_IO_MIB (array size in MiB, default 1024), KUMI_BENCH_IO_RANKS (default 4),
#      KUMI_BENCH_IO_DIR (where the file goes, default $KUMI_BENCH_OUT).
# Appends its targets to $KUMI_BENCH_OUT/targets and writes $KUMI_BENCH_OUT/io.kumi.status.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
out=${KUMI_BENCH_OUT:-$top_builddir/tests/bench-logs}
quick=${KUMI_BENCH_QUICK:-0}
reps=${KUMI_BENCH_REPS:-$([ "$quick" = 1 ] && echo 3 || echo 5)}
limit=${KUMI_BENCH_TIMEOUT:-240}
mib=${KUMI_BENCH_IO_MIB:-$([ "$quick" = 1 ] && echo 64 || echo 1024)}
np=${KUMI_BENCH_IO_RANKS:-4}
peers=${KUMI_BENCH_PEERS:-ompi mpich}
mkdir -p "$out" || exit 1
dir=${KUMI_BENCH_IO_DIR:-$out}
mpiexec=$top_builddir/tools/mpiexec/mpiexec
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"; rm -f "$dir"/iobench.*.dat' EXIT
status() { echo "$1" > "$out/io.kumi.status"; }
name() { case $1 in kumi) echo Kumi ;; ompi) echo "Open MPI" ;; mpich) echo MPICH ;; esac; }

${CC:-cc} -std=gnu11 -O2 -I"$top_builddir/framework/include" -I"$top_srcdir/framework/include" \
    -o "$work/iobench.kumi" "$here/iobench.c" -L"$top_builddir/framework/.libs" \
    -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi -lm 2> "$out/build.io.kumi.err" ||
    { echo "io: building iobench.c with Kumi failed (see $out/build.io.kumi.err)"; status "build failed"; exit 1; }
impls=(kumi)
for p in $peers; do
    case $p in ompi) cc_=mpicc.openmpi run_=mpirun.openmpi ;; mpich) cc_=mpicc.mpich run_=mpirun.mpich ;; *) continue ;; esac
    command -v $cc_ > /dev/null 2>&1 && command -v $run_ > /dev/null 2>&1 || { echo "io: $(name $p) not installed: skipped"; continue; }
    if $cc_ -O2 -o "$work/iobench.$p" "$here/iobench.c" -lm 2> "$out/build.io.$p.err"; then impls+=("$p")
    else echo "io: building iobench.c with $cc_ failed (see $out/build.io.$p.err)"; fi
done

# run IMPL REP: one launch; prints "bytes write_s read_s write_MiBps read_MiBps"
run() {
    local chk=; [ "$2" = 1 ] && chk=-c
    local args=(-f "$dir/iobench.$1.dat" -m "$mib" -r 3 $chk)
    case $1 in
    kumi) timeout "$limit" "$mpiexec" -n "$np" "$work/iobench.kumi" "${args[@]}" ;;
    ompi) timeout "$limit" mpirun.openmpi --allow-run-as-root --oversubscribe -n "$np" "$work/iobench.ompi" "${args[@]}" ;;
    mpich) timeout "$limit" mpirun.mpich -n "$np" "$work/iobench.mpich" "${args[@]}" ;;
    esac 2>> "$out/io.$1.err" | awk 'NF == 5 { print; ok = 1 } END { exit !ok }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
for i in "${impls[@]}"; do : > "$work/$i.runs"; done
for ((r = 1; r <= reps; r++)); do
    for i in "${impls[@]}"; do
        run "$i" "$r" >> "$work/$i.runs" || echo "io: a $(name "$i") run failed (see $out/io.$i.err)"
    done
done
[ -s "$work/kumi.runs" ] || { status "runs failed"; exit 1; }
bytes=$(head -1 "$work/kumi.runs" | cut -d' ' -f1)
{
    echo "-- MPI-IO: collective write (+ sync) and read of a 3-D block-distributed array of doubles," \
         "$(awk -v b="$bytes" 'BEGIN { printf "%.0f MiB", b / 1048576 }') at $np ranks (MiB/s, median of $reps launches, each the best of 3)"
    printf "  %-28s %12s %12s\n" "" "write_all" "read_all"
    for i in "${impls[@]}"; do
        [ -s "$work/$i.runs" ] || { printf "  %-28s %12s %12s\n" "$(name "$i")" failed failed; continue; }
        w=$(awk '{ print $4 }' "$work/$i.runs" | median); rd=$(awk '{ print $5 }' "$work/$i.runs" | median)
        echo "$w" > "$work/$i.w"; echo "$rd" > "$work/$i.r"
        printf "  %-28s %12s %12s\n" "$(name "$i")" "$w" "$rd"
    done
    for m in w r; do
        best=0
        for i in "${impls[@]}"; do
            [ "$i" = kumi ] || [ ! -f "$work/$i.$m" ] && continue
            best=$(awk -v a="$best" -v b="$(cat "$work/$i.$m")" 'BEGIN { print (b > a) ? b : a }')
        done
        [ "$best" = 0 ] && continue
        k=$(cat "$work/kumi.$m")
        met=$(awk -v k="$k" -v b="$best" 'BEGIN { print (k >= b) ? 1 : 0 }')
        what=$([ $m = w ] && echo "write_all" || echo "read_all")
        printf "  Kumi / best peer (%s): %s\n" "$what" "$(awk -v k="$k" -v b="$best" 'BEGIN { printf "%.2f", k / b }')"
        echo "io|collective $what of the 3-D array no slower than the better of Open MPI and MPICH|$met|1" >> "$out/targets"
    done
} | tee "$out/io.txt"
status ok
