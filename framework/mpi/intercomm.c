/* Intercommunicators: MPI_Intercomm_create, MPI_Intercomm_merge,
 * MPI_Comm_test_inter, MPI_Comm_remote_size / _remote_group, and what
 * MPI_Comm_dup / _split / _create / _compare / _free do on one.
 *
 * An intercommunicator is a struct kumi_comm with inter set: rank, size and
 * world describe the local group, remote_size and remote_world the remote
 * group (which point-to-point addresses), and local_comm is an
 * intracommunicator of the local group with contexts of its own, used by the
 * local phases of collectives.  The intercommunicator's context pair (ctx
 * for point-to-point, ctx+1 for collectives) is free on every process of
 * both groups.
 *
 * Agreeing that context without a communicator that spans both groups: each
 * group takes the lowest id free on all its members (kumi_ctx_alloc over its
 * local intracommunicator); the two leaders exchange their candidates; the
 * group whose candidate is the smaller keeps it aside and takes its next
 * free id, until both candidates are equal (a merge of two sorted lists: the
 * result is the lowest id free on both groups).  The ids kept aside are then
 * released.  Usually the first candidates already agree.
 *
 * A component's context-id rule (kumi_ctx_rule_set: coll/impi's IMPI rule,
 * when the two groups together span IMPI clients) replaces that agreement
 * in MPI_Intercomm_create, MPI_Intercomm_merge and the intercommunicator's
 * dup / split / create (ic_derive): kumi_ctx_rule_agree_inter. */
#include "mpi/mpi_front.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tags in an intercommunicator's collective context for the leaders'
 * exchanges here (coll components use small tags). */
enum { IC_TAG_CTX = KUMI_TAG_IC_CTX, IC_TAG_MERGE = KUMI_TAG_IC_MERGE };   /* core/ids.h */

#define TRY(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) return rc_; } while (0)

static int nomem(const char *fn)
{
    return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
}

/* ------------------------------------------------ helpers for coll components */
int kumi_comm_is_inter(MPI_Comm comm)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    return c && c->inter;
}

int kumi_comm_remote_size(MPI_Comm comm)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    return c && c->inter ? c->remote_size : -1;
}

MPI_Comm kumi_comm_local(MPI_Comm comm)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    if (!c) return MPI_COMM_NULL;
    if (!c->inter) return c->handle;
    return c->local_comm ? c->local_comm->handle : MPI_COMM_NULL;
}

const struct kumi_coll_fns *kumi_comm_coll(MPI_Comm comm)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    return c ? &c->coll : NULL;
}

const struct kumi_coll_fns *kumi_comm_coll_next(MPI_Comm comm)
{
    struct kumi_comm *c = kumi_comm_get(comm);
    return c ? &c->coll_next : NULL;
}

/* ---------------------------------------------------------- leaders' link */
/* How the two groups' leaders talk: over peer_comm with the user's tag
 * (MPI_Intercomm_create), over an existing intercommunicator between
 * local rank 0 and remote rank 0, in its collective context, or (xfn set:
 * MPI_Comm_accept / connect / join) over the leaders' socket xfd, as blobs
 * (mpi/dpm_port.c), each exchange within xto seconds. */
struct ic_link {
    struct kumi_comm *lc;       /* intracommunicator of the local group */
    int leader;                 /* the leader's rank in lc */
    struct kumi_comm *peer;     /* peer_comm, or NULL: use inter */
    int remote;                 /* the other leader's rank in peer */
    int tag;
    struct kumi_comm *inter;
    const char *xfn;            /* the MPI procedure, for the socket's errors; NULL: no socket */
    int xfd;
    double xto;
};

static int link_xchg(const struct ic_link *l, const void *s, int scount, void *r, int rcount,
                     MPI_Datatype dt)
{
    if (l->xfn) {
        size_t sz = kumi_dt_get(dt)->size, glen = 0;
        void *got = NULL;
        int rc = kumi_dpm_send_blob(l->xfn, l->xfd, s, (size_t)scount * sz, l->xto);
        if (!rc) rc = kumi_dpm_recv_blob(l->xfn, l->xfd, &got, &glen, l->xto);
        if (!rc && glen != (size_t)rcount * sz)
            rc = kumi_error(MPI_ERR_OTHER, "%s: the other root sent %zu bytes, %zu expected", l->xfn, glen,
                            (size_t)rcount * sz);
        if (!rc) memcpy(r, got, glen);
        free(got);
        return rc;
    }
    if (l->peer) {
        struct kumi_dt *d = kumi_dt_get(dt);
        return kumi_pt2pt_sendrecv("MPI_Sendrecv", s, scount, d, l->remote, l->tag, r, rcount, d, l->remote,
                                   l->tag, l->peer, MPI_STATUS_IGNORE);
    }
    return kumi_coll_sendrecv(s, (size_t)scount, dt, 0, IC_TAG_CTX, r, (size_t)rcount, dt, 0,
                              IC_TAG_CTX, l->inter->handle);
}

