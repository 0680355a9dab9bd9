/* What the RMA files share: the active-message wire format, the per-window
 * state (struct kumi_rma), target memory, and the helpers each side calls.
 *   rma/rma.c         parameters, helpers, target layout and memory, life cycle
 *   rma/rma_target.c  the target side: applying operations, passive-target
 *                     locks, the control queue
 *   rma/rma_origin.c  the origin side: issuing operations (direct, transport
 *                     RMA, active messages) and the MPI operation calls
 *   rma/rma_sync.c    synchronisation: fence, PSCW, lock / unlock, flush, sync
 * (rma.c's opening comment describes the design.) */
#ifndef KUMI_RMA_IMPL_H
#define KUMI_RMA_IMPL_H

#include "rma/rma.h"
#include "request/request.h"
#include <kumi/param.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

enum { TAG_CTL = KUMI_TAG_RMA_CTL, TAG_DATA = KUMI_TAG_RMA_DATA, TAG_REPLY = KUMI_TAG_RMA_REPLY };   /* core/ids.h */
enum {
    M_PUT = 1, M_GET, M_ACC, M_GACC, M_CAS,
    M_LOCK, M_GRANT, M_UNLOCK, M_UNLOCK_ACK, M_FLUSH, M_FLUSH_ACK, M_POST, M_COMPLETE, M_RETRY
};

struct rma_msg {                        /* 64 bytes, on TAG_CTL */
    uint32_t kind;
    int32_t origin;                     /* sender's rank in w->comm */
    int32_t op;                         /* accumulates: predefined MPI_Op handle value */
    int32_t arg;                        /* LOCK, UNLOCK: lock type; acks: errors found */
    uint64_t addr;                      /* target: byte offset from base (dynamic: address) */
    uint64_t bytes;                     /* packed bytes of the target data */
    uint64_t dt;                        /* accumulates: the basic datatype handle */
    uint64_t nblocks;                   /* 0: one block [addr, addr+bytes); else a list follows */
    uint64_t count;                     /* UNLOCK / FLUSH / COMPLETE: operations sent so far */
    uint64_t span;                      /* bytes from addr to the end of the last block */
};
_Static_assert(sizeof(struct rma_msg) == 64, "one cache line");

struct rma_blk { uint64_t off, len; }; /* off from the target address */

/* A lock request a target cannot grant yet. */
struct lockwait { int origin, type; struct lockwait *next; };
/* An UNLOCK or FLUSH waiting for the origin's operations. */
struct ackwait { int origin, kind, type; uint64_t count; struct ackwait *next; };

struct kumi_rma {
    struct kumi_win *w;
    struct kumi_req *ctl;               /* the posted receive of TAG_CTL */
    struct rma_msg ctlbuf;
    /* origin side */
    uint64_t *sent;                     /* [size] operations sent to each target */
    int *lock;                          /* [size] 0, MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE (held) */
    int *lock_nocheck;                  /* [size] taken with MPI_MODE_NOCHECK: no messages */
    char *lockw;                        /* [size] the lock is held on the target's lock word */
    char *cma_off;                      /* [size] CMA was refused: active messages from now on */
    uint64_t *synced;                   /* [size] sent[t] when the last FLUSH / UNLOCK was answered */
    int mylocal;                        /* my index among the window's ranks of my host */
    int *local2rank;                    /* [ranks of my host] their ranks in the window */
    int *granted;                       /* [size] GRANTs received (cumulative) */
    int *acks;                          /* [size] UNLOCK_ACK / FLUSH_ACK received (cumulative) */
    int ack_errors;                     /* errors targets reported in acks */
    int fab_errors;                     /* transport RMA operations that failed */
    int *posts;                         /* [size] POSTs received, not yet consumed by a Start */
    long local;                         /* my requests not yet complete (sends, replies) */
    bool lock_all;
    bool fence_epoch;                   /* between fences (no MPI_MODE_NOSUCCEED) */
    int *start_ranks, nstart;           /* PSCW access epoch: targets; nstart < 0: none */
    /* target side */
    uint64_t *applied;                  /* [size] operations applied from each origin */
    uint64_t applied_total;
    int *completes;                     /* [size] COMPLETEs received, not yet consumed */
    uint64_t *complete_count;           /* [size] the count the last COMPLETE carried */
    int *post_ranks, npost;             /* exposure epoch: origins; npost < 0: none */
    struct lockwait *lockq, *lockq_tail; /* lock requests of active messages not granted yet */
    struct ackwait *ackq;
    int errors;                         /* operations rejected here, not reported to their origin yet */
    int first_err;                      /* error code of the first one (reported at my next sync) */
    int *rejected;                      /* [size] of them per origin (its next UNLOCK / FLUSH ack says so) */
    bool freeing;
    bool draining;                      /* ctl_done is handling queued control messages */
    struct rma_msg *q;                  /* control messages not handled yet (a ring) */
    size_t qh, qn, qcap;
    struct kumi_rma *ck_next;           /* every window's (rma_ckpt.c) */
};

/* The target memory of one operation: blocks from mem, mapped in this
 * process (pid 0) or in process pid (reached with CMA). */
struct tmem {
    uint8_t *mem;
    const struct rma_blk *blk;          /* NULL: one block of bytes */
    uint64_t nblocks, bytes;
    int pid;
};

void rma_acc_lock(struct kumi_win_ctl *c);
void rma_ckpt_link(struct kumi_rma *m);  /* rma_ckpt.c: the list of windows */
void rma_ckpt_unlink(struct kumi_rma *m);
void rma_acc_unlock(struct kumi_win_ctl *c);
int rma_check_target(struct kumi_win *w, const char *fn, int rank);
bool rma_in_epoch(struct kumi_rma *m, int t);
long rma_layout(const struct kumi_dt *dt, size_t count, struct rma_blk **out, int64_t *lo, uint64_t *span);
int rma_post_ctl(struct kumi_rma *m);
int rma_send_ctl(struct kumi_rma *m, int to, const struct rma_msg *msg);
int rma_tm_gather(const struct tmem *t, char *out);
int rma_tm_reduce(const struct tmem *t, int32_t oph, uint64_t dth, const char *in);
int rma_tm_scatter(const struct tmem *t, const char *in);
void rma_wait_local(struct kumi_rma *m);
bool rma_word_try(struct kumi_win_ctl *c, int type);
bool rma_word_try_flagged(struct kumi_rma *m, struct kumi_win_ctl *c, int type);
void rma_word_unlock(struct kumi_rma *m, struct kumi_win_ctl *c, int type);
struct kumi_req *rma_post(struct kumi_rma *m, bool send, int peer, int tag, void *buf, size_t count,
                          MPI_Datatype dt, void (*on_done)(struct kumi_req *), void *ext, int idx, int *rc);

#endif
