/* Communicators: MPI_COMM_WORLD, MPI_COMM_SELF, dup (with info, idup),
 * split, split_type, create, create_group, free, compare, names, info, and
 * context-id agreement.
 *
 * Context ids come in pairs (ctx for point-to-point, ctx+1 for
 * collectives).  Pair 0 is MPI_COMM_WORLD, pair 1 MPI_COMM_SELF, pair 2 the
 * hidden whole-job "bootstrap" communicator that carries the agreements of
 * MPI_Comm_create_from_group (no parent communicator; usable before MPI_Init).
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
 * their copy callbacks, topology, info) and the request completes. */
#include "core/core.h"
#include "core/check.h"
#include "request/request.h"
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef KUMI_HAVE_HWLOC
#include <hwloc.h>
#endif

#define CTX_PAIRS KUMI_CTX_PAIRS         /* core/ids.h */
#define MASK_WORDS (CTX_PAIRS / 32)
#define AGREE_WORDS (MASK_WORDS + 1)    /* + 1 word: "I contributed my real mask" */
#define CTX_BOOT KUMI_CTX_BOOT            /* pair 2 */
#define KEY_COMM KUMI_KEY_COMM           /* low key word of agreements over a whole parent */
static uint32_t ctx_free[MASK_WORDS];   /* bit set: pair free */

/* Agreements in flight on this process, and whether one owns the mask.
 * active: past the arrival round (see above). */
struct ctx_agreement { uint64_t key; bool active; struct ctx_agreement *next; };
static struct ctx_agreement *inflight;
static bool mask_owned;
static void idup_kick(void);

struct kumi_comm kumi_comm_world_obj, kumi_comm_self_obj;
static struct kumi_comm boot_obj;       /* whole job, identity, ctx CTX_BOOT (never a user handle) */

void kumi_comm_init_ctx(void)
{
    for (int i = 0; i < MASK_WORDS; i++) ctx_free[i] = 0xffffffffu;
    ctx_free[0] &= ~7u;   /* pair 0: world, pair 1: self, pair 2: bootstrap */
}

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
        ctx_free[w] &= ~(1u << b);
        *ctx = (int32_t)(2 * (w * 32 + b));
        return MPI_SUCCESS;
    }
    return kumi_error(MPI_ERR_INTERN, "no free context id left (%d communicators exist)", CTX_PAIRS);
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
            memcpy(in, ctx_free, sizeof ctx_free);
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
    if (!carrier) carrier = &boot_obj;
    if (g->rank == MPI_UNDEFINED)
        return kumi_error(MPI_ERR_GROUP, "context id agreement: this process is not a member of the group");
    struct band_group b = { carrier, g->size, g->rank, NULL, 0 };
    b.peer = malloc(sizeof(int) * (size_t)g->size);
    if (!b.peer) return kumi_error(MPI_ERR_NO_MEM, "out of memory agreeing on a context id");
    for (int i = 0; i < g->size; i++) {
        int r = carrier == &boot_obj ? g->world[i] : MPI_UNDEFINED;
        if (carrier != &boot_obj)
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

void kumi_ctx_free(int32_t ctx)
{
    int pair = ctx / 2;
    if (pair > 2 && pair < CTX_PAIRS) ctx_free[pair / 32] |= 1u << (pair % 32);
}

static void comm_setup(struct kumi_comm *c, int rank, int size, int *world, int32_t ctx,
                       struct kumi_errhandler *errh)
{
    c->magic = KUMI_MAGIC_COMM;
    c->refcount = 1;
    c->rank = rank;
    c->size = size;
    c->world = world;
    c->ctx = ctx;
    c->errh = errh;
    kumi_errh_retain(errh);
}

int kumi_comm_init_predefined(void)
{
    int me = kumi_world_rank(), n = kumi_world_size();
    kumi_comm_init_ctx();
    comm_setup(&kumi_comm_world_obj, me, n, NULL, 0, kumi_errh_fatal);
    kumi_comm_world_obj.handle = MPI_COMM_WORLD;
    kumi_comm_world_obj.predefined = true;
    strcpy(kumi_comm_world_obj.name, "MPI_COMM_WORLD");
    int *w = malloc(sizeof(int));
    if (!w) return kumi_error(MPI_ERR_NO_MEM, "MPI_Init: out of memory");
    w[0] = me;
    comm_setup(&kumi_comm_self_obj, 0, 1, w, 2, kumi_errh_fatal);
    kumi_comm_self_obj.handle = MPI_COMM_SELF;
    kumi_comm_self_obj.predefined = true;
    strcpy(kumi_comm_self_obj.name, "MPI_COMM_SELF");
    memset(&boot_obj, 0, sizeof boot_obj);
    comm_setup(&boot_obj, me, n, NULL, CTX_BOOT, kumi_errh_fatal);
    boot_obj.handle = (MPI_Comm)&boot_obj;
    boot_obj.predefined = true;
    strcpy(boot_obj.name, "(bootstrap)");
    kumi_group_init();
    kumi_predef[(uintptr_t)MPI_COMM_WORLD] = &kumi_comm_world_obj;
    kumi_predef[(uintptr_t)MPI_COMM_SELF] = &kumi_comm_self_obj;
    int rc = kumi_coll_select(&kumi_comm_world_obj);
    if (!rc) rc = kumi_coll_select(&kumi_comm_self_obj);
    return rc;
}

int kumi_comm_create_obj(int rank, int size, int *world, int32_t ctx, struct kumi_comm *parent,
                         struct kumi_comm **out)
{
    struct kumi_comm *c = calloc(1, sizeof *c);
    if (!c) {
        free(world);
        return kumi_error(MPI_ERR_NO_MEM, "out of memory creating a communicator");
    }
    comm_setup(c, rank, size, world, ctx, parent ? parent->errh : kumi_errh_fatal);
    c->handle = (MPI_Comm)c;
    int rc = kumi_coll_select(c);
    if (rc) {
        kumi_comm_release(c);
        return rc;
    }
    *out = c;
    return MPI_SUCCESS;
}

void kumi_comm_release(struct kumi_comm *c)
{
    if (--c->refcount > 0 || c->predefined) return;
    kumi_coll_release(c);
    if (c->inter) kumi_intercomm_release(c);
    kumi_topo_free(c);
    kumi_ctx_free(c->ctx);
    kumi_errh_release(c->errh);
    if (c->info) kumi_info_release(c->info);
    free(c->world);
    c->magic = KUMI_MAGIC_DEAD;
    free(c);
}

void kumi_comm_finalize_predefined(void)
{
    kumi_errh_release(kumi_comm_world_obj.errh);
    kumi_errh_release(kumi_comm_self_obj.errh);
    kumi_errh_release(boot_obj.errh);
    free(kumi_comm_self_obj.world);
    kumi_comm_self_obj.world = NULL;
}

/* ---------------------------------------------------- exported helpers */
int kumi_comm_rank(MPI_Comm comm)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    return c ? c->rank : -1;
}

