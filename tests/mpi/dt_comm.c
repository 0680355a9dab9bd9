/* Derived datatypes in communication: send/recv with a struct with gaps,
 * non-contiguous receives (eager and rendezvous), partial and truncated
 * receives with Get_elements, a type freed while a receive is pending,
 * collectives (bcast, gather, scatter, allgather, alltoall, allreduce with
 * MPI_SUM on a vector of doubles and MAXLOC on pairs) and darray at 1-4 ranks. */
#include "kt.h"
#include <stddef.h>

static int rank, size;

struct rec { char c; double d; int i[3]; };

static MPI_Datatype rec_type(void)
{
    MPI_Datatype t;
    int bl[] = { 1, 1, 3 };
    MPI_Aint dp[] = { offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, i) };
    MPI_Datatype ty[] = { MPI_CHAR, MPI_DOUBLE, MPI_INT };
    KT_MPI(MPI_Type_create_struct(3, bl, dp, ty, &t));
    KT_MPI(MPI_Type_commit(&t));
    return t;
}

static void p2p(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Status st;
    /* struct with gaps, around a ring */
    MPI_Datatype rt = rec_type();
    struct rec s[5], r[5];
    memset(s, 0x11, sizeof s);
    memset(r, 0x77, sizeof r);
    for (int k = 0; k < 5; k++) { s[k].c = (char)('a' + k); s[k].d = rank + k * 0.5; for (int j = 0; j < 3; j++) s[k].i[j] = rank * 100 + k * 10 + j; }
    KT_MPI(MPI_Sendrecv(s, 5, rt, next, 1, r, 5, rt, prev, 1, MPI_COMM_WORLD, &st));
    for (int k = 0; k < 5; k++) {
        KT_EQ_INT(r[k].c, 'a' + k);
        KT_CHECK(r[k].d == prev + k * 0.5);
        for (int j = 0; j < 3; j++) KT_EQ_INT(r[k].i[j], prev * 100 + k * 10 + j);
        unsigned char *g = (unsigned char *)&r[k] + 1;          /* the gap after c stays */
        KT_EQ_INT(g[0], 0x77);
    }
    /* partial receive: the sender sends one record and a char+double */
    {
        MPI_Datatype pt;
        int bl[] = { 1, 1, 3, 1, 1 };
        MPI_Aint dp[] = { offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, i),
                          sizeof(struct rec) + offsetof(struct rec, c), sizeof(struct rec) + offsetof(struct rec, d) };
        MPI_Datatype ty[] = { MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_CHAR, MPI_DOUBLE };
        KT_MPI(MPI_Type_create_struct(5, bl, dp, ty, &pt));
        KT_MPI(MPI_Type_commit(&pt));
        memset(r, 0x77, sizeof r);
        KT_MPI(MPI_Sendrecv(s, 1, pt, next, 2, r, 3, rt, prev, 2, MPI_COMM_WORLD, &st));
        int n;
        KT_MPI(MPI_Get_elements(&st, rt, &n)); KT_EQ_INT(n, 7);
        KT_MPI(MPI_Get_count(&st, rt, &n)); KT_EQ_INT(n, MPI_UNDEFINED);
        KT_MPI(MPI_Get_count(&st, MPI_BYTE, &n)); KT_EQ_INT(n, 1 + 8 + 12 + 1 + 8);
        KT_EQ_INT(r[1].c, 'b');
        KT_CHECK(r[1].d == prev + 0.5);
        KT_EQ_INT(r[1].i[0], 0x77777777);                     /* not sent: untouched */
        KT_EQ_INT(r[2].c, 0x77);
        MPI_Type_free(&pt);
    }
    MPI_Type_free(&rt);

    /* contiguous send, non-contiguous receive; sizes eager and rendezvous */
    int ns[] = { 5, 300000 };
    for (int q = 0; q < 2; q++) {
        int n = ns[q];
        MPI_Datatype v;
        KT_MPI(MPI_Type_vector(n, 1, 3, MPI_DOUBLE, &v));
        KT_MPI(MPI_Type_commit(&v));
        double *a = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * 3 * (size_t)n);
        for (int k = 0; k < n; k++) a[k] = rank * 1e6 + k;
        for (int k = 0; k < 3 * n; k++) b[k] = -1;
        MPI_Request rq;
        KT_MPI(MPI_Irecv(b, 1, v, prev, 3, MPI_COMM_WORLD, &rq));
        MPI_Type_free(&v);                                    /* the pending receive keeps it */
        KT_MPI(MPI_Send(a, n, MPI_DOUBLE, next, 3, MPI_COMM_WORLD));
        KT_MPI(MPI_Wait(&rq, &st));
        for (int k = 0; k < 3 * n; k++) {
            double want = k % 3 == 0 && k / 3 < n ? prev * 1e6 + k / 3 : -1;
            if (b[k] != want) KT_FAIL("n %d: b[%d] = %g, expected %g", n, k, b[k], want);
        }
        /* non-contiguous send (stride 3) to a non-contiguous receive (stride 2) */
        MPI_Datatype v2, v3;
        KT_MPI(MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &v2));
        KT_MPI(MPI_Type_vector(n, 1, 3, MPI_DOUBLE, &v3));
        KT_MPI(MPI_Type_commit(&v2)); KT_MPI(MPI_Type_commit(&v3));
        for (int k = 0; k < 3 * n; k++) b[k] = k % 3 == 0 ? rank * 1e6 + k / 3 : -5;
        double *c = malloc(sizeof(double) * 2 * (size_t)n);
        for (int k = 0; k < 2 * n; k++) c[k] = -1;
        KT_MPI(MPI_Sendrecv(b, 1, v3, next, 4, c, 1, v2, prev, 4, MPI_COMM_WORLD, &st));
        for (int k = 0; k < 2 * n - 1; k++) {
            double want = k % 2 == 0 ? prev * 1e6 + k / 2 : -1;
            if (c[k] != want) KT_FAIL("n %d: c[%d] = %g, expected %g", n, k, c[k], want);
        }
        /* truncated receive into a non-contiguous buffer: the first half lands */
        MPI_Datatype h;
        KT_MPI(MPI_Type_vector(n / 2, 1, 2, MPI_DOUBLE, &h));
        KT_MPI(MPI_Type_commit(&h));
        for (int k = 0; k < 2 * n; k++) c[k] = -1;
        MPI_Request rr;
        KT_MPI(MPI_Irecv(c, 1, h, prev, 5, MPI_COMM_WORLD, &rr));
        KT_MPI(MPI_Send(a, n, MPI_DOUBLE, next, 5, MPI_COMM_WORLD));
        int rc = MPI_Wait(&rr, &st), cls;
        MPI_Error_class(rc, &cls);
        KT_EQ_INT(cls, MPI_ERR_TRUNCATE);
        for (int k = 0; k < 2 * n; k++) {
            double want = k % 2 == 0 && k / 2 < n / 2 ? prev * 1e6 + k / 2 : -1;
            if (c[k] != want) KT_FAIL("truncated, n %d: c[%d] = %g, expected %g", n, k, c[k], want);
        }
        MPI_Type_free(&h); MPI_Type_free(&v2); MPI_Type_free(&v3);
        free(a); free(b); free(c);
    }
}

