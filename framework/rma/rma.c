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
#include "rma/rma.h"
#include "request/request.h"
#include <kumi/param.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

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

enum { TAG_CTL = KUMI_TAG_RMA_CTL, TAG_DATA = KUMI_TAG_RMA_DATA, TAG_REPLY = KUMI_TAG_RMA_REPLY };   /* core/ids.h */
enum {
    M_PUT = 1, M_GET, M_ACC, M_GACC, M_CAS,
    M_LOCK, M_GRANT, M_UNLOCK, M_UNLOCK_ACK, M_FLUSH, M_FLUSH_ACK, M_POST, M_COMPLETE, M_RETRY
};

struct rma_msg {                        /* 64 bytes, on TAG_CTL */
    uint32_t kind;
    int32_t origin;                     /* sender's rank in w->comm */
    int32_t op;                         /* accumulates: predefined MPI_Op handle value */
    int32_t arg;                        /* LOCK, UNLOCK: lock type; acks: errors found */
    uint64_t addr;                      /* target: byte offset from base (dynamic: address) */
    uint64_t bytes;                     /* packed bytes of the target data */
    uint64_t dt;                        /* accumulates: the basic datatype handle */
    uint64_t nblocks;                   /* 0: one block [addr, addr+bytes); else a list follows */
    uint64_t count;                     /* UNLOCK / FLUSH / COMPLETE: operations sent so far */
    uint64_t span;                      /* bytes from addr to the end of the last block */
};
_Static_assert(sizeof(struct rma_msg) == 64, "one cache line");

struct rma_blk { uint64_t off, len; }; /* off from the target address */

/* A lock request a target cannot grant yet. */
struct lockwait { int origin, type; struct lockwait *next; };
/* An UNLOCK or FLUSH waiting for the origin's operations. */
struct ackwait { int origin, kind, type; uint64_t count; struct ackwait *next; };

struct kumi_rma {
    struct kumi_win *w;
    struct kumi_req *ctl;               /* the posted receive of TAG_CTL */
    struct rma_msg ctlbuf;
    /* origin side */
    uint64_t *sent;                     /* [size] operations sent to each target */
    int *lock;                          /* [size] 0, MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE (held) */
    int *lock_nocheck;                  /* [size] taken with MPI_MODE_NOCHECK: no messages */
    char *lockw;                        /* [size] the lock is held on the target's lock word */
    char *cma_off;                      /* [size] CMA was refused: active messages from now on */
    uint64_t *synced;                   /* [size] sent[t] when the last FLUSH / UNLOCK was answered */
    int mylocal;                        /* my index among the window's ranks of my host */
    int *local2rank;                    /* [ranks of my host] their ranks in the window */
    int *granted;                       /* [size] GRANTs received (cumulative) */
    int *acks;                          /* [size] UNLOCK_ACK / FLUSH_ACK received (cumulative) */
    int ack_errors;                     /* errors targets reported in acks */
    int fab_errors;                     /* transport RMA operations that failed */
    int *posts;                         /* [size] POSTs received, not yet consumed by a Start */
    long local;                         /* my requests not yet complete (sends, replies) */
    bool lock_all;
    bool fence_epoch;                   /* between fences (no MPI_MODE_NOSUCCEED) */
    int *start_ranks, nstart;           /* PSCW access epoch: targets; nstart < 0: none */
    /* target side */
    uint64_t *applied;                  /* [size] operations applied from each origin */
    uint64_t applied_total;
    int *completes;                     /* [size] COMPLETEs received, not yet consumed */
    uint64_t *complete_count;           /* [size] the count the last COMPLETE carried */
    int *post_ranks, npost;             /* exposure epoch: origins; npost < 0: none */
    struct lockwait *lockq, *lockq_tail; /* lock requests of active messages not granted yet */
    struct ackwait *ackq;
    int errors;                         /* operations rejected here, not reported to their origin yet */
    int first_err;                      /* error code of the first one (reported at my next sync) */
    int *rejected;                      /* [size] of them per origin (its next UNLOCK / FLUSH ack says so) */
    bool freeing;
    bool draining;                      /* ctl_done is handling queued control messages */
    struct rma_msg *q;                  /* control messages not handled yet (a ring) */
    size_t qh, qn, qcap;
};

/* --------------------------------------------------------------- helpers */

static int check_target(struct kumi_win *w, const char *fn, int rank)
{
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (rank < 0 || rank >= w->size)
        return kumi_error(MPI_ERR_RANK, "%s: invalid target rank %d in a window of %d processes", fn, rank,
                          w->size);
    return MPI_SUCCESS;
}

/* Is an access epoch to target t open? */
static bool in_epoch(struct kumi_rma *m, int t)
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

static struct kumi_req *post(struct kumi_rma *m, bool send, int peer, int tag, void *buf, size_t count,
                             MPI_Datatype dt, void (*on_done)(struct kumi_req *), void *ext, int idx, int *rc)
{
    return post_own(m, send, peer, tag, buf, count, dt, on_done, ext, idx, NULL, rc);
}

static void free_done(struct kumi_req *r) { kumi_req_free(r); }

/* A control message (copied: the request layer sends 64 bytes eagerly). */
static int send_ctl(struct kumi_rma *m, int to, const struct rma_msg *msg)
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

/* ---------------------------------------------------------- target layout */

/* The blocks of count elements of dt (whole basic elements each), offsets
 * from the first element's address; merged where adjacent.  *span: bytes from
 * the address to the end of the last block; *lo: lowest offset (may be < 0
 * with a negative lower bound).  Returns the number of blocks or -1 (memory). */
