/* Request layer: transport selection, protocols (eager, eager-sync,
 * rendezvous, cancel) and the upcalls from transports.  The life of a
 * request (cache, constructors, completion, freeing) is in req_life.c, the
 * point-to-point helpers for collective components (kumi/coll.h) in
 * coll_p2p.c. */
#include "request/request.h"
#include "registry/registry.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const struct kumi_p2p_ops **peer_ops;     /* per world rank */
static unsigned char *peer_tr;                   /* per world rank: index of its transport */
static struct kumi_comp_entry *tr_entry[KUMI_MAX_TRANSPORTS];
static const struct kumi_p2p_ops *tr_ops[KUMI_MAX_TRANSPORTS];
static int ntr;
static int nworld;
static int npeers;            /* entries of the per-peer tables: nworld, then added peers */
long kumi_req_inflight;

/* ------------------------------------------------------------ statuses */
static void status_proc_null(MPI_Status *st)
{
    memset(st, 0, sizeof *st);
    st->MPI_SOURCE = MPI_PROC_NULL;
    st->MPI_TAG = MPI_ANY_TAG;
    st->MPI_ERROR = MPI_SUCCESS;
}

/* ------------------------------------------------------------ sending */
const struct kumi_p2p_ops *kumi_req_transport(int wpeer)
{
    return (wpeer >= 0 && wpeer < npeers) ? peer_ops[wpeer] : NULL;
}

/* The names of the transports of the last MPI_Init (kept after finalize, so
 * that MPI_T reads the counters then too). */
static char tr_names[KUMI_MAX_TRANSPORTS][64];

int kumi_req_transport_index(const char *name)
{
    for (int i = 0; i < KUMI_MAX_TRANSPORTS && name && tr_names[i][0]; i++)
        if (!strcmp(tr_names[i], name)) return i;
    return -1;
}

/* Sends issued from inside an upcall (or while a flush runs) are deferred
 * so that no transport is re-entered from its own callback. */
struct kumi_req_defer {
    struct kumi_sendop *op;            /* a send, or NULL: a pull */
    int wpeer;
    uint64_t handle;                   /* pull: the transport's handle */
    struct kumi_rx *rx;                /* pull: where (NULL: drop) */
    struct kumi_req_defer *next;
};
struct kumi_req_defer *kumi_req_dq_head;      /* request.h: kumi_req_ctl_pending */
#define dq_head kumi_req_dq_head
static struct kumi_req_defer *dq_tail;
static int upcall_depth;
static bool flushing;

struct ctl { struct kumi_sendop op; };

static void ctl_done(struct kumi_sendop *op)
{
    kumi_req_inflight--;
    free(op->owner);
}

/* Checkpoint counts (framework/mpi/ckpt.c): messages handed to a transport
 * per world peer, headers received per world peer, payloads still arriving. */
static uint64_t *ck_sent, *ck_recvd;
static long ck_rx_open;

static int send_now(int wpeer, struct kumi_sendop *op)
{
    const struct kumi_p2p_ops *ops = kumi_req_transport(wpeer);
    int rc;
    if (!ops) return kumi_error(MPI_ERR_INTERN, "p2p: no transport for rank %d", wpeer);
    kumi_req_inflight++;
    rc = ops->send(wpeer, op);
    if (rc != MPI_SUCCESS) kumi_req_inflight--;
    else if (ck_sent && wpeer < nworld) ck_sent[wpeer]++;
    return rc;
}

static void defer_send(int wpeer, struct kumi_sendop *op)
{
    struct kumi_req_defer *d = malloc(sizeof *d);
    if (!d) { kumi_warn("p2p: out of memory queueing a message to rank %d", wpeer); return; }
    d->op = op; d->wpeer = wpeer; d->next = NULL; d->handle = 0; d->rx = NULL;
    if (dq_tail) dq_tail->next = d; else dq_head = d;
    dq_tail = d;
}

/* Pull a receiver-pulled (RGET) payload into rx, or drop it (rx NULL): run
 * from the deferred queue, so that no transport is re-entered. */
static void defer_pull(int wpeer, uint64_t handle, struct kumi_rx *rx)
{
    struct kumi_req_defer *d = malloc(sizeof *d);
    if (!d) { kumi_warn("p2p: out of memory queueing a pull from rank %d", wpeer); return; }
    d->op = NULL; d->wpeer = wpeer; d->handle = handle; d->rx = rx; d->next = NULL;
    if (dq_tail) dq_tail->next = d; else dq_head = d;
    dq_tail = d;
}

static void send_failed(struct kumi_sendop *op, int rc)
{
    if (op->done == ctl_done) {
        kumi_warn("p2p: could not send a control message (error %d)", rc);
        free(op->owner);
        return;
    }
    struct kumi_req *r = op->owner;
    if (r->status.MPI_ERROR == MPI_SUCCESS) r->status.MPI_ERROR = rc;
    /* nothing more will arrive for this request */
    r->pending = 0;
    kumi_req_check_complete(r);
}

void kumi_req_flush_ctl(void)
{
    if (flushing || upcall_depth) return;
    flushing = true;
    unsigned pulled = 0;                               /* transports pulled from (by index) */
    while (dq_head) {
        struct kumi_req_defer *d = dq_head;
        dq_head = d->next;
        if (!dq_head) dq_tail = NULL;
        if (!d->op) {
            const struct kumi_p2p_ops *ops = kumi_req_transport(d->wpeer);
            if (ops && (ops->caps & KUMI_P2P_CAP_RGET)) {
                if (d->rx) ck_rx_open++;               /* its kumi_p2p_rx_done comes */
                ops->pull(d->wpeer, d->handle, d->rx);
                pulled |= 1u << peer_tr[d->wpeer];
            }
            free(d);
        } else {
            int rc = send_now(d->wpeer, d->op);
            if (rc != MPI_SUCCESS) send_failed(d->op, rc);
            free(d);
        }
        /* The pass is over: a transport that keeps its pulls to read them
         * together reads them now, not at its next progress round (their
         * completions may queue more work: the loop goes on). */
        for (int i = 0; !dq_head && pulled && i < ntr; i++) {
            if (!(pulled >> i & 1)) continue;
            pulled &= ~(1u << i);
            if (tr_ops[i]->hdr.size > offsetof(struct kumi_p2p_ops, pull_flush) && tr_ops[i]->pull_flush)
                tr_ops[i]->pull_flush();
        }
    }
    flushing = false;
}

void kumi_req_defer_op(int wpeer, struct kumi_sendop *op) { defer_send(wpeer, op); }

void kumi_req_send_ctl(int wpeer, const struct kumi_hdr *hdr)
{
    struct ctl *c = calloc(1, sizeof *c);
    if (!c) { kumi_warn("p2p: out of memory sending a control message"); return; }
    c->op.hdr = *hdr;
    c->op.done = ctl_done;
    c->op.owner = c;
    defer_send(wpeer, &c->op);
    kumi_req_flush_ctl();
}

/* ------------------------------------------------------------ eager budget */
/* Flow control of eager messages (the rules: request.h).  Per world peer:
 * as its sender, the bytes charged and not given back (out); as its
 * receiver, the charged bytes of its messages still kept here (held: the
 * unexpected ones) and those that no longer take memory here and are not
 * given back yet (due).  Library lock held, like everything here. */
