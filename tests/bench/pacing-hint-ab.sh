#!/bin/bash
# pacing/sockrate with and without the coll components' pace hints (coll
# contract 1.2 pace_hint), interleaved on the wide-area lab (as root, where
# network namespaces can be made): 2 + 2 ranks, 100 Mbit/s tbf bottleneck,
# DELAY_US each way, wan_a2a -k a2a of BYTES a pair, ITERS iterations.
#   lact-*  coll/lact's aggregated all-to-all (coll_lact_ranks_per_host=2,
#           hosts_per_cluster=1: one host of 2 ranks a cluster; only the
#           host leaders send across);
#   pw-*    coll/tuned's pairwise all-to-all forced
#           (coll_tuned_alltoall_algorithm=pairwise; its default at 4 ranks
#           is linear).
# *-old: this build with pacing/sockrate of commit BASE (pacing contract 1.0,
# no hints: compiled from `git show BASE:...` into a folder first in
# KUMI_COMPONENT_PATH), *-new: this build's, *-unpaced: pacing off.  One line
# per run: LABEL SECONDS DROPS (the slowest rank's time of the measured
# iterations; the bottleneck's drops, both directions, tc -s qdisc).
#
#   bash tests/bench/pacing-hint-ab.sh [DELAY_US [ROUNDS [BYTES [ITERS [BASE]]]]]
# (defaults 10000 5 1048576 4 201c872), from a built tree (top_builddir,
# default ./_build).  Do not run the test suite meanwhile: its leftover check
# kills every process of tests/mpi, the lab's delay line included.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/_build}
export top_srcdir top_builddir TESTBIN=$top_builddir/tests/mpi KUMI_INTERNAL_NO_PKGLIBDIR=1
MPIEXEC=$top_builddir/tools/mpiexec/mpiexec
delay=${1:-10000} rounds=${2:-5} bytes=${3:-1048576} iters=${4:-4} base=${5:-201c872}
NEWP=$(ls -d "$top_builddir"/components/*/*/.libs | tr '\n' ':'); NEWP=${NEWP%:}
OLD=$(mktemp -d /var/tmp/kumi-pacing-ab.XXXXXX)
mkdir -p "$OLD/inc/kumi"
(cd "$top_srcdir" && git show "$base:components/pacing/sockrate/pacing_sockrate.c" > "$OLD/pacing_sockrate.c" &&
    git show "$base:framework/include/kumi/pacing.h" > "$OLD/inc/kumi/pacing.h") || { echo "no commit $base"; exit 1; }
cc -std=gnu11 -O2 -shared -fPIC -I"$OLD/inc" -I"$top_builddir/framework/include" -I"$top_srcdir/framework/include" \
    -o "$OLD/kumi_pacing_sockrate.so" "$OLD/pacing_sockrate.c" || { echo "cannot build the old pacing/sockrate"; exit 1; }
OLDP=$OLD:$NEWP
. "$top_srcdir/tests/scripts/wanlab.sh"
wanlab_up "$delay" 100 || exit $?
trap 'wanlab_down; rm -rf "$OLD"' EXIT
topo=$OLD/topo
printf 'cluster A %s\ncluster B %s\nlink A B %d 12.5\n' "$WL_NET_A" "$WL_NET_B" "$delay" > "$topo"
wrap2=(python3 "$top_srcdir/tests/scripts/netns_rank.py" 2 "$WL_NS_A" "$WL_NS_B")
LACT=(--param coll_lact_ranks_per_host=2 --param coll_lact_hosts_per_cluster=1)
PW=(-x KUMI_COLL_TUNED_ALLTOALL_ALGORITHM=pairwise)
one() { # label component-path mpiexec-args...
    local label=$1 path=$2 d0 d1 o t; shift 2
    d0=$(wanlab_drops)
    o=$(KUMI_COMPONENT_PATH=$path timeout 300 "$MPIEXEC" --timeout 280 -n 4 -x MPI_COMPONENTS=p2p=self,shmem,tcp \
        -x KUMI_PACING_SOCKRATE_TOPOLOGY="$topo" "$@" "${wrap2[@]}" -- "$TESTBIN/wan_a2a" -k a2a -b "$bytes" -n "$iters" 2>&1)
    d1=$(wanlab_drops)
    t=$(echo "$o" | sed -n 's/^wan_a2a: .*: \([0-9.]*\) s .*/\1/p')
    echo "$label ${t:-failed} $((d1 - d0))"
}
for _ in $(seq "$rounds"); do
    one lact-old "$OLDP" "${LACT[@]}"
    one lact-new "$NEWP" "${LACT[@]}"
    one lact-unpaced "$NEWP" "${LACT[@]}" -x KUMI_PACING_SOCKRATE_ENABLE=0
    one pw-old "$OLDP" "${PW[@]}"
    one pw-new "$NEWP" "${PW[@]}"
    one pw-unpaced "$NEWP" "${PW[@]}" -x KUMI_PACING_SOCKRATE_ENABLE=0
done
