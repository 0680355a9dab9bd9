/* The job that tests/scripts/registry_contracts.sh runs over p2p/old and
 * coll/old (components built against older contracts): messages to itself
 * below and above p2p/old's eager limit (the second takes the rendezvous
 * path), a ring exchange over the other transports, barriers on a
 * duplicated communicator that is then freed.  Prints "ok <rank>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define BIG (64 * 1024)

static int check(int rank, const char *what, const int *buf, int n, int base)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != base + i) {
            fprintf(stderr, "rank %d: %s: element %d is %d, expected %d\n", rank, what, i, buf[i], base + i);
            return 1;
        }
    return 0;
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *s = malloc(BIG * sizeof *s), *r = malloc(BIG * sizeof *r);
    if (!s || !r) return 3;
    int counts[2] = { 16, BIG };                    /* 64 bytes: eager; 256 KiB: rendezvous */
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < counts[k]; i++) s[i] = rank * 1000 + i, r[i] = -1;
        MPI_Sendrecv(s, counts[k], MPI_INT, rank, 5, r, counts[k], MPI_INT, rank, 5, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        bad |= check(rank, k ? "large message to itself" : "small message to itself", r, counts[k], rank * 1000);
    }
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < BIG; i++) s[i] = rank * 1000 + i, r[i] = -1;
    MPI_Sendrecv(s, BIG, MPI_INT, right, 6, r, BIG, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    bad |= check(rank, "ring", r, BIG, left * 1000);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int i = 0; i < 3; i++) MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Barrier(MPI_COMM_WORLD);
    free(s);
    free(r);
    if (!bad) printf("ok %d\n", rank);
    MPI_Finalize();
    return bad;
}
