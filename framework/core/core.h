/* Core objects of libmpi (private to the framework; components never see this).
 *
 * Handles: a predefined handle is the standard ABI's small constant (< 0x1000)
 * and is resolved through one table; any other handle is a pointer to the
 * object.  Every object starts with a magic number so that a stale or wrong
 * handle is reported (MPI_ERR_COMM, ...) instead of crashing. */
#ifndef KUMI_CORE_H
#define KUMI_CORE_H

#include "config.h"
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/coll.h>

#define KUMI_PREDEF_MAX 0x1000
#include "core/ids.h"

enum kumi_magic {
    KUMI_MAGIC_COMM  = 0x4b434f4d,  /* "KCOM" */
    KUMI_MAGIC_DT    = 0x4b445459,
    KUMI_MAGIC_OP    = 0x4b4f5053,
    KUMI_MAGIC_ERRH  = 0x4b455252,
    KUMI_MAGIC_REQ   = 0x4b524551,
    KUMI_MAGIC_MSG   = 0x4b4d5347,
    KUMI_MAGIC_GROUP = 0x4b475250,
    KUMI_MAGIC_INFO  = 0x4b494e46,
    KUMI_MAGIC_SESSION = 0x4b534553,
    KUMI_MAGIC_WIN   = 0x4b57494e,  /* "KWIN" */
    KUMI_MAGIC_DEAD  = 0x44454144
};

/* Table of predefined objects, indexed by the handle's value. */
extern void *kumi_predef[KUMI_PREDEF_MAX];

static inline void *kumi_handle_obj(const void *h, uint32_t magic)
{
    uintptr_t v = (uintptr_t)h;
    void *o;
    if (v < KUMI_PREDEF_MAX) o = kumi_predef[v];
    else if (v & 7) return NULL;
    else o = (void *)h;
    if (!o || *(const uint32_t *)o != magic) return NULL;
    return o;
}

/* ---------------------------------------------------------------- errors */
struct kumi_errhandler {
    uint32_t magic;
    int refcount;
    int kind;                       /* KUMI_ERRH_FATAL, _ABORT, _RETURN, _USER */
    MPI_Comm_errhandler_function *fn;
    /* or one with a context (kumi/abi.h: kumi_abi_errhandler_create, for the foreign-ABI shims) */
    void (*fn_ctx)(int objkind, void *handle, int *errcode, void *ctx);
    void *ctx;
    MPI_Errhandler handle;
    int objkind;                    /* user handlers: KUMI_ERRH_OBJ_COMM, _WIN, _FILE, _SESSION;
                                       predefined ones: KUMI_ERRH_OBJ_ANY */
};
enum { KUMI_ERRH_FATAL, KUMI_ERRH_ABORT, KUMI_ERRH_RETURN, KUMI_ERRH_USER };
enum { KUMI_ERRH_OBJ_ANY = 0, KUMI_ERRH_OBJ_COMM, KUMI_ERRH_OBJ_WIN, KUMI_ERRH_OBJ_FILE, KUMI_ERRH_OBJ_SESSION };

/* ---------------------------------------------------------------- status
 * MPI_Status (32 bytes, standard ABI) as the library fills it: MPI_SOURCE,
 * MPI_TAG, MPI_ERROR as usual; MPI_internal[0], [1] the received byte count
 * (64 bits, low word first); MPI_internal[2] 1 if cancelled. */
static inline void kumi_status_set_bytes(MPI_Status *st, uint64_t n)
{
    st->MPI_internal[0] = (int)(uint32_t)(n & 0xffffffffu);
    st->MPI_internal[1] = (int)(uint32_t)(n >> 32);
}
static inline uint64_t kumi_status_bytes(const MPI_Status *st)
{
    return (uint64_t)(uint32_t)st->MPI_internal[0] | ((uint64_t)(uint32_t)st->MPI_internal[1] << 32);
}
static inline int kumi_status_cancelled(const MPI_Status *st) { return st->MPI_internal[2] != 0; }
/* The empty status: source ANY_SOURCE, tag ANY_TAG, no error, count 0. */
void kumi_status_empty(MPI_Status *st);

/* ---------------------------------------------------------------- groups */
/* (framework/core/group.c) */
struct kumi_session;

/* A buffer for buffered-mode sends: the MPI process's (MPI_Buffer_attach),
 * a session's (MPI_Session_attach_buffer) or a communicator's
 * (MPI_Comm_attach_buffer).  Kept by request/bsend.c; all zero: none
 * attached.  A communicator or session holds one inline. */
struct kumi_bbuf {
    char *base;                     /* user memory (NULL with size 0 allowed) */
    size_t size;
    uint8_t state;                  /* 0 none, 1 user memory, 2 MPI_BUFFER_AUTOMATIC */
    int nsegs;                      /* buffered messages not yet sent */
    uint64_t seq;                   /* messages ever buffered here (flush marks) */
    struct kumi_bseg *segs;         /* those messages (request/bsend.c) */
    void *flushes;                  /* MPI_*_iflush requests waiting (request/bsend.c) */
};

struct kumi_group {
    uint32_t magic;                 /* KUMI_MAGIC_GROUP */
    int refcount;
    int size;
    int rank;                       /* this process's rank in the group, or MPI_UNDEFINED */
    int *world;                     /* group rank -> world rank (NULL only for an empty group) */
    bool predefined;                /* MPI_GROUP_EMPTY */
    MPI_Group handle;
    struct kumi_session *session;   /* the session it derives from (a reference), or NULL */
};
static inline struct kumi_group *kumi_group_get(MPI_Group h) { return kumi_handle_obj(h, KUMI_MAGIC_GROUP); }
struct kumi_comm;
void kumi_group_init(void);                 /* registers MPI_GROUP_EMPTY */
/* New group of world ranks world[0..n) (takes ownership; n == 0: MPI_GROUP_EMPTY
 * with a reference); NULL when out of memory. */
