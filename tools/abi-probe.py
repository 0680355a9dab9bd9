#!/usr/bin/env python3
"""Probe the facts of a foreign MPI ABI (Open MPI, MPICH) into a JSON file.

usage: tools/abi-probe.py --name NAME --cc WRAPPER --lib LIBRARY [--abi data/mpi-abi-1.0.json]
                          [--fortran-lib LIB] [--cxx-lib LIB [--cxx WRAPPER]] [-o data/abi/NAME.json]

The ABI shims (issue 17) translate between Kumi's native ABI (the MPI 5.0
standard ABI, data/mpi-abi-1.0.json) and a foreign one; their translators are
generated from facts kept as data in the tree (data/abi/*.json), so that the
build needs no foreign MPI.  This is the probe that produced those facts; run
it again where the foreign MPI is installed to re-derive them:

    L=/usr/lib/x86_64-linux-gnu
    tools/abi-probe.py --name ompi --cc mpicc.openmpi --lib $L/libmpi.so.40 \
        --fortran-lib $L/libmpi_mpifh.so.40 --cxx-lib $L/libmpi_cxx.so.40 -o data/abi/ompi.json
    tools/abi-probe.py --name mpich --cc mpicc.mpich --lib $L/libmpich.so.12 \
        --fortran-lib $L/libmpichfort.so.12 --cxx-lib $L/libmpichcxx.so.12 -o data/abi/mpich.json

For every constant of the standard ABI it records how the foreign mpi.h
spells it (its preprocessed expansion) and, where the value is known at
compile time, the value: integers (error classes, MPI_ANY_SOURCE, ...),
integer handles (MPICH's MPI_COMM_WORLD = 0x44000000), sentinels
(MPI_IN_PLACE).  A constant that is the address of an object of the library
(Open MPI's MPI_COMM_WORLD = &ompi_mpi_comm_world, MPICH's MPI_UNWEIGHTED) or
of a function (MPI_COMM_NULL_COPY_FN) names that symbol instead.  Absent
constants (MPI 4.1 / 5.0 ones an older MPI lacks) are listed as absent.  It
also records the sizes of the handle and integer types, the layout of
MPI_Status, and every data object and function the library exports (nm -D
-S), with sizes: a PIE binary reaches the predefined objects by copy
relocation, so a shim must define them with the same names and sizes.

Only the C compiler is run (the program it builds prints constants; it calls
no MPI function), so no MPI process starts.

With --cxx-lib (Open MPI's C++ bindings library, libmpi_cxx.so.40, which
mpicxx links every program with) it also records, under 'cxx', what that
library exports (mangled names; data objects with their sizes: the
predefined C++ objects such as MPI::COMM_WORLD, which PIE programs copy-
relocate, and the vtables and typeinfo of the classes; functions, 'strong'
ones apart from the inline functions it also emits), the sizes of the
binding classes and the layout of MPI::Exception (a program built with the
C++ wrapper prints them), and the class of each predefined C++ object and
which C handle object it holds ('handles': that program, linked with the
library, reads each object's typeid and handle after the library's static
initialisation, without MPI_Init, and names the handle with dladdr).

With --cxx-lib for an ABI of int handles (MPICH's libmpichcxx.so.12; cxx_facts_ints) 'cxx'
also has 'handles_are': 'int', each predefined object's handle value, 'constants' (the
'const int' objects MPI::ANY_SOURCE, ... and the 8-byte MPI::BOTTOM, ... with their values,
read by the program), 'vtables' (for every vtable the function each slot names, from the
library's symbolic relocations: null for offset-to-top and empty slots), 'typeinfo_bases' and
'demangled' names; its classes with an out-of-line virtual function have their vtable in the
library only, so a library that replaces it must lay them out as recorded.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

# types of the standard ABI's constants whose value the probe program prints
INT_TYPES = ('int', 'int (enum)', 'MPI_Offset')
HANDLE_TYPES = ('MPI_Comm', 'MPI_Datatype', 'MPI_Op', 'MPI_Group', 'MPI_Win', 'MPI_File', 'MPI_Session',
                'MPI_Message', 'MPI_Info', 'MPI_Errhandler', 'MPI_Request')
HANDLE_TYPEDEFS = HANDLE_TYPES + ('MPI_Aint', 'MPI_Offset', 'MPI_Count', 'MPI_Fint')


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def wrapper_flags(cc):
    """The compiler and flags the wrapper would use (-show / -showme)."""
    for opt in ('-show', '-showme'):
        r = run([cc, opt])
        if r.returncode == 0 and r.stdout.strip():
            words = shlex.split(r.stdout.strip())
            return words[0], [w for w in words[1:] if w.startswith('-I')], [w for w in words[1:] if not w.startswith('-I')]
    sys.exit('abi-probe: %s answers neither -show nor -showme' % cc)


def cxx_exports(lib):
    """{name: (kind, size, weak)} of the dynamic symbols lib defines: kind 'object' or
    'function'; weak: a weak or unique definition (C++ vtables, inline objects)."""
    r = run(['nm', '-D', '-S', '--defined-only', lib])
    if r.returncode:
        sys.exit('abi-probe: nm %s: %s' % (lib, r.stderr.strip()))
    out = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 4:
            _, size, t, name = f
        elif len(f) == 3:
            _, t, name = f
            size = '0'
        else:
            continue
        kind = 'function' if t in 'TtWi' else 'object' if t in 'BbDdRrVvGgSs' else None
        if kind:
            out[name.split('@')[0]] = (kind, int(size, 16), t in 'WwVv')
    return out


def exports(lib):
    """{name: (kind, size)} of the dynamic symbols lib defines: kind 'object' or 'function'."""
    return {n: (k, sz) for n, (k, sz, _) in cxx_exports(lib).items()}


CXX_CLASSES = ('Comm_Null', 'Comm', 'Intracomm', 'Cartcomm', 'Graphcomm', 'Intercomm', 'Datatype', 'Op',
               'Errhandler', 'Group', 'Win', 'Info', 'File', 'Request', 'Prequest', 'Grequest', 'Status',
               'Exception')
# the C++ classes whose conversion to a C handle names a predefined object's handle
CXX_HANDLE_OF = (('Comm_Null', 'MPI_Comm'), ('Datatype', 'MPI_Datatype'), ('Op', 'MPI_Op'),
                 ('Errhandler', 'MPI_Errhandler'), ('Group', 'MPI_Group'), ('Win', 'MPI_Win'),
                 ('Info', 'MPI_Info'), ('File', 'MPI_File'), ('Request', 'MPI_Request'))


def cxx_facts(cxx, lib, tmp):
    """The 'cxx' facts: see the module's doc."""
    r = run(['objdump', '-p', lib])
    m = re.search(r'SONAME\s+(\S+)', r.stdout)
    syms = cxx_exports(lib)
    dem = run(['c++filt'], input='\n'.join(sorted(syms))).stdout.split('\n')
    demangled = dict(zip(sorted(syms), dem))
    # predefined objects: MPI::NAME data objects of 16 bytes (vptr and handle), not vtables
    predef = sorted(demangled[n] for n, (k, sz, w) in syms.items()
                    if k == 'object' and not w and re.match(r'MPI::[A-Z][A-Z0-9_]*$', demangled[n]) and sz == 16)
    src = os.path.join(tmp, 'cxxprobe.cc')
    with open(src, 'w') as f:
        f.write('#include <mpi.h>\n#include <dlfcn.h>\n#include <cstdio>\n#include <cstddef>\n')
        for cls, ctype in CXX_HANDLE_OF:
            f.write('static void *h(const MPI::%s &o) { return (void *)(%s)o; }\n' % (cls, ctype))
        f.write('struct E : MPI::Exception { E() : MPI::Exception(0) {}\n'
                '  static void show() { std::printf("exception error_code %zu\\nexception error_string %zu\\n'
                'exception error_class %zu\\n", offsetof(E, error_code), offsetof(E, error_string), '
                'offsetof(E, error_class)); } };\n')
        f.write('#include <typeinfo>\n')
        f.write('static void name(const char *n, const char *t, void *p) { Dl_info i; std::printf("handle %s %s %s\\n", '
                'n, t, p && dladdr(p, &i) && i.dli_sname && i.dli_saddr == p ? i.dli_sname : "-"); }\n')
        f.write('int main()\n{\n')
        for c in CXX_CLASSES:
            f.write('    std::printf("sizeof %s %%zu\\n", sizeof(MPI::%s));\n' % (c, c))
        f.write('    E::show();\n')
        for n in predef:
            f.write('    name("%s", typeid(%s).name(), h(%s));\n' % (n, n, n))
        f.write('    return 0;\n}\n')
    ccx, incs, ldflags = wrapper_flags(cxx)
    prog = os.path.join(tmp, 'cxxprobe')
    r = run([ccx] + incs + ['-w', '-o', prog, src] + ldflags + ['-ldl'])
    if r.returncode:
        sys.exit('abi-probe: the C++ probe program does not build:\n' + r.stderr[:3000])
    r = run([prog])
    if r.returncode:
        sys.exit('abi-probe: the C++ probe program failed: ' + r.stderr)
    sizes, exc, handles = {}, {}, {}
    for line in r.stdout.splitlines():
        w = line.split()
        if w[0] == 'sizeof':
            sizes['MPI::' + w[1]] = int(w[2])
        elif w[0] == 'exception':
            exc[w[1]] = int(w[2])
        elif w[0] == 'handle':
            t = re.match(r'N3MPI\d+(\w+)E$', w[2])
            handles[w[1]] = {'class': 'MPI::' + t.group(1) if t else w[2], 'handle': None if w[3] == '-' else w[3]}
    return {
        'library': m.group(1) if m else os.path.basename(lib),
        'objects': {n: sz for n, (k, sz, w) in sorted(syms.items()) if k == 'object'},
        'functions': sorted(n for n, (k, sz, w) in syms.items() if k == 'function' and not w),
        'inline_functions': sorted(n for n, (k, sz, w) in syms.items() if k == 'function' and w),
        'sizeof': sizes,
        'exception': exc,
        'handles': handles,
    }


