/* RMA with device memory (CUDA-aware MPI, accel framework), run by
 * tests/scripts/gpu_rma_fakecuda.sh with KUMI_ACCEL_CUDA_LIBRARY naming the
 * stand-in for libcuda.so.1 whose device memory the host cannot touch (a
 * load or store through a device address crashes):
 *  - MPI_Win_create on device memory: MPI_WIN_MODEL is MPI_WIN_SEPARATE,
 *    MPI_WIN_BASE the device address;
 *  - every operation with device origin / compare / result buffers on that
 *    device window: Put, Get, Accumulate, Get_accumulate, Fetch_and_op,
 *    Compare_and_swap, Rput, Rget, Raccumulate, Rget_accumulate (results
 *    checked after their Wait), a vector origin and a vector result (gaps
 *    keep their bytes), in fence, post-start-complete-wait, lock / unlock and
 *    lock_all / flush / Win_sync epochs (a fence with MPI_MODE_NOSTORE); every
 *    value read from the device;
 *  - local stores into the private copy (cuMemcpyHtoD) become public at the
 *    next fence without undoing RMA updates made there in the same epoch;
 *  - a dynamic window with device memory attached (Put, Get, Accumulate,
 *    Compare_and_swap by address), MPI_Win_detach leaves the last updates on
 *    the device;
 *  - host windows with device origin buffers and device buffers with a host
 *    window stay right. */
#include "kt_fakecuda.h"

enum { W = 160 };                       /* ints in each rank's window */
static int rank, size, left, right;
static int *dw;                         /* this rank's window memory (device) */
static int *dsrc, *dres, *dcmp;         /* device origin, result, compare buffers */

static int init_val(int r, int i) { return r * 1000 + i; }
static int put_val(int r, int i, int e) { return 100000 + r * 100 + i + e * 7; }

/* read n ints of the device window at i into h (from the device: the private copy) */
static void win_read(int *h, int i, int n) { kt_to_host(h, dw + i, (size_t)n * sizeof(int)); }

static void dev_ints(int *d, int n, int (*f)(int, int, int), int r, int e)
{
    int h[64];
    for (int i = 0; i < n; i++) h[i] = f(r, i, e);
    kt_to_dev(d, h, (size_t)n * sizeof(int));
}

/* Operations of epoch e from this rank to t at base b (ints b .. b+31 of t's window),
 * results in dres; done with the window addressed by disp (dyn: t's address of its memory). */
static void ops(MPI_Win win, int t, MPI_Aint disp0, int b, int e, MPI_Request *rq)
{
    MPI_Aint d = disp0 + (MPI_Aint)b * (disp0 ? (MPI_Aint)sizeof(int) : 1);
    MPI_Aint unit = disp0 ? (MPI_Aint)sizeof(int) : 1;
    dev_ints(dsrc, 32, put_val, rank, e);
    int one[2] = { 5, init_val(t, b + 17) };
    kt_to_dev(dcmp, &one[1], sizeof(int));
    kt_to_dev(dsrc + 40, one, sizeof(int));              /* the FOP / CAS origin: 5 */
    KT_MPI(MPI_Put(dsrc, 4, MPI_INT, t, d, 4, MPI_INT, win));                          /* b+0..3 */
    KT_MPI(MPI_Get(dres, 4, MPI_INT, t, d + 4 * unit, 4, MPI_INT, win));               /* b+4..7 */
    KT_MPI(MPI_Accumulate(dsrc, 4, MPI_INT, t, d + 8 * unit, 4, MPI_INT, MPI_SUM, win)); /* b+8..11 */
    KT_MPI(MPI_Get_accumulate(dsrc, 4, MPI_INT, dres + 4, 4, MPI_INT, t, d + 12 * unit, 4, MPI_INT, MPI_SUM,
                              win));                                                   /* b+12..15 */
    KT_MPI(MPI_Fetch_and_op(dsrc + 40, dres + 8, MPI_INT, t, d + 16 * unit, MPI_SUM, win));   /* b+16 */
    KT_MPI(MPI_Compare_and_swap(dsrc + 40, dcmp, dres + 9, MPI_INT, t, d + 17 * unit, win)); /* b+17 */
    KT_MPI(MPI_Rput(dsrc + 4, 4, MPI_INT, t, d + 18 * unit, 4, MPI_INT, win, &rq[0]));   /* b+18..21 */
    KT_MPI(MPI_Rget(dres + 10, 4, MPI_INT, t, d + 22 * unit, 4, MPI_INT, win, &rq[1])); /* b+22..25 */
    KT_MPI(MPI_Raccumulate(dsrc + 8, 2, MPI_INT, t, d + 26 * unit, 2, MPI_INT, MPI_MAX, win, &rq[2])); /* b+26,27 */
    KT_MPI(MPI_Rget_accumulate(dsrc + 10, 2, MPI_INT, dres + 14, 2, MPI_INT, t, d + 28 * unit, 2, MPI_INT,
                               MPI_REPLACE, win, &rq[3]));                             /* b+28,29 */
}

