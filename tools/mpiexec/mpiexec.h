/* mpiexec: shared declarations of mpiexec.c (options, spawn, event loop,
 * stdio, signals) and control.c (the control channel: listener, rank
 * connections, key-value exchange, abort, finalize).
 *
 * Control protocol: framework/include/kumi/launch_proto.h (frames, message
 * codes, limits), shared with the rpim client (components/rpim/fork).
 *
 * Binding (bind.c).  --bind-to hwthread|core|package|none; by default each
 * rank is bound to one core (round-robin over the cores hwloc sees inside
 * mpiexec's own affinity mask, e.g. under taskset) when ranks <= cores, and
 * ranks stay unbound, silently, when there are more ranks than cores.  An
 * explicit --bind-to with more ranks than cores (hwthreads for hwthread) is
 * refused unless --oversubscribe (or ":overload-allowed") is given; then
 * ranks wrap round-robin.  Ranks are placed core by core; --bind-to package
 * binds each to the package of its core.  Without hwloc, every online CPU of
 * the mask counts as a core, and the package comes from sysfs.  The binding
 * is applied in the child before exec (struct kumi_spawn's cpuset,
 * sched_setaffinity) and published (locality for components; the names are
 * macros of kumi/rpim.h) in the rank's environment:
 *     KUMI_INTERNAL_BIND_CPUS   OS CPU numbers, a list like "0-3,8"
 *     KUMI_INTERNAL_BIND_LEVEL  hwthread | core | package
 *     KUMI_INTERNAL_BIND_INDEX  hwloc logical index of that object (without
 *                               hwloc: the CPU number, or the package id)
 *     KUMI_INTERNAL_BIND_SHARED 1, only when other ranks here took the same
 *                               core / hwthread (overloading allowed): such a
 *                               rank must not spin while it waits
 * and, for every rank's peers, in the key-value table (put by mpiexec on the
 * rank's behalf; seen after the first fence): kumi.bind.cpus,
 * kumi.bind.level, kumi.bind.index, same values.  All are absent for an
 * unbound rank (inherited environment values are removed).
 * --report-bindings prints one line per rank on stderr before it starts:
 *     mpiexec: rank 0 bound to core 0 (cpus 0)
 *     mpiexec: rank 2 not bound (4 processes, 2 cores)
 *
 * Shared-memory cleanup (cleanup.c).  Every shared object of a job is named
 * "/kumi.<KUMI_JOBID>.<anything>" (shm_open; i.e. /dev/shm/kumi.<jobid>.*;
 * named semaphores: /dev/shm/sem.kumi.<jobid>.*).  mpiexec removes them all
 * when the job ends, however it ends (normal end, failure, MPI_Abort, a rank
 * killed, SIGINT/SIGTERM/SIGHUP to mpiexec), and also at start (leftovers of
 * an earlier mpiexec that had the same pid and was itself SIGKILLed).
 */
#ifndef KUMI_MPIEXEC_H
#define KUMI_MPIEXEC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <kumi/launch_proto.h>
#include "proxy_proto.h"
#include "hosts.h"

#define MX_MAX_STRANGERS    64          /* unauthenticated connections at once, beyond the job's size */
#define MX_REAP_SWEEP       0.25        /* seconds between looks for exited children without a SIGCHLD */

struct mx_conn {
    int fd;
    int rank;            /* -1 until a valid HELLO */
    double deadline;     /* for the HELLO */
    struct mx_buf in, out;
    int dead;            /* to be closed and freed */
    struct mx_conn *next;
};

/* Output forwarding of one rank's stdout or stderr. */
struct mx_out {
    int fd;              /* read end, -1 at EOF */
    int which;           /* 1 stdout, 2 stderr */
    int jobno;           /* 0: the main job; k: the k-th spawned job (--tag-output) */
    char *buf;           /* allocated at the first output, up to 64 KiB; freed at EOF */
    size_t len, cap;
};

