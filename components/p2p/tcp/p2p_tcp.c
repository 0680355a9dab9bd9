/* p2p/tcp: TCP sockets to any rank that published an address.
 *
 * Addresses: init() listens on ephemeral ports, one socket per chosen
 * address (the host's IPv4 interfaces after p2p_tcp_if_include /
 * p2p_tcp_if_exclude; for a job on one host only the loopback among them),
 * never on INADDR_ANY, and publishes "p2p.tcp.addr" = "ip:port,ip:port,..."
 * (non-loopback first, 127.0.0.1 last) and "p2p.tcp.host" = host name.
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
 * Connections: one per direction.  Rank A sends to B only over the
 * connection A opened (lazily, on the first send), and receives from B only
 * over connections B opened, so there are no simultaneous-connect races and
 * per-peer ordering is the socket's.
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
 * sendmsg.  Receiving: bytes are read into a per-connection staging buffer
 * (headers, small payloads); a large remaining payload is read straight into
 * rx->dst (re-read before every read: the early-match rule), bytes beyond
 * rx->cap into a scratch buffer and dropped.
 *
 * All sockets sit in one epoll set; pollfds() hands out the epoll fd, which
 * is readable whenever any socket needs attention.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <kumi/p2p.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>

#include <kumi/jobkey.h>

#define P2P_TCP_MAGIC_HELLO 0x4b554d48u     /* "KUMH" */
#define P2P_TCP_MAGIC_CHAL  0x4b554d43u     /* "KUMC" */
#define P2P_TCP_NONCE       16
#define P2P_TCP_HELLO_LEN   (8 + P2P_TCP_NONCE)
#define P2P_TCP_CHAL_LEN    (8 + P2P_TCP_NONCE + KUMI_JOBKEY_MAC)
#define P2P_TCP_PROOF_LEN   KUMI_JOBKEY_MAC
#define P2P_TCP_HSBUF       (P2P_TCP_HELLO_LEN + P2P_TCP_PROOF_LEN)
#define P2P_TCP_BUFSZ       (16 * 1024)     /* staging buffer of a connection */
#define P2P_TCP_DIRECT_MIN  (8 * 1024)      /* remaining payload read straight into rx->dst */
#define P2P_TCP_READ_BUDGET (4u << 20)      /* bytes read from one connection per progress() */
#define P2P_TCP_MAXIOV      64
#define P2P_TCP_MAXEV       64
#define P2P_TCP_MAXADDR     32


enum { P2P_TCP_K_LISTEN = 1, P2P_TCP_K_OUT, P2P_TCP_K_IN, P2P_TCP_K_TIMER };

enum {
    P2P_TCP_OUT_NONE,        /* no connection yet */
    P2P_TCP_OUT_CONNECTING,  /* non-blocking connect under way */
    P2P_TCP_OUT_HELLO,       /* HELLO sent, waiting for the acceptor's CHAL */
    P2P_TCP_OUT_UP,
    P2P_TCP_OUT_CLOSED,      /* the peer closed it while nothing was queued */
    P2P_TCP_OUT_DEAD         /* lost or unreachable */
};

struct p2p_tcp_peer {            /* one per world rank: the outgoing side */
    int kind;                    /* P2P_TCP_K_OUT (first: epoll tag) */
    int rank;
    int fd;
    int state;
    uint32_t events;             /* registered epoll events */
    struct sockaddr_in *addrs;   /* in the order to try */
    int naddrs, cur;
    double deadline;             /* of the current connect and handshake */
    unsigned char hello[P2P_TCP_CHAL_LEN];
    size_t hellooff;
    unsigned char nonce_c[P2P_TCP_NONCE];
    struct kumi_sendop *head, *tail;
    size_t nq;
    int warned;
};

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

struct p2p_tcp_listener {
    int kind;                    /* P2P_TCP_K_LISTEN (first: epoll tag) */
    int fd;
};

struct p2p_tcp_if {
    char name[IF_NAMESIZE];
    struct in_addr addr, mask;
    int loopback;
};

/* parameters */
static size_t p2p_tcp_eager;
static size_t p2p_tcp_sndbuf, p2p_tcp_rcvbuf;
static const char *p2p_tcp_if_include, *p2p_tcp_if_exclude;
static double p2p_tcp_connect_timeout, p2p_tcp_auth_timeout;
static size_t p2p_tcp_auth_max;

