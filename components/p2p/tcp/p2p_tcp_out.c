/* p2p/tcp, outgoing connections: connecting through the peer's addresses,
 * the handshake (hello, proof), sending and flushing queued messages.
 * See p2p_tcp.c. */
#define _GNU_SOURCE
#include "p2p_tcp.h"

/* ------------------------------------------------------------------ */
/* outgoing connections */

int p2p_tcp_handshaking(int state)
{
    return state == P2P_TCP_OUT_CONNECTING || state == P2P_TCP_OUT_HELLO;
}

static void p2p_tcp_out_close(struct p2p_tcp_peer *p, int state)
{
    if (p->fd >= 0) {
        p2p_tcp_ep_del(p->fd);
        close(p->fd);
        p->fd = -1;
    }
    if (p2p_tcp_handshaking(p->state)) p2p_tcp_nconnecting--;
    p->events = 0;
    if (state == P2P_TCP_OUT_DEAD && p->state != P2P_TCP_OUT_DEAD) {
        /* ops queued to a dead peer stay unfinished (never reported as sent);
         * they no longer keep the transport busy */
        p2p_tcp_nqueued -= p->nq;
    }
    p->state = state;
}

static void p2p_tcp_peer_lost(struct p2p_tcp_peer *p)
{
    p2p_tcp_lost_warn(p->rank);
    p2p_tcp_out_close(p, P2P_TCP_OUT_DEAD);
}

static void p2p_tcp_connect_next(struct p2p_tcp_peer *p);

void p2p_tcp_connect_failed(struct p2p_tcp_peer *p)
{
    p2p_tcp_out_close(p, P2P_TCP_OUT_NONE);
    p->cur++;
    p2p_tcp_connect_next(p);
}

/* Connected: send HELLO {magic, rank_c, nonce_c}, wait for the CHAL (still
 * under the connect deadline). */
static void p2p_tcp_connected(struct p2p_tcp_peer *p)
{
    unsigned char hello[P2P_TCP_XHELLO_LEN];
    uint32_t magic = p->xjob ? P2P_TCP_MAGIC_XHELLO : P2P_TCP_MAGIC_HELLO;
    int32_t me = p->xjob ? p->x.my_rank : p2p_tcp_me;
    size_t hl = p->xjob ? P2P_TCP_XHELLO_LEN : P2P_TCP_HELLO_LEN;
    ssize_t n;
    p->state = P2P_TCP_OUT_HELLO;
    if (p2p_tcp_nonce(p->nonce_c) != 0) {
        p2p_tcp_connect_failed(p);
        return;
    }
    memcpy(hello, &magic, 4);
    memcpy(hello + 4, &me, 4);
    memcpy(hello + 8, p->nonce_c, P2P_TCP_NONCE);
    if (p->xjob) {                        /* + who we are in our job's terms, and which key */
        memcpy(hello + P2P_TCP_HELLO_LEN, &p->x.my_job, 8);
        memcpy(hello + P2P_TCP_HELLO_LEN + 8, &p->x.key_id, 8);
    }
    do n = send(p->fd, hello, hl, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)hl) {               /* an empty fresh socket takes 40 bytes */
        p2p_tcp_connect_failed(p);
        return;
    }
    p->hellooff = 0;
    p2p_tcp_out_events(p, EPOLLIN);
}

/* Read the next handshake message (len bytes) into p->hello: 1 when whole,
 * 0 when more is to come, -1 when the connection failed. */
static int p2p_tcp_out_read(struct p2p_tcp_peer *p, size_t len)
{
    ssize_t n;
    do n = recv(p->fd, p->hello + p->hellooff, len - p->hellooff, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n <= 0) return -1;              /* refused by a stray listener, or reset */
    p->hellooff += (size_t)n;
    return p->hellooff == len;
}

static void p2p_tcp_connect_next(struct p2p_tcp_peer *p)
{
    while (p->cur < p->naddrs) {
        const struct sockaddr *sa = (const struct sockaddr *)&p->addrs[p->cur];
        int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int r;
        if (fd < 0) {               /* e.g. no IPv6 here: the next address */
            kumi_log(3, "p2p/tcp: socket for rank %d address %d: %s", p->rank, p->cur, strerror(errno));
            p->cur++;
            continue;
        }
        p2p_tcp_sockopts(fd);
        p2p_tcp_loopback_opts(fd, sa);
        kumi_p2p_socket_opened(p->rank, fd);    /* e.g. pacing (p2p contract 1.4) */
        do r = connect(fd, sa, kumi_netif_salen(sa));
        while (r < 0 && errno == EINTR);
        if (r == 0 || errno == EINPROGRESS) {
            p->fd = fd;
            p->events = EPOLLOUT;
            p2p_tcp_ep_add(fd, EPOLLOUT, p);
            p->state = P2P_TCP_OUT_CONNECTING;
            p2p_tcp_nconnecting++;          /* until UP or closed (the handshake included) */
            p->deadline = kumi_time() + p2p_tcp_connect_timeout;
            if (r == 0) p2p_tcp_connected(p);
            return;
        }
        kumi_log(3, "p2p/tcp: connect to rank %d address %d: %s", p->rank, p->cur, strerror(errno));
        close(fd);
        p->cur++;
    }
    if (!p->warned) {
        p->warned = 1;
        kumi_warn("p2p/tcp: cannot connect to rank %d (%d addresses tried)", p->rank, p->naddrs);
    }
    p2p_tcp_out_close(p, P2P_TCP_OUT_DEAD);
}

