/* coll_userop: user-defined ops, commutative and not.  A non-commutative op
 * must be applied in rank order: x0 op x1 op ... op x(n-1).
 *   - 2x2 integer matrix product (mod 9973) on a contiguous type of 4 ints
 *   - digit concatenation on ints: concat(12, 3) = 123, so the result spells
 *     the rank order exactly
 * Also MPI_Op_commutative, MPI_Op_free, MPI_Reduce_local. */
#include "kt.h"

#define P 9973

static int rank, size;

/* inout = in * inout (matrix product, in on the left) */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const int *a = in;
    int *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c0 = (a[0] * b[0] + a[1] * b[2]) % P, c1 = (a[0] * b[1] + a[1] * b[3]) % P;
        int c2 = (a[2] * b[0] + a[3] * b[2]) % P, c3 = (a[2] * b[1] + a[3] * b[3]) % P;
        b[0] = c0; b[1] = c1; b[2] = c2; b[3] = c3;
    }
}

static int ndigits(int v) { int d = 1; while (v >= 10) { v /= 10; d++; } return d; }

/* inout = in "followed by" inout */
static void concat(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    KT_CHECK(*dt == MPI_INT, "concat got another datatype");
    const int *a = in;
    int *b = inout;
    for (int k = 0; k < *len; k++) {
        int m = 1;
        for (int d = ndigits(b[k]); d > 0; d--) m *= 10;
        b[k] = a[k] * m + b[k];
    }
}

/* commutative: sum of squares-like accumulation on doubles */
static void dsum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int k = 0; k < *len; k++) ((double *)inout)[k] += ((double *)in)[k];
}

static void mat_of(int r, int e, int m[4])
{
    m[0] = (r + 2 + e) % 7 + 1; m[1] = (r * 3 + e) % 5; m[2] = (r + 1) % 4; m[3] = (r * 5 + e + 1) % 9 + 1;
}

static void mat_ref(int lo, int hi, int e, int out[4])   /* product of ranks lo..hi-1 */
{
    out[0] = 1; out[1] = 0; out[2] = 0; out[3] = 1;
    for (int r = lo; r < hi; r++) {
        int m[4], len = 1;
        mat_of(r, e, m);
        matmul(out, m, &len, NULL);    /* m = out * m */
        memcpy(out, m, sizeof m);
    }
}

