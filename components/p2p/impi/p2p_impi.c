/* p2p/impi: the IMPI (Interoperable MPI 0.0) packet protocol between the
 * hosts of different IMPI clients (issue 19 item 3; facts: PROTOCOL.md, the
 * "sheet"; the client side of the start-up: tools/mpiexec/impi.c).
 *
 * Available only in a rank started by `mpiexec --impi-client K`: mpiexec
 * did the start-up exchange with the server and left the server's replies
 * in the file KUMI_INTERNAL_IMPI_JOB and this rank's listening socket in
 * KUMI_INTERNAL_IMPI_FDS (kumi/rpim.h).  Every Kumi rank is its own IMPI
 * host (one proc per host, a configuration the protocol allows); the peers
 * of other clients may have hosts of several procs.  reaches() is true for
 * exactly the ranks of other clients: inside a client the ranks keep
 * self / shmem / tcp / ofi (those find no address of another client's
 * ranks in the key-value exchange).
 *
 * Set-up: init() reads the job tables (kumi_impi_job_add of each reply:
 * the same tables every client builds, sheet §1.10); wireup() does the
 * connection dance (sheet §2) with every host of the other clients: to a
 * lower-ranked host we connect and send our global host rank (4 bytes,
 * big-endian), from a higher-ranked one we accept and read its rank (and
 * check it is a host we expect).  Connections between hosts of the same
 * client are not made (they would carry nothing; no other implementation
 * takes part in them).  Bounded by p2p_impi_dance_timeout; the listener is
 * closed afterwards.
 *
 * Packets: p2p_impi_io.c.  Payloads are external32 (the request layer
 * converts: KUMI_P2P_CAP_EXTERNAL32; p2p_impi_external32_copy forces the
 * copy even for bytes).  Finalize: FINI to every host after everything
 * queued, then the connection closes once the peer's FINI came (bounded by
 * p2p_impi_fini_timeout).  A connection that ends without FINI, a write
 * error or a protocol error ends this process with a message naming the
 * host, its client and ranks (exit 1: mpiexec stops the client's job, and
 * closing the server connection tells the server to end the others). */
#include "p2p_impi.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <kumi/rpim.h>

struct kumi_impi_job p2p_impi_job;
int p2p_impi_me = -1, p2p_impi_myclient = -1, p2p_impi_myhost = -1;
struct p2p_impi_host *p2p_impi_hosts;
struct p2p_impi_peer *p2p_impi_peers;
struct p2p_impi_lrecv *p2p_impi_lrecvs;
struct p2p_impi_lsend *p2p_impi_lsends;
size_t p2p_impi_nqueued;
size_t p2p_impi_stat_pk_out, p2p_impi_stat_pk_in, p2p_impi_stat_acks_out, p2p_impi_stat_acks_in, p2p_impi_stat_stalls;
bool p2p_impi_finalizing;

static int listen_fd = -1;
static bool in_progress;
static double dance_timeout, fini_timeout;
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
    kumi_param_register_double("p2p", "impi", "dance_timeout", 60.0,
                               "IMPI: seconds MPI_Init waits for the connections to the other clients' hosts",
                               KUMI_LEVEL_USER, &dance_timeout);
    kumi_param_register_double("p2p", "impi", "fini_timeout", 60.0,
                               "IMPI: seconds MPI_Finalize waits for the FINI of every other client's host",
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
    int last = h->first + h->nprocs - 1;
    char ranks[48];
    snprintf(ranks, sizeof ranks, h->nprocs > 1 ? "ranks %d-%d" : "rank %d", h->first, last);
    fprintf(stderr, "p2p/impi: rank %d: IMPI host %d (%s of IMPI client %d): %s; the job cannot go on\n",
            p2p_impi_me, h->index, ranks, h->client, why);
    fflush(stderr);
    fflush(stdout);
    _exit(1);
}

