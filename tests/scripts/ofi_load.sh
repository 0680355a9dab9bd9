#!/bin/bash
# p2p/ofi: when libfabric is loaded, what kumi_info says, and what a killed
# rank leaves behind.
# 1. kumi_info probes it and names the provider (status "available (provider ...)").
# 2. A job on one host does not load libfabric (0.2 s per process) unless
#    MPI_COMPONENTS names ofi; named next to shmem, it is loaded but shmem
#    still serves the same-host peers; named alone (with self), it serves them.
# 3. With the shm provider, a rank killed with SIGKILL mid-transfer leaves no
#    new object in /dev/shm once mpiexec has exited (the provider's region is
#    named kumi.<jobid>.<rank>.ofi, which mpiexec removes).
set -u
fail() { echo "FAIL: $*"; exit 1; }
info=$("$KUMI_INFO" --parsable)
line=$(echo "$info" | grep -m1 '^component:p2p:ofi:status:')
[ -n "$line" ] || { echo "SKIP: p2p/ofi is not part of this build"; exit 77; }
if [ "$line" != "component:p2p:ofi:status:available" ]; then
    echo "$info" | grep '^component:p2p:ofi:'
    echo "SKIP: no usable libfabric provider here"; exit 77
fi
echo "$info" | grep -q '^component:p2p:ofi:note:provider ' || fail "kumi_info does not name the provider"
"$KUMI_INFO" | grep -A1 'Kumi p2p: ofi' | grep -q 'status: available (provider ' ||
    fail "human kumi_info does not name the provider"
"$KUMI_INFO" --param p2p ofi | grep -q 'p2p_ofi_provider_status' || fail "no p2p_ofi_provider_status parameter"

out=$(env -u MPI_COMPONENTS KUMI_VERBOSE=1 timeout 60 "$MPIEXEC" -n 3 "$TESTBIN/ofi_maps" 2>&1) || { echo "$out"; fail "default job failed"; }
[ "$(echo "$out" | grep -c 'libfabric not loaded')" = 3 ] || { echo "$out"; fail "libfabric loaded in a default one-host job"; }
echo "$out" | grep -q 'p2p/ofi serves' && { echo "$out"; fail "ofi serves peers in a default job"; }
echo "default job: libfabric not loaded"

out=$(MPI_COMPONENTS="p2p=self,shmem,ofi" KUMI_VERBOSE=1 timeout 60 "$MPIEXEC" -n 3 "$TESTBIN/ofi_maps" 2>&1) ||
    { echo "$out"; fail "job with p2p=self,shmem,ofi failed"; }
[ "$(echo "$out" | grep -c 'libfabric loaded')" = 3 ] || { echo "$out"; fail "libfabric not loaded although named"; }
[ "$(echo "$out" | grep -c 'p2p/shmem serves ranks')" = 3 ] || { echo "$out"; fail "shmem does not serve same-host peers"; }
echo "$out" | grep -q 'p2p/ofi serves' && { echo "$out"; fail "ofi serves peers that shmem reaches"; }
echo "p2p=self,shmem,ofi: libfabric loaded, shmem serves the peers"

out=$(MPI_COMPONENTS="p2p=self,ofi" KUMI_VERBOSE=1 timeout 60 "$MPIEXEC" -n 3 "$TESTBIN/ofi_maps" 2>&1) ||
    { echo "$out"; fail "job with p2p=self,ofi failed"; }
[ "$(echo "$out" | grep -c 'p2p/ofi serves ranks')" = 3 ] || { echo "$out"; fail "ofi does not serve the peers"; }
echo "p2p=self,ofi: ofi serves the peers"

[ -d /dev/shm ] || { echo "no /dev/shm: step 3 skipped"; exit 0; }
before=$(ls /dev/shm | sort)
out=$(MPI_COMPONENTS="p2p=self,ofi" timeout 60 "$MPIEXEC" -n 3 --param p2p_ofi_provider=shm "$TESTBIN/shm_die" 2>&1 </dev/null)
rc=$?
echo "$out" | tail -3
[ $rc -ne 124 ] || fail "shm provider: the job did not end after a rank was killed"
[ $rc -ne 0 ] || fail "shm provider: exit 0 although rank 1 was killed"
echo "$out" | grep -q '^jobid ' || fail "shm provider: rank 0 did not start its transfers"
after=$(ls /dev/shm | sort)
# Kumi's own objects are named kumi.<jobid>.*: those of other jobs running on
# this machine at the same time are not this job's leftovers.
jobid=$(echo "$out" | sed -n 's/^jobid \([0-9]*\).*/\1/p' | head -1)
new=$(comm -13 <(echo "$before") <(echo "$after") | grep -v -E "^(sem\.)?kumi\.[0-9]+\." ;
      comm -13 <(echo "$before") <(echo "$after") | grep -E "^(sem\.)?kumi\.${jobid:-x}\.")
[ -z "$new" ] || fail "left in /dev/shm after kill -9 with the shm provider: $new"
echo "shm provider: killed rank ended the job (rc $rc), nothing left in /dev/shm"
exit 0
