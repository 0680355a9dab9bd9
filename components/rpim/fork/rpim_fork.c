/* rpim/fork: start ranks on this host with fork/exec (launcher side, used by
 * mpiexec; the child applies struct kumi_spawn's CPU binding before exec), and the client side of mpiexec's control channel (used inside
 * MPI_Init): HELLO with the job secret, key-value PUT / FENCE / get,
 * ABORT and FINALIZE.
 *
 * Frames, message codes and limits: kumi/launch_proto.h (shared with mpiexec).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>
#include <pthread.h>
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <kumi/launch_proto.h>
#include <kumi/ckpt.h>

/* ------------------------------------------------------------ launcher */

static void rpim_fork_child_fail(const struct kumi_spawn *sp, int err)
{
    char b[1024];
    int n = snprintf(b, sizeof b, "mpiexec: rank %d: cannot execute '%s': %s\n", sp->rank,
                     sp->argv && sp->argv[0] ? sp->argv[0] : "(null)", strerror(err));
    if (n > (int)sizeof b - 1) n = (int)sizeof b - 1;
    if (n > 0) {
        ssize_t w = write(2, b, (size_t)n);
        (void)w;
    }
    _exit(127);
}

static int rpim_fork_spawn(const struct kumi_spawn *sp, pid_t *pid)
{
    if (!sp || !pid || !sp->argv || !sp->argv[0]) return EINVAL;
    if (sp->host && sp->host[0] && strcmp(sp->host, "localhost") != 0) return EHOSTUNREACH;
    pid_t launcher = getpid();
    pid_t p = fork();
    if (p < 0) return errno;
    if (p == 0) {
        /* the child: its own process group, clean signal state, its fds;
         * killed when the launcher dies (a rank in MPI_Init hands that job
         * to its watcher thread, which cleans up first).  It stays in the
         * launcher's session, unlike mpiexec's launch agents (tools/mpiexec/
         * link.c) and MPICH's ranks (Hydra gives each rank a session; Open
         * MPI's keep mpirun's, as here): under sched_autogroup the ranks of
         * a launch then share one group, so a rank that yields while it
         * waits hands its CPU to another rank of the job; a rank alone in
         * its session's group gets its CPU straight back from sched_yield
         * and spins out its slice (a session each, 4 ranks on 2 busy cores:
         * 8 B Allreduce 7 us -> 2.2 ms, 0.03 -> 2.9 s of system time) */
        setpgid(0, 0);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() != launcher) _exit(128 + SIGKILL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);          /* ignored where the launcher's parent had it so: the rank's waitpid would fail */
        int src[3] = { sp->stdin_fd, sp->stdout_fd, sp->stderr_fd };
        if (src[0] < 0) {
            src[0] = open("/dev/null", O_RDONLY);
            if (src[0] < 0) rpim_fork_child_fail(sp, errno);
        }
        /* move sources out of 0..2 first so that no dup2 clobbers another */
        for (int k = 0; k < 3; k++)
            if (src[k] >= 0 && src[k] < 3 && src[k] != k) {
                int n = fcntl(src[k], F_DUPFD, 3);
                if (n < 0) rpim_fork_child_fail(sp, errno);
                src[k] = n;
            }
        for (int k = 0; k < 3; k++) {
            if (src[k] < 0) continue;          /* keep the inherited one */
            if (src[k] == k) {
                int fl = fcntl(k, F_GETFD);
                if (fl >= 0) fcntl(k, F_SETFD, fl & ~FD_CLOEXEC);
            } else if (dup2(src[k], k) < 0) {
                rpim_fork_child_fail(sp, errno);
            }
        }
        for (int k = 0; k < 3; k++)
            if (src[k] > 2) close(src[k]);
        for (int i = 0; i < sp->nclose_fds; i++)
            if (sp->close_fds && sp->close_fds[i] > 2) close(sp->close_fds[i]);
        if (sp->cpuset && sp->cpuset_size &&
            sched_setaffinity(0, sp->cpuset_size, (const cpu_set_t *)sp->cpuset) < 0) {
            char b[256];
            int n = snprintf(b, sizeof b, "mpiexec: rank %d: cannot bind to its CPUs: %s\n", sp->rank,
                             strerror(errno));
            if (n > (int)sizeof b - 1) n = (int)sizeof b - 1;
            if (n > 0) {
                ssize_t w = write(2, b, (size_t)n);
                (void)w;
            }
            _exit(1);
        }
        extern char **environ;
        execve(sp->argv[0], sp->argv, sp->envp ? sp->envp : environ);
        rpim_fork_child_fail(sp, errno);
    }
    /* both sides set the group, whichever runs first */
    if (setpgid(p, p) < 0 && errno != EACCES && errno != ESRCH) {
        /* the child does it itself; nothing to do */
    }
    *pid = p;
    return 0;
}

/* ------------------------------------------------------------ client */

struct rpim_fork_kv {
    int rank;
    char *key, *val;
};

static int rpim_fork_fd = -1;
static int rpim_fork_rank = -1, rpim_fork_size = 0;
static long rpim_fork_jobid;
static struct rpim_fork_kv *rpim_fork_tab;
static size_t rpim_fork_ntab, rpim_fork_captab;


