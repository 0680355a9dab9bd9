/* CHECK and OK for the programs of tests/abi that are built with MPICH's
 * mpicc (tests/mpi/kt.h is for Kumi's own mpi.h): a failed check prints the
 * file, the rank and the line, and aborts the job.  The program defines
 * `rank`. */
#ifndef KUMI_ABI_CHECK_H
#define KUMI_ABI_CHECK_H
#include <stdio.h>

#define CHECK(c, ...)                                                         \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "%s: rank %d: line %d: ", __FILE__, rank, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)
#define OK(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)

#endif
