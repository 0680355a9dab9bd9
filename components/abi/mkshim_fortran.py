#!/usr/bin/env python3
"""Generate the C source of a foreign ABI's Fortran library (Open MPI's libmpi_mpifh.so.40).

usage: mkshim_fortran.py --api data/mpi-procedures.json --native data/mpi-abi-1.0.json
                         --facts data/abi/ompi.json --ffacts data/abi/ompi-fortran.json
                         --c-coverage ompi-coverage.txt --out ompi_fshim.c [--coverage F] [--sigs F]

Programs built with mpif90.openmpi (mpif.h or `use mpi`) call mpi_xxx_ with Open MPI's
Fortran ABI: integer handles of Open MPI's values, MPI_STATUS_SIZE integers, sentinels that
are COMMON blocks (mpi_fortran_bottom_, ...), hidden string lengths, LOGICALs.  Each entry
generated here converts its arguments after their kind in the API data and calls the C
entry PMPI_X of the C shim of the same ABI (libmpi.so.40, components/abi/ompi), which
translates to Kumi: so a handle is translated once, and the Fortran integers of the
program's own handles are those the C shim's MPI_X_c2f gives (Kumi's).  Predefined handles
get Open MPI's Fortran values (probed: data/abi/ompi-fortran.json) through two tables.
The C status of Open MPI (24 bytes) is the Fortran status (MPI_STATUS_SIZE = 6 integers)
byte for byte, so statuses pass through.  Only a C compiler is needed to build the result.
"""
import argparse
import json
import re
import sys

from mkshim_loadcheck import load_check_text   # (mkshim_f08.py reaches it through this module)

HANDLES = {'MPI_Comm': 'Comm', 'MPI_Datatype': 'Type', 'MPI_Group': 'Group', 'MPI_Info': 'Info',
           'MPI_Errhandler': 'Errhandler', 'MPI_Op': 'Op', 'MPI_Request': 'Request', 'MPI_Win': 'Win',
           'MPI_Message': 'Message', 'MPI_File': 'File'}
SCALAR_C = {'int': 'int', 'MPI_Aint': 'intptr_t', 'MPI_Count': 'long long', 'MPI_Offset': 'long long'}
# sentinel COMMON block -> the C value it stands for (a constant of the C facts)
SENTINEL_OF_KIND = {'BUFFER': ['MPI_BOTTOM', 'MPI_IN_PLACE'], 'C_BUFFER': ['MPI_BOTTOM', 'MPI_IN_PLACE'],
                    'C_BUFFER2': ['MPI_BOTTOM'], 'STATUS': ['MPI_STATUS_IGNORE'],
                    'STATUS[]': ['MPI_STATUSES_IGNORE'], 'WEIGHT[]': ['MPI_UNWEIGHTED', 'MPI_WEIGHTS_EMPTY']}
COMMON_OF = {'MPI_BOTTOM': 'mpi_fortran_bottom_', 'MPI_IN_PLACE': 'mpi_fortran_in_place_',
             'MPI_STATUS_IGNORE': 'mpi_fortran_status_ignore_',
             'MPI_STATUSES_IGNORE': 'mpi_fortran_statuses_ignore_',
             'MPI_UNWEIGHTED': 'mpi_fortran_unweighted_', 'MPI_WEIGHTS_EMPTY': 'mpi_fortran_weights_empty_',
             'MPI_ERRCODES_IGNORE': 'mpi_fortran_errcodes_ignore_'}
# procedures whose Fortran form differs from the C one: written here by hand
ATTR = ('MPI_Comm_create_keyval', 'MPI_Comm_set_attr', 'MPI_Comm_get_attr', 'MPI_Type_create_keyval',
        'MPI_Type_set_attr', 'MPI_Type_get_attr', 'MPI_Win_create_keyval', 'MPI_Win_set_attr', 'MPI_Win_get_attr',
        'MPI_Attr_get', 'MPI_Attr_put')
SPECIAL = ('MPI_Init', 'MPI_Init_thread', 'MPI_Wtime', 'MPI_Wtick', 'MPI_Pcontrol', 'MPI_Op_create',
           'MPI_Comm_create_errhandler', 'MPI_Win_create_errhandler', 'MPI_File_create_errhandler', 'MPI_Grequest_start',
           'MPI_Register_datarep', 'MPI_Comm_spawn', 'MPI_Comm_spawn_multiple')
# the program's Fortran reductions and error handlers: the Fortran procedure is the context of
# the C shim's callback (kumi_shim_op_create_ctx / kumi_shim_errhandler_create_ctx; see pools())


