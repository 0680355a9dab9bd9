/* coll/basic: schedule builders for intracommunicators (non-blocking and
 * persistent collectives), the same algorithms as the blocking ones in
 * coll_basic.c, written as DAGs:
 *   barrier           binomial fan-in to rank 0, binomial fan-out
 *   bcast             binomial tree: RECV from the parent, then the SENDs
 *                     to the children
 *   gather(v)         the root RECVs every block at once
 *   scatter(v)        the root SENDs every block at once
 *   allgather(v)      every block to / from every other rank at once
 *   alltoall(v,w)     every exchange at once (in place: each receive block
 *                     is first copied aside and sent from there)
 *   reduce            binomial tree towards rank 0 over contiguous rank
 *                     ranges: the children's partials arrive at once, each
 *                     in a temporary of its own, and CALCs combine them in
 *                     rank order; rank 0 then sends the result to the root
 *   allreduce         reduce to 0 + bcast
 *   reduce_scatter(_block)  reduce to 0 + scatter(v)
 *   scan / exscan     chain rank 0 -> 1 -> ... -> n-1
 * A rank's own block always goes by a COPY node.  Every node reads what it
 * needs (counts, displacements, addresses) now, so a persistent collective
 * reruns the schedule without looking at the arguments again. */
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/coll.h>
#include <kumi/sched.h>
#include "coll_basic.h"

#include <stdlib.h>

/* A schedule's messages travel with a context and tag of their own; node
 * tags only keep apart the two phases of one operation (barrier's fan-in
 * and fan-out, the reduction and the distribution of allreduce and
 * reduce_scatter), whose messages may go between the same two ranks. */
enum { TAG_PHASE1 = 1, TAG_PHASE2 = 2 };

/* Zero-byte messages (barrier) need an address; nothing is written to it. */
static char coll_basic_sched_dummy;

char *coll_basic_sched_tmp(struct kumi_sched *s, size_t count, MPI_Datatype dt)
{
    MPI_Aint lo, hi;
    coll_basic_span(count, dt, &lo, &hi);
    char *mem = kumi_sched_alloc(s, hi > lo ? (size_t)(hi - lo) : 1);
    return mem ? mem - lo : NULL;
}

/* ------------------------------------------------------------ blocks */
/* One side of a rooted, all-to-all or exchange collective: block i is
 * count(i) elements of type(i) at address(i).  Without per-block types
 * (dts == NULL) every block has type dt and displacements count elements of
 * dt; NULL counts / displs mean `count` elements at element i * count.  With
 * per-block types (alltoallw) displs are in bytes. */
struct coll_basic_blocks {
    const MPI_Count *counts;
    MPI_Count count;
    const MPI_Aint *displs;
    MPI_Datatype dt;
    const MPI_Datatype *dts;
    MPI_Aint ext;
};

/* Blocks of one type; dt is looked at only here, so build them only where
 * the side is significant (e.g. the receive side of gather at the root). */
static struct coll_basic_blocks coll_basic_blocks_of(const MPI_Count *counts, MPI_Count count, const MPI_Aint *displs,
                                                     MPI_Datatype dt)
{
    MPI_Aint lb, ext;
    kumi_dt_extent(dt, &lb, &ext);
    return (struct coll_basic_blocks){ .counts = counts, .count = count, .displs = displs, .dt = dt,
                                       .ext = ext };
}

static size_t coll_basic_blk_count(const struct coll_basic_blocks *b, int i)
{
    return (size_t)(b->counts ? b->counts[i] : b->count);
}

static MPI_Datatype coll_basic_blk_type(const struct coll_basic_blocks *b, int i)
{
    return b->dts ? b->dts[i] : b->dt;
}

static char *coll_basic_blk_addr(const struct coll_basic_blocks *b, const void *buf, int i)
{
    if (b->dts) return (char *)buf + b->displs[i];
    MPI_Aint elem = b->displs ? b->displs[i] : (MPI_Aint)i * (MPI_Aint)b->count;
    return (char *)buf + elem * b->ext;
}

/* ------------------------------------------------------------ bcast */
/* Binomial tree from root (the blocking one's tree).  A non-root receives
 * from its parent once every node of preds is done (its buffer may still be
 * read by an earlier phase); the root's sends wait for preds instead.  The
 * sends to the children follow the receive and are independent of each
 * other. */
