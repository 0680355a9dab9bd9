/* mpibench: point-to-point benchmarks in portable MPI, built with each
 * implementation's own mpicc so that Kumi, Open MPI and MPICH run the very
 * same code with the same sizes and iteration counts.
 *
 *   mpibench [-m METRICS] [-s SIZES] [-r REPS] [-x SCALE] [-q]
 *     -m  comma list of lat,bw,bibw,rate,ring        (default lat,bw,bibw,rate)
 *     -s  comma list of byte counts, or "default":   0, 1, 2, 4, ... 4 MiB plus
 *         4 KiB, 8 KiB, 12 KiB, 16 KiB, 64 KiB and each of those +-1
 *     -r  repetitions per size; the median is reported  (default 5)
 *     -x  scale every iteration count by SCALE          (default 1)
 *     -q  quick: -r 3 -x 0.1
 *
 *   lat   ping-pong between ranks 0 and 1; one-way time in microseconds
 *   bw    uni-directional bandwidth: rank 0 sends a window of MPI_Isend,
 *         rank 1 posts the matching MPI_Irecv, then acknowledges; MB/s (1e6)
 *   bibw  bi-directional: both ranks send a window to each other; MB/s, both
 *         directions added
 *   rate  message rate: as bw with a window of 128 messages, sizes <= 8 KiB;
 *         million messages per second
 *   ring  every rank exchanges with its neighbours (MPI_Sendrecv to rank+1,
 *         from rank-1) at 8 B and 64 KiB; microseconds per step; any size >= 2
 *         (the oversubscription test); with it two lines of context switches
 *         per rank and step, the mean over the ranks (from /proc/self/status,
 *         so they show how a library waits whatever the machine's load):
 *         ringsleep (voluntary: the rank slept) and ringyield (involuntary:
 *         it yielded the CPU to a runnable task, or was preempted)
 * lat, bw, bibw and rate use ranks 0 and 1 only (other ranks wait).
 *
 * Output (rank 0, stdout), one line per metric and size:
 *   # mpibench 1 ranks=N reps=R scale=S library=<first line of MPI_Get_library_version>
 *   METRIC BYTES ITERS MEDIAN MIN MAX UNIT
 *   # done
 * The data received is checked; a wrong byte makes the program abort (exit 3).
 * Iteration counts depend only on the size and SCALE, never on the timings. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "benchutil.h"

#define MAXSIZES 128
#define RATE_WINDOW 128
#define RATE_MAX 8192

static int rank, nranks, reps = 5;
static double scale = 1.0;
static char *sbuf, *rbuf;          /* send buffer (one message), receive windows */
static MPI_Comm pc;                /* ranks 0 and 1 (MPI_COMM_NULL elsewhere) */

static int scaled(long base)
{
    double v = base * scale;
    return v < 2 ? 2 : (int)v;
}

static long clampl(long v, long lo, long hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int lat_iters(long n) { return scaled(n <= 16385 ? 1000 : clampl((1L << 24) / n, 10, 1000)); }
static int bw_window(long n) { return (int)clampl((1L << 24) / (n ? n : 1), 4, 64); }
static int bw_iters(long n) { return scaled(clampl((1L << 25) / ((n ? n : 1) * bw_window(n)), 5, 100)); }
static int rate_iters(void) { return scaled(50); }
static int ring_iters(long n) { return scaled(n <= 16384 ? 1000 : 100); }

static unsigned char pattern(long n, long i) { return (unsigned char)(n * 7 + i * 13 + 1); }

static void fill(char *p, long n)
{
    for (long i = 0; i < n; i++) p[i] = (char)pattern(n, i);
}

/* The first, middle and last byte of a received message (the whole message
 * would cost more than the transfer being measured). */
static void check(const char *p, long n, const char *what)
{
    long idx[3] = { 0, n / 2, n - 1 };
    for (int k = 0; k < 3 && n > 0; k++)
        if ((unsigned char)p[idx[k]] != pattern(n, idx[k])) {
            fprintf(stderr, "mpibench: %s %ld bytes: rank %d received wrong data at byte %ld\n",
                    what, n, rank, idx[k]);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
}

static void report(const char *metric, long n, int iters, double *v, const char *unit)
{
    if (rank != 0) return;
    qsort(v, (size_t)reps, sizeof *v, bench_cmp_double);
    double med = reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2;
    printf("%s %ld %d %.4g %.4g %.4g %s\n", metric, n, iters, med, v[0], v[reps - 1], unit);
    fflush(stdout);
}

/* Ping-pong: returns the one-way time in seconds (rank 0). */
static double run_lat(long n, int iters)
{
    int peer = 1 - rank, warm = iters / 10 + 2;
    double t0 = 0;
    for (int it = -warm; it < iters; it++) {
        if (it == 0) {
            MPI_Barrier(pc);
            t0 = MPI_Wtime();
        }
        if (rank == 0) {
            MPI_Send(sbuf, (int)n, MPI_BYTE, peer, 1, pc);
            MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 1, pc, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 1, pc, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)n, MPI_BYTE, peer, 1, pc);
        }
    }
    double t = MPI_Wtime() - t0;
    check(rbuf, n, "lat");
    return t / iters / 2;
}

