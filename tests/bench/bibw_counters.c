/* bibw_counters: mpibench's bi-directional window (both ranks post WIN
 * MPI_Irecv, then WIN MPI_Isend of the same size, then MPI_Waitall), timed
 * window by window, with what happened to the messages: for the shm band
 * (issue 22 item 2), which sizes arrive before their receive (a third copy
 * through the unexpected buffer), which go by rendezvous (pulled with CMA)
 * and how long the slow windows are.  Kumi's MPI_T counters
 * p2p_unexpected_messages and p2p_rendezvous_sends (0 under other
 * libraries, which lack them), and the page faults of both ranks.
 *
 * Usage: mpiexec -n 2 --bind-to core bibw_counters [SIZES (8191,8192,8193,65535,65536)]
 *            [WINDOWS (200)] [WIN (64)]
 * Build: as tests/bench/shm-band.sh builds bandbest.c (Kumi: cc -I BUILD/framework/include
 *        -I framework/include ... -lmpi; MPICH / Open MPI: their mpicc).
 * Output (rank 0), one line per size:
 *   bibw BYTES p10 MB/s med MB/s ue % rndv % all MB/s p90 MB/s slow N max MS flt/win F
 *   p10, med, p90: the windows at those percentiles of time (p10: the fastest tenth,
 *   where both ranks had a core); all: the bytes of every window over their total time
 *   (what mpibench reports); ue, rndv: of the messages of 20 more windows, those that
 *   arrived unexpected and those sent by rendezvous; slow: windows over 2 ms;
 *   flt/win: minor page faults of both ranks per window. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MAXWIN 128

static MPI_T_pvar_session ses;
static MPI_T_pvar_handle hu, hr;
static int have;

static long faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

static unsigned long long rd(MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    if (have) MPI_T_pvar_read(ses, h, &v);
    return v;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void window(char *sb, char *rb, long n, int win, int peer)
{
    MPI_Request rq[2 * MAXWIN];
    static MPI_Status st[2 * MAXWIN];   /* not MPI_STATUSES_IGNORE: gcc warns on MPICH's */
    int k = 0;
    for (int i = 0; i < win; i++) MPI_Irecv(rb + (size_t)i * (size_t)n, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &rq[k++]);
    for (int i = 0; i < win; i++) MPI_Isend(sb, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &rq[k++]);
    MPI_Waitall(k, rq, st);
}

int main(int argc, char **argv)
{
    int prov, rank, size, iu, ir, c;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "bibw_counters: run with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    if (MPI_T_pvar_get_index("p2p_unexpected_messages", MPI_T_PVAR_CLASS_COUNTER, &iu) == MPI_SUCCESS &&
        MPI_T_pvar_get_index("p2p_rendezvous_sends", MPI_T_PVAR_CLASS_COUNTER, &ir) == MPI_SUCCESS) {
        MPI_T_pvar_session_create(&ses);
        MPI_T_pvar_handle_alloc(ses, iu, NULL, &hu, &c);
        MPI_T_pvar_handle_alloc(ses, ir, NULL, &hr, &c);
        MPI_T_pvar_start(ses, hu);
        MPI_T_pvar_start(ses, hr);
        have = 1;
    }
    char *sizes = strdup(argc > 1 ? argv[1] : "8191,8192,8193,65535,65536");
    int nw = argc > 2 ? atoi(argv[2]) : 200, win = argc > 3 ? atoi(argv[3]) : 64, peer = 1 - rank;
    if (nw < 10 || win < 1 || win > MAXWIN) MPI_Abort(MPI_COMM_WORLD, 2);
    long maxn = 0;
    for (char *s = sizes; s && *s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
        if (atol(s) > maxn) maxn = atol(s);
    char *sb = malloc((size_t)maxn + 1), *rb = malloc((size_t)win * (size_t)maxn + 1);
    double *tw = malloc(sizeof(double) * (size_t)nw);
    if (!sb || !rb || !tw) MPI_Abort(MPI_COMM_WORLD, 2);
    memset(sb, 1, (size_t)maxn + 1);
    memset(rb, 0, (size_t)win * (size_t)maxn + 1);
    for (char *t = strtok(sizes, ","); t; t = strtok(NULL, ",")) {
        long n = atol(t);
        if (n <= 0) continue;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int w = -5; w < nw; w++) {
            double t0 = MPI_Wtime();
            window(sb, rb, n, win, peer);
            if (w >= 0) tw[w] = MPI_Wtime() - t0;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        unsigned long long u0 = rd(hu), r0 = rd(hr), cnt[2], sum[2];
        long f0 = faults(), fl, fsum = 0;
        for (int w = 0; w < 20; w++) window(sb, rb, n, win, peer);
        cnt[0] = rd(hu) - u0;
        cnt[1] = rd(hr) - r0;
        fl = faults() - f0;
        MPI_Reduce(cnt, sum, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&fl, &fsum, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        double tot = 0, bytes = 2.0 * win * (double)n;
        int slow = 0;
        for (int w = 0; w < nw; w++) {
            tot += tw[w];
            if (tw[w] > 2e-3) slow++;
        }
        qsort(tw, (size_t)nw, sizeof *tw, cmpd);
        if (rank == 0)
            printf("bibw %6ld p10 %7.0f med %7.0f MB/s ue %5.1f rndv %5.1f all %7.0f p90 %7.0f slow %d max %.1fms "
                   "flt/win %.1f\n", n, bytes / tw[nw / 10] / 1e6, bytes / tw[nw / 2] / 1e6,
                   100.0 * (double)sum[0] / (2 * 20 * win), 100.0 * (double)sum[1] / (2 * 20 * win),
                   bytes * nw / tot / 1e6, bytes / tw[nw * 9 / 10] / 1e6, slow, tw[nw - 1] * 1e3, fsum / 20.0);
    }
    free(sizes);
    free(sb);
    free(rb);
    free(tw);
    if (have) MPI_T_pvar_session_free(&ses);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