#define EAGER_BUDGET_DEFAULT ((size_t)8 << 20)
size_t kumi_req_eager_budget = EAGER_BUDGET_DEFAULT;
struct eager_peer { size_t out, held, due; };
static struct eager_peer *eager_peers;
static bool eager_quiet;                /* MPI_Finalize: no more CREDIT */

/* Peers whose transport keeps no eager budget (KUMI_P2P_CAP_NOBUDGET). */
static inline bool unbudgeted(int wpeer)
{
    return wpeer >= 0 && wpeer < npeers && peer_ops && peer_ops[wpeer] &&
           (peer_ops[wpeer]->caps & KUMI_P2P_CAP_NOBUDGET);
}

void kumi_req_register_params(void)
{
    kumi_param_register_size("kumi", "base", "eager_budget", EAGER_BUDGET_DEFAULT,
                             "Bytes of eager messages a rank may have at one peer that no receive has "
                             "taken yet (payload plus 128 per message); past it a message waits at the "
                             "sender for its receive (rendezvous); 0: no bound.  Set it alike on every rank",
                             KUMI_LEVEL_TUNER, &kumi_req_eager_budget);
}

/* Would the message of r (eager limit elim to its peer, reached through
 * ops) take the peer's count past the budget?  Then it goes as a plain
 * rendezvous. */
static inline bool eager_over_budget(const struct kumi_req *r, size_t elim, const struct kumi_p2p_ops *ops)
{
    if (!kumi_req_eager_budget || !eager_peers || r->bytes == 0 || (ops->caps & KUMI_P2P_CAP_NOBUDGET)) return false;
    size_t first = r->bytes < elim ? r->bytes : elim;
    if (eager_peers[r->wpeer].out + first + KUMI_EAGER_ENVELOPE <= kumi_req_eager_budget) return false;
    /* a blocking (or internal) send to oneself would wait for a receive that only
     * the same thread can post after it returns: it goes eagerly, as before */
    return !(r->internal && r->wpeer == kumi_world_rank());
}

/* Sender: count the message with header h that goes to wpeer (through ops). */
static inline void eager_charge(int wpeer, const struct kumi_hdr *h, const struct kumi_p2p_ops *ops)
{
    if (kumi_req_eager_budget && eager_peers && !(ops->caps & KUMI_P2P_CAP_NOBUDGET))
        eager_peers[wpeer].out += kumi_req_eager_charge(h);
}

/* Sender: wpeer gave back n bytes. */
static void eager_credited(int wpeer, uint64_t n)
{
    if (!eager_peers) return;
    struct eager_peer *e = &eager_peers[wpeer];
    e->out = n < e->out ? e->out - (size_t)n : 0;
}

/* Receiver: give back what is due to wpeer once a quarter of the budget has
 * gathered, while wpeer is past half of its budget as far as this rank can
 * tell (held + due; what is still on the way only adds to it).  A sender
 * that stays below half gets no CREDIT; one that is stalled gets one as soon
 * as a quarter is free.  From inside an upcall it is deferred. */
static void eager_credit_check(int wpeer)
{
    struct eager_peer *e = &eager_peers[wpeer];
    size_t b = kumi_req_eager_budget;
    if (!b || eager_quiet || e->due == 0 || e->due < b / 4 || e->held + e->due < b / 2) return;
    struct kumi_hdr h;
    memset(&h, 0, sizeof h);
    h.kind = KUMI_HDR_CREDIT;
    h.len = e->due;
    e->due = 0;
    kumi_log(3, "eager budget: %llu bytes given back to rank %d", (unsigned long long)h.len, wpeer);
    kumi_req_send_ctl(wpeer, &h);
}

/* Receiver: could eager_credit_check(wpeer) send a CREDIT now?  Its size
 * tests, inline for the receive paths: false while less than a quarter of
 * the budget is due or wpeer is below half of it (eager_credit_check would
 * return at once: a call per message there cost a twentieth of a small
 * message's receive). */
static inline bool eager_credit_maybe(const struct eager_peer *e)
{
    size_t b = kumi_req_eager_budget;
    return e->due >= b / 4 && e->held + e->due >= b / 2;
}

/* Receiver: a message with header h arrived from wpeer; kept: it waits in the
 * unexpected queue (else its payload went straight to a receive).  Inline on
 * the receive paths; the CREDIT only once a quarter of the budget is due. */
static inline __attribute__((always_inline)) void eager_arrived(int wpeer, const struct kumi_hdr *h, bool kept)
{
    if (!eager_peers) return;
    size_t c = kumi_req_eager_charge(h);
    if (!c || unbudgeted(wpeer)) return;
    if (kept) {
        eager_peers[wpeer].held += c;
    } else {
        eager_peers[wpeer].due += c;
        if (__builtin_expect(eager_credit_maybe(&eager_peers[wpeer]), 0)) eager_credit_check(wpeer);
    }
}

/* Receiver: the unexpected message with header h from wpeer no longer takes
 * memory here (received, cancelled). */
static void eager_release(int wpeer, const struct kumi_hdr *h)
{
    size_t c = kumi_req_eager_charge(h);
    if (!c || !eager_peers || wpeer < 0 || wpeer >= npeers || unbudgeted(wpeer)) return;
    struct eager_peer *e = &eager_peers[wpeer];
    e->held = c < e->held ? e->held - c : 0;
    e->due += c;
    eager_credit_check(wpeer);
}

static void req_op_done(struct kumi_sendop *op)
{
    struct kumi_req *r = op->owner;
    kumi_req_inflight--;
    if (r->magic != KUMI_MAGIC_REQ || r->pending <= 0 || r->complete) {
        /* a protocol slip: say so rather than complete somebody else's request */
        kumi_warn("internal error: a transport finished a send of a request that is already complete");
        return;
    }
    r->pending--;
    kumi_req_check_complete(r);
}

/* An eager message (standard or ready mode, contiguous payload) that the
 * transport writes at once (contract 1.8), nothing deferred or being flushed
 * (order): 1 once it went (sequence number in *seq, budget charged, counts
 * kept), 0 when not (nothing done, no sequence number taken). */
