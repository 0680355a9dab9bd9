/* coll_lact: the collectives coll/lact runs hierarchically (MPI_Barrier,
 * MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Allgather, MPI_Alltoall),
 * checked against values computed from rank and index: every root; counts
 * of 0, 1, 1000 and 100000 bytes; a layout with holes (VEC) against plain
 * ints on the other side; MPI_IN_PLACE; MPI_SUM and a non-commutative user
 * op (2x2 matrix product mod 9973, rank order).  Each runs on
 * MPI_COMM_WORLD and on two communicators made with MPI_Comm_split: ranks
 * reversed (key = -rank: every host's ranks stay consecutive) and evens
 * before odds (a host's ranks are no longer consecutive, so the hierarchy's
 * order differs from the rank order).
 *
 * tests/scripts/coll_lact.sh runs it under fake hosts and clusters
 * (coll_lact_ranks_per_host, coll_lact_hosts_per_cluster, a topology file).
 * Argument: the operations to run (barrier bcast reduce allgather alltoall;
 * default all). */
#include "kt_coll.h"
#include <time.h>

static int me, np;
static const char *what = "", *cname = "";
static long what_count;
static int what_root;

#define EXPECT(idx, got, want) do { long long g_ = (got), w_ = (want); if (g_ != w_) \
    KT_FAIL("%s on %s (count %ld, root %d): datum %ld is %lld, expected %lld", what, cname, \
            what_count, what_root, (long)(idx), g_, w_); } while (0)

/* Layouts and matrices: kt_coll.h. */
static struct kt_lay INT, VEC;
static MPI_Datatype MAT;
static MPI_Op MATMUL;
static void holes(const struct kt_lay *l, const int *b, long n)
{
    long i = kt_hole_written(l, b, n);
    if (i >= 0) EXPECT(i, b[i], KT_HOLE);
}

