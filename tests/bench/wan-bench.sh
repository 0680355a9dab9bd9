#!/bin/bash
# All-to-all over the wide-area lab, paced vs unpaced (issue 19 items 6-7):
# the "wan" configuration of run-bench.sh (which runs this script; it can
# also run alone, as root where network namespaces can be made).
#
# Two clusters of KUMI_BENCH_WAN_RANKS ranks each (default 2) as network
# namespaces behind a router with a 100 Mbit/s tbf bottleneck and a one-way
# delay of 0, 5 and 10 ms (tests/scripts/wanlab.sh, loss-based TCP), the
# topology file giving the link (12.5 MB/s, the delay as its latency: at 0 ms
# pacing/sockrate leaves it alone, pacing_sockrate_min_latency_us).  Kernels (tests/mpi/wan_a2a.c):
#   IS  NAS IS class W's key exchange: per iteration an MPI_Alltoall of the
#       counts and an MPI_Alltoallv of uneven buckets around 2^20 keys x 4 B /
#       P^2 (256 KiB a pair at P = 4), 10 iterations (IS's);
#   FT  NAS FT class W's transpose: MPI_Alltoall of 8 MiB / P^2 (512 KiB a
#       pair at P = 4), 6 iterations (FT's), bandwidth-bound.
# Each: Kumi unpaced (pacing_sockrate_enable=0) and paced by each of
# pacing_sockrate_divide's rules, a rank's rate being link / senders of the
# cluster (GridMPI's per-process rate): "auto" (the default: as "senders"
# where coll/tuned goes pairwise, else as "sockets"; at 2 + 2 ranks Kumi's
# all-to-all sends to every peer at once, so auto is "sockets" here),
# "senders" (that rate on every socket: the issue's words, too much when a
# rank sends to several peers at once) and "sockets" (the rate / the rank's
# peers across on each), KUMI_BENCH_REPS
# interleaved runs (default 3), the median time of the measured iterations
# and the bottleneck's drops (tc -s qdisc on the router, both directions)
# of that run.  Open MPI (KUMI_BENCH_PEERS has "ompi", the default) runs the
# same program, built with mpicc.openmpi, over the same namespaces in the
# same rounds: mpirun.openmpi in cluster A starts one orted per cluster
# through tests/bench/netns-rsh.sh (an rsh agent: `ip netns exec` and a UTS
# namespace named after the host, no sshd), the hosts' ranks by slot as
# Kumi's (ranks 0..N-1 in A), ob1 with btl tcp,self,vader on the lab's
# subnets (198.18.0.0/15, also its out-of-band channel); its ratio column is
# Kumi unpaced's time / Open MPI's (above 1: Open MPI faster).
# Target: paced >= 1.3x faster than unpaced at 10 ms, no slower at 0 ms
# (within 5 %), near-zero drops (at most 1 per 1000 packets moved).
#
# Rows "-I": the same over IMPI (two IMPI clients, one per cluster; see run1_impi).
#
# Env: top_srcdir, top_builddir, KUMI_BENCH_OUT, KUMI_BENCH_REPS, KUMI_BENCH_QUICK=1
#      (1 repetition, delays 0 and 10 ms), KUMI_BENCH_WAN_DELAYS="0 5 10" (ms),
#      KUMI_BENCH_WAN_PATHS ("tcp impi": Kumi's tcp across, and IMPI clients),
#      KUMI_BENCH_PEERS ("ompi mpich": only ompi is used here; none: Kumi alone).
# Writes $KUMI_BENCH_OUT/wan.table, appends to $KUMI_BENCH_OUT/targets and
# writes $KUMI_BENCH_OUT/wan.kumi.status (ok, or why not).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
out=${KUMI_BENCH_OUT:-$top_builddir/tests/bench-logs}
quick=${KUMI_BENCH_QUICK:-0}
reps=${KUMI_BENCH_REPS:-3}
[ "$quick" = 1 ] && reps=1
delays=${KUMI_BENCH_WAN_DELAYS:-$([ "$quick" = 1 ] && echo "0 10" || echo "0 5 10")}
n=${KUMI_BENCH_WAN_RANKS:-2}
mkdir -p "$out" || exit 1
status() { echo "$1" > "$out/wan.kumi.status"; }
MPIEXEC=$top_builddir/tools/mpiexec/mpiexec
TESTBIN=$top_builddir/tests/mpi
export KUMI_COMPONENT_PATH=${KUMI_COMPONENT_PATH:-$(ls -d "$top_builddir"/components/*/*/.libs 2>/dev/null | tr '\n' ':')}
export KUMI_INTERNAL_NO_PKGLIBDIR=1
if [ ! -x "$TESTBIN/wan_a2a" ] || [ ! -x "$TESTBIN/wan_delay" ]; then
    make -C "$top_builddir/tests" mpi/wan_a2a mpi/wan_delay > /dev/null 2>&1 ||
        { echo "wan: cannot build tests/mpi/wan_a2a.c, wan_delay.c"; status "build failed"; exit 1; }
