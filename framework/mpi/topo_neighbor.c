/* The neighborhood collectives (MPI_Neighbor_*, MPI_Ineighbor_*,
 * MPI_Neighbor_*_init, and the _c form of each) on communicators with a
 * topology: checked here, run by the communicator's coll table (blocking) or
 * as a schedule its component builds.  Each operation is one function of
 * the family (kumi_coll_neighbor_*); the generated forwarders of
 * data/kumi-bindings.json call it with the form and, for the v and w
 * operations, the count and displacement arrays as the caller gave them
 * (int, or MPI_Count / MPI_Aint with large), widened here for the coll
 * contract.  The neighbourhood itself comes from core/topo.c. */
#include "mpi/mpi_front.h"
#include "mpi/coll_accel.h"
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

/* How a neighborhood collective runs: now (KUMI_FORM_BLOCKING), or as a
 * schedule of the coll table's i-builder, started at once (KUMI_FORM_NB,
 * MPI_Ineighbor_*) or kept for MPI_Start (KUMI_FORM_INIT,
 * MPI_Neighbor_*_init). */
struct nb_form {
    enum kumi_form mode;
    MPI_Info info;
    MPI_Request *request;
};

#define NB_RUN(fld, ...)                                                                \
    do {                                                                                \
        int rc_;                                                                        \
        if (g.rc) return stage_failed(&g);                                              \
        if (form->mode == KUMI_FORM_BLOCKING) {                                         \
            KUMI_COLL_BLOCKING(rc_, comm->coll.fld(__VA_ARGS__));                       \
        } else {                                                                        \
            bool persistent_ = form->mode == KUMI_FORM_INIT;                            \
            struct kumi_sched *s_;                                                      \
            rc_ = kumi_sched_begin(comm, fn, persistent_, form->info, form->request, &s_); \
            if (rc_ == MPI_SUCCESS)                                                     \
                rc_ = kumi_sched_issue(s_, comm->coll.i##fld(__VA_ARGS__, s_), persistent_, fn, \
                                       form->request);                                  \
        }                                                                               \
        return kumi_cstage_done(&g, rc_, form->request);                                \
    } while (0)

/* Device buffers (coll_accel.c): staged over the neighbourhood's blocks. */
#define NB_STAGE(ssp, rsp)                                                              \
    struct kumi_cstager g = KUMI_CSTAGER(fn, form->mode);                               \
    if (__builtin_expect(kumi_accel_on, 0)) kumi_cstage_all(&g, &sendbuf, ssp, &recvbuf, rsp, true)
static int stage_failed(struct kumi_cstager *g)
{
    return kumi_cstage_finish(g, g->rc, NULL);
}

#define NB_FN(fld) (form->mode != KUMI_FORM_BLOCKING ? (const void *)comm->coll.i##fld \
                                                     : (const void *)comm->coll.fld)

static int nb_allgather(const char *fn, const struct nb_form *form, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype,
                        void *recvbuf, MPI_Count recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    int nin = 0, nout = 0;
    TRY(nb_begin(fn, comm, NB_FN(neighbor_allgather), &nin, &nout));
    TRY(nb_sendbuf(fn, sendbuf, nout > 0 && sendcount > 0 && sendtype->size > 0));
    TRY(nb_recvbuf(fn, recvbuf, nin > 0 && recvcount > 0 && recvtype->size > 0));
    NB_STAGE(kumi_cspan_n(sendcount, sendtype), kumi_cspan_n(nin * recvcount, recvtype));
    NB_RUN(neighbor_allgather, sendbuf, sendcount, D(sendtype), recvbuf, recvcount,
                                         D(recvtype), C(comm));
}

