/* Waitany / Waitsome / Testany / Testsome / Testall / Request_get_status,
 * with MPI_REQUEST_NULL and inactive persistent requests in the arrays. */
#include "kt.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, idx, flag, out, ind[8];
    MPI_Status st, sts[8];
    MPI_Request rq[8];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks");
    /* all null: empty results */
    for (int i = 0; i < 4; i++) rq[i] = MPI_REQUEST_NULL;
    KT_MPI(MPI_Waitany(4, rq, &idx, &st));
    KT_EQ_INT(idx, MPI_UNDEFINED);
    KT_EQ_INT(st.MPI_SOURCE, MPI_ANY_SOURCE);
    KT_EQ_INT(st.MPI_TAG, MPI_ANY_TAG);
    KT_MPI(MPI_Testany(4, rq, &idx, &flag, &st));
    KT_CHECK(flag && idx == MPI_UNDEFINED, "testany on nulls");
    KT_MPI(MPI_Waitsome(4, rq, &out, ind, sts));
    KT_EQ_INT(out, MPI_UNDEFINED);
    KT_MPI(MPI_Testsome(4, rq, &out, ind, sts));
    KT_EQ_INT(out, MPI_UNDEFINED);
    KT_MPI(MPI_Testall(4, rq, &flag, sts));
    KT_CHECK(flag, "testall on nulls");
    KT_MPI(MPI_Waitall(4, rq, sts));
    KT_EQ_INT(sts[3].MPI_SOURCE, MPI_ANY_SOURCE);
    KT_MPI(MPI_Wait(&rq[0], &st));
    KT_EQ_INT(st.MPI_TAG, MPI_ANY_TAG);
    KT_MPI(MPI_Test(&rq[0], &flag, &st));
    KT_CHECK(flag, "test on null");
    KT_MPI(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
    KT_CHECK(flag, "get_status on null");

    int v[4] = { -1, -1, -1, -1 };
    if (rank == 0) {
        /* receives from rank 1 with tags 3,2,1,0 arriving in order 0,1,2,3 */
        rq[0] = MPI_REQUEST_NULL;
        for (int i = 1; i < 5; i++) KT_MPI(MPI_Irecv(&v[i - 1], 1, MPI_INT, 1, 4 - i, MPI_COMM_WORLD, &rq[i]));
        KT_MPI(MPI_Testall(5, rq, &flag, sts));
        KT_CHECK(!flag, "nothing sent yet");
        KT_MPI(MPI_Testany(5, rq, &idx, &flag, &st));
        KT_CHECK(!flag, "nothing sent yet (testany)");
        KT_MPI(MPI_Request_get_status(rq[1], &flag, &st));
        KT_CHECK(!flag, "nothing sent yet (get_status)");
        MPI_Barrier(MPI_COMM_WORLD);              /* go */
        int seen = 0;
        /* Waitany returns the completed ones; each only once */
        for (int k = 0; k < 2; k++) {
            KT_MPI(MPI_Waitany(5, rq, &idx, &st));
            KT_CHECK(idx >= 1 && idx <= 4, "index %d", idx);
            KT_CHECK(rq[idx] == MPI_REQUEST_NULL, "freed");
            KT_EQ_INT(st.MPI_TAG, 4 - idx);
            KT_EQ_INT(v[idx - 1], 100 + 4 - idx);
            seen |= 1 << idx;
        }
        /* Waitsome collects the rest */
        while (seen != 0x1e) {
            KT_MPI(MPI_Waitsome(5, rq, &out, ind, sts));
            KT_CHECK(out >= 1 && out != MPI_UNDEFINED, "outcount %d", out);
            for (int j = 0; j < out; j++) {
                KT_CHECK(!(seen & (1 << ind[j])), "index %d twice", ind[j]);
                seen |= 1 << ind[j];
                KT_EQ_INT(sts[j].MPI_TAG, 4 - ind[j]);
                KT_EQ_INT(v[ind[j] - 1], 100 + 4 - ind[j]);
            }
        }
        KT_MPI(MPI_Waitsome(5, rq, &out, ind, sts));
        KT_EQ_INT(out, MPI_UNDEFINED);
        /* Testall completes everything at once, with an inactive persistent request */
        MPI_Request p;
        KT_MPI(MPI_Recv_init(&v[0], 1, MPI_INT, 1, 9, MPI_COMM_WORLD, &p));
        rq[0] = p;
        for (int i = 1; i < 4; i++) KT_MPI(MPI_Irecv(&v[i], 1, MPI_INT, 1, 10 + i, MPI_COMM_WORLD, &rq[i]));
        MPI_Barrier(MPI_COMM_WORLD);
        do KT_MPI(MPI_Testall(4, rq, &flag, sts)); while (!flag);
        KT_CHECK(rq[0] == p, "persistent request kept");
        KT_EQ_INT(sts[0].MPI_SOURCE, MPI_ANY_SOURCE);   /* inactive: empty status */
        for (int i = 1; i < 4; i++) { KT_CHECK(rq[i] == MPI_REQUEST_NULL, "freed"); KT_EQ_INT(v[i], 10 + i); KT_EQ_INT(sts[i].MPI_SOURCE, 1); }
        /* Testsome with a completed send and a Request_get_status that does not free */
        KT_MPI(MPI_Isend(&v[1], 1, MPI_INT, 1, 20, MPI_COMM_WORLD, &rq[0]));
        do KT_MPI(MPI_Request_get_status(rq[0], &flag, &st)); while (!flag);
        KT_CHECK(rq[0] != MPI_REQUEST_NULL, "get_status does not free");
        rq[1] = MPI_REQUEST_NULL;
        KT_MPI(MPI_Testsome(2, rq, &out, ind, sts));
        KT_EQ_INT(out, 1);
        KT_EQ_INT(ind[0], 0);
        KT_CHECK(rq[0] == MPI_REQUEST_NULL, "freed");
        KT_MPI(MPI_Request_free(&p));
    } else if (rank == 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        for (int t = 0; t < 4; t++) {
            int x = 100 + t;
            KT_MPI(MPI_Send(&x, 1, MPI_INT, 0, t, MPI_COMM_WORLD));
            usleep(20000);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 1; i < 4; i++) { int x = 10 + i; KT_MPI(MPI_Send(&x, 1, MPI_INT, 0, 10 + i, MPI_COMM_WORLD)); }
        KT_MPI(MPI_Recv(&v[0], 1, MPI_INT, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
