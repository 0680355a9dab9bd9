// SPDX-License-Identifier: GPL-2.0
/* KACC: Kumi's schedules of collective operations run in the kernel.
 *
 * /dev/kumi_kacc (misc device).  One open file is one rank's context:
 *   mmap      the shared area (vmalloc_user pages of the module); the rank
 *             writes its schedules' node and successor arrays and state
 *             blocks there (kumi_kacc_uapi.h), the module writes completion.
 *   ioctls    VERSION, ADD_SOCKET (a connected TCP socket by descriptor: a
 *             reference with sockfd_lookup; or a peer whose socket comes
 *             later), REGISTER (validate and snapshot a schedule, pin its
 *             buffers), START, UNREGISTER, NODE_DONE (the rank did the step
 *             of a node flagged for it), STATS.
 *   poll      POLLIN while the area's event counter differs from what the
 *             rank acknowledged: the rank sleeps there in a blocking wait.
 *
 * Buffers: the user pages of every node's buffers are pinned at REGISTER
 * (pin_user_pages_fast) and unpinned at UNREGISTER / close; sockets read
 * and write them through bio_vec iterators, CALC and COPY through
 * kmap_local_page.  No bounce buffer, except for a message longer than its
 * receive (truncation) or one that arrives before its receive is posted.
 *
 * Execution: START runs the schedule's ready nodes at once in the ioctl (its
 * sends' copies into the sockets there too, or on a spare CPU: steer);
 * the rest is driven by the sockets: sk_data_ready / sk_write_space queue
 * the context's work item on the CPU of the rank that owns it (the CPU of
 * its last ioctl; while the rank computes and the machine has more CPUs
 * than open contexts, unbound, for a spare CPU: steer), which reads and
 * writes the sockets (non-blocking),
 * completes nodes and runs those that become ready.  Nothing runs in
 * softirq context but the queueing.  The rank's own thread is never used.
 *
 * The node array in the area is user-writable: REGISTER copies it and the
 * successor array and validates the copy (kinds, indices, peers, lengths,
 * types and ops, a DAG from START to END); the module uses only the copy.
 * A rank that dies or closes the device: its sockets get their callbacks
 * back and are released, its pages are unpinned, its area freed.  An open
 * device holds the module (rmmod is refused while a job runs). */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/uaccess.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <linux/uio.h>
#include <linux/bvec.h>
#include <linux/highmem.h>
#include <linux/poll.h>
#include <linux/idr.h>
#include <linux/workqueue.h>
#include <linux/sched/task.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/overflow.h>
#include <net/sock.h>
#include <net/tcp.h>
#include "kumi_kacc_uapi.h"
#include "kacc_calc.h"
#include "kacc_int.h"

#define KACC_MAX_TMP  ((u64)INT_MAX)   /* bytes of a kernel copy (unexpected or truncated message) */

static struct workqueue_struct *kacc_wq, *kacc_uwq;

/* Where a context's progress work runs (kick()).  0: always on the CPU of
 * the rank that owns it (its last ioctl).  1: there too while the rank
 * sleeps (its CPU is then free) or when the machine has no more CPUs than
 * open contexts (no CPU is spare: the work must come out of some rank's
 * time, best its own); else, while the rank computes, as unbound work,
 * which the scheduler wakes on an idle CPU when there is one; then START, too,
 * leaves its sends to that work item rather than copying them in the ioctl. */
static int steer = 1;
module_param(steer, int, 0644);
MODULE_PARM_DESC(steer, "0: progress work on the rank's CPU; 1 (default): on a spare CPU while the rank runs, "
                 "when the machine has more CPUs than open contexts");
/* The peers' socket buffers (sockbuf=1, the default): at REGISTER each socket's send buffer is
 * made to hold the largest message the context's schedules send on it at once and its receive
 * buffer (so the window it advertises) the largest they receive, up to sockbuf_max bytes: a
 * send then leaves in the ioctl that queues it, TCP moves the rest from softirq as the ACKs
 * come, and a message arrives whole while the rank computes; with the default buffers
 * (autotuned from about 16 / 128 KiB, a window of 64 KiB) a large message on a cold
 * connection needs a work item on the busy CPUs again and again (sk_write_space to refill,
 * reads to open the window).  The buffers only grow.  0: the sockets' buffers as they are. */
static int sockbuf = 1;
module_param(sockbuf, int, 0644);
MODULE_PARM_DESC(sockbuf, "1 (default): size the peers' socket buffers to the schedules' messages; 0: leave them");
static int sockbuf_max = 8 << 20;
module_param(sockbuf_max, int, 0644);
MODULE_PARM_DESC(sockbuf_max, "the most bytes of one message sockbuf sizes a socket buffer for (default 8 MiB)");
static struct {
    atomic64_t registered, runs, runs_done, nodes, user_nodes, bytes_sent, bytes_recv, calc_elems, copies,
               unexpected, rejected, peers, contexts, pinned_pages;
    /* /proc/kumi_kacc only (not in struct kacc_stats): the work items' runs and their time
     * on the owning rank's CPU (taken from its computation when it runs) and on other CPUs */
    atomic64_t work_own, work_other, work_ns_own, work_ns_other;
    /* work handed to a rank in a blocking wait (kick_rank) and the runs it did itself (PROGRESS,
     * poll: progress_rank): see struct kacc_area_hdr's waiting; work that came while the rank was
     * in an ioctl, run by that ioctl before it returned (kick_ioctl): see kick */
    atomic64_t kick_rank, progress_rank, kick_ioctl;
} st;

/* A RUNPIN schedule's pages: at the end of its run, or when its START could not pin them all
 * (the arrays stay for the next run). */
static void unpin_all(struct ksched *s)
{
    u32 i;
    for (i = 0; i < s->n; i++) {
        kacc_kb_unpin(&s->b1[i]);
        kacc_kb_unpin(&s->b2[i]);
    }
}

