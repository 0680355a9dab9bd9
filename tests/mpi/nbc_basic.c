/* nbc_basic: every MPI-3 non-blocking collective on intracommunicators,
 * checked against values computed from rank and index alone (never against
 * the blocking collective): counts 0, 1, 300 and 25000 ints (100000 bytes,
 * above the shmem eager limit: the rendezvous path), roots other than 0,
 * MPI_IN_PLACE wherever the standard allows it, v-variants with uneven
 * counts (some zero) and displacements in reverse rank order with gaps that
 * must stay untouched.
 *
 * Each request is completed by another call in turn (MPI_Wait, MPI_Waitall,
 * MPI_Waitany, MPI_Waitsome, loops of MPI_Test, MPI_Testall, MPI_Testany,
 * MPI_Testsome, MPI_Request_get_status) and must be MPI_REQUEST_NULL
 * afterwards.  Everything runs on MPI_COMM_WORLD,
 * on a communicator whose rank order is the reverse of the world's (so comm
 * ranks differ from world ranks) and on MPI_COMM_SELF.  MPI_Ibarrier is
 * checked for what it is for: no process leaves it before the last one has
 * entered. */
#include "kt.h"
#include <time.h>
#include <unistd.h>

#define BIG 25000               /* ints: 100000 bytes */
#define GUARD (-77)
#define NOTSET (-1)

static const int counts[] = { 0, 1, 300, BIG };
#define NCOUNTS ((int)(sizeof counts / sizeof counts[0]))

/* What is under test, for the failure messages. */
static const char *cur = "";
static int cur_count, cur_root;

#define CHECK_AT(got, want, idx) do { long long g_ = (got), w_ = (want); if (g_ != w_) \
    KT_FAIL("%s count %d root %d: element %d is %lld, expected %lld", cur, cur_count, cur_root, \
            (int)(idx), g_, w_); } while (0)

static void under_test(const char *what, int count, int root)
{
    cur = what;
    cur_count = count;
    cur_root = root;
}

/* element i that rank r contributes (distinct for every r and i used here) */
static int val(int r, int i) { return r * 1000003 + i; }
/* element i of the block rank s sends to rank d */
static int a2a(int s, int d, int i) { return s * 1000000 + d * 100000 + i; }
/* a value whose maximum over the ranks is not simply the last rank's */
static int mval(int r, int i) { return (r * 7 + i) % 11 - 5; }
/* uneven per-rank count for the v-variants: zero where count is 0 or 1 */
static int vcount(int r, int count) { return count == 0 ? 0 : count - 1 + r % 3; }

static int *ialloc(size_t n)
{
    int *p = malloc(sizeof(int) * (n ? n : 1));
    KT_CHECK(p != NULL, "out of memory");
    return p;
}

static void fill(int *p, size_t n, int v)
{
    for (size_t i = 0; i < n; i++) p[i] = v;
}

/* Complete one request, by a different completion call each time. */
static void complete(MPI_Request *rq)
{
    static int turn;
    int how = turn++ % 9, flag = 0, idx = -1, outc = 0, ind[1] = { -1 };
    KT_CHECK(*rq != MPI_REQUEST_NULL, "%s count %d: no request", cur, cur_count);
    switch (how) {
    case 0: KT_MPI(MPI_Wait(rq, MPI_STATUS_IGNORE)); break;
    case 1: while (!flag) KT_MPI(MPI_Test(rq, &flag, MPI_STATUS_IGNORE)); break;
    case 2: KT_MPI(MPI_Waitall(1, rq, MPI_STATUSES_IGNORE)); break;
    case 3: while (!flag) KT_MPI(MPI_Testall(1, rq, &flag, MPI_STATUSES_IGNORE)); break;
    case 4: KT_MPI(MPI_Waitany(1, rq, &idx, MPI_STATUS_IGNORE)); KT_EQ_INT(idx, 0); break;
    case 5:
        KT_MPI(MPI_Waitsome(1, rq, &outc, ind, MPI_STATUSES_IGNORE));
        KT_EQ_INT(outc, 1);
        KT_EQ_INT(ind[0], 0);
        break;
    case 6:
        while (!flag) KT_MPI(MPI_Testany(1, rq, &idx, &flag, MPI_STATUS_IGNORE));
        KT_EQ_INT(idx, 0);
        break;
    case 7:
        while (outc == 0) KT_MPI(MPI_Testsome(1, rq, &outc, ind, MPI_STATUSES_IGNORE));
        KT_EQ_INT(outc, 1);
        KT_EQ_INT(ind[0], 0);
        break;
    default:    /* MPI_Request_get_status does not free the request */
        while (!flag) KT_MPI(MPI_Request_get_status(*rq, &flag, MPI_STATUS_IGNORE));
        KT_CHECK(*rq != MPI_REQUEST_NULL, "%s: MPI_Request_get_status freed the request", cur);
        KT_MPI(MPI_Wait(rq, MPI_STATUS_IGNORE));
        break;
    }
    KT_CHECK(*rq == MPI_REQUEST_NULL, "%s count %d: request not freed by completion call %d",
             cur, cur_count, how);
}