/* Windows of `win` messages from rank 0 to rank 1 (and back when bidir);
 * returns the elapsed time in seconds for `iters` windows. */
static double run_window(long n, int win, int iters, int bidir)
{
    int peer = 1 - rank, warm = iters / 10 + 1;
    MPI_Request req[2 * RATE_WINDOW + 2];
    static MPI_Status st[2 * RATE_WINDOW + 2];   /* not MPI_STATUSES_IGNORE: gcc warns on MPICH's */
    double t0 = 0;
    char ack = 0;
    for (int it = -warm; it < iters; it++) {
        if (it == 0) {
            MPI_Barrier(pc);
            t0 = MPI_Wtime();
        }
        int k = 0;
        if (rank == 1 || bidir)
            for (int w = 0; w < win; w++)
                MPI_Irecv(rbuf + (size_t)w * (size_t)n, (int)n, MPI_BYTE, peer, 2, pc, &req[k++]);
        if (rank == 0 || bidir)
            for (int w = 0; w < win; w++)
                MPI_Isend(sbuf, (int)n, MPI_BYTE, peer, 2, pc, &req[k++]);
        MPI_Waitall(k, req, st);
        if (!bidir) {   /* the window is complete only when rank 1 has it all */
            if (rank == 1) MPI_Send(&ack, 0, MPI_BYTE, peer, 3, pc);
            else MPI_Recv(&ack, 0, MPI_BYTE, peer, 3, pc, MPI_STATUS_IGNORE);
        }
    }
    double t = MPI_Wtime() - t0;
    if (rank == 1 || bidir)
        for (int w = 0; w < win; w++) check(rbuf + (size_t)w * (size_t)n, n, bidir ? "bibw" : "bw");
    return t;
}

/* This process's voluntary and involuntary context switches so far (0 where
 * /proc/self/status cannot be read). */
static void ctx_switches(double *vol, double *invol)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0, nv = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1) continue;
        (void)sscanf(line, "nonvoluntary_ctxt_switches: %ld", &nv);
    }
    if (f) fclose(f);
    *vol = (double)v;
    *invol = (double)nv;
}

