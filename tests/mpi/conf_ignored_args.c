/* conf_ignored_args: arguments the standard says are ignored are not checked
 * (issue 16 items 1 and 13).
 *
 * - With MPI_IN_PLACE the send count and type of Gather(v) (at the root),
 *   Allgather(v), Alltoall(v/w), and the receive count and type of
 *   Scatter(v) at the root, are ignored: MPI_DATATYPE_NULL and a negative
 *   count are legal there.
 * - The receive arguments of Gather(v) and the send arguments of Scatter(v)
 *   matter at the root only: the other ranks may pass NULL arrays,
 *   MPI_DATATYPE_NULL and any count.
 * - Alltoallv / Alltoallw: a type paired with zero counts only (or a zero
 *   count of Alltoallw) may be MPI_DATATYPE_NULL.
 * - On an intercommunicator, the ranks passing MPI_PROC_NULL as the root
 *   ignore every argument but root and comm (Reduce: op and datatype too),
 *   and the root (MPI_ROOT) ignores the send arguments of Gather.
 * - MPI_Get_accumulate with MPI_NO_OP ignores its origin arguments.
 * Each in the blocking, non-blocking, persistent and _c forms.  Before the
 * fix the first rank to reject an argument left the others waiting in the
 * collective; the job's timeout ends that. */
#include "kt.h"
#include <stdbool.h>

#define N 3         /* ranks; root is 1 */
#define ROOT 1
#define DTN MPI_DATATYPE_NULL

static int rank, size;

