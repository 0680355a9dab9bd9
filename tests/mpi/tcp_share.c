/* tcp_share: rank 0 speaks first to every other rank, which then answers
 * over p2p/tcp: with p2p_tcp_share_connections (default) each answer travels over
 * the connection rank 0 opened (tests/scripts/tcp_share.sh checks that
 * from the log), so this checks that messages of every kind arrive whole
 * and in order over such a shared connection: ping-pongs of small
 * messages, sizes around the receiver's 16 KiB staging buffer and the
 * 8 KiB direct-read threshold, an eager 64 KiB, a rendezvous 1 MiB (its
 * CTS goes one way, the data the other), and a window of Isends that
 * fills the socket (queued, written on EPOLLOUT) in both directions at once.
 * Usage: tcp_share [pingpongs]   (default 2000) */
#include "kt.h"
#include <stdint.h>

static const size_t sizes[] = { 0, 1, 8, 56, 57, 8191, 8192, 16383, 16384, 16385, 65536, 1 << 20 };
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])
#define WINDOW 256
#define WLEN 3000

static unsigned char pat(int src, int k, size_t i)
{
    return (unsigned char)(i * 11 + (i >> 8) * 5 + k * 29 + src * 97 + 3);
}

static void fill(unsigned char *b, size_t n, int src, int k)
{
    for (size_t i = 0; i < n; i++) b[i] = pat(src, k, i);
}

static void check(const unsigned char *b, size_t n, int src, int k, const MPI_Status *st, const char *what)
{
    int cnt;
    KT_MPI(MPI_Get_count(st, MPI_BYTE, &cnt));
    if ((size_t)cnt != n) KT_FAIL("%s %d from %d: %d bytes, expected %zu", what, k, src, cnt, n);
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(src, k, i))
            KT_FAIL("%s %d (%zu bytes) from %d: byte %zu is %d, expected %d", what, k, n, src, i, b[i],
                    pat(src, k, i));
}

/* A window of Isends to peer and as many receives from it, both at once. */
static void window(int me, int peer, unsigned char *sb, unsigned char *rb)
{
    MPI_Request req[2 * WINDOW];
    MPI_Status st[2 * WINDOW];
    for (int i = 0; i < WINDOW; i++)
        KT_MPI(MPI_Irecv(rb + (size_t)i * WLEN, WLEN, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req[i]));
    for (int i = 0; i < WINDOW; i++) {
        size_t n = (size_t)(i * 131) % (WLEN + 1);
        fill(sb + (size_t)i * WLEN, n, me, 1000 + i);
        KT_MPI(MPI_Isend(sb + (size_t)i * WLEN, (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req[WINDOW + i]));
    }
    KT_MPI(MPI_Waitall(2 * WINDOW, req, st));
    for (int i = 0; i < WINDOW; i++)    /* same tag: the order must hold */
        check(rb + (size_t)i * WLEN, (size_t)(i * 131) % (WLEN + 1), peer, 1000 + i, &st[i], "window message");
}

int main(int argc, char **argv)
{
    int rank, size, n;
    unsigned char *sb, *rb;
    MPI_Status st;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    n = argc > 1 ? atoi(argv[1]) : 2000;
    KT_CHECK(size >= 2, "needs 2 ranks or more");
    sb = malloc((size_t)WINDOW * WLEN + (1 << 20));
    rb = malloc((size_t)WINDOW * WLEN + (1 << 20));
    KT_CHECK(sb && rb, "out of memory");

    for (int peer = 1; peer < size; peer++) {
        if (rank != 0 && rank != peer) continue;
        int other = rank == 0 ? peer : 0;
        /* rank 0's first message opens the connection; the peer answers */
        if (rank == 0) {
            fill(sb, 8, 0, 0);
            KT_MPI(MPI_Send(sb, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
        } else {
            KT_MPI(MPI_Recv(rb, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
            check(rb, 8, 0, 0, &st, "first message");
        }
        /* ping-pong of small messages, then every size both ways */
        for (int i = 0; i < n; i++) {
            size_t len = (size_t)(i % 9) * 8;
            if (rank == 0) {
                fill(sb, len, 0, i);
                KT_MPI(MPI_Send(sb, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD));
                KT_MPI(MPI_Recv(rb, 64, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &st));
                check(rb, len, peer, i, &st, "pong");
            } else {
                KT_MPI(MPI_Recv(rb, 64, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &st));
                check(rb, len, 0, i, &st, "ping");
                fill(sb, len, rank, i);
                KT_MPI(MPI_Send(sb, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD));
            }
        }
        for (int k = 0; k < NSIZES; k++) {
            size_t len = sizes[k];
            if (rank == 0) {
                KT_MPI(MPI_Recv(rb, (int)len, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &st));
                check(rb, len, peer, k, &st, "answer");
                fill(sb, len, 0, k);
                KT_MPI(MPI_Send(sb, (int)len, MPI_BYTE, peer, 3, MPI_COMM_WORLD));
            } else {
                fill(sb, len, rank, k);
                KT_MPI(MPI_Send(sb, (int)len, MPI_BYTE, 0, 3, MPI_COMM_WORLD));
                KT_MPI(MPI_Recv(rb, (int)len, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &st));
                check(rb, len, 0, k, &st, "reply");
            }
        }
        window(rank, other, sb, rb);
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    free(sb);
    free(rb);
    KT_MPI(MPI_Finalize());
    if (rank == 0) printf("tcp_share: ok (%d peers)\n", size - 1);
    return 0;
}
