/* coll/tuned: the round-based program interface of coll_tuned.h, run
 * either now (blocking collectives) or as schedule nodes. */
#include "coll_tuned.h"

#include <stdlib.h>
#include <string.h>

/* Zero-byte messages need an address; nothing is read or written there.  A
 * NULL buffer that carries data is MPI_BOTTOM with a type of absolute
 * addresses: it stays NULL. */
static char tuned_dummy;

MPI_Aint tuned_ext(MPI_Datatype dt)
{
    MPI_Aint lb, ext;
    kumi_dt_extent(dt, &lb, &ext);
    return ext;
}

void tuned_begin(struct tuned_cx *cx, MPI_Comm comm, struct kumi_sched *s, int tag)
{
    memset(cx, 0, offsetof(struct tuned_cx, reqbuf));
    cx->comm = comm;
    cx->rank = kumi_comm_rank(comm);
    cx->size = kumi_comm_size(comm);
    cx->s = s;
    cx->tag = tag;
    cx->segsize = 65536;
    cx->reqs = cx->reqbuf;
    cx->reqcap = (int)(sizeof cx->reqbuf / sizeof cx->reqbuf[0]);
    cx->sends = cx->sendbuf;
    cx->sendcap = (int)(sizeof cx->sendbuf / sizeof cx->sendbuf[0]);
    cx->mem = cx->membuf;
    cx->memcap = (int)(sizeof cx->membuf / sizeof cx->membuf[0]);
    cx->cur = cx->curbuf;
    cx->curcap = (int)(sizeof cx->curbuf / sizeof cx->curbuf[0]);
    cx->prev = -1;
}

int tuned_fail(struct tuned_cx *cx, int err)
{
    if (!cx->err) cx->err = err;
    if (cx->s) kumi_sched_fail(cx->s, err);
    return err;
}

static int tuned_nomem(struct tuned_cx *cx)
{
    return tuned_fail(cx, kumi_error(MPI_ERR_NO_MEM, "coll/tuned: out of memory"));
}

/* Grow one of the arrays whose first storage is inline in cx. */
static int tuned_grow(struct tuned_cx *cx, void **arr, int *cap, void *inl, size_t elem)
{
    int ncap = *cap * 2;
    void *n = malloc(elem * (size_t)ncap);
    if (!n) return tuned_nomem(cx);
    memcpy(n, *arr, elem * (size_t)*cap);
    if (*arr != inl) free(*arr);
    *arr = n;
    *cap = ncap;
    return MPI_SUCCESS;
}

/* Schedule: a new node of the current round. */
static void tuned_node(struct tuned_cx *cx, int node)
{
    if (node < 0) { tuned_fail(cx, MPI_ERR_OTHER); return; }
    kumi_sched_after(cx->s, node, cx->prev);
    if (cx->ncur == cx->curcap &&
        tuned_grow(cx, (void **)&cx->cur, &cx->curcap, cx->curbuf, sizeof *cx->cur))
        return;
    cx->cur[cx->ncur++] = node;
}

/* Blocking: a request of the current round. */
static void tuned_req(struct tuned_cx *cx, int rc, kumi_coll_req r)
{
    if (rc != MPI_SUCCESS) { tuned_fail(cx, rc); return; }
    if (cx->nreq == cx->reqcap &&
        tuned_grow(cx, (void **)&cx->reqs, &cx->reqcap, cx->reqbuf, sizeof *cx->reqs)) {
        kumi_coll_wait(&r);
        return;
    }
    cx->reqs[cx->nreq++] = r;
}

void tuned_round(struct tuned_cx *cx)
{
    if (cx->s) {
        if (cx->err || cx->ncur == 0) return;
        if (cx->ncur == 1) {
            cx->prev = cx->cur[0];
        } else {
            int j = kumi_sched_nop(cx->s);
            if (j < 0) { tuned_fail(cx, MPI_ERR_OTHER); return; }
            kumi_sched_after_all(cx->s, j, cx->cur, cx->ncur);
            cx->prev = j;
        }
        cx->ncur = 0;
        return;
    }
    /* The round's receives are posted: now its sends, so that messages
     * between two ranks in the same round find their receive waiting. */
    for (int i = 0; i < cx->nsend; i++) {
        struct tuned_sendop *o = &cx->sends[i];
        kumi_coll_req r;
        if (cx->err) break;
        int rc = kumi_coll_isend(o->buf, o->count, o->dt, o->peer, cx->tag, cx->comm, &r);
        tuned_req(cx, rc, r);
    }
    cx->nsend = 0;
    if (cx->nlate) {
        struct tuned_copyop *c = &cx->late;
        cx->nlate = 0;
        tuned_copy(cx, c->src, c->scount, c->sdt, c->dst, c->dcount, c->ddt);
    }
    if (cx->nreq) {
        int rc = kumi_coll_waitall(cx->nreq, cx->reqs);
        cx->nreq = 0;
        if (rc) tuned_fail(cx, rc);
    }
}