static inline __attribute__((always_inline)) int try_direct(const struct kumi_comm *comm, int32_t ctx,
                                                             const void *payload, size_t bytes, int wpeer,
                                                             int tag, uint64_t sreq, uint32_t *seq)
{
    const struct kumi_p2p_ops *ops = kumi_req_transport(wpeer);
    if (__builtin_expect(!ops || (ops->caps & KUMI_P2P_CAP_EXTERNAL32) ||
                         ops->hdr.size <= offsetof(struct kumi_p2p_ops, send_inline) || !ops->send_inline, 0))
        return 0;
    bool budget = kumi_req_eager_budget && eager_peers && !(ops->caps & KUMI_P2P_CAP_NOBUDGET);
    if (bytes) {                    /* 0 bytes: always eager, never held back (eager_over_budget) */
        if (bytes > ops->eager_limit(wpeer)) return 0;
        if (budget && eager_peers[wpeer].out + bytes + KUMI_EAGER_ENVELOPE > kumi_req_eager_budget) return 0;
    }
    struct kumi_hdr h = {
        .kind = KUMI_HDR_EAGER, .ctx = ctx, .src = comm->rank, .tag = tag,
        .seq = kumi_match_sseq[wpeer], .len = bytes, .paylen = bytes, .sreq = sreq,
    };
    if (!ops->send_inline(wpeer, &h, payload)) return 0;
    *seq = kumi_match_sseq[wpeer]++;
    if (budget) eager_peers[wpeer].out += bytes + KUMI_EAGER_ENVELOPE;
    if (ck_sent && wpeer < nworld) ck_sent[wpeer]++;
    kumi_pv.msgs[peer_tr[wpeer]]++;
    kumi_pv.bytes[peer_tr[wpeer]] += bytes;
    return 1;
}

/* The common case of a start: a plain eager message the transport writes at
 * once; the send is complete.  1 when so, 0 when the general path must run.
 * fresh: r was just made by kumi_req_isend (standard mode, no copy, no
 * device buffer; the state of kumi_req_alloc), its arguments passed as they
 * are in registers there. */
static inline __attribute__((always_inline)) int start_send_direct(struct kumi_req *r, bool fresh, const void *buf,
                                                                   size_t count, const struct kumi_dt *dt, int peer)
{
    if (__builtin_expect((fresh || (r->mode != KUMI_MODE_SYNC && !r->bsend_seg && !r->pack && !r->accel_stage)) &&
                         dt->contig && peer != MPI_PROC_NULL && !upcall_depth && !flushing && !dq_head, 1)) {
        /* a contiguous type's data starts true_lb bytes from buf (buf may be MPI_BOTTOM) */
        const void *payload = (const void *)((uintptr_t)buf + (uintptr_t)dt->true_lb);
        int wpeer = kumi_comm_peer_world(r->comm, peer);
        size_t bytes = count * dt->size;
        if (try_direct(r->comm, r->ctx, payload, bytes, wpeer, r->tag, (uint64_t)(uintptr_t)r, &r->seq)) {
            r->active = true;
            r->bytes = bytes;
            r->wpeer = wpeer;
            if (fresh) {                             /* plain, not user_freed: as below */
                if (__builtin_expect(!kumi_mt, 1)) r->complete = true;
                else kumi_req_check_complete(r);
                return 1;
            }
            r->cancel_sent = r->cts_seen = r->rndv = r->rget = false;
            r->frag = 0;
            r->pending = 0;
            kumi_req_status_clear(&r->status);
            r->complete = false;
            if (__builtin_expect(kumi_req_plain(r) && !r->user_freed && !kumi_mt, 1)) r->complete = true;
            else kumi_req_check_complete(r);
            return 1;
        }
    }
    return 0;
}

