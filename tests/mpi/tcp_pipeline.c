/* tcp_pipeline: p2p/tcp's protocols around its default eager limit (512 KiB,
 * which is also the first fragment a rendezvous request carries), between
 * ranks 0 and 1 (other ranks only join the barriers).  Run with
 * MPI_COMPONENTS=p2p=self,tcp and no p2p_tcp_eager_limit (or with argument
 * "anylimit", which skips step 1's check, with any).
 *   1. a 512 KiB MPI_Isend completes while its receiver sits in a barrier
 *      (it left eagerly: the default limit);
 *   2. both directions at once, receives posted before the messages arrive:
 *      sizes on both sides of the limit, every byte and the status checked;
 *   3. both directions, the messages sent before their receives, which take
 *      them with MPI_ANY_SOURCE in reverse order;
 *   4. receives too small for eager and pipelined (rendezvous) messages,
 *      posted before and after arrival: MPI_ERR_TRUNCATE, the bytes that fit,
 *      and the next message on the connection intact;
 *   5. cancel of a pipelined send whose request (and first fragment) reached
 *      the receiver before any receive: either cancelled (the receiver never
 *      sees it) or not (it receives it), and the stream stays in order. */
#include "kt.h"
#include <stdint.h>
#include <unistd.h>

#define LIM ((size_t)512 * 1024)
static const size_t sizes[] = { 1, 65537, LIM - 1, LIM, LIM + 1, 2 * LIM + 3, (4u << 20) + 5 };
#define NS (int)(sizeof sizes / sizeof sizes[0])

static unsigned char pat(int src, int tag, size_t i)
{
    return (unsigned char)(i * 11 + (i >> 9) * 7 + (i >> 17) * 5 + tag * 29 + src * 83 + 3);
}

static void fill(unsigned char *b, size_t n, int src, int tag)
{
    for (size_t i = 0; i < n; i++) b[i] = pat(src, tag, i);
}

static void check(const unsigned char *b, size_t n, int src, int tag, const char *phase)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(src, tag, i))
            KT_FAIL("%s: message tag %d (from %d): byte %zu of %zu is %d, expected %d", phase, tag, src, i, n,
                    b[i], pat(src, tag, i));
}

static void check_status(const MPI_Status *st, int src, int tag, size_t n, const char *phase)
{
    int count = -1;
    KT_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    if (st->MPI_SOURCE != src || st->MPI_TAG != tag || count != (int)n)
        KT_FAIL("%s: status source %d tag %d count %d, expected %d %d %zu", phase, st->MPI_SOURCE,
                st->MPI_TAG, count, src, tag, n);
}

