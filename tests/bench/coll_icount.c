/* coll_icount: MPI_Bcast / MPI_Barrier at 2 ranks for counting instructions per call under
 * callgrind (tests/bench/coll-icount.sh; argv: N KIND).  The setup of coll/sm's segment is an
 * MPI_Allreduce before the counted calls.
 *  bcast:    N rounds of 16 MPI_Bcast (8 B, root 0); rank 1 starts its 16 only after rank 0
 *            finished its 16 (a token), so its data is there; rank 0 then waits for a token back.
 *            Rank 1 checks the bytes (exit 3 on a wrong one).
 *  barrier:  N MPI_Barrier; rank 0 sleeps 2 ms before each: it arrives last.
 *  barrier1: the same with rank 1 sleeping. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100, rank;
    const char *k = argc > 2 ? argv[2] : "bcast";
    char buf[8];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memset(buf, 0, 8);
    { int x = 1, y; MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); }  /* the setup */
    if (!strcmp(k, "bcast")) {
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                for (int j = 0; j < 16; j++) { memset(buf, i + j, 8); MPI_Bcast(buf, 8, MPI_BYTE, 0, MPI_COMM_WORLD); }
                MPI_Send(NULL, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (int j = 0; j < 16; j++) {
                    MPI_Bcast(buf, 8, MPI_BYTE, 0, MPI_COMM_WORLD);
                    for (int b = 0; b < 8; b++) if (buf[b] != (char)(i + j)) return 3;
                }
                MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            }
        }
    } else {
        int late = !strcmp(k, "barrier") ? 0 : 1;
        for (int i = 0; i < n; i++) {
            if (rank == late) usleep(2000);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}