static long layout(const struct kumi_dt *dt, size_t count, struct rma_blk **out, int64_t *lo, uint64_t *span)
{
    size_t n = 0, cap = 8;
    struct rma_blk *b = malloc(cap * sizeof *b);
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    if (!b) return -1;
    for (size_t k = 0; k < count; k++)
        for (size_t s = 0; s < dt->nosegs; s++) {
            const struct kumi_dt_seg *g = &dt->osegs[s];
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

/* The target memory of one operation: blocks from mem, mapped in this
 * process (pid 0) or in process pid (reached with CMA). */
struct tmem {
    uint8_t *mem;
    const struct rma_blk *blk;          /* NULL: one block of bytes */
    uint64_t nblocks, bytes;
    int pid;
};

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
static int tm_gather(const struct tmem *t, char *out)
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
static int tm_scatter(const struct tmem *t, const char *in)
{
    if (t->pid) return cma_io(t, (char *)in, true);
    if (!t->blk) { memmove(t->mem, in, t->bytes); return 0; }
    for (uint64_t i = 0; i < t->nblocks; i++) {
        memcpy(t->mem + t->blk[i].off, in, t->blk[i].len);
        in += t->blk[i].len;
    }
    return 0;
}

/* target op= packed bytes (elements of basic datatype dth). */
static int tm_reduce(const struct tmem *t, int32_t oph, uint64_t dth, const char *in)
{
    MPI_Op op = (MPI_Op)(uintptr_t)(intptr_t)oph;
    MPI_Datatype dt = (MPI_Datatype)(uintptr_t)dth;
    struct kumi_dt *d = kumi_dt_get(dt);
    size_t es = d ? d->size : 0;
    if (!es || op == MPI_NO_OP) return 0;
    if (op == MPI_REPLACE) return tm_scatter(t, in);
    if (t->pid) {                       /* read, reduce here, write back */
        char *tmp = malloc(t->bytes ? t->bytes : 1);
        if (!tmp) return ENOMEM;
        int e = tm_gather(t, tmp);
        if (!e) {
            kumi_op_reduce(op, in, tmp, t->bytes / es, dt);
            e = tm_scatter(t, tmp);
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
static void acc_lock(struct kumi_win_ctl *c)
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

static void acc_unlock(struct kumi_win_ctl *c)
{
    if (atomic_exchange(&c->acc_lock, 0) == 2) syscall(SYS_futex, (uint32_t *)&c->acc_lock, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* ------------------------------------------------------------ target side */

struct tgt_op {                         /* an operation being applied here */
    struct kumi_rma *m;
    struct rma_msg h;
    struct rma_blk *blk;                /* NULL: one block */
    char *data;                         /* packed origin data */
    char *reply;
    uint8_t *mem;                       /* target address */
    bool bad;
};

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
            if (t->reply && post(m, true, origin, TAG_REPLY, t->reply, t->h.bytes, MPI_BYTE, reply_sent, t, 0, &rc)) {
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
        if (t->data) tm_scatter(&tm, t->data);
        break;
    case M_ACC:
        acc_lock(lk);
        tm_reduce(&tm, t->h.op, t->h.dt, t->data);
        acc_unlock(lk);
        break;
    case M_GET:
    case M_GACC:
    case M_CAS:
        t->reply = malloc(t->h.bytes ? t->h.bytes : 1);
        if (!t->reply) break;
        if (t->h.kind != M_GET) acc_lock(lk);
        tm_gather(&tm, t->reply);
        if (t->h.kind == M_GACC) {
            tm_reduce(&tm, t->h.op, t->h.dt, t->data);
        } else if (t->h.kind == M_CAS) {
            /* data: the new value, then the compare value */
            if (memcmp(t->reply, t->data + t->h.bytes, t->h.bytes) == 0) tm_scatter(&tm, t->data);
        }
        if (t->h.kind != M_GET) acc_unlock(lk);
        target_applied(m, origin);
        if (!post(m, true, origin, TAG_REPLY, t->reply, t->h.bytes, MPI_BYTE, reply_sent, t, 0, &rc)) {
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
        t->mem = (uint8_t *)(uintptr_t)t->h.addr;
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
        if (!t->blk || !post(m, false, o, TAG_DATA, t->blk, h->nblocks * sizeof *t->blk, MPI_BYTE, tgt_data_done, t,
                             has_data ? 0 : 1, &rc))
            goto fail;
    }
    if (has_data) {
        if (h->kind == M_PUT && !h->nblocks && !t->bad) {   /* a contiguous Put lands in place */
            t->h.kind = 0;              /* nothing left to apply (set first: the receive may complete at once) */
            if (!post(m, false, o, TAG_DATA, t->mem, dbytes, MPI_BYTE, tgt_data_done, t, 1, &rc)) goto fail;
            return;
        }
        t->data = malloc(dbytes ? dbytes : 1);
        if (!t->data || !post(m, false, o, TAG_DATA, t->data, dbytes, MPI_BYTE, tgt_data_done, t, 1, &rc))
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
static bool word_try(struct kumi_win_ctl *c, int type)
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

/* word_try, after flagging this rank as a waiter (so the release wakes it). */
static bool word_try_flagged(struct kumi_rma *m, struct kumi_win_ctl *c, int type)
{
    if (word_try(c, type)) return true;
    if (m->mylocal >= 0 && m->mylocal < 64) atomic_fetch_or(&c->waiters, (uint64_t)1 << m->mylocal);
    return word_try(c, type);
}

/* Release lock word c; the release that frees it wakes the flagged waiters. */
static void word_unlock(struct kumi_rma *m, struct kumi_win_ctl *c, int type)
{
    int32_t left = type == MPI_LOCK_EXCLUSIVE ? (atomic_store(&c->pt_lock, 0), 0) : atomic_fetch_sub(&c->pt_lock, 1) - 1;
    if (left != 0) return;
    uint64_t bits = atomic_exchange(&c->waiters, 0);
    while (bits) {
        int i = __builtin_ctzll(bits);
        bits &= bits - 1;
        struct rma_msg r = { .kind = M_RETRY, .origin = m->w->rank };
        if (m->local2rank[i] >= 0 && send_ctl(m, m->local2rank[i], &r) != MPI_SUCCESS)
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
    while (m->lockq && word_try_flagged(m, c, m->lockq->type)) {
        struct lockwait *q = m->lockq;
        m->lockq = q->next;
        if (!m->lockq) m->lockq_tail = NULL;
        struct rma_msg g = { .kind = M_GRANT, .origin = m->w->rank };
        if (send_ctl(m, q->origin, &g) != MPI_SUCCESS) kumi_warn("RMA: cannot grant a lock to rank %d", q->origin);
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
        word_unlock(m, m->w->peers[m->w->rank].ctl, type);
        grant_queued(m);
    }
    if (send_ctl(m, origin, &a) != MPI_SUCCESS) kumi_warn("RMA: cannot answer rank %d", origin);
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

static int post_ctl(struct kumi_rma *m)
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

/* A control message arrived.  Handling it may post receives that complete at
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
            if (post_ctl(m) != MPI_SUCCESS) {
                kumi_warn("RMA: cannot post the control receive of a window");
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

/* -------------------------------------------------------------- origin side */

struct org_op {                         /* an operation's local part */
    struct kumi_rma *m;
    void *pack;                         /* packed origin data (sent) */
    struct rma_blk *blk;                /* the block list (sent) */
    void *reply;                        /* packed result (received) */
    void *result; size_t rcount; struct kumi_dt *rdt;   /* where the result goes */
    struct kumi_req *ureq;              /* R* request, or NULL */
    int parts;                          /* internal requests not yet complete */
    struct kumi_p2p_rma *fops;          /* transport RMA: one per block */
    bool fab_unpack;                    /* transport Get: unpack reply into result at the end */
};

/* One part of o is over: the last one completes the R* request and frees o. */
static void org_put(struct org_op *o)
{
    if (--o->parts > 0) return;
    o->m->local--;
    if (o->fab_unpack) kumi_dt_unpack(o->rdt, o->reply, o->rcount, o->result);
    if (o->ureq) {
        o->ureq->pending = 0;
        kumi_req_check_complete(o->ureq);
    }
    free(o->pack);
    free(o->blk);
    free(o->reply);
    free(o->fops);
    kumi_dt_release(o->rdt);
    free(o);
}

static void org_part_done(struct kumi_req *r)
{
    struct org_op *o = r->ext;
    int e = r->status.MPI_ERROR;
    bool is_reply = r->cb_idx == 1;
    kumi_req_free(r);
    if (is_reply && o->reply && o->result) kumi_dt_unpack(o->rdt, o->reply, o->rcount, o->result);
    if (e != MPI_SUCCESS && o->ureq) o->ureq->status.MPI_ERROR = e;
    org_put(o);
}

enum { K_PUT, K_GET, K_ACC, K_GACC, K_CAS };

struct opargs {
    const void *oaddr; size_t ocount; struct kumi_dt *odt;
    void *raddr; size_t rcount; struct kumi_dt *rdt;
    const void *caddr;                  /* compare value (CAS) */
    int target; MPI_Aint disp; size_t tcount; struct kumi_dt *tdt;
    struct kumi_op *op;
};

/* Is [addr, addr+len) in a region of table d (rma.h)?  1 yes, 0 no, -1 the
 * table does not list them all (or its owner never finishes writing it). */
static int dyn_lookup(struct kumi_win_dyn *d, uint64_t addr, uint64_t len)
{
    for (int tries = 0; tries < 100000; tries++) {
        uint32_t s1 = atomic_load_explicit(&d->seq, memory_order_acquire);
        if (s1 & 1) {                   /* the owner is writing it */
            sched_yield();
            continue;
        }
        uint32_t n = atomic_load_explicit(&d->n, memory_order_relaxed);
        int in = n > KUMI_WIN_DYN_MAX ? -1 : 0;
        for (uint32_t i = 0; in == 0 && i < n; i++) {
            uint64_t b = atomic_load_explicit(&d->r[i].base, memory_order_relaxed);
            uint64_t l = atomic_load_explicit(&d->r[i].len, memory_order_relaxed);
            if (addr >= b && addr + len >= addr && addr + len <= b + l) in = 1;
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&d->seq, memory_order_relaxed) == s1) return in;
    }
    return -1;
}

/* Where this rank reaches the target memory [addr, addr+span) of t directly:
 * at *base + addr, mapped here (*pid 0) or in process *pid (CMA); dynamic
 * windows: *base 0 (addresses are absolute), within the regions t attached.
 * Returns 1 (direct), 0 (active messages) or -1 (dynamic: outside every
 * region t attached). */
static int direct_mem(struct kumi_rma *m, int t, uint64_t addr, uint64_t span, uint8_t **base, int *pid)
{
    struct kumi_win *w = m->w;
    struct kumi_win_peer *p = &w->peers[t];
    if (!kumi_rma_direct || !p->ctl) return 0;
    *pid = 0;
    *base = NULL;
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        if (t == w->rank) return kumi_win_region_ok(w, addr, span) ? 1 : -1;
        if (!p->cma || m->cma_off[t] || !p->dyn) return 0;
        int in = dyn_lookup(p->dyn, addr, span);
        if (in < 0) {                   /* too many regions to check here: active messages from now on */
            m->cma_off[t] = 1;          /* (one way, so operations to t stay in order) */
            return 0;
        }
        *pid = p->pid;
        return in ? 1 : -1;
    }
    if (p->direct) { *base = p->direct; return 1; }
    if (t == w->rank) { *base = w->base; return 1; }
    if (p->cma && !m->cma_off[t]) {
        *base = (uint8_t *)(uintptr_t)p->base;
        *pid = p->pid;
        return 1;
    }
    return 0;
}

enum { DIRECT_REFUSED = -1 };           /* CMA not permitted: nothing was done, use active messages */

/* One operation on target memory tm, done here and complete on return;
 * accumulates under the target's accumulate lock word. */
static int direct_op(struct kumi_rma *m, const char *fn, int kind, const struct opargs *a, const struct tmem *tm)
{
    struct kumi_win_ctl *lk = m->w->peers[a->target].ctl;
    size_t n = tm->bytes;
    char *in = NULL, *res = NULL, *tmp = NULL;
    int e = 0;
    /* origin data: in place when contiguous, else packed */
    if (kind == K_PUT || kind == K_ACC || (kind == K_GACC && a->op->handle != MPI_NO_OP)) {
        if (a->odt->contig) {
            in = (char *)a->oaddr + a->odt->true_lb;
        } else {
            if (!(tmp = malloc(n))) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
            kumi_dt_pack(a->odt, a->oaddr, a->ocount, tmp);
            in = tmp;
        }
    } else if (kind == K_CAS) {
        in = (char *)a->oaddr;
    }
    /* result: in place when contiguous, else packed then unpacked */
    bool unpack = false;
    if (kind == K_GET || kind == K_GACC || kind == K_CAS) {
        if (a->rdt->contig) {
            res = (char *)a->raddr + a->rdt->true_lb;
        } else {
            if (!(res = malloc(n))) { free(tmp); return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); }
            unpack = true;
        }
    }
    switch (kind) {
    case K_PUT:
        e = tm_scatter(tm, in);
        break;
    case K_GET:
        e = tm_gather(tm, res);
        break;
    case K_ACC:
        acc_lock(lk);
        e = tm_reduce(tm, (int32_t)(intptr_t)a->op->handle, (uint64_t)(uintptr_t)kumi_dt_basic_handle(a->tdt), in);
        acc_unlock(lk);
        break;
    case K_GACC:
    case K_CAS: {
        /* the old value goes to a buffer of its own: result and origin may overlap */
        char small[64];
        char *old = unpack ? res : n <= sizeof small ? small : malloc(n);
        if (!old) { e = ENOMEM; break; }
        acc_lock(lk);
        e = tm_gather(tm, old);
        if (!e && kind == K_GACC)
            e = tm_reduce(tm, (int32_t)(intptr_t)a->op->handle, (uint64_t)(uintptr_t)kumi_dt_basic_handle(a->tdt), in);
        else if (!e && memcmp(old, a->caddr, n) == 0)
            e = tm_scatter(tm, in);
        acc_unlock(lk);
        if (!unpack) {
            if (!e) memcpy(res, old, n);
            if (old != small) free(old);
        }
        break;
    }
    }
    if (!e && unpack) kumi_dt_unpack(a->rdt, res, a->rcount, a->raddr);
    free(tmp);
    if (unpack) free(res);
    if (!e) return MPI_SUCCESS;
    /* permission is refused at the first access, before anything was written */
    if (tm->pid && (e == EPERM || e == ENOSYS || e == ESRCH)) return DIRECT_REFUSED;
    if (e == ENOMEM) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    return kumi_error(MPI_ERR_OTHER, "%s: cannot reach the window memory of rank %d (%s: %s)", fn, a->target,
                      tm->pid ? "process_vm_readv/writev" : "copy", strerror(e));
}

/* A remote write or read of o is over (from the transport's progress). */
static void fab_done(struct kumi_p2p_rma *f, int err)
{
    struct org_op *o = f->owner;
    if (err != MPI_SUCCESS) {
        o->m->fab_errors++;
        o->fab_unpack = false;
        if (o->ureq && o->ureq->status.MPI_ERROR == MPI_SUCCESS) o->ureq->status.MPI_ERROR = err;
    }
    org_put(o);
}

/* Put or Get of tbytes at byte offset addr of the target's registration, in
 * the nb blocks blk (nb 0: one), through its transport's RMA.  *took: the
 * operation exists (it owns blk, and u completes with it, errors included);
 * false: nothing was done (out of memory). */
static int fab_op(struct kumi_rma *m, const char *fn, int kind, const struct opargs *a, uint64_t addr,
                  struct rma_blk *blk, long nb, size_t tbytes, struct kumi_req *u, bool *took)
{
    struct kumi_win_peer *p = &m->w->peers[a->target];
    int wt = kumi_comm_world_rank(m->w->comm, a->target);
    const struct kumi_p2p_ops *ops = kumi_req_transport(wt);
    size_t n = nb > 0 ? (size_t)nb : 1;
    struct org_op *o = calloc(1, sizeof *o);
    if (o) o->fops = calloc(n, sizeof *o->fops);
    *took = false;
    if (!o || !o->fops) {
        free(o);
        return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    }
    o->m = m;
    char *buf;                          /* the packed origin data / the result, contiguous */
    if (kind == K_PUT) {
        if (a->odt->contig) {
            buf = (char *)a->oaddr + a->odt->true_lb;
        } else {
            if (!(o->pack = malloc(tbytes))) goto nomem;
            kumi_dt_pack(a->odt, a->oaddr, a->ocount, o->pack);
            buf = o->pack;
        }
    } else if (a->rdt->contig) {
        buf = (char *)a->raddr + a->rdt->true_lb;
    } else {
        if (!(o->reply = malloc(tbytes))) goto nomem;
        o->result = a->raddr;
        o->rcount = a->rcount;
        o->rdt = a->rdt;
        kumi_dt_retain(o->rdt);
        o->fab_unpack = true;
        buf = o->reply;
    }
    *took = true;
    o->ureq = u;
    o->blk = blk;
    o->parts = 1;                       /* held until every block is started */
    m->local++;
    size_t off = 0;
    int rc = MPI_SUCCESS;
    for (size_t i = 0; i < n; i++) {
        struct kumi_p2p_rma *f = &o->fops[i];
        size_t len = nb > 0 ? blk[i].len : tbytes;
        f->write = kind == K_PUT;
        f->local = buf + off;
        f->len = len;
        f->raddr = p->rkey.addr + addr + (nb > 0 ? blk[i].off : 0);
        f->key = p->rkey.key;
        f->done = fab_done;
        f->owner = o;
        off += len;
        o->parts++;
        if ((rc = ops->rma(wt, f)) != MPI_SUCCESS) {
            o->parts--;
            break;
        }
    }
    if (rc) {                           /* what started finishes on its own */
        o->fab_unpack = false;
        if (u) u->status.MPI_ERROR = rc;
    }
    org_put(o);
    return rc;
nomem:
    free(o->pack);
    free(o->reply);
    free(o->fops);
    free(o);
    return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
}

/* Issue one operation; *ureq (R* forms) gets a request that completes with
 * the local part. */
static int issue(struct kumi_win *w, const char *fn, int kind, struct opargs *a, MPI_Request *ureq)
{
    struct kumi_rma *m = w->rma;
    int rc = check_target(w, fn, a->target);
    if (rc) return rc;
    if (a->target != MPI_PROC_NULL && !in_epoch(m, a->target))
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: no access epoch to rank %d is open on this window (call "
                          "MPI_Win_fence, MPI_Win_start, MPI_Win_lock or MPI_Win_lock_all first)", fn, a->target);
    if (kind == K_ACC || kind == K_GACC) {
        MPI_Datatype bh = kumi_dt_basic_handle(a->tdt);
        if (bh == MPI_DATATYPE_NULL)
            return kumi_error(MPI_ERR_TYPE, "%s: the target datatype of an accumulate must consist of one "
                              "predefined datatype", fn);
        if (!a->op->predefined)
            return kumi_error(MPI_ERR_OP, "%s: accumulate operations take predefined operations only "
                              "(not user-defined ones)", fn);
        if (a->op->handle != MPI_REPLACE && a->op->handle != MPI_NO_OP &&
            !kumi_op_valid_for(a->op, kumi_dt_get(bh)))
            return kumi_error(MPI_ERR_OP, "%s: the operation is not defined for the target's basic datatype", fn);
    }
    size_t tbytes = a->tcount * a->tdt->size;
    if (kind == K_PUT || kind == K_ACC || (kind == K_GACC && a->op->handle != MPI_NO_OP)) {
        if (a->ocount * a->odt->size != tbytes)
            return kumi_error(MPI_ERR_TYPE, "%s: the origin data (%zu bytes) and the target data (%zu bytes) "
                              "differ in size", fn, a->ocount * a->odt->size, tbytes);
    }
    if (kind == K_GET || kind == K_GACC) {
        if (a->rcount * a->rdt->size != tbytes)
            return kumi_error(MPI_ERR_TYPE, "%s: the result buffer (%zu bytes) and the target data (%zu bytes) "
                              "differ in size", fn, a->rcount * a->rdt->size, tbytes);
    }
    struct kumi_req *u = NULL;
    if (ureq) {
        u = kumi_req_new(KUMI_REQ_RMA, w->comm, w->comm->ctx, fn, true);
        if (!u) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        *ureq = (MPI_Request)u;
    }
    if (a->target == MPI_PROC_NULL || tbytes == 0) {
        if (u) { u->pending = 0; kumi_req_check_complete(u); }
        return MPI_SUCCESS;
    }
    /* target layout */
    struct rma_blk *blk = NULL;
    int64_t lo;
    uint64_t span;
    long nb;
    bool contig = a->tdt->contig && a->tdt->true_lb == 0;
    if (contig) {
        nb = 0; lo = 0; span = tbytes;
    } else if ((nb = layout(a->tdt, a->tcount, &blk, &lo, &span)) < 0) {
        rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        goto fail;
    }
    struct kumi_win_peer *p = &w->peers[a->target];
    uint64_t addr;
    if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        addr = (uint64_t)a->disp;
    } else {
        int64_t off = (int64_t)a->disp * p->disp_unit + lo;
        if (a->disp < 0 || off < 0 || (uint64_t)off + (span - (uint64_t)lo) > p->size) {
            rc = kumi_error(MPI_ERR_RMA_RANGE, "%s: target displacement %lld (disp_unit %d, %llu bytes) is "
                            "outside the %llu bytes of rank %d's window", fn, (long long)a->disp, p->disp_unit,
                            (unsigned long long)(span - (uint64_t)lo), (unsigned long long)p->size, a->target);
            goto fail;
        }
        addr = (uint64_t)a->disp * (uint64_t)p->disp_unit;
    }
    /* blocks are relative to addr; the header's span covers [addr+lo, addr+span): shift so that the
       target checks [addr', addr'+span') with offsets >= 0 */
    if (lo != 0 && nb > 0) {
        for (long i = 0; i < nb; i++) blk[i].off -= (uint64_t)lo;
        addr += (uint64_t)lo;
        span -= (uint64_t)lo;
    }
    uint8_t *tbase;
    int tpid;
    int dm = direct_mem(m, a->target, addr, span, &tbase, &tpid);
    if (dm < 0) {
        rc = kumi_error(MPI_ERR_RMA_RANGE, "%s: target memory [%#llx, +%llu) is not in memory that rank %d attached "
                        "to the dynamic window", fn, (unsigned long long)addr, (unsigned long long)span, a->target);
        goto fail;
    }
    if (dm > 0) {
        struct tmem tm = { .mem = (uint8_t *)((uintptr_t)tbase + addr), .blk = nb > 0 ? blk : NULL, .nblocks = (uint64_t)nb,
                           .bytes = tbytes, .pid = tpid };
        rc = direct_op(m, fn, kind, a, &tm);
        if (rc != DIRECT_REFUSED) {
            if (rc) goto fail;
            free(blk);
            if (u) { u->pending = 0; kumi_req_check_complete(u); }
            return MPI_SUCCESS;
        }
        m->cma_off[a->target] = 1;      /* the kernel refuses: active messages to it from now on */
    }
    if ((kind == K_PUT || kind == K_GET) && p->fab && kumi_rma_fabric) {
        bool took;
        rc = fab_op(m, fn, kind, a, addr, blk, nb, tbytes, u, &took);
        if (!took) goto fail;
        return rc;
    }
    struct org_op *o = calloc(1, sizeof *o);
    if (!o) { rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); goto fail; }
    o->m = m;
    o->ureq = u;
    o->blk = blk;
    blk = NULL;
    struct rma_msg h = { .origin = w->rank, .addr = addr, .bytes = tbytes, .nblocks = (uint64_t)nb,
                         .span = span };
    switch (kind) {
    case K_PUT: h.kind = M_PUT; break;
    case K_GET: h.kind = M_GET; break;
    case K_ACC: h.kind = M_ACC; break;
    case K_GACC: h.kind = M_GACC; break;
    case K_CAS: h.kind = M_CAS; break;
    }
    if (kind == K_ACC || kind == K_GACC) {
        MPI_Datatype bdt = kumi_dt_basic_handle(a->tdt);
        h.dt = (uint64_t)(uintptr_t)bdt;
        h.op = (int32_t)(intptr_t)a->op->handle;
    }
    /* the header, the blocks, the data */
    o->parts = 1;                       /* held until everything is posted */
    m->local++;
    rc = send_ctl(m, a->target, &h);
    if (rc) goto fail_o;
    struct kumi_req *r;
    if (nb > 0) {
        o->parts++;
        if (!(r = post(m, true, a->target, TAG_DATA, o->blk, (size_t)nb * sizeof *o->blk, MPI_BYTE, org_part_done, o,
                       0, &rc))) { o->parts--; goto fail_o; }
    }
    if (kind == K_PUT || kind == K_ACC || kind == K_GACC || kind == K_CAS) {
        size_t n = kind == K_CAS ? 2 * tbytes : tbytes;
        o->pack = malloc(n ? n : 1);
        if (!o->pack) { rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); goto fail_o; }
        if (kind == K_CAS) {
            memcpy(o->pack, a->oaddr, tbytes);
            memcpy((char *)o->pack + tbytes, a->caddr, tbytes);
        } else if (kind == K_GACC && a->op->handle == MPI_NO_OP) {
            memset(o->pack, 0, n);
        } else {
            kumi_dt_pack(a->odt, a->oaddr, a->ocount, o->pack);
        }
        o->parts++;
        if (!(r = post(m, true, a->target, TAG_DATA, o->pack, n, MPI_BYTE, org_part_done, o, 0, &rc))) {
            o->parts--;
            goto fail_o;
        }
    }
    if (kind == K_GET || kind == K_GACC || kind == K_CAS) {
        o->reply = malloc(tbytes ? tbytes : 1);
        if (!o->reply) { rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); goto fail_o; }
        o->result = a->raddr;
        o->rcount = a->rcount;
        o->rdt = a->rdt;
        kumi_dt_retain(o->rdt);
        o->parts++;
        if (!(r = post(m, false, a->target, TAG_REPLY, o->reply, tbytes, MPI_BYTE, org_part_done, o, 1, &rc))) {
            o->parts--;
            goto fail_o;
        }
    }
    m->sent[a->target]++;
    org_put(o);                         /* drop the hold */
    kumi_req_flush_ctl();
    return MPI_SUCCESS;
fail_o:
    /* parts already posted finish on their own; the R* request completes (with the
       error) with the last of them, never twice */
    if (u) u->status.MPI_ERROR = rc;
    org_put(o);
    return rc;
fail:
    free(blk);
    if (u) { u->status.MPI_ERROR = rc; u->pending = 0; kumi_req_check_complete(u); *ureq = MPI_REQUEST_NULL; kumi_req_free(u); }
    return rc;
}

/* ------------------------------------------------------- the operations */

static int op_count(const char *fn, MPI_Count c, const char *arg)
{
    if (c < 0) return kumi_error(MPI_ERR_COUNT, "%s: argument %s is negative (%lld)", fn, arg, (long long)c);
    return MPI_SUCCESS;
}

static int putget(const char *fn, int kind, const void *oaddr, MPI_Count ocount, struct kumi_dt *odt, int target,
                  MPI_Aint disp, MPI_Count tcount, struct kumi_dt *tdt, struct kumi_win *win, MPI_Request *request)
{
    struct opargs a = { 0 };
    int rc;
    if (request) *request = MPI_REQUEST_NULL;
    if ((rc = op_count(fn, ocount, "origin_count")) || (rc = op_count(fn, tcount, "target_count"))) return rc;
    if (kind == K_PUT) { a.oaddr = oaddr; a.ocount = (size_t)ocount; a.odt = odt; }
    else { a.raddr = (void *)oaddr; a.rcount = (size_t)ocount; a.rdt = odt; }
    a.target = target; a.disp = disp; a.tcount = (size_t)tcount; a.tdt = tdt;
    return issue(win, fn, kind, &a, request);
}

int kumi_mpi_put(const void *origin_addr, int origin_count, struct kumi_dt *origin_datatype, int target_rank,
                 MPI_Aint target_disp, int target_count, struct kumi_dt *target_datatype, struct kumi_win *win)
{
    return putget("MPI_Put", K_PUT, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                  target_count, target_datatype, win, NULL);
}

int kumi_mpi_put_c(const void *origin_addr, MPI_Count origin_count, struct kumi_dt *origin_datatype, int target_rank,
                   MPI_Aint target_disp, MPI_Count target_count, struct kumi_dt *target_datatype, struct kumi_win *win)
{
    return putget("MPI_Put_c", K_PUT, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                  target_count, target_datatype, win, NULL);
}

int kumi_mpi_get(void *origin_addr, int origin_count, struct kumi_dt *origin_datatype, int target_rank,
                 MPI_Aint target_disp, int target_count, struct kumi_dt *target_datatype, struct kumi_win *win)
{
    return putget("MPI_Get", K_GET, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                  target_count, target_datatype, win, NULL);
}

int kumi_mpi_get_c(void *origin_addr, MPI_Count origin_count, struct kumi_dt *origin_datatype, int target_rank,
                   MPI_Aint target_disp, MPI_Count target_count, struct kumi_dt *target_datatype, struct kumi_win *win)
{
    return putget("MPI_Get_c", K_GET, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                  target_count, target_datatype, win, NULL);
}

int kumi_mpi_rput(const void *origin_addr, int origin_count, struct kumi_dt *origin_datatype, int target_rank,
                  MPI_Aint target_disp, int target_count, struct kumi_dt *target_datatype, struct kumi_win *win,
                  MPI_Request *request)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "MPI_Rput: argument request is NULL");
    return putget("MPI_Rput", K_PUT, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                  target_count, target_datatype, win, request);
}

int kumi_mpi_rput_c(const void *origin_addr, MPI_Count origin_count, struct kumi_dt *origin_datatype, int target_rank,
                    MPI_Aint target_disp, MPI_Count target_count, struct kumi_dt *target_datatype, struct kumi_win *win,
                    MPI_Request *request)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "MPI_Rput_c: argument request is NULL");
    return putget("MPI_Rput_c", K_PUT, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                  target_count, target_datatype, win, request);
}

