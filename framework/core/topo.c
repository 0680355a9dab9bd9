/* Process topologies: Cartesian, graph and distributed graph communicators,
 * MPI_Dims_create, MPI_Topo_test, and a topology's neighbourhood (for the
 * coll components; the neighborhood collectives are in mpi/topo_neighbor.c).
 *
 * Files: core/topo.c (the object: copy, free, the checks shared by the
 * others, MPI_Topo_test, the neighbourhood), core/topo_cart.c (Cartesian,
 * MPI_Dims_create), core/topo_graph.c (graph and distributed graph),
 * mpi/topo_create.c (the calls that make communicators: MPI_Cart_create,
 * MPI_Cart_sub, MPI_Graph_create, MPI_Dist_graph_create(_adjacent));
 * core/topo_impl.h holds what they share.
 *
 * A communicator's topology (comm->topo) is a struct kumi_topo.  Every kind
 * also keeps its neighbourhood in the order the neighborhood collectives use
 * (kumi_topo_neighbors):
 *   Cartesian    for each dimension d, the negative then the positive
 *                neighbour (MPI_Cart_shift(d, 1)), as sources and as
 *                destinations; MPI_PROC_NULL at non-periodic borders.  The
 *                message sent in the negative direction is received in the
 *                neighbour's positive slot, so receive slot k uses tag offset
 *                k and send slot k offset k^1 (both neighbours may be one
 *                process: periodic dimensions of size 1 or 2).
 *   graph        the neighbours of MPI_Graph_neighbors, as both.
 *   dist graph   sources and destinations as given (adjacent), or as the
 *                exchange of MPI_Dist_graph_create delivered them: ordered
 *                by the rank that declared the edge, then by its position
 *                in that rank's arguments (so both ends of multiple edges
 *                between one pair list them in the same order).
 * reorder is ignored: rank i of the new communicator is rank i of the old. */
#include "core/topo_impl.h"
#include "core/check.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

int kumi_topo_nomem(const char *fn)
{
    return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
}

/* malloc of n ints, never NULL for n == 0 unless out of memory */
int *kumi_topo_ints(size_t n)
{
    if (n > (size_t)INT_MAX * 8) return NULL;
    return malloc(sizeof(int) * (n ? n : 1));
}

int *kumi_topo_ints_dup(const int *a, size_t n)
{
    int *b = kumi_topo_ints(n);
    if (b && n) memcpy(b, a, sizeof(int) * n);
    return b;
}

void kumi_topo_destroy(struct kumi_topo *t)
{
    if (!t) return;
    free(t->dims); free(t->periods); free(t->coords);
    free(t->index); free(t->edges);
    free(t->inw); free(t->outw);
    free(t->in); free(t->out); free(t->rtag); free(t->stag);
    free(t);
}

void kumi_topo_free(struct kumi_comm *c)
{
    kumi_topo_destroy(c->topo);
    c->topo = NULL;
}

int kumi_topo_dup(struct kumi_comm *oldc, struct kumi_comm *newc)
{
    const struct kumi_topo *t = oldc->topo;
    if (!t) return MPI_SUCCESS;
    struct kumi_topo *u = calloc(1, sizeof *u);
    if (!u) return kumi_topo_nomem("MPI_Comm_dup");
    *u = *t;
    size_t nd = (size_t)t->ndims;
    u->dims = u->periods = u->coords = u->index = u->edges = NULL;
    u->inw = u->outw = u->in = u->out = u->rtag = u->stag = NULL;
    bool bad = false;
#define DUP(f, n) do { if (t->f && !(u->f = kumi_topo_ints_dup(t->f, (n)))) bad = true; } while (0)
    DUP(dims, nd); DUP(periods, nd); DUP(coords, nd);
    DUP(index, (size_t)t->nnodes); DUP(edges, (size_t)t->nedges);
    DUP(inw, (size_t)t->nin); DUP(outw, (size_t)t->nout);
    DUP(in, (size_t)t->nin); DUP(out, (size_t)t->nout);
    DUP(rtag, (size_t)t->nin); DUP(stag, (size_t)t->nout);
#undef DUP
    if (bad) {
        kumi_topo_destroy(u);
        return kumi_topo_nomem("MPI_Comm_dup");
    }
    kumi_topo_free(newc);
    newc->topo = u;
    return MPI_SUCCESS;
}

static struct kumi_topo *topo_of(const struct kumi_comm *c) { return c->topo; }

/* The topology of comm if it is of kind (0: any kind), else MPI_ERR_TOPOLOGY. */
int kumi_topo_need(const char *fn, struct kumi_comm *c, int kind, struct kumi_topo **t)
{
    *t = topo_of(c);
    if (*t && (!kind || (*t)->kind == kind)) return MPI_SUCCESS;
    const char *what = kind == MPI_CART ? "a Cartesian" : kind == MPI_GRAPH ? "a graph"
                     : kind == MPI_DIST_GRAPH ? "a distributed graph" : "a";
    return kumi_error(MPI_ERR_TOPOLOGY, "%s: communicator %s (argument comm) does not have %s topology",
                      fn, c->name[0] ? c->name : "(unnamed)", what);
}

int kumi_topo_need_intra(const char *fn, const char *arg, const struct kumi_comm *c)
{
    if (c->inter)
        return kumi_error(MPI_ERR_COMM, "%s: argument %s is an intercommunicator; topologies need "
                          "an intracommunicator", fn, arg);
    return MPI_SUCCESS;
}

int kumi_topo_need_ptr(const char *fn, const char *arg, const void *p)
{
    if (!p) return kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fn, arg);
    return MPI_SUCCESS;
}

/* Give c (new, without topology) the topology t; the handle goes to *newcomm. */
int kumi_topo_attach(struct kumi_comm *c, struct kumi_topo *t, MPI_Comm *newcomm)
{
    kumi_topo_free(c);
    c->topo = t;
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_topo_test(struct kumi_comm *comm, int *status)
{
    TRY(kumi_topo_need_ptr("MPI_Topo_test", "status", status));
    struct kumi_topo *t = topo_of(comm);
    *status = t ? t->kind : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

/* ============================================== neighbourhood for coll components */
KUMI_EXPORT int kumi_topo_neighbors(MPI_Comm comm, int *indegree, const int **sources,
                                    const int **recvtags, int *outdegree,
                                    const int **destinations, const int **sendtags)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    if (!c) return kumi_error(MPI_ERR_COMM, "kumi_topo_neighbors: invalid communicator");
    struct kumi_topo *t;
    TRY(kumi_topo_need("neighborhood collective", c, 0, &t));
    *indegree = t->nin;
    *outdegree = t->nout;
    *sources = t->in;
    *destinations = t->out;
    *recvtags = t->rtag;
    *sendtags = t->stag;
    return MPI_SUCCESS;
}

int kumi_topo_degrees(const char *fn, struct kumi_comm *c, int *nin, int *nout)
{
    struct kumi_topo *t;
    TRY(kumi_topo_need(fn, c, 0, &t));
    *nin = t->nin;
    *nout = t->nout;
    return MPI_SUCCESS;
}
