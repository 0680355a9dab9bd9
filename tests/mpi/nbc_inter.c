/* nbc_inter: non-blocking and persistent collectives on an
 * intercommunicator from MPI_Intercomm_create (inter_common.h: group A is
 * world ranks [0, na), group B the rest in reverse order).  In both
 * directions and for roots at both ends of the root group: Ibcast, Igather(v),
 * Iscatter(v), Ireduce with MPI_ROOT at the root and MPI_PROC_NULL at the
 * other processes of its group (whose buffers must stay untouched); Ibarrier
 * (nobody in the other group leaves before the late process entered);
 * Iallgather(v), Ialltoall(v,w), Iallreduce, Ireduce_scatter(_block) (each
 * group gets the other group's data); counts 0, 3 and 25000 ints (100000
 * bytes).  Also MPI_Bcast_init, MPI_Allreduce_init and MPI_Alltoall_init
 * started twice with new contents, and several of them in flight at once.
 * argv[1]: size of group A. */
#include "inter_common.h"
#include <unistd.h>

#define BIG 25000
#define NOTSET (-1)

static struct inter_env e;
static int S, O, L, R, me;          /* my side, the other side, group sizes, my local rank */
static const char *cur = "";
static int cur_count;

/* element k from process (side s, local rank r) */
static int iv(int s, int r, int k) { return s * 5000000 + r * 100000 + k; }
/* element k of the block (s, r) sends to remote rank t */
static int a2(int s, int r, int t, int k) { return s * 5000000 + r * 500000 + t * 50000 + k; }
/* uneven counts, zero for some when cnt is 0 or 1 */
static int vc(int r, int cnt) { return cnt == 0 ? 0 : cnt - r % 2; }

#define EXPECT(got, want, idx) do { long long g_ = (got), w_ = (want); if (g_ != w_) \
    KT_FAIL("%s count %d (side %d, local rank %d): element %d is %lld, expected %lld", cur, cur_count, S, me, \
            (int)(idx), g_, w_); } while (0)

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

static void wait1(MPI_Request *rq)
{
    KT_MPI(MPI_Wait(rq, MPI_STATUS_IGNORE));
    KT_CHECK(*rq == MPI_REQUEST_NULL, "%s: request not freed", cur);
}

static void set(const char *what, int cnt)
{
    cur = what;
    cur_count = cnt;
}

/* local rank 0 of side `late` enters 20 ms late; the other group must wait for it */
static void test_ibarrier(void)
{
    for (int late = 0; late < 2; late++) {
        int lw = inter_world(&e, late, 0);
        double entered = 0, left;
        MPI_Request rq;
        set("MPI_Ibarrier", 0);
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (e.wrank == lw) {
            usleep(20000);
            entered = kt_now();
        }
        KT_MPI(MPI_Ibarrier(e.inter, &rq));
        wait1(&rq);
        left = kt_now();
        KT_MPI(MPI_Bcast(&entered, 1, MPI_DOUBLE, lw, MPI_COMM_WORLD));
        if (S != late)
            KT_CHECK(left >= entered, "MPI_Ibarrier: left at %.6f, before world rank %d entered at %.6f",
                     left, lw, entered);
    }
}

