/* collbench: blocking collectives in portable MPI, built with each
 * implementation's own mpicc so that Kumi, Open MPI and MPICH run the very
 * same code with the same sizes and iteration counts (like mpibench.c).
 *
 *   collbench [-m OPS] [-s SIZES] [-r REPS] [-x SCALE] [-q] [-f OP]
 *     -m  comma list of bcast,allreduce,allgather,alltoall,barrier   (default: all)
 *     -s  comma list of byte counts (suffix k or m allowed), or "default":
 *         8,65536,1048576
 *     -r  repetitions per size; the median is reported  (default 5)
 *     -x  scale every iteration count by SCALE          (default 1)
 *     -q  quick: -r 3 -x 0.1
 *     -f  OP: the last rank spoils one element of OP's result before the
 *         check, which must then fail (tests the check itself)
 *
 * Operations, on MPI_COMM_WORLD (any number of ranks):
 *   bcast      MPI_Bcast of BYTES MPI_BYTE from root 0
 *   allreduce  MPI_Allreduce of max(BYTES / 8, 1) MPI_DOUBLE with MPI_SUM
 *   allgather  MPI_Allgather, a block of BYTES MPI_BYTE from every rank
 *   alltoall   MPI_Alltoall, a block of BYTES MPI_BYTE for every pair of ranks
 *   barrier    MPI_Barrier, reported as size 0 whatever -s says
 *   ibcast, iallreduce   (not in the default list) MPI_Ibcast / MPI_Iallreduce as
 *              bcast / allreduce, each followed at once by MPI_Wait: the cost of a
 *              non-blocking collective waited at once (issue 22 item 4, the thread
 *              engine against the loop engine: KUMI_BASE_SCHED_ENGINE)
 * A size of 0 is left out of the four data operations.
 *
 * Per operation and size: one operation whose result is checked in full on
 * every rank against values computed from rank and index (a wrong value: a
 * message on stderr and exit 3, so a broken collective is never timed),
 * ITERS / 10 + 2 warm-up operations, then per repetition a barrier and ITERS
 * operations back to back, timed on every rank, and an untimed barrier; the
 * repetition's value is the slowest rank's average time per operation
 * (MPI_Reduce with MPI_MAX).  The closing barrier keeps a rank that is done
 * from going on (a reduction's non-roots leave at once) to the next size's
 * buffers and operations while another rank still times its loop: with more
 * ranks than cores that work took the core of the rank still timing, and the
 * last repetition of every size, the only one with -r 1, took a time slice
 * more (4 ranks on 2 cores, 8 B, Kumi and Open MPI alike: Allgather 27-304 us
 * against 3-8, Bcast 1.5-28 against 0.25-0.8).  ITERS
 * depends only on the size and SCALE, never on the timings, so that every
 * implementation does the same work.
 *
 * Output (rank 0, stdout), one line per operation and size:
 *   # collbench 1 ranks=N reps=R scale=S library=<first line of MPI_Get_library_version>
 *   # op bytes iters median min max unit
 *   OP BYTES ITERS MEDIAN MIN MAX us
 *   # done */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include "benchutil.h"


enum op { BCAST, ALLREDUCE, ALLGATHER, ALLTOALL, IBCAST, IALLREDUCE, BARRIER, NOPS };
static const char *op_name[NOPS] = { "bcast", "allreduce", "allgather", "alltoall", "ibcast", "iallreduce",
                                     "barrier" };

static int rank, nranks, reps = 5;
static double scale = 1.0;
static int fault = -1;             /* -f: the operation whose result gets spoiled */
static unsigned char *sbuf, *rbuf; /* send and receive buffers (bcast: rbuf alone) */

static int scaled(long base)
{
    double v = base * scale;
    return v < 5 ? 5 : (int)v;
}

