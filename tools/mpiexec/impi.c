/* mpiexec as one client of an IMPI job (issue 19 item 2) and as the agent
 * of that client's one IMPI host:
 *
 *     mpiexec -n N --impi-client K --impi-server HOST:PORT [--impi-auth KEY] prog
 *
 * In IMPI the *client* is the launcher-level agent that talks to the server
 * and the *hosts* are the agents that own the connections to other hosts
 * (PROTOCOL.md §1.1).  Here mpiexec is the client and its launch is ONE
 * host holding the N procs (as LAM's impid and HP-MPI's daemon: one host
 * per machine; an IMPI implementation that expects that grouping sees
 * C_NHOSTS 1 and H_NPROCS N).  Before any rank starts, mpiexec
 *   - connects to the server, AUTH (KEY when --impi-auth / IMPI_AUTH_KEY
 *     gives a key, else NONE), IMPI (its rank K; learns the client count);
 *   - opens the host's listening socket (the dance's H_PORT must exist
 *     before the labels, sheet §2), bound to every address, advertised with
 *     the address this machine uses to reach the server (getsockname);
 *   - sends every label (C_NHOSTS 1, C_NPROCS N, C_DATALEN, C_TAGUB, XSIZE
 *     and MAXLINEAR -1, H_* of the one host with H_NPROCS N, P_IPV6 / P_PID
 *     per rank: P_PID is mpiexec's pid * 2^20 + the rank, unique on this
 *     address), DONE;
 *   - does the connection dance (sheet §2) with every other host: to a
 *     lower-ranked host it connects and sends its global host rank (4 bytes,
 *     big-endian), from a higher-ranked one it accepts and reads its rank
 *     (which must name a host that should connect here); bounded by
 *     p2p_impi_dance_timeout; the listener is closed afterwards;
 *   - writes the server's replies to a file for the ranks (p2p/impi reads it
 *     and builds the same job tables) and gives each rank one end of a
 *     socket pair: its channel to this host's agent.
 * While the job runs the ranks write their packets to the host connections
 * themselves (inherited; KUMI_INTERNAL_IMPI_HOSTS), a whole packet under the
 * host's process-shared robust mutex (a memfd), so packets of several ranks
 * interleave whole and each rank's keep their order (all packets of a
 * message on one channel in order, sheet §3.2); mpiexec reads what comes in
 * and relays whole IMPI packets (128-byte header + pk_len bytes for DATA /
 * DATASYNC only, sheet §3.5) to the rank of pk_dest over its socket pair (a
 * packet for a rank that has ended is dropped); a packet a rank sends on its
 * socket pair goes to the host of its pk_dest (not used by p2p/impi today,
 * which sends only its FINI there).  A host of one proc needs no relay:
 * mpiexec closes its copies of the host connections once the rank started,
 * and the rank reads them and does the host's FINI itself.  Everything per proc pair (request ids,
 * SYNCACK, CANCEL, flow control) is in the ranks (p2p/impi), end to end; here
 * is what is per
 * host: the dance and FINI (sheet §6.1): once every rank sent its FINI (its
 * last packet) the host sends FINI to every other host after what it
 * queued, and closes a connection once both FINIs went; mpiexec waits for
 * them (p2p_impi_fini_timeout) before it ends.  A host connection that ends
 * without FINI, or sends a packet that is not for one of our procs, stops
 * the job with a message naming the host, its client and ranks.
 * The ranks get KUMI_INTERNAL_IMPI_WORLD=FIRST:SIZE (their MPI_COMM_WORLD
 * ranks are FIRST + launch rank, of SIZE over every client in client order),
 * KUMI_INTERNAL_IMPI_JOB (the file) and KUMI_INTERNAL_IMPI_FDS (kumi/rpim.h).
 * The server's connection stays open while the job runs: the server closes
 * it when another client fails (the protocol's only signal), and mpiexec
 * then stops its ranks with a message.  When every rank exited 0 mpiexec
 * sends FINI; on failure it closes the connection without FINI (the server
 * then ends the others).  Packet sizes and flow control come from the
 * parameters p2p_impi_datalen, _ackmark, _hiwater, _tagub (--param or
 * environment), read here because mpiexec announces them; the relay's
 * p2p_impi_relay_spin, _dance_timeout and _fini_timeout too.
 * With p2p_impi_host_per_rank=1 every rank is an IMPI host of its own
 * instead (C_NHOSTS = N, H_NPROCS 1 each, one listener and one dance per
 * host, the launch's hosts not connected to each other): each rank gets
 * its own host's connections (KUMI_INTERNAL_IMPI_HOSTS: one list per rank,
 * ';' between), reads and writes them and does its host's FINI itself, and
 * mpiexec relays nothing.
 * Limits: the ranks run on this host (no -host / --hostfile). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <kumi/impi.h>
#include <kumi/rpim.h>
#include "mpiexec.h"

static struct kumi_impi_client cl = { .fd = -1 };
static int lfd = -1;                 /* the host's listener (until the dance is over) */
/* p2p_impi_host_per_rank=1: every rank is an IMPI host of its own (a host of
 * one proc, which reads and writes its connections itself: no relay hop);
 * nmine hosts myhost ... myhost + nmine - 1, their listeners lfds[] and
 * connections pconn[local * job.nhosts + h] (mpiexec's copies closed once
 * the ranks started) */
