/* coll_all: every collective on MPI_COMM_WORLD and MPI_COMM_SELF against a
 * serial reference computed locally: every root, MPI_IN_PLACE variants,
 * v-variants with uneven and zero counts, zero-count calls, a datatype
 * whose extent differs from its size, and a message large enough for a
 * rendezvous protocol. */
#include "kt.h"

static int rank, size;

/* Expect an error of class MPI_ERR_BUFFER or MPI_ERR_ARG (both are fine for a bad buffer). */
#define EXPECT_BUFERR(call) do { int rc_ = (call), c_ = -1; \
    if (rc_ == MPI_SUCCESS) KT_FAIL("%s succeeded, expected MPI_ERR_BUFFER or MPI_ERR_ARG", #call); \
    MPI_Error_class(rc_, &c_); \
    KT_CHECK(c_ == MPI_ERR_BUFFER || c_ == MPI_ERR_ARG, "%s gave class %d", #call, c_); } while (0)

/* value of element i that rank r contributes */
static int val(int r, int i) { return r * 1000 + i; }

static void test_comm(MPI_Comm comm)
{
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    KT_MPI(MPI_Barrier(comm));

    /* ---- bcast: every root, small / zero / large */
    for (int root = 0; root < n; root++) {
        int counts[3] = { 5, 0, 300000 };
        for (int c = 0; c < 3; c++) {
            int cnt = counts[c];
            int *b = malloc(sizeof(int) * (size_t)(cnt + 1));
            for (int i = 0; i < cnt; i++) b[i] = me == root ? val(root, i) : -1;
            b[cnt] = 4242;
            KT_MPI(MPI_Bcast(b, cnt, MPI_INT, root, comm));
            for (int i = 0; i < cnt; i++)
                if (b[i] != val(root, i)) KT_FAIL("bcast root %d count %d: b[%d] = %d", root, cnt, i, b[i]);
            KT_EQ_INT(b[cnt], 4242);
            free(b);
        }
    }

    /* ---- gather / scatter, every root, in place at the root */
    int m = 3;
    int *sb = malloc(sizeof(int) * (size_t)(m * n + 8)), *rb = malloc(sizeof(int) * (size_t)(m * n + 8));
    for (int root = 0; root < n; root++) {
        for (int i = 0; i < m; i++) sb[i] = val(me, i);
        for (int i = 0; i < m * n; i++) rb[i] = -1;
        KT_MPI(MPI_Gather(sb, m, MPI_INT, rb, m, MPI_INT, root, comm));
        if (me == root)
            for (int r = 0; r < n; r++)
                for (int i = 0; i < m; i++) KT_EQ_INT(rb[r * m + i], val(r, i));
        /* in place */
        for (int i = 0; i < m * n; i++) rb[i] = me == root && i / m == root ? val(root, i % m) : -1;
        KT_MPI(MPI_Gather(me == root ? MPI_IN_PLACE : sb, m, MPI_INT, rb, m, MPI_INT, root, comm));
        if (me == root)
            for (int r = 0; r < n; r++)
                for (int i = 0; i < m; i++) KT_EQ_INT(rb[r * m + i], val(r, i));

        /* scatter */
        for (int i = 0; i < m * n; i++) sb[i] = me == root ? val(i / m, i % m) + 7 : -1;
        for (int i = 0; i < m; i++) rb[i] = -1;
        KT_MPI(MPI_Scatter(sb, m, MPI_INT, rb, m, MPI_INT, root, comm));
        for (int i = 0; i < m; i++) KT_EQ_INT(rb[i], val(me, i) + 7);
        /* in place at the root: the root's block stays where it is */
        KT_MPI(MPI_Scatter(sb, m, MPI_INT, me == root ? MPI_IN_PLACE : rb, m, MPI_INT, root, comm));
        if (me == root)
            for (int i = 0; i < m * n; i++) KT_EQ_INT(sb[i], val(i / m, i % m) + 7);
        else
            for (int i = 0; i < m; i++) KT_EQ_INT(rb[i], val(me, i) + 7);
    }
    free(sb);
    free(rb);

    /* ---- gatherv / scatterv: uneven counts (rank r: r % 3, so some zero),
     * displacements in reverse rank order with gaps */
    {
        int *cnt = malloc(sizeof(int) * (size_t)n), *dsp = malloc(sizeof(int) * (size_t)n), tot = 0;
        for (int r = 0; r < n; r++) { cnt[r] = r % 3; tot += cnt[r] + 1; }
        for (int r = n - 1, d = 0; r >= 0; r--) { dsp[r] = d; d += cnt[r] + 1; }
        int *buf = malloc(sizeof(int) * (size_t)(tot + 1)), mine[3];
        for (int root = 0; root < n; root++) {
            for (int i = 0; i < 3; i++) mine[i] = val(me, i);
            for (int i = 0; i < tot; i++) buf[i] = -5;
            KT_MPI(MPI_Gatherv(mine, cnt[me], MPI_INT, buf, cnt, dsp, MPI_INT, root, comm));
            if (me == root) {
                for (int r = 0; r < n; r++) {
                    for (int i = 0; i < cnt[r]; i++) KT_EQ_INT(buf[dsp[r] + i], val(r, i));
                    KT_EQ_INT(buf[dsp[r] + cnt[r]], -5);      /* the gap is untouched */
                }
            }
            /* in place gatherv */
            if (me == root) for (int i = 0; i < cnt[me]; i++) buf[dsp[me] + i] = val(me, i);
            KT_MPI(MPI_Gatherv(me == root ? MPI_IN_PLACE : mine, cnt[me], MPI_INT, buf, cnt, dsp,
                               MPI_INT, root, comm));
            if (me == root)
                for (int r = 0; r < n; r++)
                    for (int i = 0; i < cnt[r]; i++) KT_EQ_INT(buf[dsp[r] + i], val(r, i));
            /* scatterv back */
            if (me == root)
                for (int r = 0; r < n; r++)
                    for (int i = 0; i < cnt[r]; i++) buf[dsp[r] + i] = val(r, i) * 2;
            mine[0] = mine[1] = mine[2] = -9;
            KT_MPI(MPI_Scatterv(buf, cnt, dsp, MPI_INT, mine, cnt[me], MPI_INT, root, comm));
            for (int i = 0; i < 3; i++) KT_EQ_INT(mine[i], i < cnt[me] ? val(me, i) * 2 : -9);
        }

        /* ---- allgather(v) */
        int *ag = malloc(sizeof(int) * (size_t)(2 * n));
        int two[2] = { val(me, 0), val(me, 1) };
        KT_MPI(MPI_Allgather(two, 2, MPI_INT, ag, 2, MPI_INT, comm));
        for (int r = 0; r < n; r++) { KT_EQ_INT(ag[2 * r], val(r, 0)); KT_EQ_INT(ag[2 * r + 1], val(r, 1)); }
        for (int i = 0; i < 2 * n; i++) ag[i] = i / 2 == me ? val(me, i % 2) + 1 : -1;
        KT_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_INT, ag, 2, MPI_INT, comm));
        for (int r = 0; r < n; r++) { KT_EQ_INT(ag[2 * r], val(r, 0) + 1); KT_EQ_INT(ag[2 * r + 1], val(r, 1) + 1); }
        free(ag);

        for (int i = 0; i < 3; i++) mine[i] = val(me, i) + 3;
        for (int i = 0; i < tot; i++) buf[i] = -5;
        KT_MPI(MPI_Allgatherv(mine, cnt[me], MPI_INT, buf, cnt, dsp, MPI_INT, comm));
        for (int r = 0; r < n; r++) {
            for (int i = 0; i < cnt[r]; i++) KT_EQ_INT(buf[dsp[r] + i], val(r, i) + 3);
            KT_EQ_INT(buf[dsp[r] + cnt[r]], -5);
        }
        for (int i = 0; i < tot; i++) buf[i] = -5;
        for (int i = 0; i < cnt[me]; i++) buf[dsp[me] + i] = val(me, i) + 4;
        KT_MPI(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_INT, buf, cnt, dsp, MPI_INT, comm));
        for (int r = 0; r < n; r++)
            for (int i = 0; i < cnt[r]; i++) KT_EQ_INT(buf[dsp[r] + i], val(r, i) + 4);
        free(buf);
        free(cnt);
        free(dsp);
    }

    /* ---- alltoall: block to rank d is {me*100+d, me*100+d+50} */
    {
        int *s = malloc(sizeof(int) * (size_t)(2 * n)), *r = malloc(sizeof(int) * (size_t)(2 * n));
        for (int d = 0; d < n; d++) { s[2 * d] = me * 100 + d; s[2 * d + 1] = me * 100 + d + 50; }
        KT_MPI(MPI_Alltoall(s, 2, MPI_INT, r, 2, MPI_INT, comm));
        for (int src = 0; src < n; src++) {
            KT_EQ_INT(r[2 * src], src * 100 + me);
            KT_EQ_INT(r[2 * src + 1], src * 100 + me + 50);
        }
        memcpy(r, s, sizeof(int) * (size_t)(2 * n));
        KT_MPI(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_INT, r, 2, MPI_INT, comm));
        for (int src = 0; src < n; src++) {
            KT_EQ_INT(r[2 * src], src * 100 + me);
            KT_EQ_INT(r[2 * src + 1], src * 100 + me + 50);
        }
        free(s);
        free(r);
    }

    /* ---- alltoallv / alltoallw: rank s sends (s + d) % 3 elements to d */
    {
        int *sc = malloc(sizeof(int) * (size_t)n * 8);
        int *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n, *sdb = sc + 4 * n, *rdb = sc + 5 * n;
        MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * (size_t)n);
        int stot = 0, rtot = 0;
        for (int d = 0; d < n; d++) {
            sc[d] = (me + d) % 3; sd[d] = stot; stot += sc[d] + 1;
            rc[d] = (d + me) % 3;
            ty[d] = MPI_INT;
        }
        for (int d = n - 1; d >= 0; d--) { rd[d] = rtot; rtot += rc[d] + 2; }
        for (int d = 0; d < n; d++) { sdb[d] = sd[d] * (int)sizeof(int); rdb[d] = rd[d] * (int)sizeof(int); }
        int *s = malloc(sizeof(int) * (size_t)(stot + 1)), *r = malloc(sizeof(int) * (size_t)(rtot + 1));
        for (int d = 0; d < n; d++)
            for (int i = 0; i < sc[d]; i++) s[sd[d] + i] = me * 10000 + d * 10 + i;
        for (int w = 0; w < 2; w++) {
            for (int i = 0; i < rtot; i++) r[i] = -1;
            if (w == 0) KT_MPI(MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, comm));
            else KT_MPI(MPI_Alltoallw(s, sc, sdb, ty, r, rc, rdb, ty, comm));
            for (int src = 0; src < n; src++) {
                for (int i = 0; i < rc[src]; i++) KT_EQ_INT(r[rd[src] + i], src * 10000 + me * 10 + i);
                KT_EQ_INT(r[rd[src] + rc[src]], -1);
            }
        }
        /* in place: symmetric counts (me + d) % 3 == (d + me) % 3 */
        for (int w = 0; w < 2; w++) {
            for (int i = 0; i < rtot; i++) r[i] = -1;
            for (int d = 0; d < n; d++)
                for (int i = 0; i < rc[d]; i++) r[rd[d] + i] = me * 10000 + d * 10 + i;
            if (w == 0) KT_MPI(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_INT, r, rc, rd, MPI_INT, comm));
            else KT_MPI(MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, r, rc, rdb, ty, comm));
            for (int src = 0; src < n; src++) {
                for (int i = 0; i < rc[src]; i++) KT_EQ_INT(r[rd[src] + i], src * 10000 + me * 10 + i);
                KT_EQ_INT(r[rd[src] + rc[src]], -1);
            }
        }
        free(s); free(r); free(sc); free(ty);
    }

    /* ---- reduce (every root, in place), allreduce, scans */
    {
        enum { K = 4 };
        long s[K], r[K], want[K], pre[K], exw[K];
        for (int i = 0; i < K; i++) s[i] = val(me, i);
        for (int i = 0; i < K; i++) {
            want[i] = 0;
            for (int q = 0; q < n; q++) want[i] += val(q, i);
        }
        for (int root = 0; root < n; root++) {
            for (int i = 0; i < K; i++) r[i] = -1;
            KT_MPI(MPI_Reduce(s, r, K, MPI_LONG, MPI_SUM, root, comm));
            for (int i = 0; i < K; i++) KT_EQ_INT(r[i], me == root ? want[i] : -1);
            memcpy(r, s, sizeof r);
            KT_MPI(MPI_Reduce(me == root ? MPI_IN_PLACE : s, r, K, MPI_LONG, MPI_SUM, root, comm));
            if (me == root) for (int i = 0; i < K; i++) KT_EQ_INT(r[i], want[i]);
            KT_MPI(MPI_Reduce(s, r, 0, MPI_LONG, MPI_SUM, root, comm));
        }
        KT_MPI(MPI_Allreduce(s, r, K, MPI_LONG, MPI_SUM, comm));
        for (int i = 0; i < K; i++) KT_EQ_INT(r[i], want[i]);
        memcpy(r, s, sizeof r);
        KT_MPI(MPI_Allreduce(MPI_IN_PLACE, r, K, MPI_LONG, MPI_SUM, comm));
        for (int i = 0; i < K; i++) KT_EQ_INT(r[i], want[i]);
        KT_MPI(MPI_Allreduce(s, r, 0, MPI_LONG, MPI_SUM, comm));

        for (int i = 0; i < K; i++) {
            pre[i] = 0;
            for (int q = 0; q <= me; q++) pre[i] += val(q, i);
            exw[i] = pre[i] - val(me, i);
        }
        KT_MPI(MPI_Scan(s, r, K, MPI_LONG, MPI_SUM, comm));
        for (int i = 0; i < K; i++) KT_EQ_INT(r[i], pre[i]);
        memcpy(r, s, sizeof r);
        KT_MPI(MPI_Scan(MPI_IN_PLACE, r, K, MPI_LONG, MPI_SUM, comm));
        for (int i = 0; i < K; i++) KT_EQ_INT(r[i], pre[i]);
        for (int i = 0; i < K; i++) r[i] = -1;
        KT_MPI(MPI_Exscan(s, r, K, MPI_LONG, MPI_SUM, comm));
        if (me > 0) for (int i = 0; i < K; i++) KT_EQ_INT(r[i], exw[i]);
        memcpy(r, s, sizeof r);
        KT_MPI(MPI_Exscan(MPI_IN_PLACE, r, K, MPI_LONG, MPI_SUM, comm));
        if (me > 0) for (int i = 0; i < K; i++) KT_EQ_INT(r[i], exw[i]);
    }

    /* ---- reduce_scatter_block / reduce_scatter (uneven, some zero) */
    {
        int tot = 0, *cnt = malloc(sizeof(int) * (size_t)n);
        for (int q = 0; q < n; q++) { cnt[q] = (q * 2 + 1) % 4; tot += cnt[q]; }
        int big = 2 * n > tot ? 2 * n : tot;
        int *s = malloc(sizeof(int) * (size_t)(big + 1)), *r = malloc(sizeof(int) * (size_t)(big + 1));
        for (int i = 0; i < big; i++) s[i] = val(me, i);
        /* block: 2 per rank */
        KT_MPI(MPI_Reduce_scatter_block(s, r, 2, MPI_INT, MPI_SUM, comm));
        for (int j = 0; j < 2; j++) {
            long w = 0;
            for (int q = 0; q < n; q++) w += val(q, 2 * me + j);
            KT_EQ_INT(r[j], w);
        }
        memcpy(r, s, sizeof(int) * (size_t)(2 * n));
        KT_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, r, 2, MPI_INT, MPI_SUM, comm));
        for (int j = 0; j < 2; j++) {
            long w = 0;
            for (int q = 0; q < n; q++) w += val(q, 2 * me + j);
            KT_EQ_INT(r[j], w);
        }
        int off = 0;
        for (int q = 0; q < me; q++) off += cnt[q];
        for (int ip = 0; ip < 2; ip++) {
            for (int i = 0; i <= big; i++) r[i] = -3;
            if (ip) memcpy(r, s, sizeof(int) * (size_t)tot);
            KT_MPI(MPI_Reduce_scatter(ip ? MPI_IN_PLACE : s, r, cnt, MPI_INT, MPI_SUM, comm));
            for (int j = 0; j < cnt[me]; j++) {
                long w = 0;
                for (int q = 0; q < n; q++) w += val(q, off + j);
                KT_EQ_INT(r[j], w);
            }
            if (!ip) KT_EQ_INT(r[cnt[me]], -3);
        }
        free(s); free(r); free(cnt);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    for (int rep = 0; rep < 2; rep++) test_comm(MPI_COMM_WORLD);
    test_comm(MPI_COMM_SELF);

    /* argument errors */
    int x = 1, y[64];
    (void)x; (void)y;
    EXPECT_BUFERR(MPI_Bcast(MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_WORLD));
    EXPECT_BUFERR(MPI_Allreduce(&x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
#ifdef KUMI_MPI /* aliased buffers are erroneous; Kumi reports it, Open MPI does not check */
    EXPECT_BUFERR(MPI_Allreduce(y, y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
#endif
#ifdef KUMI_MPI /* Open MPI does not check the count arrays */
    {
        int cnt[64], dsp[64];
        for (int i = 0; i < 64; i++) { cnt[i] = 1; dsp[i] = i; }
        cnt[size - 1] = -1;
        KT_ERRCLASS(MPI_Allgatherv(&x, 1, MPI_INT, y, cnt, dsp, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT);
    }
#endif

    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return 0;
}
