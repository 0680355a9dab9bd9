/* nbc_multi: several non-blocking collectives in flight at once, mixed with
 * blocking collectives and point-to-point traffic.
 *  1. Ibcast + Iallreduce + Ialltoall started back to back on one
 *     communicator (small and 100000-byte messages), completed in reverse
 *     order, by MPI_Waitall, by an MPI_Testall loop, by MPI_Waitany, by
 *     MPI_Waitsome and by MPI_Test calls in reverse order.
 *  2. 16 Iallreduce (MPI_SUM and MPI_MAX) in flight, completed in reverse.
 *  3. blocking MPI_Allreduce, MPI_Bcast and MPI_Barrier while non-blocking
 *     ones are pending on the same communicator.
 *  4. point-to-point on the same communicator: MPI_Iprobe(ANY_SOURCE,
 *     ANY_TAG) sees nothing while collectives run; a wildcard receive posted
 *     before the collectives start gets the point-to-point message only.
 *  5. progress without the late process: the others start a collective that
 *     needs its data, MPI_Test must say incomplete, and only then (told by a
 *     point-to-point message) does the late process start it.
 *  6. two communicators (MPI_Comm_dup), the same operations started in
 *     opposite orders by even and odd ranks, the second one completed first.
 *  7. NBX (sparse data exchange): MPI_Issend + MPI_Iprobe + MPI_Ibarrier.
 *  8. MPI_Comm_free of the communicator while collectives on it are pending.
 *  9. a collective progressed while its process waits in MPI_Recv. */
#include "kt.h"

#define BIG 25000               /* ints: 100000 bytes */
#define TAG_GO 9
#define TAG_NBX 11

static int me, n;

static int val(int r, int i) { return r * 1000003 + i; }
static int a2a(int s, int d, int i) { return s * 1000000 + d * 100000 + i; }

static int *ialloc(size_t cnt)
{
    int *p = malloc(sizeof(int) * (cnt ? cnt : 1));
    KT_CHECK(p != NULL, "out of memory");
    return p;
}

/* ---- 1. three collectives in flight, completed in six ways */
struct trio { int cnt, root, *b, *as, *ar, *ts, *tr; };

static void trio_start(struct trio *t, MPI_Comm c, int cnt, int root, int salt, MPI_Request rq[3])
{
    t->cnt = cnt;
    t->root = root;
    t->b = ialloc((size_t)cnt);
    t->as = ialloc((size_t)cnt);
    t->ar = ialloc((size_t)cnt);
    t->ts = ialloc((size_t)cnt * n);
    t->tr = ialloc((size_t)cnt * n);
    for (int i = 0; i < cnt; i++) {
        t->b[i] = me == root ? val(root, i) + salt : -1;
        t->as[i] = val(me, i) + salt;
        t->ar[i] = -1;
    }
    for (int d = 0; d < n; d++)
        for (int i = 0; i < cnt; i++) {
            t->ts[d * cnt + i] = a2a(me, d, i) + salt;
            t->tr[d * cnt + i] = -1;
        }
    KT_MPI(MPI_Ibcast(t->b, cnt, MPI_INT, root, c, &rq[0]));
    KT_MPI(MPI_Iallreduce(t->as, t->ar, cnt, MPI_INT, MPI_SUM, c, &rq[1]));
    KT_MPI(MPI_Ialltoall(t->ts, cnt, MPI_INT, t->tr, cnt, MPI_INT, c, &rq[2]));
}

static void trio_check(struct trio *t, int salt, const char *how)
{
    for (int i = 0; i < t->cnt; i++) {
        if (t->b[i] != val(t->root, i) + salt)
            KT_FAIL("%s: Ibcast count %d b[%d] = %d", how, t->cnt, i, t->b[i]);
        long long want = 0;
        for (int r = 0; r < n; r++) want += val(r, i) + salt;
        if (t->ar[i] != want) KT_FAIL("%s: Iallreduce count %d [%d] = %d, expected %lld", how, t->cnt, i,
                                      t->ar[i], want);
    }
    for (int s = 0; s < n; s++)
        for (int i = 0; i < t->cnt; i++)
            if (t->tr[s * t->cnt + i] != a2a(s, me, i) + salt)
                KT_FAIL("%s: Ialltoall count %d from %d [%d] = %d", how, t->cnt, s, i, t->tr[s * t->cnt + i]);
    free(t->b); free(t->as); free(t->ar); free(t->ts); free(t->tr);
}

