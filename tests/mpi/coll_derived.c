/* Collectives with a derived datatype whose extent differs from its size. */
#include "kt.h"

static int rank, size;
static int val(int r, int i) { return r * 1000 + i; }

/* A datatype with holes whose extent differs from its size: 2 ints of every 3,
 * resized to an extent of 4 ints. */
static void test_derived(void)
{
    MPI_Datatype vec, t;
    KT_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));        /* ints 0 and 2 */
    KT_MPI(MPI_Type_create_resized(vec, 0, 4 * sizeof(int), &t));
    KT_MPI(MPI_Type_commit(&t));
    int n = size, per = 3;                                  /* 3 elements of t per rank */
    int *s = malloc(sizeof(int) * 4 * per), *r = malloc(sizeof(int) * 4 * per * n);
    int *packed = malloc(sizeof(int) * 2 * per * n);
    for (int i = 0; i < 4 * per; i++) s[i] = i % 4 == 1 || i % 4 == 3 ? -7 : val(rank, i);
    /* gather as t, receive into plain ints on the root */
    for (int root = 0; root < n; root++) {
        for (int i = 0; i < 2 * per * n; i++) packed[i] = -1;
        KT_MPI(MPI_Gather(s, per, t, packed, 2 * per, MPI_INT, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int q = 0; q < n; q++)
                for (int e = 0; e < per; e++) {
                    KT_EQ_INT(packed[q * 2 * per + 2 * e], val(q, 4 * e));
                    KT_EQ_INT(packed[q * 2 * per + 2 * e + 1], val(q, 4 * e + 2));
                }
    }
    /* allgather into t: holes stay untouched */
    for (int i = 0; i < 4 * per * n; i++) r[i] = -2;
    KT_MPI(MPI_Allgather(s, per, t, r, per, t, MPI_COMM_WORLD));
    for (int q = 0; q < n; q++)
        for (int i = 0; i < 4 * per; i++)
            KT_EQ_INT(r[q * 4 * per + i], i % 4 == 1 || i % 4 == 3 ? -2 : val(q, i));
    /* bcast of t from the last rank */
    for (int i = 0; i < 4 * per * n; i++) r[i] = rank == n - 1 ? val(n - 1, i) : -2;
    KT_MPI(MPI_Bcast(r, per * n, t, n - 1, MPI_COMM_WORLD));
    for (int i = 0; i < 4 * per * n; i++)
        KT_EQ_INT(r[i], i % 4 == 1 || i % 4 == 3 ? (rank == n - 1 ? val(n - 1, i) : -2) : val(n - 1, i));
    /* alltoall with t */
    int *a = malloc(sizeof(int) * 4 * n), *b = malloc(sizeof(int) * 4 * n);
    for (int i = 0; i < 4 * n; i++) { a[i] = rank * 100 + i; b[i] = -4; }
    KT_MPI(MPI_Alltoall(a, 1, t, b, 1, t, MPI_COMM_WORLD));
    for (int q = 0; q < n; q++) {
        KT_EQ_INT(b[4 * q], q * 100 + 4 * rank);
        KT_EQ_INT(b[4 * q + 1], -4);
        KT_EQ_INT(b[4 * q + 2], q * 100 + 4 * rank + 2);
        KT_EQ_INT(b[4 * q + 3], -4);
    }
    free(a); free(b); free(s); free(r); free(packed);
    MPI_Type_free(&t);
    MPI_Type_free(&vec);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_derived();
    MPI_Finalize();
    return 0;
}
