/* MPI from "device" blocks (kumi_gpu.h, MPIX_Gpu_start / MPIX_Gpu_stop) with
 * the CPU device: threads stand in for GPU blocks and use the very queue and
 * device-side functions a CUDA kernel uses.
 *
 *   gpu_cpu [qsize depth [cuda]]   (defaults 1024 4; "2 2": a tiny ring, blocks wait for room;
 *                                   cuda: kind MPIX_GPU_CUDA, memory from accel/cuda, whose
 *                                   device memory these threads must reach: gpu_fakecuda.sh)
 *
 * 1. order: 8 blocks each stream 200 numbered messages to the next rank with
 *    windows of non-blocking sends / receives; each block's messages arrive
 *    in its issue order, payloads intact; again with a proxy without thread
 *    (MPIX_GPU_NOTHREAD) that the main thread serves with MPIX_Gpu_progress;
 * 2. many: 32 blocks at once: allreduce, barrier, bcast from varying roots,
 *    send/recv pairs between blocks of neighbour ranks;
 * 3. errors come back to the device side: rank, tag, datatype, reduction,
 *    unknown request kind, communicator index, truncation, a block with too
 *    many requests outstanding; bad MPIX_Gpu_start arguments; a block that
 *    reports a failure makes MPIX_Gpu_stop return it (with or without proxy
 *    thread); MPIX_Gpu_progress refuses a proxy with thread and a null one;
 * 4. a 1-D three-point stencil whose halos the edge blocks exchange with the
 *    neighbour ranks, against a serial reference; a checksum by allreduce;
 * 5. where the proxy thread runs ("kumi-gpuproxy" in /proc/self/task): in a
 *    rank mpiexec bound to a core, not only there (a CUDA application's
 *    thread spins on that core in cudaDeviceSynchronize: the proxy then
 *    waited a time slice, about 4 ms, at each request), and off that core
 *    where the rank is alone on a machine of several CPUs; with kind cuda
 *    (the stand-in driver), the context's scheduling flags say blocking
 *    synchronization while the proxy runs and are put back at the stop;
 * 6. small messages in the completion records (KUMI_GPU_F_INLINE, up to
 *    32 bytes; none with KUMI_BASE_GPU_INLINE=0): block 0 sends 1 .. 33 bytes
 *    to the next rank's main thread (MPI_Recv, any source), and receives 1 ..
 *    33 bytes from the previous rank's main thread (MPI_Send), the data, the
 *    counts and (white box) the records' copies checked; entries that carry
 *    their data in the record wrongly (a broadcast; 40 bytes; 2^61 + 1
 *    8-byte integers, whose size wraps around to 8 bytes) come back as MPI_ERR_ARG. */
#define _GNU_SOURCE
#include "kt.h"
#include <mpi-ext.h>
#include <kumi_gpu.h>
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>

static int rank, size, QS = 1024, DEPTH = 4, KIND = MPIX_GPU_CPU;
static kumi_gpu_t G;
static volatile int failed;

#define DFAIL(...) do { fprintf(stderr, "FAIL rank %d block %d %s:%d: ", rank, blk, __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); failed = 1; return NULL; } while (0)
#define DCHECK(c, ...) do { if (!(c)) DFAIL("`" #c "` " __VA_ARGS__); } while (0)
#define DOK(call) do { int e_ = (call); if (e_) DFAIL("%s returned class %d", #call, e_); } while (0)

static void run_blocks(int nb, void *(*fn)(void *))
{
    pthread_t t[64];
    for (intptr_t b = 0; b < nb; b++) KT_CHECK(!pthread_create(&t[b], NULL, fn, (void *)b));
    for (int b = 0; b < nb; b++) pthread_join(t[b], NULL);
    KT_CHECK(!failed, "a device block failed");
}

/* A proxy without thread (MPIX_GPU_NOTHREAD): this thread serves the ring
 * with MPIX_Gpu_progress while the blocks run (as kumi-gpucc's host loop does
 * between launches). */
