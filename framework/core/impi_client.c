/* The client side of the IMPI start-up exchange (kumi/impi.h): connect,
 * AUTH, IMPI, the COLL label rounds, DONE, FINI, over a blocking socket with
 * every wait bounded by poll().  Errors name the server address and the step
 * that failed; nothing is printed here (the caller decides). */
#include <kumi/impi.h>
#include <kumi/netif.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int cfail(struct kumi_impi_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cfail(struct kumi_impi_client *c, const char *fmt, ...)
{
    char msg[sizeof c->err - 100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->err, sizeof c->err, "IMPI server %s: %s", c->server[0] ? c->server : "?", msg);
    return -1;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is ready for ev, at most until deadline (< 0: no bound). 0 / -1 (timeout) / -2 (error). */
static int wait_fd(int fd, short ev, long long deadline)
{
    for (;;) {
        int t = -1;
        if (deadline >= 0) {
            long long left = deadline - now_ms();
            if (left <= 0)
                return -1;
            t = left > 1000000 ? 1000000 : (int)left;
        }
        struct pollfd p = { .fd = fd, .events = ev };
        int r = poll(&p, 1, t);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -2;
    }
}

static long long deadline_of(const struct kumi_impi_client *c)
{
    return c->timeout_ms > 0 ? now_ms() + c->timeout_ms : -1;
}

static int send_all(struct kumi_impi_client *c, const void *buf, size_t n, const char *what)
{
    const uint8_t *p = buf;
    long long dl = deadline_of(c);
    while (n) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            int r = wait_fd(c->fd, POLLOUT, dl);
            if (r == -1)
                return cfail(c, "sending %s: no progress for %d ms", what, c->timeout_ms);
            if (r == -2)
                return cfail(c, "sending %s: poll: %s", what, strerror(errno));
            continue;
        }
        return cfail(c, "sending %s: %s", what, w < 0 ? strerror(errno) : "connection closed");
    }
    return 0;
}

static int recv_all(struct kumi_impi_client *c, void *buf, size_t n, const char *what)
{
    uint8_t *p = buf;
    long long dl = deadline_of(c);
    while (n) {
        int r = wait_fd(c->fd, POLLIN, dl);
        if (r == -1)
            return cfail(c, "waiting for %s: nothing came for %d ms", what, c->timeout_ms);
        if (r == -2)
            return cfail(c, "waiting for %s: poll: %s", what, strerror(errno));
        ssize_t got = recv(c->fd, p, n, MSG_DONTWAIT);
        if (got > 0) {
            p += got;
            n -= (size_t)got;
        } else if (got == 0 || errno == ECONNRESET) {
            /* a reset is a close too: the server closed with this client's
             * next command unread (a wrong key refused at once) */
            return cfail(c, "the server closed the connection%s while this client waited for %s",
                         got ? " (reset)" : "", what);
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return cfail(c, "waiting for %s: %s", what, strerror(errno));
        }
    }
    return 0;
}

/* One server frame: header, then its payload into *payload (malloc'ed; NULL
 * when len is 0), parsed strictly. */
static int recv_frame(struct kumi_impi_client *c, const char *what, struct kumi_impi_frame *f, uint8_t **frame)
{
    uint8_t hdr[KUMI_IMPI_CMD_HDR];
    char err[200];
    *frame = NULL;
    if (recv_all(c, hdr, sizeof hdr, what) != 0)
        return -1;
    /* header alone first: refuses an unknown command or a bad length before allocating */
    int r = kumi_impi_frame_parse(hdr, sizeof hdr, KUMI_IMPI_S2C, 0, f, err, sizeof err);
    if (r == KUMI_IMPI_BAD)
        return cfail(c, "waiting for %s: bad reply: %s", what, err);
    uint32_t len = kumi_impi_get32(hdr + 4);
    uint8_t *buf = malloc(KUMI_IMPI_CMD_HDR + (size_t)len);
    if (!buf)
        return cfail(c, "waiting for %s: out of memory for %u bytes", what, len);
    memcpy(buf, hdr, sizeof hdr);
    if (len && recv_all(c, buf + KUMI_IMPI_CMD_HDR, len, what) != 0) {
        free(buf);
        return -1;
    }
    r = kumi_impi_frame_parse(buf, KUMI_IMPI_CMD_HDR + (size_t)len, KUMI_IMPI_S2C, 0, f, err, sizeof err);
    if (r <= 0) {
        free(buf);
        return cfail(c, "waiting for %s: bad reply: %s", what, r == KUMI_IMPI_BAD ? err : "truncated");
    }
    *frame = buf;
    return 0;
}

