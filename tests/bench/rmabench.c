/* rmabench: one-sided latency in portable MPI, built with each
 * implementation's own mpicc so that Kumi, Open MPI and MPICH run the very
 * same code with the same sizes and iteration counts (like collbench.c).
 *
 *   rmabench [-m OPS] [-s SIZES] [-r REPS] [-x SCALE] [-q] [-f OP]
 *     -m  comma list of put,get,acc,fop                 (default: all)
 *     -s  comma list of byte counts (suffix k or m allowed), or "default":
 *         8,65536
 *     -r  repetitions per size; the median is reported  (default 5)
 *     -x  scale every iteration count by SCALE          (default 1)
 *     -q  quick: -r 3 -x 0.1
 *     -f  OP: the origin spoils one element of what it read back for OP's
 *         check, which must then fail (tests the check itself)
 *
 * Exactly 2 ranks: rank 0 is the origin, rank 1 the target.  Every rank
 * allocates a window of the largest size (at least 8 bytes) with
 * MPI_Win_allocate, disp_unit 1; every operation goes to rank 1 at
 * displacement 0.
 *   put  MPI_Put of BYTES MPI_BYTE
 *   get  MPI_Get of BYTES MPI_BYTE
 *   acc  MPI_Accumulate of max(BYTES / 8, 1) MPI_DOUBLE with MPI_SUM
 *   fop  MPI_Fetch_and_op of one MPI_INT64_T with MPI_SUM, reported as
 *        size 8 whatever -s says
 * A size of 0 is left out of put, get and acc.
 *
 * Per operation and size: first a check, so that a broken operation is never
 * timed: the target sets its window memory to known values (under an
 * exclusive lock of its own window), the origin does one operation and
 * MPI_Win_flush, reads the window back with MPI_Get (fop: checks the fetched
 * value, then reads the final one) and compares; put, acc and fop are then
 * also checked by the target in its own memory (under an exclusive lock,
 * before anything is timed).  A wrong value: a message on
 * stderr and exit 3.  Then ITERS / 10 + 2 warm-up operations and per
 * repetition: rank 0 opens a passive-target epoch, MPI_Win_lock(
 * MPI_LOCK_SHARED, 1), and times ITERS times (operation; MPI_Win_flush(1))
 * with MPI_Wtime, then MPI_Win_unlock; the repetition's value is the average
 * time of one operation with its flush.  ITERS depends only on the size and
 * SCALE, never on the timings, so that every implementation does the same
 * work.
 *
 * The target waits in MPI_Barrier meanwhile: it is inside MPI, so an
 * implementation whose passive-target operations need the target's progress
 * (active messages handled by the target's own MPI calls) is not penalised
 * unfairly.  The numbers therefore say nothing about a target that computes
 * outside MPI during the epoch.
 *
 * Output (rank 0, stdout), one line per operation and size:
 *   # rmabench 1 ranks=N reps=R scale=S library=<first line of MPI_Get_library_version>
 *   # op bytes iters median min max unit
 *   OP BYTES ITERS MEDIAN MIN MAX us
 *   # done */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "benchutil.h"


enum op { PUT, GET, ACC, FOP, NOPS };
static const char *op_name[NOPS] = { "put", "get", "acc", "fop" };

static int rank, nranks, reps = 5;
static double scale = 1.0;
static int fault = -1;             /* -f: the operation whose check gets spoiled */
static unsigned char *obuf, *rbuf; /* the origin's source and result buffers */
static unsigned char *wbase;       /* this rank's window memory */
static MPI_Win win;

/* The fop check: the target's value (beyond 32 bits, so that a truncation
 * shows) and the origin's operand. */
static const int64_t fop_init = ((int64_t)1 << 40) + 3, fop_operand = 7;

static int scaled(long base)
{
    double v = base * scale;
    return v < 5 ? 5 : (int)v;
}

