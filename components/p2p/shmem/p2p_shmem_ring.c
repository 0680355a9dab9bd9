/* p2p/shmem rings: writing records and payloads into a peer's ring (send(),
 * the queue of ops that wait for space, the ACKs of CMA transfers), reading
 * ours (poll_ring()), and progress() / busy() over all same-host peers. */
#include "p2p_shmem.h"

/* p2p_shmem_ring_bell() found p asleep (its sleeping word 1): the first
 * writer to swap the word to 2 sends the one datagram. */
__attribute__((noinline)) void p2p_shmem_wake(struct p2p_shmem_peer *p)
{
    int one = 1;
    if (atomic_compare_exchange_strong(&p->seg->sleeping, &one, 2)) {
        char b = 1;
        ssize_t w = sendto(p2p_shmem_bellfd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
                           (struct sockaddr *)&p->bell, p->bell_len);
        (void)w;
    }
}

static inline int p2p_shmem_use_cma(struct p2p_shmem_peer *p, const struct kumi_sendop *op)
{
    /* a pulled RTS (the request layer asked p2p_shmem_rget first) */
    if (op->hdr.kind == KUMI_HDR_RTS) return (op->hdr.flags & KUMI_HDR_F_RGET) && op->payload;
    /* rendezvous payloads only: an eager send completes without waiting for the receiver */
    if (op->hdr.kind != KUMI_HDR_DATA || op->hdr.paylen < p2p_shmem_cma_min || !op->payload) return 0;
    return p2p_shmem_peer_cma(p);
}

/* A SHORT record can carry op: an eager message of at most
 * P2P_SHMEM_SHORT_MAX bytes, all of it in this record. */
static inline int p2p_shmem_short_ok(const struct kumi_sendop *op)
{
    return (op->hdr.kind == KUMI_HDR_EAGER || op->hdr.kind == KUMI_HDR_EAGER_SYNC) &&
           op->hdr.paylen <= P2P_SHMEM_SHORT_MAX && op->hdr.len == op->hdr.paylen && op->hdr.rreq == 0;
}

/* Write as much of op as fits.  Returns 1 when op is fully written (the
 * caller then publishes, unlinks and completes or parks it), 0 otherwise. */
static int p2p_shmem_write_op(struct p2p_shmem_peer *p, struct kumi_sendop *op, int *hdr_done)
{
    if (!*hdr_done) {
        if (!p2p_shmem_align(p)) return 0;
        if (p2p_shmem_short_ok(op)) {                 /* header and payload in one cell */
            struct p2p_shmem_short c;
            if (p2p_shmem_ofree(p, P2P_SHMEM_CELL) < P2P_SHMEM_CELL) return 0;
            c.kind = op->hdr.kind;
            c.flags = op->hdr.flags;
            c.type = P2P_SHMEM_REC_SHORT;
            c.paylen = (uint8_t)op->hdr.paylen;
            c.ctx = op->hdr.ctx;
            c.src = op->hdr.src;
            c.tag = op->hdr.tag;
            c.seq = op->hdr.seq;
            c.u.s.sreq_lo = (uint32_t)op->hdr.sreq;
            c.u.s.sreq_hi = (uint32_t)(op->hdr.sreq >> 32);
            if (op->hdr.paylen) memcpy(c.u.s.data, op->payload, (size_t)op->hdr.paylen);
            p2p_shmem_put_cell(p, p->otail, &c);
            p->otail += P2P_SHMEM_CELL;
            op->toff = (size_t)op->hdr.paylen;
            op->tptr = NULL;
            p->oseq = op->hdr.seq + 1;
            *hdr_done = 1;
            return 1;
        }
        struct p2p_shmem_rec rec;
        int cma = p2p_shmem_use_cma(p, op);
        size_t need = P2P_SHMEM_CELL * (cma ? 2u : 1u);
        if (p2p_shmem_ofree(p, need) < need) return 0;
        rec.hdr = op->hdr;
        rec.hdr.pad = 0;
        op->toff = 0;
        op->tptr = NULL;
        if (op->hdr.kind == 0) {                      /* an ACK of ours */
            rec.hdr.reserved = P2P_SHMEM_REC_ACK;
        } else if (cma) {
            struct p2p_shmem_cmadesc d;
            rec.hdr.reserved = P2P_SHMEM_REC_CMA;
            memset(&d, 0, sizeof d);
            d.addr = (uint64_t)(uintptr_t)op->payload;
            d.cookie = (uint64_t)(uintptr_t)op;
            d.pid = (int32_t)getpid();
            p2p_shmem_put(p, p->otail + P2P_SHMEM_CELL, &d, sizeof d);
            op->tptr = (void *)op;                     /* non-NULL: waits for an ACK */
        } else {
            rec.hdr.reserved = P2P_SHMEM_REC_MSG;
            size_t paylen = (size_t)op->hdr.paylen;
            size_t whole = P2P_SHMEM_CELL + p2p_shmem_round(paylen);
            /* the payload first, then the record; or (large, or no room)
             * the record first, then the payload in pieces */
            if (paylen && p2p_shmem_whole_ok(p, paylen) && p2p_shmem_ofree(p, whole) >= whole) {
                p2p_shmem_put(p, p->otail + P2P_SHMEM_CELL, op->payload, paylen);
                rec.hdr.pad = P2P_SHMEM_F_WHOLE;
                need = whole;
                op->toff = paylen;
            }
        }
        p2p_shmem_put_cell(p, p->otail, &rec);
        p->otail += need;
        if (p2p_shmem_seq_kind(op->hdr.kind)) p->oseq = op->hdr.seq + 1;
        *hdr_done = 1;
        if (rec.hdr.reserved != P2P_SHMEM_REC_MSG) return 1;
    }
    /* inline payload, in pieces as space allows and of at most
     * pipeline_chunk bytes (the receiver reads up to the tail counter,
     * published after each piece, and copies one out while we write the
     * next) */
    {
        size_t paylen = (size_t)op->hdr.paylen;
        while (op->toff < paylen) {
            size_t left = paylen - op->toff;
            size_t want = p2p_shmem_round(left) < p2p_shmem_pipe_chunk ? p2p_shmem_round(left) : p2p_shmem_pipe_chunk;
            size_t fr = p2p_shmem_ofree(p, want);
            size_t n;
            fr &= ~(size_t)(P2P_SHMEM_CELL - 1);
            if (fr == 0) return 0;
            if (fr > p2p_shmem_pipe_chunk) fr = p2p_shmem_pipe_chunk;
            n = left < fr ? left : fr;
            p2p_shmem_put(p, p->otail, (const char *)op->payload + op->toff, n);
            op->toff += n;
            p->otail += p2p_shmem_round(n);
            atomic_store_explicit(&p->octl->tail, p->otail, memory_order_release);
        }
    }
    return 1;
}

