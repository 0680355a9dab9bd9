/* Request layer: requests, matching (posted + unexpected queues), protocols
 * (eager, eager-sync, rendezvous, cancel) and the progress engine.
 * Private to the framework (core + request); components never see this.
 *
 * MPI_Status (32 bytes, standard ABI) as filled by this layer:
 *   MPI_SOURCE, MPI_TAG, MPI_ERROR   as usual (MPI_ERROR: MPI_SUCCESS, or the
 *                                    error class, e.g. MPI_ERR_TRUNCATE)
 *   MPI_internal[0], [1]             received byte count, 64 bits
 *                                    (low 32 bits in [0], high 32 bits in [1])
 *   MPI_internal[2]                  1 if the request was cancelled
 *   MPI_internal[3], [4]             unused (0)
 *
 * Protocols (see kumi/p2p.h for the wire header):
 *   len <= eager_limit(peer): EAGER (payload follows the header), or
 *     EAGER_SYNC for synchronous mode (receiver answers SYNC_ACK on match);
 *   len >  eager_limit(peer): RTS (len, sreq) carrying the first
 *     eager_limit bytes (so that their transfer overlaps the handshake:
 *     latency grows smoothly across the eager limit); the receiver answers
 *     CTS (sreq, rreq) as soon as a receive matches; the sender sends DATA
 *     (rreq) with the rest, which lands straight in the receive buffer.  Where the
 *     transport can read the sender's memory (caps KUMI_P2P_CAP_RGET; ops->rget
 *     says yes for this message), the RTS carries KUMI_HDR_F_RGET instead and the receiver pulls the payload into the
 *     receive buffer when a receive matches (ops->pull): no CTS, no DATA.
 *   Cancel of a send: CANCEL_REQ (ctx, src, tag, seq, sreq); the receiver
 *     removes the message from its unexpected queue if it is still there and
 *     fully arrived, and answers CANCEL_ACK (flags & KUMI_HDR_F_CANCELLED);
 *     the send is complete again once the answer came.  To oneself,
 *     kumi_req_cancel waits for the answer (it needs nobody else).  A
 *     buffered send's request cancels the internal send that carries the
 *     copy (bsend_req) and completes with it.
 *
 * Eager budget (flow control; parameter kumi_base_eager_budget, bytes per
 * peer, 0: none).  What a receiver holds for messages that arrived before
 * their receives is bounded per sender:
 *   - the sender counts, per world peer, the bytes it sent eagerly (an EAGER
 *     payload or an RTS's first fragment, plus KUMI_EAGER_ENVELOPE for the
 *     envelope: kumi_req_eager_charge) that the receiver has not given back;
 *   - a message that would take that count past the budget goes as a plain
 *     rendezvous (RTS without a fragment, or RGET): its bytes stay in the
 *     sender's buffer until a receive matches, the receiver keeps only the
 *     envelope.  Every envelope still goes at once, in order, so matching
 *     and the non-overtaking rule are untouched.  A message of 0 bytes goes
 *     eagerly anyway (it holds nothing back) and is counted; so do blocking
 *     and internal sends to oneself (a rendezvous would wait for a receive
 *     that the same thread can only post afterwards);
 *   - the receiver counts, per sender, the charged bytes it still holds
 *     (unexpected messages) and those that no longer take its memory
 *     (matched on arrival, received, cancelled) and gives the latter back in
 *     one CREDIT (len = bytes) once they reach a quarter of the budget while
 *     both together are at least half of it.  A sender that stays below half
 *     its budget gets no CREDIT at all; when nothing is held, at least half
 *     the budget is free again.
 * The budget must be the same on every rank (mpiexec --param sets it so).
 */
#ifndef KUMI_REQUEST_H
#define KUMI_REQUEST_H

#include "core/core.h"
#include <kumi/p2p.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif


enum kumi_req_kind {
    KUMI_REQ_SEND = 1, KUMI_REQ_RECV,
    KUMI_REQ_PSEND, KUMI_REQ_PRECV,     /* partitioned (partitioned.c): state in ext */
    KUMI_REQ_GREQ,                      /* generalized (grequest.c): state in ext */
    KUMI_REQ_IDUP,                      /* MPI_Comm_idup(_with_info) (core/comm.c): state in ext;
                                           completes in the progress engine, not cancellable */
    KUMI_REQ_COLL,                      /* non-blocking or persistent collective: its schedule
                                           (sched/sched.c) in ext; not cancellable */
    KUMI_REQ_RMA,                       /* MPI_Rput & co. (rma/rma.c): completes in the progress
                                           engine, not cancellable */
    KUMI_REQ_BFLUSH,                    /* MPI_Buffer_iflush & co. (bsend.c): completes when the
                                           buffered messages went out, not cancellable */
    KUMI_REQ_KINDS
};

