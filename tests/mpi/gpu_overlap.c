/* Device staging overlapped with the transfer (framework/request/req_accel.c),
 * run by tests/scripts/gpu_fakecuda.sh with the stand-in driver, whose
 * asynchronous copies happen only when an event is queried or waited for.
 * Arguments: the chunk size the job runs with (kumi_base_accel_chunk), and
 * "sync" where it runs with kumi_base_accel_chunk=0 (no pieces: 1. then
 * checks that the send copied everything before it returned).
 *  1. MPI_Isend of a large device buffer returns before the copies from the
 *     device are over (fakecuda_pending() > 0): the RTS went first, the
 *     payload follows chunk by chunk (before: the whole buffer was staged
 *     first; at one rank, p2p/self's messages are no rendezvous: one copy);
 *  2. sizes around multiples of the chunk above 4 MiB, device to device
 *     (Isend/Irecv, Send/Irecv, Isend/Recv), device to host memory; every byte;
 *  3. order: large (in pieces) and small messages of one tag alternating,
 *     received in order;
 *  4. truncation: a receive shorter than the message (MPI_ERR_TRUNCATE, the
 *     bytes up to its end right, none written past it);
 *  5. many messages in flight: 5 large sends and 5 receives per rank at once;
 *  6. a cancelled large send whose copies were still running;
 *  7. a buffer freed and allocated again between messages (a receiver that
 *     keeps peers' allocations open through IPC must open the new one). */
#include "kt_fakecuda.h"

static unsigned long long (*pending)(void);

static void *dp(unsigned long long d) { return (void *)(uintptr_t)d; }

static void fill(unsigned long long d, unsigned char *h, int r, size_t n, int way)
{
    for (size_t i = 0; i < n; i++) h[i] = kt_pat(r, i, n, way);
    KT_CHECK(cuHtoD(d, h, n) == 0);
}

