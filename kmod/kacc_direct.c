// SPDX-License-Identifier: GPL-2.0
/* KACC direct copies: two contexts of one kernel (two ranks on the same
 * host) move a message straight from the sender's pinned user pages into
 * the receiver's (one copy, like KNEM / CMA; no socket, no TCP stack).
 *
 * Finding each other: at open every context draws a cookie, a 64-bit id and
 * a 64-bit secret (get_random_u64), and is entered in a directory by id.
 * Only the opener learns the cookie (KACC_IOC_DIRECT_ID); the rank hands it
 * to the peer ranks of its job through MPI (the runtime's key-value store).
 * KACC_IOC_DIRECT_LINK(peer index, the peer's id and secret) looks the id up
 * (ENOENT: not in this kernel, e.g. the peer is on another host: the pair
 * keeps its socket), compares the secret (EACCES, counted as refused: a
 * process of the same uid that guessed or read an id gets nothing) and ties
 * the module peer to the two channels of the pair.  Both ranks of a pair
 * link each other before their first schedule with it, so both ends use
 * the same path; the socket of a direct pair stays idle.
 *
 * A channel carries one direction (sid -> rid): the queue of the sender's
 * SEND operations in send order, each with its buffer still pinned by the
 * sender's schedule.  The sender appends under the channel's mutex and
 * kicks the receiver's work.  The receiver, under its own context lock,
 * matches its posted RECVs (in posting order) against the queue's SENDs
 * with the same (ctx, tag), oldest first, copies page to page under the
 * channel's mutex, completes its RECV and hands the SEND to the sender's
 * list of finished direct sends (a spinlock) and kicks it; the sender
 * completes the node in its own progress.  A RECV into the schedule's scratch
 * (KACC_F_SCRATCH) whose one reader is a CALC after it reading exactly that
 * buffer (kacc_direct_plan) is not copied at all: the CALC reduces straight
 * from the sender's pinned pages, at the match, once every ancestor of the
 * CALC that touches its inout buffer is done (its other predecessors, which
 * do not, may still run: the CALC then completes after them).  So is a RECV (any buffer)
 * whose CALC after it computes inout = in op received with the RECV's buffer as its inout
 * (a reduction into the output, no scratch): the sender's run is copied into the inout and
 * reduced there at once, in the cache (kacc_calc_out), instead of a copy and a later pass;
 * counted in direct_fused_bytes and, of these, direct_fused_out_bytes.  Lock order: context lock ->
 * directory mutex -> channel mutex -> the sender's dlock; no code holds two
 * context locks or two channel mutexes.
 *
 * Lifetime: a SEND's pages stay pinned while it is queued: its schedule is
 * running (not freed but at release).  A releasing context first (under the
 * channel mutexes, so not during a copy) takes its own SENDs out of the
 * queues and fails the SENDs queued to it (ECONNRESET, completed by their
 * senders; the receivers of its own sends fail their posted RECVs when
 * kicked), leaves the directory, and once its work is cancelled marks the
 * channels done on its side; a channel is freed when both sides are done. */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include "kacc_int.h"

struct kchan {
    struct list_head link;              /* kacc_chans */
    u64 sid, rid;                       /* the sender's and the receiver's context ids */
    struct mutex mx;                    /* everything below */
    struct kctx *snd, *rcv;             /* valid while salive / ralive */
    bool salive, ralive;                /* the context is open */
    bool slinked, rlinked;              /* a module peer of that side uses the channel */
    bool sdone, rdone;                  /* that side released, its work cancelled */
    struct list_head q;                 /* the sender's SENDs (struct kop) in send order */
};

static DEFINE_MUTEX(kacc_dmx);          /* the directory and the channel list */
static LIST_HEAD(kacc_chans);
static struct kctx **kacc_dir;          /* open contexts (a small array: a few per rank) */
static unsigned int kacc_ndir, kacc_dircap;
static atomic64_t d_bytes, d_msgs, d_links, d_refused, d_fused, d_fused_out;

static struct kctx *dir_find(u64 id)
{
    unsigned int i;
    for (i = 0; i < kacc_ndir; i++)
        if (kacc_dir[i]->did == id) return kacc_dir[i];
    return NULL;
}

