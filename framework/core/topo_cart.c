/* Cartesian topologies: the queries (MPI_Cart_get, _rank, _coords, _shift,
 * _map, MPI_Cartdim_get), MPI_Dims_create, and the layout MPI_Cart_create
 * and MPI_Cart_sub build (mpi/topo_create.c).  The object: core/topo.c. */
#include "core/topo_impl.h"
#include "core/check.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

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
struct kumi_topo *kumi_topo_cart_new(int ndims, const int *dims, const int *periods, int rank)
{
    struct kumi_topo *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    size_t nd = (size_t)ndims, nb = 2 * nd;
    t->kind = MPI_CART;
    t->ndims = ndims;
    t->dims = kumi_topo_ints_dup(dims, nd);
    t->periods = kumi_topo_ints(nd);
    t->coords = kumi_topo_ints(nd);
    t->nin = t->nout = (int)nb;
    t->in = kumi_topo_ints(nb);
    t->out = kumi_topo_ints(nb);
    t->rtag = kumi_topo_ints(nb);
    t->stag = kumi_topo_ints(nb);
    if (!t->dims || !t->periods || !t->coords || !t->in || !t->out || !t->rtag || !t->stag) {
        kumi_topo_destroy(t);
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
int kumi_topo_cart_check(const char *fn, const struct kumi_comm *c, int ndims, const int *dims,
                      const int *periods, int *n)
{
    if (ndims < 0)
        return kumi_error(MPI_ERR_DIMS, "%s: argument ndims is %d, must not be negative", fn, ndims);
    if (ndims > 0) {
        TRY(kumi_topo_need_ptr(fn, "dims", dims));
        TRY(kumi_topo_need_ptr(fn, "periods", periods));
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

int kumi_mpi_cart_map(struct kumi_comm *comm, int ndims, const int dims[], const int periods[], int *newrank)
{
    static const char fn[] = "MPI_Cart_map";
    int n;
    TRY(kumi_topo_need_ptr(fn, "newrank", newrank));
    TRY(kumi_topo_need_intra(fn, "comm", comm));
    TRY(kumi_topo_cart_check(fn, comm, ndims, dims, periods, &n));
    *newrank = comm->rank < n ? comm->rank : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int kumi_mpi_cartdim_get(struct kumi_comm *comm, int *ndims)
{
    struct kumi_topo *t;
    TRY(kumi_topo_need_ptr("MPI_Cartdim_get", "ndims", ndims));
    TRY(kumi_topo_need("MPI_Cartdim_get", comm, MPI_CART, &t));
    *ndims = t->ndims;
    return MPI_SUCCESS;
}

int kumi_mpi_cart_get(struct kumi_comm *comm, int maxdims, int dims[], int periods[], int coords[])
{
    static const char fn[] = "MPI_Cart_get";
    struct kumi_topo *t;
    TRY(kumi_topo_need(fn, comm, MPI_CART, &t));
    if (maxdims < 0)
        return kumi_error(MPI_ERR_ARG, "%s: argument maxdims is %d, must not be negative", fn, maxdims);
    int n = maxdims < t->ndims ? maxdims : t->ndims;
    if (n > 0) {
        TRY(kumi_topo_need_ptr(fn, "dims", dims));
        TRY(kumi_topo_need_ptr(fn, "periods", periods));
        TRY(kumi_topo_need_ptr(fn, "coords", coords));
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
    TRY(kumi_topo_need_ptr(fn, "rank", rank));
    TRY(kumi_topo_need(fn, comm, MPI_CART, &t));
    if (t->ndims > 0) TRY(kumi_topo_need_ptr(fn, "coords", coords));
    return cart_rank(fn, t, coords, rank);
}

int kumi_mpi_cart_coords(struct kumi_comm *comm, int rank, int maxdims, int coords[])
{
    static const char fn[] = "MPI_Cart_coords";
    struct kumi_topo *t;
    TRY(kumi_topo_need(fn, comm, MPI_CART, &t));
    if (rank < 0 || rank >= comm->size)
        return kumi_error(MPI_ERR_RANK, "%s: invalid rank %d (argument rank) in a communicator of "
                          "size %d", fn, rank, comm->size);
    if (maxdims < t->ndims)
        return kumi_error(MPI_ERR_ARG, "%s: argument maxdims is %d, less than the %d dimensions of "
                          "the topology", fn, maxdims, t->ndims);
    if (t->ndims > 0) TRY(kumi_topo_need_ptr(fn, "coords", coords));
    cart_coords(t, rank, coords);
    return MPI_SUCCESS;
}

int kumi_mpi_cart_shift(struct kumi_comm *comm, int direction, int disp, int *rank_source, int *rank_dest)
{
    static const char fn[] = "MPI_Cart_shift";
    struct kumi_topo *t;
    TRY(kumi_topo_need_ptr(fn, "rank_source", rank_source));
    TRY(kumi_topo_need_ptr(fn, "rank_dest", rank_dest));
    TRY(kumi_topo_need(fn, comm, MPI_CART, &t));
    if (direction < 0 || direction >= t->ndims)
        return kumi_error(MPI_ERR_ARG, "%s: argument direction is %d, must be in 0..%d", fn,
                          direction, t->ndims - 1);
    *rank_source = cart_neighbor(t, direction, -(long long)disp);
    *rank_dest = cart_neighbor(t, direction, disp);
    return MPI_SUCCESS;
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
    if (ndims > 0) TRY(kumi_topo_need_ptr(fn, "dims", dims));
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
    int *f = kumi_topo_ints((size_t)nfree);
    if (!f) return kumi_topo_nomem(fn);
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