static int per_rank, nmine = 1, *lfds, *pconn;
static int *rfds;                    /* per rank: its end of its channel (until every rank started) */
static int nl;
static char jobfile[256];
static int *closelist;               /* scratch for mx_impi_close_fds */

/* ---- the host agent's state ---- */
struct obuf {                        /* bytes queued for a connection */
    uint8_t *b;
    size_t head, len, cap;
};
struct chan {                        /* a rank's channel or another host's connection */
    int fd;                          /* -1: closed */
    int index;                       /* launch rank, or global host rank */
    int is_host;
    uint8_t *ib;                     /* input: whole packets are routed from here */
    size_t ioff, ilen, icap;
    struct obuf out;
    int fini_recv, fini_sent;
};
static struct kumi_impi_job job;     /* the tables every client builds (sheet §1.10) */
static struct chan *ranks, *hosts;   /* by launch rank / global host rank */
static int nranks, myhost = -1, relay_on;
static int all_fini;                 /* every rank sent FINI (or ended): FINIs to the hosts went */
static double fini_deadline, fini_timeout = 60.0, dance_timeout = 60.0;
static unsigned long long relayed_out, relayed_in, dropped;
static double last_relay, relay_spin = 0;          /* p2p_impi_relay_spin: seconds */
static pthread_mutex_t *locks;       /* per host: held while a whole packet is written (shared with the ranks) */
static int lockfd = -1;
static int pacefd = -1;             /* the shared connections' pacing state (struct kumi_impi_pacing per host) */

/* A parameter's value: --param (KUMI_NAME=...) first, then the environment. */
static const char *param_text(const char *envname)
{
    const char *v = NULL;
    size_t l = strlen(envname);
    for (int j = 0; j < mx_opt.nparams; j++)
        if (!strncmp(mx_opt.params[j], envname, l) && mx_opt.params[j][l] == '=') v = mx_opt.params[j] + l + 1;
    if (!v) v = getenv(envname);
    return v && *v ? v : NULL;
}

static long param_long(const char *envname, long def, long lo, long hi)
{
    const char *v = param_text(envname);
    if (!v) return def;
    char *end;
    long x = strtol(v, &end, 0);
    if (*end || x < lo || x > hi) {
        mx_msg("%s=%s: expected a number from %ld to %ld; using %ld", envname, v, lo, hi, def);
        return def;
    }
    return x;
}

static double param_double(const char *envname, double def)
{
    const char *v = param_text(envname);
    if (!v) return def;
    char *end;
    double x = strtod(v, &end);
    if (*end || !(x > 0)) {
        mx_msg("%s=%s: expected a positive number of seconds; using %g", envname, v, def);
        return def;
    }
    return x;
}

static void add_env(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void add_env(const char *fmt, ...)
{
    char b[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    mx_opt.params = realloc(mx_opt.params, (size_t)(mx_opt.nparams + 1) * sizeof *mx_opt.params);
    if (!mx_opt.params) exit(1);
    mx_opt.params[mx_opt.nparams++] = mx_xstrdup(b);
}

static void remove_jobfile(void)
{
    if (jobfile[0]) unlink(jobfile);
}

/* The job file: a header {"KIMP", my client rank, number of clients}, then
 * one record {label, client mask, n, n bytes} per reply, integers big-endian. */
static int put_rec(FILE *f, uint32_t a, uint32_t b, uint32_t n, const void *data)
{
    uint8_t h[12];
    kumi_impi_put32(h, a);
    kumi_impi_put32(h + 4, b);
    kumi_impi_put32(h + 8, n);
    return fwrite(h, 1, 12, f) == 12 && (!data || n == 0 || fwrite(data, 1, n, f) == n) ? 0 : -1;
}

static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - mx_now();
        if (left <= 0) return 0;
        struct pollfd p = { .fd = fd, .events = events };
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r > 0) return 1;
        if (r < 0 && errno != EINTR) return 0;
    }
}

