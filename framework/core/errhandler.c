/* Error codes, error classes, error strings and error handlers.
 *
 * An error code is its class (0..MPI_ERR_LASTCODE) plus, above that, the slot
 * of a ring of detailed messages: code = ((slot + 1) << 14) | class.  So
 * MPI_Error_class() is code & 0x3fff and MPI_Error_string() gives the
 * detailed message ("MPI_Send: invalid rank 7 in a communicator of size 4")
 * while it is still in the ring, the class's text afterwards. */
#include "core/core.h"
#include "core/check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLASS_BITS 14
#define CLASS_MASK ((1 << CLASS_BITS) - 1)
#define RING 128

static struct { int code; char msg[MPI_MAX_ERROR_STRING]; } ring[RING];
static unsigned ring_next;

static const char *const class_text[] = {
    [MPI_SUCCESS] = "MPI_SUCCESS: no error",
    [MPI_ERR_BUFFER] = "MPI_ERR_BUFFER: invalid buffer pointer",
    [MPI_ERR_COUNT] = "MPI_ERR_COUNT: invalid count argument",
    [MPI_ERR_TYPE] = "MPI_ERR_TYPE: invalid datatype",
    [MPI_ERR_TAG] = "MPI_ERR_TAG: invalid tag",
    [MPI_ERR_COMM] = "MPI_ERR_COMM: invalid communicator",
    [MPI_ERR_RANK] = "MPI_ERR_RANK: invalid rank",
    [MPI_ERR_REQUEST] = "MPI_ERR_REQUEST: invalid request",
    [MPI_ERR_ROOT] = "MPI_ERR_ROOT: invalid root",
    [MPI_ERR_GROUP] = "MPI_ERR_GROUP: invalid group",
    [MPI_ERR_OP] = "MPI_ERR_OP: invalid reduce operation",
    [MPI_ERR_TOPOLOGY] = "MPI_ERR_TOPOLOGY: invalid communicator topology",
    [MPI_ERR_DIMS] = "MPI_ERR_DIMS: invalid dimension argument",
    [MPI_ERR_ARG] = "MPI_ERR_ARG: invalid argument of some other kind",
    [MPI_ERR_UNKNOWN] = "MPI_ERR_UNKNOWN: unknown error",
    [MPI_ERR_TRUNCATE] = "MPI_ERR_TRUNCATE: message truncated",
    [MPI_ERR_OTHER] = "MPI_ERR_OTHER: known error not in this list",
    [MPI_ERR_INTERN] = "MPI_ERR_INTERN: internal error",
    [MPI_ERR_PENDING] = "MPI_ERR_PENDING: pending request",
    [MPI_ERR_IN_STATUS] = "MPI_ERR_IN_STATUS: error code is in status",
    [MPI_ERR_ACCESS] = "MPI_ERR_ACCESS: permission denied",
    [MPI_ERR_AMODE] = "MPI_ERR_AMODE: invalid amode argument",
    [MPI_ERR_ASSERT] = "MPI_ERR_ASSERT: invalid assert argument",
    [MPI_ERR_BAD_FILE] = "MPI_ERR_BAD_FILE: invalid file name",
    [MPI_ERR_BASE] = "MPI_ERR_BASE: invalid base",
    [MPI_ERR_CONVERSION] = "MPI_ERR_CONVERSION: error in data conversion",
    [MPI_ERR_DISP] = "MPI_ERR_DISP: invalid displacement",
    [MPI_ERR_DUP_DATAREP] = "MPI_ERR_DUP_DATAREP: data representation already defined",
    [MPI_ERR_FILE_EXISTS] = "MPI_ERR_FILE_EXISTS: file exists",
    [MPI_ERR_FILE_IN_USE] = "MPI_ERR_FILE_IN_USE: file in use",
    [MPI_ERR_FILE] = "MPI_ERR_FILE: invalid file handle",
    [MPI_ERR_INFO_KEY] = "MPI_ERR_INFO_KEY: info key too long",
    [MPI_ERR_INFO_NOKEY] = "MPI_ERR_INFO_NOKEY: no such info key",
    [MPI_ERR_INFO_VALUE] = "MPI_ERR_INFO_VALUE: info value too long",
    [MPI_ERR_INFO] = "MPI_ERR_INFO: invalid info object",
    [MPI_ERR_IO] = "MPI_ERR_IO: input/output error",
    [MPI_ERR_KEYVAL] = "MPI_ERR_KEYVAL: invalid attribute key",
    [MPI_ERR_LOCKTYPE] = "MPI_ERR_LOCKTYPE: invalid lock type",
    [MPI_ERR_NAME] = "MPI_ERR_NAME: name not published",
    [MPI_ERR_NO_MEM] = "MPI_ERR_NO_MEM: out of memory",
    [MPI_ERR_NOT_SAME] = "MPI_ERR_NOT_SAME: arguments differ between processes",
    [MPI_ERR_NO_SPACE] = "MPI_ERR_NO_SPACE: no space left",
    [MPI_ERR_NO_SUCH_FILE] = "MPI_ERR_NO_SUCH_FILE: no such file",
    [MPI_ERR_PORT] = "MPI_ERR_PORT: invalid port name",
    [MPI_ERR_QUOTA] = "MPI_ERR_QUOTA: quota exceeded",
    [MPI_ERR_READ_ONLY] = "MPI_ERR_READ_ONLY: read-only file or file system",
    [MPI_ERR_RMA_ATTACH] = "MPI_ERR_RMA_ATTACH: memory cannot be attached",
    [MPI_ERR_RMA_CONFLICT] = "MPI_ERR_RMA_CONFLICT: conflicting accesses to window",
    [MPI_ERR_RMA_RANGE] = "MPI_ERR_RMA_RANGE: target memory is not part of the window",
    [MPI_ERR_RMA_SHARED] = "MPI_ERR_RMA_SHARED: memory cannot be shared",
    [MPI_ERR_RMA_SYNC] = "MPI_ERR_RMA_SYNC: wrong synchronization of RMA calls",
    [MPI_ERR_SERVICE] = "MPI_ERR_SERVICE: invalid service name",
    [MPI_ERR_SIZE] = "MPI_ERR_SIZE: invalid size",
    [MPI_ERR_SPAWN] = "MPI_ERR_SPAWN: error in spawning processes",
    [MPI_ERR_UNSUPPORTED_DATAREP] = "MPI_ERR_UNSUPPORTED_DATAREP: unsupported data representation",
    [MPI_ERR_UNSUPPORTED_OPERATION] = "MPI_ERR_UNSUPPORTED_OPERATION: unsupported operation",
    [MPI_ERR_WIN] = "MPI_ERR_WIN: invalid window",
    [MPI_ERR_RMA_FLAVOR] = "MPI_ERR_RMA_FLAVOR: wrong window flavor",
    [MPI_ERR_PROC_ABORTED] = "MPI_ERR_PROC_ABORTED: operation failed because a peer process aborted",
    [MPI_ERR_VALUE_TOO_LARGE] = "MPI_ERR_VALUE_TOO_LARGE: value too large to store",
    [MPI_ERR_SESSION] = "MPI_ERR_SESSION: invalid session",
    [MPI_ERR_ERRHANDLER] = "MPI_ERR_ERRHANDLER: invalid error handler",
    [MPI_ERR_ABI] = "MPI_ERR_ABI: ABI mismatch",
};
#define NCLASS ((int)(sizeof class_text / sizeof class_text[0]))

