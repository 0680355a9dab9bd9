/* mpiexec: jobs spawned by a rank (MPI_Comm_spawn / _multiple; the rank's
 * side is kumi_rpim_spawn, kumi/rpim.h; the SPAWN message:
 * kumi/launch_proto.h).
 *
 * A SPAWN starts ONE new job of all its commands' children: its own
 * MPI_COMM_WORLD (the total maxprocs, ranks in command order), its own job
 * id ((k << 32) | the main job's id, for the k-th spawned job: never the
 * id of another mpiexec's job, which is that mpiexec's pid), secret,
 * control channel and key-value table, so its fences are its own.  Its
 * ranks on this host are started through rpim/fork like the main job's,
 * unbound, stdin from /dev/null; when any of them goes to another host (or
 * with --launcher fork) all of them run behind proxies of the new job's own
 * (remote.c's struct mx_rset: one proxy per command and host, as a proxy
 * runs one program).  Their output is relayed like the main job's
 * (--tag-output: "[<main job id>.<k>,<rank>]").  Each child gets the
 * environment of the main job's ranks, its own launch variables and
 * KUMI_SPAWNED=1, KUMI_PARENT_JOBID, KUMI_APPNUM (the command's index) and
 * the request's KEY=VALUE strings.  A request from a rank behind a proxy
 * comes as SPAWNREQ through it; the answer goes back as TORANK.
 *
 * Placement (place_cmd): on the hosts the info keys name (host, add-host,
 * hostfile, add-hostfile, file), else on those of the job's -host /
 * --hostfile, filling the slots left free by the ranks (of every job)
 * still running there and by the request's earlier children; more needs
 * --oversubscribe (round robin).  Without any host list: this host, no
 * limit, as for a normal launch.  The program is looked up in the info's
 * path, then in PATH (relative names from the info's wdir, where the
 * children start, else from mpiexec's folder).  All or nothing: a command
 * that cannot start fails the whole request (nothing starts; the parent
 * job goes on); across hosts the answer waits until every proxy of the
 * new job is ready, so an unreachable host fails the request too.
 *
 * Fate (as Open MPI): an MPI_Abort in a spawned job stops everything
 * (every job; mpiexec exits with the abort's code); a spawned rank that
 * fails (non-zero exit, signal, exit without MPI_Finalize) stops its own
 * job only, is reported, and mpiexec's exit status is then non-zero (that
 * of the first failure); when mpiexec stops the main job (its failure,
 * MPI_Abort, a signal, --timeout) the spawned jobs are stopped with it.
 * mpiexec exits only once every job has ended. */
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
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <kumi/rpim.h>
#include "mpiexec.h"

#define MX_SPAWN_GRACE 1.0            /* seconds between SIGTERM and SIGKILL */

struct mx_cjob {
    struct mx_job job;
    char **host;                      /* per rank: its host's name (NULL: this host) */
    struct mx_rset *rs;               /* its proxies, when its ranks run behind them (remote.c) */
    int ended;                        /* rs: END sent */
    /* rs: the answer to the request waits until every proxy is ready */
    struct mx_job *req_job;           /* NULL: answered */
    int req_rank, req_total;
    int no;                           /* k: the k-th spawned job */
    int stopping, killed_hard, done;
    double kill_deadline;
    struct mx_cjob *next;
};

static struct mx_cjob *cjobs, **cjobs_tail = &cjobs;
static int ncjobs;

/* poll entries of the last mx_spawn_pollset */
struct sp_tag {
    struct mx_cjob *cj;
    int kind;                         /* 0 listener, 1 connection, 2 output pipe, 3 proxies (rank: aux) */
    int rank, which;
    struct mx_conn *conn;
};
static struct sp_tag *tags;
static size_t ntags, captags;

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void jobname(const struct mx_cjob *cj, char *b, size_t len)
{
    snprintf(b, len, "%ld.%d", mx_job_main.jobid, cj->no);
}

/* ------------------------------------------------------------ placement */

/* Look prog up like execvp, in path (may be NULL) then PATH; relative
 * names with a '/' are taken from dir.  Returns KUMI_LAUNCH_SPAWN_OK with
 * *out malloc'ed, or NOT_FOUND / NOT_EXEC. */
