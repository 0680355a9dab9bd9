/* The neighborhood collectives (MPI_Neighbor_*, MPI_Ineighbor_*,
 * MPI_Neighbor_*_init) on communicators with a topology: checked here, run
 * by the communicator's coll table (blocking) or as a schedule its
 * component builds.  The neighbourhood itself comes from core/topo.c. */
#include "mpi/mpi_front.h"
#include "sched/sched.h"

#define TRY(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) return rc_; } while (0)

static int need_ptr(const char *fn, const char *arg, const void *p)
{
    return p ? MPI_SUCCESS : kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fn, arg);
}

/* ================================================ neighborhood collectives */
/* The topology, its degrees, and the function of the coll table. */
static int nb_begin(const char *fn, struct kumi_comm *c, const void *fnptr, int *nin, int *nout)
{
    TRY(kumi_topo_degrees(fn, c, nin, nout));
    if (!fnptr)
        return kumi_error(MPI_ERR_INTERN, "%s: no collective component provides it for this "
                          "communicator", fn);
    return MPI_SUCCESS;
}

static int nb_sendbuf(const char *fn, const void *buf, int any)
{
    if (buf == MPI_IN_PLACE)
        return kumi_error(MPI_ERR_BUFFER, "%s: MPI_IN_PLACE is not allowed for argument sendbuf", fn);
    if (!buf && any)
        return kumi_error(MPI_ERR_BUFFER, "%s: argument sendbuf is NULL", fn);
    return MPI_SUCCESS;
}

static int nb_recvbuf(const char *fn, const void *buf, int any)
{
    if (buf == MPI_IN_PLACE)
        return kumi_error(MPI_ERR_BUFFER, "%s: MPI_IN_PLACE is not allowed for argument recvbuf", fn);
    if (!buf && any)
        return kumi_error(MPI_ERR_BUFFER, "%s: argument recvbuf is NULL", fn);
    return MPI_SUCCESS;
}

/* counts[0..n) present and >= 0; *any: some count > 0. */
static int nb_counts(const char *fn, const char *arg, const MPI_Count *counts, int n, int *any)
{
    *any = 0;
    if (n > 0) TRY(need_ptr(fn, arg, counts));
    for (int i = 0; i < n; i++) {
        if (counts[i] < 0)
            return kumi_error(MPI_ERR_COUNT, "%s: argument %s[%d] is %lld, must not be negative", fn,
                              arg, i, (long long)counts[i]);
        if (counts[i] > 0) *any = 1;
    }
    return MPI_SUCCESS;
}

static int nb_types(const char *fn, const char *arg, const MPI_Datatype *types, int n)
{
    if (n > 0) TRY(need_ptr(fn, arg, types));
    for (int i = 0; i < n; i++) {
        struct kumi_dt *dt = kumi_dt_get(types[i]);
        if (!dt)
            return kumi_error(MPI_ERR_TYPE, "%s: argument %s[%d] is not a valid datatype", fn, arg, i);
        if (!dt->predefined && !dt->committed)
            return kumi_error(MPI_ERR_TYPE, "%s: argument %s[%d] is not committed", fn, arg, i);
    }
    return MPI_SUCCESS;
}

#define C(c) ((MPI_Comm)(c))
#define D(d) ((MPI_Datatype)(d))

/* How a neighborhood collective runs: now (form NULL: the blocking call), or
 * as a schedule of the coll table's i-builder, started at once
 * (MPI_Ineighbor_*) or kept for MPI_Start (MPI_Neighbor_*_init). */
struct nb_form {
    bool persistent;
    MPI_Info info;
    MPI_Request *request;
};

#define NB_RUN(fld, ...)                                                                \
    do {                                                                                \
        if (!form) return comm->coll.fld(__VA_ARGS__);                                  \
        struct kumi_sched *s_;                                                          \
        TRY(kumi_sched_begin(comm, fn, form->persistent, form->info, form->request, &s_)); \
        return kumi_sched_issue(s_, comm->coll.i##fld(__VA_ARGS__, s_), form->persistent, fn, \
                                form->request);                                         \
    } while (0)

