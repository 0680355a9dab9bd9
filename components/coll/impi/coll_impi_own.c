/* coll/impi: NOT FROM THE STANDARD'S TEXT.
 *
 * The IMPI standard fixes an algorithm for every MPI-1 collective, but the
 * pages of the only text found (the March 1999 draft) that hold them are
 * missing, and no implementation of them exists in public (LAM 7 did only
 * barrier, bcast and reduce; fact sheet §5.0, §5.11).  The operations here
 * are Kumi's own, built from the standard's blocks (masters, the local
 * phase, the collective context id, LAM's tags); a foreign IMPI
 * implementation would interoperate with them only if it chose the same.
 * They are kept in this one file so that they can be replaced when the
 * text of JRES vol. 105 no. 3 (2000) chapter 4 turns up.
 *
 *   MPI_Allreduce        IMPI Reduce to rank 0, then IMPI Bcast from rank 0
 *   MPI_Gather           local gather to each client's master (the root,
 *                        in the root's client), each other master sends its
 *                        client's blocks, in ascending rank order, to the
 *                        root in one message (tag 130)
 *   MPI_Scatter          the mirror: the root sends each other master its
 *                        client's blocks in one message (tag 150), local
 *                        scatter from it
 *   MPI_Gatherv          linear: every rank sends its block to the root
 *                        (tag 140): the counts are known at the root only
 *   MPI_Scatterv         linear: the root sends each rank its block (160)
 *   MPI_Allgather        this Gather to rank 0, then IMPI Bcast of the
 *                        whole buffer from rank 0
 *   MPI_Allgatherv       one IMPI Bcast per rank r of r's block, from r
 *   MPI_Alltoall(v)      every rank sends to every other rank directly
 *                        (tags 170 / 180), as GridMPI did (pacing/sockrate
 *                        paces exactly these per-process streams)
 *   MPI_Reduce_scatter(_block)  IMPI Reduce of the whole vector to rank 0,
 *                        then this Scatterv from rank 0
 *   MPI_Scan             a chain: rank r receives the prefix of ranks
 *                        0..r-1 from r-1 (tag 200), adds its own on the
 *                        right (rank order kept for any op), sends on
 *   Intercommunicators' context ids (MPI_Intercomm_create, MPI_Intercomm_merge,
 *   and MPI_Comm_dup / split / create of an intercommunicator), when the two
 *   groups together span clients: IMPI's rule (new id = max of IMPI_max_cid
 *   over every participant + 1, sheet §5.2) over both groups, without a
 *   communicator that holds both: the maximum over each group (its local
 *   Allreduce: IMPI's when the group spans clients), the two leaders swap
 *   their groups' maxima (MPI_Intercomm_create: over peer_comm with the
 *   user's tag; merge: tag IMPI_MERGE_TAG 220, dup / split / create:
 *   IMPI_DUP_TAG 210, on the parent intercommunicator's collective context,
 *   between its two rank 0s), a Bcast in each group from its leader.
 *   C = max + 1: the new communicator's point-to-point id, C + 1 its
 *   collectives'; an intercommunicator's local group (a private "shadow"
 *   communicator, which the sheet allows if IMPI_max_cid counts it) gets
 *   C + 2 and C + 3 in both groups (disjoint: collectively unique still).
 *   Merge's `high` travels in the leaders' message as a second IMPI_UINT8.
 * The other operations (MPI_Exscan, MPI_Alltoallw, neighborhood, the
 * non-blocking and persistent forms) are not given by coll/impi: Kumi's
 * other components run them on the same collective context. */
#include "coll_impi.h"
#include <kumi/impi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *blk(const void *buf, MPI_Aint i, MPI_Count n, MPI_Aint ext)
{
    return (char *)buf + i * (MPI_Aint)n * ext;
}

/* The first error of two.  An algorithm runs to its end after a local
 * error (a truncating copy, an op that fails): the peers must not wait for
 * messages this rank owes them (kumi/coll.h). */
static int keep(int rc, int rc2)
{
    return rc ? rc : rc2;
}

/* Wait for n requests; keep the first error. */
static int waitall(int n, kumi_coll_req *reqs, int rc)
{
    if (n > 0) {
        int rc2 = kumi_coll_waitall(n, reqs);
        if (!rc) rc = rc2;
    }
    return rc;
}

