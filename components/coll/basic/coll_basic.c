/* coll/basic: simple, obviously correct algorithms for every MPI collective.
 * This is the reference the other coll components are tested against, so
 * clarity wins over speed:
 *   barrier           binomial fan-in to rank 0, binomial fan-out
 *   bcast             binomial tree from the root
 *   gather(v)         linear: the root posts a receive from every rank
 *   scatter(v)        linear: the root sends to every rank
 *   allgather(v)      every rank sends its block to every other rank
 *   alltoall(v,w)     every rank sends to / receives from every other rank
 *   reduce            binomial tree towards rank 0 that combines contiguous
 *                     rank ranges in rank order (correct for non-commutative
 *                     ops), then rank 0 sends the result to the root
 *   allreduce         reduce to 0 + bcast
 *   reduce_scatter(_block)  reduce to 0 + scatter(v)
 *   scan / exscan     linear chain rank 0 -> 1 -> ... -> n-1
 *
 * Reductions compute x0 op x1 op ... op x(n-1): kumi_op_reduce(op, in, inout)
 * computes inout = in op inout, so `in` is always the lower ranks' part.
 * Temporaries are sized with the datatype's true extent; every datatype goes
 * through kumi_dt_copy / the point-to-point helpers (extent != size is fine). */
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/coll.h>
#include "coll_basic.h"

#include <stdlib.h>
#include <string.h>

/* One tag per operation (and phase); collective traffic has its own context. */
enum {
    TAG_BARRIER_IN = 1, TAG_BARRIER_OUT, TAG_BCAST, TAG_GATHER, TAG_GATHERV, TAG_SCATTER,
    TAG_SCATTERV, TAG_ALLGATHER, TAG_ALLGATHERV, TAG_ALLTOALL, TAG_ALLTOALLV, TAG_ALLTOALLW,
    TAG_REDUCE, TAG_ALLREDUCE, TAG_ALLREDUCE_BC, TAG_RSCATTER, TAG_RSCATTER_SC,
    TAG_RSCATTER_BLOCK, TAG_RSCATTER_BLOCK_SC, TAG_SCAN, TAG_EXSCAN
};

#define TRY(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) return rc_; } while (0)

static inline MPI_Aint coll_basic_ext(MPI_Datatype dt)
{
    MPI_Aint lb, ext;
    kumi_dt_extent(dt, &lb, &ext);
    return ext;
}

/* Address of element idx of a buffer of dt. */
static inline char *coll_basic_at(const void *buf, MPI_Aint idx, MPI_Aint ext)
{
    return (char *)buf + idx * ext;
}

/* Bytes [*lo, *hi) relative to the buffer pointer touched by count elements of dt. */
void coll_basic_span(size_t count, MPI_Datatype dt, MPI_Aint *lo, MPI_Aint *hi)
{
    MPI_Aint tlb, text, ext = coll_basic_ext(dt);
    if (count == 0) { *lo = *hi = 0; return; }
    kumi_dt_true_extent(dt, &tlb, &text);
    MPI_Aint last = (MPI_Aint)(count - 1) * ext;
    *lo = (last < 0 ? last : 0) + tlb;
    *hi = (last > 0 ? last : 0) + tlb + text;
}

/* A temporary for count elements of dt: returns the pointer to use as the
 * buffer; *mem receives what to free. NULL when out of memory. */
char *coll_basic_tmp(size_t count, MPI_Datatype dt, void **mem)
{
    MPI_Aint lo, hi;
    coll_basic_span(count, dt, &lo, &hi);
    *mem = malloc(hi > lo ? (size_t)(hi - lo) : 1);
    if (!*mem) return NULL;
    return (char *)*mem - lo;
}

int coll_basic_nomem(const char *what)
{
    return kumi_error(MPI_ERR_NO_MEM, "coll/basic: %s: out of memory", what);
}

/* ------------------------------------------------------------ bcast */
static int coll_basic_bcast_tag(void *buf, size_t count, MPI_Datatype dt, int root, MPI_Comm comm,
                                int tag)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    int vr = (rank - root + size) % size;
    int mask = 1;
    kumi_coll_req reqs[32];
    int n = 0;

    while (mask < size) {
        if (vr & mask) {
            TRY(kumi_coll_recv(buf, count, dt, (vr - mask + root) % size, tag, comm));
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (vr + mask < size) {
            int rc = kumi_coll_isend(buf, count, dt, (vr + mask + root) % size, tag, comm, &reqs[n]);
            if (rc != MPI_SUCCESS) {
                if (n) kumi_coll_waitall(n, reqs);
                return rc;
            }
            n++;
        }
    }
    return n ? kumi_coll_waitall(n, reqs) : MPI_SUCCESS;
}

