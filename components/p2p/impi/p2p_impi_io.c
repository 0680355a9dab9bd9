/* p2p/impi: the IMPI packet protocol on the host connections (sheet §3, §4).
 *
 * The request layer's messages map onto IMPI packets (eager_limit is the
 * agreed IMPI_Pk_maxlen, KUMI_P2P_CAP_NOBUDGET keeps the layer from holding
 * back a long message's first bytes, KUMI_P2P_CAP_EXTERNAL32 makes every
 * payload external32):
 *
 *   request layer (this rank sends)          IMPI packet
 *   EAGER (len <= maxlen)                    DATA, srqid = the send request
 *   EAGER_SYNC                               DATASYNC (short)
 *   RTS with the first maxlen bytes          DATASYNC, pk_len = maxlen < pk_msglen (long)
 *   DATA (the rest, after the CTS)           DATA packets of <= maxlen bytes, drqid = the SYNCACK's
 *   SYNC_ACK / CTS (a receive matched)       SYNCACK, srqid = the message's; CTS: drqid = our rreq
 *   CANCEL_REQ / CANCEL_ACK                  CANCEL / CANCELYES or CANCELNO, srqid echoed
 *   CREDIT                                   nothing (IMPI has its own flow control)
 *   (flow control)                           PROTOACK every ackmark packets read from a proc
 *   (MPI_Finalize)                           FINI to the host's agent (it sends FINI to every host)
 *
 * and back: a SYNCACK whose srqid is a long message we sent is a CTS, else a
 * SYNC_ACK; a DATA packet with a drqid of ours continues a long message (the
 * first such packet goes up as the DATA header of the whole rest).  The
 * envelope: pk_cid = the context id (Kumi's context pair <-> IMPI's cid:
 * kumi/impi.h), pk_lsrank = the sender's rank in the
 * communicator (the sheet's "comm-local source rank"; LAM sends the world
 * rank there, so a LAM peer would match only on MPI_COMM_WORLD), pk_tag,
 * pk_seqnum = the request layer's per-pair sequence number (cancel finds
 * the message by it and srqid).
 *
 * Flow control (sheet §4.6): per ordered proc pair, every packet but
 * PROTOACK and FINI counts; a packet to a proc with hiwater packets
 * unacknowledged waits (and with it the rest of that host's queue); after
 * ackmark packets read from a proc a PROTOACK goes back ahead of the queue.
 * Reading never stops, so two agents cannot block each other. */
#include "p2p_impi.h"
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define IBUF_SIZE (256 * 1024)

static void encode(struct p2p_impi_opkt *o, uint32_t type, int peer, const struct kumi_hdr *h, uint32_t len,
                   uint64_t srqid, uint64_t drqid)
{
    struct kumi_impi_packet pk;
    memset(&pk, 0, sizeof pk);
    pk.type = type;
    pk.len = len;
    memcpy(pk.src_host, p2p_impi_job.procs[p2p_impi_me].id, 16);
    pk.src_pid = p2p_impi_job.procs[p2p_impi_me].pid;
    memcpy(pk.dest_host, p2p_impi_job.procs[peer].id, 16);
    pk.dest_pid = p2p_impi_job.procs[peer].pid;
    pk.srqid = srqid;
    pk.drqid = drqid;
    if (h) {
        pk.msglen = h->len;
        pk.lsrank = h->src;
        pk.tag = h->tag;
        pk.cid = kumi_impi_cid_of_ctx(h->ctx);      /* kumi/impi.h: world 0/1, IMPI's, Kumi's private */
        pk.seqnum = h->seq;
    } else {
        pk.lsrank = pk.tag = -1;
    }
    kumi_impi_packet_encode(&pk, o->hdr);
}

static struct p2p_impi_opkt *new_pkt(int dest)
{
    struct p2p_impi_opkt *o = calloc(1, sizeof *o);
    if (o) o->dest = dest;
    return o;
}

static void enqueue(struct p2p_impi_host *h, struct p2p_impi_opkt *o)
{
    o->next = NULL;
    if (h->qtail) h->qtail->next = o;
    else h->qhead = o;
    h->qtail = o;
    p2p_impi_nqueued++;
}

/* A PROTOACK goes before everything not yet started (sheet §4.6: LAM puts it
 * at the head of the queue). */