static int rpim_fork_write_all(const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = send(rpim_fork_fd, p, len, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                struct pollfd pf = { .fd = rpim_fork_fd, .events = POLLOUT };
                poll(&pf, 1, 1000);
                continue;
            }
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Read exactly len bytes; timeout_ms < 0: wait as long as it takes.
 * Returns 0, -1 (error/EOF), -2 (timeout). */
static int rpim_fork_read_all(void *buf, size_t len, int timeout_ms)
{
    char *p = buf;
    double end = timeout_ms >= 0 ? kumi_time() + timeout_ms / 1000.0 : 0;
    while (len > 0) {
        int t = -1;
        if (timeout_ms >= 0) {
            double left = end - kumi_time();
            if (left <= 0) return -2;
            t = (int)(left * 1000.0) + 1;
        }
        struct pollfd pf = { .fd = rpim_fork_fd, .events = POLLIN };
        int n = poll(&pf, 1, t);
        if (n < 0 && errno != EINTR) return -1;
        if (n <= 0) continue;
        ssize_t r = recv(rpim_fork_fd, p, len, 0);
        if (r == 0) return -1;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return -1;
        }
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

/* Two threads use the control connection once the rank is connected: the
 * caller of put / fence / spawn / finalize (requests, each answered by one
 * frame) and the watcher thread, which also serves checkpoint requests
 * (CKPT, CKPT_GO: unsolicited frames, kumi/launch_proto.h).  Frames are
 * written whole under rpim_fork_wmx and read whole under rpim_fork_rmx; a
 * reader that gets a frame meant for the other thread keeps it for it:
 * checkpoint frames in rpim_fork_ckq (and the watcher is kicked), an answer
 * in rpim_fork_kept. */
static pthread_mutex_t rpim_fork_wmx = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rpim_fork_rmx = PTHREAD_MUTEX_INITIALIZER;
struct rpim_fork_frame {
    int type;
    unsigned char *p;
    size_t len;
    struct rpim_fork_frame *next;
};
static struct rpim_fork_frame *rpim_fork_ckq;   /* checkpoint frames, oldest first */
static struct rpim_fork_frame *rpim_fork_kept;  /* an answer the watcher read */
static int rpim_fork_kickfd = -1;               /* eventfd: rpim_fork_ckq has frames */

/* Send a frame whose payload is the concatenation of the given pieces. */
static int rpim_fork_send(int type, const void *payload, size_t plen)
{
    unsigned char h[KUMI_LAUNCH_HDR_LEN];
    kumi_launch_put_u32(h, (uint32_t)(plen + 1));
    h[4] = (unsigned char)type;
    pthread_mutex_lock(&rpim_fork_wmx);
    int rc = 0;
    if (rpim_fork_write_all(h, KUMI_LAUNCH_HDR_LEN) < 0) rc = -1;
    else if (plen && rpim_fork_write_all(payload, plen) < 0) rc = -1;
    pthread_mutex_unlock(&rpim_fork_wmx);
    return rc;
}

/* Read one whole frame (the caller holds rpim_fork_rmx).  Returns 0, -1
 * (error, EOF, malformed), -2 (timeout), -3 (EOF before any byte). */
static int rpim_fork_read_frame(struct rpim_fork_frame **out, int timeout_ms)
{
    unsigned char h[KUMI_LAUNCH_HDR_LEN];
    int rc = rpim_fork_read_all(h, 1, timeout_ms);
    if (rc) return rc == -1 ? -3 : rc;
    rc = rpim_fork_read_all(h + 1, KUMI_LAUNCH_HDR_LEN - 1, timeout_ms < 0 ? -1 : timeout_ms + 60000);
    if (rc) return rc;
    uint32_t len = kumi_launch_get_u32(h);
    if (len < 1 || len > KUMI_LAUNCH_MAX_REPLY) return -1;
    struct rpim_fork_frame *f = calloc(1, sizeof *f);
    unsigned char *p = malloc(len);
    if (!f || !p) {
        free(f);
        free(p);
        return -1;
    }
    if (len > 1 && (rc = rpim_fork_read_all(p, len - 1, timeout_ms < 0 ? -1 : timeout_ms + 60000))) {
        free(p);
        free(f);
        return rc;
    }
    f->type = h[4];
    f->p = p;
    f->len = len - 1;
    *out = f;
    return 0;
}

static int rpim_fork_is_ckpt(int type)
{
    return type == KUMI_LAUNCH_MSG_CKPT || type == KUMI_LAUNCH_MSG_CKPT_GO;
}

/* Keep a checkpoint frame for the watcher (the caller holds rpim_fork_rmx). */
static void rpim_fork_ckq_add(struct rpim_fork_frame *f)
{
    struct rpim_fork_frame **pp = &rpim_fork_ckq;
    while (*pp) pp = &(*pp)->next;
    f->next = NULL;
    *pp = f;
    if (rpim_fork_kickfd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(rpim_fork_kickfd, &one, sizeof one);
        (void)w;
    }
}

/* Receive one frame of the expected type (or, when alt >= 0, of type alt;
 * *got says which); *payload is malloc'ed.  Returns 0, -1 (error, EOF or
 * another type), -2 (timeout), -3 (EOF before any byte of the frame). */
static int rpim_fork_recv2(int type, int alt, int *got, unsigned char **payload, size_t *plen, int timeout_ms)
{
    struct rpim_fork_frame *f = NULL;
    int rc = 0;
    pthread_mutex_lock(&rpim_fork_rmx);
    if (rpim_fork_kept) {
        f = rpim_fork_kept;
        rpim_fork_kept = NULL;
    }
    while (!f) {
        rc = rpim_fork_read_frame(&f, timeout_ms);
        if (rc) break;
        if (rpim_fork_is_ckpt(f->type)) {
            rpim_fork_ckq_add(f);
            f = NULL;
        }
    }
    pthread_mutex_unlock(&rpim_fork_rmx);
    if (rc) return rc;
    if (f->type != type && (alt < 0 || f->type != alt)) {
        free(f->p);
        free(f);
        return -1;
    }
    if (got) *got = f->type;
    if (payload) *payload = f->p;
    else free(f->p);
    if (plen) *plen = f->len;
    free(f);
    return 0;
}

static int rpim_fork_recv(int type, unsigned char **payload, size_t *plen, int timeout_ms)
{
    int rc = rpim_fork_recv2(type, -1, NULL, payload, plen, timeout_ms);
    return rc == -3 ? -1 : rc;
}

/* ---- the launcher's death ----
 * A thread watches the control connection for as long as the rank is
 * connected (MPI_Init to MPI_Finalize or abort).  When it closes, mpiexec is
 * gone (killed, even by SIGKILL): nobody will stop this rank or remove its
 * shared memory, so the thread removes the job's shared-memory objects
 * (kumi_launch_shm_cleanup, those of this user) and ends the process at
 * once.  Before MPI_Init (and for programs that never call it) the
 * parent-death signal set at spawn (SIGKILL) does the same job; it is
 * cleared once the thread watches, so that the thread can clean up first. */
static pthread_t rpim_fork_watcher;
static int rpim_fork_watching;
static int rpim_fork_stopfd = -1;        /* eventfd: the watcher should return */
static int rpim_fork_rejoining;          /* client_init from rpim_fork_rejoin: no new watcher */

/* A checkpoint frame, without waiting (NULL: none now).  A frame that is
 * not one is an answer for the caller of a request: kept for it. */
static struct rpim_fork_frame *rpim_fork_take_ckpt(void)
{
    struct rpim_fork_frame *f = NULL;
    pthread_mutex_lock(&rpim_fork_rmx);
    while (!rpim_fork_ckq && !rpim_fork_kept) {
        struct pollfd pf = { .fd = rpim_fork_fd, .events = POLLIN };
        if (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLIN)) break;
        struct rpim_fork_frame *g = NULL;
        if (rpim_fork_read_frame(&g, 60000) != 0) break;
        if (rpim_fork_is_ckpt(g->type)) rpim_fork_ckq_add(g);
        else rpim_fork_kept = g;
    }
    if (rpim_fork_ckq) {
        f = rpim_fork_ckq;
        rpim_fork_ckq = f->next;
    }
    pthread_mutex_unlock(&rpim_fork_rmx);
    return f;
}

static void rpim_fork_frame_free(struct rpim_fork_frame *f)
{
    if (!f) return;
    free(f->p);
    free(f);
}

static int rpim_fork_stopping(void)
{
    struct pollfd pf = { .fd = rpim_fork_stopfd, .events = POLLIN };
    return poll(&pf, 1, 0) == 1;
}

/* Wait for an event of the watcher: 1 a checkpoint frame may be there, 0 stop,
 * -1 the launcher is gone, 2 ms milliseconds passed (ms >= 0). */
static int rpim_fork_watch_wait(int ms)
{
    struct pollfd pf[3] = { { .fd = rpim_fork_fd, .events = POLLIN | POLLRDHUP },
                            { .fd = rpim_fork_stopfd, .events = POLLIN },
                            { .fd = rpim_fork_kickfd, .events = POLLIN } };
    for (;;) {
        int n = poll(pf, 3, ms);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) return 2;
        if (n < 0 || pf[1].revents) return 0;
        if (pf[2].revents) {
            uint64_t v;
            ssize_t r = read(rpim_fork_kickfd, &v, sizeof v);
            (void)r;
            return 1;
        }
        if (pf[0].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return -1;   /* before any data left */
        if (pf[0].revents & POLLIN) {
            pthread_mutex_lock(&rpim_fork_rmx);
            int busy = rpim_fork_kept != NULL;  /* an answer not taken yet: the data is the next one */
            pthread_mutex_unlock(&rpim_fork_rmx);
            if (busy) {
                usleep(1000);
                continue;
            }
            return 1;
        }
    }
}

static void rpim_fork_rejoin(void);

/* CKPT {u32 seq, u32 flags, str dir}: answer READY, wait for GO, let the
 * coordinator (framework/mpi/ckpt.c) do the checkpoint, answer DONE.
 * Returns like rpim_fork_watch_wait (1: go on watching). */
static int rpim_fork_checkpoint(struct rpim_fork_frame *f)
{
    char dir[4096], why[1024];
    uint32_t seq = 0, flags = 0, dl = 0;
    int bad = f->len < 12;
    if (!bad) {
        seq = kumi_launch_get_u32(f->p);
        flags = kumi_launch_get_u32(f->p + 4);
        dl = kumi_launch_get_u32(f->p + 8);
        bad = dl != f->len - 12 || dl >= sizeof dir;
    }
    if (!bad) {
        memcpy(dir, f->p + 12, dl);
        dir[dl] = 0;
    }
    int ok = bad ? 0 : kumi_ckpt_prepare(why, sizeof why);
    if (bad) snprintf(why, sizeof why, "malformed checkpoint request");
    unsigned char m[12 + sizeof why];
    size_t wl = ok ? 0 : strlen(why);
    kumi_launch_put_u32(m, seq);
    kumi_launch_put_u32(m + 4, (uint32_t)ok);
    kumi_launch_put_u32(m + 8, (uint32_t)wl);
    memcpy(m + 12, why, wl);
    if (rpim_fork_send(KUMI_LAUNCH_MSG_CKPT_READY, m, 12 + wl) < 0) {
        if (ok) kumi_ckpt_run(0, 0, "", why, sizeof why);
        return -1;
    }
    int go = -1, w = 1;
    while (go < 0) {
        struct rpim_fork_frame *g = rpim_fork_take_ckpt();
        if (g && g->type == KUMI_LAUNCH_MSG_CKPT_GO && g->len == 8 && kumi_launch_get_u32(g->p) == seq)
            go = kumi_launch_get_u32(g->p + 4) != 0;
        rpim_fork_frame_free(g);
        if (go >= 0 || g) continue;
        /* ready: serve the other ranks meanwhile (framework/mpi/ckpt.c) */
        w = rpim_fork_watch_wait(ok ? 1 : -1);
        if (w == 2) {
            kumi_ckpt_serve();
            w = 1;
        }
        if (w <= 0) break;
    }
    if (go < 0) go = 0;
    char out[1024];
    int done;
    if (ok) {
        done = kumi_ckpt_run(go, flags, dir, out, sizeof out);
        if (done == 2) {                           /* restarted from the image: join the new launcher */
            rpim_fork_rejoin();
            kumi_ckpt_resume(out, sizeof out);
            return 1;
        }
    } else {
        done = 0;
        snprintf(out, sizeof out, "%s", why);
    }
    if (w <= 0) return w;
    size_t ol = strlen(out);
    kumi_launch_put_u32(m, seq);
    kumi_launch_put_u32(m + 4, (uint32_t)done);
    kumi_launch_put_u32(m + 8, (uint32_t)ol);
    memcpy(m + 12, out, ol);
    if (rpim_fork_send(KUMI_LAUNCH_MSG_CKPT_DONE, m, 12 + ol) < 0) return -1;
    return 1;
}

static void *rpim_fork_watch(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);  /* signals are the application's; SIGPIPE turns into EPIPE */
    for (;;) {
        int w = rpim_fork_watch_wait(-1);
        if (w == 0) return NULL;
        if (w < 0) break;
        struct rpim_fork_frame *f;
        while (w > 0 && (f = rpim_fork_take_ckpt()) != NULL) {
            if (f->type == KUMI_LAUNCH_MSG_CKPT) w = rpim_fork_checkpoint(f);
            rpim_fork_frame_free(f);                /* a stray CKPT_GO: dropped */
        }
        if (w == 0) return NULL;
        if (w < 0) break;
        if (rpim_fork_stopping()) return NULL;
    }
    int removed = kumi_launch_shm_cleanup(rpim_fork_jobid);
    char b[256];
    int l = snprintf(b, sizeof b, "rank %d: the launcher (mpiexec) of job %ld is gone; ending this process"
                     " (%d shared-memory object%s of the job removed)\n", rpim_fork_rank, rpim_fork_jobid,
                     removed, removed == 1 ? "" : "s");
    if (l > 0) {
        ssize_t w = write(2, b, (size_t)l < sizeof b ? (size_t)l : sizeof b - 1);
        (void)w;
    }
    /* what the rank started (its process group, made at spawn) goes with it:
     * nobody else is left to stop it (a proxy killed by SIGKILL, under a
     * Slurm without cgroups) */
    if (getpgrp() == getpid()) kill(0, SIGKILL);
    _exit(128 + SIGHUP);
}