static void host_sockopts(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static const char *host_text(int h, char *b, size_t n)
{
    int first = job.host_first_proc[h], np = job.hosts[h].nprocs;
    if (np > 1) snprintf(b, n, "IMPI host %d (ranks %d-%d of IMPI client %d)", h, first, first + np - 1,
                         kumi_impi_job_host_client(&job, h));
    else snprintf(b, n, "IMPI host %d (rank %d of IMPI client %d)", h, first, kumi_impi_job_host_client(&job, h));
    return b;
}

/* The dance (sheet §2) of my host mh (listener lsock, its connections in
 * row[] by global host rank): higher-ranked hosts connect, lower-ranked
 * accept; the hosts of this launch do not connect to each other.  phase 0:
 * the connects, 1: the accepts (every host of the launch connects before
 * any waits: a connect completes in the listener's backlog). */
static int is_mine(int h)
{
    return h >= myhost && h < myhost + nmine;
}

static int dance(int mh, int lsock, int *row, int phase, double deadline)
{
    char hb[96];
    int want = 0;
    for (int h = 0; h < job.nhosts; h++) {
        if (is_mine(h)) continue;
        if (h > mh) { want++; continue; }
        if (phase) continue;
        const struct kumi_impi_host *hh = &job.hosts[h];
        uint8_t addr[16];
        struct sockaddr_storage ss;
        socklen_t sl;
        memset(&ss, 0, sizeof ss);
        int fam = kumi_impi_hostid_get(hh->id, addr);
        if (fam == AF_INET) {
            struct sockaddr_in *sa = (struct sockaddr_in *)&ss;
            sa->sin_family = AF_INET;
            sa->sin_port = htons((uint16_t)hh->port);
            memcpy(&sa->sin_addr, addr, 4);
            sl = sizeof *sa;
        } else {
            struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&ss;
            sa->sin6_family = AF_INET6;
            sa->sin6_port = htons((uint16_t)hh->port);
            memcpy(&sa->sin6_addr, addr, 16);
            sl = sizeof *sa;
        }
        char astr[64] = "?";
        inet_ntop(fam, addr, astr, sizeof astr);
        int err = 0;
        while (row[h] < 0 && mx_now() < deadline) {
            int fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd < 0) { err = errno; break; }
            int r = connect(fd, (struct sockaddr *)&ss, sl);
            if (r < 0 && errno == EINPROGRESS) {
                socklen_t el = sizeof err;
                r = wait_fd(fd, POLLOUT, deadline) && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && !err
                    ? 0 : -1;
            } else if (r < 0) {
                err = errno;
            }
            if (r == 0) {
                uint8_t me[4];
                kumi_impi_put32(me, (uint32_t)mh);               /* my host rank, 32 bits big-endian */
                if (send(fd, me, 4, MSG_NOSIGNAL) == 4) {
                    host_sockopts(fd);
                    row[h] = fd;
                    break;
                }
                err = errno;
            }
            close(fd);
            usleep(20000);                                /* refused: its listener may not exist yet */
        }
        if (row[h] < 0) {
            mx_msg("IMPI: could not connect to %s at %s:%d within %g s: %s", host_text(h, hb, sizeof hb), astr,
                   hh->port, dance_timeout, err ? strerror(err) : "timed out");
            return -1;
        }
    }
    while (phase && want > 0) {
        if (!wait_fd(lsock, POLLIN, deadline)) {
            char missing[256] = "";
            size_t l = 0;
            for (int h = mh + 1; h < job.nhosts && l + 16 < sizeof missing; h++)
                if (!is_mine(h) && row[h] < 0)
                    l += (size_t)snprintf(missing + l, sizeof missing - l, "%s%d", l ? ", " : "", h);
            mx_msg("IMPI: waited %g s for the connections of IMPI hosts %s", dance_timeout, missing);
            return -1;
        }
        int fd = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        uint8_t b[4];
        size_t got = 0;
        while (got < 4 && wait_fd(fd, POLLIN, deadline)) {
            ssize_t r = recv(fd, b + got, 4 - got, MSG_DONTWAIT);
            if (r <= 0 && !(r < 0 && (errno == EINTR || errno == EAGAIN))) break;
            if (r > 0) got += (size_t)r;
        }
        uint32_t h = got == 4 ? kumi_impi_get32(b) : 0;
        if (got < 4 || h <= (uint32_t)mh || h >= (uint32_t)job.nhosts || is_mine((int)h) || row[h] >= 0) {
            mx_msg("IMPI: a connection to this host that %s; closed",
                   got < 4 ? "sent no host rank" : "names a host that should not connect here");
            close(fd);
            continue;
        }
        host_sockopts(fd);
        row[h] = fd;
        want--;
    }
    return 0;
}

