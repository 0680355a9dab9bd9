#!/bin/bash
# p2p/tcp listens only where a peer needs it (issue 15, 9d).
# 1. A 4-rank job on one host with the default components (self, shmem
#    reach every peer): while it runs, no rank holds a listening TCP socket.
# 2. The same job with MPI_COMPONENTS=p2p=self,tcp: every rank listens, and
#    only on loopback (a job on one host), never on 0.0.0.0.
# 3. MPI_COMPONENTS=p2p=tcp (tcp also carries a rank's messages to itself):
#    every rank listens on loopback.
set -u
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
dir=$(mktemp -d /tmp/kumi-tcplisten.XXXXXX)
job_pid=
cleanup() { touch "$dir/go"; [ -n "$job_pid" ] && kill "$job_pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT

# listeners PID: "ip:port" of each listening IPv4 TCP socket the process holds
listeners() {
    python3 "$top_srcdir/tests/scripts/lib/proc_listeners.py" "$1"
}

# run_and_check LABEL EXPECT(none|loopback) MPIEXEC-ARGS...
run_and_check() {
    local label=$1 expect=$2; shift 2
    rm -f "$dir/ready" "$dir/go"
    "$MPIEXEC" --timeout 120 "$@" "$TESTBIN/p2p_hold" "$dir" > "$dir/out" 2> "$dir/err" < /dev/null &
    job_pid=$!
    for i in $(seq 1 600); do
        [ -e "$dir/ready" ] && break
        kill -0 "$job_pid" 2>/dev/null || break
        sleep 0.1
    done
    [ -e "$dir/ready" ] || { cat "$dir/err"; echo "$label: the job did not start"; exit 1; }
    local bad=0
    while read -r _ r p; do
        l=$(listeners "$p" | tr '\n' ' ')
        echo "    $label: rank $r (pid $p) listens on: ${l:-nothing}"
        case $expect in
        none) [ -z "$l" ] || bad=1 ;;
        loopback)
            [ -n "$l" ] || bad=1
            for a in $l; do case $a in 127.*) ;; *) bad=1 ;; esac; done ;;
        esac
    done < <(grep '^pid ' "$dir/ready")
    touch "$dir/go"
    wait "$job_pid"; local rc=$?; job_pid=
    [ $rc -eq 0 ] || { cat "$dir/err"; echo "$label: job failed ($rc)"; exit 1; }
    grep -q '^ok ' "$dir/out" || { echo "$label: no ok"; exit 1; }
    [ ! -s "$dir/err" ] || { cat "$dir/err"; echo "$label: output on stderr"; exit 1; }
    [ $bad -eq 0 ] || { echo "$label: expected listeners: $expect"; exit 1; }
    echo "$label: ok ($expect)"
}

run_and_check "default components" none -n 4
run_and_check "p2p=self,tcp" loopback -n 4 -x MPI_COMPONENTS=p2p=self,tcp
run_and_check "p2p=tcp" loopback -n 2 -x MPI_COMPONENTS=p2p=tcp
exit 0