static int blocks_left;
struct served { void *(*fn)(void *); intptr_t b; };
static void *served_block(void *arg)
{
    struct served *s = arg;
    s->fn((void *)s->b);
    __atomic_fetch_sub(&blocks_left, 1, __ATOMIC_RELEASE);
    return NULL;
}
static void run_blocks_served(int nb, void *(*fn)(void *), MPIX_Gpu g)
{
    pthread_t t[64];
    struct served s[64];
    __atomic_store_n(&blocks_left, nb, __ATOMIC_RELEASE);
    for (intptr_t b = 0; b < nb; b++) {
        s[b].fn = fn;
        s[b].b = b;
        KT_CHECK(!pthread_create(&t[b], NULL, served_block, &s[b]));
    }
    long served = 0;
    while (__atomic_load_n(&blocks_left, __ATOMIC_ACQUIRE) > 0) {
        int ev = -1;
        KT_MPI(MPIX_Gpu_progress(g, &ev));
        KT_CHECK(ev >= 0, "MPIX_Gpu_progress: events %d", ev);
        served += ev;
        if (!ev) sched_yield();
    }
    for (int b = 0; b < nb; b++) pthread_join(t[b], NULL);
    KT_CHECK(!failed, "a device block failed");
    KT_CHECK(served > 0, "MPIX_Gpu_progress served nothing");
}

/* ------------------------------------------------------------ 1. order */
#define OB 8
#define OM 200
static MPIX_Gpu P;

static void *order_block(void *arg)
{
    int blk = (int)(intptr_t)arg;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    int64_t out[OM], in[OM];
    int w = DEPTH / 2 > 0 ? DEPTH / 2 : 1;
    for (int i = 0; i < OM; i += w) {
        kumi_gpu_request s[8], r[8];
        int n = OM - i < w ? OM - i : w;
        for (int k = 0; k < n; k++) {
            out[i + k] = (int64_t)rank * 1000000 + blk * 1000 + i + k;
            DOK(kumi_gpu_irecv(G, blk, &in[i + k], 1, KUMI_GPU_INT64, left, blk, &r[k]));
            DOK(kumi_gpu_isend(G, blk, &out[i + k], 1, KUMI_GPU_INT64, right, blk, &s[k]));
        }
        for (int k = 0; k < n; k++) {
            kumi_gpu_status st = { 0, 0, 0, 0 };
            DOK(kumi_gpu_wait(G, blk, &r[k], &st));
            DCHECK(st.source == left && st.tag == blk && st.count == 1, "status %d %d %lld", st.source, st.tag,
                   (long long)st.count);
            DOK(kumi_gpu_wait(G, blk, &s[k], NULL));
        }
    }
    for (int i = 0; i < OM; i++)
        DCHECK(in[i] == (int64_t)left * 1000000 + blk * 1000 + i, "message %d: %lld (out of order or corrupt)", i,
               (long long)in[i]);
    /* test() polls without waiting */
    int64_t v = blk, got = -1;
    kumi_gpu_request rr, sr;
    int flag = 0;
    DOK(kumi_gpu_irecv(G, blk, &got, 1, KUMI_GPU_INT64, left, 5000 + blk, &rr));
    DOK(kumi_gpu_isend(G, blk, &v, 1, KUMI_GPU_INT64, right, 5000 + blk, &sr));
    while (!flag) DOK(kumi_gpu_test(G, blk, &rr, &flag, NULL));
    DOK(kumi_gpu_wait(G, blk, &sr, NULL));
    DCHECK(got == blk, "test: got %lld", (long long)got);
    return NULL;
}

