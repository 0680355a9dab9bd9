/* p2p/tcp: TCP sockets to any rank that published an address.
 *
 * Addresses: init() listens on ephemeral ports, one socket per chosen
 * address (the host's IPv4 and IPv6 addresses after p2p_tcp_if_include /
 * p2p_tcp_if_exclude (names, name* prefixes, CIDR subnets: kumi/netif.h) and
 * p2p_tcp_family (any / ipv4 / ipv6 / prefer_ipv6); for a job on one host only
 * the loopback ones among them), never on a wildcard address, and publishes
 * "p2p.tcp.addr" = "ip:port,[ip6]:port,..." (non-loopback first, IPv4 before
 * IPv6 unless prefer_ipv6, loopback last) and "p2p.tcp.host" = the host's
 * identity (kumi_host_id(): differs between network namespaces).
 * wireup() closes the listeners when no peer can need them: every other
 * rank is on this host and reached through p2p/shmem (both sides published
 * its address, and shmem comes before tcp in the selection), and this rank
 * reaches itself through p2p/self (which also came before tcp).
 * wireup() reads every rank's list and orders it for this rank: a peer on the
 * same host is tried at its loopback address first; a peer on another host
 * never at a loopback address (unless mpiexec says that the whole job runs
 * on this machine, KUMI_INTERNAL_NHOSTS=1, whatever the host names say), and
 * at addresses on a subnet shared with one of our interfaces first.
 *
 * Connections: rank A opens one to B (lazily, on its first send to B) and
 * sends to B only over it.  When B, which has not opened one to A, accepts
 * A's connection, it sends to A over that one too (p2p_tcp_share_connections,
 * p2p_tcp_in.c's p2p_tcp_adopt: a reply then carries the acknowledgement of
 * the request, as over Open MPI's one socket per pair); so A reads every
 * connection it opened.  If both open one at once, each sends over its own:
 * a rank sends to a peer over one connection only, so there are no
 * simultaneous-connect races to settle and per-peer ordering is the socket's.
 *
 * Authentication: both sides prove that they know the job secret without
 * sending it (a key K = HMAC(secret, label) from kumi/jobkey.h).  The
 * connecting side C sends HELLO {magic, its rank, nonce_c}; the accepting
 * side A answers CHAL {magic, its rank, nonce_a, HMAC(K, "accept" nonce_a
 * nonce_c rank_c rank_a)}; C checks that rank and proof (a wrong endpoint,
 * e.g. an address that exists on several hosts, is skipped for the next
 * address) and sends PROOF = HMAC(K, "connect" ...same...) followed at once
 * by its messages; A checks the PROOF before it reads anything else.  Only
 * then does a connection carry messages: an intruder never becomes a peer,
 * and A sends nothing to a connection whose first bytes are not a HELLO.
 * An accepted connection that has not sent a valid HELLO and PROOF within
 * p2p_tcp_auth_timeout seconds is closed (a timerfd in the epoll set wakes a
 * sleeping rank for it), and at most p2p_tcp_auth_max + (job size) such
 * connections are held: past that, a new one is closed at once.  (Every
 * other rank may connect at the same moment, e.g. in an all-to-all right
 * after start-up: the job's own burst stays within the cap.)
 *
 * Sending: if nothing is queued for the peer, send() writes header and
 * payload at once (one sendmsg); the rest is queued (op->tnext/toff) and
 * written from progress() when the socket is writable, many ops per
 * sendmsg.  Batching: a message with at most p2p_tcp_batch_limit bytes of
 * payload (default 0: off; e.g. 64 KiB, the eager limit) to a peer that this rank already wrote
 * to directly since the last progress() (a window of MPI_Isend, several
 * control messages after one progress round) is queued too, and the next
 * progress() writes the whole burst in one sendmsg: one system call per
 * window instead of one per message, while a message sent alone (ping-pong,
 * the first of a burst) still leaves at once.  Off by default: a held
 * message leaves only at the rank's next MPI call (or progress thread
 * round), so a program that sends twice to a peer and then computes would
 * delay the second message by its computation (Open MPI and MPICH write
 * it at once).  Receiving: bytes are read
 * into a per-connection staging buffer
 * (headers, small payloads); a large remaining payload is read straight into
 * rx->dst (re-read before every read: the early-match rule), bytes beyond
 * rx->cap into a scratch buffer and dropped.
 *
 * All sockets sit in one epoll set; pollfds() hands out the epoll fd, which
 * is readable whenever any socket needs attention.
 *
 * Defaults (issue 22 item 3; interleaved runs of tests/bench/mpibench.c, 2
 * ranks over loopback, Open MPI's tcp btl alongside):
 *   - congestion control "reno" on connections to a loopback address
 *     (p2p_tcp_loopback_cc; p2p_tcp_loopback_opts() says why): with the
 *     system's BBR the window stayed at 11-17 segments after a ping-pong
 *     phase and bandwidth at 64 KiB - 4 MiB at 1.9-6 GB/s, alternating from
 *     one launch to the next; with reno 7-9.6 GB/s, every launch.
 *   - eager limit 512 KiB (Open MPI's tcp: 64 KiB).  The request layer's
 *     rendezvous request carries the first eager_limit bytes and the
 *     receiver answers as soon as a receive matches, so the rest waits for
 *     no handshake once the fragment takes longer to move than a round
 *     trip, which 64 KiB (9 us at 7 GB/s) does not; and a message up to
 *     512 KiB pays no round trip at all (ping-pong at 128 / 256 KiB 22 / 34
 *     us instead of 29 / 42).  Unexpected messages cost no more memory for
 *     it: the eager budget (kumi_base_eager_budget, 8 MiB per sender) bounds
 *     what a receiver holds whatever the limit (a message past it goes as a
 *     plain rendezvous); what a larger limit costs is a copy more of a
 *     message that arrives before its receive.
 *   - socket buffers: the kernel's autotuning (p2p_tcp_sndbuf / rcvbuf 0);
 *     fixed 4 MiB buffers measured the same once the window was reno's.
 */