struct kumi_group *kumi_group_make(int n, int *world);
void kumi_group_release(struct kumi_group *g);
struct kumi_group *kumi_group_of_comm(const struct kumi_comm *c);   /* local group */
/* g (may be NULL) derives from session s (NULL: none): it takes a reference. */
struct kumi_group *kumi_group_derived(struct kumi_group *g, struct kumi_session *s);
int kumi_group_rank_of(const struct kumi_group *g, int world_rank); /* or MPI_UNDEFINED */

/* Attributes and info objects (framework/core/attr.c, info.c). */
struct kumi_attr;
struct kumi_info;

/* --------------------------------------------------------- communicators */
#define KUMI_COLL_NBLOCKING 17        /* barrier .. exscan: the first fields of struct kumi_coll_fns */
struct kumi_comm {
    uint32_t magic;
    int refcount;
    int rank, size;
    int *world;                     /* comm rank -> world rank (NULL: identity) */
    int32_t ctx;                    /* point-to-point context; ctx+1 for collectives */
    struct kumi_errhandler *errh;
    struct kumi_coll_fns coll;      /* chosen collective operations */
    struct kumi_coll_fns coll_next; /* per operation, the best of the other components' (kumi_comm_coll_next) */
    /* the components (their ops tables) that provide each blocking collective in coll and
     * coll_next, in the order of struct kumi_coll_fns (barrier .. exscan): kumi_coll_pace_hint */
    const struct kumi_coll_ops *coll_by[2][KUMI_COLL_NBLOCKING];
    MPI_Comm handle;                /* what the user holds */
    char name[MPI_MAX_OBJECT_NAME];
    bool predefined;
    /* Intercommunicators: rank/size/world describe the local group; point-to-
     * point addresses the remote group (kumi_comm_peer_world). */
    bool inter;
    int remote_size;
    int *remote_world;              /* remote rank -> world rank */
    struct kumi_comm *local_comm;   /* intracommunicator of the local group (collectives), or NULL */
    void *topo;                     /* topology (framework/core/topo.c), NULL if none */
    struct kumi_attr *attrs;        /* attributes (framework/core/attr.c) */
    struct kumi_info *info;         /* hints set with Comm_set_info / dup_with_info, NULL if none */
    uint32_t nbc_seq, pcoll_seq;    /* non-blocking / persistent collectives issued (tags, sched.c) */
    uint32_t cad_seq;               /* CAD schedules made (mpi-ext.h) */
    struct kumi_sched *scheds;      /* schedules alive on this communicator (sched.c) */
    bool sub;                       /* made by a component (kumi_comm_sub_create) */
    struct kumi_bbuf bbuf;          /* MPI_Comm_attach_buffer (request/bsend.c) */
    struct kumi_session *session;   /* the session it derives from (a reference), or NULL */
    int8_t accel_pipe;              /* pipelined device collectives agreed: 0 not asked yet, 1, -1 (mpi/coll_accel.c) */
};

extern struct kumi_comm kumi_comm_world_obj, kumi_comm_self_obj;
#define KUMI_COMM_WORLD (&kumi_comm_world_obj)
#define KUMI_COMM_SELF  (&kumi_comm_self_obj)

static inline struct kumi_comm *kumi_comm_get(MPI_Comm h) { return kumi_handle_obj(h, KUMI_MAGIC_COMM); }
static inline int kumi_comm_world_rank(const struct kumi_comm *c, int r) { return c->world ? c->world[r] : r; }
/* World rank of the peer that point-to-point rank r addresses (remote group of an intercommunicator). */
static inline int kumi_comm_peer_world(const struct kumi_comm *c, int r)
{
    return c->inter ? c->remote_world[r] : kumi_comm_world_rank(c, r);
}
/* Number of ranks point-to-point can address (remote size of an intercommunicator). */
static inline int kumi_comm_peer_size(const struct kumi_comm *c) { return c->inter ? c->remote_size : c->size; }

/* ------------------------------------------------------------- datatypes */
/* Basic element kinds, for reductions and MPI_Get_elements. */
enum kumi_basic {
    KUMI_B_NONE = 0,
    KUMI_B_CHAR, KUMI_B_SCHAR, KUMI_B_UCHAR, KUMI_B_SHORT, KUMI_B_USHORT, KUMI_B_INT,
    KUMI_B_UINT, KUMI_B_LONG, KUMI_B_ULONG, KUMI_B_LLONG, KUMI_B_ULLONG,
    KUMI_B_INT8, KUMI_B_UINT8, KUMI_B_INT16, KUMI_B_UINT16, KUMI_B_INT32, KUMI_B_UINT32,
    KUMI_B_INT64, KUMI_B_UINT64, KUMI_B_AINT, KUMI_B_COUNT, KUMI_B_OFFSET,
    KUMI_B_WCHAR, KUMI_B_BOOL, KUMI_B_FLOAT, KUMI_B_DOUBLE, KUMI_B_LDOUBLE,
    KUMI_B_CFLOAT, KUMI_B_CDOUBLE, KUMI_B_CLDOUBLE, KUMI_B_BYTE, KUMI_B_PACKED,
    /* Fortran kinds (C-side sizes of a gfortran build) */
    KUMI_B_FLOGICAL, KUMI_B_FINTEGER, KUMI_B_FREAL, KUMI_B_FDOUBLE, KUMI_B_FCOMPLEX,
    KUMI_B_FDCOMPLEX, KUMI_B_FCHARACTER,
    KUMI_B_FLOGICAL1, KUMI_B_FLOGICAL2, KUMI_B_FLOGICAL4, KUMI_B_FLOGICAL8, KUMI_B_FLOGICAL16,
    /* pair types for MINLOC / MAXLOC */
    KUMI_B_FLOAT_INT, KUMI_B_DOUBLE_INT, KUMI_B_LONG_INT, KUMI_B_2INT, KUMI_B_SHORT_INT,
    KUMI_B_LDOUBLE_INT, KUMI_B_2REAL, KUMI_B_2DOUBLE, KUMI_B_2INTEGER,
    KUMI_B_COUNT_
};

