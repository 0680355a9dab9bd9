/* Communicators: rank/size, dup, split (colors, keys, MPI_UNDEFINED), compare,
 * names, independent traffic on duplicated communicators, many creations. */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size, res;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int srank, ssize;
    KT_MPI(MPI_Comm_rank(MPI_COMM_SELF, &srank));
    KT_MPI(MPI_Comm_size(MPI_COMM_SELF, &ssize));
    KT_EQ_INT(srank, 0);
    KT_EQ_INT(ssize, 1);

    MPI_Comm dup;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    KT_MPI(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res));
    KT_EQ_INT(res, MPI_CONGRUENT);
    KT_MPI(MPI_Comm_compare(dup, dup, &res));
    KT_EQ_INT(res, MPI_IDENT);
    if (size > 1) {
        KT_MPI(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &res));
        KT_EQ_INT(res, MPI_UNEQUAL);
    }

    /* messages on dup and world do not match each other */
    if (size > 1) {
        int a = -1, b = -1;
        if (rank == 0) {
            int x = 111, y = 222;
            KT_MPI(MPI_Send(&x, 1, MPI_INT, 1, 5, dup));
            KT_MPI(MPI_Send(&y, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
        } else if (rank == 1) {
            KT_MPI(MPI_Recv(&b, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            KT_MPI(MPI_Recv(&a, 1, MPI_INT, 0, 5, dup, MPI_STATUS_IGNORE));
            KT_EQ_INT(a, 111);
            KT_EQ_INT(b, 222);
        }
    }

    /* split: even/odd ranks, key reverses the order */
    MPI_Comm half;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half));
    int hr, hs;
    KT_MPI(MPI_Comm_rank(half, &hr));
    KT_MPI(MPI_Comm_size(half, &hs));
    int expect_size = (size + (rank % 2 ? 0 : 1)) / 2;
    KT_EQ_INT(hs, expect_size);
    /* ranks with my parity, ordered by decreasing world rank */
    int pos = 0;
    for (int r = size - 1; r >= 0; r--)
        if (r % 2 == rank % 2) { if (r == rank) break; pos++; }
    KT_EQ_INT(hr, pos);
    /* sum of world ranks inside the half */
    int sum = 0, want = 0;
    KT_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half));
    for (int r = 0; r < size; r++) if (r % 2 == rank % 2) want += r;
    KT_EQ_INT(sum, want);

    /* MPI_UNDEFINED gives MPI_COMM_NULL */
    MPI_Comm none;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &none));
    if (rank == 0) {
        KT_CHECK(none != MPI_COMM_NULL, "rank 0 should get a communicator");
        int ns;
        MPI_Comm_size(none, &ns);
        KT_EQ_INT(ns, 1);
        MPI_Comm_free(&none);
    } else {
        KT_CHECK(none == MPI_COMM_NULL, "MPI_UNDEFINED color should give MPI_COMM_NULL");
    }

    /* same processes, other order: similar */
    MPI_Comm rev;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev));
    KT_MPI(MPI_Comm_compare(MPI_COMM_WORLD, rev, &res));
    KT_EQ_INT(res, size > 1 ? MPI_SIMILAR : MPI_CONGRUENT);

    /* names */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    KT_MPI(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    KT_CHECK(!strcmp(name, "MPI_COMM_WORLD"), "name '%s'", name);
    KT_MPI(MPI_Comm_set_name(dup, "my dup"));
    KT_MPI(MPI_Comm_get_name(dup, name, &len));
    KT_CHECK(!strcmp(name, "my dup") && len == 6, "name '%s'", name);

    /* creating and freeing many communicators recycles context ids */
    for (int i = 0; i < 3000; i++) {
        MPI_Comm c;
        KT_MPI(MPI_Comm_dup(half, &c));
        KT_MPI(MPI_Comm_free(&c));
    }
    KT_MPI(MPI_Comm_free(&rev));
    KT_MPI(MPI_Comm_free(&half));
    KT_MPI(MPI_Comm_free(&dup));
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("core_comm: ok\n");
    MPI_Finalize();
    return 0;
}
