/* nbc_errors: argument errors of the non-blocking and persistent
 * collectives, with MPI_ERRORS_RETURN (and once with a user error handler):
 *   a root out of range -> MPI_ERR_ROOT; a negative count (also in a counts
 *   array) -> MPI_ERR_COUNT; a NULL request pointer -> MPI_ERR_REQUEST;
 *   MPI_COMM_NULL -> MPI_ERR_COMM; Iscan / Iexscan / Scan_init / Exscan_init
 *   on an intercommunicator -> MPI_ERR_COMM; a neighborhood collective on a
 *   communicator without a topology -> MPI_ERR_TOPOLOGY; MPI_SUM on
 *   MPI_BYTE, MPI_OP_NULL -> MPI_ERR_OP; an uncommitted datatype ->
 *   MPI_ERR_TYPE; MPI_IN_PLACE where it is not allowed -> MPI_ERR_BUFFER.
 * A failed call starts nothing: the next collective on the communicator
 * matches normally (checked after every group of errors).
 *   MPI_Cancel of a collective request is erroneous (MPI 4.1 sec. 3.8.4):
 *   Kumi answers MPI_ERR_REQUEST and the collective completes normally, not
 *   cancelled.  MPI_Start of an active persistent collective is
 *   MPI_ERR_REQUEST and leaves the running one alone. */
#include "kt.h"

#define BIG 25000

static int me, n;