enum mx_rank_state { MX_RANK_NEW, MX_RANK_RUNNING, MX_RANK_EXITED };

struct mx_rank {
    pid_t pid;
    enum mx_rank_state state;
    int status;          /* wait status once exited */
    struct mx_conn *conn;/* authenticated control connection, or NULL */
    int connected;       /* presented HELLO at some point (MPI_Init called) */
    int finalized;
    int fences;          /* FENCE messages received */
    struct mx_out out[2];
};

struct mx_kv {
    int rank;
    char *key, *val;
    size_t klen, vlen;
};

enum mx_bind_level { MX_BIND_DEFAULT, MX_BIND_NONE, MX_BIND_HWTHREAD, MX_BIND_CORE, MX_BIND_PACKAGE };

/* Where one rank runs. */
struct mx_binding {
    int bound;           /* 0: inherits mpiexec's affinity */
    const char *level;   /* "hwthread", "core", "package" */
    int index;           /* logical index of the object at that level */
    void *cpuset;        /* cpu_set_t (CPU_ALLOC), setsize bytes */
    size_t setsize;
    char *cpus;          /* the same as a list, "0-3,8" */
    int shared;          /* other ranks of the job here have the same slot */
};

struct mx_job {
    int n;
    struct mx_rank *ranks;
    long jobid;
    char secret[KUMI_LAUNCH_SECRET_LEN + 1];
    int listen_fd;
    int port;
    struct mx_conn *conns;
    int nstrangers;
    int fences_done;
    struct mx_kv *kv;
    size_t nkv, capkv;
    int verbose;
    struct mx_binding *bind;  /* per rank */
    char *unbound_why;        /* report text when ranks are unbound */
    /* ranks behind proxies (mpiexec): the fence's table goes to them */
    void (*fence_done_hook)(struct mx_job *job, const struct mx_buf *tab);
    /* the proxy: decides itself when its ranks' fence goes upstream */
    void (*fence_check_hook)(struct mx_job *job);
    struct mx_rset *rset;     /* mpiexec: the proxies of its ranks (remote.c), or NULL */
    /* mpiexec: a frame for a rank behind a proxy (remote.c); NULL: the rank's connection */
    void (*rank_frame_hook)(struct mx_job *job, int rank, const void *frame, size_t len);
    /* SPAWN from a rank (payload as received); NULL: answered "unsupported" */
    void (*spawn_hook)(struct mx_job *job, int rank, const unsigned char *p, size_t n);
    /* CKPT_READY / CKPT_DONE from a rank (mpiexec: mx_ckpt_frame; NULL: malformed), a rank's
     * connection closed (mx_ckpt_rank_gone) */
    void (*ckpt_frame_hook)(struct mx_job *job, int rank, int type, const unsigned char *p, size_t n);
    void (*ckpt_gone_hook)(struct mx_job *job, int rank);
};

/* A parsed SPAWN request (kumi/launch_proto.h). */
struct mx_spawn_cmd {
    char *prog;
    char **args;         /* argc strings, NULL-terminated */
    int argc;
    int maxprocs;
    char **ikeys, **ivals;
    int ninfo;
};
struct mx_spawn_req {
    int ncmds;
    struct mx_spawn_cmd *cmds;
    char **env;          /* nenv KEY=VALUE, NULL-terminated */
    int nenv;
    int total;           /* sum of maxprocs */
};

/* ---- control.c ---- */
int mx_ctl_listen(struct mx_job *job);                /* 0, or -1 (message printed) */
void mx_ctl_accept(struct mx_job *job, double now);   /* listener readable */
/* events wanted for a connection's poll entry */
short mx_ctl_events(const struct mx_conn *c);
void mx_ctl_event(struct mx_job *job, struct mx_conn *c, short revents);
/* Read and handle whatever a rank already sent (called when its process
 * exited, so that an ABORT or FINALIZE is seen before the exit). */