static void test_rooted(int rs, int root, int cnt)
{
    MPI_Comm ic = e.inter;
    MPI_Request rq;
    int amroot = S == rs && me == root, inroot = S == rs;
    int rarg = inroot ? (amroot ? MPI_ROOT : MPI_PROC_NULL) : root;
    size_t all = (size_t)R * (size_t)cnt;
    int *sb = ialloc(all + 8), *rb = ialloc(all + 8);

    /* ---- Ibcast */
    set("MPI_Ibcast", cnt);
    for (int k = 0; k <= cnt; k++) rb[k] = amroot && k < cnt ? iv(rs, root, k) : NOTSET;
    KT_MPI(MPI_Ibcast(rb, cnt, MPI_INT, rarg, ic, &rq));
    wait1(&rq);
    for (int k = 0; k < cnt; k++) EXPECT(rb[k], inroot && !amroot ? NOTSET : iv(rs, root, k), k);
    EXPECT(rb[cnt], NOTSET, cnt);

    /* ---- Igather: the root gets a block from every remote process */
    set("MPI_Igather", cnt);
    for (int k = 0; k < cnt; k++) sb[k] = iv(S, me, k);
    fill(rb, all + 1, NOTSET);
    KT_MPI(MPI_Igather(inroot ? NULL : sb, cnt, MPI_INT, amroot ? rb : NULL, cnt, MPI_INT, rarg, ic, &rq));
    wait1(&rq);
    if (amroot) {
        for (size_t i = 0; i < all; i++) EXPECT(rb[i], iv(O, (int)(i / cnt), (int)(i % cnt)), i);
        EXPECT(rb[all], NOTSET, all);
    }

    /* ---- Igatherv / Iscatterv: remote rank i gives vc(i), blocks in reverse order with a gap */
    {
        int *c = ialloc((size_t)R), *d = ialloc((size_t)R), tot = 0;
        for (int i = R - 1; i >= 0; i--) { c[i] = vc(i, cnt); d[i] = tot; tot += c[i] + 1; }
        int *vb = ialloc((size_t)tot);
        set("MPI_Igatherv", cnt);
        fill(vb, (size_t)tot, NOTSET);
        for (int k = 0; k < vc(me, cnt); k++) sb[k] = iv(S, me, k) + 1;
        KT_MPI(MPI_Igatherv(inroot ? NULL : sb, inroot ? 0 : vc(me, cnt), MPI_INT, amroot ? vb : NULL, c, d, MPI_INT,
                            rarg, ic, &rq));
        wait1(&rq);
        if (amroot)
            for (int i = 0; i < R; i++) {
                for (int k = 0; k < c[i]; k++) EXPECT(vb[d[i] + k], iv(O, i, k) + 1, d[i] + k);
                EXPECT(vb[d[i] + c[i]], NOTSET, d[i] + c[i]);
            }
        set("MPI_Iscatterv", cnt);
        if (amroot)
            for (int i = 0; i < R; i++)
                for (int k = 0; k < c[i]; k++) vb[d[i] + k] = iv(O, i, k) + 2;
        fill(rb, (size_t)cnt + 2, NOTSET);
        KT_MPI(MPI_Iscatterv(amroot ? vb : NULL, c, d, MPI_INT, inroot ? NULL : rb, inroot ? 0 : vc(me, cnt), MPI_INT,
                             rarg, ic, &rq));
        wait1(&rq);
        int mine = inroot ? 0 : vc(me, cnt);
        for (int k = 0; k < mine; k++) EXPECT(rb[k], iv(S, me, k) + 2, k);
        EXPECT(rb[mine], NOTSET, mine);
        free(c); free(d); free(vb);
    }

    /* ---- Iscatter */
    set("MPI_Iscatter", cnt);
    if (amroot)
        for (size_t i = 0; i < all; i++) sb[i] = iv(O, (int)(i / cnt), (int)(i % cnt)) + 3;
    fill(rb, (size_t)cnt + 1, NOTSET);
    KT_MPI(MPI_Iscatter(amroot ? sb : NULL, cnt, MPI_INT, inroot ? NULL : rb, cnt, MPI_INT, rarg, ic, &rq));
    wait1(&rq);
    for (int k = 0; k < cnt; k++) EXPECT(rb[k], inroot ? NOTSET : iv(S, me, k) + 3, k);
    EXPECT(rb[cnt], NOTSET, cnt);

    /* ---- Ireduce: the root gets the sum over the remote group */
    set("MPI_Ireduce", cnt);
    for (int k = 0; k < cnt; k++) sb[k] = iv(S, me, k);
    fill(rb, (size_t)cnt + 1, NOTSET);
    KT_MPI(MPI_Ireduce(inroot ? NULL : sb, amroot ? rb : NULL, cnt, MPI_INT, MPI_SUM, rarg, ic, &rq));
    wait1(&rq);
    if (amroot) {
        for (int k = 0; k < cnt; k++) {
            long long want = 0;
            for (int i = 0; i < R; i++) want += iv(O, i, k);
            EXPECT(rb[k], want, k);
        }
        EXPECT(rb[cnt], NOTSET, cnt);
    }
    free(sb);
    free(rb);
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

static void test_unrooted(int cnt)
{
    MPI_Comm ic = e.inter;
    MPI_Request rq;
    size_t all = (size_t)R * (size_t)cnt;
    int *sb = ialloc(all + 8), *rb = ialloc(all + 8);

    /* ---- Iallgather */
    set("MPI_Iallgather", cnt);
    for (int k = 0; k < cnt; k++) sb[k] = iv(S, me, k) + 4;
    fill(rb, all + 1, NOTSET);
    KT_MPI(MPI_Iallgather(sb, cnt, MPI_INT, rb, cnt, MPI_INT, ic, &rq));
    wait1(&rq);
    for (size_t i = 0; i < all; i++) EXPECT(rb[i], iv(O, (int)(i / cnt), (int)(i % cnt)) + 4, i);
    EXPECT(rb[all], NOTSET, all);

    /* ---- Iallgatherv: remote rank i gives vc(i) */
    {
        int *c = ialloc((size_t)R), *d = ialloc((size_t)R), tot = 0;
        for (int i = R - 1; i >= 0; i--) { c[i] = vc(i, cnt); d[i] = tot; tot += c[i] + 1; }
        int *vb = ialloc((size_t)tot);
        set("MPI_Iallgatherv", cnt);
        fill(vb, (size_t)tot, NOTSET);
        for (int k = 0; k < vc(me, cnt); k++) sb[k] = iv(S, me, k) + 5;
        KT_MPI(MPI_Iallgatherv(sb, vc(me, cnt), MPI_INT, vb, c, d, MPI_INT, ic, &rq));
        wait1(&rq);
        for (int i = 0; i < R; i++) {
            for (int k = 0; k < c[i]; k++) EXPECT(vb[d[i] + k], iv(O, i, k) + 5, d[i] + k);
            EXPECT(vb[d[i] + c[i]], NOTSET, d[i] + c[i]);
        }
        free(c); free(d); free(vb);
    }

    /* ---- Ialltoall */
    set("MPI_Ialltoall", cnt);
    for (int t = 0; t < R; t++)
        for (int k = 0; k < cnt; k++) sb[(size_t)t * cnt + k] = a2(S, me, t, k);
    fill(rb, all + 1, NOTSET);
    KT_MPI(MPI_Ialltoall(sb, cnt, MPI_INT, rb, cnt, MPI_INT, ic, &rq));
    wait1(&rq);
    for (int i = 0; i < R; i++)
        for (int k = 0; k < cnt; k++) EXPECT(rb[(size_t)i * cnt + k], a2(O, i, me, k), i * cnt + k);
    EXPECT(rb[all], NOTSET, all);

    /* ---- Ialltoallv / Ialltoallw: (s, r) sends vc(r + t) to remote t; receive blocks reversed */
    {
        int *sc = ialloc((size_t)R * 6), *sd = sc + R, *rc = sc + 2 * R, *rd = sc + 3 * R, *sdb = sc + 4 * R,
            *rdb = sc + 5 * R, stot = 0, rtot = 0;
        MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * (size_t)R);
        for (int t = 0; t < R; t++) {
            sc[t] = vc(me + t, cnt);
            rc[t] = vc(t + me, cnt);
            sd[t] = stot;
            stot += sc[t] + 1;
            ty[t] = MPI_INT;
        }
        for (int t = R - 1; t >= 0; t--) { rd[t] = rtot; rtot += rc[t] + 1; }
        for (int t = 0; t < R; t++) {
            sdb[t] = sd[t] * (int)sizeof(int);
            rdb[t] = rd[t] * (int)sizeof(int);
        }
        int *s = ialloc((size_t)stot), *r = ialloc((size_t)rtot);
        for (int w = 0; w < 2; w++) {
            set(w ? "MPI_Ialltoallw" : "MPI_Ialltoallv", cnt);
            fill(s, (size_t)stot, NOTSET);
            fill(r, (size_t)rtot, NOTSET);
            for (int t = 0; t < R; t++)
                for (int k = 0; k < sc[t]; k++) s[sd[t] + k] = a2(S, me, t, k) + w;
            if (w) KT_MPI(MPI_Ialltoallw(s, sc, sdb, ty, r, rc, rdb, ty, ic, &rq));
            else KT_MPI(MPI_Ialltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, ic, &rq));
            wait1(&rq);
            for (int i = 0; i < R; i++) {
                for (int k = 0; k < rc[i]; k++) EXPECT(r[rd[i] + k], a2(O, i, me, k) + w, rd[i] + k);
                EXPECT(r[rd[i] + rc[i]], NOTSET, rd[i] + rc[i]);
            }
        }
        free(s); free(r); free(sc); free(ty);
    }

    /* ---- Iallreduce: the sum over the other group */
    set("MPI_Iallreduce", cnt);
    for (int k = 0; k < cnt; k++) sb[k] = iv(S, me, k);
    fill(rb, (size_t)cnt + 1, NOTSET);
    KT_MPI(MPI_Iallreduce(sb, rb, cnt, MPI_INT, MPI_SUM, ic, &rq));
    wait1(&rq);
    for (int k = 0; k < cnt; k++) {
        long long want = 0;
        for (int i = 0; i < R; i++) want += iv(O, i, k);
        EXPECT(rb[k], want, k);
    }
    EXPECT(rb[cnt], NOTSET, cnt);

    /* ---- Ireduce_scatter_block: vectors of T = L * rcount = R * remote rcount elements */
    {
        int lcm = L / gcd(L, R) * R, m = cnt == 0 ? 0 : (cnt + lcm - 1) / lcm, T = lcm * m, rcount = T / L;
        int *in = ialloc((size_t)T), *out = ialloc((size_t)rcount + 1);
        set("MPI_Ireduce_scatter_block", T);
        for (int k = 0; k < T; k++) in[k] = iv(S, me, k);
        fill(out, (size_t)rcount + 1, NOTSET);
        KT_MPI(MPI_Ireduce_scatter_block(in, out, rcount, MPI_INT, MPI_SUM, ic, &rq));
        wait1(&rq);
        for (int k = 0; k < rcount; k++) {
            long long want = 0;
            for (int i = 0; i < R; i++) want += iv(O, i, me * rcount + k);
            EXPECT(out[k], want, k);
        }
        EXPECT(out[rcount], NOTSET, rcount);
        free(in); free(out);
    }

    /* ---- Ireduce_scatter: the same T in both groups, split unevenly over the local group */
    {
        int T = cnt * 2 + 1, *c = ialloc((size_t)L), off = 0;
        for (int i = 0; i < L; i++) {
            c[i] = T / L + (i < T % L);
            if (i < me) off += c[i];
        }
        int *in = ialloc((size_t)T), *out = ialloc((size_t)c[me] + 1);
        set("MPI_Ireduce_scatter", T);
        for (int k = 0; k < T; k++) in[k] = iv(S, me, k) - 6;
        fill(out, (size_t)c[me] + 1, NOTSET);
        KT_MPI(MPI_Ireduce_scatter(in, out, c, MPI_INT, MPI_SUM, ic, &rq));
        wait1(&rq);
        for (int k = 0; k < c[me]; k++) {
            long long want = 0;
            for (int i = 0; i < R; i++) want += iv(O, i, off + k) - 6;
            EXPECT(out[k], want, k);
        }
        EXPECT(out[c[me]], NOTSET, c[me]);
        free(in); free(out); free(c);
    }
    free(sb);
    free(rb);
}

