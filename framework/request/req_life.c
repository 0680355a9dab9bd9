/* Request layer: the life of a request (the cache of freed ones, the
 * constructors, the kinds' operations, completion and freeing, the link of a
 * buffered send's user request to its internal one, cancelling).  Split from
 * request.c (protocols, upcalls, transports).  The allocation itself is
 * inline in request.h (kumi_req_alloc_inline), for request.c's
 * kumi_req_isend / kumi_req_irecv. */
#include "request/request.h"
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ requests */
struct kumi_req *kumi_req_cache;          /* request.h: kumi_req_alloc_inline */
int kumi_req_cached;

struct kumi_req *kumi_req_alloc(int kind, struct kumi_comm *comm, int32_t ctx)
{
    return kumi_req_alloc_inline(kind, comm, ctx);
}

/* ------------------------------------------------------------ kinds */
static const struct kumi_req_ops *kind_ops[KUMI_REQ_KINDS];

void kumi_req_register_kind(int kind, const struct kumi_req_ops *ops)
{
    if (kind > KUMI_REQ_RECV && kind < KUMI_REQ_KINDS) kind_ops[kind] = ops;
}

const struct kumi_req_ops *kumi_req_kind_ops(const struct kumi_req *r)
{
    return r->kind < KUMI_REQ_KINDS ? kind_ops[r->kind] : NULL;
}

struct kumi_req *kumi_req_msg(int kind, struct kumi_comm *comm, int32_t ctx, const char *fname,
                              void *buf, size_t count, struct kumi_dt *dt, int peer, int tag)
{
    struct kumi_req *r = kumi_req_alloc_inline(kind, comm, ctx);
    if (r) kumi_req_msg_set(r, fname, buf, count, dt, peer, tag);
    return r;
}

struct kumi_req *kumi_req_internal(int kind, struct kumi_comm *comm, int32_t ctx, const char *fname,
                                   void *buf, size_t count, struct kumi_dt *dt, int peer, int tag,
                                   void (*on_complete)(struct kumi_req *r), void *ext, int idx)
{
    struct kumi_req *r = kumi_req_msg(kind, comm, ctx, fname, buf, count, dt, peer, tag);
    if (!r) return NULL;
    r->internal = true;
    r->on_complete = on_complete;
    r->ext = ext;
    r->cb_idx = idx;
    return r;
}

struct kumi_req *kumi_req_new(int kind, struct kumi_comm *comm, int32_t ctx, const char *fname, bool active)
{
    struct kumi_req *r = kumi_req_alloc(kind, comm, ctx);
    if (!r) return NULL;
    r->fname = fname;
    r->peer = MPI_PROC_NULL;
    r->active = active;
    r->pending = active ? 1 : 0;
    return r;
}

void kumi_req_free(struct kumi_req *r)
{
    if (!r) return;
    if (__builtin_expect(r->kind > KUMI_REQ_RECV, 0)) {
        const struct kumi_req_ops *ops = kumi_req_kind_ops(r);
        if (ops && ops->free) ops->free(r);
    }
    if (r->kind == KUMI_REQ_RECV && r->pseq) kumi_match_unpost(r);
    /* a plain send or receive has none of what follows: one test for all */
    if (__builtin_expect(((uintptr_t)r->bsend_req | (uintptr_t)r->bsend_owner | (uintptr_t)r->bsend_seg |
                          (uintptr_t)r->pack | (uintptr_t)r->xbuf | (uintptr_t)r->accel_stage |
                          (uintptr_t)r->partner | (uintptr_t)r->owned) == 0, 1))
        goto release;
    kumi_req_bsend_unlink(r);
    if (r->bsend_owner) {                  /* an internal buffered send that failed to start */
        r->bsend_owner->bsend_req = NULL;
        r->bsend_owner = NULL;
    }
    if (r->bsend_seg) kumi_bsend_release(r);
    if (r->pack) { free(r->pack); r->pack = NULL; }
    if (r->xbuf) { free(r->xbuf); r->xbuf = NULL; }
    if (r->accel_stage) {
        kumi_req_accel_forget(r);
        kumi_stage_end(r->accel_stage, false);
        free(r->accel_stage);
        r->accel_stage = NULL;
    }
    if (r->partner) {
        r->partner->parent = NULL;
        kumi_req_free(r->partner);
    }
    if (r->owned) free(r->owned);
release:
    if (r->comm) {
        if (r->comm->refcount > 1) r->comm->refcount--;   /* (what kumi_comm_release does then) */
        else kumi_comm_release(r->comm);
    }
    if (r->dt && !r->dt->predefined) kumi_dt_release(r->dt);
    r->magic = KUMI_MAGIC_DEAD;
    if (kumi_req_cached < KUMI_REQ_CACHE_MAX) {
        r->qnext = kumi_req_cache;
        kumi_req_cache = r;
        kumi_req_cached++;
    } else {
        free(r);
    }
}