static void coll_basic_sched_bcast(struct kumi_sched *s, void *buf, size_t count, MPI_Datatype dt,
                                   int root, MPI_Comm comm, int tag, const int *preds, int npreds)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    int vr = (rank - root + size) % size;
    int got = -1, mask = 1;

    while (mask < size) {
        if (vr & mask) {
            got = kumi_sched_recv(s, buf, count, dt, (vr - mask + root) % size, tag);
            kumi_sched_after_all(s, got, preds, npreds);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (vr + mask >= size) continue;
        int snd = kumi_sched_send(s, buf, count, dt, (vr + mask + root) % size, tag);
        if (vr == 0)
            kumi_sched_after_all(s, snd, preds, npreds);
        else
            kumi_sched_after(s, snd, got);
    }
}

static int coll_basic_ibcast(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm,
                             struct kumi_sched *s)
{
    coll_basic_sched_bcast(s, buf, (size_t)count, dt, root, comm, TAG_PHASE1, NULL, 0);
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------- barrier */
/* Fan-in: a rank receives from all its children at once and reports to its
 * parent after the last; fan-out: the bcast tree from rank 0. */
static int coll_basic_ibarrier(MPI_Comm comm, struct kumi_sched *s)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    int in[8 * sizeof(int)], n = 0, mask;

    for (mask = 1; mask < size; mask <<= 1) {
        if (rank & mask) break;
        if (rank + mask < size)
            in[n++] = kumi_sched_recv(s, &coll_basic_sched_dummy, 0, MPI_BYTE, rank + mask, TAG_PHASE1);
    }
    if (mask < size) {
        int up = kumi_sched_send(s, &coll_basic_sched_dummy, 0, MPI_BYTE, rank - mask, TAG_PHASE1);
        kumi_sched_after_all(s, up, in, n);
        in[0] = up;
        n = 1;
    }
    coll_basic_sched_bcast(s, &coll_basic_sched_dummy, 0, MPI_BYTE, 0, comm, TAG_PHASE2, in, n);
    return MPI_SUCCESS;
}

/* --------------------------------------------------- gather / scatter */
/* The root's part of a linear gather: a receive per other rank, a copy of
 * its own block (none with MPI_IN_PLACE), all independent. */
static void coll_basic_sched_gather_root(struct kumi_sched *s, const void *sbuf, MPI_Count scount,
                                         MPI_Datatype sdt, void *rbuf,
                                         const struct coll_basic_blocks *r, MPI_Comm comm)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    for (int i = 0; i < size; i++) {
        if (i == rank) continue;
        kumi_sched_recv(s, coll_basic_blk_addr(r, rbuf, i), coll_basic_blk_count(r, i),
                        coll_basic_blk_type(r, i), i, TAG_PHASE1);
    }
    if (sbuf != MPI_IN_PLACE)
        kumi_sched_copy(s, sbuf, (size_t)scount, sdt, coll_basic_blk_addr(r, rbuf, rank),
                        coll_basic_blk_count(r, rank), coll_basic_blk_type(r, rank));
}

static int coll_basic_igather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                              MPI_Datatype rdt, int root, MPI_Comm comm, struct kumi_sched *s)
{
    if (kumi_comm_rank(comm) != root) {
        kumi_sched_send(s, sbuf, (size_t)scount, sdt, root, TAG_PHASE1);
        return MPI_SUCCESS;
    }
    struct coll_basic_blocks r = coll_basic_blocks_of(NULL, rcount, NULL, rdt);
    coll_basic_sched_gather_root(s, sbuf, scount, sdt, rbuf, &r, comm);
    return MPI_SUCCESS;
}

static int coll_basic_igatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                               const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt, int root,
                               MPI_Comm comm, struct kumi_sched *s)
{
    if (kumi_comm_rank(comm) != root) {
        kumi_sched_send(s, sbuf, (size_t)scount, sdt, root, TAG_PHASE1);
        return MPI_SUCCESS;
    }
    struct coll_basic_blocks r = coll_basic_blocks_of(rcounts, 0, displs, rdt);
    coll_basic_sched_gather_root(s, sbuf, scount, sdt, rbuf, &r, comm);
    return MPI_SUCCESS;
}

/* Linear scatter; every node waits for pred (-1: nothing).  sb (the send
 * blocks) is used at the root only. */
