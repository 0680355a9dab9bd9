/* mpiexec as one client of an IMPI job (issue 19 item 2):
 *
 *     mpiexec -n N --impi-client K --impi-server HOST:PORT [--impi-auth KEY] prog
 *
 * In IMPI the *client* is the launcher-level agent that talks to the server
 * and the *hosts* are the agents that own the connections to other hosts
 * (PROTOCOL.md §1.1).  Here mpiexec is the client, and every rank is its own
 * IMPI host (a legitimate configuration: "how many hosts a client has is
 * implementation-dependent"): N hosts of one proc each.  Before any rank
 * starts, mpiexec
 *   - connects to the server, AUTH (KEY when --impi-auth / IMPI_AUTH_KEY
 *     gives a key, else NONE), IMPI (its rank K; learns the client count);
 *   - opens one listening socket per rank (the dance's H_PORT must exist
 *     before the labels, sheet §2), bound to every address, advertised with
 *     the address this machine uses to reach the server (getsockname);
 *   - sends every label (C_NHOSTS = C_NPROCS = N, C_DATALEN, C_TAGUB, XSIZE
 *     and MAXLINEAR -1, H_* per rank, P_IPV6 / P_PID per rank: P_PID is
 *     mpiexec's pid * 2^20 + the rank, unique on this address), DONE;
 *   - writes the server's replies to a file for the ranks (p2p/impi reads it
 *     and builds the same job tables) and hands each rank its listener.
 * The ranks get KUMI_INTERNAL_IMPI_WORLD=FIRST:SIZE (their MPI_COMM_WORLD
 * ranks are FIRST + launch rank, of SIZE over every client in client order),
 * KUMI_INTERNAL_IMPI_JOB (the file) and KUMI_INTERNAL_IMPI_FDS (kumi/rpim.h).
 * The server's connection stays open while the job runs: the server closes
 * it when another client fails (the protocol's only signal), and mpiexec
 * then stops its ranks with a message.  When every rank exited 0 mpiexec
 * sends FINI; on failure it closes the connection without FINI (the server
 * then ends the other clients).  Packet sizes and flow control come from the
 * parameters p2p_impi_datalen, _ackmark, _hiwater (--param or environment),
 * read here because mpiexec announces them.
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
#include <sys/socket.h>
#include <unistd.h>

#include <kumi/impi.h>
#include <kumi/rpim.h>
#include "mpiexec.h"

static struct kumi_impi_client cl = { .fd = -1 };
static int *lfds;                    /* per rank: its host's listener */
static int nl;
static char jobfile[256];
static int *closelist;               /* scratch for mx_impi_close_fds */