static void rpim_fork_watch_start(void)
{
    rpim_fork_stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (rpim_fork_stopfd < 0) return;
    rpim_fork_kickfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (rpim_fork_kickfd < 0 || pthread_create(&rpim_fork_watcher, NULL, rpim_fork_watch, NULL) != 0) {
        close(rpim_fork_stopfd);
        if (rpim_fork_kickfd >= 0) close(rpim_fork_kickfd);
        rpim_fork_stopfd = rpim_fork_kickfd = -1;
        return;
    }
    rpim_fork_watching = 1;
    /* the thread takes over from the parent-death signal of the spawn */
    int sig = 0;
    if (prctl(PR_GET_PDEATHSIG, &sig) == 0 && sig == SIGKILL) prctl(PR_SET_PDEATHSIG, 0);
}

static void rpim_fork_watch_stop(void)
{
    if (!rpim_fork_watching) return;
    uint64_t one = 1;
    ssize_t w = write(rpim_fork_stopfd, &one, sizeof one);
    (void)w;
    pthread_join(rpim_fork_watcher, NULL);
    close(rpim_fork_stopfd);
    close(rpim_fork_kickfd);
    rpim_fork_stopfd = rpim_fork_kickfd = -1;
    rpim_fork_watching = 0;
    while (rpim_fork_ckq) {
        struct rpim_fork_frame *f = rpim_fork_ckq;
        rpim_fork_ckq = f->next;
        rpim_fork_frame_free(f);
    }
    rpim_fork_frame_free(rpim_fork_kept);
    rpim_fork_kept = NULL;
}

