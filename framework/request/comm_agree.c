/* Context-id agreement and the request behind MPI_Comm_idup: a protocol of
 * point-to-point requests in a communicator's collective context (the MPI
 * functions are in mpi/comm_create.c).
 *
 * A new communicator's context-id pair (core/ids.h) is agreed by its
 * members; the pairs free on this process are kept by core/comm.c.
 *
 * A new id is agreed over the processes of the new communicator: each one
 * contributes its mask of free pairs, a bitwise AND keeps the pairs free
 * everywhere and the lowest one is taken.  Disjoint communicators created by
 * one split share an id, which is safe: a process belongs to only one of them.
 *
 * Concurrent agreements (threads at MPI_THREAD_MULTIPLE; the library lock is
 * released while a thread waits) must never pick the same pair on a process.
 * So the mask is owned by one agreement at a time on each process: an
 * agreement that does not own it contributes an all-zero mask and a "not
 * owner" flag (the extra last word), every member sees that in the AND and
 * the round is retried.  Ownership goes to the in-flight agreement with the
 * lowest key (parent's context id, tag): the globally lowest one eventually
 * owns the mask on all its members at once, so some agreement always
 * succeeds and none starves (the scheme MPICH uses).
 *
 * Arrival round.  An owner holds the mask until its round ends, so a round
 * that owns must never wait for a member that has not yet entered the
 * agreement: that member may first wait (MPI_Wait of an MPI_Comm_idup,
 * another thread) for an agreement that needs this process's mask.  So
 * round 0 of an agreement offers nothing (it only tells that every member
 * has arrived), and only agreements past round 0 ("active") count for the
 * lowest-key rule; rounds >= 1 end in bounded time, since every member is in
 * the agreement and progresses it.  Exception: a blocking agreement in a
 * single-threaded process with no other agreement in flight offers its mask
 * at once (nothing else can ask for the mask while it waits), so
 * MPI_Comm_dup & co. still cost one reduction.
 *
 * MPI_Comm_idup runs the same protocol as a state machine of non-blocking
 * point-to-point messages in the parent's collective context (ctx+1),
 * completed by the progress engine (callbacks of internal requests): each
 * round is a binomial AND-reduction to rank 0 (tag IDUP_TAG_REDUCE) and a
 * binomial broadcast back (IDUP_TAG_BCAST).  Tag space of ctx+1: collective
 * components use tags >= 0; kumi_ctx_alloc_group uses -8 .. -0x40000007;
 * the idups use -0x40000010 and -0x40000011, nothing else does.  The idups
 * of one communicator run one after another on each process (in call order,
 * which MPI makes the same everywhere), so they share that tag pair and the
 * key (ctx, KEY_IDUP); messages cannot pair wrongly because point-to-point
 * is non-overtaking and every member runs the same rounds in the same
 * order.  Once agreed, the communicator is built (attributes copied with
 * their copy callbacks, topology, info) and the request completes.
 *
 * An intercommunicator's idup runs the same state machine over the processes
 * of both groups: tree member v is a rank of the group whose rank 0 has the
 * lower world rank (kumi_req_peer_before) (v < its size), else of the other group; messages to a
 * member of the own group go through the local intracommunicator's
 * collective context, to one of the other group through the
 * intercommunicator's (the same two tags: nothing else uses them there).
 * The AND of every member's mask gives two pairs free in both groups: the
 * lowest for the new intercommunicator, the next for its local
 * intracommunicator; the mpi layer's finish function builds it. */
#include "request/request.h"
#include "core/check.h"
#include <kumi/coll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define MASK_WORDS KUMI_CTX_MASK_WORDS
#define AGREE_WORDS (MASK_WORDS + 1)    /* + 1 word: "I contributed my real mask" */
#define KEY_COMM KUMI_KEY_COMM           /* low key word of agreements over a whole parent */

/* Agreements in flight on this process, and whether one owns the mask.
 * active: past the arrival round (see above). */
struct ctx_agreement { uint64_t key; bool active; struct ctx_agreement *next; };
static struct ctx_agreement *inflight;
static bool mask_owned;
static void idup_kick(void);

static bool lowest_active(uint64_t key)
{
    for (struct ctx_agreement *a = inflight; a; a = a->next)
        if (a->active && a->key < key) return false;
    return true;
}

