/* mix_main: a program built with mpicc.openmpi that uses a library built with mpicc.mpich
 * (tests/abi/mix_lib.c): linked with it (mpiexec sees both ABIs among the program's DT_NEEDED and
 * sets up both shims with the GOT swap agent by itself), or, with an argument, loading it with
 * dlopen (mpiexec --abi ompi+mpich).  Each part calls MPI with its own ABI's handles and status;
 * the results agree.  Prints "mix_main: N ranks ok".  tests/scripts/abi_mix.sh. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MIX_LINKED   /* linked with the library (else: its path as the argument, dlopen) */
int mixlib_sum(int v);
int mixlib_check(void);
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#ifdef MIX_LINKED
    int (*sum)(int) = mixlib_sum, (*check)(void) = mixlib_check;
#else
    int (*sum)(int) = NULL, (*check)(void) = NULL;
#endif
    if (argc > 1) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) { fprintf(stderr, "mix_main: dlopen %s: %s\n", argv[1], dlerror()); MPI_Abort(MPI_COMM_WORLD, 2); }
        sum = (int (*)(int))dlsym(h, "mixlib_sum");
        check = (int (*)(void))dlsym(h, "mixlib_check");
    }
    if (!sum || !check) { fprintf(stderr, "mix_main: no mixlib\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    /* Open MPI's handles here: pointers to objects of the shim */
    int v = rank + 1, r = -1;
    MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int m = sum(rank + 1);
    int c = check();
    MPI_Status st;
    int out = rank, in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 4, &in, 1, MPI_INT, (rank + size - 1) % size, 4,
                 MPI_COMM_WORLD, &st);
    if (r != size * (size + 1) / 2 || m != r || c != 0 || st.MPI_SOURCE != (rank + size - 1) % size ||
        in != (rank + size - 1) % size) {
        fprintf(stderr, "mix_main: rank %d: own sum %d, library's %d, library check %d, status source %d\n", rank, r,
                m, c, st.MPI_SOURCE);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* a failed call's code is in this program's ABI's numbering (MPI_ERR_ARG: MPICH 12, Open MPI 13),
     * also where the other ABI's shim was loaded last */
    int ints[4], cls = -1;
    MPI_Aint addrs[2];
    MPI_Datatype types[2];
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = MPI_Type_get_contents(MPI_INT, 4, 2, 2, ints, addrs, types);   /* of a named type: erroneous */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    if (rc == MPI_SUCCESS || MPI_Error_class(rc, &cls) != MPI_SUCCESS || cls != MPI_ERR_ARG) {
        fprintf(stderr, "mix_main: rank %d: a failed call returned %d, class %d, not MPI_ERR_ARG (%d)\n", rank, rc, cls,
                MPI_ERR_ARG);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mix_main: %d ranks ok\n", size);
    MPI_Finalize();
    return 0;
}