void mx_ctl_drain_rank(struct mx_job *job, int rank);
/* Close connections whose HELLO is late; free dead ones.  Returns the next
 * HELLO deadline (or a large value). */
double mx_ctl_housekeeping(struct mx_job *job, double now);
void mx_ctl_close_all(struct mx_job *job);
/* Complete the fences every rank has entered; a fence that a rank which has
 * already exited never entered stops the job (mx_fence_dead). */
void mx_ctl_check_fence(struct mx_job *job);

/* SPAWN: parse (0, or -1: malformed; total is set as far as read), free,
 * and answer (codes: n results, NULL: all equal to result; jobid may be NULL) */
int mx_spawn_parse(const unsigned char *p, size_t n, struct mx_spawn_req *req);
void mx_spawn_req_free(struct mx_spawn_req *req);
void mx_ctl_spawn_reply(struct mx_job *job, int rank, uint32_t result, const char *msg, const char *jobid, int n,
                        const uint32_t *codes);

/* Queue a complete frame for rank's connection (the proxy forwards FENCE_DONE). */
void mx_ctl_send_frame(struct mx_job *job, int rank, const void *frame, size_t len);

/* ---- ckpt.c: coordinated checkpoints (kumi/launch_proto.h: CKPT) ---- */
void mx_ckpt_request(struct mx_job *job, const char *why);   /* SIGQUIT */
/* --restart DIR: read DIR/manifest, set mx_opt.np and mx_opt.argv (the restart
 * program and rank 0's image); exits with a message when it cannot */
void mx_ckpt_restart_plan(void);
const char *mx_ckpt_image(int rank);                         /* the image of rank (absolute) */
double mx_ckpt_timer(struct mx_job *job, double now);        /* --checkpoint-interval: the next time */
void mx_ckpt_frame(struct mx_job *job, int rank, int type, const unsigned char *p, size_t n);
void mx_ckpt_rank_gone(struct mx_job *job, int rank);       /* its connection closed */
void mx_ckpt_rank_lost(struct mx_job *job, int rank, const char *why);   /* its host was lost */
/* --restart without -host / --hostfile: host_of from the manifest's hosts */
void mx_ckpt_restart_place(const struct mx_hostlist *hl, int *host_of);

/* ---- bind.c ---- */
/* Fill job->bind (job->n entries) for the level asked; overload: allow more
 * ranks than cores/hwthreads.  Returns 0, or -1 with a message printed when
 * the binding asked for is impossible. */
int mx_bind_plan(struct mx_job *job, enum mx_bind_level level, int overload);
/* --report-bindings line for rank r */
void mx_bind_report(const struct mx_job *job, int r);

/* ---- cleanup.c ---- */
/* Unlink /dev/shm/kumi.<jobid>.* and /dev/shm/sem.kumi.<jobid>.*; returns
 * how many were removed. */
int mx_shm_cleanup(long jobid);

/* Put key=value into the table as if rank had put it. */
void mx_ctl_kv_put(struct mx_job *job, int rank, const char *key, const char *value);

/* ---- mpiexec.c (called by control.c) ---- */
double mx_now(void);
void mx_rank_aborted(struct mx_job *job, int rank, int code, const char *msg);
void mx_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mx_fence_dead(struct mx_job *job, int rank);   /* rank exited while the others wait for it in a fence */

