/* nbc_persist: the MPI-4 persistent collectives (MPI_Barrier_init ...
 * MPI_Exscan_init, the v and w variants included).
 *  1. each one alone, small and 100000-byte counts, MPI_IN_PLACE where
 *     allowed, roots other than 0: initialised once, started three times
 *     with new buffer contents before every start (values depend on the
 *     round), completed by MPI_Wait, an MPI_Test loop or MPI_Waitall.  The
 *     request survives completion (inactive: MPI_Test answers flag = true at
 *     once); MPI_Request_free of the inactive request frees it.
 *  2. all of them at once: MPI_Startall, completed by MPI_Waitall, in
 *     reverse order, or by an MPI_Testall loop.
 *  3. a request freed without ever being started; a persistent collective
 *     started while a non-blocking one is pending on the same communicator.
 *  4. MPI_Barrier_init synchronises: no process leaves before the late one
 *     entered, in every round.
 *  5. two persistent collectives active together, initialised 32768
 *     persistent initialisations apart (the others freed at once): a
 *     communicator may not give them colliding message tags.  MPI_Scan_init
 *     (a chain: rank r sends to r+1 only after hearing from r-1) and
 *     MPI_Gather_init (everyone sends to the last rank at once), so a message
 *     of one would land in a receive of the other.
 * With the argument --until-killed it repeats 2. with 100000-byte counts
 * until it is killed (the KACC VM test kills a rank while its schedules
 * run: tests/kmod/vm-init.sh). */
#include "kt.h"
#include <time.h>
#include <unistd.h>

#define BIG 25000               /* ints: 100000 bytes */
#define NOTSET (-1)
#define ROUNDS 3

static int me, n;

enum { BARRIER, BCAST, GATHER, GATHERV, SCATTER, SCATTERV, ALLGATHER, ALLGATHERV, ALLTOALL, ALLTOALLV,
       ALLTOALLW, REDUCE, ALLREDUCE, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, SCAN, EXSCAN, NKINDS };
static const char *const kname[NKINDS] = {
    "MPI_Barrier_init", "MPI_Bcast_init", "MPI_Gather_init", "MPI_Gatherv_init", "MPI_Scatter_init",
    "MPI_Scatterv_init", "MPI_Allgather_init", "MPI_Allgatherv_init", "MPI_Alltoall_init",
    "MPI_Alltoallv_init", "MPI_Alltoallw_init", "MPI_Reduce_init", "MPI_Allreduce_init",
    "MPI_Reduce_scatter_init", "MPI_Reduce_scatter_block_init", "MPI_Scan_init", "MPI_Exscan_init" };
static const int has_inplace[NKINDS] = {
    [GATHER] = 1, [GATHERV] = 1, [SCATTER] = 1, [SCATTERV] = 1, [ALLGATHER] = 1, [ALLGATHERV] = 1,
    [ALLTOALL] = 1, [ALLTOALLV] = 1, [ALLTOALLW] = 1, [REDUCE] = 1, [ALLREDUCE] = 1, [REDUCE_SCATTER] = 1, [REDUCE_SCATTER_BLOCK] = 1, [SCAN] = 1, [EXSCAN] = 1 };

/* element i from rank r in round rd */
static int v(int r, int i, int rd) { return r * 1000003 + i + rd * 7; }
/* element i of the block s sends to d in round rd */
static int a2a(int s, int d, int i, int rd) { return s * 1000000 + d * 100000 + i + rd * 3; }

static int *ialloc(size_t cnt)
{
    int *p = malloc(sizeof(int) * (cnt ? cnt : 1));
    KT_CHECK(p != NULL, "out of memory");
    return p;
}

static void fill(int *p, size_t cnt, int x)
{
    for (size_t i = 0; i < cnt; i++) p[i] = x;
}

struct pc {
    int kind, cnt, inplace, root;
    int *s, *r;
    size_t slen, rlen;
    int *sc, *sd, *rc, *rd;     /* counts and displacements (elements) of the v-variants */
    int *sdb, *rdb;             /* byte displacements of the w-variant */
    MPI_Datatype *ty;
    MPI_Request rq;
};

#define FAILP(p, rd, ...) do { char m_[200]; snprintf(m_, sizeof m_, __VA_ARGS__); \
    KT_FAIL("%s%s count %d round %d: %s", kname[(p)->kind], (p)->inplace ? " in place" : "", (p)->cnt, \
            rd, m_); } while (0)
