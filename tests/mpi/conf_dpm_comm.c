/* conf_dpm_comm: MPI_Comm_disconnect, MPI_Comm_get_parent and
 * MPI_UNIVERSE_SIZE (issue 23, dynamic processes).
 *
 *   conf_dpm_comm [U]   MPI_Comm_disconnect of a duplicate of MPI_COMM_WORLD
 *                       after traffic on it, and of an intercommunicator
 *                       (MPI_Intercomm_create) after traffic on it: the handle
 *                       becomes MPI_COMM_NULL and the other communicators
 *                       keep working; MPI_COMM_WORLD / MPI_COMM_SELF cannot be
 *                       disconnected (MPI_ERR_COMM), NULL is MPI_ERR_ARG;
 *                       MPI_Comm_get_parent gives MPI_COMM_NULL (mpiexec
 *                       started this process); the MPI_UNIVERSE_SIZE
 *                       attribute is U (given: the slots of mpiexec's -host),
 *                       else at least the size of MPI_COMM_WORLD. */
#include "kt.h"

static void errmsg(int rc, int cls, const char *word)
{
    int c = -1, len;
    char s[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &c);
    KT_EQ_INT(c, cls);
    MPI_Error_string(rc, s, &len);
    KT_CHECK(strstr(s, word) != NULL, "message '%s' does not name '%s'", s, word);
}

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm parent = MPI_COMM_WORLD;
    KT_MPI(MPI_Comm_get_parent(&parent));
    KT_CHECK(parent == MPI_COMM_NULL, "a process mpiexec started has a parent");
    errmsg(MPI_Comm_get_parent(NULL), MPI_ERR_ARG, "parent");

    int *usize, flag = 0;
    KT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag));
    KT_CHECK(flag, "MPI_UNIVERSE_SIZE not set");
    if (argc > 1) KT_EQ_INT(*usize, atoi(argv[1]));
    else KT_CHECK(*usize >= size, "MPI_UNIVERSE_SIZE %d below the job's size %d", *usize, size);

    /* an intracommunicator: ring traffic, then disconnect */
    MPI_Comm dup;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int out = rank * 10, in = -1;
    KT_MPI(MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 7, &in, 1, MPI_INT, (rank + size - 1) % size, 7, dup,
                        MPI_STATUS_IGNORE));
    KT_EQ_INT(in, ((rank + size - 1) % size) * 10);
    KT_MPI(MPI_Comm_disconnect(&dup));
    KT_CHECK(dup == MPI_COMM_NULL, "handle not MPI_COMM_NULL after MPI_Comm_disconnect");

    /* an intercommunicator between the even and the odd ranks */
    if (size >= 2) {
        MPI_Comm half, inter;
        KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
        KT_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 3, &inter));
        int hr, rsize;
        MPI_Comm_rank(half, &hr);
        MPI_Comm_remote_size(inter, &rsize);
        if (hr < rsize) {
            int v = rank, w = -1;
            KT_MPI(MPI_Sendrecv(&v, 1, MPI_INT, hr, 1, &w, 1, MPI_INT, hr, 1, inter, MPI_STATUS_IGNORE));
            KT_EQ_INT(w, rank % 2 ? rank - 1 : rank + 1);
        }
        KT_MPI(MPI_Comm_disconnect(&inter));
        KT_CHECK(inter == MPI_COMM_NULL, "intercommunicator handle not MPI_COMM_NULL after MPI_Comm_disconnect");
        KT_MPI(MPI_Comm_free(&half));
    }

    errmsg(MPI_Comm_disconnect(NULL), MPI_ERR_ARG, "comm");
    MPI_Comm w = MPI_COMM_WORLD, s = MPI_COMM_SELF, n = MPI_COMM_NULL;
    errmsg(MPI_Comm_disconnect(&w), MPI_ERR_COMM, "MPI_COMM_WORLD");
    errmsg(MPI_Comm_disconnect(&s), MPI_ERR_COMM, "MPI_COMM_SELF");
    errmsg(MPI_Comm_disconnect(&n), MPI_ERR_COMM, "comm");
    KT_CHECK(w == MPI_COMM_WORLD, "MPI_COMM_WORLD's handle changed");

    int sum = 0;
    KT_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    KT_EQ_INT(sum, size * (size - 1) / 2);
    KT_MPI(MPI_Finalize());
    if (rank == 0) printf("conf_dpm_comm: ok\n");
    return 0;
}
