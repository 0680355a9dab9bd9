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
#      KUMI_BENCH_IO_DIR (where the file goes, default $KUMI_BENCH_OUT),
#      KUMI_BENCH_IO_TWOPHASE=1 (one more row: Kumi with the hints romio_cb_write=enable and
#      romio_cb_read=enable, its two-phase collective writes and reads forced, next to its
#      default, automatic, which writes and reads large pieces rank by rank).
# Appends its targets to $KUMI_BENCH_OUT/targets and writes $KUMI_BENCH_OUT/io.kumi.status.
set -u
. "$(dirname "$0")/bench-common.sh"
bench_on_exit='rm -f "$dir"/iobench.*.dat'
bench_setup io 3 5
mib=${KUMI_BENCH_IO_MIB:-$([ "$quick" = 1 ] && echo 64 || echo 1024)}
np=${KUMI_BENCH_IO_RANKS:-4}
dir=${KUMI_BENCH_IO_DIR:-$out}
bench_build iobench -lm
[ "${KUMI_BENCH_IO_TWOPHASE:-0}" = 1 ] && impls=(kumi kumi-2ph "${impls[@]:1}")
bench_labels[kumi-2ph]="Kumi (romio_cb_*=enable)"

# bench_one IMPL runs ROUND: one launch, unbound (the first checks the data);
# prints "bytes write_s read_s write_MiBps read_MiBps"
bench_one() {
    local chk=() prog=$1
    [ "$3" = 1 ] && chk=(-c)
    [ "$1" = kumi-2ph ] && prog=kumi chk+=(-i romio_cb_read=enable -i romio_cb_write=enable)
    bench_launch "$1" "$np" nobind "$work/iobench.$prog" -f "$dir/iobench.$1.dat" -m "$mib" -r 3 "${chk[@]}" |
        awk 'NF == 5 { print; ok = 1 } END { exit !ok }'
}
bench_rounds runs
[ -s "$work/kumi.runs" ] || { bench_status "runs failed"; exit 1; }
bytes=$(head -1 "$work/kumi.runs" | cut -d' ' -f1)
{
    echo "-- MPI-IO: collective write (+ sync) and read of a 3-D block-distributed array of doubles," \
         "$(awk -v b="$bytes" 'BEGIN { printf "%.0f MiB", b / 1048576 }') at $np ranks (MiB/s, median of $reps launches, each the best of 3)"
    printf "  %-28s %12s %12s\n" "" "write_all" "read_all"
    for i in "${impls[@]}"; do
        [ -s "$work/$i.runs" ] || { printf "  %-28s %12s %12s\n" "$(bench_name "$i")" failed failed; continue; }
        w=$(bench_med "$i" runs 4); rd=$(bench_med "$i" runs 5)
        echo "$w" > "$work/$i.w"; echo "$rd" > "$work/$i.r"
        printf "  %-28s %12s %12s\n" "$(bench_name "$i")" "$w" "$rd"
    done
    for m in w r; do
        best=$(bench_best high "$m")
        [ "$best" = 0 ] && continue
        k=$(cat "$work/kumi.$m")
        met=$(awk -v k="$k" -v b="$best" 'BEGIN { print (k >= b) ? 1 : 0 }')
        what=$([ $m = w ] && echo "write_all" || echo "read_all")
        printf "  Kumi / best peer (%s): %s\n" "$what" "$(awk -v k="$k" -v b="$best" 'BEGIN { printf "%.2f", k / b }')"
        bench_target "collective $what of the 3-D array no slower than the better of Open MPI and MPICH" "$met"
    done
} | tee "$out/io.txt"
bench_status ok