/* Push queued ops to p.  Returns 1 if anything went out. */
int p2p_shmem_flush(struct p2p_shmem_peer *p)
{
    int did = 0;
    struct kumi_sendop *done = NULL, **donetail = &done;
    uint64_t t0 = p->otail;
    while (p->qhead) {
        struct kumi_sendop *op = p->qhead;
        uint64_t before = p->otail;
        int full = p2p_shmem_write_op(p, op, &p->qhdr_done);
        if (p->otail != before) did = 1;
        if (!full) break;
        p->qhead = op->tnext;
        if (!p->qhead) p->qtail = NULL;
        p->qhdr_done = 0;
        op->tnext = NULL;
        if (op->tptr) {                               /* CMA: park until the ACK */
            op->tnext = p->acks;
            p->acks = op;
        } else {
            p2p_shmem_nqueued--;
            *donetail = op;
            donetail = &op->tnext;
        }
    }
    if (p->otail != t0) p2p_shmem_publish(p);
    while (done) {
        struct kumi_sendop *op = done;
        done = op->tnext;
        op->tnext = NULL;
        op->done(op);
    }
    return did;
}

static void p2p_shmem_ack_done(struct kumi_sendop *op)
{
    free(op);
}

int p2p_shmem_send(int peer, struct kumi_sendop *op)
{
    struct p2p_shmem_peer *p;
    if (!p2p_shmem_reaches(peer))
        return kumi_error(MPI_ERR_OTHER, "p2p/shmem: rank %d is not on this host", peer);
    p = &p2p_shmem_peers[peer];
    if (!p->seg && p2p_shmem_attach(p, peer) != 0)
        return kumi_error(MPI_ERR_OTHER, "p2p/shmem: cannot attach the segment of rank %d", peer);
    op->tnext = NULL;
    op->toff = 0;
    op->tptr = NULL;
    if (!p->qhead) {                                  /* fast path: straight into the ring */
        int hd = 0;
        uint64_t t0 = p->otail;
        int full = p2p_shmem_write_op(p, op, &hd);
        if (full) {
            p2p_shmem_publish(p);
            if (op->tptr) {
                op->tnext = p->acks;
                p->acks = op;
                p2p_shmem_nqueued++;
            } else {
                op->done(op);
            }
            return MPI_SUCCESS;
        }
        if (p->otail != t0) p2p_shmem_publish(p);
        p->qhdr_done = hd;
    }
    if (p->qtail) p->qtail->tnext = op;
    else p->qhead = op;
    p->qtail = op;
    p2p_shmem_nqueued++;
    return MPI_SUCCESS;
}

