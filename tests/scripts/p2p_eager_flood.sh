#!/bin/bash
# Unexpected eager messages have a memory bound (issue 15 item 10, the
# eager budget kumi_base_eager_budget): 20,000 x 64 KiB sent before any
# receive took the receiver to 2.45 GiB; now its peak RSS grows by little
# more than the budget (8 MiB) and the envelopes.  p2p_eager_flood checks
# order and contents and fails when the receiver's VmHWM grew by the limit
# (last argument, MiB) or more.  Over shared memory and TCP, with MPI_Isend
# and MPI_Send, to oneself (p2p/self), and with a small budget.
set -u
fail=0
run() { # what, mpiexec arguments...
    local what=$1; shift
    local out rc
    out=$(timeout 300 "$MPIEXEC" --timeout 240 "$@" 2>&1)
    rc=$?
    echo "$what: $out"
    if [ $rc -eq 77 ]; then echo "SKIP: $out"; exit 77; fi
    [ $rc -eq 0 ] || { echo "FAIL: $what (exit $rc)"; fail=1; }
}
cd "$TESTBIN" || exit 1
run "shmem, 20000 x 64 KiB MPI_Isend" -n 2 ./p2p_eager_flood 20000 65536 isend 300
# MPI_Send: the receiver waits 4 s for the sends before it receives (without a
# bound 100 MiB or more arrive in that time even on a loaded machine)
run "shmem, 20000 x 64 KiB MPI_Send" -n 2 ./p2p_eager_flood 20000 65536 send 48
run "tcp, 10000 x 64 KiB MPI_Isend" -n 2 -x MPI_COMPONENTS=p2p=self,tcp ./p2p_eager_flood 10000 65536 isend 300
run "tcp, 10000 x 64 KiB MPI_Send" -n 2 -x MPI_COMPONENTS=p2p=self,tcp ./p2p_eager_flood 10000 65536 send 48
run "self, 10000 x 64 KiB MPI_Isend to itself" -n 1 ./p2p_eager_flood 10000 65536 isend 300
run "shmem, budget 256 KiB, 20000 x 16 KiB MPI_Isend" -n 2 -x KUMI_BASE_EAGER_BUDGET=256k \
    ./p2p_eager_flood 20000 16384 isend 64
exit $fail
