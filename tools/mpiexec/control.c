/* mpiexec's control channel: a TCP listener on 127.0.0.1 (ephemeral port)
 * to which every rank connects in MPI_Init (rpim client_init).  A rank first
 * presents the job secret and its rank (HELLO); then it may PUT keys, FENCE
 * (answered to every rank, with the whole key table, once all ranks fenced),
 * ABORT and FINALIZE.  The frame format is described in mpiexec.h.
 *
 * Connections that do not present the secret in time, or send anything
 * malformed, are closed and otherwise ignored: they cannot harm the job. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "mpiexec.h"

static void *mx_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        mx_msg("out of memory");
        exit(1);
    }
    return q;
}

#define buf_reserve mx_buf_reserve
#define buf_put mx_buf_put
#define buf_u32 mx_buf_u32
#define buf_free mx_buf_free
#define frame_begin mx_frame_begin
#define get_u32 kumi_launch_get_u32

/* Try to write what a connection has queued (non-blocking). */
static void conn_flush(struct mx_conn *c)
{
    while (!c->dead && c->out.off < c->out.len) {
        ssize_t w = send(c->fd, c->out.data + c->out.off, c->out.len - c->out.off, MSG_NOSIGNAL);
        if (w > 0) {
            c->out.off += (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        } else {
            c->dead = 1;               /* peer gone */
        }
    }
    if (c->out.off == c->out.len) c->out.off = c->out.len = 0;
}

static void conn_send_empty(struct mx_conn *c, int type)
{
    frame_begin(&c->out, type, 0);
    conn_flush(c);
}

int mx_ctl_listen(struct mx_job *job)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        mx_msg("cannot create the control socket: %s", strerror(errno));
        return -1;
    }
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t al = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        listen(fd, job->n + 128 > 4096 ? 4096 : job->n + 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
        mx_msg("cannot listen on 127.0.0.1: %s", strerror(errno));
        close(fd);
        return -1;
    }
    job->listen_fd = fd;
    job->port = ntohs(a.sin_port);
    return 0;
}

static void conn_kill(struct mx_job *job, struct mx_conn *c, const char *why);
static int conn_read(struct mx_job *job, struct mx_conn *c);

/* Connections that have not presented the secret yet are capped (a local
 * user can open any number of them).  At the cap, the oldest of them is
 * read once more (its HELLO may have arrived) and closed if it is still a
 * stranger: a flood then only cycles through the strangers' slots, and a
 * rank whose connection was closed that way connects again (rpim/fork).
 * Every new connection is read at once, so that a rank, which sends its
 * HELLO right after connecting, is usually known before the next accept. */
static void evict_oldest_stranger(struct mx_job *job)
{
    struct mx_conn *old = NULL;
    for (struct mx_conn *c = job->conns; c; c = c->next)
        if (!c->dead && c->rank < 0 && (!old || c->deadline <= old->deadline)) old = c;
    if (!old) return;
    conn_read(job, old);
    if (!old->dead && old->rank < 0) conn_kill(job, old, "too many connections without a HELLO: closing the oldest");
}

void mx_ctl_accept(struct mx_job *job, double now)
{
    for (int batch = 0; batch < 256; batch++) {
        int fd = accept4(job->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return;                    /* EAGAIN, or out of fds: try later */
        }
        while (job->nstrangers >= MX_MAX_STRANGERS + job->n) {
            int before = job->nstrangers;
            evict_oldest_stranger(job);
            if (job->nstrangers >= before) break;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct mx_conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            return;
        }
        c->fd = fd;
        c->rank = -1;
        c->deadline = now + KUMI_LAUNCH_HELLO_TIMEOUT;
        c->next = job->conns;
        job->conns = c;
        job->nstrangers++;
        conn_read(job, c);
    }
}

short mx_ctl_events(const struct mx_conn *c)
{
    short ev = POLLIN;
    if (c->out.off < c->out.len) ev |= POLLOUT;
    return ev;
}

static void conn_kill(struct mx_job *job, struct mx_conn *c, const char *why)
{
    if (c->dead) return;
    c->dead = 1;
    if (c->rank < 0) job->nstrangers--;
    if (c->rank >= 0) {
        if (job->verbose)
            mx_msg("control connection of rank %d closed%s%s", c->rank, why ? ": " : "", why ? why : "");
        if (job->ranks[c->rank].conn == c) job->ranks[c->rank].conn = NULL;
        if (job->ckpt_gone_hook) job->ckpt_gone_hook(job, c->rank);
    } else if (job->verbose && why) {
        mx_msg("ignoring a control connection: %s", why);
    }
}

