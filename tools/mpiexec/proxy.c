/* kumi_proxy: mpiexec's agent on one host of a job (started by mpiexec
 * through ssh, rsh, a launch agent, or directly; see remote.c).
 *
 * It speaks to mpiexec over its stdin and stdout (proxy_proto.h) and to
 * the host's ranks exactly as mpiexec does on one host: a control listener
 * on 127.0.0.1 (control.c, the same code), to which each rank's rpim/fork
 * connects with the job secret.  It forks the ranks (each the leader of its
 * process group, killed if the proxy dies), forwards their stdout/stderr
 * (and stdin to rank 0), their key-value puts (sent upstream once per
 * fence, when every rank of the host entered it or has exited: one FENCE
 * per host), MPI_Abort and exits; it signals the ranks when mpiexec says.
 *
 * If mpiexec goes away (end of file on stdin, nothing heard for twice the
 * host timeout, or SIGTERM/SIGHUP from sshd) the proxy kills its ranks,
 * removes the job's shared-memory objects on this host and exits.
 *
 * The secret arrives in the START message, never on a command line, and
 * reaches the ranks in their environment as on one host (KUMI_JOB_SECRET).
 *
 * Checkpoints (tools/mpiexec/ckpt.c): CKPT and CKPT_GO come down as TORANK
 * and go to the rank's connection; the rank's CKPT_READY / CKPT_DONE, and
 * the closing of its connection, go up as CKPT frames.  A CKPT for a rank
 * without a connection (not in MPI_Init yet, gone) or that has finalized is
 * refused here at once.  Restart: START may give each rank its own argv[1]
 * (kumi_restart IMAGE). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <kumi/rpim.h>
#include "mpiexec.h"

#define PX_PING_EVERY 1.0
#define PX_SILENCE    10.0          /* seconds without a word from mpiexec: it is gone */
#define PX_END_GRACE  1.0

struct px_rank {
    int rank;
    char *argv1;                    /* --restart: its image (kumi_restart IMAGE), or NULL */
    pid_t pid;
    int exited;
    int out[2];                     /* stdout, stderr pipes (read ends), -1 at EOF */
};

static struct mx_job job;
static struct mx_link up;
static struct px_rank *loc;
static int nloc, hostidx, started, ending;
static int fences_sent;
static char **r_argv, **r_env;
static int stdin_here, stdin_pipe = -1, stdin_eof, stdin_closed;
static int report_bindings;          /* mpiexec --report-bindings: each rank's binding on stderr */
static struct mx_buf stdin_q;
static char hostname[256];
static char *agent, *proxy_exe;
static int fork_mode;
static struct mx_job bj;            /* the binding of this host's ranks (bind.c), by local index */

/* Proxies this one started (a tree of proxies, see proxy_proto.h) */
struct px_child {
    int idx;                        /* its host index */
    char *name;
    pid_t agent;
    int agent_done;
    struct mx_link link;
    int errfd;
    char errline[512], lastline[512];
    size_t errlen;
    int *desc, ndesc;               /* hosts reached through it (itself first) */
    int bye, gone;
};
static struct px_child *kids;
static int nkids;

void mx_msg(const char *fmt, ...)
{
    char b[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    fprintf(stderr, "kumi_proxy on %s: %s\n", hostname, b);
}

void *mx_xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) {
        fputs("kumi_proxy: out of memory\n", stderr);
        _exit(1);
    }
    return p;
}

double mx_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void send_frame(int type, const struct mx_buf *m)
{
    mx_frame_begin(&up.out, type, m ? m->len : 0);
    if (m) mx_buf_put(&up.out, m->data, m->len);
    mx_link_flush(&up);
}

void mx_rank_aborted(struct mx_job *j, int rank, int code, const char *msg)
{
    (void)j;
    struct mx_buf m = { 0 };
    mx_buf_u32(&m, (uint32_t)rank);
    mx_buf_u32(&m, (uint32_t)code);
    mx_buf_str(&m, msg, strlen(msg));
    send_frame(MX_P_ABORT, &m);
    mx_buf_free(&m);
}

void mx_fence_dead(struct mx_job *j, int rank)
{
    (void)j;
    (void)rank;                     /* mpiexec decides (fence_check below) */
}

/* Every rank of the host entered the fence or has exited: the host's puts
 * and the ranks that entered go upstream, once. */