static uint32_t find_program(const char *prog, const char *path, const char *dir, char **out)
{
    struct stat st;
    int noexec = 0;
    if (strchr(prog, '/')) {
        char *cand = mx_xcalloc(1, strlen(prog) + (dir ? strlen(dir) : 0) + 2);
        if (prog[0] != '/' && dir) sprintf(cand, "%s/%s", dir, prog);
        else strcpy(cand, prog);
        if (stat(cand, &st) < 0) {
            free(cand);
            return KUMI_LAUNCH_SPAWN_NOT_FOUND;
        }
        if (S_ISDIR(st.st_mode) || access(cand, X_OK) < 0) {
            free(cand);
            return KUMI_LAUNCH_SPAWN_NOT_EXEC;
        }
        char *abs = realpath(cand, NULL);
        if (abs) {
            free(cand);
            cand = abs;
        }
        *out = cand;
        return KUMI_LAUNCH_SPAWN_OK;
    }
    const char *sys = getenv("PATH");
    if (!sys) sys = "/usr/local/bin:/usr/bin:/bin";
    for (int w = 0; w < 2; w++) {
        const char *p = w ? sys : path;
        if (!p || !*p) continue;
        for (;;) {
            const char *colon = strchr(p, ':');
            size_t dl = colon ? (size_t)(colon - p) : strlen(p);
            char *cand = mx_xcalloc(1, dl + strlen(prog) + (dir ? strlen(dir) : 0) + 4);
            if (dl == 0) sprintf(cand, "%s/%s", dir ? dir : ".", prog);
            else if (p[0] != '/' && dir) sprintf(cand, "%s/%.*s/%s", dir, (int)dl, p, prog);
            else sprintf(cand, "%.*s/%s", (int)dl, p, prog);
            if (stat(cand, &st) == 0 && !S_ISDIR(st.st_mode)) {
                if (access(cand, X_OK) == 0) {
                    char *abs = realpath(cand, NULL);
                    if (abs) {
                        free(cand);
                        cand = abs;
                    }
                    *out = cand;
                    return KUMI_LAUNCH_SPAWN_OK;
                }
                noexec = 1;
            }
            free(cand);
            if (!colon) break;
            p = colon + 1;
        }
    }
    return noexec ? KUMI_LAUNCH_SPAWN_NOT_EXEC : KUMI_LAUNCH_SPAWN_NOT_FOUND;
}

static int same_host(const char *a, const char *b)
{
    if (!a || !b) return !a && !b;
    return !strcmp(a, b) || (mx_host_is_local(a) && mx_host_is_local(b));
}

/* ranks of every job still running on host (NULL: this host) */
static int running_on(const char *host)
{
    int n = 0;
    if (mx_remote_mode()) n += mx_remote_running_on(host ? host : "localhost");
    else if (!host || mx_host_is_local(host))
        for (int r = 0; r < mx_job_main.n; r++) n += mx_job_main.ranks[r].state == MX_RANK_RUNNING;
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next)
        for (int r = 0; r < cj->job.n; r++)
            if (cj->job.ranks[r].state == MX_RANK_RUNNING &&
                same_host(cj->host[r] ? cj->host[r] : "localhost", host ? host : "localhost"))
                n++;
    return n;
}

/* Check one command: its info keys, program.  Returns a KUMI_LAUNCH_SPAWN_*
 * code, msg filled on failure; *prog, *wdir (may be NULL) and *hl (the
 * info's hosts, maybe none) set on success. */
static uint32_t check_cmd(const struct mx_spawn_cmd *c, int idx, char **prog, char **wdir, struct mx_hostlist *hl,
                          char *msg, size_t ml)
{
    const char *path = NULL, *wd = NULL;
    char err[600];
    uint32_t rc = KUMI_LAUNCH_SPAWN_OK;
    *prog = *wdir = NULL;
    memset(hl, 0, sizeof *hl);
    for (int k = 0; k < c->ninfo && rc == KUMI_LAUNCH_SPAWN_OK; k++) {
        const char *key = c->ikeys[k], *val = c->ivals[k];
        if (!strcmp(key, "host") || !strcmp(key, "add-host")) {
            if (mx_hosts_add_spec(hl, val, err, sizeof err) < 0) {
                snprintf(msg, ml, "command %d: info %s=%s: %s", idx, key, val, err);
                rc = KUMI_LAUNCH_SPAWN_BAD_INFO;
            }
        } else if (!strcmp(key, "hostfile") || !strcmp(key, "add-hostfile") || !strcmp(key, "file")) {
            if (mx_hosts_read_file(hl, val, err, sizeof err) < 0) {
                snprintf(msg, ml, "command %d: info %s=%s: %s", idx, key, val, err);
                rc = KUMI_LAUNCH_SPAWN_BAD_INFO;
            }
        } else if (!strcmp(key, "wdir")) {
            wd = val;
        } else if (!strcmp(key, "path")) {
            path = val;
        }
    }
    int all_local = 1;
    for (int h = 0; h < hl->n; h++) all_local &= mx_host_is_local(hl->h[h].name);
    if (!hl->n && mx_hosts_user)
        for (int h = 0; h < mx_opt.hosts.n; h++) all_local &= mx_host_is_local(mx_opt.hosts.h[h].name);
    if (rc == KUMI_LAUNCH_SPAWN_OK && wd) {
        /* on this host it must exist; on others the proxy checks it */
        struct stat st;
        if (wd[0] != '/' || (all_local && (stat(wd, &st) < 0 || !S_ISDIR(st.st_mode)))) {
            snprintf(msg, ml, "command %d: info wdir=%s: %s", idx, wd, wd[0] != '/' ? "not an absolute path" :
                     stat(wd, &st) < 0 ? strerror(errno) : "not a folder");
            rc = KUMI_LAUNCH_SPAWN_BAD_INFO;
        } else {
            *wdir = all_local ? realpath(wd, NULL) : NULL;
            if (!*wdir) *wdir = mx_xstrdup(wd);
        }
    }
    if (rc == KUMI_LAUNCH_SPAWN_OK) {
        rc = find_program(c->prog, path, *wdir, prog);
        if (rc != KUMI_LAUNCH_SPAWN_OK)
            snprintf(msg, ml, "command %d: %s '%s'%s", idx,
                     rc == KUMI_LAUNCH_SPAWN_NOT_EXEC ? "cannot execute" : "cannot find program", c->prog,
                     path && !strchr(c->prog, '/') ? " in the info's path or PATH" :
                     !strchr(c->prog, '/') ? " in PATH" : "");
    }
    if (rc != KUMI_LAUNCH_SPAWN_OK) {
        free(*wdir);
        *wdir = NULL;
        mx_hosts_free(hl);
    }
    return rc;
}