static long clampl(long v, long lo, long hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Operations per repetition: 20000 up to 4 KiB, then 256 MiB of data
 * (at least 50 operations); scaled, at least 5. */
static int iters_for(long n)
{
    return scaled(n <= 4096 ? 20000 : clampl((1L << 28) / n, 50, 20000));
}

/* ---- values from owner and index ---- */

/* A byte of data owned by x at index i; i / 251 keeps the pattern from
 * repeating at a power of two, so a misplaced segment shows. */
static unsigned char bval(long x, long i) { return (unsigned char)(x * 31 + i * 7 + i / 251 + 1); }

/* Accumulate: the target's element i before, the origin's operand; the sum
 * is exact. */
static double tval(long i) { return (double)(i % 1021 + 1); }

static double oval(long i) { return 1000.0 * (double)(i % 7 + 1); }

static long count_of(enum op op, long n) { return op == ACC ? (n / 8 > 0 ? n / 8 : 1) : op == FOP ? 1 : n; }

/* The target: its window memory before the check (put: no right value). */
static void target_fill(enum op op, long n)
{
    double *wd = (double *)(void *)wbase;
    long cnt = count_of(op, n);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
    switch (op) {
    case PUT:
        for (long i = 0; i < n; i++) wbase[i] = (unsigned char)~bval(0, i);
        break;
    case GET:
        for (long i = 0; i < n; i++) wbase[i] = bval(1, i);
        break;
    case ACC:
        for (long i = 0; i < cnt; i++) wd[i] = tval(i);
        break;
    case FOP:
        memcpy(wbase, &fop_init, sizeof fop_init);
        break;
    default:
        break;
    }
    MPI_Win_unlock(1, win);
}

/* The origin: its operands and a result buffer that holds no right value. */
static void origin_fill(enum op op, long n)
{
    double *od = (double *)(void *)obuf, *rd = (double *)(void *)rbuf;
    long cnt = count_of(op, n);
    switch (op) {
    case PUT:
        for (long i = 0; i < n; i++) {
            obuf[i] = bval(0, i);
            rbuf[i] = (unsigned char)~bval(0, i);
        }
        break;
    case GET:
        for (long i = 0; i < n; i++) rbuf[i] = (unsigned char)~bval(1, i);
        break;
    case ACC:
        for (long i = 0; i < cnt; i++) {
            od[i] = oval(i);
            rd[i] = -1.0;
        }
        break;
    case FOP: {
        int64_t bad = -1;
        memcpy(obuf, &fop_operand, sizeof fop_operand);
        memcpy(rbuf, &bad, sizeof bad);
        memcpy(rbuf + 8, &bad, sizeof bad);
        break;
    }
    default:
        break;
    }
}

/* One operation to rank 1 at displacement 0 and its completion at the origin. */
static void run_op(enum op op, long n)
{
    switch (op) {
    case PUT:
        MPI_Put(obuf, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
        break;
    case GET:
        MPI_Get(rbuf, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
        break;
    case ACC: {
        int cnt = (int)count_of(op, n);
        MPI_Accumulate(obuf, cnt, MPI_DOUBLE, 1, 0, cnt, MPI_DOUBLE, MPI_SUM, win);
        break;
    }
    default:
        MPI_Fetch_and_op(obuf, rbuf, MPI_INT64_T, 1, 0, MPI_SUM, win);
        break;
    }
    MPI_Win_flush(1, win);
}

static void wrong(enum op op, long n, const char *who, long i, double got, double want)
{
    fprintf(stderr, "rmabench: %s %ld bytes: wrong value %s at element %ld: %.17g, expected %.17g\n",
            op_name[op], n, who, i, got, want);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* The value element i must have after the check's operation (put, get: a
 * byte, acc: a double, fop: element 0 the fetched, element 1 the final value). */
static double want_of(enum op op, long i)
{
    switch (op) {
    case PUT:
        return bval(0, i);
    case GET:
        return bval(1, i);
    case ACC:
        return tval(i) + oval(i);
    default:
        return (double)(i == 0 ? fop_init : fop_init + fop_operand);
    }
}

static double got_of(enum op op, const unsigned char *buf, long i)
{
    if (op == ACC) return ((const double *)(const void *)buf)[i];
    if (op == FOP) {
        int64_t x;
        memcpy(&x, buf + 8 * i, sizeof x);
        return (double)x;
    }
    return buf[i];
}

/* One operation, read back by the origin and compared in full; then the
 * target compares its own memory.  The first wrong element ends the job. */
static void check(enum op op, long n)
{
    long cnt = count_of(op, n);
    if (rank == 1) target_fill(op, n);
    else origin_fill(op, n);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        run_op(op, n);
        if (op == PUT) MPI_Get(rbuf, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
        else if (op == ACC) MPI_Get(rbuf, (int)cnt, MPI_DOUBLE, 1, 0, (int)cnt, MPI_DOUBLE, win);
        else if (op == FOP) MPI_Get(rbuf + 8, 1, MPI_INT64_T, 1, 0, 1, MPI_INT64_T, win);
        MPI_Win_flush(1, win);
        MPI_Win_unlock(1, win);
        long nchk = op == FOP ? 2 : cnt;
        if ((int)op == fault) {                                 /* -f */
            if (op == ACC) ((double *)(void *)rbuf)[nchk / 2] += 1.0;
            else if (op == FOP) rbuf[0] ^= 0x10;
            else rbuf[nchk / 2] ^= 0x10;
        }
        for (long i = 0; i < nchk; i++) {
            double got = got_of(op, rbuf, i), want = want_of(op, i);
            if (got != want)
                wrong(op, n, op == FOP && i == 0 ? "fetched by the origin" : "read back by the origin",
                      i, got, want);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1 && op != GET) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        if (op == FOP) {
            double got = got_of(op, wbase, 0), want = want_of(op, 1);
            if (got != want) wrong(op, n, "in the target's memory", 0, got, want);
        } else {
            for (long i = 0; i < cnt; i++) {
                double got = got_of(op, wbase, i), want = want_of(op, i);
                if (got != want) wrong(op, n, "in the target's memory", i, got, want);
            }
        }
        MPI_Win_unlock(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);        /* no timed operation before the target's check is done */
}

/* One repetition: rank 0 times ITERS operations, each with its flush, in one
 * passive-target epoch; the target waits in the barrier (inside MPI).  The
 * time per operation (rank 0). */
static double measure(enum op op, long n, int iters)
{
    double t = 0;
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        double t0 = MPI_Wtime();
        for (int it = 0; it < iters; it++) run_op(op, n);
        t = (MPI_Wtime() - t0) / iters;
        MPI_Win_unlock(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return t;
}

static void bench(enum op op, long n, double *v)
{
    int iters = iters_for(n), warm = iters / 10 + 2;
    check(op, n);
    measure(op, n, warm);
    for (int r = 0; r < reps; r++) v[r] = measure(op, n, iters) * 1e6;
    if (rank != 0) return;
    bench_print(op_name[op], n, iters, v, reps);
}

/* ---- options ---- */

static void usage_abort(const char *msg)
{
    bench_usage_abort(rank, "rmabench",
                      "[-m put,get,acc,fop] [-s SIZES|default] [-r REPS] [-x SCALE] [-q] [-f OP]  "
                      "(2 ranks)", msg);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    struct bench_opts o = { .ops = "put,get,acc,fop", .default_sizes = "8,65536", .names = op_name,
                            .nnames = NOPS, .reps = reps, .scale = scale };
    const char *bad = bench_options(argc, argv, &o);
    if (bad) usage_abort(bad);
    if (o.fault) {
        fault = bench_index(op_name, NOPS, o.fault);
        if (fault < 0) usage_abort("-f: one of put, get, acc, fop");
    }
    if (nranks != 2) {
        char msg[96];
        snprintf(msg, sizeof msg, "needs exactly 2 ranks (0 the origin, 1 the target), not %d", nranks);
        usage_abort(msg);
    }
    reps = o.reps;
    scale = o.scale;
    long *sizes = o.sizes;
    int nsizes = o.nsizes, *want = o.want;

    /* fop and the fop check: two 8-byte values */
    size_t maxn = 16;
    for (int i = 0; i < nsizes; i++)
        if ((size_t)sizes[i] > maxn) maxn = (size_t)sizes[i];
    obuf = malloc(maxn);
    rbuf = malloc(maxn);
    double *v = malloc(sizeof(double) * (size_t)reps);
    if (!obuf || !rbuf || !v) usage_abort("out of memory");
    MPI_Win_allocate((MPI_Aint)maxn, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wbase, &win);

    if (rank == 0) bench_header("rmabench", nranks, reps, scale);
    for (int o = 0; o < FOP; o++)
        for (int i = 0; i < nsizes && want[o]; i++)
            if (sizes[i] > 0) bench((enum op)o, sizes[i], v);
    if (want[FOP]) bench(FOP, 8, v);
    if (rank == 0) printf("# done\n");
    MPI_Win_free(&win);
    free(obuf);
    free(rbuf);
    free(v);
    MPI_Finalize();
    return 0;
}