/* Hidden contexts of partitioned communication (partitioned.c), above every
 * communicator's context id (< 0x40000000), so that no user or collective
 * message can meet them:
 *   KUMI_CTX_PART_HS | comm->ctx   channel handshakes, tag = the user's tag;
 *   KUMI_CTX_PART_CH + n           one channel end (n: per-process counter,
 *                                  never reused while the channel lives);
 *                                  tag = the sender's partition index (data)
 *                                  or 0 (the handshake's answer). */
enum kumi_send_mode { KUMI_MODE_STD = 0, KUMI_MODE_SYNC, KUMI_MODE_BUFFERED, KUMI_MODE_READY };

struct kumi_ue;

struct kumi_req {
    uint32_t magic;                 /* KUMI_MAGIC_REQ */
    uint8_t kind;                   /* enum kumi_req_kind */
    uint8_t mode;                   /* enum kumi_send_mode (sends) */
    bool persistent;
    bool active;                    /* started and not yet completed-and-waited */
    bool complete;                  /* operation done; status valid */
    bool user_freed;                /* MPI_Request_free'd: free when complete */
    bool internal;                  /* no user handle (bsend, blocking calls) */
    bool cancel_sent;               /* send: CANCEL_REQ went out, ack pending */
    bool rndv;                      /* send: rendezvous protocol */
    bool cts_seen;                  /* send: CTS arrived (matched) */
    bool rget;                      /* send: rendezvous pulled by the receiver (no CTS/DATA) */
    struct kumi_comm *comm;         /* holds a reference */
    int32_t ctx;                    /* comm->ctx, or +1 for collective traffic */
    const char *fname;              /* MPI function, for error messages */
    /* arguments */
    void *buf;
    size_t count;
    struct kumi_dt *dt;
    int peer;                       /* comm rank (dest or source), may be ANY/PROC_NULL */
    int tag;
    /* derived */
    size_t bytes;                   /* count * dt->size */
    uint64_t msglen;                /* receive: length of the matched message */
    void *pack;                     /* bounce buffer (non-contiguous type or bsend) */
    struct kumi_stage *accel_stage; /* non-blocking call on a device buffer: its host copy
                                       (core/accel.c; copied back and freed at completion) */
    int pending;                    /* sendops in flight + acks awaited */
    MPI_Status status;
    /* send side */
    int wpeer;                      /* world rank of dest */
    uint32_t seq;
    struct kumi_sendop op;          /* EAGER / EAGER_SYNC / RTS */
    struct kumi_sendop dop;         /* DATA */
    void *bsend_seg;                /* bsend: segment of the attached buffer */
    /* Buffered mode (MPI_Ibsend, MPI_Bsend_init): the user's request is
     * complete at once; an internal send (bsend_req) carries the copy.  It
     * stays linked (bsend_owner) until the user's request is freed or
     * started again, so that MPI_Cancel can reach the message. */
    struct kumi_req *bsend_req;     /* user's buffered send: its internal send, or NULL */
    struct kumi_req *bsend_owner;   /* internal send: the user's request, or NULL */
    /* receive side */
    struct kumi_rx rx;
    struct kumi_rx rx2;             /* rendezvous: the DATA after a first fragment */
    size_t frag;                    /* rendezvous: bytes that went (send) / came (receive)
                                       with the RTS; DATA carries the rest */
    struct kumi_ue *ue;             /* early match: message still arriving */
    struct kumi_req *qnext, *qprev; /* posted queue (of its communicator and source, or of
                                       its communicator's MPI_ANY_SOURCE receives) */
    uint64_t pseq;                  /* posting order while posted (from 1); 0: not posted */
    /* MPI_Isendrecv(_replace): the user's request is the receive; it owns an
     * internal send (partner) and completes only when both are done. */
    struct kumi_req *partner;       /* receive: its send */
    struct kumi_req *parent;        /* send: the receive that owns it */
    void *owned;                    /* freed with the request (Isendrecv_replace's copy) */
    /* Partitioned / generalized requests: their state (kind PSEND, PRECV, GREQ);
     * an internal send/receive of a partitioned channel: the channel's state. */
    void *ext;
    /* Internal send/receive: called once it completes (instead of the
     * user_freed check); the callback owns r from then on. */
    void (*on_complete)(struct kumi_req *r);
    int cb_idx;                     /* for on_complete: e.g. the partition index */
    /* A peer whose transport has KUMI_P2P_CAP_EXTERNAL32: send, the
     * external32 payload; receive, where the external32 bytes arrive (xconv:
     * converted into the receive's datatype at completion). */
    void *xbuf;
    bool xconv;
};

/* An unexpected message (header arrived, no receive matched yet). */
struct kumi_ue {
    uint32_t magic;                 /* KUMI_UE_MAGIC */
    int wpeer;                      /* world rank of the sender */
    struct kumi_hdr hdr;
    char *data;                     /* eager payload (kumi_ubuf_alloc) */
    struct kumi_rx rx;
    bool arrived;                   /* all payload bytes are in */
    bool queued;                    /* in the unexpected queue */
    bool lost;                      /* no memory for its payload when it arrived: the receive
                                       that takes it fails with MPI_ERR_NO_MEM */
    struct kumi_req *req;           /* early match: the receive that took it */
    struct kumi_ue *next, *prev;    /* its communicator's unexpected messages, in arrival order */
    struct kumi_ue *snext, *sprev;  /* ... those of its sender (hdr.src), in arrival order */
};
#define KUMI_UE_MAGIC 0x4b554e58u

