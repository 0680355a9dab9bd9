/* coll/lact: latency-aware hierarchical collectives.
 *
 * A communicator's ranks sit on three levels: ranks of one host (node),
 * hosts of one cluster (net), clusters joined by wide-area links (wan); see
 * coll_lact_topo.c for how hosts and clusters are found.  MPI_Barrier,
 * MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Allgather and MPI_Alltoall run
 * level by level so that each slow link carries as few messages as possible:
 * only a host's leader (its lowest rank) talks to other hosts, only a
 * cluster's leader (its lowest rank) to other clusters.
 *
 * Sub-communicators, made at the first blocking collective of the
 * communicator (comm_query must not communicate), in this order, each by its
 * members only (kumi_comm_sub_create):
 *     node     the ranks of my host, in comm order           (key 1)
 *     nlead    the host leaders of my cluster, on them        (key 16 + cluster)
 *     clead    the cluster leaders, on them                   (key 2)
 * and when first needed (every rank decides alike, from its arguments):
 *     flat     all ranks: the fallback (its collectives are coll/tuned's or
 *              coll/basic's: lact declines sub-communicators)  (key 3)
 *     alead    all host leaders (alltoall), unless nlead or clead is that  (key 4)
 * A sub-communicator of one rank is not made (MPI_COMM_NULL: nothing to do
 * on that level).  Within a host and within a cluster the levels use the
 * sub-communicator's own collectives (chosen by coll/tuned from the size);
 * over the wide area, bcast picks a flat send or a binomial tree from the
 * link's latency and bandwidth, and barrier a fan-in/fan-out that crosses
 * each link twice.
 *
 * Non-commutative reductions keep the rank order only when every host's and
 * cluster's ranks are consecutive comm ranks (then the hierarchical order is
 * the rank order); otherwise, as for anything this component does not
 * handle itself, the call goes to the flat communicator.  Only blocking
 * forms: the non-blocking and persistent ones stay coll/tuned's. */
#include "coll_lact.h"
#include <kumi/component.h>
#include <kumi/param.h>

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) return rc_; } while (0)
#define TRYOUT(x) do { rc = (x); if (rc != MPI_SUCCESS) goto out; } while (0)
#define F(c) kumi_comm_coll(c)
#define HAS(c) ((c) != MPI_COMM_NULL)

/* Tags of lact's own point-to-point messages, in the collective context of
 * the communicator or of clead: apart from coll/basic's (1..21), coll/tuned's
 * blocking ones (100 + operation) and the schedules' (>= 2^29). */
enum { TAG_WAN_BCAST = 7001, TAG_BAR_IN, TAG_BAR_OUT, TAG_RESULT };
enum { KEY_NODE = 1, KEY_CLEAD = 2, KEY_FLAT = 3, KEY_ALEAD = 4, KEY_NLEAD = 16 };

/* ------------------------------------------------------------ per communicator */
struct lact_comm {
    struct lact_comm *next;
    MPI_Comm comm;
    struct lact_topo t;
    int built;
    char lvs[32];               /* the levels present, for coll_lact_verbose: "node, net, wan" */
    MPI_Comm node, nlead, clead, flat, alead;
    int alead_made, alead_owned;
    int *leaders;               /* [nhosts] each host's leader (pace_hint's senders) */
};

static struct lact_comm *lact_table;
static pthread_mutex_t lact_lock = PTHREAD_MUTEX_INITIALIZER;

static void lact_entry_free(struct lact_comm *e, int subs)
{
    if (subs) {
        kumi_comm_sub_free(&e->node);
        kumi_comm_sub_free(&e->nlead);
        kumi_comm_sub_free(&e->clead);
        kumi_comm_sub_free(&e->flat);
        if (e->alead_owned) kumi_comm_sub_free(&e->alead);
    }
    lact_topo_free(&e->t);
    free(e->leaders);
    free(e);
}

static struct lact_comm *lact_find(MPI_Comm comm)
{
    pthread_mutex_lock(&lact_lock);
    struct lact_comm *e = lact_table;
    while (e && e->comm != comm) e = e->next;
    pthread_mutex_unlock(&lact_lock);
    return e;
}

static void lact_say(const struct lact_comm *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void lact_say(const struct lact_comm *e, const char *fmt, ...)
{
    if (lact_verbose <= 0 || e->t.me != 0) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "coll/lact[%d]: %s\n", kumi_world_rank(), line);
}

static int host_leader(const struct lact_topo *t, int h) { return t->hrank[t->hoff[h]]; }
static int cluster_leader(const struct lact_topo *t, int c)
{
    return host_leader(t, t->chost[t->coff[c]]);
}

/* Make the sub-communicators this rank belongs to (collective over comm,
 * point-to-point among each one's members only; see the top comment). */
