#!/bin/bash
# abi_ompi_link: the ways an Open MPI binary can be linked all reach the shim's objects and
# procedures: a PIE (copy relocations of ompi_mpi_comm_world etc., which the shim reaches
# through its GOT), a -no-pie binary, and one linked with -Wl,-z,now -fno-plt (no PLT, all
# bound at load), each running tests/abi/ompi_xlate.c at 2 ranks.  And a procedure the shim
# does not translate makes the program fail at load with the procedure's name (lazily bound
# or -z now), never reach Kumi's native entry of another ABI (the procedure is one the
# generator's coverage summary lists as not translated although Kumi implements it).
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
# A procedure Kumi's libmpi has but the shim does not translate (yet), taken from the
# generator's coverage summary: the program must stop at load, naming it, and not run a line
# of main.  It is called through another C name (no prototype of mpi.h in the way).
cov=$top_builddir/components/abi/ompi/ompi-coverage.txt
grep -q "procedures exported" "$cov" 2>/dev/null || fail "no coverage summary $cov"
kumi_has=$(nm -D --defined-only "$top_builddir/framework/.libs/libmpi.so.0" | awk '$3 ~ /^MPI_/ { print $3 }')
missing=
for n in $(awk '/^exported:/ { exit } /^ +[0-9]+  / && !/not in libmpi/ { sub(/^[^:]*: /, ""); print }' "$cov"); do
    case " $(echo $kumi_has) " in *" $n "*) missing=$n; break ;; esac
done
if [ -z "$missing" ]; then
    echo "note: every procedure Kumi implements is translated: no missing-procedure check"
else
    cat > "$work/missing.c" <<CEOF
#include <mpi.h>
#include <stdio.h>
extern int missing_proc(void) __asm__("$missing");
int main(int argc, char **argv)
{
    printf("main ran\n");
    MPI_Init(&argc, &argv);
    if (argc > 5) missing_proc();
    MPI_Finalize();
    return 0;
}
CEOF
    ompicc missing "$work/missing.c"
    ompicc missing_now "$work/missing.c" -Wl,-z,now
    nm -D "$top_builddir/framework/.libs/libmpi.so.0" | grep -q " $missing\$" || fail "$missing: not in Kumi's libmpi"
    for p in missing missing_now; do
        if onshim 1 "./$p" > "$work/$p.log" 2>&1; then echo "FAILED: $p ran"; bad=$((bad + 1))
        elif grep -q "main ran" "$work/$p.log" || ! grep -q "$missing" "$work/$p.log"; then
            echo "FAILED: $p did not stop at load naming $missing:"; sed 's/^/    | /' "$work/$p.log" | tail -5; bad=$((bad + 1))
        else echo "ok: $p stops at load: $(grep -m1 "$missing" "$work/$p.log")"; fi
    done
fi
[ "$bad" -eq 0 ] || fail "$bad check(s) failed"
echo "all checks passed"