/* ------------------------------------------------------------ MPI_Allreduce */
int coll_impi_allreduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    const void *s = sbuf;
    if (sbuf == MPI_IN_PLACE && kumi_comm_rank(comm) != 0) s = rbuf;   /* only the root may reduce in place */
    int rc = coll_impi_reduce(s, rbuf, count, dt, op, 0, comm);
    return keep(rc, coll_impi_bcast(rbuf, count, dt, 0, comm));
}

/* ------------------------------------------------------------ MPI_Gather */
int coll_impi_gather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                     MPI_Datatype rdt, int root, MPI_Comm comm)
{
    int rc;
    struct impi_comm *e = coll_impi_get(comm, &rc);
    if (!e) return rc;
    int me = e->me, mym = impi_local_master_num(e, me), nl = impi_nlocal(e, mym);
    int atroot = impi_are_local(e, me, root);
    MPI_Aint rext = me == root ? coll_impi_ext(rdt) : 0;
    const int *grp = e->grp_rank + e->grp_off[mym];
    void *mem = NULL;
    if (me == root && sbuf == MPI_IN_PLACE) {      /* my block is in place: send it from there */
        sbuf = blk(rbuf, root, rcount, rext);
        scount = rcount;
        sdt = rdt;
    }
    /* local phase: to the root in its client, to the master in the others */
    int lroot = atroot ? e->lidx[root] : 0, iam_lroot = atroot ? me == root : impi_is_master(e, me);
    char *loc = NULL;
    if (iam_lroot && !(loc = coll_impi_tmp((size_t)nl * (size_t)scount, sdt, &mem))) return coll_impi_nomem("gather");
    if (e->local != MPI_COMM_NULL)
        rc = kumi_comm_coll(e->local)->gather(sbuf, scount, sdt, loc, scount, sdt, lroot, e->local);
    else
        rc = kumi_dt_copy(sbuf, (size_t)scount, sdt, loc, (size_t)scount, sdt);
    if (me == root) {
        MPI_Aint sext = coll_impi_ext(sdt);
        for (int i = 0; i < nl; i++)               /* my client's blocks */
            if (grp[i] != root || blk(rbuf, root, rcount, rext) != sbuf)
                rc = keep(rc, kumi_dt_copy(blk(loc, i, scount, sext), (size_t)scount, sdt,
                                           blk(rbuf, grp[i], rcount, rext), (size_t)rcount, rdt));
        /* the other clients' blocks, one message per master */
        for (int m = 0; m < e->nm; m++) {
            if (m == mym) continue;
            int k = impi_nlocal(e, m);
            void *tm = NULL;
            char *t = coll_impi_tmp((size_t)k * (size_t)rcount, rdt, &tm);
            if (!t) {
                rc = coll_impi_nomem("gather");
                break;
            }
            int r2 = kumi_coll_recv(t, (size_t)k * (size_t)rcount, rdt, e->master[m], IMPI_GATHER_TAG, comm);
            rc = keep(rc, r2);
            for (int i = 0; i < k && !r2; i++)
                rc = keep(rc, kumi_dt_copy(blk(t, i, rcount, rext), (size_t)rcount, rdt,
                                           blk(rbuf, e->grp_rank[e->grp_off[m] + i], rcount, rext), (size_t)rcount, rdt));
            free(tm);
        }
    } else if (!atroot && impi_is_master(e, me)) {
        rc = keep(rc, kumi_coll_send(loc, (size_t)nl * (size_t)scount, sdt, root, IMPI_GATHER_TAG, comm));
    }
    free(mem);
    return rc;
}