/* state */
static struct p2p_tcp_listener p2p_tcp_lis[P2P_TCP_MAXADDR];
static int p2p_tcp_nlis;
static int p2p_tcp_timer_kind = P2P_TCP_K_TIMER;
static int p2p_tcp_epfd = -1, p2p_tcp_tfd = -1;
static int p2p_tcp_me = -1, p2p_tcp_size = 0;
static unsigned char p2p_tcp_key[KUMI_JOBKEY_MAC];   /* K: proofs are HMACs under it */
static int p2p_tcp_self_first, p2p_tcp_shmem_first; /* initialized before tcp in this rank */
static int p2p_tcp_onehost;          /* mpiexec says every rank runs on this machine */
static size_t p2p_tcp_npending;      /* accepted, not yet authenticated */
static double p2p_tcp_next_expiry;   /* earliest deadline of those (0: none armed) */
static unsigned long p2p_tcp_refused; /* closed at once or for want of a valid PROOF */
static struct p2p_tcp_peer *p2p_tcp_peers;
static struct p2p_tcp_in *p2p_tcp_ins;
static struct p2p_tcp_if p2p_tcp_ifs[P2P_TCP_MAXADDR];
static int p2p_tcp_nifs;
static size_t p2p_tcp_nqueued;       /* ops queued to live peers */
static int p2p_tcp_nconnecting;
static int p2p_tcp_in_progress;
static char p2p_tcp_drop[64 * 1024]; /* truncated bytes land here */

/* ------------------------------------------------------------------ */
/* parameters, open */

static void p2p_tcp_register(void)
{
    kumi_param_register_size("p2p", "tcp", "eager_limit", 64 * 1024,
                             "Largest message sent eagerly over TCP; larger ones use rendezvous",
                             KUMI_LEVEL_TUNER, &p2p_tcp_eager);
    kumi_param_register_size("p2p", "tcp", "sndbuf", 0,
                             "Socket send buffer size (SO_SNDBUF); 0 = system default",
                             KUMI_LEVEL_TUNER, &p2p_tcp_sndbuf);
    kumi_param_register_size("p2p", "tcp", "rcvbuf", 0,
                             "Socket receive buffer size (SO_RCVBUF); 0 = system default",
                             KUMI_LEVEL_TUNER, &p2p_tcp_rcvbuf);
    kumi_param_register_string("p2p", "tcp", "if_include", "",
                               "Comma-separated interface names to use (a trailing * matches a "
                               "prefix, e.g. eth*); empty = all",
                               KUMI_LEVEL_USER, &p2p_tcp_if_include);
    kumi_param_register_string("p2p", "tcp", "if_exclude", "",
                               "Comma-separated interface names not to use (a trailing * matches a "
                               "prefix)",
                               KUMI_LEVEL_USER, &p2p_tcp_if_exclude);
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

static int p2p_tcp_open(char *why, size_t whylen)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, whylen, "no IPv4 TCP sockets: %s", strerror(errno));
        return KUMI_UNAVAILABLE;
    }
    close(fd);
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

static int p2p_tcp_nonce(unsigned char *out)
{
    return getrandom(out, P2P_TCP_NONCE, 0) == P2P_TCP_NONCE ? 0 : -1;
}

/* HMAC(K, what nonce_a nonce_c rank_c rank_a): the proof of the connecting
 * side (what = "connect") or of the accepting side ("accept"). */
static void p2p_tcp_proof(const char *what, const unsigned char *nonce_a, const unsigned char *nonce_c,
                          int32_t rank_c, int32_t rank_a, unsigned char out[KUMI_JOBKEY_MAC])
{
    const void *parts[5] = { what, nonce_a, nonce_c, &rank_c, &rank_a };
    size_t lens[5] = { strlen(what) + 1, P2P_TCP_NONCE, P2P_TCP_NONCE, 4, 4 };
    kumi_jobkey_hmac(p2p_tcp_key, sizeof p2p_tcp_key, parts, lens, 5, out);
}

static void p2p_tcp_sockopts(int fd)
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

