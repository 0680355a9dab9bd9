#!/bin/bash
# The registry inside real jobs: MPI_COMPONENTS with a third-party component
# selected runs cleanly and silently; an unknown name stops the job with a
# message listing what exists; an unknown KUMI_* variable is reported once.
. "$(dirname "$0")/registry_common.inc"
: "${MPIEXEC:=$top_builddir/tools/mpiexec/mpiexec}"
: "${MPICC:=cc -I$top_builddir/framework/include -I$top_srcdir/framework/include -L$top_builddir/framework/.libs -Wl,-rpath,$top_builddir/framework/.libs}"
[ -x "$MPIEXEC" ] || { echo "SKIP: no mpiexec"; exit 77; }
"$KUMI_INFO" --parsable > "$TMP/info" 2>&1
for c in rpim:fork p2p:self p2p:tcp coll:basic; do
    grep -q "^component:$c:status:available$" "$TMP/info" || { echo "SKIP: $c not available in this build yet"; exit 77; }
done

PLUG=$TMP/plugins; mkdir -p "$PLUG"
# shellcheck disable=SC2086
$MPICC -shared -fPIC -o "$PLUG/kumi_coll_demo.so" "$top_srcdir/tests/thirdparty/coll_demo.c" || { fail "cannot build coll/demo"; finish; }
cat > "$TMP/prog.c" <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, sum = -1, right, left, got = -1;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size * (size - 1) / 2) { fprintf(stderr, "rank %d: allreduce gave %d\n", rank, sum); return 3; }
    right = (rank + 1) % size; left = (rank + size - 1) % size;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (got != left) { fprintf(stderr, "rank %d: got %d from the left, expected %d\n", rank, got, left); return 4; }
    printf("ok %d of %d\n", rank, size);
    MPI_Finalize();
    return 0;
}
C
# shellcheck disable=SC2086
$MPICC -o "$TMP/prog" "$TMP/prog.c" -lmpi || { fail "cannot build the test program"; finish; }
CP=${KUMI_COMPONENT_PATH:+$KUMI_COMPONENT_PATH:}$PLUG

KUMI_COMPONENT_PATH=$CP MPI_COMPONENTS="p2p=self,tcp;coll=demo,basic" \
    "$MPIEXEC" --timeout 60 -n 3 "$TMP/prog" > "$TMP/out" 2> "$TMP/err"; rc=$?
[ $rc -eq 0 ] && ok "job with MPI_COMPONENTS=p2p=self,tcp;coll=demo,basic: exit 0" || { fail "job exited $rc"; cat "$TMP/err"; }
[ "$(grep -c '^ok [0-2] of 3$' "$TMP/out")" = 3 ] && ok "three ranks checked their values" || fail "output: $(cat "$TMP/out")"
[ -s "$TMP/err" ] && fail "a normal run printed on stderr: $(head -5 "$TMP/err")" || ok "normal run: nothing on stderr"

KUMI_COMPONENT_PATH=$CP MPI_COMPONENTS="coll=^demo" "$MPIEXEC" --timeout 60 -n 2 "$TMP/prog" > "$TMP/out2" 2> "$TMP/err2"; rc=$?
[ $rc -eq 0 ] && [ "$(grep -c '^ok' "$TMP/out2")" = 2 ] && ok "coll=^demo job runs" || fail "coll=^demo: exit $rc $(cat "$TMP/err2")"

MPI_COMPONENTS="p2p=tpc" "$MPIEXEC" --timeout 60 -n 2 "$TMP/prog" > "$TMP/out3" 2> "$TMP/err3"; rc=$?
[ $rc -ne 0 ] && ok "MPI_COMPONENTS=p2p=tpc: job fails (exit $rc)" || fail "MPI_COMPONENTS=p2p=tpc: job succeeded"
expect_line "$TMP/err3" "unknown component 'tpc' in framework p2p \\(available: impi, (ofi, )?self, shmem, tcp(, vmpi)?\\)" "the error names tpc and lists the p2p components"
grep -q '^ok' "$TMP/out3" && fail "a rank ran despite the bad MPI_COMPONENTS" || ok "no rank ran"

KUMI_P2P_TCP_EAGR_LIMIT=1 "$MPIEXEC" --timeout 60 -n 3 "$TMP/prog" > "$TMP/out4" 2> "$TMP/err4"; rc=$?
[ $rc -eq 0 ] && ok "job with a misspelt parameter still runs" || fail "exit $rc"
n=$(grep -c 'KUMI_P2P_TCP_EAGR_LIMIT is set but names no parameter (did you mean KUMI_P2P_TCP_EAGER_LIMIT?)' "$TMP/err4")
[ "$n" = 1 ] && ok "misspelt parameter reported once per job" || { fail "reported $n times"; cat "$TMP/err4"; }

KUMI_P2P_TCP_EAGER_LIMIT=1k "$MPIEXEC" --timeout 60 -n 2 "$TMP/prog" > "$TMP/out5" 2> "$TMP/err5"; rc=$?
[ $rc -eq 0 ] && [ ! -s "$TMP/err5" ] && ok "a valid parameter in the environment: silent run" || fail "exit $rc, stderr $(cat "$TMP/err5")"
# a broken file in the path: the job still runs, and the file is reported once per job
mkdir -p "$TMP/broken"
# shellcheck disable=SC2086
$MPICC -shared -fPIC -DDEMO_ABI=99 -o "$TMP/broken/kumi_coll_demo.so" "$top_srcdir/tests/thirdparty/coll_demo.c" || fail "cannot build the broken variant"
KUMI_COMPONENT_PATH=${KUMI_COMPONENT_PATH:+$KUMI_COMPONENT_PATH:}$TMP/broken "$MPIEXEC" --timeout 60 -n 3 "$TMP/prog" > "$TMP/out6" 2> "$TMP/err6"; rc=$?
[ $rc -eq 0 ] && [ "$(grep -c '^ok' "$TMP/out6")" = 3 ] && ok "job runs with a broken file in KUMI_COMPONENT_PATH" || fail "exit $rc $(cat "$TMP/err6")"
n=$(grep -c "kumi_coll_demo.so refused: component ABI version 99" "$TMP/err6")
[ "$n" = 1 ] && ok "broken file reported once per job" || { fail "broken file reported $n times"; cat "$TMP/err6"; }
finish