static void test_trio(MPI_Comm c)
{
    static const char *hows[] = { "reverse MPI_Wait", "MPI_Waitall", "MPI_Testall loop", "MPI_Waitany",
                                  "MPI_Waitsome", "reverse MPI_Test loop" };
    int cnts[2] = { 1, BIG };
    for (int k = 0; k < 2; k++)
        for (int how = 0; how < 6; how++) {
            struct trio t;
            MPI_Request rq[3];
            int salt = how * 10 + k, flag = 0, left = 3;
            trio_start(&t, c, cnts[k], (how + 1) % n, salt, rq);
            switch (how) {
            case 0:
                for (int j = 2; j >= 0; j--) KT_MPI(MPI_Wait(&rq[j], MPI_STATUS_IGNORE));
                break;
            case 1: KT_MPI(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE)); break;
            case 2: while (!flag) KT_MPI(MPI_Testall(3, rq, &flag, MPI_STATUSES_IGNORE)); break;
            case 3: {
                int seen = 0;
                for (int j = 0; j < 3; j++) {
                    int idx = -1;
                    KT_MPI(MPI_Waitany(3, rq, &idx, MPI_STATUS_IGNORE));
                    KT_CHECK(idx >= 0 && idx < 3 && !(seen & 1 << idx), "Waitany gave index %d", idx);
                    seen |= 1 << idx;
                }
                int idx = -2;
                KT_MPI(MPI_Waitany(3, rq, &idx, MPI_STATUS_IGNORE));
                KT_EQ_INT(idx, MPI_UNDEFINED);
                break;
            }
            case 4:
                while (left > 0) {
                    int outc = 0, ind[3];
                    KT_MPI(MPI_Waitsome(3, rq, &outc, ind, MPI_STATUSES_IGNORE));
                    KT_CHECK(outc >= 1 && outc <= left, "Waitsome gave %d of %d", outc, left);
                    left -= outc;
                }
                break;
            default:
                while (left > 0)
                    for (int j = 2; j >= 0; j--) {
                        if (rq[j] == MPI_REQUEST_NULL) continue;
                        KT_MPI(MPI_Test(&rq[j], &flag, MPI_STATUS_IGNORE));
                        if (flag) left--;
                    }
                break;
            }
            for (int j = 0; j < 3; j++) KT_CHECK(rq[j] == MPI_REQUEST_NULL, "%s: request %d left", hows[how], j);
            trio_check(&t, salt, hows[how]);
        }
}

/* ---- 2. many of one kind in flight */
#define MANY 16
static void test_many(MPI_Comm c)
{
    int in[MANY][3], out[MANY][3];
    MPI_Request rq[MANY];
    for (int k = 0; k < MANY; k++) {
        for (int i = 0; i < 3; i++) {
            in[k][i] = (me * 31 + k * 7 + i) % 23;
            out[k][i] = -1;
        }
        KT_MPI(MPI_Iallreduce(in[k], out[k], 3, MPI_INT, k % 2 ? MPI_MAX : MPI_SUM, c, &rq[k]));
    }
    for (int k = MANY - 1; k >= 0; k--) {
        KT_MPI(MPI_Wait(&rq[k], MPI_STATUS_IGNORE));
        for (int i = 0; i < 3; i++) {
            int want = 0;
            for (int r = 0; r < n; r++) {
                int v = (r * 31 + k * 7 + i) % 23;
                want = k % 2 ? (v > want ? v : want) : want + v;
            }
            if (out[k][i] != want) KT_FAIL("Iallreduce %d of %d in flight: [%d] = %d, expected %d",
                                           k, MANY, i, out[k][i], want);
        }
    }
}

