#!/bin/bash
# coll/lact: hierarchical collectives under fake hosts and clusters on one
# machine (coll_lact_ranks_per_host, coll_lact_hosts_per_cluster, cluster
# rules, a topology file).  coll_lact (checked results on MPI_COMM_WORLD, a
# reversed and an evens-before-odds communicator) runs on each layout, and
# coll_lact_verbose=1 shows that lact was used, found the expected levels,
# hosts and clusters, and chose the expected algorithms.  Also: the
# communicators with one level are left to coll/tuned, bad parameter values
# and topology file lines are reported by name, kumi_info lists the
# parameters.
set -u
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$TESTBIN" || fail "no $TESTBIN"

"$KUMI_INFO" --param coll lact --parsable > "$work/info" 2>&1 || fail "kumi_info: $(cat "$work/info")"
for p in ranks_per_host hosts_per_cluster clusters topology wan_latency_us wan_bandwidth verbose; do
    grep -q "^param:coll_lact_$p:" "$work/info" || fail "kumi_info does not list coll_lact_$p"
done

# run NAME PATTERN... -- MPIEXEC-ARGS: the run passes, its output has every pattern.
run() {
    local name=$1 pats=() ; shift
    while [ "$1" != -- ]; do pats+=("$1"); shift; done
    shift
    if ! timeout 300 "$MPIEXEC" --timeout 240 --param coll_lact_verbose=1 "$@" > "$work/out" 2>&1; then
        echo "FAIL: $name: mpiexec $*"; grep -v '^coll/lact' "$work/out" | tail -8 | sed 's/^/    | /'
        exit 1
    fi
    for p in "${pats[@]}"; do
        grep -q -e "$p" "$work/out" ||
            fail "$name: no line matching '$p' in: $(grep '^coll/lact' "$work/out" | sort -u | head -8)"
    done
    echo "ok: $name"
}
rph=coll_lact_ranks_per_host
hpc=coll_lact_hosts_per_cluster

# 4 hosts of 2 ranks, 2 clusters.
run "4 hosts, 2 clusters" \
    'coll/lact\[0\]: 8 ranks, 3 levels (node net wan), 4 hosts, 2 clusters: cluster0{host0:0,1 host1:2,3} cluster1{host2:4,5 host3:6,7}; contiguous' \
    'sub-communicators made: node 2, host leaders 2, cluster leaders 2' \
    'bcast of 100000 bytes from 5: node, net, wan flat' \
    'reduce of 300 elements to 7: node, net, wan' \
    'allgather of [0-9]* bytes per rank: node, net, wan (reordered)' \
    'alltoall of [0-9]* bytes per block: host leaders aggregate' \
    'allreduce of [0-9]* elements: flat (non-commutative op' \
    -- --param $rph=2 --param $hpc=2 -n 8 ./coll_lact
# 2 hosts of 3 ranks, one cluster: node and net.
run "2 hosts, 1 cluster" \
    'coll/lact\[0\]: 6 ranks, 2 levels (node net), 2 hosts, 1 cluster: default{host0:0,1,2 host1:3,4,5}' \
    'bcast of 100000 bytes from 4: node, net$' \
    'alltoall of 40 bytes per block: host leaders aggregate' \
    'alltoall of 160000 bytes per block: flat' \
    -- --param $rph=3 -n 6 ./coll_lact
# Uneven: hosts of 2, 2, 2, 1 ranks; clusters of 3 hosts and 1.
run "uneven" \
    'coll/lact\[0\]: 7 ranks, 3 levels (node net wan), 4 hosts, 2 clusters: cluster0{host0:0,1 host1:2,3 host2:4,5} cluster1{host3:6}' \
    'cluster1{host3:0} cluster0{host2:1,2 host1:3,4 host0:5,6}; contiguous' \
    'cluster0{host0:0,4 host1:1,5 host2:2,6} cluster1{host3:3}; not contiguous' \
    -- --param $rph=2 --param $hpc=3 -n 7 ./coll_lact
