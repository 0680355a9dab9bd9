#!/usr/bin/env python3
"""Generate Kumi's Fortran 2008 bindings (the `use mpi_f08` module) from the MPI API data.

usage: mkf08.py --procedures P.json --abi A.json --rules R.json --f08 F.json
                --bindings bindings.c [--bindings ...] --glue kf_glue.c --support kf_support.c
                --out-mod mpi_f08.f90 --out-procs mpi_f08_procs.f90 --out-c kf08_glue.c [--report]

mpi_f08.f90 has two modules.  mpi_f08_types: the handle types TYPE(MPI_Comm), ...
(BIND(C), one INTEGER :: MPI_VAL, the same value as the `use mpi` handle) with
== and /=, TYPE(MPI_Status) (BIND(C), the layout of the standard ABI's Fortran
status: MPI_SOURCE, MPI_TAG and MPI_ERROR at their MPI_F_* indices), the
constants of the standard ABI facts (handles as TYPE(MPI_<Handle>) named
constants), the sentinels in the same COMMON blocks as `use mpi`
(mkfortran.py's SENTINELS), the abstract interfaces of the callbacks.  mpi_f08:
those, the predefined callbacks, MPI_F_sync_reg and the status conversions,
and for every procedure the Fortran glue of libmpifort defines (pmpi_<name>_
of the generated kf_glue.c or of kf_support.c) and the standard gives an f08
binding (data/mpi-f08.json's not_f08), the generic MPI_<Name> (and
PMPI_<Name>) whose specific MPI_<Name>_f08 has the f08 signature (handles as
TYPE(MPI_<Handle>), ierror OPTIONAL, choice buffers TYPE(*), DIMENSION(..),
ASYNCHRONOUS where mpi-f08.json says); with the large-count specific
MPI_<Name>_c_f08 (INTEGER(MPI_COUNT_KIND) counts) where the C library has the
_c form.  Where the two cannot be told apart (MPI_ADDRESS_KIND =
MPI_COUNT_KIND) the _c one is the generic MPI_<Name>_c.

mpi_f08_procs.f90: the specifics as external procedures (so a profiling tool
can replace MPI_Send_f08 and call PMPI_Send): MPI_<Name>_f08 calls the weak
mpi_<name>_, PMPI_<Name>_f08 pmpi_<name>_.  Choice buffers reach C through
kumi_f08_buf (kf08_support.c, BIND(C), taking the CFI_cdesc_t): a contiguous
buffer's address, or an MPI_ERR_BUFFER (MPI_SUBARRAYS_SUPPORTED is .FALSE.)
for a non-contiguous array section, through the error handler of the call's
communicator, window or file.

kf08_glue.c has the Fortran glue mpi_<name>_c_ / pmpi_<name>_c_ of the
large-count forms, written by mkfortran.gen_glue from the f90 signature with
the kinds of the _c prototype.  The MPI-IO procedures follow by themselves
once libmpi defines them (kf_glue.c then has their entry points).
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpiapi import all_prototypes, fixed_large, load_api, parse_proto  # noqa: E402
from kumirules import RuleError, load_rules  # noqa: E402
from mkfortran import HANDLES, SENTINELS, Skip, gen_glue, parse_f90, wrap_free  # noqa: E402

F08_TYPES = {'MPI_' + k[4:]: k for k in HANDLES}          # TYPE(MPI_Comm) ...
CTYPE_FORTRAN = {'MPI_Count': 'INTEGER(KIND=MPI_COUNT_KIND)', 'MPI_Aint': 'INTEGER(KIND=MPI_ADDRESS_KIND)',
                 'MPI_Offset': 'INTEGER(KIND=MPI_OFFSET_KIND)', 'int': 'INTEGER'}
INTENTS = {'Direction.IN': 'IN', 'Direction.OUT': 'OUT', 'Direction.INOUT': 'INOUT'}
# Entry points of kf08_support.c where the f08 binding differs from the use mpi one
F08_GLUE = {'MPI_Buffer_detach': '_buffer_detach_f08glue'}   # writes BUFFER_ADDR, a TYPE(C_PTR)
PREDEFINED_CALLBACKS = {  # predefined callback -> its abstract interface (kf_support.c defines them)
    'MPI_COMM_NULL_COPY_FN': 'MPI_Comm_copy_attr_function', 'MPI_COMM_DUP_FN': 'MPI_Comm_copy_attr_function',
    'MPI_COMM_NULL_DELETE_FN': 'MPI_Comm_delete_attr_function',
    'MPI_TYPE_NULL_COPY_FN': 'MPI_Type_copy_attr_function', 'MPI_TYPE_DUP_FN': 'MPI_Type_copy_attr_function',
    'MPI_TYPE_NULL_DELETE_FN': 'MPI_Type_delete_attr_function',
    'MPI_WIN_NULL_COPY_FN': 'MPI_Win_copy_attr_function', 'MPI_WIN_DUP_FN': 'MPI_Win_copy_attr_function',
    'MPI_WIN_NULL_DELETE_FN': 'MPI_Win_delete_attr_function',
    'MPI_CONVERSION_FN_NULL': 'MPI_Datarep_conversion_function',
}


def cparams_by_name(params, c_params=()):
    """The C parameters by (lowercase) name, with the kind the API data gives each."""
    info = {q['name']: q for q in c_params or ()}
    return {p['name'].lower(): dict(p, kind=info.get(p['name'], {}).get('kind'),
                                    direction=info.get(p['name'], {}).get('direction')) for p in params}


def core_type(p):
    return p['type'].replace('const', '').strip().rstrip('*').strip()


class Proc:
    """One f08 specific procedure: its dummy declarations and the call of the glue."""

    def __init__(self, name, specific, glue, fret, fargs, fdecl, cpar, asyncs, callbacks):
        self.name, self.specific, self.glue = name, specific, glue
        self.fret, self.fargs, self.fdecl = fret, fargs, fdecl
        self.cpar, self.asyncs, self.callbacks = cpar, asyncs, callbacks

    def signature_key(self):
        """What tells specifics apart in a generic (the kinds of 8-byte integers are one)."""
        return tuple(re.sub(r'KIND=MPI_\w+_KIND', 'K8', self.decl_of(a)[0]) for a in self.fargs if a != 'ierror')

    def decl_of(self, a):
        """(Fortran declaration, how the glue is passed the dummy), with the INTENT of the
        C parameter's direction (not for choice buffers and procedures, as in the standard)"""
        d, pas = self.declaration(a)
        p = self.cpar.get(a)
        intent = INTENTS.get((p or {}).get('direction'))
        if intent and not d.startswith(('TYPE(*)', 'PROCEDURE', 'INTEGER, OPTIONAL')):
            d = d.replace(' :: ', ', INTENT(%s) :: ' % intent, 1)
        return d, pas

    def declaration(self, a):
        ft, dims = self.fdecl.get(a, ('INTEGER', ''))
        p = self.cpar.get(a)
        A = a
        if a == 'ierror':
            return 'INTEGER, OPTIONAL, INTENT(OUT) :: ierror', 'ierr_c'
        if p is not None and p.get('kind') == 'C_BUFFER2' and ft == '<type>':
            # MPI_Buffer_detach's address out: TYPE(C_PTR) in f08 (F08_GLUE's entry point sets it)
            return 'TYPE(C_PTR) :: %s' % A, A
        if ft == '<type>':
            attr = ', ASYNCHRONOUS' if a in self.asyncs else ''
            return 'TYPE(*), DIMENSION(..)%s :: %s' % (attr, A), '%%val(%s_p)' % A
        if ft == 'EXTERNAL':
            cb = core_type(p) if p else ''
            if cb.lower() in self.callbacks:
                return 'PROCEDURE(%s) :: %s' % (self.callbacks[cb.lower()], A), A
            raise Skip('callback %s of type %s' % (a, cb))
        if p is not None and p.get('kind') == 'C_BUFFER' and ft == 'INTEGER(KIND=MPI_ADDRESS_KIND)':
            return 'TYPE(C_PTR) :: %s' % A, A
        if ft == 'TYPE(MPI_Status)':
            return 'TYPE(MPI_Status) :: %s%s' % (A, dims), A
        if p is not None:
            core = core_type(p)
            if core in HANDLES and ft == 'INTEGER':
                return 'TYPE(%s) :: %s%s' % (core, A, dims), A
            if core == 'MPI_Status' and ft == 'INTEGER':
                d = re.sub(r'^\(\s*MPI_STATUS_SIZE\s*,?\s*', '(', dims)
                d = '' if d in ('(', '()') else d
                if not d.startswith('(') and d:
                    d = '(' + d
                return 'TYPE(MPI_Status) :: %s%s' % (A, d), A
        if ft == 'CHARACTER*(*)':
            return 'CHARACTER(LEN=*) :: %s%s' % (A, dims), A
        if ft.startswith('TYPE('):
            raise Skip('Fortran type %s' % ft)
        return '%s :: %s%s' % (ft, A, dims), A

    def decls(self):
        scalars, arrays, passes, bufs = [], [], [], []
        for a in self.fargs:
            d, pas = self.decl_of(a)
            (arrays if ('(' in d.split('::')[1] or 'DIMENSION' in d) else scalars).append('  ' + d)
            passes.append(pas)
            if d.startswith('TYPE(*)'):
                bufs.append(a)
        return scalars + arrays, passes, bufs      # scalars first: array bounds may name them

    def names(self, prefix):
        """(specific procedure, Fortran glue entry point) for MPI_ or PMPI_: MPI_Send_f08
        calls mpi_send_ (the weak alias a tool may replace), PMPI_Send_f08 pmpi_send_."""
        return prefix + self.specific[3:], prefix.lower() + F08_GLUE.get(self.name, self.glue[4:])

    def interface(self, prefix):
        """The interface body of the specific (in the mpi_f08 module)."""
        kind = 'FUNCTION' if self.fret else 'SUBROUTINE'
        spec = self.names(prefix)[0]
        L = wrap_free('%s %s(%s)' % (kind, spec, ', '.join(self.fargs)))
        L += ['  IMPORT', '  IMPLICIT NONE'] + self.decls()[0]
        if self.fret:
            L.append('  %s :: %s' % (self.fret, spec))
        L.append('END %s %s' % (kind, spec))
        return L

    def lines(self, prefix):
        """The specific as an external procedure (mpi_f08_procs.f90): its linker name is
        gfortran's for an external (mpi_send_f08_), which a profiling tool can replace."""
        kind = 'FUNCTION' if self.fret else 'SUBROUTINE'
        spec, glue = self.names(prefix)
        L = wrap_free('%s %s(%s)' % (kind, spec, ', '.join(self.fargs)))
        L += ['  USE mpi_f08_types', '  IMPLICIT NONE']
        decls, passes, bufs = self.decls()
        L += decls
        if self.fret:
            L.append('  %s :: %s' % (self.fret, spec))
            L.append('  %s, EXTERNAL :: %s' % (self.fret, glue))
            L.append('  %s = %s(%s)' % (spec, glue, ', '.join(passes)))
            L.append('END FUNCTION %s' % spec)
            return L
        L.append('  INTEGER :: ierr_c')
        for b in bufs:
            L.append('  INTEGER(C_INTPTR_T) :: %s_p' % b)
        L.append('  ierr_c = 0')
        # whose error handler a refused buffer goes to: the communicator, window or file
        hkind, hval = 0, '0'
        for a in self.fargs:
            d = self.decl_of(a)[0]
            for k, t in ((1, 'MPI_Comm'), (2, 'MPI_Win'), (3, 'MPI_File')):
                if not hkind and re.match(r'TYPE\(%s\)(, INTENT\(\w+\))? :: %s$' % (t, a), d):
                    hkind, hval = k, a + '%MPI_VAL'
        for b in bufs:
            L += wrap_free('  IF (ierr_c == 0) %s_p = kumi_f08_buf(%s, "%s" // C_NULL_CHAR, "%s" // C_NULL_CHAR, '
                           '%d, %s, ierr_c)' % (b, b, self.name, b, hkind, hval))
        call = 'call %s(%s)' % (glue, ', '.join(passes))
        if bufs:
            L += wrap_free('  IF (ierr_c == 0) ' + call)
        else:
            L += wrap_free('  ' + call)
        if 'ierror' in self.fargs:
            L.append('  IF (PRESENT(ierror)) ierror = ierr_c')
        L.append('END SUBROUTINE %s' % spec)
        return L


