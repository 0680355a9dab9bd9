/* The io_uring engine finishes a collective's CPU steps (matching a header,
 * the CALC of a reduction and the sends after it) while rank 0 stays
 * outside MPI, with its completion thread (kumi_base_sched_uring_thread 1).
 * Rank 0 starts an MPI_Iallreduce of 1 MiB (doubles, MPI_SUM) and then makes
 * no MPI call: it sleeps ("sleep") or computes ("busy") until every other
 * rank has written a file saying its MPI_Wait returned with the right
 * values.  The check is free of timing: without the thread the other ranks
 * cannot finish (the sum needs rank 0's CALC and sends, which wait for its
 * next MPI call), and rank 0 gives up after LIMIT_S and fails.  Run with
 * KUMI_BASE_SCHED_ENGINE=uring over tcp (tests/scripts/sched_uring.sh); with
 * "noprogress" the thread is expected off (kumi_base_sched_uring_thread 0)
 * and the ranks must NOT finish while rank 0 stays out (the check can fail).
 * With "small" the MPI_Iallreduce is of one double: every send is written by
 * its start call, so rank 0's thread finds nothing to submit and sleeps on
 * the ring until the peers' messages complete there (engine.c, "The uring
 * engine's thread"; sched_uring.sh checks it woke so, in the KUMI_VERBOSE
 * summary).
 *
 * With "loop" (no other check): LOOP_OPS MPI_Iallreduce of LOOP_COUNT
 * doubles (32 KiB: more than a connection's stream receive brings with the
 * header), each started on every rank while the previous one's completion
 * thread may still doze between operations, then LOOP_US of computation,
 * then MPI_Wait; values checked (sched_uring.sh checks in the summary that
 * some of the thread's dozes, the application out of the library, ended
 * at a completion on the ring: engine.c, esleep_wait).  "loop1": the same
 * with one double per operation (sched_uring.sh checks that the completion
 * threads, taking the operations over from the ring, doze less than once
 * per operation: engine.c, "A take-over from the ring").  "loop N": N
 * doubles per operation instead of LOOP_COUNT.
 *
 * usage: sched_uring_calc sleep|busy [noprogress|small|loop [N]|loop1] */
#include "kt.h"
#include <errno.h>
#include <unistd.h>

#define COUNT (1 << 17)                 /* doubles: 1 MiB */
#define LIMIT_S 20.0                    /* rank 0 gives up */
#define NOPROGRESS_S 2.0                /* noprogress: how long rank 0 stays out */
#define LOOP_OPS 300                    /* loop: operations */
#define LOOP_US 400.0                   /* loop: computation after each start */
#define LOOP_COUNT 4096                 /* loop: doubles per operation */

