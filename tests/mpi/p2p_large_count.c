/* MPI-4 large-count (_c) point-to-point calls.
 *
 * Short part (any number of ranks >= 2): every _c call moves the same data as
 * its int twin, and the receiver checks values and statuses of both against
 * each other; eager and rendezvous sizes, a non-contiguous receive type;
 * MPI_ERR_COUNT when count * size overflows; Buffer_attach_c / detach_c
 * round trip, and MPI_ERR_VALUE_TOO_LARGE from the int Buffer_detach on a
 * buffer of more than INT_MAX bytes.
 *
 * Long part (KUMI_TEST_LONG=1, tests/mpi/p2p.longlist, ranks 0 and 1): a
 * transfer of more than 2^31 bytes with an int count of MPI_DOUBLE, and
 * transfers of more than INT_MAX MPI_BYTE elements with the _c calls. */
#include "kt.h"
#include <limits.h>
#include <stdint.h>
#include <unistd.h>

static int rank, size;

/* Value of element i of the message with tag t sent by rank 0. */
static int val(int t, long i) { return t * 1000003 + (int)(i % 999983) * 7 + 1; }

enum { S_SEND, S_BSEND, S_SSEND, S_RSEND, S_ISEND, S_IBSEND, S_ISSEND, S_IRSEND,
       S_SEND_INIT, S_BSEND_INIT, S_SSEND_INIT, S_RSEND_INIT, NSEND };
static const char *sname[NSEND] = { "Send", "Bsend", "Ssend", "Rsend", "Isend", "Ibsend", "Issend", "Irsend",
                                    "Send_init", "Bsend_init", "Ssend_init", "Rsend_init" };
enum { R_RECV, R_IRECV, R_RECV_INIT, R_MRECV, R_IMRECV, NRECV };
static const char *rname[NRECV] = { "Recv", "Irecv", "Recv_init", "Mrecv", "Imrecv" };

static int is_ready(int s) { return s == S_RSEND || s == S_IRSEND || s == S_RSEND_INIT; }