/* Write queued ops; complete those that went out.  Returns 1 if anything
 * was written. */
static int p2p_tcp_flush(struct p2p_tcp_peer *p)
{
    int did = 0;
    for (int round = 0; round < 16 && p->head && p->state == P2P_TCP_OUT_UP; round++) {
        struct iovec iov[P2P_TCP_MAXIOV];
        struct msghdr msg;
        struct kumi_sendop *op, *donelist = NULL, **donetail = &donelist;
        size_t want = 0;
        int niov = 0;
        ssize_t n;
        for (op = p->head; op && niov + 2 <= P2P_TCP_MAXIOV; op = op->tnext) {
            size_t off = op->toff, paylen = (size_t)op->hdr.paylen;
            if (off < sizeof op->hdr) {
                iov[niov].iov_base = (char *)&op->hdr + off;
                iov[niov].iov_len = sizeof op->hdr - off;
                want += iov[niov++].iov_len;
                off = 0;
            } else {
                off -= sizeof op->hdr;
            }
            if (paylen > off) {
                iov[niov].iov_base = (char *)op->payload + off;
                iov[niov].iov_len = paylen - off;
                want += iov[niov++].iov_len;
            }
        }
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = iov;
        msg.msg_iovlen = (size_t)niov;
        n = sendmsg(p->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            p2p_tcp_peer_lost(p);
            return did;
        }
        did = 1;
        /* account: unlink complete ops before calling done() (it may send) */
        {
            size_t left = (size_t)n;
            while ((op = p->head) != NULL) {
                size_t rest = sizeof op->hdr + (size_t)op->hdr.paylen - op->toff;
                if (left < rest) {
                    op->toff += left;
                    break;
                }
                left -= rest;
                p->head = op->tnext;
                if (!p->head) p->tail = NULL;
                p->nq--;
                p2p_tcp_nqueued--;
                op->tnext = NULL;
                *donetail = op;
                donetail = &op->tnext;
            }
        }
        while (donelist) {
            op = donelist;
            donelist = op->tnext;
            op->tnext = NULL;
            op->done(op);
        }
        if ((size_t)n < want) break;      /* socket buffer full */
    }
    if (p->state == P2P_TCP_OUT_UP) p2p_tcp_out_events(p, p->head ? EPOLLOUT : 0);
    return did;
}

/* Write the bursts that send() held back (progress() calls it first). */
void p2p_tcp_uncork(void)
{
    while (p2p_tcp_corked) {
        struct p2p_tcp_peer *p = p2p_tcp_corked;
        p2p_tcp_corked = p->cnext;
        p->cnext = NULL;
        p->corked = 0;
        if (p->head && p->state == P2P_TCP_OUT_UP) p2p_tcp_flush(p);
    }
}