static int lact_build(struct lact_comm *e)
{
    const struct lact_topo *t = &e->t;
    int me = t->me, h = t->host_of[me], c = t->hcl[h];
    int *ranks = malloc(sizeof(int) * (size_t)(t->nhosts > 0 ? t->nhosts : 1));
    if (!ranks) return kumi_error(MPI_ERR_NO_MEM, "coll/lact: out of memory");
    int rc = MPI_SUCCESS, nh = t->coff[c + 1] - t->coff[c];
    if (t->hsize[h] > 1)
        rc = kumi_comm_sub_create(e->comm, t->hsize[h], t->hrank + t->hoff[h], KEY_NODE, &e->node);
    if (!rc && host_leader(t, h) == me && nh > 1) {
        for (int i = 0; i < nh; i++) ranks[i] = host_leader(t, t->chost[t->coff[c] + i]);
        rc = kumi_comm_sub_create(e->comm, nh, ranks, KEY_NLEAD + c, &e->nlead);
    }
    if (!rc && cluster_leader(t, c) == me && t->ncl > 1) {
        for (int i = 0; i < t->ncl; i++) ranks[i] = cluster_leader(t, i);
        rc = kumi_comm_sub_create(e->comm, t->ncl, ranks, KEY_CLEAD, &e->clead);
    }
    free(ranks);
    if (!rc) {
        e->built = 1;
        lact_say(e, "sub-communicators made: node %d, host leaders %d, cluster leaders %d",
                 t->hsize[h], nh, t->ncl);
    }
    return rc;
}

/* The entry of comm, its sub-communicators made; NULL after an error in *rc. */
static struct lact_comm *lact_get(MPI_Comm comm, int *rc)
{
    struct lact_comm *e = lact_find(comm);
    *rc = MPI_SUCCESS;
    if (!e) {
        *rc = kumi_error(MPI_ERR_INTERN, "coll/lact: communicator unknown to coll/lact");
        return NULL;
    }
    if (!e->built && (*rc = lact_build(e)) != MPI_SUCCESS) return NULL;
    return e;
}

/* The flat communicator (all ranks), made at its first use: every rank
 * decides to use it alike. */
static MPI_Comm lact_flat(struct lact_comm *e, int *rc)
{
    *rc = MPI_SUCCESS;
    if (e->flat != MPI_COMM_NULL) return e->flat;
    int *ranks = malloc(sizeof(int) * (size_t)e->t.p);
    if (!ranks) {
        *rc = kumi_error(MPI_ERR_NO_MEM, "coll/lact: out of memory");
        return MPI_COMM_NULL;
    }
    for (int r = 0; r < e->t.p; r++) ranks[r] = r;
    *rc = kumi_comm_sub_create(e->comm, e->t.p, ranks, KEY_FLAT, &e->flat);
    free(ranks);
    return e->flat;
}

/* The communicator of all host leaders in host order (on them only). */
static MPI_Comm lact_alead(struct lact_comm *e, int *rc)
{
    const struct lact_topo *t = &e->t;
    *rc = MPI_SUCCESS;
    if (e->alead_made) return e->alead;
    if (t->ncl == 1) e->alead = e->nlead;
    else if (t->nhosts == t->ncl) e->alead = e->clead;
    else {
        int *ranks = malloc(sizeof(int) * (size_t)t->nhosts);
        if (!ranks) {
            *rc = kumi_error(MPI_ERR_NO_MEM, "coll/lact: out of memory");
            return MPI_COMM_NULL;
        }
        for (int h = 0; h < t->nhosts; h++) ranks[h] = host_leader(t, h);
        *rc = kumi_comm_sub_create(e->comm, t->nhosts, ranks, KEY_ALEAD, &e->alead);
        free(ranks);
        if (*rc) return MPI_COMM_NULL;
        e->alead_owned = 1;
    }
    e->alead_made = 1;
    return e->alead;
}

/* ------------------------------------------------------------ helpers */
static MPI_Aint lact_ext(MPI_Datatype dt)
{
    MPI_Aint lb, ext;
    kumi_dt_extent(dt, &lb, &ext);
    return ext;
}

/* A temporary for count elements of dt laid out by extent (as coll/basic's):
 * the pointer to use as the buffer; *mem is what to free.  NULL: no memory. */
static char *lact_tmp(size_t count, MPI_Datatype dt, void **mem)
{
    MPI_Aint tlb, text, ext = lact_ext(dt), lo = 0, hi = 0;
    if (count > 0) {
        kumi_dt_true_extent(dt, &tlb, &text);
        MPI_Aint last = (MPI_Aint)(count - 1) * ext;
        lo = (last < 0 ? last : 0) + tlb;
        hi = (last > 0 ? last : 0) + tlb + text;
    }
    *mem = malloc(hi > lo ? (size_t)(hi - lo) : 1);
    if (!*mem) return NULL;
    return (char *)*mem - lo;
}

static int lact_nomem(const char *what)
{
    return kumi_error(MPI_ERR_NO_MEM, "coll/lact: %s: out of memory", what);
}

/* Block bi of n elements of dt at buf. */
static char *blk(const void *buf, size_t bi, MPI_Count n, MPI_Aint ext)
{
    return (char *)buf + (MPI_Aint)bi * (MPI_Aint)n * ext;
}

static int copy_blk(const void *src, size_t si, void *dst, size_t di, MPI_Count n, MPI_Datatype dt,
                    MPI_Aint ext)
{
    return kumi_dt_copy(blk(src, si, n, ext), (size_t)n, dt, blk(dst, di, n, ext), (size_t)n, dt);
}

static int ceil_log2(int k)
{
    int l = 0;
    while ((1 << l) < k) l++;
    return l;
}