/* run the three forms of a collective: blocking, I + Wait, _init + Start + Wait + free */
#define FORMS(name, iname, ...) do { \
    MPI_Request r_; \
    KT_MPI(MPI_##name(__VA_ARGS__)); \
    KT_MPI(MPI_##iname(__VA_ARGS__, &r_)); KT_MPI(MPI_Wait(&r_, MPI_STATUS_IGNORE)); \
    KT_MPI(MPI_##name##_init(__VA_ARGS__, MPI_INFO_NULL, &r_)); \
    KT_MPI(MPI_Start(&r_)); KT_MPI(MPI_Wait(&r_, MPI_STATUS_IGNORE)); KT_MPI(MPI_Request_free(&r_)); \
    } while (0)
#define FORMS_C(name, iname, ...) do { \
    MPI_Request r_; \
    KT_MPI(MPI_##name##_c(__VA_ARGS__)); \
    KT_MPI(MPI_##iname##_c(__VA_ARGS__, &r_)); KT_MPI(MPI_Wait(&r_, MPI_STATUS_IGNORE)); \
    KT_MPI(MPI_##name##_init_c(__VA_ARGS__, MPI_INFO_NULL, &r_)); \
    KT_MPI(MPI_Start(&r_)); KT_MPI(MPI_Wait(&r_, MPI_STATUS_IGNORE)); KT_MPI(MPI_Request_free(&r_)); \
    } while (0)

static void fill(int *b, int n, int v) { for (int i = 0; i < n; i++) b[i] = v; }

static void gather_scatter(MPI_Comm c)
{
    int buf[N], one;
    int counts[N], displs[N];
    MPI_Count ccounts[N];
    MPI_Aint cdispls[N];
    for (int i = 0; i < N; i++) { counts[i] = 1; displs[i] = i; ccounts[i] = 1; cdispls[i] = i; }
    bool root = rank == ROOT;

    /* Gather: in place at the root (send arguments ignored), receive
     * arguments ignored elsewhere */
#define CHECK_GATHERED() do { if (root) for (int i = 0; i < N; i++) KT_EQ_INT(buf[i], 10 + i); } while (0)
    fill(buf, N, -1); buf[ROOT] = 10 + ROOT; one = 10 + rank;
    if (root) FORMS(Gather, Igather, MPI_IN_PLACE, -1, DTN, buf, 1, MPI_INT, ROOT, c);
    else FORMS(Gather, Igather, &one, 1, MPI_INT, NULL, -1, DTN, ROOT, c);
    CHECK_GATHERED();
    fill(buf, N, -1); buf[ROOT] = 10 + ROOT;
    if (root) FORMS_C(Gather, Igather, MPI_IN_PLACE, -1, DTN, buf, 1, MPI_INT, ROOT, c);
    else FORMS_C(Gather, Igather, &one, 1, MPI_INT, NULL, -1, DTN, ROOT, c);
    CHECK_GATHERED();
    fill(buf, N, -1); buf[ROOT] = 10 + ROOT;
    if (root) FORMS(Gatherv, Igatherv, MPI_IN_PLACE, -1, DTN, buf, counts, displs, MPI_INT, ROOT, c);
    else FORMS(Gatherv, Igatherv, &one, 1, MPI_INT, NULL, NULL, NULL, DTN, ROOT, c);
    CHECK_GATHERED();
    fill(buf, N, -1); buf[ROOT] = 10 + ROOT;
    if (root) FORMS_C(Gatherv, Igatherv, MPI_IN_PLACE, -1, DTN, buf, ccounts, cdispls, MPI_INT, ROOT, c);
    else FORMS_C(Gatherv, Igatherv, &one, 1, MPI_INT, NULL, NULL, NULL, DTN, ROOT, c);
    CHECK_GATHERED();

    /* Scatter: in place at the root (receive arguments ignored), send
     * arguments ignored elsewhere */
    for (int i = 0; i < N; i++) buf[i] = 20 + i;
#define CHECK_SCATTERED() do { KT_EQ_INT(root ? buf[ROOT] : one, 20 + rank); one = -1; } while (0)
    one = -1;
    if (root) FORMS(Scatter, Iscatter, buf, 1, MPI_INT, MPI_IN_PLACE, -1, DTN, ROOT, c);
    else FORMS(Scatter, Iscatter, NULL, -1, DTN, &one, 1, MPI_INT, ROOT, c);
    CHECK_SCATTERED();
    if (root) FORMS_C(Scatter, Iscatter, buf, 1, MPI_INT, MPI_IN_PLACE, -1, DTN, ROOT, c);
    else FORMS_C(Scatter, Iscatter, NULL, -1, DTN, &one, 1, MPI_INT, ROOT, c);
    CHECK_SCATTERED();
    if (root) FORMS(Scatterv, Iscatterv, buf, counts, displs, MPI_INT, MPI_IN_PLACE, -1, DTN, ROOT, c);
    else FORMS(Scatterv, Iscatterv, NULL, NULL, NULL, DTN, &one, 1, MPI_INT, ROOT, c);
    CHECK_SCATTERED();
    if (root) FORMS_C(Scatterv, Iscatterv, buf, ccounts, cdispls, MPI_INT, MPI_IN_PLACE, -1, DTN, ROOT, c);
    else FORMS_C(Scatterv, Iscatterv, NULL, NULL, NULL, DTN, &one, 1, MPI_INT, ROOT, c);
    CHECK_SCATTERED();
}

static void all_forms(MPI_Comm c)
{
    int buf[N], counts[N], displs[N], wdispls[N], zeros[N] = { 0 };
    MPI_Count ccounts[N], czeros[N] = { 0 };
    MPI_Aint cdispls[N], cwdispls[N];
    MPI_Datatype ints[N], nulls[N];
    for (int i = 0; i < N; i++) {
        counts[i] = 1; displs[i] = i; ccounts[i] = 1; cdispls[i] = i; wdispls[i] = i * (int)sizeof(int); cwdispls[i] = wdispls[i];
        ints[i] = MPI_INT; nulls[i] = DTN;
    }
#define CHECK_ALL(v) do { for (int i = 0; i < N; i++) KT_EQ_INT(buf[i], (v)); } while (0)
    /* Allgather(v) in place: send count and type ignored */
    fill(buf, N, -1); buf[rank] = 30 + rank;
    FORMS(Allgather, Iallgather, MPI_IN_PLACE, -1, DTN, buf, 1, MPI_INT, c);
    CHECK_ALL(30 + i);
    FORMS_C(Allgather, Iallgather, MPI_IN_PLACE, -1, DTN, buf, 1, MPI_INT, c);
    CHECK_ALL(30 + i);
    FORMS(Allgatherv, Iallgatherv, MPI_IN_PLACE, -1, DTN, buf, counts, displs, MPI_INT, c);
    CHECK_ALL(30 + i);
    FORMS_C(Allgatherv, Iallgatherv, MPI_IN_PLACE, -1, DTN, buf, ccounts, cdispls, MPI_INT, c);
    CHECK_ALL(30 + i);

    /* Alltoall(v/w) in place: all send arguments ignored.  The exchange is
     * done twice per form: entry i swaps between ranks, so after each call
     * buf[i] = 100 * i + rank, after the next 100 * rank + i. */
    for (int i = 0; i < N; i++) buf[i] = 100 * rank + i;
    KT_MPI(MPI_Alltoall(MPI_IN_PLACE, -1, DTN, buf, 1, MPI_INT, c));
    KT_MPI(MPI_Alltoall_c(MPI_IN_PLACE, -1, DTN, buf, 1, MPI_INT, c));
    KT_MPI(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, DTN, buf, counts, displs, MPI_INT, c));
    KT_MPI(MPI_Alltoallv_c(MPI_IN_PLACE, NULL, NULL, DTN, buf, ccounts, cdispls, MPI_INT, c));
    KT_MPI(MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, buf, counts, wdispls, ints, c));
    /* five exchanges: odd, so buf[i] = 100 * i + rank */
    CHECK_ALL(100 * i + rank);
    {
        MPI_Request r;
        KT_MPI(MPI_Ialltoall(MPI_IN_PLACE, -1, DTN, buf, 1, MPI_INT, c, &r));
        KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, DTN, buf, counts, displs, MPI_INT, c, &r));
        KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Ialltoallw(MPI_IN_PLACE, NULL, NULL, NULL, buf, counts, wdispls, ints, c, &r));
        KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Alltoallw_init(MPI_IN_PLACE, NULL, NULL, NULL, buf, counts, wdispls, ints, c,
                                  MPI_INFO_NULL, &r));
        KT_MPI(MPI_Start(&r)); KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE)); KT_MPI(MPI_Request_free(&r));
    }
    /* four more: the same again */
    CHECK_ALL(100 * i + rank);
    KT_MPI(MPI_Alltoallw_c(MPI_IN_PLACE, NULL, NULL, NULL, buf, ccounts, cwdispls, ints, c));
    CHECK_ALL(100 * rank + i);

    /* zero counts: the types may be MPI_DATATYPE_NULL (MPICH 4.0 rejects it in Alltoallv) */