/* Table of every rank's keys, sent to every rank at the end of a fence. */
static void fence_complete(struct mx_job *job)
{
    struct mx_buf tab = { 0 };
    buf_u32(&tab, (uint32_t)job->nkv);
    for (size_t i = 0; i < job->nkv; i++) {
        struct mx_kv *kv = &job->kv[i];
        buf_u32(&tab, (uint32_t)kv->rank);
        buf_u32(&tab, (uint32_t)kv->klen);
        buf_put(&tab, kv->key, kv->klen);
        buf_u32(&tab, (uint32_t)kv->vlen);
        buf_put(&tab, kv->val, kv->vlen);
    }
    job->fences_done++;
    if (job->fence_done_hook) {                  /* ranks behind proxies */
        job->fence_done_hook(job, &tab);
        buf_free(&tab);
        return;
    }
    for (int r = 0; r < job->n; r++) {
        struct mx_conn *c = job->ranks[r].conn;
        if (!c || c->dead) continue;
        frame_begin(&c->out, KUMI_LAUNCH_MSG_FENCE_DONE, tab.len);
        buf_put(&c->out, tab.data, tab.len);
        conn_flush(c);
    }
    buf_free(&tab);
    if (job->verbose > 1) mx_msg("fence %d complete (%zu keys)", job->fences_done, job->nkv);
}

void mx_ctl_check_fence(struct mx_job *job)
{
    if (job->fence_check_hook) {
        job->fence_check_hook(job);
        return;
    }
    for (;;) {
        int waiting = 0, missing = -1;
        for (int r = 0; r < job->n; r++) {
            if (job->ranks[r].fences > job->fences_done) waiting = 1;
            else if (missing < 0 || job->ranks[r].state == MX_RANK_EXITED) missing = r;
        }
        if (missing < 0) {
            fence_complete(job);
            continue;
        }
        /* A rank that exited cannot join the fence the others wait in. */
        if (waiting && job->ranks[missing].state == MX_RANK_EXITED) mx_fence_dead(job, missing);
        return;
    }
}

static void kv_put(struct mx_job *job, int rank, const char *k, size_t kl, const char *v, size_t vl)
{
    for (size_t i = 0; i < job->nkv; i++) {
        struct mx_kv *kv = &job->kv[i];
        if (kv->rank == rank && kv->klen == kl && memcmp(kv->key, k, kl) == 0) {
            free(kv->val);
            kv->val = mx_xrealloc(NULL, vl);
            memcpy(kv->val, v, vl);
            kv->vlen = vl;
            return;
        }
    }
    if (job->nkv == job->capkv) {
        job->capkv = job->capkv ? 2 * job->capkv : 64;
        job->kv = mx_xrealloc(job->kv, job->capkv * sizeof *job->kv);
    }
    struct mx_kv *kv = &job->kv[job->nkv++];
    kv->rank = rank;
    kv->key = mx_xrealloc(NULL, kl);
    memcpy(kv->key, k, kl);
    kv->klen = kl;
    kv->val = mx_xrealloc(NULL, vl);
    memcpy(kv->val, v, vl);
    kv->vlen = vl;
}

/* Read a string (u32 length + bytes) from p[0..n) at *pos. */
void mx_ctl_kv_put(struct mx_job *job, int rank, const char *key, const char *value)
{
    kv_put(job, rank, key, strlen(key), value, strlen(value));
}

static int get_str(const unsigned char *p, size_t n, size_t *pos, const char **s, size_t *sl, size_t max)
{
    if (n - *pos < 4) return -1;
    uint32_t l = get_u32(p + *pos);
    *pos += 4;
    if (l > max || n - *pos < l) return -1;
    *s = (const char *)p + *pos;
    *sl = l;
    *pos += l;
    return 0;
}

static int secret_ok(const struct mx_job *job, const unsigned char *s)
{
    unsigned char d = 0;
    for (int i = 0; i < KUMI_LAUNCH_SECRET_LEN; i++) d |= (unsigned char)(s[i] ^ (unsigned char)job->secret[i]);
    return d == 0;
}

/* Answer a HELLO that cannot be accepted with the reason, then close. */
static int refuse(struct mx_job *job, struct mx_conn *c, uint32_t reason, const char *why)
{
    size_t wl = strlen(why);
    frame_begin(&c->out, KUMI_LAUNCH_MSG_HELLO_REFUSED, 8 + wl);
    buf_u32(&c->out, reason);
    buf_u32(&c->out, (uint32_t)wl);
    buf_put(&c->out, why, wl);
    conn_flush(c);
    conn_kill(job, c, why);
    return 0;
}