void kacc_direct_open(struct kctx *c)
{
    spin_lock_init(&c->dlock);
    INIT_LIST_HEAD(&c->ddone);
    c->dsecret = get_random_u64();
    mutex_lock(&kacc_dmx);
    do c->did = get_random_u64(); while (!c->did || dir_find(c->did));
    if (kacc_ndir == kacc_dircap) {
        unsigned int cap = kacc_dircap ? 2 * kacc_dircap : 16;
        struct kctx **n = krealloc(kacc_dir, cap * sizeof *n, GFP_KERNEL);
        if (!n) {                       /* not in the directory: no cookie (DIRECT_ID fails) */
            c->did = 0;
            mutex_unlock(&kacc_dmx);
            return;
        }
        kacc_dir = n;
        kacc_dircap = cap;
    }
    kacc_dir[kacc_ndir++] = c;
    mutex_unlock(&kacc_dmx);
}

static struct kchan *chan_get(struct kctx *snd, struct kctx *rcv)
{
    struct kchan *ch;
    list_for_each_entry(ch, &kacc_chans, link)
        if (ch->sid == snd->did && ch->rid == rcv->did) return ch;
    ch = kzalloc(sizeof *ch, GFP_KERNEL);
    if (!ch) return NULL;
    mutex_init(&ch->mx);
    INIT_LIST_HEAD(&ch->q);
    ch->sid = snd->did;
    ch->rid = rcv->did;
    ch->snd = snd;
    ch->rcv = rcv;
    ch->salive = ch->ralive = true;
    list_add(&ch->link, &kacc_chans);
    return ch;
}

/* Under c->lock. */
int kacc_direct_link(struct kctx *c, struct kacc_direct_link *l)
{
    struct kpeer *p;
    struct kctx *o;
    struct kchan *out, *in;
    int err = 0;
    if (l->index < 0 || (u32)l->index >= c->npeers || l->pad) return -EINVAL;
    p = c->peers[l->index];
    if (p->dout || p->din) return -EBUSY;
    if (!c->did) return -ENOMEM;                /* not in the directory */
    if (l->id == c->did) return -EINVAL;
    mutex_lock(&kacc_dmx);
    o = dir_find(l->id);
    if (!o) { err = -ENOENT; goto out; }
    if ((l->secret ^ o->dsecret) != 0) {        /* one comparison of the whole word */
        atomic64_inc(&d_refused);
        err = -EACCES;
        goto out;
    }
    out = chan_get(c, o);
    in = out ? chan_get(o, c) : NULL;
    if (!out || !in) { err = -ENOMEM; goto out; }
    if (out->slinked || in->rlinked) { err = -EBUSY; goto out; }
    out->slinked = in->rlinked = true;
    p->dout = out;
    p->din = in;
    atomic64_inc(&d_links);
out:
    mutex_unlock(&kacc_dmx);
    return err;
}

/* Hand a SEND back to its sender (under ch->mx, the sender alive). */
static void send_finished(struct kchan *ch, struct kop *so, int err)
{
    so->derr = err;
    spin_lock(&ch->snd->dlock);
    list_add_tail(&so->link, &ch->snd->ddone);
    spin_unlock(&ch->snd->dlock);
    kick(ch->snd);
}

static bool fuse_ready(struct ksched *s, u32 i);

/* Match the posted RECVs of direct peer p against its channel; under p->c->lock.
 * The matched RECVs complete after the channel's mutex is let go: their
 * successors may post more RECVs from p (match() again). */
static bool match(struct kpeer *p)
{
    struct kchan *ch = p->din;
    struct kop *o, *t, *so;
    LIST_HEAD(done);
    if (list_empty(&p->posted)) return false;
    mutex_lock(&ch->mx);
    list_for_each_entry_safe(o, t, &p->posted, link) {
        struct ksched *s = o->s;
        bool found = false;
        list_for_each_entry(so, &ch->q, link) {
            struct kbuf *sb, *rb;
            u64 n;
            u32 j;
            if (so->h.ctx != o->h.ctx || so->h.tag != o->h.tag) continue;
            sb = &so->s->b1[so->node];
            rb = &s->b1[o->node];
            n = min(so->h.len, rb->len);
            j = s->fuse ? s->fuse[o->node] : 0;
            if (j && so->h.len == s->nd[j].len && fuse_ready(s, o->node)) {
                /* what the CALC depends on is done: reduce straight from the sender's pages */
                if (s->nd[j].buf2 == s->nd[o->node].buf)        /* into the RECV's own buffer */
                    kacc_count_elems(kacc_calc_out(s->c, &s->nd[j], &s->b1[j], sb, &s->b2[j]));
                else                                            /* the RECV's scratch left unwritten */
                    kacc_count_elems(kacc_calc_bufs(s->c, &s->nd[j], sb, &s->b2[j]));
                s->nst[j] = N_FUSED;
                atomic64_add(so->h.len, &d_fused);
                atomic64_add(s->nd[j].buf2 == s->nd[o->node].buf ? so->h.len : 0, &d_fused_out);
            } else if (n) {
                kacc_kb_copy(rb, sb, n, true);
            }
            if (so->h.len > rb->len) set_err(s, -EMSGSIZE);
            s->rbytes += so->h.len;
            atomic64_add(so->h.len, &d_bytes);
            atomic64_inc(&d_msgs);
            list_del(&so->link);
            send_finished(ch, so, 0);
            found = true;
            break;
        }
        if (!found && !ch->salive) set_err(s, -ECONNRESET);     /* the sender is gone */
        else if (!found) continue;
        list_move_tail(&o->link, &done);
    }
    mutex_unlock(&ch->mx);
    if (list_empty(&done)) return false;
    list_for_each_entry_safe(o, t, &done, link) {
        list_del_init(&o->link);
        node_done(o->s, o->node);
        advance(o->s);
    }
    return true;
}

