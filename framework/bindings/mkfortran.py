#!/usr/bin/env python3
"""Generate Kumi's Fortran support (mpif.h, the `use mpi` module source, and the
C glue behind them) from the MPI API data.

usage: mkfortran.py --procedures P.json --abi A.json --bindings bindings.c
                    --out-c kf_glue.c --out-h mpif.h --out-mod mpi.f90 [--report]

* mpif.h / mpi.f90: every constant of the standard ABI facts with its ABI value
  (Fortran handles are the same small constants as the C handles), the kinds,
  MPI_STATUS_SIZE and the 1-based status indices, and the sentinels
  (MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE, ...) as variables in COMMON
  blocks whose addresses the glue recognizes.
* kf_glue.c: for every C entry point libmpi defines (the PMPI_ functions of the
  generated bindings.c, i.e. mkbindings.py's discovery of kumi_mpi_* functions)
  that has a Fortran binding in the API data, the gfortran entry points
  mpi_<name>_ and pmpi_<name>_ (lowercase, one trailing underscore): integer
  handles go through PMPI_<Handle>_f2c/_c2f, strings through the hidden length
  arguments, sentinels to their C values, the return code to IERROR.  What the
  generator cannot convert (callbacks, string arrays, attribute values, ...)
  is skipped unless kf_support.c writes it by hand; --report lists the skips.
* The module (not mpif.h) also has an explicit interface for every procedure
  libmpifort defines, written from the Fortran signatures of the API data, so
  that gfortran checks the number, types, kinds and ranks of the arguments.
  Choice buffers (<type>) are TYPE(*), DIMENSION(*) with gfortran's
  NO_ARG_CHECK attribute (any type, kind and rank is accepted there, as
  MPI requires).
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpiapi import all_prototypes, load_api, parse_proto  # noqa: E402
from kumirules import RuleError, load_rules  # noqa: E402

HANDLES = {  # C handle type -> (conversion prefix, null constant)
    'MPI_Comm': ('Comm', 'MPI_COMM_NULL'), 'MPI_Datatype': ('Type', 'MPI_DATATYPE_NULL'),
    'MPI_Group': ('Group', 'MPI_GROUP_NULL'), 'MPI_Request': ('Request', 'MPI_REQUEST_NULL'),
    'MPI_Op': ('Op', 'MPI_OP_NULL'), 'MPI_Info': ('Info', 'MPI_INFO_NULL'),
    'MPI_Errhandler': ('Errhandler', 'MPI_ERRHANDLER_NULL'), 'MPI_Win': ('Win', 'MPI_WIN_NULL'),
    'MPI_File': ('File', 'MPI_FILE_NULL'), 'MPI_Message': ('Message', 'MPI_MESSAGE_NULL'),
    'MPI_Session': ('Session', 'MPI_SESSION_NULL'),
}
FTYPES = {  # Fortran declaration -> C type of the argument (passed by reference)
    'INTEGER': 'MPI_Fint', 'LOGICAL': 'MPI_Fint', 'INTEGER(KIND=MPI_ADDRESS_KIND)': 'MPI_Aint',
    'INTEGER(KIND=MPI_COUNT_KIND)': 'MPI_Count', 'INTEGER(KIND=MPI_OFFSET_KIND)': 'MPI_Offset',
    'DOUBLE PRECISION': 'double', '<type>': 'void', 'CHARACTER*(*)': 'char', 'EXTERNAL': 'kf_fn',
}
SAME_REP = {('int', 'MPI_Fint'), ('MPI_Aint', 'MPI_Aint'), ('MPI_Count', 'MPI_Count'),
            ('MPI_Offset', 'MPI_Offset'), ('double', 'double')}
# What the API data does not say (glue written by hand, array lengths, 1-based
# indices, C parameters without a Fortran argument, sentinel arrays) comes from
# the binding rules, data/kumi-bindings.json (fortran_by_hand, c_by_hand,
# fortran_lengths, fortran_one_based, fortran_absent, sentinel_arrays; format in
# data/README.md): nothing is guessed from parameter names.
# Sentinel common blocks: Fortran name -> (common block / C symbol, Fortran declaration)
SENTINELS = [
    ('MPI_BOTTOM', 'kumi_fc_bottom', 'INTEGER MPI_BOTTOM'),
    ('MPI_IN_PLACE', 'kumi_fc_in_place', 'INTEGER MPI_IN_PLACE'),
    ('MPI_BUFFER_AUTOMATIC', 'kumi_fc_buffer_automatic', 'INTEGER MPI_BUFFER_AUTOMATIC'),
    ('MPI_STATUS_IGNORE', 'kumi_fc_status_ignore', 'INTEGER MPI_STATUS_IGNORE(MPI_STATUS_SIZE)'),
    ('MPI_STATUSES_IGNORE', 'kumi_fc_statuses_ignore', 'INTEGER MPI_STATUSES_IGNORE(MPI_STATUS_SIZE,1)'),
    ('MPI_ERRCODES_IGNORE', 'kumi_fc_errcodes_ignore', 'INTEGER MPI_ERRCODES_IGNORE(1)'),
    ('MPI_UNWEIGHTED', 'kumi_fc_unweighted', 'INTEGER MPI_UNWEIGHTED(1)'),
    ('MPI_WEIGHTS_EMPTY', 'kumi_fc_weights_empty', 'INTEGER MPI_WEIGHTS_EMPTY(1)'),
    ('MPI_ARGV_NULL', 'kumi_fc_argv_null', 'CHARACTER*1 MPI_ARGV_NULL(1)'),
    ('MPI_ARGVS_NULL', 'kumi_fc_argvs_null', 'CHARACTER*1 MPI_ARGVS_NULL(1,1)'),
]
# Predefined callbacks: Fortran-callable procedures defined in kf_support.c.
CALLBACK_CONSTS = ['MPI_NULL_COPY_FN', 'MPI_DUP_FN', 'MPI_NULL_DELETE_FN', 'MPI_COMM_NULL_COPY_FN',
                   'MPI_COMM_DUP_FN', 'MPI_COMM_NULL_DELETE_FN', 'MPI_TYPE_NULL_COPY_FN',
                   'MPI_TYPE_DUP_FN', 'MPI_TYPE_NULL_DELETE_FN', 'MPI_WIN_NULL_COPY_FN',
                   'MPI_WIN_DUP_FN', 'MPI_WIN_NULL_DELETE_FN', 'MPI_CONVERSION_FN_NULL']


class Skip(Exception):
    pass


def split_top(s):
    """Split 'A, B(X, *), C' at the commas outside parentheses."""
    out, depth, cur = [], 0, ''
    for ch in s:
        if ch == ',' and depth == 0:
            out.append(cur.strip())
            cur = ''
            continue
        depth += (ch == '(') - (ch == ')')
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_f90(text):
    """(return type or '', [argument names], {name: (Fortran type, dims)})"""
    lines = text.split('\n')
    m = re.match(r'\s*(.*?)\bP?MPI_\w+\s*\((.*)\)\s*$', lines[0])
    if not m:
        raise Skip('cannot parse Fortran signature')
    fret = m.group(1).strip()
    args = [a.lower() for a in split_top(m.group(2))]
    decl = {}
    for line in lines[1:]:
        line = line.strip()
        m = re.match(r'(INTEGER\(KIND=\w+\)|INTEGER|LOGICAL|CHARACTER\*\(\*\)|EXTERNAL|<type>|'
                     r'DOUBLE PRECISION|TYPE\(\w+\))\s+(.*)$', line)
        if not m:
            raise Skip('cannot parse Fortran declaration %r' % line)
        for item in split_top(m.group(2)):
            nm, dims = re.match(r'(\w+)\s*(\(.*\))?', item).groups()
            decl[nm.lower()] = (m.group(1), dims or '')
    return fret, args, decl


def array_length(rule, pname):
    """The length of the array of handles pname (rule: the procedure's binding rules)."""
    ln = rule.get('fortran_lengths', {}).get(pname)
    if ln is None:
        raise Skip('array of handles %s with unknown length' % pname)
    return ln


def gen_glue(cname, ret, params, kinds, dirs, fret, fargs, fdecl, rule):
    """C source of mpi_<name>_ for one procedure (raises Skip)."""
    lname = cname.lower()
    absent = rule.get('fortran_absent', {})
    one_based = rule.get('fortran_one_based', {})
    sentinels = rule.get('sentinel_arrays', {})
    cpar = {p['name']: p for p in params}
    for a in fargs:
        if a != 'ierror' and a not in cpar:
            raise Skip('Fortran argument %s has no C parameter' % a)
    proto, decls, pre, post, strlens, frees = [], [], [], [], [], []
    for a in fargs:
        ft = fdecl.get(a, ('INTEGER', ''))[0]
        if ft not in FTYPES:
            raise Skip('Fortran type %s' % ft)
        ct = FTYPES[ft]
        proto.append('void (*%s)(void)' % a if ct == 'kf_fn' else '%s *%s' % (ct, a))
        if ct == 'char':
            strlens.append('size_t %s_len' % a)
    # handles in first, so that k_comm exists for array lengths
    order = sorted(params, key=lambda p: 0 if p['type'] == 'MPI_Comm' else 1)
    expr = {}
    for p in order:
        n, t, arr = p['name'], p['type'], p['array']
        base = t.replace('const', '').strip()
        core = base.rstrip('*').strip()
        ptr = base.endswith('*') or bool(arr)
        d = dirs.get(n, 'Direction.IN')
        if n not in fdecl:
            if n in absent:
                expr[n] = absent[n]
                continue
            raise Skip('C parameter %s has no Fortran argument' % n)
        ft = fdecl[n][0]
        fct = FTYPES.get(ft)
        if core == 'void' and base == 'void*' and not arr and kinds.get(n) == 'C_BUFFER' \
                and ft == 'INTEGER(KIND=MPI_ADDRESS_KIND)':
            # an address out (MPI_Alloc_mem's baseptr: C writes the pointer through it) into
            # an address-sized integer (use mpi) or a TYPE(C_PTR) (use mpi_f08)
            expr[n] = '(void *)' + n
        elif core == 'void' and base.endswith('*') and not arr:
            if ft != '<type>':
                raise Skip('void* %s as %s' % (n, ft))
            expr[n] = 'KF_BUF(%s)' % n
        elif core in HANDLES and fct == 'MPI_Fint':
            cv, null = HANDLES[core]
            v = 'k_' + n
            if not ptr:
                decls.append('    %s %s = PMPI_%s_f2c(*%s);' % (core, v, cv, n))
                expr[n] = v
            elif not arr:
                init = 'PMPI_%s_f2c(*%s)' % (cv, n) if d != 'Direction.OUT' else null
                decls.append('    %s %s = %s;' % (core, v, init))
                expr[n] = '&' + v
                if d != 'Direction.IN':
                    post.append('    *%s = PMPI_%s_c2f(%s);' % (n, cv, v))
            else:
                ln = array_length(rule, n)
                decls.append('    %s %s_buf[16] = {0}, *%s = %s_buf;' % (core, v, v, v))
                pre.append('    int %s_n = %s;' % (v, ln if ln.startswith('kf_') else '*' + ln))
                pre.append('    if (%s_n < 0) %s_n = 0;' % (v, v))
                pre.append('    if (%s_n > 16 && !(%s = malloc(sizeof *%s * (size_t)%s_n))) '
                           '{ %s = %s_buf; rc = kf_nomem("%s"); goto out; }' % (v, v, v, v, v, v, cname))
                if d != 'Direction.OUT':
                    pre.append('    for (int i = 0; i < %s_n; i++) %s[i] = PMPI_%s_f2c(%s[i]);' % (v, v, cv, n))
                if d != 'Direction.IN':
                    post.append('    for (int i = 0; i < %s_n; i++) %s[i] = PMPI_%s_c2f(%s[i]);' % (v, n, cv, v))
                frees.append('    if (%s != %s_buf) free(%s);' % (v, v, v))
                expr[n] = v
        elif core == 'MPI_Status' and ptr and fct == 'MPI_Fint':
            expr[n] = ('KF_STATUSES(%s)' if arr else 'KF_STATUS(%s)') % n
        elif core == 'char' and fct == 'char' and ((base == 'char*' and not arr) or (base == 'char' and arr == '[]')):
            v = 'k_' + n
            decls.append('    char *%s = NULL;' % v)
            if d == 'Direction.IN':
                pre.append('    %s = kf_str_in(%s, %s_len);' % (v, n, n))
                pre.append('    if (!%s) { rc = kf_nomem("%s"); goto out; }' % (v, cname))
                frees.append('    free(%s);' % v)
            else:
                pre.append('    %s = kf_str_buf(%s_len);' % (v, n))
                pre.append('    if (!%s) { rc = kf_nomem("%s"); goto out; }' % (v, cname))
                post.append('    kf_str_out(%s, %s, %s_len);' % (v, n, n))
                frees.append('    free(%s);' % v)
            expr[n] = v
        elif (core, fct) in SAME_REP:
            if not ptr:
                expr[n] = ('(*%s != 0)' if ft == 'LOGICAL' else '*%s') % n
            elif one_based.get(n) is True and core == 'int' and not arr:
                expr[n] = n
                post.append('    if (rc == MPI_SUCCESS && *%s >= 0) ++*%s;   /* Fortran indices are 1-based */' % (n, n))
            elif n in one_based:
                cnt = one_based[n]
                expr[n] = n
                post.append('    if (rc == MPI_SUCCESS && *%s > 0) for (int i = 0; i < *%s; i++) ++%s[i];' % (cnt, cnt, n))
            elif n in sentinels:
                expr[n] = 'KF_%s(%s)' % (sentinels[n].upper(), n)
            elif arr.count('[') > 1:     # int ranges[][3]
                expr[n] = '(%s (*)%s)%s' % (core, arr[arr.index(']') + 1:], n)
            else:
                expr[n] = '(%s *)%s' % (core, n) if core != fct else n
        elif core in ('MPI_Aint', 'MPI_Count', 'MPI_Offset', 'int') and not ptr and fct in FTYPES.values():
            expr[n] = '(%s)*%s' % (core, n)
        elif core == 'MPI_Aint' and fct == 'MPI_Fint' and ptr and not arr and d == 'Direction.OUT':
            # an address-sized result in a default INTEGER (the removed MPI-1 calls):
            # narrowed, an error if it does not fit
            v = 'k_' + n
            decls.append('    MPI_Aint %s = 0;' % v)
            expr[n] = '&' + v
            post.append('    if (rc == MPI_SUCCESS) rc = kf_narrow("%s", "%s", %s, %s);' % (cname, n, v, n))
        elif core == 'MPI_Aint' and fct == 'MPI_Fint' and arr == '[]' and d == 'Direction.IN':
            # default INTEGER displacements (the removed MPI-1 calls): widened
            ln = array_length(rule, n)
            v = 'k_' + n
            decls.append('    MPI_Aint %s_buf[16], *%s = %s_buf;' % (v, v, v))
            pre.append('    int %s_n = %s;' % (v, ln if ln.startswith('kf_') else '*' + ln))
            pre.append('    if (%s_n < 0) %s_n = 0;' % (v, v))
            pre.append('    if (%s_n > 16 && !(%s = malloc(sizeof *%s * (size_t)%s_n))) '
                       '{ %s = %s_buf; rc = kf_nomem("%s"); goto out; }' % (v, v, v, v, v, v, cname))
            pre.append('    for (int i = 0; i < %s_n; i++) %s[i] = %s[i];' % (v, v, n))
            frees.append('    if (%s != %s_buf) free(%s);' % (v, v, v))
            expr[n] = v
        else:
            raise Skip('C %s %s%s as Fortran %s' % (t, n, arr, ft))
    args = ', '.join(expr[p['name']] for p in params)
    sig = ', '.join(proto + strlens) or 'void'
    out = []
    if fret:
        cr = FTYPES[fret]
        out.append('KUMI_EXPORT %s p%s_(%s)' % (cr, lname, sig))
        out.append('{')
        out += decls + pre
        out.append('    return PMPI_%s(%s);' % (cname[4:], args))
        out.append('}')
        out.append('KUMI_EXPORT %s %s_(%s) __attribute__((weak, alias("p%s_")));' % (cr, lname, sig, lname))
        return out
    if ret != 'int' or 'ierror' not in fargs:
        raise Skip('return type %s' % ret)
    out.append('KUMI_EXPORT void p%s_(%s)' % (lname, sig))
    out.append('{')
    out.append('    int rc = MPI_SUCCESS;')
    out += decls
    out += pre
    out.append('    rc = P%s(%s);' % (cname, args))
    out += post
    if any('goto out' in x for x in pre):
        out.append('out:')
    out += frees
    out.append('    *ierror = rc;')
    out.append('}')
    out.append('KUMI_EXPORT void %s_(%s) __attribute__((weak, alias("p%s_")));' % (lname, sig, lname))
    return out


def fortran_decls(abi, interfaced=()):
    """Lines of Fortran declarations (valid in fixed and free form) for mpif.h and the module
    (interfaced: the Fortran functions the module declares by an interface instead)."""
    L = []

    def param(typ, name, value):
        L.append('      %s %s' % (typ, name))
        L.append('      PARAMETER (%s=%s)' % (name, value))

    def val(v):
        v = v.strip()
        return str(int(v, 16)) if v.lower().startswith(('0x', '-0x')) else v

    param('INTEGER', 'MPI_ADDRESS_KIND', '8')
    param('INTEGER', 'MPI_OFFSET_KIND', '8')
    param('INTEGER', 'MPI_COUNT_KIND', '8')
    param('INTEGER', 'MPI_INTEGER_KIND', '4')
    param('INTEGER', 'MPI_STATUS_SIZE', '8')
    values = {}
    for c in abi['constants']:
        if 'value' in c:
            values[c['name']] = c['value']
    for c in abi['constants']:
        name, typ = c['name'], c.get('type', '')
        if name == 'MPI_STATUS_SIZE' or name.startswith(('MPI_F_', 'MPI_T_')):
            continue
        if 'alias_of' in c:
            param('INTEGER', name, val(values[c['alias_of']]))
        elif typ in ('int', 'int (enum)') or typ in HANDLES or typ == 'MPI_Datatype':
            param('INTEGER', name, val(c['value']))
        elif typ == 'MPI_Offset':
            param('INTEGER(KIND=MPI_OFFSET_KIND)', name, val(c['value']))
    f = {c['name']: val(c['value']) for c in abi['constants'] if c['name'].startswith('MPI_F_')}
    param('INTEGER', 'MPI_SOURCE', int(f['MPI_F_SOURCE']) + 1)
    param('INTEGER', 'MPI_TAG', int(f['MPI_F_TAG']) + 1)
    param('INTEGER', 'MPI_ERROR', int(f['MPI_F_ERROR']) + 1)
    for name, sym, decl in SENTINELS:
        L.append('      ' + decl)
        L.append('      COMMON /%s/ %s' % (sym.upper(), name))
        L.append('      SAVE /%s/' % sym.upper())
    for name in CALLBACK_CONSTS:
        L.append('      EXTERNAL %s' % name)
    for pre in ('MPI', 'PMPI'):
        for typ, names in (('DOUBLE PRECISION', ('WTIME', 'WTICK')),
                           ('INTEGER(KIND=MPI_ADDRESS_KIND)', ('AINT_ADD', 'AINT_DIFF'))):
            names = ['%s_%s' % (pre, n) for n in names if '%s_%s' % (pre, n) not in interfaced]
            if names:
                L.append('      %s %s' % (typ, ', '.join(names)))
                L.append('      EXTERNAL %s' % ', '.join(names))
    return L


def wrap_free(line, width=120):
    """A free-form statement split with '&' continuations to fit the line limit."""
    out = []
    while len(line) > width:
        cut = line.rfind(',', 0, width)
        if cut < 0:
            break
        out.append(line[:cut + 1] + ' &')
        line = '        ' + line[cut + 1:].lstrip()
    out.append(line)
    return out


def f_interface(name, f90):
    """Free-form interface body lines for the Fortran procedure of signature f90 (raises Skip)."""
    fret, fargs, fdecl = parse_f90(f90)
    kind = 'FUNCTION' if fret else 'SUBROUTINE'
    L = wrap_free('%s %s(%s)' % (kind, name, ', '.join(x.upper() for x in fargs)))
    L += ['IMPORT', 'IMPLICIT NONE']
    if fret:
        L.append('%s :: %s' % (fret, name))
    scalars, arrays = [], []
    for x in fargs:
        ft, dims = fdecl.get(x, ('INTEGER', ''))
        X = x.upper()
        if ft == '<type>':
            # any type, kind and rank: gfortran's (and Intel's) "ignore TKR"
            arrays += ['!GCC$ ATTRIBUTES NO_ARG_CHECK :: %s' % X, '!DEC$ ATTRIBUTES NO_ARG_CHECK :: %s' % X,
                       'TYPE(*), DIMENSION(*) :: %s' % X]
        elif ft == 'EXTERNAL':
            scalars.append('EXTERNAL :: %s' % X)
        elif ft == 'CHARACTER*(*)':
            (arrays if dims else scalars).append('CHARACTER(LEN=*) :: %s%s' % (X, dims))
        elif ft in FTYPES:
            (arrays if dims else scalars).append('%s :: %s%s' % (ft, X, dims))
        else:
            raise Skip('Fortran type %s' % ft)
    L += scalars + arrays      # scalars first: array bounds may name them (ARGV(COUNT, *))
    L.append('END %s %s' % (kind, name))
    return L


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--procedures', required=True)
    ap.add_argument('--abi', required=True)
    ap.add_argument('--bindings', required=True, action='append',
                    help='C sources whose exported PMPI_ definitions are the implemented procedures')
    ap.add_argument('--out-c', required=True)
    ap.add_argument('--out-h', required=True)
    ap.add_argument('--out-mod', required=True)
    ap.add_argument('--rules', required=True, help='the binding rules (data/kumi-bindings.json)')
    ap.add_argument('--report', action='store_true')
    a = ap.parse_args()
    api = load_api(a.procedures)
    abi = json.load(open(a.abi))
    procs = {}   # name -> (ret, params, kinds), as mkbindings.py reads them
    for proto, kinds in all_prototypes(api, abi):
        ret, name, params = parse_proto(proto)
        procs.setdefault(name, (ret, params, kinds))
    try:
        rules = load_rules(a.rules, procs)
    except RuleError as e:
        raise SystemExit('mkfortran: %s: %s' % (a.rules, e))

    implemented = {n[4:] for n, r in rules.items() if r.get('c_by_hand')}
    for src in a.bindings:
        implemented |= set(re.findall(r'^KUMI_EXPORT\s[^(\n]*?\bPMPI_(\w+)\s*\(', open(src).read(), re.M))

    c = ['/* Generated by mkfortran.py from the MPI API data: do not edit. */',
         '#include "kf_support.h"',
         '/* kf_support.c: lengths of the per-neighbor arrays of the neighborhood alltoallw calls */',
         'int kf_neighbor_in(MPI_Comm comm);', 'int kf_neighbor_out(MPI_Comm comm);', '']
    done, skipped = [], []
    f90_of = {}
    for p in api['procedures']:
        f90 = p.get('f90')
        if not p.get('c') or not f90 or f90 == 'None' or p.get('not_with_mpif'):
            continue
        ret, cname, params = parse_proto(p['c'].replace('\\ldots', '...'))
        if cname[4:] not in implemented:
            continue
        f90_of[cname] = f90
        if rules.get(cname, {}).get('fortran_by_hand'):
            done.append(cname)
            continue
        dirs = {q['name']: q['direction'] for q in (p.get('c_params') or [])}
        kinds = {q['name']: q['kind'] for q in (p.get('c_params') or [])}
        try:
            fret, fargs, fdecl = parse_f90(f90)
            c += gen_glue(cname, ret, params, kinds, dirs, fret, fargs, fdecl, rules.get(cname, {})) + ['']
            done.append(cname)
        except Skip as e:
            skipped.append((cname, str(e)))
    c.append('/* %d procedures with Fortran bindings; skipped:' % len(done))
    c += [' *   %s: %s' % s for s in skipped]
    c.append(' */')
    open(a.out_c, 'w').write('\n'.join(c) + '\n')

    head = ['! mpif.h for Kumi: generated by mkfortran.py from the MPI 5.0 standard ABI',
            '! facts and the MPI API data.  Do not edit.']
    # the constants of the removed MPI-1 procedures (MPI_LB, MPI_UB: data/mpi-removed.json) too
    abi = dict(abi, constants=abi['constants'] + api.get('removed_constants', []))
    open(a.out_h, 'w').write('\n'.join(head + fortran_decls(abi)) + '\n')
    # explicit interfaces for what libmpifort defines
    ifaces, interfaced = [], set()
    for cname in sorted(set(done)):
        name = cname.upper()
        if name in interfaced:
            continue
        try:
            body = f_interface(name, f90_of[cname])
        except Skip as e:
            skipped.append((cname + ' (interface)', str(e)))
            continue
        interfaced.add(name)
        ifaces += ['      INTERFACE'] + ['        ' + x for x in body] + ['      END INTERFACE']
    mod = ['! The `use mpi` module of Kumi: generated by mkfortran.py.  Do not edit.',
           'module mpi', '      implicit none'] + fortran_decls(abi, interfaced) + ifaces + ['end module mpi']
    open(a.out_mod, 'w').write('\n'.join(mod) + '\n')
    if a.report:
        for s in skipped:
            print('skipped %s: %s' % s)
        print('%d Fortran procedures, %d skipped' % (len(done), len(skipped)))


if __name__ == '__main__':
    main()
