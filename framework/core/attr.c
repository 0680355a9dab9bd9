/* Attributes and keyvals: communicators, datatypes, and (through the generic
 * kumi_attr_* functions) windows.
 *
 * A keyval is a small int naming an entry of a table; the entry holds the
 * object kind it was made for, the copy and delete callbacks and the extra
 * state.  Each attribute holds a reference on its keyval, and so does the
 * user's handle until MPI_*_free_keyval: a keyval freed while attributes use
 * it stays alive (its callbacks still run at dup and free) until the last
 * attribute goes.  User keyvals start at KEYVAL_BASE, above the predefined
 * ones of the standard ABI (MPI_TAG_UB = 501 ... MPI_WIN_MODEL = 605).
 *
 * An object's attributes are a list, most recently set first: delete
 * callbacks at free run in that order (reverse order of setting); copies
 * keep the order.  The ABI's callback constants are 0 (MPI_*_NULL_COPY_FN,
 * MPI_*_NULL_DELETE_FN) and 1 (MPI_*_DUP_FN).
 *
 * Predefined attributes (MPI_TAG_UB, MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL,
 * MPI_APPNUM, MPI_UNIVERSE_SIZE, MPI_LASTUSEDCODE) are answered for every
 * communicator; as the standard requires, MPI_Comm_get_attr gives a pointer
 * to the int.  They cannot be set, deleted or freed. */
#include "core/core.h"
#include "core/check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <kumi/rpim.h>

/* MPI_UNIVERSE_SIZE: what mpiexec says (KUMI_ENV_UNIVERSE: the slots it
 * knows), never below the size of MPI_COMM_WORLD. */
static int universe_size(void)
{
    const char *v = getenv(KUMI_ENV_UNIVERSE);
    long u = v ? strtol(v, NULL, 10) : 0;
    int n = kumi_world_size();
    return u > n && u <= 1000000 ? (int)u : n;
}

#define KEYVAL_BASE 1024

struct kumi_keyval {
    int kind;                       /* KUMI_ATTR_COMM, _TYPE, _WIN */
    int refcount;                   /* user's handle (until freed) + attributes */
    bool freed;                     /* MPI_*_free_keyval called */
    kumi_attr_fn copy_fn, delete_fn;
    void *extra_state;
};

struct kumi_attr {
    struct kumi_attr *next;
    int keyval;
    void *value;
};

static struct kumi_keyval **keyvals;   /* index: keyval - KEYVAL_BASE */
static int n_keyvals;

/* In errhandler.c: the largest error code/class given out. */
extern int kumi_err_lastusedcode;

static const char *kind_name(int kind)
{
    return kind == KUMI_ATTR_COMM ? "communicator" : kind == KUMI_ATTR_TYPE ? "datatype" : "window";
}

int kumi_attr_is_predefined(int keyval)
{
    return keyval >= MPI_TAG_UB && keyval <= MPI_UNIVERSE_SIZE;
}

static struct kumi_keyval *kv_lookup(int keyval)
{
    int i = keyval - KEYVAL_BASE;
    return i >= 0 && i < n_keyvals ? keyvals[i] : NULL;
}

/* The keyval keyval of kind for a user call (not freed), or an error. */
static int kv_user(const char *fn, int kind, int keyval, struct kumi_keyval **out)
{
    struct kumi_keyval *k = kv_lookup(keyval);
    if (!k || k->freed) {
        if (keyval == MPI_KEYVAL_INVALID)
            return kumi_error(MPI_ERR_KEYVAL, "%s: keyval is MPI_KEYVAL_INVALID", fn);
        return kumi_error(MPI_ERR_KEYVAL, "%s: invalid keyval %d%s", fn, keyval,
                          k ? " (already freed)" : "");
    }
    if (k->kind != kind)
        return kumi_error(MPI_ERR_KEYVAL, "%s: keyval %d was created for %s attributes, not %s ones", fn, keyval,
                          kind_name(k->kind), kind_name(kind));
    *out = k;
    return MPI_SUCCESS;
}

