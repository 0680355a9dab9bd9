/* Predefined attributes of MPI_COMM_WORLD: MPI_Comm_get_attr gives a pointer
 * to the int value (MPI_Attr_get too); values as Kumi defines them. */
#include "kt.h"

static int get(MPI_Comm c, int key, int *flag)
{
    int *p = NULL;
    *flag = -1;
    KT_MPI(MPI_Comm_get_attr(c, key, &p, flag));
    if (!*flag) return -12345;
    KT_CHECK(p != NULL, "keyval %d: NULL pointer", key);
    return *p;
}

int main(int argc, char **argv)
{
    int size, flag;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int tag_ub = get(MPI_COMM_WORLD, MPI_TAG_UB, &flag);
    KT_EQ_INT(flag, 1);
    KT_CHECK(tag_ub >= 32767, "MPI_TAG_UB %d is below the standard's minimum", tag_ub);
    KT_EQ_INT(tag_ub, 0x7fffffff);
    KT_EQ_INT(get(MPI_COMM_WORLD, MPI_HOST, &flag), MPI_PROC_NULL);
    KT_EQ_INT(flag, 1);
    KT_EQ_INT(get(MPI_COMM_WORLD, MPI_IO, &flag), MPI_ANY_SOURCE);
    KT_EQ_INT(flag, 1);
    int wg = get(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &flag);
    KT_EQ_INT(flag, 1);
    KT_EQ_INT(wg, 0);
    KT_EQ_INT(get(MPI_COMM_WORLD, MPI_APPNUM, &flag), 0);
    KT_EQ_INT(flag, 1);
    /* the slots mpiexec knows (this host's CPUs without -host): at least the job (conf_dpm_comm checks the value) */
    int usize = get(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &flag);
    KT_CHECK(usize >= size, "MPI_UNIVERSE_SIZE %d below the job's size %d", usize, size);
    KT_EQ_INT(flag, 1);
    int last = get(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &flag);
    KT_EQ_INT(flag, 1);
    KT_CHECK(last >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE %d < MPI_ERR_LASTCODE", last);

    /* MPI_LASTUSEDCODE follows MPI_Add_error_class / _code */
    int cls, code;
    KT_MPI(MPI_Add_error_class(&cls));
    KT_CHECK(cls > MPI_ERR_LASTCODE, "user class %d not above MPI_ERR_LASTCODE", cls);
    KT_CHECK(get(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &flag) >= cls, "MPI_LASTUSEDCODE below the new class");
    KT_MPI(MPI_Add_error_code(cls, &code));
    KT_CHECK(get(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &flag) >= code, "MPI_LASTUSEDCODE below the new code");

    /* the MPI-1 call gives the same pointer-to-int */
    int *p = NULL;
    KT_MPI(MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag));
    KT_CHECK(flag && p && *p == tag_ub, "MPI_Attr_get(MPI_TAG_UB)");

    /* also answered on other communicators */
    MPI_Comm d;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    KT_EQ_INT(get(d, MPI_TAG_UB, &flag), tag_ub);
    KT_MPI(MPI_Comm_free(&d));
    KT_EQ_INT(get(MPI_COMM_SELF, MPI_TAG_UB, &flag), tag_ub);

    /* a user keyval never equals a predefined one */
    int k;
    KT_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &k, NULL));
    KT_CHECK(k != MPI_TAG_UB && k != MPI_HOST && k != MPI_IO && k != MPI_WTIME_IS_GLOBAL && k != MPI_APPNUM &&
             k != MPI_UNIVERSE_SIZE && k != MPI_LASTUSEDCODE && k != MPI_KEYVAL_INVALID, "keyval %d", k);
    KT_MPI(MPI_Comm_free_keyval(&k));

    MPI_Finalize();
    return 0;
}
