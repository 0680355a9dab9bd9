/* mpiexec across hosts: one proxy (kumi_proxy) per host, started through
 * the launch agent (ssh by default; rsh; a command the user names; or the
 * proxy itself on this machine with --launcher fork), spoken to over the
 * agent's stdin and stdout (the protocol: proxy_proto.h).
 *
 * Start-up: every agent is started at once and gets its START message
 * (plan, secret, environment) through its stdin; a proxy answers READY.
 * Only when every host answered does mpiexec send GO, so that a host that
 * cannot be reached (ssh fails, unknown host) is reported by name before
 * any rank starts.  Then the proxies fork their ranks and relay their
 * output, key-value puts and fences (one FENCE per host, answered with the
 * whole table), aborts and exits.  mpiexec's own rank table stays the one
 * place that decides the job's fate (mpiexec.c: rank_exited, stop_job).
 *
 * A host whose link ends (EOF, agent exited) or stays silent for
 * --host-timeout seconds is lost: mpiexec names it and its ranks and stops
 * the job (the hosts its proxy started with it).  At the end mpiexec sends
 * END and waits for each proxy's BYE (its ranks' last output).
 *
 * Many hosts: mpiexec starts at most --fanout (32) proxies itself; host j
 * of the others is started by the proxy of host j/fanout - 1 (SPAWN), so
 * start-up takes log(hosts) rounds.  Frames for such a host travel as
 * ROUTE down the tree, its frames come back wrapped in FROM; what goes to
 * every host (GO, SIGNAL, PING, END, the fence's table) is sent to the top
 * proxies only and passed down by each. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <mpi.h>
#include <kumi/param.h>
#include "mpiexec.h"

#define MX_PING_EVERY 1.0

struct mx_proxy {
    const char *name;
    pid_t agent;                 /* the agent process (ssh, or the proxy) */
    int agent_done;
    int agent_status;
    struct mx_link link;
    int errfd;                   /* the agent's stderr */
    char errline[512];           /* the line it is writing */
    char lastline[512];          /* its last complete line */
    size_t errlen;
    int ready, bye, lost, ended;
    int *ranks, nranks;
    double last_ping;
    int parent;                  /* host whose proxy started this one (tree), or -1 */
    struct mx_rset *S;           /* its set */
};

/* A set of proxies: those of the main job (mainset), or of a job spawned
 * by a rank (spawn.c), which gets proxies of its own.  In the functions
 * below, px, npx, nready, go_sent and J are those of the set S in scope. */
struct mx_rset {
    struct mx_proxy *px;
    int npx, nready, go_sent;
    struct mx_job *J;
    const struct mx_rset_ops *ops;   /* NULL: the main job's (mpiexec.c decides) */
    void *ctx;
    int bind, overload;              /* for START */
};
static struct mx_rset mainset;
#define px (S->px)
#define npx (S->npx)
#define nready (S->nready)
#define go_sent (S->go_sent)
#define J (S->J)

static void rs_stop(struct mx_rset *S, int code, const char *why)
{
    if (S->ops) S->ops->stop(S->ctx, code, why);
    else mx_stop_job(code, SIGTERM);
}

static int rs_stopping(struct mx_rset *S)
{
    return S->ops ? S->ops->stopping(S->ctx) : mx_stopping();
}

int mx_remote_nhosts(void)
{
    struct mx_rset *S = &mainset;
    return npx;
}

/* "ranks 4-7, 9" of proxy p */
static void rank_list(const struct mx_proxy *p, char *out, size_t len)
{
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < p->nranks && o + 24 < len;) {
        int j = i;
        while (j + 1 < p->nranks && p->ranks[j + 1] == p->ranks[j] + 1) j++;
        if (j > i) o += (size_t)snprintf(out + o, len - o, "%s%d-%d", o ? ", " : "", p->ranks[i], p->ranks[j]);
        else o += (size_t)snprintf(out + o, len - o, "%s%d", o ? ", " : "", p->ranks[i]);
        i = j + 1;
    }
}

/* A frame for host p: on its own link, or (started by another proxy) as
 * ROUTE(p) on the link of the top of its tree, forwarded down by proxies. */
