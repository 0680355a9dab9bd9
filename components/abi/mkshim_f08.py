#!/usr/bin/env python3
"""Generate the C source of a foreign ABI's `use mpi_f08` (Open MPI's libmpi_usempif08.so.40, MPICH's part of libmpichfort.so.12).

usage: mkshim_f08.py --ffacts data/abi/ompi-fortran.json --f08facts data/abi/ompi-f08.json
                     --sigs ompi-fortran-sigs.json --out ompi_f08shim.c [--coverage F]

A program of `use mpi_f08` built with mpif90.openmpi (Open MPI 4.x) calls mpi_<name>_f08_ with
Open MPI's f08 ABI, which the probe (tools/abi-probe-f08.py, data/abi/ompi-f08.json) found to
be that of its `use mpi` but for one thing:
- a handle, TYPE(MPI_Comm) ..., is a derived type of one INTEGER (MPI_VAL): passed by reference
  it is the address of an Open MPI Fortran handle, as the INTEGER handle of `use mpi` is;
- TYPE(MPI_Status) is the 24 bytes of the Fortran status (MPI_SOURCE, MPI_TAG, MPI_ERROR at
  the same offsets), arrays of it the same as statuses(MPI_STATUS_SIZE, *);
- a choice buffer is TYPE(*), DIMENSION(*) (assumed size, no descriptor: the compiler passes the
  address of the first element, and makes a contiguous copy of a non-contiguous section itself,
  as Open MPI 4.x does: MPI_SUBARRAYS_SUPPORTED is .FALSE.);
- strings are CHARACTER(LEN=*) with the hidden lengths at the end, LOGICALs are LOGICAL, TYPE(C_PTR)
  baseptrs are pointer-sized as INTEGER(KIND=MPI_ADDRESS_KIND) ones;
- the callbacks (MPI_User_function with TYPE(C_PTR), VALUE vectors, attribute copy / delete,
  error handlers, generalized requests, data representations) have the same arguments;
- the sentinels (MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE, ...) are bind(C) variables of
  the names of mpif.h's COMMON blocks (mpi_fortran_in_place_, ...), which libmpi_mpifh.so.40
  defines;
but: IERROR is OPTIONAL (absent: a null address).  So each mpi_<name>_f08_ here calls the Fortran
shim's pmpi_<name>_ (libmpi_mpifh.so.40, components/abi/ompi-fortran, a DT_NEEDED) with an
IERROR of its own where the program gave none.  The other symbols the program may reach are
defined with the probed sizes and values: the handle PARAMETERs of module mpi_f08_types
(__mpi_f08_types_MOD_mpi_comm_world, ...) and the bind(C) handles (ompi_f08_mpi_comm_world, ...),
the == and /= operators on handles, the f08 MPI_COMM_DUP_FN and the other predefined callbacks,
MPI_CONVERSION_FN_NULL, and the default-initialisation, copy and vtab objects of the derived
types (for CLASS(*) and SELECT TYPE).  A procedure the Fortran shim does not provide is not
exported: a constructor stops a program that needs one at load, naming it.

MPICH 4.0 (data/abi/mpich-f08.json; the code goes into its Fortran library libmpichfort.so.12)
differs in three things, all from the facts: its procedures with a choice buffer are
mpi_<name>_f08ts_ with TYPE(*), DIMENSION(..), which gfortran passes as its own array descriptor
(the procedures are not BIND(C)): a contiguous buffer's base address is passed on, a
non-contiguous section refused with MPI_ERR_BUFFER through the error handler of the call's
communicator, window or file (MPI_SUBARRAYS_SUPPORTED .FALSE.); its sentinels are variables of
their own (MPIR_F08_MPI_IN_PLACE, ...), defined here and mapped to mpif.h's where an argument
may be one; its module procedures include MPI_X_f2c / c2f, MPI_Status_f2f08 / f082f, the
comparisons of a handle with an INTEGER, and MPI_Sizeof's; and its large-count procedures
(mpi_<name>_f08(ts)_large: INTEGER(KIND=MPI_COUNT_KIND) counts), which call the Fortran shim's
hidden pmpi_<name>_c_ (mkshim_fortran.py's large_forms(), over the C shim's MPI_X_c).
"""
import argparse
import json
import re
import sys

