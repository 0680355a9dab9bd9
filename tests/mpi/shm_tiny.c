/* shm_tiny: eager messages of 0..8 bytes on shared memory go as TINY records,
 * two to a cache line (issue 22 item 1, message rate; p2p_shmem.h).  Ranks 0
 * and 1 (others only take part in the barriers); run with
 * p2p_shmem_ring_size=4096 and the loop engine (no progress thread reads the
 * ring behind the test's back):
 *   1. capacity: while rank 1 is not in MPI, rank 0's 128 Isends of 8 bytes
 *      all complete at once: the 4 KiB ring holds them all (64 one-cell
 *      records would fill it, the rest wait for the receiver; fails without
 *      TINY records);
 *   2. order and contents: windows of mixed sizes (0..8 TINY, 9..64 one- and
 *      two-cell SHORT after a PAD, larger MSG, a rendezvous, Ssend, blocking
 *      sends), posted and unexpected, MPI_ANY_TAG, blocking receives (the
 *      recv_inline path), wrapping around the ring at every half-cell offset:
 *      every message whole, in order, with its tag and count (the sequence
 *      numbers that TINY records leave implicit stay right on both sides);
 *   3. MPI_Cancel of an Isend of 4 bytes that waits unexpected at rank 1
 *      (its record carries no sender cookie: found by its sequence number). */
#include "kt.h"
#include <unistd.h>

#define WIN 128
#define BIG 100000

static unsigned char sb[WIN][512], rb[WIN][520], big[BIG], bigr[BIG];

/* the size of message i of pattern round k */
static int msize(int k, int i)
{
    static const int sizes[] = { 0, 1, 8, 9, 2, 28, 3, 36, 4, 64, 5, 200, 6, 7, 8, 0, 40, 1, 300, 8 };
    int n = sizes[(i * 7 + k) % (int)(sizeof sizes / sizeof sizes[0])];
    return (i + k) % 5 == 0 ? n % 9 : n;     /* more tiny ones */
}

