/* tcp_lost: rank 1 dies in the middle of a large transfer to rank 0.
 * Used by tests/scripts/tcp_lost.sh: the job must end (mpiexec stops it)
 * with rank 1's failure reported, and rank 0 must not crash.  Rank 0
 * progresses slowly (and the script makes the socket buffers small) so that
 * the transfer is still under way when rank 1 exits. */
#include "kt.h"
#include <unistd.h>
#include <time.h>

int main(int argc, char **argv)
{
    int rank, size;
    size_t n = (size_t)64 << 20;
    char *buf;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "run with 2 ranks");
    buf = malloc(n);
    KT_CHECK(buf, "out of memory");
    memset(buf, 1, n);
    if (rank == 0) {
        MPI_Request req;
        int flag = 0;
        KT_MPI(MPI_Irecv(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &req));
        for (int i = 0; i < 100 && !flag; i++) {    /* progress slowly */
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
            usleep(10000);
        }
        if (!flag) MPI_Wait(&req, MPI_STATUS_IGNORE);
        fprintf(stderr, "tcp_lost: rank 0 completed a receive whose sender died\n");
        return 2;
    } else {
        MPI_Request req;
        int flag = 0;
        struct timespec t0, t;
        KT_MPI(MPI_Isend(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &req));
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {                             /* let part of the data go out */
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while (!flag && (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 300);
        fprintf(stderr, "tcp_lost: rank 1 exits now (send %s)\n", flag ? "complete" : "under way");
        _exit(3);
    }
}
