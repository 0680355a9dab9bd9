#!/bin/bash
# core_mpih_exports: mpi.h declares exactly the procedures libmpi exports
# (issue 16 item 12b: it declared 146 that libmpi lacks, so a client that
# trusted the header failed at load time with "undefined symbol:
# MPI_Buffer_iflush").  The MPI_ and PMPI_ procedures that the preprocessed
# mpi.h declares are compared, both ways, with the dynamic symbols of
# libmpi.so (nm -D); and every procedure the `use mpi` module gives an
# explicit interface is exported by libmpifort (mpi_<name>_ and pmpi_<name>_),
# and every specific procedure of the mpi_f08 module (mpi_<name>_f08_, pmpi_...).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
inc="-I$top_builddir/framework/include -I$top_srcdir/framework/include"
lib=$top_builddir/framework/.libs/libmpi.so
[ -f "$lib" ] || fail "no $lib"
command -v nm > /dev/null || { echo "no nm"; exit 77; }

printf '#include <mpi.h>\n' > "$tmp/h.c"
# shellcheck disable=SC2086
"${CC:-cc}" $inc -E -P "$tmp/h.c" > "$tmp/h.i" || fail "cannot preprocess mpi.h"
# a declaration: return type, name, '(' (mkmpih.py writes one a line)
sed -nE 's/^[A-Za-z_][A-Za-z0-9_ ]*[ *](P?MPI_[A-Za-z0-9_]+)\(.*\);$/\1/p' "$tmp/h.i" | LC_ALL=C sort -u > "$tmp/declared"
nm -D --defined-only "$lib" | awk '{ print $NF }' | grep -E '^P?MPI_' | LC_ALL=C sort -u > "$tmp/exported"
nd=$(wc -l < "$tmp/declared"); ne=$(wc -l < "$tmp/exported")
[ "$nd" -gt 400 ] || fail "only $nd declarations found in mpi.h: the scan is broken"
grep -qx MPI_Send "$tmp/declared" && grep -qx PMPI_Send "$tmp/declared" || fail "the scan does not see MPI_Send / PMPI_Send"
LC_ALL=C comm -23 "$tmp/declared" "$tmp/exported" > "$tmp/not_exported"
LC_ALL=C comm -13 "$tmp/declared" "$tmp/exported" > "$tmp/not_declared"
[ -s "$tmp/not_exported" ] && fail "mpi.h declares $(wc -l < "$tmp/not_exported") procedures libmpi does not export: $(head -20 "$tmp/not_exported" | tr '\n' ' ')"
[ -s "$tmp/not_declared" ] && fail "libmpi exports $(wc -l < "$tmp/not_declared") procedures mpi.h does not declare: $(head -20 "$tmp/not_declared" | tr '\n' ' ')"
# every MPI_ has its PMPI_ twin
sed -n 's/^MPI_/PMPI_/p' "$tmp/declared" | LC_ALL=C comm -23 - "$tmp/declared" > "$tmp/no_twin"
[ -s "$tmp/no_twin" ] && fail "no PMPI_ twin declared: $(head -10 "$tmp/no_twin" | tr '\n' ' ')"

# Fortran: what the module declares, libmpifort exports
mod=$top_builddir/framework/fortran/mpi.f90
flib=$top_builddir/framework/fortran/.libs/libmpifort.so
if [ -f "$mod" ] && [ -f "$flib" ]; then
    sed -nE 's/^ *(SUBROUTINE|FUNCTION) (P?MPI_[A-Z0-9_]+)\(.*/\2/p' "$mod" | tr 'A-Z' 'a-z' | sed 's/$/_/' |
        LC_ALL=C sort -u > "$tmp/finterfaces"
    nm -D --defined-only "$flib" | awk '{ print $NF }' | grep -E '^p?mpi_' | LC_ALL=C sort -u > "$tmp/fexported"
    nf=$(wc -l < "$tmp/finterfaces")
    [ "$nf" -gt 100 ] || fail "only $nf interfaces found in $mod: the scan is broken"
    LC_ALL=C comm -23 "$tmp/finterfaces" "$tmp/fexported" > "$tmp/fmissing"
    [ -s "$tmp/fmissing" ] && fail "the mpi module declares procedures libmpifort does not export: $(head -20 "$tmp/fmissing" | tr '\n' ' ')"
    sed 's/^/p/' "$tmp/finterfaces" | LC_ALL=C comm -23 - "$tmp/fexported" > "$tmp/fmissing"
    [ -s "$tmp/fmissing" ] && fail "libmpifort lacks the profiling twins: $(head -20 "$tmp/fmissing" | tr '\n' ' ')"
    echo "core_mpih_exports: Fortran: $nf interfaces, all exported"
    # use mpi_f08: every specific of its generic interfaces is an external procedure of libmpifort
    f08=$top_builddir/framework/fortran/mpi_f08.f90
    if [ -f "$f08" ]; then
        sed -nE 's/^ *(SUBROUTINE|FUNCTION) (P?MPI_[A-Za-z0-9_]+_f08)\(.*/\2/p' "$f08" | tr 'A-Z' 'a-z' |
            sed 's/$/_/' | LC_ALL=C sort -u > "$tmp/f08specifics"
        n8=$(wc -l < "$tmp/f08specifics")
        [ "$n8" -gt 400 ] || fail "only $n8 specifics found in $f08: the scan is broken"
        nm -D --defined-only "$flib" | awk '{ print $NF }' | LC_ALL=C sort -u > "$tmp/fall"
        LC_ALL=C comm -23 "$tmp/f08specifics" "$tmp/fall" > "$tmp/fmissing"
        [ -s "$tmp/fmissing" ] && fail "the mpi_f08 module declares specifics libmpifort does not export: $(head -20 "$tmp/fmissing" | tr '\n' ' ')"
        echo "core_mpih_exports: mpi_f08: $n8 specifics, all exported"
    fi
fi
echo "core_mpih_exports: ok ($nd declarations, $ne exported)"
exit 0
