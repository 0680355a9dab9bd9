#!/usr/bin/env python3
"""Generate Kumi's C entry points (MPI_* and their PMPI_* twins) from the MPI API data.

usage: mkbindings.py --procedures P.json --abi A.json --rules R.json --out-c bindings.c --out-h kumi_impl.h SRC.c...

For every procedure of the API data (and the MPI 5.0 additions in the ABI
facts) this writes the prototype of its implementation, kumi_mpi_<name>, to
kumi_impl.h.  For every implementation defined in the given sources (a line
starting "int kumi_mpi_<name>(" or another return type) it writes to
bindings.c:

  * PMPI_<Name>: checks the library state and the arguments the API data lets
    us check generically (communicator, datatype, op and error handler handles;
    counts; ranks; tags; roots; op/datatype pairs; null buffers), resolves
    handles to objects, calls the implementation and hands a failure to the
    communicator's error handler.  It first sets kumi_call (core.h), the call
    the thread is in (one store), after which the error handling names the
    error: one a component raised, "coll/tuned: out of memory", reaches the
    user as "MPI_Allreduce: coll/tuned: out of memory";
  * MPI_<Name>: a weak alias of PMPI_<Name> (the profiling interface).

What the API data does not say (which procedures run before MPI_Init or
without the lock, which rank check a rank parameter gets, which tags may be
MPI_ANY_TAG, where null buffers and op/datatype pairs are checked, which
handles may be null) comes from the binding rules, data/kumi-bindings.json
(read by kumirules.py; format in data/README.md): nothing is guessed from
parameter names.  The rules also name the families whose members differ only
in count width or in blocking / nonblocking / _init form (forward): for each
member that no source defines, bindings.c gets kumi_mpi_<name> as a call of
the family's shared implementation, declared in kumi_impl.h.  --check lists
the members that a source still defines by hand.  An output is rewritten only
when its content changes.

At MPI_THREAD_MULTIPLE each entry point holds the library lock (kumi_lock)
from after the state check to its return, error handler included.

Input scalar handles become object pointers in the implementation's signature:
MPI_Comm -> struct kumi_comm *, MPI_Datatype -> struct kumi_dt *,
MPI_Op -> struct kumi_op *, MPI_Errhandler -> struct kumi_errhandler *.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpiapi import IMPL_RE, all_prototypes, impl_name, load_api, parse_proto  # noqa: E402
from kumirules import RuleError, load_rules, match  # noqa: E402

CONVERT = {
    'MPI_Comm': ('struct kumi_comm *', 'kumi_comm_get', 'comm'),
    'MPI_Datatype': ('struct kumi_dt *', 'kumi_dt_get', 'datatype'),
    'MPI_Op': ('struct kumi_op *', 'kumi_op_get', 'op'),
    'MPI_Errhandler': ('struct kumi_errhandler *', 'kumi_errh_get', 'errhandler'),
    'MPI_Win': ('struct kumi_win *', 'kumi_win_get', 'win'),
    'MPI_File': ('struct kumi_file *', 'kumi_file_get', 'file'),
}

# Calls whose errors go to the handler of MPI_FILE_NULL (MPI-4.1 sec. 14.7):
# those that open or delete a file (no file handle yet).
FILE_NULL_CALLS = ('MPI_File_open', 'MPI_File_delete')

def param_decl(p, impl=False):
    if p['type'] == '...':
        return '...'
    t = p['type']
    if impl and not p['array'] and t in CONVERT:
        return '%s%s' % (CONVERT[t][0], p['name'])
    return '%s %s%s' % (t, p['name'], p['array'])


def write_if_changed(path, text):
    """Replace path by text only if it differs, so that an unchanged output keeps its
    time stamp and nothing that depends on it is rebuilt."""
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--procedures', required=True)
    ap.add_argument('--abi', required=True)
    ap.add_argument('--out-c')
    ap.add_argument('--out-h')
    ap.add_argument('--check', action='store_true',
                    help='write nothing; list the members of forwarded families that a source defines by hand '
                         '(exit status 1 if there are any)')
    ap.add_argument('--rules', required=True, help='the binding rules (data/kumi-bindings.json)')
    ap.add_argument('sources', nargs='*')
    a = ap.parse_args()

    api = load_api(a.procedures)
    abi = json.load(open(a.abi))
    procs = {}   # name -> (ret, params, kinds by param name)
    order = []
    for proto, kinds in all_prototypes(api, abi):
        ret, name, params = parse_proto(proto)
        if name not in procs:
            procs[name] = (ret, params, kinds)
            order.append(name)
    try:
        rules = load_rules(a.rules, procs)
    except RuleError as e:
        raise SystemExit('mkbindings: %s: %s' % (a.rules, e))

    implemented = {}   # kumi_mpi_<name> -> the source that defines (or declares) it
    for src in a.sources:
        for m in IMPL_RE.finditer(open(src).read()):
            implemented.setdefault('kumi_mpi_' + m.group(1), src)

    # implementations of forwarded families that no source defines
    targets = {}       # shared implementation -> (prototype, entry)
    forwarders = []
    includes = []
    by_hand = []
    for name in order:
        f = rules.get(name, {}).get('forward')
        if not f:
            continue
        try:
            proto, code = gen_forwarder(name, procs[name], f)
        except RuleError as e:
            raise SystemExit('mkbindings: %s: %s: %s' % (a.rules, name, e))
        tname = proto.split('(')[0].split()[-1]
        if targets.setdefault(tname, proto) != proto:
            raise SystemExit('mkbindings: %s: %s: two prototypes of %s' % (a.rules, name, tname))
        if impl_name(name) in implemented:
            by_hand.append('%s: in family forwarded to %s, defined by hand in %s'
                           % (name, tname, implemented[impl_name(name)]))
            continue
        forwarders += code
        implemented[impl_name(name)] = 'generated'
        if f.get('include') and f['include'] not in includes:
            includes.append(f['include'])
    if a.check:
        for line in by_hand:
            print(line)
        sys.exit(1 if by_hand else 0)
    if not a.out_c or not a.out_h:
        raise SystemExit('mkbindings: --out-c and --out-h are required')

    # ---- kumi_impl.h
    h = ['/* Generated by mkbindings.py from the MPI API data: do not edit. */',
         '#ifndef KUMI_IMPL_H', '#define KUMI_IMPL_H', '#include <stdbool.h>', '#include <mpi.h>',
         'struct kumi_comm; struct kumi_dt; struct kumi_op; struct kumi_errhandler; struct kumi_win; struct kumi_file;', '']
    for name in order:
        ret, params, _ = procs[name]
        if any(p['type'] == '...' for p in params):
            continue
        decl = ', '.join(param_decl(p, True) for p in params) or 'void'
        h.append('%s %s(%s);' % (ret, impl_name(name), decl))
    # what MPI_Get_library_version admits: the chapters of which nothing is implemented yet
    lacking = []
    for title, test in (('MPI-IO', lambda n: n.startswith(('MPI_File_open', 'MPI_File_read', 'MPI_File_write'))),
                        ('dynamic processes', lambda n: n in ('MPI_Comm_spawn', 'MPI_Comm_connect',
                                                              'MPI_Comm_accept', 'MPI_Comm_get_parent')),
                        ('MPI_T', lambda n: n.startswith('MPI_T_'))):
        if not any(test(n) and impl_name(n) in implemented for n in order):
            lacking.append(title)
    h += ['', '/* The chapters of the standard of which libmpi implements nothing yet (none: "") */',
          '#define KUMI_NOT_IMPLEMENTED "%s"' % ', '.join(lacking)]
    h += ['', '/* The form of a call that the shared implementation of a forwarded family is',
          ' * asked for (data/kumi-bindings.json, forward) */',
          'enum kumi_form { KUMI_FORM_BLOCKING, KUMI_FORM_NB, KUMI_FORM_INIT };']
    h += ['%s;' % targets[t] for t in sorted(targets)]
    h += ['', '#endif', '']
    write_if_changed(a.out_h, '\n'.join(h))

    # ---- bindings.c
    c = ['/* Generated by mkbindings.py from the MPI API data: do not edit. */',
         '#include "core/core.h"', '#include "core/check.h"', '#include "rma/rma.h"', '#include "io/io.h"']
    c += ['#include "%s"' % i for i in includes] + ['']
    if forwarders:
        c += ['/* Implementations of forwarded families that no source defines (data/kumi-bindings.json) */', '']
        c += forwarders
    count = 0
    for name in order:
        ret, params, kinds = procs[name]
        iname = impl_name(name)
        if iname not in implemented:
            continue
        if any(p['type'] == '...' for p in params):
            continue
        count += 1
        c.extend(gen_binding(name, ret, params, kinds, rules.get(name, {})))
    c.append('/* %d entry points */' % count)
    write_if_changed(a.out_c, '\n'.join(c) + '\n')


WIDENS = {('int', 'MPI_Count'), ('int', 'MPI_Aint'), ('MPI_Aint', 'MPI_Count')}
# An array of either width (int, or MPI_Count / MPI_Aint in the _c form) may go
# to a `const void *` parameter; the shared implementation reads it by `large`.
EITHER_WIDTH = {'const int*', 'const MPI_Count*', 'const MPI_Aint*'}


def norm_type(p):
    """The C type of a parameter in the implementation's signature, spelled one way."""
    t = CONVERT[p['type']][0] if p['type'] in CONVERT and not p['array'] else p['type']
    t = t + '*' * p['array'].count('[')
    return re.sub(r'\s*\*\s*', '*', ' '.join(t.split()))


