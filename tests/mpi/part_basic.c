/* Partitioned communication (MPI 4.1 chapter 4): a ring (each rank sends to
 * rank+1, receives from rank-1; one rank: to itself) with sender/receiver
 * partition counts that differ (4/2, 1/8, 8/1, 16/16, 3/6), Pready in random
 * order, Pready_range and Pready_list, Parrived polled before Wait (and
 * checked against the data that must be there), many restarts, partitions
 * above the eager limit, a non-contiguous datatype on both sides,
 * MPI_PROC_NULL, two channels between the same pair with the same tag
 * (paired in init order), and the error classes of misuse. */
#include "kt.h"
#include <stdint.h>

static int rank, size, next, prev;

static unsigned rnd_state = 12345;
static unsigned rnd(void) { rnd_state = rnd_state * 1103515245u + 12345u; return rnd_state >> 8; }

static double val(int round, int from, size_t i) { return round * 1e6 + from * 1e4 + (double)(i % 9973) + 0.5; }

/* One exchange setup: sender sp partitions of sc doubles, receiver rp of rc. */
static void ring(int sp, int sc, int rp, int rc, int rounds, int style)
{
    size_t n = (size_t)sp * (size_t)sc;
    KT_CHECK(n == (size_t)rp * (size_t)rc, "bad test setup");
    double *sbuf = malloc((n ? n : 1) * sizeof *sbuf), *rbuf = malloc((n ? n : 1) * sizeof *rbuf);
    MPI_Request sreq, rreq;
    int tag = 100 + style;
    KT_MPI(MPI_Precv_init(rbuf, rp, rc, MPI_DOUBLE, prev, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq));
    KT_MPI(MPI_Psend_init(sbuf, sp, sc, MPI_DOUBLE, next, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq));
    int *order = malloc((size_t)sp * sizeof *order);
    char *seen = calloc((size_t)rp + 1, 1);
    for (int round = 0; round < rounds; round++) {
        for (size_t i = 0; i < n; i++) { sbuf[i] = val(round, rank, i); rbuf[i] = -1; }
        KT_MPI(MPI_Start(&rreq));
        KT_MPI(MPI_Start(&sreq));
        for (int i = 0; i < sp; i++) order[i] = i;
        for (int i = sp - 1; i > 0; i--) { int j = (int)(rnd() % (unsigned)(i + 1)), t = order[i]; order[i] = order[j]; order[j] = t; }
        int half = sp / 2;
        /* first half one by one (random order); second half by range or list */
        for (int i = 0; i < half; i++) KT_MPI(MPI_Pready(order[i], sreq));
        /* poll Parrived a little: a partition that says arrived must hold its data */
        memset(seen, 0, (size_t)rp);
        for (int spin = 0; spin < 50; spin++)
            for (int q = 0; q < rp; q++) {
                int f = 0;
                KT_MPI(MPI_Parrived(rreq, q, &f));
                if (f && !seen[q]) {
                    seen[q] = 1;
                    for (size_t i = (size_t)q * rc; i < (size_t)(q + 1) * rc; i++)
                        if (rbuf[i] != val(round, prev, i))
                            KT_FAIL("round %d: partition %d arrived but element %zu is %g, expected %g",
                                    round, q, i, rbuf[i], val(round, prev, i));
                }
            }
        if (style == 0) {
            for (int i = half; i < sp; i++) KT_MPI(MPI_Pready(order[i], sreq));
        } else if (style == 1) {
            KT_MPI(MPI_Pready_list(sp - half, order + half, sreq));
        } else {
            /* mark the ones left, in runs, with Pready_range */
            char *done = calloc((size_t)sp, 1);
            for (int i = 0; i < half; i++) done[order[i]] = 1;
            for (int i = 0; i < sp;) {
                if (done[i]) { i++; continue; }
                int j = i;
                while (j + 1 < sp && !done[j + 1]) j++;
                KT_MPI(MPI_Pready_range(i, j, sreq));
                i = j + 1;
            }
            free(done);
        }
        /* Parrived must become true for every receive partition before Wait */
        for (int q = 0; q < rp; q++) {
            int f = 0;
            double t0 = MPI_Wtime();
            while (!f) {
                KT_MPI(MPI_Parrived(rreq, q, &f));
                if (MPI_Wtime() - t0 > 60) KT_FAIL("round %d: partition %d never arrived", round, q);
            }
            for (size_t i = (size_t)q * rc; i < (size_t)(q + 1) * rc; i++)
                if (rbuf[i] != val(round, prev, i))
                    KT_FAIL("round %d (%d/%d -> %d/%d): element %zu is %g, expected %g", round, sp, sc, rp, rc, i,
                            rbuf[i], val(round, prev, i));
        }
        MPI_Status st;
        KT_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Wait(&rreq, &st));
        KT_EQ_INT(st.MPI_SOURCE, prev);
        KT_EQ_INT(st.MPI_TAG, tag);
        int cnt = -1;
        KT_MPI(MPI_Get_count(&st, MPI_DOUBLE, &cnt));
        KT_EQ_INT(cnt, (long long)n);
        KT_CHECK(sreq != MPI_REQUEST_NULL && rreq != MPI_REQUEST_NULL, "persistent requests stay");
        /* inactive now: Parrived says true */
        int f = 0;
        if (rp) { KT_MPI(MPI_Parrived(rreq, 0, &f)); KT_EQ_INT(f, 1); }
    }
    KT_MPI(MPI_Request_free(&sreq));
    KT_MPI(MPI_Request_free(&rreq));
    KT_CHECK(sreq == MPI_REQUEST_NULL && rreq == MPI_REQUEST_NULL, "freed");
    free(order); free(seen); free(sbuf); free(rbuf);
}

