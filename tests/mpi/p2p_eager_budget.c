/* The eager budget with a tiny budget (KUMI_BASE_EAGER_BUDGET, 16 KiB to
 * 128 KiB; the list passes 64 KiB): streams that mix eager and rendezvous
 * messages keep their order and contents, whatever the receive style.
 * 3 or more ranks.
 *
 * 1. Every rank sends M messages to every other one (sizes from 0 to
 *    300 KB, tag i % 4) with MPI_Isend, MPI_Issend, MPI_Ibsend and
 *    persistent sends, before anybody receives (a barrier first); then each
 *    receives them with MPI_ANY_SOURCE / MPI_ANY_TAG through MPI_Recv,
 *    MPI_Probe + MPI_Recv, MPI_Mprobe + MPI_Mrecv and MPI_Irecv, checking
 *    that every sender's messages come in the order sent, with their sizes,
 *    tags and bytes.
 * 2. Rank 0 sends rank 1 far more than the budget with tag 1, then a few
 *    with tag 2; rank 1 takes the tag-2 ones first (their envelopes must get
 *    past the held-back ones), then the rest.
 * 3. Within half the budget sends go eagerly (an MPI_Isend completes while
 *    the receiver sits in a barrier); a message past the budget does not
 *    (it waits for its receive).
 * 4. Rank 0 floods rank 1 past the budget and cancels every message before
 *    rank 1 receives any: the cancelled ones give their budget back, so
 *    sends within half the budget go eagerly again (step 3's check). */
#include "kt.h"
#include <stdint.h>

static const int sizes[] = { 0, 1, 100, 1000, 5000, 20000, 40000, 65536, 100000, 300000 };
#define NS ((int)(sizeof sizes / sizeof sizes[0]))
#define M 48
#define MAXLEN 300000

static int rank, nprocs;
static long budget;

static unsigned char pat(int src, int i, long k) { return (unsigned char)(src * 131 + i * 17 + k * 7 + (k >> 8)); }
static int msize(int dst, int i) { return sizes[(i + dst) % NS]; }

static void fill(unsigned char *b, int src, int i, long n)
{
    for (long k = 0; k < n; k++) b[k] = pat(src, i, k);
}

static void check(const unsigned char *b, int src, int i, long n, const char *what)
{
    for (long k = 0; k < n; k++)
        if (b[k] != pat(src, i, k))
            KT_FAIL("%s: message %d from rank %d, byte %ld is %u, expected %u", what, i, src, k, b[k], pat(src, i, k));
}

/* Does req complete within secs (polling with MPI_Test)? */
static int completes_within(MPI_Request *req, double secs)
{
    int flag = 0;
    double end = kt_now() + secs;
    while (!flag && kt_now() < end) KT_MPI(MPI_Test(req, &flag, MPI_STATUS_IGNORE));
    return flag;
}

