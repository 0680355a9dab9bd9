/* libmpi_cxx.so.40: Open MPI 4.x's C++ bindings library (namespace MPI) on Kumi (issue 17).
 *
 * Open MPI's C++ bindings are inline code in its headers (mpi/cxx/ headers) that calls the C API;
 * a program built with mpicxx.openmpi still imports from libmpi_cxx.so.40 what those headers
 * leave out of line.  This library provides that, written here against the facts of the ABI
 * (data/abi/ompi.json "cxx", probed by tools/abi-probe.py --cxx-lib), not against Open MPI's
 * headers, so that building Kumi needs no Open MPI:
 *
 *  - the predefined C++ objects (MPI::COMM_WORLD, MPI::INT, MPI::SUM, MPI::ERRORS_THROW_EXCEPTIONS,
 *    ...): every class of the bindings is { vptr; C handle } (16 bytes).  PIE programs copy-
 *    relocate them, so they are exported with those names and sizes, and set by a constructor
 *    of this library through its GOT (no -Bsymbolic), i.e. in the program's copies.  The C
 *    handles are the Open MPI C handles of the C shim (libmpi.so.40, a DT_NEEDED of this one).
 *  - their vtables: the program's own.  Every class's vtable is a weak (vague-linkage) object
 *    emitted by the program from the inline virtual functions of the headers, and exported by
 *    it because Open MPI's libmpi_cxx defines it too; the vptrs set here name those symbols, so
 *    they resolve to the program's vtables (exact layout by construction).  A program that emits
 *    none for a class gets this library's fallback vtable of the recorded size, whose slots stop
 *    the program with a message (a virtual call on a predefined object of a class the program
 *    never instantiates: not seen in practice).
 *  - the out-of-line functions: MPI::Comm::Comm(), MPI::Comm::Comm(const Comm_Null &),
 *    MPI::Datatype::Free(), MPI::Win::Free(), MPI::InitializeIntercepts()
 *    (called by MPI::Init after MPI_Init), the generalized-request intercepts of
 *    MPI::Grequest::Start, the keyvals of Comm/Datatype/Win::Create_keyval, Comm/Win::
 *    Create_errhandler with C++ handlers, the reduction intercept ompi_mpi_cxx_op_intercept
 *    with ompi_op_set_cxx_callback (which Open MPI's libmpi.so.40 exports: defined here) and, to
 *    give each C++ op its function (through the context of the shim's kumi_shim_op_create_ctx),
 *    MPI_Op_create and MPI_Op_free; and the
 *    C handle of MPI::ERRORS_THROW_EXCEPTIONS, ompi_mpi_errors_throw_exceptions, an object of the
 *    C shim's predefined-handle form {magic, native} whose native error handler (created at
 *    InitializeIntercepts) throws MPI::Exception; File::Close, File::Create_errhandler (a C++
 *    handler of files, through the same context) and the four Register_datarep (C and C++
 *    conversion functions, wrapped through the C extra_state); MPI_Comm_accept, _connect, _disconnect, _spawn and _spawn_multiple, which every such
 *    program imports (the headers' inline virtual functions call them), are defined here: the C
 *    shim's where it has them, else they fail with MPI_ERR_UNSUPPORTED_OPERATION.
 *
 * MPI::Exception is { int error_code; char *error_string; int error_class; } with no virtual
 * function; the program catches it by type name (N3MPI9ExceptionE) and frees it with its own
 * inline destructor (delete[] error_string). */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <new>
#include <pthread.h>
#include <dlfcn.h>

#define KX __attribute__((visibility("default")))

/* Open MPI's C API as the C shim exports it: handles are pointers */
typedef void *OHandle;
extern "C" {
int MPI_Type_free(OHandle *);
int MPI_Win_free(OHandle *);
int MPI_Comm_call_errhandler(OHandle, int);
int MPI_Comm_create_keyval(int (*)(OHandle, int, void *, void *, void *, int *), int (*)(OHandle, int, void *, void *),
                           int *, void *);
int MPI_Type_create_keyval(int (*)(OHandle, int, void *, void *, void *, int *), int (*)(OHandle, int, void *, void *),
                           int *, void *);
int MPI_Win_create_keyval(int (*)(OHandle, int, void *, void *, void *, int *), int (*)(OHandle, int, void *, void *),
                          int *, void *);
int MPI_Comm_test_inter(OHandle, int *);
int MPI_Win_create_errhandler(void (*)(OHandle *, int *, ...), OHandle *);
int MPI_Topo_test(OHandle, int *);
int MPI_Error_class(int, int *);
int MPI_Error_string(int, char *, int *);
int MPI_Comm_create_errhandler(void (*)(OHandle *, int *, ...), OHandle *);
}
enum { OMPI_MAX_ERROR_STRING = 256 };   /* MPI::MAX_ERROR_STRING (MPI_MAX_ERROR_STRING) */

