/* conf_status_error: single-completion calls leave the MPI_ERROR field of
 * the status alone (MPI 4.1 sec. 3.2.5: "This field may be updated only by
 * the functions in Section 3.7.5 which return multiple statuses"; issue 16
 * item 3).  Each call below gets a status whose MPI_ERROR holds a marker and
 * must give it back unchanged: receives, waits and tests of one request
 * (active, completed, null, MPI_PROC_NULL), probes and matched probes, the
 * receives of matched messages, Sendrecv, Waitany / Testany and
 * Request_get_status.  2 ranks: rank 0 sends, rank 1 receives. */
#include "kt.h"

#define MARK 987654

static void check(MPI_Status *st, const char *what)
{
    KT_CHECK(st->MPI_ERROR == MARK, "%s changed status.MPI_ERROR to %d", what, st->MPI_ERROR);
    st->MPI_ERROR = MARK;
}

int main(int argc, char **argv)
{
    int rank, size, x = 0, y = 0, flag, idx;
    MPI_Status st;
    MPI_Request req;
    MPI_Message msg;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "needs 2 ranks");
    int peer = 1 - rank;
    st.MPI_ERROR = MARK;

    if (rank == 0) {
        for (int t = 0; t < 8; t++) KT_MPI(MPI_Send(&t, 1, MPI_INT, peer, t, MPI_COMM_WORLD));
    } else {
        KT_MPI(MPI_Recv(&x, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, &st));
        check(&st, "MPI_Recv");
        KT_MPI(MPI_Probe(peer, 1, MPI_COMM_WORLD, &st));
        check(&st, "MPI_Probe");
        do { KT_MPI(MPI_Iprobe(peer, 1, MPI_COMM_WORLD, &flag, &st)); } while (!flag);
        check(&st, "MPI_Iprobe");
        KT_MPI(MPI_Irecv(&x, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &req));
        KT_MPI(MPI_Wait(&req, &st));
        check(&st, "MPI_Wait");
        KT_MPI(MPI_Mprobe(peer, 2, MPI_COMM_WORLD, &msg, &st));
        check(&st, "MPI_Mprobe");
        KT_MPI(MPI_Mrecv(&x, 1, MPI_INT, &msg, &st));
        check(&st, "MPI_Mrecv");
        do { KT_MPI(MPI_Improbe(peer, 3, MPI_COMM_WORLD, &flag, &msg, &st)); } while (!flag);
        check(&st, "MPI_Improbe");
        KT_MPI(MPI_Imrecv(&x, 1, MPI_INT, &msg, &req));
        do { KT_MPI(MPI_Test(&req, &flag, &st)); } while (!flag);
        check(&st, "MPI_Test");
        KT_MPI(MPI_Irecv(&x, 1, MPI_INT, peer, 4, MPI_COMM_WORLD, &req));
        KT_MPI(MPI_Waitany(1, &req, &idx, &st));
        check(&st, "MPI_Waitany");
        KT_MPI(MPI_Irecv(&x, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &req));
        do { KT_MPI(MPI_Request_get_status(req, &flag, &st)); } while (!flag);
        check(&st, "MPI_Request_get_status");
        KT_MPI(MPI_Request_free(&req));
        KT_MPI(MPI_Irecv(&x, 1, MPI_INT, peer, 6, MPI_COMM_WORLD, &req));
        do { KT_MPI(MPI_Testany(1, &req, &idx, &flag, &st)); } while (!flag);
        check(&st, "MPI_Testany");
        KT_MPI(MPI_Recv(&x, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, &st));
        check(&st, "MPI_Recv (last)");
    }
    /* null requests and MPI_PROC_NULL: the empty status, MPI_ERROR untouched */
    req = MPI_REQUEST_NULL;
    KT_MPI(MPI_Wait(&req, &st));
    check(&st, "MPI_Wait(MPI_REQUEST_NULL)");
    KT_MPI(MPI_Test(&req, &flag, &st));
    check(&st, "MPI_Test(MPI_REQUEST_NULL)");
    KT_MPI(MPI_Waitany(1, &req, &idx, &st));
    check(&st, "MPI_Waitany(MPI_REQUEST_NULL)");
    KT_MPI(MPI_Testany(1, &req, &idx, &flag, &st));
    check(&st, "MPI_Testany(MPI_REQUEST_NULL)");
    KT_MPI(MPI_Request_get_status(req, &flag, &st));
    check(&st, "MPI_Request_get_status(MPI_REQUEST_NULL)");
    KT_MPI(MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    check(&st, "MPI_Recv(MPI_PROC_NULL)");
    KT_CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "MPI_Recv(MPI_PROC_NULL): source %d", st.MPI_SOURCE);
    KT_MPI(MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    check(&st, "MPI_Probe(MPI_PROC_NULL)");
    KT_MPI(MPI_Iprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &st));
    check(&st, "MPI_Iprobe(MPI_PROC_NULL)");
    KT_MPI(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st));
    check(&st, "MPI_Mprobe(MPI_PROC_NULL)");
    KT_MPI(MPI_Mrecv(&x, 1, MPI_INT, &msg, &st));
    check(&st, "MPI_Mrecv(MPI_MESSAGE_NO_PROC)");
    KT_MPI(MPI_Sendrecv(&y, 1, MPI_INT, peer, 9, &x, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, &st));
    check(&st, "MPI_Sendrecv");
    KT_MPI(MPI_Finalize());
    return 0;
}
