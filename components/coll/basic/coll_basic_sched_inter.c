/* coll/basic: schedule builders for intercommunicators (the non-blocking and
 * persistent collectives with the standard's intercommunicator semantics,
 * MPI 4.1 sec. 6.2.2).
 *
 * A schedule holds nodes of one communicator, so the local phases of the
 * blocking versions (coll_basic_inter.c) cannot be part of it: every message
 * here goes over the intercommunicator, to a rank of the remote group, and
 * what the blocking versions do inside a group becomes a hop through the
 * other group.  n is the size of the local group, m of the remote one.
 *
 *   barrier     every process tells remote rank 0 that it has entered; a
 *               rank 0 that has heard from the whole remote group says so to
 *               the remote rank 0; a rank 0 that has heard both (both groups
 *               have entered) releases every remote process.
 *   rooted      the root (MPI_ROOT) talks to every remote process directly:
 *               bcast and scatter(v) send, gather(v) receives, reduce
 *               receives every contribution and combines them in rank order;
 *               MPI_PROC_NULL does nothing.
 *   allgather(v), alltoall(v,w)  every process exchanges with every remote
 *               process (block i of the receive side comes from remote rank i).
 *   allreduce   every process sends its contribution to remote rank 0.  A
 *               rank 0 combines the contributions it receives in rank order:
 *               that is its own group's result, which it keeps and sends to
 *               remote rank 0; that one passes it on to the other processes
 *               of the sender's group (n + m messages for each direction).
 *   reduce_scatter_block  the same with count = n * rcount elements; the
 *               passing rank 0 sends each remote process only its block
 *               (the remote group's rcount is the common total over m).
 *   reduce_scatter  the same, but the passing rank 0 does not know how the
 *               remote group splits the result (only that group's processes
 *               have its recvcounts), so it passes the whole result on and
 *               every process copies out its own block.
 *   scan, exscan  not defined on intercommunicators (the core rejects them).
 *
 * Reductions compute x0 op x1 op ... op x(m-1) over the remote ranks: a CALC
 * node computes inout = in op inout, so the last contribution goes into the
 * accumulator and the lower ones are combined into it from the top.  All of
 * them are received at once, so the combining process holds m - 1
 * temporaries of the reduction's size for the life of the schedule. */
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/coll.h>
#include <kumi/sched.h>
#include "coll_basic.h"

/* Node tags: they only need to tell apart the messages of one schedule
 * between the same two processes. */
enum { TAG_DATA };           /* the one message of the exchanges and rooted operations */
enum { TAG_BARRIER_IN, TAG_BARRIER_HEARD, TAG_BARRIER_OUT };
enum { TAG_CONTRIB, TAG_RESULT, TAG_PASS };     /* allreduce, reduce_scatter(_block) */

/* What zero-byte messages point at. */
static char coll_basic_sched_inter_nothing;

static MPI_Aint coll_basic_sched_inter_ext(MPI_Datatype dt)
{
    MPI_Aint lb, ext;
    kumi_dt_extent(dt, &lb, &ext);
    return ext;
}

