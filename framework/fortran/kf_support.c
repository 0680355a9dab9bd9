/* Hand-written part of the Fortran glue (libmpifort): the sentinel COMMON
 * blocks, string and error helpers, the predefined callback procedures, and
 * the procedures that take a Fortran callback (MPI_Op_create,
 * MPI_Comm_create_errhandler), which need C trampolines. */
#include "kf_support.h"
#include <kumi/kumi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- sentinels */
/* Defined here with default visibility and reached through the GOT, so that a
 * program's COMMON block (which may be allocated in the executable) and the
 * addresses compared in kf_support.h are the same object. */
/* Aligned as gfortran aligns the COMMON blocks the mpi_f08 module (in this
 * library) declares, so that the linker merges them without a warning. */
#define KF_COMMON_ALIGN __attribute__((aligned(16)))
KUMI_EXPORT MPI_Fint kumi_fc_bottom_ KF_COMMON_ALIGN, kumi_fc_in_place_ KF_COMMON_ALIGN,
    kumi_fc_buffer_automatic_ KF_COMMON_ALIGN;
/* kumi_fc_status_ignore_ and kumi_fc_statuses_ignore_ are libmpi's (mpi.h's
 * MPI_F_STATUS_IGNORE / MPI_F_STATUSES_IGNORE point at them: core/pcontrol.c). */
KUMI_EXPORT MPI_Fint kumi_fc_errcodes_ignore_[1] KF_COMMON_ALIGN, kumi_fc_unweighted_[1] KF_COMMON_ALIGN,
    kumi_fc_weights_empty_[1] KF_COMMON_ALIGN;
KUMI_EXPORT char kumi_fc_argv_null_[1] KF_COMMON_ALIGN, kumi_fc_argvs_null_[1] KF_COMMON_ALIGN;

/* ---------------------------------------------------------------- helpers */
char *kf_str_in(const char *f, size_t len)
{
    while (len > 0 && f[len - 1] == ' ') len--;
    char *c = malloc(len + 1);
    if (!c) return NULL;
    memcpy(c, f, len);
    c[len] = 0;
    return c;
}

/* Output strings: at least as long as any MPI_MAX_* string, so that the C call
 * never writes past it; the Fortran variable gets what fits. */
char *kf_str_buf(size_t len)
{
    size_t n = len > MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING;
    return calloc(n + 1, 1);
}

void kf_str_out(const char *c, char *f, size_t len)
{
    size_t n = strlen(c);
    if (n > len) n = len;
    memcpy(f, c, n);
    memset(f + n, ' ', len - n);
}

int kf_nomem(const char *fn)
{
    (void)fn;
    PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    return MPI_ERR_NO_MEM;
}

int kf_narrow(const char *fn, const char *arg, MPI_Aint v, MPI_Fint *out)
{
    if (v == (MPI_Aint)(MPI_Fint)v) {
        *out = (MPI_Fint)v;
        return MPI_SUCCESS;
    }
    int rc = kumi_error(MPI_ERR_ARG, "%s: %s (%lld) does not fit in a default INTEGER (use the call that "
                        "replaced it, with INTEGER(KIND=MPI_ADDRESS_KIND))", fn, arg, (long long)v);
    PMPI_Comm_call_errhandler(MPI_COMM_WORLD, rc);
    return rc;
}

/* The removed MPI_ADDRESS (MPI-1): a default INTEGER address.  A 64-bit
 * address keeps its low 32 bits, so differences of addresses less than 2 GiB
 * apart (the displacements of MPI_TYPE_STRUCT) come out right, as they did
 * with MPI-1 libraries on 64-bit systems; absolute addresses (for
 * MPI_BOTTOM) need MPI_GET_ADDRESS. */
KUMI_EXPORT void pmpi_address_(void *location, MPI_Fint *address, MPI_Fint *ierror)
{
    MPI_Aint a = 0;
    int rc = PMPI_Get_address(KF_BUF(location), &a);
    *address = (MPI_Fint)(uint32_t)(uintptr_t)a;
    *ierror = rc;
}
KUMI_EXPORT void mpi_address_(void *location, MPI_Fint *address, MPI_Fint *ierror)
    __attribute__((weak, alias("pmpi_address_")));

/* Intercommunicator calls may be missing from a libmpi under construction. */
#pragma weak PMPI_Comm_test_inter
#pragma weak PMPI_Comm_remote_size
int kf_comm_peers(MPI_Comm comm)
{
    int inter = 0, n = 0;
    if (PMPI_Comm_test_inter && PMPI_Comm_remote_size &&
        PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return 0;
    if ((inter ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != MPI_SUCCESS) return 0;
    return n;
}

/* ------------------------------------------------- predefined callbacks */
/* MPI_*_NULL_COPY_FN, MPI_*_DUP_FN, MPI_*_NULL_DELETE_FN as Fortran procedures
 * (INTEGER(KIND=MPI_ADDRESS_KIND) attribute values; the deprecated
 * MPI_NULL_COPY_FN / MPI_DUP_FN / MPI_NULL_DELETE_FN use INTEGER ones). */
#define KF_COPY_FNS(lname, AT)                                                                  \
    KUMI_EXPORT void mpi_##lname##null_copy_fn_(MPI_Fint *o, MPI_Fint *k, AT *es, AT *in, AT *out, \
                                                MPI_Fint *flag, MPI_Fint *ierr)                   \
    { (void)o; (void)k; (void)es; (void)in; (void)out; *flag = 0; *ierr = MPI_SUCCESS; }        \
    KUMI_EXPORT void mpi_##lname##dup_fn_(MPI_Fint *o, MPI_Fint *k, AT *es, AT *in, AT *out,      \
                                          MPI_Fint *flag, MPI_Fint *ierr)                         \
    { (void)o; (void)k; (void)es; *out = *in; *flag = 1; *ierr = MPI_SUCCESS; }                  \
    KUMI_EXPORT void mpi_##lname##null_delete_fn_(MPI_Fint *o, MPI_Fint *k, AT *v, AT *es, MPI_Fint *ierr) \
    { (void)o; (void)k; (void)v; (void)es; *ierr = MPI_SUCCESS; }
