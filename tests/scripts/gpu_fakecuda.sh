#!/bin/bash
# accel/cuda with a stand-in driver (tests/scripts/lib/fakecuda.c, named by
# KUMI_ACCEL_CUDA_LIBRARY) whose device memory the host cannot touch:
# kumi_info shows the component available ("1 CUDA device") or why not ("no
# CUDA device"); gpu_staging moves device buffers through MPI_Send / MPI_Recv /
# MPI_Sendrecv(_replace) at 2 and 3 ranks, gpu_coll_staging every collective
# at 1-4 ranks (a call that touched device memory without staging it would
# crash), gpu_sendrecv MPI_Sendrecv(_replace) by IPC or in pieces.  Without the variable, the real
# libcuda.so.1 is looked for (none here: "libcuda.so.1 not found").
set -u
. "$(dirname "$0")/lib/fakecuda.sh"
fakecuda_setup gpu_staging

KUMI_ACCEL_CUDA_LIBRARY=$TMP/libcuda.so.1 "$KUMI_INFO" --parsable > "$TMP/p" 2>&1
grep -q '^component:accel:cuda:status:available$' "$TMP/p" && ok "kumi_info: accel/cuda available with a driver" ||
    { fail "kumi_info: accel/cuda not available with the stand-in driver"; grep accel "$TMP/p"; }
grep -q '^component:accel:cuda:note:1 CUDA device$' "$TMP/p" && ok "kumi_info: ... says 1 CUDA device" ||
    fail "kumi_info: no '1 CUDA device' reason"
FAKECUDA_NODEV=1 KUMI_ACCEL_CUDA_LIBRARY=$TMP/libcuda.so.1 "$KUMI_INFO" --parsable > "$TMP/p0" 2>&1
grep -q '^component:accel:cuda:reason:no CUDA device$' "$TMP/p0" && ok "kumi_info: without devices: 'no CUDA device'" ||
    { fail "kumi_info: no 'no CUDA device' reason"; grep accel "$TMP/p0"; }
KUMI_ACCEL_CUDA_LIBRARY=$TMP/nowhere/libcuda.so.1 "$KUMI_INFO" --parsable > "$TMP/p1" 2>&1
grep -q '^component:accel:cuda:reason:.*libcuda.so.1 not found' "$TMP/p1" && ok "kumi_info: a missing driver is named" ||
    { fail "kumi_info: missing driver not named"; grep accel "$TMP/p1"; }

