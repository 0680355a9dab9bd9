/* C side of misc3_fstatus.f90: 1 for the Fortran MPI_STATUS_IGNORE, 2 for
 * MPI_STATUSES_IGNORE, 0 for anything else. */
#include <mpi.h>

int misc3_which_(MPI_Fint *st);
int misc3_which_(MPI_Fint *st)
{
    if (st == MPI_F_STATUS_IGNORE) return 1;
    if (st == MPI_F_STATUSES_IGNORE) return 2;
    return 0;
}
