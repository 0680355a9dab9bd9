#!/bin/bash
# MPI-IO across two hosts.  As in rma_hosts.sh, each rank runs in a UTS
# namespace of its own named h0 (ranks 0, 1) or h1 (ranks 2, 3), so Kumi sees
# two hosts: collective I/O gets one aggregator per host by default (io_view
# checks cb_nodes = 2 and the file byte for byte), and the shared file pointer
# on rank 0 is reached from h1 by active messages over TCP (io_shared).
# Needs root (or unprivileged namespaces); skipped otherwise.
set -u
fail() { echo "FAIL: $*"; exit 1; }
unshare -u true 2>/dev/null || { echo "SKIP: cannot make UTS namespaces here (unshare -u)"; exit 77; }
hosts() { # mpiexec arguments...; the program (and its argument) last
    timeout 200 "$MPIEXEC" --timeout 180 -n 4 -x MPI_COMPONENTS=p2p=self,shmem,tcp "$@"
}
cd "$TESTBIN" || exit 1
out=$(hosts -x IO_EXPECT_CB_NODES=2 unshare -u sh -c "hostname h\$((KUMI_RANK / 2)) && exec ./io_view" 2>&1) ||
    { echo "$out" | tail -30; fail "io_view on two hosts"; }
echo "$out" | grep -q 'io_view: ok at 4 ranks' || { echo "$out" | tail -30; fail "io_view said nothing"; }
echo "io_view: two aggregators (one per host), file checked"
out=$(hosts unshare -u sh -c "hostname h\$((KUMI_RANK / 2)) && exec ./io_shared" 2>&1) ||
    { echo "$out" | tail -30; fail "io_shared on two hosts"; }
echo "$out" | grep -q 'io_shared: ok at 4 ranks' || { echo "$out" | tail -30; fail "io_shared said nothing"; }
echo "io_shared: shared pointer across hosts OK"
exit 0
