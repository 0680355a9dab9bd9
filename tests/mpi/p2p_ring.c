/* More ranks than cores: a ring of blocking Sendrecv for thousands of
 * iterations must finish in bounded time (blocked ranks yield and sleep). */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int iters = argc > 1 ? atoi(argv[1]) : 3000;
    double t0 = MPI_Wtime();
    long sum = 0;
    for (int it = 0; it < iters; it++) {
        int x = rank + it, y = -1;
        KT_MPI(MPI_Sendrecv(&x, 1, MPI_INT, right, it & 0xff, &y, 1, MPI_INT, left, it & 0xff, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
        if (y != left + it) KT_FAIL("iteration %d: got %d", it, y);
        sum += y;
    }
    double t = MPI_Wtime() - t0;
    KT_CHECK(t < 60.0, "%d iterations took %.1f s", iters, t);
    KT_CHECK(sum > 0 || iters == 0, "sum");
    MPI_Finalize();
    return 0;
}