static int nb_allgather(const char *fn, const struct nb_form *form, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype,
                        void *recvbuf, MPI_Count recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    int nin = 0, nout = 0;
    TRY(nb_begin(fn, comm, form ? (const void *)comm->coll.ineighbor_allgather
                             : (const void *)comm->coll.neighbor_allgather, &nin, &nout));
    TRY(nb_sendbuf(fn, sendbuf, nout > 0 && sendcount > 0 && sendtype->size > 0));
    TRY(nb_recvbuf(fn, recvbuf, nin > 0 && recvcount > 0 && recvtype->size > 0));
    NB_RUN(neighbor_allgather, sendbuf, sendcount, D(sendtype), recvbuf, recvcount,
                                         D(recvtype), C(comm));
}

static int nb_allgatherv(const char *fn, const struct nb_form *form, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype,
                         void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                         struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    int nin = 0, nout = 0, any;
    TRY(nb_begin(fn, comm, form ? (const void *)comm->coll.ineighbor_allgatherv
                             : (const void *)comm->coll.neighbor_allgatherv, &nin, &nout));
    TRY(nb_sendbuf(fn, sendbuf, nout > 0 && sendcount > 0 && sendtype->size > 0));
    TRY(nb_counts(fn, "recvcounts", recvcounts, nin, &any));
    if (nin > 0) TRY(need_ptr(fn, "displs", displs));
    TRY(nb_recvbuf(fn, recvbuf, any && recvtype->size > 0));
    NB_RUN(neighbor_allgatherv, sendbuf, sendcount, D(sendtype), recvbuf, recvcounts,
                                          displs, D(recvtype), C(comm));
}

static int nb_alltoall(const char *fn, const struct nb_form *form, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype,
                       void *recvbuf, MPI_Count recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    int nin = 0, nout = 0;
    TRY(nb_begin(fn, comm, form ? (const void *)comm->coll.ineighbor_alltoall
                             : (const void *)comm->coll.neighbor_alltoall, &nin, &nout));
    TRY(nb_sendbuf(fn, sendbuf, nout > 0 && sendcount > 0 && sendtype->size > 0));
    TRY(nb_recvbuf(fn, recvbuf, nin > 0 && recvcount > 0 && recvtype->size > 0));
    NB_RUN(neighbor_alltoall, sendbuf, sendcount, D(sendtype), recvbuf, recvcount,
                                        D(recvtype), C(comm));
}

static int nb_alltoallv(const char *fn, const struct nb_form *form, const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                        struct kumi_dt *sendtype, void *recvbuf, const MPI_Count recvcounts[],
                        const MPI_Aint rdispls[], struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    int nin = 0, nout = 0, sany, rany;
    TRY(nb_begin(fn, comm, form ? (const void *)comm->coll.ineighbor_alltoallv
                             : (const void *)comm->coll.neighbor_alltoallv, &nin, &nout));
    TRY(nb_counts(fn, "sendcounts", sendcounts, nout, &sany));
    if (nout > 0) TRY(need_ptr(fn, "sdispls", sdispls));
    TRY(nb_counts(fn, "recvcounts", recvcounts, nin, &rany));
    if (nin > 0) TRY(need_ptr(fn, "rdispls", rdispls));
    TRY(nb_sendbuf(fn, sendbuf, sany && sendtype->size > 0));
    TRY(nb_recvbuf(fn, recvbuf, rany && recvtype->size > 0));
    NB_RUN(neighbor_alltoallv, sendbuf, sendcounts, sdispls, D(sendtype), recvbuf,
                                         recvcounts, rdispls, D(recvtype), C(comm));
}

static int nb_alltoallw(const char *fn, const struct nb_form *form, const void *sendbuf, const MPI_Count sendcounts[],
                        const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                        const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                        const MPI_Datatype recvtypes[], struct kumi_comm *comm)
{
    int nin = 0, nout = 0, sany, rany;
    TRY(nb_begin(fn, comm, form ? (const void *)comm->coll.ineighbor_alltoallw
                             : (const void *)comm->coll.neighbor_alltoallw, &nin, &nout));
    TRY(nb_counts(fn, "sendcounts", sendcounts, nout, &sany));
    if (nout > 0) TRY(need_ptr(fn, "sdispls", sdispls));
    TRY(nb_types(fn, "sendtypes", sendtypes, nout));
    TRY(nb_counts(fn, "recvcounts", recvcounts, nin, &rany));
    if (nin > 0) TRY(need_ptr(fn, "rdispls", rdispls));
    TRY(nb_types(fn, "recvtypes", recvtypes, nin));
    /* with MPI_BOTTOM and absolute displacements a NULL buffer is legitimate */
    TRY(nb_sendbuf(fn, sendbuf, 0));
    TRY(nb_recvbuf(fn, recvbuf, 0));
    (void)sany;
    (void)rany;
    NB_RUN(neighbor_alltoallw, sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                         recvcounts, rdispls, recvtypes, C(comm));
}