#define _GNU_SOURCE
#include "p2p_tcp.h"

/* parameters */
size_t p2p_tcp_eager;
size_t p2p_tcp_batch;         /* largest payload batched; 0: none */
int p2p_tcp_share;            /* send over a connection the peer opened (p2p_tcp_adopt) */
size_t p2p_tcp_sndbuf, p2p_tcp_rcvbuf;
const char *p2p_tcp_if_include, *p2p_tcp_if_exclude, *p2p_tcp_family, *p2p_tcp_loopback_cc;
static int p2p_tcp_fflags;    /* KUMI_NETIF_V4 / V6 / PREFER6 from p2p_tcp_family */
double p2p_tcp_connect_timeout, p2p_tcp_auth_timeout;
size_t p2p_tcp_auth_max;

/* state */
struct p2p_tcp_listener p2p_tcp_lis[P2P_TCP_MAXADDR];
int p2p_tcp_nlis;
int p2p_tcp_timer_kind = P2P_TCP_K_TIMER;
int p2p_tcp_epfd = -1, p2p_tcp_tfd = -1;
int p2p_tcp_me = -1, p2p_tcp_size = 0;
unsigned char p2p_tcp_key[KUMI_JOBKEY_MAC];   /* K: proofs are HMACs under it */
int p2p_tcp_self_first, p2p_tcp_shmem_first; /* initialized before tcp in this rank */
int p2p_tcp_onehost;          /* mpiexec says every rank runs on this machine */
size_t p2p_tcp_npending;      /* accepted, not yet authenticated */
double p2p_tcp_next_expiry;   /* earliest deadline of those (0: none armed) */
unsigned long p2p_tcp_refused; /* closed at once or for want of a valid PROOF */
/* Per peer, by pointer (an epoll registration points at its entry, so
 * entries never move when the table grows for peers beyond the world):
 * the world's entries lie in one block, p2p_tcp_world_peers. */
struct p2p_tcp_peer **p2p_tcp_peers;
int p2p_tcp_npeers;
static struct p2p_tcp_peer *p2p_tcp_world_peers;
char p2p_tcp_published[KUMI_KVS_VAL_MAX];   /* "p2p.tcp.addr" of this rank (cards of p2p_tcp_xjob.c) */
struct p2p_tcp_in *p2p_tcp_ins;
struct kumi_netif p2p_tcp_ifs[P2P_TCP_MAXADDR];
int p2p_tcp_nifs;
size_t p2p_tcp_nqueued;       /* ops queued to live peers */
int p2p_tcp_nconnecting;
int p2p_tcp_in_progress;
unsigned long p2p_tcp_gen = 1; /* progress() calls: a burst is writes within one */
struct p2p_tcp_peer *p2p_tcp_corked; /* peers with a burst held back for the next progress() */
char p2p_tcp_drop[64 * 1024]; /* truncated bytes land here */

/* Set when an RTS carrying a large first fragment has been announced: progress()
 * returns before reading the fragment, so that the request layer sends its
 * CTS at once and the handshake overlaps the fragment's transfer (no latency
 * step at the eager limit).  The socket stays readable: epoll is level-triggered. */
int p2p_tcp_yield;




/* ------------------------------------------------------------------ */
/* parameters, open */