/* ------------------------------------------------------------ MPI_Scatter */
int coll_impi_scatter(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                      MPI_Datatype rdt, int root, MPI_Comm comm)
{
    int rc;
    struct impi_comm *e = coll_impi_get(comm, &rc);
    if (!e) return rc;
    int me = e->me, mym = impi_local_master_num(e, me), nl = impi_nlocal(e, mym);
    int atroot = impi_are_local(e, me, root);
    void *mem = NULL, *scratch = NULL;
    char *loc = NULL;
    if (me == root) {
        MPI_Aint sext = coll_impi_ext(sdt);
        /* the other clients' blocks, one message per master */
        for (int m = 0; m < e->nm; m++) {
            if (m == mym) continue;
            int k = impi_nlocal(e, m);
            void *tm = NULL;
            char *t = coll_impi_tmp((size_t)k * (size_t)scount, sdt, &tm);
            if (!t) return coll_impi_nomem("scatter");
            for (int i = 0; i < k; i++)
                rc = keep(rc, kumi_dt_copy(blk(sbuf, e->grp_rank[e->grp_off[m] + i], scount, sext), (size_t)scount,
                                           sdt, blk(t, i, scount, sext), (size_t)scount, sdt));
            rc = keep(rc, kumi_coll_send(t, (size_t)k * (size_t)scount, sdt, e->master[m], IMPI_SCATTER_TAG, comm));
            free(tm);
        }
        if (!(loc = coll_impi_tmp((size_t)nl * (size_t)scount, sdt, &mem))) return coll_impi_nomem("scatter");
        for (int i = 0; i < nl; i++)
            rc = keep(rc, kumi_dt_copy(blk(sbuf, e->grp_rank[e->grp_off[mym] + i], scount, sext), (size_t)scount, sdt,
                                       blk(loc, i, scount, sext), (size_t)scount, sdt));
        if (rbuf == MPI_IN_PLACE) {                /* my block stays where it is: receive it into scratch */
            if (!(rbuf = coll_impi_tmp((size_t)scount, sdt, &scratch))) {
                free(mem);
                return coll_impi_nomem("scatter");
            }
            rcount = scount;
            rdt = sdt;
        }
    } else if (!atroot && impi_is_master(e, me)) {
        if (!(loc = coll_impi_tmp((size_t)nl * (size_t)rcount, rdt, &mem))) return coll_impi_nomem("scatter");
        rc = kumi_coll_recv(loc, (size_t)nl * (size_t)rcount, rdt, root, IMPI_SCATTER_TAG, comm);
        scount = rcount;
        sdt = rdt;
    }
    if (e->local != MPI_COMM_NULL)
        rc = keep(rc, kumi_comm_coll(e->local)->scatter(loc, scount, sdt, rbuf, rcount, rdt,
                                                        atroot ? e->lidx[root] : 0, e->local));
    else
        rc = keep(rc, kumi_dt_copy(loc, (size_t)scount, sdt, rbuf, (size_t)rcount, rdt));
    free(mem);
    free(scratch);
    return rc;
}

/* ------------------------------------------------------------ MPI_Gatherv, MPI_Scatterv */
int coll_impi_gatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                      const MPI_Aint displs[], MPI_Datatype rdt, int root, MPI_Comm comm)
{
    int me = kumi_comm_rank(comm), n = kumi_comm_size(comm), rc = MPI_SUCCESS, k = 0;
    if (me != root) return kumi_coll_send(sbuf, (size_t)scount, sdt, root, IMPI_GATHERV_TAG, comm);
    MPI_Aint ext = coll_impi_ext(rdt);
    kumi_coll_req *reqs = malloc(sizeof *reqs * (size_t)n);
    if (!reqs) return coll_impi_nomem("gatherv");
    int cp = MPI_SUCCESS;
    for (int r = 0; r < n && !rc; r++) {
        char *p = (char *)rbuf + displs[r] * ext;
        if (r == me) {
            if (sbuf != MPI_IN_PLACE) cp = kumi_dt_copy(sbuf, (size_t)scount, sdt, p, (size_t)rcounts[r], rdt);
        } else if (!(rc = kumi_coll_irecv(p, (size_t)rcounts[r], rdt, r, IMPI_GATHERV_TAG, comm, &reqs[k]))) {
            k++;
        }
    }
    rc = keep(rc, cp);
    rc = waitall(k, reqs, rc);
    free(reqs);
    return rc;
}

int coll_impi_scatterv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[], MPI_Datatype sdt,
                       void *rbuf, MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm)
{
    int me = kumi_comm_rank(comm), n = kumi_comm_size(comm), rc = MPI_SUCCESS, k = 0;
    if (me != root) return kumi_coll_recv(rbuf, (size_t)rcount, rdt, root, IMPI_SCATTERV_TAG, comm);
    MPI_Aint ext = coll_impi_ext(sdt);
    kumi_coll_req *reqs = malloc(sizeof *reqs * (size_t)n);
    if (!reqs) return coll_impi_nomem("scatterv");
    int cp = MPI_SUCCESS;
    for (int r = 0; r < n && !rc; r++) {
        const char *p = (const char *)sbuf + displs[r] * ext;
        if (r == me) {
            if (rbuf != MPI_IN_PLACE) cp = kumi_dt_copy(p, (size_t)scounts[r], sdt, rbuf, (size_t)rcount, rdt);
        } else if (!(rc = kumi_coll_isend(p, (size_t)scounts[r], sdt, r, IMPI_SCATTERV_TAG, comm, &reqs[k]))) {
            k++;
        }
    }
    rc = keep(rc, cp);
    rc = waitall(k, reqs, rc);
    free(reqs);
    return rc;
}