static void fence_check(struct mx_job *j)
{
    int entered = 0;
    for (int i = 0; i < nloc; i++) {
        struct mx_rank *rk = &j->ranks[loc[i].rank];
        if (rk->fences > fences_sent) entered++;
        else if (!loc[i].exited) return;
    }
    if (!entered) return;
    struct mx_buf m = { 0 };
    mx_buf_u32(&m, (uint32_t)j->nkv);
    for (size_t i = 0; i < j->nkv; i++) {
        mx_buf_u32(&m, (uint32_t)j->kv[i].rank);
        mx_buf_str(&m, j->kv[i].key, j->kv[i].klen);
        mx_buf_str(&m, j->kv[i].val, j->kv[i].vlen);
        free(j->kv[i].key);
        free(j->kv[i].val);
    }
    j->nkv = 0;
    mx_buf_u32(&m, (uint32_t)entered);
    for (int i = 0; i < nloc; i++)
        if (j->ranks[loc[i].rank].fences > fences_sent) mx_buf_u32(&m, (uint32_t)loc[i].rank);
    fences_sent++;
    send_frame(MX_P_FENCE, &m);
    mx_buf_free(&m);
}

/* A rank's checkpoint answer (type READY/DONE, its payload), or the closing
 * of its connection (type 0): to mpiexec (ckpt.c decides) */
static void ckpt_up(int rank, int type, const void *p, size_t n)
{
    struct mx_buf m = { 0 };
    mx_buf_u32(&m, (uint32_t)rank);
    mx_buf_u32(&m, (uint32_t)type);
    if (n) mx_buf_put(&m, p, n);
    send_frame(MX_P_CKPT, &m);
    mx_buf_free(&m);
}

static void ckpt_fwd(struct mx_job *j, int rank, int type, const unsigned char *p, size_t n)
{
    (void)j;
    ckpt_up(rank, type, p, n);
}

static void ckpt_gone(struct mx_job *j, int rank)
{
    (void)j;
    ckpt_up(rank, 0, NULL, 0);
}

/* CKPT for a rank that cannot take part: refused in its name (READY, ok 0) */
static int ckpt_refuse(int rank, const unsigned char *f, size_t n)
{
    const struct mx_rank *rk = &job.ranks[rank];
    if (n < KUMI_LAUNCH_HDR_LEN + 4 || f[4] != KUMI_LAUNCH_MSG_CKPT || (rk->conn && !rk->finalized)) return 0;
    char t[200];
    snprintf(t, sizeof t, "rank %d %s", rank,
             rk->state == MX_RANK_EXITED ? "has exited" : !rk->connected ? "has not called MPI_Init"
             : rk->finalized ? "has called MPI_Finalize" : "is not connected");
    unsigned char b[12];
    memcpy(b, f + KUMI_LAUNCH_HDR_LEN, 4);       /* its seq */
    kumi_launch_put_u32(b + 4, 0);
    kumi_launch_put_u32(b + 8, (uint32_t)strlen(t));
    struct mx_buf m = { 0 };
    mx_buf_put(&m, b, 12);
    mx_buf_put(&m, t, strlen(t));
    ckpt_up(rank, KUMI_LAUNCH_MSG_CKPT_READY, m.data, m.len);
    mx_buf_free(&m);
    return 1;
}

/* MPI_Comm_spawn: mpiexec decides; the answer comes back as TORANK */
static void spawn_fwd(struct mx_job *j, int rank, const unsigned char *p, size_t n)
{
    (void)j;
    struct mx_buf m = { 0 };
    mx_buf_u32(&m, (uint32_t)rank);
    mx_buf_put(&m, p, n);
    send_frame(MX_P_SPAWNREQ, &m);
    mx_buf_free(&m);
}

static void kill_ranks(int sig)
{
    for (int i = 0; i < nloc; i++) {
        if (loc[i].pid <= 0 || loc[i].exited) continue;
        if (killpg(loc[i].pid, sig) < 0) kill(loc[i].pid, sig);
    }
}

/* mpiexec is gone: nothing of the job may stay on this host. */
static void __attribute__((noreturn)) abandon(const char *why)
{
    if (why) mx_msg("%s; killing this host's ranks", why);
    kill_ranks(SIGKILL);
    for (int i = 0; i < nkids; i++)          /* their proxies see their stdin close */
        if (kids[i].agent > 0 && !kids[i].agent_done) kill(kids[i].agent, SIGTERM);
    for (int i = 0; i < nloc; i++)
        if (loc[i].pid > 0 && !loc[i].exited) waitpid(loc[i].pid, NULL, 0);
    if (job.jobid) kumi_launch_shm_cleanup(job.jobid);
    _exit(1);
}

