/* Collectives on device buffers (CUDA-aware MPI, framework/mpi/coll_accel.c),
 * run by tests/scripts/gpu_fakecuda.sh with KUMI_ACCEL_CUDA_LIBRARY naming a
 * stand-in libcuda.so.1 whose device memory the host cannot touch: a
 * collective that read or wrote a device buffer without staging it would
 * crash.  Every case runs twice, on host buffers and on device buffers with
 * the same contents, blocking and non-blocking, and the two results (the
 * receive buffer and the send buffer afterwards) must be the same bytes:
 *  - Bcast (contiguous and a vector type: the gaps keep their bytes), Gather(v),
 *    Scatter(v), Allgather(v), Alltoall(v,w), Reduce, Allreduce, Reduce_scatter(_block),
 *    Scan, Exscan; MPI_IN_PLACE forms; every root;
 *  - a send buffer on the host and a receive buffer on the device;
 *  - an Allreduce of 6 MiB (more than the staging cache: two host copies);
 *  - an intercommunicator's Bcast, Gather, Reduce, Allgather (MPI_ROOT, MPI_PROC_NULL);
 *  - the neighbourhood collectives on a periodic ring (v and w forms too);
 *  - the values of an Allreduce checked against the formula;
 *  - persistent collectives on device memory, started three times. */
#include "kt_fakecuda.h"

static int rank, size, root;
static MPI_Comm comm;          /* the communicator the cases use */
static MPI_Datatype vec;       /* 3 ints, stride 2 */
#define CNT 5

static void done(int nb, MPI_Request *q)
{
    if (!nb) return;
    int flag = 0;
    if (nb == 2)
        while (!flag) KT_MPI(MPI_Test(q, &flag, MPI_STATUS_IGNORE));
    else KT_MPI(MPI_Wait(q, MPI_STATUS_IGNORE));
    KT_CHECK(*q == MPI_REQUEST_NULL);
}