static int nb_allgatherv(const char *fn, const struct nb_form *form, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype,
                         void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                         struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    int nin = 0, nout = 0, any;
    TRY(nb_begin(fn, comm, NB_FN(neighbor_allgatherv), &nin, &nout));
    TRY(nb_sendbuf(fn, sendbuf, nout > 0 && sendcount > 0 && sendtype->size > 0));
    TRY(nb_counts(fn, "recvcounts", recvcounts, nin, &any));
    if (nin > 0) TRY(need_ptr(fn, "displs", displs));
    TRY(nb_recvbuf(fn, recvbuf, any && recvtype->size > 0));
    NB_STAGE(kumi_cspan_n(sendcount, sendtype), kumi_cspan_v(nin, recvcounts, displs, recvtype));
    NB_RUN(neighbor_allgatherv, sendbuf, sendcount, D(sendtype), recvbuf, recvcounts,
                                          displs, D(recvtype), C(comm));
}

static int nb_alltoall(const char *fn, const struct nb_form *form, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype,
                       void *recvbuf, MPI_Count recvcount, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    int nin = 0, nout = 0;
    TRY(nb_begin(fn, comm, NB_FN(neighbor_alltoall), &nin, &nout));
    TRY(nb_sendbuf(fn, sendbuf, nout > 0 && sendcount > 0 && sendtype->size > 0));
    TRY(nb_recvbuf(fn, recvbuf, nin > 0 && recvcount > 0 && recvtype->size > 0));
    NB_STAGE(kumi_cspan_n(nout * sendcount, sendtype), kumi_cspan_n(nin * recvcount, recvtype));
    NB_RUN(neighbor_alltoall, sendbuf, sendcount, D(sendtype), recvbuf, recvcount,
                                        D(recvtype), C(comm));
}

static int nb_alltoallv(const char *fn, const struct nb_form *form, const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                        struct kumi_dt *sendtype, void *recvbuf, const MPI_Count recvcounts[],
                        const MPI_Aint rdispls[], struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    int nin = 0, nout = 0, sany, rany;
    TRY(nb_begin(fn, comm, NB_FN(neighbor_alltoallv), &nin, &nout));
    TRY(nb_counts(fn, "sendcounts", sendcounts, nout, &sany));
    if (nout > 0) TRY(need_ptr(fn, "sdispls", sdispls));
    TRY(nb_counts(fn, "recvcounts", recvcounts, nin, &rany));
    if (nin > 0) TRY(need_ptr(fn, "rdispls", rdispls));
    TRY(nb_sendbuf(fn, sendbuf, sany && sendtype->size > 0));
    TRY(nb_recvbuf(fn, recvbuf, rany && recvtype->size > 0));
    NB_STAGE(kumi_cspan_v(nout, sendcounts, sdispls, sendtype), kumi_cspan_v(nin, recvcounts, rdispls, recvtype));
    NB_RUN(neighbor_alltoallv, sendbuf, sendcounts, sdispls, D(sendtype), recvbuf,
                                         recvcounts, rdispls, D(recvtype), C(comm));
}

static int nb_alltoallw(const char *fn, const struct nb_form *form, const void *sendbuf, const MPI_Count sendcounts[],
                        const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                        const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                        const MPI_Datatype recvtypes[], struct kumi_comm *comm)
{
    int nin = 0, nout = 0, sany, rany;
    TRY(nb_begin(fn, comm, NB_FN(neighbor_alltoallw), &nin, &nout));
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
    NB_STAGE(kumi_cspan_w(nout, sendcounts, sdispls, sendtypes), kumi_cspan_w(nin, recvcounts, rdispls, recvtypes));
    NB_RUN(neighbor_alltoallw, sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                         recvcounts, rdispls, recvtypes, C(comm));
}

/* ------------------------------------------ the families (kumi_impl.h) */
/* The arrays of the _c forms (large) go to the coll contract as they are;
 * the int arrays of the plain forms are widened (kumi_widen_*: on the stack
 * for small neighbourhoods). */
static const MPI_Count *wide_counts(struct kumi_widen *w, const void *in, bool large, int n)
{
    return large ? (const MPI_Count *)in : kumi_widen_counts(w, in, n);
}