static void colls(void)
{
    /* bcast of records from the last rank */
    MPI_Datatype rt = rec_type();
    struct rec r[4];
    memset(r, 0x33, sizeof r);
    if (rank == size - 1) for (int k = 0; k < 4; k++) { r[k].c = (char)k; r[k].d = k * 1.5; r[k].i[0] = r[k].i[1] = r[k].i[2] = k; }
    KT_MPI(MPI_Bcast(r, 4, rt, size - 1, MPI_COMM_WORLD));
    for (int k = 0; k < 4; k++) { KT_EQ_INT(r[k].c, k); KT_CHECK(r[k].d == k * 1.5); KT_EQ_INT(r[k].i[2], k); }
    MPI_Type_free(&rt);

    /* allreduce MPI_SUM over a vector of doubles (holes untouched) */
    MPI_Datatype v;
    KT_MPI(MPI_Type_vector(3, 2, 3, MPI_DOUBLE, &v));           /* 0,1, 3,4, 6,7 (extent 8 doubles) */
    KT_MPI(MPI_Type_commit(&v));
    double a[16], b[16];
    for (int k = 0; k < 16; k++) { a[k] = rank + k; b[k] = -9; }
    KT_MPI(MPI_Allreduce(a, b, 2, v, MPI_SUM, MPI_COMM_WORLD));
    for (int k = 0; k < 16; k++) {
        int in = k < 16 && (k % 8) % 3 != 2 && k % 8 < 8 && (k % 8) != 8;
        if (k % 8 == 2 || k % 8 == 5 || k % 8 >= 8) in = 0;
        double want = in ? size * (size - 1) / 2.0 + size * k : -9;
        if (b[k] != want) KT_FAIL("allreduce on vector: b[%d] = %g, expected %g", k, b[k], want);
    }
    MPI_Type_free(&v);
    /* MAXLOC on a contiguous type of DOUBLE_INT pairs */
    MPI_Datatype pt;
    KT_MPI(MPI_Type_contiguous(2, MPI_DOUBLE_INT, &pt));
    KT_MPI(MPI_Type_commit(&pt));
    struct { double v; int i; } pin[2] = { { (double)rank, rank }, { (double)-rank, rank } }, pout[2];
    KT_MPI(MPI_Allreduce(pin, pout, 1, pt, MPI_MAXLOC, MPI_COMM_WORLD));
    KT_CHECK(pout[0].v == size - 1); KT_EQ_INT(pout[0].i, size - 1);
    KT_CHECK(pout[1].v == 0); KT_EQ_INT(pout[1].i, 0);
    MPI_Type_free(&pt);

    /* gather / scatter of 2x2 subarrays of a 4x(2*size) int array: columns of each rank */
    int cols = 2 * size, sz[] = { 4, cols }, sub[] = { 4, 2 }, st[] = { 0, 0 };
    MPI_Datatype sa, sar;
    KT_MPI(MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &sa));
    KT_MPI(MPI_Type_create_resized(sa, 0, 2 * sizeof(int), &sar));  /* next rank's block: 2 columns on */
    KT_MPI(MPI_Type_commit(&sar));
    int *g = malloc(sizeof(int) * 4 * (size_t)cols), mine[8];
    for (int k = 0; k < 8; k++) mine[k] = rank * 100 + k;
    for (int k = 0; k < 4 * cols; k++) g[k] = -1;
    KT_MPI(MPI_Gather(mine, 8, MPI_INT, g, 1, sar, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < cols; j++) KT_EQ_INT(g[i * cols + j], (j / 2) * 100 + i * 2 + j % 2);
    for (int k = 0; k < 4 * cols; k++) g[k] = k;
    for (int k = 0; k < 8; k++) mine[k] = -1;
    KT_MPI(MPI_Scatter(g, 1, sar, mine, 8, MPI_INT, 0, MPI_COMM_WORLD));
    for (int k = 0; k < 8; k++) KT_EQ_INT(mine[k], (k / 2) * cols + rank * 2 + k % 2);
    /* allgather into the subarray layout */
    for (int k = 0; k < 8; k++) mine[k] = rank * 100 + k;
    for (int k = 0; k < 4 * cols; k++) g[k] = -1;
    KT_MPI(MPI_Allgather(mine, 8, MPI_INT, g, 1, sar, MPI_COMM_WORLD));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < cols; j++) KT_EQ_INT(g[i * cols + j], (j / 2) * 100 + i * 2 + j % 2);
    /* alltoall: column block q goes to rank q */
    for (int k = 0; k < 4 * cols; k++) g[k] = rank * 1000 + k;
    int *h = malloc(sizeof(int) * 4 * (size_t)cols);
    KT_MPI(MPI_Alltoall(g, 1, sar, h, 1, sar, MPI_COMM_WORLD));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < cols; j++) KT_EQ_INT(h[i * cols + j], (j / 2) * 1000 + i * cols + rank * 2 + j % 2);
    free(g); free(h);
    MPI_Type_free(&sa); MPI_Type_free(&sar);
}