static int coll_basic_bcast(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    return coll_basic_bcast_tag(buf, (size_t)count, dt, root, comm, TAG_BCAST);
}

/* ---------------------------------------------------------- barrier */
static int coll_basic_barrier(MPI_Comm comm)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    char dummy = 0;

    for (int mask = 1; mask < size; mask <<= 1) {
        if (rank & mask) {
            TRY(kumi_coll_send(&dummy, 0, MPI_BYTE, rank - mask, TAG_BARRIER_IN, comm));
            break;
        }
        if (rank + mask < size)
            TRY(kumi_coll_recv(&dummy, 0, MPI_BYTE, rank + mask, TAG_BARRIER_IN, comm));
    }
    return coll_basic_bcast_tag(&dummy, 0, MPI_BYTE, 0, comm, TAG_BARRIER_OUT);
}

/* --------------------------------------------------- gather / scatter */
/* Linear gather with per-rank counts and element displacements at the root. */
static int coll_basic_gatherv_tag(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                  const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                                  int root, MPI_Comm comm, int tag)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    if (rank != root)
        return kumi_coll_send(sbuf, (size_t)scount, sdt, root, tag, comm);

    MPI_Aint rext = coll_basic_ext(rdt);
    kumi_coll_req *reqs = malloc(sizeof *reqs * (size_t)size);
    if (!reqs) return coll_basic_nomem("gather");
    int n = 0, rc = MPI_SUCCESS;
    for (int i = 0; i < size && rc == MPI_SUCCESS; i++) {
        if (i == root) continue;
        rc = kumi_coll_irecv(coll_basic_at(rbuf, displs[i], rext), (size_t)rcounts[i], rdt, i, tag,
                             comm, &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    if (rc == MPI_SUCCESS && sbuf != MPI_IN_PLACE)
        rc = kumi_dt_copy(sbuf, (size_t)scount, sdt, coll_basic_at(rbuf, displs[root], rext),
                          (size_t)rcounts[root], rdt);
    int rc2 = n ? kumi_coll_waitall(n, reqs) : MPI_SUCCESS;
    free(reqs);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* counts[i] = c, displs[i] = i*c */
static int coll_basic_regular(int size, MPI_Count c, MPI_Count **counts, MPI_Aint **displs)
{
    *counts = malloc((sizeof(MPI_Count) + sizeof(MPI_Aint)) * (size_t)size);
    if (!*counts) return coll_basic_nomem("counts");
    *displs = (MPI_Aint *)(*counts + size);
    for (int i = 0; i < size; i++) {
        (*counts)[i] = c;
        (*displs)[i] = (MPI_Aint)i * (MPI_Aint)c;
    }
    return MPI_SUCCESS;
}

static int coll_basic_gather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                             MPI_Datatype rdt, int root, MPI_Comm comm)
{
    int size = kumi_comm_size(comm);
    MPI_Count *counts = NULL;
    MPI_Aint *displs = NULL;
    if (kumi_comm_rank(comm) != root)
        return kumi_coll_send(sbuf, (size_t)scount, sdt, root, TAG_GATHER, comm);
    TRY(coll_basic_regular(size, rcount, &counts, &displs));
    int rc = coll_basic_gatherv_tag(sbuf, scount, sdt, rbuf, counts, displs, rdt, root, comm,
                                    TAG_GATHER);
    free(counts);
    return rc;
}

static int coll_basic_gatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                              const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt, int root,
                              MPI_Comm comm)
{
    return coll_basic_gatherv_tag(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm,
                                  TAG_GATHERV);
}

