/* icount: one kind of MPI call, N times (argv: N KIND), for counting the instructions the
 * foreign-ABI shims add per call under callgrind (tests/bench/abi-icount.sh): KIND is rank
 * (MPI_Comm_rank), recv (MPI_Recv from MPI_PROC_NULL), isend (MPI_Isend to MPI_PROC_NULL +
 * MPI_Wait), isendnost (the same, MPI_STATUS_IGNORE), waitnull (MPI_Wait on MPI_REQUEST_NULL),
 * start (a persistent send started and waited), waitall (3 Isend + 1 Start, MPI_Waitall of 4). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    int n = atoi(argv[1]), r;
    const char *k = argv[2];
    char buf[8] = { 0 };
    MPI_Status st, sts[4];
    MPI_Request req, reqs[4];
    MPI_Init(&argc, &argv);
    MPI_Send_init(buf, 8, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &reqs[3]);
    if (!strcmp(k, "rank")) for (int i = 0; i < n; i++) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (!strcmp(k, "recv")) for (int i = 0; i < n; i++) MPI_Recv(buf, 8, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    if (!strcmp(k, "isend")) for (int i = 0; i < n; i++) { MPI_Isend(buf, 8, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &req); MPI_Wait(&req, &st); }
    if (!strcmp(k, "isendnost")) for (int i = 0; i < n; i++) { MPI_Isend(buf, 8, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &req); MPI_Wait(&req, MPI_STATUS_IGNORE); }
    if (!strcmp(k, "waitnull")) for (int i = 0; i < n; i++) { req = MPI_REQUEST_NULL; MPI_Wait(&req, &st); }
    if (!strcmp(k, "start")) for (int i = 0; i < n; i++) { MPI_Start(&reqs[3]); MPI_Wait(&reqs[3], &st); }
    if (!strcmp(k, "waitall")) for (int i = 0; i < n; i++) {
        for (int j = 0; j < 3; j++) MPI_Isend(buf, 8, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &reqs[j]);
        MPI_Start(&reqs[3]);
        MPI_Waitall(4, reqs, sts);
    }
    MPI_Request_free(&reqs[3]);
    MPI_Finalize();
    return 0;
}