static void send_to(struct mx_proxy *p, int type, const void *pl, size_t n)
{
    struct mx_rset *S = p->S;
    if (p->lost) return;
    if (p->parent < 0) {
        if (p->link.broken) return;
        mx_frame_begin(&p->link.out, type, n);
        mx_buf_put(&p->link.out, pl, n);
        mx_link_flush(&p->link);
        return;
    }
    struct mx_proxy *top = p;
    while (top->parent >= 0) top = &px[top->parent];
    if (top->lost || top->link.broken) return;
    mx_frame_begin(&top->link.out, MX_P_ROUTE, 4 + KUMI_LAUNCH_HDR_LEN + n);
    mx_buf_u32(&top->link.out, (uint32_t)(p - px));
    mx_frame_begin(&top->link.out, type, n);
    mx_buf_put(&top->link.out, pl, n);
    mx_link_flush(&top->link);
}

static void send_empty(struct mx_proxy *p, int type)
{
    send_to(p, type, NULL, 0);
}

static void host_lost(struct mx_proxy *p, const char *why)
{
    struct mx_rset *S = p->S;
    if (p->lost) return;
    p->lost = 1;
    char rl[400];
    rank_list(p, rl, sizeof rl);
    int running = 0;
    for (int i = 0; i < p->nranks; i++) running += J->ranks[p->ranks[i]].state == MX_RANK_RUNNING;
    (void)running;
    const char *said = p->errlen ? p->errline : p->lastline;   /* the agent's last words */
    if (!go_sent && rs_stopping(S)) {
        /* stopped by mpiexec before the start: nothing to report */
    } else if (!go_sent) {
        char w[1200];
        snprintf(w, sizeof w, "cannot start the proxy on host %s: %s%s%s", p->name, why, *said ? ": " : "", said);
        mx_msg("%s", w);
        rs_stop(S, 1, w);
    } else if (!p->bye && !p->ended) {
        mx_msg("host %s lost (%s%s%s): rank%s %s%s %s; stopping the job", p->name, why, *said ? ": " : "", said,
               p->nranks == 1 ? "" : "s", rl, S->ops ? " of a spawned job" : "", running ? "lost" : "had ended");
        rs_stop(S, 1, "a host was lost");
    }
    for (int i = 0; i < p->nranks; i++) {
        struct mx_rank *rk = &J->ranks[p->ranks[i]];
        if (rk->state != MX_RANK_EXITED) {
            rk->state = MX_RANK_EXITED;
            rk->status = SIGKILL;
        }
        for (int w = 0; w < 2; w++) mx_out_eof(p->ranks[i], &rk->out[w]);
    }
    if (!S->ops)                       /* a checkpoint in progress fails (ckpt.c) */
        for (int i = 0; i < p->nranks; i++) {
            char w[400];
            snprintf(w, sizeof w, "host %s was lost during the checkpoint (rank %d there)", p->name, p->ranks[i]);
            mx_ckpt_rank_lost(J, p->ranks[i], w);
        }
    if (p->agent > 0 && !p->agent_done) kill(p->agent, SIGKILL);
    p->link.eof = 1;
    /* the hosts it started are cut off with it */
    for (int h = 0; h < npx; h++)
        if (px[h].parent == p - px && !px[h].lost && !px[h].bye) {
            char w[300];
            snprintf(w, sizeof w, "started by host %s, which was lost", p->name);
            host_lost(&px[h], w);
        }
    mx_ctl_check_fence(J);
}

/* The whole table of a completed fence goes to every host. */
static void fence_done(struct mx_job *job, const struct mx_buf *tab)
{
    struct mx_rset *S = job->rset;
    for (int h = 0; h < npx; h++) {
        struct mx_proxy *p = &px[h];
        if (p->lost || p->link.broken || p->parent >= 0) continue;   /* proxies pass it down */
        mx_frame_begin(&p->link.out, KUMI_LAUNCH_MSG_FENCE_DONE, tab->len);
        mx_buf_put(&p->link.out, tab->data, tab->len);
        mx_link_flush(&p->link);
    }
    (void)job;
}

/* A frame for a rank's control connection, through its proxy */
static void to_rank(struct mx_job *job, int rank, const void *frame, size_t len)
{
    struct mx_rset *S = job->rset;
    for (int h = 0; h < npx; h++)
        for (int i = 0; i < px[h].nranks; i++)
            if (px[h].ranks[i] == rank) {
                struct mx_buf m = { 0 };
                mx_buf_u32(&m, (uint32_t)rank);
                mx_buf_put(&m, frame, len);
                send_to(&px[h], MX_P_TORANK, m.data, m.len);
                mx_buf_free(&m);
                return;
            }
}