static void kv_release(int keyval)
{
    struct kumi_keyval *k = kv_lookup(keyval);
    if (k && --k->refcount == 0) {
        free(k);
        keyvals[keyval - KEYVAL_BASE] = NULL;
    }
}

int kumi_attr_keyval_create(const char *fn, int kind, kumi_attr_fn copy_fn, kumi_attr_fn delete_fn,
                            void *extra_state, int *keyval)
{
    if (!keyval) return kumi_error(MPI_ERR_ARG, "%s: argument keyval is NULL", fn);
    struct kumi_keyval *k = calloc(1, sizeof *k);
    if (!k) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    k->kind = kind;
    k->refcount = 1;
    k->copy_fn = copy_fn;
    k->delete_fn = delete_fn;
    k->extra_state = extra_state;
    int slot = -1;
    for (int i = 0; i < n_keyvals; i++)
        if (!keyvals[i]) { slot = i; break; }
    if (slot < 0) {
        struct kumi_keyval **t = realloc(keyvals, sizeof *t * (size_t)(n_keyvals + 16));
        if (!t) {
            free(k);
            return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        }
        keyvals = t;
        for (int i = 0; i < 16; i++) keyvals[n_keyvals + i] = NULL;
        slot = n_keyvals;
        n_keyvals += 16;
    }
    keyvals[slot] = k;
    *keyval = KEYVAL_BASE + slot;
    return MPI_SUCCESS;
}