int kumi_mpi_rget(void *origin_addr, int origin_count, struct kumi_dt *origin_datatype, int target_rank,
                  MPI_Aint target_disp, int target_count, struct kumi_dt *target_datatype, struct kumi_win *win,
                  MPI_Request *request)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "MPI_Rget: argument request is NULL");
    return putget("MPI_Rget", K_GET, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                  target_count, target_datatype, win, request);
}

int kumi_mpi_rget_c(void *origin_addr, MPI_Count origin_count, struct kumi_dt *origin_datatype, int target_rank,
                    MPI_Aint target_disp, MPI_Count target_count, struct kumi_dt *target_datatype, struct kumi_win *win,
                    MPI_Request *request)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "MPI_Rget_c: argument request is NULL");
    return putget("MPI_Rget_c", K_GET, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                  target_count, target_datatype, win, request);
}

int kumi_rma_accumulate(const char *fn, const void *oaddr, MPI_Count ocount, struct kumi_dt *odt, int target,
                        MPI_Aint disp, MPI_Count tcount, struct kumi_dt *tdt, struct kumi_op *op, struct kumi_win *win,
                        MPI_Request *request)
{
    struct opargs a = { 0 };
    int rc;
    if (request) *request = MPI_REQUEST_NULL;
    if ((rc = op_count(fn, ocount, "origin_count")) || (rc = op_count(fn, tcount, "target_count"))) return rc;
    a.oaddr = oaddr; a.ocount = (size_t)ocount; a.odt = odt;
    a.target = target; a.disp = disp; a.tcount = (size_t)tcount; a.tdt = tdt; a.op = op;
    return issue(win, fn, K_ACC, &a, request);
}