/* ---- 3. blocking collectives while non-blocking ones are pending */
static void test_blocking_between(MPI_Comm c)
{
    int *a = ialloc(BIG), *ar = ialloc(BIG), *b = ialloc(BIG), x[2], y[2];
    MPI_Request rq[2];
    int root = n - 1;
    for (int i = 0; i < BIG; i++) {
        a[i] = val(me, i);
        ar[i] = -1;
        b[i] = me == root ? val(root, i) * 2 : -1;
    }
    KT_MPI(MPI_Iallreduce(a, ar, BIG, MPI_INT, MPI_SUM, c, &rq[0]));
    KT_MPI(MPI_Ibcast(b, BIG, MPI_INT, root, c, &rq[1]));
    x[0] = me; x[1] = 1;
    KT_MPI(MPI_Allreduce(x, y, 2, MPI_INT, MPI_SUM, c));
    KT_EQ_INT(y[0], n * (n - 1) / 2);
    KT_EQ_INT(y[1], n);
    x[0] = me == 0 ? 4711 : -1;
    KT_MPI(MPI_Bcast(x, 1, MPI_INT, 0, c));
    KT_EQ_INT(x[0], 4711);
    KT_MPI(MPI_Barrier(c));
    KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < BIG; i++) {
        long long want = 0;
        for (int r = 0; r < n; r++) want += val(r, i);
        if (ar[i] != want) KT_FAIL("Iallreduce around blocking ones: [%d] = %d", i, ar[i]);
        if (b[i] != val(root, i) * 2) KT_FAIL("Ibcast around blocking ones: [%d] = %d", i, b[i]);
    }
    free(a); free(ar); free(b);
}

/* ---- 4. point-to-point traffic on the same communicator */
static void test_p2p(MPI_Comm c)
{
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int *s = ialloc((size_t)BIG * n), *r = ialloc((size_t)BIG * n), *ps = ialloc(BIG), *pr = ialloc(BIG);
    int sm[2] = { me, 777 }, rm[2] = { -1, -1 }, x = me + 1, y = -1, flag = 1;
    MPI_Request crq[2], prq[3];
    MPI_Status st;

    /* collectives alone: nothing for point-to-point to see */
    for (int d = 0; d < n; d++)
        for (int i = 0; i < BIG; i++) s[d * BIG + i] = a2a(me, d, i);
    KT_MPI(MPI_Ialltoall(s, BIG, MPI_INT, r, BIG, MPI_INT, c, &crq[0]));
    KT_MPI(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, c, &crq[1]));
    int done = 0;
    while (!done) {
        int pf = 0;
        KT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &pf, &st));
        KT_CHECK(!pf, "MPI_Iprobe found a message (source %d tag %d) while only collectives ran",
                 st.MPI_SOURCE, st.MPI_TAG);
        KT_MPI(MPI_Testall(2, crq, &done, MPI_STATUSES_IGNORE));
    }
    KT_EQ_INT(y, n * (n + 1) / 2);
    for (int q = 0; q < n; q++)
        for (int i = 0; i < BIG; i++)
            if (r[q * BIG + i] != a2a(q, me, i)) KT_FAIL("Ialltoall beside Iprobe: from %d [%d] = %d", q, i,
                                                        r[q * BIG + i]);
    KT_MPI(MPI_Barrier(c));     /* nobody sends below before everyone probed above */

    /* wildcard receives posted first; collectives; then the messages, tag 0 and large */
    KT_MPI(MPI_Irecv(rm, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &prq[0]));
    KT_MPI(MPI_Irecv(pr, BIG, MPI_INT, left, MPI_ANY_TAG, c, &prq[1]));
    for (int d = 0; d < n; d++)
        for (int i = 0; i < BIG; i++) { s[d * BIG + i] = a2a(me, d, i) + 1; r[d * BIG + i] = -1; }
    y = -1;
    KT_MPI(MPI_Ialltoall(s, BIG, MPI_INT, r, BIG, MPI_INT, c, &crq[0]));
    KT_MPI(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_MAX, c, &crq[1]));
    /* in this order: the wildcard receive, posted first, matches the first message */
    KT_MPI(MPI_Send(sm, 2, MPI_INT, right, 0, c));
    for (int i = 0; i < BIG; i++) ps[i] = val(me, i);
    KT_MPI(MPI_Isend(ps, BIG, MPI_INT, right, 3, c, &prq[2]));
    KT_MPI(MPI_Wait(&crq[1], MPI_STATUS_IGNORE));
    KT_MPI(MPI_Wait(&prq[0], &st));
    KT_EQ_INT(st.MPI_SOURCE, left);
    KT_EQ_INT(st.MPI_TAG, 0);
    int got = -1;
    KT_MPI(MPI_Get_count(&st, MPI_INT, &got));
    KT_EQ_INT(got, 2);
    KT_EQ_INT(rm[0], left);
    KT_EQ_INT(rm[1], 777);
    KT_MPI(MPI_Wait(&prq[1], &st));
    KT_EQ_INT(st.MPI_TAG, 3);
    for (int i = 0; i < BIG; i++)
        if (pr[i] != val(left, i)) KT_FAIL("large point-to-point beside collectives: [%d] = %d", i, pr[i]);
    KT_MPI(MPI_Wait(&crq[0], MPI_STATUS_IGNORE));
    KT_MPI(MPI_Wait(&prq[2], MPI_STATUS_IGNORE));
    KT_EQ_INT(y, n);
    for (int q = 0; q < n; q++)
        for (int i = 0; i < BIG; i++)
            if (r[q * BIG + i] != a2a(q, me, i) + 1) KT_FAIL("Ialltoall beside point-to-point: from %d [%d] = %d",
                                                            q, i, r[q * BIG + i]);
    KT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &flag, MPI_STATUS_IGNORE));
    KT_CHECK(!flag, "a message is left over");
    KT_MPI(MPI_Barrier(c));     /* nobody sends again before everyone probed */
    free(s); free(r); free(ps); free(pr);
}

