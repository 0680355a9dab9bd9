/* The program of tests/scripts/ckpt_part.sh: partitioned requests
 * (MPI_Psend_init / MPI_Precv_init) checkpointed and restarted (issue 20).
 * A ring, on floating-point data, three pairs of persistent partitioned
 * requests made at the start:
 *   A  8 partitions of 512 doubles (eager messages), every iteration: the
 *      receive and the send started, then each partition computed and
 *      MPI_Pready'd one after the other with computation and a short sleep
 *      between them (so a checkpoint often comes between MPI_Start and the
 *      completion, with some partitions delivered and some not ready yet),
 *      MPI_Parrived polled, both waited for;
 *   B  4 partitions of 16384 doubles (128 KiB: rendezvous messages), a
 *      non-contiguous datatype on the receiving side (every other double of
 *      a vector), started every 5th iteration only: initialized and inactive
 *      (completed) at most checkpoints;
 *   C  2 partitions of 64 doubles, initialized at the start and started for
 *      the first time in the last 4 iterations (after every checkpoint): a
 *      request that was never started when the image was written.
 * Rank 0 prints "iteration I" every 10, and at the end "result H" (a hash of
 * every rank's data): the same bit for bit whatever the timing.
 *   ckpt_part [ITERS]   (default 300) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PA 8
#define NA 512
#define PB 4
#define NB 16384
#define PC 2
#define NC 64

static uint64_t hash(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

static int check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "ckpt_part: %s failed (%d)\n", what, rc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 300;
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int right = (me + 1) % np, left = (me + np - 1) % np;
    double *sa = malloc(sizeof(double) * PA * NA), *ra = malloc(sizeof(double) * PA * NA);
    double *sb = malloc(sizeof(double) * PB * NB), *rb = calloc((size_t)2 * PB * NB, sizeof(double));
    double sc[PC * NC], rc[PC * NC], x[NA];
    MPI_Datatype every2;                 /* one double of every two: B's receive side */
    MPI_Type_vector(NB, 1, 2, MPI_DOUBLE, &every2);
    MPI_Type_commit(&every2);
    for (int i = 0; i < PA * NA; i++) sa[i] = ra[i] = 0;
    for (int i = 0; i < PB * NB; i++) sb[i] = 1.0 + me * 1e-2 + i * 1e-7;
    for (int i = 0; i < PC * NC; i++) sc[i] = rc[i] = 0;
    for (int i = 0; i < NA; i++) x[i] = 1.0 + me * 0.25 + i * 1e-3;
    MPI_Request a[2], b[2], c[2];
    check(MPI_Precv_init(ra, PA, NA, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &a[0]), "Precv_init A");
    check(MPI_Psend_init(sa, PA, NA, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &a[1]), "Psend_init A");
    check(MPI_Precv_init(rb, PB, 1, every2, left, 2, MPI_COMM_WORLD, MPI_INFO_NULL, &b[0]), "Precv_init B");
    check(MPI_Psend_init(sb, PB, NB, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, MPI_INFO_NULL, &b[1]), "Psend_init B");
    check(MPI_Precv_init(rc, PC, NC, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &c[0]), "Precv_init C");
    check(MPI_Psend_init(sc, PC, NC, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &c[1]), "Psend_init C");
    double acc = 0;
    for (int it = 0; it < iters; it++) {
        check(MPI_Startall(2, a), "Startall A");
        int useb = it % 5 == 0, usec = it >= iters - 4;
        if (useb) check(MPI_Startall(2, b), "Startall B");
        if (usec) check(MPI_Startall(2, c), "Startall C");
        for (int p = 0; p < PA; p++) {
            for (int k = 0; k < 200; k++)
                for (int i = 0; i < NA; i++) x[i] = x[i] * 0.9999999 + 1e-9 * k;
            for (int i = 0; i < NA; i++) sa[p * NA + i] = x[i] * (p + 1) + it * 1e-3;
            check(MPI_Pready(p, a[1]), "Pready A");
            if (p % 2 == 1) usleep(300);
            int flag = 0;
            check(MPI_Parrived(a[0], p / 2, &flag), "Parrived A");
            acc += flag ? ra[(p / 2) * NA] * 1e-9 : 0;   /* not in the result: timing dependent */
        }
        if (useb) {
            for (int i = 0; i < PB * NB; i++) sb[i] = sb[i] * 0.999 + x[i % NA] * 1e-4;
            check(MPI_Pready_range(0, PB - 1, b[1]), "Pready_range B");
        }
        if (usec) {
            for (int i = 0; i < PC * NC; i++) sc[i] = x[i] + it;
            int l[PC];
            for (int p = 0; p < PC; p++) l[p] = PC - 1 - p;
            check(MPI_Pready_list(PC, l, c[1]), "Pready_list C");
        }
        check(MPI_Waitall(2, a, MPI_STATUSES_IGNORE), "Waitall A");
        if (useb) check(MPI_Waitall(2, b, MPI_STATUSES_IGNORE), "Waitall B");
        if (usec) check(MPI_Waitall(2, c, MPI_STATUSES_IGNORE), "Waitall C");
        for (int i = 0; i < NA; i++) {
            double s = 0;
            for (int p = 0; p < PA; p++) s += ra[p * NA + i];
            x[i] = x[i] * 0.5 + s * 0.0625 + rb[2 * ((size_t)i * 37 % (PB * NB))] * 1e-3 + rc[i % (PC * NC)] * 1e-4;
        }
        if (me == 0 && it % 10 == 0) {
            printf("iteration %d\n", it);
            fflush(stdout);
        }
        usleep(200);
    }
    for (int k = 0; k < 2; k++) {
        MPI_Request_free(&a[k]);
        MPI_Request_free(&b[k]);
        MPI_Request_free(&c[k]);
    }
    MPI_Type_free(&every2);
    uint64_t h = hash(x, sizeof x, 1469598103934665603ULL);
    h = hash(ra, sizeof(double) * PA * NA, h);
    h = hash(rb, sizeof(double) * 2 * PB * NB, h);
    h = hash(rc, sizeof rc, h);
    uint64_t *all = malloc((size_t)np * sizeof *all);
    MPI_Gather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (me == 0) {
        uint64_t t = 1469598103934665603ULL;
        for (int r = 0; r < np; r++) t = hash(&all[r], sizeof all[r], t);
        printf("result %016llx\n", (unsigned long long)t);
    }
    if (acc < 0) printf("(never)\n");
    free(sa); free(ra); free(sb); free(rb); free(all);
    MPI_Finalize();
    return 0;
}
