#!/bin/bash
# make check's communicator tests across IMPI clients (issue 19 item 1): impi_server + one
# `mpiexec -n K --impi-client C` per client run tests that make communicators over ranks of
# both clients: MPI_Intercomm_create / merge and every collective on intercommunicators
# (inter_basic, inter_coll, nbc_inter, misc3_icgroups: MPI_Intercomm_create_from_groups),
# MPI_Comm_idup of an intercommunicator (conf_idup_inter) and of world (comm_idup),
# MPI_Comm_create_group, split_type (comm_create), topologies (topo_cart, topo_dup),
# partitioned channels (part_basic), windows (win_obj) and sessions (sess_world).
# Each client is a host of its own (no memory shared with the other client: split_type
# shared, windows).  Before: MPI_Intercomm_create named the other client's ranks as
# processes "of another job" (each launch had its own job identity) and MPI_Win_create
# failed with "the host of rank 0 unknown".
# And with every rank its own IMPI host (p2p_impi_host_per_rank=1): inter_coll, impi_coll.
# Not here: conf_split_type_inter (its expectations assume every rank on one host).
# Last: impi_intercomm, the context ids of intercommunicators by IMPI's rule.
set -u
SERVER=$top_builddir/tools/impi_server/impi_server
[ -x "$SERVER" ] || { echo "FAIL: $SERVER not built"; exit 1; }
dir=$(mktemp -d /tmp/kumi-impicomm.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# job NAME "N0 N1 ..." PROG ARGS: one client per count; waits; sets rcs
job() {
    local name=$1 counts=$2; shift 2
    local nc; nc=$(echo $counts | wc -w)
    rm -f "$dir/$name.port"
    timeout 200 "$SERVER" -n "$nc" -portfile "$dir/$name.port" -timeout 60 > /dev/null 2> "$dir/$name.serr" &
    local spid=$!; pids+=("$spid")
    for _ in $(seq 1 100); do [ -s "$dir/$name.port" ] && break; sleep 0.05; done
    local hp; hp=$(cat "$dir/$name.port" 2>/dev/null)
    [ -n "$hp" ] || { fail "$name: the server wrote no port"; rcs=" 1"; return; }
    local k=0 cp=()
    for c in $counts; do
        (cd "$TESTBIN" && exec timeout 190 "$MPIEXEC" --timeout 180 -n "$c" --impi-client $k --impi-server "$hp" \
            --param coll_impi_verbose=1 "$@") > "$dir/$name.c$k.out" 2> "$dir/$name.c$k.err" &
        cp+=($!); pids+=($!); k=$((k + 1))
    done
    rcs=""
    for p in "${cp[@]}"; do wait "$p"; rcs="$rcs $?"; done
    wait "$spid"; rcs="$rcs server $?"
}

# "COUNTS:PROG ARGS": the clients' sizes, the test and its arguments (as in tests/mpi/*.list)
for t in "3 2:inter_basic 2" "2 3:inter_basic 3" "2 3:inter_coll 3" "1 2:nbc_inter 1" "2 3:misc3_icgroups" \
         "2 3:conf_idup_inter" "2 2:comm_idup single" "3 2:comm_create" "3 3:topo_cart" "2 2:topo_dup" \
         "2 2:part_basic" "2 1:part_basic" "2 2:win_obj" "2 2:sess_world" \
         "3 3:+perrank inter_coll 2" "3 2:+perrank impi_coll 5 20000"; do
    counts=${t%%:*}; args=${t#*:}; name=$(echo "$args" | tr ' +' __)_$(echo "$counts" | tr ' ' x)
    xa=()      # +perrank: every rank its own IMPI host in both clients (p2p_impi_host_per_rank=1)
    case "$args" in +perrank\ *) xa=(--param p2p_impi_host_per_rank=1); args=${args#+perrank }; esac
    # shellcheck disable=SC2086
    job "$name" "$counts" "${xa[@]}" ./$args
    if ! echo "$rcs" | grep -Eq '[1-9]' && grep -q 'coll/impi\[0\]: a communicator of' "$dir/$name.c0.err"; then
        ok "$args over IMPI clients of $counts ranks ${xa[*]} (coll/impi on MPI_COMM_WORLD)"
    else
        fail "$args over IMPI clients of $counts ranks (exits:$rcs)"
        tail -n 8 "$dir/$name".c*.err "$dir/$name".c*.out | grep -v '^$' | head -40
    fi
done

# Intercommunicators' context ids by IMPI's rule (coll/impi, "not from the standard's text"):
# new id = max of IMPI_max_cid over both groups + 1, the intercommunicator's local group
# the next pair; every participant's IMPI_max_cid the last id taken (see
# tests/mpi/impi_intercomm.c).  Before: Kumi's own agreement, no such lines.
job iccid "2 2" ./impi_intercomm
if ! echo "$rcs" | grep -Eq '[1-9]' && [ "$(cat "$dir"/iccid.c*.out | grep -c 'all checks passed')" = 4 ]; then
    ok "intercommunicators over two IMPI clients: every check passed"
else
    fail "impi_intercomm (exits:$rcs)"; tail -n 8 "$dir"/iccid.c*.err | head -30
fi
cr="MPI_Intercomm_create: IMPI context id" mg="MPI_Intercomm_merge: IMPI context id" dp="an intercommunicator's dup / split / create: IMPI context id"
for want in "0:a new communicator's IMPI context id 2 (collectives 3)" \
            "0:$cr 4 (collectives 5), the local group's 6 (7)" "1:$cr 4 (collectives 5), the local group's 6 (7)" \
            "0:$mg 8 (collectives 9)" "1:$mg 8 (collectives 9)" \
            "0:$dp 10 (collectives 11), the local group's 12 (13)" "1:$dp 10 (collectives 11), the local group's 12 (13)" \
            "0:a new communicator's IMPI context id 14 (collectives 15)" \
            "0:$cr 16 (collectives 17), the local group's 18 (19)" "2:$cr 16 (collectives 17), the local group's 18 (19)" \
            "0:$mg 20 (collectives 21)" "2:$mg 20 (collectives 21)"; do
    r=${want%%:*} line=${want#*:}
    grep -qxF "coll/impi[$r]: $line" "$dir"/iccid.c*.err && ok "rank $r: $line" ||
        { fail "rank $r did not say: $line"; grep -h 'context id' "$dir"/iccid.c*.err | head -20; }
done

[ $fails = 0 ] || { echo "$fails checks failed"; exit 1; }
echo "all IMPI communicator checks passed"