int kumi_attr_keyval_free(const char *fn, int kind, int *keyval)
{
    if (!keyval) return kumi_error(MPI_ERR_ARG, "%s: argument keyval is NULL", fn);
    if (kumi_attr_is_predefined(*keyval) || (*keyval >= MPI_WIN_BASE && *keyval <= MPI_WIN_MODEL))
        return kumi_error(MPI_ERR_KEYVAL, "%s: keyval %d is predefined and cannot be freed", fn, *keyval);
    struct kumi_keyval *k;
    int rc = kv_user(fn, kind, *keyval, &k);
    if (rc) return rc;
    k->freed = true;
    kv_release(*keyval);
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

/* Run the delete callback of attribute a (keyval k) of object handle. */
static int run_delete(int kind, void *handle, const struct kumi_attr *a)
{
    struct kumi_keyval *k = kv_lookup(a->keyval);
    if (!k || !k->delete_fn || k->delete_fn == (kumi_attr_fn)1) return MPI_SUCCESS;
    switch (kind) {
    case KUMI_ATTR_COMM:
        return ((MPI_Comm_delete_attr_function *)k->delete_fn)((MPI_Comm)handle, a->keyval, a->value, k->extra_state);
    case KUMI_ATTR_TYPE:
        return ((MPI_Type_delete_attr_function *)k->delete_fn)((MPI_Datatype)handle, a->keyval, a->value,
                                                               k->extra_state);
    default:
        return ((MPI_Win_delete_attr_function *)k->delete_fn)((MPI_Win)handle, a->keyval, a->value, k->extra_state);
    }
}

static int run_copy(int kind, void *handle, const struct kumi_attr *a, void **out, int *flag)
{
    struct kumi_keyval *k = kv_lookup(a->keyval);
    *flag = 0;
    if (!k || !k->copy_fn) return MPI_SUCCESS;                 /* MPI_*_NULL_COPY_FN */
    if (k->copy_fn == (kumi_attr_fn)1) {                         /* MPI_*_DUP_FN */
        *out = a->value;
        *flag = 1;
        return MPI_SUCCESS;
    }
    switch (kind) {
    case KUMI_ATTR_COMM:
        return ((MPI_Comm_copy_attr_function *)k->copy_fn)((MPI_Comm)handle, a->keyval, k->extra_state, a->value,
                                                           out, flag);
    case KUMI_ATTR_TYPE:
        return ((MPI_Type_copy_attr_function *)k->copy_fn)((MPI_Datatype)handle, a->keyval, k->extra_state,
                                                           a->value, out, flag);
    default:
        return ((MPI_Win_copy_attr_function *)k->copy_fn)((MPI_Win)handle, a->keyval, k->extra_state, a->value,
                                                          out, flag);
    }
}

/* The user's callbacks may call MPI: the name of the call in progress is kept. */
static int call_delete(int kind, void *handle, const struct kumi_attr *a)
{
    int rc;
    KUMI_CALLBACK(rc = run_delete(kind, handle, a));
    return rc;
}

static int call_copy(int kind, void *handle, const struct kumi_attr *a, void **out, int *flag)
{
    int rc;
    KUMI_CALLBACK(rc = run_copy(kind, handle, a, out, flag));
    return rc;
}

static struct kumi_attr *find(struct kumi_attr *list, int keyval)
{
    for (; list; list = list->next)
        if (list->keyval == keyval) return list;
    return NULL;
}

static void unlink_attr(struct kumi_attr **list, struct kumi_attr *a)
{
    for (struct kumi_attr **p = list; *p; p = &(*p)->next)
        if (*p == a) {
            *p = a->next;
            return;
        }
}

int kumi_attr_set(const char *fn, struct kumi_attr **list, int kind, void *handle, int keyval, void *val)
{
    if (kumi_attr_is_predefined(keyval) || (keyval >= MPI_WIN_BASE && keyval <= MPI_WIN_MODEL))
        return kumi_error(MPI_ERR_KEYVAL, "%s: keyval %d is predefined and cannot be set", fn, keyval);
    struct kumi_keyval *k;
    int rc = kv_user(fn, kind, keyval, &k);
    if (rc) return rc;
    struct kumi_attr *a = find(*list, keyval);
    if (a) {
        /* replacing a value deletes the old one first */
        rc = call_delete(kind, handle, a);
        if (rc) return rc;
        a = find(*list, keyval);       /* the callback may have changed the list */
        if (a) {
            a->value = val;
            return MPI_SUCCESS;
        }
    }
    a = malloc(sizeof *a);
    if (!a) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    a->keyval = keyval;
    a->value = val;
    a->next = *list;
    *list = a;
    k->refcount++;
    return MPI_SUCCESS;
}

int kumi_attr_get(const char *fn, struct kumi_attr *list, int kind, int keyval, void **val, int *flag)
{
    if (!val || !flag) return kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fn, val ? "flag" : "attribute_val");
    if (kind == KUMI_ATTR_COMM && kumi_attr_is_predefined(keyval)) {
        static int tag_ub, host = MPI_PROC_NULL, io = MPI_ANY_SOURCE, wtime_global = 0,
                   appnum = 0, universe;
        int *p = NULL;
        switch (keyval) {
        case MPI_TAG_UB: tag_ub = kumi_tag_ub; p = &tag_ub; break;
        case MPI_HOST: p = &host; break;
        case MPI_IO: p = &io; break;
        case MPI_WTIME_IS_GLOBAL: p = &wtime_global; break;
        case MPI_APPNUM: {                 /* the command of MPI_Comm_spawn_multiple (mpi/dpm_spawn.c) */
            const char *a = getenv("KUMI_APPNUM");
            appnum = a && *a ? atoi(a) : 0;
            p = &appnum;
            break;
        }
        case MPI_LASTUSEDCODE: p = &kumi_err_lastusedcode; break;
        case MPI_UNIVERSE_SIZE: universe = universe_size(); p = &universe; break;
        }
        *val = p;
        *flag = 1;
        return MPI_SUCCESS;
    }
    struct kumi_keyval *k;
    int rc = kv_user(fn, kind, keyval, &k);
    if (rc) {
        /* a freed keyval still names the attributes that use it */
        struct kumi_keyval *f = kv_lookup(keyval);
        if (!f || f->kind != kind) return rc;
    }
    struct kumi_attr *a = find(list, keyval);
    *flag = a != NULL;
    if (a) *val = a->value;
    return MPI_SUCCESS;
}