static void do_send(int s, int use_c, const int *buf, int n, int dest, int tag)
{
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Request rq = MPI_REQUEST_NULL;
    MPI_Count c = n;
    if (use_c) {
        switch (s) {
        case S_SEND: KT_MPI(MPI_Send_c(buf, c, MPI_INT, dest, tag, w)); return;
        case S_BSEND: KT_MPI(MPI_Bsend_c(buf, c, MPI_INT, dest, tag, w)); return;
        case S_SSEND: KT_MPI(MPI_Ssend_c(buf, c, MPI_INT, dest, tag, w)); return;
        case S_RSEND: KT_MPI(MPI_Rsend_c(buf, c, MPI_INT, dest, tag, w)); return;
        case S_ISEND: KT_MPI(MPI_Isend_c(buf, c, MPI_INT, dest, tag, w, &rq)); break;
        case S_IBSEND: KT_MPI(MPI_Ibsend_c(buf, c, MPI_INT, dest, tag, w, &rq)); break;
        case S_ISSEND: KT_MPI(MPI_Issend_c(buf, c, MPI_INT, dest, tag, w, &rq)); break;
        case S_IRSEND: KT_MPI(MPI_Irsend_c(buf, c, MPI_INT, dest, tag, w, &rq)); break;
        case S_SEND_INIT: KT_MPI(MPI_Send_init_c(buf, c, MPI_INT, dest, tag, w, &rq)); break;
        case S_BSEND_INIT: KT_MPI(MPI_Bsend_init_c(buf, c, MPI_INT, dest, tag, w, &rq)); break;
        case S_SSEND_INIT: KT_MPI(MPI_Ssend_init_c(buf, c, MPI_INT, dest, tag, w, &rq)); break;
        case S_RSEND_INIT: KT_MPI(MPI_Rsend_init_c(buf, c, MPI_INT, dest, tag, w, &rq)); break;
        }
    } else {
        switch (s) {
        case S_SEND: KT_MPI(MPI_Send(buf, n, MPI_INT, dest, tag, w)); return;
        case S_BSEND: KT_MPI(MPI_Bsend(buf, n, MPI_INT, dest, tag, w)); return;
        case S_SSEND: KT_MPI(MPI_Ssend(buf, n, MPI_INT, dest, tag, w)); return;
        case S_RSEND: KT_MPI(MPI_Rsend(buf, n, MPI_INT, dest, tag, w)); return;
        case S_ISEND: KT_MPI(MPI_Isend(buf, n, MPI_INT, dest, tag, w, &rq)); break;
        case S_IBSEND: KT_MPI(MPI_Ibsend(buf, n, MPI_INT, dest, tag, w, &rq)); break;
        case S_ISSEND: KT_MPI(MPI_Issend(buf, n, MPI_INT, dest, tag, w, &rq)); break;
        case S_IRSEND: KT_MPI(MPI_Irsend(buf, n, MPI_INT, dest, tag, w, &rq)); break;
        case S_SEND_INIT: KT_MPI(MPI_Send_init(buf, n, MPI_INT, dest, tag, w, &rq)); break;
        case S_BSEND_INIT: KT_MPI(MPI_Bsend_init(buf, n, MPI_INT, dest, tag, w, &rq)); break;
        case S_SSEND_INIT: KT_MPI(MPI_Ssend_init(buf, n, MPI_INT, dest, tag, w, &rq)); break;
        case S_RSEND_INIT: KT_MPI(MPI_Rsend_init(buf, n, MPI_INT, dest, tag, w, &rq)); break;
        }
    }
    KT_CHECK(rq != MPI_REQUEST_NULL, "MPI_%s%s gave a request", sname[s], use_c ? "_c" : "");
    if (s >= S_SEND_INIT) KT_MPI(MPI_Start(&rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    if (s >= S_SEND_INIT) {
        KT_CHECK(rq != MPI_REQUEST_NULL, "persistent request stays allocated");
        KT_MPI(MPI_Request_free(&rq));
    }
    KT_CHECK(rq == MPI_REQUEST_NULL, "request freed");
}

/* Post a receive of kind k (Irecv or Recv_init + Start): the request. */
static MPI_Request post_recv(int k, int use_c, void *buf, MPI_Count n, MPI_Datatype dt, int src, int tag)
{
    MPI_Request rq = MPI_REQUEST_NULL;
    if (k == R_RECV_INIT) {
        if (use_c) KT_MPI(MPI_Recv_init_c(buf, n, dt, src, tag, MPI_COMM_WORLD, &rq));
        else KT_MPI(MPI_Recv_init(buf, (int)n, dt, src, tag, MPI_COMM_WORLD, &rq));
        KT_MPI(MPI_Start(&rq));
    } else {
        if (use_c) KT_MPI(MPI_Irecv_c(buf, n, dt, src, tag, MPI_COMM_WORLD, &rq));
        else KT_MPI(MPI_Irecv(buf, (int)n, dt, src, tag, MPI_COMM_WORLD, &rq));
    }
    return rq;
}

static void finish_recv(int k, MPI_Request *rq, MPI_Status *st)
{
    KT_MPI(MPI_Wait(rq, st));
    if (k == R_RECV_INIT) KT_MPI(MPI_Request_free(rq));
    KT_CHECK(*rq == MPI_REQUEST_NULL, "receive request freed");
}

static void do_recv(int k, int use_c, void *buf, MPI_Count n, MPI_Datatype dt, int src, int tag, MPI_Status *st)
{
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Request rq;
    int flag = 0;
    switch (k) {
    case R_RECV:
        if (use_c) KT_MPI(MPI_Recv_c(buf, n, dt, src, tag, w, st));
        else KT_MPI(MPI_Recv(buf, (int)n, dt, src, tag, w, st));
        break;
    case R_IRECV:
    case R_RECV_INIT:
        rq = post_recv(k, use_c, buf, n, dt, src, tag);
        finish_recv(k, &rq, st);
        break;
    case R_MRECV:
        KT_MPI(MPI_Mprobe(src, tag, w, &m, MPI_STATUS_IGNORE));
        if (use_c) KT_MPI(MPI_Mrecv_c(buf, n, dt, &m, st));
        else KT_MPI(MPI_Mrecv(buf, (int)n, dt, &m, st));
        KT_CHECK(m == MPI_MESSAGE_NULL, "message consumed");
        break;
    case R_IMRECV:
        while (!flag) KT_MPI(MPI_Improbe(src, tag, w, &flag, &m, MPI_STATUS_IGNORE));
        if (use_c) KT_MPI(MPI_Imrecv_c(buf, n, dt, &m, &rq));
        else KT_MPI(MPI_Imrecv(buf, (int)n, dt, &m, &rq));
        KT_MPI(MPI_Wait(&rq, st));
        break;
    }
}

/* Both statuses of an int / _c pair: same source, count and elements. */
static void check_status(const MPI_Status *st, MPI_Datatype dt, int src, int tag, MPI_Count expect)
{
    MPI_Count cc = -1, ec = -1;
    int ci = -1;
    KT_EQ_INT(st->MPI_SOURCE, src);
    KT_EQ_INT(st->MPI_TAG, tag);
    KT_MPI(MPI_Get_count_c(st, dt, &cc));
    KT_EQ_INT(cc, expect);
    KT_MPI(MPI_Get_count(st, dt, &ci));
    KT_EQ_INT(ci, expect);
    KT_MPI(MPI_Get_elements_c(st, dt, &ec));
    KT_EQ_INT(ec, expect);
}

/* Every send kind x (int, _c) to every other rank; receivers cycle through
 * the receive kinds with the same flavour and compare int and _c results. */
static void sends_and_receives(int n)
{
    int *sb = malloc(n * sizeof(int)), *rb[2];
    rb[0] = malloc(n * sizeof(int));
    rb[1] = malloc(n * sizeof(int));
    KT_CHECK(sb && rb[0] && rb[1], "memory");
    for (int s = 0; s < NSEND; s++) {
        MPI_Status st[2];
        int k = s % NRECV;
        for (int use_c = 0; use_c < 2; use_c++) {
            int tag = 100 + 2 * s + use_c;
            MPI_Request rq = MPI_REQUEST_NULL;
            int rk = is_ready(s) ? (k == R_RECV_INIT ? R_RECV_INIT : R_IRECV) : k;
            memset(rb[use_c], 0xff, n * sizeof(int));
            if (rank != 0 && is_ready(s)) rq = post_recv(rk, use_c, rb[use_c], n, MPI_INT, 0, tag);
            MPI_Barrier(MPI_COMM_WORLD);               /* ready sends: receives are posted */
            if (rank == 0) {
                for (long i = 0; i < n; i++) sb[i] = val(tag, i);
                for (int d = 1; d < size; d++) do_send(s, use_c, sb, n, d, tag);
            } else {
                if (is_ready(s)) finish_recv(rk, &rq, &st[use_c]);
                else do_recv(k, use_c, rb[use_c], n, MPI_INT, 0, tag, &st[use_c]);
                for (long i = 0; i < n; i++)
                    if (rb[use_c][i] != val(tag, i))
                        KT_FAIL("MPI_%s%s -> MPI_%s%s, n=%d: element %ld is %d, expected %d", sname[s],
                                use_c ? "_c" : "", rname[rk], use_c ? "_c" : "", n, i, rb[use_c][i], val(tag, i));
                check_status(&st[use_c], MPI_INT, 0, tag, n);
            }
        }
        if (rank != 0) {
            /* the int and the _c transfer: same values (up to the tag), same status */
            KT_EQ_INT(st[0].MPI_SOURCE, st[1].MPI_SOURCE);
            KT_EQ_INT(st[0].MPI_TAG + 1, st[1].MPI_TAG);
            MPI_Count c0, c1;
            MPI_Get_count_c(&st[0], MPI_INT, &c0);
            MPI_Get_count_c(&st[1], MPI_INT, &c1);
            KT_EQ_INT(c0, c1);
        }
    }
    free(sb); free(rb[0]); free(rb[1]);
}

/* A non-contiguous receive type (every other int) with Recv_c / Recv. */
static void noncontig(int n)
{
    MPI_Datatype v;
    KT_MPI(MPI_Type_vector(n, 1, 2, MPI_INT, &v));
    KT_MPI(MPI_Type_commit(&v));
    int *sb = malloc(n * sizeof(int)), *rb = malloc(2 * n * sizeof(int));
    for (int use_c = 0; use_c < 2; use_c++) {
        int tag = 300 + use_c;
        if (rank == 0) {
            for (long i = 0; i < n; i++) sb[i] = val(tag, i);
            for (int d = 1; d < size; d++) {
                if (use_c) KT_MPI(MPI_Send_c(sb, n, MPI_INT, d, tag, MPI_COMM_WORLD));
                else KT_MPI(MPI_Send(sb, n, MPI_INT, d, tag, MPI_COMM_WORLD));
            }
        } else {
            MPI_Status st;
            for (long i = 0; i < 2 * n; i++) rb[i] = -5;
            if (use_c) KT_MPI(MPI_Recv_c(rb, 1, v, 0, tag, MPI_COMM_WORLD, &st));
            else KT_MPI(MPI_Recv(rb, 1, v, 0, tag, MPI_COMM_WORLD, &st));
            for (long i = 0; i < n; i++) {
                KT_EQ_INT(rb[2 * i], val(tag, i));
                KT_EQ_INT(rb[2 * i + 1], -5);
            }
            check_status(&st, MPI_INT, 0, tag, n);
            MPI_Count c = -1;
            KT_MPI(MPI_Get_count_c(&st, v, &c));
            KT_EQ_INT(c, 1);
        }
    }
    free(sb); free(rb);
    MPI_Type_free(&v);
}

/* Sendrecv, Sendrecv_replace, Isendrecv, Isendrecv_replace around a ring. */
static void ring(int n)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *sb = malloc(n * sizeof(int)), *rb[2];
    rb[0] = malloc(n * sizeof(int));
    rb[1] = malloc(n * sizeof(int));
    for (int f = 0; f < 4; f++) {
        MPI_Status st[2];
        for (int use_c = 0; use_c < 2; use_c++) {
            int tag = 400 + 2 * f + use_c;
            MPI_Request rq = MPI_REQUEST_NULL;
            int *b = rb[use_c];
            for (long i = 0; i < n; i++) sb[i] = val(tag + rank, i);
            if (f == 1 || f == 3) memcpy(b, sb, n * sizeof(int));
            else memset(b, 0xff, n * sizeof(int));
            switch (f * 2 + use_c) {
            case 0: KT_MPI(MPI_Sendrecv(sb, n, MPI_INT, right, tag, b, n, MPI_INT, left, tag, MPI_COMM_WORLD,
                                        &st[use_c])); break;
            case 1: KT_MPI(MPI_Sendrecv_c(sb, n, MPI_INT, right, tag, b, n, MPI_INT, left, tag, MPI_COMM_WORLD,
                                          &st[use_c])); break;
            case 2: KT_MPI(MPI_Sendrecv_replace(b, n, MPI_INT, right, tag, left, tag, MPI_COMM_WORLD,
                                                &st[use_c])); break;
            case 3: KT_MPI(MPI_Sendrecv_replace_c(b, n, MPI_INT, right, tag, left, tag, MPI_COMM_WORLD,
                                                  &st[use_c])); break;
            case 4: KT_MPI(MPI_Isendrecv(sb, n, MPI_INT, right, tag, b, n, MPI_INT, left, tag, MPI_COMM_WORLD,
                                         &rq)); break;
            case 5: KT_MPI(MPI_Isendrecv_c(sb, n, MPI_INT, right, tag, b, n, MPI_INT, left, tag, MPI_COMM_WORLD,
                                           &rq)); break;
            case 6: KT_MPI(MPI_Isendrecv_replace(b, n, MPI_INT, right, tag, left, tag, MPI_COMM_WORLD, &rq)); break;
            case 7: KT_MPI(MPI_Isendrecv_replace_c(b, n, MPI_INT, right, tag, left, tag, MPI_COMM_WORLD, &rq));
                break;
            }
            if (f >= 2) KT_MPI(MPI_Wait(&rq, &st[use_c]));
            for (long i = 0; i < n; i++)
                if (b[i] != val(tag + left, i))
                    KT_FAIL("ring family %d use_c %d n=%d: element %ld is %d, expected %d", f, use_c, n, i, b[i],
                            val(tag + left, i));
            check_status(&st[use_c], MPI_INT, left, tag, n);
        }
        KT_EQ_INT(st[0].MPI_SOURCE, st[1].MPI_SOURCE);
        MPI_Count c0, c1;
        MPI_Get_count_c(&st[0], MPI_INT, &c0);
        MPI_Get_count_c(&st[1], MPI_INT, &c1);
        KT_EQ_INT(c0, c1);
    }
    free(sb); free(rb[0]); free(rb[1]);
}

/* Counts whose byte size overflows 63 bits: MPI_ERR_COUNT (peer MPI_PROC_NULL:
 * without the check the calls would succeed, and the test fails). */
static void count_overflow(void)
{
    MPI_Datatype big;
    MPI_Request rq;
    int x = 0;
    MPI_Count huge = (MPI_Count)(INT64_MAX / 2);     /* * 4 bytes overflows 63 bits */
    KT_ERRCLASS(MPI_Send_c(&x, huge, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Isend_c(&x, huge, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &rq), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Recv_c(&x, huge, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Irecv_c(&x, huge, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &rq), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Sendrecv_c(&x, 1, MPI_INT, MPI_PROC_NULL, 0, &x, huge, MPI_INT, MPI_PROC_NULL, 0,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Sendrecv_replace_c(&x, huge, MPI_INT, MPI_PROC_NULL, 0, MPI_PROC_NULL, 0, MPI_COMM_WORLD,
                                       MPI_STATUS_IGNORE), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Isendrecv_replace_c(&x, huge, MPI_INT, MPI_PROC_NULL, 0, MPI_PROC_NULL, 0, MPI_COMM_WORLD,
                                        &rq), MPI_ERR_COUNT);
    /* an int count of a big type overflows too: 2^31-1 elements of 2^33 bytes */
    KT_MPI(MPI_Type_contiguous(1 << 30, MPI_DOUBLE, &big));
    KT_MPI(MPI_Type_commit(&big));
    KT_ERRCLASS(MPI_Send(&x, INT_MAX, big, MPI_PROC_NULL, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Ssend_init(&x, INT_MAX, big, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &rq), MPI_ERR_COUNT);
    /* a count whose byte size fits: 2 elements (2^34 bytes) to MPI_PROC_NULL */
    KT_MPI(MPI_Send_c(&x, 2, big, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    MPI_Type_free(&big);
    /* the counts of a PROC_NULL receive are 0 */
    MPI_Status st;
    MPI_Count c = -1;
    KT_MPI(MPI_Recv_c(&x, 3000000000LL, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    KT_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
    KT_MPI(MPI_Get_count_c(&st, MPI_BYTE, &c));
    KT_EQ_INT(c, 0);
}

static void buffers(void)
{
    void *p = NULL;
    MPI_Count sz = -1;
    int isz = -1;
    /* _c attach / _c detach, int attach / _c detach, _c attach / int detach */
    MPI_Count bsz = 3 * (8 * (MPI_Count)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *b = malloc(bsz);
    KT_MPI(MPI_Buffer_attach_c(b, bsz));
    KT_ERRCLASS(MPI_Buffer_attach_c(b, bsz), MPI_ERR_BUFFER);     /* already attached */
    int v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, r[8];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    KT_MPI(MPI_Bsend_c(v, 8, MPI_INT, right, 7, MPI_COMM_WORLD));
    KT_MPI(MPI_Recv_c(r, 8, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 8; i++) KT_EQ_INT(r[i], i + 1);
    KT_MPI(MPI_Buffer_detach_c(&p, &sz));
    KT_CHECK(p == b, "Buffer_detach_c returns the buffer");
    KT_EQ_INT(sz, bsz);
    KT_MPI(MPI_Buffer_attach(b, (int)bsz));
    KT_MPI(MPI_Buffer_detach_c(&p, &sz));
    KT_CHECK(p == b, "Buffer_detach_c after Buffer_attach");
    KT_EQ_INT(sz, bsz);
    KT_MPI(MPI_Buffer_attach_c(b, bsz - 1));
    KT_MPI(MPI_Buffer_detach(&p, &isz));
    KT_CHECK(p == b, "Buffer_detach after Buffer_attach_c");
    KT_EQ_INT(isz, bsz - 1);
    /* nothing attached: NULL, 0 */
    KT_MPI(MPI_Buffer_detach_c(&p, &sz));
    KT_CHECK(p == NULL, "detach without attach");
    KT_EQ_INT(sz, 0);
    free(b);
    /* a buffer of more than INT_MAX bytes (never touched: no bsend) */
    MPI_Count gsz = (MPI_Count)INT_MAX + 4096;
    char *g = malloc(gsz);
    if (g) {
        KT_MPI(MPI_Buffer_attach_c(g, gsz));
        KT_ERRCLASS(MPI_Buffer_detach(&p, &isz), MPI_ERR_VALUE_TOO_LARGE);
        KT_MPI(MPI_Buffer_detach_c(&p, &sz));              /* still attached after that error */
        KT_CHECK(p == g, "large buffer detached");
        KT_EQ_INT(sz, gsz);
        free(g);
    }
    KT_ERRCLASS(MPI_Buffer_attach_c(v, -1), MPI_ERR_ARG);
}

/* ---- long part */
static unsigned char bval(MPI_Count i) { return (unsigned char)(i * 7 + (i >> 20) + 3); }

static void check_bytes(const unsigned char *b, MPI_Count n, const char *what)
{
    for (MPI_Count i = 0; i < n; i++)
        if (b[i] != bval(i)) KT_FAIL("%s: byte %lld is %d, expected %d", what, (long long)i, b[i], bval(i));
}

static void long_part(void)
{
    const MPI_Count nb = 2200000000LL;             /* > INT_MAX bytes */
    const int nd = 300000000;                       /* doubles: 2.4e9 bytes > 2^31, int count */
    long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    int ok = pages > 0 && (double)pages * psz > 11e9;   /* 2 ranks x 2.4 GB + copies */
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) {
        if (rank == 0) printf("p2p_large_count: not enough free memory for the long part: skipped\n");
        return;
    }
    unsigned char *buf = NULL;
    if (rank < 2) {
        buf = malloc((size_t)nd * sizeof(double));
        KT_CHECK(buf != NULL, "2.4 GB buffer");
    }
    MPI_Status st;
    MPI_Count c = -1;
    int ic = 0;
    /* 1: int count of MPI_DOUBLE, > 2^31 bytes; received with Recv_c */
    if (rank == 0) {
        for (MPI_Count i = 0; i < (MPI_Count)nd * 8; i++) buf[i] = bval(i);
        KT_MPI(MPI_Send(buf, nd, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD));
    } else if (rank == 1) {
        memset(buf, 0, (size_t)nd * 8);
        KT_MPI(MPI_Recv_c(buf, nd, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, &st));
        check_bytes(buf, (MPI_Count)nd * 8, "MPI_Send of 3e8 doubles");
        KT_MPI(MPI_Get_count(&st, MPI_DOUBLE, &ic));
        KT_EQ_INT(ic, nd);
        KT_MPI(MPI_Get_count_c(&st, MPI_BYTE, &c));
        KT_EQ_INT(c, (MPI_Count)nd * 8);
        KT_MPI(MPI_Get_count(&st, MPI_BYTE, &ic));
        KT_EQ_INT(ic, MPI_UNDEFINED);
    }
    /* 2: count > INT_MAX of MPI_BYTE: Isend_c -> Irecv_c */
    if (rank == 0) {
        MPI_Request rq;
        KT_MPI(MPI_Isend_c(buf, nb, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq));
        KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    } else if (rank == 1) {
        MPI_Request rq;
        memset(buf, 0, nb);
        KT_MPI(MPI_Irecv_c(buf, nb, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq));
        KT_MPI(MPI_Wait(&rq, &st));
        check_bytes(buf, nb, "Isend_c -> Irecv_c of 2.2e9 bytes");
        KT_MPI(MPI_Get_count_c(&st, MPI_BYTE, &c));
        KT_EQ_INT(c, nb);
        KT_MPI(MPI_Get_count(&st, MPI_BYTE, &ic));
        KT_EQ_INT(ic, MPI_UNDEFINED);
        KT_MPI(MPI_Get_elements_c(&st, MPI_BYTE, &c));
        KT_EQ_INT(c, nb);
    }
    /* 3: Sendrecv_replace_c of > INT_MAX bytes between 0 and 1 (both hold the same data):
     * rank 0's data goes to 1 and back, rank 1's to 0 */
    if (rank < 2) {
        int other = 1 - rank;
        KT_MPI(MPI_Sendrecv_replace_c(buf, nb, MPI_BYTE, other, 4, other, 4, MPI_COMM_WORLD, &st));
        check_bytes(buf, nb, "Sendrecv_replace_c of 2.2e9 bytes");
        KT_MPI(MPI_Get_count_c(&st, MPI_BYTE, &c));
        KT_EQ_INT(c, nb);
        KT_EQ_INT(st.MPI_SOURCE, other);
    }
    free(buf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs at least 2 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    const char *lg = getenv("KUMI_TEST_LONG");
    if (lg && strcmp(lg, "1") == 0 && argc > 1 && strcmp(argv[1], "long") == 0) {
        long_part();
    } else {
        /* a buffer for the buffered sends of rank 0: 2 messages of the largest size at most */
        int n_sizes[2] = { 10, 40000 };              /* eager and rendezvous */
        int psz = 0;
        MPI_Pack_size(n_sizes[1], MPI_INT, MPI_COMM_WORLD, &psz);
        int bsz = (size - 1) * 2 * (psz + MPI_BSEND_OVERHEAD + 8);
        char *bb = malloc(bsz);
        KT_MPI(MPI_Buffer_attach_c(bb, bsz));
        for (int i = 0; i < 2; i++) {
            sends_and_receives(n_sizes[i]);
            noncontig(n_sizes[i]);
            ring(n_sizes[i]);
        }
        void *p;
        MPI_Count sz;
        KT_MPI(MPI_Buffer_detach_c(&p, &sz));
        KT_CHECK(p == bb, "detached the attached buffer");
        KT_EQ_INT(sz, bsz);
        free(bb);
        count_overflow();
        buffers();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