/* ------------------------------------------------------------ schedules */
void kick(struct kctx *c)
{
    int cpu = READ_ONCE(c->cpu);
    struct task_struct *t = READ_ONCE(c->owner);
    struct kacc_area_hdr *h = smp_load_acquire(&c->area);
    bool q;
    unsigned int where = 0;
    /* a thread of the rank waits in the library (spinning, or asleep in poll() on the device):
     * it runs the work itself (kpend; see struct kacc_area_hdr), no worker is switched to */
    if (h && READ_ONCE(h->waiting)) {
        WRITE_ONCE(h->kpend, 1);
        smp_mb();                       /* kpend before waiting is read again: pairs with the rank's leaving */
        if (READ_ONCE(h->waiting)) {
            atomic64_inc(&st.kick_rank);
            wake_up_interruptible_all(&c->wq);
            KT(c, KT_KICK, 3, 1);
            return;
        }
    }
    /* the rank is in an ioctl (START: a peer's message came as its own went out): that ioctl runs
     * the work before it returns (ioctl_leave), where a worker queued on the rank's CPU would
     * interrupt it and then wait for c->lock, which it holds, and switch to it after it returns
     * (kaccwire, 8 B MPI_Iallreduce: most kicks came during the START of the peer's message) */
    if (h && atomic_read(&c->inioctl)) {
        WRITE_ONCE(h->kpend, 1);
        smp_mb();                       /* kpend before inioctl is read again: pairs with ioctl_leave */
        if (atomic_read(&c->inioctl)) {
            KT(c, KT_KICK, 4, 1);
            return;
        }
    }
    if (cpu < 0 || cpu >= nr_cpu_ids || !cpu_online(cpu)) { q = queue_work(kacc_wq, &c->work); where = 2; }
    else if (READ_ONCE(steer) && t && task_is_running(t) && num_online_cpus() > atomic64_read(&st.contexts)) {
        q = queue_work(kacc_uwq, &c->uwork);    /* the rank computes and a CPU may be spare */
        where = 1;
    } else q = queue_work_on(cpu, kacc_wq, &c->work);
    KT(c, KT_KICK, where, q);
}

static void bump(struct kctx *c)
{
    struct kacc_area_hdr *h = c->area;
    c->events++;
    WRITE_ONCE(h->events, c->events);
    wake_up_interruptible_all(&c->wq);
}

static struct kacc_state *sstate(struct ksched *s)
{
    return (struct kacc_state *)((char *)s->c->area + s->state_off);
}

void set_err(struct ksched *s, int err)
{
    if (!s->err) s->err = err;
}

static void push_ready(struct ksched *s, u32 i)
{
    if (s->rtail < s->n) s->ready[s->rtail++] = i;
}

static void flag_user(struct ksched *s, u32 i, int state)
{
    u8 *uf = (u8 *)s->c->area + s->uflag_off;
    struct kacc_state *ss = sstate(s);
    s->nst[i] = (u8)state;
    atomic64_inc(&st.user_nodes);
    smp_wmb();
    WRITE_ONCE(uf[i], 1);
    WRITE_ONCE(ss->useq, READ_ONCE(ss->useq) + 1);
    bump(s->c);
}

/* Node i did its part: flag it for the rank (USER_POST) or release its successors. */
void node_done(struct ksched *s, u32 i)
{
    const struct kacc_node *nd = &s->nd[i];
    u32 k;
    if ((nd->flags & KACC_F_USER_POST) && s->nst[i] != N_POST_DONE) {
        flag_user(s, i, N_USER_POST);
        return;
    }
    s->nst[i] = N_DONE;
    atomic64_inc(&st.nodes);
    KT(s->c, KT_NODE, s->id, i | (u32)nd->kind << 24);
    for (k = 0; k < nd->nsucc; k++) {
        u32 j = s->succ[nd->first + k];
        if (--s->pending[j] == 0) push_ready(s, j);
    }
}

static void finish(struct ksched *s)
{
    struct kacc_state *ss = sstate(s);
    s->running = false;
    if (s->runpin) unpin_all(s);        /* every node is done: nothing reads or writes them now */
    atomic64_inc(&st.runs_done);
    KT(s->c, KT_FINISH, s->id, 0);
    WRITE_ONCE(ss->err, s->err);
    WRITE_ONCE(ss->bytes, s->rbytes);
    WRITE_ONCE(ss->runs, READ_ONCE(ss->runs) + 1);
    smp_wmb();
    WRITE_ONCE(ss->state, KACC_S_DONE);
    bump(s->c);
}

static void deliver(struct kunex *x, struct kop *o)
{
    struct ksched *s = o->s;
    struct kbuf *b = &s->b1[o->node];
    u64 n = min(x->len, b->len);
    if (n) kacc_kb_rw(b, 0, x->data, (size_t)n, true);
    if (x->len > b->len) set_err(s, -EMSGSIZE);
    s->rbytes += x->len;
    kvfree(x->data);
    kfree(x);
    node_done(s, o->node);
}

/* CALC (kacc_buf.c): b2 = b2 op b1 */
static void exec_calc(struct ksched *s, u32 i)
{
    KT(s->c, KT_CALC, i, (u32)min_t(u64, s->nd[i].len, U32_MAX));
    kacc_count_elems(kacc_calc_bufs(s->c, &s->nd[i], &s->b1[i], &s->b2[i]));
    KT(s->c, KT_CALC_END, i, 0);
}

void kacc_count_elems(u64 n)
{
    atomic64_add(n, &st.calc_elems);
}

void kacc_count_pinned(s64 n)
{
    atomic64_add(n, &st.pinned_pages);
}

/* COPY */
static void exec_copy(struct ksched *s, u32 i)
{
    const struct kacc_node *nd = &s->nd[i];
    if (s->b1[i].addr != s->b2[i].addr) kacc_kb_copy(&s->b2[i], &s->b1[i], nd->len, false);
    atomic64_inc(&st.copies);
}

/* The kernel's part of node i. */
static void exec(struct ksched *s, u32 i)
{
    const struct kacc_node *nd = &s->nd[i];
    struct kop *o = &s->op[i];
    struct kpeer *p = nd->peer >= 0 ? s->c->peers[nd->peer] : NULL;
    struct kunex *x;

    s->nst[i] = N_RUN;
    switch (nd->kind) {
    case KACC_SEND:
    case KACC_RECV:
        if (!p) break;
        if (p->broken && !p->din) { set_err(s, -ECONNRESET); break; }
        o->h.magic = KACC_WIRE_MAGIC;
        o->h.ctx = nd->ctx;
        o->h.tag = (s32)((u32)nd->tag + (u32)s->tagoff);
        o->h.pad = 0;
        o->h.len = nd->len;
        o->x = NULL;
        if (nd->kind == KACC_SEND ? kacc_direct_send(p, o) : kacc_direct_recv(p, o)) return;
        if (nd->kind == KACC_SEND) {
            list_add_tail(&o->link, &p->sendq);
            /* progress() sends it, where it runs or follows (no work item
             * woken on the rank's CPU right after its START) */
            if (!s->c->progressing) kick(s->c);
            return;
        }
        list_for_each_entry(x, &p->unex, link) {
            if (x->ctx != o->h.ctx || x->tag != o->h.tag || x->waiter) continue;
            if (!x->complete) { x->waiter = o; o->x = x; return; }
            list_del(&x->link);
            deliver(x, o);
            return;
        }
        list_add_tail(&o->link, &p->posted);
        return;
    case KACC_CALC:
        exec_calc(s, i);
        break;
    case KACC_COPY:
        exec_copy(s, i);
        break;
    default:
        break;
    }
    node_done(s, i);
}