struct kumi_dt {
    uint32_t magic;
    int refcount;
    enum kumi_basic basic;          /* predefined: its kind; derived: KUMI_B_NONE */
    size_t size;                    /* bytes of data in one element */
    MPI_Aint lb, extent;
    MPI_Aint true_lb, true_extent;
    size_t nelem;                   /* basic elements per element (Get_elements) */
    bool contig;                    /* data of count elements is one block of count*size bytes */
    bool predefined;
    bool committed;
    struct kumi_attr *attrs;        /* attributes (framework/core/attr.c) */
    MPI_Datatype handle;
    const char *name;
    /* derived types (MPI_Type_contiguous, MPI_Type_dup so far) */
    int combiner;                   /* MPI_COMBINER_NAMED for predefined types */
    struct kumi_dt *base;           /* the old type (first of types[], which holds the reference) */
    size_t base_count;              /* base elements per element */
    /* The pack engine (framework/core/dt_pack.c): the layout of one element,
     * flattened at construction into segments packed one after another;
     * element k of a buffer is at buf + k * extent. */
    struct kumi_dt_seg *segs;
    size_t nsegs;
    struct kumi_dt_seg *osegs;      /* for reductions: runs of whole basic elements (pairs
                                       with their padding); == segs unless basic_elem is a pair */
    size_t nosegs;
    struct kumi_dt_run *runs;       /* type signature: basic elements in packed order */
    size_t nruns;
    size_t xsize;                   /* bytes of one element in "external32" */
    enum kumi_basic basic_elem;     /* the one basic kind of all elements (predefined ops), or NONE */
    size_t align;                   /* alignment of the most aligned basic element */
    bool explicit_bounds;           /* lb/ub set by MPI_Type_create_resized (here or in a part) */
    bool large;                     /* made by a large-count (_c) constructor */
    /* constructor arguments (MPI_Type_get_envelope / get_contents) */
    int nints, naddrs, nlarge, ntypes;
    int *ints;
    MPI_Aint *addrs;
    MPI_Count *lcounts;
    struct kumi_dt **types;         /* retained */
};

/* A segment: count blocks of len bytes, block i at off + i * stride from the
 * element's address. */
struct kumi_dt_seg { MPI_Aint off; size_t len; size_t count; MPI_Aint stride; };
/* A run of n basic elements of one predefined (non-pair) type, index leaf
 * in the predefined table (for external32 and MPI_Get_elements). */
struct kumi_dt_run { uint32_t leaf; uint32_t esize; size_t n; };

static inline struct kumi_dt *kumi_dt_get(MPI_Datatype h) { return kumi_handle_obj(h, KUMI_MAGIC_DT); }
size_t kumi_dt_predefined_size(MPI_Datatype h);   /* from the table, also before MPI_Init; 0: none */

/* Pack count elements of dt from buf into out (contiguous, size*count bytes),
 * and the reverse.  Predefined and contiguous types are a memcpy. */
void kumi_dt_pack(const struct kumi_dt *dt, const void *buf, size_t count, void *out);
void kumi_dt_unpack(const struct kumi_dt *dt, const void *in, size_t count, void *buf);

void kumi_dt_init(void);          /* registers the predefined datatypes */

/* Pack / unpack the packed bytes [off, off+len) of count elements (partial
 * ranges for pipelining and short receives). */
void kumi_dt_pack_range(const struct kumi_dt *dt, const void *buf, size_t count, size_t off, size_t len, void *out);
void kumi_dt_unpack_range(const struct kumi_dt *dt, const void *in, size_t count, size_t off, size_t len, void *buf);
/* References held by requests and derived datatypes. */
void kumi_dt_retain(struct kumi_dt *dt);
void kumi_dt_release(struct kumi_dt *dt);
/* The predefined datatype all of dt's basic elements are (dt itself if
 * predefined), or MPI_DATATYPE_NULL when they are of several kinds. */
MPI_Datatype kumi_dt_basic_handle(const struct kumi_dt *dt);
/* Complete basic elements in the first bytes of a message of type dt. */
int64_t kumi_dt_elements(const struct kumi_dt *dt, uint64_t bytes);
/* Bytes of the first n basic elements of a message of type dt. */
uint64_t kumi_dt_elements_bytes(const struct kumi_dt *dt, uint64_t n);
/* Native packed <-> external32 (dir 0: to external32) of count elements of dt. */
void kumi_dt_external32(const struct kumi_dt *dt, const unsigned char *in, unsigned char *out, size_t count, int dir);
/* true when dt's external32 bytes are its native packed bytes (raw bytes only). */
bool kumi_dt_external32_native(const struct kumi_dt *dt);

