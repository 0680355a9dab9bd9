#!/bin/bash
# gpu-coll-ab: interleaved A/B timing of blocking MPI_Bcast / MPI_Reduce / MPI_Allreduce on device
# buffers with the stand-in driver (tests/scripts/lib/fakecuda.c: "device" copies are memcpy on the
# CPU, so this measures the host side of the staging, not a GPU): A stages whole
# (KUMI_BASE_ACCEL_COLL_PIPELINE=0), B runs the pipelined pieces (the build's defaults, or EXTRA_B).
# Runs A, B, A, B ... ROUNDS times; prints per op the median of the rounds (each the median of REPS
# calls) in ms and B / A, and rank 0's peak RSS.  FORM=nb: the non-blocking calls + MPI_Wait (the
# pipelined side one schedule of pieces; VERBOSE=1 prints, from B's last round, how many copies
# each run made while the pieces' messages were in flight: whole staging makes none).
# Usage: tests/bench/gpu-coll-ab.sh BUILD [ROUNDS (5)] [BYTES (67108864)] [NP (2)] [REPS (5)]
set -u
here=$(cd "$(dirname "$0")" && pwd)
B=$1 R=${2:-5} S=${3:-67108864} NP=${4:-2} REPS=${5:-5}
O=$(mktemp -d) || exit 1
trap 'rm -rf "$O"' EXIT
${CC:-cc} -shared -fPIC -O1 -o "$O/libcuda.so.1" "$here/../scripts/lib/fakecuda.c" -lpthread || exit 1
${CC:-cc} -std=gnu11 -O2 -I"$B/framework/include" -I"$here/../../framework/include" -o "$O/gcb" \
    "$here/gpu_coll_bench.c" -L"$B/framework/.libs" -Wl,-rpath,"$B/framework/.libs" -lmpi -ldl || exit 1
run() { # SIDE ROUND
    local extra=()
    [ "$1" = A ] && extra=(-x KUMI_BASE_ACCEL_COLL_PIPELINE=0)
    # shellcheck disable=SC2206
    [ "$1" = B ] && [ -n "${EXTRA_B:-}" ] && extra=($EXTRA_B)
    KUMI_INTERNAL_NO_PKGLIBDIR=1 KUMI_COMPONENT_PATH=$(ls -d "$B"/components/*/*/.libs | tr '\n' ':') \
    LD_LIBRARY_PATH=$B/framework/.libs timeout 300 "$B/tools/mpiexec/mpiexec" -x KUMI_ACCEL_CUDA_LIBRARY="$O/libcuda.so.1" \
        -x GCB_FORM="${FORM:-}" ${VERBOSE:+-x KUMI_VERBOSE=2} "${extra[@]}" -n "$NP" "$O/gcb" "$S" "$REPS" > "$O/out.$1.$2" 2>&1
}
for ((i = 0; i < R; i++)); do run A $i; run B $i; done
[ -n "${VERBOSE:-}" ] && grep -h "while messages were in flight" "$O/out.B.$((R - 1))" | sort | uniq -c | sort -rn | head -6
for op in bcast reduce allreduce maxrss; do
    a=$(cat "$O"/out.A.* | awk -v k=$op '$1 == k { print $2 }' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    b=$(cat "$O"/out.B.* | awk -v k=$op '$1 == k { print $2 }' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    if [ "$op" = maxrss ]; then echo "peak RSS of rank 0: whole staging ${a} KB, pipelined ${b} KB"
    else awk -v o=$op -v a="$a" -v b="$b" 'BEGIN { printf "%-10s whole %8.2f ms  pipelined %8.2f ms  B/A %.2f\n", o, a * 1e3, b * 1e3, b / a }'; fi
done