/* ---- the cases: f(sendbuf, recvbuf, nb) with nb 0 blocking, 1 Wait, 2 Test */
static void c_bcast(char *s, char *r, int nb)
{
    MPI_Request q;
    (void)s;
    if (nb) KT_MPI(MPI_Ibcast(r, CNT, MPI_INT, root, comm, &q)); else KT_MPI(MPI_Bcast(r, CNT, MPI_INT, root, comm));
    done(nb, &q);
}
static void c_bcast_vec(char *s, char *r, int nb)
{
    MPI_Request q;
    (void)s;
    if (nb) KT_MPI(MPI_Ibcast(r, 2, vec, root, comm, &q)); else KT_MPI(MPI_Bcast(r, 2, vec, root, comm));
    done(nb, &q);
}
static void c_gather(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Igather(s, CNT, MPI_INT, r, CNT, MPI_INT, root, comm, &q));
    else KT_MPI(MPI_Gather(s, CNT, MPI_INT, r, CNT, MPI_INT, root, comm));
    done(nb, &q);
}
static void c_gather_ip(char *s, char *r, int nb)
{
    MPI_Request q;
    const void *sb = rank == root ? MPI_IN_PLACE : s;
    if (nb) KT_MPI(MPI_Igather(sb, CNT, MPI_INT, r, CNT, MPI_INT, root, comm, &q));
    else KT_MPI(MPI_Gather(sb, CNT, MPI_INT, r, CNT, MPI_INT, root, comm));
    done(nb, &q);
}
static int counts[64], displs[64];
/* alltoall(v,w): every peer the same signature; gaps between the blocks */
static int acounts[64], adispls[64], wscounts[64], wsdispls[64], wrcounts[64], wrdispls[64];
static MPI_Datatype wstypes[64], wrtypes[64];
static void c_gatherv(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Igatherv(s, rank + 1, MPI_INT, r, counts, displs, MPI_INT, root, comm, &q));
    else KT_MPI(MPI_Gatherv(s, rank + 1, MPI_INT, r, counts, displs, MPI_INT, root, comm));
    done(nb, &q);
}
static void c_scatter(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Iscatter(s, CNT, MPI_INT, r, CNT, MPI_INT, root, comm, &q));
    else KT_MPI(MPI_Scatter(s, CNT, MPI_INT, r, CNT, MPI_INT, root, comm));
    done(nb, &q);
}
static void c_scatterv(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Iscatterv(s, counts, displs, MPI_INT, r, rank + 1, MPI_INT, root, comm, &q));
    else KT_MPI(MPI_Scatterv(s, counts, displs, MPI_INT, r, rank + 1, MPI_INT, root, comm));
    done(nb, &q);
}
static void c_allgather(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Iallgather(s, CNT, MPI_INT, r, CNT, MPI_INT, comm, &q));
    else KT_MPI(MPI_Allgather(s, CNT, MPI_INT, r, CNT, MPI_INT, comm));
    done(nb, &q);
}
static void c_allgather_ip(char *s, char *r, int nb)
{
    MPI_Request q;
    (void)s;
    if (nb) KT_MPI(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_INT, r, CNT, MPI_INT, comm, &q));
    else KT_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_INT, r, CNT, MPI_INT, comm));
    done(nb, &q);
}
static void c_allgatherv(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Iallgatherv(s, rank + 1, MPI_INT, r, counts, displs, MPI_INT, comm, &q));
    else KT_MPI(MPI_Allgatherv(s, rank + 1, MPI_INT, r, counts, displs, MPI_INT, comm));
    done(nb, &q);
}
static void c_alltoall(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Ialltoall(s, CNT, MPI_INT, r, CNT, MPI_INT, comm, &q));
    else KT_MPI(MPI_Alltoall(s, CNT, MPI_INT, r, CNT, MPI_INT, comm));
    done(nb, &q);
}
static void c_alltoall_ip(char *s, char *r, int nb)
{
    MPI_Request q;
    (void)s;
    if (nb) KT_MPI(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_INT, r, CNT, MPI_INT, comm, &q));
    else KT_MPI(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_INT, r, CNT, MPI_INT, comm));
    done(nb, &q);
}
static void c_alltoallv(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Ialltoallv(s, acounts, adispls, MPI_INT, r, acounts, adispls, MPI_INT, comm, &q));
    else KT_MPI(MPI_Alltoallv(s, acounts, adispls, MPI_INT, r, acounts, adispls, MPI_INT, comm));
    done(nb, &q);
}
static void c_alltoallw(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Ialltoallw(s, wscounts, wsdispls, wstypes, r, wrcounts, wrdispls, wrtypes, comm, &q));
    else KT_MPI(MPI_Alltoallw(s, wscounts, wsdispls, wstypes, r, wrcounts, wrdispls, wrtypes, comm));
    done(nb, &q);
}
static void c_reduce(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Ireduce(s, r, CNT, MPI_INT, MPI_SUM, root, comm, &q));
    else KT_MPI(MPI_Reduce(s, r, CNT, MPI_INT, MPI_SUM, root, comm));
    done(nb, &q);
}
static void c_reduce_ip(char *s, char *r, int nb)
{
    MPI_Request q;
    const void *sb = rank == root ? MPI_IN_PLACE : s;
    if (nb) KT_MPI(MPI_Ireduce(sb, r, CNT, MPI_INT, MPI_MAX, root, comm, &q));
    else KT_MPI(MPI_Reduce(sb, r, CNT, MPI_INT, MPI_MAX, root, comm));
    done(nb, &q);
}
static void c_allreduce(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Iallreduce(s, r, CNT, MPI_INT, MPI_SUM, comm, &q));
    else KT_MPI(MPI_Allreduce(s, r, CNT, MPI_INT, MPI_SUM, comm));
    done(nb, &q);
}
static void c_allreduce_ip(char *s, char *r, int nb)
{
    MPI_Request q;
    (void)s;
    if (nb) KT_MPI(MPI_Iallreduce(MPI_IN_PLACE, r, CNT, MPI_INT, MPI_BXOR, comm, &q));
    else KT_MPI(MPI_Allreduce(MPI_IN_PLACE, r, CNT, MPI_INT, MPI_BXOR, comm));
    done(nb, &q);
}
#define BIG (6 << 20)
static void c_allreduce_big(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Iallreduce(s, r, BIG / 4, MPI_INT, MPI_SUM, comm, &q));
    else KT_MPI(MPI_Allreduce(s, r, BIG / 4, MPI_INT, MPI_SUM, comm));
    done(nb, &q);
}
static void c_reduce_scatter(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Ireduce_scatter(s, r, counts, MPI_INT, MPI_SUM, comm, &q));
    else KT_MPI(MPI_Reduce_scatter(s, r, counts, MPI_INT, MPI_SUM, comm));
    done(nb, &q);
}
static void c_reduce_scatter_block(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Ireduce_scatter_block(s, r, CNT, MPI_INT, MPI_SUM, comm, &q));
    else KT_MPI(MPI_Reduce_scatter_block(s, r, CNT, MPI_INT, MPI_SUM, comm));
    done(nb, &q);
}
static void c_scan(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Iscan(s, r, CNT, MPI_INT, MPI_SUM, comm, &q));
    else KT_MPI(MPI_Scan(s, r, CNT, MPI_INT, MPI_SUM, comm));
    done(nb, &q);
}
static void c_exscan(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Iexscan(s, r, CNT, MPI_INT, MPI_SUM, comm, &q));
    else KT_MPI(MPI_Exscan(s, r, CNT, MPI_INT, MPI_SUM, comm));
    done(nb, &q);
}