/* ------------------------------------------------------------ init */
static int load_job(void)
{
    const char *path = getenv(KUMI_ENV_IMPI_JOB);
    FILE *f = fopen(path, "rb");
    char err[320];
    uint8_t h[12];
    if (!f) return kumi_error(MPI_ERR_OTHER, "p2p/impi: cannot read the IMPI job file %s: %s", path, strerror(errno));
    int rc = MPI_SUCCESS, n = 0;
    memset(&p2p_impi_job, 0, sizeof p2p_impi_job);
    if (fread(h, 1, 12, f) != 12 || kumi_impi_get32(h) != 0x4b494d50u) {
        fclose(f);
        return kumi_error(MPI_ERR_OTHER, "p2p/impi: %s is not an IMPI job file of mpiexec", path);
    }
    p2p_impi_myclient = (int)kumi_impi_get32(h + 4);
    p2p_impi_job.nclients = (int)kumi_impi_get32(h + 8);
    while (rc == MPI_SUCCESS && fread(h, 1, 12, f) == 12) {
        uint32_t label = kumi_impi_get32(h), mask = kumi_impi_get32(h + 4), len = kumi_impi_get32(h + 8);
        uint8_t *d = malloc(len ? len : 1);
        if (!d || fread(d, 1, len, f) != len)
            rc = kumi_error(MPI_ERR_OTHER, "p2p/impi: %s is truncated", path);
        else if (kumi_impi_job_add(&p2p_impi_job, label, mask, d, len, err, sizeof err) != 0)
            rc = kumi_error(MPI_ERR_OTHER, "p2p/impi: %s: %s", path, err);
        free(d);
        n++;
    }
    fclose(f);
    if (rc == MPI_SUCCESS && kumi_impi_job_finish(&p2p_impi_job, err, sizeof err) != 0)
        rc = kumi_error(MPI_ERR_OTHER, "p2p/impi: %s: %s", path, err);
    return rc;
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
    if (p2p_impi_myhost < 0 || kumi_impi_job_host_client(j, p2p_impi_myhost) != p2p_impi_myclient ||
        j->hosts[p2p_impi_myhost].nprocs != 1)
        return kumi_error(MPI_ERR_OTHER, "p2p/impi: rank %d is not a host of one proc of IMPI client %d",
                          p2p_impi_me, p2p_impi_myclient);
    /* my listener: entry (my rank in this launch) of the list */
    const char *fds = getenv(KUMI_ENV_IMPI_FDS);
    int local = p2p_impi_me - j->first_proc_of_client[p2p_impi_myclient];
    for (int i = 0; fds && i < local; i++) {
        fds = strchr(fds, ',');
        if (fds) fds++;
    }
    listen_fd = fds ? atoi(fds) : -1;
    if (listen_fd < 0 || fcntl(listen_fd, F_GETFD) < 0)
        return kumi_error(MPI_ERR_OTHER, "p2p/impi: rank %d has no IMPI listening socket (%s=%s)", p2p_impi_me,
                          KUMI_ENV_IMPI_FDS, getenv(KUMI_ENV_IMPI_FDS) ? getenv(KUMI_ENV_IMPI_FDS) : "");
    fcntl(listen_fd, F_SETFD, FD_CLOEXEC);
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
    kumi_p2p_external32_copy(ext32_copy);
    kumi_log(2, "p2p/impi: rank %d is IMPI host %d of client %d (%d clients, %d hosts, %d procs; packets of %d "
             "bytes, ackmark %u, hiwater %u)", p2p_impi_me, p2p_impi_myhost, p2p_impi_myclient, j->nclients,
             j->nhosts, j->nprocs, j->pk_maxlen, j->ackmark, j->hiwater);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ the dance */
static void sockopts(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Wait for fd to be ready (events) until deadline: 1 ready, 0 timed out. */
static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - kumi_time();
        if (left <= 0) return 0;
        struct pollfd p = { .fd = fd, .events = events };
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r > 0) return 1;
        if (r < 0 && errno != EINTR) return 0;
    }
}

static int connect_host(struct p2p_impi_host *x, double deadline)
{
    const struct kumi_impi_host *hh = &p2p_impi_job.hosts[x->index];
    uint8_t addr[16];
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof ss);
    int fam = kumi_impi_hostid_get(hh->id, addr);
    if (fam == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)hh->port);
        memcpy(&a->sin_addr, addr, 4);
        sl = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)hh->port);
        memcpy(&a->sin6_addr, addr, 16);
        sl = sizeof *a;
    }
    char astr[64] = "?";
    inet_ntop(fam, addr, astr, sizeof astr);
    int err = 0;
    while (kumi_time() < deadline) {
        int fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) return kumi_error(MPI_ERR_OTHER, "p2p/impi: socket: %s", strerror(errno));
        int r = connect(fd, (struct sockaddr *)&ss, sl);
        if (r < 0 && errno == EINPROGRESS) {
            socklen_t el = sizeof err;
            r = wait_fd(fd, POLLOUT, deadline) && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && !err ? 0 : -1;
        } else if (r < 0) {
            err = errno;
        }
        if (r == 0) {
            uint8_t me[4];
            kumi_impi_put32(me, (uint32_t)p2p_impi_myhost);         /* sheet §2: my host rank, 32 bits */
            if (send(fd, me, 4, MSG_NOSIGNAL) == 4) {
                sockopts(fd);
                x->fd = fd;
                return MPI_SUCCESS;
            }
            err = errno;
        }
        close(fd);
        usleep(20000);                                   /* refused: its listener may not exist yet */
    }
    return kumi_error(MPI_ERR_OTHER, "p2p/impi: rank %d could not connect to IMPI host %d (client %d) at %s:%d "
                      "within %g s: %s", p2p_impi_me, x->index, x->client, astr, hh->port, dance_timeout,
                      err ? strerror(err) : "timed out");
}