#define EXPECT(p, rd, got, want, idx) do { long long g_ = (got), w_ = (want); if (g_ != w_) \
    FAILP(p, rd, "element %d is %lld, expected %lld", (int)(idx), g_, w_); } while (0)

/* Counts of the v-variants: uneven, and zero for some ranks when cnt is 1. */
static int vcnt(int q, int cnt) { return cnt - q % 2; }

static void pc_init(struct pc *p, int kind, int cnt, int inplace)
{
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->cnt = cnt;
    p->inplace = inplace;
    p->root = kind == BCAST || kind == REDUCE ? n - 1 : n / 2;
    p->sc = ialloc((size_t)n * 6);
    p->sd = p->sc + n; p->rc = p->sc + 2 * n; p->rd = p->sc + 3 * n; p->sdb = p->sc + 4 * n; p->rdb = p->sc + 5 * n;
    p->ty = malloc(sizeof(MPI_Datatype) * (size_t)n);
    int stot = 0, rtot = 0;
    for (int q = 0; q < n; q++) p->ty[q] = MPI_INT;
    if (kind == ALLTOALLV || kind == ALLTOALLW) {
        for (int d = 0; d < n; d++) {                   /* symmetric counts: in place works */
            p->sc[d] = p->rc[d] = vcnt(me + d, cnt);
            p->sd[d] = stot;
            stot += p->sc[d] + 1;
        }
        for (int d = n - 1; d >= 0; d--) { p->rd[d] = rtot; rtot += p->rc[d] + 1; }
    } else {
        for (int q = n - 1; q >= 0; q--) {              /* blocks in reverse rank order with a gap */
            p->rc[q] = p->sc[q] = vcnt(q, cnt);
            p->rd[q] = p->sd[q] = rtot;
            rtot += p->rc[q] + 1;
        }
        stot = rtot;
    }
    for (int q = 0; q < n; q++) {
        p->sdb[q] = p->sd[q] * (int)sizeof(int);
        p->rdb[q] = p->rd[q] * (int)sizeof(int);
    }
    size_t all = (size_t)n * (size_t)cnt + 1;
    p->slen = (size_t)stot > all ? (size_t)stot : all;
    p->rlen = (size_t)rtot > all ? (size_t)rtot : all;
    p->s = ialloc(p->slen);
    p->r = ialloc(p->rlen);
    int rt = p->root, ip = inplace, c = cnt;
    const void *sb = p->s;
    void *rb = p->r;
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Info ni = MPI_INFO_NULL;
    switch (kind) {
    case BARRIER: KT_MPI(MPI_Barrier_init(w, ni, &p->rq)); break;
    case BCAST: KT_MPI(MPI_Bcast_init(rb, c, MPI_INT, rt, w, ni, &p->rq)); break;
    case GATHER:
        KT_MPI(MPI_Gather_init(ip && me == rt ? MPI_IN_PLACE : sb, c, MPI_INT, rb, c, MPI_INT, rt, w, ni, &p->rq));
        break;
    case GATHERV:
        KT_MPI(MPI_Gatherv_init(ip && me == rt ? MPI_IN_PLACE : sb, p->sc[me], MPI_INT, rb, p->rc, p->rd, MPI_INT,
                                rt, w, ni, &p->rq));
        break;
    case SCATTER:
        KT_MPI(MPI_Scatter_init(sb, c, MPI_INT, ip && me == rt ? MPI_IN_PLACE : rb, c, MPI_INT, rt, w, ni, &p->rq));
        break;
    case SCATTERV:
        KT_MPI(MPI_Scatterv_init(sb, p->sc, p->sd, MPI_INT, ip && me == rt ? MPI_IN_PLACE : rb, p->rc[me], MPI_INT,
                                 rt, w, ni, &p->rq));
        break;
    case ALLGATHER:
        KT_MPI(MPI_Allgather_init(ip ? MPI_IN_PLACE : sb, c, MPI_INT, rb, c, MPI_INT, w, ni, &p->rq));
        break;
    case ALLGATHERV:
        KT_MPI(MPI_Allgatherv_init(ip ? MPI_IN_PLACE : sb, p->sc[me], MPI_INT, rb, p->rc, p->rd, MPI_INT, w, ni, &p->rq));
        break;
    case ALLTOALL:
        KT_MPI(MPI_Alltoall_init(ip ? MPI_IN_PLACE : sb, c, MPI_INT, rb, c, MPI_INT, w, ni, &p->rq));
        break;
    case ALLTOALLV:
        KT_MPI(MPI_Alltoallv_init(ip ? MPI_IN_PLACE : sb, p->sc, p->sd, MPI_INT, rb, p->rc, p->rd, MPI_INT,
                                  w, ni, &p->rq));
        break;
    case ALLTOALLW:
        KT_MPI(MPI_Alltoallw_init(ip ? MPI_IN_PLACE : sb, p->sc, p->sdb, p->ty, rb, p->rc, p->rdb, p->ty, w, ni, &p->rq));
        break;
    case REDUCE:
        KT_MPI(MPI_Reduce_init(ip && me == rt ? MPI_IN_PLACE : sb, rb, c, MPI_INT, MPI_SUM, rt, w, ni, &p->rq));
        break;
    case ALLREDUCE:
        KT_MPI(MPI_Allreduce_init(ip ? MPI_IN_PLACE : sb, rb, c, MPI_INT, MPI_SUM, w, ni, &p->rq));
        break;
    case REDUCE_SCATTER:
        KT_MPI(MPI_Reduce_scatter_init(ip ? MPI_IN_PLACE : sb, rb, p->rc, MPI_INT, MPI_SUM, w, ni, &p->rq));
        break;
    case REDUCE_SCATTER_BLOCK:
        KT_MPI(MPI_Reduce_scatter_block_init(ip ? MPI_IN_PLACE : sb, rb, c, MPI_INT, MPI_SUM, w, ni, &p->rq));
        break;
    case SCAN: KT_MPI(MPI_Scan_init(ip ? MPI_IN_PLACE : sb, rb, c, MPI_INT, MPI_SUM, w, ni, &p->rq)); break;
    default: KT_MPI(MPI_Exscan_init(ip ? MPI_IN_PLACE : sb, rb, c, MPI_INT, MPI_SUM, w, ni, &p->rq)); break;
    }
    KT_CHECK(p->rq != MPI_REQUEST_NULL, "%s gave no request", kname[kind]);
}