static long clampl(long v, long lo, long hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Operations per repetition: 2000 up to 16 KiB, then 64 MiB of blocks
 * (at least 50 operations); scaled, at least 5. */
static int iters_for(long n)
{
    return scaled(n <= 16384 ? 2000 : clampl((1L << 26) / n, 50, 2000));
}

/* ---- values from rank and index ---- */

/* A byte of data owned by x at index i; i / 251 keeps the pattern from
 * repeating at a power of two, so a misplaced segment shows. */
static unsigned char bval(long x, long i) { return (unsigned char)(x * 31 + i * 7 + i / 251 + 1); }

/* Allreduce: rank r's element i; the sum over the ranks is exact. */
static double dval(long r, long i) { return (double)(r + 1) * (double)(i % 1021 + 1); }

static double dsum(long i) { return (double)nranks * (nranks + 1) / 2 * (double)(i % 1021 + 1); }

/* The blocking operation whose data and result a non-blocking one has. */
static enum op blocking(enum op op) { return op == IBCAST ? BCAST : op == IALLREDUCE ? ALLREDUCE : op; }

static long count_of(enum op op, long n) { return op == ALLREDUCE ? (n / 8 > 0 ? n / 8 : 1) : n; }

/* The send data of this rank and a receive buffer that holds no right value. */
static void fill(enum op op, long n)
{
    op = blocking(op);
    double *sd = (double *)(void *)sbuf, *rd = (double *)(void *)rbuf;
    long cnt = count_of(op, n);
    switch (op) {
    case BCAST:
        for (long i = 0; i < n; i++) rbuf[i] = rank == 0 ? bval(0, i) : (unsigned char)~bval(0, i);
        break;
    case ALLREDUCE:
        for (long i = 0; i < cnt; i++) {
            sd[i] = dval(rank, i);
            rd[i] = -1.0;
        }
        break;
    case ALLGATHER:
        for (long i = 0; i < n; i++) sbuf[i] = bval(rank, i);
        for (long i = 0; i < n * nranks; i++) rbuf[i] = (unsigned char)~bval(i / n, i % n);
        break;
    case ALLTOALL:       /* the block for rank d: data of the pair (rank, d) */
        for (long i = 0; i < n * nranks; i++) {
            sbuf[i] = bval((long)rank * nranks + i / n, i % n);
            rbuf[i] = (unsigned char)~bval((i / n) * nranks + rank, i % n);
        }
        break;
    default:
        break;
    }
}

static void run_op(enum op op, long n)
{
    MPI_Request r;
    switch (op) {
    case IBCAST:
        MPI_Ibcast(rbuf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        break;
    case IALLREDUCE:
        MPI_Iallreduce(sbuf, rbuf, (int)count_of(ALLREDUCE, n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        break;
    case BCAST:
        MPI_Bcast(rbuf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, (int)count_of(op, n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    default:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
}

/* The whole result on this rank; the first wrong element ends the job. */
static void check(enum op op, long n)
{
    double *rd = (double *)(void *)rbuf;
    bool spoil = (int)op == fault;
    const char *name = op_name[op];
    op = blocking(op);
    long cnt = op == ALLREDUCE ? count_of(op, n) : op == BCAST ? n : n * nranks;
    if (spoil && rank == nranks - 1 && cnt > 0) {     /* -f */
        if (op == ALLREDUCE) rd[cnt / 2] += 1.0;
        else rbuf[cnt / 2] ^= 0x10;
    }
    for (long i = 0; i < cnt; i++) {
        double got, want;
        long from = 0;                  /* the rank whose data element i is */
        if (op == ALLREDUCE) {
            got = rd[i];
            want = dsum(i);
        } else {
            from = op == BCAST ? 0 : i / n;
            got = rbuf[i];
            want = bval(op == ALLTOALL ? from * nranks + rank : from, op == BCAST ? i : i % n);
        }
        if (got != want) {
            char where[64] = "";
            if (op == ALLGATHER || op == ALLTOALL)
                snprintf(where, sizeof where, " (block of rank %ld, byte %ld)", from, i % n);
            fprintf(stderr, "collbench: %s %ld bytes on %d ranks: wrong result on rank %d at "
                    "element %ld%s: %g, expected %g\n", name, n, nranks, rank, i, where,
                    got, want);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

/* One repetition: ITERS operations between two barriers (the second one
 * untimed: see the head of this file); the slowest rank's time per operation
 * (rank 0). */
static double measure(enum op op, long n, int iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) run_op(op, n);
    double t = (MPI_Wtime() - t0) / iters, tmax = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return tmax;
}

static void bench(enum op op, long n, double *v)
{
    int iters = iters_for(n), warm = iters / 10 + 2;
    fill(op, n);
    run_op(op, n);
    check(op, n);
    for (int i = 0; i < warm; i++) run_op(op, n);
    for (int r = 0; r < reps; r++) v[r] = measure(op, n, iters) * 1e6;
    if (rank != 0) return;
    bench_print(op_name[op], n, iters, v, reps);
}

/* ---- options ---- */

static void usage_abort(const char *msg)
{
    bench_usage_abort(rank, "collbench",
                      "[-m bcast,allreduce,allgather,alltoall,barrier,ibcast,iallreduce] [-s SIZES|default] "
                      "[-r REPS] [-x SCALE] [-q] [-f OP]", msg);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    struct bench_opts o = { .ops = "bcast,allreduce,allgather,alltoall,barrier", .default_sizes = "8,65536,1048576", .names = op_name,
                            .nnames = NOPS, .reps = reps, .scale = scale };
    const char *bad = bench_options(argc, argv, &o);
    if (bad) usage_abort(bad);
    if (o.fault) {
        fault = bench_index(op_name, NOPS, o.fault);
        if (fault < 0 || fault == BARRIER) usage_abort("-f: one of bcast, allreduce, allgather, alltoall, ibcast, iallreduce");
    }
    reps = o.reps;
    scale = o.scale;
    long *sizes = o.sizes;
    int nsizes = o.nsizes, *want = o.want;

    /* alltoall and allgather: a block per rank on both sides */
    size_t maxn = 8;
    for (int i = 0; i < nsizes; i++)
        if ((size_t)sizes[i] > maxn) maxn = (size_t)sizes[i];
    sbuf = malloc(maxn * (size_t)nranks);
    rbuf = malloc(maxn * (size_t)nranks);
    double *v = malloc(sizeof(double) * (size_t)reps);
    if (!sbuf || !rbuf || !v) usage_abort("out of memory");

    if (rank == 0) bench_header("collbench", nranks, reps, scale);
    for (int o = 0; o < BARRIER; o++)
        for (int i = 0; i < nsizes && want[o]; i++)
            if (sizes[i] > 0) bench((enum op)o, sizes[i], v);
    if (want[BARRIER]) bench(BARRIER, 0, v);
    if (rank == 0) printf("# done\n");
    free(sbuf);
    free(rbuf);
    free(v);
    MPI_Finalize();
    return 0;
}
