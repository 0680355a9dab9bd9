/* Large messages (8 MiB, rendezvous) both ways at once, many small ones,
 * Sendrecv and Sendrecv_replace in a ring, self sends. */
#include "kt.h"
#include <stdint.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    size_t n = (8u << 20) / sizeof(uint32_t);
    uint32_t *s = malloc(n * 4), *r = malloc(n * 4);
    for (size_t i = 0; i < n; i++) s[i] = (uint32_t)(rank * 2654435761u + i);
    MPI_Request rq[2];
    MPI_Status st;
    for (int rep = 0; rep < 2; rep++) {
        memset(r, 0, n * 4);
        KT_MPI(MPI_Irecv(r, (int)n, MPI_UINT32_T, left, 1, MPI_COMM_WORLD, &rq[0]));
        KT_MPI(MPI_Isend(s, (int)n, MPI_UINT32_T, right, 1, MPI_COMM_WORLD, &rq[1]));
        KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        for (size_t i = 0; i < n; i++)
            if (r[i] != (uint32_t)(left * 2654435761u + i)) KT_FAIL("word %zu of 8 MiB wrong", i);
    }
    /* to self, rendezvous size */
    KT_MPI(MPI_Sendrecv(s, (int)n, MPI_UINT32_T, rank, 2, r, (int)n, MPI_UINT32_T, rank, 2, MPI_COMM_WORLD, &st));
    KT_EQ_INT(st.MPI_SOURCE, rank);
    KT_CHECK(memcmp(s, r, n * 4) == 0, "self 8 MiB");
    /* many small ones */
    for (int i = 0; i < 20000; i++) {
        int x = rank * 100000 + i, y = -1;
        KT_MPI(MPI_Sendrecv(&x, 1, MPI_INT, right, 3, &y, 1, MPI_INT, left, 3, MPI_COMM_WORLD, &st));
        if (y != left * 100000 + i) KT_FAIL("small %d: %d", i, y);
    }
    /* Sendrecv_replace: the value travels around the ring */
    int sizes[2] = { 5, 300000 };
    for (int k = 0; k < 2; k++) {
        int m = sizes[k];
        int *b = malloc(m * sizeof(int));
        for (int i = 0; i < m; i++) b[i] = rank + i;
        for (int step = 1; step <= size; step++) {
            KT_MPI(MPI_Sendrecv_replace(b, m, MPI_INT, right, 4, left, 4, MPI_COMM_WORLD, &st));
            int from = (rank - step % size + size) % size;
            KT_EQ_INT(b[0], from);
            KT_EQ_INT(b[m - 1], from + m - 1);
            int c; MPI_Get_count(&st, MPI_INT, &c);
            KT_EQ_INT(c, m);
        }
        free(b);
    }
    free(s); free(r);
    MPI_Finalize();
    return 0;
}
