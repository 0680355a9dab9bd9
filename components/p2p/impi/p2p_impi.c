/* p2p/impi: the IMPI (Interoperable MPI 0.0) packet protocol between the
 * hosts of different IMPI clients (issue 19 item 3; facts: PROTOCOL.md, the
 * "sheet"; the client side of the start-up and the host agent:
 * tools/mpiexec/impi.c).
 *
 * Available only in a rank started by `mpiexec --impi-client K`.  One
 * launch is one IMPI client of ONE IMPI host holding all its procs (sheet
 * §1.1: C_NHOSTS 1, H_NPROCS N, as LAM's impid and HP-MPI's daemon: "all
 * messages going out of a host go through the daemon"): mpiexec is that
 * host's agent.  It did the start-up exchange with the server (its replies
 * are in the file KUMI_INTERNAL_IMPI_JOB) and the connection dance with
 * every other host (one TCP connection per pair of hosts, sheet §2).  The
 * ranks share those connections (KUMI_INTERNAL_IMPI_HOSTS): each rank writes
 * its own packets to the connection of the destination's host, a whole
 * packet (128-byte header + payload) under that host's process-shared mutex
 * so the packets of several ranks never mix; what comes in, the agent reads
 * and relays by pk_dest to the rank's stream socket (KUMI_INTERNAL_IMPI_FDS,
 * entry = the rank in this launch), which also carries the rank's FINI to
 * the agent.  The host's only proc (a launch of one rank) reads the
 * connections itself and does the host's FINI (no relay at all).  So
 * everything per proc pair (the request ids, SYNCACK,
 * CANCEL, flow control with ackmark / hiwater and PROTOACK) is done here, in
 * the rank, end to end; the agent does what is per host (the dance, FINI to
 * every host once every rank flushed its packets and sent its FINI).
 * reaches() is true for exactly the ranks of other clients: inside a client
 * the ranks keep self / shmem / tcp / ofi.
 *
 * init() reads the job tables (kumi_impi_job_add of each reply: the same
 * tables every client builds, sheet §1.10) and takes the agreed values:
 * IMPI_Pk_maxlen (eager limit and packet size), ackmark / hiwater, and
 * IMPI_Tag_ub as MPI_TAG_UB (kumi_set_tag_ub).  Payloads are external32
 * (the request layer converts: KUMI_P2P_CAP_EXTERNAL32;
 * p2p_impi_external32_copy forces the copy even for bytes).  Finalize:
 * FINI to the agent after everything queued (the agent's end of this rank's
 * traffic).  The agent's channel ending without our FINI, a write error or
 * a protocol error ends this process with a message (exit 1: mpiexec stops
 * the client's job, and closing the server connection tells the server to
 * end the others). */
#include "p2p_impi.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <kumi/rpim.h>

struct kumi_impi_job p2p_impi_job;
int p2p_impi_me = -1, p2p_impi_myclient = -1, p2p_impi_myhost = -1;
struct p2p_impi_host *p2p_impi_hosts;
struct p2p_impi_host p2p_impi_chan = { .fd = -1, .index = -1, .client = -1 };
struct p2p_impi_peer *p2p_impi_peers;
struct p2p_impi_lrecv *p2p_impi_lrecvs;
struct p2p_impi_lsend *p2p_impi_lsends;
size_t p2p_impi_nqueued;
size_t p2p_impi_stat_pk_out, p2p_impi_stat_pk_in, p2p_impi_stat_acks_out, p2p_impi_stat_acks_in, p2p_impi_stat_stalls;
bool p2p_impi_finalizing;

static bool in_progress;
static bool own_hosts;          /* the host's only proc: it reads its connections itself and does FINI */
static double fini_timeout, dance_timeout;      /* dance_timeout: mpiexec's (documented here) */
static long long param_tagub;                   /* mpiexec's (documented here) */
static double relay_spin;                       /* mpiexec's (documented here) */
static int host_per_rank;                       /* mpiexec's (documented here) */
static int ext32_copy;
static size_t param_datalen, param_ackmark, param_hiwater;

