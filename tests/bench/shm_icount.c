/* shm_icount: the small-message paths of 2 ranks on shared memory, N rounds of one kind (argv: N
 * KIND [SIZE]), for counting instructions per call under callgrind (tests/bench/shm-icount.sh):
 *   rate  as mpibench's rate at SIZE B (default 8, at most 64): rank 0 MPI_Isend x128 +
 *         MPI_Waitall, rank 1 MPI_Irecv x128 + MPI_Waitall, then a 0-byte acknowledgement
 *         (MPI_Recv / MPI_Send) per round
 *   lat   ping-pong of SIZE B with MPI_Send / MPI_Recv
 *   recv  rank 0 MPI_Send of SIZE B, then MPI_Recv of a 0-byte answer; rank 1 waits until
 *         rank 0's MPI_Send has returned (a counter in the file FILE, argv[4], that both map)
 *         so that its MPI_Recv finds the message there (no idle polls: the whole receive
 *         path, counted alike in every run), then answers; rank 0's waits are idle polls
 *         (the cost of one round of a wait)
 * Rank 1 checks the bytes it receives (exit 3 on a wrong one). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#define W 128
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000, rank;
    const char *k = argc > 2 ? argv[2] : "rate";
    int sz = argc > 3 ? atoi(argv[3]) : 8;
    char sbuf[64], rbuf[W][64];
    MPI_Request reqs[W];
    if (sz < 0 || sz > 64) sz = 8;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memset(sbuf, 0x5a, sizeof sbuf);
    if (!strcmp(k, "rate")) {
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                for (int j = 0; j < W; j++) MPI_Isend(sbuf, sz, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &reqs[j]);
                MPI_Waitall(W, reqs, MPI_STATUSES_IGNORE);
                MPI_Recv(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                for (int j = 0; j < W; j++) MPI_Irecv(rbuf[j], sz, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &reqs[j]);
                MPI_Waitall(W, reqs, MPI_STATUSES_IGNORE);
                for (int j = 0; j < W; j++) if (memcmp(rbuf[j], sbuf, (size_t)sz)) return 3;
                MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            }
        }
    } else if (!strcmp(k, "lat")) {
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                MPI_Send(sbuf, sz, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf[0], sz, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(rbuf[0], sz, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (memcmp(rbuf[0], sbuf, (size_t)sz)) return 3;
                MPI_Send(sbuf, sz, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
    } else if (!strcmp(k, "recv") && argc > 4) {
        int fd = open(argv[4], O_RDWR);
        volatile int *sent = fd >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
        if (sent == MAP_FAILED) return 4;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                MPI_Send(sbuf, sz, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                __atomic_store_n(sent, i + 1, __ATOMIC_RELEASE);
                MPI_Recv(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                while (__atomic_load_n(sent, __ATOMIC_ACQUIRE) <= i) sched_yield();
                MPI_Recv(rbuf[0], sz, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (memcmp(rbuf[0], sbuf, (size_t)sz)) return 3;
                MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            }
        }
    }
    MPI_Finalize();
    return 0;
}