int kumi_mpi_raccumulate(const void *origin_addr, int origin_count, struct kumi_dt *origin_datatype, int target_rank,
                         MPI_Aint target_disp, int target_count, struct kumi_dt *target_datatype, struct kumi_op *op,
                         struct kumi_win *win, MPI_Request *request)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "MPI_Raccumulate: argument request is NULL");
    return kumi_rma_accumulate("MPI_Raccumulate", origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
               target_datatype, op, win, request);
}

int kumi_mpi_raccumulate_c(const void *origin_addr, MPI_Count origin_count, struct kumi_dt *origin_datatype,
                           int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                           struct kumi_dt *target_datatype, struct kumi_op *op, struct kumi_win *win,
                           MPI_Request *request)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "MPI_Raccumulate_c: argument request is NULL");
    return kumi_rma_accumulate("MPI_Raccumulate_c", origin_addr, origin_count, origin_datatype, target_rank, target_disp,
               target_count, target_datatype, op, win, request);
}

int kumi_rma_get_accumulate(const char *fn, const void *oaddr, MPI_Count ocount, struct kumi_dt *odt, void *raddr,
                            MPI_Count rcount, struct kumi_dt *rdt, int target, MPI_Aint disp, MPI_Count tcount,
                            struct kumi_dt *tdt, struct kumi_op *op, struct kumi_win *win, MPI_Request *request)
{
    struct opargs a = { 0 };
    int rc;
    if (request) *request = MPI_REQUEST_NULL;
    if ((rc = op_count(fn, ocount, "origin_count")) || (rc = op_count(fn, rcount, "result_count")) ||
        (rc = op_count(fn, tcount, "target_count")))
        return rc;
    a.oaddr = oaddr; a.ocount = (size_t)ocount; a.odt = odt;
    a.raddr = raddr; a.rcount = (size_t)rcount; a.rdt = rdt;
    a.target = target; a.disp = disp; a.tcount = (size_t)tcount; a.tdt = tdt; a.op = op;
    return issue(win, fn, K_GACC, &a, request);
}

