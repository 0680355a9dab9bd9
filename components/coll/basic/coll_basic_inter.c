/* coll/basic on intercommunicators: every blocking collective with the
 * standard's intercommunicator semantics (MPI 4.1 sec. 6.2.2).
 *
 * Traffic between the groups uses the intercommunicator (kumi_coll_*
 * address the remote group); local phases use the intracommunicator of the
 * local group (kumi_comm_local) through the collectives chosen for it.
 *
 *   rooted (bcast, gather(v), scatter(v), reduce): the root (MPI_ROOT) talks
 *       to the other group; MPI_PROC_NULL does nothing.  bcast: the root
 *       sends to remote rank 0, which broadcasts locally; reduce: the other
 *       group reduces locally to its rank 0, which sends to the root;
 *       gather / scatter: linear between the root and every remote rank.
 *   barrier: local barrier, rank 0s exchange a byte, local broadcast.
 *   allgather(v), alltoall(v,w): every process exchanges with every remote
 *       process (block i of the receive side comes from remote rank i).
 *   allreduce: each group reduces locally to its rank 0, the rank 0s swap
 *       their results, each broadcasts the other group's result locally.
 *   reduce_scatter(_block): local reduce to rank 0, rank 0s swap, local
 *       scatter(v) of the other group's result by this group's counts.
 *   scan, exscan: not defined on intercommunicators (MPI_ERR_COMM). */
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/coll.h>
#include "coll_basic.h"

#include <stdlib.h>

enum {
    TAG_I_BARRIER = 64, TAG_I_BCAST, TAG_I_GATHER, TAG_I_GATHERV, TAG_I_SCATTER, TAG_I_SCATTERV,
    TAG_I_ALLGATHER, TAG_I_ALLGATHERV, TAG_I_ALLTOALL, TAG_I_ALLTOALLV, TAG_I_ALLTOALLW,
    TAG_I_REDUCE, TAG_I_ALLREDUCE, TAG_I_RSCATTER, TAG_I_RSCATTER_BLOCK
};

#define TRY(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) return rc_; } while (0)

static MPI_Aint coll_basic_inter_ext(MPI_Datatype dt)
{
    MPI_Aint lb, ext;
    kumi_dt_extent(dt, &lb, &ext);
    return ext;
}

/* ------------------------------------------------- all-pairs exchange */
/* One block per remote rank: count elements of type at byte offset disp. */
struct coll_basic_inter_blk { MPI_Count count; MPI_Aint disp; MPI_Datatype type; };

/* Receive block i of r from remote rank i, send block i of s to it (any
 * block may be empty); s may be NULL when nothing is sent. */
