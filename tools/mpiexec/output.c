/* mpiexec: output of the job (the ranks' lines and mpiexec's own messages)
 * through non-blocking queues ("sinks"); see below. */
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
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "mpiexec.h"

/* ------------------------------------------------------------ output
 *
 * What mpiexec writes to its stdout and stderr (the ranks' output and its
 * own messages) goes through a queue per destination ("sink"), written
 * without blocking from the event loop: a stdout that nobody reads never
 * stops mpiexec from handling signals, dead ranks or the control channel.
 * When a sink holds MX_SINK_MAX bytes, mpiexec stops reading the ranks'
 * pipes that feed it (the ranks then block in their own writes), so memory
 * stays bounded.  A pipe (FIFO) or a terminal is reopened through
 * /proc/self/fd with O_NONBLOCK (a description of our own: the shell's is
 * not changed; where that fails it is written in pieces of at most PIPE_BUF
 * bytes once poll() says it is writable); a socket is written with
 * MSG_DONTWAIT; a regular file never blocks.  stdout and stderr that are the same object
 * (2>&1) share one sink, so their order is kept. */


#define MX_LINE_MAX   (64 * 1024)   /* a longer line without '\n' is written in pieces */

enum { SINK_FILE, SINK_NONBLOCK, SINK_SOCKET, SINK_POLL };

struct mx_sink {
    int fd;              /* where to write (fd 1 or 2, or our reopened copy) */
    int mode;
    int broken;          /* EPIPE or the like: output dropped */
    char *q;
    size_t len, off, cap;
};
static struct mx_sink sinks[2];
static struct mx_sink *sink_of[3];    /* [1] stdout, [2] stderr; NULL until sinks_init */

void mx_msg(const char *fmt, ...)
{
    char b[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof b - 2) n = (int)sizeof b - 2;
    b[n++] = '\n';
    if (!sink_of[2]) {                   /* before the sinks exist */
        fputs("mpiexec: ", stderr);
        fwrite(b, 1, (size_t)n, stderr);
        fflush(stderr);
        return;
    }
    sink_put(sink_of[2], "mpiexec: ", 9);
    sink_put(sink_of[2], b, (size_t)n);
    sink_flush(sink_of[2], 0);
}

void mx_sinks_init(void)
{
    struct stat st[3];
    for (int fd = 1; fd <= 2; fd++) {
        struct mx_sink *k = &sinks[fd - 1];
        k->fd = fd;
        k->mode = SINK_FILE;
        sink_of[fd] = k;
        if (fstat(fd, &st[fd]) < 0) continue;
        if (fd == 2 && st[1].st_dev == st[2].st_dev && st[1].st_ino == st[2].st_ino &&
            (st[2].st_mode & S_IFMT) == (st[1].st_mode & S_IFMT)) {
            sink_of[2] = sink_of[1];
            break;
        }
        if (S_ISFIFO(st[fd].st_mode) || S_ISCHR(st[fd].st_mode)) {
            char path[64];
            snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
            int n = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
            struct stat sn;
            if (n >= 0 && fstat(n, &sn) == 0 && sn.st_dev == st[fd].st_dev && sn.st_ino == st[fd].st_ino) {
                k->fd = n;
                k->mode = SINK_NONBLOCK;
            } else {
                if (n >= 0) close(n);
                k->mode = SINK_POLL;
            }
        } else if (S_ISSOCK(st[fd].st_mode)) {
            k->mode = SINK_SOCKET;
        }
    }
}

/* Write what the sink holds, without blocking (wait > 0: for up to that
 * many ms in all).  Returns 1 when it is empty (or broken). */