/* A matched-probed message (MPI_Mprobe). */
struct kumi_msg {
    uint32_t magic;                 /* KUMI_MAGIC_MSG */
    struct kumi_ue *ue;
    struct kumi_comm *comm;
};

/* What a message's envelope counts against the eager budget. */
#define KUMI_EAGER_ENVELOPE 128
/* Bytes a message counts against its sender's eager budget (0: none). */
static inline size_t kumi_req_eager_charge(const struct kumi_hdr *h)
{
    if (h->kind == KUMI_HDR_EAGER || h->kind == KUMI_HDR_EAGER_SYNC ||
        (h->kind == KUMI_HDR_RTS && h->paylen > 0 && !(h->flags & KUMI_HDR_F_RGET)))
        return (size_t)h->paylen + KUMI_EAGER_ENVELOPE;
    return 0;
}
/* The budget (kumi_base_eager_budget; 0: unlimited), registered by
 * kumi_progress_register_params. */
extern size_t kumi_req_eager_budget;
void kumi_req_register_params(void);

/* The empty status (kumi_status_empty), inlined for the request paths. */
static inline void kumi_req_status_clear(MPI_Status *st)
{
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    st->MPI_ERROR = MPI_SUCCESS;
    for (int i = 0; i < (int)(sizeof st->MPI_internal / sizeof st->MPI_internal[0]); i++) st->MPI_internal[i] = 0;
}

/* A plain send or receive: no copy, no partner, no owner, no callback (its
 * completion only marks it complete; kumi_req_check_complete does the rest). */
static inline bool kumi_req_plain(const struct kumi_req *r)
{
    return ((uintptr_t)r->partner | (uintptr_t)r->xbuf | (uintptr_t)r->pack | (uintptr_t)r->bsend_seg |
            (uintptr_t)r->parent | (uintptr_t)r->on_complete | (uintptr_t)r->bsend_owner) == 0;
}

/* Freed requests are kept for reuse (every blocking call makes one): the
 * allocator's free and trim showed up as a fifth of a small message's time.
 * Serialized like everything here (the library lock at MPI_THREAD_MULTIPLE). */
/* 256: a window of 128 non-blocking calls reuses its requests (at 64, half of
 * them were calloc'ed and freed each time, as costly as the send itself). */
#define KUMI_REQ_CACHE_MAX 256
extern struct kumi_req *kumi_req_cache;
extern int kumi_req_cached;

/* Clear n bytes (a multiple of 8, p 8-byte aligned) with plain vector stores,
 * four to a round: the compiler turns a memset of a few hundred bytes into
 * "rep stos", whose start-up alone cost a tenth of a small message's time. */
static inline __attribute__((always_inline)) void kumi_req_zero_bytes(void *p, size_t n)
{
    char *c = p;
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i z = _mm_setzero_si128();
    for (; i + 64 <= n; i += 64) {
        _mm_storeu_si128((__m128i *)(void *)(c + i), z);
        _mm_storeu_si128((__m128i *)(void *)(c + i + 16), z);
        _mm_storeu_si128((__m128i *)(void *)(c + i + 32), z);
        _mm_storeu_si128((__m128i *)(void *)(c + i + 48), z);
        __asm__ volatile("");             /* keeps the loop a loop, not a memset */
    }
    for (; i + 16 <= n; i += 16) {
        _mm_storeu_si128((__m128i *)(void *)(c + i), z);
        __asm__ volatile("");
    }
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t zero = 0;
        memcpy(c + i, &zero, 8);
        __asm__ volatile("");
    }
}

_Static_assert(offsetof(struct kumi_req, op) % 8 == 0 && offsetof(struct kumi_req, bsend_seg) % 8 == 0 &&
               sizeof(struct kumi_req) % 8 == 0, "kumi_req_zero_bytes clears whole 8-byte words");

static inline __attribute__((always_inline)) struct kumi_req *kumi_req_alloc_inline(int kind, struct kumi_comm *comm, int32_t ctx)
{
    struct kumi_req *r = kumi_req_cache;
    if (r) {
        kumi_req_cache = r->qnext;
        kumi_req_cached--;
        /* op and dop (a third of the request) are filled where they are used
         * (kumi_req_start_send, do_cts): clearing them here cost a tenth of a
         * small message's time */
        kumi_req_zero_bytes(r, offsetof(struct kumi_req, op));
        kumi_req_zero_bytes((char *)r + offsetof(struct kumi_req, bsend_seg), sizeof *r - offsetof(struct kumi_req, bsend_seg));
    } else if (!(r = calloc(1, sizeof *r))) {
        return NULL;
    }
    r->magic = KUMI_MAGIC_REQ;
    r->kind = (uint8_t)kind;
    r->comm = comm;
    if (comm) comm->refcount++;
    r->ctx = ctx;
    r->wpeer = -1;
    kumi_req_status_clear(&r->status);
    return r;
}

