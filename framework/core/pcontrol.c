/* Hand-written C entry points that the generator cannot write, and data
 * that C programs reach through mpi.h.
 *
 * MPI_Pcontrol(const int level, ...): a varargs prototype (mkbindings.py
 * writes fixed argument lists).  Kumi has no profiling hooks of its own, so
 * it ignores the call and returns MPI_SUCCESS, as the standard allows (MPI
 * 4.1 sec. 15.2.4); a profiling library interposes MPI_Pcontrol, which is a
 * weak alias of PMPI_Pcontrol like every other MPI_ entry point.  Callable at
 * any time (it touches no state).
 *
 * The Fortran sentinels MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE live here,
 * in libmpi, rather than in libmpifort: mpi.h gives C code their addresses
 * as MPI_F_STATUS_IGNORE / MPI_F_STATUSES_IGNORE (MPI 4.1 sec. 19.3.5), and a
 * C program that uses them must link without libmpifort.  The Fortran side
 * (mpif.h, `use mpi`) declares them as the COMMON blocks /kumi_fc_status_ignore/
 * and /kumi_fc_statuses_ignore/, which gfortran names with a trailing
 * underscore; libmpifort compares addresses against the same symbols.  They
 * have default visibility, so libmpi, libmpifort and a program whose COMMON
 * block the linker allocated in the executable all use one object. */
#include "core/core.h"
#include <stdarg.h>

KUMI_EXPORT MPI_Fint kumi_fc_status_ignore_[MPI_F_STATUS_SIZE];
KUMI_EXPORT MPI_Fint kumi_fc_statuses_ignore_[MPI_F_STATUS_SIZE];

KUMI_EXPORT int PMPI_Pcontrol(const int level, ...)
{
    (void)level;
    return MPI_SUCCESS;
}
KUMI_EXPORT int MPI_Pcontrol(const int level, ...) __attribute__((weak, alias("PMPI_Pcontrol")));
