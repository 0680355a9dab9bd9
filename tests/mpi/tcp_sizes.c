/* tcp_sizes: messages of many sizes (0, 1, 1 KiB, 64 KiB +-1, 1 MiB, 16 MiB)
 * between every pair of ranks (and each rank with itself), through
 * non-blocking, blocking, synchronous and late-posted receives.
 * Run with MPI_COMPONENTS=p2p=self,tcp (or p2p=tcp) so that TCP carries
 * the traffic; checks every byte, the status and the count.
 * Usage: tcp_sizes [maxsize]   (default 16 MiB) */
#include "kt.h"
#include <stdint.h>
#include <unistd.h>

static const size_t all_sizes[] = { 0, 1, 1024, 65535, 65536, 65537, 1 << 20, 16 << 20 };
#define NSIZES (int)(sizeof all_sizes / sizeof all_sizes[0])

static unsigned char pat(int src, int dst, int k, size_t i)
{
    return (unsigned char)(i * 7 + (i >> 8) * 13 + (i >> 16) * 3 + k * 31 + src * 101 + dst * 17 + 1);
}

static void fill(unsigned char *b, size_t n, int src, int dst, int k)
{
    for (size_t i = 0; i < n; i++) b[i] = pat(src, dst, k, i);
}

static void check(const unsigned char *b, size_t n, int src, int dst, int k, const char *phase)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(src, dst, k, i))
            KT_FAIL("%s: message %d (%zu bytes) from %d to %d: byte %zu is %d, expected %d",
                    phase, k, n, src, dst, i, b[i], pat(src, dst, k, i));
}

static void check_status(const MPI_Status *st, int src, int tag, size_t n, const char *phase)
{
    int count = -1;
    KT_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    if (st->MPI_SOURCE != src || st->MPI_TAG != tag || count != (int)n)
        KT_FAIL("%s: status source %d tag %d count %d, expected %d %d %zu", phase,
                st->MPI_SOURCE, st->MPI_TAG, count, src, tag, n);
}