int mx_impi_startup(int np)
{
    uint64_t key = 0;
    uint32_t mask = 1u << KUMI_IMPI_AUTH_NONE;
    const char *ktext = mx_opt.impi_auth ? mx_opt.impi_auth : getenv("IMPI_AUTH_KEY");
    if (ktext && *ktext) {
        if (kumi_impi_parse_key(ktext, &key) != 0) {
            mx_msg("--impi-auth: '%s' is not a 64-bit number", ktext);
            return -1;
        }
        mask = 1u << KUMI_IMPI_AUTH_KEY;
    }
    int tmo = (int)(1000 * (mx_opt.timeout > 0 ? mx_opt.timeout : 300));
    int32_t datalen = (int32_t)param_long("KUMI_P2P_IMPI_DATALEN", 65536, KUMI_IMPI_MIN_DATALEN, 1 << 26);
    uint32_t ackmark = (uint32_t)param_long("KUMI_P2P_IMPI_ACKMARK", 10, 1, 1 << 20);
    uint32_t hiwater = (uint32_t)param_long("KUMI_P2P_IMPI_HIWATER", 20, 1, 1 << 20);
    int32_t tagub = (int32_t)param_long("KUMI_P2P_IMPI_TAGUB", KUMI_IMPI_MAX_TAG_UB, KUMI_IMPI_MIN_TAG_UB,
                                        KUMI_IMPI_MAX_TAG_UB);
    dance_timeout = param_double("KUMI_P2P_IMPI_DANCE_TIMEOUT", 60.0);
    fini_timeout = param_double("KUMI_P2P_IMPI_FINI_TIMEOUT", 60.0);
    relay_spin = param_text("KUMI_P2P_IMPI_RELAY_SPIN") ? param_double("KUMI_P2P_IMPI_RELAY_SPIN", 0) : 0;
    if (hiwater < ackmark) {
        mx_msg("p2p_impi_hiwater %u is below p2p_impi_ackmark %u; using %u", hiwater, ackmark, ackmark);
        hiwater = ackmark;
    }
    const char *step = "connect";
    if (kumi_impi_client_connect(&cl, mx_opt.impi_server, tmo) != 0) goto fail;
    step = "AUTH";
    if (kumi_impi_client_auth(&cl, mask, key, NULL) != 0) goto fail;
    step = "IMPI";
    if (kumi_impi_client_impi(&cl, mx_opt.impi_client) != 0) goto fail;
    if (mx_opt.impi_client >= cl.size) {
        mx_msg("--impi-client %d: the IMPI server %s has %d clients (0 ... %d)", mx_opt.impi_client,
               mx_opt.impi_server, cl.size, cl.size - 1);
        kumi_impi_client_close(&cl);
        return -1;
    }

    /* this machine's address as the server sees it, the host's listener, the ranks' channels */
    struct sockaddr_in me;
    socklen_t ml = sizeof me;
    if (getsockname(cl.fd, (struct sockaddr *)&me, &ml) != 0 || me.sin_family != AF_INET) {
        mx_msg("IMPI: cannot tell this host's IPv4 address toward the server %s", mx_opt.impi_server);
        kumi_impi_client_close(&cl);
        return -1;
    }
    per_rank = param_long("KUMI_P2P_IMPI_HOST_PER_RANK", 0, 0, 1) && np > 1;
    nmine = per_rank ? np : 1;
    struct kumi_impi_host *hostv = mx_xcalloc((size_t)nmine, sizeof *hostv);
    struct kumi_impi_proc *procs = mx_xcalloc((size_t)np, sizeof *procs);
    lfds = mx_xcalloc((size_t)nmine, sizeof *lfds);
    rfds = mx_xcalloc((size_t)np, sizeof *rfds);
    closelist = mx_xcalloc((size_t)np, sizeof *closelist);
    ranks = mx_xcalloc((size_t)np, sizeof *ranks);
    nranks = np;
    for (int i = 0; i < nmine; i++) {
        struct kumi_impi_host host;
        memset(&host, 0, sizeof host);
        struct sockaddr_in a;
        socklen_t al = sizeof a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, SOMAXCONN) != 0 ||
            getsockname(lfd, (struct sockaddr *)&a, &al) != 0) {
            mx_msg("IMPI: cannot open the host's listening socket: %s", strerror(errno));
            kumi_impi_client_close(&cl);
            return -1;
        }
        lfds[i] = lfd;
        kumi_impi_hostid_set(host.id, AF_INET, &me.sin_addr);
        host.port = ntohs(a.sin_port);
        host.nprocs = per_rank ? 1 : np;
        host.ackmark = ackmark;
        host.hiwater = hiwater;
        hostv[i] = host;
    }
    char fds[4096] = "";
    size_t fl = 0;
    for (int r = 0; r < np; r++) {
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0) {   /* sp[1] inherited by rank r only (close_fds) */
            mx_msg("IMPI: cannot make the channel of rank %d: %s", r, strerror(errno));
            kumi_impi_client_close(&cl);
            return -1;
        }
        int big = 4 << 20;
        setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
        setsockopt(sp[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        fcntl(sp[0], F_SETFD, FD_CLOEXEC);
        fcntl(sp[0], F_SETFL, fcntl(sp[0], F_GETFL) | O_NONBLOCK);
        ranks[r].fd = sp[0];
        ranks[r].index = r;
        rfds[nl++] = sp[1];
        memcpy(procs[r].id, hostv[0].id, sizeof procs[r].id);
        procs[r].pid = ((int64_t)getpid() << 20) + r;
        if (fl + 16 < sizeof fds) fl += (size_t)snprintf(fds + fl, sizeof fds - fl, "%s%d", r ? "," : "", sp[1]);
    }
    if (fl + 16 >= sizeof fds) {
        mx_msg("IMPI: %d ranks are too many for one client here", np);
        kumi_impi_client_close(&cl);
        return -1;
    }
    struct kumi_impi_mine m = { .datalen = datalen, .tagub = tagub, .xsize = -1, .maxlinear = -1,
                                .nhosts = nmine, .nprocs = np, .hosts = hostv, .procs = procs };

    /* the label rounds, each reply kept for the ranks */
    const char *tmp = getenv("TMPDIR");
    snprintf(jobfile, sizeof jobfile, "%s/kumi-impi.%ld.job", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    atexit(remove_jobfile);
    FILE *f = fopen(jobfile, "wb");
    if (!f) {
        mx_msg("IMPI: cannot write %s: %s", jobfile, strerror(errno));
        jobfile[0] = 0;
        kumi_impi_client_close(&cl);
        return -1;
    }
    char err[320];
    memset(&job, 0, sizeof job);
    job.nclients = cl.size;
    int bad = put_rec(f, 0x4b494d50u /* "KIMP" */, (uint32_t)mx_opt.impi_client, (uint32_t)cl.size, NULL);
    uint64_t uid = 0xcbf29ce484222325ull;   /* FNV-1a over every reply: the job's identity, alike in every client */
    step = "the labels";
    for (int i = 0; i < KUMI_IMPI_NLABELS && !bad; i++) {
        uint32_t label = kumi_impi_label_order[i], rmask;
        size_t n = kumi_impi_label_encode(label, &m, NULL), nr;
        uint8_t *mine = mx_xcalloc(n ? n : 1, 1), *all;
        kumi_impi_label_encode(label, &m, mine);
        int r = kumi_impi_client_coll(&cl, label, mine, n, &rmask, &all, &nr);
        free(mine);
        if (r != 0) {
            fclose(f);
            goto fail;
        }
        if (kumi_impi_job_add(&job, label, rmask, all, nr, err, sizeof err) != 0) {
            mx_msg("IMPI: the server's reply to label %s: %s", kumi_impi_label_name(label), err);
            bad = -2;
        } else if (put_rec(f, label, rmask, (uint32_t)nr, all) != 0) {
            bad = -1;
        }
        uint32_t hdr[3] = { label, rmask, (uint32_t)nr };
        for (size_t j = 0; j < sizeof hdr + nr; j++) {
            uid ^= j < sizeof hdr ? ((const uint8_t *)hdr)[j] : all[j - sizeof hdr];
            uid *= 0x100000001b3ull;
        }
        free(all);
    }
    if (fclose(f) != 0 && !bad) bad = -1;
    if (bad == -1) mx_msg("IMPI: cannot write %s: %s", jobfile, strerror(errno));
    if (!bad && kumi_impi_job_finish(&job, err, sizeof err) != 0) {
        mx_msg("IMPI: %s", err);
        bad = -2;
    }
    free(procs);
    free(hostv);
    if (bad) {
        kumi_impi_client_close(&cl);
        return -1;
    }
    step = "DONE";
    if (kumi_impi_client_done(&cl) != 0) goto fail;
    myhost = job.first_host[mx_opt.impi_client];
    hosts = mx_xcalloc((size_t)job.nhosts, sizeof *hosts);
    pconn = mx_xcalloc((size_t)nmine * (size_t)job.nhosts, sizeof *pconn);
    for (int i = 0; i < nmine * job.nhosts; i++) pconn[i] = -1;
    double deadline = mx_now() + dance_timeout;
    for (int phase = 0; phase < 2; phase++)
        for (int i = 0; i < nmine; i++)
            if (dance(myhost + i, lfds[i], pconn + (size_t)i * (size_t)job.nhosts, phase, deadline) != 0) {
                kumi_impi_client_close(&cl);
                return -1;
            }
    for (int h = 0; h < job.nhosts; h++) {
        hosts[h].fd = per_rank ? -1 : pconn[h];      /* one host: the agent's table */
        hosts[h].index = h;
        hosts[h].is_host = 1;
    }
    for (int i = 0; i < nmine; i++) close(lfds[i]);  /* sheet §2: closed after the dance */
    lfd = -1;
    relay_on = 1;
    /* the ranks write their packets to the host connections themselves (one
     * relay hop less), a whole packet under the host's lock; mpiexec relays
     * what comes in */
    char hostsenv[4096];
    size_t hl = 0;
    size_t lsz = (size_t)job.nhosts * sizeof(pthread_mutex_t);
    lockfd = memfd_create("kumi-impi-locks", 0);
    if (lockfd >= 0 && ftruncate(lockfd, (off_t)lsz) == 0)
        locks = mmap(NULL, lsz, PROT_READ | PROT_WRITE, MAP_SHARED, lockfd, 0);
    if (!locks || locks == MAP_FAILED) {
        mx_msg("IMPI: cannot make the host's locks: %s", strerror(errno));
        locks = NULL;
        kumi_impi_client_close(&cl);
        return -1;
    }
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    for (int h = 0; h < job.nhosts; h++) pthread_mutex_init(&locks[h], &ma);
    /* pacing/sockrate's count of the launch's paced calls per connection */
    struct kumi_impi_pacing *pace = MAP_FAILED;
    size_t psz = (size_t)job.nhosts * sizeof *pace;
    if (!per_rank && (pacefd = memfd_create("kumi-impi-pacing", 0)) >= 0 && ftruncate(pacefd, (off_t)psz) == 0)
        pace = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_SHARED, pacefd, 0);
    if (pace != MAP_FAILED) {
        for (int h = 0; h < job.nhosts; h++) {
            pthread_mutex_init(&pace[h].lock, &ma);
            pace[h].inflight = 0;
        }
        munmap(pace, psz);
        add_env("%s=%d:%d", KUMI_ENV_IMPI_PACING, pacefd, job.nhosts);
    } else if (pacefd >= 0) {         /* pacing would then set and restore rates without the count */
        close(pacefd);
        pacefd = -1;
    }
    pthread_mutexattr_destroy(&ma);
    /* one list for the launch's host, or (per rank) one per rank, ';' between */
    hl += (size_t)snprintf(hostsenv + hl, sizeof hostsenv - hl, "%d:", lockfd);
    for (int i = 0; i < nmine && hl + 32 < sizeof hostsenv; i++) {
        if (i) hostsenv[hl++] = ';', hostsenv[hl] = 0;
        for (int h = 0; h < job.nhosts && hl + 32 < sizeof hostsenv; h++) {
            int fd = pconn[(size_t)i * (size_t)job.nhosts + (size_t)h];
            if (fd < 0) continue;
            fcntl(fd, F_SETFD, 0);                   /* inherited by the ranks (until they started) */
            hl += (size_t)snprintf(hostsenv + hl, sizeof hostsenv - hl, "%s%d=%d",
                                   strchr(":;", hostsenv[hl - 1]) ? "" : ",", h, fd);
        }
    }
    if (hl + 32 >= sizeof hostsenv) {
        mx_msg("IMPI: %d hosts are too many here", job.nhosts);
        kumi_impi_client_close(&cl);
        return -1;
    }
    int first = job.first_proc_of_client[mx_opt.impi_client];
    if (getenv("KUMI_VERBOSE") && atoi(getenv("KUMI_VERBOSE")) > 0)
        mx_msg("IMPI client %d of %d (server %s): IMPI host%s %d%s of %d holding ranks %d-%d of %d, packets of %d "
               "bytes, ackmark %u, hiwater %u, tag_ub %d", mx_opt.impi_client, cl.size, mx_opt.impi_server,
               per_rank ? "s" : "", myhost, per_rank ? "-..., one per rank," : "", job.nhosts, first, first + np - 1,
               job.nprocs, job.pk_maxlen, job.ackmark, job.hiwater, job.tag_ub);
    add_env("%s=%d:%d", KUMI_ENV_IMPI_WORLD, first, job.nprocs);
    add_env("%s=%s", KUMI_ENV_IMPI_JOB, jobfile);
    add_env("%s=%s", KUMI_ENV_IMPI_FDS, fds);
    add_env("%s=%s", KUMI_ENV_IMPI_HOSTS, hostsenv);
    add_env("%s=%016llx", KUMI_ENV_IMPI_UID, (unsigned long long)(uid ? uid : 1));
    return 0;
fail:
    mx_msg("IMPI client %d, server %s, %s: %s", mx_opt.impi_client, mx_opt.impi_server, step, cl.err);
    kumi_impi_client_close(&cl);
    return -1;
}