/* The leader exchanges n ints with the other leader; everyone in lc gets theirs. */
static int link_xchg_bcast(const struct ic_link *l, const int *mine, int *theirs, int n)
{
    int rc = MPI_SUCCESS;
    if (l->lc->rank == l->leader) rc = link_xchg(l, mine, n, theirs, n, MPI_INT);
    int rc2 = l->lc->coll.bcast(theirs, n, MPI_INT, l->leader, (MPI_Comm)l->lc);
    return rc ? rc : rc2;
}

/* The leaders' exchange of a component's context-id rule (coll/impi's IMPI rule). */
static int link_xchg64(void *arg, const uint64_t *mine, uint64_t *theirs, int n)
{
    return link_xchg(arg, mine, n, theirs, n, MPI_UINT64_T);
}

/* A context pair free on every process of both groups (collective over both). */
static int ic_ctx_agree(const struct ic_link *l, const char *fn, int32_t *out)
{
    int32_t mine = -1, *held = NULL;
    int nheld = 0, cap = 0, rc, failed = 0;

    if (kumi_ctx_alloc(l->lc, &mine) != MPI_SUCCESS) mine = -1;
    for (;;) {
        int v = mine, theirs = -1;
        rc = link_xchg_bcast(l, &v, &theirs, 1);
        if (rc) { failed = 1; break; }
        if (mine < 0 || theirs < 0) {
            rc = kumi_error(MPI_ERR_INTERN, "%s: no context id is free in both groups", fn);
            failed = 1;
            break;
        }
        if (mine == theirs) break;
        while (mine >= 0 && mine < theirs) {
            if (nheld == cap) {
                int32_t *h = realloc(held, sizeof *h * (size_t)(cap = cap ? 2 * cap : 8));
                if (!h) {     /* out of memory: give it back and report failure to both groups */
                    kumi_ctx_free(mine);
                    mine = -1;
                    break;
                }
                held = h;
            }
            held[nheld++] = mine;
            if (kumi_ctx_alloc(l->lc, &mine) != MPI_SUCCESS) mine = -1;
        }
    }
    for (int i = 0; i < nheld; i++) kumi_ctx_free(held[i]);
    free(held);
    if (failed) {
        if (mine >= 0) kumi_ctx_free(mine);
        return rc;
    }
    kumi_log(3, "%s: context pair %d agreed by both groups (%d candidates set aside)", fn, (int)mine, nheld);
    *out = mine;
    return MPI_SUCCESS;
}

/* The new intercommunicator's context (agreed by both groups over the link)
 * and its local group's (from lc); on an error neither is held. */
static int ic_ctx_pair(const struct ic_link *l, struct kumi_comm *lc, const char *fn, int32_t *ctx, int32_t *lctx)
{
    int rc = ic_ctx_agree(l, fn, ctx);
    if (rc) return rc;
    rc = kumi_ctx_alloc(lc, lctx);
    if (rc) kumi_ctx_free(*ctx);
    return rc;
}

/* ------------------------------------------------------- making objects */
static int *world_of(const struct kumi_comm *c)
{
    int *w = malloc(sizeof(int) * (size_t)(c->size ? c->size : 1));
    if (w)
        for (int i = 0; i < c->size; i++) w[i] = kumi_comm_world_rank(c, i);
    return w;
}

/* An intercommunicator: local group lworld[0..lsize) (me at rank), remote
 * group rworld[0..rsize), context pair ctx (both groups), local
 * intracommunicator with context lctx (local group).  Takes ownership of
 * lworld, rworld and both contexts, also on failure. */
static int ic_make(int rank, int lsize, int *lworld, int rsize, int *rworld, int32_t ctx,
                   int32_t lctx, struct kumi_comm *parent, const char *fn, struct kumi_comm **out)
{
    struct kumi_comm *loc = NULL, *c = NULL;
    int *lw2 = malloc(sizeof(int) * (size_t)(lsize ? lsize : 1));
    if (!lw2) {
        free(lworld); free(rworld);
        kumi_ctx_free(ctx); kumi_ctx_free(lctx);
        return nomem(fn);
    }
    memcpy(lw2, lworld, sizeof(int) * (size_t)lsize);
    int rc = kumi_comm_create_obj(rank, lsize, lw2, lctx, parent, &loc);
    if (rc) {
        kumi_ctx_free(lctx);
        free(lworld); free(rworld);
        kumi_ctx_free(ctx);
        return rc;
    }
    snprintf(loc->name, sizeof loc->name, "(local group of an intercommunicator)");
    rc = kumi_comm_create_obj(rank, lsize, lworld, ctx, parent, &c);
    if (rc) {
        kumi_ctx_free(ctx);
        free(rworld);
        kumi_comm_release(loc);
        return rc;
    }
    c->inter = true;
    c->remote_size = rsize;
    c->remote_world = rworld;
    c->local_comm = loc;
    rc = kumi_coll_select(c);       /* again, now that it is an intercommunicator */
    if (rc) {
        kumi_comm_release(c);
        return rc;
    }
    *out = c;
    return MPI_SUCCESS;
}