static int my_rank(const struct mx_proxy *p, uint32_t r)
{
    for (int i = 0; i < p->nranks; i++)
        if ((uint32_t)p->ranks[i] == r) return 1;
    return 0;
}

static int on_frame(void *arg, int type, const unsigned char *pl, size_t n)
{
    struct mx_proxy *p = arg;
    struct mx_rset *S = p->S;
    struct mx_rd rd = { pl, n, 0, 0 };
    switch (type) {
    case MX_P_READY: {
        char *host = mx_rd_strdup(&rd);
        if (!host) return -1;
        if (J->verbose) mx_msg("host %s: proxy ready (%s)", p->name, host);
        free(host);
        if (!p->ready) {
            p->ready = 1;
            nready++;
        }
        return 0;
    }
    case MX_P_STARTED: {
        uint32_t r = mx_rd_u32(&rd), pid = mx_rd_u32(&rd);
        if (rd.bad || !my_rank(p, r)) return -1;
        J->ranks[r].pid = (pid_t)pid;
        return 0;
    }
    case MX_P_OUT: {
        uint32_t r = mx_rd_u32(&rd), w = mx_rd_u32(&rd);
        if (rd.bad || !my_rank(p, r) || w < 1 || w > 2) return -1;
        struct mx_out *o = &J->ranks[r].out[w - 1];
        if (n == rd.pos) mx_out_eof((int)r, o);
        else mx_out_data((int)r, o, (const char *)pl + rd.pos, n - rd.pos);
        return 0;
    }
    case MX_P_FENCE: {
        uint32_t nkv = mx_rd_u32(&rd);
        for (uint32_t i = 0; i < nkv && !rd.bad; i++) {
            uint32_t r = mx_rd_u32(&rd);
            char *k = mx_rd_strdup(&rd), *v = mx_rd_strdup(&rd);
            if (k && v && my_rank(p, r)) mx_ctl_kv_put(J, (int)r, k, v);
            else rd.bad = 1;
            free(k);
            free(v);
        }
        uint32_t nf = mx_rd_u32(&rd);
        for (uint32_t i = 0; i < nf && !rd.bad; i++) {
            uint32_t r = mx_rd_u32(&rd);
            if (!rd.bad && my_rank(p, r)) J->ranks[r].fences++;
        }
        if (rd.bad) return -1;
        mx_ctl_check_fence(J);
        return 0;
    }
    case MX_P_ABORT: {
        uint32_t r = mx_rd_u32(&rd);
        int code = (int32_t)mx_rd_u32(&rd);
        char *m = mx_rd_strdup(&rd);
        if (!m || !my_rank(p, r)) {
            free(m);
            return -1;
        }
        mx_rank_aborted(J, (int)r, code, m);
        free(m);
        return 0;
    }
    case MX_P_EXIT: {
        uint32_t r = mx_rd_u32(&rd), st = mx_rd_u32(&rd), fl = mx_rd_u32(&rd);
        if (rd.bad || !my_rank(p, r)) return -1;
        struct mx_rank *rk = &J->ranks[r];
        rk->connected = (fl & 1) != 0;
        rk->finalized = (fl & 2) != 0;
        if (rk->state == MX_RANK_RUNNING) {
            if (S->ops) S->ops->rank_exited(S->ctx, (int)r, (int)st);
            else mx_rank_exited((int)r, (int)st);
        }
        if (J->ckpt_gone_hook) J->ckpt_gone_hook(J, (int)r);   /* during a checkpoint: it failed */
        return 0;
    }
    case MX_P_CKPT: {              /* a rank's checkpoint answer, or its connection closed (ckpt.c) */
        uint32_t r = mx_rd_u32(&rd), t = mx_rd_u32(&rd);
        if (rd.bad || !my_rank(p, r)) return -1;
        if (t == 0) {
            if (J->ckpt_gone_hook) J->ckpt_gone_hook(J, (int)r);
        } else if (t == KUMI_LAUNCH_MSG_CKPT_READY || t == KUMI_LAUNCH_MSG_CKPT_DONE) {
            if (J->ckpt_frame_hook) J->ckpt_frame_hook(J, (int)r, (int)t, pl + rd.pos, n - rd.pos);
        } else {
            return -1;
        }
        return 0;
    }
    case MX_P_SPAWNREQ: {          /* MPI_Comm_spawn from a rank of that host */
        uint32_t r = mx_rd_u32(&rd);
        if (rd.bad || !my_rank(p, r)) return -1;
        if (J->spawn_hook) J->spawn_hook(J, (int)r, pl + rd.pos, n - rd.pos);
        return 0;
    }
    case MX_P_PONG:
        return 0;
    case MX_P_ERROR: {
        char *m = mx_rd_strdup(&rd);
        if (!m) return -1;
        mx_msg("host %s: %s", p->name, m);
        char w[1200];
        snprintf(w, sizeof w, "host %s: %s", p->name, m);
        free(m);
        rs_stop(S, 1, w);
        return 0;
    }
    case MX_P_BYE:
        p->bye = 1;
        if (p->parent >= 0) p->link.eof = 1;
        return 0;
    case MX_P_FROM: {                  /* from a host further down p's tree */
        uint32_t src = mx_rd_u32(&rd);
        if (rd.bad || src >= (uint32_t)npx || n - rd.pos < KUMI_LAUNCH_HDR_LEN) return -1;
        struct mx_proxy *q = &px[src];
        const unsigned char *f = pl + rd.pos;
        uint32_t fl = kumi_launch_get_u32(f);
        if (fl < 1 || fl != n - rd.pos - 4 || q->parent < 0) return -1;
        if (q->lost) return 0;
        q->link.last_rx = p->link.last_rx;
        if (f[4] == MX_P_LOST) {
            struct mx_rd r2 = { f + KUMI_LAUNCH_HDR_LEN, fl - 1, 0, 0 };
            char *why = mx_rd_strdup(&r2);
            if (!why) return -1;
            host_lost(q, why);
            free(why);
            return 0;
        }
        return on_frame(q, f[4], f + KUMI_LAUNCH_HDR_LEN, fl - 1);
    }
    default:
        return -1;
    }
}

