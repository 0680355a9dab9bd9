/* Process topologies: Cartesian, graph and distributed graph communicators,
 * MPI_Dims_create, MPI_Topo_test, and a topology's neighbourhood (for the
 * coll components; the neighborhood collectives are in mpi/topo_neighbor.c).
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
#include "core/core.h"
#include "core/check.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct kumi_topo {
    int kind;                       /* MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH */
    /* Cartesian */
    int ndims;
    int *dims, *periods, *coords;   /* coords: this process's */
    /* graph */
    int nnodes, nedges;
    int *index, *edges;
    /* distributed graph */
    bool weighted;
    int *inw, *outw;                /* weights of in / out edges (weighted only) */
    /* the neighbourhood, every kind */
    int nin, nout;
    int *in, *out, *rtag, *stag;    /* rtag/stag: NULL means offsets 0 */
};

#define TRY(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) return rc_; } while (0)

static int topo_nomem(const char *fn)
{
    return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
}

/* malloc of n ints, never NULL for n == 0 unless out of memory */
static int *ints(size_t n)
{
    if (n > (size_t)INT_MAX * 8) return NULL;
    return malloc(sizeof(int) * (n ? n : 1));
}

static int *ints_dup(const int *a, size_t n)
{
    int *b = ints(n);
    if (b && n) memcpy(b, a, sizeof(int) * n);
    return b;
}

static void topo_destroy(struct kumi_topo *t)
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
    topo_destroy(c->topo);
    c->topo = NULL;
}

int kumi_topo_dup(struct kumi_comm *oldc, struct kumi_comm *newc)
{
    const struct kumi_topo *t = oldc->topo;
    if (!t) return MPI_SUCCESS;
    struct kumi_topo *u = calloc(1, sizeof *u);
    if (!u) return topo_nomem("MPI_Comm_dup");
    *u = *t;
    size_t nd = (size_t)t->ndims;
    u->dims = u->periods = u->coords = u->index = u->edges = NULL;
    u->inw = u->outw = u->in = u->out = u->rtag = u->stag = NULL;
    bool bad = false;
#define DUP(f, n) do { if (t->f && !(u->f = ints_dup(t->f, (n)))) bad = true; } while (0)
    DUP(dims, nd); DUP(periods, nd); DUP(coords, nd);
    DUP(index, (size_t)t->nnodes); DUP(edges, (size_t)t->nedges);
    DUP(inw, (size_t)t->nin); DUP(outw, (size_t)t->nout);
    DUP(in, (size_t)t->nin); DUP(out, (size_t)t->nout);
    DUP(rtag, (size_t)t->nin); DUP(stag, (size_t)t->nout);
#undef DUP
    if (bad) {
        topo_destroy(u);
        return topo_nomem("MPI_Comm_dup");
    }
    kumi_topo_free(newc);
    newc->topo = u;
    return MPI_SUCCESS;
}

static struct kumi_topo *topo_of(const struct kumi_comm *c) { return c->topo; }

/* The topology of comm if it is of kind (0: any kind), else MPI_ERR_TOPOLOGY. */
static int topo_need(const char *fn, struct kumi_comm *c, int kind, struct kumi_topo **t)
{
    *t = topo_of(c);
    if (*t && (!kind || (*t)->kind == kind)) return MPI_SUCCESS;
    const char *what = kind == MPI_CART ? "a Cartesian" : kind == MPI_GRAPH ? "a graph"
                     : kind == MPI_DIST_GRAPH ? "a distributed graph" : "a";
    return kumi_error(MPI_ERR_TOPOLOGY, "%s: communicator %s (argument comm) does not have %s topology",
                      fn, c->name[0] ? c->name : "(unnamed)", what);
}

static int need_intra(const char *fn, const char *arg, const struct kumi_comm *c)
{
    if (c->inter)
        return kumi_error(MPI_ERR_COMM, "%s: argument %s is an intercommunicator; topologies need "
                          "an intracommunicator", fn, arg);
    return MPI_SUCCESS;
}

static int need_ptr(const char *fn, const char *arg, const void *p)
{
    if (!p) return kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fn, arg);
    return MPI_SUCCESS;
}

/* A new communicator of ranks 0..n-1 of parent (collective over parent; n is
 * the same everywhere): *out is NULL on the other ranks. */
