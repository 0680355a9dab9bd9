/* matchbench: does matching scale?  (issue 22 item 5; tests/bench/match-bench.sh)
 *
 * 8-byte ping-pong latency between ranks 0 and 1 on MPI_COMM_WORLD, with a
 * receive that always matches the first entry of its sender's queue, while
 *   base   nothing else waits;
 *   comms  N other communicators (MPI_Comm_dup) each have a receive posted
 *          on both ranks that no message matches;
 *   ue     N messages on another communicator wait in the unexpected queues
 *          of ranks 0 and 1 (each sent them to itself, so that no flow
 *          control between the two is involved).
 * Prints "MODE N LATENCY_US" (half the round trip, best of 5 rounds of
 * ITERS round trips).  Plain MPI: built with each implementation's mpicc.
 *
 *   mpiexec -n 2 ./matchbench MODE N ITERS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *mode = argc > 1 ? argv[1] : "base";
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    int iters = argc > 3 ? atoi(argv[3]) : 10000;
    if (strcmp(mode, "base") == 0) n = 0;
    int peer = 1 - rank;
    MPI_Comm *cs = NULL;
    MPI_Request *rq = NULL;
    MPI_Comm other = MPI_COMM_NULL;
    char *sink = NULL;
    if (strcmp(mode, "comms") == 0 && rank < 2) {
        cs = malloc((size_t)n * sizeof *cs);
        rq = malloc((size_t)n * sizeof *rq);
        sink = malloc((size_t)n);
        for (int i = 0; i < n; i++) {
            MPI_Comm_dup(MPI_COMM_WORLD, &cs[i]);
            MPI_Irecv(&sink[i], 1, MPI_CHAR, peer, 99, cs[i], &rq[i]);
        }
    } else if (strcmp(mode, "comms") == 0) {
        for (int i = 0; i < n; i++) {
            MPI_Comm c;
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
            MPI_Comm_free(&c);
        }
    }
    MPI_Request *sq = NULL;
    if (strcmp(mode, "ue") == 0) {
        /* each of ranks 0 and 1 sends itself n messages on another
         * communicator (to itself: no peer's flow control is involved) */
        MPI_Comm_dup(MPI_COMM_WORLD, &other);
        if (rank < 2) {
            char c = 0;
            sq = malloc((size_t)(n + 1) * sizeof *sq);
            for (int i = 0; i < n; i++) MPI_Isend(&c, 0, MPI_CHAR, rank, 7, other, &sq[i]);
            MPI_Isend(&c, 0, MPI_CHAR, rank, 8, other, &sq[n]);
            int flag = 0;                /* all of them here, unexpected */
            MPI_Status st;
            while (!flag) MPI_Iprobe(rank, 8, other, &flag, &st);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double best = 1e30;
    char buf[8] = { 0 };
    for (int round = 0; round < 5 && rank < 2; round++) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (rank == 0) {
                MPI_Send(buf, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        double t = (MPI_Wtime() - t0) / iters / 2 * 1e6;
        if (t < best) best = t;
    }
    if (rank == 0) printf("%s %d %.3f\n", mode, n, best);
    if (cs) {
        for (int i = 0; i < n; i++) {
            MPI_Cancel(&rq[i]);
            MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
            MPI_Comm_free(&cs[i]);
        }
        free(cs);
        free(rq);
        free(sink);
    }
    if (other != MPI_COMM_NULL) {
        if (rank < 2) {
            char c;
            for (int i = 0; i <= n; i++) MPI_Recv(&c, 0, MPI_CHAR, rank, MPI_ANY_TAG, other, MPI_STATUS_IGNORE);
            MPI_Waitall(n + 1, sq, MPI_STATUSES_IGNORE);
            free(sq);
        }
        MPI_Comm_free(&other);
    }
    MPI_Finalize();
    return 0;
}
