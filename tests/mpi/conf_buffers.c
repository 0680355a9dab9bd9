/* conf_buffers: the MPI-4.1 buffers of buffered mode (issue 16 items 5 and
 * 9): MPI_Buffer_flush / iflush, MPI_Comm_attach_buffer(_c) /
 * detach_buffer(_c) / flush_buffer / iflush_buffer, the same for sessions,
 * and MPI_BUFFER_AUTOMATIC.  A buffered send uses its communicator's buffer,
 * else its session's, else the process's; flush and iflush wait for the
 * messages (a rendezvous-sized message to a rank that has not posted its
 * receive keeps an iflush request incomplete); MPI_Comm_free waits for the
 * messages in the communicator's buffer before the user may reuse it.
 * Ring over 2 or more ranks. */
#include "kt.h"
#include <stdint.h>
#include <unistd.h>

#define BIG (1 << 20)                /* bytes: rendezvous on every transport */

static int rank, size, right, left;
static char *data, *got;

static void fill(char *p, int n, int seed)
{
    for (int i = 0; i < n; i++) p[i] = (char)(seed * 31 + i * 7);
}

static void check(const char *p, int n, int seed, const char *what)
{
    for (int i = 0; i < n; i++)
        if (p[i] != (char)(seed * 31 + i * 7)) KT_FAIL("%s: byte %d wrong", what, i);
}

/* A buffered send of n bytes on comm to the right, received from the left. */
static void ring_bsend(MPI_Comm comm, int n, int tag)
{
    MPI_Request rq;
    KT_MPI(MPI_Irecv(got, n, MPI_BYTE, left, tag, comm, &rq));
    fill(data, n, rank + tag);
    KT_MPI(MPI_Bsend(data, n, MPI_BYTE, right, tag, comm));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    check(got, n, left + tag, "ring message");
}

/* Rank 0 bsends BIG bytes to rank 1 on comm and starts iflush (flushfn);
 * the request must stay incomplete until rank 1 has posted its receive,
 * which it does only after a barrier on world that rank 0 enters after
 * testing.  Then the request completes. */