/* Handle one complete frame; returns -1 to close the connection. */
static int handle_frame(struct mx_job *job, struct mx_conn *c, int type, const unsigned char *p, size_t n)
{
    size_t pos = 0;
    if (c->rank < 0) {
        if (type != KUMI_LAUNCH_MSG_HELLO || n != KUMI_LAUNCH_HELLO_LEN) return -1;
        if (!secret_ok(job, p)) return refuse(job, c, KUMI_LAUNCH_REFUSED_SECRET, "wrong job secret (KUMI_JOB_SECRET)");
        uint32_t r = get_u32(p + KUMI_LAUNCH_SECRET_LEN);
        char why[128];
        if (r >= (uint32_t)job->n) {
            snprintf(why, sizeof why, "rank %u is not in a job of %d process%s", r, job->n, job->n == 1 ? "" : "es");
            return refuse(job, c, KUMI_LAUNCH_REFUSED_RANK, why);
        }
        struct mx_rank *rk = &job->ranks[r];
        /* One connection per rank, from the process that mpiexec started. */
        if (rk->conn || rk->connected) {
            snprintf(why, sizeof why, "rank %u has already connected (MPI_Init called twice, or a copy of the rank?)", r);
            return refuse(job, c, KUMI_LAUNCH_REFUSED_TWICE, why);
        }
        /* The pid is informative only: a rank may run under a wrapper
         * (time, strace, a shell) whose child is the MPI process. */
        unsigned pid = get_u32(p + KUMI_LAUNCH_SECRET_LEN + 4);
        c->rank = (int)r;
        rk->conn = c;
        rk->connected = 1;
        job->nstrangers--;
        if (job->verbose > 1) mx_msg("rank %d connected (pid %u)", c->rank, pid);
        conn_send_empty(c, KUMI_LAUNCH_MSG_HELLO_OK);
        return 0;
    }
    struct mx_rank *rk = &job->ranks[c->rank];
    switch (type) {
    case KUMI_LAUNCH_MSG_PUT: {
        const char *k, *v;
        size_t kl, vl;
        if (get_str(p, n, &pos, &k, &kl, KUMI_LAUNCH_MAX_FRAME) || get_str(p, n, &pos, &v, &vl, KUMI_LAUNCH_MAX_FRAME) ||
            pos != n || kl == 0)
            return -1;
        kv_put(job, c->rank, k, kl, v, vl);
        return 0;
    }
    case KUMI_LAUNCH_MSG_FENCE:
        if (n != 0) return -1;
        rk->fences++;
        mx_ctl_check_fence(job);
        return 0;
    case KUMI_LAUNCH_MSG_ABORT: {
        const char *m;
        size_t ml;
        if (n < 4) return -1;
        int code = (int32_t)get_u32(p);
        pos = 4;
        if (get_str(p, n, &pos, &m, &ml, KUMI_LAUNCH_MAX_FRAME) || pos != n) return -1;
        char *msg = mx_xrealloc(NULL, ml + 1);
        memcpy(msg, m, ml);
        msg[ml] = 0;
        /* strip trailing newlines of the message */
        while (ml > 0 && (msg[ml - 1] == '\n' || msg[ml - 1] == '\r')) msg[--ml] = 0;
        conn_send_empty(c, KUMI_LAUNCH_MSG_ABORT_OK);
        mx_rank_aborted(job, c->rank, code, msg);
        free(msg);
        return 0;
    }
    case KUMI_LAUNCH_MSG_SPAWN:
        if (job->spawn_hook) {
            job->spawn_hook(job, c->rank, p, n);
        } else {
            struct mx_spawn_req req;
            int bad = mx_spawn_parse(p, n, &req);
            mx_ctl_spawn_reply(job, c->rank, bad ? KUMI_LAUNCH_SPAWN_BAD_REQUEST : KUMI_LAUNCH_SPAWN_UNSUPPORTED,
                               bad ? "malformed spawn request"
                                   : "spawning is not supported for ranks started through mpiexec's per-host proxies "
                                     "(a job across hosts, --launcher fork/slurm); start the job on one host",
                               NULL, req.total, NULL);
            mx_spawn_req_free(&req);
        }
        return 0;
    case KUMI_LAUNCH_MSG_CKPT_READY:
    case KUMI_LAUNCH_MSG_CKPT_DONE:
        if (!job->ckpt_frame_hook) return -1;
        job->ckpt_frame_hook(job, c->rank, type, p, n);
        return 0;
    case KUMI_LAUNCH_MSG_FINALIZE:
        if (n != 0) return -1;
        rk->finalized = 1;
        conn_send_empty(c, KUMI_LAUNCH_MSG_FINALIZE_OK);
        return 0;
    default:
        return -1;
    }
}