static void p2p_tcp_register(void)
{
    kumi_param_register_size("p2p", "tcp", "eager_limit", P2P_TCP_EAGER_DEFAULT,
                             "Largest message sent eagerly over TCP; a larger one goes as rendezvous "
                             "whose request carries the first eager_limit bytes",
                             KUMI_LEVEL_TUNER, &p2p_tcp_eager);
    kumi_param_register_size("p2p", "tcp", "batch_limit", 0,
                             "Largest payload (bytes) of a message that waits for the next progress "
                             "round when this rank wrote to the same peer since the last one, so "
                             "that a burst of messages leaves in one system call (e.g. 65536: higher "
                             "message rate, but a second MPI_Isend to a peer leaves only at the "
                             "rank's next MPI call); 0 (default) = every message is written at once",
                             KUMI_LEVEL_TUNER, &p2p_tcp_batch);
    kumi_param_register_bool("p2p", "tcp", "share_connections", 1,
                             "Send to a peer over the connection it opened to this rank when this "
                             "rank has not opened one (one connection per pair, both directions: "
                             "a reply carries the acknowledgement of the request; lower latency); "
                             "false = every rank sends only over connections it opened",
                             KUMI_LEVEL_TUNER, &p2p_tcp_share);
    kumi_param_register_size("p2p", "tcp", "sndbuf", 0,
                             "Socket send buffer size (SO_SNDBUF); 0 = system default",
                             KUMI_LEVEL_TUNER, &p2p_tcp_sndbuf);
    kumi_param_register_size("p2p", "tcp", "rcvbuf", 0,
                             "Socket receive buffer size (SO_RCVBUF); 0 = system default",
                             KUMI_LEVEL_TUNER, &p2p_tcp_rcvbuf);
    kumi_param_register_string("p2p", "tcp", "loopback_cc", "reno",
                               "TCP congestion control (TCP_CONGESTION) of connections to a loopback "
                               "address (a peer on this host); empty = the system's default "
                               "(net.ipv4.tcp_congestion_control)",
                               KUMI_LEVEL_TUNER, &p2p_tcp_loopback_cc);
    kumi_param_register_string("p2p", "tcp", "if_include", "",
                               "Comma-separated interfaces to use: names (a trailing * matches a "
                               "prefix, e.g. eth*), subnets (10.1.0.0/16, fd00::/64) or addresses; "
                               "empty = all",
                               KUMI_LEVEL_USER, &p2p_tcp_if_include);
    kumi_param_register_string("p2p", "tcp", "if_exclude", "",
                               "Comma-separated interfaces not to use: names (a trailing * matches "
                               "a prefix), subnets or addresses",
                               KUMI_LEVEL_USER, &p2p_tcp_if_exclude);
    kumi_param_register_string("p2p", "tcp", "family", "any",
                               "IP versions to use: any (IPv4 and IPv6, IPv4 tried first), "
                               "prefer_ipv6 (both, IPv6 first), ipv4, ipv6",
                               KUMI_LEVEL_USER, &p2p_tcp_family);
    kumi_param_register_double("p2p", "tcp", "connect_timeout", 10.0,
                               "Seconds to wait for a TCP connect to one address before trying the "
                               "peer's next address",
                               KUMI_LEVEL_TUNER, &p2p_tcp_connect_timeout);
    kumi_param_register_double("p2p", "tcp", "auth_timeout", 3.0,
                               "Seconds an accepted connection has to prove that it belongs to the "
                               "job before it is closed",
                               KUMI_LEVEL_TUNER, &p2p_tcp_auth_timeout);
    kumi_param_register_size("p2p", "tcp", "auth_max", 64,
                             "Accepted connections not yet authenticated that a rank holds at once, "
                             "beyond one per rank of the job; past that a new one is closed at once",
                             KUMI_LEVEL_TUNER, &p2p_tcp_auth_max);
}

static int p2p_tcp_parse_family(const char *v)
{
    if (!v || !*v || !strcmp(v, "any") || !strcmp(v, "both") || !strcmp(v, "prefer_ipv4"))
        return KUMI_NETIF_V4 | KUMI_NETIF_V6;
    if (!strcmp(v, "prefer_ipv6")) return KUMI_NETIF_V4 | KUMI_NETIF_V6 | KUMI_NETIF_PREFER6;
    if (!strcmp(v, "ipv4") || !strcmp(v, "4")) return KUMI_NETIF_V4;
    if (!strcmp(v, "ipv6") || !strcmp(v, "6")) return KUMI_NETIF_V6 | KUMI_NETIF_PREFER6;
    return -1;
}

static int p2p_tcp_open(char *why, size_t whylen)
{
    int fd4 = -1, fd6 = -1, fl = p2p_tcp_parse_family(p2p_tcp_family);
    if (fl < 0) fl = KUMI_NETIF_V4 | KUMI_NETIF_V6;     /* init() reports the bad value */
    if (fl & KUMI_NETIF_V4) fd4 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fl & KUMI_NETIF_V6) fd6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd4 < 0 && fd6 < 0) {
        snprintf(why, whylen, "no TCP sockets (%s): %s", p2p_tcp_family, strerror(errno));
        return KUMI_UNAVAILABLE;
    }
    if (fd4 >= 0) close(fd4);
    if (fd6 >= 0) close(fd6);
    return KUMI_OK;
}

/* ------------------------------------------------------------------ */
/* helpers */

/* The job's key for this transport (never the secret itself).  Without a
 * secret (a singleton) a random one: nobody else can then connect. */