/* ---- options.c ---- */
struct mx_opts {
    int np;
    char **xvars; int nx;              /* -x NAME or NAME=value */
    char **params; int nparams;        /* KUMI_NAME=value from --param */
    double timeout;
    int tag_output;
    int stdin_none;
    enum mx_bind_level bind;           /* --bind-to */
    int overload;                      /* --oversubscribe, or :overload-allowed */
    int report_bindings;
    const char *abi;                   /* --abi, else $KUMI_ABI; NULL or "auto": from the program */
    char **argv;                       /* program and arguments */
    int np_given;
    struct mx_hostlist hosts;          /* -host, --hostfile */
    int ppn, bynode;                   /* -ppn, --map-by node */
    const char *wdir;                  /* -wdir */
    const char *launcher;              /* --launcher ssh|rsh|fork, or NULL */
    const char *agent;                 /* --launch-agent */
    double host_timeout;               /* --host-timeout */
    int fanout;                        /* --fanout: proxies one proxy starts (0: 32) */
    int impi_client;                   /* --impi-client K (-1: not an IMPI client) */
    const char *impi_server;           /* --impi-server HOST:PORT */
    const char *impi_auth;             /* --impi-auth KEY */
    int ckpt, ckpt_stop;               /* --ckpt, --checkpoint-and-stop */
    const char *ckpt_dir;              /* --ckpt-dir, or NULL: the working directory */
    const char *restart;               /* --restart DIR */
    double ckpt_interval;              /* --checkpoint-interval S (0: none) */
};
extern struct mx_opts mx_opt;
void mx_parse_args(int argc, char **argv);
void mx_die_usage(const char *fmt, const char *arg) __attribute__((noreturn));
char *mx_xstrdup(const char *s);
void *mx_xcalloc(size_t n, size_t sz);
struct mx_abi_desc;
const struct mx_abi_desc *mx_abi_by_name(const char *s);

/* ---- output.c ---- */
struct mx_sink;
void mx_sinks_init(void);
int sink_flush(struct mx_sink *k, int wait_ms);
void sink_put(struct mx_sink *k, const void *p, size_t n);
size_t mx_sink_queued(int which);            /* bytes waiting for fd 1 or 2 */
#define MX_SINK_MAX (1024 * 1024)
/* poll entry of sink w (0 stdout, 1 stderr): fd to wait POLLOUT on, or -1 */
int mx_sink_poll_fd(int w);
void mx_sink_event(int w, short revents);
void mx_out_flush(int r, struct mx_out *o, int at_eof);
void mx_out_close(int r, struct mx_out *o);
void mx_out_read(int r, struct mx_out *o, int drain);
void mx_out_data(int r, struct mx_out *o, const char *p, size_t n);
void mx_out_eof(int r, struct mx_out *o);
void mx_sinks_finish(int sigfd);
void mx_sinks_at_exit(void);
extern int mx_signalled;                     /* mpiexec got SIGINT/SIGTERM/SIGHUP */
extern struct mx_job mx_job_main;


/* ---- remote.c: ranks behind per-host proxies ---- */
struct pollfd;
void mx_remote_start(struct mx_job *job, const int *host_of, char **argv, char **env, int rank_slot,
                     int stdin_wanted);
int mx_remote_nhosts(void);
void mx_remote_signal(int sig);
int mx_remote_stdin_room(void);
void mx_remote_stdin(const char *b, size_t n);
void mx_remote_end(void);
int mx_remote_open(void);
void mx_remote_kill(void);
int mx_remote_reaped(pid_t pid, int status);
size_t mx_remote_maxfds(void);
size_t mx_remote_pollset(struct pollfd *pfd, int *aux, int room);
void mx_remote_event(int aux, short revents, double now);
double mx_remote_timers(double now);

/* Sets of proxies of spawned jobs (each such job has proxies of its own;
 * the main job's set is the one of the mx_remote_* functions). */
struct mx_rset;
struct mx_rset_host {          /* one proxy: a host, and what its ranks run */
    const char *name;
    char **argv;
    char **env;                /* envc entries (no KUMI_RANK) */
    int envc;
    const char *wdir;          /* where its ranks start */
    int wdir_given;            /* 1: wdir must exist there */
};
struct mx_rset_ops {
    void (*rank_exited)(void *ctx, int rank, int status);
    void (*stop)(void *ctx, int code, const char *why);   /* a host lost or failing */
    int (*stopping)(void *ctx);
};
struct mx_rset *mx_rset_start(struct mx_job *job, int nh, const struct mx_rset_host *hosts, const int *host_of,
                              const struct mx_rset_ops *ops, void *ctx);
