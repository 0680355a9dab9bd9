/* Error codes, error classes, error strings and error handlers.
 *
 * An error code is its class (0..MPI_ERR_LASTCODE) plus, above that, the slot
 * of a ring of detailed messages: code = ((slot + 1) << 14) | class.  So
 * MPI_Error_class() is code & 0x3fff and MPI_Error_string() gives the
 * detailed message ("MPI_Send: invalid rank 7 in a communicator of size 4")
 * while it is still in the ring, the class's text afterwards.
 *
 * User error classes and codes (MPI_Add_error_class/code) are the values
 * KUMI_ERR_USER_BASE + i, i an index in a table that remembers, for each,
 * its class and its string; they lie above MPI_ERR_LASTCODE and above every
 * ring code, and the attribute MPI_LASTUSEDCODE is the largest one given out.
 * The numbers of removed ones (MPI 5.0 MPI_Remove_error_class/code) are given
 * out again, and a class counts its codes, so no call scans the table.
 *
 * Error handlers have a kind of object (comm, win, file, session) for the
 * user's ones; the predefined ones fit every kind.  An error that belongs to
 * no object goes to MPI_COMM_SELF's handler (MPI 4) once the program has set
 * one there, else to MPI_COMM_WORLD's (what MPI-3 programs expect). */
#include "core/core.h"
#include "core/check.h"
#include <kumi/abi.h>
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
    /* the tools interface (MPI 4.1 sec. 15.3.10) */
    [MPI_T_ERR_CANNOT_INIT] = "MPI_T_ERR_CANNOT_INIT: the tools interface cannot be initialized",
    [MPI_T_ERR_NOT_ACCESSIBLE] = "MPI_T_ERR_NOT_ACCESSIBLE: not accessible now",
    [MPI_T_ERR_NOT_INITIALIZED] = "MPI_T_ERR_NOT_INITIALIZED: the tools interface is not initialized",
    [MPI_T_ERR_NOT_SUPPORTED] = "MPI_T_ERR_NOT_SUPPORTED: not supported",
    [MPI_T_ERR_MEMORY] = "MPI_T_ERR_MEMORY: out of memory",
    [MPI_T_ERR_INVALID] = "MPI_T_ERR_INVALID: invalid use of the tools interface",
    [MPI_T_ERR_INVALID_INDEX] = "MPI_T_ERR_INVALID_INDEX: invalid or out-of-range index",
    [MPI_T_ERR_INVALID_ITEM] = "MPI_T_ERR_INVALID_ITEM: invalid item index of an enumeration",
    [MPI_T_ERR_INVALID_SESSION] = "MPI_T_ERR_INVALID_SESSION: invalid performance variable session",
    [MPI_T_ERR_INVALID_HANDLE] = "MPI_T_ERR_INVALID_HANDLE: invalid handle",
    [MPI_T_ERR_INVALID_NAME] = "MPI_T_ERR_INVALID_NAME: no variable, category or event of that name",
    [MPI_T_ERR_OUT_OF_HANDLES] = "MPI_T_ERR_OUT_OF_HANDLES: no more handles",
    [MPI_T_ERR_OUT_OF_SESSIONS] = "MPI_T_ERR_OUT_OF_SESSIONS: no more sessions",
    [MPI_T_ERR_CVAR_SET_NOT_NOW] = "MPI_T_ERR_CVAR_SET_NOT_NOW: control variable cannot be set now",
    [MPI_T_ERR_CVAR_SET_NEVER] = "MPI_T_ERR_CVAR_SET_NEVER: control variable cannot be set (read-only)",
    [MPI_T_ERR_PVAR_NO_WRITE] = "MPI_T_ERR_PVAR_NO_WRITE: performance variable cannot be written or reset",
    [MPI_T_ERR_PVAR_NO_STARTSTOP] = "MPI_T_ERR_PVAR_NO_STARTSTOP: performance variable cannot be started or stopped",
    [MPI_T_ERR_PVAR_NO_ATOMIC] = "MPI_T_ERR_PVAR_NO_ATOMIC: performance variable cannot be read and reset atomically",
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

