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
#define KUMI_TAG_UB 0x7fffffff      /* value of the MPI_TAG_UB attribute */

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
    void *ctx;                      /* for foreign-ABI trampolines */
    MPI_Errhandler handle;
};
enum { KUMI_ERRH_FATAL, KUMI_ERRH_ABORT, KUMI_ERRH_RETURN, KUMI_ERRH_USER };

/* ---------------------------------------------------------------- groups */
/* (framework/core/group.c) */
struct kumi_group {
    uint32_t magic;                 /* KUMI_MAGIC_GROUP */
    int refcount;
    int size;
    int rank;                       /* this process's rank in the group, or MPI_UNDEFINED */
    int *world;                     /* group rank -> world rank (NULL only for an empty group) */
    bool predefined;                /* MPI_GROUP_EMPTY */
    MPI_Group handle;
};
static inline struct kumi_group *kumi_group_get(MPI_Group h) { return kumi_handle_obj(h, KUMI_MAGIC_GROUP); }

/* Attributes and info objects (framework/core/attr.c, info.c). */
struct kumi_attr;
struct kumi_info;

/* --------------------------------------------------------- communicators */
struct kumi_comm {
    uint32_t magic;
    int refcount;
    int rank, size;
    int *world;                     /* comm rank -> world rank (NULL: identity) */
    int32_t ctx;                    /* point-to-point context; ctx+1 for collectives */
    struct kumi_errhandler *errh;
    struct kumi_coll_fns coll;      /* chosen collective operations */
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
    struct kumi_dt *base;           /* the old type, retained */
    size_t base_count;              /* base elements per element */
};

static inline struct kumi_dt *kumi_dt_get(MPI_Datatype h) { return kumi_handle_obj(h, KUMI_MAGIC_DT); }

/* Pack count elements of dt from buf into out (contiguous, size*count bytes),
 * and the reverse.  Predefined and contiguous types are a memcpy. */
void kumi_dt_pack(const struct kumi_dt *dt, const void *buf, size_t count, void *out);
void kumi_dt_unpack(const struct kumi_dt *dt, const void *in, size_t count, void *buf);

void kumi_dt_init(void);          /* registers the predefined datatypes */

/* ------------------------------------------------------------ operations */
struct kumi_op {
    uint32_t magic;
    int refcount;
    int id;                         /* predefined: low byte of its handle; user: 0 */
    bool commute;
    bool predefined;
    MPI_User_function *fn;          /* user function (int count) */
    MPI_User_function_c *fn_c;      /* or large-count one */
    void *ctx;                      /* for foreign-ABI trampolines */
    MPI_Op handle;
};
static inline struct kumi_op *kumi_op_get(MPI_Op h) { return kumi_handle_obj(h, KUMI_MAGIC_OP); }
/* 1 if predefined op is defined for dt (user ops: always 1). */
int kumi_op_valid_for(const struct kumi_op *op, const struct kumi_dt *dt);
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

/* --------------------------------------------------------------- library */
enum kumi_state { KUMI_STATE_PRE = 0, KUMI_STATE_INIT, KUMI_STATE_FINALIZED };
extern enum kumi_state kumi_state;
extern int kumi_thread_level;

/* The library lock (framework/core/lock.c), taken by the entry points only
 * at MPI_THREAD_MULTIPLE.  Blocking waits release it while they yield or sleep:
 *   int d = kumi_lock_release_all(); ...; kumi_lock_reacquire(d); */
extern bool kumi_mt;
void kumi_lock_slow(void);
void kumi_unlock_slow(void);
static inline void kumi_lock(void) { if (__builtin_expect(kumi_mt, 0)) kumi_lock_slow(); }
static inline void kumi_unlock(void) { if (__builtin_expect(kumi_mt, 0)) kumi_unlock_slow(); }
int kumi_lock_release_all(void);
void kumi_lock_reacquire(int depth);

/* Abort the whole job (MPI_Abort and fatal errors). */
void kumi_abort_job(int errorcode, const char *msg) __attribute__((noreturn));

/* Context ids: allocate one (pair) agreed over parent, collectively. */
int kumi_ctx_alloc(struct kumi_comm *parent, int32_t *ctx);
void kumi_ctx_free(int32_t ctx);

/* Make a communicator object for ranks world[0..size) (takes ownership of
 * world, may be NULL for identity), choose its collectives. */
int kumi_comm_create_obj(int rank, int size, int *world, int32_t ctx,
                         struct kumi_comm *parent, struct kumi_comm **out);
void kumi_comm_release(struct kumi_comm *c);

/* Selects collectives for c from the coll components (registry). */
int kumi_coll_select(struct kumi_comm *c);

/* ------------------------------------------------------------------ rpim */
/* Key-value exchange over the selected rpim client (or a local table for a
 * singleton): kumi_rpim_put / kumi_rpim_get are in kumi/rpim.h. */
int kumi_rpim_fence(void);

/* ---------------------------------------------------- request layer API */
/* (implemented in framework/request) */
int kumi_req_init(void);          /* after transports are wired up */
void kumi_req_finalize(void);     /* drain sends */
void kumi_progress_register_params(void);
/* Progress: poll transports once; blocking==1 may sleep on fds. */
int kumi_progress(int blocking);

/* Generated from the MPI API data: prototypes of every kumi_mpi_* implementation. */
#include "kumi_impl.h"

#endif
