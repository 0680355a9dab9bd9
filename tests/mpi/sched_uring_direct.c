/* The io_uring engine's sends written by their start call (sched/uring.c,
 * send_now): a send that finds its connection idle is written by the call
 * that made it ready, up to a byte budget renewed by every progress round
 * and every entry of the application into the library.  Rounds of: the
 * root starts an MPI_Ibcast of 40000 bytes (the values of the round), the
 * ranks compute 200 us outside MPI, MPI_Wait, check every byte,
 * MPI_Barrier; rank 0 is the root of the first half of the rounds, rank 1
 * of the second (each rank sends and receives).  The root's MPI_Wait finds
 * its request complete (its send went out whole) and runs no progress
 * round; with the budget renewed by progress rounds alone, every second
 * start call of a root found it spent and left its send in the submission
 * queue (tests/scripts/sched_uring.sh checks in rank 0's KUMI_VERBOSE
 * summary that nearly every send was written by its start call).
 *
 * With BYTES and the pipelined broadcast (tuned's pipeline, segments of
 * 64 KiB: sched_uring.sh's sched_uring_gather), the root's segments are
 * ready together and the engine writes them in gathered sends.
 *
 * usage: sched_uring_direct [ROUNDS [BYTES]] */
#define _POSIX_C_SOURCE 200809L
#include "kt.h"
#include <time.h>


static unsigned char val(int round, size_t i)
{
    return (unsigned char)(round * 13 + i * 5 + 3);
}

static void compute(double us)
{
    double t0 = MPI_Wtime();
    volatile double a = 1.0;
    while ((MPI_Wtime() - t0) * 1e6 < us) a = a * 1.0000001 + 1e-9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int rounds = argc > 1 ? atoi(argv[1]) : 80;
    int bytes = argc > 2 ? atoi(argv[2]) : 40000;
    KT_CHECK(bytes > 0, "BYTES %d", bytes);
    unsigned char *b = malloc((size_t)bytes);
    KT_CHECK(b != NULL, "out of memory");
    for (int r = 0; r < rounds; r++) {
        int root = r < rounds / 2 ? 0 : 1;
        for (size_t i = 0; i < (size_t)bytes; i++) b[i] = rank == root ? val(r, i) : 0;
        MPI_Request q;
        KT_MPI(MPI_Ibcast(b, bytes, MPI_BYTE, root, MPI_COMM_WORLD, &q));
        compute(200);
        KT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        for (size_t i = 0; i < (size_t)bytes; i++)
            KT_CHECK(b[i] == val(r, i), "round %d: byte %zu is %d, expected %d", r, i, b[i], val(r, i));
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    if (rank == 0) printf("sched_uring_direct: %d rounds of %d bytes checked\n", rounds, bytes);
    free(b);
    MPI_Finalize();
    return 0;
}
