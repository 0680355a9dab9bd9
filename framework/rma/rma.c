/* RMA operations and synchronisation (MPI-4 chapter 12).
 *
 * Direct path (rma.h): an origin on the target's host whose memory it can
 * reach (mapped segment, or CMA for Win_create) does the operation itself,
 * complete when the call returns; accumulates take the target's accumulate
 * lock word (a futex in the host's segment), so they are atomic against
 * every other accumulate on that target, direct or not.  Passive-target
 * locks of same-host origins are the target's lock word (>0 shared holders,
 * -1 exclusive); a waiter sets its bit in the control block's waiters mask
 * (local ranks 0-63; others poll) and the release that frees the word sends
 * each flagged rank an M_RETRY message, which ends its sleep in the progress
 * engine.  So a lock, put and unlock on a same-host target complete while
 * the target computes without calling MPI.
 *
 * Transport RMA: Put and Get to a target whose transport has remote memory
 * access (p2p/ofi) and that registered its window memory with it
 * (peers[t].fab) are that transport's remote writes and reads, one per
 * contiguous block of the target layout, from the origin buffer (or a packed
 * copy) straight into the target's memory; a write is complete once its bytes
 * are in the target's memory, so these count as local operations (m->local)
 * and every synchronisation waits for them before its messages go.
 *
 * Active messages (everything else): operations travel over the window's
 * private communicator (w->comm, point-to-point context) as requests the
 * target applies in its progress engine (inside any MPI call it makes):
 *   tag CTL    a 64-byte struct rma_msg: an operation's header, or a
 *              synchronisation message (lock, grant, unlock, flush, their
 *              acks, post, complete); every rank keeps one receive from
 *              MPI_ANY_SOURCE posted for them;
 *   tag DATA   what an operation header announces, from the origin: the
 *              target layout (a list of blocks) when the target datatype is
 *              not contiguous, then the packed origin data (Put, Accumulate,
 *              Get_accumulate, Compare_and_swap);
 *   tag REPLY  from the target: the packed target data of Get,
 *              Get_accumulate, Fetch_and_op, Compare_and_swap.
 * MPI's non-overtaking order between two ranks keeps these apart without
 * sequence numbers: the target posts the DATA receives of an operation when
 * its header arrives, before it can see the next header; the origin posts its
 * REPLY receives in the order of its requests, which the target answers in
 * that order.
 *
 * The origin describes the target memory completely (byte offset from the
 * window's base, or an address in a dynamic window; blocks of whole basic
 * elements; the basic datatype and op for accumulates), so the target needs
 * no datatype of the origin's.  Accumulates apply on the target in the order
 * they arrive from one origin (accumulate_ordering rar,raw,war,waw holds) and
 * one at a time (the progress engine runs one callback at a time), so
 * concurrent accumulates to one location are atomic per element.
 *
 * Completion: each origin counts the operations it sent to each target
 * (cumulative); each target counts the ones it applied from each origin.
 *   fence     wait for local completion, a reduce-scatter of the counts tells
 *             each target how many to expect, wait for them, barrier;
 *   PSCW      Post sends POST to the origins; Start waits for them; Complete
 *             sends COMPLETE(count) to the targets; Wait/Test until every
 *             origin's COMPLETE came and its count was applied;
 *   passive   LOCK waits for a GRANT: the target queues lock requests and
 *             grants them in order by taking its own lock word for the
 *             origin (retried at M_RETRY while a same-host holder has it);
 *             UNLOCK(count) and FLUSH(count) are answered once that many
 *             operations of the origin were applied.  Direct operations are
 *             complete at once, so a flush or unlock sends FLUSH only when
 *             active messages went out since the last one.
 * Progress: the target applies active messages when it calls MPI (or while
 * the thread engine's progress thread runs); a passive-target epoch of an
 * origin on another host (or on a dynamic window) waits until it does. */
#define _GNU_SOURCE                     /* process_vm_readv / writev */
#include "rma/rma_impl.h"

int kumi_rma_direct = 1;
int kumi_rma_fabric = 1;