static int accept_hosts(int want, double deadline)
{
    while (want > 0) {
        if (!wait_fd(listen_fd, POLLIN, deadline)) {
            char missing[256] = "";
            size_t l = 0;
            for (int h = p2p_impi_myhost + 1; h < p2p_impi_job.nhosts && l + 16 < sizeof missing; h++)
                if (p2p_impi_hosts[h].client != p2p_impi_myclient && p2p_impi_hosts[h].fd < 0)
                    l += (size_t)snprintf(missing + l, sizeof missing - l, "%s%d", l ? ", " : "", h);
            return kumi_error(MPI_ERR_OTHER, "p2p/impi: rank %d waited %g s for the connections of IMPI hosts %s",
                              p2p_impi_me, dance_timeout, missing);
        }
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        uint8_t b[4];
        size_t got = 0;
        while (got < 4 && wait_fd(fd, POLLIN, deadline)) {
            ssize_t r = recv(fd, b + got, 4 - got, MSG_DONTWAIT);
            if (r <= 0 && !(r < 0 && (errno == EINTR || errno == EAGAIN))) break;
            if (r > 0) got += (size_t)r;
        }
        uint32_t h = kumi_impi_get32(b);
        if (got < 4 || h <= (uint32_t)p2p_impi_myhost || h >= (uint32_t)p2p_impi_job.nhosts ||
            p2p_impi_hosts[h].client == p2p_impi_myclient || p2p_impi_hosts[h].fd >= 0) {
            kumi_warn("p2p/impi: rank %d: a connection that %s; closed", p2p_impi_me,
                      got < 4 ? "sent no host rank" : "names a host that should not connect here");
            close(fd);
            continue;
        }
        sockopts(fd);
        p2p_impi_hosts[h].fd = fd;
        want--;
    }
    return MPI_SUCCESS;
}

