/* gpu_coll_bench: blocking MPI_Bcast / MPI_Reduce / MPI_Allreduce of device
 * buffers (the stand-in driver of tests/scripts/lib/fakecuda.c, named by
 * KUMI_ACCEL_CUDA_LIBRARY) for tests/bench/gpu-coll-ab.sh.  Arguments: BYTES
 * REPS.  Prints, at rank 0, "op seconds-per-call" (the median of REPS, after
 * one warm-up) for each op, then "maxrss KB" (getrusage: the host memory the
 * staging needed at its peak).  GCB_FORM=nb: MPI_Ibcast / MPI_Ireduce /
 * MPI_Iallreduce and MPI_Wait instead. */
#include <mpi.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t bytes = argc > 1 ? (size_t)atoll(argv[1]) : 64u << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 5, n = (int)(bytes / sizeof(float));
    void *h = dlopen(getenv("KUMI_ACCEL_CUDA_LIBRARY"), RTLD_NOW);
    int (*alloc)(unsigned long long *, size_t) = h ? (int (*)(unsigned long long *, size_t))dlsym(h, "cuMemAlloc_v2") : NULL;
    unsigned long long s, r;
    if (!alloc || alloc(&s, bytes) || alloc(&r, bytes)) { fprintf(stderr, "no stand-in driver\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    void *sb = (void *)(uintptr_t)s, *rb = (void *)(uintptr_t)r;
    double *t = malloc(sizeof(double) * (size_t)reps);
    const char *ops[] = { "bcast", "reduce", "allreduce" }, *fm = getenv("GCB_FORM");
    int nb = fm && fm[0] == 'n';
    MPI_Request q = MPI_REQUEST_NULL;
    for (int o = 0; o < 3; o++) {
        for (int i = -1; i < reps; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (nb && o == 0) MPI_Ibcast(rb, n, MPI_FLOAT, 0, MPI_COMM_WORLD, &q);
            else if (nb && o == 1) MPI_Ireduce(sb, rb, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD, &q);
            else if (nb) MPI_Iallreduce(sb, rb, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
            else if (o == 0) MPI_Bcast(rb, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
            else if (o == 1) MPI_Reduce(sb, rb, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
            else MPI_Allreduce(sb, rb, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            double dt = MPI_Wtime() - t0, mx;
            MPI_Reduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (i >= 0) t[i] = mx;
        }
        qsort(t, (size_t)reps, sizeof *t, cmp);
        if (rank == 0) printf("%s %.6f\n", ops[o], t[reps / 2]);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (rank == 0) printf("maxrss %ld\n", ru.ru_maxrss);
    MPI_Finalize();
    return 0;
}