#ifndef KT_REFERENCE
    KT_MPI(MPI_Alltoallv(NULL, zeros, displs, DTN, NULL, zeros, displs, DTN, c));
    KT_MPI(MPI_Alltoallv_c(NULL, czeros, cdispls, DTN, NULL, czeros, cdispls, DTN, c));
    KT_MPI(MPI_Alltoallw(NULL, zeros, displs, nulls, NULL, zeros, displs, nulls, c));
    KT_MPI(MPI_Alltoallw_c(NULL, czeros, cdispls, nulls, NULL, czeros, cdispls, nulls, c));
    {
        MPI_Request r;
        KT_MPI(MPI_Ialltoallw(NULL, zeros, displs, nulls, NULL, zeros, displs, nulls, c, &r));
        KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Alltoallv_init(NULL, zeros, displs, DTN, NULL, zeros, displs, DTN, c, MPI_INFO_NULL, &r));
        KT_MPI(MPI_Start(&r)); KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE)); KT_MPI(MPI_Request_free(&r));
    }
#endif
    /* a mix: only the entry to the next rank carries data */
    {
        int sc[N] = { 0 }, rc[N] = { 0 }, s = 40 + rank, got = -1;
        MPI_Datatype st[N], rt[N];
        for (int i = 0; i < N; i++) st[i] = rt[i] = DTN;
        int to = (rank + 1) % N, from = (rank + N - 1) % N;
        sc[to] = 1; st[to] = MPI_INT; rc[from] = 1; rt[from] = MPI_INT;
        KT_MPI(MPI_Alltoallw(&s, sc, zeros, st, &got, rc, zeros, rt, c));
        KT_EQ_INT(got, 40 + from);
    }
}

