/* Point-to-point MPI functions (kumi_mpi_* implementations; the generated
 * bindings have validated communicators, datatypes, counts, ranks and tags).
 *
 * Requests: MPI_Request is a pointer to struct kumi_req.  A non-persistent
 * request is freed (handle set to MPI_REQUEST_NULL) when Wait/Test reports
 * its completion; a persistent one becomes inactive.  Errors of a valid
 * request go to its communicator's error handler; an invalid handle gives
 * MPI_ERR_REQUEST through MPI_COMM_SELF's (kumi_err_handle(NULL, ...)). */
#include "mpi/pt2pt.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */
static struct kumi_req *req_get(MPI_Request h)
{
    return kumi_handle_obj(h, KUMI_MAGIC_REQ);
}

static int bad_request(const char *fn, const char *arg, int i)
{
    if (i >= 0)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_REQUEST, "%s: invalid request in %s[%d]", fn, arg, i));
    return kumi_err_handle(NULL, kumi_error(MPI_ERR_REQUEST, "%s: invalid request in argument %s", fn, arg));
}

/* Buffered send of r's message: an internal request carries the copy in
 * the attached buffer; r itself is complete at once. */
static int bsend_start(struct kumi_req *r)
{
    r->active = true;
    r->complete = true;
    r->pending = 0;
    kumi_status_empty(&r->status);
    kumi_req_bsend_unlink(r);                    /* a persistent request's previous message */
    if (r->peer == MPI_PROC_NULL) return MPI_SUCCESS;
    struct kumi_req *b = kumi_req_internal(KUMI_REQ_SEND, r->comm, r->ctx, r->fname, r->buf, r->count, r->dt,
                                           r->peer, r->tag, NULL, NULL, 0);
    if (!b) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", r->fname);
    int rc = kumi_bsend_prepare(b);
    if (rc) { kumi_req_free(b); return rc; }
    if (r->internal) b->user_freed = true;       /* MPI_Bsend: frees itself once sent */
    else kumi_req_bsend_link(r, b);              /* MPI_Cancel of r reaches it */
    rc = kumi_req_start_send(b);
    if (rc) { kumi_req_free(b); return rc; }
    return MPI_SUCCESS;
}

static int start_req(struct kumi_req *r)
{
    if (__builtin_expect(r->accel_stage != NULL, 0)) {     /* persistent, device buffers */
        int rc = kumi_stage_refill(r->accel_stage);
        if (rc) return rc;
    }
    if (r->kind == KUMI_REQ_RECV) return kumi_req_start_recv(r);
    if (r->kind != KUMI_REQ_SEND) {
        const struct kumi_req_ops *ops = kumi_req_kind_ops(r);
        if (!ops || !ops->start)
            return kumi_error(MPI_ERR_REQUEST, "%s: a %s request cannot be started", r->fname,
                              ops ? ops->name : "non-persistent");
        return ops->start(r);
    }
    if (r->mode == KUMI_MODE_BUFFERED) return bsend_start(r);
    return kumi_req_start_send(r);
}

/* Report a complete request: status out, then free it (non-persistent) or
 * make it inactive (persistent).  Returns its error code (no handler). */
static inline int consume(MPI_Request *h, struct kumi_req *r, MPI_Status *st, const char *fn)
{
    const struct kumi_req_ops *ops = r->kind > KUMI_REQ_RECV ? kumi_req_kind_ops(r) : NULL;
    if (ops && ops->query) {           /* e.g. generalized: query_fn gives the status, then free_fn */
        MPI_Status full;
        int qc = ops->query(r, &full);
        status_out(st, &full);
        int fc = ops->release ? ops->release(r) : MPI_SUCCESS;
        kumi_req_free(r);
        *h = MPI_REQUEST_NULL;
        return qc != MPI_SUCCESS ? qc : fc;
    }
    int code = r->status.MPI_ERROR == MPI_SUCCESS ? MPI_SUCCESS : req_error_code(r, fn);
    if (__builtin_expect(r->accel_stage != NULL, 0)) code = stage_done(r, code);
    status_out(st, &r->status);
    if (r->persistent) {
        r->active = false;
    } else {
        kumi_req_free(r);
        *h = MPI_REQUEST_NULL;
    }
    return code;
}

/* A complete send or receive that consume only frees (no error, status as it is). */
static inline bool done_plain(const struct kumi_req *r)
{
    return r->kind <= KUMI_REQ_RECV && !r->persistent && r->status.MPI_ERROR == MPI_SUCCESS && !r->accel_stage;
}

/* What consume (and consume_handle) does for a done_plain request: status
 * out, the request freed, the handle MPI_REQUEST_NULL. */
