/* Schedule engines: with kumi_base_sched_engine=thread a non-blocking
 * collective advances while the application computes without calling MPI;
 * with the default (loop) it advances only inside MPI calls.
 *
 * Two ranks, MPI_Iallreduce of 1 MiB: rank 0 waits at once; rank 1 computes
 * for a second without MPI calls, then waits.  Rank 0's part cannot finish
 * before rank 1 has taken the result (a rendezvous: rank 1 must act), so
 * rank 0 finishes long before rank 1's computation ends with the thread
 * engine, and only after it with the loop engine.  Margins are hundreds of
 * milliseconds: this checks that progress happens, not how fast.
 *
 * usage: sched_thread thread|loop */
#include "kt.h"
#include <time.h>

static void compute(double secs)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile double x = 1.0;
    do {
        for (int i = 0; i < 10000; i++) x = x * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 < secs);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(argc == 2 && size == 2, "usage: -n 2 sched_thread thread|loop");
    int thread = !strcmp(argv[1], "thread");

    enum { N = 1 << 17 };                        /* 1 MiB of doubles */
    double *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) { in[i] = rank + i + round; out[i] = -1; }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Request req;
        KT_MPI(MPI_Iallreduce(in, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req));
        double t_done = 0, t_end = 0;
        if (rank == 0) {
            KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            t_done = kt_now();
        } else {
            compute(1.0);
            t_end = kt_now();
            KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
        for (int i = 0; i < N; i++)
            if (out[i] != 1 + 2.0 * (i + round)) KT_FAIL("out[%d] = %g, expected %g", i, out[i], 1 + 2.0 * (i + round));
        if (rank == 0) {
            KT_MPI(MPI_Send(&t_done, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD));
        } else {
            KT_MPI(MPI_Recv(&t_done, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            double early = t_end - t_done;       /* > 0: rank 0 finished before rank 1 computed to the end */
            printf("sched_thread %s round %d: rank 0 finished %.3f s before rank 1's computation ended\n",
                   argv[1], round, early);
            if (thread) KT_CHECK(early > 0.5, "the progress thread did not progress the collective (%.3f s)", early);
            else KT_CHECK(early < 0.2, "the loop engine progressed without MPI calls (%.3f s)?", early);
        }
    }
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
