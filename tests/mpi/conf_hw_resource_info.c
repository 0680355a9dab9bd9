/* conf_hw_resource_info: MPI 4.1 MPI_Get_hw_resource_info (issue 16 item 1)
 * and the resource types it names in MPI_Comm_split_type.  The info object
 * has a key in URI form for each hardware resource type of the machine
 * ("hwloc://Core"), valued "true" when the process is restricted to one
 * instance of it, else "false".  Each key is a valid mpi_hw_resource_type
 * for MPI_COMM_TYPE_HW_GUIDED: a process gets a communicator exactly when
 * its value is "true", whose info repeats the type, and the bare hwloc name
 * splits the same way; MPI_COMM_TYPE_HW_UNGUIDED names the type it chose.
 * Missing from libmpi before (the program did not link).  Run with as many
 * ranks as cores (bound, all "true") and with more (unbound). */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    MPI_Info hw;
    KT_MPI(MPI_Get_hw_resource_info(&hw));
    KT_CHECK(hw != MPI_INFO_NULL, "MPI_INFO_NULL");
    int nkeys;
    KT_MPI(MPI_Info_get_nkeys(hw, &nkeys));
    KT_CHECK(nkeys > 0, "no hardware resource type");
    /* every rank splits by every type, in the same order (all on one machine) */
    int n0 = nkeys;
    KT_MPI(MPI_Bcast(&n0, 1, MPI_INT, 0, MPI_COMM_WORLD));
    KT_EQ_INT(nkeys, n0);
    for (int k = 0; k < nkeys; k++) {
        char key[MPI_MAX_INFO_KEY], v[16], k0[MPI_MAX_INFO_KEY];
        int len = sizeof v, flag;
        KT_MPI(MPI_Info_get_nthkey(hw, k, key));
        KT_CHECK(!strncmp(key, "hwloc://", 8), "key %s is not in URI form", key);
        strcpy(k0, key);
        KT_MPI(MPI_Bcast(k0, sizeof k0, MPI_CHAR, 0, MPI_COMM_WORLD));
        KT_CHECK(!strcmp(key, k0), "rank 0 has key %s where this rank has %s", k0, key);
        KT_MPI(MPI_Info_get_string(hw, key, &len, v, &flag));
        KT_CHECK(flag && (!strcmp(v, "true") || !strcmp(v, "false")), "%s = %s", key, v);
        int restricted = !strcmp(v, "true");

        MPI_Info in;
        MPI_Comm c, c2;
        KT_MPI(MPI_Info_create(&in));
        KT_MPI(MPI_Info_set(in, "mpi_hw_resource_type", key));
        KT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, in, &c));
        KT_MPI(MPI_Info_set(in, "mpi_hw_resource_type", key + 8));        /* the bare hwloc name */
        KT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, in, &c2));
        KT_MPI(MPI_Info_free(&in));
        KT_CHECK(restricted == (c != MPI_COMM_NULL), "%s = %s, but HW_GUIDED gave %s", key, v,
                 c == MPI_COMM_NULL ? "MPI_COMM_NULL" : "a communicator");
        KT_CHECK((c == MPI_COMM_NULL) == (c2 == MPI_COMM_NULL), "%s and %s split differently", key, key + 8);
        if (c != MPI_COMM_NULL) {
            MPI_Info used;
            char t[MPI_MAX_INFO_VAL];
            int s1, s2, r1, r2;
            len = sizeof t;
            KT_MPI(MPI_Comm_get_info(c, &used));
            KT_MPI(MPI_Info_get_string(used, "mpi_hw_resource_type", &len, t, &flag));
            KT_CHECK(flag && !strcmp(t, key), "mpi_hw_resource_type of the new communicator: %s", flag ? t : "(none)");
            KT_MPI(MPI_Info_free(&used));
            MPI_Comm_size(c, &s1);
            MPI_Comm_size(c2, &s2);
            MPI_Comm_rank(c, &r1);
            MPI_Comm_rank(c2, &r2);
            KT_EQ_INT(s1, s2);
            KT_EQ_INT(r1, r2);
            KT_MPI(MPI_Comm_free(&c));
            KT_MPI(MPI_Comm_free(&c2));
        }
    }
    KT_MPI(MPI_Info_free(&hw));

    /* unguided: the type chosen is one MPI_Get_hw_resource_info names (or mpi_shared_memory) */
    MPI_Comm u;
    KT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &u));
    if (u != MPI_COMM_NULL) {
        MPI_Info used;
        char t[MPI_MAX_INFO_VAL], v[16];
        int len = sizeof t, flag;
        KT_MPI(MPI_Comm_get_info(u, &used));
        KT_MPI(MPI_Info_get_string(used, "mpi_hw_resource_type", &len, t, &flag));
        KT_CHECK(flag, "no mpi_hw_resource_type on the HW_UNGUIDED communicator");
        KT_MPI(MPI_Info_free(&used));
        if (strcmp(t, "mpi_shared_memory")) {
            KT_MPI(MPI_Get_hw_resource_info(&hw));
            len = sizeof v;
            KT_MPI(MPI_Info_get_string(hw, t, &len, v, &flag));
            KT_CHECK(flag && !strcmp(v, "true"), "HW_UNGUIDED chose %s, which MPI_Get_hw_resource_info says is %s",
                     t, flag ? v : "unknown");
            KT_MPI(MPI_Info_free(&hw));
        }
        KT_MPI(MPI_Comm_free(&u));
    }
    KT_ERRCLASS(MPI_Get_hw_resource_info(NULL), MPI_ERR_ARG);
    KT_MPI(MPI_Finalize());
    return 0;
}
