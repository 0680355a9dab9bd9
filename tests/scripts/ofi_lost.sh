#!/bin/bash
# A rank that dies in the middle of a p2p/ofi rendezvous (rank 0 reads its
# 64 MiB in 64 KiB pieces with fi_read): the job ends (no hang), mpiexec names
# rank 1 as the failure, and rank 0 neither crashes nor completes the receive.
set -u
fail() { echo "FAIL: $*"; exit 1; }
"$KUMI_INFO" --parsable | grep -q '^component:p2p:ofi:status:available' ||
    { echo "SKIP: p2p/ofi not available here"; exit 77; }
start=$(date +%s)
out=$(MPI_COMPONENTS="p2p=self,ofi" timeout 60 "$MPIEXEC" -n 2 --param 'p2p_ofi_provider=tcp;ofi_rxm' \
      --param p2p_ofi_read_chunk=64k "$TESTBIN/tcp_lost" 2>&1)
rc=$?
end=$(date +%s)
echo "$out"
[ $rc -ne 0 ] || fail "the job should fail"
[ $rc -ne 124 ] || fail "the job hung"
[ $((end - start)) -lt 30 ] || fail "the job took $((end - start)) s to end"
echo "$out" | grep -q "rank 1 exits now" || fail "rank 1 did not get to its exit"
echo "$out" | grep -q "rank 1.*status 3" || fail "mpiexec did not report rank 1's exit status 3"
echo "$out" | grep -q "completed a receive whose sender died" && fail "rank 0 completed a broken receive"
echo "$out" | grep -Eiq "segmentation|signal (11|6|7)|core dumped|abort" && fail "a rank crashed"
echo "ok"
exit 0
