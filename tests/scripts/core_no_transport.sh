#!/bin/bash
# MPI_COMPONENTS="p2p=^tcp,shmem" (only self left) on a 2-rank job: MPI_Init fails, saying no
# transport reaches the other rank.  (Issue 2 stated it as p2p=^tcp, before p2p/shmem existed.)
set -u
out=$(MPI_COMPONENTS="p2p=^tcp,shmem" timeout 60 "$MPIEXEC" -n 2 "$TESTBIN/core_init" 2>&1)
rc=$?
echo "$out"
[ $rc -ne 0 ] || { echo "expected a failure, got exit 0"; exit 1; }
[ $rc -ne 124 ] || { echo "timed out"; exit 1; }
# each rank names the other one; whichever reports first may stop the job before the other prints
echo "$out" | grep -Eq 'no transport reaches rank [01]' || { echo "missing 'no transport reaches rank N'"; exit 1; }
# and an unknown component name is an error that lists what exists
out=$(MPI_COMPONENTS="p2p=tpc" timeout 60 "$MPIEXEC" -n 1 "$TESTBIN/core_init" 2>&1)
rc=$?
echo "$out"
[ $rc -ne 0 ] || { echo "expected a failure for p2p=tpc"; exit 1; }
echo "$out" | grep -q "tpc" && echo "$out" | grep -q "tcp" || { echo "message should name tpc and list tcp"; exit 1; }
exit 0
