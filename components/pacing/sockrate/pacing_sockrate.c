/* pacing/sockrate: during all-to-all patterns, cap the sending rate of each
 * rank over a wide-area link at
 *     link bandwidth x share / (ranks of this cluster in the communicator)
 * with SO_MAX_PACING_RATE (TCP's own pacing honours it without the fq
 * qdisc), so that the cluster's senders together fill the bottleneck
 * without overrunning its queue (GridMPI's idea: an all-to-all over a
 * shared link otherwise loses packets and waits for retransmissions).
 * GridMPI paced a process at its interface, i.e. all its connections
 * together; a socket option paces one connection, so pacing_sockrate_divide
 * says how a rank's rate is split among its sockets across the link.  The
 * algorithms differ: coll/tuned's linear all-to-all (p <= 4 or blocks <=
 * 8 KiB; alltoallv/w p <= 16) and coll/impi's Alltoall(v) post every send
 * at once; coll/tuned's pairwise (larger) and Bruck (blocks <= 256 B) go
 * one peer per round, but a round's send completes once its bytes are in
 * the socket's buffer, so several sockets still drain at once; coll/lact's
 * aggregated all-to-all sends from host leaders only.
 *   sockets: each socket gets the rank's rate / its peers across, fixed:
 *     the rank never sends more than its rate in all, whatever the
 *     algorithm (all at once: exactly its rate; fewer at once: less: a
 *     pairwise all-to-all of 4 + 4 ranks ran 1.6x slower than unpaced);
 *   senders: each socket gets the rank's whole rate (right for one peer at
 *     a time only; all at once, a rank sends peers-across times its share:
 *     the 226-373 drops issue 19 measured at 5-10 ms);
 *   auto (default): the rank's rate / the peers across it sends to at
 *     once, as the coll component that runs the call says (kumi/coll.h
 *     pace_hint, coll contract 1.2, given to enter_hint: coll/tuned's real
 *     choice, a forced algorithm included: linear all, pairwise and Bruck
 *     one); without a hint senders where coll/tuned's default goes
 *     pairwise (one_at_a_time()), sockets elsewhere (shared IMPI
 *     connections: always the sockets rule, the launch's share);
 *   dynamic: among the sockets taking part, as seen every
 *     pacing_sockrate_poll_ms from the progress engine during the call
 *     (rebalance()): follows any algorithm, but a socket that starts between
 *     two checks waits for the next one, and a rank that does not run (a
 *     loaded machine) checks late: it dropped more than "sockets" and was
 *     slower than "senders" on a pairwise exchange in the lab.
 * A hint may also name the ranks that send across at all (coll/lact's
 * aggregated all-to-all: the host leaders): in every mode, only they count
 * as this cluster's senders and as peers across, and the other ranks pace
 * nothing (before, every rank counted: the leaders' sockets got a fraction
 * of the share while the others' carried nothing).
 * After the collective, each socket gets its previous rate back once its
 * send queue is empty (SIOCOUTQ == 0): checked from the progress engine
 * without blocking, at the next paced call, and unconditionally at
 * MPI_Finalize.
 *
 * Which peer is across a wide-area link: the address the peer's transport
 * connects to (p2p contract 1.4, kumi_p2p_peer_sockaddr) is matched against
 * the clusters, either
 *   - pacing_sockrate_remote = list of networks (the kumi/netif.h list form,
 *     e.g. "198.18.2.0/24"): two clusters, the addresses in the list and the
 *     others; or
 *   - the topology file of coll/lact (pacing_sockrate_topology, or when
 *     empty coll_lact_topology's environment variable): `cluster NAME
 *     PATTERN...` lines (network patterns only: host-name globs mean nothing
 *     to an address) and `link NAME1 NAME2 LATENCY_US BANDWIDTH_MBPS`, the
 *     bandwidth in MB/s as coll/lact reads it.
 * This process's own cluster: the first of its interface addresses that a
 * cluster matches.  A peer reached without sockets (shmem, self) or over
 * loopback is in this process's cluster.  pacing_sockrate_bandwidth (MB/s,
 * > 0) overrides the link's bandwidth.
 *
 * Shared sockets (an IMPI client's launch, mpiexec --impi-client: its ranks
 * write their packets to the launch's IMPI host connections, one per other
 * IMPI host, listed in KUMI_INTERNAL_IMPI_HOSTS): such a socket carries the
 * traffic of every rank of the launch, so its rate is the share of all the
 * communicator's ranks of the launch, m x the share of one (senders: link x
 * share x m / ranks of this cluster; sockets: x the peers it reaches /
 * this rank's peers across), and it is set and restored by one of them
 * only, the launch's lowest world rank in the communicator (the others
 * leave it alone: two processes reading and writing one socket's rate would
 * race).  Its rate outside the paced calls is "unlimited" (mpiexec never
 * paces those connections), so that is what it gets back, once no rank of
 * the launch is in a paced call on it any more: every rank of the launch in
 * the communicator counts itself in the connection's shared count
 * (struct kumi_impi_pacing, KUMI_INTERNAL_IMPI_PACING) when the call starts
 * and out when the call is over and the connection's queue has drained, and
 * the rank that brings the count to zero restores the rate, under the
 * count's lock (before, the lowest rank restored when its own call was
 * over, which could lift the rate another communicator's paced call had
 * just set: issue 19's "late restore").  Without that memfd (an mpiexec of
 * old): the lowest rank alone, as before. */
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/p2p.h>
#include <kumi/pacing.h>
#include <kumi/netif.h>
#include <kumi/rpim.h>
#include <kumi/impi.h>

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <netinet/in.h>

