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
#include "kt.h"
#include <time.h>

#define P 9973
#define HOLE (-55)

static int me, np;
static const char *what = "", *cname = "";
static long what_count;
static int what_root;

#define EXPECT(idx, got, want) do { long long g_ = (got), w_ = (want); if (g_ != w_) \
    KT_FAIL("%s on %s (count %ld, root %d): datum %ld is %lld, expected %lld", what, cname, \
            what_count, what_root, (long)(idx), g_, w_); } while (0)

static int val(int seed, int r, long k) { return seed * 7 + r * 100003 + (int)(k % 100000); }

/* INT: plain ints.  VEC: MPI_Type_vector(2, 1, 2, MPI_INT): ints 0 and 2 of
 * every 3 carry data, int 1 is a hole that must stay HOLE (extent 3 ints
 * after a resize, so consecutive elements do not overlap). */
struct lay { MPI_Datatype t; int per; };
static struct lay INT, VEC;

static long phys(const struct lay *l, long j)
{
    return l->per == 1 ? j : (j / 2) * 3 + (j % 2) * 2;
}
static int *mk(const struct lay *l, long n)
{
    long cells = l->per == 1 ? n : n / 2 * 3;
    int *b = malloc(sizeof(int) * (size_t)(cells + 1));
    KT_CHECK(b != NULL, "out of memory");
    for (long i = 0; i <= cells; i++) b[i] = HOLE;
    return b;
}
static void put(const struct lay *l, int *b, long j, int v) { b[phys(l, j)] = v; }
static int get(const struct lay *l, const int *b, long j) { return b[phys(l, j)]; }
static void holes(const struct lay *l, const int *b, long n)
{
    if (l->per == 2)
        for (long e = 0; e < n / 2; e++) EXPECT(-1 - e, b[e * 3 + 1], HOLE);
}
static int cnt(const struct lay *l, long n) { return (int)(n / l->per); }

/* ------------------------------------------------------------ matrices */
static MPI_Datatype MAT;
static MPI_Op MATMUL;
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const int *a = in;
    int *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c0 = (a[0] * b[0] + a[1] * b[2]) % P, c1 = (a[0] * b[1] + a[1] * b[3]) % P;
        int c2 = (a[2] * b[0] + a[3] * b[2]) % P, c3 = (a[2] * b[1] + a[3] * b[3]) % P;
        b[0] = c0; b[1] = c1; b[2] = c2; b[3] = c3;
    }
}
static void mat_of(int seed, int r, long k, int m[4])
{
    m[0] = (r + 2 + seed) % 7 + 1; m[1] = (int)((k + r) % 5);
    m[2] = (int)(k % 3); m[3] = (r * 3 + (int)(k % 11)) % 9 + 1;
}
/* x_0 x_1 ... x_(np-1) of element k (rank order). */
static void mat_prod(int seed, long k, int out[4])
{
    out[0] = 1; out[1] = 0; out[2] = 0; out[3] = 1;
    for (int r = 0; r < np; r++) {
        int m[4], one = 1;
        mat_of(seed, r, k, m);
        matmul(out, m, &one, NULL);
        memcpy(out, m, sizeof m);
    }
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
            for (long j = 0; j < n; j++) b[j] = me == root ? (char)val(root, root, j) : 0;
            KT_MPI(MPI_Bcast(b, (int)n, MPI_BYTE, root, cm));
            for (long j = 0; j < n; j++) EXPECT(j, b[j], (char)val(root, root, j));
            free(b);
        }
        /* Derived type at the root (or elsewhere), plain ints on the other side. */
        for (int c = 0; c < 2; c++) {
            long n = c ? 20000 : 2;
            const struct lay *l = (me == root) == (root % 2 == 0) ? &VEC : &INT;
            what_count = n;
            int *b = mk(l, n);
            for (long j = 0; j < n; j++) put(l, b, j, me == root ? val(3, root, j) : -1);
            KT_MPI(MPI_Bcast(b, cnt(l, n), l->t, root, cm));
            for (long j = 0; j < n; j++) EXPECT(j, get(l, b, j), val(3, root, j));
            holes(l, b, n);
            free(b);
        }
    }
}

