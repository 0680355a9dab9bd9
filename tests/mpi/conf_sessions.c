/* conf_sessions: sessions the way mpi4py's test_session.py uses them
 * (issue 16 item 5: its session tests timed out).  Sessions are initialized
 * and finalized again and again (MPI 4.1 sec. 11.3): each round asks for the
 * process sets, their info (mpi_size), groups from them, communicators from
 * the groups with string tags (and uses them), the session's info, and
 * error handlers on the session; ranks do different numbers of rounds.
 * Before, the runtime stopped at the first round's MPI_Session_finalize and
 * the next MPI_Session_init failed.
 *   ./conf_sessions alone : no MPI_Init until the rounds are over, then
 *                           MPI_Init (allowed after sessions) and MPI_Finalize
 *   ./conf_sessions world : the rounds inside MPI_Init_thread(MULTIPLE) /
 *                           MPI_Finalize (as mpi4py does), calls with
 *                           MPI_SESSION_NULL (MPI_ERR_SESSION), and a
 *                           session left open at MPI_Finalize (the job still
 *                           ends cleanly; it reported "exited without calling
 *                           MPI_Finalize" before). */
#include "kt.h"

static int handled;
static void session_eh(MPI_Session *s, int *code, ...)
{
    int cls;
    MPI_Error_class(*code, &cls);
    if (*s != MPI_SESSION_NULL && cls == MPI_ERR_OTHER) handled++;
}

static void round_of_sessions(int round, int wsize)
{
    MPI_Session s;
    KT_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    KT_CHECK(s != MPI_SESSION_NULL, "round %d: MPI_SESSION_NULL", round);
    int n;
    KT_MPI(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
    KT_CHECK(n >= 2, "%d process sets", n);
    int found = 0;
    for (int i = 0; i < n; i++) {
        char name[MPI_MAX_PSET_NAME_LEN], size[32];
        int len = 0, flag;
        KT_MPI(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL));       /* the length */
        KT_CHECK(len > 1 && len <= (int)sizeof name, "length %d", len);
        KT_MPI(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
        MPI_Info info;
        KT_MPI(MPI_Session_get_pset_info(s, name, &info));
        len = sizeof size;
        KT_MPI(MPI_Info_get_string(info, "mpi_size", &len, size, &flag));
        KT_CHECK(flag, "%s: no mpi_size", name);
        KT_MPI(MPI_Info_free(&info));
        MPI_Group g;
        int gsize, csize;
        KT_MPI(MPI_Group_from_session_pset(s, name, &g));
        KT_MPI(MPI_Group_size(g, &gsize));
        KT_EQ_INT(gsize, atoi(size));
        if (!strcmp(name, "mpi://WORLD")) { found |= 1; KT_EQ_INT(gsize, wsize); }
        if (!strcmp(name, "mpi://SELF")) { found |= 2; KT_EQ_INT(gsize, 1); }
        MPI_Comm c1, c2;
        KT_MPI(MPI_Comm_create_from_group(g, "org.mpi4py", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c1));
        KT_MPI(MPI_Comm_create_from_group(g, "org.mpi4py.test", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c2));
        KT_MPI(MPI_Comm_size(c1, &csize));
        KT_EQ_INT(csize, gsize);
        int one = 1, sum = 0;
        KT_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c2));
        KT_EQ_INT(sum, gsize);
        KT_MPI(MPI_Barrier(c1));
        KT_MPI(MPI_Comm_free(&c1));
        KT_MPI(MPI_Comm_free(&c2));
        KT_MPI(MPI_Group_free(&g));
    }
    KT_EQ_INT(found, 3);
    MPI_Info used;
    char v[64];
    int len = sizeof v, flag;
    KT_MPI(MPI_Session_get_info(s, &used));
    KT_MPI(MPI_Info_get_string(used, "thread_level", &len, v, &flag));
    KT_CHECK(flag, "no thread_level in the session's info");
    KT_MPI(MPI_Info_free(&used));
    /* error handlers on the session */
    MPI_Errhandler eh, got;
    KT_MPI(MPI_Session_create_errhandler(session_eh, &eh));
    KT_MPI(MPI_Session_set_errhandler(s, eh));
    KT_MPI(MPI_Session_get_errhandler(s, &got));
    KT_CHECK(got == eh, "MPI_Session_get_errhandler");
    KT_MPI(MPI_Errhandler_free(&got));
    KT_MPI(MPI_Errhandler_free(&eh));
    int before = handled;
    KT_MPI(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    KT_EQ_INT(handled, before + 1);
    KT_MPI(MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN));
    KT_MPI(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    KT_EQ_INT(handled, before + 1);
    KT_MPI(MPI_Session_finalize(&s));
    KT_CHECK(s == MPI_SESSION_NULL, "MPI_Session_finalize did not set MPI_SESSION_NULL");
}