/* Alltoallw with MPI_BOTTOM and struct types of absolute addresses */
static void alltoallw_bottom(MPI_Comm c)
{
    int sbuf[N], rbuf[N];
    MPI_Datatype st[N], rt[N];
    int ones[N], zeros[N] = { 0 };
    for (int i = 0; i < N; i++) {
        int bl = 1;
        MPI_Aint a;
        MPI_Datatype t;
        sbuf[i] = 1000 * rank + i; rbuf[i] = -1; ones[i] = 1;
        MPI_Get_address(&sbuf[i], &a);
        KT_MPI(MPI_Type_create_struct(1, &bl, &a, (MPI_Datatype[]){ MPI_INT }, &t));
        KT_MPI(MPI_Type_commit(&t));
        st[i] = t;
        MPI_Get_address(&rbuf[i], &a);
        KT_MPI(MPI_Type_create_struct(1, &bl, &a, (MPI_Datatype[]){ MPI_INT }, &t));
        KT_MPI(MPI_Type_commit(&t));
        rt[i] = t;
    }
    KT_MPI(MPI_Alltoallw(MPI_BOTTOM, ones, zeros, st, MPI_BOTTOM, ones, zeros, rt, c));
    for (int i = 0; i < N; i++) KT_EQ_INT(rbuf[i], 1000 * i + rank);
    for (int i = 0; i < N; i++) rbuf[i] = -1;
    MPI_Request r;
    KT_MPI(MPI_Ialltoallw(MPI_BOTTOM, ones, zeros, st, MPI_BOTTOM, ones, zeros, rt, c, &r));
    KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++) KT_EQ_INT(rbuf[i], 1000 * i + rank);
    for (int i = 0; i < N; i++) rbuf[i] = -1;
    KT_MPI(MPI_Alltoallw_init(MPI_BOTTOM, ones, zeros, st, MPI_BOTTOM, ones, zeros, rt, c, MPI_INFO_NULL, &r));
    KT_MPI(MPI_Start(&r)); KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE)); KT_MPI(MPI_Request_free(&r));
    for (int i = 0; i < N; i++) KT_EQ_INT(rbuf[i], 1000 * i + rank);
    /* and the rooted ones with MPI_BOTTOM */
    /* rank i sends its sbuf[0] = 1000 * i, the root's rbuf[i] receives it */
    KT_MPI(MPI_Gather(MPI_BOTTOM, 1, st[0], MPI_BOTTOM, 1, rt[0], 0, c));
    if (rank == 0) for (int i = 0; i < N; i++) KT_EQ_INT(rbuf[i], 1000 * i);
    KT_MPI(MPI_Bcast(MPI_BOTTOM, 1, rt[1], 0, c));
    KT_EQ_INT(rbuf[1], 1000);
    for (int i = 0; i < N; i++) { MPI_Type_free(&st[i]); MPI_Type_free(&rt[i]); }
}

