/* impi_server: the IMPI server (IMPI protocol 0.0) for N clients.
 *
 *   impi_server -n N [-port P | -port LO:HI] [-host ADDR] [-auth KEY]
 *               [-portfile FILE] [-timeout SECONDS] [-v]
 *
 * Prints "host:port" on stdout (and into FILE) for the clients, then runs
 * the start-up exchange of ../shared/impi/PROTOCOL.md §1: AUTH (negotiated:
 * mask -> choice -> key; or the draft's old 8-byte key), IMPI (ranks in,
 * the number of clients out once every client is in), the COLL label rounds
 * (a label's reply, every client's contribution in client order with the
 * client mask, goes to every client as soon as every client sent it), DONE
 * (answered once every client sent it) and FINI (exit 0 once every client
 * sent it).  The server does not interpret the labels beyond checking their
 * sizes: it is the "stupid" rendezvous of the standard.
 *
 * Failures: a connection that does not authenticate (first command not
 * AUTH, no common mechanism, wrong key) or names a bad or taken rank is
 * refused (closed, message on stderr); the server keeps waiting for the
 * right client.  Until the start-up is done every wait is bounded by
 * -timeout (default 300 s, 0 = none): a client that never comes, or stalls
 * while the others wait for it, ends the server with a message naming it.
 * A client whose connection closes before FINI, or that breaks the protocol,
 * ends the job: the server closes every other client's connection (that is
 * how they learn) and exits 1.  Usage errors exit 2. */
#define _GNU_SOURCE
#include <kumi/impi.h>
#include <kumi/netif.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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

#define MAXCONN 128                    /* clients and connections not yet authenticated */
#define AUTH_TIMEOUT_S 60

enum state { ST_AUTH, ST_KEY, ST_RANK, ST_IN, ST_FINI, ST_GONE };

struct conn {
    int fd;
    char addr[KUMI_NETIF_ADDRSTR];
    enum state st;
    int rank;
    uint8_t *in;
    size_t inlen, incap;
    uint8_t *out;
    size_t outlen, outoff;
    long long since;                   /* accepted at */
};

static struct {
    int n;                             /* clients expected */
    int have_key;
    uint64_t key;
    int timeout_s;
    int verbose;
    int lfd;
    struct conn c[MAXCONN];
    int nconn;
    int client[KUMI_IMPI_MAX_CLIENTS];  /* rank -> index in c, -1 */
    int registered;
    int started;                       /* IMPI replies sent */
    /* label rounds, by index in kumi_impi_label_order */
    uint32_t got[KUMI_IMPI_NLABELS];   /* clients that contributed */
    int complete[KUMI_IMPI_NLABELS];
    uint8_t *data[KUMI_IMPI_NLABELS][KUMI_IMPI_MAX_CLIENTS];
    size_t ndata[KUMI_IMPI_NLABELS][KUMI_IMPI_MAX_CLIENTS];
    uint32_t count[2][KUMI_IMPI_MAX_CLIENTS];  /* C_NHOSTS, C_NPROCS of each client (0: not yet) */
    uint32_t done;                     /* clients that sent DONE */
    int all_done;
    uint32_t fini;
    long long t0, progress;            /* start; last frame from a client during start-up */
} S;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void vlog(const char *fmt, ...)
{
    if (!S.verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "impi_server: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "impi_server: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *who(const struct conn *c)
{
    static char buf[2][128];
    static int k;
    k ^= 1;
    if (c->rank >= 0)
        snprintf(buf[k], sizeof buf[k], "client %d (%s)", c->rank, c->addr);
    else
        snprintf(buf[k], sizeof buf[k], "connection from %s", c->addr);
    return buf[k];
}

static void drop(struct conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->in);
    free(c->out);
    c->in = c->out = NULL;
    c->inlen = c->incap = c->outlen = c->outoff = 0;
    if (c->st != ST_FINI)
        c->st = ST_GONE;
}

/* The job failed: every client learns it by its connection closing. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "impi_server: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    int told = 0;
    for (int i = 0; i < S.nconn; i++)
        if (S.c[i].fd >= 0) {
            /* an orderly end of stream (FIN) where possible: what the client sent and the server
             * did not read would make the close a reset */
            char sink[4096];
            told += S.c[i].rank >= 0;
            shutdown(S.c[i].fd, SHUT_WR);
            while (recv(S.c[i].fd, sink, sizeof sink, MSG_DONTWAIT) > 0)
                ;
            close(S.c[i].fd);
        }
    if (told)
        fprintf(stderr, "impi_server: closed the connections of %d client(s) to tell them\n", told);
    exit(1);
}

