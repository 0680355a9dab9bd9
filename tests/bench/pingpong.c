/* pingpong: 2-rank round-trip latency and bandwidth for a list of sizes.
 * Portable MPI (built with each implementation's own mpicc).
 *   pingpong [sizes...]   prints "size_bytes usec_one_way MB_per_s" per size */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int iters_for(long n)
{
    if (n <= 1024) return 20000;
    if (n <= 65536) return 5000;
    if (n <= 1 << 20) return 500;
    return 50;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "pingpong needs exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long sizes_default[] = { 0, 1024, 1 << 20 };
    int nsizes = argc > 1 ? argc - 1 : 3;
    long maxn = 0;
    for (int i = 0; i < nsizes; i++) {
        long n = argc > 1 ? atol(argv[i + 1]) : sizes_default[i];
        if (n > maxn) maxn = n;
    }
    char *buf = malloc(maxn > 0 ? (size_t)maxn : 1);
    memset(buf, 1, maxn > 0 ? (size_t)maxn : 1);
    for (int i = 0; i < nsizes; i++) {
        long n = argc > 1 ? atol(argv[i + 1]) : sizes_default[i];
        int iters = iters_for(n), warm = iters / 10 + 1;
        double t0 = 0;
        for (int it = -warm; it < iters; it++) {
            if (it == 0) {
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
            }
            if (rank == 0) {
                MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        double t = MPI_Wtime() - t0;
        double one_way = t / iters / 2;
        if (rank == 0)
            printf("%ld %.3f %.1f\n", n, one_way * 1e6, n ? n / one_way / 1e6 : 0.0);
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