/* Forward what a rank's pipe holds (all of it when drain). */
static void pipe_read(struct px_rank *l, int w, int drain)
{
    char b[65536];
    for (int rounds = drain ? 256 : 4; l->out[w] >= 0 && rounds > 0; rounds--) {
        ssize_t n = read(l->out[w], b, sizeof b);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        struct mx_buf m = { 0 };
        mx_buf_u32(&m, (uint32_t)l->rank);
        mx_buf_u32(&m, (uint32_t)(w + 1));
        if (n > 0) mx_buf_put(&m, b, (size_t)n);
        send_frame(MX_P_OUT, &m);
        mx_buf_free(&m);
        if (n <= 0) {                       /* EOF: told as an empty OUT */
            close(l->out[w]);
            l->out[w] = -1;
        }
    }
}

static void spawn_all(void)
{
    int envc = 0;
    while (r_env[envc]) envc++;
    char **env = mx_xcalloc((size_t)envc + 7, sizeof *env);
    int k = 0;
    for (int i = 0; i < envc; i++)
        if (strncmp(r_env[i], "KUMI_CONTROL=", 13) && strncmp(r_env[i], "KUMI_RANK=", 10)) env[k++] = r_env[i];
    char ctl[64], rk[32];
    snprintf(ctl, sizeof ctl, "KUMI_CONTROL=127.0.0.1:%d", job.port);
    env[k++] = ctl;
    int rank_slot = k;
    pid_t me = getpid();
    for (int i = 0; i < nloc; i++) {
        struct px_rank *l = &loc[i];
        int op[2], ep[2], ip[2] = { -1, -1 };
        if (pipe2(op, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0 ||
            (l->rank == 0 && stdin_here && pipe2(ip, O_CLOEXEC) < 0)) {
            abandon("cannot create pipes");
        }
        snprintf(rk, sizeof rk, "KUMI_RANK=%d", l->rank);
        env[rank_slot] = rk;
        env[rank_slot + 1] = NULL;
        const struct mx_binding *bd = &bj.bind[i];
        char bc[4200], bl[64], bi[48];
        if (bd->bound) {
            snprintf(bc, sizeof bc, "%s=%s", KUMI_ENV_BIND_CPUS, bd->cpus);
            snprintf(bl, sizeof bl, "%s=%s", KUMI_ENV_BIND_LEVEL, bd->level);
            snprintf(bi, sizeof bi, "%s=%d", KUMI_ENV_BIND_INDEX, bd->index);
            env[rank_slot + 1] = bc;
            env[rank_slot + 2] = bl;
            env[rank_slot + 3] = bi;
            env[rank_slot + 4] = bd->shared ? KUMI_ENV_BIND_SHARED "=1" : NULL;
            env[rank_slot + 5] = NULL;
        }
        if (report_bindings) {   /* as mpiexec words it; mpiexec prints it as "mpiexec: host H: ..." */
            if (bd->bound)
                fprintf(stderr, "rank %d bound to %s %d (cpus %s)\n", l->rank, bd->level, bd->index, bd->cpus);
            else
                fprintf(stderr, "rank %d not bound (%s)\n", l->rank, bj.unbound_why ? bj.unbound_why : "no binding");
            fflush(stderr);
        }
        pid_t p = fork();
        if (p < 0) abandon("cannot fork");
        if (p == 0) {
            setpgid(0, 0);
            if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() != me) _exit(128 + SIGKILL);
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, NULL);
            signal(SIGPIPE, SIG_DFL);
            int in = ip[0] >= 0 ? ip[0] : open("/dev/null", O_RDONLY);
            dup2(in, 0);
            dup2(op[1], 1);
            dup2(ep[1], 2);
            if (bd->bound && sched_setaffinity(0, bd->setsize, (const cpu_set_t *)bd->cpuset) < 0) {
                fprintf(stderr, "mpiexec: rank %d: cannot bind to its CPUs on %s: %s\n", l->rank, hostname,
                        strerror(errno));
                _exit(1);
            }
            if (l->argv1 && r_argv[1]) r_argv[1] = l->argv1;   /* kumi_restart IMAGE */
            execvpe(r_argv[0], r_argv, env);
            fprintf(stderr, "mpiexec: rank %d: cannot execute '%s' on %s: %s\n", l->rank, r_argv[0], hostname,
                    strerror(errno));
            _exit(127);
        }
        setpgid(p, p);
        close(op[1]);
        close(ep[1]);
        l->pid = p;
        l->out[0] = op[0];
        l->out[1] = ep[0];
        fcntl(op[0], F_SETFL, O_NONBLOCK);
        fcntl(ep[0], F_SETFL, O_NONBLOCK);
        if (ip[0] >= 0) {
            close(ip[0]);
            stdin_pipe = ip[1];
            fcntl(stdin_pipe, F_SETFL, O_NONBLOCK);
        }
        job.ranks[l->rank].state = MX_RANK_RUNNING;
        job.ranks[l->rank].pid = p;
        struct mx_buf m = { 0 };
        mx_buf_u32(&m, (uint32_t)l->rank);
        mx_buf_u32(&m, (uint32_t)p);
        send_frame(MX_P_STARTED, &m);
        mx_buf_free(&m);
    }
    free(env);
    started = 1;
}