static inline int finish_plain(MPI_Request *h, struct kumi_req *r, MPI_Status *st)
{
    status_out(st, &r->status);
    kumi_req_free(r);
    *h = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

/* Same, but invokes the request's communicator's error handler. */
static int consume_handle(MPI_Request *h, struct kumi_req *r, MPI_Status *st, const char *fn)
{
    struct kumi_comm *c = r->comm;
    if (c) c->refcount++;
    int code = consume(h, r, st, fn);
    if (code != MPI_SUCCESS) code = kumi_err_handle(c, code);
    if (c) kumi_comm_release(c);
    return code;
}

/* 1 if the handle is MPI_REQUEST_NULL or an inactive persistent request. */
static int req_idle(MPI_Request h, struct kumi_req *r)
{
    return h == MPI_REQUEST_NULL || (r && !r->active);
}

/* Run a request to completion for a blocking call: returns the error. */
static int blocking(struct kumi_req *r, MPI_Status *st)
{
    int rc = start_req(r);
    if (rc) { kumi_req_free(r); return rc; }
    wait_req(r);
    rc = r->status.MPI_ERROR == MPI_SUCCESS ? MPI_SUCCESS : req_error_code(r, r->fname);
    if (__builtin_expect(r->accel_stage != NULL, 0)) rc = stage_done(r, rc);   /* a device buffer */
    status_out(st, &r->status);
    kumi_req_free(r);
    return rc;
}

/* ------------------------------------------------------------ sends */
int kumi_pt2pt_send(const char *fn, int mode, const void *buf, MPI_Count count, struct kumi_dt *dt,
                    int dest, int tag, struct kumi_comm *comm)
{
    int crc = count_check(fn, "count", count, dt);
    if (crc) return crc;
    struct kumi_stage *lazy = NULL;  /* a device buffer whose copy the request layer fills as it goes */
    if (__builtin_expect(kumi_accel_on, 0)) {
        struct kumi_stage s;
        if ((crc = kumi_stage_begin_send(fn, &s, buf, count, dt, mode != KUMI_MODE_BUFFERED && dt->contig)))
            return crc;
        if (s.host && s.lazy && !(lazy = malloc(sizeof s))) { kumi_stage_end(&s, false); return nomem(fn); }
        if (lazy) { *lazy = s; buf = s.buf; }
        else if (s.host) {
            crc = kumi_pt2pt_send(fn, mode, s.buf, count, dt, dest, tag, comm);
            kumi_stage_end(&s, false);
            return crc;
        }
    }
    if ((mode == KUMI_MODE_STD || mode == KUMI_MODE_READY) && !lazy &&  /* eager, written at once: no request */
        kumi_req_send_direct(comm, buf, (size_t)count, dt, dest, tag)) return MPI_SUCCESS;
    struct kumi_req *r = new_req(KUMI_REQ_SEND, fn, (void *)buf, count, dt, dest, tag, comm);
    if (!r) { stage_drop(lazy); return nomem(fn); }
    r->accel_stage = lazy;
    r->internal = true;
    r->mode = (uint8_t)mode;
    if (mode == KUMI_MODE_BUFFERED) {
        int rc = bsend_start(r);
        kumi_req_free(r);
        return rc;
    }
    return blocking(r, MPI_STATUS_IGNORE);
}

static __attribute__((noinline)) int isend_general(const char *fn, int mode, enum kumi_form form, const void *buf,
                                                   MPI_Count count, struct kumi_dt *dt, int dest, int tag,
                                                   struct kumi_comm *comm, MPI_Request *request);

/* MPI_Isend and the other non-blocking sends.  The common one (standard
 * mode, not persistent, a valid count, no device buffers) goes straight on
 * to the request layer as a tail call: this frame saves no register (the
 * general path, which does, is isend_general). */
int kumi_pt2pt_isend(const char *fn, int mode, enum kumi_form form, const void *buf, MPI_Count count,
                     struct kumi_dt *dt, int dest, int tag, struct kumi_comm *comm, MPI_Request *request)
{
    size_t bytes;
    /* the other calls first, with the arguments where they came (a jump) */
    if (__builtin_expect(mode != KUMI_MODE_STD || form != KUMI_FORM_NB || kumi_accel_on, 0))
        return isend_general(fn, mode, form, buf, count, dt, dest, tag, comm, request);
    if (__builtin_expect(count >= 0 && !__builtin_mul_overflow((size_t)count, dt->size, &bytes) &&
                         bytes <= (size_t)INT64_MAX, 1))
        return kumi_req_isend(comm, fn, buf, (size_t)count, dt, dest, tag, request);
    return isend_general(fn, mode, form, buf, count, dt, dest, tag, comm, request);
}

static __attribute__((noinline)) int isend_general(const char *fn, int mode, enum kumi_form form, const void *buf,
                                                   MPI_Count count, struct kumi_dt *dt, int dest, int tag,
                                                   struct kumi_comm *comm, MPI_Request *request)
{
    bool persistent = form == KUMI_FORM_INIT;
    int crc = count_check(fn, "count", count, dt);
    if (crc) return crc;
    struct kumi_stage *lazy = NULL;  /* as in kumi_pt2pt_send */
    if (__builtin_expect(kumi_accel_on, 0)) {
        struct kumi_stage *sp;
        crc = stage_nb(fn, &sp, buf, count, dt, persistent || mode == KUMI_MODE_BUFFERED || !dt->contig ? 1 : 2);
        if (sp && sp->lazy) { lazy = sp; buf = sp->buf; sp = NULL; }
        if (!crc && sp) {
            crc = kumi_pt2pt_isend(fn, mode, form, sp->buf, count, dt, dest, tag, comm, request);
            if (crc) { kumi_stage_end(sp, false); free(sp); }
            else ((struct kumi_req *)*request)->accel_stage = sp;
            return crc;
        }
        if (crc) return crc;
    }
    if (__builtin_expect(!persistent && mode == KUMI_MODE_STD && !lazy, 1))   /* made and started in one */
        return kumi_req_isend(comm, fn, buf, (size_t)count, dt, dest, tag, request);
    struct kumi_req *r = new_req(KUMI_REQ_SEND, fn, (void *)buf, count, dt, dest, tag, comm);
    if (!r) { stage_drop(lazy); return nomem(fn); }
    r->accel_stage = lazy;
    r->mode = (uint8_t)mode;
    r->persistent = persistent;
    if (!persistent) {                 /* a plain send starts here (start_req: the other modes) */
        int rc = mode == KUMI_MODE_BUFFERED ? start_req(r) : kumi_req_start_send(r);
        if (rc) { kumi_req_free(r); *request = MPI_REQUEST_NULL; return rc; }
    }
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ receives */
static __attribute__((noinline)) int recv_general(const char *fn, enum kumi_form how, void *buf, MPI_Count count,
                                                  struct kumi_dt *dt, int source, int tag, struct kumi_comm *comm,
                                                  MPI_Status *status, MPI_Request *request);

static __attribute__((noinline)) int recv_other(const char *fn, enum kumi_form how, void *buf, MPI_Count count,
                                                struct kumi_dt *dt, int source, int tag, struct kumi_comm *comm,
                                                MPI_Status *status, MPI_Request *request);

/* MPI_Recv, MPI_Irecv, MPI_Recv_init.  MPI_Irecv with a valid count and
 * no device buffers goes straight on to the request layer as a tail call
 * (as kumi_pt2pt_isend); the rest is recv_other. */
int kumi_pt2pt_recv(const char *fn, enum kumi_form how, void *buf, MPI_Count count, struct kumi_dt *dt, int source, int tag,
                    struct kumi_comm *comm, MPI_Status *status, MPI_Request *request)
{
    size_t bytes;
    /* the other calls first, with the arguments where they came (a jump) */
    if (__builtin_expect(how != KUMI_FORM_NB || kumi_accel_on, 0))
        return recv_other(fn, how, buf, count, dt, source, tag, comm, status, request);
    if (__builtin_expect(count >= 0 && !__builtin_mul_overflow((size_t)count, dt->size, &bytes) &&
                         bytes <= (size_t)INT64_MAX, 1))
        return kumi_req_irecv(comm, fn, buf, (size_t)count, dt, source, tag, request);
    return recv_general(fn, how, buf, count, dt, source, tag, comm, status, request);
}

/* MPI_Recv's message taken by kumi_req_recv_inline (header mh; cap bytes of
 * room for count elements): the status and error a request would give. */
static int recv_inline_done(const char *fn, const struct kumi_hdr *mh, size_t count, size_t cap, MPI_Status *status)
{
    uint64_t len = mh->len;
    if (status != MPI_STATUS_IGNORE) {
        status->MPI_SOURCE = mh->src;
        status->MPI_TAG = mh->tag;
        for (int i = 0; i < (int)(sizeof status->MPI_internal / sizeof status->MPI_internal[0]); i++)
            status->MPI_internal[i] = 0;
        kumi_status_set_bytes(status, len < cap ? len : cap);
    }
    if (__builtin_expect(len <= cap, 1)) return MPI_SUCCESS;
    return kumi_err_via(trunc_error(len, mh->src, mh->tag, count, cap), fn, fn);
}

/* MPI_Recv with a valid count and no device buffers: the request made and
 * started in one (as MPI_Irecv's), waited for and freed here (what
 * recv_general's new_req, start_req and blocking do in three steps); the
 * other calls go on to recv_general. */
static __attribute__((noinline)) int recv_other(const char *fn, enum kumi_form how, void *buf, MPI_Count count,
                                                struct kumi_dt *dt, int source, int tag, struct kumi_comm *comm,
                                                MPI_Status *status, MPI_Request *request)
{
    size_t bytes;
    if (how != KUMI_FORM_BLOCKING || kumi_accel_on || count < 0 ||
        __builtin_mul_overflow((size_t)count, dt->size, &bytes) || bytes > (size_t)INT64_MAX)
        return recv_general(fn, how, buf, count, dt, source, tag, comm, status, request);
    struct kumi_hdr mh;                /* from one source, contiguous: straight out of the transport */
    if (source >= 0 && dt->contig &&
        kumi_req_recv_inline(comm, (void *)((uintptr_t)buf + (uintptr_t)dt->true_lb), bytes, source, tag, &mh))
        return recv_inline_done(fn, &mh, (size_t)count, bytes, status);
    MPI_Request h;
    int rc = kumi_req_irecv(comm, fn, buf, (size_t)count, dt, source, tag, &h);
    if (rc) return rc;
    struct kumi_req *r = (struct kumi_req *)h;
    r->internal = true;
    wait_req(r);
    rc = r->status.MPI_ERROR == MPI_SUCCESS ? MPI_SUCCESS : req_error_code(r, fn);
    status_out(status, &r->status);
    kumi_req_free_inline(r);
    return rc;
}

static __attribute__((noinline)) int recv_general(const char *fn, enum kumi_form how, void *buf, MPI_Count count,
                                                  struct kumi_dt *dt, int source, int tag, struct kumi_comm *comm,
                                                  MPI_Status *status, MPI_Request *request)
{
    int rc = count_check(fn, "count", count, dt);
    if (rc) return rc;
    struct kumi_stage *rs = NULL;    /* a device buffer: its host copy, in the request from its start (the
                                        request layer's overlap and IPC see it); copied back at completion */
    if (__builtin_expect(kumi_accel_on, 0)) {
        if ((rc = stage_nb(fn, &rs, buf, count, dt, false))) return rc;
        if (rs) { rs->back = true; buf = rs->buf; }   /* persistent: copied back at each completion */
    }
    if (__builtin_expect(how == KUMI_FORM_NB && !rs, 1))       /* made and started in one */
        return kumi_req_irecv(comm, fn, buf, (size_t)count, dt, source, tag, request);
    struct kumi_req *r = new_req(KUMI_REQ_RECV, fn, buf, (size_t)count, dt, source, tag, comm);
    if (!r) { stage_drop(rs); return nomem(fn); }
    r->accel_stage = rs;
    if (how == KUMI_FORM_BLOCKING) {
        r->internal = true;
        return blocking(r, status);
    }
    if (how == KUMI_FORM_INIT) {
        r->persistent = true;
    } else if ((rc = kumi_req_start_recv(r))) {
        kumi_req_free(r);
        *request = MPI_REQUEST_NULL;
        return rc;
    }
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}
/* ------------------------------------------------------------ matched receives */
/* Turn *message into a started receive request (or NULL for NO_PROC). */
static int msg_recv(void *buf, MPI_Count count, struct kumi_dt *dt, MPI_Message *message, const char *fn,
                    struct kumi_req **out)
{
    *out = NULL;
    if (!message)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: NULL pointer in argument message", fn));
    if (*message == MPI_MESSAGE_NO_PROC) { *message = MPI_MESSAGE_NULL; return MPI_SUCCESS; }
    struct kumi_msg *m = kumi_handle_obj(*message, KUMI_MAGIC_MSG);
    if (!m)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_REQUEST, "%s: invalid message handle in argument message%s",
                                                fn, *message == MPI_MESSAGE_NULL ? " (MPI_MESSAGE_NULL)" : ""));
    int rc = count_check(fn, "count", count, dt);
    if (rc) return kumi_err_handle(m->comm, rc);
    if (count > 0 && !buf)
        return kumi_err_handle(m->comm, kumi_error(MPI_ERR_BUFFER, "%s: NULL buffer with count %lld", fn,
                                                   (long long)count));
    struct kumi_stage *rs = NULL;                   /* a device buffer: received into a host copy */
    if (__builtin_expect(kumi_accel_on, 0)) {
        if ((rc = stage_nb(fn, &rs, buf, count, dt, false))) return kumi_err_handle(m->comm, rc);
        if (rs) buf = rs->buf;
    }
    struct kumi_req *r = new_req(KUMI_REQ_RECV, fn, buf, (size_t)count, dt, m->ue->hdr.src, m->ue->hdr.tag, m->comm);
    if (!r) { stage_drop(rs); return kumi_err_handle(m->comm, nomem(fn)); }
    r->accel_stage = rs;
    rc = kumi_req_start_recv_msg(r, m->ue);
    if (rc) { kumi_req_free(r); return kumi_err_handle(m->comm, rc); }
    kumi_comm_release(m->comm);
    m->magic = KUMI_MAGIC_DEAD;
    free(m);
    *message = MPI_MESSAGE_NULL;
    *out = r;
    return MPI_SUCCESS;
}