/* --------------------------------------------------- MPI_Intercomm_create */
/* The groups' members travel between the leaders as (job, job rank) pairs
 * (kumi_req_peer_id), not as world ranks: a group may hold processes of
 * other jobs (after MPI_Comm_accept / connect), whose numbers differ from
 * process to process.  ids: 2n words; ids_to_world: -1 (an error) for a
 * process this one has no connection to. */
static uint64_t *ids_of(const int *w, int n)
{
    uint64_t *ids = malloc(sizeof *ids * 2 * (size_t)(n ? n : 1));
    for (int i = 0; ids && i < n; i++) {
        int r;
        kumi_req_peer_id(w[i], &ids[2 * i], &r);
        ids[2 * i + 1] = (uint64_t)(int64_t)r;
    }
    return ids;
}

static int ids_to_world(const uint64_t *ids, int n, int *w, const char *fn)
{
    for (int i = 0; i < n; i++)
        if ((w[i] = kumi_req_peer_of(ids[2 * i], (int)(int64_t)ids[2 * i + 1])) < 0)
            return kumi_error(MPI_ERR_COMM, "%s: rank %d of the remote group is a process of another job "
                              "that this process has never connected to", fn, i);
    return MPI_SUCCESS;
}

int kumi_mpi_intercomm_create(struct kumi_comm *local_comm, int local_leader, struct kumi_comm *peer_comm,
                              int remote_leader, int tag, MPI_Comm *newintercomm)
{
    static const char fn[] = "MPI_Intercomm_create";
    if (!newintercomm) return kumi_error(MPI_ERR_ARG, "%s: argument newintercomm is NULL", fn);
    if (local_comm->inter)
        return kumi_error(MPI_ERR_COMM, "%s: argument local_comm is an intercommunicator", fn);
    if (local_leader < 0 || local_leader >= local_comm->size)
        return kumi_error(MPI_ERR_RANK, "%s: invalid local_leader %d in a local_comm of size %d", fn,
                          local_leader, local_comm->size);
    struct kumi_comm *lc = local_comm;
    int lsize = lc->size, leader = lc->rank == local_leader;
    int *lworld = world_of(lc), *rworld = NULL;
    int hdr[2] = { 0, MPI_SUCCESS };       /* remote size, error class seen by the leader */
    int rc = MPI_SUCCESS;
    struct ic_link link = { lc, local_leader, peer_comm, remote_leader, tag, NULL, NULL, -1, 0 };
    uint64_t *lids = NULL, *rids = NULL;

    if (!lworld) return nomem(fn);
    if (leader) {
        if (!peer_comm)
            rc = kumi_error(MPI_ERR_COMM, "%s: argument peer_comm is not a valid communicator at the local leader", fn);
        else if (remote_leader < 0 || remote_leader >= kumi_comm_peer_size(peer_comm))
            rc = kumi_error(MPI_ERR_RANK, "%s: invalid remote_leader %d in a peer_comm of size %d", fn,
                            remote_leader, kumi_comm_peer_size(peer_comm));
        else {
            int rl = kumi_comm_peer_world(peer_comm, remote_leader);
            for (int i = 0; i < lsize; i++)
                if (lworld[i] == rl) {
                    rc = kumi_error(MPI_ERR_RANK, "%s: remote_leader %d is a member of the local group "
                                    "(rank %d of local_comm)", fn, remote_leader, i);
                    break;
                }
        }
        int rsize = 0;
        if (!rc) rc = link_xchg(&link, &lsize, 1, &rsize, 1, MPI_INT);
        if (!rc && rsize <= 0)
            rc = kumi_error(MPI_ERR_INTERN, "%s: the remote leader reported a group of size %d", fn, rsize);
        if (!rc && !(rworld = malloc(sizeof(int) * (size_t)rsize))) rc = nomem(fn);
        if (!rc && !(lids = ids_of(lworld, lsize))) rc = nomem(fn);
        if (!rc && !(rids = malloc(sizeof *rids * 2 * (size_t)rsize))) rc = nomem(fn);
        if (!rc) rc = link_xchg(&link, lids, 2 * lsize, rids, 2 * rsize, MPI_UINT64_T);
        if (!rc) rc = ids_to_world(rids, rsize, rworld, fn);
        if (!rc) {
            /* the groups must be disjoint */
            int nw = kumi_req_npeers();
            unsigned char *in = calloc((size_t)nw, 1);
            if (!in) rc = nomem(fn);
            for (int i = 0; !rc && i < lsize; i++) in[lworld[i]] = 1;
            for (int i = 0; !rc && i < rsize; i++)
                if (rworld[i] < 0 || rworld[i] >= nw || in[rworld[i]])
                    rc = kumi_error(MPI_ERR_COMM, "%s: the local and remote groups overlap "
                                    "(world rank %d is in both)", fn, rworld[i]);
            free(in);
        }
        hdr[0] = rsize;
        if (rc) kumi_mpi_error_class(rc, &hdr[1]);
    }
    free(lids);
    int rc2 = lc->coll.bcast(hdr, 2, MPI_INT, local_leader, (MPI_Comm)lc);
    if (rc2 || hdr[1] != MPI_SUCCESS) {
        free(lworld); free(rworld); free(rids);
        if (rc) return rc;
        if (rc2) return rc2;
        return kumi_error(hdr[1], "%s: the local leader (rank %d) failed to reach the remote group", fn,
                          local_leader);
    }
    int rsize = hdr[0];
    if (!leader && !(rworld = malloc(sizeof(int) * (size_t)rsize))) rc = nomem(fn);
    if (!leader && !(rids = malloc(sizeof *rids * 2 * (size_t)rsize))) rc = nomem(fn);
    /* out of memory on one rank cannot be agreed on cheaply; the bcast still has to happen */
    uint64_t dummy;
    rc2 = lc->coll.bcast(rids ? (void *)rids : (void *)&dummy, rids ? 2 * rsize : 0, MPI_UINT64_T,
                         local_leader, (MPI_Comm)lc);
    if (!rc && !rc2 && !leader) rc = ids_to_world(rids, rsize, rworld, fn);
    free(rids);
    if (rc || rc2) {
        free(lworld); free(rworld);
        return rc ? rc : rc2;
    }
    int32_t ctx, lctx;
    if (kumi_ctx_rule_applies_inter(lc, rsize, rworld)) {
        /* a component's rule (coll/impi: IMPI's max + 1 over both groups) */
        int32_t cc[2];
        rc = kumi_ctx_rule_agree_inter(KUMI_CTX_IC_CREATE, lc, local_leader, NULL, link_xchg64, &link, 0, NULL, 2, cc);
        if (rc) {
            free(lworld); free(rworld);
            return rc;
        }
        ctx = cc[0];
        lctx = cc[1];
    } else if ((rc = ic_ctx_pair(&link, lc, fn, &ctx, &lctx))) {
        free(lworld); free(rworld);
        return rc;
    }
    struct kumi_comm *c;
    rc = ic_make(lc->rank, lsize, lworld, rsize, rworld, ctx, lctx, lc, fn, &c);
    if (rc) return rc;
    *newintercomm = c->handle;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------- MPI_Intercomm_merge */
int kumi_mpi_intercomm_merge(struct kumi_comm *intercomm, int high, MPI_Comm *newintracomm)
{
    static const char fn[] = "MPI_Intercomm_merge";
    if (!newintracomm) return kumi_error(MPI_ERR_ARG, "%s: argument newintracomm is NULL", fn);
    if (!intercomm->inter)
        return kumi_error(MPI_ERR_COMM, "%s: argument intercomm is not an intercommunicator", fn);
    struct kumi_comm *ic = intercomm, *lc = ic->local_comm;
    struct ic_link link = { lc, 0, NULL, 0, 0, ic, NULL, -1, 0 };
    /* high: the group with high = false comes first; with equal values the
     * group whose rank 0 comes first in the order of processes
     * (kumi_req_peer_before: world ranks; the same on both sides where the
     * groups are of different jobs) does. */
    int mine[2] = { high ? 1 : 0, 0 }, theirs[2] = { 0, 0 };
    int32_t ctx;
    bool rule = kumi_ctx_rule_applies_inter(lc, ic->remote_size, ic->remote_world);
    if (rule) {        /* a component's rule (coll/impi): high travels with its exchange */
        uint64_t rhigh = 0;
        TRY(kumi_ctx_rule_agree_inter(KUMI_CTX_IC_MERGE, lc, 0, ic, NULL, NULL, (uint64_t)mine[0], &rhigh, 1, &ctx));
        theirs[0] = rhigh ? 1 : 0;
    } else {
        TRY(link_xchg_bcast(&link, mine, theirs, 2));
    }
    int first = mine[0] != theirs[0] ? mine[0] < theirs[0]
                                     : kumi_req_peer_before(kumi_comm_world_rank(ic, 0), ic->remote_world[0]);

    if (!rule) TRY(ic_ctx_agree(&link, fn, &ctx));
    int n = ic->size + ic->remote_size;
    int *w = malloc(sizeof(int) * (size_t)n);
    if (!w) {
        kumi_ctx_free(ctx);
        return nomem(fn);
    }
    int loff = first ? 0 : ic->remote_size, roff = first ? ic->size : 0;
    for (int i = 0; i < ic->size; i++) w[loff + i] = kumi_comm_world_rank(ic, i);
    for (int i = 0; i < ic->remote_size; i++) w[roff + i] = ic->remote_world[i];
    struct kumi_comm *c;
    int rc = kumi_comm_create_obj(loff + ic->rank, n, w, ctx, ic, &c);
    if (rc) {
        kumi_ctx_free(ctx);
        return rc;
    }
    *newintracomm = c->handle;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ queries */
int kumi_mpi_comm_test_inter(struct kumi_comm *comm, int *flag)
{
    if (!flag) return kumi_error(MPI_ERR_ARG, "MPI_Comm_test_inter: argument flag is NULL");
    *flag = comm->inter ? 1 : 0;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_remote_size(struct kumi_comm *comm, int *size)
{
    if (!size) return kumi_error(MPI_ERR_ARG, "MPI_Comm_remote_size: argument size is NULL");
    if (!comm->inter)
        return kumi_error(MPI_ERR_COMM, "MPI_Comm_remote_size: argument comm is not an intercommunicator");
    *size = comm->remote_size;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_remote_group(struct kumi_comm *comm, MPI_Group *group)
{
    if (!group) return kumi_error(MPI_ERR_ARG, "MPI_Comm_remote_group: argument group is NULL");
    if (!comm->inter)
        return kumi_error(MPI_ERR_COMM, "MPI_Comm_remote_group: argument comm is not an intercommunicator");
    int *w = malloc(sizeof(int) * (size_t)(comm->remote_size ? comm->remote_size : 1));
    if (!w) return nomem("MPI_Comm_remote_group");
    memcpy(w, comm->remote_world, sizeof(int) * (size_t)comm->remote_size);
    struct kumi_group *g = kumi_group_derived(kumi_group_make(comm->remote_size, w), comm->session);
    if (!g) return nomem("MPI_Comm_remote_group");
    *group = g->handle;
    return MPI_SUCCESS;
}

/* MPI_IDENT for the same order, MPI_SIMILAR for the same members, else MPI_UNEQUAL. */
static int cmp_lists(const int *a, const int *b, int n, int *res)
{
    if (!memcmp(a, b, sizeof(int) * (size_t)n)) { *res = MPI_IDENT; return MPI_SUCCESS; }
    int nw = kumi_req_npeers();
    unsigned char *in = calloc((size_t)nw, 1);
    if (!in) return nomem("MPI_Comm_compare");
    for (int i = 0; i < n; i++) in[a[i]] = 1;
    *res = MPI_SIMILAR;
    for (int i = 0; i < n; i++)
        if (!in[b[i]]) { *res = MPI_UNEQUAL; break; }
    free(in);
    return MPI_SUCCESS;
}

int kumi_intercomm_compare(struct kumi_comm *c1, struct kumi_comm *c2, int *result)
{
    if (!result) return kumi_error(MPI_ERR_ARG, "MPI_Comm_compare: argument result is NULL");
    if (c1 == c2) { *result = MPI_IDENT; return MPI_SUCCESS; }
    if (c1->inter != c2->inter || c1->size != c2->size || c1->remote_size != c2->remote_size) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    int *a = world_of(c1), *b = world_of(c2), r1 = MPI_UNEQUAL, r2 = MPI_UNEQUAL, rc;
    if (!a || !b) rc = nomem("MPI_Comm_compare");
    else rc = cmp_lists(a, b, c1->size, &r1);
    free(a); free(b);
    if (!rc) rc = cmp_lists(c1->remote_world, c2->remote_world, c1->remote_size, &r2);
    if (rc) return rc;
    if (r1 == MPI_UNEQUAL || r2 == MPI_UNEQUAL) *result = MPI_UNEQUAL;
    else if (r1 == MPI_SIMILAR || r2 == MPI_SIMILAR) *result = MPI_SIMILAR;
    else *result = MPI_CONGRUENT;
    return MPI_SUCCESS;
}

/* --------------------------------------- dup, split, create on an intercomm */
/* The new intercommunicator of this process from parent ic: local members
 * (local ranks of ic, in order) lr[0..nl), remote members rr[0..nr);
 * myrank: this process's index in lr, or -1 (gets MPI_COMM_NULL).  Every
 * process of both groups calls it (the contexts are agreed here). */
static int ic_derive(struct kumi_comm *ic, const int *lr, int nl, const int *rr, int nr, int myrank,
                     const char *fn, MPI_Comm *newcomm)
{
    struct kumi_comm *lc = ic->local_comm;
    struct ic_link link = { lc, 0, NULL, 0, 0, ic, NULL, -1, 0 };
    int32_t ctx, lctx;
    int rc;
    if (kumi_ctx_rule_applies_inter(lc, ic->remote_size, ic->remote_world)) {
        /* a component's rule (coll/impi), over both groups of the parent */
        int32_t cc[2];
        TRY(kumi_ctx_rule_agree_inter(KUMI_CTX_IC_DERIVE, lc, 0, ic, NULL, NULL, 0, NULL, 2, cc));
        ctx = cc[0];
        lctx = cc[1];
    } else {
        TRY(ic_ctx_agree(&link, fn, &ctx));
        rc = kumi_ctx_alloc(lc, &lctx);
        if (rc) {
            kumi_ctx_free(ctx);
            return rc;
        }
    }
    if (myrank < 0 || nl == 0 || nr == 0) {
        kumi_ctx_free(ctx);
        kumi_ctx_free(lctx);
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    int *lw = malloc(sizeof(int) * (size_t)nl), *rw = malloc(sizeof(int) * (size_t)nr);
    if (!lw || !rw) {
        free(lw); free(rw);
        kumi_ctx_free(ctx);
        kumi_ctx_free(lctx);
        return nomem(fn);
    }
    for (int i = 0; i < nl; i++) lw[i] = kumi_comm_world_rank(ic, lr[i]);
    for (int i = 0; i < nr; i++) rw[i] = ic->remote_world[rr[i]];
    struct kumi_comm *c;
    TRY(ic_make(myrank, nl, lw, nr, rw, ctx, lctx, ic, fn, &c));
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

int kumi_intercomm_dup(struct kumi_comm *comm, struct kumi_info *info, MPI_Comm *newcomm, const char *fn)
{
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    int n = comm->size > comm->remote_size ? comm->size : comm->remote_size;
    int *id = malloc(sizeof(int) * (size_t)n);
    if (!id) return nomem(fn);
    for (int i = 0; i < n; i++) id[i] = i;
    MPI_Comm h = MPI_COMM_NULL;
    int rc = ic_derive(comm, id, comm->size, id, comm->remote_size, comm->rank, fn, &h);
    free(id);
    if (rc) return rc;
    struct kumi_comm *c = kumi_comm_get(h);
    if (info && !(c->info = kumi_info_dup(info))) rc = nomem(fn);
    if (!rc) rc = kumi_attr_comm_dup(comm, c);     /* copy callbacks */
    if (rc) {
        kumi_comm_release(c);
        return rc;
    }
    *newcomm = h;
    return MPI_SUCCESS;
}

/* MPI_Comm_idup of an intercommunicator, once request/comm_agree.c's
 * agreement (over both groups, without blocking) gave the context pairs of
 * the duplicate (ctx) and of its local intracommunicator (lctx). */
int kumi_intercomm_dup_finish(struct kumi_comm *ic, int32_t ctx, int32_t lctx, struct kumi_info *info,
                              MPI_Comm *newcomm, const char *fn)
{
    int *lw = world_of(ic), *rw = malloc(sizeof(int) * (size_t)ic->remote_size);
    if (!lw || !rw) {
        free(lw); free(rw);
        kumi_ctx_free(ctx);
        kumi_ctx_free(lctx);
        if (info) kumi_info_release(info);
        return nomem(fn);
    }
    memcpy(rw, ic->remote_world, sizeof(int) * (size_t)ic->remote_size);
    struct kumi_comm *c;
    int rc = ic_make(ic->rank, ic->size, lw, ic->remote_size, rw, ctx, lctx, ic, fn, &c);
    if (rc) {
        if (info) kumi_info_release(info);
        return rc;
    }
    c->info = info;
    rc = kumi_attr_comm_dup(ic, c);     /* copy callbacks */
    if (rc) {
        kumi_comm_release(c);
        return rc;
    }
    *newcomm = c->handle;
    return MPI_SUCCESS;
}

struct ic_entry { int key, rank; };

static int ic_entry_cmp(const void *a, const void *b)
{
    const struct ic_entry *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Ranks r of all[2r] == color, ordered by (all[2r+1], r). */
static int *ic_select(const int *all, int n, int color, int *m)
{
    struct ic_entry *e = malloc(sizeof *e * (size_t)(n ? n : 1));
    int *out = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!e || !out) {
        free(e); free(out);
        return NULL;
    }
    int k = 0;
    for (int r = 0; r < n; r++)
        if (color != MPI_UNDEFINED && all[2 * r] == color) {
            e[k].key = all[2 * r + 1];
            e[k].rank = r;
            k++;
        }
    qsort(e, (size_t)k, sizeof *e, ic_entry_cmp);
    for (int i = 0; i < k; i++) out[i] = e[i].rank;
    free(e);
    *m = k;
    return out;
}

int kumi_intercomm_split(struct kumi_comm *comm, int color, int key, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_split";
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    if (color < 0 && color != MPI_UNDEFINED)
        return kumi_error(MPI_ERR_ARG, "%s: invalid color %d (argument color must be non-negative "
                          "or MPI_UNDEFINED)", fn, color);
    struct kumi_comm *lc = comm->local_comm;
    int mine[2] = { color, key };
    int *lall = malloc(sizeof(int) * 2 * (size_t)comm->size);
    int *rall = malloc(sizeof(int) * 2 * (size_t)comm->remote_size);
    if (!lall || !rall) {
        free(lall); free(rall);
        return nomem(fn);
    }
    int rc = lc->coll.allgather(mine, 2, MPI_INT, lall, 2, MPI_INT, (MPI_Comm)lc);
    if (!rc) rc = comm->coll.allgather(mine, 2, MPI_INT, rall, 2, MPI_INT, (MPI_Comm)comm);
    int nl = 0, nr = 0, *lr = NULL, *rr = NULL;
    if (!rc) {
        lr = ic_select(lall, comm->size, color, &nl);
        rr = ic_select(rall, comm->remote_size, color, &nr);
        if (!lr || !rr) rc = nomem(fn);
    }
    free(lall); free(rall);
    if (rc) {
        free(lr); free(rr);
        return rc;
    }
    int me = -1;
    for (int i = 0; i < nl; i++)
        if (lr[i] == comm->rank) me = i;
    rc = ic_derive(comm, lr, nl, rr, nr, me, fn, newcomm);
    free(lr); free(rr);
    return rc;
}

int kumi_intercomm_create_sub(struct kumi_comm *comm, const struct kumi_group *group, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_create";
    if (!newcomm) return kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    struct kumi_comm *lc = comm->local_comm;
    /* my position in group; every member must be in the local group */
    int me = MPI_UNDEFINED, bad = -1, nw = kumi_req_npeers();
    int *pos = malloc(sizeof(int) * (size_t)(nw ? nw : 1));
    if (!pos) return nomem(fn);
    for (int i = 0; i < nw; i++) pos[i] = -1;
    for (int i = 0; i < comm->size; i++) pos[kumi_comm_world_rank(comm, i)] = i;
    for (int i = 0; i < group->size; i++)
        if (group->world[i] < 0 || group->world[i] >= nw || pos[group->world[i]] < 0) { bad = i; break; }
        else if (pos[group->world[i]] == comm->rank) me = i;
    free(pos);
    if (bad >= 0)
        return kumi_error(MPI_ERR_GROUP, "%s: member %d of argument group is not in the local group "
                          "of the intercommunicator", fn, bad);
    int *lall = malloc(sizeof(int) * (size_t)comm->size);
    int *rall = malloc(sizeof(int) * (size_t)comm->remote_size);
    int *lr = malloc(sizeof(int) * (size_t)comm->size);
    int *rr = malloc(sizeof(int) * (size_t)comm->remote_size);
    int rc = MPI_SUCCESS;
    if (!lall || !rall || !lr || !rr) rc = nomem(fn);
    if (!rc) rc = lc->coll.allgather(&me, 1, MPI_INT, lall, 1, MPI_INT, (MPI_Comm)lc);
    if (!rc) rc = comm->coll.allgather(&me, 1, MPI_INT, rall, 1, MPI_INT, (MPI_Comm)comm);
    int nl = 0, nr = 0;
    if (!rc) {
        /* members by their rank in the group argument of their side */
        for (int i = 0; i < comm->size; i++)
            if (lall[i] >= 0 && lall[i] < comm->size) { lr[lall[i]] = i; nl++; }
        for (int i = 0; i < comm->remote_size; i++)
            if (rall[i] >= 0 && rall[i] < comm->remote_size) { rr[rall[i]] = i; nr++; }
        rc = ic_derive(comm, lr, nl, rr, nr, me == MPI_UNDEFINED ? -1 : me, fn, newcomm);
    }
    free(lall); free(rall); free(lr); free(rr);
    return rc;
}

/* ---------------------------------------- MPI_Intercomm_create_from_groups */
/* MPI-4: an intercommunicator from two disjoint groups, collective over
 * both, with no communicator that spans them: every process knows both
 * groups, so no leader has to tell its group about the other one.  The
 * intercommunicator's context pair is agreed over the union of the groups
 * and the local intracommunicator's over the local group, both through the
 * whole-job bootstrap communicator (kumi_ctx_alloc_group, as
 * MPI_Comm_create_from_group does), with keys made from the string tag.  The
 * union is ordered the same way on every member: the group whose leader has
 * the lower world rank first. */
static uint32_t ic_tag_hash(const char *salt, const char *tag)
{
    uint32_t h = 2166136261u;                   /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)salt; *p; p++) h = (h ^ *p) * 16777619u;
    for (const unsigned char *p = (const unsigned char *)tag; *p; p++) h = (h ^ *p) * 16777619u;
    return h & 0x7fffffffu;
}

#define IC_KEY_BOOT KUMI_KEY_BOOT                 /* agreements carried by the bootstrap communicator */

static int ic_from_groups(struct kumi_group *lg, int local_leader, struct kumi_group *rg, int remote_leader,
                          const char *stringtag, MPI_Info info, struct kumi_errhandler *errhandler,
                          MPI_Comm *newintercomm, const char *fn)
{
    struct kumi_info *in = NULL;
    if (!lg) return kumi_error(MPI_ERR_GROUP, "%s: argument local_group is not a valid group", fn);
    if (!rg) return kumi_error(MPI_ERR_GROUP, "%s: argument remote_group is not a valid group", fn);
    if (!stringtag) return kumi_error(MPI_ERR_ARG, "%s: argument stringtag is NULL", fn);
    if (!newintercomm) return kumi_error(MPI_ERR_ARG, "%s: argument newintercomm is NULL", fn);
    if (info != MPI_INFO_NULL && !(in = kumi_info_get(info)))
        return kumi_error(MPI_ERR_INFO, "%s: argument info is not a valid info object", fn);
    if (!kumi_errh_fits(errhandler, KUMI_ERRH_OBJ_COMM))
        return kumi_error(MPI_ERR_ARG, "%s: argument errhandler was not created for communicators", fn);
    if (lg->size == 0 || rg->size == 0)
        return kumi_error(MPI_ERR_GROUP, "%s: argument %s is empty", fn, lg->size ? "remote_group" : "local_group");
    if (lg->rank == MPI_UNDEFINED)
        return kumi_error(MPI_ERR_GROUP, "%s: the calling process is not a member of argument local_group", fn);
    if (local_leader < 0 || local_leader >= lg->size)
        return kumi_error(MPI_ERR_RANK, "%s: invalid local_leader %d in a local_group of size %d", fn,
                          local_leader, lg->size);
    if (remote_leader < 0 || remote_leader >= rg->size)
        return kumi_error(MPI_ERR_RANK, "%s: invalid remote_leader %d in a remote_group of size %d", fn,
                          remote_leader, rg->size);
    int nw = kumi_req_npeers(), n = lg->size + rg->size;
    unsigned char *seen = calloc((size_t)nw, 1);
    int *uw = malloc(sizeof(int) * (size_t)n);
    if (!seen || !uw) {
        free(seen); free(uw);
        return nomem(fn);
    }
    for (int i = 0; i < lg->size; i++) seen[lg->world[i]] = 1;
    int overlap = -1;
    for (int i = 0; i < rg->size && overlap < 0; i++)
        if (seen[rg->world[i]]) overlap = rg->world[i];
    free(seen);
    if (overlap >= 0) {
        free(uw);
        return kumi_error(MPI_ERR_GROUP, "%s: local_group and remote_group overlap (world rank %d is in both)",
                          fn, overlap);
    }
    /* the union, in the same order on every member */
    const struct kumi_group *first = lg->world[local_leader] < rg->world[remote_leader] ? lg : rg;
    const struct kumi_group *second = first == lg ? rg : lg;
    memcpy(uw, first->world, sizeof(int) * (size_t)first->size);
    memcpy(uw + first->size, second->world, sizeof(int) * (size_t)second->size);
    struct kumi_group ug = { .magic = KUMI_MAGIC_GROUP, .refcount = 1, .size = n, .world = uw,
                             .rank = (first == lg ? 0 : first->size) + lg->rank };
    int32_t ctx, lctx;
    int rc = kumi_ctx_alloc_group(NULL, &ug, IC_KEY_BOOT | ic_tag_hash("kumi.icfg/", stringtag), &ctx);
    free(uw);
    if (rc) return rc;
    rc = kumi_ctx_alloc_group(NULL, lg, IC_KEY_BOOT | ic_tag_hash("kumi.icfg.local/", stringtag), &lctx);
    if (rc) {
        kumi_ctx_free(ctx);
        return rc;
    }
    int *lw = malloc(sizeof(int) * (size_t)lg->size), *rw = malloc(sizeof(int) * (size_t)rg->size);
    if (!lw || !rw) {
        free(lw); free(rw);
        kumi_ctx_free(ctx); kumi_ctx_free(lctx);
        return nomem(fn);
    }
    memcpy(lw, lg->world, sizeof(int) * (size_t)lg->size);
    memcpy(rw, rg->world, sizeof(int) * (size_t)rg->size);
    struct kumi_comm *c;
    TRY(ic_make(lg->rank, lg->size, lw, rg->size, rw, ctx, lctx, NULL, fn, &c));
    if (in && !(c->info = kumi_info_dup(in))) {
        kumi_comm_release(c);
        return nomem(fn);
    }
    kumi_errh_retain(errhandler);
    kumi_errh_release(c->errh);
    c->errh = errhandler;
    *newintercomm = c->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_intercomm_create_from_groups(MPI_Group local_group, int local_leader, MPI_Group remote_group,
                                          int remote_leader, const char *stringtag, MPI_Info info,
                                          struct kumi_errhandler *errhandler, MPI_Comm *newintercomm)
{
    static const char fn[] = "MPI_Intercomm_create_from_groups";
    int rc = ic_from_groups(kumi_group_get(local_group), local_leader, kumi_group_get(remote_group),
                            remote_leader, stringtag, info, errhandler, newintercomm, fn);
    if (!rc) return MPI_SUCCESS;
    /* no communicator yet: the handler given for the new one (a user's one
     * needs a communicator to be called with, so then the process's default) */
    if (errhandler->kind != KUMI_ERRH_USER)
        return kumi_errh_invoke(errhandler, KUMI_ERRH_OBJ_COMM, MPI_COMM_NULL, rc);
    return kumi_err_handle(NULL, rc);
}

/* ------------------------------------- MPI_Comm_accept / connect / join */
/* The intercommunicator between lc's group and a group of another job
 * whose processes are the peers rworld[0..rsize) (taken, also on failure):
 * the two roots (lc rank root) talk over socket fd (at the root only) with
 * timeout xto per exchange.  Collective over lc; the other group runs the
 * same at the same time. */
int kumi_intercomm_bridge(struct kumi_comm *lc, int root, int fd, double xto, int rsize, int *rworld,
                          const char *fn, MPI_Comm *newintercomm)
{
    struct ic_link link = { lc, root, NULL, 0, 0, NULL, fn, fd, xto };
    int32_t ctx, lctx;
    int *lworld = world_of(lc);
    if (!lworld) {
        free(rworld);
        return nomem(fn);
    }
    int rc = ic_ctx_pair(&link, lc, fn, &ctx, &lctx);
    if (rc) {
        free(lworld); free(rworld);
        return rc;
    }
    struct kumi_comm *c;
    TRY(ic_make(lc->rank, lc->size, lworld, rsize, rworld, ctx, lctx, lc, fn, &c));
    *newintercomm = c->handle;
    return MPI_SUCCESS;
}
