#!/bin/bash
# The early-match rule really runs: receives posted while a 60 KiB eager
# message is still arriving take what arrived and let the rest land in the
# user buffer (logged at KUMI_VERBOSE=3).  p2p_early checks every byte.
# Timing decides how often it happens, so up to 3 runs may be needed.
set -u
for try in 1 2 3; do
    out=$(MPI_COMPONENTS="p2p=self,tcp" KUMI_VERBOSE=3 timeout 120 "$MPIEXEC" -n 2 "$TESTBIN/p2p_early" 2>&1)
    rc=$?
    [ $rc -eq 0 ] || { echo "$out" | tail -20; echo "p2p_early failed (exit $rc)"; exit 1; }
    n=$(echo "$out" | grep -c 'early match:')
    echo "run $try: $n early matches"
    [ "$n" -gt 0 ] && exit 0
done
echo "no receive was ever matched while its message was arriving"
exit 1
