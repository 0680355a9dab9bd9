/* Helpers of the `use mpi_f08` module (mkf08.py): choice buffers arrive as
 * the C descriptors of assumed-type, assumed-rank dummies (TYPE(*),
 * DIMENSION(..)), ISO_Fortran_binding.h's CFI_cdesc_t. */
#include "kf_support.h"
#include <ISO_Fortran_binding.h>
#include <kumi/kumi.h>
#include <stdint.h>

/* Weak: libmpi has it once it has MPI-IO (mpi.h then declares it too). */
int PMPI_File_call_errhandler(MPI_File fh, int errorcode) __attribute__((weak));

/* The address of a choice buffer for the Fortran glue (which recognizes the
 * sentinels MPI_BOTTOM, MPI_IN_PLACE, ... by their COMMON blocks).  A
 * non-contiguous array section is refused (MPI_SUBARRAYS_SUPPORTED is
 * .FALSE.): *ierr is an MPI_ERR_BUFFER code naming the procedure and the
 * argument, after the error handler of the call's communicator (hkind 1),
 * window (2) or file (3) hval, else MPI_COMM_WORLD's. */
KUMI_EXPORT intptr_t kumi_f08_buf(CFI_cdesc_t *d, const char *proc, const char *arg, MPI_Fint hkind,
                                  MPI_Fint hval, MPI_Fint *ierr)
{
    *ierr = MPI_SUCCESS;
    if (d->rank > 0 && d->base_addr && !CFI_is_contiguous(d)) {
        int rc = kumi_error(MPI_ERR_BUFFER, "%s: %s is a non-contiguous array section (MPI_SUBARRAYS_SUPPORTED "
                            "is .FALSE.: pass a contiguous copy)", proc, arg);
        MPI_Comm comm = hkind == 1 ? PMPI_Comm_f2c(hval) : MPI_COMM_NULL;
        MPI_Win win = hkind == 2 ? PMPI_Win_f2c(hval) : MPI_WIN_NULL;
        if (win != MPI_WIN_NULL)
            PMPI_Win_call_errhandler(win, rc);
        else if (hkind == 3 && PMPI_File_call_errhandler)
            PMPI_File_call_errhandler(PMPI_File_f2c(hval), rc);
        else
            PMPI_Comm_call_errhandler(comm != MPI_COMM_NULL ? comm : MPI_COMM_WORLD, rc);
        *ierr = rc;
        return 0;
    }
    return (intptr_t)d->base_addr;
}

/* MPI_F_SYNC_REG: an external call the compiler cannot see into, so that it
 * keeps the buffer in memory across it. */
KUMI_EXPORT void kumi_f08_sync_reg(CFI_cdesc_t *d)
{
    __asm__ __volatile__("" : : "r"(d) : "memory");
}

/* MPI_Buffer_detach of mpi_f08: BUFFER_ADDR is a TYPE(C_PTR), which gets the
 * address of the detached buffer (use mpi's MPI_BUFFER_DETACH leaves it alone). */
KUMI_EXPORT void pmpi_buffer_detach_f08glue_(void **buffer_addr, MPI_Fint *size, MPI_Fint *ierror)
{
    void *p = NULL;
    int n = 0;
    int rc = PMPI_Buffer_detach(&p, &n);
    if (rc == MPI_SUCCESS) {
        *buffer_addr = p;
        *size = n;
    }
    *ierror = rc;
}
KUMI_EXPORT void mpi_buffer_detach_f08glue_(void **buffer_addr, MPI_Fint *size, MPI_Fint *ierror)
    __attribute__((weak, alias("pmpi_buffer_detach_f08glue_")));