/* ------------------------------------------------------------ wide area */
/* Flat (the root sends to each of the k-1 others: one latency, k-1 message
 * times at the sender) or binomial (ceil(log2 k) steps of one latency and
 * one message time)?  1: flat.  Same answer on every rank. */
static int wan_flat(const struct lact_topo *t, int k, size_t bytes)
{
    double m = (double)bytes / t->bw[LACT_WAN];
    double flat = t->lat[LACT_WAN] + (k - 1) * m;
    double bin = ceil_log2(k) * (t->lat[LACT_WAN] + m);
    return flat <= bin;
}

/* Bcast among the cluster leaders (clead), from clead rank root. */
static int wan_bcast(struct lact_comm *e, void *buf, MPI_Count count, MPI_Datatype dt, int root,
                     size_t bytes)
{
    MPI_Comm C = e->clead;
    int k = kumi_comm_size(C), me = kumi_comm_rank(C), vr = (me - root + k) % k, n = 0, rc;
    kumi_coll_req *reqs = malloc(sizeof *reqs * (size_t)k);
    if (!reqs) return lact_nomem("bcast");
    if (wan_flat(&e->t, k, bytes)) {
        if (me != root) {
            free(reqs);
            return kumi_coll_recv(buf, (size_t)count, dt, root, TAG_WAN_BCAST, C);
        }
        for (int i = 1; i < k; i++) {
            rc = kumi_coll_isend(buf, (size_t)count, dt, (root + i) % k, TAG_WAN_BCAST, C,
                                 &reqs[n]);
            if (rc) goto out;
            n++;
        }
    } else {
        int low = 1;
        while (low < k && !(vr & low)) low <<= 1;
        if (vr) {
            rc = kumi_coll_recv(buf, (size_t)count, dt, (vr - low + root) % k, TAG_WAN_BCAST, C);
            if (rc) goto out;
        }
        for (int m = low >> 1; m >= 1; m >>= 1)
            if (vr + m < k) {
                rc = kumi_coll_isend(buf, (size_t)count, dt, (vr + m + root) % k, TAG_WAN_BCAST,
                                     C, &reqs[n]);
                if (rc) goto out;
                n++;
            }
    }
    rc = MPI_SUCCESS;
out:
    if (n) {
        int rc2 = kumi_coll_waitall(n, reqs);
        if (!rc) rc = rc2;
    }
    free(reqs);
    return rc;
}

/* Barrier among the cluster leaders: clead rank 0 hears from every other,
 * then answers every other: each wide-area link carries two messages. */
static int wan_barrier(struct lact_comm *e)
{
    MPI_Comm C = e->clead;
    int k = kumi_comm_size(C), me = kumi_comm_rank(C), rc = MPI_SUCCESS, n = 0;
    char dummy = 0;
    if (me != 0) {
        TRY(kumi_coll_send(&dummy, 0, MPI_BYTE, 0, TAG_BAR_IN, C));
        return kumi_coll_recv(&dummy, 0, MPI_BYTE, 0, TAG_BAR_OUT, C);
    }
    kumi_coll_req *reqs = malloc(sizeof *reqs * (size_t)k);
    if (!reqs) return lact_nomem("barrier");
    for (int tag = TAG_BAR_IN; tag <= TAG_BAR_OUT && !rc; tag++) {
        for (int i = 1; i < k && !rc; i++) {
            rc = tag == TAG_BAR_IN ? kumi_coll_irecv(&dummy, 0, MPI_BYTE, i, tag, C, &reqs[n])
                                   : kumi_coll_isend(&dummy, 0, MPI_BYTE, i, tag, C, &reqs[n]);
            if (!rc) n++;
        }
        if (n) {
            int rc2 = kumi_coll_waitall(n, reqs);
            if (!rc) rc = rc2;
            n = 0;
        }
    }
    free(reqs);
    return rc;
}

/* ------------------------------------------------------------ barrier */
/* Fan-in: node barrier, host-leaders barrier, cluster leaders' wide-area
 * fan-in/fan-out; fan-out: a one-byte bcast from the host leaders' rank 0
 * (the cluster leader), then within each host. */
