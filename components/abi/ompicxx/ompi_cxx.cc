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
 *    (called by MPI::Init after MPI_Init), the reduction intercept ompi_mpi_cxx_op_intercept
 *    with ompi_op_set_cxx_callback (which Open MPI's libmpi.so.40 exports: defined here), and the
 *    C handle of MPI::ERRORS_THROW_EXCEPTIONS, ompi_mpi_errors_throw_exceptions, an object of the
 *    C shim's predefined-handle form {magic, native} whose native error handler (created at
 *    InitializeIntercepts) throws MPI::Exception.  The other out-of-line entries (user error
 *    handlers and keyvals with C++ callbacks, Register_datarep, File::Close) stop the program with a
 *    message; MPI_Comm_accept, _connect, _disconnect, _spawn and _spawn_multiple, which every such
 *    program imports (the headers' inline virtual functions call them), are defined here and fail
 *    with MPI_ERR_UNSUPPORTED_OPERATION.
 *
 * MPI::Exception is { int error_code; char *error_string; int error_class; } with no virtual
 * function; the program catches it by type name (N3MPI9ExceptionE) and frees it with its own
 * inline destructor (delete[] error_string). */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <new>

#define KX __attribute__((visibility("default")))

/* Open MPI's C API as the C shim exports it: handles are pointers */
typedef void *OHandle;
extern "C" {
int MPI_Type_free(OHandle *);
int MPI_Win_free(OHandle *);
int MPI_Comm_call_errhandler(OHandle, int);
int MPI_Error_class(int, int *);
int MPI_Error_string(int, char *, int *);
int MPI_Comm_create_errhandler(void (*)(OHandle *, int *, ...), OHandle *);
int MPI_Op_commutative(OHandle, int *);
}
enum { OMPI_MAX_ERROR_STRING = 256 };   /* MPI::MAX_ERROR_STRING (MPI_MAX_ERROR_STRING) */

/* the C shim's predefined handles (data/abi/ompi.json constants) */
#define OMPI_C_OBJECTS(X) \
    X(comm_world) X(comm_self) X(comm_null) X(group_null) X(group_empty) X(win_null) X(info_null) \
    X(file_null) X(request_null) X(op_null) X(errhandler_null) X(errors_are_fatal) X(errors_return) \
    X(datatype_null) X(char) X(short) X(int) X(long) X(signed_char) X(unsigned_char) X(unsigned_short) \
    X(unsigned) X(unsigned_long) X(float) X(double) X(long_double) X(byte) X(packed) X(wchar) \
    X(float_int) X(double_int) X(long_int) X(2int) X(short_int) X(longdbl_int) X(integer) X(real) \
    X(dblprec) X(cplex) X(logical) X(character) X(2real) X(2dblprec) X(2integer) X(long_long_int) \
    X(unsigned_long_long) X(cxx_bool) X(cxx_cplex) X(cxx_dblcplex) X(cxx_ldblcplex) X(dblcplex) \
    X(op_max) X(op_min) X(op_sum) X(op_prod) X(op_maxloc) X(op_minloc) X(op_band) X(op_bor) \
    X(op_bxor) X(op_land) X(op_lor) X(op_lxor) X(op_replace)
#define DECL_C(n) extern "C" char ompi_mpi_##n[];
OMPI_C_OBJECTS(DECL_C)
extern "C" char ompi_request_null[];

/* ---- the C handle of MPI::ERRORS_THROW_EXCEPTIONS, in the C shim's predefined-object form
 * (components/abi/mkshim.py: struct shim_obj { uint64_t magic; void *native; }, SHIM_MAGIC);
 * size 1024 as Open MPI's (data/abi/ompi.json objects).  Until MPI::Init it stands for
 * MPI_ERRORS_RETURN (Kumi's predefined handle 0x143). */
struct shim_obj1024 { uint64_t magic; void *native; char pad[1008]; };
extern "C" KX shim_obj1024 ompi_mpi_errors_throw_exceptions;
shim_obj1024 ompi_mpi_errors_throw_exceptions = { 0x4b756d694f6d7069ULL, (void *)0x143, {0} };

/* ---- vtables: the program's (weak references), else these fallbacks.  Sizes in bytes from
 * data/abi/ompi.json cxx.objects ("vtable for MPI::X"). */
extern "C" void kumi_cxx_no_vtable(void)
{
    std::fprintf(stderr, "Kumi libmpi_cxx.so.40: a virtual function of a predefined MPI:: object was "
                 "called, but the program has no vtable of its class (not supported)\n");
    std::abort();
}
#define VTABLES(X) \
    X(Comm_Null, _ZTVN3MPI9Comm_NullE, 0x20) X(Comm, _ZTVN3MPI4CommE, 0x1d0) \
    X(Intracomm, _ZTVN3MPI9IntracommE, 0x238) X(Datatype, _ZTVN3MPI8DatatypeE, 0x100) \
    X(Op, _ZTVN3MPI2OpE, 0x40) X(Errhandler, _ZTVN3MPI10ErrhandlerE, 0x28) \
    X(Group, _ZTVN3MPI5GroupE, 0x58) X(Win, _ZTVN3MPI3WinE, 0xc0) X(Info, _ZTVN3MPI4InfoE, 0x60) \
    X(File, _ZTVN3MPI4FileE, 0x20) X(Request, _ZTVN3MPI7RequestE, 0x60)
#define VT(cls, sym, bytes) \
    extern "C" KX __attribute__((weak)) void *kumi_vt_##cls[(bytes) / 8] __asm__(#sym); \
    extern "C" { __attribute__((weak)) void *kumi_vt_##cls[(bytes) / 8] = { 0 }; } \
    extern "C" __attribute__((visibility("hidden"), alias(#sym))) void *kumi_vt_own_##cls[(bytes) / 8]; \
    static void *const *vt_##cls() { return (void *const *)kumi_vt_##cls + 2; }
VTABLES(VT)

/* this library's vtable, when it is the one in use (the program has none of that class), gets
 * the stopping function in every slot */
static void fill_fallback(void **vt, void **own, size_t n)
{
    if (vt != own) return;
    for (size_t i = 2; i < n; i++) vt[i] = (void *)kumi_cxx_no_vtable;
}

/* ---- the objects: { vptr, handle }, as the program sees them */
struct Obj { void *const *vptr; void *h; };

#define CXX_OBJECTS(X) \
    X(Intracomm, COMM_WORLD, _ZN3MPI10COMM_WORLDE, comm_world) X(Intracomm, COMM_SELF, _ZN3MPI9COMM_SELFE, comm_self) \
    X(Comm_Null, COMM_NULL, _ZN3MPI9COMM_NULLE, comm_null) X(Group, GROUP_NULL, _ZN3MPI10GROUP_NULLE, group_null) \
    X(Group, GROUP_EMPTY, _ZN3MPI11GROUP_EMPTYE, group_empty) X(Win, WIN_NULL, _ZN3MPI8WIN_NULLE, win_null) \
    X(Info, INFO_NULL, _ZN3MPI9INFO_NULLE, info_null) X(File, FILE_NULL, _ZN3MPI9FILE_NULLE, file_null) \
    X(Op, OP_NULL, _ZN3MPI7OP_NULLE, op_null) X(Errhandler, ERRHANDLER_NULL, _ZN3MPI15ERRHANDLER_NULLE, errhandler_null) \
    X(Errhandler, ERRORS_ARE_FATAL, _ZN3MPI16ERRORS_ARE_FATALE, errors_are_fatal) \
    X(Errhandler, ERRORS_RETURN, _ZN3MPI13ERRORS_RETURNE, errors_return) \
    X(Datatype, DATATYPE_NULL, _ZN3MPI13DATATYPE_NULLE, datatype_null) \
    X(Datatype, CHAR, _ZN3MPI4CHARE, char) X(Datatype, SHORT, _ZN3MPI5SHORTE, short) X(Datatype, INT, _ZN3MPI3INTE, int) \
    X(Datatype, LONG, _ZN3MPI4LONGE, long) X(Datatype, SIGNED_CHAR, _ZN3MPI11SIGNED_CHARE, signed_char) \
    X(Datatype, UNSIGNED_CHAR, _ZN3MPI13UNSIGNED_CHARE, unsigned_char) \
    X(Datatype, UNSIGNED_SHORT, _ZN3MPI14UNSIGNED_SHORTE, unsigned_short) X(Datatype, UNSIGNED, _ZN3MPI8UNSIGNEDE, unsigned) \
    X(Datatype, UNSIGNED_LONG, _ZN3MPI13UNSIGNED_LONGE, unsigned_long) X(Datatype, FLOAT, _ZN3MPI5FLOATE, float) \
    X(Datatype, DOUBLE, _ZN3MPI6DOUBLEE, double) X(Datatype, LONG_DOUBLE, _ZN3MPI11LONG_DOUBLEE, long_double) \
    X(Datatype, BYTE, _ZN3MPI4BYTEE, byte) X(Datatype, PACKED, _ZN3MPI6PACKEDE, packed) X(Datatype, WCHAR, _ZN3MPI5WCHARE, wchar) \
    X(Datatype, FLOAT_INT, _ZN3MPI9FLOAT_INTE, float_int) X(Datatype, DOUBLE_INT, _ZN3MPI10DOUBLE_INTE, double_int) \
    X(Datatype, LONG_INT, _ZN3MPI8LONG_INTE, long_int) X(Datatype, TWOINT, _ZN3MPI6TWOINTE, 2int) \
    X(Datatype, SHORT_INT, _ZN3MPI9SHORT_INTE, short_int) X(Datatype, LONG_DOUBLE_INT, _ZN3MPI15LONG_DOUBLE_INTE, longdbl_int) \
    X(Datatype, INTEGER, _ZN3MPI7INTEGERE, integer) X(Datatype, REAL, _ZN3MPI4REALE, real) \
    X(Datatype, DOUBLE_PRECISION, _ZN3MPI16DOUBLE_PRECISIONE, dblprec) X(Datatype, F_COMPLEX, _ZN3MPI9F_COMPLEXE, cplex) \
    X(Datatype, LOGICAL, _ZN3MPI7LOGICALE, logical) X(Datatype, CHARACTER, _ZN3MPI9CHARACTERE, character) \
    X(Datatype, TWOREAL, _ZN3MPI7TWOREALE, 2real) X(Datatype, TWODOUBLE_PRECISION, _ZN3MPI19TWODOUBLE_PRECISIONE, 2dblprec) \
    X(Datatype, TWOINTEGER, _ZN3MPI10TWOINTEGERE, 2integer) \
    X(Datatype, LONG_LONG, _ZN3MPI9LONG_LONGE, long_long_int) X(Datatype, LONG_LONG_INT, _ZN3MPI13LONG_LONG_INTE, long_long_int) \
    X(Datatype, UNSIGNED_LONG_LONG, _ZN3MPI18UNSIGNED_LONG_LONGE, unsigned_long_long) \
    X(Datatype, BOOL, _ZN3MPI4BOOLE, cxx_bool) X(Datatype, COMPLEX, _ZN3MPI7COMPLEXE, cxx_cplex) \
    X(Datatype, DOUBLE_COMPLEX, _ZN3MPI14DOUBLE_COMPLEXE, cxx_dblcplex) \
    X(Datatype, F_DOUBLE_COMPLEX, _ZN3MPI16F_DOUBLE_COMPLEXE, dblcplex) \
    X(Datatype, LONG_DOUBLE_COMPLEX, _ZN3MPI19LONG_DOUBLE_COMPLEXE, cxx_ldblcplex) \
    X(Datatype, INTEGER1, _ZN3MPI8INTEGER1E, datatype_null) X(Datatype, INTEGER2, _ZN3MPI8INTEGER2E, datatype_null) \
    X(Datatype, INTEGER4, _ZN3MPI8INTEGER4E, datatype_null) X(Datatype, REAL2, _ZN3MPI5REAL2E, datatype_null) \
    X(Datatype, REAL4, _ZN3MPI5REAL4E, datatype_null) X(Datatype, REAL8, _ZN3MPI5REAL8E, datatype_null) \
    X(Op, MAX, _ZN3MPI3MAXE, op_max) X(Op, MIN, _ZN3MPI3MINE, op_min) X(Op, SUM, _ZN3MPI3SUME, op_sum) \
    X(Op, PROD, _ZN3MPI4PRODE, op_prod) X(Op, MAXLOC, _ZN3MPI6MAXLOCE, op_maxloc) X(Op, MINLOC, _ZN3MPI6MINLOCE, op_minloc) \
    X(Op, BAND, _ZN3MPI4BANDE, op_band) X(Op, BOR, _ZN3MPI3BORE, op_bor) X(Op, BXOR, _ZN3MPI4BXORE, op_bxor) \
    X(Op, LAND, _ZN3MPI4LANDE, op_land) X(Op, LOR, _ZN3MPI3LORE, op_lor) X(Op, LXOR, _ZN3MPI4LXORE, op_lxor) \
    X(Op, REPLACE, _ZN3MPI7REPLACEE, op_replace)
#define DEF_OBJ(cls, name, sym, c) extern "C" KX Obj kumi_cxx_##name __asm__(#sym); Obj kumi_cxx_##name;
CXX_OBJECTS(DEF_OBJ)
extern "C" KX Obj kumi_cxx_ERRORS_THROW_EXCEPTIONS __asm__("_ZN3MPI23ERRORS_THROW_EXCEPTIONSE");
Obj kumi_cxx_ERRORS_THROW_EXCEPTIONS;
extern "C" KX Obj kumi_cxx_REQUEST_NULL __asm__("_ZN3MPI12REQUEST_NULLE");
Obj kumi_cxx_REQUEST_NULL;
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
#define SET_OBJ(cls, name, sym, c) kumi_cxx_##name.vptr = vt_##cls(); kumi_cxx_##name.h = ompi_mpi_##c;
    CXX_OBJECTS(SET_OBJ)
    kumi_cxx_ERRORS_THROW_EXCEPTIONS.vptr = vt_Errhandler();
    kumi_cxx_ERRORS_THROW_EXCEPTIONS.h = &ompi_mpi_errors_throw_exceptions;
    kumi_cxx_REQUEST_NULL.vptr = vt_Request();
    kumi_cxx_REQUEST_NULL.h = ompi_request_null;
#define FILL(cls, sym, bytes) fill_fallback(kumi_vt_##cls, kumi_vt_own_##cls, (bytes) / 8);
    VTABLES(FILL)
}

/* ---- MPI::Exception (layout of Open MPI's: no vptr) */
namespace MPI {
class Exception {
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
        ompi_mpi_errors_throw_exceptions.native = eh;
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
 * Spawn and Spawn_multiple make every program import them, and Kumi has no dynamic processes
 * yet (the C shim does not export them): MPI_ERR_UNSUPPORTED_OPERATION (Open MPI's 52) through
 * the communicator's error handler. */
static int unsupported(OHandle comm)
{
    const int code = 52;
    (void)MPI_Comm_call_errhandler(comm, code);
    return code;
}
extern "C" {
KX int MPI_Comm_accept(const char *, OHandle, int, OHandle comm, OHandle *) { return unsupported(comm); }
KX int MPI_Comm_connect(const char *, OHandle, int, OHandle comm, OHandle *) { return unsupported(comm); }
KX int MPI_Comm_disconnect(OHandle *comm) { return unsupported(comm ? *comm : ompi_mpi_comm_world); }
KX int MPI_Comm_spawn(const char *, char **, int, OHandle, int, OHandle comm, OHandle *, int *)
{
    return unsupported(comm);
}
KX int MPI_Comm_spawn_multiple(int, char **, char ***, const int *, const OHandle *, int, OHandle comm, OHandle *, int *)
{
    return unsupported(comm);
}
}

/* ---- user reductions: MPI::Op::Init (inline) creates a C op whose function is
 * ompi_mpi_cxx_op_intercept and then calls ompi_op_set_cxx_callback(op, fn).  Open MPI's
 * libmpi hands the C++ function to the intercept as a fifth argument; the C shim's
 * reduction trampoline passes the C arguments only, so the intercept finds the C++ function
 * here: the one registered, or, with several different ones, none (the program stops with a
 * message: Kumi's kumi/abi.h has no way yet to give an existing op a new context). */
typedef void (CxxUserFn)(const void *, void *, int, const Obj &);
static CxxUserFn *op_fn;
static bool op_ambiguous;
extern "C" KX void ompi_op_set_cxx_callback(OHandle op, CxxUserFn *fn)
{
    (void)op;
    if (op_fn && op_fn != fn) op_ambiguous = true;
    op_fn = fn;
}
extern "C" KX void ompi_mpi_cxx_op_intercept(void *invec, void *outvec, int *len, OHandle *datatype)
{
    if (!op_fn || op_ambiguous) {
        std::fprintf(stderr, "Kumi libmpi_cxx.so.40: %s\n", op_fn ? "reduction with one of several MPI::Op "
                     "user functions (only one per process is supported)" : "MPI::Op without a function");
        std::abort();
    }
    Obj dt = { vt_Datatype(), *datatype };
    op_fn(invec, outvec, *len, dt);
}

/* ---- out-of-line entries not provided: they stop the program with a message */
#define UNSUPPORTED(X) \
    X(10, _ZN3MPI4File5CloseEv, "MPI::File::Close (Kumi has no file I/O)") \
    X(0, _ZN3MPI4Comm17Create_errhandlerEPFvRS0_PizE, "MPI::Comm::Create_errhandler") \
    X(1, _ZN3MPI3Win17Create_errhandlerEPFvRS0_PizE, "MPI::Win::Create_errhandler") \
    X(2, _ZN3MPI4File17Create_errhandlerEPFvRS0_PizE, "MPI::File::Create_errhandler") \
    X(3, _ZN3MPI4Comm16do_create_keyvalEPFiP19ompi_communicator_tiPvS3_S3_PiEPFiS2_iS3_S3_EPFiRKS0_iS3_S3_S3_RbEPFiRS0_iS3_S3_ES3_Ri, "MPI::Comm::Create_keyval") \
    X(4, _ZN3MPI3Win16do_create_keyvalEPFiP10ompi_win_tiPvS3_S3_PiEPFiS2_iS3_S3_EPFiRKS0_iS3_S3_S3_RbEPFiRS0_iS3_S3_ES3_Ri, "MPI::Win::Create_keyval") \
    X(5, _ZN3MPI8Datatype16do_create_keyvalEPFiP15ompi_datatype_tiPvS3_S3_PiEPFiS2_iS3_S3_EPFiRKS0_iS3_PKvS3_RbEPFiRS0_iS3_S3_ES3_Ri, "MPI::Datatype::Create_keyval") \
    X(6, _ZN3MPI16Register_datarepEPKcPFiPvP15ompi_datatype_tiS2_xS2_EPFvS2_RNS_8DatatypeEiS2_xS2_EPFvRKS7_RlS2_ES2_, "MPI::Register_datarep") \
    X(7, _ZN3MPI16Register_datarepEPKcPFiPvP15ompi_datatype_tiS2_xS2_ES6_PFvRKNS_8DatatypeERlS2_ES2_, "MPI::Register_datarep") \
    X(8, _ZN3MPI16Register_datarepEPKcPFvPvRNS_8DatatypeEiS2_xS2_EPFiS2_P15ompi_datatype_tiS2_xS2_EPFvRKS3_RlS2_ES2_, "MPI::Register_datarep") \
    X(9, _ZN3MPI16Register_datarepEPKcPFvPvRNS_8DatatypeEiS2_xS2_ES6_PFvRKS3_RlS2_ES2_, "MPI::Register_datarep")
#define UNSUP(i, sym, what) \
    extern "C" KX void kumi_cxx_unsup_##i(void) __asm__(#sym); \
    extern "C" void kumi_cxx_unsup_##i(void) \
    { std::fprintf(stderr, "Kumi libmpi_cxx.so.40: %s is not supported\n", what); std::abort(); }
UNSUPPORTED(UNSUP)
