#!/bin/bash
# Run Kumi's test suite: every unit test (tests/unit), every line of tests/mpi/*.list
# and every tests/scripts/*.sh.
# Prints one line per test and ends with "N passed, N failed".
# Env: top_srcdir, top_builddir (set by make), KUMI_TEST_LONG=1 adds *.longlist,
#      KUMI_TEST_FILTER=regex runs only matching test names.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$PWD/..}
export top_srcdir top_builddir
export TESTBIN=$top_builddir/tests/mpi
export MPIEXEC=$top_builddir/tools/mpiexec/mpiexec
export KUMI_INFO=$top_builddir/tools/kumi_info/kumi_info
export MPICC="${CC:-cc} -I$top_builddir/framework/include -I$top_srcdir/framework/include -L$top_builddir/framework/.libs -Wl,-rpath,$top_builddir/framework/.libs"
# Components of the build tree (not installed yet).
KUMI_COMPONENT_PATH=$(ls -d "$top_builddir"/components/*/*/.libs 2>/dev/null | tr '\n' ':')
export KUMI_COMPONENT_PATH=${KUMI_COMPONENT_PATH%:}
export KUMI_INTERNAL_NO_PKGLIBDIR=1        # not those of an older `make install`
logdir=$top_builddir/tests/test-logs
mkdir -p "$logdir"
filter=${KUMI_TEST_FILTER:-.}
pass=0; fail=0; skip=0; failed=()
shm_mark=$logdir/.suite-start          # shared-memory files newer than this are the suite's
touch "$shm_mark"

run_one() { # name, command...
    local name=$1; shift
    local log=$logdir/$name.log start end rc
    start=$(date +%s.%N)
    ( "$@" ) > "$log" 2>&1 < /dev/null
    rc=$?
    end=$(date +%s.%N)
    local t; t=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')
    if [ $rc -eq 0 ]; then pass=$((pass+1)); echo "PASS: $name (${t}s)"
    elif [ $rc -eq 77 ]; then skip=$((skip+1)); echo "SKIP: $name"
    else fail=$((fail+1)); failed+=("$name"); echo "FAIL: $name (exit $rc, ${t}s; log $log)"; sed 's/^/    | /' "$log" | tail -15
    fi
}

# Unit tests (tests/unit/test_<name>.c, built as tests/unit/test_<name>): in process, one test each.
for src in "$top_srcdir"/tests/unit/test_*.c; do
    [ -f "$src" ] || continue
    prog=$(basename "$src" .c)
    name=unit_${prog#test_}
    [[ $name =~ $filter ]] || continue
    run_one "$name" "$top_builddir/tests/unit/$prog"
done
lists=("$top_srcdir"/tests/mpi/*.list)
[ "${KUMI_TEST_LONG:-0}" = 1 ] && lists+=("$top_srcdir"/tests/mpi/*.longlist)
for list in "${lists[@]}"; do
    [ -f "$list" ] || continue
    while IFS= read -r line; do
        case "$line" in ''|'#'*) continue ;; esac
        name=${line%%:*}; args=${line#*:}
        [[ $name =~ $filter ]] || continue
        # shellcheck disable=SC2086
        run_one "$name" bash -c "cd '$TESTBIN' && exec '$MPIEXEC' --timeout 120 $args"
    done < "$list"
done
for script in "$top_srcdir"/tests/scripts/*.sh; do
    [ -f "$script" ] || continue
    name=$(basename "$script" .sh)
    [[ $name =~ $filter ]] || continue
    run_one "$name" bash "$script"
done
# Nothing may be left running.
left=$(pgrep -f "$TESTBIN/" 2>/dev/null | head -5)
if [ -n "$left" ]; then
    fail=$((fail+1)); failed+=("no-leftover-processes"); echo "FAIL: processes left running: $left"
    pkill -9 -f "$TESTBIN/" 2>/dev/null
fi
# Nor left in /dev/shm: every job removes its segments, also when a rank fails or is killed.
# A job whose mpiexec (its job id is mpiexec's pid) still runs is not the
# suite's (another suite on this machine): its files are neither counted nor removed.
leftshm=
for f in $(find /dev/shm -maxdepth 1 \( -name 'kumi.*' -o -name 'sem.kumi.*' \) -user "$(id -u)" \
               -newer "$shm_mark" 2>/dev/null | head -64); do
    j=${f#/dev/shm/}; j=${j#sem.}; j=${j#kumi.}; j=${j%%.*}
    case "$j" in ''|*[!0-9]*) ;; *) grep -qs mpiexec "/proc/$j/comm" && continue ;; esac
    leftshm="$leftshm $f"
done
if [ -n "$leftshm" ]; then
    fail=$((fail+1)); failed+=("no-leftover-shm"); echo "FAIL: shared-memory files left behind:" $leftshm
    rm -f $leftshm
fi
echo
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
if [ $skip -gt 0 ]; then echo "$pass passed, $fail failed, $skip skipped"; else echo "$pass passed, $fail failed"; fi
[ $fail -eq 0 ]
