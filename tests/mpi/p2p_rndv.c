/* Rendezvous in all its forms, between ranks 0 and 1 (others idle), with
 * messages above every transport's eager limit: receive posted before or
 * after the RTS arrives, non-contiguous receive and send types, MPI_Mprobe +
 * MPI_Mrecv, truncation, MPI_Ssend, MPI_Bsend, MPI_ANY_SOURCE, a cancelled
 * unmatched send followed by a matched one, many in flight at once.  Run over
 * shmem (receiver-pulled with CMA, or CTS/DATA without), ofi and tcp; every
 * byte and every status is checked.
 * Usage: p2p_rndv [bytes]   (default 1 MiB) */
#include "kt.h"
#include <stdint.h>

static unsigned char pat(int k, size_t i) { return (unsigned char)(i * 13 + (i >> 9) + k * 41 + 7); }

static void fill(unsigned char *b, size_t n, int k)
{
    for (size_t i = 0; i < n; i++) b[i] = pat(k, i);
}

static void check(const unsigned char *b, size_t n, int k, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(k, i)) KT_FAIL("%s: byte %zu is %d, expected %d", what, i, b[i], pat(k, i));
}

static void check_count(const MPI_Status *st, MPI_Datatype t, int expect, const char *what)
{
    int n = -1;
    KT_MPI(MPI_Get_count(st, t, &n));
    if (n != expect) KT_FAIL("%s: count %d, expected %d", what, n, expect);
}

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 0) : (size_t)1 << 20;
    n &= ~(size_t)7;
    unsigned char *s = malloc(2 * n), *r = malloc(2 * n);
    KT_CHECK(s && r, "out of memory");
    MPI_Status st;
    MPI_Request rq[16];

    if (rank == 0) {
        /* 1: receive posted first; 2: message waits unexpected (barrier in between) */
        fill(s, n, 1);
        KT_MPI(MPI_Send(s, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
        fill(s, n, 2);
        KT_MPI(MPI_Isend(s, (int)n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[0]));
        MPI_Barrier(MPI_COMM_WORLD);             /* rank 1 receives it only after this */
        KT_MPI(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        /* 3: sent contiguous, received into a vector (every other 8-byte block) */
        fill(s, n, 3);
        KT_MPI(MPI_Send(s, (int)n, MPI_BYTE, 1, 3, MPI_COMM_WORLD));
        /* 4: sent from a vector */
        MPI_Datatype v;
        KT_MPI(MPI_Type_vector((int)(n / 8), 8, 16, MPI_BYTE, &v));
        KT_MPI(MPI_Type_commit(&v));
        for (size_t i = 0; i < n / 8; i++)
            for (int j = 0; j < 8; j++) s[16 * i + j] = pat(4, 8 * i + (size_t)j);
        KT_MPI(MPI_Send(s, 1, v, 1, 4, MPI_COMM_WORLD));
        KT_MPI(MPI_Type_free(&v));
        /* 5: Mprobe + Mrecv; 6: truncated; 7: Ssend; 8: Bsend */
        fill(s, n, 5);
        KT_MPI(MPI_Send(s, (int)n, MPI_BYTE, 1, 5, MPI_COMM_WORLD));
        fill(s, n, 6);
        KT_MPI(MPI_Send(s, (int)n, MPI_BYTE, 1, 6, MPI_COMM_WORLD));
        fill(s, n, 7);
        KT_MPI(MPI_Ssend(s, (int)n, MPI_BYTE, 1, 7, MPI_COMM_WORLD));
        int bsz = (int)n + MPI_BSEND_OVERHEAD;
        void *att = malloc((size_t)bsz);
        KT_MPI(MPI_Buffer_attach(att, bsz));
        fill(s, n, 8);
        KT_MPI(MPI_Bsend(s, (int)n, MPI_BYTE, 1, 8, MPI_COMM_WORLD));
        memset(s, 0, n);                         /* the attached copy is what goes */
        KT_MPI(MPI_Buffer_detach(&att, &bsz));   /* waits until it went */
        free(att);
        /* 9: an unmatched send cancelled, then the same tag matched */
        KT_MPI(MPI_Isend(s, (int)n, MPI_BYTE, 1, 9, MPI_COMM_WORLD, &rq[0]));
        MPI_Barrier(MPI_COMM_WORLD);             /* its RTS has reached rank 1 */
        KT_MPI(MPI_Cancel(&rq[0]));
        KT_MPI(MPI_Wait(&rq[0], &st));
        int c = 0;
        MPI_Test_cancelled(&st, &c);
        KT_CHECK(c, "the unmatched rendezvous send was not cancelled");
        MPI_Barrier(MPI_COMM_WORLD);             /* the cancel is done */
        fill(s, n, 9);
        KT_MPI(MPI_Send(s, (int)n, MPI_BYTE, 1, 9, MPI_COMM_WORLD));
        /* 10: eight in flight at once, from two buffers, received in reverse order */
        fill(s, n, 10);
        fill(s + n, n, 11);
        for (int i = 0; i < 8; i++)
            KT_MPI(MPI_Isend(s + (i & 1) * n, (int)n, MPI_BYTE, 1, 100 + i, MPI_COMM_WORLD, &rq[i]));
        KT_MPI(MPI_Waitall(8, rq, MPI_STATUSES_IGNORE));
        /* 11: received into fewer bytes than a first fragment (truncation) */
        fill(s, n, 12);
        KT_MPI(MPI_Send(s, (int)n, MPI_BYTE, 1, 11, MPI_COMM_WORLD));
    } else if (rank == 1) {
        KT_MPI(MPI_Irecv(r, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &rq[0]));
        KT_MPI(MPI_Wait(&rq[0], &st));
        check_count(&st, MPI_BYTE, (int)n, "posted first");
        check(r, n, 1, "posted first");
        MPI_Barrier(MPI_COMM_WORLD);
        memset(r, 0, n);
        KT_MPI(MPI_Recv(r, (int)n, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        KT_CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 2, "unexpected: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
        check(r, n, 2, "unexpected");
        /* 3 */
        MPI_Datatype v;
        KT_MPI(MPI_Type_vector((int)(n / 8), 8, 16, MPI_BYTE, &v));
        KT_MPI(MPI_Type_commit(&v));
        memset(r, 0xee, 2 * n);
        KT_MPI(MPI_Recv(r, 1, v, 0, 3, MPI_COMM_WORLD, &st));
        for (size_t i = 0; i < n / 8; i++)
            for (int j = 0; j < 8; j++) {
                if (r[16 * i + (size_t)j] != pat(3, 8 * i + (size_t)j)) KT_FAIL("vector receive: block %zu byte %d", i, j);
                if (r[16 * i + 8 + (size_t)j] != 0xee) KT_FAIL("vector receive wrote into gap %zu", i);
            }
        KT_MPI(MPI_Type_free(&v));
        /* 4 */
        KT_MPI(MPI_Recv(r, (int)n, MPI_BYTE, 0, 4, MPI_COMM_WORLD, &st));
        check_count(&st, MPI_BYTE, (int)n, "vector send");
        check(r, n, 4, "vector send");
        /* 5 */
        MPI_Message m;
        KT_MPI(MPI_Mprobe(0, 5, MPI_COMM_WORLD, &m, &st));
        check_count(&st, MPI_BYTE, (int)n, "mprobe");
        memset(r, 0, n);
        KT_MPI(MPI_Mrecv(r, (int)n, MPI_BYTE, &m, &st));
        check(r, n, 5, "mrecv");
        /* 6: half fits */
        memset(r, 0xab, n);
        int rc = MPI_Recv(r, (int)(n / 2), MPI_BYTE, 0, 6, MPI_COMM_WORLD, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        KT_CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive gave class %d", cls);
        check(r, n / 2, 6, "truncated");
        KT_CHECK(r[n / 2] == 0xab, "truncated receive wrote past its buffer");
        /* 7, 8 */
        KT_MPI(MPI_Recv(r, (int)n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st));
        check(r, n, 7, "ssend");
        KT_MPI(MPI_Recv(r, (int)n, MPI_BYTE, 0, 8, MPI_COMM_WORLD, &st));
        check(r, n, 8, "bsend");
        /* 9 */
        MPI_Barrier(MPI_COMM_WORLD);             /* the RTS is here */
        MPI_Barrier(MPI_COMM_WORLD);             /* the cancel is done */
        KT_MPI(MPI_Recv(r, (int)n, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &st));
        check(r, n, 9, "after the cancel");
        int flag = 1;
        KT_MPI(MPI_Iprobe(0, 9, MPI_COMM_WORLD, &flag, &st));
        KT_CHECK(!flag, "the cancelled message is still there");
        /* 10 */
        unsigned char *rr = malloc(8 * n);
        KT_CHECK(rr, "out of memory");
        for (int i = 7; i >= 0; i--)
            KT_MPI(MPI_Irecv(rr + (size_t)i * n, (int)n, MPI_BYTE, 0, 100 + i, MPI_COMM_WORLD, &rq[i]));
        KT_MPI(MPI_Waitall(8, rq, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 8; i++) check(rr + (size_t)i * n, n, 10 + (i & 1), "eight in flight");
        free(rr);
        /* 11 */
        memset(r, 0xcd, n);
        rc = MPI_Recv(r, 1000, MPI_BYTE, 0, 11, MPI_COMM_WORLD, &st);
        MPI_Error_class(rc, &cls);
        KT_CHECK(cls == MPI_ERR_TRUNCATE, "receive of 1000 bytes gave class %d", cls);
        check(r, 1000, 12, "truncated to 1000 bytes");
        for (size_t i = 1000; i < n; i++)
            if (r[i] != 0xcd) KT_FAIL("truncated to 1000 bytes: byte %zu written", i);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(s);
    free(r);
    MPI_Finalize();
    if (rank == 0) printf("p2p_rndv: ok (%zu bytes)\n", n);
    return 0;
}
