/* launch_fail: ways for a rank to fail, for tests/scripts/launch_fail.sh.
 *   launch_fail MODE [RANK [CODE]]
 * Every rank calls MPI_Init and a barrier; then rank RANK
 *   exit      calls exit(CODE) without MPI_Finalize
 *   segv      raises SIGSEGV
 *   abort     calls MPI_Abort(MPI_COMM_WORLD, CODE)
 *   nofinal   returns 0 without calling MPI_Finalize
 * while every other rank blocks forever in MPI_Recv (a message nobody
 * sends), after forking a child that sleeps (it must die with its rank).
 *   stubborn  like exit, but the other ranks ignore SIGTERM
 *   hang      every rank (and a child of each) blocks forever
 *   ok        barrier, finalize, exit 0 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kt.h"

static void child_and_block(void)
{
    pid_t p = fork();
    if (p == 0) {              /* a child in the rank's process group */
        for (;;) pause();
    }
    int x;
    MPI_Status st;
    KT_MPI(MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &st));
    KT_FAIL("MPI_Recv returned although nobody sent");
}

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    const char *mode = argc > 1 ? argv[1] : "ok";
    int who = argc > 2 ? atoi(argv[2]) : 0;
    int code = argc > 3 ? atoi(argv[3]) : 1;
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (strcmp(mode, "ok") == 0) {
        KT_MPI(MPI_Finalize());
        return 0;
    }
    if (strcmp(mode, "stubborn") == 0 && rank != who) signal(SIGTERM, SIG_IGN);
    if (strcmp(mode, "hang") == 0 || rank != who) child_and_block();
    /* give the others a moment to block */
    usleep(200000);
    if (strcmp(mode, "exit") == 0 || strcmp(mode, "stubborn") == 0) exit(code);
    if (strcmp(mode, "segv") == 0) {
        raise(SIGSEGV);
        return 99;
    }
    if (strcmp(mode, "abort") == 0) {
        MPI_Abort(MPI_COMM_WORLD, code);
        return 98;             /* not reached */
    }
    if (strcmp(mode, "nofinal") == 0) return 0;
    KT_FAIL("unknown mode %s", mode);
}
