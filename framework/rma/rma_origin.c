/* RMA, the origin side: issuing an operation on the direct path (the
 * target's memory on this host), as transport RMA (p2p/ofi writes and
 * reads) or as active messages, and the MPI calls MPI_Put, MPI_Get, the
 * accumulates and their request forms.  See rma.c. */
#define _GNU_SOURCE                     /* process_vm_readv / writev */
#include "rma/rma_impl.h"

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
    struct kumi_stage *stage;           /* device buffers: [3] host copies (origin, compare, result) */
};

enum { K_PUT, K_GET, K_ACC, K_GACC, K_CAS };

struct opargs {
    const void *oaddr; size_t ocount; struct kumi_dt *odt;
    void *raddr; size_t rcount; struct kumi_dt *rdt;
    const void *caddr;                  /* compare value (CAS) */
    int target; MPI_Aint disp; size_t tcount; struct kumi_dt *tdt;
    struct kumi_op *op;
};

enum { DIRECT_REFUSED = -1 };           /* CMA not permitted: nothing was done, use active messages */
enum { ST_ORIGIN, ST_COMPARE, ST_RESULT, ST_N };

/* The host copies of an operation's device buffers are over: the result's
 * goes to the device (if ok), all are freed. */
static int stage_done(struct kumi_stage *st, bool ok)
{
    int rc = kumi_stage_end(&st[ST_RESULT], ok);
    kumi_stage_end(&st[ST_ORIGIN], false);
    kumi_stage_end(&st[ST_COMPARE], false);
    free(st);
    return rc;
}

/* -------------------------------------------------------------- origin side */