int kumi_attr_delete(const char *fn, struct kumi_attr **list, int kind, void *handle, int keyval)
{
    if (kumi_attr_is_predefined(keyval) || (keyval >= MPI_WIN_BASE && keyval <= MPI_WIN_MODEL))
        return kumi_error(MPI_ERR_KEYVAL, "%s: keyval %d is predefined and cannot be deleted", fn, keyval);
    struct kumi_keyval *k;
    int rc = kv_user(fn, kind, keyval, &k);
    if (rc) {
        /* a freed keyval still names the attributes that use it, and they
         * can be deleted with it (MPI 4.1 sec. 7.7.2, MPI_COMM_FREE_KEYVAL) */
        struct kumi_keyval *f = kv_lookup(keyval);
        if (!f || f->kind != kind) return rc;
    }
    struct kumi_attr *a = find(*list, keyval);
    if (!a) return kumi_error(MPI_ERR_KEYVAL, "%s: keyval %d has no value on this %s", fn, keyval, kind_name(kind));
    unlink_attr(list, a);
    rc = call_delete(kind, handle, a);
    if (rc) {                          /* the attribute stays */
        a->next = *list;
        *list = a;
        return rc;
    }
    kv_release(a->keyval);
    free(a);
    return MPI_SUCCESS;
}

int kumi_attr_copy_all(struct kumi_attr *from, int kind, void *oldh, struct kumi_attr **to)
{
    struct kumi_attr **tail = to;
    *to = NULL;
    for (struct kumi_attr *a = from; a; a = a->next) {
        void *v = NULL;
        int flag = 0;
        int rc = call_copy(kind, oldh, a, &v, &flag);
        if (rc == MPI_SUCCESS && flag) {
            struct kumi_attr *n = malloc(sizeof *n);
            if (!n) rc = kumi_error(MPI_ERR_NO_MEM, "out of memory copying attributes");
            else {
                n->keyval = a->keyval;
                n->value = v;
                n->next = NULL;
                *tail = n;
                tail = &n->next;
                kv_lookup(a->keyval)->refcount++;
            }
        }
        if (rc) {
            /* the copies made so far are dropped without callbacks: the new object never existed */
            while (*to) {
                struct kumi_attr *n = *to;
                *to = n->next;
                kv_release(n->keyval);
                free(n);
            }
            return rc;
        }
    }
    return MPI_SUCCESS;
}

int kumi_attr_delete_all(struct kumi_attr **list, int kind, void *handle)
{
    while (*list) {
        struct kumi_attr *a = *list;
        *list = a->next;
        int rc = call_delete(kind, handle, a);
        if (rc) {
            a->next = *list;
            *list = a;
            return rc;
        }
        kv_release(a->keyval);
        free(a);
    }
    return MPI_SUCCESS;
}

/* ---------------------------------------------------- hooks of the core */
int kumi_attr_comm_dup(struct kumi_comm *oldc, struct kumi_comm *newc)
{
    return kumi_attr_copy_all(oldc->attrs, KUMI_ATTR_COMM, oldc->handle, &newc->attrs);
}

int kumi_attr_comm_free(struct kumi_comm *c)
{
    return kumi_attr_delete_all(&c->attrs, KUMI_ATTR_COMM, c->handle);
}

int kumi_attr_type_dup(struct kumi_dt *oldt, struct kumi_dt *newt)
{
    return kumi_attr_copy_all(oldt->attrs, KUMI_ATTR_TYPE, oldt->handle, &newt->attrs);
}

int kumi_attr_type_free(struct kumi_dt *t)
{
    return kumi_attr_delete_all(&t->attrs, KUMI_ATTR_TYPE, t->handle);
}

int kumi_attr_finalize(void)
{
    int rc = kumi_attr_comm_free(KUMI_COMM_SELF);
    int rc2 = kumi_attr_comm_free(KUMI_COMM_WORLD);
    return rc ? rc : rc2;
}

/* ------------------------------------------------------- MPI functions */
/* Errors of calls without a communicator argument go through kumi_err_handle(NULL, ...). */
int kumi_mpi_comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                                MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                                void *extra_state)
{
    return kumi_err_handle(NULL, kumi_attr_keyval_create("MPI_Comm_create_keyval", KUMI_ATTR_COMM,
                                                         (kumi_attr_fn)comm_copy_attr_fn,
                                                         (kumi_attr_fn)comm_delete_attr_fn, extra_state,
                                                         comm_keyval));
}