def relocations(lib):
    """{offset: symbol} of the library's symbolic dynamic relocations (R_X86_64_64 and the like:
    a vtable's slots, a typeinfo's base)."""
    r = run(['readelf', '-rW', lib])
    out = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 5 and re.match(r'^[0-9a-f]{8,}$', f[0]) and f[2].startswith('R_') and not f[2].endswith('RELATIVE'):
            out[int(f[0], 16)] = f[4].split('@')[0]
    return out


def cxx_facts_ints(cxx, lib, tmp):
    """The 'cxx' facts of MPICH's C++ bindings library (libmpichcxx.so.12), whose handles are
    ints: see the module's doc.  Besides what cxx_facts records: the value of every predefined
    object's handle, the value of every constant the library defines (MPI::ANY_SOURCE, ...:
    'const int' objects programs read from it), the slots of every vtable (the function each
    slot names, from the library's relocations: a program that emits no vtable of a class uses
    the library's) and the base of every typeinfo."""
    r = run(['objdump', '-p', lib])
    m = re.search(r'SONAME\s+(\S+)', r.stdout)
    syms = cxx_exports(lib)
    dem = run(['c++filt'], input='\n'.join(sorted(syms))).stdout.split('\n')
    demangled = dict(zip(sorted(syms), dem))
    r = run(['nm', '-D', '--defined-only', lib])
    addr = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 3:
            addr[f[2].split('@')[0]] = int(f[0], 16)
    rel = relocations(lib)
    vtables, bases = {}, {}
    for n, (k, sz, w) in sorted(syms.items()):
        if n.startswith('_ZTV') and k == 'object':
            vtables[n] = [rel.get(addr[n] + 8 * i) for i in range(sz // 8)]
        elif n.startswith('_ZTI') and k == 'object' and sz == 24:
            bases[n] = rel.get(addr[n] + 16)
    objs = {demangled[n]: (n, sz) for n, (k, sz, w) in syms.items()
            if k == 'object' and not w and re.match(r'MPI::[A-Z][A-Z0-9_]*$', demangled[n])}
    predef = sorted(d for d, (n, sz) in objs.items() if sz == 16)
    consts = sorted(d for d, (n, sz) in objs.items() if sz in (4, 8))
    classes = [c if c != 'Comm_Null' else 'Nullcomm' for c in CXX_CLASSES]
    lines = ['#include <mpi.h>', '#include <cstdio>', '#include <cstddef>', '#include <typeinfo>',
             'struct E : MPI::Exception { static void show() { std::printf("exception the_real_exception %zu\\n'
             'exception the_error_message %zu\\n", offsetof(E, the_real_exception), offsetof(E, the_error_message)); } };',
             'template <class T> static long long h(const T &o) { return (long long)*(const int *)((const char *)&o + 8); }',
             'static long long h(const MPI::File &o) { return (long long)(intptr_t)(MPI_File)o; }',
             'int main()', '{']
    for c in classes:
        lines.append('    std::printf("sizeof %s %%zu\\n", sizeof(MPI::%s));' % (c, c))
    lines.append('    E::show();')
    lines.append('    { MPI::Intracomm c(MPI_COMM_WORLD); MPI::Datatype d(MPI_INT); '
                 'if ((MPI_Comm)c != (MPI_Comm)h(c) || (MPI_Datatype)d != (MPI_Datatype)h(d)) return 3; }')
    body = []
    for n in predef:
        body.append('    std::printf("handle %s %%s %%lld\\n", typeid(%s).name(), h(%s));' % (n, n, n))
    for n in consts:
        body.append('    std::printf("const %s %%lld\\n", (long long)(intptr_t)(%s));' % (n, n))
    src = os.path.join(tmp, 'cxxprobe.cc')
    prog = os.path.join(tmp, 'cxxprobe')
    ccx, incs, ldflags = wrapper_flags(cxx)
    for _ in range(len(body) + 1):
        with open(src, 'w') as f:
            f.write('\n'.join(lines) + '\n')
            for i, b in enumerate(body):
                f.write('#line %d "probe-item"\n%s\n' % (i + 1, b))
            f.write('    return 0;\n}\n')
        r = run([ccx] + incs + ['-w', '-o', prog, src] + ldflags)
        if r.returncode == 0:
            break
        bad = {int(x.group(1)) for x in re.finditer(r'probe-item:(\d+):', r.stderr)}
        if not bad:
            sys.exit('abi-probe: the C++ probe program does not build:\n' + r.stderr[:3000])
        body = [b for i, b in enumerate(body) if i + 1 not in bad]
    r = run([prog])
    if r.returncode:
        sys.exit('abi-probe: the C++ probe program failed (%d): %s' % (r.returncode, r.stderr))
    sizes, exc, handles, values = {}, {}, {}, {}
    for line in r.stdout.splitlines():
        w = line.split()
        if w[0] == 'sizeof':
            sizes['MPI::' + w[1]] = int(w[2])
        elif w[0] == 'exception':
            exc[w[1]] = int(w[2])
        elif w[0] == 'handle':
            t = re.match(r'N3MPI\d+(\w+)E$', w[2])
            handles[w[1]] = {'class': 'MPI::' + t.group(1) if t else w[2], 'value': int(w[3])}
        elif w[0] == 'const':
            values[w[1]] = int(w[2])
    return {
        'library': m.group(1) if m else os.path.basename(lib),
        'handles_are': 'int',
        'objects': {n: sz for n, (k, sz, w) in sorted(syms.items()) if k == 'object'},
        'functions': sorted(n for n, (k, sz, w) in syms.items() if k == 'function' and not w),
        'inline_functions': sorted(n for n, (k, sz, w) in syms.items() if k == 'function' and w),
        'demangled': {n: demangled[n] for n in sorted(syms) if syms[n][0] == 'function' or n.startswith('_ZT')},
        'sizeof': sizes,
        'exception': exc,
        'handles': handles,
        'constants': {d: {'symbol': objs[d][0], 'size': objs[d][1], 'value': values[d]} for d in consts if d in values},
        'vtables': vtables,
        'typeinfo_bases': bases,
    }


def expansions(cc, incs, names, tmp):
    """How mpi.h spells each name after preprocessing (None: not a macro of it, or absent)."""
    src = os.path.join(tmp, 'pp.c')
    with open(src, 'w') as f:
        f.write('#include <mpi.h>\n')
        for n in names:
            f.write('KUMIPROBE_%s: %s :KUMIPROBE_END\n' % (n, n))
    r = run([cc] + incs + ['-E', '-P', src])
    if r.returncode:
        sys.exit('abi-probe: preprocessing mpi.h failed:\n' + r.stderr)
    got = {}
    for m in re.finditer(r'KUMIPROBE_(\w+):(.*?):KUMIPROBE_END', r.stdout, re.S):
        got[m.group(1)] = ' '.join(m.group(2).split())
    return got


def values(cc, incs, ldflags, exprs, tmp):
    """Compile and run a program printing (long long) of each expression; the
    ones the compiler rejects (absent names, non-constant expressions) are
    dropped one by one.  Returns {key: int}."""
    exprs = dict(exprs)
    prog = os.path.join(tmp, 'probe')
    for _ in range(len(exprs) + 1):
        src = os.path.join(tmp, 'probe.c')
        keys = sorted(exprs)
        with open(src, 'w') as f:
            f.write('#include <mpi.h>\n#include <stdio.h>\n#include <stddef.h>\n#include <stdint.h>\n')
            f.write('int main(void)\n{\n')
            for i, k in enumerate(keys):
                f.write('#line %d "probe-item"\n' % (i + 1))
                f.write('    { static const long long v = (long long)(intptr_t)(%s); printf("%%s %%lld\\n", "%s", v); }\n'
                        % (exprs[k], k))
            f.write('    return 0;\n}\n')
        r = run([cc] + incs + ['-w', '-o', prog, src] + ldflags)
        if r.returncode == 0:
            break
        bad = {int(m.group(1)) for m in re.finditer(r'probe-item:(\d+):', r.stderr)}
        if not bad:
            sys.exit('abi-probe: the probe program does not build:\n' + r.stderr[:3000])
        for i in bad:
            exprs.pop(keys[i - 1], None)
    else:
        sys.exit('abi-probe: could not build the probe program')
    r = run([prog])
    if r.returncode:
        sys.exit('abi-probe: the probe program failed: ' + r.stderr)
    return {k: int(v) for k, v in (line.split() for line in r.stdout.splitlines())}


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--name', required=True, help='short name of the ABI (ompi, mpich)')
    ap.add_argument('--cc', required=True, help="the foreign MPI's C wrapper (mpicc.openmpi, mpicc.mpich)")
    ap.add_argument('--lib', required=True, help='the foreign libmpi (its soname is recorded)')
    ap.add_argument('--fortran-lib', help="the foreign MPI's Fortran library (mpif.h / use mpi): its exports "
                    "and COMMON blocks are recorded")
    ap.add_argument('--cxx-lib', help="the foreign MPI's C++ bindings library (libmpi_cxx.so.40, libmpichcxx.so.12): its exports, "
                    "class sizes and predefined objects are recorded")
    ap.add_argument('--cxx', help='the C++ wrapper for --cxx-lib (default: --cc with cc replaced by cxx)')
    ap.add_argument('--abi', default=os.path.join(top, 'data', 'mpi-abi-1.0.json'))
    ap.add_argument('-o', '--output')
    a = ap.parse_args()

    abi = json.load(open(a.abi))
    types = {c['name']: c.get('type') for c in abi['constants'] if c.get('name')}
    consts = [dict(c, type=c.get('type') or types.get(c.get('alias_of'))) for c in abi['constants'] if c.get('name')]
    cc, incs, ldflags = wrapper_flags(a.cc)
    lib = os.path.realpath(a.lib)
    soname = None
    r = run(['objdump', '-p', lib])
    m = re.search(r'SONAME\s+(\S+)', r.stdout)
    if m:
        soname = m.group(1)
    syms = exports(lib)

    with tempfile.TemporaryDirectory() as tmp:
        names = [c['name'] for c in consts]
        exp = expansions(cc, incs, names, tmp)
        probe = {}
        for c in consts:
            n, t = c['name'], c['type']
            if t in INT_TYPES or t in HANDLE_TYPES or (t or '').endswith('*') or (t or '').startswith('MPI_T_'):
                probe['c:' + n] = n
        for t in HANDLE_TYPEDEFS + ('MPI_Status',):
            probe['sizeof:' + t] = 'sizeof(%s)' % t
        for fld in ('MPI_SOURCE', 'MPI_TAG', 'MPI_ERROR'):
            probe['offsetof:MPI_Status.' + fld] = 'offsetof(MPI_Status, %s)' % fld
        vals = values(cc, incs, ldflags, probe, tmp)

    facts = {
        'about': ['Facts of a foreign MPI ABI, produced by tools/abi-probe.py (do not edit by hand: run it '
                  'again where that MPI is installed).',
                  'constants: for each constant of the MPI 5.0 standard ABI (data/mpi-abi-1.0.json), how the '
                  "foreign mpi.h spells it ('expansion'), and its 'value' (a compile-time integer: integers, "
                  "integer handles, sentinels) or the 'symbol' of the library or program it is the address of; "
                  "'absent': the foreign mpi.h lacks it.",
                  'types: sizeof of handle and integer types; status: the size and field offsets of MPI_Status; '
                  'objects: the data objects the library exports, with their sizes; functions: the functions '
                  'it exports.'],
        'name': a.name,
        'library': soname or os.path.basename(lib),
        'probe': {'cc': a.cc, 'compiler': cc, 'include': incs},
        'types': {t: vals['sizeof:' + t] for t in HANDLE_TYPEDEFS if 'sizeof:' + t in vals},
        'status': {'size': vals.get('sizeof:MPI_Status'),
                   'fields': {f: vals['offsetof:MPI_Status.' + f] for f in ('MPI_SOURCE', 'MPI_TAG', 'MPI_ERROR')
                              if 'offsetof:MPI_Status.' + f in vals}},
        'constants': {},
        'objects': {n: s for n, (k, s) in sorted(syms.items()) if k == 'object'},
        'functions': sorted(n for n, (k, s) in syms.items() if k == 'function'
                            and (n.startswith(('MPI_', 'PMPI_', 'MPIX_', 'ompi_', 'OMPI_', 'mpi_', 'pmpi_'))
                                 or n.startswith('MPIR_'))),
    }
    if a.fortran_lib:
        flib = os.path.realpath(a.fortran_lib)
        r = run(['objdump', '-p', flib])
        m = re.search(r'SONAME\s+(\S+)', r.stdout)
        fsyms = exports(flib)
        facts['fortran'] = {
            'library': m.group(1) if m else os.path.basename(flib),
            'objects': {n: sz for n, (k, sz) in sorted(fsyms.items()) if k == 'object'},
            'functions': sorted(n for n, (k, sz) in fsyms.items() if k == 'function'
                                and re.match(r'(p?mpi_|MPI_|PMPI_|__mpi)', n, re.I)),
        }
    if a.cxx_lib:
        with tempfile.TemporaryDirectory() as tmp:
            probe = cxx_facts_ints if facts['types'].get('MPI_Comm') == 4 else cxx_facts
            facts['cxx'] = probe(a.cxx or a.cc.replace('cc', 'cxx', 1), os.path.realpath(a.cxx_lib), tmp)
    for c in consts:
        n = c['name']
        e = exp.get(n)
        rec = {'type': c['type']}
        spelled = e is not None and e != n
        if spelled:
            rec['expansion'] = e
        idents = [i for i in re.findall(r'[A-Za-z_]\w*', e or '') if i in syms]
        if ('c:' + n) in vals and not idents:
            rec['value'] = vals['c:' + n]
        elif idents:
            rec['symbol'] = idents[-1]
        elif not spelled and ('c:' + n) not in vals:
            rec['absent'] = True
        facts['constants'][n] = rec
    text = json.dumps(facts, indent=1, sort_keys=False) + '\n'
    if a.output:
        os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
        with open(a.output, 'w') as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    n_abs = sum(1 for r in facts['constants'].values() if r.get('absent'))
    print('abi-probe: %s (%s): %d constants (%d absent), %d objects, %d functions, MPI_Status %s bytes'
          % (a.name, facts['library'], len(facts['constants']), n_abs, len(facts['objects']),
             len(facts['functions']), facts['status']['size']), file=sys.stderr)


if __name__ == '__main__':
    main()
