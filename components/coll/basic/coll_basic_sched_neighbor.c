/* coll/basic: schedule builders for the neighborhood collectives (Cartesian,
 * graph and distributed-graph communicators): the algorithm of the blocking
 * ones (coll_basic_neighbor.c) as independent nodes, a RECV from every source
 * (block i of the receive side) and a SEND to every destination (block j of
 * the send side).  MPI_PROC_NULL neighbours (Cartesian borders) take part in
 * nothing: no node, their receive blocks stay untouched.
 *
 * Tags.  The core pairs the message sent to destinations[j] with the receive
 * from sources[i] whose tag offsets agree (sendtags[j] == recvtags[i], below
 * 2^20), and edges with equal offsets between the same two processes in list
 * order.  A node tag has only 12 bits, so a node gets the offset's low bits
 * (offset & KUMI_SCHED_TAG_MAX).  Offsets that differ but share those bits
 * (only past 2048 Cartesian dimensions) then meet under one node tag, where
 * messages match in the order the nodes start: the nodes are created (and
 * START starts them) in order of offset, then of list position, on both
 * sides.  Between two processes the k-th message under a node tag then has
 * the k-th smallest offset at the sender and at the receiver, and among equal
 * offsets keeps its list order: exactly the core's pairing.  Offsets below
 * 4096 (every other case) keep their own tag, and the order changes nothing. */
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/coll.h>
#include <kumi/sched.h>
#include "coll_basic.h"

#include <stdlib.h>

/* One side of the exchange: block k is counts[k] (or count) elements of
 * types[k] (or dt) at byte offset displs[k] * unit or adispls[k] (or
 * k * count * extent; or 0 for every block when same is set). */
struct coll_basic_sched_nb_side {
    char *buf;
    const MPI_Count *counts;
    MPI_Count count;
    const MPI_Aint *displs;
    const MPI_Aint *adispls;
    MPI_Aint unit;
    const MPI_Datatype *types;
    MPI_Datatype dt;
    int same;
};

static MPI_Aint coll_basic_sched_nb_ext(MPI_Datatype dt)
{
    MPI_Aint lb, ext;
    kumi_dt_extent(dt, &lb, &ext);
    return ext;
}

static char *coll_basic_sched_nb_block(const struct coll_basic_sched_nb_side *sd, int k, size_t *count,
                                       MPI_Datatype *dt)
{
    *dt = sd->types ? sd->types[k] : sd->dt;
    *count = (size_t)(sd->counts ? sd->counts[k] : sd->count);
    if (sd->same) return sd->buf;
    if (sd->adispls) return sd->buf + sd->adispls[k];
    if (sd->displs) return sd->buf + sd->displs[k] * sd->unit;
    return sd->buf + (MPI_Aint)k * (MPI_Aint)sd->count * coll_basic_sched_nb_ext(sd->dt);
}

/* A slot of the neighbour lists with its tag offset, for sorting. */
struct coll_basic_sched_nb_slot { int off, pos; };

static int coll_basic_sched_nb_cmp(const void *a, const void *b)
{
    const struct coll_basic_sched_nb_slot *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* One node per slot of a list (n slots to or from peers[k] with offsets
 * offs[k], NULL: all 0), in the order described at the top. */
static int coll_basic_sched_nb_side_nodes(int send, const struct coll_basic_sched_nb_side *sd, int n,
                                          const int *peers, const int *offs, struct kumi_sched *s)
{
    struct coll_basic_sched_nb_slot *order = NULL;
    if (offs && n > 0) {
        if (!(order = malloc(sizeof *order * (size_t)n))) return coll_basic_nomem("neighborhood collective");
        for (int k = 0; k < n; k++) order[k] = (struct coll_basic_sched_nb_slot){ offs[k], k };
        qsort(order, (size_t)n, sizeof *order, coll_basic_sched_nb_cmp);
    }
    for (int q = 0; q < n; q++) {
        int k = order ? order[q].pos : q;
        if (peers[k] == MPI_PROC_NULL) continue;
        size_t count;
        MPI_Datatype dt;
        char *buf = coll_basic_sched_nb_block(sd, k, &count, &dt);
        int tag = offs ? offs[k] & KUMI_SCHED_TAG_MAX : 0;
        if (send)
            kumi_sched_send(s, buf, count, dt, peers[k], tag);
        else
            kumi_sched_recv(s, buf, count, dt, peers[k], tag);
    }
    free(order);
    return MPI_SUCCESS;
}

static int coll_basic_sched_nb(const struct coll_basic_sched_nb_side *snd,
                               const struct coll_basic_sched_nb_side *rcv, MPI_Comm comm, struct kumi_sched *s)
{
    int nin, nout;
    const int *src, *rtag, *dst, *stag;
    int rc = kumi_topo_neighbors(comm, &nin, &src, &rtag, &nout, &dst, &stag);
    if (rc != MPI_SUCCESS) return rc;
    rc = coll_basic_sched_nb_side_nodes(0, rcv, nin, src, rtag, s);
    if (rc != MPI_SUCCESS) return rc;
    return coll_basic_sched_nb_side_nodes(1, snd, nout, dst, stag, s);
}

static int coll_basic_sched_ineighbor_allgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                                MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm,
                                                struct kumi_sched *s)
{
    struct coll_basic_sched_nb_side snd = { .buf = (char *)sbuf, .count = scount, .dt = sdt, .same = 1 };
    struct coll_basic_sched_nb_side rcv = { .buf = rbuf, .count = rcount, .dt = rdt };
    return coll_basic_sched_nb(&snd, &rcv, comm, s);
}