int kumi_mpi_rget_accumulate(const void *origin_addr, int origin_count, struct kumi_dt *origin_datatype,
                             void *result_addr, int result_count, struct kumi_dt *result_datatype, int target_rank,
                             MPI_Aint target_disp, int target_count, struct kumi_dt *target_datatype,
                             struct kumi_op *op, struct kumi_win *win, MPI_Request *request)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "MPI_Rget_accumulate: argument request is NULL");
    return kumi_rma_get_accumulate("MPI_Rget_accumulate", origin_addr, origin_count, origin_datatype, result_addr, result_count,
                result_datatype, target_rank, target_disp, target_count, target_datatype, op, win, request);
}

int kumi_mpi_rget_accumulate_c(const void *origin_addr, MPI_Count origin_count, struct kumi_dt *origin_datatype,
                               void *result_addr, MPI_Count result_count, struct kumi_dt *result_datatype,
                               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                               struct kumi_dt *target_datatype, struct kumi_op *op, struct kumi_win *win,
                               MPI_Request *request)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "MPI_Rget_accumulate_c: argument request is NULL");
    return kumi_rma_get_accumulate("MPI_Rget_accumulate_c", origin_addr, origin_count, origin_datatype, result_addr, result_count,
                result_datatype, target_rank, target_disp, target_count, target_datatype, op, win, request);
}