static const MPI_Aint *wide_displs(struct kumi_widen *w, const void *in, bool large, int n)
{
    return large ? (const MPI_Aint *)in : kumi_widen_displs(w, in, n);
}

int kumi_coll_neighbor_allgather(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request,
                                 const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype,
                                 void *recvbuf, MPI_Count recvcount, struct kumi_dt *recvtype,
                                 struct kumi_comm *comm)
{
    struct nb_form f = { mode, info, request };
    return nb_allgather(fn, &f, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int kumi_coll_neighbor_allgatherv(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request,
                                  bool large, const void *sendbuf, MPI_Count sendcount,
                                  struct kumi_dt *sendtype, void *recvbuf, const void *recvcounts,
                                  const void *displs, struct kumi_dt *recvtype, struct kumi_comm *comm)
{
    struct nb_form f = { mode, info, request };
    int nin = 0, nout = 0;
    struct kumi_widen w;
    TRY(kumi_topo_degrees(fn, comm, &nin, &nout));
    TRY(kumi_widen_begin(&w, fn, large ? 0 : nin, 1, 1));
    int rc = nb_allgatherv(fn, &f, sendbuf, sendcount, sendtype, recvbuf,
                           wide_counts(&w, recvcounts, large, nin), wide_displs(&w, displs, large, nin),
                           recvtype, comm);
    kumi_widen_end(&w);
    return rc;
}

int kumi_coll_neighbor_alltoall(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request,
                                const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype,
                                void *recvbuf, MPI_Count recvcount, struct kumi_dt *recvtype,
                                struct kumi_comm *comm)
{
    struct nb_form f = { mode, info, request };
    return nb_alltoall(fn, &f, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int kumi_coll_neighbor_alltoallv(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request,
                                 bool large, const void *sendbuf, const void *sendcounts,
                                 const void *sdispls, struct kumi_dt *sendtype, void *recvbuf,
                                 const void *recvcounts, const void *rdispls, struct kumi_dt *recvtype,
                                 struct kumi_comm *comm)
{
    struct nb_form f = { mode, info, request };
    int nin = 0, nout = 0;
    struct kumi_widen w;
    TRY(kumi_topo_degrees(fn, comm, &nin, &nout));
    TRY(kumi_widen_begin(&w, fn, large ? 0 : (nin > nout ? nin : nout), 2, 2));
    const MPI_Count *sc = wide_counts(&w, sendcounts, large, nout);
    const MPI_Aint *sd = wide_displs(&w, sdispls, large, nout);
    const MPI_Count *rc_ = wide_counts(&w, recvcounts, large, nin);
    const MPI_Aint *rd = wide_displs(&w, rdispls, large, nin);
    int rc = nb_alltoallv(fn, &f, sendbuf, sc, sd, sendtype, recvbuf, rc_, rd, recvtype, comm);
    kumi_widen_end(&w);
    return rc;
}

int kumi_coll_neighbor_alltoallw(const char *fn, enum kumi_form mode, MPI_Info info, MPI_Request *request,
                                 bool large, const void *sendbuf, const void *sendcounts,
                                 const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                                 const void *recvcounts, const MPI_Aint rdispls[],
                                 const MPI_Datatype recvtypes[], struct kumi_comm *comm)
{
    struct nb_form f = { mode, info, request };
    int nin = 0, nout = 0;
    struct kumi_widen w;
    TRY(kumi_topo_degrees(fn, comm, &nin, &nout));
    TRY(kumi_widen_begin(&w, fn, large ? 0 : (nin > nout ? nin : nout), 2, 0));
    const MPI_Count *sc = wide_counts(&w, sendcounts, large, nout);
    const MPI_Count *rc_ = wide_counts(&w, recvcounts, large, nin);
    int rc = nb_alltoallw(fn, &f, sendbuf, sc, sdispls, sendtypes, recvbuf, rc_, rdispls, recvtypes, comm);
    kumi_widen_end(&w);
    return rc;
}
