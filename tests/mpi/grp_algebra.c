/* Group algebra against hand-computed results (any number of ranks). */
#include "kt.h"

static void expect_members(MPI_Group g, MPI_Group world, int n, const int *want, const char *what)
{
    int size, *r = malloc(sizeof(int) * (n + 1)), *w = malloc(sizeof(int) * (n + 1));
    KT_MPI(MPI_Group_size(g, &size));
    if (size != n) KT_FAIL("%s: size %d, expected %d", what, size, n);
    for (int i = 0; i < n; i++) r[i] = i;
    if (n) KT_MPI(MPI_Group_translate_ranks(g, n, r, world, w));
    for (int i = 0; i < n; i++)
        if (w[i] != want[i]) KT_FAIL("%s: member %d is world rank %d, expected %d", what, i, w[i], want[i]);
    free(r);
    free(w);
}

int main(int argc, char **argv)
{
    int me, n, res;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Group world, g1, g2, g3;
    int *want = malloc(sizeof(int) * (2 * n + 2)), *ranks = malloc(sizeof(int) * (n + 1));
    KT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int sz, rk;
    KT_MPI(MPI_Group_size(world, &sz)); KT_EQ_INT(sz, n);
    KT_MPI(MPI_Group_rank(world, &rk)); KT_EQ_INT(rk, me);

    /* evens (incl) and reversed order */
    int ne = 0;
    for (int i = 0; i < n; i += 2) ranks[ne++] = i;
    KT_MPI(MPI_Group_incl(world, ne, ranks, &g1));
    expect_members(g1, world, ne, ranks, "incl evens");
    KT_MPI(MPI_Group_rank(g1, &rk));
    KT_EQ_INT(rk, me % 2 ? MPI_UNDEFINED : me / 2);
    /* odds by range_incl (1, n-1, 2) and by excl of evens */
    int no = 0;
    for (int i = 1; i < n; i += 2) want[no++] = i;
    KT_MPI(MPI_Group_excl(world, ne, ranks, &g2));
    expect_members(g2, world, no, want, "excl evens");
    if (n > 1) {
        int rg[1][3] = { { 1, n - 1, 2 } };
        KT_MPI(MPI_Group_range_incl(world, 1, rg, &g3));
        expect_members(g3, world, no, want, "range_incl odds");
        KT_MPI(MPI_Group_compare(g2, g3, &res)); KT_EQ_INT(res, MPI_IDENT);
        KT_MPI(MPI_Group_free(&g3));
        KT_CHECK(g3 == MPI_GROUP_NULL);
    }
    /* union evens + odds = evens then odds: similar to world (ident for n <= 2) */
    KT_MPI(MPI_Group_union(g1, g2, &g3));
    for (int i = 0; i < ne; i++) want[i] = ranks[i];
    for (int i = 1, k = ne; i < n; i += 2) want[k++] = i;
    expect_members(g3, world, n, want, "union");
    KT_MPI(MPI_Group_compare(g3, world, &res)); KT_EQ_INT(res, n <= 2 ? MPI_IDENT : MPI_SIMILAR);
    KT_MPI(MPI_Group_free(&g3));
    /* intersection evens & odds = empty; difference world - evens = odds */
    KT_MPI(MPI_Group_intersection(g1, g2, &g3));
    KT_MPI(MPI_Group_size(g3, &sz)); KT_EQ_INT(sz, 0);
    KT_MPI(MPI_Group_compare(g3, MPI_GROUP_EMPTY, &res)); KT_EQ_INT(res, MPI_IDENT);
    KT_MPI(MPI_Group_rank(g3, &rk)); KT_EQ_INT(rk, MPI_UNDEFINED);
    KT_MPI(MPI_Group_free(&g3));
    KT_MPI(MPI_Group_difference(world, g1, &g3));
    KT_MPI(MPI_Group_compare(g3, g2, &res)); KT_EQ_INT(res, MPI_IDENT);
    KT_MPI(MPI_Group_free(&g3));
    /* reversed world: similar; translate ranks */
    for (int i = 0; i < n; i++) ranks[i] = n - 1 - i;
    KT_MPI(MPI_Group_incl(world, n, ranks, &g3));
    KT_MPI(MPI_Group_compare(g3, world, &res)); KT_EQ_INT(res, n == 1 ? MPI_IDENT : MPI_SIMILAR);
    KT_MPI(MPI_Group_rank(g3, &rk)); KT_EQ_INT(rk, n - 1 - me);
    int tr[3] = { 0, MPI_PROC_NULL, n - 1 }, out[3];
    KT_MPI(MPI_Group_translate_ranks(g3, 3, tr, world, out));
    KT_EQ_INT(out[0], n - 1); KT_EQ_INT(out[1], MPI_PROC_NULL); KT_EQ_INT(out[2], 0);
    KT_MPI(MPI_Group_translate_ranks(world, 1, tr, g1, out));   /* world 0 is even rank 0 */
    KT_EQ_INT(out[0], 0);
    if (n > 1) {
        tr[0] = 1;
        KT_MPI(MPI_Group_translate_ranks(world, 1, tr, g1, out));
        KT_EQ_INT(out[0], MPI_UNDEFINED);
    }
    /* range_excl: drop (0, n-1, 3) */
    {
        int rg[1][3] = { { 0, n - 1, 3 } }, k = 0;
        for (int i = 0; i < n; i++) if (i % 3) want[k++] = i;
        MPI_Group g4;
        KT_MPI(MPI_Group_range_excl(world, 1, rg, &g4));
        expect_members(g4, world, k, want, "range_excl");
        KT_MPI(MPI_Group_free(&g4));
        /* negative stride: (n-1, 0, -1) is the reversed world */
        int rv[1][3] = { { n - 1, 0, -1 } };
        KT_MPI(MPI_Group_range_incl(world, 1, rv, &g4));
        KT_MPI(MPI_Group_compare(g4, g3, &res)); KT_EQ_INT(res, MPI_IDENT);
        KT_MPI(MPI_Group_free(&g4));
    }
    /* unequal: evens vs world (n > 1) */
    KT_MPI(MPI_Group_compare(g1, world, &res)); KT_EQ_INT(res, n == 1 ? MPI_IDENT : MPI_UNEQUAL);
    /* incl of nothing: MPI_GROUP_EMPTY, freeable */
    MPI_Group e;
    KT_MPI(MPI_Group_incl(world, 0, NULL, &e));
    KT_MPI(MPI_Group_size(e, &sz)); KT_EQ_INT(sz, 0);
    KT_MPI(MPI_Group_free(&e));

    /* errors */
    int bad[2] = { n, 0 };
    MPI_Group x;
    KT_ERRCLASS(MPI_Group_incl(world, 1, bad, &x), MPI_ERR_RANK);
    bad[0] = 0;
    if (n > 1) KT_ERRCLASS(MPI_Group_incl(world, 2, bad, &x), MPI_ERR_RANK);   /* duplicate */
    KT_ERRCLASS(MPI_Group_excl(world, 1, (int[]){ -1 }, &x), MPI_ERR_RANK);
    int zr[1][3] = { { 0, 0, 0 } };
    KT_ERRCLASS(MPI_Group_range_incl(world, 1, zr, &x), MPI_ERR_ARG);
    int orr[1][3] = { { 0, n, 1 } };
    KT_ERRCLASS(MPI_Group_range_incl(world, 1, orr, &x), MPI_ERR_RANK);
    KT_ERRCLASS(MPI_Group_size(MPI_GROUP_NULL, &sz), MPI_ERR_GROUP);
    KT_ERRCLASS(MPI_Group_translate_ranks(world, 1, (int[]){ n }, g1, out), MPI_ERR_RANK);

    KT_MPI(MPI_Group_free(&g3));
    KT_MPI(MPI_Group_free(&g1));
    KT_MPI(MPI_Group_free(&g2));
    KT_MPI(MPI_Group_free(&world));
    free(want);
    free(ranks);
    MPI_Finalize();
    return 0;
}
