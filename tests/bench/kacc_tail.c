/* kacc_tail: where the slow tail of a non-blocking collective comes from
 * (issue 21: the io_uring engine's occasional 10-40 ms t_tot at 1 MiB on a
 * loaded host).  ITERS times: barrier, MPI_Iallreduce of 1 MiB (MPI_DOUBLE,
 * MPI_SUM), a busy compute of COMPUTE_US without MPI calls, MPI_Wait; the
 * slowest rank's time of each, and whether a rank was preempted during it
 * (getrusage's involuntary context switches went up).
 *
 *   mpicc -O2 -o kacc_tail tests/bench/kacc_tail.c
 *   MPI_COMPONENTS=p2p=self,tcp KUMI_BASE_SCHED_ENGINE=uring mpiexec --bind-to core -n 2 ./kacc_tail [ITERS [COMPUTE_US]]
 *
 * Output (rank 0): the iterations over 10 ms and how many of them had a
 * preempted rank, the same for the others, and percentiles of the time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static long nivcsw(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_nivcsw;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, n = 131072, iters = argc > 1 ? atoi(argv[1]) : 200;
    double cus = argc > 2 ? atof(argv[2]) : 1000;
    if (iters < 1) iters = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *s = malloc(sizeof(double) * (size_t)n), *r = malloc(sizeof(double) * (size_t)n);
    double *t = malloc(sizeof(double) * (size_t)iters);
    long *cs = malloc(sizeof(long) * (size_t)iters);
    if (!s || !r || !t || !cs) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < n; i++) s[i] = i;
    volatile double x = 0;
    for (int it = 0; it < iters + 5; it++) {        /* 5 warm-ups */
        MPI_Request q;
        MPI_Barrier(MPI_COMM_WORLD);
        long c0 = nivcsw();
        double t0 = MPI_Wtime();
        MPI_Iallreduce(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
        while (MPI_Wtime() - t0 < cus * 1e-6) x += 1.0;
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        double d = MPI_Wtime() - t0, m;
        long c = nivcsw() - c0, cm;
        MPI_Reduce(&d, &m, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&c, &cm, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
        if (it >= 5) {
            t[it - 5] = m;
            cs[it - 5] = cm;
        }
    }
    if (r[n - 1] != (double)size * (n - 1)) MPI_Abort(MPI_COMM_WORLD, 3);
    if (rank == 0) {
        int big = 0, bigc = 0, small = 0, smallc = 0;
        for (int i = 0; i < iters; i++) {
            if (t[i] > 0.010) big++, bigc += cs[i] > 0;
            else small++, smallc += cs[i] > 0;
        }
        qsort(t, (size_t)iters, sizeof *t, cmp);
        printf("kacc_tail: %d iterations over 10 ms, %d of them with a rank preempted; %d under, %d preempted\n", big,
               bigc, small, smallc);
        printf("kacc_tail: p50 %.0f p90 %.0f p99 %.0f max %.0f us\n", t[iters / 2] * 1e6, t[iters * 9 / 10] * 1e6,
               t[iters * 99 / 100] * 1e6, t[iters - 1] * 1e6);
    }
    free(s);
    free(r);
    free(t);
    free(cs);
    MPI_Finalize();
    return 0;
}