static void agreement_remove(struct ctx_agreement *me)
{
    struct ctx_agreement **pp = &inflight;
    while (*pp && *pp != me) pp = &(*pp)->next;
    if (*pp) *pp = me->next;
}

/* The lowest pair free in an agreed mask (taken); MPI_ERR_INTERN if none. */
static int take_ctx(const uint32_t *out, int32_t *ctx)
{
    for (int w = 0; w < MASK_WORDS; w++) {
        if (!out[w]) continue;
        int b = __builtin_ctz(out[w]);
        *ctx = (int32_t)(2 * (w * 32 + b));
        kumi_ctx_take(*ctx);
        return MPI_SUCCESS;
    }
    return kumi_error(MPI_ERR_INTERN, "no free context id left (%d communicators exist)", KUMI_CTX_PAIRS);
}

typedef int (*band_fn)(void *arg, const uint32_t *in, uint32_t *out, int n);

static int ctx_agree(uint64_t key, band_fn band, void *arg, int32_t *ctx)
{
    bool eager = !kumi_mt && !inflight;
    struct ctx_agreement me = { key, eager, inflight };
    uint32_t in[AGREE_WORDS], out[AGREE_WORDS];
    int rc;
    inflight = &me;
    for (int round = eager ? 1 : 0;; round++) {
        bool mine = round > 0 && !mask_owned && lowest_active(key);
        if (mine) {
            mask_owned = true;
            kumi_ctx_mask(in);
            in[MASK_WORDS] = 1;
        } else {
            memset(in, 0, sizeof in);
        }
        rc = band(arg, in, out, AGREE_WORDS);
        if (mine) {
            mask_owned = false;
            idup_kick();
        }
        if (rc) break;
        if (out[MASK_WORDS]) {          /* every member contributed its mask */
            rc = take_ctx(out, ctx);
            break;
        }
        me.active = true;               /* (after round 0) */
        /* another agreement owned the mask somewhere: let it finish, retry */
        if (round > 1) {
            int d = kumi_lock_release_all();
            sched_yield();
            kumi_lock_reacquire(d);
        }
    }
    agreement_remove(&me);
    idup_kick();
    return rc;
}

/* Agreement over every rank of parent, by point-to-point (band_group), not
 * by parent's allreduce: a hierarchical coll component makes its
 * sub-communicators (kumi_comm_sub_create, itself an agreement) in the first
 * collective it runs on a communicator, and one started inside this
 * agreement would wait for the mask this one holds. */
int kumi_ctx_alloc(struct kumi_comm *parent, int32_t *ctx)
{
    return kumi_ctx_alloc_over(parent, ((uint64_t)(uint32_t)parent->ctx << 32) | KEY_COMM, ctx);
}

/* A component's rule (coll/impi); the struct is the component's, set at its
 * open and cleared at its close, both outside any agreement. */
static const struct kumi_ctx_rule *ctx_rule;

KUMI_EXPORT void kumi_ctx_rule_set(const struct kumi_ctx_rule *rule)
{
    ctx_rule = rule;
}

/* Not at MPI_THREAD_MULTIPLE: a rule like IMPI's (max + 1 over the
 * members) assumes one creation at a time per process; two threads creating
 * communicators over different parents at once could both take the same id
 * (comm_idup's threads did), which Kumi's own agreement prevents. */
bool kumi_ctx_rule_applies(struct kumi_comm *comm)
{
    return ctx_rule && ctx_rule->applies && !comm->inter && kumi_thread_level != MPI_THREAD_MULTIPLE &&
           ctx_rule->applies((MPI_Comm)comm);
}

/* Intercommunicators: the rule's own functions for them, when it has them,
 * and the same conditions as above (on the local group's intracommunicator). */
bool kumi_ctx_rule_applies_inter(struct kumi_comm *local, int rn, const int rworld[])
{
    return ctx_rule && ctx_rule->applies_inter && ctx_rule->agree_inter && local && !local->inter &&
           kumi_thread_level != MPI_THREAD_MULTIPLE && ctx_rule->applies_inter((MPI_Comm)local, rn, rworld);
}

int kumi_ctx_rule_agree_inter(int kind, struct kumi_comm *local, int leader, struct kumi_comm *inter,
                              int (*xchg)(void *, const uint64_t *, uint64_t *, int), void *arg, uint64_t extra,
                              uint64_t *rextra, int nctx, int32_t ctx[])
{
    return ctx_rule->agree_inter(kind, (MPI_Comm)local, leader, inter ? (MPI_Comm)inter : MPI_COMM_NULL, xchg, arg,
                                 extra, rextra, nctx, ctx);
}