/* At REGISTER: the RECVs (flagged KACC_F_SCRATCH) whose CALC may be done from
 * the sender's pages: the one other node touching the RECV's buffer is a CALC
 * after it reading exactly that buffer (so nothing else reads what the RECV
 * would have written); plan_conflicts() lists what must be done before. */
static bool overlaps(u64 a, u64 al, u64 b, u64 bl)
{
    return al && bl && a < b + bl && b < a + al;
}

/* For each fusable pair (i, j): the ancestors of j but i whose buffers overlap
 * j's inout (they must be done before j may run early). */
static int plan_conflicts(struct ksched *s)
{
    u32 *pf = kvcalloc(s->n + 1, sizeof *pf, GFP_KERNEL), *pl = kvmalloc_array(max(s->nsucc, 1u), sizeof *pl, GFP_KERNEL);
    u32 *q = kvmalloc_array(s->n, sizeof *q, GFP_KERNEL), *cap = NULL;
    u8 *seen = kvcalloc(s->n, 1, GFP_KERNEL);
    u32 i, k, nconf = 0, ncap = 0;
    int err = -ENOMEM;
    s->foff = kvcalloc(s->n + 1, sizeof *s->foff, GFP_KERNEL);
    if (!pf || !pl || !q || !seen || !s->foff) goto out;
    /* predecessors, CSR: pl[pf[j] .. pf[j + 1]) (q counts the ones placed) */
    for (i = 0; i < s->n; i++)
        for (k = 0; k < s->nd[i].nsucc; k++) pf[s->succ[s->nd[i].first + k] + 1]++;
    for (i = 0; i < s->n; i++) pf[i + 1] += pf[i];
    memset(q, 0, s->n * sizeof *q);
    for (i = 0; i < s->n; i++)
        for (k = 0; k < s->nd[i].nsucc; k++) {
            u32 j = s->succ[s->nd[i].first + k];
            pl[pf[j] + q[j]++] = i;
        }
    for (i = 0; i < s->n; i++) {
        u32 j = s->fuse[i], h = 0, t = 0;
        const struct kacc_node *c;
        s->foff[i] = nconf;
        if (!j) continue;
        c = &s->nd[j];
        memset(seen, 0, s->n);
        seen[i] = seen[j] = 1;
        q[t++] = j;
        while (h < t) {                 /* the ancestors of j, not through i */
            u32 v = q[h++];
            for (k = pf[v]; k < pf[v + 1]; k++) {
                u32 a = pl[k];
                const struct kacc_node *x = &s->nd[a];
                bool hit;
                if (seen[a]) continue;
                seen[a] = 1;
                q[t++] = a;
                /* touching the CALC's inout, or writing its input (out: the input is not the scratch) */
                hit = x->kind == KACC_SEND || x->kind == KACC_RECV ?
                      x->peer >= 0 && (overlaps(x->buf, x->len, c->buf2, c->len) ||
                                       (x->kind == KACC_RECV && overlaps(x->buf, x->len, c->buf, c->len)))
                    : x->kind == KACC_CALC || x->kind == KACC_COPY ?
                      overlaps(x->buf, x->len, c->buf2, c->len) || overlaps(x->buf2, x->len, c->buf2, c->len) ||
                      overlaps(x->buf2, x->len, c->buf, c->len)
                    : x->kind == KACC_NOP && (x->flags & KACC_F_USER_PRE);     /* the rank's step: unknown buffers */
                if (!hit) continue;
                if (nconf == ncap) {
                    u32 *nb = krealloc(cap, (ncap ? 2 * ncap : 64) * sizeof *nb, GFP_KERNEL);
                    if (!nb) goto out;
                    cap = nb;
                    ncap = ncap ? 2 * ncap : 64;
                }
                cap[nconf++] = a;
            }
        }
    }
    s->foff[s->n] = nconf;
    s->fconf = cap;
    cap = NULL;
    err = 0;
out:
    kfree(cap);
    kvfree(pf); kvfree(pl); kvfree(q); kvfree(seen);
    return err;
}