/* Parse every complete frame in the input buffer. */
static void conn_parse(struct mx_job *job, struct mx_conn *c)
{
    while (!c->dead) {
        size_t avail = c->in.len - c->in.off;
        if (avail < KUMI_LAUNCH_HDR_LEN) break;
        const unsigned char *p = (const unsigned char *)c->in.data + c->in.off;
        uint32_t len = get_u32(p);
        size_t max = c->rank < 0 ? 1 + KUMI_LAUNCH_HELLO_LEN : KUMI_LAUNCH_MAX_FRAME;
        if (len < 1 || len > max) {
            conn_kill(job, c, "malformed frame");
            return;
        }
        if (avail < 4 + (size_t)len) break;
        int type = p[4];
        c->in.off += 4 + (size_t)len;
        if (handle_frame(job, c, type, p + KUMI_LAUNCH_HDR_LEN, len - 1) < 0) {
            conn_kill(job, c, c->rank < 0 ? "not a HELLO" : "malformed message");
            return;
        }
    }
    if (c->in.off == c->in.len) c->in.off = c->in.len = 0;
}

/* Read what is there (non-blocking); returns 0 at EOF or error. */
static int conn_read(struct mx_job *job, struct mx_conn *c)
{
    for (;;) {
        buf_reserve(&c->in, 4096);
        ssize_t r = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, 0);
        if (r > 0) {
            c->in.len += (size_t)r;
            conn_parse(job, c);
            if (c->dead) return 0;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 1;
        conn_kill(job, c, r == 0 ? NULL : strerror(errno));
        return 0;
    }
}

void mx_ctl_event(struct mx_job *job, struct mx_conn *c, short revents)
{
    if (c->dead) return;
    if (revents & (POLLIN | POLLHUP | POLLERR)) conn_read(job, c);
    if (!c->dead && (revents & POLLOUT)) conn_flush(c);
    if (!c->dead && (revents & POLLNVAL)) conn_kill(job, c, "invalid descriptor");
}

void mx_ctl_drain_rank(struct mx_job *job, int rank)
{
    /* The rank's own connection... */
    struct mx_conn *c = job->ranks[rank].conn;
    if (c && !c->dead) conn_read(job, c);
    /* ...and, in case it connected just before exiting, any connection that
     * is waiting to be accepted or has not been read yet. */
    if (!job->ranks[rank].connected) {
        mx_ctl_accept(job, mx_now());
        for (c = job->conns; c; c = c->next)
            if (c->rank < 0 && !c->dead) conn_read(job, c);
        c = job->ranks[rank].conn;
        if (c && !c->dead) conn_read(job, c);
    }
}

double mx_ctl_housekeeping(struct mx_job *job, double now)
{
    double next = 1e300;
    int strangers = 0;
    struct mx_conn **pp = &job->conns;
    while (*pp) {
        struct mx_conn *c = *pp;
        if (!c->dead && c->rank < 0) {
            if (now >= c->deadline) conn_kill(job, c, "no HELLO in time");
            else if (c->deadline < next) next = c->deadline;
        }
        if (c->dead) {
            if (c->rank >= 0 && job->ranks[c->rank].conn == c) job->ranks[c->rank].conn = NULL;
            close(c->fd);
            buf_free(&c->in);
            buf_free(&c->out);
            *pp = c->next;
            free(c);
            continue;
        }
        if (c->rank < 0) strangers++;
        pp = &c->next;
    }
    job->nstrangers = strangers;
    return next;
}

void mx_ctl_close_all(struct mx_job *job)
{
    for (struct mx_conn *c = job->conns; c; c = c->next) c->dead = 1;
    for (int r = 0; r < job->n; r++) job->ranks[r].conn = NULL;
    mx_ctl_housekeeping(job, mx_now());
    if (job->listen_fd >= 0) close(job->listen_fd);
    job->listen_fd = -1;
    for (size_t i = 0; i < job->nkv; i++) {
        free(job->kv[i].key);
        free(job->kv[i].val);
    }
    free(job->kv);
    job->kv = NULL;
    job->nkv = job->capkv = 0;
}

/* ---- SPAWN ---- */
static char *dup_str(struct mx_rd *r)
{
    size_t l;
    const char *s = mx_rd_str(r, &l);
    if (!s || l > KUMI_LAUNCH_MAX_FRAME || memchr(s, 0, l)) {
        r->bad = 1;
        return NULL;
    }
    char *d = mx_xrealloc(NULL, l + 1);
    memcpy(d, s, l);
    d[l] = 0;
    return d;
}