/* ---- 5. a collective cannot complete before the late process starts it */
static void test_late(MPI_Comm c)
{
    if (n < 2) return;
    static const char *names[] = { "MPI_Ibcast", "MPI_Iallreduce", "MPI_Ibarrier", "MPI_Ialltoall", "MPI_Iscan" };
    for (int op = 0; op < 5; op++) {
        /* Ibcast: the root is late; Iscan: rank 0 (everyone needs its data) */
        int late = op == 4 ? 0 : n - 1 - op % 2;
        int *s = ialloc((size_t)n * 2), *r = ialloc((size_t)n * 2);
        MPI_Request rq;
        for (int i = 0; i < 2 * n; i++) { s[i] = val(me, i); r[i] = -1; }
        if (me != late) {
            int flag = 1;
            switch (op) {
            case 0: KT_MPI(MPI_Ibcast(r, 2, MPI_INT, late, c, &rq)); break;
            case 1: KT_MPI(MPI_Iallreduce(s, r, 2, MPI_INT, MPI_SUM, c, &rq)); break;
            case 2: KT_MPI(MPI_Ibarrier(c, &rq)); break;
            case 3: KT_MPI(MPI_Ialltoall(s, 2, MPI_INT, r, 2, MPI_INT, c, &rq)); break;
            default: KT_MPI(MPI_Iscan(s, r, 2, MPI_INT, MPI_SUM, c, &rq)); break;
            }
            for (int k = 0; k < 3; k++) {
                KT_MPI(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
                KT_CHECK(!flag, "%s completed before rank %d started it", names[op], late);
            }
            KT_MPI(MPI_Send(&op, 1, MPI_INT, late, TAG_GO, c));
        } else {
            for (int k = 0; k < n - 1; k++) {
                int o = -1;
                KT_MPI(MPI_Recv(&o, 1, MPI_INT, MPI_ANY_SOURCE, TAG_GO, c, MPI_STATUS_IGNORE));
                KT_EQ_INT(o, op);
            }
            if (op == 0) for (int i = 0; i < 2; i++) r[i] = val(late, i);
            switch (op) {
            case 0: KT_MPI(MPI_Ibcast(r, 2, MPI_INT, late, c, &rq)); break;
            case 1: KT_MPI(MPI_Iallreduce(s, r, 2, MPI_INT, MPI_SUM, c, &rq)); break;
            case 2: KT_MPI(MPI_Ibarrier(c, &rq)); break;
            case 3: KT_MPI(MPI_Ialltoall(s, 2, MPI_INT, r, 2, MPI_INT, c, &rq)); break;
            default: KT_MPI(MPI_Iscan(s, r, 2, MPI_INT, MPI_SUM, c, &rq)); break;
            }
        }
        KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        for (int i = 0; i < 2; i++) {
            long long want = 0;
            switch (op) {
            case 0: want = val(late, i); break;
            case 1: for (int q = 0; q < n; q++) want += val(q, i); break;
            case 2: want = -1; break;
            case 3: want = val(0, 2 * me + i); break;       /* the block from rank 0 */
            default: for (int q = 0; q <= me; q++) want += val(q, i); break;
            }
            if (r[i] != want) KT_FAIL("%s with rank %d late: [%d] = %d, expected %lld", names[op], late, i, r[i], want);
        }
        if (op == 3)
            for (int q = 0; q < n; q++)
                for (int i = 0; i < 2; i++) KT_EQ_INT(r[2 * q + i], val(q, 2 * me + i));
        free(s);
        free(r);
    }
}

/* ---- 6. two communicators, started in opposite orders */
static void test_two_comms(void)
{
    MPI_Comm a, b;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &b));
    int *ain = ialloc(BIG), *aout = ialloc(BIG), *bin = ialloc(BIG), *bout = ialloc(BIG);
    int *abc = ialloc(BIG), *bbc = ialloc(BIG);
    for (int rep = 0; rep < 2; rep++) {
        MPI_Request ra[2], rb[2];
        int ra_root = n - 1, rb_root = 0;
        for (int i = 0; i < BIG; i++) {
            ain[i] = val(me, i);
            bin[i] = -val(me, i) - 1;
            aout[i] = bout[i] = 0;
            abc[i] = me == ra_root ? 1000 + i : -1;
            bbc[i] = me == rb_root ? 2000 + i : -1;
        }
        int a_first = (me + rep) % 2 == 0;
        for (int k = 0; k < 2; k++) {
            if ((k == 0) == a_first) {
                KT_MPI(MPI_Iallreduce(ain, aout, BIG, MPI_INT, MPI_SUM, a, &ra[0]));
                KT_MPI(MPI_Ibcast(abc, BIG, MPI_INT, ra_root, a, &ra[1]));
            } else {
                KT_MPI(MPI_Iallreduce(bin, bout, BIG, MPI_INT, MPI_SUM, b, &rb[0]));
                KT_MPI(MPI_Ibcast(bbc, BIG, MPI_INT, rb_root, b, &rb[1]));
            }
        }
        KT_MPI(MPI_Waitall(2, rb, MPI_STATUSES_IGNORE));
        KT_MPI(MPI_Waitall(2, ra, MPI_STATUSES_IGNORE));
        for (int i = 0; i < BIG; i++) {
            long long wa = 0, wb = 0;
            for (int r = 0; r < n; r++) { wa += val(r, i); wb += -val(r, i) - 1; }
            if (aout[i] != wa) KT_FAIL("rep %d: Iallreduce on the first dup: [%d] = %d, expected %lld", rep, i, aout[i], wa);
            if (bout[i] != wb) KT_FAIL("rep %d: Iallreduce on the second dup: [%d] = %d, expected %lld", rep, i, bout[i], wb);
            if (abc[i] != 1000 + i) KT_FAIL("rep %d: Ibcast on the first dup: [%d] = %d", rep, i, abc[i]);
            if (bbc[i] != 2000 + i) KT_FAIL("rep %d: Ibcast on the second dup: [%d] = %d", rep, i, bbc[i]);
        }
    }
    free(ain); free(aout); free(bin); free(bout); free(abc); free(bbc);
    KT_MPI(MPI_Comm_free(&a));
    KT_MPI(MPI_Comm_free(&b));
}