/* Whether the CALC fused with RECV i may run now: its conflicting ancestors are done. */
static bool fuse_ready(struct ksched *s, u32 i)
{
    u32 k;
    for (k = s->foff[i]; k < s->foff[i + 1]; k++) {
        u8 st = s->nst[s->fconf[k]];
        if (st != N_DONE && st != N_FUSED) return false;
    }
    return true;
}

/* Whether node j can be reached from node i (forward, through successors). */
static bool reaches(struct ksched *s, u32 i, u32 j, u32 *q, u8 *seen)
{
    u32 h = 0, t = 0, k;
    memset(seen, 0, s->n);
    q[t++] = i;
    seen[i] = 1;
    while (h < t) {
        const struct kacc_node *x = &s->nd[q[h++]];
        for (k = 0; k < x->nsucc; k++) {
            u32 v = s->succ[x->first + k];
            if (v == j) return true;
            if (!seen[v]) { seen[v] = 1; q[t++] = v; }
        }
    }
    return false;
}

/* The CALC that RECV i (from a direct peer) may be fused with, 0: none.  Scratch
 * (KACC_F_SCRATCH): the one other node touching the buffer is a CALC after i reading
 * exactly it (so nothing else reads what the RECV would have written).  Otherwise (out):
 * a CALC after i whose inout is exactly the buffer and whose input lies elsewhere:
 * it computes inout = in op received, so the received bytes are never read apart from it;
 * nodes between i and that CALC touching the buffer are its ancestors (plan_conflicts: not
 * done at the match, so nothing is fused), the others run before i or after the CALC. */
static u32 plan_one(struct ksched *s, u32 i, u32 *q, u8 *seen)
{
    const struct kacc_node *r = &s->nd[i];
    bool scr = r->flags & KACC_F_SCRATCH;
    u32 j = 0, k;
    if (r->kind != KACC_RECV || r->peer < 0 || !r->len || (r->flags & ~KACC_F_SCRATCH) ||
        !s->c->peers[r->peer]->din)
        return 0;
    for (k = 0; k < s->n; k++) {
        const struct kacc_node *x = &s->nd[k];
        bool touch = false;
        if (k == i) continue;
        if (!scr) {
            if (x->kind == KACC_CALC && !x->flags && x->buf2 == r->buf && x->len == r->len &&
                !overlaps(x->buf, x->len, r->buf, r->len) && reaches(s, i, k, q, seen))
                return k;
            continue;
        }
        switch (x->kind) {
        case KACC_SEND:
        case KACC_RECV:
            touch = x->peer >= 0 && overlaps(x->buf, x->len, r->buf, r->len);
            break;
        case KACC_CALC:
        case KACC_COPY:
            touch = overlaps(x->buf, x->len, r->buf, r->len) || overlaps(x->buf2, x->len, r->buf, r->len);
            break;
        }
        if (!touch) continue;
        if (j || x->kind != KACC_CALC || x->flags || x->buf != r->buf || x->len != r->len ||
            overlaps(x->buf2, x->len, r->buf, r->len))
            return 0;
        j = k;
    }
    return j && reaches(s, i, j, q, seen) ? j : 0;
}

int kacc_direct_plan(struct ksched *s)
{
    u32 i, *q;
    u8 *seen;
    for (i = 0; i < s->n; i++)
        if (s->nd[i].kind == KACC_RECV && s->nd[i].peer >= 0 && s->c->peers[s->nd[i].peer]->din) break;
    if (i == s->n || s->n > 4096) return 0;     /* no direct receive; a large schedule: not worth n^2 */
    s->fuse = kvcalloc(s->n, sizeof *s->fuse, GFP_KERNEL);
    q = kvmalloc_array(s->n, sizeof *q, GFP_KERNEL);
    seen = kvmalloc(s->n, GFP_KERNEL);
    if (!s->fuse || !q || !seen) { kvfree(q); kvfree(seen); return -ENOMEM; }
    for (i = 0; i < s->n; i++) s->fuse[i] = plan_one(s, i, q, seen);
    kvfree(q);
    kvfree(seen);
    return plan_conflicts(s);
}