static int p2p_tcp_make_key(void)
{
    const char *sec = kumi_jobkey_secret(), *jobid = getenv("KUMI_JOBID");
    char label[128];
    const void *parts[1] = { label };
    size_t lens[1];
    if (!sec) {
        if (p2p_tcp_size > 1)
            return kumi_error(MPI_ERR_OTHER, "p2p/tcp: no job secret (KUMI_JOB_SECRET) to "
                              "authenticate connections with");
        if (getrandom(p2p_tcp_key, sizeof p2p_tcp_key, 0) != (ssize_t)sizeof p2p_tcp_key)
            return kumi_error(MPI_ERR_OTHER, "p2p/tcp: getrandom: %s", strerror(errno));
        return MPI_SUCCESS;
    }
    snprintf(label, sizeof label, "kumi p2p/tcp key %s", jobid ? jobid : "");
    lens[0] = strlen(label);
    kumi_jobkey_hmac(sec, strlen(sec), parts, lens, 1, p2p_tcp_key);
    return MPI_SUCCESS;
}

int p2p_tcp_nonce(unsigned char *out)
{
    return getrandom(out, P2P_TCP_NONCE, 0) == P2P_TCP_NONCE ? 0 : -1;
}

/* HMAC(K, what nonce_a nonce_c rank_c rank_a): the proof of the connecting
 * side (what = "connect") or of the accepting side ("accept"). */
void p2p_tcp_proof(const char *what, const unsigned char *nonce_a, const unsigned char *nonce_c,
                          int32_t rank_c, int32_t rank_a, unsigned char out[KUMI_JOBKEY_MAC])
{
    const void *parts[5] = { what, nonce_a, nonce_c, &rank_c, &rank_a };
    size_t lens[5] = { strlen(what) + 1, P2P_TCP_NONCE, P2P_TCP_NONCE, 4, 4 };
    kumi_jobkey_hmac(p2p_tcp_key, sizeof p2p_tcp_key, parts, lens, 5, out);
}

void p2p_tcp_sockopts(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (p2p_tcp_sndbuf) {
        int v = p2p_tcp_sndbuf > (size_t)0x7fffffff ? 0x7fffffff : (int)p2p_tcp_sndbuf;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    }
    if (p2p_tcp_rcvbuf) {
        int v = p2p_tcp_rcvbuf > (size_t)0x7fffffff ? 0x7fffffff : (int)p2p_tcp_rcvbuf;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    }
}

/* A connection to a loopback address (before connect): its congestion
 * control.  Nothing is lost on loopback, so congestion control has nothing
 * to find out there; but BBR (some systems' default) models the path from
 * round-trip times, which the CPU's load makes jitter, and kept the window
 * at 11-17 segments after ping-pong traffic (bandwidth at 64 KiB 1.9 GB/s
 * instead of 7, run after run); cubic's HyStart leaves slow start on the
 * same jitter.  Reno stays in slow start until a loss, which never comes. */
void p2p_tcp_loopback_opts(int fd, const struct sockaddr *sa)
{
    static int said;
    if (kumi_netif_loopback_cc(fd, sa, p2p_tcp_loopback_cc) != 0 && !said++)
        kumi_log(2, "p2p/tcp: p2p_tcp_loopback_cc \"%s\": %s (the system's congestion control stays)",
                 p2p_tcp_loopback_cc, strerror(errno));
}

void p2p_tcp_ep_add(int fd, uint32_t ev, void *ptr)
{
    struct epoll_event e;
    memset(&e, 0, sizeof e);
    e.events = ev;
    e.data.ptr = ptr;
    epoll_ctl(p2p_tcp_epfd, EPOLL_CTL_ADD, fd, &e);
}

static void p2p_tcp_ep_mod(int fd, uint32_t ev, void *ptr)
{
    struct epoll_event e;
    memset(&e, 0, sizeof e);
    e.events = ev;
    e.data.ptr = ptr;
    epoll_ctl(p2p_tcp_epfd, EPOLL_CTL_MOD, fd, &e);
}

void p2p_tcp_ep_del(int fd)
{
    struct epoll_event e;
    memset(&e, 0, sizeof e);
    epoll_ctl(p2p_tcp_epfd, EPOLL_CTL_DEL, fd, &e);
}

void p2p_tcp_out_events(struct p2p_tcp_peer *p, uint32_t ev)
{
    if (p->fd >= 0 && p->events != ev) {
        p2p_tcp_ep_mod(p->fd, ev, p);
        p->events = ev;
    }
}

void p2p_tcp_lost_warn(int rank)
{
    if (p2p_tcp_peers && rank >= 0 && rank < p2p_tcp_npeers && p2p_tcp_peers[rank] && !p2p_tcp_peers[rank]->warned) {
        p2p_tcp_peers[rank]->warned = 1;
        kumi_warn("p2p/tcp: connection to rank %d lost", rank);
    }
}

/* ------------------------------------------------------------------ */
/* interfaces and addresses */

/* The addresses to listen on (kumi/netif.h chooses them); -1 for a bad list. */
static int p2p_tcp_scan_ifs(char *err, size_t errlen)
{
    int fl = p2p_tcp_fflags | (p2p_tcp_onehost ? KUMI_NETIF_ONEHOST : KUMI_NETIF_KEEP_LO);
    p2p_tcp_nifs = kumi_netif_choose(p2p_tcp_ifs, P2P_TCP_MAXADDR, p2p_tcp_if_include, p2p_tcp_if_exclude,
                                     fl, err, errlen);
    return p2p_tcp_nifs < 0 ? -1 : 0;
}

