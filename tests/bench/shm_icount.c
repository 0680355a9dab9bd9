/* shm_icount: the small-message paths of 2 ranks on shared memory, N rounds of one kind (argv: N
 * KIND), for counting instructions per call under callgrind (tests/bench/shm-icount.sh):
 *   rate  as mpibench's rate at 8 B: rank 0 MPI_Isend x128 + MPI_Waitall, rank 1 MPI_Irecv x128
 *         + MPI_Waitall, then a 0-byte acknowledgement (MPI_Recv / MPI_Send) per round
 *   lat   ping-pong of 8 B with MPI_Send / MPI_Recv
 * Rank 1 checks the bytes it receives (exit 3 on a wrong one). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define W 128
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000, rank;
    const char *k = argc > 2 ? argv[2] : "rate";
    char sbuf[8], rbuf[W][8];
    MPI_Request reqs[W];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memset(sbuf, 0x5a, sizeof sbuf);
    if (!strcmp(k, "rate")) {
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                for (int j = 0; j < W; j++) MPI_Isend(sbuf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &reqs[j]);
                MPI_Waitall(W, reqs, MPI_STATUSES_IGNORE);
                MPI_Recv(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                for (int j = 0; j < W; j++) MPI_Irecv(rbuf[j], 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &reqs[j]);
                MPI_Waitall(W, reqs, MPI_STATUSES_IGNORE);
                for (int j = 0; j < W; j++) if (memcmp(rbuf[j], sbuf, 8)) return 3;
                MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            }
        }
    } else if (!strcmp(k, "lat")) {
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                MPI_Send(sbuf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf[0], 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(rbuf[0], 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (memcmp(rbuf[0], sbuf, 8)) return 3;
                MPI_Send(sbuf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
    }
    MPI_Finalize();
    return 0;
}
