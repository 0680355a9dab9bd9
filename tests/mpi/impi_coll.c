/* impi_coll: the collectives of a job of several IMPI clients (coll/impi;
 * run by tests/scripts/impi_coll.sh with clients of uneven sizes).  On
 * MPI_COMM_WORLD and on a communicator that orders the ranks so that the
 * clients interleave (masters are then not the clients' first world
 * ranks), with every root: Barrier, Bcast, Reduce (commutative and a
 * non-commutative user op), Allreduce, Gather(v), Scatter(v),
 * Allgather(v), Alltoall(v), Reduce_scatter(_block), Scan, some with
 * MPI_IN_PLACE; MPI_INT and MPI_DOUBLE, short and long (N ints, N from the
 * command line: above the IMPI packet size takes the rendezvous path), and a
 * vector type with gaps against plain ints (gather, scatter, bcast,
 * alltoall, allreduce).
 * Every value is checked.
 *
 *   impi_coll SIZE N */
#include "kt.h"
#include <stdint.h>
#include <unistd.h>

static int wrank;

static int val(int r, int i) { return r * 1000 + i * 7 + 1; }

/* Non-commutative: a 2x2 integer matrix product (mod 2^32), in-order. */
typedef struct { unsigned a, b, c, d; } mat;
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    mat *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        mat r = { x[i].a * y[i].a + x[i].b * y[i].c, x[i].a * y[i].b + x[i].b * y[i].d,
                  x[i].c * y[i].a + x[i].d * y[i].c, x[i].c * y[i].b + x[i].d * y[i].d };
        y[i] = r;
    }
}
static mat mat_of(int r) { mat m = { (unsigned)r + 1, 2, (unsigned)r * 3, 1 }; return m; }