#ifndef SO_MAX_PACING_RATE
#define SO_MAX_PACING_RATE 47
#endif

#define SR_MAXCL 32
#define SR_FDS 4

static int sr_enable;
static long long sr_verbose;
static const char *sr_topology, *sr_remote, *sr_colls, *sr_divide;
enum { SR_SENDERS, SR_SOCKETS, SR_AUTO, SR_DYNAMIC };
static int sr_mode;                 /* pacing_sockrate_divide */
#define sr_per_socket (sr_mode != SR_SENDERS)   /* the rate set when a call starts */
static double sr_bandwidth, sr_share, sr_poll_ms, sr_min_latency;

static void sr_register(void)
{
    kumi_param_register_bool("pacing", "sockrate", "enable", 1,
                             "Pace the sockets that cross a wide-area link during the collectives of "
                             "pacing_sockrate_colls (0: off)", KUMI_LEVEL_USER, &sr_enable);
    kumi_param_register_string("pacing", "sockrate", "colls", "alltoall,alltoallv",
                               "Blocking collectives to pace, comma-separated (names as in "
                               "MPI_Alltoall -> alltoall: alltoall, alltoallv, alltoallw, "
                               "allgather, allgatherv, gather, scatter, bcast, ...; \"all\": every one)",
                               KUMI_LEVEL_USER, &sr_colls);
    kumi_param_register_string("pacing", "sockrate", "topology", "",
                               "Topology file (coll/lact's form: `cluster NAME NETWORK...`, `link "
                               "NAME1 NAME2 LATENCY_US BANDWIDTH_MBPS` with MB/s); empty: the file "
                               "KUMI_COLL_LACT_TOPOLOGY names", KUMI_LEVEL_USER, &sr_topology);
    kumi_param_register_string("pacing", "sockrate", "remote", "",
                               "Networks of the other cluster (e.g. \"198.18.2.0/24,fd00:2::/64\"): "
                               "peers whose address is in the list and those whose address is not "
                               "are in different clusters (instead of the topology file's clusters)",
                               KUMI_LEVEL_USER, &sr_remote);
    kumi_param_register_double("pacing", "sockrate", "bandwidth", 0.0,
                               "Bandwidth (MB/s) of the wide-area link; > 0 overrides the topology "
                               "file's link (needed with pacing_sockrate_remote)",
                               KUMI_LEVEL_USER, &sr_bandwidth);
    kumi_param_register_double("pacing", "sockrate", "share", 0.95,
                               "Fraction of the link bandwidth the cluster's senders share "
                               "(headers and acknowledgements take the rest)", KUMI_LEVEL_TUNER, &sr_share);
    kumi_param_register_string("pacing", "sockrate", "divide", "auto",
                               "How a rank's rate over a link (link / this cluster's ranks in the "
                               "communicator that send across: GridMPI's per-process rate) is split among "
                               "its sockets across it: \"sockets\": / its peers across, on each (never more "
                               "than the rank's rate in all); \"senders\": the whole rate on each (right "
                               "for one peer at a time only); \"auto\": / the peers the coll component "
                               "says it sends to at once (its pace hint: coll/tuned's real algorithm, "
                               "coll/lact's host leaders), without a hint senders where coll/tuned's "
                               "default goes pairwise (alltoall p > 4, alltoallv/w p > 16), else sockets; "
                               "\"dynamic\": shared among the sockets that send, seen every "
                               "pacing_sockrate_poll_ms",
                               KUMI_LEVEL_USER, &sr_divide);
    kumi_param_register_double("pacing", "sockrate", "min_latency_us", 1000.0,
                               "Links of the topology file with a latency below this (microseconds) "
                               "are not paced: TCP recovers from a loss within a round trip there, "
                               "and pacing only slows it (pacing_sockrate_remote's link: always paced)",
                               KUMI_LEVEL_TUNER, &sr_min_latency);
    kumi_param_register_double("pacing", "sockrate", "poll_ms", 1.0,
                               "Least time (ms) between two send-queue checks of sockets whose rate "
                               "waits to be restored", KUMI_LEVEL_TUNER, &sr_poll_ms);
    kumi_param_register_int("pacing", "sockrate", "verbose", 0,
                            "1: print each rate set and restored (as read back with getsockopt) on "
                            "stderr, prefix \"pacing/sockrate[rank]: \"", KUMI_LEVEL_DEV,
                            &sr_verbose);
}

/* ------------------------------------------------------------ configuration */
struct sr_cluster {
    char name[64];
    char *nets;                 /* comma-separated networks (kumi_netif_match's list form) */
};
static struct sr_cluster cl[SR_MAXCL];
static int ncl;
static double linkbw[SR_MAXCL][SR_MAXCL];   /* MB/s; 0: no link known */
static double linklat[SR_MAXCL][SR_MAXCL];  /* microseconds; -1: not known */
static int remote_mode;
static char cfgsrc[300];

static void sr_config_free(void)
{
    for (int i = 0; i < ncl; i++) free(cl[i].nets);
    memset(cl, 0, sizeof cl);
    memset(linkbw, 0, sizeof linkbw);
    for (int a = 0; a < SR_MAXCL; a++)
        for (int b = 0; b < SR_MAXCL; b++) linklat[a][b] = -1;
    ncl = 0;
    remote_mode = 0;
}

static int cl_find(const char *name)
{
    for (int i = 0; i < ncl; i++)
        if (!strcmp(cl[i].name, name)) return i;
    return -1;
}

