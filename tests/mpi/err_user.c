/* User error classes, codes and strings end to end: Add_error_class/code/
 * string, Error_class/string of them, MPI_LASTUSEDCODE, a user error handler
 * that receives them (Comm_call_errhandler and a failing attribute copy
 * callback inside MPI_Comm_dup), Remove_error_class/code/string (MPI 5.0),
 * error handler reference counts, and MPI_ERR_IN_STATUS from Waitall /
 * Waitsome / Testall with the failing request's class in its status. */
#include "kt.h"

static int calls, last_code;
static MPI_Comm last_comm;
static void handler(MPI_Comm *comm, int *code, ...)
{
    calls++;
    last_code = *code;
    last_comm = *comm;
}

static int ucode;
static int copy_fails(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm; (void)keyval; (void)extra; (void)in; (void)out; (void)flag;
    return ucode;
}

static void expect_string(int code, const char *want)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = -1;
    KT_MPI(MPI_Error_string(code, s, &len));
    KT_CHECK(!strcmp(s, want), "MPI_Error_string(%d) = '%s', expected '%s'", code, s, want);
    KT_EQ_INT(len, (int)strlen(want));
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* classes and codes */
    int c1, c2, k1, k2, k3, cls;
    KT_MPI(MPI_Add_error_class(&c1));
    KT_MPI(MPI_Add_error_class(&c2));
    KT_CHECK(c1 != c2, "two classes, one value");
    KT_MPI(MPI_Add_error_code(c1, &k1));
    KT_MPI(MPI_Add_error_code(c1, &k2));
    KT_MPI(MPI_Add_error_code(c2, &k3));
    KT_CHECK(k1 != k2 && k1 != k3 && k2 != k3 && k1 != c1 && k1 != c2, "codes must differ");
    KT_MPI(MPI_Error_class(c1, &cls)); KT_EQ_INT(cls, c1);
    KT_MPI(MPI_Error_class(k1, &cls)); KT_EQ_INT(cls, c1);
    KT_MPI(MPI_Error_class(k2, &cls)); KT_EQ_INT(cls, c1);
    KT_MPI(MPI_Error_class(k3, &cls)); KT_EQ_INT(cls, c2);
    int lastused = 0, flag = 0, *lp;
    KT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &lp, &flag));
    lastused = *lp;
    KT_CHECK(flag && lastused >= k3 && lastused >= c2, "MPI_LASTUSEDCODE %d", lastused);
    /* a code of a predefined class */
    int kp;
    KT_MPI(MPI_Add_error_code(MPI_ERR_ARG, &kp));
    KT_MPI(MPI_Error_class(kp, &cls)); KT_EQ_INT(cls, MPI_ERR_ARG);

    /* strings: empty until set, then set, replaced */
    expect_string(k1, "");
    expect_string(c1, "");
    KT_MPI(MPI_Add_error_string(c1, "my class one"));
    KT_MPI(MPI_Add_error_string(k1, "first problem"));
    KT_MPI(MPI_Add_error_string(k2, "second problem"));
    expect_string(c1, "my class one");
    expect_string(k1, "first problem");
    KT_MPI(MPI_Add_error_string(k2, "second problem, again"));
    expect_string(k2, "second problem, again");
    KT_ERRCLASS(MPI_Add_error_string(MPI_ERR_TRUNCATE, "not mine"), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Add_error_code(123456789, &kp), MPI_ERR_ARG);
    {
        char big[MPI_MAX_ERROR_STRING + 10];
        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = 0;
        KT_ERRCLASS(MPI_Add_error_string(k3, big), MPI_ERR_ARG);
    }

    /* a user handler receives the user code; Comm_call_errhandler returns MPI_SUCCESS */
    MPI_Errhandler eh, got;
    MPI_Comm c;
    KT_MPI(MPI_Comm_create_errhandler(handler, &eh));
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    KT_MPI(MPI_Comm_set_errhandler(c, eh));
    KT_MPI(MPI_Errhandler_free(&eh));             /* c keeps it alive */
    KT_CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free sets MPI_ERRHANDLER_NULL");
    KT_MPI(MPI_Comm_call_errhandler(c, k2));
    KT_EQ_INT(calls, 1);
    KT_EQ_INT(last_code, k2);
    KT_CHECK(last_comm == c, "handler got another communicator");
    {
        char s[MPI_MAX_ERROR_STRING];
        int len;
        KT_MPI(MPI_Error_class(last_code, &cls));
        KT_EQ_INT(cls, c1);
        KT_MPI(MPI_Error_string(last_code, s, &len));
        KT_CHECK(!strcmp(s, "second problem, again"), "'%s'", s);
    }
    KT_MPI(MPI_Comm_get_errhandler(c, &got));
    KT_CHECK(got != MPI_ERRHANDLER_NULL && got != MPI_ERRORS_RETURN, "Comm_get_errhandler");
    KT_MPI(MPI_Errhandler_free(&got));

    /* a copy callback's error reaches the handler of the communicator being duplicated */
    int kv;
    ucode = k3;
    KT_MPI(MPI_Comm_create_keyval(copy_fails, MPI_COMM_NULL_DELETE_FN, &kv, NULL));
    KT_MPI(MPI_Comm_set_attr(c, kv, NULL));
    MPI_Comm d = MPI_COMM_NULL;
    int rc = MPI_Comm_dup(c, &d);
    KT_EQ_INT(calls, 2);
    KT_MPI(MPI_Error_class(last_code, &cls));
    KT_EQ_INT(cls, c2);
    KT_MPI(MPI_Error_class(rc, &cls));
    KT_EQ_INT(cls, c2);
    KT_MPI(MPI_Comm_delete_attr(c, kv));
    KT_MPI(MPI_Comm_free_keyval(&kv));

    /* ERRORS_RETURN: Comm_call_errhandler returns MPI_SUCCESS */
    KT_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    KT_MPI(MPI_Comm_call_errhandler(c, k1));
    KT_EQ_INT(calls, 2);
    KT_MPI(MPI_Comm_free(&c));                    /* the last reference to the user handler */

    /* MPI 5.0: removing strings, codes, classes */
    KT_MPI(MPI_Remove_error_string(k1));
    expect_string(k1, "");
    KT_ERRCLASS(MPI_Remove_error_class(c1), MPI_ERR_ARG);          /* still has codes */
    KT_MPI(MPI_Remove_error_code(k1));
    KT_MPI(MPI_Remove_error_code(k2));
    KT_ERRCLASS(MPI_Error_class(k1, &cls), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Remove_error_code(k1), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Remove_error_code(c2), MPI_ERR_ARG);           /* a class, not a code */
    KT_MPI(MPI_Remove_error_class(c1));
    KT_ERRCLASS(MPI_Error_class(c1, &cls), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Remove_error_class(MPI_ERR_OTHER), MPI_ERR_ARG);

    /* MPI_ERR_IN_STATUS: one truncated receive among good ones */
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int sbuf[4] = { 1, 2, 3, 4 }, small[1] = { 0 }, big[4] = { 0 };
    MPI_Request rq[4];
    MPI_Status st[4];
    KT_MPI(MPI_Irecv(small, 1, MPI_INT, from, 5, MPI_COMM_WORLD, &rq[0]));
    KT_MPI(MPI_Irecv(big, 4, MPI_INT, from, 6, MPI_COMM_WORLD, &rq[1]));
    KT_MPI(MPI_Isend(sbuf, 4, MPI_INT, to, 5, MPI_COMM_WORLD, &rq[2]));
    KT_MPI(MPI_Isend(sbuf, 4, MPI_INT, to, 6, MPI_COMM_WORLD, &rq[3]));
    rc = MPI_Waitall(4, rq, st);
    KT_MPI(MPI_Error_class(rc, &cls));
    KT_EQ_INT(cls, MPI_ERR_IN_STATUS);
    KT_MPI(MPI_Error_class(st[0].MPI_ERROR, &cls));
    KT_EQ_INT(cls, MPI_ERR_TRUNCATE);
    KT_EQ_INT(st[1].MPI_ERROR, MPI_SUCCESS);
    KT_EQ_INT(st[2].MPI_ERROR, MPI_SUCCESS);
    KT_EQ_INT(st[3].MPI_ERROR, MPI_SUCCESS);
    KT_EQ_INT(big[3], 4);
    for (int i = 0; i < 4; i++) KT_CHECK(rq[i] == MPI_REQUEST_NULL, "request %d not freed", i);

    /* Waitsome: the truncated one is reported in its status */
    KT_MPI(MPI_Irecv(small, 1, MPI_INT, from, 7, MPI_COMM_WORLD, &rq[0]));
    KT_MPI(MPI_Send(sbuf, 4, MPI_INT, to, 7, MPI_COMM_WORLD));
    int outcount = 0, idx[1];
    rc = MPI_Waitsome(1, rq, &outcount, idx, st);
    KT_EQ_INT(outcount, 1);
    KT_MPI(MPI_Error_class(rc, &cls));
    KT_EQ_INT(cls, MPI_ERR_IN_STATUS);
    KT_MPI(MPI_Error_class(st[0].MPI_ERROR, &cls));
    KT_EQ_INT(cls, MPI_ERR_TRUNCATE);

    /* Testall, looping until complete */
    KT_MPI(MPI_Irecv(big, 4, MPI_INT, from, 8, MPI_COMM_WORLD, &rq[0]));
    KT_MPI(MPI_Irecv(small, 1, MPI_INT, from, 9, MPI_COMM_WORLD, &rq[1]));
    KT_MPI(MPI_Send(sbuf, 4, MPI_INT, to, 8, MPI_COMM_WORLD));
    KT_MPI(MPI_Send(sbuf, 2, MPI_INT, to, 9, MPI_COMM_WORLD));
    flag = 0;
    do rc = MPI_Testall(2, rq, &flag, st); while (rc == MPI_SUCCESS && !flag);
    KT_EQ_INT(flag, 1);
    KT_MPI(MPI_Error_class(rc, &cls));
    KT_EQ_INT(cls, MPI_ERR_IN_STATUS);
    KT_EQ_INT(st[0].MPI_ERROR, MPI_SUCCESS);
    KT_MPI(MPI_Error_class(st[1].MPI_ERROR, &cls));
    KT_EQ_INT(cls, MPI_ERR_TRUNCATE);

    MPI_Finalize();
    return 0;
}