int kumi_req_isend(struct kumi_comm *comm, const char *fname, const void *buf, size_t count, struct kumi_dt *dt,
                   int dest, int tag, MPI_Request *request)
{
    struct kumi_req *r = kumi_req_alloc_inline(KUMI_REQ_SEND, comm, comm->ctx);
    if (!r) { *request = MPI_REQUEST_NULL; return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory for a request", fname); }
    *request = (MPI_Request)r;
    kumi_req_msg_set(r, fname, (void *)buf, count, dt, dest, tag);
    if (start_send_direct(r, true, buf, count, dt, dest)) return MPI_SUCCESS;
    int rc = kumi_req_start_send(r);
    if (rc) { kumi_req_free(r); *request = MPI_REQUEST_NULL; }
    return rc;
}

int kumi_req_start_send(struct kumi_req *r)
{
    const void *payload = (const void *)((uintptr_t)r->buf + (uintptr_t)r->dt->true_lb);
    const struct kumi_p2p_ops *ops;
    int rc;

    if (start_send_direct(r, false, r->buf, r->count, r->dt, r->peer)) return MPI_SUCCESS;

    r->active = true;
    r->complete = false;
    r->pending = 0;
    r->cancel_sent = r->cts_seen = r->rndv = r->rget = false;
    r->frag = 0;
    kumi_req_status_clear(&r->status);
    if (r->peer == MPI_PROC_NULL) {
        status_proc_null(&r->status);
        kumi_req_check_complete(r);    /* pending is 0; also tells an Isendrecv's receive */
        return MPI_SUCCESS;
    }
    r->bytes = r->count * r->dt->size;
    if (__builtin_expect(r->bsend_seg || r->pack, 0)) {
        payload = r->pack;                         /* bsend: packed in the attached buffer */
    } else if (__builtin_expect(!r->dt->contig && r->bytes, 0)) {
        r->pack = malloc(r->bytes);
        if (!r->pack) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory packing %zu bytes", r->fname, r->bytes);
        kumi_dt_pack(r->dt, r->buf, r->count, r->pack);
        payload = r->pack;
    }
    r->wpeer = kumi_comm_peer_world(r->comm, r->peer);
    ops = kumi_req_transport(r->wpeer);
    if (!ops) return kumi_error(MPI_ERR_INTERN, "%s: no transport reaches rank %d", r->fname, r->peer);
    int pc = __builtin_expect(r->accel_stage != NULL, 0) ? kumi_req_accel_send_start(r, ops) : 0;  /* <0: in pieces */
    if (pc > 0) return pc;
    if (__builtin_expect((ops->caps & KUMI_P2P_CAP_EXTERNAL32) != 0, 0) && r->bytes &&
        kumi_req_ext32_convert(ops, r->dt)) {                   /* the user's data in external32 */
        size_t xb = r->count * r->dt->xsize;
        free(r->xbuf);
        if (!(r->xbuf = malloc(xb ? xb : 1)))
            return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory (%zu bytes for external32 data)", r->fname, xb);
        kumi_dt_external32(r->dt, payload, r->xbuf, r->count, 0);
        payload = r->xbuf;
        r->bytes = xb;
    }
    kumi_pv.msgs[peer_tr[r->wpeer]]++;
    kumi_pv.bytes[peer_tr[r->wpeer]] += r->bytes;

    /* the header is built here and copied into r->op only when the message
     * goes through the transport's send() */
    struct kumi_hdr h = {
        .ctx = r->ctx, .src = r->comm->rank, .tag = r->tag, .len = r->bytes, .sreq = (uint64_t)(uintptr_t)r,
    };
    const void *oppay = NULL;
    size_t elim = r->bytes ? ops->eager_limit(r->wpeer) : 0;     /* 0 bytes: always eager */
    bool hold = pc < 0 || (r->bytes && eager_over_budget(r, elim, ops));  /* the bytes wait here for a receive */
    if (r->bytes <= elim && !hold) {
        h.kind = r->mode == KUMI_MODE_SYNC ? KUMI_HDR_EAGER_SYNC : KUMI_HDR_EAGER;
        h.paylen = r->bytes;
        oppay = payload;
        r->pending = r->mode == KUMI_MODE_SYNC ? 2 : 1;
    } else if (pc == 0 && (ops->caps & KUMI_P2P_CAP_RGET) && ops->rget(r->wpeer, r->bytes)) {
        h.kind = KUMI_HDR_RTS;
        h.flags = KUMI_HDR_F_RGET;
        h.paylen = 0;
        oppay = payload;
        r->rndv = r->rget = true;
        kumi_pv.rndv++;
        r->pending = 1;                            /* the RTS op: done once pulled */
    } else {
        size_t frag = hold ? 0 : elim;             /* goes with the RTS */
        if (frag >= r->bytes) frag = 0;
        h.kind = KUMI_HDR_RTS;
        h.paylen = frag;
        oppay = frag ? payload : NULL;
        r->rndv = true;
        kumi_pv.rndv++;
        r->frag = frag;
        r->dop.payload = (const char *)payload + frag;
        r->pending = 2;                            /* RTS sent, DATA sent */
    }
    h.seq = kumi_match_next_send_seq(r->wpeer);
    r->seq = h.seq;
    eager_charge(r->wpeer, &h, ops);
    /* Direct eager path (contract 1.8): nothing deferred or being flushed
     * (order), and the transport writes it now; the send is complete. */
    if (h.kind == KUMI_HDR_EAGER && !upcall_depth && !flushing && !dq_head &&
        ops->hdr.size > offsetof(struct kumi_p2p_ops, send_inline) && ops->send_inline &&
        ops->send_inline(r->wpeer, &h, oppay)) {
        if (ck_sent && r->wpeer < nworld) ck_sent[r->wpeer]++;
        r->pending = 0;
        if (__builtin_expect(kumi_req_plain(r) && !r->user_freed && !kumi_mt, 1)) r->complete = true;
        else kumi_req_check_complete(r);
        return MPI_SUCCESS;
    }
    r->op.hdr = h;
    r->op.payload = oppay;
    r->op.done = req_op_done;
    r->op.owner = r;
    r->op.tnext = NULL;
    r->op.toff = 0;
    r->op.tptr = NULL;
    if (upcall_depth || flushing) {
        defer_send(r->wpeer, &r->op);
        return MPI_SUCCESS;
    }
    if (dq_head) kumi_req_flush_ctl();             /* keep order with deferred traffic */
    rc = send_now(r->wpeer, &r->op);
    if (rc != MPI_SUCCESS) {
        r->pending = 0;
        r->complete = true;
        r->status.MPI_ERROR = rc;
        return rc;
    }
    return MPI_SUCCESS;
}

/* A blocking standard or ready send (MPI_Send, MPI_Rsend) of an eager
 * message that the transport writes at once: no request at all, nothing to
 * wait for.  Returns 1 once sent, 0 when it does not go this way (nothing
 * done: the caller sends it through a request).  The header has no cookie:
 * nobody can cancel a blocking send or answer an eager one. */
int kumi_req_send_direct(struct kumi_comm *comm, const void *buf, size_t count, struct kumi_dt *dt, int peer, int tag)
{
    if (__builtin_expect(peer == MPI_PROC_NULL || !dt->contig || upcall_depth || flushing || dq_head, 0)) return 0;
    uint32_t seq;
    return try_direct(comm, comm->ctx, (const void *)((uintptr_t)buf + (uintptr_t)dt->true_lb), count * dt->size,
                      kumi_comm_peer_world(comm, peer), tag, 0, &seq);
}

/* ------------------------------------------------------------ receiving */
static void finish_recv(struct kumi_req *r, uint64_t len)
{
    uint64_t got = len < r->rx.cap ? len : r->rx.cap;
    kumi_status_set_bytes(&r->status, got);
    if (len > r->rx.cap && r->status.MPI_ERROR == MPI_SUCCESS)
        r->status.MPI_ERROR = MPI_ERR_TRUNCATE;
    if (--r->pending == 0 && !r->complete && kumi_req_plain(r) && !r->user_freed && !kumi_mt) {
        r->complete = true;            /* all kumi_req_check_complete would do */
        return;
    }
    kumi_req_check_complete(r);
}

static void ue_free(struct kumi_ue *u)
{
    eager_release(u->wpeer, &u->hdr);
    kumi_ubuf_free(u->data);
    u->magic = 0;
    free(u);
}

static void send_sync_ack(int wpeer, const struct kumi_hdr *mh)
{
    struct kumi_hdr h;
    memset(&h, 0, sizeof h);
    h.kind = KUMI_HDR_SYNC_ACK;
    h.ctx = mh->ctx; h.src = mh->src; h.tag = mh->tag; h.seq = mh->seq;
    h.sreq = mh->sreq;
    kumi_req_send_ctl(wpeer, &h);
}

/* A receive matched an RGET RTS: the transport pulls the payload. */
static void start_pull(int wpeer, const struct kumi_hdr *mh, struct kumi_req *r)
{
    r->rx.len = (size_t)mh->len;
    r->rx.got = 0;
    defer_pull(wpeer, mh->rreq, &r->rx);
}

static void send_cts(int wpeer, const struct kumi_hdr *mh, struct kumi_req *r)
{
    if (mh->flags & KUMI_HDR_F_RGET) {
        start_pull(wpeer, mh, r);
        return;
    }
    struct kumi_hdr h;
    memset(&h, 0, sizeof h);
    h.kind = KUMI_HDR_CTS;
    h.ctx = mh->ctx; h.src = mh->src; h.tag = mh->tag; h.seq = mh->seq;
    h.len = mh->len;
    h.sreq = mh->sreq;
    h.rreq = (uint64_t)(uintptr_t)r;
    if (__builtin_expect(r->accel_stage != NULL, 0)) h.flags = kumi_req_accel_cts_flags(r, mh, wpeer);   /* IPC? */
    kumi_req_send_ctl(wpeer, &h);
}

/* A receive r (not in the posted queue) takes the unexpected message u,
 * which the caller removed from the unexpected queue. */
/* Early match (YAMPII): receive r takes the unexpected message u while its
 * payload (eager, or an RTS's first fragment) is still arriving: what has
 * arrived is copied once, the rest lands in the user buffer. */
static void early_match(struct kumi_req *r, struct kumi_ue *u)
{
    size_t n = u->rx.got < r->rx.cap ? u->rx.got : r->rx.cap;
    kumi_log(3, "early match: %zu of %llu bytes from rank %d had arrived", u->rx.got,
             (unsigned long long)u->hdr.paylen, u->wpeer);
    if (n && u->data) memcpy(r->rx.dst, u->data, n);
    u->rx.dst = r->rx.dst;
    u->rx.cap = r->rx.cap;
    kumi_ubuf_free(u->data);
    u->data = NULL;
    u->req = r;
    r->ue = u;
}

void kumi_req_recv_ue(struct kumi_req *r, struct kumi_ue *u)
{
    kumi_req_ext32_recv_setup(r, u->wpeer);
    r->status.MPI_SOURCE = u->hdr.src;
    r->status.MPI_TAG = u->hdr.tag;
    r->msglen = u->hdr.len;
    if (u->lost && r->status.MPI_ERROR == MPI_SUCCESS)
        r->status.MPI_ERROR = kumi_error(MPI_ERR_NO_MEM, "%s: the message of %llu bytes from rank %d (tag %d) "
                                         "was lost: no memory was left to keep it when it arrived before its "
                                         "receive", r->fname ? r->fname : "receive",
                                         (unsigned long long)u->hdr.len, u->hdr.src, u->hdr.tag);
    if (u->hdr.kind == KUMI_HDR_RTS) {
        int wpeer = u->wpeer;
        struct kumi_hdr mh = u->hdr;
        r->frag = (size_t)mh.paylen;
        r->rx.len = 0;
        r->rx.got = 0;
        if (mh.paylen > 0 && !u->arrived) {
            early_match(r, u);                     /* the first fragment is still arriving */
            r->pending++;                          /* its completion, then DATA's */
        } else {
            if (mh.paylen > 0) {
                size_t n = mh.paylen < r->rx.cap ? (size_t)mh.paylen : r->rx.cap;
                if (n && u->data) memcpy(r->rx.dst, u->data, n);
            }
            ue_free(u);
        }
        send_cts(wpeer, &mh, r);
        return;
    }
    if (u->hdr.kind == KUMI_HDR_EAGER_SYNC) send_sync_ack(u->wpeer, &u->hdr);
    if (u->arrived) {
        size_t n = u->hdr.paylen < r->rx.cap ? u->hdr.paylen : r->rx.cap;
        if (n && u->data) memcpy(r->rx.dst, u->data, n);
        uint64_t len = u->hdr.len;
        ue_free(u);
        finish_recv(r, len);
        return;
    }
    early_match(r, u);
}

/* fresh: r was just made (kumi_req_irecv: the state of kumi_req_alloc) */
static inline __attribute__((always_inline)) int start_recv(struct kumi_req *r, struct kumi_ue *msg, bool fresh)
{
    r->active = true;
    r->pending = 1;
    if (!fresh) {
        r->complete = false;
        r->ue = NULL;
        r->msglen = 0;
        r->frag = 0;
        r->xconv = false;
        kumi_req_status_clear(&r->status);
    }
    if (r->peer == MPI_PROC_NULL && !msg) {
        status_proc_null(&r->status);
        r->pending = 0;
        kumi_req_check_complete(r);    /* an Isendrecv's receive also waits for its send */
        return MPI_SUCCESS;
    }
    r->bytes = r->count * r->dt->size;
    if (!r->dt->contig && r->bytes) {
        if (!r->pack) r->pack = malloc(r->bytes);
        if (!r->pack) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory (%zu bytes)", r->fname, r->bytes);
        r->rx.dst = r->pack;
    } else {
        r->rx.dst = (char *)((uintptr_t)r->buf + (uintptr_t)r->dt->true_lb);
    }
    r->rx.cap = r->bytes;
    if (!fresh) r->rx.len = r->rx.got = 0;
    r->rx.owner = r;
    if (msg) {
        kumi_req_recv_ue(r, msg);
    } else {
        struct kumi_ue *u = kumi_pv.ue_len ? kumi_match_unexpected(r->ctx, r->peer, r->tag, 1) : NULL;
        if (u) {
            kumi_req_recv_ue(r, u);
        } else {
            int rc = kumi_match_post(r);
            if (rc) return rc;
        }
    }
    if (dq_head) kumi_req_flush_ctl();             /* a CTS or SYNC_ACK went to the queue */
    return MPI_SUCCESS;
}

int kumi_req_irecv(struct kumi_comm *comm, const char *fname, void *buf, size_t count, struct kumi_dt *dt,
                   int source, int tag, MPI_Request *request)
{
    struct kumi_req *r = kumi_req_alloc_inline(KUMI_REQ_RECV, comm, comm->ctx);
    if (!r) { *request = MPI_REQUEST_NULL; return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory for a request", fname); }
    *request = (MPI_Request)r;
    kumi_req_msg_set(r, fname, buf, count, dt, source, tag);
    int rc = start_recv(r, NULL, true);
    if (rc) { kumi_req_free(r); *request = MPI_REQUEST_NULL; }
    return rc;
}

int kumi_req_start_recv(struct kumi_req *r)
{
    return start_recv(r, NULL, false);
}

int kumi_req_start_recv_msg(struct kumi_req *r, struct kumi_ue *u)
{
    return start_recv(r, u, false);
}

/* MPI_Recv's fast path (contract 1.9, pt2pt.c): the next message from source
 * taken straight out of the transport, no request, no posted-queue entry,
 * while that is what the general path would do: one thread inside (no lock
 * in use), nothing posted or unexpected on the context (the message is the
 * first the receive may match and no earlier receive may take it), outside
 * upcalls, MPI_T's progress timer off.  It spins for the engine's spinning
 * rounds, a full progress round every 16th poll; a change of those
 * conditions, or a record it does not take, ends it.  1: received (*h, min(paylen, cap) bytes at dst); 0: nothing
 * done, the caller goes the general way. */
int kumi_req_recv_inline(const struct kumi_comm *comm, void *dst, size_t cap, int source, int tag, struct kumi_hdr *h)
{
    int wpeer = kumi_comm_peer_world(comm, source);
    const struct kumi_p2p_ops *ops = kumi_req_transport(wpeer);
    if (!ops || (ops->caps & KUMI_P2P_CAP_EXTERNAL32) || ops->hdr.size <= offsetof(struct kumi_p2p_ops, recv_inline) ||
        !ops->recv_inline)
        return 0;
    long long rounds = kumi_progress_spin_rounds;
    if (kumi_lock_flags.any || upcall_depth || flushing || kumi_pv.timing || !kumi_match_ctx_quiet(comm->ctx)) return 0;
    for (unsigned n = 1;; n++) {
        int k = ops->recv_inline(wpeer, comm->ctx, source, tag, dst, cap, h);
        if (k > 0) break;
        if (k < 0) return 0;
        kumi_cpu_relax();           /* polled back to back, the line left the sender mid-record */
        if (n & 15) continue;
        if (--rounds < 0) return 0;
        kumi_progress(0);
        if (kumi_lock_flags.any || !kumi_match_ctx_quiet(comm->ctx)) return 0;
    }
    /* what kumi_p2p_incoming_whole does for a message that a posted receive takes */
    if (ck_recvd && wpeer < nworld) ck_recvd[wpeer]++;
    kumi_match_check_recv_seq(wpeer, h->seq);
    if (eager_peers && !(ops->caps & KUMI_P2P_CAP_NOBUDGET)) {
        eager_peers[wpeer].due += (size_t)h->paylen + KUMI_EAGER_ENVELOPE;
        if (__builtin_expect(eager_credit_maybe(&eager_peers[wpeer]), 0)) eager_credit_check(wpeer);
    }
    kumi_pv.recv_inline++;
    if (dq_head) kumi_req_flush_ctl();             /* a CREDIT went to the queue */
    return 1;
}

/* For kumi_req_cancel (req_life.c): inside an upcall or a flush of the
 * control queue, where it must not wait. */
bool kumi_req_in_upcall(void) { return upcall_depth || flushing; }

/* ------------------------------------------------------------ upcalls */
static struct kumi_rx discard_rx;        /* owner NULL: bytes dropped */

static struct kumi_req *cookie_req(uint64_t c)
{
    struct kumi_req *r = (struct kumi_req *)(uintptr_t)c;
    if (!r || ((uintptr_t)r & 7) || r->magic != KUMI_MAGIC_REQ) return NULL;
    return r;
}

static void do_cts(struct kumi_req *s, const struct kumi_hdr *hdr)
{
    s->cts_seen = true;
    if (__builtin_expect(s->accel_stage && s->accel_stage->xmem, 0)) { kumi_req_accel_cts(s, hdr); return; }
    memset(&s->dop.hdr, 0, sizeof s->dop.hdr);
    s->dop.hdr.kind = KUMI_HDR_DATA;
    s->dop.hdr.ctx = s->ctx;
    s->dop.hdr.src = s->comm->rank;
    s->dop.hdr.tag = s->tag;
    s->dop.hdr.seq = s->seq;
    s->dop.hdr.len = s->bytes;
    s->dop.hdr.paylen = s->bytes - s->frag;
    s->dop.hdr.sreq = (uint64_t)(uintptr_t)s;
    s->dop.hdr.rreq = hdr->rreq;
    s->dop.done = req_op_done;
    s->dop.owner = s;
    defer_send(s->wpeer, &s->dop);
}

/* A message that arrived before its receive: its envelope (payload: the caller's). */
static struct kumi_ue *ue_new(int peer, const struct kumi_hdr *hdr)
{
    struct kumi_ue *u = calloc(1, sizeof *u);
    if (!u)     /* not even the envelope can be kept: no receive could learn of the loss */
        kumi_err_fatal("rank %d: out of memory for an unexpected message of %llu bytes from rank %d "
                       "(tag %d): the job cannot go on without losing it", kumi_world_rank(),
                       (unsigned long long)hdr->len, peer, hdr->tag);
    u->magic = KUMI_UE_MAGIC;
    u->wpeer = peer;
    u->hdr = *hdr;
    u->rx.owner = u;
    return u;
}

KUMI_EXPORT struct kumi_rx *kumi_p2p_incoming(int peer, const struct kumi_hdr *hdr)
{
    struct kumi_rx *rx = NULL;
    struct kumi_req *r;
    if (ck_recvd && peer >= 0 && peer < nworld) ck_recvd[peer]++;
    if (hdr->paylen) ck_rx_open++;
    upcall_depth++;
    switch (hdr->kind) {
    case KUMI_HDR_EAGER:
    case KUMI_HDR_EAGER_SYNC:
    case KUMI_HDR_RTS:
        kumi_match_check_recv_seq(peer, hdr->seq);
        r = kumi_match_posted(hdr);
        eager_arrived(peer, hdr, r == NULL);
        if (r) {
            kumi_req_ext32_recv_setup(r, peer);
            r->status.MPI_SOURCE = hdr->src;
            r->status.MPI_TAG = hdr->tag;
            r->msglen = hdr->len;
            if (hdr->kind == KUMI_HDR_RTS) {
                send_cts(peer, hdr, r);            /* at once: the handshake overlaps the fragment */
                r->frag = (size_t)hdr->paylen;
                if (hdr->paylen > 0) {             /* the first fragment follows */
                    r->pending++;
                    r->rx.len = hdr->paylen;
                    r->rx.got = 0;
                    rx = &r->rx;
                }
            } else {
                if (hdr->kind == KUMI_HDR_EAGER_SYNC) send_sync_ack(peer, hdr);
                if (hdr->paylen == 0) {
                    finish_recv(r, hdr->len);
                } else {
                    r->rx.len = hdr->paylen;
                    r->rx.got = 0;
                    rx = &r->rx;
                }
            }
        } else {
            struct kumi_ue *u = ue_new(peer, hdr);
            if (hdr->paylen > 0) {                 /* eager payload, or an RTS's first fragment */
                u->data = kumi_ubuf_alloc(hdr->paylen);
                u->lost = !u->data;                /* the bytes are dropped; the envelope is kept */
                u->rx.dst = u->data;
                u->rx.cap = u->data ? hdr->paylen : 0;
                u->rx.len = hdr->paylen;
                u->rx.got = 0;
                rx = &u->rx;
            } else {
                u->arrived = true;
            }
            kumi_match_ue_append(u);
        }
        break;
    case KUMI_HDR_DATA:
        r = cookie_req(hdr->rreq);
        if (!r || r->kind != KUMI_REQ_RECV) {
            kumi_warn("p2p: DATA from rank %d for an unknown request", peer);
            if (hdr->paylen) { discard_rx.dst = NULL; discard_rx.cap = 0; discard_rx.len = hdr->paylen;
                               discard_rx.got = 0; discard_rx.owner = NULL; rx = &discard_rx; }
            break;
        }
        if (__builtin_expect(hdr->flags & KUMI_HDR_F_PIECE, 0)) { rx = kumi_req_accel_piece(r, hdr); break; }
        if (hdr->paylen == 0) { finish_recv(r, r->msglen); break; }
        if (r->frag) {                             /* the rest, after the first fragment */
            r->rx2.dst = r->rx.cap > r->frag ? r->rx.dst + r->frag : NULL;
            r->rx2.cap = r->rx.cap > r->frag ? r->rx.cap - r->frag : 0;
            r->rx2.len = hdr->paylen;
            r->rx2.got = 0;
            r->rx2.owner = r;
            rx = &r->rx2;
            break;
        }
        r->rx.len = hdr->paylen;
        r->rx.got = 0;
        rx = &r->rx;
        break;
    case KUMI_HDR_CTS:
        r = cookie_req(hdr->sreq);
        if (r && r->kind == KUMI_REQ_SEND) do_cts(r, hdr);
        else kumi_warn("p2p: CTS from rank %d for an unknown request", peer);
        break;
    case KUMI_HDR_CREDIT:
        eager_credited(peer, hdr->len);
        break;
    case KUMI_HDR_SYNC_ACK:
        r = cookie_req(hdr->sreq);
        if (r && r->kind == KUMI_REQ_SEND) { r->pending--; kumi_req_check_complete(r); }
        break;
    case KUMI_HDR_CANCEL_REQ: {
        struct kumi_hdr a;
        struct kumi_ue *u = kumi_match_ue_find_cancel(peer, hdr->seq, hdr->sreq);
        memset(&a, 0, sizeof a);
        a.kind = KUMI_HDR_CANCEL_ACK;
        a.ctx = hdr->ctx; a.src = hdr->src; a.tag = hdr->tag; a.seq = hdr->seq;
        a.sreq = hdr->sreq;
        if (u && u->arrived && !u->req) {
            kumi_match_ue_remove(u);
            if (u->hdr.kind == KUMI_HDR_RTS && (u->hdr.flags & KUMI_HDR_F_RGET))
                defer_pull(peer, u->hdr.rreq, NULL);       /* the sender's RTS op completes */
            ue_free(u);
            a.flags |= KUMI_HDR_F_CANCELLED;
        }
        kumi_req_send_ctl(peer, &a);
        break;
    }
    case KUMI_HDR_CANCEL_ACK:
        r = cookie_req(hdr->sreq);
        if (!r || r->kind != KUMI_REQ_SEND) break;
        r->cancel_sent = false;
        if (hdr->flags & KUMI_HDR_F_CANCELLED) {
            r->status.MPI_internal[2] = 1;
            if (r->rndv) {
                if (!r->rget) r->pending--;                  /* no DATA will go; a pulled RTS's op
                                                                completes when the receiver drops it */
            } else if (r->mode == KUMI_MODE_SYNC) {
                r->pending--;                                /* no SYNC_ACK will come */
            }
        }
        r->pending--;
        kumi_req_check_complete(r);
        break;
    default:
        if (hdr->paylen) {
            discard_rx.dst = NULL; discard_rx.cap = 0; discard_rx.len = hdr->paylen;
            discard_rx.got = 0; discard_rx.owner = NULL; rx = &discard_rx;
        }
        break;
    }
    upcall_depth--;
    return rx;
}

/* The header and the whole payload at once (data: hdr->paylen bytes, read
 * during the call): an eager message matches here and its bytes are copied
 * straight into the receive buffer or the unexpected message's, with no
 * struct kumi_rx handed out; anything else goes the usual way. */
KUMI_EXPORT void kumi_p2p_incoming_whole(int peer, const struct kumi_hdr *hdr, const void *data)
{
    size_t paylen = (size_t)hdr->paylen;
    const struct kumi_p2p_ops *ops;
    if ((hdr->kind != KUMI_HDR_EAGER && hdr->kind != KUMI_HDR_EAGER_SYNC) || hdr->len != hdr->paylen ||
        (unsigned)peer >= (unsigned)npeers || !(ops = peer_ops[peer]) || (ops->caps & KUMI_P2P_CAP_EXTERNAL32)) {
        struct kumi_rx *rx = kumi_p2p_incoming(peer, hdr);
        if (rx) {
            if (rx->dst && paylen && rx->cap) memcpy(rx->dst, data, rx->cap < paylen ? rx->cap : paylen);
            rx->got = paylen;
            kumi_p2p_rx_done(rx);
        }
        return;
    }
    if (ck_recvd && peer < nworld) ck_recvd[peer]++;
    upcall_depth++;
    kumi_match_check_recv_seq(peer, hdr->seq);
    struct kumi_req *r = kumi_match_posted(hdr);
    /* eager_arrived(), with what is known here: an eager message (charge
     * paylen + envelope) from a peer whose transport is ops */
    if (eager_peers && !(ops->caps & KUMI_P2P_CAP_NOBUDGET)) {
        size_t c = paylen + KUMI_EAGER_ENVELOPE;
        if (!r) {
            eager_peers[peer].held += c;
        } else if (eager_peers[peer].due += c, __builtin_expect(eager_credit_maybe(&eager_peers[peer]), 0)) {
            eager_credit_check(peer);
        }
    }
    if (r) {
        r->status.MPI_SOURCE = hdr->src;
        r->status.MPI_TAG = hdr->tag;
        r->msglen = paylen;
        if (hdr->kind == KUMI_HDR_EAGER_SYNC) send_sync_ack(peer, hdr);
        size_t n = paylen < r->rx.cap ? paylen : r->rx.cap;
        if (n <= 64) kumi_p2p_copy64(r->rx.dst, data, n);
        else memcpy(r->rx.dst, data, n);
        /* finish_recv(r, paylen), inline: the plain case sets complete */
        kumi_status_set_bytes(&r->status, n);
        if (paylen > r->rx.cap && r->status.MPI_ERROR == MPI_SUCCESS) r->status.MPI_ERROR = MPI_ERR_TRUNCATE;
        if (__builtin_expect(--r->pending == 0 && !r->complete && kumi_req_plain(r) && !r->user_freed && !kumi_mt, 1))
            r->complete = true;
        else
            kumi_req_check_complete(r);
    } else {
        struct kumi_ue *u = ue_new(peer, hdr);
        if (paylen > 0) {
            u->data = kumi_ubuf_alloc(paylen);
            u->lost = !u->data;                    /* the bytes are dropped; the envelope is kept */
            if (u->data) memcpy(u->data, data, paylen);
            u->rx.dst = u->data;
            u->rx.cap = u->data ? paylen : 0;
            u->rx.len = u->rx.got = paylen;
        }
        u->arrived = true;
        kumi_match_ue_append(u);
    }
    upcall_depth--;
}

KUMI_EXPORT void kumi_p2p_rx_done(struct kumi_rx *rx)
{
    void *o = rx ? rx->owner : NULL;
    if (rx) ck_rx_open--;
    if (!o) return;
    upcall_depth++;
    if (*(uint32_t *)o == KUMI_UE_MAGIC) {
        struct kumi_ue *u = o;
        u->arrived = true;
        if (u->req) {
            struct kumi_req *r = u->req;
            uint64_t len = u->hdr.len;
            r->ue = NULL;
            ue_free(u);
            finish_recv(r, len);
        }
    } else if (*(uint32_t *)o == KUMI_MAGIC_REQ) {
        struct kumi_req *r = o;
        finish_recv(r, r->msglen);
    } else if ((o = kumi_req_accel_piece_done(o))) {     /* a piece (req_accel.c): the last one */
        finish_recv(o, ((struct kumi_req *)o)->msglen);
    }
    upcall_depth--;
}

/* Each world peer to the first transport that reaches it (used[i]: transport
 * i serves a peer); what: the caller, for the error (names: the transports). */
int kumi_req_assign_peers(bool *used, const char *what, const char *names)
{
    for (int p = 0; p < nworld; p++) {
        int i;
        for (i = 0; i < ntr; i++)
            if (tr_ops[i]->reaches(p)) break;
        if (i == ntr)
            return kumi_error(MPI_ERR_OTHER, "%s: no transport reaches rank %d (p2p components in use: %s)", what, p,
                              names);
        peer_ops[p] = tr_ops[i];
        peer_tr[p] = (unsigned char)i;
        used[i] = true;
    }
    return MPI_SUCCESS;
}

/* The transports in use, for the checkpoint code (req_ckpt.c). */
int kumi_req_ntransports(void) { return ntr; }
const struct kumi_p2p_ops *kumi_req_transport_at(int i, const char **name)
{
    if (name) *name = tr_entry[i]->name;
    return tr_ops[i];
}

/* ------------------------------------------------------------ init / finalize */
int kumi_req_init(void)
{
    int n = 0, i, rc;
    struct kumi_comp_entry **av = kumi_registry_available("p2p", &n);
    char names[512];

    nworld = npeers = kumi_world_size();
    ntr = 0;
    names[0] = 0;
    for (i = 0; av && i < n && ntr < KUMI_MAX_TRANSPORTS; i++) {
        const struct kumi_p2p_ops *ops = av[i]->comp ? av[i]->comp->ops : NULL;
        if (!ops) continue;
        rc = ops->init ? ops->init() : MPI_SUCCESS;
        if (rc != MPI_SUCCESS) {
            kumi_log(1, "p2p: %s: init failed (%d), not used", av[i]->name, rc);
            av[i]->status = KUMI_COMP_UNAVAILABLE;
            snprintf(av[i]->reason, sizeof av[i]->reason, "init failed");
            continue;
        }
        tr_entry[ntr] = av[i];
        tr_ops[ntr++] = ops;
    }
    rc = kumi_rpim_fence();
    if (rc != MPI_SUCCESS) return rc;
    for (i = 0; i < ntr; i++) {
        rc = tr_ops[i]->wireup ? tr_ops[i]->wireup() : MPI_SUCCESS;
        if (rc != MPI_SUCCESS) {
            kumi_log(1, "p2p: %s: wireup failed (%d), not used", tr_entry[i]->name, rc);
            tr_entry[i]->status = KUMI_COMP_UNAVAILABLE;
            snprintf(tr_entry[i]->reason, sizeof tr_entry[i]->reason, "wireup failed");
            memmove(&tr_entry[i], &tr_entry[i + 1], (size_t)(ntr - i - 1) * sizeof tr_entry[0]);
            memmove(&tr_ops[i], &tr_ops[i + 1], (size_t)(ntr - i - 1) * sizeof tr_ops[0]);
            ntr--; i--;
        }
    }
    memset(tr_names, 0, sizeof tr_names);
    for (i = 0; i < ntr; i++) snprintf(tr_names[i], sizeof tr_names[i], "%s", tr_entry[i]->name);
    for (i = 0; i < ntr; i++) {
        size_t l = strlen(names);
        snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", tr_entry[i]->name);
    }
    if (!names[0]) snprintf(names, sizeof names, "none");

    peer_ops = calloc((size_t)nworld, sizeof *peer_ops);
    peer_tr = calloc((size_t)nworld, sizeof *peer_tr);
    ck_sent = calloc((size_t)nworld, sizeof *ck_sent);
    ck_recvd = calloc((size_t)nworld, sizeof *ck_recvd);
    ck_rx_open = 0;
    if (!ck_sent || !ck_recvd) return kumi_error(MPI_ERR_NO_MEM, "MPI_Init: out of memory (request layer)");
    if (!peer_ops || !peer_tr) return kumi_error(MPI_ERR_NO_MEM, "MPI_Init: out of memory (request layer)");
    bool used[KUMI_MAX_TRANSPORTS] = { false };
    if ((rc = kumi_req_assign_peers(used, "MPI_Init", names)) != MPI_SUCCESS) return rc;
    for (i = 0; i < ntr; i++)
        if (used[i]) tr_entry[i]->status = KUMI_COMP_SELECTED;
    if (kumi_verbose_level >= 1) kumi_req_log_peers(nworld, peer_ops, ntr, tr_ops, tr_entry, used);
    rc = kumi_match_init(nworld);
    if (rc != MPI_SUCCESS) return rc;
    eager_quiet = false;
    eager_peers = calloc((size_t)nworld, sizeof *eager_peers);
    if (!eager_peers) return kumi_error(MPI_ERR_NO_MEM, "MPI_Init: out of memory (request layer)");
    /* Progress polls every initialized transport (a peer might reach us through
     * one we do not use to reach it), but those that serve no peer of ours only
     * now and then: an idle tcp costs a system call per poll. */
    rc = kumi_progress_setup(tr_ops, used, ntr);
    if (rc == MPI_SUCCESS) kumi_pacing_init();
    return rc;
}

/* A peer beyond the world (a process of another job, reached through a
 * connection MPI_Comm_accept / connect / join / spawn set up): grows the
 * per-peer tables by one entry served by the transport with ops; returns
 * its peer number (>= the world size), or -1 with *err set.  Peers are
 * numbered in the order added and never reused within a run. */
int kumi_req_add_peer(const struct kumi_p2p_ops *ops, int *err)
{
    int i, n = npeers + 1;
    for (i = 0; i < ntr && tr_ops[i] != ops; i++) ;
    if (!ops || i == ntr) { *err = kumi_error(MPI_ERR_INTERN, "request layer: a peer added to no transport in use"); return -1; }
    const struct kumi_p2p_ops **po = realloc(peer_ops, (size_t)n * sizeof *po);
    if (!po) goto nomem;
    peer_ops = po;
    unsigned char *pt = realloc(peer_tr, (size_t)n);
    if (!pt) goto nomem;
    peer_tr = pt;
    struct eager_peer *ep = realloc(eager_peers, (size_t)n * sizeof *ep);
    if (!ep) goto nomem;
    eager_peers = ep;
    if ((*err = kumi_match_grow(n)) != MPI_SUCCESS) return -1;
    peer_ops[npeers] = ops;
    peer_tr[npeers] = (unsigned char)i;
    kumi_progress_mark_used(ops);
    tr_entry[i]->status = KUMI_COMP_SELECTED;
    memset(&eager_peers[npeers], 0, sizeof eager_peers[0]);
    return npeers++;
nomem:
    *err = kumi_error(MPI_ERR_NO_MEM, "out of memory (request layer: %d peers)", n);
    return -1;
}

int kumi_req_npeers(void)
{
    return npeers;
}

/* The first transport in use with peers of other jobs (p2p contract 1.5). */
const struct kumi_p2p_ops *kumi_req_xjob_transport(void)
{
    for (int i = 0; i < ntr; i++)
        if (tr_ops[i]->hdr.size > offsetof(struct kumi_p2p_ops, xjob_add) && tr_ops[i]->xjob_card &&
            tr_ops[i]->xjob_add)
            return tr_ops[i];
    return NULL;
}

/* An added peer its transport refused: unreachable (sends fail). */
void kumi_req_peer_unusable(int peer)
{
    if (peer >= nworld && peer < npeers) peer_ops[peer] = NULL;
}

static double drain_deadline;
static int drained(void *arg)
{
    (void)arg;
    if (kumi_req_inflight > 0 || kumi_req_ctl_pending()) goto busy;
    for (int i = 0; i < ntr; i++)
        if (tr_ops[i]->busy && tr_ops[i]->busy()) goto busy;
    return 1;
busy:
    return kumi_time() > drain_deadline;
}

void kumi_req_finalize(void)
{
    eager_quiet = true;                 /* the peers may be closing: they need no budget now */
    drain_deadline = kumi_time() + 60.0;
    kumi_progress_wait(drained, NULL);
    kumi_pacing_finalize();
    for (int i = ntr - 1; i >= 0; i--)
        if (tr_ops[i]->finalize) tr_ops[i]->finalize();
    ntr = 0;
    kumi_progress_setup(NULL, NULL, 0);
    kumi_match_finalize();
    kumi_req_xjob_finalize();
    npeers = 0;
    free(peer_ops);
    free(peer_tr);
    peer_tr = NULL;
    peer_ops = NULL;
    free(eager_peers);
    eager_peers = NULL;
    free(ck_sent);
    free(ck_recvd);
    ck_sent = ck_recvd = NULL;
}

/* ------------------------------------------------------------ checkpoint */
/* The counts the checkpoint code (req_ckpt.c, framework/mpi/ckpt.c) reads. */
const uint64_t *kumi_req_ckpt_sent(void) { return ck_sent; }
const uint64_t *kumi_req_ckpt_recvd(void) { return ck_recvd; }
long kumi_req_ckpt_rx_open(void) { return ck_rx_open; }