static void rpim_fork_close(void)
{
    rpim_fork_watch_stop();
    if (rpim_fork_fd >= 0) close(rpim_fork_fd);
    rpim_fork_fd = -1;
}

static void rpim_fork_tab_clear(void)
{
    for (size_t i = 0; i < rpim_fork_ntab; i++) {
        free(rpim_fork_tab[i].key);
        free(rpim_fork_tab[i].val);
    }
    free(rpim_fork_tab);
    rpim_fork_tab = NULL;
    rpim_fork_ntab = rpim_fork_captab = 0;
}

/* Add or replace; takes ownership of key and val. */
static int rpim_fork_tab_set(int rank, char *key, char *val)
{
    for (size_t i = 0; i < rpim_fork_ntab; i++)
        if (rpim_fork_tab[i].rank == rank && strcmp(rpim_fork_tab[i].key, key) == 0) {
            free(key);
            free(rpim_fork_tab[i].val);
            rpim_fork_tab[i].val = val;
            return 0;
        }
    if (rpim_fork_ntab == rpim_fork_captab) {
        size_t cap = rpim_fork_captab ? 2 * rpim_fork_captab : 64;
        struct rpim_fork_kv *t = realloc(rpim_fork_tab, cap * sizeof *t);
        if (!t) {
            free(key);
            free(val);
            return -1;
        }
        rpim_fork_tab = t;
        rpim_fork_captab = cap;
    }
    rpim_fork_tab[rpim_fork_ntab].rank = rank;
    rpim_fork_tab[rpim_fork_ntab].key = key;
    rpim_fork_tab[rpim_fork_ntab].val = val;
    rpim_fork_ntab++;
    return 0;
}

