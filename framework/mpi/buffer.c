/* MPI_Buffer_attach(_c) and MPI_Buffer_detach(_c): the attached buffer
 * itself and the space of buffered messages are kept by the request layer
 * (request/bsend.c). */
#include "mpi/mpi_front.h"
#include <limits.h>
#include <stdint.h>

int kumi_mpi_buffer_detach(void *buffer_addr, int *size)
{
    MPI_Count n = 0;
    int rc = kumi_bsend_detach("MPI_Buffer_detach", buffer_addr, &n, INT_MAX);
    if (!rc && size) *size = (int)n;
    return rc;
}

int kumi_mpi_buffer_detach_c(void *buffer_addr, MPI_Count *size)
{
    return kumi_bsend_detach("MPI_Buffer_detach_c", buffer_addr, size, INT64_MAX);
}