/* ------------------------------------------------------------ operations */
struct kumi_op {
    uint32_t magic;
    int refcount;
    int id;                         /* predefined: low byte of its handle; user: 0 */
    bool commute;
    bool predefined;
    MPI_User_function *fn;          /* user function (int count) */
    MPI_User_function_c *fn_c;      /* or large-count one */
    /* or one with a context (kumi/abi.h: kumi_abi_op_create, for the foreign-ABI shims) */
    void (*fn_ctx)(void *invec, void *inoutvec, MPI_Count len, MPI_Datatype dt, void *ctx);
    void *ctx;
    MPI_Op handle;
};
static inline struct kumi_op *kumi_op_get(MPI_Op h) { return kumi_handle_obj(h, KUMI_MAGIC_OP); }
/* 1 if predefined op is defined for dt (user ops: always 1). */
int kumi_op_valid_for(const struct kumi_op *op, const struct kumi_dt *dt);
/* A user-defined op (one reference, the caller's; kumi_op_release drops it):
 * fn or fn_c, or neither and the caller sets fn_ctx and ctx; NULL without memory. */
struct kumi_op *kumi_op_new(MPI_User_function *fn, MPI_User_function_c *fn_c, bool commute);
/* Drop a reference to a user op (MPI_Op_free drops the user's). */
void kumi_op_release(struct kumi_op *op);
int kumi_op_apply(const struct kumi_op *op, const void *in, void *inout, size_t count,
                  const struct kumi_dt *dt);
/* Register the predefined ops in kumi_predef (called once by MPI_Init). */
void kumi_op_init(void);

/* ------------------------------------------------------------ attributes */
/* Hooks the object code calls (framework/core/attr.c implements them):
 * copy callbacks when a communicator/datatype is duplicated, delete callbacks
 * when it is freed (and at MPI_Finalize: MPI_COMM_SELF first, then WORLD). */
int kumi_attr_comm_dup(struct kumi_comm *oldc, struct kumi_comm *newc);
int kumi_attr_comm_free(struct kumi_comm *c);
int kumi_attr_type_dup(struct kumi_dt *oldt, struct kumi_dt *newt);
int kumi_attr_type_free(struct kumi_dt *t);
/* First thing in MPI_Finalize: delete the attributes of MPI_COMM_SELF, then
 * of MPI_COMM_WORLD (delete callbacks run while MPI is still usable). */
int kumi_attr_finalize(void);

/* The machinery behind them, for any object kind (windows plug in here:
 * MPI_Win_set_attr(win, k, v) is kumi_attr_set("MPI_Win_set_attr",
 * &w->attrs, KUMI_ATTR_WIN, w->handle, k, v)).  Functions return MPI error
 * codes whose message names fn; they do not call error handlers.  Keyvals of
 * one kind cannot be used with another kind (MPI_ERR_KEYVAL).  Copy/delete
 * functions are the standard's typed callbacks (MPI_Comm_copy_attr_function,
 * MPI_Type_..., MPI_Win_...) cast to a generic pointer; the ABI constants 0
 * (NULL_COPY / NULL_DELETE) and 1 (DUP_FN) are understood.  The predefined
 * window keyvals (MPI_WIN_BASE ... MPI_WIN_MODEL) are the window code's to
 * answer before calling kumi_attr_get; set/delete/free refuse them. */
enum { KUMI_ATTR_COMM = 1, KUMI_ATTR_TYPE, KUMI_ATTR_WIN };
typedef void (*kumi_attr_fn)(void);
int kumi_attr_keyval_create(const char *fn, int kind, kumi_attr_fn copy_fn, kumi_attr_fn delete_fn,
                            void *extra_state, int *keyval);
int kumi_attr_keyval_free(const char *fn, int kind, int *keyval);
int kumi_attr_set(const char *fn, struct kumi_attr **list, int kind, void *handle, int keyval, void *val);
/* *flag = 0 when keyval has no value on the object. */
int kumi_attr_get(const char *fn, struct kumi_attr *list, int kind, int keyval, void **val, int *flag);
int kumi_attr_delete(const char *fn, struct kumi_attr **list, int kind, void *handle, int keyval);
/* Copy callbacks of the attributes of old (handle oldh) into *to (empty); on failure *to is left empty. */
int kumi_attr_copy_all(struct kumi_attr *from, int kind, void *oldh, struct kumi_attr **to);
/* Delete callbacks of all attributes, most recently set first; stops at the first failing one
 * (the attributes not yet deleted stay). */
int kumi_attr_delete_all(struct kumi_attr **list, int kind, void *handle);
/* 1 for the predefined communicator keyvals (MPI_TAG_UB ... MPI_UNIVERSE_SIZE), whose
 * Comm_get_attr value is a pointer to an int (Fortran bindings return the int itself). */
int kumi_attr_is_predefined(int keyval);

/* ------------------------------------------------------------------ info */
/* (framework/core/info.c) Opaque; an MPI_Info handle is a struct kumi_info *
 * (MPI_INFO_ENV: the predefined object, filled at first use). */
struct kumi_info *kumi_info_get(MPI_Info h);      /* NULL: MPI_INFO_NULL or not an info object */
MPI_Info kumi_info_handle(const struct kumi_info *i);
/* A new object with in's keys and values (in NULL: an empty one); NULL when out of memory. */
struct kumi_info *kumi_info_dup(const struct kumi_info *in);
void kumi_info_retain(struct kumi_info *i);
void kumi_info_release(struct kumi_info *i);    /* NULL is ignored */
/* The value of key, or NULL (valid until the object changes). */
const char *kumi_info_value(const struct kumi_info *i, const char *key);
/* Set key to value (MPI error code: MPI_ERR_INFO_KEY / _VALUE / MPI_ERR_NO_MEM). */
int kumi_info_set_value(struct kumi_info *i, const char *key, const char *value);

