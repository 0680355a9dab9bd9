/* conf_bad_args: bad arguments that used to kill the rank with SIGSEGV
 * (issue 16 item 16) return the right error class through the error handler,
 * with a message naming the argument: a NULL request pointer to the
 * non-blocking, persistent and completion calls (MPI_ERR_REQUEST), and NULL
 * buffers with data in the rooted and all-to-all collectives (the root's
 * receive buffer of Gather and Reduce, its send buffer of Scatter, Allgather
 * and Alltoall; MPI_ERR_BUFFER), blocking, non-blocking and persistent.  One
 * process: the collectives complete or fail on every rank alike.  The calls
 * that stay legal (MPI_IN_PLACE, zero counts with NULL) still succeed. */
#include "kt.h"

static void expect(const char *what, int rc, int cls, const char *arg)
{
    char s[MPI_MAX_ERROR_STRING];
    int l = 0, c = -1;
    KT_CHECK(rc != MPI_SUCCESS, "%s succeeded", what);
    MPI_Error_class(rc, &c);
    MPI_Error_string(rc, s, &l);
    KT_CHECK(c == cls, "%s: class %d (%s), expected %d", what, c, s, cls);
    KT_CHECK(strstr(s, arg) != NULL, "%s: the message '%s' does not name %s", what, s, arg);
}

int main(int argc, char **argv)
{
    int x = 1, y[4] = { 0 };
    MPI_Request r;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm c = MPI_COMM_WORLD;
    expect("MPI_Isend", MPI_Isend(&x, 1, MPI_INT, 0, 0, c, NULL), MPI_ERR_REQUEST, "request");
    expect("MPI_Irecv", MPI_Irecv(&x, 1, MPI_INT, 0, 0, c, NULL), MPI_ERR_REQUEST, "request");
    expect("MPI_Issend", MPI_Issend(&x, 1, MPI_INT, 0, 0, c, NULL), MPI_ERR_REQUEST, "request");
    expect("MPI_Send_init", MPI_Send_init(&x, 1, MPI_INT, 0, 0, c, NULL), MPI_ERR_REQUEST, "request");
    expect("MPI_Recv_init", MPI_Recv_init(&x, 1, MPI_INT, 0, 0, c, NULL), MPI_ERR_REQUEST, "request");
    expect("MPI_Ibarrier", MPI_Ibarrier(c, NULL), MPI_ERR_REQUEST, "request");
    expect("MPI_Iallreduce", MPI_Iallreduce(&x, y, 1, MPI_INT, MPI_SUM, c, NULL), MPI_ERR_REQUEST, "request");
    expect("MPI_Wait", MPI_Wait(NULL, MPI_STATUS_IGNORE), MPI_ERR_REQUEST, "request");
    expect("MPI_Start", MPI_Start(NULL), MPI_ERR_REQUEST, "request");
    expect("MPI_Request_free", MPI_Request_free(NULL), MPI_ERR_REQUEST, "request");

    expect("MPI_Gather root recvbuf", MPI_Gather(&x, 1, MPI_INT, NULL, 1, MPI_INT, 0, c), MPI_ERR_BUFFER, "recvbuf");
    expect("MPI_Igather root recvbuf", MPI_Igather(&x, 1, MPI_INT, NULL, 1, MPI_INT, 0, c, &r), MPI_ERR_BUFFER,
           "recvbuf");
    expect("MPI_Gather sendbuf", MPI_Gather(NULL, 1, MPI_INT, y, 1, MPI_INT, 0, c), MPI_ERR_BUFFER, "sendbuf");
    expect("MPI_Reduce root recvbuf", MPI_Reduce(&x, NULL, 1, MPI_INT, MPI_SUM, 0, c), MPI_ERR_BUFFER, "recvbuf");
    expect("MPI_Reduce_init root recvbuf", MPI_Reduce_init(&x, NULL, 1, MPI_INT, MPI_SUM, 0, c, MPI_INFO_NULL, &r),
           MPI_ERR_BUFFER, "recvbuf");
    expect("MPI_Scatter root sendbuf", MPI_Scatter(NULL, 1, MPI_INT, y, 1, MPI_INT, 0, c), MPI_ERR_BUFFER, "sendbuf");
    expect("MPI_Scatter recvbuf", MPI_Scatter(&x, 1, MPI_INT, NULL, 1, MPI_INT, 0, c), MPI_ERR_BUFFER, "recvbuf");
    expect("MPI_Allgather recvbuf", MPI_Allgather(&x, 1, MPI_INT, NULL, 1, MPI_INT, c), MPI_ERR_BUFFER, "recvbuf");
    expect("MPI_Allgather sendbuf", MPI_Allgather(NULL, 1, MPI_INT, y, 1, MPI_INT, c), MPI_ERR_BUFFER, "sendbuf");
    expect("MPI_Alltoall sendbuf", MPI_Alltoall(NULL, 1, MPI_INT, y, 1, MPI_INT, c), MPI_ERR_BUFFER, "sendbuf");
    expect("MPI_Alltoall recvbuf", MPI_Alltoall(&x, 1, MPI_INT, NULL, 1, MPI_INT, c), MPI_ERR_BUFFER, "recvbuf");
    expect("MPI_Ialltoall recvbuf", MPI_Ialltoall(&x, 1, MPI_INT, NULL, 1, MPI_INT, c, &r), MPI_ERR_BUFFER,
           "recvbuf");

    /* still legal */
    KT_MPI(MPI_Gather(MPI_IN_PLACE, 1, MPI_INT, y, 1, MPI_INT, 0, c));
    KT_MPI(MPI_Gather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, 0, c));
    KT_MPI(MPI_Reduce(MPI_IN_PLACE, y, 1, MPI_INT, MPI_SUM, 0, c));
    KT_MPI(MPI_Scatter(y, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, 0, c));
    KT_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_INT, y, 1, MPI_INT, c));
    KT_MPI(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_INT, y, 1, MPI_INT, c));
    KT_MPI(MPI_Finalize());
    return 0;
}