/* Linear scatter with per-rank counts and element displacements at the root. */
static int coll_basic_scatterv_tag(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[],
                                   MPI_Datatype sdt, void *rbuf, MPI_Count rcount, MPI_Datatype rdt,
                                   int root, MPI_Comm comm, int tag)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    if (rank != root)
        return kumi_coll_recv(rbuf, (size_t)rcount, rdt, root, tag, comm);

    MPI_Aint sext = coll_basic_ext(sdt);
    kumi_coll_req *reqs = malloc(sizeof *reqs * (size_t)size);
    if (!reqs) return coll_basic_nomem("scatter");
    int n = 0, rc = MPI_SUCCESS;
    for (int k = 1; k < size && rc == MPI_SUCCESS; k++) {
        int i = (root + k) % size;
        rc = kumi_coll_isend(coll_basic_at(sbuf, displs[i], sext), (size_t)scounts[i], sdt, i, tag,
                             comm, &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    if (rc == MPI_SUCCESS && rbuf != MPI_IN_PLACE)
        rc = kumi_dt_copy(coll_basic_at(sbuf, displs[root], sext), (size_t)scounts[root], sdt,
                          rbuf, (size_t)rcount, rdt);
    int rc2 = n ? kumi_coll_waitall(n, reqs) : MPI_SUCCESS;
    free(reqs);
    return rc != MPI_SUCCESS ? rc : rc2;
}

static int coll_basic_scatter(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                              MPI_Datatype rdt, int root, MPI_Comm comm)
{
    int size = kumi_comm_size(comm);
    MPI_Count *counts = NULL;
    MPI_Aint *displs = NULL;
    if (kumi_comm_rank(comm) != root)
        return kumi_coll_recv(rbuf, (size_t)rcount, rdt, root, TAG_SCATTER, comm);
    TRY(coll_basic_regular(size, scount, &counts, &displs));
    int rc = coll_basic_scatterv_tag(sbuf, counts, displs, sdt, rbuf, rcount, rdt, root, comm,
                                     TAG_SCATTER);
    free(counts);
    return rc;
}

static int coll_basic_scatterv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[],
                               MPI_Datatype sdt, void *rbuf, MPI_Count rcount, MPI_Datatype rdt, int root,
                               MPI_Comm comm)
{
    return coll_basic_scatterv_tag(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm,
                                   TAG_SCATTERV);
}