static int connect_to(struct kumi_impi_client *c, const struct sockaddr *sa, socklen_t salen, long long dl)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return cfail(c, "socket: %s", strerror(errno));
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    if (connect(fd, sa, salen) != 0 && errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        return cfail(c, "connect: %s", strerror(e));
    }
    int r = wait_fd(fd, POLLOUT, dl), soerr = 0;
    socklen_t sl = sizeof soerr;
    if (r == 0)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (r != 0 || soerr) {
        close(fd);
        return r == -1 ? cfail(c, "connect: no answer in %d ms", c->timeout_ms)
                       : cfail(c, "connect: %s", strerror(soerr ? soerr : errno));
    }
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->fd = fd;
    return 0;
}

int kumi_impi_client_connect(struct kumi_impi_client *c, const char *hostport, int timeout_ms)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->rank = c->size = -1;
    c->timeout_ms = timeout_ms;
    snprintf(c->server, sizeof c->server, "%s", hostport ? hostport : "");
    if (!hostport || !*hostport)
        return cfail(c, "no server address given (host:port)");
    long long dl = deadline_of(c);
    struct sockaddr_storage ss;
    socklen_t sl;
    if (kumi_netif_parse(hostport, &ss, &sl, 0) == 0)
        return connect_to(c, (struct sockaddr *)&ss, sl, dl);
    /* name:port */
    const char *colon = strrchr(hostport, ':');
    if (!colon || colon == hostport || !colon[1])
        return cfail(c, "not a host:port address");
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - hostport), hostport);
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
    int g = getaddrinfo(host, colon + 1, &hints, &res);
    if (g != 0)
        return cfail(c, "cannot resolve: %s", gai_strerror(g));
    int r = -1;
    for (struct addrinfo *a = res; a && r != 0; a = a->ai_next)
        r = connect_to(c, a->ai_addr, a->ai_addrlen, dl);
    freeaddrinfo(res);
    return r;
}

int kumi_impi_client_auth(struct kumi_impi_client *c, uint32_t mask, uint64_t key, int *chosen)
{
    uint8_t out[12], in[8];
    char err[200];
    int32_t which, len;
    if (!(mask & KUMI_IMPI_AUTH_MASK_ALL))
        return cfail(c, "no authentication mechanism enabled (NONE or KEY)");
    kumi_impi_enc_auth(out, mask);
    if (send_all(c, out, sizeof out, "AUTH") != 0 || recv_all(c, in, sizeof in, "the server's AUTH choice") != 0)
        return -1;
    if (kumi_impi_dec_server_auth(in, mask, &which, &len, err, sizeof err) != 0)
        return cfail(c, "AUTH: %s", err);
    if (chosen)
        *chosen = which;
    if (which == KUMI_IMPI_AUTH_KEY) {
        kumi_impi_put64(out, key);
        if (send_all(c, out, 8, "the AUTH key") != 0)
            return -1;
        c->key_sent_ms = now_ms();
    }
    return 0;
}

int kumi_impi_client_impi(struct kumi_impi_client *c, int rank)
{
    uint8_t out[12], *fr;
    struct kumi_impi_frame f;
    c->rank = rank;
    kumi_impi_enc_impi(out, rank);
    if (send_all(c, out, sizeof out, "IMPI") != 0)
        return -1;
    /* a refused key shows here: the server closes the connection */
    if (recv_frame(c, "the IMPI reply (the number of clients)", &f, &fr) != 0) {
        /* a server refuses a wrong key by closing at once; later closes have other reasons */
        if (c->key_sent_ms && now_ms() - c->key_sent_ms < 1000 && strstr(c->err, "closed the connection")) {
            size_t l = strlen(c->err);
            snprintf(c->err + l, sizeof c->err - l, " at once after the key: was the key right?");
        }
        return -1;
    }
    free(fr);
    if (f.cmd != KUMI_IMPI_CMD_IMPI)
        return cfail(c, "expected the IMPI reply, got %s", kumi_impi_cmd_name(f.cmd));
    if (rank >= f.value)
        return cfail(c, "this client's rank %d is not below the number of clients %d", rank, f.value);
    c->size = f.value;
    return 0;
}

int kumi_impi_client_coll(struct kumi_impi_client *c, uint32_t label, const void *data, size_t n,
                          uint32_t *mask, uint8_t **out, size_t *nout)
{
    uint8_t hdr[16], *fr;
    struct kumi_impi_frame f;
    char what[64], err[200];
    const char *ln = kumi_impi_label_name(label);
    *out = NULL;
    *nout = 0;
    if (kumi_impi_label_check(label, n, 0, err, sizeof err) != 0)
        return cfail(c, "not sent: %s", err);
    snprintf(what, sizeof what, "label %s", ln);
    size_t h = kumi_impi_enc_coll_hdr(hdr, KUMI_IMPI_C2S, label, 0, n);
    if (send_all(c, hdr, h, what) != 0 || send_all(c, data, n, what) != 0)
        return -1;
    snprintf(what, sizeof what, "the reply to label %s", ln);
    if (recv_frame(c, what, &f, &fr) != 0)
        return -1;
    if (f.cmd != KUMI_IMPI_CMD_COLL || f.label != label) {
        free(fr);
        return f.cmd != KUMI_IMPI_CMD_COLL ? cfail(c, "expected %s, got %s", what, kumi_impi_cmd_name(f.cmd))
                                           : cfail(c, "expected %s, got label %s", what, kumi_impi_label_name(f.label));
    }
    uint8_t *d = malloc(f.ndata ? f.ndata : 1);
    if (!d) {
        free(fr);
        return cfail(c, "out of memory");
    }
    memcpy(d, f.data, f.ndata);
    *out = d;
    *nout = f.ndata;
    *mask = f.mask;
    free(fr);
    return 0;
}

