#!/bin/bash
# The benchmark program (tests/bench/mpibench.c) builds against Kumi, runs every
# metric at tiny sizes, and prints its documented format with sane values; and
# run-bench.sh (what `make bench` runs) produces its tables with Kumi alone.
set -u
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086
$MPICC -std=gnu11 -O1 -Wall -Wextra -o "$work/mpibench" "$top_srcdir/tests/bench/mpibench.c" -lmpi 2> "$work/cc.err" ||
    fail "mpibench does not build: $(cat "$work/cc.err")"
[ -s "$work/cc.err" ] && fail "mpibench builds with warnings: $(cat "$work/cc.err")"

sizes=0,1,4095,4097,65537
out=$(timeout 120 "$MPIEXEC" -n 2 "$work/mpibench" -m lat,bw,bibw,rate -s $sizes -r 3 -x 0.005 2>&1) ||
    fail "mpibench run failed: $out"
echo "$out"
echo "$out" | head -1 | grep -Eq '^# mpibench 1 ranks=2 reps=3 scale=0.005 library=Kumi ' || fail "bad header line"
echo "$out" | tail -1 | grep -qx '# done' || fail "no '# done' line at the end"
# every data line: METRIC BYTES ITERS MEDIAN MIN MAX UNIT, min <= median <= max, unit per metric
echo "$out" | awk '
    /^#/ { next }
    NF != 7 { print "bad line: " $0; bad = 1; next }
    {
        u["lat"] = "us"; u["bw"] = "MB/s"; u["bibw"] = "MB/s"; u["rate"] = "Mmsg/s"
        if (!($1 in u) || u[$1] != $7) { print "bad metric or unit: " $0; bad = 1 }
        if ($2 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ || $3 < 2) { print "bad size or iteration count: " $0; bad = 1 }
        if (!($5 + 0 <= $4 + 0 && $4 + 0 <= $6 + 0)) { print "median not within min..max: " $0; bad = 1 }
        if ($5 + 0 <= 0) { print "non-positive value: " $0; bad = 1 }
        n[$1]++
    }
    END {
        if (n["lat"] != 5 || n["bw"] != 4 || n["bibw"] != 4 || n["rate"] != 4) {
            printf "line counts lat %d bw %d bibw %d rate %d, expected 5 4 4 4\n", n["lat"], n["bw"], n["bibw"], n["rate"]; bad = 1
        }
        exit bad
    }' || fail "mpibench output format"

# ring: all ranks take part
out=$(timeout 120 "$MPIEXEC" -n 3 "$work/mpibench" -m ring -r 1 -x 0.01 2>&1) || fail "ring run failed: $out"
echo "$out"
[ "$(echo "$out" | grep -Ec '^ring (8|65536) [0-9]+ [0-9.e+]+ [0-9.e+]+ [0-9.e+]+ us$')" = 2 ] || fail "ring lines"

# bad arguments: an error, not a hang or a crash
out=$(timeout 60 "$MPIEXEC" -n 2 "$work/mpibench" -s 12,x 2>&1)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "bad size list: exit $rc"
echo "$out" | grep -q "bad size list" || fail "bad size list: no message: $out"

# the driver of `make bench`, Kumi alone, tiny
out=$(KUMI_BENCH_PEERS=none KUMI_BENCH_QUICK=1 KUMI_BENCH_SIZES=0,4095,4097 KUMI_BENCH_REPS=1 \
      KUMI_BENCH_CONFIGS="shm tcp" KUMI_BENCH_OUT="$work/logs" timeout 200 bash "$top_srcdir/tests/bench/run-bench.sh" 2>&1) ||
    fail "run-bench.sh failed: $out"
echo "$out"
for t in "shm: latency" "shm: uni-directional bandwidth" "tcp: bi-directional bandwidth" "tcp: message rate"; do
    echo "$out" | grep -q -- "-- $t" || fail "run-bench.sh: no table '$t'"
done
echo "$out" | grep -Eq '^ +4097 +[0-9.e+]+$' || fail "run-bench.sh: no row for 4097 bytes"
echo "bench_smoke: ok"
