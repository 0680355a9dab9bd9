/* conf_request_status_multi: MPI 4.1 MPI_Request_get_status_all / _any /
 * _some (issue 16 item 1; MPI 4.1 sec. 3.7.6): as MPI_Testall / _any /
 * _some, but no request is freed or made inactive, and the statuses follow
 * the rules of the multiple completion calls (MPI_ERROR set in each status
 * of _all and _some, MPI_ERR_IN_STATUS when one failed; _any returns the
 * request's error itself).  Missing from libmpi before (the program did not
 * link).  Rank 1 sends only when rank 0 says so, so what is complete is
 * known at each step.  2 ranks. */
#include "kt.h"

static void go(int tag) { int z = 0; MPI_Send(&z, 1, MPI_INT, 1, 100 + tag, MPI_COMM_WORLD); }
static void await(int tag) { int z; MPI_Recv(&z, 1, MPI_INT, 0, 100 + tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }

static void spin_any(int n, MPI_Request *rq, int *idx, MPI_Status *st)
{
    int flag = 0;
    while (!flag) KT_MPI(MPI_Request_get_status_any(n, rq, idx, &flag, st));
}

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "needs 2 ranks");
    int data[4] = { 1, 2, 3, 4 };

    if (rank == 1) {
        await(1);
        KT_MPI(MPI_Send(data, 1, MPI_INT, 0, 1, MPI_COMM_WORLD));
        await(2);
        KT_MPI(MPI_Send(data, 2, MPI_INT, 0, 2, MPI_COMM_WORLD));
        KT_MPI(MPI_Send(data, 3, MPI_INT, 0, 3, MPI_COMM_WORLD));
        await(3);
        KT_MPI(MPI_Send(data, 4, MPI_INT, 0, 4, MPI_COMM_WORLD));     /* persistent receive */
        await(4);
        KT_MPI(MPI_Send(data, 4, MPI_INT, 0, 5, MPI_COMM_WORLD));     /* truncated */
        KT_MPI(MPI_Send(data, 1, MPI_INT, 0, 6, MPI_COMM_WORLD));
        KT_MPI(MPI_Finalize());
        return 0;
    }

    int b1[4], b2[4], b3[4];
    MPI_Request rq[4], keep[4];
    MPI_Status st[4];
    int flag, idx, out, ind[4];
    KT_MPI(MPI_Irecv(b1, 4, MPI_INT, 1, 1, MPI_COMM_WORLD, &rq[0]));
    rq[1] = MPI_REQUEST_NULL;
    KT_MPI(MPI_Irecv(b2, 4, MPI_INT, 1, 2, MPI_COMM_WORLD, &rq[2]));
    KT_MPI(MPI_Irecv(b3, 4, MPI_INT, 1, 3, MPI_COMM_WORLD, &rq[3]));
    memcpy(keep, rq, sizeof rq);

    /* nothing complete yet */
    KT_MPI(MPI_Request_get_status_all(4, rq, &flag, st));
    KT_EQ_INT(flag, 0);
    KT_MPI(MPI_Request_get_status_any(4, rq, &idx, &flag, &st[0]));
    KT_EQ_INT(flag, 0);
    KT_EQ_INT(idx, MPI_UNDEFINED);
    KT_MPI(MPI_Request_get_status_some(4, rq, &out, ind, st));
    KT_EQ_INT(out, 0);

    /* one complete: reported, and reported again (the request stays) */
    go(1);
    spin_any(4, rq, &idx, &st[0]);
    KT_EQ_INT(idx, 0);
    KT_EQ_INT(st[0].MPI_SOURCE, 1);
    KT_EQ_INT(st[0].MPI_TAG, 1);
    int n;
    KT_MPI(MPI_Get_count(&st[0], MPI_INT, &n));
    KT_EQ_INT(n, 1);
    KT_CHECK(!memcmp(rq, keep, sizeof rq), "MPI_Request_get_status_any changed the array of requests");
    KT_MPI(MPI_Request_get_status_any(4, rq, &idx, &flag, MPI_STATUS_IGNORE));
    KT_EQ_INT(flag, 1);
    KT_EQ_INT(idx, 0);
    KT_MPI(MPI_Request_get_status_some(4, rq, &out, ind, st));
    KT_EQ_INT(out, 1);
    KT_EQ_INT(ind[0], 0);
    KT_EQ_INT(st[0].MPI_TAG, 1);
    KT_EQ_INT(st[0].MPI_ERROR, MPI_SUCCESS);
    KT_MPI(MPI_Request_get_status_all(4, rq, &flag, st));
    KT_EQ_INT(flag, 0);
    KT_CHECK(!memcmp(rq, keep, sizeof rq), "a call changed the array of requests");

    /* all complete */
    go(2);
    flag = 0;
    while (!flag) KT_MPI(MPI_Request_get_status_all(4, rq, &flag, st));
    KT_CHECK(!memcmp(rq, keep, sizeof rq), "MPI_Request_get_status_all changed the array of requests");
    KT_EQ_INT(st[0].MPI_TAG, 1);
    KT_EQ_INT(st[1].MPI_TAG, MPI_ANY_TAG);              /* the null request: the empty status */
    KT_EQ_INT(st[1].MPI_SOURCE, MPI_ANY_SOURCE);
    KT_EQ_INT(st[2].MPI_TAG, 2);
    KT_EQ_INT(st[3].MPI_TAG, 3);
    for (int i = 0; i < 4; i++) KT_EQ_INT(st[i].MPI_ERROR, MPI_SUCCESS);
    KT_MPI(MPI_Get_count(&st[3], MPI_INT, &n));
    KT_EQ_INT(n, 3);
    KT_MPI(MPI_Request_get_status_some(4, rq, &out, ind, st));
    KT_EQ_INT(out, 3);
    KT_EQ_INT(ind[0], 0);
    KT_EQ_INT(ind[1], 2);
    KT_EQ_INT(ind[2], 3);
    KT_EQ_INT(st[1].MPI_TAG, 2);
    KT_EQ_INT(st[2].MPI_TAG, 3);
    /* the requests are still there: MPI_Waitall frees them */
    KT_MPI(MPI_Waitall(4, rq, st));
    KT_EQ_INT(st[3].MPI_TAG, 3);
    for (int i = 0; i < 4; i++) KT_CHECK(rq[i] == MPI_REQUEST_NULL, "request %d not freed by MPI_Waitall", i);

    /* only null requests: _any flag with MPI_UNDEFINED, _some MPI_UNDEFINED, _all flag */
    KT_MPI(MPI_Request_get_status_any(4, rq, &idx, &flag, &st[0]));
    KT_EQ_INT(flag, 1);
    KT_EQ_INT(idx, MPI_UNDEFINED);
    KT_MPI(MPI_Request_get_status_some(4, rq, &out, ind, st));
    KT_EQ_INT(out, MPI_UNDEFINED);
    KT_MPI(MPI_Request_get_status_all(4, rq, &flag, MPI_STATUSES_IGNORE));
    KT_EQ_INT(flag, 1);

    /* a persistent receive stays active: MPI_Test still reports it */
    MPI_Request p;
    KT_MPI(MPI_Recv_init(b1, 4, MPI_INT, 1, 4, MPI_COMM_WORLD, &p));
    KT_MPI(MPI_Request_get_status_any(1, &p, &idx, &flag, &st[0]));     /* inactive */
    KT_EQ_INT(flag, 1);
    KT_EQ_INT(idx, MPI_UNDEFINED);
    KT_MPI(MPI_Start(&p));
    go(3);
    flag = 0;
    while (!flag) KT_MPI(MPI_Request_get_status_all(1, &p, &flag, st));
    KT_EQ_INT(st[0].MPI_TAG, 4);
    KT_MPI(MPI_Test(&p, &flag, &st[1]));
    KT_EQ_INT(flag, 1);
    KT_EQ_INT(st[1].MPI_TAG, 4);
    KT_MPI(MPI_Request_free(&p));

    /* a failed request: MPI_ERR_IN_STATUS with the error in its status; _any returns the error */
    KT_MPI(MPI_Irecv(b1, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &rq[0]));
    KT_MPI(MPI_Irecv(b2, 4, MPI_INT, 1, 6, MPI_COMM_WORLD, &rq[1]));
    go(4);
    flag = 0;
    int rc = MPI_SUCCESS, cls;
    while (!flag) {
        rc = MPI_Request_get_status_all(2, rq, &flag, st);
        if (rc != MPI_SUCCESS) break;
    }
    KT_EQ_INT(flag, 1);
    KT_MPI(MPI_Error_class(rc, &cls));
    KT_EQ_INT(cls, MPI_ERR_IN_STATUS);
    KT_MPI(MPI_Error_class(st[0].MPI_ERROR, &cls));
    KT_EQ_INT(cls, MPI_ERR_TRUNCATE);
    KT_EQ_INT(st[1].MPI_ERROR, MPI_SUCCESS);
    rc = MPI_Request_get_status_some(2, rq, &out, ind, st);
    KT_MPI(MPI_Error_class(rc, &cls));
    KT_EQ_INT(cls, MPI_ERR_IN_STATUS);
    KT_EQ_INT(out, 2);
    KT_MPI(MPI_Error_class(st[0].MPI_ERROR, &cls));
    KT_EQ_INT(cls, MPI_ERR_TRUNCATE);
    rc = MPI_Request_get_status_any(2, rq, &idx, &flag, &st[0]);
    KT_EQ_INT(idx, 0);
    KT_MPI(MPI_Error_class(rc, &cls));
    KT_EQ_INT(cls, MPI_ERR_TRUNCATE);
    KT_CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL, "a failed request was freed");
    KT_ERRCLASS(MPI_Wait(&rq[0], MPI_STATUS_IGNORE), MPI_ERR_TRUNCATE);
    KT_MPI(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));

    /* bad arguments */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    KT_ERRCLASS(MPI_Request_get_status_all(1, rq, NULL, st), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Request_get_status_any(1, rq, NULL, &flag, st), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Request_get_status_some(1, rq, NULL, ind, st), MPI_ERR_ARG);
    KT_MPI(MPI_Finalize());
    return 0;
}
