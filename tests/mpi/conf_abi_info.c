/* conf_abi_info: the MPI 5.0 ABI queries (issue 16 item 1; MPI 5.0 sec.
 * 21.4): MPI_Abi_get_info (mpi_aint_size, mpi_count_size, mpi_offset_size),
 * MPI_Abi_get_fortran_info / _set_fortran_info (the sizes of Kumi's Fortran
 * types, which MPI_Type_size also gives; only the first set call may
 * succeed, later ones give MPI_ERR_ABI; a value that contradicts Kumi's
 * Fortran support gives MPI_ERR_ABI), MPI_Abi_get_fortran_booleans /
 * _set_fortran_booleans (.TRUE. = 1, .FALSE. = 0 of every LOGICAL size; a
 * size that is not a power of two gives MPI_ERR_ARG).  The queries work
 * before MPI_Init.  Missing from libmpi before (the program did not link).
 * 2 ranks: rank 0 sets the Fortran information that Kumi has, rank 1 a
 * contradicting one. */
#include "kt.h"
#include <stdint.h>

static void expect_key(MPI_Info info, const char *key, const char *want)
{
    char v[MPI_MAX_INFO_VAL];
    int len = sizeof v, flag;
    KT_MPI(MPI_Info_get_string(info, key, &len, v, &flag));
    KT_CHECK(flag, "no key %s", key);
    KT_CHECK(!strcmp(v, want), "%s = %s, expected %s", key, v, want);
}

static void expect_size(MPI_Info info, const char *key, size_t n)
{
    char want[16];
    snprintf(want, sizeof want, "%zu", n);
    expect_key(info, key, want);
}

int main(int argc, char **argv)
{
    MPI_Info info;
    /* before MPI_Init */
    KT_MPI(MPI_Abi_get_info(&info));
    expect_size(info, "mpi_aint_size", sizeof(MPI_Aint));
    expect_size(info, "mpi_count_size", sizeof(MPI_Count));
    expect_size(info, "mpi_offset_size", sizeof(MPI_Offset));
    KT_MPI(MPI_Info_free(&info));
    KT_MPI(MPI_Abi_get_fortran_info(&info));
    KT_CHECK(info != MPI_INFO_NULL, "MPI_Abi_get_fortran_info: MPI_INFO_NULL, but Kumi has Fortran support");
    KT_MPI(MPI_Info_free(&info));

    int rank, s;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    KT_MPI(MPI_Abi_get_fortran_info(&info));
    static const struct { const char *key; MPI_Datatype dt; } sizes[] = {
        { "mpi_logical_size", MPI_LOGICAL }, { "mpi_integer_size", MPI_INTEGER },
        { "mpi_real_size", MPI_REAL }, { "mpi_double_precision_size", MPI_DOUBLE_PRECISION } };
    for (int i = 0; i < 4; i++) {
        KT_MPI(MPI_Type_size(sizes[i].dt, &s));
        expect_size(info, sizes[i].key, (size_t)s);
    }
    expect_key(info, "mpi_integer8_supported", "true");
    expect_key(info, "mpi_logical1_supported", "true");
    expect_key(info, "mpi_real8_supported", "true");
    expect_key(info, "mpi_double_complex_supported", "true");

    MPI_Info mine;
    KT_MPI(MPI_Info_dup(info, &mine));
    if (rank == 1) KT_MPI(MPI_Info_set(mine, "mpi_integer_size", "8"));
    int rc = MPI_Abi_set_fortran_info(mine);
    if (rank == 0) {
        KT_MPI(rc);
    } else {
        int cls;
        KT_CHECK(rc != MPI_SUCCESS, "MPI_Abi_set_fortran_info accepted mpi_integer_size 8");
        KT_MPI(MPI_Error_class(rc, &cls));
        KT_EQ_INT(cls, MPI_ERR_ABI);
    }
    /* only the first call may set it */
    KT_ERRCLASS(MPI_Abi_set_fortran_info(info), MPI_ERR_ABI);
    KT_ERRCLASS(MPI_Abi_set_fortran_info(MPI_INFO_NULL), MPI_ERR_INFO);
    KT_MPI(MPI_Info_free(&mine));
    KT_MPI(MPI_Info_free(&info));
    KT_MPI(MPI_Abi_get_fortran_info(&info));              /* unchanged */
    KT_MPI(MPI_Type_size(MPI_INTEGER, &s));
    expect_size(info, "mpi_integer_size", (size_t)s);
    KT_MPI(MPI_Info_free(&info));

    /* booleans */
    for (int size = 1; size <= 16; size *= 2) {
        unsigned char t[16], f[16], zero[16] = { 0 };
        int is_set = -1;
        KT_MPI(MPI_Abi_get_fortran_booleans(size, t, f, &is_set));
        KT_EQ_INT(is_set, 1);
        KT_CHECK(!memcmp(f, zero, (size_t)size), "LOGICAL*%d .FALSE. is not 0", size);
        if (size == 1) KT_EQ_INT(t[0], 1);
        if (size == 2) KT_EQ_INT(*(int16_t *)t, 1);
        if (size == 4) KT_EQ_INT(*(int32_t *)t, 1);
        if (size == 8) KT_EQ_INT(*(int64_t *)t, 1);
        KT_MPI(MPI_Abi_set_fortran_booleans(size, t, f));     /* the same values */
    }
    int32_t t4 = -1, f4 = 0, is_set;
    KT_ERRCLASS(MPI_Abi_set_fortran_booleans(4, &t4, &f4), MPI_ERR_ABI);
    KT_ERRCLASS(MPI_Abi_get_fortran_booleans(3, &t4, &f4, &is_set), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Abi_get_fortran_booleans(32, &t4, &f4, &is_set), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Abi_set_fortran_booleans(0, &t4, &f4), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Abi_get_fortran_booleans(4, NULL, &f4, &is_set), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Abi_get_info(NULL), MPI_ERR_ARG);
    KT_MPI(MPI_Finalize());
    return 0;
}
