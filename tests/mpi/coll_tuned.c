/* coll_tuned: the collectives at the sizes where coll/tuned's algorithms
 * change behaviour, checked against values computed from rank and index:
 * counts below, at and above the process count and its power of two, not
 * divisible by it, and large enough for several pipeline segments and the
 * rendezvous path; every root; MPI_IN_PLACE; a layout with holes (VEC)
 * against plain ints on the other side; reductions with MPI_SUM and with a
 * non-commutative user op (2x2 matrix product mod 9973, rank order).
 * Every call runs in the three forms: blocking, non-blocking, persistent
 * (started twice, on fresh data).
 *
 * tests/scripts/coll_tuned.sh runs it with every algorithm forced
 * (coll_tuned_<op>_algorithm) and tiny pipeline segments. */
#include "kt_coll.h"

static int me, np;
static const char *what = "";
static long what_count;
static int what_form, what_root;

#define FAIL_AT(idx, got, want) KT_FAIL("%s (form %d, count %ld, root %d): datum %ld is %lld, " \
    "expected %lld", what, what_form, what_count, what_root, (long)(idx), (long long)(got), \
    (long long)(want))
#define EXPECT(idx, got, want) do { long long g_ = (got), w_ = (want); \
    if (g_ != w_) FAIL_AT(idx, g_, w_); } while (0)

/* ------------------------------------------------------------ layouts (kt_coll.h) */
static struct kt_lay INT, VEC;
static void holes(const struct kt_lay *l, const int *b, long n)
{
    long i = kt_hole_written(l, b, n);
    if (i >= 0) FAIL_AT(i, b[i], KT_HOLE);
}

/* ------------------------------------------------------------ forms */
enum { BLOCKING, NONBLOCKING, PERSISTENT };
static MPI_Request req;
static int iter_count(int form) { return form == PERSISTENT ? 2 : 1; }
/* After the call of iteration it has been made (rc): complete it. */
static void complete(int form, int it)
{
    if (form == BLOCKING) return;
    if (form == PERSISTENT) KT_MPI(MPI_Start(&req));
    KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    if (form == PERSISTENT && it == 1) KT_MPI(MPI_Request_free(&req));
    KT_CHECK(req == MPI_REQUEST_NULL || form == PERSISTENT, "request not freed");
}
/* The call in three forms (persistent: created in iteration 0 only). */
#define CALL3(form, it, blocking, nb, init) do { \
    if ((form) == BLOCKING) KT_MPI(blocking); \
    else if ((form) == NONBLOCKING) KT_MPI(nb); \
    else if ((it) == 0) KT_MPI(init); \
    complete(form, it); } while (0)

/* ------------------------------------------------------------ reduction ops */
static MPI_Datatype MAT;        /* 4 contiguous ints */
static MPI_Op MATMUL;

/* Reductions: op 0 = MPI_SUM on MPI_INT, op 1 = MATMUL on MAT (4 ints per
 * element).  fill() writes rank r's contribution of n elements; want() gives
 * element k's datum d of the reduction over ranks lo..hi. */
static void fill(int opk, int seed, int r, int *b, long n)
{
    for (long k = 0; k < n; k++) {
        if (opk == 0) b[k] = kt_val(seed, r, k);
        else kt_mat_of(seed, r, k, b + 4 * k);
    }
}
static void check_red(int opk, int seed, int lo, int hi, const int *b, long n, long first)
{
    for (long k = 0; k < n; k++) {
        if (opk == 0) {
            long long s = 0;
            for (int r = lo; r <= hi; r++) s += kt_val(seed, r, first + k);
            EXPECT(k, b[k], (int)s);
        } else {
            int m[4];
            kt_mat_prod(seed, lo, hi, first + k, m);
            for (int d = 0; d < 4; d++) EXPECT(4 * k + d, b[4 * k + d], m[d]);
        }
    }
}
static MPI_Datatype red_t(int opk) { return opk ? MAT : MPI_INT; }
static MPI_Op red_op(int opk) { return opk ? MATMUL : MPI_SUM; }
static int red_ints(int opk) { return opk ? 4 : 1; }