static void coll_basic_sched_scatter(struct kumi_sched *s, const void *sbuf,
                                     const struct coll_basic_blocks *sb, void *rbuf, MPI_Count rcount,
                                     MPI_Datatype rdt, int root, MPI_Comm comm, int tag, int pred)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    if (rank != root) {
        kumi_sched_after(s, kumi_sched_recv(s, rbuf, (size_t)rcount, rdt, root, tag), pred);
        return;
    }
    for (int k = 1; k < size; k++) {
        int i = (root + k) % size;
        int snd = kumi_sched_send(s, coll_basic_blk_addr(sb, sbuf, i), coll_basic_blk_count(sb, i),
                                  coll_basic_blk_type(sb, i), i, tag);
        kumi_sched_after(s, snd, pred);
    }
    if (rbuf != MPI_IN_PLACE) {
        int cp = kumi_sched_copy(s, coll_basic_blk_addr(sb, sbuf, rank), coll_basic_blk_count(sb, rank),
                                 coll_basic_blk_type(sb, rank), rbuf, (size_t)rcount, rdt);
        kumi_sched_after(s, cp, pred);
    }
}

static int coll_basic_iscatter(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                               MPI_Datatype rdt, int root, MPI_Comm comm, struct kumi_sched *s)
{
    struct coll_basic_blocks sb = { 0 };
    if (kumi_comm_rank(comm) == root) sb = coll_basic_blocks_of(NULL, scount, NULL, sdt);
    coll_basic_sched_scatter(s, sbuf, &sb, rbuf, rcount, rdt, root, comm, TAG_PHASE1, -1);
    return MPI_SUCCESS;
}

static int coll_basic_iscatterv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[],
                                MPI_Datatype sdt, void *rbuf, MPI_Count rcount, MPI_Datatype rdt, int root,
                                MPI_Comm comm, struct kumi_sched *s)
{
    struct coll_basic_blocks sb = { 0 };
    if (kumi_comm_rank(comm) == root) sb = coll_basic_blocks_of(scounts, 0, displs, sdt);
    coll_basic_sched_scatter(s, sbuf, &sb, rbuf, rcount, rdt, root, comm, TAG_PHASE1, -1);
    return MPI_SUCCESS;
}

/* -------------------------------------------------------- allgather */
/* Every rank copies its block into place and sends it (straight from sbuf,
 * so the sends need not wait for the copy) to every other rank, while it
 * receives every other block. */
static void coll_basic_sched_allgather(struct kumi_sched *s, const void *sbuf, MPI_Count scount,
                                       MPI_Datatype sdt, void *rbuf,
                                       const struct coll_basic_blocks *r, MPI_Comm comm)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    char *mine = coll_basic_blk_addr(r, rbuf, rank);
    const void *out = mine;
    size_t n = coll_basic_blk_count(r, rank);
    MPI_Datatype t = coll_basic_blk_type(r, rank);

    if (sbuf != MPI_IN_PLACE) {
        kumi_sched_copy(s, sbuf, (size_t)scount, sdt, mine, n, t);
        out = sbuf;
        n = (size_t)scount;
        t = sdt;
    }
    for (int k = 1; k < size; k++) {
        int src = (rank - k + size) % size, dst = (rank + k) % size;
        kumi_sched_recv(s, coll_basic_blk_addr(r, rbuf, src), coll_basic_blk_count(r, src),
                        coll_basic_blk_type(r, src), src, TAG_PHASE1);
        kumi_sched_send(s, out, n, t, dst, TAG_PHASE1);
    }
}

static int coll_basic_iallgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                 MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s)
{
    struct coll_basic_blocks r = coll_basic_blocks_of(NULL, rcount, NULL, rdt);
    coll_basic_sched_allgather(s, sbuf, scount, sdt, rbuf, &r, comm);
    return MPI_SUCCESS;
}

static int coll_basic_iallgatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                  const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                                  MPI_Comm comm, struct kumi_sched *s)
{
    struct coll_basic_blocks r = coll_basic_blocks_of(rcounts, 0, displs, rdt);
    coll_basic_sched_allgather(s, sbuf, scount, sdt, rbuf, &r, comm);
    return MPI_SUCCESS;
}

/* --------------------------------------------------------- alltoall */
/* Block i of the send side goes to rank i, block i of the receive side comes
 * from rank i; the own block is copied.  With MPI_IN_PLACE (sbuf) the
 * receive blocks are also the send blocks: each is copied aside into a
 * temporary of its own, sent from there, and only then received into. */