/* -------------------------------------------------------- allgather */
/* Every rank sends its block (already placed in rbuf) to every other rank. */
static int coll_basic_allgatherv_tag(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                     const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                                     MPI_Comm comm, int tag)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    MPI_Aint rext = coll_basic_ext(rdt);
    char *mine = coll_basic_at(rbuf, displs[rank], rext);

    /* a failed copy of my block (truncated: the counts disagree) is reported
     * at the end: the others still get a block and send theirs */
    int rc0 = sbuf != MPI_IN_PLACE ? kumi_dt_copy(sbuf, (size_t)scount, sdt, mine, (size_t)rcounts[rank], rdt)
                                   : MPI_SUCCESS;
    if (size == 1) return rc0;

    kumi_coll_req *reqs = malloc(sizeof *reqs * 2 * (size_t)size);
    if (!reqs) return coll_basic_nomem("allgather");
    int n = 0, rc = MPI_SUCCESS;
    for (int k = 1; k < size && rc == MPI_SUCCESS; k++) {
        int src = (rank - k + size) % size;
        rc = kumi_coll_irecv(coll_basic_at(rbuf, displs[src], rext), (size_t)rcounts[src], rdt, src,
                             tag, comm, &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    for (int k = 1; k < size && rc == MPI_SUCCESS; k++) {
        int dst = (rank + k) % size;
        rc = kumi_coll_isend(mine, (size_t)rcounts[rank], rdt, dst, tag, comm, &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    int rc2 = n ? kumi_coll_waitall(n, reqs) : MPI_SUCCESS;
    free(reqs);
    return rc != MPI_SUCCESS ? rc : rc2 != MPI_SUCCESS ? rc2 : rc0;
}

static int coll_basic_allgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm)
{
    MPI_Count *counts;
    MPI_Aint *displs;
    TRY(coll_basic_regular(kumi_comm_size(comm), rcount, &counts, &displs));
    int rc = coll_basic_allgatherv_tag(sbuf, scount, sdt, rbuf, counts, displs, rdt, comm,
                                       TAG_ALLGATHER);
    free(counts);
    return rc;
}

static int coll_basic_allgatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                 const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                                 MPI_Comm comm)
{
    return coll_basic_allgatherv_tag(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm,
                                     TAG_ALLGATHERV);
}

/* --------------------------------------------------------- alltoall */
/* The general exchange: block i of the send side (count, byte displacement,
 * type) goes to rank i, block i of the receive side comes from rank i. */
struct coll_basic_blocks {
    MPI_Count *counts;
    MPI_Aint *disp;
    MPI_Datatype *types;
};

static int coll_basic_blocks_alloc(struct coll_basic_blocks *b, int size)
{
    b->counts = malloc(sizeof(MPI_Count) * (size_t)size);
    b->disp = malloc(sizeof(MPI_Aint) * (size_t)size);
    b->types = malloc(sizeof(MPI_Datatype) * (size_t)size);
    if (!b->counts || !b->disp || !b->types) {
        free(b->counts); free(b->disp); free(b->types);
        b->counts = NULL; b->disp = NULL; b->types = NULL;
        return coll_basic_nomem("alltoall");
    }
    return MPI_SUCCESS;
}

static void coll_basic_blocks_free(struct coll_basic_blocks *b)
{
    free(b->counts); free(b->disp); free(b->types);
}

/* MPI_IN_PLACE: copy the receive blocks aside; they become the send blocks. */
static int coll_basic_copy_aside(const void *rbuf, int size, const struct coll_basic_blocks *r,
                                 void **mem, char **base)
{
    MPI_Aint lo = 0, hi = 0;
    int any = 0;
    for (int i = 0; i < size; i++) {
        MPI_Aint l, h;
        if (r->counts[i] == 0) continue;
        coll_basic_span((size_t)r->counts[i], r->types[i], &l, &h);
        l += r->disp[i];
        h += r->disp[i];
        if (!any || l < lo) lo = l;
        if (!any || h > hi) hi = h;
        any = 1;
    }
    *mem = malloc(hi > lo ? (size_t)(hi - lo) : 1);
    if (!*mem) return coll_basic_nomem("alltoall (in place)");
    *base = (char *)*mem - lo;
    for (int i = 0; i < size; i++) {
        if (r->counts[i] == 0) continue;
        TRY(kumi_dt_copy((const char *)rbuf + r->disp[i], (size_t)r->counts[i], r->types[i],
                         *base + r->disp[i], (size_t)r->counts[i], r->types[i]));
    }
    return MPI_SUCCESS;
}

static int coll_basic_exchange(const void *sbuf, const struct coll_basic_blocks *s, void *rbuf,
                               const struct coll_basic_blocks *r, MPI_Comm comm, int tag)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    void *mem = NULL;
    int rc = MPI_SUCCESS, n = 0;

    if (sbuf == MPI_IN_PLACE) {
        char *base = NULL;
        rc = coll_basic_copy_aside(rbuf, size, r, &mem, &base);
        if (rc != MPI_SUCCESS) { free(mem); return rc; }
        sbuf = base;
        s = r;
    }
    kumi_coll_req *reqs = malloc(sizeof *reqs * 2 * (size_t)size);
    if (!reqs) { free(mem); return coll_basic_nomem("alltoall"); }
    for (int k = 1; k < size && rc == MPI_SUCCESS; k++) {
        int src = (rank - k + size) % size;
        rc = kumi_coll_irecv((char *)rbuf + r->disp[src], (size_t)r->counts[src], r->types[src], src,
                             tag, comm, &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    for (int k = 1; k < size && rc == MPI_SUCCESS; k++) {
        int dst = (rank + k) % size;
        rc = kumi_coll_isend((const char *)sbuf + s->disp[dst], (size_t)s->counts[dst], s->types[dst],
                             dst, tag, comm, &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    if (rc == MPI_SUCCESS)
        rc = kumi_dt_copy((const char *)sbuf + s->disp[rank], (size_t)s->counts[rank], s->types[rank],
                          (char *)rbuf + r->disp[rank], (size_t)r->counts[rank], r->types[rank]);
    int rc2 = n ? kumi_coll_waitall(n, reqs) : MPI_SUCCESS;
    free(reqs);
    free(mem);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* Fill blocks from (counts or a fixed count, element displacements or
 * i*count, one type). */
static void coll_basic_blocks_fill(struct coll_basic_blocks *b, int size, const MPI_Count *counts, MPI_Count count,
                                   const MPI_Aint *displs, MPI_Datatype dt)
{
    MPI_Aint ext = coll_basic_ext(dt);
    for (int i = 0; i < size; i++) {
        b->counts[i] = counts ? counts[i] : count;
        b->disp[i] = (displs ? displs[i] : (MPI_Aint)i * (MPI_Aint)count) * ext;
        b->types[i] = dt;
    }
}

static int coll_basic_alltoallv_tag(const void *sbuf, const MPI_Count *scounts, MPI_Count scount, const MPI_Aint *sdispls,
                                    MPI_Datatype sdt, void *rbuf, const MPI_Count *rcounts, MPI_Count rcount,
                                    const MPI_Aint *rdispls, MPI_Datatype rdt, MPI_Comm comm, int tag)
{
    int size = kumi_comm_size(comm);
    struct coll_basic_blocks s = { 0 }, r = { 0 };
    int rc = coll_basic_blocks_alloc(&r, size);
    if (rc == MPI_SUCCESS && sbuf != MPI_IN_PLACE) rc = coll_basic_blocks_alloc(&s, size);
    if (rc == MPI_SUCCESS) {
        coll_basic_blocks_fill(&r, size, rcounts, rcount, rdispls, rdt);
        if (sbuf != MPI_IN_PLACE) coll_basic_blocks_fill(&s, size, scounts, scount, sdispls, sdt);
        rc = coll_basic_exchange(sbuf, &s, rbuf, &r, comm, tag);
    }
    coll_basic_blocks_free(&s);
    coll_basic_blocks_free(&r);
    return rc;
}

static int coll_basic_alltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                               MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm)
{
    return coll_basic_alltoallv_tag(sbuf, NULL, scount, NULL, sdt, rbuf, NULL, rcount, NULL, rdt,
                                    comm, TAG_ALLTOALL);
}

static int coll_basic_alltoallv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                                const MPI_Aint rdispls[], MPI_Datatype rdt, MPI_Comm comm)
{
    return coll_basic_alltoallv_tag(sbuf, scounts, 0, sdispls, sdt, rbuf, rcounts, 0, rdispls, rdt,
                                    comm, TAG_ALLTOALLV);
}

static int coll_basic_alltoallw(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                const MPI_Datatype sdts[], void *rbuf, const MPI_Count rcounts[],
                                const MPI_Aint rdispls[], const MPI_Datatype rdts[], MPI_Comm comm)
{
    int size = kumi_comm_size(comm);
    struct coll_basic_blocks s = { 0 }, r = { 0 };
    int rc = coll_basic_blocks_alloc(&r, size);
    if (rc == MPI_SUCCESS && sbuf != MPI_IN_PLACE) rc = coll_basic_blocks_alloc(&s, size);
    if (rc == MPI_SUCCESS) {
        for (int i = 0; i < size; i++) {
            r.counts[i] = rcounts[i];
            r.disp[i] = rdispls[i];            /* bytes */
            r.types[i] = rdts[i];
            if (sbuf != MPI_IN_PLACE) {
                s.counts[i] = scounts[i];
                s.disp[i] = sdispls[i];
                s.types[i] = sdts[i];
            }
        }
        rc = coll_basic_exchange(sbuf, &s, rbuf, &r, comm, TAG_ALLTOALLW);
    }
    coll_basic_blocks_free(&s);
    coll_basic_blocks_free(&r);
    return rc;
}

/* ----------------------------------------------------------- reduce */
/* Reduce count elements of sbuf (never MPI_IN_PLACE here) into rbuf at root.
 * Binomial tree towards rank 0: at step mask, rank r (r & mask == 0) holds
 * the reduction of ranks [r, r+mask) and receives that of [r+mask, r+2mask),
 * so combining `acc op received` keeps the rank order. */
static int coll_basic_reduce_tag(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                 MPI_Op op, int root, MPI_Comm comm, int tag)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    void *mem[2] = { NULL, NULL };
    char *buf[2] = { NULL, NULL };
    const void *acc = sbuf;
    int which = 0, rc = MPI_SUCCESS, sent = 0;

    if (count == 0) return MPI_SUCCESS;     /* the same count on every rank */
    for (int mask = 1; mask < size; mask <<= 1) {
        if (rank & mask) {
            rc = kumi_coll_send(acc, count, dt, rank - mask, tag, comm);
            sent = 1;
            break;
        }
        if (rank + mask >= size) continue;
        if (!buf[which] && !(buf[which] = coll_basic_tmp(count, dt, &mem[which]))) {
            rc = coll_basic_nomem("reduce");
            break;
        }
        rc = kumi_coll_recv(buf[which], count, dt, rank + mask, tag, comm);
        if (rc != MPI_SUCCESS) break;
        rc = kumi_op_reduce(op, acc, buf[which], count, dt);   /* buf = acc op buf */
        if (rc != MPI_SUCCESS) break;
        acc = buf[which];
        which ^= 1;
    }
    if (rc == MPI_SUCCESS) {
        if (rank == 0 && !sent) {
            if (root == 0) {
                if (acc != rbuf) rc = kumi_dt_copy(acc, count, dt, rbuf, count, dt);
            } else {
                rc = kumi_coll_send(acc, count, dt, root, tag, comm);
            }
        } else if (rank == root) {
            rc = kumi_coll_recv(rbuf, count, dt, 0, tag, comm);
        }
    }
    free(mem[0]);
    free(mem[1]);
    return rc;
}

static int coll_basic_reduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                             int root, MPI_Comm comm)
{
    if (sbuf == MPI_IN_PLACE) sbuf = rbuf;   /* only allowed at the root */
    return coll_basic_reduce_tag(sbuf, rbuf, (size_t)count, dt, op, root, comm, TAG_REDUCE);
}

static int coll_basic_allreduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                MPI_Comm comm)
{
    if (sbuf == MPI_IN_PLACE) sbuf = rbuf;
    TRY(coll_basic_reduce_tag(sbuf, rbuf, (size_t)count, dt, op, 0, comm, TAG_ALLREDUCE));
    return coll_basic_bcast_tag(rbuf, (size_t)count, dt, 0, comm, TAG_ALLREDUCE_BC);
}