int kumi_mpi_fetch_and_op(const void *origin_addr, void *result_addr, struct kumi_dt *datatype, int target_rank,
                          MPI_Aint target_disp, struct kumi_op *op, struct kumi_win *win)
{
    if (!datatype->predefined)
        return kumi_error(MPI_ERR_TYPE, "MPI_Fetch_and_op: the datatype must be predefined");
    return kumi_rma_get_accumulate("MPI_Fetch_and_op", origin_addr, 1, datatype, result_addr, 1, datatype, target_rank, target_disp, 1,
                datatype, op, win, NULL);
}

int kumi_mpi_compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                              struct kumi_dt *datatype, int target_rank, MPI_Aint target_disp, struct kumi_win *win)
{
    static const char fn[] = "MPI_Compare_and_swap";
    if (!datatype->predefined || datatype->basic_elem == KUMI_B_NONE)
        return kumi_error(MPI_ERR_TYPE, "%s: the datatype must be a predefined one", fn);
    struct opargs a = { 0 };
    a.oaddr = origin_addr; a.ocount = 1; a.odt = datatype;
    a.caddr = compare_addr;
    a.raddr = result_addr; a.rcount = 1; a.rdt = datatype;
    a.target = target_rank; a.disp = target_disp; a.tcount = 1; a.tdt = datatype;
    return issue(win, fn, K_CAS, &a, NULL);
}

/* ---------------------------------------------------------- synchronisation */

static int local_done(void *arg)
{
    struct kumi_rma *m = arg;
    return m->local == 0;
}

static void wait_local(struct kumi_rma *m)
{
    if (m->local == 0) return;          /* direct operations complete at once */
    kumi_req_flush_ctl();
    kumi_progress_wait(local_done, m);
}

struct waitcnt { struct kumi_rma *m; uint64_t want; };

static int applied_reached(void *arg)
{
    struct waitcnt *c = arg;
    return c->m->applied_total >= c->want;
}

/* Operations other ranks addressed outside this rank's memory, reported at
 * its fence or Win_wait (as no ack told their origins). */
static int target_errors(struct kumi_rma *m)
{
    m->errors = 0;
    memset(m->rejected, 0, sizeof *m->rejected * (size_t)m->w->size);
    return m->first_err;
}

/* The error a target found in operations of this origin (acks), or one of mine. */
static int take_errors(struct kumi_rma *m, const char *fn)
{
    if (m->ack_errors) {
        m->ack_errors = 0;
        return kumi_error(MPI_ERR_RMA_RANGE, "%s: a target rejected an operation of this rank (displacement "
                          "outside the memory attached to its dynamic window)", fn);
    }
    if (m->fab_errors) {
        m->fab_errors = 0;
        return kumi_error(MPI_ERR_OTHER, "%s: a remote write or read of this rank's Put or Get failed in the "
                          "transport (p2p/ofi; KUMI_VERBOSE=1 says why)", fn);
    }
    return MPI_SUCCESS;
}

