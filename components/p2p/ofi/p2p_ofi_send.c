/* p2p/ofi sending: operation contexts, posting with fi_inject or
 * fi_sendmsg (header and payload as two iovecs), per-peer queues of what
 * the provider refused, RMA-marked rendezvous sends that wait for their
 * FIN, and the FIN itself. */
#include "p2p_ofi.h"

static struct ofi_tx *ofi_tx_get(void)
{
    struct ofi_tx *t = ofi_txfree;
    if (t) ofi_txfree = t->next;
    else t = malloc(sizeof *t);
    if (!t) return NULL;
    memset(t, 0, offsetof(struct ofi_tx, wire));
    t->c.kind = OFI_C_TX;
    return t;
}

static void ofi_fin_unlink(struct ofi_tx *t)
{
    if (!t->infin) return;
    if (t->fprev) t->fprev->fnext = t->fnext;
    else ofi_finwait = t->fnext;
    if (t->fnext) t->fnext->fprev = t->fprev;
    t->infin = 0;
}

void ofi_tx_done(struct ofi_tx *t)
{
    struct kumi_sendop *op = t->op;
    ofi_fin_unlink(t);
    if (t->mr) ofi_mr_release(t->mr);
    t->next = ofi_txfree;
    ofi_txfree = t;
    if (op) {
        ofi_nqueued--;
        op->done(op);
    }
}

void ofi_tx_event(struct ofi_tx *t)
{
    if (--t->pending <= 0) ofi_tx_done(t);
}

void ofi_lost(int peer, const char *what, int rc)
{
    struct ofi_peer *p = &ofi_peers[peer];
    if (p->lost_warned) return;
    p->lost_warned = 1;
    kumi_warn("p2p/ofi: %s to or from rank %d failed (%s): the rank is gone or unreachable", what, peer,
              ofi_err(rc));
}

/* Hand t to the provider.  0: accepted (t may be gone), -FI_EAGAIN: try
 * later, other: failed (t is gone). */
static ssize_t ofi_post_tx(struct ofi_tx *t)
{
    struct ofi_peer *p = &ofi_peers[t->peer];
    const struct kumi_sendop *op = t->op;
    size_t plen = (op && t->pre.type == OFI_T_MSG) ? (size_t)op->hdr.paylen : 0;
    ssize_t rc;
    if (t->wlen + plen <= ofi_inject) {
        char buf[sizeof t->wire + 4096];
        if (t->wlen + plen <= sizeof buf) {
            memcpy(buf, t->wire, t->wlen);
            if (plen) memcpy(buf + t->wlen, op->payload, plen);
            rc = fi_inject(ofi_ep, buf, t->wlen + plen, p->addr);
            if (rc == 0) ofi_tx_event(t);    /* no completion comes for an inject */
            goto out;
        }
    }
    struct iovec iov[2] = { { t->wire, t->wlen }, { plen ? (void *)op->payload : NULL, plen } };
    struct fi_msg msg = { .msg_iov = iov, .iov_count = plen ? 2 : 1, .addr = p->addr, .context = &t->c };
    rc = fi_sendmsg(ofi_ep, &msg, FI_COMPLETION);
out:
    if (rc && rc != -FI_EAGAIN) {
        ofi_lost(t->peer, "a send", (int)rc);
        ofi_tx_done(t);                      /* the job ends: do not hold the caller */
    }
    return rc;
}

/* Queue t behind what waits for the same peer (order), and try to post. */
static void ofi_enqueue(struct ofi_tx *t)
{
    struct ofi_peer *p = &ofi_peers[t->peer];
    if (!p->qhead && ofi_post_tx(t) != -FI_EAGAIN) return;
    t->next = NULL;
    if (p->qtail) p->qtail->next = t;
    else p->qhead = t;
    p->qtail = t;
    ofi_have_peers_queued = 1;
}

/* Post what waits per peer, in order.  Returns 1 if anything went out. */
int ofi_flush_queues(void)
{
    int did = 0, left = 0;
    for (int r = 0; r < ofi_n; r++) {
        struct ofi_peer *p = &ofi_peers[r];
        while (p->qhead) {
            struct ofi_tx *t = p->qhead;
            struct ofi_tx *nx = t->next;
            if (ofi_post_tx(t) == -FI_EAGAIN) break;
            did = 1;
            p->qhead = nx;
            if (!nx) p->qtail = NULL;
        }
        if (p->qhead) left = 1;
    }
    ofi_have_peers_queued = left;
    return did;
}

