#!/bin/bash
# dpm_names_jobs: MPI_Publish_name in one job, MPI_Lookup_name in another
# started separately (issue 23), through the name service directory both are
# given (KUMI_DPM_NAME_DIR); then the name is unpublished and both exit 0.
# A job that ends without unpublishing leaves no name behind.
set -u
: "${TESTBIN:?}" "${MPIEXEC:?}"
prog=$TESTBIN/conf_dpm_names
[ -x "$prog" ] || { echo "FAIL: $prog not built (libmpi without the name service?)"; exit 1; }
d=$(mktemp -d /tmp/kumi-dpm-names.XXXXXX) || exit 1
trap 'rm -rf "$d"' EXIT
mkdir "$d/names"
export KUMI_DPM_NAME_DIR=$d/names
cd "$TESTBIN" || exit 1
"$MPIEXEC" --timeout 90 -n 2 ./conf_dpm_names serve "$d" > "$d/serve.out" 2>&1 &
spid=$!
"$MPIEXEC" --timeout 90 -n 3 ./conf_dpm_names client "$d" > "$d/client.out" 2>&1
crc=$?
wait $spid
src=$?
cat "$d/serve.out" "$d/client.out"
[ $src -eq 0 ] || { echo "FAIL: the publishing job exited $src"; exit 1; }
[ $crc -eq 0 ] || { echo "FAIL: the looking-up job exited $crc"; exit 1; }
[ -z "$(ls -A "$d/names")" ] || { ls -la "$d/names"; echo "FAIL: names left in the service directory"; exit 1; }
out=$("$MPIEXEC" --timeout 60 -n 2 ./conf_dpm_names leave "$d" 2>&1) || { echo "$out"; echo "FAIL: the job that leaves a name failed"; exit 1; }
[ -z "$(ls -A "$d/names")" ] || { ls -la "$d/names"; echo "FAIL: a name not unpublished outlived its job"; exit 1; }
echo "dpm_names_jobs: ok"
