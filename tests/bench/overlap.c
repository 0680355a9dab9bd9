/* overlap: how much of a non-blocking collective hides behind computation,
 * in portable MPI, built with each implementation's own mpicc so that Kumi,
 * Open MPI and MPICH run the very same code (like mpibench.c).
 *
 *   overlap [-s SIZES] [-k TESTS] [-r REPS] [-c KERNEL] [-o OPS]
 *     -s  comma list of byte counts (suffix k or m allowed), or "default":
 *         8,1024,65536,1048576,4194304
 *     -k  comma list of test intervals: MPI_Test every k compute iterations,
 *         0 = never                                   (default 0,1,10,100)
 *     -r  repetitions of every measurement; the median is reported (default 9)
 *     -c  the compute kernel: vec (default: an iteration is ~1 us of
 *         multiply-adds on 64 doubles), mm4 or mm40 (an iteration is one
 *         product of two 4x4, or 40x40, matrices of doubles: KACC's fine and
 *         coarse granularity; MPI_Test every k products)
 *     -o  comma list of operations: iallreduce, ibcast (default both)
 *     -t  the compute lasts at least this many microseconds (default 0: as
 *         long as the blocking operation)
 *     -T  comma list of compute lengths in microseconds, one per size of -s
 *         (the last one for the sizes after it): the compute lasts that
 *         long whatever the blocking operation takes, so engines whose
 *         blocking operations differ compute alike (kacc-bench.sh vm)
 *
 * Operations: MPI_Iallreduce (MPI_DOUBLE, MPI_SUM; BYTES / 8 doubles, sizes
 * under 8 B are left out) and MPI_Ibcast (MPI_BYTE, root 0), on
 * MPI_COMM_WORLD.  Per operation and size:
 *   t_blk  the blocking operation (MPI_Allreduce, MPI_Bcast)
 *   t_cmp  a compute kernel alone, run for as many iterations as take t_blk;
 *          an iteration is about 1 us of floating-point work on 64 doubles
 *          that stay in the cache (calibrated at start-up)
 *   t_tot  for each k: start the non-blocking operation, run the same
 *          compute calling MPI_Test every k iterations (until it completes),
 *          then MPI_Wait
 *   overlap = (t_blk + t_cmp - t_tot) / min(t_blk, t_cmp), clamped to [0, 1]:
 *          1 when the communication is hidden completely, 0 when nothing is
 *   cpu    process CPU time (getrusage RUSAGE_SELF, user + system, which
 *          counts any progress thread) of the overlapped run minus that of
 *          the compute alone: what the communication took from the process
 *          (waiting in MPI_Wait included)
 *   lost   the share of the computation's time lost to the communication:
 *          1 - t_cmp / t_phase, t_phase the time from the start call to the
 *          end of the compute loop of the overlapped run (the start call and
 *          the MPI_Test calls included, MPI_Wait not; a progress thread or
 *          kernel work on the rank's core shows here), the worst rank's
 *   t_done the collective's completion as the ranks see it: from the start
 *          call to the first MPI_Test that reports completion, or to
 *          MPI_Wait's return (so at least the compute's length when the
 *          completion is not tested for: k = 0), the last rank's
 *   t_nbc  the non-blocking operation alone (start, MPI_Wait at once)
 * Every measurement starts after a barrier and runs the operation INNER
 * times back to back (INNER depends only on the size: small operations are
 * too short to time one by one); times are per operation.  t_blk and t_tot
 * are the maximum over the ranks (an operation is over when the last rank
 * is done), t_cmp and cpu are rank 0's; all are medians over the
 * repetitions.  The compute length derives from a first series of t_blk
 * measurements, which every rank knows, so the ranks compute for about the
 * same time; then each repetition measures t_blk, t_cmp and every k in a row
 * (a change of load on the host hits them alike).
 *
 * Output (rank 0, stdout):
 *   # overlap 2 ranks=N reps=R iter_us=U kernel=KERNEL library=<first line of MPI_Get_library_version>
 *   # OP BYTES iters=N inner=M                      (before each OP and size)
 *   ovl OP BYTES K T_BLK_US T_CMP_US T_TOT_US OVERLAP_PCT CPU_US LOST_PCT T_DONE_US T_NBC_US
 *   # done
 * The data received is checked; a wrong value makes the program abort (exit 3). */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "benchutil.h"

