"""mkshim_special.py: the hand-shaped parts of the foreign-ABI C shims (mkshim.py's Gen
mixes this class in): procedures of mkshim.SPECIAL whose parameters no kind-driven
translation covers (callbacks: user ops, error handlers, keyval copy/delete,
generalized requests, datarep conversions; MPI_Type_get_contents; spawn argument
arrays; file views), the handle and status conversions (MPI_X_c2f / f2c,
MPI_Status_c2f / f2c), and the keyval tables.  Methods use Gen's state (self.out,
self.nval, self.fval, self.facts, ...)."""

FINT_KINDS = ('Comm', 'Type', 'Group', 'Info', 'Errhandler', 'Op', 'Request', 'Win', 'File', 'Message', 'Session')


class Special:
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
        if name == 'MPI_Op_create_c':
            # the large-count user function (MPI 4.0): an MPI_Count count, Kumi's whole count at once
            o.append('''typedef void (F_User_function_c)(void *, void *, MPI_Count *, F_Datatype *);
static void shim_op_tramp_c(void *in, void *inout, MPI_Count len, N_Datatype dt, void *ctx)
{
    F_Datatype fdt = %(peekdt)s;
    ((F_User_function_c *)ctx)(in, inout, &len, &fdt);
}
SHIM_EXPORT int PMPI_Op_create_c(F_User_function_c *user_fn, int commute, F_Op *op)
{
    N_Op k;
    int rc = kumi_abi_op_create(shim_op_tramp_c, (void *)user_fn, commute, &k);
    if (rc == 0) *op = %(outop)s;
    return rc;
}
SHIM_EXPORT int MPI_Op_create_c(F_User_function_c *user_fn, int commute, F_Op *op) __attribute__((weak, alias("PMPI_Op_create_c")));
''' % {'peekdt': self.hpeek('Datatype', 'dt'), 'outop': self.hout('Op', 'k')})
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
            self.type_contents_large()
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
static struct { void *user, *mine; MPI_Count size; } shim_bsend;   /* the process's attached buffer */
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
            b = shim_bsend.user; n = shim_bsend.size > INT_MAX ? INT_MAX : (int)shim_bsend.size;
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
        if name == 'MPI_Buffer_attach_c':
            # the large-count forms (MPICH 4.0): the same, with MPI_Count sizes; a buffer attached by
            # either form is detached by either (one attached buffer per process)
            fo, no = self.fval('MPI_BSEND_OVERHEAD'), self.nval('MPI_BSEND_OVERHEAD')
            o.append('''extern int kumi_abi_MPI_Buffer_attach_c(void *, MPI_Count);
extern int kumi_abi_MPI_Buffer_detach_c(void *, MPI_Count *);
SHIM_EXPORT int PMPI_Buffer_attach_c(void *buffer, MPI_Count size)
{
    if (size < 0 || %(no)d <= %(fo)d) return kumi_abi_MPI_Buffer_attach_c(buffer, size);
    MPI_Count n = size + (size / %(fo)d + 1) * (%(no)d - %(fo)d);
    void *mine = malloc((size_t)n);
    if (!mine) return SHIM_ERR_NO_MEM;
    pthread_mutex_lock(&shim_bsend_lock);
    int rc = kumi_abi_MPI_Buffer_attach_c(mine, n);
    if (rc == 0) { shim_bsend.user = buffer; shim_bsend.mine = mine; shim_bsend.size = size; }
    pthread_mutex_unlock(&shim_bsend_lock);
    if (rc != 0) free(mine);
    return rc;
}
SHIM_EXPORT int MPI_Buffer_attach_c(void *buffer, MPI_Count size) __attribute__((weak, alias("PMPI_Buffer_attach_c")));
SHIM_EXPORT int PMPI_Buffer_detach_c(void *buffer_addr, MPI_Count *size)
{
    void *b = NULL;
    MPI_Count n = 0;
    pthread_mutex_lock(&shim_bsend_lock);
    int rc = kumi_abi_MPI_Buffer_detach_c(buffer_addr ? (void *)&b : NULL, size ? &n : NULL);
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
SHIM_EXPORT int MPI_Buffer_detach_c(void *buffer_addr, MPI_Count *size) __attribute__((weak, alias("PMPI_Buffer_detach_c")));
''' % {'fo': fo, 'no': no})
            return None
        if name == 'MPI_Buffer_detach_c':
            return None   # written with MPI_Buffer_attach_c
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
        the communicators are translated, and the error codes come back in this ABI: Kumi
        writes them into the program's array through the shim's kumi_abi_set_err_out (only
        Kumi knows their number at every process: maxprocs is significant at the root only)."""
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
    N_Comm ic_k;
    int rc = kumi_abi_MPI_Comm_spawn(command, argv, maxprocs, %(hinfo)s, dom_rank_in(root), %(hcomm)s, &ic_k,
                                     array_of_errcodes);   /* codes in this ABI (Kumi's err_out) */
    if (rc == 0) *intercomm = %(oic)s;
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
    int c = count > 0 && array_of_info ? count : 0;
    SCRATCH(N_Info, info_k, c);
    if (c && !info_k) return SHIM_ERR_NO_MEM;
    for (int i = 0; i < c; i++) info_k[i] = %(hinfoi)s;
    N_Comm ic_k;
    int rc = kumi_abi_MPI_Comm_spawn_multiple(count, array_of_commands, array_of_argv, array_of_maxprocs,
                                              array_of_info ? info_k : NULL, dom_rank_in(root), %(hcomm)s, &ic_k,
                                              array_of_errcodes);   /* codes in this ABI (Kumi's err_out) */
    if (rc == 0) *intercomm = %(oic)s;
    SCRATCH_FREE(info_k);
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

    def type_contents_large(self):
        """MPI_Type_get_envelope_c and MPI_Type_get_contents_c (MPI 4.0), where both the foreign
        library and Kumi have them: their prototypes have one parameter more than the int forms
        (the large counts), so mkshim.Gen.large does not make them.  The combiner comes back in
        the foreign numbering; in the contents, the datatypes are handles and the integers
        MPI_ORDER_* / MPI_DISTRIBUTE_* constants where the combiner has them: at the places of
        the int form's layout, or of the large one (a type made by a _c constructor: its
        sizes, starts and global sizes are large counts, so fewer integers)."""
        names = ['MPI_Type_get_envelope_c', 'MPI_Type_get_contents_c']
        if any(n not in self.ffuncs or (self.kumi is not None and n not in self.kumi) for n in names):
            return
        self.out.append('''extern int kumi_abi_MPI_Type_get_envelope_c(N_Datatype, MPI_Count *, MPI_Count *, MPI_Count *, MPI_Count *, int *);
extern int kumi_abi_MPI_Type_get_contents_c(N_Datatype, MPI_Count, MPI_Count, MPI_Count, MPI_Count, int *, MPI_Aint *, MPI_Count *, N_Datatype *);
SHIM_EXPORT int PMPI_Type_get_envelope_c(F_Datatype datatype, MPI_Count *num_integers, MPI_Count *num_addresses,
                                         MPI_Count *num_large_counts, MPI_Count *num_datatypes, int *combiner)
{
    int comb_k;
    int rc = kumi_abi_MPI_Type_get_envelope_c(%(hin)s, num_integers, num_addresses, num_large_counts, num_datatypes,
                                              combiner ? &comb_k : NULL);
    if (rc == 0 && combiner) *combiner = dom_combiner_out(comb_k);
    return rc;
}
SHIM_EXPORT int MPI_Type_get_envelope_c(F_Datatype datatype, MPI_Count *num_integers, MPI_Count *num_addresses,
                                        MPI_Count *num_large_counts, MPI_Count *num_datatypes, int *combiner)
    __attribute__((weak, alias("PMPI_Type_get_envelope_c")));
SHIM_EXPORT int PMPI_Type_get_contents_c(F_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses,
                                         MPI_Count max_large_counts, MPI_Count max_datatypes, int *array_of_integers,
                                         MPI_Aint *array_of_addresses, MPI_Count *array_of_large_counts,
                                         F_Datatype *array_of_datatypes)
{
    N_Datatype dt = %(hin)s;
    MPI_Count ni = 0, na = 0, nc = 0, nd = 0;
    int comb = 0;
    int rc = kumi_abi_MPI_Type_get_envelope_c(dt, &ni, &na, &nc, &nd, &comb);
    if (rc != 0) return rc;
    int n = max_datatypes < 0 ? 0 : max_datatypes > nd ? (int)nd : (int)max_datatypes;
    SCRATCH(N_Datatype, types_k, n);
    if (!types_k) return SHIM_ERR_NO_MEM;
    rc = kumi_abi_MPI_Type_get_contents_c(dt, max_integers, max_addresses, max_large_counts, max_datatypes,
                                          array_of_integers, array_of_addresses, array_of_large_counts,
                                          array_of_datatypes ? types_k : NULL);
    if (rc == 0) {
        int *v = array_of_integers;
        for (int i = 0; i < n; i++) array_of_datatypes[i] = %(hout)s;
        if (comb == %(subarray)d && ni >= 2) {
            int d = v[0];
            int at = ni == 2 ? 1 : 3 * d + 1;   /* large: { ndims, order }; else { ndims, sizes, subsizes, starts, order } */
            v[at] = dom_order_out(v[at]);
        } else if (comb == %(darray)d && ni >= 4) {
            int d = v[2];
            int big = ni == 4 + 3 * (MPI_Count)d;   /* large: the global sizes are large counts */
            int *dist = v + (big ? 3 : 3 + d), *darg = dist + d;
            for (int i = 0; i < d; i++) {
                dist[i] = dom_distrib_enum_out(dist[i]);
                darg[i] = dom_dtype_distribution_out(darg[i]);
            }
            v[big ? 3 + 3 * d : 3 + 4 * d] = dom_order_out(v[big ? 3 + 3 * d : 3 + 4 * d]);
        }
    }
    SCRATCH_FREE(types_k);
    return rc;
}
SHIM_EXPORT int MPI_Type_get_contents_c(F_Datatype datatype, MPI_Count max_integers, MPI_Count max_addresses,
                                        MPI_Count max_large_counts, MPI_Count max_datatypes, int *array_of_integers,
                                        MPI_Aint *array_of_addresses, MPI_Count *array_of_large_counts,
                                        F_Datatype *array_of_datatypes)
    __attribute__((weak, alias("PMPI_Type_get_contents_c")));
''' % {'hin': self.hin('Datatype', 'datatype'), 'hout': self.hout('Datatype', 'types_k[i]'),
       'subarray': self.nval('MPI_COMBINER_SUBARRAY'), 'darray': self.nval('MPI_COMBINER_DARRAY')})
        self.exported.extend(names)
