/* MPI_T: events (see mpit.h).
 *
 * One event type: p2p_unexpected_message, raised when a message arrives
 * before a receive matches it (the request layer's ue_hook, set while a
 * registration exists: nothing is spent otherwise), bound to the
 * communicator on whose point-to-point context the message came.  Its
 * elements: the sender's rank in the communicator (MPI_INT), the tag
 * (MPI_INT) and the message's length in bytes (MPI_COUNT).
 *
 * The event is raised inside the library (the progress engine, the library
 * lock held), a context that requires MPI_T_CB_REQUIRE_MPI_RESTRICTED: the
 * callback registered with the least safety at or above that runs there at
 * once, with that requirement.  A registration that has only a callback of
 * MPI_T_CB_REQUIRE_NONE gets its events later, from the next MPI_T call of
 * any thread (a queue of QUEUE instances; what does not fit is counted and
 * reported to the dropped handler before the next delivery).
 *
 * Lock order: the library lock, then ev_mutex (the hook); kumi_mpit_mutex,
 * then the library lock, then ev_mutex (the procedures).  Callbacks run with
 * neither the library lock (deferred ones) nor ev_mutex held; the procedures
 * on an event instance (read, copy, timestamp, source) take no lock, so that
 * a callback may call them whatever lock its thread holds. */
#include "mpit/mpit.h"
#include <stddef.h>
#include <stdlib.h>

#define REG_MAGIC 0x4b455652u
#define INST_MAGIC 0x4b45494eu
#define NSAFETY 4
#define QUEUE 256

static const MPI_T_cb_safety safety_of[NSAFETY] = { MPI_T_CB_REQUIRE_NONE, MPI_T_CB_REQUIRE_MPI_RESTRICTED,
                                                    MPI_T_CB_REQUIRE_THREAD_SAFE,
                                                    MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE };

struct ue_data {                    /* the elements, at their displacements */
    int source;
    int tag;
    MPI_Count bytes;
};

struct instance {
    uint32_t magic;
    int event;
    MPI_Count timestamp;
    struct ue_data d;
};

struct reg {
    uint32_t magic;
    int event;
    int32_t ctx;
    struct { MPI_T_event_cb_function *fn; void *user_data; MPI_Info info; } cb[NSAFETY];
    MPI_T_event_dropped_cb_function *dropped;
    MPI_Count ndropped;
    MPI_Info info;
    struct reg *next;
};

static pthread_mutex_t ev_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct reg *regs;
static struct { struct reg *r; struct instance in; } queue[QUEUE];
static int qhead, qlen;

int kumi_mpit_event_count(void) { return 1; }

void kumi_mpit_event_owner(int i, const char **fw, const char **comp)
{
    (void)i;
    *fw = "p2p";
    *comp = "";
}

static int safety_index(MPI_T_cb_safety s)
{
    for (int i = 0; i < NSAFETY; i++)
        if (safety_of[i] == s) return i;
    return -1;
}

static struct reg *reg_lookup(MPI_T_event_registration h)
{
    for (struct reg *r = regs; r; r = r->next)
        if ((MPI_T_event_registration)r == h) return r;
    return NULL;
}

/* ------------------------------------------------------------ raising */

/* A message arrived unexpected (request layer; the library lock held). */
static void ue_event(const struct kumi_hdr *h)
{
    struct { MPI_T_event_cb_function *fn; void *ud; struct reg *r; } now[16];
    int nnow = 0;
    struct instance in = { INST_MAGIC, 0, kumi_mpit_now(), { h->src, h->tag, (MPI_Count)h->len } };
    pthread_mutex_lock(&ev_mutex);
    for (struct reg *r = regs; r; r = r->next) {
        if (r->event != 0 || r->ctx != h->ctx) continue;
        int k;
        for (k = 1; k < NSAFETY && !r->cb[k].fn; k++) {}
        if (k < NSAFETY && nnow < (int)(sizeof now / sizeof now[0])) {
            now[nnow].fn = r->cb[k].fn;
            now[nnow].ud = r->cb[k].user_data;
            now[nnow++].r = r;
        } else if (k < NSAFETY || r->cb[0].fn) {
            if (qlen < QUEUE) {
                int slot = (qhead + qlen++) % QUEUE;
                queue[slot].r = r;
                queue[slot].in = in;
            } else {
                r->ndropped++;
            }
        }
    }
    pthread_mutex_unlock(&ev_mutex);
    for (int i = 0; i < nnow; i++)
        now[i].fn((MPI_T_event_instance)&in, (MPI_T_event_registration)now[i].r, MPI_T_CB_REQUIRE_MPI_RESTRICTED,
                  now[i].ud);
    in.magic = 0;
}