int kumi_ctx_alloc_comm(struct kumi_comm *parent, int32_t *ctx)
{
    if (kumi_ctx_rule_applies(parent) && ctx_rule->agree) return ctx_rule->agree((MPI_Comm)parent, ctx);
    return kumi_ctx_alloc(parent, ctx);
}

/* AND over the members of a group, by point-to-point in the carrier's
 * collective context (binomial reduce to member 0, binomial broadcast back),
 * with negative tags of their own (components use tags >= 0). */
struct band_group {
    struct kumi_comm *carrier;
    int n, me;
    int *peer;                          /* member -> carrier rank */
    int tag;
};

static int band_group(void *arg, const uint32_t *in, uint32_t *out, int n)
{
    struct band_group *b = arg;
    MPI_Comm cc = (MPI_Comm)b->carrier;
    uint32_t tmp[AGREE_WORDS];
    int rc = MPI_SUCCESS, mask;
    memcpy(out, in, sizeof(uint32_t) * (size_t)n);
    for (mask = 1; mask < b->n; mask <<= 1) {
        if (b->me & mask) {
            rc = kumi_coll_send(out, (size_t)n, MPI_UINT32_T, b->peer[b->me - mask], b->tag, cc);
            break;
        }
        if (b->me + mask < b->n) {
            rc = kumi_coll_recv(tmp, (size_t)n, MPI_UINT32_T, b->peer[b->me + mask], b->tag, cc);
            if (rc) return rc;
            for (int i = 0; i < n; i++) out[i] &= tmp[i];
        }
    }
    if (rc) return rc;
    /* broadcast from member 0: receive from the parent found above, send down */
    if (b->me) rc = kumi_coll_recv(out, (size_t)n, MPI_UINT32_T, b->peer[b->me - mask], b->tag - 1, cc);
    if (rc) return rc;
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (b->me + mask < b->n && !(b->me & mask) && (b->me & (mask - 1)) == 0) {
            rc = kumi_coll_send(out, (size_t)n, MPI_UINT32_T, b->peer[b->me + mask], b->tag - 1, cc);
            if (rc) return rc;
        }
    return MPI_SUCCESS;
}

int kumi_ctx_alloc_group(struct kumi_comm *carrier, const struct kumi_group *g, uint64_t key, int32_t *ctx)
{
    struct kumi_comm *boot = kumi_comm_boot();
    if (!carrier) carrier = boot;
    if (g->rank == MPI_UNDEFINED)
        return kumi_error(MPI_ERR_GROUP, "context id agreement: this process is not a member of the group");
    struct band_group b = { carrier, g->size, g->rank, NULL, 0 };
    b.peer = malloc(sizeof(int) * (size_t)g->size);
    if (!b.peer) return kumi_error(MPI_ERR_NO_MEM, "out of memory agreeing on a context id");
    for (int i = 0; i < g->size; i++) {
        int r = carrier == boot ? g->world[i] : MPI_UNDEFINED;
        if (carrier != boot)
            for (int j = 0; j < carrier->size; j++)
                if (kumi_comm_world_rank(carrier, j) == g->world[i]) { r = j; break; }
        if (r == MPI_UNDEFINED) {
            free(b.peer);
            return kumi_error(MPI_ERR_GROUP, "group member %d (world rank %d) is not in the communicator", i, g->world[i]);
        }
        b.peer[i] = r;
    }
    b.tag = -(int)(8 + 2 * (uint32_t)(key & 0x1fffffff));
    int rc = ctx_agree(key, band_group, &b, ctx);
    free(b.peer);
    return rc;
}

/* Agreement among every rank of comm (members = ranks, carrier = comm). */
int kumi_ctx_alloc_over(struct kumi_comm *comm, uint64_t key, int32_t *ctx)
{
    struct band_group b = { comm, comm->size, comm->rank, NULL, 0 };
    b.peer = malloc(sizeof(int) * (size_t)comm->size);
    if (!b.peer) return kumi_error(MPI_ERR_NO_MEM, "out of memory agreeing on a context id");
    for (int i = 0; i < comm->size; i++) b.peer[i] = i;
    b.tag = -(int)(8 + 2 * (uint32_t)(key & 0x1fffffff));
    int rc = ctx_agree(key, band_group, &b, ctx);
    free(b.peer);
    return rc;
}