/* Place the children of command idx: host[r0 .. r0+maxprocs) (NULL: this
 * host, no host list at all).  Candidates: the info's hosts, else those of
 * the job's -host/--hostfile; free slots: their slots less the ranks still
 * running there and those placed before in this request; beyond that only
 * with --oversubscribe (round robin over the candidates). */
static uint32_t place_cmd(const struct mx_spawn_cmd *c, int idx, const struct mx_hostlist *info, const char **host,
                          int r0, char *msg, size_t ml)
{
    const struct mx_hostlist *hl = info->n ? info : mx_hosts_user ? &mx_opt.hosts : NULL;
    if (!hl) {
        for (int m = 0; m < c->maxprocs; m++) host[r0 + m] = NULL;
        return KUMI_LAUNCH_SPAWN_OK;
    }
    int *free_ = mx_xcalloc((size_t)hl->n, sizeof *free_);
    long total = 0;
    for (int h = 0; h < hl->n; h++) {
        const char *name = hl->h[h].name;
        int used = running_on(name);
        for (int r = 0; r < r0; r++) used += host[r] && same_host(host[r], name);
        free_[h] = used >= hl->h[h].slots ? 0 : hl->h[h].slots - used;
        total += free_[h];
    }
    if (c->maxprocs > total && !mx_opt.overload) {
        snprintf(msg, ml, "command %d: %d process%s asked for, %ld free slot%s on %s (--oversubscribe allows more)",
                 idx, c->maxprocs, c->maxprocs == 1 ? "" : "es", total, total == 1 ? "" : "s",
                 info->n ? "the hosts of its info" : "the job's hosts");
        free(free_);
        return KUMI_LAUNCH_SPAWN_NO_SLOTS;
    }
    int h = 0;
    for (int m = 0; m < c->maxprocs; m++) {
        int k;
        for (k = 0; k < hl->n && !free_[(h + k) % hl->n]; k++) {}
        if (k < hl->n) {
            h = (h + k) % hl->n;
            free_[h]--;
            host[r0 + m] = hl->h[h].name;
        } else {
            host[r0 + m] = hl->h[m % hl->n].name;   /* oversubscribed */
        }
    }
    free(free_);
    return KUMI_LAUNCH_SPAWN_OK;
}

/* ------------------------------------------------------------ job control */

static void cjob_signal(struct mx_cjob *cj, int sig, int all)
{
    if (cj->rs) {                     /* its proxies signal its ranks */
        mx_rset_signal(cj->rs, sig);
        return;
    }
    for (int r = 0; r < cj->job.n; r++) {
        struct mx_rank *rk = &cj->job.ranks[r];
        if (rk->pid <= 0) continue;
        if (rk->state == MX_RANK_RUNNING || all)
            if (killpg(rk->pid, sig) < 0 && errno == ESRCH && rk->state == MX_RANK_RUNNING) kill(rk->pid, sig);
    }
}

static void cjob_stop(struct mx_cjob *cj, int sig)
{
    if (cj->stopping) return;
    cj->stopping = 1;
    cjob_signal(cj, sig, 0);
    cj->kill_deadline = mx_now() + MX_SPAWN_GRACE;
}