void advance(struct ksched *s)
{
    if (s->busy || !s->running) return;
    s->busy = true;
    while (s->rhead < s->rtail) {
        u32 i = s->ready[s->rhead++];
        if (i == 1) {                   /* END: every other node is done */
            s->nst[i] = N_DONE;
            s->busy = false;
            finish(s);
            return;
        }
        if (s->nst[i] == N_FUSED) node_done(s, i);     /* a CALC done with its RECV (kacc_direct.c) */
        else if (s->nd[i].flags & KACC_F_USER_PRE) flag_user(s, i, N_USER_PRE);
        else exec(s, i);
    }
    s->busy = false;
}

static void sched_free(struct ksched *s)
{
    u32 i;
    for (i = 0; i < s->n; i++) {
        if (s->b1) kacc_kb_free(&s->b1[i]);
        if (s->b2) kacc_kb_free(&s->b2[i]);
    }
    kvfree(s->b1); kvfree(s->b2); kvfree(s->op);
    kvfree(s->fuse); kvfree(s->foff); kfree(s->fconf);
    kvfree(s->nd); kvfree(s->succ); kvfree(s->npred); kvfree(s->pending); kvfree(s->ready); kvfree(s->nst);
    kfree(s);
}

/* ------------------------------------------------------------ sockets */
static void peer_fail(struct kpeer *p, int err)
{
    struct kop *o, *t;
    struct kunex *x, *y;
    if (p->broken) return;
    p->broken = true;
    pr_debug("kumi_kacc: peer connection failed (%d)\n", err);
    if (p->cur) { set_err(p->cur->s, err); node_done(p->cur->s, p->cur->node); advance(p->cur->s); p->cur = NULL; }
    kvfree(p->tmp);
    p->tmp = NULL;
    list_for_each_entry_safe(o, t, &p->sendq, link) {
        list_del(&o->link);
        set_err(o->s, err);
        node_done(o->s, o->node);
        advance(o->s);
    }
    list_for_each_entry_safe(o, t, &p->posted, link) {
        list_del(&o->link);
        set_err(o->s, err);
        node_done(o->s, o->node);
        advance(o->s);
    }
    list_for_each_entry_safe(x, y, &p->unex, link) {
        if (x->waiter) {
            set_err(x->waiter->s, err);
            node_done(x->waiter->s, x->waiter->node);
            advance(x->waiter->s);
        }
        list_del(&x->link);
        kvfree(x->data);
        kfree(x);
    }
    p->curx = NULL;
}

/* Send what the queue holds; returns whether anything moved. */
static bool peer_send(struct kpeer *p)
{
    bool moved = false;
    u64 sent = 0;
    int r = 0;
    while (!list_empty(&p->sendq) && !p->broken) {
        struct kop *o = list_first_entry(&p->sendq, struct kop, link);
        struct ksched *s = o->s;
        u64 total = sizeof o->h + o->h.len;
        struct msghdr m = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
        if (p->soff < sizeof o->h) {
            struct kvec v = { (char *)&o->h + p->soff, sizeof o->h - p->soff };
            if (o->h.len) m.msg_flags |= MSG_MORE;
            iov_iter_kvec(&m.msg_iter, ITER_SOURCE, &v, 1, v.iov_len);
        } else {
            kacc_kb_iter(&s->b1[o->node], &m.msg_iter, ITER_SOURCE, p->soff - sizeof o->h, total - p->soff);
        }
        r = sock_sendmsg(p->sock, &m);
        if (r == -EAGAIN) break;
        if (r <= 0) { peer_fail(p, r < 0 ? r : -EPIPE); return true; }
        moved = true;
        sent += r;
        p->soff += r;
        if (p->soff >= sizeof o->h) atomic64_add(min_t(u64, r, p->soff - sizeof o->h), &st.bytes_sent);
        if (p->soff < total) continue;
        p->soff = 0;
        list_del(&o->link);
        node_done(s, o->node);
        advance(s);
    }
    if (sent || r == -EAGAIN) KT(p->c, KT_SENT, (u32)min_t(u64, sent, U32_MAX), r == -EAGAIN);
    return moved;
}

static int recv_into(struct kpeer *p, struct iov_iter *it)
{
    struct msghdr m = { .msg_flags = MSG_DONTWAIT };
    m.msg_iter = *it;
    return sock_recvmsg(p->sock, &m, MSG_DONTWAIT);
}

static void payload_done(struct kpeer *p)
{
    p->payload = false;
    p->hgot = 0;
    if (p->cur) {
        struct kop *o = p->cur;
        struct ksched *s = o->s;
        p->cur = NULL;
        if (p->tmp) {
            struct kbuf *b = &s->b1[o->node];
            if (b->len) kacc_kb_rw(b, 0, p->tmp, (size_t)b->len, true);
            kvfree(p->tmp);
            p->tmp = NULL;
            set_err(s, -EMSGSIZE);
        }
        s->rbytes += p->plen;
        node_done(s, o->node);
        advance(s);
    } else if (p->curx) {
        struct kunex *x = p->curx;
        p->curx = NULL;
        x->complete = true;
        if (x->waiter) {
            struct ksched *s = x->waiter->s;
            list_del(&x->link);
            deliver(x, x->waiter);
            advance(s);
        }
    }
}