static int p2p_tcp_shared_subnet(const struct sockaddr *sa)
{
    for (int i = 0; i < p2p_tcp_nifs; i++)
        if (!p2p_tcp_ifs[i].loopback && kumi_netif_same_subnet(&p2p_tcp_ifs[i], sa)) return 1;
    return 0;
}

/* Parse "ip:port,[ip6]:port" into p->addrs, ordered for this rank: loopback
 * first (same host only), then those on a subnet of ours, then the rest;
 * within each, the preferred IP version first; versions p2p_tcp_family
 * excludes are left out. */
void p2p_tcp_parse_addrs(struct p2p_tcp_peer *p, const char *list, int same_host, int onehost)
{
    struct sockaddr_storage all[P2P_TCP_MAXADDR];
    int n = 0, fam[2];
    const char *s = list;
    fam[0] = (p2p_tcp_fflags & KUMI_NETIF_PREFER6) ? AF_INET6 : AF_INET;
    fam[1] = fam[0] == AF_INET ? AF_INET6 : AF_INET;
    while (*s && n < P2P_TCP_MAXADDR) {
        char item[KUMI_NETIF_ADDRSTR];
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len > 0 && len < sizeof item) {
            memcpy(item, s, len);
            item[len] = 0;
            if (kumi_netif_parse(item, &all[n], NULL, 0) == 0) {
                int f = all[n].ss_family;
                if ((f == AF_INET && (p2p_tcp_fflags & KUMI_NETIF_V4)) ||
                    (f == AF_INET6 && (p2p_tcp_fflags & KUMI_NETIF_V6)))
                    n++;
            }
        }
        if (!e) break;
        s = e + 1;
    }
    p->addrs = calloc(n ? (size_t)n : 1, sizeof *p->addrs);
    p->naddrs = 0;
    if (!p->addrs) return;
    /* class 0: loopback (same host only); 1: shared subnet; 2: the rest */
    for (int pass = 0; pass < 6; pass++) {
        int cls = pass / 2, f = fam[pass % 2];
        for (int i = 0; i < n; i++) {
            const struct sockaddr *sa = (const struct sockaddr *)&all[i];
            int lo = kumi_netif_is_loopback(sa), take;
            if (sa->sa_family != f) continue;
            if (lo) take = (same_host || onehost) && cls == 0;
            else if (cls == 1) take = p2p_tcp_shared_subnet(sa);
            else if (cls == 2) take = !p2p_tcp_shared_subnet(sa);
            else take = 0;
            if (take) p->addrs[p->naddrs++] = all[i];
        }
    }
}

/* The address this rank reaches peer at: the one connected (or being
 * tried), else the first it will try. */
const char *p2p_tcp_peer_addr(int peer, char *buf, size_t len)
{
    const struct p2p_tcp_peer *p;
    if (!p2p_tcp_reaches(peer)) {
        snprintf(buf, len, "?");
        return buf;
    }
    p = p2p_tcp_peers[peer];
    return kumi_netif_format((const struct sockaddr *)&p->addrs[p->cur < p->naddrs ? p->cur : 0], 1, buf, len);
}

/* ------------------------------------------------------------------ */
/* init, wireup */

/* Undo a failed init (the request layer then leaves this transport out). */
static void p2p_tcp_close_listeners(void)
{
    for (int i = 0; i < p2p_tcp_nlis; i++) {
        if (p2p_tcp_epfd >= 0) p2p_tcp_ep_del(p2p_tcp_lis[i].fd);
        close(p2p_tcp_lis[i].fd);
    }
    p2p_tcp_nlis = 0;
}

static int p2p_tcp_init_failed(int rc)
{
    p2p_tcp_close_listeners();
    if (p2p_tcp_tfd >= 0) close(p2p_tcp_tfd);
    if (p2p_tcp_epfd >= 0) close(p2p_tcp_epfd);
    p2p_tcp_tfd = p2p_tcp_epfd = -1;
    return rc;
}

/* Listen on an ephemeral port of addr (port 0); returns the port, or -1 (errno). */
int p2p_tcp_listen_on(const struct sockaddr *addr)
{
    struct sockaddr_storage sa;
    socklen_t salen = sizeof sa;
    struct p2p_tcp_listener *l = &p2p_tcp_lis[p2p_tcp_nlis];
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (addr->sa_family == AF_INET6) {
        int one = 1;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    }
    if (p2p_tcp_rcvbuf) {           /* accepted sockets inherit it (window scaling) */
        int v = p2p_tcp_rcvbuf > (size_t)0x7fffffff ? 0x7fffffff : (int)p2p_tcp_rcvbuf;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    }
    if (bind(fd, addr, kumi_netif_salen(addr)) != 0 || listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    l->kind = P2P_TCP_K_LISTEN;
    l->fd = fd;
    p2p_tcp_nlis++;
    p2p_tcp_ep_add(fd, EPOLLIN, l);
    return sa.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&sa)->sin6_port)
                                    : ntohs(((struct sockaddr_in *)&sa)->sin_port);
}