/* ------------------------------------------------------------ barrier */
static int coll_basic_sched_inter_ibarrier(MPI_Comm comm, struct kumi_sched *s)
{
    int m = kumi_comm_remote_size(comm);
    char *none = &coll_basic_sched_inter_nothing;

    kumi_sched_send(s, none, 0, MPI_BYTE, 0, TAG_BARRIER_IN);
    kumi_sched_recv(s, none, 0, MPI_BYTE, 0, TAG_BARRIER_OUT);   /* the release */
    if (kumi_comm_rank(comm) != 0) return MPI_SUCCESS;

    /* rank 0: hear every remote process, tell the remote rank 0, release
     * the remote group once the remote rank 0 has heard all of ours */
    int remote_in = kumi_sched_nop(s);
    for (int i = 0; i < m; i++)
        kumi_sched_after(s, remote_in, kumi_sched_recv(s, none, 0, MPI_BYTE, i, TAG_BARRIER_IN));
    kumi_sched_after(s, kumi_sched_send(s, none, 0, MPI_BYTE, 0, TAG_BARRIER_HEARD), remote_in);
    int all_in = kumi_sched_nop(s);
    kumi_sched_after(s, all_in, remote_in);
    kumi_sched_after(s, all_in, kumi_sched_recv(s, none, 0, MPI_BYTE, 0, TAG_BARRIER_HEARD));
    for (int i = 0; i < m; i++)
        kumi_sched_after(s, kumi_sched_send(s, none, 0, MPI_BYTE, i, TAG_BARRIER_OUT), all_in);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------- rooted */
static int coll_basic_sched_inter_ibcast(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm,
                                         struct kumi_sched *s)
{
    if (root == MPI_PROC_NULL) return MPI_SUCCESS;
    if (root != MPI_ROOT) {
        kumi_sched_recv(s, buf, (size_t)count, dt, root, TAG_DATA);
        return MPI_SUCCESS;
    }
    int m = kumi_comm_remote_size(comm);
    for (int i = 0; i < m; i++) kumi_sched_send(s, buf, (size_t)count, dt, i, TAG_DATA);
    return MPI_SUCCESS;
}

/* The root receives block i (counts[i] or count elements at element
 * displacement displs[i] or i * count) from remote rank i. */
static void coll_basic_sched_inter_gather_root(void *rbuf, const MPI_Count *counts, MPI_Count count, const MPI_Aint *displs,
                                               MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s)
{
    int m = kumi_comm_remote_size(comm);
    MPI_Aint ext = coll_basic_sched_inter_ext(rdt);
    for (int i = 0; i < m; i++) {
        MPI_Aint d = displs ? displs[i] : (MPI_Aint)i * (MPI_Aint)count;
        kumi_sched_recv(s, (char *)rbuf + d * ext, (size_t)(counts ? counts[i] : count), rdt, i, TAG_DATA);
    }
}

/* The root sends block i to remote rank i. */
static void coll_basic_sched_inter_scatter_root(const void *sbuf, const MPI_Count *counts, MPI_Count count,
                                                const MPI_Aint *displs, MPI_Datatype sdt, MPI_Comm comm,
                                                struct kumi_sched *s)
{
    int m = kumi_comm_remote_size(comm);
    MPI_Aint ext = coll_basic_sched_inter_ext(sdt);
    for (int i = 0; i < m; i++) {
        MPI_Aint d = displs ? displs[i] : (MPI_Aint)i * (MPI_Aint)count;
        kumi_sched_send(s, (const char *)sbuf + d * ext, (size_t)(counts ? counts[i] : count), sdt, i,
                        TAG_DATA);
    }
}

static int coll_basic_sched_inter_igather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                          MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm,
                                          struct kumi_sched *s)
{
    if (root == MPI_ROOT)
        coll_basic_sched_inter_gather_root(rbuf, NULL, rcount, NULL, rdt, comm, s);
    else if (root != MPI_PROC_NULL)
        kumi_sched_send(s, sbuf, (size_t)scount, sdt, root, TAG_DATA);
    return MPI_SUCCESS;
}

static int coll_basic_sched_inter_igatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                           const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                                           int root, MPI_Comm comm, struct kumi_sched *s)
{
    if (root == MPI_ROOT)
        coll_basic_sched_inter_gather_root(rbuf, rcounts, 0, displs, rdt, comm, s);
    else if (root != MPI_PROC_NULL)
        kumi_sched_send(s, sbuf, (size_t)scount, sdt, root, TAG_DATA);
    return MPI_SUCCESS;
}

static int coll_basic_sched_inter_iscatter(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                           MPI_Count rcount, MPI_Datatype rdt, int root, MPI_Comm comm,
                                           struct kumi_sched *s)
{
    if (root == MPI_ROOT)
        coll_basic_sched_inter_scatter_root(sbuf, NULL, scount, NULL, sdt, comm, s);
    else if (root != MPI_PROC_NULL)
        kumi_sched_recv(s, rbuf, (size_t)rcount, rdt, root, TAG_DATA);
    return MPI_SUCCESS;
}

static int coll_basic_sched_inter_iscatterv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint displs[],
                                            MPI_Datatype sdt, void *rbuf, MPI_Count rcount, MPI_Datatype rdt,
                                            int root, MPI_Comm comm, struct kumi_sched *s)
{
    if (root == MPI_ROOT)
        coll_basic_sched_inter_scatter_root(sbuf, scounts, 0, displs, sdt, comm, s);
    else if (root != MPI_PROC_NULL)
        kumi_sched_recv(s, rbuf, (size_t)rcount, rdt, root, TAG_DATA);
    return MPI_SUCCESS;
}

/* Receive count elements from every remote rank and combine them in rank
 * order into acc (acc = x0 op x1 op ... op x(m-1)).  Returns the node after
 * which acc holds the result (-1 on failure, recorded in s). */