static void frame_to(struct mx_link *l, int type, const void *p, size_t n)
{
    if (l->broken || l->eof) return;
    mx_frame_begin(&l->out, type, n);
    mx_buf_put(&l->out, p, n);
    mx_link_flush(l);
}

/* A child's proxy is gone: so are the hosts behind it (told upstream). */
static void kid_gone(struct px_child *k, const char *why)
{
    if (k->gone) return;
    k->gone = 1;
    k->link.eof = 1;
    if (k->agent > 0 && !k->agent_done) kill(k->agent, SIGKILL);
    if (k->bye) return;
    for (int i = 0; i < k->ndesc; i++) {
        char w[800];
        const char *said = k->errlen ? k->errline : k->lastline;
        if (i == 0) snprintf(w, sizeof w, "%s%s%s", why, *said ? ": " : "", said);
        else snprintf(w, sizeof w, "started by host %s, which was lost", k->name);
        struct mx_buf in = { 0 }, m = { 0 };
        mx_buf_str(&in, w, strlen(w));
        mx_buf_u32(&m, (uint32_t)k->desc[i]);
        mx_frame_begin(&m, MX_P_LOST, in.len);
        mx_buf_put(&m, in.data, in.len);
        send_frame(MX_P_FROM, &m);
        mx_buf_free(&in);
        mx_buf_free(&m);
    }
}

/* What a child sends goes upstream, wrapped once with its host. */
static int on_kid_frame(void *arg, int type, const unsigned char *p, size_t n)
{
    struct px_child *k = arg;
    if (type == MX_P_FROM) {
        frame_to(&up, type, p, n);
        return 0;
    }
    if (type == MX_P_BYE) k->bye = 1;
    struct mx_buf m = { 0 };
    mx_buf_u32(&m, (uint32_t)k->idx);
    mx_frame_begin(&m, type, n);
    mx_buf_put(&m, p, n);
    send_frame(MX_P_FROM, &m);
    mx_buf_free(&m);
    return 0;
}

static void kid_stderr(struct px_child *k)
{
    char b[4096];
    ssize_t n = read(k->errfd, b, sizeof b);
    if (n <= 0) {
        if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            close(k->errfd);
            k->errfd = -1;
        }
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (b[i] == '\n') {
            k->errline[k->errlen] = 0;
            if (k->errlen) {
                mx_msg("host %s: %s", k->name, k->errline);
                memcpy(k->lastline, k->errline, k->errlen + 1);
            }
            k->errlen = 0;
            continue;
        }
        if (b[i] == '\r') continue;
        if (k->errlen < sizeof k->errline - 1) k->errline[k->errlen++] = b[i];
        k->errline[k->errlen] = 0;
    }
}

static int on_spawn(struct mx_rd *rd)
{
    uint32_t idx = mx_rd_u32(rd);
    char *name = mx_rd_strdup(rd);
    uint32_t nd = mx_rd_u32(rd);
    if (rd->bad || !name || nd < 1 || nd > rd->n || !agent) return -1;
    kids = realloc(kids, (size_t)(nkids + 1) * sizeof *kids);
    if (!kids) abandon("out of memory");
    struct px_child *k = &kids[nkids++];
    memset(k, 0, sizeof *k);
    k->idx = (int)idx;
    k->name = name;
    k->desc = mx_xcalloc(nd, sizeof(int));
    k->ndesc = (int)nd;
    for (uint32_t i = 0; i < nd; i++) k->desc[i] = (int)mx_rd_u32(rd);
    if (rd->bad) return -1;
    k->link.last_rx = mx_now();
    char **av = mx_agent_argv(agent, name, proxy_exe, fork_mode);
    k->agent = mx_agent_start(av, &k->link.rfd, &k->link.wfd, &k->errfd);
    mx_agent_argv_free(av);
    if (k->agent < 0) {
        k->link.rfd = k->link.wfd = k->errfd = -1;
        char w[300];
        snprintf(w, sizeof w, "cannot start its launch agent on %s: %s", hostname, strerror(errno));
        k->agent = 0;
        kid_gone(k, w);
    }
    return 0;
}