for np in 2 3; do
    if (cd "$TESTBIN" && "$MPIEXEC" --timeout 120 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" -n $np ./gpu_staging) > "$TMP/run" 2>&1; then
        ok "gpu_staging at $np ranks: device buffers staged"
    else
        fail "gpu_staging at $np ranks:"; sed 's/^/    /' "$TMP/run" | tail -15
    fi
done
# every collective on device buffers (host result = device result), 1 to 4 ranks
[ -x "$TESTBIN/gpu_coll_staging" ] || { echo "FAIL: no $TESTBIN/gpu_coll_staging (make check-programs)"; exit 1; }
for np in 1 2 3 4; do
    if (cd "$TESTBIN" && "$MPIEXEC" --timeout 180 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" -n $np ./gpu_coll_staging) > "$TMP/run" 2>&1; then
        ok "gpu_coll_staging at $np ranks: collectives on device buffers"
    else
        fail "gpu_coll_staging at $np ranks:"; sed 's/^/    /' "$TMP/run" | tail -15
    fi
done
# large device buffers in pipelined chunks (asynchronous copies the stand-in defers until an event
# is waited for): bytes around chunk boundaries, and the pipeline was used (async copies counted)
[ -x "$TESTBIN/gpu_pipeline" ] || { echo "FAIL: no $TESTBIN/gpu_pipeline (make check-programs)"; exit 1; }
for a in "2 262144" "3 1000003" "2 1048576"; do
    set -- $a
    rm -f "$TMP/async"
    if (cd "$TESTBIN" && "$MPIEXEC" --timeout 120 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" \
        -x KUMI_BASE_ACCEL_CHUNK=$2 -x FAKECUDA_ASYNC_COUNT="$TMP/async" -n $1 ./gpu_pipeline $2) > "$TMP/run" 2>&1; then
        if awk '$1 > 0 && $2 > 0 { n++ } END { exit !(n == '"$1"') }' "$TMP/async" 2>/dev/null; then
            ok "gpu_pipeline at $1 ranks, chunk $2: bytes right, asynchronous copies used by every rank"
        else
            fail "gpu_pipeline at $1 ranks, chunk $2: no asynchronous copies counted: $(tr '\n' ' ' < "$TMP/async" 2>/dev/null)"
        fi
    else
        fail "gpu_pipeline at $1 ranks, chunk $2:"; sed 's/^/    /' "$TMP/run" | tail -15
    fi
done
rm -f "$TMP/async"
if (cd "$TESTBIN" && "$MPIEXEC" --timeout 120 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" -x KUMI_BASE_ACCEL_CHUNK=0 \
    -x FAKECUDA_ASYNC_COUNT="$TMP/async" -n 2 ./gpu_pipeline 262144) > "$TMP/run" 2>&1 &&
    awk '$1 != 0 { bad = 1 } END { exit bad }' "$TMP/async"; then
    ok "gpu_pipeline with kumi_base_accel_chunk=0: synchronous copies only"
else
    fail "gpu_pipeline with kumi_base_accel_chunk=0:"; sed 's/^/    /' "$TMP/run" "$TMP/async" | tail -15
fi
# MPI_Sendrecv / MPI_Sendrecv_replace of device buffers take the paths of MPI_Isend + MPI_Irecv: between
# processes of one host one device-to-device copy by the receiver (IPC), without IPC pieces of the chunk size
# (tests/mpi/gpu_sendrecv counts with the stand-in's fakecuda_stats and the MPI_T counters accel_*)
[ -x "$TESTBIN/gpu_sendrecv" ] || { echo "FAIL: no $TESTBIN/gpu_sendrecv (make check-programs)"; exit 1; }
for a in "2 67108864 ipc 1048576" "3 5000001 ipc 1048576 tcp" "2 67108864 pieces 1048576" "3 9000001 pieces 1000003"; do
    set -- $a
    extra=(-x KUMI_BASE_ACCEL_CHUNK=$4)
    [ "$3" = pieces ] && extra+=(-x FAKECUDA_NOIPC=1)
    [ "${5:-}" = tcp ] && extra+=(-x MPI_COMPONENTS=p2p=self,tcp)
    if (cd "$TESTBIN" && "$MPIEXEC" --timeout 120 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" "${extra[@]}" \
        -n $1 ./gpu_sendrecv $2 $3 $4) > "$TMP/run" 2>&1; then
        ok "gpu_sendrecv at $1 ranks, $2 bytes, $3${5:+ over $5}: as MPI_Isend + MPI_Irecv"
    else
        fail "gpu_sendrecv at $1 ranks, $2 bytes, $3${5:+ over $5}:"; sed 's/^/    /' "$TMP/run" | tail -15
    fi
done
# the CPU device on memory from the component (kind MPIX_GPU_CUDA), a tiny ring too
for a in "1024 4" "2 2"; do
    if (cd "$TESTBIN" && "$MPIEXEC" --timeout 120 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" -x FAKECUDA_DEVRW=1 -n 2 ./gpu_cpu $a cuda) > "$TMP/run" 2>&1; then
        ok "gpu_cpu $a with kind MPIX_GPU_CUDA"
    else
        fail "gpu_cpu $a with kind MPIX_GPU_CUDA:"; sed 's/^/    /' "$TMP/run" | tail -15
    fi
done
# device memory in device-initiated calls: the proxy's copies never wait for the running "kernel"
# (the stand-in counts legacy-stream work, cuCtxSynchronize and frees while it runs); with the
# component refused a stream of its own (FAKECUDA_NOSTREAM) such waits are seen: the check can fail
[ -x "$TESTBIN/gpu_devbuf" ] || { echo "FAIL: no $TESTBIN/gpu_devbuf (make check-programs)"; exit 1; }
# (nocache: no IPC handle kept open, so each message's is closed while the kernel runs: held too)
# (noinline: small messages staged as larger ones, KUMI_BASE_GPU_INLINE=0: the check of the records can fail)
for a in "1" "2" "3" "2 nocache" "2 legacy" "2 noinline"; do
    set -- $a
    extra=() note= arg=${2:-}
    [ "$arg" = nocache ] && arg=
    [ "${2:-}" = legacy ] && extra=(-x FAKECUDA_NOSTREAM=1) note=" (legacy-stream copies: the waits seen)"
    [ "${2:-}" = noinline ] && extra=(-x KUMI_BASE_GPU_INLINE=0) note=" (small messages staged)"
    [ "${2:-}" = nocache ] && extra=(-x KUMI_ACCEL_CUDA_IPC_CACHE=0) note=" (no IPC cache: the closes held)"
    if (cd "$TESTBIN" && "$MPIEXEC" --timeout 120 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" -x FAKECUDA_DEVRW=1 \
        "${extra[@]}" -n $1 ./gpu_devbuf $arg) > "$TMP/run" 2>&1; then
        ok "gpu_devbuf at $1 ranks$note: device buffers from device blocks"
    else
        fail "gpu_devbuf at $1 ranks$note:"; sed 's/^/    /' "$TMP/run" | tail -15
    fi
done
[ "$failures" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$failures check(s) failed"; exit 1
