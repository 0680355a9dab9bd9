/* p2p/tcp, accepted connections: authentication within a deadline (at most
 * p2p_tcp_auth_max waiting), then receiving messages and delivering them to
 * the request layer.  See p2p_tcp.c. */
#define _GNU_SOURCE
#include "p2p_tcp.h"

struct p2p_tcp_in {              /* an accepted connection: the incoming side */
    int kind;                    /* P2P_TCP_K_IN */
    int fd;
    int peer;                    /* world rank, -1 until a valid PROOF */
    unsigned char hello[P2P_TCP_HSBUF];   /* HELLO, then PROOF */
    size_t hellooff;
    unsigned char nonce_a[P2P_TCP_NONCE];
    double deadline;             /* for HELLO and PROOF */
    char *buf;                   /* staging: bytes [bstart, bend) not consumed yet */
    size_t bstart, bend;
    int in_msg;                  /* reading the payload of hdr */
    struct kumi_hdr hdr;
    struct kumi_rx *rx;
    size_t paylen, paygot;
    struct p2p_tcp_in *prev, *next;
};

/* ------------------------------------------------------------------ */
/* incoming connections */

void p2p_tcp_in_close(struct p2p_tcp_in *c, int lost)
{
    if (lost) p2p_tcp_lost_warn(c->peer);
    if (c->peer < 0) p2p_tcp_npending--;
    p2p_tcp_ep_del(c->fd);
    close(c->fd);
    if (c->prev) c->prev->next = c->next;
    else p2p_tcp_ins = c->next;
    if (c->next) c->next->prev = c->prev;
    free(c->buf);
    free(c);
}

/* Wake a sleeping rank at the earliest handshake deadline (disarmed when none). */
static void p2p_tcp_arm(double when)
{
    struct itimerspec it;
    memset(&it, 0, sizeof it);
    p2p_tcp_next_expiry = when;
    if (when > 0) {
        double d = when - kumi_time();
        if (d < 0.001) d = 0.001;
        it.it_value.tv_sec = (time_t)d;
        it.it_value.tv_nsec = (long)((d - (double)(time_t)d) * 1e9);
    }
    timerfd_settime(p2p_tcp_tfd, 0, &it, NULL);
}

/* Close the connections whose handshake is overdue; re-arm for the next one. */
void p2p_tcp_expire(void)
{
    double now = kumi_time(), next = 0;
    struct p2p_tcp_in *c = p2p_tcp_ins, *nx;
    uint64_t ticks;
    if (read(p2p_tcp_tfd, &ticks, sizeof ticks) < 0) { /* clears the timer's readability */ }
    for (; c; c = nx) {
        nx = c->next;
        if (c->peer >= 0) continue;
        if (now >= c->deadline) {
            kumi_log(2, "p2p/tcp: closed a connection that did not authenticate within %g s",
                     p2p_tcp_auth_timeout);
            p2p_tcp_refused++;
            p2p_tcp_in_close(c, 0);
        } else if (next == 0 || c->deadline < next) {
            next = c->deadline;
        }
    }
    p2p_tcp_arm(next);
}

/* c (an incoming connection on fd) joins the list that progress() and
 * p2p_tcp_in_only read, and epoll watches fd for reading. */
static void in_link(struct p2p_tcp_in *c, int fd)
{
    c->kind = P2P_TCP_K_IN;
    c->fd = fd;
    c->next = p2p_tcp_ins;
    if (c->next) c->next->prev = c;
    p2p_tcp_ins = c;
    p2p_tcp_ep_add(fd, EPOLLIN, c);
}

void p2p_tcp_accept(int lfd)
{
    for (int i = 0; i < 64; i++) {
        struct p2p_tcp_in *c;
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return;                      /* EAGAIN, or out of fds: try again later */
        }
        if (p2p_tcp_npending >= p2p_tcp_auth_max + (size_t)p2p_tcp_size) {
            /* a crowd that does not authenticate: the newest goes at once */
            if (p2p_tcp_refused++ == 0 || kumi_verbose_level >= 3)
                kumi_log(2, "p2p/tcp: %zu connections await authentication: closing new ones",
                         p2p_tcp_npending);
            close(fd);
            continue;
        }
        c = calloc(1, sizeof *c);
        if (!c || p2p_tcp_nonce(c->nonce_a) != 0) {
            free(c);
            close(fd);
            return;
        }
        p2p_tcp_sockopts(fd);
        c->peer = -1;
        c->deadline = kumi_time() + p2p_tcp_auth_timeout;
        in_link(c, fd);
        p2p_tcp_npending++;
        if (p2p_tcp_next_expiry == 0) p2p_tcp_arm(c->deadline);
    }
}