/* The channels rank r must close (every other rank's). */
const int *mx_impi_close_fds(int r, int *n)
{
    int k = 0;
    if (per_rank && nl) {                            /* and the other ranks' hosts' connections */
        int *c = realloc(closelist, sizeof *c * ((size_t)nl + (size_t)nmine * (size_t)job.nhosts));
        if (c) closelist = c;
        for (int i = 0; c && i < nmine; i++)
            for (int h = 0; i != r && h < job.nhosts; h++)
                if (pconn[(size_t)i * (size_t)job.nhosts + (size_t)h] >= 0)
                    closelist[k++] = pconn[(size_t)i * (size_t)job.nhosts + (size_t)h];
    }
    for (int i = 0; i < nl; i++)
        if (i != r) closelist[k++] = rfds[i];
    *n = k;
    return k ? closelist : NULL;
}

/* Once every rank started, mpiexec needs the ranks' ends no more. */
void mx_impi_started(void)
{
    for (int i = 0; i < nl; i++) close(rfds[i]);
    nl = 0;
    for (int i = 0; per_rank && pconn && i < nmine * job.nhosts; i++)   /* each rank's host is its own */
        if (pconn[i] >= 0) {
            close(pconn[i]);
            pconn[i] = -1;
        }
    for (int h = 0; hosts && h < job.nhosts; h++)
        if (hosts[h].fd >= 0) {
            fcntl(hosts[h].fd, F_SETFD, FD_CLOEXEC);
            if (nranks == 1) {           /* the host's only proc reads them and does FINI itself */
                close(hosts[h].fd);
                hosts[h].fd = -1;
            }
        }
    if (lockfd >= 0) close(lockfd);
    lockfd = -1;
    if (pacefd >= 0) close(pacefd);
    pacefd = -1;
}

