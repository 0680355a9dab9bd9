/* conf_null_names: the null handles have names (MPI 4.1 sec. 7.8, issue 16
 * item 7): MPI_Comm_get_name(MPI_COMM_NULL) gives "MPI_COMM_NULL", likewise
 * MPI_DATATYPE_NULL and MPI_WIN_NULL; setting a name on them stays an
 * error, and so do NULL output arguments. */
#include "kt.h"

/* EXPECT(call, want): call fills name and len; arguments of a function are
 * evaluated in no set order, so the call runs first here. */
#define EXPECT(call, want) do { len = -1; name[0] = 0; int rc_ = (call); \
    expect_name(#call, rc_, name, len, want); } while (0)

static void expect_name(const char *what, int rc, const char *got, int len, const char *want)
{
    if (rc != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int l = 0;
        MPI_Error_string(rc, s, &l);
        KT_FAIL("%s failed: %s", what, s);
    }
    KT_CHECK(strcmp(got, want) == 0, "%s gave \"%s\", expected \"%s\"", what, got, want);
    KT_EQ_INT(len, (int)strlen(want));
}

int main(int argc, char **argv)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    EXPECT(MPI_Comm_get_name(MPI_COMM_NULL, name, &len), "MPI_COMM_NULL");
    EXPECT(MPI_Type_get_name(MPI_DATATYPE_NULL, name, &len), "MPI_DATATYPE_NULL");
    EXPECT(MPI_Win_get_name(MPI_WIN_NULL, name, &len), "MPI_WIN_NULL");
    /* the others keep theirs */
    EXPECT(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len), "MPI_COMM_WORLD");
    EXPECT(MPI_Type_get_name(MPI_INT, name, &len), "MPI_INT");

    /* what stays an error */
    KT_ERRCLASS(MPI_Comm_set_name(MPI_COMM_NULL, "x"), MPI_ERR_COMM);
    KT_ERRCLASS(MPI_Type_set_name(MPI_DATATYPE_NULL, "x"), MPI_ERR_TYPE);
    KT_ERRCLASS(MPI_Win_set_name(MPI_WIN_NULL, "x"), MPI_ERR_WIN);
    KT_ERRCLASS(MPI_Comm_get_name(MPI_COMM_NULL, NULL, &len), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Type_get_name(MPI_DATATYPE_NULL, name, NULL), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Win_get_name(MPI_WIN_NULL, NULL, &len), MPI_ERR_ARG);
    /* a name set on a null handle does not show */
    EXPECT(MPI_Comm_get_name(MPI_COMM_NULL, name, &len), "MPI_COMM_NULL");
    KT_MPI(MPI_Finalize());
    return 0;
}
