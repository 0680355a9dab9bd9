/* Cancel: a pending receive; an unmatched send (eager and rendezvous, the
 * message is then gone); a matched send (cancel fails, data delivered). */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size, flag, n;
    MPI_Status st;
    MPI_Request rq;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks");
    /* receive cancel */
    int x = -1;
    KT_MPI(MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &rq));
    KT_MPI(MPI_Cancel(&rq));
    KT_MPI(MPI_Wait(&rq, &st));
    KT_MPI(MPI_Test_cancelled(&st, &flag));
    KT_CHECK(flag, "receive cancelled");
    KT_CHECK(rq == MPI_REQUEST_NULL, "freed");
    /* persistent receive cancelled, then reused */
    KT_MPI(MPI_Recv_init(&x, 1, MPI_INT, MPI_ANY_SOURCE, 78, MPI_COMM_WORLD, &rq));
    KT_MPI(MPI_Start(&rq));
    KT_MPI(MPI_Cancel(&rq));
    KT_MPI(MPI_Wait(&rq, &st));
    MPI_Test_cancelled(&st, &flag);
    KT_CHECK(flag, "persistent receive cancelled");
    KT_MPI(MPI_Request_free(&rq));

    const int lens[3] = { 4, 60000, 1 << 20 };     /* bytes: eager, large eager, rendezvous */
    char *buf = calloc(1 << 20, 1);
    for (int k = 0; k < 3; k++) {
        if (rank == 0) {
            /* unmatched send: cancel succeeds */
            KT_MPI(MPI_Isend(buf, lens[k], MPI_BYTE, 1, 99, MPI_COMM_WORLD, &rq));
            MPI_Barrier(MPI_COMM_WORLD);           /* the message has reached rank 1 (or its RTS) */
            KT_MPI(MPI_Cancel(&rq));
            KT_MPI(MPI_Wait(&rq, &st));
            MPI_Test_cancelled(&st, &flag);
            KT_CHECK(flag, "unmatched send of %d bytes cancelled", lens[k]);
            /* synchronous send cancel */
            KT_MPI(MPI_Issend(buf, lens[k], MPI_BYTE, 1, 98, MPI_COMM_WORLD, &rq));
            KT_MPI(MPI_Cancel(&rq));
            KT_MPI(MPI_Wait(&rq, &st));
            MPI_Test_cancelled(&st, &flag);
            KT_CHECK(flag, "unmatched ssend of %d bytes cancelled", lens[k]);
            MPI_Barrier(MPI_COMM_WORLD);
            /* matched send: cancel fails */
            for (int i = 0; i < lens[k]; i++) buf[i] = (char)(i * 3 + k);
            KT_MPI(MPI_Isend(buf, lens[k], MPI_BYTE, 1, 5, MPI_COMM_WORLD, &rq));
            MPI_Barrier(MPI_COMM_WORLD);           /* rank 1 received it */
            KT_MPI(MPI_Cancel(&rq));
            KT_MPI(MPI_Wait(&rq, &st));
            MPI_Test_cancelled(&st, &flag);
            KT_CHECK(!flag, "matched send of %d bytes not cancelled", lens[k]);
            MPI_Barrier(MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            /* cancelled messages are gone */
            KT_MPI(MPI_Iprobe(0, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            KT_CHECK(!flag, "cancelled message of %d bytes still there", lens[k]);
            KT_MPI(MPI_Iprobe(0, 98, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            KT_CHECK(!flag, "cancelled ssend of %d bytes still there", lens[k]);
            char *r = malloc(lens[k]);
            KT_MPI(MPI_Recv(r, lens[k], MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &n);
            KT_EQ_INT(n, lens[k]);
            for (int i = 0; i < lens[k]; i++) KT_EQ_INT(r[i], (char)(i * 3 + k));
            free(r);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            for (int i = 0; i < 4; i++) MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
