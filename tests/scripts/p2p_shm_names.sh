#!/bin/bash
# p2p/shmem and another local user (issue 15, 9a; and the fall-back note of item 10).
# 1. While a 3-rank job runs, its segments in /dev/shm are regular files of
#    the job's user, mode 600, named kumi.<jobid>.<rank>.<32 hex digits> where
#    the hex digits are HMAC-SHA-256(KUMI_JOB_SECRET, "kumi p2p/shmem segment
#    <jobid> <rank>") (computed here from the secret in a rank's environment,
#    which only the job's user can read): not guessable from the job id.
# 2. Another user (kumiprobe) that knows the names anyway (the test reads the
#    secret before the ranks reach MPI_Init) creates rank 1's segment first,
#    binds rank 2's doorbell name first, and also squats the old predictable
#    name of rank 0: the job still passes its checks (ranks 1 and 2 fall back
#    to TCP), each of those ranks says on one stderr line that shared memory
#    is not used and names the segment or doorbell, and the squatter's files
#    are never written to.
# 3. A bad p2p_shmem_ring_size: the job passes over TCP and stderr has exactly
#    one line from p2p/shmem naming the parameter.
set -u
. "$(dirname "$0")/probe_common.inc"
PYP=   # a python3 that kumiprobe can run (python3 may be a shim in root's home)
for py in python3 /usr/bin/python3 /usr/local/bin/python3; do
    if "${AS_PROBE[@]}" "$py" -c pass 2>/dev/null; then PYP=$py; break; fi
done
[ -n "$PYP" ] || { echo "kumiprobe cannot run python3"; exit 77; }

dir=$(mktemp -d /tmp/kumi-shmnames.XXXXXX)
chmod 755 "$dir"
job_pid=
binder=
squat=()   # the squatter's files (mpiexec leaves another user's files alone)
cleanup() {
    touch "$dir/go" "$dir/go0" 2>/dev/null
    [ -n "$binder" ] && kill "$binder" 2>/dev/null
    [ -n "$job_pid" ] && kill "$job_pid" 2>/dev/null
    rm -f /dev/shm/kumiprobe-keep.$$.* "${squat[@]}"
    rm -rf "$dir"
}
trap cleanup EXIT


# hmac SECRET LABEL -> hex
hmac() { python3 -c 'import hmac,hashlib,sys; print(hmac.new(sys.argv[1].encode(), sys.argv[2].encode(), hashlib.sha256).hexdigest())' "$1" "$2"; }

# ---------------------------------------------------------------- 1
"$MPIEXEC" --timeout 150 -n 3 "$TESTBIN/p2p_hold" "$dir" > "$dir/out1" 2> "$dir/err1" < /dev/null &
job_pid=$!
wait_for "$dir/ready" 60 || { cat "$dir/err1"; echo "the job did not start"; exit 1; }
job=$(sed -n 's/^jobid //p' "$dir/ready")
pid0=$(sed -n 's/^pid 0 //p' "$dir/ready")
secret=$(env_of "$pid0" KUMI_JOB_SECRET)
[ -n "$secret" ] || { echo "cannot read KUMI_JOB_SECRET of rank 0 (pid $pid0)"; exit 1; }
me=$(id -u)
n=0
for f in /dev/shm/kumi."$job".*; do
    [ -e "$f" ] || continue
    b=$(basename "$f")
    case "$b" in kumi."$job".[0-9]*.*) ;; *) continue ;; esac   # the shmem segments
    n=$((n + 1))
    st=$(stat -c '%a %u %F' "$f")
    [ "$st" = "600 $me regular file" ] || { echo "$b: '$st', expected '600 $me regular file'"; exit 1; }
    rank=$(echo "$b" | sed -n "s/^kumi\.$job\.\([0-9]*\)\.\([0-9a-f]\{32\}\)$/\1/p")
    [ -n "$rank" ] || { echo "$b: not kumi.$job.<rank>.<32 hex digits>"; exit 1; }
    tok=$(hmac "$secret" "kumi p2p/shmem segment $job $rank" | cut -c1-32)
    [ "$b" = "kumi.$job.$rank.$tok" ] || { echo "$b: expected kumi.$job.$rank.$tok"; exit 1; }
done
ls -l /dev/shm | grep "kumi\.$job\." | sed 's/^/    /'
[ "$n" = 3 ] || { echo "found $n segments of job $job in /dev/shm, expected 3"; exit 1; }
for r in 0 1 2; do
    [ ! -e "/dev/shm/kumi.$job.$r" ] || { echo "the old predictable name kumi.$job.$r exists"; exit 1; }
done
touch "$dir/go"
wait "$job_pid"; rc=$?; job_pid=
[ $rc -eq 0 ] || { cat "$dir/err1"; echo "job 1 failed ($rc)"; exit 1; }
grep -q '^ok ' "$dir/out1" || { echo "job 1 printed no ok"; exit 1; }
[ ! -s "$dir/err1" ] || { cat "$dir/err1"; echo "job 1 printed on stderr"; exit 1; }
echo "1. job $job: 3 segments, mode 600, owner $me, names carry the HMAC of the secret"