/* ------------------------------------------------------------ 2. many */
#define MB 32
static void *many_block(void *arg)
{
    int blk = (int)(intptr_t)arg;
    for (int it = 0; it < 5; it++) {
        int64_t x = rank + blk + it, sum = -1;
        DOK(kumi_gpu_allreduce(G, blk, &x, &sum, 1, KUMI_GPU_INT64, KUMI_GPU_SUM));
        DCHECK(sum == (int64_t)size * (blk + it) + (int64_t)size * (size - 1) / 2, "allreduce %lld", (long long)sum);
        double m = rank + 0.5;
        DOK(kumi_gpu_allreduce(G, blk, KUMI_GPU_IN_PLACE, &m, 1, KUMI_GPU_DOUBLE, KUMI_GPU_MAX));
        DCHECK(m == size - 0.5, "allreduce max in place %g", m);
        DOK(kumi_gpu_barrier(G, blk));
        int root = (blk + it) % size;
        int b[3] = { -1, -1, -1 };
        if (rank == root) b[0] = blk, b[1] = it, b[2] = root;
        DOK(kumi_gpu_bcast(G, blk, b, 3, KUMI_GPU_INT, root));
        DCHECK(b[0] == blk && b[1] == it && b[2] == root, "bcast %d %d %d", b[0], b[1], b[2]);
        /* a pair with the same block of the neighbour ranks, blocking calls, by parity */
        int right = (rank + 1) % size, left = (rank - 1 + size) % size;
        float f = (float)(rank * 100 + blk), g = -1;
        kumi_gpu_request r;
        DOK(kumi_gpu_irecv(G, blk, &g, 1, KUMI_GPU_FLOAT, left, 100 + blk, &r));
        DOK(kumi_gpu_send(G, blk, &f, 1, KUMI_GPU_FLOAT, right, 100 + blk));
        DOK(kumi_gpu_wait(G, blk, &r, NULL));
        DCHECK(g == (float)(left * 100 + blk), "pair %g", (double)g);
    }
    return NULL;
}

/* ------------------------------------------------------------ 3. errors */
/* A request published with the flags given (kumi_gpu.h's issue, without
 * its choice of flags): the proxy's own checks. */
static int raw_request(int blk, int op, void *buf, int64_t count, int type, int peer, uint32_t flags)
{
    uint32_t gen = 0;
    int slot = kumi_gpu_take_rec_(G, blk, &gen);
    if (slot < 0) return -1;
    struct kumi_gpu_entry x;
    memset(&x, 0, sizeof x);
    x.buf = (uint64_t)(uintptr_t)buf;
    x.count = count;
    x.op = (int16_t)op;
    x.type = (int16_t)type;
    x.peer = peer;
    x.block = blk;
    x.slot = slot;
    x.gen = gen;
    x.flags = flags;
    kumi_gpu_post_(G, &x);
    kumi_gpu_request r = { slot, gen, NULL, 0, 0 };
    return kumi_gpu_wait(G, blk, &r, NULL);
}