static void p2p_impi_register(void)
{
    kumi_param_register_size("p2p", "impi", "datalen", 65536,
                             "IMPI: the most data bytes per packet this client announces (C_DATALEN; the job "
                             "uses the minimum over the clients: messages up to it go eagerly, longer ones by "
                             "rendezvous).  Read by mpiexec --impi-client", KUMI_LEVEL_TUNER, &param_datalen);
    kumi_param_register_size("p2p", "impi", "ackmark", 10,
                             "IMPI: packets read from a proc before a PROTOACK goes back (H_ACKMARK; the job "
                             "uses the minimum over the hosts).  Read by mpiexec --impi-client",
                             KUMI_LEVEL_TUNER, &param_ackmark);
    kumi_param_register_size("p2p", "impi", "hiwater", 20,
                             "IMPI: unacknowledged packets a proc may have sent to another (H_HIWATER; the "
                             "job uses the minimum over the hosts).  Read by mpiexec --impi-client",
                             KUMI_LEVEL_TUNER, &param_hiwater);
    kumi_param_register_int("p2p", "impi", "tagub", 2147483647,
                            "IMPI: the largest tag this client announces (C_TAGUB, 32767 .. 2^31-1; the job's "
                            "MPI_TAG_UB is the minimum over the clients).  Read by mpiexec --impi-client",
                            KUMI_LEVEL_TUNER, &param_tagub);
    kumi_param_register_double("p2p", "impi", "dance_timeout", 60.0,
                               "IMPI: seconds mpiexec (the IMPI host's agent) waits for the connections to the "
                               "other clients' hosts.  Read by mpiexec --impi-client", KUMI_LEVEL_USER, &dance_timeout);
    kumi_param_register_double("p2p", "impi", "relay_spin", 0.0,
                               "IMPI: seconds mpiexec (the IMPI host's agent, which relays every packet between "
                               "its ranks and the other hosts) keeps polling without sleeping after it relayed a "
                               "packet: less latency on a machine with a core to spare, 0 = sleep at once.  Read "
                               "by mpiexec --impi-client", KUMI_LEVEL_TUNER, &relay_spin);
    kumi_param_register_bool("p2p", "impi", "host_per_rank", 0,
                             "IMPI: every rank of the launch is an IMPI host of its own (C_NHOSTS = the "
                             "launch's ranks, one connection per rank and other host), reading and writing "
                             "its connections itself: no relay through mpiexec (less latency), more "
                             "connections.  0: one host per launch, its connections shared by the ranks, "
                             "mpiexec relaying what comes in.  Read by mpiexec --impi-client",
                             KUMI_LEVEL_TUNER, &host_per_rank);
    kumi_param_register_double("p2p", "impi", "fini_timeout", 60.0,
                               "IMPI: seconds MPI_Finalize waits for its packets to reach this host's agent, and "
                               "the agent (mpiexec) for the FINI of every other host",
                               KUMI_LEVEL_USER, &fini_timeout);
    kumi_param_register_bool("p2p", "impi", "external32_copy", 0,
                             "IMPI: convert through a copy even data whose external32 form is its native form "
                             "(bytes, chars), as for any other type (for tests of that path)",
                             KUMI_LEVEL_DEV, &ext32_copy);
}

static int p2p_impi_open(char *why, size_t whylen)
{
    if (!getenv(KUMI_ENV_IMPI_JOB)) {
        snprintf(why, whylen, "not a rank of an IMPI client (mpiexec --impi-client K --impi-server HOST:PORT)");
        return KUMI_UNAVAILABLE;
    }
    return KUMI_OK;
}

void p2p_impi_host_failed(struct p2p_impi_host *h, const char *why)
{
    if (h != &p2p_impi_chan) {
        int last = h->first + h->nprocs - 1;
        char ranks[48];
        snprintf(ranks, sizeof ranks, h->nprocs > 1 ? "ranks %d-%d" : "rank %d", h->first, last);
        fprintf(stderr, "p2p/impi: rank %d: IMPI host %d (%s of IMPI client %d): %s; the job cannot go on\n",
                p2p_impi_me, h->index, ranks, h->client, why);
        fflush(stderr);
        fflush(stdout);
        _exit(1);
    }
    fprintf(stderr, "p2p/impi: rank %d: the channel to this launch's IMPI host (mpiexec, host %d of IMPI client "
            "%d): %s; the job cannot go on\n", p2p_impi_me, p2p_impi_myhost, p2p_impi_myclient, why);
    fflush(stderr);
    fflush(stdout);
    _exit(1);
}