/* ---------------------------------------------------------------- accel
 * (core/accel.c) The accel component in use (kumi/accel.h), chosen at first
 * call after MPI_Init, or at start-up (kumi_accel_choose_early); NULL when
 * none is usable (the usual case). */
struct kumi_accel_ops;
const struct kumi_accel_ops *kumi_accel(void);
void kumi_accel_choose_early(void);      /* at start-up, before the fence (kumi_runtime_start) */
const char *kumi_accel_name(void);
void kumi_accel_finalize(void);
void kumi_accel_register_params(void);   /* kumi_base_accel_chunk (pipelined staging) */
/* Device buffers in host MPI calls: kumi_accel_on is true only while an
 * accel component is in use, so the point-to-point paths test one flag
 * (predicted false) and nothing else.  kumi_stage_begin: an MPI error code,
 * or MPI_SUCCESS with s->host NULL when buf is not device memory (nothing to
 * do), else s->buf is a host copy to use in its place (filled from the
 * device if fill).
 * kumi_stage_end copies it back to the device if copy_back, and frees it. */
extern bool kumi_accel_on;
struct kumi_stage {
    void *buf, *host, *dev;
    MPI_Aint lo;
    size_t len;
    int cached;
    bool fill;                 /* read from the device at the start (persistent: every start) */
    bool back;                 /* chained entries: copy back when the call succeeds */
    bool lazy;                 /* a send's copy, not filled yet: the request layer fills it
                                  chunk by chunk while the message goes (request/req_accel.c) */
    size_t ondev;              /* a receive's copy: its first ondev bytes are on the device
                                  already (req_accel.c); the next flush starts there */
    void *xmem;                /* the request layer's memory for this copy (free()d with it) */
    struct kumi_stage *next;   /* more buffers of the same call (a collective), malloc'd */
};
int kumi_stage_begin(const char *fn, struct kumi_stage *s, const void *buf, MPI_Count count, const struct kumi_dt *dt,
                     bool fill);
/* The same for the bytes [buf + lo, buf + lo + len) (s->buf is then the
 * host address that stands for buf itself). */
int kumi_stage_span(const char *fn, struct kumi_stage *s, const void *buf, MPI_Aint lo, size_t len, bool fill);
/* kumi_stage_end: ends s (copied back if copy_back) and frees every entry
 * chained to it, copying nothing back.  kumi_stage_end_all: a call that
 * staged several buffers has ended (ok: successfully): s and every chained
 * entry are copied back if ok and their back flag; the first error. */
int kumi_stage_end(struct kumi_stage *s, bool copy_back);
int kumi_stage_end_all(struct kumi_stage *s, bool ok);
/* A persistent request's copies, kept from its init to its free: refill
 * before each start (the entries with fill), copy back after each
 * successful completion (those with back; the first at most first_len bytes). */
int kumi_stage_refill(struct kumi_stage *s);
int kumi_stage_flush(struct kumi_stage *s, size_t first_len);
bool kumi_accel_is_device(const void *buf);
/* The pinned staging buffer and the pipelines' slots and streams made now
 * if they are not yet (MPIX_Gpu_start: before a persistent kernel runs, whose
 * proxy stages its device buffers with them). */
void kumi_accel_warm(void);
/* Copies between device memory and host memory that is not pinned: in
 * pipelined chunks where the component has asynchronous copies and n is
 * above kumi_base_accel_chunk, else one synchronous copy; 0 or -1. */
int kumi_accel_copy_in(void *dst, const void *src, size_t n);
int kumi_accel_copy_out(void *dst, const void *src, size_t n);
/* Device memory of the library's, at least n bytes, held until
 * kumi_accel_scratch_give (one allocation kept for the next use; NULL: busy,
 * or the component cannot allocate or copy device to device).
 * kumi_accel_copy_dtod: device to device (synchronous); 0 or -1. */
void *kumi_accel_scratch_take(size_t n);
void kumi_accel_scratch_give(void *p);
int kumi_accel_copy_dtod(void *dst, const void *src, size_t n);
/* A send's copy that the request layer fills while the message goes
 * (lazy_ok: a non-persistent send of a contiguous type): s->lazy is set
 * instead of filling where the copy is above the pinned cache's size and the
 * component has asynchronous copies; else as kumi_stage_begin(fill). */
int kumi_stage_begin_send(const char *fn, struct kumi_stage *s, const void *buf, MPI_Count count,
                          const struct kumi_dt *dt, bool lazy_ok);
/* Pipelines of asynchronous copies through KUMI_ACCEL_NSLOT pinned slots of
 * one chunk each, for the request layer's overlap of copies with transfers
 * (req_accel.c).  kumi_accel_pipe_take(which): pipeline 1 (sends) or 2
 * (receives), held until kumi_accel_pipe_give (which waits for its copies);
 * NULL when busy or unavailable.  Jobs finish in the order issued:
 *   pipe_in(p, dst, src, n)   device src -> host dst (n <= chunk) through the
 *                             next slot; 1 issued, 0 no slot free, -1 error
 *   pipe_poll(p)              the oldest job if done (an in-job's bytes are
 *                             then copied to its dst): its bytes, 0 not yet
 *                             or none, -1 error; never blocks
 *   pipe_out(p, dst, src, n)  host src -> device dst (any n: slot by slot,
 *                             waiting for the oldest slot when none is free)
 *   pipe_drain(p)             waits for every job; 0 or -1 */