static int on_start(struct mx_rd *rd)
{
    hostidx = (int)mx_rd_u32(rd);
    (void)mx_rd_u32(rd);                    /* nhosts */
    nloc = (int)mx_rd_u32(rd);
    if (rd->bad || nloc < 1 || (size_t)nloc > rd->n / 4) return -1;
    loc = mx_xcalloc((size_t)nloc, sizeof *loc);
    for (int i = 0; i < nloc; i++) {
        loc[i].rank = (int)mx_rd_u32(rd);
        loc[i].out[0] = loc[i].out[1] = -1;
    }
    char *secret = mx_rd_strdup(rd), *jid = mx_rd_strdup(rd), *size = mx_rd_strdup(rd), *wdir = mx_rd_strdup(rd);
    uint32_t flags = mx_rd_u32(rd);
    if (rd->bad || strlen(secret) != KUMI_LAUNCH_SECRET_LEN) return -1;
    uint32_t argc = mx_rd_u32(rd);
    if (rd->bad || argc < 1 || argc > rd->n) return -1;
    r_argv = mx_xcalloc(argc + 1, sizeof *r_argv);
    for (uint32_t i = 0; i < argc && !rd->bad; i++) r_argv[i] = mx_rd_strdup(rd);
    uint32_t envc = mx_rd_u32(rd);
    if (rd->bad || envc > rd->n) return -1;
    r_env = mx_xcalloc(envc + 1, sizeof *r_env);
    for (uint32_t i = 0; i < envc && !rd->bad; i++) r_env[i] = mx_rd_strdup(rd);
    agent = mx_rd_strdup(rd);
    proxy_exe = mx_rd_strdup(rd);
    fork_mode = (int)mx_rd_u32(rd);
    uint32_t level = mx_rd_u32(rd), overload = mx_rd_u32(rd);
    if (rd->bad || level > MX_BIND_PACKAGE) return -1;
    if (rd->pos < rd->n) {                  /* --restart: each rank's image */
        uint32_t ni = mx_rd_u32(rd);
        if (rd->bad || ni != (uint32_t)nloc) return -1;
        for (int i = 0; i < nloc && !rd->bad; i++) loc[i].argv1 = mx_rd_strdup(rd);
        if (rd->bad) return -1;
    }
    memcpy(job.secret, secret, KUMI_LAUNCH_SECRET_LEN + 1);
    memset(secret, 0, KUMI_LAUNCH_SECRET_LEN);
    free(secret);
    job.jobid = atol(jid);
    job.n = atoi(size);
    free(jid);
    free(size);
    for (int i = 0; i < nloc; i++)
        if (loc[i].rank < 0 || loc[i].rank >= job.n) return -1;
    job.ranks = mx_xcalloc((size_t)job.n, sizeof *job.ranks);
    job.listen_fd = -1;
    job.fence_check_hook = fence_check;
    job.spawn_hook = spawn_fwd;
    job.ckpt_frame_hook = ckpt_fwd;
    job.ckpt_gone_hook = ckpt_gone;
    stdin_here = flags & 1;
    report_bindings = (flags & 4) != 0;
    struct mx_buf m = { 0 };
    /* the binding of this host's ranks, as mpiexec does on one host; the
     * ranks' peers see it in the key-value table */
    bj.n = nloc;
    if (mx_bind_plan(&bj, (enum mx_bind_level)level, (int)overload) < 0) {
        char b[300];
        snprintf(b, sizeof b, "cannot bind %d process%s as asked on host %s (--bind-to)", nloc, nloc == 1 ? "" : "es",
                 hostname);
        mx_buf_str(&m, b, strlen(b));
        send_frame(MX_P_ERROR, &m);
        mx_buf_free(&m);
        return 0;
    }
    if (chdir(wdir) < 0) {
        if (flags & 2) {                    /* -wdir given: it must exist */
            char b[PATH_MAX + 128];
            snprintf(b, sizeof b, "cannot change to folder %s on host %s: %s", wdir, hostname, strerror(errno));
            mx_buf_str(&m, b, strlen(b));
            send_frame(MX_P_ERROR, &m);
            mx_buf_free(&m);
            free(wdir);
            return 0;
        }
        const char *home = getenv("HOME");
        if (!home || chdir(home) < 0) (void)!chdir("/");
    }
    free(wdir);
    for (int i = 0; i < nloc; i++)
        if (bj.bind[i].bound) {
            char b[32];
            snprintf(b, sizeof b, "%d", bj.bind[i].index);
            mx_ctl_kv_put(&job, loc[i].rank, KUMI_KVS_BIND_CPUS, bj.bind[i].cpus);
            mx_ctl_kv_put(&job, loc[i].rank, KUMI_KVS_BIND_LEVEL, bj.bind[i].level);
            mx_ctl_kv_put(&job, loc[i].rank, KUMI_KVS_BIND_INDEX, b);
        }
    if (mx_ctl_listen(&job) < 0) {
        const char *b = "cannot listen on 127.0.0.1 for the ranks' control connections";
        mx_buf_str(&m, b, strlen(b));
        send_frame(MX_P_ERROR, &m);
        mx_buf_free(&m);
        return 0;
    }
    mx_buf_str(&m, hostname, strlen(hostname));
    send_frame(MX_P_READY, &m);
    mx_buf_free(&m);
    return 0;
}