/* send_inline() of a message larger than a SHORT record: a MSG record
 * with its whole payload before the stamp (out of line: the SHORT path
 * saves no registers for these copies). */
static __attribute__((noinline)) int p2p_shmem_send_inline_msg(struct p2p_shmem_peer *p, const struct kumi_hdr *h,
                                                               const void *payload, size_t paylen)
{
    size_t whole = P2P_SHMEM_CELL + p2p_shmem_round(paylen);
    struct p2p_shmem_rec rec;
    if (!p2p_shmem_whole_ok(p, paylen) || p2p_shmem_ofree(p, whole) < whole) return 0;
    p->oseq = h->seq + 1;
    rec.hdr = *h;
    rec.hdr.pad = P2P_SHMEM_F_WHOLE;
    rec.hdr.reserved = P2P_SHMEM_REC_MSG;
    p2p_shmem_put(p, p->otail + P2P_SHMEM_CELL, payload, paylen);
    p2p_shmem_put_cell(p, p->otail, &rec);
    p->otail += whole;
    p2p_shmem_publish(p);
    return 1;
}

/* Write the short record of h and its payload at our tail (in place, no
 * copy through the stack: the receiver reads no byte of it before the
 * stamp, stored last) and publish it; len: its ring bytes (one cell or two,
 * not wrapping, room checked). */
static inline __attribute__((always_inline)) void p2p_shmem_put_short(struct p2p_shmem_peer *p, const struct kumi_hdr *h,
                                                                      const void *payload, size_t paylen, size_t len)
{
    char *cell = p2p_shmem_cell(p->odata, p->otail);
    struct p2p_shmem_short *c = (struct p2p_shmem_short *)(void *)cell;
    uint64_t sreq = h->sreq;
    char *d = c->u.ndata;
    c->kind = h->kind;
    c->flags = h->flags;
    c->type = sreq ? P2P_SHMEM_REC_SHORT : P2P_SHMEM_REC_SHORTN;
    c->paylen = (uint8_t)paylen;
    c->ctx = h->ctx;
    c->src = h->src;
    c->tag = h->tag;
    c->seq = h->seq;
    if (sreq) {
        c->u.s.sreq_lo = (uint32_t)sreq;
        c->u.s.sreq_hi = (uint32_t)(sreq >> 32);
        d = c->u.s.data;
    }
    kumi_p2p_copy64(d, payload, paylen);
    atomic_store_explicit((_Atomic uint64_t *)(void *)cell, p2p_shmem_stamp(p->seg->stampkey, p->otail),
                          memory_order_release);
    p->otail += len;
    p->oseq = h->seq + 1;
    p2p_shmem_publish(p);
}

/* Write the TINY record of h (an eager message of at most
 * P2P_SHMEM_TINY_MAX bytes whose sequence number is p->oseq) in place at
 * our tail and publish it; room checked. */
static inline __attribute__((always_inline)) void p2p_shmem_put_tiny(struct p2p_shmem_peer *p, const struct kumi_hdr *h,
                                                                     const void *payload, size_t paylen)
{
    char *cell = p2p_shmem_cell(p->odata, p->otail);
    struct p2p_shmem_tiny *t = (struct p2p_shmem_tiny *)(void *)cell;
    t->kind = KUMI_HDR_EAGER;
    t->seqlo = (uint8_t)h->seq;
    t->type = P2P_SHMEM_REC_TINY;
    t->paylen = (uint8_t)paylen;
    t->ctx = h->ctx;
    t->src = h->src;
    t->tag = h->tag;
    kumi_p2p_copy64(t->data, payload, paylen);
    atomic_store_explicit((_Atomic uint64_t *)(void *)cell, p2p_shmem_stamp(p->seg->stampkey, p->otail),
                          memory_order_release);
    p->otail += P2P_SHMEM_HALF;
    p->oseq++;
    p2p_shmem_publish(p);
}

/* send_inline() of a message larger than one cell of a short record holds:
 * two cells up to P2P_SHMEM_SHORT_BIG bytes, else (or where two cells would
 * wrap at the ring's end) a MSG record (out of line: the one-cell path saves
 * no registers). */
static __attribute__((noinline)) int p2p_shmem_send_inline_big(struct p2p_shmem_peer *p, const struct kumi_hdr *h,
                                                               const void *payload, size_t paylen)
{
    size_t len = 2 * P2P_SHMEM_CELL;
    if (!p2p_shmem_align(p)) return 0;
    if (paylen > P2P_SHMEM_SHORT_BIG || (p->otail & (p2p_shmem_ringsz - 1)) + len > p2p_shmem_ringsz)
        return p2p_shmem_send_inline_msg(p, h, payload, paylen);
    if (p2p_shmem_ofree(p, len) < len) return 0;
    p2p_shmem_put_short(p, h, payload, paylen, len);
    return 1;
}