/* darray: a 6 x 10 array, rows BLOCK over p0, columns CYCLIC(2) over p1 */
static void darray(void)
{
    int gs[] = { 6, 10 }, di[] = { MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC },
        da[] = { MPI_DISTRIBUTE_DFLT_DARG, 2 }, ps[2] = { 0, 0 };
    KT_MPI(MPI_Dims_create(size, 2, ps));
    int G[60], L[60], n = 0;
    for (int k = 0; k < 60; k++) G[k] = k;
    MPI_Datatype t;
    KT_MPI(MPI_Type_create_darray(size, rank, 2, gs, di, da, ps, MPI_ORDER_C, MPI_INT, &t));
    KT_MPI(MPI_Type_commit(&t));
    int bs = (6 + ps[0] - 1) / ps[0], pr = rank / ps[1], pc = rank % ps[1];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 10; j++)
            if (i / bs == pr && (j / 2) % ps[1] == pc) L[n++] = i * 10 + j;
    int s;
    KT_MPI(MPI_Type_size(t, &s));
    KT_EQ_INT(s, n * (int)sizeof(int));
    MPI_Aint lb, ext;
    KT_MPI(MPI_Type_get_extent(t, &lb, &ext));
    KT_EQ_INT(lb, 0); KT_EQ_INT(ext, 60 * sizeof(int));
    /* every rank sends its part (as t) to rank 0, which receives with each rank's t */
    MPI_Request rq;
    KT_MPI(MPI_Isend(G, 1, t, 0, 7, MPI_COMM_WORLD, &rq));
    if (rank == 0) {
        int R[60];
        for (int k = 0; k < 60; k++) R[k] = -1;
        for (int q = 0; q < size; q++) {
            MPI_Datatype tq;
            KT_MPI(MPI_Type_create_darray(size, q, 2, gs, di, da, ps, MPI_ORDER_C, MPI_INT, &tq));
            KT_MPI(MPI_Type_commit(&tq));
            KT_MPI(MPI_Recv(R, 1, tq, q, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_Type_free(&tq);
        }
        for (int k = 0; k < 60; k++) KT_EQ_INT(R[k], k);
    }
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    /* and the packed order is the global order of the owned elements */
    int P[60], pos = 0;
    KT_MPI(MPI_Pack(G, 1, t, P, sizeof P, &pos, MPI_COMM_WORLD));
    for (int k = 0; k < n; k++) KT_EQ_INT(P[k], L[k]);
    MPI_Type_free(&t);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    p2p();
    colls();
    darray();
    MPI_Finalize();
    return 0;
}