int kumi_mpi_comm_free_keyval(int *comm_keyval)
{
    return kumi_err_handle(NULL, kumi_attr_keyval_free("MPI_Comm_free_keyval", KUMI_ATTR_COMM, comm_keyval));
}

int kumi_mpi_comm_set_attr(struct kumi_comm *comm, int comm_keyval, void *attribute_val)
{
    return kumi_attr_set("MPI_Comm_set_attr", &comm->attrs, KUMI_ATTR_COMM, comm->handle, comm_keyval,
                         attribute_val);
}

int kumi_mpi_comm_get_attr(struct kumi_comm *comm, int comm_keyval, void *attribute_val, int *flag)
{
    return kumi_attr_get("MPI_Comm_get_attr", comm->attrs, KUMI_ATTR_COMM, comm_keyval, attribute_val, flag);
}

int kumi_mpi_comm_delete_attr(struct kumi_comm *comm, int comm_keyval)
{
    return kumi_attr_delete("MPI_Comm_delete_attr", &comm->attrs, KUMI_ATTR_COMM, comm->handle, comm_keyval);
}

/* MPI-1 names (deprecated, still in MPI 4.1): the same communicator keyvals. */
int kumi_mpi_keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                           void *extra_state)
{
    return kumi_err_handle(NULL, kumi_attr_keyval_create("MPI_Keyval_create", KUMI_ATTR_COMM, (kumi_attr_fn)copy_fn,
                                                         (kumi_attr_fn)delete_fn, extra_state, keyval));
}

int kumi_mpi_keyval_free(int *keyval)
{
    return kumi_err_handle(NULL, kumi_attr_keyval_free("MPI_Keyval_free", KUMI_ATTR_COMM, keyval));
}

int kumi_mpi_attr_put(struct kumi_comm *comm, int keyval, void *attribute_val)
{
    return kumi_attr_set("MPI_Attr_put", &comm->attrs, KUMI_ATTR_COMM, comm->handle, keyval, attribute_val);
}

int kumi_mpi_attr_get(struct kumi_comm *comm, int keyval, void *attribute_val, int *flag)
{
    return kumi_attr_get("MPI_Attr_get", comm->attrs, KUMI_ATTR_COMM, keyval, attribute_val, flag);
}

int kumi_mpi_attr_delete(struct kumi_comm *comm, int keyval)
{
    return kumi_attr_delete("MPI_Attr_delete", &comm->attrs, KUMI_ATTR_COMM, comm->handle, keyval);
}

/* Datatypes: no communicator argument, so errors go to kumi_err_handle(NULL, ...). */
int kumi_mpi_type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                                MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval,
                                void *extra_state)
{
    return kumi_err_handle(NULL, kumi_attr_keyval_create("MPI_Type_create_keyval", KUMI_ATTR_TYPE,
                                                         (kumi_attr_fn)type_copy_attr_fn,
                                                         (kumi_attr_fn)type_delete_attr_fn, extra_state,
                                                         type_keyval));
}

int kumi_mpi_type_free_keyval(int *type_keyval)
{
    return kumi_err_handle(NULL, kumi_attr_keyval_free("MPI_Type_free_keyval", KUMI_ATTR_TYPE, type_keyval));
}

int kumi_mpi_type_set_attr(struct kumi_dt *datatype, int type_keyval, void *attribute_val)
{
    return kumi_err_handle(NULL, kumi_attr_set("MPI_Type_set_attr", &datatype->attrs, KUMI_ATTR_TYPE,
                                               datatype->handle, type_keyval, attribute_val));
}

int kumi_mpi_type_get_attr(struct kumi_dt *datatype, int type_keyval, void *attribute_val, int *flag)
{
    return kumi_err_handle(NULL, kumi_attr_get("MPI_Type_get_attr", datatype->attrs, KUMI_ATTR_TYPE, type_keyval,
                                               attribute_val, flag));
}

int kumi_mpi_type_delete_attr(struct kumi_dt *datatype, int type_keyval)
{
    return kumi_err_handle(NULL, kumi_attr_delete("MPI_Type_delete_attr", &datatype->attrs, KUMI_ATTR_TYPE,
                                                  datatype->handle, type_keyval));
}