/* ------------------------------------------------------------ MPI_Allgather(v) */
int coll_impi_allgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                        MPI_Datatype rdt, MPI_Comm comm)
{
    int me = kumi_comm_rank(comm), n = kumi_comm_size(comm);
    if (sbuf == MPI_IN_PLACE && me != 0) {         /* only the root may gather in place */
        sbuf = blk(rbuf, me, rcount, coll_impi_ext(rdt));
        scount = rcount;
        sdt = rdt;
    }
    int rc = coll_impi_gather(sbuf, scount, sdt, rbuf, rcount, rdt, 0, comm);
    return keep(rc, coll_impi_bcast(rbuf, (MPI_Count)n * rcount, rdt, 0, comm));
}

int coll_impi_allgatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                         const MPI_Aint displs[], MPI_Datatype rdt, MPI_Comm comm)
{
    int me = kumi_comm_rank(comm), n = kumi_comm_size(comm);
    MPI_Aint ext = coll_impi_ext(rdt);
    int rc = MPI_SUCCESS;
    if (sbuf != MPI_IN_PLACE)
        rc = kumi_dt_copy(sbuf, (size_t)scount, sdt, (char *)rbuf + displs[me] * ext, (size_t)rcounts[me], rdt);
    for (int r = 0; r < n; r++) rc = keep(rc, coll_impi_bcast((char *)rbuf + displs[r] * ext, rcounts[r], rdt, r, comm));
    return rc;
}

/* ------------------------------------------------------------ MPI_Alltoall(v) */
static int pairwise(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype sdt,
                    void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rdt, int tag,
                    MPI_Comm comm)
{
    int me = kumi_comm_rank(comm), n = kumi_comm_size(comm), rc = MPI_SUCCESS, k = 0;
    MPI_Aint sext = coll_impi_ext(sdt), rext = coll_impi_ext(rdt);
    kumi_coll_req *reqs = malloc(sizeof *reqs * 2 * (size_t)n);
    if (!reqs) return coll_impi_nomem("alltoall");
    /* receives first, then sends, each starting after me (spreads the load) */
    for (int i = 1; i < n && !rc; i++) {
        int p = (me - i + n) % n;
        if (!(rc = kumi_coll_irecv((char *)rbuf + rdispls[p] * rext, (size_t)rcounts[p], rdt, p, tag, comm, &reqs[k])))
            k++;
    }
    for (int i = 1; i < n && !rc; i++) {
        int p = (me + i) % n;
        if (!(rc = kumi_coll_isend((const char *)sbuf + sdispls[p] * sext, (size_t)scounts[p], sdt, p, tag, comm,
                                   &reqs[k])))
            k++;
    }
    if (!rc)
        rc = kumi_dt_copy((const char *)sbuf + sdispls[me] * sext, (size_t)scounts[me], sdt,
                          (char *)rbuf + rdispls[me] * rext, (size_t)rcounts[me], rdt);   /* after posting all */
    rc = waitall(k, reqs, rc);
    free(reqs);
    return rc;
}

/* MPI_IN_PLACE: the send data is the receive buffer's; copy it first. */
static int inplace_copy(const void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rdt,
                        int n, void **mem, char **copy)
{
    MPI_Aint lo = 0, hi = 0;
    int any = 0;
    for (int i = 0; i < n; i++)
        if (rcounts[i] > 0) {
            if (!any || rdispls[i] < lo) lo = rdispls[i];
            if (!any || rdispls[i] + (MPI_Aint)rcounts[i] > hi) hi = rdispls[i] + (MPI_Aint)rcounts[i];
            any = 1;
        }
    MPI_Aint ext = coll_impi_ext(rdt);
    char *t = coll_impi_tmp(any ? (size_t)(hi - lo) : 0, rdt, mem);
    if (!t) return coll_impi_nomem("alltoall");
    *copy = t - lo * ext;                          /* same displacements as rbuf */
    if (any) return kumi_dt_copy((const char *)rbuf + lo * ext, (size_t)(hi - lo), rdt, t, (size_t)(hi - lo), rdt);
    return MPI_SUCCESS;
}

