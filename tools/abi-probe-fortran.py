#!/usr/bin/env python3
"""Probe the Fortran facts of a foreign MPI ABI (mpif.h / use mpi) into a JSON file.

usage: tools/abi-probe-fortran.py --name ompi --fc mpif90.openmpi --lib LIBRARY
                                  [--abi data/mpi-abi-1.0.json] [-o data/abi/ompi-fortran.json]

    tools/abi-probe-fortran.py --name ompi --fc mpif90.openmpi \\
        --lib /usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40 -o data/abi/ompi-fortran.json

The Fortran part of the foreign-ABI facts (tools/abi-probe.py records the C
part): the values mpif.h gives the constants of the standard ABI's list
(data/mpi-abi-1.0.json) that are integer PARAMETERs in Fortran (handles,
error classes, MPI_ANY_SOURCE, ...) plus MPI_STATUS_SIZE and the status
indices MPI_SOURCE / MPI_TAG / MPI_ERROR; the COMMON blocks a program that
includes mpif.h defines (the sentinels MPI_BOTTOM, MPI_IN_PLACE,
MPI_STATUS_IGNORE, ..., with their symbol names and sizes, from nm of the
probe program); the value of .TRUE.; and the procedures the Fortran library
exports under each spelling (nm -D).  Only the Fortran compiler is run: the
probe program calls no MPI procedure.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

EXTRA = ['MPI_STATUS_SIZE', 'MPI_SOURCE', 'MPI_TAG', 'MPI_ERROR', 'MPI_ADDRESS_KIND', 'MPI_OFFSET_KIND',
         'MPI_COUNT_KIND', 'MPI_INTEGER_KIND', 'MPI_LB', 'MPI_UB']   # the last two: MPI-1 markers (removed)

# referenced by the probe program, so that it defines all their COMMON blocks
SENTINELS = ('MPI_BOTTOM', 'MPI_IN_PLACE', 'MPI_STATUS_IGNORE', 'MPI_STATUSES_IGNORE', 'MPI_ERRCODES_IGNORE',
             'MPI_UNWEIGHTED', 'MPI_WEIGHTS_EMPTY', 'MPI_ARGV_NULL', 'MPI_ARGVS_NULL')


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def values(fc, names, tmp):
    """Build and run a program that prints each integer PARAMETER of mpif.h; the names the
    compiler rejects (absent, not an integer, not a PARAMETER) are dropped."""
    names = list(names)
    src = os.path.join(tmp, 'probe.F90')
    prog = os.path.join(tmp, 'probe')
    for _ in range(len(names) + 1):
        with open(src, 'w') as f:
            f.write('program kumiprobe\nimplicit none\ninclude "mpif.h"\n')
            for i, n in enumerate(names):
                f.write('integer, parameter :: kp%d = %s\n' % (i, n))
            for i, n in enumerate(names):
                f.write("print '(A,1X,I0)', '%s', kp%d\n" % (n, i))
            f.write('print \'(A,1X,I0)\', "KUMI_TRUE", transfer(.true., 0)\n')
            for sname in SENTINELS:
                f.write('call kumiref_%s(%s)\n' % (sname.lower(), sname))
            f.write('end program\n')
        r = run([fc, '-ffree-line-length-none', '-c', '-o', prog + '.o', src])
        if r.returncode == 0:
            with open(os.path.join(tmp, 'ref.c'), 'w') as f:
                f.write('#include <stdio.h>\n' + ''.join(
                    'void kumiref_%s_(void *p) { printf("KUMI_AT_%s %%lu\\n", (unsigned long)p); }\n'
                    % (s.lower(), s) for s in SENTINELS))
            # not PIE: the sentinels' addresses printed are those nm gives
            r = run([fc, '-no-pie', '-o', prog, prog + '.o', os.path.join(tmp, 'ref.c')])
        if r.returncode == 0:
            break
        lines = src_lines = open(src).read().split('\n')
        bad = set()
        for m in re.finditer(r'probe\.F90:(\d+):', r.stderr):
            ln = int(m.group(1))
            mm = re.match(r'integer, parameter :: kp(\d+) =', src_lines[ln - 1]) if ln <= len(lines) else None
            if mm:
                bad.add(int(mm.group(1)))
        if not bad:
            sys.exit('abi-probe-fortran: the probe program does not build:\n' + r.stderr[:3000])
        names = [n for i, n in enumerate(names) if i not in bad]
    else:
        sys.exit('abi-probe-fortran: could not build the probe program')
    r = run([prog])
    if r.returncode:
        sys.exit('abi-probe-fortran: the probe program failed: ' + r.stderr)
    vals = {k: int(v) for k, v in (line.split() for line in r.stdout.splitlines())}
    at = {k[8:]: vals.pop(k) for k in list(vals) if k.startswith('KUMI_AT_')}
    nm = run(['nm', '-S', '--defined-only', prog]).stdout
    commons, where = {}, {}
    for line in nm.splitlines():
        f = line.split()
        # Open MPI: mpi_fortran_*_ (one a sentinel); MPICH: mpipriv1_, mpipriv2_, mpiprivc_,
        # mpifcmb5_, ... (several sentinels in one)
        if len(f) == 4 and f[2] in 'BbCD' and re.match(r'^(mpi_fortran_\w+|mpipriv\w+|mpifcmb\w+)_$', f[3]):
            commons[f[3]] = int(f[1], 16)
            where[f[3]] = int(f[0], 16)
    # each sentinel: the COMMON block it is in and its offset there
    sentinels = {}
    for sname, addr in sorted(at.items()):
        for sym, base in where.items():
            if base <= addr < base + commons[sym]:
                sentinels[sname] = [sym, addr - base]
    return vals, commons, sentinels


# MPI_SIZEOF of `use mpi`: the types it is asked about and their sizes (gfortran's kinds)
SIZEOF_TYPES = (('character', 1), ('complex', 8), ('double precision', 8), ('integer', 4), ('integer(kind=1)', 1),
                ('integer(kind=2)', 2), ('integer(kind=8)', 8), ('logical', 4), ('real', 4), ('real(kind=8)', 8),
                ('complex(kind=8)', 16), ('real(kind=16)', 16), ('complex(kind=16)', 32))


def sizeofs(fc, syms, tmp):
    """MPICH's `use mpi` makes MPI_SIZEOF module procedures of its Fortran library
    (__mpi_sizeofs_MOD_mpi_sizeof_d, ...), Open MPI's procedures of one name per type and
    array rank (mpi_sizeof_real64_scalar_, mpi_sizeof_real64_r1_ ... _r15_, and pmpi_): which
    one a call on each type, scalar or array, imports, and that type's size in bytes (only those
    the library exports; for Open MPI, every rank and the pmpi_ twin of the names probed)."""
    out = {}
    for decl, size in SIZEOF_TYPES:
        for dims in ('', '(2)'):
            src = os.path.join(tmp, 'sz.f90')
            with open(src, 'w') as f:
                f.write('subroutine kumisz\nuse mpi\n%s :: x%s\ninteger :: s, ierr\n'
                        'call MPI_Sizeof(x, s, ierr)\nend subroutine\n' % (decl, dims))
            if run([fc, '-c', '-o', os.path.join(tmp, 'sz.o'), src], cwd=tmp).returncode:
                continue
            for line in run(['nm', '-u', os.path.join(tmp, 'sz.o')]).stdout.splitlines():
                sym = line.split()[-1]
                if sym in syms and re.search(r'_MOD_mpi_sizeof|^mpi_sizeof_', sym):
                    out[sym] = size
    for sym, size in list(out.items()):
        m = re.match(r'^mpi_sizeof_(\w+?)_(scalar|r\d+)_$', sym)
        if m:
            for other in syms:
                if re.match(r'^p?mpi_sizeof_%s_(scalar|r\d+)_$' % m.group(1), other):
                    out[other] = size
    return out


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--name', required=True)
    ap.add_argument('--fc', required=True, help="the foreign MPI's Fortran wrapper (mpif90.openmpi)")
    ap.add_argument('--lib', required=True, help='its Fortran library (libmpi_mpifh.so.40)')
    ap.add_argument('--abi', default=os.path.join(top, 'data', 'mpi-abi-1.0.json'))
    ap.add_argument('-o', '--output')
    a = ap.parse_args()
    abi = json.load(open(a.abi))
    types = {c['name']: c.get('type') for c in abi['constants'] if c.get('name')}
    names = []
    for c in abi['constants']:
        n = c.get('name')
        t = c.get('type') or types.get(c.get('alias_of')) or ''
        if n and (t in ('int', 'int (enum)') or (t.startswith('MPI_') and t[4:5].isupper())):
            names.append(n)
    names += [n for n in EXTRA if n not in names]
    with tempfile.TemporaryDirectory() as tmp:
        vals, commons, sentinels = values(a.fc, names, tmp)
    lib = os.path.realpath(a.lib)
    m = re.search(r'SONAME\s+(\S+)', run(['objdump', '-p', lib]).stdout)
    nm = run(['nm', '-D', '--defined-only', lib]).stdout
    syms = set()
    for line in nm.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in 'TtWi':
            syms.add(f[2].split('@')[0])
    # a procedure: its upper-case spelling (MPI_SEND; not Open MPI's internal MPI_Send_f / _f08)
    procs = sorted(s.lower() for s in syms if re.match(r'^MPI_[A-Z0-9_]+$', s))
    forms = {'lower': '%s', 'lower_': '%s_', 'lower__': '%s__', 'upper': '%s'}
    spell = {}
    for form, fmt in forms.items():
        spell[form] = sum(1 for n in procs if (fmt % (n.upper() if form == 'upper' else n)) in syms)
    pm = sum(1 for n in procs if 'p' + n + '_' in syms)
    with tempfile.TemporaryDirectory() as tmp:
        sizeof = sizeofs(a.fc, syms, tmp)
    facts = {
        'about': ['Fortran facts of a foreign MPI ABI (mpif.h, use mpi), produced by tools/abi-probe-fortran.py '
                  '(do not edit by hand: run it again where that MPI is installed).',
                  'constants: the value of each integer PARAMETER of mpif.h among the standard ABI\'s constants '
                  '(handles, integers) and MPI_STATUS_SIZE / MPI_SOURCE / MPI_TAG / MPI_ERROR (1-based indices); '
                  'commons: the COMMON blocks (sentinels) a program that includes mpif.h defines, symbol -> size; '
                  'sentinels: the COMMON block each sentinel (MPI_BOTTOM, ...) is in and its byte offset there; '
                  'true: the integer value of .TRUE.; procedures: the Fortran procedures the library exports '
                  '(lower case, no underscore), spellings: which symbol spellings it exports.'],
        'name': a.name,
        'library': m.group(1) if m else os.path.basename(lib),
        'probe': {'fc': a.fc},
        'true': vals.pop('KUMI_TRUE', 1),
        'constants': dict(sorted(vals.items())),
        'commons': dict(sorted(commons.items())),
        'sentinels': sentinels,
        'spellings': sorted(k for k in spell if spell[k] == len(procs)),
        'profiling': pm == len(procs),
        'procedures': procs,
    }
    if sizeof:
        facts['sizeof'] = dict(sorted(sizeof.items()))
        facts['about'].append('sizeof: the module procedures of MPI_SIZEOF (use mpi) the library exports, '
                              'symbol -> the size in bytes of the type it answers for')
    text = json.dumps(facts, indent=1) + '\n'
    if a.output:
        with open(a.output, 'w') as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    print('abi-probe-fortran: %s (%s): %d constants, %d commons, %d procedures, MPI_STATUS_SIZE %s'
          % (a.name, facts['library'], len(vals), len(commons), len(procs), vals.get('MPI_STATUS_SIZE')),
          file=sys.stderr)


if __name__ == '__main__':
    main()