static int coll_basic_sched_exchange(struct kumi_sched *s, const void *sbuf,
                                     const struct coll_basic_blocks *sb, void *rbuf,
                                     const struct coll_basic_blocks *rb, MPI_Comm comm,
                                     const char *what)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);

    for (int k = 1; k < size; k++) {
        int src = (rank - k + size) % size, dst = (rank + k) % size;
        size_t rn = coll_basic_blk_count(rb, src);
        MPI_Datatype rt = coll_basic_blk_type(rb, src);
        char *rp = coll_basic_blk_addr(rb, rbuf, src);
        int rcv = kumi_sched_recv(s, rp, rn, rt, src, TAG_PHASE1);

        if (sbuf != MPI_IN_PLACE) {
            kumi_sched_send(s, coll_basic_blk_addr(sb, sbuf, dst), coll_basic_blk_count(sb, dst),
                            coll_basic_blk_type(sb, dst), dst, TAG_PHASE1);
        } else if (rn == 0) {
            kumi_sched_send(s, rp, 0, rt, src, TAG_PHASE1);   /* nothing to save */
        } else {
            char *tmp = coll_basic_sched_tmp(s, rn, rt);
            if (!tmp) return coll_basic_nomem(what);
            int aside = kumi_sched_copy(s, rp, rn, rt, tmp, rn, rt);
            kumi_sched_after(s, kumi_sched_send(s, tmp, rn, rt, src, TAG_PHASE1), aside);
            kumi_sched_after(s, rcv, aside);
        }
    }
    if (sbuf != MPI_IN_PLACE)
        kumi_sched_copy(s, coll_basic_blk_addr(sb, sbuf, rank), coll_basic_blk_count(sb, rank),
                        coll_basic_blk_type(sb, rank), coll_basic_blk_addr(rb, rbuf, rank),
                        coll_basic_blk_count(rb, rank), coll_basic_blk_type(rb, rank));
    return MPI_SUCCESS;
}

static int coll_basic_ialltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s)
{
    struct coll_basic_blocks sb = { 0 }, rb = coll_basic_blocks_of(NULL, rcount, NULL, rdt);
    if (sbuf != MPI_IN_PLACE) sb = coll_basic_blocks_of(NULL, scount, NULL, sdt);
    return coll_basic_sched_exchange(s, sbuf, &sb, rbuf, &rb, comm, "ialltoall");
}

static int coll_basic_ialltoallv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                 MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                                 const MPI_Aint rdispls[], MPI_Datatype rdt, MPI_Comm comm,
                                 struct kumi_sched *s)
{
    struct coll_basic_blocks sb = { 0 }, rb = coll_basic_blocks_of(rcounts, 0, rdispls, rdt);
    if (sbuf != MPI_IN_PLACE) sb = coll_basic_blocks_of(scounts, 0, sdispls, sdt);
    return coll_basic_sched_exchange(s, sbuf, &sb, rbuf, &rb, comm, "ialltoallv");
}

static int coll_basic_ialltoallw(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                 const MPI_Datatype sdts[], void *rbuf, const MPI_Count rcounts[],
                                 const MPI_Aint rdispls[], const MPI_Datatype rdts[], MPI_Comm comm,
                                 struct kumi_sched *s)
{
    struct coll_basic_blocks sb = { .counts = scounts, .displs = sdispls, .dts = sdts };
    struct coll_basic_blocks rb = { .counts = rcounts, .displs = rdispls, .dts = rdts };
    return coll_basic_sched_exchange(s, sbuf, &sb, rbuf, &rb, comm, "ialltoallw");
}

/* ----------------------------------------------------------- reduce */
/* Reduce count (> 0) elements of sbuf (never MPI_IN_PLACE here) into rbuf
 * at root.  Binomial tree towards rank 0: rank r (r & mask == 0) receives
 * the reduction of ranks [r+mask, r+2mask) from each child r+mask into a
 * temporary of its own, all at once; CALC `acc op received` in order of
 * mask keeps the rank order (acc holds [r, r+mask)).  The result goes to
 * the parent, or from rank 0 to the root.  *last receives the node that
 * finishes this rank's part (-1: none, a root 0 in place without children),
 * after which rbuf at the root holds the result and sbuf is no longer read. */
