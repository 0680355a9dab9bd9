/* launch_output: every rank writes many lines to stdout (and some to
 * stderr), each line in several pieces flushed separately, so that mpiexec
 * must reassemble lines from partial pipe reads.  tests/scripts/launch_output.sh
 * checks that every line arrives, exactly once and intact.
 *   launch_output [LINES] [tail]
 * Line format: "LO r=<rank> i=<index> <payload>" where payload is a run of
 * 20 + (i % 90) copies of the letter 'a' + (rank * 7 + i) % 26;
 * stderr lines: "LE r=<rank> i=<index> <payload>" for every 10th index.
 * With "tail", the rank ends with "TAIL r=<rank>" without a newline. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kt.h"

static void put_line(FILE *f, const char *tag, int rank, int i)
{
    char payload[128];
    int n = 20 + i % 90;
    memset(payload, 'a' + (rank * 7 + i) % 26, (size_t)n);
    payload[n] = 0;
    /* three pieces, each pushed into the pipe on its own */
    fprintf(f, "%s r=%d ", tag, rank);
    fflush(f);
    fprintf(f, "i=%d %.*s", i, n / 2, payload);
    fflush(f);
    fprintf(f, "%s\n", payload + n / 2);
    if (i % 7 == 0) fflush(f);
}

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int lines = argc > 1 ? atoi(argv[1]) : 2000;
    int tail = argc > 2 && strcmp(argv[2], "tail") == 0;
    KT_CHECK(lines > 0, "bad line count %s", argv[1]);
    for (int i = 0; i < lines; i++) {
        put_line(stdout, "LO", rank, i);
        if (i % 10 == 0) put_line(stderr, "LE", rank, i);
    }
    fflush(stdout);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (tail) {
        printf("TAIL r=%d", rank);
        fflush(stdout);
    }
    KT_MPI(MPI_Finalize());
    return 0;
}
