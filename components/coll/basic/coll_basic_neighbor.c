/* coll/basic: the blocking neighborhood collectives (Cartesian, graph and
 * distributed-graph communicators).
 *
 * One algorithm for all five: post a receive from every source (block i of
 * the receive side), a send to every destination (block j of the send side),
 * wait for all.  The neighbourhood and the tag offsets that pair a send with
 * its receive come from the core (kumi_topo_neighbors); MPI_PROC_NULL
 * neighbours (Cartesian borders) are skipped, their receive blocks untouched. */
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/coll.h>

#include <stdlib.h>

/* Tag bases, one per operation, above the other coll/basic tags; the core's
 * per-edge offsets (< 2^20) are added. */
enum {
    TAG_NB_ALLGATHER = 1 << 20, TAG_NB_ALLGATHERV = 2 << 20, TAG_NB_ALLTOALL = 3 << 20,
    TAG_NB_ALLTOALLV = 4 << 20, TAG_NB_ALLTOALLW = 5 << 20
};

/* One block of a send or receive side. */
struct coll_basic_nb_blk {
    char *buf;
    size_t count;
    MPI_Datatype dt;
};

struct coll_basic_nb {
    int nin, nout;
    const int *src, *rtag, *dst, *stag;
    struct coll_basic_nb_blk *r, *s;    /* nin + nout blocks, one allocation */
};

static int coll_basic_nb_nomem(const char *what)
{
    return kumi_error(MPI_ERR_NO_MEM, "coll/basic: %s: out of memory", what);
}

static int coll_basic_nb_begin(MPI_Comm comm, struct coll_basic_nb *nb, const char *what)
{
    int rc = kumi_topo_neighbors(comm, &nb->nin, &nb->src, &nb->rtag, &nb->nout, &nb->dst, &nb->stag);
    if (rc != MPI_SUCCESS) return rc;
    size_t n = (size_t)nb->nin + (size_t)nb->nout;
    nb->r = malloc(sizeof *nb->r * (n ? n : 1));
    if (!nb->r) return coll_basic_nb_nomem(what);
    nb->s = nb->r + nb->nin;
    return MPI_SUCCESS;
}

/* Post every receive, then every send; wait for all of them. */
static int coll_basic_nb_run(MPI_Comm comm, struct coll_basic_nb *nb, int tag, const char *what)
{
    int n = 0, rc = MPI_SUCCESS;
    kumi_coll_req *reqs = malloc(sizeof *reqs * (size_t)(nb->nin + nb->nout + 1));
    if (!reqs) {
        free(nb->r);
        return coll_basic_nb_nomem(what);
    }
    for (int i = 0; i < nb->nin && rc == MPI_SUCCESS; i++) {
        if (nb->src[i] == MPI_PROC_NULL) continue;
        rc = kumi_coll_irecv(nb->r[i].buf, nb->r[i].count, nb->r[i].dt, nb->src[i],
                             tag + (nb->rtag ? nb->rtag[i] : 0), comm, &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    for (int j = 0; j < nb->nout && rc == MPI_SUCCESS; j++) {
        if (nb->dst[j] == MPI_PROC_NULL) continue;
        rc = kumi_coll_isend(nb->s[j].buf, nb->s[j].count, nb->s[j].dt, nb->dst[j],
                             tag + (nb->stag ? nb->stag[j] : 0), comm, &reqs[n]);
        if (rc == MPI_SUCCESS) n++;
    }
    int rc2 = n ? kumi_coll_waitall(n, reqs) : MPI_SUCCESS;
    free(reqs);
    free(nb->r);
    return rc != MPI_SUCCESS ? rc : rc2;
}

static MPI_Aint coll_basic_nb_ext(MPI_Datatype dt)
{
    MPI_Aint lb, ext;
    kumi_dt_extent(dt, &lb, &ext);
    return ext;
}

static int coll_basic_neighbor_allgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                         MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm)
{
    struct coll_basic_nb nb;
    int rc = coll_basic_nb_begin(comm, &nb, "neighbor_allgather");
    if (rc != MPI_SUCCESS) return rc;
    MPI_Aint rext = coll_basic_nb_ext(rdt);
    for (int i = 0; i < nb.nin; i++)
        nb.r[i] = (struct coll_basic_nb_blk){ (char *)rbuf + (MPI_Aint)i * rcount * rext,
                                              (size_t)rcount, rdt };
    for (int j = 0; j < nb.nout; j++)
        nb.s[j] = (struct coll_basic_nb_blk){ (char *)sbuf, (size_t)scount, sdt };
    return coll_basic_nb_run(comm, &nb, TAG_NB_ALLGATHER, "neighbor_allgather");
}

static int coll_basic_neighbor_allgatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                          const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                                          MPI_Comm comm)
{
    struct coll_basic_nb nb;
    int rc = coll_basic_nb_begin(comm, &nb, "neighbor_allgatherv");
    if (rc != MPI_SUCCESS) return rc;
    MPI_Aint rext = coll_basic_nb_ext(rdt);
    for (int i = 0; i < nb.nin; i++)
        nb.r[i] = (struct coll_basic_nb_blk){ (char *)rbuf + (MPI_Aint)displs[i] * rext,
                                              (size_t)rcounts[i], rdt };
    for (int j = 0; j < nb.nout; j++)
        nb.s[j] = (struct coll_basic_nb_blk){ (char *)sbuf, (size_t)scount, sdt };
    return coll_basic_nb_run(comm, &nb, TAG_NB_ALLGATHERV, "neighbor_allgatherv");
}