static void run(MPI_Comm comm, const char *name, int N)
{
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    size_t room = (size_t)(N > 2 ? N : 2) * (size_t)n;   /* reduce_scatter below takes up to 2 per rank */
    int *a = malloc(sizeof(int) * room), *b = malloc(sizeof(int) * room);
    KT_CHECK(a && b, "out of memory");

    KT_MPI(MPI_Barrier(comm));
    for (int root = 0; root < n; root++) {
        /* Bcast */
        for (int i = 0; i < N; i++) a[i] = me == root ? val(root, i) : -1;
        KT_MPI(MPI_Bcast(a, N, MPI_INT, root, comm));
        for (int i = 0; i < N; i++) KT_CHECK(a[i] == val(root, i), "%s bcast root %d: [%d] = %d", name, root, i, a[i]);
        double d[3] = { me == root ? 1.5 * root : 0, me == root ? -0.25 : 0, me == root ? 1e300 : 0 };
        KT_MPI(MPI_Bcast(d, 3, MPI_DOUBLE, root, comm));
        KT_CHECK(d[0] == 1.5 * root && d[1] == -0.25 && d[2] == 1e300, "%s bcast double root %d", name, root);
        /* Reduce, sum */
        for (int i = 0; i < N; i++) a[i] = val(me, i);
        KT_MPI(MPI_Reduce(a, b, N, MPI_INT, MPI_SUM, root, comm));
        if (me == root)
            for (int i = 0; i < N; i++) {
                long long s = 0;
                for (int r = 0; r < n; r++) s += val(r, i);
                KT_CHECK(b[i] == (int)s, "%s reduce root %d: [%d] = %d, want %lld", name, root, i, b[i], s);
            }
        /* Reduce in place, max */
        for (int i = 0; i < N; i++) b[i] = val(me, i) * (me == 1 ? 3 : 1);
        KT_MPI(MPI_Reduce(me == root ? MPI_IN_PLACE : b, me == root ? b : NULL, N, MPI_INT, MPI_MAX, root, comm));
        if (me == root)
            for (int i = 0; i < N; i++) {
                int want = val(0, i);
                for (int r = 1; r < n; r++) want = val(r, i) * (r == 1 ? 3 : 1) > want ? val(r, i) * (r == 1 ? 3 : 1) : want;
                KT_CHECK(b[i] == want, "%s reduce max in place root %d: [%d] = %d want %d", name, root, i, b[i], want);
            }
        /* Reduce, non-commutative */
        MPI_Op mop;
        MPI_Datatype mt;
        MPI_Type_contiguous(4, MPI_UNSIGNED, &mt);
        MPI_Type_commit(&mt);
        MPI_Op_create(matmul, 0, &mop);
        mat mine = mat_of(me), res;
        KT_MPI(MPI_Reduce(&mine, &res, 1, mt, mop, root, comm));
        if (me == root) {
            mat want = mat_of(n - 1);
            for (int r = n - 2; r >= 0; r--) {
                mat x = mat_of(r);
                int one = 1;
                matmul(&x, &want, &one, NULL);
            }
            KT_CHECK(!memcmp(&want, &res, sizeof res), "%s non-commutative reduce root %d", name, root);
        }
        MPI_Op_free(&mop);
        MPI_Type_free(&mt);
        /* Gather */
        for (int i = 0; i < N; i++) a[i] = val(me, i);
        memset(b, 0xff, sizeof(int) * (size_t)N * (size_t)n);
        KT_MPI(MPI_Gather(a, N, MPI_INT, b, N, MPI_INT, root, comm));
        if (me == root)
            for (int r = 0; r < n; r++)
                for (int i = 0; i < N; i++)
                    KT_CHECK(b[r * N + i] == val(r, i), "%s gather root %d: block %d [%d] = %d", name, root, r, i, b[r * N + i]);
        /* Gather in place */
        if (me == root) for (int i = 0; i < N; i++) b[root * N + i] = val(root, i) + 5;
        KT_MPI(MPI_Gather(me == root ? MPI_IN_PLACE : a, N, MPI_INT, b, N, MPI_INT, root, comm));
        int nx = root + 1 == n ? 0 : root + 1;
        if (me == root) KT_CHECK(b[root * N] == val(root, 0) + 5 && b[nx * N] == val(nx, 0), "%s gather in place", name);
        /* Gatherv: rank r gives r % 3 + 1 ints, blocks in reverse order */
        int *rc = malloc(sizeof(int) * (size_t)n), *ds = malloc(sizeof(int) * (size_t)n), tot = 0;
        for (int r = n - 1; r >= 0; r--) {
            rc[r] = r % 3 + 1;
            ds[r] = tot;
            tot += rc[r];
        }
        int *gv = malloc(sizeof(int) * (size_t)tot), mv[3];
        for (int i = 0; i < 3; i++) mv[i] = val(me, i);
        KT_MPI(MPI_Gatherv(mv, rc[me], MPI_INT, gv, rc, ds, MPI_INT, root, comm));
        if (me == root)
            for (int r = 0; r < n; r++)
                for (int i = 0; i < rc[r]; i++) KT_CHECK(gv[ds[r] + i] == val(r, i), "%s gatherv root %d rank %d", name, root, r);
        /* Scatterv: the mirror */
        for (int r = 0; r < n; r++)
            for (int i = 0; i < rc[r]; i++) gv[ds[r] + i] = me == root ? val(r, i) + root : -1;
        int sv[3] = { -1, -1, -1 };
        KT_MPI(MPI_Scatterv(gv, rc, ds, MPI_INT, sv, rc[me], MPI_INT, root, comm));
        for (int i = 0; i < rc[me]; i++) KT_CHECK(sv[i] == val(me, i) + root, "%s scatterv root %d [%d] = %d", name, root, i, sv[i]);
        free(rc);
        free(ds);
        free(gv);
        /* Scatter */
        for (int r = 0; r < n; r++)
            for (int i = 0; i < N; i++) b[r * N + i] = me == root ? val(r, i) - root : -1;
        for (int i = 0; i < N; i++) a[i] = -7;
        KT_MPI(MPI_Scatter(b, N, MPI_INT, a, N, MPI_INT, root, comm));
        for (int i = 0; i < N; i++) KT_CHECK(a[i] == val(me, i) - root, "%s scatter root %d [%d] = %d", name, root, i, a[i]);
        /* Scatter in place at the root */
        KT_MPI(MPI_Scatter(b, N, MPI_INT, me == root ? MPI_IN_PLACE : a, N, MPI_INT, root, comm));
        KT_CHECK(a[0] == val(me, 0) - root, "%s scatter in place root %d", name, root);
        if (me == root) KT_CHECK(b[root * N] == val(root, 0) - root, "%s scatter in place: the root's block changed", name);
    }
    /* Allreduce (and in place) */
    for (int i = 0; i < N; i++) a[i] = val(me, i);
    KT_MPI(MPI_Allreduce(a, b, N, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < N; i++) {
        long long s = 0;
        for (int r = 0; r < n; r++) s += val(r, i);
        KT_CHECK(b[i] == (int)s, "%s allreduce [%d] = %d want %lld", name, i, b[i], s);
    }
    KT_MPI(MPI_Allreduce(MPI_IN_PLACE, a, N, MPI_INT, MPI_SUM, comm));
    KT_CHECK(a[N - 1] == b[N - 1], "%s allreduce in place", name);
    double dm = me * 0.5, dr;
    KT_MPI(MPI_Allreduce(&dm, &dr, 1, MPI_DOUBLE, MPI_MAX, comm));
    KT_CHECK(dr == (n - 1) * 0.5, "%s allreduce max double %g", name, dr);
    /* Allgather (and in place) */
    for (int i = 0; i < N; i++) a[i] = val(me, i);
    KT_MPI(MPI_Allgather(a, N, MPI_INT, b, N, MPI_INT, comm));
    for (int r = 0; r < n; r++)
        for (int i = 0; i < N; i++) KT_CHECK(b[r * N + i] == val(r, i), "%s allgather block %d [%d]", name, r, i);
    memset(b, 0, sizeof(int) * (size_t)N * (size_t)n);
    for (int i = 0; i < N; i++) b[me * N + i] = val(me, i) + 1;
    KT_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, N, MPI_INT, comm));
    for (int r = 0; r < n; r++) KT_CHECK(b[r * N + N - 1] == val(r, N - 1) + 1, "%s allgather in place block %d", name, r);
    /* Allgatherv: rank r gives r % 2 + 1 ints */
    {
        int *rc = malloc(sizeof(int) * (size_t)n), *ds = malloc(sizeof(int) * (size_t)n), tot = 0, mv[2] = { val(me, 0), val(me, 1) };
        for (int r = 0; r < n; r++) {
            rc[r] = r % 2 + 1;
            ds[r] = tot + 1;                 /* a gap before each block */
            tot += rc[r] + 1;
        }
        int *gv = calloc((size_t)tot, sizeof(int));
        KT_MPI(MPI_Allgatherv(mv, rc[me], MPI_INT, gv, rc, ds, MPI_INT, comm));
        for (int r = 0; r < n; r++) {
            KT_CHECK(gv[ds[r] - 1] == 0, "%s allgatherv: a gap was written", name);
            for (int i = 0; i < rc[r]; i++) KT_CHECK(gv[ds[r] + i] == val(r, i), "%s allgatherv rank %d [%d]", name, r, i);
        }
        /* Alltoallv: rank me sends (me + p) % 3 ints to p */
        int *sc = malloc(sizeof(int) * (size_t)n), *sd = malloc(sizeof(int) * (size_t)n), st = 0, rt = 0;
        for (int p = 0; p < n; p++) {
            sc[p] = (me + p) % 3;
            sd[p] = st;
            st += sc[p];
            rc[p] = (p + me) % 3;
            ds[p] = rt;
            rt += rc[p];
        }
        int *s = malloc(sizeof(int) * (size_t)(st + 1)), *r = malloc(sizeof(int) * (size_t)(rt + 1));
        for (int p = 0; p < n; p++)
            for (int i = 0; i < sc[p]; i++) s[sd[p] + i] = me * 100 + p * 10 + i;
        KT_MPI(MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, ds, MPI_INT, comm));
        for (int p = 0; p < n; p++)
            for (int i = 0; i < rc[p]; i++) KT_CHECK(r[ds[p] + i] == p * 100 + me * 10 + i, "%s alltoallv from %d [%d] = %d", name, p, i, r[ds[p] + i]);
        free(s);
        free(r);
        free(sc);
        free(sd);
        free(rc);
        free(ds);
        free(gv);
    }
    /* Alltoall (and in place) */
    for (int p = 0; p < n; p++)
        for (int i = 0; i < N; i++) b[p * N + i] = me * 1000 + p * 10 + i % 10;
    int *c = malloc(sizeof(int) * (size_t)N * (size_t)n);
    KT_MPI(MPI_Alltoall(b, N, MPI_INT, c, N, MPI_INT, comm));
    for (int p = 0; p < n; p++)
        for (int i = 0; i < N; i++) KT_CHECK(c[p * N + i] == p * 1000 + me * 10 + i % 10, "%s alltoall from %d [%d]", name, p, i);
    KT_MPI(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, N, MPI_INT, comm));
    KT_CHECK(!memcmp(b, c, sizeof(int) * (size_t)N * (size_t)n), "%s alltoall in place", name);
    free(c);
    /* Reduce_scatter_block and Reduce_scatter */
    for (int p = 0; p < n; p++)
        for (int i = 0; i < N; i++) b[p * N + i] = val(me, i) + p;
    KT_MPI(MPI_Reduce_scatter_block(b, a, N, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < N; i++) {
        long long s = 0;
        for (int r = 0; r < n; r++) s += val(r, i) + me;
        KT_CHECK(a[i] == (int)s, "%s reduce_scatter_block [%d] = %d want %lld", name, i, a[i], s);
    }
    {
        int *rc = malloc(sizeof(int) * (size_t)n), tot = 0, off = 0;
        for (int r = 0; r < n; r++) {
            rc[r] = r % 2 + 1;
            if (r < me) off += rc[r];
            tot += rc[r];
        }
        for (int i = 0; i < tot; i++) b[i] = me + i;
        KT_MPI(MPI_Reduce_scatter(MPI_IN_PLACE, b, rc, MPI_INT, MPI_SUM, comm));
        for (int i = 0; i < rc[me]; i++) KT_CHECK(b[i] == n * (n - 1) / 2 + n * (off + i), "%s reduce_scatter in place [%d] = %d", name, i, b[i]);
        free(rc);
    }
    /* Scan: sum, and the non-commutative product keeps rank order */
    for (int i = 0; i < N; i++) a[i] = val(me, i);
    KT_MPI(MPI_Scan(a, b, N, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < N; i++) {
        long long s = 0;
        for (int r = 0; r <= me; r++) s += val(r, i);
        KT_CHECK(b[i] == (int)s, "%s scan [%d] = %d want %lld", name, i, b[i], s);
    }
    {
        MPI_Op mop;
        MPI_Datatype mt;
        MPI_Type_contiguous(4, MPI_UNSIGNED, &mt);
        MPI_Type_commit(&mt);
        MPI_Op_create(matmul, 0, &mop);
        mat mine = mat_of(me), res = mine;
        KT_MPI(MPI_Scan(MPI_IN_PLACE, &res, 1, mt, mop, comm));
        mat want = mat_of(me);
        for (int r = me - 1; r >= 0; r--) {
            mat x = mat_of(r);
            int one = 1;
            matmul(&x, &want, &one, NULL);
        }
        KT_CHECK(!memcmp(&want, &res, sizeof res), "%s non-commutative scan", name);
        MPI_Op_free(&mop);
        MPI_Type_free(&mt);
    }
    /* a derived type with gaps (2 ints, stride 2: extent 3 ints) against plain ints */
    {
        MPI_Datatype vt;
        MPI_Type_vector(2, 1, 2, MPI_INT, &vt);
        MPI_Type_commit(&vt);
        int *g = malloc(sizeof(int) * 3 * (size_t)n), two[2], *h = malloc(sizeof(int) * 2 * (size_t)n);
        for (int root = 0; root < n; root++) {
            for (int i = 0; i < 3 * n; i++) g[i] = -9;
            two[0] = val(me, 0);
            two[1] = val(me, 1);
            KT_MPI(MPI_Gather(two, 2, MPI_INT, g, 1, vt, root, comm));
            if (me == root)
                for (int r = 0; r < n; r++)
                    KT_CHECK(g[3 * r] == val(r, 0) && g[3 * r + 1] == -9 && g[3 * r + 2] == val(r, 1),
                             "%s gather into a vector type, root %d, block %d: %d %d %d", name, root, r, g[3 * r],
                             g[3 * r + 1], g[3 * r + 2]);
            for (int r = 0; r < n; r++) g[3 * r] = me == root ? r + 100 * root : -1, g[3 * r + 2] = me == root ? -r : -1;
            KT_MPI(MPI_Scatter(g, 1, vt, two, 2, MPI_INT, root, comm));
            KT_CHECK(two[0] == me + 100 * root && two[1] == -me, "%s scatter of a vector type, root %d: %d %d", name, root,
                     two[0], two[1]);
            for (int r = 0; r < 3 * n; r++) g[r] = me == root ? r * 11 : -1;
            KT_MPI(MPI_Bcast(g, n, vt, root, comm));
            for (int r = 0; r < n; r++)
                KT_CHECK(g[3 * r] == 33 * r && g[3 * r + 2] == 33 * r + 22 && (me == root || g[3 * r + 1] == -1),
                         "%s bcast of a vector type, root %d, element %d", name, root, r);
        }
        for (int p = 0; p < n; p++) g[3 * p] = me * 10 + p, g[3 * p + 1] = -5, g[3 * p + 2] = -(me * 10 + p);
        KT_MPI(MPI_Alltoall(g, 1, vt, h, 2, MPI_INT, comm));
        for (int p = 0; p < n; p++)
            KT_CHECK(h[2 * p] == p * 10 + me && h[2 * p + 1] == -(p * 10 + me), "%s alltoall of a vector type from %d", name, p);
        int in[3] = { me, -1, 2 * me }, out[3] = { -7, -7, -7 };
        KT_MPI(MPI_Allreduce(in, out, 1, vt, MPI_SUM, comm));
        KT_CHECK(out[0] == n * (n - 1) / 2 && out[1] == -7 && out[2] == n * (n - 1), "%s allreduce of a vector type: %d %d %d",
                 name, out[0], out[1], out[2]);
        free(g);
        free(h);
        MPI_Type_free(&vt);
    }
    KT_MPI(MPI_Barrier(comm));
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(argc == 3, "usage: impi_coll SIZE N");
    KT_EQ_INT(size, atoi(argv[1]));
    int N = atoi(argv[2]);
    run(MPI_COMM_WORLD, "world", 1);
    run(MPI_COMM_WORLD, "world", N);
    /* the clients interleaved: even world ranks first, reversed, then the odd ones */
    MPI_Comm mix;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, (wrank % 2 ? size : 0) + (size - wrank), &mix));
    run(mix, "mixed", 3);
    MPI_Comm_free(&mix);
    /* a communicator of one rank per world rank pair (some inside one client) */
    MPI_Comm half;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, wrank < size / 2, wrank, &half));
    run(half, "half", 2);
    MPI_Comm_free(&half);
    printf("impi_coll: rank %d of %d: all checks passed\n", wrank, size);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
