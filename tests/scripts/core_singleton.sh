#!/bin/bash
# A program started without mpiexec runs as a one-rank job.
set -u
out=$(timeout 60 "$TESTBIN/core_init" 1 2>&1) || { echo "singleton run failed: $out"; exit 1; }
echo "$out" | grep -q 'core_init: ok (1 ranks)' || { echo "unexpected output: $out"; exit 1; }
out=$(timeout 60 "$TESTBIN/core_comm" 2>&1) || { echo "singleton core_comm failed: $out"; exit 1; }
exit 0
