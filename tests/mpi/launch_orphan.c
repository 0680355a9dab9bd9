/* launch_orphan: ranks that lose their launcher.  tests/scripts/
 * launch_orphan.sh SIGKILLs mpiexec once every rank is ready; the ranks must
 * then end within a second or so and leave nothing of the job in /dev/shm.
 *   launch_orphan compute   MPI_Init, barrier, then compute without any MPI call
 *   launch_orphan recv      MPI_Init, barrier, then block in MPI_Recv (never matched)
 *   launch_orphan noinit    no MPI at all: sleep in a loop
 *   launch_orphan late S    sleep S seconds, then a normal job (MPI_Init,
 *                           allreduce checked, finalize): for launch_flood.sh
 * Ready: rank 0 prints "ready <KUMI_JOBID>" (after the barrier), every rank
 * prints "rank R pid P". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kt.h"

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "compute";
    const char *jobid = getenv("KUMI_JOBID");
    if (strcmp(mode, "noinit") == 0) {
        printf("rank %s pid %d\n", getenv("KUMI_RANK") ? getenv("KUMI_RANK") : "?", (int)getpid());
        if (getenv("KUMI_RANK") && strcmp(getenv("KUMI_RANK"), "0") == 0) printf("ready %s\n", jobid ? jobid : "?");
        fflush(stdout);
        for (;;) sleep(1);
    }
    if (strcmp(mode, "late") == 0) sleep((unsigned)(argc > 2 ? atoi(argv[2]) : 1));
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (strcmp(mode, "late") == 0) {
        int sum = -1;
        KT_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        KT_EQ_INT(sum, size * (size - 1) / 2);
        KT_MPI(MPI_Finalize());
        if (rank == 0) printf("late ok\n");
        return 0;
    }
    /* a message to every peer, so that the shared-memory segments are in use */
    int token = rank, got = -1;
    KT_MPI(MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 1, &got, 1, MPI_INT, (rank + size - 1) % size, 1,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_EQ_INT(got, (rank + size - 1) % size);
    printf("rank %d pid %d\n", rank, (int)getpid());
    fflush(stdout);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        printf("ready %s\n", jobid ? jobid : "?");
        fflush(stdout);
    }
    if (strcmp(mode, "recv") == 0) {
        KT_MPI(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_FAIL("MPI_Recv returned although nobody sends");
    }
    volatile double x = 1.0;
    for (;;)
        for (int i = 0; i < 1000000; i++) x = x * 1.0000001 + 1e-9;
}
