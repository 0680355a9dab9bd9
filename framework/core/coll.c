/* Collectives in the core: choosing the coll components per communicator,
 * and the MPI functions' implementations (the checks the generated binding
 * cannot do, then a call through the communicator's table).
 *
 * The generated binding has already checked the scalar arguments (handles,
 * counts >= 0, root in range, predefined op defined for the datatype, NULL
 * buffers with count > 0).  Here: array arguments, MPI_IN_PLACE where the
 * standard does not allow it, buffers that alias. */
#include "core/core.h"
#include "registry/registry.h"

#include <string.h>

/* Every operation of struct kumi_coll_fns with the MPI name it implements. */
#define COLL_OPS(X)                                                              \
    X(barrier, "MPI_Barrier") X(bcast, "MPI_Bcast") X(gather, "MPI_Gather")      \
    X(gatherv, "MPI_Gatherv") X(scatter, "MPI_Scatter")                          \
    X(scatterv, "MPI_Scatterv") X(allgather, "MPI_Allgather")                    \
    X(allgatherv, "MPI_Allgatherv") X(alltoall, "MPI_Alltoall")                  \
    X(alltoallv, "MPI_Alltoallv") X(alltoallw, "MPI_Alltoallw")                  \
    X(reduce, "MPI_Reduce") X(allreduce, "MPI_Allreduce")                        \
    X(reduce_scatter, "MPI_Reduce_scatter")                                      \
    X(reduce_scatter_block, "MPI_Reduce_scatter_block") X(scan, "MPI_Scan")      \
    X(exscan, "MPI_Exscan")
/* Operations a communicator may lack (only topologies use them): picked, never required. */
#define COLL_OPS_OPTIONAL(X)                                                     \
    X(neighbor_allgather, "MPI_Neighbor_allgather")                              \
    X(neighbor_allgatherv, "MPI_Neighbor_allgatherv")                            \
    X(neighbor_alltoall, "MPI_Neighbor_alltoall")                                \
    X(neighbor_alltoallv, "MPI_Neighbor_alltoallv")                              \
    X(neighbor_alltoallw, "MPI_Neighbor_alltoallw")

enum {
#define COLL_IDX(f, name) COLL_I_##f,
    COLL_OPS(COLL_IDX)
    COLL_OPS_OPTIONAL(COLL_IDX)
#undef COLL_IDX
    COLL_NOPS
};