static int coll_basic_inter_pairs(const void *sbuf, const struct coll_basic_inter_blk *s, void *rbuf,
                                  const struct coll_basic_inter_blk *r, MPI_Comm comm, int tag)
{
    int rsize = kumi_comm_remote_size(comm), rank = kumi_comm_rank(comm), n = 0, rc = MPI_SUCCESS;
    kumi_coll_req *reqs = malloc(sizeof *reqs * 2 * (size_t)(rsize ? rsize : 1));
    if (!reqs) return coll_basic_nomem("intercommunicator exchange");
    /* start at a rank-dependent peer so that not everyone hits remote rank 0 first */
    for (int k = 0; k < rsize && rc == MPI_SUCCESS; k++) {
        int i = (rank + k) % rsize;
        rc = kumi_coll_irecv((char *)rbuf + r[i].disp, (size_t)r[i].count, r[i].type, i, tag, comm,
                             &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    for (int k = 0; k < rsize && rc == MPI_SUCCESS; k++) {
        int i = (rank + k) % rsize;
        rc = kumi_coll_isend((const char *)sbuf + s[i].disp, (size_t)s[i].count, s[i].type, i, tag,
                             comm, &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    int rc2 = n ? kumi_coll_waitall(n, reqs) : MPI_SUCCESS;
    free(reqs);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* Blocks for each remote rank i: counts[i] (or count), element displacement
 * displs[i] (or i * count; or 0 for every block when same is set). */
static struct coll_basic_inter_blk *coll_basic_inter_blocks(int rsize, const MPI_Count *counts, MPI_Count count,
                                                           const MPI_Aint *displs, int same, MPI_Datatype dt)
{
    struct coll_basic_inter_blk *b = malloc(sizeof *b * (size_t)(rsize ? rsize : 1));
    if (!b) return NULL;
    MPI_Aint ext = coll_basic_inter_ext(dt);
    for (int i = 0; i < rsize; i++) {
        b[i].count = counts ? counts[i] : count;
        b[i].disp = same ? 0 : (displs ? displs[i] : (MPI_Aint)i * (MPI_Aint)count) * ext;
        b[i].type = dt;
    }
    return b;
}

static int coll_basic_inter_pairs_v(const void *sbuf, const MPI_Count *scounts, MPI_Count scount, const MPI_Aint *sdispls,
                                    int ssame, MPI_Datatype sdt, void *rbuf, const MPI_Count *rcounts,
                                    MPI_Count rcount, const MPI_Aint *rdispls, MPI_Datatype rdt, MPI_Comm comm,
                                    int tag)
{
    int rsize = kumi_comm_remote_size(comm);
    struct coll_basic_inter_blk *s = coll_basic_inter_blocks(rsize, scounts, scount, sdispls, ssame, sdt);
    struct coll_basic_inter_blk *r = coll_basic_inter_blocks(rsize, rcounts, rcount, rdispls, 0, rdt);
    int rc = s && r ? coll_basic_inter_pairs(sbuf, s, rbuf, r, comm, tag)
                    : coll_basic_nomem("intercommunicator exchange");
    free(s);
    free(r);
    return rc;
}

/* ------------------------------------------------------------ barrier */
static int coll_basic_inter_barrier(MPI_Comm comm)
{
    MPI_Comm lc = kumi_comm_local(comm);
    const struct kumi_coll_fns *lf = kumi_comm_coll(lc);
    char in = 0, out = 1;
    TRY(lf->barrier(lc));                     /* everyone of this group has entered */
    if (kumi_comm_rank(comm) == 0)
        TRY(kumi_coll_sendrecv(&out, 1, MPI_BYTE, 0, TAG_I_BARRIER, &in, 1, MPI_BYTE, 0, TAG_I_BARRIER,
                               comm));        /* ... and everyone of the other */
    return lf->bcast(&in, 1, MPI_BYTE, 0, lc);
}

/* ------------------------------------------------------------- rooted */
static int coll_basic_inter_bcast(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (root == MPI_PROC_NULL) return MPI_SUCCESS;
    if (root == MPI_ROOT) return kumi_coll_send(buf, (size_t)count, dt, 0, TAG_I_BCAST, comm);
    MPI_Comm lc = kumi_comm_local(comm);
    if (kumi_comm_rank(comm) == 0)
        TRY(kumi_coll_recv(buf, (size_t)count, dt, root, TAG_I_BCAST, comm));
    return kumi_comm_coll(lc)->bcast(buf, count, dt, 0, lc);
}

/* The root receives block i (counts[i] elements at displs[i]) from remote rank i. */
static int coll_basic_inter_gather_root(void *rbuf, const MPI_Count *counts, MPI_Count count, const MPI_Aint *displs,
                                        MPI_Datatype rdt, MPI_Comm comm, int tag)
{
    int rsize = kumi_comm_remote_size(comm), n = 0, rc = MPI_SUCCESS;
    MPI_Aint ext = coll_basic_inter_ext(rdt);
    kumi_coll_req *reqs = malloc(sizeof *reqs * (size_t)(rsize ? rsize : 1));
    if (!reqs) return coll_basic_nomem("gather");
    for (int i = 0; i < rsize && rc == MPI_SUCCESS; i++) {
        MPI_Aint d = displs ? displs[i] : (MPI_Aint)i * (MPI_Aint)count;
        rc = kumi_coll_irecv((char *)rbuf + d * ext, (size_t)(counts ? counts[i] : count), rdt, i, tag,
                             comm, &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    int rc2 = n ? kumi_coll_waitall(n, reqs) : MPI_SUCCESS;
    free(reqs);
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* The root sends block i to remote rank i. */
static int coll_basic_inter_scatter_root(const void *sbuf, const MPI_Count *counts, MPI_Count count,
                                         const MPI_Aint *displs, MPI_Datatype sdt, MPI_Comm comm, int tag)
{
    int rsize = kumi_comm_remote_size(comm), n = 0, rc = MPI_SUCCESS;
    MPI_Aint ext = coll_basic_inter_ext(sdt);
    kumi_coll_req *reqs = malloc(sizeof *reqs * (size_t)(rsize ? rsize : 1));
    if (!reqs) return coll_basic_nomem("scatter");
    for (int i = 0; i < rsize && rc == MPI_SUCCESS; i++) {
        MPI_Aint d = displs ? displs[i] : (MPI_Aint)i * (MPI_Aint)count;
        rc = kumi_coll_isend((const char *)sbuf + d * ext, (size_t)(counts ? counts[i] : count), sdt, i,
                             tag, comm, &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    int rc2 = n ? kumi_coll_waitall(n, reqs) : MPI_SUCCESS;
    free(reqs);
    return rc != MPI_SUCCESS ? rc : rc2;
}

static int coll_basic_inter_gather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                   MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm)
{
    if (root == MPI_PROC_NULL) return MPI_SUCCESS;
    if (root == MPI_ROOT)
        return coll_basic_inter_gather_root(rbuf, NULL, rcount, NULL, rdt, comm, TAG_I_GATHER);
    return kumi_coll_send(sbuf, (size_t)scount, sdt, root, TAG_I_GATHER, comm);
}

static int coll_basic_inter_gatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                    const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt, int root,
                                    MPI_Comm comm)
{
    if (root == MPI_PROC_NULL) return MPI_SUCCESS;
    if (root == MPI_ROOT)
        return coll_basic_inter_gather_root(rbuf, rcounts, 0, displs, rdt, comm, TAG_I_GATHERV);
    return kumi_coll_send(sbuf, (size_t)scount, sdt, root, TAG_I_GATHERV, comm);
}

static int coll_basic_inter_scatter(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                    MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm)
{
    if (root == MPI_PROC_NULL) return MPI_SUCCESS;
    if (root == MPI_ROOT)
        return coll_basic_inter_scatter_root(sbuf, NULL, scount, NULL, sdt, comm, TAG_I_SCATTER);
    return kumi_coll_recv(rbuf, (size_t)rcount, rdt, root, TAG_I_SCATTER, comm);
}

static int coll_basic_inter_scatterv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[],
                                     MPI_Datatype sdt, void *rbuf, MPI_Count rcount, MPI_Datatype rdt,
                                     int root, MPI_Comm comm)
{
    if (root == MPI_PROC_NULL) return MPI_SUCCESS;
    if (root == MPI_ROOT)
        return coll_basic_inter_scatter_root(sbuf, scounts, 0, displs, sdt, comm, TAG_I_SCATTERV);
    return kumi_coll_recv(rbuf, (size_t)rcount, rdt, root, TAG_I_SCATTERV, comm);
}

/* Reduce count elements of every member's sbuf to local rank 0: returns in
 * *acc (a temporary at rank 0, *mem to free; NULL elsewhere). */
static int coll_basic_inter_local_reduce(const void *sbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                                         MPI_Comm comm, char **acc, void **mem)
{
    MPI_Comm lc = kumi_comm_local(comm);
    *acc = NULL;
    *mem = NULL;
    if (kumi_comm_rank(comm) == 0 && !(*acc = coll_basic_tmp(count, dt, mem)))
        return coll_basic_nomem("reduce");
    int rc = kumi_comm_coll(lc)->reduce(sbuf, *acc, (MPI_Count)count, dt, op, 0, lc);
    if (rc != MPI_SUCCESS) {
        free(*mem);
        *mem = NULL;
        *acc = NULL;
    }
    return rc;
}

static int coll_basic_inter_reduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                   int root, MPI_Comm comm)
{
    if (root == MPI_PROC_NULL) return MPI_SUCCESS;
    if (root == MPI_ROOT) return kumi_coll_recv(rbuf, (size_t)count, dt, 0, TAG_I_REDUCE, comm);
    char *acc;
    void *mem;
    TRY(coll_basic_inter_local_reduce(sbuf, (size_t)count, dt, op, comm, &acc, &mem));
    int rc = MPI_SUCCESS;
    if (kumi_comm_rank(comm) == 0) rc = kumi_coll_send(acc, (size_t)count, dt, root, TAG_I_REDUCE, comm);
    free(mem);
    return rc;
}

/* ------------------------------------------------------- all-to-all */
static int coll_basic_inter_allgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                      MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm)
{
    return coll_basic_inter_pairs_v(sbuf, NULL, scount, NULL, 1, sdt, rbuf, NULL, rcount, NULL, rdt, comm,
                                    TAG_I_ALLGATHER);
}

static int coll_basic_inter_allgatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                       const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                                       MPI_Comm comm)
{
    return coll_basic_inter_pairs_v(sbuf, NULL, scount, NULL, 1, sdt, rbuf, rcounts, 0, displs, rdt, comm,
                                    TAG_I_ALLGATHERV);
}

static int coll_basic_inter_alltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                     MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm)
{
    return coll_basic_inter_pairs_v(sbuf, NULL, scount, NULL, 0, sdt, rbuf, NULL, rcount, NULL, rdt, comm,
                                    TAG_I_ALLTOALL);
}

static int coll_basic_inter_alltoallv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                      MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                                      const MPI_Aint rdispls[], MPI_Datatype rdt, MPI_Comm comm)
{
    return coll_basic_inter_pairs_v(sbuf, scounts, 0, sdispls, 0, sdt, rbuf, rcounts, 0, rdispls, rdt,
                                    comm, TAG_I_ALLTOALLV);
}

static int coll_basic_inter_alltoallw(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                      const MPI_Datatype sdts[], void *rbuf, const MPI_Count rcounts[],
                                      const MPI_Aint rdispls[], const MPI_Datatype rdts[], MPI_Comm comm)
{
    int rsize = kumi_comm_remote_size(comm);
    struct coll_basic_inter_blk *s = malloc(sizeof *s * (size_t)(rsize ? rsize : 1));
    struct coll_basic_inter_blk *r = malloc(sizeof *r * (size_t)(rsize ? rsize : 1));
    int rc;
    if (s && r) {
        for (int i = 0; i < rsize; i++) {
            s[i].count = scounts[i]; s[i].disp = sdispls[i]; s[i].type = sdts[i];   /* bytes */
            r[i].count = rcounts[i]; r[i].disp = rdispls[i]; r[i].type = rdts[i];
        }
        rc = coll_basic_inter_pairs(sbuf, s, rbuf, r, comm, TAG_I_ALLTOALLW);
    } else {
        rc = coll_basic_nomem("alltoallw");
    }
    free(s);
    free(r);
    return rc;
}

/* ------------------------------------------------------- reductions */
/* Local reduce of count elements to rank 0, which swaps the result with the
 * other group's rank 0 (rcount elements arrive into *res, a temporary at rank 0
 * or rbuf when given). */
static int coll_basic_inter_swap(const void *sbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                                 MPI_Comm comm, int tag, void *rbuf, size_t rcount, char **res,
                                 void **resmem)
{
    char *acc;
    void *mem;
    *resmem = NULL;
    *res = rbuf;
    TRY(coll_basic_inter_local_reduce(sbuf, count, dt, op, comm, &acc, &mem));
    int rc = MPI_SUCCESS;
    if (kumi_comm_rank(comm) == 0) {
        if (!*res && !(*res = coll_basic_tmp(rcount, dt, resmem))) rc = coll_basic_nomem("reduction");
        if (rc == MPI_SUCCESS)
            rc = kumi_coll_sendrecv(acc, count, dt, 0, tag, *res, rcount, dt, 0, tag, comm);
    }
    free(mem);
    if (rc != MPI_SUCCESS) {
        free(*resmem);
        *resmem = NULL;
    }
    return rc;
}

static int coll_basic_inter_allreduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                      MPI_Comm comm)
{
    char *res;
    void *mem;
    if (count == 0) return MPI_SUCCESS;         /* the same count in both groups */
    TRY(coll_basic_inter_swap(sbuf, (size_t)count, dt, op, comm, TAG_I_ALLREDUCE, rbuf, (size_t)count,
                              &res, &mem));
    MPI_Comm lc = kumi_comm_local(comm);
    return kumi_comm_coll(lc)->bcast(rbuf, count, dt, 0, lc);
}

/* The other group's reduction of total elements is scattered here by rcounts. */
static int coll_basic_inter_rscatter(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dt,
                                     MPI_Op op, MPI_Comm comm, int tag)
{
    int size = kumi_comm_size(comm), rank = kumi_comm_rank(comm);
    size_t total = 0;
    for (int i = 0; i < size; i++) total += (size_t)rcounts[i];
    if (total == 0) return MPI_SUCCESS;         /* the same total in both groups */
    MPI_Aint *displs = malloc(sizeof(MPI_Aint) * (size_t)size), d = 0;
    if (!displs) return coll_basic_nomem("reduce_scatter");
    for (int i = 0; i < size; i++) {
        displs[i] = d;
        d += (MPI_Aint)rcounts[i];
    }
    char *res;
    void *mem;
    int rc = coll_basic_inter_swap(sbuf, total, dt, op, comm, tag, NULL, total, &res, &mem);
    if (rc == MPI_SUCCESS) {
        MPI_Comm lc = kumi_comm_local(comm);
        rc = kumi_comm_coll(lc)->scatterv(res, rcounts, displs, dt, rbuf, rcounts[rank], dt, 0, lc);
    }
    free(mem);
    free(displs);
    return rc;
}

static int coll_basic_inter_reduce_scatter(const void *sbuf, void *rbuf, const MPI_Count rcounts[],
                                           MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    return coll_basic_inter_rscatter(sbuf, rbuf, rcounts, dt, op, comm, TAG_I_RSCATTER);
}

static int coll_basic_inter_reduce_scatter_block(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dt,
                                                 MPI_Op op, MPI_Comm comm)
{
    int size = kumi_comm_size(comm);
    MPI_Count *counts = malloc(sizeof(MPI_Count) * (size_t)size);
    if (!counts) return coll_basic_nomem("reduce_scatter_block");
    for (int i = 0; i < size; i++) counts[i] = rcount;
    int rc = coll_basic_inter_rscatter(sbuf, rbuf, counts, dt, op, comm, TAG_I_RSCATTER_BLOCK);
    free(counts);
    return rc;
}

static int coll_basic_inter_scan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                 MPI_Comm comm)
{
    (void)sbuf; (void)rbuf; (void)count; (void)dt; (void)op; (void)comm;
    return kumi_error(MPI_ERR_COMM, "MPI_Scan: not defined on an intercommunicator");
}