int main(int argc, char **argv)
{
    int rank, size, nsizes = 0;
    size_t sizes[NSIZES], maxsize = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)16 << 20;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int k = 0; k < NSIZES; k++)
        if (all_sizes[k] <= maxsize) sizes[nsizes++] = all_sizes[k];

    /* 1. all pairs at once, non-blocking; tag = size index */
    {
        int nreq = 2 * size * nsizes, r = 0;
        MPI_Request *req = malloc(nreq * sizeof *req);
        MPI_Status *st = malloc(nreq * sizeof *st);
        unsigned char **sb = calloc(size * nsizes, sizeof *sb), **rb = calloc(size * nsizes, sizeof *rb);
        KT_CHECK(req && st && sb && rb, "out of memory");
        for (int p = 0; p < size; p++)
            for (int k = 0; k < nsizes; k++) {
                rb[p * nsizes + k] = malloc(sizes[k] + 1);
                KT_MPI(MPI_Irecv(rb[p * nsizes + k], (int)sizes[k], MPI_BYTE, p, k, MPI_COMM_WORLD, &req[r++]));
            }
        for (int d = 0; d < size; d++) {
            int p = (rank + d) % size;
            for (int k = 0; k < nsizes; k++) {
                sb[p * nsizes + k] = malloc(sizes[k] + 1);
                fill(sb[p * nsizes + k], sizes[k], rank, p, k);
                KT_MPI(MPI_Isend(sb[p * nsizes + k], (int)sizes[k], MPI_BYTE, p, k, MPI_COMM_WORLD, &req[r++]));
            }
        }
        KT_MPI(MPI_Waitall(nreq, req, st));
        for (int p = 0; p < size; p++)
            for (int k = 0; k < nsizes; k++) {
                check(rb[p * nsizes + k], sizes[k], p, rank, k, "all-pairs");
                check_status(&st[p * nsizes + k], p, k, sizes[k], "all-pairs");
                free(rb[p * nsizes + k]);
                free(sb[p * nsizes + k]);
            }
        free(req); free(st); free(sb); free(rb);
    }

    /* 2. ring with blocking Sendrecv, both directions */
    {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        unsigned char *sb = malloc(maxsize + 1), *rb = malloc(maxsize + 1);
        KT_CHECK(sb && rb, "out of memory");
        for (int k = 0; k < nsizes; k++) {
            MPI_Status st;
            fill(sb, sizes[k], rank, right, 100 + k);
            memset(rb, 0, sizes[k]);
            KT_MPI(MPI_Sendrecv(sb, (int)sizes[k], MPI_BYTE, right, 100 + k,
                                rb, (int)sizes[k], MPI_BYTE, left, 100 + k, MPI_COMM_WORLD, &st));
            check(rb, sizes[k], left, rank, 100 + k, "ring");
            check_status(&st, left, 100 + k, sizes[k], "ring");
            fill(sb, sizes[k], rank, left, 200 + k);
            KT_MPI(MPI_Sendrecv(sb, (int)sizes[k], MPI_BYTE, left, 200 + k,
                                rb, (int)sizes[k], MPI_BYTE, right, 200 + k, MPI_COMM_WORLD, &st));
            check(rb, sizes[k], right, rank, 200 + k, "ring back");
        }
        free(sb); free(rb);
    }

    /* 3. late receives: every rank sends all sizes to its right neighbour
     * (Isend, plus one Issend) while the receiver waits before posting, so
     * eager data lands in the unexpected queue or is still arriving when
     * the receive is posted. */
    if (size > 1) {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        MPI_Request *sreq = malloc((nsizes + 1) * sizeof *sreq);
        unsigned char **sb = calloc(nsizes + 1, sizeof *sb);
        KT_CHECK(sreq && sb, "out of memory");
        for (int k = 0; k <= nsizes; k++) {
            size_t n = k < nsizes ? sizes[k] : 70000;
            sb[k] = malloc(n + 1);
            fill(sb[k], n, rank, right, 300 + k);
            if (k < nsizes) KT_MPI(MPI_Isend(sb[k], (int)n, MPI_BYTE, right, 300 + k, MPI_COMM_WORLD, &sreq[k]));
            else KT_MPI(MPI_Issend(sb[k], (int)n, MPI_BYTE, right, 300 + k, MPI_COMM_WORLD, &sreq[k]));
        }
        usleep(100000);
        /* receive in reverse order of sending (tags differ: allowed) */
        for (int k = nsizes; k >= 0; k--) {
            size_t n = k < nsizes ? sizes[k] : 70000;
            unsigned char *rb = malloc(n + 1);
            MPI_Status st;
            KT_MPI(MPI_Recv(rb, (int)n, MPI_BYTE, left, 300 + k, MPI_COMM_WORLD, &st));
            check(rb, n, left, rank, 300 + k, "late");
            check_status(&st, left, 300 + k, n, "late");
            free(rb);
        }
        KT_MPI(MPI_Waitall(nsizes + 1, sreq, MPI_STATUSES_IGNORE));
        for (int k = 0; k <= nsizes; k++) free(sb[k]);
        free(sb); free(sreq);
    }

    /* 4. a receive posted while a large eager message is arriving: rank 0
     * sends 64 KiB - 1 (eager by default) repeatedly to 1, which posts its
     * receives after Iprobe saw the message begin to arrive */
    if (size > 1 && maxsize >= 65535 && rank < 2) {
        size_t n = 65535;
        unsigned char *b = malloc(n);
        for (int it = 0; it < 20; it++) {
            if (rank == 0) {
                fill(b, n, 0, 1, 400 + it);
                KT_MPI(MPI_Send(b, (int)n, MPI_BYTE, 1, 400 + it, MPI_COMM_WORLD));
            } else {
                int flag = 0;
                MPI_Status st;
                if (it % 2) while (!flag) KT_MPI(MPI_Iprobe(0, 400 + it, MPI_COMM_WORLD, &flag, &st));
                memset(b, 0, n);
                KT_MPI(MPI_Recv(b, (int)n, MPI_BYTE, 0, 400 + it, MPI_COMM_WORLD, &st));
                check(b, n, 0, 1, 400 + it, "early-match");
            }
        }
        free(b);
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    KT_MPI(MPI_Finalize());
    if (rank == 0) printf("tcp_sizes: ok (%d ranks, up to %zu bytes)\n", size, maxsize);
    return 0;
}