/* ------------------------------------------------------------ init */
static int load_job(void)
{
    const char *path = getenv(KUMI_ENV_IMPI_JOB);
    char err[400];
    if (kumi_impi_job_read(path, &p2p_impi_job, &p2p_impi_myclient, err, sizeof err) != 0)
        return kumi_error(MPI_ERR_OTHER, "p2p/impi: %s", err);
    return MPI_SUCCESS;
}

static int p2p_impi_init(void)
{
    int rc = load_job();
    if (rc != MPI_SUCCESS) return rc;
    struct kumi_impi_job *j = &p2p_impi_job;
    p2p_impi_me = kumi_world_rank();
    if (j->nprocs != kumi_world_size() || p2p_impi_myclient < 0 || p2p_impi_myclient >= j->nclients)
        return kumi_error(MPI_ERR_OTHER, "p2p/impi: the IMPI job has %d procs, MPI_COMM_WORLD %d", j->nprocs,
                          kumi_world_size());
    p2p_impi_myhost = kumi_impi_job_proc_host(j, p2p_impi_me);
    if (p2p_impi_myhost < 0 || kumi_impi_job_host_client(j, p2p_impi_myhost) != p2p_impi_myclient)
        return kumi_error(MPI_ERR_OTHER, "p2p/impi: rank %d is not a proc of IMPI client %d", p2p_impi_me,
                          p2p_impi_myclient);
    /* my channel to the agent: entry (my rank in this launch) of the list */
    const char *fds = getenv(KUMI_ENV_IMPI_FDS);
    int local = p2p_impi_me - j->first_proc_of_client[p2p_impi_myclient];
    for (int i = 0; fds && i < local; i++) {
        fds = strchr(fds, ',');
        if (fds) fds++;
    }
    int cfd = fds ? atoi(fds) : -1;
    if (cfd < 0 || fcntl(cfd, F_GETFD) < 0)
        return kumi_error(MPI_ERR_OTHER, "p2p/impi: rank %d has no channel to its IMPI host (%s=%s)", p2p_impi_me,
                          KUMI_ENV_IMPI_FDS, getenv(KUMI_ENV_IMPI_FDS) ? getenv(KUMI_ENV_IMPI_FDS) : "");
    fcntl(cfd, F_SETFD, FD_CLOEXEC);
    fcntl(cfd, F_SETFL, fcntl(cfd, F_GETFL) | O_NONBLOCK);
    p2p_impi_hosts = calloc((size_t)j->nhosts, sizeof *p2p_impi_hosts);
    p2p_impi_peers = calloc((size_t)j->nprocs, sizeof *p2p_impi_peers);
    if (!p2p_impi_hosts || !p2p_impi_peers) return kumi_error(MPI_ERR_NO_MEM, "p2p/impi: out of memory");
    for (int h = 0; h < j->nhosts; h++) {
        struct p2p_impi_host *x = &p2p_impi_hosts[h];
        x->fd = -1;
        x->index = h;
        x->client = kumi_impi_job_host_client(j, h);
        x->first = j->host_first_proc[h];
        x->nprocs = j->hosts[h].nprocs;
    }
    /* the host's connections, written here directly (a whole packet under the host's lock) */
    const char *hs = getenv(KUMI_ENV_IMPI_HOSTS);
    if (hs && *hs) {
        char *end;
        long lockfd = strtol(hs, &end, 10);
        size_t sz = (size_t)j->nhosts * sizeof(pthread_mutex_t);
        void *locks = *end == ':' && lockfd >= 0
                      ? mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, (int)lockfd, 0) : MAP_FAILED;
        if (locks == MAP_FAILED)
            return kumi_error(MPI_ERR_OTHER, "p2p/impi: rank %d cannot map the IMPI host's locks (%s=%s)",
                              p2p_impi_me, KUMI_ENV_IMPI_HOSTS, hs);
        close((int)lockfd);
        /* p2p_impi_host_per_rank (mpiexec's): one list per launch rank, ';' between */
        const char *q = end + 1;
        if (strchr(q, ';'))
            for (int i = 0; q && i < local; i++) {
                q = strchr(q, ';');
                if (q) q++;
            }
        if (!q) q = "";
        for (; *q && *q != ';';) {
            long h = strtol(q, &end, 10), fd = *end == '=' ? strtol(end + 1, &end, 10) : -1;
            if (h < 0 || h >= j->nhosts || fd < 0 || fcntl((int)fd, F_GETFD) < 0)
                return kumi_error(MPI_ERR_OTHER, "p2p/impi: rank %d: a bad entry in %s=%s", p2p_impi_me,
                                  KUMI_ENV_IMPI_HOSTS, hs);
            fcntl((int)fd, F_SETFD, FD_CLOEXEC);
            p2p_impi_hosts[h].fd = (int)fd;
            p2p_impi_hosts[h].lock = (pthread_mutex_t *)locks + h;
            q = *end == ',' ? end + 1 : end;
        }
        own_hosts = j->hosts[p2p_impi_myhost].nprocs == 1;
    }
    memset(&p2p_impi_chan, 0, sizeof p2p_impi_chan);
    p2p_impi_chan.fd = cfd;
    p2p_impi_chan.index = p2p_impi_myhost;
    p2p_impi_chan.client = p2p_impi_myclient;
    p2p_impi_chan.first = j->host_first_proc[p2p_impi_myhost];
    p2p_impi_chan.nprocs = j->hosts[p2p_impi_myhost].nprocs;
    kumi_set_tag_ub(j->tag_ub);                          /* MPI_TAG_UB = the agreed IMPI_Tag_ub */
    kumi_p2p_external32_copy(ext32_copy);
    kumi_log(2, "p2p/impi: rank %d is a proc of IMPI host %d of client %d (%d clients, %d hosts, %d procs; packets "
             "of %d bytes, ackmark %u, hiwater %u, tag_ub %d)", p2p_impi_me, p2p_impi_myhost, p2p_impi_myclient,
             j->nclients, j->nhosts, j->nprocs, j->pk_maxlen, j->ackmark, j->hiwater, j->tag_ub);
    return MPI_SUCCESS;
}

