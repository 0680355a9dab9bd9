/* More ranks than cores: a rank blocked in a wait must sleep (doorbell), not
 * spin, and must wake at once when a message comes.
 * 1. Rank 0 sleeps 1.5 s outside MPI, then sends to everyone; the others wait
 *    in MPI_Recv and must use little CPU meanwhile (spinning ranks would each
 *    burn ~2/(n-1) of a core: > 0.4 s at 8 ranks on 2 cores).
 * 2. A token (alternately 1 byte and 64 KiB: inline and CMA/ACK paths) goes
 *    around the ring 500 times; with no working doorbell every hop would
 *    wait for the progress engine's poll timeout (> 80 s); must take < 20 s. */
#include "kt.h"
#include <time.h>
#include <unistd.h>

static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *buf = calloc(1, 65536);
    KT_CHECK(buf != NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        usleep(1500000);
        for (int p = 1; p < size; p++) KT_MPI(MPI_Send(buf, 1, MPI_BYTE, p, 1, MPI_COMM_WORLD));
    } else {
        double c0 = cpu(), t0 = MPI_Wtime();
        KT_MPI(MPI_Recv(buf, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double c = cpu() - c0, t = MPI_Wtime() - t0;
        KT_CHECK(t > 1.0, "waited only %.3f s", t);
        /* a rank that sleeps on a file descriptor uses almost nothing; one with no fd to
         * sleep on (SHM_SLEEP_MAX_CPU set by its list line) naps 1 ms at a time; a
         * spinning rank would use > 0.4 s */
        const char *mx = getenv("SHM_SLEEP_MAX_CPU");
        double maxc = mx ? atof(mx) : 0.05;
        KT_CHECK(c < maxc, "a blocked rank used %.3f s of CPU in %.3f s (spinning?)", c, t);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int it = 0; it < 500; it++) {
        int n = (it & 1) ? 65536 : 1;
        if (rank == 0) {
            buf[0] = (char)it;
            KT_MPI(MPI_Send(buf, n, MPI_BYTE, right, 2, MPI_COMM_WORLD));
            KT_MPI(MPI_Recv(buf, n, MPI_BYTE, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            KT_EQ_INT(buf[0], (char)(it + size - 1));
        } else {
            KT_MPI(MPI_Recv(buf, n, MPI_BYTE, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            buf[0]++;
            KT_MPI(MPI_Send(buf, n, MPI_BYTE, right, 2, MPI_COMM_WORLD));
        }
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0) KT_CHECK(t < 20.0, "500 token rounds took %.1f s", t);
    free(buf);
    MPI_Finalize();
    return 0;
}