int kumi_pt2pt_mrecv(const char *fn, void *buf, MPI_Count count, struct kumi_dt *datatype, MPI_Message *message,
                     MPI_Status *status)
{
    struct kumi_req *r;
    int rc = msg_recv(buf, count, datatype, message, fn, &r);
    if (rc) return rc;
    if (!r) { status_proc_null(status); return MPI_SUCCESS; }
    r->internal = true;
    wait_req(r);
    MPI_Request h = (MPI_Request)r;
    return consume_handle(&h, r, status, fn);
}

int kumi_pt2pt_imrecv(const char *fn, void *buf, MPI_Count count, struct kumi_dt *datatype, MPI_Message *message,
                      MPI_Request *request)
{
    struct kumi_req *r;
    int rc = msg_recv(buf, count, datatype, message, fn, &r);
    if (rc) return rc;
    if (!r) {
        /* MPI_MESSAGE_NO_PROC: a request that is complete at once */
        struct kumi_comm *c = KUMI_COMM_SELF;
        r = new_req(KUMI_REQ_RECV, fn, buf, 0, datatype, MPI_PROC_NULL, MPI_ANY_TAG, c);
        if (!r) return kumi_err_handle(NULL, nomem(fn));
        kumi_req_start_recv(r);
    }
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ wait / test */
int kumi_mpi_wait(MPI_Request *request, MPI_Status *status)
{
    struct kumi_req *r = req_get(*request);
    if (req_idle(*request, r)) { status_empty_out(status); return MPI_SUCCESS; }
    if (!r) return bad_request("MPI_Wait", "request", -1);
    wait_req(r);
    if (__builtin_expect(done_plain(r), 1)) return finish_plain(request, r, status);
    return consume_handle(request, r, status, "MPI_Wait");
}

int kumi_mpi_test(MPI_Request *request, int *flag, MPI_Status *status)
{
    struct kumi_req *r = req_get(*request);
    if (req_idle(*request, r)) {
        *flag = 1;
        status_empty_out(status);
        return MPI_SUCCESS;
    }
    if (!r) return bad_request("MPI_Test", "request", -1);
    if (!r->complete) kumi_progress(0);
    *flag = r->complete;
    if (!r->complete) return MPI_SUCCESS;
    if (__builtin_expect(done_plain(r), 1)) return finish_plain(request, r, status);
    return consume_handle(request, r, status, "MPI_Test");
}

/* Validate an array of requests; returns MPI_SUCCESS or the handled error. */
static int check_array(int count, MPI_Request reqs[], const char *fn)
{
    if (count > 0 && !reqs)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: NULL array_of_requests with count %d", fn, count));
    for (int i = 0; i < count; i++)
        if (reqs[i] != MPI_REQUEST_NULL && !req_get(reqs[i])) return bad_request(fn, "array_of_requests", i);
    return MPI_SUCCESS;
}

/* first: the requests before it are known to be complete (a completed
 * request stays so until the call returns), so that a wait over a window of
 * n requests completing one by one costs n checks, not n^2 / 2. */
struct all_arg { int n; MPI_Request *reqs; int first; };
static int all_done(void *a)
{
    struct all_arg *p = a;
    for (int i = p->first; i < p->n; i++) {
        struct kumi_req *r = (struct kumi_req *)p->reqs[i];
        if (p->reqs[i] != MPI_REQUEST_NULL && r->active && !r->complete) { p->first = i; return 0; }
    }
    p->first = p->n;
    return 1;
}
static int any_done(void *a)
{
    struct all_arg *p = a;
    int active = 0;
    for (int i = 0; i < p->n; i++) {
        struct kumi_req *r = (struct kumi_req *)p->reqs[i];
        if (p->reqs[i] == MPI_REQUEST_NULL || !r->active) continue;
        if (r->complete) return 1;
        active++;
    }
    return active == 0;
}

/* Complete every finished request of the array into statuses (a status
 * for each; MPI_ERROR set); for the ones in idx[0..n) only when idx given.
 * The array was checked (check_array) by the caller.
 * Returns MPI_ERR_IN_STATUS (handled) if one failed. */
static int finish_many(int count, MPI_Request reqs[], MPI_Status statuses[], const int *idx, int nidx,
                       const char *fn, bool all_statuses)
{
    struct kumi_comm *ec = NULL;
    int firsterr = MPI_SUCCESS, nerr = 0;
    int n = idx ? nidx : count;
    for (int k = 0; k < n; k++) {
        int i = idx ? idx[k] : k;
        MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[idx ? k : i];
        /* every caller checked the array (check_array): a handle is a request or MPI_REQUEST_NULL */
        struct kumi_req *r = reqs[i] == MPI_REQUEST_NULL ? NULL : (struct kumi_req *)reqs[i];
        if (req_idle(reqs[i], r)) {
            if (st != MPI_STATUS_IGNORE) kumi_status_empty(st);
            continue;
        }
        if (!r->complete) {             /* only Waitall/Testall get here: not yet */
            if (st != MPI_STATUS_IGNORE && all_statuses) st->MPI_ERROR = MPI_ERR_PENDING;
            continue;
        }
        if (__builtin_expect(done_plain(r), 1)) {   /* what consume does for it */
            if (st != MPI_STATUS_IGNORE) *st = r->status;
            kumi_req_free_inline(r);
            reqs[i] = MPI_REQUEST_NULL;
            continue;
        }
        if (r->status.MPI_ERROR != MPI_SUCCESS && !ec) { ec = r->comm; ec->refcount++; }
        int code = consume(&reqs[i], r, st, fn);
        if (code != MPI_SUCCESS) {
            nerr++;
            if (!firsterr) firsterr = code;
            if (st != MPI_STATUS_IGNORE) st->MPI_ERROR = code;
        } else if (st != MPI_STATUS_IGNORE) {
            st->MPI_ERROR = MPI_SUCCESS;
        }
    }
    if (!nerr) return MPI_SUCCESS;
    int code = statuses == MPI_STATUSES_IGNORE ? firsterr
             : kumi_error(MPI_ERR_IN_STATUS, "%s: %d request(s) failed; see the MPI_ERROR field of the statuses", fn, nerr);
    code = kumi_err_handle(ec, code);
    if (ec) kumi_comm_release(ec);
    return code;
}

int kumi_mpi_waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    int rc = check_array(count, array_of_requests, "MPI_Waitall");
    if (rc) return rc;
    struct all_arg a = { count, array_of_requests, 0 };
    if (!all_done(&a)) kumi_progress_wait(all_done, &a);
    return finish_many(count, array_of_requests, array_of_statuses, NULL, 0, "MPI_Waitall", true);
}