KF_COPY_FNS(, MPI_Fint)
KF_COPY_FNS(comm_, MPI_Aint)
KF_COPY_FNS(type_, MPI_Aint)
KF_COPY_FNS(win_, MPI_Aint)

KUMI_EXPORT void mpi_conversion_fn_null_(void *ub, MPI_Fint *dt, MPI_Fint *count, void *fb,
                                         MPI_Offset *pos, MPI_Aint *es, MPI_Fint *ierr)
{
    (void)ub; (void)dt; (void)count; (void)fb; (void)pos; (void)es;
    *ierr = MPI_SUCCESS;
}

/* ---------------------------------------------- data representations */
/* MPI_REGISTER_DATAREP: the C library calls C trampolines whose extra_state
 * is this record of the Fortran procedures (never freed: a representation
 * stays registered until MPI_Finalize); MPI_CONVERSION_FN_NULL stays NULL. */
typedef void kf_conv_fn(void *ub, MPI_Fint *dt, MPI_Fint *count, void *fb, MPI_Offset *pos, MPI_Aint *es,
                        MPI_Fint *ierr);
typedef void kf_ext_fn(MPI_Fint *dt, MPI_Aint *extent, MPI_Aint *es, MPI_Fint *ierr);
struct kf_datarep { kf_conv_fn *rd, *wr; kf_ext_fn *ext; MPI_Aint extra; };

static int kf_conv(kf_conv_fn *fn, void *ub, MPI_Datatype dt, int count, void *fb, MPI_Offset pos, struct kf_datarep *d)
{
    MPI_Fint fdt = PMPI_Type_c2f(dt), fc = count, ierr = MPI_SUCCESS;
    MPI_Offset p = pos;
    MPI_Aint es = d->extra;
    fn(ub, &fdt, &fc, fb, &p, &es, &ierr);
    return ierr;
}
static int kf_dr_read(void *ub, MPI_Datatype dt, int count, void *fb, MPI_Offset pos, void *extra)
{
    return kf_conv(((struct kf_datarep *)extra)->rd, ub, dt, count, fb, pos, extra);
}
static int kf_dr_write(void *ub, MPI_Datatype dt, int count, void *fb, MPI_Offset pos, void *extra)
{
    return kf_conv(((struct kf_datarep *)extra)->wr, ub, dt, count, fb, pos, extra);
}
static int kf_dr_extent(MPI_Datatype dt, MPI_Aint *extent, void *extra)
{
    struct kf_datarep *d = extra;
    MPI_Fint fdt = PMPI_Type_c2f(dt), ierr = MPI_SUCCESS;
    MPI_Aint es = d->extra;
    d->ext(&fdt, extent, &es, &ierr);
    return ierr;
}

KUMI_EXPORT void pmpi_register_datarep_(char *datarep, void (*rd)(void), void (*wr)(void), void (*ext)(void),
                                        MPI_Aint *extra_state, MPI_Fint *ierror, size_t datarep_len)
{
    char *name = kf_str_in(datarep, datarep_len);
    struct kf_datarep *d = malloc(sizeof *d);
    if (!name || !d) { free(name); free(d); *ierror = kf_nomem("MPI_Register_datarep"); return; }
    void (*null)(void) = (void (*)(void))mpi_conversion_fn_null_;
    d->rd = rd == null ? NULL : (kf_conv_fn *)(void *)rd;
    d->wr = wr == null ? NULL : (kf_conv_fn *)(void *)wr;
    d->ext = (kf_ext_fn *)(void *)ext;
    d->extra = *extra_state;
    int rc = PMPI_Register_datarep(name, d->rd ? kf_dr_read : MPI_CONVERSION_FN_NULL,
                                   d->wr ? kf_dr_write : MPI_CONVERSION_FN_NULL, ext ? kf_dr_extent : NULL, d);
    if (rc != MPI_SUCCESS) free(d);
    free(name);
    *ierror = rc;
}
KUMI_EXPORT void mpi_register_datarep_(char *datarep, void (*rd)(void), void (*wr)(void), void (*ext)(void),
                                       MPI_Aint *extra_state, MPI_Fint *ierror, size_t datarep_len)
    __attribute__((weak, alias("pmpi_register_datarep_")));

/* ---------------------------------------------------------- user ops */
/* The core calls an MPI_User_function without a context, so each Fortran op
 * gets one of KF_NOPS trampolines; MPI_Op_free gives its slot back. */
typedef void kf_user_fn(void *invec, void *inoutvec, MPI_Fint *len, MPI_Fint *datatype);
#define KF_NOPS 64
static pthread_mutex_t kf_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { kf_user_fn *fn; MPI_Op op; } kf_ops[KF_NOPS];

static void kf_op_call(int i, void *in, void *inout, int *len, MPI_Datatype *dt)
{
    MPI_Fint fdt = PMPI_Type_c2f(*dt), n = *len;
    kf_ops[i].fn(in, inout, &n, &fdt);
}
#define KF_T(i, j) static void kf_op_##i##j(void *a, void *b, int *n, MPI_Datatype *d) \
    { kf_op_call((i) * 8 + (j), a, b, n, d); }
