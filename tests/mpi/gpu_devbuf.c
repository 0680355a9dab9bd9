/* Device memory in device-initiated calls (kumi_gpu.h, kind MPIX_GPU_CUDA),
 * run by tests/scripts/gpu_fakecuda.sh with the stand-in driver and
 * FAKECUDA_DEVRW=1: threads stand in for the blocks of a persistent kernel
 * and use buffers from cuMemAlloc, which they write and read themselves, as
 * a kernel does.  The proxy hands those device pointers to Kumi's ordinary
 * calls, which stage them through host memory.
 *
 * While the "kernel" runs (fakecuda_kernel(1) .. (0)) the stand-in counts
 * the driver calls that would wait for it on a GPU (work on the legacy
 * default stream, cuCtxSynchronize, frees): there must be none, or a real
 * persistent kernel would wait for its proxy forever.
 *   gpu_devbuf          the check above
 *   gpu_devbuf legacy   the same, expecting such calls (the driver refuses the
 *                       component a stream of its own: FAKECUDA_NOSTREAM=1)
 *
 * Per block b of NB: a message of SZ[b] bytes to the next rank (tag b)
 * while one comes from the previous (bytes written by the sending block,
 * checked by the receiving one), then an ibcast of 100000 + b bytes from
 * root b % size, an allreduce of 1000 ints, and in block 0 allreduces in
 * place of 6, 8 and 10 MiB of ints (above kumi_base_accel_coll_pipeline: the
 * pipelined collective, whose host memory of the pieces grows from one call
 * to the next and frees a smaller block: held while the proxy runs).
 *
 * Then small messages (kumi_gpu.h, KUMI_GPU_F_INLINE): per block, to the next
 * rank, 1, 7 (from an odd address, into one), 8 (a double), 24 (6 ints), 32
 * (4 doubles) bytes, a 24-byte message into a 32-byte receive (count 24), a
 * 33-byte message into a 32-byte receive (MPI_ERR_TRUNCATE back to the
 * block), then 33 bytes: the data and counts checked, and the bytes the
 * stand-in copied between device and host meanwhile: none for the messages of
 * 32 bytes or less (they travel in the completion records; the 33-byte sends
 * into 32-byte receives are staged), some for the 33 bytes.  "gpu_devbuf noinline" (KUMI_BASE_GPU_INLINE=0): every message is
 * staged. */
#include "kt_fakecuda.h"
#include <mpi-ext.h>
#include <kumi_gpu.h>
#include <pthread.h>

#define NB 4
static const size_t SZ[NB] = { 8, 65537, (1u << 20) + 3, (6u << 20) + 5 };
#define BC 100000
#define AR 1000
#define BIG (5 << 19)
static int rank, size;
static kumi_gpu_t G;
static volatile int failed;
static unsigned char *sbuf[NB], *rbuf[NB], *bbuf[NB];
static int *abuf[NB], *big;

#define DFAIL(...) do { fprintf(stderr, "FAIL rank %d block %d %s:%d: ", rank, blk, __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); failed = 1; return NULL; } while (0)
#define DOK(call) do { int e_ = (call); if (e_) DFAIL("%s returned class %d", #call, e_); } while (0)

/* small messages: SMALL[k] = { bytes sent, element size, bytes posted } */
static const int SMALL[][3] = { { 1, 1, 1 }, { 7, 1, 7 }, { 8, 8, 8 }, { 24, 4, 24 }, { 32, 8, 32 }, { 24, 1, 32 },
                                { 33, 1, 32 } };
#define NSMALL (int)(sizeof SMALL / sizeof SMALL[0])
static int ktype(int el) { return el == 1 ? KUMI_GPU_BYTE : el == 4 ? KUMI_GPU_INT : KUMI_GPU_DOUBLE; }