int kumi_mpi_testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[])
{
    int rc = check_array(count, array_of_requests, "MPI_Testall");
    if (rc) return rc;
    struct all_arg a = { count, array_of_requests, 0 };
    if (!all_done(&a)) kumi_progress(0);
    *flag = all_done(&a);
    if (!*flag) return MPI_SUCCESS;
    return finish_many(count, array_of_requests, array_of_statuses, NULL, 0, "MPI_Testall", true);
}

static int pick_any(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *status, const char *fn)
{
    int active = 0;
    for (int i = 0; i < count; i++) {
        struct kumi_req *r = req_get(reqs[i]);
        if (req_idle(reqs[i], r)) continue;
        active++;
        if (r->complete) {
            *index = i;
            *flag = 1;
            return consume_handle(&reqs[i], r, status, fn);
        }
    }
    *index = MPI_UNDEFINED;
    *flag = active == 0;
    if (*flag) status_empty_out(status);
    return MPI_SUCCESS;
}

int kumi_mpi_waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
    int rc = check_array(count, array_of_requests, "MPI_Waitany"), flag;
    if (rc) return rc;
    struct all_arg a = { count, array_of_requests, 0 };
    if (!any_done(&a)) kumi_progress_wait(any_done, &a);
    return pick_any(count, array_of_requests, index, &flag, status, "MPI_Waitany");
}

