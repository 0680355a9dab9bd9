#!/bin/bash
# npb_kernels: the NAS-style kernels of `make bench` (tests/bench/npb: CG, MG, FT, IS, LU,
# written from the NPB specification; issue 17) at class S, 4 ranks.  Built with Kumi's own
# mpif90 / mpicc (the build tree's wrappers) each verifies (CG, MG, FT: the published values)
# and runs on Kumi; LU gives the same norms at 1 rank (its sweeps keep the sequential order)
# and does not verify with 0 iterations.  Built with mpif90.openmpi / mpicc.openmpi and run by
# Kumi's mpiexec through the Open MPI shims of this build, each verifies, runs on Kumi, and
# prints the same result line as the native build.  Skipped (after the native part) without
# mpif90.openmpi.
set -u
fail() { echo "FAIL: $*"; exit 1; }
: "${MPIEXEC:?}"
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
src=$top_srcdir/tests/bench/npb
kernels="cg mg ft is lu"
work=$(mktemp -d "${TMPDIR:-/tmp}/npb_kernels.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT
build() { # VARIANT FC CC
    local k
    for k in $kernels; do
        if [ "$k" = is ]; then "$3" -O1 -o "$work/$k.$1" "$src/is.c"
        else "$2" -O1 -o "$work/$k.$1" "$src/$k.f90"; fi > "$work/$k.$1.build" 2>&1 ||
            { cat "$work/$k.$1.build"; fail "$k does not build with $2 / $3"; }
    done
}
run() { # VARIANT KERNEL NP [ARGS]: the output in $work/KERNEL.VARIANT.NP.out
    local v=$1 k=$2 n=$3; shift 3
    (cd "$work" && KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs \
        timeout 150 "$MPIEXEC" --timeout 120 -n "$n" "./$k.$v" S "$@") > "$work/$k.$v.$n.out" 2>&1
}
check() { # VARIANT KERNEL NP
    local f=$work/$2.$1.$3.out
    sed 's/^/    | /' "$f"
    grep -q "^kernel=.* verified=yes" "$f" || fail "$2 ($1 build) at $3 ranks did not verify"
    grep -q "^library: Kumi" "$f" || fail "$2 ($1 build) did not run on Kumi"
    grep -q "^result: " "$f" || fail "$2 ($1 build) printed no result"
}

build native "$KF_DIR/mpif90" "$KF_DIR/mpicc"
for k in $kernels; do
    run native "$k" 4 || { cat "$work/$k.native.4.out"; fail "$k (native build) failed at 4 ranks"; }
    check native "$k" 4
done
run native lu 1 || { cat "$work/lu.native.1.out"; fail "lu at 1 rank failed"; }
# the same norms to 1e-12 (the per-rank partial sums round differently)
paste <(grep '^result:' "$work/lu.native.1.out" | tr -s ' ' '\n' | grep -E '^[0-9.]+E') \
      <(grep '^result:' "$work/lu.native.4.out" | tr -s ' ' '\n' | grep -E '^[0-9.]+E') |
    awk 'NF == 2 { n++; d = $1 - $2; if (d < 0) d = -d; if (!(d <= 1e-12 * $1)) bad = 1 } END { exit (n != 5 || bad) }' ||
    fail "lu: the norms at 1 rank differ from the ones at 4 ranks"
cp "$work/lu.native.4.out" "$work/lu.native.4.keep"
run native lu 4 0 && fail "lu with 0 iterations exited 0"
grep -q "^kernel=LU.* verified=no" "$work/lu.native.4.out" || fail "lu with 0 iterations did not say verified=no"
mv "$work/lu.native.4.keep" "$work/lu.native.4.out"
echo "native: all five verify at 4 ranks"

command -v mpif90.openmpi > /dev/null 2>&1 && command -v mpicc.openmpi > /dev/null 2>&1 ||
    { echo "SKIP: mpif90.openmpi / mpicc.openmpi not found (Debian: openmpi-bin, libopenmpi-dev): the shim part is not run"; exit 77; }
cshim=$top_builddir/components/abi/ompi/.libs/libmpi.so.40
fshim=$top_builddir/components/abi/ompi-fortran/.libs/libmpi_mpifh.so.40
[ -f "$cshim" ] || fail "no C shim $cshim"
[ -f "$fshim" ] || fail "no Fortran shim $fshim"
mkdir -p "$work/abi/ompi"
ln -s "$cshim" "$work/abi/ompi/libmpi.so.40" && ln -s "$fshim" "$work/abi/ompi/libmpi_mpifh.so.40" || fail "ln -s"
build ompi mpif90.openmpi mpicc.openmpi
for k in $kernels; do
    need=libmpi_mpifh.so.40; [ "$k" = is ] && need=libmpi.so.40
    readelf -d "$work/$k.ompi" | grep -q "NEEDED.*\[${need//./\\.}\]" || fail "$k.ompi does not need $need"
    run ompi "$k" 4 || { cat "$work/$k.ompi.4.out"; fail "$k (Open MPI build) failed at 4 ranks"; }
    check ompi "$k" 4
    [ "$(grep '^result:' "$work/$k.ompi.4.out")" = "$(grep '^result:' "$work/$k.native.4.out")" ] ||
        fail "$k: the Open MPI build's result differs from the native one"
done
echo "Open MPI builds through the shim: all five verify, with the native results"