static int p2p_tcp_init(void)
{
    char val[KUMI_KVS_VAL_MAX], tmp[KUMI_KVS_VAL_MAX];
    size_t off = 0;
    const char *host, *nh = getenv(KUMI_ENV_NHOSTS);
    char err[256];
    int rc;

    p2p_tcp_me = kumi_world_rank();
    p2p_tcp_size = kumi_world_size();
    if (p2p_tcp_size < 1) p2p_tcp_size = 1;
    rc = p2p_tcp_make_key();
    if (rc != MPI_SUCCESS) return rc;
    /* which transports this rank started before tcp (own keys are visible
     * at once): they serve the peers they reach before tcp would */
    p2p_tcp_self_first = kumi_rpim_get(p2p_tcp_me, "p2p.self.up", tmp, sizeof tmp) == MPI_SUCCESS;
    p2p_tcp_shmem_first = kumi_rpim_get(p2p_tcp_me, "p2p.shmem.addr", tmp, sizeof tmp) == MPI_SUCCESS;

    /* a bad parameter leaves tcp out: said once (rank 0), since MPI_Init's
     * own message would only say that no transport reaches some rank */
    p2p_tcp_fflags = p2p_tcp_parse_family(p2p_tcp_family);
    if (p2p_tcp_fflags < 0) {
        if (p2p_tcp_me == 0)
            kumi_warn("p2p/tcp: not used: p2p_tcp_family \"%s\" is not one of any, prefer_ipv6, ipv4, ipv6",
                      p2p_tcp_family);
        return kumi_error(MPI_ERR_ARG, "p2p/tcp: p2p_tcp_family \"%s\" is not one of any, prefer_ipv6, "
                          "ipv4, ipv6", p2p_tcp_family);
    }
    /* a job on one host needs no more than loopback (if it was chosen) */
    p2p_tcp_onehost = !nh || !*nh || strcmp(nh, "1") == 0;
    if (p2p_tcp_scan_ifs(err, sizeof err) != 0) {
        if (p2p_tcp_me == 0) kumi_warn("p2p/tcp: not used: p2p_tcp_if_%s", err);
        return kumi_error(MPI_ERR_ARG, "p2p/tcp: p2p_tcp_if_%s", err);
    }
    if (p2p_tcp_nifs == 0)
        return kumi_error(MPI_ERR_OTHER, "p2p/tcp: no %s address left to use "
                          "(see p2p_tcp_if_include / p2p_tcp_if_exclude / p2p_tcp_family)",
                          p2p_tcp_fflags == KUMI_NETIF_V4 ? "IPv4" :
                          !(p2p_tcp_fflags & KUMI_NETIF_V4) ? "IPv6" : "IP");

    p2p_tcp_epfd = epoll_create1(EPOLL_CLOEXEC);
    if (p2p_tcp_epfd < 0)
        return p2p_tcp_init_failed(kumi_error(MPI_ERR_OTHER, "p2p/tcp: epoll_create1: %s", strerror(errno)));
    p2p_tcp_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (p2p_tcp_tfd < 0)
        return p2p_tcp_init_failed(kumi_error(MPI_ERR_OTHER, "p2p/tcp: timerfd_create: %s", strerror(errno)));
    p2p_tcp_ep_add(p2p_tcp_tfd, EPOLLIN, &p2p_tcp_timer_kind);

    val[0] = 0;
    for (int i = 0; i < p2p_tcp_nifs; i++) {
        char ip[KUMI_NETIF_ADDRSTR];
        int k, port;
        struct kumi_netif *f = &p2p_tcp_ifs[i];
        port = p2p_tcp_listen_on(&f->addr.sa);
        if (port < 0) {
            kumi_log(2, "p2p/tcp: cannot listen on %s (%s): %s", kumi_netif_format(&f->addr.sa, 0, ip, sizeof ip),
                     f->name, strerror(errno));
            continue;
        }
        if (f->addr.sa.sa_family == AF_INET6) f->addr.in6.sin6_port = htons((uint16_t)port);
        else f->addr.in4.sin_port = htons((uint16_t)port);
        kumi_netif_format(&f->addr.sa, 1, ip, sizeof ip);
        k = snprintf(val + off, sizeof val - off, "%s%s", off ? "," : "", ip);
        if (k < 0 || (size_t)k >= sizeof val - off) {
            val[off] = 0;
            break;
        }
        off += (size_t)k;
    }
    if (p2p_tcp_nlis == 0)
        return p2p_tcp_init_failed(kumi_error(MPI_ERR_OTHER, "p2p/tcp: cannot listen on any chosen "
                                              "address: %s", strerror(errno)));
    snprintf(p2p_tcp_published, sizeof p2p_tcp_published, "%s", val);
    rc = kumi_rpim_put("p2p.tcp.addr", val);
    if (rc != MPI_SUCCESS) return p2p_tcp_init_failed(rc);
    host = kumi_host_id();
    rc = kumi_rpim_put("p2p.tcp.host", host ? host : "");
    if (rc != MPI_SUCCESS) return p2p_tcp_init_failed(rc);
    kumi_log(2, "p2p/tcp: listening on %s", val);
    return MPI_SUCCESS;
}