int kumi_coll_select(struct kumi_comm *c)
{
    int n = 0;
    struct kumi_comp_entry **ents = kumi_registry_available("coll", &n);
    struct kumi_coll_fns best;
    int bestprio[COLL_NOPS];
    struct kumi_comp_entry *bestent[COLL_NOPS];

    memset(&best, 0, sizeof best);
    memset(bestent, 0, sizeof bestent);
    for (int i = 0; i < COLL_NOPS; i++) bestprio[i] = 0;

    for (int e = 0; ents && e < n; e++) {
        struct kumi_comp_entry *ent = ents[e];
        if (!ent || !ent->comp) continue;
        const struct kumi_coll_ops *ops = ent->comp->ops;
        if (!ops || !ops->comm_query) continue;
        struct kumi_coll_fns f;
        memset(&f, 0, sizeof f);
        long long p = ent->priority;
        int prio = p > INT32_MAX ? INT32_MAX : p < INT32_MIN ? INT32_MIN : (int)p;
        if (ops->comm_query((MPI_Comm)c, &prio, &f) != KUMI_OK) continue;
        /* Highest priority wins; on a tie the component preferred earlier. */
#define COLL_PICK(fld, name)                                                     \
        if (f.fld && (!best.fld || prio > bestprio[COLL_I_##fld])) {             \
            best.fld = f.fld;                                                    \
            bestprio[COLL_I_##fld] = prio;                                       \
            bestent[COLL_I_##fld] = ent;                                         \
        }
        COLL_OPS(COLL_PICK)
        COLL_OPS_OPTIONAL(COLL_PICK)
#undef COLL_PICK
    }

#define COLL_MISSING(fld, mpiname)                                                  \
    if (!best.fld)                                                               \
        return kumi_error(MPI_ERR_INTERN, "coll: no available coll component provides %s " \
                          "for communicator %s (of size %d)", mpiname,             \
                          c->name[0] ? c->name : "(unnamed)", c->size);
    COLL_OPS(COLL_MISSING)
#undef COLL_MISSING

    for (int i = 0; i < COLL_NOPS; i++)
        if (bestent[i]) bestent[i]->status = KUMI_COMP_SELECTED;
    c->coll = best;
    kumi_log(2, "coll: communicator %s: bcast from %s, allreduce from %s",
             c->name[0] ? c->name : "(unnamed)", bestent[COLL_I_bcast]->name,
             bestent[COLL_I_allreduce]->name);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ checks */
#define FN_OR_FAIL(c, fld, fname)                                                \
    do {                                                                         \
        if (!(c)->coll.fld)                                                      \
            return kumi_error(MPI_ERR_INTERN, fname ": no collective component " \
                              "was selected for this communicator");             \
    } while (0)

/* counts[0..n) must exist and be >= 0. */
static int check_counts(const char *fname, const char *arg, const int *counts, int n)
{
    if (n > 0 && !counts)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fname, arg);
    for (int i = 0; i < n; i++)
        if (counts[i] < 0)
            return kumi_error(MPI_ERR_COUNT, "%s: argument %s[%d] is %d, must not be negative",
                              fname, arg, i, counts[i]);
    return MPI_SUCCESS;
}

static int check_displs(const char *fname, const char *arg, const int *displs, int n)
{
    if (n > 0 && !displs)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fname, arg);
    return MPI_SUCCESS;
}

static int check_types(const char *fname, const char *arg, const MPI_Datatype *types, int n)
{
    if (n > 0 && !types)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fname, arg);
    for (int i = 0; i < n; i++) {
        struct kumi_dt *dt = kumi_dt_get(types[i]);
        if (!dt)
            return kumi_error(MPI_ERR_TYPE, "%s: argument %s[%d] is not a valid datatype",
                              fname, arg, i);
        if (!dt->predefined && !dt->committed)
            return kumi_error(MPI_ERR_TYPE, "%s: argument %s[%d] is not committed", fname, arg, i);
    }
    return MPI_SUCCESS;
}

static int no_in_place(const char *fname, const char *arg, const void *buf, const char *where)
{
    if (buf == MPI_IN_PLACE)
        return kumi_error(MPI_ERR_BUFFER, "%s: MPI_IN_PLACE is not allowed for argument %s%s",
                          fname, arg, where);
    return MPI_SUCCESS;
}

/* sendbuf and recvbuf of a reduction must not be the same memory. */
static int no_alias(const char *fname, const void *sbuf, const void *rbuf, int count,
                    const struct kumi_dt *dt)
{
    if (sbuf && sbuf == rbuf && count > 0 && dt->size > 0)
        return kumi_error(MPI_ERR_BUFFER, "%s: arguments sendbuf and recvbuf are the same buffer "
                          "(use MPI_IN_PLACE)", fname);
    return MPI_SUCCESS;
}

#define TRY(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) return rc_; } while (0)

/* Intercommunicators (MPI 4.1 sec. 6.2.2): a rooted operation takes root =
 * MPI_ROOT at the root, MPI_PROC_NULL in the rest of its group and the
 * root's rank in the other group; arrays describe the remote group
 * (kumi_comm_peer_size); MPI_IN_PLACE is not allowed; scan and exscan are
 * not defined.  The root's buffer is rootbuf, the other group's leafbuf. */
static int inter_rooted(const char *fname, int root, const char *rootarg, const void *rootbuf,
                        const char *leafarg, const void *leafbuf)
{
    if (root == MPI_PROC_NULL) return MPI_SUCCESS;
    if (root == MPI_ROOT) return no_in_place(fname, rootarg, rootbuf, " on an intercommunicator");
    return no_in_place(fname, leafarg, leafbuf, " on an intercommunicator");
}

static int inter_no_in_place(const struct kumi_comm *comm, const char *fname, const void *sendbuf)
{
    return comm->inter ? no_in_place(fname, "sendbuf", sendbuf, " on an intercommunicator") : MPI_SUCCESS;
}

static int inter_undefined(const char *fname)
{
    return kumi_error(MPI_ERR_COMM, "%s: not defined on an intercommunicator (argument comm)", fname);
}

#define C(c) ((MPI_Comm)(c))
#define D(d) ((MPI_Datatype)(d))
#define O(o) ((MPI_Op)(o))

/* ------------------------------------------------------ MPI functions */
int kumi_mpi_barrier(struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, barrier, "MPI_Barrier");
    return comm->coll.barrier(C(comm));
}

int kumi_mpi_bcast(void *buffer, int count, struct kumi_dt *datatype, int root, struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, bcast, "MPI_Bcast");
    TRY(no_in_place("MPI_Bcast", "buffer", buffer, ""));
    return comm->coll.bcast(buffer, count, D(datatype), root, C(comm));
}

