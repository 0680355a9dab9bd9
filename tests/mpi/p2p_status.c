/* MPI 5.0 status accessors on a received status and on a user-made one;
 * NULL status is MPI_ERR_ARG. */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = rank, y = -1, right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;
    KT_MPI(MPI_Sendrecv(&x, 1, MPI_INT, right, 77, &y, 1, MPI_INT, left, 77, MPI_COMM_WORLD, &st));
    KT_MPI(MPI_Status_get_source(&st, &v));
    KT_EQ_INT(v, left);
    KT_MPI(MPI_Status_get_tag(&st, &v));
    KT_EQ_INT(v, 77);
    MPI_Status u;
    KT_MPI(MPI_Status_set_source(&u, 5));
    KT_MPI(MPI_Status_set_tag(&u, 9));
    KT_MPI(MPI_Status_set_error(&u, MPI_ERR_TAG));
    KT_EQ_INT(u.MPI_SOURCE, 5);
    KT_EQ_INT(u.MPI_TAG, 9);
    KT_MPI(MPI_Status_get_error(&u, &v));
    KT_EQ_INT(v, MPI_ERR_TAG);
    KT_ERRCLASS(MPI_Status_get_tag(NULL, &v), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Status_set_source(NULL, 1), MPI_ERR_ARG);
    MPI_Finalize();
    return 0;
}