static int lact_barrier(MPI_Comm comm)
{
    int rc;
    struct lact_comm *e = lact_get(comm, &rc);
    if (!e) return rc;
    char b = 0;
    lact_say(e, "barrier: %s%s", e->lvs, e->t.ncl > 1 ? " fan-in/fan-out" : "");
    if (HAS(e->node)) TRY(F(e->node)->barrier(e->node));
    if (HAS(e->nlead)) TRY(F(e->nlead)->barrier(e->nlead));
    if (HAS(e->clead)) TRY(wan_barrier(e));
    if (HAS(e->nlead)) TRY(F(e->nlead)->bcast(&b, 1, MPI_BYTE, 0, e->nlead));
    if (HAS(e->node)) TRY(F(e->node)->bcast(&b, 1, MPI_BYTE, 0, e->node));
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ bcast */
/* The data climbs from the root to its host leader (node bcast rooted at
 * the root) and to its cluster leader (host leaders' bcast rooted at the
 * root's host leader), crosses the wide area once per other cluster (flat
 * or binomial, see wan_flat), then descends in the other clusters (host
 * leaders' bcast from the cluster leader) and hosts (node bcast from the
 * host leader).  Every rank receives once; the root never does. */
static int lact_bcast(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc;
    struct lact_comm *e = lact_get(comm, &rc);
    if (!e) return rc;
    const struct lact_topo *t = &e->t;
    size_t bytes = (size_t)count * kumi_dt_size(dt);
    if (bytes == 0) return MPI_SUCCESS;
    int rh = t->host_of[root], rcl = t->hcl[rh], h = t->host_of[t->me], c = t->hcl[h];
    lact_say(e, "bcast of %zu bytes from %d: %s%s", bytes, root, e->lvs,
             t->ncl == 1 ? "" : wan_flat(t, t->ncl, bytes) ? " flat" : " binomial");
    if (h == rh && HAS(e->node)) TRY(F(e->node)->bcast(buf, count, dt, t->lidx[root], e->node));
    if (c == rcl && HAS(e->nlead)) TRY(F(e->nlead)->bcast(buf, count, dt, t->hcidx[rh], e->nlead));
    if (HAS(e->clead)) TRY(wan_bcast(e, buf, count, dt, rcl, bytes));
    if (c != rcl && HAS(e->nlead)) TRY(F(e->nlead)->bcast(buf, count, dt, 0, e->nlead));
    if (h != rh && HAS(e->node)) TRY(F(e->node)->bcast(buf, count, dt, 0, e->node));
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ reduce, allreduce */
/* The hierarchy may combine the contributions in its own order? */
static int hier_order_ok(const struct lact_comm *e, MPI_Op op)
{
    return kumi_op_commutative(op) || e->t.contiguous;
}

/* Combine up the hierarchy: node reduce to the host leader, host leaders'
 * reduce to the cluster leader.  in: this rank's contribution.  Returns in
 * *acc the partial result on the cluster leader (NULL elsewhere); temporaries
 * in mem[0..2). */
static int reduce_up(struct lact_comm *e, const void *in, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                     const void **acc, void *mem[2])
{
    const struct lact_topo *t = &e->t;
    int me = t->me, h = t->host_of[me];
    const void *cur = in;
    *acc = NULL;
    if (HAS(e->node)) {
        char *tmp = NULL;
        if (host_leader(t, h) == me && !(tmp = lact_tmp((size_t)count, dt, &mem[0])))
            return lact_nomem("reduce");
        TRY(F(e->node)->reduce(cur, tmp, count, dt, op, 0, e->node));
        if (!tmp) return MPI_SUCCESS;
        cur = tmp;
    }
    if (HAS(e->nlead)) {
        char *tmp = NULL;
        if (cluster_leader(t, t->hcl[h]) == me && !(tmp = lact_tmp((size_t)count, dt, &mem[1])))
            return lact_nomem("reduce");
        TRY(F(e->nlead)->reduce(cur, tmp, count, dt, op, 0, e->nlead));
        if (!tmp) return MPI_SUCCESS;
        cur = tmp;
    }
    if (cluster_leader(t, t->hcl[h]) == me) *acc = cur;
    return MPI_SUCCESS;
}

/* Commutative op (or ranks in hierarchical order): reduce_up, then the
 * cluster leaders reduce to the root's cluster leader, which hands the
 * result to the root if it is not the root itself.  Else: the flat
 * communicator's reduce. */
static int lact_reduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                       int root, MPI_Comm comm)
{
    int rc;
    struct lact_comm *e = lact_get(comm, &rc);
    if (!e) return rc;
    const struct lact_topo *t = &e->t;
    if (count == 0) return MPI_SUCCESS;
    if (!hier_order_ok(e, op)) {
        lact_say(e, "reduce of %lld elements to %d: flat (non-commutative op, ranks not in "
                 "hierarchical order)", (long long)count, root);
        MPI_Comm f = lact_flat(e, &rc);
        if (rc) return rc;
        return F(f)->reduce(sbuf, rbuf, count, dt, op, root, f);
    }
    lact_say(e, "reduce of %lld elements to %d: %s", (long long)count, root, e->lvs);
    int me = t->me, rcl = t->hcl[t->host_of[root]], holder = cluster_leader(t, rcl);
    const void *in = me == root && sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    const void *acc;
    void *mem[3] = { NULL, NULL, NULL };
    TRYOUT(reduce_up(e, in, count, dt, op, &acc, mem));
    if (acc && HAS(e->clead)) {
        char *tmp = NULL;
        if (me == holder && !(tmp = lact_tmp((size_t)count, dt, &mem[2]))) {
            rc = lact_nomem("reduce");
            goto out;
        }
        TRYOUT(F(e->clead)->reduce(acc, tmp, count, dt, op, rcl, e->clead));
        acc = tmp;
    }
    if (me == holder && me == root) {
        if (acc != rbuf) rc = kumi_dt_copy(acc, (size_t)count, dt, rbuf, (size_t)count, dt);
    } else if (me == holder) {
        rc = kumi_coll_send(acc, (size_t)count, dt, root, TAG_RESULT, comm);
    } else if (me == root) {
        rc = kumi_coll_recv(rbuf, (size_t)count, dt, holder, TAG_RESULT, comm);
    }
out:
    for (int i = 0; i < 3; i++) free(mem[i]);
    return rc;
}

/* reduce_up, allreduce among the cluster leaders, then bcast down: host
 * leaders' bcast from the cluster leader, node bcast from the host leader. */
static int lact_allreduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                          MPI_Comm comm)
{
    int rc;
    struct lact_comm *e = lact_get(comm, &rc);
    if (!e) return rc;
    if (count == 0) return MPI_SUCCESS;
    if (!hier_order_ok(e, op)) {
        lact_say(e, "allreduce of %lld elements: flat (non-commutative op, ranks not in "
                 "hierarchical order)", (long long)count);
        MPI_Comm f = lact_flat(e, &rc);
        if (rc) return rc;
        return F(f)->allreduce(sbuf, rbuf, count, dt, op, f);
    }
    lact_say(e, "allreduce of %lld elements: %s", (long long)count, e->lvs);
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    const void *acc;
    void *mem[2] = { NULL, NULL };
    TRYOUT(reduce_up(e, in, count, dt, op, &acc, mem));
    if (acc) {
        if (HAS(e->clead))
            TRYOUT(F(e->clead)->allreduce(acc == rbuf ? MPI_IN_PLACE : acc, rbuf, count, dt, op,
                                          e->clead));
        else if (acc != rbuf)
            TRYOUT(kumi_dt_copy(acc, (size_t)count, dt, rbuf, (size_t)count, dt));
    }
    if (HAS(e->nlead)) TRYOUT(F(e->nlead)->bcast(rbuf, count, dt, 0, e->nlead));
    if (HAS(e->node)) TRYOUT(F(e->node)->bcast(rbuf, count, dt, 0, e->node));
out:
    free(mem[0]);
    free(mem[1]);
    return rc;
}