/* Contract 1.8: an eager message written at once when nothing is queued to
 * peer and the ring has room (no sendop, no done()); 0: not now, the caller
 * sends it through p2p_shmem_send().  Up to 8 bytes, with the sequence
 * number that follows the ring's count: a TINY record (half a cell, no
 * sender cookie).  Up to P2P_SHMEM_SHORT_BIG bytes: a
 * SHORT record (SHORTN without a sender cookie), one cell up to 28 bytes
 * (36 for SHORTN), else two; larger ones (below pipeline_min), and a short
 * record that would wrap at the ring's end, a MSG record with its whole
 * payload before the stamp. */
int p2p_shmem_send_inline(int peer, const struct kumi_hdr *h, const void *payload)
{
    if ((unsigned)peer >= (unsigned)p2p_shmem_size || !p2p_shmem_peers) return 0;
    struct p2p_shmem_peer *p = &p2p_shmem_peers[peer];
    if (__builtin_expect(!p->seg || p->qhead != NULL, 0)) return 0;   /* not attached yet: send() does it */
    size_t paylen = (size_t)h->paylen;
    if (paylen <= P2P_SHMEM_TINY_MAX && h->seq == p->oseq && h->kind == KUMI_HDR_EAGER && !h->flags) {
        if (p2p_shmem_ofree(p, P2P_SHMEM_HALF) < P2P_SHMEM_HALF) return 0;
        p2p_shmem_put_tiny(p, h, payload, paylen);
        return 1;
    }
    if (__builtin_expect(paylen > P2P_SHMEM_SHORT_MAX && (h->sreq || paylen > P2P_SHMEM_SHORTN_MAX), 0))
        return p2p_shmem_send_inline_big(p, h, payload, paylen);
    if (!p2p_shmem_align(p) || p2p_shmem_ofree(p, P2P_SHMEM_CELL) < P2P_SHMEM_CELL) return 0;
    p2p_shmem_put_short(p, h, payload, paylen, P2P_SHMEM_CELL);
    return 1;
}

/* Queue an ACK of a CMA record to peer (internal op). */
void p2p_shmem_send_ack(int peer, uint64_t cookie, int ok)
{
    struct kumi_sendop *op = calloc(1, sizeof *op);
    if (!op) {
        kumi_warn("p2p/shmem: out of memory for an ACK to rank %d", peer);
        return;
    }
    op->hdr.kind = 0;
    op->hdr.flags = ok ? 0 : 1;
    op->hdr.sreq = cookie;
    op->done = p2p_shmem_ack_done;
    if (p2p_shmem_send(peer, op) != MPI_SUCCESS) free(op);
}

static void p2p_shmem_finish_msg(struct p2p_shmem_peer *p)
{
    struct kumi_rx *rx = p->rx;
    p->in_msg = 0;
    p->rx = NULL;
    if (rx) {
        rx->got = p->paylen;
        kumi_p2p_rx_done(rx);
    }
}

static void p2p_shmem_got_ack(int peer, struct p2p_shmem_peer *p, const struct p2p_shmem_rec *rec)
{
    struct kumi_sendop **pp = &p->acks;
    for (; *pp; pp = &(*pp)->tnext) {
        struct kumi_sendop *op = *pp;
        if ((uint64_t)(uintptr_t)op == rec->hdr.sreq) {
            *pp = op->tnext;
            op->tnext = NULL;
            op->tptr = NULL;
            p2p_shmem_nqueued--;
            if (rec->hdr.flags)
                kumi_warn("p2p/shmem: rank %d could not read a message of %llu bytes (CMA); "
                          "its data are lost", peer, (unsigned long long)op->hdr.paylen);
            op->done(op);
            return;
        }
    }
    kumi_warn("p2p/shmem: ACK from rank %d for an unknown transfer", peer);
}

/* A record (not SHORT) whose header and whole payload are in the ring at
 * our head: hand it over and step past it. */
