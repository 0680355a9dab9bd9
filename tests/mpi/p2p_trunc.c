/* Truncation: the receive buffer is filled, the rest dropped; MPI_Recv
 * returns MPI_ERR_TRUNCATE, the status carries it; eager and rendezvous. */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int lens[2] = { 10, 300000 };             /* eager, rendezvous (ints) */
    int peer = size > 1 ? 1 - rank : 0;
    if (rank < 2) {
        for (int k = 0; k < 2; k++) {
            int n = lens[k];
            int *s = malloc(n * sizeof(int)), *r = malloc(n * sizeof(int));
            for (int i = 0; i < n; i++) s[i] = i + 1000 * k;
            MPI_Request sr, rr;
            MPI_Status st;
            /* blocking receive */
            KT_MPI(MPI_Isend(s, n, MPI_INT, peer, 1, MPI_COMM_WORLD, &sr));
            for (int i = 0; i < n; i++) r[i] = -1;
            /* calls that report one status leave its MPI_ERROR field alone (MPI 4.1 sec. 3.2.5) */
            st.MPI_ERROR = 12345;
            KT_ERRCLASS(MPI_Recv(r, n / 2, MPI_INT, peer, 1, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE);
            for (int i = 0; i < n / 2; i++) KT_EQ_INT(r[i], i + 1000 * k);
            KT_EQ_INT(r[n / 2], -1);                 /* nothing written past the buffer */
            KT_EQ_INT(st.MPI_SOURCE, peer);
            KT_EQ_INT(st.MPI_TAG, 1);
            KT_EQ_INT(st.MPI_ERROR, 12345);
            int cls;
            int cnt; MPI_Get_count(&st, MPI_INT, &cnt);
            KT_EQ_INT(cnt, n / 2);
            KT_MPI(MPI_Wait(&sr, MPI_STATUS_IGNORE));
            /* non-blocking receive posted first, then Wait */
            KT_MPI(MPI_Irecv(r, n / 3, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rr));
            MPI_Barrier(MPI_COMM_WORLD);
            KT_MPI(MPI_Isend(s, n, MPI_INT, peer, 2, MPI_COMM_WORLD, &sr));
            st.MPI_ERROR = 54321;
            KT_ERRCLASS(MPI_Wait(&rr, &st), MPI_ERR_TRUNCATE);
            KT_CHECK(rr == MPI_REQUEST_NULL, "request freed after a failed wait");
            KT_EQ_INT(st.MPI_ERROR, 54321);
            MPI_Get_count(&st, MPI_INT, &cnt);
            KT_EQ_INT(cnt, n / 3);
            KT_EQ_INT(r[n / 3 - 1], n / 3 - 1 + 1000 * k);
            KT_MPI(MPI_Wait(&sr, MPI_STATUS_IGNORE));
            /* Waitall: MPI_ERR_IN_STATUS, per-status error */
            MPI_Request rq[2];
            MPI_Status sts[2];
            KT_MPI(MPI_Irecv(r, n - 1, MPI_INT, peer, 3, MPI_COMM_WORLD, &rq[0]));
            KT_MPI(MPI_Isend(s, n, MPI_INT, peer, 3, MPI_COMM_WORLD, &rq[1]));
            KT_ERRCLASS(MPI_Waitall(2, rq, sts), MPI_ERR_IN_STATUS);
            MPI_Error_class(sts[0].MPI_ERROR, &cls);
            KT_EQ_INT(cls, MPI_ERR_TRUNCATE);
            KT_EQ_INT(sts[1].MPI_ERROR, MPI_SUCCESS);
            KT_CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "requests freed");
            free(s); free(r);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    } else {
        for (int k = 0; k < 2; k++) { MPI_Barrier(MPI_COMM_WORLD); MPI_Barrier(MPI_COMM_WORLD); }
    }
    MPI_Finalize();
    return 0;
}