static int p2p_tcp_wireup(void)
{
    const char *myhost = kumi_host_id();
    char val[KUMI_KVS_VAL_MAX], host[KUMI_KVS_VAL_MAX];
    int needed = 0;
    p2p_tcp_peers = calloc((size_t)p2p_tcp_size, sizeof *p2p_tcp_peers);
    p2p_tcp_world_peers = calloc((size_t)p2p_tcp_size, sizeof *p2p_tcp_world_peers);
    if (!p2p_tcp_peers || !p2p_tcp_world_peers) return kumi_error(MPI_ERR_NO_MEM, "p2p/tcp: out of memory");
    p2p_tcp_npeers = p2p_tcp_size;
    for (int r = 0; r < p2p_tcp_size; r++) {
        struct p2p_tcp_peer *p = p2p_tcp_peers[r] = &p2p_tcp_world_peers[r];
        int same;
        p->kind = P2P_TCP_K_OUT;
        p->rank = r;
        p->fd = -1;
        p->state = P2P_TCP_OUT_NONE;
        if (kumi_rpim_get(r, "p2p.tcp.addr", val, sizeof val) != MPI_SUCCESS || !val[0])
            continue;
        if (kumi_rpim_get(r, "p2p.tcp.host", host, sizeof host) != MPI_SUCCESS) host[0] = 0;
        same = r == p2p_tcp_me || (host[0] && myhost && strcmp(host, myhost) == 0);
        p2p_tcp_parse_addrs(p, val, same, p2p_tcp_onehost);
        kumi_log(3, "p2p/tcp: rank %d at %s (%s, %d usable addresses)", r, val,
                 same ? "same host" : "other host", p->naddrs);
        /* could r (or this rank itself) come to us over tcp? */
        if (r == p2p_tcp_me)
            needed |= !p2p_tcp_self_first;
        else
            needed |= !(same && p2p_tcp_shmem_first &&
                        kumi_rpim_get(r, "p2p.shmem.addr", val, sizeof val) == MPI_SUCCESS);
    }
    if (!needed && p2p_tcp_nlis > 0) {
        kumi_log(2, "p2p/tcp: every peer is reached before tcp (self, shmem): listeners closed");
        p2p_tcp_close_listeners();
    }
    return MPI_SUCCESS;
}

int p2p_tcp_reaches(int peer)
{
    return p2p_tcp_peers && peer >= 0 && peer < p2p_tcp_npeers && p2p_tcp_peers[peer] &&
           p2p_tcp_peers[peer]->naddrs > 0;
}

static int p2p_tcp_describe(int peer, char *buf, size_t len)
{
    char a[KUMI_NETIF_ADDRSTR];
    snprintf(buf, len, "%s", p2p_tcp_peer_addr(peer, a, sizeof a));
    return 0;
}

/* p2p contract 1.4: the outgoing connection is the one socket that carries
 * this process's bytes to peer (accepted connections only receive). */
static int p2p_tcp_peer_sockets(int peer, int *fds, int max)
{
    if (!p2p_tcp_reaches(peer) || max < 1) return 0;
    const struct p2p_tcp_peer *p = p2p_tcp_peers[peer];
    if (p->fd < 0 || p->state == P2P_TCP_OUT_NONE || p->state == P2P_TCP_OUT_DEAD) return 0;
    fds[0] = p->fd;
    return 1;
}

static int p2p_tcp_peer_sockaddr(int peer, struct sockaddr_storage *sa)
{
    if (!p2p_tcp_reaches(peer)) return -1;
    const struct p2p_tcp_peer *p = p2p_tcp_peers[peer];
    *sa = p->addrs[p->cur < p->naddrs ? p->cur : 0];
    return 0;
}

static size_t p2p_tcp_eager_limit(int peer)
{
    (void)peer;
    return p2p_tcp_eager;
}

/* ------------------------------------------------------------------ */
/* progress, poll, busy, finalize */

static void p2p_tcp_check_timeouts(void)
{
    double now = kumi_time();
    for (int r = 0; r < p2p_tcp_npeers && p2p_tcp_nconnecting > 0; r++) {
        struct p2p_tcp_peer *p = p2p_tcp_peers[r];
        if (p && p2p_tcp_handshaking(p->state) && now > p->deadline) {
            kumi_log(2, "p2p/tcp: connect to rank %d address %d timed out", r, p->cur);
            p2p_tcp_connect_failed(p);
        }
    }
}