/* The results of ops(.., t, .., b, e) in dres (called once they are complete). */
static void check_results(int t, int b)
{
    int h[16];
    kt_to_host(h, dres, sizeof h);
    for (int i = 0; i < 4; i++) KT_EQ_INT(h[i], init_val(t, b + 4 + i));       /* Get */
    for (int i = 0; i < 4; i++) KT_EQ_INT(h[4 + i], init_val(t, b + 12 + i));  /* Get_accumulate: old */
    KT_EQ_INT(h[8], init_val(t, b + 16));                                      /* Fetch_and_op: old */
    KT_EQ_INT(h[9], init_val(t, b + 17));                                      /* Compare_and_swap: old */
    for (int i = 0; i < 4; i++) KT_EQ_INT(h[10 + i], init_val(t, b + 22 + i)); /* Rget */
    for (int i = 0; i < 2; i++) KT_EQ_INT(h[14 + i], init_val(t, b + 28 + i)); /* Rget_accumulate: old */
}

/* What ops(.., me, .., b, e) of origin o left in my window (read from the device). */
static void check_target(int o, int b, int e)
{
    int h[32];
    win_read(h, b, 30);
    for (int i = 0; i < 4; i++) KT_EQ_INT(h[i], put_val(o, i, e));
    for (int i = 4; i < 8; i++) KT_EQ_INT(h[i], init_val(rank, b + i));
    for (int i = 0; i < 4; i++) KT_EQ_INT(h[8 + i], init_val(rank, b + 8 + i) + put_val(o, i, e));
    for (int i = 0; i < 4; i++) KT_EQ_INT(h[12 + i], init_val(rank, b + 12 + i) + put_val(o, i, e));
    KT_EQ_INT(h[16], init_val(rank, b + 16) + 5);
    KT_EQ_INT(h[17], 5);
    for (int i = 0; i < 4; i++) KT_EQ_INT(h[18 + i], put_val(o, 4 + i, e));
    for (int i = 22; i < 26; i++) KT_EQ_INT(h[i], init_val(rank, b + i));
    for (int i = 0; i < 2; i++) {
        int a = init_val(rank, b + 26 + i), p = put_val(o, 8 + i, e);
        KT_EQ_INT(h[26 + i], a > p ? a : p);
    }
    for (int i = 0; i < 2; i++) KT_EQ_INT(h[28 + i], put_val(o, 10 + i, e));
}

