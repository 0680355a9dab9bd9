/* The program of tests/scripts/ckpt_ofi_ask.sh: a rendezvous send over
 * p2p/ofi whose FIN was lost at a checkpoint's cut is finished by the ASK
 * after the checkpoint (components/p2p/ofi/p2p_ofi_ckpt.c).  Run on 2
 * ranks with p2p_ofi_drop_fin=1: rank 1 reads the first rendezvous and does
 * not send its FIN, as if the FIN had been lost with the endpoints.
 *  - rank 0 sends A (tag 1, its FIN dropped) and B (tag 2, an ordinary
 *    rendezvous); rank 1 receives both and checks every byte;
 *  - B's send completes; A's does not for HOLD seconds (default 2: nothing
 *    but an ASK can bring its FIN now);
 *  - rank 0 prints "waiting for a checkpoint" on stderr and tests A (at
 *    most 60 s); the script then asks mpiexec for a checkpoint, after which
 *    rank 0 asks rank 1 about A, and rank 1 answers with A's FIN;
 *  - once A's send is complete, a request completed once is no longer
 *    active: MPI_Test on it gives MPI_REQUEST_NULL and an empty status;
 *  - A's buffer is sent again (tag 5, new bytes), received and checked: the
 *    second FIN of an ASK, were one to come, must complete nothing else.
 * Rank 0 prints "result ok" at the end.  Usage: ckpt_ofi_ask [HOLD] */
#include "kt.h"
#include <unistd.h>

#define LEN (1u << 20)                       /* rendezvous over ofi (eager limit 64 KiB) */

static unsigned char pat(size_t i, int salt) { return (unsigned char)(i * 7 + (i >> 10) + salt * 29); }

static void fill(unsigned char *b, int salt)
{
    for (size_t i = 0; i < LEN; i++) b[i] = pat(i, salt);
}

static void check(const unsigned char *b, int salt, const char *what)
{
    for (size_t i = 0; i < LEN; i++)
        if (b[i] != pat(i, salt)) KT_FAIL("%s: byte %zu is %d, expected %d", what, i, b[i], pat(i, salt));
}

static void recv_check(unsigned char *b, int tag, int salt, const char *what)
{
    MPI_Status st;
    int n = -1;
    memset(b, 0, LEN);
    KT_MPI(MPI_Recv(b, LEN, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_BYTE, &n);
    KT_EQ_INT(n, LEN);
    check(b, salt, what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "run on 2 ranks");
    double hold = argc > 1 ? atof(argv[1]) : 2.0;
    unsigned char *a = malloc(LEN), *b = malloc(LEN);
    KT_CHECK(a && b);
    int one = 1;
    if (rank == 1) {
        recv_check(a, 1, 1, "A");
        recv_check(b, 2, 2, "B");
        KT_MPI(MPI_Send(&one, 1, MPI_INT, 0, 3, MPI_COMM_WORLD));     /* both in */
        recv_check(a, 5, 5, "A again");
        KT_MPI(MPI_Recv(&one, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        MPI_Request qa, qb;
        int flag = 0;
        fill(a, 1);
        fill(b, 2);
        KT_MPI(MPI_Isend(a, LEN, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &qa));
        KT_MPI(MPI_Isend(b, LEN, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &qb));
        KT_MPI(MPI_Wait(&qb, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Recv(&one, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double t0 = kt_now();
        while (kt_now() - t0 < hold) {
            KT_MPI(MPI_Test(&qa, &flag, MPI_STATUS_IGNORE));
            KT_CHECK(!flag, "A's send completed before any checkpoint: its FIN was not dropped "
                            "(p2p_ofi_drop_fin=1 not in effect?)");
            usleep(1000);
        }
        fprintf(stderr, "waiting for a checkpoint\n");
        fflush(stderr);
        t0 = kt_now();
        while (!flag && kt_now() - t0 < 60.0) {
            KT_MPI(MPI_Test(&qa, &flag, MPI_STATUS_IGNORE));
            if (!flag) usleep(1000);
        }
        KT_CHECK(flag, "A's send not complete 60 s after asking for a checkpoint: its FIN never came "
                       "(no ASK, or the ASK not answered)");
        fprintf(stderr, "A's send completed %.2f s after the wait began\n", kt_now() - t0);
        KT_CHECK(qa == MPI_REQUEST_NULL);
        MPI_Status st;
        st.MPI_SOURCE = st.MPI_TAG = 12345;
        KT_MPI(MPI_Test(&qa, &flag, &st));           /* an inactive handle: flag, an empty status */
        KT_CHECK(flag && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG);
        fill(a, 5);
        KT_MPI(MPI_Send(a, LEN, MPI_BYTE, 1, 5, MPI_COMM_WORLD));
        KT_MPI(MPI_Send(&one, 1, MPI_INT, 1, 4, MPI_COMM_WORLD));
    }
    free(a);
    free(b);
    MPI_Finalize();
    if (rank == 0) printf("result ok\n");
    return 0;
}