/* ------------------------------------------------------------ allgather */
/* Node gather to the host leader; allgatherv among the host leaders of a
 * cluster (blocks of whole hosts); allgatherv among the cluster leaders
 * (blocks of whole clusters), host leaders' bcast of the whole; node bcast.
 * The leaders hold the blocks in hierarchical order (cluster, host, rank)
 * and put them in comm rank order into rbuf with a local copy, unless that
 * is the same order (then they gather straight into rbuf). */
static int lact_allgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                          MPI_Datatype rdt, MPI_Comm comm)
{
    int rc;
    struct lact_comm *e = lact_get(comm, &rc);
    if (!e) return rc;
    const struct lact_topo *t = &e->t;
    size_t bb = (size_t)rcount * kumi_dt_size(rdt);
    if (bb == 0) return MPI_SUCCESS;
    int p = t->p, me = t->me, h = t->host_of[me], c = t->hcl[h];
    if ((size_t)p * bb > INT_MAX) {
        lact_say(e, "allgather of %zu bytes per rank: flat (counts beyond int)", bb);
        MPI_Comm f = lact_flat(e, &rc);
        if (rc) return rc;
        return F(f)->allgather(sbuf, scount, sdt, rbuf, rcount, rdt, f);
    }
    lact_say(e, "allgather of %zu bytes per rank: %s (%s)", bb, e->lvs,
             t->contiguous ? "in order" : "reordered");
    MPI_Aint ext = lact_ext(rdt);
    int inplace = sbuf == MPI_IN_PLACE;
    const void *cp = inplace ? blk(rbuf, (size_t)me, rcount, ext) : sbuf;
    MPI_Count cn = inplace ? rcount : scount;
    MPI_Datatype cdt = inplace ? rdt : sdt;
    int cur_in_rbuf = inplace;          /* cur overlaps rbuf */
    void *mem[3] = { NULL, NULL, NULL };
    MPI_Count *counts = NULL;
    MPI_Aint *displs = NULL;
    char *full = NULL;

    if (HAS(e->node)) {
        char *nt = NULL;
        if (host_leader(t, h) == me &&
            !(nt = lact_tmp((size_t)t->hsize[h] * (size_t)rcount, rdt, &mem[0]))) {
            rc = lact_nomem("allgather");
            goto out;
        }
        TRYOUT(F(e->node)->gather(cp, cn, cdt, nt, rcount, rdt, 0, e->node));
        if (!nt) goto down;
        cp = nt;
        cn = (MPI_Count)t->hsize[h] * rcount;
        cdt = rdt;
        cur_in_rbuf = 0;
    }
    int nc = t->ncl > t->coff[c + 1] - t->coff[c] ? t->ncl : t->coff[c + 1] - t->coff[c];
    counts = malloc(sizeof(MPI_Count) * (size_t)nc);
    displs = malloc(sizeof(MPI_Aint) * (size_t)nc);
    if (!counts || !displs) {
        rc = lact_nomem("allgather");
        goto out;
    }
    if (HAS(e->nlead)) {
        int nh = t->coff[c + 1] - t->coff[c];
        MPI_Aint off = 0;
        char *out = NULL;
        if (t->ncl == 1 && t->contiguous) out = rbuf;
        else if (!(out = lact_tmp((size_t)t->cnranks[c] * (size_t)rcount, rdt, &mem[1]))) {
            rc = lact_nomem("allgather");
            goto out;
        }
        for (int i = 0; i < nh; i++) {
            counts[i] = (MPI_Count)t->hsize[t->chost[t->coff[c] + i]] * rcount;
            displs[i] = off;
            off += counts[i];
        }
        if (out == rbuf && cur_in_rbuf) {
            /* in order, and this rank alone on its host, in place: its block
             * is at its place in rbuf already */
            TRYOUT(F(e->nlead)->allgatherv(MPI_IN_PLACE, 0, rdt, out, counts, displs, rdt,
                                           e->nlead));
        } else {
            TRYOUT(F(e->nlead)->allgatherv(cp, cn, cdt, out, counts, displs, rdt, e->nlead));
        }
        cp = out;
        cn = (MPI_Count)t->cnranks[c] * rcount;
        cdt = rdt;
        cur_in_rbuf = out == (char *)rbuf;
    }
    if (t->ncl == 1) {
        full = (char *)cp;              /* the host leaders' allgatherv gave everything */
    } else {
        if (HAS(e->clead)) {
            char *out = NULL;
            if (t->contiguous && !cur_in_rbuf) out = rbuf;
            else if (!(out = lact_tmp((size_t)p * (size_t)rcount, rdt, &mem[2]))) {
                rc = lact_nomem("allgather");
                goto out;
            }
            for (int i = 0; i < t->ncl; i++) {
                counts[i] = (MPI_Count)t->cnranks[i] * rcount;
                displs[i] = (MPI_Aint)t->crankoff[i] * (MPI_Aint)rcount;
            }
            TRYOUT(F(e->clead)->allgatherv(cp, cn, cdt, out, counts, displs, rdt, e->clead));
            full = out;
        } else if (t->contiguous) {
            full = rbuf;
        } else if (!(full = lact_tmp((size_t)p * (size_t)rcount, rdt, &mem[2]))) {
            rc = lact_nomem("allgather");
            goto out;
        }
        if (HAS(e->nlead)) TRYOUT(F(e->nlead)->bcast(full, (MPI_Count)p * rcount, rdt, 0, e->nlead));
    }
    if (full != (char *)rbuf)
        for (int r = 0; r < p; r++)
            TRYOUT(copy_blk(full, (size_t)t->pos[r], rbuf, (size_t)r, rcount, rdt, ext));
down:
    if (HAS(e->node)) TRYOUT(F(e->node)->bcast(rbuf, (MPI_Count)p * rcount, rdt, 0, e->node));
out:
    for (int i = 0; i < 3; i++) free(mem[i]);
    free(counts);
    free(displs);
    return rc;
}

