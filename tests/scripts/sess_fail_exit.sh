#!/bin/bash
# A sessions-only rank that fails (exit 3) after its last MPI_Session_finalize
# does not wait at exit for the others (who would come only after 60 s): the
# job ends at once, non-zero, naming rank 1.
set -u
start=$(date +%s)
out=$(timeout 90 "$MPIEXEC" -n 2 "$TESTBIN/sess_fail_exit" 2>&1)
rc=$?
end=$(date +%s)
echo "$out"
[ $rc -ne 0 ] || { echo "expected a failure"; exit 1; }
[ $rc -ne 124 ] || { echo "mpiexec hung until timeout(1)"; exit 1; }
[ $((end - start)) -le 20 ] || { echo "took $((end - start)) s: the failing rank waited for the others"; exit 1; }
echo "$out" | grep -q 'rank 1 .*status 3' || { echo "missing message naming rank 1 and its status"; exit 1; }
exit 0