int kumi_mpi_testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status)
{
    int rc = check_array(count, array_of_requests, "MPI_Testany");
    if (rc) return rc;
    struct all_arg a = { count, array_of_requests, 0 };
    if (!any_done(&a)) kumi_progress(0);
    return pick_any(count, array_of_requests, index, flag, status, "MPI_Testany");
}

static int some(int incount, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[],
                const char *fn)
{
    int active = 0, n = 0;
    for (int i = 0; i < incount; i++) {
        struct kumi_req *r = req_get(reqs[i]);
        if (req_idle(reqs[i], r)) continue;
        active++;
        if (r->complete) indices[n++] = i;
    }
    if (!active) { *outcount = MPI_UNDEFINED; return MPI_SUCCESS; }
    *outcount = n;
    if (!n) return MPI_SUCCESS;
    return finish_many(incount, reqs, statuses, indices, n, fn, false);
}

int kumi_mpi_waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                      MPI_Status array_of_statuses[])
{
    int rc = check_array(incount, array_of_requests, "MPI_Waitsome");
    if (rc) return rc;
    struct all_arg a = { incount, array_of_requests, 0 };
    if (!any_done(&a)) kumi_progress_wait(any_done, &a);
    return some(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, "MPI_Waitsome");
}

int kumi_mpi_testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                      MPI_Status array_of_statuses[])
{
    int rc = check_array(incount, array_of_requests, "MPI_Testsome");
    if (rc) return rc;
    struct all_arg a = { incount, array_of_requests, 0 };
    if (!any_done(&a)) kumi_progress(0);
    return some(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, "MPI_Testsome");
}