/* ------------------------------------------------ user classes and codes */
#define KUMI_ERR_USER_BASE 0x01000000   /* above every ring code ((RING + 1) << 14) */
struct uerr {
    int cls;                /* the class of a code; a class: itself */
    bool is_class;
    bool live;              /* not removed */
    int ncodes;             /* a class: its live codes (MPI_Remove_error_class) */
    char *str;              /* MPI_Add_error_string, or NULL */
};
static struct uerr *uerr;
static int n_uerr, cap_uerr;
/* Indices of removed entries, reused (last removed first) by the next
 * MPI_Add_error_class / _code: a program that adds and removes in a loop
 * keeps its numbers in a small range. */
static int *free_uerr, n_free_uerr, cap_free_uerr;
/* Value of the MPI_LASTUSEDCODE attribute (framework/core/attr.c points at it). */
int kumi_err_lastusedcode = MPI_ERR_LASTCODE;

static struct uerr *user_entry(int code)
{
    if (code < KUMI_ERR_USER_BASE) return NULL;
    int i = code - KUMI_ERR_USER_BASE;
    return i < n_uerr && uerr[i].live ? &uerr[i] : NULL;
}

static int user_new(int cls, bool is_class, int *value)
{
    int i;
    if (n_free_uerr > 0) {
        i = free_uerr[--n_free_uerr];
    } else {
        if (n_uerr == cap_uerr) {
            int n = cap_uerr ? 2 * cap_uerr : 16;
            struct uerr *u = realloc(uerr, sizeof *u * (size_t)n);
            if (!u) return 0;
            uerr = u;
            cap_uerr = n;
        }
        if (n_uerr + 1 > cap_free_uerr) {       /* room to free every entry: removal never fails */
            int *f = realloc(free_uerr, sizeof *f * (size_t)cap_uerr);
            if (!f) return 0;
            free_uerr = f;
            cap_free_uerr = cap_uerr;
        }
        i = n_uerr++;
    }
    int v = KUMI_ERR_USER_BASE + i;
    uerr[i] = (struct uerr){ .cls = is_class ? v : cls, .is_class = is_class, .live = true };
    if (!is_class && cls >= KUMI_ERR_USER_BASE) uerr[cls - KUMI_ERR_USER_BASE].ncodes++;
    if (v > kumi_err_lastusedcode) kumi_err_lastusedcode = v;
    *value = v;
    return 1;
}

/* Removes a live entry (its number may be given out again). */
static void user_remove(struct uerr *u)
{
    if (!u->is_class && u->cls >= KUMI_ERR_USER_BASE) uerr[u->cls - KUMI_ERR_USER_BASE].ncodes--;
    free(u->str);
    u->str = NULL;
    u->live = false;
    free_uerr[n_free_uerr++] = (int)(u - uerr);
}

int kumi_error(int cls, const char *fmt, ...)
{
    if (cls < 0 || cls > CLASS_MASK) return cls;      /* a user class: no room for a message */
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
    if (code > CLASS_MASK && code < KUMI_ERR_USER_BASE) {
        unsigned slot = (unsigned)(code >> CLASS_BITS) - 1;
        if (slot < RING && ring[slot].code == code) return ring[slot].msg;
    }
    return NULL;
}

/* The class of code, or -1 if code is not an error code. */
static int code_class(int code)
{
    if (code < 0) return -1;
    if (code >= KUMI_ERR_USER_BASE) {
        struct uerr *u = user_entry(code);
        return u ? u->cls : -1;
    }
    if (code > CLASS_MASK && (code >> CLASS_BITS) > RING) return -1;
    return code & CLASS_MASK;
}

static bool predefined_class(int cls)
{
    return cls > 0 && cls < NCLASS && class_text[cls];
}

/* ---------------------------------------------- the call an error names */
_Thread_local const char *kumi_call __attribute__((tls_model("initial-exec")));

static bool names_call(const char *m)
{
    return !strncmp(m, "MPI_", 4) || !strncmp(m, "MPIX_", 5) || !strncmp(m, "PMPI_", 5);
}

/* The text of code without its class name, copied to buf (which kumi_error may
 * then write into the ring: the source must not be a ring slot); NULL if code
 * is a user code, not an error, or a ring code whose message is gone. */
static const char *plain_text(int code, char *buf, size_t len)
{
    if (code <= 0 || code >= KUMI_ERR_USER_BASE) return NULL;
    const char *m = code_message(code);
    if (!m) {
        if (code > CLASS_MASK || !predefined_class(code) || code == MPI_ERR_IN_STATUS || code == MPI_ERR_PENDING)
            return NULL;
        m = strchr(class_text[code], ':') + 2;        /* "MPI_ERR_TRUNCATE: message truncated" */
    }
    snprintf(buf, len, "%s", m);
    return buf;
}