int coll_impi_alltoallv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype sdt,
                        void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rdt,
                        MPI_Comm comm)
{
    if (sbuf != MPI_IN_PLACE)
        return pairwise(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, IMPI_ALLTOALLV_TAG, comm);
    void *mem = NULL;
    char *copy = NULL;
    int rc = inplace_copy(rbuf, rcounts, rdispls, rdt, kumi_comm_size(comm), &mem, &copy);
    if (!rc) rc = pairwise(copy, rcounts, rdispls, rdt, rbuf, rcounts, rdispls, rdt, IMPI_ALLTOALLV_TAG, comm);
    free(mem);
    return rc;
}

int coll_impi_alltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                       MPI_Datatype rdt, MPI_Comm comm)
{
    int n = kumi_comm_size(comm), rc = MPI_SUCCESS;
    MPI_Count *c = malloc(sizeof *c * 2 * (size_t)n);
    MPI_Aint *d = malloc(sizeof *d * 2 * (size_t)n);
    if (!c || !d) {
        free(c);
        free(d);
        return coll_impi_nomem("alltoall");
    }
    for (int i = 0; i < n; i++) {
        c[i] = scount;
        d[i] = (MPI_Aint)i * (MPI_Aint)scount;
        c[n + i] = rcount;
        d[n + i] = (MPI_Aint)i * (MPI_Aint)rcount;
    }
    void *mem = NULL;
    char *copy = NULL;
    if (sbuf == MPI_IN_PLACE) {
        rc = inplace_copy(rbuf, c + n, d + n, rdt, n, &mem, &copy);
        if (!rc) rc = pairwise(copy, c + n, d + n, rdt, rbuf, c + n, d + n, rdt, IMPI_ALLTOALL_TAG, comm);
    } else {
        rc = pairwise(sbuf, c, d, sdt, rbuf, c + n, d + n, rdt, IMPI_ALLTOALL_TAG, comm);
    }
    free(mem);
    free(c);
    free(d);
    return rc;
}

/* ------------------------------------------------------------ MPI_Reduce_scatter(_block) */
int coll_impi_reduce_scatter(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm)
{
    int me = kumi_comm_rank(comm), n = kumi_comm_size(comm), rc;
    MPI_Aint *displs = malloc(sizeof *displs * (size_t)n);
    if (!displs) return coll_impi_nomem("reduce_scatter");
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        displs[i] = (MPI_Aint)total;
        total += (size_t)rcounts[i];
    }
    void *mem = NULL;
    char *all = me == 0 ? coll_impi_tmp(total, dt, &mem) : NULL;
    if (me == 0 && !all) {
        free(displs);
        return coll_impi_nomem("reduce_scatter");
    }
    rc = coll_impi_reduce(sbuf == MPI_IN_PLACE ? rbuf : sbuf, all, (MPI_Count)total, dt, op, 0, comm);
    rc = keep(rc, coll_impi_scatterv(all, rcounts, displs, dt, rbuf, rcounts[me], dt, 0, comm));
    free(mem);
    free(displs);
    return rc;
}

int coll_impi_reduce_scatter_block(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dt, MPI_Op op,
                                   MPI_Comm comm)
{
    int n = kumi_comm_size(comm);
    MPI_Count *c = malloc(sizeof *c * (size_t)n);
    if (!c) return coll_impi_nomem("reduce_scatter_block");
    for (int i = 0; i < n; i++) c[i] = rcount;
    int rc = coll_impi_reduce_scatter(sbuf, rbuf, c, dt, op, comm);
    free(c);
    return rc;
}

/* ------------------------------------------------------------ MPI_Scan */
int coll_impi_scan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int me = kumi_comm_rank(comm), n = kumi_comm_size(comm), rc = MPI_SUCCESS;
    size_t c = (size_t)count;
    if (sbuf != MPI_IN_PLACE) rc = kumi_dt_copy(sbuf, c, dt, rbuf, c, dt);
    if (me > 0) {
        void *mem = NULL;
        char *t = coll_impi_tmp(c, dt, &mem);
        if (!t) return coll_impi_nomem("scan");
        int r2 = kumi_coll_recv(t, c, dt, me - 1, IMPI_SCAN_TAG, comm);
        rc = keep(rc, r2);
        if (!r2) rc = keep(rc, kumi_op_reduce(op, t, rbuf, c, dt));   /* (s0 .. s_{me-1}) op s_me */
        free(mem);
    }
    if (me < n - 1) rc = keep(rc, kumi_coll_send(rbuf, c, dt, me + 1, IMPI_SCAN_TAG, comm));
    return rc;
}