static int p2p_impi_wireup(void)
{
    return MPI_SUCCESS;              /* the agent did the dance before this rank started */
}

/* ------------------------------------------------------------ ops */
static int p2p_impi_reaches(int peer)
{
    struct p2p_impi_host *h = peer >= 0 && peer < p2p_impi_job.nprocs ? p2p_impi_host_of(peer) : NULL;
    return h && h->client != p2p_impi_myclient && p2p_impi_chan.fd >= 0;
}

static size_t p2p_impi_eager_limit(int peer)
{
    (void)peer;
    return (size_t)p2p_impi_job.pk_maxlen;
}

static int p2p_impi_progress(void)
{
    int did = 0;
    struct p2p_impi_host *x = &p2p_impi_chan;
    if (in_progress || x->fd < 0) return 0;
    in_progress = true;
    if (p2p_impi_host_read(x) > 0) did = 1;
    if (x->qhead && p2p_impi_host_write(x) > 0) did = 1;
    for (int h = 0; h < p2p_impi_job.nhosts; h++) {
        struct p2p_impi_host *y = &p2p_impi_hosts[h];
        if (own_hosts && y->fd >= 0 && p2p_impi_host_read(y) > 0) did = 1;
        if (y->qhead && p2p_impi_host_write(y) > 0) did = 1;
    }
    in_progress = false;
    return did;
}

/* POLLOUT when the head of h's queue may go (a queue stalled on flow control
 * waits for a PROTOACK, which comes on the agent's channel). */
static bool may_write(const struct p2p_impi_host *x)
{
    return x->qhead && (x->qhead->started || x->qhead->dest < 0 ||
                        p2p_impi_peers[x->qhead->dest].sent < p2p_impi_job.hiwater);
}

static int p2p_impi_pollfds(struct pollfd *fds, int max)
{
    struct p2p_impi_host *x = &p2p_impi_chan;
    int n = 0;
    if (x->fd < 0 || max == 0) return 0;
    fds[n].fd = x->fd;
    fds[n].events = (short)(POLLIN | (may_write(x) ? POLLOUT : 0));
    fds[n++].revents = 0;
    for (int h = 0; h < p2p_impi_job.nhosts; h++)
        if (p2p_impi_hosts[h].fd >= 0 && (own_hosts || may_write(&p2p_impi_hosts[h]))) {
            if (n == max) return KUMI_P2P_NAP;
            fds[n].fd = p2p_impi_hosts[h].fd;         /* written here, read by the agent (or here) */
            fds[n].events = (short)((own_hosts ? POLLIN : 0) | (may_write(&p2p_impi_hosts[h]) ? POLLOUT : 0));
            fds[n++].revents = 0;
        }
    return n;
}

