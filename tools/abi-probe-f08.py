#!/usr/bin/env python3
"""Probe the facts of a foreign MPI's `use mpi_f08` (Open MPI 4.x) into a JSON file.

usage: tools/abi-probe-f08.py --name ompi --fc mpif90.openmpi --lib LIBRARY --mod MODDIR
                              --ffacts data/abi/ompi-fortran.json [-o data/abi/ompi-f08.json]

    tools/abi-probe-f08.py --name ompi --fc mpif90.openmpi \\
        --lib /usr/lib/x86_64-linux-gnu/libmpi_usempif08.so.40 \\
        --mod /usr/lib/x86_64-linux-gnu/fortran/gfortran-mod-15/openmpi \\
        --ffacts data/abi/ompi-fortran.json -o data/abi/ompi-f08.json

What a program of `use mpi_f08` built by the foreign mpif90 imports, and how it passes its
arguments:
- procedures: each specific procedure of the mpi_f08 module the library exports (its symbol is
  mpi_<name>_f08_ and pmpi_<name>_f08_), with its dummy arguments as the compiled module file
  (mpi_f08_interfaces.mod, gfortran's format) declares them: kind (handle = a derived type of
  one INTEGER MPI_VAL, status, choice = TYPE(*) assumed-size or assumed-rank, character of
  assumed length, integer, logical, procedure), OPTIONAL, VALUE;
- data: the symbols the library defines that a program may reach (module PARAMETERs of the
  handles __mpi_f08_types_MOD_<name>, the bind(C) handles ompi_f08_<name>, the sentinels
  mpi_fortran_*_, the default-initialisation and vtab objects of the derived types) with their
  sizes; for a vtab its first words (the type's hash and size: gfortran's SELECT TYPE compares
  them);
- functions: the module procedures that are not MPI procedures (the f08 MPI_COMM_DUP_FN and
  the other predefined callbacks; the == and /= operators on handles; the types' copy procedures);
- the value of each handle PARAMETER as the program sees it (a probe program of `use mpi_f08`
  prints NAME%MPI_VAL) and the layout of TYPE(MPI_Status).
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
            if 'DIMENSION' in attrs:
                d['array'] = 'assumed-rank' if 'ASSUMED_RANK' in ab else 'assumed-size' if 'ASSUMED_SIZE' in ab else 'explicit'
            for flag in ('OPTIONAL', 'VALUE'):
                if flag in attrs:
                    d[flag.lower()] = True
            args.append(d)
        procs[name] = args
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


def probe_values(fc, names, tmp):
    """NAME%MPI_VAL of each handle PARAMETER of mpi_f08 and the layout of TYPE(MPI_Status)."""
    src = os.path.join(tmp, 'p.f90')
    with open(src, 'w') as f:
        f.write('program kumiprobe\nuse mpi_f08\nimplicit none\ntype(MPI_Status), target :: st(2)\n')
        for n in names:
            f.write("print '(A,1X,I0)', '%s', %s%%MPI_VAL\n" % (n, n))
        f.write("print '(A,1X,I0)', 'KUMI_STATUS_BYTES', (loc(st(2)) - loc(st(1)))\n")
        for fld in ('MPI_SOURCE', 'MPI_TAG', 'MPI_ERROR'):
            f.write("print '(A,1X,I0)', 'KUMI_AT_%s', loc(st(1)%%%s) - loc(st(1))\n" % (fld, fld))
        f.write("print '(A,1X,I0)', 'KUMI_STATUS_SIZE', MPI_STATUS_SIZE\nend program\n")
    r = run([fc, '-o', os.path.join(tmp, 'p'), src])
    if r.returncode:
        sys.exit('abi-probe-f08: the probe program does not build:\n' + r.stderr[:3000])
    out = run([os.path.join(tmp, 'p')]).stdout
    return {k: int(v) for k, v in (line.split() for line in out.splitlines())}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--name', required=True)
    ap.add_argument('--fc', required=True)
    ap.add_argument('--lib', required=True, help='the foreign libmpi_usempif08.so.40')
    ap.add_argument('--mod', required=True, help='the folder of its mpi_f08_interfaces.mod')
    ap.add_argument('--ffacts', required=True, help='the mpif.h facts (data/abi/ompi-fortran.json)')
    ap.add_argument('-o', '--output')
    a = ap.parse_args()
    ff = json.load(open(a.ffacts))
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
    mods = mod_procedures(os.path.join(a.mod, 'mpi_f08_interfaces.mod'))
    cbs = mod_procedures(os.path.join(a.mod, 'mpi_f08_interfaces_callbacks.mod'), r'^mpi_\w+_function$')
    procs = {}
    for s in sorted(syms):
        mm = re.match(r'^(mpix?_\w+)_f08_$', s)
        if mm and syms[s][0] in 'TW':
            procs[mm.group(1)] = {'pmpi': ('p' + s) in syms, 'args': mods.get(mm.group(1) + '_f08')}
    data, funcs, vtabs, values = {}, {}, {}, {}
    for s, (t, addr, size) in sorted(syms.items()):
        if size == 4 and t in 'DRB' and re.match(r'^(__mpi_f08_types_MOD_mpi_|ompi_f08_mpi_)', s):
            values[s] = struct.unpack('<i', elf_read(lib, addr, 4))[0] if t != 'B' else 0
        if t in 'DBRV' and not s.startswith('_'):
            data[s] = size
        elif t in 'DBR' and s.startswith('__mpi_f08'):
            data[s] = size
            if '__vtab_' in s:
                h, sz = struct.unpack('<iq', elf_read(lib, addr, 16)[:4] + elf_read(lib, addr + 8, 8))
                vtabs[s] = {'hash': h, 'size': sz}
        elif t == 'T' and s.startswith('__mpi_f08'):
            funcs[s] = True
    # the handle PARAMETERs: __mpi_f08_types_MOD_<name> (the names are those of mpif.h)
    fconst = ff['constants']
    hnames = sorted(n for n in fconst if '__mpi_f08_types_MOD_' + n.lower() in data)
    with tempfile.TemporaryDirectory() as tmp:
        vals = probe_values(a.fc, hnames, tmp)
    status = {'size': vals.pop('KUMI_STATUS_BYTES'), 'MPI_STATUS_SIZE': vals.pop('KUMI_STATUS_SIZE'),
              'fields': {k[8:]: vals.pop(k) for k in list(vals) if k.startswith('KUMI_AT_')}}
    nargs = [p['args'] for p in procs.values() if p['args'] is not None]
    facts = {
        'about': ['Facts of a foreign MPI\'s use mpi_f08 (Open MPI 4.x), produced by tools/abi-probe-f08.py '
                  '(do not edit by hand: run it again where that MPI is installed).',
                  'procedures: name (lower case, without the _f08_ of its symbol) -> pmpi (a pmpi_ twin is '
                  'exported) and args (its dummy arguments in order, from mpi_f08_interfaces.mod: kind, array, '
                  'optional, value); data: symbol -> size of what the library defines that a program may '
                  'reach; values: the initial value of each handle object among them (the Open MPI Fortran handle: a module PARAMETER or a bind(C) variable); vtabs: the hash and size words of each derived type\'s vtab; functions: its other '
                  'module procedures; callbacks: the dummy arguments of the callback interfaces (mpi_f08_interfaces_callbacks.mod: MPI_User_function, ...); handles: NAME%MPI_VAL of each handle PARAMETER; status: TYPE(MPI_Status).'],
        'name': a.name,
        'library': m.group(1) if m else os.path.basename(lib),
        'needed': needed,
        'probe': {'fc': a.fc},
        'choice': sorted({d.get('array', '') for p in nargs for d in p if d['kind'] == 'choice'}),
        'status': status,
        'handles': dict(sorted(vals.items())),
        'procedures': procs,
        'data': data,
        'values': values,
        'vtabs': vtabs,
        'functions': sorted(funcs),
        'callbacks': cbs,
    }
    # one line per entry of the big tables
    parts = []
    for k, v in facts.items():
        if isinstance(v, dict) and k in ('procedures', 'data', 'values', 'vtabs', 'handles', 'callbacks'):
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
