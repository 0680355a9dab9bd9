/* The io_uring engine's connections (kumi_base_sched_engine = uring; the
 * engine itself is sched/uring.c, whose first comment says how they are
 * made): each rank listens on a port of its own, the lower world rank of a
 * pair connects at first use and says who it is, the higher one accepts in
 * its progress; the sockets' options; SO_RCVLOWAT for large payloads. */
#include "sched/uring_int.h"
#ifdef KUMI_HAVE_LIBURING

/* ------------------------------------------------------------ connections */
/* A connection's options, and whether it counts in ur_nlocal (a peer at a
 * loopback address) or ur_nremote (kumi_sched_uring_may_hold).  To a peer on
 * this host (a loopback address) the
 * congestion control is kumi_base_sched_uring_loopback_cc (reno), as the
 * tcp transport's (p2p_tcp_loopback_cc; p2p_tcp.c says why: the system's
 * BBR, after a ping-pong phase, held a loopback connection's window at a
 * few segments), so the engine's transfers and the transport's run alike. */
static void sock_opts(struct conn *c, int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    bool known = getpeername(fd, (struct sockaddr *)&sa, &sl) == 0;
    bool local = known && kumi_netif_is_loopback((struct sockaddr *)&sa);
    c->remote = !local;
    if (c->remote) {                    /* the window the peer may fill without this rank reading */
        int rb = 0;
        socklen_t rl = sizeof rb;
        c->rcvroom = getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rb, &rl) == 0 && rb > 0 ? (size_t)rb / 2 : 0;
    }
    __atomic_add_fetch(local ? &ur_nlocal : &ur_nremote, 1, __ATOMIC_RELAXED);    /* (not known: remote) */
    if (!known || !ur_loopback_cc || !*ur_loopback_cc) return;
    if (kumi_netif_loopback_cc(fd, (struct sockaddr *)&sa, ur_loopback_cc) != 0)
        kumi_log(2, "kumi_base_sched_engine=uring: kumi_base_sched_uring_loopback_cc \"%s\": %s (the system's "
                    "congestion control stays)", ur_loopback_cc, strerror(errno));
}

/* With the completion thread, a large payload is received in a few large
 * pieces rather than as the packets come: SO_RCVLOWAT makes the socket
 * readable (and so the kernel retry the receive, as task work that wakes
 * the thread) only once min(rest, LOWAT_MAX) bytes wait.  The receive is
 * then not MSG_WAITALL: a piece ends it short, and it is posted again for
 * the rest with the mark lowered to what is left, so the mark never waits
 * for more than the message still brings.  Back to 1 once the payload is
 * in (the kernel signals readiness again when the mark is lowered).  The
 * threshold counts what the stream receive took of the message: a 64 KiB
 * message (rest 64 KiB - 4040 bytes) is received in one piece, as when the
 * whole payload was left to its own receive (with MSG_WAITALL there instead,
 * the kernel retried it, and woke the thread, as each packet came). */
#define LOWAT_MIN ((64 << 10) - STREAM_BUF)
#define LOWAT_MAX (512 << 10)
int ur_payload_flags(struct conn *c, size_t rest)
{
    /* only for the thread's own receives: an application inside MPI (a wait)
     * gains nothing by waiting for a piece, its copies overlap the arrival */
    int want = ur_with_thread && rest >= LOWAT_MIN && kumi_lock_is_engine()
               ? (int)(rest < LOWAT_MAX ? rest : LOWAT_MAX) : 0;
    if (want != c->lowat) {
        int v = want ? want : 1;
        if (setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v) != 0) want = 0;
        c->lowat = want;
    }
    return c->lowat ? 0 : MSG_WAITALL;
}

void ur_payload_over(struct conn *c)
{
    if (c->lowat) {
        int one = 1;
        (void)setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one);
        c->lowat = 0;
    }
}

void ur_conn_up(struct conn *c, int fd)
{
    c->fd = fd;
    c->state = C_UP;
    sock_opts(c, fd);
    char cc[24] = "?";
    socklen_t cl = sizeof cc - 1;
    (void)getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &cl);
    kumi_log(2, "kumi_base_sched_engine=uring: connection with rank %d up (congestion control %s)", c->peer, cc);
    ur_post_hdr(c);
    ur_flush_sends(c);
    ur_submit();
}

void ur_post_accept(void)
{
    struct io_uring_sqe *sqe = ur_get_sqe();
    io_uring_prep_accept(sqe, ur_lfd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data(sqe, &ur_acc);
}

/* A connection came in (fd, or an error): who is it? */
void ur_accepted(int fd)
{
    if (fd >= 0) {
        int32_t who = -1;
        size_t got = 0;
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        struct timeval tv = { 5, 0 };   /* a stranger that says nothing is dropped */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        while (got < sizeof who) {      /* the connector writes it at once */
            ssize_t r = read(fd, (char *)&who + got, sizeof who - got);
            if (r > 0) got += (size_t)r;
            else if (r < 0 && errno == EINTR) continue;
            else break;
        }
        if (got != sizeof who || who < 0 || who >= ur_nworld || who >= ur_me ||
            (ur_conns[who] && ur_conns[who]->state != C_WAIT_ACCEPT)) {
            close(fd);
        } else {
            if (!ur_conns[who]) {
                struct conn *c = calloc(1, sizeof *c);
                if (!c) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
                c->peer = who;
                c->fd = -1;
                ur_conns[who] = c;
            }
            struct timeval none = { 0, 0 };
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
            ur_conn_up(ur_conns[who], fd);
        }
    }
    ur_post_accept();
}

/* Is world rank w reached over sockets, and does it run the engine? */
bool ur_peer_usable(int w)
{
    if (w < 0 || w >= ur_nworld || w == ur_me) return false;
    if (!ur_usable[w]) ur_usable[w] = kumi_sched_peer_listens(w, "sched.uring.port") ? 1 : -1;
    return ur_usable[w] > 0;
}

struct conn *ur_get_conn(int w)
{
    if (ur_conns[w]) return ur_conns[w];
    struct conn *c = calloc(1, sizeof *c);
    if (!c) kumi_err_fatal("kumi_base_sched_engine=uring: out of memory");
    c->peer = w;
    c->fd = -1;
    ur_conns[w] = c;
    if (ur_me > w) {                    /* the peer connects (accepted in complete()) */
        c->state = C_WAIT_ACCEPT;
        return c;
    }
    const char *what;
    int fd = kumi_sched_connect(w, "sched.uring.port", false, &what);
    if (fd < 0) ur_fatal_io(what, w, errno);
    ur_conn_up(c, fd);
    return c;
}

#endif