int kumi_mpi_gather(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf,
                    int recvcount, struct kumi_dt *recvtype, int root, struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, gather, "MPI_Gather");
    if (comm->inter) {
        TRY(inter_rooted("MPI_Gather", root, "recvbuf", recvbuf, "sendbuf", sendbuf));
    } else if (comm->rank == root) {
        TRY(no_in_place("MPI_Gather", "recvbuf", recvbuf, ""));
    } else {
        TRY(no_in_place("MPI_Gather", "sendbuf", sendbuf, " except at the root"));
    }
    return comm->coll.gather(sendbuf, sendcount, D(sendtype), recvbuf, recvcount, D(recvtype),
                             root, C(comm));
}

int kumi_mpi_gatherv(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], struct kumi_dt *recvtype, int root,
                     struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, gatherv, "MPI_Gatherv");
    if (comm->inter) {
        TRY(inter_rooted("MPI_Gatherv", root, "recvbuf", recvbuf, "sendbuf", sendbuf));
        if (root == MPI_ROOT) {
            TRY(check_counts("MPI_Gatherv", "recvcounts", recvcounts, comm->remote_size));
            TRY(check_displs("MPI_Gatherv", "displs", displs, comm->remote_size));
        }
    } else if (comm->rank == root) {
        TRY(no_in_place("MPI_Gatherv", "recvbuf", recvbuf, ""));
        TRY(check_counts("MPI_Gatherv", "recvcounts", recvcounts, comm->size));
        TRY(check_displs("MPI_Gatherv", "displs", displs, comm->size));
    } else {
        TRY(no_in_place("MPI_Gatherv", "sendbuf", sendbuf, " except at the root"));
    }
    return comm->coll.gatherv(sendbuf, sendcount, D(sendtype), recvbuf, recvcounts, displs,
                              D(recvtype), root, C(comm));
}

int kumi_mpi_scatter(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf,
                     int recvcount, struct kumi_dt *recvtype, int root, struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, scatter, "MPI_Scatter");
    if (comm->inter) {
        TRY(inter_rooted("MPI_Scatter", root, "sendbuf", sendbuf, "recvbuf", recvbuf));
    } else if (comm->rank == root) {
        TRY(no_in_place("MPI_Scatter", "sendbuf", sendbuf, ""));
    } else {
        TRY(no_in_place("MPI_Scatter", "recvbuf", recvbuf, " except at the root"));
    }
    return comm->coll.scatter(sendbuf, sendcount, D(sendtype), recvbuf, recvcount, D(recvtype),
                              root, C(comm));
}

int kumi_mpi_scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                      struct kumi_dt *sendtype, void *recvbuf, int recvcount, struct kumi_dt *recvtype,
                      int root, struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, scatterv, "MPI_Scatterv");
    if (comm->inter) {
        TRY(inter_rooted("MPI_Scatterv", root, "sendbuf", sendbuf, "recvbuf", recvbuf));
        if (root == MPI_ROOT) {
            TRY(check_counts("MPI_Scatterv", "sendcounts", sendcounts, comm->remote_size));
            TRY(check_displs("MPI_Scatterv", "displs", displs, comm->remote_size));
        }
    } else if (comm->rank == root) {
        TRY(no_in_place("MPI_Scatterv", "sendbuf", sendbuf, ""));
        TRY(check_counts("MPI_Scatterv", "sendcounts", sendcounts, comm->size));
        TRY(check_displs("MPI_Scatterv", "displs", displs, comm->size));
    } else {
        TRY(no_in_place("MPI_Scatterv", "recvbuf", recvbuf, " except at the root"));
    }
    return comm->coll.scatterv(sendbuf, sendcounts, displs, D(sendtype), recvbuf, recvcount,
                               D(recvtype), root, C(comm));
}