fi
. "$top_srcdir/tests/scripts/wanlab.sh"
work=$(mktemp -d) || exit 1
topo=$work/topo
:
p=$((2 * n))
is_b=$(( (1 << 22) / (p * p) )) ft_b=$(( (8 << 20) / (p * p) ))
kernels=("IS|-k a2av -b $is_b -n 10" "FT|-k a2a -b $ft_b -n 6")
table=$out/wan.table
: > "$table"
run1() { # args -> "seconds drops" (or "fail")
    local d0 d1 o
    d0=$(wanlab_drops)
    o=$(timeout 300 "$MPIEXEC" --timeout 280 -n $p -x MPI_COMPONENTS=p2p=self,shmem,tcp \
        -x KUMI_PACING_SOCKRATE_TOPOLOGY="$topo" "$@" 2>&1)
    local rc=$?
    d1=$(wanlab_drops)
    [ $rc -eq 0 ] || { echo "$o" | tail -5 >> "$out/wan.err"; echo "fail"; return; }
    echo "$(echo "$o" | sed -n 's/^wan_a2a: .*: \([0-9.]*\) s .*/\1/p') $((d1 - d0))"
}
# The same over IMPI (KUMI_BENCH_WAN_PATHS has "impi"): the IMPI server in A, `mpiexec -n N
# --impi-client 0` in A and `--impi-client 1` in B; each cluster is one IMPI host whose one
# connection to the other carries its N ranks' packets (p2p/impi, external32), paced by the
# launch's lowest rank at N x one sender's share and restored by the last one out.
SERVER=$top_builddir/tools/impi_server/impi_server
run1_impi() { # env assignments... -- wan_a2a args -> "seconds drops" (or "fail")
    local envs=() d0 d1 hp sp pa pb ra rb
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    rm -f "$work/port"
    ip netns exec "${WL_NS_A##*/}" timeout 300 "$SERVER" -n 2 -host "$WL_ADDR_A" -portfile "$work/port" -timeout 60 \
        > /dev/null 2>> "$out/wan.err" &
    sp=$!
    for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.05; done
    hp=$(cat "$work/port" 2>/dev/null)
    d0=$(wanlab_drops)
    env "${envs[@]}" KUMI_PACING_SOCKRATE_TOPOLOGY="$topo" ip netns exec "${WL_NS_A##*/}" timeout 290 "$MPIEXEC" \
        --timeout 280 -n "$n" --impi-client 0 --impi-server "$hp" "$TESTBIN/wan_a2a" "$@" > "$work/ia" 2>&1 &
    pa=$!
    env "${envs[@]}" KUMI_PACING_SOCKRATE_TOPOLOGY="$topo" ip netns exec "${WL_NS_B##*/}" timeout 290 "$MPIEXEC" \
        --timeout 280 -n "$n" --impi-client 1 --impi-server "$hp" "$TESTBIN/wan_a2a" "$@" > "$work/ib" 2>&1 &
    pb=$!
    wait $pa; ra=$?; wait $pb; rb=$?; wait $sp
    d1=$(wanlab_drops)
    [ $ra -eq 0 ] && [ $rb -eq 0 ] || { tail -5 "$work/ia" "$work/ib" >> "$out/wan.err"; echo "fail"; return; }
    echo "$(sed -n 's/^wan_a2a: .*: \([0-9.]*\) s .*/\1/p' "$work/ia" "$work/ib" | head -1) $((d1 - d0))"
}
# Open MPI over the same namespaces: mpirun in A, hosts wanA / wanB (one orted each,
# started by netns-rsh.sh), ranks by slot: 0..n-1 in A, n..2n-1 in B.
ompi=0
case " ${KUMI_BENCH_PEERS:-ompi mpich} " in
*" ompi "*)
    if command -v mpicc.openmpi > /dev/null 2>&1 && command -v mpirun.openmpi > /dev/null 2>&1 &&
        command -v unshare > /dev/null 2>&1; then
        if mpicc.openmpi -O2 -I"$top_srcdir/tests/mpi" -o "$work/wan_a2a.ompi" "$top_srcdir/tests/mpi/wan_a2a.c" \
            2> "$out/build.wan.ompi.err"; then ompi=1
        else echo "wan: building wan_a2a.c with mpicc.openmpi failed (see $out/build.wan.ompi.err)"; fi
    else
        echo "wan: Open MPI (mpicc.openmpi, mpirun.openmpi) or unshare(1) missing: Open MPI not run"
    fi ;;
