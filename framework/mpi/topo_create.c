/* The topology calls that make communicators: MPI_Cart_create,
 * MPI_Cart_sub, MPI_Graph_create, MPI_Dist_graph_create_adjacent and
 * MPI_Dist_graph_create (a context id agreed over the old communicator, then
 * the topology of core/topo_cart.c or core/topo_graph.c attached).
 * reorder is ignored: rank i of the new communicator is rank i of the old. */
#include "mpi/mpi_front.h"
#include "core/topo_impl.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A new communicator of ranks 0..n-1 of parent (collective over parent; n is
 * the same everywhere): *out is NULL on the other ranks. */
static int topo_comm_first(const char *fn, struct kumi_comm *parent, int n, struct kumi_comm **out)
{
    int32_t ctx;
    *out = NULL;
    TRY(kumi_ctx_alloc_comm(parent, &ctx));
    if (parent->rank >= n) {
        kumi_ctx_free(ctx);
        return MPI_SUCCESS;
    }
    int *w = kumi_topo_ints((size_t)n);
    if (!w) {
        kumi_ctx_free(ctx);
        return kumi_topo_nomem(fn);
    }
    for (int i = 0; i < n; i++) w[i] = kumi_comm_world_rank(parent, i);
    int rc = kumi_comm_create_obj(parent->rank, n, w, ctx, parent, out);
    if (rc) {
        kumi_ctx_free(ctx);
        *out = NULL;
    }
    return rc;
}

