/* RMA, the target side: applying active-message operations in the progress
 * engine, passive-target locks (the lock word, queued requests, grants),
 * acks, and the control queue (the posted TAG_CTL receive).  See rma.c. */
#define _GNU_SOURCE                     /* process_vm_readv / writev */
#include "rma/rma_impl.h"

struct tgt_op {                         /* an operation being applied here */
    struct kumi_rma *m;
    struct rma_msg h;
    struct rma_blk *blk;                /* NULL: one block */
    char *data;                         /* packed origin data */
    char *reply;
    uint8_t *mem;                       /* target address */
    bool bad;
};

/* ------------------------------------------------------------ target side */

static void target_applied(struct kumi_rma *m, int origin);

static struct tmem tgt_mem(const struct tgt_op *t)
{
    return (struct tmem){ .mem = t->mem, .blk = t->blk, .nblocks = t->blk ? t->h.nblocks : 0, .bytes = t->h.bytes };
}

static void tgt_free(struct tgt_op *t)
{
    free(t->blk);
    free(t->data);
    free(t->reply);
    free(t);
}

static void reply_sent(struct kumi_req *r)
{
    struct tgt_op *t = r->ext;
    kumi_req_free(r);
    tgt_free(t);
}

/* Everything of the operation is here: apply it. */
static void tgt_apply(struct tgt_op *t)
{
    struct kumi_rma *m = t->m;
    int origin = t->h.origin, rc = MPI_SUCCESS;
    if (t->bad) {
        if (t->h.kind == M_GET || t->h.kind == M_GACC || t->h.kind == M_CAS) {
            /* the origin waits for a reply: send zeros */
            t->reply = calloc(1, t->h.bytes ? t->h.bytes : 1);
            if (t->reply && rma_post(m, true, origin, TAG_REPLY, t->reply, t->h.bytes, MPI_BYTE, reply_sent, t, 0, &rc)) {
                target_applied(m, origin);
                return;
            }
        }
        target_applied(m, origin);
        tgt_free(t);
        return;
    }
    struct tmem tm = tgt_mem(t);
    struct kumi_win_ctl *lk = m->w->peers[m->w->rank].ctl;    /* accumulates are atomic with direct ones */
    switch (t->h.kind) {
    case M_PUT:
        if (t->data) rma_tm_scatter(&tm, t->data);
        break;
    case M_ACC:
        rma_acc_lock(lk);
        rma_tm_reduce(&tm, t->h.op, t->h.dt, t->data);
        rma_acc_unlock(lk);
        break;
    case M_GET:
    case M_GACC:
    case M_CAS:
        t->reply = malloc(t->h.bytes ? t->h.bytes : 1);
        if (!t->reply) break;
        if (t->h.kind != M_GET) rma_acc_lock(lk);
        rma_tm_gather(&tm, t->reply);
        if (t->h.kind == M_GACC) {
            rma_tm_reduce(&tm, t->h.op, t->h.dt, t->data);
        } else if (t->h.kind == M_CAS) {
            /* data: the new value, then the compare value */
            if (memcmp(t->reply, t->data + t->h.bytes, t->h.bytes) == 0) rma_tm_scatter(&tm, t->data);
        }
        if (t->h.kind != M_GET) rma_acc_unlock(lk);
        target_applied(m, origin);
        if (!rma_post(m, true, origin, TAG_REPLY, t->reply, t->h.bytes, MPI_BYTE, reply_sent, t, 0, &rc)) {
            kumi_warn("RMA: cannot answer rank %d: %d", origin, rc);
            tgt_free(t);
        }
        return;
    }
    target_applied(m, origin);
    tgt_free(t);
}

static void tgt_data_done(struct kumi_req *r)
{
    struct tgt_op *t = r->ext;
    int last = r->cb_idx;
    kumi_req_free(r);
    if (last) tgt_apply(t);
}

/* Validate and locate the target memory of an operation header. */
static void tgt_locate(struct kumi_rma *m, struct tgt_op *t)
{
    struct kumi_win *w = m->w;
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        if (t->h.span && !kumi_win_region_ok(w, t->h.addr, t->h.span)) t->bad = true;
        t->mem = __builtin_expect(w->ndev, 0) ? kumi_win_dyn_addr(w, t->h.addr) : (uint8_t *)(uintptr_t)t->h.addr;
    } else {
        if (t->h.span && (t->h.addr + t->h.span > (uint64_t)w->wsize || t->h.addr + t->h.span < t->h.addr))
            t->bad = true;
        t->mem = (uint8_t *)w->base + t->h.addr;
    }
    if (t->bad) {
        m->rejected[t->h.origin]++;
        if (!m->errors++)
            m->first_err = kumi_error(MPI_ERR_RMA_RANGE, "RMA: an operation from rank %d addressed %llu bytes at "
                                      "%#llx, outside the window memory of rank %d", t->h.origin,
                                      (unsigned long long)t->h.span, (unsigned long long)t->h.addr, w->rank);
    }
}