/* ------------------------------------------------------------ request management */
int kumi_mpi_cancel(MPI_Request *request)
{
    struct kumi_req *r = request ? req_get(*request) : NULL;
    if (!r) return bad_request("MPI_Cancel", "request", -1);
    int rc = kumi_req_cancel(r);
    return rc ? kumi_err_handle(r->comm, rc) : MPI_SUCCESS;
}

int kumi_mpi_test_cancelled(const MPI_Status *status, int *flag)
{
    if (status == MPI_STATUS_IGNORE || !flag)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Test_cancelled: NULL pointer in argument %s",
                                                !flag ? "flag" : "status"));
    *flag = kumi_status_cancelled(status);
    return MPI_SUCCESS;
}

int kumi_mpi_request_free(MPI_Request *request)
{
    struct kumi_req *r = request ? req_get(*request) : NULL;
    if (!r) return bad_request("MPI_Request_free", "request", -1);
    *request = MPI_REQUEST_NULL;
    const struct kumi_req_ops *ops = kumi_req_kind_ops(r);
    if (r->complete && ops && ops->release) {   /* e.g. generalized: free_fn now; its error is ours */
        int fc = ops->release(r);
        kumi_req_free(r);
        return fc ? kumi_err_handle(NULL, fc) : MPI_SUCCESS;
    }
    kumi_req_release(r);
    return MPI_SUCCESS;
}

int kumi_mpi_request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    struct kumi_req *r = req_get(request);
    if (req_idle(request, r)) {
        *flag = 1;
        status_empty_out(status);
        return MPI_SUCCESS;
    }
    if (!r) return bad_request("MPI_Request_get_status", "request", -1);
    if (!r->complete) kumi_progress(0);
    *flag = r->complete;
    const struct kumi_req_ops *ops = kumi_req_kind_ops(r);
    if (r->complete && ops && ops->query) {   /* e.g. generalized: query_fn, the request stays */
        MPI_Status full;
        int qc = ops->query(r, &full);
        status_out(status, &full);
        return qc ? kumi_err_handle(NULL, qc) : MPI_SUCCESS;
    }
    if (r->complete) status_out(status, &r->status);
    return MPI_SUCCESS;
}

