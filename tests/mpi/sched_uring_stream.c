/* The io_uring engine's stream receive (sched/uring.c): each connection
 * reads its bytes through a buffer of a few KiB, so a small message's header
 * and payload come in one receive, several messages may come in one, a
 * header may be split between two receives, and a larger message's payload
 * starts in the buffer and goes on straight into its destination.  Rounds
 * of K operations in flight at once of sizes around the buffer's (0, 1, 37,
 * 1984 (two 2040-byte frames and 16 bytes of a third header fill a buffer), 4040 = 4096 - the
 * 56-byte header, 4041, 9000, 70001 bytes): MPI_Ibcast
 * from rank 0 with the receivers' nodes posted first (expected) or only
 * after the root's data came (unexpected: the receivers sleep first), and
 * MPI_Iallreduce of ints; every byte is checked.  Then MPI_Ibcast into 10
 * bytes less than sent (MPI_ERR_TRUNCATE at rank 1, what fits delivered) and one after
 * it (the stream still in step).  Run with
 * KUMI_BASE_SCHED_ENGINE=uring over tcp (tests/scripts/sched_uring.sh, which
 * checks in the engine's KUMI_VERBOSE summary that messages were received
 * whole with their header and that headers were split).
 *
 * usage: sched_uring_stream */
#define _POSIX_C_SOURCE 200809L
#include "kt.h"
#include <time.h>

#define K 24

static unsigned char val(int k, size_t i, size_t n, int round)
{
    return (unsigned char)(k * 31 + i * 7 + n * 3 + round * 11 + 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static const size_t sizes[] = { 0, 1, 37, 1984, 4040, 4041, 9000, 70001 };
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    unsigned char *b[K];
    int *in[K], *out[K];
    MPI_Request r[K];
    for (int k = 0; k < K; k++) {
        b[k] = malloc(70001);
        in[k] = malloc(sizeof(int) * 2000);
        out[k] = malloc(sizeof(int) * 2000);
        KT_CHECK(b[k] && in[k] && out[k], "out of memory");
    }
    int round = 0;
    for (int unexpected = 0; unexpected < 2; unexpected++)
        for (int si = 0; si < nsizes; si++, round++) {
            size_t n = sizes[si];
            for (int k = 0; k < K; k++)
                for (size_t i = 0; i < n; i++) b[k][i] = rank == 0 ? val(k, i, n, round) : 0;
            KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
            if (unexpected && rank != 0) {          /* the root's messages arrive first */
                struct timespec ts = { 0, 20 * 1000 * 1000 };
                nanosleep(&ts, NULL);
            }
            for (int k = 0; k < K; k++) KT_MPI(MPI_Ibcast(b[k], (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &r[k]));
            KT_MPI(MPI_Waitall(K, r, MPI_STATUSES_IGNORE));
            for (int k = 0; k < K; k++)
                for (size_t i = 0; i < n; i++)
                    if (b[k][i] != val(k, i, n, round))
                        KT_FAIL("MPI_Ibcast %zu bytes (%s), operation %d: byte %zu is %u, expected %u", n,
                                unexpected ? "unexpected" : "expected", k, i, b[k][i], val(k, i, n, round));
            /* MPI_Iallreduce of n / 4 ints (up to 2000): small messages back and forth, then a CALC */
            int m = (int)(n / 4 < 2000 ? n / 4 : 2000);
            for (int k = 0; k < K; k++)
                for (int i = 0; i < m; i++) { in[k][i] = (rank + 1) * (i + k + round); out[k][i] = -1; }
            for (int k = 0; k < K; k++)
                KT_MPI(MPI_Iallreduce(in[k], out[k], m, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[k]));
            KT_MPI(MPI_Waitall(K, r, MPI_STATUSES_IGNORE));
            for (int k = 0; k < K; k++)
                for (int i = 0; i < m; i++)
                    if (out[k][i] != size * (size + 1) / 2 * (i + k + round))
                        KT_FAIL("MPI_Iallreduce of %d ints, operation %d: element %d is %d, expected %d", m, k, i,
                                out[k][i], size * (size + 1) / 2 * (i + k + round));
        }
    /* truncation: the receivers expect 10 bytes less (a payload whole in the buffer, and one that
     * goes on past it): MPI_ERR_TRUNCATE, what fits delivered, and the stream still in step after */
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    static const size_t tsizes[] = { 100, 9000, 37 };
    for (int ti = 0; ti < 3; ti++, round++) {
        size_t n = tsizes[ti];
        int cnt = ti < 2 && rank != 0 ? (int)n - 10 : (int)n;
        for (size_t i = 0; i < n; i++) b[0][i] = rank == 0 ? val(0, i, n, round) : 0;
        KT_MPI(MPI_Ibcast(b[0], cnt, MPI_BYTE, 0, MPI_COMM_WORLD, &r[0]));
        int rc = MPI_Wait(&r[0], MPI_STATUS_IGNORE), cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        /* rank 1 receives from the root in every algorithm; further down a tree, from a rank
         * that forwards its own (shorter) count */
        if (cnt < (int)n && rank == 1)
            KT_CHECK(cls == MPI_ERR_TRUNCATE, "a %zu-byte message into %d bytes: class %d", n, cnt, cls);
        else if (cnt < (int)n)
            KT_CHECK(rc == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE, "%zu bytes into %d: class %d", n, cnt, cls);
        else KT_CHECK(rc == MPI_SUCCESS, "MPI_Ibcast of %zu bytes after the truncations failed (%d)", n, rc);
        for (int i = 0; i < cnt; i++)
            KT_CHECK(b[0][i] == val(0, (size_t)i, n, round), "%zu bytes into %d: byte %d is %u", n, cnt, i, b[0][i]);
    }
    for (int k = 0; k < K; k++) {
        free(b[k]);
        free(in[k]);
        free(out[k]);
    }
    if (rank == 0) printf("sched_uring_stream: %d rounds of %d operations checked\n", round * 2, K);
    MPI_Finalize();
    return 0;
}
