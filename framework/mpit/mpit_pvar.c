/* MPI_T: performance variables, sessions and handles (see mpit.h).
 *
 * The variables read the request layer's counters (struct kumi_pvars,
 * request/request.h), which the library keeps in any case; nothing is
 * counted per session.  A session's handle keeps what its reads need:
 * the counter's value when it was started or reset and what it counted while
 * started before, so that sessions do not disturb each other.
 *
 *   p2p_unexpected_queue_length   LEVEL          messages in the unexpected queue now
 *   p2p_unexpected_queue_peak     HIGHWATERMARK  most there at once since MPI_Init
 *   p2p_unexpected_messages       COUNTER        messages that arrived unexpected
 *   p2p_posted_queue_length       LEVEL          receives waiting in the posted queue
 *   p2p_posted_queue_peak         HIGHWATERMARK  most there at once
 *   p2p_rendezvous_sends          COUNTER        sends by rendezvous
 *   p2p_recv_inline               COUNTER        MPI_Recv that took its message straight from
 *                                                the transport (contract 1.9: shared memory)
 *   p2p_comm_unexpected_queue_length  LEVEL, bound to a communicator
 *   p2p_comm_posted_queue_length      LEVEL, bound to a communicator
 *   kumi_base_progress_time       TIMER (double, seconds) in the progress engine
 *   p2p_<transport>_messages_sent COUNTER        for each p2p component found
 *   p2p_<transport>_bytes_sent    COUNTER
 *   accel_send_pieces             COUNTER        device-buffer messages: pieces sent as their
 *                                                copies to host memory ended (request/req_accel.c)
 *   accel_ipc_receives            COUNTER        messages copied device to device from a peer's
 *                                                buffer (CUDA IPC)
 *   accel_coll_pieces             COUNTER        pieces the pipelined collectives ran (every form)
 *                                                (mpi/coll_accel.c)
 *
 * Levels and peaks are continuous and read-only; counters and the timer
 * count while started and may be reset and written. */
#include "mpit/mpit.h"
#include <stdio.h>
#include <stdlib.h>

enum pkind { UE_LEN, UE_PEAK, UE_TOTAL, POSTED_LEN, POSTED_PEAK, RNDV, RECV_INLINE, COMM_UE, COMM_POSTED, PROGRESS,
             TR_MSGS, TR_BYTES, ACC_PIECES, ACC_IPC, ACC_COLL };

struct pvar {
    char name[96];
    char desc[160];
    enum pkind kind;
    int cls, bind, verbosity;
    char comp[64];                  /* category: framework p2p or kumi, this component */
    const char *fw;
};
static struct pvar *pvars;
static int npvars;

#define SESSION_MAGIC 0x4b505353u
#define PHANDLE_MAGIC 0x4b505648u

struct phandle {
    uint32_t magic;
    struct session *s;
    int index;
    int32_t ctx;                    /* bound to a communicator: its context */
    int started;
    uint64_t base, accum;           /* counters */
    double dbase, daccum;           /* the timer */
    struct phandle *next;
};
struct session {
    uint32_t magic;
    struct phandle *handles;
    struct session *next;
};
static struct session *sessions;

static void add(const char *name, const char *desc, enum pkind kind, int cls, int bind, int verb,
                const char *fw, const char *comp)
{
    struct pvar *n = realloc(pvars, (size_t)(npvars + 1) * sizeof *n);
    if (!n) return;
    pvars = n;
    struct pvar *p = &pvars[npvars++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->desc, sizeof p->desc, "%s", desc);
    p->kind = kind;
    p->cls = cls;
    p->bind = bind;
    p->verbosity = verb;
    p->fw = fw;
    snprintf(p->comp, sizeof p->comp, "%s", comp);
}

