#!/bin/bash
# gridmpirun (tools/mpiexec/gridmpirun): one configuration file starts the IMPI server and
# every cluster's `mpiexec --impi-client K` (clusters in the file's order); a job of two
# clusters of two ranks (a key, per-cluster mpiexec options) passes tests/mpi/impi_border;
# a cluster that fails makes gridmpirun fail naming it; a bad configuration is refused.
set -u
GRID=$top_srcdir/tools/mpiexec/gridmpirun
export GRIDMPIRUN_MPIEXEC=$MPIEXEC GRIDMPIRUN_SERVER=$top_builddir/tools/impi_server/impi_server
PROG=$TESTBIN/impi_border
dir=$(mktemp -d /tmp/kumi-grid.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

cat > "$dir/two.conf" <<'CONF'
# two clusters on this machine
cluster A 2
cluster B 2            # client 1
mpiexec-args B --param p2p_impi_external32_copy=1 --timeout 100
auth 0x1234
CONF
timeout 150 "$GRID" -v -timeout 60 "$dir/two.conf" "$PROG" 4 2 > "$dir/out" 2> "$dir/err"; rc=$?
[ $rc = 0 ] && ok "gridmpirun with two clusters exits 0" || { fail "gridmpirun: exit $rc"; tail -20 "$dir/err"; }
n=$(grep -c ': all checks passed$' "$dir/out")
[ "$n" = 4 ] && ok "every rank of both clusters passed" || fail "$n of 4 ranks passed"
grep -q "^impi_border: rank 3 of 4 (client 1)" "$dir/out" && ok "cluster B is client 1 (world ranks 2-3)" || fail "no rank 3 in client 1"
grep -q "cluster B: .*--impi-client 1 .*--impi-auth 0x1234 --param p2p_impi_external32_copy=1" "$dir/err" &&
    ok "cluster B's mpiexec got the key and its own options" || { fail "cluster B's command line"; grep gridmpirun "$dir/err"; }

timeout 150 "$GRID" -timeout 60 "$dir/two.conf" "$PROG" 4 2 die 3 > "$dir/out2" 2> "$dir/err2"; rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && ok "a dying rank makes gridmpirun fail (exit $rc)" || fail "dying rank: exit $rc"
grep -q "gridmpirun: cluster B (IMPI client 1) exited with status" "$dir/err2" && ok "the failed cluster is named" ||
    { fail "no cluster named"; tail -5 "$dir/err2"; }

printf 'cluster A 2\nclusters B 2\n' > "$dir/bad.conf"
"$GRID" "$dir/bad.conf" "$PROG" > "$dir/out3" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "bad.conf:2: unknown item 'clusters'" "$dir/out3" && ok "a bad line is refused with its number" ||
    { fail "bad configuration: exit $rc"; cat "$dir/out3"; }
[ $fails -eq 0 ] && { echo "impi_gridmpirun: all passed"; exit 0; }
echo "impi_gridmpirun: $fails failure(s)"; exit 1
