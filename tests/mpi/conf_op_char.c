/* conf_op_char: MPI_CHAR in reductions and accumulates (issue 16 item 8).
 * The standard's op tables list MPI_SIGNED_CHAR and MPI_UNSIGNED_CHAR among
 * the C integers, not MPI_CHAR; Open MPI and MPICH accept MPI_CHAR wherever
 * a C integer goes (a widely used benchmark suite reduces MPI_CHAR with
 * MPI_SUM by default), and so does Kumi: Allreduce, Reduce_local with every
 * C-integer op, MPI_Accumulate and MPI_Fetch_and_op on a window.  MPI_WCHAR
 * stays refused with MPI_ERR_OP (as in Open MPI). */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    char in[4], out[4];
    for (int i = 0; i < 4; i++) in[i] = (char)(rank + i);
    KT_MPI(MPI_Allreduce(in, out, 4, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < 4; i++)
        KT_EQ_INT(out[i], (char)(size * (size - 1) / 2 + size * i));
    KT_MPI(MPI_Allreduce(in, out, 4, MPI_CHAR, MPI_MAX, MPI_COMM_WORLD));
    KT_EQ_INT(out[0], size - 1);
    KT_MPI(MPI_Allreduce(in, out, 4, MPI_CHAR, MPI_BXOR, MPI_COMM_WORLD));

    static const MPI_Op ops[] = { MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR,
                                  MPI_BAND, MPI_BOR, MPI_BXOR };
    static const char *names[] = { "SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR" };
    for (int k = 0; k < 10; k++) {
        char a = 6, b = 3;
        int rc = MPI_Reduce_local(&a, &b, 1, MPI_CHAR, ops[k]);
        KT_CHECK(rc == MPI_SUCCESS, "MPI_Reduce_local(MPI_CHAR, MPI_%s) refused", names[k]);
        static const char want[] = { 9, 18, 6, 3, 1, 1, 0, 2, 7, 5 };
        KT_CHECK(b == want[k], "MPI_Reduce_local(MPI_CHAR, MPI_%s) gave %d, expected %d", names[k], b, want[k]);
    }
    wchar_t wa = 1, wb = 2;
    KT_ERRCLASS(MPI_Reduce_local(&wa, &wb, 1, MPI_WCHAR, MPI_SUM), MPI_ERR_OP);
    KT_ERRCLASS(MPI_Allreduce(in, out, 1, MPI_CHAR, MPI_MAXLOC, MPI_COMM_WORLD), MPI_ERR_OP);

    /* one-sided: every rank adds to rank 0's counter, then fetches and adds */
    char *base;
    MPI_Win win;
    KT_MPI(MPI_Win_allocate(2, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    base[0] = base[1] = 0;
    KT_MPI(MPI_Win_fence(0, win));
    char one = 1, got = -1;
    KT_MPI(MPI_Accumulate(&one, 1, MPI_CHAR, 0, 0, 1, MPI_CHAR, MPI_SUM, win));
    KT_MPI(MPI_Win_fence(0, win));
    KT_MPI(MPI_Fetch_and_op(&one, &got, MPI_CHAR, 0, 1, MPI_SUM, win));
    KT_MPI(MPI_Win_fence(0, win));
    KT_CHECK(got >= 0 && got < size, "MPI_Fetch_and_op(MPI_CHAR) fetched %d", got);
    if (rank == 0) {
        KT_EQ_INT(base[0], size);
        KT_EQ_INT(base[1], size);
    }
    KT_MPI(MPI_Win_free(&win));
    KT_MPI(MPI_Finalize());
    return 0;
}