/* op 0: MPI_SUM on ints (layout l); op 1: MATMUL on MAT.  all: allreduce. */
static void one_reduce(MPI_Comm cm, int opk, const struct lay *l, long n, int root, int all,
                       int inplace)
{
    int per = opk ? 4 : 1;
    long ints = n * per;
    int seed = (int)(n % 13) + root;
    what = all ? (opk ? "allreduce (matmul)" : "allreduce (sum)")
               : (opk ? "reduce (matmul)" : "reduce (sum)");
    what_count = n;
    what_root = all ? -1 : root;
    int *sb = mk(opk ? &INT : l, ints), *rb = mk(opk ? &INT : l, ints);
    const struct lay *L = opk ? &INT : l;
    for (long k = 0; k < n; k++) {
        if (opk) mat_of(seed, me, k, sb + 4 * k);
        else put(L, sb, k, val(seed, me, k));
    }
    int ip = inplace && (all || me == root);
    if (ip) for (long i = 0; i < ints; i++) put(L, rb, i, get(L, sb, i));
    MPI_Datatype dt = opk ? MAT : L->t;
    int count = opk ? (int)n : cnt(L, n);
    const void *s = ip ? MPI_IN_PLACE : sb;
    if (all) KT_MPI(MPI_Allreduce(s, rb, count, dt, opk ? MATMUL : MPI_SUM, cm));
    else KT_MPI(MPI_Reduce(s, rb, count, dt, opk ? MATMUL : MPI_SUM, root, cm));
    if (all || me == root) {
        for (long k = 0; k < n; k++) {
            if (opk) {
                int m[4];
                mat_prod(seed, k, m);
                for (int d = 0; d < 4; d++) EXPECT(4 * k + d, rb[4 * k + d], m[d]);
            } else {
                long long sum = 0;
                for (int r = 0; r < np; r++) sum += val(seed, r, k);
                EXPECT(k, get(L, rb, k), (int)sum);
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
            const struct lay *ls = &INT, *lr = v == 1 ? &VEC : &INT;
            what_count = n;
            int *sb = mk(ls, n), *rb = mk(lr, n * np);
            for (long j = 0; j < n; j++) put(ls, sb, j, val(c, me, j));
            for (long j = 0; j < n * np; j++) put(lr, rb, j, -1);
            if (v == 2) for (long j = 0; j < n; j++) put(lr, rb, me * n + j, val(c, me, j));
            KT_MPI(MPI_Allgather(v == 2 ? MPI_IN_PLACE : sb, cnt(ls, n), ls->t, rb, cnt(lr, n),
                                 lr->t, cm));
            for (int r = 0; r < np; r++)
                for (long j = 0; j < n; j++)
                    EXPECT(r * n + j, get(lr, rb, r * n + j), val(c, r, j));
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
            const struct lay *ls = v == 1 && me % 2 == 0 ? &VEC : &INT;
            const struct lay *lr = v == 1 && me % 2 == 1 ? &VEC : &INT;
            what_count = n;
            int *sb = mk(ls, n * np), *rb = mk(lr, n * np);
            /* block for rank d from rank me: val(d, me, j) */
            for (int d = 0; d < np; d++)
                for (long j = 0; j < n; j++) put(ls, sb, d * n + j, val(d + c, me, j));
            if (v == 2) for (long i = 0; i < n * np; i++) put(lr, rb, i, get(ls, sb, i));
            else for (long i = 0; i < n * np; i++) put(lr, rb, i, -1);
            KT_MPI(MPI_Alltoall(v == 2 ? MPI_IN_PLACE : sb, cnt(ls, n), ls->t, rb, cnt(lr, n),
                                lr->t, cm));
            for (int r = 0; r < np; r++)
                for (long j = 0; j < n; j++)
                    EXPECT(r * n + j, get(lr, rb, r * n + j), val(me + c, r, j));
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
    MPI_Datatype v2;
    KT_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &v2));
    KT_MPI(MPI_Type_create_resized(v2, 0, 3 * sizeof(int), &VEC.t));
    KT_MPI(MPI_Type_commit(&VEC.t));
    KT_MPI(MPI_Type_free(&v2));
    VEC.per = 2;
    INT.t = MPI_INT;
    INT.per = 1;
    KT_MPI(MPI_Type_contiguous(4, MPI_INT, &MAT));
    KT_MPI(MPI_Type_commit(&MAT));
    KT_MPI(MPI_Op_create(matmul, 0, &MATMUL));

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