int mx_impi_fd(void)
{
    return cl.fd;
}

/* ---- the relay ---- */
static void ob_put(struct obuf *o, const void *p, size_t n)
{
    if (o->head + o->len + n > o->cap) {
        if (o->head) {
            memmove(o->b, o->b + o->head, o->len);
            o->head = 0;
        }
        if (o->len + n > o->cap) {
            size_t c = o->cap ? o->cap : 256 * 1024;
            while (c < o->len + n) c *= 2;
            o->b = realloc(o->b, c);
            if (!o->b) {
                mx_msg("IMPI: out of memory relaying packets");
                exit(1);
            }
            o->cap = c;
        }
    }
    memcpy(o->b + o->head + o->len, p, n);
    o->len += n;
}

static void chan_close(struct chan *c)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    free(c->ib);
    c->ib = NULL;
    c->ioff = c->ilen = c->icap = 0;
    free(c->out.b);
    memset(&c->out, 0, sizeof c->out);
}

static void host_lost(struct chan *c, const char *why)
{
    char hb[96];
    if (!mx_stopping())
        mx_msg("%s: %s; stopping the job", host_text(c->index, hb, sizeof hb), why);
    chan_close(c);
    mx_stop_job(1, SIGTERM);
}

static void host_lock(int h)
{
    if (locks && pthread_mutex_lock(&locks[h]) == EOWNERDEAD) pthread_mutex_consistent(&locks[h]);
}

static void host_unlock(int h)
{
    if (locks) pthread_mutex_unlock(&locks[h]);
}

/* Write what c has queued: 1 if something went.  A host connection the
 * ranks write too: all of it (whole packets) under the host's lock. */
static int chan_flush(struct chan *c)
{
    int did = 0, locked = c->is_host && locks && c->out.len > 0;
    if (locked) host_lock(c->index);
    while (c->fd >= 0 && c->out.len > 0) {
        ssize_t w = send(c->fd, c->out.b + c->out.head, c->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR) continue;
            if ((errno == EAGAIN || errno == EWOULDBLOCK) && locked) {
                struct pollfd pf = { .fd = c->fd, .events = POLLOUT };
                poll(&pf, 1, 100);
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (locked) host_unlock(c->index);
            locked = 0;
            if (c->is_host) {
                char why[120];
                snprintf(why, sizeof why, "writing to it failed (%s)", strerror(errno));
                host_lost(c, why);
            } else {
                dropped++;                           /* a rank that ended: its part is over */
                chan_close(c);
            }
            return did;
        }
        c->out.head += (size_t)w;
        c->out.len -= (size_t)w;
        did = 1;
    }
    if (locked) host_unlock(c->index);
    if (c->out.len == 0) c->out.head = 0;
    return did;
}

