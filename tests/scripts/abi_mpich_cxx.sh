#!/bin/bash
# abi_mpich_cxx: programs built with Debian's mpicxx.mpich (MPICH's C++ bindings, namespace MPI)
# run unmodified on Kumi through the MPICH ABI shim (libmpich.so.12) and its C++ companion
# libmpichcxx.so.12 (components/abi/mpichcxx), at 1, 2 and 4 ranks, with the libraries chosen
# by mpiexec from KUMI_ABI_DIR (links to this build's libraries; nothing but Kumi's libmpi.so.0
# on LD_LIBRARY_PATH):
#   the library exports every object of MPICH's (cxx.objects of data/abi/mpich.json: predefined
#     objects, constants, vtables, typeinfo) with its size, and every function MPICH's defines
#     out of line (but MPICH's internal callbacks MPIR_*);
#   tests/abi/mpich_cxx.cc: tests/abi/ompi_cxx.cc's checks (Comm/Intracomm methods, Status,
#     Op::Init with user functions, Split/Dup/Create_cart, keyvals, Grequest, a C++ error handler,
#     MPI::ERRORS_THROW_EXCEPTIONS) plus MPICH's out-of-line functions (Pack/Unpack, Merge,
#     Create_graph, Datatype keyvals, Win::Create_errhandler), requests and persistent requests,
#     100 C++ ops and 40 C++ error handlers alive at once, the constants;
#   the same built -O0, non-PIE and with -fno-plt -z now (at 2 ranks);
#   tests/abi/mpich_cxx_novt.cc (-O0): calls through MPI::Comm & to MPI::COMM_WORLD only, which
#     reach the library's vtables and own functions; a method nobody has stops with its name;
#   examples/ring.c compiled as C++.
# With MPICH's own libmpichcxx.so.12 in place of ours, and without the shims (--abi standard:
# all of MPICH), the C++ program must fail.
set -u
: "${top_builddir:?}" "${top_srcdir:?}" "${MPIEXEC:?}"
fail() { echo "FAIL: $*"; exit 1; }
MPICHCXX=${MPICHCXX:-mpicxx.mpich}
command -v "$MPICHCXX" > /dev/null 2>&1 || { echo "SKIP: $MPICHCXX not found (Debian: mpich, libmpich-dev)"; exit 77; }
SHIMDIR=$top_builddir/components/abi/mpich/.libs
CXXLIB=$top_builddir/components/abi/mpichcxx/.libs/libmpichcxx.so.12
[ -f "$SHIMDIR/libmpich.so.12" ] || fail "no shim $SHIMDIR/libmpich.so.12 (components/abi/mpich not built)"
[ -f "$CXXLIB" ] || fail "no $CXXLIB (components/abi/mpichcxx not built: no C++ compiler?)"
work=$(mktemp -d "${TMPDIR:-/tmp}/abi_mpich_cxx.XXXXXX") || fail "mktemp"
trap 'rm -rf "$work"' EXIT
mcxx() { # OUT SRC [flags...]
    local out=$1 src=$2; shift 2
    "$MPICHCXX" -O1 -I"$top_srcdir/tests/abi" -o "$work/$out" "$src" "$@" > "$work/$out.cc.log" 2>&1 ||
        { cat "$work/$out.cc.log"; fail "$MPICHCXX $src $*"; }
    [ "$out" = ring ] && return 0   # (C code: the linker may drop libmpichcxx.so.12, unused)
    readelf -d "$work/$out" | grep -q 'NEEDED.*\[libmpichcxx\.so\.12\]' || fail "$out does not need libmpichcxx.so.12"
}
nm -D -S --defined-only "$CXXLIB" > "$work/nm.txt" || fail "nm $CXXLIB"
"${PYTHON3:-python3}" - "$top_srcdir/data/abi/mpich.json" "$work/nm.txt" <<'PY' || fail "libmpichcxx.so.12 lacks what MPICH's exports (above)"
import json, sys
cx = json.load(open(sys.argv[1]))['cxx']
ours = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) == 4:
        ours[f[3].split('@')[0]] = int(f[1], 16)
    elif len(f) == 3:
        ours[f[2].split('@')[0]] = 0
bad = ['object %s: size %r, MPICH %d' % (n, ours.get(n), s) for n, s in sorted(cx['objects'].items())
       if ours.get(n) != s]