/* ------------------------------------------------------ MPI_Comm_idup */
#define IDUP_TAG_REDUCE KUMI_TAG_IDUP_REDUCE
#define IDUP_TAG_BCAST  KUMI_TAG_IDUP_BCAST
#define KEY_IDUP KUMI_KEY_IDUP           /* low key word of the idups of a parent */

enum { IDUP_QUEUED, IDUP_START, IDUP_REDUCE, IDUP_BCAST, IDUP_FANOUT, IDUP_LOCAL, IDUP_DONE };

struct idup {
    struct kumi_req *req;               /* the user's request (NULL once completed) */
    struct kumi_comm *comm;             /* the parent (req holds the reference) */
    struct kumi_info *info;             /* hints of the new communicator (owned) */
    MPI_Comm *newcomm;
    const char *fn;
    struct ctx_agreement ag;
    int state, round;
    bool inter;                         /* comm is an intercommunicator (tree over both groups) */
    bool low;                           /* ... and this process's group comes first in the tree */
    int vsize;                          /* members of the tree */
    kumi_idup_inter_fn finish;          /* builds an intercommunicator's duplicate */
    bool mine;                          /* this round offers (and owns) the mask */
    bool busy;                          /* idup_advance is running */
    int err;
    int wait;                           /* receives of this phase not yet complete */
    int subs;                           /* internal requests that point here */
    int parent;                         /* binomial tree: parent member (-1 at member 0) */
    int nchild;
    int child[32];
    struct kumi_req *rq[33];            /* receives posted: [i] from child i, [nchild] from parent */
    uint32_t acc[AGREE_WORDS], res[AGREE_WORDS];
    uint32_t (*cbuf)[AGREE_WORDS];      /* children's contributions */
    struct idup *next;                  /* all idups of this process, in call order */
};
static struct idup *idups;

static void idup_advance(struct idup *st);

static void idup_free_state(struct idup *st)
{
    free(st->cbuf);
    free(st);
}

static void idup_sub_done(struct kumi_req *s)
{
    struct idup *st = s->ext;
    int e = s->status.MPI_ERROR;
    int slot = s->cb_idx;
    kumi_req_free(s);
    st->subs--;
    if (slot >= 0) {
        st->rq[slot] = NULL;
        st->wait--;
    }
    if (e != MPI_SUCCESS && st->err == MPI_SUCCESS) st->err = e;
    if (st->state == IDUP_DONE) {
        if (st->subs == 0) idup_free_state(st);
        return;
    }
    idup_advance(st);
}

/* The communicator that reaches tree member v, and v's rank there. */
static struct kumi_comm *idup_addr(const struct idup *st, int v, int *rank)
{
    struct kumi_comm *p = st->comm;
    if (!st->inter) {
        *rank = v;
        return p;
    }
    int lo = st->low ? 0 : p->remote_size;      /* member of local rank 0 */
    if (v >= lo && v < lo + p->size) {
        *rank = v - lo;
        return p->local_comm;
    }
    *rank = st->low ? v - p->size : v;
    return p;
}

/* An internal message of the agreement to or from tree member v; send: data
 * copied (freed with the request). */
static void idup_msg(struct idup *st, bool send, int v, int tag, uint32_t *buf, int slot)
{
    int peer;
    struct kumi_comm *c = idup_addr(st, v, &peer);
    uint32_t *copy = send ? malloc(sizeof(uint32_t) * AGREE_WORDS) : NULL;
    if (copy) memcpy(copy, buf, sizeof(uint32_t) * AGREE_WORDS);
    struct kumi_req *s = send && !copy ? NULL
        : kumi_req_internal(send ? KUMI_REQ_SEND : KUMI_REQ_RECV, c, c->ctx + 1, st->fn, send ? copy : buf,
                            AGREE_WORDS, kumi_dt_get(MPI_UINT32_T), peer, tag, idup_sub_done, st, send ? -1 : slot);
    if (!s) {
        free(copy);
        if (st->err == MPI_SUCCESS) st->err = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", st->fn);
        return;
    }
    s->owned = copy;                    /* freed with the request */
    st->subs++;
    if (!send) {
        st->rq[slot] = s;
        st->wait++;
    }
    int rc = send ? kumi_req_start_send(s) : kumi_req_start_recv(s);   /* may complete at once */
    if (rc != MPI_SUCCESS) {            /* (a failed start never calls idup_sub_done) */
        if (!send) { st->rq[slot] = NULL; st->wait--; }
        if (st->err == MPI_SUCCESS) st->err = rc;
        st->subs--;
        kumi_req_free(s);
    }
}

