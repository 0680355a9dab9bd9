/* conf_split_type_inter: MPI_Comm_split_type on an intercommunicator
 * (issue 16; MPI 4.1 sec. 7.4.2 lets comm be an intercommunicator: as
 * MPI_Comm_split does on one, each group is split by type and the parts of
 * the same type in the two groups form a new intercommunicator).  All ranks
 * run on one host here, so MPI_COMM_TYPE_SHARED keeps both groups whole;
 * ranks passing MPI_UNDEFINED get MPI_COMM_NULL and are left out of the
 * others' intercommunicator; MPI_COMM_TYPE_HW_GUIDED with
 * mpi_hw_resource_type "mpi_shared_memory" does the same and the new
 * communicator's info says the type.  Was MPI_ERR_COMM "intercommunicators
 * are not supported here yet".  Needs 4 or more ranks. */
#include "kt.h"

static void check_inter(MPI_Comm c, int lsize, int rsize, int *lworld, int *rworld)
{
    int flag, n, r;
    KT_MPI(MPI_Comm_test_inter(c, &flag));
    KT_CHECK(flag, "the new communicator is not an intercommunicator");
    KT_MPI(MPI_Comm_size(c, &n));
    KT_EQ_INT(n, lsize);
    KT_MPI(MPI_Comm_remote_size(c, &n));
    KT_EQ_INT(n, rsize);
    KT_MPI(MPI_Comm_rank(c, &r));
    /* the world ranks of both groups, in their order */
    int wr, sum = 0, want = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    KT_EQ_INT(lworld[r], wr);
    int *got = malloc(sizeof(int) * (size_t)rsize);
    KT_MPI(MPI_Allgather(&wr, 1, MPI_INT, got, 1, MPI_INT, c));     /* the remote group's */
    for (int i = 0; i < rsize; i++) KT_EQ_INT(got[i], rworld[i]);
    free(got);
    KT_MPI(MPI_Allreduce(&wr, &sum, 1, MPI_INT, MPI_SUM, c));
    for (int i = 0; i < rsize; i++) want += rworld[i];
    KT_EQ_INT(sum, want);
}

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 4) KT_FAIL("needs 4 or more ranks");

    /* evens and odds */
    int half = rank % 2, nl = (size + 1 - half) / 2, nr = size - nl;
    MPI_Comm local, inter, c;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, half, rank, &local));
    KT_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - half, 7, &inter));
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int lw[64], rw[64];
    for (int i = 0; i < nl; i++) lw[i] = 2 * i + half;
    for (int i = 0; i < nr; i++) rw[i] = 2 * i + 1 - half;

    KT_MPI(MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c));
    KT_CHECK(c != MPI_COMM_NULL, "MPI_COMM_TYPE_SHARED gave MPI_COMM_NULL");
    check_inter(c, nl, nr, lw, rw);
    KT_MPI(MPI_Comm_free(&c));

    /* the groups' rank 0 (world ranks 0 and 1) pass MPI_UNDEFINED; keys reverse the order */
    int lrank;
    MPI_Comm_rank(local, &lrank);
    KT_MPI(MPI_Comm_split_type(inter, lrank == 0 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, &c));
    if (lrank == 0) {
        KT_CHECK(c == MPI_COMM_NULL, "MPI_UNDEFINED did not give MPI_COMM_NULL");
    } else {
        KT_CHECK(c != MPI_COMM_NULL, "MPI_COMM_TYPE_SHARED gave MPI_COMM_NULL");
        int l2[64], r2[64];
        for (int i = 0; i < nl - 1; i++) l2[i] = lw[nl - 1 - i];
        for (int i = 0; i < nr - 1; i++) r2[i] = rw[nr - 1 - i];
        check_inter(c, nl - 1, nr - 1, l2, r2);
        KT_MPI(MPI_Comm_free(&c));
    }

    /* guided by a resource type the standard names */
    MPI_Info info;
    KT_MPI(MPI_Info_create(&info));
    KT_MPI(MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory"));
    KT_MPI(MPI_Comm_split_type(inter, MPI_COMM_TYPE_HW_GUIDED, 0, info, &c));
    KT_MPI(MPI_Info_free(&info));
    KT_CHECK(c != MPI_COMM_NULL, "MPI_COMM_TYPE_HW_GUIDED gave MPI_COMM_NULL");
    check_inter(c, nl, nr, lw, rw);
    MPI_Info used;
    char v[64];
    int len = sizeof v, flag;
    KT_MPI(MPI_Comm_get_info(c, &used));
    KT_MPI(MPI_Info_get_string(used, "mpi_hw_resource_type", &len, v, &flag));
    KT_CHECK(flag && !strcmp(v, "mpi_shared_memory"), "mpi_hw_resource_type of the new communicator: %s",
             flag ? v : "(none)");
    KT_MPI(MPI_Info_free(&used));
    KT_MPI(MPI_Comm_free(&c));

    KT_MPI(MPI_Comm_free(&inter));
    KT_MPI(MPI_Comm_free(&local));
    KT_MPI(MPI_Finalize());
    return 0;
}