int kumi_impi_client_labels(struct kumi_impi_client *c, const struct kumi_impi_mine *m, struct kumi_impi_job *job)
{
    char err[240];
    memset(job, 0, sizeof *job);
    job->nclients = c->size;
    if (m->nhosts < 1 || m->nprocs < 1)
        return cfail(c, "a client needs at least one host and one proc (%d, %d)", m->nhosts, m->nprocs);
    for (int i = 0; i < KUMI_IMPI_NLABELS; i++) {
        uint32_t label = kumi_impi_label_order[i], mask;
        size_t n = kumi_impi_label_encode(label, m, NULL), nr;
        uint8_t *mine = malloc(n ? n : 1), *all;
        if (!mine)
            return cfail(c, "out of memory");
        kumi_impi_label_encode(label, m, mine);
        int r = kumi_impi_client_coll(c, label, mine, n, &mask, &all, &nr);
        free(mine);
        if (r != 0)
            return -1;
        r = kumi_impi_job_add(job, label, mask, all, nr, err, sizeof err);
        free(all);
        if (r != 0)
            return cfail(c, "%s", err);
    }
    if (kumi_impi_job_finish(job, err, sizeof err) != 0)
        return cfail(c, "%s", err);
    return 0;
}

int kumi_impi_client_done(struct kumi_impi_client *c)
{
    uint8_t out[8], *fr;
    struct kumi_impi_frame f;
    kumi_impi_enc_cmd(out, KUMI_IMPI_CMD_DONE, 0);
    if (send_all(c, out, sizeof out, "DONE") != 0)
        return -1;
    if (recv_frame(c, "the server's DONE (every client done)", &f, &fr) != 0)
        return -1;
    free(fr);
    if (f.cmd != KUMI_IMPI_CMD_DONE)
        return cfail(c, "expected DONE, got %s", kumi_impi_cmd_name(f.cmd));
    return 0;
}

int kumi_impi_client_fini(struct kumi_impi_client *c)
{
    uint8_t out[8];
    kumi_impi_enc_cmd(out, KUMI_IMPI_CMD_FINI, 0);
    int r = send_all(c, out, sizeof out, "FINI");
    kumi_impi_client_close(c);
    return r;
}

void kumi_impi_client_close(struct kumi_impi_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

int kumi_impi_job_read(const char *path, struct kumi_impi_job *job, int *myclient, char *err, size_t errlen)
{
    char why[320] = "";
    uint8_t h[12];
    memset(job, 0, sizeof *job);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read the IMPI job file %s: %s", path, strerror(errno));
        return -1;
    }
    if (fread(h, 1, 12, f) != 12 || kumi_impi_get32(h) != 0x4b494d50u) {
        fclose(f);
        snprintf(err, errlen, "%s is not an IMPI job file of mpiexec", path);
        return -1;
    }
    if (myclient) *myclient = (int)kumi_impi_get32(h + 4);
    job->nclients = (int)kumi_impi_get32(h + 8);
    int bad = job->nclients < 1 || job->nclients > KUMI_IMPI_MAX_CLIENTS;
    if (bad) snprintf(why, sizeof why, "%d clients", job->nclients);
    while (!bad && fread(h, 1, 12, f) == 12) {
        uint32_t label = kumi_impi_get32(h), mask = kumi_impi_get32(h + 4), len = kumi_impi_get32(h + 8);
        uint8_t *d = len <= KUMI_IMPI_MAX_PAYLOAD ? malloc(len ? len : 1) : NULL;
        if (!d || fread(d, 1, len, f) != len) {
            snprintf(why, sizeof why, "truncated");
            bad = 1;
        } else if (kumi_impi_job_add(job, label, mask, d, len, why, sizeof why) != 0) {
            bad = 1;
        }
        free(d);
    }
    fclose(f);
    if (bad || kumi_impi_job_finish(job, why, sizeof why) != 0) {
        snprintf(err, errlen, "the IMPI job file %s: %s", path, why[0] ? why : "malformed");
        kumi_impi_job_free(job);
        return -1;
    }
    return 0;
}
