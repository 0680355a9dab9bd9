#!/bin/bash
# err_call_fatal: under MPI_ERRORS_ARE_FATAL, what the job prints on stderr
# names the MPI call the user made (issue 15 item 8), once per line:
#  - an error raised inside coll/tuned (a truncated receive in MPI_Bcast): the
#    handler's printout "kumi[1]: MPI_Bcast: collective: ... (MPI_ERR_TRUNCATE)"
#    and mpiexec's abort line;
#  - the request layer's fatal path (kumi_err_fatal: no memory even for the
#    envelope of an unexpected message) inside MPI_Iprobe.
# tests/mpi/err_call.c (its arguments "bcast" and "unexpected") makes the errors.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# run CASE: the job must fail, not hang
run() {
    timeout 60 "$MPIEXEC" -n 2 "$TESTBIN/err_call" "$1" > "$tmp/out" 2> "$tmp/err" < /dev/null
    local rc=$?
    cat "$tmp/err"
    [ $rc -ne 0 ] || fail "$1: the job succeeded"
    [ $rc -ne 124 ] || fail "$1: the job hung"
    grep -q "^FAIL" "$tmp/err" && fail "$1: the program went on after the error"
    return 0
}
# expect CASE REGEX: a stderr line matches; every line that names an MPI call names one once
expect() {
    grep -Eq "$2" "$tmp/err" || fail "$1: no line /$2/ on stderr"
    if grep -E "MPI_[A-Z][a-z_]+:.*\bMPI_[A-Z][a-z_]+:" "$tmp/err" | grep -v "MPI_Abort(" | grep -q .; then
        fail "$1: a line names a call twice"
    fi
}
run bcast
expect bcast '^kumi\[1\]: MPI_Bcast: collective: a message of 16 bytes from rank 0 was truncated to 4 bytes \(the ranks disagree on counts or datatypes\) \(MPI_ERR_TRUNCATE\)$'
expect bcast 'rank 1 .*: MPI_Bcast: collective: a message of 16 bytes from rank 0 was truncated'
run unexpected
expect unexpected '^kumi\[1\]: MPI_Iprobe: rank 1: out of memory for an unexpected message of [0-9]+ bytes from rank 0'
expect unexpected 'rank 1 .*: MPI_Iprobe: rank 1: out of memory'
echo ok
