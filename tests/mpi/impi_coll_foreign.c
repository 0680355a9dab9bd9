/* impi_coll_foreign: Kumi's side of tests/scripts/impi_coll.sh's run with
 * a made-up foreign IMPI implementation (tools/impi_server/impi_testcoll:
 * the last world rank F, one proc of IMPI client 1; Kumi's N ranks are
 * client 0).  The collectives of impi_testcoll's script, in its order, on
 * MPI_COMM_WORLD; the values the foreign proc sends are checked here, the
 * bytes Kumi sends are checked there.
 *
 *   impi_coll_foreign            the foreign proc is the last rank (2 clients)
 *   impi_coll_foreign tree F     5 clients, the foreign proc is world rank F:
 *                                Barrier, Bcast roots 0 and F, Reduce SUM
 *                                roots 0 and F (binomial trees: 5 masters)
 *   impi_coll_foreign comms      2 clients, Kumi's 3 ranks and the foreign proc
 *                                F = 3: communicators made by IMPI's context-id
 *                                rule (sheet §5.2-§5.7), point-to-point and
 *                                collectives on them (comms() below) */
#include "kt.h"

/* non-commutative: a - b style, order matters */
static void ncop(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) b[i] = 2 * a[i] - b[i];
}

/* comms: impi_testcoll -comms 1's script (tools/impi_server/impi_testcoll.c),
 * which checks the pk_cid of every packet: dup (cid 2), split (4), create
 * (6), frees (barriers), dup again (8: IMPI_max_cid is not lowered). */
static int comms(int me, int n)
{
    int F = n - 1, v = -1;
    MPI_Status st;
    KT_CHECK(n == 4 && me < F, "comms: 3 Kumi ranks and the foreign proc as rank 3, not %d of %d", me, n);
    MPI_Comm d, s, c = MPI_COMM_NULL, d2;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    if (me == 0) {
        v = 4242;
        KT_MPI(MPI_Send(&v, 1, MPI_INT, F, 7, d));
    }
    if (me == 1) {
        KT_MPI(MPI_Recv(&v, 1, MPI_INT, F, 8, d, &st));
        KT_CHECK(v == F * 1000 + 8 && st.MPI_SOURCE == F && st.MPI_TAG == 8, "dup: got %d from %d", v, st.MPI_SOURCE);
    }
    KT_MPI(MPI_Barrier(d));
    /* colour 1: {F (key -3), 1}; colour 0: {2, 0} inside Kumi's client */
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &s));
    int sr, ss;
    MPI_Comm_rank(s, &sr);
    MPI_Comm_size(s, &ss);
    KT_CHECK(ss == 2 && sr == (me == 1 ? 1 : me == 0 ? 1 : 0), "split: rank %d of %d", sr, ss);
    if (me == 1) {
        int b[2] = { 0, 0 };
        KT_MPI(MPI_Bcast(b, 2, MPI_INT, 0, s));
        KT_CHECK(b[0] == 55 && b[1] == -5, "split: bcast from the foreign proc: %d %d", b[0], b[1]);
        v = 77;
        KT_MPI(MPI_Send(&v, 1, MPI_INT, 0, 9, s));
    } else {
        KT_MPI(MPI_Barrier(s));
    }
    /* create: {1, 2, F} */
    MPI_Group wg, g;
    int mem[3] = { 1, 2, F };
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_incl(wg, 3, mem, &g);
    KT_MPI(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    KT_CHECK((me == 0) == (c == MPI_COMM_NULL), "create: rank %d got %s", me, c == MPI_COMM_NULL ? "no communicator" : "one");
    if (me == 2) {
        KT_MPI(MPI_Recv(&v, 1, MPI_INT, 2, 10, c, &st));
        KT_CHECK(v == 99 && st.MPI_SOURCE == 2, "create: got %d from %d", v, st.MPI_SOURCE);
    }
    if (c != MPI_COMM_NULL) KT_MPI(MPI_Barrier(c));
    KT_MPI(MPI_Comm_free(&d));
    KT_MPI(MPI_Comm_free(&s));
    if (c != MPI_COMM_NULL) KT_MPI(MPI_Comm_free(&c));
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d2));
    if (me == 2) KT_MPI(MPI_Send(&me, 1, MPI_INT, F, 11, d2));
    printf("impi_coll_foreign: rank %d of %d (comms): all checks passed\n", me, n);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