/* The int arrays of the plain forms widened for the coll contract
 * (kumi_widen_*: on the stack for small neighbourhoods), then as above. */
static int nbw_allgatherv(const char *fn, const struct nb_form *form, const void *sendbuf, MPI_Count sendcount,
                          struct kumi_dt *sendtype, void *recvbuf, const int recvcounts[], const int displs[],
                          struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    int nin = 0, nout = 0;
    struct kumi_widen w;
    TRY(kumi_topo_degrees(fn, comm, &nin, &nout));
    TRY(kumi_widen_begin(&w, fn, nin, 1, 1));
    int rc = nb_allgatherv(fn, form, sendbuf, sendcount, sendtype, recvbuf,
                           kumi_widen_counts(&w, recvcounts, nin), kumi_widen_displs(&w, displs, nin),
                           recvtype, comm);
    kumi_widen_end(&w);
    return rc;
}

static int nbw_alltoallv(const char *fn, const struct nb_form *form, const void *sendbuf, const int sendcounts[],
                         const int sdispls[], struct kumi_dt *sendtype, void *recvbuf, const int recvcounts[],
                         const int rdispls[], struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    int nin = 0, nout = 0;
    struct kumi_widen w;
    TRY(kumi_topo_degrees(fn, comm, &nin, &nout));
    TRY(kumi_widen_begin(&w, fn, nin > nout ? nin : nout, 2, 2));
    const MPI_Count *sc = kumi_widen_counts(&w, sendcounts, nout);
    const MPI_Aint *sd = kumi_widen_displs(&w, sdispls, nout);
    const MPI_Count *rc_ = kumi_widen_counts(&w, recvcounts, nin);
    const MPI_Aint *rd = kumi_widen_displs(&w, rdispls, nin);
    int rc = nb_alltoallv(fn, form, sendbuf, sc, sd, sendtype, recvbuf, rc_, rd, recvtype, comm);
    kumi_widen_end(&w);
    return rc;
}

static int nbw_alltoallw(const char *fn, const struct nb_form *form, const void *sendbuf, const int sendcounts[],
                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                         const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                         struct kumi_comm *comm)
{
    int nin = 0, nout = 0;
    struct kumi_widen w;
    TRY(kumi_topo_degrees(fn, comm, &nin, &nout));
    TRY(kumi_widen_begin(&w, fn, nin > nout ? nin : nout, 2, 0));
    const MPI_Count *sc = kumi_widen_counts(&w, sendcounts, nout);
    const MPI_Count *rc_ = kumi_widen_counts(&w, recvcounts, nin);
    int rc = nb_alltoallw(fn, form, sendbuf, sc, sdispls, sendtypes, recvbuf, rc_, rdispls, recvtypes, comm);
    kumi_widen_end(&w);
    return rc;
}

int kumi_mpi_neighbor_allgather(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf, int recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    return nb_allgather("MPI_Neighbor_allgather", NULL, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                        recvtype, comm);
}

int kumi_mpi_neighbor_allgatherv(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf, const int recvcounts[], const int displs[], struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    return nbw_allgatherv("MPI_Neighbor_allgatherv", NULL, sendbuf, sendcount, sendtype, recvbuf,
                         recvcounts, displs, recvtype, comm);
}

int kumi_mpi_neighbor_alltoall(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf, int recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    return nb_alltoall("MPI_Neighbor_alltoall", NULL, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                       recvtype, comm);
}

int kumi_mpi_neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], struct kumi_dt *sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    return nbw_alltoallv("MPI_Neighbor_alltoallv", NULL, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                        recvcounts, rdispls, recvtype, comm);
}

int kumi_mpi_neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], struct kumi_comm *comm)
{
    return nbw_alltoallw("MPI_Neighbor_alltoallw", NULL, sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                        recvcounts, rdispls, recvtypes, comm);
}

