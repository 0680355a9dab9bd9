/* impi_intercomm: intercommunicators over two IMPI clients of 2 ranks each
 * (client 0: world ranks 0, 1; client 1: 2, 3), run by
 * tests/scripts/impi_comm.sh with coll_impi_verbose=1, which checks the
 * IMPI context ids coll/impi prints against IMPI's rule (new id = max of
 * IMPI_max_cid over the participants + 1; every participant's
 * IMPI_max_cid becomes the last id taken):
 *   split(world, rank % 2)        halves {0, 2}, {1, 3}      2 (3)        max 3
 *   Intercomm_create(halves)      leaders 0, 1               4 (5), local 6 (7)
 *   Intercomm_merge                                          8 (9)
 *   Comm_dup(intercomm)                                      10 (11), local 12 (13)
 *   split(world, rank / 2)        {0, 1}, {2, 3}: one client each   14 (15)
 *   Intercomm_create              leaders 0, 2 (across)      16 (17), local 18 (19)
 *   Intercomm_merge(high = side)                             20 (21)
 * and that every communicator works (point-to-point across, barrier,
 * allreduce, the merged order). */
#include "kt.h"

static int wrank;

/* ic: an intercommunicator whose remote group's world ranks are rw[0..rn) */
static void check_inter(MPI_Comm ic, const int *rw, int rn, int tag)
{
    int lr, ls, r, flag;
    KT_MPI(MPI_Comm_test_inter(ic, &flag));
    KT_EQ_INT(flag, 1);
    KT_MPI(MPI_Comm_remote_size(ic, &r));
    KT_EQ_INT(r, rn);
    KT_MPI(MPI_Comm_rank(ic, &lr));
    KT_MPI(MPI_Comm_size(ic, &ls));
    KT_EQ_INT(ls, rn);
    /* each rank sends its world rank to the remote rank of its own local rank */
    int got = -1;
    MPI_Status st;
    KT_MPI(MPI_Sendrecv(&wrank, 1, MPI_INT, lr, tag, &got, 1, MPI_INT, MPI_ANY_SOURCE, tag, ic, &st));
    KT_EQ_INT(st.MPI_SOURCE, lr);
    KT_EQ_INT(got, rw[lr]);
    KT_MPI(MPI_Barrier(ic));
}

static void check_merged(MPI_Comm m, const int *order)
{
    int n, r;
    KT_MPI(MPI_Comm_size(m, &n));
    KT_EQ_INT(n, 4);
    KT_MPI(MPI_Comm_rank(m, &r));
    int w[4];
    KT_MPI(MPI_Allgather(&wrank, 1, MPI_INT, w, 1, MPI_INT, m));
    for (int i = 0; i < 4; i++) KT_EQ_INT(w[i], order[i]);
    int sum = 0;
    KT_MPI(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, m));
    KT_EQ_INT(sum, 6);
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    KT_EQ_INT(size, 4);

    /* halves across the clients */
    MPI_Comm half, ic, m, icd;
    int side = wrank % 2;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, side, wrank, &half));
    KT_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - side, 5, &ic));
    int rw1[2] = { 1 - side, 3 - side };
    check_inter(ic, rw1, 2, 7);
    KT_MPI(MPI_Intercomm_merge(ic, side, &m));
    int order1[4] = { 0, 2, 1, 3 };
    check_merged(m, order1);
    KT_MPI(MPI_Comm_dup(ic, &icd));
    check_inter(icd, rw1, 2, 8);
    KT_MPI(MPI_Comm_free(&icd));
    KT_MPI(MPI_Comm_free(&m));
    KT_MPI(MPI_Comm_free(&ic));
    KT_MPI(MPI_Comm_free(&half));

    /* one client each: the union spans the clients */
    MPI_Comm cl;
    side = wrank / 2;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, side, wrank, &cl));
    KT_MPI(MPI_Intercomm_create(cl, 0, MPI_COMM_WORLD, side ? 0 : 2, 6, &ic));
    int rw2[2] = { side ? 0 : 2, side ? 1 : 3 };
    check_inter(ic, rw2, 2, 9);
    KT_MPI(MPI_Intercomm_merge(ic, side, &m));
    int order2[4] = { 0, 1, 2, 3 };
    check_merged(m, order2);
    KT_MPI(MPI_Comm_free(&m));
    KT_MPI(MPI_Comm_free(&ic));
    KT_MPI(MPI_Comm_free(&cl));

    printf("impi_intercomm[%d]: all checks passed\n", wrank);
    MPI_Finalize();
    return 0;
}
