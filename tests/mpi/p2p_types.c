/* Get_count / Get_elements / Get_elements_x for the predefined datatypes. */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype types[] = {
        MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED,
        MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE,
        MPI_LONG_DOUBLE, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T,
        MPI_UINT32_T, MPI_UINT64_T, MPI_C_BOOL, MPI_WCHAR, MPI_BYTE, MPI_AINT, MPI_OFFSET, MPI_COUNT,
        MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_2INT };
    int nt = sizeof types / sizeof types[0];
    int peer = size > 1 ? (rank ^ 1) : rank;
    if (peer >= size) peer = rank;
    char *sb = malloc(1 << 16), *rb = malloc(1 << 16);
    for (int i = 0; i < (1 << 16); i++) sb[i] = (char)(i * 7 + rank);
    for (int t = 0; t < nt; t++) {
        int tsz;
        MPI_Type_size(types[t], &tsz);
        KT_CHECK(tsz > 0, "type %d has size %d", t, tsz);
        int counts[3] = { 0, 1, 1000 };
        for (int c = 0; c < 3; c++) {
            MPI_Status st;
            int n, e;
            MPI_Count ex;
            KT_MPI(MPI_Sendrecv(sb, counts[c], types[t], peer, t, rb, 2000, types[t], peer, t, MPI_COMM_WORLD, &st));
            KT_MPI(MPI_Get_count(&st, types[t], &n));
            KT_EQ_INT(n, counts[c]);
            KT_MPI(MPI_Get_elements(&st, types[t], &e));
            KT_EQ_INT(e, types[t] == MPI_2INT ? 2 * counts[c] : counts[c]);
            KT_MPI(MPI_Get_elements_x(&st, types[t], &ex));
            KT_EQ_INT(ex, e);
            for (int i = 0; i < counts[c] * tsz; i++)
                if (rb[i] != (char)(i * 7 + peer)) KT_FAIL("type %d byte %d", t, i);
            /* a byte count that is not a multiple of the type size */
            if (tsz > 1 && c == 2) {
                KT_MPI(MPI_Sendrecv(sb, tsz + 1, MPI_BYTE, peer, 100 + t, rb, 2000 * tsz, MPI_BYTE, peer, 100 + t,
                                    MPI_COMM_WORLD, &st));
                KT_MPI(MPI_Get_count(&st, types[t], &n));
                KT_EQ_INT(n, MPI_UNDEFINED);
            }
        }
    }
    free(sb); free(rb);
    MPI_Finalize();
    return 0;
}