#define KUMI_ACCEL_NSLOT 4
struct kumi_accel_pipe;
struct kumi_accel_pipe *kumi_accel_pipe_take(int which, size_t n);
size_t kumi_accel_pipe_chunk(const struct kumi_accel_pipe *p);
int kumi_accel_pipe_in(struct kumi_accel_pipe *p, void *dst, const void *src, size_t n);
long long kumi_accel_pipe_poll(struct kumi_accel_pipe *p);
int kumi_accel_pipe_out(struct kumi_accel_pipe *p, void *dst, const void *src, size_t n);
int kumi_accel_pipe_drain(struct kumi_accel_pipe *p);
void kumi_accel_pipe_give(struct kumi_accel_pipe *p);

/* ---------------------------------------------------------------- errors */
/* Invoke comm's error handler for code (a return of a failed MPI call);
 * returns code for ERRORS_RETURN and user handlers. comm NULL: COMM_SELF. */
int kumi_err_handle(struct kumi_comm *comm, int code);
/* Fatal errors with no comm (e.g. called before MPI_Init). */
void kumi_err_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
const char *kumi_err_class_name(int cls);
void kumi_errh_init(void);        /* registers the predefined error handlers */
void kumi_errh_retain(struct kumi_errhandler *e);
void kumi_errh_release(struct kumi_errhandler *e);
extern struct kumi_errhandler *kumi_errh_fatal;
/* A user error handler for objects of kind objkind (KUMI_ERRH_OBJ_*): fn is the
 * standard's MPI_Win_errhandler_function etc. cast to the comm one. */
int kumi_errh_create(int objkind, MPI_Comm_errhandler_function *fn, struct kumi_errhandler **out);
/* Invoke handler e of an object of kind objkind whose handle is handle (an
 * MPI_Win, MPI_File, MPI_Session or MPI_Comm) for code; returns code (or does
 * not return: fatal / abort).  kumi_err_handle is this for communicators. */
int kumi_errh_invoke(struct kumi_errhandler *e, int objkind, void *handle, int code);
/* 1 if e may be set on an object of kind objkind (predefined, or created for that kind). */
int kumi_errh_fits(const struct kumi_errhandler *e, int objkind);

/* Every error the user sees names the MPI call the user made (issue 15 item 8).
 * Components and lower layers raise "coll/tuned: out of memory"; the name is
 * added on the way out:
 *   kumi_call      the call this thread is in (or made last): set by every
 *                  generated entry point before it calls the implementation
 *                  (one store; the argument checks before it name the call
 *                  themselves); NULL in the progress thread; a user callback
 *                  that may call MPI runs inside KUMI_CALLBACK, which puts the
 *                  outer name back.
 *   kumi_err_in    code as the user sees it from call: itself when its message
 *                  already starts with a call's name ("MPI_..."), else a new
 *                  code of its class saying "call: message" (a bare class gets
 *                  its class text); user codes are left alone.
 *   kumi_err_via   an error of a request that call via made, surfacing in call
 *                  (MPI_Wait): "call: request of via: message".
 * kumi_err_handle, kumi_err_fatal and kumi_abort_job name what reaches them
 * after kumi_call; the bindings' error paths name with their own kfn. */
extern _Thread_local const char *kumi_call __attribute__((tls_model("initial-exec")));
int kumi_err_in(int code, const char *call);
int kumi_err_via(int code, const char *call, const char *via);
#define KUMI_CALLBACK(stmt) do { const char *kumi_call_outer_ = kumi_call; stmt; kumi_call = kumi_call_outer_; } while (0)

/* --------------------------------------------------------------- library */
enum kumi_state { KUMI_STATE_PRE = 0, KUMI_STATE_INIT, KUMI_STATE_FINALIZED };
extern enum kumi_state kumi_state;
extern int kumi_thread_level;

/* The library lock (framework/core/lock.c), taken by the entry points only
 * at MPI_THREAD_MULTIPLE (and while a checkpoint is requested).  Blocking
 * waits release it while they yield or sleep:
 *   int d = kumi_lock_release_all(); ...; kumi_lock_reacquire(d);
 * kumi_mt: the lock is on for good (MPI_THREAD_MULTIPLE, the progress
 * thread, GPU proxies).  Jobs with checkpoints (mpiexec --ckpt) run with the
 * lock off until a checkpoint is requested (lock.c, "Checkpoints"): entry
 * points count the calls inside the library (kumi_lock_free_in, and this
 * thread's in kumi_lock_free_depth) and take the lock only while
 * kumi_lock_raised.  The two flags share one word, which a job with neither
 * reads once per entry and once per exit. */
union kumi_lock_flags {
    struct { bool mt, track; } f;
    uint16_t any;
};
/* The words an entry point reads or counts, in one cache line and under one
 * symbol: the entry addresses them all from the one base it loaded for the
 * flags (three address computations fewer per entry, one per exit, with the
 * thread engine's counting). */
struct kumi_lock_words {
    union kumi_lock_flags flags;
    int raised;                         /* a checkpoint or the engine wants the lock: its raisers (atomic) */
    int free_in;                        /* calls inside the library without the lock */
    unsigned free_gen;                  /* entries without the lock so far (the engine's delay) */
} __attribute__((aligned(64)));
extern struct kumi_lock_words kumi_lock_words;
#define kumi_lock_flags (kumi_lock_words.flags)
#define kumi_mt (kumi_lock_flags.f.mt)
#define kumi_lock_track (kumi_lock_flags.f.track)     /* a checkpoint job with the lock off */
#define kumi_lock_raised (kumi_lock_words.raised)
#define kumi_lock_free_in (kumi_lock_words.free_in)
#define kumi_lock_free_gen (kumi_lock_words.free_gen)
extern _Thread_local int kumi_lock_free_depth __attribute__((tls_model("initial-exec")));
void kumi_lock_slow(void);
void kumi_unlock_slow(void);
bool kumi_lock_try(void);              /* kumi_lock_slow if free now (checkpoint thread) */
void kumi_lock_raised_entry(void);
/* kumi_lock_free_in changes only in the thread inside without the lock (one
 * at a time) and is read by the checkpoint thread: plain increments. */