#define KF_T8(i) KF_T(i, 0) KF_T(i, 1) KF_T(i, 2) KF_T(i, 3) KF_T(i, 4) KF_T(i, 5) KF_T(i, 6) KF_T(i, 7)
KF_T8(0) KF_T8(1) KF_T8(2) KF_T8(3) KF_T8(4) KF_T8(5) KF_T8(6) KF_T8(7)
#define KF_P8(i) kf_op_##i##0, kf_op_##i##1, kf_op_##i##2, kf_op_##i##3, \
                 kf_op_##i##4, kf_op_##i##5, kf_op_##i##6, kf_op_##i##7
static MPI_User_function *const kf_op_tramp[KF_NOPS] = {
    KF_P8(0), KF_P8(1), KF_P8(2), KF_P8(3), KF_P8(4), KF_P8(5), KF_P8(6), KF_P8(7) };

KUMI_EXPORT void pmpi_op_create_(void (*user_fn)(void), MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierror)
{
    int i, rc;
    MPI_Op c = MPI_OP_NULL;
    pthread_mutex_lock(&kf_lock);
    for (i = 0; i < KF_NOPS && kf_ops[i].fn; i++) {}
    if (i < KF_NOPS) { kf_ops[i].fn = (kf_user_fn *)(void *)user_fn; kf_ops[i].op = MPI_OP_NULL; }
    pthread_mutex_unlock(&kf_lock);
    if (i == KF_NOPS) {             /* every trampoline in use: report it through COMM_WORLD */
        PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_INTERN);
        *ierror = MPI_ERR_INTERN;
        return;
    }
    rc = user_fn ? PMPI_Op_create(kf_op_tramp[i], *commute != 0, &c) : PMPI_Op_create(NULL, *commute != 0, &c);
    pthread_mutex_lock(&kf_lock);
    if (rc == MPI_SUCCESS) kf_ops[i].op = c;
    else kf_ops[i].fn = NULL;
    pthread_mutex_unlock(&kf_lock);
    if (rc == MPI_SUCCESS) *op = PMPI_Op_c2f(c);
    *ierror = rc;
}
KUMI_EXPORT void mpi_op_create_(void (*user_fn)(void), MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierror)
    __attribute__((weak, alias("pmpi_op_create_")));

KUMI_EXPORT void pmpi_op_free_(MPI_Fint *op, MPI_Fint *ierror)
{
    MPI_Op c = PMPI_Op_f2c(*op), old = c;
    int rc = PMPI_Op_free(&c);
    if (rc == MPI_SUCCESS) {
        pthread_mutex_lock(&kf_lock);
        for (int i = 0; i < KF_NOPS; i++)
            if (kf_ops[i].fn && kf_ops[i].op == old) { kf_ops[i].fn = NULL; kf_ops[i].op = MPI_OP_NULL; }
        pthread_mutex_unlock(&kf_lock);
    }
    *op = PMPI_Op_c2f(c);
    *ierror = rc;
}
KUMI_EXPORT void mpi_op_free_(MPI_Fint *op, MPI_Fint *ierror) __attribute__((weak, alias("pmpi_op_free_")));

/* ------------------------------------------------- error handlers */
/* Fortran error handlers of communicators, windows, files and sessions: one C
 * trampoline per kind finds the Fortran procedure from the object's error
 * handler in one table (an MPI_Errhandler is of one kind only). */
typedef void kf_errh_fn(MPI_Fint *obj, MPI_Fint *code);
#define KF_NERRH 256
static struct { MPI_Errhandler eh; kf_errh_fn *fn; } kf_errh[KF_NERRH];
static int kf_nerrh;

/* The Fortran procedure of eh (NULL if none); frees eh (a reference from a
 * get_errhandler call). */
static kf_errh_fn *kf_errh_find(MPI_Errhandler eh)
{
    kf_errh_fn *fn = NULL;
    pthread_mutex_lock(&kf_lock);
    for (int i = 0; i < kf_nerrh; i++)
        if (kf_errh[i].eh == eh) fn = kf_errh[i].fn;
    pthread_mutex_unlock(&kf_lock);
    PMPI_Errhandler_free(&eh);
    return fn;
}

/* After PMPI_<Kind>_create_errhandler returned rc and *eh: remember fn for
 * *eh, answer the Fortran arguments.  A full table is MPI_ERR_INTERN (the
 * handler is freed), reported to MPI_COMM_WORLD's handler when report. */
static void kf_errh_created(int rc, MPI_Errhandler eh, void (*fn)(void), int report,
                            MPI_Fint *errhandler, MPI_Fint *ierror)
{
    if (rc == MPI_SUCCESS) {
        pthread_mutex_lock(&kf_lock);
        int i;
        for (i = 0; i < kf_nerrh && kf_errh[i].eh != eh; i++) {}  /* an address used before */
        if (i == kf_nerrh && kf_nerrh < KF_NERRH) kf_nerrh++;
        if (i < kf_nerrh) { kf_errh[i].eh = eh; kf_errh[i].fn = (kf_errh_fn *)(void *)fn; }
        else rc = MPI_ERR_INTERN;
        pthread_mutex_unlock(&kf_lock);
        if (rc != MPI_SUCCESS) {
            PMPI_Errhandler_free(&eh);
            if (report) PMPI_Comm_call_errhandler(MPI_COMM_WORLD, rc);
        }
    }
    *errhandler = PMPI_Errhandler_c2f(eh);
    *ierror = rc;
}