/* ---- 1: all to all, mixed send modes and receive styles */
static void step_all(void)
{
    int npeer = nprocs - 1, nsend = npeer * M;
    unsigned char **sb = malloc((size_t)nsend * sizeof *sb);
    MPI_Request *sr = malloc((size_t)nsend * sizeof *sr);
    int *persistent = calloc((size_t)nsend, sizeof *persistent);
    int bsize = 0;
    for (int d = 0; d < nprocs; d++)
        for (int i = 1; d != rank && i < M; i += 5) bsize += msize(d, i) + MPI_BSEND_OVERHEAD + 8;  /* + Kumi's rounding */
    void *battach = malloc((size_t)bsize);
    KT_MPI(MPI_Buffer_attach(battach, bsize));
    int s = 0;
    for (int i = 0; i < M; i++) {
        for (int d = 0; d < nprocs; d++) {
            if (d == rank) continue;
            int n = msize(d, i);
            sb[s] = malloc((size_t)n + 1);
            fill(sb[s], rank, i, n);
            switch (i % 5) {
            case 0: KT_MPI(MPI_Issend(sb[s], n, MPI_BYTE, d, i % 4, MPI_COMM_WORLD, &sr[s])); break;
            case 1: KT_MPI(MPI_Ibsend(sb[s], n, MPI_BYTE, d, i % 4, MPI_COMM_WORLD, &sr[s])); break;
            case 2:
                KT_MPI(MPI_Send_init(sb[s], n, MPI_BYTE, d, i % 4, MPI_COMM_WORLD, &sr[s]));
                KT_MPI(MPI_Start(&sr[s]));
                persistent[s] = 1;
                break;
            default: KT_MPI(MPI_Isend(sb[s], n, MPI_BYTE, d, i % 4, MPI_COMM_WORLD, &sr[s])); break;
            }
            s++;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);             /* every stream is under way before any receive */

    int *next = calloc((size_t)nprocs, sizeof *next);
    unsigned char *rb = malloc(MAXLEN + 16);
    for (int j = 0; j < nsend; j++) {
        MPI_Status st, pst;
        int cnt = -1, pcnt = -1;
        memset(rb, 0xee, 64);
        switch (j % 4) {
        case 0:
            KT_MPI(MPI_Recv(rb, MAXLEN + 16, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            break;
        case 1:
            KT_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &pst));
            MPI_Get_count(&pst, MPI_BYTE, &pcnt);
            KT_MPI(MPI_Recv(rb, MAXLEN + 16, MPI_BYTE, pst.MPI_SOURCE, pst.MPI_TAG, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            KT_CHECK(cnt == pcnt && st.MPI_SOURCE == pst.MPI_SOURCE, "probed %d bytes from %d, received %d from %d",
                     pcnt, pst.MPI_SOURCE, cnt, st.MPI_SOURCE);
            break;
        case 2: {
            MPI_Message msg;
            KT_MPI(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &pst));
            MPI_Get_count(&pst, MPI_BYTE, &pcnt);
            KT_MPI(MPI_Mrecv(rb, MAXLEN + 16, MPI_BYTE, &msg, &st));
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            KT_CHECK(cnt == pcnt && st.MPI_SOURCE == pst.MPI_SOURCE && st.MPI_TAG == pst.MPI_TAG,
                     "mprobed %d bytes from %d, received %d from %d", pcnt, pst.MPI_SOURCE, cnt, st.MPI_SOURCE);
            break;
        }
        default: {
            MPI_Request rr;
            KT_MPI(MPI_Irecv(rb, MAXLEN + 16, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rr));
            KT_MPI(MPI_Wait(&rr, &st));
            break;
        }
        }
        int src = st.MPI_SOURCE;
        KT_CHECK(src >= 0 && src < nprocs && src != rank, "source %d", src);
        int i = next[src]++;
        KT_CHECK(i < M, "more than %d messages from rank %d", M, src);
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        if (st.MPI_TAG != i % 4 || cnt != msize(rank, i))
            KT_FAIL("receive %d: from rank %d came tag %d, %d bytes; its message %d has tag %d, %d bytes "
                    "(order broken?)", j, src, st.MPI_TAG, cnt, i, i % 4, msize(rank, i));
        check(rb, src, i, cnt, "all-to-all");
    }
    for (int p = 0; p < nprocs; p++)
        if (p != rank) KT_EQ_INT(next[p], M);
    KT_MPI(MPI_Waitall(nsend, sr, MPI_STATUSES_IGNORE));
    for (s = 0; s < nsend; s++) {
        if (persistent[s]) KT_MPI(MPI_Request_free(&sr[s]));
        free(sb[s]);
    }
    void *ba; int bs;
    KT_MPI(MPI_Buffer_detach(&ba, &bs));
    free(battach); free(rb); free(next); free(persistent); free(sr); free(sb);
}

/* ---- 2: a later tag gets past messages held back at the sender */
static void step_tags(void)
{
    const int n1 = (int)(4 * budget / 10000) + 8, n2 = 5, len = 10000;
    unsigned char *b = malloc(len);
    if (rank == 0) {
        MPI_Request *r = malloc((size_t)(n1 + n2) * sizeof *r);
        unsigned char **sb = malloc((size_t)(n1 + n2) * sizeof *sb);
        for (int i = 0; i < n1 + n2; i++) {
            sb[i] = malloc(len);
            fill(sb[i], 0, i, len);
            KT_MPI(MPI_Isend(sb[i], len, MPI_BYTE, 1, i < n1 ? 1 : 2, MPI_COMM_WORLD, &r[i]));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        KT_MPI(MPI_Waitall(n1 + n2, r, MPI_STATUSES_IGNORE));
        for (int i = 0; i < n1 + n2; i++) free(sb[i]);
        free(sb); free(r);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            for (int i = n1; i < n1 + n2; i++) {
                KT_MPI(MPI_Recv(b, len, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                check(b, 0, i, len, "tag 2 first");
            }
            for (int i = 0; i < n1; i++) {
                KT_MPI(MPI_Recv(b, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                check(b, 0, i, len, "tag 1 after");
            }
        }
    }
    free(b);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- 3: eager within half the budget, rendezvous past it.  Rank 1 sits in
 * a barrier while rank 0 checks its sends, then receives them. */
static void step_eager(const char *after)
{
    const int small = 4000;
    int k = (int)(budget / 2 / (small + 128)) - 1;
    int big = (int)(budget - (long)k * (small + 128));     /* takes any count past the budget */
    unsigned char *b = malloc((size_t)big);
    if (rank == 0) {
        MPI_Request *r = malloc((size_t)(k + 1) * sizeof *r);
        fill(b, 0, 0, big);
        for (int i = 0; i < k; i++) {
            KT_MPI(MPI_Isend(b, small, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &r[i]));
            if (!completes_within(&r[i], 20.0))
                KT_FAIL("%s: send %d of %d x %d bytes (within half the budget of %ld) did not go eagerly",
                        after, i, k, small, budget);
        }
        KT_MPI(MPI_Isend(b, big, MPI_BYTE, 1, 6, MPI_COMM_WORLD, &r[k]));
        if (completes_within(&r[k], 0.3))
            KT_FAIL("%s: a send of %d bytes past the budget of %ld completed before its receive was posted",
                    after, big, budget);
        MPI_Barrier(MPI_COMM_WORLD);
        KT_MPI(MPI_Wait(&r[k], MPI_STATUS_IGNORE));
        free(r);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            MPI_Status st;
            int c;
            for (int i = 0; i < k; i++) {
                KT_MPI(MPI_Recv(b, small, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st));
                check(b, 0, 0, small, after);
            }
            KT_MPI(MPI_Recv(b, big, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &c);
            KT_EQ_INT(c, big);
            check(b, 0, 0, big, after);
        }
    }
    free(b);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- 4: cancelled messages give their budget back */
static void step_cancel(void)
{
    const int len = 8000, n = (int)(2 * budget / len) + 4;
    int ncan = 0;
    if (rank == 0) {
        unsigned char *b = malloc(len);
        MPI_Request *r = malloc((size_t)n * sizeof *r);
        fill(b, 0, 0, len);
        for (int i = 0; i < n; i++) KT_MPI(MPI_Isend(b, len, MPI_BYTE, 1, 9, MPI_COMM_WORLD, &r[i]));
        for (int i = 0; i < n; i++) KT_MPI(MPI_Cancel(&r[i]));
        for (int i = 0; i < n; i++) {
            MPI_Status st;
            int c = 0;
            KT_MPI(MPI_Wait(&r[i], &st));
            MPI_Test_cancelled(&st, &c);
            ncan += c;
        }
        KT_MPI(MPI_Send(&ncan, 1, MPI_INT, 1, 10, MPI_COMM_WORLD));
        free(r); free(b);
    } else if (rank == 1) {
        unsigned char *b = malloc(len);
        KT_MPI(MPI_Recv(&ncan, 1, MPI_INT, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < n - ncan; i++) {      /* those that could not be cancelled */
            KT_MPI(MPI_Recv(b, len, MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            check(b, 0, 0, len, "not cancelled");
        }
        int flag = 1;
        KT_MPI(MPI_Iprobe(0, 9, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        KT_CHECK(!flag, "a cancelled message was still there");
        free(b);
    }
    KT_MPI(MPI_Bcast(&ncan, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (ncan != n && rank == 0) printf("%d of %d sends could not be cancelled\n", n - ncan, n);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    KT_CHECK(nprocs >= 3, "needs 3 ranks or more");
    const char *e = getenv("KUMI_BASE_EAGER_BUDGET");
    budget = e ? atol(e) : 0;
    if (budget < 16384 || budget > 131072) {
        if (rank == 0) fprintf(stderr, "set KUMI_BASE_EAGER_BUDGET to 16384 .. 131072 bytes\n");
        MPI_Finalize();
        return 77;
    }
    step_all();
    step_tags();
    step_eager("at the start");
    step_cancel();
    step_eager("after the cancels");
    step_all();
    MPI_Finalize();
    return 0;
}
