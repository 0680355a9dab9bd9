/* Contiguous derived types whose data does not start at the buffer
 * (true_lb != 0), and absolute addresses with MPI_BOTTOM, through send,
 * receive and a collective, at eager and rendezvous sizes. */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int ns[] = { 3, 30000 };              /* eager, rendezvous (120 KB) */
    for (int k = 0; k < 2; k++) {
        int n = ns[k], off = 5;
        int *a = malloc(sizeof(int) * (n + off)), *b = malloc(sizeof(int) * (n + off));
        for (int i = 0; i < n + off; i++) { a[i] = rank * 1000000 + i; b[i] = -1; }
        /* one block of n ints, off ints into the buffer */
        MPI_Aint disp = off * (MPI_Aint)sizeof(int);
        MPI_Datatype t;
        KT_MPI(MPI_Type_create_hindexed(1, &n, &disp, MPI_INT, &t));
        KT_MPI(MPI_Type_commit(&t));
        KT_MPI(MPI_Sendrecv(a, 1, t, right, 1, b, 1, t, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < off; i++) KT_EQ_INT(b[i], -1);
        for (int i = off; i < n + off; i++) KT_EQ_INT(b[i], left * 1000000 + i);
        /* absolute addresses: MPI_BOTTOM on both sides */
        MPI_Aint sa, ra;
        KT_MPI(MPI_Get_address(&a[off], &sa));
        KT_MPI(MPI_Get_address(&b[off], &ra));
        MPI_Datatype st, rt;
        KT_MPI(MPI_Type_create_hindexed(1, &n, &sa, MPI_INT, &st));
        KT_MPI(MPI_Type_create_hindexed(1, &n, &ra, MPI_INT, &rt));
        KT_MPI(MPI_Type_commit(&st));
        KT_MPI(MPI_Type_commit(&rt));
        for (int i = 0; i < n + off; i++) b[i] = -2;
        KT_MPI(MPI_Sendrecv(MPI_BOTTOM, 1, st, right, 2, MPI_BOTTOM, 1, rt, left, 2, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
        for (int i = 0; i < off; i++) KT_EQ_INT(b[i], -2);
        for (int i = off; i < n + off; i++) KT_EQ_INT(b[i], left * 1000000 + i);
        /* a collective with the offset type: bcast from the last rank */
        for (int i = 0; i < n + off; i++) b[i] = rank == size - 1 ? 7 * i : -3;
        KT_MPI(MPI_Bcast(b, 1, t, size - 1, MPI_COMM_WORLD));
        for (int i = 0; i < off; i++) KT_EQ_INT(b[i], rank == size - 1 ? 7 * i : -3);
        for (int i = off; i < n + off; i++) KT_EQ_INT(b[i], 7 * i);
        MPI_Type_free(&t); MPI_Type_free(&st); MPI_Type_free(&rt);
        free(a); free(b);
    }
    MPI_Finalize();
    return 0;
}