/* Start the payload of the header just read. */
static void got_header(struct kpeer *p)
{
    struct kop *o;
    struct kunex *x;
    if (p->h.magic != KACC_WIRE_MAGIC || p->h.len > KACC_MAX_MSG) { peer_fail(p, -EPROTO); return; }
    p->payload = true;
    p->plen = p->h.len;
    p->pgot = 0;
    list_for_each_entry(o, &p->posted, link) {
        if (o->h.ctx != p->h.ctx || o->h.tag != p->h.tag) continue;
        list_del(&o->link);
        p->cur = o;
        if (p->plen > o->s->b1[o->node].len &&
            (p->plen > KACC_MAX_TMP || !(p->tmp = kvmalloc(p->plen, GFP_KERNEL | __GFP_NOWARN)))) {
            p->cur = NULL;
            set_err(o->s, -ENOMEM);
            node_done(o->s, o->node);
            advance(o->s);
            peer_fail(p, -ENOMEM);
            return;
        }
        if (!p->plen) payload_done(p);
        return;
    }
    x = kzalloc(sizeof *x, GFP_KERNEL);
    if (!x || (p->plen && (p->plen > KACC_MAX_TMP || !(x->data = kvmalloc(p->plen, GFP_KERNEL | __GFP_NOWARN))))) {
        kfree(x);
        peer_fail(p, -ENOMEM);
        return;
    }
    atomic64_inc(&st.unexpected);
    x->ctx = p->h.ctx;
    x->tag = p->h.tag;
    x->len = p->plen;
    list_add_tail(&x->link, &p->unex);
    p->curx = x;
    if (!p->plen) payload_done(p);
}

static bool peer_recv(struct kpeer *p)
{
    bool moved = false;
    u64 got = 0;
    while (!p->broken) {
        struct iov_iter it;
        int r;
        if (!p->payload) {
            struct kvec v = { (char *)&p->h + p->hgot, sizeof p->h - p->hgot };
            iov_iter_kvec(&it, ITER_DEST, &v, 1, v.iov_len);
        } else if (p->cur && !p->tmp) {
            kacc_kb_iter(&p->cur->s->b1[p->cur->node], &it, ITER_DEST, p->pgot, p->plen - p->pgot);
        } else {
            struct kvec v = { (char *)(p->tmp ? p->tmp : p->curx->data) + p->pgot, p->plen - p->pgot };
            iov_iter_kvec(&it, ITER_DEST, &v, 1, v.iov_len);
        }
        r = recv_into(p, &it);
        if (r == -EAGAIN) break;
        if (r == 0 && !p->payload && !p->hgot && list_empty(&p->posted)) {
            p->broken = true;           /* the peer closed it (it finalized) */
            break;
        }
        if (r <= 0) { peer_fail(p, r < 0 ? r : -ECONNRESET); return true; }
        moved = true;
        got += r;
        if (!p->payload) {
            p->hgot += r;
            if (p->hgot == sizeof p->h) got_header(p);
        } else {
            p->pgot += r;
            atomic64_add(r, &st.bytes_recv);
            if (p->pgot == p->plen) payload_done(p);
        }
    }
    if (got) KT(p->c, KT_RECVD, (u32)min_t(u64, got, U32_MAX), 0);
    return moved;
}

static void progress(struct kctx *c)
{
    struct kacc_area_hdr *h = smp_load_acquire(&c->area);
    int round;
    if (h && READ_ONCE(h->kpend)) {     /* this run does what the kick that set it was for */
        WRITE_ONCE(h->kpend, 0);
        smp_mb();                       /* cleared before the sockets and channels are looked at */
    }
    c->progressing = true;
    for (round = 0; round < 64; round++) {
        bool moved = kacc_direct_progress(c);
        u32 i;
        for (i = 0; i < c->npeers; i++) {
            struct kpeer *p = c->peers[i];
            if (!p->sock || p->broken || p->din) continue;     /* a direct peer's socket stays idle */
            moved |= peer_recv(p);
            moved |= peer_send(p);
        }
        if (!moved) {
            c->progressing = false;
            return;
        }
    }
    c->progressing = false;
    kick(c);                            /* much to do: later, let others run */
}

static void work_run(struct kctx *c)
{
    u64 t0 = ktime_get_ns();
    bool own = raw_smp_processor_id() == READ_ONCE(c->cpu);
    KT(c, KT_WBEGIN, own, 0);
    mutex_lock(&c->lock);
    progress(c);
    mutex_unlock(&c->lock);
    KT(c, KT_WEND, own, (u32)min_t(u64, ktime_get_ns() - t0, U32_MAX));
    atomic64_inc(own ? &st.work_own : &st.work_other);
    atomic64_add(ktime_get_ns() - t0, own ? &st.work_ns_own : &st.work_ns_other);
}

static void work_fn(struct work_struct *w) { work_run(container_of(w, struct kctx, work)); }
static void uwork_fn(struct work_struct *w) { work_run(container_of(w, struct kctx, uwork)); }

static void cb_ready(struct sock *sk)
{
    struct kpeer *p;
    void (*old)(struct sock *) = NULL;
    read_lock_bh(&sk->sk_callback_lock);
    p = sk->sk_user_data;
    if (p) { old = p->old_ready; KT(p->c, KT_CB_READY, 0, 0); kick(p->c); }
    read_unlock_bh(&sk->sk_callback_lock);
    if (old) old(sk);
}

static void cb_space(struct sock *sk)
{
    struct kpeer *p;
    void (*old)(struct sock *) = NULL;
    read_lock_bh(&sk->sk_callback_lock);
    p = sk->sk_user_data;
    if (p) { old = p->old_space; KT(p->c, KT_CB_SPACE, 0, 0); kick(p->c); }
    read_unlock_bh(&sk->sk_callback_lock);
    if (old) old(sk);
}

static void peer_detach(struct kpeer *p)
{
    struct sock *sk;
    if (!p->sock) return;
    sk = p->sock->sk;
    write_lock_bh(&sk->sk_callback_lock);
    if (sk->sk_user_data == p) {
        sk->sk_user_data = NULL;
        sk->sk_data_ready = p->old_ready;
        sk->sk_write_space = p->old_space;
    }
    write_unlock_bh(&sk->sk_callback_lock);
}

/* sockbuf: grow the socket's buffers to what the schedules asked (want_snd / want_rcv: message
 * bytes); the kernel counts a buffer's bytes with their skbs' overhead, so each is made twice
 * the message (as SO_SNDBUF / SO_RCVBUF do), and the receive window's clamp follows (TCP fixed
 * it from the buffer the connection started with; autotuning raises it, a larger buffer alone
 * does not).  Not locked: TCP's autotuning may still grow them (it never shrinks them but under
 * memory pressure), for the rank's own point-to-point traffic on the socket too. */