int mx_rset_started(struct mx_rset *S);      /* every proxy was ready: GO sent */
void mx_rset_signal(struct mx_rset *S, int sig);
void mx_rset_end(struct mx_rset *S);
int mx_rset_open(struct mx_rset *S);
void mx_rset_kill(struct mx_rset *S);
int mx_rset_reaped(struct mx_rset *S, pid_t pid, int status);
size_t mx_rset_maxfds(struct mx_rset *S);
size_t mx_rset_pollset(struct mx_rset *S, struct pollfd *pfd, int *aux, int room);
void mx_rset_event(struct mx_rset *S, int aux, short revents, double now);
double mx_rset_timers(struct mx_rset *S, double now);

/* ---- slurm.c: inside a Slurm allocation (--launcher slurm) ---- */
int mx_slurm_inside(void);
int mx_slurm_hosts(struct mx_hostlist *hl);
int mx_slurm_launch(int nh, char *const *names, const char *proxy, const char *secret, int *fds, pid_t *agent,
                    int *errfd, int verbose);

/* proxy_slurm.c: kumi_proxy --slurm ADDRS:PORT (started by srun) */
int mx_proxy_slurm_connect(const char *where);

/* ---- spawn.c: jobs started by a rank's SPAWN (MPI_Comm_spawn) ---- */
void mx_spawn_request(struct mx_job *parent, int rank, const unsigned char *p, size_t n);
void mx_spawn_aborted(struct mx_job *j, int rank, int code, const char *msg);
void mx_spawn_fence_dead(struct mx_job *j, int rank);
int mx_spawn_reaped(pid_t pid, int status);          /* 1: a spawned rank */
void mx_spawn_signal(int sig, int all);
void mx_spawn_busy(int *running, int *pipes_open);   /* adds the spawned jobs' */
void mx_spawn_close_pipes(void);
double mx_spawn_timers(double now);
size_t mx_spawn_maxfds(void);
size_t mx_spawn_pollset(struct pollfd *pfd, const int *room);
void mx_spawn_event(int i, short revents, double now);
void mx_spawn_cleanup(void);                          /* shared memory of every spawned job */
/* mpiexec.c for spawn.c */
struct kumi_rpim_ops;
extern const struct kumi_rpim_ops *mx_rpim_ops;
char **mx_child_env(struct mx_job *j, char *const *extra, int nextra, int nhosts, int *rank_slot);
extern int mx_hosts_user;                            /* -host / --hostfile given */
int mx_remote_mode(void);                            /* the main job's ranks are behind proxies */
int mx_remote_running_on(const char *host);          /* main job's ranks running there (remote.c) */
const char *mx_remote_host_of(int rank);             /* main job: the host of a rank behind a proxy */
int mx_make_secret(char *out);
int mx_universe_size(void);
int mx_host_is_local(const char *name);
void mx_note_failure(int code);                      /* mpiexec's exit status, unless already set */

/* ---- mpiexec.c (called by remote.c) ---- */
void mx_stop_job(int code, int sig);
/* ---- impi.c: mpiexec as an IMPI client (--impi-client) ---- */
int mx_impi_startup(int np);                       /* 0, or -1 (message printed) */
const int *mx_impi_close_fds(int r, int *n);       /* fds rank r's child closes */
void mx_impi_started(void);
int mx_impi_fd(void);                              /* the server's connection, or -1 */
void mx_impi_event(short revents);
size_t mx_impi_maxfds(void);                       /* the host agent's relay (after the start-up) */
size_t mx_impi_pollset(struct pollfd *p, int *tags);
void mx_impi_relay_event(int tag, short revents);
void mx_impi_busy(int *running, double now, double *next);
int mx_impi_spinning(double now);                  /* 1: poll without sleeping (recent relay traffic) */
void mx_impi_end(int code);
int mx_stopping(void);
void mx_rank_exited(int r, int status);

#endif