static int on_frame(void *arg, int type, const unsigned char *p, size_t n)
{
    (void)arg;
    struct mx_rd rd = { p, n, 0, 0 };
    if (type == MX_P_ROUTE) {               /* for this host or one below */
        uint32_t dest = mx_rd_u32(&rd);
        if (rd.bad || n - rd.pos < KUMI_LAUNCH_HDR_LEN) return -1;
        const unsigned char *f = p + rd.pos;
        uint32_t fl = kumi_launch_get_u32(f);
        if (fl < 1 || fl != n - rd.pos - 4) return -1;
        if ((int)dest == hostidx && loc) return on_frame(arg, f[4], f + KUMI_LAUNCH_HDR_LEN, fl - 1);
        for (int i = 0; i < nkids; i++)
            for (int j = 0; j < kids[i].ndesc; j++)
                if (kids[i].desc[j] == (int)dest) {
                    if (dest == (uint32_t)kids[i].idx) frame_to(&kids[i].link, f[4], f + KUMI_LAUNCH_HDR_LEN, fl - 1);
                    else frame_to(&kids[i].link, type, p, n);
                    return 0;
                }
        return 0;                           /* a host already gone */
    }
    if (type == MX_P_GO || type == MX_P_SIGNAL || type == MX_P_PING || type == MX_P_END ||
        type == KUMI_LAUNCH_MSG_FENCE_DONE)
        for (int i = 0; i < nkids; i++) frame_to(&kids[i].link, type, p, n);   /* passed down */
    if (!loc && type != MX_P_START && type != MX_P_PING) return -1;
    switch (type) {
    case MX_P_SPAWN:
        return on_spawn(&rd);
    case MX_P_START:
        if (loc) return -1;
        return on_start(&rd);
    case MX_P_GO:
        if (!started && job.listen_fd >= 0) spawn_all();
        return 0;
    case MX_P_SIGNAL: {
        uint32_t sig = mx_rd_u32(&rd);
        if (rd.bad || sig < 1 || sig > 64) return -1;
        kill_ranks((int)sig);
        return 0;
    }
    case MX_P_STDIN:
        if (n == 0) stdin_eof = 1;
        else if (stdin_here && !stdin_closed) mx_buf_put(&stdin_q, p, n);   /* also before rank 0 starts */
        return 0;
    case MX_P_PING:
        return 0;
    case MX_P_TORANK: {
        uint32_t r = mx_rd_u32(&rd);
        if (rd.bad || (int)r >= job.n || n - rd.pos < KUMI_LAUNCH_HDR_LEN ||
            kumi_launch_get_u32(p + rd.pos) != n - rd.pos - 4)
            return -1;
        if (ckpt_refuse((int)r, p + rd.pos, n - rd.pos)) return 0;
        mx_ctl_send_frame(&job, (int)r, p + rd.pos, n - rd.pos);
        return 0;
    }
    case MX_P_END:
        ending = 1;
        return 0;
    case KUMI_LAUNCH_MSG_FENCE_DONE: {
        struct mx_buf f = { 0 };
        mx_frame_begin(&f, type, n);
        mx_buf_put(&f, p, n);
        job.fences_done++;
        for (int i = 0; i < nloc; i++) mx_ctl_send_frame(&job, loc[i].rank, f.data, f.len);
        mx_buf_free(&f);
        return 0;
    }
    default:
        return -1;
    }
}

