/* kumi_proxy started by srun (mpiexec --launcher slurm, slurm.c): read the
 * job secret from stdin (srun --input=all gives every task the same line),
 * connect back to mpiexec ("--slurm ADDR:PORT,ADDR:PORT,...", IPv6 as
 * "[ADDR]:PORT": the first address that answers), present "KUMI-PROXY <node> <nodeid> <secret>\n" and make
 * that connection the link (fds 0 and 1), as ssh's channel is otherwise. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "mpiexec.h"

/* "1.2.3.4:80" or "[fd00::1]:80" -> a connected socket, or -1 */
static int connect_to(const char *item)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof ss);
    char host[INET6_ADDRSTRLEN + 1];
    const char *colon = strrchr(item, ':');
    if (!colon) return -1;
    long port = strtol(colon + 1, NULL, 10);
    if (port <= 0 || port > 65535) return -1;
    size_t hl = (size_t)(colon - item);
    if (hl >= 2 && item[0] == '[' && item[hl - 1] == ']') {
        if (hl - 2 >= sizeof host) return -1;
        memcpy(host, item + 1, hl - 2);
        host[hl - 2] = 0;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1) return -1;
        sl = sizeof *s6;
    } else {
        if (hl >= sizeof host) return -1;
        memcpy(host, item, hl);
        host[hl] = 0;
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, host, &s4->sin_addr) != 1) return -1;
        sl = sizeof *s4;
    }
    int s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (s < 0) return -1;
    if (connect(s, (struct sockaddr *)&ss, sl) < 0) {
        if (errno != EINPROGRESS) {
            close(s);
            return -1;
        }
        struct pollfd p = { .fd = s, .events = POLLOUT };
        int e = 0;
        socklen_t el = sizeof e;
        if (poll(&p, 1, 5000) != 1 || getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e) {
            close(s);
            return -1;
        }
    }
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
    return s;
}

int mx_proxy_slurm_connect(const char *where)
{
    char secret[128];
    size_t n = 0;
    while (n < sizeof secret - 1) {        /* one line from srun's stdin */
        ssize_t r = read(0, secret + n, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0 || secret[n] == '\n') break;
        n++;
    }
    secret[n] = 0;
    if (!n) {
        fprintf(stderr, "kumi_proxy: --slurm: no job secret on stdin (started by mpiexec --launcher slurm only)\n");
        return -1;
    }
    if (!*where || !strchr(where, ':')) {
        fprintf(stderr, "kumi_proxy: --slurm %s: expected ADDR:PORT[,ADDR:PORT...]\n", where);
        return -1;
    }
    const char *node = getenv("SLURMD_NODENAME"), *nid = getenv("SLURM_NODEID");
    char hn[256] = "?";
    if (!node || !*node) node = gethostname(hn, sizeof hn - 1) == 0 ? hn : "?";
    int s = -1;
    for (const char *a = where; *a && s < 0;) {    /* the first address that answers */
        size_t l = strcspn(a, ",");
        char item[128];
        if (l < sizeof item) {
            memcpy(item, a, l);
            item[l] = 0;
            s = connect_to(item);
        }
        a += l + (a[l] == ',');
    }
    if (s < 0) {
        fprintf(stderr, "kumi_proxy on %s: cannot connect to mpiexec at %s\n", node, where);
        return -1;
    }
    char h[512];
    int hl = snprintf(h, sizeof h, "KUMI-PROXY %s %s %s\n", node, nid && *nid ? nid : "-1", secret);
    memset(secret, 0, sizeof secret);
    if (hl >= (int)sizeof h || write(s, h, (size_t)hl) != hl) {
        fprintf(stderr, "kumi_proxy on %s: cannot write to mpiexec: %s\n", node, strerror(errno));
        return -1;
    }
    if (dup2(s, 0) < 0 || dup2(s, 1) < 0) return -1;
    close(s);
    return 0;
}
