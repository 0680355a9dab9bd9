/* Matching: the posted-receive queue and the unexpected-message queue.
 *
 * MPI's rules: a message (ctx, src, tag) matches a receive (ctx, source,
 * tag) when the contexts are equal and source / tag are equal or wildcards.
 * The first posted receive takes a message and a receive takes the earliest
 * matching message.  Transports deliver in order per peer and a message is
 * matched (or queued) as soon as its header arrives, which gives the
 * non-overtaking rule per (sender, communicator); hdr.seq checks it.
 *
 * The queues are kept per communicator context (a hash table of struct mq)
 * and, inside one, per source, as Open MPI's ob1 does, so that receives on
 * other communicators and messages from other senders cost nothing:
 *   - posted receives with a source: the list of (ctx, source); with
 *     MPI_ANY_SOURCE: the list of ctx.  Every posted receive carries its
 *     posting order (pseq); an arriving message takes the first match of
 *     its source's list or of the wildcard list, whichever was posted first;
 *   - unexpected messages: the list of ctx (arrival order; what an
 *     MPI_ANY_SOURCE receive searches) and the list of (ctx, source) (what a
 *     receive with a source searches); each message is on both.
 * A receive that matches the first message of its sender on its
 * communicator is O(1) whatever else waits in the queues. */
#include "request/request.h"
#include <stdlib.h>
#include <string.h>

struct mq_src {                      /* one source of one context */
    struct kumi_req *ph, *pt;        /* posted receives naming this source */
    struct kumi_ue *uh, *ut;         /* its unexpected messages (snext / sprev) */
};

struct mq {                          /* one communicator context */
    int32_t ctx;
    struct kumi_req *ah, *at;        /* posted MPI_ANY_SOURCE receives */
    struct kumi_ue *uh, *ut;         /* unexpected messages (next / prev) */
    struct mq_src *src;              /* [nsrc], grown on demand */
    int nsrc;
    uint64_t nue, nposted;
};

static struct mq **tab;              /* open addressing, ntab a power of two */
static size_t ntab, nused;
static struct mq *last;              /* the context looked up last */
static uint64_t pseq_next = 1;
/* per peer (request.h: kumi_match_next_send_seq, kumi_match_check_recv_seq, inline) */
uint32_t *kumi_match_sseq, *kumi_match_rseq;
#define send_seq kumi_match_sseq
#define recv_seq kumi_match_rseq
static int npeers;           /* entries of send_seq / recv_seq: world ranks, then added peers */
struct kumi_pvars kumi_pv;

static inline size_t mq_hash(int32_t ctx)
{
    return ((uint32_t)ctx * 2654435761u) & (ntab - 1);
}

static struct mq *mq_find_slow(int32_t ctx)
{
    if (!ntab) return NULL;
    for (size_t i = mq_hash(ctx);; i = (i + 1) & (ntab - 1)) {
        struct mq *q = tab[i];
        if (!q) return NULL;
        if (q->ctx == ctx) return last = q;
    }
}

/* The queues of ctx, or NULL (the last one looked up: inlined). */
static inline struct mq *mq_find(int32_t ctx)
{
    if (last && last->ctx == ctx) return last;
    return mq_find_slow(ctx);
}

static int mq_insert(struct mq *q)
{
    if ((nused + 1) * 2 > ntab) {               /* keep the load under 1/2 */
        size_t nn = ntab ? ntab * 2 : 64;
        struct mq **nt = calloc(nn, sizeof *nt);
        if (!nt) return -1;
        for (size_t i = 0; i < ntab; i++) {
            if (!tab[i]) continue;
            size_t j = ((uint32_t)tab[i]->ctx * 2654435761u) & (nn - 1);
            while (nt[j]) j = (j + 1) & (nn - 1);
            nt[j] = tab[i];
        }
        free(tab);
        tab = nt;
        ntab = nn;
    }
    size_t i = mq_hash(q->ctx);
    while (tab[i]) i = (i + 1) & (ntab - 1);
    tab[i] = q;
    nused++;
    return 0;
}

/* The queues of ctx, made if need be (NULL: out of memory). */
static struct mq *mq_make(int32_t ctx)
{
    struct mq *q;
    if (!(q = calloc(1, sizeof *q))) return NULL;
    q->ctx = ctx;
    if (mq_insert(q) < 0) {
        free(q);
        return NULL;
    }
    return last = q;
}

