/* Cartesian topologies at any size: Cart_create (2-D and 3-D, periodic and
 * not, grids smaller than the communicator, zero dimensions), Topo_test,
 * Cartdim_get, Cart_get, Cart_coords <-> Cart_rank round trips with
 * wrap-around, Cart_shift against arithmetic, Cart_sub (sizes, ranks,
 * coordinates, and traffic on the sub-communicators), Cart_map, and the
 * error classes. */
#include "kt.h"

static int rank, size;

/* row-major coordinates of r in dims */
static void coords_of(int r, int nd, const int *dims, int *c)
{
    for (int d = nd - 1; d >= 0; d--) {
        c[d] = r % dims[d];
        r /= dims[d];
    }
}

static int rank_of(int nd, const int *dims, const int *c)
{
    int r = 0;
    for (int d = 0; d < nd; d++) r = r * dims[d] + c[d];
    return r;
}

static int wrap(int x, int n) { x %= n; return x < 0 ? x + n : x; }

static void check_grid(int nd, const int *periods)
{
    int dims[3] = { 0, 0, 0 };
    KT_MPI(MPI_Dims_create(size, nd, dims));
    MPI_Comm cart;
    KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &cart));
    KT_CHECK(cart != MPI_COMM_NULL, "full grid gave MPI_COMM_NULL");
    int st, n, r;
    KT_MPI(MPI_Topo_test(cart, &st));
    KT_EQ_INT(st, MPI_CART);
    KT_MPI(MPI_Cartdim_get(cart, &n));
    KT_EQ_INT(n, nd);
    KT_MPI(MPI_Comm_size(cart, &n));
    KT_EQ_INT(n, size);
    KT_MPI(MPI_Comm_rank(cart, &r));
    KT_EQ_INT(r, rank);                       /* reorder false: same ranks */

    int gd[3], gp[3], gc[3], mine[3];
    KT_MPI(MPI_Cart_get(cart, nd, gd, gp, gc));
    coords_of(rank, nd, dims, mine);
    for (int d = 0; d < nd; d++) {
        KT_EQ_INT(gd[d], dims[d]);
        KT_EQ_INT(gp[d], periods[d] != 0);
        KT_EQ_INT(gc[d], mine[d]);
    }

    /* every rank's coordinates and back */
    for (int q = 0; q < size; q++) {
        int c[3], e[3], back;
        KT_MPI(MPI_Cart_coords(cart, q, nd, c));
        coords_of(q, nd, dims, e);
        for (int d = 0; d < nd; d++) KT_EQ_INT(c[d], e[d]);
        KT_MPI(MPI_Cart_rank(cart, c, &back));
        KT_EQ_INT(back, q);
        /* wrap-around in periodic dimensions, error in the others */
        for (int d = 0; d < nd; d++) {
            int w[3];
            memcpy(w, c, sizeof w);
            w[d] = c[d] + dims[d];
            if (periods[d]) {
                KT_MPI(MPI_Cart_rank(cart, w, &back));
                KT_EQ_INT(back, q);
                w[d] = c[d] - 2 * dims[d];
                KT_MPI(MPI_Cart_rank(cart, w, &back));
                KT_EQ_INT(back, q);
            } else {
                KT_ERRCLASS(MPI_Cart_rank(cart, w, &back), MPI_ERR_ARG);
                w[d] = -1;
                KT_ERRCLASS(MPI_Cart_rank(cart, w, &back), MPI_ERR_ARG);
            }
        }
    }

    /* shifts */
    for (int d = 0; d < nd; d++)
        for (int disp = -3; disp <= 3; disp++) {
            int src, dst, es, ed, c[3];
            KT_MPI(MPI_Cart_shift(cart, d, disp, &src, &dst));
            memcpy(c, mine, sizeof c);
            c[d] = mine[d] + disp;
            if (c[d] >= 0 && c[d] < dims[d]) ed = rank_of(nd, dims, c);
            else if (periods[d]) { c[d] = wrap(c[d], dims[d]); ed = rank_of(nd, dims, c); }
            else ed = MPI_PROC_NULL;
            c[d] = mine[d] - disp;
            if (c[d] >= 0 && c[d] < dims[d]) es = rank_of(nd, dims, c);
            else if (periods[d]) { c[d] = wrap(c[d], dims[d]); es = rank_of(nd, dims, c); }
            else es = MPI_PROC_NULL;
            if (src != es || dst != ed)
                KT_FAIL("nd=%d dims=(%d,%d,%d) periods=(%d,%d,%d): Cart_shift(%d, %d) gave (%d, %d), "
                        "expected (%d, %d)", nd, dims[0], dims[1], dims[2], periods[0], periods[1],
                        nd > 2 ? periods[2] : 0, d, disp, src, dst, es, ed);
        }

    /* sub-grids: every subset of dimensions */
    for (int mask = 0; mask < (1 << nd); mask++) {
        int remain[3], kd[3], kp[3], kc[3], nk = 0, expsize = 1;
        for (int d = 0; d < nd; d++) {
            remain[d] = (mask >> d) & 1;
            if (remain[d]) {
                kd[nk] = dims[d];
                kp[nk] = periods[d] != 0;
                kc[nk] = mine[d];
                nk++;
                expsize *= dims[d];
            }
        }
        MPI_Comm sub;
        KT_MPI(MPI_Cart_sub(cart, remain, &sub));
        KT_CHECK(sub != MPI_COMM_NULL, "Cart_sub gave MPI_COMM_NULL");
        int ss, sr, sn, t;
        KT_MPI(MPI_Comm_size(sub, &ss));
        KT_EQ_INT(ss, expsize);
        KT_MPI(MPI_Comm_rank(sub, &sr));
        KT_EQ_INT(sr, nk ? rank_of(nk, kd, kc) : 0);
        KT_MPI(MPI_Topo_test(sub, &t));
        KT_EQ_INT(t, MPI_CART);
        KT_MPI(MPI_Cartdim_get(sub, &sn));
        KT_EQ_INT(sn, nk);
        if (nk > 0) {
            int sd[3], sp[3], sc[3];
            KT_MPI(MPI_Cart_get(sub, nk, sd, sp, sc));
            for (int k = 0; k < nk; k++) {
                KT_EQ_INT(sd[k], kd[k]);
                KT_EQ_INT(sp[k], kp[k]);
                KT_EQ_INT(sc[k], kc[k]);
            }
        }
        /* the members are the ranks sharing my coordinates in the dropped
         * dimensions: their sum of world ranks, computed by hand */
        long expect = 0;
        for (int q = 0; q < size; q++) {
            int c[3], same = 1;
            coords_of(q, nd, dims, c);
            for (int d = 0; d < nd; d++)
                if (!remain[d] && c[d] != mine[d]) same = 0;
            if (same) expect += q;
        }
        long got = 0, me = rank;
        KT_MPI(MPI_Allreduce(&me, &got, 1, MPI_LONG, MPI_SUM, sub));
        KT_EQ_INT(got, expect);
        KT_MPI(MPI_Comm_free(&sub));
    }
    KT_MPI(MPI_Comm_free(&cart));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    const int p00[3] = { 0, 0, 0 }, p11[3] = { 1, 1, 1 }, p101[3] = { 1, 0, 1 }, p010[3] = { 0, 1, 0 };
    check_grid(2, p00);
    check_grid(2, p11);
    check_grid(2, p010);
    check_grid(3, p00);
    check_grid(3, p101);
    check_grid(1, p11);
    check_grid(1, p00);

    /* a grid smaller than the communicator: the others get MPI_COMM_NULL */
    {
        int n = size > 1 ? size - 1 : 1, dims[2] = { n, 1 }, per[2] = { 1, 0 };
        MPI_Comm c;
        KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 1, &c));
        if (rank >= n) {
            KT_CHECK(c == MPI_COMM_NULL, "rank %d outside a grid of %d got a communicator", rank, n);
        } else {
            int s, r, src, dst;
            KT_CHECK(c != MPI_COMM_NULL, "rank %d inside a grid of %d got MPI_COMM_NULL", rank, n);
            KT_MPI(MPI_Comm_size(c, &s));
            KT_EQ_INT(s, n);
            KT_MPI(MPI_Comm_rank(c, &r));
            KT_EQ_INT(r, rank);
            KT_MPI(MPI_Cart_shift(c, 0, 1, &src, &dst));
            KT_EQ_INT(dst, (rank + 1) % n);
            KT_EQ_INT(src, (rank - 1 + n) % n);
            KT_MPI(MPI_Cart_shift(c, 1, 1, &src, &dst));
            KT_EQ_INT(src, MPI_PROC_NULL);
            KT_EQ_INT(dst, MPI_PROC_NULL);
            /* a ring exchange on it */
            int v = rank, got = -1;
            KT_MPI(MPI_Cart_shift(c, 0, 1, &src, &dst));
            KT_MPI(MPI_Sendrecv(&v, 1, MPI_INT, dst, 5, &got, 1, MPI_INT, src, 5, c, MPI_STATUS_IGNORE));
            KT_EQ_INT(got, src);
            KT_MPI(MPI_Comm_free(&c));
        }
    }

    /* zero dimensions: one process, no neighbours */
    {
        MPI_Comm c;
        KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, 0, NULL, NULL, 0, &c));
        if (rank == 0) {
            int s, nd;
            KT_CHECK(c != MPI_COMM_NULL, "ndims 0 gave rank 0 MPI_COMM_NULL");
            KT_MPI(MPI_Comm_size(c, &s));
            KT_EQ_INT(s, 1);
            KT_MPI(MPI_Cartdim_get(c, &nd));
            KT_EQ_INT(nd, 0);
            KT_MPI(MPI_Comm_free(&c));
        } else {
            KT_CHECK(c == MPI_COMM_NULL, "ndims 0: rank %d got a communicator", rank);
        }
    }

    /* Cart_map */
    {
        int dims[1] = { size }, per[1] = { 0 }, nr;
        KT_MPI(MPI_Cart_map(MPI_COMM_WORLD, 1, dims, per, &nr));
        KT_EQ_INT(nr, rank);
        dims[0] = 1;
        KT_MPI(MPI_Cart_map(MPI_COMM_WORLD, 1, dims, per, &nr));
        KT_EQ_INT(nr, rank == 0 ? 0 : MPI_UNDEFINED);
    }

    /* errors */
    {
        int dims[2] = { size + 1, 1 }, per[2] = { 0, 0 }, c3[3], a, b, st;
        MPI_Comm c = MPI_COMM_NULL;
        KT_ERRCLASS(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &c), MPI_ERR_ARG);
        dims[0] = 0;
        KT_ERRCLASS(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &c), MPI_ERR_DIMS);
        dims[0] = -2;
        KT_ERRCLASS(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &c), MPI_ERR_DIMS);
        KT_ERRCLASS(MPI_Cart_create(MPI_COMM_WORLD, -1, dims, per, 0, &c), MPI_ERR_DIMS);
        KT_ERRCLASS(MPI_Cart_coords(MPI_COMM_WORLD, 0, 3, c3), MPI_ERR_TOPOLOGY);
        KT_ERRCLASS(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &a, &b), MPI_ERR_TOPOLOGY);
        KT_ERRCLASS(MPI_Cartdim_get(MPI_COMM_WORLD, &a), MPI_ERR_TOPOLOGY);
        KT_ERRCLASS(MPI_Cart_rank(MPI_COMM_WORLD, c3, &a), MPI_ERR_TOPOLOGY);
        KT_MPI(MPI_Topo_test(MPI_COMM_WORLD, &st));
        KT_EQ_INT(st, MPI_UNDEFINED);
        KT_MPI(MPI_Topo_test(MPI_COMM_SELF, &st));
        KT_EQ_INT(st, MPI_UNDEFINED);

        dims[0] = size;
        dims[1] = 1;
        KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &c));
        KT_ERRCLASS(MPI_Cart_shift(c, 2, 1, &a, &b), MPI_ERR_ARG);
        KT_ERRCLASS(MPI_Cart_shift(c, -1, 1, &a, &b), MPI_ERR_ARG);
        KT_ERRCLASS(MPI_Cart_coords(c, size, 2, c3), MPI_ERR_RANK);
        KT_ERRCLASS(MPI_Cart_coords(c, -1, 2, c3), MPI_ERR_RANK);
        KT_ERRCLASS(MPI_Cart_coords(c, 0, 1, c3), MPI_ERR_ARG);     /* maxdims too small */
        KT_ERRCLASS(MPI_Graph_neighbors_count(c, 0, &a), MPI_ERR_TOPOLOGY);
        KT_ERRCLASS(MPI_Graphdims_get(c, &a, &b), MPI_ERR_TOPOLOGY);
        KT_ERRCLASS(MPI_Dist_graph_neighbors_count(c, &a, &b, &st), MPI_ERR_TOPOLOGY);
        KT_MPI(MPI_Comm_free(&c));

        int sb = 1, rb[8];
        KT_ERRCLASS(MPI_Neighbor_allgather(&sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD),
                    MPI_ERR_TOPOLOGY);
        KT_ERRCLASS(MPI_Neighbor_alltoall(&sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD),
                    MPI_ERR_TOPOLOGY);
    }

    MPI_Finalize();
    return 0;
}