static void flag_name(char *out, size_t len, const char *dir, int r)
{
    snprintf(out, len, "%s/rank%d", dir, r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int busy = argc > 1 && !strcmp(argv[1], "busy");
    int noprogress = argc > 2 && !strcmp(argv[2], "noprogress");
    int count = argc > 2 && !strcmp(argv[2], "small") ? 1 : COUNT;
    if (argc > 2 && (!strcmp(argv[2], "loop") || !strcmp(argv[2], "loop1"))) {
        volatile double x = 0;
        int lc = !strcmp(argv[2], "loop1") ? 1 : argc > 3 ? atoi(argv[3]) : LOOP_COUNT;
        KT_CHECK(lc > 0, "loop: a count of doubles > 0, not \"%s\"", argv[3]);
        double *a = malloc((size_t)lc * sizeof *a), *b = malloc((size_t)lc * sizeof *b);
        KT_CHECK(a && b, "out of memory");
        for (int it = 0; it < LOOP_OPS; it++) {
            MPI_Request lr;
            for (int i = 0; i < lc; i++) { a[i] = rank + it + i % 7; b[i] = -1; }
            KT_MPI(MPI_Iallreduce(a, b, lc, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &lr));
            double t0 = kt_now();
            while ((kt_now() - t0) * 1e6 < LOOP_US) x = x * 0.999 + 1.0;
            KT_MPI(MPI_Wait(&lr, MPI_STATUS_IGNORE));
            for (int i = 0; i < lc; i++)
                KT_CHECK(b[i] == (double)(size * (size - 1) / 2 + size * (it + i % 7)), "loop %d: element %d is %g",
                         it, i, b[i]);
        }
        free(a);
        free(b);
        if (rank == 0) printf("sched_uring_calc (%s): %d operations, values right\n", argv[2], LOOP_OPS);
        MPI_Finalize();
        return 0;
    }
    /* a directory of rank 0's (the ranks share the host's /tmp in this test) */
    char dir[64] = "";
    if (rank == 0) {
        strcpy(dir, "/tmp/kumi-uring-calc-XXXXXX");
        KT_CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    }
    KT_MPI(MPI_Bcast(dir, (int)sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD));
    double *in = malloc(COUNT * sizeof *in), *out = malloc(COUNT * sizeof *out);
    KT_CHECK(in && out, "out of memory");
    for (int i = 0; i < COUNT; i++) {
        in[i] = (double)(rank + 1) * (double)(i % 1000 + 1);
        out[i] = -1;
    }
    double factor = (double)size * (size + 1) / 2;  /* sum over ranks of (rank + 1) */
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Request r;
    /* small: the others start later, so that rank 0's start call cannot
     * find their messages there and finish the operation itself */
    if (count == 1 && rank != 0) usleep(100000);
    KT_MPI(MPI_Iallreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r));
    int done_while_out = 0;
    if (rank == 0) {
        /* no MPI call until every other rank said it is done (or LIMIT_S) */
        double t0 = kt_now(), limit = noprogress ? NOPROGRESS_S : LIMIT_S;
        volatile double s = 0;
        int seen = 0;
        while (kt_now() - t0 < limit) {
            seen = 0;
            for (int p = 1; p < size; p++) {
                char f[96];
                flag_name(f, sizeof f, dir, p);
                seen += access(f, F_OK) == 0;
            }
            if (seen == size - 1) break;
            if (busy) {
                for (int k = 0; k < 200000; k++) s = s * 0.999 + 1.0;
            } else {
                usleep(2000);
            }
        }
        done_while_out = seen == size - 1;
        printf("sched_uring_calc (%s): %d of %d ranks finished the MPI_Iallreduce while rank 0 stayed out of "
               "MPI (%.0f ms)\n", busy ? "busy" : "sleep", seen, size - 1, (kt_now() - t0) * 1e3);
        fflush(stdout);
    }
    KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < count; i++)
        KT_CHECK(out[i] == factor * (double)(i % 1000 + 1), "rank %d: element %d is %g, expected %g", rank, i, out[i],
                 factor * (double)(i % 1000 + 1));
    if (rank != 0) {                    /* the values are right: say so to rank 0, outside MPI */
        char f[96];
        flag_name(f, sizeof f, dir, rank);
        FILE *fp = fopen(f, "w");
        KT_CHECK(fp != NULL, "%s: %s", f, strerror(errno));
        fclose(fp);
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* then waited at once: the receives the completion thread posted last
     * (each connection's next header) complete while it is parked, the
     * application inside MPI_Wait */
    for (int it = 0; it < 20; it++) {
        int one = rank + it, sum = -1;
        KT_MPI(MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
        KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        KT_EQ_INT(sum, size * (size - 1) / 2 + size * it);
    }
    KT_MPI(MPI_Iallreduce(in, out, COUNT, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r));
    KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < COUNT; i += 97)
        KT_CHECK(out[i] == factor * (double)(i % 1000 + 1), "rank %d, waited at once: element %d is %g", rank, i, out[i]);
    if (rank == 0) {
        for (int p = 1; p < size; p++) {
            char f[96];
            flag_name(f, sizeof f, dir, p);
            unlink(f);
        }
        rmdir(dir);
        if (noprogress)
            KT_CHECK(!done_while_out, "the ranks finished without rank 0's MPI call and without the thread");
        else
            KT_CHECK(done_while_out, "the other ranks did not finish while rank 0 stayed out of MPI (%.0f s)",
                     LIMIT_S);
    }
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
