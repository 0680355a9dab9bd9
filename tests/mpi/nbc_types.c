/* nbc_types: non-blocking collectives on derived datatypes and with a
 * non-commutative user-defined operation.
 *
 * Two layouts of ints, each used as the datatype of whole collectives
 * (send and receive side) and mixed with plain MPI_INT on the other side:
 *   VEC  MPI_Type_vector(3, 2, 5, MPI_INT): data at ints 0 1 5 6 10 11 of
 *        every 12 (a vector with a stride)
 *   RES  an hindexed type with ints at bytes -8 and 4, resized to lb = -12
 *        bytes and extent 20: data at ints -2 and 1 of every 5, before the
 *        buffer's address (lb != 0 and data below the address; temporaries
 *        must be shifted by the true lower bound)
 * Counts 0, 1, 50 and about 100000 bytes (rendezvous).  Every int of a
 * buffer that is not data must stay untouched.  The reductions on them use
 * a user-defined sum that finds the data through the datatype it is given
 * (predefined ops are defined on predefined datatypes only): it reads and
 * writes at the addresses the library passes, so a temporary buffer that is
 * not shifted by the lower bound gives wrong sums or written holes.
 *
 * The non-commutative op is the product of 2x2 integer matrices (mod 9973)
 * on a contiguous type of 4 ints: the result must be x0 x1 ... x(n-1) in
 * rank order, for Ireduce (roots n-1 and n/2), Iallreduce, Iscan, Iexscan,
 * Ireduce_scatter_block and Ireduce_scatter, in place too.
 *
 * A datatype and a user op freed while a non-blocking collective uses them,
 * and between the starts of a persistent one, stay usable by it.  MPI_MAXLOC
 * and MPI_MINLOC on MPI_DOUBLE_INT (a predefined pair type with a gap). */
#include "kt.h"

#define BIGI 25000             /* ints: 100000 bytes */
#define HOLE (-55)
#define NOTSET (-1)
#define P 9973

static int me, n;
static const char *cur = "";
static long cur_count;

#define CHECK_AT(got, want, idx) do { long long g_ = (got), w_ = (want); if (g_ != w_) \
    KT_FAIL("%s count %ld: datum %ld is %lld, expected %lld", cur, cur_count, (long)(idx), g_, w_); } while (0)

static int val(int r, long k) { return r * 1000003 + (int)k; }

static int *ialloc(size_t cnt)
{
    int *p = malloc(sizeof(int) * (cnt ? cnt : 1));
    KT_CHECK(p != NULL, "out of memory");
    return p;
}

static void wait1(MPI_Request *rq)
{
    KT_MPI(MPI_Wait(rq, MPI_STATUS_IGNORE));
    KT_CHECK(*rq == MPI_REQUEST_NULL, "%s: request not freed", cur);
}

/* ---------------------------------------------------------------- layouts */
struct lay {
    const char *name;
    MPI_Datatype t;
    int nper;           /* ints of data per element */
    int ext;            /* extent in ints */
    int pos[6];         /* int offset of each datum inside an element */
    long big;           /* elements in about 100000 bytes of data */
};

static const struct lay *lays[2];
static int tsum_calls;

/* int offset from the buffer's address of datum k (type-map order) */
static long at(const struct lay *L, long k) { return k / L->nper * L->ext + L->pos[k % L->nper]; }

/* A buffer for cnt elements with one spare extent on each side (RES has data
 * below the address); every int is HOLE. */
struct tbuf { int *base, *buf; size_t len; };

static struct tbuf tb_new(const struct lay *L, long cnt)
{
    struct tbuf b;
    b.len = (size_t)(cnt + 2) * (size_t)L->ext;
    b.base = ialloc(b.len);
    for (size_t i = 0; i < b.len; i++) b.base[i] = HOLE;
    b.buf = b.base + L->ext;
    return b;
}