static int cl_add(const char *name)
{
    int i = cl_find(name);
    if (i >= 0 || ncl >= SR_MAXCL) return i;
    snprintf(cl[ncl].name, sizeof cl[ncl].name, "%s", name);
    cl[ncl].nets = NULL;
    return ncl++;
}

static int is_network(const char *s)
{
    if (!*s) return 0;
    for (const char *p = s; *p; p++)
        if (!isxdigit((unsigned char)*p) && !strchr(".:/", *p)) return 0;
    return strchr(s, '.') || strchr(s, ':');
}

static int add_net(int c, const char *net)
{
    size_t old = cl[c].nets ? strlen(cl[c].nets) : 0;
    char *n = realloc(cl[c].nets, old + strlen(net) + 2);
    if (!n) return -1;
    if (old) n[old++] = ',';
    strcpy(n + old, net);
    cl[c].nets = n;
    return 0;
}

#define CERR(...) do { snprintf(why, whylen, __VA_ARGS__); goto out; } while (0)

static int read_topology(const char *path, char *why, size_t whylen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, whylen, "topology file %s: %s", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int lineno = 0, rc = -1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *h = strchr(line, '#');
        if (h) *h = 0;
        char *tok[64], *save = NULL;
        int n = 0;
        for (char *t = strtok_r(line, " \t\r\n", &save); t && n < 64; t = strtok_r(NULL, " \t\r\n", &save))
            tok[n++] = t;
        if (n == 0) continue;
        if (!strcmp(tok[0], "cluster")) {
            if (n < 2) CERR("%s:%d: expected `cluster NAME PATTERN...`", path, lineno);
            int c = cl_add(tok[1]);
            if (c < 0) CERR("%s:%d: more than %d clusters", path, lineno, SR_MAXCL);
            for (int k = 2; k < n; k++) {
                if (!is_network(tok[k])) continue;    /* a host-name glob: not an address */
                char err[200];
                if (kumi_netif_check_list(tok[k], err, sizeof err) != 0)
                    CERR("%s:%d: %s", path, lineno, err);
                if (add_net(c, tok[k]) != 0) CERR("out of memory");
            }
        } else if (!strcmp(tok[0], "link")) {
            char *end;
            if (n != 5) CERR("%s:%d: expected `link NAME1 NAME2 LATENCY_US BANDWIDTH_MBPS`", path, lineno);
            double bw = strtod(tok[4], &end);
            if (*end || !(bw > 0)) CERR("%s:%d: bandwidth '%s' is not a positive number", path, lineno, tok[4]);
            double lat = strtod(tok[3], &end);
            if (*end || !(lat >= 0)) CERR("%s:%d: latency '%s' is not a number >= 0", path, lineno, tok[3]);
            int a = cl_add(tok[1]), b = cl_add(tok[2]);
            if (a < 0 || b < 0) CERR("%s:%d: more than %d clusters", path, lineno, SR_MAXCL);
            linkbw[a][b] = linkbw[b][a] = bw;
            linklat[a][b] = linklat[b][a] = lat;
        }   /* node, net and anything else: coll/lact's business */
    }
    rc = 0;
out:
    fclose(f);
    return rc;
}

/* Parse the parameters into clusters and links: 0, or -1 with why set. */
static int sr_config(char *why, size_t whylen)
{
    sr_config_free();
    if (!sr_enable) {
        snprintf(why, whylen, "disabled (pacing_sockrate_enable=0)");
        return -1;
    }
    static const char *const modes[] = { "senders", "sockets", "auto", "dynamic" };
    sr_mode = -1;
    for (int k = 0; k < 4; k++)
        if (sr_divide && !strcmp(sr_divide, modes[k])) sr_mode = k;
    if (sr_mode < 0) {
        snprintf(why, whylen, "pacing_sockrate_divide='%s' is none of auto, sockets, senders, dynamic",
                 sr_divide ? sr_divide : "");
        return -1;
    }
    if (!(sr_share > 0 && sr_share <= 1)) {
        snprintf(why, whylen, "pacing_sockrate_share=%g is not in (0, 1]", sr_share);
        return -1;
    }
    if (sr_remote && *sr_remote) {
        char err[200];
        if (kumi_netif_check_list(sr_remote, err, sizeof err) != 0) {
            snprintf(why, whylen, "pacing_sockrate_remote: %s", err);
            return -1;
        }
        if (!(sr_bandwidth > 0)) {
            snprintf(why, whylen, "pacing_sockrate_remote is set but pacing_sockrate_bandwidth is not");
            return -1;
        }
        remote_mode = 1;
        cl_add("local");
        cl_add("remote");
        add_net(1, sr_remote);
        snprintf(cfgsrc, sizeof cfgsrc, "remote networks %s", sr_remote);
        return 0;
    }
    const char *topo = sr_topology && *sr_topology ? sr_topology : getenv("KUMI_COLL_LACT_TOPOLOGY");
    if (!topo || !*topo) {
        snprintf(why, whylen, "no wide-area link known (set pacing_sockrate_topology or coll_lact_topology, "
                 "or pacing_sockrate_remote and pacing_sockrate_bandwidth)");
        return -1;
    }
    if (read_topology(topo, why, whylen) != 0) return -1;
    int nlinks = 0, nnets = 0;
    for (int a = 0; a < ncl; a++) {
        if (cl[a].nets) nnets++;
        for (int b = a + 1; b < ncl; b++) nlinks += linkbw[a][b] > 0;
    }
    if (!nnets) {
        snprintf(why, whylen, "%s: no cluster is given by networks (pacing needs `cluster NAME a.b.c.d/n`)", topo);
        return -1;
    }
    if (!nlinks && !(sr_bandwidth > 0)) {
        snprintf(why, whylen, "%s: no `link` line and pacing_sockrate_bandwidth unset", topo);
        return -1;
    }
    snprintf(cfgsrc, sizeof cfgsrc, "topology %s", topo);
    return 0;
}

