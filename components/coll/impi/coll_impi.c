/* coll/impi: the collectives of a communicator that spans several IMPI
 * clients (issue 19 item 4; facts: ../shared/impi/PROTOCOL.md, the "sheet",
 * §5).
 *
 * Available in a rank started by `mpiexec --impi-client K` (the job file
 * KUMI_INTERNAL_IMPI_JOB tells which client each MPI_COMM_WORLD rank
 * belongs to: the same tables every client builds, sheet §1.10).  Chosen,
 * with a priority above coll/tuned and coll/lact, for every
 * intracommunicator whose ranks belong to more than one client (a decision
 * from the communicator's membership only: the same on every rank);
 * communicators inside one client keep Kumi's own components.
 *
 * Every operation has a global phase among the clients' masters (sheet
 * §5.1: per client, its lowest rank in the communicator; numbered in
 * ascending rank order) with point-to-point messages on the communicator's
 * collective context (context id + 1: for MPI_COMM_WORLD the IMPI packets
 * carry pk_cid 1) and IMPI's tags (coll_impi.h), and a local phase inside
 * each client on the sub-communicator of that client's ranks, whose
 * collectives are whatever Kumi chooses for it (coll/tuned, ...): that
 * traffic never reaches the wire between clients.
 *
 * This file: the component, the communicator tables, and the operations
 * whose algorithm the sheet gives (LAM's code of the final standard's
 * §4.10, §4.11, §4.16): MPI_Barrier, MPI_Bcast, MPI_Reduce.  Two choices
 * where the sheet lists conflicts (§7):
 *   - linear or tree: the global phase is linear when the number of masters
 *     is <= MAXLINEAR (the job's agreed IMPI_C_COLL_MAXLINEAR, default 4, or
 *     the parameter coll_impi_maxlinear), a binomial tree above.  With the
 *     default this is exactly LAM's hard-coded `nmasters <= 4` (so Kumi
 *     and LAM exchange the same messages); honouring the negotiated value
 *     (over masters, not hosts: the algorithms are written over masters)
 *     lets a job that agreed another value use it.
 *   - the root's master number: bcast, like reduce, uses
 *     local_master_num(root) (LAM's bcast uses master_num(root), -1 when the
 *     root is not its client's master: a LAM bug, sheet §7.14), and the
 *     barrier tree sends to master_rank(m | mask), not master_rank(rank |
 *     mask) (the other §7.14 bug).
 * The rest: coll_impi_own.c. */
#include "coll_impi.h"
#include <kumi/component.h>
#include <kumi/impi.h>
#include <kumi/param.h>
#include <kumi/rpim.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(x) do { int rc_ = (x); if (rc_ != MPI_SUCCESS) return rc_; } while (0)
#define KEY_LOCAL 0x494d50      /* "IMP": the sub-communicator of my client's ranks */

long long coll_impi_verbose;
static long long param_maxlinear = -1, param_cid_rule = 1;
static int job_maxlinear = KUMI_IMPI_COLL_MAXLINEAR_DEFAULT;
static int nclients, nprocs;
static int first_proc[KUMI_IMPI_MAX_CLIENTS + 1];

static struct impi_comm *table;
static const struct kumi_ctx_rule impi_rule;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static void impi_register(void)
{
    kumi_param_register_int("coll", "impi", "maxlinear", -1,
                            "IMPI collectives: the global phase among the clients' masters is linear when "
                            "there are at most this many masters, a binomial tree above (-1: the job's agreed "
                            "IMPI_C_COLL_MAXLINEAR, 4 by default, as LAM).  Must be the same in every client",
                            KUMI_LEVEL_TUNER, &param_maxlinear);
    kumi_param_register_int("coll", "impi", "cid_rule", 1,
                            "IMPI collectives: 1 makes communicators over several clients by IMPI's context-id "
                            "rule (MPI_Comm_create / dup / split: an IMPI Allreduce of IMPI_max_cid; "
                            "MPI_Comm_free: a barrier), 0 by Kumi's own agreement (only Kumi clients then "
                            "agree on pk_cid).  Must be the same in every client", KUMI_LEVEL_TUNER, &param_cid_rule);
    kumi_param_register_int("coll", "impi", "verbose", 0,
                            "IMPI collectives: 1 says, for every communicator coll/impi serves, its clients "
                            "and masters (on its rank 0, to stderr)", KUMI_LEVEL_USER, &coll_impi_verbose);
}

