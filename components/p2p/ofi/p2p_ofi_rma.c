/* p2p/ofi remote memory access for windows: registering window memory,
 * and each operation as fi_writemsg / fi_readmsg chunks (8 in flight),
 * queued while the provider refuses them. */
#include "p2p_ofi.h"

int p2p_ofi_mem_reg(void *base, size_t len, void **handle, struct kumi_p2p_rkey *rkey)
{
    if (!ofi_can_write)
        return kumi_error(MPI_ERR_OTHER, "p2p/ofi: provider %s does no remote writes", ofi_provname);
    struct ofi_mr *m = calloc(1, sizeof *m);
    if (!m) return kumi_error(MPI_ERR_NO_MEM, "p2p/ofi: out of memory registering window memory");
    m->base = base;
    m->len = len;
    m->access = FI_REMOTE_READ | FI_REMOTE_WRITE;
    m->key = ofi_prov_key ? 0 : ofi_next_key++;
    m->win = 1;
    int rc = ofi_mr_register(m);
    if (rc == 0 && fi_mr_key(m->mr) == FI_KEY_NOTAVAIL) {  /* a raw key (FI_MR_RAW): not asked for */
        fi_close(&m->mr->fid);
        rc = -FI_ENOSYS;
    }
    if (rc) {
        free(m);
        return kumi_error(rc == -FI_ENOMEM ? MPI_ERR_NO_MEM : MPI_ERR_OTHER,
                          "p2p/ofi: cannot register %zu bytes of window memory: %s", len, ofi_err(rc));
    }
    ofi_mr_link(m);
    *handle = m;
    ofi_nwinmr++;
    rkey->addr = ofi_virt_addr ? (uint64_t)(uintptr_t)base : 0;
    rkey->key = fi_mr_key(m->mr);
    return MPI_SUCCESS;
}

/* Also after finalize (the registration is closed already, the record stays
 * for this). */
void p2p_ofi_mem_dereg(void *handle)
{
    struct ofi_mr *m = handle;
    if (!m) return;
    if (m->mr) fi_close(&m->mr->fid);
    ofi_mr_unlink(m);
    free(m);
    ofi_nwinmr--;
}

static struct ofi_rchunk *ofi_rchunk_get(void)
{
    struct ofi_rchunk *c = ofi_rcfree;
    if (c) ofi_rcfree = c->next;
    else c = malloc(sizeof *c);
    if (c) c->c.kind = OFI_C_RMA;
    return c;
}

static void ofi_rchunk_put(struct ofi_rchunk *c)
{
    c->next = ofi_rcfree;
    ofi_rcfree = c;
}

/* Issue the pieces op still needs; 1 if the provider is busy (op waits on ofi_rmaq). */
static int ofi_rma_issue(struct kumi_p2p_rma *op)
{
    struct ofi_peer *p = &ofi_peers[op->tpeer];
    while (op->toff < op->len && !op->terr && op->tpending < OFI_READ_WINDOW) {
        size_t n = op->len - op->toff;
        if (n > ofi_read_chunk) n = ofi_read_chunk;
        struct ofi_rchunk *c = ofi_rchunk_get();
        if (!c) {
            op->terr = MPI_ERR_NO_MEM;
            break;
        }
        c->op = op;
        struct iovec iov = { (char *)op->local + op->toff, n };
        struct fi_rma_iov riov = { .addr = op->raddr + op->toff, .len = n, .key = op->key };
        struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1, .addr = p->addr, .rma_iov = &riov,
                                  .rma_iov_count = 1, .context = &c->c };
        ssize_t rc = op->write ? fi_writemsg(ofi_ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE)
                               : fi_readmsg(ofi_ep, &msg, FI_COMPLETION);
        if (rc == -FI_EAGAIN) {
            ofi_rchunk_put(c);
            return 1;
        }
        if (rc) {
            ofi_rchunk_put(c);
            ofi_lost(op->tpeer, op->write ? "a remote write" : "a remote read", (int)rc);
            op->terr = MPI_ERR_OTHER;
            break;
        }
        op->toff += n;
        op->tpending++;
    }
    return 0;
}

static void ofi_rma_queue(struct kumi_p2p_rma *op)
{
    op->tflags |= OFI_RMA_QUEUED;
    op->tnext = NULL;
    if (ofi_rmaq_tail) ofi_rmaq_tail->tnext = op;
    else ofi_rmaq = op;
    ofi_rmaq_tail = op;
}

static void ofi_rma_finish(struct kumi_p2p_rma *op)
{
    ofi_nrma--;
    op->done(op, op->terr);
}

int p2p_ofi_rma(int peer, struct kumi_p2p_rma *op)
{
    if (!p2p_ofi_reaches(peer) || !ofi_can_write)
        return kumi_error(MPI_ERR_OTHER, "p2p/ofi: no remote memory access to rank %d", peer);
    op->tpeer = peer;
    op->toff = 0;
    op->tpending = op->terr = op->tflags = 0;
    ofi_nrma++;
    if (ofi_rma_issue(op)) {
        ofi_rma_queue(op);
    } else if (op->tpending == 0) {          /* nothing went out (empty, or refused): done at progress */
        if (op->terr && op->toff == 0) {     /* refused at once: the caller learns it now */
            ofi_nrma--;
            return op->terr;
        }
        op->tnext = ofi_rmafin;
        ofi_rmafin = op;
    }
    return MPI_SUCCESS;
}

void ofi_rma_event(struct ofi_rchunk *c, int err)
{
    struct kumi_p2p_rma *op = c->op;
    ofi_rchunk_put(c);
    op->tpending--;
    if (err && !op->terr) op->terr = err;
    if (op->tflags & OFI_RMA_QUEUED) return;  /* ofi_flush_rma goes on with it */
    if (!op->terr && op->toff < op->len && ofi_rma_issue(op)) ofi_rma_queue(op);
    else if (op->tpending == 0) ofi_rma_finish(op);
}

/* Issue the pieces the provider refused before; finish what is over.
 * Returns 1 if anything happened. */
int ofi_flush_rma(void)
{
    struct kumi_p2p_rma *list = ofi_rmaq, *fin = ofi_rmafin;
    int did = fin != NULL;
    ofi_rmaq = ofi_rmaq_tail = NULL;
    ofi_rmafin = NULL;
    while (list) {
        struct kumi_p2p_rma *op = list;
        int before = op->tpending;
        list = op->tnext;
        op->tflags &= ~OFI_RMA_QUEUED;
        if (!op->terr && ofi_rma_issue(op)) {
            ofi_rma_queue(op);
            if (op->tpending != before) did = 1;
        } else {
            did = 1;
            if (op->tpending == 0) ofi_rma_finish(op);
        }
    }
    while (fin) {
        struct kumi_p2p_rma *op = fin;
        fin = op->tnext;
        ofi_rma_finish(op);
    }
    return did;
}