static void send_finis(void)
{
    struct kumi_impi_packet pk;
    uint8_t h[KUMI_IMPI_PACKET_SIZE];
    memset(&pk, 0, sizeof pk);                       /* LAM's FINI: zero host ids, pid -1 (sheet §3.5) */
    pk.type = KUMI_IMPI_PK_FINI;
    pk.src_pid = pk.dest_pid = -1;
    pk.lsrank = pk.tag = -1;
    pk.count = -1;
    kumi_impi_packet_encode(&pk, h);
    for (int i = 0; i < job.nhosts; i++)
        if (hosts && hosts[i].fd >= 0 && !hosts[i].fini_sent) {
            ob_put(&hosts[i].out, h, sizeof h);
            hosts[i].fini_sent = 1;
            chan_flush(&hosts[i]);
        }
    all_fini = 1;
    fini_deadline = mx_now() + fini_timeout;
}

static void check_all_fini(void)
{
    if (all_fini) return;
    for (int r = 0; r < nranks; r++)
        if (!ranks[r].fini_recv) return;
    send_finis();
}

/* Route one whole packet (header + payload at p) that came in on c. */
static void route(struct chan *c, const struct kumi_impi_packet *pk, const uint8_t *p, size_t n)
{
    char hb[96];
    if (pk->type == KUMI_IMPI_PK_FINI) {
        c->fini_recv = 1;
        if (!c->is_host) check_all_fini();
        return;
    }
    int src = kumi_impi_job_find_proc(&job, pk->src_host, pk->src_pid);
    int dst = kumi_impi_job_find_proc(&job, pk->dest_host, pk->dest_pid);
    int first = job.host_first_proc[myhost];
    if (c->is_host) {
        if (src < 0 || kumi_impi_job_proc_host(&job, src) != c->index) {
            host_lost(c, "it sent a packet whose pk_src is not one of its procs");
            return;
        }
        if (dst < first || dst >= first + nranks) {
            host_lost(c, "it sent a packet whose pk_dest is not a proc of this host");
            return;
        }
        struct chan *t = &ranks[dst - first];
        if (t->fd < 0 || t->fini_recv) {
            dropped++;                               /* for a rank that has ended (a late PROTOACK) */
            return;
        }
        ob_put(&t->out, p, n);
        relayed_in++;
        last_relay = mx_now();
        chan_flush(t);
        return;
    }
    if (src != first + c->index) {
        mx_msg("IMPI: rank %d sent a packet with pk_src proc %d; stopping the job", c->index, src);
        mx_stop_job(1, SIGTERM);
        return;
    }
    int h = dst >= 0 ? kumi_impi_job_proc_host(&job, dst) : -1;
    if (h < 0 || is_mine(h) || hosts[h].fd < 0 || hosts[h].fini_sent) {
        if (!mx_stopping())
            mx_msg("IMPI: rank %d sent a %s packet to %s%s; dropped", c->index, kumi_impi_packet_type_name(pk->type),
                   h < 0 ? "no proc of the job" : h == myhost ? "a proc of this host" : host_text(h, hb, sizeof hb),
                   h >= 0 && h != myhost ? ", whose connection is closed" : "");
        dropped++;
        return;
    }
    ob_put(&hosts[h].out, p, n);
    relayed_out++;
    last_relay = mx_now();
    chan_flush(&hosts[h]);
}

/* Read what c has, route every whole packet. */
static void chan_read(struct chan *c)
{
    size_t need = 2 * (KUMI_IMPI_PACKET_SIZE + (size_t)job.pk_maxlen);
    if (need < 256 * 1024) need = 256 * 1024;
    if (!c->ib) {
        c->ib = malloc(need);
        if (!c->ib) { mx_msg("IMPI: out of memory"); exit(1); }
        c->icap = need;
    }
    for (int rounds = 0; rounds < 8 && c->fd >= 0; rounds++) {
        if (c->ioff > 0) {                           /* keep a partial packet at the start */
            memmove(c->ib, c->ib + c->ioff, c->ilen - c->ioff);
            c->ilen -= c->ioff;
            c->ioff = 0;
        }
        ssize_t r = recv(c->fd, c->ib + c->ilen, c->icap - c->ilen, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        }
        if (r <= 0) {
            if (c->is_host) {
                if (c->fini_recv && c->ilen == c->ioff) {   /* after its FINI: its end */
                    chan_close(c);
                    return;
                }
                char why[120];
                snprintf(why, sizeof why, r < 0 ? "reading from it failed (%s)" : "it closed its connection without FINI",
                         strerror(errno));
                host_lost(c, why);
            } else {
                c->fini_recv = 1;                    /* the rank ended (its exit status tells how) */
                chan_close(c);
                check_all_fini();
            }
            return;
        }
        c->ilen += (size_t)r;
        while (c->fd >= 0 && c->ilen - c->ioff >= KUMI_IMPI_PACKET_SIZE) {
            struct kumi_impi_packet pk;
            char err[200];
            int k = kumi_impi_packet_parse(c->ib + c->ioff, c->ilen - c->ioff, (uint32_t)job.pk_maxlen, &pk, err,
                                           sizeof err);
            if (k < 0) {
                char why[260];
                snprintf(why, sizeof why, "a bad packet header: %s", err);
                if (c->is_host) host_lost(c, why);
                else {
                    mx_msg("IMPI: rank %d: %s; stopping the job", c->index, why);
                    mx_stop_job(1, SIGTERM);
                    chan_close(c);
                }
                return;
            }
            size_t n = KUMI_IMPI_PACKET_SIZE + kumi_impi_packet_payload(&pk);
            if (c->ilen - c->ioff < n) break;
            if (c->fini_recv) {
                if (c->is_host) host_lost(c, "it sent a packet after its FINI");
                return;
            }
            route(c, &pk, c->ib + c->ioff, n);
            c->ioff += n;
        }
        if (c->ioff == c->ilen) c->ioff = c->ilen = 0;
        if ((size_t)r < c->icap / 4) return;         /* drained */
    }
}

