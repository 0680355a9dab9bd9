#!/bin/bash
# The coll components' pace hints (kumi/coll.h pace_hint, coll contract 1.2;
# kumi/pacing.h enter_hint, pacing contract 1.1), seen through
# tests/thirdparty/pacing_probe.c, a pacing component that prints what it is
# told and paces nothing; on one machine, without namespaces:
#  - coll/tuned answers from the algorithm it will run: linear (the default
#    at 4 ranks) every peer at once (fanout 0); pairwise or Bruck forced with
#    coll_tuned_<op>_algorithm one peer at a time (fanout 1), also where its
#    default table would say linear; alltoallv the same;
#  - coll/lact's aggregated all-to-all (2 fake hosts of 2 ranks, one a
#    cluster): only the host leaders 0 and 2 send; fan-out that of the
#    leaders' alltoallv once their communicator exists (pairwise forced: 1);
#    its flat all-to-all (large blocks, one cluster): coll/tuned's hint;
#  - a component without a hint (coll/basic): fanout -1, every rank;
#  - a pacing component of contract v1.0 (-DPROBE_OLD: its table ends before
#    enter_hint) still loads and gets enter() without a hint.
. "$(dirname "$0")/registry_common.inc"
: "${MPIEXEC:=$top_builddir/tools/mpiexec/mpiexec}"
: "${MPICC:=cc -I$top_builddir/framework/include -I$top_srcdir/framework/include}"
: "${TESTBIN:=$top_builddir/tests/mpi}"
[ -x "$MPIEXEC" ] && [ -x "$TESTBIN/wan_a2a" ] || { echo "SKIP: no mpiexec or wan_a2a"; exit 77; }
if "$KUMI_INFO" --parsable 2>/dev/null | grep -q '^component:.*:path:(linked in)$'; then
    echo "SKIP: components are linked into libmpi (--disable-dlopen): no third-party loading"
    exit 77
fi
build() { # out flags...
    local out=$1; shift
    mkdir -p "$(dirname "$out")"
    # shellcheck disable=SC2086
    $MPICC -std=gnu11 -Wall -Wextra -Werror -shared -fPIC "$@" -o "$out" "$top_srcdir/tests/thirdparty/pacing_probe.c" \
        > "$TMP/cc.log" 2>&1 || { fail "cannot build $out:"; sed 's/^/    /' "$TMP/cc.log"; finish; }
}
build "$TMP/new/kumi_pacing_probe.so"
build "$TMP/old/kumi_pacing_probe.so" -DPROBE_OLD
ok "built pacing/probe (contract v1.1) and its v1.0 variant"
base=${KUMI_COMPONENT_PATH:-}

# job NAME DIR MPIEXEC-ARGS... -- WAN_A2A-ARGS...: 4 ranks; its output in $TMP/out.NAME
job() {
    local name=$1 dir=$2; shift 2
    local margs=()
    while [ "$1" != -- ]; do margs+=("$1"); shift; done
    shift
    if ! (cd "$TESTBIN" && KUMI_COMPONENT_PATH="${base:+$base:}$TMP/$dir" MPI_COMPONENTS="pacing=probe;coll=^sm" \
          timeout 150 "$MPIEXEC" --timeout 120 -n 4 "${margs[@]}" ./wan_a2a "$@") > "$TMP/out.$name" 2>&1; then
        fail "$name: the job failed:"; tail -8 "$TMP/out.$name" | sed 's/^/    /'
        return 1
    fi
    grep -q "^wan_a2a: " "$TMP/out.$name" || fail "$name: wan_a2a said nothing"
}
# every rank's every call of COLL says exactly WHAT (fanout=F senders=S)
all_say() { # file coll what label
    local n bad
    n=$(grep -Ec "^pacing/probe\[[0-3]\]: $2 n=4 " "$1")
    bad=$(grep -E "^pacing/probe\[[0-3]\]: $2 n=4 " "$1" | grep -Ev " $3\$")
    if [ "$n" -ge 4 ] && [ -z "$bad" ]; then ok "$4 ($n calls)"; else
        fail "$4: $n calls, expected every one to say '$3':"; grep -E '^pacing/probe' "$1" | sort | uniq -c | head | sed 's/^/    /'; fi
}