static int coll_basic_inter_exscan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                                   MPI_Comm comm)
{
    (void)sbuf; (void)rbuf; (void)count; (void)dt; (void)op; (void)comm;
    return kumi_error(MPI_ERR_COMM, "MPI_Exscan: not defined on an intercommunicator");
}

int coll_basic_inter_query(MPI_Comm comm, int *priority, struct kumi_coll_fns *fns)
{
    (void)comm;
    (void)priority;
    fns->barrier = coll_basic_inter_barrier;
    fns->bcast = coll_basic_inter_bcast;
    fns->gather = coll_basic_inter_gather;
    fns->gatherv = coll_basic_inter_gatherv;
    fns->scatter = coll_basic_inter_scatter;
    fns->scatterv = coll_basic_inter_scatterv;
    fns->allgather = coll_basic_inter_allgather;
    fns->allgatherv = coll_basic_inter_allgatherv;
    fns->alltoall = coll_basic_inter_alltoall;
    fns->alltoallv = coll_basic_inter_alltoallv;
    fns->alltoallw = coll_basic_inter_alltoallw;
    fns->reduce = coll_basic_inter_reduce;
    fns->allreduce = coll_basic_inter_allreduce;
    fns->reduce_scatter = coll_basic_inter_reduce_scatter;
    fns->reduce_scatter_block = coll_basic_inter_reduce_scatter_block;
    fns->scan = coll_basic_inter_scan;
    fns->exscan = coll_basic_inter_exscan;
    coll_basic_sched_inter_query(fns);
    return KUMI_OK;
}