/* MPI_Rput & co.: complete in the progress engine; not cancellable, not persistent */
static const struct kumi_req_ops rma_req_ops = { .name = "RMA" };

void kumi_rma_register(void)
{
    kumi_req_register_kind(KUMI_REQ_RMA, &rma_req_ops);
}

void kumi_rma_register_params(void)
{
    kumi_param_register_bool("kumi", "base", "rma_direct", 1,
                             "RMA on a target of the same host goes straight to its memory (shared "
                             "segment, or process_vm_readv/writev for MPI_Win_create windows) and "
                             "passive-target locks to its lock word; false: every operation and lock is "
                             "an active message the target applies when it calls MPI",
                             KUMI_LEVEL_TUNER, &kumi_rma_direct);
    kumi_param_register_bool("kumi", "base", "rma_fabric", 1,
                             "Put and Get to a rank served by a transport with remote memory access "
                             "(p2p/ofi) are remote writes and reads of its registered window memory; "
                             "false: active messages",
                             KUMI_LEVEL_TUNER, &kumi_rma_fabric);
}

/* --------------------------------------------------------------- helpers */

int rma_check_target(struct kumi_win *w, const char *fn, int rank)
{
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (rank < 0 || rank >= w->size)
        return kumi_error(MPI_ERR_RANK, "%s: invalid target rank %d in a window of %d processes", fn, rank,
                          w->size);
    return MPI_SUCCESS;
}

/* Is an access epoch to target t open? */
bool rma_in_epoch(struct kumi_rma *m, int t)
{
    if (m->fence_epoch || m->lock_all || m->lock[t]) return true;
    for (int i = 0; i < m->nstart; i++)
        if (m->start_ranks[i] == t) return true;
    return false;
}

/* An internal message on the window's communicator; on_done (may be NULL)
 * runs when it completes and owns r then (it must free it). */
static struct kumi_req *post_own(struct kumi_rma *m, bool send, int peer, int tag, void *buf, size_t count,
                                 MPI_Datatype dt, void (*on_done)(struct kumi_req *), void *ext, int idx,
                                 void *owned, int *rc)
{
    struct kumi_win *w = m->w;
    struct kumi_req *r = kumi_req_internal(send ? KUMI_REQ_SEND : KUMI_REQ_RECV, w->comm, w->comm->ctx, "RMA", buf,
                                           count, kumi_dt_get(dt), peer, tag, on_done, ext, idx);
    if (!r) {
        *rc = kumi_error(MPI_ERR_NO_MEM, "RMA: out of memory for a request");
        return NULL;
    }
    r->owned = owned;                   /* freed with the request */
    /* may complete at once: on_done runs (and owns r) before this returns */
    *rc = send ? kumi_req_start_send(r) : kumi_req_start_recv(r);
    if (*rc != MPI_SUCCESS) {
        r->owned = NULL;
        kumi_req_free(r);
        return NULL;
    }
    return r;
}

struct kumi_req *rma_post(struct kumi_rma *m, bool send, int peer, int tag, void *buf, size_t count,
                             MPI_Datatype dt, void (*on_done)(struct kumi_req *), void *ext, int idx, int *rc)
{
    return post_own(m, send, peer, tag, buf, count, dt, on_done, ext, idx, NULL, rc);
}

static void free_done(struct kumi_req *r) { kumi_req_free(r); }