void mx_spawn_signal(int sig, int all)
{
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next) {
        if (!cj->stopping) {
            cj->stopping = 1;
            cj->kill_deadline = mx_now() + MX_SPAWN_GRACE;
        }
        if (sig == SIGKILL) cj->killed_hard = 1;
        cjob_signal(cj, sig, all);
    }
}

static struct mx_cjob *cjob_of(const struct mx_job *j)
{
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next)
        if (&cj->job == j) return cj;
    return NULL;
}

void mx_spawn_aborted(struct mx_job *j, int rank, int code, const char *msg)
{
    struct mx_cjob *cj = cjob_of(j);
    if (!cj || mx_stopping()) return;
    char jn[64];
    jobname(cj, jn, sizeof jn);
    if (msg && msg[0]) mx_msg("rank %d of spawned job %s called MPI_Abort(MPI_COMM_WORLD, %d): %s", rank, jn, code, msg);
    else mx_msg("rank %d of spawned job %s called MPI_Abort(MPI_COMM_WORLD, %d)", rank, jn, code);
    int ec = code & 255;
    mx_stop_job(ec ? ec : 1, SIGTERM);   /* everything connected ends: every job */
}

void mx_spawn_fence_dead(struct mx_job *j, int r)
{
    struct mx_cjob *cj = cjob_of(j);
    if (!cj || cj->stopping || mx_stopping()) return;
    char jn[64];
    jobname(cj, jn, sizeof jn);
    mx_msg("rank %d (pid %d) of spawned job %s exited without %s while other ranks wait for it in MPI_Init; "
           "stopping that job", r, (int)j->ranks[r].pid, jn,
           j->ranks[r].connected ? "completing MPI_Init" : "calling MPI_Init");
    mx_note_failure(1);
    cjob_stop(cj, SIGTERM);
}

static void rank_exited(struct mx_cjob *cj, int r, int status)
{
    struct mx_job *j = &cj->job;
    struct mx_rank *rk = &j->ranks[r];
    rk->state = MX_RANK_EXITED;
    rk->status = status;
    mx_out_read(r, &rk->out[0], 1);
    mx_out_read(r, &rk->out[1], 1);
    mx_ctl_drain_rank(j, r);
    if (cj->stopping || mx_stopping()) return;
    char jn[64], what[160];
    jobname(cj, jn, sizeof jn);
    int code = 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        code = WEXITSTATUS(status);
        snprintf(what, sizeof what, "exited with status %d", code);
    } else if (WIFSIGNALED(status)) {
        code = 128 + WTERMSIG(status);
        snprintf(what, sizeof what, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else if (rk->connected && !rk->finalized) {
        code = 1;
        snprintf(what, sizeof what, "exited without calling MPI_Finalize");
    }
    if (code) {
        mx_msg("rank %d (pid %d) of spawned job %s %s; stopping that job (the other jobs go on)", r, (int)rk->pid, jn,
               what);
        mx_note_failure(code);
        cjob_stop(cj, SIGTERM);
        return;
    }
    if (j->verbose > 1) mx_msg("rank %d (pid %d) of spawned job %s exited with status 0", r, (int)rk->pid, jn);
    mx_ctl_check_fence(j);
}

int mx_spawn_reaped(pid_t pid, int status)
{
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next)
        if (cj->rs && mx_rset_reaped(cj->rs, pid, status)) return 1;   /* a launch agent */
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next)
        for (int r = 0; r < cj->job.n && !cj->rs; r++)       /* (behind proxies: their pids are not ours) */
            if (cj->job.ranks[r].pid == pid && cj->job.ranks[r].state == MX_RANK_RUNNING) {
                rank_exited(cj, r, status);
                return 1;
            }
    return 0;
}

/* A job whose ranks all exited and whose pipes are closed is over: its
 * shared memory and control channel go. */
static void cjob_check_done(struct mx_cjob *cj)
{
    if (cj->done) return;
    for (int r = 0; r < cj->job.n; r++) {
        struct mx_rank *rk = &cj->job.ranks[r];
        if (rk->state == MX_RANK_RUNNING || rk->out[0].fd >= 0 || rk->out[1].fd >= 0) return;
    }
    if (cj->rs) {                     /* the proxies send what is left, then BYE */
        if (!cj->ended) {
            cj->ended = 1;
            mx_rset_end(cj->rs);
        }
        if (mx_rset_open(cj->rs)) return;
    }
    cj->done = 1;
    mx_shm_cleanup(cj->job.jobid);
    mx_ctl_close_all(&cj->job);
    if (cj->job.verbose) {
        char jn[64];
        jobname(cj, jn, sizeof jn);
        mx_msg("spawned job %s ended", jn);
    }
}

