#!/bin/bash
# What limits one 4 MiB bandwidth run across the wide-area lab (issue 19: the
# IMPI path's 4 MiB bandwidth against native tcp, impi-bench.sh): the lab at
# one delay, mpibench -m bw -s 4194304 once over Kumi's tcp (mpiexec -n 2,
# netns_rank.py) and once over IMPI (two clients of one rank each), while
# `ss -tmi` samples the TCP sockets of both clusters every 0.1 s.  For each
# path it prints the bandwidth and, for the connection that carried the data,
# the last sample on the sending side (cwnd, snd_wnd, send buffer, unacked,
# notsent, busy / rwnd_limited / sndbuf_limited: the kernel's account of what
# held the sender back) and the receiving side (rcv_space, rcv_ssthresh, rcv
# buffer), and the largest send-queue and receive-queue seen.
#
#     sudo top_builddir=... bash tests/bench/impi-ss.sh [DELAY_MS (5)]
#
# Env: KUMI_BENCH_IMPI_MBIT (100), KUMI_BENCH_OUT (raw samples: impi-ss.PATH.{A,B}).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
out=${KUMI_BENCH_OUT:-$top_builddir/tests/bench-logs}
d=${1:-5}
mbit=${KUMI_BENCH_IMPI_MBIT:-100}
mkdir -p "$out" || exit 1
MPIEXEC=$top_builddir/tools/mpiexec/mpiexec
SERVER=$top_builddir/tools/impi_server/impi_server
TESTBIN=$top_builddir/tests/mpi   # wanlab.sh runs $TESTBIN/wan_delay
export TESTBIN
export KUMI_COMPONENT_PATH=${KUMI_COMPONENT_PATH:-$(ls -d "$top_builddir"/components/*/*/.libs 2>/dev/null | tr '\n' ':')}
export KUMI_INTERNAL_NO_PKGLIBDIR=1
work=$(mktemp -d) || exit 1
bench=$work/mpibench
${CC:-cc} -std=gnu11 -O2 -I"$top_builddir/framework/include" -I"$top_srcdir/framework/include" -o "$bench" \
    "$here/mpibench.c" -L"$top_builddir/framework/.libs" -Wl,-rpath,"$top_builddir/framework/.libs" -lmpi ||
    { echo "impi-ss: building mpibench failed"; exit 1; }
. "$top_srcdir/tests/scripts/wanlab.sh"
wanlab_up $((d * 1000)) "$mbit" || exit $?
A=${WL_NS_A##*/} B=${WL_NS_B##*/}
BW=(-m bw -s 4194304 -x 0.4 -r 1)
sample() { # NS FILE: ss -tmi every 0.1 s until $work/stop exists
    while [ ! -e "$work/stop" ]; do
        { echo "@ $(date +%s.%N)"; ip netns exec "$1" ss -tmiHn state established; } >> "$2"
        sleep 0.1
    done
}
run_path() { # PATH
    rm -f "$work/stop"
    : > "$out/impi-ss.$1.A"; : > "$out/impi-ss.$1.B"
    sample "$A" "$out/impi-ss.$1.A" & local s1=$!
    sample "$B" "$out/impi-ss.$1.B" & local s2=$!
    if [ "$1" = tcp ]; then
        timeout 300 "$MPIEXEC" --timeout 280 -n 2 -x MPI_COMPONENTS=p2p=self,shmem,tcp \
            python3 "$top_srcdir/tests/scripts/netns_rank.py" 1 "$WL_NS_A" "$WL_NS_B" -- "$bench" "${BW[@]}"
    else
        rm -f "$work/port"
        ip netns exec "$A" timeout 300 "$SERVER" -n 2 -host "$WL_ADDR_A" -portfile "$work/port" -timeout 60 > /dev/null &
        local sp=$! hp
        for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.05; done
        hp=$(cat "$work/port" 2>/dev/null)
        ip netns exec "$B" taskset -c 1 timeout 290 "$MPIEXEC" --timeout 280 --bind-to none -n 1 --impi-client 1 \
            --impi-server "$hp" "$bench" "${BW[@]}" > /dev/null &
        local pb=$!
        ip netns exec "$A" taskset -c 0 timeout 290 "$MPIEXEC" --timeout 280 --bind-to none -n 1 --impi-client 0 \
            --impi-server "$hp" "$bench" "${BW[@]}"
        wait $pb; wait $sp
    fi
    touch "$work/stop"; wait $s1 $s2
}
# the data connection: the socket with the most bytes_acked (sender, in A) /
# bytes_received (receiver, in B); its last sample, and the queue maxima
summ() { # FILE FIELD
    awk -v f="$2" '
        /^@/ { next }
        /^[^ \t]/ { n = split($0, w, " "); r = w[n - 3] + 0; q = w[n - 2] + 0; key = w[n - 1] ">" w[n]
                    if (r > rq[key]) rq[key] = r; if (q > sq[key]) sq[key] = q; next }
        key != "" && match($0, f ":[0-9]+") { v = substr($0, RSTART + length(f) + 1, RLENGTH - length(f) - 1) + 0
            if (v >= best[key]) { best[key] = v; last[key] = $0 } }
        END { for (k in best) if (best[k] > top) { top = best[k]; tk = k }
              if (tk != "") { print "  " tk " max Recv-Q " rq[tk] " max Send-Q " sq[tk]; print "  " last[tk] } }' "$1"
}
for path in tcp impi; do
    echo "== $path, $d ms, $mbit Mbit/s"
    run_path $path | grep '^bw'
    echo " sender (cluster A):"; summ "$out/impi-ss.$path.A" bytes_acked
    echo " receiver (cluster B):"; summ "$out/impi-ss.$path.B" bytes_received
done
wanlab_down
rm -rf "$work"