static void *small_block(void *arg)
{
    int blk = (int)(intptr_t)arg;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    for (int k = 0; k < NSMALL; k++) {
        int n = SMALL[k][0], el = SMALL[k][1], post = SMALL[k][2], odd = n == 7;
        unsigned char *sb = sbuf[blk] + odd, *rb = rbuf[blk] + odd;
        for (int i = 0; i < n; i++) sb[i] = kt_pat(rank, i, n, 40 + k);
        for (int i = 0; i < post; i++) rb[i] = 0xee;
        kumi_gpu_request r, s;
        kumi_gpu_status st = { 0, 0, 0, 0 };
        DOK(kumi_gpu_irecv(G, blk, rb, post / el, ktype(el), left, 100 + k, &r));
        DOK(kumi_gpu_isend(G, blk, sb, n / el, ktype(el), right, 100 + k, &s));
        int er = kumi_gpu_wait(G, blk, &r, &st);
        DOK(kumi_gpu_wait(G, blk, &s, NULL));
        if (n > post) {                         /* more than the receive holds */
            if (er != MPI_ERR_TRUNCATE || st.error != MPI_ERR_TRUNCATE)
                DFAIL("%d bytes into %d: class %d (status %d), expected MPI_ERR_TRUNCATE", n, post, er, st.error);
            continue;
        }
        if (er) DFAIL("receive of %d bytes: class %d", n, er);
        if (st.source != left || st.tag != 100 + k || st.count != n / el)
            DFAIL("%d bytes: status source %d tag %d count %lld", n, st.source, st.tag, (long long)st.count);
        for (int i = 0; i < post; i++) {
            int want = i < n ? kt_pat(left, i, n, 40 + k) : 0xee;
            if (rb[i] != want) DFAIL("%d bytes into %d, byte %d: %d, expected %d", n, post, i, rb[i], want);
        }
    }
    return NULL;
}

