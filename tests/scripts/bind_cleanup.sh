#!/bin/bash
# bind_cleanup: mpiexec removes every /dev/shm/kumi.<jobid>.* of its job
# (the shared-memory naming rule, tools/mpiexec/mpiexec.h) however the job
# ends: normal end, MPI_Abort, a rank exiting non-zero, kill -9 of a rank,
# SIGTERM to mpiexec.  The ranks (tests/mpi/bind_shm) create
# /kumi.<jobid>.bindtest.<rank>, and rank 0 also /kumi.<jobid>0.bindtest,
# another job's name that must be left alone.
set -u
: "${MPIEXEC:?}" "${TESTBIN:?}"
[ -x "$TESTBIN/bind_shm" ] || { echo "SKIP: bind_shm not built"; exit 77; }
[ -d /dev/shm ] && [ -w /dev/shm ] || { echo "SKIP: no writable /dev/shm"; exit 77; }
tmp=$(mktemp -d) || exit 1
prog=$tmp/bind_shm_u$$                          # unique name for pgrep
cp "$TESTBIN/bind_shm" "$prog" || exit 1
jobids=()
cleanup() {
    pkill -KILL -f "$prog" 2>/dev/null
    for j in "${jobids[@]}"; do rm -f /dev/shm/kumi."$j".bindtest.* /dev/shm/kumi."$j"0.bindtest; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in out err; do [ -s "$tmp/$f" ] && sed "s/^/  $f| /" "$tmp/$f"; done; exit 1; }

# wait_ready N: all N ranks printed "ready"; sets jobid
wait_ready() {
    for _ in $(seq 200); do
        [ "$(grep -c '^ready ' "$tmp/out" 2>/dev/null)" -ge "$1" ] && break
        sleep 0.05
    done
    [ "$(grep -c '^ready ' "$tmp/out")" -ge "$1" ] || fail "ranks not ready"
    jobid=$(awk '/^ready /{ print $4; exit }' "$tmp/out")
    jobids+=("$jobid")
}
# check_gone NAME N: nothing of the job left, the look-alike kept
check_gone() {
    local left; left=$(ls /dev/shm | grep -c "^kumi\.$jobid\.")
    [ "$left" -eq 0 ] || fail "$1: left in /dev/shm: $(ls /dev/shm | grep "^kumi\.$jobid\.")"
    [ -e "/dev/shm/kumi.${jobid}0.bindtest" ] || fail "$1: another job's kumi.${jobid}0.bindtest was removed"
    rm -f "/dev/shm/kumi.${jobid}0.bindtest"
    sleep 0.2
    pgrep -f "$prog" > /dev/null && fail "$1: processes left running"
    echo "$1: status $rc, /dev/shm clean"
}
# run NAME STATUS N mode: a job that ends by itself
run() {
    local name=$1 want=$2 n=$3 mode=$4
    timeout 60 "$MPIEXEC" -n "$n" "$prog" "$mode" > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ $rc -eq "$want" ] || fail "$name: status $rc, expected $want"
    wait_ready 1
    check_gone "$name"
}

run normal 0 2 ok
run abort  3 3 abort
run exit   2 3 exit

# kill -9 of one rank while all block: first the objects exist, then they are gone
timeout 60 "$MPIEXEC" -n 3 "$prog" block > "$tmp/out" 2> "$tmp/err" &
mx=$!
wait_ready 3
[ "$(ls /dev/shm | grep -c "^kumi\.$jobid\.bindtest\.")" -eq 3 ] || fail "kill9: the ranks' objects do not exist"
kill -9 "$(awk '$1 == "ready" && $2 == 1 { print $3 }' "$tmp/out")"
wait $mx; rc=$?
[ $rc -eq 137 ] || fail "kill9: status $rc, expected 137"
check_gone kill9

# SIGTERM to mpiexec itself
timeout 60 "$MPIEXEC" -n 2 "$prog" block > "$tmp/out" 2> "$tmp/err" &
mx=$!
wait_ready 2
[ "$(ls /dev/shm | grep -c "^kumi\.$jobid\.bindtest\.")" -eq 2 ] || fail "sigterm: the ranks' objects do not exist"
kill -TERM "$jobid"            # the job id is mpiexec's pid
wait $mx; rc=$?
[ $rc -eq 143 ] || fail "sigterm: status $rc, expected 143"
check_gone sigterm
echo "bind_cleanup: ok"
exit 0