/* ---- 7. NBX: each rank sends to me + 1 and me + 3; nobody knows who sends to it */
static void test_nbx(MPI_Comm c)
{
    int dest[2] = { (me + 1) % n, (me + 3) % n }, msg[2][2];
    int *from = calloc((size_t)n, sizeof(int));
    MPI_Request srq[2], brq = MPI_REQUEST_NULL;
    for (int k = 0; k < 2; k++) {
        msg[k][0] = me;
        msg[k][1] = dest[k] * 10 + k;
        KT_MPI(MPI_Issend(msg[k], 2, MPI_INT, dest[k], TAG_NBX, c, &srq[k]));
    }
    int barrier = 0, done = 0, got = 0;
    while (!done) {
        int flag = 0;
        MPI_Status st;
        KT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, TAG_NBX, c, &flag, &st));
        if (flag) {
            int m[2];
            KT_MPI(MPI_Recv(m, 2, MPI_INT, st.MPI_SOURCE, TAG_NBX, c, MPI_STATUS_IGNORE));
            KT_EQ_INT(m[0], st.MPI_SOURCE);
            KT_CHECK(m[1] == me * 10 || m[1] == me * 10 + 1, "NBX: message %d from %d", m[1], m[0]);
            from[m[0]]++;
            got++;
        }
        if (!barrier) {
            int sent = 0;
            KT_MPI(MPI_Testall(2, srq, &sent, MPI_STATUSES_IGNORE));
            if (sent) {
                KT_MPI(MPI_Ibarrier(c, &brq));
                barrier = 1;
            }
        } else {
            KT_MPI(MPI_Test(&brq, &done, MPI_STATUS_IGNORE));
        }
    }
    KT_EQ_INT(got, 2);
    for (int s = 0; s < n; s++)
        KT_EQ_INT(from[s], ((s + 1) % n == me) + ((s + 3) % n == me));
    free(from);
}

