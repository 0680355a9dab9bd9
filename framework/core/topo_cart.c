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

/* Balanced factorisation (MPI 4.1 sec. 8.5.2: dimensions "as close to each
 * other as possible").  Of the non-increasing tuples of k factors of n, the
 * one with the smallest spread (largest minus smallest factor); among equal
 * spreads the largest smallest factor; then the smallest sum.  (This is the
 * choice MPICH makes: the same results for every n up to 6,000 in 2 to 5
 * dimensions, e.g. 21 x 16 x 15 for 5,040 in 3, where a greedy split of the
 * prime factors gives 20 x 18 x 14.)  A depth-first search over the divisors
 * of n in increasing order, cut where the spread can only grow. */
struct dims_search {
    int k;
    const long long *divs;       /* the divisors of n, increasing */
    int ndivs;
    long long *cur, *best;
    long long bspread, bmin, bsum;
};

/* x^r, or cap + 1 when it exceeds cap */
static long long dims_pow(long long x, int r, long long cap)
{
    long long p = 1;
    for (int i = 0; i < r; i++) {
        if (x > 0 && p > cap / x) return cap + 1;
        p *= x;
    }
    return p;
}

/* the largest x with x^r <= m (m >= 1, r >= 1) */
static long long dims_root(long long m, int r)
{
    long long lo = 1, hi = m < (1LL << 31) ? m : (1LL << 31);
    while (lo < hi) {
        long long mid = lo + (hi - lo + 1) / 2;
        if (dims_pow(mid, r, m) <= m) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static void dims_search(struct dims_search *s, int level, long long m, long long maxf, long long sum)
{
    int r = s->k - level;
    if (r == 1) {
        if (m > maxf) return;
        s->cur[level] = m;
        long long spread = s->cur[0] - m, total = sum + m;
        if (spread < s->bspread || (spread == s->bspread && (m > s->bmin || (m == s->bmin && total < s->bsum)))) {
            s->bspread = spread;
            s->bmin = m;
            s->bsum = total;
            memcpy(s->best, s->cur, sizeof *s->cur * (size_t)s->k);
        }
        return;
    }
    long long lo = dims_root(m, r);
    if (dims_pow(lo, r, m) < m) lo++;           /* the largest factor is at least the r-th root */
    for (int i = 0; i < s->ndivs; i++) {
        long long d = s->divs[i];
        if (d < lo || m % d) continue;
        if (d > maxf) break;
        /* the smallest factor is at most the (r-1)-th root of what is left,
         * so the spread is at least this, and grows with d */
        long long f0 = level ? s->cur[0] : d;
        if (f0 - dims_root(m / d, r - 1) > s->bspread) break;
        s->cur[level] = d;
        dims_search(s, level + 1, m / d, d, sum + d);
    }
}

/* The balanced k factors of n (n >= 1, k >= 1) into out[0..k), largest
 * first.  MPI_SUCCESS or MPI_ERR_NO_MEM. */
static int dims_balance(int n, int k, int *out)
{
    int nd = 0, cap = 64;
    long long *divs = malloc(sizeof *divs * (size_t)cap), *big = NULL;
    long long *cur = malloc(sizeof *cur * (size_t)k * 2);
    int rc = MPI_SUCCESS;
    if (!divs || !cur) { rc = MPI_ERR_NO_MEM; goto out; }
    /* the divisors up to sqrt(n) in increasing order, then their partners */
    int nsmall = 0;
    for (long long d = 1; d * d <= n; d++) {
        if (n % d) continue;
        if (nd + 2 > cap) {
            long long *nx = realloc(divs, sizeof *divs * (size_t)(cap *= 2));
            if (!nx) { rc = MPI_ERR_NO_MEM; goto out; }
            divs = nx;
        }
        divs[nd++] = d;
    }
    nsmall = nd;
    big = malloc(sizeof *big * (size_t)(2 * nsmall + 1));
    if (!big) { rc = MPI_ERR_NO_MEM; goto out; }
    memcpy(big, divs, sizeof *big * (size_t)nsmall);
    for (int i = nsmall - 1; i >= 0; i--)
        if (divs[i] * divs[i] != n) big[nd++] = n / divs[i];
    struct dims_search s = { .k = k, .divs = big, .ndivs = nd, .cur = cur, .best = cur + k,
                             .bspread = LLONG_MAX, .bmin = 0, .bsum = LLONG_MAX };
    dims_search(&s, 0, n, n, 0);
    for (int i = 0; i < k; i++) out[i] = (int)s.best[i];   /* n, 1, 1, ... is always a candidate */
out:
    free(divs);
    free(big);
    free(cur);
    return rc;
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
    if (dims_balance(rest, nfree, f) != MPI_SUCCESS) {
        free(f);
        return kumi_topo_nomem(fn);
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