static void *error_block(void *arg)
{
    int blk = (int)(intptr_t)arg;
    int x = 1;
    kumi_gpu_request r;
    kumi_gpu_status st = { 0, 0, 0, 0 };
    DCHECK(kumi_gpu_send(G, blk, &x, 1, KUMI_GPU_INT, size, 0) == MPI_ERR_RANK, "rank");
    DCHECK(kumi_gpu_send(G, blk, &x, 1, KUMI_GPU_INT, -7, 0) == MPI_ERR_RANK, "rank -7");
    DCHECK(kumi_gpu_send(G, blk, &x, 1, KUMI_GPU_INT, rank, -5) == MPI_ERR_TAG, "tag");
    DCHECK(kumi_gpu_recv(G, blk, &x, 1, KUMI_GPU_INT, rank, -5, NULL) == MPI_ERR_TAG, "recv tag");
    DCHECK(kumi_gpu_send(G, blk, &x, 1, 77, rank, 0) == MPI_ERR_TYPE, "datatype");
    DCHECK(kumi_gpu_send(G, blk, &x, -1, KUMI_GPU_INT, rank, 0) == MPI_ERR_COUNT, "count");
    DCHECK(kumi_gpu_send(G, blk, NULL, 4, KUMI_GPU_INT, rank, 0) == MPI_ERR_BUFFER, "buffer");
    DCHECK(kumi_gpu_allreduce(G, blk, &x, &x, 1, KUMI_GPU_INT, 42) == MPI_ERR_OP, "op");
    DCHECK(kumi_gpu_bcast(G, blk, &x, 1, KUMI_GPU_INT, size + 3) == MPI_ERR_ROOT, "root");
    DOK(kumi_gpu_issue_(G, blk, 99, &x, 0, 1, KUMI_GPU_INT, rank, 0, 0, 0, &r));
    DCHECK(kumi_gpu_wait(G, blk, &r, &st) == MPI_ERR_ARG && st.error == MPI_ERR_ARG, "unknown kind");
    DOK(kumi_gpu_issue_(G, blk, KUMI_GPU_OP_SEND, &x, 0, 1, KUMI_GPU_INT, rank, 0, 0, 3, &r));
    DCHECK(kumi_gpu_wait(G, blk, &r, NULL) == MPI_ERR_COMM, "comm index");
    DCHECK(kumi_gpu_send(G, -1, &x, 1, KUMI_GPU_INT, rank, 0) == MPI_ERR_ARG, "block index");
    /* truncation, from MPI itself: to myself, the receive of 1 int gets 4 */
    int four[4] = { 1, 2, 3, 4 }, one = 0;
    kumi_gpu_request s;
    DOK(kumi_gpu_isend(G, blk, four, 4, KUMI_GPU_INT, rank, 700 + blk, &s));
    DCHECK(kumi_gpu_recv(G, blk, &one, 1, KUMI_GPU_INT, rank, 700 + blk, &st) == MPI_ERR_TRUNCATE, "truncate");
    DOK(kumi_gpu_wait(G, blk, &s, NULL));
    /* too many outstanding: depth requests (to MPI_PROC_NULL) not yet waited */
    kumi_gpu_request q[16];
    for (int i = 0; i < DEPTH; i++) DOK(kumi_gpu_isend(G, blk, &x, 1, KUMI_GPU_INT, KUMI_GPU_PROC_NULL, 0, &q[i]));
    DCHECK(kumi_gpu_isend(G, blk, &x, 1, KUMI_GPU_INT, KUMI_GPU_PROC_NULL, 0, &q[DEPTH]) == KUMI_GPU_ERR_NO_MEM,
           "depth + 1");
    for (int i = 0; i < DEPTH; i++) DOK(kumi_gpu_wait(G, blk, &q[i], NULL));
    DOK(kumi_gpu_recv(G, blk, &x, 1, KUMI_GPU_INT, KUMI_GPU_PROC_NULL, 0, &st));
    DCHECK(st.source == KUMI_GPU_PROC_NULL && st.count == 0, "proc_null status %d", st.source);
    /* data in the record where the proxy takes none: a broadcast, 40 bytes */
    int64_t five[5] = { 0 };
    DCHECK(raw_request(blk, KUMI_GPU_OP_BCAST, five, 1, KUMI_GPU_INT64, 0, KUMI_GPU_F_INLINE) == MPI_ERR_ARG,
           "broadcast with its data in the record");
    DCHECK(raw_request(blk, KUMI_GPU_OP_SEND, five, 5, KUMI_GPU_INT64, KUMI_GPU_PROC_NULL, KUMI_GPU_F_INLINE) ==
           MPI_ERR_ARG, "40 bytes in a record");
    DCHECK(raw_request(blk, KUMI_GPU_OP_RECV, five, ((int64_t)1 << 61) + 1, KUMI_GPU_INT64, KUMI_GPU_PROC_NULL,
                       KUMI_GPU_F_INLINE) == MPI_ERR_ARG, "2^61 + 1 elements of 8 bytes (8 bytes, wrapped) in a record");
    /* after all that, the block still works */
    DOK(kumi_gpu_barrier(G, blk));
    return NULL;
}