/* The job file of mpiexec --impi-client (format: tools/mpiexec/impi.c). */
static int impi_open(char *why, size_t whylen)
{
    const char *path = getenv(KUMI_ENV_IMPI_JOB);
    if (!path) {
        snprintf(why, whylen, "not a rank of an IMPI client (mpiexec --impi-client K --impi-server HOST:PORT)");
        return KUMI_UNAVAILABLE;
    }
    char err[400];
    struct kumi_impi_job job;
    if (kumi_impi_job_read(path, &job, NULL, err, sizeof err) != 0) {
        snprintf(why, whylen, "%s", err);
        kumi_warn("coll/impi not used: %s", why);
        return KUMI_UNAVAILABLE;
    }
    nclients = job.nclients;
    nprocs = job.nprocs;
    memcpy(first_proc, job.first_proc_of_client, sizeof first_proc);
    if (job.maxlinear > 0) job_maxlinear = job.maxlinear;
    kumi_impi_job_free(&job);
    if (param_cid_rule) kumi_ctx_rule_set(&impi_rule);
    return KUMI_OK;
}

static int client_of_world(int w)
{
    for (int c = 0; c < nclients; c++)
        if (w >= first_proc[c] && w < first_proc[c + 1]) return c;
    return -1;
}

static void entry_free(struct impi_comm *e, int subs)
{
    if (subs) kumi_comm_sub_free(&e->local);
    free(e->client);
    free(e->master);
    free(e->grp_off);
    free(e->grp_rank);
    free(e->lidx);
    free(e);
}

/* The tables of comm, or NULL when it lies in one client (or on failure). */
static struct impi_comm *entry_make(MPI_Comm comm)
{
    int n = kumi_comm_size(comm);
    struct impi_comm *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->comm = comm;
    e->size = n;
    e->me = kumi_comm_rank(comm);
    e->local = MPI_COMM_NULL;
    e->client = malloc(sizeof(int) * (size_t)n);
    e->master = malloc(sizeof(int) * (size_t)n);
    e->grp_off = calloc((size_t)n + 1, sizeof(int));
    e->grp_rank = malloc(sizeof(int) * (size_t)n);
    e->lidx = malloc(sizeof(int) * (size_t)n);
    if (!e->client || !e->master || !e->grp_off || !e->grp_rank || !e->lidx) goto no;
    for (int c = 0; c < 32; c++) e->mnum_of_client[c] = -1;
    for (int r = 0; r < n; r++) {
        int w = kumi_comm_job_rank(comm, r), c = w >= 0 && w < nprocs ? client_of_world(w) : -1;
        if (c < 0) goto no;                       /* not a rank of this IMPI job (spawned, ...) */
        e->client[r] = c;
        if (e->mnum_of_client[c] < 0) {           /* the first (lowest) rank of its client: a master */
            e->mnum_of_client[c] = e->nm;
            e->master[e->nm++] = r;
        }
    }
    if (e->nm < 2) goto no;
    int *cnt = e->grp_off;                        /* counts, then offsets */
    for (int r = 0; r < n; r++) cnt[impi_local_master_num(e, r) + 1]++;
    for (int m = 0; m < e->nm; m++) cnt[m + 1] += cnt[m];
    int *fill = calloc(KUMI_IMPI_MAX_CLIENTS, sizeof(int));
    if (!fill) goto no;
    for (int r = 0; r < n; r++) {
        int m = impi_local_master_num(e, r);
        e->lidx[r] = fill[m];
        e->grp_rank[e->grp_off[m] + fill[m]++] = r;
    }
    free(fill);
    e->maxlinear = param_maxlinear >= 0 ? (int)(param_maxlinear < 1000 ? param_maxlinear : 1000) : job_maxlinear;
    return e;
no:
    entry_free(e, 0);
    return NULL;
}