static int coll_basic_sched_reduce(struct kumi_sched *s, const void *sbuf, void *rbuf, size_t count,
                                   MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, int tag,
                                   int *last, const char *what)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    const void *acc = sbuf;
    int done = -1, mask;

    for (mask = 1; mask < size; mask <<= 1) {
        if (rank & mask) break;
        if (rank + mask >= size) continue;
        char *part = coll_basic_sched_tmp(s, count, dt);
        if (!part) return coll_basic_nomem(what);
        int rcv = kumi_sched_recv(s, part, count, dt, rank + mask, tag);
        int calc = kumi_sched_calc(s, acc, part, count, dt, op);   /* part = acc op part */
        kumi_sched_after(s, calc, rcv);
        kumi_sched_after(s, calc, done);
        acc = part;
        done = calc;
    }
    if (mask < size) {                      /* rank & mask: report to the parent */
        int up = kumi_sched_send(s, acc, count, dt, rank - mask, tag);
        kumi_sched_after(s, up, done);
        done = up;
    }
    if (rank == 0 && root == 0) {
        if (acc != rbuf) {
            int cp = kumi_sched_copy(s, acc, count, dt, rbuf, count, dt);
            kumi_sched_after(s, cp, done);
            done = cp;
        }
    } else if (rank == 0) {
        int out = kumi_sched_send(s, acc, count, dt, root, tag);
        kumi_sched_after(s, out, done);
        done = out;
    } else if (rank == root) {
        /* after this rank's own part: in place, that read rbuf */
        int in = kumi_sched_recv(s, rbuf, count, dt, 0, tag);
        kumi_sched_after(s, in, done);
        done = in;
    }
    *last = done;
    return MPI_SUCCESS;
}

static int coll_basic_ireduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                              int root, MPI_Comm comm, struct kumi_sched *s)
{
    int last;
    if (count == 0) return MPI_SUCCESS;     /* the same count on every rank */
    if (sbuf == MPI_IN_PLACE) sbuf = rbuf;  /* only allowed at the root */
    return coll_basic_sched_reduce(s, sbuf, rbuf, (size_t)count, dt, op, root, comm, TAG_PHASE1,
                                   &last, "ireduce");
}

static int coll_basic_iallreduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                 MPI_Comm comm, struct kumi_sched *s)
{
    int last;
    if (count == 0) return MPI_SUCCESS;
    if (sbuf == MPI_IN_PLACE) sbuf = rbuf;
    int rc = coll_basic_sched_reduce(s, sbuf, rbuf, (size_t)count, dt, op, 0, comm, TAG_PHASE1,
                                     &last, "iallreduce");
    if (rc != MPI_SUCCESS) return rc;
    /* a rank receives the result into rbuf only after its part of the
     * reduction, which in place has read rbuf */
    coll_basic_sched_bcast(s, rbuf, (size_t)count, dt, 0, comm, TAG_PHASE2, &last, 1);
    return MPI_SUCCESS;
}

/* Reduce everything to rank 0 into a temporary, then scatter it: block i
 * (rcounts[i] elements, packed in rank order) to rank i. */
static int coll_basic_sched_reduce_scatter(struct kumi_sched *s, const void *sbuf, void *rbuf,
                                           const MPI_Count rcounts[], MPI_Count rcount, MPI_Datatype dt,
                                           MPI_Op op, MPI_Comm comm, const char *what)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    size_t total = 0;
    for (int i = 0; i < size; i++) total += (size_t)(rcounts ? rcounts[i] : rcount);
    if (total == 0) return MPI_SUCCESS;
    if (sbuf == MPI_IN_PLACE) sbuf = rbuf;

    MPI_Aint *displs = NULL;
    int last;
    char *tmp = NULL;
    struct coll_basic_blocks sb = { 0 };
    if (rank == 0) {
        if (!(tmp = coll_basic_sched_tmp(s, total, dt))) return coll_basic_nomem(what);
        if (rcounts) {
            if (!(displs = malloc(sizeof(MPI_Aint) * (size_t)size))) return coll_basic_nomem(what);
            MPI_Aint d = 0;
            for (int i = 0; i < size; i++) {
                displs[i] = d;
                d += (MPI_Aint)rcounts[i];
            }
        }
        sb = coll_basic_blocks_of(rcounts, rcount, displs, dt);
    }
    int rc = coll_basic_sched_reduce(s, sbuf, tmp, total, dt, op, 0, comm, TAG_PHASE1, &last, what);
    /* a rank receives its block only after its part of the reduction, which
     * in place has read rbuf */
    if (rc == MPI_SUCCESS)
        coll_basic_sched_scatter(s, tmp, &sb, rbuf, rcounts ? rcounts[rank] : rcount, dt, 0, comm,
                                 TAG_PHASE2, last);
    free(displs);
    return rc;
}

static int coll_basic_ireduce_scatter(const void *sbuf, void *rbuf, const MPI_Count rcounts[],
                                      MPI_Datatype dt, MPI_Op op, MPI_Comm comm, struct kumi_sched *s)
{
    return coll_basic_sched_reduce_scatter(s, sbuf, rbuf, rcounts, 0, dt, op, comm,
                                           "ireduce_scatter");
}