/* ------------------------------------------------------------ alltoall */
/* Leaders aggregate or not?  Flat: a pairwise exchange of p-1 steps, each
 * one latency of the slowest level crossed; aggregated: one message per pair
 * of hosts, plus the node gather and scatter of everything (log2 n node
 * latencies and n*p blocks through the host's memory each).  Both move the
 * same bytes across hosts.  Same answer on every rank. */
static int a2a_aggregate(const struct lact_topo *t, size_t bb)
{
    if (t->maxpn < 2 || t->nhosts < 2) return 0;
    int lv = t->ncl > 1 ? LACT_WAN : LACT_NET;
    double n = t->maxpn, p = t->p, hs = t->nhosts;
    double cross = n * (p - n) * (double)bb / t->bw[lv];
    double flat = (p - 1) * t->lat[lv] + cross;
    double agg = (hs - 1) * t->lat[lv] + cross +
                 2 * (ceil_log2(t->maxpn) * t->lat[LACT_NODE] +
                      n * p * (double)bb / t->bw[LACT_NODE]);
    return agg < flat;
}

/* count elements of dt at buf as count * size(dt) bytes: the buffer itself
 * (from its true lower bound) if they lie that way, else a temporary (*mem,
 * packed now if pack).  NULL: no memory. */
static char *as_bytes(const void *buf, size_t count, MPI_Datatype dt, int pack, void **mem)
{
    MPI_Aint tlb, text;
    *mem = NULL;
    if (kumi_dt_contiguous(dt)) {
        kumi_dt_true_extent(dt, &tlb, &text);
        return (char *)buf + tlb;
    }
    size_t n = count * kumi_dt_size(dt);
    if (!(*mem = malloc(n ? n : 1))) return NULL;
    if (pack && kumi_dt_copy(buf, count, dt, *mem, n, MPI_BYTE) != MPI_SUCCESS) {
        free(*mem);
        *mem = NULL;
        return NULL;
    }
    return *mem;
}

/* Every rank's whole send buffer to its host leader (node gather); the host
 * leaders exchange, per pair of hosts, the blocks from one host's ranks to
 * the other's (alltoallv among all host leaders); each host leader sorts
 * what it got by destination and source rank and scatters it (node scatter).
 * Everything travels as packed bytes (MPI_BYTE on both sides): the leaders
 * hold nn * p blocks, more than a layout of the receive type may fit without
 * overlapping elements. */