/* the tables, generated from the facts (data/abi/ompi.json 'cxx') by mkcxx.py */
#include "ompi_cxx_facts.h"

/* the C shim's predefined handles the C++ objects hold */
#define DECL_C(n) extern "C" char n[];
KUMI_CXX_CSYMS(DECL_C)

/* ---- the C handle of MPI::ERRORS_THROW_EXCEPTIONS, in the C shim's predefined-object form
 * (components/abi/mkshim.py: struct shim_obj { uint64_t magic; void *native; }), of Open MPI's
 * size (data/abi/ompi.json objects).  At load it is made a copy of the shim's
 * ompi_mpi_errors_return (its magic and Kumi's handle), so that until MPI::Init it stands for
 * MPI_ERRORS_RETURN; InitializeIntercepts gives it the native handler that throws. */
struct shim_obj { uint64_t magic; void *native; };
extern "C" KX __attribute__((aligned(16))) char ompi_mpi_errors_throw_exceptions[KUMI_CXX_THROW_SIZE];
char ompi_mpi_errors_throw_exceptions[KUMI_CXX_THROW_SIZE];
static shim_obj *throw_obj() { return (shim_obj *)(void *)ompi_mpi_errors_throw_exceptions; }

/* ---- vtables: the program's (weak references), else these fallbacks.  Sizes in bytes from
 * data/abi/ompi.json cxx.objects ("vtable for MPI::X", _ZTVN3MPI..E). */