/* exec() of a SEND to a direct peer: queued for the receiver; true if handled. */
bool kacc_direct_send(struct kpeer *p, struct kop *o)
{
    struct kchan *ch = p->dout;
    if (!ch) return false;
    mutex_lock(&ch->mx);
    if (ch->ralive && ch->salive) {     /* not once its own release began: its pages go */
        o->derr = 0;
        list_add_tail(&o->link, &ch->q);
        kick(ch->rcv);
        mutex_unlock(&ch->mx);
        return true;
    }
    mutex_unlock(&ch->mx);
    set_err(o->s, -ECONNRESET);
    node_done(o->s, o->node);
    return true;
}

/* exec() of a RECV from a direct peer: posted, matched at once if its SEND is there. */
bool kacc_direct_recv(struct kpeer *p, struct kop *o)
{
    if (!p->din) return false;
    list_add_tail(&o->link, &p->posted);
    match(p);
    return true;
}

/* progress(): the finished direct sends, and the receives of direct peers. */
bool kacc_direct_progress(struct kctx *c)
{
    LIST_HEAD(done);
    struct kop *o, *t;
    bool moved = false;
    u32 i;
    spin_lock(&c->dlock);
    list_splice_init(&c->ddone, &done);
    spin_unlock(&c->dlock);
    list_for_each_entry_safe(o, t, &done, link) {
        list_del_init(&o->link);
        if (o->derr) set_err(o->s, o->derr);
        node_done(o->s, o->node);
        advance(o->s);
        moved = true;
    }
    for (i = 0; i < c->npeers; i++)
        if (c->peers[i]->din) moved |= match(c->peers[i]);
    return moved;
}

/* Release, first step (before the sockets are detached and the work cancelled). */
void kacc_direct_release_begin(struct kctx *c)
{
    struct kchan *ch;
    struct kop *o, *t;
    unsigned int i;
    mutex_lock(&kacc_dmx);
    for (i = 0; i < kacc_ndir; i++)
        if (kacc_dir[i] == c) { kacc_dir[i] = kacc_dir[--kacc_ndir]; break; }
    list_for_each_entry(ch, &kacc_chans, link) {
        if (ch->sid != c->did && ch->rid != c->did) continue;
        mutex_lock(&ch->mx);
        if (ch->sid == c->did) {        /* its own sends: out of the queue (their schedules go) */
            list_for_each_entry_safe(o, t, &ch->q, link) list_del_init(&o->link);
            ch->salive = false;
            if (ch->ralive) kick(ch->rcv);      /* the receiver fails what it waits for */
        } else {                        /* sends to it: failed, completed by their senders */
            ch->ralive = false;
            list_for_each_entry_safe(o, t, &ch->q, link) {
                list_del(&o->link);
                if (ch->salive) send_finished(ch, o, -ECONNRESET);
                else INIT_LIST_HEAD(&o->link);
            }
        }
        mutex_unlock(&ch->mx);
    }
    mutex_unlock(&kacc_dmx);
}

/* Release, last step (the context's work cancelled: it uses no channel any more). */
void kacc_direct_release_end(struct kctx *c)
{
    struct kchan *ch, *t;
    mutex_lock(&kacc_dmx);
    list_for_each_entry_safe(ch, t, &kacc_chans, link) {
        if (ch->sid == c->did) ch->sdone = true;
        if (ch->rid == c->did) ch->rdone = true;
        if (ch->sdone && ch->rdone) {
            list_del(&ch->link);
            kfree(ch);
        }
    }
    if (!kacc_ndir) {
        kfree(kacc_dir);
        kacc_dir = NULL;
        kacc_dircap = 0;
    }
    mutex_unlock(&kacc_dmx);
}

void kacc_direct_show(struct seq_file *m)
{
    seq_printf(m, "direct_links %lld\ndirect_msgs %lld\ndirect_bytes %lld\ndirect_fused_bytes %lld\n"
               "direct_fused_out_bytes %lld\ndirect_refused %lld\n", atomic64_read(&d_links), atomic64_read(&d_msgs),
               atomic64_read(&d_bytes), atomic64_read(&d_fused), atomic64_read(&d_fused_out),
               atomic64_read(&d_refused));
}