static void peer_bufs(struct kpeer *p)
{
    struct sock *sk;
    struct tcp_sock *tp;
    u32 cap = (u32)clamp_t(int, READ_ONCE(sockbuf_max), (int)SOCK_MIN_SNDBUF, INT_MAX / 2);
    u32 snd = min(p->want_snd, cap), rcv = min(p->want_rcv, cap);
    int w;
    if (!READ_ONCE(sockbuf) || !p->sock || (snd <= p->set_snd && rcv <= p->set_rcv)) return;
    sk = p->sock->sk;
    tp = tcp_sk(sk);
    lock_sock(sk);
    if ((u64)READ_ONCE(sk->sk_sndbuf) < 2 * (u64)snd) WRITE_ONCE(sk->sk_sndbuf, (int)(2 * snd));
    if ((u64)READ_ONCE(sk->sk_rcvbuf) < 2 * (u64)rcv) WRITE_ONCE(sk->sk_rcvbuf, (int)(2 * rcv));
    w = tcp_win_from_space(sk, READ_ONCE(sk->sk_rcvbuf));
    if ((int)tp->window_clamp < w) tp->window_clamp = (u32)w;
    release_sock(sk);
    p->set_snd = max(p->set_snd, snd);
    p->set_rcv = max(p->set_rcv, rcv);
}

static int add_socket(struct kctx *c, struct kacc_sock *a)
{
    struct kpeer *p;
    struct socket *sock = NULL;
    struct sock *sk;
    int err = 0;
    if (a->fd >= 0) {
        sock = sockfd_lookup(a->fd, &err);
        if (!sock) return err;
        if (!sock->sk || (sock->sk->sk_family != AF_INET && sock->sk->sk_family != AF_INET6) ||
            sock->type != SOCK_STREAM || sock->sk->sk_protocol != IPPROTO_TCP) {
            sockfd_put(sock);
            return -EINVAL;
        }
    }
    if (a->index < 0) {
        struct kpeer **np;
        if (c->npeers >= KACC_MAX_PEERS) { err = -ENOSPC; goto out; }
        p = kzalloc(sizeof *p, GFP_KERNEL);
        np = krealloc(c->peers, (c->npeers + 1) * sizeof *np, GFP_KERNEL);
        if (!p || !np) { kfree(p); if (np) c->peers = np; err = -ENOMEM; goto out; }
        c->peers = np;
        p->c = c;
        INIT_LIST_HEAD(&p->sendq);
        INIT_LIST_HEAD(&p->posted);
        INIT_LIST_HEAD(&p->unex);
        a->index = (s32)c->npeers;
        c->peers[c->npeers++] = p;
        atomic64_inc(&st.peers);
    } else if ((u32)a->index >= c->npeers) {
        err = -EINVAL;
        goto out;
    }
    p = c->peers[a->index];
    if (!sock) return 0;
    if (p->sock) { err = -EBUSY; goto out; }
    sk = sock->sk;
    write_lock_bh(&sk->sk_callback_lock);
    if (sk->sk_user_data) {             /* somebody else's already (another context, a kernel user) */
        write_unlock_bh(&sk->sk_callback_lock);
        err = -EBUSY;
        goto out;
    }
    p->sock = sock;
    p->old_ready = sk->sk_data_ready;
    p->old_space = sk->sk_write_space;
    sk->sk_user_data = p;
    sk->sk_data_ready = cb_ready;
    sk->sk_write_space = cb_space;
    write_unlock_bh(&sk->sk_callback_lock);
    peer_bufs(p);                       /* what the schedules registered before asked */
    kick(c);                            /* what arrived before */
    return 0;
out:
    if (sock) sockfd_put(sock);
    return err;
}

/* ------------------------------------------------------------ ioctls */
static bool in_area(struct kctx *c, u64 off, u64 len, u64 align)
{
    return off % align == 0 && off <= c->area_size && len <= c->area_size - off;
}

static int validate(struct kctx *c, struct ksched *s)
{
    u32 i, k, seen = 0, h, t;
    for (i = 0; i < s->n; i++) {
        struct kacc_node *nd = &s->nd[i];
        if (nd->kind < KACC_START || nd->kind > KACC_NOP ||
            (nd->flags & ~(KACC_F_USER_PRE | KACC_F_USER_POST | KACC_F_SCRATCH)) ||
            ((nd->flags & KACC_F_SCRATCH) && nd->kind != KACC_RECV))
            return -EINVAL;
        if ((i == 0) != (nd->kind == KACC_START) || (i == 1) != (nd->kind == KACC_END)) return -EINVAL;
        if (i < 2 && nd->flags) return -EINVAL;
        if ((u64)nd->first + nd->nsucc > s->nsucc || (i == 1 && nd->nsucc)) return -EINVAL;
        if (nd->len > KACC_MAX_MSG) return -EINVAL;
        for (k = 0; k < nd->nsucc; k++) {
            u32 j = s->succ[nd->first + k];
            if (j == 0 || j >= s->n) return -EINVAL;
            s->npred[j]++;
        }
        switch (nd->kind) {
        case KACC_SEND:
        case KACC_RECV:
            if (nd->peer < -1 || (nd->peer >= 0 && (u32)nd->peer >= c->npeers)) return -EINVAL;
            break;
        case KACC_CALC:
            if (!kacc_calc_valid(nd->type, nd->op) || nd->len % kacc_type_size(nd->type)) return -EINVAL;
            break;
        }
    }
    /* every node after START, and a DAG: all of them in a topological order */
    for (i = 1; i < s->n; i++)
        if (!s->npred[i]) return -EINVAL;
    for (i = 0; i < s->n; i++) s->pending[i] = s->npred[i];
    s->ready[0] = 0;
    for (h = 0, t = 1; h < t; h++, seen++) {
        struct kacc_node *nd = &s->nd[s->ready[h]];
        for (k = 0; k < nd->nsucc; k++) {
            u32 j = s->succ[nd->first + k];
            if (--s->pending[j] == 0) s->ready[t++] = j;
        }
    }
    return seen == s->n ? 0 : -EINVAL;
}