/* Data k of the buffer must equal want(k); then every int must be HOLE. */
#define TB_CHECK(L, b, ndata, want_expr) do { \
    for (long k = 0; k < (ndata); k++) { \
        CHECK_AT((b).buf[at((L), k)], (want_expr), k); \
        (b).buf[at((L), k)] = HOLE; } \
    for (size_t h = 0; h < (b).len; h++) \
        if ((b).base[h] != HOLE) KT_FAIL("%s count %ld: hole at int %ld was written (%d)", cur, cur_count, \
                                         (long)h - (L)->ext, (b).base[h]); } while (0)

/* inout += in on the data of the layout the datatype names */
static void tsum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const struct lay *L = *dt == lays[0]->t ? lays[0] : *dt == lays[1]->t ? lays[1] : NULL;
    KT_CHECK(L != NULL, "tsum got another datatype");
    const int *a = in;
    int *b = inout;
    for (long k = 0; k < (long)*len * L->nper; k++) b[at(L, k)] += a[at(L, k)];
    tsum_calls++;
}

static void set_cur(const struct lay *L, const char *what, long cnt)
{
    static char buf[128];
    snprintf(buf, sizeof buf, "%s(%s)", what, L->name);
    cur = buf;
    cur_count = cnt;
}

static void test_layout(const struct lay *L, long cnt, MPI_Op sum)
{
    MPI_Request rq;
    long nd = cnt * L->nper;                /* data ints per process block */
    int root = n - 1;

    /* ---- Ibcast from the last rank */
    set_cur(L, "MPI_Ibcast", cnt);
    {
        struct tbuf b = tb_new(L, cnt);
        if (me == root)
            for (long k = 0; k < nd; k++) b.buf[at(L, k)] = val(root, k);
        KT_MPI(MPI_Ibcast(b.buf, (int)cnt, L->t, root, MPI_COMM_WORLD, &rq));
        wait1(&rq);
        TB_CHECK(L, b, nd, val(root, k));
        free(b.base);
    }

    /* ---- Igather: send as the layout, receive as ints (packed) and as the layout */
    for (int packed = 0; packed < 2; packed++) {
        set_cur(L, packed ? "MPI_Igather to ints" : "MPI_Igather", cnt);
        struct tbuf s = tb_new(L, cnt), r = tb_new(L, cnt * n);
        int *p = ialloc((size_t)(nd * n + 1));
        for (long k = 0; k < nd; k++) s.buf[at(L, k)] = val(me, k);
        for (long i = 0; i <= nd * n; i++) p[i] = NOTSET;
        if (packed) KT_MPI(MPI_Igather(s.buf, (int)cnt, L->t, p, (int)nd, MPI_INT, root, MPI_COMM_WORLD, &rq));
        else KT_MPI(MPI_Igather(s.buf, (int)cnt, L->t, r.buf, (int)cnt, L->t, root, MPI_COMM_WORLD, &rq));
        wait1(&rq);
        if (me == root) {
            if (packed) {
                for (long i = 0; i < nd * n; i++) CHECK_AT(p[i], val((int)(i / nd), i % nd), i);
                CHECK_AT(p[nd * n], NOTSET, nd * n);
            } else {
                TB_CHECK(L, r, nd * n, val((int)(k / nd), k % nd));
            }
        }
        TB_CHECK(L, s, nd, val(me, k));      /* the send buffer is unchanged */
        free(s.base); free(r.base); free(p);
    }

    /* ---- Iscatter from rank n/2, layout on both sides */
    set_cur(L, "MPI_Iscatter", cnt);
    {
        struct tbuf s = tb_new(L, cnt * n), r = tb_new(L, cnt);
        if (me == n / 2)
            for (long k = 0; k < nd * n; k++) s.buf[at(L, k)] = val((int)(k / nd), k % nd) + 5;
        KT_MPI(MPI_Iscatter(s.buf, (int)cnt, L->t, r.buf, (int)cnt, L->t, n / 2, MPI_COMM_WORLD, &rq));
        wait1(&rq);
        TB_CHECK(L, r, nd, val(me, k) + 5);
        free(s.base); free(r.base);
    }

    /* ---- Iallgather into ints; Iallgatherv into the layout (rank r gives cnt - r % 2) */
    set_cur(L, "MPI_Iallgather to ints", cnt);
    {
        struct tbuf s = tb_new(L, cnt);
        int *p = ialloc((size_t)(nd * n + 1));
        for (long k = 0; k < nd; k++) s.buf[at(L, k)] = val(me, k) - 3;
        for (long i = 0; i <= nd * n; i++) p[i] = NOTSET;
        KT_MPI(MPI_Iallgather(s.buf, (int)cnt, L->t, p, (int)nd, MPI_INT, MPI_COMM_WORLD, &rq));
        wait1(&rq);
        for (long i = 0; i < nd * n; i++) CHECK_AT(p[i], val((int)(i / nd), i % nd) - 3, i);
        CHECK_AT(p[nd * n], NOTSET, nd * n);

        set_cur(L, "MPI_Iallgatherv", cnt);
        int *vc = ialloc((size_t)n), *dsp = ialloc((size_t)n), tot = 0;
        for (int r = n - 1; r >= 0; r--) {          /* blocks in reverse rank order, one element apart */
            vc[r] = cnt > 0 ? (int)cnt - r % 2 : 0;
            dsp[r] = tot;
            tot += vc[r] + 1;
        }
        struct tbuf r = tb_new(L, tot);
        KT_MPI(MPI_Iallgatherv(s.buf, vc[me], L->t, r.buf, vc, dsp, L->t, MPI_COMM_WORLD, &rq));
        wait1(&rq);
        for (int q = 0; q < n; q++)
            for (long k = 0; k < (long)vc[q] * L->nper; k++) {
                long d = (long)dsp[q] * L->nper + k;
                CHECK_AT(r.buf[at(L, d)], val(q, k) - 3, d);
                r.buf[at(L, d)] = HOLE;
            }
        TB_CHECK(L, r, 0, 0);
        free(s.base); free(r.base); free(p); free(vc); free(dsp);
    }

    /* ---- Ialltoall (layout both sides); Ialltoallw (layout -> ints) */
    set_cur(L, "MPI_Ialltoall", cnt);
    {
        struct tbuf s = tb_new(L, cnt * n), r = tb_new(L, cnt * n);
        for (long k = 0; k < nd * n; k++) s.buf[at(L, k)] = val(me, k);     /* block d: k / nd == d */
        KT_MPI(MPI_Ialltoall(s.buf, (int)cnt, L->t, r.buf, (int)cnt, L->t, MPI_COMM_WORLD, &rq));
        wait1(&rq);
        /* my block from q is q's block me: datum me * nd + j of q */
        TB_CHECK(L, r, nd * n, val((int)(k / nd), me * nd + k % nd));

        set_cur(L, "MPI_Ialltoallw to ints", cnt);
        int *sc = ialloc((size_t)n * 4), *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n;
        MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * 2 * (size_t)n), *rt = st + n;
        int *p = ialloc((size_t)(nd * n + 1));
        for (int d = 0; d < n; d++) {
            sc[d] = (int)cnt;
            sd[d] = (int)((long)d * cnt * L->ext * (long)sizeof(int));
            st[d] = L->t;
            rc[d] = (int)nd;
            rd[d] = (int)((long)(n - 1 - d) * nd * (long)sizeof(int));   /* reverse order */
            rt[d] = MPI_INT;
        }
        for (long i = 0; i <= nd * n; i++) p[i] = NOTSET;
        KT_MPI(MPI_Ialltoallw(s.buf, sc, sd, st, p, rc, rd, rt, MPI_COMM_WORLD, &rq));
        wait1(&rq);
        for (int q = 0; q < n; q++)
            for (long j = 0; j < nd; j++) CHECK_AT(p[(n - 1 - q) * nd + j], val(q, me * nd + j), (n - 1 - q) * nd + j);
        CHECK_AT(p[nd * n], NOTSET, nd * n);
        free(s.base); free(r.base); free(p); free(sc); free(st);
    }

    /* ---- Iallreduce, Ireduce (root n/2), Iscan, Ireduce_scatter_block with tsum */
    for (int which = 0; which < 4; which++) {
        static const char *names[] = { "MPI_Iallreduce", "MPI_Ireduce", "MPI_Iscan", "MPI_Ireduce_scatter_block" };
        set_cur(L, names[which], cnt);
        long elems = which == 3 ? cnt * n : cnt;
        struct tbuf s = tb_new(L, elems), r = tb_new(L, elems);
        for (long k = 0; k < elems * L->nper; k++) s.buf[at(L, k)] = val(me, k) % 1000;
        switch (which) {
        case 0: KT_MPI(MPI_Iallreduce(s.buf, r.buf, (int)cnt, L->t, sum, MPI_COMM_WORLD, &rq)); break;
        case 1: KT_MPI(MPI_Ireduce(s.buf, r.buf, (int)cnt, L->t, sum, n / 2, MPI_COMM_WORLD, &rq)); break;
        case 2: KT_MPI(MPI_Iscan(s.buf, r.buf, (int)cnt, L->t, sum, MPI_COMM_WORLD, &rq)); break;
        default: KT_MPI(MPI_Ireduce_scatter_block(s.buf, r.buf, (int)cnt, L->t, sum, MPI_COMM_WORLD, &rq)); break;
        }
        wait1(&rq);
        int upto = which == 2 ? me + 1 : n;          /* Iscan: ranks 0..me */
        long off = which == 3 ? me * nd : 0;        /* Ireduce_scatter_block: my block */
        if (which != 1 || me == n / 2) {
            for (long k = 0; k < nd; k++) {
                long want = 0;
                for (int q = 0; q < upto; q++) want += val(q, off + k) % 1000;
                CHECK_AT(r.buf[at(L, k)], want, k);
                r.buf[at(L, k)] = HOLE;
            }
        }
        TB_CHECK(L, r, 0, 0);
        TB_CHECK(L, s, elems * L->nper, val(me, k) % 1000);
        free(s.base); free(r.base);
    }
}

