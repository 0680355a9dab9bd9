/* Shared-memory windows (MPI_Win_allocate_shared) in the unified model:
 * memory written by RMA operations and by other ranks' stores is read with
 * direct loads after MPI_Win_sync.
 *
 * Per round, in one MPI_Win_lock_all epoch:
 *   - each rank puts a block into its right neighbour's memory (MPI_Put),
 *     flushes, then raises the neighbour's flag with an atomic
 *     MPI_Accumulate(MPI_REPLACE); the neighbour polls its flag with direct
 *     loads and MPI_Win_sync (no other MPI call) and then checks the block
 *     with direct loads;
 *   - each rank stores into its own memory, MPI_Win_sync, barrier,
 *     MPI_Win_sync, and every rank checks every other rank's memory through
 *     the pointers MPI_Win_shared_query gave, with direct loads;
 *   - every rank adds 1 to a counter of rank 0 with MPI_Accumulate; at the
 *     end the exact total is read by direct load.
 * Also: the memory of the ranks is contiguous (alloc_shared_noncontig not
 * given) and MPI_Win_shared_query(MPI_PROC_NULL) gives rank 0's part. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kt.h"

#define N 256                           /* ints of a block */
#define ROUNDS 20
enum { FLAG = 0, COUNT = 1, OWN = 16, BLOCK = OWN + N, INTS = BLOCK + N };

static int rank, size, errs;

#define CHECK(c, ...) do { if (!(c)) { errs++; fprintf(stderr, "rank %d: ", rank); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static int val(int r, int k, int i) { return (r * 131 + k) * 1000 + i; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win w;
    int *mine;
    MPI_Win_allocate_shared((MPI_Aint)INTS * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                            &mine, &w);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    int **peer = malloc((size_t)size * sizeof *peer);
    for (int r = 0; r < size; r++) {
        MPI_Aint sz;
        int du;
        int rc = MPI_Win_shared_query(w, r, &sz, &du, &peer[r]);
        CHECK(rc == MPI_SUCCESS && sz == INTS * (MPI_Aint)sizeof(int) && du == (int)sizeof(int),
              "MPI_Win_shared_query(%d): rc %d size %ld disp_unit %d", r, rc, (long)sz, du);
        if (r > 0)
            CHECK((char *)peer[r] == (char *)peer[r - 1] + INTS * sizeof(int),
                  "rank %d's memory does not follow rank %d's", r, r - 1);
    }
    CHECK(peer[rank] == mine, "MPI_Win_shared_query(own rank) is not the allocated address");
    {
        MPI_Aint sz;
        int du, *p0;
        MPI_Win_shared_query(w, MPI_PROC_NULL, &sz, &du, &p0);
        CHECK(p0 == peer[0], "MPI_Win_shared_query(MPI_PROC_NULL) is not rank 0's memory");
    }
    memset(mine, 0, INTS * sizeof(int));
    MPI_Win_lock_all(MPI_MODE_NOCHECK, w);
    MPI_Win_sync(w);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(w);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int block[N];
    for (int k = 0; k < ROUNDS; k++) {
        /* 1. RMA into the neighbour, flag raised atomically after a flush */
        for (int i = 0; i < N; i++) block[i] = val(rank, k, i);
        MPI_Put(block, N, MPI_INT, right, BLOCK, N, MPI_INT, w);
        MPI_Win_flush(right, w);
        int flag = k + 1, one = 1;
        MPI_Accumulate(&flag, 1, MPI_INT, right, FLAG, 1, MPI_INT, MPI_REPLACE, w);
        MPI_Accumulate(&one, 1, MPI_INT, 0, COUNT, 1, MPI_INT, MPI_SUM, w);
        MPI_Win_flush_all(w);
        double t0 = kt_now();
        for (;;) {
            MPI_Win_sync(w);
            if (((volatile int *)mine)[FLAG] == k + 1) break;
            if (kt_now() - t0 > 30.0) break;
        }
        CHECK(((volatile int *)mine)[FLAG] == k + 1, "round %d: the flag from rank %d never came (%d)", k, left,
              mine[FLAG]);
        int bad = 0;
        for (int i = 0; i < N; i++)
            if (mine[BLOCK + i] != val(left, k, i)) bad++;
        CHECK(!bad, "round %d: %d ints of rank %d's put differ by direct load (first %d, expected %d)", k, bad, left,
              mine[BLOCK], val(left, k, 0));
        /* 2. stores into my own memory, read by everybody */
        for (int i = 0; i < N; i++) mine[OWN + i] = val(rank, k, i) + 7;
        MPI_Win_sync(w);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_sync(w);
        for (int r = 0; r < size; r++) {
            bad = 0;
            for (int i = 0; i < N; i++)
                if (peer[r][OWN + i] != val(r, k, i) + 7) bad++;
            CHECK(!bad, "round %d: %d ints of rank %d's stores differ by direct load", k, bad, r);
        }
        MPI_Barrier(MPI_COMM_WORLD);    /* nobody writes round k+1 before round k was read */
    }
    MPI_Win_sync(w);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(w);
    CHECK(peer[0][COUNT] == ROUNDS * size, "counter of rank 0 by direct load: %d, expected %d", peer[0][COUNT],
          ROUNDS * size);
    MPI_Win_unlock_all(w);
    MPI_Win_free(&w);
    free(peer);
    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("rma_shared: %d ranks OK\n", size);
    MPI_Finalize();
    return all != 0;
}