/* Persistent: Bcast_init (root: last process of A), Allreduce_init, Alltoall_init,
 * started together twice with new contents each time. */
static void test_persistent(int cnt)
{
    MPI_Comm ic = e.inter;
    MPI_Request rq[3];
    int root = e.na - 1, amroot = S == 0 && me == root;
    int rarg = S == 0 ? (amroot ? MPI_ROOT : MPI_PROC_NULL) : root;
    size_t all = (size_t)R * (size_t)cnt;
    int *b = ialloc((size_t)cnt + 1), *as = ialloc((size_t)cnt), *ar = ialloc((size_t)cnt + 1);
    int *ts = ialloc(all), *tr = ialloc(all + 1);
    KT_MPI(MPI_Bcast_init(b, cnt, MPI_INT, rarg, ic, MPI_INFO_NULL, &rq[0]));
    KT_MPI(MPI_Allreduce_init(as, ar, cnt, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &rq[1]));
    KT_MPI(MPI_Alltoall_init(ts, cnt, MPI_INT, tr, cnt, MPI_INT, ic, MPI_INFO_NULL, &rq[2]));
    for (int rd = 0; rd < 2; rd++) {
        fill(b, (size_t)cnt + 1, NOTSET);
        if (amroot) for (int k = 0; k < cnt; k++) b[k] = iv(0, root, k) + rd;
        for (int k = 0; k < cnt; k++) as[k] = iv(S, me, k) + rd;
        fill(ar, (size_t)cnt + 1, NOTSET);
        for (int t = 0; t < R; t++)
            for (int k = 0; k < cnt; k++) ts[(size_t)t * cnt + k] = a2(S, me, t, k) + rd;
        fill(tr, all + 1, NOTSET);
        if (rd == 0) {
            KT_MPI(MPI_Startall(3, rq));
        } else {
            for (int j = 0; j < 3; j++) KT_MPI(MPI_Start(&rq[j]));
        }
        KT_MPI(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
        set("MPI_Bcast_init", cnt);
        for (int k = 0; k < cnt; k++) EXPECT(b[k], S == 0 && !amroot ? NOTSET : iv(0, root, k) + rd, k);
        EXPECT(b[cnt], NOTSET, cnt);
        set("MPI_Allreduce_init", cnt);
        for (int k = 0; k < cnt; k++) {
            long long want = 0;
            for (int i = 0; i < R; i++) want += iv(O, i, k) + rd;
            EXPECT(ar[k], want, k);
        }
        set("MPI_Alltoall_init", cnt);
        for (int i = 0; i < R; i++)
            for (int k = 0; k < cnt; k++) EXPECT(tr[(size_t)i * cnt + k], a2(O, i, me, k) + rd, i * cnt + k);
        EXPECT(tr[all], NOTSET, all);
    }
    for (int j = 0; j < 3; j++) KT_MPI(MPI_Request_free(&rq[j]));
    free(b); free(as); free(ar); free(ts); free(tr);
}

/* Ibcast both ways + Iallreduce + Ialltoall in flight at once, completed in reverse. */
static void test_in_flight(void)
{
    MPI_Comm ic = e.inter;
    MPI_Request rq[4];
    int cnt = 5, b0[5], b1[5], as[5], ar[5], *ts = ialloc((size_t)R * cnt), *tr = ialloc((size_t)R * cnt);
    int r0 = S == 0 ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;            /* A's rank 0 to B */
    int r1 = S == 1 ? (me == e.nb - 1 ? MPI_ROOT : MPI_PROC_NULL) : e.nb - 1;  /* B's last to A */
    for (int k = 0; k < cnt; k++) {
        b0[k] = S == 0 && me == 0 ? 700 + k : NOTSET;
        b1[k] = S == 1 && me == e.nb - 1 ? 800 + k : NOTSET;
        as[k] = iv(S, me, k);
    }
    for (int t = 0; t < R; t++)
        for (int k = 0; k < cnt; k++) ts[t * cnt + k] = a2(S, me, t, k);
    KT_MPI(MPI_Ibcast(b0, cnt, MPI_INT, r0, ic, &rq[0]));
    KT_MPI(MPI_Ibcast(b1, cnt, MPI_INT, r1, ic, &rq[1]));
    KT_MPI(MPI_Iallreduce(as, ar, cnt, MPI_INT, MPI_SUM, ic, &rq[2]));
    KT_MPI(MPI_Ialltoall(ts, cnt, MPI_INT, tr, cnt, MPI_INT, ic, &rq[3]));
    for (int j = 3; j >= 0; j--) KT_MPI(MPI_Wait(&rq[j], MPI_STATUS_IGNORE));
    set("several in flight", cnt);
    for (int k = 0; k < cnt; k++) {
        EXPECT(b0[k], S == 0 && me != 0 ? NOTSET : 700 + k, k);
        EXPECT(b1[k], S == 1 && me != e.nb - 1 ? NOTSET : 800 + k, k);
        long long want = 0;
        for (int i = 0; i < R; i++) want += iv(O, i, k);
        EXPECT(ar[k], want, k);
    }
    for (int i = 0; i < R; i++)
        for (int k = 0; k < cnt; k++) EXPECT(tr[i * cnt + k], a2(O, i, me, k), i * cnt + k);
    free(ts);
    free(tr);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    inter_setup(&e, argc, argv);
    KT_MPI(MPI_Comm_set_errhandler(e.inter, MPI_ERRORS_RETURN));
    S = e.side;
    O = 1 - S;
    L = e.lsize;
    R = e.rsize;
    me = e.lrank;

    test_ibarrier();
    int cnts[3] = { 0, 3, BIG };
    for (int c = 0; c < 3; c++) {
        for (int rs = 0; rs < 2; rs++) {
            int nroot = rs == 0 ? e.na : e.nb;
            test_rooted(rs, nroot - 1, cnts[c]);
            if (nroot > 1) test_rooted(rs, 0, cnts[c]);
        }
        test_unrooted(cnts[c]);
        test_persistent(cnts[c]);
    }
    test_in_flight();

    KT_MPI(MPI_Comm_free(&e.inter));
    KT_MPI(MPI_Comm_free(&e.local));
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return 0;
}