/* One part of o is over: the last one completes the R* request and frees o. */
static void org_put(struct org_op *o)
{
    if (--o->parts > 0) return;
    if (o->fab_unpack) kumi_dt_unpack(o->rdt, o->reply, o->rcount, o->result);
    if (o->stage) {                     /* device buffers: the result to the device before anyone sees completion */
        int e = stage_done(o->stage, !o->ureq || o->ureq->status.MPI_ERROR == MPI_SUCCESS);
        if (e && o->ureq && o->ureq->status.MPI_ERROR == MPI_SUCCESS) o->ureq->status.MPI_ERROR = e;
        if (e && !o->ureq) o->m->fab_errors++;
    }
    o->m->local--;
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
        e = rma_tm_scatter(tm, in);
        break;
    case K_GET:
        e = rma_tm_gather(tm, res);
        break;
    case K_ACC:
        rma_acc_lock(lk);
        e = rma_tm_reduce(tm, (int32_t)(intptr_t)a->op->handle, (uint64_t)(uintptr_t)kumi_dt_basic_handle(a->tdt), in);
        rma_acc_unlock(lk);
        break;
    case K_GACC:
    case K_CAS: {
        /* the old value goes to a buffer of its own: result and origin may overlap */
        char small[64];
        char *old = unpack ? res : n <= sizeof small ? small : malloc(n);
        if (!old) { e = ENOMEM; break; }
        rma_acc_lock(lk);
        e = rma_tm_gather(tm, old);
        if (!e && kind == K_GACC)
            e = rma_tm_reduce(tm, (int32_t)(intptr_t)a->op->handle, (uint64_t)(uintptr_t)kumi_dt_basic_handle(a->tdt), in);
        else if (!e && memcmp(old, a->caddr, n) == 0)
            e = rma_tm_scatter(tm, in);
        rma_acc_unlock(lk);
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
                  struct rma_blk *blk, long nb, size_t tbytes, struct kumi_req *u, bool *took,
                  struct kumi_stage **stp)
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
    o->stage = *stp;                    /* kept until the operation completes */
    *stp = NULL;
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
 * the local part.  *stp: host copies of device buffers (see issue), taken
 * (set to NULL) by an operation that completes later. */
static int issue_host(struct kumi_win *w, const char *fn, int kind, struct opargs *a, MPI_Request *ureq,
                      struct kumi_stage **stp)
{
    struct kumi_rma *m = w->rma;
    int rc = rma_check_target(w, fn, a->target);
    if (rc) return rc;
    if (a->target != MPI_PROC_NULL && !rma_in_epoch(m, a->target))
        return kumi_error(MPI_ERR_RMA_SYNC, "%s: no access epoch to rank %d is open on this window (call "
                          "MPI_Win_fence, MPI_Win_start, MPI_Win_lock or MPI_Win_lock_all first)", fn, a->target);
    size_t tbytes = a->tcount * a->tdt->size;
    /* nothing to combine (a zero count, or a type of no data): the op need
       not be defined for the type, as for collective reductions */
    if ((kind == K_ACC || kind == K_GACC) && tbytes != 0) {
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
    /* target rma_layout */
    struct rma_blk *blk = NULL;
    int64_t lo;
    uint64_t span;
    long nb;
    bool contig = a->tdt->contig && a->tdt->true_lb == 0;
    if (contig) {
        nb = 0; lo = 0; span = tbytes;
    } else if ((nb = rma_layout(a->tdt, a->tcount, &blk, &lo, &span)) < 0) {
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
        if (__builtin_expect(w->ndev, 0) && a->target == w->rank && w->flavor == MPI_WIN_FLAVOR_DYNAMIC)
            tbase = kumi_win_dyn_addr(w, addr) - addr;   /* an attached device region: its public copy */
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
        rc = fab_op(m, fn, kind, a, addr, blk, nb, tbytes, u, &took, stp);
        if (!took) goto fail;
        return rc;
    }
    struct org_op *o = calloc(1, sizeof *o);
    if (!o) { rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); goto fail; }
    o->m = m;
    o->ureq = u;
    o->blk = blk;
    blk = NULL;
    o->stage = *stp;                    /* kept until the operation completes */
    *stp = NULL;
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
    rc = rma_send_ctl(m, a->target, &h);
    if (rc) goto fail_o;
    struct kumi_req *r;
    if (nb > 0) {
        o->parts++;
        if (!(r = rma_post(m, true, a->target, TAG_DATA, o->blk, (size_t)nb * sizeof *o->blk, MPI_BYTE, org_part_done, o,
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
        if (!(r = rma_post(m, true, a->target, TAG_DATA, o->pack, n, MPI_BYTE, org_part_done, o, 0, &rc))) {
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
        if (!(r = rma_post(m, false, a->target, TAG_REPLY, o->reply, tbytes, MPI_BYTE, org_part_done, o, 1, &rc))) {
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

/* Device buffers (accel): origin, compare and result buffers in device
 * memory go through host copies; the origin's and compare's are filled
 * here, the result's goes to the device when the operation completes (at
 * once on the direct path, else when its reply arrives: in the flush,
 * unlock, fence, complete or Wait that completes it, before that returns). */
static int issue(struct kumi_win *w, const char *fn, int kind, struct opargs *a, MPI_Request *ureq)
{
    struct kumi_stage *st = NULL;
    if (!__builtin_expect(kumi_accel_on, 0)) return issue_host(w, fn, kind, a, ureq, &st);
    bool od = kind != K_GET && !(kind == K_GACC && a->op->handle == MPI_NO_OP) && kumi_accel_is_device(a->oaddr);
    bool cd = kind == K_CAS && kumi_accel_is_device(a->caddr);
    bool rd = kind != K_PUT && kind != K_ACC && kumi_accel_is_device(a->raddr);
    if (!od && !cd && !rd) return issue_host(w, fn, kind, a, ureq, &st);
    if (ureq) *ureq = MPI_REQUEST_NULL;
    if (!(st = calloc(ST_N, sizeof *st))) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    int rc = MPI_SUCCESS;
    if (od && !(rc = kumi_stage_begin(fn, &st[ST_ORIGIN], a->oaddr, (MPI_Count)a->ocount, a->odt, true)) &&
        st[ST_ORIGIN].host)
        a->oaddr = st[ST_ORIGIN].buf;
    if (!rc && cd && !(rc = kumi_stage_begin(fn, &st[ST_COMPARE], a->caddr, 1, a->odt, true)) && st[ST_COMPARE].host)
        a->caddr = st[ST_COMPARE].buf;
    if (!rc && rd &&
        !(rc = kumi_stage_begin(fn, &st[ST_RESULT], a->raddr, (MPI_Count)a->rcount, a->rdt, !a->rdt->contig)) &&
        st[ST_RESULT].host)
        a->raddr = st[ST_RESULT].buf;
    if (!rc) rc = issue_host(w, fn, kind, a, ureq, &st);
    if (st) {                           /* done here (or failed): copies back now */
        int e = stage_done(st, rc == MPI_SUCCESS);
        if (!rc) rc = e;
    }
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

/* The shared implementations of the generated families MPI_{Put,Rput}{,_c}
 * and MPI_{Get,Rget}{,_c} (data/kumi-bindings.json, forward): request is NULL
 * for Put and Get. */
int kumi_rma_put(const char *kfn, const void *origin_addr, MPI_Count origin_count, struct kumi_dt *origin_datatype,
                 int target_rank, MPI_Aint target_disp, MPI_Count target_count, struct kumi_dt *target_datatype,
                 struct kumi_win *win, MPI_Request *request)
{
    return putget(kfn, K_PUT, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                  target_datatype, win, request);
}

int kumi_rma_get(const char *kfn, void *origin_addr, MPI_Count origin_count, struct kumi_dt *origin_datatype,
                 int target_rank, MPI_Aint target_disp, MPI_Count target_count, struct kumi_dt *target_datatype,
                 struct kumi_win *win, MPI_Request *request)
{
    return putget(kfn, K_GET, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                  target_datatype, win, request);
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