int kumi_mpi_win_fence(int assert, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_fence";
    struct kumi_rma *m = win->rma;
    int rc;
    if (assert & ~(MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED))
        return kumi_error(MPI_ERR_ASSERT, "%s: invalid assert %#x", fn, assert);
    if (m->nstart >= 0 || m->npost >= 0)
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: a post-start-complete-wait epoch is open on this window", fn);
    for (int t = 0; t < win->size; t++)
        if (m->lock[t] || m->lock_all)
            return kumi_error(MPI_ERR_RMA_SYNC, "%s: a passive-target epoch (lock) is open on this window", fn);
    if (!(assert & MPI_MODE_NOPRECEDE)) {
        wait_local(m);
        /* how many operations every origin sent me, in all */
        uint64_t want = 0;
        rc = win->comm->coll.reduce_scatter_block(m->sent, &want, 1, MPI_UINT64_T, MPI_SUM, win->comm->handle);
        if (rc) return rc;
        struct waitcnt c = { m, want };
        kumi_progress_wait(applied_reached, &c);
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    rc = win->comm->coll.barrier(win->comm->handle);
    if (rc) return rc;
    m->fence_epoch = !(assert & MPI_MODE_NOSUCCEED);
    if (m->errors) return target_errors(m);
    return MPI_SUCCESS;
}

/* The ranks of group g in the window's communicator (MPI_ERR_GROUP if one is not in it). */
static int group_ranks(struct kumi_win *w, const char *fn, MPI_Group group, int **out, int *n)
{
    struct kumi_group *g = kumi_group_get(group);
    if (!g) return kumi_error(MPI_ERR_GROUP, "%s: argument group is not a valid group", fn);
    int *r = malloc(((size_t)g->size + 1) * sizeof *r);
    if (!r) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (int i = 0; i < g->size; i++) {
        int wr = g->world[i], k;
        for (k = 0; k < w->size; k++)
            if (kumi_comm_world_rank(w->comm, k) == wr) break;
        if (k == w->size) {
            free(r);
            return kumi_error(MPI_ERR_GROUP, "%s: process %d of the group is not in the window's group", fn, i);
        }
        r[i] = k;
    }
    *out = r;
    *n = g->size;
    return MPI_SUCCESS;
}

int kumi_mpi_win_post(MPI_Group group, int assert, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_post";
    struct kumi_rma *m = win->rma;
    if (assert & ~(MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT))
        return kumi_error(MPI_ERR_ASSERT, "%s: invalid assert %#x", fn, assert);
    if (m->npost >= 0) return kumi_error(MPI_ERR_RMA_SYNC, "%s: an exposure epoch is already open", fn);
    int rc = group_ranks(win, fn, group, &m->post_ranks, &m->npost);
    if (rc) return rc;
    for (int i = 0; i < m->npost; i++) {
        struct rma_msg p = { .kind = M_POST, .origin = win->rank };
        if ((rc = send_ctl(m, m->post_ranks[i], &p))) return rc;
    }
    kumi_req_flush_ctl();
    return MPI_SUCCESS;
}

static int posts_here(void *arg)
{
    struct kumi_rma *m = arg;
    for (int i = 0; i < m->nstart; i++)
        if (m->posts[m->start_ranks[i]] <= 0) return 0;
    return 1;
}

int kumi_mpi_win_start(MPI_Group group, int assert, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_start";
    struct kumi_rma *m = win->rma;
    if (assert & ~MPI_MODE_NOCHECK) return kumi_error(MPI_ERR_ASSERT, "%s: invalid assert %#x", fn, assert);
    if (m->nstart >= 0) return kumi_error(MPI_ERR_RMA_SYNC, "%s: an access epoch is already open", fn);
    if (m->fence_epoch) m->fence_epoch = false;   /* a fence epoch ends where another kind begins */
    int *r, n;
    int rc = group_ranks(win, fn, group, &r, &n);
    if (rc) return rc;
    m->start_ranks = r;
    m->nstart = n;
    if (!(assert & MPI_MODE_NOCHECK)) {
        kumi_progress_wait(posts_here, m);
        for (int i = 0; i < n; i++) m->posts[r[i]]--;
    }
    return MPI_SUCCESS;
}

int kumi_mpi_win_complete(struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_complete";
    struct kumi_rma *m = win->rma;
    if (m->nstart < 0) return kumi_error(MPI_ERR_RMA_SYNC, "%s: no access epoch was started (MPI_Win_start)", fn);
    wait_local(m);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);   /* direct stores before COMPLETE */
    int rc = MPI_SUCCESS;
    for (int i = 0; i < m->nstart && !rc; i++) {
        int t = m->start_ranks[i];
        struct rma_msg c = { .kind = M_COMPLETE, .origin = win->rank, .count = m->sent[t] };
        rc = send_ctl(m, t, &c);
    }
    kumi_req_flush_ctl();
    free(m->start_ranks);
    m->start_ranks = NULL;
    m->nstart = -1;
    return rc;
}

static int exposure_over(void *arg)
{
    struct kumi_rma *m = arg;
    for (int i = 0; i < m->npost; i++) {
        int o = m->post_ranks[i];
        if (m->completes[o] <= 0 || m->applied[o] < m->complete_count[o]) return 0;
    }
    return 1;
}

static int end_exposure(struct kumi_rma *m)
{
    for (int i = 0; i < m->npost; i++) m->completes[m->post_ranks[i]]--;
    free(m->post_ranks);
    m->post_ranks = NULL;
    m->npost = -1;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (m->errors) return target_errors(m);
    return MPI_SUCCESS;
}

int kumi_mpi_win_wait(struct kumi_win *win)
{
    struct kumi_rma *m = win->rma;
    if (m->npost < 0)
        return kumi_error(MPI_ERR_RMA_SYNC, "MPI_Win_wait: no exposure epoch was posted (MPI_Win_post)");
    kumi_progress_wait(exposure_over, m);
    return end_exposure(m);
}

int kumi_mpi_win_test(struct kumi_win *win, int *flag)
{
    struct kumi_rma *m = win->rma;
    if (!flag) return kumi_error(MPI_ERR_ARG, "MPI_Win_test: argument flag is NULL");
    if (m->npost < 0)
        return kumi_error(MPI_ERR_RMA_SYNC, "MPI_Win_test: no exposure epoch was posted (MPI_Win_post)");
    kumi_progress(0);
    *flag = exposure_over(m);
    return *flag ? end_exposure(m) : MPI_SUCCESS;
}

struct cntwait { int *ctr; int want; };

static int ctr_reached(void *arg)
{
    struct cntwait *c = arg;
    return *c->ctr >= c->want;
}

struct wordwait { struct kumi_rma *m; struct kumi_win_ctl *c; int type; };

static int word_taken(void *arg)
{
    struct wordwait *x = arg;
    return word_try_flagged(x->m, x->c, x->type);
}

