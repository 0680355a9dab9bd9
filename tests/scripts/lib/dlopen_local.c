/* A plug-in host's view of libmpi (tests/scripts/core_dlopen_local.sh): this
 * program is not linked with libmpi; it loads the library given as argv[1]
 * with dlopen(RTLD_LOCAL | RTLD_NOW), as Python loads an extension module's
 * dependencies, finds the MPI calls with dlsym and runs an Allreduce.  The
 * components libmpi then loads (p2p, coll, rpim) must resolve libmpi's
 * symbols without libmpi in the global scope.  Prints
 * "dlopen_local: rank R of N sum S" and exits 0 when the sum is right. */
#include <dlfcn.h>
#include <stdio.h>
#include <mpi.h>      /* types and constants only: nothing of libmpi is linked */

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: dlopen_local PATH/libmpi.so\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_LOCAL | RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "dlopen_local: dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    if (dlsym(RTLD_DEFAULT, "MPI_Init")) {
        fprintf(stderr, "dlopen_local: MPI_Init is in the global scope: the test would prove nothing\n");
        return 1;
    }
    __typeof__(&MPI_Init) init = (__typeof__(&MPI_Init))dlsym(lib, "MPI_Init");
    __typeof__(&MPI_Comm_rank) rank_of = (__typeof__(&MPI_Comm_rank))dlsym(lib, "MPI_Comm_rank");
    __typeof__(&MPI_Comm_size) size_of = (__typeof__(&MPI_Comm_size))dlsym(lib, "MPI_Comm_size");
    __typeof__(&MPI_Allreduce) allreduce = (__typeof__(&MPI_Allreduce))dlsym(lib, "MPI_Allreduce");
    __typeof__(&MPI_Finalize) finalize = (__typeof__(&MPI_Finalize))dlsym(lib, "MPI_Finalize");
    if (!init || !rank_of || !size_of || !allreduce || !finalize) {
        fprintf(stderr, "dlopen_local: dlsym: %s\n", dlerror());
        return 1;
    }
    int rank = -1, size = 0, in, sum = -1;
    if (init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "dlopen_local: MPI_Init failed\n");
        return 1;
    }
    if (rank_of(MPI_COMM_WORLD, &rank) != MPI_SUCCESS || size_of(MPI_COMM_WORLD, &size) != MPI_SUCCESS) {
        fprintf(stderr, "dlopen_local: MPI_Comm_rank / MPI_Comm_size failed\n");
        return 1;
    }
    in = rank + 1;
    if (allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
        fprintf(stderr, "dlopen_local: MPI_Allreduce failed\n");
        return 1;
    }
    int ok = sum == size * (size + 1) / 2;
    printf("dlopen_local: rank %d of %d sum %d%s\n", rank, size, sum, ok ? "" : " (WRONG)");
    if (finalize() != MPI_SUCCESS) {
        fprintf(stderr, "dlopen_local: MPI_Finalize failed\n");
        return 1;
    }
    return ok ? 0 : 1;
}