static void start_agent(struct mx_proxy *p, char **av)
{
    pid_t pid = mx_agent_start(av, &p->link.rfd, &p->link.wfd, &p->errfd);
    if (pid < 0) {
        mx_msg("cannot start the proxy of host %s: %s", p->name, strerror(errno));
        exit(1);
    }
    p->agent = pid;
}

/* kumi_proxy next to this mpiexec (also in the build tree, where mpiexec
 * may run from .libs), else the installed one; KUMI_PROXY overrides. */
static const char *proxy_path(void)
{
    static char path[PATH_MAX];
    const char *e = getenv("KUMI_PROXY");
    if (e && *e) return e;
    char self[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
    if (l > 0) {
        self[l] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            size_t dl = strlen(self);
            if (dl >= 6 && strcmp(self + dl - 6, "/.libs") == 0) self[dl - 6] = 0;
            snprintf(path, sizeof path, "%s/kumi_proxy", self);
            if (access(path, X_OK) == 0) return path;
        }
    }
    snprintf(path, sizeof path, "%s/kumi_proxy", KUMI_BINDIR);
    return path;
}

static const char *agent_command(void)
{
    if (mx_opt.agent) return mx_opt.agent;
    for (int j = mx_opt.nparams - 1; j >= 0; j--)
        if (strncmp(mx_opt.params[j], "KUMI_RPIM_SSH_AGENT=", 20) == 0 && mx_opt.params[j][20])
            return mx_opt.params[j] + 20;
    /* parameter rpim_ssh_agent (registered by rpim/fork, so that kumi_info
     * lists it): KUMI_RPIM_SSH_AGENT, then the params.conf files */
    static const char *reg;
    if (kumi_param_register_string("rpim", NULL, "ssh_agent", "", "mpiexec: launch agent", KUMI_LEVEL_USER, &reg) ==
            MPI_SUCCESS && reg && *reg)
        return reg;
    const char *e = getenv("KUMI_RPIM_SSH_AGENT");
    if (e && *e) return e;
    if (mx_opt.launcher && strcmp(mx_opt.launcher, "rsh") == 0) return "rsh";
    return "ssh -x -o BatchMode=yes";
}

/* Start the proxies of set S for job: hosts[h] (its name, the argv and
 * environment of its ranks, their folder), rank r on hosts[host_of[r]]. */
