/* MPI_T_init_thread / MPI_T_finalize (MPI 4.1 sec. 15.3.4): callable before
 * MPI_Init and after MPI_Finalize, nested (the interface stays up until as
 * many MPI_T_finalize as MPI_T_init_thread), MPI_T_ERR_NOT_INITIALIZED
 * outside; handles of an earlier initialization are gone.  A pvar counter
 * read after MPI_Finalize still holds what the run counted. */
#include "kt.h"

static long long read_cvar(const char *name)
{
    int i, count;
    long long v = -1;
    MPI_T_cvar_handle h;
    KT_MPI(MPI_T_cvar_get_index(name, &i));
    KT_MPI(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
    KT_MPI(MPI_T_cvar_read(h, &v));
    KT_MPI(MPI_T_cvar_handle_free(&h));
    return v;
}

int main(int argc, char **argv)
{
    int provided, n, rc;
    /* not initialized */
    KT_EQ_INT(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    KT_EQ_INT(MPI_T_pvar_session_create(NULL), MPI_T_ERR_NOT_INITIALIZED);
    KT_EQ_INT(MPI_T_category_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    KT_EQ_INT(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);

    /* before MPI_Init, nested */
    KT_MPI(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    KT_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    KT_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    KT_MPI(MPI_T_cvar_get_num(&n));
    KT_CHECK(n > 20, "only %d control variables before MPI_Init", n);
    KT_EQ_INT(read_cvar("p2p_tcp_eager_limit"), 512 * 1024);    /* components' parameters too */
    MPI_T_cvar_handle stale;
    int i, count;
    KT_MPI(MPI_T_cvar_get_index("kumi_base_progress_sleep_ms", &i));
    KT_MPI(MPI_T_cvar_handle_alloc(i, NULL, &stale, &count));
    /* set before MPI_Init: the library starts with it */
    long long w = 7, v;
    KT_MPI(MPI_T_cvar_write(stale, &w));
    KT_MPI(MPI_T_finalize());
    KT_MPI(MPI_T_cvar_get_num(&n));            /* still up: one init left */
    KT_MPI(MPI_T_finalize());
    KT_EQ_INT(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    KT_EQ_INT(MPI_T_cvar_read(stale, &v), MPI_T_ERR_NOT_INITIALIZED);
    KT_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    KT_EQ_INT(MPI_T_cvar_read(stale, &v), MPI_T_ERR_INVALID_HANDLE);    /* gone with the last finalize */
    KT_MPI(MPI_T_finalize());

    KT_MPI(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    KT_EQ_INT(read_cvar("kumi_base_progress_sleep_ms"), 7);
    KT_MPI(MPI_T_finalize());
    /* some traffic */
    int token = rank, got = -1;
    KT_MPI(MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT, (rank + size - 1) % size, 0,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_MPI(MPI_Finalize());

    /* after MPI_Finalize */
    KT_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    KT_MPI(MPI_T_cvar_get_num(&n));
    KT_CHECK(n > 20, "only %d control variables after MPI_Finalize", n);
    KT_EQ_INT(read_cvar("kumi_base_progress_sleep_ms"), 7);
    MPI_T_pvar_session ses;
    MPI_T_pvar_handle h;
    KT_MPI(MPI_T_pvar_session_create(&ses));
    KT_MPI(MPI_T_pvar_get_index("p2p_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL, &i));
    KT_MPI(MPI_T_pvar_handle_alloc(ses, i, NULL, &h, &count));
    unsigned long long q = 99;
    KT_MPI(MPI_T_pvar_read(ses, h, &q));
    KT_EQ_INT(q, 0);
    /* a communicator-bound one needs a communicator: there is none any more */
    MPI_Comm world = MPI_COMM_WORLD;
    KT_MPI(MPI_T_pvar_get_index("p2p_comm_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL, &i));
    rc = MPI_T_pvar_handle_alloc(ses, i, &world, &h, &count);
    KT_EQ_INT(rc, MPI_T_ERR_INVALID_HANDLE);
    KT_MPI(MPI_T_pvar_session_free(&ses));
    KT_MPI(MPI_T_finalize());
    KT_EQ_INT(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    if (rank == 0) printf("mpit_init: ok\n");
    return 0;
}
