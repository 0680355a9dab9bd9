#!/bin/bash
# coll/tuned: the barrier of 3 and 4 processes is linear (fan-in to rank 0,
# which releases the others), so rank 0 leaves first and a broadcast from it
# right after a barrier does not wait for it (issue 22 item 4: with the
# dissemination barrier rank 3 always left before rank 0, which made an
# 8-byte MPI_Bcast after MPI_Barrier 5-8 times Open MPI's at 4 ranks on 2
# cores).  2 processes keep the dissemination barrier (one exchange), and so
# do 5 and more.  The barrier's results are checked by coll_tuned; this
# checks the choices (verbose output) and that a forced algorithm still wins.
set -u
fail() { echo "FAIL: $*"; exit 1; }
cd "$TESTBIN" || fail "no $TESTBIN"
for n in 2 3 4 5 8; do
    case $n in 3|4) want=linear ;; *) want=dissemination ;; esac
    out=$("$MPIEXEC" --timeout 120 --param coll_tuned_verbose=1 -n $n ./coll_tuned barrier 2>&1) ||
        fail "run at $n processes: $(echo "$out" | tail -5)"
    echo "$out" | grep -q "coll/tuned\[0\]: barrier on $n processes, 0 bytes: $want (table)" ||
        fail "barrier at $n processes is not $want: $(echo "$out" | grep 'barrier on' | sort -u | head -3)"
    echo "barrier at $n processes: $want"
done
out=$("$MPIEXEC" --timeout 120 --param coll_tuned_verbose=1 --param coll_tuned_barrier_algorithm=dissemination \
      -n 4 ./coll_tuned barrier 2>&1) || fail "forced run: $(echo "$out" | tail -5)"
echo "$out" | grep -q 'barrier on 4 processes, 0 bytes: dissemination (forced)' ||
    fail "forced dissemination not used at 4 processes"
echo "PASS"