static int coll_basic_sched_inter_combine(void *acc, size_t count, MPI_Datatype dt, MPI_Op op, int tag,
                                          MPI_Comm comm, struct kumi_sched *s)
{
    int m = kumi_comm_remote_size(comm);
    int last = kumi_sched_recv(s, acc, count, dt, m - 1, tag);
    if (m == 1) return last;
    /* the lower contributions arrive at once into one temporary, block i
     * for remote rank i; each is combined as soon as it and the higher
     * ones are in */
    char *tmp = coll_basic_sched_tmp(s, (size_t)(m - 1) * count, dt);
    if (!tmp) return -1;
    MPI_Aint ext = coll_basic_sched_inter_ext(dt);
    for (int i = m - 2; i >= 0; i--) {
        char *x = tmp + (MPI_Aint)i * (MPI_Aint)count * ext;
        int calc = kumi_sched_calc(s, x, acc, count, dt, op);
        kumi_sched_after(s, calc, kumi_sched_recv(s, x, count, dt, i, tag));
        kumi_sched_after(s, calc, last);
        last = calc;
    }
    return last;
}

static int coll_basic_sched_inter_ireduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt,
                                          MPI_Op op, int root, MPI_Comm comm, struct kumi_sched *s)
{
    if (count == 0 || root == MPI_PROC_NULL) return MPI_SUCCESS;   /* count: the same everywhere */
    if (root == MPI_ROOT)
        coll_basic_sched_inter_combine(rbuf, (size_t)count, dt, op, TAG_DATA, comm, s);
    else
        kumi_sched_send(s, sbuf, (size_t)count, dt, root, TAG_DATA);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------- all-to-all */
/* One side of an exchange with every remote rank: block i is counts[i] (or
 * count) elements of types[i] (or dt) at byte offset displs[i] * unit (or
 * i * count * extent; or 0 for every block when same is set). */
struct coll_basic_sched_inter_side {
    char *buf;
    const MPI_Count *counts;
    MPI_Count count;
    const MPI_Aint *displs;
    MPI_Aint unit;
    const MPI_Datatype *types;
    MPI_Datatype dt;
    int same;
};

static char *coll_basic_sched_inter_block(const struct coll_basic_sched_inter_side *sd, int i,
                                          size_t *count, MPI_Datatype *dt)
{
    *dt = sd->types ? sd->types[i] : sd->dt;
    *count = (size_t)(sd->counts ? sd->counts[i] : sd->count);
    if (sd->same) return sd->buf;
    if (sd->displs) return sd->buf + sd->displs[i] * sd->unit;
    return sd->buf + (MPI_Aint)i * (MPI_Aint)sd->count * coll_basic_sched_inter_ext(sd->dt);
}

/* Block i of the receive side from remote rank i, block i of the send side
 * to it.  The first peer depends on the rank, so that not every process
 * starts with remote rank 0. */
static int coll_basic_sched_inter_pairs(const struct coll_basic_sched_inter_side *snd,
                                        const struct coll_basic_sched_inter_side *rcv, MPI_Comm comm,
                                        struct kumi_sched *s)
{
    int m = kumi_comm_remote_size(comm), rank = kumi_comm_rank(comm);
    for (int k = 0; k < m; k++) {
        int i = (rank + k) % m;
        size_t count;
        MPI_Datatype dt;
        char *buf = coll_basic_sched_inter_block(rcv, i, &count, &dt);
        kumi_sched_recv(s, buf, count, dt, i, TAG_DATA);
    }
    for (int k = 0; k < m; k++) {
        int i = (rank + k) % m;
        size_t count;
        MPI_Datatype dt;
        char *buf = coll_basic_sched_inter_block(snd, i, &count, &dt);
        kumi_sched_send(s, buf, count, dt, i, TAG_DATA);
    }
    return MPI_SUCCESS;
}

static int coll_basic_sched_inter_iallgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                             MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm,
                                             struct kumi_sched *s)
{
    struct coll_basic_sched_inter_side snd = { .buf = (char *)sbuf, .count = scount, .dt = sdt, .same = 1 };
    struct coll_basic_sched_inter_side rcv = { .buf = rbuf, .count = rcount, .dt = rdt };
    return coll_basic_sched_inter_pairs(&snd, &rcv, comm, s);
}

