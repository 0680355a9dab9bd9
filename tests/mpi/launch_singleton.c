/* launch_singleton: started without mpiexec (no KUMI_RANK), MPI_Init runs a
 * job of one process.  tests/scripts/launch_singleton.sh runs it directly. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "kt.h"

int main(int argc, char **argv)
{
    int rank = -1, size = -1, x = 21, y = 0;
    KT_CHECK(getenv("KUMI_RANK") == NULL, "KUMI_RANK is set; run this without mpiexec");
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    KT_EQ_INT(rank, 0);
    KT_EQ_INT(size, 1);
    KT_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    KT_EQ_INT(y, 21);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    KT_MPI(MPI_Finalize());
    printf("singleton ok\n");
    return 0;
}
