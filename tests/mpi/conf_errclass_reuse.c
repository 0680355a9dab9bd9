/* conf_errclass_reuse: MPI 5.0 MPI_Remove_error_class / _code / _string
 * (issue 16).  A class that still has codes cannot be removed (MPI_ERR_ARG,
 * the message names the class and says it has codes), and once its codes are
 * gone it can; and the numbers of removed classes and codes are given out
 * again: a program that adds and removes a class, a code and a string a
 * million times stays within a small range of numbers (it reached ~17
 * million distinct numbers before, and each removal scanned them all). */
#include "kt.h"

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    int c1, k1, k2, cls, len;
    char s[MPI_MAX_ERROR_STRING];
    KT_MPI(MPI_Add_error_class(&c1));
    KT_MPI(MPI_Add_error_code(c1, &k1));
    KT_MPI(MPI_Add_error_code(c1, &k2));
    int rc = MPI_Remove_error_class(c1);
    KT_CHECK(rc != MPI_SUCCESS, "removing a class with two codes succeeded");
    KT_MPI(MPI_Error_class(rc, &cls));
    KT_EQ_INT(cls, MPI_ERR_ARG);
    KT_MPI(MPI_Error_string(rc, s, &len));
    KT_CHECK(strstr(s, "MPI_Remove_error_class") && strstr(s, "code"), "message: '%s'", s);
    KT_MPI(MPI_Remove_error_code(k1));
    KT_ERRCLASS(MPI_Remove_error_class(c1), MPI_ERR_ARG);       /* k2 is left */
    KT_MPI(MPI_Remove_error_code(k2));
    KT_MPI(MPI_Remove_error_class(c1));
    KT_ERRCLASS(MPI_Error_class(c1, &cls), MPI_ERR_ARG);

    /* the same class and code numbers come back */
    int lo = -1, hi = -1;
    for (int i = 0; i < 1000000; i++) {
        int c, k;
        KT_MPI(MPI_Add_error_class(&c));
        KT_MPI(MPI_Add_error_code(c, &k));
        if ((i & 1023) == 0) {
            KT_MPI(MPI_Add_error_string(k, "temporary"));
            KT_MPI(MPI_Remove_error_string(k));
        }
        int m = c < k ? c : k, M = c > k ? c : k;
        if (lo < 0 || m < lo) lo = m;
        if (M > hi) hi = M;
        if (hi - lo > 16)
            KT_FAIL("iteration %d: class %d, code %d: the numbers of removed classes and codes are not "
                    "reused (range %d..%d)", i, c, k, lo, hi);
        KT_MPI(MPI_Error_class(k, &cls));
        KT_EQ_INT(cls, c);
        KT_ERRCLASS(MPI_Remove_error_class(c), MPI_ERR_ARG);
        KT_MPI(MPI_Remove_error_code(k));
        KT_MPI(MPI_Remove_error_class(c));
    }
    /* MPI_LASTUSEDCODE stays in that range too */
    int *last, flag;
    KT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    KT_CHECK(flag && *last <= hi, "MPI_LASTUSEDCODE %d above %d", *last, hi);
    KT_MPI(MPI_Finalize());
    return 0;
}
