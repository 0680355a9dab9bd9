#!/usr/bin/env python3
"""mkshim.py: writes the C source of a foreign-ABI shim (components/abi, issue 17).

The shim is a library with the foreign MPI's name (Open MPI's libmpi.so.40, later
MPICH's libmpich.so.12) that exports MPI_X / PMPI_X with the foreign ABI's types and
constants and calls Kumi's kumi_abi_MPI_X with the native (MPI 5.0 standard ABI) ones.

Inputs (all data, so the build needs no foreign MPI installed):
  --api     data/mpi-procedures.json   every procedure, each parameter with its kind
  --native  data/mpi-abi-1.0.json      Kumi's ABI: constant values, handle types, status
  --facts   data/abi/<abi>.json        the foreign ABI, from tools/abi-probe.py
  --native-entries bindings.c         Kumi's generated bindings (which kumi_abi_MPI_X exist)
  --abi     ompi                       which table of ABI_RULES below (the per-ABI parts
                                       the facts do not spell out: handle representation,
                                       the private fields of MPI_Status)
Outputs: --out FILE.c and --coverage FILE.txt (exported / skipped, with reasons).

What is translated, by parameter kind (the API data's 'kind' of each parameter):
  handles (in, out, inout, arrays with a known length), int constants by domain
  (RANK, TAG, THREAD_LEVEL, ... see INT_DOMAINS), bit sets (ASSERT, ACCESS_MODE),
  error codes and classes, MPI_Status (in, out, arrays, MPI_STATUS(ES)_IGNORE),
  sentinel pointers (MPI_IN_PLACE, MPI_BOTTOM, MPI_UNWEIGHTED, ...), output strings
  whose maximum length differs (through a native-sized buffer, truncated), and the
  callbacks of SPECIAL (user ops, error handlers).  A procedure with any other
  parameter is not exported: a binary needing it fails at load time (undefined
  symbol), never at run time.
"""
import argparse
import json
import re
import sys

from mkshim_handles import HANDLE_TYPES, Handles
from mkshim_loadcheck import elf_scan_text
from mkshim_special import Special

sys.path.insert(0, __import__('os').path.join(__import__('os').path.dirname(__import__('os').path.abspath(__file__)),
                                              '..', '..', 'framework', 'bindings'))
import mpiapi   # noqa: E402  (the large-count prototypes, with the API data's erratum corrected)

# ---------------------------------------------------------------- per-ABI rules
# What the probe's facts do not say.  'handles': how a foreign handle is represented
# ('object': the address of a data object the library exports, Open MPI).  'status_private':
# the fields of the foreign MPI_Status besides MPI_SOURCE/TAG/ERROR, as its mpi.h declares
# them (Open MPI 4.x: struct ompi_status_public_t { int MPI_SOURCE, MPI_TAG, MPI_ERROR;
# int _cancelled; size_t _ucount; }).
ABI_RULES = {
    'ompi': {
        'handles': 'object',
        'status_private': [('int', '_cancelled', 12, 'cancelled'), ('size_t', '_ucount', 16, 'count')],
        'magic': '0x4b756d694f6d7069ULL',
        'native_library': 'libmpi.so.0',   # "KumiOmpi": first 8 bytes of every predefined object
    },
    # MPICH 4.x (mpi.h): handles are ints whose bits 30-31 are the handle's storage (1: builtin,
    # 2: direct, 3: indirect) and 26-29 the kind of object (HANDLE_GET_MPI_KIND), except MPI_File
    # (a pointer); MPI_Status is { int count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG,
    # MPI_ERROR }, the count's high bits shifted left by one above the cancelled bit.
    'mpich': {
        'handles': 'int',
        'status_private': [('int', 'count_lo', 0, 'count_lo'), ('int', 'count_hi_and_cancelled', 4, 'count_hi')],
        'native_library': 'libmpi.so.0',
    },
}

HANDLE_KINDS = {'COMMUNICATOR': 'MPI_Comm', 'DATATYPE': 'MPI_Datatype', 'GROUP': 'MPI_Group',
                'INFO': 'MPI_Info', 'ERRHANDLER': 'MPI_Errhandler', 'OPERATION': 'MPI_Op',
                'REQUEST': 'MPI_Request', 'MESSAGE': 'MPI_Message', 'WINDOW': 'MPI_Win',
                'FILE': 'MPI_File', 'SESSION': 'MPI_Session'}

# Integer parameters whose values include constants that may differ between ABIs.
INT_DOMAINS = {
    'RANK': ['MPI_ANY_SOURCE', 'MPI_PROC_NULL', 'MPI_ROOT', 'MPI_UNDEFINED'],
    'RANK_NNI': ['MPI_PROC_NULL'],    # RMA target ranks, MPI_Win_lock, ...: MPI_PROC_NULL is allowed
    'TAG': ['MPI_ANY_TAG'],
    'COLOR': ['MPI_UNDEFINED'],
    'INDEX': ['MPI_UNDEFINED'],
    'THREAD_LEVEL': ['MPI_THREAD_SINGLE', 'MPI_THREAD_FUNNELED', 'MPI_THREAD_SERIALIZED', 'MPI_THREAD_MULTIPLE'],
    'COMM_COMPARISON': ['MPI_IDENT', 'MPI_CONGRUENT', 'MPI_SIMILAR', 'MPI_UNEQUAL'],
    'GROUP_COMPARISON': ['MPI_IDENT', 'MPI_CONGRUENT', 'MPI_SIMILAR', 'MPI_UNEQUAL'],
    'COMBINER': None,          # every MPI_COMBINER_*
    'TOPOLOGY_TYPE': ['MPI_CART', 'MPI_GRAPH', 'MPI_DIST_GRAPH', 'MPI_UNDEFINED'],
    'SPLIT_TYPE': None,        # every MPI_COMM_TYPE_*, MPI_UNDEFINED
    'LOCK_TYPE': ['MPI_LOCK_EXCLUSIVE', 'MPI_LOCK_SHARED'],
    'ORDER': ['MPI_ORDER_C', 'MPI_ORDER_FORTRAN'],
    'DISTRIB_ENUM': ['MPI_DISTRIBUTE_NONE', 'MPI_DISTRIBUTE_BLOCK', 'MPI_DISTRIBUTE_CYCLIC'],
    'DTYPE_DISTRIBUTION': ['MPI_DISTRIBUTE_DFLT_DARG'],
    'TYPECLASS': ['MPI_TYPECLASS_INTEGER', 'MPI_TYPECLASS_REAL', 'MPI_TYPECLASS_COMPLEX'],
    'UPDATE_MODE': ['MPI_SEEK_SET', 'MPI_SEEK_CUR', 'MPI_SEEK_END'],
    'KEYVAL': ['MPI_KEYVAL_INVALID', 'MPI_TAG_UB', 'MPI_IO', 'MPI_HOST', 'MPI_WTIME_IS_GLOBAL', 'MPI_APPNUM',
               'MPI_LASTUSEDCODE', 'MPI_UNIVERSE_SIZE', 'MPI_WIN_BASE', 'MPI_WIN_DISP_UNIT', 'MPI_WIN_SIZE',
               'MPI_WIN_CREATE_FLAVOR', 'MPI_WIN_MODEL'],
}
BIT_DOMAINS = {
    'ASSERT': ['MPI_MODE_NOCHECK', 'MPI_MODE_NOPRECEDE', 'MPI_MODE_NOPUT', 'MPI_MODE_NOSTORE', 'MPI_MODE_NOSUCCEED'],
    'ACCESS_MODE': ['MPI_MODE_APPEND', 'MPI_MODE_CREATE', 'MPI_MODE_DELETE_ON_CLOSE', 'MPI_MODE_EXCL',
                    'MPI_MODE_RDONLY', 'MPI_MODE_RDWR', 'MPI_MODE_SEQUENTIAL', 'MPI_MODE_UNIQUE_OPEN',
                    'MPI_MODE_WRONLY'],
}
ERR_KINDS = {'ERROR_CODE', 'ERROR_CLASS'}
# handle kinds as the Fortran library's hooks number them (kumi_shim_fortran_hooks)
# Integer / address / count kinds whose values are plain numbers in every ABI.
PASS_KINDS = {
    'ARRAY_LENGTH', 'ARRAY_LENGTH_NNI', 'ARRAY_LENGTH_PI', 'ARGUMENT_COUNT', 'COMM_SIZE', 'COMM_SIZE_PI',
    'COORDINATE', 'DEGREE', 'DIMENSION', 'DISPLACEMENT', 'FILE_DESCRIPTOR', 'DISPLACEMENT_NNI', 'KEY', 'LOGICAL',
    'LOGICAL_OPTIONAL', 'NUM_DIMS', 'PARTITION', 'POLYDISPLACEMENT', 'POLYDISPLACEMENT_AINT_COUNT',
    'POLYDISPLACEMENT_COUNT', 'POLYDISPOFFSET', 'POLYDTYPE_NUM_ELEM', 'POLYDTYPE_NUM_ELEM_NNI',
    'POLYDTYPE_NUM_ELEM_PI', 'POLYDTYPE_PACK_SIZE', 'POLYDTYPE_STRIDE_BYTES', 'POLYLOCATION',
    'POLYNUM_BYTES', 'POLYNUM_BYTES_NNI', 'POLYRMA_DISPLACEMENT', 'POLYXFER_NUM_ELEM',
    'POLYXFER_NUM_ELEM_NNI', 'PROCESS_GRID_SIZE', 'RMA_DISPLACEMENT_NNI', 'WINDOW_SIZE',
    'WIN_ATTACH_SIZE', 'XFER_NUM_ELEM', 'XFER_NUM_ELEM_NNI', 'XFER_NUM_ELEM_SMALL', 'NUM_BYTES',
    'ALLOC_MEM_NUM_BYTES', 'LOCATION_SMALL', 'INFO_VALUE_LENGTH', 'STRING_LENGTH', 'KEY_INDEX', 'VERSION',
    'TYPECLASS_SIZE', 'MATH', 'GENERIC_DTYPE_INT', 'POLYNUM_PARAM_VALUES', 'OFFSET',
}
# Pointers passed through untouched, after the sentinels of SENTINELS are mapped.
PTR_KINDS = {'BUFFER', 'C_BUFFER', 'C_BUFFER2', 'ATTRIBUTE_VAL', 'ATTRIBUTE_VAL_10', 'ARGUMENT_LIST'}
SENTINELS = {'BUFFER': ['MPI_IN_PLACE', 'MPI_BOTTOM'], 'WEIGHT': ['MPI_UNWEIGHTED', 'MPI_WEIGHTS_EMPTY']}