int kumi_comm_size(MPI_Comm comm)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    return c ? c->size : -1;
}

int kumi_comm_job_rank(MPI_Comm comm, int r)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    if (!c || r < 0 || r >= c->size) return -1;
    return kumi_comm_world_rank(c, r);
}

int kumi_comm_is_sub(MPI_Comm comm)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    return c && c->sub;
}

/* Sub-communicators for components (coll.h).  The context id is agreed by
 * point-to-point among the members only, in comm's collective context, with
 * a key of its own (low word 0x90000000 | key: apart from MPI_Comm_create_group's
 * tags, which are user tags >= 0 that do not reach 2^28 in practice). */
int kumi_comm_sub_create(MPI_Comm comm, int n, const int ranks[], int key, MPI_Comm *out)
{
    struct kumi_comm *p = kumi_comm_get(comm);
    if (out) *out = MPI_COMM_NULL;
    if (!p || p->inter || !out || n <= 0 || n > p->size || !ranks || key < 0 || key >= (1 << 24))
        return kumi_error(MPI_ERR_ARG, "kumi_comm_sub_create: invalid argument");
    int *w = malloc(sizeof(int) * (size_t)n), me = -1;
    if (!w) return kumi_error(MPI_ERR_NO_MEM, "kumi_comm_sub_create: out of memory");
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= p->size) {
            free(w);
            return kumi_error(MPI_ERR_RANK, "kumi_comm_sub_create: rank %d not in a communicator of size %d",
                              ranks[i], p->size);
        }
        if (ranks[i] == p->rank) me = i;
        w[i] = kumi_comm_world_rank(p, ranks[i]);
    }
    if (me < 0) {
        free(w);
        return kumi_error(MPI_ERR_RANK, "kumi_comm_sub_create: the caller is not among the ranks");
    }
    struct kumi_group *g = kumi_group_make(n, w);
    if (!g) return kumi_error(MPI_ERR_NO_MEM, "kumi_comm_sub_create: out of memory");
    int32_t ctx;
    int rc = kumi_ctx_alloc_group(p, g, ((uint64_t)(uint32_t)p->ctx << 32) | (0x90000000u | (uint32_t)key),
                                  &ctx);
    struct kumi_comm *c = NULL;
    if (!rc) {
        int *cw = malloc(sizeof(int) * (size_t)n);
        c = calloc(1, sizeof *c);
        if (!cw || !c) {
            free(cw);
            free(c);
            kumi_ctx_free(ctx);
            rc = kumi_error(MPI_ERR_NO_MEM, "kumi_comm_sub_create: out of memory");
        } else {
            memcpy(cw, g->world, sizeof(int) * (size_t)n);
            comm_setup(c, me, n, cw, ctx, kumi_errh_fatal);
            c->handle = (MPI_Comm)c;
            c->sub = true;                      /* before the components see it */
            snprintf(c->name, sizeof c->name, "%s", "(sub-communicator)");
            rc = kumi_coll_select(c);
            if (rc) kumi_comm_release(c);
        }
    }
    kumi_group_release(g);
    if (rc) return rc;
    *out = c->handle;
    return MPI_SUCCESS;
}