static int rpim_fork_env_long(const char *name, long lo, long hi, long *out)
{
    const char *s = getenv(name);
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int rpim_fork_client_init(struct kumi_rpim_info *info)
{
    if (!getenv("KUMI_RANK")) return KUMI_UNAVAILABLE;        /* a singleton */
    const char *who = getenv("KUMI_RPIM");
    if (who && strcmp(who, "fork") != 0) return KUMI_UNAVAILABLE;
    if (rpim_fork_fd >= 0) {                                   /* already connected */
        info->rank = rpim_fork_rank;
        info->size = rpim_fork_size;
        info->jobid = rpim_fork_jobid;
        return MPI_SUCCESS;
    }
    long rank, size, jobid = 0;
    if (rpim_fork_env_long("KUMI_SIZE", 1, INT_MAX, &size))
        return kumi_error(MPI_ERR_OTHER, "MPI_Init: KUMI_SIZE is missing or invalid (was this process started by mpiexec?)");
    if (rpim_fork_env_long("KUMI_RANK", 0, size - 1, &rank))
        return kumi_error(MPI_ERR_OTHER, "MPI_Init: KUMI_RANK is invalid for KUMI_SIZE=%ld", size);
    if (getenv("KUMI_JOBID") && rpim_fork_env_long("KUMI_JOBID", 0, LONG_MAX, &jobid))
        return kumi_error(MPI_ERR_OTHER, "MPI_Init: KUMI_JOBID is invalid");
    const char *secret = getenv("KUMI_JOB_SECRET");
    if (!secret || strlen(secret) != KUMI_LAUNCH_SECRET_LEN)
        return kumi_error(MPI_ERR_OTHER, "MPI_Init: KUMI_JOB_SECRET is missing or invalid");
    const char *ctl = getenv("KUMI_CONTROL");
    const char *colon = ctl ? strrchr(ctl, ':') : NULL;
    char host[64];
    long port;
    char *end;
    if (!colon || (size_t)(colon - ctl) >= sizeof host ||
        (errno = 0, port = strtol(colon + 1, &end, 10), errno || *end || port <= 0 || port > 65535))
        return kumi_error(MPI_ERR_OTHER, "MPI_Init: KUMI_CONTROL is missing or not host:port");
    memcpy(host, ctl, (size_t)(colon - ctl));
    host[colon - ctl] = 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0) strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return kumi_error(MPI_ERR_OTHER, "MPI_Init: KUMI_CONTROL host '%s' is not an IPv4 address", host);

    unsigned char hello[KUMI_LAUNCH_HELLO_LEN];
    memcpy(hello, secret, KUMI_LAUNCH_SECRET_LEN);
    kumi_launch_put_u32(hello + KUMI_LAUNCH_SECRET_LEN, (uint32_t)rank);
    kumi_launch_put_u32(hello + KUMI_LAUNCH_SECRET_LEN + 4, (uint32_t)getpid());
    /* mpiexec closes the oldest connections that have not said who they
     * are when strangers flood its port: ours may be one of them (closed
     * before any answer); then connect again, for up to two minutes. */
    double give_up = kumi_time() + 120.0;
    int closed = 0, rc;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return kumi_error(MPI_ERR_OTHER, "MPI_Init: socket: %s", strerror(errno));
        do rc = connect(fd, (struct sockaddr *)&a, sizeof a);
        while (rc < 0 && errno == EINTR);
        if (rc < 0) {
            int e = errno;
            close(fd);
            return kumi_error(MPI_ERR_OTHER, "MPI_Init: cannot connect to mpiexec at %s: %s%s", ctl, strerror(e),
                              e == ECONNREFUSED ? " (has mpiexec exited?)" : "");
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        rpim_fork_fd = fd;
        int left = (int)((give_up - kumi_time()) * 1000.0);
        unsigned char *p = NULL;
        size_t n = 0;
        int type = 0;
        rc = rpim_fork_send(KUMI_LAUNCH_MSG_HELLO, hello, sizeof hello) < 0 ? -3
             : rpim_fork_recv2(KUMI_LAUNCH_MSG_HELLO_OK, KUMI_LAUNCH_MSG_HELLO_REFUSED, &type, &p, &n,
                               left > 0 ? left : 0);
        if (rc == 0 && type == KUMI_LAUNCH_MSG_HELLO_OK) {
            free(p);
            break;
        }
        rpim_fork_close();
        if (rc == 0) {                       /* HELLO_REFUSED {u32 reason, str text} */
            const char *why = "no reason given";
            char text[256];
            if (n >= 8) {
                uint32_t tl = kumi_launch_get_u32(p + 4);
                if (tl <= n - 8) {
                    snprintf(text, sizeof text, "%.*s", (int)tl, (const char *)p + 8);
                    why = text;
                }
            }
            int e = kumi_error(MPI_ERR_OTHER, "MPI_Init: mpiexec at %s refused rank %ld of job %ld: %s", ctl, rank,
                               jobid, why);
            free(p);
            return e;
        }
        if (rc == -3 && kumi_time() < give_up) {  /* closed before answering: again */
            closed++;
            usleep(closed < 10 ? 1000u * (unsigned)closed : 10000u);
            continue;
        }
        if (rc == -3)
            return kumi_error(MPI_ERR_OTHER, "MPI_Init: mpiexec at %s closed the connection of rank %ld %d times "
                              "before answering its HELLO (is its control port flooded by other connections?)",
                              ctl, rank, closed + 1);
        return kumi_error(MPI_ERR_OTHER, "MPI_Init: mpiexec at %s %s", ctl,
                          rc == -2 ? "did not answer this rank's HELLO within two minutes"
                                   : "sent a malformed answer to this rank's HELLO");
    }
    rpim_fork_rank = (int)rank;
    rpim_fork_size = (int)size;
    rpim_fork_jobid = jobid;
    info->rank = (int)rank;
    info->size = (int)size;
    info->jobid = jobid;
    if (!rpim_fork_rejoining) rpim_fork_watch_start();
    return MPI_SUCCESS;
}