/* Reduce everything to rank 0 into a temporary, then scatter it. */
static int coll_basic_reduce_scatter_common(const void *sbuf, void *rbuf, const MPI_Count rcounts[],
                                            MPI_Datatype dt, MPI_Op op, MPI_Comm comm, int tag,
                                            int sctag)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    size_t total = 0;
    for (int i = 0; i < size; i++) total += (size_t)rcounts[i];
    if (total == 0) return MPI_SUCCESS;
    if (sbuf == MPI_IN_PLACE) sbuf = rbuf;

    MPI_Aint *displs = malloc(sizeof(MPI_Aint) * (size_t)size), d = 0;
    if (!displs) return coll_basic_nomem("reduce_scatter");
    for (int i = 0; i < size; i++) {
        displs[i] = d;
        d += (MPI_Aint)rcounts[i];
    }
    void *mem = NULL;
    char *tmp = NULL;
    int rc = MPI_SUCCESS;
    if (rank == 0 && !(tmp = coll_basic_tmp(total, dt, &mem))) rc = coll_basic_nomem("reduce_scatter");
    if (rc == MPI_SUCCESS)
        rc = coll_basic_reduce_tag(sbuf, tmp, total, dt, op, 0, comm, tag);
    if (rc == MPI_SUCCESS)
        rc = coll_basic_scatterv_tag(tmp, rcounts, displs, dt, rbuf, rcounts[rank], dt, 0, comm,
                                     sctag);
    free(mem);
    free(displs);
    return rc;
}