static void p2p_shmem_take_whole(int peer, struct p2p_shmem_peer *p, const struct kumi_hdr *h)
{
    p->ihdr = *h;
    size_t paylen = (size_t)h->paylen;
    size_t off = (size_t)((p->ihead + P2P_SHMEM_CELL) & (p2p_shmem_ringsz - 1));
    if (off + paylen <= p2p_shmem_ringsz) {          /* in one piece: handed over as it is */
        kumi_p2p_incoming_whole(peer, &p->ihdr, p->idata + off);
    } else {
        struct kumi_rx *rx = kumi_p2p_incoming(peer, &p->ihdr);
        if (rx) {
            if (rx->dst && paylen) {
                size_t k = rx->cap < paylen ? rx->cap : paylen;
                if (k) p2p_shmem_get(p, p->ihead + P2P_SHMEM_CELL, rx->dst, k);
            }
            rx->got = paylen;
            kumi_p2p_rx_done(rx);
        }
    }
    p->ihead += P2P_SHMEM_CELL + p2p_shmem_round(paylen);
}

/* The sequence number of the TINY record t from peer (the next of the
 * ring's count); its low byte disagrees only if the two sides' counts do. */
static uint32_t p2p_shmem_tiny_seq(int peer, struct p2p_shmem_peer *p, const struct p2p_shmem_tiny *t)
{
    uint32_t seq = p->iseq++;
    if (__builtin_expect(t->seqlo != (uint8_t)seq, 0))
        kumi_warn("internal error: p2p/shmem: a short message from rank %d has sequence number %u "
                  "(low byte %u expected)", peer, seq, (unsigned)t->seqlo);
    return seq;
}

/* A TINY record at our head: hand it over and step past it. */
static inline __attribute__((always_inline)) void p2p_shmem_take_tiny(int peer, struct p2p_shmem_peer *p,
                                                                      const struct p2p_shmem_tiny *t)
{
    struct kumi_hdr h = {
        .kind = KUMI_HDR_EAGER, .ctx = t->ctx, .src = t->src, .tag = t->tag,
        .seq = p2p_shmem_tiny_seq(peer, p, t), .len = t->paylen, .paylen = t->paylen,
    };
    p->ihead += P2P_SHMEM_HALF;
    kumi_p2p_incoming_whole(peer, &h, t->data);
}

/* A SHORT, SHORTN, TINY or PAD record at our head (c: its first cell, in the
 * ring: the sender does not write it again before our head has passed it). */
static inline __attribute__((always_inline)) void p2p_shmem_take_short(int peer, struct p2p_shmem_peer *p,
                                                                       const struct p2p_shmem_short *c)
{
    if (c->type >= P2P_SHMEM_REC_TINY) {
        if (c->type == P2P_SHMEM_REC_TINY) p2p_shmem_take_tiny(peer, p, (const struct p2p_shmem_tiny *)(const void *)c);
        else p->ihead += P2P_SHMEM_HALF;                /* PAD */
        return;
    }
    int n = c->type == P2P_SHMEM_REC_SHORTN;
    struct kumi_hdr h = {
        .kind = c->kind, .flags = c->flags, .ctx = c->ctx, .src = c->src, .tag = c->tag, .seq = c->seq,
        .len = c->paylen, .paylen = c->paylen,
        .sreq = n ? 0 : (uint64_t)c->u.s.sreq_hi << 32 | c->u.s.sreq_lo,
    };
    p->iseq = c->seq + 1;
    if (c->paylen <= (n ? P2P_SHMEM_SHORTN_MAX : P2P_SHMEM_SHORT_MAX)) {
        p->ihead += P2P_SHMEM_CELL;
    } else {            /* the second cell's line on its way while the message is matched */
        __builtin_prefetch((const char *)c + P2P_SHMEM_CELL);
        p->ihead += 2 * P2P_SHMEM_CELL;
    }
    kumi_p2p_incoming_whole(peer, &h, n ? c->u.ndata : c->u.s.data);
}

/* Contract 1.9: a blocking receive takes the SHORT or SHORTN record at the
 * head of peer's ring itself when it is an eager message of context ctx from
 * src, of tag tag (any for MPI_ANY_TAG): its payload straight into dst, the
 * head stored as take_shorts() stores it.  0: no record there yet; -1:
 * another record, a payload streaming in, or inside progress(). */