static int coll_basic_sched_ineighbor_allgatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                                 const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                                                 MPI_Comm comm, struct kumi_sched *s)
{
    struct coll_basic_sched_nb_side snd = { .buf = (char *)sbuf, .count = scount, .dt = sdt, .same = 1 };
    struct coll_basic_sched_nb_side rcv = { .buf = rbuf, .counts = rcounts, .displs = displs,
                                            .unit = coll_basic_sched_nb_ext(rdt), .dt = rdt };
    return coll_basic_sched_nb(&snd, &rcv, comm, s);
}

static int coll_basic_sched_ineighbor_alltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                                               MPI_Count rcount, MPI_Datatype rdt, MPI_Comm comm,
                                               struct kumi_sched *s)
{
    struct coll_basic_sched_nb_side snd = { .buf = (char *)sbuf, .count = scount, .dt = sdt };
    struct coll_basic_sched_nb_side rcv = { .buf = rbuf, .count = rcount, .dt = rdt };
    return coll_basic_sched_nb(&snd, &rcv, comm, s);
}

static int coll_basic_sched_ineighbor_alltoallv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                                                MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                                                const MPI_Aint rdispls[], MPI_Datatype rdt, MPI_Comm comm,
                                                struct kumi_sched *s)
{
    struct coll_basic_sched_nb_side snd = { .buf = (char *)sbuf, .counts = scounts, .displs = sdispls,
                                            .unit = coll_basic_sched_nb_ext(sdt), .dt = sdt };
    struct coll_basic_sched_nb_side rcv = { .buf = rbuf, .counts = rcounts, .displs = rdispls,
                                            .unit = coll_basic_sched_nb_ext(rdt), .dt = rdt };
    return coll_basic_sched_nb(&snd, &rcv, comm, s);
}

static int coll_basic_sched_ineighbor_alltoallw(const void *sbuf, const MPI_Count scounts[],
                                                const MPI_Aint sdispls[], const MPI_Datatype sdts[],
                                                void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[],
                                                const MPI_Datatype rdts[], MPI_Comm comm, struct kumi_sched *s)
{
    /* displacements in bytes */
    struct coll_basic_sched_nb_side snd = { .buf = (char *)sbuf, .counts = scounts, .adispls = sdispls,
                                            .types = sdts };
    struct coll_basic_sched_nb_side rcv = { .buf = rbuf, .counts = rcounts, .adispls = rdispls,
                                            .types = rdts };
    return coll_basic_sched_nb(&snd, &rcv, comm, s);
}

void coll_basic_sched_neighbor_query(struct kumi_coll_fns *fns)
{
    fns->ineighbor_allgather = coll_basic_sched_ineighbor_allgather;
    fns->ineighbor_allgatherv = coll_basic_sched_ineighbor_allgatherv;
    fns->ineighbor_alltoall = coll_basic_sched_ineighbor_alltoall;
    fns->ineighbor_alltoallv = coll_basic_sched_ineighbor_alltoallv;
    fns->ineighbor_alltoallw = coll_basic_sched_ineighbor_alltoallw;
}
