#!/bin/bash
# p2p/shmem segments are named /dev/shm/kumi.<jobid>.<rank>.
# 1. A normal end leaves none of them behind.
# 2. A rank killed (SIGKILL) in the middle of a shared-memory transfer ends the
#    job (non-zero, in bounded time) and, once mpiexec has exited, nothing of
#    that job is left in /dev/shm (the ranks' finalize cannot run: mpiexec
#    removes /dev/shm/kumi.<jobid>.*).
# 3. The same with p2p_shmem_cma=off (the killed rank dies mid-stream).
set -u
[ -d /dev/shm ] || { echo "no /dev/shm"; exit 77; }

leftovers() { ls /dev/shm 2>/dev/null | grep -E "^kumi\.$1\." ; }

# normal end: run a real shared-memory job and check its own jobid
out=$(KUMI_VERBOSE=1 timeout 120 "$MPIEXEC" -n 3 "$TESTBIN/shm_sizes" 2>&1 </dev/null)
rc=$?
[ $rc -eq 0 ] || { echo "$out" | tail -20; echo "shm_sizes failed ($rc)"; exit 1; }
job=$(echo "$out" | sed -n 's/^mpiexec: job \([0-9][0-9]*\).*/\1/p' | head -1)
[ -n "$job" ] || { echo "$out" | head; echo "could not find the job id in mpiexec's verbose output"; exit 1; }
if l=$(leftovers "$job"); then echo "left in /dev/shm after a normal end: $l"; exit 1; fi
echo "normal end (job $job): /dev/shm clean"

for mode in auto off; do
    out=$(timeout 60 "$MPIEXEC" --param p2p_shmem_cma=$mode -n 3 "$TESTBIN/shm_die" 2>&1 </dev/null)
    rc=$?
    echo "$out" | tail -5
    [ $rc -ne 124 ] || { echo "cma=$mode: the job did not end after a rank was killed"; exit 1; }
    [ $rc -ne 0 ] || { echo "cma=$mode: exit 0 although rank 1 was killed"; exit 1; }
    job=$(echo "$out" | sed -n 's/^jobid \([0-9][0-9]*\)$/\1/p' | head -1)
    [ -n "$job" ] || { echo "cma=$mode: rank 0 did not print its job id"; exit 1; }
    if l=$(leftovers "$job"); then echo "cma=$mode: left in /dev/shm after kill -9: $l"; exit 1; fi
    echo "cma=$mode: killed rank ended the job (rc $rc), /dev/shm clean for job $job"
done
exit 0