int kumi_err_in(int code, const char *call)
{
    char m[MPI_MAX_ERROR_STRING];
    if (code == MPI_SUCCESS || !call || !plain_text(code, m, sizeof m) || names_call(m)) return code;
    return kumi_error(code & CLASS_MASK, "%s: %s", call, m);
}

int kumi_err_via(int code, const char *call, const char *via)
{
    char m[MPI_MAX_ERROR_STRING];
    if (!via || !call || !strcmp(call, via)) return kumi_err_in(code, call);
    if (code == MPI_SUCCESS || !plain_text(code, m, sizeof m)) return code;
    size_t nc = strlen(call), nv = strlen(via);
    if (!strncmp(m, call, nc) && m[nc] == ':') return code;         /* named already */
    const char *t = m;
    if (!strncmp(t, via, nv) && t[nv] == ':' && t[nv + 1] == ' ') t += nv + 2;
    return kumi_error(code & CLASS_MASK, "%s: request of %s: %s", call, via, t);
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
    if (e->kind != KUMI_ERRH_USER) {
        if (e->refcount > 1) e->refcount--;     /* predefined: never below 1 */
        return;
    }
    if (--e->refcount == 0) {
        e->magic = KUMI_MAGIC_DEAD;
        free(e);
    }
}

int kumi_errh_create(int objkind, MPI_Comm_errhandler_function *fn, struct kumi_errhandler **out)
{
    struct kumi_errhandler *e = calloc(1, sizeof *e);
    if (!e) return kumi_error(MPI_ERR_NO_MEM, "out of memory creating an error handler");
    e->magic = KUMI_MAGIC_ERRH;
    e->refcount = 1;
    e->kind = KUMI_ERRH_USER;
    e->objkind = objkind;
    e->fn = fn;
    e->handle = (MPI_Errhandler)e;
    *out = e;
    return MPI_SUCCESS;
}

int kumi_errh_fits(const struct kumi_errhandler *e, int objkind)
{
    return e->kind != KUMI_ERRH_USER || e->objkind == objkind;
}

static void describe(char *buf, size_t len, int code)
{
    const char *m = code_message(code);
    int cls = code_class(code);
    struct uerr *u = user_entry(code);
    if (m) snprintf(buf, len, "%s (%s)", m, kumi_err_class_name(cls));
    else if (u) snprintf(buf, len, "%s (user error %s %d)", u->str ? u->str : "", u->is_class ? "class" : "code", code);
    else if (cls >= 0 && cls < NCLASS && class_text[cls]) snprintf(buf, len, "%s", class_text[cls]);
    else snprintf(buf, len, "error code %d", code);
}

int kumi_errh_invoke(struct kumi_errhandler *e, int objkind, void *handle, int code)
{
    if (code == MPI_SUCCESS) return code;
    switch (e->kind) {
    case KUMI_ERRH_RETURN:
        return code;
    case KUMI_ERRH_USER: {
        int c = code;
        const char *outer = kumi_call;        /* the handler may call MPI */
        if (e->fn_ctx) {
            void *h = handle;
            e->fn_ctx(objkind, &h, &c, e->ctx);
            kumi_call = outer;
            return code;
        }
        switch (objkind) {
        case KUMI_ERRH_OBJ_WIN: {
            MPI_Win h = handle;
            ((MPI_Win_errhandler_function *)e->fn)(&h, &c);
            break;
        }
        case KUMI_ERRH_OBJ_FILE: {
            MPI_File h = handle;
            ((MPI_File_errhandler_function *)e->fn)(&h, &c);
            break;
        }
        case KUMI_ERRH_OBJ_SESSION: {
            MPI_Session h = handle;
            ((MPI_Session_errhandler_function *)e->fn)(&h, &c);
            break;
        }
        default: {
            MPI_Comm h = handle;
            e->fn(&h, &c);
        }
        }
        kumi_call = outer;
        return code;
    }
    default: {
        char buf[MPI_MAX_ERROR_STRING + 64];
        describe(buf, sizeof buf, code);
        kumi_warn("%s", buf);
        int cls = code_class(code);
        kumi_abort_job(cls > 0 && cls <= CLASS_MASK ? cls : 1, buf);
    }
    }
}