static void rset_start(struct mx_rset *S, struct mx_job *job, int nh, const struct mx_rset_host *hosts,
                       const int *host_of, int stdin_wanted)
{
    J = job;
    job->fence_done_hook = fence_done;
    job->rank_frame_hook = to_rank;
    job->rset = S;
    npx = nh;
    px = mx_xcalloc((size_t)npx, sizeof *px);
    for (int r = 0; r < job->n; r++) px[host_of[r]].nranks++;
    for (int h = 0; h < npx; h++) {
        px[h].S = S;
        px[h].name = hosts[h].name;
        px[h].ranks = mx_xcalloc((size_t)px[h].nranks, sizeof(int));
        px[h].nranks = 0;
        px[h].errfd = -1;
        px[h].link.rfd = px[h].link.wfd = -1;
    }
    for (int r = 0; r < job->n; r++) {
        struct mx_proxy *p = &px[host_of[r]];
        p->ranks[p->nranks++] = r;
        job->ranks[r].state = MX_RANK_RUNNING;
        for (int w = 0; w < 2; w++) {
            job->ranks[r].out[w].fd = -1;
            job->ranks[r].out[w].which = w + 1;
        }
    }
    int fork_mode = mx_opt.launcher && strcmp(mx_opt.launcher, "fork") == 0 && !mx_opt.agent;
    const char *proxy = proxy_path();
    const char *agent = agent_command();
    char jid[32], size[32];
    snprintf(jid, sizeof jid, "%ld", job->jobid);
    snprintf(size, sizeof size, "%d", job->n);
    double now = mx_now();
    /* the tree: hosts with ranks in order; the first `fanout` are started
     * by mpiexec, host j (j >= fanout) by host j/fanout - 1 (fanout
     * children each): start-up in log(hosts) steps */
    int slurm = mx_opt.launcher && !strcmp(mx_opt.launcher, "slurm") && !mx_opt.agent && !S->ops;
    int fanout = slurm ? npx : mx_opt.fanout > 0 ? mx_opt.fanout : 32;   /* srun starts them all */
    int *act = mx_xcalloc((size_t)npx, sizeof *act), nact = 0;
    for (int h = 0; h < npx; h++) {
        px[h].parent = -1;
        if (px[h].nranks == 0) {       /* no rank there: not started */
            px[h].ready = px[h].bye = px[h].agent_done = 1;
            px[h].link.eof = 1;
            nready++;
            continue;
        }
        if (nact >= fanout) px[h].parent = act[nact / fanout - 1];
        act[nact++] = h;
    }
    if (slurm && nact) {                   /* one srun for every proxy (slurm.c) */
        char **nm = mx_xcalloc((size_t)nact, sizeof *nm);
        int *fds = mx_xcalloc((size_t)nact, sizeof *fds);
        for (int j = 0; j < nact; j++) nm[j] = (char *)px[act[j]].name;
        pid_t ag = -1;
        int ef = -1;
        if (mx_slurm_launch(nact, nm, proxy, job->secret, fds, &ag, &ef, job->verbose > 1) < 0) exit(1);
        for (int j = 0; j < nact; j++) px[act[j]].link.rfd = px[act[j]].link.wfd = fds[j];
        px[act[0]].agent = ag;             /* srun: its exit, its stderr */
        px[act[0]].errfd = ef;
        for (int j = 1; j < nact; j++) px[act[j]].agent_done = 1;
        free(nm);
        free(fds);
    }
    for (int j = 0; j < nact; j++) {
        int h = act[j];
        struct mx_proxy *p = &px[h];
        p->link.last_rx = now;
        p->last_ping = now;
        if (slurm) {
            /* started above */
        } else if (p->parent < 0) {
            char **av = mx_agent_argv(agent, p->name, proxy, fork_mode);
            if (job->verbose > 1) {
                char b[1024] = "";
                for (int i = 0; av[i]; i++) snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s", i ? " " : "", av[i]);
                mx_msg("host %s: starting %s", p->name, b);
            }
            start_agent(p, av);
            mx_agent_argv_free(av);
        } else {
            /* its parent starts it; the parent forwards what goes to any
             * host below that child */
            struct mx_buf s = { 0 };
            mx_buf_u32(&s, (uint32_t)h);
            mx_buf_str(&s, p->name, strlen(p->name));
            int nd = 0;
            for (int k = j; k < nact; k++) {
                int a = act[k];
                while (a >= 0 && a != h) a = px[a].parent;
                nd += a == h;
            }
            mx_buf_u32(&s, (uint32_t)nd);
            for (int k = j; k < nact; k++) {
                int a = act[k];
                while (a >= 0 && a != h) a = px[a].parent;
                if (a == h) mx_buf_u32(&s, (uint32_t)act[k]);
            }
            if (job->verbose > 1) mx_msg("host %s: started by the proxy of host %s", p->name, px[p->parent].name);
            send_to(&px[p->parent], MX_P_SPAWN, s.data, s.len);
            mx_buf_free(&s);
        }
        const struct mx_rset_host *hh = &hosts[h];
        int argc = 0;
        while (hh->argv[argc]) argc++;
        struct mx_buf m = { 0 };
        mx_buf_u32(&m, (uint32_t)h);
        mx_buf_u32(&m, (uint32_t)npx);
        mx_buf_u32(&m, (uint32_t)p->nranks);
        for (int i = 0; i < p->nranks; i++) mx_buf_u32(&m, (uint32_t)p->ranks[i]);
        mx_buf_str(&m, job->secret, strlen(job->secret));
        mx_buf_str(&m, jid, strlen(jid));
        mx_buf_str(&m, size, strlen(size));
        mx_buf_str(&m, hh->wdir, strlen(hh->wdir));
        mx_buf_u32(&m, (uint32_t)((stdin_wanted && p->ranks[0] == 0) | (hh->wdir_given ? 2 : 0) |
                                    (S == &mainset && mx_opt.report_bindings ? 4 : 0)));
        mx_buf_u32(&m, (uint32_t)argc);
        for (int i = 0; i < argc; i++) mx_buf_str(&m, hh->argv[i], strlen(hh->argv[i]));
        mx_buf_u32(&m, (uint32_t)hh->envc);
        for (int i = 0; i < hh->envc; i++) mx_buf_str(&m, hh->env[i], strlen(hh->env[i]));
        mx_buf_str(&m, agent, strlen(agent));
        mx_buf_str(&m, proxy, strlen(proxy));
        mx_buf_u32(&m, (uint32_t)fork_mode);
        mx_buf_u32(&m, (uint32_t)S->bind);
        mx_buf_u32(&m, (uint32_t)S->overload);
        if (S == &mainset && mx_ckpt_image(0)) {     /* --restart: kumi_restart IMAGE per rank */
            mx_buf_u32(&m, (uint32_t)p->nranks);
            for (int i = 0; i < p->nranks; i++) {
                const char *img = mx_ckpt_image(p->ranks[i]);
                mx_buf_str(&m, img, strlen(img));
            }
        }
        send_to(p, MX_P_START, m.data, m.len);
        mx_buf_free(&m);
    }
    free(act);
}

