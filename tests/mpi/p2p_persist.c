/* Persistent requests restarted many times (eager and rendezvous, standard
 * and synchronous), Startall, Request_free of an active request. */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int lens[2] = { 16, 40000 };                 /* ints */
    for (int k = 0; k < 2; k++) {
        int n = lens[k], iters = k ? 100 : 2000;
        int *s = calloc(n, sizeof(int)), *r = malloc(n * sizeof(int));
        MPI_Request rq[2];
        MPI_Status st[2];
        KT_MPI(MPI_Recv_init(r, n, MPI_INT, left, 5, MPI_COMM_WORLD, &rq[0]));
        if (k) KT_MPI(MPI_Ssend_init(s, n, MPI_INT, right, 5, MPI_COMM_WORLD, &rq[1]));
        else KT_MPI(MPI_Send_init(s, n, MPI_INT, right, 5, MPI_COMM_WORLD, &rq[1]));
        /* inactive: Wait returns at once with an empty status */
        KT_MPI(MPI_Wait(&rq[0], &st[0]));
        KT_EQ_INT(st[0].MPI_SOURCE, MPI_ANY_SOURCE);
        for (int it = 0; it < iters; it++) {
            s[0] = it; s[n - 1] = rank * 100000 + it;
            if (it % 2) { KT_MPI(MPI_Startall(2, rq)); }
            else { KT_MPI(MPI_Start(&rq[0])); KT_MPI(MPI_Start(&rq[1])); }
            KT_MPI(MPI_Waitall(2, rq, st));
            KT_CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL, "persistent requests survive");
            KT_EQ_INT(r[0], it);
            KT_EQ_INT(r[n - 1], left * 100000 + it);
            KT_EQ_INT(st[0].MPI_SOURCE, left);
            int c; MPI_Get_count(&st[0], MPI_INT, &c);
            KT_EQ_INT(c, n);
        }
        KT_MPI(MPI_Request_free(&rq[0]));
        KT_MPI(MPI_Request_free(&rq[1]));
        KT_CHECK(rq[0] == MPI_REQUEST_NULL, "freed");
        free(s); free(r);
    }
    /* Request_free of an active persistent send: the message still arrives */
    int x = 42 + rank, y = -1;
    MPI_Request p;
    KT_MPI(MPI_Send_init(&x, 1, MPI_INT, right, 6, MPI_COMM_WORLD, &p));
    KT_MPI(MPI_Start(&p));
    KT_MPI(MPI_Request_free(&p));
    KT_MPI(MPI_Recv(&y, 1, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_EQ_INT(y, 42 + left);
    /* and of a pending non-blocking send */
    KT_MPI(MPI_Isend(&x, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &p));
    KT_MPI(MPI_Request_free(&p));
    KT_MPI(MPI_Recv(&y, 1, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_EQ_INT(y, 42 + left);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