/* The idup is over (rc: its error): build the communicator, complete the
 * request, start the next idup of the same parent. */
static void idup_finish(struct idup *st, int32_t ctx, int32_t lctx, int rc)
{
    struct kumi_req *r = st->req;
    st->state = IDUP_DONE;
    agreement_remove(&st->ag);
    /* withdraw receives no message will come for (after an error) */
    for (int i = 0; i <= st->nchild; i++)
        if (st->rq[i] && kumi_match_unpost(st->rq[i])) {
            kumi_req_free(st->rq[i]);
            st->rq[i] = NULL;
            st->subs--;
        }
    if (rc == MPI_SUCCESS) {
        MPI_Comm h = MPI_COMM_NULL;
        rc = st->inter ? st->finish(st->comm, ctx, lctx, st->info, &h, st->fn)
                       : kumi_comm_dup_finish(st->comm, ctx, st->info, &h, st->fn);
        st->info = NULL;
        if (rc == MPI_SUCCESS) *st->newcomm = h;
    } else if (st->info) {
        kumi_info_release(st->info);
        st->info = NULL;
    }
    struct kumi_comm *parent = st->comm;
    struct idup **pp = &idups;
    while (*pp != st) pp = &(*pp)->next;
    *pp = st->next;
    struct idup *next = NULL;
    for (struct idup *o = idups; o; o = o->next)
        if (o->comm == parent) { next = o; break; }
    st->req = NULL;
    r->ext = NULL;
    r->status.MPI_ERROR = rc;
    r->pending = 0;
    if (st->subs == 0) idup_free_state(st);
    kumi_req_check_complete(r);         /* frees r if MPI_Request_free'd */
    if (next && next->state == IDUP_QUEUED) {
        next->state = next->vsize == 1 ? IDUP_LOCAL : IDUP_START;
        next->ag.next = inflight;
        inflight = &next->ag;
        idup_advance(next);
    }
    idup_kick();
}

/* Run the state machine as far as it goes without waiting. */
static void idup_advance(struct idup *st)
{
    if (st->busy) return;
    st->busy = true;
    for (;;) {
        if (st->err != MPI_SUCCESS && st->wait == 0 && st->state != IDUP_DONE) {
            if (st->mine) { mask_owned = false; st->mine = false; }
            idup_finish(st, 0, 0, st->err);
            return;                     /* st may be gone */
        }
        switch (st->state) {
        case IDUP_LOCAL:                /* a group of one: no messages, take a pair when free */
            if (mask_owned) goto out;
            {
                int32_t ctx = 0;
                uint32_t mine[MASK_WORDS];
                kumi_ctx_mask(mine);
                int rc = take_ctx(mine, &ctx);
                idup_finish(st, ctx, 0, rc);
            }
            return;
        case IDUP_START: {
            uint32_t in[AGREE_WORDS];
            st->mine = st->round > 0 && !mask_owned && lowest_active(st->ag.key);
            if (st->mine) {
                mask_owned = true;
                kumi_ctx_mask(in);
                in[MASK_WORDS] = 1;
            } else {
                memset(in, 0, sizeof in);
            }
            memcpy(st->acc, in, sizeof in);
            st->state = IDUP_REDUCE;
            for (int i = 0; i < st->nchild; i++)
                idup_msg(st, false, st->child[i], IDUP_TAG_REDUCE, st->cbuf[i], i);
            break;
        }
        case IDUP_REDUCE:
            if (st->wait > 0) goto out;
            for (int i = 0; i < st->nchild; i++)
                for (int k = 0; k < AGREE_WORDS; k++) st->acc[k] &= st->cbuf[i][k];
            if (st->parent < 0) {
                memcpy(st->res, st->acc, sizeof st->res);
                st->state = IDUP_FANOUT;
            } else {
                st->state = IDUP_BCAST;
                idup_msg(st, false, st->parent, IDUP_TAG_BCAST, st->res, st->nchild);
                idup_msg(st, true, st->parent, IDUP_TAG_REDUCE, st->acc, -1);
            }
            break;
        case IDUP_BCAST:
            if (st->wait > 0) goto out;
            st->state = IDUP_FANOUT;
            break;
        case IDUP_FANOUT:
            for (int i = st->nchild - 1; i >= 0; i--)
                idup_msg(st, true, st->child[i], IDUP_TAG_BCAST, st->res, -1);
            if (st->mine) {
                mask_owned = false;
                st->mine = false;
                idup_kick();
            }
            if (st->err != MPI_SUCCESS) break;
            if (st->res[MASK_WORDS]) {  /* every member offered its mask */
                int32_t ctx = 0, lctx = 0;
                int rc = take_ctx(st->res, &ctx);
                if (rc == MPI_SUCCESS && st->inter) {   /* and the local intracommunicator's */
                    st->res[ctx / 64] &= ~(1u << (ctx / 2 % 32));
                    rc = take_ctx(st->res, &lctx);
                    if (rc) kumi_ctx_free(ctx);
                }
                idup_finish(st, ctx, lctx, rc);
                return;
            }
            st->ag.active = true;       /* (after round 0) */
            st->round++;
            st->state = IDUP_START;
            break;
        default:
            goto out;
        }
    }
out:
    st->busy = false;
}

