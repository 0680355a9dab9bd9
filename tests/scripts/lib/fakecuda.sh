# The set-up the gpu_*_fakecuda tests share (sourced): the usual defaults,
# a temporary folder $TMP (removed at exit), fail / ok counting $failures,
# the stand-in CUDA driver (tests/scripts/lib/fakecuda.c) built as
# $TMP/libcuda.so.1, and each test program named as an argument checked.
# fakecuda_build alone builds the driver into $TMP (for scripts with a frame
# of their own, such as ckpt_frame.sh).
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${KUMI_INFO:=$top_builddir/tools/kumi_info/kumi_info}"
: "${MPIEXEC:=$top_builddir/tools/mpiexec/mpiexec}"
: "${TESTBIN:=$top_builddir/tests/mpi}"
fakecuda_build() {
    ${CC:-cc} -shared -fPIC -O1 -Wall -Werror -o "$TMP/libcuda.so.1" "$top_srcdir/tests/scripts/lib/fakecuda.c" -lpthread ||
        { echo "FAIL: the stand-in driver does not build"; exit 1; }
}
fakecuda_setup() { # test programs...
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/kumi-fakecuda.XXXXXX")
    trap 'rm -rf "$TMP"' EXIT
    failures=0
    fail() { echo "FAIL: $*"; failures=$((failures+1)); }
    ok() { echo "ok: $*"; }
    fakecuda_build
    local p
    for p in "$@"; do
        [ -x "$TESTBIN/$p" ] || { echo "FAIL: no $TESTBIN/$p (make check-programs)"; exit 1; }
    done
}
