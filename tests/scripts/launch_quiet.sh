#!/bin/bash
# launch_quiet: a normal run prints nothing the program did not print.
# Plain `mpiexec -n N` (N = 1, 2, 4 and 8, the last oversubscribed on small
# machines) of a hello world, a point-to-point ring and a collective program,
# with MPI_COMPONENTS unset and with MPI_COMPONENTS="p2p=self,tcp": stdout
# must be exactly the program's lines (sorted, as ranks interleave) and
# stderr must be empty: no banners, binding / oversubscription / transport
# warnings, nothing from hwloc or libfabric.  Then the same checks fail when
# there is something extra (KUMI_VERBOSE=1 prints the transports).
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
prog=$TESTBIN/launch_quiet
[ -x "$prog" ] || { echo "SKIP: $prog not built"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Settings of the caller's environment that make Kumi talk on purpose.
unset KUMI_VERBOSE MPI_COMPONENTS
while IFS= read -r v; do unset "$v"; done < <(env | sed -n 's/^\(KUMI_[A-Z0-9_]*VERBOSE\)=.*/\1/p')

# expected MODE N: the lines launch_quiet MODE prints with N ranks, sorted
expected() {
    local r
    case $1 in
    hello) for ((r = 0; r < $2; r++)); do echo "hello $r of $2"; done ;;
    p2p) for ((r = 0; r < $2; r++)); do echo "p2p $r from $(( (r + $2 - 1) % $2 ))"; done ;;
    coll) echo "coll $2 sum $(( $2 * ($2 + 1) / 2 ))" ;;
    esac | LC_ALL=C sort
}

# run LABEL MODE N [env...]: one run, exact stdout and empty stderr
run() {
    local label=$1 mode=$2 n=$3; shift 3
    env "$@" timeout 120 "$MPIEXEC" -n "$n" "$prog" "$mode" > "$tmp/out" 2> "$tmp/err"
    local rc=$?
    [ $rc -eq 0 ] || { head -5 "$tmp/err"; echo "$label: mpiexec -n $n launch_quiet $mode exited $rc"; return 1; }
    expected "$mode" "$n" > "$tmp/want"
    LC_ALL=C sort "$tmp/out" > "$tmp/got"
    if ! cmp -s "$tmp/want" "$tmp/got"; then
        diff "$tmp/want" "$tmp/got" | head -10
        echo "$label: mpiexec -n $n launch_quiet $mode: stdout is not exactly the program's lines"
        return 1
    fi
    if [ -s "$tmp/err" ]; then
        head -5 "$tmp/err"
        echo "$label: mpiexec -n $n launch_quiet $mode: stderr has $(wc -l < "$tmp/err") line(s), expected none"
        return 1
    fi
    return 0
}

bad=0
for comps in unset "p2p=self,tcp"; do
    if [ "$comps" = unset ]; then set --; else set -- MPI_COMPONENTS="$comps"; fi
    for mode in hello p2p coll; do
        for n in 1 2 4 8; do
            run "MPI_COMPONENTS=$comps" "$mode" "$n" "$@" || bad=$((bad + 1))
        done
    done
done
[ $bad -eq 0 ] || fail "$bad run(s) printed something the program did not print"

# The checks can fail: asked-for output is seen as extra.
run verbose hello 2 KUMI_VERBOSE=1 > /dev/null && fail "KUMI_VERBOSE=1 printed nothing on stderr (or the check missed it)"
grep -q 'serves ranks' "$tmp/err" || fail "KUMI_VERBOSE=1 did not report the transports: $(head -3 "$tmp/err")"
# ... and a real mistake stays loud: a KUMI_ variable that names no parameter.
run typo hello 2 KUMI_P2P_SHMEM_RINGSIZ=1 > /dev/null && fail "a misspelt parameter was not reported"
grep -q 'names no parameter' "$tmp/err" || fail "misspelt parameter: unexpected stderr: $(head -3 "$tmp/err")"
run stdout-check hello 3 MPI_COMPONENTS= > /dev/null || fail "a plain run with MPI_COMPONENTS empty was not quiet"
expected hello 2 > "$tmp/want2"
expected hello 3 | cmp -s - "$tmp/want2" && fail "expected lines do not depend on the size"
echo "launch_quiet: ok"
exit 0