# ---------------------------------------------------------------- 2
rm -f "$dir/ready" "$dir/go"
"$MPIEXEC" --timeout 150 -n 3 bash -c \
    'while [ ! -e "$0/go0" ]; do sleep 0.05; done; exec "$1" "$0"' "$dir" "$TESTBIN/p2p_hold" \
    > "$dir/out2" 2> "$dir/err2" < /dev/null &
job_pid=$!
# find the three waiting shells (the ranks before MPI_Init) and read their environment
pid1=
for i in $(seq 1 300); do
    for p in $(pgrep -f -- "$dir"); do
        [ "$(env_of "$p" KUMI_RANK)" = 1 ] && pid1=$p
    done
    [ -n "$pid1" ] && break
    sleep 0.1
done
[ -n "$pid1" ] || { echo "did not find rank 1 of job 2"; exit 1; }
secret=$(env_of "$pid1" KUMI_JOB_SECRET)
job=$(env_of "$pid1" KUMI_JOBID)
[ -n "$secret" ] && [ -n "$job" ] || { echo "no secret or job id in the ranks' environment"; exit 1; }
seg1="kumi.$job.1.$(hmac "$secret" "kumi p2p/shmem segment $job 1" | cut -c1-32)"
bell2="kumi.$job.2.$(hmac "$secret" "kumi p2p/shmem doorbell $job 2" | cut -c1-32)"
old0="kumi.$job.0"
# the squatter: files readable and writable by all (the worst case), bytes it would recognise
for f in "$seg1" "$old0"; do
    "${AS_PROBE[@]}" sh -c "umask 0; head -c 65536 /dev/zero | tr '\\0' 'Q' > /dev/shm/$f && \
        ln /dev/shm/$f /dev/shm/kumiprobe-keep.$$.$f" || { echo "kumiprobe could not create /dev/shm/$f"; exit 1; }
    squat+=("/dev/shm/$f")
done
"${AS_PROBE[@]}" "$PYP" -c '
import socket, sys, os, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + sys.argv[1])
print("bound", flush=True)
t = time.time()
while not os.path.exists(sys.argv[2] + "/go") and time.time() - t < 150:
    time.sleep(0.1)
' "$bell2" "$dir" > "$dir/binder" 2>&1 &
binder=$!
for i in $(seq 1 100); do grep -q bound "$dir/binder" && break; sleep 0.1; done
grep -q bound "$dir/binder" || { cat "$dir/binder"; echo "kumiprobe could not bind @$bell2"; exit 1; }
touch "$dir/go0"
wait_for "$dir/ready" 60 || { cat "$dir/err2"; echo "job 2 did not start"; exit 1; }
sleep 0.5
touch "$dir/go"
wait "$job_pid"; rc=$?; job_pid=
cat "$dir/err2" | sed 's/^/    /'
[ $rc -eq 0 ] || { echo "job 2 failed ($rc)"; exit 1; }
grep -q '^ok ' "$dir/out2" || { echo "job 2 printed no ok"; exit 1; }
c=$(grep -c "p2p/shmem: not used: segment /dev/shm/$seg1 exists already" "$dir/err2")
[ "$c" = 1 ] || { echo "expected one line naming /dev/shm/$seg1, got $c"; exit 1; }
c=$(grep -c "p2p/shmem: not used: doorbell socket @$bell2" "$dir/err2")
[ "$c" = 1 ] || { echo "expected one line naming the doorbell @$bell2, got $c"; exit 1; }
c=$(grep -c . "$dir/err2")
[ "$c" = 2 ] || { echo "expected 2 lines on stderr, got $c"; exit 1; }
for f in "$seg1" "$old0"; do
    k=/dev/shm/kumiprobe-keep.$$.$f
    [ "$(stat -c '%s %U' "$k")" = "65536 kumiprobe" ] || { echo "$f was changed: $(stat -c '%s %U' "$k")"; exit 1; }
    [ "$(tr -d Q < "$k" | wc -c)" = 0 ] || { echo "the job wrote into the squatter's $f"; exit 1; }
    [ -e "/dev/shm/$f" ] || { echo "mpiexec removed the squatter's /dev/shm/$f"; exit 1; }
done
kill "$binder" 2>/dev/null; binder=
echo "2. job $job: squatted segment and doorbell refused by name, squatter's files untouched, job passed over TCP"

# ---------------------------------------------------------------- 3
out=$(timeout 120 "$MPIEXEC" --param p2p_shmem_ring_size=5000 -n 3 "$TESTBIN/shm_sizes" 2> "$dir/err3" < /dev/null)
rc=$?
cat "$dir/err3" | sed 's/^/    /'
[ $rc -eq 0 ] || { echo "$out" | tail -5; echo "job 3 failed ($rc)"; exit 1; }
c=$(grep -c . "$dir/err3")
[ "$c" = 1 ] || { echo "expected one line on stderr, got $c"; exit 1; }
grep -q "p2p/shmem: not used: p2p_shmem_ring_size (5000) must be a power of two" "$dir/err3" ||
    { echo "the line does not name p2p/shmem and p2p_shmem_ring_size"; exit 1; }
echo "3. bad p2p_shmem_ring_size: one line on stderr, the job ran over TCP"
exit 0
