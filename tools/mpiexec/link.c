/* Buffers, frames and the framed link of mpiexec and kumi_proxy (the
 * formats are in proxy_proto.h and kumi/launch_proto.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include "proxy_proto.h"

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("mpiexec: out of memory\n", stderr);
        exit(1);
    }
    return q;
}

void mx_buf_reserve(struct mx_buf *b, size_t more)
{
    if (b->len + more <= b->cap) return;
    if (b->off > 0) {                      /* compact first */
        memmove(b->data, b->data + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->len + more <= b->cap) return;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more) cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

void mx_buf_put(struct mx_buf *b, const void *p, size_t n)
{
    if (!n) return;
    mx_buf_reserve(b, n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void mx_buf_u32(struct mx_buf *b, uint32_t v)
{
    unsigned char x[4];
    kumi_launch_put_u32(x, v);
    mx_buf_put(b, x, 4);
}

void mx_buf_str(struct mx_buf *b, const char *s, size_t n)
{
    mx_buf_u32(b, (uint32_t)n);
    mx_buf_put(b, s, n);
}

void mx_buf_free(struct mx_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void mx_frame_begin(struct mx_buf *b, int type, size_t plen)
{
    mx_buf_u32(b, (uint32_t)(plen + 1));
    unsigned char t = (unsigned char)type;
    mx_buf_put(b, &t, 1);
}

uint32_t mx_rd_u32(struct mx_rd *r)
{
    if (r->bad || r->n - r->pos < 4) {
        r->bad = 1;
        return 0;
    }
    uint32_t v = kumi_launch_get_u32(r->p + r->pos);
    r->pos += 4;
    return v;
}

const char *mx_rd_str(struct mx_rd *r, size_t *len)
{
    uint32_t l = mx_rd_u32(r);
    if (r->bad || r->n - r->pos < l) {
        r->bad = 1;
        *len = 0;
        return NULL;
    }
    const char *s = (const char *)r->p + r->pos;
    r->pos += l;
    *len = l;
    return s;
}

char *mx_rd_strdup(struct mx_rd *r)
{
    size_t l;
    const char *s = mx_rd_str(r, &l);
    if (!s) return NULL;
    char *d = xrealloc(NULL, l + 1);
    memcpy(d, s, l);
    d[l] = 0;
    return d;
}

int mx_link_flush(struct mx_link *l)
{
    while (!l->broken && l->out.off < l->out.len) {
        ssize_t w = write(l->wfd, l->out.data + l->out.off, l->out.len - l->out.off);
        if (w > 0) {
            l->out.off += (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            l->broken = 1;
        }
    }
    if (l->broken) l->out.off = l->out.len = 0;
    if (l->out.off == l->out.len) l->out.off = l->out.len = 0;
    return l->broken ? -1 : 0;
}

size_t mx_link_queued(const struct mx_link *l)
{
    return l->out.len - l->out.off;
}

int mx_link_read(struct mx_link *l, double now, int (*fn)(void *arg, int type, const unsigned char *p, size_t n),
                 void *arg)
{
    for (int rounds = 0; rounds < 64 && !l->eof; rounds++) {
        mx_buf_reserve(&l->in, 65536);
        ssize_t r = read(l->rfd, l->in.data + l->in.len, l->in.cap - l->in.len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (r <= 0) {
            l->eof = 1;
            break;
        }
        l->last_rx = now;
        l->in.len += (size_t)r;
        while (l->in.len - l->in.off >= KUMI_LAUNCH_HDR_LEN) {
            const unsigned char *p = (const unsigned char *)l->in.data + l->in.off;
            uint32_t len = kumi_launch_get_u32(p);
            if (len < 1 || len > MX_LINK_MAX_FRAME) {
                l->eof = 1;
                return -1;
            }
            if (l->in.len - l->in.off < 4 + (size_t)len) break;
            l->in.off += 4 + (size_t)len;
            if (fn(arg, p[4], p + KUMI_LAUNCH_HDR_LEN, len - 1) < 0) {
                l->eof = 1;
                return -1;
            }
        }
        if (l->in.off == l->in.len) l->in.off = l->in.len = 0;
    }
    return l->eof ? -1 : 0;
}

void mx_link_free(struct mx_link *l)
{
    mx_buf_free(&l->in);
    mx_buf_free(&l->out);
}

char **mx_agent_argv(const char *agent, const char *host, const char *proxy, int fork_mode)
{
    size_t cap = 8, n = 0;
    char **v = xrealloc(NULL, cap * sizeof *v);
    int had_h = 0;
    const char *s = fork_mode ? "" : agent;
    for (;;) {
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) break;
        size_t l = strcspn(s, " \t");
        char *w = xrealloc(NULL, l + strlen(host) * 4 + 1), *o = w;
        for (size_t i = 0; i < l; i++) {
            if (s[i] == '%' && i + 1 < l && s[i + 1] == 'h') {
                o += sprintf(o, "%s", host);
                i++;
                had_h = 1;
            } else {
                *o++ = s[i];
            }
        }
        *o = 0;
        if (n + 4 > cap) {
            cap *= 2;
            v = xrealloc(v, cap * sizeof *v);
        }
        v[n++] = w;
        s += l;
    }
    if (!had_h && !fork_mode) v[n++] = strdup(host);
    v[n++] = strdup(proxy);
    v[n] = NULL;
    return v;
}

void mx_agent_argv_free(char **av)
{
    for (int i = 0; av && av[i]; i++) free(av[i]);
    free(av);
}

pid_t mx_agent_start(char **av, int *rfd, int *wfd, int *errfd)
{
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) < 0) return -1;
    if (pipe2(out, O_CLOEXEC) < 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    if (pipe2(err, O_CLOEXEC) < 0) {
        for (int k = 0; k < 2; k++) close(in[k]), close(out[k]);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        for (int k = 0; k < 2; k++) close(in[k]), close(out[k]), close(err[k]);
        return -1;
    }
    if (pid == 0) {
        /* a session of its own: without mpiexec's controlling terminal
         * (a terminal's ^C goes to mpiexec only, which forwards signals;
         * BatchMode: no prompt is wanted), and, where the kernel shares
         * CPU time between sessions (sched_autogroup, Debian's default),
         * a share of its own on a busy machine: 8 ssh logins at once took
         * 2.2-2.6 s in mpiexec's session instead of 0.8-0.9 s here (load
         * 30 on 2 cores; what MPICH's Hydra takes) */
        if (setsid() < 0) setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        execvp(av[0], av);
        fprintf(stderr, "cannot execute %s: %s\n", av[0], strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    *rfd = out[0];
    *wfd = in[1];
    *errfd = err[0];
    for (int k = 0; k < 3; k++) {
        int fd = k == 0 ? out[0] : k == 1 ? in[1] : err[0];
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    return pid;
}