def large_f90(fdecl, params, lparams):
    """The Fortran declarations of the _c form: the base's with the kinds of the wider C types."""
    base = cparams_by_name(params)
    out = dict(fdecl)
    for p in lparams:
        n = p['name'].lower()
        b = base.get(n)
        if n not in out or b is None:
            continue
        lt, bt = core_type(p), core_type(b)
        if lt != bt and lt in CTYPE_FORTRAN:
            out[n] = (CTYPE_FORTRAN[lt], out[n][1])
    return out


def constants(abi):
    """Declarations of the named constants of the module."""
    L = ['INTEGER, PARAMETER :: MPI_ADDRESS_KIND = 8', 'INTEGER, PARAMETER :: MPI_OFFSET_KIND = 8',
         'INTEGER, PARAMETER :: MPI_COUNT_KIND = 8', 'INTEGER, PARAMETER :: MPI_INTEGER_KIND = 4',
         'INTEGER, PARAMETER :: MPI_STATUS_SIZE = 8',
         '! MPI_SUBARRAYS_SUPPORTED: a non-contiguous array section as a choice buffer is refused',
         '! (MPI_ERR_BUFFER); MPI_ASYNC_PROTECTS_NONBLOCKING: gfortran does not give ASYNCHRONOUS',
         '! the TS 29113 meaning, so use MPI_F_SYNC_REG (or VOLATILE) around nonblocking calls.',
         'LOGICAL, PARAMETER :: MPI_SUBARRAYS_SUPPORTED = .FALSE.',
         'LOGICAL, PARAMETER :: MPI_ASYNC_PROTECTS_NONBLOCKING = .FALSE.']

    def val(v):
        v = v.strip()
        return str(int(v, 16)) if v.lower().startswith(('0x', '-0x')) else v

    values = {c['name']: c['value'] for c in abi['constants'] if 'value' in c}
    types = {c['name']: c.get('type', '') for c in abi['constants']}
    for c in abi['constants']:
        name, typ = c['name'], c.get('type', '')
        if name == 'MPI_STATUS_SIZE' or name.startswith(('MPI_F_', 'MPI_T_')):
            continue
        if 'alias_of' in c:
            typ, v = types.get(c['alias_of'], 'int'), values[c['alias_of']]
        else:
            v = c.get('value')
        if typ in HANDLES:
            L.append('TYPE(%s), PARAMETER :: %s = %s(%s)' % (typ, name, typ, val(v)))
        elif typ in ('int', 'int (enum)'):
            L.append('INTEGER, PARAMETER :: %s = %s' % (name, val(v)))
        elif typ == 'MPI_Offset':
            L.append('INTEGER(KIND=MPI_OFFSET_KIND), PARAMETER :: %s = %s' % (name, val(v)))
    return L