/* Every process but `late` enters at once; late enters 20 ms later.  The
 * others must leave after late entered.  All ranks of a test run on one
 * host, so CLOCK_MONOTONIC is one clock for all of them. */
static void test_ibarrier(MPI_Comm comm, int me, int n)
{
    int lates[2] = { n - 1, 0 };
    for (int k = 0; k < (n > 1 ? 2 : 1); k++) {
        int late = lates[k];
        double entered = 0, left;
        MPI_Request rq;
        under_test("MPI_Ibarrier", 0, late);
        KT_MPI(MPI_Barrier(comm));
        if (me == late) {
            usleep(20000);
            entered = kt_now();
        }
        KT_MPI(MPI_Ibarrier(comm, &rq));
        complete(&rq);
        left = kt_now();
        KT_MPI(MPI_Bcast(&entered, 1, MPI_DOUBLE, late, comm));
        KT_CHECK(left >= entered, "MPI_Ibarrier: left %.6f before rank %d entered at %.6f",
                 left, late, entered);
    }
}

static void test_rooted(MPI_Comm comm, int me, int n, int cnt, int root)
{
    MPI_Request rq;
    size_t all = (size_t)n * (size_t)cnt;
    int *sb = ialloc(all + 8), *rb = ialloc(all + 8);

    /* ---- Ibcast */
    under_test("MPI_Ibcast", cnt, root);
    for (int i = 0; i < cnt; i++) rb[i] = me == root ? val(root, i) : NOTSET;
    rb[cnt] = GUARD;
    KT_MPI(MPI_Ibcast(rb, cnt, MPI_INT, root, comm, &rq));
    complete(&rq);
    for (int i = 0; i < cnt; i++) CHECK_AT(rb[i], val(root, i), i);
    CHECK_AT(rb[cnt], GUARD, cnt);

    /* ---- Igather: the receive buffer matters only at the root (NULL elsewhere) */
    for (int inplace = 0; inplace < 2; inplace++) {
        under_test(inplace ? "MPI_Igather in place" : "MPI_Igather", cnt, root);
        for (int i = 0; i < cnt; i++) sb[i] = val(me, i);
        fill(rb, all + 1, NOTSET);
        rb[all] = GUARD;
        if (inplace && me == root)
            for (int i = 0; i < cnt; i++) rb[(size_t)root * cnt + i] = val(root, i);
        KT_MPI(MPI_Igather(inplace && me == root ? MPI_IN_PLACE : sb, cnt, MPI_INT,
                           me == root ? rb : NULL, cnt, MPI_INT, root, comm, &rq));
        complete(&rq);
        if (me == root) {
            for (int r = 0; r < n; r++)
                for (int i = 0; i < cnt; i++) CHECK_AT(rb[(size_t)r * cnt + i], val(r, i), r * cnt + i);
            CHECK_AT(rb[all], GUARD, all);
        }
    }

    /* ---- Iscatter: the send buffer matters only at the root */
    for (int inplace = 0; inplace < 2; inplace++) {
        under_test(inplace ? "MPI_Iscatter in place" : "MPI_Iscatter", cnt, root);
        if (me == root)
            for (size_t i = 0; i < all; i++) sb[i] = val((int)(i / cnt), (int)(i % cnt)) + 7;
        fill(rb, (size_t)cnt + 1, NOTSET);
        rb[cnt] = GUARD;
        KT_MPI(MPI_Iscatter(me == root ? sb : NULL, cnt, MPI_INT,
                            inplace && me == root ? MPI_IN_PLACE : rb, cnt, MPI_INT, root, comm, &rq));
        complete(&rq);
        if (inplace && me == root) {
            /* the root's own block stays where it is and is not copied */
            for (size_t i = 0; i < all; i++) CHECK_AT(sb[i], val((int)(i / cnt), (int)(i % cnt)) + 7, i);
            for (int i = 0; i < cnt; i++) CHECK_AT(rb[i], NOTSET, i);
        } else {
            for (int i = 0; i < cnt; i++) CHECK_AT(rb[i], val(me, i) + 7, i);
        }
        CHECK_AT(rb[cnt], GUARD, cnt);
    }

    /* ---- Igatherv / Iscatterv: uneven counts, reverse order, a gap after each block */
    {
        int *vc = ialloc((size_t)n), *dsp = ialloc((size_t)n), tot = 0;
        for (int r = 0; r < n; r++) vc[r] = vcount(r, cnt);
        for (int r = n - 1; r >= 0; r--) { dsp[r] = tot; tot += vc[r] + 1; }
        int *vb = ialloc((size_t)tot), mine = vc[me];
        for (int inplace = 0; inplace < 2; inplace++) {
            under_test(inplace ? "MPI_Igatherv in place" : "MPI_Igatherv", cnt, root);
            for (int i = 0; i < mine; i++) sb[i] = val(me, i) * 3;
            fill(vb, (size_t)tot, NOTSET);
            if (inplace && me == root)
                for (int i = 0; i < mine; i++) vb[dsp[me] + i] = val(me, i) * 3;
            KT_MPI(MPI_Igatherv(inplace && me == root ? MPI_IN_PLACE : sb, mine, MPI_INT,
                                me == root ? vb : NULL, vc, dsp, MPI_INT, root, comm, &rq));
            complete(&rq);
            if (me == root)
                for (int r = 0; r < n; r++) {
                    for (int i = 0; i < vc[r]; i++) CHECK_AT(vb[dsp[r] + i], val(r, i) * 3, dsp[r] + i);
                    CHECK_AT(vb[dsp[r] + vc[r]], NOTSET, dsp[r] + vc[r]);
                }
        }
        for (int inplace = 0; inplace < 2; inplace++) {
            under_test(inplace ? "MPI_Iscatterv in place" : "MPI_Iscatterv", cnt, root);
            if (me == root) {
                fill(vb, (size_t)tot, GUARD);
                for (int r = 0; r < n; r++)
                    for (int i = 0; i < vc[r]; i++) vb[dsp[r] + i] = val(r, i) - 9;
            }
            fill(rb, (size_t)mine + 1, NOTSET);
            KT_MPI(MPI_Iscatterv(me == root ? vb : NULL, vc, dsp, MPI_INT,
                                 inplace && me == root ? MPI_IN_PLACE : rb, mine, MPI_INT, root, comm, &rq));
            complete(&rq);
            if (!(inplace && me == root))
                for (int i = 0; i < mine; i++) CHECK_AT(rb[i], val(me, i) - 9, i);
            CHECK_AT(rb[mine], NOTSET, mine);
            if (me == root)
                for (int r = 0; r < n; r++)
                    for (int i = 0; i < vc[r]; i++) CHECK_AT(vb[dsp[r] + i], val(r, i) - 9, dsp[r] + i);
        }
        free(vb);
        free(vc);
        free(dsp);
    }

    /* ---- Ireduce (MPI_SUM), in place at the root */
    for (int inplace = 0; inplace < 2; inplace++) {
        under_test(inplace ? "MPI_Ireduce in place" : "MPI_Ireduce", cnt, root);
        for (int i = 0; i < cnt; i++) sb[i] = val(me, i);
        fill(rb, (size_t)cnt + 1, NOTSET);
        rb[cnt] = GUARD;
        if (inplace && me == root) memcpy(rb, sb, sizeof(int) * (size_t)cnt);
        KT_MPI(MPI_Ireduce(inplace && me == root ? MPI_IN_PLACE : sb, me == root ? rb : NULL, cnt,
                           MPI_INT, MPI_SUM, root, comm, &rq));
        complete(&rq);
        if (me == root) {
            for (int i = 0; i < cnt; i++) {
                long long want = 0;
                for (int r = 0; r < n; r++) want += val(r, i);
                CHECK_AT(rb[i], want, i);
            }
            CHECK_AT(rb[cnt], GUARD, cnt);
        }
        for (int i = 0; i < cnt; i++) CHECK_AT(sb[i], val(me, i), i);     /* input untouched */
    }
    free(sb);
    free(rb);
}