/* The deferred events (kumi_mpit_mutex held: no registration is freed meanwhile). */
void kumi_mpit_event_deliver(void)
{
    static int delivering;
    if (delivering || !__atomic_load_n(&qlen, __ATOMIC_RELAXED)) return;
    delivering = 1;
    for (;;) {
        pthread_mutex_lock(&ev_mutex);
        struct reg *r = NULL;
        struct instance in;
        MPI_Count dropped = 0;
        if (qlen > 0) {
            r = queue[qhead].r;
            in = queue[qhead].in;
            qhead = (qhead + 1) % QUEUE;
            qlen--;
            if (r && r->ndropped) {
                dropped = r->ndropped;
                r->ndropped = 0;
            }
        }
        int more = qlen > 0 || r;
        pthread_mutex_unlock(&ev_mutex);
        if (!more) break;
        if (!r) continue;                         /* its registration was freed */
        int k;
        for (k = 0; k < NSAFETY && !r->cb[k].fn; k++) {}
        if (dropped && r->dropped)
            r->dropped(dropped, (MPI_T_event_registration)r, 0, MPI_T_CB_REQUIRE_NONE,
                       k < NSAFETY ? r->cb[k].user_data : NULL);
        if (k < NSAFETY)
            r->cb[k].fn((MPI_T_event_instance)&in, (MPI_T_event_registration)r, MPI_T_CB_REQUIRE_NONE,
                        r->cb[k].user_data);
    }
    delivering = 0;
}

/* ------------------------------------------------------------ event types */

