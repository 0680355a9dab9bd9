#!/bin/bash
# The GPU test set (tests/gpu/*.cu, ./check.sh --gpu) run on the CPU, so that
# its programs and the paths of Kumi they take are exercised where no GPU is:
# each program compiled as host C++ (kumi_gpu_cpu.h, tests/gpu/cpu/: the
# CUDA runtime calls it makes, on the stand-in driver with FAKECUDA_DEVRW=1),
# its launches rewritten into host threads (K<<<g, b>>>(a) and
# cudaLaunchCooperativeKernel: one thread per CUDA thread, at most
# GPUCPU_BLOCK per block; a driver call made meanwhile that would wait for a
# running kernel on a GPU fails the program), and run as run-gpu.sh runs them
# (tests/gpu/runs.list); the benchmark (bench_gpu.cu, through kumi-gpucc
# --relaunch as run-gpu.sh builds it) at 2 ranks with KUMI_BENCH_GPU_SMALL=1,
# its device-side, relaunched and host-side stencils compared bit for bit.
# What this cannot show: the GPU's memory ordering, timings, CUDA IPC between
# processes on a real device.
set -u
. "$(dirname "$0")/lib/fakecuda.sh"
fakecuda_setup
INC=(-I"$top_srcdir/tests/gpu/cpu" -I"$top_srcdir/tests/gpu" -I"$top_builddir/framework/include"
     -I"$top_srcdir/framework/include")
LIBS=(-L"$top_builddir/framework/.libs" -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi -ldl)
progs="gpu_stencil gpu_allreduce gpu_fail gpu_ring gpu_rma bench_gpu"
for p in $progs; do
    src=$top_srcdir/tests/gpu/$p.cu
    if [ $p = bench_gpu ]; then   # as run-gpu.sh builds it: its kernels relaunched too
        python3 "$top_srcdir/tools/kumi-gpucc" --relaunch "$src" -o "$TMP/$p.rl.cu" 2> "$TMP/err" ||
            { fail "kumi-gpucc --relaunch $p.cu: $(cat "$TMP/err")"; continue; }
        src=$TMP/$p.rl.cu
    fi
    # the launches: K<<<g, b>>>(args); and cudaLaunchCooperativeKernel((void *)K, g, b, args, 0, 0)
    python3 - "$src" "$TMP/$p.cc" <<'PY' || { fail "$p.cu: the rewrite of its launches"; continue; }
import re, sys
s = open(sys.argv[1]).read()
n1 = len(re.findall(r'<<<', s))
s, k1 = re.subn(r'(\w+)<<<\s*([^,>]+?)\s*,\s*([^>]+?)\s*>>>\s*\((.*)\);',
                r'KUMI_CPU_KERNEL(\1, \2, \3, (\4));', s)
s, k2 = re.subn(r'cudaLaunchCooperativeKernel\(\(void \*\)(\w+),', r'kumi_cpu_coop(\1,', s)
if k1 != n1 or 'cudaLaunchCooperativeKernel' in s:
    sys.exit("a launch the rewrite does not know")
open(sys.argv[2], 'w').write(s)
PY
    if ${CXX:-g++} -std=c++17 -O1 -Wall -Werror -pthread -x c++ -include kumi_gpu_cpu.h \
        "${INC[@]}" "$TMP/$p.cc" -x none -o "$TMP/$p" "${LIBS[@]}" 2> "$TMP/err"; then
        ok "$p.cu builds for the CPU"
    else
        fail "$p.cu does not build for the CPU:"; head -20 "$TMP/err" | sed 's/^/    /'
    fi
done
run() { # NAME NP PROG [ENV...]
    local name=$1 np=$2 prog=$3
    shift 3
    local envs=() e
    for e in "$@"; do envs+=(-x "$e"); done
    [ -x "$TMP/$prog" ] || { fail "$name: not built"; return; }
    if (cd "$TMP" && "$MPIEXEC" --timeout 120 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" -x FAKECUDA_DEVRW=1 \
        "${envs[@]}" -n "$np" "./$prog") > "$TMP/run" 2>&1; then
        ok "$name: $(tail -1 "$TMP/run")"
        case $name in bench*) sed 's/^/    /' "$TMP/run" ;; esac
    else
        fail "$name:"; tail -15 "$TMP/run" | sed 's/^/    /'
    fi
}
while read -r name np prog <&3; do
    case $name in ''|'#'*|rl_kernels*) continue ;; esac
    run "$name" "$np" "$prog"
done 3< "$top_srcdir/tests/gpu/runs.list"
run bench_gpu_2 2 bench_gpu KUMI_BENCH_GPU_SMALL=1
# the stencil with a rank's thread spinning while its kernel runs, as CUDA's
# cudaDeviceSynchronize does (GPUCPU_SPIN, tests/gpu/cpu/cuda_runtime.h): the
# proxy turns that wait into a sleep (accel 1.4) and runs off the rank's core
# (here 0.2 ms a step; 4-5 ms with neither, as on the H200 before)
run gpu_stencil_2_spin 2 gpu_stencil GPUCPU_SPIN=1
[ "$failures" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$failures check(s) failed"; exit 1