static void reap(void)
{
    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p < 0 && errno == EINTR) continue;
        if (p <= 0) return;
        for (int i = 0; i < nkids; i++)
            if (kids[i].agent == p) {
                kids[i].agent_done = 1;
                if (!kids[i].link.eof) mx_link_read(&kids[i].link, mx_now(), on_kid_frame, &kids[i]);
                if (kids[i].errfd >= 0) {
                    fcntl(kids[i].errfd, F_SETFL, O_NONBLOCK);
                    kid_stderr(&kids[i]);
                }
                char w[96];
                if (WIFEXITED(st)) snprintf(w, sizeof w, "its launch agent exited with status %d", WEXITSTATUS(st));
                else snprintf(w, sizeof w, "its launch agent was killed by signal %d", WTERMSIG(st));
                kid_gone(&kids[i], w);
            }
        for (int i = 0; i < nloc; i++) {
            struct px_rank *l = &loc[i];
            if (l->pid != p || l->exited) continue;
            l->exited = 1;
            job.ranks[l->rank].state = MX_RANK_EXITED;
            /* what it wrote and sent before it exited comes first */
            pipe_read(l, 0, 1);
            pipe_read(l, 1, 1);
            mx_ctl_drain_rank(&job, l->rank);
            if (l->rank == 0 && stdin_pipe >= 0) {
                close(stdin_pipe);
                stdin_pipe = -1;
                stdin_closed = 1;
                mx_buf_free(&stdin_q);
            }
            struct mx_buf m = { 0 };
            mx_buf_u32(&m, (uint32_t)l->rank);
            mx_buf_u32(&m, (uint32_t)st);
            mx_buf_u32(&m, (uint32_t)(job.ranks[l->rank].connected | job.ranks[l->rank].finalized << 1));
            send_frame(MX_P_EXIT, &m);
            mx_buf_free(&m);
            fence_check(&job);
            break;
        }
    }
}

