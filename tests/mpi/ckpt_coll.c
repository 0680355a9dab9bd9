/* The MPI program of tests/scripts/ckpt_coll.sh (checkpoints of a job whose
 * small collectives run on coll/sm's shared-memory segments): iterations on
 * doubles made of small blocking collectives (Barrier, Bcast with a moving
 * root, Reduce, Allreduce, Allgather, Alltoall) on MPI_COMM_WORLD and on a
 * communicator split in two, with a little computation of a length that
 * depends on the rank and the iteration between them, so that ranks often
 * wait inside a collective for the others (a checkpoint then comes while a
 * collective is in progress).
 * At the end rank 0 prints "result HEX": a hash of every rank's data, bit
 * for bit the same in every run with the same components.
 *
 *   ckpt_coll ITERS [pause K]
 *     pause K  after iteration K's collectives an MPI_Barrier, then rank 0
 *              prints "pausing" and every rank sleeps 3 s outside MPI (no
 *              collective in progress: a checkpoint then finds them all done)
 * Rank 0 prints "iteration I" on stderr every 10 iterations. */
#include <mpi.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 64

static uint64_t mix(uint64_t h, const double *a, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t w;
        memcpy(&w, &a[i], 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    return h;
}

#define CHECK(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) { fprintf(stderr, "%s failed: %d\n", #x, rc_); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

static void work(double *a, int reps, int it)
{
    for (int rep = 0; rep < reps; rep++)
        for (int i = 0; i < N; i++) a[i] = a[i] * 0.9999 + sin(a[i] + it) * 1e-4;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 100;
    int pause_at = argc > 3 && strcmp(argv[2], "pause") == 0 ? atoi(argv[3]) : -1;
    MPI_Comm half;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half));
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    double a[N], b[N], *all = malloc((size_t)size * N * sizeof *all), *x = malloc((size_t)size * 2 * sizeof *x),
           *y = malloc((size_t)size * 2 * sizeof *y);
    for (int i = 0; i < N; i++) a[i] = sin(rank * 100.0 + i);
    for (int it = 0; it < iters; it++) {
        if (rank == 0 && it % 10 == 0) fprintf(stderr, "iteration %d\n", it);
        work(a, 20 + 30 * ((rank + it) % size), it);
        CHECK(MPI_Barrier(MPI_COMM_WORLD));
        memcpy(b, a, sizeof b);
        CHECK(MPI_Bcast(b, 8, MPI_DOUBLE, it % size, MPI_COMM_WORLD));
        for (int i = 0; i < 8; i++) a[i] += b[i] * 1e-3;
        work(a, 10 * ((rank * 7 + it) % 5), it);
        CHECK(MPI_Allreduce(a, b, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < 8; i++) a[8 + i] += b[i] * 1e-3;
        CHECK(MPI_Allgather(a + 16, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, MPI_COMM_WORLD));
        for (int r = 0; r < size; r++) a[20 + r % 8] += all[r * 4] * 1e-4;
        for (int r = 0; r < size; r++) x[2 * r] = a[r % N], x[2 * r + 1] = a[(r + 30) % N];
        CHECK(MPI_Alltoall(x, 2, MPI_DOUBLE, y, 2, MPI_DOUBLE, MPI_COMM_WORLD));
        for (int r = 0; r < size; r++) a[32 + r % 16] += (y[2 * r] - y[2 * r + 1]) * 1e-4;
        work(a, 10 * ((rank + 3 * it) % 4), it);
        double hmax = 0, hsum = 0;
        CHECK(MPI_Allreduce(&a[it % N], &hmax, 1, MPI_DOUBLE, MPI_MAX, half));
        CHECK(MPI_Reduce(&a[(it + 1) % N], &hsum, 1, MPI_DOUBLE, MPI_SUM, 0, half));
        CHECK(MPI_Bcast(&hsum, 1, MPI_DOUBLE, 0, half));
        CHECK(MPI_Barrier(half));
        a[(it * 7) % N] += hmax * 1e-6 + hsum * 1e-7;
        if (it == pause_at) {
            CHECK(MPI_Barrier(MPI_COMM_WORLD));
            if (rank == 0) fprintf(stderr, "pausing\n");
            sleep(3);
        }
    }
    uint64_t h = mix(0xcbf29ce484222325ull, a, N), *hh = malloc((size_t)size * sizeof *hh);
    CHECK(MPI_Gather(&h, 1, MPI_UINT64_T, hh, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        uint64_t t = 0xcbf29ce484222325ull;
        for (int i = 0; i < size; i++) t = (t ^ hh[i]) * 0x100000001b3ull;
        printf("result %016llx\n", (unsigned long long)t);
    }
    (void)hr;
    (void)hs;
    MPI_Comm_free(&half);
    free(all); free(x); free(y); free(hh);
    MPI_Finalize();
    return 0;
}