int main(int argc, char **argv)
{
    int world = argc > 1 && !strcmp(argv[1], "world");
    int rank = -1, size = -1, provided;
    if (world) {
        KT_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    } else {
        /* the job's size from a session's mpi://WORLD */
        MPI_Session s;
        MPI_Info info;
        char v[32];
        int len = sizeof v, flag;
        KT_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
        KT_MPI(MPI_Session_get_pset_info(s, "mpi://WORLD", &info));
        KT_MPI(MPI_Info_get_string(info, "mpi_size", &len, v, &flag));
        KT_MPI(MPI_Info_free(&info));
        size = atoi(v);
        MPI_Group g;
        KT_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
        KT_MPI(MPI_Group_rank(g, &rank));
        KT_MPI(MPI_Group_free(&g));
        KT_MPI(MPI_Session_finalize(&s));
    }
    /* the rounds over mpi://WORLD are collective; then rank 0 does rounds of its own */
    for (int round = 0; round < 3; round++) round_of_sessions(round, size);
    if (rank == 0) {
        /* rounds of its own: a session whose communicators span only itself */
        for (int round = 0; round < 2; round++) {
            MPI_Session s;
            MPI_Group g;
            MPI_Comm c;
            KT_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
            KT_MPI(MPI_Group_from_session_pset(s, "mpi://SELF", &g));
            KT_MPI(MPI_Comm_create_from_group(g, "org.mpi4py.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
            KT_MPI(MPI_Barrier(c));
            KT_MPI(MPI_Comm_free(&c));
            KT_MPI(MPI_Group_free(&g));
            KT_MPI(MPI_Session_finalize(&s));
        }
    }

    if (!world) {
        /* MPI_Init after the sessions */
        KT_MPI(MPI_Init(&argc, &argv));
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        int wr, ws;
        MPI_Comm_rank(MPI_COMM_WORLD, &wr);
        MPI_Comm_size(MPI_COMM_WORLD, &ws);
        KT_EQ_INT(wr, rank);
        KT_EQ_INT(ws, size);
    }
    /* MPI_SESSION_NULL: MPI_ERR_SESSION (through MPI_COMM_SELF's handler) */
    MPI_Session null = MPI_SESSION_NULL;
    MPI_Group g;
    MPI_Info info;
    MPI_Errhandler eh;
    int np;
    KT_ERRCLASS(MPI_Session_get_num_psets(null, MPI_INFO_NULL, &np), MPI_ERR_SESSION);
    KT_ERRCLASS(MPI_Session_get_info(null, &info), MPI_ERR_SESSION);
    KT_ERRCLASS(MPI_Session_get_pset_info(null, "mpi://WORLD", &info), MPI_ERR_SESSION);
    KT_ERRCLASS(MPI_Group_from_session_pset(null, "mpi://WORLD", &g), MPI_ERR_SESSION);
    KT_ERRCLASS(MPI_Session_set_errhandler(null, MPI_ERRORS_RETURN), MPI_ERR_SESSION);
    KT_ERRCLASS(MPI_Session_get_errhandler(null, &eh), MPI_ERR_SESSION);
    KT_ERRCLASS(MPI_Session_finalize(&null), MPI_ERR_SESSION);

    /* a session still open at MPI_Finalize */
    MPI_Session left;
    if (world) KT_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &left));
    int one = 1, sum = 0;
    KT_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    KT_EQ_INT(sum, size);
    KT_MPI(MPI_Finalize());
    return 0;
}
