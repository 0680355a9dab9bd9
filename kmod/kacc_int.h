/* SPDX-License-Identifier: GPL-2.0 */
/* The KACC module's own structures, shared by kumi_kacc.c (schedules, sockets,
 * the device) and kacc_direct.c (direct copies between the contexts of one
 * kernel). */
#ifndef KACC_INT_H
#define KACC_INT_H
#include <linux/types.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/idr.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
struct sock;
struct socket;
struct page;
struct bio_vec;
struct task_struct;
#include "kumi_kacc_uapi.h"

#define KACC_MAX_MSG  (1ull << 34)     /* bytes of one message / buffer */

struct kbuf {
    u64 addr, len;
    unsigned int np;                    /* pages pinned now */
    unsigned int cap;                   /* entries of pages and bv (kept between runs: KACC_REG_RUNPIN) */
    bool write;
    struct page **pages;
    struct bio_vec *bv;
};

struct ksched;
struct kop {                            /* per node: a SEND queued or a RECV posted */
    struct list_head link;
    struct ksched *s;
    u32 node;
    struct kacc_wire h;
    struct kunex *x;                    /* RECV: unexpected message it waits for */
    int derr;                           /* SEND, direct: an error to complete it with */
};

struct kunex {
    struct list_head link;
    s32 ctx, tag;
    u64 len;
    void *data;
    bool complete;
    struct kop *waiter;
};

enum { N_WAIT, N_USER_PRE, N_RUN, N_USER_POST, N_POST_DONE, N_DONE, N_FUSED };

struct ksched {
    u32 id, n, nsucc;
    struct kctx *c;
    struct kacc_node *nd;               /* the snapshot */
    u32 *succ, *npred, *pending, *ready;
    u32 rhead, rtail;
    u8 *nst;
    u32 *fuse;                          /* per RECV: the CALC it may do at once (kacc_direct.c), 0: none;
                                         * the RECV's buffer is that CALC's in (scratch) or its inout */
    u32 *foff, *fconf;                  /* per RECV: fconf[foff[i] .. foff[i + 1]): that CALC's ancestors
                                         * touching its inout, which must be done first */
    struct kbuf *b1, *b2;
    struct kop *op;
    u64 state_off, uflag_off;
    bool running, busy, zombie;
    bool runpin;                        /* KACC_REG_RUNPIN: pinned by each START, unpinned at its end */
    s32 tagoff;                         /* this run's tag offset (KACC_IOC_START_TAG) */
    int err;
    u64 rbytes;
};

struct kpeer {
    struct kctx *c;
    struct socket *sock;
    void (*old_ready)(struct sock *);
    void (*old_space)(struct sock *);
    bool broken;
    struct list_head sendq, posted, unex;
    u64 soff;                           /* bytes of the head send gone (header + data) */
    struct kacc_wire h;
    u64 hgot, plen, pgot;
    bool payload;
    struct kop *cur;                    /* payload into this posted receive */
    void *tmp;                          /* ... through this buffer (truncated) */
    struct kunex *curx;                 /* payload of an unexpected message */
    struct kchan *dout, *din;           /* direct (kacc_direct.c): sends to it, receives from it */
    u32 want_snd, want_rcv;             /* sockbuf: the largest message sent / received on it */
    u32 set_snd, set_rcv;               /* ... and what its socket's buffers were sized for */
};

struct kctx {
    struct mutex lock;                  /* everything below but the area */
    struct mutex area_mx;
    void *area;                         /* set once (mmap) */
    size_t area_size;
    struct kpeer **peers;
    u32 npeers;
    struct idr scheds;
    struct work_struct work;            /* on the rank's CPU (kacc_wq) */
    struct work_struct uwork;           /* unbound (kacc_uwq): see steer */
    int cpu;
    struct task_struct *owner;          /* the thread of the first ioctl (a reference) */
    bool progressing;                   /* in progress(), or about to call it (START, NODE_DONE) */
    atomic_t inioctl;                   /* threads of the rank in an ioctl that changes state (see kick) */
    u32 events;
    wait_queue_head_t wq;
    void *scratch;                      /* 2 pages: CALC / COPY */
    u64 did, dsecret;                   /* direct: this context's cookie (kacc_direct.c) */
    spinlock_t dlock;                   /* ddone */
    struct list_head ddone;             /* direct sends copied by their receiver, to complete */
    u32 tid;                            /* its number in the timeline (kacc_trace.c) */
};

/* kumi_kacc.c */
void kick(struct kctx *c);
void set_err(struct ksched *s, int err);
void node_done(struct ksched *s, u32 i);
void advance(struct ksched *s);
void kacc_count_elems(u64 n);

void kacc_count_pinned(s64 n);

/* kacc_buf.c: pinning (kacc_kb_pin: 0 or -errno; a buffer's arrays stay between its pins,
 * kacc_kb_free frees them), copies and reductions on pinned buffers (they return the elements
 * reduced) */
int kacc_kb_check(u64 addr, u64 len);
int kacc_kb_pin(struct kbuf *b, u64 addr, u64 len, bool write);
void kacc_kb_unpin(struct kbuf *b);
void kacc_kb_free(struct kbuf *b);
struct iov_iter;
void kacc_kb_iter(struct kbuf *b, struct iov_iter *it, unsigned int dir, u64 off, u64 len);
void kacc_kb_rw(struct kbuf *b, u64 off, void *mem, size_t len, bool to_buf);
u64 kacc_calc_bufs(struct kctx *c, const struct kacc_node *nd, struct kbuf *x, struct kbuf *y);
void kacc_kb_copy(struct kbuf *dst, const struct kbuf *src, u64 len, bool may_sleep);
u64 kacc_calc_out(struct kctx *c, const struct kacc_node *nd, struct kbuf *a, const struct kbuf *src,
                  struct kbuf *y);

/* kacc_direct.c */
struct seq_file;
struct kchan;
void kacc_direct_open(struct kctx *c);
void kacc_direct_release_begin(struct kctx *c);
void kacc_direct_release_end(struct kctx *c);
int kacc_direct_link(struct kctx *c, struct kacc_direct_link *l);
bool kacc_direct_send(struct kpeer *p, struct kop *o);
bool kacc_direct_recv(struct kpeer *p, struct kop *o);
bool kacc_direct_progress(struct kctx *c);
int kacc_direct_plan(struct ksched *s);
void kacc_direct_show(struct seq_file *m);

/* kacc_trace.c: the timeline (module parameter trace) */
enum { KT_START, KT_NODE, KT_FINISH, KT_CB_READY, KT_CB_SPACE, KT_KICK, KT_WBEGIN, KT_WEND, KT_SENT, KT_RECVD,
       KT_POLL, KT_CALC, KT_CALC_END, KT_IOCTL };
extern int kacc_trace_on;
void kacc_trace_ev(u32 ctx, unsigned int ev, u32 a, u32 b);
#define KT(c, ev, a, b) do { if (unlikely(READ_ONCE(kacc_trace_on))) kacc_trace_ev((c)->tid, (ev), (a), (b)); } while (0)
int kacc_trace_init(void);
void kacc_trace_exit(void);

#endif