/* ------------------------------------------------------------ tests */
static void test_barrier(MPI_Comm cm)
{
    what = "barrier";
    for (int i = 0; i < 3; i++) KT_MPI(MPI_Barrier(cm));
    /* The last rank arrives 0.2 s late: nobody may leave before it came. */
    double t0 = MPI_Wtime();
    if (me == np - 1) {
        struct timespec ts = { 0, 200 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    KT_MPI(MPI_Barrier(cm));
    double dt = MPI_Wtime() - t0;
    if (dt < 0.15)
        KT_FAIL("barrier on %s: left after %.3f s, before the last rank arrived", cname, dt);
}

static void test_bcast(MPI_Comm cm)
{
    static const long bytes[] = { 0, 1, 1000, 100000 };
    what = "bcast";
    for (int root = 0; root < np; root++) {
        what_root = root;
        for (int c = 0; c < 4; c++) {
            long n = bytes[c];
            what_count = n;
            char *b = malloc((size_t)n + 1);
            KT_CHECK(b != NULL, "out of memory");
            for (long j = 0; j < n; j++) b[j] = me == root ? (char)kt_val(root, root, j) : 0;
            KT_MPI(MPI_Bcast(b, (int)n, MPI_BYTE, root, cm));
            for (long j = 0; j < n; j++) EXPECT(j, b[j], (char)kt_val(root, root, j));
            free(b);
        }
        /* Derived type at the root (or elsewhere), plain ints on the other side. */
        for (int c = 0; c < 2; c++) {
            long n = c ? 20000 : 2;
            const struct kt_lay *l = (me == root) == (root % 2 == 0) ? &VEC : &INT;
            what_count = n;
            int *b = kt_mk(l, n);
            for (long j = 0; j < n; j++) kt_put(l, b, j, me == root ? kt_val(3, root, j) : -1);
            KT_MPI(MPI_Bcast(b, kt_cnt(l, n), l->t, root, cm));
            for (long j = 0; j < n; j++) EXPECT(j, kt_get(l, b, j), kt_val(3, root, j));
            holes(l, b, n);
            free(b);
        }
    }
}

/* op 0: MPI_SUM on ints (layout l); op 1: MATMUL on MAT.  all: allreduce. */
static void one_reduce(MPI_Comm cm, int opk, const struct kt_lay *l, long n, int root, int all,
                       int inplace)
{
    int per = opk ? 4 : 1;
    long ints = n * per;
    int seed = (int)(n % 13) + root;
    what = all ? (opk ? "allreduce (matmul)" : "allreduce (sum)")
               : (opk ? "reduce (matmul)" : "reduce (sum)");
    what_count = n;
    what_root = all ? -1 : root;
    int *sb = kt_mk(opk ? &INT : l, ints), *rb = kt_mk(opk ? &INT : l, ints);
    const struct kt_lay *L = opk ? &INT : l;
    for (long k = 0; k < n; k++) {
        if (opk) kt_mat_of(seed, me, k, sb + 4 * k);
        else kt_put(L, sb, k, kt_val(seed, me, k));
    }
    int ip = inplace && (all || me == root);
    if (ip) for (long i = 0; i < ints; i++) kt_put(L, rb, i, kt_get(L, sb, i));
    MPI_Datatype dt = opk ? MAT : L->t;
    int count = opk ? (int)n : kt_cnt(L, n);
    const void *s = ip ? MPI_IN_PLACE : sb;
    if (all) KT_MPI(MPI_Allreduce(s, rb, count, dt, opk ? MATMUL : MPI_SUM, cm));
    else KT_MPI(MPI_Reduce(s, rb, count, dt, opk ? MATMUL : MPI_SUM, root, cm));
    if (all || me == root) {
        for (long k = 0; k < n; k++) {
            if (opk) {
                int m[4];
                kt_mat_prod(seed, 0, np - 1, k, m);
                for (int d = 0; d < 4; d++) EXPECT(4 * k + d, rb[4 * k + d], m[d]);
            } else {
                long long sum = 0;
                for (int r = 0; r < np; r++) sum += kt_val(seed, r, k);
                EXPECT(k, kt_get(L, rb, k), (int)sum);
            }
        }
        holes(L, rb, ints);
    }
    free(sb);
    free(rb);
}

static void test_reduce(MPI_Comm cm)
{
    static const long sums[] = { 0, 1, 250, 25000 }, mats[] = { 1, 7, 300 };
    for (int all = 0; all < 2; all++)
        for (int root = 0; root < (all ? 1 : np); root++) {
            for (int c = 0; c < 4; c++) one_reduce(cm, 0, &INT, sums[c], root, all, (c + root) % 2);
            one_reduce(cm, 0, &VEC, 1000, root, all, root % 2);
            for (int c = 0; c < 3; c++) one_reduce(cm, 1, &INT, mats[c], root, all, (c + root) % 2);
        }
}

static void test_allgather(MPI_Comm cm)
{
    static const long counts[] = { 0, 1, 6, 3000 };
    what = "allgather";
    what_root = -1;
    for (int c = 0; c < 4; c++)
        for (int v = 0; v < 3; v++) {
            long n = counts[c] * 2;
            /* v 0: ints; 1: VEC received; 2: ints in place */
            const struct kt_lay *ls = &INT, *lr = v == 1 ? &VEC : &INT;
            what_count = n;
            int *sb = kt_mk(ls, n), *rb = kt_mk(lr, n * np);
            for (long j = 0; j < n; j++) kt_put(ls, sb, j, kt_val(c, me, j));
            for (long j = 0; j < n * np; j++) kt_put(lr, rb, j, -1);
            if (v == 2) for (long j = 0; j < n; j++) kt_put(lr, rb, me * n + j, kt_val(c, me, j));
            KT_MPI(MPI_Allgather(v == 2 ? MPI_IN_PLACE : sb, kt_cnt(ls, n), ls->t, rb, kt_cnt(lr, n),
                                 lr->t, cm));
            for (int r = 0; r < np; r++)
                for (long j = 0; j < n; j++)
                    EXPECT(r * n + j, kt_get(lr, rb, r * n + j), kt_val(c, r, j));
            holes(lr, rb, n * np);
            free(sb);
            free(rb);
        }
}

static void test_alltoall(MPI_Comm cm)
{
    static const long counts[] = { 0, 1, 5, 700, 20000 };
    what = "alltoall";
    what_root = -1;
    for (int c = 0; c < 5; c++)
        for (int v = 0; v < 3; v++) {
            long n = counts[c] * 2;
            /* v 0: ints; 1: VEC sent by even ranks, received by odd ones; 2: in place */
            const struct kt_lay *ls = v == 1 && me % 2 == 0 ? &VEC : &INT;
            const struct kt_lay *lr = v == 1 && me % 2 == 1 ? &VEC : &INT;
            what_count = n;
            int *sb = kt_mk(ls, n * np), *rb = kt_mk(lr, n * np);
            /* block for rank d from rank me: kt_val(d, me, j) */
            for (int d = 0; d < np; d++)
                for (long j = 0; j < n; j++) kt_put(ls, sb, d * n + j, kt_val(d + c, me, j));
            if (v == 2) for (long i = 0; i < n * np; i++) kt_put(lr, rb, i, kt_get(ls, sb, i));
            else for (long i = 0; i < n * np; i++) kt_put(lr, rb, i, -1);
            KT_MPI(MPI_Alltoall(v == 2 ? MPI_IN_PLACE : sb, kt_cnt(ls, n), ls->t, rb, kt_cnt(lr, n),
                                lr->t, cm));
            for (int r = 0; r < np; r++)
                for (long j = 0; j < n; j++)
                    EXPECT(r * n + j, kt_get(lr, rb, r * n + j), kt_val(me + c, r, j));
            holes(lr, rb, n * np);
            free(sb);
            free(rb);
        }
}

static int want(int argc, char **argv, const char *op)
{
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], op)) return 1;
    return 0;
}

static void run(MPI_Comm cm, const char *name, int argc, char **argv)
{
    cname = name;
    KT_MPI(MPI_Comm_rank(cm, &me));
    KT_MPI(MPI_Comm_size(cm, &np));
    if (want(argc, argv, "barrier")) test_barrier(cm);
    if (want(argc, argv, "bcast")) test_bcast(cm);
    if (want(argc, argv, "reduce")) test_reduce(cm);
    if (want(argc, argv, "allgather")) test_allgather(cm);
    if (want(argc, argv, "alltoall")) test_alltoall(cm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    kt_lay_init(&INT, &VEC);
    KT_MPI(MPI_Type_contiguous(4, MPI_INT, &MAT));
    KT_MPI(MPI_Type_commit(&MAT));
    KT_MPI(MPI_Op_create(kt_matmul, 0, &MATMUL));

    int wr, wn;
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &wr));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &wn));
    run(MPI_COMM_WORLD, "MPI_COMM_WORLD", argc, argv);
    MPI_Comm rev, eo;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, -wr, &rev));
    run(rev, "reversed", argc, argv);
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, (wr % 2) * wn + wr, &eo));
    run(eo, "evens-odds", argc, argv);
    KT_MPI(MPI_Comm_free(&rev));
    KT_MPI(MPI_Comm_free(&eo));

    KT_MPI(MPI_Op_free(&MATMUL));
    KT_MPI(MPI_Type_free(&MAT));
    KT_MPI(MPI_Type_free(&VEC.t));
    MPI_Finalize();
    return 0;
}