static void *fail_block(void *arg)
{
    int blk = (int)(intptr_t)arg;
    if (blk == 1) DOK(kumi_gpu_fail(G, blk, MPI_ERR_INTERN));
    return NULL;
}

/* ------------------------------------------------------------ 6. small messages */
#define SMAX 33
static int inl_expected;

static void *small_block(void *arg)
{
    int blk = (int)(intptr_t)arg;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    DCHECK(G.inl == (uint32_t)inl_expected, "kumi_gpu_t.inl = %u, expected %d", G.inl, inl_expected);
    unsigned char out[SMAX], in[SMAX + 2];
    for (int n = 1; n <= SMAX; n++) {
        for (int i = 0; i < n; i++) out[i] = (unsigned char)(rank * 31 + n * 7 + i);
        memset(in, 0xee, sizeof in);
        kumi_gpu_request s, r;
        kumi_gpu_status st = { 0, 0, 0, 0 };
        DOK(kumi_gpu_isend(G, blk, out, n, KUMI_GPU_BYTE, right, 300 + n, &s));
        const struct kumi_gpu_completion *sc = &G.comp[(size_t)blk * G.depth + s.slot];
        DOK(kumi_gpu_wait(G, blk, &s, NULL));
        if (n <= inl_expected) DCHECK(!memcmp(sc->data, out, n), "%d bytes sent: not in the record", n);
        DOK(kumi_gpu_irecv(G, blk, in + (n & 1), n, KUMI_GPU_BYTE, left, 400 + n, &r));   /* odd addresses too */
        const struct kumi_gpu_completion *rc = &G.comp[(size_t)blk * G.depth + r.slot];
        DOK(kumi_gpu_wait(G, blk, &r, &st));
        DCHECK(st.source == left && st.tag == 400 + n && st.count == n, "%d bytes: status %d %d %lld", n, st.source,
               st.tag, (long long)st.count);
        for (int i = 0; i < n; i++)
            DCHECK(in[(n & 1) + i] == (unsigned char)(left * 31 + n * 11 + i), "%d bytes received, byte %d", n, i);
        DCHECK(in[(n & 1) + n] == 0xee && ((n & 1) == 0 || in[0] == 0xee), "%d bytes: written past the message", n);
        if (n <= inl_expected) DCHECK(!memcmp(rc->data, in + (n & 1), n), "%d bytes received: not through the record", n);
    }
    return NULL;
}

static void small_messages(void)
{
    const char *e = getenv("KUMI_BASE_GPU_INLINE");
    inl_expected = e && !atoi(e) ? 0 : KUMI_GPU_INLINE;
    MPIX_Gpu g;
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, KIND, 1, DEPTH, QS, &G, &g));
    pthread_t t;
    KT_CHECK(!pthread_create(&t, NULL, small_block, (void *)(intptr_t)0));
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    unsigned char buf[SMAX];
    for (int n = 1; n <= SMAX; n++) {
        for (int i = 0; i < n; i++) buf[i] = (unsigned char)(rank * 31 + n * 11 + i);
        KT_MPI(MPI_Send(buf, n, MPI_BYTE, right, 400 + n, MPI_COMM_WORLD));
        MPI_Status st;
        KT_MPI(MPI_Recv(buf, SMAX, MPI_BYTE, MPI_ANY_SOURCE, 300 + n, MPI_COMM_WORLD, &st));
        int cnt = -1;
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        KT_CHECK(st.MPI_SOURCE == left && cnt == n, "from the device: source %d, %d bytes, expected %d", st.MPI_SOURCE,
                 cnt, n);
        for (int i = 0; i < n; i++)
            KT_CHECK(buf[i] == (unsigned char)(left * 31 + n * 7 + i), "%d bytes from the device, byte %d", n, i);
    }
    pthread_join(t, NULL);
    KT_CHECK(!failed, "a device block failed (small messages)");
    KT_MPI(MPIX_Gpu_stop(&g));
}