/* ------------------------------------------------------------ tests */
static const long counts[] = { 0, 1, 3, 7, 8, 9, 31, 1000, 50001 };
#define NCOUNTS (int)(sizeof counts / sizeof counts[0])
#define FORMS for (int form = 0; form < 3; form++)
#define ITERS for (int it = 0; it < iter_count(form); it++)

static void test_barrier(void)
{
    what = "barrier";
    FORMS ITERS {
        CALL3(form, it, MPI_Barrier(MPI_COMM_WORLD), MPI_Ibarrier(MPI_COMM_WORLD, &req),
              MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    }
}

static void test_bcast(void)
{
    what = "bcast";
    for (int c = 0; c < NCOUNTS; c++) FORMS for (int root = 0; root < np; root += (np > 3 ? np / 2 : 1)) {
        long n = counts[c] * 2;                 /* ints, even: VEC holds pairs */
        const struct kt_lay *l = (me == root) == (c % 2) ? &VEC : &INT;
        what_count = n; what_form = form; what_root = root;
        int *b = kt_mk(l, n);
        ITERS {
            for (long j = 0; j < n; j++) kt_put(l, b, j, me == root ? kt_val(it, root, j) : -1);
            CALL3(form, it, MPI_Bcast(b, kt_cnt(l, n), l->t, root, MPI_COMM_WORLD),
                  MPI_Ibcast(b, kt_cnt(l, n), l->t, root, MPI_COMM_WORLD, &req),
                  MPI_Bcast_init(b, kt_cnt(l, n), l->t, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
            for (long j = 0; j < n; j++) EXPECT(j, kt_get(l, b, j), kt_val(it, root, j));
            holes(l, b, n);
        }
        free(b);
    }
}

static void test_gather_scatter(void)
{
    for (int c = 0; c < NCOUNTS - 1; c++) FORMS for (int root = 0; root < np; root += (np > 3 ? np / 2 : 1))
    for (int inplace = 0; inplace < 2; inplace++) {
        long n = counts[c] * 2;
        const struct kt_lay *ls = c % 2 ? &VEC : &INT, *lr = c % 3 ? &INT : &VEC;
        what_count = n; what_form = form; what_root = root;
        int *sb = kt_mk(ls, n), *rb = kt_mk(lr, n * np);
        int ip = inplace && me == root;
        what = "gather";
        ITERS {
            for (long j = 0; j < n; j++) kt_put(ls, sb, j, kt_val(it, me, j));
            for (long j = 0; j < n * np; j++) kt_put(lr, rb, j, -1);
            if (ip) for (long j = 0; j < n; j++) kt_put(lr, rb, me * n + j, kt_val(it, me, j));
            const void *s = ip ? MPI_IN_PLACE : sb;
            CALL3(form, it,
                  MPI_Gather(s, kt_cnt(ls, n), ls->t, rb, kt_cnt(lr, n), lr->t, root, MPI_COMM_WORLD),
                  MPI_Igather(s, kt_cnt(ls, n), ls->t, rb, kt_cnt(lr, n), lr->t, root, MPI_COMM_WORLD, &req),
                  MPI_Gather_init(s, kt_cnt(ls, n), ls->t, rb, kt_cnt(lr, n), lr->t, root, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &req));
            if (me == root) {
                for (int r = 0; r < np; r++)
                    for (long j = 0; j < n; j++) EXPECT(r * n + j, kt_get(lr, rb, r * n + j), kt_val(it, r, j));
                holes(lr, rb, n * np);
            }
        }
        what = "scatter";
        ITERS {
            for (long j = 0; j < n * np; j++) kt_put(lr, rb, j, kt_val(it, (int)(j / (n ? n : 1)), j % (n ? n : 1)));
            for (long j = 0; j < n; j++) kt_put(ls, sb, j, -1);
            void *r = ip ? MPI_IN_PLACE : sb;
            CALL3(form, it,
                  MPI_Scatter(rb, kt_cnt(lr, n), lr->t, r, kt_cnt(ls, n), ls->t, root, MPI_COMM_WORLD),
                  MPI_Iscatter(rb, kt_cnt(lr, n), lr->t, r, kt_cnt(ls, n), ls->t, root, MPI_COMM_WORLD, &req),
                  MPI_Scatter_init(rb, kt_cnt(lr, n), lr->t, r, kt_cnt(ls, n), ls->t, root, MPI_COMM_WORLD,
                                   MPI_INFO_NULL, &req));
            if (!ip) {
                for (long j = 0; j < n; j++) EXPECT(j, kt_get(ls, sb, j), kt_val(it, me, j));
                holes(ls, sb, n);
            } else {
                for (long j = 0; j < n * np; j++)        /* the root's send buffer is untouched */
                    EXPECT(j, kt_get(lr, rb, j), kt_val(it, (int)(j / n), j % n));
            }
        }
        free(sb); free(rb);
    }
}

static void test_allgather_alltoall(void)
{
    for (int c = 0; c < NCOUNTS - 1; c++) FORMS for (int inplace = 0; inplace < 2; inplace++) {
        long n = counts[c] * 2;
        const struct kt_lay *ls = c % 2 ? &VEC : &INT, *lr = inplace ? ls : c % 3 ? &INT : &VEC;
        what_count = n; what_form = form; what_root = -1;
        int *sb = kt_mk(ls, n * np), *rb = kt_mk(lr, n * np);
        const void *s;
        what = "allgather";
        ITERS {
            for (long j = 0; j < n; j++) kt_put(ls, sb, j, kt_val(it, me, j));
            for (long j = 0; j < n * np; j++) kt_put(lr, rb, j, -1);
            if (inplace) for (long j = 0; j < n; j++) kt_put(lr, rb, me * n + j, kt_val(it, me, j));
            s = inplace ? MPI_IN_PLACE : sb;
            CALL3(form, it, MPI_Allgather(s, kt_cnt(ls, n), ls->t, rb, kt_cnt(lr, n), lr->t, MPI_COMM_WORLD),
                  MPI_Iallgather(s, kt_cnt(ls, n), ls->t, rb, kt_cnt(lr, n), lr->t, MPI_COMM_WORLD, &req),
                  MPI_Allgather_init(s, kt_cnt(ls, n), ls->t, rb, kt_cnt(lr, n), lr->t, MPI_COMM_WORLD,
                                     MPI_INFO_NULL, &req));
            for (int r = 0; r < np; r++)
                for (long j = 0; j < n; j++) EXPECT(r * n + j, kt_get(lr, rb, r * n + j), kt_val(it, r, j));
            holes(lr, rb, n * np);
        }
        what = "alltoall";                      /* block for rank d: kt_val(it, me, d * n + j) */
        ITERS {
            int *src = inplace ? rb : sb;
            const struct kt_lay *lsrc = inplace ? lr : ls;
            for (long j = 0; j < n * np; j++) kt_put(lsrc, src, j, kt_val(it, me, j));
            if (!inplace) for (long j = 0; j < n * np; j++) kt_put(lr, rb, j, -1);
            s = inplace ? MPI_IN_PLACE : sb;
            CALL3(form, it, MPI_Alltoall(s, kt_cnt(ls, n), ls->t, rb, kt_cnt(lr, n), lr->t, MPI_COMM_WORLD),
                  MPI_Ialltoall(s, kt_cnt(ls, n), ls->t, rb, kt_cnt(lr, n), lr->t, MPI_COMM_WORLD, &req),
                  MPI_Alltoall_init(s, kt_cnt(ls, n), ls->t, rb, kt_cnt(lr, n), lr->t, MPI_COMM_WORLD,
                                    MPI_INFO_NULL, &req));
            for (int r = 0; r < np; r++)
                for (long j = 0; j < n; j++)
                    EXPECT(r * n + j, kt_get(lr, rb, r * n + j), kt_val(it, r, me * n + j));
            holes(lr, rb, n * np);
        }
        free(sb); free(rb);
    }
}

/* v-variants: rank r's block has (r * 3 + c) % 5 * scale ints (some zero),
 * placed in reverse rank order with a gap of 3 ints that must stay -1. */
static void test_vvariants(void)
{
    int *rc = malloc(sizeof(int) * (size_t)np * 4), *dsp = rc + np, *sc = rc + 2 * np,
        *sd = rc + 3 * np;
    for (int c = 0; c < 4; c++) FORMS for (int inplace = 0; inplace < 2; inplace++) {
        int scale = c == 3 ? 3000 : c + 1;
        long tot = 0;
        for (int r = np - 1; r >= 0; r--) {
            rc[r] = (r * 3 + c) % 5 * scale;
            dsp[r] = (int)tot;
            tot += rc[r] + 3;
        }
        what_count = scale; what_form = form; what_root = -1;
        int *sb = malloc(sizeof(int) * (size_t)(tot + 1)), *rb = malloc(sizeof(int) * (size_t)(tot + 1));
        KT_CHECK(sb && rb, "out of memory");
        what = "allgatherv";
        ITERS {
            for (long j = 0; j < rc[me]; j++) sb[j] = kt_val(it, me, j);
            for (long j = 0; j < tot; j++) rb[j] = -1;
            if (inplace) for (long j = 0; j < rc[me]; j++) rb[dsp[me] + j] = kt_val(it, me, j);
            const void *s = inplace ? MPI_IN_PLACE : sb;
            CALL3(form, it, MPI_Allgatherv(s, rc[me], MPI_INT, rb, rc, dsp, MPI_INT, MPI_COMM_WORLD),
                  MPI_Iallgatherv(s, rc[me], MPI_INT, rb, rc, dsp, MPI_INT, MPI_COMM_WORLD, &req),
                  MPI_Allgatherv_init(s, rc[me], MPI_INT, rb, rc, dsp, MPI_INT, MPI_COMM_WORLD,
                                      MPI_INFO_NULL, &req));
            for (int r = 0; r < np; r++) {
                for (long j = 0; j < rc[r]; j++) EXPECT(dsp[r] + j, rb[dsp[r] + j], kt_val(it, r, j));
                for (long j = 0; j < 3; j++) EXPECT(dsp[r] + rc[r] + j, rb[dsp[r] + rc[r] + j], -1);
            }
        }
        /* alltoallv: me sends (me + d + c) % 4 * scale ints to d, at send
         * displacements in rank order; receives the same pattern. */
        what = "alltoallv";
        long stot = 0, rtot = 0;
        for (int d = 0; d < np; d++) {
            sc[d] = (me + d + c) % 4 * scale; sd[d] = (int)stot; stot += sc[d] + 1;
            rc[d] = (d + me + c) % 4 * scale; dsp[d] = (int)rtot; rtot += rc[d] + 2;
        }
        if (inplace) for (int d = 0; d < np; d++) { sc[d] = rc[d]; sd[d] = dsp[d]; }
        free(sb); free(rb);
        sb = malloc(sizeof(int) * (size_t)(stot + 1)); rb = malloc(sizeof(int) * (size_t)(rtot + 1));
        KT_CHECK(sb && rb, "out of memory");
        ITERS {
            int *src = inplace ? rb : sb;
            if (!inplace) for (long j = 0; j < rtot; j++) rb[j] = -1;
            else for (long j = 0; j < rtot; j++) rb[j] = -1;
            for (int d = 0; d < np; d++)
                for (long j = 0; j < sc[d]; j++) src[sd[d] + j] = kt_val(it, me, d * 100 + j);
            const void *s = inplace ? MPI_IN_PLACE : sb;
            CALL3(form, it,
                  MPI_Alltoallv(s, sc, sd, MPI_INT, rb, rc, dsp, MPI_INT, MPI_COMM_WORLD),
                  MPI_Ialltoallv(s, sc, sd, MPI_INT, rb, rc, dsp, MPI_INT, MPI_COMM_WORLD, &req),
                  MPI_Alltoallv_init(s, sc, sd, MPI_INT, rb, rc, dsp, MPI_INT, MPI_COMM_WORLD,
                                     MPI_INFO_NULL, &req));
            for (int r = 0; r < np; r++) {
                for (long j = 0; j < rc[r]; j++) EXPECT(dsp[r] + j, rb[dsp[r] + j], kt_val(it, r, me * 100 + j));
                for (long j = 0; j < 2; j++) EXPECT(dsp[r] + rc[r] + j, rb[dsp[r] + rc[r] + j], -1);
            }
        }
        free(sb); free(rb);
    }
    free(rc);
}

/* alltoallw: blocks alternate between INT and VEC by destination, byte
 * displacements, received as plain ints. */
static void test_alltoallw(void)
{
    int *sc = malloc(sizeof(int) * (size_t)np * 4), *sd = sc + np, *rc = sc + 2 * np, *rd = sc + 3 * np;
    MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * (size_t)np * 2), *rt = st + np;
    what = "alltoallw";
    for (int c = 1; c < 4; c++) FORMS {
        long n = c == 3 ? 6000 : 2 * c, soff = 0, roff = 0;
        for (int d = 0; d < np; d++) {
            const struct kt_lay *l = d % 2 ? &VEC : &INT;
            st[d] = l->t; sc[d] = kt_cnt(l, n); sd[d] = (int)(soff * sizeof(int));
            soff += (l->per == 1 ? n : n / 2 * 3) + 1;
            rt[d] = MPI_INT; rc[d] = (int)n; rd[d] = (int)(roff * sizeof(int)); roff += n + 1;
        }
        what_count = n; what_form = form; what_root = -1;
        int *sb = malloc(sizeof(int) * (size_t)soff), *rb = malloc(sizeof(int) * (size_t)roff);
        KT_CHECK(sb && rb, "out of memory");
        ITERS {
            for (long j = 0; j < soff; j++) sb[j] = KT_HOLE;
            for (long j = 0; j < roff; j++) rb[j] = -1;
            for (int d = 0; d < np; d++)
                for (long j = 0; j < n; j++)
                    kt_put(d % 2 ? &VEC : &INT, sb + sd[d] / (int)sizeof(int), j, kt_val(it, me, d * 100 + j));
            CALL3(form, it, MPI_Alltoallw(sb, sc, sd, st, rb, rc, rd, rt, MPI_COMM_WORLD),
                  MPI_Ialltoallw(sb, sc, sd, st, rb, rc, rd, rt, MPI_COMM_WORLD, &req),
                  MPI_Alltoallw_init(sb, sc, sd, st, rb, rc, rd, rt, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
            for (int r = 0; r < np; r++) {
                int *blk = rb + rd[r] / (int)sizeof(int);
                for (long j = 0; j < n; j++) EXPECT(rd[r] / 4 + j, blk[j], kt_val(it, r, me * 100 + j));
                EXPECT(rd[r] / 4 + n, blk[n], -1);
            }
        }
        free(sb); free(rb);
    }
    free(sc); free(st);
}

static void test_reductions(void)
{
    for (int opk = 0; opk < 2; opk++) for (int c = 0; c < NCOUNTS; c++) FORMS
    for (int inplace = 0; inplace < 2; inplace++) {
        long n = counts[c] / (opk ? 4 : 1) + (opk && counts[c] ? 1 : 0);   /* elements */
        int ri = red_ints(opk);
        MPI_Datatype t = red_t(opk);
        MPI_Op op = red_op(opk);
        what_count = n; what_form = form; what_root = -1;
        int *sb = malloc(sizeof(int) * (size_t)(n * ri * np + 1)),
            *rb = malloc(sizeof(int) * (size_t)(n * ri * np + 1));
        KT_CHECK(sb && rb, "out of memory");
        const void *s = inplace ? MPI_IN_PLACE : sb;
        int *in = inplace ? rb : sb;

        what = opk ? "reduce (matmul)" : "reduce (sum)";
        for (int root = 0; root < np; root += (np > 2 ? np - 1 : 1)) {
            what_root = root;
            int ip = inplace && me == root;
            ITERS {
                fill(opk, it, me, ip ? rb : sb, n);
                if (!ip) for (long k = 0; k < n * ri; k++) rb[k] = -1;
                CALL3(form, it, MPI_Reduce(ip ? MPI_IN_PLACE : sb, rb, (int)n, t, op, root, MPI_COMM_WORLD),
                      MPI_Ireduce(ip ? MPI_IN_PLACE : sb, rb, (int)n, t, op, root, MPI_COMM_WORLD, &req),
                      MPI_Reduce_init(ip ? MPI_IN_PLACE : sb, rb, (int)n, t, op, root, MPI_COMM_WORLD,
                                      MPI_INFO_NULL, &req));
                if (me == root) check_red(opk, it, 0, np - 1, rb, n, 0);
            }
        }
        what_root = -1;
        what = opk ? "allreduce (matmul)" : "allreduce (sum)";
        ITERS {
            fill(opk, it, me, in, n);
            CALL3(form, it, MPI_Allreduce(s, rb, (int)n, t, op, MPI_COMM_WORLD),
                  MPI_Iallreduce(s, rb, (int)n, t, op, MPI_COMM_WORLD, &req),
                  MPI_Allreduce_init(s, rb, (int)n, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
            check_red(opk, it, 0, np - 1, rb, n, 0);
        }
        what = opk ? "scan (matmul)" : "scan (sum)";
        ITERS {
            fill(opk, it, me, in, n);
            CALL3(form, it, MPI_Scan(s, rb, (int)n, t, op, MPI_COMM_WORLD),
                  MPI_Iscan(s, rb, (int)n, t, op, MPI_COMM_WORLD, &req),
                  MPI_Scan_init(s, rb, (int)n, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
            check_red(opk, it, 0, me, rb, n, 0);
        }
        what = opk ? "exscan (matmul)" : "exscan (sum)";
        ITERS {
            fill(opk, it, me, in, n);
            CALL3(form, it, MPI_Exscan(s, rb, (int)n, t, op, MPI_COMM_WORLD),
                  MPI_Iexscan(s, rb, (int)n, t, op, MPI_COMM_WORLD, &req),
                  MPI_Exscan_init(s, rb, (int)n, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
            if (me > 0) check_red(opk, it, 0, me - 1, rb, n, 0);
        }
        /* reduce_scatter_block: every rank gets n elements; the vector is
         * n * np elements, element k of rank r's input = datum r, k. */
        what = opk ? "reduce_scatter_block (matmul)" : "reduce_scatter_block (sum)";
        ITERS {
            fill(opk, it, me, in, n * np);
            CALL3(form, it, MPI_Reduce_scatter_block(s, rb, (int)n, t, op, MPI_COMM_WORLD),
                  MPI_Ireduce_scatter_block(s, rb, (int)n, t, op, MPI_COMM_WORLD, &req),
                  MPI_Reduce_scatter_block_init(s, rb, (int)n, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
            check_red(opk, it, 0, np - 1, rb, n, me * n);
        }
        /* reduce_scatter: rank r gets (r + c) % 3 * n / 2 elements (some zero). */
        what = opk ? "reduce_scatter (matmul)" : "reduce_scatter (sum)";
        int *rcs = malloc(sizeof(int) * (size_t)np);
        long tot = 0, first = 0;
        for (int r = 0; r < np; r++) {
            rcs[r] = (int)((r + c) % 3 * n / 2);
            if (r < me) first += rcs[r];
            tot += rcs[r];
        }
        ITERS {
            fill(opk, it, me, in, tot);
            CALL3(form, it, MPI_Reduce_scatter(s, rb, rcs, t, op, MPI_COMM_WORLD),
                  MPI_Ireduce_scatter(s, rb, rcs, t, op, MPI_COMM_WORLD, &req),
                  MPI_Reduce_scatter_init(s, rb, rcs, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
            check_red(opk, it, 0, np - 1, rb, rcs[me], first);
        }
        free(rcs);
        free(sb); free(rb);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    kt_lay_init(&INT, &VEC);
    KT_MPI(MPI_Type_contiguous(4, MPI_INT, &MAT));
    KT_MPI(MPI_Type_commit(&MAT));
    KT_MPI(MPI_Op_create(kt_matmul, 0, &MATMUL));
    const char *only = argc > 1 ? argv[1] : "";

    if (!*only || strstr(only, "barrier")) test_barrier();
    if (!*only || strstr(only, "bcast")) test_bcast();
    if (!*only || strstr(only, "rooted")) test_gather_scatter();
    if (!*only || strstr(only, "all")) test_allgather_alltoall();
    if (!*only || strstr(only, "vv")) test_vvariants();
    if (!*only || strstr(only, "w")) test_alltoallw();
    if (!*only || strstr(only, "red")) test_reductions();

    MPI_Op_free(&MATMUL);
    MPI_Type_free(&MAT);
    MPI_Type_free(&VEC.t);
    MPI_Finalize();
    return 0;
}
