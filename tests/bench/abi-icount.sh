#!/bin/bash
# abi-icount: the instructions each foreign-ABI shim adds per call (issue 17), counted with
# callgrind, so independent of the machine's load (not part of make bench: run it by hand).
# tests/abi/icount.c built with Kumi's own compiler and with mpicc.openmpi / mpicc.mpich, run at
# 1 rank under valgrind --tool=callgrind with N iterations and with 0 of each kind of call: the
# difference of the total instruction counts over N is the cost of one iteration; native vs
# through each shim.  Then the same for Fortran callers (tests/abi/ficount.f90, `use mpi`: the
# calls of tests/bench/npb/lu.f90) built with Kumi's mpif90 and with mpif90.openmpi / mpif90.mpich,
# through the foreign Fortran library and the C shim (rows f:KIND; none without Fortran support).
# Usage: top_builddir=... tests/bench/abi-icount.sh [N (default 20000)]
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
B=${top_builddir:-$top_srcdir/_build}
N=${1:-20000}
command -v valgrind > /dev/null || { echo "abi-icount: no valgrind"; exit 77; }
O=$(mktemp -d) || exit 1
trap 'rm -rf "$O"' EXIT
mkdir -p "$O/abi/ompi" "$O/abi/mpich"
ln -s "$B/components/abi/ompi/.libs/libmpi.so.40" "$O/abi/ompi/libmpi.so.40"
ln -s "$B/components/abi/mpich/.libs/libmpich.so.12" "$O/abi/mpich/libmpich.so.12"
ln -s "$B/components/abi/ompi-fortran/.libs/libmpi_mpifh.so.40" "$O/abi/ompi/libmpi_mpifh.so.40"
ln -s "$B/components/abi/mpich-fortran/.libs/libmpichfort.so.12" "$O/abi/mpich/libmpichfort.so.12"
src=$top_srcdir/tests/abi/icount.c
${CC:-cc} -std=gnu11 -O2 -I"$B/framework/include" -I"$top_srcdir/framework/include" -o "$O/ic.native" "$src" \
    -L"$B/framework/.libs" -Wl,-rpath,"$B/framework/.libs" -lmpi || exit 1
variants=(native)
mpicc.openmpi -O2 -o "$O/ic.ompi" "$src" 2> /dev/null && variants+=(ompi)
mpicc.mpich -O2 -o "$O/ic.mpich" "$src" 2> /dev/null && variants+=(mpich)
export KUMI_INTERNAL_NO_PKGLIBDIR=1 KUMI_COMPONENT_PATH=$(ls -d "$B"/components/*/*/.libs | tr '\n' ':')
prog=ic
ir() { # VARIANT N KIND: total instructions of one run of $O/$prog.VARIANT
    local ab=()
    [ "$1" != native ] && ab=(--abi "$1")
    KUMI_ABI_DIR=$O/abi LD_LIBRARY_PATH=$B/framework/.libs timeout 600 "$B/tools/mpiexec/mpiexec" "${ab[@]}" -n 1 \
        valgrind --tool=callgrind --callgrind-out-file="$O/cg.$1" "$O/$prog.$1" "$2" "$3" > "$O/run.$1.log" 2>&1
    awk '/^summary:/ { print $2 }' "$O/cg.$1"
}
rows() { # LABEL-PREFIX KIND...: one row per kind
    local pfx=$1 k v i z a line
    shift
    for k in "$@"; do
        line=()
        for v in "${variants[@]}"; do
            z=$(ir "$v" 0 "$k"); a=$(ir "$v" "$N" "$k")
            line+=("$(awk -v a="$a" -v z="$z" -v n="$N" 'BEGIN { if (a == "" || z == "") print "-"; else printf "%.1f", (a - z) / n }')")
        done
        printf "%-10s" "$pfx$k"; for x in "${line[@]}"; do printf " %10s" "$x"; done
        for ((i = 1; i < ${#variants[@]}; i++)); do
            awk -v v="${variants[$i]}" -v a="${line[$i]}" -v b="${line[0]}" 'BEGIN { printf "   %s %+.1f", v, a - b }'
        done
        echo
    done
}
printf "%-10s" "per call"; for v in "${variants[@]}"; do printf " %10s" "$v"; done; echo "   (instructions; added = shim - native)"
rows "" rank recv isend isendnost waitnull start waitall
# Fortran: Kumi's mpif90 of this build tree (tests/fortran/kf.sh) and the foreign wrappers
[ -f "$B/framework/fortran/.libs/libmpifort.so" ] && [ -f "$B/framework/fortran/mpi.mod" ] || exit 0
top_builddir=$B
# shellcheck source=../fortran/kf.sh
. "$top_srcdir/tests/fortran/kf.sh"
kf_wrappers
fsrc=$top_srcdir/tests/abi/ficount.f90
"$KF_DIR/mpif90" -O2 -o "$O/fic.native" "$fsrc" || exit 1
variants=(native)
mpif90.openmpi -O2 -o "$O/fic.ompi" "$fsrc" 2> /dev/null && variants+=(ompi)
mpif90.mpich -O2 -o "$O/fic.mpich" "$fsrc" 2> /dev/null && variants+=(mpich)
prog=fic
rows "f:" rank recv isend waitall