/* The message fields of a fresh request r (kumi_req_msg; inline for the
 * one-call MPI_Isend / MPI_Irecv of request.c): a reference on dt is taken. */
static inline __attribute__((always_inline)) void kumi_req_msg_set(struct kumi_req *r, const char *fname, void *buf,
                                                                   size_t count, struct kumi_dt *dt, int peer, int tag)
{
    r->fname = fname;
    r->buf = buf;
    r->count = count;
    r->dt = dt;
    if (dt && !dt->predefined) kumi_dt_retain(dt);        /* (a predefined type has no count) */
    r->peer = peer;
    r->tag = tag;
}

void kumi_req_free(struct kumi_req *r);
/* kumi_req_free, inline for what a completion call frees most: a send or
 * receive, not posted, with nothing of its own (no copy, partner, buffered
 * send link, device buffer), a predefined type and a communicator that other
 * references keep; anything else goes to kumi_req_free. */
static inline __attribute__((always_inline)) void kumi_req_free_inline(struct kumi_req *r)
{
    struct kumi_comm *c = r->comm;
    if (__builtin_expect(r->kind <= KUMI_REQ_RECV && !r->pseq && c && c->refcount > 1 && r->dt &&
                         r->dt->predefined && kumi_req_cached < KUMI_REQ_CACHE_MAX &&
                         ((uintptr_t)r->bsend_req | (uintptr_t)r->bsend_owner | (uintptr_t)r->bsend_seg |
                          (uintptr_t)r->pack | (uintptr_t)r->xbuf | (uintptr_t)r->accel_stage |
                          (uintptr_t)r->partner | (uintptr_t)r->owned) == 0, 1)) {
        c->refcount--;
        r->magic = KUMI_MAGIC_DEAD;
        r->qnext = kumi_req_cache;
        kumi_req_cache = r;
        kumi_req_cached++;
        return;
    }
    kumi_req_free(r);
}

/* ---- req_life.c (the life of a request) and request.c ---- */
/* The operations of a kind of request other than a plain send or receive,
 * registered by the file that implements the kind (partitioned.c,
 * grequest.c, sched/sched.c, rma/rma.c, core/comm_idup.c ...) with
 * kumi_req_register_kind() before the first request of that kind exists.
 * A NULL operation means: nothing to do (start: the kind cannot be started
 * again; cancel: not cancellable, MPI_Cancel has no effect; query: the
 * status is r->status; release: nothing runs when a completion call frees
 * the request). */
struct kumi_req_ops {
    const char *name;                                   /* "partitioned send", for messages */
    int (*start)(struct kumi_req *r);                   /* MPI_Start(all) of a persistent request */
    int (*cancel)(struct kumi_req *r);                  /* MPI_Cancel */
    void (*free)(struct kumi_req *r);                   /* kumi_req_free: release the kind's state (ext) */
    int (*query)(struct kumi_req *r, MPI_Status *st);   /* status of a complete request; returns its error */
    int (*release)(struct kumi_req *r);                 /* a completion call or MPI_Request_free is about to
                                                           free the complete request; returns an error */
};
void kumi_req_register_kind(int kind, const struct kumi_req_ops *ops);
const struct kumi_req_ops *kumi_req_kind_ops(const struct kumi_req *r);   /* NULL for SEND/RECV */

struct kumi_req *kumi_req_alloc(int kind, struct kumi_comm *comm, int32_t ctx);
/* The one constructor of point-to-point requests (user and internal): a
 * send (KUMI_REQ_SEND) or receive (KUMI_REQ_RECV) of count elements of dt
 * (a reference is taken) with peer and tag on context ctx of comm; fname
 * names the MPI call for error messages.  NULL when out of memory. */
struct kumi_req *kumi_req_msg(int kind, struct kumi_comm *comm, int32_t ctx, const char *fname,
                              void *buf, size_t count, struct kumi_dt *dt, int peer, int tag);
/* MPI_Isend in standard mode / MPI_Irecv (not persistent, no device buffer):
 * kumi_req_msg and kumi_req_start_send / kumi_req_start_recv in one call,
 * the allocation and the direct eager path inline (request.c).  Returns the
 * error (*request MPI_REQUEST_NULL, the request freed) or MPI_SUCCESS with
 * the started request in *request. */
int kumi_req_isend(struct kumi_comm *comm, const char *fname, const void *buf, size_t count, struct kumi_dt *dt,
                   int dest, int tag, MPI_Request *request);
int kumi_req_irecv(struct kumi_comm *comm, const char *fname, void *buf, size_t count, struct kumi_dt *dt,
                   int source, int tag, MPI_Request *request);
/* An internal one (no user handle) whose completion calls on_complete(r)
 * (r->ext = ext, r->cb_idx = idx); on_complete owns r from then on.  With
 * on_complete NULL the request is the caller's to wait for and free. */