int tuned_end(struct tuned_cx *cx)
{
    tuned_round(cx);
    if (cx->reqs != cx->reqbuf) free(cx->reqs);
    if (cx->sends != cx->sendbuf) free(cx->sends);
    if (cx->cur != cx->curbuf) free(cx->cur);
    for (int i = 0; i < cx->nmem; i++) free(cx->mem[i]);
    if (cx->mem != cx->membuf) free(cx->mem);
    cx->reqs = cx->reqbuf; cx->sends = cx->sendbuf; cx->cur = cx->curbuf; cx->mem = cx->membuf;
    cx->nmem = 0;
    return cx->err ? cx->err : cx->kept;
}

void tuned_send(struct tuned_cx *cx, const void *buf, size_t count, MPI_Datatype dt, int peer)
{
    if (cx->err || peer == MPI_PROC_NULL) return;
    if (!buf && (count == 0 || kumi_dt_size(dt) == 0)) buf = &tuned_dummy;
    if (cx->s) { tuned_node(cx, kumi_sched_send(cx->s, buf, count, dt, peer, 0)); return; }
    if (cx->nsend == cx->sendcap &&
        tuned_grow(cx, (void **)&cx->sends, &cx->sendcap, cx->sendbuf, sizeof *cx->sends))
        return;
    cx->sends[cx->nsend++] = (struct tuned_sendop){ buf, count, dt, peer };
}

void tuned_recv(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt, int peer)
{
    if (cx->err || peer == MPI_PROC_NULL) return;
    if (!buf && (count == 0 || kumi_dt_size(dt) == 0)) buf = &tuned_dummy;
    if (cx->s) { tuned_node(cx, kumi_sched_recv(cx->s, buf, count, dt, peer, 0)); return; }
    kumi_coll_req r;
    int rc = kumi_coll_irecv(buf, count, dt, peer, cx->tag, cx->comm, &r);
    tuned_req(cx, rc, r);
}

void tuned_calc(struct tuned_cx *cx, const void *in, void *inout, size_t count, MPI_Datatype dt,
                MPI_Op op)
{
    if (cx->err || count == 0) return;
    if (cx->s) { tuned_node(cx, kumi_sched_calc(cx->s, in, inout, count, dt, op)); return; }
    int rc = kumi_op_reduce(op, in, inout, count, dt);
    if (rc) tuned_fail(cx, rc);
}

void tuned_copy(struct tuned_cx *cx, const void *src, size_t scount, MPI_Datatype sdt, void *dst,
                size_t dcount, MPI_Datatype ddt)
{
    if (cx->err || (scount == 0 && dcount == 0)) return;
    if (src == dst && sdt == ddt && scount == dcount) return;
    if (cx->s) { tuned_node(cx, kumi_sched_copy(cx->s, src, scount, sdt, dst, dcount, ddt)); return; }
    int rc = kumi_dt_copy(src, scount, sdt, dst, dcount, ddt);
    if (rc && scount * kumi_dt_size(sdt) > dcount * kumi_dt_size(ddt)) {
        if (!cx->kept) cx->kept = rc;       /* truncated (the ranks disagree): go on */
    } else if (rc) {
        tuned_fail(cx, rc);
    }
}

void tuned_copy_late(struct tuned_cx *cx, const void *src, size_t scount, MPI_Datatype sdt, void *dst,
                     size_t dcount, MPI_Datatype ddt)
{
    if (cx->s || cx->nlate) {               /* (one waits already: this one now) */
        tuned_copy(cx, src, scount, sdt, dst, dcount, ddt);
        return;
    }
    cx->late = (struct tuned_copyop){ src, scount, sdt, dst, dcount, ddt };
    cx->nlate = 1;
}

char *tuned_tmp(struct tuned_cx *cx, size_t count, MPI_Datatype dt)
{
    if (cx->err) return NULL;
    MPI_Aint lo = 0, hi = 0, tlb, text, ext = tuned_ext(dt);
    if (count) {
        kumi_dt_true_extent(dt, &tlb, &text);
        MPI_Aint last = (MPI_Aint)(count - 1) * ext;
        lo = (last < 0 ? last : 0) + tlb;
        hi = (last > 0 ? last : 0) + tlb + text;
    }
    size_t bytes = hi > lo ? (size_t)(hi - lo) : 1;
    char *mem;
    if (cx->s) {
        mem = kumi_sched_alloc(cx->s, bytes);
        if (!mem) { tuned_fail(cx, MPI_ERR_NO_MEM); return NULL; }
        return mem - lo;
    }
    if (cx->nmem == cx->memcap &&
        tuned_grow(cx, (void **)&cx->mem, &cx->memcap, cx->membuf, sizeof *cx->mem))
        return NULL;
    mem = malloc(bytes);
    if (!mem) { tuned_nomem(cx); return NULL; }
    cx->mem[cx->nmem++] = mem;
    return mem - lo;
}