void kumi_mpit_pvar_setup(void)
{
    add("p2p_unexpected_queue_length", "Messages in the unexpected-message queue (arrived, no receive posted)",
        UE_LEN, MPI_T_PVAR_CLASS_LEVEL, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_USER_BASIC, "p2p", "");
    add("p2p_unexpected_queue_peak", "Most messages in the unexpected-message queue at once",
        UE_PEAK, MPI_T_PVAR_CLASS_HIGHWATERMARK, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_USER_BASIC, "p2p", "");
    add("p2p_unexpected_messages", "Messages that arrived before a receive matched them",
        UE_TOTAL, MPI_T_PVAR_CLASS_COUNTER, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_USER_BASIC, "p2p", "");
    add("p2p_posted_queue_length", "Receives in the posted-receive queue (posted, no message matched yet)",
        POSTED_LEN, MPI_T_PVAR_CLASS_LEVEL, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_USER_BASIC, "p2p", "");
    add("p2p_posted_queue_peak", "Most receives in the posted-receive queue at once",
        POSTED_PEAK, MPI_T_PVAR_CLASS_HIGHWATERMARK, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_USER_DETAIL, "p2p", "");
    add("p2p_rendezvous_sends", "Sends that took the rendezvous protocol (longer than the eager limit)",
        RNDV, MPI_T_PVAR_CLASS_COUNTER, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_TUNER_BASIC, "p2p", "");
    add("p2p_recv_inline", "Blocking receives from one source that took their message straight from the "
        "transport (no request, no queue: MPI_Recv's fast path on shared memory)",
        RECV_INLINE, MPI_T_PVAR_CLASS_COUNTER, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_TUNER_DETAIL, "p2p", "");
    add("p2p_comm_unexpected_queue_length", "Messages of the communicator in the unexpected-message queue",
        COMM_UE, MPI_T_PVAR_CLASS_LEVEL, MPI_T_BIND_MPI_COMM, MPI_T_VERBOSITY_USER_DETAIL, "p2p", "");
    add("p2p_comm_posted_queue_length", "Receives on the communicator in the posted-receive queue",
        COMM_POSTED, MPI_T_PVAR_CLASS_LEVEL, MPI_T_BIND_MPI_COMM, MPI_T_VERBOSITY_USER_DETAIL, "p2p", "");
    add("kumi_base_progress_time", "Seconds spent in the progress engine (polling and waiting)",
        PROGRESS, MPI_T_PVAR_CLASS_TIMER, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_TUNER_BASIC, "kumi", "base");
    add("accel_send_pieces", "Pieces of messages from device buffers sent as their copies to host memory ended",
        ACC_PIECES, MPI_T_PVAR_CLASS_COUNTER, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_TUNER_DETAIL, "accel", "");
    add("accel_ipc_receives", "Messages received device to device from a peer's device buffer (IPC)",
        ACC_IPC, MPI_T_PVAR_CLASS_COUNTER, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_TUNER_DETAIL, "accel", "");
    add("accel_coll_pieces", "Pieces the pipelined collectives on large buffers ran (device buffers; every form)",
        ACC_COLL, MPI_T_PVAR_CLASS_COUNTER, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_TUNER_DETAIL, "accel", "");
    struct kumi_comp_entry **ents;
    int n = kumi_registry_entries(&ents);
    for (int i = 0; i < n; i++) {
        if (strcmp(ents[i]->framework, "p2p") || !ents[i]->comp) continue;
        char name[96], desc[160];
        snprintf(name, sizeof name, "p2p_%s_messages_sent", ents[i]->name);
        snprintf(desc, sizeof desc, "Messages this process sent through p2p/%s", ents[i]->name);
        add(name, desc, TR_MSGS, MPI_T_PVAR_CLASS_COUNTER, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_TUNER_BASIC,
            "p2p", ents[i]->name);
        snprintf(name, sizeof name, "p2p_%s_bytes_sent", ents[i]->name);
        snprintf(desc, sizeof desc, "Payload bytes this process sent through p2p/%s", ents[i]->name);
        add(name, desc, TR_BYTES, MPI_T_PVAR_CLASS_COUNTER, MPI_T_BIND_NO_OBJECT, MPI_T_VERBOSITY_TUNER_BASIC,
            "p2p", ents[i]->name);
    }
}

int kumi_mpit_pvar_count(void) { return npvars; }

void kumi_mpit_pvar_owner(int i, const char **fw, const char **comp)
{
    *fw = pvars[i].fw;
    *comp = pvars[i].comp;
}

static int continuous(const struct pvar *p) { return p->cls == MPI_T_PVAR_CLASS_LEVEL ||
                                                     p->cls == MPI_T_PVAR_CLASS_HIGHWATERMARK; }
static int readonly(const struct pvar *p) { return continuous(p); }
static MPI_Datatype ptype(const struct pvar *p)
{
    return p->kind == PROGRESS ? MPI_DOUBLE : MPI_UNSIGNED_LONG_LONG;
}