/* Offset of my part in the v-layout counted in rank order (reduce_scatter). */
static int rank_offset(const struct pc *p, int q)
{
    int off = 0;
    for (int k = 0; k < q; k++) off += p->rc[k];
    return off;
}

/* New contents before round rd: the inputs of the round, NOTSET where output goes. */
static void pc_fill(struct pc *p, int rd)
{
    int c = p->cnt, rt = p->root;
    int *s = p->s, *r = p->r;
    fill(s, p->slen, NOTSET);
    fill(r, p->rlen, NOTSET);
    switch (p->kind) {
    case BARRIER: break;
    case BCAST: if (me == rt) for (int i = 0; i < c; i++) r[i] = v(rt, i, rd); break;
    case GATHER: case ALLGATHER:
        for (int i = 0; i < c; i++) s[i] = v(me, i, rd);
        if (p->inplace) memcpy(r + (size_t)me * c, s, sizeof(int) * (size_t)c);
        break;
    case GATHERV: case ALLGATHERV:
        for (int i = 0; i < p->sc[me]; i++) s[i] = v(me, i, rd);
        if (p->inplace) memcpy(r + p->rd[me], s, sizeof(int) * (size_t)p->sc[me]);
        break;
    case SCATTER:
        if (me == rt) for (int i = 0; i < n * c; i++) s[i] = v(i / c, i % c, rd) + 1;
        break;
    case SCATTERV:
        if (me == rt)
            for (int q = 0; q < n; q++)
                for (int i = 0; i < p->sc[q]; i++) s[p->sd[q] + i] = v(q, i, rd) + 1;
        break;
    case ALLTOALL:
        for (int d = 0; d < n; d++)
            for (int i = 0; i < c; i++) (p->inplace ? r : s)[d * c + i] = a2a(me, d, i, rd);
        break;
    case ALLTOALLV: case ALLTOALLW:
        for (int d = 0; d < n; d++)
            for (int i = 0; i < p->sc[d]; i++) {
                if (p->inplace) r[p->rd[d] + i] = a2a(me, d, i, rd);
                else s[p->sd[d] + i] = a2a(me, d, i, rd);
            }
        break;
    case REDUCE: case ALLREDUCE: case SCAN: case EXSCAN:
        for (int i = 0; i < c; i++) s[i] = v(me, i, rd);
        if (p->inplace && (p->kind != REDUCE || me == rt)) memcpy(r, s, sizeof(int) * (size_t)c);
        break;
    case REDUCE_SCATTER_BLOCK:
        for (int j = 0; j < n * c; j++) (p->inplace ? r : s)[j] = v(me, j, rd);
        break;
    default: /* REDUCE_SCATTER */
        for (int j = 0; j < rank_offset(p, n); j++) (p->inplace ? r : s)[j] = v(me, j, rd);
        break;
    }
}