static void test_unrooted(MPI_Comm comm, int me, int n, int cnt)
{
    MPI_Request rq;
    size_t all = (size_t)n * (size_t)cnt;
    int *sb = ialloc(all + 8), *rb = ialloc(all + 8);

    /* ---- Iallgather */
    for (int inplace = 0; inplace < 2; inplace++) {
        under_test(inplace ? "MPI_Iallgather in place" : "MPI_Iallgather", cnt, -1);
        for (int i = 0; i < cnt; i++) sb[i] = val(me, i) + 1;
        fill(rb, all + 1, NOTSET);
        rb[all] = GUARD;
        if (inplace) memcpy(rb + (size_t)me * cnt, sb, sizeof(int) * (size_t)cnt);
        KT_MPI(MPI_Iallgather(inplace ? MPI_IN_PLACE : sb, cnt, MPI_INT, rb, cnt, MPI_INT, comm, &rq));
        complete(&rq);
        for (int r = 0; r < n; r++)
            for (int i = 0; i < cnt; i++) CHECK_AT(rb[(size_t)r * cnt + i], val(r, i) + 1, r * cnt + i);
        CHECK_AT(rb[all], GUARD, all);
    }

    /* ---- Iallgatherv */
    {
        int *vc = ialloc((size_t)n), *dsp = ialloc((size_t)n), tot = 0;
        for (int r = 0; r < n; r++) vc[r] = vcount(r, cnt);
        for (int r = n - 1; r >= 0; r--) { dsp[r] = tot; tot += vc[r] + 1; }
        int *vb = ialloc((size_t)tot);
        for (int inplace = 0; inplace < 2; inplace++) {
            under_test(inplace ? "MPI_Iallgatherv in place" : "MPI_Iallgatherv", cnt, -1);
            for (int i = 0; i < vc[me]; i++) sb[i] = val(me, i) + 2;
            fill(vb, (size_t)tot, NOTSET);
            if (inplace) memcpy(vb + dsp[me], sb, sizeof(int) * (size_t)vc[me]);
            KT_MPI(MPI_Iallgatherv(inplace ? MPI_IN_PLACE : sb, vc[me], MPI_INT, vb, vc, dsp, MPI_INT,
                                   comm, &rq));
            complete(&rq);
            for (int r = 0; r < n; r++) {
                for (int i = 0; i < vc[r]; i++) CHECK_AT(vb[dsp[r] + i], val(r, i) + 2, dsp[r] + i);
                CHECK_AT(vb[dsp[r] + vc[r]], NOTSET, dsp[r] + vc[r]);
            }
        }
        free(vb);
        free(vc);
        free(dsp);
    }

    /* ---- Ialltoall */
    for (int inplace = 0; inplace < 2; inplace++) {
        under_test(inplace ? "MPI_Ialltoall in place" : "MPI_Ialltoall", cnt, -1);
        int *src = inplace ? rb : sb;
        for (int d = 0; d < n; d++)
            for (int i = 0; i < cnt; i++) src[(size_t)d * cnt + i] = a2a(me, d, i);
        if (!inplace) fill(rb, all, NOTSET);
        rb[all] = GUARD;
        KT_MPI(MPI_Ialltoall(inplace ? MPI_IN_PLACE : sb, cnt, MPI_INT, rb, cnt, MPI_INT, comm, &rq));
        complete(&rq);
        for (int s = 0; s < n; s++)
            for (int i = 0; i < cnt; i++) CHECK_AT(rb[(size_t)s * cnt + i], a2a(s, me, i), s * cnt + i);
        CHECK_AT(rb[all], GUARD, all);
    }

    /* ---- Ialltoallv / Ialltoallw: s sends vcount(s + d) elements to d (symmetric, so
     * in place works too); send blocks in order with a gap of 1, receive blocks in
     * reverse order with a gap of 2.  Alltoallw receives from odd ranks as a
     * one-int derived type (same type signature as the sender's MPI_INT). */
    {
        int *sc = ialloc((size_t)n * 6), *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n;
        int *sdb = sc + 4 * n, *rdb = sc + 5 * n, stot = 0, rtot = 0;
        MPI_Datatype one, *sty = malloc(sizeof(MPI_Datatype) * 2 * (size_t)n), *rty = sty + n;
        KT_MPI(MPI_Type_contiguous(1, MPI_INT, &one));
        KT_MPI(MPI_Type_commit(&one));
        for (int d = 0; d < n; d++) {
            sc[d] = vcount(me + d, cnt);
            rc[d] = vcount(d + me, cnt);
            sd[d] = stot;
            stot += sc[d] + 1;
            sty[d] = MPI_INT;
            rty[d] = d % 2 ? one : MPI_INT;
        }
        for (int d = n - 1; d >= 0; d--) { rd[d] = rtot; rtot += rc[d] + 2; }
        for (int d = 0; d < n; d++) {
            sdb[d] = sd[d] * (int)sizeof(int);
            rdb[d] = rd[d] * (int)sizeof(int);
        }
        int *s = ialloc((size_t)stot), *r = ialloc((size_t)rtot);
        for (int w = 0; w < 2; w++)
            for (int inplace = 0; inplace < 2; inplace++) {
                under_test(w ? (inplace ? "MPI_Ialltoallw in place" : "MPI_Ialltoallw")
                             : (inplace ? "MPI_Ialltoallv in place" : "MPI_Ialltoallv"), cnt, -1);
                fill(s, (size_t)stot, GUARD);
                fill(r, (size_t)rtot, NOTSET);
                for (int d = 0; d < n; d++)
                    for (int i = 0; i < sc[d]; i++) {
                        if (inplace) r[rd[d] + i] = a2a(me, d, i);
                        else s[sd[d] + i] = a2a(me, d, i);
                    }
                if (w == 0)
                    KT_MPI(MPI_Ialltoallv(inplace ? MPI_IN_PLACE : s, sc, sd, MPI_INT, r, rc, rd, MPI_INT,
                                          comm, &rq));
                else
                    KT_MPI(MPI_Ialltoallw(inplace ? MPI_IN_PLACE : s, sc, sdb, sty, r, rc, rdb, rty,
                                          comm, &rq));
                complete(&rq);
                for (int src = 0; src < n; src++) {
                    for (int i = 0; i < rc[src]; i++) CHECK_AT(r[rd[src] + i], a2a(src, me, i), rd[src] + i);
                    CHECK_AT(r[rd[src] + rc[src]], NOTSET, rd[src] + rc[src]);
                    CHECK_AT(r[rd[src] + rc[src] + 1], NOTSET, rd[src] + rc[src] + 1);
                }
            }
        MPI_Type_free(&one);
        free(s);
        free(r);
        free(sc);
        free(sty);
    }

    /* ---- Iallreduce: MPI_SUM and MPI_MAX, in place */
    for (int op = 0; op < 2; op++)
        for (int inplace = 0; inplace < 2; inplace++) {
            under_test(op ? (inplace ? "MPI_Iallreduce(MAX) in place" : "MPI_Iallreduce(MAX)")
                          : (inplace ? "MPI_Iallreduce(SUM) in place" : "MPI_Iallreduce(SUM)"), cnt, -1);
            for (int i = 0; i < cnt; i++) sb[i] = op ? mval(me, i) : val(me, i);
            fill(rb, (size_t)cnt + 1, NOTSET);
            rb[cnt] = GUARD;
            if (inplace) memcpy(rb, sb, sizeof(int) * (size_t)cnt);
            KT_MPI(MPI_Iallreduce(inplace ? MPI_IN_PLACE : sb, rb, cnt, MPI_INT, op ? MPI_MAX : MPI_SUM,
                                  comm, &rq));
            complete(&rq);
            for (int i = 0; i < cnt; i++) {
                long long want = op ? mval(0, i) : 0;
                for (int r = 0; r < n; r++)
                    if (op) want = mval(r, i) > want ? mval(r, i) : want;
                    else want += val(r, i);
                CHECK_AT(rb[i], want, i);
            }
            CHECK_AT(rb[cnt], GUARD, cnt);
        }

    /* ---- Ireduce_scatter_block: rank me gets sum over r of val(r, me * cnt + i) */
    for (int inplace = 0; inplace < 2; inplace++) {
        under_test(inplace ? "MPI_Ireduce_scatter_block in place" : "MPI_Ireduce_scatter_block", cnt, -1);
        int *in = inplace ? rb : sb;
        for (size_t j = 0; j < all; j++) in[j] = val(me, (int)j);
        if (!inplace) fill(rb, (size_t)cnt, NOTSET);
        if (!inplace) rb[cnt] = GUARD;
        KT_MPI(MPI_Ireduce_scatter_block(inplace ? MPI_IN_PLACE : sb, rb, cnt, MPI_INT, MPI_SUM, comm, &rq));
        complete(&rq);
        for (int i = 0; i < cnt; i++) {
            long long want = 0;
            for (int r = 0; r < n; r++) want += val(r, me * cnt + i);
            CHECK_AT(rb[i], want, i);
        }
        if (!inplace) CHECK_AT(rb[cnt], GUARD, cnt);
    }

    /* ---- Ireduce_scatter: uneven counts (some zero) */
    {
        int *vc = ialloc((size_t)n), tot = 0, off = 0;
        for (int r = 0; r < n; r++) {
            vc[r] = vcount(r, cnt);
            if (r < me) off += vc[r];
            tot += vc[r];
        }
        int *in = ialloc((size_t)tot + 1), *out = ialloc((size_t)tot + 1);
        for (int inplace = 0; inplace < 2; inplace++) {
            under_test(inplace ? "MPI_Ireduce_scatter in place" : "MPI_Ireduce_scatter", cnt, -1);
            int *src = inplace ? out : in;
            for (int j = 0; j < tot; j++) src[j] = val(me, j) ^ 5;
            if (!inplace) fill(out, (size_t)vc[me], NOTSET);
            if (!inplace) out[vc[me]] = GUARD;
            KT_MPI(MPI_Ireduce_scatter(inplace ? MPI_IN_PLACE : in, out, vc, MPI_INT, MPI_SUM, comm, &rq));
            complete(&rq);
            for (int i = 0; i < vc[me]; i++) {
                long long want = 0;
                for (int r = 0; r < n; r++) want += val(r, off + i) ^ 5;
                CHECK_AT(out[i], want, i);
            }
            if (!inplace) CHECK_AT(out[vc[me]], GUARD, vc[me]);
        }
        free(in);
        free(out);
        free(vc);
    }

    /* ---- Iscan / Iexscan (MPI_SUM); Iexscan leaves rank 0's buffer undefined */
    for (int ex = 0; ex < 2; ex++)
        for (int inplace = 0; inplace < 2; inplace++) {
            under_test(ex ? (inplace ? "MPI_Iexscan in place" : "MPI_Iexscan")
                          : (inplace ? "MPI_Iscan in place" : "MPI_Iscan"), cnt, -1);
            for (int i = 0; i < cnt; i++) sb[i] = val(me, i) - 4;
            fill(rb, (size_t)cnt + 1, NOTSET);
            rb[cnt] = GUARD;
            if (inplace) memcpy(rb, sb, sizeof(int) * (size_t)cnt);
            if (ex) KT_MPI(MPI_Iexscan(inplace ? MPI_IN_PLACE : sb, rb, cnt, MPI_INT, MPI_SUM, comm, &rq));
            else KT_MPI(MPI_Iscan(inplace ? MPI_IN_PLACE : sb, rb, cnt, MPI_INT, MPI_SUM, comm, &rq));
            complete(&rq);
            if (!ex || me > 0)
                for (int i = 0; i < cnt; i++) {
                    long long want = 0;
                    for (int r = 0; r < (ex ? me : me + 1); r++) want += val(r, i) - 4;
                    CHECK_AT(rb[i], want, i);
                }
            CHECK_AT(rb[cnt], GUARD, cnt);
        }
    free(sb);
    free(rb);
}

static void test_comm(MPI_Comm comm)
{
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    test_ibarrier(comm, me, n);
    for (int c = 0; c < NCOUNTS; c++) {
        test_rooted(comm, me, n, counts[c], n - 1);
        if (n / 2 != n - 1) test_rooted(comm, me, n, counts[c], n / 2);
        test_unrooted(comm, me, n, counts[c]);
    }
}

int main(int argc, char **argv)
{
    int wrank;
    MPI_Comm rev;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    test_comm(MPI_COMM_WORLD);
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, -wrank, &rev));
    KT_MPI(MPI_Comm_set_errhandler(rev, MPI_ERRORS_RETURN));
    test_comm(rev);
    KT_MPI(MPI_Comm_free(&rev));
    test_comm(MPI_COMM_SELF);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return 0;
}
