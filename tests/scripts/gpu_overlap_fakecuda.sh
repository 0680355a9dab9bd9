#!/bin/bash
# Device staging overlapped with the transfer (framework/request/req_accel.c)
# with the stand-in driver (tests/scripts/lib/fakecuda.c: asynchronous copies
# run only when their event is queried or waited for): tests/mpi/gpu_overlap
# (the send returns before its copies are over; sizes around chunk
# boundaries, order, truncation, many messages in flight, a cancelled send;
# every byte checked) at 2 and 3 ranks over shared memory and over tcp, with
# chunk sizes 256 KiB, 1000003 B (odd) and 1 MiB, with the progress thread,
# and at 1 rank.  The log (KUMI_VERBOSE=2) must show sends in pieces and
# device-to-device messages copied by their receivers through IPC (the
# stand-in opens the sender's memfd through /proc: one copy).  With IPC
# failing (FAKECUDA_NOIPC=1: cuIpcOpenMemHandle fails) the messages go in
# pieces after all, and receives copy pieces to the device while the rest
# arrives.  With kumi_base_accel_chunk=0: no pieces, the same bytes.
# Receivers keep peers' allocations open (accel_cuda_ipc_cache): the log
# must show handles reused; with accel_cuda_ipc_cache=0 none is, and the
# bytes are the same (section 7 of the program sends from buffers allocated
# again, which a cache keyed by address would read stale).
set -u
. "$(dirname "$0")/lib/fakecuda.sh"
fakecuda_setup gpu_overlap
run() { # NP CHUNK [mpiexec args...]   (chunk 0: the program's sizes as for 256 KiB)
    local np=$1 c=$2; shift 2
    (cd "$TESTBIN" && "$MPIEXEC" --timeout 180 -x KUMI_VERBOSE=2 -x KUMI_ACCEL_CUDA_LIBRARY="$TMP/libcuda.so.1" \
        -x KUMI_BASE_ACCEL_CHUNK=$c "$@" -n "$np" ./gpu_overlap $([ "$c" = 0 ] && echo 262144 sync || echo $c)) > "$TMP/run" 2>&1
}
for a in "2 262144" "3 1000003" "2 1048576 tcp" "3 262144 tcp" "2 262144 thread" "2 262144 noipc" \
         "3 1000003 noipc" "2 262144 nocache"; do
    set -- $a
    extra=()
    [ "${3:-}" = tcp ] && extra=(-x MPI_COMPONENTS=p2p=self,tcp)
    [ "${3:-}" = thread ] && extra=(-x KUMI_BASE_SCHED_ENGINE=thread)
    [ "${3:-}" = noipc ] && extra=(-x FAKECUDA_NOIPC=1)
    [ "${3:-}" = nocache ] && extra=(-x KUMI_ACCEL_CUDA_IPC_CACHE=0)
    what="gpu_overlap at $1 ranks, chunk $2${3:+, $3}"
    if run "$1" "$2" "${extra[@]}"; then
        ps=$(grep -c "go in [0-9]* pieces as they are copied" "$TMP/run")
        dv=$(grep -c "[1-9][0-9]* of [0-9]* bytes from rank [0-9]* went to the device while the message arrived" "$TMP/run")
        ipc=$(grep -c "bytes from rank [0-9]*: one device-to-device copy (IPC)" "$TMP/run")
        ipcs=$(grep -c "copied by the receiver from this device buffer (IPC)" "$TMP/run")
        fb=$(grep -c "could not be opened here (IPC): the message comes through host memory" "$TMP/run")
        op=$(grep -c "accel/cuda: IPC handle of a peer's allocation opened" "$TMP/run")
        ru=$(grep -c "accel/cuda: IPC handle of a peer's allocation reused" "$TMP/run")
        if [ "${3:-}" = noipc ]; then good=$((ps > 0 && dv > 0 && fb > 0 && ipc == 0))
        elif [ "${3:-}" = nocache ]; then good=$((ps > 0 && ipc > 0 && ipcs == ipc && fb == 0 && ru == 0 && op == ipc))
        else good=$((ps > 0 && ipc > 0 && ipcs == ipc && fb == 0 && ru > 0 && op + ru == ipc)); fi
        if [ "$good" = 1 ]; then
            ok "$what: bytes right; $ps sends in pieces, $ipc by IPC ($op handles opened, $ru reused), $fb IPC refused, $dv receives copied to the device as pieces arrived"
        else
            fail "$what: bytes right, but $ps sends in pieces, $ipc receives by IPC ($ipcs senders told; $op handles opened, $ru reused), $fb IPC refused, $dv receives copied while arriving"
            grep "accel" "$TMP/run" | head -5 | sed 's/^/    /'
        fi
    else
        fail "$what:"; grep -v "^kumi.*accel: [0-9]" "$TMP/run" | sed 's/^/    /' | tail -15
    fi
done
# to oneself (p2p/self: no rendezvous) the copy is whole
if run 1 262144; then ok "gpu_overlap at 1 rank: bytes right"
else fail "gpu_overlap at 1 rank:"; sed 's/^/    /' "$TMP/run" | tail -15; fi
if run 2 0; then
    grep -q "pieces as they are copied" "$TMP/run" && fail "kumi_base_accel_chunk=0: a send went in pieces" ||
        ok "gpu_overlap with kumi_base_accel_chunk=0: no pieces, bytes right"
else
    fail "gpu_overlap with kumi_base_accel_chunk=0:"; sed 's/^/    /' "$TMP/run" | tail -15
fi
[ "$failures" -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$failures check(s) failed"; exit 1