static struct impi_comm *find(MPI_Comm comm)
{
    pthread_mutex_lock(&table_lock);
    struct impi_comm *e = table;
    while (e && e->comm != comm) e = e->next;
    pthread_mutex_unlock(&table_lock);
    return e;
}

/* The entry of comm with its local sub-communicator made (at the first
 * collective: comm_query must not communicate; made by my client's ranks). */
struct impi_comm *coll_impi_get(MPI_Comm comm, int *rc)
{
    struct impi_comm *e = find(comm);
    *rc = MPI_SUCCESS;
    if (!e) {
        *rc = kumi_error(MPI_ERR_INTERN, "coll/impi: communicator unknown to coll/impi");
        return NULL;
    }
    if (!e->built) {
        int m = impi_local_master_num(e, e->me), nl = impi_nlocal(e, m);
        if (nl > 1 && (*rc = kumi_comm_sub_create(comm, nl, e->grp_rank + e->grp_off[m], KEY_LOCAL, &e->local)))
            return NULL;
        e->built = 1;
    }
    return e;
}

/* ------------------------------------------------------------ helpers */
MPI_Aint coll_impi_ext(MPI_Datatype dt)
{
    MPI_Aint lb, ext;
    kumi_dt_extent(dt, &lb, &ext);
    return ext;
}