static int coll_basic_reduce_scatter(const void *sbuf, void *rbuf, const MPI_Count rcounts[],
                                     MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    return coll_basic_reduce_scatter_common(sbuf, rbuf, rcounts, dt, op, comm, TAG_RSCATTER,
                                            TAG_RSCATTER_SC);
}

static int coll_basic_reduce_scatter_block(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dt,
                                           MPI_Op op, MPI_Comm comm)
{
    int size = kumi_comm_size(comm);
    MPI_Count *counts;
    MPI_Aint *displs;
    TRY(coll_basic_regular(size, rcount, &counts, &displs));
    int rc = coll_basic_reduce_scatter_common(sbuf, rbuf, counts, dt, op, comm, TAG_RSCATTER_BLOCK,
                                              TAG_RSCATTER_BLOCK_SC);
    free(counts);
    return rc;
}

/* ------------------------------------------------------------- scan */
/* Chain: rank r receives x0 op ... op x(r-1) from r-1, combines it with its
 * own contribution and passes the result on to r+1. */
static int coll_basic_scan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                           MPI_Comm comm)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    size_t n = (size_t)count;
    int rc = MPI_SUCCESS;

    if (sbuf != MPI_IN_PLACE) TRY(kumi_dt_copy(sbuf, n, dt, rbuf, n, dt));
    if (n == 0) return MPI_SUCCESS;
    if (rank > 0) {
        void *mem;
        char *tmp = coll_basic_tmp(n, dt, &mem);
        if (!tmp) return coll_basic_nomem("scan");
        rc = kumi_coll_recv(tmp, n, dt, rank - 1, TAG_SCAN, comm);
        if (rc == MPI_SUCCESS) rc = kumi_op_reduce(op, tmp, rbuf, n, dt);   /* rbuf = prefix op mine */
        free(mem);
        TRY(rc);
    }
    if (rank < size - 1) rc = kumi_coll_send(rbuf, n, dt, rank + 1, TAG_SCAN, comm);
    return rc;
}