esac
printf 'wanA slots=%d\nwanB slots=%d\n' "$n" "$n" > "$work/hosts"
run1_ompi() { # wan_a2a args -> "seconds drops" (or "fail")
    local d0 d1 o rc
    d0=$(wanlab_drops)
    o=$(NETNS_RSH_MAP="wanA=$WL_NS_A wanB=$WL_NS_B" ip netns exec "${WL_NS_A##*/}" timeout -k 5 300 \
        mpirun.openmpi --allow-run-as-root --oversubscribe -n $p --hostfile "$work/hosts" --map-by slot \
        --mca plm_rsh_agent "$here/netns-rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
        --mca oob_tcp_if_include 198.18.0.0/15 --mca btl_tcp_if_include 198.18.0.0/15 \
        --mca pml ob1 --mca btl tcp,self,vader "$work/wan_a2a.ompi" "$@" 2>&1)
    rc=$?
    d1=$(wanlab_drops)
    rm -f /dev/shm/vader_segment.wanA.* /dev/shm/vader_segment.wanB.*   # what a failed run leaves
    [ $rc -eq 0 ] || { { echo "Open MPI (rc $rc):"; echo "$o" | tail -8; } >> "$out/wan.err"; echo "fail"; return; }
    echo "$(echo "$o" | sed -n 's/^wan_a2a: .*: \([0-9.]*\) s .*/\1/p') $((d1 - d0))"
}
paths=${KUMI_BENCH_WAN_PATHS:-tcp impi}
median() { sort -g | awk '{a[NR] = $0} END {print NR ? a[int((NR + 1) / 2)] : "-"}'; }
printf "%-4s %6s %9s %6s | %9s %6s %7s | %9s %6s %7s | %9s %6s %7s | %9s %6s %7s\n" "" delay unpaced drops "auto" drops \
    speedup "senders" drops speedup "sockets" drops speedup "Open MPI" drops "u/ompi" | tee -a "$table"