struct kumi_req *kumi_req_internal(int kind, struct kumi_comm *comm, int32_t ctx, const char *fname,
                                   void *buf, size_t count, struct kumi_dt *dt, int peer, int tag,
                                   void (*on_complete)(struct kumi_req *r), void *ext, int idx);
/* A request of another kind (schedule, RMA, idup, generalized, partitioned)
 * with no peer; active: started, one completion pending (its layer calls
 * kumi_req_check_complete after clearing r->pending). */
struct kumi_req *kumi_req_new(int kind, struct kumi_comm *comm, int32_t ctx, const char *fname, bool active);
/* Start a send / receive prepared in r (args filled); r becomes active. */
int kumi_req_start_send(struct kumi_req *r);
int kumi_req_start_recv(struct kumi_req *r);
/* MPI_Send / MPI_Rsend of an eager message the transport takes at once: sent
 * without a request (1), or 0: nothing done, send it through a request. */
int kumi_req_send_direct(struct kumi_comm *comm, const void *buf, size_t count, struct kumi_dt *dt, int peer, int tag);
/* MPI_Recv from source (not a wildcard): its message taken straight from the
 * transport (1: *h its header, the payload at dst), or 0: nothing done. */
int kumi_req_recv_inline(const struct kumi_comm *comm, void *dst, size_t cap, int source, int tag, struct kumi_hdr *h);
/* Start receive r on the matched-probed message u (MPI_Mrecv). */
int kumi_req_start_recv_msg(struct kumi_req *r, struct kumi_ue *u);
/* r takes the unexpected message u (removed from the queue). */
void kumi_req_recv_ue(struct kumi_req *r, struct kumi_ue *u);
/* r's operation finished: status set, pending == 0. */
void kumi_req_check_complete(struct kumi_req *r);
/* Request_free semantics: free now if complete, else when it completes. */
void kumi_req_release(struct kumi_req *r);
/* Cancel (MPI_Cancel).  A send to oneself is decided before it returns. */
int kumi_req_cancel(struct kumi_req *r);
bool kumi_req_in_upcall(void);                      /* request.c: in an upcall or flushing */
/* Buffered mode: b (internal, carrying the copy of user request r's message)
 * becomes r's; kumi_req_bsend_unlink gives r's current one up (it frees
 * itself once sent). */
void kumi_req_bsend_link(struct kumi_req *r, struct kumi_req *b);
void kumi_req_bsend_unlink(struct kumi_req *r);
/* Number of world peers; transport for a peer. */
const struct kumi_p2p_ops *kumi_req_transport(int wpeer);
/* Peers beyond the world (processes of other jobs): add one served by ops
 * (a transport in use); its number, or -1 with *err set.  npeers: world
 * ranks + added peers. */
int kumi_req_add_peer(const struct kumi_p2p_ops *ops, int *err);
int kumi_req_npeers(void);
/* (request.c) The transport that reaches processes of other jobs (p2p
 * contract 1.5), or NULL; an added peer it refused is marked unreachable. */
const struct kumi_p2p_ops *kumi_req_xjob_transport(void);
void kumi_req_peer_unusable(int peer);
/* (xjob.c) Processes of other jobs.  kumi_req_job_uid: this job's identity
 * (the same on all its processes: from the job secret; a singleton's is
 * random).  kumi_req_xjob_card: this process's address card for them
 * (KUMI_XCARD_MAX bytes at most).  kumi_req_xpeer: the peer number of
 * process rank of job at card, added (through the transport, with key) if
 * it is not a peer yet (a process of this job: its world rank).
 * kumi_req_peer_id: who peer is ((job, rank) as the processes of other jobs
 * know it). */
#define KUMI_XCARD_MAX 2048
uint64_t kumi_req_job_uid(void);
int kumi_req_xjob_card(const char *fn, char *buf, size_t len);
int kumi_req_xpeer(const char *fn, uint64_t job, int rank, const char *card, const unsigned char *key,
                   uint64_t key_id, int *peer);
void kumi_req_peer_id(int peer, uint64_t *job, int *rank);
/* The peer number of (job, rank), or -1 when it is no peer of this process. */
int kumi_req_peer_of(uint64_t job, int rank);
/* The order of processes the same on every process (both jobs): by (job,
 * rank); for two world ranks, a < b. */
bool kumi_req_peer_before(int a, int b);
void kumi_req_xjob_finalize(void);
/* Send a control header (CTS, SYNC_ACK, CANCEL_*): queued, flushed soon. */
void kumi_req_send_ctl(int wpeer, const struct kumi_hdr *hdr);
void kumi_req_flush_ctl(void);
extern struct kumi_req_defer *kumi_req_dq_head;    /* the deferred sends (request.c) */
static inline int kumi_req_ctl_pending(void) { return kumi_req_dq_head != NULL; }
/* Queue a send op of the request layer (flushed with the control messages). */
void kumi_req_defer_op(int wpeer, struct kumi_sendop *op);
/* Device buffers: copies overlapped with rendezvous transfers (req_accel.c).
 * send_start: the request's host copy is lazy (s->lazy): -1 its payload goes
 * in DATA pieces (RTS without fragment, no RGET), 0 filled whole (go on as
 * usual), else an MPI error code.  cts: a CTS for such a send (or the
 * answer to its IPC handle); cts_flags: KUMI_HDR_F_IPC where receive r offers
 * to copy the message from the sender's device memory itself.  piece: a DATA
 * piece for receive r, and piece_done its struct kumi_rx's owner done: r when
 * the whole message arrived (finish it), else NULL.  forget: r completes or
 * is freed (its copies end).  progress: while kumi_req_accel_active. */