# Lengths of array parameters (C expressions of the foreign call's parameters; peers(comm):
# the size of the (remote) group of a foreign communicator; nbr_count(comm, out): its number of
# out- (1) or in-neighbours (0) in its topology).
ARRAY_LENGTHS = {
    ('MPI_Waitall', 'array_of_requests'): 'count', ('MPI_Waitall', 'array_of_statuses'): 'count',
    ('MPI_Testall', 'array_of_requests'): 'count', ('MPI_Testall', 'array_of_statuses'): 'count',
    ('MPI_Waitany', 'array_of_requests'): 'count', ('MPI_Testany', 'array_of_requests'): 'count',
    ('MPI_Waitsome', 'array_of_requests'): 'incount', ('MPI_Waitsome', 'array_of_statuses'): 'incount',
    ('MPI_Testsome', 'array_of_requests'): 'incount', ('MPI_Testsome', 'array_of_statuses'): 'incount',
    ('MPI_Startall', 'array_of_requests'): 'count',
    ('MPI_Type_create_struct', 'array_of_types'): 'count',
    ('MPI_Type_struct', 'array_of_types'): 'count',
    ('MPI_Type_get_contents', 'array_of_datatypes'): 'max_datatypes',
    ('MPI_Type_get_contents', 'array_of_integers'): None,
    ('MPI_Alltoallw', 'sendtypes'): 'sendbuf == F_IN_PLACE ? 0 : peers(comm)',   # ignored when in place
    ('MPI_Alltoallw', 'recvtypes'): 'peers(comm)',
    ('MPI_Neighbor_alltoallw', 'sendtypes'): 'nbr_count(comm, 1)',
    ('MPI_Neighbor_alltoallw', 'recvtypes'): 'nbr_count(comm, 0)',
    # the nonblocking forms: Kumi's schedule builders copy what they keep, so the converted
    # arrays may be freed when the call returns (framework/include/kumi/coll.h)
    ('MPI_Ialltoallw', 'sendtypes'): 'sendbuf == F_IN_PLACE ? 0 : peers(comm)',
    ('MPI_Ialltoallw', 'recvtypes'): 'peers(comm)',
    ('MPI_Ineighbor_alltoallw', 'sendtypes'): 'nbr_count(comm, 1)',
    ('MPI_Ineighbor_alltoallw', 'recvtypes'): 'nbr_count(comm, 0)',
    # and the persistent ones (MPI 4.0), under the same guarantee
    ('MPI_Alltoallw_init', 'sendtypes'): 'sendbuf == F_IN_PLACE ? 0 : peers(comm)',
    ('MPI_Alltoallw_init', 'recvtypes'): 'peers(comm)',
    ('MPI_Neighbor_alltoallw_init', 'sendtypes'): 'nbr_count(comm, 1)',
    ('MPI_Neighbor_alltoallw_init', 'recvtypes'): 'nbr_count(comm, 0)',
    ('MPI_Group_translate_ranks', 'ranks1'): 'n', ('MPI_Group_translate_ranks', 'ranks2'): 'n',
    ('MPI_Group_incl', 'ranks'): None, ('MPI_Group_excl', 'ranks'): None,   # valid ranks only
    ('MPI_Group_range_incl', 'ranges'): None, ('MPI_Group_range_excl', 'ranges'): None,
    ('MPI_Waitsome', 'array_of_indices'): None, ('MPI_Testsome', 'array_of_indices'): None,
    ('MPI_Graph_create', 'index'): None, ('MPI_Graph_get', 'index'): None, ('MPI_Graph_map', 'index'): None,
    ('MPI_Dist_graph_create', 'sources'): None, ('MPI_Dist_graph_create', 'destinations'): None,
    ('MPI_Dist_graph_create_adjacent', 'sources'): None, ('MPI_Dist_graph_create_adjacent', 'destinations'): None,
    ('MPI_Dist_graph_neighbors', 'sources'): None, ('MPI_Dist_graph_neighbors', 'destinations'): None,
    ('MPI_Graph_create', 'edges'): None, ('MPI_Graph_get', 'edges'): None,
    ('MPI_Graph_map', 'edges'): None, ('MPI_Graph_neighbors', 'neighbors'): None,
    ('MPI_Type_create_darray', 'array_of_distribs'): 'ndims',
    ('MPI_Type_create_darray', 'array_of_dargs'): 'ndims',
}
# Output strings: the constant that bounds them (the foreign buffer holds that many
# chars), and the parameter that gets the length.
OUT_STRINGS = {
    ('MPI_Error_string', 'string'): ('MPI_MAX_ERROR_STRING', 'resultlen'),
    ('MPI_Get_processor_name', 'name'): ('MPI_MAX_PROCESSOR_NAME', 'resultlen'),
    ('MPI_Get_library_version', 'version'): ('MPI_MAX_LIBRARY_VERSION_STRING', 'resultlen'),
    ('MPI_Comm_get_name', 'comm_name'): ('MPI_MAX_OBJECT_NAME', 'resultlen'),
    ('MPI_Type_get_name', 'type_name'): ('MPI_MAX_OBJECT_NAME', 'resultlen'),
    ('MPI_Win_get_name', 'win_name'): ('MPI_MAX_OBJECT_NAME', 'resultlen'),
    ('MPI_Info_get_nthkey', 'key'): ('MPI_MAX_INFO_KEY', None),
    ('MPI_Open_port', 'port_name'): ('MPI_MAX_PORT_NAME', None),
    ('MPI_Lookup_name', 'port_name'): ('MPI_MAX_PORT_NAME', None),
    ('MPI_Info_get', 'value'): ('user', None),            # bounded by the caller's valuelen
    ('MPI_Info_get_string', 'value'): ('user', None),     # bounded by the caller's buflen
}
# Procedures not generated from the kinds, with the reason (the output of a procedure
# may not be expressible by kind).
SKIP = {
    'MPI_Abort': None,                       # errorcode is an exit status: generated with PASS below
    'MPI_Comm_get_attr': None, 'MPI_Attr_get': None, 'MPI_Win_get_attr': None,   # see ATTR_OUT
    'MPI_Group_translate_ranks': None,
}
# Parameters whose kind says more than the procedure uses (overrides).
PARAM_KIND = {('MPI_Abort', 'errorcode'): 'KEY',   # an exit status, not an MPI error code
              # the calling process's rank: never a special value (no translation on the fast path)
              ('MPI_Comm_rank', 'rank'): 'KEY', ('MPI_Cart_rank', 'rank'): 'KEY'}