static int p2p_tcp_progress(void)
{
    static int skipped;
    static unsigned rounds;
    struct epoll_event ev[P2P_TCP_MAXEV];
    int n = 0, did = 0, k;
    if (p2p_tcp_epfd < 0 || p2p_tcp_in_progress) return 0;
    p2p_tcp_in_progress = 1;
    p2p_tcp_gen++;                       /* the next direct write starts a new burst */
    if (p2p_tcp_corked) {
        p2p_tcp_uncork();
        did = 1;
    }
    /* A round that wrote a held-back burst returns without polling (a
     * blocking MPI_Send whose message waited for this round is done now and
     * pays no epoll_wait), but never two rounds in a row: incoming messages
     * wait one round at most. */
    p2p_tcp_yield = 0;
    if (did && !skipped) skipped = 1;
    else if (!p2p_tcp_nqueued && !p2p_tcp_nconnecting && ++rounds % P2P_TCP_EPOLL_EVERY &&
             (k = p2p_tcp_in_only()) >= 0) {
        /* one connection brings messages, nothing waits to be written or
         * connected: read it directly; epoll (new connections, the timer,
         * errors of outgoing sockets) every P2P_TCP_EPOLL_EVERY rounds */
        skipped = 0;
        did |= k;
    } else {
        skipped = 0;
        n = epoll_wait(p2p_tcp_epfd, ev, P2P_TCP_MAXEV, 0);
    }
    for (int i = 0; i < n && !p2p_tcp_yield; i++) {
        int kind = *(int *)ev[i].data.ptr;
        if (kind == P2P_TCP_K_LISTEN) {
            p2p_tcp_accept(((struct p2p_tcp_listener *)ev[i].data.ptr)->fd);
            did = 1;
        } else if (kind == P2P_TCP_K_TIMER) {
            p2p_tcp_expire();
        } else if (kind == P2P_TCP_K_IN) {
            did |= p2p_tcp_in_event(ev[i].data.ptr);
        } else if (kind == P2P_TCP_K_OUT) {
            p2p_tcp_out_event(ev[i].data.ptr, ev[i].events);
            did = 1;
        }
    }
    if (p2p_tcp_nconnecting > 0) p2p_tcp_check_timeouts();
    if (p2p_tcp_npending > 0 && kumi_time() >= p2p_tcp_next_expiry) p2p_tcp_expire();
    p2p_tcp_in_progress = 0;
    return did;
}

static int p2p_tcp_pollfds(struct pollfd *fds, int max)
{
    if (p2p_tcp_epfd < 0 || max < 1) return 0;
    if (p2p_tcp_corked) return KUMI_P2P_NOSLEEP;   /* a burst waits for progress() */
    fds[0].fd = p2p_tcp_epfd;
    fds[0].events = POLLIN;
    fds[0].revents = 0;
    return 1;
}

static int p2p_tcp_busy(void)
{
    return p2p_tcp_nqueued > 0;
}

static void p2p_tcp_finalize(void)
{
    while (p2p_tcp_ins) p2p_tcp_in_close(p2p_tcp_ins, 0);
    if (p2p_tcp_peers) {
        for (int r = 0; r < p2p_tcp_npeers; r++) {
            struct p2p_tcp_peer *p = p2p_tcp_peers[r];
            if (!p) continue;
            if (p->fd >= 0) close(p->fd);
            free(p->addrs);
            if (r >= p2p_tcp_size) free(p);     /* added peers: one allocation each */
        }
        free(p2p_tcp_peers);
        free(p2p_tcp_world_peers);
        p2p_tcp_peers = NULL;
        p2p_tcp_world_peers = NULL;
    }
    p2p_tcp_npeers = 0;
    p2p_tcp_corked = NULL;
    p2p_tcp_close_listeners();
    if (p2p_tcp_tfd >= 0) close(p2p_tcp_tfd);
    if (p2p_tcp_epfd >= 0) close(p2p_tcp_epfd);
    p2p_tcp_tfd = p2p_tcp_epfd = -1;
    p2p_tcp_nqueued = 0;
    p2p_tcp_nconnecting = 0;
    p2p_tcp_npending = 0;
    p2p_tcp_next_expiry = 0;
}

static const struct kumi_p2p_ops p2p_tcp_ops = {
    .hdr = KUMI_P2P_OPS_HDR,
    .caps = 0,
    .init = p2p_tcp_init,
    .wireup = p2p_tcp_wireup,
    .reaches = p2p_tcp_reaches,
    .eager_limit = p2p_tcp_eager_limit,
    .send = p2p_tcp_send,
    .progress = p2p_tcp_progress,
    .pollfds = p2p_tcp_pollfds,
    .busy = p2p_tcp_busy,
    .finalize = p2p_tcp_finalize,
    .describe = p2p_tcp_describe,
    .peer_sockets = p2p_tcp_peer_sockets,
    .peer_sockaddr = p2p_tcp_peer_sockaddr,
    .xjob_card = p2p_tcp_xjob_card,
    .xjob_add = p2p_tcp_xjob_add,
};

KUMI_EXPORT const struct kumi_component kumi_p2p_tcp_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "p2p", .name = "tcp",
    .version = { 0, 1, 0 },
    .description = "TCP sockets to any reachable host",
    .priority = 10,
    .register_params = p2p_tcp_register,
    .open = p2p_tcp_open, .close = NULL,
    .ops = &p2p_tcp_ops,
};
