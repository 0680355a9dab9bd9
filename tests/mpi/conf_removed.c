/* conf_removed: the MPI-1 calls that MPI-3.0 removed and old codes (the NAS
 * benchmarks' generation) still call (issue 16 item 10), each with its
 * result checked: MPI_Address, MPI_Type_extent / _lb / _ub, MPI_Type_hvector,
 * MPI_Type_hindexed, MPI_Type_struct with and without the bound markers
 * MPI_LB / MPI_UB (the type then has the markers' bounds, and data moves with
 * that extent), MPI_Errhandler_create / _set / _get (the handler runs on an
 * error), and the deprecated attribute calls MPI_Keyval_create / _free,
 * MPI_Attr_put / _get / _delete with MPI_DUP_FN, MPI_NULL_COPY_FN and
 * MPI_NULL_DELETE_FN.  2 ranks: the typed data goes to the other rank. */
#include "kt.h"

static int nhandled, last_class = -1;
static MPI_Comm handled_comm = MPI_COMM_NULL;

static void handler(MPI_Comm *comm, int *code, ...)
{
    nhandled++;
    handled_comm = *comm;
    MPI_Error_class(*code, &last_class);
}

static int ndelete;
static void *deleted_val;
static int delete_fn(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    ndelete++;
    deleted_val = val;
    return MPI_SUCCESS;
}