#define MAXSIZES 64
#define MAXK 16
#define KLEN 64                      /* doubles the kernel works on: 512 B, in L1 */

static int rank, nranks, reps = 9;
static double min_cmp_s;             /* -t */
static double fixed_cmp_s;           /* -T: this size's compute length, or 0 */
static double *sbuf, *rbuf;          /* allreduce: send and receive buffers */
static unsigned char *bbuf;          /* bcast buffer */
static double *blkv, *cmpv;          /* per repetition: t_blk, t_cmp */
static double *totv, *cpuv;          /* per k and repetition: t_tot, cpu */
static double *lostv, *donev, *nbcv; /* per k and repetition: lost, t_done; per repetition: t_nbc */

/* ---- the compute kernel ---- */

static double kbuf[KLEN];
static long kwork = 1;               /* passes over kbuf per iteration */
static volatile double ksink;        /* keeps the result alive */
static double iter_s;                /* seconds per iteration, calibrated */

/* The matrix kernels (-c mm4, mm40): C = A B + 1 with B the previous C, A
 * holding 0.5 / N everywhere: the values converge to 2 (no overflow, no
 * denormals), and every product depends on the one before. */
#define MMAX 40
static int kernel_mm;                /* 0: vec; else the matrix order */
static double ma[MMAX * MMAX], mb[MMAX * MMAX], mc[MMAX * MMAX];

static void mm_iter(void)
{
    int n = kernel_mm;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double acc = 1.0;
            for (int l = 0; l < n; l++) acc += ma[i * n + l] * mb[l * n + j];
            mc[i * n + j] = acc;
        }
    memcpy(mb, mc, sizeof(double) * (size_t)(n * n));
}

/* One iteration: kwork dependent multiply-adds per element; the values
 * converge to 1, so no overflow and no denormals slow some passes down. */
static void compute_iter(void)
{
    if (kernel_mm) {
        mm_iter();
        return;
    }
    for (long w = 0; w < kwork; w++)
        for (int i = 0; i < KLEN; i++) kbuf[i] = kbuf[i] * 0.999999 + 1e-6;
}

/* niter iterations; with a request, MPI_Test after every k-th iteration
 * (k > 0) until the request completes (t_seen: when it did). */
static double t_seen;
static void compute(long niter, int k, MPI_Request *req)
{
    int done = req == NULL || k == 0;
    for (long it = 1; it <= niter; it++) {
        compute_iter();
        if (!done && it % k == 0) {
            MPI_Test(req, &done, MPI_STATUS_IGNORE);
            if (done) t_seen = MPI_Wtime();
        }
    }
    ksink = kernel_mm ? mb[0] : kbuf[KLEN - 1];
}

static double min2(double a, double b) { return a < b ? a : b; }

static double time_iters(long n)
{
    double t0 = MPI_Wtime();
    compute(n, 0, NULL);
    return MPI_Wtime() - t0;
}

/* Sets kwork so that an iteration takes about 1 us, then measures it.  The
 * minimum over a few runs: interruptions only ever add time. */
static void calibrate(void)
{
    for (int i = 0; i < KLEN; i++) kbuf[i] = 1.0 + i;
    if (kernel_mm) {
        for (int i = 0; i < kernel_mm * kernel_mm; i++) { ma[i] = 0.5 / kernel_mm; mb[i] = 1.0 + i % 7; }
        /* the minimum of many short runs: a run the rank was descheduled in
         * (a loaded host) only ever lasts longer */
        long n = kernel_mm == 4 ? 2000 : 100;
        time_iters(n);
        iter_s = 1e9;
        for (int r = 0; r < 30; r++) iter_s = min2(iter_s, time_iters(n) / n);
        return;
    }
    while (time_iters(1000) < 1e-3 && kwork < (1L << 24)) kwork *= 2;
    double t = 1e9;
    for (int r = 0; r < 3; r++) t = min2(t, time_iters(1000) / 1000);
    kwork = (long)(kwork * 1e-6 / t + 0.5);
    if (kwork < 1) kwork = 1;
    iter_s = 1e9;
    for (int r = 0; r < 5; r++) iter_s = min2(iter_s, time_iters(2000) / 2000);
}

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* ---- the operations ---- */

enum op { IALLREDUCE, IBCAST };
static const char *op_name[] = { "iallreduce", "ibcast" };

