/* Large and strided Put / Get under every synchronisation mode, and
 * MPI_Win_flush as remote completion.
 *
 *   rma_large [bytes]     (default 3 MiB + 5 bytes per rank)
 *
 * On Win_create and Win_allocate windows of `bytes` per rank:
 *   - fence, post-start-complete-wait, lock and lock_all: Put of the whole
 *     window into the right neighbour, Get of the left neighbour's, checked
 *     byte by byte (several rounds, each with other values);
 *   - Rput and Rget completed with MPI_Waitall inside a lock_all epoch;
 *   - a Get into a strided origin buffer (a vector type: the result is
 *     scattered at the origin) and a Put from one;
 *   - flush: lock shared, Put, MPI_Win_flush, then a message to the target,
 *     which must find the bytes in its memory at once (after MPI_Win_sync).
 * tests/mpi/rma.list runs it on every path: direct, active messages, and
 * p2p/ofi's remote writes and reads (with small pieces, so that operations
 * are split and the provider's queue fills). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, errs;
static const char *what = "";

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            if (errs++ < 10) {                                                    \
                fprintf(stderr, "rank %d [%s] line %d: ", rank, what, __LINE__);  \
                fprintf(stderr, __VA_ARGS__);                                     \
                fputc('\n', stderr);                                              \
            }                                                                     \
        }                                                                         \
    } while (0)

static unsigned char pat(int r, int round, size_t i)
{
    return (unsigned char)(i * 131u + (i >> 9) + (unsigned)r * 17u + (unsigned)round * 7u + 1u);
}

/* First index where buf differs from rank r's pattern of round, or n. */
static size_t first_bad(const unsigned char *buf, size_t n, int r, int round)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i] != pat(r, round, i)) return i;
    return n;
}

enum { M_FENCE, M_PSCW, M_LOCK, M_LOCKALL, NMODES };
static const char *mode_names[] = { "fence", "pscw", "lock", "lock_all" };

static MPI_Group neighbours;

static void run_mode(MPI_Win w, unsigned char *mem, unsigned char *src, unsigned char *got, size_t n, int mode,
                     int round)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int rc;
    for (size_t i = 0; i < n; i++) src[i] = pat(rank, round, i);
    memset(got, 0, n);
    /* the window holds my pattern of round + 100 for the left neighbour's Get */
    for (size_t i = 0; i < n; i++) mem[i] = pat(rank, round + 100, i);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Get the left neighbour's window first, then Put into the right one's (a second epoch) */
    for (int step = 0; step < 2; step++) {
        int t = step == 0 ? left : right;
        switch (mode) {
        case M_FENCE: MPI_Win_fence(0, w); break;
        case M_PSCW: MPI_Win_post(neighbours, 0, w); MPI_Win_start(neighbours, 0, w); break;
        case M_LOCK: MPI_Win_lock(step == 0 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE, t, 0, w); break;
        case M_LOCKALL: MPI_Win_lock_all(0, w); break;
        }
        if (step == 0) rc = MPI_Get(got, (int)n, MPI_BYTE, t, 0, (int)n, MPI_BYTE, w);
        else rc = MPI_Put(src, (int)n, MPI_BYTE, t, 0, (int)n, MPI_BYTE, w);
        CHECK(rc == MPI_SUCCESS, "%s returned %d", step ? "MPI_Put" : "MPI_Get", rc);
        switch (mode) {
        case M_FENCE: MPI_Win_fence(0, w); break;
        case M_PSCW: MPI_Win_complete(w); MPI_Win_wait(w); break;
        case M_LOCK: MPI_Win_unlock(t, w); break;
        case M_LOCKALL: MPI_Win_unlock_all(w); break;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    size_t b = first_bad(got, n, left, round + 100);
    CHECK(b == n, "%s: Get byte %zu is %d, expected %d", mode_names[mode], b, got[b], pat(left, round + 100, b));
    b = first_bad(mem, n, left, round);
    CHECK(b == n, "%s: Put byte %zu is %d, expected %d", mode_names[mode], b, mem[b], pat(left, round, b));
}

static void run_requests(MPI_Win w, unsigned char *mem, unsigned char *src, unsigned char *got, size_t n)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    size_t half = n / 2;
    for (size_t i = 0; i < n; i++) { src[i] = pat(rank, 50, i); mem[i] = pat(rank, 51, i); }
    memset(got, 0, n);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Request rq[2];
    MPI_Win_lock_all(0, w);
    /* the left neighbour's second half, before the right neighbour writes my first half */
    int rc = MPI_Rget(got + half, (int)(n - half), MPI_BYTE, left, (MPI_Aint)half, (int)(n - half), MPI_BYTE, w,
                      &rq[0]);
    CHECK(rc == MPI_SUCCESS, "MPI_Rget returned %d", rc);
    rc = MPI_Rput(src, (int)half, MPI_BYTE, right, 0, (int)half, MPI_BYTE, w, &rq[1]);
    CHECK(rc == MPI_SUCCESS, "MPI_Rput returned %d", rc);
    rc = MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    CHECK(rc == MPI_SUCCESS, "MPI_Waitall returned %d", rc);
    MPI_Win_unlock_all(w);
    MPI_Barrier(MPI_COMM_WORLD);
    for (size_t i = half; i < n; i++)
        if (got[i] != pat(left, 51, i)) { CHECK(0, "Rget byte %zu is %d, expected %d", i, got[i], pat(left, 51, i)); break; }
    size_t b = first_bad(mem, half, left, 50);
    CHECK(b == half, "Rput byte %zu is %d, expected %d", b, mem[b], pat(left, 50, b));
}