/* In a process restarted from its checkpoint image (mpiexec --restart),
 * inside the watcher thread: the saved connection and eventfds are
 * placeholders; connect to the new launcher (the environment is the new
 * job's: kumi_ckpt_run set it) and say HELLO as the same rank.  A failure
 * ends the process with a message (there is no job to report to). */
static void rpim_fork_rejoin(void)
{
    int old = rpim_fork_rank;
    close(rpim_fork_fd);
    close(rpim_fork_stopfd);
    close(rpim_fork_kickfd);
    rpim_fork_fd = -1;
    rpim_fork_tab_clear();
    while (rpim_fork_ckq) {
        struct rpim_fork_frame *f = rpim_fork_ckq;
        rpim_fork_ckq = f->next;
        rpim_fork_frame_free(f);
    }
    rpim_fork_frame_free(rpim_fork_kept);
    rpim_fork_kept = NULL;
    rpim_fork_stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    rpim_fork_kickfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct kumi_rpim_info info;
    rpim_fork_rejoining = 1;
    int rc = rpim_fork_client_init(&info);
    rpim_fork_rejoining = 0;
    if (rc != MPI_SUCCESS || info.rank != old || rpim_fork_stopfd < 0 || rpim_fork_kickfd < 0) {
        char m[MPI_MAX_ERROR_STRING] = "";
        int l = 0;
        if (rc != MPI_SUCCESS) MPI_Error_string(rc, m, &l);
        fprintf(stderr, "rank %d: restarted from its checkpoint, but cannot join the new launcher%s%s\n", old,
                m[0] ? ": " : "", m);
        _exit(1);
    }
    /* as rpim_fork_watch_start: this thread cleans up if the launcher dies */
    int sig = 0;
    if (prctl(PR_GET_PDEATHSIG, &sig) == 0 && sig == SIGKILL) prctl(PR_SET_PDEATHSIG, 0);
}

static int rpim_fork_put(const char *key, const char *value)
{
    if (rpim_fork_fd < 0) return kumi_error(MPI_ERR_OTHER, "rpim/fork put: not connected to mpiexec");
    if (!key || !value) return kumi_error(MPI_ERR_ARG, "rpim/fork put: NULL key or value");
    size_t kl = strlen(key), vl = strlen(value);
    if (kl == 0 || kl >= KUMI_KVS_KEY_MAX)
        return kumi_error(MPI_ERR_ARG, "rpim/fork put: key length %zu not in 1..%d", kl, KUMI_KVS_KEY_MAX - 1);
    if (vl >= KUMI_KVS_VAL_MAX)
        return kumi_error(MPI_ERR_ARG, "rpim/fork put: value of key '%s' longer than %d", key, KUMI_KVS_VAL_MAX - 1);
    unsigned char *m = malloc(8 + kl + vl);
    if (!m) return kumi_error(MPI_ERR_NO_MEM, "rpim/fork put: out of memory");
    kumi_launch_put_u32(m, (uint32_t)kl);
    memcpy(m + 4, key, kl);
    kumi_launch_put_u32(m + 4 + kl, (uint32_t)vl);
    memcpy(m + 8 + kl, value, vl);
    int rc = rpim_fork_send(KUMI_LAUNCH_MSG_PUT, m, 8 + kl + vl);
    free(m);
    if (rc < 0) return kumi_error(MPI_ERR_OTHER, "rpim/fork put: lost the connection to mpiexec");
    /* our own keys are visible to get() at once */
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v || rpim_fork_tab_set(rpim_fork_rank, k, v) < 0) {
        if (k && !v) free(k);
        if (v && !k) free(v);
        return kumi_error(MPI_ERR_NO_MEM, "rpim/fork put: out of memory");
    }
    return MPI_SUCCESS;
}

static int rpim_fork_fence(void)
{
    if (rpim_fork_fd < 0) return kumi_error(MPI_ERR_OTHER, "rpim/fork fence: not connected to mpiexec");
    unsigned char *p = NULL;
    size_t n = 0;
    if (rpim_fork_send(KUMI_LAUNCH_MSG_FENCE, NULL, 0) < 0 || rpim_fork_recv(KUMI_LAUNCH_MSG_FENCE_DONE, &p, &n, -1) != 0)
        return kumi_error(MPI_ERR_OTHER, "rpim/fork fence: lost the connection to mpiexec");
    /* the whole table replaces ours */
    rpim_fork_tab_clear();
    size_t pos = 0;
    int bad = n < 4;
    uint32_t count = bad ? 0 : kumi_launch_get_u32(p);
    pos = 4;
    for (uint32_t i = 0; i < count && !bad; i++) {
        if (n - pos < 8) {
            bad = 1;
            break;
        }
        int r = (int)kumi_launch_get_u32(p + pos);
        uint32_t kl = kumi_launch_get_u32(p + pos + 4);
        pos += 8;
        if (n - pos < (size_t)kl + 4) {
            bad = 1;
            break;
        }
        const unsigned char *k = p + pos;
        pos += kl;
        uint32_t vl = kumi_launch_get_u32(p + pos);
        pos += 4;
        if (n - pos < vl) {
            bad = 1;
            break;
        }
        char *ks = malloc((size_t)kl + 1), *vs = malloc((size_t)vl + 1);
        if (!ks || !vs) {
            free(ks);
            free(vs);
            bad = 1;
            break;
        }
        memcpy(ks, k, kl);
        ks[kl] = 0;
        memcpy(vs, p + pos, vl);
        vs[vl] = 0;
        pos += vl;
        if (rpim_fork_tab_set(r, ks, vs) < 0) bad = 1;
    }
    free(p);
    if (bad) return kumi_error(MPI_ERR_OTHER, "rpim/fork fence: malformed key table from mpiexec");
    return MPI_SUCCESS;
}