/* The communicator still works: a collective after the errors matches. */
static void still_works(MPI_Comm c, int tag)
{
    int cn, cm, x, y = -1;
    MPI_Request rq;
    MPI_Comm_size(c, &cn);
    MPI_Comm_rank(c, &cm);
    x = cm + tag;
    KT_MPI(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, c, &rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    KT_EQ_INT(y, cn * (cn - 1) / 2 + cn * tag);
}

static void test_args(void)
{
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Request rq = MPI_REQUEST_NULL;
    int x[4] = { 1, 2, 3, 4 }, y[64], cnt[64], dsp[64];
    MPI_Info ni = MPI_INFO_NULL;
    for (int i = 0; i < 64; i++) { cnt[i] = 1; dsp[i] = i; }

    /* roots out of range */
    KT_ERRCLASS(MPI_Ibcast(x, 1, MPI_INT, n, w, &rq), MPI_ERR_ROOT);
    KT_ERRCLASS(MPI_Ibcast(x, 1, MPI_INT, -1, w, &rq), MPI_ERR_ROOT);
    KT_ERRCLASS(MPI_Igather(x, 1, MPI_INT, y, 1, MPI_INT, n + 3, w, &rq), MPI_ERR_ROOT);
    KT_ERRCLASS(MPI_Iscatterv(x, cnt, dsp, MPI_INT, y, 1, MPI_INT, -2, w, &rq), MPI_ERR_ROOT);
    KT_ERRCLASS(MPI_Ireduce(x, y, 1, MPI_INT, MPI_SUM, n, w, &rq), MPI_ERR_ROOT);
    KT_ERRCLASS(MPI_Ibcast(x, 1, MPI_INT, MPI_ROOT, w, &rq), MPI_ERR_ROOT);     /* only for intercomms */
    KT_ERRCLASS(MPI_Bcast_init(x, 1, MPI_INT, n, w, ni, &rq), MPI_ERR_ROOT);
    KT_ERRCLASS(MPI_Reduce_init(x, y, 1, MPI_INT, MPI_SUM, -1, w, ni, &rq), MPI_ERR_ROOT);
    KT_CHECK(rq == MPI_REQUEST_NULL, "a failed call set the request");
    still_works(w, 1);

    /* negative counts */
    KT_ERRCLASS(MPI_Ibcast(x, -1, MPI_INT, 0, w, &rq), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Iallreduce(x, y, -1, MPI_INT, MPI_SUM, w, &rq), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Ialltoall(x, -2, MPI_INT, y, 1, MPI_INT, w, &rq), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Allreduce_init(x, y, -1, MPI_INT, MPI_SUM, w, ni, &rq), MPI_ERR_COUNT);
    cnt[n - 1] = -1;
    KT_ERRCLASS(MPI_Iallgatherv(x, 1, MPI_INT, y, cnt, dsp, MPI_INT, w, &rq), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Ireduce_scatter(x, y, cnt, MPI_INT, MPI_SUM, w, &rq), MPI_ERR_COUNT);
    KT_ERRCLASS(MPI_Alltoallv_init(x, cnt, dsp, MPI_INT, y, cnt, dsp, MPI_INT, w, ni, &rq), MPI_ERR_COUNT);
    cnt[n - 1] = 1;
    still_works(w, 2);

    /* NULL request pointer: MPI_ERR_REQUEST, as for MPI_Isend (issue 16 item 16) */
    KT_ERRCLASS(MPI_Ibarrier(w, NULL), MPI_ERR_REQUEST);
    KT_ERRCLASS(MPI_Ibcast(x, 1, MPI_INT, 0, w, NULL), MPI_ERR_REQUEST);
    KT_ERRCLASS(MPI_Iallreduce(x, y, 1, MPI_INT, MPI_SUM, w, NULL), MPI_ERR_REQUEST);
    KT_ERRCLASS(MPI_Barrier_init(w, ni, NULL), MPI_ERR_REQUEST);
    KT_ERRCLASS(MPI_Allgather_init(x, 1, MPI_INT, y, 1, MPI_INT, w, ni, NULL), MPI_ERR_REQUEST);
    still_works(w, 3);

    /* communicators */
    KT_ERRCLASS(MPI_Ibarrier(MPI_COMM_NULL, &rq), MPI_ERR_COMM);
    KT_ERRCLASS(MPI_Iallreduce(x, y, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL, &rq), MPI_ERR_COMM);
    KT_ERRCLASS(MPI_Scan_init(x, y, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL, ni, &rq), MPI_ERR_COMM);
    KT_ERRCLASS(MPI_Ineighbor_allgather(x, 1, MPI_INT, y, 1, MPI_INT, w, &rq), MPI_ERR_TOPOLOGY);
    KT_ERRCLASS(MPI_Ineighbor_alltoall(x, 1, MPI_INT, y, 1, MPI_INT, w, &rq), MPI_ERR_TOPOLOGY);
    KT_ERRCLASS(MPI_Neighbor_alltoall_init(x, 1, MPI_INT, y, 1, MPI_INT, w, ni, &rq), MPI_ERR_TOPOLOGY);

    /* ops and datatypes */
    unsigned char b[4] = { 1, 2, 3, 4 }, bb[4];
    MPI_Datatype unc;
    KT_ERRCLASS(MPI_Iallreduce(b, bb, 4, MPI_BYTE, MPI_SUM, w, &rq), MPI_ERR_OP);
    KT_ERRCLASS(MPI_Ireduce(x, y, 1, MPI_INT, MPI_OP_NULL, 0, w, &rq), MPI_ERR_OP);
    KT_ERRCLASS(MPI_Scan_init(b, bb, 4, MPI_BYTE, MPI_PROD, w, ni, &rq), MPI_ERR_OP);
    KT_MPI(MPI_Type_contiguous(2, MPI_INT, &unc));
    KT_ERRCLASS(MPI_Ibcast(x, 1, unc, 0, w, &rq), MPI_ERR_TYPE);
    KT_ERRCLASS(MPI_Iallgather(x, 1, unc, y, 1, unc, w, &rq), MPI_ERR_TYPE);
    KT_ERRCLASS(MPI_Ibcast(x, 1, MPI_DATATYPE_NULL, 0, w, &rq), MPI_ERR_TYPE);
    KT_MPI(MPI_Type_free(&unc));

    /* MPI_IN_PLACE where it is not allowed */
    KT_ERRCLASS(MPI_Ibcast(MPI_IN_PLACE, 1, MPI_INT, 0, w, &rq), MPI_ERR_BUFFER);
    KT_ERRCLASS(MPI_Iallreduce(x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, w, &rq), MPI_ERR_BUFFER);
    KT_ERRCLASS(MPI_Bcast_init(MPI_IN_PLACE, 1, MPI_INT, 0, w, ni, &rq), MPI_ERR_BUFFER);
    KT_CHECK(rq == MPI_REQUEST_NULL, "a failed call set the request");
    still_works(w, 4);
}

/* Errors go to the communicator's handler, with the communicator. */
static int handler_calls, handler_class = -1;
static MPI_Comm handler_comm = MPI_COMM_NULL;

static void on_error(MPI_Comm *c, int *code, ...)
{
    handler_calls++;
    handler_comm = *c;
    MPI_Error_class(*code, &handler_class);
}

static void test_handler(void)
{
    MPI_Comm d;
    MPI_Errhandler eh;
    MPI_Request rq;
    int x = 0, y = 0;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    KT_MPI(MPI_Comm_create_errhandler(on_error, &eh));
    KT_MPI(MPI_Comm_set_errhandler(d, eh));
    int rc = MPI_Ibcast(&x, 1, MPI_INT, n, d, &rq);
    KT_CHECK(rc != MPI_SUCCESS, "MPI_Ibcast with root %d succeeded", n);
    KT_EQ_INT(handler_calls, 1);
    KT_EQ_INT(handler_class, MPI_ERR_ROOT);
    KT_CHECK(handler_comm == d, "the handler got another communicator");
    rc = MPI_Allreduce_init(&x, &y, -1, MPI_INT, MPI_SUM, d, MPI_INFO_NULL, &rq);
    KT_CHECK(rc != MPI_SUCCESS, "MPI_Allreduce_init with count -1 succeeded");
    KT_EQ_INT(handler_calls, 2);
    KT_EQ_INT(handler_class, MPI_ERR_COUNT);
    still_works(d, 5);
    KT_EQ_INT(handler_calls, 2);
    KT_MPI(MPI_Errhandler_free(&eh));
    KT_MPI(MPI_Comm_free(&d));
}

/* Intercommunicator: the scans are not defined; a bad root. */
static void test_inter(void)
{
    if (n < 2) return;
    MPI_Comm local, inter;
    MPI_Request rq = MPI_REQUEST_NULL;
    int side = me >= n / 2 ? 1 : 0, x[2] = { 1, 2 }, y[2];
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, side, me, &local));
    KT_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side ? 0 : n / 2, 7, &inter));
    KT_MPI(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
    KT_ERRCLASS(MPI_Iscan(x, y, 1, MPI_INT, MPI_SUM, inter, &rq), MPI_ERR_COMM);
    KT_ERRCLASS(MPI_Iexscan(x, y, 1, MPI_INT, MPI_SUM, inter, &rq), MPI_ERR_COMM);
    KT_ERRCLASS(MPI_Scan_init(x, y, 1, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, &rq), MPI_ERR_COMM);
    KT_ERRCLASS(MPI_Exscan_init(x, y, 1, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, &rq), MPI_ERR_COMM);
    KT_ERRCLASS(MPI_Ibcast(x, 1, MPI_INT, -5, inter, &rq), MPI_ERR_ROOT);
    KT_ERRCLASS(MPI_Ibcast(x, 1, MPI_INT, n, inter, &rq), MPI_ERR_ROOT);
    KT_ERRCLASS(MPI_Iallreduce(MPI_IN_PLACE, y, 1, MPI_INT, MPI_SUM, inter, &rq), MPI_ERR_BUFFER);
    KT_CHECK(rq == MPI_REQUEST_NULL, "a failed call set the request");
    /* still works: the sum over the other group */
    int want = 0;
    x[0] = me;
    KT_MPI(MPI_Iallreduce(x, y, 1, MPI_INT, MPI_SUM, inter, &rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int r = 0; r < n; r++) want += (r >= n / 2 ? 1 : 0) != side ? r : 0;
    KT_EQ_INT(y[0], want);
    KT_MPI(MPI_Comm_free(&inter));
    KT_MPI(MPI_Comm_free(&local));
}

/* MPI_Cancel of collective requests: an error, and the collective still completes. */
static void test_cancel(void)
{
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Request rq;
    MPI_Status st;
    int x, flag = 1;
    int *a = malloc(sizeof(int) * BIG), *b = malloc(sizeof(int) * BIG);

    x = me == n - 1 ? 4242 : -1;
    KT_MPI(MPI_Ibcast(&x, 1, MPI_INT, n - 1, w, &rq));
    KT_ERRCLASS(MPI_Cancel(&rq), MPI_ERR_REQUEST);
    KT_CHECK(rq != MPI_REQUEST_NULL, "MPI_Cancel freed the request");
    KT_MPI(MPI_Wait(&rq, &st));
    KT_MPI(MPI_Test_cancelled(&st, &flag));
    KT_CHECK(!flag, "the Ibcast says it was cancelled");
    KT_EQ_INT(x, 4242);

    /* a large one, cancelled while data moves */
    for (int i = 0; i < BIG; i++) { a[i] = me + i; b[i] = -1; }
    KT_MPI(MPI_Iallreduce(a, b, BIG, MPI_INT, MPI_SUM, w, &rq));
    KT_ERRCLASS(MPI_Cancel(&rq), MPI_ERR_REQUEST);
    flag = 1;
    KT_MPI(MPI_Wait(&rq, &st));
    KT_MPI(MPI_Test_cancelled(&st, &flag));
    KT_CHECK(!flag, "the Iallreduce says it was cancelled");
    for (int i = 0; i < BIG; i++)
        if (b[i] != n * (n - 1) / 2 + n * i) KT_FAIL("Iallreduce after MPI_Cancel: [%d] = %d", i, b[i]);

    /* persistent: cancel and a second start while active are errors */
    KT_MPI(MPI_Allreduce_init(a, b, BIG, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &rq));
    for (int rd = 0; rd < 2; rd++) {
        for (int i = 0; i < BIG; i++) { a[i] = me + i + rd; b[i] = -1; }
        KT_MPI(MPI_Start(&rq));
        KT_ERRCLASS(MPI_Start(&rq), MPI_ERR_REQUEST);
        KT_ERRCLASS(MPI_Startall(1, &rq), MPI_ERR_REQUEST);
        KT_ERRCLASS(MPI_Cancel(&rq), MPI_ERR_REQUEST);
        KT_MPI(MPI_Wait(&rq, &st));
        KT_MPI(MPI_Test_cancelled(&st, &flag));
        KT_CHECK(!flag, "the persistent Allreduce says it was cancelled");
        for (int i = 0; i < BIG; i++)
            if (b[i] != n * (n - 1) / 2 + n * (i + rd))
                KT_FAIL("MPI_Allreduce_init round %d after the errors: [%d] = %d", rd, i, b[i]);
    }
    KT_MPI(MPI_Request_free(&rq));
    free(a);
    free(b);
    still_works(w, 6);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    test_args();
    test_handler();
    test_inter();
#ifdef KUMI_MPI /* erroneous calls: the standard leaves the outcome open, this is Kumi's */
    test_cancel();
#endif
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return 0;
}