static void refuse(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(struct conn *c, const char *fmt, ...)
{
    char m[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    msg("refused the %s: %s", who(c), m);
    drop(c);
}

static void queue(struct conn *c, const void *p, size_t n)
{
    if (c->fd < 0)
        return;
    if (c->outoff == c->outlen)
        c->outoff = c->outlen = 0;
    uint8_t *o = realloc(c->out, c->outlen + n);
    if (!o)
        die("out of memory queueing %zu bytes for the %s", n, who(c));
    c->out = o;
    memcpy(o + c->outlen, p, n);
    c->outlen += n;
}

static void flush(struct conn *c)
{
    while (c->fd >= 0 && c->outoff < c->outlen) {
        ssize_t w = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            c->outoff += (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            return;
        } else if (c->rank >= 0 && c->st != ST_FINI) {
            char m[128];
            snprintf(m, sizeof m, "%s", who(c));
            const char *why = w < 0 ? strerror(errno) : "closed";
            drop(c);
            die("%s is gone (sending: %s)", m, why);
        } else {
            drop(c);
        }
    }
}

static uint32_t all_mask(void)
{
    return S.n == 32 ? 0xffffffffu : (1u << S.n) - 1;
}

static void send_round(int li, uint32_t mask)
{
    uint32_t label = kumi_impi_label_order[li];
    size_t total = 0;
    for (int r = 0; r < S.n; r++)
        if (mask & (1u << r))
            total += S.ndata[li][r];
    uint8_t hdr[16];
    size_t h = kumi_impi_enc_coll_hdr(hdr, KUMI_IMPI_S2C, label, mask, total);
    for (int r = 0; r < S.n; r++) {
        struct conn *c = &S.c[S.client[r]];
        queue(c, hdr, h);
        for (int k = 0; k < S.n; k++)
            if (mask & (1u << k))
                queue(c, S.data[li][k], S.ndata[li][k]);
    }
    for (int k = 0; k < S.n; k++) {
        free(S.data[li][k]);
        S.data[li][k] = NULL;
    }
    S.complete[li] = 1;
    vlog("label %s: sent %zu bytes of %d client(s) (mask 0x%x) to every client", kumi_impi_label_name(label),
         total, __builtin_popcount(mask), mask);
}

static int label_slot(uint32_t label)
{
    for (int i = 0; i < KUMI_IMPI_NLABELS; i++)
        if (kumi_impi_label_order[i] == label)
            return i;
    return -1;
}

static void on_coll(struct conn *c, const struct kumi_impi_frame *f)
{
    int li = label_slot(f->label), scope, r = c->rank;
    const char *ln = kumi_impi_label_name(f->label);
    size_t e;
    char err[200];
    if (S.done & (1u << r))
        die("%s sent label %s after its DONE", who(c), ln);
    if (S.complete[li] || (S.got[li] & (1u << r)))
        die("%s sent label %s twice", who(c), ln);
    kumi_impi_label_info(f->label, &scope, &e);
    uint32_t cnt = scope == 'H' ? S.count[0][r] : scope == 'P' ? S.count[1][r] : 0;
    if (kumi_impi_label_check(f->label, f->ndata, cnt, err, sizeof err) != 0)
        die("%s: %s", who(c), err);
    if (f->label == KUMI_IMPI_C_NHOSTS || f->label == KUMI_IMPI_C_NPROCS) {
        int32_t v = (int32_t)kumi_impi_get32(f->data);
        if (v < 1)
            die("%s announces %d in label %s (at least 1)", who(c), v, ln);
        S.count[f->label == KUMI_IMPI_C_NPROCS][r] = (uint32_t)v;
    }
    if (!(S.data[li][r] = malloc(f->ndata ? f->ndata : 1)))
        die("out of memory for label %s of the %s", ln, who(c));
    memcpy(S.data[li][r], f->data, f->ndata);
    S.ndata[li][r] = f->ndata;
    S.got[li] |= 1u << r;
    vlog("%s: label %s, %zu bytes", who(c), ln, f->ndata);
    if (S.got[li] == all_mask())
        send_round(li, S.got[li]);
}

static void on_done(struct conn *c)
{
    S.done |= 1u << c->rank;
    vlog("%s: DONE", who(c));
    if (S.done != all_mask())
        return;
    /* labels that not every client sent: what came, with its mask (sheet §1.8) */
    for (int li = 0; li < KUMI_IMPI_NLABELS; li++)
        if (!S.complete[li] && S.got[li])
            send_round(li, S.got[li]);
    uint8_t d[8];
    kumi_impi_enc_cmd(d, KUMI_IMPI_CMD_DONE, 0);
    for (int r = 0; r < S.n; r++)
        queue(&S.c[S.client[r]], d, sizeof d);
    S.all_done = 1;
    vlog("every client sent DONE: start-up complete, waiting for FINI");
}

static void on_rank(struct conn *c, int rank)
{
    if (rank >= S.n) {
        refuse(c, "client rank %d, but this server has %d client(s) (0..%d)", rank, S.n, S.n - 1);
        return;
    }
    if (S.client[rank] >= 0) {
        refuse(c, "client rank %d is already taken by the connection from %s", rank, S.c[S.client[rank]].addr);
        return;
    }
    c->rank = rank;
    c->st = ST_IN;
    S.client[rank] = (int)(c - S.c);
    S.registered++;
    S.progress = now_ms();
    vlog("%s: IMPI rank %d (%d of %d)", who(c), rank, S.registered, S.n);
    if (S.registered < S.n)
        return;
    uint8_t out[12];
    kumi_impi_enc_impi(out, S.n);
    for (int r = 0; r < S.n; r++)
        queue(&S.c[S.client[r]], out, sizeof out);
    S.started = 1;
    /* the listener is no longer needed; connections still in AUTH are extra */
    close(S.lfd);
    S.lfd = -1;
    for (int i = 0; i < S.nconn; i++)
        if (S.c[i].fd >= 0 && S.c[i].rank < 0)
            refuse(&S.c[i], "all %d clients are already in", S.n);
    vlog("every client is in: sent IMPI size %d", S.n);
}

/* One step on a connection's input; returns the bytes taken, 0 for "need more". */
static size_t step(struct conn *c)
{
    struct kumi_impi_frame f;
    char err[200];
    if (c->st == ST_KEY) {
        if (c->inlen < 8)
            return 0;
        if (kumi_impi_get64(c->in) != S.key) {
            refuse(c, "wrong key");
            return 0;
        }
        vlog("%s: key accepted", who(c));
        c->st = ST_RANK;
        return 8;
    }
    int r = kumi_impi_frame_parse(c->in, c->inlen, KUMI_IMPI_C2S, 0, &f, err, sizeof err);
    if (r == KUMI_IMPI_BAD) {
        if (c->rank < 0)
            refuse(c, "%s: %s", c->st == ST_AUTH ? "in its first command" : "before its IMPI rank", err);
        else
            die("%s broke the protocol: %s", who(c), err);
        return 0;
    }
    if (r == KUMI_IMPI_MORE) {
        /* the first command must be AUTH: say so as soon as its code is there */
        if (c->st == ST_AUTH && c->inlen >= 4 && kumi_impi_get32(c->in) != KUMI_IMPI_CMD_AUTH)
            refuse(c, "its first command is %s, not AUTH", kumi_impi_cmd_name(kumi_impi_get32(c->in)));
        return 0;
    }
    if (c->rank >= 0)
        S.progress = now_ms();
    switch (c->st) {
    case ST_AUTH:
        if (f.cmd != KUMI_IMPI_CMD_AUTH) {
            refuse(c, "its first command is %s, not AUTH", kumi_impi_cmd_name(f.cmd));
            return 0;
        }
        if (f.auth_oldkey) {           /* the draft's old text: key, no reply */
            if (S.have_key && f.auth_key != S.key) {
                refuse(c, "wrong key (AUTH with a key, the draft's old form)");
                return 0;
            }
            c->st = ST_RANK;
            vlog("%s: old-form AUTH accepted", who(c));
        } else if (S.have_key) {
            if (!(f.auth_mask & (1u << KUMI_IMPI_AUTH_KEY))) {
                refuse(c, "this server requires a key (-auth) but the client offers only NONE (mask 0x%x)",
                       f.auth_mask);
                return 0;
            }
            uint8_t o[8];
            queue(c, o, kumi_impi_enc_server_auth(o, KUMI_IMPI_AUTH_KEY, 8));
            c->st = ST_KEY;
        } else {
            if (!(f.auth_mask & (1u << KUMI_IMPI_AUTH_NONE))) {
                refuse(c, "the client offers only KEY (mask 0x%x) but this server has no key (give it -auth KEY)",
                       f.auth_mask);
                return 0;
            }
            uint8_t o[8];
            queue(c, o, kumi_impi_enc_server_auth(o, KUMI_IMPI_AUTH_NONE, 0));
            c->st = ST_RANK;
            vlog("%s: AUTH NONE", who(c));
        }
        break;
    case ST_RANK:
        if (f.cmd != KUMI_IMPI_CMD_IMPI) {
            refuse(c, "sent %s where its IMPI rank was due", kumi_impi_cmd_name(f.cmd));
            return 0;
        }
        on_rank(c, f.value);
        break;
    case ST_IN:
        switch (f.cmd) {
        case KUMI_IMPI_CMD_COLL: on_coll(c, &f); break;
        case KUMI_IMPI_CMD_DONE:
            if (S.done & (1u << c->rank))
                die("%s sent DONE twice", who(c));
            on_done(c);
            break;
        case KUMI_IMPI_CMD_FINI:
            if (!S.all_done)
                die("%s sent FINI during the start-up (before every client's DONE)", who(c));
            S.fini |= 1u << c->rank;
            c->st = ST_FINI;
            vlog("%s: FINI (%d of %d)", who(c), __builtin_popcount(S.fini), S.n);
            break;
        default:
            die("%s sent %s after the start of the exchange", who(c), kumi_impi_cmd_name(f.cmd));
        }
        break;
    case ST_FINI:
        die("%s sent %s after its FINI", who(c), kumi_impi_cmd_name(f.cmd));
    default:
        break;
    }
    return (size_t)r;
}

static void on_input(struct conn *c)
{
    if (c->incap - c->inlen < 65536) {
        size_t cap = c->incap ? c->incap * 2 : 65536;
        uint8_t *p = realloc(c->in, cap);
        if (!p)
            die("out of memory reading from the %s", who(c));
        c->in = p;
        c->incap = cap;
    }
    ssize_t got = recv(c->fd, c->in + c->inlen, c->incap - c->inlen, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (got <= 0) {
        const char *why = got < 0 ? strerror(errno) : "closed";
        if (c->st == ST_FINI) {
            drop(c);
            return;
        }
        if (c->rank < 0) {
            vlog("the %s went away before its IMPI rank (%s)", who(c), why);
            drop(c);
            return;
        }
        char w[128];
        snprintf(w, sizeof w, "%s", who(c));
        drop(c);
        die("%s closed its connection before FINI (%s, %s): the job failed", w, why,
            S.all_done ? "after the start-up" : "during the start-up");
    }
    c->inlen += (size_t)got;
    size_t off = 0;
    while (c->fd >= 0 && off < c->inlen) {
        /* step() parses from c->in: present the rest as the buffer */
        if (off) {
            memmove(c->in, c->in + off, c->inlen - off);
            c->inlen -= off;
            off = 0;
        }
        size_t k = step(c);
        if (!k)
            break;
        off = k;
    }
    if (c->fd >= 0 && off) {
        memmove(c->in, c->in + off, c->inlen - off);
        c->inlen -= off;
    }
}

static void on_accept(void)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = accept4(S.lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    int slot = -1;
    for (int i = 0; i < S.nconn; i++)
        if (S.c[i].fd < 0 && S.c[i].rank < 0) {
            slot = i;
            break;
        }
    if (slot < 0 && S.nconn < MAXCONN)
        slot = S.nconn++;
    char a[KUMI_NETIF_ADDRSTR];
    kumi_netif_format((struct sockaddr *)&ss, 1, a, sizeof a);
    if (slot < 0) {
        msg("refused a connection from %s: too many connections", a);
        close(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct conn *c = &S.c[slot];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->rank = -1;
    c->st = ST_AUTH;
    c->since = now_ms();
    snprintf(c->addr, sizeof c->addr, "%s", a);
    vlog("connection from %s", a);
}

/* The bounded waits of the start-up. */
static void check_time(void)
{
    long long t = now_ms(), lim = (long long)S.timeout_s * 1000;
    /* a connection has at most AUTH_TIMEOUT_S (or -timeout if shorter) to authenticate and give
     * its rank, also without -timeout: strays must not hold the connection slots */
    int auth_s = S.timeout_s > 0 && S.timeout_s < AUTH_TIMEOUT_S ? S.timeout_s : AUTH_TIMEOUT_S;
    for (int i = 0; i < S.nconn; i++) {
        struct conn *c = &S.c[i];
        if (c->fd >= 0 && c->rank < 0 && t - c->since > auth_s * 1000LL)
            refuse(c, "no AUTH and IMPI rank within %d s", auth_s);
    }
    if (S.timeout_s <= 0 || S.all_done)
        return;
    if (!S.started) {
        if (t - S.t0 <= lim)
            return;
        char miss[256] = "";
        size_t off = 0;
        int k = 0;
        for (int r = 0; r < S.n && off < sizeof miss; r++)
            if (S.client[r] < 0)
                off += (size_t)snprintf(miss + off, sizeof miss - off, "%s%d", k++ ? ", " : "", r);
        die("waited %d s: client%s %s never connected (%d of %d are in)", S.timeout_s, k > 1 ? "s" : "", miss,
            S.registered, S.n);
    }
    if (t - S.progress <= lim)
        return;
    /* who holds the others up: clients not waiting for a reply */
    char late[512] = "", waited[64] = "DONE";
    size_t off = 0;
    for (int li = 0; li < KUMI_IMPI_NLABELS; li++)
        if (S.got[li] && !S.complete[li]) {
            snprintf(waited, sizeof waited, "label %s", kumi_impi_label_name(kumi_impi_label_order[li]));
            break;
        }
    for (int r = 0; r < S.n; r++) {
        int waiting = (S.done >> r) & 1;
        for (int li = 0; li < KUMI_IMPI_NLABELS; li++)
            waiting |= S.got[li] >> r & 1 && !S.complete[li];
        if (!waiting && off < sizeof late)
            off += (size_t)snprintf(late + off, sizeof late - off, "%s%s", off ? ", " : "", who(&S.c[S.client[r]]));
    }
    die("no progress for %d s during the start-up: %s sent nothing while the others wait for %s", S.timeout_s,
        off ? late : "every client waits for another (labels out of order?); nobody", waited);
}

static int listen_on(const char *host, int lo, int hi, char *shown, size_t shownlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof ss);
    if (host) {
        if (kumi_netif_parse(host, &ss, &sl, 1) != 0) {
            msg("-host %s: not an IP address", host);
            exit(2);
        }
    } else {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_ANY);
        sl = sizeof *in;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        msg("socket: %s", strerror(errno));
        exit(1);
    }
    int one = 1, ok = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    for (int p = lo; p <= hi && !ok; p++) {
        if (ss.ss_family == AF_INET)
            ((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)p);
        else
            ((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)p);
        ok = bind(fd, (struct sockaddr *)&ss, sl) == 0;
    }
    if (!ok || listen(fd, 64) != 0) {
        if (lo == hi)
            msg("cannot listen on port %d: %s", lo, strerror(errno));
        else
            msg("cannot listen on any port of %d..%d: %s", lo, hi, strerror(errno));
        exit(1);
    }
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    getsockname(fd, (struct sockaddr *)&got, &gl);
    if (!host) {
        /* the address to print: this host's first non-loopback IPv4 (sheet §1.2: an IP, not a name) */
        struct kumi_netif ifs[KUMI_NETIF_MAX];
        char err[128];
        int n = kumi_netif_choose(ifs, KUMI_NETIF_MAX, NULL, NULL, KUMI_NETIF_V4 | KUMI_NETIF_KEEP_LO, err, sizeof err);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        if (n > 0)
            a = ifs[0].addr.in4;
        a.sin_port = ((struct sockaddr_in *)&got)->sin_port;
        kumi_netif_format((struct sockaddr *)&a, 1, shown, shownlen);
    } else {
        kumi_netif_format((struct sockaddr *)&got, 1, shown, shownlen);
    }
    return fd;
}

static void usage(FILE *o)
{
    fprintf(o, "usage: impi_server -n N [-port P | -port LO:HI] [-host ADDR] [-auth KEY] [-portfile FILE]\n"
               "                   [-timeout SECONDS] [-v]\n"
               "  -n N (or -server N)  number of IMPI clients, 1..%d\n"
               "  -port P, LO:HI       port (or range) to listen on; default: IMPI_SERVER_PORT_RANGE, else any\n"
               "  -host ADDR           listen on this address only and print it (default: all; print this\n"
               "                       host's first non-loopback IPv4 address)\n"
               "  -auth KEY            require this 64-bit key (decimal, negative too as LAM reads it, or\n"
               "                       0x hex; IMPI_AUTH_KEY in the environment does the same);\n"
               "                       without it only AUTH NONE is accepted\n"
               "  -portfile FILE       also write host:port to FILE\n"
               "  -timeout SECONDS     bound of every wait during the start-up (default 300, 0: none)\n"
               "  -v                   say what happens on stderr\n"
               "Prints host:port on stdout; exits 0 when every client sent FINI, 1 on failure.\n",
            KUMI_IMPI_MAX_CLIENTS);
}

static int parse_int(const char *s, long lo, long hi, long *v)
{
    char *e;
    errno = 0;
    long x = s ? strtol(s, &e, 10) : 0;
    if (!s || !*s || *e || errno || x < lo || x > hi)
        return -1;
    *v = x;
    return 0;
}

static void parse_ports(const char *s, const char *what, int *lo, int *hi)
{
    char a[32];
    long x, y;
    const char *colon = strchr(s, ':');
    if (!colon) {
        if (parse_int(s, 0, 65535, &x) != 0)
            goto bad;
        *lo = *hi = (int)x;
        return;
    }
    snprintf(a, sizeof a, "%.*s", (int)(colon - s) < 31 ? (int)(colon - s) : 31, s);
    if (parse_int(a, 1, 65535, &x) != 0 || parse_int(colon + 1, 1, 65535, &y) != 0 || y < x)
        goto bad;
    *lo = (int)x;
    *hi = (int)y;
    return;
bad:
    msg("%s \"%s\": not a port (0..65535) or a range LO:HI", what, s);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *host = NULL, *portfile = NULL, *keytext = NULL;
    int lo = 0, hi = 0, have_port = 0;
    long v;
    S.n = -1;
    S.timeout_s = 300;
    signal(SIGPIPE, SIG_IGN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] == '-' && a[1] == '-')
            a++;                       /* --port works as -port */
        if (!strcmp(a, "-h") || !strcmp(a, "-help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-v")) {
            S.verbose = 1;
            continue;
        }
        if (!val) {
            msg("%s needs a value", argv[i]);
            usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "-n") || !strcmp(a, "-server")) {
            if (parse_int(val, 1, KUMI_IMPI_MAX_CLIENTS, &v) != 0) {
                msg("%s %s: the number of clients must be 1..%d", a, val, KUMI_IMPI_MAX_CLIENTS);
                return 2;
            }
            S.n = (int)v;
        } else if (!strcmp(a, "-port")) {
            parse_ports(val, "-port", &lo, &hi);
            have_port = 1;
        } else if (!strcmp(a, "-host")) {
            host = val;
        } else if (!strcmp(a, "-auth")) {
            keytext = val;
        } else if (!strcmp(a, "-portfile")) {
            portfile = val;
        } else if (!strcmp(a, "-timeout")) {
            if (parse_int(val, 0, 1000000, &v) != 0) {
                msg("-timeout %s: seconds, 0..1000000", val);
                return 2;
            }
            S.timeout_s = (int)v;
        } else {
            msg("unknown option %s", argv[i - 1]);
            usage(stderr);
            return 2;
        }
    }
    if (S.n < 1) {
        msg("the number of clients is missing (-n N)");
        usage(stderr);
        return 2;
    }
    if (!have_port && getenv("IMPI_SERVER_PORT_RANGE") && *getenv("IMPI_SERVER_PORT_RANGE"))
        parse_ports(getenv("IMPI_SERVER_PORT_RANGE"), "IMPI_SERVER_PORT_RANGE", &lo, &hi);
    if (!keytext && getenv("IMPI_AUTH_KEY") && *getenv("IMPI_AUTH_KEY"))
        keytext = getenv("IMPI_AUTH_KEY");
    if (keytext) {
        if (kumi_impi_parse_key(keytext, &S.key) != 0) {
            msg("-auth %s: the key must be a 64-bit number (decimal or 0x hex)", keytext);
            return 2;
        }
        S.have_key = 1;
    }
    for (int r = 0; r < KUMI_IMPI_MAX_CLIENTS; r++)
        S.client[r] = -1;

    char shown[KUMI_NETIF_ADDRSTR];
    S.lfd = listen_on(host, lo, hi, shown, sizeof shown);
    if (portfile) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp%d", portfile, (int)getpid());
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%s\n", shown) < 0 || fclose(f) != 0 || rename(tmp, portfile) != 0) {
            msg("cannot write -portfile %s: %s", portfile, strerror(errno));
            unlink(tmp);
            return 1;
        }
    }
    printf("%s\n", shown);
    fflush(stdout);
    vlog("listening on %s for %d client(s)%s, timeout %d s", shown, S.n, S.have_key ? ", key required" : "",
         S.timeout_s);
    S.t0 = S.progress = now_ms();

    while (__builtin_popcount(S.fini) < S.n) {
        struct pollfd p[MAXCONN + 1];
        int idx[MAXCONN + 1], np = 0;
        if (S.lfd >= 0) {
            p[np] = (struct pollfd){ .fd = S.lfd, .events = POLLIN };
            idx[np++] = -1;
        }
        for (int i = 0; i < S.nconn; i++)
            if (S.c[i].fd >= 0) {
                short ev = POLLIN;
                if (S.c[i].outoff < S.c[i].outlen)
                    ev |= POLLOUT;
                p[np] = (struct pollfd){ .fd = S.c[i].fd, .events = ev };
                idx[np++] = i;
            }
        int r = poll(p, (nfds_t)np, 250);
        if (r < 0 && errno != EINTR)
            die("poll: %s", strerror(errno));
        for (int k = 0; r > 0 && k < np; k++) {
            if (!p[k].revents)
                continue;
            if (idx[k] < 0) {
                if (S.lfd >= 0)
                    on_accept();
                continue;
            }
            struct conn *c = &S.c[idx[k]];
            if (c->fd >= 0 && (p[k].revents & (POLLIN | POLLHUP | POLLERR)))
                on_input(c);
            if (c->fd >= 0 && (p[k].revents & POLLOUT))
                flush(c);
        }
        for (int i = 0; i < S.nconn; i++)
            if (S.c[i].fd >= 0 && S.c[i].outoff < S.c[i].outlen)
                flush(&S.c[i]);
        check_time();
    }
    for (int i = 0; i < S.nconn; i++)
        drop(&S.c[i]);
    vlog("every client sent FINI: done");
    return 0;
}