TOOLS = re.compile(r'^MPI_T_')

# Procedures written here (callbacks): name -> C body builder; their parameters are not
# checked by kind.
SPECIAL = ['MPI_Grequest_start', 'MPI_Type_get_contents', 'MPI_Comm_create_keyval', 'MPI_Type_create_keyval', 'MPI_Win_create_keyval', 'MPI_Keyval_create',
           'MPI_Get_version', 'MPI_Buffer_attach', 'MPI_Buffer_detach', 'MPI_Buffer_attach_c', 'MPI_Buffer_detach_c', 'MPI_Op_create', 'MPI_Op_create_c', 'MPI_Comm_create_errhandler', 'MPI_Win_create_errhandler',
           'MPI_File_create_errhandler', 'MPI_Errhandler_create',
           'MPI_Comm_get_attr', 'MPI_Attr_get', 'MPI_Win_get_attr',
           'MPI_File_set_view', 'MPI_File_get_view', 'MPI_Register_datarep', 'MPI_Register_datarep_c',
           'MPI_Comm_spawn', 'MPI_Comm_spawn_multiple']


def cint(s):
    return int(str(s), 0)


class Gen(Handles, Special):
    def __init__(self, api, native, facts, rules, kumi=None):
        self.api, self.facts, self.rules, self.kumi = api, facts, rules, kumi
        self.dlsym_names = {}   # kumi_abi_X pointer -> the symbol of Kumi's libmpi it is, where not kumi_abi_X
        self.nat = {}
        for c in native['constants']:
            if 'alias_of' in c:
                continue
            self.nat[c['name']] = c
        for c in native['constants']:
            if 'alias_of' in c:
                self.nat[c['name']] = self.nat[c['alias_of']]
        self.fc = facts['constants']
        self.ints = rules['handles'] == 'int'
        self.fobjects = facts['objects']
        self.ffuncs = set(facts['functions'])
        self.out = []
        self.exported, self.skipped = [], []

    # ------------------------------------------------------------ constants
    def nval(self, name):
        return cint(self.nat[name]['value'])

    def fval(self, name):
        c = self.fc.get(name)
        if c is None or c.get('absent') or 'value' not in c:
            return None
        return cint(c['value'])

    def domain_names(self, kind):
        names = INT_DOMAINS[kind]
        if names is None:
            pfx = {'COMBINER': 'MPI_COMBINER_', 'SPLIT_TYPE': 'MPI_COMM_TYPE_'}[kind]
            names = [n for n in self.nat if n.startswith(pfx)]
            if kind == 'SPLIT_TYPE':
                names.append('MPI_UNDEFINED')
        return names

    def domain_fns(self, kind):
        """C functions dom_KIND_in / dom_KIND_out: foreign <-> native values."""
        pairs = []
        for n in self.domain_names(kind):
            fv = self.fval(n)
            if fv is None:
                continue
            pairs.append((n, fv, self.nval(n)))
        diff = [(n, f, v) for n, f, v in pairs if f != v]
        fvals = {f for _, f, _ in pairs}
        nvals = {v for _, _, v in pairs}
        absent = [n for n in self.domain_names(kind) if self.fval(n) is None]
        lo = self.lower(kind)
        o = []
        o.append('static inline int dom_%s_in(int v)\n{' % lo)
        if (diff or nvals - fvals) and all(f < 0 for _, f, _ in diff) and all(v < 0 for v in nvals - fvals):
            o.append('    if (SHIM_LIKELY(v >= 0)) return v;   /* a plain value (the constants are negative) */')
        for n, f, v in diff:
            o.append('    if (v == %d) return %d;   /* %s */' % (f, v, n))
        # a foreign value that is no foreign constant but is a native one: make it invalid
        for v in sorted(nvals - fvals):
            o.append('    if (v == %d) return SHIM_POISON;' % v)
        o.append('    return v;\n}')
        o.append('static inline int dom_%s_out(int v)\n{' % lo)
        if diff and all(v < 0 for _, _, v in diff):
            o.append('    if (SHIM_LIKELY(v >= 0)) return v;')
        for n, f, v in diff:
            o.append('    if (v == %d) return %d;   /* %s */' % (v, f, n))
        for n in absent:   # native constants the foreign ABI lacks: keep the native value
            o.append('    /* %s: absent in the foreign ABI, passed as is */' % n)
        o.append('    return v;\n}')
        return '\n'.join(o), bool(diff or (nvals - fvals))

    def bits_fns(self, kind):
        pairs = [(n, self.fval(n), self.nval(n)) for n in BIT_DOMAINS[kind] if self.fval(n) is not None]
        lo = self.lower(kind)
        same = all(f == v for _, f, v in pairs)
        fmask = 0
        o = ['static inline int bits_%s_in(int v)\n{' % lo]
        if same:
            o.append('    return v;\n}')
        else:
            o.append('    int r = 0;')
            for n, f, v in pairs:
                o.append('    if (v & %d) r |= %d;   /* %s */' % (f, v, n))
                fmask |= f
            o.append('    if (v & ~%d) r |= 0x40000000;   /* unknown bits stay visible as invalid */' % fmask)
            o.append('    return r;\n}')
        o.append('static inline int bits_%s_out(int v)\n{' % lo)
        if same:
            o.append('    return v;\n}')
        else:
            o.append('    int r = 0;')
            for n, f, v in pairs:
                o.append('    if (v & %d) r |= %d;   /* %s */' % (v, f, n))
            o.append('    return r;\n}')
        return '\n'.join(o)

    @staticmethod
    def lower(kind):
        return kind.lower()

    # ------------------------------------------------------------ prologue
    def prologue(self):
        r = self.rules
        o = []
        w = o.append
        w('/* Generated by components/abi/mkshim.py for the %s ABI (%s) from data/mpi-procedures.json,' %
          (self.facts['name'], self.facts['library']))
        w(' * data/mpi-abi-1.0.json and data/abi/%s.json.  Do not edit.' % self.facts['name'])
        w(' *')
        w(' * Includes neither Kumi\'s mpi.h nor the foreign one: N_* are Kumi\'s (native, MPI 5.0')
        w(' * standard ABI) types, F_* the foreign ones.  Foreign handles are addresses of the')
        w(' * predefined objects below ({magic, native handle, padding}; a PIE executable has its')
        w(' * own copy of each, by copy relocation, which this library reaches through its GOT)')
        w(' * or, for objects the program created, Kumi\'s own pointers. */')
        w('#define _GNU_SOURCE   /* dladdr, dl_iterate_phdr */')
        w('#include <stddef.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n#include <limits.h>\n#include <sys/mman.h>')
        w('#define SHIM_EXPORT __attribute__((visibility("default")))')
        w('#define SHIM_LIKELY(x) __builtin_expect(!!(x), 1)')
        w('#define SHIM_UNLIKELY(x) __builtin_expect(!!(x), 0)')
        w('#define SHIM_POISON (INT_MIN + 77)   /* a value no MPI accepts */')
        if not self.ints:
            w('#define SHIM_MAGIC %s' % r['magic'])
        w('#define SHIM_STACK 32   /* arrays up to this many entries are converted on the stack */')
        for t in HANDLE_TYPES:
            s = t[4:]
            w('typedef struct N_%s_s *N_%s;' % (s, s))
            w('typedef %sF_%s;' % ('int ' if self.ints and t != 'MPI_File' else 'void *', s))
        w('typedef intptr_t MPI_Aint;\ntypedef int64_t MPI_Offset;\ntypedef int64_t MPI_Count;\ntypedef int MPI_Fint;')
        w('typedef struct { int MPI_SOURCE, MPI_TAG, MPI_ERROR; int MPI_internal[5]; } N_Status;')
        st = self.facts['status']
        fields = dict(st['fields'])
        flist = [('int', 'MPI_SOURCE', fields['MPI_SOURCE']), ('int', 'MPI_TAG', fields['MPI_TAG']),
                 ('int', 'MPI_ERROR', fields['MPI_ERROR'])] + [(t, n, off) for t, n, off, _ in r['status_private']]
        flist.sort(key=lambda x: x[2])
        w('typedef struct { %s } F_Status;' % ' '.join('%s %s;' % (t, n) for t, n, _ in flist))
        w('_Static_assert(sizeof(F_Status) == %d, "foreign MPI_Status size");' % st['size'])
        for t, n, off in flist:
            w('_Static_assert(offsetof(F_Status, %s) == %d, "foreign MPI_Status field");' % (n, off))
        w('_Static_assert(sizeof(N_Status) == 32, "native MPI_Status size");')
        w('typedef void (F_User_function)(void *, void *, int *, F_Datatype *);')
        w('typedef void (F_Errhandler_function)(void *, int *, ...);')
        w('typedef void (kumi_abi_op_fn)(void *, void *, MPI_Count, N_Datatype, void *);')
        w('typedef void (kumi_abi_errhandler_fn)(int, void *, int *, void *);')
        w('extern int kumi_abi_op_create(kumi_abi_op_fn *, void *, int, N_Op *);')
        w('extern int kumi_abi_errhandler_create(int, kumi_abi_errhandler_fn *, void *, N_Errhandler *);')
        w('enum { KUMI_ABI_ERRH_COMM = 1, KUMI_ABI_ERRH_WIN, KUMI_ABI_ERRH_FILE, KUMI_ABI_ERRH_SESSION };')
        w('')
        if self.ints:
            self.int_handles(w)
        else:
            self.object_handles(w)
        self.rest_of_prologue(o, w)

    # ------------------------------------------------------------ int handles (MPICH)
    def hin(self, s, e):
        return 'h_in_%s(%s)' % (s, e) if self.ints else 'h_in(%s)' % e

    def hout(self, s, e):
        return 'h_out_%s(%s)' % (s, e) if self.ints else 'h_out(%s)' % e

    def hpeek(self, s, e):
        """a handle passed to a callback (not a new reference for the program)"""
        return 'h_peek_%s(%s)' % (s, e) if self.ints else 'h_out(%s)' % e

    def rest_of_prologue(self, o, w):
        r = self.rules
        # error classes
        w('/* ---- error codes: Kumi\'s code is its class (< 0x4000) or ((slot + 1) << 14 | class) for a')
        w(' * detailed message, or >= 0x01000000 for user codes and classes (passed as they are: they lie')
        w(' * above the foreign predefined range, 0..%s).  Native classes the foreign ABI lacks' % self.fval('MPI_ERR_LASTCODE'))
        w(' * become 0x100 + their native value, which no foreign class uses. */')
        emap = []
        for n, c in self.nat.items():
            if not (n.startswith('MPI_ERR_') or n.startswith('MPI_T_ERR_')) or n == 'MPI_ERR_LASTCODE':
                continue
            if n == 'MPI_SUCCESS':
                continue
            emap.append((n, self.nval(n), self.fval(n)))
        emap.append(('MPI_SUCCESS', 0, 0))
        fused = {f for _, _, f in emap if f is not None}
        w('static int err_cls_out(int c)\n{\n    switch (c) {')
        for n, nv, fv in sorted(set(emap), key=lambda x: x[1]):
            if fv is None:
                fv = 0x100 + nv
                assert fv not in fused and fv < 0x4000
            w('    case %d: return %d;   /* %s */' % (nv, fv, n))
        w('    default: return c;\n    }\n}')
        w('static int err_cls_in(int c)\n{\n    switch (c) {')
        for n, nv, fv in sorted(set(emap), key=lambda x: x[1]):
            if fv is None:
                fv = 0x100 + nv
            w('    case %d: return %d;   /* %s */' % (fv, nv, n))
        w('    default: return c;\n    }\n}')
        last = self.fval('MPI_ERR_LASTCODE')
        if last is not None and last >= 0x01000000:
            # the foreign predefined codes reach up to MPI_ERR_LASTCODE (MPICH: 0x3fffffff) and its
            # user classes and codes lie above: Kumi's (>= 0x01000000) get that bit
            ub = 1 << last.bit_length()
            w('''static inline int err_out(int c)
{
    if (SHIM_LIKELY(c == 0)) return 0;
    if (c < 0) return c;
    if (c >= 0x01000000) return c | 0x%(ub)x;
    return (c & ~0x3fff) | err_cls_out(c & 0x3fff);
}
static inline int err_in(int c)
{
    if (c <= 0) return c;
    if (c & 0x%(ub)x) return c & ~0x%(ub)x;
    if (c >= 0x01000000) return c;
    return (c & ~0x3fff) | err_cls_in(c & 0x3fff);
}''' % {'ub': ub})
        else:
          w('''static inline int err_out(int c)
{
    if (SHIM_LIKELY(c == 0)) return 0;
    if (c < 0 || c >= 0x01000000) return c;
    return (c & ~0x3fff) | err_cls_out(c & 0x3fff);
}
static inline int err_in(int c)
{
    if (c <= 0 || c >= 0x01000000) return c;
    return (c & ~0x3fff) | err_cls_in(c & 0x3fff);
}''')
        for k in INT_DOMAINS:
            code, _ = self.domain_fns(k)
            w(code)
        for k in BIT_DOMAINS:
            w(self.bits_fns(k))
        # sentinels
        for kind, names in SENTINELS.items():
            lo = self.lower(kind)
            syms = [(n, self.fc[n]['symbol']) for n in names if self.ints and 'symbol' in self.fc.get(n, {})]
            for n, sym in syms:
                # MPICH: extern int * const MPI_UNWEIGHTED, pointing at MPIR_C_MPI_UNWEIGHTED (both
                # may be copy-relocated into the program: reached through the GOT)
                tgt = 'MPIR_C_' + sym
                w('SHIM_EXPORT char %s[%d];' % (tgt, self.fobjects[tgt]))
                assert self.fobjects[sym] == 8
                w('SHIM_EXPORT int *const %s = (int *)%s;' % (sym, tgt))
            w('static inline void *sent_%s_in(const void *p)\n{' % lo)
            for n, sym in syms:
                w('    if (p == (const void *)MPIR_C_%s || p == (const void *)%s) return (void *)%d;   /* %s */' % (sym, sym, self.nval(n), n))
            for n in names:
                fv, nv = self.fval(n), self.nval(n)
                if fv is not None and fv != nv:
                    w('    if ((uintptr_t)p == %s) return (void *)%d;   /* %s */' % ('(uintptr_t)%d' % fv if fv < 0 else fv, nv, n))
            w('    return (void *)p;\n}')
        w('#define F_IN_PLACE ((const void *)%d)' % self.fval('MPI_IN_PLACE'))
        for n in ('MPI_STATUS_IGNORE', 'MPI_STATUSES_IGNORE', 'MPI_ERRCODES_IGNORE'):
            if self.fval(n) != self.nval(n) and not (self.ints and n != 'MPI_ERRCODES_IGNORE'):
                sys.exit('mkshim: %s differs: not supported yet' % n)
        # status
        priv = {role: n for _, n, _, role in r['status_private']}
        if self.ints:
            assert self.nval('MPI_STATUS_IGNORE') == 0 and self.fval('MPI_STATUS_IGNORE') == self.fval('MPI_STATUSES_IGNORE')
            w('''/* ---- MPI_Status.  Kumi keeps the received byte count in MPI_internal[0] (low 32 bits) and
 * [1] (high), and 1 in MPI_internal[2] if the request was cancelled (framework/core/core.h); the
 * foreign status has the count's low 32 bits in %(lo)s, and its high bits, shifted left by one,
 * above the cancelled bit (bit 0) in %(hi)s.  MPI_STATUS(ES)_IGNORE is (F_Status *)%(ign)d here,
 * NULL in Kumi (ST_OK: a status to write). */
#define ST_OK(p) ((uintptr_t)(p) > %(ign)d)
static inline void st_out(F_Status *f, const N_Status *n)
{
    f->MPI_SOURCE = dom_rank_out(n->MPI_SOURCE);
    f->MPI_TAG = dom_tag_out(n->MPI_TAG);
    if (n->MPI_ERROR != SHIM_POISON) f->MPI_ERROR = err_out(n->MPI_ERROR);   /* else: left as it was */
    f->%(lo)s = n->MPI_internal[0];
    f->%(hi)s = (int)(((uint32_t)n->MPI_internal[1] << 1) | (n->MPI_internal[2] != 0));
}
static inline void st_in(N_Status *n, const F_Status *f)
{
    n->MPI_SOURCE = dom_rank_in(f->MPI_SOURCE);
    n->MPI_TAG = dom_tag_in(f->MPI_TAG);
    n->MPI_ERROR = err_in(f->MPI_ERROR);
    n->MPI_internal[0] = f->%(lo)s;
    n->MPI_internal[1] = (int)((uint32_t)f->%(hi)s >> 1);
    n->MPI_internal[2] = f->%(hi)s & 1;
    n->MPI_internal[3] = n->MPI_internal[4] = 0;
}''' % {'lo': priv['count_lo'], 'hi': priv['count_hi'], 'ign': self.fval('MPI_STATUS_IGNORE')})
        else:
          w('''/* ---- MPI_Status.  Kumi keeps the received byte count in MPI_internal[0] (low 32 bits) and
 * [1] (high), and 1 in MPI_internal[2] if the request was cancelled (framework/core/core.h). */
static inline void st_out(F_Status *f, const N_Status *n)
{
    f->MPI_SOURCE = dom_rank_out(n->MPI_SOURCE);
    f->MPI_TAG = dom_tag_out(n->MPI_TAG);
    if (n->MPI_ERROR != SHIM_POISON) f->MPI_ERROR = err_out(n->MPI_ERROR);   /* else: left as it was */
    f->%(c)s = n->MPI_internal[2] != 0;
    f->%(u)s = (size_t)((uint64_t)(uint32_t)n->MPI_internal[0] | ((uint64_t)(uint32_t)n->MPI_internal[1] << 32));
}
static inline void st_in(N_Status *n, const F_Status *f)
{
    uint64_t u = (uint64_t)f->%(u)s;
    n->MPI_SOURCE = dom_rank_in(f->MPI_SOURCE);
    n->MPI_TAG = dom_tag_in(f->MPI_TAG);
    n->MPI_ERROR = err_in(f->MPI_ERROR);
    n->MPI_internal[0] = (int)(uint32_t)(u & 0xffffffffu);
    n->MPI_internal[1] = (int)(uint32_t)(u >> 32);
    n->MPI_internal[2] = f->%(c)s != 0;
    n->MPI_internal[3] = n->MPI_internal[4] = 0;
}''' % {'c': priv['cancelled'], 'u': priv['count']})
        w('''/* a scratch array: on the stack up to SHIM_STACK entries, else malloc'd */
#define SCRATCH(T, name, n) T name##_stk[SHIM_STACK]; T *name = (n) <= SHIM_STACK ? name##_stk : malloc(sizeof(T) * (size_t)((n) > 0 ? (n) : 1))
#define SCRATCH_FREE(name) do { if (name != name##_stk) free(name); } while (0)
#define SHIM_ERR_NO_MEM %d''' % self.fval('MPI_ERR_NO_MEM'))
        w('extern int kumi_abi_MPI_Comm_test_inter(N_Comm, int *);')
        w('extern int kumi_abi_MPI_Comm_size(N_Comm, int *);')
        w('extern int kumi_abi_MPI_Comm_remote_size(N_Comm, int *);')
        w('extern int kumi_abi_MPI_Type_get_extent(N_Datatype, MPI_Aint *, MPI_Aint *);')
        w('extern int kumi_abi_MPI_Topo_test(N_Comm, int *);')
        w('extern int kumi_abi_MPI_Cartdim_get(N_Comm, int *);')
        w('extern int kumi_abi_MPI_Comm_rank(N_Comm, int *);')
        w('extern int kumi_abi_MPI_Graph_neighbors_count(N_Comm, int, int *);')
        w('extern int kumi_abi_MPI_Dist_graph_neighbors_count(N_Comm, int *, int *, int *);')
        w('''static int nbr_count(%(ft)sfcomm, int out)
{
    N_Comm c = %(hin)s;
    int t = 0, n = 0, in_n = 0, out_n = 0, wt = 0, r = 0;
    if (kumi_abi_MPI_Topo_test(c, &t) != 0) return 0;
    if (t == %(cart)d) { kumi_abi_MPI_Cartdim_get(c, &n); return 2 * n; }
    if (t == %(graph)d) { kumi_abi_MPI_Comm_rank(c, &r); kumi_abi_MPI_Graph_neighbors_count(c, r, &n); return n; }
    if (t == %(dist)d) { kumi_abi_MPI_Dist_graph_neighbors_count(c, &in_n, &out_n, &wt); return out ? out_n : in_n; }
    return 0;
}''' % {'ft': 'int ' if self.ints else 'void *', 'hin': self.hin('Comm', 'fcomm'), 'cart': self.nval('MPI_CART'), 'graph': self.nval('MPI_GRAPH'), 'dist': self.nval('MPI_DIST_GRAPH')})
        w('''static int peers(%(ft)sfcomm)
{
    N_Comm c = %(hin)s;
    int inter = 0, n = 0;
    if (kumi_abi_MPI_Comm_test_inter(c, &inter) != 0) return 0;
    if (inter) kumi_abi_MPI_Comm_remote_size(c, &n); else kumi_abi_MPI_Comm_size(c, &n);
    return n;
}''' % {'ft': 'int ' if self.ints else 'void *', 'hin': self.hin('Comm', 'fcomm')})
        self.out.extend(o)

    # ------------------------------------------------------------ procedures
    def procs(self):
        for p in self.api['procedures']:
            if 'c_params' not in p:
                continue
            m = re.match(r'\s*(.*?)\s*(MPI_\w+)\(', p['c'])
            yield m.group(2), m.group(1), p
            if p.get('c_large'):
                lp = self.large(p)
                if lp:
                    yield lp['name_c'], m.group(1), lp

    @staticmethod
    def large(p):
        """The large-count form MPI_X_c of a procedure (MPI 4.0): the parameters of the int-count
        form, with the types of the c_large prototype (MPI_Count counts, MPI_Aint displacements);
        the kinds, and the tables keyed by procedure (array lengths, strings), are the int
        form's ('base')."""
        _, lname, lparams = mpiapi.parse_proto(mpiapi.fixed_large(p['c'], p['c_large']))
        byname = {q['name']: q for q in lparams}
        if len(lparams) != len(p['c_params']) or any(a['name'] not in byname for a in p['c_params']):
            return None
        cps = []
        for a in p['c_params']:
            q = byname[a['name']]
            t = re.sub(r'\s*\*', '*', q['type'].replace('const ', '').strip())
            cps.append(dict(a, type=t, array=q['array']))
        base = re.match(r'\s*.*?\s*(MPI_\w+)\(', p['c']).group(1)
        return dict(p, c=p['c_large'], c_params=cps, name_c=lname, base=base)

    @staticmethod
    def large_extra(p):
        """MPI_Type_get_envelope_c / MPI_Type_get_contents_c: one parameter more than the int form
        (the large counts), so large() does not make them (the Fortran shim's hidden entries; the C
        shim has them by hand, mkshim_special.py): the int form's kinds, the new
        parameters' from their neighbours, and a Fortran argument list to match."""
        if p['name'] not in ('mpi_type_get_envelope', 'mpi_type_get_contents'):
            return None
        _, lname, lparams = mpiapi.parse_proto(mpiapi.fixed_large(p['c'], p['c_large']))
        small = {q['name']: q for q in p['c_params']}
        cps = []
        for q in lparams:
            t = re.sub(r'\s*\*', '*', q['type'].replace('const ', '').strip())
            like = small.get(q['name']) or (small['array_of_addresses'] if q['name'].startswith('array_')
                                            else small['max_integers' if 'max_integers' in small else 'num_integers'])
            cps.append(dict(like, name=q['name'], type=t, array=q['array']))
        f90 = '%s(%s, IERROR)' % (lname.upper(), ', '.join(q['name'].upper() for q in lparams))
        base = re.match(r'\s*.*?\s*(MPI_\w+)\(', p['c']).group(1)
        return dict(p, c=mpiapi.fixed_large(p['c'], p['c_large']), c_params=cps, name_c=lname, base=base, f90=f90)

    def param_plan(self, name, p, a, byname):
        """-> (native decl type, foreign decl type, pre, arg, post) or a str (why not)."""
        kind = PARAM_KIND.get((name, a['name']), a['kind'])
        t = a['type'].replace('const ', '').strip()
        arr = a['array'] != ''
        d = a['direction'].split('.')[-1]
        pn = a['name']
        const = 'const ' if a['constant'] == 'True' else ''
        if kind in HANDLE_KINDS:
            ht = HANDLE_KINDS[kind]
            s = ht[4:]
            if ht == 'MPI_Session' and not self.ints:   # MPICH 4 has sessions (int handles)
                return 'sessions: not in the foreign ABI'
            if arr:
                ln = ARRAY_LENGTHS.get((name, pn))
                if ln is None:
                    return 'array %s: length unknown' % pn
                pre = ['int %s_n = %s ? (%s) : 0;' % (pn, pn, ln), 'SCRATCH(N_%s, %s_k, %s_n);' % (s, pn, pn),
                       'if (!%s_k) return SHIM_ERR_NO_MEM;' % pn]
                post = []
                if d in ('IN', 'INOUT'):
                    pre.append('for (int i = 0; i < %s_n; i++) %s_k[i] = %s;' % (pn, pn, self.hin(s, '%s[i]' % pn)))
                if d == 'INOUT' and self.ints:
                    post.append('for (int i = 0; i < %s_n; i++) h_upd_%s(&%s[i], %s_k[i]);' % (pn, s, pn, pn))
                elif d in ('OUT', 'INOUT'):
                    post.append('for (int i = 0; i < %s_n; i++) %s[i] = %s;' % (pn, pn, self.hout(s, '%s_k[i]' % pn)))
                post.append('SCRATCH_FREE(%s_k);' % pn)
                return ('N_%s *' % s, '%sF_%s *' % (const, s), pre, '%s ? %s_k : NULL' % (pn, pn), post)
            if t == ht:
                return ('N_%s' % s, 'F_%s' % s, [], self.hin(s, pn), [])
            if t == ht + '*':
                if d == 'OUT':
                    return ('N_%s *' % s, 'F_%s *' % s, ['N_%s %s_k;' % (s, pn)], '&%s_k' % pn,
                            ['if (rc == 0) *%s = %s;' % (pn, self.hout(s, pn + '_k'))])
                if d == 'INOUT' or d == 'IN':
                    return ('N_%s *' % s, 'F_%s *' % s, ['N_%s %s_k = %s;' % (s, pn, self.hin(s, '*' + pn))], '&%s_k' % pn,
                            ['h_upd_%s(%s, %s_k);' % (s, pn, pn) if self.ints else '*%s = h_out(%s_k);' % (pn, pn)])
            return 'handle %s of type %s' % (pn, t)
        if kind == 'STATUS':
            if arr:
                ln = ARRAY_LENGTHS.get((name, pn))
                if ln is None:
                    return 'status array %s: length unknown' % pn
                ok = 'ST_OK(%s)' % pn if self.ints else pn
                pre = ['int %s_n = %s ? %s : 0;' % (pn, ok, ln),
                       'SCRATCH(N_Status, %s_k, %s_n);' % (pn, pn),
                       'if (!%s_k) return SHIM_ERR_NO_MEM;' % pn,
                       'for (int i = 0; i < %s_n; i++) %s_k[i].MPI_ERROR = %s_k[i].MPI_SOURCE = SHIM_POISON;' % (pn, pn, pn)]
                post = ['for (int i = 0; i < %s_n; i++) if (%s_k[i].MPI_SOURCE != SHIM_POISON) st_out(&%s[i], &%s_k[i]);' % (pn, pn, pn, pn),
                        'SCRATCH_FREE(%s_k);' % pn]
                return ('N_Status *', 'F_Status *', pre, '%s ? %s_k : NULL' % (ok, pn), post)
            ok = 'ST_OK(%s)' % pn if self.ints else pn
            if d == 'OUT':
                # MPI_ERROR is left as it was unless Kumi sets it; a status Kumi did not write
                # (an error before the call got to it) is left as it was
                return ('N_Status *', 'F_Status *',
                        ['N_Status %s_k; %s_k.MPI_ERROR = %s_k.MPI_SOURCE = SHIM_POISON;' % (pn, pn, pn)],
                        '%s ? &%s_k : NULL' % (ok, pn),
                        ['if (%s && %s_k.MPI_SOURCE != SHIM_POISON) st_out(%s, &%s_k);' % (ok, pn, pn, pn)])
            if d == 'IN':
                return ('const N_Status *', 'const F_Status *', ['N_Status %s_k; if (%s) st_in(&%s_k, %s);' % (pn, ok, pn, pn)],
                        '%s ? &%s_k : NULL' % (ok, pn), [])
            if d == 'INOUT':
                return ('N_Status *', 'F_Status *', ['N_Status %s_k; if (%s) st_in(&%s_k, %s);' % (pn, ok, pn, pn)],
                        '%s ? &%s_k : NULL' % (ok, pn), ['if (%s) st_out(%s, &%s_k);' % (ok, pn, pn)])
        if kind in INT_DOMAINS or kind in BIT_DOMAINS or kind in ERR_KINDS:
            if kind in INT_DOMAINS:
                fi, fo = 'dom_%s_in' % kind.lower(), 'dom_%s_out' % kind.lower()
            elif kind in BIT_DOMAINS:
                fi, fo = 'bits_%s_in' % kind.lower(), 'bits_%s_out' % kind.lower()
            else:
                fi, fo = 'err_in', 'err_out'
            if arr:
                if (name, pn) not in ARRAY_LENGTHS:
                    return 'int array %s (%s): length unknown' % (pn, kind)
                ln = ARRAY_LENGTHS[(name, pn)]
                if ln is None:    # only plain values are valid there: pass
                    return ('%sint *' % const, '%sint *' % const, [], pn, [])
                pre = ['int %s_n = %s;' % (pn, ln), 'SCRATCH(int, %s_k, %s_n);' % (pn, pn),
                       'if (!%s_k) return SHIM_ERR_NO_MEM;' % pn]
                post = []
                if d in ('IN', 'INOUT'):
                    pre.append('for (int i = 0; i < %s_n; i++) %s_k[i] = %s(%s[i]);' % (pn, pn, fi, pn))
                if d in ('OUT', 'INOUT'):
                    post.append('for (int i = 0; i < %s_n; i++) %s[i] = %s(%s_k[i]);' % (pn, pn, fo, pn))
                post.append('SCRATCH_FREE(%s_k);' % pn)
                return ('int *', '%sint *' % const, pre, '%s_k' % pn, post)
            if t == 'int':
                return ('int', 'int', [], '%s(%s)' % (fi, pn), [])
            if t == 'int*':
                if d == 'OUT':
                    return ('int *', 'int *', ['int %s_k;' % pn], '&%s_k' % pn,
                            ['if (rc == 0) *%s = %s(%s_k);' % (pn, fo, pn)])
                return ('int *', 'int *', ['int %s_k = %s(*%s);' % (pn, fi, pn)], '&%s_k' % pn,
                        ['*%s = %s(%s_k);' % (pn, fo, pn)])
            return '%s %s of type %s' % (kind, pn, t)
        if kind == 'STRING' or kind == 'STRING_ARRAY':
            if d == 'IN' or kind == 'STRING_ARRAY':
                if kind == 'STRING_ARRAY':
                    return 'string arrays not translated yet'
                return ('%schar *' % const, '%schar *' % const, [], pn, [])
            rule = OUT_STRINGS.get((name, pn))
            if rule is None:
                return 'output string %s: bound unknown' % pn
            mx, lenp = rule
            if mx == 'user':
                return ('char *', 'char *', [], pn, [])
            fv, nv = self.fval(mx), self.nval(mx)
            if fv is None:
                return 'output string %s: %s absent' % (pn, mx)
            if fv >= nv:
                return ('char *', 'char *', [], pn, [])
            pre = ['char %s_k[%d];' % (pn, nv)]
            post = ['if (rc == 0) { size_t l = strnlen(%s_k, %d); memcpy(%s, %s_k, l); %s[l] = 0; %s }'
                    % (pn, fv - 1, pn, pn, pn, ('*%s = (int)l;' % lenp) if lenp else '')]
            return ('char *', 'char *', pre, '%s_k' % pn, post)
        if kind == 'WEIGHT':
            return ('%sint *' % const, '%sint *' % const, [], '(int *)sent_weight_in(%s)' % pn, [])
        if kind in PASS_KINDS or kind in PTR_KINDS:
            if kind == 'BUFFER':
                return ('%svoid *' % const, '%svoid *' % const, [], 'sent_buffer_in(%s)' % pn, [])
            ct = self.ctype(t, arr, a.get('array', ''))
            if ct is None:
                return 'type %s' % t
            return (const + ct, const + ct, [], pn, [])
        return 'kind %s (%s)' % (kind, pn)

    @staticmethod
    def ctype(t, arr, ad):
        base = {'int': 'int', 'int*': 'int *', 'void*': 'void *', 'MPI_Aint': 'MPI_Aint', 'MPI_Aint*': 'MPI_Aint *',
                'MPI_Count': 'MPI_Count', 'MPI_Count*': 'MPI_Count *', 'MPI_Offset': 'MPI_Offset',
                'MPI_Offset*': 'MPI_Offset *', 'char***': 'char ***', 'char**': 'char **', 'char*': 'char *',
                'void**': 'void **'}.get(t)
        if base is None:
            return None
        if arr:
            base += ' *'
        return base

    def gen_proc(self, name, ret, p):
        byname = {a['name']: a for a in p['c_params']}
        plans = []
        for a in p['c_params']:
            r = self.param_plan(p.get('base', name), p, a, byname)
            if isinstance(r, str):
                return r
            plans.append((a['name'], r))
        rett = {'int': 'int', 'double': 'double'}.get(ret)
        if rett is None:
            return 'return type %s' % ret
        nparams = ', '.join('%s %s' % (r[0], n) for n, r in plans) or 'void'
        fparams = ', '.join('%s %s' % (r[1], n) for n, r in plans) or 'void'
        o = self.out
        o.append('extern %s kumi_abi_%s(%s);' % (rett, name, nparams))
        o.append('SHIM_EXPORT %s P%s(%s)\n{' % (rett, name, fparams))
        pre = [x for _, r in plans for x in r[2]]
        post = [x for _, r in plans for x in r[4]]
        args = ', '.join(r[3] for _, r in plans)
        for x in pre:
            o.append('    ' + x)
        if self.ints and name == 'MPI_Request_free':
            post = ['h_free_Request(request, request_k);' if x.startswith('h_upd_Request') else x for x in post]
        if self.ints and name == 'MPI_Grequest_complete':
            post = ['if (rc == 0) ht_greq_mark(request, 3);']
        if rett == 'double' or not post:
            # nothing to convert afterwards: a tail call (Kumi returns the code in this ABI
            # already: kumi_abi_set_err_out, set by the constructor)
            o.append('    return kumi_abi_%s(%s);\n}' % (name, args))
        else:
            o.append('    int rc = kumi_abi_%s(%s);' % (name, args))
            for x in post:
                o.append('    ' + x)
            o.append('    return rc;\n}')
        o.append('SHIM_EXPORT %s %s(%s) __attribute__((weak, alias("P%s")));' % (rett, name, fparams, name))
        o.append('')
        return None

    def run(self):
        self.prologue()
        for name, ret, p in self.procs():
            if name not in self.ffuncs:
                self.skipped.append((name, 'not in %s' % self.facts['library']))
                continue
            if name == 'MPI_Pcontrol':   # variadic, written by hand in Kumi: no kumi_abi_ entry
                self.dlsym_names['kumi_abi_MPI_Pcontrol'] = 'PMPI_Pcontrol'
                self.out.append('''extern int kumi_abi_MPI_Pcontrol(const int, ...);
SHIM_EXPORT int PMPI_Pcontrol(const int level, ...) { return kumi_abi_MPI_Pcontrol(level); }
SHIM_EXPORT int MPI_Pcontrol(const int level, ...) __attribute__((weak, alias("PMPI_Pcontrol")));''')
                self.exported.append(name)
                continue
            m = re.match(r'^MPI_(Comm|Type|Group|Info|Errhandler|Op|Request|Win|File|Message)_(c2f|f2c)$', name)
            if m:
                self.handle_conv(name, m.group(1), m.group(2))
                self.exported.append(name)
                continue
            if name in ('MPI_Status_c2f', 'MPI_Status_f2c'):
                self.status_conv(name)
                self.exported.append(name)
                continue
            if self.kumi is not None and name not in self.kumi:
                why = 'Kumi does not implement it yet'
                if TOOLS.match(name):
                    why = 'Kumi does not implement MPI_T yet'
                elif name.startswith('MPI_File_') or name == 'MPI_Register_datarep':
                    why = 'Kumi does not implement file I/O yet'
                elif re.search(r'_(c2f|f2c|c2f08|f082c|f082f|f2f08)$', name):
                    why = 'status conversions to Fortran (the Fortran library\'s part)'
                elif re.match(r'^MPI_(Comm_(spawn|accept|connect|disconnect|get_parent|join)|Open_port|Close_port|(Un)?[Pp]ublish_name|Lookup_name)', name):
                    why = 'Kumi does not implement dynamic processes yet'
                self.skipped.append((name, why))
                continue
            if TOOLS.match(name):
                self.skipped.append((name, 'MPI_T tools interface not translated yet'))
                continue
            if p.get('base') and name not in SPECIAL and (p['base'] in SPECIAL or p['base'] in SKIP):
                why = 'large-count form of a procedure translated by hand (%s)' % p['base']
            elif name in SPECIAL:
                why = self.special(name)
            elif SKIP.get(name):
                why = SKIP[name]
            else:
                why = self.gen_proc(name, ret, p)
            if why:
                self.skipped.append((name, why))
            else:
                self.exported.append(name)
        return self.bind_native('\n'.join(self.out) + '\n')

    def bind_native(self, src):
        """Kumi's entries are reached through pointers that a constructor fills from a dlopen of
        Kumi's libmpi.  Linked as a DT_NEEDED, libmpi.so.0 would be in the program's global
        scope from the start, and a procedure the shim does not export would bind to Kumi's
        native MPI_X (another ABI) instead of failing at load time.  Loaded by the constructor,
        after the program's own relocations, it misses the immediate bindings (-z now: a missing
        procedure fails at load, as it should).  It is RTLD_LOCAL (Kumi's components link
        libmpi themselves), so neither lazily bound references nor objects the program dlopens
        later (a Python extension) can reach Kumi's native MPI_X: they fail as undefined.  The
        constructor also checks every MPI_* / PMPI_* that the objects loaded so far import and
        stops the program, naming them, if the shim does not export one, so that a program
        that needs one fails at load rather than at its first call."""
        names, out = [], []
        for line in src.split('\n'):
            m = re.match(r'^extern (\w+) (kumi_abi_\w+)\((.*)\);$', line)
            if m:
                if m.group(2) in names:
                    continue
                names.append(m.group(2))
                line = 'static %s (*%s)(%s);' % m.groups()
            out.append(line)
        lib = self.rules['native_library']
        out.append('''/* ---- Kumi's libmpi, loaded privately (see mkshim.py: bind_native) */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>
#ifndef KUMI_LIBDIR
#define KUMI_LIBDIR "."
#endif
static const struct { const char *name; void **slot; } shim_entries[] = {''')
        for n in names:
            out.append('    { "%s", (void **)&%s },' % (self.dlsym_names.get(n, n), n))
        # the objects' MPI_* / PMPI_* this library does not export (a companion library, the C++
        # bindings' libmpi_cxx.so.40, may define one); neither this library nor Kumi's is scanned
        scan = elf_scan_text('shim', self.facts['library'], self.facts['name'], 'struct shim_scan *sc', 'sc->missing',
                             '(strncmp(n, "MPI_", 4) == 0 || strncmp(n, "PMPI_", 5) == 0) && !shim_exported(n) && '
                             '!dlsym(RTLD_DEFAULT, n)',
                             '    struct shim_scan *sc = arg;\n'
                             '    if ((const void *)info->dlpi_addr == sc->self_base || '
                             '(const void *)info->dlpi_addr == sc->kumi_base) return 0;\n')
        out.append('''};
/* the procedures this library exports, sorted (strcmp) */
static const char *const shim_exports[] = {
%(exports)s
};
static int shim_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }
static int shim_exported(const char *name)
{
    if (strncmp(name, "PMPI_", 5) == 0) name++;
    return bsearch(&name, shim_exports, sizeof shim_exports / sizeof shim_exports[0], sizeof shim_exports[0], shim_cmp) != NULL;
}
struct shim_scan { const void *self_base, *kumi_base; int missing; };
%(scan)s
/* Kumi's code -> this ABI's; exported for the GOT swap agent of mixed processes (abimix.c), which
 * then owns Kumi's hook and picks, per failed call, the numbering of the ABI that called */
SHIM_EXPORT int kumi_shim_err_out(int c) { return err_out(c); }
__attribute__((constructor)) static void shim_load(void)
{
    Dl_info self;
    dladdr((void *)shim_load, &self);
    void *h = dlopen("%(lib)s", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen(KUMI_LIBDIR "/%(lib)s", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%(me)s (Kumi's %(abi)s ABI): cannot load Kumi's %(lib)s: %%s\\n", dlerror());
        _exit(127);
    }
    for (size_t i = 0; i < sizeof shim_entries / sizeof shim_entries[0]; i++) {
        *shim_entries[i].slot = dlsym(h, shim_entries[i].name);
        if (!*shim_entries[i].slot) {
            fprintf(stderr, "%(me)s (Kumi's %(abi)s ABI): Kumi's %(lib)s has no %%s: an older Kumi?\\n", shim_entries[i].name);
            _exit(127);
        }
    }
    /* Kumi returns the codes of failed calls in this ABI, so that entries jump straight in (in a
     * process with the GOT swap agent, the agent sets the hook: both ABIs may be there) */
    void (*set_err_out)(int (*)(int)) = (void (*)(int (*)(int)))dlsym(h, "kumi_abi_set_err_out");
    if (!set_err_out) {
        fprintf(stderr, "%(me)s (Kumi's %(abi)s ABI): Kumi's %(lib)s has no kumi_abi_set_err_out: an older Kumi?\\n");
        _exit(127);
    }
    if (!dlsym(RTLD_DEFAULT, "kumi_abimix_err_out")) set_err_out(kumi_shim_err_out);
    Dl_info kumi;
    dladdr(*shim_entries[0].slot, &kumi);
    struct shim_scan sc = { self.dli_fbase, kumi.dli_fbase, 0 };
    dl_iterate_phdr(shim_scan_one, &sc);
    if (sc.missing) {
        fprintf(stderr, "%(me)s (Kumi's %(abi)s ABI): the program needs %%d MPI procedure(s) this library does not translate yet\\n", sc.missing);
        _exit(127);
    }
}''' % {'lib': lib, 'me': self.facts['library'], 'abi': self.facts['name'],
        'exports': '\n'.join('    "%s",' % n for n in sorted(self.exported)), 'scan': scan})
        self.nentries = len(names)
        return '\n'.join(out) + '\n'

    def coverage(self):
        o = ['%s shim (%s): %d procedures exported, %d not (of %d in the API data); %d predefined objects'
             % (self.facts['name'], self.facts['library'], len(self.exported), len(self.skipped),
                len(self.exported) + len(self.skipped), self.nobj)]
        why = {}
        for n, r in self.skipped:
            key = 'not in ' if r.startswith('not in ') else r
            why.setdefault(key if key != 'not in ' else r, []).append(n)
        o.append('not exported, by reason:')
        for r, ns in sorted(why.items(), key=lambda x: -len(x[1])):
            o.append('  %4d  %s: %s' % (len(ns), r, ' '.join(ns) if len(ns) <= 40 else ' '.join(ns[:40]) + ' ...'))
        o.append('exported:')
        o.append('  ' + ' '.join(self.exported))
        return '\n'.join(o) + '\n'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--api', required=True)
    ap.add_argument('--native', required=True)
    ap.add_argument('--facts', required=True)
    ap.add_argument('--abi', required=True, choices=sorted(ABI_RULES))
    ap.add_argument('--out', required=True)
    ap.add_argument('--coverage', required=True)
    ap.add_argument('--native-entries', help="Kumi's generated bindings.c: the kumi_abi_MPI_X it defines "
                    '(procedures Kumi does not implement yet are not exported)')
    a = ap.parse_args()
    kumi = None
    if a.native_entries:
        kumi = set(re.findall(r'\bkumi_abi_(MPI_\w+)\(', open(a.native_entries).read()))
    g = Gen(json.load(open(a.api)), json.load(open(a.native)), json.load(open(a.facts)), ABI_RULES[a.abi], kumi)
    src = g.run()
    with open(a.out + '.tmp', 'w') as f:
        f.write(src)
    import os
    os.replace(a.out + '.tmp', a.out)
    cov = g.coverage()
    with open(a.coverage, 'w') as f:
        f.write(cov)
    sys.stdout.write(cov.split('exported:\n')[0])


if __name__ == '__main__':
    main()