/* Room for count elements of dt laid out by extent; *mem is what to free. */
char *coll_impi_tmp(size_t count, MPI_Datatype dt, void **mem)
{
    MPI_Aint tlb = 0, text = 0, ext = coll_impi_ext(dt), lo = 0, hi = 0;
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

int coll_impi_nomem(const char *what)
{
    return kumi_error(MPI_ERR_NO_MEM, "coll/impi: %s: out of memory", what);
}

/* sheet §5.4 */
static int cubedim(int n)
{
    int d = 0;
    while ((1 << d) < n) d++;
    return d;
}

static int hibit(int v, int d)
{
    for (int i = d - 1; i >= 0; i--)
        if (v & (1 << i)) return i;
    return -1;
}

static int linear(const struct impi_comm *e)
{
    return e->nm <= e->maxlinear;
}

/* The local phase of a barrier on a communicator whose local
 * sub-communicator is not made yet (e.g. MPI_Comm_free of a communicator
 * that ran no collective: making it only to free it cost an agreement and
 * coll/sm's set-up per MPI_Comm_dup / MPI_Comm_free pair, and coll/sm's
 * segments of sub-communicators made and freed that fast were seen to hang
 * a dup / free loop): zero-byte messages to the local master and back, on
 * comm's collective context inside the client (never on the IMPI wire),
 * with a tag of their own. */
#define IMPI_LOCAL_BARRIER_TAG 111
static int local_barrier_p2p(struct impi_comm *e, MPI_Comm comm)
{
    int m = impi_local_master_num(e, e->me), nl = impi_nlocal(e, m), *g = e->grp_rank + e->grp_off[m];
    char z = 0;
    if (nl < 2) return MPI_SUCCESS;
    if (e->me == g[0]) {
        for (int i = 1; i < nl; i++) TRY(kumi_coll_recv(&z, 0, MPI_BYTE, g[i], IMPI_LOCAL_BARRIER_TAG, comm));
        for (int i = 1; i < nl; i++) TRY(kumi_coll_send(&z, 0, MPI_BYTE, g[i], IMPI_LOCAL_BARRIER_TAG, comm));
        return MPI_SUCCESS;
    }
    TRY(kumi_coll_send(&z, 0, MPI_BYTE, g[0], IMPI_LOCAL_BARRIER_TAG, comm));
    return kumi_coll_recv(&z, 0, MPI_BYTE, g[0], IMPI_LOCAL_BARRIER_TAG, comm);
}

static int coll_impi_barrier_masters(struct impi_comm *e, MPI_Comm comm);

/* ------------------------------------------------------------ MPI_Barrier (sheet §5.8) */
int coll_impi_barrier(MPI_Comm comm)
{
    int rc;
    struct impi_comm *e = find(comm);
    if (e && !e->built) {                          /* no local sub-communicator yet: do not make one */
        TRY(local_barrier_p2p(e, comm));
        TRY(coll_impi_barrier_masters(e, comm));
        return local_barrier_p2p(e, comm);
    }
    e = coll_impi_get(comm, &rc);
    if (!e) return rc;
    if (e->local != MPI_COMM_NULL) TRY(kumi_comm_coll(e->local)->barrier(e->local));
    TRY(coll_impi_barrier_masters(e, comm));
    if (e->local != MPI_COMM_NULL) TRY(kumi_comm_coll(e->local)->barrier(e->local));
    return MPI_SUCCESS;
}

/* the global phase among the masters */
static int coll_impi_barrier_masters(struct impi_comm *e, MPI_Comm comm)
{
    char z = 0;
    if (impi_is_master(e, e->me)) {
        int n = e->nm, me = e->me;
        if (linear(e)) {
            if (me == 0) {                         /* rank 0 is master 0 */
                for (int i = 1; i < n; i++) TRY(kumi_coll_recv(&z, 0, MPI_BYTE, e->master[i], IMPI_BARRIER_TAG, comm));
                for (int i = 1; i < n; i++) TRY(kumi_coll_send(&z, 0, MPI_BYTE, e->master[i], IMPI_BARRIER_TAG, comm));
            } else {
                TRY(kumi_coll_send(&z, 0, MPI_BYTE, 0, IMPI_BARRIER_TAG, comm));
                TRY(kumi_coll_recv(&z, 0, MPI_BYTE, 0, IMPI_BARRIER_TAG, comm));
            }
        } else {
            int m = impi_master_num(e, me), D = cubedim(n), h = hibit(m, D);
            for (int i = D - 1; i > h; i--) {
                int c = m | (1 << i);
                if (c < n) TRY(kumi_coll_recv(&z, 0, MPI_BYTE, e->master[c], IMPI_BARRIER_TAG, comm));
            }
            if (m > 0) {
                int p = e->master[m & ~(1 << h)];
                TRY(kumi_coll_send(&z, 0, MPI_BYTE, p, IMPI_BARRIER_TAG, comm));
                TRY(kumi_coll_recv(&z, 0, MPI_BYTE, p, IMPI_BARRIER_TAG, comm));
            }
            for (int i = h + 1; i < D; i++) {
                int c = m | (1 << i);
                if (c < n) TRY(kumi_coll_send(&z, 0, MPI_BYTE, e->master[c], IMPI_BARRIER_TAG, comm));
            }
        }
    }
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ MPI_Bcast (sheet §5.9) */
int coll_impi_bcast(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc;
    struct impi_comm *e = coll_impi_get(comm, &rc);
    if (!e) return rc;
    int me = e->me, n = e->nm, rootnum = impi_local_master_num(e, root);
    size_t c = (size_t)count;
    if (me == root || (impi_is_master(e, me) && !impi_are_local(e, me, root))) {
        if (linear(e)) {
            if (me == root) {
                for (int i = 0; i < n; i++)
                    if (i != rootnum) TRY(kumi_coll_send(buf, c, dt, e->master[i], IMPI_BCAST_TAG, comm));
            } else {
                TRY(kumi_coll_recv(buf, c, dt, root, IMPI_BCAST_TAG, comm));
            }
        } else {
            int mynum = me == root ? rootnum : impi_master_num(e, me);
            int v = (mynum - rootnum + n) % n, D = cubedim(n), h = hibit(v, D);
            if (v > 0) {
                int p = e->master[((v & ~(1 << h)) + rootnum) % n];
                if (impi_are_local(e, p, root)) p = root;
                TRY(kumi_coll_recv(buf, c, dt, p, IMPI_BCAST_TAG, comm));
            }
            for (int i = h + 1; i < D; i++) {
                int ch = v | (1 << i);
                if (ch < n) TRY(kumi_coll_send(buf, c, dt, e->master[(ch + rootnum) % n], IMPI_BCAST_TAG, comm));
            }
        }
    }
    if (e->local != MPI_COMM_NULL) {
        int lroot = impi_are_local(e, me, root) ? e->lidx[root] : 0;
        TRY(kumi_comm_coll(e->local)->bcast(buf, count, dt, lroot, e->local));
    }
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ MPI_Reduce (sheet §5.10) */
/* Non-commutative: linear over all ranks, s0 op (s1 op (... op s_{n-1})). */
static int reduce_noncommute(struct impi_comm *e, const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                             MPI_Op op, int root, MPI_Comm comm)
{
    int me = e->me, n = e->size, rc = MPI_SUCCESS;
    if (me != root) return kumi_coll_send(sbuf, count, dt, root, IMPI_REDUCE_TAG, comm);
    void *m1 = NULL, *m2 = NULL;
    char *own = NULL, *tmp = coll_impi_tmp(count, dt, &m2);
    if (!tmp) return coll_impi_nomem("reduce");
    if (sbuf == MPI_IN_PLACE) {                   /* my input is in rbuf, which gets the result */
        if (!(own = coll_impi_tmp(count, dt, &m1))) {
            free(m2);
            return coll_impi_nomem("reduce");
        }
        rc = kumi_dt_copy(rbuf, count, dt, own, count, dt);
        sbuf = own;
    }
    /* every message is received even after a local error (a peer's rendezvous send must end) */
    int r2 = root == n - 1 ? kumi_dt_copy(sbuf, count, dt, rbuf, count, dt)
                           : kumi_coll_recv(rbuf, count, dt, n - 1, IMPI_REDUCE_TAG, comm);
    rc = rc ? rc : r2;
    for (int i = n - 2; i >= 0; i--) {
        const void *in = sbuf;
        r2 = MPI_SUCCESS;
        if (i != root) {
            r2 = kumi_coll_recv(tmp, count, dt, i, IMPI_REDUCE_TAG, comm);
            in = tmp;
        }
        if (!r2) r2 = kumi_op_reduce(op, in, rbuf, count, dt);
        rc = rc ? rc : r2;
    }
    free(m1);
    free(m2);
    return rc;
}

int coll_impi_reduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, int root,
                     MPI_Comm comm)
{
    int rc;
    struct impi_comm *e = coll_impi_get(comm, &rc);
    if (!e) return rc;
    size_t c = (size_t)count;
    if (!kumi_op_commutative(op)) return reduce_noncommute(e, sbuf, rbuf, c, dt, op, root, comm);
    int me = e->me, n = e->nm;
    void *m1 = NULL, *m2 = NULL;
    char *red = coll_impi_tmp(c, dt, &m1), *tmp = coll_impi_tmp(c, dt, &m2);
    if (!red || !tmp) {
        free(m1);
        free(m2);
        return coll_impi_nomem("reduce");
    }
    /* local phase */
    int atroot = impi_are_local(e, me, root);
    if (e->local != MPI_COMM_NULL) {
        rc = kumi_comm_coll(e->local)->reduce(sbuf, me == root ? rbuf : red, count, dt, op,
                                              atroot ? e->lidx[root] : 0, e->local);
    } else if (me == root) {
        rc = sbuf == MPI_IN_PLACE ? MPI_SUCCESS : kumi_dt_copy(sbuf, c, dt, rbuf, c, dt);
    } else {
        rc = kumi_dt_copy(sbuf, c, dt, red, c, dt);
    }
    /* global phase: the root and the masters of the other clients (also
     * after a local error: the others wait for these messages) */
    int lrc = rc;
    rc = MPI_SUCCESS;
    if (me == root || (impi_is_master(e, me) && !atroot)) {
        char *acc = me == root ? (char *)rbuf : red;
        int rootnum = impi_local_master_num(e, root);
        if (linear(e)) {
            if (me == root) {
                for (int i = 0; i < n && !rc; i++) {
                    if (i == rootnum) continue;
                    rc = kumi_coll_recv(tmp, c, dt, e->master[i], IMPI_REDUCE_TAG, comm);
                    if (!rc) rc = kumi_op_reduce(op, tmp, acc, c, dt);
                }
            } else {
                rc = kumi_coll_send(red, c, dt, root, IMPI_REDUCE_TAG, comm);
            }
        } else {
            int mynum = impi_local_master_num(e, me), v = (mynum - rootnum + n) % n, D = cubedim(n);
            for (int i = 0; i < D && !rc; i++) {
                int mask = 1 << i;
                if (v & mask) {
                    int p = e->master[((v & ~mask) + rootnum) % n];
                    if (impi_are_local(e, p, root)) p = root;
                    rc = kumi_coll_send(acc, c, dt, p, IMPI_REDUCE_TAG, comm);
                    break;
                }
                int ch = v | mask;
                if (ch >= n) continue;
                rc = kumi_coll_recv(tmp, c, dt, e->master[(ch + rootnum) % n], IMPI_REDUCE_TAG, comm);
                if (!rc) rc = kumi_op_reduce(op, tmp, acc, c, dt);
            }
        }
    }
    free(m1);
    free(m2);
    return lrc ? lrc : rc;
}

/* ------------------------------------------------------------ context ids (sheet §5.2-§5.7) */
/* IMPI_max_cid: the largest IMPI context id this process uses.
 * MPI_COMM_WORLD's are 0 (point-to-point) and 1 (collectives: cid + 1,
 * LAM's reading of the final §4.3), so it starts at 1.  A communicator made
 * over a parent that spans clients (MPI_Comm_create, MPI_Comm_split, and
 * MPI_Comm_dup and the topology constructors like MPI_Comm_create: "not
 * from the standard's text", the dup page was not found) takes
 * C = max over the parent's processes + 1 (an IMPI Allreduce of one
 * IMPI_UINT8 with MPI_MAX: Kumi's own, IMPI Reduce to rank 0 + IMPI Bcast)
 * and its collective context C + 1, so this process's IMPI_max_cid becomes
 * C + 1: the draft lets an implementation use private extra cids if it
 * keeps IMPI_max_cid above them, and the collective cid is one (sheet §7.5
 * notes the draft's max + 1 does not reserve the + 1 slot; counting it
 * here does, and a peer that counts only point-to-point cids still gets a
 * C above every cid in use here).  Every process of the parent updates it,
 * also those outside the new group (MPI_Comm_create) or with MPI_UNDEFINED
 * (MPI_Comm_split), as the sheet's pseudo-code does.  It is never lowered
 * when a communicator is freed (the sheet's "may be lowered"): the maximum
 * over the processes makes a lower value elsewhere harmless.  Kumi's context
 * pair of the communicator is KUMI_CTX_IMPI + C (kumi/impi.h). */
static uint64_t max_cid = 1;

static int rule_applies(MPI_Comm comm)
{
    return find(comm) != NULL;
}

uint64_t coll_impi_max_cid(void)
{
    pthread_mutex_lock(&table_lock);
    uint64_t v = max_cid;
    pthread_mutex_unlock(&table_lock);
    return v;
}

/* all: the maximum of IMPI_max_cid over the participants; the new ids are
 * all + 1 .. all + n, so IMPI_max_cid becomes all + n here. */
int coll_impi_cid_take(uint64_t all, int n)
{
    if (all >= KUMI_IMPI_CID_KUMI_LIMIT - (uint64_t)n)   /* sheet: "out of contexts" at IMPI_UINT8_MAX */
        return kumi_error(MPI_ERR_INTERN, "coll/impi: out of contexts (IMPI context id %llu: Kumi holds ids "
                          "below %u)", (unsigned long long)all + 1, KUMI_IMPI_CID_KUMI_LIMIT);
    pthread_mutex_lock(&table_lock);
    if (max_cid < all + (uint64_t)n) max_cid = all + (uint64_t)n;
    pthread_mutex_unlock(&table_lock);
    return MPI_SUCCESS;
}

int coll_impi_client_of_job(int w)
{
    return w >= 0 && w < nprocs ? client_of_world(w) : -1;
}

static int rule_agree(MPI_Comm comm, int32_t *ctx)
{
    uint64_t mine = coll_impi_max_cid(), all = 0;
    int rc = coll_impi_allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_MAX, comm);
    if (rc) return rc;
    TRY(coll_impi_cid_take(all, 2));
    *ctx = KUMI_CTX_IMPI + (int32_t)(all + 1);
    if (coll_impi_verbose > 0 && kumi_comm_rank(comm) == 0)
        fprintf(stderr, "coll/impi[%d]: a new communicator's IMPI context id %llu (collectives %llu)\n",
                kumi_world_rank(), (unsigned long long)all + 1, (unsigned long long)all + 2);
    return MPI_SUCCESS;
}

/* intercommunicators: coll_impi_own.c (not from the standard's text) */
static const struct kumi_ctx_rule impi_rule = { rule_applies, rule_agree, coll_impi_applies_inter,
                                                coll_impi_agree_inter };

/* ------------------------------------------------------------ component */
static int impi_comm_query(MPI_Comm comm, int *priority, struct kumi_coll_fns *fns)
{
    (void)priority;                     /* the default: parameter coll_impi_priority */
    if (kumi_comm_is_inter(comm) || kumi_comm_is_sub(comm) || kumi_comm_size(comm) < 2) return KUMI_UNAVAILABLE;
    struct impi_comm *e = entry_make(comm);
    if (!e) return KUMI_UNAVAILABLE;
    if (coll_impi_verbose > 0 && e->me == 0) {
        char d[512];
        size_t l = 0;
        for (int m = 0; m < e->nm && l + 32 < sizeof d; m++)
            l += (size_t)snprintf(d + l, sizeof d - l, "%s%d (client %d, %d ranks)", m ? ", " : "", e->master[m],
                                  e->client[e->master[m]], impi_nlocal(e, m));
        fprintf(stderr, "coll/impi[%d]: a communicator of %d ranks over %d IMPI clients; masters %s; global phase %s\n",
                kumi_world_rank(), e->size, e->nm, d, linear(e) ? "linear" : "binomial tree");
    }
    pthread_mutex_lock(&table_lock);
    struct impi_comm **pp = &table, *old = NULL;
    while (*pp && (*pp)->comm != comm) pp = &(*pp)->next;
    if (*pp) {                          /* a handle reused without release: forget the old */
        old = *pp;
        *pp = old->next;
    }
    e->next = table;
    table = e;
    pthread_mutex_unlock(&table_lock);
    if (old) entry_free(old, 0);
    /* the standard's algorithms (this file) */
    fns->barrier = coll_impi_barrier;
    fns->bcast = coll_impi_bcast;
    fns->reduce = coll_impi_reduce;
    /* Kumi's own, from the same blocks (coll_impi_own.c) */
    fns->allreduce = coll_impi_allreduce;
    fns->gather = coll_impi_gather;
    fns->gatherv = coll_impi_gatherv;
    fns->scatter = coll_impi_scatter;
    fns->scatterv = coll_impi_scatterv;
    fns->allgather = coll_impi_allgather;
    fns->allgatherv = coll_impi_allgatherv;
    fns->alltoall = coll_impi_alltoall;
    fns->alltoallv = coll_impi_alltoallv;
    fns->reduce_scatter = coll_impi_reduce_scatter;
    fns->reduce_scatter_block = coll_impi_reduce_scatter_block;
    fns->scan = coll_impi_scan;
    return KUMI_OK;
}

static void impi_comm_release(MPI_Comm comm)
{
    pthread_mutex_lock(&table_lock);
    struct impi_comm **pp = &table, *e = NULL;
    while (*pp && (*pp)->comm != comm) pp = &(*pp)->next;
    if (*pp) {
        e = *pp;
        *pp = e->next;
    }
    pthread_mutex_unlock(&table_lock);
    if (e) entry_free(e, 1);
}

static void impi_close(void)
{
    kumi_ctx_rule_set(NULL);
    pthread_mutex_lock(&table_lock);
    struct impi_comm *e = table;
    table = NULL;
    pthread_mutex_unlock(&table_lock);
    while (e) {
        struct impi_comm *n = e->next;
        entry_free(e, 0);
        e = n;
    }
}

static const struct kumi_coll_ops impi_ops_table = {
    .hdr = KUMI_COLL_OPS_HDR,
    .comm_query = impi_comm_query,
    .comm_release = impi_comm_release,
};

KUMI_EXPORT const struct kumi_component kumi_coll_impi_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "coll",
    .name = "impi",
    .version = { 0, 1, 0 },
    .description = "IMPI collectives (global phase among the IMPI clients' masters, local phase in each client)",
    .priority = 60,
    .register_params = impi_register,
    .open = impi_open,
    .close = impi_close,
    .ops = &impi_ops_table,
};
