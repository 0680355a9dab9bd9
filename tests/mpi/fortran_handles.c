/* Integer handles in C: MPI_<Handle>_c2f / _f2c and the standard ABI's
 * _toint / _fromint (predefined handles keep their ABI value; user objects get
 * stable integers that convert back to the same object; freed handles become
 * MPI_*_NULL), and MPI_Status_c2f / f2c / f08 round trips. */
#include "kt.h"

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* predefined handles: the ABI constants, both ways */
    KT_EQ_INT(MPI_Comm_c2f(MPI_COMM_WORLD), 0x101);
    KT_EQ_INT(MPI_Comm_toint(MPI_COMM_SELF), 0x102);
    KT_EQ_INT(MPI_Comm_c2f(MPI_COMM_NULL), 0x100);
    KT_CHECK(MPI_Comm_f2c(0x101) == MPI_COMM_WORLD);
    KT_CHECK(MPI_Comm_fromint(0x100) == MPI_COMM_NULL);
    KT_EQ_INT(MPI_Type_c2f(MPI_INTEGER), 0x219);
    KT_CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE);
    KT_CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_SUM)) == MPI_SUM);
    KT_CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL);
    KT_CHECK(MPI_Errhandler_fromint(MPI_Errhandler_toint(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN);
    KT_CHECK(MPI_Group_f2c(MPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY);
    KT_CHECK(MPI_Info_f2c(MPI_Info_c2f(MPI_INFO_NULL)) == MPI_INFO_NULL);
    KT_CHECK(MPI_Win_f2c(MPI_Win_c2f(MPI_WIN_NULL)) == MPI_WIN_NULL);
    KT_CHECK(MPI_File_f2c(MPI_File_c2f(MPI_FILE_NULL)) == MPI_FILE_NULL);
    KT_CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NO_PROC)) == MPI_MESSAGE_NO_PROC);
    KT_CHECK(MPI_Session_f2c(MPI_Session_c2f(MPI_SESSION_NULL)) == MPI_SESSION_NULL);

    /* user objects: an integer outside the predefined range, stable, and usable */
    MPI_Comm dup;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Fint fdup = MPI_Comm_c2f(dup);
    KT_CHECK(fdup >= 0x1000, "user handle integer %d", (int)fdup);
    KT_EQ_INT(MPI_Comm_c2f(dup), fdup);
    KT_EQ_INT(MPI_Comm_toint(dup), fdup);
    KT_CHECK(MPI_Comm_f2c(fdup) == dup);
    KT_CHECK(MPI_Comm_fromint(fdup) == dup);
    int n = 0;
    KT_MPI(MPI_Comm_size(MPI_Comm_f2c(fdup), &n));
    KT_EQ_INT(n, size);

    MPI_Datatype vec;
    KT_MPI(MPI_Type_contiguous(3, MPI_INT, &vec));
    MPI_Fint fvec = MPI_Type_c2f(vec);
    KT_CHECK(fvec >= 0x1000 && fvec != fdup, "datatype integer %d (comm %d)", (int)fvec, (int)fdup);
    KT_CHECK(MPI_Type_f2c(fvec) == vec);

    /* many requests: each converts back to itself */
    enum { NR = 40 };
    MPI_Request rq[NR];
    MPI_Fint frq[NR];
    int sbuf[NR], rbuf[NR];
    for (int i = 0; i < NR; i++) {
        sbuf[i] = rank * 1000 + i;
        if (i % 2 == 0) MPI_Irecv(&rbuf[i], 1, MPI_INT, rank, i, MPI_COMM_WORLD, &rq[i]);
        else MPI_Isend(&sbuf[i - 1], 1, MPI_INT, rank, i - 1, MPI_COMM_WORLD, &rq[i]);
        frq[i] = MPI_Request_c2f(rq[i]);
    }
    for (int i = 0; i < NR; i++) {
        KT_CHECK(MPI_Request_f2c(frq[i]) == rq[i], "request %d", i);
        for (int j = 0; j < i; j++) KT_CHECK(frq[i] != frq[j], "requests %d and %d share integer %d", i, j, (int)frq[i]);
        MPI_Request r = MPI_Request_f2c(frq[i]);
        KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        KT_CHECK(r == MPI_REQUEST_NULL);
        KT_EQ_INT(MPI_Request_c2f(r), MPI_Request_c2f(MPI_REQUEST_NULL));
    }
    for (int i = 0; i < NR; i += 2) KT_EQ_INT(rbuf[i], rank * 1000 + i);

    /* an integer that names nothing converts to an invalid handle, reported as such */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    KT_ERRCLASS(MPI_Comm_size(MPI_Comm_f2c(0x7ffffff0), &n), MPI_ERR_COMM);

    KT_MPI(MPI_Type_free(&vec));
    KT_MPI(MPI_Comm_free(&dup));
    KT_EQ_INT(MPI_Comm_c2f(dup), 0x100);

    /* statuses: same 8 integers in C, Fortran and f08 form */
    MPI_Status st, st2;
    MPI_F08_status f08;
    MPI_Fint fst[MPI_F_STATUS_SIZE];
    memset(&st, 0, sizeof st);
    st.MPI_SOURCE = 3; st.MPI_TAG = 77; st.MPI_ERROR = MPI_ERR_TRUNCATE;
    KT_MPI(MPI_Status_c2f(&st, fst));
    KT_EQ_INT(fst[MPI_F_SOURCE], 3);
    KT_EQ_INT(fst[MPI_F_TAG], 77);
    KT_EQ_INT(fst[MPI_F_ERROR], MPI_ERR_TRUNCATE);
    memset(&st2, 0xff, sizeof st2);
    KT_MPI(MPI_Status_f2c(fst, &st2));
    KT_CHECK(memcmp(&st, &st2, sizeof st) == 0);
    KT_MPI(MPI_Status_c2f08(&st, &f08));
    KT_EQ_INT(f08.MPI_TAG, 77);
    KT_MPI(MPI_Status_f082c(&f08, &st2));
    KT_EQ_INT(st2.MPI_SOURCE, 3);
    KT_MPI(MPI_Status_f082f(&f08, fst));
    KT_MPI(MPI_Status_f2f08(fst, &f08));
    KT_EQ_INT(f08.MPI_ERROR, MPI_ERR_TRUNCATE);
    KT_ERRCLASS(MPI_Status_c2f(MPI_STATUS_IGNORE, fst), MPI_ERR_ARG);

    /* a status received for real converts to the Fortran indices */
    int v = 5, w = 0;
    KT_MPI(MPI_Sendrecv(&v, 1, MPI_INT, rank, 9, &w, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, &st));
    KT_MPI(MPI_Status_c2f(&st, fst));
    KT_EQ_INT(fst[MPI_F_SOURCE], rank);
    KT_EQ_INT(fst[MPI_F_TAG], 9);
    KT_MPI(MPI_Status_f2c(fst, &st2));
    int cnt = -1;
    KT_MPI(MPI_Get_count(&st2, MPI_INT, &cnt));
    KT_EQ_INT(cnt, 1);

    KT_MPI(MPI_Finalize());
    /* conversions of predefined handles also work after MPI_Finalize */
    KT_EQ_INT(MPI_Comm_c2f(MPI_COMM_WORLD), 0x101);
    return 0;
}
