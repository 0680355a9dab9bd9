#!/bin/bash
# api_coverage: libmpi exports every MPI-4.1 procedure (MPI-IO, dynamic
# processes and the MPI_T tools interface included), every large-count form, every MPI 5.0
# procedure of the standard ABI and the removed MPI-1 calls
# (tools/api-coverage.py --check); and the check fires on a library that
# lacks one (a copy of the API data naming a procedure nobody exports).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
py=${PYTHON3:-python3}
command -v "$py" > /dev/null 2>&1 || { echo "SKIP: no $py"; exit 77; }
tool=$top_srcdir/tools/api-coverage.py
lib=$top_builddir/framework/.libs/libmpi.so
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$py" "$tool" --lib "$lib" --check > "$tmp/out" 2>&1 || { cat "$tmp/out"; fail "procedures in scope are missing (above)"; }
grep -v '^missing' "$tmp/out"
grep -Eq '^dynamic processes .*: +12 of +12 exported$' "$tmp/out" || fail "dynamic processes are not counted in scope, or not all 12 exported"
"$py" - "$top_srcdir/data/mpi-procedures.json" "$tmp/procs.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d['procedures'].append({'c': 'int MPI_Kumi_nosuch(MPI_Comm comm)', 'c_params': []})
json.dump(d, open(sys.argv[2], 'w'))
PYEOF
if "$py" "$tool" --lib "$lib" --data "$tmp/procs.json" --check > "$tmp/neg" 2>&1; then
    fail "--check passed although MPI_Kumi_nosuch is not exported"
fi
grep -q 'MPI_Kumi_nosuch' "$tmp/neg" || { cat "$tmp/neg"; fail "the missing procedure is not named"; }
exit 0