# One rank per host, 4 clusters, a fast wide area: binomial over it for long messages.
run "4 clusters, binomial" \
    'coll/lact\[0\]: 8 ranks, 2 levels (net wan), 8 hosts, 4 clusters' \
    'bcast of 100000 bytes from 3: net, wan binomial' \
    'bcast of 1 bytes from 3: net, wan flat' \
    'alltoall of [0-9]* bytes per block: flat' \
    -- --param $rph=1 --param $hpc=2 --param coll_lact_wan_latency_us=1 -n 8 ./coll_lact bcast alltoall
# A topology file: clusters by host-name patterns, a link, node and net.
cat > "$work/topo" <<'EOF'
# two sites
cluster east host0 host1
cluster west host[23]      # glob
link east west 2000 50
node 0.5 20000
net 10 5000
EOF
run "topology file" \
    '8 ranks, 3 levels (node net wan), 4 hosts, 2 clusters: east{host0:0,1 host1:2,3} west{host2:4,5 host3:6,7}' \
    'node 0.5 us 20000 MB/s, net 10 us 5000 MB/s, wan 2000 us 50 MB/s' \
    -- --param $rph=2 --param coll_lact_topology="$work/topo" -n 8 ./coll_lact
# Cluster rules in a parameter; hosts no rule names go to "default"; a cluster
# whose hosts are not consecutive.
run "cluster rules" \
    'coll/lact\[0\]: 8 ranks, 3 levels (node net wan), 4 hosts, 3 clusters: a{host0:0,1 host2:4,5} b{host1:2,3} default{host3:6,7}; not contiguous' \
    -- --param $rph=2 --param 'coll_lact_clusters=a=host0,host2;b=host1,10.0.0.0/8' -n 8 ./coll_lact
# One level: left to coll/tuned.
run "one host" 'coll/lact\[0\]: 4 ranks, 1 level (node), 1 host, 1 cluster: .*: not used (one level)' \
    -- --param $rph=4 -n 4 ./coll_lact barrier reduce
grep -q 'reduce of' "$work/out" && fail "one host: lact ran a collective"
run "a rank per host" 'coll/lact\[0\]: 3 ranks, 1 level (net), 3 hosts, 1 cluster: .*: not used (one level)' \
    -- --param $rph=1 -n 3 ./coll_lact barrier

# Bad values: named in a warning, and the job still runs (on coll/tuned).
bad() { # expected message, mpiexec arguments...
    local msg=$1; shift
    out=$("$MPIEXEC" --timeout 60 "$@" -n 2 ./coll_lact barrier 2>&1) || fail "run with $*: $out"
    echo "$out" | grep -q -F -e "$msg" || fail "not reported: '$msg' in: $out"
}
bad "coll/lact not used: coll_lact_ranks_per_host: -1 is not a number of ranks" --param $rph=-1
bad "coll_lact_hosts_per_cluster: -3 is not" --param $hpc=-3
bad "coll_lact_wan_bandwidth: 0 is not a bandwidth" --param coll_lact_wan_bandwidth=0
bad "coll_lact_wan_latency_us: -5 is not a latency" --param coll_lact_wan_latency_us=-5
bad "coll_lact_clusters: 'east' is not NAME=PATTERN" --param 'coll_lact_clusters=east'
bad "coll_lact_clusters: cluster a: bad pattern '10.0.0.0/33'" --param 'coll_lact_clusters=a=10.0.0.0/33'
bad "coll_lact_clusters: cluster a has no pattern" --param 'coll_lact_clusters=a=;b=x'
bad "coll_lact_topology: cannot open $work/missing" --param coll_lact_topology="$work/missing"
printf 'cluster east host0\nlink east west fast 10\n' > "$work/bad1"
bad "$work/bad1:2: bad latency 'fast'" --param coll_lact_topology="$work/bad1"
printf '# ok\n\nnet 10 100\nswitch 3 4\n' > "$work/bad2"
bad "$work/bad2:4: unknown keyword 'switch'" --param coll_lact_topology="$work/bad2"
printf 'cluster east host0\nlink east moon 10 10\n' > "$work/bad3"
bad "$work/bad3:2: link names unknown cluster 'moon'" --param coll_lact_topology="$work/bad3"
printf 'node 1\n' > "$work/bad4"
bad "$work/bad4:1: expected \`node LATENCY_US BANDWIDTH_MBPS\`" --param coll_lact_topology="$work/bad4"
echo "PASS"