static void tgt_op_start(struct kumi_rma *m, const struct rma_msg *h)
{
    int rc = MPI_SUCCESS, o = h->origin;
    struct tgt_op *t = calloc(1, sizeof *t);
    if (!t) { kumi_warn("RMA: out of memory"); return; }
    t->m = m;
    t->h = *h;
    tgt_locate(m, t);
    bool has_data = h->kind == M_PUT || h->kind == M_ACC || h->kind == M_GACC || h->kind == M_CAS;
    size_t dbytes = h->kind == M_CAS ? 2 * h->bytes : h->bytes;
    if (h->nblocks) {                   /* the block list comes first; a Get applies once it is here */
        t->blk = malloc(h->nblocks * sizeof *t->blk);
        if (!t->blk || !rma_post(m, false, o, TAG_DATA, t->blk, h->nblocks * sizeof *t->blk, MPI_BYTE, tgt_data_done, t,
                             has_data ? 0 : 1, &rc))
            goto fail;
    }
    if (has_data) {
        if (h->kind == M_PUT && !h->nblocks && !t->bad) {   /* a contiguous Put lands in place */
            t->h.kind = 0;              /* nothing left to apply (set first: the receive may complete at once) */
            if (!rma_post(m, false, o, TAG_DATA, t->mem, dbytes, MPI_BYTE, tgt_data_done, t, 1, &rc)) goto fail;
            return;
        }
        t->data = malloc(dbytes ? dbytes : 1);
        if (!t->data || !rma_post(m, false, o, TAG_DATA, t->data, dbytes, MPI_BYTE, tgt_data_done, t, 1, &rc))
            goto fail;
        return;
    }
    if (!h->nblocks) tgt_apply(t);
    return;
fail:
    kumi_warn("RMA: cannot take an operation from rank %d (out of memory or %d)", o, rc);
    tgt_free(t);
}

/* ---------------------------------------------------- passive target locks */

/* Take lock word c (type MPI_LOCK_SHARED or _EXCLUSIVE) if it is free enough. */
bool rma_word_try(struct kumi_win_ctl *c, int type)
{
    int32_t v = atomic_load(&c->pt_lock);
    for (;;) {
        int32_t nv;
        if (type == MPI_LOCK_EXCLUSIVE) {
            if (v != 0) return false;
            nv = -1;
        } else {
            if (v < 0) return false;
            nv = v + 1;
        }
        if (atomic_compare_exchange_weak(&c->pt_lock, &v, nv)) return true;
    }
}

/* rma_word_try, after flagging this rank as a waiter (so the release wakes it). */
bool rma_word_try_flagged(struct kumi_rma *m, struct kumi_win_ctl *c, int type)
{
    if (rma_word_try(c, type)) return true;
    if (m->mylocal >= 0 && m->mylocal < 64) atomic_fetch_or(&c->waiters, (uint64_t)1 << m->mylocal);
    return rma_word_try(c, type);
}

/* Release lock word c; the release that frees it wakes the flagged waiters. */
void rma_word_unlock(struct kumi_rma *m, struct kumi_win_ctl *c, int type)
{
    int32_t left = type == MPI_LOCK_EXCLUSIVE ? (atomic_store(&c->pt_lock, 0), 0) : atomic_fetch_sub(&c->pt_lock, 1) - 1;
    if (left != 0) return;
    uint64_t bits = atomic_exchange(&c->waiters, 0);
    while (bits) {
        int i = __builtin_ctzll(bits);
        bits &= bits - 1;
        struct rma_msg r = { .kind = M_RETRY, .origin = m->w->rank };
        if (m->local2rank[i] >= 0 && rma_send_ctl(m, m->local2rank[i], &r) != MPI_SUCCESS)
            kumi_warn("RMA: cannot wake rank %d waiting for a lock", m->local2rank[i]);
    }
    kumi_req_flush_ctl();
}

/* Grant the queued lock requests of active messages, in order, each by
 * taking my lock word for its origin; the first that cannot be taken waits
 * (flagged: the release that frees the word sends me M_RETRY). */
static void grant_queued(struct kumi_rma *m)
{
    struct kumi_win_ctl *c = m->w->peers[m->w->rank].ctl;
    while (m->lockq && rma_word_try_flagged(m, c, m->lockq->type)) {
        struct lockwait *q = m->lockq;
        m->lockq = q->next;
        if (!m->lockq) m->lockq_tail = NULL;
        struct rma_msg g = { .kind = M_GRANT, .origin = m->w->rank };
        if (rma_send_ctl(m, q->origin, &g) != MPI_SUCCESS) kumi_warn("RMA: cannot grant a lock to rank %d", q->origin);
        free(q);
    }
}

static void send_ack(struct kumi_rma *m, int origin, int kind, int type)
{
    /* the origin learns of its own rejected operations (no longer reported here) */
    struct rma_msg a = { .kind = (uint32_t)kind, .origin = m->w->rank, .arg = m->rejected[origin] };
    m->errors -= m->rejected[origin];
    m->rejected[origin] = 0;
    if (kind == M_UNLOCK_ACK) {
        rma_word_unlock(m, m->w->peers[m->w->rank].ctl, type);
        grant_queued(m);
    }
    if (rma_send_ctl(m, origin, &a) != MPI_SUCCESS) kumi_warn("RMA: cannot answer rank %d", origin);
}

