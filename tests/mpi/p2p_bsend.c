/* Buffered sends: attach / detach, MPI_ERR_BUFFER when the buffer is too
 * small, detach waits until buffered messages went out, Ibsend, Bsend_init. */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size, sz;
    void *p;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int n = 50000;                                   /* ints: rendezvous-sized */
    int *data = malloc(n * sizeof(int)), *r = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) data[i] = rank * 1000003 + i;
    /* no buffer attached */
    KT_ERRCLASS(MPI_Bsend(data, 1, MPI_INT, right, 1, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    /* too small: one message of 100 ints needs 400 + MPI_BSEND_OVERHEAD */
    int small = 100 * sizeof(int) + MPI_BSEND_OVERHEAD - 1;
    char *sbuf = malloc(small);
    KT_MPI(MPI_Buffer_attach(sbuf, small));
    KT_ERRCLASS(MPI_Bsend(data, 100, MPI_INT, right, 1, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    KT_MPI(MPI_Bsend(data, 10, MPI_INT, right, 2, MPI_COMM_WORLD));   /* fits */
    KT_MPI(MPI_Recv(r, 10, MPI_INT, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 10; i++) KT_EQ_INT(r[i], left * 1000003 + i);
    KT_MPI(MPI_Buffer_detach(&p, &sz));
    KT_CHECK(p == sbuf, "detach returns the buffer");
    KT_EQ_INT(sz, small);
    free(sbuf);
    /* room for 3 large messages: Bsend returns before the receiver posts */
    /* room for 3 large messages and a few small ones, not for a 4th large one */
    int bsz = 3 * (n * (int)sizeof(int) + MPI_BSEND_OVERHEAD) + 8 * (64 + MPI_BSEND_OVERHEAD);
    char *bb = malloc(bsz);
    KT_MPI(MPI_Buffer_attach(bb, bsz));
    for (int m = 0; m < 3; m++) {
        for (int i = 0; i < n; i++) data[i] = rank * 1000 + m + i;
        KT_MPI(MPI_Bsend(data, n, MPI_INT, right, 10 + m, MPI_COMM_WORLD));
    }
    for (int i = 0; i < n; i++) data[i] = -7;        /* the copies went out, not this */
    /* a 4th does not fit while the 3 are pending (nobody has received) */
    KT_ERRCLASS(MPI_Bsend(data, n, MPI_INT, right, 13, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int m = 2; m >= 0; m--) {
        KT_MPI(MPI_Recv(r, n, MPI_INT, left, 10 + m, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < n; i += 997) KT_EQ_INT(r[i], left * 1000 + m + i);
    }
    /* Ibsend completes at once; Bsend_init restarted */
    MPI_Request rq;
    for (int i = 0; i < 10; i++) data[i] = rank + i;
    KT_MPI(MPI_Ibsend(data, 10, MPI_INT, right, 20, MPI_COMM_WORLD, &rq));
    int flag = 0;
    KT_MPI(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
    KT_CHECK(flag, "Ibsend complete at once");
    KT_MPI(MPI_Bsend_init(data, 10, MPI_INT, right, 21, MPI_COMM_WORLD, &rq));
    for (int it = 0; it < 50; it++) {
        data[0] = it;
        KT_MPI(MPI_Start(&rq));
        KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Recv(r, 10, MPI_INT, left, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_EQ_INT(r[0], it);
    }
    KT_MPI(MPI_Request_free(&rq));
    KT_MPI(MPI_Recv(r, 10, MPI_INT, left, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_EQ_INT(r[9], left + 9);
    /* detach waits for pending buffered messages (receiver posts later) */
    KT_MPI(MPI_Bsend(data, n, MPI_INT, right, 30, MPI_COMM_WORLD));
    if (rank % 2 == 0) {
        KT_MPI(MPI_Buffer_detach(&p, &sz));
        KT_MPI(MPI_Recv(r, n, MPI_INT, left, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        KT_MPI(MPI_Recv(r, n, MPI_INT, left, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Buffer_detach(&p, &sz));
    }
    KT_CHECK(p == bb && sz == bsz, "detached");
    free(bb);
    free(data); free(r);
    MPI_Finalize();
    return 0;
}