def gen_forwarder(name, proc, f):
    """(prototype of the shared implementation, lines of kumi_mpi_<name> calling it)"""
    from mpiapi import parse_param
    ret, params, _ = proc
    m = re.match(r'\s*(\w[\w ]*?)\s*\b(kumi_\w+)\s*\((.*)\)\s*;?\s*$', f.get('to', ''))
    if not m:
        raise RuleError('forward.to is not a prototype of a kumi_ function: %r' % f.get('to'))
    tret, tname = m.group(1), m.group(2)
    tparams = [parse_param(q) for q in m.group(3).split(',')]
    bad = set(f) - {'to', 'args', 'include'}
    bad |= {'args.' + k for k in f.get('args', {}) if k not in {q['name'] for q in tparams}}
    if bad:
        raise RuleError('forward: unknown %s' % ', '.join(sorted(bad)))
    if tret != ret:
        raise RuleError('%s returns %s, not %s' % (tname, tret, ret))
    own = {p['name']: p for p in params}
    base = name[:-2] if name.endswith('_c') else name
    args, used = [], set()
    for q in tparams:
        n, t = q['name'], norm_type(q)
        given = f.get('args', {}).get(n)
        if isinstance(given, dict):
            hits = [v for pat, v in given.items() if match(pat, [name])]
            given = hits[0] if hits else None
        if given is not None:
            args.append(given)
        elif n == 'kfn':
            args.append('"%s"' % name)
        elif n == 'form':
            form = 'INIT' if base.endswith('_init') else \
                'NB' if any(norm_type(p) == 'MPI_Request*' for p in params) else 'BLOCKING'
            args.append('KUMI_FORM_' + form)
        elif n == 'large':
            args.append('true' if name.endswith('_c') else 'false')
        elif n in own:
            pt = norm_type(own[n])
            either = t == 'const void*' and pt in EITHER_WIDTH
            if either and 'large' not in {q2['name'] for q2 in tparams}:
                raise RuleError('parameter %s goes to a const void * of %s, which takes no bool large '
                                'to tell its width' % (n, tname))
            if pt != t and (pt, t) not in WIDENS and not either:
                raise RuleError('parameter %s is %s, %s takes %s (only widening is allowed: the shared '
                                'implementation takes the widest form)' % (n, pt, tname, t))
            args.append(n)
            used.add(n)
        elif t == 'MPI_Info':
            args.append('MPI_INFO_NULL')
        elif t == 'MPI_Status*':
            args.append('MPI_STATUS_IGNORE')
        elif t.endswith('*'):
            args.append('NULL')
        else:
            raise RuleError('no value for parameter %s of %s (forward.args)' % (n, tname))
    unused = [p['name'] for p in params if p['name'] not in used]
    if unused:
        raise RuleError('%s takes no parameter named %s' % (tname, ', '.join(unused)))
    decl = ', '.join(param_decl(p, True) for p in params) or 'void'
    proto = '%s %s(%s)' % (tret, tname, ', '.join(
        q['type'] + ('' if q['type'].endswith('*') else ' ') + q['name'] + q['array'] for q in tparams))
    return proto, ['%s %s(%s)' % (ret, impl_name(name), decl), '{',
                   '    return %s(%s);' % (tname, ', '.join(args)), '}', '']