static void kf_errh_tramp(MPI_Comm *comm, int *code, ...)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (PMPI_Comm_get_errhandler(*comm, &eh) != MPI_SUCCESS) return;
    kf_errh_fn *fn = kf_errh_find(eh);
    MPI_Fint fc = PMPI_Comm_c2f(*comm), fcode = *code;
    if (fn) fn(&fc, &fcode);
}

KUMI_EXPORT void pmpi_comm_create_errhandler_(void (*fn)(void), MPI_Fint *errhandler, MPI_Fint *ierror)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    int rc = PMPI_Comm_create_errhandler(fn ? kf_errh_tramp : NULL, &eh);
    kf_errh_created(rc, eh, fn, 1, errhandler, ierror);
}
KUMI_EXPORT void mpi_comm_create_errhandler_(void (*fn)(void), MPI_Fint *errhandler, MPI_Fint *ierror)
    __attribute__((weak, alias("pmpi_comm_create_errhandler_")));

/* The removed MPI_ERRHANDLER_CREATE: MPI_COMM_CREATE_ERRHANDLER's trampoline */
KUMI_EXPORT void pmpi_errhandler_create_(void (*fn)(void), MPI_Fint *errhandler, MPI_Fint *ierror)
{
    pmpi_comm_create_errhandler_(fn, errhandler, ierror);
}
KUMI_EXPORT void mpi_errhandler_create_(void (*fn)(void), MPI_Fint *errhandler, MPI_Fint *ierror)
    __attribute__((weak, alias("pmpi_errhandler_create_")));

/* ------------------------------------------------------------ attributes */
/* A Fortran keyval: its copy and delete procedures and its extra state travel
 * as the C keyval's extra_state; C trampolines call them with integer handles
 * and INTEGER(KIND=MPI_ADDRESS_KIND) values.  An attribute set from Fortran
 * stores the integer value itself as the C attribute (void *); the predefined
 * attributes, which C gives as pointers, are read through those pointers. */
typedef void kf_copy_fn(MPI_Fint *obj, MPI_Fint *keyval, MPI_Aint *extra, MPI_Aint *in, MPI_Aint *out,
                        MPI_Fint *flag, MPI_Fint *ierr);
typedef void kf_delete_fn(MPI_Fint *obj, MPI_Fint *keyval, MPI_Aint *val, MPI_Aint *extra, MPI_Fint *ierr);
struct kf_keyval { kf_copy_fn *copy; kf_delete_fn *del; MPI_Aint extra; };

/* Value of attribute keyval read from C (flag set) as a Fortran integer. */
static MPI_Aint kf_attr_value(int keyval, void *v)
{
    switch (keyval) {
    case MPI_TAG_UB: case MPI_HOST: case MPI_IO: case MPI_WTIME_IS_GLOBAL: case MPI_APPNUM:
    case MPI_LASTUSEDCODE: case MPI_UNIVERSE_SIZE:
    case MPI_WIN_DISP_UNIT: case MPI_WIN_CREATE_FLAVOR: case MPI_WIN_MODEL:
        return v ? *(int *)v : 0;
    case MPI_WIN_SIZE:
        return v ? *(MPI_Aint *)v : 0;
    default:                        /* MPI_WIN_BASE, and values set from Fortran */
        return (MPI_Aint)v;
    }
}

/* Weak: a libmpi under construction may lack some of them (then the call is unsupported). */
#pragma weak PMPI_Comm_create_keyval
#pragma weak PMPI_Comm_set_attr
#pragma weak PMPI_Comm_get_attr
#pragma weak PMPI_Type_create_keyval
#pragma weak PMPI_Type_set_attr
#pragma weak PMPI_Type_get_attr
#pragma weak PMPI_Win_create_keyval
#pragma weak PMPI_Win_set_attr
#pragma weak PMPI_Win_get_attr

