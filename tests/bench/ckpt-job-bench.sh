#!/bin/bash
# Coordinated checkpoints of a whole job (issue 20): a checkpoint and a
# restart of 4 ranks (tests/mpi/ckpt_job.c with SIZE MiB of heap each)
# against the image size, in GB/s of image, next to dd writing the same bytes
# in the same run; and the cost of --ckpt (calls counted, the lock off until
# a request) on a run without a request.  make bench's configuration ckpt; not part of make check.
#
#   top_builddir=BUILD tests/bench/ckpt-job-bench.sh   (CKPT_BENCH_SIZES, MiB per rank: "10 100";
#   make bench's configuration ckpt: "10 100 1000", quick "10 100"; CKPT_BENCH_REPS: 5)
#
# checkpoint: mpiexec's own figure (request to manifest); restart: from
# `mpiexec --restart` to the program's next progress line, minus nothing
# (it includes mpiexec's start and the wire-up).  Images go to
# CKPT_BENCH_DIR (default BUILD/tests/bench-logs/ckptjob).
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
MPIEXEC=$top_builddir/tools/mpiexec/mpiexec
PROG=$top_builddir/tests/mpi/ckpt_job
DIR=${CKPT_BENCH_DIR:-$top_builddir/tests/bench-logs/ckptjob}
export KUMI_CKPT_RESTART_PROGRAM=$top_builddir/components/ckpt/image/kumi_restart
export KUMI_COMPONENT_PATH=$(ls -d "$top_builddir"/components/*/*/.libs 2>/dev/null | tr '\n' ':')
export KUMI_INTERNAL_NO_PKGLIBDIR=1
# under make bench (KUMI_BENCH_OUT set): $KUMI_BENCH_OUT/ckpt.kumi.status, ok or why not
status() { [ -n "${KUMI_BENCH_OUT:-}" ] && echo "$1" > "$KUMI_BENCH_OUT/ckpt.kumi.status"; return 0; }
[ -x "$PROG" ] || make -C "$top_builddir/tests" mpi/ckpt_job > /dev/null 2>&1
[ -x "$PROG" ] || { echo "build the test programs first (make -C BUILD/tests check-programs)"; status "not built"; exit 1; }
mkdir -p "$DIR"
NP=4
now() { date +%s.%N; }
wait_for() { local i; for ((i = 0; i < $3 * 100; i++)); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.01; done; return 1; }
dd_rate() { LC_ALL=C dd "$@" 2>&1 | awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "copied,") { s = $(i + 1) } ; b = $1 } END { printf "%.2f", b / s / 1e9 }'; }
echo "ckpt: $NP ranks, images on $(df -h "$DIR" | awk 'NR == 2 { print $1 }'), $(uname -r)"
printf "%8s %10s | %9s %9s | %9s %9s\n" "MiB/rank" "images MB" "ckpt GB/s" "dd GB/s" "ckpt s" "restart s"
for mb in ${CKPT_BENCH_SIZES:-10 100}; do
    rm -rf "$DIR/c"; mkdir -p "$DIR/c"
    "$MPIEXEC" --checkpoint-and-stop --ckpt-dir "$DIR/c" -n $NP "$PROG" 100000 mem "$mb" > "$DIR/run.log" 2>&1 < /dev/null &
    pid=$!
    wait_for "$DIR/run.log" "iteration 10" 120 && kill -QUIT $pid
    wait $pid
    line=$(grep "checkpoint 1 written" "$DIR/run.log") || { tail "$DIR/run.log"; status "no checkpoint written at $mb MiB"; exit 1; }
    imb=$(echo "$line" | sed 's/.*images, \([0-9.]*\) MB, \([0-9.]*\) s/\1/'); cs=$(echo "$line" | sed 's/.* MB, \([0-9.]*\) s/\1/')
    rate=$(awk -v b="$imb" -v s="$cs" 'BEGIN { printf "%.2f", b / 1e3 / s }')
    rm -f "$DIR/dd"; dr=$(dd_rate if=/dev/zero of="$DIR/dd" bs=1M count=$(awk -v b="$imb" 'BEGIN { printf "%d", b / 1.048576 + 1 }')); rm -f "$DIR/dd"
    t0=$(now)
    "$MPIEXEC" --restart "$DIR/c" > "$DIR/rs.log" 2>&1 < /dev/null &
    rp=$!
    wait_for "$DIR/rs.log" "^iteration" 120 || { kill -KILL $rp 2>/dev/null; tail "$DIR/rs.log"; status "restart at $mb MiB failed"; exit 1; }
    t1=$(now)
    kill -KILL $rp 2>/dev/null; wait $rp 2>/dev/null
    printf "%8s %10s | %9s %9s | %9s %9s\n" "$mb" "$imb" "$rate" "$dr" "$cs" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
done
rm -rf "$DIR/c"
# the cost of --ckpt without a request (calls counted, lock off): runs with and
# without it interleaved, CKPT_BENCH_REPS (5) of each, medians and the ratio
# (target: under 1 %)
reps=${CKPT_BENCH_REPS:-5} iters=${CKPT_BENCH_ITERS:-2000}
: > "$DIR/plain.t"; : > "$DIR/ckpt.t"
for ((i = 0; i < reps; i++)); do
    for opt in "" --ckpt; do
        t0=$(now); "$MPIEXEC" $opt -n $NP "$PROG" "$iters" > /dev/null 2>&1 < /dev/null; t1=$(now)
        f=plain; [ -n "$opt" ] && f=ckpt
        awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' >> "$DIR/$f.t"
    done
done
med() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mp=$(med "$DIR/plain.t"); mc=$(med "$DIR/ckpt.t")
printf "run of %d iterations, median of %d: plain %.3f s, --ckpt %.3f s, ratio %.3f\n" "$iters" "$reps" "$mp" "$mc" \
    "$(awk -v a="$mp" -v b="$mc" 'BEGIN { printf "%.3f", b / a }')"
status ok