/* A strided type on both sides: every other int of 2*n, sent as 4 partitions, received as 2. */
static void noncontig(void)
{
    MPI_Datatype vec;
    KT_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));     /* 3 ints, stride 2: extent 5 ints */
    KT_MPI(MPI_Type_commit(&vec));
    const int parts = 4, cnt = 2;                       /* 8 vectors = 24 ints of data */
    int *sbuf = malloc(40 * 5 * sizeof(int)), *rbuf = malloc(40 * 5 * sizeof(int));
    MPI_Request s, r;
    KT_MPI(MPI_Precv_init(rbuf, 2, 4, vec, prev, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    KT_MPI(MPI_Psend_init(sbuf, parts, cnt, vec, next, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 200; i++) { sbuf[i] = rank * 1000 + round * 100 + i; rbuf[i] = -7; }
        KT_MPI(MPI_Start(&r));
        KT_MPI(MPI_Start(&s));
        for (int p = parts - 1; p >= 0; p--) KT_MPI(MPI_Pready(p, s));
        KT_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        /* element e (a vector) starts at int 5*e; its ints are at +0, +2, +4 */
        for (int e = 0; e < 8; e++)
            for (int k = 0; k < 5; k++) {
                int i = 5 * e + k;
                int want = (k % 2 == 0) ? prev * 1000 + round * 100 + i : -7;
                if (rbuf[i] != want) KT_FAIL("non-contiguous round %d: rbuf[%d] = %d, expected %d", round, i, rbuf[i], want);
            }
    }
    KT_MPI(MPI_Request_free(&s));
    KT_MPI(MPI_Request_free(&r));
    KT_MPI(MPI_Type_free(&vec));
    free(sbuf); free(rbuf);
}

/* Two channels between the same pair, same tag: paired in init order. */
static void two_channels(void)
{
    int a[4], b[4], ra[4], rb[4];
    MPI_Request s[2], r[2];
    KT_MPI(MPI_Precv_init(ra, 4, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r[0]));
    KT_MPI(MPI_Precv_init(rb, 2, 2, MPI_INT, prev, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r[1]));
    KT_MPI(MPI_Psend_init(a, 2, 2, MPI_INT, next, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &s[0]));
    KT_MPI(MPI_Psend_init(b, 1, 4, MPI_INT, next, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &s[1]));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 4; i++) { a[i] = 10 * rank + i + round * 1000; b[i] = -10 * rank - i - round * 1000; ra[i] = rb[i] = 99; }
        /* start the second pair first, and make the second channel ready first */
        KT_MPI(MPI_Startall(2, s));
        KT_MPI(MPI_Start(&r[1]));
        KT_MPI(MPI_Pready(0, s[1]));
        KT_MPI(MPI_Start(&r[0]));
        KT_MPI(MPI_Pready_range(0, 1, s[0]));
        KT_MPI(MPI_Waitall(2, s, MPI_STATUSES_IGNORE));
        KT_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 4; i++) {
            KT_EQ_INT(ra[i], 10 * prev + i + round * 1000);
            KT_EQ_INT(rb[i], -10 * prev - i - round * 1000);
        }
    }
    for (int i = 0; i < 2; i++) { KT_MPI(MPI_Request_free(&s[i])); KT_MPI(MPI_Request_free(&r[i])); }
}

