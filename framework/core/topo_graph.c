/* Graph and distributed graph topologies: the queries (MPI_Graph_get,
 * _neighbors(_count), _map, MPI_Graphdims_get, MPI_Dist_graph_neighbors
 * (_count)) and the checks and layouts their creation uses
 * (mpi/topo_create.c).  The object: core/topo.c. */
#include "core/topo_impl.h"
#include "core/check.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ==================================================================== graph */
int kumi_topo_graph_check(const char *fn, const struct kumi_comm *c, int nnodes, const int *index,
                       const int *edges)
{
    if (nnodes < 0 || nnodes > c->size)
        return kumi_error(MPI_ERR_ARG, "%s: argument nnodes is %d, must be in 0..%d (the size of "
                          "the communicator)", fn, nnodes, c->size);
    if (nnodes == 0) return MPI_SUCCESS;
    TRY(kumi_topo_need_ptr(fn, "index", index));
    for (int i = 0; i < nnodes; i++)
        if (index[i] < (i ? index[i - 1] : 0))
            return kumi_error(MPI_ERR_ARG, "%s: argument index[%d] is %d, must not be negative or "
                              "less than index[%d]", fn, i, index[i], i - 1);
    if (index[nnodes - 1] > 0) TRY(kumi_topo_need_ptr(fn, "edges", edges));
    for (int e = 0; e < index[nnodes - 1]; e++)
        if (edges[e] < 0 || edges[e] >= nnodes)
            return kumi_error(MPI_ERR_ARG, "%s: argument edges[%d] is %d, must be in 0..%d", fn, e,
                              edges[e], nnodes - 1);
    return MPI_SUCCESS;
}

int kumi_mpi_graph_map(struct kumi_comm *comm, int nnodes, const int index[], const int edges[], int *newrank)
{
    static const char fn[] = "MPI_Graph_map";
    TRY(kumi_topo_need_ptr(fn, "newrank", newrank));
    TRY(kumi_topo_need_intra(fn, "comm", comm));
    TRY(kumi_topo_graph_check(fn, comm, nnodes, index, edges));
    *newrank = comm->rank < nnodes ? comm->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int kumi_mpi_graphdims_get(struct kumi_comm *comm, int *nnodes, int *nedges)
{
    static const char fn[] = "MPI_Graphdims_get";
    struct kumi_topo *t;
    TRY(kumi_topo_need_ptr(fn, "nnodes", nnodes));
    TRY(kumi_topo_need_ptr(fn, "nedges", nedges));
    TRY(kumi_topo_need(fn, comm, MPI_GRAPH, &t));
    *nnodes = t->nnodes;
    *nedges = t->nedges;
    return MPI_SUCCESS;
}

int kumi_mpi_graph_get(struct kumi_comm *comm, int maxindex, int maxedges, int index[], int edges[])
{
    static const char fn[] = "MPI_Graph_get";
    struct kumi_topo *t;
    TRY(kumi_topo_need(fn, comm, MPI_GRAPH, &t));
    if (maxindex < 0 || maxedges < 0)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is negative", fn,
                          maxindex < 0 ? "maxindex" : "maxedges");
    int ni = maxindex < t->nnodes ? maxindex : t->nnodes;
    int ne = maxedges < t->nedges ? maxedges : t->nedges;
    if (ni > 0) TRY(kumi_topo_need_ptr(fn, "index", index));
    if (ne > 0) TRY(kumi_topo_need_ptr(fn, "edges", edges));
    if (ni > 0) memcpy(index, t->index, sizeof(int) * (size_t)ni);
    if (ne > 0) memcpy(edges, t->edges, sizeof(int) * (size_t)ne);
    return MPI_SUCCESS;
}

static int graph_rank_check(const char *fn, struct kumi_comm *comm, int rank, struct kumi_topo **t)
{
    TRY(kumi_topo_need(fn, comm, MPI_GRAPH, t));
    if (rank < 0 || rank >= (*t)->nnodes)
        return kumi_error(MPI_ERR_RANK, "%s: invalid rank %d (argument rank) in a graph of %d nodes",
                          fn, rank, (*t)->nnodes);
    return MPI_SUCCESS;
}

int kumi_mpi_graph_neighbors_count(struct kumi_comm *comm, int rank, int *nneighbors)
{
    static const char fn[] = "MPI_Graph_neighbors_count";
    struct kumi_topo *t;
    TRY(kumi_topo_need_ptr(fn, "nneighbors", nneighbors));
    TRY(graph_rank_check(fn, comm, rank, &t));
    *nneighbors = t->index[rank] - (rank ? t->index[rank - 1] : 0);
    return MPI_SUCCESS;
}

int kumi_mpi_graph_neighbors(struct kumi_comm *comm, int rank, int maxneighbors, int neighbors[])
{
    static const char fn[] = "MPI_Graph_neighbors";
    struct kumi_topo *t;
    TRY(graph_rank_check(fn, comm, rank, &t));
    if (maxneighbors < 0)
        return kumi_error(MPI_ERR_ARG, "%s: argument maxneighbors is %d, must not be negative", fn,
                          maxneighbors);
    int first = rank ? t->index[rank - 1] : 0, deg = t->index[rank] - first;
    int n = maxneighbors < deg ? maxneighbors : deg;
    if (n > 0) {
        TRY(kumi_topo_need_ptr(fn, "neighbors", neighbors));
        memcpy(neighbors, t->edges + first, sizeof(int) * (size_t)n);
    }
    return MPI_SUCCESS;
}