/* Cluster of an address: index, or -1 when no cluster names it. */
static int cl_of_addr(const struct sockaddr *sa)
{
    struct kumi_netif f;
    memset(&f, 0, sizeof f);
    f.family = sa->sa_family;
    if (sa->sa_family == AF_INET) f.addr.in4 = *(const struct sockaddr_in *)sa;
    else if (sa->sa_family == AF_INET6) f.addr.in6 = *(const struct sockaddr_in6 *)sa;
    else return -1;
    for (int i = 0; i < ncl; i++)
        if (cl[i].nets && kumi_netif_match(&f, cl[i].nets, NULL, 0) == 1) return i;
    return remote_mode ? 0 : -1;
}

static int is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return 0;
}

/* This host's cluster: the first interface address a cluster names. */
static int my_cluster(void)
{
    struct kumi_netif ifs[KUMI_NETIF_MAX];
    int n = kumi_netif_scan(ifs, KUMI_NETIF_MAX);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            if (ifs[i].loopback || !ifs[i].up) continue;
            for (int c = 0; c < ncl; c++)
                if (cl[c].nets && kumi_netif_match(&ifs[i], cl[c].nets, NULL, 0) == 1) {
                    if (pass == 0 && remote_mode && c == 0) continue;   /* prefer a positive match */
                    return c;
                }
            if (pass == 1 && remote_mode) return 0;
        }
    return -1;
}

/* The bandwidth to pace a link at (MB/s); 0: not paced. */
static double link_of(int a, int b)
{
    if (a >= 0 && b >= 0 && linklat[a][b] >= 0 && linklat[a][b] < sr_min_latency) return 0;
    if (sr_bandwidth > 0) return sr_bandwidth;
    return (a >= 0 && b >= 0) ? linkbw[a][b] : 0;
}

static int coll_listed(const char *coll)
{
    const char *s = sr_colls ? sr_colls : "";
    size_t n = strlen(coll);
    while (*s) {
        while (*s == ',' || *s == ' ') s++;
        const char *e = s;
        while (*e && *e != ',' && *e != ' ') e++;
        if ((size_t)(e - s) == 3 && !strncmp(s, "all", 3)) return 1;
        if ((size_t)(e - s) == n && !strncmp(s, coll, n)) return 1;
        s = e;
    }
    return 0;
}

/* ------------------------------------------------------------ state */
struct sr_sock {
    int peer, fd;
    uint64_t old;                /* the rate before the first paced call */
    int restoring;               /* the call is over: restore once drained */
    unsigned gen;                /* the call that last set its rate */
    int held;                    /* a shared connection: counted in its kumi_impi_pacing */
    int dyn;                     /* divide=dynamic: its rate follows how many sockets send (rebalance) */
    int cl;                      /* dyn: the cluster it leads to */
    uint64_t cur;                /* dyn: the rate set last */
    double idle;                 /* dyn: since when it has had nothing unsent (0: sending) */
    int seen;                    /* dyn: seen with bytes unsent during this call */
};
static struct sr_sock *socks;
static int nsocks, capsocks;
static int *wcl;                 /* [world] cluster of each rank (-1 unknown) */
static int mycl = -1, me, nworld;
static uint64_t *target;         /* [world] rate during the current call (0: not paced) */
static int active;
static double next_poll;
static unsigned gen;             /* paced calls so far */
static double agg[SR_MAXCL];     /* divide=dynamic: this rank's rate to cluster c in all (B/s) */
static double hold[SR_MAXCL];    /*   how long (s) a socket there must be idle to be done */
static int aggn[SR_MAXCL];       /*   and its peers there (a done socket's rate: agg / aggn) */
static int *shfd;                /* the launch's shared IMPI host connections */
static int *shhost;              /* [nshfd] the IMPI host each leads to */
static int nshfd;
static struct kumi_impi_pacing *shpace;   /* [shpace_n] by IMPI host (KUMI_INTERNAL_IMPI_PACING) */
static int shpace_n;

/* The launch's count of paced calls on shared connection fd, or NULL. */
static struct kumi_impi_pacing *pace_of(int fd)
{
    for (int i = 0; shpace && i < nshfd; i++)
        if (shfd[i] == fd) return shhost[i] >= 0 && shhost[i] < shpace_n ? &shpace[shhost[i]] : NULL;
    return NULL;
}

static void pace_lock(struct kumi_impi_pacing *p)
{
    if (pthread_mutex_lock(&p->lock) == EOWNERDEAD) pthread_mutex_consistent(&p->lock);
}

static int shared_fd(int fd)
{
    for (int i = 0; i < nshfd; i++)
        if (shfd[i] == fd) return 1;
    return 0;
}

