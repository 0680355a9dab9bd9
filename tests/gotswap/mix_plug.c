/* libmixplug.so: a plug-in built with MPICH's mpicc (tests/scripts/abi_gotswap.sh). */
#include <mpi.h>
int plug_libver(char *buf, int *len) { return MPI_Get_library_version(buf, len); }