static void iflush_waits(MPI_Comm comm, int (*iflush)(MPI_Request *, void *), void *arg, const char *what)
{
    if (rank == 0) {
        MPI_Request rq;
        int flag = 0;
        fill(data, BIG, 5);
        KT_MPI(MPI_Bsend(data, BIG, MPI_BYTE, 1, 77, comm));
        KT_MPI(iflush(&rq, arg));
        for (int i = 0; i < 20 && !flag; i++) KT_MPI(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
        KT_CHECK(!flag, "%s: complete before the receiver posted its receive", what);
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        KT_CHECK(rq == MPI_REQUEST_NULL, "%s: request freed", what);
    } else {
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 1) {
            KT_MPI(MPI_Recv(got, BIG, MPI_BYTE, 0, 77, comm, MPI_STATUS_IGNORE));
            check(got, BIG, 5, what);
        }
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static int do_buffer_iflush(MPI_Request *rq, void *arg) { (void)arg; return MPI_Buffer_iflush(rq); }
static int do_comm_iflush(MPI_Request *rq, void *arg) { return MPI_Comm_iflush_buffer(*(MPI_Comm *)arg, rq); }
static int do_session_iflush(MPI_Request *rq, void *arg) { return MPI_Session_iflush_buffer(*(MPI_Session *)arg, rq); }

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks or more");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    data = malloc(BIG);
    got = malloc(BIG);
    int bsz = 3 * (BIG + MPI_BSEND_OVERHEAD) + 4096;   /* room for the messages of a few ring steps */
    char *pbuf = malloc((size_t)bsz), *cbuf = malloc((size_t)bsz), *sbuf = malloc((size_t)bsz);
    void *p;
    int n;
    MPI_Count nc;

    /* ---- the process's buffer: flush and iflush */
    KT_MPI(MPI_Buffer_flush());                         /* none attached: nothing to wait for */
    MPI_Request rq;
    KT_MPI(MPI_Buffer_iflush(&rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    KT_MPI(MPI_Buffer_attach(pbuf, bsz));
    ring_bsend(MPI_COMM_WORLD, 1000, 1);
    KT_MPI(MPI_Buffer_flush());
    iflush_waits(MPI_COMM_WORLD, do_buffer_iflush, NULL, "MPI_Buffer_iflush");
    /* blocking flush: returns once the receiver took the message */
    if (rank == 0) {
        fill(data, BIG, 6);
        KT_MPI(MPI_Bsend(data, BIG, MPI_BYTE, 1, 78, MPI_COMM_WORLD));
        KT_MPI(MPI_Buffer_flush());
        memset(pbuf, 0x55, (size_t)bsz);                /* the message went: the buffer is free */
    } else if (rank == 1) {
        usleep(100000);
        KT_MPI(MPI_Recv(got, BIG, MPI_BYTE, 0, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        check(got, BIG, 6, "message flushed by MPI_Buffer_flush");
    }
    KT_MPI(MPI_Buffer_detach(&p, &n));
    KT_CHECK(p == pbuf && n == bsz, "MPI_Buffer_detach gave %p/%d", p, n);

    /* ---- a communicator's buffer */
    MPI_Comm c;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    KT_ERRCLASS(MPI_Bsend(data, 10, MPI_BYTE, right, 2, c), MPI_ERR_BUFFER);   /* none anywhere */
    KT_MPI(MPI_Comm_attach_buffer(c, cbuf, bsz));
    KT_ERRCLASS(MPI_Comm_attach_buffer(c, cbuf, bsz), MPI_ERR_BUFFER);          /* one per communicator */
    KT_ERRCLASS(MPI_Comm_attach_buffer_c(c, MPI_BUFFER_AUTOMATIC, 0), MPI_ERR_BUFFER);
    ring_bsend(c, 1000, 3);                              /* c's buffer */
    KT_ERRCLASS(MPI_Bsend(data, 10, MPI_BYTE, right, 4, MPI_COMM_WORLD), MPI_ERR_BUFFER);  /* not world's */
    /* the process's buffer too small for BIG; c's holds it */
    int small = 100 + MPI_BSEND_OVERHEAD;
    KT_MPI(MPI_Buffer_attach(pbuf, small));
    KT_ERRCLASS(MPI_Bsend(data, BIG, MPI_BYTE, right, 5, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    ring_bsend(c, BIG, 6);
    ring_bsend(MPI_COMM_WORLD, 100, 7);                  /* the process's */
    KT_MPI(MPI_Comm_flush_buffer(c));
    iflush_waits(c, do_comm_iflush, &c, "MPI_Comm_iflush_buffer");
    KT_MPI(MPI_Comm_detach_buffer(c, &p, &n));
    KT_CHECK(p == cbuf && n == bsz, "MPI_Comm_detach_buffer gave %p/%d", p, n);
    KT_MPI(MPI_Comm_detach_buffer(c, &p, &n));           /* none: NULL, 0 */
    KT_CHECK(p == NULL && n == 0, "MPI_Comm_detach_buffer of none gave %p/%d", p, n);
    KT_MPI(MPI_Comm_flush_buffer(c));
    /* now c uses the process's buffer (too small for BIG) */
    KT_ERRCLASS(MPI_Bsend(data, BIG, MPI_BYTE, right, 8, c), MPI_ERR_BUFFER);
    KT_MPI(MPI_Buffer_flush());                          /* message 7 is out of the small buffer */
    ring_bsend(c, 100, 9);
    /* _c forms, and MPI_BUFFER_AUTOMATIC: messages beyond any buffer */
    KT_MPI(MPI_Comm_attach_buffer_c(c, cbuf, (MPI_Count)bsz));
    KT_MPI(MPI_Comm_detach_buffer_c(c, &p, &nc));
    KT_CHECK(p == cbuf && nc == bsz, "MPI_Comm_detach_buffer_c gave %p/%lld", p, (long long)nc);
    KT_MPI(MPI_Comm_attach_buffer(c, MPI_BUFFER_AUTOMATIC, -5));    /* size irrelevant */
    {
        MPI_Request r[8];
        for (int k = 0; k < 4; k++) KT_MPI(MPI_Irecv(got + k * (BIG / 4), BIG / 4, MPI_BYTE, left, 20 + k, c, &r[k]));
        for (int k = 0; k < 4; k++) {
            fill(data, BIG / 4, rank + 20 + k);
            KT_MPI(MPI_Bsend(data, BIG / 4, MPI_BYTE, right, 20 + k, c));   /* 4 x 256 KiB, no user buffer */
        }
        KT_MPI(MPI_Waitall(4, r, MPI_STATUSES_IGNORE));
        for (int k = 0; k < 4; k++) check(got + k * (BIG / 4), BIG / 4, left + 20 + k, "automatic buffering");
    }
    iflush_waits(c, do_comm_iflush, &c, "MPI_Comm_iflush_buffer (automatic)");
    KT_MPI(MPI_Comm_detach_buffer(c, &p, &n));
    KT_CHECK(p == MPI_BUFFER_AUTOMATIC, "detaching MPI_BUFFER_AUTOMATIC gave %p", p);
    /* MPI_Comm_free waits for the messages in c's buffer: the buffer may be
     * overwritten as soon as it returns */
    MPI_Comm c2;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c2));
    KT_MPI(MPI_Comm_attach_buffer(c2, cbuf, bsz));
    if (rank == 0) {
        fill(data, BIG, 9);
        KT_MPI(MPI_Bsend(data, BIG, MPI_BYTE, 1, 90, c2));
        KT_MPI(MPI_Comm_free(&c2));
        memset(cbuf, 0x66, (size_t)bsz);
    } else {
        if (rank == 1) {
            usleep(100000);
            KT_MPI(MPI_Recv(got, BIG, MPI_BYTE, 0, 90, c2, MPI_STATUS_IGNORE));
            check(got, BIG, 9, "message in a freed communicator's buffer");
        }
        KT_MPI(MPI_Comm_free(&c2));
    }
    KT_MPI(MPI_Comm_free(&c));
    /* errors */
    KT_ERRCLASS(MPI_Comm_attach_buffer(MPI_COMM_NULL, cbuf, bsz), MPI_ERR_COMM);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    KT_ERRCLASS(MPI_Comm_attach_buffer(c, cbuf, -1), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Comm_attach_buffer(c, NULL, 100), MPI_ERR_BUFFER);
    KT_MPI(MPI_Comm_attach_buffer(c, NULL, 0));          /* empty: allowed, holds nothing */
    KT_ERRCLASS(MPI_Bsend(data, 1, MPI_BYTE, right, 10, c), MPI_ERR_BUFFER);
    KT_MPI(MPI_Comm_detach_buffer(c, &p, &n));
    KT_CHECK(p == NULL && n == 0, "empty buffer detached as %p/%d", p, n);
    KT_MPI(MPI_Comm_free(&c));

    /* ---- a session's buffer: communicators derived from the session use it */
    MPI_Session s;
    MPI_Group g;
    MPI_Comm sc, sd;
    KT_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    KT_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    KT_MPI(MPI_Comm_create_from_group(g, "conf_buffers", MPI_INFO_NULL, MPI_ERRORS_RETURN, &sc));
    KT_MPI(MPI_Group_free(&g));
    KT_MPI(MPI_Comm_dup(sc, &sd));                       /* derived from the session as well */
    KT_ERRCLASS(MPI_Bsend(data, BIG, MPI_BYTE, right, 30, sc), MPI_ERR_BUFFER);   /* process's: small */
    KT_MPI(MPI_Buffer_flush());
    ring_bsend(sc, 100, 31);                             /* the process's buffer */
    KT_MPI(MPI_Session_flush_buffer(s));                 /* none attached */
    KT_MPI(MPI_Session_attach_buffer(s, sbuf, bsz));
    KT_ERRCLASS(MPI_Session_attach_buffer(s, sbuf, bsz), MPI_ERR_BUFFER);
    ring_bsend(sc, BIG, 32);                             /* the session's */
    ring_bsend(sd, BIG, 33);
    KT_ERRCLASS(MPI_Bsend(data, BIG, MPI_BYTE, right, 34, MPI_COMM_WORLD), MPI_ERR_BUFFER);  /* not world's */
    KT_MPI(MPI_Session_flush_buffer(s));
    iflush_waits(sc, do_session_iflush, &s, "MPI_Session_iflush_buffer");
    /* a communicator buffer comes before the session's */
    KT_MPI(MPI_Comm_attach_buffer(sd, MPI_BUFFER_AUTOMATIC, 0));
    KT_MPI(MPI_Session_detach_buffer(s, &p, &n));
    KT_CHECK(p == sbuf && n == bsz, "MPI_Session_detach_buffer gave %p/%d", p, n);
    ring_bsend(sd, BIG, 35);                             /* sd's automatic buffer */
    KT_ERRCLASS(MPI_Bsend(data, BIG, MPI_BYTE, right, 36, sc), MPI_ERR_BUFFER);   /* back to the process's */
    KT_MPI(MPI_Session_attach_buffer_c(s, MPI_BUFFER_AUTOMATIC, 0));
    ring_bsend(sc, BIG, 37);
    KT_MPI(MPI_Session_detach_buffer_c(s, &p, &nc));
    KT_CHECK(p == MPI_BUFFER_AUTOMATIC, "MPI_Session_detach_buffer_c of MPI_BUFFER_AUTOMATIC gave %p", p);
    KT_MPI(MPI_Session_attach_buffer_c(s, sbuf, (MPI_Count)bsz));
    KT_MPI(MPI_Session_detach_buffer_c(s, &p, &nc));
    KT_CHECK(p == sbuf && nc == bsz, "MPI_Session_detach_buffer_c gave %p/%lld", p, (long long)nc);
    KT_ERRCLASS(MPI_Session_attach_buffer(MPI_SESSION_NULL, sbuf, bsz), MPI_ERR_SESSION);
    KT_ERRCLASS(MPI_Session_attach_buffer(s, sbuf, -1), MPI_ERR_ARG);
    KT_MPI(MPI_Comm_free(&sd));
    KT_MPI(MPI_Comm_free(&sc));
    KT_MPI(MPI_Session_finalize(&s));

    KT_MPI(MPI_Buffer_detach(&p, &n));
    KT_CHECK(p == pbuf && n == small, "process buffer %p/%d", p, n);
    free(pbuf); free(cbuf); free(sbuf); free(data); free(got);
    KT_MPI(MPI_Finalize());
    return 0;
}