/* ------------------------------------------------ non-commutative op */
static MPI_Datatype mat;
static int op_calls;

/* inout = in x inout (2x2 matrices mod P; in comes from the lower ranks) */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    KT_CHECK(*dt == mat, "the op got another datatype");
    const int *a = in;
    int *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c0 = (a[0] * b[0] + a[1] * b[2]) % P, c1 = (a[0] * b[1] + a[1] * b[3]) % P;
        int c2 = (a[2] * b[0] + a[3] * b[2]) % P, c3 = (a[2] * b[1] + a[3] * b[3]) % P;
        b[0] = c0; b[1] = c1; b[2] = c2; b[3] = c3;
    }
    op_calls++;
}

/* the matrix rank r contributes as element i */
static void mat_of(int r, long i, int m[4])
{
    m[0] = (int)((r + i) % 5) + 1;
    m[1] = (int)((r * 3 + i) % 7);
    m[2] = (int)(i % 3) + 1;
    m[3] = r % 4 + 2;
}

/* product of the matrices of ranks [lo, hi) for element i, in rank order */
static void prod(int lo, int hi, long i, int out[4])
{
    int m[4];
    out[0] = 1; out[1] = 0; out[2] = 0; out[3] = 1;
    for (int r = lo; r < hi; r++) {
        mat_of(r, i, m);
        int c0 = (out[0] * m[0] + out[1] * m[2]) % P, c1 = (out[0] * m[1] + out[1] * m[3]) % P;
        int c2 = (out[2] * m[0] + out[3] * m[2]) % P, c3 = (out[2] * m[1] + out[3] * m[3]) % P;
        out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
    }
}