static void p2p_tcp_ep_add(int fd, uint32_t ev, void *ptr)
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

static void p2p_tcp_ep_del(int fd)
{
    struct epoll_event e;
    memset(&e, 0, sizeof e);
    epoll_ctl(p2p_tcp_epfd, EPOLL_CTL_DEL, fd, &e);
}

static void p2p_tcp_out_events(struct p2p_tcp_peer *p, uint32_t ev)
{
    if (p->fd >= 0 && p->events != ev) {
        p2p_tcp_ep_mod(p->fd, ev, p);
        p->events = ev;
    }
}

static void p2p_tcp_lost_warn(int rank)
{
    if (rank >= 0 && rank < p2p_tcp_size && !p2p_tcp_peers[rank].warned) {
        p2p_tcp_peers[rank].warned = 1;
        kumi_warn("p2p/tcp: connection to rank %d lost", rank);
    }
}

/* ------------------------------------------------------------------ */
/* interfaces and addresses */

static int p2p_tcp_name_in_list(const char *name, const char *list)
{
    const char *s = list;
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        while (len && (*s == ' ' || *s == '\t')) { s++; len--; }
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
        if (len) {
            if (s[len - 1] == '*') {
                if (strncmp(name, s, len - 1) == 0) return 1;
            } else if (strlen(name) == len && strncmp(name, s, len) == 0) {
                return 1;
            }
        }
        if (!e) break;
        s = e + 1;
    }
    return 0;
}

static void p2p_tcp_scan_ifs(void)
{
    struct ifaddrs *ifa0 = NULL, *ifa;
    struct p2p_tcp_if lo[P2P_TCP_MAXADDR];
    int nlo = 0;
    p2p_tcp_nifs = 0;
    if (getifaddrs(&ifa0) != 0) ifa0 = NULL;
    for (ifa = ifa0; ifa; ifa = ifa->ifa_next) {
        struct p2p_tcp_if f;
        if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET) continue;
        if (!(ifa->ifa_flags & IFF_UP)) continue;
        if (p2p_tcp_if_include && *p2p_tcp_if_include &&
            !p2p_tcp_name_in_list(ifa->ifa_name, p2p_tcp_if_include))
            continue;
        if (p2p_tcp_if_exclude && *p2p_tcp_if_exclude &&
            p2p_tcp_name_in_list(ifa->ifa_name, p2p_tcp_if_exclude))
            continue;
        memset(&f, 0, sizeof f);
        snprintf(f.name, sizeof f.name, "%s", ifa->ifa_name);
        f.addr = ((struct sockaddr_in *)ifa->ifa_addr)->sin_addr;
        if (ifa->ifa_netmask && ifa->ifa_netmask->sa_family == AF_INET)
            f.mask = ((struct sockaddr_in *)ifa->ifa_netmask)->sin_addr;
        else
            f.mask.s_addr = htonl(0xffffffffu);
        f.loopback = (ifa->ifa_flags & IFF_LOOPBACK) ||
                     (ntohl(f.addr.s_addr) >> 24) == 127;
        if (f.loopback) {
            if (nlo < P2P_TCP_MAXADDR) lo[nlo++] = f;
        } else if (p2p_tcp_nifs < P2P_TCP_MAXADDR) {
            p2p_tcp_ifs[p2p_tcp_nifs++] = f;
        }
    }
    if (ifa0) freeifaddrs(ifa0);
    for (int i = 0; i < nlo && p2p_tcp_nifs < P2P_TCP_MAXADDR; i++)
        p2p_tcp_ifs[p2p_tcp_nifs++] = lo[i];
}

static int p2p_tcp_is_loopback(const struct sockaddr_in *sa)
{
    return (ntohl(sa->sin_addr.s_addr) >> 24) == 127;
}

static int p2p_tcp_shared_subnet(const struct sockaddr_in *sa)
{
    for (int i = 0; i < p2p_tcp_nifs; i++) {
        const struct p2p_tcp_if *f = &p2p_tcp_ifs[i];
        if (f->loopback) continue;
        if ((sa->sin_addr.s_addr & f->mask.s_addr) == (f->addr.s_addr & f->mask.s_addr))
            return 1;
    }
    return 0;
}

