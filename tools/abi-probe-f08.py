#!/usr/bin/env python3
"""Probe the facts of a foreign MPI's `use mpi_f08` (Open MPI 4.x, MPICH 4.x) into a JSON file.

usage: tools/abi-probe-f08.py --name NAME --fc MPIF90 --lib LIBRARY --mod MODDIR [-o FILE]

    tools/abi-probe-f08.py --name ompi --fc mpif90.openmpi \\
        --lib /usr/lib/x86_64-linux-gnu/libmpi_usempif08.so.40 \\
        --mod /usr/lib/x86_64-linux-gnu/fortran/gfortran-mod-15/openmpi -o data/abi/ompi-f08.json
    tools/abi-probe-f08.py --name mpich --fc mpif90.mpich \\
        --lib /usr/lib/x86_64-linux-gnu/libmpichfort.so.12 \\
        --mod /usr/include/x86_64-linux-gnu/mpich -o data/abi/mpich-f08.json

What a program of `use mpi_f08` built by the foreign mpif90 imports, and how it passes its
arguments:
- procedures: each specific procedure the library exports (Open MPI: mpi_<name>_f08_ with
  pmpi_ twins; MPICH: mpi_<name>_f08_, mpi_<name>_f08ts_ where a choice buffer is
  TYPE(*), DIMENSION(..), _large for the large-count forms, with pmpir_ twins) with its dummy
  arguments as the compiled module file (gfortran's format) declares them: kind (handle = a
  derived type of one INTEGER MPI_VAL, status, choice = TYPE(*) assumed-size or assumed-rank,
  character, integer, logical, procedure, c_ptr), OPTIONAL, VALUE;
- data: the symbols the library defines that a program may reach (module PARAMETERs and
  bind(C) variables, the sentinels, the default-initialisation and vtab objects of the derived
  types) with their sizes; for a handle object its value, for a vtab its first words (the
  type's hash and size: gfortran's SELECT TYPE compares them);
- functions: the module procedures that are not MPI procedures (the f08 MPI_COMM_DUP_FN and
  the other predefined callbacks; the == and /= operators on handles; ...), with their
  arguments where mpi_f08_types.mod declares them; sizeof: the procedure MPI_Sizeof calls
  for each type;
- sentinels: the symbol each of MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE, ... is (a
  probe program passes each to a C function that prints its address) and the layout of
  TYPE(MPI_Status).
Only the Fortran compiler is run; the probe program calls no MPI procedure.
"""
import argparse
import gzip
import json
import os
import re
import struct
import subprocess
import sys
import tempfile


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


BIND_C = set()   # the procedures of BIND(C): a choice buffer of assumed rank is a CFI_cdesc_t


def mod_procedures(path, pattern=r'^p?mpi_\w+_f08$'):
    """The specific procedures of a gfortran module file (those whose name matches) and their
    dummy arguments."""
    text = gzip.open(path, 'rt').read()
    ents = {}
    starts = [m for m in re.finditer(r"\n(\d+) '(\w+)' '(\w*)' '\w*' (\d+) \(\(", text)]
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        ents[int(m.group(1))] = (m.group(2), text[m.end():end])
    procs = {}
    for sid, (name, body) in ents.items():
        if not re.match(pattern, name) or 'GENERIC' in body.split(')')[0] or 'PROCEDURE' not in body[:30]:
            continue
        fm = re.search(r'\)\s+\d+\s+\d+\s+\(([\d\s]+)\)', body)
        args = []
        for a in (fm.group(1).split() if fm else []):
            an, ab = ents[int(a)]
            attrs = ab.split(')')[0]
            ty = re.search(r'\(\) \((\w+) (\d+)', ab)
            t = ty.group(1) if ty else '?'
            kind = {'INTEGER': 'integer', 'LOGICAL': 'logical', 'CHARACTER': 'character', 'ASSUMED': 'choice',
                    'REAL': 'real', 'DERIVED': 'derived', 'PROCEDURE': 'procedure'}.get(t, t.lower())
            if 'PROCEDURE' in attrs.split('(')[0] or ' PROC ' in attrs:
                kind = 'procedure'
            if kind == 'derived':
                dn = ents.get(int(ty.group(2)), ('?', ''))[0].lower()
                kind = 'status' if dn == 'mpi_status' else 'handle' if dn.startswith('mpi_') else 'c_ptr' if dn == 'c_ptr' else dn
            d = {'name': an, 'kind': kind}
            if kind == 'handle':
                d['type'] = dn
            elif kind in ('integer', 'logical') and ty.group(2) != '4':
                d['bytes'] = int(ty.group(2))   # INTEGER(KIND=MPI_ADDRESS_KIND), ...
            if 'DIMENSION' in attrs:
                d['array'] = 'assumed-rank' if 'ASSUMED_RANK' in ab else 'assumed-size' if 'ASSUMED_SIZE' in ab else 'explicit'
            for flag in ('OPTIONAL', 'VALUE'):
                if flag in attrs:
                    d[flag.lower()] = True
            args.append(d)
        procs[name] = args
        if 'IS_BIND_C' in body.split(')')[0]:
            BIND_C.add(name)
    return procs