void mx_remote_start(struct mx_job *job, const int *host_of, char **argv, char **env, int rank_slot,
                     int stdin_wanted)
{
    char cwd[PATH_MAX];
    const char *wdir = mx_opt.wdir ? mx_opt.wdir : getcwd(cwd, sizeof cwd) ? cwd : "/";
    int envc = 0;
    while (env[envc] && envc < rank_slot) envc++;
    struct mx_rset_host *hosts = mx_xcalloc((size_t)mx_opt.hosts.n, sizeof *hosts);
    for (int h = 0; h < mx_opt.hosts.n; h++)
        hosts[h] = (struct mx_rset_host){ mx_opt.hosts.h[h].name, argv, env, envc, wdir, mx_opt.wdir != NULL };
    mainset.bind = (int)mx_opt.bind;
    mainset.overload = mx_opt.overload;
    rset_start(&mainset, job, mx_opt.hosts.n, hosts, host_of, stdin_wanted);
    free(hosts);
}

struct mx_rset *mx_rset_start(struct mx_job *job, int nh, const struct mx_rset_host *hosts, const int *host_of,
                              const struct mx_rset_ops *ops, void *ctx)
{
    struct mx_rset *S = mx_xcalloc(1, sizeof *S);
    S->ops = ops;
    S->ctx = ctx;
    S->bind = MX_BIND_NONE;
    rset_start(S, job, nh, hosts, host_of, 0);
    return S;
}

int mx_rset_started(struct mx_rset *S)
{
    return go_sent;
}