__attribute__((always_inline)) static inline void kumi_lock(void)
{
    if (__builtin_expect(kumi_lock_flags.any != 0, 0)) {
        if (kumi_mt) {
            kumi_lock_slow();
            return;
        }
        /* count first, then look at the flag: the checkpoint thread raises
         * the flag, then (membarrier) reads the count, so one of the two
         * sees the other */
        kumi_lock_free_in++;
        kumi_lock_free_depth++;
        kumi_lock_free_gen++;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        /* acquire (a plain load on x86): the engine's work before it lowered the flag is seen */
        if (__builtin_expect(__atomic_load_n(&kumi_lock_raised, __ATOMIC_ACQUIRE), 0)) kumi_lock_raised_entry();
    }
}
/* how this thread entered decides, not kumi_mt (it may have been switched
 * on meanwhile) */
__attribute__((always_inline)) static inline void kumi_unlock(void)
{
    if (__builtin_expect(kumi_lock_flags.any != 0, 0)) {
        if (kumi_lock_free_depth > 0) {
            kumi_lock_free_depth--;
            __atomic_thread_fence(__ATOMIC_RELEASE);    /* the call's work before the count */
            kumi_lock_free_in--;
        } else {
            kumi_unlock_slow();
        }
    }
}
/* A blocking wait's point where other threads may take the lock: at
 * MPI_THREAD_MULTIPLE, and in a call of a checkpoint job that a checkpoint
 * waits for (it takes the lock there, kumi_lock_release_all) */
static inline bool kumi_lock_let_in(void)
{
    return kumi_mt || (kumi_lock_free_depth > 0 && __atomic_load_n(&kumi_lock_raised, __ATOMIC_RELAXED));
}
/* The checkpoint thread (mpi/ckpt.c): _setup at MPI_Init's end (false: no
 * membarrier here, the lock stays on for the whole job); _raise sets the flag
 * (false: nothing to raise, the lock is on anyway); _inside counts the calls
 * still inside without the lock (they leave, or take the lock at their next
 * kumi_lock_release_all); _lower ends it (before the lock is released). */
bool kumi_lock_ck_setup(void);
bool kumi_lock_ck_raise(void);
int kumi_lock_ck_inside(void);
void kumi_lock_ck_lower(void);
int kumi_lock_release_all(void);
bool kumi_lock_wanted(void);           /* another application thread waits for it */
void kumi_lock_reacquire(int depth);
/* For the progress thread (sched/engine.c): marks the calling thread as the
 * engine, which works only while no application thread is inside the
 * library; kumi_lock_engine_wait_app() parks it until then; _kick() ends
 * every park for good (the engine is stopping). */
void kumi_lock_engine_enter(void);
extern int kumi_engine_work;            /* schedules running (sched/engine.c; atomic) */
bool kumi_lock_app_inside(void);
unsigned kumi_lock_app_entries(void);   /* application entries so far (the engine's delay) */
bool kumi_lock_is_engine(void);
void kumi_lock_engine_wait_app(void);
void kumi_lock_engine_kick(void);
/* The thread engine below MPI_THREAD_MULTIPLE (lock.c): _track() switches
 * the entries to counting (false: no membarrier, the lock must be on for
 * good); the engine raises the flag before its locked section
 * (false: a call without the lock is inside, it lowered it again) and lowers
 * it outside that section. */
bool kumi_lock_engine_track(void);
bool kumi_lock_engine_raise(void);
void kumi_lock_engine_lower(void);
bool kumi_lock_engine_raised(void);

/* Abort the whole job (MPI_Abort and fatal errors). */
void kumi_abort_job(int errorcode, const char *msg) __attribute__((noreturn));

/* Context-id pairs free on this process (core/comm.c): a copy of the mask
 * (KUMI_CTX_MASK_WORDS words, bit set: pair free), take the pair of ctx,
 * give it back.  The agreement itself is mpi/comm_agree.c. */
void kumi_ctx_mask(uint32_t *out);
void kumi_ctx_take(int32_t ctx);
void kumi_ctx_free(int32_t ctx);

/* ------------------------------------------------------------ sessions */
/* (framework/core/session.c) */
/* Memory allocation kinds (MPI-4.1 12.4.3): the supported kinds among a
 * comma-separated request (NULL: the default), and the World Model's. */
void kumi_memkinds_register_params(void);
void kumi_memkinds_supported(const char *req, char *out, size_t len);
const char *kumi_memkinds_world(void);
struct kumi_session {
    uint32_t magic;                 /* KUMI_MAGIC_SESSION */
    struct kumi_errhandler *errh;
    struct kumi_info *info;         /* hints given to Session_init (+ thread_level), or NULL */
    MPI_Session handle;
    int refs;                       /* the handle (until MPI_Session_finalize), groups, communicators */
    struct kumi_bbuf bbuf;          /* MPI_Session_attach_buffer (request/bsend.c) */
};
/* References of groups and communicators derived from a session: the
 * object outlives MPI_Session_finalize while they exist (its buffer is the
 * one their buffered sends may use). */