/* A parameter's value: --param (KUMI_NAME=...) first, then the environment. */
static long param_long(const char *envname, long def, long lo, long hi)
{
    const char *v = NULL;
    size_t l = strlen(envname);
    for (int j = 0; j < mx_opt.nparams; j++)
        if (!strncmp(mx_opt.params[j], envname, l) && mx_opt.params[j][l] == '=') v = mx_opt.params[j] + l + 1;
    if (!v) v = getenv(envname);
    if (!v || !*v) return def;
    char *end;
    long x = strtol(v, &end, 0);
    if (*end || x < lo || x > hi) {
        mx_msg("%s=%s: expected a number from %ld to %ld; using %ld", envname, v, lo, hi, def);
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

    /* this machine's address as the server sees it, and the hosts' listeners */
    struct sockaddr_in me;
    socklen_t ml = sizeof me;
    if (getsockname(cl.fd, (struct sockaddr *)&me, &ml) != 0 || me.sin_family != AF_INET) {
        mx_msg("IMPI: cannot tell this host's IPv4 address toward the server %s", mx_opt.impi_server);
        kumi_impi_client_close(&cl);
        return -1;
    }
    struct kumi_impi_host *hosts = mx_xcalloc((size_t)np, sizeof *hosts);
    struct kumi_impi_proc *procs = mx_xcalloc((size_t)np, sizeof *procs);
    lfds = mx_xcalloc((size_t)np, sizeof *lfds);
    closelist = mx_xcalloc((size_t)np, sizeof *closelist);
    char fds[4096] = "";
    size_t fl = 0;
    for (int r = 0; r < np; r++) {
        struct sockaddr_in a;
        socklen_t al = sizeof a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        int fd = socket(AF_INET, SOCK_STREAM, 0);         /* inherited by rank r only (close_fds) */
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, SOMAXCONN) != 0 ||
            getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
            mx_msg("IMPI: cannot open the listening socket of host %d: %s", r, strerror(errno));
            kumi_impi_client_close(&cl);
            return -1;
        }
        lfds[nl++] = fd;
        kumi_impi_hostid_set(hosts[r].id, AF_INET, &me.sin_addr);
        hosts[r].port = ntohs(a.sin_port);
        hosts[r].nprocs = 1;
        hosts[r].ackmark = ackmark;
        hosts[r].hiwater = hiwater;
        memcpy(procs[r].id, hosts[r].id, sizeof procs[r].id);
        procs[r].pid = ((int64_t)getpid() << 20) + r;
        if (fl + 16 < sizeof fds) fl += (size_t)snprintf(fds + fl, sizeof fds - fl, "%s%d", r ? "," : "", fd);
    }
    if (fl + 16 >= sizeof fds) {
        mx_msg("IMPI: %d ranks are too many for one client here", np);
        kumi_impi_client_close(&cl);
        return -1;
    }
    struct kumi_impi_mine m = { .datalen = datalen, .tagub = KUMI_IMPI_MAX_TAG_UB, .xsize = -1, .maxlinear = -1,
                                .nhosts = np, .nprocs = np, .hosts = hosts, .procs = procs };

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
    struct kumi_impi_job job;
    char err[320];
    memset(&job, 0, sizeof job);
    job.nclients = cl.size;
    int bad = put_rec(f, 0x4b494d50u /* "KIMP" */, (uint32_t)mx_opt.impi_client, (uint32_t)cl.size, NULL);
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
        free(all);
    }
    if (fclose(f) != 0 && !bad) bad = -1;
    if (bad == -1) mx_msg("IMPI: cannot write %s: %s", jobfile, strerror(errno));
    if (!bad && kumi_impi_job_finish(&job, err, sizeof err) != 0) {
        mx_msg("IMPI: %s", err);
        bad = -2;
    }
    free(hosts);
    free(procs);
    if (bad) {
        kumi_impi_job_free(&job);
        kumi_impi_client_close(&cl);
        return -1;
    }
    step = "DONE";
    if (kumi_impi_client_done(&cl) != 0) {
        kumi_impi_job_free(&job);
        goto fail;
    }
    int first = job.first_proc_of_client[mx_opt.impi_client];
    if (getenv("KUMI_VERBOSE") && atoi(getenv("KUMI_VERBOSE")) > 0)
        mx_msg("IMPI client %d of %d (server %s): ranks %d-%d of %d, %d hosts, packets of %d bytes, "
               "ackmark %u, hiwater %u", mx_opt.impi_client, cl.size, mx_opt.impi_server, first, first + np - 1,
               job.nprocs, job.nhosts, job.pk_maxlen, job.ackmark, job.hiwater);
    add_env("%s=%d:%d", KUMI_ENV_IMPI_WORLD, first, job.nprocs);
    add_env("%s=%s", KUMI_ENV_IMPI_JOB, jobfile);
    add_env("%s=%s", KUMI_ENV_IMPI_FDS, fds);
    kumi_impi_job_free(&job);
    return 0;
fail:
    mx_msg("IMPI client %d, server %s, %s: %s", mx_opt.impi_client, mx_opt.impi_server, step, cl.err);
    kumi_impi_client_close(&cl);
    return -1;
}

/* The listeners rank r must close (every other rank's). */
const int *mx_impi_close_fds(int r, int *n)
{
    int k = 0;
    for (int i = 0; i < nl; i++)
        if (i != r) closelist[k++] = lfds[i];
    *n = k;
    return k ? closelist : NULL;
}

/* Once every rank started, mpiexec needs the listeners no more. */
void mx_impi_started(void)
{
    for (int i = 0; i < nl; i++) close(lfds[i]);
    nl = 0;
}

int mx_impi_fd(void)
{
    return cl.fd;
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
 * §1.11), else the connection just closes (the server ends the others). */
void mx_impi_end(int code)
{
    if (cl.fd < 0) return;
    if (code == 0) {
        if (kumi_impi_client_fini(&cl) != 0) mx_msg("IMPI: FINI to %s: %s", mx_opt.impi_server, cl.err);
    } else {
        kumi_impi_client_close(&cl);
    }
    remove_jobfile();
    jobfile[0] = 0;
}