void mx_rset_signal(struct mx_rset *S, int sig)
{
    for (int h = 0; h < npx; h++) {
        struct mx_proxy *p = &px[h];
        if (p->lost || p->link.broken || p->link.eof || p->parent >= 0) continue;   /* passed down */
        if (!go_sent) {
            if (p->agent > 0 && !p->agent_done) kill(p->agent, sig == SIGKILL ? SIGKILL : SIGTERM);
            continue;
        }
        unsigned char b[4];
        kumi_launch_put_u32(b, (uint32_t)sig);
        send_to(p, MX_P_SIGNAL, b, 4);
    }
}

const char *mx_remote_host_of(int rank)
{
    struct mx_rset *S = &mainset;
    for (int h = 0; h < npx; h++)
        for (int i = 0; i < px[h].nranks; i++)
            if (px[h].ranks[i] == rank) return px[h].name;
    return NULL;
}

int mx_remote_running_on(const char *host)
{
    struct mx_rset *S = &mainset;
    int n = 0;
    for (int h = 0; h < npx; h++)
        if (!strcmp(px[h].name, host) || (mx_host_is_local(px[h].name) && mx_host_is_local(host)))
            for (int i = 0; i < px[h].nranks; i++) n += J->ranks[px[h].ranks[i]].state == MX_RANK_RUNNING;
    return n;
}

void mx_remote_signal(int sig)
{
    mx_rset_signal(&mainset, sig);
}

/* stdin for rank 0 (n == 0: end of input); 0 when its host cannot take
 * more now (poll stdin again later) */
int mx_remote_stdin_room(void)
{
    struct mx_rset *S = &mainset;
    if (!go_sent) return 0;
    for (int h = 0; h < npx; h++)
        if (px[h].nranks && px[h].ranks[0] == 0) {
            struct mx_proxy *top = &px[h];
            while (top->parent >= 0) top = &px[top->parent];
            return mx_link_queued(&top->link) < MX_LINK_HIGH;
        }
    return 1;
}

void mx_remote_stdin(const char *b, size_t n)
{
    struct mx_rset *S = &mainset;
    for (int h = 0; h < npx; h++) {
        struct mx_proxy *p = &px[h];
        if (!p->nranks || p->ranks[0] != 0 || p->lost) continue;
        send_to(p, MX_P_STDIN, b, n);
    }
}

/* After every rank exited: tell each proxy that the job is over. */
void mx_remote_end(void)
{
    mx_rset_end(&mainset);
}

void mx_rset_end(struct mx_rset *S)
{
    for (int h = 0; h < npx; h++)
        if (!px[h].ended) {
            px[h].ended = 1;
            if (px[h].parent < 0) send_empty(&px[h], MX_P_END);   /* passed down */
        }
}

/* Links still open (a proxy that has not said BYE) */
int mx_remote_open(void)
{
    return mx_rset_open(&mainset);
}

int mx_rset_open(struct mx_rset *S)
{
    int n = 0;
    for (int h = 0; h < npx; h++) n += !px[h].link.eof || px[h].errfd >= 0;
    return n;
}

void mx_remote_kill(void)
{
    mx_rset_kill(&mainset);
}

void mx_rset_kill(struct mx_rset *S)
{
    for (int h = 0; h < npx; h++) {
        struct mx_proxy *p = &px[h];
        if (p->agent > 0 && !p->agent_done) kill(p->agent, SIGKILL);
        p->link.eof = 1;
        if (p->errfd >= 0) close(p->errfd);
        p->errfd = -1;
    }
}

static ssize_t agent_stderr(struct mx_proxy *p);

int mx_remote_reaped(pid_t pid, int status)
{
    return mx_rset_reaped(&mainset, pid, status);
}

int mx_rset_reaped(struct mx_rset *S, pid_t pid, int status)
{
    for (int h = 0; h < npx; h++) {
        struct mx_proxy *p = &px[h];
        if (p->agent != pid) continue;
        p->agent_done = 1;
        p->agent_status = status;
        /* what it said before it went */
        if (!p->link.eof) mx_link_read(&p->link, mx_now(), on_frame, p);
        if (!p->bye && !p->lost) {
            char why[128];
            if (WIFEXITED(status)) snprintf(why, sizeof why, "its launch agent exited with status %d", WEXITSTATUS(status));
            else snprintf(why, sizeof why, "its launch agent was killed by signal %d", WTERMSIG(status));
            /* the agent's last words (ssh: why it failed) */
            while (p->errfd >= 0 && agent_stderr(p) > 0) {}
            host_lost(p, why);
        }
        return 1;
    }
    return 0;
}