/* A connection this rank opened to p is up: read it too.  The peer may send
 * its own messages over it (p2p_tcp_adopt), so the connecting side reads
 * every connection it opens, whatever its own p2p_tcp_share_connections, through a
 * second descriptor of the socket (epoll holds one registration per
 * descriptor: p->fd's asks for EPOLLOUT when a send waits, this one for
 * EPOLLIN).  0, or -1 when out of descriptors or memory. */
int p2p_tcp_in_attach(struct p2p_tcp_peer *p)
{
    struct p2p_tcp_in *c = calloc(1, sizeof *c);
    int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
    if (!c || fd < 0 || !(c->buf = malloc(P2P_TCP_BUFSZ))) {
        if (fd >= 0) close(fd);
        if (c) free(c->buf);
        free(c);
        return -1;
    }
    c->peer = p->rank;
    in_link(c, fd);
    return 0;
}

/* c has just proved that it comes from peer c->peer: if this rank has not
 * connected to that peer, it sends over c from now on (p2p_tcp_share_connections).
 * One connection per pair then carries both directions, as a ping-pong's
 * reply carries the acknowledgement of the request: over a connection per
 * direction the receiver's read sent a pure ACK every time (the kernel
 * acknowledges a small pushed segment at once on a socket that sends no
 * data), 1-4 us of its time on loopback before it could answer.  Per-peer
 * order holds: a rank sends to a peer over one connection only, the one it
 * adopted or (if it started connecting first) its own. */
static void p2p_tcp_adopt(struct p2p_tcp_in *c)
{
    struct sockaddr_storage sa;
    socklen_t salen = sizeof sa;
    struct p2p_tcp_peer *p;
    int fd;
    if (!p2p_tcp_share || c->peer < 0 || c->peer >= p2p_tcp_npeers) return;
    p = p2p_tcp_peers[c->peer];
    if (!p || p->state != P2P_TCP_OUT_NONE || p->naddrs <= 0 || p->head) return;
    fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return;                  /* it connects at its first send */
    if (getpeername(fd, (struct sockaddr *)&sa, &salen) == 0)
        p2p_tcp_loopback_opts(fd, (const struct sockaddr *)&sa);
    kumi_p2p_socket_opened(p->rank, fd); /* e.g. pacing (p2p contract 1.4) */
    p->fd = fd;
    p->events = 0;
    p->state = P2P_TCP_OUT_UP;
    p2p_tcp_ep_add(fd, 0, p);
    kumi_log(3, "p2p/tcp: sending to %s %d over the connection it opened", p->xjob ? "peer" : "rank", p->rank);
}

static void p2p_tcp_finish_msg(struct p2p_tcp_in *c)
{
    struct kumi_rx *rx = c->rx;
    c->in_msg = 0;
    c->rx = NULL;
    if (rx) {
        rx->got = c->paylen;
        kumi_p2p_rx_done(rx);
    }
}

static void p2p_tcp_start_msg(struct p2p_tcp_in *c)
{
    c->paylen = (size_t)c->hdr.paylen;
    c->paygot = 0;
    if (c->hdr.kind == KUMI_HDR_RTS && c->paylen >= P2P_TCP_DIRECT_MIN) p2p_tcp_yield = 1;
    c->rx = kumi_p2p_incoming(c->peer, &c->hdr);
    if (c->rx) c->rx->got = 0;
    if (c->paylen == 0) {
        p2p_tcp_finish_msg(c);
    } else {
        c->in_msg = 1;
    }
}

/* Payload bytes [paygot, paygot+n) arrived at src. */
static void p2p_tcp_deliver(struct p2p_tcp_in *c, const char *src, size_t n)
{
    struct kumi_rx *rx = c->rx;
    if (rx) {
        size_t cap = rx->cap;
        if (c->paygot < cap && rx->dst) {
            size_t k = cap - c->paygot < n ? cap - c->paygot : n;
            memcpy(rx->dst + c->paygot, src, k);
        }
    }
    c->paygot += n;
    if (rx) rx->got = c->paygot;
}