#define KF_ATTR(lname, Name, CType, Conv, NULLCOPY, DUP, NULLDEL, CNULLCOPY, CDUP, CNULLDEL)                                      \
    static int kf_##lname##_copy(CType o, int k, void *extra, void *in, void *out, int *flag)          \
    {                                                                                                  \
        struct kf_keyval *kv = extra;                                                                  \
        MPI_Fint fo = PMPI_##Conv##_c2f(o), fk = k, ff = 0, ierr = MPI_SUCCESS;                        \
        MPI_Aint vin = (MPI_Aint)in, vout = 0;                                                         \
        kv->copy(&fo, &fk, &kv->extra, &vin, &vout, &ff, &ierr);                                       \
        *flag = ff != 0;                                                                               \
        if (ff) *(void **)out = (void *)vout;                                                          \
        return ierr;                                                                                   \
    }                                                                                                  \
    static int kf_##lname##_delete(CType o, int k, void *val, void *extra)                             \
    {                                                                                                  \
        struct kf_keyval *kv = extra;                                                                  \
        MPI_Fint fo = PMPI_##Conv##_c2f(o), fk = k, ierr = MPI_SUCCESS;                                \
        MPI_Aint v = (MPI_Aint)val;                                                                    \
        kv->del(&fo, &fk, &v, &kv->extra, &ierr);                                                      \
        return ierr;                                                                                   \
    }                                                                                                  \
    KUMI_EXPORT void pmpi_##lname##_create_keyval_(void (*copy)(void), void (*del)(void), MPI_Fint *keyval, \
                                                   MPI_Aint *extra, MPI_Fint *ierror)                  \
    {                                                                                                  \
        if (!PMPI_##Name##_create_keyval) { *ierror = MPI_ERR_UNSUPPORTED_OPERATION; return; }         \
        struct kf_keyval *kv = malloc(sizeof *kv);                                                     \
        if (!kv) { *ierror = kf_nomem("MPI_" #Name "_create_keyval"); return; }                        \
        kv->copy = (kf_copy_fn *)(void *)copy;                                                         \
        kv->del = (kf_delete_fn *)(void *)del;                                                         \
        kv->extra = *extra;                                                                            \
        MPI_##Name##_copy_attr_function *ccopy = kf_##lname##_copy;                                    \
        MPI_##Name##_delete_attr_function *cdel = kf_##lname##_delete;                                 \
        if (copy == (void (*)(void))NULLCOPY) ccopy = CNULLCOPY;                                       \
        else if (copy == (void (*)(void))DUP) ccopy = CDUP;                                             \
        if (del == (void (*)(void))NULLDEL) cdel = CNULLDEL;                                        \
        int k = MPI_KEYVAL_INVALID;                                                                    \
        int rc = PMPI_##Name##_create_keyval(ccopy, cdel, &k, kv);                                     \
        if (rc != MPI_SUCCESS) free(kv); /* else kept: callbacks may run after the keyval's free */     \
        *keyval = k;                                                                                   \
        *ierror = rc;                                                                                  \
    }                                                                                                  \
    KUMI_EXPORT void mpi_##lname##_create_keyval_(void (*copy)(void), void (*del)(void), MPI_Fint *keyval, \
                                                  MPI_Aint *extra, MPI_Fint *ierror)                   \
        __attribute__((weak, alias("pmpi_" #lname "_create_keyval_")));                                \
    KUMI_EXPORT void pmpi_##lname##_set_attr_(MPI_Fint *o, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *ierror) \
    {                                                                                                  \
        if (!PMPI_##Name##_set_attr) { *ierror = MPI_ERR_UNSUPPORTED_OPERATION; return; }              \
        *ierror = PMPI_##Name##_set_attr(PMPI_##Conv##_f2c(*o), *keyval, (void *)*val);                \
    }                                                                                                  \
    KUMI_EXPORT void mpi_##lname##_set_attr_(MPI_Fint *o, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *ierror) \
        __attribute__((weak, alias("pmpi_" #lname "_set_attr_")));                                     \
    KUMI_EXPORT void pmpi_##lname##_get_attr_(MPI_Fint *o, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *flag, \
                                              MPI_Fint *ierror)                                        \
    {                                                                                                  \
        if (!PMPI_##Name##_get_attr) { *ierror = MPI_ERR_UNSUPPORTED_OPERATION; return; }              \
        void *v = NULL;                                                                                \
        int f = 0;                                                                                     \
        *ierror = PMPI_##Name##_get_attr(PMPI_##Conv##_f2c(*o), *keyval, &v, &f);                      \
        *flag = f != 0;                                                                                \
        if (*ierror == MPI_SUCCESS && f) *val = kf_attr_value(*keyval, v);                             \
    }                                                                                                  \
    KUMI_EXPORT void mpi_##lname##_get_attr_(MPI_Fint *o, MPI_Fint *keyval, MPI_Aint *val, MPI_Fint *flag, \
                                             MPI_Fint *ierror)                                         \
        __attribute__((weak, alias("pmpi_" #lname "_get_attr_")));

KF_ATTR(comm, Comm, MPI_Comm, Comm, mpi_comm_null_copy_fn_, mpi_comm_dup_fn_, mpi_comm_null_delete_fn_,
        MPI_COMM_NULL_COPY_FN, MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN)
KF_ATTR(type, Type, MPI_Datatype, Type, mpi_type_null_copy_fn_, mpi_type_dup_fn_, mpi_type_null_delete_fn_,
        MPI_TYPE_NULL_COPY_FN, MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN)
KF_ATTR(win, Win, MPI_Win, Win, mpi_win_null_copy_fn_, mpi_win_dup_fn_, mpi_win_null_delete_fn_,
        MPI_WIN_NULL_COPY_FN, MPI_WIN_DUP_FN, MPI_WIN_NULL_DELETE_FN)

/* ------------------------------------------- deprecated attribute calls */
/* MPI_KEYVAL_CREATE / MPI_ATTR_PUT / MPI_ATTR_GET (MPI-1, deprecated): the
 * same machinery with INTEGER (default kind) attribute values and extra
 * state, on communicators.  A value set with MPI_ATTR_PUT is stored as the C
 * attribute (void *) holding the sign-extended integer, so MPI_COMM_GET_ATTR
 * reads it too (and MPI_ATTR_GET truncates what MPI_COMM_SET_ATTR stored). */
typedef void kf_copy_old_fn(MPI_Fint *obj, MPI_Fint *keyval, MPI_Fint *extra, MPI_Fint *in, MPI_Fint *out,
                            MPI_Fint *flag, MPI_Fint *ierr);
typedef void kf_delete_old_fn(MPI_Fint *obj, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *extra, MPI_Fint *ierr);
struct kf_keyval_old { kf_copy_old_fn *copy; kf_delete_old_fn *del; MPI_Fint extra; };

static int kf_old_copy(MPI_Comm o, int k, void *extra, void *in, void *out, int *flag)
{
    struct kf_keyval_old *kv = extra;
    MPI_Fint fo = PMPI_Comm_c2f(o), fk = k, ff = 0, ierr = MPI_SUCCESS;
    MPI_Fint vin = (MPI_Fint)(MPI_Aint)in, vout = 0;
    kv->copy(&fo, &fk, &kv->extra, &vin, &vout, &ff, &ierr);
    *flag = ff != 0;
    if (ff) *(void **)out = (void *)(MPI_Aint)vout;
    return ierr;
}

static int kf_old_delete(MPI_Comm o, int k, void *val, void *extra)
{
    struct kf_keyval_old *kv = extra;
    MPI_Fint fo = PMPI_Comm_c2f(o), fk = k, ierr = MPI_SUCCESS;
    MPI_Fint v = (MPI_Fint)(MPI_Aint)val;
    kv->del(&fo, &fk, &v, &kv->extra, &ierr);
    return ierr;
}

KUMI_EXPORT void pmpi_keyval_create_(void (*copy)(void), void (*del)(void), MPI_Fint *keyval, MPI_Fint *extra,
                                     MPI_Fint *ierror)
{
    if (!PMPI_Comm_create_keyval) { *ierror = MPI_ERR_UNSUPPORTED_OPERATION; return; }
    struct kf_keyval_old *kv = malloc(sizeof *kv);
    if (!kv) { *ierror = kf_nomem("MPI_Keyval_create"); return; }
    kv->copy = (kf_copy_old_fn *)(void *)copy;
    kv->del = (kf_delete_old_fn *)(void *)del;
    kv->extra = *extra;
    MPI_Comm_copy_attr_function *ccopy = kf_old_copy;
    MPI_Comm_delete_attr_function *cdel = kf_old_delete;
    /* the predefined procedures of either generation */
    if (copy == (void (*)(void))mpi_null_copy_fn_ || copy == (void (*)(void))mpi_comm_null_copy_fn_)
        ccopy = MPI_COMM_NULL_COPY_FN;
    else if (copy == (void (*)(void))mpi_dup_fn_ || copy == (void (*)(void))mpi_comm_dup_fn_)
        ccopy = MPI_COMM_DUP_FN;
    if (del == (void (*)(void))mpi_null_delete_fn_ || del == (void (*)(void))mpi_comm_null_delete_fn_)
        cdel = MPI_COMM_NULL_DELETE_FN;
    int k = MPI_KEYVAL_INVALID;
    int rc = PMPI_Comm_create_keyval(ccopy, cdel, &k, kv);
    if (rc != MPI_SUCCESS) free(kv);        /* else kept: callbacks may run after the keyval's free */
    *keyval = k;
    *ierror = rc;
}
KUMI_EXPORT void mpi_keyval_create_(void (*copy)(void), void (*del)(void), MPI_Fint *keyval, MPI_Fint *extra,
                                    MPI_Fint *ierror) __attribute__((weak, alias("pmpi_keyval_create_")));

KUMI_EXPORT void pmpi_attr_put_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *ierror)
{
    if (!PMPI_Comm_set_attr) { *ierror = MPI_ERR_UNSUPPORTED_OPERATION; return; }
    *ierror = PMPI_Comm_set_attr(PMPI_Comm_f2c(*comm), *keyval, (void *)(MPI_Aint)*val);
}
KUMI_EXPORT void mpi_attr_put_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *ierror)
    __attribute__((weak, alias("pmpi_attr_put_")));

KUMI_EXPORT void pmpi_attr_get_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *flag, MPI_Fint *ierror)
{
    if (!PMPI_Comm_get_attr) { *ierror = MPI_ERR_UNSUPPORTED_OPERATION; return; }
    void *v = NULL;
    int f = 0;
    *ierror = PMPI_Comm_get_attr(PMPI_Comm_f2c(*comm), *keyval, &v, &f);
    *flag = f != 0;
    if (*ierror == MPI_SUCCESS && f) *val = (MPI_Fint)kf_attr_value(*keyval, v);
}
KUMI_EXPORT void mpi_attr_get_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *flag, MPI_Fint *ierror)
    __attribute__((weak, alias("pmpi_attr_get_")));

/* ------------------------------------------------------------ MPI_PCONTROL */
/* MPI_PCONTROL(LEVEL): no IERROR in Fortran; C's variable arguments have no
 * Fortran counterpart. */
/* MPI_BUFFER_DETACH(BUFFER_ADDR, SIZE, IERROR): Fortran has no pointers,
 * so BUFFER_ADDR is left as it is (the C call writes a C pointer where its
 * argument points: 8 bytes into what may be a 4-byte INTEGER); SIZE is set. */
KUMI_EXPORT void pmpi_buffer_detach_(void *buffer_addr, MPI_Fint *size, MPI_Fint *ierror)
{
    void *p = NULL;
    int n = 0;
    (void)buffer_addr;
    int rc = PMPI_Buffer_detach(&p, &n);
    if (rc == MPI_SUCCESS) *size = n;
    *ierror = rc;
}
KUMI_EXPORT void mpi_buffer_detach_(void *buffer_addr, MPI_Fint *size, MPI_Fint *ierror)
    __attribute__((weak, alias("pmpi_buffer_detach_")));

KUMI_EXPORT void pmpi_pcontrol_(MPI_Fint *level)
{
    PMPI_Pcontrol(*level);
}
KUMI_EXPORT void mpi_pcontrol_(MPI_Fint *level) __attribute__((weak, alias("pmpi_pcontrol_")));

/* ------------------------------------- session, file, window error handlers */
#pragma weak PMPI_Session_create_errhandler
#pragma weak PMPI_Session_get_errhandler
static void kf_serrh_tramp(MPI_Session *session, int *code, ...)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (*session == MPI_SESSION_NULL || PMPI_Session_get_errhandler(*session, &eh) != MPI_SUCCESS) return;
    kf_errh_fn *fn = kf_errh_find(eh);
    MPI_Fint fs = PMPI_Session_c2f(*session), fcode = *code;
    if (fn) fn(&fs, &fcode);
}

KUMI_EXPORT void pmpi_session_create_errhandler_(void (*fn)(void), MPI_Fint *errhandler, MPI_Fint *ierror)
{
    if (!PMPI_Session_create_errhandler || !PMPI_Session_get_errhandler) {
        *ierror = MPI_ERR_UNSUPPORTED_OPERATION;
        return;
    }
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    int rc = PMPI_Session_create_errhandler(fn ? kf_serrh_tramp : NULL, &eh);
    kf_errh_created(rc, eh, fn, 0, errhandler, ierror);
}
KUMI_EXPORT void mpi_session_create_errhandler_(void (*fn)(void), MPI_Fint *errhandler, MPI_Fint *ierror)
    __attribute__((weak, alias("pmpi_session_create_errhandler_")));

/* A file's error handler (MPI_FILE_NULL's for errors of no file). */
static void kf_ferrh_tramp(MPI_File *file, int *code, ...)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (PMPI_File_get_errhandler(*file, &eh) != MPI_SUCCESS) return;
    kf_errh_fn *fn = kf_errh_find(eh);
    MPI_Fint ff = PMPI_File_c2f(*file), fcode = *code;
    if (fn) fn(&ff, &fcode);
}

KUMI_EXPORT void pmpi_file_create_errhandler_(void (*fn)(void), MPI_Fint *errhandler, MPI_Fint *ierror)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    int rc = PMPI_File_create_errhandler(fn ? kf_ferrh_tramp : NULL, &eh);
    kf_errh_created(rc, eh, fn, 0, errhandler, ierror);
}
KUMI_EXPORT void mpi_file_create_errhandler_(void (*fn)(void), MPI_Fint *errhandler, MPI_Fint *ierror)
    __attribute__((weak, alias("pmpi_file_create_errhandler_")));

static void kf_werrh_tramp(MPI_Win *win, int *code, ...)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (*win == MPI_WIN_NULL || PMPI_Win_get_errhandler(*win, &eh) != MPI_SUCCESS) return;
    kf_errh_fn *fn = kf_errh_find(eh);
    MPI_Fint fw = PMPI_Win_c2f(*win), fcode = *code;
    if (fn) fn(&fw, &fcode);
}

KUMI_EXPORT void pmpi_win_create_errhandler_(void (*fn)(void), MPI_Fint *errhandler, MPI_Fint *ierror)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    int rc = PMPI_Win_create_errhandler(fn ? kf_werrh_tramp : NULL, &eh);
    kf_errh_created(rc, eh, fn, 1, errhandler, ierror);
}
KUMI_EXPORT void mpi_win_create_errhandler_(void (*fn)(void), MPI_Fint *errhandler, MPI_Fint *ierror)
    __attribute__((weak, alias("pmpi_win_create_errhandler_")));

/* ------------------------------------------- neighborhood array lengths */
/* Lengths of the per-neighbor arrays (sendtypes: outdegree, recvtypes:
 * indegree) of MPI_NEIGHBOR_ALLTOALLW and its variants; 0 for a
 * communicator without topology (the call then reports it). */
#pragma weak PMPI_Topo_test
#pragma weak PMPI_Cartdim_get
#pragma weak PMPI_Graph_neighbors_count
#pragma weak PMPI_Dist_graph_neighbors_count
static void kf_neighbor_degrees(MPI_Comm comm, int *indeg, int *outdeg)
{
    int t = MPI_UNDEFINED, n = 0, w = 0, rank = 0;
    *indeg = *outdeg = 0;
    if (!PMPI_Topo_test || PMPI_Topo_test(comm, &t) != MPI_SUCCESS) return;
    if (t == MPI_CART && PMPI_Cartdim_get && PMPI_Cartdim_get(comm, &n) == MPI_SUCCESS) {
        *indeg = *outdeg = 2 * n;
    } else if (t == MPI_GRAPH && PMPI_Graph_neighbors_count && PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS &&
               PMPI_Graph_neighbors_count(comm, rank, &n) == MPI_SUCCESS) {
        *indeg = *outdeg = n;
    } else if (t == MPI_DIST_GRAPH && PMPI_Dist_graph_neighbors_count) {
        int i = 0, o = 0;
        if (PMPI_Dist_graph_neighbors_count(comm, &i, &o, &w) == MPI_SUCCESS) { *indeg = i; *outdeg = o; }
    }
}

int kf_neighbor_in(MPI_Comm comm)
{
    int i, o;
    kf_neighbor_degrees(comm, &i, &o);
    return i;
}

int kf_neighbor_out(MPI_Comm comm)
{
    int i, o;
    kf_neighbor_degrees(comm, &i, &o);
    return o;
}

/* ------------------------------------------------------- MPI_COMM_SPAWN(_MULTIPLE) */
/* Fortran string arrays: ARGV(*) is a sequence of CHARACTER*(len) items ended
 * by a blank one; ARRAY_OF_ARGV(COUNT, *) holds command i's j-th argument at
 * (i, j) (column major), each command's list ended by a blank item.  Commands
 * lose their leading and trailing blanks, arguments their trailing ones
 * (MPI-4.1 sec. 11.3.2).  MPI_ARGV_NULL / MPI_ARGVS_NULL: no arguments.
 * The copies are NULL-terminated C arrays (kf_argv_free). */
static void kf_argv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

static int kf_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ') return 0;
    return 1;
}

/* Items base + k * stride (k = 0, 1, ...) of len characters until a blank one. */
static char **kf_argv_in(const char *base, size_t stride, size_t len, int *oom)
{
    size_t n = 0;
    while (!kf_blank(base + n * stride, len)) n++;
    char **v = calloc(n + 1, sizeof *v);
    if (!v) { *oom = 1; return NULL; }
    for (size_t k = 0; k < n; k++)
        if (!(v[k] = kf_str_in(base + k * stride, len))) {
            kf_argv_free(v);
            *oom = 1;
            return NULL;
        }
    return v;
}

static char *kf_command_in(const char *f, size_t len)
{
    while (len > 0 && *f == ' ') {
        f++;
        len--;
    }
    return kf_str_in(f, len);
}

KUMI_EXPORT void pmpi_comm_spawn_(const char *command, const char *argv, MPI_Fint *maxprocs, MPI_Fint *info,
                                  MPI_Fint *root, MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *array_of_errcodes,
                                  MPI_Fint *ierror, size_t command_len, size_t argv_len)
{
    int oom = 0;
    char *cmd = kf_command_in(command, command_len);
    char **av = argv == kumi_fc_argv_null_ ? NULL : kf_argv_in(argv, argv_len, argv_len, &oom);
    if (!cmd || oom) {
        free(cmd);
        kf_argv_free(av);
        *ierror = kf_nomem("MPI_COMM_SPAWN");
        return;
    }
    MPI_Comm ic = MPI_COMM_NULL;
    int rc = PMPI_Comm_spawn(cmd, av, (int)*maxprocs, PMPI_Info_f2c(*info), (int)*root, PMPI_Comm_f2c(*comm), &ic,
                             KF_ERRCODES(array_of_errcodes));
    *intercomm = PMPI_Comm_c2f(ic);
    free(cmd);
    kf_argv_free(av);
    *ierror = rc;
}
KUMI_EXPORT void mpi_comm_spawn_(const char *command, const char *argv, MPI_Fint *maxprocs, MPI_Fint *info,
                                 MPI_Fint *root, MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *array_of_errcodes,
                                 MPI_Fint *ierror, size_t command_len, size_t argv_len)
    __attribute__((weak, alias("pmpi_comm_spawn_")));

KUMI_EXPORT void pmpi_comm_spawn_multiple_(MPI_Fint *count, const char *array_of_commands, const char *array_of_argv,
                                           MPI_Fint *array_of_maxprocs, MPI_Fint *array_of_info, MPI_Fint *root,
                                           MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *array_of_errcodes,
                                           MPI_Fint *ierror, size_t commands_len, size_t argv_len)
{
    int n = (int)*count, oom = 0, rank = -1, rc;
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    /* significant at the root only: elsewhere count and the arrays may be anything */
    if (PMPI_Comm_rank(c, &rank) != MPI_SUCCESS || rank != (int)*root || n <= 0) {
        MPI_Comm ic = MPI_COMM_NULL;
        rc = PMPI_Comm_spawn_multiple(n > 0 ? n : 0, NULL, NULL, NULL, NULL, (int)*root, c, &ic,
                                      KF_ERRCODES(array_of_errcodes));
        *intercomm = PMPI_Comm_c2f(ic);
        *ierror = rc;
        return;
    }
    char **cmds = calloc((size_t)n, sizeof *cmds), ***argvs = calloc((size_t)n, sizeof *argvs);
    int *np = calloc((size_t)n, sizeof *np);
    MPI_Info *infos = calloc((size_t)n, sizeof *infos);
    if (!cmds || !argvs || !np || !infos) oom = 1;
    for (int i = 0; i < n && !oom; i++) {
        if (!(cmds[i] = kf_command_in(array_of_commands + (size_t)i * commands_len, commands_len))) oom = 1;
        if (array_of_argv != kumi_fc_argvs_null_)
            argvs[i] = kf_argv_in(array_of_argv + (size_t)i * argv_len, (size_t)n * argv_len, argv_len, &oom);
        np[i] = (int)array_of_maxprocs[i];
        infos[i] = PMPI_Info_f2c(array_of_info[i]);
    }
    if (oom) {
        rc = kf_nomem("MPI_COMM_SPAWN_MULTIPLE");
    } else {
        MPI_Comm ic = MPI_COMM_NULL;
        rc = PMPI_Comm_spawn_multiple(n, cmds, array_of_argv == kumi_fc_argvs_null_ ? MPI_ARGVS_NULL : argvs, np,
                                      infos, (int)*root, c, &ic, KF_ERRCODES(array_of_errcodes));
        *intercomm = PMPI_Comm_c2f(ic);
    }
    for (int i = 0; cmds && i < n; i++) {
        free(cmds[i]);
        if (argvs) kf_argv_free(argvs[i]);
    }
    free(cmds);
    free(argvs);
    free(np);
    free(infos);
    *ierror = rc;
}
KUMI_EXPORT void mpi_comm_spawn_multiple_(MPI_Fint *count, const char *array_of_commands, const char *array_of_argv,
                                          MPI_Fint *array_of_maxprocs, MPI_Fint *array_of_info, MPI_Fint *root,
                                          MPI_Fint *comm, MPI_Fint *intercomm, MPI_Fint *array_of_errcodes,
                                          MPI_Fint *ierror, size_t commands_len, size_t argv_len)
    __attribute__((weak, alias("pmpi_comm_spawn_multiple_")));