/* Get into every second int of a buffer, Put from every third. */
static void run_strided(MPI_Win w, unsigned char *mem, size_t n)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int k = (int)(n / sizeof(int) / 3);
    int *mine = (int *)mem, *buf = malloc(3 * (size_t)k * sizeof(int));
    MPI_Datatype every2, every3;
    MPI_Type_vector(k, 1, 2, MPI_INT, &every2);
    MPI_Type_vector(k, 1, 3, MPI_INT, &every3);
    MPI_Type_commit(&every2);
    MPI_Type_commit(&every3);
    for (int i = 0; i < k; i++) mine[i] = rank * 1000003 + i;
    for (int i = 0; i < 3 * k; i++) buf[i] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, left, 0, w);
    int rc = MPI_Get(buf, 1, every2, left, 0, k, MPI_INT, w);
    CHECK(rc == MPI_SUCCESS, "MPI_Get (strided origin) returned %d", rc);
    MPI_Win_unlock(left, w);
    for (int i = 0; i < k; i++) {
        if (buf[2 * i] != left * 1000003 + i) { CHECK(0, "strided Get: int %d is %d, expected %d", i, buf[2 * i], left * 1000003 + i); break; }
        if (i < k / 2 && buf[2 * i + 1] != -1) { CHECK(0, "strided Get wrote a hole: int %d", 2 * i + 1); break; }
    }
    for (int i = 0; i < 3 * k; i++) buf[i] = (i % 3) ? -7 : rank * 7001 + i / 3;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w);
    rc = MPI_Put(buf, 1, every3, right, 0, k, MPI_INT, w);
    CHECK(rc == MPI_SUCCESS, "MPI_Put (strided origin) returned %d", rc);
    MPI_Win_unlock(right, w);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < k; i++)
        if (mine[i] != left * 7001 + i) { CHECK(0, "strided Put: int %d is %d, expected %d", i, mine[i], left * 7001 + i); break; }
    MPI_Type_free(&every2);
    MPI_Type_free(&every3);
    free(buf);
}

/* Put + Win_flush, then tell the target: the bytes must be there. */
static void run_flush(MPI_Win w, unsigned char *mem, unsigned char *src, size_t n)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    memset(mem, 0, n);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < n; i++) src[i] = pat(rank, 200 + round, i);
        MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w);
        int rc = MPI_Put(src, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, w);
        CHECK(rc == MPI_SUCCESS, "MPI_Put returned %d", rc);
        rc = MPI_Win_flush(right, w);
        CHECK(rc == MPI_SUCCESS, "MPI_Win_flush returned %d", rc);
        MPI_Request rq;
        MPI_Isend(&round, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &rq);
        int r2;
        MPI_Recv(&r2, 1, MPI_INT, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Win_sync(w);
        size_t b = first_bad(mem, n, left, 200 + round);
        CHECK(b == n, "flush round %d: byte %zu is %d, expected %d", round, b, mem[b], pat(left, 200 + round, b));
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Win_unlock(right, w);
        MPI_Barrier(MPI_COMM_WORLD);        /* nobody writes the next round before all checked */
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 0) : (3u << 20) + 5;
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int nb[2] = { (rank + size - 1) % size, (rank + 1) % size };
    MPI_Group_incl(world, nb[0] == nb[1] ? 1 : 2, nb, &neighbours);
    unsigned char *src = malloc(n), *got = malloc(n);
    for (int f = 0; f < 2; f++) {
        MPI_Win w;
        unsigned char *mem;
        if (f == 0) {
            mem = malloc(n);
            MPI_Win_create(mem, (MPI_Aint)n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        } else {
            MPI_Win_allocate((MPI_Aint)n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w);
        }
        MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
        for (int mode = 0; mode < NMODES; mode++) {
            what = mode_names[mode];
            for (int round = 0; round < 2; round++) run_mode(w, mem, src, got, n, mode, round + 2 * f);
        }
        what = "requests";
        run_requests(w, mem, src, got, n);
        what = "strided";
        run_strided(w, mem, n);
        what = "flush";
        run_flush(w, mem, src, n);
        MPI_Win_free(&w);
        if (f == 0) free(mem);
    }
    free(src);
    free(got);
    MPI_Group_free(&neighbours);
    MPI_Group_free(&world);
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all) printf("rma_large: %d errors\n", all);
        else printf("rma_large: %d ranks OK\n", size);
    }
    MPI_Finalize();
    return all != 0;
}