static int lock_one(struct kumi_rma *m, int type, int t, int assert)
{
    m->lock[t] = type;
    m->lock_nocheck[t] = (assert & MPI_MODE_NOCHECK) != 0;
    m->lockw[t] = 0;
    if (m->lock_nocheck[t]) return MPI_SUCCESS;
    struct kumi_win_ctl *c = m->w->peers[t].ctl;
    if (kumi_rma_direct && c) {         /* same host: the target's lock word */
        m->lockw[t] = 1;
        if (!word_try(c, type)) {
            struct wordwait x = { m, c, type };
            kumi_progress_wait(word_taken, &x);
        }
        return MPI_SUCCESS;
    }
    struct rma_msg l = { .kind = M_LOCK, .origin = m->w->rank, .arg = type };
    int want = m->granted[t] + 1;
    int rc = send_ctl(m, t, &l);
    if (rc) { m->lock[t] = 0; return rc; }
    struct cntwait g = { &m->granted[t], want };
    kumi_req_flush_ctl();
    kumi_progress_wait(ctr_reached, &g);
    return MPI_SUCCESS;
}

/* Send UNLOCK or FLUSH (count of operations sent) and wait for the answer. */
static int sync_target(struct kumi_rma *m, int t, int kind)
{
    struct rma_msg u = { .kind = (uint32_t)kind, .origin = m->w->rank, .arg = m->lock[t], .count = m->sent[t] };
    int want = m->acks[t] + 1;
    int rc = send_ctl(m, t, &u);
    if (rc) return rc;
    struct cntwait c = { &m->acks[t], want };
    kumi_req_flush_ctl();
    kumi_progress_wait(ctr_reached, &c);
    m->synced[t] = u.count;
    return MPI_SUCCESS;
}

/* Flush: the active messages sent to t since the last answer (direct
 * operations are complete already). */
static int flush_target(struct kumi_rma *m, int t)
{
    return m->sent[t] != m->synced[t] ? sync_target(m, t, M_FLUSH) : MPI_SUCCESS;
}

/* End the passive-target epoch to t (local operations are complete). */
static int unlock_target(struct kumi_rma *m, int t)
{
    int rc;
    if (m->lock_nocheck[t]) {
        rc = flush_target(m, t);
    } else if (m->lockw[t]) {
        rc = flush_target(m, t);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        word_unlock(m, m->w->peers[t].ctl, m->lock[t]);
    } else {
        rc = sync_target(m, t, M_UNLOCK);
    }
    m->lock[t] = 0;
    m->lock_nocheck[t] = 0;
    m->lockw[t] = 0;
    return rc;
}

int kumi_mpi_win_lock(int lock_type, int rank, int assert, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_lock";
    struct kumi_rma *m = win->rma;
    int rc = check_target(win, fn, rank);
    if (rc) return rc;
    if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE)
        return kumi_error(MPI_ERR_LOCKTYPE, "%s: invalid lock_type %d (MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE)", fn,
                          lock_type);
    if (assert & ~MPI_MODE_NOCHECK) return kumi_error(MPI_ERR_ASSERT, "%s: invalid assert %#x", fn, assert);
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (win->no_locks)
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: the window was created with the info hint no_locks", fn);
    if (m->lock[rank] || m->lock_all)
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: rank %d is already locked by this process", fn, rank);
    if (m->fence_epoch) m->fence_epoch = false;
    return lock_one(m, lock_type, rank, assert);
}

int kumi_mpi_win_unlock(int rank, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_unlock";
    struct kumi_rma *m = win->rma;
    int rc = check_target(win, fn, rank);
    if (rc) return rc;
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (!m->lock[rank] || m->lock_all)
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: rank %d is not locked by this process (MPI_Win_lock)", fn, rank);
    wait_local(m);
    rc = unlock_target(m, rank);
    return rc ? rc : take_errors(m, fn);
}

int kumi_mpi_win_lock_all(int assert, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_lock_all";
    struct kumi_rma *m = win->rma;
    if (assert & ~MPI_MODE_NOCHECK) return kumi_error(MPI_ERR_ASSERT, "%s: invalid assert %#x", fn, assert);
    if (win->no_locks)
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: the window was created with the info hint no_locks", fn);
    if (m->lock_all) return kumi_error(MPI_ERR_RMA_SYNC, "%s: this process holds a lock_all already", fn);
    for (int t = 0; t < win->size; t++)
        if (m->lock[t]) return kumi_error(MPI_ERR_RMA_SYNC, "%s: rank %d is locked by this process", fn, t);
    if (m->fence_epoch) m->fence_epoch = false;
    for (int t = 0; t < win->size; t++) {
        int rc = lock_one(m, MPI_LOCK_SHARED, t, assert);
        if (rc) return rc;
    }
    m->lock_all = true;
    return MPI_SUCCESS;
}

int kumi_mpi_win_unlock_all(struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_unlock_all";
    struct kumi_rma *m = win->rma;
    int rc = MPI_SUCCESS;
    if (!m->lock_all) return kumi_error(MPI_ERR_RMA_SYNC, "%s: no MPI_Win_lock_all epoch is open", fn);
    wait_local(m);
    for (int t = 0; t < win->size; t++) {
        int e = unlock_target(m, t);
        if (e && !rc) rc = e;
    }
    m->lock_all = false;
    return rc ? rc : take_errors(m, fn);
}

static int passive_epoch(struct kumi_win *w, const char *fn, int rank)
{
    struct kumi_rma *m = w->rma;
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (!m->lock_all && !m->lock[rank])
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: no passive-target epoch to rank %d is open (MPI_Win_lock)", fn,
                          rank);
    return MPI_SUCCESS;
}

int kumi_mpi_win_flush(int rank, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_flush";
    int rc = check_target(win, fn, rank);
    if (rc || (rc = passive_epoch(win, fn, rank))) return rc;
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    wait_local(win->rma);
    rc = flush_target(win->rma, rank);
    return rc ? rc : take_errors(win->rma, fn);
}

int kumi_mpi_win_flush_all(struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_flush_all";
    struct kumi_rma *m = win->rma;
    int rc = MPI_SUCCESS;
    wait_local(m);
    for (int t = 0; t < win->size; t++)
        if (m->lock_all || m->lock[t]) {
            int e = flush_target(m, t);
            if (e && !rc) rc = e;
        }
    return rc ? rc : take_errors(m, fn);
}

int kumi_mpi_win_flush_local(int rank, struct kumi_win *win)
{
    static const char fn[] = "MPI_Win_flush_local";
    int rc = check_target(win, fn, rank);
    if (rc || (rc = passive_epoch(win, fn, rank))) return rc;
    wait_local(win->rma);
    return MPI_SUCCESS;
}

int kumi_mpi_win_flush_local_all(struct kumi_win *win)
{
    wait_local(win->rma);
    return MPI_SUCCESS;
}

int kumi_mpi_win_sync(struct kumi_win *win)
{
    (void)win;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    kumi_progress(0);                   /* and let operations of others in */
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ life cycle */

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
    if (!m->sent || !m->applied || !m->complete_count || !m->lock || !m->lock_nocheck || !m->granted || !m->acks ||
        !m->posts || !m->completes || !m->lockw || !m->cma_off || !m->synced || !m->rejected || !m->local2rank) {
        kumi_rma_win_fini(w, NULL);
        return kumi_error(MPI_ERR_NO_MEM, "window: out of memory");
    }
    int rc = post_ctl(m);
    if (rc) { kumi_rma_win_fini(w, NULL); return rc; }
    /* every rank listens before anybody sends */
    return w->comm->coll.barrier(w->comm->handle);
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
        wait_local(m);
        int rc = w->comm->coll.barrier(w->comm->handle);
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
    free(m);
    w->rma = NULL;
    return MPI_SUCCESS;
}
