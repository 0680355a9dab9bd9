#!/bin/bash
# abi_ompi_cxx: programs built with Debian's mpicxx.openmpi (Open MPI's C++ bindings, namespace
# MPI) run unmodified on Kumi through the Open MPI ABI shim and its C++ companion
# libmpi_cxx.so.40 (components/abi/ompicxx), at 1, 2 and 4 ranks, with the libraries chosen by
# mpiexec from KUMI_ABI_DIR (links to this build's libmpi.so.40 and libmpi_cxx.so.40; nothing
# but Kumi's libmpi.so.0 on LD_LIBRARY_PATH):
#   tests/abi/ompi_cxx.cc: the library is Kumi; COMM_WORLD Get_rank/Get_size, also virtually
#     through a reference; Send/Recv with MPI::Status, Sendrecv_replace; Bcast; Allreduce with
#     MPI::SUM and with a user MPI::Op; Create_contiguous; Split, Dup, Compare; Create_cart,
#     Get_coords, Shift; MPI::ERRORS_THROW_EXCEPTIONS: bad rank, bad count and Spawn (which Kumi
#     lacks) throw MPI::Exception of the right class, caught; ERRORS_RETURN;
#   the same built -O0, non-PIE and with -fno-plt -z now (at 2 ranks);
#   examples/ring.c compiled as C++ (mpicxx links libmpi_cxx.so.40 even for C code).
# Without our libmpi_cxx.so.40 (Open MPI's own in its place) and without the shims
# (--abi standard: all of Open MPI) the C++ program must fail.
set -u
OMPICXX=${OMPICXX:-mpicxx.openmpi}
command -v "$OMPICXX" > /dev/null 2>&1 || { echo "SKIP: $OMPICXX not found (Debian: openmpi-bin, libopenmpi-dev)"; exit 77; }
. "$top_srcdir/tests/scripts/abi_ompi_common.inc"
CXXLIB=$top_builddir/components/abi/ompicxx/.libs/libmpi_cxx.so.40
[ -f "$CXXLIB" ] || fail "no $CXXLIB (components/abi/ompicxx not built: no C++ compiler?)"
ompicxx() { # OUT SRC [flags...]
    local out=$1 src=$2; shift 2
    "$OMPICXX" -O1 -o "$work/$out" "$src" "$@" > "$work/$out.cc.log" 2>&1 ||
        { cat "$work/$out.cc.log"; fail "$OMPICXX $src $*"; }
    readelf -d "$work/$out" | grep -q 'NEEDED.*\[libmpi_cxx\.so\.40\]' || fail "$out does not need libmpi_cxx.so.40"
}
# the library exports every object of Open MPI's (data/abi/ompi.json cxx.objects; typeinfo
# apart: programs carry their own) with its size, and every strong function but those only
# Open MPI's libmpi calls (errhandler and attribute callbacks of its internals)
nm -D -S --defined-only "$CXXLIB" > "$work/nm.txt" || fail "nm $CXXLIB"
"${PYTHON3:-python3}" - "$top_srcdir/data/abi/ompi.json" "$work/nm.txt" <<'PY' || fail "libmpi_cxx.so.40 lacks what Open MPI's exports (above)"
import json, re, sys
cx = json.load(open(sys.argv[1]))['cxx']
ours = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) == 4:
        ours[f[3].split('@')[0]] = int(f[1], 16)
    elif len(f) == 3:
        ours[f[2].split('@')[0]] = 0
internal = re.compile(r'ompi_cxx_|ompi_mpi_cxx_(\w+_errhandler_invoke|\w+_throw_excptn_fctn|throw_exception|\w+_attr_intercept)$')
bad = ['object %s: size %r, Open MPI %d' % (n, ours.get(n), s) for n, s in sorted(cx['objects'].items())
       if not n.startswith(('_ZTI', '_ZTS')) and not internal.match(n) and ours.get(n) != s]