const char *kumi_err_class_name(int cls)
{
    static char buf[64];
    if (cls >= 0 && cls < NCLASS && class_text[cls]) {
        const char *colon = strchr(class_text[cls], ':');
        size_t n = (size_t)(colon - class_text[cls]);
        if (n >= sizeof buf) n = sizeof buf - 1;
        memcpy(buf, class_text[cls], n);
        buf[n] = 0;
        return buf;
    }
    snprintf(buf, sizeof buf, "error class %d", cls);
    return buf;
}

int kumi_error(int cls, const char *fmt, ...)
{
    unsigned slot = ring_next++ % RING;
    int code = (int)((slot + 1) << CLASS_BITS) | (cls & CLASS_MASK);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ring[slot].msg, sizeof ring[slot].msg, fmt, ap);
    va_end(ap);
    ring[slot].code = code;
    return code;
}

static const char *code_message(int code)
{
    if (code > CLASS_MASK) {
        unsigned slot = (unsigned)(code >> CLASS_BITS) - 1;
        if (slot < RING && ring[slot].code == code) return ring[slot].msg;
    }
    return NULL;
}

static int code_class(int code)
{
    return code < 0 ? -1 : (code & CLASS_MASK);
}

/* ------------------------------------------------------ error handlers */
static struct kumi_errhandler errh_fatal = {
    .magic = KUMI_MAGIC_ERRH, .refcount = 1, .kind = KUMI_ERRH_FATAL, .handle = MPI_ERRORS_ARE_FATAL };
static struct kumi_errhandler errh_abort = {
    .magic = KUMI_MAGIC_ERRH, .refcount = 1, .kind = KUMI_ERRH_ABORT, .handle = MPI_ERRORS_ABORT };
static struct kumi_errhandler errh_return = {
    .magic = KUMI_MAGIC_ERRH, .refcount = 1, .kind = KUMI_ERRH_RETURN, .handle = MPI_ERRORS_RETURN };

struct kumi_errhandler *kumi_errh_fatal = &errh_fatal;

void kumi_errh_init(void)
{
    kumi_predef[(uintptr_t)MPI_ERRORS_ARE_FATAL] = &errh_fatal;
    kumi_predef[(uintptr_t)MPI_ERRORS_ABORT] = &errh_abort;
    kumi_predef[(uintptr_t)MPI_ERRORS_RETURN] = &errh_return;
}

