/* benchutil.h: helpers shared by the benchmark programs (mpibench.c,
 * overlap.c, collbench.c, rmabench.c): options, medians, output lines.
 * Plain C and MPI: the programs build with any MPI's mpicc. */
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
/* Index of s in names[0..n), or -1. */
static inline int bench_index(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* A comma list of names[0..n) into want[] (1 where named): 0, or -1 when a
 * name is unknown. */
static inline int bench_pick(const char *list, const char *const *names, int n, int *want)
{
    char *copy = strdup(list), *save = NULL;
    int rc = copy ? 0 : -1;
    for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
        int i = bench_index(names, n, t);
        if (i < 0) rc = -1;
        else want[i] = 1;
    }
    free(copy);
    return rc;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The two header lines of the "op bytes iters median min max unit" format
 * (rank 0): "# PROG 1 ranks=N reps=R scale=S library=<first line of
 * MPI_Get_library_version>". */
static inline void bench_header(const char *prog, int nranks, int reps, double scale)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "unknown";
    int len = 0;
    if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS) strcpy(lib, "unknown");
    lib[len > 0 && len <= MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING] = 0;
    lib[strcspn(lib, "\r\n,")] = 0;
    for (char *c = lib; *c; c++)
        if (*c == '\t') *c = ' ';
    printf("# %s 1 ranks=%d reps=%d scale=%g library=%s\n", prog, nranks, reps, scale, lib);
    printf("# op bytes iters median min max unit\n");
    fflush(stdout);
}

/* One line of that format from the repetitions v[0..reps) (sorted here). */
static inline void bench_print(const char *op, long n, int iters, double *v, int reps)
{
    qsort(v, (size_t)reps, sizeof *v, bench_cmp_double);
    double med = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
    printf("%s %ld %d %.4g %.4g %.4g us\n", op, n, iters, med, v[0], v[reps - 1]);
    fflush(stdout);
}
/* The options of collbench and rmabench: -m OPS -s SIZES -r REPS -x SCALE
 * -q -f OP.  The caller fills the defaults (ops, default_sizes, names,
 * nnames, reps, scale); bench_options parses argv, checks the values and
 * fills sizes / nsizes (sorted, without duplicates), want[] (1 for each
 * operation named by -m) and fault (-f's operation, or NULL; the caller
 * checks it).  Returns NULL, or what is wrong. */
#define BENCH_MAXSIZES 64
#define BENCH_MAXOPS 16
struct bench_opts {
    const char *ops, *default_sizes;
    const char *const *names;
    int nnames, reps;
    double scale;
    const char *fault;
    long sizes[BENCH_MAXSIZES];
    int nsizes, want[BENCH_MAXOPS];
};

static inline const char *bench_options(int argc, char **argv, struct bench_opts *o)
{
    const char *sizearg = "default";
    o->fault = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-q") == 0) { o->reps = 3; o->scale = 0.1; continue; }
        if (i + 1 >= argc) return "option needs a value";
        const char *v = argv[++i];
        if (strcmp(a, "-m") == 0) o->ops = v;
        else if (strcmp(a, "-s") == 0) sizearg = v;
        else if (strcmp(a, "-r") == 0) o->reps = atoi(v);
        else if (strcmp(a, "-x") == 0) o->scale = atof(v);
        else if (strcmp(a, "-f") == 0) o->fault = v;
        else return "unknown option";
    }
    if (o->reps < 1 || o->reps > 1000) return "-r: 1 to 1000 repetitions";
    if (!(o->scale > 0) || o->scale > 1000) return "-x: scale must be positive";
    if (strcmp(sizearg, "default") == 0) sizearg = o->default_sizes;
    o->nsizes = bench_parse_list(sizearg, o->sizes, BENCH_MAXSIZES, 64L << 20);
    if (o->nsizes <= 0) return "-s: bad size list (at most 64 sizes of 0 to 64 MiB)";
    memset(o->want, 0, sizeof o->want);
    if (o->nnames > BENCH_MAXOPS || bench_pick(o->ops, o->names, o->nnames, o->want) != 0)
        return "-m: unknown operation";
    return NULL;
}
#endif