int p2p_shmem_recv_inline(int peer, int32_t ctx, int src, int tag, void *dst, size_t cap, struct kumi_hdr *h)
{
    struct p2p_shmem_peer *p = &p2p_shmem_peers[peer];
    if (__builtin_expect(p->in_msg || p2p_shmem_in_progress, 0)) return -1;
    const char *cell;
    const struct p2p_shmem_short *c;
    for (;;) {
        cell = p2p_shmem_cell(p->idata, p->ihead);
        P2P_SHMEM_TOUCH_NEXT(p->idata, p->ihead);
        if (atomic_load_explicit((const _Atomic uint64_t *)(const void *)cell, memory_order_acquire) !=
            p2p_shmem_stamp(p2p_shmem_seg->stampkey, p->ihead))
            return 0;
        c = (const struct p2p_shmem_short *)(const void *)cell;
        if (__builtin_expect(c->type != P2P_SHMEM_REC_PAD, 1)) break;
        p->ihead += P2P_SHMEM_HALF;                   /* a PAD: the record follows on the next cell */
    }
    /* the kind, context, source and tag are at the same places in a TINY record */
    if (__builtin_expect(!p2p_shmem_is_short(c->type) || c->kind != KUMI_HDR_EAGER || c->ctx != ctx ||
                         c->src != src || (tag != MPI_ANY_TAG && c->tag != tag), 0))
        return -1;
    size_t paylen = c->paylen;
    const char *data;
    h->kind = KUMI_HDR_EAGER;
    h->ctx = ctx;
    h->src = src;
    h->tag = c->tag;
    h->len = h->paylen = paylen;
    if (c->type == P2P_SHMEM_REC_TINY) {
        const struct p2p_shmem_tiny *t = (const struct p2p_shmem_tiny *)(const void *)cell;
        h->flags = 0;
        h->seq = p2p_shmem_tiny_seq(peer, p, t);
        h->sreq = 0;
        data = t->data;
        p->ihead += P2P_SHMEM_HALF;
    } else {
        int n = c->type == P2P_SHMEM_REC_SHORTN;
        h->flags = c->flags;
        h->seq = c->seq;
        p->iseq = c->seq + 1;
        h->sreq = n ? 0 : (uint64_t)c->u.s.sreq_hi << 32 | c->u.s.sreq_lo;
        data = n ? c->u.ndata : c->u.s.data;
        p->ihead += paylen <= (n ? P2P_SHMEM_SHORTN_MAX : P2P_SHMEM_SHORT_MAX) ? P2P_SHMEM_CELL : 2 * P2P_SHMEM_CELL;
    }
    if (paylen) kumi_p2p_copy64(dst, data, paylen < cap ? paylen : cap);
    atomic_store_explicit(&p->ictl->head, p->ihead, memory_order_release);
    /* the sender may sleep waiting for space */
    if (p->seg || p2p_shmem_attach(p, peer) == 0) p2p_shmem_ring_bell(p);
    return 1;
}

