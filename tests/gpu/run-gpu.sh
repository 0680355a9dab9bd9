#!/bin/bash
# The GPU test set (./check.sh --gpu): builds tests/gpu/*.cu with nvcc against
# the installed Kumi and runs them on this machine's NVIDIA GPU(s) (several
# ranks may share one).  Ends with "N passed, N failed"; skips, saying why,
# where nvcc, the NVIDIA driver or a GPU is missing.
#   run-gpu.sh --bench    the benchmark only (make bench-gpu): tests/gpu/bench_gpu.cu at 2 ranks
#   run-gpu.sh --build    build the programs only (needs nvcc, no GPU): a bundle
#                         for a GPU machine (device-run.sh --bundle)
# GPURUN_PREBUILT=1 keeps programs already built (a bundle's); GPURUN_NVCC_FLAGS
# (default: machine code for sm_90 and sm_75, PTX for later chips).
# The programs build in parallel (nvcc, one per core); each run is limited to
# GPURUN_TIMEOUT seconds (default 120), the benchmark to twice that.  A
# whole run on a GPU machine, the build of Kumi included: tests/gpu/device-run.sh.
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
[ -n "$NVCC" ] || [ "${GPURUN_PREBUILT:-0}" = 1 ] || skip "nvcc not found (in PATH or /usr/local/cuda/bin)"
[ -n "$NVCC" ] || NVCC=nvcc
build_only=0
[ "${1:-}" = --build ] && build_only=1
why=$("$PREFIX/bin/kumi_info" --parsable 2>/dev/null | sed -n 's/^component:accel:cuda:reason://p')
st=$("$PREFIX/bin/kumi_info" --parsable 2>/dev/null | sed -n 's/^component:accel:cuda:status://p')
[ "$st" = available ] || [ $build_only = 1 ] || skip "accel/cuda is ${st:-missing}: ${why:-no reason}"
pass=0 failc=0
# Ranks that share one GPU: without MPS their kernels take turns in time
# slices, and a persistent kernel waiting for another rank's message waits
# for the other's slice.  A private MPS daemon (where nvidia-cuda-mps-control
# is; GPURUN_MPS=0: none) lets them run side by side; it ends with this script.
mps="none (GPURUN_MPS=0)"
if [ $build_only = 0 ] && [ "${GPURUN_MPS:-1}" = 1 ] && [ -z "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
    MPSCTL=$(PATH=$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin command -v nvidia-cuda-mps-control || true)
    mps="none (no nvidia-cuda-mps-control: ranks sharing a GPU take turns)"
    if [ -n "$MPSCTL" ]; then
        export CUDA_MPS_PIPE_DIRECTORY=/tmp/kumi-mps.$$ CUDA_MPS_LOG_DIRECTORY=/tmp/kumi-mps.$$
        mkdir -p "$CUDA_MPS_PIPE_DIRECTORY"
        if "$MPSCTL" -d; then
            mps="a private daemon ($MPSCTL)"
            trap 'echo quit | "$MPSCTL"; sleep 1; rm -rf "$CUDA_MPS_PIPE_DIRECTORY"' EXIT
        else
            mps="none (nvidia-cuda-mps-control -d failed)"
            unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
        fi
    fi
fi
GPUCC=$PREFIX/bin/kumi-gpucc
[ -f "$GPUCC" ] || GPUCC=$top/tools/kumi-gpucc
limit=${GPURUN_TIMEOUT:-120}
jobs_max=${GPURUN_JOBS:-$(nproc 2> /dev/null || echo 4)}
build_one() { # FILE: builds $out/NAME, or leaves $out/NAME.fail with the reason
    local f=$1 b src
    b=$(basename "$f" .cu)
    src=$f
    rm -f "$out/$b.fail"
    [ "${GPURUN_PREBUILT:-0}" = 1 ] && [ -x "$out/$b" ] && return
    case $b in
    bench_gpu|rl_kernels)
        if ! python3 "$GPUCC" --relaunch "$f" -o "$out/$b.relaunch.cu" > "$out/$b.build.log" 2>&1; then
            echo "kumi-gpucc --relaunch $b.cu" > "$out/$b.fail"; return
        fi
        src=$out/$b.relaunch.cu ;;
    esac
    # shellcheck disable=SC2086
    "$NVCC" -O2 ${GPURUN_NVCC_FLAGS:--gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=[sm_75,compute_75]} -I"$PREFIX/include" -I"$top/tests/gpu" -I"$top/tests/gpu/relaunch" -o "$out/$b" "$src" \
        -L"$PREFIX/lib" -Xlinker -rpath,"$PREFIX/lib" -lmpi >> "$out/$b.build.log" 2>&1 || echo "nvcc" > "$out/$b.fail"
}
t_build=$(date +%s)
for f in "$top"/tests/gpu/*.cu "$top"/tests/gpu/relaunch/rl_kernels.cu; do
    if [ "${1:-}" = --bench ]; then     # the benchmark only, unless built already
        [ "$(basename "$f")" != bench_gpu.cu ] || [ "$out/bench_gpu" -nt "$f" ] && continue
    fi
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 0.2; done
    build_one "$f" &
done
wait
for f in "$out"/*.fail; do
    [ -e "$f" ] || continue
    b=$(basename "$f" .fail)
    echo "FAIL: $b does not build ($(cat "$f")):"; tail -15 "$out/$b.build.log" | sed 's/^/    /'
    failc=$((failc+1))
done
echo "# built in $(( $(date +%s) - t_build )) s with $NVCC ($("$NVCC" --version 2> /dev/null | tail -2 | head -1))"
if [ $build_only = 1 ]; then echo "$((failc == 0)) passed, $((failc > 0)) failed (build only)"; [ "$failc" -eq 0 ]; exit; fi
echo "# MPS: $mps"
# What each thread of a job's processes (those whose command line holds
# PATTERN) is doing: pid, tid, name, state, kernel wait channel, system call
# number (x86-64: 7 poll, 16 ioctl, 24 sched_yield, 35 nanosleep, 61 wait4,
# 202 futex, 230 clock_nanosleep, 271 ppoll; "running": none).  Taken by a
# watcher a few seconds before a run's limit, so that a hang says where.
threads_of() { # PATTERN
    local d t
    for d in /proc/[0-9]*; do
        [ "$d" = "/proc/$$" ] && continue
        tr '\0' ' ' < "$d/cmdline" 2> /dev/null | grep -qF -- "$1" || continue
        for t in "$d"/task/*; do
            echo "${d#/proc/} ${t##*/} $(cat "$t/comm" 2> /dev/null) $(sed 's/.*) //' "$t/stat" 2> /dev/null | cut -d' ' -f1)" \
                "wchan=$(cat "$t/wchan" 2> /dev/null) syscall=$(cut -d' ' -f1 "$t/syscall" 2> /dev/null)"
        done
    done
}
watch_start() { # SECONDS PATTERN FILE
    rm -f "$3"
    ( sleep "$1"; threads_of "$2" > "$3" ) > /dev/null 2>&1 &    # (no pipe held open by its sleep)
    watcher=$!
}
watch_end() { # FILE: stops the watcher; prints what it took, if it did
    kill "$watcher" 2> /dev/null
    wait "$watcher" 2> /dev/null
    if [ -s "$1" ]; then
        echo "    (its processes' threads near the limit: pid tid name state wchan syscall)"
        head -60 "$1" | awk '{ print "    : " $0 }'
    fi
}
run() { # NAME NP PROG
    local log=$out/$1.log t0 rc
    t0=$(date +%s)
    watch_start $((limit > 6 ? limit - 3 : limit)) "$out/$3" "$log.threads"
    timeout -k 5 "$limit" "$PREFIX/bin/mpiexec" --oversubscribe --timeout "$limit" -n "$2" "$out/$3" > "$log" 2>&1
    rc=$?
    watch_end "$log.threads"
    if [ $rc = 0 ]; then
        echo "PASS: $1 ($(( $(date +%s) - t0 )) s)"; pass=$((pass+1))
    elif [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && [ "${mps#a private}" != "$mps" ]; then
        # failed under MPS: once more without it (a client finds no daemon there), to tell the two apart
        echo "    (under MPS: exit $rc, $(( $(date +%s) - t0 )) s; its last lines:)"
        tail -8 "$log" | awk '{ print "    | " $0 }'
        t0=$(date +%s)
        watch_start $((limit > 6 ? limit - 3 : limit)) "$out/$3" "$log.threads"
        CUDA_MPS_PIPE_DIRECTORY=/nonexistent-kumi-mps timeout -k 5 "$limit" "$PREFIX/bin/mpiexec" --oversubscribe \
            --timeout "$limit" -n "$2" "$out/$3" > "$log" 2>&1
        rc=$?
        watch_end "$log.threads"
        if [ $rc = 0 ]; then echo "PASS: $1 (without MPS; it failed under MPS) ($(( $(date +%s) - t0 )) s)"; pass=$((pass+1))
        else echo "FAIL: $1 (under MPS and without; exit $rc, $(( $(date +%s) - t0 )) s)"; failc=$((failc+1)); fi
    else
        echo "FAIL: $1 (exit $rc, $(( $(date +%s) - t0 )) s)"; failc=$((failc+1))
    fi
    tail -20 "$log" | awk '{ print "    " $0 }'    # (a last line without its newline too)
}
if [ "${1:-}" = --bench ]; then
    [ -x "$out/bench_gpu" ] || exit 1
    watch_start $((2 * limit - 3)) "$out/bench_gpu" "$out/bench_gpu.threads"
    timeout -k 5 $((2 * limit)) "$PREFIX/bin/mpiexec" --timeout $((2 * limit)) -n 2 "$out/bench_gpu" 2>&1 | tee "$out/bench_gpu.log"
    rc=${PIPESTATUS[0]}
    watch_end "$out/bench_gpu.threads" | sed 's/^    /# /'
    if [ "$rc" != 0 ] && [ "${mps#a private}" != "$mps" ]; then
        echo "# (it failed under MPS, exit $rc: again without MPS)"
        CUDA_MPS_PIPE_DIRECTORY=/nonexistent-kumi-mps timeout -k 5 $((2 * limit)) "$PREFIX/bin/mpiexec" --timeout $((2 * limit)) \
            -n 2 "$out/bench_gpu" 2>&1 | tee "$out/bench_gpu.log"
        rc=${PIPESTATUS[0]}
    fi
    exit "$rc"
fi
while read -r name np prog <&3; do
    case $name in ''|'#'*) continue ;; esac
    run "$name" "$np" "$prog"
done 3< "$top/tests/gpu/runs.list"
echo "$pass passed, $failc failed"
[ "$failc" -eq 0 ]