static inline struct mq *mq_get(int32_t ctx)
{
    struct mq *q = mq_find(ctx);
    return q ? q : mq_make(ctx);
}

/* The queues of source src of q, made if need be (NULL: out of memory). */
static struct mq_src *mq_src_grow(struct mq *q, int src)
{
    int n = q->nsrc ? q->nsrc : 4;
    while (n <= src) n *= 2;
    struct mq_src *ns = realloc(q->src, (size_t)n * sizeof *ns);
    if (!ns) return NULL;
    memset(ns + q->nsrc, 0, (size_t)(n - q->nsrc) * sizeof *ns);
    q->src = ns;
    q->nsrc = n;
    return &q->src[src];
}

static inline struct mq_src *mq_src_get(struct mq *q, int src)
{
    if (src < q->nsrc) return &q->src[src];
    return mq_src_grow(q, src);
}

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
    for (size_t i = 0; i < ntab; i++) {
        struct mq *q = tab[i];
        if (!q) continue;
        struct kumi_ue *u = q->uh, *n;
        for (; u; u = n) {
            n = u->next;
            if (u->arrived) { kumi_ubuf_free(u->data); u->magic = 0; free(u); }
        }
        free(q->src);
        free(q);
    }
    free(tab);
    tab = NULL;
    ntab = nused = 0;
    last = NULL;
    kumi_pv.ue_len = kumi_pv.posted_len = 0;
    free(send_seq); free(recv_seq);
    send_seq = recv_seq = NULL;
    npeers = 0;
    kumi_ubuf_drain();
}

void kumi_match_seq_slip(int wpeer, uint32_t seq)
{
    kumi_log(1, "p2p: message from rank %d out of order (seq %u, expected %u)", wpeer, seq, recv_seq[wpeer]);
}

static inline int tag_ok(int want, int32_t tag)
{
    return want == MPI_ANY_TAG || want == tag;
}

/* The list a posted receive is on: head and tail pointers */
static inline void posted_list(struct mq *q, const struct kumi_req *r, struct kumi_req ***h, struct kumi_req ***t)
{
    if (r->peer == MPI_ANY_SOURCE) {
        *h = &q->ah;
        *t = &q->at;
    } else {
        struct mq_src *ms = &q->src[r->peer];      /* there: made when r was posted */
        *h = &ms->ph;
        *t = &ms->pt;
    }
}

int kumi_match_post(struct kumi_req *r)
{
    struct mq *q = mq_get(r->ctx);
    if (!q || (r->peer != MPI_ANY_SOURCE && !mq_src_get(q, r->peer)))
        return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory (matching queues)", r->fname ? r->fname : "receive");
    struct kumi_req **h, **t;
    posted_list(q, r, &h, &t);
    r->qnext = NULL;
    r->qprev = *t;
    if (*t) (*t)->qnext = r; else *h = r;
    *t = r;
    r->pseq = pseq_next++;
    q->nposted++;
    if (++kumi_pv.posted_len > kumi_pv.posted_peak) kumi_pv.posted_peak = kumi_pv.posted_len;
    return MPI_SUCCESS;
}

static inline void unlink_posted(struct mq *q, struct kumi_req *r)
{
    struct kumi_req **h, **t;
    posted_list(q, r, &h, &t);
    if (r->qprev) r->qprev->qnext = r->qnext; else *h = r->qnext;
    if (r->qnext) r->qnext->qprev = r->qprev; else *t = r->qprev;
    r->qnext = r->qprev = NULL;
    r->pseq = 0;
    q->nposted--;
    kumi_pv.posted_len--;
}

int kumi_match_unpost(struct kumi_req *r)
{
    if (!r->pseq) return 0;
    struct mq *q = mq_find(r->ctx);
    if (!q) return 0;
    unlink_posted(q, r);
    return 1;
}