extern "C" void kumi_cxx_no_vtable(void)
{
    std::fprintf(stderr, "Kumi libmpi_cxx.so.40: a virtual function of a predefined MPI:: object was "
                 "called, but the program has no vtable of its class (not supported)\n");
    std::abort();
}
#define VT(cls, sym, bytes) \
    extern "C" KX __attribute__((weak)) void *kumi_vt_##cls[(bytes) / 8] __asm__(#sym); \
    extern "C" { __attribute__((weak)) void *kumi_vt_##cls[(bytes) / 8] = { 0 }; } \
    extern "C" __attribute__((visibility("hidden"), alias(#sym))) void *kumi_vt_own_##cls[(bytes) / 8]; \
    static __attribute__((unused)) void *const *vt_##cls() { return (void *const *)kumi_vt_##cls + 2; }
KUMI_CXX_VTABLES(VT)

/* this library's vtable, when it is the one in use (the program has none of that class), gets
 * the stopping function in every slot */
static void fill_fallback(void **vt, void **own, size_t n)
{
    if (vt != own) return;
    for (size_t i = 2; i < n; i++) vt[i] = (void *)kumi_cxx_no_vtable;
}

/* ---- the objects: { vptr, handle }, as the program sees them */
struct Obj { void *const *vptr; void *h; };

#define DEF_OBJ(cls, name, sym, c, size) extern "C" KX Obj kumi_cxx_##name __asm__(#sym); Obj kumi_cxx_##name; \
    static_assert(sizeof(Obj) == size, "size of MPI::" #name);
KUMI_CXX_OBJECTS(DEF_OBJ)
/* MPI::BOTTOM, MPI::IN_PLACE (void *const: Open MPI's MPI_BOTTOM 0, MPI_IN_PLACE 1), ARGV_NULL,
 * ARGVS_NULL (null), mpi_errno, ompi_libcxx_version_string */
extern "C" KX void *const kumi_cxx_BOTTOM __asm__("_ZN3MPI6BOTTOME");
void *const kumi_cxx_BOTTOM = 0;
extern "C" KX void *const kumi_cxx_IN_PLACE __asm__("_ZN3MPI8IN_PLACEE");
void *const kumi_cxx_IN_PLACE = (void *)1;
extern "C" KX const char **kumi_cxx_ARGV_NULL __asm__("_ZN3MPI9ARGV_NULLE");
const char **kumi_cxx_ARGV_NULL = 0;
extern "C" KX const char ***kumi_cxx_ARGVS_NULL __asm__("_ZN3MPI10ARGVS_NULLE");
const char ***kumi_cxx_ARGVS_NULL = 0;
extern "C" KX int kumi_cxx_mpi_errno __asm__("_ZN3MPI9mpi_errnoE");
int kumi_cxx_mpi_errno = 0;
extern "C" KX const char kumi_cxx_version[6] __asm__("_ZN3MPI26ompi_libcxx_version_stringE");
const char kumi_cxx_version[6] = "4.1.4";

__attribute__((constructor)) static void kumi_cxx_init(void)
{
    *throw_obj() = *(const shim_obj *)(const void *)ompi_mpi_errors_return;
#define SET_OBJ(cls, name, sym, c, size) kumi_cxx_##name.vptr = vt_##cls(); kumi_cxx_##name.h = c;
    KUMI_CXX_OBJECTS(SET_OBJ)
#define FILL(cls, sym, bytes) fill_fallback(kumi_vt_##cls, kumi_vt_own_##cls, (bytes) / 8);
    KUMI_CXX_VTABLES(FILL)
}

/* ---- MPI::Exception (layout of Open MPI's: no vptr) */
namespace MPI {
class Exception {   /* the layout of the facts (cxx.exception): code at 0, string at 8, class at 16 */
public:
    explicit Exception(int ec) : error_code(ec), error_string(new char[OMPI_MAX_ERROR_STRING]), error_class(-1)
    {
        int len = 0;
        (void)MPI_Error_class(error_code, &error_class);
        error_string[0] = 0;
        (void)MPI_Error_string(error_code, error_string, &len);
    }
    Exception(const Exception &a) : error_code(a.error_code), error_string(new char[OMPI_MAX_ERROR_STRING]),
        error_class(a.error_class)
    {
        std::memcpy(error_string, a.error_string, OMPI_MAX_ERROR_STRING);
    }
    ~Exception() { delete[] error_string; }
protected:
    int error_code;
    char *error_string;
    int error_class;
};
}

static_assert(sizeof(MPI::Exception) == KUMI_CXX_EXCEPTION_SIZE, "size of MPI::Exception");

static void throw_exception(OHandle *, int *code, ...)
{
    throw MPI::Exception(*code);
}

/* MPI::InitializeIntercepts(): after MPI_Init */
extern "C" KX void kumi_cxx_initialize_intercepts(void) __asm__("_ZN3MPI20InitializeInterceptsEv");
extern "C" void kumi_cxx_initialize_intercepts(void)
{
    static bool done;
    if (done) return;
    done = true;
    /* a user error handler of the C shim (its handle is Kumi's native one) that throws */
    OHandle eh = 0;
    if (MPI_Comm_create_errhandler(throw_exception, &eh) == 0)
        throw_obj()->native = eh;
}

/* ---- MPI::Comm::Comm(), MPI::Comm::Comm(const Comm_Null &) (C1 and C2: no virtual base) */
extern "C" KX void kumi_cxx_comm_ctor(Obj *self) __asm__("_ZN3MPI4CommC2Ev");
extern "C" void kumi_cxx_comm_ctor(Obj *self) { self->vptr = vt_Comm(); self->h = ompi_mpi_comm_null; }
extern "C" KX void kumi_cxx_comm_ctor1(Obj *self) __asm__("_ZN3MPI4CommC1Ev") __attribute__((alias("_ZN3MPI4CommC2Ev")));
extern "C" KX void kumi_cxx_comm_ctor_null(Obj *self, const Obj *n) __asm__("_ZN3MPI4CommC2ERKNS_9Comm_NullE");
extern "C" void kumi_cxx_comm_ctor_null(Obj *self, const Obj *n) { self->vptr = vt_Comm(); self->h = n->h; }
extern "C" KX void kumi_cxx_comm_ctor_null1(Obj *self, const Obj *n) __asm__("_ZN3MPI4CommC1ERKNS_9Comm_NullE")
    __attribute__((alias("_ZN3MPI4CommC2ERKNS_9Comm_NullE")));

/* ---- Datatype::Free, Win::Free, File::Close */
extern "C" KX void kumi_cxx_type_free(Obj *self) __asm__("_ZN3MPI8Datatype4FreeEv");
extern "C" void kumi_cxx_type_free(Obj *self) { (void)MPI_Type_free(&self->h); }
extern "C" KX void kumi_cxx_win_free(Obj *self) __asm__("_ZN3MPI3Win4FreeEv");
extern "C" void kumi_cxx_win_free(Obj *self) { (void)MPI_Win_free(&self->h); }

/* ---- the dynamic-process procedures: the headers' inline Comm::Accept, Connect, Disconnect,
 * Spawn and Spawn_multiple make every program import them.  This library comes before the C
 * shim in the program's lookup scope, so it defines them: the shim's PMPI_ entry where the shim
 * has one (looked up at the call: Kumi gains them), else MPI_ERR_UNSUPPORTED_OPERATION (Open
 * MPI's 52) through the communicator's error handler. */
static int unsupported(OHandle comm)
{
    const int code = 52;
    (void)MPI_Comm_call_errhandler(comm, code);
    return code;
}
#define FORWARD(T, name, comm, ...) \
    T *f = (T *)dlsym(RTLD_NEXT, "P" name); \
    return f ? f(__VA_ARGS__) : unsupported(comm);
extern "C" {
typedef int (AcceptFn)(const char *, OHandle, int, OHandle, OHandle *);
KX int MPI_Comm_accept(const char *p, OHandle info, int root, OHandle comm, OHandle *nc)
{
    FORWARD(AcceptFn, "MPI_Comm_accept", comm, p, info, root, comm, nc)
}
KX int MPI_Comm_connect(const char *p, OHandle info, int root, OHandle comm, OHandle *nc)
{
    FORWARD(AcceptFn, "MPI_Comm_connect", comm, p, info, root, comm, nc)
}
typedef int (DisconnectFn)(OHandle *);
KX int MPI_Comm_disconnect(OHandle *comm)
{
    FORWARD(DisconnectFn, "MPI_Comm_disconnect", comm ? *comm : (OHandle)ompi_mpi_comm_world, comm)
}
typedef int (SpawnFn)(const char *, char **, int, OHandle, int, OHandle, OHandle *, int *);
KX int MPI_Comm_spawn(const char *cmd, char **argv, int n, OHandle info, int root, OHandle comm, OHandle *ic, int *errs)
{
    FORWARD(SpawnFn, "MPI_Comm_spawn", comm, cmd, argv, n, info, root, comm, ic, errs)
}
typedef int (SpawnMultipleFn)(int, char **, char ***, const int *, const OHandle *, int, OHandle, OHandle *, int *);
KX int MPI_Comm_spawn_multiple(int c, char **cmds, char ***argvs, const int *ns, const OHandle *infos, int root,
                               OHandle comm, OHandle *ic, int *errs)
{
    FORWARD(SpawnMultipleFn, "MPI_Comm_spawn_multiple", comm, c, cmds, argvs, ns, infos, root, comm, ic, errs)
}
}

/* ---- user reductions: MPI::Op::Init (inline) calls MPI_Op_create(ompi_mpi_cxx_op_intercept,
 * commute, &op) and then ompi_op_set_cxx_callback(op, fn).  Open MPI's libmpi hands the C++
 * function to the intercept as a fifth argument; the C shim's MPI_Op_create passes the C
 * arguments only.  So this library defines MPI_Op_create and MPI_Op_free too (it comes before
 * libmpi.so.40 in the program's lookup scope; other calls pass through to the shim's PMPI_
 * entries): an op created with the intercept is made with the shim's kumi_shim_op_create_ctx,
 * whose context is a record of this op (kept as long as the process: a nonblocking reduction
 * may still run after MPI_Op_free), which ompi_op_set_cxx_callback fills with the C++
 * function.  No pool of trampolines: as many C++ ops as the program makes. */
typedef void (CxxUserFn)(const void *, void *, int, const Obj &);
typedef void (CUserFn)(void *, void *, int *, OHandle *);
extern "C" int PMPI_Op_create(CUserFn *, int, OHandle *);
extern "C" int PMPI_Op_free(OHandle *);
extern "C" int kumi_shim_op_create_ctx(void (*)(void *, void *, int *, OHandle *, void *), void *, int, OHandle *);
extern "C" int kumi_shim_errhandler_create_ctx(int, void (*)(void *, int *, void *), void *, OHandle *);
struct OpRec { CxxUserFn *fn; OHandle op; OpRec *next; };
static OpRec *op_live;   /* the ops not freed yet, to find the record of an op */
static pthread_mutex_t op_lock = PTHREAD_MUTEX_INITIALIZER;

static void op_ctx_tramp(void *in, void *out, int *len, OHandle *datatype, void *ctx)
{
    CxxUserFn *fn = __atomic_load_n(&((OpRec *)ctx)->fn, __ATOMIC_ACQUIRE);
    if (!fn) { std::fprintf(stderr, "Kumi libmpi_cxx.so.40: MPI::Op without a function\n"); std::abort(); }
    Obj dt = { vt_Datatype(), *datatype };
    fn(in, out, *len, dt);
}
extern "C" KX void ompi_mpi_cxx_op_intercept(void *, void *, int *, OHandle *)
{
    /* only reached for an op this library did not make (MPI_Op_create comes here first) */
    std::fprintf(stderr, "Kumi libmpi_cxx.so.40: ompi_mpi_cxx_op_intercept called for an op this library did not "
                 "create\n");
    std::abort();
}
extern "C" KX int MPI_Op_create(CUserFn *fn, int commute, OHandle *op)
{
    if (fn != ompi_mpi_cxx_op_intercept || !op) return PMPI_Op_create(fn, commute, op);
    OpRec *r = new (std::nothrow) OpRec{ 0, 0, 0 };
    if (!r) return 39;   /* Open MPI's MPI_ERR_NO_MEM (ompi.json) */
    int rc = kumi_shim_op_create_ctx(op_ctx_tramp, r, commute, op);
    if (rc) { delete r; return rc; }
    pthread_mutex_lock(&op_lock);
    r->op = *op;
    r->next = op_live;
    op_live = r;
    pthread_mutex_unlock(&op_lock);
    return rc;
}
extern "C" KX int MPI_Op_free(OHandle *op)
{
    OHandle h = op ? *op : 0;
    int rc = PMPI_Op_free(op);
    if (rc == 0 && h) {
        pthread_mutex_lock(&op_lock);
        for (OpRec **p = &op_live; *p; p = &(*p)->next)
            if ((*p)->op == h) { *p = (*p)->next; break; }   /* the record stays (see above) */
        pthread_mutex_unlock(&op_lock);
    }
    return rc;
}
extern "C" KX void ompi_op_set_cxx_callback(OHandle op, CxxUserFn *fn)
{
    pthread_mutex_lock(&op_lock);
    for (OpRec *r = op_live; r; r = r->next)
        if (r->op == op) { __atomic_store_n(&r->fn, fn, __ATOMIC_RELEASE); break; }
    pthread_mutex_unlock(&op_lock);
}

/* ---- generalized requests: MPI::Grequest::Start (inline) passes these intercepts to
 * MPI_Grequest_start with its Intercept_data_t { extra; query; free; cancel } (new'd) as the
 * extra state; MPI::Status is { vptr; MPI_Status }. */
struct GreqData {
    void *extra;
    int (*query)(void *, void *status_obj);
    int (*free_fn)(void *);
    int (*cancel)(void *, bool);
};
struct StatusObj { void *const *vptr; unsigned char st[KUMI_C_STATUS_SIZE]; };
static_assert(sizeof(StatusObj) == KUMI_CXX_STATUS_SIZE, "size of MPI::Status");
extern "C" KX int ompi_mpi_cxx_grequest_query_fn_intercept(void *state, void *status)
{
    GreqData *d = (GreqData *)state;
    StatusObj s;
    s.vptr = vt_Status();
    std::memcpy(s.st, status, sizeof s.st);
    int rc = d->query(d->extra, &s);
    std::memcpy(status, s.st, sizeof s.st);
    return rc;
}
extern "C" KX int ompi_mpi_cxx_grequest_free_fn_intercept(void *state)
{
    GreqData *d = (GreqData *)state;
    int rc = d->free_fn(d->extra);
    ::operator delete(d);
    return rc;
}
extern "C" KX int ompi_mpi_cxx_grequest_cancel_fn_intercept(void *state, int canceled)
{
    GreqData *d = (GreqData *)state;
    return d->cancel(d->extra, canceled != 0);
}

/* ---- attribute keyvals: MPI::Comm/Datatype/Win::Create_keyval (inline) call the static
 * do_create_keyval(c_copy, c_delete, cxx_copy, cxx_delete, extra_state, int &keyval) with the
 * C or the C++ form of each callback (NULL for the other).  The keyval is the C shim's, with
 * trampolines that get this state as their extra_state and call the C form as it is, or the
 * C++ form with an object of the handle (a communicator's of its dynamic class: Intercomm,
 * Cartcomm, Graphcomm or Intracomm, so that virtual calls reach the program's vtables), or do
 * what MPI_NULL_COPY_FN / MPI_NULL_DELETE_FN do.  The state lives as long as the process. */
typedef int (CCopy)(OHandle, int, void *, void *, void *, int *);
typedef int (CDelete)(OHandle, int, void *, void *);
typedef int (CxxCopy)(const Obj &, int, void *, void *, void *, bool &);
typedef int (CxxDelete)(Obj &, int, void *, void *);
struct KeyState { CCopy *c_copy; CDelete *c_delete; CxxCopy *cxx_copy; CxxDelete *cxx_delete; void *extra; };

static void *const *comm_vtable(OHandle comm)
{
    int inter = 0, topo = -1;
    (void)MPI_Comm_test_inter(comm, &inter);
    if (inter) return vt_Intercomm();
    (void)MPI_Topo_test(comm, &topo);
    if (topo == 1) return vt_Cartcomm();    /* Open MPI's MPI_CART 1, MPI_GRAPH 2 (ompi.json) */
    if (topo == 2) return vt_Graphcomm();
    return vt_Intracomm();
}
template <void *const *(*VTF)(OHandle)>
static int key_copy(OHandle h, int keyval, void *state, void *in, void *out, int *flag)
{
    KeyState *k = (KeyState *)state;
    if (k->c_copy) return k->c_copy(h, keyval, k->extra, in, out, flag);
    if (!k->cxx_copy) { *flag = 0; return 0; }
    Obj o = { VTF(h), h };
    bool f = false;
    int rc = k->cxx_copy(o, keyval, k->extra, in, out, f);
    *flag = f;
    return rc;
}
template <void *const *(*VTF)(OHandle)>
static int key_delete(OHandle h, int keyval, void *attr, void *state)
{
    KeyState *k = (KeyState *)state;
    if (k->c_delete) return k->c_delete(h, keyval, attr, k->extra);
    if (!k->cxx_delete) return 0;
    Obj o = { VTF(h), h };
    return k->cxx_delete(o, keyval, attr, k->extra);
}
static void *const *type_vtable(OHandle) { return vt_Datatype(); }
static void *const *win_vtable(OHandle) { return vt_Win(); }
typedef int (CreateKeyval)(CCopy *, CDelete *, int *, void *);
template <void *const *(*VTF)(OHandle)>
static int create_keyval(CreateKeyval *create, CCopy *cc, CDelete *cd, CxxCopy *xc, CxxDelete *xd, void *extra,
                         int *keyval)
{
    KeyState *k = new (std::nothrow) KeyState;
    if (!k) return 39;   /* Open MPI's MPI_ERR_NO_MEM (ompi.json) */
    *k = KeyState{ cc, cd, xc, xd, extra };
    int rc = create(key_copy<VTF>, key_delete<VTF>, keyval, k);
    if (rc) delete k;
    return rc;
}
extern "C" KX int kumi_cxx_comm_keyval(CCopy *, CDelete *, CxxCopy *, CxxDelete *, void *, int *)
    __asm__("_ZN3MPI4Comm16do_create_keyvalEPFiP19ompi_communicator_tiPvS3_S3_PiEPFiS2_iS3_S3_EPFiRKS0_iS3_S3_S3_RbEPFiRS0_iS3_S3_ES3_Ri");
extern "C" int kumi_cxx_comm_keyval(CCopy *cc, CDelete *cd, CxxCopy *xc, CxxDelete *xd, void *extra, int *keyval)
{
    return create_keyval<comm_vtable>(MPI_Comm_create_keyval, cc, cd, xc, xd, extra, keyval);
}
extern "C" KX int kumi_cxx_type_keyval(CCopy *, CDelete *, CxxCopy *, CxxDelete *, void *, int *)
    __asm__("_ZN3MPI8Datatype16do_create_keyvalEPFiP15ompi_datatype_tiPvS3_S3_PiEPFiS2_iS3_S3_EPFiRKS0_iS3_PKvS3_RbEPFiRS0_iS3_S3_ES3_Ri");
extern "C" int kumi_cxx_type_keyval(CCopy *cc, CDelete *cd, CxxCopy *xc, CxxDelete *xd, void *extra, int *keyval)
{
    return create_keyval<type_vtable>(MPI_Type_create_keyval, cc, cd, xc, xd, extra, keyval);
}
extern "C" KX int kumi_cxx_win_keyval(CCopy *, CDelete *, CxxCopy *, CxxDelete *, void *, int *)
    __asm__("_ZN3MPI3Win16do_create_keyvalEPFiP10ompi_win_tiPvS3_S3_PiEPFiS2_iS3_S3_EPFiRKS0_iS3_S3_S3_RbEPFiRS0_iS3_S3_ES3_Ri");
extern "C" int kumi_cxx_win_keyval(CCopy *cc, CDelete *cd, CxxCopy *xc, CxxDelete *xd, void *extra, int *keyval)
{
    return create_keyval<win_vtable>(MPI_Win_create_keyval, cc, cd, xc, xd, extra, keyval);
}

/* ---- C++ error handlers: Comm::Create_errhandler and Win::Create_errhandler (static, returning
 * an MPI::Errhandler { vptr; handle } through the hidden result pointer) create a C shim error
 * handler with the C++ function as its context (kumi_shim_errhandler_create_ctx: no pool of
 * trampolines); it hands the C++ function an object of the handle (a communicator of its
 * dynamic class). */
typedef void (CxxErrFn)(Obj &, int *, ...);
static void eh_comm(void *h, int *code, void *ctx)
{
    Obj o = { comm_vtable(*(OHandle *)h), *(OHandle *)h };
    ((CxxErrFn *)ctx)(o, code);
}
static void eh_win(void *h, int *code, void *ctx)
{
    Obj o = { vt_Win(), *(OHandle *)h };
    ((CxxErrFn *)ctx)(o, code);
}
static Obj *create_errhandler(Obj *ret, int kind, CxxErrFn *fn)
{
    ret->vptr = vt_Errhandler();
    ret->h = ompi_mpi_errhandler_null;
    OHandle eh = 0;
    int rc = kind == 0 ? kumi_shim_errhandler_create_ctx(1, eh_comm, (void *)fn, &eh)    /* KUMI_ABI_ERRH_COMM */
                       : kumi_shim_errhandler_create_ctx(2, eh_win, (void *)fn, &eh);    /* KUMI_ABI_ERRH_WIN */
    if (rc == 0) ret->h = eh;
    return ret;
}
extern "C" KX Obj *kumi_cxx_comm_errh(Obj *ret, CxxErrFn *fn) __asm__("_ZN3MPI4Comm17Create_errhandlerEPFvRS0_PizE");
extern "C" Obj *kumi_cxx_comm_errh(Obj *ret, CxxErrFn *fn) { return create_errhandler(ret, 0, fn); }
extern "C" KX Obj *kumi_cxx_win_errh(Obj *ret, CxxErrFn *fn) __asm__("_ZN3MPI3Win17Create_errhandlerEPFvRS0_PizE");
extern "C" Obj *kumi_cxx_win_errh(Obj *ret, CxxErrFn *fn) { return create_errhandler(ret, 1, fn); }

/* ---- MPI::File: Close, Create_errhandler (a C++ handler gets an MPI::File of the handle),
 * Register_datarep (C++ conversion functions get an MPI::Datatype, the C ones Open MPI's C
 * handle; the record of the functions is the C extra_state and lives as long as the process) */
extern "C" {
int MPI_File_close(OHandle *);
int MPI_Register_datarep(const char *, void *, void *, void *, void *);
}
extern "C" KX void kumi_cxx_file_close(Obj *self) __asm__("_ZN3MPI4File5CloseEv");
extern "C" void kumi_cxx_file_close(Obj *self) { (void)MPI_File_close(&self->h); }
static void eh_file(void *h, int *code, void *ctx)
{
    Obj o = { vt_File(), *(OHandle *)h };
    ((CxxErrFn *)ctx)(o, code);
}
extern "C" KX Obj *kumi_cxx_file_errh(Obj *ret, CxxErrFn *fn) __asm__("_ZN3MPI4File17Create_errhandlerEPFvRS0_PizE");
extern "C" Obj *kumi_cxx_file_errh(Obj *ret, CxxErrFn *fn)
{
    ret->vptr = vt_Errhandler();
    ret->h = ompi_mpi_errhandler_null;
    OHandle eh = 0;
    if (kumi_shim_errhandler_create_ctx(3, eh_file, (void *)fn, &eh) == 0) ret->h = eh;   /* KUMI_ABI_ERRH_FILE */
    return ret;
}
typedef int (CConvFn)(void *, OHandle, int, void *, long long, void *);
typedef void (CxxConvFn)(void *, Obj &, int, void *, long long, void *);
typedef void (CxxExtentFn)(const Obj &, long &, void *);
struct CxxRep { void *rd, *wr; bool rd_cxx, wr_cxx; CxxExtentFn *ext; void *extra; };
static int rep_conv(void *fn, bool cxx, void *u, OHandle dt, int count, void *fb, long long pos, void *extra)
{
    if (!cxx) return ((CConvFn *)fn)(u, dt, count, fb, pos, extra);
    Obj o = { vt_Datatype(), dt };
    ((CxxConvFn *)fn)(u, o, count, fb, pos, extra);
    return 0;
}
static int rep_read(void *u, OHandle dt, int count, void *fb, long long pos, void *x)
{
    CxxRep *r = (CxxRep *)x;
    return rep_conv(r->rd, r->rd_cxx, u, dt, count, fb, pos, r->extra);
}
static int rep_write(void *u, OHandle dt, int count, void *fb, long long pos, void *x)
{
    CxxRep *r = (CxxRep *)x;
    return rep_conv(r->wr, r->wr_cxx, u, dt, count, fb, pos, r->extra);
}
static int rep_extent(OHandle dt, long *extent, void *x)
{
    CxxRep *r = (CxxRep *)x;
    Obj o = { vt_Datatype(), dt };
    long e = 0;
    r->ext(o, e, r->extra);
    *extent = e;
    return 0;
}
static void register_rep(const char *name, void *rd, bool rd_cxx, void *wr, bool wr_cxx, CxxExtentFn *ext, void *extra)
{
    CxxRep *r = new (std::nothrow) CxxRep{rd, wr, rd_cxx, wr_cxx, ext, extra};
    if (!r) return;
    if (MPI_Register_datarep(name, rd ? (void *)rep_read : 0, wr ? (void *)rep_write : 0, ext ? (void *)rep_extent : 0, r) != 0)
        delete r;
}
#define REGREP(i, sym, rdcxx, wrcxx) \
    extern "C" KX void kumi_cxx_regrep_##i(const char *, void *, void *, CxxExtentFn *, void *) __asm__(#sym); \
    extern "C" void kumi_cxx_regrep_##i(const char *n, void *rd, void *wr, CxxExtentFn *ext, void *extra) \
    { register_rep(n, rd, rdcxx, wr, wrcxx, ext, extra); }
REGREP(6, _ZN3MPI16Register_datarepEPKcPFiPvP15ompi_datatype_tiS2_xS2_EPFvS2_RNS_8DatatypeEiS2_xS2_EPFvRKS7_RlS2_ES2_, false, true)
REGREP(7, _ZN3MPI16Register_datarepEPKcPFiPvP15ompi_datatype_tiS2_xS2_ES6_PFvRKNS_8DatatypeERlS2_ES2_, false, false)
REGREP(8, _ZN3MPI16Register_datarepEPKcPFvPvRNS_8DatatypeEiS2_xS2_EPFiS2_P15ompi_datatype_tiS2_xS2_EPFvRKS3_RlS2_ES2_, true, false)
REGREP(9, _ZN3MPI16Register_datarepEPKcPFvPvRNS_8DatatypeEiS2_xS2_ES6_PFvRKS3_RlS2_ES2_, true, true)
