/* membench: the memory of one rank after start-up (issue 22 item 6;
 * tests/bench/mem-bench.sh).  Every rank: MPI_Init, a barrier, an allreduce
 * and an all-to-all of 8 bytes per peer (so that every connection a rank
 * makes on first use exists), a barrier; then it reads its own VmRSS and Pss
 * (/proc/self/status, /proc/self/smaps_rollup: Pss splits shared pages, e.g.
 * libraries and shared-memory segments, among the processes that map them)
 * and rank 0 prints "RANKS RSS_KIB_MEDIAN RSS_KIB_MAX PSS_KIB_MEDIAN PSS_KIB_MAX".
 * Plain MPI: built with each implementation's mpicc. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long field_kib(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0) {
            v = strtol(line + kl, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static int cmp(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    double x = rank, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    char *sb = calloc((size_t)size, 8), *rb = calloc((size_t)size, 8);
    MPI_Alltoall(sb, 8, MPI_CHAR, rb, 8, MPI_CHAR, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    long me[2] = { field_kib("/proc/self/status", "VmRSS:"), field_kib("/proc/self/smaps_rollup", "Pss:") };
    long *all = rank == 0 ? malloc((size_t)size * sizeof me) : NULL;
    MPI_Gather(me, 2, MPI_LONG, all, 2, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        long *rss = malloc((size_t)size * sizeof *rss), *pss = malloc((size_t)size * sizeof *pss);
        for (int i = 0; i < size; i++) {
            rss[i] = all[2 * i];
            pss[i] = all[2 * i + 1];
        }
        qsort(rss, (size_t)size, sizeof *rss, cmp);
        qsort(pss, (size_t)size, sizeof *pss, cmp);
        printf("%d %ld %ld %ld %ld\n", size, rss[size / 2], rss[size - 1], pss[size / 2], pss[size - 1]);
        free(rss);
        free(pss);
        free(all);
    }
    free(sb);
    free(rb);
    MPI_Finalize();
    return 0;
}