int kumi_mpi_allgather(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf,
                       int recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, allgather, "MPI_Allgather");
    TRY(no_in_place("MPI_Allgather", "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, "MPI_Allgather", sendbuf));
    return comm->coll.allgather(sendbuf, sendcount, D(sendtype), recvbuf, recvcount, D(recvtype),
                                C(comm));
}

int kumi_mpi_allgatherv(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], struct kumi_dt *recvtype,
                        struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, allgatherv, "MPI_Allgatherv");
    TRY(no_in_place("MPI_Allgatherv", "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, "MPI_Allgatherv", sendbuf));
    TRY(check_counts("MPI_Allgatherv", "recvcounts", recvcounts, kumi_comm_peer_size(comm)));
    TRY(check_displs("MPI_Allgatherv", "displs", displs, kumi_comm_peer_size(comm)));
    return comm->coll.allgatherv(sendbuf, sendcount, D(sendtype), recvbuf, recvcounts, displs,
                                 D(recvtype), C(comm));
}

int kumi_mpi_alltoall(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf,
                      int recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, alltoall, "MPI_Alltoall");
    TRY(no_in_place("MPI_Alltoall", "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, "MPI_Alltoall", sendbuf));
    return comm->coll.alltoall(sendbuf, sendcount, D(sendtype), recvbuf, recvcount, D(recvtype),
                               C(comm));
}

int kumi_mpi_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       struct kumi_dt *sendtype, void *recvbuf, const int recvcounts[],
                       const int rdispls[], struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, alltoallv, "MPI_Alltoallv");
    TRY(no_in_place("MPI_Alltoallv", "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, "MPI_Alltoallv", sendbuf));
    int n = kumi_comm_peer_size(comm);
    if (sendbuf != MPI_IN_PLACE) {
        TRY(check_counts("MPI_Alltoallv", "sendcounts", sendcounts, n));
        TRY(check_displs("MPI_Alltoallv", "sdispls", sdispls, n));
    }
    TRY(check_counts("MPI_Alltoallv", "recvcounts", recvcounts, n));
    TRY(check_displs("MPI_Alltoallv", "rdispls", rdispls, n));
    return comm->coll.alltoallv(sendbuf, sendcounts, sdispls, D(sendtype), recvbuf, recvcounts,
                                rdispls, D(recvtype), C(comm));
}

int kumi_mpi_alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                       const int rdispls[], const MPI_Datatype recvtypes[], struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, alltoallw, "MPI_Alltoallw");
    TRY(no_in_place("MPI_Alltoallw", "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, "MPI_Alltoallw", sendbuf));
    int n = kumi_comm_peer_size(comm);
    if (sendbuf != MPI_IN_PLACE) {
        TRY(check_counts("MPI_Alltoallw", "sendcounts", sendcounts, n));
        TRY(check_displs("MPI_Alltoallw", "sdispls", sdispls, n));
        TRY(check_types("MPI_Alltoallw", "sendtypes", sendtypes, n));
    }
    TRY(check_counts("MPI_Alltoallw", "recvcounts", recvcounts, n));
    TRY(check_displs("MPI_Alltoallw", "rdispls", rdispls, n));
    TRY(check_types("MPI_Alltoallw", "recvtypes", recvtypes, n));
    return comm->coll.alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                rdispls, recvtypes, C(comm));
}

/* A predefined op must be defined for the datatype (the binding checks it
 * too; this keeps the functions safe when called from inside the library). */
static int check_op(const char *fname, struct kumi_op *op, struct kumi_dt *dt)
{
    if (!kumi_op_valid_for(op, dt))
        return kumi_error(MPI_ERR_OP, "%s: argument op is not defined for datatype %s", fname,
                          dt->name ? dt->name : "(derived)");
    return MPI_SUCCESS;
}

int kumi_mpi_reduce(const void *sendbuf, void *recvbuf, int count, struct kumi_dt *datatype,
                    struct kumi_op *op, int root, struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, reduce, "MPI_Reduce");
    TRY(check_op("MPI_Reduce", op, datatype));
    if (comm->inter) {
        TRY(inter_rooted("MPI_Reduce", root, "recvbuf", recvbuf, "sendbuf", sendbuf));
    } else if (comm->rank == root) {
        TRY(no_in_place("MPI_Reduce", "recvbuf", recvbuf, ""));
        TRY(no_alias("MPI_Reduce", sendbuf, recvbuf, count, datatype));
    } else {
        TRY(no_in_place("MPI_Reduce", "sendbuf", sendbuf, " except at the root"));
    }
    return comm->coll.reduce(sendbuf, recvbuf, count, D(datatype), O(op), root, C(comm));
}