/* The fds of KUMI_INTERNAL_IMPI_HOSTS ("LOCKFD:H=FD,H=FD,..."). */
static void read_shared(void)
{
    const char *hs = getenv(KUMI_ENV_IMPI_HOSTS), *q = hs ? strchr(hs, ':') : NULL;
    nshfd = 0;
    if (q && strchr(q, ';')) return;   /* p2p_impi_host_per_rank: each rank's connections are its own */
    for (; q && *q;) {
        q++;
        const char *eq = strchr(q, '=');
        if (!eq) break;
        int *n = realloc(shfd, sizeof *n * (size_t)(nshfd + 1)), *h = NULL;
        if (n) shfd = n;
        if (n && (h = realloc(shhost, sizeof *h * (size_t)(nshfd + 1)))) shhost = h;
        if (!h) break;
        shhost[nshfd] = atoi(q);
        shfd[nshfd++] = atoi(eq + 1);
        q = strchr(eq, ',');
    }
    /* the launch's counts ("FD:NHOSTS"); mapped once, the descriptor closed */
    const char *pe = getenv(KUMI_ENV_IMPI_PACING);
    if (nshfd && pe && !shpace) {
        int fd = atoi(pe), nh = strchr(pe, ':') ? atoi(strchr(pe, ':') + 1) : 0;
        if (fd >= 0 && nh > 0) {
            void *m = mmap(NULL, (size_t)nh * sizeof *shpace, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (m != MAP_FAILED) {
                shpace = m;
                shpace_n = nh;
            }
            close(fd);
        }
    }
}

static uint64_t get_rate(int fd)
{
    union { uint64_t u64; uint32_t u32; } v = { 0 };
    socklen_t l = sizeof v.u64;
    if (getsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &v, &l) != 0) return 0;
    if (l == sizeof v.u32) return v.u32 == UINT32_MAX ? UINT64_MAX : v.u32;   /* an older kernel */
    return v.u64;
}

static int set_rate(int fd, uint64_t v)
{
    return setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &v, sizeof v);
}

static const char *rate_str(uint64_t v, char *buf, size_t len)
{
    if (v == UINT64_MAX || v == (uint64_t)UINT32_MAX) snprintf(buf, len, "unlimited");
    else snprintf(buf, len, "%llu", (unsigned long long)v);
    return buf;
}

/* set: this process sets the rate (0: a shared connection whose rate the
 * launch's lowest rank sets; this one only counts itself in) */
static int pace(int peer, int fd, uint64_t rate, const char *coll, int set)
{
    int i;
    for (i = 0; i < nsocks; i++)
        if (socks[i].fd == fd) break;
    if (i < nsocks && socks[i].gen == gen && !socks[i].restoring && shared_fd(fd)) return -1;  /* set already */
    if (i == nsocks) {
        if (nsocks == capsocks) {
            int nc = capsocks ? 2 * capsocks : 16;
            struct sr_sock *n = realloc(socks, sizeof *n * (size_t)nc);
            if (!n) return -1;
            socks = n;
            capsocks = nc;
        }
        socks[i].peer = peer;
        socks[i].fd = fd;
        socks[i].old = shared_fd(fd) ? UINT64_MAX : get_rate(fd);
        socks[i].held = 0;
        nsocks++;
    }
    socks[i].restoring = 0;
    socks[i].gen = gen;
    socks[i].dyn = 0;
    struct kumi_impi_pacing *p = pace_of(fd);
    int r = 0;
    if (p) {
        pace_lock(p);
        if (!socks[i].held) {
            p->inflight++;
            socks[i].held = 1;
        }
    }
    if (set) r = set_rate(fd, rate);
    if (p) pthread_mutex_unlock(&p->lock);
    if (!set) return -1;
    if (r != 0) {
        kumi_log(1, "pacing/sockrate: SO_MAX_PACING_RATE on the socket to rank %d: %s", peer, strerror(errno));
        return -1;
    }
    if (sr_verbose) {
        char a[32], b[32];
        fprintf(stderr, "pacing/sockrate[%d]: %s: rank %d fd %d rate %s B/s (was %s)%s\n", me, coll, peer, fd,
                rate_str(get_rate(fd), a, sizeof a), rate_str(socks[i].old, b, sizeof b),
                shared_fd(fd) ? " shared by the launch's ranks" : "");
    }
    return i;
}

/* divide=dynamic: socket i (own, not shared) leads to cluster c and starts at
 * rate; from now on its rate follows rebalance(). */
static void make_dyn(int i, int c, uint64_t rate)
{
    if (i < 0 || sr_mode != SR_DYNAMIC || c < 0 || c >= SR_MAXCL || !(agg[c] > 0)) return;
    socks[i].dyn = 1;
    socks[i].cl = c;
    socks[i].cur = rate;
    socks[i].idle = kumi_time();     /* in the call until it sent and drained, or stayed idle hold[c] */
    socks[i].seen = 0;
}

/* divide=dynamic, during a paced call: this rank's rate to each cluster
 * (agg[c]) is shared among its sockets there that take part: those with
 * bytes not yet sent (SIOCOUTQNSD; bytes sent and not yet acknowledged do
 * not count), and those never seen so in this call that have been idle for
 * less than hold[c] (two round trips of the link: a rendezvous message
 * waits a round trip for its clear-to-send, and a linear all-to-all's
 * sockets all wait so at the start).  A socket seen sending that drained,
 * or idle for longer, is done with this call (a pairwise exchange's earlier
 * peers, an all-to-all's shorter blocks: each peer gets one message, whose
 * bytes the transport writes as the socket takes them) and leaves its part
 * to the others: it keeps a quarter of one peer's part, agg / (4 x peers),
 * and the sockets taking part share the rest, so that the rank never sends
 * more than agg in all, whatever starts between two checks (the next peer
 * of a pairwise exchange, a clear-to-send that came late: it sends slowly
 * until the next check counts it in).  All at once (a linear all-to-all):
 * every socket gets agg / peers, as "sockets", then more as others finish;
 * one peer at a time (pairwise, Bruck): the one sending gets nearly agg,
 * as "senders", once the others are done. */
