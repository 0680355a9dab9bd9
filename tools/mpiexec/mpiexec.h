/* mpiexec: shared declarations of mpiexec.c (options, spawn, event loop,
 * stdio, signals) and control.c (the control channel: listener, rank
 * connections, key-value exchange, abort, finalize).
 *
 * Control protocol (the rpim client in components/rpim/fork/rpim_fork.c
 * speaks the same; keep both in step).  Every message is a frame:
 *     u32 len   (big endian: number of bytes that follow, type included)
 *     u8  type
 *     payload   (len - 1 bytes; integers are u32/i32 big endian,
 *               strings are u32 length + bytes, no NUL)
 *   rank -> mpiexec
 *     HELLO    1  secret[32] (hex chars of KUMI_JOB_SECRET), u32 rank, u32 pid
 *     PUT      2  str key, str value
 *     FENCE    3  (empty)
 *     ABORT    4  i32 errorcode, str message
 *     FINALIZE 5  (empty)
 *   mpiexec -> rank
 *     HELLO_OK    0x81 (empty)
 *     FENCE_DONE  0x83 u32 count, count x { u32 rank, str key, str value }
 *     ABORT_OK    0x84 (empty)
 *     FINALIZE_OK 0x85 (empty)
 * A connection must send a correct HELLO first, within MX_HELLO_TIMEOUT
 * seconds; otherwise (or on any malformed frame) it is closed and ignored.
 */
#ifndef KUMI_MPIEXEC_H
#define KUMI_MPIEXEC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MX_MSG_HELLO        1
#define MX_MSG_PUT          2
#define MX_MSG_FENCE        3
#define MX_MSG_ABORT        4
#define MX_MSG_FINALIZE     5
#define MX_MSG_HELLO_OK     0x81
#define MX_MSG_FENCE_DONE   0x83
#define MX_MSG_ABORT_OK     0x84
#define MX_MSG_FINALIZE_OK  0x85

#define MX_SECRET_LEN       32          /* hex characters */
#define MX_MAX_FRAME        (64 * 1024) /* largest frame a rank may send */
#define MX_HELLO_TIMEOUT    3.0         /* seconds to present the secret */
#define MX_MAX_STRANGERS    64          /* unauthenticated connections at once */

struct mx_buf {
    char *data;
    size_t len, cap;     /* bytes held, allocated */
    size_t off;          /* bytes already consumed / written */
};

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
    char *buf;
    size_t len, cap;
    int midline;         /* a partial line was already written (buffer full) */
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

struct mx_job {
    int n;
    struct mx_rank *ranks;
    long jobid;
    char secret[MX_SECRET_LEN + 1];
    int listen_fd;
    int port;
    struct mx_conn *conns;
    int nstrangers;
    int fences_done;
    struct mx_kv *kv;
    size_t nkv, capkv;
    int verbose;
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

/* ---- mpiexec.c (called by control.c) ---- */
double mx_now(void);
void mx_rank_aborted(struct mx_job *job, int rank, int code, const char *msg);
void mx_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mx_fence_dead(int rank);   /* rank exited while the others wait for it in a fence */

#endif