static int rpim_fork_get(int rank, const char *key, char *value, size_t valuelen)
{
    if (!key || !value) return kumi_error(MPI_ERR_ARG, "rpim/fork get: NULL key or value");
    if (rank < 0 || (rpim_fork_size > 0 && rank >= rpim_fork_size))
        return kumi_error(MPI_ERR_RANK, "rpim/fork get: invalid rank %d in a job of size %d", rank, rpim_fork_size);
    for (size_t i = 0; i < rpim_fork_ntab; i++)
        if (rpim_fork_tab[i].rank == rank && strcmp(rpim_fork_tab[i].key, key) == 0) {
            size_t l = strlen(rpim_fork_tab[i].val);
            if (l + 1 > valuelen)
                return kumi_error(MPI_ERR_TRUNCATE, "rpim/fork get: value of '%s' from rank %d needs %zu bytes, buffer has %zu",
                                  key, rank, l + 1, valuelen);
            memcpy(value, rpim_fork_tab[i].val, l + 1);
            return MPI_SUCCESS;
        }
    return kumi_error(MPI_ERR_OTHER, "rpim/fork get: rank %d has not put key '%s' (before the last fence)", rank, key);
}

static void rpim_fork_abort(int errorcode, const char *msg)
{
    if (rpim_fork_fd < 0) return;
    size_t ml = msg ? strlen(msg) : 0;
    if (ml > 4000) ml = 4000;
    unsigned char m[4 + 4 + 4000];
    kumi_launch_put_u32(m, (uint32_t)errorcode);
    kumi_launch_put_u32(m + 4, (uint32_t)ml);
    if (ml) memcpy(m + 8, msg, ml);
    /* wait (briefly) until mpiexec has taken note, so it reports the abort
     * rather than our exit */
    if (rpim_fork_send(KUMI_LAUNCH_MSG_ABORT, m, 8 + ml) == 0) rpim_fork_recv(KUMI_LAUNCH_MSG_ABORT_OK, NULL, NULL, 2000);
    rpim_fork_close();
}

static int rpim_fork_client_finalize(void)
{
    int rc = MPI_SUCCESS;
    if (rpim_fork_fd >= 0) {
        if (rpim_fork_send(KUMI_LAUNCH_MSG_FINALIZE, NULL, 0) < 0 || rpim_fork_recv(KUMI_LAUNCH_MSG_FINALIZE_OK, NULL, NULL, 60000) != 0)
            rc = kumi_error(MPI_ERR_OTHER, "MPI_Finalize: lost the connection to mpiexec");
        rpim_fork_close();
    }
    rpim_fork_tab_clear();
    return rc;
}

/* ---- spawn: a new job started by mpiexec (SPAWN / SPAWN_DONE) ---- */
struct rpim_fork_msg {
    unsigned char *p;
    size_t len, cap;
    int bad;                 /* out of memory or over the frame limit */
};

static void rpim_fork_msg_put(struct rpim_fork_msg *m, const void *d, size_t n)
{
    if (m->bad) return;
    if (m->len + n > KUMI_LAUNCH_MAX_FRAME - 1) {
        m->bad = 2;
        return;
    }
    if (m->len + n > m->cap) {
        size_t cap = m->cap ? m->cap : 1024;
        while (cap < m->len + n) cap *= 2;
        unsigned char *q = realloc(m->p, cap);
        if (!q) {
            m->bad = 1;
            return;
        }
        m->p = q;
        m->cap = cap;
    }
    memcpy(m->p + m->len, d, n);
    m->len += n;
}

static void rpim_fork_msg_u32(struct rpim_fork_msg *m, uint32_t v)
{
    unsigned char b[4];
    kumi_launch_put_u32(b, v);
    rpim_fork_msg_put(m, b, 4);
}

static void rpim_fork_msg_str(struct rpim_fork_msg *m, const char *s)
{
    size_t l = s ? strlen(s) : 0;
    rpim_fork_msg_u32(m, (uint32_t)l);
    rpim_fork_msg_put(m, s, l);
}

static const char *rpim_fork_spawn_why(uint32_t r)
{
    switch (r) {
    case KUMI_LAUNCH_SPAWN_NOT_FOUND: return "program not found";
    case KUMI_LAUNCH_SPAWN_NOT_EXEC: return "program not executable";
    case KUMI_LAUNCH_SPAWN_NO_SLOTS: return "not enough free slots";
    case KUMI_LAUNCH_SPAWN_BAD_INFO: return "bad info value";
    case KUMI_LAUNCH_SPAWN_UNSUPPORTED: return "not supported by this launch";
    case KUMI_LAUNCH_SPAWN_NOT_STARTED: return "another command failed";
    case KUMI_LAUNCH_SPAWN_BAD_REQUEST: return "malformed request";
    default: return "failed";
    }
}