int mx_spawn_parse(const unsigned char *p, size_t n, struct mx_spawn_req *req)
{
    struct mx_rd rd = { p, n, 0, 0 };
    memset(req, 0, sizeof *req);
    uint32_t nc = mx_rd_u32(&rd);
    if (rd.bad || nc < 1 || nc > n / 16) return -1;
    req->cmds = mx_xcalloc(nc, sizeof *req->cmds);
    for (uint32_t i = 0; i < nc && !rd.bad; i++) {
        struct mx_spawn_cmd *c = &req->cmds[i];
        req->ncmds = (int)i + 1;
        c->prog = dup_str(&rd);
        uint32_t argc = mx_rd_u32(&rd);
        if (rd.bad || argc > n / 4) return -1;
        c->args = mx_xcalloc((size_t)argc + 1, sizeof *c->args);
        for (uint32_t a = 0; a < argc && !rd.bad; a++) {
            c->args[a] = dup_str(&rd);
            c->argc = (int)a + 1;
        }
        uint32_t mp = mx_rd_u32(&rd);
        if (rd.bad || mp < 1 || mp > 1000000 || (uint32_t)req->total + mp > 1000000) return -1;
        c->maxprocs = (int)mp;
        req->total += (int)mp;
        uint32_t ni = mx_rd_u32(&rd);
        if (rd.bad || ni > n / 8) return -1;
        c->ikeys = mx_xcalloc((size_t)ni + 1, sizeof *c->ikeys);
        c->ivals = mx_xcalloc((size_t)ni + 1, sizeof *c->ivals);
        for (uint32_t k = 0; k < ni && !rd.bad; k++) {
            c->ikeys[k] = dup_str(&rd);
            c->ivals[k] = dup_str(&rd);
            c->ninfo = (int)k + 1;
        }
    }
    uint32_t ne = mx_rd_u32(&rd);
    if (rd.bad || ne > n / 4) return -1;
    req->env = mx_xcalloc((size_t)ne + 1, sizeof *req->env);
    for (uint32_t k = 0; k < ne && !rd.bad; k++) {
        req->env[k] = dup_str(&rd);
        req->nenv = (int)k + 1;
        if (req->env[k] && (!strchr(req->env[k], '=') || req->env[k][0] == '=')) return -1;
    }
    return rd.bad || rd.pos != n ? -1 : 0;
}

void mx_spawn_req_free(struct mx_spawn_req *req)
{
    for (int i = 0; i < req->ncmds; i++) {
        struct mx_spawn_cmd *c = &req->cmds[i];
        free(c->prog);
        for (int a = 0; a < c->argc; a++) free(c->args[a]);
        free(c->args);
        for (int k = 0; k < c->ninfo; k++) {
            free(c->ikeys[k]);
            free(c->ivals[k]);
        }
        free(c->ikeys);
        free(c->ivals);
    }
    free(req->cmds);
    for (int k = 0; k < req->nenv; k++) free(req->env[k]);
    free(req->env);
    memset(req, 0, sizeof *req);
}

void mx_ctl_spawn_reply(struct mx_job *job, int rank, uint32_t result, const char *msg, const char *jobid, int n,
                        const uint32_t *codes)
{
    size_t ml = msg ? strlen(msg) : 0, jl = jobid ? strlen(jobid) : 0;
    if (n < 0) n = 0;
    struct mx_buf f = { 0 };
    frame_begin(&f, KUMI_LAUNCH_MSG_SPAWN_DONE, 16 + ml + jl + 4 * (size_t)n);
    buf_u32(&f, result);
    buf_u32(&f, (uint32_t)ml);
    buf_put(&f, msg, ml);
    buf_u32(&f, (uint32_t)jl);
    buf_put(&f, jobid, jl);
    buf_u32(&f, (uint32_t)n);
    for (int i = 0; i < n; i++) buf_u32(&f, codes ? codes[i] : result);
    if (job->rank_frame_hook) job->rank_frame_hook(job, rank, f.data, f.len);   /* behind a proxy */
    else mx_ctl_send_frame(job, rank, f.data, f.len);
    buf_free(&f);
}

void mx_ctl_send_frame(struct mx_job *job, int rank, const void *frame, size_t len)
{
    struct mx_conn *c = job->ranks[rank].conn;
    if (!c || c->dead) return;
    buf_put(&c->out, frame, len);
    conn_flush(c);
}