static int topo_comm_first(const char *fn, struct kumi_comm *parent, int n, struct kumi_comm **out)
{
    int32_t ctx;
    *out = NULL;
    TRY(kumi_ctx_alloc(parent, &ctx));
    if (parent->rank >= n) {
        kumi_ctx_free(ctx);
        return MPI_SUCCESS;
    }
    int *w = ints((size_t)n);
    if (!w) {
        kumi_ctx_free(ctx);
        return topo_nomem(fn);
    }
    for (int i = 0; i < n; i++) w[i] = kumi_comm_world_rank(parent, i);
    int rc = kumi_comm_create_obj(parent->rank, n, w, ctx, parent, out);
    if (rc) {
        kumi_ctx_free(ctx);
        *out = NULL;
    }
    return rc;
}

/* Give c (new, without topology) the topology t; the handle goes to *newcomm. */
static int topo_attach(struct kumi_comm *c, struct kumi_topo *t, MPI_Comm *newcomm)
{
    kumi_topo_free(c);
    c->topo = t;
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

/* ================================================================ Cartesian */
/* Rank of coords (wrapped in periodic dimensions); MPI_ERR_ARG when a
 * coordinate of a non-periodic dimension is out of range. */
static int cart_rank(const char *fn, const struct kumi_topo *t, const int *coords, int *rank)
{
    int r = 0;
    for (int d = 0; d < t->ndims; d++) {
        int x = coords[d], n = t->dims[d];
        if (x < 0 || x >= n) {
            if (!t->periods[d])
                return kumi_error(MPI_ERR_ARG, "%s: coordinate %d of dimension %d is out of range "
                                  "0..%d (argument coords; the dimension is not periodic)",
                                  fn, x, d, n - 1);
            x %= n;
            if (x < 0) x += n;
        }
        r = r * n + x;
    }
    *rank = r;
    return MPI_SUCCESS;
}

static void cart_coords(const struct kumi_topo *t, int rank, int *coords)
{
    for (int d = t->ndims - 1; d >= 0; d--) {
        coords[d] = rank % t->dims[d];
        rank /= t->dims[d];
    }
}

/* Neighbour at displacement disp along dimension d from this process, or MPI_PROC_NULL. */
static int cart_neighbor(const struct kumi_topo *t, int d, long long disp)
{
    long long x = t->coords[d] + disp, n = t->dims[d];
    if (x < 0 || x >= n) {
        if (!t->periods[d]) return MPI_PROC_NULL;
        x %= n;
        if (x < 0) x += n;
    }
    int r = 0;
    for (int e = 0; e < t->ndims; e++)
        r = r * t->dims[e] + (e == d ? (int)x : t->coords[e]);
    return r;
}

/* A Cartesian topology for rank of a grid dims/periods (0/1 normalised). */
static struct kumi_topo *cart_new(int ndims, const int *dims, const int *periods, int rank)
{
    struct kumi_topo *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    size_t nd = (size_t)ndims, nb = 2 * nd;
    t->kind = MPI_CART;
    t->ndims = ndims;
    t->dims = ints_dup(dims, nd);
    t->periods = ints(nd);
    t->coords = ints(nd);
    t->nin = t->nout = (int)nb;
    t->in = ints(nb);
    t->out = ints(nb);
    t->rtag = ints(nb);
    t->stag = ints(nb);
    if (!t->dims || !t->periods || !t->coords || !t->in || !t->out || !t->rtag || !t->stag) {
        topo_destroy(t);
        return NULL;
    }
    for (int d = 0; d < ndims; d++) t->periods[d] = periods[d] != 0;
    cart_coords(t, rank, t->coords);
    for (int d = 0; d < ndims; d++) {
        int neg = cart_neighbor(t, d, -1), pos = cart_neighbor(t, d, 1);
        t->in[2 * d] = t->out[2 * d] = neg;
        t->in[2 * d + 1] = t->out[2 * d + 1] = pos;
    }
    for (int k = 0; k < (int)nb; k++) {
        t->rtag[k] = k & 0xfffff;
        t->stag[k] = (k ^ 1) & 0xfffff;
    }
    return t;
}

/* Checks shared by Cart_create and Cart_map; *n: the number of grid points. */
static int cart_check(const char *fn, const struct kumi_comm *c, int ndims, const int *dims,
                      const int *periods, int *n)
{
    if (ndims < 0)
        return kumi_error(MPI_ERR_DIMS, "%s: argument ndims is %d, must not be negative", fn, ndims);
    if (ndims > 0) {
        TRY(need_ptr(fn, "dims", dims));
        TRY(need_ptr(fn, "periods", periods));
    }
    long long p = 1;
    for (int d = 0; d < ndims; d++) {
        if (dims[d] <= 0)
            return kumi_error(MPI_ERR_DIMS, "%s: argument dims[%d] is %d, must be positive", fn, d, dims[d]);
        p *= dims[d];
        if (p > c->size)
            break;
    }
    if (p > c->size)
        return kumi_error(MPI_ERR_ARG, "%s: the grid (argument dims) has more points than the "
                          "communicator has processes (%d)", fn, c->size);
    *n = (int)p;
    return MPI_SUCCESS;
}

int kumi_mpi_cart_create(struct kumi_comm *comm_old, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm *comm_cart)
{
    static const char fn[] = "MPI_Cart_create";
    int n;
    (void)reorder;
    TRY(need_ptr(fn, "comm_cart", comm_cart));
    TRY(need_intra(fn, "comm_old", comm_old));
    TRY(cart_check(fn, comm_old, ndims, dims, periods, &n));
    struct kumi_comm *c;
    TRY(topo_comm_first(fn, comm_old, n, &c));
    if (!c) {
        *comm_cart = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    struct kumi_topo *t = cart_new(ndims, dims, periods, c->rank);
    if (!t) {
        kumi_comm_release(c);
        return topo_nomem(fn);
    }
    return topo_attach(c, t, comm_cart);
}

int kumi_mpi_cart_map(struct kumi_comm *comm, int ndims, const int dims[], const int periods[], int *newrank)
{
    static const char fn[] = "MPI_Cart_map";
    int n;
    TRY(need_ptr(fn, "newrank", newrank));
    TRY(need_intra(fn, "comm", comm));
    TRY(cart_check(fn, comm, ndims, dims, periods, &n));
    *newrank = comm->rank < n ? comm->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int kumi_mpi_cartdim_get(struct kumi_comm *comm, int *ndims)
{
    struct kumi_topo *t;
    TRY(need_ptr("MPI_Cartdim_get", "ndims", ndims));
    TRY(topo_need("MPI_Cartdim_get", comm, MPI_CART, &t));
    *ndims = t->ndims;
    return MPI_SUCCESS;
}

int kumi_mpi_cart_get(struct kumi_comm *comm, int maxdims, int dims[], int periods[], int coords[])
{
    static const char fn[] = "MPI_Cart_get";
    struct kumi_topo *t;
    TRY(topo_need(fn, comm, MPI_CART, &t));
    if (maxdims < 0)
        return kumi_error(MPI_ERR_ARG, "%s: argument maxdims is %d, must not be negative", fn, maxdims);
    int n = maxdims < t->ndims ? maxdims : t->ndims;
    if (n > 0) {
        TRY(need_ptr(fn, "dims", dims));
        TRY(need_ptr(fn, "periods", periods));
        TRY(need_ptr(fn, "coords", coords));
    }
    for (int d = 0; d < n; d++) {
        dims[d] = t->dims[d];
        periods[d] = t->periods[d];
        coords[d] = t->coords[d];
    }
    return MPI_SUCCESS;
}

int kumi_mpi_cart_rank(struct kumi_comm *comm, const int coords[], int *rank)
{
    static const char fn[] = "MPI_Cart_rank";
    struct kumi_topo *t;
    TRY(need_ptr(fn, "rank", rank));
    TRY(topo_need(fn, comm, MPI_CART, &t));
    if (t->ndims > 0) TRY(need_ptr(fn, "coords", coords));
    return cart_rank(fn, t, coords, rank);
}

int kumi_mpi_cart_coords(struct kumi_comm *comm, int rank, int maxdims, int coords[])
{
    static const char fn[] = "MPI_Cart_coords";
    struct kumi_topo *t;
    TRY(topo_need(fn, comm, MPI_CART, &t));
    if (rank < 0 || rank >= comm->size)
        return kumi_error(MPI_ERR_RANK, "%s: invalid rank %d (argument rank) in a communicator of "
                          "size %d", fn, rank, comm->size);
    if (maxdims < t->ndims)
        return kumi_error(MPI_ERR_ARG, "%s: argument maxdims is %d, less than the %d dimensions of "
                          "the topology", fn, maxdims, t->ndims);
    if (t->ndims > 0) TRY(need_ptr(fn, "coords", coords));
    cart_coords(t, rank, coords);
    return MPI_SUCCESS;
}

int kumi_mpi_cart_shift(struct kumi_comm *comm, int direction, int disp, int *rank_source, int *rank_dest)
{
    static const char fn[] = "MPI_Cart_shift";
    struct kumi_topo *t;
    TRY(need_ptr(fn, "rank_source", rank_source));
    TRY(need_ptr(fn, "rank_dest", rank_dest));
    TRY(topo_need(fn, comm, MPI_CART, &t));
    if (direction < 0 || direction >= t->ndims)
        return kumi_error(MPI_ERR_ARG, "%s: argument direction is %d, must be in 0..%d", fn,
                          direction, t->ndims - 1);
    *rank_source = cart_neighbor(t, direction, -(long long)disp);
    *rank_dest = cart_neighbor(t, direction, disp);
    return MPI_SUCCESS;
}

int kumi_mpi_cart_sub(struct kumi_comm *comm, const int remain_dims[], MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Cart_sub";
    struct kumi_topo *t;
    TRY(need_ptr(fn, "newcomm", newcomm));
    TRY(topo_need(fn, comm, MPI_CART, &t));
    if (t->ndims > 0) TRY(need_ptr(fn, "remain_dims", remain_dims));
    /* color: position among the dropped dimensions; key: rank (row-major order is kept) */
    int color = 0, nd = 0;
    int *dims = ints((size_t)t->ndims), *periods = ints((size_t)t->ndims);
    if (!dims || !periods) {
        free(dims); free(periods);
        return topo_nomem(fn);
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
    struct kumi_topo *u = rc ? NULL : cart_new(nd, dims, periods, c->rank);
    if (!rc && !u) rc = topo_nomem(fn);
    free(dims);
    free(periods);
    if (rc) {
        if (c) kumi_comm_release(c);
        return rc;
    }
    return topo_attach(c, u, newcomm);
}

/* Balanced factorisation: the lexicographically smallest non-increasing
 * tuple of k factors of n, each at most maxf (out[0] largest).  1 if found. */
static int dims_search(int n, int k, int maxf, int *out)
{
    if (k == 0) return n == 1;
    if (k == 1) {
        if (n > maxf) return 0;
        out[0] = n;
        return 1;
    }
    /* the first factor is at least the k-th root of n */
    int f = 1;
    while (1) {
        long long p = 1;
        for (int i = 0; i < k && p < n; i++) p *= f;
        if (p >= n) break;
        f++;
    }
    for (; f <= maxf && f <= n; f++) {
        if (n % f) continue;
        if (dims_search(n / f, k - 1, f, out + 1)) {
            out[0] = f;
            return 1;
        }
    }
    return 0;
}

static int dims_create(int nnodes, int ndims, int dims[])
{
    static const char fn[] = "MPI_Dims_create";
    if (nnodes <= 0)
        return kumi_error(MPI_ERR_ARG, "%s: argument nnodes is %d, must be positive", fn, nnodes);
    if (ndims < 0)
        return kumi_error(MPI_ERR_DIMS, "%s: argument ndims is %d, must not be negative", fn, ndims);
    if (ndims > 0) TRY(need_ptr(fn, "dims", dims));
    long long fixed = 1;
    int nfree = 0;
    for (int d = 0; d < ndims; d++) {
        if (dims[d] < 0)
            return kumi_error(MPI_ERR_DIMS, "%s: argument dims[%d] is %d, must not be negative",
                              fn, d, dims[d]);
        if (dims[d] == 0) nfree++;
        else if ((fixed *= dims[d]) > nnodes) break;
    }
    if (fixed > nnodes || nnodes % fixed)
        return kumi_error(MPI_ERR_DIMS, "%s: nnodes %d is not a multiple of the product of the "
                          "fixed entries of argument dims", fn, nnodes);
    int rest = (int)(nnodes / fixed);
    if (nfree == 0) {
        if (rest != 1)
            return kumi_error(MPI_ERR_DIMS, "%s: the entries of argument dims multiply to %lld, "
                              "not nnodes %d", fn, fixed, nnodes);
        return MPI_SUCCESS;
    }
    int *f = ints((size_t)nfree);
    if (!f) return topo_nomem(fn);
    if (!dims_search(rest, nfree, rest, f)) {      /* cannot fail: rest, 1, 1, ... */
        free(f);
        return kumi_error(MPI_ERR_INTERN, "%s: no factorisation found", fn);
    }
    for (int d = 0, i = 0; d < ndims; d++)
        if (dims[d] == 0) dims[d] = f[i++];
    free(f);
    return MPI_SUCCESS;
}

int kumi_mpi_dims_create(int nnodes, int ndims, int dims[])
{
    int rc = dims_create(nnodes, ndims, dims);
    return rc ? kumi_err_handle(NULL, rc) : MPI_SUCCESS;
}

/* ==================================================================== graph */
static int graph_check(const char *fn, const struct kumi_comm *c, int nnodes, const int *index,
                       const int *edges)
{
    if (nnodes < 0 || nnodes > c->size)
        return kumi_error(MPI_ERR_ARG, "%s: argument nnodes is %d, must be in 0..%d (the size of "
                          "the communicator)", fn, nnodes, c->size);
    if (nnodes == 0) return MPI_SUCCESS;
    TRY(need_ptr(fn, "index", index));
    for (int i = 0; i < nnodes; i++)
        if (index[i] < (i ? index[i - 1] : 0))
            return kumi_error(MPI_ERR_ARG, "%s: argument index[%d] is %d, must not be negative or "
                              "less than index[%d]", fn, i, index[i], i - 1);
    if (index[nnodes - 1] > 0) TRY(need_ptr(fn, "edges", edges));
    for (int e = 0; e < index[nnodes - 1]; e++)
        if (edges[e] < 0 || edges[e] >= nnodes)
            return kumi_error(MPI_ERR_ARG, "%s: argument edges[%d] is %d, must be in 0..%d", fn, e,
                              edges[e], nnodes - 1);
    return MPI_SUCCESS;
}

int kumi_mpi_graph_create(struct kumi_comm *comm_old, int nnodes, const int index[], const int edges[], int reorder, MPI_Comm *comm_graph)
{
    static const char fn[] = "MPI_Graph_create";
    (void)reorder;
    TRY(need_ptr(fn, "comm_graph", comm_graph));
    TRY(need_intra(fn, "comm_old", comm_old));
    TRY(graph_check(fn, comm_old, nnodes, index, edges));
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
        t->index = ints_dup(index, (size_t)nnodes);
        t->edges = ints_dup(edges, (size_t)nedges);
        t->nin = t->nout = deg;
        t->in = ints_dup(edges + first, (size_t)deg);
        t->out = ints_dup(edges + first, (size_t)deg);
    }
    if (!t || !t->index || !t->edges || !t->in || !t->out) {
        topo_destroy(t);
        kumi_comm_release(c);
        return topo_nomem(fn);
    }
    return topo_attach(c, t, comm_graph);
}

int kumi_mpi_graph_map(struct kumi_comm *comm, int nnodes, const int index[], const int edges[], int *newrank)
{
    static const char fn[] = "MPI_Graph_map";
    TRY(need_ptr(fn, "newrank", newrank));
    TRY(need_intra(fn, "comm", comm));
    TRY(graph_check(fn, comm, nnodes, index, edges));
    *newrank = comm->rank < nnodes ? comm->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int kumi_mpi_graphdims_get(struct kumi_comm *comm, int *nnodes, int *nedges)
{
    static const char fn[] = "MPI_Graphdims_get";
    struct kumi_topo *t;
    TRY(need_ptr(fn, "nnodes", nnodes));
    TRY(need_ptr(fn, "nedges", nedges));
    TRY(topo_need(fn, comm, MPI_GRAPH, &t));
    *nnodes = t->nnodes;
    *nedges = t->nedges;
    return MPI_SUCCESS;
}

int kumi_mpi_graph_get(struct kumi_comm *comm, int maxindex, int maxedges, int index[], int edges[])
{
    static const char fn[] = "MPI_Graph_get";
    struct kumi_topo *t;
    TRY(topo_need(fn, comm, MPI_GRAPH, &t));
    if (maxindex < 0 || maxedges < 0)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is negative", fn,
                          maxindex < 0 ? "maxindex" : "maxedges");
    int ni = maxindex < t->nnodes ? maxindex : t->nnodes;
    int ne = maxedges < t->nedges ? maxedges : t->nedges;
    if (ni > 0) TRY(need_ptr(fn, "index", index));
    if (ne > 0) TRY(need_ptr(fn, "edges", edges));
    if (ni > 0) memcpy(index, t->index, sizeof(int) * (size_t)ni);
    if (ne > 0) memcpy(edges, t->edges, sizeof(int) * (size_t)ne);
    return MPI_SUCCESS;
}

static int graph_rank_check(const char *fn, struct kumi_comm *comm, int rank, struct kumi_topo **t)
{
    TRY(topo_need(fn, comm, MPI_GRAPH, t));
    if (rank < 0 || rank >= (*t)->nnodes)
        return kumi_error(MPI_ERR_RANK, "%s: invalid rank %d (argument rank) in a graph of %d nodes",
                          fn, rank, (*t)->nnodes);
    return MPI_SUCCESS;
}

int kumi_mpi_graph_neighbors_count(struct kumi_comm *comm, int rank, int *nneighbors)
{
    static const char fn[] = "MPI_Graph_neighbors_count";
    struct kumi_topo *t;
    TRY(need_ptr(fn, "nneighbors", nneighbors));
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
        TRY(need_ptr(fn, "neighbors", neighbors));
        memcpy(neighbors, t->edges + first, sizeof(int) * (size_t)n);
    }
    return MPI_SUCCESS;
}

/* ========================================================= distributed graph */
/* Ranks a[0..n) must be ranks of c. */
static int check_ranks(const char *fn, const char *arg, const int *a, int n, const struct kumi_comm *c)
{
    if (n > 0) TRY(need_ptr(fn, arg, a));
    for (int i = 0; i < n; i++)
        if (a[i] < 0 || a[i] >= c->size)
            return kumi_error(MPI_ERR_RANK, "%s: argument %s[%d] is %d, not a rank of a communicator "
                              "of size %d", fn, arg, i, a[i], c->size);
    return MPI_SUCCESS;
}

/* Weights of n edges: MPI_UNWEIGHTED (*given 0), MPI_WEIGHTS_EMPTY or NULL
 * only for n == 0, else n non-negative values. */
static int check_weights(const char *fn, const char *arg, const int *w, int n, int *given)
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

static struct kumi_topo *dist_new(int nin, int nout, bool weighted)
{
    struct kumi_topo *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->kind = MPI_DIST_GRAPH;
    t->nin = nin;
    t->nout = nout;
    t->weighted = weighted;
    t->in = ints((size_t)nin);
    t->out = ints((size_t)nout);
    if (weighted) {
        t->inw = ints((size_t)nin);
        t->outw = ints((size_t)nout);
    }
    if (!t->in || !t->out || (weighted && (!t->inw || !t->outw))) {
        topo_destroy(t);
        return NULL;
    }
    return t;
}

int kumi_mpi_dist_graph_create_adjacent(struct kumi_comm *comm_old, int indegree, const int sources[], const int sourceweights[], int outdegree, const int destinations[], const int destweights[], MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    static const char fn[] = "MPI_Dist_graph_create_adjacent";
    int sw, dw;
    (void)info;
    (void)reorder;
    TRY(need_ptr(fn, "comm_dist_graph", comm_dist_graph));
    TRY(need_intra(fn, "comm_old", comm_old));
    if (indegree < 0 || outdegree < 0)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is negative", fn,
                          indegree < 0 ? "indegree" : "outdegree");
    TRY(check_ranks(fn, "sources", sources, indegree, comm_old));
    TRY(check_ranks(fn, "destinations", destinations, outdegree, comm_old));
    TRY(check_weights(fn, "sourceweights", sourceweights, indegree, &sw));
    TRY(check_weights(fn, "destweights", destweights, outdegree, &dw));
    if (sw != dw)
        return kumi_error(MPI_ERR_ARG, "%s: arguments sourceweights and destweights must both or "
                          "neither be MPI_UNWEIGHTED", fn);
    struct kumi_topo *t = dist_new(indegree, outdegree, sw);
    if (!t) return topo_nomem(fn);
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
        topo_destroy(t);
        return rc;
    }
    return topo_attach(c, t, comm_dist_graph);
}