static int lact_alltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                         MPI_Datatype rdt, MPI_Comm comm)
{
    int rc;
    struct lact_comm *e = lact_get(comm, &rc);
    if (!e) return rc;
    const struct lact_topo *t = &e->t;
    size_t bb = (size_t)rcount * kumi_dt_size(rdt);
    if (bb == 0) return MPI_SUCCESS;
    int p = t->p, me = t->me, h = t->host_of[me], nn = t->hsize[h], H = t->nhosts;
    if ((size_t)t->maxpn * (size_t)p * bb > INT_MAX || !a2a_aggregate(t, bb)) {
        lact_say(e, "alltoall of %zu bytes per block: flat", bb);
        MPI_Comm f = lact_flat(e, &rc);
        if (rc) return rc;
        return F(f)->alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, f);
    }
    lact_say(e, "alltoall of %zu bytes per block: host leaders aggregate", bb);
    int inplace = sbuf == MPI_IN_PLACE;
    MPI_Count pb = (MPI_Count)((size_t)p * bb);
    void *smem = NULL, *rmem = NULL, *g = NULL, *s = NULL;
    MPI_Count *sc = NULL, *rcn = NULL;
    MPI_Aint *sd = NULL, *rd = NULL;
    char *sbytes = as_bytes(inplace ? rbuf : sbuf, (size_t)(inplace ? rcount : scount) * (size_t)p,
                            inplace ? rdt : sdt, 1, &smem);
    char *rbytes = sbytes ? as_bytes(rbuf, (size_t)rcount * (size_t)p, rdt, 0, &rmem) : NULL;
    if (!sbytes || !rbytes) {
        rc = lact_nomem("alltoall");
        goto out;
    }
    if (host_leader(t, h) != me) {
        TRYOUT(F(e->node)->gather(sbytes, pb, MPI_BYTE, NULL, 0, MPI_BYTE, 0, e->node));
        TRYOUT(F(e->node)->scatter(NULL, 0, MPI_BYTE, rbytes, pb, MPI_BYTE, 0, e->node));
        goto unpack;
    }
    MPI_Comm A = lact_alead(e, &rc);
    if (rc) goto out;
    g = malloc((size_t)nn * (size_t)pb);
    s = malloc((size_t)nn * (size_t)pb);
    sc = malloc(sizeof(MPI_Count) * (size_t)H);
    sd = malloc(sizeof(MPI_Aint) * (size_t)H);
    rcn = malloc(sizeof(MPI_Count) * (size_t)H);
    rd = malloc(sizeof(MPI_Aint) * (size_t)H);
    if (!g || !s || !sc || !sd || !rcn || !rd) {
        rc = lact_nomem("alltoall");
        goto out;
    }
    if (HAS(e->node)) TRYOUT(F(e->node)->gather(sbytes, pb, MPI_BYTE, g, pb, MPI_BYTE, 0, e->node));
    else memcpy(g, sbytes, (size_t)pb);
    /* To host hh: for each of my ranks i, its blocks for hh's ranks. */
    size_t off = 0, roff = 0;
    for (int hh = 0; hh < H; hh++) {
        sd[hh] = (MPI_Aint)(off * bb);
        for (int i = 0; i < nn; i++)
            for (int j = t->hoff[hh]; j < t->hoff[hh + 1]; j++)
                memcpy((char *)s + off++ * bb, (char *)g + ((size_t)i * p + t->hrank[j]) * bb, bb);
        sc[hh] = (MPI_Count)((size_t)nn * t->hsize[hh] * bb);
        rd[hh] = (MPI_Aint)(roff * bb);
        rcn[hh] = sc[hh];
        roff += (size_t)t->hsize[hh] * (size_t)nn;
    }
    TRYOUT(F(A)->alltoallv(s, sc, sd, MPI_BYTE, g, rcn, rd, MPI_BYTE, A));
    /* From host hh: for each of its ranks i, the blocks for my ranks j. */
    for (int j = 0; j < nn; j++)
        for (int r = 0; r < p; r++) {
            size_t from = (size_t)rd[t->host_of[r]] + ((size_t)t->lidx[r] * nn + j) * bb;
            memcpy((char *)s + ((size_t)j * p + r) * bb, (char *)g + from, bb);
        }
    if (HAS(e->node))
        TRYOUT(F(e->node)->scatter(s, pb, MPI_BYTE, rbytes, pb, MPI_BYTE, 0, e->node));
    else memcpy(rbytes, s, (size_t)pb);
unpack:
    if (rmem) rc = kumi_dt_copy(rmem, (size_t)pb, MPI_BYTE, rbuf, (size_t)rcount * (size_t)p, rdt);
out:
    free(smem);
    free(rmem);
    free(g);
    free(s);
    free(sc);
    free(sd);
    free(rcn);
    free(rd);
    return rc;
}

/* kumi/coll.h pace_hint, for the pacing component: the all-to-all as
 * lact_alltoall will run it.  Aggregated, only the host leaders send across
 * hosts (and clusters), to the other host leaders, by the alltoallv of the
 * host leaders' communicator: its fan-out is that communicator's
 * provider's, once it is made (the first aggregated call), before that
 * "all at once" (the rank's share split among its peers across: never too
 * much).  Flat: the flat communicator's provider's hint (before it is made,
 * the provider comm would have without lact, which the flat communicator
 * of the same ranks gets). */
