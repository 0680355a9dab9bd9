/* conf_buffers_recover: no failed or unusual sequence leaves the process's
 * buffer for buffered sends in a stale state, where MPI_Buffer_attach
 * answers "a buffer is already attached" (issue 16 item 5).  Each sequence
 * is followed by an attach that must succeed and a buffered send that must
 * arrive: failed attaches (negative size, NULL buffer), a second attach, a
 * buffered send that does not fit or finds no buffer, a detach whose int
 * size cannot hold the buffer (MPI_ERR_VALUE_TOO_LARGE: still attached,
 * MPI_Buffer_detach_c gets it), MPI_BUFFER_AUTOMATIC, a detach while a
 * message waits for its receiver.  Last, MPI_Finalize with a buffer still
 * attached detaches it (its messages delivered) so that a program that
 * goes on in the Sessions model attaches a new one (on 38cad1c: "a buffer
 * is already attached"), which a session's communicator then uses.
 * Ring over 2 or more ranks. */
#include "kt.h"
#include <limits.h>
#include <unistd.h>

#define BIG (1 << 20)

static int rank, size, right, left;
static char *data, *got;

/* A buffered send of n bytes to the right on comm, received from the left. */
static void ring(MPI_Comm comm, int n, int tag)
{
    MPI_Request rq;
    KT_MPI(MPI_Irecv(got, n, MPI_BYTE, left, tag, comm, &rq));
    for (int i = 0; i < n; i++) data[i] = (char)(rank + tag + i);
    KT_MPI(MPI_Bsend(data, n, MPI_BYTE, right, tag, comm));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < n; i++)
        if (got[i] != (char)(left + tag + i)) KT_FAIL("message of tag %d: byte %d wrong", tag, i);
}

/* Attach buf (bsz bytes), send a message through it, detach it again. */
static void usable(char *buf, int bsz, int tag, const char *after)
{
    int rc = MPI_Buffer_attach(buf, bsz);
    if (rc != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int l = 0;
        MPI_Error_string(rc, s, &l);
        KT_FAIL("after %s, MPI_Buffer_attach failed: %s", after, s);
    }
    ring(MPI_COMM_WORLD, 1000, tag);
    void *p;
    int n;
    KT_MPI(MPI_Buffer_detach(&p, &n));
    KT_CHECK(p == buf && n == bsz, "after %s: detach gave %p/%d, attached %p/%d", after, p, n, (void *)buf, bsz);
}