/* The counter's value now (the library lock held by the caller). */
static uint64_t raw(const struct pvar *p, int32_t ctx)
{
    uint64_t ue, posted;
    int t;
    switch (p->kind) {
    case UE_LEN: return kumi_pv.ue_len;
    case UE_PEAK: return kumi_pv.ue_peak;
    case UE_TOTAL: return kumi_pv.ue_total;
    case POSTED_LEN: return kumi_pv.posted_len;
    case POSTED_PEAK: return kumi_pv.posted_peak;
    case RNDV: return kumi_pv.rndv;
    case RECV_INLINE: return kumi_pv.recv_inline;
    case ACC_PIECES: return kumi_pv.accel_pieces;
    case ACC_IPC: return kumi_pv.accel_ipc;
    case ACC_COLL: return kumi_pv.accel_coll_pieces;
    case COMM_UE:
    case COMM_POSTED:
        kumi_match_count_ctx(ctx, &ue, &posted);
        return p->kind == COMM_UE ? ue : posted;
    case TR_MSGS:
    case TR_BYTES:
        t = kumi_req_transport_index(p->comp);
        if (t < 0) return 0;
        return p->kind == TR_MSGS ? kumi_pv.msgs[t] : kumi_pv.bytes[t];
    case PROGRESS:
        return 0;
    }
    return 0;
}