# The non-colliding entry of each procedure, for the foreign-ABI shims
# (components/abi): a shim exports MPI_X / PMPI_X of another ABI itself and
# reaches Kumi's through kumi_abi_MPI_X (an alias of PMPI_X, so a profiling
# library that interposes MPI_X of the standard ABI is bypassed by the shims
# as by any other internal call).
ABI_ENTRY = 'KUMI_EXPORT %s kumi_abi_%s(%s) __attribute__((alias("P%s")));'


def gen_binding(name, ret, params, kinds, rule):
    iname = impl_name(name)
    decl = ', '.join(param_decl(p) for p in params) or 'void'
    out = ['KUMI_EXPORT %s P%s(%s)' % (ret, name, decl), '{']
    is_int = ret == 'int'
    out.append('    static const char kfn[] = "%s";' % name)
    if not rule.get('anytime'):
        out.append('    KUMI_CHECK_STATE(kfn);')
    elif not is_int:
        out.append('    (void)kfn;')
    if not is_int or rule.get('direct_return'):
        if rule.get('direct_return') and not (rule.get('anytime') and rule.get('nolock')):
            raise SystemExit('mkbindings: %s: direct_return needs anytime and nolock' % name)
        if is_int:
            out.append('    (void)kfn;')
        args = ', '.join(p['name'] for p in params)
        out.append('    return %s(%s);' % (iname, args))
        out += ['}', 'KUMI_EXPORT %s %s(%s) __attribute__((weak, alias("P%s")));' % (ret, name, decl, name),
                ABI_ENTRY % (ret, name, decl, name), '']
        return out

    # resolve handles
    comm_param = None
    win_param = None
    file_param = None
    local = {}
    body = []
    for p in params:
        if p['array'] or p['type'] not in CONVERT:
            continue
        t = p['type']
        ctype, getter, what = CONVERT[t]
        v = 'k_' + p['name']
        local[p['name']] = v
        out.append('    %s%s = NULL;' % (ctype, v))
        if t == 'MPI_Comm' and comm_param is None:
            comm_param = p['name']
        if t == 'MPI_Win' and win_param is None:
            win_param = p['name']
        if t == 'MPI_File' and file_param is None:
            file_param = p['name']
    out.append('    int rc = MPI_SUCCESS;')
    # a datatype must be committed only where data moves (calls with a buffer argument)
    moves_data = any(kinds.get(p['name'], '') in ('BUFFER', 'C_BUFFER', 'C_BUFFER2') for p in params)
    # communicator first: errors after it go to its handler
    order = sorted([p for p in params if p['name'] in local],
                   key=lambda p: 0 if p['type'] in ('MPI_Comm', 'MPI_Win', 'MPI_File') else 1)
    # arguments the standard says are ignored in some cases (rule 'significant':
    # parameter -> C condition under which it matters): a handle is resolved
    # without a check (NULL when it is no valid handle), a count not checked
    sig = rule.get('significant', {})
    for pn, cond in sig.items():
        if any(re.search(r'\bk_%s\b' % h, cond) and (h not in local or local[h] is None)
               for h in ('comm', 'win')):
            raise SystemExit('mkbindings: %s: condition of %s names a handle the procedure lacks' % (name, pn))

    def when(pn, line):
        if pn not in sig:
            return line
        return '    if (%s) {\n    %s\n    }' % (sig[pn], line)

    # the fast path (rule 'fast'): one condition that holds only where every check
    # below passes (it may fail where they pass: the full entry point decides then)
    fast = ['KUMI_FAST_ENTRY()']
    if rule.get('fast') and (win_param or file_param or rule.get('null_ok') or rule.get('op_datatype')
                             or rule.get('anytime') or rule.get('nolock')):
        raise SystemExit('mkbindings: %s: fast path with window, file, null_ok, op_datatype, anytime or nolock'
                         % name)
    for p in order:
        t = p['type']
        ctype, getter, what = CONVERT[t]
        v = local[p['name']]
        fast.append('(%s = %s(%s)) != NULL' % (v, getter, p['name']))
        if t == 'MPI_Datatype' and moves_data:
            fast.append('kumi_ok_dt_usable(%s)' % v)
        null_ok = '' if p['name'] not in rule.get('null_ok', ()) else \
            ' && %s != %s' % (p['name'], {'MPI_Comm': 'MPI_COMM_NULL', 'MPI_Datatype': 'MPI_DATATYPE_NULL',
                                          'MPI_Win': 'MPI_WIN_NULL', 'MPI_File': 'MPI_FILE_NULL'}[t])
        if p['name'] in sig:
            if t in ('MPI_Comm', 'MPI_Win', 'MPI_File'):
                raise SystemExit('mkbindings: %s: %s cannot be conditionally significant' % (name, p['name']))
            body.append('    %s = %s(%s);' % (v, getter, p['name']))
            body.append('    if (%s) {' % sig[p['name']])
            body.append('        if (!%s%s) { rc = kumi_chk_bad_%s(kfn, "%s", %s); goto fail; }'
                        % (v, null_ok, what, p['name'], p['name']))
            if t == 'MPI_Datatype' and moves_data:
                body.append('        if ((rc = kumi_chk_dt_usable(kfn, "%s", %s))) goto fail;' % (p['name'], v))
            if t == 'MPI_Datatype':
                # the implementation never sees a NULL type: MPI_BYTE stands for one that is ignored
                body.append('    } else if (!%s) {' % v)
                body.append('        %s = kumi_dt_get(MPI_BYTE);' % v)
            body.append('    }')
            continue
        body.append('    if (!(%s = %s(%s))%s) { rc = kumi_chk_bad_%s(kfn, "%s", %s); goto fail; }'
                    % (v, getter, p['name'], null_ok, what, p['name'], p['name']))
        if t == 'MPI_Datatype' and moves_data:
            body.append('    if ((rc = kumi_chk_dt_usable(kfn, "%s", %s))) goto fail;' % (p['name'], v))
    kc = local.get(comm_param) if comm_param else None
    # scalar checks
    for i, p in enumerate(params):
        if p['array'] or p['type'] == '...':
            continue
        k = kinds.get(p['name'], '')
        n = p['name']
        if norm_type(p) == 'MPI_Request*':
            # a pointer to one request handle is never NULL (the handle it
            # points to may be MPI_REQUEST_NULL: the implementation decides)
            body.append('    if ((rc = kumi_chk_req_ptr(kfn, "%s", %s))) goto fail;' % (n, n))
            fast.append('%s != NULL' % n)
            continue
        if p['type'] in ('int', 'MPI_Count') and k.endswith('_NNI') and k.startswith(('POLYXFER', 'POLYDTYPE', 'ARRAY_LENGTH')):
            body.append(when(n, '    if ((rc = kumi_chk_count(kfn, "%s", (MPI_Count)%s))) goto fail;' % (n, n)))
            fast.append('%s >= 0' % n)
        elif k == 'RANK' and p['type'] == 'int' and n in rule.get('ranks', {}):
            if not kc:
                raise SystemExit('mkbindings: %s: rank check of %s without a communicator' % (name, n))
            body.append('    if ((rc = kumi_chk_%s(kfn, "%s", %s, %s))) goto fail;' % (rule['ranks'][n], n, n, kc))
            if rule.get('fast') and rule['ranks'][n] not in ('dest', 'source'):
                raise SystemExit('mkbindings: %s: fast path with a %s rank' % (name, rule['ranks'][n]))
            fast.append('kumi_ok_%s(%s, %s)' % (rule['ranks'][n], n, kc))
        elif k == 'TAG' and p['type'] == 'int':
            recv_side = n in rule.get('any_tag', ())
            body.append('    if ((rc = kumi_chk_tag(kfn, "%s", %s, %d))) goto fail;' % (n, n, 1 if recv_side else 0))
            fast.append('kumi_ok_tag(%s, %d)' % (n, 1 if recv_side else 0))
    # op valid for datatype
    if rule.get('op_datatype'):
        if 'op' not in local or 'datatype' not in local:
            raise SystemExit('mkbindings: %s: op_datatype without op and datatype' % name)
        line = '    if ((rc = kumi_chk_op_dt(kfn, k_op, k_datatype))) goto fail;'
        if 'op' in sig or 'datatype' in sig:
            if sig.get('op') != sig.get('datatype'):
                raise SystemExit('mkbindings: %s: op and datatype must be significant together' % name)
            line = when('op', line)
        body.append(line)
    # null buffers: a BUFFER followed by a count and a datatype
    if rule.get('null_buffers'):
        for i, p in enumerate(params):
            if kinds.get(p['name']) != 'BUFFER' or p['array']:
                continue
            if i + 2 < len(params):
                cnt, dt = params[i + 1], params[i + 2]
                if dt['name'] in local and dt['type'] == 'MPI_Datatype' and not cnt['array'] \
                        and cnt['type'] in ('int', 'MPI_Count'):
                    body.append(when(dt['name'],
                                     '    if ((rc = kumi_chk_buf(kfn, "%s", %s, (MPI_Count)%s, %s))) goto fail;'
                                     % (p['name'], p['name'], cnt['name'], local[dt['name']])))
                    fast.append('(%s != NULL || %s == 0)' % (p['name'], cnt['name']))
    lock = not rule.get('nolock')
    if lock:
        out.append('    kumi_lock();')
    unlock = '    kumi_unlock();' if lock else None
    out += body
    args = ', '.join(local.get(p['name'], p['name']) for p in params)
    # the errors raised below name this call (core.h: kumi_call); the checks above name it themselves
    out.append('    kumi_call = kfn;')
    out.append('    rc = %s(%s);' % (iname, args))
    kw = local.get(win_param) if win_param else None
    kf = local.get(file_param) if file_param else None
    if kf or name in FILE_NULL_CALLS:
        # a file's errors go to its handler (that of MPI_FILE_NULL while it has none)
        if body:
            out.append('    if (rc == MPI_SUCCESS) {%s return rc; }' % (' kumi_unlock();' if lock else ''))
            out.append('fail:')
            out.append('    rc = KUMI_ERR_OUT(kumi_file_err_handle(%s, rc));' % (kf or 'NULL'))
        else:
            out.append('    if (rc != MPI_SUCCESS) rc = KUMI_ERR_OUT(kumi_file_err_handle(NULL, rc));')
    elif kw and not kc:
        # a window's errors go to its handler once the handle is resolved
        out.append('    if (rc == MPI_SUCCESS) {%s return rc; }' % (' kumi_unlock();' if lock else ''))
        out.append('fail:')
        out.append('    rc = KUMI_ERR_OUT(%s ? kumi_win_err_handle(%s, rc) : kumi_err_handle(NULL, rc));' % (kw, kw))
    elif kc:
        out.append('    if (rc == MPI_SUCCESS) {%s return rc; }' % (' kumi_unlock();' if lock else ''))
        out.append('fail:')
        out.append('    rc = KUMI_ERR_OUT(kumi_err_handle(%s, rc));' % kc)
    elif body:
        out.append('    if (rc == MPI_SUCCESS) {%s return rc; }' % (' kumi_unlock();' if lock else ''))
        out.append('    goto done;')
        out.append('fail:')
        out.append('    rc = kumi_err_handle(NULL, rc);')
        out.append('done:')
        out.append('    rc = KUMI_ERR_OUT(rc);')
    else:
        # the implementation handles its errors; what it returns unnamed gets the call's name
        out.append('    if (rc != MPI_SUCCESS) rc = KUMI_ERR_OUT(kumi_err_in(rc, kumi_call));')
    if unlock:
        out.append(unlock)
    out.append('    return rc;')
    out.append('}')
    if rule.get('fast'):
        out = gen_fast(name, ret, params, decl, out, fast, local, kc, args)
    out.append('KUMI_EXPORT %s %s(%s) __attribute__((weak, alias("P%s")));' % (ret, name, decl, name))
    out.append(ABI_ENTRY % (ret, name, decl, name))
    out.append('')
    return out