void mx_spawn_busy(int *running, int *pipes_open)
{
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next) {
        if (cj->done) continue;
        for (int r = 0; r < cj->job.n; r++) {
            struct mx_rank *rk = &cj->job.ranks[r];
            *running += rk->state == MX_RANK_RUNNING;
            *pipes_open += (rk->out[0].fd >= 0) + (rk->out[1].fd >= 0);
        }
        if (cj->rs) *pipes_open += mx_rset_open(cj->rs);
    }
}

void mx_spawn_close_pipes(void)
{
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next)
        if (cj->rs) mx_rset_kill(cj->rs);
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next)
        for (int r = 0; r < cj->job.n; r++)
            for (int w = 0; w < 2; w++) {
                struct mx_out *o = &cj->job.ranks[r].out[w];
                mx_out_read(r, o, 0);
                if (o->fd >= 0) mx_out_close(r, o);
            }
}

double mx_spawn_timers(double now)
{
    double next = 1e300;
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next) {
        if (cj->done) continue;
        double t = mx_ctl_housekeeping(&cj->job, now);
        if (t < next) next = t;
        if (cj->rs && (t = mx_rset_timers(cj->rs, now)) < next) next = t;
        if (cj->rs && cj->req_job && mx_rset_started(cj->rs)) {    /* every proxy ready: the answer */
            char id[32];
            snprintf(id, sizeof id, "%ld", cj->job.jobid);
            mx_ctl_spawn_reply(cj->req_job, cj->req_rank, KUMI_LAUNCH_SPAWN_OK, NULL, id, cj->req_total, NULL);
            cj->req_job = NULL;
        }
        if (cj->stopping && !cj->killed_hard) {
            if (now >= cj->kill_deadline) {
                cjob_signal(cj, SIGKILL, 1);
                cj->killed_hard = 1;
            } else if (cj->kill_deadline < next) {
                next = cj->kill_deadline;
            }
        }
        /* a job whose ranks exited but something of theirs holds the pipes */
        int running = 0;
        for (int r = 0; r < cj->job.n; r++) running += cj->job.ranks[r].state == MX_RANK_RUNNING;
        if (!running) cjob_check_done(cj);
    }
    return next;
}

void mx_spawn_cleanup(void)
{
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next) mx_shm_cleanup(cj->job.jobid);
}

/* ------------------------------------------------------------ poll */

size_t mx_spawn_maxfds(void)
{
    size_t n = 0;
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next) {
        if (cj->done) continue;
        n += 1 + 2 * (size_t)cj->job.n + (cj->rs ? mx_rset_maxfds(cj->rs) : 0);
        for (struct mx_conn *c = cj->job.conns; c; c = c->next) n++;
    }
    return n;
}

static void tag_add(struct pollfd *pfd, size_t *np, int fd, short ev, struct mx_cjob *cj, int kind, int rank,
                    int which, struct mx_conn *conn)
{
    if (ntags == captags) {
        captags = captags ? 2 * captags : 64;
        tags = realloc(tags, captags * sizeof *tags);
        if (!tags) {
            mx_msg("out of memory");
            exit(1);
        }
    }
    pfd[*np].fd = fd;
    pfd[*np].events = ev;
    pfd[*np].revents = 0;
    tags[ntags] = (struct sp_tag){ cj, kind, rank, which, conn };
    ntags++;
    (*np)++;
}

size_t mx_spawn_pollset(struct pollfd *pfd, const int *room)
{
    size_t np = 0;
    ntags = 0;
    for (struct mx_cjob *cj = cjobs; cj; cj = cj->next) {
        if (cj->done) continue;
        if (cj->job.listen_fd >= 0) tag_add(pfd, &np, cj->job.listen_fd, POLLIN, cj, 0, -1, 0, NULL);
        for (struct mx_conn *c = cj->job.conns; c; c = c->next)
            if (!c->dead) tag_add(pfd, &np, c->fd, mx_ctl_events(c), cj, 1, c->rank, 0, c);
        for (int r = 0; r < cj->job.n; r++)
            for (int w = 0; w < 2; w++)
                if (cj->job.ranks[r].out[w].fd >= 0 && room[w + 1])
                    tag_add(pfd, &np, cj->job.ranks[r].out[w].fd, POLLIN, cj, 2, r, w, NULL);
        if (cj->rs) {
            static int *aux;
            static size_t auxcap;
            if (auxcap < mx_rset_maxfds(cj->rs)) {
                auxcap = mx_rset_maxfds(cj->rs);
                aux = realloc(aux, auxcap * sizeof *aux);
                if (!aux) {
                    mx_msg("out of memory");
                    exit(1);
                }
            }
            struct pollfd *q = pfd + np;
            size_t k = mx_rset_pollset(cj->rs, q, aux, room[1] && room[2]);
            for (size_t i = 0; i < k; i++) tag_add(pfd, &np, q[i].fd, q[i].events, cj, 3, aux[i], 0, NULL);
        }
    }
    return np;
}