static long long sum_over(int lo, int hi, int i, int rd)
{
    long long t = 0;
    for (int q = lo; q < hi; q++) t += v(q, i, rd);
    return t;
}

static void pc_check(const struct pc *p, int rd)
{
    int c = p->cnt, rt = p->root;
    const int *r = p->r;
    switch (p->kind) {
    case BARRIER: break;
    case BCAST:
        for (int i = 0; i < c; i++) EXPECT(p, rd, r[i], v(rt, i, rd), i);
        EXPECT(p, rd, r[c], NOTSET, c);
        break;
    case GATHER: case ALLGATHER:
        if (p->kind == GATHER && me != rt) break;
        for (int i = 0; i < n * c; i++) EXPECT(p, rd, r[i], v(i / c, i % c, rd), i);
        EXPECT(p, rd, r[n * c], NOTSET, n * c);
        break;
    case GATHERV: case ALLGATHERV:
        if (p->kind == GATHERV && me != rt) break;
        for (int q = 0; q < n; q++) {
            for (int i = 0; i < p->rc[q]; i++) EXPECT(p, rd, r[p->rd[q] + i], v(q, i, rd), p->rd[q] + i);
            EXPECT(p, rd, r[p->rd[q] + p->rc[q]], NOTSET, p->rd[q] + p->rc[q]);
        }
        break;
    case SCATTER: case SCATTERV: {
        int mine = p->kind == SCATTER ? c : p->rc[me];
        if (p->inplace && me == rt) {                   /* nothing moves at the root */
            for (int i = 0; i < mine + 1; i++) EXPECT(p, rd, r[i], NOTSET, i);
            break;
        }
        for (int i = 0; i < mine; i++) EXPECT(p, rd, r[i], v(me, i, rd) + 1, i);
        EXPECT(p, rd, r[mine], NOTSET, mine);
        break;
    }
    case ALLTOALL:
        for (int q = 0; q < n; q++)
            for (int i = 0; i < c; i++) EXPECT(p, rd, r[q * c + i], a2a(q, me, i, rd), q * c + i);
        if (!p->inplace) EXPECT(p, rd, r[n * c], NOTSET, n * c);
        break;
    case ALLTOALLV: case ALLTOALLW:
        for (int q = 0; q < n; q++) {
            for (int i = 0; i < p->rc[q]; i++) EXPECT(p, rd, r[p->rd[q] + i], a2a(q, me, i, rd), p->rd[q] + i);
            EXPECT(p, rd, r[p->rd[q] + p->rc[q]], NOTSET, p->rd[q] + p->rc[q]);
        }
        break;
    case REDUCE: case ALLREDUCE:
        if (p->kind == REDUCE && me != rt) {
            for (int i = 0; i < c; i++) EXPECT(p, rd, r[i], NOTSET, i);   /* not the root's: untouched */
            break;
        }
        for (int i = 0; i < c; i++) EXPECT(p, rd, r[i], sum_over(0, n, i, rd), i);
        EXPECT(p, rd, r[c], NOTSET, c);
        break;
    case SCAN: case EXSCAN:
        if (p->kind == EXSCAN && me == 0) break;         /* undefined on rank 0 */
        for (int i = 0; i < c; i++) EXPECT(p, rd, r[i], sum_over(0, p->kind == SCAN ? me + 1 : me, i, rd), i);
        EXPECT(p, rd, r[c], NOTSET, c);
        break;
    case REDUCE_SCATTER_BLOCK:
        for (int i = 0; i < c; i++) EXPECT(p, rd, r[i], sum_over(0, n, me * c + i, rd), i);
        break;
    default: { /* REDUCE_SCATTER */
        int off = rank_offset(p, me);
        for (int i = 0; i < p->rc[me]; i++) EXPECT(p, rd, r[i], sum_over(0, n, off + i, rd), i);
        if (!p->inplace) EXPECT(p, rd, r[p->rc[me]], NOTSET, p->rc[me]);
        break;
    }
    }
}