/* neighbourhood of a periodic ring: 2 in, 2 out */
static int ncounts[2] = { 2, 3 }, ndispls[2] = { 1, 6 }, nwdispls[2] = { 4, 40 };
static MPI_Datatype nwtypes[2];
static MPI_Aint nwdispls_a[2];
static void c_nallgather(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Ineighbor_allgather(s, CNT, MPI_INT, r, CNT, MPI_INT, comm, &q));
    else KT_MPI(MPI_Neighbor_allgather(s, CNT, MPI_INT, r, CNT, MPI_INT, comm));
    done(nb, &q);
}
static void c_nallgatherv(char *s, char *r, int nb)
{
    MPI_Request q;
    int c2[2] = { 2, 2 };
    if (nb) KT_MPI(MPI_Ineighbor_allgatherv(s, 2, MPI_INT, r, c2, ndispls, MPI_INT, comm, &q));
    else KT_MPI(MPI_Neighbor_allgatherv(s, 2, MPI_INT, r, c2, ndispls, MPI_INT, comm));
    done(nb, &q);
}
static void c_nalltoall(char *s, char *r, int nb)
{
    MPI_Request q;
    if (nb) KT_MPI(MPI_Ineighbor_alltoall(s, CNT, MPI_INT, r, CNT, MPI_INT, comm, &q));
    else KT_MPI(MPI_Neighbor_alltoall(s, CNT, MPI_INT, r, CNT, MPI_INT, comm));
    done(nb, &q);
}
static void c_nalltoallv(char *s, char *r, int nb)
{
    MPI_Request q;   /* to the left 2, to the right 3: from the right 2, from the left 3 */
    int rc[2] = { 3, 2 };
    if (nb) KT_MPI(MPI_Ineighbor_alltoallv(s, ncounts, ndispls, MPI_INT, r, rc, ndispls, MPI_INT, comm, &q));
    else KT_MPI(MPI_Neighbor_alltoallv(s, ncounts, ndispls, MPI_INT, r, rc, ndispls, MPI_INT, comm));
    done(nb, &q);
}
static void c_nalltoallw(char *s, char *r, int nb)
{
    MPI_Request q;
    int one[2] = { 1, 1 };
    if (nb) KT_MPI(MPI_Ineighbor_alltoallw(s, one, (MPI_Aint *)nwdispls_a, nwtypes, r, one, (MPI_Aint *)nwdispls_a, nwtypes, comm, &q));
    else KT_MPI(MPI_Neighbor_alltoallw(s, one, (MPI_Aint *)nwdispls_a, nwtypes, r, one, (MPI_Aint *)nwdispls_a, nwtypes, comm));
    done(nb, &q);
}

/* ---- the harness */
static char *hs, *hr, *ds, *dr, *hs0, *hr0, *back;
static size_t maxb;

