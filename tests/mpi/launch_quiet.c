/* launch_quiet: small programs whose exact output is known, for checking that
 * a normal run prints nothing the program did not print (tests/scripts/launch_quiet.sh)
 * and that many more ranks than cores start and finish (launch_64 in launch.list).
 *   launch_quiet hello   every rank prints "hello R of N"
 *   launch_quiet p2p     ring exchange (an int and a 1 MiB buffer, i.e. eager and
 *                        rendezvous); every rank prints "p2p R from L"
 *   launch_quiet coll    barrier, bcast, allreduce, gather; rank 0 prints "coll N sum S"
 *   launch_quiet many    barrier, allreduce (sum checked), ring exchange, barrier;
 *                        rank 0 prints "many N ok"
 * Every value is checked; a failed check exits 1 (kt.h). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kt.h"

#define BIG (1 << 20)

static int ring(int rank, int size, int count)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size, got = -1;
    KT_MPI(MPI_Sendrecv(&rank, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_EQ_INT(got, left);
    if (count > 0) {
        unsigned char *s = malloc((size_t)count), *r = malloc((size_t)count);
        KT_CHECK(s && r, "malloc");
        for (int i = 0; i < count; i++) s[i] = (unsigned char)(rank * 31 + i);
        memset(r, 0xff, (size_t)count);
        MPI_Request rq[2];
        KT_MPI(MPI_Irecv(r, count, MPI_BYTE, left, 8, MPI_COMM_WORLD, &rq[0]));
        KT_MPI(MPI_Isend(s, count, MPI_BYTE, right, 8, MPI_COMM_WORLD, &rq[1]));
        KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        for (int i = 0; i < count; i++)
            if (r[i] != (unsigned char)(left * 31 + i)) KT_FAIL("byte %d from %d is %d", i, left, r[i]);
        free(s);
        free(r);
    }
    return got;
}

static long long sum_check(int rank, int size)
{
    long long mine = rank + 1, sum = 0;
    KT_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    KT_EQ_INT(sum, (long long)size * (size + 1) / 2);
    return sum;
}

int main(int argc, char **argv)
{
    int rank, size;
    const char *mode = argc > 1 ? argv[1] : "hello";
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (strcmp(mode, "hello") == 0) {
        printf("hello %d of %d\n", rank, size);
    } else if (strcmp(mode, "p2p") == 0) {
        int left = ring(rank, size, BIG);
        printf("p2p %d from %d\n", rank, left);
    } else if (strcmp(mode, "coll") == 0) {
        int v = rank == 0 ? 4242 : -1;
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        KT_MPI(MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD));
        KT_EQ_INT(v, 4242);
        long long sum = sum_check(rank, size);
        int *all = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
        KT_MPI(MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD));
        if (rank == 0) {
            for (int i = 0; i < size; i++) KT_EQ_INT(all[i], i);
            free(all);
            printf("coll %d sum %lld\n", size, sum);
        }
    } else if (strcmp(mode, "many") == 0) {
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        sum_check(rank, size);
        ring(rank, size, 4096);
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 0) printf("many %d ok\n", size);
    } else {
        KT_FAIL("unknown mode %s", mode);
    }
    KT_MPI(MPI_Finalize());
    return 0;
}