static void pc_free(struct pc *p)
{
    KT_MPI(MPI_Request_free(&p->rq));
    KT_CHECK(p->rq == MPI_REQUEST_NULL, "%s: MPI_Request_free left the request", kname[p->kind]);
    free(p->s); free(p->r); free(p->sc); free(p->ty);
}

/* 1. one at a time */
static void test_each(void)
{
    int cnts[2] = { 1, BIG };
    for (int kind = 0; kind < NKINDS; kind++)
        for (int c = 0; c < 2; c++)
            for (int ip = 0; ip <= has_inplace[kind]; ip++) {
                struct pc p;
                int flag = 0;
                pc_init(&p, kind, cnts[c], ip);
                /* inactive before the first start: completes at once */
                KT_MPI(MPI_Test(&p.rq, &flag, MPI_STATUS_IGNORE));
                KT_CHECK(flag, "%s: MPI_Test of the inactive request gave flag = false", kname[kind]);
                for (int rd = 0; rd < ROUNDS; rd++) {
                    pc_fill(&p, rd);
                    KT_MPI(MPI_Start(&p.rq));
                    switch (rd) {
                    case 0: KT_MPI(MPI_Wait(&p.rq, MPI_STATUS_IGNORE)); break;
                    case 1: flag = 0; while (!flag) KT_MPI(MPI_Test(&p.rq, &flag, MPI_STATUS_IGNORE)); break;
                    default: KT_MPI(MPI_Waitall(1, &p.rq, MPI_STATUSES_IGNORE)); break;
                    }
                    KT_CHECK(p.rq != MPI_REQUEST_NULL, "%s: completion freed the persistent request", kname[kind]);
                    pc_check(&p, rd);
                }
                KT_MPI(MPI_Wait(&p.rq, MPI_STATUS_IGNORE));     /* inactive again */
                pc_free(&p);
            }
}

/* 2. all at once */
static void test_startall(int cnt)
{
    struct pc p[NKINDS];
    MPI_Request rq[NKINDS];
    for (int k = 0; k < NKINDS; k++) {
        pc_init(&p[k], k, cnt, k % 2 && has_inplace[k]);
        rq[k] = p[k].rq;
    }
    for (int rd = 0; rd < ROUNDS; rd++) {
        int flag = 0;
        for (int k = 0; k < NKINDS; k++) pc_fill(&p[k], rd);
        KT_MPI(MPI_Startall(NKINDS, rq));
        switch (rd) {
        case 0: KT_MPI(MPI_Waitall(NKINDS, rq, MPI_STATUSES_IGNORE)); break;
        case 1: for (int k = NKINDS - 1; k >= 0; k--) KT_MPI(MPI_Wait(&rq[k], MPI_STATUS_IGNORE)); break;
        default: while (!flag) KT_MPI(MPI_Testall(NKINDS, rq, &flag, MPI_STATUSES_IGNORE)); break;
        }
        for (int k = 0; k < NKINDS; k++) {
            KT_CHECK(rq[k] == p[k].rq, "%s: the request changed", kname[k]);
            pc_check(&p[k], rd);
        }
    }
    for (int k = 0; k < NKINDS; k++) pc_free(&p[k]);
}