/* A group-of-one idup waits for the mask; run those that can go now. */
static void idup_kick(void)
{
    bool again = true;
    while (again && !mask_owned) {
        again = false;
        for (struct idup *o = idups; o; o = o->next)
            if (o->state == IDUP_LOCAL && !o->busy) {
                idup_advance(o);        /* finishes it: the list changed */
                again = true;
                break;
            }
    }
}

/* MPI_Comm_idup: completes in the progress engine; not cancellable, not persistent */
static const struct kumi_req_ops idup_req_ops = { .name = "MPI_Comm_idup" };

void kumi_idup_register(void)
{
    kumi_req_register_kind(KUMI_REQ_IDUP, &idup_req_ops);
}

int kumi_comm_idup_start(struct kumi_comm *comm, struct kumi_info *info, MPI_Comm *newcomm, MPI_Request *request,
                         const char *fn, kumi_idup_inter_fn finish)
{
    if (comm->inter && (!finish || !comm->local_comm))
        return kumi_error(MPI_ERR_INTERN, "%s: no way to build an intercommunicator's duplicate", fn);
    struct kumi_req *r = kumi_req_new(KUMI_REQ_IDUP, comm, comm->ctx, fn, true);
    if (!r) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
    struct idup *st = calloc(1, sizeof *st);
    int rc = st ? kumi_comm_info_copy(info, &st->info, fn)
                : kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    if (rc) { free(st); kumi_req_free(r); return rc; }
    st->req = r;
    st->comm = comm;
    st->newcomm = newcomm;
    st->fn = fn;
    st->ag.key = ((uint64_t)(uint32_t)comm->ctx << 32) | KEY_IDUP;
    int v = comm->rank;                 /* this process's member number in the tree */
    st->vsize = comm->size;
    if (comm->inter) {
        st->inter = true;
        st->finish = finish;
        st->low = kumi_req_peer_before(kumi_comm_world_rank(comm, 0), comm->remote_world[0]);
        st->vsize += comm->remote_size;
        if (!st->low) v += comm->remote_size;
    }
    st->parent = v ? v - (v & -v) : -1;
    for (int mask = 1; mask < st->vsize && !(v & mask); mask <<= 1)
        if (v + mask < st->vsize) st->child[st->nchild++] = v + mask;
    if (st->nchild && !(st->cbuf = calloc((size_t)st->nchild, sizeof *st->cbuf))) {
        if (st->info) kumi_info_release(st->info);
        free(st);
        kumi_req_free(r);
        return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    }
    r->ext = st;
    /* queue behind the idups of the same parent still in flight */
    bool first = true;
    struct idup **pp = &idups;
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->comm == comm) first = false;
    *pp = st;
    *request = (MPI_Request)r;
    st->state = IDUP_QUEUED;
    if (first) {
        st->state = st->vsize == 1 ? IDUP_LOCAL : IDUP_START;
        st->ag.next = inflight;
        inflight = &st->ag;
        idup_advance(st);               /* posts the first round; may even complete */
        kumi_req_flush_ctl();
    }
    return MPI_SUCCESS;
}