int main(int argc, char **argv)
{
    int rank, size, peer, anylim = argc > 1 && !strcmp(argv[1], "anylimit");
    unsigned char *sb[NS], *rb[NS];
    MPI_Request sreq[NS], rreq[NS];
    MPI_Status st;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks, has %d", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    peer = rank == 0 ? 1 : rank == 1 ? 0 : -1;
    for (int k = 0; k < NS; k++) {
        sb[k] = malloc(sizes[k]);
        rb[k] = malloc(sizes[k]);
        KT_CHECK(sb[k] && rb[k], "out of memory");
    }

    /* 1. eager up to the default limit */
    int done = 0;
    if (rank == 0) {
        double t0 = kt_now();
        fill(sb[3], LIM, 0, 1);
        KT_MPI(MPI_Isend(sb[3], (int)LIM, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &sreq[0]));
        while (!done && kt_now() - t0 < (anylim ? 0.5 : 30)) {
            KT_MPI(MPI_Test(&sreq[0], &done, MPI_STATUS_IGNORE));
            if (!done) usleep(1000);
        }
        KT_CHECK(done || anylim, "a %zu-byte MPI_Isend did not complete in 30 s while its receiver waited in a "
                 "barrier: it did not go eagerly (default p2p_tcp_eager_limit should be 512 KiB)", LIM);
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0 && !done) KT_MPI(MPI_Wait(&sreq[0], MPI_STATUS_IGNORE));    /* "anylimit" */
    if (rank == 1) {
        KT_MPI(MPI_Recv(rb[3], (int)LIM, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
        check(rb[3], LIM, 0, 1, "eager at the limit");
        check_status(&st, 0, 1, LIM, "eager at the limit");
    }

    /* 2. both directions, receives posted first */
    if (peer >= 0) {
        for (int k = 0; k < NS; k++) {
            memset(rb[k], 0, sizes[k]);
            KT_MPI(MPI_Irecv(rb[k], (int)sizes[k], MPI_BYTE, peer, 100 + k, MPI_COMM_WORLD, &rreq[k]));
        }
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (peer >= 0) {
        for (int k = 0; k < NS; k++) {
            fill(sb[k], sizes[k], rank, 100 + k);
            KT_MPI(MPI_Isend(sb[k], (int)sizes[k], MPI_BYTE, peer, 100 + k, MPI_COMM_WORLD, &sreq[k]));
        }
        for (int k = 0; k < NS; k++) {
            KT_MPI(MPI_Wait(&rreq[k], &st));
            check(rb[k], sizes[k], peer, 100 + k, "posted first");
            check_status(&st, peer, 100 + k, sizes[k], "posted first");
        }
        KT_MPI(MPI_Waitall(NS, sreq, MPI_STATUSES_IGNORE));
    }

    /* 3. both directions, sent before the receives; MPI_ANY_SOURCE, reverse order */
    if (peer >= 0) {
        for (int k = 0; k < NS; k++) {
            fill(sb[k], sizes[k], rank, 200 + k);
            KT_MPI(MPI_Isend(sb[k], (int)sizes[k], MPI_BYTE, peer, 200 + k, MPI_COMM_WORLD, &sreq[k]));
        }
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (peer >= 0) {
        usleep(200000);
        for (int k = NS - 1; k >= 0; k--) {
            memset(rb[k], 0, sizes[k]);
            KT_MPI(MPI_Recv(rb[k], (int)sizes[k], MPI_BYTE, MPI_ANY_SOURCE, 200 + k, MPI_COMM_WORLD, &st));
            check(rb[k], sizes[k], peer, 200 + k, "late, any source");
            check_status(&st, peer, 200 + k, sizes[k], "late, any source");
        }
        KT_MPI(MPI_Waitall(NS, sreq, MPI_STATUSES_IGNORE));
    }

    /* 4. truncation: rank 0 sends, rank 1 receives into half the room;
     * tags 300 + k (posted first) and 400 + k (after arrival), each followed
     * by an intact message (tag 450) */
    for (int late = 0; late < 2 && peer >= 0; late++) {
        static const int tk[] = { 1, 3, 5, 6 };      /* 65537, LIM, 2 LIM + 3, 4 MiB + 5 */
        for (int j = 0; j < 4; j++) {
            int k = tk[j], tag = (late ? 400 : 300) + k, count = -1;
            size_t half = sizes[k] / 2;
            if (rank == 1) memset(rb[k], 0, sizes[k]);
            if (rank == 1 && !late)
                KT_MPI(MPI_Irecv(rb[k], (int)half, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &rreq[0]));
            KT_MPI(MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 499, NULL, 0, MPI_BYTE, peer, 499, MPI_COMM_WORLD,
                                MPI_STATUS_IGNORE));
            if (rank == 0) {
                fill(sb[k], sizes[k], 0, tag);
                fill(sb[2], sizes[2], 0, 450);
                KT_MPI(MPI_Send(sb[k], (int)sizes[k], MPI_BYTE, 1, tag, MPI_COMM_WORLD));
                KT_MPI(MPI_Send(sb[2], (int)sizes[2], MPI_BYTE, 1, 450, MPI_COMM_WORLD));
                continue;
            }
            if (late) {
                int flag = 0;
                while (!flag) KT_MPI(MPI_Iprobe(0, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
                usleep(50000);
                KT_ERRCLASS(MPI_Recv(rb[k], (int)half, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE);
            } else {
                KT_ERRCLASS(MPI_Wait(&rreq[0], &st), MPI_ERR_TRUNCATE);
            }
            KT_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            KT_CHECK(count == (int)half, "truncated receive of %zu bytes into %zu: count %d", sizes[k], half, count);
            check(rb[k], half, 0, tag, late ? "truncated, late" : "truncated, posted");
            for (size_t i = half; i < sizes[k]; i++)
                KT_CHECK(rb[k][i] == 0, "truncated receive wrote byte %zu past its %zu-byte buffer", i, half);
            memset(rb[2], 0, sizes[2]);
            KT_MPI(MPI_Recv(rb[2], (int)sizes[2], MPI_BYTE, 0, 450, MPI_COMM_WORLD, &st));
            check(rb[2], sizes[2], 0, 450, "after a truncation");
            check_status(&st, 0, 450, sizes[2], "after a truncation");
        }
    }

    /* 5. cancel of a pipelined send (rendezvous with its first fragment) */
    if (peer >= 0) {
        const int k = 5;            /* 2 LIM + 3: a request with a LIM-byte fragment */
        int cancelled = 0;
        if (rank == 0) {
            fill(sb[k], sizes[k], 0, 500);
            KT_MPI(MPI_Isend(sb[k], (int)sizes[k], MPI_BYTE, 1, 500, MPI_COMM_WORLD, &sreq[0]));
            KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 501, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            KT_MPI(MPI_Cancel(&sreq[0]));
            KT_MPI(MPI_Wait(&sreq[0], &st));
            KT_MPI(MPI_Test_cancelled(&st, &cancelled));
            KT_MPI(MPI_Send(&cancelled, 1, MPI_INT, 1, 502, MPI_COMM_WORLD));
            fill(sb[k - 1], sizes[k - 1], 0, 503);
            KT_MPI(MPI_Send(sb[k - 1], (int)sizes[k - 1], MPI_BYTE, 1, 500, MPI_COMM_WORLD));
        } else {
            int flag = 0;
            double t0;
            while (!flag) KT_MPI(MPI_Iprobe(0, 500, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            for (t0 = kt_now(); kt_now() - t0 < 0.2;)     /* the fragment arrives meanwhile */
                KT_MPI(MPI_Iprobe(0, 777, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            KT_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, 501, MPI_COMM_WORLD));
            KT_MPI(MPI_Recv(&cancelled, 1, MPI_INT, 0, 502, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (!cancelled) {
                memset(rb[k], 0, sizes[k]);
                KT_MPI(MPI_Recv(rb[k], (int)sizes[k], MPI_BYTE, 0, 500, MPI_COMM_WORLD, &st));
                check(rb[k], sizes[k], 0, 500, "not cancelled");
                check_status(&st, 0, 500, sizes[k], "not cancelled");
            }
            memset(rb[k - 1], 0, sizes[k - 1]);
            KT_MPI(MPI_Recv(rb[k - 1], (int)sizes[k - 1], MPI_BYTE, 0, 500, MPI_COMM_WORLD, &st));
            check(rb[k - 1], sizes[k - 1], 0, 503, "after the cancel");
            check_status(&st, 0, 500, sizes[k - 1], "after the cancel");
            printf("tcp_pipeline: pipelined send %s\n", cancelled ? "cancelled" : "not cancelled (matched)");
        }
    }

    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int k = 0; k < NS; k++) {
        free(sb[k]);
        free(rb[k]);
    }
    if (rank == 0) printf("tcp_pipeline: ok\n");
    KT_MPI(MPI_Finalize());
    return 0;
}
