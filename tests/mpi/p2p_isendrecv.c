/* MPI-4 MPI_Isendrecv and MPI_Isendrecv_replace: ring exchanges of several
 * sizes (eager and rendezvous), with MPI_PROC_NULL ends, Test until done,
 * Waitall over several, and Request_free before completion. */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int sizes[] = { 0, 1, 1000, 50000 };
    for (int k = 0; k < 4; k++) {
        int n = sizes[k];
        int *s = malloc(sizeof(int) * (n + 1)), *r = malloc(sizeof(int) * (n + 1));
        for (int i = 0; i < n; i++) { s[i] = rank * 100000 + i; r[i] = -1; }
        MPI_Request rq;
        MPI_Status st;
        KT_MPI(MPI_Isendrecv(s, n, MPI_INT, right, 3, r, n, MPI_INT, left, 3, MPI_COMM_WORLD, &rq));
        int flag = 0;
        while (!flag) KT_MPI(MPI_Test(&rq, &flag, &st));
        KT_CHECK(rq == MPI_REQUEST_NULL, "request freed");
        KT_EQ_INT(st.MPI_SOURCE, left);
        KT_EQ_INT(st.MPI_TAG, 3);
        int c; MPI_Get_count(&st, MPI_INT, &c);
        KT_EQ_INT(c, n);
        for (int i = 0; i < n; i++) KT_EQ_INT(r[i], left * 100000 + i);
        /* replace, in place */
        for (int i = 0; i < n; i++) s[i] = rank * 100000 + i;
        KT_MPI(MPI_Isendrecv_replace(s, n, MPI_INT, right, 4, left, 4, MPI_COMM_WORLD, &rq));
        KT_MPI(MPI_Wait(&rq, &st));
        for (int i = 0; i < n; i++) KT_EQ_INT(s[i], left * 100000 + i);
        /* a line, not a ring: the ends talk to MPI_PROC_NULL */
        int lp = rank == 0 ? MPI_PROC_NULL : rank - 1, rp = rank == size - 1 ? MPI_PROC_NULL : rank + 1;
        for (int i = 0; i < n; i++) { s[i] = rank + i; r[i] = -7; }
        KT_MPI(MPI_Isendrecv(s, n, MPI_INT, rp, 5, r, n, MPI_INT, lp, 5, MPI_COMM_WORLD, &rq));
        KT_MPI(MPI_Wait(&rq, &st));
        if (lp == MPI_PROC_NULL) {
            KT_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
            if (n) KT_EQ_INT(r[0], -7);
        } else {
            for (int i = 0; i < n; i++) KT_EQ_INT(r[i], lp + i);
        }
        free(s); free(r);
    }
    /* several at once, completed by Waitall; one freed early */
    int a[4], b[4];
    MPI_Request rs[4];
    for (int j = 0; j < 4; j++) {
        a[j] = rank * 10 + j;
        KT_MPI(MPI_Isendrecv(&a[j], 1, MPI_INT, right, 10 + j, &b[j], 1, MPI_INT, left, 10 + j, MPI_COMM_WORLD, &rs[j]));
    }
    KT_MPI(MPI_Waitall(4, rs, MPI_STATUSES_IGNORE));
    for (int j = 0; j < 4; j++) KT_EQ_INT(b[j], left * 10 + j);
    int x = rank, y = -1;
    MPI_Request fr;
    KT_MPI(MPI_Isendrecv(&x, 1, MPI_INT, right, 20, &y, 1, MPI_INT, left, 20, MPI_COMM_WORLD, &fr));
    KT_MPI(MPI_Request_free(&fr));
    KT_CHECK(fr == MPI_REQUEST_NULL, "freed handle");
    /* the freed exchange still happens: a later one on the same tag comes after it (non-overtaking) */
    int z = -1, x2 = rank + 1000;
    KT_MPI(MPI_Sendrecv(&x2, 1, MPI_INT, right, 20, &z, 1, MPI_INT, left, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_EQ_INT(z, left + 1000);
    KT_EQ_INT(y, left);
    MPI_Finalize();
    return 0;
}