static int coll_basic_neighbor_alltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                        MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm)
{
    struct coll_basic_nb nb;
    int rc = coll_basic_nb_begin(comm, &nb, "neighbor_alltoall");
    if (rc != MPI_SUCCESS) return rc;
    MPI_Aint rext = coll_basic_nb_ext(rdt), sext = coll_basic_nb_ext(sdt);
    for (int i = 0; i < nb.nin; i++)
        nb.r[i] = (struct coll_basic_nb_blk){ (char *)rbuf + (MPI_Aint)i * rcount * rext,
                                              (size_t)rcount, rdt };
    for (int j = 0; j < nb.nout; j++)
        nb.s[j] = (struct coll_basic_nb_blk){ (char *)sbuf + (MPI_Aint)j * scount * sext,
                                              (size_t)scount, sdt };
    return coll_basic_nb_run(comm, &nb, TAG_NB_ALLTOALL, "neighbor_alltoall");
}

static int coll_basic_neighbor_alltoallv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                         MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                                         const MPI_Aint rdispls[], MPI_Datatype rdt, MPI_Comm comm)
{
    struct coll_basic_nb nb;
    int rc = coll_basic_nb_begin(comm, &nb, "neighbor_alltoallv");
    if (rc != MPI_SUCCESS) return rc;
    MPI_Aint rext = coll_basic_nb_ext(rdt), sext = coll_basic_nb_ext(sdt);
    for (int i = 0; i < nb.nin; i++)
        nb.r[i] = (struct coll_basic_nb_blk){ (char *)rbuf + (MPI_Aint)rdispls[i] * rext,
                                              (size_t)rcounts[i], rdt };
    for (int j = 0; j < nb.nout; j++)
        nb.s[j] = (struct coll_basic_nb_blk){ (char *)sbuf + (MPI_Aint)sdispls[j] * sext,
                                              (size_t)scounts[j], sdt };
    return coll_basic_nb_run(comm, &nb, TAG_NB_ALLTOALLV, "neighbor_alltoallv");
}

static int coll_basic_neighbor_alltoallw(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                         const MPI_Datatype sdts[], void *rbuf, const MPI_Count rcounts[],
                                         const MPI_Aint rdispls[], const MPI_Datatype rdts[],
                                         MPI_Comm comm)
{
    struct coll_basic_nb nb;
    int rc = coll_basic_nb_begin(comm, &nb, "neighbor_alltoallw");
    if (rc != MPI_SUCCESS) return rc;
    for (int i = 0; i < nb.nin; i++)      /* displacements in bytes */
        nb.r[i] = (struct coll_basic_nb_blk){ (char *)rbuf + rdispls[i], (size_t)rcounts[i], rdts[i] };
    for (int j = 0; j < nb.nout; j++)
        nb.s[j] = (struct coll_basic_nb_blk){ (char *)sbuf + sdispls[j], (size_t)scounts[j], sdts[j] };
    return coll_basic_nb_run(comm, &nb, TAG_NB_ALLTOALLW, "neighbor_alltoallw");
}

/* Called by coll_basic_comm_query (coll_basic.c). */
void coll_basic_neighbor_query(struct kumi_coll_fns *fns)
{
    fns->neighbor_allgather = coll_basic_neighbor_allgather;
    fns->neighbor_allgatherv = coll_basic_neighbor_allgatherv;
    fns->neighbor_alltoall = coll_basic_neighbor_alltoall;
    fns->neighbor_alltoallv = coll_basic_neighbor_alltoallv;
    fns->neighbor_alltoallw = coll_basic_neighbor_alltoallw;
}