import mkshim_fortran

# the predefined attribute callbacks of module mpi_f08_callbacks (arguments as the Fortran ones)
COPY = 'MPI_Fint *o, MPI_Fint *k, intptr_t *e, intptr_t *in, intptr_t *out, MPI_Fint *flag, MPI_Fint *ierr'
DELETE = 'MPI_Fint *o, MPI_Fint *k, intptr_t *v, intptr_t *e, MPI_Fint *ierr'


def cname(param):
    return re.findall(r'\w+', param)[-1]


# the sentinels of mpi_f08 that an argument of each kind may be (mpif.h's name)
SENT_BUF = ('MPI_BOTTOM', 'MPI_IN_PLACE')
ERRH = {'mpi_comm': 'comm', 'mpi_win': 'win', 'mpi_file': 'file'}


class Gen:
    def __init__(self, a):
        self.ff = json.load(open(a.ffacts))
        self.f8 = json.load(open(a.f08facts))
        self.sigs = json.load(open(a.sigs))
        self.out, self.exported, self.skipped, self.missing_fns = [], [], [], []
        self.true = self.ff.get('true', 1)
        self.abi = self.f8['name']
        st = self.f8['status']
        if st['size'] != 4 * self.ff['constants']['MPI_STATUS_SIZE'] or any(
                off != 4 * (self.ff['constants'][f] - 1) for f, off in st['fields'].items()):
            sys.exit('mkshim_f08: TYPE(MPI_Status) is not the Fortran status of mpif.h')
        self.cdesc = 'assumed-rank' in self.f8['choice']
        # each sentinel of mpi_f08 that is not mpif.h's: its address -> mpif.h's (the Fortran
        # shim compares with those)
        self.smap = {}
        for n, (sym, off) in self.f8.get('sentinels', {}).items():
            fsym, foff = self.ff['sentinels'].get(n, (None, 0))
            if fsym and (sym, off) != (fsym, foff):
                self.smap[n] = ('(void *)((char *)%s + %d)' % (sym, off) if off else '(void *)%s' % sym,
                                '(void *)((char *)%s + %d)' % (fsym, foff) if foff else '(void *)%s' % fsym, sym, fsym)

    def prologue(self):
        self.out.append('''/* Generated by components/abi/mkshim_f08.py from data/abi/%(abi)s-f08.json, data/abi/%(abi)s-fortran.json
 * and the procedures of the Fortran shim (mkshim_fortran.py --sigs): do not edit.
 * %(lib)s: the procedures and module data of `use mpi_f08` of this ABI on Kumi, over the
 * Fortran shim %(flib)s (which translates the handles, statuses and sentinels). */
#define _GNU_SOURCE   /* dl_iterate_phdr */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int MPI_Fint;
#define F08_EXPORT __attribute__((visibility("default")))
#define F08_TRUE %(true)d''' % {'abi': self.abi, 'lib': self.f8['library'], 'flib': self.ff['library'], 'true': self.true})
        for sym in sorted({v[3] for v in self.smap.values()}):
            self.out.append('extern int %s[];   /* a sentinel of mpif.h */' % sym)
        for sym in sorted({v[2] for v in self.smap.values()}):
            self.out.append('F08_EXPORT extern char %s[];   /* a sentinel of mpi_f08 (defined below) */' % sym)
        if self.cdesc:
            self.out.append('''/* choice buffers are TYPE(*), DIMENSION(..) of procedures that are not BIND(C): gfortran's own
 * array descriptor (GCC >= 8; not ISO_Fortran_binding.h's CFI_cdesc_t): the strides are in
 * elements of span bytes */
#include <stddef.h>
typedef struct { ptrdiff_t stride, lbound, ubound; } f08_dim_t;
typedef struct {
    void *base_addr;
    size_t offset;
    size_t elem_len;
    int version;
    int8_t rank, type;
    int16_t attribute;
    ptrdiff_t span;
    f08_dim_t dim[];
} f08_desc_t;
static int f08_contiguous(const f08_desc_t *d)
{
    ptrdiff_t want = (ptrdiff_t)d->elem_len, span = d->span ? d->span : (ptrdiff_t)d->elem_len;
    for (int i = 0; i < d->rank; i++) {
        ptrdiff_t extent = d->dim[i].ubound - d->dim[i].lbound + 1;
        if (extent <= 1) continue;   /* also the last dimension of an assumed-size array */
        if (d->dim[i].stride * span != want) return 0;
        want *= extent;
    }
    return 1;
}
/* a non-contiguous array section: MPI_ERR_BUFFER (MPI_SUBARRAYS_SUPPORTED is .FALSE.) through
 * the error handler of the call's communicator, window or file (MPI_COMM_WORLD's otherwise) */
extern void pmpi_comm_call_errhandler_(MPI_Fint *, MPI_Fint *, MPI_Fint *);
extern void pmpi_win_call_errhandler_(MPI_Fint *, MPI_Fint *, MPI_Fint *);
extern void pmpi_file_call_errhandler_(MPI_Fint *, MPI_Fint *, MPI_Fint *);
static MPI_Fint f08_noncontig(const char *proc, const char *arg, int kind, MPI_Fint *h)
{
    MPI_Fint code = %(errbuf)d, e = 0, world = %(world)d;
    fprintf(stderr, "%%s: %%s is a non-contiguous array section (MPI_SUBARRAYS_SUPPORTED is .FALSE.: "
            "pass a contiguous copy)\\n", proc, arg);
    if (kind == 2) pmpi_win_call_errhandler_(h, &code, &e);
    else if (kind == 3) pmpi_file_call_errhandler_(h, &code, &e);
    else pmpi_comm_call_errhandler_(kind == 1 ? h : &world, &code, &e);
    return code;
}''' % {'errbuf': self.ff['constants']['MPI_ERR_BUFFER'], 'world': self.ff['constants']['MPI_COMM_WORLD']})

    def target(self, low):
        return ('p' if self.ff.get('profiling') else '') + low + '_'

    def check(self, params, args, bind_c=False):
        """Why the f08 procedure's arguments (the probed interface) are not those of the
        Fortran shim's procedure, or None."""
        if args is None:
            return None
        main = [p for p in params if not p.startswith('size_t ')]
        lens = [p for p in params if p.startswith('size_t ')]
        if main and cname(main[-1]) == 'ierror' and not (args and args[-1]['name'] == 'ierror'):
            main = main[:-1]   # MPI_Pcontrol: no IERROR in mpi_f08
        if len(main) != len(args):
            return '%d arguments, %d in the Fortran shim' % (len(args), len(main))
        nchar = sum(1 for d in args if d['kind'] == 'character')
        if nchar != len(lens):
            return '%d strings, %d in the Fortran shim' % (nchar, len(lens))
        for d, p in zip(args, main):
            if d.get('value'):
                return 'argument %s passed by value' % d['name']
            if d['kind'] == 'choice' and d.get('array') == 'assumed-rank' and not p.startswith('void *'):
                return 'choice argument %s is not a buffer in the Fortran shim' % d['name']
            if d['kind'] == 'choice' and d.get('array') == 'assumed-rank' and bind_c:
                return 'BIND(C): choice argument %s is a CFI_cdesc_t' % d['name']
            if d.get('optional') and d['name'] != 'ierror':
                return 'optional argument %s' % d['name']
            if d['kind'] in ('integer', 'logical'):
                cb = 8 if re.match(r'^(intptr_t|long long)\b', p) else 4 if re.match(r'^(int|MPI_Fint)\b', p) else None
                if cb and cb != d.get('bytes', 4):
                    return 'argument %s of %d bytes, %d in the Fortran shim' % (d['name'], d.get('bytes', 4), cb)
        if args and args[-1]['name'] == 'ierror' and not args[-1].get('optional'):
            return 'IERROR not optional'
        return None

    def sent(self, expr, names):
        """expr, or mpif.h's sentinel where it is one of mpi_f08's (names)."""
        for n in names:
            if n in self.smap:
                expr = '(%s == %s ? %s : %s)' % (expr, self.smap[n][0], self.smap[n][1], expr)
        return expr

    def procedure(self, key, info):
        low = info['mpi']
        if info.get('large'):
            # the Fortran shim's large-count entry (MPI_X_c: counts MPI_Count, displacements MPI_Aint)
            low += '_c'
            if low not in self.sigs:
                return 'large-count form: not in the Fortran shim'
        sig = self.sigs.get(low)
        if sig is None:
            return 'not provided by the Fortran shim (%s)' % self.ff['library']
        ret, ptext = sig
        params = [p.strip() for p in ptext.split(',')] if ptext.strip() else []
        args = info.get('args')
        why = self.check(params, args, info.get('bind_c', False))
        if why and low == 'mpi_f_sync_reg':
            # MPI_F_SYNC_REG: an external call the compiler cannot see into (it keeps the buffer
            # in memory across it); nothing to do
            ptext = ', '.join('void *a%d' % i for i in range(len(args or [1])))
            self.out.append('static void f08_%s(%s) { __asm__ __volatile__("" : : : "memory"); }' % (key, ptext))
            for sym in [key + '_'] + ([info['prof']] if info.get('prof') else []):
                self.out.append('F08_EXPORT void %s(%s) __attribute__((alias("f08_%s")));' % (sym, ptext, key))
            self.exported.append(key)
            return None
        if why:
            return why
        names = [cname(p) for p in params]
        tgt = self.target(low)
        o = self.out
        o.append('extern %s %s(%s);' % (ret, tgt, ptext or 'void'))
        noierr = 'ierror' in names and not (args and args[-1]['name'] == 'ierror')
        fparams = [p for p in params if not (noierr and cname(p) == 'ierror')]
        call, pre = {}, []
        # the communicator, window or file whose error handler a refused buffer goes to
        eh = next(((ERRH[d['type']], d['name']) for d in (args or []) if d['kind'] == 'handle' and d.get('type') in ERRH
                   and d.get('array') is None), None)
        for i, n in enumerate(names):
            d = args[i] if args and i < len(args) else {}
            e = n
            if d.get('kind') == 'choice' and d.get('array') == 'assumed-rank':
                fparams[i] = 'f08_desc_t *%s' % n
                kind = {'comm': 1, 'win': 2, 'file': 3}[eh[0]] if eh else 0
                pre.append('    void *%s_p = %s->base_addr;\n'
                           '    if (%s->rank > 0 && %s_p && !f08_contiguous(%s)) {\n'
                           '        MPI_Fint c = f08_noncontig("MPI_%s", "%s", %d, %s);\n'
                           '        if (ierror) *ierror = c;\n        return;\n    }'
                           % (n, n, n, n, n, low[4:].capitalize(), n.upper(), kind, eh[1] if eh else '0'))
                e = self.sent('%s_p' % n, SENT_BUF)
            elif d.get('kind') == 'choice':
                e = self.sent(n, SENT_BUF)
            elif d.get('kind') == 'status':
                e = self.sent(n, ['MPI_STATUSES_IGNORE' if d.get('array') else 'MPI_STATUS_IGNORE'])
            elif d.get('kind') == 'integer' and d.get('array') and 'weights' in n:
                e = self.sent(n, ['MPI_UNWEIGHTED', 'MPI_WEIGHTS_EMPTY'])
            elif d.get('kind') == 'integer' and d.get('array') and 'errcodes' in n:
                e = self.sent(n, ['MPI_ERRCODES_IGNORE'])
            elif d.get('kind') == 'character' and n in ('argv', 'array_of_argv'):
                # MPI_COMM_SPAWN(_MULTIPLE): MPI_ARGV_NULL / MPI_ARGVS_NULL of mpi_f08
                e = self.sent(n, ['MPI_ARGV_NULL' if n == 'argv' else 'MPI_ARGVS_NULL'])
            elif d.get('kind') == 'procedure' and low == 'mpi_register_datarep' and n in ('rd', 'wr'):
                # MPI_CONVERSION_FN_NULL of mpi_f08: the absent conversion
                e = '%s == (void *)__mpi_f08_callbacks_MOD_mpi_conversion_fn_null ? 0 : %s' % (n, n)
            call[n] = e
        if noierr:
            body = '    MPI_Fint e = 0;   /* no IERROR in mpi_f08 */\n    %s(%s);' % (
                tgt, ', '.join('&e' if n == 'ierror' else call[n] for n in names))
        elif 'ierror' in names:
            body = '\n'.join(pre + ['    MPI_Fint e = 0;   /* IERROR is OPTIONAL */',
                                    '    %s(%s);' % (tgt, ', '.join('ierror ? ierror : &e' if n == 'ierror' else call[n] for n in names))])
        else:
            body = '\n'.join(pre + ['    %s%s(%s);' % ('return ' if ret != 'void' else '', tgt, ', '.join(call[n] for n in names))])
        ftext = ', '.join(fparams) or 'void'
        o.append('static %s f08_%s(%s)\n{\n%s\n}' % (ret, key, ftext, body))
        for sym in [key + '_'] + ([info['prof']] if info.get('prof') else []):
            o.append('F08_EXPORT %s %s(%s) __attribute__((alias("f08_%s")));' % (ret, sym, ftext, key))
        self.exported.append(key)
        return None

    def data(self):
        """The module data with their probed sizes and values, the derived types' helpers."""
        o = self.out
        vals = self.f8['values']
        fsent = set(self.ff['commons'])
        o.append('\n/* ---- module data: the handle PARAMETERs and bind(C) handles (values probed), the sentinels */')
        for sym, size in sorted(self.f8['data'].items()):
            if sym in vals:
                const = 'const ' if re.match(r'^__mpi_f08_(types|compile_constants)_MOD_', sym) else ''
                o.append('F08_EXPORT %sMPI_Fint %s = %d;' % (const, sym, vals[sym]))
            elif sym not in fsent and '__vtab_' not in sym and '__def_init_' not in sym:
                o.append('F08_EXPORT char %s[%d] __attribute__((aligned(16)));' % (sym, max(size, 1)))
        o.append('\n/* ---- the derived types: default initialisation (zeros), copy procedure, vtab (hash and size probed) */')
        o.append('struct f08_vtab { int32_t hash; int64_t size; const void *extends, *def_init; void (*copy)(const void *, void *);'
                 ' const void *final, *deallocate; };')
        done = set()
        for sym, v in sorted(self.f8['vtabs'].items()):
            mod, t = sym.split('_MOD___vtab_', 1)
            di = '%s_MOD___def_init_%s' % (mod, t)
            cp = '%s_MOD___copy_%s' % (mod, t)
            dsize = self.f8['data'].get(di, v['size'])
            o.append('F08_EXPORT char %s[%d] __attribute__((aligned(8)));' % (di, dsize))
            o.append('F08_EXPORT void %s(const void *src, void *dst) { memcpy(dst, src, %d); }' % (cp, v['size']))
            o.append('F08_EXPORT struct f08_vtab %s = { %d, %d, 0, %s, %s, 0, 0 };' % (sym, v['hash'], v['size'], di, cp))
            done.add(cp)
        st = self.f8['status']['size']
        o.append('\n/* ---- the module procedures: == and /= on handles (and with INTEGERs), conversions, callbacks */')
        for fn in sorted(self.f8['functions']):
            short = fn.split('_MOD_', 1)[1]
            if fn in done:
                continue
            if re.match(r'^(ompi_\w+_op_(eq|ne)|mpi_\w+_(eq|neq|f08_eq_f|f08_neq_f|f_eq_f08|f_neq_f08))$', short):
                ne = re.search(r'_(ne|neq|f08_neq_f|f_neq_f08)$', short) is not None
                o.append('F08_EXPORT MPI_Fint %s(const MPI_Fint *a, const MPI_Fint *b) { return *a %s *b ? F08_TRUE : 0; }'
                         % (fn, '!=' if ne else '=='))
            elif re.match(r'^mpi_\w+_(c2f|f2c)$', short):
                # a C handle is the Fortran integer in this ABI (the handle kinds checked by mkshim_fortran)
                if self.abi != 'mpich':
                    self.missing_fns.append(fn)
                    continue
                o.append('F08_EXPORT MPI_Fint %s(MPI_Fint x) { return x; }' % fn)
            elif short in ('mpi_status_f2f08', 'mpi_status_f082f'):
                o.append('F08_EXPORT void %s(const void *src, void *dst, MPI_Fint *ierror) { memcpy(dst, src, %d); if (ierror) *ierror = 0; }'
                         % (fn, st))
            elif short in ('mpi_status_c_assign_f08', 'mpi_status_f08_assign_c'):
                o.append('F08_EXPORT void %s(void *lhs, const void *rhs) { memcpy(lhs, rhs, %d); }' % (fn, st))
            elif re.match(r'^mpi_\w+_dup_fn$', short):
                o.append('F08_EXPORT void %s(%s) { *out = *in; *flag = F08_TRUE; *ierr = 0; }' % (fn, COPY))
            elif re.match(r'^mpi_\w+_null_copy_fn$', short):
                o.append('F08_EXPORT void %s(%s) { *flag = 0; *ierr = 0; }' % (fn, COPY))
            elif re.match(r'^mpi_\w+_null_delete_fn$', short):
                o.append('F08_EXPORT void %s(%s) { *ierr = 0; }' % (fn, DELETE))
            elif re.match(r'^mpi_conversion_fn_null(_c)?$', short):
                o.append('/* MPI_CONVERSION_FN_NULL: never called (MPI_Register_datarep passes NULL for it) */\n'
                         'F08_EXPORT void %s(void *u, MPI_Fint *d, MPI_Fint *c, void *f, intptr_t *p, intptr_t *e, MPI_Fint *ierr)'
                         ' { *ierr = 0; }' % fn)
            else:
                self.missing_fns.append(fn)
        fsz = set(self.ff.get('sizeof', {}))
        for sym, size in sorted(self.f8.get('sizeof', {}).items()):
            if sym not in fsz:   # MPICH's mpi_f08 has its own (Open MPI's are those of use mpi)
                o.append('F08_EXPORT void %s(void *x, MPI_Fint *size, MPI_Fint *ierror) { *size = %d; if (ierror) *ierror = 0; }'
                         % (sym, size))

    def run(self):
        self.prologue()
        self.out.append('extern void __mpi_f08_callbacks_MOD_mpi_conversion_fn_null(void *, MPI_Fint *, MPI_Fint *, void *, intptr_t *, intptr_t *, MPI_Fint *);')
        for key, info in sorted(self.f8['procedures'].items()):
            why = self.procedure(key, info)
            if why:
                self.skipped.append((key, why))
        self.data()
        missing = sorted([s for key, info in self.f8['procedures'].items() if key not in self.exported
                          for s in [key + '_'] + ([info['prof']] if info.get('prof') else [])] + self.missing_fns)
        for fn in self.missing_fns:
            self.skipped.append((fn, 'module procedure not provided'))
        self.out.append(mkshim_fortran.load_check_text(missing, 'f08', self.ff['library'] if self.abi == 'mpich' else self.f8['library'],
                                                       self.abi, 'use mpi_f08'))
        return '\n'.join(self.out) + '\n'


def main():
    ap = argparse.ArgumentParser()
    for n in ('ffacts', 'f08facts', 'sigs', 'out'):
        ap.add_argument('--' + n, required=True)
    ap.add_argument('--coverage')
    a = ap.parse_args()
    g = Gen(a)
    src = g.run()
    with open(a.out, 'w') as f:
        f.write(src)
    if a.coverage:
        by = {}
        for n, why in g.skipped:
            by.setdefault(why, []).append(n)
        with open(a.coverage, 'w') as f:
            f.write('%s use mpi_f08 shim (%s): %d procedures exported, %d not (of %d it exports)\nnot exported, by reason:\n'
                    % (g.f8['name'], g.f8['library'], len(g.exported), len(g.skipped), len(g.f8['procedures'])))
            for why, ns in sorted(by.items(), key=lambda x: -len(x[1])):
                f.write('  %4d  %s: %s\n' % (len(ns), why, ' '.join(ns)))
            f.write('exported:\n  %s\n' % ' '.join(g.exported))
    print('mkshim_f08: %d exported, %d not' % (len(g.exported), len(g.skipped)), file=sys.stderr)


if __name__ == '__main__':
    main()
