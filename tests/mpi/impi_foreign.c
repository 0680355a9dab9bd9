/* impi_foreign: Kumi as client 0 (one rank) of an IMPI job whose client 1
 * is tools/impi_server/impi_testhost, a made-up foreign implementation that
 * checks the packets byte for byte (run by tests/scripts/impi_foreign.sh).
 *   impi_foreign DATALEN   (the agreed IMPI_Pk_maxlen: long messages are
 *                           3 and 2 times it) */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(argc == 2, "usage: impi_foreign DATALEN");
    int datalen = atoi(argv[1]), peer = size - 1;
    KT_EQ_INT(size, 2);
    KT_EQ_INT(rank, 0);
    int iv[3] = { 1, -2, 0x01020304 };
    KT_MPI(MPI_Send(iv, 3, MPI_INT, peer, 5, MPI_COMM_WORLD));
    double dv[2] = { 1.5, -0.0 };
    KT_MPI(MPI_Send(dv, 2, MPI_DOUBLE, peer, 6, MPI_COMM_WORLD));
    short sv = 0x0102;
    KT_MPI(MPI_Ssend(&sv, 1, MPI_SHORT, peer, 7, MPI_COMM_WORLD));
    int n = 3 * datalen / 4;
    int *big = malloc((size_t)n * sizeof *big);
    for (int i = 0; i < n; i++) big[i] = i;
    KT_MPI(MPI_Send(big, n, MPI_INT, peer, 8, MPI_COMM_WORLD));
    int r2[2];
    KT_MPI(MPI_Recv(r2, 2, MPI_INT, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_CHECK(r2[0] == 7 && r2[1] == -8, "ints from the foreign host: %d %d", r2[0], r2[1]);
    double d;
    KT_MPI(MPI_Recv(&d, 1, MPI_DOUBLE, peer, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_CHECK(d == -2.25, "double from the foreign host: %g", d);
    int m = 2 * datalen / 4;
    MPI_Status st;
    KT_MPI(MPI_Recv(big, n, MPI_INT, MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &st));
    int cnt;
    MPI_Get_count(&st, MPI_INT, &cnt);
    KT_EQ_INT(cnt, m);
    KT_EQ_INT(st.MPI_SOURCE, peer);
    for (int i = 0; i < m; i++) KT_EQ_INT(big[i], 1000 + i);
    int last = 42;
    KT_MPI(MPI_Send(&last, 1, MPI_INT, peer, 12, MPI_COMM_WORLD));
    printf("impi_foreign: rank 0: all checks passed\n");
    free(big);
    MPI_Finalize();
    return 0;
}
