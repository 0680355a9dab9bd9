/* tcp_many: many small messages in flight from every rank to rank 0.
 * Each sender Isends N messages (0..300 bytes, several tags) without
 * waiting; rank 0 receives them with MPI_ANY_SOURCE / MPI_ANY_TAG and checks
 * contents and the non-overtaking order per sender.  A second round has
 * rank 0 receive by (source, tag) in reverse tag order (unexpected queue).
 * Usage: tcp_many [N]   (default 2000) */
#include "kt.h"
#include <stdint.h>

#define NTAGS 7
#define MAXLEN 300

static size_t len_of(int i) { return (size_t)((i * 37) % (MAXLEN + 1)); }

static void fill(unsigned char *b, int src, int i)
{
    size_t n = len_of(i);
    if (n >= 8) { memcpy(b, &src, 4); memcpy(b + 4, &i, 4); }
    for (size_t k = 8; k < n; k++) b[k] = (unsigned char)(src * 13 + i * 7 + k);
}

static void check(const unsigned char *b, size_t got, int src, int i)
{
    size_t n = len_of(i);
    int s, j;
    if (got != n) KT_FAIL("message %d from %d: %zu bytes, expected %zu", i, src, got, n);
    if (n < 8) return;
    memcpy(&s, b, 4); memcpy(&j, b + 4, 4);
    if (s != src || j != i) KT_FAIL("message %d from %d carries (%d, %d)", i, src, s, j);
    for (size_t k = 8; k < n; k++)
        if (b[k] != (unsigned char)(src * 13 + i * 7 + k))
            KT_FAIL("message %d from %d: byte %zu wrong", i, src, k);
}

int main(int argc, char **argv)
{
    int rank, size, n;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    n = argc > 1 ? atoi(argv[1]) : 2000;
    KT_CHECK(size >= 2, "needs 2 ranks or more");

    /* round 1: ANY_SOURCE, ANY_TAG; order per sender must hold */
    if (rank == 0) {
        int *next = calloc(size, sizeof *next);
        unsigned char buf[MAXLEN];
        long total = (long)(size - 1) * n;
        for (long m = 0; m < total; m++) {
            MPI_Status st;
            int cnt;
            KT_MPI(MPI_Recv(buf, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            KT_MPI(MPI_Get_count(&st, MPI_BYTE, &cnt));
            int src = st.MPI_SOURCE, i = next[src]++;
            KT_CHECK(src > 0 && src < size, "source %d", src);
            KT_CHECK(i < n, "too many messages from %d", src);
            KT_EQ_INT(st.MPI_TAG, i % NTAGS);
            check(buf, (size_t)cnt, src, i);
        }
        for (int s = 1; s < size; s++) KT_EQ_INT(next[s], n);
        free(next);
    } else {
        unsigned char *sb = malloc((size_t)n * MAXLEN);
        MPI_Request *req = malloc((size_t)n * sizeof *req);
        for (int i = 0; i < n; i++) {
            fill(sb + (size_t)i * MAXLEN, rank, i);
            KT_MPI(MPI_Isend(sb + (size_t)i * MAXLEN, (int)len_of(i), MPI_BYTE, 0, i % NTAGS, MPI_COMM_WORLD, &req[i]));
        }
        KT_MPI(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
        free(sb); free(req);
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* round 2: rank 0 receives by (source, tag), highest tag first */
    if (rank == 0) {
        unsigned char buf[MAXLEN];
        for (int s = size - 1; s >= 1; s--)
            for (int t = NTAGS - 1; t >= 0; t--)
                for (int i = t; i < n; i += NTAGS) {
                    MPI_Status st;
                    int cnt;
                    KT_MPI(MPI_Recv(buf, MAXLEN, MPI_BYTE, s, t, MPI_COMM_WORLD, &st));
                    KT_MPI(MPI_Get_count(&st, MPI_BYTE, &cnt));
                    check(buf, (size_t)cnt, s, i);
                }
    } else {
        unsigned char *sb = malloc((size_t)n * MAXLEN);
        MPI_Request *req = malloc((size_t)n * sizeof *req);
        for (int i = 0; i < n; i++) {
            fill(sb + (size_t)i * MAXLEN, rank, i);
            KT_MPI(MPI_Isend(sb + (size_t)i * MAXLEN, (int)len_of(i), MPI_BYTE, 0, i % NTAGS, MPI_COMM_WORLD, &req[i]));
        }
        KT_MPI(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
        free(sb); free(req);
    }
    KT_MPI(MPI_Finalize());
    if (rank == 0) printf("tcp_many: ok (%d senders x %d messages)\n", size - 1, n);
    return 0;
}