/* Read what ring peer -> me holds.  Returns 1 if anything happened. */
int p2p_shmem_poll_ring(int peer, struct p2p_shmem_peer *p)
{
    int did = 0, recs = 0;
    uint64_t h0 = p->ihead;
    for (;;) {
        if (p->in_msg) {                     /* a streamed payload: up to the tail */
            if (p->itail <= p->ihead) {
                p->itail = atomic_load_explicit(&p->ictl->tail, memory_order_acquire);
                if (p->itail <= p->ihead) break;
            }
            size_t avail = (size_t)(p->itail - p->ihead);
            size_t left = p->paylen - p->paygot;
            size_t n = left < avail ? left : avail;
            struct kumi_rx *rx = p->rx;
            if (rx && rx->dst && p->paygot < rx->cap) {
                size_t k = rx->cap - p->paygot < n ? rx->cap - p->paygot : n;
                if (__builtin_expect(p->swtime > 0, 0)) {   /* timed: the copies only, not the waits */
                    double t0 = p2p_shmem_now();
                    p2p_shmem_get(p, p->ihead, rx->dst + p->paygot, k);
                    p->swacc += p2p_shmem_now() - t0;
                    p->swbytes += k;
                    if (--p->swtime == 0) p2p_shmem_sw_time(peer, p, p->swbytes, p->swacc);
                } else {
                    p2p_shmem_get(p, p->ihead, rx->dst + p->paygot, k);
                }
            }
            p->paygot += n;
            if (rx) rx->got = p->paygot;
            if (p->paygot == p->paylen) {
                if (p->swtime > 0 && p->swbytes) p2p_shmem_sw_time(peer, p, p->swbytes, p->swacc);
                p->swtime = 0;
                p->ihead += p2p_shmem_round(n);
                p2p_shmem_finish_msg(p);
                recs++;
            } else {
                p->ihead += n;               /* a piece: always a multiple of 64 */
            }
            did = 1;
        } else {
            if (!p2p_shmem_rec_ready(p)) break;
            /* the type is the byte at offset 10 in every kind of cell (a
             * SHORT cell's paylen follows it) */
            const struct p2p_shmem_short *sc = (const struct p2p_shmem_short *)(const void *)
                                                   p2p_shmem_cell(p->idata, p->ihead);
            if (p2p_shmem_is_short(sc->type)) {  /* in place (its payload may go on in the next cell) */
                p2p_shmem_take_short(peer, p, sc);
                recs++;
                did = 1;
                if (recs >= P2P_SHMEM_BATCH) break;
                continue;
            }
            /* any other record starts on a cell, which is read once (one copy of its line) */
            struct p2p_shmem_rec rec;
            memcpy(&rec, sc, sizeof rec);
            unsigned type = rec.hdr.reserved, fl = rec.hdr.pad;
            rec.hdr.reserved = 0;
            rec.hdr.pad = 0;
            if (p2p_shmem_seq_kind(rec.hdr.kind)) p->iseq = rec.hdr.seq + 1;
            if (type == P2P_SHMEM_REC_CMA) {
                struct p2p_shmem_cmadesc d;
                p2p_shmem_get(p, p->ihead + P2P_SHMEM_CELL, &d, sizeof d);
                p->ihead += 2 * P2P_SHMEM_CELL;
                p2p_shmem_do_cma(peer, p, &rec, &d);
            } else if (type == P2P_SHMEM_REC_ACK) {
                p->ihead += P2P_SHMEM_CELL;
                p2p_shmem_got_ack(peer, p, &rec);
            } else if (fl & P2P_SHMEM_F_WHOLE || rec.hdr.paylen == 0) {
                p2p_shmem_take_whole(peer, p, &rec.hdr);
                recs++;
            } else {                         /* the payload streams after the record */
                p->ihead += P2P_SHMEM_CELL;
                p->ihdr = rec.hdr;
                p->paylen = (size_t)rec.hdr.paylen;
                p->paygot = 0;
                p->rx = kumi_p2p_incoming(peer, &p->ihdr);
                if (p->rx) p->rx->got = 0;
                p->in_msg = 1;
                /* the state switch: now and then a streamed payload's copies
                 * out are timed (a lone message's: a whole one is taken
                 * while both ranks copy a window, at 3.5-9 x in the fast
                 * state, or goes through the unexpected queue's buffers) */
                p->swtime = p2p_shmem_sw_ref > 0 && p->rx && p->rx->dst && p->rx->cap >= p->paylen &&
                                    p2p_shmem_sw_pick(&p->sw, p->paylen)
                                ? P2P_SHMEM_SW_PIECES
                                : 0;
                p->swacc = 0;
                p->swbytes = 0;
            }
            did = 1;
        }
        if (recs >= P2P_SHMEM_BATCH) break;
        /* free space early for a streaming sender */
        if (p->in_msg && p->ihead - h0 >= p2p_shmem_ringsz / 2) {
            atomic_store_explicit(&p->ictl->head, p->ihead, memory_order_release);
            if (p->seg || p2p_shmem_attach(p, peer) == 0) p2p_shmem_ring_bell(p);
            h0 = p->ihead;
        }
    }
    if (p->ihead != h0) {
        atomic_store_explicit(&p->ictl->head, p->ihead, memory_order_release);
        /* the sender may sleep waiting for space */
        if (p->seg || p2p_shmem_attach(p, peer) == 0) p2p_shmem_ring_bell(p);
    }
    return did;
}

static __attribute__((noinline)) int p2p_shmem_progress_all(void)
{
    int did = 0;
    if (p2p_shmem_in_progress) return 0;
    p2p_shmem_in_progress = 1;
    if (p2p_shmem_pulls_pending()) {                  /* pulls asked for since the last round */
        p2p_shmem_pull_flush();
        did = 1;
    }
    if (p2p_shmem_sleepers == 0 &&
        atomic_load_explicit(&p2p_shmem_seg->sleeping, memory_order_relaxed) != 0) {
        atomic_store_explicit(&p2p_shmem_seg->sleeping, 0, memory_order_relaxed);
        p2p_shmem_drain_bell();
    }
    for (int i = 0; i < p2p_shmem_nlocal; i++) {
        int r = p2p_shmem_local[i];
        struct p2p_shmem_peer *p = &p2p_shmem_peers[r];
        if (p->in_msg || p2p_shmem_rec_ready(p))      /* an idle ring costs one load */
            did |= p2p_shmem_poll_ring(r, p);
        if (p->qhead) did |= p2p_shmem_flush(p);
    }
    p2p_shmem_in_progress = 0;
    return did;
}

/* The SHORT records at the head of p's ring (there is one record at
 * least): taken one after the other with no more than a load of the next
 * cell each, then the head stored once.  Returns how many, or -1 when it
 * stopped at a record that is not SHORT (progress_all() takes it now). */