/* ------------------------------------------ MPI 4.1: status of several requests */
/* MPI_Request_get_status_all / _any / _some: as MPI_Testall / _any / _some,
 * but no request is freed or made inactive (MPI 4.1 sec. 3.7.6); statuses
 * and errors follow the rules of the multiple completion calls. */

/* Status and error code of complete request r, leaving it as it is. */
static int peek(struct kumi_req *r, MPI_Status *st, const char *fn)
{
    const struct kumi_req_ops *ops = kumi_req_kind_ops(r);
    if (ops && ops->query) {            /* e.g. generalized: query_fn, the request stays */
        MPI_Status full;
        int qc = ops->query(r, &full);
        status_out(st, &full);
        return qc;
    }
    status_out(st, &r->status);
    return r->status.MPI_ERROR == MPI_SUCCESS ? MPI_SUCCESS : req_error_code(r, fn);
}

/* Statuses (MPI_ERROR set in each) of the complete requests reqs[idx[k]]
 * (idx NULL: every request, the null and inactive ones with the empty
 * status); MPI_ERR_IN_STATUS (handled) if one failed. */
static int peek_many(int count, const MPI_Request reqs[], MPI_Status statuses[], const int *idx, int n,
                     const char *fn)
{
    struct kumi_comm *ec = NULL;
    int firsterr = MPI_SUCCESS, nerr = 0;
    if (!idx) n = count;
    for (int k = 0; k < n; k++) {
        int i = idx ? idx[k] : k;
        MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[k];
        struct kumi_req *r = req_get(reqs[i]);
        if (req_idle(reqs[i], r)) {
            if (st != MPI_STATUS_IGNORE) kumi_status_empty(st);
            continue;
        }
        int code = peek(r, st, fn);
        if (code != MPI_SUCCESS) {
            if (!ec) ec = r->comm;
            nerr++;
            if (!firsterr) firsterr = code;
        }
        if (st != MPI_STATUS_IGNORE) st->MPI_ERROR = code;
    }
    if (!nerr) return MPI_SUCCESS;
    int code = statuses == MPI_STATUSES_IGNORE ? firsterr
             : kumi_error(MPI_ERR_IN_STATUS, "%s: %d request(s) failed; see the MPI_ERROR field of the statuses", fn, nerr);
    return kumi_err_handle(ec, code);
}

static int null_arg(const char *fn, const char *arg)
{
    return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fn, arg));
}

int kumi_mpi_request_get_status_all(int count, const MPI_Request array_of_requests[], int *flag,
                                    MPI_Status *array_of_statuses)
{
    static const char fn[] = "MPI_Request_get_status_all";
    if (!flag) return null_arg(fn, "flag");
    MPI_Request *reqs = (MPI_Request *)array_of_requests;
    int rc = check_array(count, reqs, fn);
    if (rc) return rc;
    struct all_arg a = { count, reqs, 0 };
    if (!all_done(&a)) kumi_progress(0);
    *flag = all_done(&a);
    if (!*flag) return MPI_SUCCESS;
    return peek_many(count, array_of_requests, array_of_statuses, NULL, 0, fn);
}

int kumi_mpi_request_get_status_any(int count, const MPI_Request array_of_requests[], int *indx, int *flag,
                                    MPI_Status *status)
{
    static const char fn[] = "MPI_Request_get_status_any";
    if (!indx || !flag) return null_arg(fn, indx ? "flag" : "indx");
    MPI_Request *reqs = (MPI_Request *)array_of_requests;
    int rc = check_array(count, reqs, fn);
    if (rc) return rc;
    struct all_arg a = { count, reqs, 0 };
    if (!any_done(&a)) kumi_progress(0);
    int active = 0;
    for (int i = 0; i < count; i++) {
        struct kumi_req *r = req_get(reqs[i]);
        if (req_idle(reqs[i], r)) continue;
        active++;
        if (r->complete) {
            *indx = i;
            *flag = 1;
            int code = peek(r, status, fn);
            return code == MPI_SUCCESS ? code : kumi_err_handle(r->comm, code);
        }
    }
    *indx = MPI_UNDEFINED;
    *flag = active == 0;
    if (*flag) status_empty_out(status);
    return MPI_SUCCESS;
}

int kumi_mpi_request_get_status_some(int incount, const MPI_Request array_of_requests[], int *outcount,
                                     int array_of_indices[], MPI_Status *array_of_statuses)
{
    static const char fn[] = "MPI_Request_get_status_some";
    if (!outcount) return null_arg(fn, "outcount");
    if (!array_of_indices && incount > 0) return null_arg(fn, "array_of_indices");
    MPI_Request *reqs = (MPI_Request *)array_of_requests;
    int rc = check_array(incount, reqs, fn);
    if (rc) return rc;
    struct all_arg a = { incount, reqs, 0 };
    if (!any_done(&a)) kumi_progress(0);
    int active = 0, n = 0;
    for (int i = 0; i < incount; i++) {
        struct kumi_req *r = req_get(reqs[i]);
        if (req_idle(reqs[i], r)) continue;
        active++;
        if (r->complete) array_of_indices[n++] = i;
    }
    if (!active) { *outcount = MPI_UNDEFINED; return MPI_SUCCESS; }
    *outcount = n;
    if (!n) return MPI_SUCCESS;
    return peek_many(incount, array_of_requests, array_of_statuses, array_of_indices, n, fn);
}