static void *block(void *arg)
{
    int blk = (int)(intptr_t)arg;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    size_t n = SZ[blk];
    for (size_t i = 0; i < n; i++) sbuf[blk][i] = kt_pat(rank, i, n, blk);   /* the kernel writes its message */
    kumi_gpu_request r, s;
    kumi_gpu_status st = { 0, 0, 0, 0 };
    DOK(kumi_gpu_irecv(G, blk, rbuf[blk], (int64_t)n, KUMI_GPU_BYTE, left, blk, &r));
    DOK(kumi_gpu_isend(G, blk, sbuf[blk], (int64_t)n, KUMI_GPU_BYTE, right, blk, &s));
    DOK(kumi_gpu_wait(G, blk, &r, &st));
    DOK(kumi_gpu_wait(G, blk, &s, NULL));
    if (st.source != left || st.count != (int64_t)n) DFAIL("status: source %d count %lld", st.source, (long long)st.count);
    for (size_t i = 0; i < n; i++)
        if (rbuf[blk][i] != kt_pat(left, i, n, blk)) DFAIL("message of %zu bytes, byte %zu: %d", n, i, rbuf[blk][i]);
    int root = blk % size;
    size_t bn = BC + (size_t)blk;
    if (rank == root)
        for (size_t i = 0; i < bn; i++) bbuf[blk][i] = kt_pat(root, i, bn, 7);
    DOK(kumi_gpu_bcast(G, blk, bbuf[blk], (int64_t)bn, KUMI_GPU_BYTE, root));
    for (size_t i = 0; i < bn; i++)
        if (bbuf[blk][i] != kt_pat(root, i, bn, 7)) DFAIL("bcast from %d, byte %zu: %d", root, i, bbuf[blk][i]);
    for (int i = 0; i < AR; i++) abuf[blk][i] = rank * 1000 + i + blk;
    DOK(kumi_gpu_allreduce(G, blk, KUMI_GPU_IN_PLACE, abuf[blk], AR, KUMI_GPU_INT, KUMI_GPU_SUM));
    for (int i = 0; i < AR; i++) {
        int want = 1000 * size * (size - 1) / 2 + size * (i + blk);
        if (abuf[blk][i] != want) DFAIL("allreduce element %d: %d, expected %d", i, abuf[blk][i], want);
    }
    for (int k = 3; blk == 0 && k <= 5; k++) {
        int cnt = k << 19;
        for (int i = 0; i < cnt; i++) big[i] = rank + (i & 1023) + k;
        DOK(kumi_gpu_allreduce(G, blk, KUMI_GPU_IN_PLACE, big, cnt, KUMI_GPU_INT, KUMI_GPU_SUM));
        for (int i = 0; i < cnt; i++)
            if (big[i] != size * (size - 1) / 2 + size * ((i & 1023) + k))
                DFAIL("allreduce of %d ints, element %d: %d", cnt, i, big[i]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int legacy = argc > 1 && !strcmp(argv[1], "legacy"), noinline = argc > 1 && !strcmp(argv[1], "noinline");
    void *h = kt_cuda_load();
    unsigned long long (*kernel)(int) = (unsigned long long (*)(int))dlsym(h, "fakecuda_kernel");
    unsigned long long (*allocs)(void) = (unsigned long long (*)(void))dlsym(h, "fakecuda_kernel_allocs");
    KT_CHECK(kernel && allocs, "the driver has no fakecuda_kernel: not the stand-in?");
    KT_CHECK(MPIX_Query_cuda_support() == 1, "accel/cuda is not in use");
    for (int b = 0; b < NB; b++) {
        sbuf[b] = kt_dalloc(SZ[b]);
        rbuf[b] = kt_dalloc(SZ[b]);
        bbuf[b] = kt_dalloc(BC + NB);
        abuf[b] = kt_dalloc(AR * sizeof(int));
    }
    big = kt_dalloc((size_t)BIG * sizeof(int));
    MPIX_Gpu p;
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CUDA, NB, 4, 64, &G, &p));
    unsigned long long na[2] = { 0, 0 };
    for (int round = 0; round < 2; round++) {   /* twice: the second finds the staging memory made */
        MPI_Barrier(MPI_COMM_WORLD);
        unsigned long long a0 = allocs(), w0 = kernel(1);
        pthread_t t[NB];
        for (intptr_t b = 0; b < NB; b++) KT_CHECK(!pthread_create(&t[b], NULL, block, (void *)b));
        for (int b = 0; b < NB; b++) pthread_join(t[b], NULL);
        unsigned long long waits = kernel(0) - w0;
        na[round] = allocs() - a0;
        KT_CHECK(!failed, "a device block failed (round %d)", round);
        if (legacy)
            KT_CHECK(waits > 0, "round %d: no driver call waited for the kernel with the legacy stream's copies", round);
        else
            KT_CHECK(waits == 0, "round %d: %llu driver calls would have waited for the running kernel (stderr names "
                     "them): a persistent kernel would wait for its proxy forever", round, waits);
    }
    /* small messages: in the completion records, or (noinline) staged */
    KT_CHECK(G.inl == (noinline ? 0u : 32u), "kumi_gpu_t.inl = %u", G.inl);
    unsigned long long s0[KT_NSTATS], s1[KT_NSTATS], s2[KT_NSTATS];
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);    /* the truncation comes back to the block */
    MPI_Barrier(MPI_COMM_WORLD);
    kt_stats(s0);
    {
        pthread_t t[NB];
        for (intptr_t b = 0; b < NB; b++) KT_CHECK(!pthread_create(&t[b], NULL, small_block, (void *)b));
        for (int b = 0; b < NB; b++) pthread_join(t[b], NULL);
        KT_CHECK(!failed, "a device block failed (small messages)");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    kt_stats(s1);
    /* 33 bytes, never in a record */
    {
        unsigned char pat[33];
        for (int i = 0; i < 33; i++) pat[i] = kt_pat(rank, i, 33, 99);
        kt_to_dev(sbuf[0], pat, 33);
        int e = kumi_gpu_send(G, 0, sbuf[0], 33, KUMI_GPU_BYTE, (rank + 1) % size, 99);
        KT_CHECK(!e, "send of 33 bytes: class %d", e);
    }
    {
        int e = kumi_gpu_recv(G, 0, rbuf[0], 33, KUMI_GPU_BYTE, (rank - 1 + size) % size, 99, NULL);
        KT_CHECK(!e, "receive of 33 bytes: class %d", e);
        unsigned char got[33];
        kt_to_host(got, rbuf[0], 33);
        for (int i = 0; i < 33; i++) KT_CHECK(got[i] == kt_pat((rank - 1 + size) % size, i, 33, 99), "33 bytes, byte %d", i);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    kt_stats(s2);
    unsigned long long small = 0, b33 = 0;
    for (int k = KT_DTOH; k <= KT_DTOD; k++) small += s1[k] - s0[k], b33 += s2[k] - s1[k];
    KT_CHECK(b33 >= 33, "33 bytes: %llu bytes copied between device and host (not staged?)", b33);
    /* of the small phase, only the sends of 33 bytes (into the 32-byte receives) are staged */
    if (noinline)
        KT_CHECK(small > 33 * NB, "kumi_base_gpu_inline=0: the small messages were not staged (%llu bytes)", small);
    else
        KT_CHECK(small == 33 * NB, "%llu bytes of the small messages were copied between device and host, not %d (the "
                 "sends of 33 bytes): not in the completion records", small, 33 * NB);
    KT_MPI(MPIX_Gpu_stop(&p));
    for (int b = 0; b < NB; b++) {
        cuMemFree((uintptr_t)sbuf[b]);
        cuMemFree((uintptr_t)rbuf[b]);
        cuMemFree((uintptr_t)bbuf[b]);
        cuMemFree((uintptr_t)abuf[b]);
    }
    cuMemFree((uintptr_t)big);
    MPI_Finalize();
    if (rank == 0)
        printf("gpu_devbuf: %d ranks, device buffers from %d blocks%s; allocations while the kernel ran: %llu, "
               "then %llu; small messages: %llu bytes staged%s: ok\n", size, NB,
               legacy ? " (legacy stream: the waits were seen)" : ", nothing waited for the kernel", na[0], na[1], small,
               noinline ? " (kumi_base_gpu_inline=0)" : " (in the completion records)");
    return 0;
}