static int p2p_impi_busy(void)
{
    return p2p_impi_nqueued > 0;
}

static void p2p_impi_finalize(void)
{
    if (!p2p_impi_hosts) return;
    struct p2p_impi_host *x = &p2p_impi_chan;
    p2p_impi_finalizing = true;
    double deadline = kumi_time() + fini_timeout;
    bool fini = false;
    for (;;) {                                        /* everything out, then FINI to the agent */
        int left = 0;
        for (int h = 0; h < p2p_impi_job.nhosts; h++)
            if (p2p_impi_hosts[h].qhead) {
                p2p_impi_host_write(&p2p_impi_hosts[h]);
                left += p2p_impi_hosts[h].qhead != NULL;
            }
        if (!left && !fini && x->fd >= 0) {
            p2p_impi_queue_fini(x);                   /* this rank's end of IMPI traffic */
            fini = true;
            for (int h = 0; own_hosts && h < p2p_impi_job.nhosts; h++)
                if (p2p_impi_hosts[h].fd >= 0) {      /* the host's only proc: its FINI (sheet §6.1) */
                    p2p_impi_queue_fini(&p2p_impi_hosts[h]);
                    p2p_impi_host_write(&p2p_impi_hosts[h]);
                    left += p2p_impi_hosts[h].qhead != NULL;
                }
        }
        if (x->qhead) p2p_impi_host_write(x);
        int waiting = 0;                              /* own hosts: their FINI, then close */
        for (int h = 0; own_hosts && fini && h < p2p_impi_job.nhosts; h++) {
            struct p2p_impi_host *y = &p2p_impi_hosts[h];
            if (y->fd < 0) continue;
            if (!y->fini_recv && !y->eof) p2p_impi_host_read(y);
            if (!y->qhead && (y->fini_recv || y->eof)) {
                close(y->fd);
                y->fd = -1;
            } else {
                waiting++;
            }
        }
        if (x->fd < 0 || (fini && !x->qhead && !waiting)) break;
        if (kumi_time() > deadline) {
            kumi_log(1, "p2p/impi: rank %d: %zu packets did not reach this host's agent within %g s", p2p_impi_me,
                     p2p_impi_nqueued, fini_timeout);
            break;
        }
        struct pollfd pf = { .fd = x->fd, .events = POLLIN | (x->qhead ? POLLOUT : 0) };
        poll(&pf, 1, left || own_hosts ? 5 : 100);
        if (pf.revents & POLLIN) p2p_impi_host_read(x);   /* PROTOACKs that let the rest go */
        for (int h = 0; own_hosts && !fini && h < p2p_impi_job.nhosts; h++)
            if (p2p_impi_hosts[h].fd >= 0) p2p_impi_host_read(&p2p_impi_hosts[h]);
    }
    kumi_log(2, "p2p/impi: rank %d: %zu packets out, %zu in, PROTOACKs %zu out %zu in, %zu flow-control stalls",
             p2p_impi_me, p2p_impi_stat_pk_out, p2p_impi_stat_pk_in, p2p_impi_stat_acks_out, p2p_impi_stat_acks_in,
             p2p_impi_stat_stalls);
    if (x->fd >= 0) close(x->fd);
    x->fd = -1;
    while (x->qhead) {
        struct p2p_impi_opkt *o = x->qhead;
        x->qhead = o->next;
        free(o);
    }
    x->qtail = NULL;
    for (int h = 0; h < p2p_impi_job.nhosts; h++) {
        struct p2p_impi_host *y = &p2p_impi_hosts[h];
        if (y->fd >= 0) close(y->fd);
        while (y->qhead) {
            struct p2p_impi_opkt *o = y->qhead;
            y->qhead = o->next;
            free(o);
        }
    }
    for (int h = 0; h < p2p_impi_job.nhosts; h++)
        if (p2p_impi_hosts[h].lock) {
            munmap(p2p_impi_hosts[h].lock - h, (size_t)p2p_impi_job.nhosts * sizeof(pthread_mutex_t));
            break;
        }
    free(x->ibuf);
    x->ibuf = NULL;
    while (p2p_impi_lrecvs) {
        struct p2p_impi_lrecv *l = p2p_impi_lrecvs;
        p2p_impi_lrecvs = l->next;
        free(l);
    }
    while (p2p_impi_lsends) {
        struct p2p_impi_lsend *l = p2p_impi_lsends;
        p2p_impi_lsends = l->next;
        free(l);
    }
    free(p2p_impi_hosts);
    free(p2p_impi_peers);
    p2p_impi_hosts = NULL;
    p2p_impi_peers = NULL;
    p2p_impi_nqueued = 0;
    kumi_impi_job_free(&p2p_impi_job);
    kumi_p2p_external32_copy(0);
    kumi_set_tag_ub(0);
    own_hosts = false;
    p2p_impi_finalizing = false;
}

