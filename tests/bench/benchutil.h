/* benchutil.h: option helpers shared by the benchmark programs (mpibench.c,
 * overlap.c).  Plain C and MPI: the programs build with any MPI's mpicc. */
#ifndef BENCHUTIL_H
#define BENCHUTIL_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sort out[0..n) ascending and drop duplicates: the new count. */
static int bench_sort_unique(long *out, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            long t = out[j]; out[j] = out[j - 1]; out[j - 1] = t;
        }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || out[m - 1] != out[i]) out[m++] = out[i];
    return m;
}

/* A comma list of at most max non-negative numbers up to hi (suffixes k and
 * m: KiB, MiB) into out, sorted, without duplicates: the count, or -1 when
 * malformed. */
static int bench_parse_list(const char *s, long *out, int max, long hi)
{
    int n = 0;
    char *copy = strdup(s), *save = NULL;
    if (!copy) return -1;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        long x = strtol(t, &end, 0);
        if (*end == 'k' || *end == 'K') x <<= 10, end++;
        else if (*end == 'm' || *end == 'M') x <<= 20, end++;
        if (*end || end == t || x < 0 || x > hi || n == max) {
            free(copy);
            return -1;
        }
        out[n++] = x;
    }
    free(copy);
    return bench_sort_unique(out, n);
}

/* Rank 0 says why (and how to call prog) and aborts the job; the others
 * (which parsed the same arguments) wait for that, so that no abort of
 * theirs cuts its message off. */
static void bench_usage_abort(int rank, const char *prog, const char *usage, const char *msg)
{
    if (rank != 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        exit(2);
    }
    fprintf(stderr, "%s: %s\nusage: %s %s\n", prog, msg, prog, usage);
    MPI_Abort(MPI_COMM_WORLD, 2);
}
#endif