static void check_prod(const int *got, long cnt, long first, int lo, int hi)
{
    int want[4];
    for (long i = 0; i < cnt; i++) {
        prod(lo, hi, first + i, want);
        for (int j = 0; j < 4; j++) CHECK_AT(got[4 * i + j], want[j], 4 * i + j);
    }
}

static void test_noncommutative(MPI_Op op, long cnt)
{
    MPI_Request rq;
    long tot = cnt * n;
    int *s = ialloc((size_t)(4 * tot + 4)), *r = ialloc((size_t)(4 * tot + 4));
    for (int inplace = 0; inplace < 2; inplace++) {
        int roots[2] = { n - 1, n / 2 };
        for (int k = 0; k < (n / 2 == n - 1 ? 1 : 2); k++) {
            int root = roots[k];
            cur = inplace ? "MPI_Ireduce(matmul) in place" : "MPI_Ireduce(matmul)";
            cur_count = cnt;
            int *dst = inplace && me == root ? s : r;
            for (long i = 0; i < cnt; i++) mat_of(me, i, s + 4 * i);
            r[4 * cnt] = NOTSET;
            KT_MPI(MPI_Ireduce(inplace && me == root ? MPI_IN_PLACE : s, me == root ? dst : NULL, (int)cnt,
                               mat, op, root, MPI_COMM_WORLD, &rq));
            wait1(&rq);
            if (me == root) check_prod(dst, cnt, 0, 0, n);
            CHECK_AT(r[4 * cnt], NOTSET, 4 * cnt);
        }

        cur = inplace ? "MPI_Iallreduce(matmul) in place" : "MPI_Iallreduce(matmul)";
        for (long i = 0; i < cnt; i++) mat_of(me, i, inplace ? r + 4 * i : s + 4 * i);
        KT_MPI(MPI_Iallreduce(inplace ? MPI_IN_PLACE : s, r, (int)cnt, mat, op, MPI_COMM_WORLD, &rq));
        wait1(&rq);
        check_prod(r, cnt, 0, 0, n);

        for (int ex = 0; ex < 2; ex++) {
            cur = ex ? (inplace ? "MPI_Iexscan(matmul) in place" : "MPI_Iexscan(matmul)")
                     : (inplace ? "MPI_Iscan(matmul) in place" : "MPI_Iscan(matmul)");
            for (long i = 0; i < cnt; i++) mat_of(me, i, inplace ? r + 4 * i : s + 4 * i);
            if (ex) KT_MPI(MPI_Iexscan(inplace ? MPI_IN_PLACE : s, r, (int)cnt, mat, op, MPI_COMM_WORLD, &rq));
            else KT_MPI(MPI_Iscan(inplace ? MPI_IN_PLACE : s, r, (int)cnt, mat, op, MPI_COMM_WORLD, &rq));
            wait1(&rq);
            if (!ex || me > 0) check_prod(r, cnt, 0, 0, ex ? me : me + 1);
        }

        cur = inplace ? "MPI_Ireduce_scatter_block(matmul) in place" : "MPI_Ireduce_scatter_block(matmul)";
        for (long i = 0; i < tot; i++) mat_of(me, i, inplace ? r + 4 * i : s + 4 * i);
        KT_MPI(MPI_Ireduce_scatter_block(inplace ? MPI_IN_PLACE : s, r, (int)cnt, mat, op, MPI_COMM_WORLD, &rq));
        wait1(&rq);
        check_prod(r, cnt, me * cnt, 0, n);

        /* rank q gets cnt - q % 2 matrices (cnt + 1 for the last one when cnt > 0) */
        cur = inplace ? "MPI_Ireduce_scatter(matmul) in place" : "MPI_Ireduce_scatter(matmul)";
        int *rc = ialloc((size_t)n);
        long off = 0, sum = 0;
        for (int q = 0; q < n; q++) {
            rc[q] = cnt == 0 ? 0 : q == n - 1 ? (int)cnt + 1 : (int)cnt - q % 2;
            if (q < me) off += rc[q];
            sum += rc[q];
        }
        KT_CHECK(4 * sum <= 4 * tot + 4, "buffers too small");
        for (long i = 0; i < sum; i++) mat_of(me, i, inplace ? r + 4 * i : s + 4 * i);
        KT_MPI(MPI_Ireduce_scatter(inplace ? MPI_IN_PLACE : s, r, rc, mat, op, MPI_COMM_WORLD, &rq));
        wait1(&rq);
        check_prod(r, rc[me], off, 0, n);
        free(rc);
    }
    free(s);
    free(r);
}

