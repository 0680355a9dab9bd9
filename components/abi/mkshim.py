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

HANDLE_TYPES = ['MPI_Comm', 'MPI_Datatype', 'MPI_Group', 'MPI_Info', 'MPI_Errhandler', 'MPI_Op',
                'MPI_Request', 'MPI_Message', 'MPI_Win', 'MPI_File', 'MPI_Session']
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
FINT_KINDS = ('Comm', 'Type', 'Group', 'Info', 'Errhandler', 'Op', 'Request', 'Win', 'File', 'Message', 'Session')
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
           'MPI_Get_version', 'MPI_Buffer_attach', 'MPI_Buffer_detach', 'MPI_Op_create', 'MPI_Comm_create_errhandler', 'MPI_Win_create_errhandler',
           'MPI_File_create_errhandler', 'MPI_Errhandler_create',
           'MPI_Comm_get_attr', 'MPI_Attr_get', 'MPI_Win_get_attr',
           'MPI_File_set_view', 'MPI_File_get_view', 'MPI_Register_datarep', 'MPI_Register_datarep_c',
           'MPI_Comm_spawn', 'MPI_Comm_spawn_multiple']


def cint(s):
    return int(str(s), 0)


class Gen:
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
        for n, f, v in diff:
            o.append('    if (v == %d) return %d;   /* %s */' % (f, v, n))
        # a foreign value that is no foreign constant but is a native one: make it invalid
        for v in sorted(nvals - fvals):
            o.append('    if (v == %d) return SHIM_POISON;' % v)
        o.append('    return v;\n}')
        o.append('static inline int dom_%s_out(int v)\n{' % lo)
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
        w('#include <stddef.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n#include <limits.h>')
        w('#define SHIM_EXPORT __attribute__((visibility("default")))')
        w('#define SHIM_LIKELY(x) __builtin_expect(!!(x), 1)')
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

    @staticmethod
    def perfect_hash(vals):
        """(bits, odd multiplier): (v * mul mod 2^32) >> (32 - bits) distinct for all vals"""
        import random
        rnd = random.Random(17)   # deterministic output
        for bits in range(max(1, (len(vals) - 1).bit_length()), 12):
            for _ in range(20000):
                mul = rnd.getrandbits(32) | 1
                if len({((v * mul) & 0xffffffff) >> (32 - bits) for v in vals}) == len(vals):
                    return bits, mul
        sys.exit('mkshim: no perfect hash for %d handles' % len(vals))

    def int_handles(self, w):
        """Foreign handles are ints.  Predefined ones map through switches generated from the
        facts (and a table native -> foreign); the program's own objects get handles of
        MPICH's shape (direct, the kind's bits, an index) from one table per handle type:
        two levels (chunks of 4096 entries published atomically, so lookups take no lock),
        entries released when the object is freed (the handle of an INOUT argument that
        Kumi replaced, e.g. by MPI_COMM_NULL or MPI_REQUEST_NULL).  Requests and messages,
        created and freed at a high rate, take and give back entries through per-thread
        free lists; other kinds count references (MPI_Comm_group twice gives the same
        handle twice, each to be freed) and find a native object's handle through a hash."""
        natv = {}
        for n, c in self.nat.items():
            if c['type'] in HANDLE_TYPES:
                natv[n] = (c['type'], self.nval(n))
        fin = {t: {} for t in HANDLE_TYPES}    # type -> foreign value -> (name, native)
        hout = {}
        for n, (t, nv) in sorted(natv.items(), key=lambda x: (not x[0].endswith('_NULL'), x[0])):
            fv = self.fval(n)
            if fv is None or t == 'MPI_File':
                continue
            fv &= 0xffffffff
            if fv not in fin[t]:
                fin[t][fv] = (n, nv)
            hout.setdefault(nv, fv)
        kinds = {}
        for t in HANDLE_TYPES:
            if t == 'MPI_File':
                continue
            kinds[t] = (self.fval(t.upper() + '_NULL') >> 26) & 0xf
        # native predefined handles the foreign ABI lacks: a builtin handle of the kind, made up
        for n, (t, nv) in sorted(natv.items()):
            if t in kinds and nv not in hout:
                fv = (1 << 30) | (kinds[t] << 26) | 0x3f0000 | nv
                fin[t][fv] = (n, nv)
                hout[nv] = fv
        self.nobj = sum(len(v) for v in fin.values())
        top = max(v for _, v in natv.values()) + 1
        w('''/* ---- handles: MPICH's ints (MPI_File: a pointer) */
#include <pthread.h>
#define SHIM_BAD ((void *)0x%(bad)x)   /* a native predefined handle that is none: Kumi reports it invalid */
#define HT_CHUNK_BITS 12
#define HT_CHUNK (1 << HT_CHUNK_BITS)
#define HT_NCHUNKS (1 << (26 - HT_CHUNK_BITS))
#define HT_FIRST 64     /* indices below are MPICH's predefined direct handles (MPI_FLOAT_INT, ...) */
#define HT_BATCH 64     /* request entries moved at once between a thread's free list and the table's */
struct ht_ent { void *native; int refs; int next; };
struct ht_rev { void *native; int idx; struct ht_rev *next; };
struct ht {
    struct ht_ent *chunks[HT_NCHUNKS];   /* read with acquire loads, published with release stores */
    pthread_mutex_t lock;                /* for the rest */
    int used;                            /* entries handed out so far (bump allocation) */
    int free_head, nfree;                /* entries given back */
    unsigned base;                       /* (2 << 30) | kind << 26: a direct handle of the kind */
    int fast;                            /* requests, messages: per-thread free lists, no references */
    struct ht_rev *rev[1024];            /* native -> index (not fast) */
};
static inline struct ht_ent *ht_ent(struct ht *t, unsigned idx)
{
    struct ht_ent *c = __atomic_load_n(&t->chunks[idx >> HT_CHUNK_BITS], __ATOMIC_ACQUIRE);
    return c ? &c[idx & (HT_CHUNK - 1)] : NULL;
}
static inline void *ht_get(struct ht *t, int f)
{
    unsigned idx = (unsigned)f & 0x3ffffff;
    struct ht_ent *e = ht_ent(t, idx);
    void *n = e ? __atomic_load_n(&e->native, __ATOMIC_ACQUIRE) : NULL;
    return n ? n : SHIM_BAD;
}
/* under t->lock: a fresh or given-back entry's index, or -1 */
static int ht_take_locked(struct ht *t)
{
    if (t->free_head >= 0) {
        int i = t->free_head;
        t->free_head = ht_ent(t, (unsigned)i)->next;
        t->nfree--;
        return i;
    }
    if (t->used == 0) t->used = HT_FIRST;
    if (t->used >= (1 << 26)) return -1;
    unsigned i = (unsigned)t->used;
    if (!t->chunks[i >> HT_CHUNK_BITS]) {
        struct ht_ent *c = calloc(HT_CHUNK, sizeof *c);
        if (!c) return -1;
        __atomic_store_n(&t->chunks[i >> HT_CHUNK_BITS], c, __ATOMIC_RELEASE);
    }
    t->used++;
    return (int)i;
}
static unsigned ht_rev_hash(void *n) { uintptr_t v = (uintptr_t)n >> 4; return (unsigned)((v ^ (v >> 10) ^ (v >> 20)) & 1023); }
/* a handle for native object n (not fast): its existing one, or a new one; ref: count a reference */
static int ht_out(struct ht *t, void *n, int ref)
{
    pthread_mutex_lock(&t->lock);
    unsigned h = ht_rev_hash(n);
    struct ht_rev *r;
    for (r = t->rev[h]; r; r = r->next)
        if (r->native == n) break;
    int i;
    if (r) {
        i = r->idx;
        if (ref) ht_ent(t, (unsigned)i)->refs++;
    } else {
        i = ht_take_locked(t);
        r = i >= 0 ? malloc(sizeof *r) : NULL;
        if (!r) { pthread_mutex_unlock(&t->lock); return (int)(t->base | 0x3ffffff); }   /* out of handles: invalid */
        struct ht_ent *e = ht_ent(t, (unsigned)i);
        e->refs = 1;
        __atomic_store_n(&e->native, n, __ATOMIC_RELEASE);
        r->native = n; r->idx = i; r->next = t->rev[h]; t->rev[h] = r;
    }
    pthread_mutex_unlock(&t->lock);
    return (int)(t->base | (unsigned)i);
}
static void ht_release(struct ht *t, int f)
{
    unsigned i = (unsigned)f & 0x3ffffff;
    pthread_mutex_lock(&t->lock);
    struct ht_ent *e = ht_ent(t, i);
    if (e && e->native && --e->refs <= 0) {
        struct ht_rev **pp = &t->rev[ht_rev_hash(e->native)];
        while (*pp && (*pp)->native != e->native) pp = &(*pp)->next;
        if (*pp) { struct ht_rev *d = *pp; *pp = d->next; free(d); }
        __atomic_store_n(&e->native, NULL, __ATOMIC_RELEASE);
        e->next = t->free_head; t->free_head = (int)i; t->nfree++;
    }
    pthread_mutex_unlock(&t->lock);
}
/* requests and messages: a thread keeps up to 4 * HT_BATCH free entries of each table */
static __thread __attribute__((tls_model("initial-exec"))) struct { int head, n; } ht_tl[2] = { { -1, 0 }, { -1, 0 } };
static pthread_key_t ht_key;   /* a thread that ends gives its free entries back (ht_thread_end) */
static int ht_new_fast(struct ht *t, int slot, void *n)
{
    int i = ht_tl[slot].head;
    if (i < 0) {   /* refill from the table */
        pthread_setspecific(ht_key, (void *)1);
        pthread_mutex_lock(&t->lock);
        for (int k = 0; k < HT_BATCH; k++) {
            int j = ht_take_locked(t);
            if (j < 0) break;
            ht_ent(t, (unsigned)j)->next = ht_tl[slot].head;
            ht_tl[slot].head = j; ht_tl[slot].n++;
        }
        pthread_mutex_unlock(&t->lock);
        i = ht_tl[slot].head;
        if (i < 0) return (int)(t->base | 0x3ffffff);
    }
    struct ht_ent *e = ht_ent(t, (unsigned)i);
    ht_tl[slot].head = e->next; ht_tl[slot].n--;
    e->refs = 0;
    __atomic_store_n(&e->native, n, __ATOMIC_RELEASE);
    return (int)(t->base | (unsigned)i);
}
static void ht_release_fast(struct ht *t, int slot, int f)
{
    unsigned i = (unsigned)f & 0x3ffffff;
    struct ht_ent *e = ht_ent(t, i);
    if (!e || !e->native) return;
    __atomic_store_n(&e->native, NULL, __ATOMIC_RELEASE);
    e->next = ht_tl[slot].head; ht_tl[slot].head = (int)i; ht_tl[slot].n++;
    if (ht_tl[slot].n > 4 * HT_BATCH) {   /* give half back to the table */
        pthread_mutex_lock(&t->lock);
        while (ht_tl[slot].n > 2 * HT_BATCH) {
            int j = ht_tl[slot].head;
            struct ht_ent *x = ht_ent(t, (unsigned)j);
            ht_tl[slot].head = x->next; ht_tl[slot].n--;
            x->next = t->free_head; t->free_head = j; t->nfree++;
        }
        pthread_mutex_unlock(&t->lock);
    }
}
/* native predefined handle (< 0x%(top)x) -> foreign */
static const int shim_hout[0x%(top)x] = {''' % {'bad': 0xfff, 'top': top})
        for v in sorted(hout):
            w('    [0x%x] = (int)0x%08x,' % (v, hout[v]))
        w('};')
        slot = {'MPI_Request': 0, 'MPI_Message': 1}
        self.ht_inits = []
        w('struct shim_pre { uint32_t f; void *n; };   /* predefined handles: foreign, native */')
        names = []
        for t, k in kinds.items():
            s = t[4:]
            names.append(s)
            # zero-initialized (.bss: the chunk pointers take 128 KiB a type), set up by ht_init
            w('static struct ht ht_%s;' % s)
            self.ht_inits.append('    ht_setup(&ht_%s, 0x%08xu, %d);' % (s, (2 << 30) | (k << 26), t in slot))
            # predefined: a perfect hash (multiplier searched here) into a table of {foreign, native}
            vals = sorted(fin[t])
            bits, mul = self.perfect_hash(vals)
            slots = {((v * mul) & 0xffffffff) >> (32 - bits): v for v in vals}
            w('static const struct shim_pre shim_pre_%s[%d] = {' % (s, 1 << bits))
            for i in range(1 << bits):
                v = slots.get(i)
                if v is None:
                    w('    { 0xffffffffu, SHIM_BAD },')
                else:
                    w('    { 0x%08xu, (void *)0x%x },   /* %s */' % (v, fin[t][v][1], fin[t][v][0]))
            w('};')
            w('static inline void *h_in_%s(int f)\n{' % s)
            w('    if (SHIM_LIKELY(((unsigned)f >> 26) == 0x%x) && ((unsigned)f & 0x3ffffff) >= HT_FIRST) return ht_get(&ht_%s, f);' % (0x20 | k, s))
            w('    const struct shim_pre *e = &shim_pre_%s[((uint32_t)f * 0x%08xu) >> %d];' % (s, mul, 32 - bits))
            w('    return SHIM_LIKELY(e->f == (uint32_t)f) ? e->n : SHIM_BAD;\n}')
            if t in slot:
                new = 'ht_new_fast(&ht_%s, %d, n)' % (s, slot[t])
                rel = 'ht_release_fast(&ht_%s, %d, f)' % (s, slot[t])
                peek = new
            else:
                new = 'ht_out(&ht_%s, n, 1)' % s
                rel = 'ht_release(&ht_%s, f)' % s
                peek = 'ht_out(&ht_%s, n, 0)' % s
            w('''static inline int h_out_%(s)s(N_%(s)s n)
{
    if ((uintptr_t)n < 0x%(top)x) return shim_hout[(uintptr_t)n];
    return %(new)s;
}
static inline int h_peek_%(s)s(N_%(s)s n)
{
    if ((uintptr_t)n < 0x%(top)x) return shim_hout[(uintptr_t)n];
    return %(peek)s;
}
/* *p's object became n (an INOUT argument): where Kumi replaced it (freed: MPI_COMM_NULL,
 * MPI_REQUEST_NULL, ...), the old handle goes back to the table */
static inline void h_upd_%(s)s(int *p, N_%(s)s n)
{
    int f = *p;
    if (SHIM_LIKELY(h_in_%(s)s(f) == (void *)n)) return;
    if (((unsigned)f >> 26) == 0x%(user)x && ((unsigned)f & 0x3ffffff) >= HT_FIRST) %(rel)s;
    *p = h_out_%(s)s(n);
}''' % {'s': s, 'top': top, 'new': new, 'peek': peek, 'rel': rel, 'user': 0x20 | k})
        fnull = self.nval('MPI_FILE_NULL')
        w('''/* generalized requests: MPI_Grequest_complete may come after MPI_Request_free (the program kept
 * a copy of the handle): refs 1 marks a generalized request, 2 one freed but not complete; the
 * entry goes back at MPI_Grequest_complete then (mark 3), else when completed by a wait or test */
static void ht_greq_mark(int f, int how)
{
    unsigned i = (unsigned)f & 0x3ffffff;
    if (((unsigned)f >> 26) != (ht_Request.base >> 26) || i < HT_FIRST) return;
    struct ht_ent *e = ht_ent(&ht_Request, i);
    if (!e || !e->native) return;
    if (how == 1) e->refs = 1;
    else if (how == 3 && e->refs == 2) { e->refs = 0; ht_release_fast(&ht_Request, 0, f); }
}
static void h_free_Request(int *p, N_Request n)
{
    int f = *p;
    unsigned i = (unsigned)f & 0x3ffffff;
    struct ht_ent *e = ((unsigned)f >> 26) == (ht_Request.base >> 26) && i >= HT_FIRST ? ht_ent(&ht_Request, i) : NULL;
    if (e && e->native && e->refs == 1 && h_in_Request(f) != (void *)n) {
        e->refs = 2;
        *p = h_out_Request(n);
        return;
    }
    h_upd_Request(p, n);
}
static inline void *h_in_File(void *f) { return f ? f : (void *)0x%x; }
static inline void *h_out_File(N_File n) { return (uintptr_t)n == 0x%x ? NULL : (void *)n; }
static inline void *h_peek_File(N_File n) { return h_out_File(n); }
static inline void h_upd_File(void **p, N_File n) { *p = h_out_File(n); }''' % (fnull, fnull))
        w('''static void ht_thread_end(void *unused)
{
    struct ht *t[2] = { &ht_Request, &ht_Message };
    for (int s = 0; s < 2; s++) {
        pthread_mutex_lock(&t[s]->lock);
        while (ht_tl[s].head >= 0) {
            int j = ht_tl[s].head;
            struct ht_ent *x = ht_ent(t[s], (unsigned)j);
            ht_tl[s].head = x->next;
            x->next = t[s]->free_head; t[s]->free_head = j; t[s]->nfree++;
        }
        ht_tl[s].n = 0;
        pthread_mutex_unlock(&t[s]->lock);
    }
}
static void ht_setup(struct ht *t, unsigned base, int fast)
{
    pthread_mutex_init(&t->lock, NULL);
    t->free_head = -1;
    t->base = base;
    t->fast = fast;
}
__attribute__((constructor)) static void ht_init(void)
{
%s
    pthread_key_create(&ht_key, ht_thread_end);
}''' % '\n'.join(self.ht_inits))

    def object_handles(self, w):
        # predefined objects
        w('/* ---- predefined objects: one per foreign handle constant that is the address of one */')
        w('struct shim_obj { uint64_t magic; void *native; };')
        hout = {}
        nobj = 0
        for name, c in sorted(self.fc.items()):
            if 'symbol' not in c or c['type'] not in HANDLE_TYPES:
                continue
            sym = c['symbol']
            size = self.fobjects.get(sym)
            if size is None:
                sys.exit('mkshim: %s: symbol %s is no object of %s' % (name, sym, self.facts['library']))
            nv = self.nval(name)
            if nv in hout:
                continue   # an alias (MPI_LONG_LONG_INT): the same object
            hout[nv] = sym
            w('SHIM_EXPORT struct { uint64_t magic; void *native; char pad[%d]; } %s = { SHIM_MAGIC, (void *)0x%x, {0} };'
              % (size - 16, sym, nv))
            nobj += 1
        self.nobj = nobj
        top = max(hout) + 1
        w('')
        w('/* native predefined handle (< 0x%x) -> foreign: the object, or the value itself where the' % top)
        w(' * foreign ABI has no such constant (then it comes back as is). */')
        w('static void *const shim_hout[0x%x] = {' % top)
        for v in range(top):
            if v in hout:
                w('    [0x%x] = &%s,' % (v, hout[v]))
            else:
                w('    [0x%x] = (void *)0x%x,' % (v, v))
        w('};')
        w('''
static inline void *h_in(void *f)
{
    const struct shim_obj *o = f;
    if (SHIM_LIKELY((uintptr_t)f >= 0x1000) && o->magic == SHIM_MAGIC) return o->native;
    return f;   /* Kumi's own object (created by the program), or invalid */
}
static inline void *h_out(void *n)
{
    if ((uintptr_t)n < 0x%x) return shim_hout[(uintptr_t)n];
    return n;
}''' % top)

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
            r = self.param_plan(name, p, a, byname)
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

    def special(self, name):
        o = self.out
        if name == 'MPI_Op_create':
            o.append('''/* user reduction: Kumi calls the trampoline with its context (the foreign function) and the
 * whole count; the foreign function takes an int count and a foreign datatype. */
static void shim_op_tramp(void *in, void *inout, MPI_Count len, N_Datatype dt, void *ctx)
{
    F_User_function *fn = (F_User_function *)ctx;
    F_Datatype fdt = %(peekdt)s;
    MPI_Aint lb = 0, ext = 0;
    if (len > INT_MAX) kumi_abi_MPI_Type_get_extent(dt, &lb, &ext);
    while (len > 0) {
        int n = len > INT_MAX ? INT_MAX : (int)len;
        fn(in, inout, &n, &fdt);
        len -= n;
        in = (char *)in + (MPI_Aint)n * ext;
        inout = (char *)inout + (MPI_Aint)n * ext;
    }
}
SHIM_EXPORT int PMPI_Op_create(F_User_function *user_fn, int commute, F_Op *op)
{
    N_Op k;
    int rc = kumi_abi_op_create(shim_op_tramp, (void *)user_fn, commute, &k);
    if (rc == 0) *op = %(outop)s;
    return rc;
}
SHIM_EXPORT int MPI_Op_create(F_User_function *user_fn, int commute, F_Op *op) __attribute__((weak, alias("PMPI_Op_create")));
/* the same with a context of the caller's, for the C++ bindings libraries of this ABI
 * (libmpi_cxx.so.40, libmpichcxx.so.12): each C++ op gets its C++ function through ctx, with no
 * trampoline of its own.  The record {fn, ctx} lives as long as the process (Kumi calls no
 * function when an op is freed). */
typedef void (shim_ctx_op_fn)(void *, void *, int *, F_Datatype *, void *);
struct shim_ctx_rec { void (*fn)(void); void *ctx; };
static void shim_op_ctx_tramp(void *in, void *inout, MPI_Count len, N_Datatype dt, void *ctx)
{
    struct shim_ctx_rec *r = (struct shim_ctx_rec *)ctx;
    F_Datatype fdt = %(peekdt)s;
    MPI_Aint lb = 0, ext = 0;
    if (len > INT_MAX) kumi_abi_MPI_Type_get_extent(dt, &lb, &ext);
    while (len > 0) {
        int n = len > INT_MAX ? INT_MAX : (int)len;
        ((shim_ctx_op_fn *)r->fn)(in, inout, &n, &fdt, r->ctx);
        len -= n;
        in = (char *)in + (MPI_Aint)n * ext;
        inout = (char *)inout + (MPI_Aint)n * ext;
    }
}
SHIM_EXPORT int kumi_shim_op_create_ctx(shim_ctx_op_fn *fn, void *ctx, int commute, F_Op *op)
{
    struct shim_ctx_rec *r = malloc(sizeof *r);
    if (!r) return err_out(%(nomem)d);
    r->fn = (void (*)(void))fn;
    r->ctx = ctx;
    N_Op k;
    int rc = kumi_abi_op_create(shim_op_ctx_tramp, r, commute, &k);
    if (rc == 0) *op = %(outop)s;
    else free(r);
    return rc;
}
''' % {'peekdt': self.hpeek('Datatype', 'dt'), 'outop': self.hout('Op', 'k'), 'nomem': self.nval('MPI_ERR_NO_MEM')})
            return None
        eh = {'MPI_Comm_create_errhandler': ('KUMI_ABI_ERRH_COMM', 'comm_errhandler_fn'),
              'MPI_Errhandler_create': ('KUMI_ABI_ERRH_COMM', 'function'),
              'MPI_Win_create_errhandler': ('KUMI_ABI_ERRH_WIN', 'win_errhandler_fn'),
              'MPI_File_create_errhandler': ('KUMI_ABI_ERRH_FILE', 'file_errhandler_fn')}
        if name in eh:
            kind, arg = eh[name]
            if not getattr(self, '_eh_done', False) and self.ints:
                self._eh_done = True
                o.append('''/* error handler: the foreign function gets the foreign handle and the foreign code */
static void shim_eh_tramp(int objkind, void *handle, int *errcode, void *ctx)
{
    int code = err_out(*errcode);
    if (objkind == KUMI_ABI_ERRH_FILE) {
        void *fh = h_peek_File(*(N_File *)handle);
        ((void (*)(void *, int *, ...))ctx)(&fh, &code);
        return;
    }
    int fh = objkind == KUMI_ABI_ERRH_WIN ? h_peek_Win(*(N_Win *)handle) : h_peek_Comm(*(N_Comm *)handle);
    ((void (*)(int *, int *, ...))ctx)(&fh, &code);
}''')
            if not getattr(self, '_ehctx_done', False):
                self._ehctx_done = True
                if self.ints:
                    fh = '''    if (objkind == KUMI_ABI_ERRH_FILE) { void *ff = h_peek_File(*(N_File *)handle); fn(&ff, &code, r->ctx); return; }
    int fh = objkind == KUMI_ABI_ERRH_WIN ? h_peek_Win(*(N_Win *)handle) : h_peek_Comm(*(N_Comm *)handle);'''
                else:
                    fh = '    void *fh = h_out(*(void **)handle);'
                o.append('''/* an error handler with a context of the caller's (the C++ bindings libraries: each C++
 * handler function without a trampoline of its own): fn gets the foreign handle, the foreign
 * code and ctx.  The record {fn, ctx} lives as long as the process. */
typedef void (shim_ctx_eh_fn)(void *, int *, void *);
static void shim_eh_ctx_tramp(int objkind, void *handle, int *errcode, void *ctx)
{
    struct { void (*fn)(void); void *ctx; } *r = ctx;
    shim_ctx_eh_fn *fn = (shim_ctx_eh_fn *)r->fn;
    int code = err_out(*errcode);
%(fh)s
    fn(&fh, &code, r->ctx);
}
SHIM_EXPORT int kumi_shim_errhandler_create_ctx(int objkind, shim_ctx_eh_fn *fn, void *ctx, F_Errhandler *errhandler)
{
    struct { void (*fn)(void); void *ctx; } *r = malloc(sizeof *r);
    if (!r) return err_out(%(nomem)d);
    r->fn = (void (*)(void))fn;
    r->ctx = ctx;
    N_Errhandler k;
    int rc = kumi_abi_errhandler_create(objkind, shim_eh_ctx_tramp, r, &k);
    if (rc == 0) *errhandler = %(out)s;
    else free(r);
    return rc;
}''' % {'fh': fh, 'nomem': self.nval('MPI_ERR_NO_MEM'), 'out': self.hout('Errhandler', 'k')})
            if not getattr(self, '_eh_done', False):
                self._eh_done = True
                o.append('''/* error handler: the foreign function gets the foreign handle and the foreign code */
static void shim_eh_tramp(int objkind, void *handle, int *errcode, void *ctx)
{
    F_Errhandler_function *fn = (F_Errhandler_function *)ctx;
    void *fh = h_out(*(void **)handle);
    int code = err_out(*errcode);
    fn(&fh, &code);
}''')
            o.append('''SHIM_EXPORT int P%(n)s(F_Errhandler_function *%(a)s, F_Errhandler *errhandler)
{
    N_Errhandler k;
    int rc = kumi_abi_errhandler_create(%(k)s, shim_eh_tramp, (void *)%(a)s, &k);
    if (rc == 0) *errhandler = %(out)s;
    return rc;
}
SHIM_EXPORT int %(n)s(F_Errhandler_function *%(a)s, F_Errhandler *errhandler) __attribute__((weak, alias("P%(n)s")));
''' % {'n': name, 'a': arg, 'k': kind, 'out': self.hout('Errhandler', 'k')})
            return None
        if name in ('MPI_File_set_view', 'MPI_File_get_view', 'MPI_Register_datarep', 'MPI_Register_datarep_c'):
            return self.file_view(name)
        if name in ('MPI_Comm_spawn', 'MPI_Comm_spawn_multiple'):
            return self.spawn(name)
        if name in ('MPI_Comm_create_keyval', 'MPI_Type_create_keyval', 'MPI_Win_create_keyval', 'MPI_Keyval_create'):
            if not getattr(self, '_kv_done', False):
                self._kv_done = True
                self.keyval_common()
            o.append('''extern int kumi_abi_%(n)s(void *, void *, int *, void *);
SHIM_EXPORT int P%(n)s(void *copy_fn, void *delete_fn, int *keyval, void *extra_state)
{
    return shim_create_keyval(kumi_abi_%(n)s, %(kind)scopy_fn, delete_fn, keyval, extra_state);
}
SHIM_EXPORT int %(n)s(void *copy_fn, void *delete_fn, int *keyval, void *extra_state) __attribute__((weak, alias("P%(n)s")));
''' % {'n': name, 'kind': ('%d, ' % {'MPI_Type_create_keyval': 1, 'MPI_Win_create_keyval': 2}.get(name, 0)) if self.ints else ''})
            return None
        if name == 'MPI_Grequest_start':
            # generalized requests: the program's callbacks wrapped through extra_state; the
            # wrapper goes with the request's free callback (called once).
            o.append('''struct shim_greq { int (*query)(void *, F_Status *); int (*free)(void *); int (*cancel)(void *, int); void *extra; };
static int shim_greq_query(void *extra, N_Status *status)
{
    struct shim_greq *w = extra;
    F_Status fs;
    st_out(&fs, status);
    int rc = w->query(w->extra, &fs);
    st_in(status, &fs);
    return err_in(rc);
}
static int shim_greq_free(void *extra)
{
    struct shim_greq *w = extra;
    int rc = w->free(w->extra);
    free(w);
    return err_in(rc);
}
static int shim_greq_cancel(void *extra, int complete)
{
    struct shim_greq *w = extra;
    return err_in(w->cancel(w->extra, complete));
}
extern int kumi_abi_MPI_Grequest_start(void *, void *, void *, void *, N_Request *);
SHIM_EXPORT int PMPI_Grequest_start(void *query_fn, void *free_fn, void *cancel_fn, void *extra_state, F_Request *request)
{
    struct shim_greq *w = malloc(sizeof *w);
    if (!w) return SHIM_ERR_NO_MEM;
    w->query = (int (*)(void *, F_Status *))query_fn;
    w->free = (int (*)(void *))free_fn;
    w->cancel = (int (*)(void *, int))cancel_fn;
    w->extra = extra_state;
    N_Request k;
    int rc = kumi_abi_MPI_Grequest_start(query_fn ? (void *)shim_greq_query : NULL, free_fn ? (void *)shim_greq_free : NULL,
                                         cancel_fn ? (void *)shim_greq_cancel : NULL, w, request ? &k : NULL);
    if (rc == 0) *request = %s;
    else free(w);%s
    return rc;
}
SHIM_EXPORT int MPI_Grequest_start(void *query_fn, void *free_fn, void *cancel_fn, void *extra_state, F_Request *request)
    __attribute__((weak, alias("PMPI_Grequest_start")));
''' % (self.hout('Request', 'k'), '''
    if (rc == 0) ht_greq_mark(*request, 1);   /* usable after MPI_Request_free until complete */''' if self.ints else ''))
            return None
        if name == 'MPI_Type_get_contents':
            # The integers depend on the combiner: MPI_ORDER_* (subarray, darray), MPI_DISTRIBUTE_*
            # and MPI_DISTRIBUTE_DFLT_DARG (darray) are constants; the datatypes are handles.
            o.append('''extern int kumi_abi_MPI_Type_get_envelope(N_Datatype, int *, int *, int *, int *);
extern int kumi_abi_MPI_Type_get_contents(N_Datatype, int, int, int, int *, MPI_Aint *, N_Datatype *);
SHIM_EXPORT int PMPI_Type_get_contents(F_Datatype datatype, int max_integers, int max_addresses, int max_datatypes,
                                       int *array_of_integers, MPI_Aint *array_of_addresses, F_Datatype *array_of_datatypes)
{
    N_Datatype dt = %(hin)s;
    int ni = 0, na = 0, nd = 0, comb = 0;
    int rc = kumi_abi_MPI_Type_get_envelope(dt, &ni, &na, &nd, &comb);
    if (rc != 0) return rc;
    int n = max_datatypes < 0 ? 0 : max_datatypes;
    SCRATCH(N_Datatype, types_k, n);
    if (!types_k) return SHIM_ERR_NO_MEM;
    rc = kumi_abi_MPI_Type_get_contents(dt, max_integers, max_addresses, max_datatypes, array_of_integers,
                                        array_of_addresses, array_of_datatypes ? types_k : NULL);
    if (rc == 0) {
        int *v = array_of_integers;
        for (int i = 0; i < n && i < nd; i++) array_of_datatypes[i] = %(hout)s;
        if (comb == %(subarray)d && ni >= 1) {
            int d = v[0];
            v[3 * d + 1] = dom_order_out(v[3 * d + 1]);
        } else if (comb == %(darray)d && ni >= 3) {
            int d = v[2];
            for (int i = 0; i < d; i++) {
                v[3 + d + i] = dom_distrib_enum_out(v[3 + d + i]);
                v[3 + 2 * d + i] = dom_dtype_distribution_out(v[3 + 2 * d + i]);
            }
            v[3 + 4 * d] = dom_order_out(v[3 + 4 * d]);
        }
    }
    SCRATCH_FREE(types_k);
    return rc;
}
SHIM_EXPORT int MPI_Type_get_contents(F_Datatype datatype, int max_integers, int max_addresses, int max_datatypes,
                                      int *array_of_integers, MPI_Aint *array_of_addresses, F_Datatype *array_of_datatypes)
    __attribute__((weak, alias("PMPI_Type_get_contents")));
''' % {'hin': self.hin('Datatype', 'datatype'), 'hout': self.hout('Datatype', 'types_k[i]'), 'subarray': self.nval('MPI_COMBINER_SUBARRAY'), 'darray': self.nval('MPI_COMBINER_DARRAY')})
            return None
        if name == 'MPI_Get_version':
            # The program was built against the foreign mpi.h: it sees that version of the standard
            # (MPI_VERSION, MPI_SUBVERSION), whatever Kumi implements beyond it.
            fv, fs = self.fval('MPI_VERSION'), self.fval('MPI_SUBVERSION')
            o.append('''extern int kumi_abi_MPI_Get_version(int *, int *);
SHIM_EXPORT int PMPI_Get_version(int *version, int *subversion)
{
    int v, s;
    int rc = kumi_abi_MPI_Get_version(version ? &v : NULL, subversion ? &s : NULL);
    if (rc == 0) {
        if (v > %(v)d || (v == %(v)d && s > %(s)d)) { v = %(v)d; s = %(s)d; }
        *version = v; *subversion = s;
    }
    return rc;
}
SHIM_EXPORT int MPI_Get_version(int *version, int *subversion) __attribute__((weak, alias("PMPI_Get_version")));
''' % {'v': fv, 's': fs})
            return None
        if name == 'MPI_Buffer_attach':
            # The program sizes its buffer with the foreign MPI_BSEND_OVERHEAD per message; Kumi
            # needs its own.  So the shim attaches a buffer of its own, large enough for as many
            # messages as the program's could hold by the foreign rule (size / foreign overhead),
            # and MPI_Buffer_detach gives the program's buffer and size back.
            fo, no = self.fval('MPI_BSEND_OVERHEAD'), self.nval('MPI_BSEND_OVERHEAD')
            o.append('''#include <pthread.h>
extern int kumi_abi_MPI_Buffer_attach(void *, int);
extern int kumi_abi_MPI_Buffer_detach(void *, int *);
static pthread_mutex_t shim_bsend_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { void *user, *mine; int size; } shim_bsend;   /* the process's attached buffer */
SHIM_EXPORT int PMPI_Buffer_attach(void *buffer, int size)
{
    if (size < 0 || %(no)d <= %(fo)d) return kumi_abi_MPI_Buffer_attach(buffer, size);
    long long n = (long long)size + ((long long)size / %(fo)d + 1) * (%(no)d - %(fo)d);
    if (n > INT_MAX) n = INT_MAX;
    void *mine = malloc((size_t)n);
    if (!mine) return SHIM_ERR_NO_MEM;
    pthread_mutex_lock(&shim_bsend_lock);
    int rc = kumi_abi_MPI_Buffer_attach(mine, (int)n);
    if (rc == 0) { shim_bsend.user = buffer; shim_bsend.mine = mine; shim_bsend.size = size; }
    pthread_mutex_unlock(&shim_bsend_lock);
    if (rc != 0) free(mine);
    return rc;
}
SHIM_EXPORT int MPI_Buffer_attach(void *buffer, int size) __attribute__((weak, alias("PMPI_Buffer_attach")));
SHIM_EXPORT int PMPI_Buffer_detach(void *buffer_addr, int *size)
{
    void *b = NULL;
    int n = 0;
    pthread_mutex_lock(&shim_bsend_lock);
    int rc = kumi_abi_MPI_Buffer_detach(buffer_addr ? (void *)&b : NULL, size ? &n : NULL);
    if (rc == 0) {
        if (b && b == shim_bsend.mine) {
            free(shim_bsend.mine);
            b = shim_bsend.user; n = shim_bsend.size;
            shim_bsend.mine = shim_bsend.user = NULL; shim_bsend.size = 0;
        }
        *(void **)buffer_addr = b; *size = n;
    }
    pthread_mutex_unlock(&shim_bsend_lock);
    return rc;
}
SHIM_EXPORT int MPI_Buffer_detach(void *buffer_addr, int *size) __attribute__((weak, alias("PMPI_Buffer_detach")));
''' % {'fo': fo, 'no': no})
            return None
        if name == 'MPI_Buffer_detach':
            return None   # written with MPI_Buffer_attach
        attr = {'MPI_Comm_get_attr': 'F_Comm', 'MPI_Attr_get': 'F_Comm', 'MPI_Win_get_attr': 'F_Win'}
        if name in attr:
            # Predefined attributes: the value (an int, or MPI_WIN_BASE's address etc.) is Kumi's;
            # the only value that could differ is MPI_HOST's (MPI_PROC_NULL), kept in a per-process copy.
            # Predefined attributes whose value is a constant (MPI_HOST: MPI_PROC_NULL or a rank;
            # MPI_WIN_CREATE_FLAVOR, MPI_WIN_MODEL): the value pointer is redirected to a
            # constant of the foreign ABI (no mutable state).
            nt = 'N_' + attr[name][2:]
            consts = {'MPI_HOST': ['MPI_PROC_NULL'],
                      'MPI_WIN_CREATE_FLAVOR': ['MPI_WIN_FLAVOR_CREATE', 'MPI_WIN_FLAVOR_ALLOCATE',
                                                'MPI_WIN_FLAVOR_DYNAMIC', 'MPI_WIN_FLAVOR_SHARED'],
                      'MPI_WIN_MODEL': ['MPI_WIN_SEPARATE', 'MPI_WIN_UNIFIED']}
            fix = []
            # MPI_IO (MPI_ANY_SOURCE, MPI_PROC_NULL or a rank): where those differ
            io = [cn for cn in ('MPI_PROC_NULL', 'MPI_ANY_SOURCE') if self.fval(cn) != self.nval(cn)]
            if io and attr[name] == 'F_Comm':
                consts['MPI_IO'] = io
            for key, names in consts.items():
                for cn in names:
                    fv = self.fval(cn)
                    if fv is None or fv == self.nval(cn):
                        continue
                    fix.append('        if (kv == %d && v == %d) { static const int f = %d; *(const int **)attribute_val = &f; }   /* %s */'
                               % (self.nval(key), self.nval(cn), fv, cn))
            last = self.fval('MPI_ERR_LASTCODE')
            if attr[name] == 'F_Comm' and last is not None and last >= 0x01000000:
                # MPI_LASTUSEDCODE: at least the foreign MPI_ERR_LASTCODE; user codes with their bit
                consts['MPI_LASTUSEDCODE'] = []
                fix.append('        if (kv == %d) { static __thread int f; f = v >= 0x01000000 ? err_out(v) : %d; *(const int **)attribute_val = &f; }   /* MPI_LASTUSEDCODE */'
                           % (self.nval('MPI_LASTUSEDCODE'), last))
            o.append('''extern int kumi_abi_%(n)s(%(nt)s, int, void *, int *);
SHIM_EXPORT int P%(n)s(%(ft)s obj, int keyval, void *attribute_val, int *flag)
{
    int kv = dom_keyval_in(keyval);
    int rc = kumi_abi_%(n)s(%(hin)s, kv, attribute_val, flag);
    if (rc == 0 && *flag && (%(keys)s)) {
        int v = **(int **)attribute_val;
%(fix)s
    }
    return rc;
}
SHIM_EXPORT int %(n)s(%(ft)s obj, int keyval, void *attribute_val, int *flag) __attribute__((weak, alias("P%(n)s")));
''' % {'n': name, 'ft': attr[name], 'nt': nt, 'fix': '\n'.join(fix), 'hin': self.hin(attr[name][2:], 'obj'),
       'keys': ' || '.join('kv == %d' % self.nval(k) for k in consts)})
            return None
        return 'no special translation'

    def spawn(self, name):
        """MPI_Comm_spawn(_multiple): the strings and argv arrays pass (MPI_ARGV_NULL, MPI_ARGVS_NULL
        and MPI_ERRCODES_IGNORE are 0 in every ABI here); root is a rank, the info handles and
        the communicators are translated, and the error codes (maxprocs of them, their sum for
        _multiple; significant at the root only, where maxprocs is) come back in this ABI."""
        for n in ('MPI_ARGV_NULL', 'MPI_ARGVS_NULL', 'MPI_ERRCODES_IGNORE'):
            if self.fval(n) != 0 or self.nval(n) != 0:
                return '%s is not 0 in both ABIs' % n
        d = {'hinfo': self.hin('Info', 'info'), 'hcomm': self.hin('Comm', 'comm'), 'oic': self.hout('Comm', 'ic_k'),
             'hinfoi': self.hin('Info', 'array_of_info[i]'), 'nomem': self.nval('MPI_ERR_NO_MEM')}
        o = self.out
        if name == 'MPI_Comm_spawn':
            o.append('''extern int kumi_abi_MPI_Comm_spawn(const char *, char **, int, N_Info, int, N_Comm, N_Comm *, int *);
SHIM_EXPORT int PMPI_Comm_spawn(const char *command, char **argv, int maxprocs, F_Info info, int root, F_Comm comm,
                                F_Comm *intercomm, int *array_of_errcodes)
{
    int n = array_of_errcodes && maxprocs > 0 ? maxprocs : 0;
    SCRATCH(int, err_k, n);
    if (n && !err_k) return SHIM_ERR_NO_MEM;
    for (int i = 0; i < n; i++) err_k[i] = SHIM_POISON;   /* written back where Kumi wrote */
    N_Comm ic_k;
    int rc = kumi_abi_MPI_Comm_spawn(command, argv, maxprocs, %(hinfo)s, dom_rank_in(root), %(hcomm)s, &ic_k,
                                     array_of_errcodes ? err_k : NULL);
    if (rc == 0) *intercomm = %(oic)s;
    for (int i = 0; i < n; i++) if (err_k[i] != SHIM_POISON) array_of_errcodes[i] = err_out(err_k[i]);
    SCRATCH_FREE(err_k);
    return rc;
}
SHIM_EXPORT int MPI_Comm_spawn(const char *command, char **argv, int maxprocs, F_Info info, int root, F_Comm comm,
                               F_Comm *intercomm, int *array_of_errcodes) __attribute__((weak, alias("PMPI_Comm_spawn")));
''' % d)
            return None
        o.append('''extern int kumi_abi_MPI_Comm_spawn_multiple(int, char **, char ***, const int *, const N_Info *, int, N_Comm, N_Comm *, int *);
SHIM_EXPORT int PMPI_Comm_spawn_multiple(int count, char **array_of_commands, char ***array_of_argv,
                                         const int *array_of_maxprocs, const F_Info *array_of_info, int root, F_Comm comm,
                                         F_Comm *intercomm, int *array_of_errcodes)
{
    int c = count > 0 && array_of_info ? count : 0, n = 0;
    for (int i = 0; array_of_errcodes && array_of_maxprocs && i < count; i++)
        if (array_of_maxprocs[i] > 0) n += array_of_maxprocs[i];
    SCRATCH(N_Info, info_k, c);
    SCRATCH(int, err_k, n);
    if ((c && !info_k) || (n && !err_k)) {
        if (info_k) SCRATCH_FREE(info_k);
        if (err_k) SCRATCH_FREE(err_k);
        return SHIM_ERR_NO_MEM;
    }
    for (int i = 0; i < c; i++) info_k[i] = %(hinfoi)s;
    for (int i = 0; i < n; i++) err_k[i] = SHIM_POISON;   /* written back where Kumi wrote */
    N_Comm ic_k;
    int rc = kumi_abi_MPI_Comm_spawn_multiple(count, array_of_commands, array_of_argv, array_of_maxprocs,
                                              array_of_info ? info_k : NULL, dom_rank_in(root), %(hcomm)s, &ic_k,
                                              array_of_errcodes ? err_k : NULL);
    if (rc == 0) *intercomm = %(oic)s;
    for (int i = 0; i < n; i++) if (err_k[i] != SHIM_POISON) array_of_errcodes[i] = err_out(err_k[i]);
    SCRATCH_FREE(info_k);
    SCRATCH_FREE(err_k);
    return rc;
}
SHIM_EXPORT int MPI_Comm_spawn_multiple(int count, char **array_of_commands, char ***array_of_argv,
                                        const int *array_of_maxprocs, const F_Info *array_of_info, int root, F_Comm comm,
                                        F_Comm *intercomm, int *array_of_errcodes) __attribute__((weak, alias("PMPI_Comm_spawn_multiple")));
''' % d)
        return None

    def file_view(self, name):
        """MPI_File_set_view / get_view: the MPI_DISPLACEMENT_CURRENT sentinel (an MPI_Offset), the
        etype and filetype handles and the datarep string (bounded by MPI_MAX_DATAREP_STRING);
        MPI_Register_datarep(_c): the conversion and extent functions get foreign datatype
        handles and return foreign codes, wrapped through extra_state."""
        o = self.out
        fcur, ncur = self.fval('MPI_DISPLACEMENT_CURRENT'), self.nval('MPI_DISPLACEMENT_CURRENT')
        if fcur is None:
            return 'MPI_DISPLACEMENT_CURRENT absent'
        d = {'n': name, 'fcur': fcur, 'ncur': ncur, 'hf': self.hin('File', 'fh'), 'het': self.hin('Datatype', 'etype'),
             'hft': self.hin('Datatype', 'filetype'), 'hinfo': self.hin('Info', 'info'),
             'oet': self.hout('Datatype', 'et_k'), 'oft': self.hout('Datatype', 'ft_k'),
             'peek': self.hpeek('Datatype', 'dt'), 'nmax': self.nval('MPI_MAX_DATAREP_STRING'),
             'fmax': self.fval('MPI_MAX_DATAREP_STRING') or 128, 'nomem': self.nval('MPI_ERR_NO_MEM')}
        if name == 'MPI_File_set_view':
            o.append('''extern int kumi_abi_MPI_File_set_view(N_File, MPI_Offset, N_Datatype, N_Datatype, const char *, N_Info);
/* disp: the foreign MPI_DISPLACEMENT_CURRENT (%(fcur)d) is Kumi's %(ncur)d; a foreign %(ncur)d, a
 * negative displacement that is no sentinel there, stays invalid (another negative value) */
static inline MPI_Offset shim_disp_in(MPI_Offset d)
{
    if (d == (MPI_Offset)%(fcur)d) return (MPI_Offset)%(ncur)d;
    if (d == (MPI_Offset)%(ncur)d) return (MPI_Offset)%(fcur)d == -2 ? -3 : -2;
    return d;
}
SHIM_EXPORT int PMPI_File_set_view(F_File fh, MPI_Offset disp, F_Datatype etype, F_Datatype filetype, const char *datarep, F_Info info)
{
    return kumi_abi_MPI_File_set_view(%(hf)s, shim_disp_in(disp), %(het)s, %(hft)s, datarep, %(hinfo)s);
}
SHIM_EXPORT int MPI_File_set_view(F_File fh, MPI_Offset disp, F_Datatype etype, F_Datatype filetype, const char *datarep, F_Info info) __attribute__((weak, alias("PMPI_File_set_view")));
''' % d)
            return None
        if name == 'MPI_File_get_view':
            o.append('''extern int kumi_abi_MPI_File_get_view(N_File, MPI_Offset *, N_Datatype *, N_Datatype *, char *);
/* the etype and filetype come back as new foreign handles (derived ones the caller frees); the
 * datarep name is copied into the caller's MPI_MAX_DATAREP_STRING (%(fmax)d) chars */
SHIM_EXPORT int PMPI_File_get_view(F_File fh, MPI_Offset *disp, F_Datatype *etype, F_Datatype *filetype, char *datarep)
{
    N_Datatype et_k, ft_k;
    MPI_Offset d_k;
    char rep_k[%(nmax)d > %(fmax)d ? %(nmax)d : %(fmax)d];
    int rc = kumi_abi_MPI_File_get_view(%(hf)s, disp ? &d_k : NULL, etype ? &et_k : NULL, filetype ? &ft_k : NULL,
                                        datarep ? rep_k : NULL);
    if (rc == 0) {
        *disp = d_k == (MPI_Offset)%(ncur)d ? (MPI_Offset)%(fcur)d : d_k;
        *etype = %(oet)s;
        *filetype = %(oft)s;
        size_t l = strnlen(rep_k, %(fmax)d - 1);
        memcpy(datarep, rep_k, l);
        datarep[l] = 0;
    }
    return rc;
}
SHIM_EXPORT int MPI_File_get_view(F_File fh, MPI_Offset *disp, F_Datatype *etype, F_Datatype *filetype, char *datarep) __attribute__((weak, alias("PMPI_File_get_view")));
''' % d)
            return None
        c = name.endswith('_c')
        d['cnt'] = 'MPI_Count' if c else 'int'
        d['sfx'] = '_c' if c else ''
        o.append('''extern int kumi_abi_%(n)s(const char *, void *, void *, void *, void *);
/* user data representation: the foreign conversion and extent functions, and the foreign
 * extra_state, in a record that Kumi hands back as the extra_state (it lives as long as the
 * process, as a registered representation does) */
typedef int (shim_conv%(sfx)s_fn)(void *, F_Datatype, %(cnt)s, void *, MPI_Offset, void *);
typedef int (shim_extent_fn)(F_Datatype, MPI_Aint *, void *);
struct shim_rep%(sfx)s { shim_conv%(sfx)s_fn *rd, *wr; shim_extent_fn *ext; void *extra; };
static int shim_rep%(sfx)s_read(void *userbuf, N_Datatype dt, %(cnt)s count, void *filebuf, MPI_Offset pos, void *extra)
{
    struct shim_rep%(sfx)s *r = extra;
    return err_in(r->rd(userbuf, %(peek)s, count, filebuf, pos, r->extra));
}
static int shim_rep%(sfx)s_write(void *userbuf, N_Datatype dt, %(cnt)s count, void *filebuf, MPI_Offset pos, void *extra)
{
    struct shim_rep%(sfx)s *r = extra;
    return err_in(r->wr(userbuf, %(peek)s, count, filebuf, pos, r->extra));
}
static int shim_rep%(sfx)s_extent(N_Datatype dt, MPI_Aint *extent, void *extra)
{
    struct shim_rep%(sfx)s *r = extra;
    return err_in(r->ext(%(peek)s, extent, r->extra));
}
SHIM_EXPORT int P%(n)s(const char *datarep, shim_conv%(sfx)s_fn *read_conversion_fn, shim_conv%(sfx)s_fn *write_conversion_fn,
                       shim_extent_fn *dtype_file_extent_fn, void *extra_state)
{
    struct shim_rep%(sfx)s *r = malloc(sizeof *r);
    if (!r) return err_out(%(nomem)d);
    r->rd = read_conversion_fn;
    r->wr = write_conversion_fn;
    r->ext = dtype_file_extent_fn;
    r->extra = extra_state;
    int rc = kumi_abi_%(n)s(datarep, read_conversion_fn ? (void *)shim_rep%(sfx)s_read : NULL,
                            write_conversion_fn ? (void *)shim_rep%(sfx)s_write : NULL,
                            dtype_file_extent_fn ? (void *)shim_rep%(sfx)s_extent : NULL, r);
    if (rc != 0) free(r);
    return rc;
}
SHIM_EXPORT int %(n)s(const char *datarep, shim_conv%(sfx)s_fn *read_conversion_fn, shim_conv%(sfx)s_fn *write_conversion_fn,
                      shim_extent_fn *dtype_file_extent_fn, void *extra_state) __attribute__((weak, alias("P%(n)s")));
''' % d)
        return None

    def handle_conv(self, name, what, way):
        """MPI_X_c2f / MPI_X_f2c: Kumi's Fortran integers (Kumi writes these by hand: they have
        no kumi_abi_ entry, the shim takes Kumi's PMPI_X_c2f), except that the Fortran library
        of this ABI (components/abi/*-fortran), when loaded, maps the predefined handles to
        and from its own Fortran values through hooks it sets (kumi_shim_fortran_hooks), so
        that C and Fortran parts of a program agree."""
        s = {'Type': 'Datatype'}.get(what, what)
        o = self.out
        if self.ints and what == 'File':
            # MPICH's MPI_File is a pointer (MPI_FILE_NULL: NULL, Fortran 0): its Fortran integer
            # is Kumi's (a table entry, never 0), not the pointer cut to 32 bits
            self.dlsym_names['kumi_abi_' + name] = 'P' + name
            if way == 'c2f':
                o.append('extern MPI_Fint kumi_abi_%s(N_File);' % name)
                o.append('SHIM_EXPORT MPI_Fint P%s(F_File h) { return h ? kumi_abi_%s(h_in_File(h)) : 0; }' % (name, name))
                o.append('SHIM_EXPORT MPI_Fint %s(F_File h) __attribute__((weak, alias("P%s")));' % (name, name))
            else:
                o.append('extern N_File kumi_abi_%s(MPI_Fint);' % name)
                o.append('SHIM_EXPORT F_File P%s(MPI_Fint f) { return f ? h_out_File(kumi_abi_%s(f)) : NULL; }' % (name, name))
                o.append('SHIM_EXPORT F_File %s(MPI_Fint f) __attribute__((weak, alias("P%s")));' % (name, name))
            return
        if self.ints:   # identity macros in MPICH's mpi.h (C handle == Fortran integer); exported all the same
            if way == 'c2f':
                o.append('SHIM_EXPORT MPI_Fint P%s(F_%s h) { return (MPI_Fint)(intptr_t)h; }' % (name, s))
                o.append('SHIM_EXPORT MPI_Fint %s(F_%s h) __attribute__((weak, alias("P%s")));' % (name, s, name))
            else:
                o.append('SHIM_EXPORT F_%s P%s(MPI_Fint f) { return (F_%s)(intptr_t)f; }' % (s, name, s))
                o.append('SHIM_EXPORT F_%s %s(MPI_Fint f) __attribute__((weak, alias("P%s")));' % (s, name, name))
            return
        self.dlsym_names['kumi_abi_' + name] = 'P' + name
        if not getattr(self, 'fint_hooks', False):
            self.fint_hooks = True
            o.append('''/* set by this ABI's Fortran library: Kumi's integer of a predefined handle <-> its own */
static MPI_Fint (*shim_fint_out_fn)(MPI_Fint);
static MPI_Fint (*shim_fint_in_fn)(int, MPI_Fint);
SHIM_EXPORT void kumi_shim_fortran_hooks(MPI_Fint (*out)(MPI_Fint), MPI_Fint (*in)(int, MPI_Fint))
{
    shim_fint_out_fn = out;
    shim_fint_in_fn = in;
}
static inline MPI_Fint shim_fint_out(MPI_Fint i) { return shim_fint_out_fn ? shim_fint_out_fn(i) : i; }
static inline MPI_Fint shim_fint_in(int kind, MPI_Fint i) { return shim_fint_in_fn ? shim_fint_in_fn(kind, i) : i; }''')
        kind = FINT_KINDS.index(what)
        if what == 'File':
            # MPI_FILE_NULL's Fortran integer is 0 in this ABI, also when its Fortran library
            # (which sets the hooks) is not loaded: a C program's MPI_File_c2f / f2c
            fnull = self.nval('MPI_FILE_NULL')
            if way == 'c2f':
                o.append('extern MPI_Fint kumi_abi_%s(N_File);' % name)
                o.append('SHIM_EXPORT MPI_Fint P%s(F_File h)\n{\n    MPI_Fint i = kumi_abi_%s(h_in(h));\n'
                         '    return shim_fint_out_fn ? shim_fint_out_fn(i) : i == 0x%x ? 0 : i;\n}' % (name, name, fnull))
                o.append('SHIM_EXPORT MPI_Fint %s(F_File h) __attribute__((weak, alias("P%s")));' % (name, name))
            else:
                o.append('extern N_File kumi_abi_%s(MPI_Fint);' % name)
                o.append('SHIM_EXPORT F_File P%s(MPI_Fint f)\n{\n    if (!shim_fint_in_fn && f == 0) f = 0x%x;\n'
                         '    return h_out(kumi_abi_%s(shim_fint_in(%d, f)));\n}' % (name, fnull, name, kind))
                o.append('SHIM_EXPORT F_File %s(MPI_Fint f) __attribute__((weak, alias("P%s")));' % (name, name))
            return
        if way == 'c2f':
            o.append('extern MPI_Fint kumi_abi_%s(N_%s);' % (name, s))
            o.append('SHIM_EXPORT MPI_Fint P%s(F_%s h) { return shim_fint_out(kumi_abi_%s(h_in(h))); }' % (name, s, name))
            o.append('SHIM_EXPORT MPI_Fint %s(F_%s h) __attribute__((weak, alias("P%s")));' % (name, s, name))
        else:
            o.append('extern N_%s kumi_abi_%s(MPI_Fint);' % (s, name))
            o.append('SHIM_EXPORT F_%s P%s(MPI_Fint f) { return h_out(kumi_abi_%s(shim_fint_in(%d, f))); }' % (s, name, name, kind))
            o.append('SHIM_EXPORT F_%s %s(MPI_Fint f) __attribute__((weak, alias("P%s")));' % (s, name, name))

    def status_conv(self, name):
        """MPI_Status_c2f / MPI_Status_f2c: the foreign ABI's Fortran status is its C status seen
        as MPI_Fint[sizeof(MPI_Status) / sizeof(MPI_Fint)] (Open MPI 6 integers, MPICH 5), so
        both copy it as it is, in the foreign layout.  A null pointer or the foreign
        MPI_STATUS(ES)_IGNORE on the C side is refused through Kumi's own conversion (its
        PMPI_Status_c2f / _f2c, given NULL), which raises MPI_ERR_ARG naming the argument
        through the error handler of MPI_COMM_WORLD; the code comes back in the foreign ABI."""
        o = self.out
        self.dlsym_names['kumi_abi_' + name] = 'P' + name
        ign = sorted({self.fval('MPI_STATUS_IGNORE'), self.fval('MPI_STATUSES_IGNORE')})
        bad_c = ' || '.join(['!c'] + ['c == (const F_Status *)%d' % v for v in ign if v])
        o.append('extern int kumi_abi_%s(const void *, void *);' % name)
        if name == 'MPI_Status_c2f':
            o.append('''SHIM_EXPORT int PMPI_Status_c2f(const F_Status *c, MPI_Fint *f)
{
    if (%(bad)s || !f) return err_out(kumi_abi_MPI_Status_c2f(%(bad)s ? NULL : (const void *)c, NULL));
    memmove(f, c, sizeof(F_Status));
    return 0;
}
SHIM_EXPORT int MPI_Status_c2f(const F_Status *c, MPI_Fint *f) __attribute__((weak, alias("PMPI_Status_c2f")));''' % {'bad': bad_c})
        else:
            o.append('''SHIM_EXPORT int PMPI_Status_f2c(const MPI_Fint *f, F_Status *c)
{
    if (!f || %(bad)s) return err_out(kumi_abi_MPI_Status_f2c(f, NULL));
    memmove(c, f, sizeof(F_Status));
    return 0;
}
SHIM_EXPORT int MPI_Status_f2c(const MPI_Fint *f, F_Status *c) __attribute__((weak, alias("PMPI_Status_f2c")));''' % {'bad': bad_c})
        if name == 'MPI_Status_c2f':
            o.append('_Static_assert(sizeof(F_Status) % sizeof(MPI_Fint) == 0, "a Fortran status is the C one");')

    def keyval_ints(self, roles, nat, test):
        o = self.out
        o.append('''/* a keyval's foreign callbacks and extra_state, and the kind of object its attributes go on
 * (0 communicators, 1 datatypes, 2 windows): kept for the life of the process */
struct shim_keyval { void *copy, *del, *extra; int kind; };
typedef int (shim_copy_fn)(int, int, void *, void *, void *, int *);
typedef int (shim_delete_fn)(int, int, void *, void *);
static int shim_obj_out(int kind, void *obj)
{
    return kind == 1 ? h_peek_Datatype(obj) : kind == 2 ? h_peek_Win(obj) : h_peek_Comm(obj);
}
static int shim_copy_tramp(void *obj, int keyval, void *extra, void *in, void *out, int *flag)
{
    struct shim_keyval *w = extra;
    return err_in(((shim_copy_fn *)w->copy)(shim_obj_out(w->kind, obj), dom_keyval_out(keyval), w->extra, in, out, flag));
}
static int shim_delete_tramp(void *obj, int keyval, void *val, void *extra)
{
    struct shim_keyval *w = extra;
    return err_in(((shim_delete_fn *)w->del)(shim_obj_out(w->kind, obj), dom_keyval_out(keyval), val, w->extra));
}
static int shim_create_keyval(int (*create)(void *, void *, int *, void *), int kind, void *copy_fn, void *delete_fn,
                              int *keyval, void *extra_state)
{
    void *f = copy_fn, *nc, *nd;
    if (%(nullcopy)s) nc = (void *)%(ncopy)d;
    else if (%(dup)s) nc = (void *)%(ndup)d;
    else nc = (void *)shim_copy_tramp;
    f = delete_fn;
    if (%(nulldel)s) nd = (void *)%(ndel)d;
    else nd = (void *)shim_delete_tramp;
    struct shim_keyval *w = NULL;
    if (nc == (void *)shim_copy_tramp || nd == (void *)shim_delete_tramp) {
        w = malloc(sizeof *w);
        if (!w) return SHIM_ERR_NO_MEM;
        w->copy = copy_fn; w->del = delete_fn; w->extra = extra_state; w->kind = kind;
        extra_state = w;
    }
    int k = 0;
    int rc = create(nc, nd, keyval ? &k : NULL, extra_state);
    if (rc == 0) *keyval = dom_keyval_out(k);
    else free(w);
    return rc;
}''' % {'nullcopy': test('NULL_COPY_FN'), 'dup': test('DUP_FN'), 'nulldel': test('NULL_DELETE_FN'),
       'ncopy': nat['NULL_COPY_FN'], 'ndup': nat['DUP_FN'], 'ndel': nat['NULL_DELETE_FN']})
        self.keyval_fns = [sym for r in roles.values() for _, sym in r]

    def keyval_common(self):
        """Attribute copy/delete callbacks: the foreign ABI's predefined ones (functions of the
        foreign library, compared by address) become Kumi's constants; the program's own are
        wrapped through extra_state."""
        o = self.out
        roles = {'NULL_COPY_FN': [], 'DUP_FN': [], 'NULL_DELETE_FN': []}
        for cname, c in sorted(self.fc.items()):
            if 'symbol' not in c or not c['type'].endswith('function*'):
                continue
            for role in roles:
                if cname.endswith('_' + role) or cname == 'MPI_' + role:
                    roles[role].append((cname, c['symbol']))
        nat = {'NULL_COPY_FN': self.nval('MPI_COMM_NULL_COPY_FN'), 'DUP_FN': self.nval('MPI_COMM_DUP_FN'),
               'NULL_DELETE_FN': self.nval('MPI_COMM_NULL_DELETE_FN')}
        for role in roles:   # one function per symbol (MPICH: MPI_DUP_FN, MPI_COMM_DUP_FN, ... are MPIR_Dup_fn)
            seen = set()
            roles[role] = [(c, y) for c, y in roles[role] if not (y in seen or seen.add(y))]
        o.append('/* ---- attribute callbacks: the foreign library\'s predefined ones, callable, compared by address */')
        for cname, sym in roles['NULL_COPY_FN']:
            o.append('SHIM_EXPORT int %s(void *o, int k, void *e, void *in, void *out, int *flag) { *flag = 0; return 0; }   /* %s */' % (sym, cname))
        for cname, sym in roles['DUP_FN']:
            o.append('SHIM_EXPORT int %s(void *o, int k, void *e, void *in, void *out, int *flag) { *(void **)out = in; *flag = 1; return 0; }   /* %s */' % (sym, cname))
        for cname, sym in roles['NULL_DELETE_FN']:
            o.append('SHIM_EXPORT int %s(void *o, int k, void *v, void *e) { return 0; }   /* %s */' % (sym, cname))
        def test(role):
            t = ['f == (void *)%s' % sym for _, sym in roles[role]]
            if self.ints and any(self.fval(n) == 0 for n in self.fc if n.endswith(role) and 'symbol' not in self.fc[n]):
                t.append('f == NULL')
            return ' || '.join(t) or '0'
        if self.ints:
            self.keyval_ints(roles, nat, test)
            return
        o.append('''/* a keyval's foreign callbacks and extra_state: kept for the life of the process (Kumi may
 * call delete callbacks of attributes after MPI_*_free_keyval) */
struct shim_keyval { void *copy, *del, *extra; };
typedef int (shim_copy_fn)(void *, int, void *, void *, void *, int *);
typedef int (shim_delete_fn)(void *, int, void *, void *);
static int shim_copy_tramp(void *obj, int keyval, void *extra, void *in, void *out, int *flag)
{
    struct shim_keyval *w = extra;
    return err_in(((shim_copy_fn *)w->copy)(h_out(obj), dom_keyval_out(keyval), w->extra, in, out, flag));
}
static int shim_delete_tramp(void *obj, int keyval, void *val, void *extra)
{
    struct shim_keyval *w = extra;
    return err_in(((shim_delete_fn *)w->del)(h_out(obj), dom_keyval_out(keyval), val, w->extra));
}
static int shim_create_keyval(int (*create)(void *, void *, int *, void *), void *copy_fn, void *delete_fn,
                              int *keyval, void *extra_state)
{
    void *f = copy_fn, *nc, *nd;
    if (%(nullcopy)s) nc = (void *)%(ncopy)d;
    else if (%(dup)s) nc = (void *)%(ndup)d;
    else nc = (void *)shim_copy_tramp;
    f = delete_fn;
    if (%(nulldel)s) nd = (void *)%(ndel)d;
    else nd = (void *)shim_delete_tramp;
    struct shim_keyval *w = NULL;
    if (nc == (void *)shim_copy_tramp || nd == (void *)shim_delete_tramp) {
        w = malloc(sizeof *w);
        if (!w) return SHIM_ERR_NO_MEM;
        w->copy = copy_fn; w->del = delete_fn; w->extra = extra_state;
        extra_state = w;
    }
    int k = 0;
    int rc = create(nc, nd, keyval ? &k : NULL, extra_state);
    if (rc == 0) *keyval = dom_keyval_out(k);
    else free(w);
    return rc;
}''' % {'nullcopy': test('NULL_COPY_FN'), 'dup': test('DUP_FN'), 'nulldel': test('NULL_DELETE_FN'),
       'ncopy': nat['NULL_COPY_FN'], 'ndup': nat['DUP_FN'], 'ndel': nat['NULL_DELETE_FN']})
        self.keyval_fns = [sym for r in roles.values() for _, sym in r]

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
            if name in SPECIAL:
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
#include <link.h>
struct shim_scan { const void *self_base, *kumi_base; int missing; };
static void shim_scan_rela(const ElfW(Rela) *r, size_t bytes, const ElfW(Sym) *sym, const char *str, struct shim_scan *sc)
{
    for (size_t i = 0; r && i < bytes / sizeof *r; i++) {
        size_t k = ELF64_R_SYM(r[i].r_info);
        if (k == 0 || sym[k].st_shndx != SHN_UNDEF) continue;
        const char *n = str + sym[k].st_name;
        /* a companion library (the C++ bindings' libmpi_cxx.so.40) may define it */
        if ((strncmp(n, "MPI_", 4) == 0 || strncmp(n, "PMPI_", 5) == 0) && !shim_exported(n) &&
            !dlsym(RTLD_DEFAULT, n)) {
            if (sc->missing++ < 20) fprintf(stderr, "%(me)s (Kumi's %(abi)s ABI): %%s is not provided yet\\n", n);
        }
    }
}
static int shim_scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct shim_scan *sc = arg;
    const void *base = (const void *)info->dlpi_addr;
    if (base == sc->self_base || base == sc->kumi_base) return 0;
    for (int p = 0; p < info->dlpi_phnum; p++) {
        if (info->dlpi_phdr[p].p_type != PT_DYNAMIC) continue;
        const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[p].p_vaddr);
        const ElfW(Rela) *rela = NULL, *jmp = NULL;
        const ElfW(Sym) *sym = NULL;
        const char *str = NULL;
        size_t relasz = 0, jmpsz = 0;
        long pltrel = DT_RELA;
        for (; d->d_tag != DT_NULL; d++) {
            switch (d->d_tag) {   /* glibc has relocated these pointers (absolute addresses) */
            case DT_RELA: rela = (const ElfW(Rela) *)d->d_un.d_ptr; break;
            case DT_RELASZ: relasz = d->d_un.d_val; break;
            case DT_JMPREL: jmp = (const ElfW(Rela) *)d->d_un.d_ptr; break;
            case DT_PLTRELSZ: jmpsz = d->d_un.d_val; break;
            case DT_PLTREL: pltrel = (long)d->d_un.d_val; break;
            case DT_SYMTAB: sym = (const ElfW(Sym) *)d->d_un.d_ptr; break;
            case DT_STRTAB: str = (const char *)d->d_un.d_ptr; break;
            }
        }
        if (!sym || !str || pltrel != DT_RELA) return 0;
        shim_scan_rela(rela, relasz, sym, str, sc);
        shim_scan_rela(jmp, jmpsz, sym, str, sc);
    }
    return 0;
}
static int shim_err_out(int c) { return err_out(c); }
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
    /* Kumi returns the codes of failed calls in this ABI, so that entries jump straight in */
    void (*set_err_out)(int (*)(int)) = (void (*)(int (*)(int)))dlsym(h, "kumi_abi_set_err_out");
    if (!set_err_out) {
        fprintf(stderr, "%(me)s (Kumi's %(abi)s ABI): Kumi's %(lib)s has no kumi_abi_set_err_out: an older Kumi?\\n");
        _exit(127);
    }
    set_err_out(shim_err_out);
    Dl_info kumi;
    dladdr(*shim_entries[0].slot, &kumi);
    struct shim_scan sc = { self.dli_fbase, kumi.dli_fbase, 0 };
    dl_iterate_phdr(shim_scan_one, &sc);
    if (sc.missing) {
        fprintf(stderr, "%(me)s (Kumi's %(abi)s ABI): the program needs %%d MPI procedure(s) this library does not translate yet\\n", sc.missing);
        _exit(127);
    }
}''' % {'lib': lib, 'me': self.facts['library'], 'abi': self.facts['name'],
        'exports': '\n'.join('    "%s",' % n for n in sorted(self.exported))})
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