int main(int argc, char **argv)
{
    int rank, size;
    static MPI_Request rq[WIN + 2];
    static MPI_Status st[WIN + 2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* 1. capacity */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int flag = 0;
        for (int i = 0; i < WIN; i++) {
            kt_fill(sb[i], 8, i);
            KT_MPI(MPI_Isend(sb[i], 8, MPI_BYTE, 1, i, MPI_COMM_WORLD, &rq[i]));
        }
        KT_MPI(MPI_Testall(WIN, rq, &flag, MPI_STATUSES_IGNORE));
        KT_CHECK(flag, "128 Isends of 8 bytes did not all complete at once in a 4 KiB ring");
    } else if (rank == 1) {
        usleep(300000);                        /* not in MPI: nothing of the ring is read */
        for (int i = 0; i < WIN; i++) KT_MPI(MPI_Irecv(rb[i], 8, MPI_BYTE, 0, i, MPI_COMM_WORLD, &rq[i]));
        KT_MPI(MPI_Waitall(WIN, rq, st));
        for (int i = 0; i < WIN; i++) {
            int cnt;
            MPI_Get_count(&st[i], MPI_BYTE, &cnt);
            KT_EQ_INT(cnt, 8);
            kt_check_fill(rb[i], 8, i, "capacity");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2. order and contents, 40 rounds of a window */
    for (int k = 0; k < 40; k++) {
        int posted = k % 3 == 0;               /* else unexpected: rank 1 posts after the sends */
        if (rank == 0) {
            int m = 0;
            if (posted) KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 9000, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = 0; i < WIN; i++) {
                int n = msize(k, i);
                kt_fill(sb[i], n, k * WIN + i);
                if (i == 50 && k % 4 == 1) {          /* a rendezvous in the middle */
                    kt_fill(big, BIG, k);
                    KT_MPI(MPI_Isend(big, BIG, MPI_BYTE, 1, i, MPI_COMM_WORLD, &rq[m++]));
                } else if (i % 17 == 3) {             /* synchronous: not TINY */
                    KT_MPI(MPI_Issend(sb[i], n, MPI_BYTE, 1, i, MPI_COMM_WORLD, &rq[m++]));
                } else if (i % 11 == 5 && !posted) {  /* blocking (no cookie) */
                    KT_MPI(MPI_Send(sb[i], n, MPI_BYTE, 1, i, MPI_COMM_WORLD));
                } else {
                    KT_MPI(MPI_Isend(sb[i], n, MPI_BYTE, 1, i, MPI_COMM_WORLD, &rq[m++]));
                }
            }
            if (!posted) KT_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, 9001, MPI_COMM_WORLD));
            KT_MPI(MPI_Waitall(m, rq, MPI_STATUSES_IGNORE));
        } else if (rank == 1) {
            int cnt;
            if (posted) {
                for (int i = 0; i < WIN; i++) {
                    void *b = (i == 50 && k % 4 == 1) ? (void *)bigr : (void *)rb[i];
                    int cap = (i == 50 && k % 4 == 1) ? BIG : 520;
                    memset(rb[i], 0xee, sizeof rb[i]);
                    KT_MPI(MPI_Irecv(b, cap, MPI_BYTE, 0, i % 2 ? i : MPI_ANY_TAG, MPI_COMM_WORLD, &rq[i]));
                }
                KT_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, 9000, MPI_COMM_WORLD));
                KT_MPI(MPI_Waitall(WIN, rq, st));
            } else {
                /* everything is sent (unexpected, in the ring or queued) before any receive */
                KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 9001, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            }
            for (int i = 0; i < WIN; i++) {
                int n = msize(k, i), isbig = i == 50 && k % 4 == 1;
                if (!posted) {                         /* blocking receives in order (ANY_TAG half the time) */
                    memset(rb[i], 0xee, sizeof rb[i]);
                    KT_MPI(MPI_Recv(isbig ? (void *)bigr : (void *)rb[i], isbig ? BIG : 520, MPI_BYTE, 0,
                                    i % 2 ? i : MPI_ANY_TAG, MPI_COMM_WORLD, &st[i]));
                }
                MPI_Get_count(&st[i], MPI_BYTE, &cnt);
                KT_EQ_INT(st[i].MPI_TAG, i);
                KT_EQ_INT(st[i].MPI_SOURCE, 0);
                if (isbig) {
                    KT_EQ_INT(cnt, BIG);
                    kt_check_fill(bigr, BIG, k, "rendezvous");
                } else {
                    KT_EQ_INT(cnt, n);
                    kt_check_fill(rb[i], n, k * WIN + i, "window");
                    KT_EQ_INT(rb[i][n], 0xee);
                }
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. cancel of a TINY send waiting unexpected; the next message goes on as usual */
    if (rank == 0) {
        int cancelled = 0;
        kt_fill(sb[0], 4, 77);
        kt_fill(sb[1], 4, 78);
        KT_MPI(MPI_Isend(sb[0], 4, MPI_BYTE, 1, 77, MPI_COMM_WORLD, &rq[0]));
        KT_MPI(MPI_Cancel(&rq[0]));
        KT_MPI(MPI_Wait(&rq[0], &st[0]));
        MPI_Test_cancelled(&st[0], &cancelled);
        KT_CHECK(cancelled, "an Isend of 4 bytes that no receive matched was not cancelled");
        KT_MPI(MPI_Send(sb[1], 4, MPI_BYTE, 1, 78, MPI_COMM_WORLD));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        int flag = 1, cnt;
        KT_MPI(MPI_Iprobe(0, 77, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        KT_CHECK(!flag, "the cancelled message is still there");
        KT_MPI(MPI_Recv(rb[0], 8, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st[0]));
        MPI_Get_count(&st[0], MPI_BYTE, &cnt);
        KT_EQ_INT(cnt, 4);
        KT_EQ_INT(st[0].MPI_TAG, 78);
        kt_check_fill(rb[0], 4, 78, "after the cancel");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("shm_tiny: ok\n");
    MPI_Finalize();
    return 0;
}