job default new -- -k mix -b 65536 -n 2
all_say "$TMP/out.default" alltoall "fanout=0 senders=all" "coll/tuned's default at 4 ranks: linear MPI_Alltoall, every peer at once"
all_say "$TMP/out.default" alltoallv "fanout=0 senders=all" "coll/tuned's default at 4 ranks: linear MPI_Alltoallv"
expect_no_line "$TMP/out.default" '^pacing/probe.*\((contract 1\.0|no hint)' "a v1.1 pacing component gets enter_hint, not enter"

job pairwise new -x KUMI_COLL_TUNED_ALLTOALL_ALGORITHM=pairwise -- -k mix -b 65536 -n 2
all_say "$TMP/out.pairwise" alltoall "fanout=1 senders=all" "coll_tuned_alltoall_algorithm=pairwise at 4 ranks: one peer at a time"
all_say "$TMP/out.pairwise" alltoallv "fanout=0 senders=all" "... and MPI_Alltoallv stays linear"

job bruck new -x KUMI_COLL_TUNED_ALLTOALL_ALGORITHM=bruck -x KUMI_COLL_TUNED_ALLTOALLV_ALGORITHM=pairwise -- -k mix -b 1024 -n 2
all_say "$TMP/out.bruck" alltoall "fanout=1 senders=all" "coll_tuned_alltoall_algorithm=bruck: one peer at a time"
all_say "$TMP/out.bruck" alltoallv "fanout=1 senders=all" "coll_tuned_alltoallv_algorithm=pairwise: one peer at a time"

printf 'alltoall * pairwise\n' > "$TMP/rules"
job rules new -x KUMI_COLL_TUNED_TABLE="$TMP/rules" -- -k a2a -b 65536 -n 2
all_say "$TMP/out.rules" alltoall "fanout=1 senders=all" "a rules file (coll_tuned_table) choosing pairwise: one peer at a time"

job lact new --param coll_lact_ranks_per_host=2 --param coll_lact_hosts_per_cluster=1 --param coll_lact_verbose=1 \
    -x KUMI_COLL_TUNED_ALLTOALLV_ALGORITHM=pairwise -- -k a2a -b 1024 -n 2
expect_line "$TMP/out.lact" '^coll/lact\[0\]: alltoall of 1024 bytes per block: host leaders aggregate' "coll/lact aggregates the all-to-all"
all_say "$TMP/out.lact" alltoall "fanout=[01] senders=0,2" "coll/lact's aggregated all-to-all: only the host leaders 0 and 2 send"
n=$(grep -Ec '^pacing/probe\[[02]\]: alltoall n=4 fanout=1 senders=0,2$' "$TMP/out.lact")
[ "$n" -ge 2 ] && ok "the leaders' later calls: the fan-out of their pairwise alltoallv (1) ($n calls)" ||
    { fail "no leader's call with fanout 1 (the leaders' pairwise alltoallv)"; grep '^pacing/probe' "$TMP/out.lact" | sed 's/^/    /'; }

job lactflat new --param coll_lact_ranks_per_host=2 --param coll_lact_verbose=1 \
    -x KUMI_COLL_TUNED_ALLTOALL_ALGORITHM=pairwise -- -k a2a -b 65536 -n 2
expect_line "$TMP/out.lactflat" '^coll/lact\[0\]: alltoall of 65536 bytes per block: flat' "coll/lact runs a large all-to-all in one cluster flat"
all_say "$TMP/out.lactflat" alltoall "fanout=1 senders=all" "coll/lact's flat all-to-all: the hint of the flat communicator's coll/tuned (pairwise forced)"

job basic new -x MPI_COMPONENTS="pacing=probe;coll=basic" -- -k a2a -b 65536 -n 1
all_say "$TMP/out.basic" alltoall "fanout=-1 senders=all" "coll/basic gives no hint: unknown fan-out, every rank"

job old old -- -k mix -b 65536 -n 1
all_say "$TMP/out.old" alltoall "\(contract 1\.0: no hint\)" "a pacing component of contract v1.0 loads and gets enter()"
all_say "$TMP/out.old" alltoallv "\(contract 1\.0: no hint\)" "... for MPI_Alltoallv too"
finish
