#!/bin/bash
# abi_ompi_link: the ways an Open MPI binary can be linked all reach the shim's objects and
# procedures: a PIE (copy relocations of ompi_mpi_comm_world etc., which the shim reaches
# through its GOT), a -no-pie binary, and one linked with -Wl,-z,now -fno-plt (no PLT, all
# bound at load), each running tests/abi/ompi_xlate.c at 2 ranks.  And a procedure the shim
# does not translate makes the program fail at load with the procedure's name (lazily bound
# or -z now), never reach Kumi's native entry of another ABI.  The generator's coverage
# summary is built.
set -u
. "$top_srcdir/tests/scripts/abi_ompi_common.inc"
x=$top_srcdir/tests/abi/ompi_xlate.c
ompicc pie "$x" -fPIE -pie
ompicc nopie "$x" -fno-PIE -no-pie
ompicc noplt "$x" -fPIE -pie -fno-plt -Wl,-z,now
readelf -r "$work/pie" | grep -q 'R_X86_64_COPY.*ompi_mpi_comm_world' ||
    fail "the PIE build has no copy relocation of ompi_mpi_comm_world (compiler default changed?)"
readelf -r "$work/nopie" | grep -q 'R_X86_64_COPY.*ompi_mpi_comm_world' || fail "the -no-pie build has no copy relocation"
readelf -d "$work/noplt" | grep -q 'BIND_NOW\|FLAGS.*NOW' || fail "the -z now build is not bound at load"
bad=0
for p in pie nopie noplt; do
    if onshim 2 "./$p" > "$work/$p.log" 2>&1 && grep -q "ompi_xlate: 2 ranks ok" "$work/$p.log"; then echo "ok: $p"
    else echo "FAILED: $p"; sed 's/^/    | /' "$work/$p.log" | tail -8; bad=$((bad + 1)); fi
done
# MPI_Comm_create_keyval: Kumi's libmpi has it, the shim does not translate it (yet): the
# program must stop at load, naming it, and not run a line of main.
cat > "$work/missing.c" <<'CEOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int k;
    printf("main ran\n");
    MPI_Init(&argc, &argv);
    if (argc > 5) MPI_Comm_create_keyval(NULL, NULL, &k, NULL);
    MPI_Finalize();
    return 0;
}
CEOF
ompicc missing "$work/missing.c"
ompicc missing_now "$work/missing.c" -Wl,-z,now
for p in missing missing_now; do
    if onshim 1 "./$p" > "$work/$p.log" 2>&1; then echo "FAILED: $p ran"; bad=$((bad + 1))
    elif grep -q "main ran" "$work/$p.log" || ! grep -q "MPI_Comm_create_keyval" "$work/$p.log"; then
        echo "FAILED: $p did not stop at load naming MPI_Comm_create_keyval:"; sed 's/^/    | /' "$work/$p.log" | tail -5; bad=$((bad + 1))
    else echo "ok: $p stops at load: $(grep -m1 MPI_Comm_create_keyval "$work/$p.log")"; fi
done
cov=$top_builddir/components/abi/ompi/ompi-coverage.txt
grep -q "procedures exported" "$cov" 2>/dev/null || { echo "FAILED: no coverage summary $cov"; bad=$((bad + 1)); }
[ "$bad" -eq 0 ] || fail "$bad check(s) failed"
echo "all checks passed"