void kumi_session_ref(struct kumi_session *s);
void kumi_session_unref(struct kumi_session *s);
static inline struct kumi_session *kumi_session_get(MPI_Session h) { return kumi_handle_obj(h, KUMI_MAGIC_SESSION); }
/* The runtime (registry, rpim, transports, predefined objects) is started by
 * the first of MPI_Init / MPI_Session_init and stopped when the last of
 * MPI_Finalize / MPI_Session_finalize ends (session.c keeps the count; init.c
 * provides kumi_runtime_start / kumi_runtime_stop). */
/* Number of open sessions: while > 0, MPI calls are valid outside MPI_Init ..
 * MPI_Finalize (the generated state check must allow them). */
extern int kumi_sessions_active;
int kumi_runtime_acquire(void);
int kumi_runtime_release(int session);   /* session: by MPI_Session_finalize (mpi/session.c) */
int kumi_runtime_start(void);
void kumi_runtime_stop(void);
/* Communicator over group g (this process a member), collective over g only
 * (MPI_Comm_create_from_group); errh NULL: MPI_ERRORS_ARE_FATAL. */
int kumi_comm_from_group(struct kumi_group *g, const char *stringtag, struct kumi_info *info,
                         struct kumi_errhandler *errh, MPI_Comm *newcomm);
/* Barrier over the whole job through the bootstrap communicator (works without MPI_Init). */
int kumi_comm_boot_barrier(void);

/* Make a communicator object for ranks world[0..size) (takes ownership of
 * world, may be NULL for identity), choose its collectives. */
int kumi_comm_create_obj(int rank, int size, int *world, int32_t ctx,
                         struct kumi_comm *parent, struct kumi_comm **out);
/* The same for a sub-communicator of a hierarchical coll component
 * (kumi_comm_sub_create): marked sub before the components choose. */
int kumi_comm_create_sub_obj(int rank, int size, int *world, int32_t ctx, struct kumi_comm **out);
void kumi_comm_release(struct kumi_comm *c);

/* Topologies (framework/core/topo.c): give newc a copy of oldc's topology
 * (MPI_Comm_dup / idup / dup_with_info); free c's topology (when c is freed). */
int kumi_topo_dup(struct kumi_comm *oldc, struct kumi_comm *newc);
void kumi_topo_free(struct kumi_comm *c);
/* In- and out-degree of c's neighbourhood; MPI_ERR_TOPOLOGY (fn named) without a topology. */
int kumi_topo_degrees(const char *fn, struct kumi_comm *c, int *nin, int *nout);

/* Selects collectives for c from the coll components (registry). */
int kumi_coll_select(struct kumi_comm *c);
/* c is being freed: the coll components' comm_release hooks. */
void kumi_coll_release(struct kumi_comm *c);

/* ------------------------------------------------------------------ rpim */
/* Key-value exchange over the selected rpim client (or a local table for a
 * singleton): kumi_rpim_put / kumi_rpim_get are in kumi/rpim.h. */
int kumi_rpim_fence(void);
/* (core/rpim.c) The rpim component that joins the job (none: a singleton;
 * sets the world rank and size), its name, and its finalization. */
int kumi_rpim_select(void);
const char *kumi_rpim_name(void);
void kumi_rpim_finalize(void);
/* core/misc.c: a process restarted from its checkpoint image finds its host
 * again (kumi_hostname, kumi_host_id are computed anew). */
void kumi_host_forget(void);

/* ---------------------------------------------------- request layer API */
/* (implemented in framework/request) */
int kumi_req_init(void);          /* after transports are wired up */
void kumi_req_finalize(void);     /* drain sends */
void kumi_progress_register_params(void);
/* A request completed: wake threads sleeping in a wait (MPI_THREAD_MULTIPLE). */
void kumi_progress_wake(void);
void kumi_progress_wake_ckpt(void);    /* a checkpoint request: sleepers in calls without the lock wake */
void kumi_progress_wake_engine(void);   /* out of its poll() (sched/engine.c, stopping) */
/* The io_uring schedule engine's poller and descriptors (NULL, NULL: none). */
struct pollfd;
void kumi_progress_set_hook(int (*poll_fn)(void), int (*fds_fn)(struct pollfd *fds, int max));
/* Told when a blocking wait (kumi_progress_wait*) begins (1; it answers whether it wants the
 * end) and, if so, ends (0): the kmod schedule engine, whose module then hands work to the
 * waiting rank instead of a worker (sched/kmod.c). */
void kumi_progress_set_wait_hook(int (*fn)(int on));
/* Progress: poll transports once; blocking==1 may sleep on fds. */
int kumi_progress(int blocking);

/* (core/comm.c) The hidden whole-job bootstrap communicator; the info
 * helpers of the communicator calls (argument info: MPI_ERR_INFO naming it;
 * a copy of from, NULL for none). */
struct kumi_comm *kumi_comm_boot(void);
int kumi_comm_info_arg(MPI_Info h, struct kumi_info **out, const char *fn);
int kumi_comm_info_copy(struct kumi_info *from, struct kumi_info **to, const char *fn);
/* c's ranks as world ranks (malloc'd); NULL when out of memory. */
int *kumi_comm_world_copy(const struct kumi_comm *c);
/* The tail of every duplication once the context id ctx is agreed: the
 * communicator over comm's group with hints ni (taken), comm's error
 * handler, topology and attributes; on failure ctx and ni are given back. */
int kumi_comm_dup_finish(struct kumi_comm *comm, int32_t ctx, struct kumi_info *ni, MPI_Comm *newcomm,
                         const char *fn);

/* Generated from the MPI API data: prototypes of every kumi_mpi_* implementation. */
#include "kumi_impl.h"

#endif
