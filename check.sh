#!/bin/bash
# Run Kumi's whole test suite (builds first if needed).  Ends with "N passed, N failed".
#   ./check.sh              make check: multi-process tests through mpiexec (about 10 minutes on 2 cores)
#   ./check.sh --long       also the long suites (make check-long)
set -uo pipefail
top=$(cd "$(dirname "$0")" && pwd)
BUILDDIR=${BUILDDIR:-$top/_build}
export BUILDDIR
CONFIGURE_FLAGS=${CONFIGURE_FLAGS:---enable-werror} "$top/install.sh" || { echo "0 passed, 1 failed"; exit 1; }
target=check
[ "${1:-}" = --long ] && target=check-long
log=$BUILDDIR/tests/check.out
mkdir -p "$BUILDDIR/tests"
make -C "$BUILDDIR/tests" --no-print-directory "$target" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
echo "${summary:-0 passed, 1 failed}"
exit "$rc"