bad += ['function %s: missing' % n for n in cx['functions'] if not internal.match(n) and n not in ours]
bad and print('\n'.join(bad))
sys.exit(1 if bad else 0)
PY
echo "ok: libmpi_cxx.so.40 exports Open MPI's objects (sizes) and functions"
ompicxx cxx "$top_srcdir/tests/abi/ompi_cxx.cc"
ompicxx ring -x c++ "$top_srcdir/examples/ring.c"
# other ways to build: unoptimised (no devirtualisation: every call through the vtables),
# non-PIE, and -fno-plt -z now
ompicxx cxx_O0 "$top_srcdir/tests/abi/ompi_cxx.cc" -O0
ompicxx cxx_nopie "$top_srcdir/tests/abi/ompi_cxx.cc" -O2 -no-pie
ompicxx cxx_now "$top_srcdir/tests/abi/ompi_cxx.cc" -O2 -fno-plt -Wl,-z,now
mkdir -p "$work/abi/ompi" "$work/abic/ompi"
ln -sf "$SHIMDIR/libmpi.so.40" "$work/abi/ompi/libmpi.so.40"
ln -sf "$CXXLIB" "$work/abi/ompi/libmpi_cxx.so.40"
# the C shim with Open MPI's own libmpi_cxx.so.40 (where installed), which needs Open MPI's libmpi internals
ln -sf "$SHIMDIR/libmpi.so.40" "$work/abic/ompi/libmpi.so.40"
OMPI_CXXLIB=$(dirname "$(readlink -f "$(command -v "$OMPICXX")")")/../lib/x86_64-linux-gnu/libmpi_cxx.so.40
[ -e "$OMPI_CXXLIB" ] || OMPI_CXXLIB=/usr/lib/x86_64-linux-gnu/libmpi_cxx.so.40
[ -e "$OMPI_CXXLIB" ] && ln -sf "$OMPI_CXXLIB" "$work/abic/ompi/libmpi_cxx.so.40"
onkumi() { # ABIDIR N PROG
    (cd "$work" && KUMI_ABI_DIR=$1 LD_LIBRARY_PATH=$top_builddir/framework/.libs \
        timeout 120 "$MPIEXEC" --timeout 100 -n "$2" "./$3")
}
bad=0
for n in 1 2 4; do
    log=$work/cxx.$n.log
    if onkumi "$work/abi" "$n" cxx > "$log" 2>&1 && grep -q "ompi_cxx: $n ranks ok" "$log"; then
        echo "ok: ompi_cxx at $n"
    else
        echo "FAILED: ompi_cxx at $n rank(s):"; sed 's/^/    | /' "$log" | tail -12; bad=$((bad + 1))
    fi
done
for v in cxx_O0 cxx_nopie cxx_now; do
    if onkumi "$work/abi" 2 $v > "$work/$v.log" 2>&1 && grep -q "ompi_cxx: 2 ranks ok" "$work/$v.log"; then
        echo "ok: ompi_cxx built as $v at 2"
    else
        echo "FAILED: ompi_cxx built as $v:"; sed 's/^/    | /' "$work/$v.log" | tail -8; bad=$((bad + 1))
    fi
done
if onkumi "$work/abi" 4 ring > "$work/ring.log" 2>&1 && grep -q "got the token 45 back" "$work/ring.log"; then
    echo "ok: ring.c built with $OMPICXX at 4"
else
    echo "FAILED: ring.c built with $OMPICXX:"; sed 's/^/    | /' "$work/ring.log" | tail -8; bad=$((bad + 1))
fi
# without our libmpi_cxx.so.40 (Open MPI's in its place, or none: mpiexec refuses) it must not pass
if onkumi "$work/abic" 1 cxx > "$work/nocxx.log" 2>&1 && grep -q "ompi_cxx: 1 ranks ok" "$work/nocxx.log"; then
    echo "FAILED: ompi_cxx passed without Kumi's libmpi_cxx.so.40"; bad=$((bad + 1))
else
    echo "ok: without Kumi's libmpi_cxx.so.40 it fails"
fi
# without the shims (standard ABI: no shim folder) it runs on Open MPI: not Kumi
if (cd "$work" && timeout 120 "$MPIEXEC" --abi standard --timeout 100 -n 1 ./cxx) > "$work/noshim.log" 2>&1; then
    echo "FAILED: ompi_cxx passed without the shims (its Kumi check is broken)"; bad=$((bad + 1))
else
    echo "ok: without the shims it fails"
fi
[ "$bad" -eq 0 ] || fail "$bad check(s) failed"
echo "all runs passed"