static void bounds(MPI_Datatype t, MPI_Aint lb, MPI_Aint extent, int size, const char *what)
{
    MPI_Aint l = -1, e = -1, u = -1, gl, ge;
    int s = -1;
    KT_MPI(MPI_Type_lb(t, &l));
    KT_MPI(MPI_Type_extent(t, &e));
    KT_MPI(MPI_Type_ub(t, &u));
    KT_MPI(MPI_Type_get_extent(t, &gl, &ge));
    KT_MPI(MPI_Type_size(t, &s));
    KT_CHECK(l == lb && e == extent && u == lb + extent && s == size,
             "%s: lb %ld extent %ld ub %ld size %d, expected %ld %ld %ld %d", what, (long)l, (long)e, (long)u, s,
             (long)lb, (long)extent, (long)(lb + extent), size);
    KT_CHECK(gl == l && ge == e, "%s: MPI_Type_get_extent says %ld %ld", what, (long)gl, (long)ge);
}

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "run with 2 ranks");
    int peer = 1 - rank;

    /* MPI_Address */
    double arr[4];
    MPI_Aint a0, a3, g0;
    KT_MPI(MPI_Address(&arr[0], &a0));
    KT_MPI(MPI_Address(&arr[3], &a3));
    KT_MPI(MPI_Get_address(&arr[0], &g0));
    KT_CHECK(a0 == g0 && a3 - a0 == 3 * (MPI_Aint)sizeof(double), "MPI_Address: %ld %ld", (long)a0, (long)(a3 - a0));

    /* MPI_Type_hvector: 3 blocks of 2 ints, 20 bytes apart */
    MPI_Datatype hv, hi, st, st2, st3, st4;
    KT_MPI(MPI_Type_hvector(3, 2, 20, MPI_INT, &hv));
    bounds(hv, 0, 48, 24, "hvector");
    /* MPI_Type_hindexed: 1 int at 8, 2 ints at 24 */
    int hbl[2] = { 1, 2 };
    MPI_Aint hdp[2] = { 8, 24 };
    KT_MPI(MPI_Type_hindexed(2, hbl, hdp, MPI_INT, &hi));
    bounds(hi, 8, 24, 12, "hindexed");

    /* MPI_Type_struct without markers: same as MPI_Type_create_struct */
    int sbl[3] = { 1, 1, 1 };
    MPI_Aint sdp[3] = { 0, 8, 0 };
    MPI_Datatype sty[3] = { MPI_INT, MPI_DOUBLE, MPI_INT };
    KT_MPI(MPI_Type_struct(2, sbl, sdp, sty, &st));
    bounds(st, 0, 16, 12, "struct");
    /* with MPI_LB at -8 and MPI_UB at 40 around an int at 0 and a double at 8 */
    int mbl[4] = { 1, 1, 1, 1 };
    MPI_Aint mdp[4] = { -8, 0, 8, 40 };
    MPI_Datatype mty[4] = { MPI_LB, MPI_INT, MPI_DOUBLE, MPI_UB };
    KT_MPI(MPI_Type_struct(4, mbl, mdp, mty, &st2));
    bounds(st2, -8, 48, 12, "struct with MPI_LB and MPI_UB");
    /* only MPI_UB: the lower bound is the data's */
    int ubl[2] = { 1, 1 };
    MPI_Aint udp[2] = { 4, 12 };
    MPI_Datatype uty[2] = { MPI_INT, MPI_UB };
    KT_MPI(MPI_Type_struct(2, ubl, udp, uty, &st3));
    bounds(st3, 4, 8, 4, "struct with MPI_UB");
    /* only MPI_LB (two: the least counts) */
    int lbl[3] = { 1, 1, 1 };
    MPI_Aint ldp[3] = { 0, -4, 4 };
    MPI_Datatype lty[3] = { MPI_LB, MPI_LB, MPI_INT };
    KT_MPI(MPI_Type_struct(3, lbl, ldp, lty, &st4));
    bounds(st4, -4, 12, 4, "struct with MPI_LB");

    /* data moves with the markers' extent: an int every 16 bytes (MPI_LB at 0,
     * the int at 4, MPI_UB at 16), 3 of them, to the other rank */
    MPI_Datatype every4;
    int ebl[3] = { 1, 1, 1 };
    MPI_Aint edp[3] = { 0, 4, 16 };
    MPI_Datatype ety[3] = { MPI_LB, MPI_INT, MPI_UB };
    KT_MPI(MPI_Type_struct(3, ebl, edp, ety, &every4));
    KT_MPI(MPI_Type_commit(&every4));
    KT_MPI(MPI_Type_commit(&hv));
    int src[12], got[3] = { -1, -1, -1 }, hgot[6];
    for (int i = 0; i < 12; i++) src[i] = 100 * rank + i;
    KT_MPI(MPI_Sendrecv(src, 3, every4, peer, 1, got, 3, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 3; i++)
        KT_CHECK(got[i] == 100 * peer + 1 + 4 * i, "struct with markers: element %d is %d, expected %d", i, got[i],
                 100 * peer + 1 + 4 * i);
    KT_MPI(MPI_Sendrecv(src, 1, hv, peer, 2, hgot, 6, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < 2; k++)
            KT_CHECK(hgot[2 * b + k] == 100 * peer + 5 * b + k, "hvector: element %d is %d", 2 * b + k, hgot[2 * b + k]);
    MPI_Datatype all[] = { hv, hi, st, st2, st3, st4, every4 };
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++) KT_MPI(MPI_Type_free(&all[i]));

    /* MPI_Errhandler_create / _set / _get: the handler runs on an error */
    MPI_Comm c;
    MPI_Errhandler eh, got_eh;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    KT_MPI(MPI_Errhandler_create(handler, &eh));
    KT_MPI(MPI_Errhandler_set(c, eh));
    KT_MPI(MPI_Errhandler_get(c, &got_eh));
    KT_CHECK(got_eh == eh, "MPI_Errhandler_get gave another handler");
    KT_MPI(MPI_Errhandler_free(&got_eh));
    int x = 0;
    int rc = MPI_Send(&x, 1, MPI_INT, 7, 0, c);        /* no rank 7 */
    KT_CHECK(rc != MPI_SUCCESS, "MPI_Send to rank 7 succeeded");
    KT_CHECK(nhandled == 1 && last_class == MPI_ERR_RANK && handled_comm == c,
             "handler ran %d times, class %d", nhandled, last_class);
    KT_MPI(MPI_Errhandler_set(c, MPI_ERRORS_RETURN));
    KT_MPI(MPI_Errhandler_get(c, &got_eh));
    KT_CHECK(got_eh == MPI_ERRORS_RETURN, "MPI_Errhandler_get after set to MPI_ERRORS_RETURN");
    KT_MPI(MPI_Errhandler_free(&eh));

    /* MPI_Keyval_create / MPI_Attr_*: MPI_DUP_FN copies at dup, MPI_NULL_COPY_FN does not */
    static char v1[4], v2[4];
    int kdup, knull, flag = 0;
    void *val = NULL;
    KT_MPI(MPI_Keyval_create(MPI_DUP_FN, delete_fn, &kdup, NULL));
    KT_MPI(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &knull, NULL));
    KT_MPI(MPI_Attr_put(c, kdup, v1));
    KT_MPI(MPI_Attr_put(c, knull, v2));
    KT_MPI(MPI_Attr_get(c, kdup, &val, &flag));
    KT_CHECK(flag && val == v1, "MPI_Attr_get: flag %d", flag);
    MPI_Comm d;
    KT_MPI(MPI_Comm_dup(c, &d));
    KT_MPI(MPI_Attr_get(d, kdup, &val, &flag));
    KT_CHECK(flag && val == v1, "MPI_DUP_FN did not copy the attribute (flag %d)", flag);
    KT_MPI(MPI_Attr_get(d, knull, &val, &flag));
    KT_CHECK(!flag, "MPI_NULL_COPY_FN copied the attribute");
    KT_MPI(MPI_Attr_delete(c, kdup));
    KT_CHECK(ndelete == 1 && deleted_val == v1, "delete callback: %d calls", ndelete);
    KT_MPI(MPI_Attr_get(c, kdup, &val, &flag));
    KT_CHECK(!flag, "attribute still there after MPI_Attr_delete");
    KT_MPI(MPI_Keyval_free(&kdup));
    KT_EQ_INT(kdup, MPI_KEYVAL_INVALID);
    KT_MPI(MPI_Comm_free(&d));                            /* its copy goes: delete callback */
    KT_EQ_INT(ndelete, 2);
    KT_MPI(MPI_Keyval_free(&knull));
    KT_MPI(MPI_Comm_free(&c));

    KT_MPI(MPI_Finalize());
    if (rank == 0) printf("conf_removed: ok\n");
    return 0;
}