static int coll_basic_ireduce_scatter_block(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dt,
                                            MPI_Op op, MPI_Comm comm, struct kumi_sched *s)
{
    return coll_basic_sched_reduce_scatter(s, sbuf, rbuf, NULL, rcount, dt, op, comm,
                                           "ireduce_scatter_block");
}

/* ------------------------------------------------------------- scan */
/* Chain: rank r copies its contribution into rbuf while it receives
 * x0 op ... op x(r-1) from r-1 into a temporary, combines the two (rbuf =
 * prefix op mine) and passes rbuf on to r+1. */
static int coll_basic_iscan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                            MPI_Comm comm, struct kumi_sched *s)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    size_t n = (size_t)count;
    int done = -1;

    if (n == 0) return MPI_SUCCESS;
    if (sbuf != MPI_IN_PLACE) done = kumi_sched_copy(s, sbuf, n, dt, rbuf, n, dt);
    if (rank > 0) {
        char *prefix = coll_basic_sched_tmp(s, n, dt);
        if (!prefix) return coll_basic_nomem("iscan");
        int rcv = kumi_sched_recv(s, prefix, n, dt, rank - 1, TAG_PHASE1);
        int calc = kumi_sched_calc(s, prefix, rbuf, n, dt, op);
        kumi_sched_after(s, calc, rcv);
        kumi_sched_after(s, calc, done);
        done = calc;
    }
    if (rank < size - 1)
        kumi_sched_after(s, kumi_sched_send(s, rbuf, n, dt, rank + 1, TAG_PHASE1), done);
    return MPI_SUCCESS;
}

/* Chain: rank r receives x0 op ... op x(r-1) into rbuf from r-1 and sends
 * that op x_r to r+1.  rbuf of rank 0 is left untouched (undefined). */
static int coll_basic_iexscan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                              MPI_Comm comm, struct kumi_sched *s)
{
    int rank = kumi_comm_rank(comm), size = kumi_comm_size(comm);
    size_t n = (size_t)count;
    const void *mine = sbuf == MPI_IN_PLACE ? rbuf : sbuf;

    if (n == 0 || size == 1) return MPI_SUCCESS;
    if (rank == 0) {
        kumi_sched_send(s, mine, n, dt, 1, TAG_PHASE1);
        return MPI_SUCCESS;
    }
    if (rank == size - 1) {
        kumi_sched_recv(s, rbuf, n, dt, rank - 1, TAG_PHASE1);
        return MPI_SUCCESS;
    }
    char *tmp = coll_basic_sched_tmp(s, n, dt);
    if (!tmp) return coll_basic_nomem("iexscan");
    int cp = kumi_sched_copy(s, mine, n, dt, tmp, n, dt);
    int rcv = kumi_sched_recv(s, rbuf, n, dt, rank - 1, TAG_PHASE1);
    if (mine == rbuf) kumi_sched_after(s, rcv, cp);     /* save mine before rbuf is overwritten */
    int calc = kumi_sched_calc(s, rbuf, tmp, n, dt, op);   /* tmp = prefix op mine */
    kumi_sched_after(s, calc, cp);
    kumi_sched_after(s, calc, rcv);
    kumi_sched_after(s, kumi_sched_send(s, tmp, n, dt, rank + 1, TAG_PHASE1), calc);
    return MPI_SUCCESS;
}

/* -------------------------------------------------------- component */
void coll_basic_sched_query(struct kumi_coll_fns *fns)
{
    fns->ibarrier = coll_basic_ibarrier;
    fns->ibcast = coll_basic_ibcast;
    fns->igather = coll_basic_igather;
    fns->igatherv = coll_basic_igatherv;
    fns->iscatter = coll_basic_iscatter;
    fns->iscatterv = coll_basic_iscatterv;
    fns->iallgather = coll_basic_iallgather;
    fns->iallgatherv = coll_basic_iallgatherv;
    fns->ialltoall = coll_basic_ialltoall;
    fns->ialltoallv = coll_basic_ialltoallv;
    fns->ialltoallw = coll_basic_ialltoallw;
    fns->ireduce = coll_basic_ireduce;
    fns->iallreduce = coll_basic_iallreduce;
    fns->ireduce_scatter = coll_basic_ireduce_scatter;
    fns->ireduce_scatter_block = coll_basic_ireduce_scatter_block;
    fns->iscan = coll_basic_iscan;
    fns->iexscan = coll_basic_iexscan;
}
