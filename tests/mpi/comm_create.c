/* Intracommunicator creation: Comm_create (MPI-3 disjoint groups),
 * Comm_create_group, Comm_split_type (shared), dup_with_info, idup, info,
 * many creations and frees. */
#include "kt.h"

static void check_sum(MPI_Comm c, int expect, const char *what)
{
    int me, one = 1, sum = 0;
    MPI_Comm_rank(c, &me);
    KT_MPI(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c));
    int n;
    MPI_Comm_size(c, &n);
    if (sum != n * (n - 1) / 2) KT_FAIL("%s: sum of ranks %d, expected %d", what, sum, n * (n - 1) / 2);
    KT_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c));
    if (expect >= 0 && sum != expect) KT_FAIL("%s: size %d, expected %d", what, sum, expect);
}

int main(int argc, char **argv)
{
    int me, n, res;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);

    /* Comm_create, MPI-3: evens pass the evens group, odds the odds group */
    int *r = malloc(sizeof(int) * (n + 1)), k = 0;
    for (int i = me % 2; i < n; i += 2) r[k++] = i;
    MPI_Group mine;
    KT_MPI(MPI_Group_incl(world, k, r, &mine));
    MPI_Comm c;
    KT_MPI(MPI_Comm_create(MPI_COMM_WORLD, mine, &c));
    KT_CHECK(c != MPI_COMM_NULL);
    int cr, cs;
    MPI_Comm_rank(c, &cr); MPI_Comm_size(c, &cs);
    KT_EQ_INT(cr, me / 2); KT_EQ_INT(cs, k);
    check_sum(c, k, "Comm_create disjoint");
    /* messages in c do not mix with world: a ring in c while world is quiet */
    int tok = me, got = -1;
    KT_MPI(MPI_Sendrecv(&tok, 1, MPI_INT, (cr + 1) % cs, 5, &got, 1, MPI_INT, (cr + cs - 1) % cs, 5, c, MPI_STATUS_IGNORE));
    KT_EQ_INT(got, r[(cr + cs - 1) % cs]);
    MPI_Group cg;
    KT_MPI(MPI_Comm_group(c, &cg));
    KT_MPI(MPI_Group_compare(cg, mine, &res)); KT_EQ_INT(res, MPI_IDENT);
    MPI_Group_free(&cg);
    KT_MPI(MPI_Comm_free(&c));
    KT_CHECK(c == MPI_COMM_NULL);

    /* Comm_create with a group this rank is not in: MPI_COMM_NULL */
    MPI_Group first;
    KT_MPI(MPI_Group_incl(world, 1, (int[]){ 0 }, &first));
    KT_MPI(MPI_Comm_create(MPI_COMM_WORLD, first, &c));
    if (me == 0) { KT_CHECK(c != MPI_COMM_NULL); check_sum(c, 1, "create {0}"); MPI_Comm_free(&c); }
    else KT_CHECK(c == MPI_COMM_NULL);

    /* Comm_create_group: only the members call it; two groups with tags */
    MPI_Comm cgc;
    KT_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, mine, 7 + me % 2, &cgc));
    check_sum(cgc, k, "Comm_create_group");
    /* and a reversed-order group over the members of mine */
    for (int i = 0; i < k / 2; i++) { int t = r[i]; r[i] = r[k - 1 - i]; r[k - 1 - i] = t; }
    MPI_Group rev;
    KT_MPI(MPI_Group_incl(world, k, r, &rev));
    MPI_Comm crev;
    KT_MPI(MPI_Comm_create_group(cgc, rev, 0, &crev));
    MPI_Comm_rank(crev, &cr);
    KT_EQ_INT(cr, k - 1 - me / 2);
    check_sum(crev, k, "create_group reversed");
    MPI_Comm_free(&crev);
    MPI_Comm_free(&cgc);
    MPI_Group_free(&rev);
    /* rank 0 alone, without the others calling */
    if (me == 0) {
        KT_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, first, 3, &c));
        check_sum(c, 1, "create_group {0}");
        MPI_Comm_free(&c);
    }

    /* split_type shared: every rank is on this host; in an IMPI client's
     * launch (mpiexec --impi-client; tests/scripts/impi_comm.sh) the
     * launch's ranks FIRST .. FIRST + KUMI_SIZE - 1 are: each client is a
     * host of its own */
    int hlo = 0, hhi = n;
    const char *iw = getenv("KUMI_INTERNAL_IMPI_WORLD"), *ls = getenv("KUMI_SIZE");
    if (iw && ls) {
        hlo = atoi(iw);
        hhi = hlo + atoi(ls);
    }
    MPI_Comm sh;
    KT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, n - me, MPI_INFO_NULL, &sh));
    MPI_Comm_rank(sh, &cr);
    KT_EQ_INT(cr, hhi - 1 - me);        /* key reverses the order */
    check_sum(sh, hhi - hlo, "split_type shared");
    MPI_Comm_free(&sh);
    KT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, me == 0 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &sh));
    if (me == 0) KT_CHECK(sh == MPI_COMM_NULL);
    else { check_sum(sh, hhi - hlo - (hlo == 0), "split_type shared without 0"); MPI_Comm_free(&sh); }
    /* HW_UNGUIDED may give MPI_COMM_NULL; when not, it is strictly smaller */
    KT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &sh));
    if (sh != MPI_COMM_NULL) { MPI_Comm_size(sh, &cs); KT_CHECK(cs < n); MPI_Comm_free(&sh); }
    /* HW_GUIDED with mpi_shared_memory is the same as SHARED */
    MPI_Info info;
    KT_MPI(MPI_Info_create(&info));
    KT_MPI(MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory"));
    KT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &sh));
    KT_CHECK(sh != MPI_COMM_NULL);
    check_sum(sh, hhi - hlo, "split_type hw_guided mpi_shared_memory");
    MPI_Comm_free(&sh);
    KT_ERRCLASS(MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &sh), MPI_ERR_ARG);

    /* dup_with_info keeps the given hints; dup keeps the parent's */
    KT_MPI(MPI_Info_set(info, "kumi_test_hint", "yes"));
    MPI_Comm d1, d2;
    KT_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &d1));
    KT_MPI(MPI_Comm_dup(d1, &d2));
    MPI_Info used;
    char val[64];
    int flag = 0;
    KT_MPI(MPI_Comm_get_info(d2, &used));
    KT_MPI(MPI_Info_get(used, "kumi_test_hint", sizeof val - 1, val, &flag));
    KT_CHECK(flag && !strcmp(val, "yes"), "dup lost the hint");
    MPI_Info_free(&used);
    KT_MPI(MPI_Comm_compare(d1, MPI_COMM_WORLD, &res)); KT_EQ_INT(res, MPI_CONGRUENT);
    check_sum(d2, n, "dup of dup_with_info");
    KT_MPI(MPI_Comm_set_info(d2, MPI_INFO_NULL == info ? info : info));
    MPI_Info e;
    KT_MPI(MPI_Info_create(&e));
    KT_MPI(MPI_Comm_set_info(d2, e));
    KT_MPI(MPI_Comm_get_info(d2, &used));
    flag = 1;
    KT_MPI(MPI_Info_get(used, "kumi_test_hint", sizeof val - 1, val, &flag));
    KT_CHECK(!flag, "set_info did not replace the hints");
    MPI_Info_free(&used);
    MPI_Info_free(&e);
    MPI_Comm_free(&d1);
    MPI_Comm_free(&d2);
    MPI_Info_free(&info);

    /* idup: a request that completes */
    MPI_Request rq;
    KT_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &d1, &rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    KT_CHECK(rq == MPI_REQUEST_NULL);
    check_sum(d1, n, "idup");
    MPI_Comm_free(&d1);

    /* many creations and frees: ids are reused, never exhausted */
    int loops = n <= 2 ? 5000 : 500;      /* 5000 > the 4096 ids: they must be reused */
    for (int i = 0; i < loops; i++) {
        KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d1));
        if (i % 1000 == 0) check_sum(d1, n, "dup loop");
        KT_MPI(MPI_Comm_free(&d1));
    }
    /* many alive at once: 100 dups of dups, all distinct contexts */
    MPI_Comm many[100];
    many[0] = MPI_COMM_WORLD;
    for (int i = 1; i < 100; i++) KT_MPI(MPI_Comm_dup(many[i - 1], &many[i]));
    for (int i = 99; i >= 1; i--) {
        int v = me + i, s = 0;
        /* a message on each, received in reverse order: contexts must not mix */
        KT_MPI(MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, many[i]));
        KT_EQ_INT(s, n * (n - 1) / 2 + n * i);
    }
    for (int i = 1; i < 100; i++) MPI_Comm_free(&many[i]);

    MPI_Group_free(&mine);
    MPI_Group_free(&first);
    MPI_Group_free(&world);
    free(r);
    MPI_Finalize();
    return 0;
}