def types_and_operators(abi):
    L = []
    for t in HANDLES:
        L += ['TYPE, BIND(C) :: %s' % t, '  INTEGER :: MPI_VAL', 'END TYPE %s' % t]
    f = {c['name']: int(c['value'], 0) for c in abi['constants'] if c['name'].startswith('MPI_F_')}
    size = f.get('MPI_F_STATUS_SIZE', 8)
    slot = {f['MPI_F_SOURCE']: 'MPI_SOURCE', f['MPI_F_TAG']: 'MPI_TAG', f['MPI_F_ERROR']: 'MPI_ERROR'}
    L.append('TYPE, BIND(C) :: MPI_Status')
    for i in range(size):
        L.append('  INTEGER :: %s' % slot.get(i, 'kumi_internal_%d' % i))
    L.append('END TYPE MPI_Status')
    for op, fn in (('==', 'eq'), ('/=', 'ne')):
        L.append('INTERFACE OPERATOR(%s)' % op)
        L.append('  MODULE PROCEDURE %s' % ', '.join('kumi_%s_%s' % (t[4:].lower(), fn) for t in HANDLES))
        L.append('END INTERFACE')
    return L


def operator_bodies():
    L = []
    for t in HANDLES:
        for fn, op in (('eq', '=='), ('ne', '/=')):
            n = 'kumi_%s_%s' % (t[4:].lower(), fn)
            L += ['ELEMENTAL LOGICAL FUNCTION %s(a, b)' % n, '  TYPE(%s), INTENT(IN) :: a, b' % t,
                  '  %s = a%%MPI_VAL %s b%%MPI_VAL' % (n, op), 'END FUNCTION %s' % n]
    return L