/* The general form: every rank declares edges sources[i] -> destinations[..]
 * anywhere; one all-to-all delivers to each end of every edge a record
 * {direction, peer, weight} (direction 0: an in edge, 1: an out edge). */
int kumi_mpi_dist_graph_create(struct kumi_comm *comm_old, int n, const int sources[], const int degrees[], const int destinations[], const int weights[], MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    static const char fn[] = "MPI_Dist_graph_create";
    (void)info;
    (void)reorder;
    TRY(need_ptr(fn, "comm_dist_graph", comm_dist_graph));
    TRY(need_intra(fn, "comm_old", comm_old));
    if (n < 0) return kumi_error(MPI_ERR_ARG, "%s: argument n is %d, must not be negative", fn, n);
    TRY(check_ranks(fn, "sources", sources, n, comm_old));
    if (n > 0) TRY(need_ptr(fn, "degrees", degrees));
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
    TRY(check_ranks(fn, "destinations", destinations, nedges, comm_old));
    TRY(check_weights(fn, "weights", weights, nedges, &given));

    int size = comm_old->size, rc = MPI_SUCCESS, weighted = 0;
    MPI_Comm pc = (MPI_Comm)comm_old;
    /* weighted if any rank gave weights (MPI_WEIGHTS_EMPTY included) */
    TRY(comm_old->coll.allreduce(&given, &weighted, 1, MPI_INT, MPI_MAX, pc));
    int *scnt = ints(4 * (size_t)size), *rcnt = scnt + size, *sdsp = rcnt + size, *rdsp = sdsp + size;
    int *sbuf = ints(6 * (size_t)nedges), *rbuf = NULL;
    struct kumi_topo *t = NULL;
    if (!scnt || !sbuf) {
        rc = topo_nomem(fn);
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
    if (!(rbuf = ints((size_t)total))) {
        rc = topo_nomem(fn);
        goto out;
    }
    rc = comm_old->coll.alltoallv(sbuf, scnt, sdsp, MPI_INT, rbuf, rcnt, rdsp, MPI_INT, pc);
    if (rc) goto out;
    int nin = 0, nout = 0;
    for (long long q = 0; q < total; q += 3) {
        if (rbuf[q]) nout++;
        else nin++;
    }
    if (!(t = dist_new(nin, nout, weighted))) {
        rc = topo_nomem(fn);
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
        rc = topo_attach(c, t, comm_dist_graph);
        t = NULL;
    }
out:
    topo_destroy(t);
    free(scnt);
    free(sbuf);
    free(rbuf);
    return rc;
}

int kumi_mpi_dist_graph_neighbors_count(struct kumi_comm *comm, int *indegree, int *outdegree, int *weighted)
{
    static const char fn[] = "MPI_Dist_graph_neighbors_count";
    struct kumi_topo *t;
    TRY(need_ptr(fn, "indegree", indegree));
    TRY(need_ptr(fn, "outdegree", outdegree));
    TRY(need_ptr(fn, "weighted", weighted));
    TRY(topo_need(fn, comm, MPI_DIST_GRAPH, &t));
    *indegree = t->nin;
    *outdegree = t->nout;
    *weighted = t->weighted;
    return MPI_SUCCESS;
}

int kumi_mpi_dist_graph_neighbors(struct kumi_comm *comm, int maxindegree, int sources[], int sourceweights[], int maxoutdegree, int destinations[], int destweights[])
{
    static const char fn[] = "MPI_Dist_graph_neighbors";
    struct kumi_topo *t;
    TRY(topo_need(fn, comm, MPI_DIST_GRAPH, &t));
    if (maxindegree < 0 || maxoutdegree < 0)
        return kumi_error(MPI_ERR_ARG, "%s: argument %s is negative", fn,
                          maxindegree < 0 ? "maxindegree" : "maxoutdegree");
    int ni = maxindegree < t->nin ? maxindegree : t->nin;
    int no = maxoutdegree < t->nout ? maxoutdegree : t->nout;
    if (ni > 0) TRY(need_ptr(fn, "sources", sources));
    if (no > 0) TRY(need_ptr(fn, "destinations", destinations));
    bool sw = t->weighted && ni > 0 && sourceweights != MPI_UNWEIGHTED && sourceweights != MPI_WEIGHTS_EMPTY;
    bool dw = t->weighted && no > 0 && destweights != MPI_UNWEIGHTED && destweights != MPI_WEIGHTS_EMPTY;
    if (sw) TRY(need_ptr(fn, "sourceweights", sourceweights));
    if (dw) TRY(need_ptr(fn, "destweights", destweights));
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

int kumi_mpi_topo_test(struct kumi_comm *comm, int *status)
{
    TRY(need_ptr("MPI_Topo_test", "status", status));
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
    TRY(topo_need("neighborhood collective", c, 0, &t));
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
    TRY(topo_need(fn, c, 0, &t));
    *nin = t->nin;
    *nout = t->nout;
    return MPI_SUCCESS;
}