/* ---------------------------------- MPI_DOUBLE_INT: a pair type with a gap */
struct di { double v; int i; };

static double dval(int r, long k) { return (double)((r * 7 + k) % 5) - 2.0; }

/* MPI_MAXLOC (Iallreduce) and MPI_MINLOC (Iscan) on 20000 pairs (320000 bytes):
 * the best value, on ties the lowest rank. */
static void test_pairs(void)
{
    enum { K = 20000 };
    struct di *s = malloc(sizeof *s * K), *r = malloc(sizeof *r * K);
    MPI_Request rq;
    KT_CHECK(s && r, "out of memory");
    cur_count = K;
    for (int scan = 0; scan < 2; scan++) {
        cur = scan ? "MPI_Iscan(MPI_MINLOC, MPI_DOUBLE_INT)" : "MPI_Iallreduce(MPI_MAXLOC, MPI_DOUBLE_INT)";
        for (long k = 0; k < K; k++) {
            s[k].v = dval(me, k);
            s[k].i = me;
            r[k].v = -99;
            r[k].i = -1;
        }
        if (scan) KT_MPI(MPI_Iscan(s, r, K, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD, &rq));
        else KT_MPI(MPI_Iallreduce(s, r, K, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD, &rq));
        wait1(&rq);
        for (long k = 0; k < K; k++) {
            double best = dval(0, k);
            int at_rank = 0;
            for (int q = 1; q < (scan ? me + 1 : n); q++)
                if (scan ? dval(q, k) < best : dval(q, k) > best) {
                    best = dval(q, k);
                    at_rank = q;
                }
            CHECK_AT(r[k].v, best, k);
            CHECK_AT(r[k].i, at_rank, k);
        }
    }
    free(s);
    free(r);
}

