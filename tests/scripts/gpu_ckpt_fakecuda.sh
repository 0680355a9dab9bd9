#!/bin/bash
# Checkpoints of jobs with device memory in RMA windows (issue 24;
# framework/rma/rma_ckpt.c), with accel/cuda on the stand-in driver
# (tests/scripts/lib/fakecuda.c).  A checkpoint image holds a process's host
# memory: a device window's public copy, not the device memory (its private
# copy), nor the device allocation and context behind the window's base.
# So a checkpoint request (SIGQUIT to mpiexec --ckpt) while a window holds
# device memory is refused, naming the window and why, and the job goes on
# to its right result (tests/mpi/gpu_ckpt_win: fence epochs with MPI_Put
# into device memory, checked from the device every iteration):
#  1. MPI_Win_create on device memory, 2 ranks;
#  2. a dynamic window with device memory attached, 3 ranks.
# No manifest is written, nothing is left in /dev/shm.
set -u
. "$(dirname "$0")/lib/ckpt_frame.sh"
ckpt_setup gpu_ckpt_win gpuckpt
. "$(dirname "$0")/lib/fakecuda.sh"
fakecuda_build

refused() { # NAME NP MODE PATTERN
    local name=$1 np=$2 mode=$3 pat=$4 log=$TMP/$1.log
    mkdir -p "$TMP/ck_$name"
    KUMI_CKPT_LOCK_TIMEOUT=5 KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --ckpt-dir "$TMP/ck_$name" \
        -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" -n "$np" "$PROG" "$mode" 400 > "$log" 2>&1 < /dev/null &
    local pid=$!
    wait_for "$log" "^iteration 10" 120 && sleep 0.1 && kill -QUIT $pid
    wait_for "$log" "$pat" 120 && ok "$name: refused: $(grep -o -- "not written.*" "$log" | head -1 | cut -c1-230)" \
        || { show "$log"; fail "$name: no refusal naming the device window ($pat)"; }
    wait $pid; local rc=$?
    [ $rc -eq 0 ] && [ "$(result "$log")" = ok ] && ok "$name: the job went on to the end, every put right" \
        || { show "$log"; fail "$name: exit $rc, result '$(result "$log")'"; }
    [ ! -e "$TMP/ck_$name/manifest" ] || fail "$name: a manifest was written"
    shm_clean "$name" "$log"
}
refused create 2 create "not written: rank [0-9]*: window devwin: its memory (MPI_Win_create on a device buffer) is device memory (accel/cuda)"
refused attach 3 attach "not written: rank [0-9]*: window devwin: memory attached to it (MPI_Win_attach of a device buffer) is device memory (accel/cuda)"
ckpt_finish