/* An operation of origin was applied: answer the UNLOCK / FLUSH that waited for it. */
static void target_applied(struct kumi_rma *m, int origin)
{
    m->applied[origin]++;
    m->applied_total++;
    struct ackwait **pp = &m->ackq;
    while (*pp) {
        struct ackwait *a = *pp;
        if (a->origin == origin && m->applied[origin] >= a->count) {
            *pp = a->next;
            send_ack(m, origin, a->kind, a->type);
            free(a);
        } else {
            pp = &a->next;
        }
    }
}

static void on_ctl(struct kumi_rma *m, const struct rma_msg *h)
{
    int o = h->origin;
    if (o < 0 || o >= m->w->size) return;
    switch (h->kind) {
    case M_PUT: case M_GET: case M_ACC: case M_GACC: case M_CAS:
        tgt_op_start(m, h);
        break;
    case M_LOCK: {
        struct lockwait *q = malloc(sizeof *q);
        if (!q) { kumi_warn("RMA: out of memory: a lock request of rank %d is lost", o); break; }
        q->origin = o; q->type = h->arg; q->next = NULL;
        if (m->lockq_tail) m->lockq_tail->next = q; else m->lockq = q;
        m->lockq_tail = q;
        grant_queued(m);
        break;
    }
    case M_RETRY:                       /* a lock word I wait for was freed */
        grant_queued(m);
        break;
    case M_UNLOCK:
    case M_FLUSH: {
        int ack = h->kind == M_UNLOCK ? M_UNLOCK_ACK : M_FLUSH_ACK;
        if (m->applied[o] >= h->count) {
            send_ack(m, o, ack, h->arg);
        } else {
            struct ackwait *a = malloc(sizeof *a);
            if (!a) { kumi_warn("RMA: out of memory"); break; }
            a->origin = o; a->kind = ack; a->type = h->arg; a->count = h->count; a->next = m->ackq;
            m->ackq = a;
        }
        break;
    }
    case M_GRANT:
        m->granted[o]++;
        break;
    case M_UNLOCK_ACK:
    case M_FLUSH_ACK:
        m->acks[o]++;
        m->ack_errors += h->arg;
        break;
    case M_POST:
        m->posts[o]++;
        break;
    case M_COMPLETE:
        m->completes[o]++;
        m->complete_count[o] = h->count;
        break;
    }
}

static void ctl_done(struct kumi_req *r);

int rma_post_ctl(struct kumi_rma *m)
{
    int rc;
    /* m->ctl is set before the receive starts: it may complete at once (ctl_done clears it) */
    struct kumi_req *r = kumi_req_internal(KUMI_REQ_RECV, m->w->comm, m->w->comm->ctx, "RMA", &m->ctlbuf,
                                           sizeof m->ctlbuf, kumi_dt_get(MPI_BYTE), MPI_ANY_SOURCE, TAG_CTL,
                                           ctl_done, m, 0);
    if (!r) return kumi_error(MPI_ERR_NO_MEM, "RMA: out of memory for a request");
    m->ctl = r;
    rc = kumi_req_start_recv(r);
    if (rc != MPI_SUCCESS) {
        m->ctl = NULL;
        kumi_req_free(r);
    }
    return rc;
}

static int fifo_push(struct kumi_rma *m, const struct rma_msg *h)
{
    if (m->qn == m->qcap) {
        size_t cap = m->qcap ? 2 * m->qcap : 16;
        struct rma_msg *q = malloc(cap * sizeof *q);
        if (!q) return -1;
        for (size_t i = 0; i < m->qn; i++) q[i] = m->q[(m->qh + i) % m->qcap];
        free(m->q);
        m->q = q;
        m->qh = 0;
        m->qcap = cap;
    }
    m->q[(m->qh + m->qn) % m->qcap] = *h;
    m->qn++;
    return 0;
}

/* A control message arrived.  Handling it may rma_post receives that complete at
 * once, and reposting the control receive may match the next message at
 * once: messages go through a queue drained by the outermost call, so that
 * a burst of them is a loop, not a recursion. */
static void ctl_done(struct kumi_req *r)
{
    struct kumi_rma *m = r->ext;
    bool cancelled = kumi_status_cancelled(&r->status);
    struct rma_msg h = m->ctlbuf;
    kumi_req_free(r);
    m->ctl = NULL;
    if (cancelled || m->freeing) return;
    if (fifo_push(m, &h) != 0) kumi_warn("RMA: out of memory: a control message from rank %d is lost", h.origin);
    if (m->draining) return;
    m->draining = true;
    for (;;) {
        while (!m->ctl && !m->freeing)
            if (rma_post_ctl(m) != MPI_SUCCESS) {
                kumi_warn("RMA: cannot rma_post the control receive of a window");
                break;
            }
        if (!m->qn || m->freeing) break;
        struct rma_msg x = m->q[m->qh];
        m->qh = (m->qh + 1) % m->qcap;
        m->qn--;
        on_ctl(m, &x);
    }
    m->draining = false;
}
