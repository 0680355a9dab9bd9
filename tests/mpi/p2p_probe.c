/* Probe, Iprobe, Mprobe, Improbe, Mrecv, Imrecv with counts; PROC_NULL. */
#include "kt.h"

static void check_data(const double *b, int n, int src)
{
    for (int i = 0; i < n; i++)
        if (b[i] != src * 1e6 + i) KT_FAIL("element %d from %d is %g", i, src, b[i]);
}

int main(int argc, char **argv)
{
    int rank, size, flag, n;
    MPI_Status st;
    MPI_Message msg;
    MPI_Request rq;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks");
    const int lens[3] = { 0, 1000, 200000 };      /* doubles: empty, eager, rendezvous */
    double *buf = malloc(200000 * sizeof(double));
    if (rank != 0) {
        for (int i = 0; i < 200000; i++) buf[i] = rank * 1e6 + i;
        MPI_Request sr[12];
        for (int k = 0; k < 3; k++)
            for (int t = 0; t < 4; t++)
                KT_MPI(MPI_Isend(buf, lens[k], MPI_DOUBLE, 0, 10 * k + t, MPI_COMM_WORLD, &sr[4 * k + t]));
        KT_MPI(MPI_Waitall(12, sr, MPI_STATUSES_IGNORE));
    } else {
        for (int s = 1; s < size; s++) {
            for (int k = 0; k < 3; k++) {
                /* Probe, then Recv */
                KT_MPI(MPI_Probe(s, 10 * k, MPI_COMM_WORLD, &st));
                KT_EQ_INT(st.MPI_SOURCE, s);
                KT_EQ_INT(st.MPI_TAG, 10 * k);
                MPI_Get_count(&st, MPI_DOUBLE, &n);
                KT_EQ_INT(n, lens[k]);
                KT_MPI(MPI_Recv(buf, n, MPI_DOUBLE, s, 10 * k, MPI_COMM_WORLD, &st));
                check_data(buf, n, s);
                /* Iprobe until it is there */
                do KT_MPI(MPI_Iprobe(s, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st)); while (!flag);
                KT_EQ_INT(st.MPI_TAG, 10 * k + 1);
                MPI_Get_count(&st, MPI_DOUBLE, &n);
                KT_EQ_INT(n, lens[k]);
                KT_MPI(MPI_Recv(buf, n, MPI_DOUBLE, s, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                KT_EQ_INT(st.MPI_TAG, 10 * k + 1);
                check_data(buf, n, s);
                /* Mprobe: the message is no longer visible to probes / receives */
                KT_MPI(MPI_Mprobe(s, 10 * k + 2, MPI_COMM_WORLD, &msg, &st));
                MPI_Get_count(&st, MPI_DOUBLE, &n);
                KT_EQ_INT(n, lens[k]);
                KT_CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC, "a message");
                KT_MPI(MPI_Iprobe(s, 10 * k + 2, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
                KT_CHECK(!flag, "mprobed message still visible");
                /* Improbe the next one before receiving the first */
                MPI_Message msg2;
                do KT_MPI(MPI_Improbe(s, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg2, &st)); while (!flag);
                KT_EQ_INT(st.MPI_TAG, 10 * k + 3);
                for (int i = 0; i < lens[k]; i++) buf[i] = -1;
                KT_MPI(MPI_Mrecv(buf, lens[k], MPI_DOUBLE, &msg, &st));
                KT_CHECK(msg == MPI_MESSAGE_NULL, "message consumed");
                KT_EQ_INT(st.MPI_TAG, 10 * k + 2);
                MPI_Get_count(&st, MPI_DOUBLE, &n);
                KT_EQ_INT(n, lens[k]);
                check_data(buf, n, s);
                KT_MPI(MPI_Imrecv(buf, lens[k], MPI_DOUBLE, &msg2, &rq));
                KT_CHECK(msg2 == MPI_MESSAGE_NULL, "message consumed");
                KT_MPI(MPI_Wait(&rq, &st));
                KT_EQ_INT(st.MPI_TAG, 10 * k + 3);
                MPI_Get_count(&st, MPI_DOUBLE, &n);
                KT_EQ_INT(n, lens[k]);
                check_data(buf, n, s);
            }
        }
        KT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        KT_CHECK(!flag, "nothing left");
    }
    /* MPI_PROC_NULL */
    KT_MPI(MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    KT_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
    KT_EQ_INT(st.MPI_TAG, MPI_ANY_TAG);
    MPI_Get_count(&st, MPI_INT, &n);
    KT_EQ_INT(n, 0);
    KT_MPI(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st));
    KT_CHECK(msg == MPI_MESSAGE_NO_PROC, "MPI_MESSAGE_NO_PROC");
    KT_MPI(MPI_Mrecv(buf, 10, MPI_DOUBLE, &msg, &st));
    KT_CHECK(msg == MPI_MESSAGE_NULL, "consumed");
    KT_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
    KT_MPI(MPI_Recv(buf, 10, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    KT_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
    KT_EQ_INT(st.MPI_TAG, MPI_ANY_TAG);
    MPI_Get_count(&st, MPI_DOUBLE, &n);
    KT_EQ_INT(n, 0);
    KT_MPI(MPI_Send(buf, 10, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    free(buf);
    MPI_Finalize();
    return 0;
}