/* ------------------------------------------------------------ intercommunicators' context ids */
/* Both groups are ranks of this IMPI job and together span clients: the
 * same answer on every process of both (the union is symmetric). */
int coll_impi_applies_inter(MPI_Comm local, int rn, const int rjob[])
{
    int n = kumi_comm_size(local), c0 = -1, many = 0;
    for (int i = 0; i < n + rn; i++) {
        int c = coll_impi_client_of_job(i < n ? kumi_comm_job_rank(local, i) : rjob[i - n]);
        if (c < 0) return 0;
        if (c0 < 0) c0 = c;
        else if (c != c0) many = 1;
    }
    return many;
}

int coll_impi_agree_inter(int kind, MPI_Comm local, int leader, MPI_Comm inter,
                          int (*xchg)(void *arg, const uint64_t *mine, uint64_t *theirs, int n), void *arg,
                          uint64_t extra, uint64_t *rextra, int nctx, int32_t ctx[])
{
    static const char *const what[] = { "?", "MPI_Intercomm_create", "MPI_Intercomm_merge",
                                        "an intercommunicator's dup / split / create" };
    const char *fn = what[kind >= 1 && kind <= 3 ? kind : 0];
    const struct kumi_coll_fns *lf = kumi_comm_coll(local);
    int n = kumi_comm_size(local), me = kumi_comm_rank(local), rc = MPI_SUCCESS;
    uint64_t mine = coll_impi_max_cid(), gmax = mine;
    /* the maximum over my group */
    if (n > 1 && (rc = lf->allreduce(&mine, &gmax, 1, MPI_UINT64_T, MPI_MAX, local))) return rc;
    /* the leaders swap their groups' maxima (and the extra word); then each tells its group */
    uint64_t v[3] = { 0, 0, 0 };        /* the other group's maximum, its extra word; 1: the swap failed */
    int lrc = MPI_SUCCESS;
    if (me == leader) {
        uint64_t out[2] = { gmax, extra };
        if (inter != MPI_COMM_NULL) {
            int tag = kind == KUMI_CTX_IC_MERGE ? IMPI_MERGE_TAG : IMPI_DUP_TAG;
            lrc = kumi_coll_sendrecv(out, 2, MPI_UINT64_T, 0, tag, v, 2, MPI_UINT64_T, 0, tag, inter);
        } else {
            lrc = xchg(arg, out, v, 2);
        }
        if (lrc) v[2] = 1;
    }
    if (n > 1 && (rc = lf->bcast(v, 3, MPI_UINT64_T, leader, local))) return lrc ? lrc : rc;
    if (lrc) return lrc;
    if (v[2]) return kumi_error(MPI_ERR_OTHER, "coll/impi: %s: the group's leader (rank %d) could not reach the "
                                "other group's", fn, leader);
    uint64_t all = gmax > v[0] ? gmax : v[0];
    if ((rc = coll_impi_cid_take(all, 2 * nctx))) return rc;
    for (int i = 0; i < nctx; i++) ctx[i] = KUMI_CTX_IMPI + (int32_t)(all + 1 + 2 * (uint64_t)i);
    if (rextra) *rextra = v[1];
    if (coll_impi_verbose > 0 && me == leader) {
        if (nctx > 1)
            fprintf(stderr, "coll/impi[%d]: %s: IMPI context id %llu (collectives %llu), the local group's %llu "
                    "(%llu)\n", kumi_world_rank(), fn, (unsigned long long)all + 1, (unsigned long long)all + 2,
                    (unsigned long long)all + 3, (unsigned long long)all + 4);
        else
            fprintf(stderr, "coll/impi[%d]: %s: IMPI context id %llu (collectives %llu)\n", kumi_world_rank(), fn,
                    (unsigned long long)all + 1, (unsigned long long)all + 2);
    }
    return MPI_SUCCESS;
}