static void check(const unsigned char *h, int r, size_t n, size_t len, int way, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (h[i] != kt_pat(r, i, len, way))
            KT_FAIL("%s: size %zu way %d: byte %zu is %#x, expected %#x", what, n, way, i, h[i], kt_pat(r, i, len, way));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(argc > 1, "usage: gpu_overlap CHUNK");
    size_t c = (size_t)atol(argv[1]);
    KT_CHECK(c > 0);
    void *h = kt_cuda_load();
    *(void **)&pending = dlsym(h, "fakecuda_pending");
    KT_CHECK(pending);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    size_t k0 = ((4u << 20) + c - 1) / c + 1;   /* first multiple of c above 4 MiB (+1) */
    size_t sizes[] = { k0 * c - 1, k0 * c, k0 * c + 1, (k0 + 3) * c + c / 2, (k0 + 4) * c - 7 };
    size_t max = (k0 + 4) * c + 8;
    unsigned char *hs = malloc(max), *hr = malloc(max);
    unsigned long long ds, dr;
    KT_CHECK(cuMemAlloc(&ds, max) == 0 && cuMemAlloc(&dr, max) == 0);
    KT_CHECK(hs && hr);
    MPI_Request q[12];
    MPI_Status st;

    /* 1. the send does not wait for the whole copy (the receive is posted late) */
    size_t n = k0 * c + c / 3;
    fill(ds, hs, rank, n, 9);
    KT_CHECK(pending() == 0);
    KT_MPI(MPI_Isend(dp(ds), (int)n, MPI_BYTE, right, 7, MPI_COMM_WORLD, &q[0]));
    unsigned long long p = pending();
    if (argc > 2 && !strcmp(argv[2], "sync")) KT_CHECK(p == 0, "%llu copies pending without chunks", p);
    else if (size > 1) KT_CHECK(p > 0, "MPI_Isend of %zu device bytes (chunk %zu) returned with every copy from the device done: "
             "the payload does not go while it is copied", n, c);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    KT_MPI(MPI_Recv(dp(dr), (int)n, MPI_BYTE, left, 7, MPI_COMM_WORLD, &st));
    KT_MPI(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
    KT_CHECK(cuDtoH(hr, dr, n) == 0);
    check(hr, left, n, n, 9, "late receive");

    /* 2. sizes around chunk boundaries */
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        n = sizes[z];
        for (int way = 0; way < 4; way++) {
            fill(ds, hs, rank, n + 8, way);
            memset(hr, 0xa5, n + 8);
            KT_CHECK(cuHtoD(dr, hr, n + 8) == 0);
            void *rb = way == 3 ? (void *)hr : dp(dr);
            if (way == 0 || way == 3) {
                KT_MPI(MPI_Irecv(rb, (int)n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &q[0]));
                KT_MPI(MPI_Isend(dp(ds), (int)n, MPI_BYTE, right, 1, MPI_COMM_WORLD, &q[1]));
                KT_MPI(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
            } else if (way == 1) {
                KT_MPI(MPI_Irecv(rb, (int)n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &q[0]));
                KT_MPI(MPI_Send(dp(ds), (int)n, MPI_BYTE, right, 1, MPI_COMM_WORLD));
                KT_MPI(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
            } else {
                KT_MPI(MPI_Isend(dp(ds), (int)n, MPI_BYTE, right, 1, MPI_COMM_WORLD, &q[1]));
                KT_MPI(MPI_Recv(rb, (int)n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &st));
                KT_MPI(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
            }
            if (way != 3) KT_CHECK(cuDtoH(hr, dr, n + 8) == 0);
            check(hr, left, n, n + 8, way, "sizes");
            for (size_t i = n; i < n + 8; i++)
                if (hr[i] != 0xa5) KT_FAIL("size %zu way %d: byte %zu past the message was written", n, way, i);
        }
    }

    /* 3. order: large and small messages of one tag alternate, matched in order */
    n = k0 * c + 5;
    unsigned long long d3[4];
    for (int i = 0; i < 4; i++) {
        KT_CHECK(cuMemAlloc(&d3[i], n) == 0);
        fill(d3[i], hs, rank, i % 2 ? 1000 : n, 20 + i);
    }
    for (int i = 0; i < 4; i++)
        KT_MPI(MPI_Isend(dp(d3[i]), i % 2 ? 1000 : (int)n, MPI_BYTE, right, 3, MPI_COMM_WORLD, &q[i]));
    for (int i = 0; i < 4; i++) {
        KT_MPI(MPI_Recv(dp(dr), (int)n, MPI_BYTE, left, 3, MPI_COMM_WORLD, &st));
        int cnt;
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        KT_CHECK((size_t)cnt == (i % 2 ? 1000 : n), "message %d of one tag: %d bytes, out of order", i, cnt);
        KT_CHECK(cuDtoH(hr, dr, (size_t)cnt) == 0);
        check(hr, left, (size_t)cnt, (size_t)cnt, 20 + i, "order");
    }
    KT_MPI(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));

    /* 4. truncation: the receive ends in the middle of a chunk */
    size_t cap = n - c / 2 - 3;
    fill(ds, hs, rank, n, 4);
    memset(hr, 0x5a, n);
    KT_CHECK(cuHtoD(dr, hr, n) == 0);
    KT_MPI(MPI_Irecv(dp(dr), (int)cap, MPI_BYTE, left, 4, MPI_COMM_WORLD, &q[0]));
    KT_MPI(MPI_Isend(dp(ds), (int)n, MPI_BYTE, right, 4, MPI_COMM_WORLD, &q[1]));
    int e0 = MPI_Wait(&q[0], &st);
    KT_MPI(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
    int ec;
    MPI_Error_class(e0 == MPI_SUCCESS ? st.MPI_ERROR : e0, &ec);
    KT_CHECK(ec == MPI_ERR_TRUNCATE, "a receive of %zu bytes for a message of %zu: class %d, not MPI_ERR_TRUNCATE",
             cap, n, ec);
    KT_CHECK(cuDtoH(hr, dr, n) == 0);
    check(hr, left, cap, n, 4, "truncated");
    for (size_t i = cap; i < n; i++)
        if (hr[i] != 0x5a) KT_FAIL("truncated: byte %zu past the receive buffer was written", i);

    /* 5. many in flight: 5 large sends and 5 receives at once */
    enum { M = 5 };
    unsigned long long s5[M], r5[M];
    n = k0 * c + c / 2 + 1;
    for (int i = 0; i < M; i++) {
        KT_CHECK(cuMemAlloc(&s5[i], n) == 0 && cuMemAlloc(&r5[i], n) == 0);
        fill(s5[i], hs, rank, n, 40 + i);
    }
    for (int i = 0; i < M; i++) KT_MPI(MPI_Irecv(dp(r5[i]), (int)n, MPI_BYTE, left, 50 + i, MPI_COMM_WORLD, &q[i]));
    for (int i = M - 1; i >= 0; i--)
        KT_MPI(MPI_Isend(dp(s5[i]), (int)n, MPI_BYTE, right, 50 + i, MPI_COMM_WORLD, &q[M + i]));
    KT_MPI(MPI_Waitall(2 * M, q, MPI_STATUSES_IGNORE));
    for (int i = 0; i < M; i++) {
        KT_CHECK(cuDtoH(hr, r5[i], n) == 0);
        check(hr, left, n, n, 40 + i, "many in flight");
        cuMemFree(s5[i]);
        cuMemFree(r5[i]);
    }

    /* 6. a large send cancelled while its copies run (nobody receives it) */
    KT_MPI(MPI_Isend(dp(ds), (int)n, MPI_BYTE, right, 66, MPI_COMM_WORLD, &q[0]));
    KT_MPI(MPI_Cancel(&q[0]));
    KT_MPI(MPI_Wait(&q[0], &st));
    int cancelled;
    MPI_Test_cancelled(&st, &cancelled);
    KT_CHECK(cancelled, "a large unmatched device send was not cancelled");
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* and the next large message still goes right */
    fill(ds, hs, rank, n, 70);
    KT_MPI(MPI_Sendrecv(dp(ds), (int)n, MPI_BYTE, right, 70, dp(dr), (int)n, MPI_BYTE, left, 70, MPI_COMM_WORLD, &st));
    KT_CHECK(cuDtoH(hr, dr, n) == 0);
    check(hr, left, n, n, 70, "after the cancel");

    /* 7. a device buffer freed and allocated again between messages: its IPC handle
       names the new allocation (a receiver that kept the old one open must not
       read the old memory) */
    for (int k = 0; k < 3; k++) {
        unsigned long long dn;
        KT_CHECK(cuMemAlloc(&dn, n) == 0);
        fill(dn, hs, rank, n, 80 + k);
        KT_MPI(MPI_Irecv(dp(dr), (int)n, MPI_BYTE, left, 80 + k, MPI_COMM_WORLD, &q[0]));
        KT_MPI(MPI_Isend(dp(dn), (int)n, MPI_BYTE, right, 80 + k, MPI_COMM_WORLD, &q[1]));
        KT_MPI(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        KT_CHECK(cuDtoH(hr, dr, n) == 0);
        check(hr, left, n, n, 80 + k, "from a buffer allocated again");
        cuMemFree(dn);
    }

    for (int i = 0; i < 4; i++) cuMemFree(d3[i]);
    cuMemFree(ds);
    cuMemFree(dr);
    free(hs);
    free(hr);
    if (rank == 0) printf("gpu_overlap: %d ranks, chunk %zu: ok\n", size, c);
    MPI_Finalize();
    return 0;
}
