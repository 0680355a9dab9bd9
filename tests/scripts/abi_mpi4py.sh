#!/bin/bash
# abi_mpi4py: Debian's mpi4py (python3-mpi4py, built against Open MPI: its MPI.*.so needs
# libmpi.so.40) runs on Kumi through the Open MPI ABI shim: tests/abi/mpi4py_broad.py at 1, 2
# and 4 ranks through Kumi's mpiexec --abi ompi (KUMI_ABI_DIR: this build's shim; nothing but
# Kumi's libmpi.so.0 on LD_LIBRARY_PATH).  The script uses mpi4py broadly: point to point with
# pickled objects and buffers, mprobe/improbe, collectives with MPI.IN_PLACE, a
# non-commutative MPI.Op.Create, derived datatypes, error handlers and MPI.Exception classes,
# info, Waitall/Testany/Waitany, RMA (Win.Allocate, Put/Get/Accumulate under fences and
# locks) and MPI-IO (views, Iread, file contents checked).
# Skips (77) without /usr/bin/python3 or mpi4py, and while the shim does not export every
# MPI_* procedure mpi4py imports (it names them: the extension would fail at load).
set -u
: "${top_builddir:?}" "${top_srcdir:?}" "${MPIEXEC:?}"
fail() { echo "FAIL: $*"; exit 1; }
PY=${KUMI_TEST_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || { echo "SKIP: $PY not found"; exit 77; }
ext=$("$PY" -c 'import importlib.util as u; s = u.find_spec("mpi4py.MPI"); print(s.origin if s else "")' 2>/dev/null)
[ -n "$ext" ] && [ -f "$ext" ] || { echo "SKIP: mpi4py not found for $PY (Debian: python3-mpi4py)"; exit 77; }
readelf -d "$ext" | grep -q 'NEEDED.*\[libmpi\.so\.40\]' || { echo "SKIP: $ext is not an Open MPI build (no libmpi.so.40)"; exit 77; }
shim=$top_builddir/components/abi/ompi/.libs/libmpi.so.40
[ -f "$shim" ] || fail "no shim $shim (components/abi/ompi not built)"
need=$(nm -D --undefined-only "$ext" | awk '$2 ~ /^P?MPI_/ {print $2}' | sort -u)
have=$(nm -D --defined-only "$shim" | awk '{print $3}' | sort -u)
missing=$(comm -23 <(echo "$need") <(echo "$have") | tr '\n' ' ')
if [ -n "$missing" ]; then
    echo "SKIP: the libmpi.so.40 shim lacks $(echo $missing | wc -w) procedure(s) mpi4py imports: $missing"
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/abi_mpi4py.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/abi/ompi"
ln -s "$shim" "$work/abi/ompi/libmpi.so.40"
bad=0
for n in 1 2 4; do
    log=$work/run.$n.log
    if (cd "$work" && KUMI_ABI_DIR=$work/abi LD_LIBRARY_PATH=$top_builddir/framework/.libs PYTHONDONTWRITEBYTECODE=1 \
            timeout 300 "$MPIEXEC" --abi ompi --timeout 280 -n "$n" "$PY" "$top_srcdir/tests/abi/mpi4py_broad.py" "$work/f$n") \
            > "$log" 2>&1 && grep -q "mpi4py_broad: $n ranks ok" "$log"; then
        echo "ok: mpi4py_broad at $n"
    else
        echo "FAILED: mpi4py_broad at $n rank(s):"; sed 's/^/    | /' "$log" | tail -15; bad=$((bad + 1))
    fi
done
[ "$bad" -eq 0 ] || fail "$bad run(s) failed"
echo "all runs passed"