static void rebalance(void)
{
    int nb[SR_MAXCL] = { 0 }, nd[SR_MAXCL] = { 0 };
    double now = kumi_time();
    for (int i = 0; i < nsocks; i++) {
        struct sr_sock *s = &socks[i];
        if (!s->dyn || s->gen != gen || s->restoring) continue;
        int q = 1;
        if (ioctl(s->fd, SIOCOUTQNSD, &q) != 0) q = 1;   /* unknown: counted as sending */
        if (q > 0) s->idle = 0, s->seen = 1;
        else if (s->idle == 0) s->idle = now;
        s->dyn = s->idle == 0 || (!s->seen && now - s->idle < hold[s->cl]) ? 2 : 1;
        nb[s->cl] += s->dyn == 2;
        nd[s->cl] += s->dyn == 1;
    }
    for (int i = 0; i < nsocks; i++) {
        struct sr_sock *s = &socks[i];
        if (!s->dyn || s->gen != gen || s->restoring) continue;
        double done = agg[s->cl] / (4.0 * aggn[s->cl]);
        uint64_t r = (uint64_t)(s->dyn == 1 ? done : (agg[s->cl] - nd[s->cl] * done) / nb[s->cl]);
        if (r < 1) r = 1;
        if (r == s->cur) continue;
        if (set_rate(s->fd, r) != 0) continue;
        s->cur = r;
        if (sr_verbose >= 2)
            fprintf(stderr, "pacing/sockrate[%d]: dynamic: rank %d fd %d rate %llu B/s (%d of the rank's sockets to "
                    "cluster %s sending%s)\n", me, s->peer, s->fd, (unsigned long long)r, nb[s->cl], cl[s->cl].name,
                    s->dyn == 2 ? "" : "; this one done");
    }
}

/* Is fd still the socket to peer (the transport may have closed it)? */
static int still_open(int peer, int fd)
{
    int fds[SR_FDS];
    int n = kumi_p2p_peer_sockets(peer, fds, SR_FDS);
    for (int k = 0; k < n; k++)
        if (fds[k] == fd) return 1;
    return 0;
}

/* Restore the sockets whose call is over and whose send queue is empty
 * (all of them with force).  Returns how many wait. */
static int try_restore(int force)
{
    int k = 0;
    for (int i = 0; i < nsocks; i++) {
        struct sr_sock *s = &socks[i];
        if (!s->restoring && !force) { socks[k++] = *s; continue; }
        int q = 0;
        struct kumi_impi_pacing *p = still_open(s->peer, s->fd) ? pace_of(s->fd) : NULL;
        if (!still_open(s->peer, s->fd)) continue;           /* closed: nothing to restore */
        if (!force && ioctl(s->fd, SIOCOUTQ, &q) == 0 && q > 0) { socks[k++] = *s; continue; }
        int others = 0;
        if (p) {                 /* a shared connection: the last of the launch's paced calls restores */
            pace_lock(p);
            if (s->held && p->inflight > 0) p->inflight--;
            s->held = 0;
            others = p->inflight;
            if (!others) set_rate(s->fd, s->old);
            pthread_mutex_unlock(&p->lock);
        } else {
            set_rate(s->fd, s->old);
        }
        if (others) {
            if (sr_verbose)
                fprintf(stderr, "pacing/sockrate[%d]: rank %d fd %d stays paced: %d other paced call%s of the "
                        "launch on it\n", me, s->peer, s->fd, others, others == 1 ? "" : "s");
            continue;
        }
        if (sr_verbose) {
            char a[32];
            fprintf(stderr, "pacing/sockrate[%d]: restored rank %d fd %d rate %s (queue %d%s)\n", me, s->peer,
                    s->fd, rate_str(get_rate(s->fd), a, sizeof a), q, force ? ", finalize" : "");
        }
    }
    nsocks = k;
    return k;
}

/* ------------------------------------------------------------ ops */
static int sr_init(void)
{
    me = kumi_world_rank();
    nworld = kumi_world_size();
    mycl = my_cluster();
    if (mycl < 0) {
        kumi_log(1, "pacing/sockrate: no cluster names an address of this host (%s): nothing paced", cfgsrc);
        return MPI_ERR_OTHER;
    }
    read_shared();
    wcl = malloc(sizeof *wcl * (size_t)nworld);
    target = calloc((size_t)nworld, sizeof *target);
    if (!wcl || !target) return MPI_ERR_NO_MEM;
    int remote = 0;
    for (int r = 0; r < nworld; r++) {
        struct sockaddr_storage sa;
        if (r == me || kumi_p2p_peer_sockaddr(r, &sa) != 0 || is_loopback((struct sockaddr *)&sa))
            wcl[r] = mycl;
        else
            wcl[r] = cl_of_addr((struct sockaddr *)&sa);
        remote += wcl[r] >= 0 && wcl[r] != mycl;
    }
    if (sr_verbose)
        fprintf(stderr, "pacing/sockrate[%d]: cluster %s, %d of %d ranks in other clusters (%s)\n", me,
                cl[mycl].name, remote, nworld, cfgsrc);
    return MPI_SUCCESS;
}

