/* p2p/ofi receiving: posted receive buffers, per-peer sequence order,
 * delivery to the request layer, the receiver-pulled rendezvous (fi_read in
 * chunks, then FIN), and completion-queue errors. */
#include "p2p_ofi.h"

struct ofi_read *ofi_reads;

static void ofi_read_link(struct ofi_read *r)
{
    r->aprev = NULL;
    r->anext = ofi_reads;
    if (ofi_reads) ofi_reads->aprev = r;
    ofi_reads = r;
}

void ofi_read_unlink(struct ofi_read *r)
{
    if (r->aprev) r->aprev->anext = r->anext;
    else if (ofi_reads == r) ofi_reads = r->anext;
    if (r->anext) r->anext->aprev = r->aprev;
    r->aprev = r->anext = NULL;
}

static void ofi_read_finish(struct ofi_read *r)
{
    struct kumi_rx *rx = r->rx;
    if (rx) {
        rx->got = rx->len;
        kumi_p2p_rx_done(rx);
    }
    if (rx && ofi_drop_fin > 0) {            /* tests: lost (p2p_ofi_drop_fin) */
        ofi_drop_fin--;
        kumi_log(1, "p2p/ofi: FIN of rendezvous %llu to rank %d not sent (p2p_ofi_drop_fin)",
                 (unsigned long long)r->d.cookie, r->peer);
    } else {
        ofi_send_fin(r->peer, r->d.cookie);
    }
    ofi_read_unlink(r);
    r->magic = 0;
    free(r);
}

/* Issue what r still needs; 1 if it must wait on ofi_rdq (provider busy). */
static int ofi_issue_reads(struct ofi_read *r)
{
    struct ofi_peer *p = &ofi_peers[r->peer];
    while (r->issued < r->want && !r->failed && r->outstanding < OFI_READ_WINDOW) {
        size_t n = r->want - r->issued;
        if (n > ofi_read_chunk) n = ofi_read_chunk;
        ssize_t rc = fi_read(ofi_ep, r->rx->dst + r->issued, n, NULL, p->addr, r->d.addr + r->issued, r->d.key,
                             &r->c);
        if (rc == -FI_EAGAIN) return 1;
        if (rc) {
            ofi_lost(r->peer, "a rendezvous read", (int)rc);
            r->failed = 1;
            break;
        }
        r->issued += n;
        r->outstanding++;
    }
    return 0;
}

/* r is not queued: finish it if nothing is in flight and nothing is left. */
static void ofi_read_check(struct ofi_read *r)
{
    if (r->outstanding == 0 && (r->failed || r->issued == r->want)) ofi_read_finish(r);
}

static void ofi_read_start(struct ofi_read *r)
{
    if (ofi_issue_reads(r)) {
        r->queued = 1;
        r->next = ofi_rdq;
        ofi_rdq = r;
    } else {
        ofi_read_check(r);
    }
}

void ofi_read_event(struct ofi_read *r, int failed)
{
    r->outstanding--;
    if (failed) r->failed = 1;
    if (r->queued) return;
    if (!r->failed && r->issued < r->want) ofi_read_start(r);     /* the next pieces */
    else ofi_read_check(r);
}

/* Issue the reads the provider refused before.  Returns 1 if any went out. */
int ofi_flush_reads(void)
{
    struct ofi_read *list = ofi_rdq;
    int did = 0;
    ofi_rdq = NULL;
    while (list) {
        struct ofi_read *r = list;
        size_t before = r->issued;
        list = r->next;
        r->queued = 0;
        if (!r->failed && ofi_issue_reads(r)) {
            r->queued = 1;
            r->next = ofi_rdq;
            ofi_rdq = r;
            if (r->issued != before) did = 1;
        } else {
            did = 1;
            ofi_read_check(r);               /* may free r */
        }
    }
    return did;
}

static void ofi_handle_rma(int peer, const struct kumi_hdr *hdr, const struct ofi_rmadesc *d)
{
    if (hdr->kind == KUMI_HDR_RTS) {         /* pulled later, when a receive matches */
        struct ofi_read *r = calloc(1, sizeof *r);
        struct kumi_hdr h = *hdr;
        if (!r) {
            kumi_warn("p2p/ofi: out of memory for a rendezvous from rank %d; dropped", peer);
            ofi_send_fin(peer, d->cookie);
            return;
        }
        r->c.kind = OFI_C_READ;
        r->magic = OFI_READ_MAGIC;
        r->peer = peer;
        r->d = *d;
        r->len = (size_t)hdr->len;
        ofi_read_link(r);
        h.rreq = (uint64_t)(uintptr_t)r;
        kumi_p2p_incoming(peer, &h);
        return;
    }
    struct kumi_rx *rx = kumi_p2p_incoming(peer, hdr);
    struct ofi_read *r = calloc(1, sizeof *r);
    if (!r) {
        kumi_warn("p2p/ofi: out of memory for a rendezvous read from rank %d", peer);
        if (rx) {
            rx->got = rx->len;
            kumi_p2p_rx_done(rx);
        }
        ofi_send_fin(peer, d->cookie);
        return;
    }
    size_t len = (size_t)hdr->paylen;
    r->c.kind = OFI_C_READ;
    r->magic = OFI_READ_MAGIC;
    r->peer = peer;
    r->rx = rx;
    r->d = *d;
    r->len = len;
    r->want = rx && rx->dst ? (len < rx->cap ? len : rx->cap) : 0;
    if (rx) rx->got = 0;
    ofi_read_link(r);
    ofi_read_start(r);
}

int p2p_ofi_rget(int peer, size_t len)
{
    return ofi_rget_param && len > 0 && p2p_ofi_reaches(peer);
}