static void proc_null(void)
{
    int x[8] = { 0 };
    MPI_Request s, r;
    MPI_Status st;
    KT_MPI(MPI_Psend_init(x, 2, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    KT_MPI(MPI_Precv_init(x, 4, 2, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (int round = 0; round < 2; round++) {
        KT_MPI(MPI_Start(&s));
        KT_MPI(MPI_Start(&r));
        KT_MPI(MPI_Pready(1, s));
        KT_MPI(MPI_Pready(0, s));
        int f = 0;
        KT_MPI(MPI_Parrived(r, 3, &f));
        KT_EQ_INT(f, 1);
        KT_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Wait(&r, &st));
        KT_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
        int c = -1;
        KT_MPI(MPI_Get_count(&st, MPI_INT, &c));
        KT_EQ_INT(c, 0);
    }
    KT_MPI(MPI_Request_free(&s));
    KT_MPI(MPI_Request_free(&r));
}

/* The same tag on another communicator (a dup) and on an intercommunicator
 * (even ranks with odd ranks) must not mix with MPI_COMM_WORLD's channel. */
static void other_comms(void)
{
    MPI_Comm dup;
    int a[6], b[6], ra[6], rb[6];
    MPI_Request rq[4];
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    KT_MPI(MPI_Precv_init(rb, 3, 2, MPI_INT, prev, 11, dup, MPI_INFO_NULL, &rq[0]));
    KT_MPI(MPI_Precv_init(ra, 2, 3, MPI_INT, prev, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]));
    KT_MPI(MPI_Psend_init(a, 6, 1, MPI_INT, next, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[2]));
    KT_MPI(MPI_Psend_init(b, 1, 6, MPI_INT, next, 11, dup, MPI_INFO_NULL, &rq[3]));
    KT_MPI(MPI_Comm_free(&dup));                         /* the requests keep it alive */
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 6; i++) { a[i] = rank * 10 + i + round; b[i] = -(rank * 10 + i + round); ra[i] = rb[i] = 0; }
        KT_MPI(MPI_Startall(4, rq));
        KT_MPI(MPI_Pready(0, rq[3]));
        KT_MPI(MPI_Pready_range(0, 5, rq[2]));
        KT_MPI(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 6; i++) { KT_EQ_INT(ra[i], prev * 10 + i + round); KT_EQ_INT(rb[i], -(prev * 10 + i + round)); }
    }
    for (int i = 0; i < 4; i++) KT_MPI(MPI_Request_free(&rq[i]));

    if (size < 2 || size % 2) return;
    MPI_Comm half, inter;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    KT_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 3, &inter));
    int me, x[8], y[8];
    MPI_Comm_rank(half, &me);
    MPI_Request s, r;
    KT_MPI(MPI_Psend_init(x, 4, 2, MPI_INT, me, 12, inter, MPI_INFO_NULL, &s));   /* to my twin */
    KT_MPI(MPI_Precv_init(y, 2, 4, MPI_INT, me, 12, inter, MPI_INFO_NULL, &r));
    for (int i = 0; i < 8; i++) { x[i] = rank * 100 + i; y[i] = -1; }
    KT_MPI(MPI_Start(&r));
    KT_MPI(MPI_Start(&s));
    int list[4] = { 3, 1, 2, 0 };
    KT_MPI(MPI_Pready_list(4, list, s));
    KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    KT_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
    int twin = rank % 2 ? rank - 1 : rank + 1;
    for (int i = 0; i < 8; i++) KT_EQ_INT(y[i], twin * 100 + i);
    KT_MPI(MPI_Request_free(&s));
    KT_MPI(MPI_Request_free(&r));
    KT_MPI(MPI_Comm_free(&inter));
    KT_MPI(MPI_Comm_free(&half));
}

