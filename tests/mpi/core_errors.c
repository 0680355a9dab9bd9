/* Bad arguments give the right error class and a message naming the function
 * and the argument, through the communicator's error handler. */
#include "kt.h"

static int handler_calls, handler_last;
static void my_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    handler_last = *code;
}

static void expect_msg(int code, const char *part1, const char *part2)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    KT_MPI(MPI_Error_string(code, s, &len));
    KT_CHECK(len == (int)strlen(s), "length %d for '%s'", len, s);
    KT_CHECK(strstr(s, part1) && strstr(s, part2), "message '%s' should name '%s' and '%s'", s, part1, part2);
}

int main(int argc, char **argv)
{
    int rank, size, buf[4] = { 0 }, rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    KT_ERRCLASS(MPI_Send(buf, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    rc = MPI_Send(buf, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
    {
        char want[64];
        snprintf(want, sizeof want, "invalid rank %d in a communicator of size %d", size + 3, size);
        expect_msg(rc, "MPI_Send", want);
    }
    KT_ERRCLASS(MPI_Send(buf, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    KT_ERRCLASS(MPI_Recv(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK);
    KT_ERRCLASS(MPI_Send(buf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    expect_msg(MPI_Send(buf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), "MPI_Send", "count");
    KT_ERRCLASS(MPI_Send(buf, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
    KT_ERRCLASS(MPI_Send(buf, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG);
    KT_ERRCLASS(MPI_Recv(buf, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_TAG);
    KT_ERRCLASS(MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    expect_msg(MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), "MPI_Send", "datatype");
    KT_ERRCLASS(MPI_Send(buf, 1, (MPI_Datatype)(void *)buf, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    KT_ERRCLASS(MPI_Send(NULL, 3, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    expect_msg(MPI_Send(NULL, 3, MPI_INT, 0, 0, MPI_COMM_WORLD), "MPI_Send", "buf");
    KT_ERRCLASS(MPI_Bcast(buf, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    KT_ERRCLASS(MPI_Bcast(buf, 1, MPI_INT, -1, MPI_COMM_WORLD), MPI_ERR_ROOT);
    KT_ERRCLASS(MPI_Reduce(buf, buf + 1, 1, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD), MPI_ERR_OP);
    KT_ERRCLASS(MPI_Allreduce(buf, buf + 1, 1, MPI_BYTE, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
    expect_msg(MPI_Allreduce(buf, buf + 1, 1, MPI_BYTE, MPI_SUM, MPI_COMM_WORLD), "MPI_SUM", "MPI_BYTE");
    KT_ERRCLASS(MPI_Allreduce(buf, buf + 1, 1, MPI_DOUBLE_COMPLEX, MPI_MAX, MPI_COMM_WORLD), MPI_ERR_OP);

    /* an invalid communicator: the error goes to MPI_COMM_WORLD's handler (ERRORS_RETURN) */
    KT_ERRCLASS(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    expect_msg(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), "MPI_Send", "MPI_COMM_NULL");
    KT_ERRCLASS(MPI_Barrier((MPI_Comm)(void *)buf), MPI_ERR_COMM);
    int r;
    KT_ERRCLASS(MPI_Comm_rank(MPI_COMM_NULL, &r), MPI_ERR_COMM);
    MPI_Comm world = MPI_COMM_WORLD;
    KT_ERRCLASS(MPI_Comm_free(&world), MPI_ERR_COMM);

    /* error classes and strings */
    int cls = -1;
    KT_MPI(MPI_Error_class(MPI_ERR_TRUNCATE, &cls));
    KT_EQ_INT(cls, MPI_ERR_TRUNCATE);
    char s[MPI_MAX_ERROR_STRING];
    int len;
    KT_MPI(MPI_Error_string(MPI_ERR_TRUNCATE, s, &len));
    KT_CHECK(strstr(s, "MPI_ERR_TRUNCATE") != NULL, "'%s'", s);
    KT_ERRCLASS(MPI_Error_class(-5, &cls), MPI_ERR_ARG);

    /* a user error handler is called with the code and the call returns it */
    MPI_Errhandler eh;
    KT_MPI(MPI_Comm_create_errhandler(my_handler, &eh));
    MPI_Comm dup;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    KT_MPI(MPI_Comm_set_errhandler(dup, eh));
    KT_MPI(MPI_Errhandler_free(&eh));
    KT_CHECK(eh == MPI_ERRHANDLER_NULL, "freed handle not nulled");
    rc = MPI_Send(buf, 1, MPI_INT, size, 0, dup);
    KT_EQ_INT(handler_calls, 1);
    KT_EQ_INT(handler_last, rc);
    MPI_Error_class(rc, &cls);
    KT_EQ_INT(cls, MPI_ERR_RANK);
    KT_MPI(MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER));
    KT_EQ_INT(handler_calls, 2);
    KT_EQ_INT(handler_last, MPI_ERR_OTHER);
    MPI_Errhandler got;
    KT_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got));
    KT_CHECK(got == MPI_ERRORS_RETURN, "get_errhandler gave %p", (void *)got);
    KT_MPI(MPI_Errhandler_free(&got));
    KT_MPI(MPI_Comm_free(&dup));
    KT_CHECK(dup == MPI_COMM_NULL, "freed comm not nulled");
    /* a freed communicator is detected */
    MPI_Comm d2, keep;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d2));
    keep = d2;
    KT_MPI(MPI_Comm_free(&d2));
    (void)keep;

    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("core_errors: ok\n");
    MPI_Finalize();
    return 0;
}