extern int kumi_req_accel_active;
int kumi_req_accel_send_start(struct kumi_req *r, const struct kumi_p2p_ops *ops);
void kumi_req_accel_cts(struct kumi_req *r, const struct kumi_hdr *cts);
uint8_t kumi_req_accel_cts_flags(struct kumi_req *r, const struct kumi_hdr *rts, int wpeer);
struct kumi_rx *kumi_req_accel_piece(struct kumi_req *r, const struct kumi_hdr *h);
struct kumi_req *kumi_req_accel_piece_done(void *owner);
void kumi_req_accel_forget(struct kumi_req *r);
int kumi_req_accel_progress(void);
/* The transports in use (request.c): how many, and the i-th (its name in
 * *name unless NULL); each world peer to the first that reaches it. */
int kumi_req_ntransports(void);
const struct kumi_p2p_ops *kumi_req_transport_at(int i, const char **name);
int kumi_req_assign_peers(bool *used, const char *what, const char *names);
/* KUMI_VERBOSE >= 1: the transport of each peer (req_peers.c). */
struct kumi_comp_entry;
void kumi_req_log_peers(int nworld, const struct kumi_p2p_ops *const *peer_ops, int ntr,
                        const struct kumi_p2p_ops *const *tr_ops, struct kumi_comp_entry *const *tr_entry,
                        const bool *used);
/* checkpoints (framework/mpi/ckpt.c; counts in request.c, the rest in req_ckpt.c) */
int kumi_req_ckpt_check(char *why, size_t len);
const uint64_t *kumi_req_ckpt_sent(void);
const uint64_t *kumi_req_ckpt_recvd(void);
long kumi_req_ckpt_rx_open(void);
int kumi_req_ckpt_idle(void);
void kumi_req_ckpt_release(void);
int kumi_req_ckpt_rewire(void);
extern long kumi_req_inflight;      /* sendops handed to transports, not done */
/* Payload buffers of unexpected messages (freed ones of 4 KiB to 256 KiB
 * are kept for reuse, up to 1 MiB per size class: req_bufs.c);
 * kumi_ubuf_free(NULL) is fine. */
void *kumi_ubuf_alloc(size_t n);
void kumi_ubuf_free(void *p);
size_t kumi_ubuf_cached(void);      /* bytes kept now */
void kumi_ubuf_drain(void);

/* ---- match.c ---- */
/* (request/req_bufs.c) external32 copies for peers of a transport with
 * KUMI_P2P_CAP_EXTERNAL32: does dt cross converted; a matched receive's
 * external32 landing buffer; conversion / release at completion. */
bool kumi_req_ext32_convert(const struct kumi_p2p_ops *ops, const struct kumi_dt *dt);
void kumi_req_ext32_recv_setup(struct kumi_req *r, int wpeer);
void kumi_req_ext32_finish(struct kumi_req *r);
int kumi_match_post(struct kumi_req *r);            /* append to posted queue (MPI_ERR_NO_MEM) */
int kumi_match_unpost(struct kumi_req *r);          /* remove if there: 1 */
struct kumi_req *kumi_match_posted(const struct kumi_hdr *hdr);  /* find + remove */
struct kumi_ue *kumi_match_unexpected(int32_t ctx, int src, int tag, int remove);
/* No receive posted and no message unexpected on context ctx (O(1);
 * kumi_match_ctx_quiet, below: inline where nothing is queued at all). */
bool kumi_match_ctx_quiet_slow(int32_t ctx);
void kumi_match_ue_append(struct kumi_ue *u);
void kumi_match_ue_remove(struct kumi_ue *u);
struct kumi_ue *kumi_match_ue_find_cancel(int wpeer, uint32_t seq, uint64_t sreq);
/* Sequence numbers per world peer (matchable messages): the next to send
 * and the next expected (match.c's tables, read inline on the fast paths). */
extern uint32_t *kumi_match_sseq, *kumi_match_rseq;
void kumi_match_seq_slip(int wpeer, uint32_t seq);          /* logs a message out of order */
static inline uint32_t kumi_match_next_send_seq(int wpeer) { return kumi_match_sseq[wpeer]++; }
static inline void kumi_match_check_recv_seq(int wpeer, uint32_t seq)
{
    if (__builtin_expect(seq != kumi_match_rseq[wpeer], 0)) kumi_match_seq_slip(wpeer, seq);
    kumi_match_rseq[wpeer] = seq + 1;
}
int kumi_match_init(int nworld);
int kumi_match_grow(int npeers);                    /* room for peers 0 .. npeers-1 */
void kumi_match_finalize(void);