/* ------------------------------------------------------------ 4. stencil */
#define SB 4           /* blocks per rank */
#define SL 64          /* points per block */
#define ST 40          /* iterations */
static double *su, *sv;                  /* this rank's SB*SL points + 2 halos */
static double checksum;
static pthread_barrier_t grid;          /* stands in for a grid-wide sync */

static void *stencil_block(void *arg)
{
    int blk = (int)(intptr_t)arg;
    int n = SB * SL;
    int left = rank > 0 ? rank - 1 : KUMI_GPU_PROC_NULL, right = rank < size - 1 ? rank + 1 : KUMI_GPU_PROC_NULL;
    double *u = su, *v = sv;
    for (int t = 0; t < ST; t++) {
        /* halos of the rank: from the edge blocks (u[0] and u[n+1] are the halos) */
        if (blk == 0) {
            kumi_gpu_request r, s;
            DOK(kumi_gpu_irecv(G, blk, &u[0], 1, KUMI_GPU_DOUBLE, left, 2, &r));
            DOK(kumi_gpu_isend(G, blk, &u[1], 1, KUMI_GPU_DOUBLE, left, 1, &s));
            DOK(kumi_gpu_wait(G, blk, &r, NULL));
            DOK(kumi_gpu_wait(G, blk, &s, NULL));
        }
        if (blk == SB - 1) {
            kumi_gpu_request r, s;
            DOK(kumi_gpu_irecv(G, blk, &u[n + 1], 1, KUMI_GPU_DOUBLE, right, 1, &r));
            DOK(kumi_gpu_isend(G, blk, &u[n], 1, KUMI_GPU_DOUBLE, right, 2, &s));
            DOK(kumi_gpu_wait(G, blk, &r, NULL));
            DOK(kumi_gpu_wait(G, blk, &s, NULL));
        }
        pthread_barrier_wait(&grid);
        for (int i = 1 + blk * SL; i <= (blk + 1) * SL; i++) v[i] = (u[i - 1] + u[i] + u[i + 1]) / 3.0;
        pthread_barrier_wait(&grid);
        double *w = u;
        u = v;
        v = w;
    }
    double s = 0;
    for (int i = 1 + blk * SL; i <= (blk + 1) * SL; i++) s += u[i];
    DOK(kumi_gpu_allreduce(G, blk, KUMI_GPU_IN_PLACE, &s, 1, KUMI_GPU_DOUBLE, KUMI_GPU_SUM));
    if (blk == 0) checksum = 0;
    pthread_barrier_wait(&grid);
    for (int b = 0; b < SB; b++) {
        if (b == blk) checksum += s;
        pthread_barrier_wait(&grid);
    }
    return NULL;
}

static double init_val(long g) { return (double)((g * 7919) % 1000) / 10.0; }

static void stencil(void)
{
    int n = SB * SL;
    long N = (long)size * n;
    su = calloc((size_t)n + 2, sizeof(double));
    sv = calloc((size_t)n + 2, sizeof(double));
    for (int i = 1; i <= n; i++) su[i] = init_val((long)rank * n + i - 1);
    KT_CHECK(!pthread_barrier_init(&grid, NULL, SB));
    MPIX_Gpu g;
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, KIND, SB, DEPTH, QS, &G, &g));
    run_blocks(SB, stencil_block);
    KT_MPI(MPIX_Gpu_stop(&g));
    pthread_barrier_destroy(&grid);
    double *res = (ST % 2) ? sv : su;
    /* the serial reference over the whole line, fixed zero ends */
    double *a = calloc((size_t)N + 2, sizeof(double)), *b = calloc((size_t)N + 2, sizeof(double));
    for (long i = 1; i <= N; i++) a[i] = init_val(i - 1);
    for (int t = 0; t < ST; t++) {
        for (long i = 1; i <= N; i++) b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0;
        double *w = a;
        a = b;
        b = w;
    }
    double total = 0;
    for (long i = 1; i <= N; i++) total += a[i];
    for (int i = 1; i <= n; i++)
        KT_CHECK(res[i] == a[(long)rank * n + i], "stencil point %d: %.17g, reference %.17g", i, res[i],
                 a[(long)rank * n + i]);
    KT_CHECK(checksum > 0 && (checksum - total) / total < 1e-12 && (total - checksum) / total < 1e-12,
             "checksum %.17g, reference %.17g", checksum, total);
    free(a);
    free(b);
    free(su);
    free(sv);
}