static int p2p_impi_wireup(void)
{
    double deadline = kumi_time() + dance_timeout;
    int want = 0, rc = MPI_SUCCESS;
    for (int h = 0; h < p2p_impi_job.nhosts && rc == MPI_SUCCESS; h++) {
        struct p2p_impi_host *x = &p2p_impi_hosts[h];
        if (x->client == p2p_impi_myclient) continue;
        if (h < p2p_impi_myhost) rc = connect_host(x, deadline);     /* the higher rank connects */
        else want++;
    }
    if (rc == MPI_SUCCESS) rc = accept_hosts(want, deadline);
    close(listen_fd);                                     /* sheet §2: closed after the dance */
    listen_fd = -1;
    if (rc != MPI_SUCCESS) return rc;
    for (int h = 0; h < p2p_impi_job.nhosts; h++)
        if (p2p_impi_hosts[h].fd >= 0)
            for (int p = p2p_impi_hosts[h].first; p < p2p_impi_hosts[h].first + p2p_impi_hosts[h].nprocs; p++)
                kumi_p2p_socket_opened(p, p2p_impi_hosts[h].fd);     /* pacing may pace it */
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ ops */
static int p2p_impi_reaches(int peer)
{
    struct p2p_impi_host *h = peer >= 0 && peer < p2p_impi_job.nprocs ? p2p_impi_host_of(peer) : NULL;
    return h && h->client != p2p_impi_myclient && h->fd >= 0;
}

static size_t p2p_impi_eager_limit(int peer)
{
    (void)peer;
    return (size_t)p2p_impi_job.pk_maxlen;
}

static int p2p_impi_progress(void)
{
    int did = 0;
    if (in_progress || !p2p_impi_hosts) return 0;
    in_progress = true;
    for (int h = 0; h < p2p_impi_job.nhosts; h++) {
        struct p2p_impi_host *x = &p2p_impi_hosts[h];
        if (x->fd < 0) continue;
        if (p2p_impi_host_read(x) > 0) did = 1;
        if (x->qhead && p2p_impi_host_write(x) > 0) did = 1;
    }
    in_progress = false;
    return did;
}

static int p2p_impi_pollfds(struct pollfd *fds, int max)
{
    int n = 0;
    if (!p2p_impi_hosts || max == 0) return 0;
    for (int h = 0; h < p2p_impi_job.nhosts; h++) {
        struct p2p_impi_host *x = &p2p_impi_hosts[h];
        if (x->fd < 0) continue;
        if (n == max) return KUMI_P2P_NAP;
        fds[n].fd = x->fd;
        fds[n].events = POLLIN;
        /* a queue stalled on flow control waits for a PROTOACK (POLLIN) */
        if (x->qhead && (x->qhead->started || x->qhead->dest < 0 ||
                         p2p_impi_peers[x->qhead->dest].sent < p2p_impi_job.hiwater))
            fds[n].events |= POLLOUT;
        fds[n].revents = 0;
        n++;
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
    p2p_impi_finalizing = true;
    for (int h = 0; h < p2p_impi_job.nhosts; h++)
        if (p2p_impi_hosts[h].fd >= 0) p2p_impi_queue_fini(&p2p_impi_hosts[h]);
    double deadline = kumi_time() + fini_timeout;
    for (;;) {
        struct pollfd pf[64];
        int n = 0, open = 0;
        for (int h = 0; h < p2p_impi_job.nhosts; h++) {
            struct p2p_impi_host *x = &p2p_impi_hosts[h];
            if (x->fd < 0) continue;
            if (x->qhead) p2p_impi_host_write(x);
            if (!x->qhead && (x->fini_recv || x->eof)) {     /* both FINIs: close (sheet §6.1) */
                close(x->fd);
                x->fd = -1;
                continue;
            }
            open++;
            if (n < 64) {
                pf[n].fd = x->fd;
                pf[n].events = (short)(POLLIN | (x->qhead ? POLLOUT : 0));
                pf[n++].revents = 0;
            }
        }
        if (!open) break;
        if (kumi_time() > deadline) {
            kumi_log(1, "p2p/impi: rank %d: %d IMPI hosts sent no FINI within %g s; closing", p2p_impi_me, open,
                     fini_timeout);
            break;
        }
        poll(pf, (nfds_t)n, 100);
        for (int h = 0; h < p2p_impi_job.nhosts; h++)
            if (p2p_impi_hosts[h].fd >= 0 && !p2p_impi_hosts[h].fini_recv) p2p_impi_host_read(&p2p_impi_hosts[h]);
    }
    kumi_log(2, "p2p/impi: rank %d: %zu packets out, %zu in, PROTOACKs %zu out %zu in, %zu flow-control stalls",
             p2p_impi_me, p2p_impi_stat_pk_out, p2p_impi_stat_pk_in, p2p_impi_stat_acks_out, p2p_impi_stat_acks_in,
             p2p_impi_stat_stalls);
    for (int h = 0; h < p2p_impi_job.nhosts; h++) {
        struct p2p_impi_host *x = &p2p_impi_hosts[h];
        if (x->fd >= 0) close(x->fd);
        while (x->qhead) {
            struct p2p_impi_opkt *o = x->qhead;
            x->qhead = o->next;
            free(o);
        }
        free(x->ibuf);
    }
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
    snprintf(buf, len, "IMPI host %d of client %d (%s:%d)", h->index, h->client, s, p2p_impi_job.hosts[h->index].port);
    return 0;
}

static int p2p_impi_peer_sockets(int peer, int *fds, int max)
{
    struct p2p_impi_host *h = p2p_impi_host_of(peer);
    if (!h || h->fd < 0 || max < 1) return 0;
    fds[0] = h->fd;
    return 1;
}

static int p2p_impi_peer_sockaddr(int peer, struct sockaddr_storage *sa)
{
    struct p2p_impi_host *h = p2p_impi_host_of(peer);
    if (!h) return -1;
    socklen_t l = sizeof *sa;
    if (h->fd < 0 || getpeername(h->fd, (struct sockaddr *)sa, &l) != 0) return -1;
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