/* Parse "ip:port,ip:port" into p->addrs, ordered for this rank. */
static void p2p_tcp_parse_addrs(struct p2p_tcp_peer *p, const char *list, int same_host)
{
    struct sockaddr_in all[P2P_TCP_MAXADDR];
    int n = 0;
    const char *s = list;
    while (*s && n < P2P_TCP_MAXADDR) {
        char item[64];
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len > 0 && len < sizeof item) {
            char *colon;
            memcpy(item, s, len);
            item[len] = 0;
            colon = strrchr(item, ':');
            if (colon) {
                char *end;
                unsigned long port;
                *colon = 0;
                port = strtoul(colon + 1, &end, 10);
                memset(&all[n], 0, sizeof all[n]);
                all[n].sin_family = AF_INET;
                all[n].sin_port = htons((uint16_t)port);
                if (*end == 0 && port > 0 && port < 65536 &&
                    inet_pton(AF_INET, item, &all[n].sin_addr) == 1)
                    n++;
            }
        }
        if (!e) break;
        s = e + 1;
    }
    p->addrs = calloc(n ? (size_t)n : 1, sizeof *p->addrs);
    p->naddrs = 0;
    if (!p->addrs) return;
    /* pass 0: loopback (same host only); pass 1: shared subnet; pass 2: the rest */
    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < n; i++) {
            int lo = p2p_tcp_is_loopback(&all[i]);
            int take;
            if (lo) take = (same_host || p2p_tcp_onehost) && pass == 0;
            else if (pass == 1) take = p2p_tcp_shared_subnet(&all[i]);
            else if (pass == 2) take = !p2p_tcp_shared_subnet(&all[i]);
            else take = 0;
            if (take) p->addrs[p->naddrs++] = all[i];
        }
    }
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

/* Listen on an ephemeral port of addr; returns the port, or -1 (errno). */
static int p2p_tcp_listen_on(struct in_addr addr)
{
    struct sockaddr_in sa;
    socklen_t salen = sizeof sa;
    struct p2p_tcp_listener *l = &p2p_tcp_lis[p2p_tcp_nlis];
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (p2p_tcp_rcvbuf) {           /* accepted sockets inherit it (window scaling) */
        int v = p2p_tcp_rcvbuf > (size_t)0x7fffffff ? 0x7fffffff : (int)p2p_tcp_rcvbuf;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    }
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr = addr;
    sa.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, SOMAXCONN) != 0 ||
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
    return ntohs(sa.sin_port);
}

