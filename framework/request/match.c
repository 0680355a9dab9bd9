/* Matching: the posted-receive queue and the unexpected-message queue.
 *
 * MPI's rules: a message (ctx, src, tag) matches a receive (ctx, source,
 * tag) when the contexts are equal and source / tag are equal or wildcards.
 * Both queues are kept in arrival / posting order and searched from the
 * front, so the first posted receive takes a message and a receive takes the
 * earliest matching message.  Transports deliver in order per peer and a
 * message is matched (or queued) as soon as its header arrives, which gives
 * the non-overtaking rule per (sender, communicator); hdr.seq checks it. */
#include "request/request.h"
#include <stdlib.h>
#include <string.h>

static struct kumi_req *posted_head, *posted_tail;
static struct kumi_ue *ue_head, *ue_tail;
static uint32_t *send_seq, *recv_seq;
static int npeers;           /* entries of send_seq / recv_seq: world ranks, then added peers */
struct kumi_pvars kumi_pv;

int kumi_match_init(int n)
{
    npeers = n;
    send_seq = calloc((size_t)n, sizeof *send_seq);
    recv_seq = calloc((size_t)n, sizeof *recv_seq);
    if (!send_seq || !recv_seq) return kumi_error(MPI_ERR_NO_MEM, "MPI_Init: out of memory (request layer)");
    return MPI_SUCCESS;
}

/* Room for peers numbered up to n - 1 (processes of another job, numbered
 * after the world ranks): the new peers start at sequence number 0, those
 * there keep theirs.  Never shrinks. */
int kumi_match_grow(int n)
{
    if (n <= npeers) return MPI_SUCCESS;
    uint32_t *s = realloc(send_seq, (size_t)n * sizeof *s);
    if (!s) return kumi_error(MPI_ERR_NO_MEM, "out of memory (request layer: %d peers)", n);
    send_seq = s;
    uint32_t *r = realloc(recv_seq, (size_t)n * sizeof *r);
    if (!r) return kumi_error(MPI_ERR_NO_MEM, "out of memory (request layer: %d peers)", n);
    recv_seq = r;
    memset(send_seq + npeers, 0, (size_t)(n - npeers) * sizeof *s);
    memset(recv_seq + npeers, 0, (size_t)(n - npeers) * sizeof *r);
    npeers = n;
    return MPI_SUCCESS;
}

void kumi_match_finalize(void)
{
    struct kumi_ue *u = ue_head, *n;
    for (; u; u = n) {
        n = u->next;
        if (u->arrived) { kumi_ubuf_free(u->data); u->magic = 0; free(u); }
    }
    ue_head = ue_tail = NULL;
    posted_head = posted_tail = NULL;
    kumi_pv.ue_len = kumi_pv.posted_len = 0;
    free(send_seq); free(recv_seq);
    send_seq = recv_seq = NULL;
    npeers = 0;
    kumi_ubuf_drain();
}

uint32_t kumi_match_next_send_seq(int wpeer)
{
    return send_seq[wpeer]++;
}

void kumi_match_check_recv_seq(int wpeer, uint32_t seq)
{
    if (seq != recv_seq[wpeer])
        kumi_log(1, "p2p: message from rank %d out of order (seq %u, expected %u)",
                 wpeer, seq, recv_seq[wpeer]);
    recv_seq[wpeer] = seq + 1;
}

static inline int matches(int32_t ctx, int src, int tag, const struct kumi_hdr *h)
{
    return h->ctx == ctx && (src == MPI_ANY_SOURCE || src == h->src) &&
           (tag == MPI_ANY_TAG || tag == h->tag);
}

void kumi_match_post(struct kumi_req *r)
{
    r->qnext = NULL;
    r->qprev = posted_tail;
    if (posted_tail) posted_tail->qnext = r; else posted_head = r;
    posted_tail = r;
    if (++kumi_pv.posted_len > kumi_pv.posted_peak) kumi_pv.posted_peak = kumi_pv.posted_len;
}

static void unlink_posted(struct kumi_req *r)
{
    if (r->qprev) r->qprev->qnext = r->qnext; else posted_head = r->qnext;
    if (r->qnext) r->qnext->qprev = r->qprev; else posted_tail = r->qprev;
    r->qnext = r->qprev = NULL;
    kumi_pv.posted_len--;
}

int kumi_match_unpost(struct kumi_req *r)
{
    struct kumi_req *p;
    for (p = posted_head; p; p = p->qnext)
        if (p == r) { unlink_posted(r); return 1; }
    return 0;
}

struct kumi_req *kumi_match_posted(const struct kumi_hdr *hdr)
{
    struct kumi_req *r;
    for (r = posted_head; r; r = r->qnext)
        if (matches(r->ctx, r->peer, r->tag, hdr)) { unlink_posted(r); return r; }
    return NULL;
}

void kumi_match_ue_append(struct kumi_ue *u)
{
    u->next = NULL;
    u->prev = ue_tail;
    if (ue_tail) ue_tail->next = u; else ue_head = u;
    ue_tail = u;
    u->queued = true;
    if (++kumi_pv.ue_len > kumi_pv.ue_peak) kumi_pv.ue_peak = kumi_pv.ue_len;
    kumi_pv.ue_total++;
    if (__builtin_expect(kumi_pv.ue_hook != NULL, 0)) kumi_pv.ue_hook(&u->hdr);
}

void kumi_match_ue_remove(struct kumi_ue *u)
{
    if (!u->queued) return;
    if (u->prev) u->prev->next = u->next; else ue_head = u->next;
    if (u->next) u->next->prev = u->prev; else ue_tail = u->prev;
    u->next = u->prev = NULL;
    u->queued = false;
    kumi_pv.ue_len--;
}

struct kumi_ue *kumi_match_unexpected(int32_t ctx, int src, int tag, int remove)
{
    struct kumi_ue *u;
    for (u = ue_head; u; u = u->next)
        if (matches(ctx, src, tag, &u->hdr)) {
            if (remove) kumi_match_ue_remove(u);
            return u;
        }
    return NULL;
}

struct kumi_ue *kumi_match_ue_find_cancel(int wpeer, uint32_t seq, uint64_t sreq)
{
    struct kumi_ue *u;
    for (u = ue_head; u; u = u->next)
        if (u->wpeer == wpeer && u->hdr.seq == seq && u->hdr.sreq == sreq) return u;
    return NULL;
}

void kumi_match_count_ctx(int32_t ctx, uint64_t *ue, uint64_t *posted)
{
    uint64_t nu = 0, np = 0;
    for (struct kumi_ue *u = ue_head; u; u = u->next)
        if (u->hdr.ctx == ctx) nu++;
    for (struct kumi_req *r = posted_head; r; r = r->qnext)
        if (r->ctx == ctx) np++;
    *ue = nu;
    *posted = np;
}