/* Consume what the staging buffer holds. */
static void p2p_tcp_consume(struct p2p_tcp_in *c)
{
    for (;;) {
        size_t avail = c->bend - c->bstart;
        if (!c->in_msg) {
            if (avail < sizeof c->hdr) break;
            memcpy(&c->hdr, c->buf + c->bstart, sizeof c->hdr);
            c->bstart += sizeof c->hdr;
            p2p_tcp_start_msg(c);
            if (p2p_tcp_yield) return;
        } else {
            size_t take = c->paylen - c->paygot;
            if (!avail) break;
            if (take > avail) take = avail;
            p2p_tcp_deliver(c, c->buf + c->bstart, take);
            c->bstart += take;
            if (c->paygot == c->paylen) p2p_tcp_finish_msg(c);
        }
    }
    if (c->bstart == c->bend) c->bstart = c->bend = 0;
}

/* When one connection alone brings messages (every accepted one has proved
 * itself, e.g. the one peer of a 2-rank job): read it without asking epoll
 * first, one system call per round instead of epoll_wait and then readv per
 * message.  -1 when that is not the case (progress() asks epoll), else as
 * p2p_tcp_in_event (0: nothing there). */
int p2p_tcp_in_only(void)
{
    struct p2p_tcp_in *c = p2p_tcp_ins;
    if (!c || c->next || c->peer < 0 || p2p_tcp_npending) return -1;
    return p2p_tcp_in_event(c);
}