/* 3. freed unstarted; started while a non-blocking collective is pending */
static void test_mixed(void)
{
    struct pc unused, p;
    pc_init(&unused, BCAST, 4, 0);
    pc_free(&unused);
    pc_init(&p, ALLREDUCE, BIG, 0);
    int *b = ialloc(BIG);
    for (int rd = 0; rd < ROUNDS; rd++) {
        MPI_Request ib;
        for (int i = 0; i < BIG; i++) b[i] = me == 0 ? v(0, i, rd) * 2 : NOTSET;
        pc_fill(&p, rd);
        KT_MPI(MPI_Ibcast(b, BIG, MPI_INT, 0, MPI_COMM_WORLD, &ib));
        KT_MPI(MPI_Start(&p.rq));
        if (rd % 2) {
            KT_MPI(MPI_Wait(&p.rq, MPI_STATUS_IGNORE));
            KT_MPI(MPI_Wait(&ib, MPI_STATUS_IGNORE));
        } else {
            MPI_Request both[2] = { ib, p.rq };
            KT_MPI(MPI_Waitall(2, both, MPI_STATUSES_IGNORE));
            KT_CHECK(both[0] == MPI_REQUEST_NULL, "the Ibcast request was not freed");
            KT_CHECK(both[1] == p.rq, "the persistent request changed");
        }
        pc_check(&p, rd);
        for (int i = 0; i < BIG; i++)
            if (b[i] != v(0, i, rd) * 2) KT_FAIL("Ibcast beside MPI_Allreduce_init round %d: [%d] = %d", rd, i, b[i]);
    }
    free(b);
    pc_free(&p);
}

/* 4. In round rd rank rd % n enters 20 ms late; the others must leave after
 * it entered (one host, so CLOCK_MONOTONIC is one clock for all). */
static void test_barrier_sync(void)
{
    MPI_Request rq;
    KT_MPI(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
    for (int rd = 0; rd < ROUNDS; rd++) {
        int late = rd % n;
        double entered = 0, left;
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (me == late) {
            usleep(20000);
            entered = kt_now();
        }
        KT_MPI(MPI_Start(&rq));
        KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        left = kt_now();
        KT_MPI(MPI_Bcast(&entered, 1, MPI_DOUBLE, late, MPI_COMM_WORLD));
        KT_CHECK(left >= entered, "MPI_Barrier_init round %d: left %.6f before rank %d entered at %.6f",
                 rd, left, late, entered);
    }
    KT_MPI(MPI_Request_free(&rq));
}

/* 5. long-lived persistent collectives and many created since */
/* Persistent collectives made long after one still alive must not take
 * its messages.  Kumi gives each persistent collective of a communicator
 * one of 2^18 tag slots in turn; the init that would reuse the slot of a
 * request still alive is refused (MPI_ERR_OTHER) rather than let the two
 * mix, and the next init takes the next slot.  So: MPI_Scan_init, 2^18
 * inits of MPI_Barrier_init (freed at once; the last one lands on the
 * scan's slot), then MPI_Gather_init, and both started together. */
#define PERS_SLOTS (1 << 18)
static void test_many_inits(void)
{
    int a, ar = NOTSET, b, *br = ialloc((size_t)n);
    MPI_Request rq[2], tmp;
    KT_MPI(MPI_Scan_init(&a, &ar, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]));
    for (int i = 1; i <= PERS_SLOTS; i++) {
#ifdef KUMI_MPI
        if (i == PERS_SLOTS) {
            KT_ERRCLASS(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &tmp), MPI_ERR_OTHER);
            continue;
        }
#endif
        KT_MPI(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &tmp));
        KT_MPI(MPI_Request_free(&tmp));
    }
    KT_MPI(MPI_Gather_init(&b, 1, MPI_INT, br, 1, MPI_INT, n - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]));
    for (int rd = 0; rd < ROUNDS; rd++) {
        a = v(me, 0, rd);
        b = v(me, 1, rd);
        fill(br, (size_t)n, NOTSET);
        KT_MPI(MPI_Startall(2, rq));
        KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        long long want = 0;
        for (int q = 0; q <= me; q++) want += v(q, 0, rd);
        if (ar != want)
            KT_FAIL("MPI_Scan_init started with an MPI_Gather_init made 2^18 inits later, round %d: %d, "
                    "expected %lld", rd, ar, want);
        if (me == n - 1)
            for (int q = 0; q < n; q++)
                if (br[q] != v(q, 1, rd))
                    KT_FAIL("MPI_Gather_init started with an MPI_Scan_init made 2^18 inits earlier, round %d: "
                            "block %d is %d", rd, q, br[q]);
    }
    KT_MPI(MPI_Request_free(&rq[0]));
    KT_MPI(MPI_Request_free(&rq[1]));
    free(br);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (argc > 1 && strcmp(argv[1], "--until-killed") == 0)
        for (;;) test_startall(BIG);
    test_each();
    test_startall(2);
    test_startall(BIG);
    test_mixed();
    test_barrier_sync();
    test_many_inits();
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return 0;
}