static int lact_pace_hint(MPI_Comm comm, const char *coll, size_t bytes, struct kumi_pace_hint *hint)
{
    if (strcmp(coll, "alltoall") != 0) return 0;
    struct lact_comm *e = lact_find(comm);
    if (!e || bytes == 0) return 0;
    const struct lact_topo *t = &e->t;
    if ((size_t)t->maxpn * (size_t)t->p * bytes > INT_MAX || !a2a_aggregate(t, bytes)) {
        if (e->flat != MPI_COMM_NULL) return kumi_coll_pace_hint(e->flat, "alltoall", bytes, 0, hint);
        return kumi_coll_pace_hint(comm, "alltoall", bytes, 1, hint);
    }
    struct kumi_pace_hint a;
    hint->fanout = 0;
    if (e->alead_made && HAS(e->alead) && kumi_coll_pace_hint(e->alead, "alltoallv", 0, 0, &a) && a.fanout >= 0)
        hint->fanout = a.fanout;
    hint->nsenders = t->nhosts;
    hint->senders = e->leaders;
    return 1;
}

/* ------------------------------------------------------------ component */
static int lact_comm_query(MPI_Comm comm, int *priority, struct kumi_coll_fns *fns)
{
    (void)priority;                 /* the default: parameter coll_lact_priority */
    if (kumi_comm_is_inter(comm) || kumi_comm_is_sub(comm) || kumi_comm_size(comm) < 2)
        return KUMI_UNAVAILABLE;
    struct lact_comm *e = calloc(1, sizeof *e);
    if (!e) return KUMI_UNAVAILABLE;
    e->comm = comm;
    e->node = e->nlead = e->clead = e->flat = e->alead = MPI_COMM_NULL;
    if (lact_topo_build(comm, &e->t) != KUMI_OK) {
        free(e);
        return KUMI_UNAVAILABLE;
    }
    if (lact_verbose > 0 && e->t.me == 0) {
        char d[1024];
        lact_topo_describe(&e->t, d, sizeof d);
        fprintf(stderr, "coll/lact[%d]: %s%s\n", kumi_world_rank(), d,
                e->t.nlevels < 2 ? ": not used (one level)" : "");
    }
    if (e->t.nlevels < 2) {
        lact_entry_free(e, 0);
        return KUMI_UNAVAILABLE;
    }
    if (!(e->leaders = malloc(sizeof(int) * (size_t)e->t.nhosts))) {
        lact_entry_free(e, 0);
        return KUMI_UNAVAILABLE;
    }
    for (int h = 0; h < e->t.nhosts; h++) e->leaders[h] = host_leader(&e->t, h);
    snprintf(e->lvs, sizeof e->lvs, "%s%s%s", e->t.maxpn > 1 ? "node, " : "",
             e->t.nhosts > e->t.ncl ? "net, " : "", e->t.ncl > 1 ? "wan, " : "");
    e->lvs[strlen(e->lvs) - 2] = '\0';
    pthread_mutex_lock(&lact_lock);
    struct lact_comm **pp = &lact_table, *old = NULL;
    while (*pp && (*pp)->comm != comm) pp = &(*pp)->next;
    if (*pp) {                      /* a handle reused without release: forget the old */
        old = *pp;
        *pp = old->next;
    }
    e->next = lact_table;
    lact_table = e;
    pthread_mutex_unlock(&lact_lock);
    if (old) lact_entry_free(old, 0);
    fns->barrier = lact_barrier;
    fns->bcast = lact_bcast;
    fns->reduce = lact_reduce;
    fns->allreduce = lact_allreduce;
    fns->allgather = lact_allgather;
    fns->alltoall = lact_alltoall;
    return KUMI_OK;
}

/* comm is freed: drop its entry and sub-communicators.  Freeing those calls
 * this hook again (for them), so the table lock is not held meanwhile. */
static void lact_comm_release(MPI_Comm comm)
{
    pthread_mutex_lock(&lact_lock);
    struct lact_comm **pp = &lact_table, *e = NULL;
    while (*pp && (*pp)->comm != comm) pp = &(*pp)->next;
    if (*pp) {
        e = *pp;
        *pp = e->next;
    }
    pthread_mutex_unlock(&lact_lock);
    if (e) lact_entry_free(e, 1);
}

static int lact_open(char *why, size_t whylen)
{
    if (lact_config_load(why, whylen) != KUMI_OK) {
        kumi_warn("coll/lact not used: %s", why);
        return KUMI_UNAVAILABLE;
    }
    return KUMI_OK;
}

/* The entries of communicators still alive (MPI_COMM_WORLD's) are dropped
 * without freeing their sub-communicators: the core may be gone. */
static void lact_close(void)
{
    pthread_mutex_lock(&lact_lock);
    struct lact_comm *e = lact_table;
    lact_table = NULL;
    pthread_mutex_unlock(&lact_lock);
    while (e) {
        struct lact_comm *n = e->next;
        lact_entry_free(e, 0);
        e = n;
    }
    lact_config_free();
}

static const struct kumi_coll_ops lact_ops_table = {
    .hdr = KUMI_COLL_OPS_HDR,
    .comm_query = lact_comm_query,
    .comm_release = lact_comm_release,
    .pace_hint = lact_pace_hint,
};

KUMI_EXPORT const struct kumi_component kumi_coll_lact_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "coll",
    .name = "lact",
    .version = { 0, 1, 0 },
    .description = "Latency-aware hierarchical collectives over hosts, clusters, wide-area links",
    .priority = 40,
    .register_params = lact_register_params,
    .open = lact_open,
    .close = lact_close,
    .ops = &lact_ops_table,
};