int kumi_mpi_t_event_get_num(int *num_events)
{
    MPIT_ENTER();
    if (!num_events) MPIT_RETURN(MPI_T_ERR_INVALID);
    *num_events = kumi_mpit_event_count();
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_event_get_info(int event_index, char *name, int *name_len, int *verbosity,
                              MPI_Datatype array_of_datatypes[], MPI_Aint array_of_displacements[],
                              int *num_elements, MPI_T_enum *enumtype, MPI_Info *info, char *desc, int *desc_len,
                              int *bind)
{
    MPIT_ENTER();
    if (event_index != 0) MPIT_RETURN(MPI_T_ERR_INVALID_INDEX);
    static const MPI_Aint disp[] = { offsetof(struct ue_data, source), offsetof(struct ue_data, tag),
                                     offsetof(struct ue_data, bytes) };
    MPI_Datatype types[] = { MPI_INT, MPI_INT, MPI_COUNT };
    kumi_mpit_string("p2p_unexpected_message", name, name_len);
    if (verbosity) *verbosity = MPI_T_VERBOSITY_USER_DETAIL;
    if (num_elements) {
        for (int i = 0; i < 3 && i < *num_elements; i++) {
            if (array_of_datatypes) array_of_datatypes[i] = types[i];
            if (array_of_displacements) array_of_displacements[i] = disp[i];
        }
        *num_elements = 3;
    }
    if (enumtype) *enumtype = MPI_T_ENUM_NULL;
    if (info) {
        kumi_lock();
        struct kumi_info *d = kumi_info_dup(NULL);
        kumi_unlock();
        if (!d) MPIT_RETURN(MPI_T_ERR_MEMORY);
        *info = kumi_info_handle(d);
    }
    kumi_mpit_string("A message arrived before a receive matched it (sender's rank in the communicator, tag, "
                     "bytes)", desc, desc_len);
    if (bind) *bind = MPI_T_BIND_MPI_COMM;
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_event_get_index(const char *name, int *event_index)
{
    MPIT_ENTER();
    if (!name || !event_index) MPIT_RETURN(MPI_T_ERR_INVALID);
    if (strcmp(name, "p2p_unexpected_message")) MPIT_RETURN(MPI_T_ERR_INVALID_NAME);
    *event_index = 0;
    MPIT_RETURN(MPI_SUCCESS);
}

/* ------------------------------------------------------------ registrations */

/* *out = a copy of info (MPI_INFO_NULL: none); 0, or an MPI_T error (the library lock held). */
static int info_copy(MPI_Info info, MPI_Info *out)
{
    *out = MPI_INFO_NULL;
    if (info == MPI_INFO_NULL) return 0;
    struct kumi_info *i = kumi_info_get(info);
    if (!i) return MPI_T_ERR_INVALID;
    struct kumi_info *d = kumi_info_dup(i);
    if (!d) return MPI_T_ERR_MEMORY;
    *out = kumi_info_handle(d);
    return 0;
}

static void info_drop(MPI_Info *info)
{
    struct kumi_info *i = *info != MPI_INFO_NULL ? kumi_info_get(*info) : NULL;
    if (i) kumi_info_release(i);
    *info = MPI_INFO_NULL;
}

/* *used = a copy of info, or a new empty one (the library lock held). */
static int info_out(MPI_Info info, MPI_Info *used)
{
    if (!used) return MPI_T_ERR_INVALID;
    if (info != MPI_INFO_NULL) return info_copy(info, used);
    struct kumi_info *d = kumi_info_dup(NULL);
    if (!d) return MPI_T_ERR_MEMORY;
    *used = kumi_info_handle(d);
    return 0;
}

int kumi_mpi_t_event_handle_alloc(int event_index, void *obj_handle, MPI_Info info,
                                  MPI_T_event_registration *event_registration)
{
    MPIT_ENTER();
    if (event_index != 0) MPIT_RETURN(MPI_T_ERR_INVALID_INDEX);
    if (!event_registration) MPIT_RETURN(MPI_T_ERR_INVALID);
    kumi_lock();
    bool live = kumi_state == KUMI_STATE_INIT || kumi_sessions_active;
    struct kumi_comm *c = obj_handle && live ? kumi_comm_get(*(MPI_Comm *)obj_handle) : NULL;
    if (!c) {
        kumi_unlock();
        MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    }
    struct reg *r = calloc(1, sizeof *r);
    int rc = r ? info_copy(info, &r->info) : MPI_T_ERR_OUT_OF_HANDLES;
    if (rc) {
        free(r);
        kumi_unlock();
        MPIT_RETURN(rc);
    }
    r->magic = REG_MAGIC;
    r->event = event_index;
    r->ctx = c->ctx;
    for (int k = 0; k < NSAFETY; k++) r->cb[k].info = MPI_INFO_NULL;
    pthread_mutex_lock(&ev_mutex);
    r->next = regs;
    regs = r;
    kumi_pv.ue_hook = ue_event;
    pthread_mutex_unlock(&ev_mutex);
    kumi_unlock();
    *event_registration = (MPI_T_event_registration)r;
    MPIT_RETURN(MPI_SUCCESS);
}

/* Remove r (kumi_mpit_mutex held). */
static void reg_free(struct reg *r)
{
    kumi_lock();
    pthread_mutex_lock(&ev_mutex);
    for (struct reg **pp = &regs; *pp; pp = &(*pp)->next)
        if (*pp == r) { *pp = r->next; break; }
    for (int i = 0; i < qlen; i++)
        if (queue[(qhead + i) % QUEUE].r == r) queue[(qhead + i) % QUEUE].r = NULL;
    if (!regs) kumi_pv.ue_hook = NULL;
    pthread_mutex_unlock(&ev_mutex);
    info_drop(&r->info);
    for (int k = 0; k < NSAFETY; k++) info_drop(&r->cb[k].info);
    kumi_unlock();
    r->magic = 0;
    free(r);
}

int kumi_mpi_t_event_handle_free(MPI_T_event_registration event_registration, void *user_data,
                                 MPI_T_event_free_cb_function free_cb_function)
{
    MPIT_ENTER();
    struct reg *r = reg_lookup(event_registration);
    if (!r) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    reg_free(r);
    /* no callback of the registration runs any more: the tool may free its data */
    if (free_cb_function) free_cb_function(event_registration, MPI_T_CB_REQUIRE_NONE, user_data);
    MPIT_RETURN(MPI_SUCCESS);
}

void kumi_mpit_event_cleanup(void)
{
    while (regs) reg_free(regs);
}

int kumi_mpi_t_event_handle_set_info(MPI_T_event_registration event_registration, MPI_Info info)
{
    MPIT_ENTER();
    struct reg *r = reg_lookup(event_registration);
    if (!r) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    kumi_lock();
    MPI_Info n;
    int rc = info_copy(info, &n);
    if (!rc) {
        info_drop(&r->info);
        r->info = n;
    }
    kumi_unlock();
    MPIT_RETURN(rc);
}

int kumi_mpi_t_event_handle_get_info(MPI_T_event_registration event_registration, MPI_Info *info_used)
{
    MPIT_ENTER();
    struct reg *r = reg_lookup(event_registration);
    if (!r) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    kumi_lock();
    int rc = info_out(r->info, info_used);
    kumi_unlock();
    MPIT_RETURN(rc);
}

int kumi_mpi_t_event_register_callback(MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety,
                                       MPI_Info info, void *user_data, MPI_T_event_cb_function event_cb_function)
{
    MPIT_ENTER();
    struct reg *r = reg_lookup(event_registration);
    if (!r) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    int k = safety_index(cb_safety);
    if (k < 0) MPIT_RETURN(MPI_T_ERR_INVALID);
    kumi_lock();
    MPI_Info n;
    int rc = info_copy(info, &n);
    if (!rc) {
        pthread_mutex_lock(&ev_mutex);
        r->cb[k].fn = event_cb_function;          /* NULL: removes the callback of that safety */
        r->cb[k].user_data = user_data;
        pthread_mutex_unlock(&ev_mutex);
        info_drop(&r->cb[k].info);
        r->cb[k].info = n;
    }
    kumi_unlock();
    MPIT_RETURN(rc);
}

int kumi_mpi_t_event_callback_set_info(MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety,
                                       MPI_Info info)
{
    MPIT_ENTER();
    struct reg *r = reg_lookup(event_registration);
    if (!r) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    int k = safety_index(cb_safety);
    if (k < 0) MPIT_RETURN(MPI_T_ERR_INVALID);
    kumi_lock();
    MPI_Info n;
    int rc = info_copy(info, &n);
    if (!rc) {
        info_drop(&r->cb[k].info);
        r->cb[k].info = n;
    }
    kumi_unlock();
    MPIT_RETURN(rc);
}

int kumi_mpi_t_event_callback_get_info(MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety,
                                       MPI_Info *info_used)
{
    MPIT_ENTER();
    struct reg *r = reg_lookup(event_registration);
    if (!r) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    int k = safety_index(cb_safety);
    if (k < 0) MPIT_RETURN(MPI_T_ERR_INVALID);
    kumi_lock();
    int rc = info_out(r->cb[k].info, info_used);
    kumi_unlock();
    MPIT_RETURN(rc);
}

int kumi_mpi_t_event_set_dropped_handler(MPI_T_event_registration event_registration,
                                         MPI_T_event_dropped_cb_function dropped_cb_function)
{
    MPIT_ENTER();
    struct reg *r = reg_lookup(event_registration);
    if (!r) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    pthread_mutex_lock(&ev_mutex);
    r->dropped = dropped_cb_function;
    pthread_mutex_unlock(&ev_mutex);
    MPIT_RETURN(MPI_SUCCESS);
}

/* ------------------------------------------------------------ instances (no lock) */

static const struct instance *inst_get(MPI_T_event_instance h)
{
    const struct instance *in = (const struct instance *)h;
    return in && in->magic == INST_MAGIC ? in : NULL;
}

int kumi_mpi_t_event_read(MPI_T_event_instance event_instance, int element_index, void *buffer)
{
    if (__atomic_load_n(&kumi_mpit_refcount, __ATOMIC_RELAXED) <= 0) return MPI_T_ERR_NOT_INITIALIZED;
    const struct instance *in = inst_get(event_instance);
    if (!in) return MPI_T_ERR_INVALID_HANDLE;
    if (!buffer) return MPI_T_ERR_INVALID;
    switch (element_index) {
    case 0: memcpy(buffer, &in->d.source, sizeof in->d.source); break;
    case 1: memcpy(buffer, &in->d.tag, sizeof in->d.tag); break;
    case 2: memcpy(buffer, &in->d.bytes, sizeof in->d.bytes); break;
    default: return MPI_T_ERR_INVALID_INDEX;
    }
    return MPI_SUCCESS;
}

int kumi_mpi_t_event_copy(MPI_T_event_instance event_instance, void *buffer)
{
    if (__atomic_load_n(&kumi_mpit_refcount, __ATOMIC_RELAXED) <= 0) return MPI_T_ERR_NOT_INITIALIZED;
    const struct instance *in = inst_get(event_instance);
    if (!in) return MPI_T_ERR_INVALID_HANDLE;
    if (!buffer) return MPI_T_ERR_INVALID;
    memcpy(buffer, &in->d, sizeof in->d);        /* the elements at their displacements */
    return MPI_SUCCESS;
}

int kumi_mpi_t_event_get_timestamp(MPI_T_event_instance event_instance, MPI_Count *event_timestamp)
{
    if (__atomic_load_n(&kumi_mpit_refcount, __ATOMIC_RELAXED) <= 0) return MPI_T_ERR_NOT_INITIALIZED;
    const struct instance *in = inst_get(event_instance);
    if (!in) return MPI_T_ERR_INVALID_HANDLE;
    if (!event_timestamp) return MPI_T_ERR_INVALID;
    *event_timestamp = in->timestamp;
    return MPI_SUCCESS;
}

int kumi_mpi_t_event_get_source(MPI_T_event_instance event_instance, int *source_index)
{
    if (__atomic_load_n(&kumi_mpit_refcount, __ATOMIC_RELAXED) <= 0) return MPI_T_ERR_NOT_INITIALIZED;
    const struct instance *in = inst_get(event_instance);
    if (!in) return MPI_T_ERR_INVALID_HANDLE;
    if (!source_index) return MPI_T_ERR_INVALID;
    *source_index = 0;
    return MPI_SUCCESS;
}
