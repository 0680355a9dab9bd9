#!/bin/bash
# The GPU test set (./check.sh --gpu): builds tests/gpu/*.cu with nvcc against
# the installed Kumi and runs them on this machine's NVIDIA GPU(s) (several
# ranks may share one).  Ends with "N passed, N failed"; skips, saying why,
# where nvcc, the NVIDIA driver or a GPU is missing.
#   run-gpu.sh --bench    the benchmark only (make bench-gpu): tests/gpu/bench_gpu.cu at 2 ranks
# bench_gpu.cu and relaunch/rl_kernels.cu go through kumi-gpucc --relaunch
# first: their kernels run persistent and relaunched (README, "kumi-gpucc").
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX=${PREFIX:-$top/_install}
BUILDDIR=${BUILDDIR:-$top/_build}
out=$BUILDDIR/tests/gpu
mkdir -p "$out"
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
skip() { echo "SKIP: GPU test set: $*"; echo "0 passed, 0 failed (skipped)"; exit 0; }
[ -n "$NVCC" ] || skip "nvcc not found (in PATH or /usr/local/cuda/bin)"
why=$("$PREFIX/bin/kumi_info" --parsable 2>/dev/null | sed -n 's/^component:accel:cuda:reason://p')
st=$("$PREFIX/bin/kumi_info" --parsable 2>/dev/null | sed -n 's/^component:accel:cuda:status://p')
[ "$st" = available ] || skip "accel/cuda is ${st:-missing}: ${why:-no reason}"
pass=0 failc=0
GPUCC=$PREFIX/bin/kumi-gpucc
[ -f "$GPUCC" ] || GPUCC=$top/tools/kumi-gpucc
for f in "$top"/tests/gpu/*.cu "$top"/tests/gpu/relaunch/rl_kernels.cu; do
    b=$(basename "$f" .cu)
    src=$f
    case $b in
    bench_gpu|rl_kernels)
        if ! python3 "$GPUCC" --relaunch "$f" -o "$out/$b.relaunch.cu"; then
            echo "FAIL: kumi-gpucc --relaunch $b.cu"; failc=$((failc+1)); continue
        fi
        src=$out/$b.relaunch.cu ;;
    esac
    if ! "$NVCC" -O2 -I"$PREFIX/include" -I"$top/tests/gpu" -I"$top/tests/gpu/relaunch" -o "$out/$b" "$src" \
            -L"$PREFIX/lib" -Xlinker -rpath,"$PREFIX/lib" -lmpi; then
        echo "FAIL: $b does not build"; failc=$((failc+1))
    fi
done
run() { # NAME NP PROG
    local log=$out/$1.log
    if timeout 300 "$PREFIX/bin/mpiexec" --oversubscribe -n "$2" "$out/$3" > "$log" 2>&1; then
        echo "PASS: $1"; pass=$((pass+1))
    else
        echo "FAIL: $1"; failc=$((failc+1))
    fi
    sed 's/^/    /' "$log" | tail -20
}
if [ "${1:-}" = --bench ]; then
    "$PREFIX/bin/mpiexec" -n 2 "$out/bench_gpu" 2>&1 | tee "$out/bench_gpu.log"
    exit "${PIPESTATUS[0]}"
fi
run gpu_stencil_2 2 gpu_stencil
run gpu_stencil_4 4 gpu_stencil
run gpu_allreduce_2 2 gpu_allreduce
run gpu_allreduce_4 4 gpu_allreduce
run gpu_fail_2 2 gpu_fail
run gpu_ring_2 2 gpu_ring
run gpu_ring_4 4 gpu_ring
run gpu_rma_2 2 gpu_rma
run gpu_rma_3 3 gpu_rma
# kumi-gpucc --relaunch: the same kernels persistent and relaunched, compared
run rl_kernels_2 2 rl_kernels
run rl_kernels_4 4 rl_kernels
echo "$pass passed, $failc failed"
[ "$failc" -eq 0 ]
