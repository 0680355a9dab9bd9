#!/bin/bash
# abi_facts: the facts of the foreign ABIs (data/abi/ompi.json, mpich.json,
# from which the ABI shims of issue 17 are generated) hold.
# 1. Always: each file covers every constant of the standard ABI
#    (data/mpi-abi-1.0.json), each constant with a value, a symbol or marked
#    absent, the status layout and handle sizes are there, and every symbol
#    a constant names is one the library (or its Fortran library) exports;
#    the C++ predefined objects have their class's size and hold handles
#    the C library exports (Open MPI) or the C constants' values (MPICH),
#    and MPICH's C++ constants have the C ones' values.
# 2. Where the foreign MPI is installed (mpicc.openmpi, mpicc.mpich):
#    tools/abi-probe.py, run again, derives the same facts; and the checks
#    fire on a planted difference.
set -u
: "${top_srcdir:?}"
py=${PYTHON3:-python3}
command -v "$py" > /dev/null 2>&1 || { echo "SKIP: no $py"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
probe=$top_srcdir/tools/abi-probe.py
L=/usr/lib/x86_64-linux-gnu

check_file() {   # check_file FACTS.json: the part-1 checks; prints what is wrong
    "$py" - "$1" "$top_srcdir/data/mpi-abi-1.0.json" <<'EOF'
import json, sys
f, std = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bad = []
names = [c['name'] for c in std['constants'] if c.get('name')]
for n in names:
    r = f['constants'].get(n)
    if r is None:
        bad.append('%s: missing' % n)
    elif sum(k in r for k in ('value', 'symbol', 'absent')) != 1:
        bad.append('%s: needs exactly one of value, symbol, absent: %r' % (n, r))
    elif 'symbol' in r and r['symbol'] not in f['objects'] and r['symbol'] not in f['functions'] \
            and r['symbol'] not in f.get('fortran', {}).get('objects', {}):
        bad.append('%s: symbol %s is not exported by %s' % (n, r['symbol'], f['library']))
for k in ('MPI_SOURCE', 'MPI_TAG', 'MPI_ERROR'):
    if k not in f['status'].get('fields', {}):
        bad.append('status field %s: missing' % k)
if not f['status'].get('size') or f['status']['size'] < 12:
    bad.append('status size: %r' % f['status'].get('size'))
for t in ('MPI_Comm', 'MPI_Datatype', 'MPI_Request', 'MPI_Aint', 'MPI_Count', 'MPI_Fint'):
    if not f['types'].get(t):
        bad.append('sizeof %s: missing' % t)
for n in ('MPI_Send', 'MPI_Init', 'PMPI_Send'):
    if n not in f['functions']:
        bad.append('function %s: not listed' % n)
# the C++ bindings library: each predefined C++ object is exported with the size of its class
# and holds a C handle the C library exports (Open MPI) or the value of the C constant of its
# name (MPICH: int handles; its constants too); every vtable slot names a function
cx = f.get('cxx')
for n, r in sorted((cx or {}).get('handles', {}).items()):
    mangled = '_ZN3MPI%d%sE' % (len(n[5:]), n[5:])
    if cx['objects'].get(mangled) != cx['sizeof'].get(r['class']):
        bad.append('C++ %s: exported size %r, sizeof %s %r' % (n, cx['objects'].get(mangled), r['class'],
                                                                   cx['sizeof'].get(r['class'])))
    if cx.get('handles_are') == 'int':
        # (the C++ COMPLEX types are C++'s std::complex: MPI_CXX_*_COMPLEX, not Fortran's)
        alt = {'COMPLEX': 'CXX_FLOAT_COMPLEX', 'DOUBLE_COMPLEX': 'CXX_DOUBLE_COMPLEX',
               'LONG_DOUBLE_COMPLEX': 'CXX_LONG_DOUBLE_COMPLEX', 'BOOL': 'CXX_BOOL'}.get(n[5:], n[5:])
        c = f['constants'].get('MPI_' + alt, {})
        if 'value' in c and c['value'] & 0xffffffff != r['value'] & 0xffffffff:
            bad.append('C++ %s: handle 0x%x, MPI_%s 0x%x' % (n, r['value'], n[5:], c['value']))
    elif r['handle'] not in f['objects']:
        bad.append('C++ %s: handle %s is not exported by %s' % (n, r['handle'], f['library']))
for n, c in sorted((cx or {}).get('constants', {}).items()):
    k = f['constants'].get('MPI_' + n[5:], {})
    if c['size'] == 4 and 'value' in k and k['value'] != c['value']:
        bad.append('C++ %s: %d, MPI_%s %d' % (n, c['value'], n[5:], k['value']))
for v, slots in sorted((cx or {}).get('vtables', {}).items()):
    if len(slots) < 3 or slots[0] is not None or not (slots[1] or '').startswith('_ZTI'):
        bad.append('C++ vtable %s: %r...' % (v, slots[:3]))
print('\n'.join(bad))
EOF
}

# 1. the committed facts
for abi in ompi mpich; do
    f=$top_srcdir/data/abi/$abi.json
    [ -f "$f" ] || fail "no $f"
    out=$(check_file "$f") || fail "checking $f failed"
    [ -z "$out" ] || { echo "$out" | head -20; fail "$f: $(echo "$out" | wc -l) problems (above)"; }
done
# what the shims rely on most: the status layouts and a few values (abi-facts.md)
"$py" - "$top_srcdir/data/abi" <<'EOF' || fail "a known fact of the foreign ABIs is not in the data"
import json, sys
o = json.load(open(sys.argv[1] + '/ompi.json')); m = json.load(open(sys.argv[1] + '/mpich.json'))
assert o['library'] == 'libmpi.so.40' and m['library'] == 'libmpich.so.12', (o['library'], m['library'])
assert o['status']['size'] == 24 and m['status']['size'] == 20
assert m['status']['fields'] == {'MPI_SOURCE': 8, 'MPI_TAG': 12, 'MPI_ERROR': 16}
assert o['constants']['MPI_COMM_WORLD']['symbol'] == 'ompi_mpi_comm_world'
assert o['objects']['ompi_mpi_comm_world'] > 0
assert m['constants']['MPI_COMM_WORLD']['value'] == 0x44000000
assert o['constants']['MPI_IN_PLACE']['value'] == 1 and m['constants']['MPI_IN_PLACE']['value'] == -1
assert o['constants']['MPI_PROC_NULL']['value'] == -2 and m['constants']['MPI_PROC_NULL']['value'] == -1
assert o['constants']['MPI_COMM_NULL_COPY_FN']['symbol'] == 'OMPI_C_MPI_COMM_NULL_COPY_FN'
c = o['cxx']
assert c['library'] == 'libmpi_cxx.so.40' and c['objects']['_ZN3MPI10COMM_WORLDE'] == 16
assert c['handles']['MPI::COMM_WORLD'] == {'class': 'MPI::Intracomm', 'handle': 'ompi_mpi_comm_world'}
assert c['sizeof']['MPI::Exception'] == 24 and c['exception']['error_class'] == 16
assert '_ZN3MPI4CommC2Ev' in c['functions'] and '_ZN3MPI20InitializeInterceptsEv' in c['functions']
EOF
# the checks fire: a constant dropped, a symbol the library lacks
"$py" -c "
import json, sys
d = json.load(open(sys.argv[1])); del d['constants']['MPI_COMM_WORLD']; json.dump(d, open(sys.argv[2], 'w'))
d = json.load(open(sys.argv[1])); d['constants']['MPI_INT']['symbol'] = 'ompi_mpi_nosuch'; json.dump(d, open(sys.argv[3], 'w'))
" "$top_srcdir/data/abi/ompi.json" "$tmp/drop.json" "$tmp/sym.json"
"$py" -c "
import json, sys
d = json.load(open(sys.argv[1])); d['cxx']['objects']['_ZN3MPI3INTE'] = 8; json.dump(d, open(sys.argv[2], 'w'))
" "$top_srcdir/data/abi/ompi.json" "$tmp/cxx.json"
check_file "$tmp/cxx.json" | grep -q 'C++ MPI::INT: exported size 8' || fail "a C++ object of the wrong size went unnoticed"
check_file "$tmp/drop.json" | grep -q 'MPI_COMM_WORLD: missing' || fail "a dropped constant went unnoticed"
check_file "$tmp/sym.json" | grep -q 'MPI_INT: symbol ompi_mpi_nosuch is not exported' ||
    fail "a symbol the library lacks went unnoticed"

# 2. the probe derives the same facts where the foreign MPI is installed
probed=0
for spec in "ompi mpicc.openmpi libmpi.so.40 libmpi_mpifh.so.40 libmpi_cxx.so.40" "mpich mpicc.mpich libmpich.so.12 libmpichfort.so.12 libmpichcxx.so.12"; do
    set -- $spec
    if ! command -v "$2" > /dev/null 2>&1 || [ ! -e "$L/$3" ]; then
        echo "note: $2 or $L/$3 absent: the $1 facts are not re-derived here"
        continue
    fi
    fl=()
    [ -e "$L/$4" ] && fl=(--fortran-lib "$L/$4")
    [ $# -ge 5 ] && [ -e "$L/$5" ] && command -v "${2/cc/cxx}" > /dev/null 2>&1 && fl+=(--cxx-lib "$L/$5")
    "$py" "$probe" --name "$1" --cc "$2" --lib "$L/$3" "${fl[@]}" -o "$tmp/$1.json" 2> "$tmp/probe.err" ||
        { cat "$tmp/probe.err"; fail "abi-probe.py for $1 failed"; }
    "$py" - "$top_srcdir/data/abi/$1.json" "$tmp/$1.json" <<'EOF' || fail "data/abi/$1.json is not what the probe derives now (run tools/abi-probe.py again)"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for d in (a, b):
    d.pop('probe', None)
diff = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
for k in diff:
    if isinstance(a.get(k), dict) and isinstance(b.get(k), dict):
        sub = [s for s in sorted(set(a[k]) | set(b[k])) if a[k].get(s) != b[k].get(s)][:10]
        print('differs: %s: %s' % (k, ', '.join(map(str, sub))))
    else:
        print('differs: %s' % k)
sys.exit(1 if diff else 0)
EOF
    probed=$((probed+1))
done
echo "abi_facts: committed facts hold; $probed of 2 re-derived by the probe"