/* ---- 8. the communicator freed while collectives on it are pending: they
 * complete normally (MPI_Comm_free only marks it for deallocation) */
static void test_comm_freed(void)
{
    MPI_Comm d;
    MPI_Request rq[2];
    int *b = ialloc(BIG), *a = ialloc(BIG), *ar = ialloc(BIG), root = n - 1;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    for (int i = 0; i < BIG; i++) {
        b[i] = me == root ? val(root, i) + 5 : -1;
        a[i] = val(me, i);
        ar[i] = -1;
    }
    KT_MPI(MPI_Ibcast(b, BIG, MPI_INT, root, d, &rq[0]));
    KT_MPI(MPI_Iallreduce(a, ar, BIG, MPI_INT, MPI_SUM, d, &rq[1]));
    KT_MPI(MPI_Comm_free(&d));
    KT_CHECK(d == MPI_COMM_NULL, "MPI_Comm_free did not reset the handle");
    KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < BIG; i++) {
        long long want = 0;
        for (int r = 0; r < n; r++) want += val(r, i);
        if (b[i] != val(root, i) + 5) KT_FAIL("Ibcast on a freed communicator: [%d] = %d", i, b[i]);
        if (ar[i] != want) KT_FAIL("Iallreduce on a freed communicator: [%d] = %d, expected %lld", i, ar[i], want);
    }
    free(a); free(b); free(ar);
}

/* ---- 9. progress inside blocking point-to-point calls: even rank r waits in
 * MPI_Recv for r + 1, which sends only once its Ibcast is complete; the
 * broadcast may need r to forward the data meanwhile */
static void test_progress_in_recv(void)
{
    int *b = ialloc(BIG), root = 0, flag = 0;
    MPI_Request rq;
    for (int i = 0; i < BIG; i++) b[i] = me == root ? val(root, i) - 8 : -1;
    KT_MPI(MPI_Ibcast(b, BIG, MPI_INT, root, MPI_COMM_WORLD, &rq));
    if (me % 2 == 0 && me + 1 < n) {
        KT_MPI(MPI_Recv(&flag, 1, MPI_INT, me + 1, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_EQ_INT(flag, 1);
        KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    } else {
        KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        flag = 1;
        if (me % 2) KT_MPI(MPI_Send(&flag, 1, MPI_INT, me - 1, TAG_GO, MPI_COMM_WORLD));
    }
    for (int i = 0; i < BIG; i++)
        if (b[i] != val(root, i) - 8) KT_FAIL("Ibcast progressed in MPI_Recv: [%d] = %d", i, b[i]);
    free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    test_trio(MPI_COMM_WORLD);
    test_many(MPI_COMM_WORLD);
    test_blocking_between(MPI_COMM_WORLD);
    test_p2p(MPI_COMM_WORLD);
    test_late(MPI_COMM_WORLD);
    test_two_comms();
    test_nbx(MPI_COMM_WORLD);
    test_comm_freed();
    test_progress_in_recv();
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return 0;
}
