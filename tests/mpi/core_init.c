/* Init/Finalize state, versions, thread level, processor name, Wtime. */
#include "kt.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int flag = -1, provided = -1, v, sv, len;
    KT_MPI(MPI_Initialized(&flag));
    KT_EQ_INT(flag, 0);
    KT_MPI(MPI_Get_version(&v, &sv));
    KT_EQ_INT(v, MPI_VERSION);
    KT_EQ_INT(sv, MPI_SUBVERSION);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    KT_MPI(MPI_Get_library_version(lib, &len));
    KT_CHECK(strstr(lib, "Kumi") != NULL && len == (int)strlen(lib), "'%s'", lib);
    KT_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    KT_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    KT_MPI(MPI_Query_thread(&v));
    KT_EQ_INT(v, MPI_THREAD_MULTIPLE);
    KT_MPI(MPI_Is_thread_main(&flag));
    KT_EQ_INT(flag, 1);
    KT_MPI(MPI_Initialized(&flag));
    KT_EQ_INT(flag, 1);
    KT_MPI(MPI_Finalized(&flag));
    KT_EQ_INT(flag, 0);
    char name[MPI_MAX_PROCESSOR_NAME], host[256];
    KT_MPI(MPI_Get_processor_name(name, &len));
    gethostname(host, sizeof host);
    KT_CHECK(!strcmp(name, host), "'%s' vs '%s'", name, host);
    double t0 = MPI_Wtime();
    usleep(20000);
    double t1 = MPI_Wtime();
    KT_CHECK(t1 - t0 >= 0.019 && t1 - t0 < 5, "Wtime difference %g", t1 - t0);
    KT_CHECK(MPI_Wtick() > 0 && MPI_Wtick() < 0.01, "Wtick %g", MPI_Wtick());
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1) KT_EQ_INT(size, atoi(argv[1]));
    KT_MPI(MPI_Finalize());
    KT_MPI(MPI_Finalized(&flag));
    KT_EQ_INT(flag, 1);
    if (rank == 0) printf("core_init: ok (%d ranks)\n", size);
    return 0;
}
