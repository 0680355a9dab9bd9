#!/usr/bin/env python3
"""Generate Kumi's C entry points (MPI_* and their PMPI_* twins) from the MPI API data.

usage: mkbindings.py --procedures P.json --abi A.json --out-c bindings.c --out-h kumi_impl.h SRC.c...

For every procedure of the API data (and the MPI 5.0 additions in the ABI
facts) this writes the prototype of its implementation, kumi_mpi_<name>, to
kumi_impl.h.  For every implementation defined in the given sources (a line
starting "int kumi_mpi_<name>(" or another return type) it writes to
bindings.c:

  * PMPI_<Name>: checks the library state and the arguments the API data lets
    us check generically (communicator, datatype, op and error handler handles;
    counts; ranks; tags; roots; op/datatype pairs; null buffers), resolves
    handles to objects, calls the implementation and hands a failure to the
    communicator's error handler;
  * MPI_<Name>: a weak alias of PMPI_<Name> (the profiling interface).

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
from mpiapi import all_prototypes, parse_proto  # noqa: E402

CONVERT = {
    'MPI_Comm': ('struct kumi_comm *', 'kumi_comm_get', 'comm'),
    'MPI_Datatype': ('struct kumi_dt *', 'kumi_dt_get', 'datatype'),
    'MPI_Op': ('struct kumi_op *', 'kumi_op_get', 'op'),
    'MPI_Errhandler': ('struct kumi_errhandler *', 'kumi_errh_get', 'errhandler'),
    'MPI_Win': ('struct kumi_win *', 'kumi_win_get', 'win'),
}

# Callable before MPI_Init and after MPI_Finalize (MPI 4.1 sec. 11.2.1, plus Wtime/Wtick).
ANYTIME = {
    'MPI_Init', 'MPI_Init_thread', 'MPI_Initialized', 'MPI_Finalized', 'MPI_Get_version',
    'MPI_Get_library_version', 'MPI_Error_class', 'MPI_Error_string', 'MPI_Wtime',
    'MPI_Wtick', 'MPI_Abort', 'MPI_Query_thread', 'MPI_Abi_get_version', 'MPI_Abi_get_info',
    'MPI_Get_processor_name',
    # MPI 4: info objects and sessions live outside the world model
    'MPI_Info_create', 'MPI_Info_create_env', 'MPI_Info_delete', 'MPI_Info_dup', 'MPI_Info_free',
    'MPI_Info_get', 'MPI_Info_get_nkeys', 'MPI_Info_get_nthkey', 'MPI_Info_get_string',
    'MPI_Info_get_valuelen', 'MPI_Info_set',
    'MPI_Session_init', 'MPI_Session_finalize', 'MPI_Session_get_num_psets', 'MPI_Session_get_nth_pset',
    'MPI_Session_get_pset_info', 'MPI_Session_get_info', 'MPI_Session_set_errhandler',
    'MPI_Session_get_errhandler', 'MPI_Group_from_session_pset', 'MPI_Comm_create_from_group',
    'MPI_Session_create_errhandler', 'MPI_Errhandler_free',
}
# Not under the library lock: they set the thread level, or only read constant state.
NOLOCK = {
    'MPI_Init', 'MPI_Init_thread', 'MPI_Initialized', 'MPI_Finalized', 'MPI_Query_thread',
    'MPI_Is_thread_main', 'MPI_Get_version', 'MPI_Get_library_version', 'MPI_Abi_get_version',
    'MPI_Session_init',
}
# Handle arguments that may be the null handle (resolved to NULL for the implementation).
NULL_OK = {('MPI_Intercomm_create', 'peer_comm')}   # significant only at the local leader
# Collectives whose buffers every rank uses (null-buffer check applies).
SYMMETRIC_BUF = {'MPI_Bcast', 'MPI_Allreduce', 'MPI_Reduce_local', 'MPI_Scan', 'MPI_Exscan'}
# Reductions: op must be defined for datatype.
OP_DT_CHECK = {'MPI_Reduce', 'MPI_Allreduce', 'MPI_Reduce_local', 'MPI_Reduce_scatter',
               'MPI_Reduce_scatter_block', 'MPI_Scan', 'MPI_Exscan', 'MPI_Ireduce',
               'MPI_Iallreduce', 'MPI_Ireduce_scatter', 'MPI_Ireduce_scatter_block',
               'MPI_Iscan', 'MPI_Iexscan'}


def param_decl(p, impl=False):
    if p['type'] == '...':
        return '...'
    t = p['type']
    if impl and not p['array'] and t in CONVERT:
        return '%s%s' % (CONVERT[t][0], p['name'])
    return '%s %s%s' % (t, p['name'], p['array'])


def impl_name(name):
    return 'kumi_mpi_' + name[4:].lower()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--procedures', required=True)
    ap.add_argument('--abi', required=True)
    ap.add_argument('--out-c', required=True)
    ap.add_argument('--out-h', required=True)
    ap.add_argument('sources', nargs='*')
    a = ap.parse_args()

    api = json.load(open(a.procedures))
    abi = json.load(open(a.abi))
    procs = {}   # name -> (ret, params, kinds by param name)
    order = []
    for proto, kinds in all_prototypes(api, abi):
        ret, name, params = parse_proto(proto)
        if name not in procs:
            procs[name] = (ret, params, kinds)
            order.append(name)

    implemented = set()
    pat = re.compile(r'^[A-Za-z_][\w \*]*?\bkumi_mpi_(\w+)\s*\(', re.M)
    for src in a.sources:
        for m in pat.finditer(open(src).read()):
            implemented.add('kumi_mpi_' + m.group(1))

    # ---- kumi_impl.h
    h = ['/* Generated by mkbindings.py from the MPI API data: do not edit. */',
         '#ifndef KUMI_IMPL_H', '#define KUMI_IMPL_H', '#include <mpi.h>',
         'struct kumi_comm; struct kumi_dt; struct kumi_op; struct kumi_errhandler; struct kumi_win;', '']
    for name in order:
        ret, params, _ = procs[name]
        if any(p['type'] == '...' for p in params):
            continue
        decl = ', '.join(param_decl(p, True) for p in params) or 'void'
        h.append('%s %s(%s);' % (ret, impl_name(name), decl))
    h += ['', '#endif', '']
    open(a.out_h, 'w').write('\n'.join(h))

    # ---- bindings.c
    c = ['/* Generated by mkbindings.py from the MPI API data: do not edit. */',
         '#include "core/core.h"', '#include "core/check.h"', '#include "rma/rma.h"', '']
    count = 0
    for name in order:
        ret, params, kinds = procs[name]
        iname = impl_name(name)
        if iname not in implemented:
            continue
        if any(p['type'] == '...' for p in params):
            continue
        count += 1
        c.extend(gen_binding(name, ret, params, kinds))
    c.append('/* %d entry points */' % count)
    open(a.out_c, 'w').write('\n'.join(c) + '\n')


def gen_binding(name, ret, params, kinds):
    iname = impl_name(name)
    pnames = {p['name'] for p in params}
    decl = ', '.join(param_decl(p) for p in params) or 'void'
    out = ['KUMI_EXPORT %s P%s(%s)' % (ret, name, decl), '{']
    is_int = ret == 'int'
    base = name[:-2] if name.endswith('_c') else name
    out.append('    static const char kfn[] = "%s";' % name)
    if base not in ANYTIME:
        out.append('    KUMI_CHECK_STATE(kfn);')
    else:
        out.append('    (void)kfn;')
    if not is_int:
        args = ', '.join(p['name'] for p in params)
        out.append('    return %s(%s);' % (iname, args))
        out += ['}', 'KUMI_EXPORT %s %s(%s) __attribute__((weak, alias("P%s")));' % (ret, name, decl, name), '']
        return out

    # resolve handles
    comm_param = None
    win_param = None
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
    out.append('    int rc = MPI_SUCCESS;')
    # a datatype must be committed only where data moves (calls with a buffer argument)
    moves_data = any(kinds.get(p['name'], '') in ('BUFFER', 'C_BUFFER', 'C_BUFFER2') for p in params)
    # communicator first: errors after it go to its handler
    order = sorted([p for p in params if p['name'] in local],
                   key=lambda p: 0 if p['type'] in ('MPI_Comm', 'MPI_Win') else 1)
    for p in order:
        t = p['type']
        ctype, getter, what = CONVERT[t]
        v = local[p['name']]
        null_ok = '' if (name, p['name']) not in NULL_OK else \
            ' && %s != %s' % (p['name'], {'MPI_Comm': 'MPI_COMM_NULL'}[t])
        body.append('    if (!(%s = %s(%s))%s) { rc = kumi_chk_bad_%s(kfn, "%s", %s); goto fail; }'
                    % (v, getter, p['name'], null_ok, what, p['name'], p['name']))
        if t == 'MPI_Datatype' and moves_data:
            body.append('    if ((rc = kumi_chk_dt_usable(kfn, "%s", %s))) goto fail;' % (p['name'], v))
    kc = local.get(comm_param) if comm_param else None
    # scalar checks
    names = [p['name'] for p in params]
    for i, p in enumerate(params):
        if p['array'] or p['type'] == '...':
            continue
        k = kinds.get(p['name'], '')
        n = p['name']
        if p['type'] in ('int', 'MPI_Count') and k.endswith('_NNI') and k.startswith(('POLYXFER', 'POLYDTYPE', 'ARRAY_LENGTH')):
            body.append('    if ((rc = kumi_chk_count(kfn, "%s", (MPI_Count)%s))) goto fail;' % (n, n))
        elif k == 'RANK' and p['type'] == 'int' and kc:
            if n == 'dest':
                body.append('    if ((rc = kumi_chk_dest(kfn, "%s", %s, %s))) goto fail;' % (n, n, kc))
            elif n == 'source':
                body.append('    if ((rc = kumi_chk_source(kfn, "%s", %s, %s))) goto fail;' % (n, n, kc))
            elif n == 'root':
                body.append('    if ((rc = kumi_chk_root(kfn, "%s", %s, %s))) goto fail;' % (n, n, kc))
        elif k == 'TAG' and p['type'] == 'int':
            recv_side = n == 'recvtag' or (n == 'tag' and 'source' in pnames and 'dest' not in pnames)
            body.append('    if ((rc = kumi_chk_tag(kfn, "%s", %s, %d))) goto fail;' % (n, n, 1 if recv_side else 0))
    # op valid for datatype
    if base in OP_DT_CHECK and 'op' in local and 'datatype' in local:
        body.append('    if ((rc = kumi_chk_op_dt(kfn, k_op, k_datatype))) goto fail;')
    # null buffers: a BUFFER followed by a count and a datatype
    pt2pt = 'dest' in pnames or 'source' in pnames
    if pt2pt or base in SYMMETRIC_BUF:
        for i, p in enumerate(params):
            if kinds.get(p['name']) != 'BUFFER' or p['array']:
                continue
            if i + 2 < len(params):
                cnt, dt = params[i + 1], params[i + 2]
                if dt['name'] in local and dt['type'] == 'MPI_Datatype' and not cnt['array'] \
                        and cnt['type'] in ('int', 'MPI_Count'):
                    body.append('    if ((rc = kumi_chk_buf(kfn, "%s", %s, (MPI_Count)%s, %s))) goto fail;'
                                % (p['name'], p['name'], cnt['name'], local[dt['name']]))
    lock = base not in NOLOCK
    if lock:
        out.append('    kumi_lock();')
    unlock = '    kumi_unlock();' if lock else None
    out += body
    args = ', '.join(local.get(p['name'], p['name']) for p in params)
    out.append('    rc = %s(%s);' % (iname, args))
    kw = local.get(win_param) if win_param else None
    if kw and not kc:
        # a window's errors go to its handler once the handle is resolved
        out.append('    if (rc == MPI_SUCCESS) {%s return rc; }' % (' kumi_unlock();' if lock else ''))
        out.append('fail:')
        out.append('    rc = %s ? kumi_win_err_handle(%s, rc) : kumi_err_handle(NULL, rc);' % (kw, kw))
    elif kc:
        out.append('    if (rc == MPI_SUCCESS) {%s return rc; }' % (' kumi_unlock();' if lock else ''))
        out.append('fail:')
        out.append('    rc = kumi_err_handle(%s, rc);' % kc)
    elif body:
        out.append('    if (rc == MPI_SUCCESS) {%s return rc; }' % (' kumi_unlock();' if lock else ''))
        out.append('    goto done;')
        out.append('fail:')
        out.append('    rc = kumi_err_handle(NULL, rc);')
        out.append('done:')
    if unlock:
        out.append(unlock)
    out.append('    return rc;')
    out.append('}')
    out.append('KUMI_EXPORT %s %s(%s) __attribute__((weak, alias("P%s")));' % (ret, name, decl, name))
    out.append('')
    return out


if __name__ == '__main__':
    main()