/* The most p2p components one process uses at once (selection stops there). */
#define KUMI_MAX_TRANSPORTS 16

/* ---- Performance counters (read through MPI_T, framework/mpit) ----
 * Plain per-process counters, updated on the existing paths under the
 * library lock (no lock or atomic of their own): match.c keeps the queue
 * lengths, request.c the sends per transport and the rendezvous, progress.c
 * the time in progress while `timing` is set (an MPI_T handle of the timer
 * is started: the clock is not read otherwise).  ue_hook, when set, is
 * called for each message that arrives unexpected (an MPI_T event). */
struct kumi_pvars {
    uint64_t ue_len, ue_peak;            /* unexpected-message queue: now, highest */
    uint64_t ue_total;                   /* messages that arrived unexpected */
    uint64_t posted_len, posted_peak;    /* posted-receive queue: now, highest */
    uint64_t rndv;                       /* sends by rendezvous */
    uint64_t recv_inline;                /* MPI_Recv taken straight from the transport (contract 1.9) */
    uint64_t accel_pieces;               /* device buffers (req_accel.c): pieces sent as copied */
    uint64_t accel_ipc;                  /* messages received device to device (CUDA IPC) */
    uint64_t accel_coll_pieces;          /* pieces the pipelined collectives ran (mpi/coll_accel.c) */
    uint64_t msgs[KUMI_MAX_TRANSPORTS];  /* messages sent, per transport index */
    uint64_t bytes[KUMI_MAX_TRANSPORTS]; /* payload bytes sent, per transport index */
    double progress_secs;                /* time in progress (while timing) */
    int timing;
    void (*ue_hook)(const struct kumi_hdr *h);
};
extern struct kumi_pvars kumi_pv;
static inline bool kumi_match_ctx_quiet(int32_t ctx)
{
    return (!kumi_pv.ue_len && !kumi_pv.posted_len) || kumi_match_ctx_quiet_slow(ctx);
}
/* Index (into kumi_pv.msgs / bytes) of the p2p component named name that this
 * process uses, or -1. */
int kumi_req_transport_index(const char *name);
/* Messages of context ctx in the unexpected and the posted-receive queues
 * (walks both: for MPI_T reads, not the fast path). */
void kumi_match_count_ctx(int32_t ctx, uint64_t *ue, uint64_t *posted);

/* ---- progress.c ---- */
/* used[i]: transport i serves at least one peer (polled every round; the
 * others every KUMI_IDLE_POLL_EVERY rounds and around every sleep). */
int kumi_progress_setup(const struct kumi_p2p_ops **ops, const bool *used, int n);
void kumi_progress_mark_used(const struct kumi_p2p_ops *ops);   /* it serves a peer added later */
/* Block (spin, yield, sleep) until *flag != 0 or done(arg) returns 1. */
void kumi_progress_wait_flag(volatile bool *flag);
void kumi_progress_wait(int (*done)(void *), void *arg);
extern long long kumi_progress_spin_rounds;   /* a blocking wait's polls before it yields (resolved) */
/* Between two polls of a line another core writes: back-to-back loads take
 * the line away from a writer between its stores (MPI_Recv's fast path). */
static inline void kumi_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
/* The same, but once spinning and yielding are over the wait calls
 * nap(arg), with the library lock released, instead of sleeping in poll()
 * on the transports' descriptors: for a condition that no descriptor
 * signals (shared memory written by another process, which wakes a futex).
 * nap returns once the condition may have changed or after a short time;
 * the transports are polled after each nap. */
void kumi_progress_wait_nap(int (*done)(void *), void *arg, void (*nap)(void *));

/* ---- pacing.c: the pacing framework (kumi/pacing.h) ---- */
void kumi_pacing_init(void);        /* after the transports' wireup */
void kumi_pacing_finalize(void);    /* before they close */
/* Around a blocking collective (coll: the kumi_coll_fns field name; count
 * elements of dt (NULL: none): the bytes kumi/coll.h's pace_hint takes): enter
 * returns a token for leave (0: nothing to undo). */
int kumi_pacing_enter(const char *coll, const struct kumi_comm *comm, MPI_Count count, const struct kumi_dt *dt);
void kumi_pacing_leave(int token);
extern bool kumi_pacing_has_pending;   /* the progress engine calls kumi_pacing_progress */
void kumi_pacing_progress(void);

/* ---- pt2pt.c ---- */
void kumi_req_status_out(const struct kumi_req *r, MPI_Status *st);

/* ---- request.c: the collectives' point-to-point (kumi_coll_*) ---- */
/* A blocking collective runs to its end through truncated receives (a rank
 * that left early would leave its peers waiting forever): while slot is set,
 * kumi_coll_wait (kumi/coll.h) reports a truncated receive as success and
 * keeps the first one's error in *slot (which the caller sets to
 * MPI_SUCCESS first); NULL: reported at once.  Returns the previous slot
 * (restore it after the collective). */
