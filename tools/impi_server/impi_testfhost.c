/* impi_testfhost: the start-up of the tests' foreign IMPI hosts
 * (impi_testfhost.h). */
#include "impi_testfhost.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void die(const char *who, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void die(const char *who, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", who);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

int *impi_tf_start(const struct impi_tf_args *a, struct kumi_impi_client *c, struct kumi_impi_job *job,
                   int *myhost)
{
    const char *who = a->who;
    if (kumi_impi_client_connect(c, a->server, a->timeout_s * 1000) != 0 ||
        kumi_impi_client_auth(c, 1u << KUMI_IMPI_AUTH_NONE, 0, NULL) != 0 || kumi_impi_client_impi(c, a->rank) != 0)
        die(who, "%s", c->err);
    struct sockaddr_in me;
    socklen_t ml = sizeof me;
    getsockname(c->fd, (struct sockaddr *)&me, &ml);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in la = { .sin_family = AF_INET };
    socklen_t ll = sizeof la;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&la, sizeof la) || listen(lfd, 16) ||
        getsockname(lfd, (struct sockaddr *)&la, &ll))
        die(who, "cannot listen");
    struct kumi_impi_host host = { .port = ntohs(la.sin_port), .nprocs = 1, .ackmark = a->ackmark,
                                   .hiwater = a->hiwater };
    struct kumi_impi_proc proc = { .pid = a->pid };
    kumi_impi_hostid_set(host.id, AF_INET, &me.sin_addr);
    memcpy(proc.id, host.id, 16);
    struct kumi_impi_mine mine = { .datalen = a->datalen, .tagub = 32767, .xsize = -1, .maxlinear = -1,
                                   .nhosts = 1, .nprocs = 1, .hosts = &host, .procs = &proc };
    if (kumi_impi_client_labels(c, &mine, job) != 0 || kumi_impi_client_done(c) != 0) die(who, "%s", c->err);
    int mh = job->first_host[a->rank];
    /* the dance (sheet §2): every host ranked lower: connect, send my host rank */
    int *hfd = calloc((size_t)job->nhosts, sizeof *hfd);
    if (!hfd) die(who, "out of memory");
    for (int h = 0; h < mh; h++) {
        uint8_t ad[16], r[4];
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)job->hosts[h].port) };
        if (kumi_impi_hostid_get(job->hosts[h].id, ad) != AF_INET) die(who, "host %d is not IPv4", h);
        memcpy(&sa.sin_addr, ad, 4);
        hfd[h] = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(hfd[h], (struct sockaddr *)&sa, sizeof sa) != 0) die(who, "connect to host %d failed", h);
        kumi_impi_put32(r, (uint32_t)mh);
        if (send(hfd[h], r, 4, 0) != 4) die(who, "dance: send to host %d", h);
    }
    /* ... and every higher one connects here and sends its host rank */
    for (int left = job->nhosts - 1 - mh; left > 0;) {
        struct pollfd lp = { .fd = lfd, .events = POLLIN };
        if (poll(&lp, 1, a->timeout_s * 1000) <= 0) die(who, "dance: timed out waiting for %d hosts", left);
        int s = accept(lfd, NULL, NULL);
        uint8_t r[4];
        size_t got = 0;
        while (s >= 0 && got < 4) {
            ssize_t x = recv(s, r + got, 4 - got, 0);
            if (x <= 0) die(who, "dance: a host sent no rank");
            got += (size_t)x;
        }
        uint32_t h = kumi_impi_get32(r);
        if (s < 0 || h <= (uint32_t)mh || h >= (uint32_t)job->nhosts || hfd[h])
            die(who, "dance: an unexpected host %u", h);
        hfd[h] = s;
        left--;
    }
    close(lfd);
    *myhost = mh;
    return hfd;
}