int kumi_mpi_allreduce(const void *sendbuf, void *recvbuf, int count, struct kumi_dt *datatype,
                       struct kumi_op *op, struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, allreduce, "MPI_Allreduce");
    TRY(check_op("MPI_Allreduce", op, datatype));
    TRY(no_in_place("MPI_Allreduce", "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, "MPI_Allreduce", sendbuf));
    TRY(no_alias("MPI_Allreduce", sendbuf, recvbuf, count, datatype));
    return comm->coll.allreduce(sendbuf, recvbuf, count, D(datatype), O(op), C(comm));
}

int kumi_mpi_reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                            struct kumi_dt *datatype, struct kumi_op *op, struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, reduce_scatter, "MPI_Reduce_scatter");
    TRY(check_op("MPI_Reduce_scatter", op, datatype));
    TRY(no_in_place("MPI_Reduce_scatter", "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, "MPI_Reduce_scatter", sendbuf));
    TRY(check_counts("MPI_Reduce_scatter", "recvcounts", recvcounts, comm->size));
    long long total = 0;
    for (int i = 0; i < comm->size; i++) total += recvcounts[i];
    if (total > INT32_MAX)
        return kumi_error(MPI_ERR_COUNT, "MPI_Reduce_scatter: the sum of recvcounts (%lld) "
                          "exceeds the largest int", total);
    TRY(no_alias("MPI_Reduce_scatter", sendbuf, recvbuf, (int)total, datatype));
    return comm->coll.reduce_scatter(sendbuf, recvbuf, recvcounts, D(datatype), O(op), C(comm));
}

int kumi_mpi_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                  struct kumi_dt *datatype, struct kumi_op *op, struct kumi_comm *comm)
{
    FN_OR_FAIL(comm, reduce_scatter_block, "MPI_Reduce_scatter_block");
    TRY(check_op("MPI_Reduce_scatter_block", op, datatype));
    TRY(no_in_place("MPI_Reduce_scatter_block", "recvbuf", recvbuf, ""));
    TRY(inter_no_in_place(comm, "MPI_Reduce_scatter_block", sendbuf));
    if ((long long)recvcount * comm->size > INT32_MAX)
        return kumi_error(MPI_ERR_COUNT, "MPI_Reduce_scatter_block: recvcount %d times the "
                          "communicator size %d exceeds the largest int", recvcount, comm->size);
    TRY(no_alias("MPI_Reduce_scatter_block", sendbuf, recvbuf, recvcount, datatype));
    return comm->coll.reduce_scatter_block(sendbuf, recvbuf, recvcount, D(datatype), O(op), C(comm));
}

int kumi_mpi_scan(const void *sendbuf, void *recvbuf, int count, struct kumi_dt *datatype,
                  struct kumi_op *op, struct kumi_comm *comm)
{
    if (comm->inter) return inter_undefined("MPI_Scan");
    FN_OR_FAIL(comm, scan, "MPI_Scan");
    TRY(check_op("MPI_Scan", op, datatype));
    TRY(no_in_place("MPI_Scan", "recvbuf", recvbuf, ""));
    TRY(no_alias("MPI_Scan", sendbuf, recvbuf, count, datatype));
    return comm->coll.scan(sendbuf, recvbuf, count, D(datatype), O(op), C(comm));
}

int kumi_mpi_exscan(const void *sendbuf, void *recvbuf, int count, struct kumi_dt *datatype,
                    struct kumi_op *op, struct kumi_comm *comm)
{
    if (comm->inter) return inter_undefined("MPI_Exscan");
    FN_OR_FAIL(comm, exscan, "MPI_Exscan");
    TRY(check_op("MPI_Exscan", op, datatype));
    TRY(no_in_place("MPI_Exscan", "recvbuf", recvbuf, ""));
    TRY(no_alias("MPI_Exscan", sendbuf, recvbuf, count, datatype));
    return comm->coll.exscan(sendbuf, recvbuf, count, D(datatype), O(op), C(comm));
}