static int relay_open(void)
{
    if (!relay_on) return 0;
    for (int h = 0; h < job.nhosts; h++)
        if (hosts[h].fd >= 0) return 1;
    return 0;
}

size_t mx_impi_maxfds(void)
{
    return relay_on ? (size_t)(nranks + job.nhosts) : 0;
}

/* The relay's poll set: tags[i] = rank r (>= 0) or -1 - host h. */
size_t mx_impi_pollset(struct pollfd *p, int *tags)
{
    size_t n = 0;
    if (!relay_on) return 0;
    for (int r = 0; r < nranks; r++)
        if (ranks[r].fd >= 0) {
            p[n].fd = ranks[r].fd;
            p[n].events = (short)(POLLIN | (ranks[r].out.len ? POLLOUT : 0));
            p[n].revents = 0;
            tags[n++] = r;
        }
    for (int h = 0; h < job.nhosts; h++)
        if (hosts[h].fd >= 0) {
            p[n].fd = hosts[h].fd;
            p[n].events = (short)(POLLIN | (hosts[h].out.len ? POLLOUT : 0));
            p[n].revents = 0;
            tags[n++] = -1 - h;
        }
    return n;
}

void mx_impi_relay_event(int tag, short re)
{
    struct chan *c = tag >= 0 ? &ranks[tag] : &hosts[-1 - tag];
    if (c->fd < 0) return;
    if (re & (POLLIN | POLLHUP | POLLERR)) chan_read(c);
    if (c->fd >= 0 && (re & POLLOUT)) chan_flush(c);
    if (c->fd >= 0 && c->is_host && c->fini_sent && c->fini_recv && c->out.len == 0) chan_close(c);   /* sheet §6.1 */
}

/* Keeps mpiexec's loop going while host connections wait for their FINIs
 * (bounded by p2p_impi_fini_timeout once this host sent its own). */
void mx_impi_busy(int *running, double now, double *next)
{
    (void)now;
    if (!relay_open() || mx_stopping()) return;
    if (!all_fini) {
        if (*running) return;
        check_all_fini();                            /* every rank ended */
        if (!all_fini) send_finis();
    }
    for (int h = 0; h < job.nhosts; h++)
        if (hosts[h].fd >= 0 && hosts[h].fini_sent && hosts[h].fini_recv && hosts[h].out.len == 0)
            chan_close(&hosts[h]);
    if (!relay_open()) return;
    double t = mx_now();
    if (t >= fini_deadline) {
        int open = 0;
        for (int h = 0; h < job.nhosts; h++)
            if (hosts[h].fd >= 0) {
                open++;
                chan_close(&hosts[h]);
            }
        mx_msg("IMPI: %d IMPI hosts sent no FINI within %g s; closed", open, fini_timeout);
        return;
    }
    (*running)++;
    if (fini_deadline < *next) *next = fini_deadline;
}

int mx_impi_spinning(double now)
{
    return relay_on && relay_spin > 0 && now - last_relay < relay_spin;
}

/* The server's connection is readable: it sends nothing after DONE, so this
 * is its end (another client failed) or a protocol slip. */
void mx_impi_event(short revents)
{
    char b[256];
    ssize_t n = (revents & POLLIN) ? recv(cl.fd, b, sizeof b, MSG_DONTWAIT) : 0;
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (!mx_stopping())
        mx_msg("IMPI server %s %s: another client of the job failed (or the server ended); stopping the job",
               mx_opt.impi_server, n > 0 ? "sent unexpected bytes after DONE" : "closed the connection");
    kumi_impi_client_close(&cl);
    mx_stop_job(1, SIGTERM);
}

/* The job ended with status code: FINI when every rank exited 0 (sheet
 * §1.11), else the connection just closes (the server ends the others),
 * as do the host connections (without FINI: the other hosts stop too). */
void mx_impi_end(int code)
{
    if (relay_on) {
        if (getenv("KUMI_VERBOSE") && atoi(getenv("KUMI_VERBOSE")) > 1)
            mx_msg("IMPI host %d: %llu packets relayed out, %llu in, %llu dropped", myhost, relayed_out, relayed_in,
                   dropped);
        for (int h = 0; h < job.nhosts; h++) chan_close(&hosts[h]);
        for (int r = 0; r < nranks; r++) chan_close(&ranks[r]);
        relay_on = 0;
        kumi_impi_job_free(&job);
    }
    if (cl.fd < 0) return;
    if (code == 0) {
        if (kumi_impi_client_fini(&cl) != 0) mx_msg("IMPI: FINI to %s: %s", mx_opt.impi_server, cl.err);
    } else {
        kumi_impi_client_close(&cl);
    }
    remove_jobfile();
    jobfile[0] = 0;
}
