/* The program of tests/scripts/ckpt_rma.sh: RMA windows checkpointed and
 * restarted (issue 20).  Two windows: one of MPI_Win_allocate (its memory in
 * the host's shared segment: direct loads and stores between the host's
 * ranks) and one of MPI_Win_create over malloc'd memory (reached with CMA on
 * one host, by the process id).  Each iteration, on floating-point data:
 *   - a fence epoch: every rank puts its vector into its slot of its right
 *     neighbour's window and gets the left neighbour's, fence;
 *   - lock / unlock epochs: every rank locks its right neighbour (exclusive)
 *     on the second window, accumulates (MPI_SUM) into its own slot there
 *     and reads one, unlocks; a barrier; then reads its own window under a
 *     shared lock of itself;
 *   - computation mixing what arrived.
 * Every location has one writer, so the result is the same bit for bit
 * whatever the timing.  Rank 0 prints "iteration I" every 10, and at the end
 * "result H" (a hash of every rank's data).
 *   ckpt_rma [ITERS]   (default 300) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 64

static uint64_t hash(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 300;
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int right = (me + 1) % np, left = (me + np - 1) % np;
    double *a, *b = calloc((size_t)2 * N, sizeof *b), x[N], got[N], rd[N];
    MPI_Win wa, wb;
    /* wa: [0, N) the left neighbour's vector (its put), [N, 2N) free */
    MPI_Win_allocate((MPI_Aint)(2 * N * sizeof(double)), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &a, &wa);
    memset(a, 0, 2 * N * sizeof(double));
    /* wb: [0, N) what the left neighbour accumulates, [N, 2N) own values the right one reads */
    MPI_Win_create(b, (MPI_Aint)(2 * N * sizeof(double)), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &wb);
    for (int i = 0; i < N; i++) x[i] = 1.0 + me * 0.25 + i * 1e-3;
    MPI_Win_fence(0, wa);
    for (int it = 0; it < iters; it++) {
        /* fence epoch */
        MPI_Put(x, N, MPI_DOUBLE, right, 0, N, MPI_DOUBLE, wa);
        MPI_Get(got, N, MPI_DOUBLE, left, N, N, MPI_DOUBLE, wa);
        MPI_Win_fence(0, wa);
        for (int i = 0; i < N; i++) {
            x[i] = x[i] * 0.999 + a[i] * 0.0005 + got[i] * 0.25 + 1e-4 * (it % 7);
            a[N + i] = x[i] * 0.5;           /* read by the right neighbour's Get next time */
        }
        MPI_Win_fence(0, wa);
        /* lock / unlock epochs */
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, wb);
        MPI_Accumulate(x, N, MPI_DOUBLE, right, 0, N, MPI_DOUBLE, MPI_SUM, wb);
        MPI_Get(rd, N, MPI_DOUBLE, right, N, N, MPI_DOUBLE, wb);
        MPI_Win_unlock(right, wb);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, wb);
        for (int i = 0; i < N; i++) {
            x[i] += 1e-6 * b[i] + 1e-3 * rd[i];
            b[N + i] = x[i] * 0.125;
            if (b[i] > 1e6) b[i] *= 1e-3;
        }
        MPI_Win_unlock(me, wb);
        MPI_Barrier(MPI_COMM_WORLD);    /* b[N..] written before the next Get */
        /* computation outside MPI */
        for (int k = 0; k < 2000; k++)
            for (int i = 0; i < N; i++) x[i] = x[i] * 0.9999999 + 1e-9 * k;
        if (me == 0 && it % 10 == 0) {
            printf("iteration %d\n", it);
            fflush(stdout);
        }
        usleep(2000);
    }
    MPI_Win_fence(0, wa);
    uint64_t h = hash(x, sizeof x, 1469598103934665603ULL);
    h = hash(a, 2 * N * sizeof(double), h);
    h = hash(b, 2 * N * sizeof(double), h);
    uint64_t *all = malloc((size_t)np * sizeof *all);
    MPI_Gather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (me == 0) {
        uint64_t t = 1469598103934665603ULL;
        for (int r = 0; r < np; r++) t = hash(&all[r], sizeof all[r], t);
        printf("result %016llx\n", (unsigned long long)t);
    }
    MPI_Win_free(&wb);
    MPI_Win_free(&wa);
    free(b);
    free(all);
    MPI_Finalize();
    return 0;
}