/* Pin the nodes' buffers (pin 0: only check their addresses, for a RUNPIN registration). */
static int pin_all(struct ksched *s, bool pin)
{
    u32 i;
    int err;
    for (i = 0; i < s->n; i++) {
        const struct kacc_node *nd = &s->nd[i];
        switch (nd->kind) {
        case KACC_SEND:
        case KACC_RECV:
            if (nd->peer < 0) break;
            if (!pin) err = kacc_kb_check(nd->buf, nd->len);
            else err = kacc_kb_pin(&s->b1[i], nd->buf, nd->len, nd->kind == KACC_RECV);
            if (err) return err;
            break;
        case KACC_CALC:
        case KACC_COPY:
            if (!pin) err = kacc_kb_check(nd->buf, nd->len) ?: kacc_kb_check(nd->buf2, nd->len);
            else err = kacc_kb_pin(&s->b1[i], nd->buf, nd->len, false) ?: kacc_kb_pin(&s->b2[i], nd->buf2, nd->len, true);
            if (err) return err;
            break;
        }
    }
    return 0;
}

static int do_register(struct kctx *c, struct kacc_reg *r)
{
    struct ksched *s;
    u32 i;
    int err, id;
    if (!smp_load_acquire(&c->area)) return -ENXIO;
    if (r->n < 2 || r->n > KACC_MAX_NODES || r->nsucc > 8 * (u64)KACC_MAX_NODES ||
        !in_area(c, r->nodes_off, (u64)r->n * sizeof(struct kacc_node), 8) ||
        !in_area(c, r->succ_off, (u64)r->nsucc * 4, 4) ||
        !in_area(c, r->state_off, sizeof(struct kacc_state), 8) || !in_area(c, r->uflag_off, r->n, 1) ||
        (r->flags & ~KACC_REG_RUNPIN))
        return -EINVAL;
    s = kzalloc(sizeof *s, GFP_KERNEL);
    if (!s) return -ENOMEM;
    s->c = c;
    s->runpin = r->flags & KACC_REG_RUNPIN;
    s->n = r->n;
    s->nsucc = r->nsucc;
    s->state_off = r->state_off;
    s->uflag_off = r->uflag_off;
    s->nd = kvmalloc_array(s->n, sizeof *s->nd, GFP_KERNEL);
    s->succ = kvmalloc_array(max(s->nsucc, 1u), sizeof *s->succ, GFP_KERNEL);
    s->npred = kvcalloc(s->n, sizeof *s->npred, GFP_KERNEL);
    s->pending = kvmalloc_array(s->n, sizeof *s->pending, GFP_KERNEL);
    s->ready = kvmalloc_array(s->n, sizeof *s->ready, GFP_KERNEL);
    s->nst = kvcalloc(s->n, 1, GFP_KERNEL);
    s->b1 = kvcalloc(s->n, sizeof *s->b1, GFP_KERNEL);
    s->b2 = kvcalloc(s->n, sizeof *s->b2, GFP_KERNEL);
    s->op = kvcalloc(s->n, sizeof *s->op, GFP_KERNEL);
    if (!s->nd || !s->succ || !s->npred || !s->pending || !s->ready || !s->nst || !s->b1 || !s->b2 || !s->op) {
        err = -ENOMEM;
        goto fail;
    }
    /* the snapshot: the rank may write the area at any time, the module uses only this */
    memcpy(s->nd, (char *)c->area + r->nodes_off, (size_t)s->n * sizeof *s->nd);
    memcpy(s->succ, (char *)c->area + r->succ_off, (size_t)s->nsucc * sizeof *s->succ);
    if ((err = validate(c, s))) goto fail;
    for (i = 0; i < s->n; i++) {
        INIT_LIST_HEAD(&s->op[i].link);
        s->op[i].s = s;
        s->op[i].node = i;
    }
    if ((err = pin_all(s, !s->runpin))) goto fail;
    for (i = 0; i < s->n; i++) {        /* sockbuf: the messages' sizes per peer */
        const struct kacc_node *nd = &s->nd[i];
        u32 want = (u32)min_t(u64, nd->len + sizeof(struct kacc_wire), U32_MAX);
        if ((nd->kind != KACC_SEND && nd->kind != KACC_RECV) || nd->peer < 0) continue;
        if (nd->kind == KACC_SEND) c->peers[nd->peer]->want_snd = max(c->peers[nd->peer]->want_snd, want);
        else c->peers[nd->peer]->want_rcv = max(c->peers[nd->peer]->want_rcv, want);
    }
    for (i = 0; i < c->npeers; i++) peer_bufs(c->peers[i]);
    if ((err = kacc_direct_plan(s))) goto fail;
    id = idr_alloc(&c->scheds, s, 1, KACC_MAX_SCHEDS, GFP_KERNEL);
    if (id < 0) { err = id; goto fail; }
    s->id = (u32)id;
    r->id = s->id;
    atomic64_inc(&st.registered);
    return 0;
fail:
    atomic64_inc(&st.rejected);
    sched_free(s);
    return err;
}

static int do_start(struct kctx *c, u32 id, s32 tagoff)
{
    struct ksched *s = idr_find(&c->scheds, id);
    struct kacc_state *ss;
    bool spare;
    u32 i;
    int err;
    if (!s || s->zombie) return -ENOENT;
    if (s->running) return -EBUSY;
    if (s->runpin && (err = pin_all(s, true))) {
        unpin_all(s);
        return err;
    }
    s->tagoff = tagoff;
    ss = sstate(s);
    for (i = 0; i < s->n; i++) { s->pending[i] = s->npred[i]; s->nst[i] = N_WAIT; }
    s->rhead = s->rtail = 0;
    s->err = 0;
    s->rbytes = 0;
    s->running = true;
    WRITE_ONCE(ss->err, 0);
    WRITE_ONCE(ss->state, KACC_S_RUNNING);
    atomic64_inc(&st.runs);
    KT(c, KT_START, s->id, s->n);
    push_ready(s, 0);
    /* the sends it queues go out in progress() below, in this ioctl; where a CPU may be spare
     * (steer), from the work item there instead (exec() kicks it): the rank goes back to its
     * computation without copying them into the socket itself */
    spare = READ_ONCE(steer) && num_online_cpus() > atomic64_read(&st.contexts);
    c->progressing = !spare;
    advance(s);
    if (!spare) progress(c);
    return 0;
}

static int do_node_done(struct kctx *c, struct kacc_node_done *d)
{
    struct ksched *s = idr_find(&c->scheds, d->id);
    if (!s || !s->running || d->node >= s->n) return -EINVAL;
    if (d->err < 0 && d->err > -4096) set_err(s, d->err);
    else if (d->err) set_err(s, -EIO);
    c->progressing = true;              /* progress() below sends what this queues */
    if (s->nst[d->node] == N_USER_PRE) {
        s->busy = true;
        exec(s, d->node);
        s->busy = false;
    } else if (s->nst[d->node] == N_USER_POST) {
        s->nst[d->node] = N_POST_DONE;
        node_done(s, d->node);
    } else {
        c->progressing = false;
        return -EINVAL;
    }
    advance(s);
    progress(c);
    return 0;
}