def elf_read(path, addr, n):
    """n bytes at a virtual address of an ELF64 shared object (its PT_LOAD segments)."""
    with open(path, 'rb') as f:
        data = f.read()
    phoff, = struct.unpack_from('<Q', data, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from('<IIQQQQ', data, phoff + i * phentsize)
        if p_type == 1 and p_vaddr <= addr < p_vaddr + p_filesz:
            o = p_offset + addr - p_vaddr
            return data[o:o + n]
    return b'\0' * n


SENTINELS = ('MPI_BOTTOM', 'MPI_IN_PLACE', 'MPI_STATUS_IGNORE', 'MPI_STATUSES_IGNORE', 'MPI_ERRCODES_IGNORE',
             'MPI_UNWEIGHTED', 'MPI_WEIGHTS_EMPTY', 'MPI_ARGV_NULL', 'MPI_ARGVS_NULL')
# MPI_SIZEOF of mpi_f08: the types it is asked about and their sizes (gfortran's kinds)
SIZEOF_TYPES = (('character', 1), ('complex', 8), ('double precision', 8), ('integer', 4), ('integer(kind=1)', 1),
                ('integer(kind=2)', 2), ('integer(kind=8)', 8), ('logical', 4), ('real', 4), ('real(kind=8)', 8),
                ('complex(kind=8)', 16), ('real(kind=16)', 16), ('complex(kind=16)', 32))


def probe_program(fc, tmp):
    """The layout of TYPE(MPI_Status), and where each sentinel of mpi_f08 lies: a program passes
    each to a C function that prints its address (not PIE: the addresses are those nm gives)."""
    src = os.path.join(tmp, 'p.f90')
    with open(src, 'w') as f:
        f.write('program kumiprobe\nuse mpi_f08\nimplicit none\ntype(MPI_Status), target :: st(2)\n')
        f.write("print '(A,1X,I0)', 'KUMI_STATUS_BYTES', (loc(st(2)) - loc(st(1)))\n")
        for fld in ('MPI_SOURCE', 'MPI_TAG', 'MPI_ERROR'):
            f.write("print '(A,1X,I0)', 'KUMI_AT_%s', loc(st(1)%%%s) - loc(st(1))\n" % (fld, fld))
        f.write("print '(A,1X,I0)', 'KUMI_STATUS_SIZE', MPI_STATUS_SIZE\n")
        for sname in SENTINELS:
            f.write('call kumiref_%s(%s)\n' % (sname.lower(), sname))
        f.write('end program\n')
    with open(os.path.join(tmp, 'ref.c'), 'w') as f:
        f.write('#include <stdio.h>\n' + ''.join(
            'void kumiref_%s_(void *p) { printf("KUMI_SENT_%s %%lu\\n", (unsigned long)p); }\n'
            % (sn.lower(), sn) for sn in SENTINELS))
    prog = os.path.join(tmp, 'p')
    r = run([fc, '-no-pie', '-o', prog, src, os.path.join(tmp, 'ref.c')])
    if r.returncode:
        sys.exit('abi-probe-f08: the probe program does not build:\n' + r.stderr[:3000])
    out = run([prog]).stdout
    vals = {k: int(v) for k, v in (line.split() for line in out.splitlines())}
    where = {}
    for line in run(['nm', '-S', '--defined-only', prog]).stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in 'BbDdC':
            where[f[3]] = (int(f[0], 16), int(f[1], 16))
    sent = {}
    for k in [k for k in vals if k.startswith('KUMI_SENT_')]:
        addr = vals.pop(k)
        for sym, (base, size) in sorted(where.items()):
            if base <= addr < base + max(size, 1) and not sym.startswith('kumi'):
                sent[k[10:]] = [sym, addr - base]
    return vals, sent


def sizeofs(fc, syms, tmp):
    """The procedure a call of MPI_Sizeof (mpi_f08) on each type, scalar or array, imports,
    and that type's size in bytes."""
    out = {}
    for decl, size in SIZEOF_TYPES:
        for dims in ('', '(2)'):
            src = os.path.join(tmp, 'sz.f90')
            with open(src, 'w') as f:
                f.write('subroutine kumisz\nuse mpi_f08\n%s :: x%s\ninteger :: s\n'
                        'call MPI_Sizeof(x, s)\nend subroutine\n' % (decl, dims))
            if run([fc, '-c', '-o', os.path.join(tmp, 'sz.o'), src], cwd=tmp).returncode:
                continue
            for line in run(['nm', '-u', os.path.join(tmp, 'sz.o')]).stdout.splitlines():
                sym = line.split()[-1]
                if sym in syms and 'sizeof' in sym:
                    out[sym] = size
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--name', required=True)
    ap.add_argument('--fc', required=True)
    ap.add_argument('--lib', required=True, help='the foreign library of mpi_f08 (libmpi_usempif08.so.40, libmpichfort.so.12)')
    ap.add_argument('--mod', required=True, help='the folder of its compiled modules')
    ap.add_argument('-o', '--output')
    a = ap.parse_args()
    lib = os.path.realpath(a.lib)
    m = re.search(r'SONAME\s+(\S+)', run(['objdump', '-p', lib]).stdout)
    needed = re.findall(r'NEEDED\s+(\S+)', run(['objdump', '-p', lib]).stdout)
    syms = {}
    for line in run(['nm', '-D', '-S', '--defined-only', lib]).stdout.splitlines():
        f = line.split()
        if len(f) == 4:
            syms[f[3]] = (f[2], int(f[0], 16), int(f[1], 16))
        elif len(f) == 3:
            syms[f[2]] = (f[1], int(f[0], 16), 0)
    # Open MPI: the interfaces in mpi_f08_interfaces.mod; MPICH: in mpi_f08.mod
    imod = [x for x in ('mpi_f08_interfaces.mod', 'mpi_f08.mod') if os.path.exists(os.path.join(a.mod, x))][0]
    cmod = [x for x in ('mpi_f08_interfaces_callbacks.mod', 'mpi_f08_callbacks.mod') if os.path.exists(os.path.join(a.mod, x))][0]
    mods = mod_procedures(os.path.join(a.mod, imod), r'^mpix?_\w+_f08(ts)?(_large)?$')
    cbs = mod_procedures(os.path.join(a.mod, cmod), r'^mpi_\w+_function(_c)?$')
    tfns = mod_procedures(os.path.join(a.mod, 'mpi_f08_types.mod'), r'^\w+$')
    procs = {}
    for s in sorted(syms):
        mm = re.match(r'^((mpix?_\w+?)_f08(ts)?(_large)?)_$', s)
        if mm and syms[s][0] in 'TW':
            prof = [t for t in ('p' + s, 'pmpir_' + s[4:]) if t in syms]
            procs[mm.group(1)] = {'mpi': mm.group(2), 'large': bool(mm.group(4)), 'prof': prof[0] if prof else None,
                                  'args': mods.get(mm.group(1))}
            if mm.group(1) in BIND_C:
                procs[mm.group(1)]['bind_c'] = True
    data, funcs, vtabs, values = {}, {}, {}, {}
    for s, (t, addr, size) in sorted(syms.items()):
        if not re.match(r'^(__mpi_f08|MPIR_F08_|ompi_f08_|mpi_fortran_)', s):
            continue
        if size == 4 and t in 'DRB' and re.match(r'^(__mpi_f08_types_MOD_mpi_|ompi_f08_mpi_|__mpi_f08_compile_constants_MOD_mpi_)', s):
            values[s] = struct.unpack('<i', elf_read(lib, addr, 4))[0] if t != 'B' else 0
        if t in 'DBR':
            data[s] = size
            if '__vtab_' in s:
                h, sz = struct.unpack('<iq', elf_read(lib, addr, 16)[:4] + elf_read(lib, addr + 8, 8))
                vtabs[s] = {'hash': h, 'size': sz}
        elif t == 'T' and s.startswith('__mpi_f08') and 'sizeof' not in s:
            fn = s.split('_MOD_', 1)[1]
            funcs[s] = tfns.get(fn) if s.startswith('__mpi_f08_types_MOD_') else None
    with tempfile.TemporaryDirectory() as tmp:
        vals, sentinels = probe_program(a.fc, tmp)
        sizeof = sizeofs(a.fc, syms, tmp)
    status = {'size': vals.pop('KUMI_STATUS_BYTES'), 'MPI_STATUS_SIZE': vals.pop('KUMI_STATUS_SIZE'),
              'fields': {k[8:]: vals.pop(k) for k in list(vals) if k.startswith('KUMI_AT_')}}
    nargs = [p['args'] for p in procs.values() if p['args'] is not None]
    facts = {
        'about': ['Facts of a foreign MPI\'s use mpi_f08, produced by tools/abi-probe-f08.py '
                  '(do not edit by hand: run it again where that MPI is installed).',
                  'procedures: the specific procedure (its symbol less the last _) -> mpi (the MPI procedure), '
                  'large (the large-count form), prof (the symbol of its profiling twin) and args (its dummy '
                  'arguments in order, from the compiled module of the interfaces: kind, bytes of an INTEGER '
                  'that is not 4, array, optional, value), '
                  'bind_c where it is BIND(C) (an assumed-rank choice buffer is then a CFI_cdesc_t, else '
                  'gfortran\'s own array descriptor); '
                  'sentinels: the symbol (and offset) of each sentinel of mpi_f08; sizeof: the procedure of '
                  'MPI_Sizeof for each type -> its size; data: symbol -> size of what the library defines that a program may '
                  'reach; values: the initial value of each handle object among them (the Open MPI Fortran handle: a module PARAMETER or a bind(C) variable); vtabs: the hash and size words of each derived type\'s vtab; functions: its other '
                  'module procedures (with their dummy arguments from mpi_f08_types.mod); callbacks: the dummy arguments of the callback interfaces (mpi_f08_interfaces_callbacks.mod: MPI_User_function, ...); status: TYPE(MPI_Status).'],
        'name': a.name,
        'library': m.group(1) if m else os.path.basename(lib),
        'needed': needed,
        'probe': {'fc': a.fc},
        'choice': sorted({d.get('array', '') for p in nargs for d in p if d['kind'] == 'choice'}),
        'status': status,
        'sentinels': sentinels,
        'sizeof': dict(sorted(sizeof.items())),
        'procedures': procs,
        'data': data,
        'values': values,
        'vtabs': vtabs,
        'functions': funcs,
        'callbacks': cbs,
    }
    # one line per entry of the big tables
    parts = []
    for k, v in facts.items():
        if isinstance(v, dict) and k in ('procedures', 'data', 'values', 'vtabs', 'functions', 'callbacks', 'sizeof'):
            body = ',\n'.join('  %s: %s' % (json.dumps(kk), json.dumps(vv)) for kk, vv in v.items())
            parts.append(' %s: {\n%s\n }' % (json.dumps(k), body))
        else:
            parts.append(' %s: %s' % (json.dumps(k), json.dumps(v)))
    text = '{\n' + ',\n'.join(parts) + '\n}\n'
    if a.output:
        with open(a.output, 'w') as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    print('abi-probe-f08: %s (%s): %d procedures (%d with their interface), %d data, %d functions, '
          'choice buffers %s, status %d bytes' % (a.name, facts['library'], len(procs), len(nargs), len(data),
                                                  len(funcs), facts['choice'], status['size']), file=sys.stderr)


if __name__ == '__main__':
    main()