def sentinels():
    f08 = {'MPI_STATUS_IGNORE': 'TYPE(MPI_Status) :: MPI_STATUS_IGNORE',
           'MPI_STATUSES_IGNORE': 'TYPE(MPI_Status) :: MPI_STATUSES_IGNORE(1)'}
    L = []
    for name, sym, decl in SENTINELS:
        d = f08.get(name) or re.sub(r'^(INTEGER|CHARACTER\*1) (\w+)(.*)$', r'\1 :: \2\3', decl)
        L += [d, 'COMMON /%s/ %s' % (sym.upper(), name), 'SAVE /%s/' % sym.upper()]
    return L


def abstract_interfaces(api):
    """Abstract interfaces of the callbacks (name in lowercase -> Fortran name) and their lines."""
    names, L = {}, ['ABSTRACT INTERFACE']
    for cb in api.get('callbacks', []):
        f90, c = cb.get('f90'), cb.get('c') or ''
        m = re.search(r'typedef\s+\w+\s+(MPI_\w+)\s*\(', c)
        if not f90 or f90 == 'None' or not m or m.group(1).startswith('MPI_T_'):
            continue
        cname = m.group(1)
        try:
            fret, fargs, fdecl = parse_f90(re.sub(r'^(?!MPI_)', 'MPI_', f90.replace('<TYPE>', '<type>')))
        except Skip:
            continue
        cpar = cparams_by_name(cb.get('c_params') or [])
        body = ['SUBROUTINE %s(%s)' % (cname, ', '.join(fargs)), '  IMPORT', '  IMPLICIT NONE']
        for a in fargs:
            ft, dims = fdecl.get(a, ('INTEGER', ''))
            p = cpar.get(a)
            if ft == '<type>':
                body.append('  TYPE(C_PTR), VALUE :: %s' % a)
            elif p is not None and core_type(p) in HANDLES and ft == 'INTEGER':
                body.append('  TYPE(%s) :: %s%s' % (core_type(p), a, dims))
            elif ft == 'CHARACTER*(*)':
                body.append('  CHARACTER(LEN=*) :: %s%s' % (a, dims))
            else:
                body.append('  %s :: %s%s' % (ft, a, dims))
        body.append('END SUBROUTINE %s' % cname)
        L += ['  ' + x for x in body]
        names[cname.lower()] = cname
        names[cname.lower() + '*'] = cname
    L.append('END INTERFACE')
    return names, L