void kumi_comm_sub_free(MPI_Comm *comm)
{
    struct kumi_comm *c = comm ? kumi_comm_get(*comm) : NULL;
    if (!c || !c->sub) return;
    kumi_comm_release(c);
    *comm = MPI_COMM_NULL;
}

/* ------------------------------------------------------- MPI functions */
int kumi_mpi_comm_rank(struct kumi_comm *comm, int *rank)
{
    if (!rank) return kumi_error(MPI_ERR_ARG, "MPI_Comm_rank: argument rank is NULL");
    *rank = comm->rank;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_size(struct kumi_comm *comm, int *size)
{
    if (!size) return kumi_error(MPI_ERR_ARG, "MPI_Comm_size: argument size is NULL");
    *size = comm->size;
    return MPI_SUCCESS;
}

static int *copy_world(const struct kumi_comm *c)
{
    int *w = malloc(sizeof(int) * (size_t)c->size);
    if (w)
        for (int i = 0; i < c->size; i++) w[i] = kumi_comm_world_rank(c, i);
    return w;
}

/* info objects (info.c) */
static int info_copy(struct kumi_info *from, struct kumi_info **to, const char *fn)
{
    *to = NULL;
    if (!from) return MPI_SUCCESS;
    if (!(*to = kumi_info_dup(from))) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory copying info", fn);
    return MPI_SUCCESS;
}

static int get_info_arg(MPI_Info h, struct kumi_info **out, const char *fn)
{
    *out = NULL;
    if (h == MPI_INFO_NULL) return MPI_SUCCESS;
    if (!(*out = kumi_info_get(h)))
        return kumi_error(MPI_ERR_INFO, "%s: argument info (%p) is not a valid info object", fn, (void *)h);
    return MPI_SUCCESS;
}

/* The tail of every duplication, once the context id ctx is agreed: the
 * communicator object over comm's group, with hints ni (taken), comm's
 * error handler, a copy of its topology and its attributes (copy
 * callbacks).  On failure ctx and ni are given back. */
static int dup_finish(struct kumi_comm *comm, int32_t ctx, struct kumi_info *ni, MPI_Comm *newcomm,
                      const char *fn)
{
    int *w = NULL;
    if (comm->world || comm->size != kumi_world_size()) {
        if (!(w = copy_world(comm))) {
            kumi_ctx_free(ctx);
            if (ni) kumi_info_release(ni);
            return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        }
    }
    struct kumi_comm *c;
    int rc = kumi_comm_create_obj(comm->rank, comm->size, w, ctx, comm, &c);
    if (rc) {
        kumi_ctx_free(ctx);
        if (ni) kumi_info_release(ni);
        return rc;
    }
    c->info = ni;
    rc = kumi_topo_dup(comm, c);
    if (rc) {
        kumi_comm_release(c);
        return rc;
    }
    rc = kumi_attr_comm_dup(comm, c);
    if (rc) {
        kumi_comm_release(c);
        return rc;
    }
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

/* Duplicate comm: new context, same group, attributes copied (copy
 * callbacks), info hints = info (or comm's when use_comm_info). */
static int comm_dup(struct kumi_comm *comm, struct kumi_info *info, bool use_comm_info, MPI_Comm *newcomm,
                    const char *fn)
{
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    if (comm->inter) return kumi_intercomm_dup(comm, use_comm_info ? comm->info : info, newcomm, fn);
    struct kumi_info *ni;
    int rc = info_copy(use_comm_info ? comm->info : info, &ni, fn);
    if (rc) return rc;
    int32_t ctx;
    rc = kumi_ctx_alloc(comm, &ctx);
    if (rc) {
        if (ni) kumi_info_release(ni);
        return rc;
    }
    return dup_finish(comm, ctx, ni, newcomm, fn);
}

int kumi_mpi_comm_dup(struct kumi_comm *comm, MPI_Comm *newcomm)
{
    return comm_dup(comm, NULL, true, newcomm, "MPI_Comm_dup");
}

int kumi_mpi_comm_dup_with_info(struct kumi_comm *comm, MPI_Info info, MPI_Comm *newcomm)
{
    struct kumi_info *i;
    int rc = get_info_arg(info, &i, "MPI_Comm_dup_with_info");
    return rc ? rc : comm_dup(comm, i, false, newcomm, "MPI_Comm_dup_with_info");
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
    bool mine;                          /* this round offers (and owns) the mask */
    bool busy;                          /* idup_advance is running */
    int err;
    int wait;                           /* receives of this phase not yet complete */
    int subs;                           /* internal requests that point here */
    int parent;                         /* binomial tree: parent rank (-1 at rank 0) */
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

/* An internal message of the agreement; send: data copied (freed with the request). */
static void idup_msg(struct idup *st, bool send, int peer, int tag, uint32_t *buf, int slot)
{
    struct kumi_comm *c = st->comm;
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
static void idup_finish(struct idup *st, int32_t ctx, int rc)
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
        rc = dup_finish(st->comm, ctx, st->info, &h, st->fn);
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
        next->state = next->comm->size == 1 ? IDUP_LOCAL : IDUP_START;
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
            idup_finish(st, 0, st->err);
            return;                     /* st may be gone */
        }
        switch (st->state) {
        case IDUP_LOCAL:                /* a group of one: no messages, take a pair when free */
            if (mask_owned) goto out;
            {
                int32_t ctx = 0;
                int rc = take_ctx(ctx_free, &ctx);
                idup_finish(st, ctx, rc);
            }
            return;
        case IDUP_START: {
            uint32_t in[AGREE_WORDS];
            st->mine = st->round > 0 && !mask_owned && lowest_active(st->ag.key);
            if (st->mine) {
                mask_owned = true;
                memcpy(in, ctx_free, sizeof ctx_free);
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
                int32_t ctx = 0;
                int rc = take_ctx(st->res, &ctx);
                idup_finish(st, ctx, rc);
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

static int comm_idup(struct kumi_comm *comm, struct kumi_info *info, bool use_comm_info, MPI_Comm *newcomm,
                     MPI_Request *request, const char *fn)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "%s: argument request is NULL", fn);
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    struct kumi_req *r = kumi_req_new(KUMI_REQ_IDUP, comm, comm->ctx, fn, true);
    if (!r) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
    if (comm->inter) {
        /* Intercommunicators: duplicated inside the call (blocking). */
        int rc = kumi_intercomm_dup(comm, use_comm_info ? comm->info : info, newcomm, fn);
        if (rc) { kumi_req_free(r); return rc; }
        r->pending = 0;
        kumi_req_check_complete(r);
        *request = (MPI_Request)r;
        return MPI_SUCCESS;
    }
    struct idup *st = calloc(1, sizeof *st);
    int rc = st ? info_copy(use_comm_info ? comm->info : info, &st->info, fn)
                : kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    if (rc) { free(st); kumi_req_free(r); return rc; }
    st->req = r;
    st->comm = comm;
    st->newcomm = newcomm;
    st->fn = fn;
    st->ag.key = ((uint64_t)(uint32_t)comm->ctx << 32) | KEY_IDUP;
    st->parent = comm->rank ? comm->rank - (comm->rank & -comm->rank) : -1;
    for (int mask = 1; mask < comm->size && !(comm->rank & mask); mask <<= 1)
        if (comm->rank + mask < comm->size) st->child[st->nchild++] = comm->rank + mask;
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
        st->state = comm->size == 1 ? IDUP_LOCAL : IDUP_START;
        st->ag.next = inflight;
        inflight = &st->ag;
        idup_advance(st);               /* posts the first round; may even complete */
        kumi_req_flush_ctl();
    }
    return MPI_SUCCESS;
}

int kumi_mpi_comm_idup(struct kumi_comm *comm, MPI_Comm *newcomm, MPI_Request *request)
{
    return comm_idup(comm, NULL, true, newcomm, request, "MPI_Comm_idup");
}

int kumi_mpi_comm_idup_with_info(struct kumi_comm *comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *request)
{
    if (!request) return kumi_error(MPI_ERR_ARG, "MPI_Comm_idup_with_info: argument request is NULL");
    struct kumi_info *i;
    int rc = get_info_arg(info, &i, "MPI_Comm_idup_with_info");
    return rc ? rc : comm_idup(comm, i, false, newcomm, request, "MPI_Comm_idup_with_info");
}

int kumi_mpi_comm_set_info(struct kumi_comm *comm, MPI_Info info)
{
    struct kumi_info *i, *ni;
    int rc = get_info_arg(info, &i, "MPI_Comm_set_info");
    if (!rc) rc = info_copy(i, &ni, "MPI_Comm_set_info");
    if (rc) return rc;
    if (comm->info) kumi_info_release(comm->info);
    comm->info = ni;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_get_info(struct kumi_comm *comm, MPI_Info *info_used)
{
    if (!info_used) return kumi_error(MPI_ERR_ARG, "MPI_Comm_get_info: argument info_used is NULL");
    struct kumi_info *i = kumi_info_dup(comm->info);
    if (!i) return kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_get_info: out of memory");
    int rc = kumi_info_set_value(i, "mpi_memory_alloc_kinds", kumi_memkinds_world());
    if (rc) {
        kumi_info_release(i);
        return rc;
    }
    *info_used = kumi_info_handle(i);
    return MPI_SUCCESS;
}

struct split_entry { int color, key, rank; };

static int split_cmp(const void *a, const void *b)
{
    const struct split_entry *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

int kumi_mpi_comm_split(struct kumi_comm *comm, int color, int key, MPI_Comm *newcomm)
{
    if (comm->inter) return kumi_intercomm_split(comm, color, key, newcomm);
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "MPI_Comm_split: argument newcomm is NULL");
    if (color < 0 && color != MPI_UNDEFINED)
        return kumi_error(MPI_ERR_ARG, "MPI_Comm_split: invalid color %d (argument color must be non-negative or MPI_UNDEFINED)", color);
    int n = comm->size;
    int mine[2] = { color, key };
    int *all = malloc(sizeof(int) * 2 * (size_t)n);
    struct split_entry *e = malloc(sizeof *e * (size_t)n);
    if (!all || !e) {
        free(all);
        free(e);
        return kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_split: out of memory");
    }
    int rc = comm->coll.allgather(mine, 2, MPI_INT, all, 2, MPI_INT, (MPI_Comm)comm);
    int32_t ctx = 0;
    if (!rc) rc = kumi_ctx_alloc(comm, &ctx);
    if (rc) {
        free(all);
        free(e);
        return rc;
    }
    if (color == MPI_UNDEFINED) {
        kumi_ctx_free(ctx);
        free(all);
        free(e);
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    int m = 0;
    for (int r = 0; r < n; r++)
        if (all[2 * r] == color) {
            e[m].color = color;
            e[m].key = all[2 * r + 1];
            e[m].rank = r;
            m++;
        }
    qsort(e, (size_t)m, sizeof *e, split_cmp);
    int *w = malloc(sizeof(int) * (size_t)m);
    int myrank = -1;
    if (!w) rc = kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_split: out of memory");
    else
        for (int i = 0; i < m; i++) {
            w[i] = kumi_comm_world_rank(comm, e[i].rank);
            if (e[i].rank == comm->rank) myrank = i;
        }
    free(all);
    free(e);
    struct kumi_comm *c = NULL;
    if (!rc) rc = kumi_comm_create_obj(myrank, m, w, ctx, comm, &c);
    if (rc) {
        kumi_ctx_free(ctx);
        return rc;
    }
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_free(MPI_Comm *comm)
{
    if (!comm) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Comm_free: argument comm is NULL"));
    struct kumi_comm *c = kumi_comm_get(*comm);
    if (!c) return kumi_err_handle(NULL, kumi_chk_bad_comm("MPI_Comm_free", "comm", *comm));
    if (c->predefined)
        return kumi_err_handle(c, kumi_error(MPI_ERR_COMM, "MPI_Comm_free: cannot free %s", c->name));
    int rc = kumi_attr_comm_free(c);
    if (rc) return kumi_err_handle(c, rc);
    kumi_comm_release(c);
    *comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}

static int int_cmp(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

int kumi_mpi_comm_compare(struct kumi_comm *comm1, struct kumi_comm *comm2, int *result)
{
    if (comm1->inter || comm2->inter) return kumi_intercomm_compare(comm1, comm2, result);
    if (!result) return kumi_error(MPI_ERR_ARG, "MPI_Comm_compare: argument result is NULL");
    if (comm1 == comm2) { *result = MPI_IDENT; return MPI_SUCCESS; }
    if (comm1->size != comm2->size) { *result = MPI_UNEQUAL; return MPI_SUCCESS; }
    int n = comm1->size, same_order = 1;
    for (int i = 0; i < n; i++)
        if (kumi_comm_world_rank(comm1, i) != kumi_comm_world_rank(comm2, i)) { same_order = 0; break; }
    if (same_order) { *result = MPI_CONGRUENT; return MPI_SUCCESS; }
    /* same set of processes in another order? */
    int *a = copy_world(comm1), *b = copy_world(comm2);
    if (!a || !b) {
        free(a); free(b);
        return kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_compare: out of memory");
    }
    qsort(a, (size_t)n, sizeof(int), int_cmp);
    qsort(b, (size_t)n, sizeof(int), int_cmp);
    *result = memcmp(a, b, sizeof(int) * (size_t)n) ? MPI_UNEQUAL : MPI_SIMILAR;
    free(a);
    free(b);
    return MPI_SUCCESS;
}

int kumi_mpi_comm_set_name(struct kumi_comm *comm, const char *comm_name)
{
    if (!comm_name) return kumi_error(MPI_ERR_ARG, "MPI_Comm_set_name: argument comm_name is NULL");
    snprintf(comm->name, sizeof comm->name, "%s", comm_name);
    return MPI_SUCCESS;
}

int kumi_mpi_comm_get_name(struct kumi_comm *comm, char *comm_name, int *resultlen)
{
    if (!comm_name || !resultlen)
        return kumi_error(MPI_ERR_ARG, "MPI_Comm_get_name: argument %s is NULL", comm_name ? "resultlen" : "comm_name");
    snprintf(comm_name, MPI_MAX_OBJECT_NAME, "%s", comm->name);
    *resultlen = (int)strlen(comm_name);
    return MPI_SUCCESS;
}

/* ------------------------------------------------ create from groups */
/* 1 if every member of g is a rank of comm. */
static int group_in_comm(const struct kumi_group *g, const struct kumi_comm *comm)
{
    for (int i = 0; i < g->size; i++) {
        int found = 0;
        for (int j = 0; j < comm->size && !found; j++) found = kumi_comm_world_rank(comm, j) == g->world[i];
        if (!found) return 0;
    }
    return 1;
}

/* The communicator of group g (this process a member) with context ctx;
 * on failure the context is given back. */
static int comm_of_group(const struct kumi_group *g, int32_t ctx, struct kumi_comm *parent,
                         struct kumi_comm **out, const char *fn)
{
    int rc;
    int *w = malloc(sizeof(int) * (size_t)g->size);
    if (!w) {
        rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    } else {
        memcpy(w, g->world, sizeof(int) * (size_t)g->size);
        rc = kumi_comm_create_obj(g->rank, g->size, w, ctx, parent, out);
    }
    if (rc) kumi_ctx_free(ctx);
    return rc;
}

int kumi_mpi_comm_create(struct kumi_comm *comm, MPI_Group group, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_create";
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    struct kumi_group *g = kumi_group_get(group);
    if (!g) return kumi_error(MPI_ERR_GROUP, "%s: argument group is not a valid group", fn);
    if (comm->inter) return kumi_intercomm_create_sub(comm, g, newcomm);
    /* MPI-3: the groups may differ between ranks when they are disjoint;
     * one agreement over comm gives all of them the same (safe) context. */
    int bad = !group_in_comm(g, comm);
    int32_t ctx;
    int rc = kumi_ctx_alloc(comm, &ctx);
    if (rc) return rc;
    if (bad || g->rank == MPI_UNDEFINED) {
        kumi_ctx_free(ctx);
        *newcomm = MPI_COMM_NULL;
        return bad ? kumi_error(MPI_ERR_GROUP, "%s: argument group is not a subset of the group of comm", fn)
                   : MPI_SUCCESS;
    }
    struct kumi_comm *c;
    rc = comm_of_group(g, ctx, comm, &c, fn);
    if (rc) return rc;
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_create_group(struct kumi_comm *comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_create_group";
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    struct kumi_group *g = kumi_group_get(group);
    if (!g) return kumi_error(MPI_ERR_GROUP, "%s: argument group is not a valid group", fn);
    if (comm->inter) return kumi_error(MPI_ERR_COMM, "%s: intercommunicators are not supported here yet", fn);
    if (!group_in_comm(g, comm))
        return kumi_error(MPI_ERR_GROUP, "%s: argument group is not a subset of the group of comm", fn);
    if (g->rank == MPI_UNDEFINED) {
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    int32_t ctx;
    int rc = kumi_ctx_alloc_group(comm, g, ((uint64_t)(uint32_t)comm->ctx << 32) | (uint32_t)tag, &ctx);
    if (rc) return rc;
    struct kumi_comm *c;
    rc = comm_of_group(g, ctx, comm, &c, fn);
    if (rc) return rc;
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

/* Communicator of a group derived from a session (or any group), collective
 * over the group only; agreed through the bootstrap communicator with a key
 * made from the string tag. */
int kumi_comm_from_group(struct kumi_group *g, const char *stringtag, struct kumi_info *info,
                         struct kumi_errhandler *errh, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_create_from_group";
    if (g->rank == MPI_UNDEFINED) {
        *newcomm = MPI_COMM_NULL;
        return kumi_error(MPI_ERR_GROUP, "%s: the calling process is not a member of argument group", fn);
    }
    uint32_t h = 2166136261u;                   /* FNV-1a of the tag */
    for (const unsigned char *p = (const unsigned char *)stringtag; *p; p++) h = (h ^ *p) * 16777619u;
    int32_t ctx;
    int rc = kumi_ctx_alloc_group(NULL, g, ((uint64_t)CTX_BOOT << 32) | (h & 0x7fffffffu), &ctx);
    if (rc) return rc;
    struct kumi_info *ni;
    rc = info_copy(info, &ni, fn);
    if (rc) {
        kumi_ctx_free(ctx);
        return rc;
    }
    struct kumi_comm *c;
    rc = comm_of_group(g, ctx, NULL, &c, fn);
    if (rc) {
        if (ni) kumi_info_release(ni);
        return rc;
    }
    c->info = ni;
    if (errh) {
        kumi_errh_retain(errh);
        kumi_errh_release(c->errh);
        c->errh = errh;
    }
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------ split by type */
#define SPLIT_STR 256

/* color: the lowest comm rank whose string equals mine (s NULL: undefined).
 * Also *nparts = number of distinct defined strings, *maxpart = largest part. */
static int color_by_string(struct kumi_comm *comm, const char *s, int *color, int *nparts, int *maxpart)
{
    int n = comm->size;
    char mine[SPLIT_STR];
    memset(mine, 0, sizeof mine);
    if (s) snprintf(mine + 1, sizeof mine - 1, "%s", s), mine[0] = 1;
    char *all = malloc((size_t)n * SPLIT_STR);
    if (!all) return kumi_error(MPI_ERR_NO_MEM, "MPI_Comm_split_type: out of memory");
    int rc = comm->coll.allgather(mine, SPLIT_STR, MPI_CHAR, all, SPLIT_STR, MPI_CHAR, (MPI_Comm)comm);
    if (rc) { free(all); return rc; }
    *color = MPI_UNDEFINED;
    *nparts = 0;
    *maxpart = 0;
    for (int r = 0; r < n; r++) {
        const char *e = all + (size_t)r * SPLIT_STR;
        if (!e[0]) continue;
        int first = r, cnt = 0;
        for (int q = 0; q < n; q++) {
            const char *f = all + (size_t)q * SPLIT_STR;
            if (f[0] && !strcmp(f + 1, e + 1)) {
                if (q < first) first = q;
                cnt++;
            }
        }
        if (first == r) (*nparts)++;
        if (cnt > *maxpart) *maxpart = cnt;
        if (r == comm->rank) *color = first;
    }
    free(all);
    return MPI_SUCCESS;
}

#ifdef KUMI_HAVE_HWLOC
static hwloc_topology_t topo;
static int topo_state;                          /* 0 not tried, 1 loaded, -1 failed */

/* "host/type#index" of the object of hwloc type name that contains this
 * process's binding into buf; 0 if there is none (unknown type, or the
 * binding spans several such objects). */
static int hw_where(const char *type, char *buf, size_t len)
{
    if (topo_state == 0) {
        topo_state = -1;
        if (hwloc_topology_init(&topo) == 0) {
            if (hwloc_topology_load(topo) == 0) topo_state = 1;
            else hwloc_topology_destroy(topo);
        }
    }
    if (topo_state != 1) return 0;
    hwloc_obj_type_t t;
    if (hwloc_type_sscanf(type, &t, NULL, 0) != 0) return 0;
    int depth = hwloc_get_type_depth(topo, t);
    if (depth == HWLOC_TYPE_DEPTH_UNKNOWN || depth == HWLOC_TYPE_DEPTH_MULTIPLE) return 0;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) return 0;
    int found = 0;
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(set)) {
        unsigned nobj = (unsigned)hwloc_get_nbobjs_by_depth(topo, depth);
        for (unsigned i = 0; i < nobj; i++) {
            hwloc_obj_t o = hwloc_get_obj_by_depth(topo, depth, i);
            if (o && o->cpuset && hwloc_bitmap_isincluded(set, o->cpuset)) {
                snprintf(buf, len, "%s/%s#%u", kumi_hostname(), type, o->logical_index);
                found = 1;
                break;
            }
        }
    }
    hwloc_bitmap_free(set);
    return found;
}
#else
static int hw_where(const char *type, char *buf, size_t len)
{
    (void)type; (void)buf; (void)len;
    return 0;
}
#endif

/* Where this process is at level type ("mpi_shared_memory": the host). */
static const char *level_string(const char *type, char *buf, size_t len)
{
    if (!strcmp(type, "mpi_shared_memory")) {
        snprintf(buf, len, "%s", kumi_hostname());
        return buf;
    }
    return hw_where(type, buf, len) ? buf : NULL;
}

static int split_with_info(struct kumi_comm *comm, int color, int key, const char *level, MPI_Comm *newcomm)
{
    int rc = kumi_mpi_comm_split(comm, color, key, newcomm);
    if (rc || *newcomm == MPI_COMM_NULL || !level) return rc;
    struct kumi_comm *c = kumi_comm_get(*newcomm);
    if (!c->info && !(c->info = kumi_info_dup(NULL))) return MPI_SUCCESS;
    kumi_info_set_value(c->info, "mpi_hw_resource_type", level);
    return MPI_SUCCESS;
}

int kumi_mpi_comm_split_type(struct kumi_comm *comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_split_type";
    static const char *const unguided[] = {
        "mpi_shared_memory", "Package", "NUMANode", "L3Cache", "L2Cache", "L1Cache", "Core", "PU" };
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    if (comm->inter) return kumi_error(MPI_ERR_COMM, "%s: intercommunicators are not supported here yet", fn);
    struct kumi_info *inf;
    int rc = get_info_arg(info, &inf, fn);
    if (rc) return rc;
    char buf[SPLIT_STR - 1];
    int color, nparts, maxpart;
    /* ranks passing MPI_UNDEFINED take part in the exchanges of the others' type */
    int undef = split_type == MPI_UNDEFINED, type_all = split_type;
    rc = comm->coll.allreduce(&split_type, &type_all, 1, MPI_INT, MPI_MAX, (MPI_Comm)comm);
    if (rc) return rc;
    switch (type_all) {
    case MPI_UNDEFINED:
        return kumi_mpi_comm_split(comm, MPI_UNDEFINED, key, newcomm);
    case MPI_COMM_TYPE_SHARED:
        rc = color_by_string(comm, undef ? NULL : kumi_hostname(), &color, &nparts, &maxpart);
        return rc ? rc : split_with_info(comm, color, key, "mpi_shared_memory", newcomm);
    case MPI_COMM_TYPE_HW_GUIDED:
    case MPI_COMM_TYPE_RESOURCE_GUIDED: {
        const char *type = !undef && inf ? kumi_info_value(inf, "mpi_hw_resource_type") : NULL;
        rc = color_by_string(comm, type ? level_string(type, buf, sizeof buf) : NULL, &color, &nparts, &maxpart);
        return rc ? rc : split_with_info(comm, color, key, type, newcomm);
    }
    case MPI_COMM_TYPE_HW_UNGUIDED:
        /* the first level (outermost first) that splits comm into strictly smaller parts */
        for (size_t l = 0; l < sizeof unguided / sizeof *unguided; l++) {
            rc = color_by_string(comm, undef ? NULL : level_string(unguided[l], buf, sizeof buf), &color, &nparts,
                                 &maxpart);
            if (rc) return rc;
            if (nparts > 0 && maxpart < comm->size) return split_with_info(comm, color, key, unguided[l], newcomm);
        }
        return kumi_mpi_comm_split(comm, MPI_UNDEFINED, key, newcomm);
    default:
        /* still collective: the others wait in the split */
        rc = kumi_mpi_comm_split(comm, MPI_UNDEFINED, key, newcomm);
        return rc ? rc : kumi_error(MPI_ERR_ARG, "%s: invalid split_type %d", fn, split_type);
    }
}

int kumi_comm_boot_barrier(void)
{
    if (!boot_obj.coll.barrier) {
        int rc = kumi_coll_select(&boot_obj);
        if (rc) return rc;
    }
    return boot_obj.coll.barrier((MPI_Comm)&boot_obj);
}