int *kumi_coll_keep_trunc(int *slot);

/* ---- comm_agree.c: context-id agreement ---- */
/* Context ids: allocate one (pair) agreed over parent, collectively. */
int kumi_ctx_alloc(struct kumi_comm *parent, int32_t *ctx);
/* A new communicator's pair over every rank of parent: by the component's
 * rule (kumi_ctx_rule_set) when it applies to parent, else kumi_ctx_alloc.
 * kumi_ctx_rule_applies: whether it does. */
int kumi_ctx_alloc_comm(struct kumi_comm *parent, int32_t *ctx);
bool kumi_ctx_rule_applies(struct kumi_comm *comm);
/* The rule for an intercommunicator between local's group and the remote
 * group rworld[0..rn) (kumi/coll.h: applies_inter, agree_inter; the caller
 * checks kumi_ctx_rule_applies_inter first, on every process of both groups). */
bool kumi_ctx_rule_applies_inter(struct kumi_comm *local, int rn, const int rworld[]);
int kumi_ctx_rule_agree_inter(int kind, struct kumi_comm *local, int leader, struct kumi_comm *inter,
                              int (*xchg)(void *, const uint64_t *, uint64_t *, int), void *arg, uint64_t extra,
                              uint64_t *rextra, int nctx, int32_t ctx[]);
/* Same, agreed over the members of group g only (g's world ranks must be
 * ranks of carrier; carrier NULL: the whole job, usable before MPI_Init once
 * the runtime is up).  key tells concurrent agreements apart (the same on
 * every member; e.g. the tag of MPI_Comm_create_group). */
int kumi_ctx_alloc_group(struct kumi_comm *carrier, const struct kumi_group *g, uint64_t key, int32_t *ctx);
/* Agreement among every rank of comm, by point-to-point in its collective context. */
int kumi_ctx_alloc_over(struct kumi_comm *comm, uint64_t key, int32_t *ctx);
void kumi_idup_register(void);    /* registers the request kind KUMI_REQ_IDUP (MPI_Comm_idup) */
/* Builds an intercommunicator's duplicate once both groups agreed on the
 * context pairs ctx (the intercommunicator) and lctx (its local
 * intracommunicator); takes info and, on failure too, both pairs. */
typedef int (*kumi_idup_inter_fn)(struct kumi_comm *parent, int32_t ctx, int32_t lctx, struct kumi_info *info,
                                  MPI_Comm *newcomm, const char *fn);
/* MPI_Comm_idup: a request that completes once the members (of both groups
 * of an intercommunicator) agreed on a context id and *newcomm is made
 * (hints: info, copied; finish: builds an intercommunicator's duplicate). */
int kumi_comm_idup_start(struct kumi_comm *comm, struct kumi_info *info, MPI_Comm *newcomm, MPI_Request *request,
                         const char *fn, kumi_idup_inter_fn finish);

/* ---- bsend.c ---- */
/* MPI_Buffer_attach(_c) / MPI_Buffer_detach(_c) (fn names the call; errors
 * go through MPI_COMM_SELF's handler); detach waits until the buffered
 * messages have gone; max: the largest *size the caller's argument holds. */
int kumi_bsend_attach(const char *fn, void *buffer, MPI_Count size);
int kumi_bsend_detach(const char *fn, void *buffer_addr, MPI_Count *size, MPI_Count max);
/* The buffers themselves (struct kumi_bbuf, core.h): the process's, and the
 * one a buffered send on c uses (c's, else its session's, else the
 * process's).  These return error codes (no handler); what names the owner
 * ("the MPI process", "communicator MPI_COMM_WORLD", "the session").
 * attach: buffer may be MPI_BUFFER_AUTOMATIC (size ignored).  detach: waits
 * for every message in b, then *buffer_addr / *size (MPI_BUFFER_AUTOMATIC /
 * 0; none attached: NULL / 0).  flush: waits for the messages buffered
 * before the call; iflush: a request (comm: its communicator, or NULL) that
 * completes then. */
struct kumi_bbuf *kumi_bbuf_process(void);
struct kumi_bbuf *kumi_bbuf_for(struct kumi_comm *c);
int kumi_bbuf_attached(const struct kumi_bbuf *b);
int kumi_bbuf_attach(struct kumi_bbuf *b, const char *fn, const char *what, void *buffer, MPI_Count size);
int kumi_bbuf_detach(struct kumi_bbuf *b, const char *fn, void *buffer_addr, MPI_Count *size, MPI_Count max);
int kumi_bbuf_flush(struct kumi_bbuf *b);
int kumi_bbuf_iflush(struct kumi_bbuf *b, struct kumi_comm *comm, const char *fn, MPI_Request *request);
/* Copy the message into the attached buffer; r->pack/bsend_seg set. */
int kumi_bsend_prepare(struct kumi_req *r);
void kumi_bsend_release(struct kumi_req *r);

#endif