static int p2p_tcp_init(void)
{
    char val[KUMI_KVS_VAL_MAX], tmp[KUMI_KVS_VAL_MAX];
    size_t off = 0;
    const char *host, *nh = getenv(KUMI_ENV_NHOSTS);
    int rc, haslo = 0;

    p2p_tcp_me = kumi_world_rank();
    p2p_tcp_size = kumi_world_size();
    if (p2p_tcp_size < 1) p2p_tcp_size = 1;
    rc = p2p_tcp_make_key();
    if (rc != MPI_SUCCESS) return rc;
    /* which transports this rank started before tcp (own keys are visible
     * at once): they serve the peers they reach before tcp would */
    p2p_tcp_self_first = kumi_rpim_get(p2p_tcp_me, "p2p.self.up", tmp, sizeof tmp) == MPI_SUCCESS;
    p2p_tcp_shmem_first = kumi_rpim_get(p2p_tcp_me, "p2p.shmem.addr", tmp, sizeof tmp) == MPI_SUCCESS;

    p2p_tcp_scan_ifs();
    if (p2p_tcp_nifs == 0)
        return kumi_error(MPI_ERR_OTHER, "p2p/tcp: no IPv4 interface left to use "
                          "(see p2p_tcp_if_include / p2p_tcp_if_exclude)");

    p2p_tcp_epfd = epoll_create1(EPOLL_CLOEXEC);
    if (p2p_tcp_epfd < 0)
        return p2p_tcp_init_failed(kumi_error(MPI_ERR_OTHER, "p2p/tcp: epoll_create1: %s", strerror(errno)));
    p2p_tcp_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (p2p_tcp_tfd < 0)
        return p2p_tcp_init_failed(kumi_error(MPI_ERR_OTHER, "p2p/tcp: timerfd_create: %s", strerror(errno)));
    p2p_tcp_ep_add(p2p_tcp_tfd, EPOLLIN, &p2p_tcp_timer_kind);

    /* a job on one host needs no more than loopback (if it was chosen) */
    p2p_tcp_onehost = !nh || !*nh || strcmp(nh, "1") == 0;
    for (int i = 0; i < p2p_tcp_nifs; i++) haslo |= p2p_tcp_ifs[i].loopback;
    val[0] = 0;
    for (int i = 0; i < p2p_tcp_nifs; i++) {
        char ip[INET_ADDRSTRLEN];
        int k, port;
        if (p2p_tcp_onehost && haslo && !p2p_tcp_ifs[i].loopback) continue;
        inet_ntop(AF_INET, &p2p_tcp_ifs[i].addr, ip, sizeof ip);
        port = p2p_tcp_listen_on(p2p_tcp_ifs[i].addr);
        if (port < 0) {
            kumi_log(2, "p2p/tcp: cannot listen on %s (%s): %s", ip, p2p_tcp_ifs[i].name, strerror(errno));
            continue;
        }
        k = snprintf(val + off, sizeof val - off, "%s%s:%d", off ? "," : "", ip, port);
        if (k < 0 || (size_t)k >= sizeof val - off) {
            val[off] = 0;
            break;
        }
        off += (size_t)k;
    }
    if (p2p_tcp_nlis == 0)
        return p2p_tcp_init_failed(kumi_error(MPI_ERR_OTHER, "p2p/tcp: cannot listen on any chosen "
                                              "address: %s", strerror(errno)));
    rc = kumi_rpim_put("p2p.tcp.addr", val);
    if (rc != MPI_SUCCESS) return p2p_tcp_init_failed(rc);
    host = kumi_hostname();
    rc = kumi_rpim_put("p2p.tcp.host", host ? host : "");
    if (rc != MPI_SUCCESS) return p2p_tcp_init_failed(rc);
    kumi_log(2, "p2p/tcp: listening on %s", val);
    return MPI_SUCCESS;
}

