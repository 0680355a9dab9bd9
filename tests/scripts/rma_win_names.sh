#!/bin/bash
# RMA shared-window segments and another local user (issue 15, 9a).
# The ranks of a window on one host share a segment that the lowest rank
# creates in /dev/shm; its name must carry a part of the job secret so that
# another user cannot create it first.
# 1. Another user (kumiprobe) creates, before the window exists, every name
#    the old scheme could give (kumi.<jobid>.win.<job rank 0>.<ctx> for the
#    first 128 context ids), mode 644: MPI_Win_allocate_shared still works,
#    and the squatter's files are never written to.
# 2. The worst case: kumiprobe knows the job secret (the test reads it from a
#    rank's environment, which only the job's user can do) and creates the
#    names HMAC(secret, "kumi win <jobid> 0 <ctx>") first: the window is not
#    made on the attacker's file: every rank gets an error whose text names
#    the segment, the job ends cleanly, the files stay empty.
set -u
. "$(dirname "$0")/probe_common.inc"

dir=$(mktemp -d /tmp/kumi-winnames.XXXXXX)
chmod 755 "$dir"
job_pid=
squatted=()
cleanup() {
    touch "$dir/go" 2>/dev/null
    [ -n "$job_pid" ] && kill "$job_pid" 2>/dev/null
    for f in "${squatted[@]}"; do rm -f "$f"; done
    rm -rf "$dir"
}
trap cleanup EXIT


# names SECRET JOB MODE: the candidate names, one per line
names() {
    python3 - "$@" <<'PY'
import hmac, hashlib, sys
secret, job, mode = sys.argv[1], sys.argv[2], sys.argv[3]
for ctx in range(128):
    if mode == "old":
        print("kumi.%s.win.0.%d" % (job, ctx))
    else:
        t = hmac.new(secret.encode(), ("kumi win %s 0 %d" % (job, ctx)).encode(), hashlib.sha256).hexdigest()
        print("kumi.%s.win.%s" % (job, t[:32]))
PY
}

run_case() { # MODE: start the job, squat, let it go; leaves output in $dir/out.MODE
    local mode=$1
    rm -f "$dir/ready" "$dir/go"
    "$MPIEXEC" --timeout 120 -n 3 "$TESTBIN/rma_win_hold" "$dir" > "$dir/out.$mode" 2> "$dir/err.$mode" < /dev/null &
    job_pid=$!
    wait_for "$dir/ready" 60 || { cat "$dir/err.$mode"; echo "$mode: the job did not start"; exit 1; }
    local job pid0 secret
    job=$(sed -n 's/^jobid //p' "$dir/ready")
    pid0=$(sed -n 's/^pid 0 //p' "$dir/ready")
    secret=$(env_of "$pid0" KUMI_JOB_SECRET)
    [ -n "$secret" ] || { echo "cannot read KUMI_JOB_SECRET of rank 0 (pid $pid0)"; exit 1; }
    local n
    for n in $(names "$secret" "$job" "$mode"); do
        "${AS_PROBE[@]}" sh -c 'umask 022; : > "$1"' sh "/dev/shm/$n" ||
            { echo "kumiprobe cannot create /dev/shm/$n"; exit 1; }
        squatted+=("/dev/shm/$n")
    done
    touch "$dir/go"
    wait "$job_pid"
    local rc=$?
    job_pid=
    for n in "${squatted[@]}"; do
        [ -e "$n" ] || { echo "$mode: the squatter's $n was removed"; exit 1; }
        [ "$(stat -c '%s %U' "$n")" = "0 kumiprobe" ] ||
            { echo "$mode: the squatter's $n changed: $(stat -c '%s %U' "$n")"; exit 1; }
        rm -f "$n"
    done
    squatted=()
    [ $rc = 0 ] || { cat "$dir/out.$mode" "$dir/err.$mode"; echo "$mode: the job failed ($rc)"; exit 1; }
}

run_case old
grep -qx "window ok" "$dir/out.old" ||
    { cat "$dir/out.old" "$dir/err.old"; echo "old names squatted: the window was not made"; exit 1; }
echo "old-scheme names squatted: window ok"

run_case new
grep -q "^window error: .*kumi\.[0-9]*\.win\.[0-9a-f]\{32\}" "$dir/out.new" ||
    { cat "$dir/out.new" "$dir/err.new"; echo "secret-derived names squatted: expected an error naming the segment"; exit 1; }
sed -n 's/^window error: /secret-derived names squatted: /p' "$dir/out.new"
exit 0
