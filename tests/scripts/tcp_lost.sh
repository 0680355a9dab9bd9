#!/bin/bash
# A rank that dies in the middle of a TCP transfer: the job ends (no hang),
# mpiexec names rank 1 as the failure, and rank 0 does not crash.
set -u
fail() { echo "FAIL: $*"; exit 1; }
start=$(date +%s)
out=$(MPI_COMPONENTS="p2p=self,tcp" timeout 60 "$MPIEXEC" -n 2 --param p2p_tcp_sndbuf=4k \
      --param p2p_tcp_rcvbuf=4k "$TESTBIN/tcp_lost" 2>&1)
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
