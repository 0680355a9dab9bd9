/* nbc_icount: 8 B MPI_Iallreduce (MPI_DOUBLE, MPI_SUM) or MPI_Ibcast (8 MPI_BYTE from rank 0),
 * each followed at once by MPI_Wait, N times (argv: N KIND), for counting the instructions of the
 * issuing call under callgrind (tests/bench/nbc-icount.sh): what building and starting the schedule
 * costs.  A warm-up of 10 operations comes first; every result is checked (exit 3 on a wrong one). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100, rank, size;
    const char *k = argc > 2 ? argv[2] : "iallreduce";
    int bc = !strcmp(k, "ibcast");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = -10; i < n; i++) {
        MPI_Request r;
        double in = rank + 1 + i, out = 0;
        char b[8];
        memset(b, rank == 0 ? (char)i : 0, 8);
        if (bc) MPI_Ibcast(b, 8, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
        else MPI_Iallreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        if (bc) { for (int j = 0; j < 8; j++) if (b[j] != (char)i) return 3; }
        else if (out != (double)size * (size + 1) / 2 + (double)size * i) return 3;
    }
    MPI_Finalize();
    return 0;
}
