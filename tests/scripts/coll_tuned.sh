#!/bin/bash
# coll/tuned: every algorithm of every collective, forced by parameter
# (coll_tuned_<op>_algorithm), runs the checked collectives of coll_tuned
# (blocking, non-blocking, persistent; odd counts, in place, holes,
# non-commutative op), coll_userop and nbc_types at several process counts,
# with tiny and default pipeline segments.  The algorithm lists come from
# kumi_info, so a new algorithm is tested without editing this script.
# Also: the forced algorithm is the one that runs (verbose output), a table
# file's rules come first, bad parameter values and table lines are reported
# by name, and kumi_info lists the algorithms.
set -u
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$TESTBIN" || fail "no $TESTBIN"

# Algorithms per operation, from the parameters' help.
"$KUMI_INFO" --param coll tuned --parsable > "$work/info" 2>&1 || fail "kumi_info: $(cat "$work/info")"
grep -q '^param:coll_tuned_bcast_algorithm:help:.*scatter_allgather' "$work/info" ||
    fail "kumi_info --param coll tuned does not list bcast's algorithms"
declare -A algs
ops=()
while IFS= read -r line; do
    op=${line#param:coll_tuned_}; op=${op%%_algorithm:help:*}
    list=${line#*auto (the decision table), }
    list=$(echo "$list" | sed 's/ ([^)]*)//g; s/,//g')
    algs[$op]=$list
    ops+=("$op")
done < <(grep '^param:coll_tuned_[a-z_]*_algorithm:help:' "$work/info")
[ ${#ops[@]} -ge 15 ] || fail "expected 15 operations with algorithms, found ${#ops[@]}: ${ops[*]}"
max=0
for op in "${ops[@]}"; do
    n=$(echo "${algs[$op]}" | wc -w)
    [ "$n" -ge 2 ] || fail "$op has fewer than two algorithms: ${algs[$op]}"
    [ "$n" -gt $max ] && max=$n
done
echo "operations: ${ops[*]} (up to $max algorithms each)"

# Set k forces algorithm k (modulo the operation's count) of every operation.
params_for() { # k
    local k=$1 out="" op a
    for op in "${ops[@]}"; do
        read -r -a a <<< "${algs[$op]}"
        out="$out --param coll_tuned_${op}_algorithm=${a[$((k % ${#a[@]}))]}"
    done
    echo "$out"
}
nfail=0; nrun=0
run() { # description, mpiexec arguments...
    local d=$1; shift
    nrun=$((nrun + 1))
    if ! timeout 300 "$MPIEXEC" --timeout 240 "$@" > "$work/out" 2>&1; then
        nfail=$((nfail + 1)); echo "FAIL: $d: mpiexec $*"; tail -5 "$work/out" | sed 's/^/    | /'
    fi
}
for ((k = 0; k < max; k++)); do
    p=$(params_for $k)
    echo "set $k:$p"
    for n in 1 2 3 4 5 8; do
        seg=$([ $((n % 2)) = 1 ] && echo 100 || echo 65536)
        # shellcheck disable=SC2086
        run "set $k, $n processes" $p --param coll_tuned_segment_size=$seg -n $n ./coll_tuned
    done
    for n in 3 4; do
        # shellcheck disable=SC2086
        run "set $k, coll_userop $n" $p --param coll_tuned_segment_size=64 -n $n ./coll_userop
        # shellcheck disable=SC2086
        run "set $k, nbc_types $n" $p --param coll_tuned_segment_size=64 -n $n ./nbc_types
    done
done
echo "$nrun runs with forced algorithms, $nfail failed"
[ $nfail = 0 ] || exit 1

# The forced algorithm is the one that runs; one it cannot run falls back to the table.
# (coll_sm_bcast_pieces=0: 3 ranks on 2 cores, coll/sm would take the 400008-byte
# broadcast in pieces before coll/tuned sees it)
out=$("$MPIEXEC" --param coll_tuned_verbose=1 --param coll_tuned_bcast_algorithm=pipeline \
      --param coll_sm_bcast_pieces=0 --param coll_tuned_allreduce_algorithm=ring -n 3 ./coll_tuned bcast 2>&1) || fail "verbose run: $out"
echo "$out" | grep -q 'coll/tuned\[2\]: bcast on 3 processes, 400008 bytes: pipeline (forced)' ||
    fail "forced bcast algorithm not reported: $(echo "$out" | head -5)"
echo "$out" | grep -q 'non-blocking bcast on 3 processes, [0-9]* bytes: pipeline (forced)' ||
    fail "forced algorithm not used by Ibcast: $(echo "$out" | grep non-blocking | head -3)"
out=$("$MPIEXEC" --param coll_tuned_verbose=1 --param coll_tuned_allreduce_algorithm=ring \
      -n 3 ./coll_tuned red 2>&1) || fail "verbose run: $out"
echo "$out" | grep -q 'allreduce on 3 processes, 4000 bytes: ring (forced)' ||
    fail "ring not forced for MPI_SUM: $(echo "$out" | grep allreduce | head -3)"
echo "$out" | grep -q 'allreduce on 3 processes, [0-9]* bytes: [a-z_]* (forced algorithm cannot run this call; table)' ||
    fail "ring was not replaced for the non-commutative op"

# A table file's rules come before the built-in table.
printf '# test rules\nbcast   p=3,bytes>=1k   linear\nallreduce  *  reduce_bcast   # all sizes\n' > "$work/table"
out=$("$MPIEXEC" --param coll_tuned_verbose=1 --param coll_tuned_table="$work/table" --param coll_sm_bcast_pieces=0 \
      -n 3 ./coll_tuned bcast 2>&1) || fail "table run: $out"
echo "$out" | grep -q 'bcast on 3 processes, 400008 bytes: linear (table)' || fail "table file rule not used"
echo "$out" | grep -q 'bcast on 3 processes, 8 bytes: linear' && fail "table file rule used outside its condition"

# Bad values: named in a warning, and the job still runs (on coll/basic).
out=$("$MPIEXEC" --param coll_tuned_bcast_algorithm=fastest -n 2 ./coll_tuned barrier 2>&1) ||
    fail "run with a bad algorithm name failed: $out"
echo "$out" | grep -q "coll_tuned_bcast_algorithm: unknown algorithm 'fastest' (auto, binomial," ||
    fail "bad algorithm name not reported: $out"
printf 'bcast * linear\nallreduce p>>3 ring\n' > "$work/bad"
out=$("$MPIEXEC" --param coll_tuned_table="$work/bad" -n 2 ./coll_tuned barrier 2>&1) ||
    fail "run with a bad table failed: $out"
echo "$out" | grep -q "$work/bad:2: bad condition 'p>>3'" || fail "bad table line not reported: $out"
out=$("$MPIEXEC" --param coll_tuned_table="$work/missing" -n 1 ./coll_tuned barrier 2>&1)
echo "$out" | grep -q "cannot open $work/missing" || fail "missing table file not reported: $out"
echo "PASS"