struct kumi_req *kumi_match_posted(const struct kumi_hdr *hdr)
{
    struct mq *q = mq_find(hdr->ctx);
    if (!q || !q->nposted) return NULL;
    struct kumi_req *a = NULL, *b;
    if (hdr->src >= 0 && hdr->src < q->nsrc)
        for (a = q->src[hdr->src].ph; a && !tag_ok(a->tag, hdr->tag); a = a->qnext) {}
    for (b = q->ah; b && !tag_ok(b->tag, hdr->tag); b = b->qnext)
        if (a && b->pseq > a->pseq) {            /* every later wildcard was posted after a */
            b = NULL;
            break;
        }
    struct kumi_req *r = !a ? b : !b ? a : a->pseq < b->pseq ? a : b;
    if (r) unlink_posted(q, r);
    return r;
}

void kumi_match_ue_append(struct kumi_ue *u)
{
    struct mq *q = mq_get(u->hdr.ctx);
    struct mq_src *ms = q && u->hdr.src >= 0 ? mq_src_get(q, u->hdr.src) : NULL;
    if (!ms)                 /* as for the envelope itself (request.c): nowhere to keep it */
        kumi_err_fatal("rank %d: out of memory for the matching queues (an unexpected message from rank %d, "
                       "tag %d): the job cannot go on without losing it", kumi_world_rank(), u->wpeer, u->hdr.tag);
    u->next = NULL;
    u->prev = q->ut;
    if (q->ut) q->ut->next = u; else q->uh = u;
    q->ut = u;
    u->snext = NULL;
    u->sprev = ms->ut;
    if (ms->ut) ms->ut->snext = u; else ms->uh = u;
    ms->ut = u;
    u->queued = true;
    q->nue++;
    if (++kumi_pv.ue_len > kumi_pv.ue_peak) kumi_pv.ue_peak = kumi_pv.ue_len;
    kumi_pv.ue_total++;
    if (__builtin_expect(kumi_pv.ue_hook != NULL, 0)) kumi_pv.ue_hook(&u->hdr);
}

void kumi_match_ue_remove(struct kumi_ue *u)
{
    if (!u->queued) return;
    struct mq *q = mq_find(u->hdr.ctx);          /* there: made when u was queued */
    struct mq_src *ms = &q->src[u->hdr.src];
    if (u->prev) u->prev->next = u->next; else q->uh = u->next;
    if (u->next) u->next->prev = u->prev; else q->ut = u->prev;
    if (u->sprev) u->sprev->snext = u->snext; else ms->uh = u->snext;
    if (u->snext) u->snext->sprev = u->sprev; else ms->ut = u->sprev;
    u->next = u->prev = u->snext = u->sprev = NULL;
    u->queued = false;
    q->nue--;
    kumi_pv.ue_len--;
}

struct kumi_ue *kumi_match_unexpected(int32_t ctx, int src, int tag, int remove)
{
    struct mq *q = mq_find(ctx);
    if (!q || !q->nue) return NULL;
    struct kumi_ue *u;
    if (src == MPI_ANY_SOURCE) {
        for (u = q->uh; u && !tag_ok(tag, u->hdr.tag); u = u->next) {}
    } else {
        if (src < 0 || src >= q->nsrc) return NULL;
        for (u = q->src[src].uh; u && !tag_ok(tag, u->hdr.tag); u = u->snext) {}
    }
    if (u && remove) kumi_match_ue_remove(u);
    return u;
}

bool kumi_match_ctx_quiet_slow(int32_t ctx)
{
    struct mq *q = mq_find(ctx);
    return !q || (!q->nue && !q->nposted);
}

/* The unexpected message of sender request sreq, sequence number seq from
 * wpeer.  A message that came without the sender's cookie (sreq 0: a
 * transport's smallest records carry none, see p2p/shmem's TINY) is found
 * by its sequence number alone, which no other message from wpeer has. */
struct kumi_ue *kumi_match_ue_find_cancel(int wpeer, uint32_t seq, uint64_t sreq)
{
    for (size_t i = 0; i < ntab; i++) {
        if (!tab[i]) continue;
        for (struct kumi_ue *u = tab[i]->uh; u; u = u->next)
            if (u->wpeer == wpeer && u->hdr.seq == seq && (u->hdr.sreq == sreq || u->hdr.sreq == 0)) return u;
    }
    return NULL;
}

void kumi_match_count_ctx(int32_t ctx, uint64_t *ue, uint64_t *posted)
{
    struct mq *q = mq_find(ctx);
    *ue = q ? q->nue : 0;
    *posted = q ? q->nposted : 0;
}