int kumi_mpi_t_pvar_get_num(int *num_pvar)
{
    MPIT_ENTER();
    if (!num_pvar) MPIT_RETURN(MPI_T_ERR_INVALID);
    *num_pvar = npvars;
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class,
                             MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind,
                             int *readonly_, int *continuous_, int *atomic)
{
    MPIT_ENTER();
    if (pvar_index < 0 || pvar_index >= npvars) MPIT_RETURN(MPI_T_ERR_INVALID_INDEX);
    const struct pvar *p = &pvars[pvar_index];
    kumi_mpit_string(p->name, name, name_len);
    if (verbosity) *verbosity = p->verbosity;
    if (var_class) *var_class = p->cls;
    if (datatype) *datatype = ptype(p);
    if (enumtype) *enumtype = MPI_T_ENUM_NULL;
    kumi_mpit_string(p->desc, desc, desc_len);
    if (bind) *bind = p->bind;
    if (readonly_) *readonly_ = readonly(p);
    if (continuous_) *continuous_ = continuous(p);
    if (atomic) *atomic = !readonly(p);         /* read and reset under the library lock, which the counters change under */
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_pvar_get_index(const char *name, int var_class, int *pvar_index)
{
    MPIT_ENTER();
    if (!name || !pvar_index) MPIT_RETURN(MPI_T_ERR_INVALID);
    for (int i = 0; i < npvars; i++)
        if (pvars[i].cls == var_class && !strcmp(pvars[i].name, name)) {
            *pvar_index = i;
            MPIT_RETURN(MPI_SUCCESS);
        }
    MPIT_RETURN(MPI_T_ERR_INVALID_NAME);
}

/* ------------------------------------------------------------ sessions */

static struct session *session_lookup(MPI_T_pvar_session h)
{
    for (struct session *s = sessions; s; s = s->next)
        if ((MPI_T_pvar_session)s == h) return s;
    return NULL;
}

int kumi_mpi_t_pvar_session_create(MPI_T_pvar_session *pe_session)
{
    MPIT_ENTER();
    if (!pe_session) MPIT_RETURN(MPI_T_ERR_INVALID);
    struct session *s = calloc(1, sizeof *s);
    if (!s) MPIT_RETURN(MPI_T_ERR_OUT_OF_SESSIONS);
    s->magic = SESSION_MAGIC;
    s->next = sessions;
    sessions = s;
    *pe_session = (MPI_T_pvar_session)s;
    MPIT_RETURN(MPI_SUCCESS);
}

static void handle_stop(struct phandle *h);

static void session_free(struct session *s)
{
    while (s->handles) {
        struct phandle *h = s->handles;
        s->handles = h->next;
        handle_stop(h);
        h->magic = 0;
        free(h);
    }
    for (struct session **pp = &sessions; *pp; pp = &(*pp)->next)
        if (*pp == s) { *pp = s->next; break; }
    s->magic = 0;
    free(s);
}

int kumi_mpi_t_pvar_session_free(MPI_T_pvar_session *pe_session)
{
    MPIT_ENTER();
    if (!pe_session) MPIT_RETURN(MPI_T_ERR_INVALID);
    struct session *s = session_lookup(*pe_session);
    if (!s) MPIT_RETURN(MPI_T_ERR_INVALID_SESSION);
    kumi_lock();
    session_free(s);
    kumi_unlock();
    *pe_session = MPI_T_PVAR_SESSION_NULL;
    MPIT_RETURN(MPI_SUCCESS);
}

void kumi_mpit_pvar_cleanup(void)
{
    kumi_lock();
    while (sessions) session_free(sessions);
    kumi_unlock();
}

/* ------------------------------------------------------------ handles */

int kumi_mpi_t_pvar_handle_alloc(MPI_T_pvar_session pe_session, int pvar_index, void *obj_handle,
                                 MPI_T_pvar_handle *handle, int *count)
{
    MPIT_ENTER();
    struct session *s = session_lookup(pe_session);
    if (!s) MPIT_RETURN(MPI_T_ERR_INVALID_SESSION);
    if (pvar_index < 0 || pvar_index >= npvars) MPIT_RETURN(MPI_T_ERR_INVALID_INDEX);
    if (!handle || !count) MPIT_RETURN(MPI_T_ERR_INVALID);
    const struct pvar *p = &pvars[pvar_index];
    int32_t ctx = 0;
    if (p->bind == MPI_T_BIND_MPI_COMM) {
        /* the communicator must exist (the library initialized) */
        kumi_lock();
        bool live = kumi_state == KUMI_STATE_INIT || kumi_sessions_active;
        struct kumi_comm *c = obj_handle && live ? kumi_comm_get(*(MPI_Comm *)obj_handle) : NULL;
        if (c) ctx = c->ctx;
        kumi_unlock();
        if (!c) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    }
    struct phandle *h = calloc(1, sizeof *h);
    if (!h) MPIT_RETURN(MPI_T_ERR_OUT_OF_HANDLES);
    h->magic = PHANDLE_MAGIC;
    h->s = s;
    h->index = pvar_index;
    h->ctx = ctx;
    h->next = s->handles;
    s->handles = h;
    *count = 1;
    *handle = (MPI_T_pvar_handle)h;
    MPIT_RETURN(MPI_SUCCESS);
}

static struct phandle *handle_lookup(struct session *s, MPI_T_pvar_handle hd)
{
    for (struct phandle *h = s->handles; h; h = h->next)
        if ((MPI_T_pvar_handle)h == hd) return h;
    return NULL;
}

int kumi_mpi_t_pvar_handle_free(MPI_T_pvar_session pe_session, MPI_T_pvar_handle *handle)
{
    MPIT_ENTER();
    struct session *s = session_lookup(pe_session);
    if (!s) MPIT_RETURN(MPI_T_ERR_INVALID_SESSION);
    if (!handle) MPIT_RETURN(MPI_T_ERR_INVALID);
    struct phandle *h = handle_lookup(s, *handle);
    if (!h) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    kumi_lock();
    handle_stop(h);
    kumi_unlock();
    for (struct phandle **pp = &s->handles; *pp; pp = &(*pp)->next)
        if (*pp == h) { *pp = h->next; break; }
    h->magic = 0;
    free(h);
    *handle = MPI_T_PVAR_HANDLE_NULL;
    MPIT_RETURN(MPI_SUCCESS);
}

/* The library lock is held in what follows. */
static void handle_start(struct phandle *h)
{
    const struct pvar *p = &pvars[h->index];
    if (h->started || continuous(p)) return;
    h->started = 1;
    if (p->kind == PROGRESS) {
        kumi_pv.timing++;
        h->dbase = kumi_pv.progress_secs;
    } else {
        h->base = raw(p, h->ctx);
    }
}

static void handle_stop(struct phandle *h)
{
    const struct pvar *p = &pvars[h->index];
    if (!h->started) return;
    h->started = 0;
    if (p->kind == PROGRESS) {
        kumi_pv.timing--;
        h->daccum += kumi_pv.progress_secs - h->dbase;
    } else {
        h->accum += raw(p, h->ctx) - h->base;
    }
}

static void handle_read(struct phandle *h, void *buf)
{
    const struct pvar *p = &pvars[h->index];
    if (p->kind == PROGRESS)
        *(double *)buf = h->daccum + (h->started ? kumi_pv.progress_secs - h->dbase : 0);
    else if (continuous(p))
        *(unsigned long long *)buf = raw(p, h->ctx);
    else
        *(unsigned long long *)buf = h->accum + (h->started ? raw(p, h->ctx) - h->base : 0);
}

static void handle_write(struct phandle *h, const void *buf)
{
    const struct pvar *p = &pvars[h->index];
    if (p->kind == PROGRESS) {
        h->daccum = *(const double *)buf;
        h->dbase = kumi_pv.progress_secs;
    } else {
        h->accum = *(const unsigned long long *)buf;
        h->base = raw(p, h->ctx);
    }
}

enum op { OP_START, OP_STOP, OP_READ, OP_WRITE, OP_RESET, OP_READRESET };

static int pvar_op(MPI_T_pvar_session pe_session, MPI_T_pvar_handle handle, void *buf, enum op op)
{
    MPIT_ENTER();
    struct session *s = session_lookup(pe_session);
    if (!s) MPIT_RETURN(MPI_T_ERR_INVALID_SESSION);
    if (handle == MPI_T_PVAR_ALL_HANDLES) {
        /* start, stop, reset: every handle of the session it applies to (MPI 4.1 sec. 15.3.7) */
        if (op != OP_START && op != OP_STOP && op != OP_RESET) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
        kumi_lock();
        static const double dzero;
        static const unsigned long long zero;
        for (struct phandle *h = s->handles; h; h = h->next) {
            const struct pvar *p = &pvars[h->index];
            if (op == OP_START) handle_start(h);
            else if (op == OP_STOP) handle_stop(h);
            else if (!readonly(p)) handle_write(h, p->kind == PROGRESS ? (const void *)&dzero : (const void *)&zero);
        }
        kumi_unlock();
        MPIT_RETURN(MPI_SUCCESS);
    }
    struct phandle *h = handle_lookup(s, handle);
    if (!h) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    const struct pvar *p = &pvars[h->index];
    if ((op == OP_START || op == OP_STOP) && continuous(p)) MPIT_RETURN(MPI_T_ERR_PVAR_NO_STARTSTOP);
    if ((op == OP_WRITE || op == OP_RESET || op == OP_READRESET) && readonly(p)) MPIT_RETURN(MPI_T_ERR_PVAR_NO_WRITE);
    if ((op == OP_READ || op == OP_WRITE || op == OP_READRESET) && !buf) MPIT_RETURN(MPI_T_ERR_INVALID);
    double dzero = 0;
    unsigned long long zero = 0;
    kumi_lock();
    switch (op) {
    case OP_START: handle_start(h); break;
    case OP_STOP: handle_stop(h); break;
    case OP_READ: handle_read(h, buf); break;
    case OP_WRITE: handle_write(h, buf); break;
    case OP_READRESET:
        handle_read(h, buf);
        /* fall through */
    case OP_RESET:
        handle_write(h, p->kind == PROGRESS ? (const void *)&dzero : (const void *)&zero);
        break;
    }
    kumi_unlock();
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_pvar_start(MPI_T_pvar_session pe_session, MPI_T_pvar_handle handle)
{
    return pvar_op(pe_session, handle, NULL, OP_START);
}

int kumi_mpi_t_pvar_stop(MPI_T_pvar_session pe_session, MPI_T_pvar_handle handle)
{
    return pvar_op(pe_session, handle, NULL, OP_STOP);
}

int kumi_mpi_t_pvar_read(MPI_T_pvar_session pe_session, MPI_T_pvar_handle handle, void *buf)
{
    return pvar_op(pe_session, handle, buf, OP_READ);
}

int kumi_mpi_t_pvar_write(MPI_T_pvar_session pe_session, MPI_T_pvar_handle handle, const void *buf)
{
    return pvar_op(pe_session, handle, (void *)buf, OP_WRITE);
}

int kumi_mpi_t_pvar_reset(MPI_T_pvar_session pe_session, MPI_T_pvar_handle handle)
{
    return pvar_op(pe_session, handle, NULL, OP_RESET);
}

int kumi_mpi_t_pvar_readreset(MPI_T_pvar_session pe_session, MPI_T_pvar_handle handle, void *buf)
{
    return pvar_op(pe_session, handle, buf, OP_READRESET);
}