static int p2p_tcp_wireup(void)
{
    const char *myhost = kumi_hostname();
    char val[KUMI_KVS_VAL_MAX], host[KUMI_KVS_VAL_MAX];
    int needed = 0;
    p2p_tcp_peers = calloc((size_t)p2p_tcp_size, sizeof *p2p_tcp_peers);
    if (!p2p_tcp_peers) return kumi_error(MPI_ERR_NO_MEM, "p2p/tcp: out of memory");
    for (int r = 0; r < p2p_tcp_size; r++) {
        struct p2p_tcp_peer *p = &p2p_tcp_peers[r];
        int same;
        p->kind = P2P_TCP_K_OUT;
        p->rank = r;
        p->fd = -1;
        p->state = P2P_TCP_OUT_NONE;
        if (kumi_rpim_get(r, "p2p.tcp.addr", val, sizeof val) != MPI_SUCCESS || !val[0])
            continue;
        if (kumi_rpim_get(r, "p2p.tcp.host", host, sizeof host) != MPI_SUCCESS) host[0] = 0;
        same = r == p2p_tcp_me || (host[0] && myhost && strcmp(host, myhost) == 0);
        p2p_tcp_parse_addrs(p, val, same);
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

static int p2p_tcp_reaches(int peer)
{
    return p2p_tcp_peers && peer >= 0 && peer < p2p_tcp_size && p2p_tcp_peers[peer].naddrs > 0;
}

static size_t p2p_tcp_eager_limit(int peer)
{
    (void)peer;
    return p2p_tcp_eager;
}

/* ------------------------------------------------------------------ */
/* outgoing connections */

static int p2p_tcp_handshaking(int state)
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

static void p2p_tcp_connect_failed(struct p2p_tcp_peer *p)
{
    p2p_tcp_out_close(p, P2P_TCP_OUT_NONE);
    p->cur++;
    p2p_tcp_connect_next(p);
}

/* Connected: send HELLO {magic, rank_c, nonce_c}, wait for the CHAL (still
 * under the connect deadline). */
static void p2p_tcp_connected(struct p2p_tcp_peer *p)
{
    unsigned char hello[P2P_TCP_HELLO_LEN];
    uint32_t magic = P2P_TCP_MAGIC_HELLO;
    int32_t me = p2p_tcp_me;
    ssize_t n;
    p->state = P2P_TCP_OUT_HELLO;
    if (p2p_tcp_nonce(p->nonce_c) != 0) {
        p2p_tcp_connect_failed(p);
        return;
    }
    memcpy(hello, &magic, 4);
    memcpy(hello + 4, &me, 4);
    memcpy(hello + 8, p->nonce_c, P2P_TCP_NONCE);
    do n = send(p->fd, hello, sizeof hello, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof hello) {     /* an empty fresh socket takes 24 bytes */
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
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int r;
        if (fd < 0) break;
        p2p_tcp_sockopts(fd);
        do r = connect(fd, (struct sockaddr *)&p->addrs[p->cur], sizeof p->addrs[p->cur]);
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

static void p2p_tcp_out_event(struct p2p_tcp_peer *p, uint32_t ev)
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
        p2p_tcp_proof("accept", p->hello + 8, p->nonce_c, p2p_tcp_me, p->rank, want);
        if (magic != P2P_TCP_MAGIC_CHAL || rank != p->rank ||
            !kumi_jobkey_equal(p->hello + 8 + P2P_TCP_NONCE, want, sizeof want)) {
            kumi_log(2, "p2p/tcp: address %d of rank %d answers for someone else", p->cur, p->rank);
            p2p_tcp_connect_failed(p);
            break;
        }
        p2p_tcp_proof("connect", p->hello + 8, p->nonce_c, p2p_tcp_me, p->rank, proof);
        do n = send(p->fd, proof, sizeof proof, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof proof) {   /* nothing else was sent yet: fits */
            p2p_tcp_connect_failed(p);
            break;
        }
        p2p_tcp_nconnecting--;
        p->state = P2P_TCP_OUT_UP;
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

static int p2p_tcp_send(int peer, struct kumi_sendop *op)
{
    struct p2p_tcp_peer *p;
    if (!p2p_tcp_reaches(peer))
        return kumi_error(MPI_ERR_OTHER, "p2p/tcp: rank %d published no TCP address", peer);
    p = &p2p_tcp_peers[peer];
    op->tnext = NULL;
    op->toff = 0;
    if (p->state == P2P_TCP_OUT_UP && !p->head) {
        struct iovec iov[2];
        struct msghdr msg;
        size_t total = sizeof op->hdr + (size_t)op->hdr.paylen;
        ssize_t n;
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

/* ------------------------------------------------------------------ */
/* incoming connections */

static void p2p_tcp_in_close(struct p2p_tcp_in *c, int lost)
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
static void p2p_tcp_expire(void)
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

static void p2p_tcp_accept(int lfd)
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
        c->kind = P2P_TCP_K_IN;
        c->fd = fd;
        c->peer = -1;
        c->deadline = kumi_time() + p2p_tcp_auth_timeout;
        c->next = p2p_tcp_ins;
        if (c->next) c->next->prev = c;
        p2p_tcp_ins = c;
        p2p_tcp_npending++;
        p2p_tcp_ep_add(fd, EPOLLIN, c);
        if (p2p_tcp_next_expiry == 0) p2p_tcp_arm(c->deadline);
    }
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

/* Set when an RTS carrying a large first fragment has been announced: progress()
 * returns before reading the fragment, so that the request layer sends its
 * CTS at once and the handshake overlaps the fragment's transfer (no latency
 * step at the eager limit).  The socket stays readable: epoll is level-triggered. */
static int p2p_tcp_yield;

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

/* Returns 1 if anything happened; may free c. */
static int p2p_tcp_in_event(struct p2p_tcp_in *c)
{
    size_t budget = P2P_TCP_READ_BUDGET;
    int did = 0;

    if (c->peer < 0) {                   /* HELLO, then (after our CHAL) PROOF */
        unsigned char want[KUMI_JOBKEY_MAC];
        uint32_t magic = P2P_TCP_MAGIC_HELLO;
        int32_t rank;
        ssize_t n;
        size_t upto = c->hellooff < P2P_TCP_HELLO_LEN ? P2P_TCP_HELLO_LEN : P2P_TCP_HSBUF;
        do n = recv(c->fd, c->hello + c->hellooff, upto - c->hellooff, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (n <= 0) {
            p2p_tcp_in_close(c, 0);
            return 1;
        }
        c->hellooff += (size_t)n;
        /* a stranger is known by its first bytes: no need to wait for more */
        if (memcmp(c->hello, &magic, c->hellooff < 4 ? c->hellooff : 4) != 0) {
            kumi_log(2, "p2p/tcp: dropped a connection that is not from this job");
            p2p_tcp_refused++;
            p2p_tcp_in_close(c, 0);
            return 1;
        }
        if (c->hellooff < upto) return 1;
        memcpy(&rank, c->hello + 4, 4);
        if (rank < 0 || rank >= p2p_tcp_size) {
            kumi_log(2, "p2p/tcp: dropped a connection that is not from this job");
            p2p_tcp_refused++;
            p2p_tcp_in_close(c, 0);
            return 1;
        }
        if (upto == P2P_TCP_HELLO_LEN) { /* answer CHAL {magic, me, nonce_a, proof_a} */
            unsigned char chal[P2P_TCP_CHAL_LEN];
            int32_t me = p2p_tcp_me;
            magic = P2P_TCP_MAGIC_CHAL;
            memcpy(chal, &magic, 4);
            memcpy(chal + 4, &me, 4);
            memcpy(chal + 8, c->nonce_a, P2P_TCP_NONCE);
            p2p_tcp_proof("accept", c->nonce_a, c->hello + 8, rank, me, chal + 8 + P2P_TCP_NONCE);
            do n = send(c->fd, chal, sizeof chal, MSG_NOSIGNAL | MSG_DONTWAIT);
            while (n < 0 && errno == EINTR);
            if (n != (ssize_t)sizeof chal) {   /* nothing else was sent yet: fits */
                p2p_tcp_in_close(c, 0);
                return 1;
            }
            return 1;
        }
        p2p_tcp_proof("connect", c->nonce_a, c->hello + 8, rank, p2p_tcp_me, want);
        if (!kumi_jobkey_equal(c->hello + P2P_TCP_HELLO_LEN, want, sizeof want)) {
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
        c->peer = rank;
        p2p_tcp_npending--;
        kumi_log(3, "p2p/tcp: accepted connection from rank %d", rank);
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

/* ------------------------------------------------------------------ */
/* progress, poll, busy, finalize */

static void p2p_tcp_check_timeouts(void)
{
    double now = kumi_time();
    for (int r = 0; r < p2p_tcp_size && p2p_tcp_nconnecting > 0; r++) {
        struct p2p_tcp_peer *p = &p2p_tcp_peers[r];
        if (p2p_tcp_handshaking(p->state) && now > p->deadline) {
            kumi_log(2, "p2p/tcp: connect to rank %d address %d timed out", r, p->cur);
            p2p_tcp_connect_failed(p);
        }
    }
}

static int p2p_tcp_progress(void)
{
    struct epoll_event ev[P2P_TCP_MAXEV];
    int n, did = 0;
    if (p2p_tcp_epfd < 0 || p2p_tcp_in_progress) return 0;
    p2p_tcp_in_progress = 1;
    n = epoll_wait(p2p_tcp_epfd, ev, P2P_TCP_MAXEV, 0);
    p2p_tcp_yield = 0;
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
        for (int r = 0; r < p2p_tcp_size; r++) {
            struct p2p_tcp_peer *p = &p2p_tcp_peers[r];
            if (p->fd >= 0) close(p->fd);
            free(p->addrs);
        }
        free(p2p_tcp_peers);
        p2p_tcp_peers = NULL;
    }
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
    .init = p2p_tcp_init,
    .wireup = p2p_tcp_wireup,
    .reaches = p2p_tcp_reaches,
    .eager_limit = p2p_tcp_eager_limit,
    .send = p2p_tcp_send,
    .progress = p2p_tcp_progress,
    .pollfds = p2p_tcp_pollfds,
    .busy = p2p_tcp_busy,
    .finalize = p2p_tcp_finalize,
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