/* ========================================================= distributed graph */
/* Ranks a[0..n) must be ranks of c. */
int kumi_topo_check_ranks(const char *fn, const char *arg, const int *a, int n, const struct kumi_comm *c)
{
    if (n > 0) TRY(kumi_topo_need_ptr(fn, arg, a));
    for (int i = 0; i < n; i++)
        if (a[i] < 0 || a[i] >= c->size)
            return kumi_error(MPI_ERR_RANK, "%s: argument %s[%d] is %d, not a rank of a communicator "
                              "of size %d", fn, arg, i, a[i], c->size);
    return MPI_SUCCESS;
}

/* Weights of n edges: MPI_UNWEIGHTED (*given 0), MPI_WEIGHTS_EMPTY or NULL
 * only for n == 0, else n non-negative values. */
int kumi_topo_check_weights(const char *fn, const char *arg, const int *w, int n, int *given)
{
    *given = w != MPI_UNWEIGHTED;
    if (w == MPI_UNWEIGHTED) return MPI_SUCCESS;
    if (n == 0) return MPI_SUCCESS;
    if (w == MPI_WEIGHTS_EMPTY || !w)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is %s for %d edges", fn, arg,
                          w ? "MPI_WEIGHTS_EMPTY" : "NULL", n);
    for (int i = 0; i < n; i++)
        if (w[i] < 0)
            return kumi_error(MPI_ERR_ARG, "%s: argument %s[%d] is %d, weights must not be negative",
                              fn, arg, i, w[i]);
    return MPI_SUCCESS;
}

struct kumi_topo *kumi_topo_dist_new(int nin, int nout, bool weighted)
{
    struct kumi_topo *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->kind = MPI_DIST_GRAPH;
    t->nin = nin;
    t->nout = nout;
    t->weighted = weighted;
    t->in = kumi_topo_ints((size_t)nin);
    t->out = kumi_topo_ints((size_t)nout);
    if (weighted) {
        t->inw = kumi_topo_ints((size_t)nin);
        t->outw = kumi_topo_ints((size_t)nout);
    }
    if (!t->in || !t->out || (weighted && (!t->inw || !t->outw))) {
        kumi_topo_destroy(t);
        return NULL;
    }
    return t;
}

int kumi_mpi_dist_graph_neighbors_count(struct kumi_comm *comm, int *indegree, int *outdegree, int *weighted)
{
    static const char fn[] = "MPI_Dist_graph_neighbors_count";
    struct kumi_topo *t;
    TRY(kumi_topo_need_ptr(fn, "indegree", indegree));
    TRY(kumi_topo_need_ptr(fn, "outdegree", outdegree));
    TRY(kumi_topo_need_ptr(fn, "weighted", weighted));
    TRY(kumi_topo_need(fn, comm, MPI_DIST_GRAPH, &t));
    *indegree = t->nin;
    *outdegree = t->nout;
    *weighted = t->weighted;
    return MPI_SUCCESS;
}

int kumi_mpi_dist_graph_neighbors(struct kumi_comm *comm, int maxindegree, int sources[], int sourceweights[], int maxoutdegree, int destinations[], int destweights[])
{
    static const char fn[] = "MPI_Dist_graph_neighbors";
    struct kumi_topo *t;
    TRY(kumi_topo_need(fn, comm, MPI_DIST_GRAPH, &t));
    if (maxindegree < 0 || maxoutdegree < 0)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is negative", fn,
                          maxindegree < 0 ? "maxindegree" : "maxoutdegree");
    int ni = maxindegree < t->nin ? maxindegree : t->nin;
    int no = maxoutdegree < t->nout ? maxoutdegree : t->nout;
    if (ni > 0) TRY(kumi_topo_need_ptr(fn, "sources", sources));
    if (no > 0) TRY(kumi_topo_need_ptr(fn, "destinations", destinations));
    bool sw = t->weighted && ni > 0 && sourceweights != MPI_UNWEIGHTED && sourceweights != MPI_WEIGHTS_EMPTY;
    bool dw = t->weighted && no > 0 && destweights != MPI_UNWEIGHTED && destweights != MPI_WEIGHTS_EMPTY;
    if (sw) TRY(kumi_topo_need_ptr(fn, "sourceweights", sourceweights));
    if (dw) TRY(kumi_topo_need_ptr(fn, "destweights", destweights));
    for (int i = 0; i < ni; i++) {
        sources[i] = t->in[i];
        if (sw) sourceweights[i] = t->inw[i];
    }
    for (int j = 0; j < no; j++) {
        destinations[j] = t->out[j];
        if (dw) destweights[j] = t->outw[j];
    }
    return MPI_SUCCESS;
}