static int coll_basic_sched_inter_iallgatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                              const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                                              MPI_Comm comm, struct kumi_sched *s)
{
    struct coll_basic_sched_inter_side snd = { .buf = (char *)sbuf, .count = scount, .dt = sdt, .same = 1 };
    struct coll_basic_sched_inter_side rcv = { .buf = rbuf, .counts = rcounts, .displs = displs,
                                               .unit = coll_basic_sched_inter_ext(rdt), .dt = rdt };
    return coll_basic_sched_inter_pairs(&snd, &rcv, comm, s);
}

static int coll_basic_sched_inter_ialltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                            MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s)
{
    struct coll_basic_sched_inter_side snd = { .buf = (char *)sbuf, .count = scount, .dt = sdt };
    struct coll_basic_sched_inter_side rcv = { .buf = rbuf, .count = rcount, .dt = rdt };
    return coll_basic_sched_inter_pairs(&snd, &rcv, comm, s);
}

static int coll_basic_sched_inter_ialltoallv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                             MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                                             const MPI_Aint rdispls[], MPI_Datatype rdt, MPI_Comm comm,
                                             struct kumi_sched *s)
{
    struct coll_basic_sched_inter_side snd = { .buf = (char *)sbuf, .counts = scounts, .displs = sdispls,
                                               .unit = coll_basic_sched_inter_ext(sdt), .dt = sdt };
    struct coll_basic_sched_inter_side rcv = { .buf = rbuf, .counts = rcounts, .displs = rdispls,
                                               .unit = coll_basic_sched_inter_ext(rdt), .dt = rdt };
    return coll_basic_sched_inter_pairs(&snd, &rcv, comm, s);
}

static int coll_basic_sched_inter_ialltoallw(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                             const MPI_Datatype sdts[], void *rbuf, const MPI_Count rcounts[],
                                             const MPI_Aint rdispls[], const MPI_Datatype rdts[], MPI_Comm comm,
                                             struct kumi_sched *s)
{
    /* displacements in bytes */
    struct coll_basic_sched_inter_side snd = { .buf = (char *)sbuf, .counts = scounts, .displs = sdispls,
                                               .unit = 1, .types = sdts };
    struct coll_basic_sched_inter_side rcv = { .buf = rbuf, .counts = rcounts, .displs = rdispls,
                                               .unit = 1, .types = rdts };
    return coll_basic_sched_inter_pairs(&snd, &rcv, comm, s);
}

/* ------------------------------------------------------- reductions */
/* The part of allreduce and reduce_scatter(_block) at rank 0, once every
 * process has sent its total elements to remote rank 0: combine those of the
 * remote group into acc (the result of this group), send acc to remote rank 0,
 * and receive the remote group's result into pass, for the caller to pass on
 * to remote ranks 1 .. m-1 after node *passed.  Returns the node after which
 * acc holds the result. */
static int coll_basic_sched_inter_swap(size_t total, MPI_Datatype dt, MPI_Op op, void *acc, void *pass,
                                       int *passed, MPI_Comm comm, struct kumi_sched *s)
{
    int done = coll_basic_sched_inter_combine(acc, total, dt, op, TAG_CONTRIB, comm, s);
    kumi_sched_after(s, kumi_sched_send(s, acc, total, dt, 0, TAG_RESULT), done);
    *passed = kumi_sched_recv(s, pass, total, dt, 0, TAG_RESULT);
    return done;
}

static int coll_basic_sched_inter_iallreduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt,
                                             MPI_Op op, MPI_Comm comm, struct kumi_sched *s)
{
    if (count == 0) return MPI_SUCCESS;         /* the same count in both groups */
    kumi_sched_send(s, sbuf, (size_t)count, dt, 0, TAG_CONTRIB);
    if (kumi_comm_rank(comm) != 0) {
        kumi_sched_recv(s, rbuf, (size_t)count, dt, 0, TAG_PASS);
        return MPI_SUCCESS;
    }
    /* rank 0 combines its group's result right in rbuf */
    int m = kumi_comm_remote_size(comm), passed;
    char *pass = coll_basic_sched_tmp(s, (size_t)count, dt);
    if (!pass) return MPI_ERR_NO_MEM;
    coll_basic_sched_inter_swap((size_t)count, dt, op, rbuf, pass, &passed, comm, s);
    for (int i = 1; i < m; i++)
        kumi_sched_after(s, kumi_sched_send(s, pass, (size_t)count, dt, i, TAG_PASS), passed);
    return MPI_SUCCESS;
}