/* A control message (copied: the request layer sends 64 bytes eagerly). */
int rma_send_ctl(struct kumi_rma *m, int to, const struct rma_msg *msg)
{
    struct rma_msg *copy = malloc(sizeof *copy);
    if (!copy) return kumi_error(MPI_ERR_NO_MEM, "RMA: out of memory");
    *copy = *msg;
    int rc;
    if (!post_own(m, true, to, TAG_CTL, copy, sizeof *copy, MPI_BYTE, free_done, NULL, 0, copy, &rc)) {
        free(copy);
        return rc;
    }
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------- target rma_layout */

/* The blocks of count elements of dt: its data bytes in type-map order (the
 * packed form's order; the padding of a pair type is no data), offsets
 * from the first element's address; merged where adjacent.  A block holds
 * whole basic elements except for the padded pair types, whose value and
 * int may fall in separate blocks (rma_tm_reduce takes care of them).  *span: bytes from
 * the address to the end of the last block; *lo: lowest offset (may be < 0
 * with a negative lower bound).  Returns the number of blocks or -1 (memory). */
long rma_layout(const struct kumi_dt *dt, size_t count, struct rma_blk **out, int64_t *lo, uint64_t *span)
{
    size_t n = 0, cap = 8;
    struct rma_blk *b = malloc(cap * sizeof *b);
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    if (!b) return -1;
    for (size_t k = 0; k < count; k++)
        for (size_t s = 0; s < dt->nsegs; s++) {
            const struct kumi_dt_seg *g = &dt->segs[s];
            for (size_t i = 0; i < g->count; i++) {
                int64_t off = (int64_t)k * dt->extent + g->off + (int64_t)i * g->stride;
                if (g->len == 0) continue;
                if (n && (int64_t)(b[n - 1].off + b[n - 1].len) == off) {
                    b[n - 1].len += g->len;
                } else {
                    if (n == cap) {
                        struct rma_blk *nb = realloc(b, 2 * cap * sizeof *b);
                        if (!nb) { free(b); return -1; }
                        b = nb;
                        cap *= 2;
                    }
                    b[n].off = (uint64_t)off;
                    b[n].len = g->len;
                    n++;
                }
                if (off < mn) mn = off;
                if (off + (int64_t)g->len > mx) mx = off + (int64_t)g->len;
            }
        }
    *out = b;
    *lo = n ? mn : 0;
    *span = n ? (uint64_t)mx : 0;
    return (long)n;
}

/* ------------------------------------------------------- target memory */

/* CMA between packed local data and the blocks of t; 0 or an errno. */
static int cma_io(const struct tmem *t, char *packed, bool write)
{
    enum { NV = 512 };
    struct iovec rv[NV], lv;
    uint64_t i = 0, n = t->blk ? t->nblocks : 1;
    while (i < n) {
        size_t k = 0, len = 0;
        for (; i < n && k < NV; i++, k++) {
            uint64_t off = t->blk ? t->blk[i].off : 0, l = t->blk ? t->blk[i].len : t->bytes;
            rv[k].iov_base = t->mem + off;
            rv[k].iov_len = l;
            len += l;
        }
        lv.iov_base = packed;
        lv.iov_len = len;
        ssize_t got = write ? process_vm_writev(t->pid, &lv, 1, rv, k, 0) : process_vm_readv(t->pid, &lv, 1, rv, k, 0);
        if (got < 0) return errno ? errno : EIO;
        if ((size_t)got != len) return EFAULT;
        packed += len;
    }
    return 0;
}

/* Target blocks -> packed bytes. */
int rma_tm_gather(const struct tmem *t, char *out)
{
    if (t->pid) return cma_io(t, out, false);
    if (!t->blk) { memmove(out, t->mem, t->bytes); return 0; }
    for (uint64_t i = 0; i < t->nblocks; i++) {
        memcpy(out, t->mem + t->blk[i].off, t->blk[i].len);
        out += t->blk[i].len;
    }
    return 0;
}

/* Packed bytes -> target blocks. */
int rma_tm_scatter(const struct tmem *t, const char *in)
{
    if (t->pid) return cma_io(t, (char *)in, true);
    if (!t->blk) { memmove(t->mem, in, t->bytes); return 0; }
    for (uint64_t i = 0; i < t->nblocks; i++) {
        memcpy(t->mem + t->blk[i].off, in, t->blk[i].len);
        in += t->blk[i].len;
    }
    return 0;
}

/* inout op= in, n packed elements of a basic type whose packed form is not
 * its memory layout (the padded pair types MPI_SHORT_INT, MPI_LONG_INT,
 * MPI_DOUBLE_INT, MPI_LONG_DOUBLE_INT: 6, 12, 12, 20 bytes of data in an
 * extent of 8, 16, 16, 32, the int not always right after the value).  The
 * reduction kernels take the memory layout, so each chunk is unpacked into
 * element-aligned scratch, reduced there and packed back: the padding is
 * never taken for data, and nothing is read or written past the n * size
 * bytes of the packed buffers. */
static void reduce_packed(MPI_Op op, const struct kumi_dt *d, const char *in, char *inout, size_t n)
{
    enum { CHUNK = 32, MAXEXT = 64 };
    union { long double align_; char b[CHUNK * MAXEXT]; } a, b;
    size_t per = (size_t)d->extent <= MAXEXT ? CHUNK : 1, es = d->size;
    if ((size_t)d->extent > MAXEXT) return;           /* no predefined type is that wide */
    for (size_t j = 0; j < n; j += per) {
        size_t k = n - j < per ? n - j : per;
        kumi_dt_unpack(d, in + j * es, k, a.b);
        kumi_dt_unpack(d, inout + j * es, k, b.b);
        kumi_op_reduce(op, a.b, b.b, k, d->handle);
        kumi_dt_pack(d, b.b, k, inout + j * es);
    }
}

/* target op= packed bytes (elements of basic datatype dth). */
int rma_tm_reduce(const struct tmem *t, int32_t oph, uint64_t dth, const char *in)
{
    MPI_Op op = (MPI_Op)(uintptr_t)(intptr_t)oph;
    MPI_Datatype dt = (MPI_Datatype)(uintptr_t)dth;
    struct kumi_dt *d = kumi_dt_get(dt);
    size_t es = d ? d->size : 0;
    if (!es || op == MPI_NO_OP) return 0;
    if (op == MPI_REPLACE) return rma_tm_scatter(t, in);
    if ((MPI_Aint)es != d->extent) {   /* a padded pair type: gather, reduce packed, scatter */
        char *tmp = malloc(t->bytes ? t->bytes : 1);
        if (!tmp) return ENOMEM;
        int e = rma_tm_gather(t, tmp);
        if (!e) {
            reduce_packed(op, d, in, tmp, t->bytes / es);
            e = rma_tm_scatter(t, tmp);
        }
        free(tmp);
        return e;
    }
    if (t->pid) {                       /* read, reduce here, write back */
        char *tmp = malloc(t->bytes ? t->bytes : 1);
        if (!tmp) return ENOMEM;
        int e = rma_tm_gather(t, tmp);
        if (!e) {
            kumi_op_reduce(op, in, tmp, t->bytes / es, dt);
            e = rma_tm_scatter(t, tmp);
        }
        free(tmp);
        return e;
    }
    if (!t->blk) {
        kumi_op_reduce(op, in, t->mem, t->bytes / es, dt);
        return 0;
    }
    for (uint64_t i = 0; i < t->nblocks; i++) {
        kumi_op_reduce(op, in, t->mem + t->blk[i].off, t->blk[i].len / es, dt);
        in += t->blk[i].len;
    }
    return 0;
}

/* The accumulate lock of a rank's memory: a futex in the host's segment
 * (0 free, 1 held, 2 held with waiters).  Held only around memory accesses. */
void rma_acc_lock(struct kumi_win_ctl *c)
{
    uint32_t v = 0;
    if (atomic_compare_exchange_strong(&c->acc_lock, &v, 1)) return;
    for (int i = 0; i < 100; i++) {     /* the holder is mid-copy: it is short */
        sched_yield();
        v = 0;
        if (atomic_compare_exchange_strong(&c->acc_lock, &v, 1)) return;
    }
    while (atomic_exchange(&c->acc_lock, 2) != 0)
        syscall(SYS_futex, (uint32_t *)&c->acc_lock, FUTEX_WAIT, 2, NULL, NULL, 0);
}

void rma_acc_unlock(struct kumi_win_ctl *c)
{
    if (atomic_exchange(&c->acc_lock, 0) == 2) syscall(SYS_futex, (uint32_t *)&c->acc_lock, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* ------------------------------------------------------------ life cycle */

int kumi_rma_nwins;                      /* windows that exist */

int kumi_rma_win_init(struct kumi_win *w)
{
    struct kumi_rma *m = calloc(1, sizeof *m);
    size_t n = (size_t)w->size;
    if (!m) return kumi_error(MPI_ERR_NO_MEM, "window: out of memory");
    m->w = w;
    m->sent = calloc(n, sizeof *m->sent);
    m->applied = calloc(n, sizeof *m->applied);
    m->complete_count = calloc(n, sizeof *m->complete_count);
    m->lock = calloc(n, sizeof *m->lock);
    m->lock_nocheck = calloc(n, sizeof *m->lock_nocheck);
    m->granted = calloc(n, sizeof *m->granted);
    m->acks = calloc(n, sizeof *m->acks);
    m->posts = calloc(n, sizeof *m->posts);
    m->completes = calloc(n, sizeof *m->completes);
    m->lockw = calloc(n, 1);
    m->cma_off = calloc(n, 1);
    m->synced = calloc(n, sizeof *m->synced);
    m->rejected = calloc(n, sizeof *m->rejected);
    m->local2rank = malloc(n * sizeof *m->local2rank);
    m->nstart = m->npost = -1;
    m->mylocal = w->peers[w->rank].local;
    if (m->local2rank) {
        for (size_t i = 0; i < n; i++) m->local2rank[i] = -1;
        for (int r = 0; r < w->size; r++)
            if (w->peers[r].local >= 0) m->local2rank[w->peers[r].local] = r;
    }
    w->rma = m;
    kumi_rma_nwins++;                    /* kumi_rma_win_fini counts it out */
    rma_ckpt_link(m);
    if (!m->sent || !m->applied || !m->complete_count || !m->lock || !m->lock_nocheck || !m->granted || !m->acks ||
        !m->posts || !m->completes || !m->lockw || !m->cma_off || !m->synced || !m->rejected || !m->local2rank) {
        kumi_rma_win_fini(w, NULL);
        return kumi_error(MPI_ERR_NO_MEM, "window: out of memory");
    }
    int rc = rma_post_ctl(m);
    if (rc) { kumi_rma_win_fini(w, NULL); return rc; }
    /* every rank listens before anybody sends */
    return w->comm->coll.barrier((MPI_Comm)w->comm);
}

int kumi_rma_win_fini(struct kumi_win *w, const char *fname)
{
    struct kumi_rma *m = w->rma;
    if (!m) return MPI_SUCCESS;
    if (fname) {
        if (m->nstart >= 0 || m->npost >= 0 || m->lock_all)
            return kumi_error(MPI_ERR_RMA_SYNC, "%s: an RMA epoch is still open on this window", fname);
        for (int t = 0; t < w->size; t++)
            if (m->lock[t]) return kumi_error(MPI_ERR_RMA_SYNC, "%s: rank %d is still locked by this process", fname, t);
        /* operations still on their way (after a fence, none; after unlocks, none either:
           but operations to this rank from others whose epochs ended need no more) */
        rma_wait_local(m);
        int rc = w->comm->coll.barrier((MPI_Comm)w->comm);
        if (!rc && __builtin_expect(w->ndev, 0)) rc = kumi_rma_dev_sync(w, fname, 0);  /* device memory: last updates */
        if (rc) return rc;
    }
    m->freeing = true;
    if (m->ctl) {
        struct kumi_req *r = m->ctl;
        m->ctl = NULL;
        r->on_complete = NULL;
        kumi_match_unpost(r);
        kumi_req_free(r);
    }
    while (m->lockq) { struct lockwait *q = m->lockq; m->lockq = q->next; free(q); }
    while (m->ackq) { struct ackwait *a = m->ackq; m->ackq = a->next; free(a); }
    free(m->sent); free(m->applied); free(m->complete_count); free(m->lock); free(m->lock_nocheck);
    free(m->granted); free(m->acks); free(m->posts); free(m->completes);
    free(m->lockw); free(m->cma_off); free(m->synced); free(m->rejected); free(m->local2rank);
    free(m->start_ranks); free(m->post_ranks);
    free(m->q);
    kumi_rma_nwins--;
    rma_ckpt_unlink(m);
    free(m);
    w->rma = NULL;
    return MPI_SUCCESS;
}
