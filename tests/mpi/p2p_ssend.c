/* Synchronous mode: Issend / Ssend do not complete before the receive is
 * posted (receiver sleeps 300 ms), for 0 bytes, eager and rendezvous sizes. */
#include "kt.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, flag;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks");
    const int lens[3] = { 0, 100, 1 << 20 };
    char *buf = calloc(1 << 20, 1);
    for (int k = 0; k < 3; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Request rq;
            double t0 = MPI_Wtime();
            buf[0] = (char)k;
            KT_MPI(MPI_Issend(buf, lens[k], MPI_BYTE, 1, k, MPI_COMM_WORLD, &rq));
            do {
                KT_MPI(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
                if (!flag && MPI_Wtime() - t0 > 0.2) break;
            } while (!flag);
            KT_CHECK(!flag, "Issend of %d bytes completed before the receive was posted", lens[k]);
            KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            KT_CHECK(MPI_Wtime() - t0 >= 0.25, "Issend completed too early");
            /* blocking Ssend: also waits for the receive */
            t0 = MPI_Wtime();
            KT_MPI(MPI_Ssend(buf, lens[k], MPI_BYTE, 1, 10 + k, MPI_COMM_WORLD));
            KT_CHECK(MPI_Wtime() - t0 >= 0.25, "Ssend of %d bytes returned before the receive", lens[k]);
        } else if (rank == 1) {
            usleep(300000);
            int n;
            MPI_Status st;
            KT_MPI(MPI_Recv(buf, lens[k], MPI_BYTE, 0, k, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &n);
            KT_EQ_INT(n, lens[k]);
            if (n) KT_EQ_INT(buf[0], k);
            usleep(300000);
            KT_MPI(MPI_Recv(buf, lens[k], MPI_BYTE, 0, 10 + k, MPI_COMM_WORLD, &st));
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