int kumi_err_handle(struct kumi_comm *comm, int code)
{
    if (code == MPI_SUCCESS) return code;
    code = kumi_err_in(code, kumi_call);
    if (!comm && kumi_state == KUMI_STATE_INIT)
        comm = KUMI_COMM_SELF->errh != &errh_fatal ? KUMI_COMM_SELF : KUMI_COMM_WORLD;
    if (!comm) return kumi_errh_invoke(&errh_fatal, KUMI_ERRH_OBJ_COMM, NULL, code);
    return kumi_errh_invoke(comm->errh, KUMI_ERRH_OBJ_COMM, comm->handle, code);
}

void kumi_err_fatal(const char *fmt, ...)
{
    char buf[MPI_MAX_ERROR_STRING];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char named[MPI_MAX_ERROR_STRING + 64];
    const char *msg = buf;
    if (kumi_call && !names_call(buf)) {          /* name the call that was in progress */
        snprintf(named, sizeof named, "%s: %s", kumi_call, buf);
        msg = named;
    }
    kumi_warn("%s", msg);
    if (kumi_state == KUMI_STATE_INIT) kumi_abort_job(1, msg);
    fflush(stdout);
    _Exit(1);
}

/* ------------------------------------------------------- MPI functions */
int kumi_mpi_error_class(int errorcode, int *errorclass)
{
    int cls = code_class(errorcode);
    if (cls < 0)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Error_class: invalid error code %d", errorcode));
    if (!errorclass)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Error_class: argument errorclass is NULL"));
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
    struct uerr *u = user_entry(errorcode);
    if (m) snprintf(string, MPI_MAX_ERROR_STRING, "%s", m);
    else if (u) snprintf(string, MPI_MAX_ERROR_STRING, "%s", u->str ? u->str : "");
    else if (cls >= 0 && cls < NCLASS && class_text[cls]) snprintf(string, MPI_MAX_ERROR_STRING, "%s", class_text[cls]);
    else return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Error_string: invalid error code %d", errorcode));
    *resultlen = (int)strlen(string);
    return MPI_SUCCESS;
}

int kumi_mpi_add_error_class(int *errorclass)
{
    if (!errorclass)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Add_error_class: argument errorclass is NULL"));
    if (!user_new(0, true, errorclass))
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_NO_MEM, "MPI_Add_error_class: out of memory"));
    return MPI_SUCCESS;
}

int kumi_mpi_add_error_code(int errorclass, int *errorcode)
{
    struct uerr *u = user_entry(errorclass);
    if (!(u && u->is_class) && !predefined_class(errorclass))
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Add_error_code: argument errorclass %d is not an error class",
                                                errorclass));
    if (!errorcode)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Add_error_code: argument errorcode is NULL"));
    if (!user_new(errorclass, false, errorcode))
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_NO_MEM, "MPI_Add_error_code: out of memory"));
    return MPI_SUCCESS;
}

int kumi_mpi_add_error_string(int errorcode, const char *string)
{
    struct uerr *u = user_entry(errorcode);
    if (!u)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Add_error_string: argument errorcode %d is not a "
                                                "user-defined error code or class", errorcode));
    if (!string)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Add_error_string: argument string is NULL"));
    if (strlen(string) >= MPI_MAX_ERROR_STRING)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Add_error_string: argument string is longer than "
                                                "MPI_MAX_ERROR_STRING-1 (%d) characters", MPI_MAX_ERROR_STRING - 1));
    char *c = strdup(string);
    if (!c) return kumi_err_handle(NULL, kumi_error(MPI_ERR_NO_MEM, "MPI_Add_error_string: out of memory"));
    free(u->str);
    u->str = c;
    return MPI_SUCCESS;
}

int kumi_mpi_remove_error_class(int errorclass)
{
    struct uerr *u = user_entry(errorclass);
    if (!u || !u->is_class)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Remove_error_class: argument errorclass %d is not a "
                                                "user-defined error class", errorclass));
    if (u->ncodes > 0)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Remove_error_class: error class %d still has %d "
                                                "error code%s (remove them first with MPI_Remove_error_code)",
                                                errorclass, u->ncodes, u->ncodes == 1 ? "" : "s"));
    user_remove(u);
    return MPI_SUCCESS;
}