/* divide=auto without a hint from the coll component that runs the call
 * (one of contract 1.1 or older, coll/sm, coll/basic, ...: kumi/coll.h
 * pace_hint): does the all-to-all of n ranks send to one peer at a time?
 * A guess from coll/tuned's built-in rules: MPI_Alltoall pairwise for p > 4
 * (linear for blocks <= 8 KiB and Bruck for <= 256 B: little to pace),
 * MPI_Alltoallv / _w pairwise for p > 16; otherwise linear, every send at
 * once, as coll/impi's.  With a hint (coll/tuned: its real choice, a forced
 * algorithm included; coll/lact: its aggregated all-to-all) the hint
 * decides. */
static int one_at_a_time(const char *coll, int n)
{
    if (!strcmp(coll, "alltoall")) return n > 4;
    if (!strcmp(coll, "alltoallv") || !strcmp(coll, "alltoallw")) return n > 16;
    return 0;
}

/* The peers a rank sends to at once across to a cluster of nto of the
 * call's senders, which a socket's rate divides the rank's by. */
static int peers_at_once(const char *coll, int n, const struct kumi_pace_hint *h, int nto)
{
    if (sr_mode == SR_SENDERS) return 1;
    if (sr_mode != SR_AUTO || nto <= 1) return nto > 1 ? nto : 1;
    int f = h->fanout >= 0 ? h->fanout : one_at_a_time(coll, n) ? 1 : 0;
    return f == 0 || f > nto ? nto : f;
}

static unsigned char *part;     /* [n] during sr_enter_hint: rank i of the call sends across */
static int partn;

static int sr_enter_hint(const char *coll, const int *wranks, int n, const struct kumi_pace_hint *h)
{
    if (!coll_listed(coll)) return 0;
    /* the ranks that exchange data across (the hint's senders, else all) */
    if (n > partn) {
        unsigned char *np = realloc(part, (size_t)n);
        if (!np) return 0;
        part = np;
        partn = n;
    }
    memset(part, h->nsenders < 0, (size_t)n);
    for (int i = 0; h->nsenders > 0 && i < h->nsenders; i++)
        if (h->senders[i] >= 0 && h->senders[i] < n) part[h->senders[i]] = 1;
    int nsend = 0, any = 0, nto[SR_MAXCL] = { 0 }, mine = 0;
    for (int i = 0; i < n; i++) {
        int c = wranks[i] >= 0 && wranks[i] < nworld ? wcl[wranks[i]] : -1;
        if (!part[i]) continue;
        if (wranks[i] == me) mine = 1;
        if (c == mycl) nsend++;
        else if (c >= 0) { any = 1; nto[c]++; }
    }
    if (!any || nsend == 0 || !mine) {
        if (sr_verbose > 1 && any && !mine)
            fprintf(stderr, "pacing/sockrate[%d]: %s: this rank sends nothing across (%d of %d ranks do)\n",
                    me, coll, h->nsenders, n);
        return 0;
    }
    if (sr_verbose > 1)
        fprintf(stderr, "pacing/sockrate[%d]: %s: %d senders here, fan-out %d%s\n", me, coll, nsend, h->fanout,
                h->fanout < 0 ? " (unknown: coll/tuned's default rules)" : h->fanout == 0 ? " (all at once)" : "");
    /* the launch's shared connections: m senders of this cluster write to
     * them; the lowest world rank of the launch sets their rates */
    int m = 0, lead = -1;
    if (nshfd)
        for (int i = 0; i < n; i++)
            if (part[i] && wranks[i] >= 0 && wranks[i] < nworld && wcl[wranks[i]] == mycl &&
                kumi_rpim_in_launch(wranks[i])) {
                m++;
                if (lead < 0 || wranks[i] < lead) lead = wranks[i];
            }
    gen++;
    for (int c = 0; c < SR_MAXCL; c++) {
        agg[c] = c < ncl && c != mycl && nto[c] ? link_of(mycl, c) * 1e6 * sr_share / nsend : 0;
        aggn[c] = nto[c] > 0 ? nto[c] : 1;
        /* two round trips of the link (its latency: one way); unknown: 20 ms; at least 2 polls */
        double lat = c < ncl && mycl >= 0 && linklat[mycl][c] >= 0 ? linklat[mycl][c] * 1e-6 : 0.005;
        hold[c] = 4 * lat > 2 * sr_poll_ms * 1e-3 ? 4 * lat : 2 * sr_poll_ms * 1e-3;
    }
    for (int i = 0; i < n; i++) {
        int r = wranks[i], c = wcl[r];
        if (c < 0 || c == mycl || !part[i]) continue;
        double bw = link_of(mycl, c);
        if (!(bw > 0)) continue;
        /* the rank's share, on each socket (one peer across at a time) or split among those sent to at once */
        uint64_t rate = (uint64_t)(bw * 1e6 * sr_share / nsend / peers_at_once(coll, n, h, nto[c]));
        if (rate < 1) rate = 1;
        target[r] = rate;
        int fds[SR_FDS];
        int k = kumi_p2p_peer_sockets(r, fds, SR_FDS);
        for (int j = 0; j < k; j++) {
            if (!shared_fd(fds[j])) {       /* dynamic: starts as "sockets", then rebalance() */
                make_dyn(pace(r, fds[j], rate, coll, 1), c, rate);
                continue;
            }
            if (lead != me) {            /* the lowest rank sets the rate; the others count themselves in */
                if (pace_of(fds[j])) pace(r, fds[j], 0, coll, 0);
                continue;
            }
            /* senders: m x one sender's share; sockets: m x one peer's share x the peers it reaches */
            int np = 1;
            if (sr_per_socket) {
                np = 0;
                for (int i2 = 0; i2 < n; i2++) {
                    int f2[SR_FDS], r2 = wranks[i2];
                    if (r2 < 0 || r2 >= nworld || wcl[r2] != c || !part[i2]) continue;
                    int k2 = kumi_p2p_peer_sockets(r2, f2, SR_FDS);
                    for (int j2 = 0; j2 < k2; j2++) np += f2[j2] == fds[j];
                }
                if (np < 1) np = 1;
            }
            uint64_t srate = (uint64_t)(bw * 1e6 * sr_share * m * np / nsend / (sr_per_socket ? nto[c] : 1));
            pace(r, fds[j], srate ? srate : 1, coll, 1);
        }
        if (sr_verbose && k == 0)
            fprintf(stderr, "pacing/sockrate[%d]: %s: rank %d no socket yet, rate %llu B/s when it opens\n",
                    me, coll, r, (unsigned long long)rate);
    }
    active = 1;
    next_poll = kumi_time() + sr_poll_ms * 1e-3;
    return 1;
}