static double sval(long i, int r) { return (double)(r + 1) * (double)(i % 13 + 1); }
static unsigned char bval(long n, long i) { return (unsigned char)(n * 7 + i * 13 + 1); }

static void fill(enum op op, long n)
{
    if (op == IALLREDUCE)
        for (long i = 0; i < n / 8; i++) sbuf[i] = sval(i, rank);
    else if (rank == 0)
        for (long i = 0; i < n; i++) bbuf[i] = bval(n, i);
}

/* The first, middle and last element: spoiled before a measurement, checked
 * after it (the whole buffer would cost more than the operation). */
static void spoil(enum op op, long n)
{
    long cnt = op == IALLREDUCE ? n / 8 : n, idx[3] = { 0, cnt / 2, cnt - 1 };
    for (int j = 0; j < 3; j++) {
        if (op == IALLREDUCE) rbuf[idx[j]] = -1.0;
        else if (rank != 0) bbuf[idx[j]] = (unsigned char)~bval(n, idx[j]);
    }
}

static void check(enum op op, long n)
{
    long cnt = op == IALLREDUCE ? n / 8 : n, idx[3] = { 0, cnt / 2, cnt - 1 };
    for (int j = 0; j < 3; j++) {
        int ok;
        if (op == IALLREDUCE) ok = rbuf[idx[j]] == (double)nranks * (nranks + 1) / 2 * (double)(idx[j] % 13 + 1);
        else ok = bbuf[idx[j]] == bval(n, idx[j]);
        if (!ok) {
            fprintf(stderr, "overlap: %s %ld bytes: rank %d has a wrong value at element %ld\n", op_name[op], n,
                    rank, idx[j]);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

static void blocking(enum op op, long n)
{
    if (op == IALLREDUCE) MPI_Allreduce(sbuf, rbuf, (int)(n / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else MPI_Bcast(bbuf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void start(enum op op, long n, MPI_Request *req)
{
    if (op == IALLREDUCE) MPI_Iallreduce(sbuf, rbuf, (int)(n / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, req);
    else MPI_Ibcast(bbuf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, req);
}

/* Operations per measurement: about 1 MiB moved, at most 100. */
static int inner(long n) { return n >= (1L << 20) ? 1 : n <= (1L << 14) ? 100 : (int)((1L << 20) / n); }

static double median(double *x)
{
    qsort(x, (size_t)reps, sizeof *x, bench_cmp_double);
    return reps % 2 ? x[reps / 2] : (x[reps / 2 - 1] + x[reps / 2]) / 2;
}

/* The slowest rank's time, on every rank. */
static double slowest(double t)
{
    double m;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* The blocking operation, m times; the slowest rank's time per operation. */
static double measure_blk(enum op op, long n, int m)
{
    spoil(op, n);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < m; i++) blocking(op, n);
    double t = slowest((MPI_Wtime() - t0) / m);
    check(op, n);
    return t;
}

/* The compute alone, m times; this rank's time and CPU time per run. */
static double measure_cmp(long niter, int m, double *cput)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double c0 = cpu_now(), t0 = MPI_Wtime();
    for (int i = 0; i < m; i++) compute(niter, 0, NULL);
    double t = (MPI_Wtime() - t0) / m;
    *cput = (cpu_now() - c0) / m;
    return t;
}

/* Start, compute testing every k iterations, wait; m times.  The slowest
 * rank's time per operation (on rank 0) and this rank's CPU time; *phase:
 * this rank's time per operation from the start call to the end of the
 * compute; *done: the last rank's time per operation from the start call to
 * the completion seen (first successful MPI_Test, or MPI_Wait's return). */
static double measure_ovl(enum op op, long n, long niter, int k, int m, double *cput, double *phase, double *done)
{
    MPI_Request req;
    double tph = 0, tdone = 0;
    spoil(op, n);
    MPI_Barrier(MPI_COMM_WORLD);
    double c0 = cpu_now(), t0 = MPI_Wtime();
    for (int i = 0; i < m; i++) {
        double ts = MPI_Wtime();
        t_seen = 0;
        start(op, n, &req);
        compute(niter, k, &req);
        double te = MPI_Wtime();
        tph += te - ts;
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        tdone += (t_seen > 0 ? t_seen : MPI_Wtime()) - ts;
    }
    double t = (MPI_Wtime() - t0) / m, tmax, d = tdone / m, dmax;
    *cput = (cpu_now() - c0) / m;
    *phase = tph / m;
    check(op, n);
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    *done = dmax;
    return tmax;
}

/* The non-blocking operation alone, m times: start, MPI_Wait; the slowest
 * rank's time per operation. */
static double measure_nbc(enum op op, long n, int m)
{
    MPI_Request req;
    spoil(op, n);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < m; i++) {
        start(op, n, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    double t = slowest((MPI_Wtime() - t0) / m);
    check(op, n);
    return t;
}

static void run(enum op op, long n, const int *ks, int nk)
{
    int m = inner(n);
    MPI_Request req;
    fill(op, n);
    for (int w = 0; w < 3; w++) {          /* first-touch, connections, algorithm set-up */
        blocking(op, n);
        start(op, n, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }

    /* The compute length: as long as the blocking operation. */
    for (int r = 0; r < reps; r++) blkv[r] = measure_blk(op, n, m);
    double tc = median(blkv) > min_cmp_s ? median(blkv) : min_cmp_s;
    if (fixed_cmp_s > 0) tc = fixed_cmp_s;
    long niter = (long)(tc / iter_s + 0.5);
    if (niter < 1) niter = 1;
    if (rank == 0) printf("# %s %ld iters=%ld inner=%d\n", op_name[op], n, niter, m);

    /* The measurements of one repetition follow each other, so that a change
     * of load on the host hits them alike; the CPU time of a run is compared
     * with that of the compute alone in the same repetition. */
    for (int r = 0; r < reps; r++) {
        double ccmp;
        blkv[r] = measure_blk(op, n, m);
        nbcv[r] = measure_nbc(op, n, m);
        cmpv[r] = measure_cmp(niter, m, &ccmp);
        for (int j = 0; j < nk; j++) {
            double ph, lost;
            totv[j * reps + r] = measure_ovl(op, n, niter, ks[j], m, &cpuv[j * reps + r], &ph, &donev[j * reps + r]);
            cpuv[j * reps + r] -= ccmp;
            lost = ph > 0 ? 1 - cmpv[r] / ph : 0;
            MPI_Reduce(&lost, &lostv[j * reps + r], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        }
    }
    if (rank != 0) return;
    double t_blk = median(blkv), t_cmp = median(cmpv), t_nbc = median(nbcv);
    for (int j = 0; j < nk; j++) {
        double t_tot = median(totv + j * reps), c = median(cpuv + j * reps);
        double lost = median(lostv + j * reps), t_done = median(donev + j * reps);
        double ovl = (t_blk + t_cmp - t_tot) / min2(t_blk, t_cmp);
        ovl = ovl < 0 ? 0 : ovl > 1 ? 1 : ovl;
        lost = lost < 0 ? 0 : lost;
        printf("ovl %s %ld %d %.4g %.4g %.4g %.1f %.4g %.1f %.4g %.4g\n", op_name[op], n, ks[j], t_blk * 1e6,
               t_cmp * 1e6, t_tot * 1e6, ovl * 100, c * 1e6, lost * 100, t_done * 1e6, t_nbc * 1e6);
    }
    fflush(stdout);
}

/* ---- options ---- */

static void usage_abort(const char *msg)
{
    bench_usage_abort(rank, "overlap", "[-s SIZES|default] [-k TESTS] [-r REPS] [-c vec|mm4|mm40] [-o OPS] [-t US] [-T US,...]", msg);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    const char *sizearg = "default", *karg = "0,1,10,100", *kernel = "vec", *oparg = "iallreduce,ibcast", *fixarg = NULL;
    static const char *const kernels[] = { "vec", "mm4", "mm40" };
    int want_op[2] = { 0, 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage_abort("option needs a value");
        const char *val = argv[++i];
        if (strcmp(a, "-s") == 0) sizearg = val;
        else if (strcmp(a, "-k") == 0) karg = val;
        else if (strcmp(a, "-r") == 0) reps = atoi(val);
        else if (strcmp(a, "-c") == 0) kernel = val;
        else if (strcmp(a, "-o") == 0) oparg = val;
        else if (strcmp(a, "-t") == 0) min_cmp_s = atof(val) * 1e-6;
        else if (strcmp(a, "-T") == 0) fixarg = val;
        else usage_abort("unknown option");
    }
    int kx = bench_index(kernels, 3, kernel);
    if (kx < 0) usage_abort("-c: the compute kernel is vec, mm4 or mm40");
    kernel_mm = kx == 1 ? 4 : kx == 2 ? 40 : 0;
    if (bench_pick(oparg, op_name, 2, want_op) != 0 || !(want_op[0] || want_op[1]))
        usage_abort("-o: a comma list of iallreduce, ibcast");
    if (reps < 1 || reps > 1000) usage_abort("-r: 1 to 1000 repetitions");
    if (!(min_cmp_s >= 0 && min_cmp_s <= 10)) usage_abort("-t: 0 to 10000000 microseconds");
    if (strcmp(sizearg, "default") == 0) sizearg = "8,1024,65536,1048576,4194304";
    long sizes[MAXSIZES], kl[MAXK];
    int nsizes = bench_parse_list(sizearg, sizes, MAXSIZES, 1L << 28);
    if (nsizes <= 0) usage_abort("-s: bad size list (at most 64 sizes of 0 to 256 MiB)");
    int nk = bench_parse_list(karg, kl, MAXK, 1000000);
    if (nk <= 0) usage_abort("-k: bad list of test intervals (at most 16, each 0 to 1000000)");
    long fixed[MAXSIZES];
    int nfixed = 0;
    if (fixarg && (nfixed = bench_parse_list(fixarg, fixed, MAXSIZES, 10000000)) <= 0)
        usage_abort("-T: bad list of compute lengths (at most 64, each 0 to 10000000 microseconds)");
    int ks[MAXK];
    for (int j = 0; j < nk; j++) ks[j] = (int)kl[j];

    size_t maxn = 8;
    for (int i = 0; i < nsizes; i++)
        if ((size_t)sizes[i] > maxn) maxn = (size_t)sizes[i];
    sbuf = malloc(maxn);
    rbuf = malloc(maxn);
    bbuf = malloc(maxn);
    blkv = malloc(sizeof(double) * (size_t)reps);
    cmpv = malloc(sizeof(double) * (size_t)reps);
    totv = malloc(sizeof(double) * (size_t)reps * (size_t)nk);
    cpuv = malloc(sizeof(double) * (size_t)reps * (size_t)nk);
    lostv = malloc(sizeof(double) * (size_t)reps * (size_t)nk);
    donev = malloc(sizeof(double) * (size_t)reps * (size_t)nk);
    nbcv = malloc(sizeof(double) * (size_t)reps);
    if (!sbuf || !rbuf || !bbuf || !blkv || !cmpv || !totv || !cpuv || !lostv || !donev || !nbcv)
        usage_abort("out of memory");
    memset(rbuf, 0, maxn);
    memset(bbuf, 0, maxn);

    calibrate();
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "unknown";
        int len = 0;
        if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS) strcpy(lib, "unknown");
        lib[len > 0 && len <= MPI_MAX_LIBRARY_VERSION_STRING ? len : MPI_MAX_LIBRARY_VERSION_STRING] = 0;
        lib[strcspn(lib, "\r\n,")] = 0;
        for (char *p = lib; *p; p++)
            if (*p == '\t') *p = ' ';
        printf("# overlap 2 ranks=%d reps=%d iter_us=%.3f kernel=%s library=%s\n", nranks, reps, iter_s * 1e6, kernel,
               lib);
        printf("# ovl op bytes k t_blk_us t_cmp_us t_tot_us overlap_pct cpu_us lost_pct t_done_us t_nbc_us\n");
        fflush(stdout);
    }
    for (int i = 0; i < nsizes && want_op[IALLREDUCE]; i++) {
        fixed_cmp_s = nfixed ? (double)fixed[i < nfixed ? i : nfixed - 1] * 1e-6 : 0;
        if (sizes[i] >= 8) run(IALLREDUCE, sizes[i], ks, nk);
    }
    for (int i = 0; i < nsizes && want_op[IBCAST]; i++) {
        fixed_cmp_s = nfixed ? (double)fixed[i < nfixed ? i : nfixed - 1] * 1e-6 : 0;
        if (sizes[i] > 0) run(IBCAST, sizes[i], ks, nk);
    }
    if (rank == 0) printf("# done\n");
    free(sbuf);
    free(rbuf);
    free(bbuf);
    free(blkv);
    free(cmpv);
    free(totv);
    free(cpuv);
    free(lostv);
    free(donev);
    free(nbcv);
    MPI_Finalize();
    return 0;
}