static void enqueue_front(struct p2p_impi_host *h, struct p2p_impi_opkt *o)
{
    struct p2p_impi_opkt *q = h->qhead;
    if (q && q->off > 0) {                 /* a packet half written stays first */
        o->next = q->next;
        q->next = o;
        if (h->qtail == q) h->qtail = o;
    } else {
        o->next = q;
        h->qhead = o;
        if (!h->qtail) h->qtail = o;
    }
    p2p_impi_nqueued++;
}

static struct p2p_impi_lrecv *lrecv_by_srqid(int peer, uint64_t srqid)
{
    for (struct p2p_impi_lrecv *l = p2p_impi_lrecvs; l; l = l->next)
        if (l->peer == peer && l->srqid == srqid) return l;
    return NULL;
}

static struct p2p_impi_lrecv *lrecv_by_drqid(int peer, uint64_t drqid)
{
    for (struct p2p_impi_lrecv *l = p2p_impi_lrecvs; l; l = l->next)
        if (l->peer == peer && l->drqid == drqid && drqid) return l;
    return NULL;
}

static void lrecv_remove(struct p2p_impi_lrecv *x)
{
    for (struct p2p_impi_lrecv **pp = &p2p_impi_lrecvs; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            free(x);
            return;
        }
}

/* Take the long send srqid to peer off the awaited list: 1 if it was there. */
static int lsend_take(int peer, uint64_t srqid)
{
    for (struct p2p_impi_lsend **pp = &p2p_impi_lsends; *pp; pp = &(*pp)->next)
        if ((*pp)->peer == peer && (*pp)->srqid == srqid) {
            struct p2p_impi_lsend *x = *pp;
            *pp = x->next;
            free(x);
            return 1;
        }
    return 0;
}

/* ------------------------------------------------------------ sending */
int p2p_impi_send(int peer, struct kumi_sendop *op)
{
    struct p2p_impi_host *m = p2p_impi_host_of(peer), *h = m ? p2p_impi_out_of(peer) : NULL;
    const struct kumi_hdr *kh = &op->hdr;
    if (!m || h->fd < 0 || m->client == p2p_impi_myclient)
        return kumi_error(MPI_ERR_OTHER, "p2p/impi: no connection to rank %d", peer);
    if (p2p_impi_chan.fini_sent)
        return kumi_error(MPI_ERR_OTHER, "p2p/impi: a message to rank %d after this rank's FINI", peer);
    size_t maxlen = (size_t)p2p_impi_job.pk_maxlen;
    struct p2p_impi_opkt *o = NULL;
    switch (kh->kind) {
    case KUMI_HDR_EAGER:
    case KUMI_HDR_EAGER_SYNC:
    case KUMI_HDR_RTS:
        if (kh->paylen > maxlen || (kh->kind != KUMI_HDR_RTS && kh->paylen != kh->len) ||
            (kh->kind == KUMI_HDR_RTS && (kh->paylen == 0 || kh->paylen >= kh->len || (kh->flags & KUMI_HDR_F_RGET))))
            return kumi_error(MPI_ERR_INTERN, "p2p/impi: a message of %llu bytes (%llu in its first packet) "
                              "does not fit the IMPI packets of %zu bytes", (unsigned long long)kh->len,
                              (unsigned long long)kh->paylen, maxlen);
        if (!(o = new_pkt(peer))) goto nomem;
        if (kh->kind == KUMI_HDR_RTS) {
            struct p2p_impi_lsend *l = malloc(sizeof *l);
            if (!l) { free(o); goto nomem; }
            l->peer = peer;
            l->srqid = kh->sreq;
            l->next = p2p_impi_lsends;
            p2p_impi_lsends = l;
        }
        encode(o, kh->kind == KUMI_HDR_EAGER ? KUMI_IMPI_PK_DATA : KUMI_IMPI_PK_DATASYNC, peer, kh,
               (uint32_t)kh->paylen, kh->sreq, 0);
        o->data = op->payload;
        o->len = (size_t)kh->paylen;
        o->op = op;
        enqueue(h, o);
        break;
    case KUMI_HDR_DATA: {                  /* the rest of a long message, in packets */
        size_t left = (size_t)kh->paylen, off = 0;
        const char *p = op->payload;
        if (left == 0) { op->done(op); return MPI_SUCCESS; }
        while (left > 0) {
            size_t n = left < maxlen ? left : maxlen;
            if (!(o = new_pkt(peer))) goto nomem;        /* (packets already queued go out) */
            encode(o, KUMI_IMPI_PK_DATA, peer, kh, (uint32_t)n, kh->sreq, kh->rreq);
            o->data = p + off;
            o->len = n;
            off += n;
            left -= n;
            if (!left) o->op = op;
            enqueue(h, o);
        }
        break;
    }
    case KUMI_HDR_SYNC_ACK:
    case KUMI_HDR_CTS:
        if (!(o = new_pkt(peer))) goto nomem;
        encode(o, KUMI_IMPI_PK_SYNCACK, peer, kh, 0, kh->sreq, kh->kind == KUMI_HDR_CTS ? kh->rreq : 0);
        if (kh->kind == KUMI_HDR_CTS) {
            struct p2p_impi_lrecv *l = lrecv_by_srqid(peer, kh->sreq);
            if (l) l->drqid = kh->rreq;
        }
        enqueue(h, o);
        op->done(op);
        break;
    case KUMI_HDR_CANCEL_REQ:
    case KUMI_HDR_CANCEL_ACK:
        if (!(o = new_pkt(peer))) goto nomem;
        encode(o, kh->kind == KUMI_HDR_CANCEL_REQ ? KUMI_IMPI_PK_CANCEL
                  : (kh->flags & KUMI_HDR_F_CANCELLED) ? KUMI_IMPI_PK_CANCELYES : KUMI_IMPI_PK_CANCELNO,
               peer, kh, 0, kh->sreq, 0);
        if (kh->kind == KUMI_HDR_CANCEL_ACK && (kh->flags & KUMI_HDR_F_CANCELLED)) {
            struct p2p_impi_lrecv *l = lrecv_by_srqid(peer, kh->sreq);
            if (l && !l->rx) lrecv_remove(l);            /* a cancelled long message: no rest comes */
        }
        enqueue(h, o);
        op->done(op);
        break;
    default:                               /* CREDIT (no budget here), anything else: nothing to carry */
        op->done(op);
        return MPI_SUCCESS;
    }
    p2p_impi_host_write(h);
    return MPI_SUCCESS;
nomem:
    return kumi_error(MPI_ERR_NO_MEM, "p2p/impi: out of memory queueing a packet to rank %d", peer);
}