static __attribute__((noinline)) int p2p_shmem_take_shorts(int peer, struct p2p_shmem_peer *p)
{
    int k = 0, other = 0;
    /* the ring's address, size and key in registers across the upcalls
     * (globals of a shared object cost a load through the GOT each) */
    const char *data = p->idata;
    uint64_t key = p2p_shmem_seg->stampkey, mask = p2p_shmem_ringsz - 1;
    p2p_shmem_in_progress = 1;
    do {
        /* read in place (one line, ours until the head passes it): no copy */
        const struct p2p_shmem_short *c = (const struct p2p_shmem_short *)(const void *)(data + (p->ihead & mask));
        if (!p2p_shmem_is_short(c->type)) {
            other = 1;
            break;
        }
        p2p_shmem_take_short(peer, p, c);
    } while (++k < P2P_SHMEM_BATCH &&
             atomic_load_explicit((const _Atomic uint64_t *)(const void *)(data + (p->ihead & mask)),
                                  memory_order_acquire) == p2p_shmem_stamp(key, p->ihead));
    if (k > 0) {
        atomic_store_explicit(&p->ictl->head, p->ihead, memory_order_release);
        /* the sender may sleep waiting for space */
        if (p->seg || p2p_shmem_attach(p, peer) == 0) p2p_shmem_ring_bell(p);
    }
    p2p_shmem_in_progress = 0;
    return other ? -1 : k;
}

/* The first of the rings from local index i on that has a record at its
 * head or a payload streaming in (p2p_shmem_nlocal: none). */
static inline int p2p_shmem_scan(int i)
{
    int n = p2p_shmem_nlocal;
    const int *local = p2p_shmem_local;
    const struct p2p_shmem_peer *peers = p2p_shmem_peers;
    uint64_t key = p2p_shmem_seg->stampkey, mask = p2p_shmem_ringsz - 1;
    bool ahead = n <= P2P_SHMEM_TOUCH_PEERS;
    for (; i < n; i++) {
        const struct p2p_shmem_peer *p = &peers[local[i]];
        uint64_t h = p->ihead;
        if (__builtin_expect(p->in_msg, 0)) break;
        if (ahead) P2P_SHMEM_TOUCH_NEXT(p->idata, h);
        /* p2p_shmem_rec_ready(), with the key and the ring's size in registers */
        if (atomic_load_explicit((_Atomic uint64_t *)(void *)(p->idata + (h & mask)), memory_order_acquire) ==
            p2p_shmem_stamp(key, h))
            break;
    }
    return i;
}

/* progress() found ring i busy: SHORT records are taken at once, the
 * other rings scanned on; anything else goes to progress_all(). */
static __attribute__((noinline)) int p2p_shmem_progress_from(int i)
{
    int did = 0;
    for (; i < p2p_shmem_nlocal; i = p2p_shmem_scan(i + 1)) {
        int r = p2p_shmem_local[i];
        struct p2p_shmem_peer *p = &p2p_shmem_peers[r];
        if (p->in_msg) return p2p_shmem_progress_all() | did;
        /* taken (1 or more), or a record there that progress_all() takes */
        if (p2p_shmem_take_shorts(r, p) < 0 || p2p_shmem_nqueued) return p2p_shmem_progress_all() | 1;
        did = 1;
    }
    return did;
}

/* Polled at every round of every wait.  The common round finds nothing:
 * nothing queued or waiting for an ACK (nqueued), nobody rang, no record at
 * the head of any ring; that costs a load per ring and no call.  The next
 * common one finds SHORT records (small eager messages), taken at once. */
int p2p_shmem_progress(void)
{
    struct p2p_shmem_seghdr *seg = p2p_shmem_seg;
    if (__builtin_expect(!seg || p2p_shmem_in_progress, 0)) return 0;
    if (__builtin_expect(p2p_shmem_nqueued != 0 ||
                         atomic_load_explicit(&seg->sleeping, memory_order_relaxed) != 0, 0))
        return p2p_shmem_progress_all();
    int i = p2p_shmem_scan(0);
    if (__builtin_expect(i == p2p_shmem_nlocal, 1)) return 0;
    return p2p_shmem_progress_from(i);
}

/* Would progress() find something to do right now? */
int p2p_shmem_pending(void)
{
    if (p2p_shmem_pulls_pending()) return 1;
    for (int i = 0; i < p2p_shmem_nlocal; i++) {
        struct p2p_shmem_peer *p = &p2p_shmem_peers[p2p_shmem_local[i]];
        if (p->in_msg ? atomic_load_explicit(&p->ictl->tail, memory_order_acquire) > p->ihead
                      : p2p_shmem_rec_ready(p))
            return 1;
        if (p->qhead && p->seg &&
            atomic_load_explicit(&p->octl->head, memory_order_acquire) != p->ohead)
            return 1;
    }
    return 0;
}

int p2p_shmem_busy(void)
{
    return p2p_shmem_nqueued > 0;
}
