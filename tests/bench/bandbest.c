/* bandbest: bi-directional bandwidth and ping-pong latency of 2 ranks timed
 * window by window, for a loaded machine (tests/bench/shm-band.sh -w).  A run
 * of mpibench is slowed by every moment either rank waits for a core; here
 * each window (bibw: both ranks send WIN messages to each other, as mpibench's
 * bibw does; lat: 10 round trips) is timed on its own, and the figure is a
 * low percentile of the window times: the windows that ran while both ranks
 * had a core, which is what a quiet machine would show.
 *
 * Usage: bandbest [-m bibw,lat] [-s SIZES] [-w WINDOWS (default 2000)] [-p PERCENTILE (10)]
 * Output (rank 0), mpibench's format (median = the percentile, min = the best
 * window, max = the median window):
 *   METRIC BYTES WINDOWS PCT BEST MEDIAN UNIT
 *   # done
 * The bytes received are checked (exit 3 on a wrong one). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXWIN 64

static int rank;
static char *sbuf, *rbuf;
static MPI_Comm pc;                 /* MPI_COMM_WORLD split, as mpibench does */

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bibw_window(long n)
{
    long w = (1L << 24) / (n ? n : 1);
    return w < 4 ? 4 : w > MAXWIN ? MAXWIN : (int)w;
}

/* seconds of each of nw windows */
static void run_bibw(long n, int nw, double *t)
{
    int peer = 1 - rank, win = bibw_window(n), warm = nw / 10 + 2;
    MPI_Request req[2 * MAXWIN];
    static MPI_Status st[2 * MAXWIN];   /* not MPI_STATUSES_IGNORE: gcc warns on MPICH's */
    for (int it = -warm; it < nw; it++) {
        double t0 = MPI_Wtime();
        int k = 0;
        for (int w = 0; w < win; w++)
            MPI_Irecv(rbuf + (size_t)w * (size_t)n, (int)n, MPI_BYTE, peer, 2, pc, &req[k++]);
        for (int w = 0; w < win; w++)
            MPI_Isend(sbuf, (int)n, MPI_BYTE, peer, 2, pc, &req[k++]);
        MPI_Waitall(k, req, st);
        if (it >= 0) t[it] = MPI_Wtime() - t0;
    }
    for (int w = 0; w < win; w++)
        for (long i = 0; i < n; i++)
            if (rbuf[(size_t)w * (size_t)n + (size_t)i] != (char)(i * 7 + 1)) {
                fprintf(stderr, "bandbest: rank %d: wrong byte in bibw of %ld B\n", rank, n);
                exit(3);
            }
}

static void run_lat(long n, int nw, double *t)
{
    int peer = 1 - rank, warm = nw / 10 + 2;
    for (int it = -warm; it < nw; it++) {
        double t0 = MPI_Wtime();
        for (int r = 0; r < 10; r++) {
            if (rank == 0) {
                MPI_Send(sbuf, (int)n, MPI_BYTE, peer, 1, pc);
                MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 1, pc, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 1, pc, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)n, MPI_BYTE, peer, 1, pc);
            }
        }
        if (it >= 0) t[it] = (MPI_Wtime() - t0) / 20;   /* one way */
    }
}

int main(int argc, char **argv)
{
    const char *metrics = "bibw,lat", *sizes = "4096,8192,12288,16384";
    int nw = 2000, pct = 10, nranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) metrics = argv[i + 1];
        else if (!strcmp(argv[i], "-s")) sizes = argv[i + 1];
        else if (!strcmp(argv[i], "-w")) nw = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-p")) pct = atoi(argv[i + 1]);
    }
    if (nranks != 2 || nw < 10 || pct < 0 || pct > 100) {
        if (rank == 0) fprintf(stderr, "usage: 2 ranks; bandbest [-m bibw,lat] [-s SIZES] [-w WINDOWS >= 10] [-p PCT]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &pc);
    long maxn = 0;
    {
        char *c = strdup(sizes), *s, *save = NULL;
        for (s = strtok_r(c, ",", &save); s; s = strtok_r(NULL, ",", &save))
            if (atol(s) > maxn) maxn = atol(s);
        free(c);
    }
    sbuf = malloc((size_t)maxn + 1);
    rbuf = malloc((size_t)maxn * MAXWIN + 1);
    double *t = malloc(sizeof *t * (size_t)nw);
    if (!sbuf || !rbuf || !t) MPI_Abort(MPI_COMM_WORLD, 2);
    for (long i = 0; i < maxn; i++) sbuf[i] = (char)(i * 7 + 1);
    if (rank == 0) printf("# bandbest windows=%d pct=%d\n", nw, pct);
    char *mc = strdup(metrics), *m, *msave = NULL;
    for (m = strtok_r(mc, ",", &msave); m; m = strtok_r(NULL, ",", &msave)) {
        char *c = strdup(sizes), *s, *save = NULL;
        for (s = strtok_r(c, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
            long n = atol(s);
            MPI_Barrier(MPI_COMM_WORLD);
            if (!strcmp(m, "bibw")) run_bibw(n, nw, t);
            else if (!strcmp(m, "lat")) run_lat(n, nw, t);
            else continue;
            qsort(t, (size_t)nw, sizeof *t, cmpd);
            double p = t[(size_t)((long)(nw - 1) * pct / 100)], b = t[0], md = t[nw / 2];
            if (rank == 0) {
                if (!strcmp(m, "bibw")) {
                    double bytes = 2.0 * (double)n * bibw_window(n) / 1e6;
                    printf("bibw %ld %d %.2f %.2f %.2f MB/s\n", n, nw, bytes / p, bytes / b, bytes / md);
                } else {
                    printf("lat %ld %d %.4f %.4f %.4f us\n", n, nw, p * 1e6, b * 1e6, md * 1e6);
                }
            }
        }
        free(c);
    }
    free(mc);
    if (rank == 0) printf("# done\n");
    free(t);
    free(sbuf);
    free(rbuf);
    MPI_Comm_free(&pc);
    MPI_Finalize();
    return 0;
}