void p2p_tcp_out_event(struct p2p_tcp_peer *p, uint32_t ev)
{
    switch (p->state) {
    case P2P_TCP_OUT_CONNECTING: {
        int err = 0;
        socklen_t len = sizeof err;
        struct pollfd pfd = { .fd = p->fd, .events = POLLOUT, .revents = 0 };
        /* a stale event (an earlier socket of this peer) must not pass for
         * the completion of the current connect */
        if (poll(&pfd, 1, 0) == 0) break;
        if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        if (err == 0 && (ev & (EPOLLERR | EPOLLHUP))) err = ECONNREFUSED;
        if (err) {
            kumi_log(3, "p2p/tcp: connect to rank %d address %d: %s", p->rank, p->cur, strerror(err));
            p2p_tcp_connect_failed(p);
        } else {
            p2p_tcp_connected(p);
        }
        break;
    }
    case P2P_TCP_OUT_HELLO: {       /* CHAL {magic, rank_a, nonce_a, proof_a} -> PROOF, up */
        unsigned char want[KUMI_JOBKEY_MAC], proof[P2P_TCP_PROOF_LEN];
        uint32_t magic;
        int32_t rank;
        ssize_t n;
        int rc = p2p_tcp_out_read(p, P2P_TCP_CHAL_LEN);
        if (rc == 0) break;
        if (rc < 0) {
            kumi_log(3, "p2p/tcp: address %d of rank %d closed the handshake", p->cur, p->rank);
            p2p_tcp_connect_failed(p);
            break;
        }
        memcpy(&magic, p->hello, 4);
        memcpy(&rank, p->hello + 4, 4);
        if (p->xjob) p2p_tcp_xproof(&p->x, "accept", p->hello + 8, p->nonce_c, 1, want);
        else p2p_tcp_proof("accept", p->hello + 8, p->nonce_c, p2p_tcp_me, p->rank, want);
        if (magic != P2P_TCP_MAGIC_CHAL || rank != (p->xjob ? p->x.rank : p->rank) ||
            !kumi_jobkey_equal(p->hello + 8 + P2P_TCP_NONCE, want, sizeof want)) {
            kumi_log(2, "p2p/tcp: address %d of rank %d answers for someone else", p->cur, p->rank);
            p2p_tcp_connect_failed(p);
            break;
        }
        if (p->xjob) p2p_tcp_xproof(&p->x, "connect", p->hello + 8, p->nonce_c, 1, proof);
        else p2p_tcp_proof("connect", p->hello + 8, p->nonce_c, p2p_tcp_me, p->rank, proof);
        do n = send(p->fd, proof, sizeof proof, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof proof) {   /* nothing else was sent yet: fits */
            p2p_tcp_connect_failed(p);
            break;
        }
        if (p2p_tcp_in_attach(p) != 0) {    /* the peer may answer over it: it must be read */
            kumi_log(2, "p2p/tcp: no descriptor or memory to read the connection to rank %d", p->rank);
            p2p_tcp_connect_failed(p);
            break;
        }
        p2p_tcp_nconnecting--;
        p->state = P2P_TCP_OUT_UP;
        if (p->cur > 0) {      /* not at the address KUMI_VERBOSE's table named */
            char a[KUMI_NETIF_ADDRSTR];
            kumi_log(1, "rank %d -> rank %d: tcp %s (after %d address%s that failed)", p2p_tcp_me, p->rank,
                     p2p_tcp_peer_addr(p->rank, a, sizeof a), p->cur, p->cur == 1 ? "" : "es");
        }
        kumi_log(3, "p2p/tcp: connected to rank %d", p->rank);
        p2p_tcp_flush(p);
        break;
    }
    case P2P_TCP_OUT_UP:
        if ((ev & (EPOLLERR | EPOLLHUP)) && !p->head) {
            /* the peer went away while we owe it nothing */
            p2p_tcp_out_close(p, P2P_TCP_OUT_CLOSED);
            break;
        }
        p2p_tcp_flush(p);           /* a write error there reports the loss */
        break;
    default:                            /* stale event */
        break;
    }
}

int p2p_tcp_send(int peer, struct kumi_sendop *op)
{
    struct p2p_tcp_peer *p;
    if (!p2p_tcp_reaches(peer))
        return kumi_error(MPI_ERR_OTHER, "p2p/tcp: rank %d published no TCP address", peer);
    p = p2p_tcp_peers[peer];
    op->tnext = NULL;
    op->toff = 0;
    if (p->state == P2P_TCP_OUT_UP && !p->head) {
        struct iovec iov[2];
        struct msghdr msg;
        size_t total = sizeof op->hdr + (size_t)op->hdr.paylen;
        ssize_t n;
        if (p->wgen == p2p_tcp_gen && (size_t)op->hdr.paylen <= p2p_tcp_batch && p2p_tcp_batch) {
            /* a burst: the next progress() writes it with those that follow
             * (pollfds() lets no wait sleep meanwhile) */
            p->head = p->tail = op;
            p->nq = 1;
            p2p_tcp_nqueued++;
            if (!p->corked) {
                p->corked = 1;
                p->cnext = p2p_tcp_corked;
                p2p_tcp_corked = p;
            }
            return MPI_SUCCESS;
        }
        p->wgen = p2p_tcp_gen;
        iov[0].iov_base = &op->hdr;
        iov[0].iov_len = sizeof op->hdr;
        iov[1].iov_base = (void *)op->payload;
        iov[1].iov_len = (size_t)op->hdr.paylen;
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = iov;
        msg.msg_iovlen = op->hdr.paylen ? 2 : 1;
        do n = sendmsg(p->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)total) {
            op->done(op);
            return MPI_SUCCESS;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            p2p_tcp_peer_lost(p);
            return kumi_error(MPI_ERR_OTHER, "p2p/tcp: connection to rank %d lost", peer);
        }
        if (n > 0) op->toff = (size_t)n;
        p->head = p->tail = op;
        p->nq = 1;
        p2p_tcp_nqueued++;
        p2p_tcp_out_events(p, EPOLLOUT);
        return MPI_SUCCESS;
    }
    if (p->state == P2P_TCP_OUT_NONE) {
        p2p_tcp_connect_next(p);
    }
    if (p->state == P2P_TCP_OUT_CLOSED) {
        /* the peer closed its side earlier: it expects nothing more */
        p2p_tcp_lost_warn(peer);
        p2p_tcp_out_close(p, P2P_TCP_OUT_DEAD);
    }
    if (p->state == P2P_TCP_OUT_DEAD)
        return kumi_error(MPI_ERR_OTHER, "p2p/tcp: cannot reach rank %d", peer);
    if (p->tail) p->tail->tnext = op;
    else p->head = op;
    p->tail = op;
    p->nq++;
    p2p_tcp_nqueued++;
    return MPI_SUCCESS;
}