int sink_flush(struct mx_sink *k, int wait_ms)
{
    double end = mx_now() + wait_ms / 1000.0;
    while (k->off < k->len && !k->broken) {
        size_t n = k->len - k->off;
        ssize_t w;
        if (k->mode == SINK_POLL) {
            struct pollfd p = { .fd = k->fd, .events = POLLOUT };
            int left = (int)((end - mx_now()) * 1000.0);
            int pr = poll(&p, 1, left > 0 ? left : 0);
            if (pr == 0) return 0;
            if (pr < 0) {
                if (errno == EINTR) continue;
                return 0;
            }
            if (n > PIPE_BUF) n = PIPE_BUF;
            w = write(k->fd, k->q + k->off, n);
        } else if (k->mode == SINK_SOCKET) {
            w = send(k->fd, k->q + k->off, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        } else {
            w = write(k->fd, k->q + k->off, n);
        }
        if (w > 0) {
            k->off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int left = (int)((end - mx_now()) * 1000.0);
            if (left <= 0) return 0;
            struct pollfd p = { .fd = k->fd, .events = POLLOUT };
            poll(&p, 1, left);
            continue;
        }
        k->broken = 1;                    /* EPIPE or the like: drop output */
    }
    if (k->broken) k->len = k->off = 0;
    if (k->off == k->len) k->off = k->len = 0;
    return 1;
}

void sink_put(struct mx_sink *k, const void *p, size_t n)
{
    if (k->broken || n == 0) return;
    if (k->len + n > k->cap) {
        if (k->off > 0) {
            memmove(k->q, k->q + k->off, k->len - k->off);
            k->len -= k->off;
            k->off = 0;
        }
        size_t cap = k->cap ? k->cap : 4096;
        while (cap < k->len + n) cap *= 2;
        if (cap != k->cap) {
            char *q = realloc(k->q, cap);
            if (!q) {                     /* drop rather than die */
                k->broken = 1;
                return;
            }
            k->q = q;
            k->cap = cap;
        }
    }
    memcpy(k->q + k->len, p, n);
    k->len += n;
}

int mx_sink_poll_fd(int w)
{
    return sinks[w].len > sinks[w].off && sinks[w].mode != SINK_FILE ? sinks[w].fd : -1;
}

void mx_sink_event(int w, short re)
{
    if (re & (POLLERR | POLLNVAL)) sinks[w].broken = 1;
    sink_flush(&sinks[w], 0);
}

/* Bytes waiting in the sink of fd 1 or 2. */
size_t mx_sink_queued(int which)
{
    return sink_of[which]->len - sink_of[which]->off;
}

/* Write o->buf[0..len) of rank r into its sink: complete lines, possibly
 * followed by a piece without '\n' (at EOF, or when the buffer is full).
 * With --tag-output every piece is a line of its own with its tag (a line
 * longer than MX_LINE_MAX is cut into tagged lines); the sink receives each
 * piece whole, so pieces of different ranks never mix. */
static void emit(int r, struct mx_out *o, size_t len, int at_eof)
{
    if (len == 0) return;
    struct mx_sink *k = sink_of[o->which];
    if (!mx_opt.tag_output) {
        sink_put(k, o->buf, len);
        return;
    }
    (void)at_eof;
    char prefix[64];
    int pl = o->jobno ? snprintf(prefix, sizeof prefix, "[%ld.%d,%d]<%s>: ", mx_job_main.jobid, o->jobno, r,
                                 o->which == 1 ? "stdout" : "stderr")
                      : snprintf(prefix, sizeof prefix, "[%ld,%d]<%s>: ", mx_job_main.jobid, r,
                                 o->which == 1 ? "stdout" : "stderr");
    size_t pos = 0;
    while (pos < len) {
        char *nl = memchr(o->buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - o->buf) + 1 : len;
        sink_put(k, prefix, (size_t)pl);
        sink_put(k, o->buf + pos, end - pos);
        if (!nl) sink_put(k, "\n", 1);
        pos = end;
    }
}

/* Emit complete lines of o; with at_eof, also the rest. */
void mx_out_flush(int r, struct mx_out *o, int at_eof)
{
    if (o->len == 0) return;
    size_t n = 0;
    for (size_t i = o->len; i > 0; i--)
        if (o->buf[i - 1] == '\n') {
            n = i;
            break;
        }
    if (at_eof || (n == 0 && o->len >= MX_LINE_MAX)) n = o->len;
    if (n == 0) return;
    emit(r, o, n, at_eof);
    memmove(o->buf, o->buf + n, o->len - n);
    o->len -= n;
    sink_flush(sink_of[o->which], 0);
}

void mx_out_close(int r, struct mx_out *o)
{
    close(o->fd);
    o->fd = -1;
    mx_out_flush(r, o, 1);
    free(o->buf);
    o->buf = NULL;
    o->len = o->cap = 0;
}

/* Room in a full line buffer: doubled up to MX_LINE_MAX, then the whole
 * lines it holds are written out. */
static void mx_out_room(int r, struct mx_out *o)
{
    if (o->len < o->cap) return;
    if (o->cap < MX_LINE_MAX) {
        size_t cap = o->cap ? 2 * o->cap : 4096;
        char *b = realloc(o->buf, cap);
        if (!b) {
            mx_msg("out of memory");
            exit(1);
        }
        o->buf = b;
        o->cap = cap;
    } else {
        mx_out_flush(r, o, 0);
    }
}

/* Output of rank r that a proxy forwarded (remote ranks have no pipe here). */
void mx_out_data(int r, struct mx_out *o, const char *p, size_t n)
{
    while (n > 0) {
        mx_out_room(r, o);
        if (o->len == o->cap) mx_out_flush(r, o, 1);   /* one line fills it: cut */
        size_t k = o->cap - o->len < n ? o->cap - o->len : n;
        memcpy(o->buf + o->len, p, k);
        o->len += k;
        p += k;
        n -= k;
    }
    mx_out_flush(r, o, 0);
}

/* End of a remote rank's stream: the rest, then the buffer is freed. */
void mx_out_eof(int r, struct mx_out *o)
{
    mx_out_flush(r, o, 1);
    free(o->buf);
    o->buf = NULL;
    o->len = o->cap = 0;
}

/* Read what a rank's pipe holds now (bounded); closes it at EOF.  The line
 * buffer is allocated on the first output and grows up to MX_LINE_MAX. */
void mx_out_read(int r, struct mx_out *o, int drain)
{
    int rounds = drain ? 256 : 16;
    while (o->fd >= 0 && rounds-- > 0) {
        mx_out_room(r, o);
        ssize_t n = read(o->fd, o->buf + o->len, o->cap - o->len);
        if (n > 0) {
            o->len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        mx_out_close(r, o);                  /* EOF or error */
        return;
    }
    mx_out_flush(r, o, 0);
}

/* At the end: write what the sinks hold, waiting as long as the reader
 * takes, unless mpiexec was (or now is) told to stop by a signal: then what
 * cannot be written at once is dropped. */
void mx_sinks_finish(int sigfd)
{
    for (int w = 0; w < 2; w++) {
        struct mx_sink *k = &sinks[w];
        while (!sink_flush(k, 0) && !mx_signalled) {
            struct pollfd p[2] = { { .fd = k->fd, .events = POLLOUT }, { .fd = sigfd, .events = POLLIN } };
            if (poll(p, 2, -1) < 0 && errno != EINTR) break;
            struct signalfd_siginfo si;
            while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
                if (si.ssi_signo != SIGCHLD && si.ssi_signo != SIGQUIT) mx_signalled = 1;
        }
        k->len = k->off = 0;
    }
}

void mx_sinks_at_exit(void)
{
    for (int w = 0; w < 2; w++) sink_flush(&sinks[w], mx_signalled ? 0 : 1000);
}