/* intercommunicator: ranks passing MPI_PROC_NULL ignore all else */
static void inter(void)
{
    MPI_Comm half, ic;
    int color = rank == 0 ? 0 : 1;           /* group A = {0}, group B = {1, 2} */
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half));
    KT_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color == 0 ? 1 : 0, 7, &ic));
    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    int hrank;
    MPI_Comm_rank(half, &hrank);
    /* the root is rank 0 of group B (world rank 1); world rank 2 passes MPI_PROC_NULL */
    int v = 5 + rank, sum = -1, got[2] = { -1, -1 };
    if (color == 0) {
        KT_MPI(MPI_Reduce(&v, NULL, 1, MPI_INT, MPI_SUM, 0, ic));
        KT_MPI(MPI_Gather(&v, 1, MPI_INT, NULL, -1, DTN, 0, ic));
        KT_MPI(MPI_Scatter(NULL, -1, DTN, &sum, 1, MPI_INT, 0, ic));
        KT_EQ_INT(sum, 77);
    } else if (hrank == 0) {
        KT_MPI(MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_ROOT, ic));
        KT_EQ_INT(sum, 5);
        KT_MPI(MPI_Gather(NULL, -1, DTN, got, 1, MPI_INT, MPI_ROOT, ic));
        KT_EQ_INT(got[0], 5);
        int s = 77;
        KT_MPI(MPI_Scatter(&s, 1, MPI_INT, NULL, -1, DTN, MPI_ROOT, ic));
    } else {
        KT_MPI(MPI_Reduce(NULL, NULL, -1, DTN, MPI_OP_NULL, MPI_PROC_NULL, ic));
        KT_MPI(MPI_Gather(NULL, -1, DTN, NULL, -1, DTN, MPI_PROC_NULL, ic));
        KT_MPI(MPI_Scatter(NULL, -1, DTN, NULL, -1, DTN, MPI_PROC_NULL, ic));
    }
    MPI_Comm_free(&ic);
    MPI_Comm_free(&half);
}

/* MPI_Get_accumulate with MPI_NO_OP: the origin arguments are ignored */
static void get_acc_noop(void)
{
    int *base, res = -1;
    MPI_Win w;
    KT_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    KT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w));
    *base = 500 + rank;
    KT_MPI(MPI_Win_unlock(rank, w));
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int t = (rank + 1) % size;
    KT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w));
    KT_MPI(MPI_Get_accumulate(NULL, 0, DTN, &res, 1, MPI_INT, t, 0, 1, MPI_INT, MPI_NO_OP, w));
    KT_MPI(MPI_Win_unlock(t, w));
    KT_EQ_INT(res, 500 + t);
    res = -1;
    MPI_Request r;
    KT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w));
    KT_MPI(MPI_Rget_accumulate_c(NULL, 0, DTN, &res, 1, MPI_INT, t, 0, 1, MPI_INT, MPI_NO_OP, w, &r));
    KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    KT_MPI(MPI_Win_unlock(t, w));
    KT_EQ_INT(res, 500 + t);
    KT_MPI(MPI_Win_free(&w));
}

/* point-to-point with MPI_PROC_NULL (datatype and count ignored, as MPICH does)
 * and zero-size accumulates (no op check) move nothing (issue 16 item 15) */
static void nothing_to_move(void)
{
    MPI_Request r;
    MPI_Status st;
    KT_MPI(MPI_Irecv(NULL, 0, DTN, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r));
    KT_MPI(MPI_Wait(&r, &st));
    KT_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
    KT_MPI(MPI_Recv(NULL, 0, DTN, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_MPI(MPI_Send(NULL, 0, DTN, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    KT_MPI(MPI_Sendrecv(NULL, 0, DTN, MPI_PROC_NULL, 0, NULL, 0, DTN, MPI_PROC_NULL, 0, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
    int *base;
    MPI_Win w;
    KT_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    KT_MPI(MPI_Win_fence(0, w));
    /* nothing moves: the op need not be defined for the type */
    int res = -1;
    KT_MPI(MPI_Accumulate(NULL, 0, MPI_BYTE, 0, 0, 0, MPI_BYTE, MPI_PROD, w));
    KT_MPI(MPI_Accumulate_c(NULL, 0, MPI_FLOAT, 0, 0, 0, MPI_FLOAT, MPI_BAND, w));
    KT_MPI(MPI_Get_accumulate(NULL, 0, MPI_BYTE, &res, 0, MPI_BYTE, 0, 0, 0, MPI_BYTE, MPI_PROD, w));
    KT_MPI(MPI_Win_fence(0, w));
    KT_EQ_INT(res, -1);
    KT_MPI(MPI_Win_free(&w));
}

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == N, "run with %d ranks", N);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    gather_scatter(MPI_COMM_WORLD);
    all_forms(MPI_COMM_WORLD);
    alltoallw_bottom(MPI_COMM_WORLD);
    inter();
    get_acc_noop();
    nothing_to_move();
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("conf_ignored_args: ok\n");
    KT_MPI(MPI_Finalize());
    return 0;
}
