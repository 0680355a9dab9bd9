#!/bin/bash
# RMA with device memory through accel/cuda and the stand-in driver
# (tests/scripts/lib/fakecuda.c: a host load or store through a device
# address crashes): tests/mpi/gpu_rma_staging (device windows in the
# separate model, device origin / compare / result buffers, fence, PSCW,
# lock, lock_all + Win_sync, a dynamic window) at 2 and 3 ranks, on the
# direct path, with active messages only (KUMI_BASE_RMA_DIRECT=0), with
# the progress thread and with p2p/ofi's remote writes and reads.
set -u
. "$(dirname "$0")/lib/fakecuda.sh"
fakecuda_setup gpu_rma_staging
run() {   # what np extra-mpiexec-arguments...
    local what=$1 np=$2; shift 2
    if (cd "$TESTBIN" && "$MPIEXEC" --timeout 120 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" "$@" -n "$np" \
        ./gpu_rma_staging) > "$TMP/run" 2>&1; then
        ok "gpu_rma_staging at $np ranks, $what"
    else
        fail "gpu_rma_staging at $np ranks, $what:"; sed 's/^/    /' "$TMP/run" | tail -15
    fi
}
run "direct path" 2
run "direct path" 3
run "active messages only" 2 -x KUMI_BASE_RMA_DIRECT=0
run "active messages only" 3 -x KUMI_BASE_RMA_DIRECT=0
run "progress thread" 3 -x KUMI_BASE_SCHED_ENGINE=thread
# Put / Get as p2p/ofi remote writes and reads into the registered public copies (where ofi is built)
if ls "$top_builddir"/components/p2p/ofi/.libs/*.so > /dev/null 2>&1; then
    run "p2p/ofi transport RMA" 3 -x MPI_COMPONENTS=p2p=self,ofi -x KUMI_BASE_RMA_DIRECT=0 \
        --param 'p2p_ofi_provider=tcp;ofi_rxm'
else
    echo "skip: p2p/ofi not built"
fi
[ "$failures" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$failures check(s) failed"; exit 1
