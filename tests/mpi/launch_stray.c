/* launch_stray: connections to mpiexec's control port that are not ranks
 * must be closed and ignored without harming the job.  Rank 0 opens, while
 * the job runs: a connection writing junk, a HELLO with a wrong secret, one
 * with the right secret but a rank that is already connected, one with a
 * rank out of range, a truncated frame, and several that say nothing.  Each
 * must be closed by mpiexec (the silent ones after its HELLO timeout); then
 * every rank checks that the job still works (allreduce, barrier).
 *   launch_stray [sleep S]   with sleep: no strays from inside, every rank
 *                            sleeps S seconds (tests/scripts/launch_stray.sh
 *                            sends junk from outside meanwhile) */
#include <mpi.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "kt.h"

static int stray_connect(void)
{
    const char *ctl = getenv("KUMI_CONTROL");
    KT_CHECK(ctl != NULL, "KUMI_CONTROL not set (run under mpiexec)");
    const char *colon = strrchr(ctl, ':');
    KT_CHECK(colon != NULL, "bad KUMI_CONTROL %s", ctl);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)atoi(colon + 1));
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - ctl), ctl);
    KT_CHECK(inet_pton(AF_INET, host, &a.sin_addr) == 1, "bad host %s", host);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    KT_CHECK(fd >= 0, "socket");
    KT_CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect to %s failed", ctl);
    return fd;
}

/* 1 if the peer closes fd within secs (any data it sends is skipped). */
static int closed_within(int fd, double secs)
{
    double end = kt_now() + secs;
    int refused = 0;
    for (;;) {
        double left = end - kt_now();
        if (left <= 0) return 0;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, (int)(left * 1000) + 1) <= 0) continue;
        unsigned char b[512];
        ssize_t n = recv(fd, b, sizeof b, 0);
        if (n <= 0) return 1;
        /* a stray is never accepted: at most a HELLO_REFUSED (type 0x82,
         * kumi/launch_proto.h) with its reason, never HELLO_OK */
        if (refused || (n >= 5 && b[4] == 0x82)) {
            refused = 1;
            continue;
        }
        KT_FAIL("mpiexec answered a stray connection with %zd bytes (type 0x%x)", n, n >= 5 ? b[4] : 0);
    }
}

static void put_u32(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

/* A HELLO frame (see kumi/launch_proto.h). */
static int hello(const char *secret, unsigned rank)
{
    unsigned char f[5 + 32 + 8];
    put_u32(f, 1 + 32 + 8);
    f[4] = 1;
    memcpy(f + 5, secret, 32);
    put_u32(f + 37, rank);
    put_u32(f + 41, (unsigned)getpid());
    int fd = stray_connect();
    KT_CHECK(write(fd, f, sizeof f) == (ssize_t)sizeof f, "write");
    return fd;
}

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int nap = argc > 2 && strcmp(argv[1], "sleep") == 0 ? atoi(argv[2]) : -1;
    if (nap >= 0) sleep((unsigned)nap);
    if (rank == 0 && nap < 0) {
        const char *secret = getenv("KUMI_JOB_SECRET");
        KT_CHECK(secret && strlen(secret) == 32, "KUMI_JOB_SECRET");
        char wrong[33];
        memcpy(wrong, secret, 33);
        wrong[5] = wrong[5] == '0' ? '1' : '0';

        int silent[8];
        for (int i = 0; i < 8; i++) silent[i] = stray_connect();
        int junk = stray_connect();
        const char *http = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
        KT_CHECK(write(junk, http, strlen(http)) > 0, "write");
        int bad = hello(wrong, 1);
        int dup = hello(secret, 0);                    /* rank 0 is connected already */
        int range = hello(secret, (unsigned)size);     /* no such rank */
        int trunc = stray_connect();
        KT_CHECK(write(trunc, "\0\0\0", 3) == 3, "write");
        double t0 = kt_now();
        KT_CHECK(closed_within(junk, 5), "junk connection not closed");
        KT_CHECK(closed_within(bad, 5), "wrong-secret connection not closed");
        KT_CHECK(closed_within(dup, 5), "duplicate-rank connection not closed");
        KT_CHECK(closed_within(range, 5), "out-of-range rank connection not closed");
        KT_CHECK(closed_within(trunc, 10), "truncated-frame connection not closed");
        for (int i = 0; i < 8; i++) KT_CHECK(closed_within(silent[i], 10), "silent connection %d not closed", i);
        double t = kt_now() - t0;
        KT_CHECK(t < 10, "closing the strays took %.1f s", t);
        close(junk); close(bad); close(dup); close(range); close(trunc);
        for (int i = 0; i < 8; i++) close(silent[i]);
    }
    /* the job still works */
    int sum = -1;
    KT_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    KT_EQ_INT(sum, size * (size - 1) / 2);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    KT_MPI(MPI_Finalize());
    if (rank == 0) printf("stray ok\n");
    return 0;
}
