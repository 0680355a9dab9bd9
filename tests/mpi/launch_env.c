/* launch_env: check the environment mpiexec gives the ranks.
 *   launch_env [NAME=VALUE]...   every NAME must be set to VALUE
 * Also checks the rpim contract variables against MPI's rank and size. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    const char *r = getenv("KUMI_RANK"), *s = getenv("KUMI_SIZE");
    KT_CHECK(r && atoi(r) == rank, "KUMI_RANK=%s, MPI rank %d", r ? r : "(unset)", rank);
    KT_CHECK(s && atoi(s) == size, "KUMI_SIZE=%s, MPI size %d", s ? s : "(unset)", size);
    KT_CHECK(getenv("KUMI_JOBID") && atol(getenv("KUMI_JOBID")) > 0, "KUMI_JOBID not set");
    const char *ctl = getenv("KUMI_CONTROL");
    KT_CHECK(ctl && strncmp(ctl, "127.0.0.1:", 10) == 0, "KUMI_CONTROL=%s", ctl ? ctl : "(unset)");
    const char *sec = getenv("KUMI_JOB_SECRET");
    KT_CHECK(sec && strlen(sec) == 32 && strspn(sec, "0123456789abcdef") == 32, "KUMI_JOB_SECRET=%s", sec ? sec : "(unset)");
    KT_CHECK(getenv("KUMI_RPIM") && strcmp(getenv("KUMI_RPIM"), "fork") == 0, "KUMI_RPIM not fork");
    for (int i = 1; i < argc; i++) {
        char name[256];
        const char *eq = strchr(argv[i], '=');
        KT_CHECK(eq && (size_t)(eq - argv[i]) < sizeof name, "bad argument %s", argv[i]);
        memcpy(name, argv[i], (size_t)(eq - argv[i]));
        name[eq - argv[i]] = 0;
        const char *v = getenv(name);
        KT_CHECK(v && strcmp(v, eq + 1) == 0, "%s is '%s', expected '%s'", name, v ? v : "(unset)", eq + 1);
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    KT_MPI(MPI_Finalize());
    return 0;
}