void kumi_errh_retain(struct kumi_errhandler *e) { e->refcount++; }
void kumi_errh_release(struct kumi_errhandler *e)
{
    if (--e->refcount == 0 && e->kind == KUMI_ERRH_USER) {
        e->magic = KUMI_MAGIC_DEAD;
        free(e);
    }
}

static void describe(char *buf, size_t len, int code)
{
    const char *m = code_message(code);
    int cls = code_class(code);
    if (m) snprintf(buf, len, "%s (%s)", m, kumi_err_class_name(cls));
    else if (cls >= 0 && cls < NCLASS && class_text[cls]) snprintf(buf, len, "%s", class_text[cls]);
    else snprintf(buf, len, "error code %d", code);
}

int kumi_err_handle(struct kumi_comm *comm, int code)
{
    if (code == MPI_SUCCESS) return code;
    if (!comm) comm = kumi_state == KUMI_STATE_INIT ? KUMI_COMM_WORLD : NULL;
    struct kumi_errhandler *e = comm ? comm->errh : &errh_fatal;
    switch (e->kind) {
    case KUMI_ERRH_RETURN:
        return code;
    case KUMI_ERRH_USER: {
        MPI_Comm h = comm->handle;
        int c = code;
        e->fn(&h, &c);
        return code;
    }
    default: {
        char buf[MPI_MAX_ERROR_STRING + 64];
        describe(buf, sizeof buf, code);
        kumi_warn("%s", buf);
        kumi_abort_job(code_class(code) > 0 ? code_class(code) : 1, buf);
    }
    }
}

void kumi_err_fatal(const char *fmt, ...)
{
    char buf[MPI_MAX_ERROR_STRING];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    kumi_warn("%s", buf);
    if (kumi_state == KUMI_STATE_INIT) kumi_abort_job(1, buf);
    fflush(stdout);
    _Exit(1);
}

/* ------------------------------------------------------- MPI functions */
int kumi_mpi_error_class(int errorcode, int *errorclass)
{
    int cls = code_class(errorcode);
    if (cls < 0 || !errorclass)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Error_class: invalid error code %d", errorcode));
    *errorclass = cls;
    return MPI_SUCCESS;
}

int kumi_mpi_error_string(int errorcode, char *string, int *resultlen)
{
    if (!string || !resultlen)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Error_string: argument %s is NULL",
                                                string ? "resultlen" : "string"));
    const char *m = code_message(errorcode);
    int cls = code_class(errorcode);
    if (m) snprintf(string, MPI_MAX_ERROR_STRING, "%s", m);
    else if (cls >= 0 && cls < NCLASS && class_text[cls]) snprintf(string, MPI_MAX_ERROR_STRING, "%s", class_text[cls]);
    else return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Error_string: invalid error code %d", errorcode));
    *resultlen = (int)strlen(string);
    return MPI_SUCCESS;
}

int kumi_mpi_comm_create_errhandler(MPI_Comm_errhandler_function *comm_errhandler_fn, MPI_Errhandler *errhandler)
{
    if (!comm_errhandler_fn || !errhandler)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Comm_create_errhandler: argument %s is NULL",
                                                errhandler ? "comm_errhandler_fn" : "errhandler"));
    struct kumi_errhandler *e = calloc(1, sizeof *e);
    if (!e) return kumi_err_handle(NULL, kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_create_errhandler: out of memory"));
    e->magic = KUMI_MAGIC_ERRH;
    e->refcount = 1;
    e->kind = KUMI_ERRH_USER;
    e->fn = comm_errhandler_fn;
    e->handle = (MPI_Errhandler)e;
    *errhandler = e->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_set_errhandler(struct kumi_comm *comm, struct kumi_errhandler *errhandler)
{
    kumi_errh_retain(errhandler);
    kumi_errh_release(comm->errh);
    comm->errh = errhandler;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_get_errhandler(struct kumi_comm *comm, MPI_Errhandler *errhandler)
{
    if (!errhandler) return kumi_error(MPI_ERR_ARG, "MPI_Comm_get_errhandler: argument errhandler is NULL");
    kumi_errh_retain(comm->errh);
    *errhandler = comm->errh->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_errhandler_free(MPI_Errhandler *errhandler)
{
    struct kumi_errhandler *e = errhandler ? kumi_errh_get(*errhandler) : NULL;
    if (!e)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Errhandler_free: argument errhandler is not a valid error handler"));
    if (e->kind != KUMI_ERRH_USER) {
        /* freeing a predefined handler obtained from Comm_get_errhandler is allowed: drop the reference */
        if (e->refcount > 1) e->refcount--;
    } else {
        kumi_errh_release(e);
    }
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_call_errhandler(struct kumi_comm *comm, int errorcode)
{
    kumi_err_handle(comm, errorcode);
    return MPI_SUCCESS;
}