void p2p_impi_queue_fini(struct p2p_impi_host *h)
{
    struct p2p_impi_opkt *o = new_pkt(-1);
    if (!o) return;
    struct kumi_impi_packet pk;
    memset(&pk, 0, sizeof pk);                         /* LAM's FINI: zero host ids, pid -1 (sheet §3.5) */
    pk.type = KUMI_IMPI_PK_FINI;
    pk.src_pid = pk.dest_pid = -1;
    pk.lsrank = pk.tag = -1;
    pk.count = -1;
    kumi_impi_packet_encode(&pk, o->hdr);
    enqueue(h, o);
    h->fini_sent = true;
}

/* A shared host connection: take its lock (a rank that died holding it
 * left a half-written packet, which the job will not survive anyway). */
static void host_lock(struct p2p_impi_host *h)
{
    if (!h->lock || h->locked) return;
    int r = pthread_mutex_lock(h->lock);
    if (r == EOWNERDEAD) pthread_mutex_consistent(h->lock);
    h->locked = true;
}

static void host_unlock(struct p2p_impi_host *h)
{
    if (!h->locked) return;
    pthread_mutex_unlock(h->lock);
    h->locked = false;
}

int p2p_impi_host_write(struct p2p_impi_host *h)
{
    int did = 0;
    while (h->qhead && h->fd >= 0) {
        struct p2p_impi_opkt *o = h->qhead;
        if (!o->started && o->dest >= 0) {
            if (p2p_impi_peers[o->dest].sent >= p2p_impi_job.hiwater) {   /* wait for a PROTOACK */
                if (!o->stalled) p2p_impi_stat_stalls++;
                o->stalled = true;
                break;
            }
            p2p_impi_peers[o->dest].sent++;
            o->started = true;
        }
        host_lock(h);                   /* the other ranks' packets stay whole too */
        struct iovec iov[2];
        int n = 0;
        if (o->off < KUMI_IMPI_PACKET_SIZE) {
            iov[n].iov_base = o->hdr + o->off;
            iov[n++].iov_len = KUMI_IMPI_PACKET_SIZE - o->off;
        }
        size_t doff = o->off > KUMI_IMPI_PACKET_SIZE ? o->off - KUMI_IMPI_PACKET_SIZE : 0;
        if (o->len > doff) {
            iov[n].iov_base = (void *)(o->data + doff);
            iov[n++].iov_len = o->len - doff;
        }
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
        ssize_t w = sendmsg(h->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (h->locked && o->off > 0) {       /* a shared connection: finish the packet now */
                    struct pollfd pf = { .fd = h->fd, .events = POLLOUT };
                    poll(&pf, 1, 100);
                    continue;
                }
                host_unlock(h);
                break;
            }
            host_unlock(h);
            char why[160];
            snprintf(why, sizeof why, "writing to it failed (%s)", strerror(errno));
            p2p_impi_host_failed(h, why);
        }
        o->off += (size_t)w;
        did = 1;
        if (o->off < KUMI_IMPI_PACKET_SIZE + o->len) {
            if (h->locked) continue;                 /* the rest of the packet, under the lock */
            break;                                   /* the socket is full */
        }
        h->qhead = o->next;
        if (!h->qhead) h->qtail = NULL;
        p2p_impi_nqueued--;
        p2p_impi_stat_pk_out++;
        if (o->op) o->op->done(o->op);
        free(o);
    }
    host_unlock(h);
    return did;
}

