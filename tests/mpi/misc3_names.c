/* MPI_Type_set_name / get_name (derived, predefined, truncation, dup has
 * no name), MPI_Comm_get_name of a dup (""), MPI_Pcontrol, and
 * MPI_F_STATUS_IGNORE / MPI_F_STATUSES_IGNORE from C linked without
 * libmpifort. */
#include "kt.h"

static void name_is(MPI_Datatype t, const char *want)
{
    char n[MPI_MAX_OBJECT_NAME];
    int len = -1;
    KT_MPI(MPI_Type_get_name(t, n, &len));
    KT_CHECK(!strcmp(n, want), "type name \"%s\", expected \"%s\"", n, want);
    KT_EQ_INT(len, strlen(want));
}

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype v, d;
    char n[MPI_MAX_OBJECT_NAME];
    int len;

    KT_MPI(MPI_Type_vector(3, 2, 4, MPI_INT, &v));
    name_is(v, "");
    KT_MPI(MPI_Type_set_name(v, "halo"));
    name_is(v, "halo");
    KT_MPI(MPI_Type_set_name(v, "halo column"));      /* renaming frees the old name */
    name_is(v, "halo column");
    KT_MPI(MPI_Type_dup(v, &d));
    name_is(d, "");                                    /* a new type has no name */
    KT_MPI(MPI_Type_commit(&v));
    name_is(v, "halo column");
    /* too long: truncated to MPI_MAX_OBJECT_NAME-1 characters */
    char longname[MPI_MAX_OBJECT_NAME + 40];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    KT_MPI(MPI_Type_set_name(d, longname));
    KT_MPI(MPI_Type_get_name(d, n, &len));
    KT_EQ_INT(len, MPI_MAX_OBJECT_NAME - 1);
    KT_EQ_INT(strlen(n), MPI_MAX_OBJECT_NAME - 1);
    KT_MPI(MPI_Type_free(&d));
    KT_MPI(MPI_Type_free(&v));
    /* predefined types have their names and can be renamed */
    name_is(MPI_INT, "MPI_INT");
    KT_MPI(MPI_Type_set_name(MPI_INT, "my int"));
    name_is(MPI_INT, "my int");
    KT_MPI(MPI_Type_set_name(MPI_INT, "MPI_INT"));
    name_is(MPI_INT, "MPI_INT");
    KT_ERRCLASS(MPI_Type_set_name(MPI_INT, NULL), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Type_set_name(MPI_DATATYPE_NULL, "x"), MPI_ERR_TYPE);

    /* communicator names: a dup has none */
    MPI_Comm c, c2;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    KT_MPI(MPI_Comm_get_name(c, n, &len));
    KT_CHECK(n[0] == 0 && len == 0, "dup of MPI_COMM_WORLD named \"%s\"", n);
    KT_MPI(MPI_Comm_set_name(c, "mine"));
    KT_MPI(MPI_Comm_get_name(c, n, &len));
    KT_CHECK(!strcmp(n, "mine") && len == 4, "name \"%s\"", n);
    KT_MPI(MPI_Comm_dup(c, &c2));
    KT_MPI(MPI_Comm_get_name(c2, n, &len));
    KT_CHECK(n[0] == 0 && len == 0, "dup of a named communicator named \"%s\"", n);
    KT_MPI(MPI_Comm_free(&c2));
    KT_MPI(MPI_Comm_free(&c));
    KT_MPI(MPI_Comm_get_name(MPI_COMM_WORLD, n, &len));
    KT_CHECK(!strcmp(n, "MPI_COMM_WORLD"), "world named \"%s\"", n);

    /* MPI_Pcontrol: any level, any extra arguments, and both names */
    KT_MPI(MPI_Pcontrol(0));
    KT_MPI(MPI_Pcontrol(1));
    KT_MPI(MPI_Pcontrol(2, "extra", 3.5));
    KT_MPI(PMPI_Pcontrol(-1));

    /* the Fortran sentinels, from C, with only libmpi linked */
    KT_CHECK(MPI_F_STATUS_IGNORE != NULL && MPI_F_STATUSES_IGNORE != NULL, "Fortran sentinels are not NULL");
    KT_CHECK(MPI_F_STATUS_IGNORE != MPI_F_STATUSES_IGNORE, "the two sentinels differ");
    MPI_Fint fst[MPI_F_STATUS_SIZE];
    KT_CHECK(fst != MPI_F_STATUS_IGNORE, "a real Fortran status is not the sentinel");

    KT_MPI(MPI_Finalize());
    return 0;
}