static int p2p_impi_describe(int peer, char *buf, size_t len)
{
    struct p2p_impi_host *h = p2p_impi_host_of(peer);
    if (!h) return -1;
    uint8_t a[16];
    char s[64] = "?";
    int fam = kumi_impi_hostid_get(p2p_impi_job.hosts[h->index].id, a);
    inet_ntop(fam, a, s, sizeof s);
    snprintf(buf, len, "IMPI host %d of client %d (%s:%d) %s", h->index, h->client, s,
             p2p_impi_job.hosts[h->index].port, own_hosts ? "directly (this host's only proc)"
                                                          : "through this host's agent");
    return 0;
}

/* For pacing (p2p contract 1.4): the connection of this launch's IMPI host
 * to peer's host, which this rank writes its packets to.  It is shared by
 * every rank of the launch (KUMI_INTERNAL_IMPI_HOSTS lists it; pacing/sockrate
 * sets its rate once for all of them). */
static int p2p_impi_peer_sockets(int peer, int *fds, int max)
{
    struct p2p_impi_host *h = peer >= 0 && peer < p2p_impi_job.nprocs ? p2p_impi_host_of(peer) : NULL;
    if (!h || h->client == p2p_impi_myclient || h->fd < 0 || max < 1) return 0;
    fds[0] = h->fd;
    return 1;
}

/* The address peer's IMPI host listens on (its host id and port). */
static int p2p_impi_peer_sockaddr(int peer, struct sockaddr_storage *sa)
{
    struct p2p_impi_host *h = peer >= 0 && peer < p2p_impi_job.nprocs ? p2p_impi_host_of(peer) : NULL;
    if (!h || h->client == p2p_impi_myclient) return -1;
    uint8_t a[16];
    int fam = kumi_impi_hostid_get(p2p_impi_job.hosts[h->index].id, a);
    memset(sa, 0, sizeof *sa);
    if (fam == AF_INET) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
        s4->sin_family = AF_INET;
        memcpy(&s4->sin_addr, a, 4);
        s4->sin_port = htons((uint16_t)p2p_impi_job.hosts[h->index].port);
    } else {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
        s6->sin6_family = AF_INET6;
        memcpy(&s6->sin6_addr, a, 16);
        s6->sin6_port = htons((uint16_t)p2p_impi_job.hosts[h->index].port);
    }
    return 0;
}

static const struct kumi_p2p_ops p2p_impi_ops = {
    .hdr = KUMI_P2P_OPS_HDR,
    .caps = KUMI_P2P_CAP_EXTERNAL32 | KUMI_P2P_CAP_NOBUDGET,
    .init = p2p_impi_init,
    .wireup = p2p_impi_wireup,
    .reaches = p2p_impi_reaches,
    .eager_limit = p2p_impi_eager_limit,
    .send = p2p_impi_send,
    .progress = p2p_impi_progress,
    .pollfds = p2p_impi_pollfds,
    .busy = p2p_impi_busy,
    .finalize = p2p_impi_finalize,
    .describe = p2p_impi_describe,
    .peer_sockets = p2p_impi_peer_sockets,
    .peer_sockaddr = p2p_impi_peer_sockaddr,
};

KUMI_EXPORT const struct kumi_component kumi_p2p_impi_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "p2p", .name = "impi",
    .version = { 0, 1, 0 },
    .description = "IMPI 0.0 packet protocol to the ranks of other IMPI clients (mpiexec --impi-client)",
    .priority = 5,
    .register_params = p2p_impi_register,
    .open = p2p_impi_open, .close = NULL,
    .ops = &p2p_impi_ops,
};