/* A sender with more data than the receive buffer holds: MPI_ERR_TRUNCATE. */
static void truncation(void)
{
    int x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, y[8] = { 0 };
    MPI_Request s, r;
    MPI_Status st;
    KT_MPI(MPI_Precv_init(y, 2, 3, MPI_INT, prev, 13, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    KT_MPI(MPI_Psend_init(x, 2, 4, MPI_INT, next, 13, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    KT_MPI(MPI_Start(&r));
    KT_MPI(MPI_Start(&s));
    KT_MPI(MPI_Pready_range(0, 1, s));
    KT_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
    KT_ERRCLASS(MPI_Wait(&r, &st), MPI_ERR_TRUNCATE);
    for (int i = 0; i < 6; i++) KT_EQ_INT(y[i], i + 1);
    KT_EQ_INT(y[6], 0);
    KT_MPI(MPI_Request_free(&s));
    KT_MPI(MPI_Request_free(&r));
}

static void errors(void)
{
    int x[8];
    MPI_Request s, r, p2p;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    KT_ERRCLASS(MPI_Precv_init(x, 2, 4, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &r), MPI_ERR_RANK);
    KT_ERRCLASS(MPI_Precv_init(x, 2, 4, MPI_INT, prev, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &r), MPI_ERR_TAG);
    KT_ERRCLASS(MPI_Psend_init(x, 2, 4, MPI_INT, size, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &s), MPI_ERR_RANK);
    KT_ERRCLASS(MPI_Psend_init(x, 2, 4, MPI_INT, next, -5, MPI_COMM_WORLD, MPI_INFO_NULL, &s), MPI_ERR_TAG);
    KT_ERRCLASS(MPI_Psend_init(x, -1, 4, MPI_INT, next, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &s), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Psend_init(x, 2, 4, MPI_INT, next, 1, MPI_COMM_NULL, MPI_INFO_NULL, &s), MPI_ERR_COMM);
    KT_ERRCLASS(MPI_Psend_init(NULL, 2, 4, MPI_INT, next, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &s), MPI_ERR_BUFFER);

    /* on a PROC_NULL pair (no traffic): Pready misuse */
    KT_MPI(MPI_Psend_init(x, 2, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    KT_MPI(MPI_Precv_init(x, 2, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    KT_ERRCLASS(MPI_Pready(0, s), MPI_ERR_ARG);                   /* not started */
    KT_MPI(MPI_Start(&s));
    KT_ERRCLASS(MPI_Pready(2, s), MPI_ERR_ARG);                   /* out of range */
    KT_ERRCLASS(MPI_Pready(-1, s), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Pready_range(1, 5, s), MPI_ERR_ARG);
    int bad[2] = { 0, 7 };
    KT_ERRCLASS(MPI_Pready_list(2, bad, s), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Pready(0, r), MPI_ERR_REQUEST);                /* a receive */
    KT_ERRCLASS(MPI_Pready(0, MPI_REQUEST_NULL), MPI_ERR_REQUEST);
    int f;
    KT_ERRCLASS(MPI_Parrived(s, 0, &f), MPI_ERR_REQUEST);          /* a send */
    KT_ERRCLASS(MPI_Parrived(r, 2, &f), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Start(&s), MPI_ERR_REQUEST);                   /* already active */
    KT_MPI(MPI_Pready_range(0, 1, s));
    KT_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
    KT_MPI(MPI_Request_free(&s));
    KT_MPI(MPI_Request_free(&r));
    /* an ordinary request is not a partitioned one */
    KT_MPI(MPI_Irecv(x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &p2p));
    KT_ERRCLASS(MPI_Pready(0, p2p), MPI_ERR_REQUEST);
    KT_ERRCLASS(MPI_Parrived(p2p, 0, &f), MPI_ERR_REQUEST);
    KT_MPI(MPI_Wait(&p2p, MPI_STATUS_IGNORE));
    truncation();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;
    rnd_state += (unsigned)rank * 7919u;

    for (int style = 0; style < 3; style++) {
        ring(4, 6, 2, 12, 20, style);      /* sender 4 / receiver 2 */
        ring(1, 16, 8, 2, 20, style);      /* 1 / 8 */
        ring(8, 3, 1, 24, 20, style);      /* 8 / 1 */
        ring(16, 5, 16, 5, 20, style);     /* 16 / 16 */
        ring(3, 10, 6, 5, 10, style);      /* 3 / 6: receive partitions straddle none, sender's cover two */
        ring(6, 5, 3, 10, 10, style);
        ring(4, 5, 5, 4, 10, style);       /* boundaries that do not line up */
    }
    ring(2, 0, 4, 0, 3, 0);                /* empty partitions */
    ring(4, 40000, 2, 80000, 5, 2);        /* 320 KB per sender partition: rendezvous */
    ring(16, 1, 16, 1, 500, 0);            /* many restarts */
    noncontig();
    two_channels();
    other_comms();
    proc_null();
    errors();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0) printf("part_basic: OK\n");
    return 0;
}
