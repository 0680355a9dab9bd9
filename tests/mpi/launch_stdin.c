/* launch_stdin: rank 0 copies its stdin to stdout (what mpiexec forwards);
 * every other rank must find its stdin empty (/dev/null).
 * tests/scripts/launch_stdin.sh compares the output with the input. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
#include <errno.h>
#include "kt.h"

int main(int argc, char **argv)
{
    int rank;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    char buf[65536];
    long total = 0;
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        KT_CHECK(n >= 0, "read(stdin) failed");
        if (n == 0) break;
        total += n;
        KT_CHECK(rank == 0, "rank %d read %ld bytes from stdin, expected none", rank, (long)n);
        KT_CHECK(fwrite(buf, 1, (size_t)n, stdout) == (size_t)n, "write failed");
    }
    fflush(stdout);
    fprintf(stderr, "rank %d read %ld bytes\n", rank, total);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    KT_MPI(MPI_Finalize());
    return 0;
}
