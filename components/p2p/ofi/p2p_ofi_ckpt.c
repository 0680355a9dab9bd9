/* p2p/ofi and coordinated checkpoints (p2p contract 1.7; framework/mpi/ckpt.c).
 *
 * The cut (the coordinator's counting rounds) delivers every message of the
 * request layer; ckpt_quiet then also wants nothing of this rank inside
 * libfabric: no send queued or not completed, no rendezvous being read, no
 * window operation in flight, nothing held back out of order.  Parked
 * operations do not count: a pulled rendezvous whose RTS waits in the
 * peer's unexpected queue (the sender's ofi_tx on ofi_finwait, its buffer
 * registered; the receiver's ofi_read on ofi_reads, in the request layer's
 * saved queue by its handle), and the FIN such a rendezvous answered last
 * (fi_inject: no completion says the peer has it).
 *
 * ckpt_release closes every registration (the records stay, with their
 * keys), the endpoint, address vector, completion queue, domain and fabric,
 * and frees the receive buffers and peers; parked sends and reads stay in
 * memory (which the image holds).
 *
 * The next init (after checkpoint-and-continue, or in the restarted process)
 * opens fabric, domain, queue and endpoint again, registers every recorded
 * registration again at the same address with the same key (the keys are
 * ours to choose unless the provider says FI_MR_PROV_KEY, for which
 * ckpt_quiet says -1 and the checkpoint is refused; so it does for shm,
 * whose endpoints opened again in the same process carry nothing: a job
 * hangs or crashes after checkpoint-and-continue; tests/scripts/ckpt_ofi.sh), and
 * publishes its new endpoint name; wireup reads every peer's new one.  So
 * what peers hold keeps working without a word: the descriptor of a parked
 * rendezvous ({address, key}) and windows' keys that the RMA layer
 * exchanged when the window was made.  Init registers before the
 * launcher's fence that separates it from every wireup, so no peer reads or
 * writes before the memory is registered again.
 *
 * A FIN in flight at the cut may be lost with the endpoints.  So after
 * wireup the sender asks (ASK, with the cookie) for each parked send; the
 * receiver answers FIN when it has no rendezvous of that cookie left (it
 * was read or cancelled: the FIN was lost), and says nothing when it still
 * has one (parked or being read: its FIN comes when it is done).  A FIN
 * that arrived before the cut took the send off ofi_finwait, so no ASK goes
 * for it.  A FIN may then come twice (the receiver read a parked
 * rendezvous after wireup, before the ASK came): cookies are never reused
 * (a counter, not the send's address), so the second finds no send and is
 * ignored, and no FIN completes the wrong send.  p2p_ofi_drop_fin (tests)
 * makes a receiver keep the FIN of its first reads to itself, as if lost:
 * only the ASK then finishes those sends (tests/scripts/ckpt_ofi_ask.sh). */
#include "p2p_ofi.h"

int ofi_asked;

int p2p_ofi_ckpt_quiet(void)
{
    if (!ofi_ckpt_able) return -1;           /* cannot be checkpointed: refused */
    if (!ofi_ep) return 1;
    if (ofi_have_peers_queued || ofi_rdq || ofi_nrma > 0 || ofi_rmaq || ofi_rmafin) return 0;
    for (int r = 0; r < ofi_n; r++)
        if (ofi_peers[r].qhead || ofi_peers[r].held) return 0;
    for (struct ofi_read *r = ofi_reads; r; r = r->anext)
        if (r->rx || r->outstanding) return 0;   /* being read */
    int parked = 0;
    for (struct ofi_tx *t = ofi_finwait; t; t = t->fnext)
        if (t->op && t->pending == 1) parked++;  /* sent, only the FIN missing */
    return ofi_nqueued == parked;
}

void p2p_ofi_ckpt_release(void)
{
    ofi_mr_flush();                             /* unused cache entries go, used ones stay uncached */
    ofi_close_fabric();
    ofi_released = 1;
    int np = 0, nr = 0, nm = 0;
    for (struct ofi_tx *t = ofi_finwait; t; t = t->fnext) np++;
    for (struct ofi_read *r = ofi_reads; r; r = r->anext) nr++;
    for (struct ofi_mr *m = ofi_regs; m; m = m->anext) nm++;
    kumi_log(1, "p2p/ofi: released for a checkpoint: %d parked send%s, %d rendezvous not read, %d registration%s",
             np, np == 1 ? "" : "s", nr, nm, nm == 1 ? "" : "s");
}

/* From init, after a release: the recorded registrations again, same keys. */
int ofi_ckpt_reinit(void)
{
    for (struct ofi_mr *m = ofi_regs; m; m = m->anext) {
        int rc = ofi_mr_register(m);
        if (rc) return rc;
        if (!ofi_prov_key && fi_mr_key(m->mr) != m->key) {
            kumi_log(1, "p2p/ofi: %zu bytes registered again got key %llu, not %llu", m->len,
                     (unsigned long long)fi_mr_key(m->mr), (unsigned long long)m->key);
            return -FI_EKEYREJECTED;
        }
    }
    return 0;
}

/* From wireup, after a release: ask for the FIN of every parked send. */
void ofi_ckpt_rewired(void)
{
    ofi_released = 0;
    for (struct ofi_tx *t = ofi_finwait; t; t = t->fnext)
        if (p2p_ofi_reaches(t->peer)) {
            ofi_send_ask(t->peer, t->cookie);
            ofi_asked = 1;
        }
}

void ofi_got_ask(int peer, uint64_t cookie)
{
    for (struct ofi_read *r = ofi_reads; r; r = r->anext)
        if (r->peer == peer && r->d.cookie == cookie) return;   /* its FIN comes when it is done */
    kumi_log(1, "p2p/ofi: rank %d asked for rendezvous %llu, which is over: FIN again", peer,
             (unsigned long long)cookie);
    ofi_send_fin(peer, cookie);
}