static int do_unregister(struct kctx *c, u32 id)
{
    struct ksched *s = idr_find(&c->scheds, id);
    if (!s || s->zombie) return -ENOENT;
    if (s->running) {                   /* its operations are queued: freed with the context */
        s->zombie = true;
        return 0;
    }
    idr_remove(&c->scheds, id);
    sched_free(s);
    return 0;
}

static void stats_get(struct kacc_stats *o)
{
    o->registered = atomic64_read(&st.registered);
    o->runs = atomic64_read(&st.runs);
    o->runs_done = atomic64_read(&st.runs_done);
    o->nodes = atomic64_read(&st.nodes);
    o->user_nodes = atomic64_read(&st.user_nodes);
    o->bytes_sent = atomic64_read(&st.bytes_sent);
    o->bytes_recv = atomic64_read(&st.bytes_recv);
    o->calc_elems = atomic64_read(&st.calc_elems);
    o->copies = atomic64_read(&st.copies);
    o->unexpected = atomic64_read(&st.unexpected);
    o->rejected = atomic64_read(&st.rejected);
    o->peers = atomic64_read(&st.peers);
    o->contexts = atomic64_read(&st.contexts);
    o->pinned_pages = atomic64_read(&st.pinned_pages);
}

static long kacc_ioctl_do(struct file *f, unsigned int cmd, unsigned long arg);

/* The end of an ioctl that changes state: work a kick left to it (kpend, while inioctl was
 * not 0) runs now, once; what comes after goes to the worker or a waiting rank as before.
 * atomic_dec_and_test orders the count before kpend is read: pairs with kick. */
static void ioctl_leave(struct kctx *c)
{
    struct kacc_area_hdr *h = smp_load_acquire(&c->area);
    if (!atomic_dec_and_test(&c->inioctl) || !h || !READ_ONCE(h->kpend)) return;
    atomic64_inc(&st.kick_ioctl);
    mutex_lock(&c->lock);
    progress(c);
    mutex_unlock(&c->lock);
}

/* The ioctls, timed in the timeline (trace=1): "ioctl NR NS" at their end. */
static long kacc_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
    struct kctx *c = f->private_data;
    u64 t0 = unlikely(READ_ONCE(kacc_trace_on)) ? ktime_get_ns() : 0;
    long rc = kacc_ioctl_do(f, cmd, arg);
    if (t0) KT(c, KT_IOCTL, _IOC_NR(cmd), (u32)min_t(u64, ktime_get_ns() - t0, U32_MAX));
    return rc;
}

static long kacc_ioctl_do(struct file *f, unsigned int cmd, unsigned long arg)
{
    struct kctx *c = f->private_data;
    void __user *u = (void __user *)arg;
    long rc = 0;
    union {
        struct kacc_version v;
        struct kacc_sock k;
        struct kacc_reg r;
        struct kacc_node_done d;
        struct kacc_stats s;
        struct kacc_direct_link l;
        struct kacc_start t;
        u32 id;
    } a;

    switch (cmd) {
    case KACC_IOC_VERSION:
        a.v.abi = KACC_ABI_VERSION;
        a.v.max_area = KACC_MAX_AREA;
        return copy_to_user(u, &a.v, sizeof a.v) ? -EFAULT : 0;
    case KACC_IOC_STATS:
        memset(&a.s, 0, sizeof a.s);
        stats_get(&a.s);
        return copy_to_user(u, &a.s, sizeof a.s) ? -EFAULT : 0;
    case KACC_IOC_DIRECT_ID: {
        struct kacc_direct_id d = { c->did, c->dsecret };
        if (!c->did) return -ENOMEM;
        return copy_to_user(u, &d, sizeof d) ? -EFAULT : 0;
    }
    case KACC_IOC_DIRECT_LINK:
    case KACC_IOC_ADD_SOCKET:
    case KACC_IOC_REGISTER:
    case KACC_IOC_START:
    case KACC_IOC_START_TAG:
    case KACC_IOC_UNREGISTER:
    case KACC_IOC_NODE_DONE:
    case KACC_IOC_PROGRESS:
        break;
    default:
        return -ENOTTY;
    }
    if (copy_from_user(&a, u, _IOC_SIZE(cmd))) return -EFAULT;
    WRITE_ONCE(c->cpu, raw_smp_processor_id());     /* progress work goes to the rank's CPU */
    if (!READ_ONCE(c->owner)) {                     /* (or a spare one while it runs: steer) */
        get_task_struct(current);
        if (cmpxchg(&c->owner, NULL, current)) put_task_struct(current);
    }
    atomic_inc(&c->inioctl);
    mutex_lock(&c->lock);
    switch (cmd) {
    case KACC_IOC_ADD_SOCKET:
        rc = add_socket(c, &a.k);
        if (!rc && copy_to_user(u, &a.k, sizeof a.k)) rc = -EFAULT;
        break;
    case KACC_IOC_REGISTER:
        rc = do_register(c, &a.r);
        if (!rc && copy_to_user(u, &a.r, sizeof a.r)) rc = -EFAULT;     /* registered all the same */
        break;
    case KACC_IOC_START:
        rc = do_start(c, a.id, 0);
        break;
    case KACC_IOC_START_TAG:
        rc = do_start(c, a.t.id, a.t.tagoff);
        break;
    case KACC_IOC_PROGRESS:
        atomic64_inc(&st.progress_rank);
        progress(c);
        break;
    case KACC_IOC_UNREGISTER:
        rc = do_unregister(c, a.id);
        break;
    case KACC_IOC_NODE_DONE:
        rc = do_node_done(c, &a.d);
        break;
    case KACC_IOC_DIRECT_LINK:
        rc = kacc_direct_link(c, &a.l);
        break;
    }
    mutex_unlock(&c->lock);
    ioctl_leave(c);
    return rc;
}

/* ------------------------------------------------------------ file */
static atomic_t kacc_ntid = ATOMIC_INIT(0);