int main(int argc, char **argv)
{
    MPI_Session s;
    /* a session first: the process goes on in the Sessions model after MPI_Finalize */
    KT_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
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
    int bsz = BIG + MPI_BSEND_OVERHEAD + 8192;
    char *b1 = malloc((size_t)bsz), *b2 = malloc((size_t)bsz);
    void *p;
    int n;
    MPI_Count nc;

    /* failed attaches change nothing */
    KT_ERRCLASS(MPI_Buffer_attach(b1, -1), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Buffer_attach(NULL, 100), MPI_ERR_BUFFER);
    KT_ERRCLASS(MPI_Buffer_attach_c(b1, -1), MPI_ERR_ARG);
    usable(b1, bsz, 1, "failed attaches");
    /* a second attach fails, the first buffer stays in use */
    KT_MPI(MPI_Buffer_attach(b1, bsz));
    KT_ERRCLASS(MPI_Buffer_attach(b2, bsz), MPI_ERR_BUFFER);
    KT_ERRCLASS(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0), MPI_ERR_BUFFER);
    ring(MPI_COMM_WORLD, 1000, 2);
    KT_MPI(MPI_Buffer_detach(&p, &n));
    KT_CHECK(p == b1 && n == bsz, "the first buffer stays attached (%p/%d)", p, n);
    usable(b2, bsz, 3, "a second attach");
    /* buffered sends that fail */
    KT_ERRCLASS(MPI_Bsend(data, 10, MPI_BYTE, right, 4, MPI_COMM_WORLD), MPI_ERR_BUFFER);   /* no buffer */
    KT_MPI(MPI_Buffer_attach(b1, 2000));
    KT_ERRCLASS(MPI_Bsend(data, 5000, MPI_BYTE, right, 5, MPI_COMM_WORLD), MPI_ERR_BUFFER); /* too big */
    ring(MPI_COMM_WORLD, 1000, 6);                       /* the buffer still holds what fits */
    KT_MPI(MPI_Buffer_detach(&p, &n));
    KT_CHECK(p == b1 && n == 2000, "detach after a failed send gave %p/%d", p, n);
    usable(b2, bsz, 7, "buffered sends that failed");
    /* a buffer larger than an int: the int detach fails and keeps it attached */
    MPI_Count huge = (MPI_Count)INT_MAX + 4096;
    KT_MPI(MPI_Buffer_attach_c(b1, huge));               /* (never written: no message sent) */
    KT_ERRCLASS(MPI_Buffer_detach(&p, &n), MPI_ERR_VALUE_TOO_LARGE);
    KT_ERRCLASS(MPI_Buffer_attach(b2, bsz), MPI_ERR_BUFFER);
    KT_MPI(MPI_Buffer_detach_c(&p, &nc));
    KT_CHECK(p == b1 && nc == huge, "MPI_Buffer_detach_c gave %p/%lld", p, (long long)nc);
    usable(b2, bsz, 8, "a detach with MPI_ERR_VALUE_TOO_LARGE");
    /* MPI_BUFFER_AUTOMATIC */
    KT_MPI(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0));
    KT_ERRCLASS(MPI_Buffer_attach(b1, bsz), MPI_ERR_BUFFER);
    ring(MPI_COMM_WORLD, BIG, 9);
    KT_MPI(MPI_Buffer_detach(&p, &n));
    KT_CHECK(p == MPI_BUFFER_AUTOMATIC, "detach of MPI_BUFFER_AUTOMATIC gave %p", p);
    usable(b1, bsz, 10, "MPI_BUFFER_AUTOMATIC");
    /* detach while a message waits for its receiver */
    KT_MPI(MPI_Buffer_attach(b1, bsz));
    if (rank == 0) {
        for (int i = 0; i < BIG; i++) data[i] = (char)(i * 3);
        KT_MPI(MPI_Bsend(data, BIG, MPI_BYTE, 1, 11, MPI_COMM_WORLD));
        KT_MPI(MPI_Buffer_detach(&p, &n));               /* returns once rank 1 took it */
        memset(b1, 0x77, (size_t)bsz);
    } else {
        if (rank == 1) {
            usleep(100000);
            KT_MPI(MPI_Recv(got, BIG, MPI_BYTE, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = 0; i < BIG; i++)
                if (got[i] != (char)(i * 3)) KT_FAIL("message pending at detach: byte %d wrong", i);
        }
        KT_MPI(MPI_Buffer_detach(&p, &n));
    }
    usable(b2, bsz, 12, "a detach with a message pending");

    /* MPI_Finalize with a buffer attached and a message in it */
    KT_MPI(MPI_Buffer_attach(b1, bsz));
    ring(MPI_COMM_WORLD, BIG, 13);
    KT_MPI(MPI_Finalize());
    /* the Sessions model goes on: a new process buffer */
    int rc = MPI_Buffer_attach(b2, bsz);
    if (rc != MPI_SUCCESS) {
        char str[MPI_MAX_ERROR_STRING];
        int l = 0;
        MPI_Error_string(rc, str, &l);
        KT_FAIL("MPI_Buffer_attach after MPI_Finalize (in the Sessions model): %s", str);
    }
    MPI_Group g;
    MPI_Comm sc;
    KT_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    KT_MPI(MPI_Comm_create_from_group(g, "conf_buffers_recover", MPI_INFO_NULL, MPI_ERRORS_RETURN, &sc));
    KT_MPI(MPI_Group_free(&g));
    ring(sc, 1000, 14);                                  /* the new process buffer */
    KT_MPI(MPI_Buffer_detach(&p, &n));
    KT_CHECK(p == b2 && n == bsz, "after MPI_Finalize: detach gave %p/%d", p, n);
    KT_MPI(MPI_Comm_free(&sc));
    KT_MPI(MPI_Session_finalize(&s));
    free(b1); free(b2); free(data); free(got);
    return 0;
}