/* Ring exchange among all ranks; returns seconds per step. */
static double run_ring(long n, int iters)
{
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks, warm = iters / 10 + 1;
    double t0 = 0;
    for (int it = -warm; it < iters; it++) {
        if (it == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        MPI_Sendrecv(sbuf, (int)n, MPI_BYTE, right, 4, rbuf, (int)n, MPI_BYTE, left, 4,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double t = MPI_Wtime() - t0;
    check(rbuf, n, "ring");
    /* the slowest rank decides */
    double tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return tmax / iters;
}

static int parse_sizes(const char *s, long *out)
{
    int n = 0;
    if (strcmp(s, "default") == 0) {
        out[n++] = 0;
        for (long v = 1; v <= 4L << 20; v *= 2) out[n++] = v;
        const long around[] = { 4096, 8192, 12288, 16384, 65536 };
        for (int i = 0; i < 5; i++) {
            out[n++] = around[i] - 1;
            out[n++] = around[i] + 1;
            if (around[i] == 12288) out[n++] = 12288;
        }
        return bench_sort_unique(out, n);
    }
    return bench_parse_list(s, out, MAXSIZES, 64L << 20);
}

static void usage_abort(const char *msg)
{
    bench_usage_abort(rank, "mpibench", "[-m lat,bw,bibw,rate,ring] [-s SIZES|default] [-r REPS] [-x SCALE] [-q]", msg);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    const char *metrics = "lat,bw,bibw,rate", *sizearg = "default";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-q") == 0) { reps = 3; scale = 0.1; continue; }
        if (i + 1 >= argc) usage_abort("option needs a value");
        const char *v = argv[++i];
        if (strcmp(a, "-m") == 0) metrics = v;
        else if (strcmp(a, "-s") == 0) sizearg = v;
        else if (strcmp(a, "-r") == 0) reps = atoi(v);
        else if (strcmp(a, "-x") == 0) scale = atof(v);
        else usage_abort("unknown option");
    }
    if (reps < 1 || reps > 1000) usage_abort("-r: 1 to 1000 repetitions");
    if (!(scale > 0) || scale > 1000) usage_abort("-x: scale must be positive");
    long sizes[MAXSIZES + 16];
    int nsizes = parse_sizes(sizearg, sizes);
    if (nsizes <= 0) usage_abort("-s: bad size list");
    int do_lat = 0, do_bw = 0, do_bibw = 0, do_rate = 0, do_ring = 0;
    {
        char *copy = strdup(metrics), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (!strcmp(t, "lat")) do_lat = 1;
            else if (!strcmp(t, "bw")) do_bw = 1;
            else if (!strcmp(t, "bibw")) do_bibw = 1;
            else if (!strcmp(t, "rate")) do_rate = 1;
            else if (!strcmp(t, "ring")) do_ring = 1;
            else usage_abort("-m: unknown metric");
        }
        free(copy);
    }
    if ((do_lat || do_bw || do_bibw || do_rate) && nranks < 2) usage_abort("lat, bw, bibw and rate need 2 ranks");

    /* buffers big enough for the largest window */
    size_t maxmsg = 1, maxwin = RATE_WINDOW * RATE_MAX;
    for (int i = 0; i < nsizes; i++) {
        if ((size_t)sizes[i] > maxmsg) maxmsg = (size_t)sizes[i];
        size_t w = (size_t)sizes[i] * (size_t)bw_window(sizes[i]);
        if (w > maxwin) maxwin = w;
    }
    if ((size_t)(64 * 1024) > maxmsg) maxmsg = 64 * 1024;   /* ring sizes */
    sbuf = malloc(maxmsg);
    rbuf = malloc(maxwin > maxmsg ? maxwin : maxmsg);
    if (!sbuf || !rbuf) usage_abort("out of memory");
    memset(rbuf, 0, maxwin > maxmsg ? maxwin : maxmsg);

    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "unknown";
        int len = 0;
        if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS) strcpy(lib, "unknown");
        lib[len > 0 && len <= MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING] = 0;
        lib[strcspn(lib, "\r\n,")] = 0;
        for (char *c = lib; *c; c++)
            if (*c == '\t') *c = ' ';
        printf("# mpibench 1 ranks=%d reps=%d scale=%g library=%s\n", nranks, reps, scale, lib);
        printf("# metric bytes iters median min max unit\n");
        fflush(stdout);
    }
    double *v = malloc(sizeof(double) * (size_t)reps);
    int pair = rank < 2;   /* ranks taking part in the two-rank metrics */
    MPI_Comm_split(MPI_COMM_WORLD, pair ? 0 : MPI_UNDEFINED, rank, &pc);

    for (int i = 0; i < nsizes && do_lat; i++) {
        long n = sizes[i];
        int iters = lat_iters(n);
        fill(sbuf, n);
        for (int r = 0; r < reps; r++) v[r] = pair ? run_lat(n, iters) * 1e6 : 0;
        report("lat", n, iters, v, "us");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < nsizes && do_bw; i++) {
        long n = sizes[i];
        if (n == 0) continue;   /* no bandwidth without bytes */
        int win = bw_window(n), iters = bw_iters(n);
        fill(sbuf, n);
        for (int r = 0; r < reps; r++)
            v[r] = pair ? (double)n * win * iters / run_window(n, win, iters, 0) / 1e6 : 0;
        report("bw", n, iters, v, "MB/s");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < nsizes && do_bibw; i++) {
        long n = sizes[i];
        if (n == 0) continue;   /* no bandwidth without bytes */
        int win = bw_window(n), iters = bw_iters(n);
        fill(sbuf, n);
        for (int r = 0; r < reps; r++)
            v[r] = pair ? 2.0 * n * win * iters / run_window(n, win, iters, 1) / 1e6 : 0;
        report("bibw", n, iters, v, "MB/s");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < nsizes && do_rate; i++) {
        long n = sizes[i];
        if (n > RATE_MAX) break;
        int iters = rate_iters();
        fill(sbuf, n);
        for (int r = 0; r < reps; r++)
            v[r] = pair ? (double)RATE_WINDOW * iters / run_window(n, RATE_WINDOW, iters, 0) / 1e6 : 0;
        report("rate", n, iters, v, "Mmsg/s");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (do_ring) {
        const long ring_sizes[] = { 8, 65536 };
        for (int i = 0; i < 2; i++) {
            long n = ring_sizes[i];
            int iters = ring_iters(n);
            fill(sbuf, n);
            double sw0[2], sw1[2], d[2], sum[2] = { 0, 0 };
            ctx_switches(&sw0[0], &sw0[1]);
            for (int r = 0; r < reps; r++) v[r] = run_ring(n, iters) * 1e6;
            ctx_switches(&sw1[0], &sw1[1]);
            report("ring", n, iters, v, "us");
            for (int k = 0; k < 2; k++) d[k] = (sw1[k] - sw0[k]) / ((double)iters * reps * nranks);
            MPI_Reduce(d, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            for (int r = 0; r < reps; r++) v[r] = sum[0];
            report("ringsleep", n, iters, v, "switches");
            for (int r = 0; r < reps; r++) v[r] = sum[1];
            report("ringyield", n, iters, v, "switches");
        }
    }
    if (rank == 0) printf("# done\n");
    if (pc != MPI_COMM_NULL) MPI_Comm_free(&pc);
    free(v);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