static int kacc_open(struct inode *ino, struct file *f)
{
    struct kctx *c = kzalloc(sizeof *c, GFP_KERNEL);
    if (!c) return -ENOMEM;
    c->scratch = kmalloc(2 * PAGE_SIZE, GFP_KERNEL);
    if (!c->scratch) { kfree(c); return -ENOMEM; }
    mutex_init(&c->lock);
    mutex_init(&c->area_mx);
    idr_init(&c->scheds);
    INIT_WORK(&c->work, work_fn);
    INIT_WORK(&c->uwork, uwork_fn);
    init_waitqueue_head(&c->wq);
    c->cpu = -1;
    c->tid = (u32)atomic_inc_return(&kacc_ntid);
    kacc_direct_open(c);
    f->private_data = c;
    atomic64_inc(&st.contexts);
    return 0;
}

static int kacc_release(struct inode *ino, struct file *f)
{
    struct kctx *c = f->private_data;
    struct ksched *s;
    int id;
    u32 i;
    kacc_direct_release_begin(c);       /* no peer context queues work after this */
    for (i = 0; i < c->npeers; i++) peer_detach(c->peers[i]);    /* no callback queues work after this */
    cancel_work_sync(&c->work);
    cancel_work_sync(&c->uwork);
    kacc_direct_release_end(c);
    idr_for_each_entry(&c->scheds, s, id) sched_free(s);
    idr_destroy(&c->scheds);
    for (i = 0; i < c->npeers; i++) {
        struct kpeer *p = c->peers[i];
        struct kunex *x, *y;
        list_for_each_entry_safe(x, y, &p->unex, link) { kvfree(x->data); kfree(x); }
        kvfree(p->tmp);
        if (p->sock) sockfd_put(p->sock);
        kfree(p);
    }
    kfree(c->peers);
    vfree(c->area);
    kfree(c->scratch);
    if (c->owner) put_task_struct(c->owner);
    kfree(c);
    atomic64_dec(&st.contexts);
    return 0;
}

static int kacc_mmap(struct file *f, struct vm_area_struct *vma)
{
    struct kctx *c = f->private_data;
    size_t len = vma->vm_end - vma->vm_start;
    int rc = 0;
    if (vma->vm_pgoff || !len || len > KACC_MAX_AREA) return -EINVAL;
    mutex_lock(&c->area_mx);
    if (!c->area) {
        void *a = vmalloc_user(len);
        if (!a) { rc = -ENOMEM; goto out; }
        ((struct kacc_area_hdr *)a)->abi = KACC_ABI_VERSION;
        c->area_size = len;
        smp_store_release(&c->area, a);
    } else if (len > c->area_size) {
        rc = -EINVAL;
        goto out;
    }
    rc = remap_vmalloc_range(vma, c->area, 0);
out:
    mutex_unlock(&c->area_mx);
    return rc;
}

static __poll_t kacc_poll(struct file *f, poll_table *pt)
{
    struct kctx *c = f->private_data;
    struct kacc_area_hdr *h = smp_load_acquire(&c->area);
    poll_wait(f, &c->wq, pt);
    if (!h) return 0;
    if (READ_ONCE(h->kpend)) {          /* work handed to the waiting rank: done here, in its poll() */
        mutex_lock(&c->lock);
        atomic64_inc(&st.progress_rank);
        progress(c);
        mutex_unlock(&c->lock);
    }
    KT(c, KT_POLL, READ_ONCE(h->acked) != READ_ONCE(c->events), 0);
    return READ_ONCE(h->acked) != READ_ONCE(c->events) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations kacc_fops = {
    .owner = THIS_MODULE,
    .open = kacc_open,
    .release = kacc_release,
    .unlocked_ioctl = kacc_ioctl,
    .mmap = kacc_mmap,
    .poll = kacc_poll,
    .llseek = noop_llseek,
};

static struct miscdevice kacc_dev = {
    .minor = MISC_DYNAMIC_MINOR,
    .name = "kumi_kacc",
    .fops = &kacc_fops,
    .mode = 0666,
};

static int stats_show(struct seq_file *m, void *v)
{
    struct kacc_stats o;
    stats_get(&o);
    seq_printf(m, "abi %u\nregistered %llu\nruns %llu\nruns_done %llu\nnodes %llu\nuser_nodes %llu\n"
               "bytes_sent %llu\nbytes_recv %llu\ncalc_elems %llu\ncopies %llu\nunexpected %llu\n"
               "rejected %llu\npeers %llu\ncontexts %llu\npinned_pages %llu\n", KACC_ABI_VERSION, o.registered,
               o.runs, o.runs_done, o.nodes, o.user_nodes, o.bytes_sent, o.bytes_recv, o.calc_elems, o.copies,
               o.unexpected, o.rejected, o.peers, o.contexts, o.pinned_pages);
    seq_printf(m, "steer %d\nwork_own %lld\nwork_other %lld\nwork_us_own %lld\nwork_us_other %lld\n", READ_ONCE(steer),
               atomic64_read(&st.work_own), atomic64_read(&st.work_other),
               atomic64_read(&st.work_ns_own) / 1000, atomic64_read(&st.work_ns_other) / 1000);
    seq_printf(m, "kick_rank %lld\nprogress_rank %lld\nkick_ioctl %lld\n", atomic64_read(&st.kick_rank),
               atomic64_read(&st.progress_rank), atomic64_read(&st.kick_ioctl));
    kacc_direct_show(m);
    return 0;
}

static int __init kacc_init(void)
{
    int rc;
    kacc_wq = alloc_workqueue("kumi_kacc", WQ_HIGHPRI, 0);
    if (!kacc_wq) return -ENOMEM;
    kacc_uwq = alloc_workqueue("kumi_kacc_u", WQ_UNBOUND | WQ_HIGHPRI, 0);
    if (!kacc_uwq) { destroy_workqueue(kacc_wq); return -ENOMEM; }
    rc = kacc_trace_init();
    if (!rc) rc = misc_register(&kacc_dev);
    if (rc) { kacc_trace_exit(); destroy_workqueue(kacc_uwq); destroy_workqueue(kacc_wq); return rc; }
    proc_create_single("kumi_kacc", 0444, NULL, stats_show);
    pr_info("kumi_kacc: loaded, ABI %u\n", KACC_ABI_VERSION);
    return 0;
}

static void __exit kacc_exit(void)
{
    remove_proc_entry("kumi_kacc", NULL);
    misc_deregister(&kacc_dev);
    kacc_trace_exit();
    destroy_workqueue(kacc_uwq);
    destroy_workqueue(kacc_wq);
    pr_info("kumi_kacc: unloaded\n");
}

module_init(kacc_init);
module_exit(kacc_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Kumi KACC: MPI collective schedules run in the kernel");
