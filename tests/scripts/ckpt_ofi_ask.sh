#!/bin/bash
# p2p/ofi after a checkpoint: a rendezvous send whose FIN was lost at the cut
# asks its receiver (ASK), which answers FIN when its read is over
# (components/p2p/ofi/p2p_ofi_ckpt.c).  tests/mpi/ckpt_ofi_ask on 2 ranks,
# MPI_COMPONENTS=p2p=self,ofi, provider tcp;ofi_rxm, p2p_ofi_drop_fin=1:
# the receiver does not send the FIN of the first rendezvous it reads (as if
# the FIN had been lost with the endpoints), so that send stays parked until
# a checkpoint.  Checkpoint-and-continue, then --checkpoint-and-stop and
# mpiexec --restart; each time:
#  - the send stays incomplete until the checkpoint (the program checks),
#    then completes (at most 60 s later), the data of every message right;
#  - the FIN dropped once, rank 1 answered one ASK with it, no FIN for an
#    unknown rendezvous; the job's result.
set -u
. "$(dirname "$0")/lib/ckpt_frame.sh"
ckpt_setup ckpt_ofi_ask ckptofiask
export KUMI_CKPT_RESTART_PROGRAM=$top_builddir/components/ckpt/image/kumi_restart
export MPI_COMPONENTS=p2p=self,ofi KUMI_P2P_OFI_PROVIDER='tcp;ofi_rxm' KUMI_P2P_OFI_DROP_FIN=1
NP=2

# LOG of a run in which the ASK finished the send (WHAT: how it is named)
asked() { # WHAT LOG
    local d a u
    d=$(grep -c "p2p/ofi: FIN of rendezvous [0-9]* to rank 0 not sent (p2p_ofi_drop_fin)" "$2")
    a=$(grep -c "p2p/ofi: rank 0 asked for rendezvous [0-9]*, which is over: FIN again" "$2")
    u=$(grep -c "FIN from rank [0-9]* for an unknown rendezvous" "$2")
    [ "$d" = 1 ] && [ "$a" = 1 ] && [ "$u" = 0 ] \
        && ok "$1: one FIN dropped, one ASK answered with it; $(grep -o "A's send completed.*" "$2")" \
        || { show "$2"; fail "$1: $d FIN(s) dropped, $a ASK(s) answered, $u FIN(s) for an unknown rendezvous (want 1, 1, 0)"; }
}

# probe: tcp;ofi_rxm there?  Without a checkpoint the send never completes.
KUMI_VERBOSE=1 "$MPIEXEC" --timeout 60 -n $NP "$PROG" 0.5 > probe.log 2>&1 < /dev/null &
pid=$!
for ((i = 0; i < 1000; i++)); do     # 50 s, or until the job ends
    grep -q "^waiting for a checkpoint" probe.log && break
    kill -0 $pid 2> /dev/null || break
    sleep 0.05
done
if ! grep -q "^waiting for a checkpoint" probe.log; then
    kill $pid 2> /dev/null; wait $pid
    grep -q 'no usable libfabric provider\|cannot load libfabric' probe.log && { echo "SKIP: no tcp;ofi_rxm"; exit 77; }
    show probe.log; fail "probe: rank 0 did not get to wait for a checkpoint"; ckpt_finish
fi
sleep 1
grep -q "A's send completed" probe.log && { show probe.log; fail "probe: the send completed without a checkpoint"; } \
    || ok "probe: the send whose FIN was dropped stays incomplete without a checkpoint"
kill $pid 2> /dev/null; wait $pid 2> /dev/null

# checkpoint-and-continue
mkdir -p cc
: > cc.log
KUMI_VERBOSE=1 "$MPIEXEC" --timeout 120 --ckpt-dir cc -n $NP "$PROG" > cc.log 2>&1 < /dev/null &
pid=$!
wait_for cc.log "^waiting for a checkpoint" 60 && kill -QUIT $pid
wait_for cc.log "checkpoint 1 \(written\|not written\)" 60
wait $pid; rc=$?
grep -q "checkpoint 1 written to" cc.log && [ $rc -eq 0 ] && [ "$(result cc.log)" = ok ] \
    && ok "continue: checkpoint written, exit 0, every message's data right" \
    || { show cc.log; fail "continue: exit $rc, result '$(result cc.log)'"; }
asked continue cc.log
shm_clean continue cc.log

# checkpoint-and-stop, restart: the restarted sender asks
mkdir -p st
: > st.log
KUMI_VERBOSE=1 "$MPIEXEC" --timeout 120 --checkpoint-and-stop --ckpt-dir st -n $NP "$PROG" > st.log 2>&1 < /dev/null &
pid=$!
wait_for st.log "^waiting for a checkpoint" 60 && kill -QUIT $pid
wait $pid; rc=$?
if [ $rc -eq 0 ] && grep -q "checkpoint 1 written" st.log && ! grep -q "A's send completed" st.log; then
    ok "stop: stopped with a checkpoint, the send not complete"
    shm_clean "stop (stopped)" st.log
    KUMI_VERBOSE=1 "$MPIEXEC" --timeout 120 --restart st > rs.log 2>&1 < /dev/null
    rc=$?
    [ $rc -eq 0 ] && [ "$(result rs.log)" = ok ] && ok "restart: exit 0, every message's data right" \
        || { show rs.log; fail "restart: exit $rc, result '$(result rs.log)'"; }
    asked restart "$(cat st.log rs.log > both.log; echo both.log)"
    shm_clean "restart" rs.log
else
    show st.log; fail "stop: checkpoint-and-stop exit $rc"
fi
ckpt_finish