void p2p_ofi_pull(int peer, uint64_t handle, struct kumi_rx *rx)
{
    struct ofi_read *r = (struct ofi_read *)(uintptr_t)handle;
    if (!r || r->magic != OFI_READ_MAGIC || r->peer != peer || r->rx) {
        kumi_warn("p2p/ofi: pull from rank %d of an unknown rendezvous", peer);
        return;
    }
    if (!rx) {                               /* cancelled: the sender may go on */
        ofi_send_fin(peer, r->d.cookie);
        ofi_read_unlink(r);
        r->magic = 0;
        free(r);
        return;
    }
    r->rx = rx;
    r->want = rx->dst ? (r->len < rx->cap ? r->len : rx->cap) : 0;
    rx->got = 0;
    ofi_read_start(r);
}

/* One in-order message from peer. */
static void ofi_deliver(int peer, const char *m, size_t len)
{
    const struct ofi_pre *pre = (const struct ofi_pre *)m;
    const size_t hl = sizeof(struct ofi_pre) + sizeof(struct kumi_hdr);
    if (pre->type == OFI_T_FIN || pre->type == OFI_T_ASK) {
        uint64_t c;
        memcpy(&c, m + sizeof *pre, sizeof c);
        if (pre->type == OFI_T_FIN) ofi_got_fin(peer, c);
        else ofi_got_ask(peer, c);
        return;
    }
    struct kumi_hdr hdr;
    memcpy(&hdr, m + sizeof *pre, sizeof hdr);
    if (pre->type == OFI_T_RMA) {
        struct ofi_rmadesc d;
        memcpy(&d, m + hl, sizeof d);
        ofi_handle_rma(peer, &hdr, &d);
        return;
    }
    size_t plen = len - hl;
    if (plen != hdr.paylen) {
        kumi_warn("p2p/ofi: message from rank %d has %zu payload bytes, its header says %llu", peer, plen,
                  (unsigned long long)hdr.paylen);
        if (plen > hdr.paylen) plen = (size_t)hdr.paylen;
    }
    struct kumi_rx *rx = kumi_p2p_incoming(peer, &hdr);
    if (rx && hdr.paylen > 0) {
        size_t k = rx->dst ? (plen < rx->cap ? plen : rx->cap) : 0;
        if (k) memcpy(rx->dst, m + hl, k);
        rx->got = (size_t)hdr.paylen;
        kumi_p2p_rx_done(rx);
    }
}

void ofi_repost_rx(struct ofi_rxbuf *b)
{
    int rc = ofi_post_rx(b);
    if (rc) kumi_warn("p2p/ofi: cannot post a receive buffer: %s", ofi_err(rc));
}

void ofi_got_msg(struct ofi_rxbuf *b, size_t len)
{
    const struct ofi_pre *pre = (const struct ofi_pre *)b->data;
    size_t need = sizeof *pre + (pre->type >= OFI_T_FIN ? sizeof(uint64_t) : sizeof(struct kumi_hdr)) +
                  (pre->type == OFI_T_RMA ? sizeof(struct ofi_rmadesc) : 0);
    if (len < sizeof *pre || pre->magic != OFI_MAGIC || pre->src >= (uint32_t)ofi_n || pre->type < OFI_T_MSG ||
        pre->type > OFI_T_ASK || len < need) {
        kumi_warn("p2p/ofi: dropped a malformed message of %zu bytes", len);
        ofi_repost_rx(b);
        return;
    }
    int peer = (int)pre->src;
    struct ofi_peer *p = &ofi_peers[peer];
    b->len = len;
    if (pre->seq != p->rseq) {               /* ahead of its turn: held, in sequence order */
        struct ofi_rxbuf **pp = &p->held;
        while (*pp && (int16_t)(((struct ofi_pre *)(*pp)->data)->seq - pre->seq) < 0) pp = &(*pp)->next;
        b->next = *pp;
        *pp = b;
        return;
    }
    for (;;) {
        p->rseq++;
        ofi_deliver(peer, b->data, b->len);
        ofi_repost_rx(b);
        b = p->held;
        if (!b || ((struct ofi_pre *)b->data)->seq != p->rseq) break;
        p->held = b->next;
    }
}

void ofi_cq_error(void)
{
    struct fi_cq_err_entry e;
    memset(&e, 0, sizeof e);
    if (fi_cq_readerr(ofi_cq, &e, 0) != 1) return;
    struct ofi_ctx *c = e.op_context;
    if (!c) {
        kumi_warn("p2p/ofi: completion error: %s", ofi_err(e.err));
        return;
    }
    switch (c->kind) {
    case OFI_C_TX: {
        struct ofi_tx *t = (struct ofi_tx *)c;
        ofi_lost(t->peer, "a send", -e.err);
        ofi_tx_done(t);                      /* no FIN will come either */
        break;
    }
    case OFI_C_RX:
        ofi_nposted--;
        if (e.err == FI_ECANCELED) return;
        kumi_warn("p2p/ofi: receive error: %s", ofi_err(e.err));
        ofi_repost_rx((struct ofi_rxbuf *)c);
        break;
    case OFI_C_READ: {
        struct ofi_read *r = (struct ofi_read *)c;
        ofi_lost(r->peer, "a rendezvous read", -e.err);
        ofi_read_event(r, 1);
        break;
    }
    case OFI_C_RMA: {
        struct ofi_rchunk *k = (struct ofi_rchunk *)c;
        kumi_log(1, "p2p/ofi: a remote %s to rank %d failed: %s", k->op->write ? "write" : "read", k->op->tpeer,
                 ofi_err(e.err));
        ofi_rma_event(k, e.err == FI_EACCES || e.err == FI_EINVAL ? MPI_ERR_RMA_RANGE : MPI_ERR_OTHER);
        break;
    }
    }
}
