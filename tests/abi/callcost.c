/* callcost: the cost of one call, for the foreign-ABI shims' overhead (issue 17): built with
 * Kumi's mpicc (native) and with a foreign mpicc (through a shim), same source.  Prints ns per
 * call of MPI_Comm_rank (a handle-only call), MPI_Recv from MPI_PROC_NULL (a call with a
 * status), a request's life (MPI_Isend to MPI_PROC_NULL and MPI_Wait: a request handle made, read
 * and given back, with a status) and, at 2 ranks or more, half the round trip of an 8-byte ping-pong between ranks 0
 * and 1.  Best of 5 repetitions. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, r, n = argc > 1 ? atoi(argv[1]) : 10000000;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double best_rank = 1e30, best_recv = 1e30, best_req = 1e30, best_pp = 1e30;
    MPI_Request req;
    char buf[8] = { 0 };
    MPI_Status st;
    for (int rep = 0; rep < 5; rep++) {
        double t = MPI_Wtime();
        for (int i = 0; i < n; i++) MPI_Comm_rank(MPI_COMM_WORLD, &r);
        t = MPI_Wtime() - t;
        if (t < best_rank) best_rank = t;
        t = MPI_Wtime();
        for (int i = 0; i < n / 4; i++) MPI_Recv(buf, 8, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
        t = MPI_Wtime() - t;
        if (t < best_recv) best_recv = t;
        t = MPI_Wtime();
        for (int i = 0; i < n / 4; i++) {
            MPI_Isend(buf, 8, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, &st);
        }
        t = MPI_Wtime() - t;
        if (t < best_req) best_req = t;
        if (size >= 2 && rank < 2) {
            int m = n / 500;
            MPI_Barrier(MPI_COMM_SELF);
            t = MPI_Wtime();
            for (int i = 0; i < m; i++) {
                if (rank == 0) {
                    MPI_Send(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                    MPI_Recv(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &st);
                } else {
                    MPI_Recv(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
                    MPI_Send(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
                }
            }
            t = (MPI_Wtime() - t) / m / 2;
            if (t < best_pp) best_pp = t;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) {
        printf("MPI_Comm_rank %.2f ns\n", best_rank / n * 1e9);
        printf("MPI_Recv(MPI_PROC_NULL) %.2f ns\n", best_recv / (n / 4) * 1e9);
        printf("MPI_Isend+MPI_Wait(MPI_PROC_NULL) %.2f ns\n", best_req / (n / 4) * 1e9);
        if (size >= 2) printf("pingpong 8 B %.3f us\n", best_pp * 1e6);
    }
    MPI_Finalize();
    return 0;
}