def gen_fast(name, ret, params, decl, full, fast, local, kc, args):
    """The entry point with a fast path (rule 'fast'): where one condition says that the
    state, the lock and every argument check pass (the common case), the handles are
    resolved once, the implementation is called and its failure goes to the
    communicator's error handler as in the full entry point; anything else (a bad
    argument, MPI_PROC_NULL, sessions only, threads) goes on to the full entry point,
    kumi_full_<name> (a tail call), which checks in its order and names what is bad."""
    if not kc:
        raise SystemExit('mkbindings: %s: a fast path needs a communicator' % name)
    full = list(full)
    full[0] = 'static __attribute__((noinline)) %s kumi_full_%s(%s)' % (ret, name, decl)
    out = full + ['', 'KUMI_EXPORT %s P%s(%s)' % (ret, name, decl), '{']
    for p in params:
        if p['name'] in local:
            out.append('    %s%s;' % (CONVERT[p['type']][0], local[p['name']]))
    out.append('    if (__builtin_expect(%s, 1)) {' % ' &&\n                         '.join(fast))
    out += ['        /* kumi_lock() has nothing to do (KUMI_FAST_ENTRY) */',
            '        static const char kfn[] = "%s";' % name,
            '        kumi_call = kfn;',
            '        int rc = %s(%s);' % (impl_name(name), args),
            '        if (__builtin_expect(rc == MPI_SUCCESS, 1)) { kumi_unlock(); return rc; }',
            '        rc = KUMI_ERR_OUT(kumi_err_handle(%s, rc));' % kc,
            '        kumi_unlock();',
            '        return rc;',
            '    }',
            '    return kumi_full_%s(%s);' % (name, ', '.join(p['name'] for p in params)),
            '}']
    return out


if __name__ == '__main__':
    main()