static int coll_basic_sched_inter_ireduce_scatter_block(const void *sbuf, void *rbuf, MPI_Count rcount,
                                                        MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                                        struct kumi_sched *s)
{
    size_t total = (size_t)kumi_comm_size(comm) * (size_t)rcount;
    if (total == 0) return MPI_SUCCESS;         /* the same total in both groups */
    kumi_sched_send(s, sbuf, total, dt, 0, TAG_CONTRIB);
    if (kumi_comm_rank(comm) != 0) {
        kumi_sched_recv(s, rbuf, (size_t)rcount, dt, 0, TAG_PASS);
        return MPI_SUCCESS;
    }
    int m = kumi_comm_remote_size(comm), passed;
    size_t rrcount = total / (size_t)m;         /* the remote group's recvcount */
    MPI_Aint ext = coll_basic_sched_inter_ext(dt);
    char *acc = coll_basic_sched_tmp(s, total, dt), *pass = coll_basic_sched_tmp(s, total, dt);
    if (!acc || !pass) return MPI_ERR_NO_MEM;
    int done = coll_basic_sched_inter_swap(total, dt, op, acc, pass, &passed, comm, s);
    kumi_sched_after(s, kumi_sched_copy(s, acc, (size_t)rcount, dt, rbuf, (size_t)rcount, dt), done);
    for (int i = 1; i < m; i++)
        kumi_sched_after(s, kumi_sched_send(s, pass + (MPI_Aint)((size_t)i * rrcount) * ext, rrcount, dt, i,
                                            TAG_PASS), passed);
    return MPI_SUCCESS;
}

static int coll_basic_sched_inter_ireduce_scatter(const void *sbuf, void *rbuf, const MPI_Count rcounts[],
                                                  MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                                  struct kumi_sched *s)
{
    int n = kumi_comm_size(comm), rank = kumi_comm_rank(comm);
    size_t total = 0, before = 0;
    for (int i = 0; i < n; i++) {
        if (i == rank) before = total;
        total += (size_t)rcounts[i];
    }
    if (total == 0) return MPI_SUCCESS;         /* the same total in both groups */
    MPI_Aint ext = coll_basic_sched_inter_ext(dt);
    size_t mine = (size_t)rcounts[rank];
    kumi_sched_send(s, sbuf, total, dt, 0, TAG_CONTRIB);
    if (rank != 0) {
        /* the whole result comes; this process keeps its block */
        char *all = coll_basic_sched_tmp(s, total, dt);
        if (!all) return MPI_ERR_NO_MEM;
        int got = kumi_sched_recv(s, all, total, dt, 0, TAG_PASS);
        kumi_sched_after(s, kumi_sched_copy(s, all + (MPI_Aint)before * ext, mine, dt, rbuf, mine, dt), got);
        return MPI_SUCCESS;
    }
    int m = kumi_comm_remote_size(comm), passed;
    char *acc = coll_basic_sched_tmp(s, total, dt), *pass = coll_basic_sched_tmp(s, total, dt);
    if (!acc || !pass) return MPI_ERR_NO_MEM;
    int done = coll_basic_sched_inter_swap(total, dt, op, acc, pass, &passed, comm, s);
    kumi_sched_after(s, kumi_sched_copy(s, acc, mine, dt, rbuf, mine, dt), done);
    for (int i = 1; i < m; i++)
        kumi_sched_after(s, kumi_sched_send(s, pass, total, dt, i, TAG_PASS), passed);
    return MPI_SUCCESS;
}

void coll_basic_sched_inter_query(struct kumi_coll_fns *fns)
{
    fns->ibarrier = coll_basic_sched_inter_ibarrier;
    fns->ibcast = coll_basic_sched_inter_ibcast;
    fns->igather = coll_basic_sched_inter_igather;
    fns->igatherv = coll_basic_sched_inter_igatherv;
    fns->iscatter = coll_basic_sched_inter_iscatter;
    fns->iscatterv = coll_basic_sched_inter_iscatterv;
    fns->iallgather = coll_basic_sched_inter_iallgather;
    fns->iallgatherv = coll_basic_sched_inter_iallgatherv;
    fns->ialltoall = coll_basic_sched_inter_ialltoall;
    fns->ialltoallv = coll_basic_sched_inter_ialltoallv;
    fns->ialltoallw = coll_basic_sched_inter_ialltoallw;
    fns->ireduce = coll_basic_sched_inter_ireduce;
    fns->iallreduce = coll_basic_sched_inter_iallreduce;
    fns->ireduce_scatter = coll_basic_sched_inter_ireduce_scatter;
    fns->ireduce_scatter_block = coll_basic_sched_inter_ireduce_scatter_block;
}