/* The CPUs the proxy thread may run on; 0 if no thread is so named. */
static int proxy_cpus(cpu_set_t *set)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;
    int found = 0;
    while (d && !found && (de = readdir(d))) {
        char path[300], name[32] = "";
        pid_t tid = (pid_t)atoi(de->d_name);
        if (tid <= 0) continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (!fgets(name, sizeof name, f)) name[0] = 0;
        fclose(f);
        if (strncmp(name, "kumi-gpuproxy", 13) == 0) found = sched_getaffinity(tid, sizeof *set, set) == 0;
    }
    if (d) closedir(d);
    return found;
}

static void *idle_thread(void *a) { return a; }

/* Can a thread of this process run off the rank's CPUs (a cgroup may allow no other)? */
static int other_cpus_allowed(const cpu_set_t *mine)
{
    cpu_set_t other;
    CPU_ZERO(&other);
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; c++)
        if (!CPU_ISSET((int)c, mine)) CPU_SET((int)c, &other);
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    int ok = CPU_COUNT(&other) > 0 && pthread_attr_setaffinity_np(&at, sizeof other, &other) == 0 &&
             pthread_create(&t, &at, idle_thread, NULL) == 0;
    if (ok) pthread_join(t, NULL);
    pthread_attr_destroy(&at);
    return ok;
}

static void check_proxy_cpus(void)
{
    cpu_set_t mine, px, both;
    KT_CHECK(proxy_cpus(&px), "no thread named kumi-gpuproxy while a proxy runs");
    if (!getenv("KUMI_INTERNAL_BIND_CPUS") || sysconf(_SC_NPROCESSORS_ONLN) < 2) return;   /* not bound */
    KT_CHECK(sched_getaffinity(0, sizeof mine, &mine) == 0);
    if (!other_cpus_allowed(&mine)) return;
    KT_CHECK(!CPU_EQUAL(&px, &mine), "the proxy thread keeps the rank's %d CPU(s)", CPU_COUNT(&mine));
    CPU_AND(&both, &px, &mine);
    if (size == 1 && !getenv("KUMI_INTERNAL_BIND_SHARED"))
        KT_CHECK(CPU_COUNT(&both) == 0, "one rank alone: its proxy may still run on its core (%d of %d CPUs shared)",
                 CPU_COUNT(&both), CPU_COUNT(&px));
}

