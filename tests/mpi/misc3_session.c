/* Sessions: MPI_Session_create_errhandler / _call_errhandler, errors that go
 * to a session's handler, MPI_Session_init's "thread_level" (MPI_THREAD_MULTIPLE
 * switches the library lock on: 4 threads then communicate at once, each on
 * its own communicator made from the session), without MPI_Init. */
#include "kt.h"
#include <pthread.h>

static int calls, last_code;
static MPI_Session last_session;

static void on_error(MPI_Session *s, int *code, ...)
{
    calls++;
    last_code = *code;
    last_session = *s;
}

static void on_comm_error(MPI_Comm *c, int *code, ...)
{
    (void)c; (void)code;
}

#define NTHR 4
#define ITERS 200
static MPI_Comm comms[NTHR];

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, rank, size;
    MPI_Comm c = comms[t];
    KT_MPI(MPI_Comm_rank(c, &rank));
    KT_MPI(MPI_Comm_size(c, &size));
    for (int i = 0; i < ITERS; i++) {
        int v = rank + i + t, sum = 0, got = -1;
        KT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c));
        KT_EQ_INT(sum, size * (size - 1) / 2 + size * (i + t));
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        KT_MPI(MPI_Sendrecv(&v, 1, MPI_INT, to, i, &got, 1, MPI_INT, from, i, c, MPI_STATUS_IGNORE));
        KT_EQ_INT(got, from + i + t);
    }
    return NULL;
}

int main(void)
{
    MPI_Session s1, s2;
    MPI_Info info;
    MPI_Errhandler eh, got_eh, ceh;
    char val[MPI_MAX_INFO_VAL + 1];
    int flag, len;

    /* not an info object: MPI_Session_init reports it to its errhandler argument */
    MPI_Session bad = MPI_SESSION_NULL;
    static uint64_t junk[8];
    KT_ERRCLASS(MPI_Session_init((MPI_Info)(void *)junk, MPI_ERRORS_RETURN, &bad), MPI_ERR_INFO);
    KT_CHECK(bad == MPI_SESSION_NULL, "no session on failure");

    KT_MPI(MPI_Info_create(&info));
    KT_MPI(MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE"));
    KT_MPI(MPI_Session_init(info, MPI_ERRORS_RETURN, &s1));
    KT_MPI(MPI_Info_free(&info));

    /* the level provided is in the session's info */
    KT_MPI(MPI_Session_get_info(s1, &info));
    KT_MPI(MPI_Info_get_string(info, "thread_level", (len = sizeof val, &len), val, &flag));
    KT_CHECK(flag, "thread_level in the session's info");
    KT_CHECK(!strcmp(val, "MPI_THREAD_MULTIPLE"), "thread_level is %s", val);
    KT_MPI(MPI_Info_free(&info));

    /* a session error handler */
    KT_MPI(MPI_Session_create_errhandler(on_error, &eh));
    KT_MPI(MPI_Session_init(MPI_INFO_NULL, eh, &s2));
    KT_MPI(MPI_Session_get_errhandler(s2, &got_eh));
    KT_CHECK(got_eh == eh, "MPI_Session_get_errhandler gives the handler set");
    KT_MPI(MPI_Errhandler_free(&got_eh));
    KT_MPI(MPI_Session_call_errhandler(s2, MPI_ERR_OTHER));
    KT_EQ_INT(calls, 1);
    KT_EQ_INT(last_code, MPI_ERR_OTHER);
    KT_CHECK(last_session == s2, "the handler gets the session");
    /* an error of a session call goes to the session's handler */
    int n = 0;
    int rc = MPI_Session_get_nth_pset(s2, MPI_INFO_NULL, 99, &n, val);
    KT_EQ_INT(calls, 2);
    KT_CHECK(rc == last_code && rc != MPI_SUCCESS, "the code returned (%d) is the one handled (%d)", rc, last_code);
    int cls;
    KT_MPI(MPI_Error_class(rc, &cls));
    KT_EQ_INT(cls, MPI_ERR_ARG);
    MPI_Group g = MPI_GROUP_NULL;
    rc = MPI_Group_from_session_pset(s2, "mpi://NO-SUCH-SET", &g);
    KT_CHECK(rc != MPI_SUCCESS && calls == 3, "unknown process set: rc %d, %d calls", rc, calls);
    /* a communicator's handler does not fit a session */
    KT_MPI(MPI_Comm_create_errhandler(on_comm_error, &ceh));
    KT_ERRCLASS(MPI_Session_set_errhandler(s1, ceh), MPI_ERR_ARG);
    KT_MPI(MPI_Errhandler_free(&ceh));
    /* MPI_ERRORS_RETURN on s2 now: the user handler is not called */
    KT_MPI(MPI_Session_set_errhandler(s2, MPI_ERRORS_RETURN));
    KT_ERRCLASS(MPI_Session_get_nth_pset(s2, MPI_INFO_NULL, -1, &n, val), MPI_ERR_ARG);
    KT_EQ_INT(calls, 3);
    KT_MPI(MPI_Errhandler_free(&eh));

    /* MPI_THREAD_MULTIPLE for real: threads on communicators of the session */
    KT_MPI(MPI_Group_from_session_pset(s1, "mpi://WORLD", &g));
    for (int t = 0; t < NTHR; t++) {
        char tag[32];
        snprintf(tag, sizeof tag, "misc3.session.%d", t);
        KT_MPI(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &comms[t]));
    }
    KT_MPI(MPI_Group_free(&g));
    pthread_t th[NTHR];
    for (int t = 0; t < NTHR; t++) KT_CHECK(!pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t), "thread");
    for (int t = 0; t < NTHR; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NTHR; t++) KT_MPI(MPI_Comm_free(&comms[t]));

    KT_MPI(MPI_Session_finalize(&s2));
    KT_MPI(MPI_Session_finalize(&s1));
    KT_CHECK(s1 == MPI_SESSION_NULL, "finalize sets MPI_SESSION_NULL");
    return 0;
}