static int rpim_fork_spawn_job(const struct kumi_spawn_cmd *cmds, int ncmds, const char *const *env, int *errcodes,
                               char *child_jobid, size_t len)
{
    long total = 0;
    for (int i = 0; i < ncmds; i++) total += cmds[i].maxprocs;
    if (errcodes)
        for (long i = 0; i < total; i++) errcodes[i] = MPI_ERR_SPAWN;
    if (rpim_fork_fd < 0) return kumi_error(MPI_ERR_SPAWN, "spawn: not connected to mpiexec");
    struct rpim_fork_msg m = { 0 };
    rpim_fork_msg_u32(&m, (uint32_t)ncmds);
    for (int i = 0; i < ncmds; i++) {
        const struct kumi_spawn_cmd *c = &cmds[i];
        rpim_fork_msg_str(&m, c->command);
        uint32_t argc = 0;
        while (c->argv && c->argv[argc]) argc++;
        rpim_fork_msg_u32(&m, argc);
        for (uint32_t a = 0; a < argc; a++) rpim_fork_msg_str(&m, c->argv[a]);
        rpim_fork_msg_u32(&m, (uint32_t)c->maxprocs);
        rpim_fork_msg_u32(&m, (uint32_t)c->ninfo);
        for (int k = 0; k < c->ninfo; k++) {
            rpim_fork_msg_str(&m, c->info_keys[k] ? c->info_keys[k] : "");
            rpim_fork_msg_str(&m, c->info_vals[k] ? c->info_vals[k] : "");
        }
    }
    uint32_t nenv = 0;
    while (env && env[nenv]) nenv++;
    rpim_fork_msg_u32(&m, nenv);
    for (uint32_t k = 0; k < nenv; k++) rpim_fork_msg_str(&m, env[k]);
    if (m.bad) {
        free(m.p);
        return m.bad == 2 ? kumi_error(MPI_ERR_ARG, "spawn: the request (commands, arguments, info, environment) "
                                       "is longer than %d bytes", KUMI_LAUNCH_MAX_FRAME - 1)
                          : kumi_error(MPI_ERR_NO_MEM, "spawn: out of memory");
    }
    unsigned char *p = NULL;
    size_t n = 0;
    int rc = rpim_fork_send(KUMI_LAUNCH_MSG_SPAWN, m.p, m.len);
    free(m.p);
    if (rc < 0 || rpim_fork_recv(KUMI_LAUNCH_MSG_SPAWN_DONE, &p, &n, -1) != 0)
        return kumi_error(MPI_ERR_SPAWN, "spawn: lost the connection to mpiexec");
    /* u32 result, str message, str jobid, u32 n, n x u32 */
    size_t pos = 0;
    uint32_t result = 0, ml = 0, jl = 0, nc = 0;
    const char *msg = "", *jid = "";
    int bad = n < 8;
    if (!bad) {
        result = kumi_launch_get_u32(p);
        ml = kumi_launch_get_u32(p + 4);
        pos = 8;
        bad = n - pos < (size_t)ml + 4;
    }
    if (!bad) {
        msg = (const char *)p + pos;
        pos += ml;
        jl = kumi_launch_get_u32(p + pos);
        pos += 4;
        bad = n - pos < (size_t)jl + 4;
    }
    if (!bad) {
        jid = (const char *)p + pos;
        pos += jl;
        nc = kumi_launch_get_u32(p + pos);
        pos += 4;
        bad = nc != (uint32_t)total || (n - pos) / 4 < nc || n - pos != (size_t)nc * 4;
    }
    if (bad) {
        free(p);
        return kumi_error(MPI_ERR_SPAWN, "spawn: malformed answer from mpiexec");
    }
    if (errcodes)
        for (uint32_t i = 0; i < nc; i++)
            errcodes[i] = kumi_launch_get_u32(p + pos + 4 * i) == KUMI_LAUNCH_SPAWN_OK ? MPI_SUCCESS : MPI_ERR_SPAWN;
    if (result != KUMI_LAUNCH_SPAWN_OK) {
        int e = kumi_error(MPI_ERR_SPAWN, "spawn: %s: %.*s", rpim_fork_spawn_why(result), (int)ml, msg);
        free(p);
        return e;
    }
    if (child_jobid && len) snprintf(child_jobid, len, "%.*s", (int)jl, jid);
    free(p);
    return MPI_SUCCESS;
}

/* mpiexec's launch agent for the proxies of other hosts (tools/mpiexec/
 * remote.c reads it after opening the registry); registered here so that
 * kumi_info lists it and params.conf may set it.  Empty: ssh (rsh with
 * --launcher rsh). */
static const char *rpim_ssh_agent;
static const char *rpim_if_include, *rpim_if_exclude;

static void rpim_fork_register(void)
{
    kumi_param_register_string("rpim", NULL, "ssh_agent", "",
                               "mpiexec: command that starts the proxy of another host (the host name "
                               "is appended, or replaces %h); empty = \"ssh -x -o BatchMode=yes\" "
                               "(\"rsh\" with --launcher rsh); also mpiexec --launch-agent",
                               KUMI_LEVEL_USER, &rpim_ssh_agent);
    /* read by mpiexec under Slurm (tools/mpiexec/slurm.c) */
    kumi_param_register_string("rpim", NULL, "if_include", "",
                               "mpiexec under Slurm: interfaces, subnets or addresses the proxies may call back "
                               "to (comma-separated, e.g. \"eth0,10.1.0.0/16\"; empty = all)",
                               KUMI_LEVEL_USER, &rpim_if_include);
    kumi_param_register_string("rpim", NULL, "if_exclude", "",
                               "mpiexec under Slurm: interfaces, subnets or addresses the proxies never call back "
                               "to (same form as rpim_if_include)",
                               KUMI_LEVEL_USER, &rpim_if_exclude);
}

static const struct kumi_rpim_ops rpim_fork_ops = {
    .hdr = KUMI_RPIM_OPS_HDR,
    .spawn = rpim_fork_spawn,
    .client_init = rpim_fork_client_init,
    .put = rpim_fork_put,
    .fence = rpim_fork_fence,
    .get = rpim_fork_get,
    .abort = rpim_fork_abort,
    .client_finalize = rpim_fork_client_finalize,
    .spawn_job = rpim_fork_spawn_job,
};

KUMI_EXPORT const struct kumi_component kumi_rpim_fork_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "rpim",
    .name = "fork",
    .version = { 0, 1, 0 },
    .description = "start processes on this host (fork/exec); key exchange through mpiexec",
    .priority = 10,
    .register_params = rpim_fork_register,
    .open = NULL,
    .close = NULL,
    .ops = &rpim_fork_ops,
};