/* The stand-in driver's context flags (kind cuda; NULL where it has none). */
static int (*flags_get)(unsigned *);
static int (*flags_set)(unsigned);
static void stand_in_flags(void)
{
    const char *lib = getenv("KUMI_ACCEL_CUDA_LIBRARY");
    void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
    if (!h) return;
    *(void **)&flags_get = dlsym(h, "cuCtxGetFlags");
    *(void **)&flags_set = dlsym(h, "cuCtxSetFlags");
    if (!flags_get || !flags_set) flags_get = NULL, flags_set = NULL;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 2) QS = atoi(argv[1]), DEPTH = atoi(argv[2]);
    if (argc > 3 && !strcmp(argv[3], "cuda")) KIND = MPIX_GPU_CUDA;
    KT_CHECK(DEPTH >= 2 && DEPTH <= 15, "depth: 2 .. 15 (a block keeps a receive and a send outstanding)");
    MPIX_Gpu g;

    /* 1. order */
    unsigned fl = 0;
    if (KIND == MPIX_GPU_CUDA) stand_in_flags();
    if (flags_set) flags_set(0x11);        /* spin (1), and a flag beside */
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, KIND, OB, DEPTH, QS, &G, &P));
    check_proxy_cpus();                    /* 5. */
    if (flags_get) {
        flags_get(&fl);
        KT_CHECK(fl == 0x14, "context flags %#x while the proxy runs, expected 0x14 (blocking synchronization)", fl);
    }
    run_blocks(OB, order_block);
    KT_MPI(MPIX_Gpu_stop(&P));
    if (flags_get) {
        flags_get(&fl);
        KT_CHECK(fl == 0x11, "context flags %#x after MPIX_Gpu_stop, expected 0x11 as before", fl);
        flags_set(0);
    }
    KT_CHECK(P == MPIX_GPU_NULL);

    /* 1b. the same served by this thread: a proxy without thread */
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, KIND | MPIX_GPU_NOTHREAD, OB, DEPTH, QS, &G, &P));
    run_blocks_served(OB, order_block, P);
    KT_MPI(MPIX_Gpu_stop(&P));
    KT_CHECK(P == MPIX_GPU_NULL);

    /* 2. many concurrent requesters */
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, KIND, MB, DEPTH, QS, &G, &g));
    run_blocks(MB, many_block);
    KT_MPI(MPIX_Gpu_stop(&g));

    /* 3. errors */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, KIND, 2, DEPTH, QS, &G, &g));
    run_blocks(2, error_block);
    KT_MPI(MPIX_Gpu_stop(&g));
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, KIND, 2, DEPTH, QS, &G, &g));
    run_blocks(2, fail_block);
    KT_ERRCLASS(MPIX_Gpu_stop(&g), MPI_ERR_INTERN);
    KT_CHECK(g == MPIX_GPU_NULL);
    KT_ERRCLASS(MPIX_Gpu_stop(&g), MPI_ERR_ARG);
    KT_ERRCLASS(MPIX_Gpu_progress(MPIX_GPU_NULL, NULL), MPI_ERR_ARG);
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, KIND, 2, DEPTH, QS, &G, &g));
    KT_ERRCLASS(MPIX_Gpu_progress(g, NULL), MPI_ERR_ARG);          /* it has its own thread */
    KT_MPI(MPIX_Gpu_stop(&g));
    /* a failure reported to a proxy without thread: served, then MPIX_Gpu_stop returns it */
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, KIND | MPIX_GPU_NOTHREAD, 2, DEPTH, QS, &G, &g));
    run_blocks_served(2, fail_block, g);
    KT_ERRCLASS(MPIX_Gpu_stop(&g), MPI_ERR_INTERN);
    KT_ERRCLASS(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CPU | 0x200, 1, 4, 16, &G, &g), MPI_ERR_ARG);
    KT_ERRCLASS(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CPU, 0, 4, 16, &G, &g), MPI_ERR_ARG);
    KT_ERRCLASS(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CPU, 1, 4, 12, &G, &g), MPI_ERR_ARG);
    KT_ERRCLASS(MPIX_Gpu_start(MPI_COMM_WORLD, 9, 1, 4, 16, &G, &g), MPI_ERR_ARG);
    KT_ERRCLASS(MPIX_Gpu_start(MPI_COMM_NULL, MPIX_GPU_CPU, 1, 4, 16, &G, &g), MPI_ERR_COMM);
    if (!MPIX_Query_cuda_support())
        KT_ERRCLASS(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CUDA, 1, 4, 16, &G, &g), MPI_ERR_UNSUPPORTED_OPERATION);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    /* 4. stencil */
    stencil();

    /* 6. small messages */
    small_messages();

    /* a proxy left running is stopped by MPI_Finalize */
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CPU, 1, DEPTH, QS, &G, &g));
    MPI_Finalize();
    if (rank == 0) printf("gpu_cpu: %d ranks, qsize %d, depth %d, kind %s: ok\n", size, QS, DEPTH, KIND ? "cuda" : "cpu");
    return 0;
}