/* Returns 1 if anything happened; may free c. */
int p2p_tcp_in_event(struct p2p_tcp_in *c)
{
    size_t budget = P2P_TCP_READ_BUDGET;
    int did = 0;

    if (c->peer < 0) {                   /* HELLO (or XHELLO), then (after our CHAL) PROOF */
        unsigned char want[KUMI_JOBKEY_MAC];
        uint32_t magic = P2P_TCP_MAGIC_HELLO, xmagic = P2P_TCP_MAGIC_XHELLO;
        int32_t rank;
        ssize_t n;
        /* until the magic is known, no more than the shorter HELLO */
        int x = c->hellooff >= 4 && !memcmp(c->hello, &xmagic, 4);
        size_t hl = x ? P2P_TCP_XHELLO_LEN : P2P_TCP_HELLO_LEN;
        size_t upto = c->hellooff < hl ? hl : hl + P2P_TCP_PROOF_LEN;
        do n = recv(c->fd, c->hello + c->hellooff, upto - c->hellooff, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (n <= 0) {
            p2p_tcp_in_close(c, 0);
            return 1;
        }
        c->hellooff += (size_t)n;
        /* a stranger is known by its first bytes: no need to wait for more */
        size_t k = c->hellooff < 4 ? c->hellooff : 4;
        if (memcmp(c->hello, &magic, k) != 0 && memcmp(c->hello, &xmagic, k) != 0) {
            kumi_log(2, "p2p/tcp: dropped a connection that is not from this job");
            p2p_tcp_refused++;
            p2p_tcp_in_close(c, 0);
            return 1;
        }
        x = c->hellooff >= 4 && !memcmp(c->hello, &xmagic, 4);
        hl = x ? P2P_TCP_XHELLO_LEN : P2P_TCP_HELLO_LEN;
        if (upto < hl) return 1;         /* an XHELLO: its tail comes next */
        if (c->hellooff < upto) return 1;
        memcpy(&rank, c->hello + 4, 4);
        struct p2p_tcp_peer *xp = NULL;
        if (x) {                         /* a process of another job: one we added, with its key */
            uint64_t job, kid;
            memcpy(&job, c->hello + P2P_TCP_HELLO_LEN, 8);
            memcpy(&kid, c->hello + P2P_TCP_HELLO_LEN + 8, 8);
            xp = p2p_tcp_xfind(job, rank, kid);
            if (!xp) {
                kumi_log(2, "p2p/tcp: dropped a connection from a process of another job that is no peer");
                p2p_tcp_refused++;
                p2p_tcp_in_close(c, 0);
                return 1;
            }
        } else if (rank < 0 || rank >= p2p_tcp_size) {
            kumi_log(2, "p2p/tcp: dropped a connection that is not from this job");
            p2p_tcp_refused++;
            p2p_tcp_in_close(c, 0);
            return 1;
        }
        if (upto == hl) {                /* answer CHAL {magic, me, nonce_a, proof_a} */
            unsigned char chal[P2P_TCP_CHAL_LEN];
            int32_t me = xp ? xp->x.my_rank : p2p_tcp_me;
            magic = P2P_TCP_MAGIC_CHAL;
            memcpy(chal, &magic, 4);
            memcpy(chal + 4, &me, 4);
            memcpy(chal + 8, c->nonce_a, P2P_TCP_NONCE);
            if (xp) p2p_tcp_xproof(&xp->x, "accept", c->nonce_a, c->hello + 8, 0, chal + 8 + P2P_TCP_NONCE);
            else p2p_tcp_proof("accept", c->nonce_a, c->hello + 8, rank, me, chal + 8 + P2P_TCP_NONCE);
            do n = send(c->fd, chal, sizeof chal, MSG_NOSIGNAL | MSG_DONTWAIT);
            while (n < 0 && errno == EINTR);
            if (n != (ssize_t)sizeof chal) {   /* nothing else was sent yet: fits */
                p2p_tcp_in_close(c, 0);
                return 1;
            }
            return 1;
        }
        if (xp) p2p_tcp_xproof(&xp->x, "connect", c->nonce_a, c->hello + 8, 0, want);
        else p2p_tcp_proof("connect", c->nonce_a, c->hello + 8, rank, p2p_tcp_me, want);
        if (!kumi_jobkey_equal(c->hello + hl, want, sizeof want)) {
            kumi_log(2, "p2p/tcp: dropped a connection that did not prove that it belongs to the job");
            p2p_tcp_refused++;
            p2p_tcp_in_close(c, 0);
            return 1;
        }
        c->buf = malloc(P2P_TCP_BUFSZ);
        if (!c->buf) {
            p2p_tcp_in_close(c, 0);
            return 1;
        }
        c->peer = xp ? xp->rank : rank;
        p2p_tcp_npending--;
        kumi_log(3, "p2p/tcp: accepted connection from %s %d", xp ? "peer" : "rank", c->peer);
        p2p_tcp_adopt(c);
        return 1;                        /* its messages follow (level-triggered epoll) */
    }

    if (c->bend > c->bstart) {           /* left in staging when we yielded for a CTS */
        p2p_tcp_consume(c);
        did = 1;
        if (p2p_tcp_yield) return did;
    }
    for (int iter = 0; iter < 64; iter++) {
        struct iovec iov[2];
        int niov, direct;
        size_t want;
        ssize_t n;

        direct = c->in_msg && c->paylen - c->paygot >= P2P_TCP_DIRECT_MIN;
        if (direct) {                    /* staging is empty here */
            size_t rem = c->paylen - c->paygot;
            struct kumi_rx *rx = c->rx;
            if (rx && rx->dst && c->paygot < rx->cap) {
                iov[0].iov_base = rx->dst + c->paygot;
                iov[0].iov_len = rx->cap - c->paygot < rem ? rx->cap - c->paygot : rem;
            } else {
                iov[0].iov_base = p2p_tcp_drop;
                iov[0].iov_len = sizeof p2p_tcp_drop < rem ? sizeof p2p_tcp_drop : rem;
            }
            niov = 1;
            want = iov[0].iov_len;
            if (iov[0].iov_len == rem) { /* the next headers too */
                c->bstart = c->bend = 0;
                iov[1].iov_base = c->buf;
                iov[1].iov_len = P2P_TCP_BUFSZ;
                want += P2P_TCP_BUFSZ;
                niov = 2;
            }
        } else {
            if (c->bstart > 0) {
                memmove(c->buf, c->buf + c->bstart, c->bend - c->bstart);
                c->bend -= c->bstart;
                c->bstart = 0;
            }
            iov[0].iov_base = c->buf + c->bend;
            iov[0].iov_len = P2P_TCP_BUFSZ - c->bend;
            want = iov[0].iov_len;
            niov = 1;
        }
        do n = readv(c->fd, iov, niov);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            /* reset: an error when a message was under way (or the peer died) */
            p2p_tcp_in_close(c, c->in_msg || c->bend > c->bstart || errno != ECONNRESET);
            return 1;
        }
        if (n == 0) {                    /* EOF: fine between messages */
            p2p_tcp_in_close(c, c->in_msg || c->bend > c->bstart);
            return 1;
        }
        did = 1;
        if (direct) {
            size_t k = (size_t)n < iov[0].iov_len ? (size_t)n : iov[0].iov_len;
            c->paygot += k;
            if (c->rx) c->rx->got = c->paygot;
            if ((size_t)n > k) {
                c->bstart = 0;
                c->bend = (size_t)n - k;
            }
            if (c->paygot == c->paylen) p2p_tcp_finish_msg(c);
        } else {
            c->bend += (size_t)n;
        }
        p2p_tcp_consume(c);
        if (p2p_tcp_yield) break;        /* a CTS to send first */
        if ((size_t)n < want) break;     /* drained */
        if ((size_t)n >= budget) break;  /* let others have their turn */
        budget -= (size_t)n;
    }
    return did;
}
