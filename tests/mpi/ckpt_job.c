/* The MPI program of tests/scripts/ckpt_mpi.sh (coordinated checkpoints):
 * iterations on doubles that mix
 *  - point-to-point with a derived datatype (a strided vector) around a ring,
 *  - messages left in the unexpected queue for a while: each rank sends its
 *    left neighbour a 320 KiB message (rendezvous: over shmem a CMA
 *    descriptor, its data at the sender) one iteration before that one
 *    receives it,
 *  - a rendezvous-sized message (256 KiB) every iteration,
 *  - a non-blocking collective (MPI_Iallreduce) pending while the rank
 *    computes,
 *  - collectives on MPI_COMM_WORLD and on a communicator split in two,
 *  - computation outside MPI (a few ms per iteration).
 * At the end rank 0 prints "result HEX": a hash of every rank's data, bit
 * for bit, the same in every run (deterministic).
 *
 *   ckpt_job ITERS [block K | win]
 *     block K  at iteration K rank 0 prints "blocking" and waits (outside MPI)
 *              for the file ./go to exist, while rank 1 waits in MPI_Recv for
 *              its message and the others in MPI_Barrier
 *     win      keeps an RMA window with a passive-target epoch (a shared
 *              lock of itself) open the whole run
 *     mem MB   also holds MB MiB of touched heap per rank (tests/bench/ckpt-job-bench.sh)
 * Each rank prints "iteration I" on stderr every 10 iterations (rank 0 only). */
#include <mpi.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 4096
#define BIG (32 * 1024)                     /* doubles: 256 KiB, rendezvous */
#define EARLY (40 * 1024)                   /* doubles: 320 KiB, rendezvous, unexpected */

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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 100;
    int block_at = argc > 3 && strcmp(argv[2], "block") == 0 ? atoi(argv[3]) : -1;
    int use_win = argc > 2 && strcmp(argv[2], "win") == 0;
    size_t mem = argc > 3 && strcmp(argv[2], "mem") == 0 ? (size_t)atol(argv[3]) << 20 : 0;
    char *ballast = mem ? malloc(mem) : NULL;
    if (ballast) for (size_t i = 0; i < mem; i += 4096) ballast[i] = (char)(i * 7 + rank);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    double *big = malloc(BIG * sizeof *big), *bigin = malloc(BIG * sizeof *bigin);
    for (int i = 0; i < N; i++) a[i] = sin(rank * 1000.0 + i);
    for (int i = 0; i < BIG; i++) big[i] = cos(rank + i * 0.001);
    MPI_Datatype strided;                   /* every other double of the first half */
    CHECK(MPI_Type_vector(N / 4, 1, 2, MPI_DOUBLE, &strided));
    CHECK(MPI_Type_commit(&strided));
    MPI_Comm half;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half));
    MPI_Win win = MPI_WIN_NULL;
    double wbuf[16];
    if (use_win) {
        CHECK(MPI_Win_create(wbuf, sizeof wbuf, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    }

    /* the message that waits in the unexpected queue (its RTS: a rendezvous
     * whose data stay at the sender until the receive is posted) */
    double *early = malloc(EARLY * sizeof *early), *early_in = malloc(EARLY * sizeof *early_in);
    for (int i = 0; i < EARLY; i++) early[i] = rank + i * 0.5;
    MPI_Request ereq;
    CHECK(MPI_Isend(early, EARLY, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &ereq));
    for (int it = 0; it < iters; it++) {
        if (rank == 0 && it % 10 == 0) fprintf(stderr, "iteration %d\n", it);
        /* the ring with the derived datatype, and the big message */
        MPI_Request r[4];
        CHECK(MPI_Irecv(b, 1, strided, left, 1, MPI_COMM_WORLD, &r[0]));
        CHECK(MPI_Isend(a, 1, strided, right, 1, MPI_COMM_WORLD, &r[1]));
        CHECK(MPI_Irecv(bigin, BIG, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &r[2]));
        CHECK(MPI_Isend(big, BIG, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &r[3]));
        CHECK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE));
        /* last iteration's early message (sent long ago: unexpected), then the next one */
        CHECK(MPI_Recv(early_in, EARLY, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(MPI_Wait(&ereq, MPI_STATUS_IGNORE));
        for (int i = 0; i < EARLY; i++) early[i] = early[i] * 0.999 + early_in[i] * 0.001;
        CHECK(MPI_Isend(early, EARLY, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &ereq));
        /* a pending non-blocking collective while computing */
        double s = 0, tot = 0;
        for (int i = 0; i < N; i++) s += a[i];
        MPI_Request ar;
        CHECK(MPI_Iallreduce(&s, &tot, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &ar));
        for (int rep = 0; rep < 40; rep++)
            for (int i = 0; i < N; i++) a[i] = a[i] * 0.9999 + sin(a[i] + it) * 1e-4;
        for (int i = 0; i < N / 2; i += 2) a[i] += b[i] * 1e-3;
        for (int i = 0; i < N; i++) a[i] += bigin[i % BIG] * 1e-6;
        CHECK(MPI_Wait(&ar, MPI_STATUS_IGNORE));
        double hs = 0;
        CHECK(MPI_Allreduce(&a[it % N], &hs, 1, MPI_DOUBLE, MPI_MAX, half));
        CHECK(MPI_Bcast(&tot, 1, MPI_DOUBLE, it % size, MPI_COMM_WORLD));
        a[(it * 7) % N] += tot * 1e-9 + hs * 1e-9;
        for (int i = 0; i < BIG; i += 64) big[i] = big[i] * 0.5 + a[i % N];
        if (it == block_at) {
            if (rank == 0) {
                fprintf(stderr, "blocking\n");
                while (access("go", F_OK) != 0) usleep(10000);
                CHECK(MPI_Send(a, 16, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD));
            } else if (rank == 1) {
                double in[16];
                CHECK(MPI_Recv(in, 16, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                for (int i = 0; i < 16; i++) a[i] += in[i] * 1e-3;
            }
            CHECK(MPI_Barrier(MPI_COMM_WORLD));
        }
    }
    CHECK(MPI_Recv(early_in, EARLY, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(MPI_Wait(&ereq, MPI_STATUS_IGNORE));
    uint64_t h = mix(mix(mix(0xcbf29ce484222325ull, a, N), big, BIG), early_in, EARLY);
    uint64_t *all = malloc((size_t)size * sizeof *all);
    CHECK(MPI_Gather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        uint64_t t = 0xcbf29ce484222325ull;
        for (int i = 0; i < size; i++) t = (t ^ all[i]) * 0x100000001b3ull;
        printf("result %016llx\n", (unsigned long long)t);
    }
    if (use_win) {
        MPI_Win_unlock(rank, win);
        MPI_Win_free(&win);
    }
    MPI_Comm_free(&half);
    MPI_Type_free(&strided);
    free(all);
    free(a); free(b); free(big); free(bigin); free(early); free(early_in); free(ballast);
    MPI_Finalize();
    return 0;
}