class Gen:
    def __init__(self, a):
        self.api = json.load(open(a.api))
        self.native = {c['name']: c for c in json.load(open(a.native))['constants'] if c.get('name')}
        self.facts = json.load(open(a.facts))
        self.ff = json.load(open(a.ffacts))
        self.csyms = set()
        cov = open(a.c_coverage).read()
        self.cexp = set(cov.split('exported:', 1)[1].split())
        self.fprocs = set(self.ff['procedures'])
        self.out, self.exported, self.skipped = [], [], []
        self.sigs = {}   # procedure (lower case) -> [return type, C parameters]: --sigs
        # MPICH: C handles are ints and the Fortran integer of a handle is its C value
        # (MPI_X_c2f / f2c are the identity), so handles pass through; not MPI_File (a pointer)
        types = self.facts.get('types', {})
        self.ident = {k for t, k in HANDLES.items() if types.get(t) == 4}
        st = self.facts['status']
        fc = self.ff['constants']
        if st['size'] != 4 * fc['MPI_STATUS_SIZE']:
            sys.exit('mkshim_fortran: the C status (%d bytes) is not MPI_STATUS_SIZE integers' % st['size'])
        for f in ('MPI_SOURCE', 'MPI_TAG', 'MPI_ERROR'):
            if st['fields'][f] != 4 * (fc[f] - 1):
                sys.exit('mkshim_fortran: status field %s is not at Fortran index %d' % (f, fc[f]))

    def nval(self, name):
        v = self.native[name].get('value')
        return int(v, 0) if isinstance(v, str) else v

    def cval(self, name):
        return self.facts['constants'][name].get('value')

    def prologue(self):
        o = self.out
        o.append('''/* Generated by components/abi/mkshim_fortran.py from data/mpi-procedures.json,
 * data/mpi-abi-1.0.json, data/abi/%(name)s.json and data/abi/%(name)s-fortran.json: do not edit.
 * %(lib)s: the Fortran entries (mpif.h, use mpi) of this ABI on Kumi, over the C shim. */
#define _GNU_SOURCE   /* dl_iterate_phdr */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef int MPI_Fint;
#define FSHIM_EXPORT __attribute__((visibility("default")))
#define FSHIM_TRUE %(true)d
#define KUMI_PREDEF_MAX 0x1000
''' % {'name': self.facts['name'], 'lib': self.ff['library'], 'true': self.ff['true']})
        # COMMON blocks: defined here too (a program that does not include them still links);
        # a program's own definitions take precedence (the executable comes first), and this
        # library reaches them through its GOT (-fPIC, no -Bsymbolic).
        o.append('/* ---- sentinels: the COMMON blocks of mpif.h, with the probed sizes */')
        for sym, size in sorted(self.ff['commons'].items()):
            # of the probed size exactly: a program that copy-relocates one (use mpi_f08 reaches
            # Open MPI's MPI_ARGV_NULL, a CHARACTER(1), as data) is warned of another size
            if size % 4:
                o.append('FSHIM_EXPORT char %s[%d] __attribute__((aligned(16)));' % (sym, size))
            else:
                o.append('FSHIM_EXPORT int %s[%d] __attribute__((aligned(16)));' % (sym, size // 4))
        if self.ident:
            self.kinds = sorted(set(HANDLES.values()))
            o.append('/* handles: C handle == Fortran integer (this ABI\'s C handles are ints) */')
            o.append('#pragma GCC diagnostic ignored "-Wunused-function"   /* array lengths: not needed here */')
            for k in self.kinds:
                if k in self.ident:
                    o.append('static inline void *f2c_%s(MPI_Fint f) { return (void *)(intptr_t)f; }' % k)
                    o.append('static inline MPI_Fint c2f_%s(void *h) { return (MPI_Fint)(intptr_t)h; }' % k)
                else:
                    o.append('extern void *PMPI_%s_f2c(MPI_Fint);\nextern MPI_Fint PMPI_%s_c2f(void *);' % (k, k))
                    o.append('static inline void *f2c_%s(MPI_Fint f) { return PMPI_%s_f2c(f); }' % (k, k))
                    o.append('static inline MPI_Fint c2f_%s(void *h) { return PMPI_%s_c2f(h); }' % (k, k))
        else:
            self.tables()
        self.prologue_rest()

    def tables(self):
        o = self.out
        # predefined handles: Open MPI Fortran value -> Kumi's integer, and back
        per = {k: {} for k in set(HANDLES.values())}
        back = {}
        for name, fv in sorted(self.ff['constants'].items()):
            c = self.facts['constants'].get(name)
            if not c or c.get('type') not in HANDLES or 'symbol' not in c or name not in self.native:
                continue
            nv = self.nval(name)
            if nv is None or not (0 <= nv < 0x1000) or not (0 <= fv < 0x1000):
                continue
            per[HANDLES[c['type']]][fv] = (nv, name)
            back.setdefault(nv, (fv, name))
        self.kinds = sorted(per)
        for k in self.kinds:
            tab = per[k]
            n = max(tab) + 1 if tab else 1
            o.append('static const int fpre_%s[%d] = {   /* Open MPI Fortran value -> Kumi integer + 1 */' % (k, n))
            for fv, (nv, name) in sorted(tab.items()):
                o.append('    [%d] = 0x%x + 1,   /* %s */' % (fv, nv, name))
            o.append('};')
            o.append('extern void *PMPI_%s_f2c(MPI_Fint);\nextern MPI_Fint PMPI_%s_c2f(void *);' % (k, k))
            o.append('static void *fcache_%s[%d];' % (k, n))
            o.append('''static inline void *f2c_%(k)s(MPI_Fint f)
{
    if (f >= 0 && f < %(n)d && fpre_%(k)s[f]) {
        /* a predefined handle's C value (an object of the C shim) never changes: kept */
        void *h = __atomic_load_n(&fcache_%(k)s[f], __ATOMIC_RELAXED);
        if (!h) {
            h = PMPI_%(k)s_f2c(f);
            __atomic_store_n(&fcache_%(k)s[f], h, __ATOMIC_RELAXED);
        }
        return h;
    }
    return PMPI_%(k)s_f2c(f);   /* the C shim maps through fshim_fint_in (below) */
}''' % {'k': k, 'n': n})
        o.append('/* Kumi integer of a predefined handle -> Open MPI Fortran value + 1 */')
        o.append('static const int fback[KUMI_PREDEF_MAX] = {')
        for nv, (fv, name) in sorted(back.items()):
            o.append('    [0x%x] = %d + 1,   /* %s */' % (nv, fv, name))
        o.append('};')
        for k in self.kinds:
            o.append('static inline MPI_Fint c2f_%s(void *h) { return PMPI_%s_c2f(h); }   /* mapped by fshim_fint_out */' % (k, k))
        # the C shim's MPI_X_c2f / f2c (which C code of the program calls too) map the
        # predefined handles through these hooks, so that C and Fortran agree
        o.append('''static MPI_Fint fshim_fint_out(MPI_Fint i)
{
    return i >= 0 && i < KUMI_PREDEF_MAX && fback[i] ? fback[i] - 1 : i;
}
static MPI_Fint fshim_fint_in(int kind, MPI_Fint f)
{
    if (f < 0 || f >= KUMI_PREDEF_MAX) return f;
    switch (kind) {''')
        order = ('Comm', 'Type', 'Group', 'Info', 'Errhandler', 'Op', 'Request', 'Win', 'File', 'Message', 'Session')
        for k in self.kinds:
            o.append('    case %d: return f < (MPI_Fint)(sizeof fpre_%s / sizeof fpre_%s[0]) && fpre_%s[f] ? fpre_%s[f] - 1 : -1;'
                     % (order.index(k), k, k, k, k))
        o.append('''    }
    return -1;   /* no handle of this ABI: Kumi's f2c answers a null handle */
}
extern void kumi_shim_fortran_hooks(MPI_Fint (*)(MPI_Fint), MPI_Fint (*)(int, MPI_Fint));
__attribute__((constructor)) static void fshim_hooks(void)
{
    kumi_shim_fortran_hooks(fshim_fint_out, fshim_fint_in);
}''')

    def prologue_rest(self):
        o = self.out
        o.append('''/* strings: Fortran's are blank padded, of a hidden length */
static char *fstr_in(const char *s, size_t n)
{
    while (n > 0 && s[n - 1] == ' ') n--;   /* leading and trailing blanks go, as Open MPI's do */
    while (n > 0 && s[0] == ' ') { s++; n--; }
    char *c = malloc(n + 1);
    if (c) { memcpy(c, s, n); c[n] = 0; }
    return c;
}
static void fstr_out(char *f, size_t n, const char *c)
{
    size_t l = strlen(c);
    if (l > n) l = n;
    memcpy(f, c, l);
    memset(f + l, ' ', n - l);
}
%(pools)s
/* lengths of arrays that the API data does not name */
extern int PMPI_Cartdim_get(void *, int *);
extern int PMPI_Comm_size(void *, int *);
extern int PMPI_Comm_remote_size(void *, int *);
extern int PMPI_Comm_test_inter(void *, int *);
static int fshim_cartdim(void *comm)
{
    int n = 0;
    return PMPI_Cartdim_get(comm, &n) == 0 ? n : 0;
}
static int fshim_peers(void *comm)
{
    int inter = 0, n = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != 0) return 0;
    if ((inter ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != 0) return 0;
    return n;
}
extern int PMPI_Topo_test(void *, int *);
extern int PMPI_Dist_graph_neighbors_count(void *, int *, int *, int *);
extern int PMPI_Comm_rank(void *, int *);
extern int PMPI_Graph_neighbors_count(void *, int, int *);
/* a topology's in-degree (out = 0) or out-degree (out = 1) */
static int fshim_degree(void *comm, int out)
{
    int t = 0, in = 0, o = 0, w = 0, r = 0;
    if (PMPI_Topo_test(comm, &t) != 0) return 0;
    if (t == %(cart)d) return 2 * fshim_cartdim(comm);
    if (t == %(graph)d) return PMPI_Comm_rank(comm, &r) == 0 && PMPI_Graph_neighbors_count(comm, r, &o) == 0 ? o : 0;
    if (t == %(dist)d && PMPI_Dist_graph_neighbors_count(comm, &in, &o, &w) == 0) return out ? o : in;
    return 0;
}
#define FSHIM_ERR_NO_MEM %(nomem)d
#define FSHIM_STACK 32   /* arrays of handles / LOGICALs up to this many entries are converted on the stack */
#define FSHIM_ERR_ARG %(errarg)d''' % {'nomem': self.cval('MPI_ERR_NO_MEM'), 'errarg': self.cval('MPI_ERR_ARG'),
       'pools': self.pools(), 'cart': self.cval('MPI_CART'), 'graph': self.cval('MPI_GRAPH'),
       'dist': self.cval('MPI_DIST_GRAPH')})

    def pools(self):
        """The program's Fortran reductions and error handlers: through the C shim's entries with
        a context (kumi_shim_op_create_ctx, kumi_shim_errhandler_create_ctx), whose context is
        the Fortran procedure: no pool of trampolines, as many as the program makes."""
        out = ['''/* ---- the program's Fortran callbacks: the Fortran procedure is the context of the C shim's
 * callback (no pool of trampolines) */
typedef void (fshim_user_fn)(void *, void *, MPI_Fint *, MPI_Fint *);
typedef void (fshim_eh_fn)(MPI_Fint *, MPI_Fint *);
extern int kumi_shim_op_create_ctx(void *, void *, int, void *);
extern int kumi_shim_errhandler_create_ctx(int, void *, void *, void *);
enum { FSHIM_ERRH_COMM = 1, FSHIM_ERRH_WIN = 2, FSHIM_ERRH_FILE = 3 };   /* kumi/abi.h KUMI_ABI_ERRH_* */''']
        if self.ident:
            out.append('''static void fshim_op_ctx(void *in, void *io, int *len, int *dt, void *fn)
{
    MPI_Fint f = *dt;
    ((fshim_user_fn *)fn)(in, io, len, &f);
}
static void fshim_comm_eh_ctx(void *h, int *code, void *fn)
{
    MPI_Fint f = *(int *)h, c = *code;
    ((fshim_eh_fn *)fn)(&f, &c);
}
static void fshim_win_eh_ctx(void *h, int *code, void *fn)
{
    MPI_Fint f = *(int *)h, c = *code;
    ((fshim_eh_fn *)fn)(&f, &c);
}
static void fshim_file_eh_ctx(void *h, int *code, void *fn)
{
    MPI_Fint f = c2f_File(*(void **)h), c = *code;   /* MPI_File: a pointer in this ABI too */
    ((fshim_eh_fn *)fn)(&f, &c);
}''')
        else:
            out.append('''static void fshim_op_ctx(void *in, void *io, int *len, void **dt, void *fn)
{
    MPI_Fint f = c2f_Type(*dt);
    ((fshim_user_fn *)fn)(in, io, len, &f);
}
static void fshim_comm_eh_ctx(void *h, int *code, void *fn)
{
    MPI_Fint f = c2f_Comm(*(void **)h), c = *code;
    ((fshim_eh_fn *)fn)(&f, &c);
}
static void fshim_win_eh_ctx(void *h, int *code, void *fn)
{
    MPI_Fint f = c2f_Win(*(void **)h), c = *code;
    ((fshim_eh_fn *)fn)(&f, &c);
}
static void fshim_file_eh_ctx(void *h, int *code, void *fn)
{
    MPI_Fint f = c2f_File(*(void **)h), c = *code;
    ((fshim_eh_fn *)fn)(&f, &c);
}''')
        return '\n'.join(out)

    def sentinel_test(self, var, names):
        parts = []
        for n in names:
            cv = self.cval(n)
            sym, off = self.ff.get('sentinels', {}).get(n, (COMMON_OF[n], 0))
            at = '(void *)%s' % sym if off == 0 else '(void *)((char *)%s + %d)' % (sym, off)
            c = self.facts['constants'][n]
            if cv is None and c.get('symbol') and c.get('type', '').endswith('*'):
                # a C sentinel that is the value of a data object of the C shim (MPICH's
                # MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY: int *const)
                if c['symbol'] not in self.csyms:
                    self.csyms.add(c['symbol'])
                    self.out.append('extern %s const %s;' % (c['type'].replace('*', ' *'), c['symbol']))
                if sym in self.ff['commons']:
                    parts.append('%s == %s ? (void *)%s' % (var, at, c['symbol']))
            elif sym in self.ff['commons'] and cv is not None:
                parts.append('%s == %s ? (void *)(intptr_t)%d' % (var, at, cv))
        return parts

    def exports(self, name, ret, params, body, hidden=False):
        """The body as ompi_X_f plus every spelling the foreign library exports (hidden: only
        the profiling spelling, not exported: a large-count form for use mpi_f08, which the
        f08 part of the same library calls; mpif.h has none)."""
        low = name.lower()
        o = self.out
        o.append('static %s fshim_%s(%s)\n{\n%s\n}' % (ret, low, params or 'void', body))
        self.sigs[low] = [ret, params]
        if hidden:
            o.append('__attribute__((visibility("hidden"))) %s %s%s_(%s) __attribute__((alias("fshim_%s")));'
                     % (ret, 'p' if self.ff.get('profiling') else '', low, params or 'void', low))
            return
        for sp in self.ff['spellings']:
            for pre in ([''] + (['p'] if self.ff.get('profiling') else [])):
                sym = {'lower': pre + low, 'lower_': pre + low + '_', 'lower__': pre + low + '__',
                       'upper': (pre + low).upper()}[sp]
                o.append('FSHIM_EXPORT %s %s(%s) __attribute__((alias("fshim_%s")));' % (ret, sym, params or 'void', low))

    def gen(self, p, hidden=False):
        name = p['c'].split('(')[0].split()[-1]
        f90 = p.get('f90') or ''
        m = re.match(r'\s*\w+\((.*?)\)', f90)
        fargs = [x.strip() for x in m.group(1).split(',')] if m and m.group(1).strip() else []
        cps = p['c_params']
        if not p['c'].startswith('int '):
            return 'returns no error code'
        if len(fargs) != len(cps) + 1 or fargs[-1] != 'IERROR':
            return 'Fortran arguments differ from C ones'
        params, pre, call, post, lens, frees = [], [], [], [], [], []
        stk = {}   # array name -> C type of its entries: converted on the stack up to FSHIM_STACK entries
        for q in cps:
            n, t, k, arr, d = q['name'], q['type'].replace('const ', ''), q['kind'], q['array'] != '', q['direction']
            din = 'IN' in d.split('.')[-1]
            dout = 'OUT' in d.split('.')[-1]
            base = t.rstrip('*').strip()
            ptr = t.count('*')
            if k in ('FUNCTION', 'POLYFUNCTION') or 'function' in t:
                return 'callback (%s) not translated yet' % n
            if k.startswith('ATTRIBUTE_VAL') or k in ('EXTRA_STATE', 'EXTRA_STATE2'):
                return 'attribute values not translated yet'
            if t in ('char***', 'char**') or k in ('ARGUMENT_COUNT', 'ARGUMENT_LIST', 'VARARGS'):
                return 'argument lists'
            if k in ('BUFFER', 'C_BUFFER', 'C_BUFFER2') and t == 'void*':
                params.append('void *%s' % n)
                tests = self.sentinel_test(n, SENTINEL_OF_KIND[k])
                call.append('(%s)' % ' : '.join(tests + [n]) if tests else n)
            elif base == 'char' and k == 'STRING' and ((not arr and ptr == 1) or (arr and ptr == 0)):
                params.append('char *%s' % n)
                lens.append('size_t %s_len' % n)
                if dout and not din:
                    vl = [c['name'] for c in cps if c['kind'] == 'INFO_VALUE_LENGTH' and c['type'] == 'int']
                    extra = '(size_t)(*%s > 0 ? *%s : 0) + ' % (vl[0], vl[0]) if vl else ''
                    pre.append('    char *%s_c = malloc(%s%s_len + 4097);\n    if (!%s_c) { *ierror = FSHIM_ERR_NO_MEM; goto out; }\n    %s_c[0] = 0;' % (n, extra, n, n, n))
                    # a value that is not there (flag false) leaves the program's string as it was
                    hasflag = any(c['name'] == 'flag' and c['kind'] == 'LOGICAL' for c in cps)
                    post.append('    if (rc == 0%s) fstr_out(%s, %s_len, %s_c);' % (' && flag_c' if hasflag else '', n, n, n))
                else:
                    pre.append('    char *%s_c = fstr_in(%s, %s_len);\n    if (!%s_c) { *ierror = FSHIM_ERR_NO_MEM; goto out; }' % (n, n, n, n))
                frees.append('free(%s_c);' % n)
                call.append('%s_c' % n)
            elif base == 'char':
                return 'string arrays'
            elif base in HANDLES and HANDLES[base] in self.ident:
                # declared void * like the others (the C shim reads an int from the register
                # / writes ints where it points)
                params.append('MPI_Fint *%s' % n)
                call.append('(void *)%s' % n if arr or ptr else 'f2c_%s(*%s)' % (HANDLES[base], n))
            elif base in HANDLES:
                kk = HANDLES[base]
                if arr:
                    params.append('MPI_Fint *%s' % n)
                    cnt = self.count_expr(q, cps, name)
                    if cnt is None:
                        return 'array %s of unknown length' % n
                    pre.append('    int %s_n = %s;\n    void **%s_c = %s_n <= FSHIM_STACK ? %s_stk : malloc(sizeof(void *) * (size_t)%s_n);\n'
                               '    if (!%s_c) { *ierror = FSHIM_ERR_NO_MEM; goto out; }' % (n, cnt, n, n, n, n, n))
                    stk[n] = 'void *'
                    if din:
                        pre.append('    for (int i = 0; i < %s_n; i++) %s_c[i] = f2c_%s(%s[i]);' % (n, n, kk, n))
                    if dout:
                        post.append('    for (int i = 0; i < %s_n; i++) %s[i] = c2f_%s(%s_c[i]);' % (n, n, kk, n))
                    frees.append('free(%s_c);' % n)
                    call.append('%s_c' % n)
                elif ptr == 0:
                    params.append('MPI_Fint *%s' % n)
                    call.append('f2c_%s(*%s)' % (kk, n))
                else:
                    params.append('MPI_Fint *%s' % n)
                    pre.append('    void *%s_c = %s;' % (n, 'f2c_%s(*%s)' % (kk, n) if din else '0'))
                    call.append('&%s_c' % n)
                    # in-out handles (requests, freed objects) come back always, new ones on success
                    post.append(('    *%s = c2f_%s(%s_c);' if din else '    if (rc == 0) *%s = c2f_%s(%s_c);') % (n, kk, n))
            elif base == 'MPI_Status':
                params.append('MPI_Fint *%s' % n)
                tests = self.sentinel_test(n, SENTINEL_OF_KIND['STATUS[]' if arr else 'STATUS'])
                call.append('(%s)' % ' : '.join(tests + [n]) if tests else n)
            elif base == 'int' and k == 'LOGICAL':
                params.append('MPI_Fint *%s' % n)
                if arr:
                    cnt = self.count_expr(q, cps, name)
                    if cnt is None:
                        return 'array %s of unknown length' % n
                    pre.append('    int %s_n = %s;\n    int *%s_c = %s_n <= FSHIM_STACK ? %s_stk : malloc(sizeof(int) * (size_t)%s_n);\n'
                               '    if (!%s_c) { *ierror = FSHIM_ERR_NO_MEM; goto out; }' % (n, cnt, n, n, n, n, n))
                    stk[n] = 'int '
                    if din:
                        pre.append('    for (int i = 0; i < %s_n; i++) %s_c[i] = %s[i] != 0;' % (n, n, n))
                    if dout:
                        post.append('    if (rc == 0) for (int i = 0; i < %s_n; i++) %s[i] = %s_c[i] ? FSHIM_TRUE : 0;' % (n, n, n))
                    frees.append('free(%s_c);' % n)
                    call.append('%s_c' % n)
                elif ptr == 0:
                    call.append('*%s != 0' % n)
                else:
                    pre.append('    int %s_c = 0;' % n)
                    call.append('&%s_c' % n)
                    post.append('    if (rc == 0) *%s = %s_c ? FSHIM_TRUE : 0;' % (n, n))
            elif base in SCALAR_C:
                ct = SCALAR_C[base]
                if arr or ptr:
                    params.append('%s *%s' % (ct, n))
                    if k == 'WEIGHT':
                        tests = self.sentinel_test(n, SENTINEL_OF_KIND['WEIGHT[]'])
                        call.append('(%s)' % ' : '.join(tests + [n]) if tests else n)
                    else:
                        call.append(n)
                else:
                    params.append('%s *%s' % (ct, n))
                    call.append('*%s' % n)
            else:
                return 'parameter %s of type %s' % (n, t)
        undef = self.cval('MPI_UNDEFINED')
        if name in ('MPI_Waitany', 'MPI_Testany'):     # Fortran indices start at 1
            post.append('    if (rc == 0 && *index != %d && *index >= 0) *index += 1;' % undef)
        elif name in ('MPI_Waitsome', 'MPI_Testsome'):
            post.append('    if (rc == 0 && *outcount != %d) for (int i = 0; i < *outcount; i++) array_of_indices[i] += 1;' % undef)
        params.append('MPI_Fint *ierror')
        cdecl = ', '.join(self.c_param_type(q) for q in cps)
        self.out.append('extern int P%s(%s);' % (name, cdecl or 'void'))
        body = []
        body += pre
        body.append('    int rc = P%s(%s);' % (name, ', '.join(call)))
        body += post
        body.append('    *ierror = rc;')
        if pre and any('goto out' in x for x in pre):
            body.append('    goto out;\nout:')
        body += ['    if (%s != %s_stk) %s' % (f[5:-2], f[5:-4], f) if f[5:-4] in stk else '    ' + f for f in frees]
        body.append('    return;')
        text = '\n'.join(body)
        # declare every temporary at the top, so that an early `goto out` frees only NULLs
        decls = []
        for f in frees:
            v = f[5:-2]
            decls.append(v)
        for v in decls:
            text = re.sub(r'\b(char|void|int) (\*+)%s = ' % re.escape(v), r'%s = ' % v, text, count=1)
        typed = []
        for v in decls:
            kind = 'void **' if any(('void **%s' % v) in x for x in pre) else 'int *' if any(('int *%s' % v) in x for x in pre) else 'char *'
            typed.append('    %s%s = 0;' % (kind, v))
            if v[:-2] in stk:
                typed.append('    %s%s_stk[FSHIM_STACK];' % (stk[v[:-2]], v[:-2]))
        self.exports(name, 'void', ', '.join(params + lens), '\n'.join(typed + [text]), hidden)
        return None

    def c_param_type(self, q):
        t = q['type'].replace('const ', '')
        base = t.rstrip('*').strip()
        ptr = t.count('*') + (1 if q['array'] else 0)
        if base in HANDLES:
            return 'void ' + '*' * (ptr + 1)
        if base == 'MPI_Status':
            return 'void *'
        if base in SCALAR_C:
            return SCALAR_C[base] + ' ' + '*' * ptr
        if base == 'char':
            return 'char ' + '*' * ptr
        return 'void ' + '*' * max(ptr, 1)

    def count_expr(self, q, cps, name=''):
        """How many elements an array argument has (the API data says only '[]')."""
        names = [c['name'] for c in cps]
        n = q['name']
        if n == 'remain_dims':
            return 'fshim_cartdim(f2c_Comm(*comm))'
        if n in ('sendtypes', 'recvtypes') and 'comm' in names and 'sendcounts' in names:
            if 'Neighbor' in name:
                return 'fshim_degree(f2c_Comm(*comm), %d)' % (n == 'sendtypes')
            return 'fshim_peers(f2c_Comm(*comm))'
        for c in ('count', 'incount', 'ndims', 'maxdims', 'max_datatypes'):
            if c in names:
                return '*' + c
        return None

    def attributes(self):
        """Attributes: Fortran's values are INTEGER(KIND=MPI_ADDRESS_KIND) (INTEGER for the
        deprecated MPI_ATTR_GET / PUT), a predefined attribute's C value points at it; the
        program's copy / delete procedures are called through C trampolines whose
        extra_state carries them; the predefined MPI_*_DUP_FN, NULL_COPY_FN, NULL_DELETE_FN
        (Open MPI keeps them in libmpi.so.40, the C shim does not) are defined here."""
        o = self.out
        ci = lambda n: self.cval(n)
        comm_int = ' || '.join('k == %d' % ci(n) for n in ('MPI_TAG_UB', 'MPI_HOST', 'MPI_IO', 'MPI_WTIME_IS_GLOBAL',
                                                             'MPI_UNIVERSE_SIZE', 'MPI_APPNUM', 'MPI_LASTUSEDCODE'))
        win_int = ' || '.join('k == %d' % ci(n) for n in ('MPI_WIN_DISP_UNIT', 'MPI_WIN_CREATE_FLAVOR', 'MPI_WIN_MODEL'))
        o.append('''/* ---- attributes */
typedef void (fshim_copy_fn)(MPI_Fint *, MPI_Fint *, intptr_t *, intptr_t *, intptr_t *, MPI_Fint *, MPI_Fint *);
typedef void (fshim_delete_fn)(MPI_Fint *, MPI_Fint *, intptr_t *, intptr_t *, MPI_Fint *);
struct fshim_keyval { fshim_copy_fn *copy; fshim_delete_fn *del; intptr_t extra; };
static intptr_t fshim_attr_value(int win, int k, void *v)
{
    if (!win && (%(ci)s)) return *(int *)v;
    if (win && (%(wi)s)) return *(int *)v;
    if (win && k == %(ws)d) return *(intptr_t *)v;
    return (intptr_t)v;
}''' % {'ci': comm_int, 'wi': win_int, 'ws': ci('MPI_WIN_SIZE')})
        # predefined keyvals whose Fortran value is not the C one (MPICH's are the C value + 1)
        kvmap = {}
        for n in ('MPI_TAG_UB', 'MPI_HOST', 'MPI_IO', 'MPI_WTIME_IS_GLOBAL', 'MPI_UNIVERSE_SIZE', 'MPI_APPNUM',
                  'MPI_LASTUSEDCODE', 'MPI_WIN_BASE', 'MPI_WIN_SIZE', 'MPI_WIN_DISP_UNIT', 'MPI_WIN_CREATE_FLAVOR',
                  'MPI_WIN_MODEL'):
            fv = self.ff['constants'].get(n)
            if fv is not None and ci(n) is not None and fv != ci(n):
                kvmap[fv] = (ci(n), n)
        kv = '*keyval'
        if kvmap:
            kv = 'fshim_kv(*keyval)'
            o.append('/* a Fortran keyval -> the C one */\nstatic int fshim_kv(int k)\n{\n    switch (k) {')
            o.extend('    case %d: return %d;   /* %s */' % (f, c, n) for f, (c, n) in sorted(kvmap.items()))
            o.append('    }\n    return k;\n}')
        for kind, win in (('Comm', 0), ('Type', 0), ('Win', 1)):
            low = kind.lower()
            for role, body in (('null_copy_fn', '*flag = 0; *ierr = 0;'),
                               ('dup_fn', '*out = *in; *flag = FSHIM_TRUE; *ierr = 0;')):
                o.append('void fshim_%s_%s(MPI_Fint *o, MPI_Fint *k, intptr_t *e, intptr_t *in, intptr_t *out, MPI_Fint *flag, MPI_Fint *ierr) { %s }'
                         % (low, role, body))
                self.alias_all('mpi_%s_%s' % (low, role), 'void', 'MPI_Fint *o, MPI_Fint *k, intptr_t *e, intptr_t *in, intptr_t *out, MPI_Fint *flag, MPI_Fint *ierr', 'fshim_%s_%s' % (low, role))
            o.append('void fshim_%s_null_delete_fn(MPI_Fint *o, MPI_Fint *k, intptr_t *v, intptr_t *e, MPI_Fint *ierr) { *ierr = 0; }' % low)
            self.alias_all('mpi_%s_null_delete_fn' % low, 'void', 'MPI_Fint *o, MPI_Fint *k, intptr_t *v, intptr_t *e, MPI_Fint *ierr', 'fshim_%s_null_delete_fn' % low)
            o.append('''extern int PMPI_%(K)s_create_keyval(void *, void *, int *, void *);
extern int PMPI_%(K)s_set_attr(void *, int, void *);
extern int PMPI_%(K)s_get_attr(void *, int, void *, int *);
static int fshim_%(k)s_copy(void *o, int k, void *extra, void *in, void *out, int *flag)
{
    struct fshim_keyval *kv = extra;
    MPI_Fint fo = c2f_%(K)s(o), fk = k, ff = 0, ierr = 0;
    intptr_t vin = (intptr_t)in, vout = 0;
    kv->copy(&fo, &fk, &kv->extra, &vin, &vout, &ff, &ierr);
    *flag = ff != 0;
    if (ff) *(void **)out = (void *)vout;
    return ierr;
}
static int fshim_%(k)s_delete(void *o, int k, void *val, void *extra)
{
    struct fshim_keyval *kv = extra;
    MPI_Fint fo = c2f_%(K)s(o), fk = k, ierr = 0;
    intptr_t v = (intptr_t)val;
    kv->del(&fo, &fk, &v, &kv->extra, &ierr);
    return ierr;
}''' % {'K': kind, 'k': low})
            self.exports('MPI_%s_create_keyval' % kind, 'void', 'void *copy, void *del, MPI_Fint *keyval, intptr_t *extra, MPI_Fint *ierror', '''    struct fshim_keyval *kv = malloc(sizeof *kv);   /* kept: callbacks may run after the keyval's free */
    if (!kv) { *ierror = FSHIM_ERR_NO_MEM; return; }
    kv->copy = (fshim_copy_fn *)copy;
    kv->del = (fshim_delete_fn *)del;
    kv->extra = *extra;
    int k = -1;
    *ierror = PMPI_%(K)s_create_keyval((void *)fshim_%(k)s_copy, (void *)fshim_%(k)s_delete, &k, kv);
    if (*ierror) free(kv);
    else *keyval = k;''' % {'K': kind, 'k': low})
            self.exports('MPI_%s_set_attr' % kind, 'void', 'MPI_Fint *o, MPI_Fint *keyval, intptr_t *val, MPI_Fint *ierror',
                         '    *ierror = PMPI_%s_set_attr(f2c_%s(*o), %s, (void *)*val);' % (kind, kind, kv))
            self.exports('MPI_%s_get_attr' % kind, 'void', 'MPI_Fint *o, MPI_Fint *keyval, intptr_t *val, MPI_Fint *flag, MPI_Fint *ierror', '''    void *v = 0;
    int f = 0;
    *ierror = PMPI_%(K)s_get_attr(f2c_%(K)s(*o), %(kv)s, &v, &f);
    if (*ierror == 0) {
        *flag = f ? FSHIM_TRUE : 0;
        if (f) *val = fshim_attr_value(%(win)d, %(kv)s, v);
    }''' % {'K': kind, 'win': win, 'kv': kv})
        # MPI-1 (deprecated): INTEGER values, on communicators
        self.exports('MPI_Attr_put', 'void', 'MPI_Fint *o, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *ierror',
                     '    *ierror = PMPI_Comm_set_attr(f2c_Comm(*o), %s, (void *)(intptr_t)*val);' % kv)
        self.exports('MPI_Attr_get', 'void', 'MPI_Fint *o, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *flag, MPI_Fint *ierror', '''    void *v = 0;
    int f = 0;
    *ierror = PMPI_Comm_get_attr(f2c_Comm(*o), %(kv)s, &v, &f);
    if (*ierror == 0) {
        *flag = f ? FSHIM_TRUE : 0;
        if (f) *val = (MPI_Fint)fshim_attr_value(0, %(kv)s, v);
    }''' % {'kv': kv})

    def removed(self):
        """The MPI-1 procedures that MPI-3 removed and Open MPI 4.x still exports (old Fortran
        code uses them): on their successors, with INTEGER addresses and attribute values."""
        self.removed_done = []
        have = self.fprocs
        o = self.out
        def add(name, params, body, decl=None):
            if name.lower() not in have:
                return
            if decl:
                o.append(decl)
            self.exports(name, 'void', params, body)
            self.removed_done.append(name)
            self.exported.append(name)
            self.skipped = [(n, w) for n, w in self.skipped if n.lower() != name.lower()]
        add('MPI_ADDRESS', 'void *location, MPI_Fint *address, MPI_Fint *ierror', '''    intptr_t a = 0;
    *ierror = PMPI_Get_address(location, &a);
    if (*ierror == 0) *address = (MPI_Fint)a;''')
        o.append('extern int PMPI_Type_get_extent(void *, intptr_t *, intptr_t *);')
        for name, expr in (('MPI_TYPE_EXTENT', 'e'), ('MPI_TYPE_LB', 'lb'), ('MPI_TYPE_UB', 'lb + e')):
            add(name, 'MPI_Fint *datatype, MPI_Fint *v, MPI_Fint *ierror', '''    intptr_t lb = 0, e = 0;
    *ierror = PMPI_Type_get_extent(f2c_Type(*datatype), &lb, &e);
    if (*ierror == 0) *v = (MPI_Fint)(%s);''' % expr)
        add('MPI_TYPE_HVECTOR', 'MPI_Fint *count, MPI_Fint *blocklength, MPI_Fint *stride, MPI_Fint *oldtype, MPI_Fint *newtype, MPI_Fint *ierror',
            '''    void *t = 0;
    *ierror = PMPI_Type_create_hvector(*count, *blocklength, (intptr_t)*stride, f2c_Type(*oldtype), &t);
    if (*ierror == 0) *newtype = c2f_Type(t);''', 'extern int PMPI_Type_create_hvector(int, int, intptr_t, void *, void **);')
        add('MPI_TYPE_HINDEXED', 'MPI_Fint *count, MPI_Fint *blens, MPI_Fint *displs, MPI_Fint *oldtype, MPI_Fint *newtype, MPI_Fint *ierror',
            '''    int n = *count > 0 ? *count : 0;
    intptr_t *d = malloc(sizeof *d * (n ? n : 1));
    if (!d) { *ierror = FSHIM_ERR_NO_MEM; return; }
    for (int i = 0; i < n; i++) d[i] = displs[i];
    void *t = 0;
    *ierror = PMPI_Type_create_hindexed(*count, blens, d, f2c_Type(*oldtype), &t);
    free(d);
    if (*ierror == 0) *newtype = c2f_Type(t);''')
        # MPI_LB / MPI_UB (removed types) are markers: the struct of the other entries, resized
        fc = self.ff['constants']
        add('MPI_TYPE_STRUCT', 'MPI_Fint *count, MPI_Fint *blens, MPI_Fint *displs, MPI_Fint *types, MPI_Fint *newtype, MPI_Fint *ierror',
            '''    int n = *count > 0 ? *count : 0, m = 0, haslb = 0, hasub = 0;
    intptr_t *d = malloc(sizeof *d * (n ? n : 1)), lb = 0, ub = 0;
    void **ty = malloc(sizeof *ty * (n ? n : 1));
    int *bl = malloc(sizeof *bl * (n ? n : 1));
    if (!d || !ty || !bl) { free(d); free(ty); free(bl); *ierror = FSHIM_ERR_NO_MEM; return; }
    for (int i = 0; i < n; i++) {
        if (types[i] == %(lb)d) { if (!haslb || displs[i] < lb) lb = displs[i]; haslb = 1; continue; }
        if (types[i] == %(ub)d) { if (!hasub || displs[i] > ub) ub = displs[i]; hasub = 1; continue; }
        d[m] = displs[i]; bl[m] = blens[i]; ty[m] = f2c_Type(types[i]); m++;
    }
    void *t = 0;
    *ierror = PMPI_Type_create_struct(haslb || hasub ? m : *count, bl, d, ty, &t);
    free(d); free(ty); free(bl);
    if (*ierror == 0 && (haslb || hasub)) {
        intptr_t l = 0, e = 0;
        void *r = 0;
        *ierror = PMPI_Type_get_extent(t, &l, &e);
        if (*ierror == 0) {
            if (!hasub) ub = l + e;
            if (!haslb) lb = m ? l : ub;
            *ierror = PMPI_Type_create_resized(t, lb, ub - lb, &r);
        }
        PMPI_Type_free(&t);
        t = r;
    }
    if (*ierror == 0) *newtype = c2f_Type(t);''' % {'lb': fc.get('MPI_LB', -999), 'ub': fc.get('MPI_UB', -999)}
            if 'Type' not in self.ident else '''    int n = *count > 0 ? *count : 0, m = 0, haslb = 0, hasub = 0;
    intptr_t *d = malloc(sizeof *d * (n ? n : 1)), lb = 0, ub = 0;
    int *ty = malloc(sizeof *ty * (n ? n : 1));
    int *bl = malloc(sizeof *bl * (n ? n : 1));
    if (!d || !ty || !bl) { free(d); free(ty); free(bl); *ierror = FSHIM_ERR_NO_MEM; return; }
    for (int i = 0; i < n; i++) {
        if (types[i] == %(lb)d) { if (!haslb || displs[i] < lb) lb = displs[i]; haslb = 1; continue; }
        if (types[i] == %(ub)d) { if (!hasub || displs[i] > ub) ub = displs[i]; hasub = 1; continue; }
        d[m] = displs[i]; bl[m] = blens[i]; ty[m] = types[i]; m++;
    }
    void *t = 0;
    *ierror = PMPI_Type_create_struct(haslb || hasub ? m : *count, bl, d, (void *)(haslb || hasub ? ty : types), &t);
    free(d); free(ty); free(bl);
    if (*ierror == 0 && (haslb || hasub)) {
        intptr_t l = 0, e = 0;
        void *r = 0;
        *ierror = PMPI_Type_get_extent(t, &l, &e);
        if (*ierror == 0) {
            if (!hasub) ub = l + e;
            if (!haslb) lb = m ? l : ub;
            *ierror = PMPI_Type_create_resized(t, lb, ub - lb, &r);
        }
        PMPI_Type_free(&t);
        t = r;
    }
    if (*ierror == 0) *newtype = c2f_Type(t);''' % {'lb': fc.get('MPI_LB', -999), 'ub': fc.get('MPI_UB', -999)})
        add('MPI_ERRHANDLER_SET', 'MPI_Fint *comm, MPI_Fint *eh, MPI_Fint *ierror',
            '    *ierror = PMPI_Comm_set_errhandler(f2c_Comm(*comm), f2c_Errhandler(*eh));',
            'extern int PMPI_Comm_set_errhandler(void *, void *);\nextern int PMPI_Comm_get_errhandler(void *, void **);')
        add('MPI_ERRHANDLER_GET', 'MPI_Fint *comm, MPI_Fint *eh, MPI_Fint *ierror', '''    void *h = 0;
    *ierror = PMPI_Comm_get_errhandler(f2c_Comm(*comm), &h);
    if (*ierror == 0) *eh = c2f_Errhandler(h);''')
        add('MPI_ERRHANDLER_CREATE', 'void *fn, MPI_Fint *errhandler, MPI_Fint *ierror', '''    void *h = 0;
    *ierror = kumi_shim_errhandler_create_ctx(FSHIM_ERRH_COMM, (void *)fshim_comm_eh_ctx, fn, &h);
    if (*ierror == 0) *errhandler = c2f_Errhandler(h);''')
        if 'mpi_keyval_create' in have:
            # MPI-1 keyvals: INTEGER extra state and values; callbacks of INTEGER arguments
            o.append('''typedef void (fshim_copy1_fn)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (fshim_delete1_fn)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
struct fshim_keyval1 { fshim_copy1_fn *copy; fshim_delete1_fn *del; MPI_Fint extra; };
static int fshim_copy1(void *o, int k, void *extra, void *in, void *out, int *flag)
{
    struct fshim_keyval1 *kv = extra;
    MPI_Fint fo = c2f_Comm(o), fk = k, ff = 0, ierr = 0, vin = (MPI_Fint)(intptr_t)in, vout = 0;
    kv->copy(&fo, &fk, &kv->extra, &vin, &vout, &ff, &ierr);
    *flag = ff != 0;
    if (ff) *(void **)out = (void *)(intptr_t)vout;
    return ierr;
}
static int fshim_delete1(void *o, int k, void *val, void *extra)
{
    struct fshim_keyval1 *kv = extra;
    MPI_Fint fo = c2f_Comm(o), fk = k, ierr = 0, v = (MPI_Fint)(intptr_t)val;
    kv->del(&fo, &fk, &v, &kv->extra, &ierr);
    return ierr;
}''')
            for role, body in (('null_copy_fn', '*flag = 0; *ierr = 0;'), ('dup_fn', '*out = *in; *flag = FSHIM_TRUE; *ierr = 0;')):
                o.append('void fshim1_%s(MPI_Fint *o, MPI_Fint *k, MPI_Fint *e, MPI_Fint *in, MPI_Fint *out, MPI_Fint *flag, MPI_Fint *ierr) { %s }' % (role, body))
                self.alias_all('mpi_' + role, 'void', 'MPI_Fint *o, MPI_Fint *k, MPI_Fint *e, MPI_Fint *in, MPI_Fint *out, MPI_Fint *flag, MPI_Fint *ierr', 'fshim1_' + role)
            o.append('void fshim1_null_delete_fn(MPI_Fint *o, MPI_Fint *k, MPI_Fint *v, MPI_Fint *e, MPI_Fint *ierr) { *ierr = 0; }')
            self.alias_all('mpi_null_delete_fn', 'void', 'MPI_Fint *o, MPI_Fint *k, MPI_Fint *v, MPI_Fint *e, MPI_Fint *ierr', 'fshim1_null_delete_fn')
            add('MPI_KEYVAL_CREATE', 'void *copy, void *del, MPI_Fint *keyval, MPI_Fint *extra, MPI_Fint *ierror', '''    struct fshim_keyval1 *kv = malloc(sizeof *kv);
    if (!kv) { *ierror = FSHIM_ERR_NO_MEM; return; }
    kv->copy = (fshim_copy1_fn *)copy;
    kv->del = (fshim_delete1_fn *)del;
    kv->extra = *extra;
    int k = -1;
    *ierror = PMPI_Comm_create_keyval((void *)fshim_copy1, (void *)fshim_delete1, &k, kv);
    if (*ierror) free(kv);
    else *keyval = k;''')

    def alias_all(self, low, ret, params, target):
        if low in self.fprocs and low.upper() not in self.exported:   # MPICH's MPI_COMM_DUP_FN, ...
            self.exported.append(low.upper())
        self.sigs[low] = [ret, params]
        for sym in self.spellings(low):
            self.out.append('FSHIM_EXPORT %s %s(%s) __attribute__((alias("%s")));' % (ret, sym, params, target))

    def cptr(self):
        """Open MPI's `use mpi` calls MPI_ALLOC_MEM, MPI_WIN_ALLOCATE, MPI_WIN_ALLOCATE_SHARED and
        MPI_WIN_SHARED_QUERY with a TYPE(C_PTR) baseptr as MPI_X_CPTR (mpi_alloc_mem_cptr_, ...):
        a C_PTR passed by reference is the address of a pointer-sized variable, as the
        INTEGER(KIND=MPI_ADDRESS_KIND) baseptr of MPI_X is, so MPI_X_CPTR is MPI_X (aliases)."""
        self.cptr_done = []
        for base in ('MPI_ALLOC_MEM', 'MPI_WIN_ALLOCATE', 'MPI_WIN_ALLOCATE_SHARED', 'MPI_WIN_SHARED_QUERY'):
            low = base.lower()
            if low + '_cptr' not in self.fprocs:
                continue
            decl = None
            for line in self.out:
                m = re.match(r'FSHIM_EXPORT void %s\((.*)\) __attribute__\(\(alias\("fshim_%s"\)\)\);$' % (low, low), line)
                if m:
                    decl = m.group(1)
                    break
            if decl is None:
                continue
            for sym in self.spellings(low + '_cptr'):
                self.out.append('FSHIM_EXPORT void %s(%s) __attribute__((alias("fshim_%s")));' % (sym, decl, low))
            self.exported.append(base + '_CPTR')
            self.cptr_done.append(base + '_CPTR')

    def status_f08(self):
        """MPI_Status_c2f08 / MPI_Status_f082c (C functions that MPICH's Fortran library exports,
        with PMPI_ twins): MPICH's MPI_F08_status is its C MPI_Status and its Fortran status
        field for field, so they are the C shim's MPI_Status_c2f / f2c (which copy, and refuse
        NULL and MPI_STATUS_IGNORE with MPI_ERR_ARG)."""
        have = set(self.facts.get('fortran', {}).get('functions', []))
        pairs = (('MPI_Status_c2f08', 'PMPI_Status_c2f', 'const void *c, void *f', 'c, f'),
                 ('MPI_Status_f082c', 'PMPI_Status_f2c', 'const void *f, void *c', 'f, c'))
        for name, target, params, args in pairs:
            if name not in have:
                continue
            self.out.append('extern int %s(const void *, void *);' % target)
            self.out.append('FSHIM_EXPORT int P%s(%s) { return %s(%s); }' % (name, params, target, args))
            self.out.append('FSHIM_EXPORT int %s(%s) __attribute__((alias("P%s")));' % (name, params, name))
            self.exported.append(name)

    def spellings(self, low):
        out = []
        for sp in self.ff['spellings']:
            for pre in ([''] + (['p'] if self.ff.get('profiling') else [])):
                out.append({'lower': pre + low, 'lower_': pre + low + '_', 'lower__': pre + low + '__',
                            'upper': (pre + low).upper()}[sp])
        return out

    def special(self, name):
        o = self.out
        if name == 'MPI_Init':
            o.append('extern int PMPI_Init(int *, char ***);')
            self.exports(name, 'void', 'MPI_Fint *ierror', '    *ierror = PMPI_Init(0, 0);')
        elif name == 'MPI_Init_thread':
            o.append('extern int PMPI_Init_thread(int *, char ***, int, int *);')
            self.exports(name, 'void', 'MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror',
                         '    *ierror = PMPI_Init_thread(0, 0, *required, provided);')
        elif name in ('MPI_Wtime', 'MPI_Wtick'):
            o.append('extern double P%s(void);' % name)
            self.exports(name, 'double', '', '    return P%s();' % name)
        elif name == 'MPI_Op_create':
            self.exports(name, 'void', 'void *fn, MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierror', '''    void *h = 0;
    *ierror = kumi_shim_op_create_ctx((void *)fshim_op_ctx, fn, *commute != 0, &h);
    if (*ierror == 0) *op = c2f_Op(h);''')
        elif name == 'MPI_Register_datarep':
            # the Fortran conversion and extent procedures and extra state ride in the C
            # extra_state; MPI_CONVERSION_FN_NULL (where the foreign library has it) is a
            # procedure of this library, compared by address
            dt = 'int' if self.ident else 'void *'
            hasnull = 'mpi_conversion_fn_null' in self.fprocs
            if hasnull:
                self.exports('MPI_CONVERSION_FN_NULL', 'void', 'void *u, MPI_Fint *d, MPI_Fint *c, void *f, int64_t *p, intptr_t *x, MPI_Fint *ierror',
                             '    (void)u; (void)d; (void)c; (void)f; (void)p; (void)x;\n    *ierror = 0;')
                self.exported.append('MPI_CONVERSION_FN_NULL')
            o.append('''/* user data representations: Fortran conversion and extent procedures */
typedef void (fshim_conv_fn)(void *, MPI_Fint *, MPI_Fint *, void *, int64_t *, intptr_t *, MPI_Fint *);
typedef void (fshim_dext_fn)(MPI_Fint *, intptr_t *, intptr_t *, MPI_Fint *);
struct fshim_rep { fshim_conv_fn *rd, *wr; fshim_dext_fn *ext; intptr_t extra; };
extern int PMPI_Register_datarep(const char *, void *, void *, void *, void *);
static int fshim_rep_conv(fshim_conv_fn *fn, void *u, %(dt)s dt, int count, void *fb, int64_t pos, struct fshim_rep *r)
{
    MPI_Fint d = c2f_Type((void *)(intptr_t)dt), c = count, e = 0;
    int64_t p = pos;
    fn(u, &d, &c, fb, &p, &r->extra, &e);
    return e;
}
static int fshim_rep_read(void *u, %(dt)s dt, int count, void *fb, int64_t pos, void *x)
{
    return fshim_rep_conv(((struct fshim_rep *)x)->rd, u, dt, count, fb, pos, x);
}
static int fshim_rep_write(void *u, %(dt)s dt, int count, void *fb, int64_t pos, void *x)
{
    return fshim_rep_conv(((struct fshim_rep *)x)->wr, u, dt, count, fb, pos, x);
}
static int fshim_rep_extent(%(dt)s dt, intptr_t *extent, void *x)
{
    struct fshim_rep *r = x;
    MPI_Fint d = c2f_Type((void *)(intptr_t)dt), e = 0;
    intptr_t ext = 0;
    r->ext(&d, &ext, &r->extra, &e);
    if (e == 0) *extent = ext;
    return e;
}''' % {'dt': dt})
            null = ' || (void *)fn == (void *)fshim_mpi_conversion_fn_null' if hasnull else ''
            self.exports(name, 'void', 'const char *datarep, void *rd, void *wr, void *ext, intptr_t *extra, MPI_Fint *ierror, size_t datarep_len',
                         '''    char *rep = fstr_in(datarep, datarep_len);
    struct fshim_rep *r = malloc(sizeof *r);    /* kept: the representation lives as long as the process */
    if (!rep || !r) { free(rep); free(r); *ierror = FSHIM_ERR_NO_MEM; return; }
#define FSHIM_NULLFN(fn) (!(fn)%(null)s)
    r->rd = (fshim_conv_fn *)rd;
    r->wr = (fshim_conv_fn *)wr;
    r->ext = (fshim_dext_fn *)ext;
    r->extra = *extra;
    *ierror = PMPI_Register_datarep(rep, FSHIM_NULLFN(rd) ? NULL : (void *)fshim_rep_read,
                                    FSHIM_NULLFN(wr) ? NULL : (void *)fshim_rep_write, (void *)fshim_rep_extent, r);
#undef FSHIM_NULLFN
    if (*ierror) free(r);
    free(rep);''' % {'null': null})
        elif name in ('MPI_Comm_create_errhandler', 'MPI_Win_create_errhandler', 'MPI_File_create_errhandler'):
            kind = name.split('_')[1].lower()
            self.exports(name, 'void', 'void *fn, MPI_Fint *errhandler, MPI_Fint *ierror', '''    void *h = 0;
    *ierror = kumi_shim_errhandler_create_ctx(FSHIM_ERRH_%(K)s, (void *)fshim_%(k)s_eh_ctx, fn, &h);
    if (*ierror == 0) *errhandler = c2f_Errhandler(h);''' % {'k': kind, 'K': kind.upper()})
        elif name == 'MPI_Grequest_start':
            o.append('''/* generalized requests: the Fortran procedures and extra state ride in the C extra_state */
typedef void (fshim_gq_fn)(intptr_t *, MPI_Fint *, MPI_Fint *);
typedef void (fshim_gf_fn)(intptr_t *, MPI_Fint *);
typedef void (fshim_gc_fn)(intptr_t *, MPI_Fint *, MPI_Fint *);
struct fshim_greq { fshim_gq_fn *query; fshim_gf_fn *free; fshim_gc_fn *cancel; intptr_t extra; };
static int fshim_greq_query(void *e, void *status)
{
    struct fshim_greq *g = e;
    MPI_Fint ierr = 0;
    g->query(&g->extra, status, &ierr);   /* the C status is the Fortran one, byte for byte */
    return ierr;
}
static int fshim_greq_free(void *e)
{
    struct fshim_greq *g = e;
    MPI_Fint ierr = 0;
    g->free(&g->extra, &ierr);
    free(g);
    return ierr;
}
static int fshim_greq_cancel(void *e, int complete)
{
    struct fshim_greq *g = e;
    MPI_Fint ierr = 0, c = complete ? FSHIM_TRUE : 0;
    g->cancel(&g->extra, &c, &ierr);
    return ierr;
}
extern int PMPI_Grequest_start(void *, void *, void *, void *, void **);''')
            self.exports(name, 'void', 'void *query, void *freefn, void *cancel, intptr_t *extra, MPI_Fint *request, MPI_Fint *ierror', '''    struct fshim_greq *g = malloc(sizeof *g);
    if (!g) { *ierror = FSHIM_ERR_NO_MEM; return; }
    g->query = (fshim_gq_fn *)query; g->free = (fshim_gf_fn *)freefn; g->cancel = (fshim_gc_fn *)cancel;
    g->extra = *extra;
    void *r = 0;
    *ierror = PMPI_Grequest_start((void *)fshim_greq_query, (void *)fshim_greq_free, (void *)fshim_greq_cancel, g, &r);
    if (*ierror) free(g);
    else *request = c2f_Request(r);''')
        elif name in ('MPI_Comm_spawn', 'MPI_Comm_spawn_multiple'):
            self.spawn(name)
        elif name == 'MPI_Pcontrol':
            o.append('extern int PMPI_Pcontrol(const int, ...);')
            self.exports(name, 'void', 'MPI_Fint *level, MPI_Fint *ierror', '    *ierror = PMPI_Pcontrol(*level);')

    def spawn(self, name):
        """MPI_COMM_SPAWN(_MULTIPLE): Fortran string arrays.  ARGV(*) is a sequence of
        CHARACTER*(len) items ended by a blank one; ARRAY_OF_ARGV(COUNT, *) holds command i's
        j-th argument at (i, j) (column major: a stride of COUNT items), each command's list
        ended by a blank item; one hidden length per string argument, that of an item.  Commands
        lose their leading and trailing blanks, arguments their trailing ones (MPI-4.1 11.3.2).
        MPI_ARGV_NULL, MPI_ARGVS_NULL and MPI_ERRCODES_IGNORE are this ABI's sentinels (COMMON
        blocks, or places in one: MPICH's mpiprivc_), compared by address.  The NULL-terminated
        C arrays go to the C shim's PMPI_Comm_spawn(_multiple), which translates the info
        handles, the communicators and the error codes.  Of MPI_COMM_SPAWN_MULTIPLE, count and
        the arrays are significant at the root only: elsewhere nothing of them is read."""
        o = self.out
        sent = self.ff.get('sentinels', {})
        def at(n):
            sym, off = sent.get(n, (COMMON_OF.get(n, ''), 0))
            if sym not in self.ff['commons']:
                sys.exit('mkshim_fortran: no COMMON block of %s' % n)
            return '(const void *)%s' % sym if off == 0 else '(const void *)((char *)%s + %d)' % (sym, off)
        d = {'argv_null': at('MPI_ARGV_NULL'), 'argvs_null': at('MPI_ARGVS_NULL'), 'errs': at('MPI_ERRCODES_IGNORE'),
             'errign': self.cval('MPI_ERRCODES_IGNORE') or 0}
        ident = 'Comm' in self.ident
        # an intercommunicator out: the C shim writes an int (MPICH: the Fortran integer too) or a pointer
        d['icdecl'] = 'int ic = 0;' if ident else 'void *ic = 0;'
        d['icout'] = 'ic' if ident else 'c2f_Comm(ic)'
        # the info handles: this ABI's C handles are the Fortran integers (MPICH), or pointers
        d['infos'] = '(void **)array_of_info' if 'Info' in self.ident else 'infos'
        d['infoconv'] = '' if 'Info' in self.ident else '\n        infos[i] = f2c_Info(array_of_info[i]);'
        if not getattr(self, 'spawn_helpers', False):
            self.spawn_helpers = True
            o.append('''/* ---- MPI_COMM_SPAWN(_MULTIPLE): Fortran string arrays -> NULL-terminated C arrays */
static void fshim_argv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}
static int fshim_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ') return 0;
    return 1;
}
/* an argument: trailing blanks go (leading ones are the argument's) */
static char *fshim_arg_in(const char *s, size_t n)
{
    while (n > 0 && s[n - 1] == ' ') n--;
    char *c = malloc(n + 1);
    if (c) { memcpy(c, s, n); c[n] = 0; }
    return c;
}
/* the items base + k * stride (k = 0, 1, ...) of len characters, up to the first blank one;
 * a zero length has no items */
static char **fshim_argv_in(const char *base, size_t stride, size_t len, int *oom)
{
    size_t n = 0;
    while (len > 0 && !fshim_blank(base + n * stride, len)) n++;
    char **v = calloc(n + 1, sizeof *v);
    if (!v) { *oom = 1; return NULL; }
    for (size_t k = 0; k < n; k++)
        if (!(v[k] = fshim_arg_in(base + k * stride, len))) {
            fshim_argv_free(v);
            *oom = 1;
            return NULL;
        }
    return v;
}
#define FSHIM_ERRCODES(p) ((const void *)(p) == %(errs)s ? (int *)(intptr_t)%(errign)d : (int *)(p))''' % d)
        if name == 'MPI_Comm_spawn':
            o.append('extern int PMPI_Comm_spawn(const char *, char **, int, void *, int, void *, void *, int *);')
            self.exports(name, 'void', 'const char *command, const char *argv, MPI_Fint *maxprocs, MPI_Fint *info, MPI_Fint *root, '
                         'MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *array_of_errcodes, MPI_Fint *ierror, size_t command_len, size_t argv_len',
                         '''    int oom = 0;
    char *cmd = fstr_in(command, command_len);
    char **av = (const void *)argv == %(argv_null)s ? NULL : fshim_argv_in(argv, argv_len, argv_len, &oom);
    if (!cmd || oom) {
        free(cmd);
        fshim_argv_free(av);
        *ierror = FSHIM_ERR_NO_MEM;
        return;
    }
    %(icdecl)s
    int rc = PMPI_Comm_spawn(cmd, av, *maxprocs, f2c_Info(*info), *root, f2c_Comm(*comm), &ic,
                             FSHIM_ERRCODES(array_of_errcodes));
    if (rc == 0) *intercomm = %(icout)s;
    free(cmd);
    fshim_argv_free(av);
    *ierror = rc;''' % d)
            return
        o.append('extern int PMPI_Comm_spawn_multiple(int, char **, char ***, const int *, void **, int, void *, void *, int *);')
        self.exports(name, 'void', 'MPI_Fint *count, const char *array_of_commands, const char *array_of_argv, MPI_Fint *array_of_maxprocs, '
                     'MPI_Fint *array_of_info, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *array_of_errcodes, '
                     'MPI_Fint *ierror, size_t array_of_commands_len, size_t array_of_argv_len',
                     '''    int n = *count, oom = 0, rank = -1, rc;
    void *c = f2c_Comm(*comm);
    %(icdecl)s
    if (PMPI_Comm_rank(c, &rank) != 0 || rank != *root || n <= 0) {
        /* not the root (or a count the C shim refuses): nothing of the arrays is read */
        rc = PMPI_Comm_spawn_multiple(n > 0 ? n : 0, NULL, NULL, NULL, NULL, *root, c, &ic, FSHIM_ERRCODES(array_of_errcodes));
        if (rc == 0) *intercomm = %(icout)s;
        *ierror = rc;
        return;
    }
    int argvs_null = (const void *)array_of_argv == %(argvs_null)s;
    char **cmds = calloc((size_t)n, sizeof *cmds), ***argvs = calloc((size_t)n, sizeof *argvs);
    void **infos = calloc((size_t)n, sizeof *infos);
    if (!cmds || !argvs || !infos) oom = 1;
    for (int i = 0; i < n && !oom; i++) {
        if (!(cmds[i] = fstr_in(array_of_commands + (size_t)i * array_of_commands_len, array_of_commands_len))) oom = 1;
        if (!argvs_null)
            argvs[i] = fshim_argv_in(array_of_argv + (size_t)i * array_of_argv_len, (size_t)n * array_of_argv_len,
                                     array_of_argv_len, &oom);%(infoconv)s
    }
    if (oom) {
        rc = FSHIM_ERR_NO_MEM;
    } else {
        rc = PMPI_Comm_spawn_multiple(n, cmds, argvs_null ? NULL : argvs, array_of_maxprocs, %(infos)s, *root, c, &ic,
                                      FSHIM_ERRCODES(array_of_errcodes));
        if (rc == 0) *intercomm = %(icout)s;
    }
    for (int i = 0; cmds && i < n; i++) {
        free(cmds[i]);
        if (argvs) fshim_argv_free(argvs[i]);
    }
    free(cmds);
    free(argvs);
    free(infos);
    *ierror = rc;''' % d)

    def large_forms(self):
        """The large-count forms MPI_X_c (MPI 4.0) that the C shim exports (MPICH 4.0's): mpif.h
        and use mpi have none, but MPICH's use mpi_f08 has their _large procedures, whose
        INTEGER(KIND=MPI_COUNT_KIND) counts and INTEGER(KIND=MPI_ADDRESS_KIND) displacements are
        MPI_Count / MPI_Aint by reference; generated as the other entries, from the c_large
        prototype with the int form's kinds (mkshim.Gen.large), not exported: mkshim_f08.py
        calls them (pmpi_X_c_, hidden)."""
        import mkshim
        self.large = []
        for p in sorted(self.api['procedures'], key=lambda p: p['name']):
            if not p.get('c_large') or not p.get('c_params') or p['name'] not in self.fprocs:
                continue
            lp = mkshim.Gen.large(p) or mkshim.Gen.large_extra(p)
            if not lp or lp['name_c'] not in self.cexp:
                continue
            if lp['base'] in SPECIAL or lp['base'] in ATTR:
                self.skipped.append((lp['name_c'], 'large-count form of a procedure translated by hand'))
                continue
            why = self.gen(lp, hidden=True)
            if why:
                self.skipped.append((lp['name_c'], why))
            else:
                self.large.append(lp['name_c'])

    def run(self):
        self.prologue()
        for p in sorted(self.api['procedures'], key=lambda p: p['name']):
            if not p.get('c'):
                if p['name'] == 'mpi_f_sync_reg' and p['name'] in self.fprocs:   # a no-op for the compiler's sake
                    self.exports('MPI_F_SYNC_REG', 'void', 'void *buf', '    __asm__ volatile("" : : "r"(buf) : "memory");')
                    self.exported.append('MPI_F_SYNC_REG')
                elif p['name'] in self.fprocs:
                    self.skipped.append((p['name'].upper(), 'Fortran only'))
                continue
            name = p['c'].split('(')[0].split()[-1]
            low = name.lower()
            if low not in self.fprocs:
                continue     # not a Fortran procedure of this ABI
            if name in ('MPI_Aint_add', 'MPI_Aint_diff'):   # arithmetic, done here
                op = '+' if name.endswith('add') else '-'
                self.exports(name, 'intptr_t', 'intptr_t *a, intptr_t *b', '    return (intptr_t)((uintptr_t)*a %s (uintptr_t)*b);' % op)
                self.exported.append(name)
                continue
            if name not in self.cexp:
                self.skipped.append((name, 'not exported by the C shim'))
                continue
            if re.search(r'_(c2f|f2c)$', name):
                self.skipped.append((name, 'C only'))
                continue
            if name in ATTR:
                self.exported.append(name)     # attributes(), below
                continue
            if name in SPECIAL:
                self.special(name)
                self.exported.append(name)
                continue
            why = self.gen(p)
            if why:
                self.skipped.append((name, why))
            else:
                self.exported.append(name)
        self.large_forms()
        self.attributes()
        self.removed()
        self.cptr()
        self.status_f08()
        if self.ff.get('sizeof'):
            # MPI_SIZEOF of `use mpi` (MPICH: module procedures of the Fortran library, one per
            # type): the size is a fact of the type; the data (and a CHARACTER's hidden length)
            # are not read; IERROR is OPTIONAL in mpi_f08 (a null address)
            self.out.append('/* ---- MPI_SIZEOF (use mpi): one module procedure per type */')
            for sym, size in sorted(self.ff['sizeof'].items()):
                self.out.append('FSHIM_EXPORT void %s(void *x, MPI_Fint *size, MPI_Fint *ierror) { *size = %d; if (ierror) *ierror = 0; }'
                                % (sym, size))
            self.exported.append('MPI_SIZEOF')
        known = {p['name'] for p in self.api['procedures']} | {n.lower() for n in self.removed_done} | {n.lower() for n in self.exported}
        for low in sorted(self.fprocs - known):
            self.skipped.append((low.upper(), 'not in the API data (removed or %s extension)'
                                 % ('Open MPI' if self.facts['name'] == 'ompi' else self.facts['name'].upper())))
        self.load_check()
        return '\n'.join(self.out) + '\n'

    def load_check(self):
        """A program that needs a Fortran procedure this library does not export would fail at
        its first call (lazy binding) with a loader message; a constructor scans the imports
        of every object loaded with it and stops the program at start, naming them."""
        done = {n.lower() for n in self.exported}
        missing = sorted({sym for low in self.fprocs - done for sym in self.spellings(low)})
        self.out.append(load_check_text(missing, 'fshim', self.ff['library'], self.facts['name'], 'MPI Fortran'))



def main():
    ap = argparse.ArgumentParser()
    for n in ('api', 'native', 'facts', 'ffacts', 'c-coverage', 'out'):
        ap.add_argument('--' + n, required=True)
    ap.add_argument('--coverage')
    ap.add_argument('--sigs', help='write the C parameters of each exported procedure (JSON; mkshim_f08.py)')
    a = ap.parse_args()
    g = Gen(a)
    src = g.run()
    with open(a.out, 'w') as f:
        f.write(src)
    if a.sigs:
        with open(a.sigs, 'w') as f:
            f.write('{\n%s\n}\n' % ',\n'.join('%s: %s' % (json.dumps(k), json.dumps(v)) for k, v in sorted(g.sigs.items())))
    if a.coverage:
        by = {}
        for n, why in g.skipped:
            by.setdefault(why, []).append(n)
        with open(a.coverage, 'w') as f:
            f.write('%s Fortran shim (%s): %d procedures exported, %d not (of %d it exports)\nnot exported, by reason:\n'
                    % (g.facts['name'], g.ff['library'], len(g.exported), len(g.skipped), len(g.fprocs)))
            for why, ns in sorted(by.items(), key=lambda x: -len(x[1])):
                f.write('  %4d  %s: %s\n' % (len(ns), why, ' '.join(ns)))
            f.write('exported:\n  %s\n' % ' '.join(g.exported))
            if g.large:
                f.write('large-count forms for use mpi_f08 (not exported):\n  %s\n' % ' '.join(g.large))
    print('mkshim_fortran: %d exported, %d not, %d large-count forms' % (len(g.exported), len(g.skipped), len(g.large)),
          file=sys.stderr)


if __name__ == '__main__':
    main()
