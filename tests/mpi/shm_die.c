/* Helper of tests/scripts/shm_kill.sh: rank 1 kills itself (SIGKILL) while
 * rank 0 is receiving a large message from it through shared memory (and
 * rank 2, if any, while in a streamed two-copy transfer).  The job must end
 * (mpiexec sees the death) and leave nothing in /dev/shm. */
#include "kt.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size;
    size_t n = 16u << 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *b = calloc(1, n);
    KT_CHECK(b != NULL);
    if (rank == 0) {
        printf("jobid %s\n", getenv("KUMI_JOBID") ? getenv("KUMI_JOBID") : "?");
        fflush(stdout);
    }
    /* a few good transfers first: the rings and CMA are in use */
    for (int i = 0; i < 3; i++) {
        if (rank == 1) MPI_Send(b, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        if (rank == 0) MPI_Recv(b, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Request r;
        MPI_Isend(b, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r);
        usleep(1000);
        raise(SIGKILL);
    }
    if (rank == 0) MPI_Recv(b, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* nobody gets here for long: the job is stopped */
    MPI_Barrier(MPI_COMM_WORLD);
    free(b);
    MPI_Finalize();
    return 0;
}