void kumi_req_check_complete(struct kumi_req *r)
{
    if (r->complete || r->pending > 0) return;
    /* a plain send or receive (no copy, no partner, no owner): one test */
    if (__builtin_expect(kumi_req_plain(r), 1)) {
        r->complete = true;
        if (kumi_mt) kumi_progress_wake();
        if (r->user_freed) kumi_req_free(r);
        return;
    }
    if (r->partner && !r->partner->complete) return;   /* Isendrecv: the send is not done yet */
    if (r->xbuf) kumi_req_ext32_finish(r);
    if (r->kind == KUMI_REQ_RECV && r->pack && r->dt && r->dt->size) {
        size_t got = (size_t)kumi_status_bytes(&r->status);
        kumi_dt_unpack_range(r->dt, r->pack, r->count, 0, got, r->buf);
    }
    if (r->kind == KUMI_REQ_SEND && r->pack && !r->bsend_seg) { free(r->pack); r->pack = NULL; }
    if (r->bsend_seg) { kumi_bsend_release(r); r->pack = NULL; }
    if (r->partner && r->status.MPI_ERROR == MPI_SUCCESS) r->status.MPI_ERROR = r->partner->status.MPI_ERROR;
    r->complete = true;
    if (kumi_mt) kumi_progress_wake();
    if (r->parent) {                   /* Isendrecv's send: its receive may be complete now */
        kumi_req_check_complete(r->parent);
        return;                        /* freed with its parent */
    }
    if (r->on_complete) {              /* internal part of a partitioned channel */
        r->on_complete(r);
        return;
    }
    if (r->bsend_owner) {              /* a buffered send's copy: its user request may wait for it */
        struct kumi_req *o = r->bsend_owner;
        if (!o->complete && o->pending > 0) {       /* MPI_Cancel of o: now decided */
            if (kumi_status_cancelled(&r->status)) o->status.MPI_internal[2] = 1;
            o->pending = 0;
            kumi_req_check_complete(o);             /* may free o, and r with it */
        }
        return;                        /* o's: freed with it, or when o starts again */
    }
    if (r->user_freed) kumi_req_free(r);
}

void kumi_req_bsend_link(struct kumi_req *r, struct kumi_req *b)
{
    kumi_req_bsend_unlink(r);
    r->bsend_req = b;
    b->bsend_owner = r;
    b->user_freed = false;
}

void kumi_req_bsend_unlink(struct kumi_req *r)
{
    struct kumi_req *b = r->bsend_req;
    if (!b) return;
    r->bsend_req = NULL;
    b->bsend_owner = NULL;
    if (b->complete) kumi_req_free(b);
    else b->user_freed = true;         /* frees itself once sent */
}

void kumi_req_release(struct kumi_req *r)
{
    if (r->complete || !r->active) kumi_req_free(r);
    else r->user_freed = true;
}

/* ------------------------------------------------------------ cancel (the protocol: request.c) */
static int cancel_answered(void *arg) { return !((struct kumi_req *)arg)->cancel_sent; }

int kumi_req_cancel(struct kumi_req *r)
{
    if (r->kind != KUMI_REQ_SEND && r->kind != KUMI_REQ_RECV) {
        const struct kumi_req_ops *ops = kumi_req_kind_ops(r);
        return ops && ops->cancel ? ops->cancel(r) : MPI_SUCCESS;
    }
    if (!r->active) return MPI_SUCCESS;
    if (r->kind == KUMI_REQ_RECV) {
        if (!r->complete && !r->ue && kumi_match_unpost(r)) {
            r->status.MPI_internal[2] = 1;
            kumi_status_set_bytes(&r->status, 0);
            r->pending = 0;
            kumi_req_check_complete(r);
        }
        return MPI_SUCCESS;
    }
    /* send */
    if (r->mode == KUMI_MODE_BUFFERED) {
        /* the user's request of MPI_Ibsend / MPI_Bsend_init: complete at once,
         * the message is its internal send's; cancel that one, and this
         * request is complete again once the answer came */
        struct kumi_req *b = r->bsend_req;
        if (!b || r->pending > 0 || kumi_status_cancelled(&r->status)) return MPI_SUCCESS;
        int rc = kumi_req_cancel(b);
        if (b->complete) {
            if (kumi_status_cancelled(&b->status)) r->status.MPI_internal[2] = 1;
        } else {
            r->complete = false;
            r->pending = 1;                /* kumi_req_check_complete(b) tells r */
        }
        return rc;
    }
    if (r->peer == MPI_PROC_NULL || r->wpeer < 0 || r->cancel_sent || kumi_status_cancelled(&r->status))
        return MPI_SUCCESS;
    if (r->rndv && r->cts_seen) return MPI_SUCCESS;          /* matched: too late */
    if (r->status.MPI_ERROR != MPI_SUCCESS) return MPI_SUCCESS;
    if (r->mode == KUMI_MODE_SYNC && r->complete) return MPI_SUCCESS; /* ack came: matched */
    if (r->rndv && r->complete) return MPI_SUCCESS;
    struct kumi_hdr h;
    memset(&h, 0, sizeof h);
    h.kind = KUMI_HDR_CANCEL_REQ;
    h.ctx = r->ctx; h.src = r->comm->rank; h.tag = r->tag; h.seq = r->seq;
    h.len = r->bytes;
    h.sreq = (uint64_t)(uintptr_t)r;
    r->cancel_sent = true;
    r->complete = false;                  /* not complete until the answer came */
    r->pending++;
    kumi_req_send_ctl(r->wpeer, &h);
    /* To oneself the answer needs nobody else: wait for it here, so that
     * MPI_Test / MPI_Request_get_status right after MPI_Cancel report the
     * outcome, and a receive posted next cannot take the message. */
    if (r->wpeer == kumi_world_rank() && !kumi_req_in_upcall())
        kumi_progress_wait(cancel_answered, r);
    return MPI_SUCCESS;
}