int kumi_mpi_remove_error_code(int errorcode)
{
    struct uerr *u = user_entry(errorcode);
    if (!u || u->is_class)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Remove_error_code: argument errorcode %d is not a "
                                                "user-defined error code", errorcode));
    user_remove(u);
    return MPI_SUCCESS;
}

int kumi_mpi_remove_error_string(int errorcode)
{
    struct uerr *u = user_entry(errorcode);
    if (!u)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Remove_error_string: argument errorcode %d is not a "
                                                "user-defined error code or class", errorcode));
    free(u->str);
    u->str = NULL;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_create_errhandler(MPI_Comm_errhandler_function *comm_errhandler_fn, MPI_Errhandler *errhandler)
{
    if (!comm_errhandler_fn || !errhandler)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Comm_create_errhandler: argument %s is NULL",
                                                errhandler ? "comm_errhandler_fn" : "errhandler"));
    struct kumi_errhandler *e = NULL;
    int rc = kumi_errh_create(KUMI_ERRH_OBJ_COMM, comm_errhandler_fn, &e);
    if (rc) return kumi_err_handle(NULL, rc);
    *errhandler = e->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_set_errhandler(struct kumi_comm *comm, struct kumi_errhandler *errhandler)
{
    if (!kumi_errh_fits(errhandler, KUMI_ERRH_OBJ_COMM))
        return kumi_error(MPI_ERR_ARG, "MPI_Comm_set_errhandler: argument errhandler was not created for communicators");
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

/* Marks the handler for deallocation: it goes when the last object using it
 * does (each object holds a reference; so does each Comm_get_errhandler). */
int kumi_mpi_errhandler_free(MPI_Errhandler *errhandler)
{
    struct kumi_errhandler *e = errhandler ? kumi_errh_get(*errhandler) : NULL;
    if (!e)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Errhandler_free: argument errhandler is not a valid error handler"));
    kumi_errh_release(e);      /* predefined handlers never go */
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}

/* Returns MPI_SUCCESS when the handler returns (MPI 4.1 sec. 9.3.5). */
int kumi_mpi_comm_call_errhandler(struct kumi_comm *comm, int errorcode)
{
    kumi_errh_invoke(comm->errh, KUMI_ERRH_OBJ_COMM, comm->handle, errorcode);
    return MPI_SUCCESS;
}

/* kumi/abi.h: a user error handler with a context, for the foreign-ABI shims */
_Static_assert((int)KUMI_ABI_ERRH_COMM == (int)KUMI_ERRH_OBJ_COMM && (int)KUMI_ABI_ERRH_WIN == (int)KUMI_ERRH_OBJ_WIN &&
               (int)KUMI_ABI_ERRH_FILE == (int)KUMI_ERRH_OBJ_FILE &&
               (int)KUMI_ABI_ERRH_SESSION == (int)KUMI_ERRH_OBJ_SESSION,
               "kumi/abi.h's object kinds are the error handler's");
int kumi_abi_errhandler_create(int objkind, kumi_abi_errhandler_fn *fn, void *ctx, MPI_Errhandler *errhandler)
{
    static const char fname[] = "kumi_abi_errhandler_create";
    KUMI_CHECK_STATE(fname);
    kumi_lock();
    int rc;
    struct kumi_errhandler *e = NULL;
    if (objkind < KUMI_ABI_ERRH_COMM || objkind > KUMI_ABI_ERRH_SESSION)
        rc = kumi_error(MPI_ERR_ARG, "%s: argument objkind is %d, not one of KUMI_ABI_ERRH_COMM .. _SESSION",
                        fname, objkind);
    else if (!fn || !errhandler)
        rc = kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fname, fn ? "errhandler" : "fn");
    else if ((rc = kumi_errh_create(objkind, NULL, &e)) == MPI_SUCCESS) {
        e->fn_ctx = fn;
        e->ctx = ctx;
        *errhandler = e->handle;
    }
    if (rc) rc = KUMI_ERR_OUT(kumi_err_handle(NULL, rc));
    kumi_unlock();
    return rc;
}

int (*kumi_err_out_hook)(int code);

void kumi_abi_set_err_out(int (*fn)(int code))
{
    __atomic_store_n(&kumi_err_out_hook, fn, __ATOMIC_RELEASE);
}