int kumi_mpi_cart_create(struct kumi_comm *comm_old, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm *comm_cart)
{
    static const char fn[] = "MPI_Cart_create";
    int n;
    (void)reorder;
    TRY(kumi_topo_need_ptr(fn, "comm_cart", comm_cart));
    TRY(kumi_topo_need_intra(fn, "comm_old", comm_old));
    TRY(kumi_topo_cart_check(fn, comm_old, ndims, dims, periods, &n));
    struct kumi_comm *c;
    TRY(topo_comm_first(fn, comm_old, n, &c));
    if (!c) {
        *comm_cart = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    struct kumi_topo *t = kumi_topo_cart_new(ndims, dims, periods, c->rank);
    if (!t) {
        kumi_comm_release(c);
        return kumi_topo_nomem(fn);
    }
    return kumi_topo_attach(c, t, comm_cart);
}

int kumi_mpi_cart_sub(struct kumi_comm *comm, const int remain_dims[], MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Cart_sub";
    struct kumi_topo *t;
    TRY(kumi_topo_need_ptr(fn, "newcomm", newcomm));
    TRY(kumi_topo_need(fn, comm, MPI_CART, &t));
    if (t->ndims > 0) TRY(kumi_topo_need_ptr(fn, "remain_dims", remain_dims));
    /* color: position among the dropped dimensions; key: rank (row-major order is kept) */
    int color = 0, nd = 0;
    int *dims = kumi_topo_ints((size_t)t->ndims), *periods = kumi_topo_ints((size_t)t->ndims);
    if (!dims || !periods) {
        free(dims); free(periods);
        return kumi_topo_nomem(fn);
    }
    for (int d = 0; d < t->ndims; d++) {
        if (remain_dims[d]) {
            dims[nd] = t->dims[d];
            periods[nd] = t->periods[d];
            nd++;
        } else {
            color = color * t->dims[d] + t->coords[d];
        }
    }
    MPI_Comm h = MPI_COMM_NULL;
    int rc = kumi_mpi_comm_split(comm, color, comm->rank, &h);
    struct kumi_comm *c = rc ? NULL : kumi_comm_get(h);
    if (!rc && !c) rc = kumi_error(MPI_ERR_INTERN, "%s: the split gave no communicator", fn);
    struct kumi_topo *u = rc ? NULL : kumi_topo_cart_new(nd, dims, periods, c->rank);
    if (!rc && !u) rc = kumi_topo_nomem(fn);
    free(dims);
    free(periods);
    if (rc) {
        if (c) kumi_comm_release(c);
        return rc;
    }
    return kumi_topo_attach(c, u, newcomm);
}

int kumi_mpi_graph_create(struct kumi_comm *comm_old, int nnodes, const int index[], const int edges[], int reorder, MPI_Comm *comm_graph)
{
    static const char fn[] = "MPI_Graph_create";
    (void)reorder;
    TRY(kumi_topo_need_ptr(fn, "comm_graph", comm_graph));
    TRY(kumi_topo_need_intra(fn, "comm_old", comm_old));
    TRY(kumi_topo_graph_check(fn, comm_old, nnodes, index, edges));
    if (nnodes == 0) {
        *comm_graph = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    struct kumi_comm *c;
    TRY(topo_comm_first(fn, comm_old, nnodes, &c));
    if (!c) {
        *comm_graph = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    struct kumi_topo *t = calloc(1, sizeof *t);
    int r = c->rank, nedges = index[nnodes - 1];
    int first = r ? index[r - 1] : 0, deg = index[r] - first;
    if (t) {
        t->kind = MPI_GRAPH;
        t->nnodes = nnodes;
        t->nedges = nedges;
        t->index = kumi_topo_ints_dup(index, (size_t)nnodes);
        t->edges = kumi_topo_ints_dup(edges, (size_t)nedges);
        t->nin = t->nout = deg;
        t->in = kumi_topo_ints_dup(edges + first, (size_t)deg);
        t->out = kumi_topo_ints_dup(edges + first, (size_t)deg);
    }
    if (!t || !t->index || !t->edges || !t->in || !t->out) {
        kumi_topo_destroy(t);
        kumi_comm_release(c);
        return kumi_topo_nomem(fn);
    }
    return kumi_topo_attach(c, t, comm_graph);
}

int kumi_mpi_dist_graph_create_adjacent(struct kumi_comm *comm_old, int indegree, const int sources[], const int sourceweights[], int outdegree, const int destinations[], const int destweights[], MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    static const char fn[] = "MPI_Dist_graph_create_adjacent";
    int sw, dw;
    (void)info;
    (void)reorder;
    TRY(kumi_topo_need_ptr(fn, "comm_dist_graph", comm_dist_graph));
    TRY(kumi_topo_need_intra(fn, "comm_old", comm_old));
    if (indegree < 0 || outdegree < 0)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is negative", fn,
                          indegree < 0 ? "indegree" : "outdegree");
    TRY(kumi_topo_check_ranks(fn, "sources", sources, indegree, comm_old));
    TRY(kumi_topo_check_ranks(fn, "destinations", destinations, outdegree, comm_old));
    TRY(kumi_topo_check_weights(fn, "sourceweights", sourceweights, indegree, &sw));
    TRY(kumi_topo_check_weights(fn, "destweights", destweights, outdegree, &dw));
    if (sw != dw)
        return kumi_error(MPI_ERR_ARG, "%s: arguments sourceweights and destweights must both or "
                          "neither be MPI_UNWEIGHTED", fn);
    struct kumi_topo *t = kumi_topo_dist_new(indegree, outdegree, sw);
    if (!t) return kumi_topo_nomem(fn);
    for (int i = 0; i < indegree; i++) {
        t->in[i] = sources[i];
        if (sw) t->inw[i] = sourceweights[i];
    }
    for (int j = 0; j < outdegree; j++) {
        t->out[j] = destinations[j];
        if (dw) t->outw[j] = destweights[j];
    }
    struct kumi_comm *c;
    int rc = topo_comm_first(fn, comm_old, comm_old->size, &c);
    if (rc) {
        kumi_topo_destroy(t);
        return rc;
    }
    return kumi_topo_attach(c, t, comm_dist_graph);
}

/* The general form: every rank declares edges sources[i] -> destinations[..]
 * anywhere; one all-to-all delivers to each end of every edge a record
 * {direction, peer, weight} (direction 0: an in edge, 1: an out edge). */
int kumi_mpi_dist_graph_create(struct kumi_comm *comm_old, int n, const int sources[], const int degrees[], const int destinations[], const int weights[], MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    static const char fn[] = "MPI_Dist_graph_create";
    (void)info;
    (void)reorder;
    TRY(kumi_topo_need_ptr(fn, "comm_dist_graph", comm_dist_graph));
    TRY(kumi_topo_need_intra(fn, "comm_old", comm_old));
    if (n < 0) return kumi_error(MPI_ERR_ARG, "%s: argument n is %d, must not be negative", fn, n);
    TRY(kumi_topo_check_ranks(fn, "sources", sources, n, comm_old));
    if (n > 0) TRY(kumi_topo_need_ptr(fn, "degrees", degrees));
    long long ne = 0;
    for (int i = 0; i < n; i++) {
        if (degrees[i] < 0)
            return kumi_error(MPI_ERR_ARG, "%s: argument degrees[%d] is %d, must not be negative", fn,
                              i, degrees[i]);
        ne += degrees[i];
    }
    if (ne > INT_MAX / 6)
        return kumi_error(MPI_ERR_ARG, "%s: too many edges (%lld)", fn, ne);
    int nedges = (int)ne, given;
    TRY(kumi_topo_check_ranks(fn, "destinations", destinations, nedges, comm_old));
    TRY(kumi_topo_check_weights(fn, "weights", weights, nedges, &given));

    int size = comm_old->size, rc = MPI_SUCCESS, weighted = 0;
    MPI_Comm pc = (MPI_Comm)comm_old;
    /* weighted if any rank gave weights (MPI_WEIGHTS_EMPTY included) */
    TRY(comm_old->coll.allreduce(&given, &weighted, 1, MPI_INT, MPI_MAX, pc));
    int *scnt = kumi_topo_ints(4 * (size_t)size), *rcnt = scnt + size, *sdsp = rcnt + size, *rdsp = sdsp + size;
    int *sbuf = kumi_topo_ints(6 * (size_t)nedges), *rbuf = NULL;
    struct kumi_topo *t = NULL;
    if (!scnt || !sbuf) {
        rc = kumi_topo_nomem(fn);
        goto out;    /* the others block in the all-to-all; out of memory is fatal in practice */
    }
    memset(scnt, 0, sizeof(int) * (size_t)size);
    for (int i = 0, e = 0; i < n; i++)
        for (int k = 0; k < degrees[i]; k++, e++) {
            scnt[sources[i]] += 3;
            scnt[destinations[e]] += 3;
        }
    for (int r = 0, d = 0; r < size; r++) {
        sdsp[r] = d;
        d += scnt[r];
    }
    /* fill, in declaration order per target */
    {
        int *pos = rcnt;      /* scratch: next free slot per target */
        memcpy(pos, sdsp, sizeof(int) * (size_t)size);
        for (int i = 0, e = 0; i < n; i++)
            for (int k = 0; k < degrees[i]; k++, e++) {
                int s = sources[i], d = destinations[e], w = given ? weights[e] : 1;
                int *p = sbuf + pos[s];
                p[0] = 1; p[1] = d; p[2] = w;
                pos[s] += 3;
                p = sbuf + pos[d];
                p[0] = 0; p[1] = s; p[2] = w;
                pos[d] += 3;
            }
    }
    rc = comm_old->coll.alltoall(scnt, 1, MPI_INT, rcnt, 1, MPI_INT, pc);
    if (rc) goto out;
    long long total = 0;
    for (int r = 0; r < size; r++) {
        rdsp[r] = (int)total;
        total += rcnt[r];
    }
    if (total > INT_MAX) {
        rc = kumi_error(MPI_ERR_ARG, "%s: too many edges at rank %d", fn, comm_old->rank);
        goto out;
    }
    if (!(rbuf = kumi_topo_ints((size_t)total))) {
        rc = kumi_topo_nomem(fn);
        goto out;
    }
    {
        struct kumi_widen w;            /* the coll contract's count width */
        if ((rc = kumi_widen_begin(&w, fn, size, 2, 2))) goto out;
        const MPI_Count *sc = kumi_widen_counts(&w, scnt, size), *rc_ = kumi_widen_counts(&w, rcnt, size);
        const MPI_Aint *sd = kumi_widen_displs(&w, sdsp, size), *rd = kumi_widen_displs(&w, rdsp, size);
        rc = comm_old->coll.alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc_, rd, MPI_INT, pc);
        kumi_widen_end(&w);
    }
    if (rc) goto out;
    int nin = 0, nout = 0;
    for (long long q = 0; q < total; q += 3) {
        if (rbuf[q]) nout++;
        else nin++;
    }
    if (!(t = kumi_topo_dist_new(nin, nout, weighted))) {
        rc = kumi_topo_nomem(fn);
        goto out;
    }
    nin = nout = 0;
    for (long long q = 0; q < total; q += 3) {
        if (rbuf[q]) {
            if (weighted) t->outw[nout] = rbuf[q + 2];
            t->out[nout++] = rbuf[q + 1];
        } else {
            if (weighted) t->inw[nin] = rbuf[q + 2];
            t->in[nin++] = rbuf[q + 1];
        }
    }
    struct kumi_comm *c;
    rc = topo_comm_first(fn, comm_old, size, &c);
    if (!rc) {
        rc = kumi_topo_attach(c, t, comm_dist_graph);
        t = NULL;
    }
out:
    kumi_topo_destroy(t);
    free(scnt);
    free(sbuf);
    free(rbuf);
    return rc;
}