def predefined_callbacks(api, callbacks):
    """Interfaces of the predefined callbacks, written from the API data."""
    L = []
    for fn in api.get('predefined_functions', []):
        f90 = fn.get('f90')
        if not f90 or f90 == 'None':
            continue
        try:
            fret, fargs, fdecl = parse_f90(f90.replace('<TYPE>', '<type>'))
        except Skip:
            continue
        name = re.match(r'\s*(MPI_\w+)', f90).group(1).upper()
        if name not in PREDEFINED_CALLBACKS or PREDEFINED_CALLBACKS[name].lower() not in callbacks:
            continue
        cpar = cparams_by_name(fn.get('c_params') or [])
        body = ['SUBROUTINE %s(%s)' % (name, ', '.join(fargs)), '  IMPORT', '  IMPLICIT NONE']
        for a in fargs:
            ft, dims = fdecl.get(a, ('INTEGER', ''))
            p = cpar.get(a)
            if ft == '<type>':
                body.append('  TYPE(C_PTR), VALUE :: %s' % a)
            elif p is not None and core_type(p) in HANDLES and ft == 'INTEGER':
                body.append('  TYPE(%s) :: %s%s' % (core_type(p), a, dims))
            else:
                body.append('  %s :: %s%s' % (ft, a, dims))
        body.append('END SUBROUTINE %s' % name)
        L += ['INTERFACE'] + ['  ' + x for x in body] + ['END INTERFACE']
    return L