int main(int argc, char **argv)
{
    signal(SIGCHLD, SIG_DFL);              /* as mpiexec: an ignored SIGCHLD would hide the ranks' ends */
    if (gethostname(hostname, sizeof hostname - 1) != 0) strcpy(hostname, "?");
    if (argc == 3 && strcmp(argv[1], "--slurm") == 0 && mx_proxy_slurm_connect(argv[2]) < 0)
        return 1;                          /* started by srun: the link is a connection to mpiexec */
    up.rfd = 0;
    up.wfd = 1;
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGCHLD);
    sigaddset(&ss, SIGTERM);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGHUP);
    sigprocmask(SIG_BLOCK, &ss, NULL);
    int sigfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigfd < 0) {
        mx_msg("signalfd: %s", strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    double now = mx_now(), last_ping = now, end_at = -1, sweep_at = now + MX_REAP_SWEEP;
    up.last_rx = now;
    size_t cap = 64;
    struct pollfd *pfd = mx_xcalloc(cap, sizeof *pfd);
    int *tag = mx_xcalloc(cap, sizeof *tag);
    struct mx_conn **cp = mx_xcalloc(cap, sizeof *cp);     /* -1 up read, -2 up write, -3 sig, -4 listen, -5 stdin pipe,
                                                    2*i+w rank pipe, -100-k conn */
    for (;;) {
        now = mx_now();
        double next = mx_ctl_housekeeping(&job, now);
        if (now - up.last_rx > PX_SILENCE) abandon("no word from mpiexec for 10 seconds");
        if (now - last_ping >= PX_PING_EVERY) {
            last_ping = now;
            send_frame(MX_P_PONG, NULL);
        }
        if (now + PX_PING_EVERY < next) next = now + PX_PING_EVERY;
        if (now >= sweep_at) {              /* as mpiexec's: a SIGCHLD another thread took */
            reap();
            sweep_at = now + MX_REAP_SWEEP;
        }
        if (sweep_at < next) next = sweep_at;
        if (ending) {
            int open = 0, alive = 0;
            for (int i = 0; i < nloc; i++) {
                open += (loc[i].out[0] >= 0) + (loc[i].out[1] >= 0);
                alive += loc[i].pid > 0 && !loc[i].exited;
            }
            if (end_at < 0) {
                end_at = now;
                if (alive) kill_ranks(SIGKILL);
            }
            int kidsup = 0;
            for (int i = 0; i < nkids; i++) kidsup += !kids[i].gone && !kids[i].link.eof;
            if ((!open && !alive && !kidsup) || now - end_at > PX_END_GRACE + (nkids ? 2.0 : 0.0)) {
                send_frame(MX_P_BYE, NULL);
                double dl = now + 2.0;
                while (mx_link_queued(&up) && !up.broken && mx_now() < dl) {
                    struct pollfd w = { .fd = 1, .events = POLLOUT };
                    poll(&w, 1, 100);
                    mx_link_flush(&up);
                }
                kill_ranks(SIGKILL);
                kumi_launch_shm_cleanup(job.jobid);
                return 0;
            }
            if (end_at + PX_END_GRACE < next) next = end_at + PX_END_GRACE;
            if (nkids && end_at + PX_END_GRACE + 2.0 < next) next = end_at + PX_END_GRACE + 2.0;
        }
        size_t need = 8 + 2 * (size_t)nloc + 3 * (size_t)nkids;
        for (struct mx_conn *c = job.conns; c; c = c->next) need++;
        if (need > cap) {
            cap = 2 * need;
            pfd = realloc(pfd, cap * sizeof *pfd);
            tag = realloc(tag, cap * sizeof *tag);
            cp = realloc(cp, cap * sizeof *cp);
            if (!pfd || !tag || !cp) abandon("out of memory");
        }
        size_t np = 0;
#define ADD(fd_, ev_, t_) do { pfd[np].fd = (fd_); pfd[np].events = (ev_); pfd[np].revents = 0; tag[np++] = (t_); } while (0)
        if (!up.eof) ADD(0, POLLIN, -1);
        if (mx_link_queued(&up)) ADD(1, POLLOUT, -2);
        ADD(sigfd, POLLIN, -3);
        if (job.listen_fd >= 0) ADD(job.listen_fd, POLLIN, -4);
        if (stdin_pipe >= 0 && (stdin_q.len > stdin_q.off || stdin_eof)) ADD(stdin_pipe, POLLOUT, -5);
        if (mx_link_queued(&up) < MX_LINK_HIGH)
            for (int i = 0; i < nloc; i++)
                for (int w = 0; w < 2; w++)
                    if (loc[i].out[w] >= 0) ADD(loc[i].out[w], POLLIN, 2 * i + w);
        for (int i = 0; i < nkids; i++) {
            struct px_child *k = &kids[i];
            if (!k->link.eof && mx_link_queued(&up) < MX_LINK_HIGH) ADD(k->link.rfd, POLLIN, -1000 - 3 * i);
            if (!k->link.eof && !k->link.broken && mx_link_queued(&k->link)) ADD(k->link.wfd, POLLOUT, -1001 - 3 * i);
            if (k->errfd >= 0) ADD(k->errfd, POLLIN, -1002 - 3 * i);
        }
        for (struct mx_conn *c = job.conns; c; c = c->next)
            if (!c->dead) {
                cp[np] = c;
                ADD(c->fd, mx_ctl_events(c), -100);
            }
#undef ADD
        double d = (next - now) * 1000.0;
        int tmo = d <= 0 ? 0 : d > 60000 ? 60000 : (int)d + 1;
        if (poll(pfd, (nfds_t)np, tmo) < 0) {
            if (errno == EINTR) continue;
            abandon("poll failed");
        }
        now = mx_now();
        for (size_t i = 0; i < np; i++) {
            short re = pfd[i].revents;
            if (!re) continue;
            if (tag[i] <= -1000) {           /* a child proxy */
                struct px_child *k = &kids[(-1000 - tag[i]) / 3];
                switch ((-1000 - tag[i]) % 3) {
                case 0:
                    if (mx_link_read(&k->link, now, on_kid_frame, k) < 0 && !k->bye && !k->gone)
                        kid_gone(k, "its proxy's connection closed");
                    break;
                case 1:
                    if (mx_link_flush(&k->link) < 0 && !k->bye) kid_gone(k, "cannot write to its proxy");
                    break;
                default:
                    kid_stderr(k);
                }
                continue;
            }
            switch (tag[i]) {
            case -100:                         /* freed only by housekeeping: still valid */
                mx_ctl_event(&job, cp[i], re);
                break;
            case -1:
                if (mx_link_read(&up, now, on_frame, NULL) < 0) abandon(NULL);
                break;
            case -2:
                if (mx_link_flush(&up) < 0) abandon(NULL);
                break;
            case -3: {
                struct signalfd_siginfo si;
                int chld = 0;
                while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
                    if (si.ssi_signo == SIGCHLD) chld = 1;
                    else abandon(started ? "signalled" : NULL);   /* before the start: mpiexec stops it */
                }
                if (chld) reap();
                break;
            }
            case -4:
                mx_ctl_accept(&job, now);
                break;
            case -5:
                if (stdin_q.len > stdin_q.off) {
                    ssize_t w = write(stdin_pipe, stdin_q.data + stdin_q.off, stdin_q.len - stdin_q.off);
                    if (w > 0) stdin_q.off += (size_t)w;
                    else if (w < 0 && errno != EAGAIN && errno != EINTR) re |= POLLERR;
                    if (stdin_q.off == stdin_q.len) stdin_q.off = stdin_q.len = 0;
                }
                if ((re & (POLLERR | POLLHUP | POLLNVAL)) || (stdin_eof && stdin_q.len == stdin_q.off)) {
                    close(stdin_pipe);
                    stdin_pipe = -1;
                    stdin_closed = 1;
                    mx_buf_free(&stdin_q);
                }
                break;
            default:
                pipe_read(&loc[tag[i] / 2], tag[i] % 2, 0);
                break;
            }
        }
    }
}