static void fill(size_t n, int salt)
{
    for (size_t i = 0; i < n / 4; i++) ((int *)hs0)[i] = rank * 1000 + (int)i * 7 + salt;
    memset(hr0, 0x5a, n);
}

/* run f on host buffers and on device buffers (send or receive side only on
 * the device when where is 1 or 2), all three completion forms; compare */
static void check(const char *name, void (*f)(char *, char *, int), size_t n, int where)
{
    for (int nb = 0; nb < 3; nb++) {
        fill(n, nb + (int)strlen(name));
        memcpy(hs, hs0, n);
        memcpy(hr, hr0, n);
        f(hs, hr, nb);
        kt_to_dev(ds, hs0, n);
        kt_to_dev(dr, hr0, n);
        char *sb = where == 2 ? hs0 : ds, *rb = where == 1 ? hr0 : dr;
        f(sb, rb, nb);
        if (rb == dr) kt_to_host(back, dr, n); else memcpy(back, hr0, n);
        for (size_t i = 0; i < n; i++)
            if (back[i] != hr[i])
                KT_FAIL("%s (%s, root %d): receive buffer byte %zu is %d on the device, %d on the host", name,
                        nb == 0 ? "blocking" : nb == 1 ? "Wait" : "Test", root, i, back[i], hr[i]);
        if (sb == ds) kt_to_host(back, ds, n); else memcpy(back, hs0, n);
        if (memcmp(back, hs, n)) KT_FAIL("%s (nb %d): the send buffer differs", name, nb);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    kt_cuda_load();
    KT_CHECK(size <= 64);

    maxb = BIG;
    hs = malloc(maxb); hr = malloc(maxb); hs0 = malloc(maxb); hr0 = malloc(maxb); back = malloc(maxb);
    ds = kt_dalloc(maxb);
    dr = kt_dalloc(maxb);
    KT_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &vec));
    KT_MPI(MPI_Type_commit(&vec));
    int off = 0;
    for (int i = 0; i < size; i++) {
        counts[i] = i + 1;
        displs[i] = off;                 /* gaps of 2 ints between blocks */
        off += i + 3;
        acounts[i] = 2;
        adispls[i] = 5 * i + 1;
        wscounts[i] = 1;                 /* a vector of 3 ints (extent 5) out, 3 ints in */
        wstypes[i] = vec;
        wsdispls[i] = 4 * 7 * i;
        wrcounts[i] = 3;
        wrtypes[i] = MPI_INT;
        wrdispls[i] = 4 * (4 * i + 2);
    }
    size_t vn = (size_t)(7 * size + 8) * 4, an = (size_t)size * CNT * 4 + 64;
    if (vn < (size_t)(off + 8) * 4) vn = (size_t)(off + 8) * 4;
    size_t rs_total = (size_t)(size * (size + 1) / 2) * 4;

    comm = MPI_COMM_WORLD;
    for (root = 0; root < size; root++) {
        check("Bcast", c_bcast, an, 0);
        check("Bcast(vector)", c_bcast_vec, an, 0);
        check("Gather", c_gather, an, 0);
        check("Gather(in place)", c_gather_ip, an, 0);
        check("Gatherv", c_gatherv, vn, 0);
        check("Scatter", c_scatter, an, 0);
        check("Scatterv", c_scatterv, vn, 0);
        check("Reduce", c_reduce, an, 0);
        check("Reduce(in place)", c_reduce_ip, an, 0);
        if (size > 2 && root == 1) break;      /* every root at 1-2 ranks, two of them above */
    }
    root = 0;
    check("Allgather", c_allgather, an, 0);
    check("Allgather(in place)", c_allgather_ip, an, 0);
    check("Allgatherv", c_allgatherv, vn, 0);
    check("Alltoall", c_alltoall, an, 0);
    check("Alltoall(in place)", c_alltoall_ip, an, 0);
    check("Alltoallv", c_alltoallv, vn, 0);
    check("Alltoallw", c_alltoallw, vn, 0);
    check("Allreduce", c_allreduce, an, 0);
    check("Allreduce(in place)", c_allreduce_ip, an, 0);
    check("Reduce_scatter", c_reduce_scatter, rs_total + 64, 0);
    check("Reduce_scatter_block", c_reduce_scatter_block, an, 0);
    check("Scan", c_scan, an, 0);
    check("Exscan", c_exscan, an, 0);
    check("Allreduce(host send, device receive)", c_allreduce, an, 1);
    check("Allgather(device send, host receive)", c_allgather, an, 2);
    check("Allreduce(6 MiB)", c_allreduce_big, BIG, 0);

    /* the values themselves, once: sum over ranks of rank * 1000 + i * 7 + salt */
    int v[CNT], got[CNT];
    for (int i = 0; i < CNT; i++) v[i] = rank * 1000 + i;
    kt_to_dev(ds, v, sizeof v);
    KT_MPI(MPI_Allreduce(ds, dr, CNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    kt_to_host(got, dr, sizeof got);
    for (int i = 0; i < CNT; i++) KT_EQ_INT(got[i], 1000 * size * (size - 1) / 2 + size * i);

    /* an intercommunicator: the lower half against the upper half */
    if (size >= 2) {
        int low = rank < size / 2;
        MPI_Comm half;
        KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, low, rank, &half));
        KT_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? size / 2 : 0, 7, &comm));
        int lrank;
        MPI_Comm_rank(half, &lrank);
        int roots[2] = { low ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, 0 };
        root = roots[0];
        int save = rank;
        rank = lrank;
        check("Bcast(intercommunicator)", c_bcast, an, 0);
        check("Gather(intercommunicator)", c_gather, an, 0);
        check("Reduce(intercommunicator)", c_reduce, an, 0);
        check("Allgather(intercommunicator)", c_allgather, an, 0);
        rank = save;
        KT_MPI(MPI_Comm_free(&comm));
        KT_MPI(MPI_Comm_free(&half));
        comm = MPI_COMM_WORLD;
    }

    /* the neighbourhood collectives on a periodic ring */
    {
        int dims[1] = { size }, periods[1] = { 1 };
        KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &comm));
        nwtypes[0] = vec;
        nwtypes[1] = vec;
        nwdispls_a[0] = nwdispls[0];
        nwdispls_a[1] = nwdispls[1];
        check("Neighbor_allgather", c_nallgather, an, 0);
        check("Neighbor_allgatherv", c_nallgatherv, an, 0);
        check("Neighbor_alltoall", c_nalltoall, an, 0);
        check("Neighbor_alltoallv", c_nalltoallv, an, 0);
        check("Neighbor_alltoallw", c_nalltoallw, an, 0);
        KT_MPI(MPI_Comm_free(&comm));
        comm = MPI_COMM_WORLD;
    }

    /* persistent collectives on device buffers: each start reads the device
     * again, each completion writes it */
    MPI_Request rq[2];
    char *db = kt_dalloc(64);
    KT_MPI(MPI_Allreduce_init(ds, dr, CNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]));
    KT_MPI(MPI_Bcast_init(db, CNT, MPI_INT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]));
    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < CNT; i++) v[i] = rank * 1000 + i + it * 7;
        kt_to_dev(ds, v, sizeof v);
        for (int i = 0; i < CNT; i++) v[i] = rank == size - 1 ? 50 + i + it : -1;
        kt_to_dev(db, v, sizeof v);
        KT_MPI(MPI_Startall(2, rq));
        KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        kt_to_host(got, dr, sizeof got);
        for (int i = 0; i < CNT; i++) KT_EQ_INT(got[i], 1000 * size * (size - 1) / 2 + size * (i + it * 7));
        kt_to_host(got, db, sizeof got);
        for (int i = 0; i < CNT; i++) KT_EQ_INT(got[i], 50 + i + it);
    }
    KT_MPI(MPI_Request_free(&rq[0]));
    KT_MPI(MPI_Request_free(&rq[1]));
    cuMemFree((uintptr_t)db);

    MPI_Type_free(&vec);
    cuMemFree((uintptr_t)ds);
    cuMemFree((uintptr_t)dr);
    free(hs); free(hr); free(hs0); free(hr0); free(back);
    MPI_Finalize();
    if (rank == 0) printf("gpu_coll_staging: %d ranks: ok\n", size);
    return 0;
}