int main(int argc, char **argv)
{
    int me, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc == 2 && !strcmp(argv[1], "comms")) return comms(me, n);
    if (argc == 3 && !strcmp(argv[1], "tree")) {
        int F = atoi(argv[2]), b[3] = { -1, -1, -1 };
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (me == 0) b[0] = 1, b[1] = -2, b[2] = 0x01020304;
        KT_MPI(MPI_Bcast(b, 3, MPI_INT, 0, MPI_COMM_WORLD));
        KT_CHECK(b[0] == 1 && b[1] == -2 && b[2] == 0x01020304, "tree bcast root 0: %d %d %d", b[0], b[1], b[2]);
        KT_MPI(MPI_Bcast(b, 3, MPI_INT, F, MPI_COMM_WORLD));
        KT_CHECK(b[0] == F * 10 + 1 && b[1] == -2 && b[2] == 0x01020304, "tree bcast root F: %d %d %d", b[0], b[1], b[2]);
        int x = me + 1, y = 0;
        KT_MPI(MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
        if (me == 0) KT_CHECK(y == n * (n + 1) / 2, "tree reduce root 0: %d, want %d", y, n * (n + 1) / 2);
        KT_MPI(MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, F, MPI_COMM_WORLD));
        printf("impi_coll_foreign: rank %d of %d (tree): all checks passed\n", me, n);
        fflush(stdout);
        MPI_Finalize();
        return 0;
    }
    int F = n - 1, NK = n - 1;
    KT_CHECK(me < F, "rank %d: the foreign proc must be the last rank", me);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* Bcast, roots 0, 1, F */
    int roots[3] = { 0, 1, F };
    for (int k = 0; k < 3; k++) {
        int root = roots[k], b[3] = { -1, -1, -1 };
        if (me == root) b[0] = root * 10 + 1, b[1] = -2, b[2] = 0x01020304;
        KT_MPI(MPI_Bcast(b, 3, MPI_INT, root, MPI_COMM_WORLD));
        KT_CHECK(b[0] == root * 10 + 1 && b[1] == -2 && b[2] == 0x01020304, "bcast root %d: %d %d %d", root, b[0], b[1], b[2]);
    }
    /* Reduce SUM, roots 0, 1, F */
    int s1 = 0, s2 = 0;
    for (int r = 0; r <= F; r++) s1 += r + 1, s2 += 100 * r;
    for (int k = 0; k < 3; k++) {
        int root = roots[k], x[2] = { me + 1, 100 * me }, y[2] = { 0, 0 };
        KT_MPI(MPI_Reduce(x, y, 2, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        if (me == root) KT_CHECK(y[0] == s1 && y[1] == s2, "reduce root %d: %d %d, want %d %d", root, y[0], y[1], s1, s2);
    }
    /* Reduce, non-commutative, root F */
    MPI_Op op;
    MPI_Op_create(ncop, 0, &op);
    int x = me + 1, y = 0;
    KT_MPI(MPI_Reduce(&x, &y, 1, MPI_INT, op, F, MPI_COMM_WORLD));
    MPI_Op_free(&op);
    /* Allreduce */
    x = me + 1;
    KT_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    KT_CHECK(y == s1, "allreduce: %d, want %d", y, s1);
    /* Gather, roots 0 and F */
    int *g = calloc((size_t)n, sizeof(int));
    x = me * 7;
    KT_MPI(MPI_Gather(&x, 1, MPI_INT, g, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (me == 0)
        for (int r = 0; r < n; r++) KT_CHECK(g[r] == r * 7, "gather: [%d] = %d", r, g[r]);
    KT_MPI(MPI_Gather(&x, 1, MPI_INT, g, 1, MPI_INT, F, MPI_COMM_WORLD));
    /* Scatter, root 0 */
    for (int r = 0; r < n; r++) g[r] = r * 3;
    KT_MPI(MPI_Scatter(g, 1, MPI_INT, &y, 1, MPI_INT, 0, MPI_COMM_WORLD));
    KT_CHECK(y == me * 3, "scatter: %d", y);
    /* Alltoall */
    int *s = malloc(sizeof(int) * (size_t)n), *r = malloc(sizeof(int) * (size_t)n);
    for (int p = 0; p < n; p++) s[p] = me * 100 + p;
    KT_MPI(MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD));
    for (int p = 0; p < n; p++) KT_CHECK(r[p] == p * 100 + me, "alltoall from %d: %d", p, r[p]);
    /* Scan */
    x = me + 1;
    KT_MPI(MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    KT_CHECK(y == (me + 1) * (me + 2) / 2, "scan: %d", y);
    printf("impi_coll_foreign: rank %d of %d (%d Kumi ranks): all checks passed\n", me, n, NK);
    fflush(stdout);
    free(g);
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