HAND_WRITTEN = '''\
SUBROUTINE MPI_F_sync_reg(buf)
  TYPE(*), DIMENSION(..), ASYNCHRONOUS :: buf
  call kumi_f08_sync_reg(buf)
END SUBROUTINE MPI_F_sync_reg
SUBROUTINE MPI_Status_f082f(f08_status, f_status, ierror)
  TYPE(MPI_Status), INTENT(IN) :: f08_status
  INTEGER, INTENT(OUT) :: f_status(MPI_STATUS_SIZE)
  INTEGER, OPTIONAL, INTENT(OUT) :: ierror
  f_status = TRANSFER(f08_status, f_status, MPI_STATUS_SIZE)
  IF (PRESENT(ierror)) ierror = MPI_SUCCESS
END SUBROUTINE MPI_Status_f082f
SUBROUTINE MPI_Status_f2f08(f_status, f08_status, ierror)
  INTEGER, INTENT(IN) :: f_status(MPI_STATUS_SIZE)
  TYPE(MPI_Status), INTENT(OUT) :: f08_status
  INTEGER, OPTIONAL, INTENT(OUT) :: ierror
  f08_status = TRANSFER(f_status, f08_status)
  IF (PRESENT(ierror)) ierror = MPI_SUCCESS
END SUBROUTINE MPI_Status_f2f08'''

HELPERS = '''\
INTERFACE
  FUNCTION kumi_f08_buf(buf, proc, arg, hkind, hval, ierr) BIND(C, name="kumi_f08_buf") RESULT(p)
    IMPORT :: C_INTPTR_T, C_CHAR
    TYPE(*), DIMENSION(..) :: buf
    CHARACTER(KIND=C_CHAR), DIMENSION(*) :: proc, arg
    INTEGER, VALUE :: hkind, hval
    INTEGER :: ierr
    INTEGER(C_INTPTR_T) :: p
  END FUNCTION kumi_f08_buf
  SUBROUTINE kumi_f08_sync_reg(buf) BIND(C, name="kumi_f08_sync_reg")
    TYPE(*), DIMENSION(..) :: buf
  END SUBROUTINE kumi_f08_sync_reg
END INTERFACE
'''


def glue_symbols(paths):
    syms = set()
    for p in paths:
        syms |= set(re.findall(r'^KUMI_EXPORT\s[^(\n]*?\bpmpi_(\w+)_\s*\(', open(p).read(), re.M))
    return syms