/* ------------------------------------------------------------ receiving */
static void rx_put(struct kumi_rx *rx, const uint8_t *p, size_t n)
{
    if (!rx) return;
    if (p && rx->got < rx->cap && rx->dst) {           /* (p NULL: read there already) */
        size_t k = rx->cap - rx->got < n ? rx->cap - rx->got : n;
        memcpy(rx->dst + rx->got, p, k);
    }
    rx->got += n;
    if (rx->got >= rx->len) kumi_p2p_rx_done(rx);
}

static void owe_ack(struct p2p_impi_host *h, int peer)
{
    struct p2p_impi_peer *pp = &p2p_impi_peers[peer];
    if (++pp->recvd < p2p_impi_job.ackmark || p2p_impi_chan.fini_sent) return;   /* (nothing after FINI) */
    pp->recvd -= p2p_impi_job.ackmark;
    struct p2p_impi_opkt *o = new_pkt(-1);
    if (!o) { kumi_warn("p2p/impi: out of memory for a PROTOACK to rank %d", peer); return; }
    encode(o, KUMI_IMPI_PK_PROTOACK, peer, NULL, 0, 0, 0);
    (void)h;
    enqueue_front(p2p_impi_out_of(peer), o);
    p2p_impi_stat_acks_out++;
}

static void protocol_error(struct p2p_impi_host *h, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void protocol_error(struct p2p_impi_host *h, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    p2p_impi_host_failed(h, why);
}

/* A packet header from host h: dispatch; set up where its payload goes. */
static void got_header(struct p2p_impi_host *h, const struct kumi_impi_packet *pk)
{
    struct kumi_hdr kh;
    if (pk->type == KUMI_IMPI_PK_FINI) {
        h->fini_recv = true;
        return;
    }
    int peer = kumi_impi_job_find_proc(&p2p_impi_job, pk->src_host, pk->src_pid);
    if (peer < 0 || p2p_impi_hosts[kumi_impi_job_proc_host(&p2p_impi_job, peer)].client == p2p_impi_myclient)
        protocol_error(h, "a %s packet from proc (pid %lld) that is no proc of another client",
                       kumi_impi_packet_type_name(pk->type), (long long)pk->src_pid);
    if (kumi_impi_job_find_proc(&p2p_impi_job, pk->dest_host, pk->dest_pid) != p2p_impi_me)
        protocol_error(h, "a %s packet for another proc (pid %lld)", kumi_impi_packet_type_name(pk->type),
                       (long long)pk->dest_pid);
    p2p_impi_stat_pk_in++;
    if (pk->type == KUMI_IMPI_PK_PROTOACK) {
        struct p2p_impi_peer *pp = &p2p_impi_peers[peer];
        pp->sent = pp->sent > p2p_impi_job.ackmark ? pp->sent - p2p_impi_job.ackmark : 0;
        p2p_impi_stat_acks_in++;
        return;
    }
    owe_ack(h, peer);
    memset(&kh, 0, sizeof kh);
    if (kumi_impi_ctx_of_cid(pk->cid, &kh.ctx) != 0)
        protocol_error(h, "a %s packet with context id %llu, above every IMPI context id Kumi can hold (%u)",
                       kumi_impi_packet_type_name(pk->type), (unsigned long long)pk->cid, KUMI_IMPI_CID_KUMI_LIMIT);
    kh.src = pk->lsrank;
    kh.tag = pk->tag;
    kh.seq = (uint32_t)pk->seqnum;
    kh.len = pk->msglen;
    kh.sreq = pk->srqid;
    h->pk = *pk;
    h->pk_peer = peer;
    h->pay_left = kumi_impi_packet_payload(pk);
    h->rx = NULL;
    h->lr = NULL;
    switch (pk->type) {
    case KUMI_IMPI_PK_DATA:
    case KUMI_IMPI_PK_DATASYNC: {
        struct p2p_impi_lrecv *l = pk->type == KUMI_IMPI_PK_DATA ? lrecv_by_drqid(peer, pk->drqid) : NULL;
        if (l) {                               /* the rest of a long message */
            if (!l->rx) {
                struct kumi_hdr d = l->hdr;
                d.kind = KUMI_HDR_DATA;
                d.paylen = l->msglen - l->firstlen;
                d.rreq = l->drqid;
                l->rx = kumi_p2p_incoming(peer, &d);
                if (!l->rx) { lrecv_remove(l); l = NULL; }
            }
            h->lr = l;
            h->rx = l ? l->rx : NULL;
            break;
        }
        if (pk->len == pk->msglen) {           /* a short message */
            kh.kind = pk->type == KUMI_IMPI_PK_DATA ? KUMI_HDR_EAGER : KUMI_HDR_EAGER_SYNC;
            kh.paylen = pk->len;
        } else if (pk->type == KUMI_IMPI_PK_DATASYNC && pk->len < pk->msglen && pk->len > 0) {
            struct p2p_impi_lrecv *n = calloc(1, sizeof *n);      /* a long message's first packet */
            if (!n) protocol_error(h, "out of memory for a long message of %llu bytes",
                                   (unsigned long long)pk->msglen);
            kh.kind = KUMI_HDR_RTS;
            kh.paylen = pk->len;
            n->peer = peer;
            n->srqid = pk->srqid;
            n->msglen = pk->msglen;
            n->firstlen = pk->len;
            n->hdr = kh;
            n->next = p2p_impi_lrecvs;
            p2p_impi_lrecvs = n;
        } else {
            protocol_error(h, "a %s packet of %u bytes of a message of %llu bytes, drqid %llu unknown",
                           kumi_impi_packet_type_name(pk->type), pk->len, (unsigned long long)pk->msglen,
                           (unsigned long long)pk->drqid);
        }
        h->rx = kumi_p2p_incoming(peer, &kh);
        if (h->pay_left == 0 && h->rx) kumi_p2p_rx_done(h->rx);   /* nothing to read: done now */
        break;
    }
    case KUMI_IMPI_PK_SYNCACK:
        if (lsend_take(peer, pk->srqid)) {
            kh.kind = KUMI_HDR_CTS;
            kh.rreq = pk->drqid;
        } else {
            kh.kind = KUMI_HDR_SYNC_ACK;
        }
        kumi_p2p_incoming(peer, &kh);
        break;
    case KUMI_IMPI_PK_CANCEL:
        kh.kind = KUMI_HDR_CANCEL_REQ;
        kumi_p2p_incoming(peer, &kh);
        break;
    case KUMI_IMPI_PK_CANCELYES:
    case KUMI_IMPI_PK_CANCELNO:
        kh.kind = KUMI_HDR_CANCEL_ACK;
        if (pk->type == KUMI_IMPI_PK_CANCELYES) {
            kh.flags = KUMI_HDR_F_CANCELLED;
            lsend_take(peer, pk->srqid);       /* a cancelled long send: no SYNCACK comes */
        }
        kumi_p2p_incoming(peer, &kh);
        break;
    }
}

/* Bytes of the current packet's payload arrived (p NULL: read straight
 * into the receive's buffer already, direct_rx). */
static void got_payload(struct p2p_impi_host *h, const uint8_t *p, size_t n)
{
    h->pay_left -= (uint32_t)n;
    if (h->lr) {
        struct p2p_impi_lrecv *l = h->lr;
        bool last = l->rx->got + n >= l->rx->len;   /* (after rx_done the request may be gone) */
        rx_put(l->rx, p, n);
        if (last) {                            /* the whole message is in */
            h->lr = NULL;
            h->rx = NULL;
            lrecv_remove(l);
        }
        return;
    }
    rx_put(h->rx, p, n);
}

/* The receive whose buffer the current packet's payload can be read
 * straight into (as p2p/tcp does: no copy through ibuf), or NULL: a payload
 * under way of at least DIRECT_MIN bytes, nothing of it staged, a receive
 * buffer with room left (the bytes of a truncated message past it go
 * through ibuf and are dropped there).  Such a read takes the next packet's
 * header too, and no more, so that a stream of large packets goes header
 * (ibuf), payload (its buffer), header...; a read into ibuf takes at most
 * STAGE_READ bytes (headers and small payloads, copied from there): it
 * completes a partial header only, so the payload after it is read
 * directly. */
#define DIRECT_MIN 4096
#define STAGE_READ (16 * 1024)
static struct kumi_rx *direct_rx(const struct p2p_impi_host *h)
{
    if (!h->have_hdr || h->ilen != 0 || h->pay_left < DIRECT_MIN) return NULL;
    struct kumi_rx *rx = h->rx;          /* (a long message's rest: h->lr->rx) */
    return rx && rx->dst && rx->got < rx->cap ? rx : NULL;
}

int p2p_impi_host_read(struct p2p_impi_host *h)
{
    int did = 0;
    if (!h->ibuf && !(h->ibuf = malloc(IBUF_SIZE))) return 0;
    for (int rounds = 0; rounds < 16 && h->fd >= 0; rounds++) {
        if (h->ioff == h->ilen) h->ioff = h->ilen = 0;
        if (h->ioff > 0 && h->ilen - h->ioff < KUMI_IMPI_PACKET_SIZE) {    /* keep a partial header whole */
            memmove(h->ibuf, h->ibuf + h->ioff, h->ilen - h->ioff);
            h->ilen -= h->ioff;
            h->ioff = 0;
        }
        struct kumi_rx *drx = direct_rx(h);
        size_t dlen = 0;
        ssize_t r;
        if (drx) {                       /* the payload into the receive's buffer, what follows into ibuf */
            size_t room = drx->cap - drx->got;
            dlen = h->pay_left < room ? h->pay_left : room;
            struct iovec iov[2] = { { drx->dst + drx->got, dlen }, { h->ibuf, KUMI_IMPI_PACKET_SIZE } };
            struct msghdr mh = { .msg_iov = iov, .msg_iovlen = dlen == h->pay_left ? 2 : 1 };
            r = recvmsg(h->fd, &mh, MSG_DONTWAIT);
        } else {
            size_t want = IBUF_SIZE - h->ilen, staged = h->ilen - h->ioff;
            if (!h->have_hdr && staged > 0 && staged < KUMI_IMPI_PACKET_SIZE)
                want = KUMI_IMPI_PACKET_SIZE - staged;          /* the rest of the header, no payload */
            else if (want > STAGE_READ)
                want = STAGE_READ;
            r = recv(h->fd, h->ibuf + h->ilen, want, MSG_DONTWAIT);
        }
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            char why[160];
            snprintf(why, sizeof why, "reading from it failed (%s)", strerror(errno));
            p2p_impi_host_failed(h, why);
        }
        if (r == 0) {
            h->eof = true;
            if (!h->fini_recv || h->have_hdr) p2p_impi_host_failed(h, "it closed its connection without FINI");
            return -1;
        }
        did = 1;
        if (drx) {
            size_t k = (size_t)r < dlen ? (size_t)r : dlen;
            got_payload(h, NULL, k);     /* (may complete the receive: drx is not touched after) */
            if (h->pay_left == 0) h->have_hdr = false;
            h->ilen = (size_t)r - k;     /* the next packets' bytes, in ibuf */
        } else {
            h->ilen += (size_t)r;
        }
        while (h->ioff < h->ilen) {
            size_t avail = h->ilen - h->ioff;
            if (!h->have_hdr) {
                struct kumi_impi_packet pk;
                char err[200];
                int k = kumi_impi_packet_parse(h->ibuf + h->ioff, avail, (uint32_t)p2p_impi_job.pk_maxlen, &pk, err,
                                               sizeof err);
                if (k == KUMI_IMPI_MORE) break;
                if (k < 0) protocol_error(h, "a bad packet header: %s", err);
                h->ioff += KUMI_IMPI_PACKET_SIZE;
                if (h->fini_recv) protocol_error(h, "a %s packet after its FINI", kumi_impi_packet_type_name(pk.type));
                got_header(h, &pk);
                h->have_hdr = h->pay_left > 0;
                continue;
            }
            size_t n = avail < h->pay_left ? avail : h->pay_left;
            got_payload(h, h->ibuf + h->ioff, n);
            h->ioff += n;
            if (h->pay_left == 0) h->have_hdr = false;
        }
    }
    return did;
}