int kumi_mpi_start(MPI_Request *request)
{
    struct kumi_req *r = request ? req_get(*request) : NULL;
    if (!r) return bad_request("MPI_Start", "request", -1);
    if (!r->persistent || r->active)
        return kumi_err_handle(r->comm, kumi_error(MPI_ERR_REQUEST, "MPI_Start: the request is %s",
                                                   r->persistent ? "already active" : "not persistent"));
    int rc = start_req(r);
    if (rc) { r->active = false; return kumi_err_handle(r->comm, kumi_err_via(rc, "MPI_Start", r->fname)); }
    return MPI_SUCCESS;
}

int kumi_mpi_startall(int count, MPI_Request array_of_requests[])
{
    if (count > 0 && !array_of_requests)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Startall: NULL array_of_requests"));
    for (int i = 0; i < count; i++) {
        struct kumi_req *r = req_get(array_of_requests[i]);
        if (!r) return bad_request("MPI_Startall", "array_of_requests", i);
        if (!r->persistent || r->active)
            return kumi_err_handle(r->comm, kumi_error(MPI_ERR_REQUEST, "MPI_Startall: array_of_requests[%d] is %s",
                                                       i, r->persistent ? "already active" : "not persistent"));
    }
    for (int i = 0; i < count; i++) {
        struct kumi_req *r = req_get(array_of_requests[i]);
        int rc = start_req(r);
        if (rc) { r->active = false; return kumi_err_handle(r->comm, kumi_err_via(rc, "MPI_Startall", r->fname)); }
    }
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ counts */
static int64_t elements_of(const MPI_Status *st, const struct kumi_dt *dt)
{
    return kumi_dt_elements(dt, kumi_status_bytes(st));   /* core/dt_pack.c */
}

int kumi_mpi_get_count(const MPI_Status *status, struct kumi_dt *datatype, int *count)
{
    if (status == MPI_STATUS_IGNORE || !count)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Get_count: NULL pointer in argument %s",
                                                !count ? "count" : "status"));
    uint64_t bytes = kumi_status_bytes(status);
    if (datatype->size == 0) { *count = 0; return MPI_SUCCESS; }
    if (bytes % datatype->size || bytes / datatype->size > INT_MAX) *count = MPI_UNDEFINED;
    else *count = (int)(bytes / datatype->size);
    return MPI_SUCCESS;
}

int kumi_mpi_get_elements(const MPI_Status *status, struct kumi_dt *datatype, int *count)
{
    if (status == MPI_STATUS_IGNORE || !count)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Get_elements: NULL pointer in argument %s",
                                                !count ? "count" : "status"));
    int64_t n = elements_of(status, datatype);
    *count = (n == MPI_UNDEFINED || n > INT_MAX) ? MPI_UNDEFINED : (int)n;
    return MPI_SUCCESS;
}

int kumi_mpi_get_elements_x(const MPI_Status *status, struct kumi_dt *datatype, MPI_Count *count)
{
    if (status == MPI_STATUS_IGNORE || !count)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Get_elements_x: NULL pointer in argument %s",
                                                !count ? "count" : "status"));
    *count = (MPI_Count)elements_of(status, datatype);
    return MPI_SUCCESS;
}

/* ------------------------------------------- MPI 5.0 status accessors */
static int status_null(const char *fn)
{
    return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument status is NULL", fn));
}

int kumi_mpi_status_get_source(const MPI_Status *status, int *source)
{
    if (!status) return status_null("MPI_Status_get_source");
    if (!source) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Status_get_source: argument source is NULL"));
    *source = status->MPI_SOURCE;
    return MPI_SUCCESS;
}

int kumi_mpi_status_get_tag(const MPI_Status *status, int *tag)
{
    if (!status) return status_null("MPI_Status_get_tag");
    if (!tag) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Status_get_tag: argument tag is NULL"));
    *tag = status->MPI_TAG;
    return MPI_SUCCESS;
}

int kumi_mpi_status_get_error(const MPI_Status *status, int *error)
{
    if (!status) return status_null("MPI_Status_get_error");
    if (!error) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Status_get_error: argument error is NULL"));
    *error = status->MPI_ERROR;
    return MPI_SUCCESS;
}

int kumi_mpi_status_set_source(MPI_Status *status, int source)
{
    if (!status) return status_null("MPI_Status_set_source");
    status->MPI_SOURCE = source;
    return MPI_SUCCESS;
}

int kumi_mpi_status_set_tag(MPI_Status *status, int tag)
{
    if (!status) return status_null("MPI_Status_set_tag");
    status->MPI_TAG = tag;
    return MPI_SUCCESS;
}

int kumi_mpi_status_set_error(MPI_Status *status, int error)
{
    if (!status) return status_null("MPI_Status_set_error");
    status->MPI_ERROR = error;
    return MPI_SUCCESS;
}
