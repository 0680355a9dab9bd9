/* mix_lib: a library built with mpicc.mpich (MPICH's ABI), linked into, or loaded by, a program
 * built with mpicc.openmpi (tests/abi/mix_main.c): under Kumi's mpiexec both shims are in the
 * process and libkumi_abimix.so makes this library's calls reach libmpich.so.12's shim (with
 * Open MPI's, MPICH's integer handles would be taken for pointers).  Also the other way round:
 * built with mpicc.openmpi, in a program built with mpicc.mpich (its calls must reach
 * libmpi.so.40's shim).  tests/scripts/abi_mix.sh. */
#include <mpi.h>
#include <string.h>

/* the sum of v over MPI_COMM_WORLD, through MPICH's handles; -1 on a failed call */
int mixlib_sum(int v)
{
    int r = -1;
    if (MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) return -1;
    return r;
}

/* 0 when this library's ABI works here: a communicator of its own is a handle of that ABI (MPICH:
 * an int with MPICH's kind bits; Open MPI: a pointer that Kumi compares with MPI_COMM_WORLD), a
 * ring exchange fills the ABI's status (MPICH: 20 bytes, Open MPI: 24), Kumi answers
 * MPI_Get_library_version, a failed call's error code is in the ABI's numbering; else the step
 * that failed (1..6) */
int mixlib_check(void)
{
    int rank, size;
    MPI_Comm d;
    if (MPI_Comm_rank(MPI_COMM_WORLD, &rank) || MPI_Comm_size(MPI_COMM_WORLD, &size)) return 1;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &d) != MPI_SUCCESS) return 2;
#ifdef OPEN_MPI
    int cmp = -1;
    if (sizeof(MPI_Status) != 24 || sizeof d != sizeof(void *) || d == MPI_COMM_WORLD ||
        MPI_Comm_compare(d, MPI_COMM_WORLD, &cmp) || cmp != MPI_CONGRUENT)
        return 3;
#else
    if (sizeof(MPI_Status) != 20 || (((unsigned)d >> 26) & 0xf) != (((unsigned)MPI_COMM_WORLD >> 26) & 0xf)) return 3;
#endif
    int out = rank * 7, in = -1;
    MPI_Status st;
    if (MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 3, &in, 1, MPI_INT, (rank + size - 1) % size, 3, d, &st) ||
        st.MPI_SOURCE != (rank + size - 1) % size || st.MPI_TAG != 3 || in != ((rank + size - 1) % size) * 7)
        return 4;
    MPI_Comm_free(&d);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    if (MPI_Get_library_version(lib, &len) || !strstr(lib, "Kumi")) return 5;
    /* a failed call's code is in this ABI's numbering (MPI_ERR_ARG: MPICH 12, Open MPI 13) */
    int ints[4], cls = -1;
    MPI_Aint addrs[2];
    MPI_Datatype types[2];
    MPI_Errhandler old;
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &old);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = MPI_Type_get_contents(MPI_INT, 4, 2, 2, ints, addrs, types);   /* of a named type: erroneous */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, old);
    MPI_Errhandler_free(&old);
    if (rc == MPI_SUCCESS || MPI_Error_class(rc, &cls) != MPI_SUCCESS || cls != MPI_ERR_ARG) return 6;
    return 0;
}