static int sr_enter(const char *coll, const int *wranks, int n)
{
    static const struct kumi_pace_hint unknown = { -1, -1, NULL };
    return sr_enter_hint(coll, wranks, n, &unknown);
}

static void sr_leave(void)
{
    active = 0;
    for (int r = 0; r < nworld; r++) target[r] = 0;
    for (int i = 0; i < nsocks; i++) socks[i].restoring = 1;
    try_restore(0);
    next_poll = kumi_time() + sr_poll_ms * 1e-3;
}

static void sr_socket_opened(int peer, int fd)
{
    if (active && peer >= 0 && peer < nworld && target[peer] > 0) {
        int i = pace(peer, fd, target[peer], "opened", 1);
        if (!shared_fd(fd)) make_dyn(i, wcl[peer], target[peer]);
    }
}

static int sr_pending(void)
{
    return active ? sr_mode == SR_DYNAMIC : nsocks > 0;
}

static void sr_progress(void)
{
    double t = kumi_time();
    if (t < next_poll) return;
    next_poll = t + sr_poll_ms * 1e-3;
    if (active) rebalance();
    else try_restore(0);
}

static void sr_finalize(void)
{
    active = 0;
    try_restore(1);
    free(socks);
    socks = NULL;
    nsocks = capsocks = 0;
    free(wcl);
    wcl = NULL;
    free(target);
    target = NULL;
    free(part);
    part = NULL;
    partn = 0;
    free(shfd);
    shfd = NULL;
    free(shhost);
    shhost = NULL;
    nshfd = 0;
    if (shpace) munmap(shpace, (size_t)shpace_n * sizeof *shpace);
    shpace = NULL;
    shpace_n = 0;
}

/* ------------------------------------------------------------ component */
static int sr_open(char *why, size_t whylen)
{
    if (sr_config(why, whylen) != 0) return KUMI_UNAVAILABLE;
    if (kumi_registry_listing()) {        /* kumi_info: what it would set */
        char links[600];
        size_t l = 0;
        links[0] = 0;
        for (int a = 0; a < ncl; a++)
            for (int b = a + 1; b < ncl; b++) {
                double bw = remote_mode ? sr_bandwidth : link_of(a, b);
                if (bw > 0 && l + 80 < sizeof links)
                    l += (size_t)snprintf(links + l, sizeof links - l, "%s%s-%s %g MB/s", l ? ", " : "",
                                          cl[a].name, cl[b].name, bw);
                else if (!remote_mode && linkbw[a][b] > 0 && l + 80 < sizeof links)
                    l += (size_t)snprintf(links + l, sizeof links - l, "%s%s-%s not paced (latency %g us "
                                          "< pacing_sockrate_min_latency_us)", l ? ", " : "", cl[a].name,
                                          cl[b].name, linklat[a][b]);
            }
        int c = my_cluster();
        snprintf(why, whylen, "during %s: SO_MAX_PACING_RATE = link x %g / this cluster's ranks that "
                 "send across%s; links: %s; this host: cluster %s (%s)",
                 sr_colls, sr_share, sr_mode == SR_SOCKETS ? " / this rank's peers across on each socket across"
                 : sr_mode == SR_AUTO ? " / peers sent to at once, a socket (auto, coll's hint)"
                 : sr_mode == SR_DYNAMIC ? " for a rank, split among its sockets across that send"
                 : " on each socket across",
                 links[0] ? links : "none", c >= 0 ? cl[c].name : "none", cfgsrc);
    }
    return KUMI_OK;
}

static void sr_close(void)
{
    sr_config_free();
}

static const struct kumi_pacing_ops sr_ops = {
    .hdr = KUMI_PACING_OPS_HDR,
    .init = sr_init,
    .enter = sr_enter,
    .leave = sr_leave,
    .socket_opened = sr_socket_opened,
    .pending = sr_pending,
    .progress = sr_progress,
    .wants = coll_listed,
    .finalize = sr_finalize,
    .enter_hint = sr_enter_hint,
};

KUMI_EXPORT const struct kumi_component kumi_pacing_sockrate_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "pacing", .name = "sockrate",
    .version = { 0, 1, 0 },
    .description = "SO_MAX_PACING_RATE on wide-area sockets during all-to-all patterns",
    .priority = 10,
    .register_params = sr_register,
    .open = sr_open, .close = sr_close,
    .ops = &sr_ops,
};
