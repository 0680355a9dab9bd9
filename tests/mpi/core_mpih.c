/* core_mpih: mpi.h says which MPI it is, and only that.
 * At compile time: MPI_VERSION and MPI_SUBVERSION are defined (5.0, the
 * standard ABI's), and none of another implementation's identifying macros
 * is: programs and build systems test them (#ifdef OPEN_MPI, MPICH_VERSION
 * >= ...) to pick workarounds for that implementation.  A failed check is an
 * #error, so the program does not build and its test fails (run-tests.sh);
 * tests/scripts/core_mpih.sh also compiles this file itself, with a planted
 * macro to see the check fire, and scans every macro mpi.h defines.
 * At run time: MPI_Get_version agrees with the macros and the library
 * version string names Kumi. */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <string.h>
#include "kt.h"

#if !defined(MPI_VERSION) || !defined(MPI_SUBVERSION)
#error "mpi.h does not define MPI_VERSION and MPI_SUBVERSION"
#elif MPI_VERSION != 5 || MPI_SUBVERSION != 0
#error "mpi.h: MPI_VERSION.MPI_SUBVERSION is not 5.0 (the MPI 5.0 standard ABI)"
#endif
#if !defined(KUMI_MPI)
#error "mpi.h does not define KUMI_MPI"
#endif

/* MPICH and its derivatives (Intel MPI, MVAPICH, Cray MPICH, MS-MPI) */
#if defined(MPICH) || defined(MPICH2) || defined(MPICH_VERSION) || defined(MPICH_NUMVERSION) || \
    defined(MPICH_NAME) || defined(MPICH_CALC_VERSION) || defined(MPICH_API_PUBLIC) || \
    defined(MPICH_SKIP_MPICXX) || defined(MPICH_IGNORE_CXX_SEEK)
#error "mpi.h defines an MPICH macro"
#endif
#if defined(I_MPI_VERSION) || defined(I_MPI_NUMVERSION) || defined(MVAPICH2_VERSION) || \
    defined(MVAPICH2_NUMVERSION) || defined(MVAPICH_VERSION) || defined(MVAPICH_NUMVERSION) || \
    defined(CRAY_MPICH_VERSION) || defined(MSMPI_VER) || defined(MSMPI_VERSION)
#error "mpi.h defines a macro of an MPICH derivative (Intel MPI, MVAPICH, Cray, MS-MPI)"
#endif
/* Open MPI */
#if defined(OPEN_MPI) || defined(OMPI_MAJOR_VERSION) || defined(OMPI_MINOR_VERSION) || \
    defined(OMPI_RELEASE_VERSION) || defined(OMPI_MPI_H) || defined(OMPI_SKIP_MPICXX)
#error "mpi.h defines an Open MPI macro"
#endif
/* others: LAM, HP / Platform MPI, SGI / HPE MPT, ROMIO's identity */
#if defined(LAM_MPI) || defined(HP_MPI) || defined(PLATFORM_MPI) || defined(MPI_NO_CPPBIND) || \
    defined(MPT_VERSION) || defined(SGI_MPT) || defined(ROMIO_VERSION) || defined(MPIO_INCLUDE)
#error "mpi.h defines another vendor's macro"
#endif

int main(int argc, char **argv)
{
    int v = -1, sv = -1, len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    KT_MPI(MPI_Get_version(&v, &sv));          /* callable before MPI_Init */
    KT_EQ_INT(v, MPI_VERSION);
    KT_EQ_INT(sv, MPI_SUBVERSION);
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Get_library_version(lib, &len));
    KT_EQ_INT(len, (int)strlen(lib));
    KT_CHECK(strncmp(lib, "Kumi ", 5) == 0, "MPI_Get_library_version: '%s'", lib);
    KT_CHECK(!strstr(lib, "MPICH") && !strstr(lib, "Open MPI"), "MPI_Get_library_version: '%s'", lib);
    KT_MPI(MPI_Finalize());
    return 0;
}