static int cat_ref(int lo, int hi, int e)
{
    int v = 0;
    for (int r = lo; r < hi; r++) v = v * 10 + (r + e) % 9 + 1;
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    KT_CHECK(size <= 9, "concat needs at most 9 ranks");

    MPI_Op mop, cop, sop;
    MPI_Datatype mat;
    int flag = -1;
    KT_MPI(MPI_Op_create(matmul, 0, &mop));
    KT_MPI(MPI_Op_create(concat, 0, &cop));
    KT_MPI(MPI_Op_create(dsum, 1, &sop));
    KT_MPI(MPI_Op_commutative(mop, &flag)); KT_EQ_INT(flag, 0);
    KT_MPI(MPI_Op_commutative(sop, &flag)); KT_EQ_INT(flag, 1);
    KT_MPI(MPI_Op_commutative(MPI_SUM, &flag)); KT_EQ_INT(flag, 1);
    KT_MPI(MPI_Op_commutative(MPI_MAXLOC, &flag)); KT_EQ_INT(flag, 1);
    KT_MPI(MPI_Type_contiguous(4, MPI_INT, &mat));
    KT_MPI(MPI_Type_commit(&mat));

    enum { E = 3 };
    int mine[E][4], res[E][4], want[4], ci[E], co[E];
    for (int e = 0; e < E; e++) { mat_of(rank, e, mine[e]); ci[e] = (rank + e) % 9 + 1; }

    /* Reduce to every root, in place too */
    for (int root = 0; root < size; root++) {
        memset(res, 0, sizeof res);
        KT_MPI(MPI_Reduce(mine, res, E, mat, mop, root, MPI_COMM_WORLD));
        for (int i = 0; i < E; i++) co[i] = -1;
        KT_MPI(MPI_Reduce(ci, co, E, MPI_INT, cop, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int e = 0; e < E; e++) {
                mat_ref(0, size, e, want);
                KT_CHECK(!memcmp(res[e], want, sizeof want), "matrix reduce root %d element %d", root, e);
                KT_EQ_INT(co[e], cat_ref(0, size, e));
            }
        memcpy(co, ci, sizeof co);
        KT_MPI(MPI_Reduce(rank == root ? MPI_IN_PLACE : ci, co, E, MPI_INT, cop, root, MPI_COMM_WORLD));
        if (rank == root) for (int e = 0; e < E; e++) KT_EQ_INT(co[e], cat_ref(0, size, e));
    }

    /* Allreduce */
    KT_MPI(MPI_Allreduce(mine, res, E, mat, mop, MPI_COMM_WORLD));
    for (int e = 0; e < E; e++) {
        mat_ref(0, size, e, want);
        KT_CHECK(!memcmp(res[e], want, sizeof want), "matrix allreduce element %d", e);
    }
    memcpy(co, ci, sizeof co);
    KT_MPI(MPI_Allreduce(MPI_IN_PLACE, co, E, MPI_INT, cop, MPI_COMM_WORLD));
    for (int e = 0; e < E; e++) KT_EQ_INT(co[e], cat_ref(0, size, e));

    /* Scan / Exscan */
    KT_MPI(MPI_Scan(mine, res, E, mat, mop, MPI_COMM_WORLD));
    for (int e = 0; e < E; e++) {
        mat_ref(0, rank + 1, e, want);
        KT_CHECK(!memcmp(res[e], want, sizeof want), "matrix scan element %d", e);
    }
    KT_MPI(MPI_Scan(ci, co, E, MPI_INT, cop, MPI_COMM_WORLD));
    for (int e = 0; e < E; e++) KT_EQ_INT(co[e], cat_ref(0, rank + 1, e));
    KT_MPI(MPI_Exscan(mine, res, E, mat, mop, MPI_COMM_WORLD));
    if (rank > 0)
        for (int e = 0; e < E; e++) {
            mat_ref(0, rank, e, want);
            KT_CHECK(!memcmp(res[e], want, sizeof want), "matrix exscan element %d", e);
        }
    memcpy(co, ci, sizeof co);
    KT_MPI(MPI_Exscan(MPI_IN_PLACE, co, E, MPI_INT, cop, MPI_COMM_WORLD));
    if (rank > 0) for (int e = 0; e < E; e++) KT_EQ_INT(co[e], cat_ref(0, rank, e));

    /* Reduce_scatter_block / Reduce_scatter: element j of rank r is (r + j) % 9 + 1 */
    {
        int *in = malloc(sizeof(int) * (size_t)(2 * size)), out[2], *cnt = malloc(sizeof(int) * (size_t)size);
        for (int j = 0; j < 2 * size; j++) in[j] = (rank + j) % 9 + 1;
        KT_MPI(MPI_Reduce_scatter_block(in, out, 2, MPI_INT, cop, MPI_COMM_WORLD));
        for (int j = 0; j < 2; j++) KT_EQ_INT(out[j], cat_ref(0, size, 2 * rank + j));
        for (int q = 0; q < size; q++) cnt[q] = q % 2 ? 0 : 2;     /* odd ranks get nothing */
        int off = 0;
        for (int q = 0; q < rank; q++) off += cnt[q];
        out[0] = out[1] = -1;
        KT_MPI(MPI_Reduce_scatter(in, out, cnt, MPI_INT, cop, MPI_COMM_WORLD));
        for (int j = 0; j < 2; j++) KT_EQ_INT(out[j], j < cnt[rank] ? cat_ref(0, size, off + j) : -1);
        free(in);
        free(cnt);
    }

    /* commutative user op */
    double d[5], dr[5];
    for (int i = 0; i < 5; i++) d[i] = rank * 0.5 + i;
    KT_MPI(MPI_Allreduce(d, dr, 5, MPI_DOUBLE, sop, MPI_COMM_WORLD));
    for (int i = 0; i < 5; i++) KT_CHECK(dr[i] == 0.25 * size * (size - 1) + (double)i * size, "dsum %d", i);

    /* Reduce_local: inout = in op inout */
    int a = 12, b = 345;
    KT_MPI(MPI_Reduce_local(&a, &b, 1, MPI_INT, cop));
    KT_EQ_INT(b, 12345);
    int ia[3] = { 1, 5, 3 }, ib[3] = { 4, 2, 3 };
    KT_MPI(MPI_Reduce_local(ia, ib, 3, MPI_INT, MPI_MAX));
    KT_EQ_INT(ib[0], 4); KT_EQ_INT(ib[1], 5); KT_EQ_INT(ib[2], 3);
    KT_MPI(MPI_Reduce_local(ia, ib, 3, MPI_INT, MPI_PROD));
    KT_EQ_INT(ib[0], 4); KT_EQ_INT(ib[1], 25); KT_EQ_INT(ib[2], 9);
    KT_MPI(MPI_Reduce_local(ia, ib, 0, MPI_INT, MPI_SUM));
    KT_EQ_INT(ib[0], 4);
    KT_ERRCLASS(MPI_Reduce_local(ia, ib, 1, MPI_INT, MPI_MAXLOC), MPI_ERR_OP);

    /* Op_free */
    KT_MPI(MPI_Op_free(&mop));
    KT_CHECK(mop == MPI_OP_NULL, "MPI_Op_free did not set MPI_OP_NULL");
    MPI_Op pre = MPI_SUM;
    KT_ERRCLASS(MPI_Op_free(&pre), MPI_ERR_OP);
    KT_MPI(MPI_Op_free(&cop));
    KT_MPI(MPI_Op_free(&sop));
    MPI_Type_free(&mat);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return 0;
}