bad += ['function %s: missing' % n for n in cx['functions'] if not n.startswith('MPIR_') and n not in ours]
bad and print('\n'.join(bad))
sys.exit(1 if bad else 0)
PY
echo "ok: libmpichcxx.so.12 exports MPICH's objects (sizes) and functions"
mcxx cxx "$top_srcdir/tests/abi/mpich_cxx.cc"
mcxx cxx_O0 "$top_srcdir/tests/abi/mpich_cxx.cc" -O0
mcxx cxx_nopie "$top_srcdir/tests/abi/mpich_cxx.cc" -O2 -no-pie
mcxx cxx_now "$top_srcdir/tests/abi/mpich_cxx.cc" -O2 -fno-plt -Wl,-z,now
mcxx novt "$top_srcdir/tests/abi/mpich_cxx_novt.cc" -O0
mcxx ring -x c++ "$top_srcdir/examples/ring.c"
mkdir -p "$work/abi/mpich" "$work/abic/mpich"
ln -s "$SHIMDIR/libmpich.so.12" "$work/abi/mpich/libmpich.so.12"
ln -s libmpich.so.12 "$work/abi/mpich/libmpi.so.12"
ln -s "$CXXLIB" "$work/abi/mpich/libmpichcxx.so.12"
# the C shim with MPICH's own libmpichcxx.so.12 (which needs MPICH's libmpich internals)
ln -s "$SHIMDIR/libmpich.so.12" "$work/abic/mpich/libmpich.so.12"
MPICH_CXXLIB=/usr/lib/x86_64-linux-gnu/libmpichcxx.so.12
[ -e "$MPICH_CXXLIB" ] && ln -s "$MPICH_CXXLIB" "$work/abic/mpich/libmpichcxx.so.12"
onkumi() { # ABIDIR N PROG [args]
    local d=$1 n=$2; shift 2
    (cd "$work" && KUMI_ABI_DIR=$d LD_LIBRARY_PATH=$top_builddir/framework/.libs \
        timeout 150 "$MPIEXEC" --timeout 120 -n "$n" "$@")
}
bad=0
for n in 1 2 4; do
    log=$work/cxx.$n.log
    if onkumi "$work/abi" "$n" ./cxx > "$log" 2>&1 && grep -q "mpich_cxx: $n ranks ok" "$log"; then
        echo "ok: mpich_cxx at $n"
    else
        echo "FAILED: mpich_cxx at $n rank(s):"; sed 's/^/    | /' "$log" | tail -12; bad=$((bad + 1))
    fi
done
for v in cxx_O0 cxx_nopie cxx_now; do
    if onkumi "$work/abi" 2 ./$v > "$work/$v.log" 2>&1 && grep -q "mpich_cxx: 2 ranks ok" "$work/$v.log"; then
        echo "ok: mpich_cxx built as $v at 2"
    else
        echo "FAILED: mpich_cxx built as $v:"; sed 's/^/    | /' "$work/$v.log" | tail -8; bad=$((bad + 1))
    fi
done
if onkumi "$work/abi" 2 ./novt > "$work/novt.log" 2>&1 && grep -q "mpich_cxx_novt: ok" "$work/novt.log"; then
    echo "ok: virtual calls through the library's vtables at 2"
else
    echo "FAILED: mpich_cxx_novt:"; sed 's/^/    | /' "$work/novt.log" | tail -8; bad=$((bad + 1))
fi
if onkumi "$work/abi" 1 ./novt missing > "$work/missing.log" 2>&1; then
    echo "FAILED: a method nobody has was called and the program went on"; bad=$((bad + 1))
elif grep -q "libmpichcxx.so.12: MPI::Comm::Reduce_scatter_block(.*) const was called" "$work/missing.log"; then
    echo "ok: a method nobody has stops the program, named"
else
    echo "FAILED: a method nobody has:"; sed 's/^/    | /' "$work/missing.log" | tail -6; bad=$((bad + 1))
fi
if onkumi "$work/abi" 4 ./ring > "$work/ring.log" 2>&1 && grep -q "got the token 45 back" "$work/ring.log"; then
    echo "ok: ring.c built with $MPICHCXX at 4"
else
    echo "FAILED: ring.c built with $MPICHCXX:"; sed 's/^/    | /' "$work/ring.log" | tail -8; bad=$((bad + 1))
fi
# without our libmpichcxx.so.12 (MPICH's in its place, or none) it must not pass
if onkumi "$work/abic" 1 ./cxx > "$work/nocxx.log" 2>&1 && grep -q "mpich_cxx: 1 ranks ok" "$work/nocxx.log"; then
    echo "FAILED: mpich_cxx passed without Kumi's libmpichcxx.so.12"; bad=$((bad + 1))
else
    echo "ok: without Kumi's libmpichcxx.so.12 it fails"
fi
# without the shims (standard ABI: no shim folder) it runs on MPICH: not Kumi
if (cd "$work" && timeout 120 "$MPIEXEC" --abi standard --timeout 100 -n 1 ./cxx) > "$work/noshim.log" 2>&1; then
    echo "FAILED: mpich_cxx passed without the shims (its Kumi check is broken)"; bad=$((bad + 1))
else
    echo "ok: without the shims it fails"
fi
[ "$bad" -eq 0 ] || fail "$bad check(s) failed"
echo "all runs passed"