/* ---- large-count forms: the coll contract takes MPI_Count / MPI_Aint
 * arrays, so they go to the component as they are. */
int kumi_mpi_neighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype, void *recvbuf, MPI_Count recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    return nb_allgather("MPI_Neighbor_allgather_c", NULL, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                        recvtype, comm);
}

int kumi_mpi_neighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype, void *recvbuf, MPI_Count recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    return nb_alltoall("MPI_Neighbor_alltoall_c", NULL, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                       recvtype, comm);
}

int kumi_mpi_neighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[], struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    return nb_allgatherv("MPI_Neighbor_allgatherv_c", NULL, sendbuf, sendcount, sendtype, recvbuf,
                         recvcounts, displs, recvtype, comm);
}

int kumi_mpi_neighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], struct kumi_dt *sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    return nb_alltoallv("MPI_Neighbor_alltoallv_c", NULL, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                        recvcounts, rdispls, recvtype, comm);
}

int kumi_mpi_neighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], struct kumi_comm *comm)
{
    return nb_alltoallw("MPI_Neighbor_alltoallw_c", NULL, sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                        recvcounts, rdispls, recvtypes, comm);
}

/* ---- non-blocking (MPI_Ineighbor_*) and persistent (MPI_Neighbor_*_init) forms */
int kumi_mpi_ineighbor_allgather(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf, int recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm, MPI_Request *request)
{
    struct nb_form f = { false, MPI_INFO_NULL, request };
    return nb_allgather("MPI_Ineighbor_allgather", &f, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int kumi_mpi_neighbor_allgather_init(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf, int recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm, MPI_Info info, MPI_Request *request)
{
    struct nb_form f = { true, info, request };
    return nb_allgather("MPI_Neighbor_allgather_init", &f, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int kumi_mpi_ineighbor_allgatherv(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf, const int recvcounts[], const int displs[], struct kumi_dt *recvtype, struct kumi_comm *comm, MPI_Request *request)
{
    struct nb_form f = { false, MPI_INFO_NULL, request };
    return nbw_allgatherv("MPI_Ineighbor_allgatherv", &f, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int kumi_mpi_neighbor_allgatherv_init(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf, const int recvcounts[], const int displs[], struct kumi_dt *recvtype, struct kumi_comm *comm, MPI_Info info, MPI_Request *request)
{
    struct nb_form f = { true, info, request };
    return nbw_allgatherv("MPI_Neighbor_allgatherv_init", &f, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int kumi_mpi_ineighbor_alltoall(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf, int recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm, MPI_Request *request)
{
    struct nb_form f = { false, MPI_INFO_NULL, request };
    return nb_alltoall("MPI_Ineighbor_alltoall", &f, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int kumi_mpi_neighbor_alltoall_init(const void *sendbuf, int sendcount, struct kumi_dt *sendtype, void *recvbuf, int recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm, MPI_Info info, MPI_Request *request)
{
    struct nb_form f = { true, info, request };
    return nb_alltoall("MPI_Neighbor_alltoall_init", &f, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int kumi_mpi_ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], struct kumi_dt *sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], struct kumi_dt *recvtype, struct kumi_comm *comm, MPI_Request *request)
{
    struct nb_form f = { false, MPI_INFO_NULL, request };
    return nbw_alltoallv("MPI_Ineighbor_alltoallv", &f, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

int kumi_mpi_neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[], struct kumi_dt *sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], struct kumi_dt *recvtype, struct kumi_comm *comm, MPI_Info info, MPI_Request *request)
{
    struct nb_form f = { true, info, request };
    return nbw_alltoallv("MPI_Neighbor_alltoallv_init", &f, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

int kumi_mpi_ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], struct kumi_comm *comm, MPI_Request *request)
{
    struct nb_form f = { false, MPI_INFO_NULL, request };
    return nbw_alltoallw("MPI_Ineighbor_alltoallw", &f, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm);
}

int kumi_mpi_neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], struct kumi_comm *comm, MPI_Info info, MPI_Request *request)
{
    struct nb_form f = { true, info, request };
    return nbw_alltoallw("MPI_Neighbor_alltoallw_init", &f, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm);
}