def main():
    ap = argparse.ArgumentParser()
    for o in ('--procedures', '--abi', '--rules', '--f08', '--glue', '--support', '--out-mod', '--out-procs',
              '--out-c'):
        ap.add_argument(o, required=True)
    ap.add_argument('--bindings', required=True, action='append')
    ap.add_argument('--report', action='store_true')
    a = ap.parse_args()
    api = load_api(a.procedures)
    abi = json.load(open(a.abi))
    f08 = json.load(open(a.f08))
    procs = {}
    for proto, kinds in all_prototypes(api, abi):
        ret, name, params = parse_proto(proto)
        procs.setdefault(name, (ret, params, kinds))
    try:
        rules = load_rules(a.rules, procs)
    except RuleError as e:
        raise SystemExit('mkf08: %s: %s' % (a.rules, e))
    implemented = {n[4:] for n, r in rules.items() if r.get('c_by_hand')}
    for src in a.bindings:
        implemented |= set(re.findall(r'^KUMI_EXPORT\s[^(\n]*?\bPMPI_(\w+)\s*\(', open(src).read(), re.M))
    glued = glue_symbols([a.glue, a.support])
    # what kf_support.c writes by hand (some through macros the scan above misses)
    glued |= {n[4:].lower() for n, r in rules.items() if r.get('fortran_by_hand') and n[4:] in implemented}
    not_f08 = {n.lower() for n in f08['not_f08']}
    asyncs = {k.lower(): {x.lower() for x in v} for k, v in f08['asynchronous'].items()}
    callbacks, abstract = abstract_interfaces(api)

    cglue = ['/* Generated by mkf08.py from the MPI API data: do not edit.  The Fortran glue of',
             ' * the large-count (_c) forms, called by the mpi_f08 module. */',
             '#include "kf_support.h"', 'int kf_neighbor_in(MPI_Comm comm);',
             'int kf_neighbor_out(MPI_Comm comm);', '']
    generics, bodies, skipped = [], [], []
    for p in api['procedures']:
        f90 = p.get('f90')
        if not p.get('c') or not f90 or f90 == 'None' or p.get('removed'):
            continue
        ret, cname, params = parse_proto(p['c'].replace('\\ldots', '...'))
        if cname.lower() in not_f08 or cname[4:].lower() not in glued:
            continue
        try:
            fret, fargs, fdecl = parse_f90(f90)
        except Skip as e:
            skipped.append((cname, str(e)))
            continue
        cpar = cparams_by_name(params, p.get('c_params'))
        asy = asyncs.get(cname.lower(), set())
        specifics = []
        try:
            base = Proc(cname, cname + '_f08', 'pmpi_' + cname[4:].lower(), fret, fargs, fdecl, cpar, asy,
                        callbacks)
            body = base.lines('MPI') + base.lines('PMPI')
        except Skip as e:
            skipped.append((cname, str(e)))
            continue
        bodies += body
        specifics.append(base)
        large = p.get('c_large')
        lname = cname + '_c'
        if large and lname[4:] in implemented and not rules.get(cname, {}).get('fortran_by_hand'):
            lret, _, lparams = parse_proto(fixed_large(p['c'], large))
            ldecl = large_f90(fdecl, params, lparams)
            rule = dict(rules.get(lname, {}))
            for k, v in rules.get(cname, {}).items():
                if k.startswith(('fortran_', 'sentinel')):
                    rule.setdefault(k, v)
            dirs = {q['name']: q['direction'] for q in (p.get('c_params') or [])}
            kinds = {q['name']: q['kind'] for q in (p.get('c_params') or [])}
            try:
                g = gen_glue(lname, lret, lparams, kinds, dirs, fret, fargs, ldecl, rule)
                lp = Proc(lname, lname + '_f08', 'pmpi_' + lname[4:].lower(), fret, fargs, ldecl,
                          cparams_by_name(lparams, p.get('c_params')), asy, callbacks)
                lbody = lp.lines('MPI') + lp.lines('PMPI')
                cglue += g + ['']
                bodies += lbody
                specifics.append(lp)
            except Skip as e:
                skipped.append((lname, str(e)))
        if len(specifics) == 2 and specifics[0].signature_key() == specifics[1].signature_key():
            groups = [(cname, specifics[:1]), (lname, specifics[1:])]
        else:
            groups = [(cname, specifics)]
        for prefix in ('MPI', 'PMPI'):
            for gname, members in groups:
                generics.append('INTERFACE %s%s' % (prefix, gname[3:]))
                for sp in members:
                    generics += ['  ' + x for x in sp.interface(prefix)]
                generics.append('END INTERFACE')
    # mpi_f08_types: what the specifics need; mpi_f08: that and the generic interfaces
    mod = ['! The `use mpi_f08` module of Kumi: generated by mkf08.py.  Do not edit.',
           'MODULE mpi_f08_types', 'USE, INTRINSIC :: ISO_C_BINDING, ONLY: C_PTR, C_INTPTR_T, C_CHAR, C_NULL_CHAR',
           'IMPLICIT NONE']
    mod += types_and_operators(abi) + constants(abi) + sentinels() + abstract + HELPERS.split('\n')
    mod += ['CONTAINS'] + operator_bodies() + ['END MODULE mpi_f08_types', '',
                                               'MODULE mpi_f08', 'USE mpi_f08_types', 'IMPLICIT NONE']
    mod += predefined_callbacks(api, callbacks) + generics
    mod += ['CONTAINS'] + HAND_WRITTEN.split('\n') + ['END MODULE mpi_f08']
    for path, lines in ((a.out_mod, mod), (a.out_procs, ['! The specific procedures of the `use mpi_f08` module '
                                                          '(generated by mkf08.py).  Do not edit.'] + bodies)):
        out = []
        for line in lines:
            out += wrap_free(line, 130)
        open(path, 'w').write('\n'.join(out) + '\n')
    cglue.append('/* skipped: */')
    cglue += ['/*   %s: %s */' % s for s in skipped]
    open(a.out_c, 'w').write('\n'.join(cglue) + '\n')
    if a.report:
        for s in skipped:
            print('skipped %s: %s' % s)
        print('%d generics, %d skipped' % (sum(1 for g in generics if g.startswith('INTERFACE ')), len(skipped)))


if __name__ == '__main__':
    main()