void mx_spawn_event(int i, short re, double now)
{
    if (i < 0 || (size_t)i >= ntags) return;
    struct sp_tag *t = &tags[i];
    struct mx_cjob *cj = t->cj;
    if (cj->done) return;
    switch (t->kind) {
    case 0:
        mx_ctl_accept(&cj->job, now);
        break;
    case 1:
        mx_ctl_event(&cj->job, t->conn, re);
        break;
    case 3:
        mx_rset_event(cj->rs, t->rank, re, now);
        break;
    default:
        mx_out_read(t->rank, &cj->job.ranks[t->rank].out[t->which], 0);
        break;
    }
}

/* ------------------------------------------------------------ the request */

static void reply_fail(struct mx_job *parent, int rank, const struct mx_spawn_req *req, int bad_cmd, uint32_t why,
                       const char *msg)
{
    uint32_t *codes = mx_xcalloc((size_t)(req->total > 0 ? req->total : 1), sizeof *codes);
    int k = 0;
    for (int i = 0; i < req->ncmds; i++)
        for (int m = 0; m < req->cmds[i].maxprocs && k < req->total; m++)
            codes[k++] = bad_cmd < 0 || i == bad_cmd ? why : KUMI_LAUNCH_SPAWN_NOT_STARTED;
    mx_ctl_spawn_reply(parent, rank, why, msg, NULL, req->total, codes);
    free(codes);
    if (parent->verbose) mx_msg("spawn request of rank %d refused: %s", rank, msg);
}

/* Start rank r of cj (command argv, environment env with its rank slot) in
 * wdir (NULL: mpiexec's folder).  0, or -1 with msg set. */
static int start_rank(struct mx_cjob *cj, int r, char **argv, char **env, int rank_slot, const char *wdir, char *msg,
                      size_t ml)
{
    struct mx_rank *rk = &cj->job.ranks[r];
    int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
    if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        snprintf(msg, ml, "rank %d: pipe: %s", r, strerror(errno));
        for (int k = 0; k < 2; k++) {
            if (outp[k] >= 0) close(outp[k]);
            if (errp[k] >= 0) close(errp[k]);
        }
        return -1;
    }
    char rb[32];
    snprintf(rb, sizeof rb, "KUMI_RANK=%d", r);
    env[rank_slot] = rb;
    env[rank_slot + 1] = NULL;
    struct kumi_spawn sp = {
        .rank = r, .host = NULL, .argv = argv, .envp = env,
        .stdin_fd = -1, .stdout_fd = outp[1], .stderr_fd = errp[1],
        .close_fds = NULL, .nclose_fds = 0, .cpuset = NULL, .cpuset_size = 0,
    };
    /* the child starts in wdir: mpiexec (one thread) goes there for the fork */
    int here = -1, src = 0;
    if (wdir) {
        here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (here < 0 || chdir(wdir) < 0) src = errno ? errno : EIO;
    }
    pid_t pid = -1;
    if (!src) src = mx_rpim_ops->spawn(&sp, &pid);
    if (here >= 0) {
        if (fchdir(here) < 0) mx_msg("cannot go back to mpiexec's folder: %s", strerror(errno));
        close(here);
    }
    env[rank_slot] = NULL;
    close(outp[1]);
    close(errp[1]);
    if (src != 0 || pid <= 0) {
        snprintf(msg, ml, "rank %d: %s", r, src > 0 && src < 4096 ? strerror(src) : "spawn failed");
        close(outp[0]);
        close(errp[0]);
        return -1;
    }
    rk->pid = pid;
    rk->state = MX_RANK_RUNNING;
    rk->out[0].fd = outp[0];
    rk->out[1].fd = errp[0];
    set_nonblock(outp[0]);
    set_nonblock(errp[0]);
    return 0;
}

/* remote.c's callbacks for the proxies of a spawned job */
static void rs_rank_exited(void *ctx, int r, int status)
{
    rank_exited(ctx, r, status);
}

static void rs_stop(void *ctx, int code, const char *why)
{
    struct mx_cjob *cj = ctx;
    if (cj->req_job) {                /* not started: the request fails, nothing else */
        mx_ctl_spawn_reply(cj->req_job, cj->req_rank, KUMI_LAUNCH_SPAWN_FAILED, why, NULL, cj->req_total, NULL);
        cj->req_job = NULL;
        cjob_stop(cj, SIGTERM);
        return;
    }
    if (cj->stopping || mx_stopping()) return;
    mx_note_failure(code);
    cjob_stop(cj, SIGTERM);
}

static int rs_stopping(void *ctx)
{
    return ((struct mx_cjob *)ctx)->stopping || mx_stopping();
}