/* ------------------------------------------ handles freed while in use */
/* inout += in on ints */
static void isum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int k = 0; k < *len; k++) ((int *)inout)[k] += ((const int *)in)[k];
}

/* MPI_Type_free and MPI_Op_free only mark a handle for deallocation: a
 * non-blocking collective started before completes normally, and a
 * persistent one keeps using them at every start. */
static void test_freed_handles(void)
{
    MPI_Datatype t;
    MPI_Op op;
    MPI_Request rq[4];
    long cnt = 3000;                            /* 3000 vectors: 72000 bytes of data */
    int root = n - 1;
    KT_MPI(MPI_Type_vector(3, 2, 5, MPI_INT, &t));
    KT_MPI(MPI_Type_commit(&t));
    KT_MPI(MPI_Op_create(isum, 1, &op));
    struct lay L = { "vector freed", t, 6, 12, { 0, 1, 5, 6, 10, 11 }, 0 };
    long nd = cnt * L.nper;
    struct tbuf b = tb_new(&L, cnt), pb = tb_new(&L, cnt);
    int *ai = ialloc(BIGI), *ao = ialloc(BIGI), *pi = ialloc(BIGI), *po = ialloc(BIGI);
    if (me == root)
        for (long k = 0; k < nd; k++) b.buf[at(&L, k)] = val(root, k);
    for (int i = 0; i < BIGI; i++) ai[i] = val(me, i) % 1000;
    KT_MPI(MPI_Ibcast(b.buf, (int)cnt, t, root, MPI_COMM_WORLD, &rq[0]));
    KT_MPI(MPI_Iallreduce(ai, ao, BIGI, MPI_INT, op, MPI_COMM_WORLD, &rq[1]));
    KT_MPI(MPI_Bcast_init(pb.buf, (int)cnt, t, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[2]));
    KT_MPI(MPI_Allreduce_init(pi, po, BIGI, MPI_INT, op, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[3]));
    KT_MPI(MPI_Type_free(&t));
    KT_MPI(MPI_Op_free(&op));
    KT_CHECK(t == MPI_DATATYPE_NULL && op == MPI_OP_NULL, "free did not reset the handles");
    KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    set_cur(&L, "MPI_Ibcast", cnt);
    TB_CHECK(&L, b, nd, val(root, k));
    cur = "MPI_Iallreduce(user op freed)";
    for (int i = 0; i < BIGI; i++) {
        long want = 0;
        for (int q = 0; q < n; q++) want += val(q, i) % 1000;
        CHECK_AT(ao[i], want, i);
    }
    for (int rd = 0; rd < 2; rd++) {
        for (size_t h = 0; h < pb.len; h++) pb.base[h] = HOLE;
        if (me == 0)
            for (long k = 0; k < nd; k++) pb.buf[at(&L, k)] = val(0, k) + rd;
        for (int i = 0; i < BIGI; i++) pi[i] = val(me, i) % 1000 + rd;
        KT_MPI(MPI_Startall(2, rq + 2));
        KT_MPI(MPI_Waitall(2, rq + 2, MPI_STATUSES_IGNORE));
        set_cur(&L, "MPI_Bcast_init", cnt);
        TB_CHECK(&L, pb, nd, val(0, k) + rd);
        cur = "MPI_Allreduce_init(user op freed)";
        for (int i = 0; i < BIGI; i++) {
            long want = 0;
            for (int q = 0; q < n; q++) want += val(q, i) % 1000 + rd;
            CHECK_AT(po[i], want, i);
        }
    }
    KT_MPI(MPI_Request_free(&rq[2]));
    KT_MPI(MPI_Request_free(&rq[3]));
    free(b.base); free(pb.base); free(ai); free(ao); free(pi); free(po);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    struct lay vec = { "vector", MPI_DATATYPE_NULL, 6, 12, { 0, 1, 5, 6, 10, 11 }, 25000 / 6 };
    struct lay res = { "resized", MPI_DATATYPE_NULL, 2, 5, { -2, 1 }, 25000 / 2 };
    KT_MPI(MPI_Type_vector(3, 2, 5, MPI_INT, &vec.t));
    KT_MPI(MPI_Type_commit(&vec.t));
    {
        MPI_Datatype h;
        int len[2] = { 1, 1 };
        MPI_Aint disp[2] = { -8, 4 };
        KT_MPI(MPI_Type_create_hindexed(2, len, disp, MPI_INT, &h));
        KT_MPI(MPI_Type_create_resized(h, -12, 20, &res.t));
        KT_MPI(MPI_Type_commit(&res.t));
        KT_MPI(MPI_Type_free(&h));
        MPI_Aint lb, ext, tlb, text;
        KT_MPI(MPI_Type_get_extent(res.t, &lb, &ext));
        KT_MPI(MPI_Type_get_true_extent(res.t, &tlb, &text));
        KT_EQ_INT(lb, -12);
        KT_EQ_INT(ext, 20);
        KT_EQ_INT(tlb, -8);
        KT_EQ_INT(text, 16);
    }
    MPI_Op sum;
    KT_MPI(MPI_Op_create(tsum, 1, &sum));
    lays[0] = &vec;
    lays[1] = &res;
    for (int l = 0; l < 2; l++) {
        long cnts[4] = { 0, 1, 50, lays[l]->big };
        for (int c = 0; c < 4; c++) test_layout(lays[l], cnts[c], sum);
    }
    KT_MPI(MPI_Allreduce(MPI_IN_PLACE, &tsum_calls, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (n > 1) KT_CHECK(tsum_calls > 0, "the user sum was never called");
    KT_MPI(MPI_Op_free(&sum));
    MPI_Type_free(&vec.t);
    MPI_Type_free(&res.t);

    MPI_Op op;
    KT_MPI(MPI_Type_contiguous(4, MPI_INT, &mat));
    KT_MPI(MPI_Type_commit(&mat));
    KT_MPI(MPI_Op_create(matmul, 0, &op));
    long mcnts[4] = { 0, 1, 7, 25000 / 4 };
    for (int c = 0; c < 4; c++) test_noncommutative(op, mcnts[c]);
    KT_MPI(MPI_Allreduce(MPI_IN_PLACE, &op_calls, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (n > 1) KT_CHECK(op_calls > 0, "the user op was never called");
    KT_MPI(MPI_Op_free(&op));
    MPI_Type_free(&mat);
    test_freed_handles();
    test_pairs();
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return 0;
}
