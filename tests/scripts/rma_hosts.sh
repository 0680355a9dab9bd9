#!/bin/bash
# RMA between ranks of two hosts.  mpiexec starts every rank on this
# machine, so each rank runs in a UTS namespace of its own (unshare -u) named
# h0 (ranks 0, 1) or h1 (ranks 2, 3): Kumi takes the host name as the host's
# identity, so same-host peers are reached directly (shared segments, CMA,
# p2p/shmem) and the others through the network transport, as on two
# machines.  Needs root (or unprivileged namespaces); skipped otherwise.
#  1. p2p=self,shmem,ofi (tcp;ofi_rxm): Put and Get to the other host are
#     libfabric remote writes and reads of registered window memory, and
#     accumulates and locks are active messages (rma_ops, rma_large);
#  2. the same with kumi_base_rma_fabric=false (active messages only);
#  3. p2p=self,shmem,tcp: active messages over TCP.
set -u
fail() { echo "FAIL: $*"; exit 1; }
unshare -u true 2>/dev/null || { echo "SKIP: cannot make UTS namespaces here (unshare -u)"; exit 77; }
hosts() { # mpiexec arguments...; the program is the last one
    local prog=${!#}
    local args=("${@:1:$#-1}")
    timeout 200 "$MPIEXEC" --timeout 180 -n 4 "${args[@]}" unshare -u sh -c \
        "hostname h\$((KUMI_RANK / 2)) && exec '$TESTBIN/$prog'"
}

ofi_ok=1
"$KUMI_INFO" --parsable | grep -q '^component:p2p:ofi:status:available' || ofi_ok=0
if [ $ofi_ok = 1 ]; then
    ofi=(-x MPI_COMPONENTS=p2p=self,shmem,ofi --param 'p2p_ofi_provider=tcp;ofi_rxm')
    out=$(hosts "${ofi[@]}" -x KUMI_VERBOSE=2 rma_large 2>&1) || { echo "$out" | tail -30; fail "rma_large over ofi"; }
    echo "$out" | grep -q 'rma_large: 4 ranks OK' || { echo "$out" | tail -30; fail "rma_large over ofi said nothing"; }
    for r in 0 1; do
        echo "$out" | grep -q "kumi\[$r\]: p2p/ofi serves ranks 2-3" || { echo "$out" | grep serves; fail "ofi does not serve rank $r's peers on h1"; }
        echo "$out" | grep -q "kumi\[$r\]: p2p/shmem serves ranks $((1 - r))" || { echo "$out" | grep serves; fail "shmem does not serve rank $r's peer on h0"; }
    done
    [ "$(echo "$out" | grep -c 'registered for remote access')" -ge 8 ] ||
        { echo "$out" | grep -i window; fail "window memory was not registered with ofi on every rank"; }
    echo "ofi: rma_large OK, window memory registered"
    out=$(hosts "${ofi[@]}" rma_ops 2>&1) || { echo "$out" | tail -30; fail "rma_ops over ofi"; }
    echo "$out" | grep -q 'rma_ops: 4 ranks OK' || { echo "$out" | tail -30; fail "rma_ops over ofi said nothing"; }
    echo "ofi: rma_ops OK"
    out=$(hosts "${ofi[@]}" -x KUMI_BASE_RMA_FABRIC=0 -x KUMI_VERBOSE=2 rma_large 2>&1) ||
        { echo "$out" | tail -30; fail "rma_large over ofi, active messages only"; }
    echo "$out" | grep -q 'registered for remote access' && fail "kumi_base_rma_fabric=false still registers window memory"
    echo "ofi, kumi_base_rma_fabric=false: rma_large OK, nothing registered"
else
    echo "(p2p/ofi unavailable here: only TCP)"
fi
tcp=(-x MPI_COMPONENTS=p2p=self,shmem,tcp)
for prog in rma_ops rma_large; do
    out=$(hosts "${tcp[@]}" $prog 2>&1) || { echo "$out" | tail -30; fail "$prog over tcp"; }
    echo "$out" | grep -q "$prog: 4 ranks OK" || { echo "$out" | tail -30; fail "$prog over tcp said nothing"; }
    echo "tcp: $prog OK"
done
