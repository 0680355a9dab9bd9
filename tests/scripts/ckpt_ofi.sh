#!/bin/bash
# Checkpoints of jobs over p2p/ofi (issue 20; components/p2p/ofi/p2p_ofi_ckpt.c:
# contract 1.7 ckpt_quiet / ckpt_release; the endpoint, queue, address vector,
# domain and fabric closed at the cut and opened again, every registration
# made again with its key, new addresses through the launcher's key
# exchange).  Provider tcp;ofi_rxm, MPI_COMPONENTS=p2p=self,ofi, 4 ranks on
# one host:
#  1. tests/mpi/ckpt_job (p2p with a derived datatype, rendezvous messages of
#     256 KiB every iteration and of 320 KiB left in the unexpected queue: over
#     ofi RTSs whose payload the receiver reads with fi_read, parked at the
#     cut; a pending MPI_Iallreduce, collectives): checkpoint-and-continue
#     twice at random times, then --checkpoint-and-stop at a random time and
#     mpiexec --restart (new ports); the result bit for bit the
#     uninterrupted run's; every rank's p2p/ofi says it released at each
#     checkpoint (KUMI_VERBOSE; how many rendezvous were parked is printed);
#  2. tests/mpi/ckpt_rma (fence and lock/unlock epochs on two windows, whose
#     memory is registered with ofi for remote access, which a KUMI_VERBOSE=2
#     run checks first; KUMI_BASE_RMA_DIRECT=0: puts and gets are fi_write /
#     fi_read with the peers' keys): the same cycle, the windows'
#     registrations made again with their keys;
#  3. provider shm: a checkpoint refused with a message naming p2p/ofi and
#     the p2p components that can be checkpointed without it (see
#     components/p2p/ofi/p2p_ofi_ckpt.c, framework/request/req_ckpt.c), the
#     job going on to its result;
# after every job nothing of it left in /dev/shm.
set -u
. "$(dirname "$0")/lib/ckpt_frame.sh"
ckpt_setup ckpt_job ckptofi
export KUMI_CKPT_RESTART_PROGRAM=$top_builddir/components/ckpt/image/kumi_restart
export MPI_COMPONENTS=p2p=self,ofi KUMI_P2P_OFI_PROVIDER='tcp;ofi_rxm'
NP=4
# ofi with tcp;ofi_rxm, and the windows of ckpt_rma registered with it
KUMI_VERBOSE=2 KUMI_BASE_RMA_DIRECT=0 "$MPIEXEC" --timeout 60 -n $NP "$TESTBIN/ckpt_rma" 2 > probe.log 2>&1 < /dev/null
if ! grep -q "^result" probe.log; then
    grep -q 'no usable libfabric provider\|cannot load libfabric' probe.log && { echo "SKIP: no tcp;ofi_rxm"; exit 77; }
    show probe.log; fail "ckpt_rma over ofi"; ckpt_finish
fi
n=$(grep -c "registered for remote access (transport RMA)" probe.log)
[ "$n" = $((NP * 2)) ] && ok "ckpt_rma: its 2 windows registered with p2p/ofi on every rank" \
    || { show probe.log; fail "ckpt_rma: $n of $((NP * 2)) windows registered with p2p/ofi"; }

# every rank's p2p/ofi released COUNT times in LOG (its KUMI_VERBOSE line)
released() { # WHAT LOG COUNT
    local n p; n=$(grep -c "p2p/ofi: released for a checkpoint" "$2")
    p=$(sed -n 's/.*p2p\/ofi: released for a checkpoint: \([0-9]*\) parked send.*/\1/p' "$2" | awk '{s += $1} END {print s + 0}')
    [ "$n" = "$3" ] && ok "$1: p2p/ofi released by every rank at every checkpoint ($n lines; $p rendezvous sends parked)" \
        || { show "$2"; fail "$1: $n of $3 lines of p2p/ofi released for a checkpoint"; }
}
ckpt_hook_continued() { released continue "$1" $((NP * 2)); }
ckpt_hook_stopped() { released "$1 (stopped)" "$2" $NP; }

# 1. point-to-point, collectives
ckpt_reference ${CKPT_ITERS:-300}
ckpt_continue 40 ${CKPT_ITERS:-300}
ckpt_stop_restart ofi -- ${CKPT_ITERS:-300}

# 3. the shm provider: refused (opened again in the same process, its
#    endpoints carry nothing: a job hangs after checkpoint-and-continue)
mkdir -p shm
KUMI_P2P_OFI_PROVIDER=shm KUMI_VERBOSE=1 "$MPIEXEC" --timeout 300 --ckpt-dir shm -n $NP "$PROG" ${CKPT_ITERS:-300} > shm.log 2>&1 < /dev/null &
pid=$!
wait_for shm.log "^iteration 40" 120 && kill -QUIT $pid
wait_for shm.log "checkpoint 1 \(written\|not written\)" 120
wait $pid; rc=$?
# the refusal names p2p/ofi, why, and the p2p components that can be checkpointed (self, shmem,
# tcp: not ofi, the one refused)
refusal=$(grep -o "checkpoint 1 not written: .*transport p2p/ofi cannot be checkpointed.*" shm.log | head -1)
echo "$refusal" | grep -q "with what it uses in this job (p2p/ofi: the shm provider.*; without it: MPI_COMPONENTS=p2p=[a-z,]*tcp" \
    && ! echo "$refusal" | grep -q "without it: MPI_COMPONENTS=p2p=[a-z,]*ofi" \
    && [ $rc -eq 0 ] && [ "$(result shm.log)" = "$REF" ] \
    && ok "provider shm: the checkpoint refused (p2p/ofi named, the others offered), the job went on to its result" \
    || { show shm.log; fail "provider shm: exit $rc, result '$(result shm.log)'; not refused as expected"; }
shm_clean "provider shm" shm.log

# 2. windows registered with ofi; their puts and gets are fi_write / fi_read
#    with the keys (KUMI_BASE_RMA_DIRECT=0: not loads and stores on this host)
export KUMI_BASE_RMA_DIRECT=0
PROG=$TESTBIN/ckpt_rma
ckpt_reference ${CKPT_ITERS:-200}
ckpt_continue 40 ${CKPT_ITERS:-200}
ckpt_stop_restart ofi_rma -- ${CKPT_ITERS:-200}
ckpt_finish
