#!/bin/bash
# A rank that exits 0 without calling MPI_Init while the others wait for it in
# MPI_Init ends the job at once, non-zero, saying which rank; a job of programs
# that never use MPI (mpiexec -n 3 true) still succeeds.
set -u
start=$(date +%s)
out=$(timeout 60 "$MPIEXEC" -n 3 "$TESTBIN/launch_noinit" 2>&1)
rc=$?
end=$(date +%s)
echo "$out"
[ $rc -ne 0 ] || { echo "expected a failure"; exit 1; }
[ $rc -ne 124 ] || { echo "mpiexec hung until timeout(1)"; exit 1; }
[ $((end - start)) -le 10 ] || { echo "took $((end - start)) s"; exit 1; }
echo "$out" | grep -q 'rank 1 .*exited without calling MPI_Init' || { echo "missing message naming rank 1"; exit 1; }
pgrep -f "$TESTBIN/launch_noinit" && { echo "processes left"; exit 1; }
timeout 30 "$MPIEXEC" -n 3 true || { echo "mpiexec -n 3 true failed"; exit 1; }
exit 0
