#!/bin/bash
# ckpt/image: how fast a process image is written and restarted, next to what
# dd does on the same disk, in the same run.  Not part of make check.
#
#   top_builddir=BUILD tests/bench/ckpt-bench.sh      (sizes in MiB: CKPT_BENCH_SIZES, default "10 100")
#
# For each size: a program with SIZE MiB of heap (tests/bench/ckpt_bench.c)
# times kumi_ckpt_image_write (the image is SIZE + a few MiB: libraries'
# data, stack, ...), to the page cache and with fsync; dd writes the same
# number of bytes (bs=1M, then conv=fsync); `kumi_restart IMAGE` is timed as a
# whole (exec, checksum, mapping back, the program's exit), next to dd reading
# the image to /dev/null.  Reads are from the page cache (dropping it would
# disturb everything else on the machine).  Median of CKPT_BENCH_REPS (3).
# Images go to CKPT_BENCH_DIR (default BUILD/tests/bench-logs/ckpt).
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
IMG=$top_builddir/components/ckpt/image
RESTART=$IMG/kumi_restart
DIR=${CKPT_BENCH_DIR:-$top_builddir/tests/bench-logs/ckpt}
REPS=${CKPT_BENCH_REPS:-3}
mkdir -p "$DIR"
BIN=$DIR/ckpt_bench
${CC:-cc} -std=gnu11 -O2 -I"$top_srcdir/components/ckpt/image" -o "$BIN" "$top_srcdir/tests/bench/ckpt_bench.c" \
    "$IMG/.libs/libkumi_ckpt_image_core.a" || exit 1
now() { date +%s.%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
dd_rate() { # dd args...: GB/s from dd's own summary
    LC_ALL=C dd "$@" 2>&1 | awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "copied,") { s = $(i + 1) } ; b = $1 } END { printf "%.2f", b / s / 1e9 }'
}
echo "ckpt/image on $(df -h "$DIR" | awk 'NR == 2 { print $1 " (" $2 ")" }'), $(uname -r), median of $REPS"
printf "%8s %10s | %9s %9s | %9s %9s | %9s %9s | %9s\n" "MiB" "image MB" "write" "dd" "write+fs" "dd+fsync" "restart" "dd read" "restart s"
for mb in ${CKPT_BENCH_SIZES:-10 100}; do
    w=() wf=() d=() df=() r=() dr=() rs=()
    for _ in $(seq "$REPS"); do
        rm -f "$DIR/img" "$DIR/dd"     # neither the image nor dd pays for freeing an older file
        out=$("$BIN" "$mb" "$DIR/img" 2>&1) || { echo "ckpt_bench failed: $out"; exit 1; }
        secs=$(echo "$out" | awk '{ print $2 }'); bytes=$(echo "$out" | awk '{ print $4 }')
        w+=("$(awk -v b="$bytes" -v s="$secs" 'BEGIN { printf "%.2f", b / s / 1e9 }')")
        rm -f "$DIR/img"
        out=$("$BIN" "$mb" "$DIR/img" fsync 2>&1) || { echo "ckpt_bench failed: $out"; exit 1; }
        secs=$(echo "$out" | awk '{ print $2 }')
        wf+=("$(awk -v b="$bytes" -v s="$secs" 'BEGIN { printf "%.2f", b / s / 1e9 }')")
        count=$(( (bytes + 1048575) / 1048576 ))
        d+=("$(dd_rate if=/dev/zero of="$DIR/dd" bs=1M count=$count)")
        rm -f "$DIR/dd"
        df+=("$(dd_rate if=/dev/zero of="$DIR/dd" bs=1M count=$count conv=fsync)")
        t0=$(now); "$RESTART" "$DIR/img" > "$DIR/r.out" 2>&1; rc=$?; t1=$(now)
        [ $rc -eq 0 ] && grep -q 'restarted ok' "$DIR/r.out" || { echo "restart failed:"; cat "$DIR/r.out"; exit 1; }
        rs+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')")
        r+=("$(awk -v x="$bytes" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", x / (b - a) / 1e9 }')")
        dr+=("$(dd_rate if="$DIR/img" of=/dev/null bs=1M)")
    done
    med() { printf "%s\n" "$@" | median; }
    printf "%8s %10.1f | %9s %9s | %9s %9s | %9s %9s | %9s\n" "$mb" "$(awk -v b="$bytes" 'BEGIN { print b / 1e6 }')" \
        "$(med "${w[@]}")" "$(med "${d[@]}")" "$(med "${wf[@]}")" "$(med "${df[@]}")" \
        "$(med "${r[@]}")" "$(med "${dr[@]}")" "$(med "${rs[@]}")"
done
echo "(rates in GB/s of image bytes; restart s: seconds for kumi_restart as a whole)"
rm -f "$DIR/img" "$DIR/dd" "$DIR/r.out"