static const struct mx_rset_ops rs_ops = { rs_rank_exited, rs_stop, rs_stopping };

static void free_cmds(int ncmds, char **progs, char **wdirs, struct mx_hostlist *hls)
{
    for (int i = 0; i < ncmds; i++) {
        free(progs[i]);
        free(wdirs[i]);
        mx_hosts_free(&hls[i]);
    }
    free(progs);
    free(wdirs);
    free(hls);
}

void mx_spawn_request(struct mx_job *parent, int rank, const unsigned char *p, size_t n)
{
    struct mx_spawn_req req;
    char msg[1024];
    if (mx_spawn_parse(p, n, &req) < 0) {
        reply_fail(parent, rank, &req, -1, KUMI_LAUNCH_SPAWN_BAD_REQUEST, "malformed spawn request");
        mx_spawn_req_free(&req);
        return;
    }
    if (mx_stopping()) {
        reply_fail(parent, rank, &req, -1, KUMI_LAUNCH_SPAWN_FAILED, "mpiexec is stopping the job");
        mx_spawn_req_free(&req);
        return;
    }
    /* every command checked and placed before anything starts */
    char **progs = mx_xcalloc((size_t)req.ncmds, sizeof *progs), **wdirs = mx_xcalloc((size_t)req.ncmds, sizeof *wdirs);
    struct mx_hostlist *hls = mx_xcalloc((size_t)req.ncmds, sizeof *hls);
    const char **host = mx_xcalloc((size_t)req.total, sizeof *host);
    int bad = -1, r0 = 0, remote = 0;
    uint32_t why = KUMI_LAUNCH_SPAWN_OK;
    for (int i = 0; i < req.ncmds && bad < 0; i++) {
        why = check_cmd(&req.cmds[i], i, &progs[i], &wdirs[i], &hls[i], msg, sizeof msg);
        if (why == KUMI_LAUNCH_SPAWN_OK) why = place_cmd(&req.cmds[i], i, &hls[i], host, r0, msg, sizeof msg);
        if (why != KUMI_LAUNCH_SPAWN_OK) bad = i;
        r0 += req.cmds[i].maxprocs;
    }
    /* another host (or --launcher fork: proxies here too): the job's ranks
     * run behind proxies of its own */
    for (int r = 0; r < req.total && bad < 0; r++) remote |= host[r] && !mx_host_is_local(host[r]);
    if (bad < 0 && mx_opt.launcher && !strcmp(mx_opt.launcher, "fork")) remote = 1;
    if (bad < 0 && remote && mx_opt.launcher && !strcmp(mx_opt.launcher, "slurm")) {
        snprintf(msg, sizeof msg, "spawning on other hosts under --launcher slurm is not supported");
        why = KUMI_LAUNCH_SPAWN_UNSUPPORTED;
        bad = 0;
    }
    struct mx_cjob *cj = NULL;
    if (bad < 0) {
        cj = mx_xcalloc(1, sizeof *cj);
        cj->no = ++ncjobs;
        cj->job.n = req.total;
        cj->job.jobid = ((long)cj->no << 32) | mx_job_main.jobid;
        cj->job.listen_fd = -1;
        cj->job.verbose = parent->verbose;
        cj->job.spawn_hook = mx_spawn_request;           /* its ranks may spawn in turn */
        cj->job.ranks = mx_xcalloc((size_t)req.total, sizeof *cj->job.ranks);
        cj->host = mx_xcalloc((size_t)req.total, sizeof *cj->host);
        for (int r = 0; r < req.total; r++) {
            cj->host[r] = host[r] ? mx_xstrdup(host[r]) : NULL;
            for (int w = 0; w < 2; w++) {
                cj->job.ranks[r].out[w].fd = -1;
                cj->job.ranks[r].out[w].which = w + 1;
                cj->job.ranks[r].out[w].jobno = cj->no;
            }
        }
        if (mx_make_secret(cj->job.secret) < 0) {
            snprintf(msg, sizeof msg, "cannot read /dev/urandom: %s", strerror(errno));
            why = KUMI_LAUNCH_SPAWN_FAILED;
        } else if (!remote && mx_ctl_listen(&cj->job) < 0) {
            snprintf(msg, sizeof msg, "cannot open a control listener for the new job");
            why = KUMI_LAUNCH_SPAWN_FAILED;
        }
        if (why != KUMI_LAUNCH_SPAWN_OK) {
            for (int r = 0; r < req.total; r++) free(cj->host[r]);
            free(cj->host);
            free(cj->job.ranks);
            free(cj);
            cj = NULL;
            ncjobs--;
        }
    }
    if (!cj) {
        reply_fail(parent, rank, &req, bad, why, msg);
        free_cmds(req.ncmds, progs, wdirs, hls);
        free(host);
        mx_spawn_req_free(&req);
        return;
    }
    *cjobs_tail = cj;
    cjobs_tail = &cj->next;
    mx_shm_cleanup(cj->job.jobid);
    char jn[64];
    jobname(cj, jn, sizeof jn);
    /* hosts of the job: for KUMI_ENV_NHOSTS, and the proxies (one per
     * command and host: a proxy runs one program) */
    int nh = 0, nent = 0;
    for (int r = 0; r < req.total; r++) {
        int seen = 0;
        for (int q = 0; q < r && !seen; q++) seen = same_host(host[q], host[r]);
        nh += !seen;
    }
    if (parent->verbose)
        mx_msg("spawned job %s: %d process%s on %d host%s for rank %d of job %ld%s", jn, req.total,
               req.total == 1 ? "" : "es", nh, nh == 1 ? "" : "s", rank, parent->jobid,
               remote ? ", through proxies" : "");

    /* the children's extra variables: ours, then the request's */
    int nextra = req.nenv + 3;
    char **extra = mx_xcalloc((size_t)nextra + 1, sizeof *extra);
    char pj[64];
    char (*an)[32] = mx_xcalloc((size_t)req.ncmds, sizeof *an);   /* one per command: the env keeps pointers */
    snprintf(pj, sizeof pj, "KUMI_PARENT_JOBID=%ld", parent->jobid);
    extra[0] = "KUMI_SPAWNED=1";
    extra[1] = pj;
    for (int k = 0; k < req.nenv; k++) extra[3 + k] = req.env[k];
    struct mx_rset_host *ents = remote ? mx_xcalloc((size_t)req.total, sizeof *ents) : NULL;
    int *host_of = remote ? mx_xcalloc((size_t)req.total, sizeof *host_of) : NULL;
    char ***envs = mx_xcalloc((size_t)req.ncmds, sizeof *envs), ***argvs = mx_xcalloc((size_t)req.ncmds, sizeof *argvs);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, "/");
    int failed = 0;
    r0 = 0;
    for (int i = 0; i < req.ncmds && !failed; i++) {
        snprintf(an[i], sizeof an[i], "KUMI_APPNUM=%d", i);
        extra[2] = an[i];
        int rank_slot;
        char **env = envs[i] = mx_child_env(&cj->job, extra, nextra, nh, &rank_slot);
        char **argv = argvs[i] = mx_xcalloc((size_t)req.cmds[i].argc + 2, sizeof *argv);
        argv[0] = progs[i];
        for (int a = 0; a < req.cmds[i].argc; a++) argv[a + 1] = req.cmds[i].args[a];
        for (int m = 0; m < req.cmds[i].maxprocs && !failed; m++) {
            int r = r0 + m;
            if (!remote) {
                if (start_rank(cj, r, argv, env, rank_slot, wdirs[i], msg, sizeof msg) < 0) failed = 1;
                continue;
            }
            int e;                             /* this command's proxy on that host */
            for (e = 0; e < nent; e++)
                if (ents[e].argv == argv && !strcmp(ents[e].name, host[r] ? host[r] : "localhost")) break;
            if (e == nent) {
                ents[nent++] = (struct mx_rset_host){ cj->host[r] ? cj->host[r] : "localhost", argv, env, rank_slot,
                                                      wdirs[i] ? wdirs[i] : cwd, wdirs[i] != NULL };
            }
            host_of[r] = e;
        }
        r0 += req.cmds[i].maxprocs;
    }
    if (remote && !failed) cj->rs = mx_rset_start(&cj->job, nent, ents, host_of, &rs_ops, cj);
    for (int i = 0; i < req.ncmds; i++) {
        free(envs[i]);                         /* (the few strings build_env made stay: small) */
        free(argvs[i]);
    }
    free(envs);
    free(argvs);
    free(ents);
    free(host_of);
    free(extra);
    free(an);
    if (failed) {
        mx_msg("spawned job %s: %s; stopping it", jn, msg);
        cjob_stop(cj, SIGTERM);
        reply_fail(parent, rank, &req, -1, KUMI_LAUNCH_SPAWN_FAILED, msg);
    } else if (cj->rs) {               /* answered once every proxy is ready (mx_spawn_timers) */
        cj->req_job = parent;
        cj->req_rank = rank;
        cj->req_total = req.total;
    } else {
        char id[32];
        snprintf(id, sizeof id, "%ld", cj->job.jobid);
        mx_ctl_spawn_reply(parent, rank, KUMI_LAUNCH_SPAWN_OK, NULL, id, req.total, NULL);
    }
    free_cmds(req.ncmds, progs, wdirs, hls);
    free(host);
    mx_spawn_req_free(&req);
}
