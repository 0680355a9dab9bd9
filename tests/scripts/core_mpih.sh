#!/bin/bash
# core_mpih: mpi.h defines MPI_VERSION / MPI_SUBVERSION and no other
# implementation's identifying macros (tests/mpi/core_mpih.c, compiled here
# as C and, where there is a C++ compiler, as C++), and every macro that
# mpi.h and mpi-ext.h define is MPI_*, PMPI_*, MPIX_* or KUMI_*.  The checks
# are seen to fire: with a planted vendor macro, and with MPI_VERSION removed.
set -u
: "${MPICC:?}" "${top_srcdir:?}" "${top_builddir:?}"
src=$top_srcdir/tests/mpi/core_mpih.c
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
inc="-I$top_builddir/framework/include -I$top_srcdir/framework/include -I$top_srcdir/tests/mpi"
[ -f "$top_builddir/framework/include/mpi.h" ] || fail "no generated mpi.h in $top_builddir/framework/include"

# 1. the program builds (its #if checks pass), warning-free, and runs
# shellcheck disable=SC2086
$MPICC -std=c11 -Wall -Wextra -Werror -I"$top_srcdir/tests/mpi" -o "$tmp/core_mpih" "$src" -lmpi 2> "$tmp/cc.err" ||
    { head -20 "$tmp/cc.err"; fail "core_mpih.c does not compile against mpi.h"; }
out=$(timeout 60 "$tmp/core_mpih" 2>&1) || fail "core_mpih (singleton) failed: $out"
[ -z "$out" ] || fail "core_mpih printed: $out"
CXX=${CXX:-c++}
if command -v "$CXX" > /dev/null 2>&1; then
    # shellcheck disable=SC2086
    "$CXX" -x c++ -fsyntax-only -Wall $inc "$src" 2> "$tmp/cxx.err" ||
        { head -20 "$tmp/cxx.err"; fail "core_mpih.c does not compile as C++ against mpi.h"; }
fi

# 2. the checks fire: a planted vendor macro, and an mpi.h without MPI_VERSION
cc=${CC:-cc}
for m in OPEN_MPI OMPI_MAJOR_VERSION=5 MPICH MPICH_VERSION='"4.1"' MPICH_NAME=3 MSMPI_VER=0x100 \
         I_MPI_VERSION='"2021"' MVAPICH2_VERSION='"2.3"' MPI_NO_CPPBIND; do
    # shellcheck disable=SC2086
    if "$cc" -fsyntax-only $inc -D"$m" "$src" 2> "$tmp/neg.err"; then
        fail "core_mpih.c compiles with -D$m: the check for ${m%%=*} does not work"
    fi
    grep -q '#error' "$tmp/neg.err" || { head -5 "$tmp/neg.err"; fail "-D$m: failed, but not by the #error check"; }
done
mkdir -p "$tmp/fake"
printf '#include_next <mpi.h>\n#undef MPI_VERSION\n' > "$tmp/fake/mpi.h"
# shellcheck disable=SC2086
"$cc" -fsyntax-only -I"$tmp/fake" $inc "$src" 2> "$tmp/neg.err" && fail "core_mpih.c compiles without MPI_VERSION"
grep -q 'MPI_VERSION' "$tmp/neg.err" || { head -5 "$tmp/neg.err"; fail "missing MPI_VERSION not reported"; }

# 3. every macro mpi.h / mpi-ext.h add to those of the headers they include
printf '#include <stddef.h>\n#include <stdint.h>\n' > "$tmp/base.c"
printf '#include <stddef.h>\n#include <stdint.h>\n#include <mpi.h>\n#include <mpi-ext.h>\n' > "$tmp/mpi.c"
# shellcheck disable=SC2086
"$cc" $inc -dM -E "$tmp/base.c" | LC_ALL=C sort > "$tmp/base.m" || fail "cc -dM -E failed"
# shellcheck disable=SC2086
"$cc" $inc -dM -E "$tmp/mpi.c" | LC_ALL=C sort > "$tmp/mpi.m" || fail "cc -dM -E mpi.h failed"
LC_ALL=C comm -13 "$tmp/base.m" "$tmp/mpi.m" | awk '{ sub(/\(.*/, "", $2); print $2 }' > "$tmp/names"
n=$(wc -l < "$tmp/names")
[ "$n" -gt 50 ] || fail "only $n macros from mpi.h: the scan is broken"
grep -qx MPI_VERSION "$tmp/names" || fail "the scan does not see MPI_VERSION"
grep -Ev '^(MPI|PMPI|MPIX|KUMI)_' "$tmp/names" > "$tmp/foreign"
[ -s "$tmp/foreign" ] && fail "mpi.h / mpi-ext.h define macros outside MPI_/PMPI_/MPIX_/KUMI_: $(head -10 "$tmp/foreign" | tr '\n' ' ')"
echo "core_mpih: ok ($n macros)"
exit 0