static void ofi_fill_pre(struct ofi_tx *t, int type, int peer)
{
    struct ofi_peer *p = &ofi_peers[peer];
    t->peer = peer;
    t->pre.type = (uint8_t)type;
    t->pre.magic = OFI_MAGIC;
    t->pre.src = (uint32_t)ofi_me;
    t->pre.seq = p->sseq++;
    t->pending = 1;                          /* the send completion (or the inject) */
}

int p2p_ofi_send(int peer, struct kumi_sendop *op)
{
    static uint64_t cookies;
    if (!p2p_ofi_reaches(peer))
        return kumi_error(MPI_ERR_OTHER, "p2p/ofi: rank %d is not reachable over %s", peer, ofi_provname);
    struct ofi_tx *t = ofi_tx_get();
    if (!t) return kumi_error(MPI_ERR_NO_MEM, "p2p/ofi: out of memory for a send to rank %d", peer);
    const size_t hl = sizeof(struct ofi_pre) + sizeof(struct kumi_hdr);
    t->op = op;
    /* the payload of a pulled RTS, or of a DATA message: the receiver reads it */
    size_t rlen = op->hdr.kind == KUMI_HDR_DATA ? (size_t)op->hdr.paylen
                  : op->hdr.kind == KUMI_HDR_RTS && (op->hdr.flags & KUMI_HDR_F_RGET) ? (size_t)op->hdr.len : 0;
    if (rlen > 0 && op->payload) {
        int err = 0;
        struct ofi_mr *m = ofi_mr_get(op->payload, rlen, &err);
        if (!m) {
            t->op = NULL;
            ofi_tx_done(t);
            return kumi_error(err == -FI_ENOMEM ? MPI_ERR_NO_MEM : MPI_ERR_OTHER,
                              "p2p/ofi: cannot register %zu bytes for rank %d to read: %s", rlen, peer,
                              ofi_err(err));
        }
        struct ofi_rmadesc d = {
            .addr = ofi_virt_addr ? (uint64_t)(uintptr_t)op->payload
                                  : (uint64_t)((const char *)op->payload - m->base),
            .key = fi_mr_key(m->mr),    /* the same after a checkpoint (registered again with it) */
            .cookie = ++cookies,
        };
        t->cookie = d.cookie;
        ofi_fill_pre(t, OFI_T_RMA, peer);
        memcpy(t->wire + sizeof(struct ofi_pre), &op->hdr, sizeof op->hdr);
        memcpy(t->wire + hl, &d, sizeof d);
        t->wlen = hl + sizeof d;
        t->mr = m;
        t->pending++;                        /* and the FIN */
        t->infin = 1;                        /* the FIN finds it by its cookie */
        t->fprev = NULL;
        t->fnext = ofi_finwait;
        if (ofi_finwait) ofi_finwait->fprev = t;
        ofi_finwait = t;
    } else {
        ofi_fill_pre(t, OFI_T_MSG, peer);
        memcpy(t->wire + sizeof(struct ofi_pre), &op->hdr, sizeof op->hdr);
        t->wlen = hl;
    }
    ofi_nqueued++;
    ofi_enqueue(t);
    return MPI_SUCCESS;
}

static void ofi_send_ctl(int peer, int type, uint64_t cookie)
{
    struct ofi_tx *t = ofi_tx_get();
    if (!t) {
        kumi_warn("p2p/ofi: out of memory: a rendezvous with rank %d cannot be finished", peer);
        return;
    }
    ofi_fill_pre(t, type, peer);
    memcpy(t->wire + sizeof(struct ofi_pre), &cookie, sizeof cookie);
    t->wlen = sizeof(struct ofi_pre) + sizeof cookie;
    ofi_enqueue(t);
}

void ofi_send_fin(int peer, uint64_t cookie)
{
    ofi_send_ctl(peer, OFI_T_FIN, cookie);
}

/* After a checkpoint: "did you read cookie's payload?" (p2p_ofi_ckpt.c) */
void ofi_send_ask(int peer, uint64_t cookie)
{
    ofi_send_ctl(peer, OFI_T_ASK, cookie);
}

void ofi_got_fin(int peer, uint64_t cookie)
{
    for (struct ofi_tx *t = ofi_finwait; t; t = t->fnext) {
        if (t->cookie == cookie && t->peer == peer) {
            ofi_fin_unlink(t);
            ofi_tx_event(t);
            return;
        }
    }
    if (ofi_asked)                           /* answered twice after a checkpoint (p2p_ofi_ckpt.c) */
        kumi_log(2, "p2p/ofi: FIN from rank %d for rendezvous %llu, finished already", peer,
                 (unsigned long long)cookie);
    else
        kumi_warn("p2p/ofi: FIN from rank %d for an unknown rendezvous", peer);
}