/* Chain: rank r receives x0 op ... op x(r-1) into rbuf from r-1 and sends
 * that op x_r to r+1.  rbuf of rank 0 is left untouched (undefined). */
static int coll_basic_exscan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    size_t n = (size_t)count;
    const void *mine = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    int rc = MPI_SUCCESS;

    if (n == 0 || size == 1) return MPI_SUCCESS;
    if (rank == 0) return kumi_coll_send(mine, n, dt, 1, TAG_EXSCAN, comm);
    if (rank == size - 1) return kumi_coll_recv(rbuf, n, dt, rank - 1, TAG_EXSCAN, comm);

    void *mem;
    char *tmp = coll_basic_tmp(n, dt, &mem);
    if (!tmp) return coll_basic_nomem("exscan");
    rc = kumi_dt_copy(mine, n, dt, tmp, n, dt);         /* before rbuf is overwritten */
    if (rc == MPI_SUCCESS) rc = kumi_coll_recv(rbuf, n, dt, rank - 1, TAG_EXSCAN, comm);
    if (rc == MPI_SUCCESS) rc = kumi_op_reduce(op, rbuf, tmp, n, dt);   /* tmp = prefix op mine */
    if (rc == MPI_SUCCESS) rc = kumi_coll_send(tmp, n, dt, rank + 1, TAG_EXSCAN, comm);
    free(mem);
    return rc;
}

/* -------------------------------------------------------- component */
void coll_basic_neighbor_query(struct kumi_coll_fns *fns);   /* coll_basic_neighbor.c */

static int coll_basic_comm_query(MPI_Comm comm, int *priority, struct kumi_coll_fns *fns)
{
    if (kumi_comm_is_inter(comm)) return coll_basic_inter_query(comm, priority, fns);
    (void)priority;                 /* keep the default: parameter coll_basic_priority */
    fns->barrier = coll_basic_barrier;
    fns->bcast = coll_basic_bcast;
    fns->gather = coll_basic_gather;
    fns->gatherv = coll_basic_gatherv;
    fns->scatter = coll_basic_scatter;
    fns->scatterv = coll_basic_scatterv;
    fns->allgather = coll_basic_allgather;
    fns->allgatherv = coll_basic_allgatherv;
    fns->alltoall = coll_basic_alltoall;
    fns->alltoallv = coll_basic_alltoallv;
    fns->alltoallw = coll_basic_alltoallw;
    fns->reduce = coll_basic_reduce;
    fns->allreduce = coll_basic_allreduce;
    fns->reduce_scatter = coll_basic_reduce_scatter;
    fns->reduce_scatter_block = coll_basic_reduce_scatter_block;
    fns->scan = coll_basic_scan;
    fns->exscan = coll_basic_exscan;
    coll_basic_neighbor_query(fns);
    coll_basic_sched_query(fns);
    coll_basic_sched_neighbor_query(fns);
    return KUMI_OK;
}

static const struct kumi_coll_ops coll_basic_ops = {
    .hdr = KUMI_COLL_OPS_HDR,
    .comm_query = coll_basic_comm_query,
};

KUMI_EXPORT const struct kumi_component kumi_coll_basic_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "coll",
    .name = "basic",
    .version = { 0, 1, 0 },
    .description = "Simple linear and binomial-tree algorithms for every collective (the reference)",
    .priority = 10,
    .register_params = NULL,
    .open = NULL,
    .close = NULL,
    .ops = &coll_basic_ops,
};