ok=1
for d in $delays; do
    wanlab_up $((d * 1000)) 100 > "$work/lab.out" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        cat "$work/lab.out"
        [ $rc -eq 77 ] && { echo "wan: skipped"; status ok; rm -rf "$work"; exit 0; }
        status "lab failed"; rm -rf "$work"; exit 1
    fi
    # the topology file describes the link as it is (pacing_sockrate_min_latency_us
    # leaves a link of less than 1 ms alone)
    printf 'cluster A %s\ncluster B %s\nlink A B %d 12.5\n' "$WL_NET_A" "$WL_NET_B" $((d * 1000)) > "$topo"
    # Open MPI looks its host names up (and addresses back): in the lab a DNS query
    # waits 5 s for no answer, so `ip netns exec` gives its namespaces an /etc/hosts
    # of their own and no name server (/etc/netns/NS/, removed with the lab)
    # shellcheck disable=SC2064
    trap "wanlab_down; rm -rf /etc/netns/${WL_NS_A##*/} /etc/netns/${WL_NS_B##*/}" EXIT
    [ $ompi = 1 ] && for ns in "${WL_NS_A##*/}" "${WL_NS_B##*/}"; do
        mkdir -p "/etc/netns/$ns" && printf '127.0.0.1 localhost\n%s wanA\n%s wanB\n' "$WL_ADDR_A" "$WL_ADDR_B" \
            > "/etc/netns/$ns/hosts" && printf 'options attempts:1 timeout:1\n' > "/etc/netns/$ns/resolv.conf"
    done
    wrap=(python3 "$top_srcdir/tests/scripts/netns_rank.py" "$n" "$WL_NS_A" "$WL_NS_B")
    for k in "${kernels[@]}"; do
      for path in $paths; do
        name=${k%%|*} args=${k#*|}
        [ "$path" = impi ] && name=$name-I
        : > "$work/u"; : > "$work/p"; : > "$work/e"; : > "$work/s"; : > "$work/o"
        for r in $(seq "$reps"); do
            if [ "$path" = impi ]; then
                # shellcheck disable=SC2086
                run1_impi KUMI_PACING_SOCKRATE_ENABLE=0 -- $args >> "$work/u"
                # shellcheck disable=SC2086
                run1_impi KUMI_PACING_SOCKRATE_DIVIDE=auto -- $args >> "$work/p"
                # shellcheck disable=SC2086
                run1_impi KUMI_PACING_SOCKRATE_DIVIDE=senders -- $args >> "$work/e"
                # shellcheck disable=SC2086
                run1_impi KUMI_PACING_SOCKRATE_DIVIDE=sockets -- $args >> "$work/s"
                continue
            fi
            # shellcheck disable=SC2086
            run1 -x KUMI_PACING_SOCKRATE_ENABLE=0 "${wrap[@]}" -- "$TESTBIN/wan_a2a" $args >> "$work/u"
            # shellcheck disable=SC2086
            run1 -x KUMI_PACING_SOCKRATE_DIVIDE=auto "${wrap[@]}" -- "$TESTBIN/wan_a2a" $args >> "$work/p"
            # shellcheck disable=SC2086
            run1 -x KUMI_PACING_SOCKRATE_DIVIDE=senders "${wrap[@]}" -- "$TESTBIN/wan_a2a" $args >> "$work/e"
            # shellcheck disable=SC2086
            run1 -x KUMI_PACING_SOCKRATE_DIVIDE=sockets "${wrap[@]}" -- "$TESTBIN/wan_a2a" $args >> "$work/s"
            # shellcheck disable=SC2086
            [ $ompi = 1 ] && run1_ompi $args >> "$work/o"
        done
        if grep -q fail "$work/u" "$work/p" "$work/e" "$work/s"; then ok=0; echo "$name $d ms: a run failed (see $out/wan.err)"; continue; fi
        to=- do_=- so=-
        if [ -s "$work/o" ]; then
            if grep -q fail "$work/o"; then to=fail; echo "$name $d ms: an Open MPI run failed (see $out/wan.err)"
            else
                to=$(cut -d' ' -f1 "$work/o" | median)s do_=$(cut -d' ' -f2 "$work/o" | median)
                so=r
            fi
        fi
        tu=$(cut -d' ' -f1 "$work/u" | median) tp=$(cut -d' ' -f1 "$work/p" | median) ts=$(cut -d' ' -f1 "$work/s" | median)
        du=$(cut -d' ' -f2 "$work/u" | median) dp=$(cut -d' ' -f2 "$work/p" | median) ds=$(cut -d' ' -f2 "$work/s" | median)
        te=$(cut -d' ' -f1 "$work/e" | median) de=$(cut -d' ' -f2 "$work/e" | median)
        sp=$(awk -v u="$tu" -v p="$tp" 'BEGIN {printf "%.2f", u / p}')
        se=$(awk -v u="$tu" -v p="$te" 'BEGIN {printf "%.2f", u / p}')
        ss=$(awk -v u="$tu" -v p="$ts" 'BEGIN {printf "%.2f", u / p}')
        [ "$so" = - ] || so=$(awk -v u="$tu" -v o="${to%s}" 'BEGIN {printf "%.2fx", u / o}')
        printf "%-4s %3s ms %8ss %6s | %8ss %6s %6sx | %8ss %6s %6sx | %8ss %6s %6sx | %9s %6s %7s\n" "$name" "$d" "$tu" \
            "$du" "$tp" "$dp" "$sp" "$te" "$de" "$se" "$ts" "$ds" "$ss" "$to" "$do_" "$so" | tee -a "$table"
        echo "$name $d $tu $du $tp $dp $sp $ts $ds $ss $te $de $se" >> "$work/rows"
      done
    done
    wanlab_down
    rm -rf "/etc/netns/${WL_NS_A##*/}" "/etc/netns/${WL_NS_B##*/}"
done
echo "($n + $n ranks, 100 Mbit/s tbf bottleneck, TCP congestion control ${WL_CC_USED:-?}, median of $reps; paced: pacing_sockrate_divide = auto (the default) / senders / sockets; times: the slowest rank's, all iterations; -I: over IMPI, two clients, each cluster's ranks sharing one host connection; Open MPI: ob1 tcp,vader, same namespaces, u/ompi = Kumi unpaced / Open MPI)" | tee -a "$table"
# targets: 10 ms paced >= 1.3x; 0 ms paced no slower (>= 0.95x); paced drops near zero
if [ -f "$work/rows" ]; then
    for v in "auto 7" "sockets 10" "senders 13"; do
        set -- $v
        m10=$(awk -v f=$2 '$2 == 10 && $f >= 1.3' "$work/rows" | wc -l) t10=$(awk '$2 == 10' "$work/rows" | wc -l)
        m0=$(awk -v f=$2 '$2 == 0 && $f >= 0.95' "$work/rows" | wc -l) t0=$(awk '$2 == 0' "$work/rows" | wc -l)
        [ "$t10" -gt 0 ] && echo "wan|paced ($1) all-to-all >= 1.3x faster than unpaced at 10 ms|$m10|$t10" >> "$out/targets"
        [ "$t0" -gt 0 ] && echo "wan|paced ($1) all-to-all no slower than unpaced at 0 ms (>= 0.95x)|$m0|$t0" >> "$out/targets"
    done
fi
rm -rf "$work"
[ $ok = 1 ] && status ok || status "a run failed"
[ $ok = 1 ]