static void fresh_window(void)
{
    int h[W];
    for (int i = 0; i < W; i++) h[i] = init_val(rank, i);
    kt_to_dev(dw, h, sizeof h);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank - 1 + size) % size;
    kt_cuda_load();
    dw = kt_dalloc(W * sizeof(int));
    dsrc = kt_dalloc(64 * sizeof(int));
    dres = kt_dalloc(64 * sizeof(int));
    dcmp = kt_dalloc(sizeof(int));
    MPI_Request rq[4];

    /* ---- a window on device memory */
    fresh_window();
    MPI_Win win;
    KT_MPI(MPI_Win_create(dw, W * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    int *model = NULL, flag = 0;
    void *base = NULL;
    KT_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    KT_CHECK(flag && *model == MPI_WIN_SEPARATE, "MPI_WIN_MODEL is not MPI_WIN_SEPARATE");
    KT_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    KT_CHECK(flag && base == (void *)dw, "MPI_WIN_BASE is not the device address");

    /* fence: every operation; R* results checked after their Wait */
    KT_MPI(MPI_Win_fence(0, win));
    ops(win, right, 0, 0, 0, rq);
    KT_MPI(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    int hr[16];
    kt_to_host(hr, dres + 10, 4 * sizeof(int));
    for (int i = 0; i < 4; i++) KT_EQ_INT(hr[i], init_val(right, 22 + i));
    KT_MPI(MPI_Win_fence(MPI_MODE_NOSTORE, win));   /* no local stores: the device is not read */
    check_results(right, 0);
    check_target(left, 0, 0);
    /* local stores into the private copy (not where RMA writes in this epoch) become public at the
       next fence, and RMA updates of that epoch stay */
    int st[4] = { -1, -2, -3, -4 };
    kt_to_dev(dw + 154, st, sizeof st);
    dev_ints(dsrc, 4, put_val, rank, 9);
    KT_MPI(MPI_Put(dsrc, 4, MPI_INT, right, 150, 4, MPI_INT, win));
    KT_MPI(MPI_Win_fence(0, win));
    KT_MPI(MPI_Get(dres, 4, MPI_INT, right, 154, 4, MPI_INT, win));
    KT_MPI(MPI_Win_fence(0, win));
    kt_to_host(hr, dres, 4 * sizeof(int));
    for (int i = 0; i < 4; i++) KT_EQ_INT(hr[i], -1 - i);
    win_read(hr, 150, 4);
    for (int i = 0; i < 4; i++) KT_EQ_INT(hr[i], put_val(left, i, 9));
    check_target(left, 0, 0);               /* the epoch's earlier updates are still there */

    /* a vector origin (device) and a vector result (device): the result's gaps keep their bytes */
    MPI_Datatype vec;
    KT_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
    KT_MPI(MPI_Type_commit(&vec));
    int pat[8];
    for (int i = 0; i < 8; i++) pat[i] = -100 - i;
    kt_to_dev(dres, pat, sizeof pat);
    dev_ints(dsrc, 8, put_val, rank, 3);
    KT_MPI(MPI_Put(dsrc, 1, vec, right, 32, 4, MPI_INT, win));
    KT_MPI(MPI_Get(dres, 1, vec, right, 36, 4, MPI_INT, win));
    KT_MPI(MPI_Win_fence(0, win));
    kt_to_host(hr, dres, 8 * sizeof(int));
    for (int i = 0; i < 8; i++) KT_EQ_INT(hr[i], i % 2 ? -100 - i : init_val(right, 36 + i / 2));
    win_read(hr, 32, 4);
    for (int i = 0; i < 4; i++) KT_EQ_INT(hr[i], put_val(left, 2 * i, 3));
    KT_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));

    /* post-start-complete-wait */
    MPI_Group wg, lg, rg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_incl(wg, 1, &left, &lg);
    MPI_Group_incl(wg, 1, &right, &rg);
    KT_MPI(MPI_Win_post(lg, 0, win));
    KT_MPI(MPI_Win_start(rg, 0, win));
    ops(win, right, 0, 40, 1, rq);
    KT_MPI(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    KT_MPI(MPI_Win_complete(win));
    check_results(right, 40);
    KT_MPI(MPI_Win_wait(win));
    check_target(left, 40, 1);

    /* lock / unlock: results after a flush; the target sees the updates after locking its own window */
    KT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    ops(win, right, 0, 80, 2, rq);
    KT_MPI(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    KT_MPI(MPI_Win_flush(right, win));
    check_results(right, 80);
    KT_MPI(MPI_Win_unlock(right, win));
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_target(left, 80, 2);
    KT_MPI(MPI_Win_unlock(rank, win));

    /* lock_all, flush_all, and MPI_Win_sync at the target */
    KT_MPI(MPI_Win_lock_all(0, win));
    ops(win, right, 0, 120, 3, rq);
    KT_MPI(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    KT_MPI(MPI_Win_flush_all(win));
    check_results(right, 120);
    KT_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_Win_sync(win));
    check_target(left, 120, 3);
    KT_MPI(MPI_Win_free(&win));

    /* ---- a dynamic window with device memory attached */
    fresh_window();
    KT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    KT_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    KT_CHECK(flag && *model == MPI_WIN_SEPARATE, "dynamic: MPI_WIN_MODEL is not MPI_WIN_SEPARATE");
    KT_MPI(MPI_Win_attach(win, dw, W * sizeof(int)));
    MPI_Aint mine, *addrs = malloc(sizeof(MPI_Aint) * (size_t)size);
    MPI_Get_address(dw, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
    KT_MPI(MPI_Win_fence(0, win));
    ops(win, right, addrs[right], 0, 4, rq);
    KT_MPI(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    KT_MPI(MPI_Win_fence(0, win));
    check_results(right, 0);
    check_target(left, 0, 4);
    /* my own memory too (the direct path to myself) */
    dev_ints(dsrc, 4, put_val, rank, 5);
    KT_MPI(MPI_Put(dsrc, 4, MPI_INT, rank, addrs[rank] + 150 * (MPI_Aint)sizeof(int), 4, MPI_INT, win));
    KT_MPI(MPI_Win_fence(0, win));
    win_read(hr, 150, 4);
    for (int i = 0; i < 4; i++) KT_EQ_INT(hr[i], put_val(rank, i, 5));
    /* passive target, then the detach leaves the updates on the device */
    KT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    dev_ints(dsrc, 4, put_val, rank, 6);
    KT_MPI(MPI_Put(dsrc, 4, MPI_INT, right, addrs[right] + 100 * (MPI_Aint)sizeof(int), 4, MPI_INT, win));
    KT_MPI(MPI_Win_unlock(right, win));
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_Win_detach(win, dw));
    win_read(hr, 100, 4);
    for (int i = 0; i < 4; i++) KT_EQ_INT(hr[i], put_val(left, i, 6));
    KT_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    KT_MPI(MPI_Win_free(&win));

    /* ---- a large device window (its copies move in pipelined chunks): an update near its end
       and a local store next to it, both seen after the fence */
    {
        size_t big = (5u << 20) + 12, at = big / sizeof(int) - 8;
        int *db = kt_dalloc(big), z[8] = { 0 };
        kt_to_dev(db + at, z, sizeof z);
        KT_MPI(MPI_Win_create(db, (MPI_Aint)big, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        KT_MPI(MPI_Win_fence(0, win));
        dev_ints(dsrc, 4, put_val, rank, 8);
        KT_MPI(MPI_Put(dsrc, 4, MPI_INT, right, (MPI_Aint)at, 4, MPI_INT, win));
        kt_to_dev(db + at + 4, st, sizeof st);
        KT_MPI(MPI_Win_fence(0, win));
        KT_MPI(MPI_Get(dres, 4, MPI_INT, right, (MPI_Aint)at + 4, 4, MPI_INT, win));
        KT_MPI(MPI_Win_fence(0, win));
        kt_to_host(hr, dres, 4 * sizeof(int));
        for (int i = 0; i < 4; i++) KT_EQ_INT(hr[i], -1 - i);
        kt_to_host(hr, db + at, 8 * sizeof(int));
        for (int i = 0; i < 4; i++) KT_EQ_INT(hr[i], put_val(left, i, 8));
        for (int i = 0; i < 4; i++) KT_EQ_INT(hr[4 + i], -1 - i);
        KT_MPI(MPI_Win_free(&win));
        cuMemFree((uintptr_t)db);
    }

    /* ---- a host window, device origin and result buffers */
    int *hw = malloc(W * sizeof(int));
    for (int i = 0; i < W; i++) hw[i] = init_val(rank, i);
    KT_MPI(MPI_Win_create(hw, W * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    KT_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    KT_CHECK(flag && *model == MPI_WIN_UNIFIED, "host window: MPI_WIN_MODEL is not MPI_WIN_UNIFIED");
    KT_MPI(MPI_Win_fence(0, win));
    ops(win, right, 0, 0, 7, rq);
    KT_MPI(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    KT_MPI(MPI_Win_fence(0, win));
    check_results(right, 0);
    for (int i = 0; i < 4; i++) KT_EQ_INT(hw[i], put_val(left, i, 7));
    KT_EQ_INT(hw[17], 5);
    KT_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    KT_MPI(MPI_Win_free(&win));

    MPI_Type_free(&vec);
    MPI_Group_free(&lg);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
    free(addrs);
    free(hw);
    cuMemFree((uintptr_t)dw);
    cuMemFree((uintptr_t)dsrc);
    cuMemFree((uintptr_t)dres);
    cuMemFree((uintptr_t)dcmp);
    if (rank == 0) printf("gpu_rma_staging: %d ranks ok\n", size);
    MPI_Finalize();
    return 0;
}
