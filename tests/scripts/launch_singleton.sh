#!/bin/bash
# launch_singleton: a test program run directly, without mpiexec, is a job
# of one process (no KUMI_RANK: the core runs a singleton).
set -u
: "${TESTBIN:?}"
prog=$TESTBIN/launch_singleton
[ -x "$prog" ] || { echo "SKIP: $prog not built"; exit 77; }
out=$(env -u KUMI_RANK -u KUMI_SIZE -u KUMI_JOBID -u KUMI_CONTROL -u KUMI_JOB_SECRET -u KUMI_RPIM \
      timeout 60 "$prog" < /dev/null 2>&1)
rc=$?
[ $rc -eq 0 ] || { echo "$out"; echo "FAIL: singleton exited $rc"; exit 1; }
[ "$out" = "singleton ok" ] || { echo "$out"; echo "FAIL: unexpected output"; exit 1; }
echo "launch_singleton: ok"
exit 0
