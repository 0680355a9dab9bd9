/* impi_foreign: Kumi as client 0 (one or two ranks: one IMPI host) of an
 * IMPI job whose client 1 is tools/impi_server/impi_testhost, a made-up
 * foreign implementation that checks the packets byte for byte (run by
 * tests/scripts/impi_foreign.sh).
 *   impi_foreign DATALEN   (the agreed IMPI_Pk_maxlen: long messages are
 *                           3 and 2 times it)
 * Every rank first checks MPI_TAG_UB: the job's IMPI_Tag_ub, the minimum of
 * the clients' C_TAGUB (the foreign host announces 32767), and that a send
 * with tag 32768 is refused with MPI_ERR_TAG.  Rank 0 runs the foreign
 * host's script; rank 1 (if any), once rank 0 is through it, sends tag 13
 * and receives tag 14 on the same host connection. */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(argc == 2, "usage: impi_foreign DATALEN");
    int datalen = atoi(argv[1]), peer = size - 1;
    KT_CHECK(size == 2 || size == 3, "size %d", size);
    KT_CHECK(rank < size - 1, "rank %d is not Kumi's", rank);
    int *ub, flag;
    KT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
    KT_CHECK(flag && *ub == 32767, "MPI_TAG_UB is %d, the job agreed IMPI_Tag_ub 32767", flag ? *ub : -1);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int one = 1, cls = MPI_SUCCESS;
    int erc = MPI_Send(&one, 1, MPI_INT, peer, 32768, MPI_COMM_WORLD);
    if (erc != MPI_SUCCESS) MPI_Error_class(erc, &cls);
    KT_CHECK(cls == MPI_ERR_TAG, "MPI_Send with tag 32768 > MPI_TAG_UB: error class %d, expected MPI_ERR_TAG", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (rank == 1) {                         /* after rank 0's part: one more proc on the same host */
        int go;
        KT_MPI(MPI_Recv(&go, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        int v = 0x11223344, w = 0;
        KT_MPI(MPI_Send(&v, 1, MPI_INT, peer, 13, MPI_COMM_WORLD));
        KT_MPI(MPI_Recv(&w, 1, MPI_INT, peer, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_EQ_INT(w, -5);
        printf("impi_foreign: rank 1: all checks passed\n");
        MPI_Finalize();
        return 0;
    }
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
    if (size == 3) KT_MPI(MPI_Send(&last, 1, MPI_INT, 1, 20, MPI_COMM_WORLD));
    printf("impi_foreign: rank 0: all checks passed\n");
    free(big);
    MPI_Finalize();
    return 0;
}