/* Lines the agent writes to stderr (ssh's complaints, the proxy's own
 * messages) are shown with the host's name; the last is kept for a report. */
static ssize_t agent_stderr(struct mx_proxy *p)
{
    char b[4096];
    ssize_t n = read(p->errfd, b, sizeof b);
    if (n <= 0) {
        if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            close(p->errfd);
            p->errfd = -1;
        }
        return n;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (b[i] == '\n') {
            p->errline[p->errlen] = 0;
            if (p->errlen) {
                mx_msg("host %s: %s", p->name, p->errline);
                memcpy(p->lastline, p->errline, p->errlen + 1);
            }
            p->errlen = 0;
            continue;
        }
        if (b[i] == '\r') continue;
        if (p->errlen < sizeof p->errline - 1) p->errline[p->errlen++] = b[i];
        p->errline[p->errlen] = 0;
    }
    return n;
}

size_t mx_remote_pollset(struct pollfd *pfd, int *aux, int room)
{
    return mx_rset_pollset(&mainset, pfd, aux, room);
}

size_t mx_rset_pollset(struct mx_rset *S, struct pollfd *pfd, int *aux, int room)
{
    size_t n = 0;
    for (int h = 0; h < npx; h++) {
        struct mx_proxy *p = &px[h];
        if (p->parent >= 0) continue;  /* reached through its tree */
        if (!p->link.eof && room) {
            pfd[n] = (struct pollfd){ .fd = p->link.rfd, .events = POLLIN };
            aux[n++] = 3 * h;
        }
        if (!p->link.broken && !p->link.eof && mx_link_queued(&p->link)) {
            pfd[n] = (struct pollfd){ .fd = p->link.wfd, .events = POLLOUT };
            aux[n++] = 3 * h + 1;
        }
        if (p->errfd >= 0) {
            pfd[n] = (struct pollfd){ .fd = p->errfd, .events = POLLIN };
            aux[n++] = 3 * h + 2;
        }
    }
    return n;
}

size_t mx_remote_maxfds(void)
{
    return mx_rset_maxfds(&mainset);
}

size_t mx_rset_maxfds(struct mx_rset *S)
{
    return 3 * (size_t)npx;
}

void mx_remote_event(int aux, short re, double now)
{
    mx_rset_event(&mainset, aux, re, now);
}

void mx_rset_event(struct mx_rset *S, int aux, short re, double now)
{
    struct mx_proxy *p = &px[aux / 3];
    switch (aux % 3) {
    case 0:
        if (p->link.eof) return;
        /* before READY, the agent's exit (reaped) says why, with its
         * last words (ssh: "Could not resolve hostname") */
        if (mx_link_read(&p->link, now, on_frame, p) < 0 && !p->bye && p->ready)
            host_lost(p, "its proxy's connection closed");
        break;
    case 1:
        if (mx_link_flush(&p->link) < 0 && !p->bye && !p->ended) host_lost(p, "cannot write to its proxy");
        break;
    case 2:
        agent_stderr(p);
        break;
    }
    (void)re;
}

/* Pings, host timeouts, and GO once every host is ready; returns the next
 * time something is due. */
double mx_remote_timers(double now)
{
    return mx_rset_timers(&mainset, now);
}

double mx_rset_timers(struct mx_rset *S, double now)
{
    if (!go_sent && nready == npx && !rs_stopping(S)) {
        go_sent = 1;
        for (int h = 0; h < npx; h++)
            if (px[h].parent < 0) send_empty(&px[h], MX_P_GO);     /* passed down */
    }
    double next = now + MX_PING_EVERY;
    for (int h = 0; h < npx; h++) {
        struct mx_proxy *p = &px[h];
        if (p->agent > 0 && p->link.eof && !p->ready && !p->lost && !p->agent_done &&
            now - p->link.last_rx > mx_opt.host_timeout)
            kill(p->agent, SIGKILL);       /* its agent's exit reports it */
        if (p->lost || p->link.eof || p->bye) continue;
        if (now - p->link.last_rx > mx_opt.host_timeout + (go_sent ? 0 : 30.0)) {
            char why[96];
            snprintf(why, sizeof why, "no word from its proxy for %g seconds", mx_opt.host_timeout);
            host_lost(p, why);
            continue;
        }
        if (now - p->last_ping >= MX_PING_EVERY && p->parent < 0) {
            p->last_ping = now;
            send_empty(p, MX_P_PING);
        }
    }
    return next;
}
