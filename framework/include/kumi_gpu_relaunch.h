/* kumi_gpu_relaunch.h: the run time of kernels split by `kumi-gpucc --relaunch`.
 *
 * kumi-gpucc --relaunch turns a kernel written with kumi_gpu.h (a persistent
 * kernel that waits for its MPI requests inside the kernel) into one that
 * returns wherever it would wait: at the wait of a request, at a blocking
 * call, at __syncthreads() / grid.sync().  Each thread keeps its program
 * counter and the locals live across that point in a state record in device
 * memory; the host loop (kumi_rl_run, below) serves the requests and
 * relaunches the kernel, which resumes every thread where it stopped.  The
 * requests themselves travel by kumi_gpu.h's ring, served by a proxy started
 * with MPIX_GPU_NOTHREAD: the host loop calls MPIX_Gpu_progress between
 * launches, so the MPI calls are made by the thread that launches the kernel
 * and no kernel ever has to stay resident.
 *
 * Where a thread stopped, said by the thread each time it returns from a
 * launch (kumi_rl_state / kumi_rl_block; every thread of every block, every
 * launch, exactly once):
 *   KUMI_RL_DONE        the thread has ended
 *   KUMI_RL_BLOCKED     waiting for completion record idx to reach gen
 *   KUMI_RL_YIELD       at a kumi_gpu_test that was not complete: resumes at the next launch
 *   KUMI_RL_SYNC_BLOCK  at __syncthreads(): resumes when every live thread of its block is there
 *   KUMI_RL_SYNC_GRID   at grid.sync(): resumes when every live thread of the grid is there
 * The threads of a block count themselves in counters of the block in device
 * memory, and the block's last thread to return writes the counts into the
 * block's summary in host-mapped memory (BLOCKED threads also write what
 * they wait for): after a launch the host reads one summary per block, not a
 * word per thread (101 376 threads, 396 blocks in the benchmark's stencil).
 * The host relaunches as soon as one thread can go on, releasing at once
 * every barrier that all the live threads of its block (of the grid) reached;
 * a launch where a thread is not released returns at once for that thread.
 *
 * Compiles as CUDA C++ (nvcc) and, with kumi_gpu_cpu.h included first, as
 * host C++ for the CPU device (a launch is a loop over the threads). */
#ifndef KUMI_GPU_RELAUNCH_H
#define KUMI_GPU_RELAUNCH_H

#include <kumi_gpu.h>
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KUMI_RL_RUNNING = 0, KUMI_RL_DONE, KUMI_RL_BLOCKED, KUMI_RL_YIELD, KUMI_RL_SYNC_BLOCK, KUMI_RL_SYNC_GRID,
       KUMI_RL_NSTATES };
#define KUMI_RL_PC_DONE (-1)
#define KUMI_RL_EXITED KUMI_RL_NSTATES   /* counter: the block's threads that returned in this launch */
#define KUMI_RL_NCNT 8                   /* counters per block */

/* What the threads of one block returned with in one launch: how many in
 * each state, written by the block's last thread to return. */
struct kumi_rl_sum { uint32_t n[KUMI_RL_NSTATES], launch, pad; };
/* What a BLOCKED thread waits for: completion record idx reaching gen. */
struct kumi_rl_wait { uint32_t idx, gen; };

typedef struct kumi_rl {
    uint32_t *cnt;                /* per block, KUMI_RL_NCNT counters of the launch (device memory) */
    struct kumi_rl_sum *sum;      /* per block (host-mapped) */
    struct kumi_rl_wait *wait;    /* per block, tpb slots: its BLOCKED threads', in the launch (host-mapped) */
    unsigned char *rel;           /* per block: 1 = its threads at __syncthreads() go on (host-mapped) */
    void *states;                 /* per thread state records (device memory) */
    uint32_t nthreads, nblocks, tpb;
    uint32_t launch;              /* the launch's number (from 1) */
    uint32_t grid_rel;            /* 1: the threads at grid.sync() go on in this launch */
} kumi_rl_t;

/* ------------------------------------------------ device side */
KUMI_GPU_FN unsigned kumi_rl_bid(void)
{
    return (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
}
KUMI_GPU_FN unsigned kumi_rl_tid(void)
{
    return kumi_rl_bid() * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x +
           threadIdx.x;
}
/* The request is complete (or names no record: kumi_gpu_wait reports that). */
KUMI_GPU_FN int kumi_rl_ready(kumi_gpu_t g, int blk, const kumi_gpu_request *req)
{
    if (!req || req->slot == KUMI_GPU_REQUEST_NULL_SLOT || blk < 0 || (uint32_t)blk >= g.nblocks) return 1;
    return kumi_gpu_load_acq32(&kumi_gpu_rec_(g, blk, req->slot)->done) == req->gen;
}
/* Every thread, as it returns from a launch, counts itself in its block's
 * counters (device memory: device-scope atomics only); the block's last
 * thread to return moves the counts into the block's summary for the host
 * and clears them for the next launch.  The host reads nblocks summaries
 * (and the waits of the BLOCKED threads) instead of a word per thread. */
KUMI_GPU_FN void kumi_rl_exit_(kumi_rl_t rl, unsigned b)
{
    uint32_t *c = rl.cnt + (size_t)b * KUMI_RL_NCNT;
    __threadfence();                                    /* its count (and wait) before its exit */
    if (atomicAdd(&c[KUMI_RL_EXITED], 1u) != rl.tpb - 1) return;
    __threadfence();
    struct kumi_rl_sum *s = &rl.sum[b];
    for (int k = 0; k < KUMI_RL_NSTATES; k++) s->n[k] = atomicExch(&c[k], 0u);
    atomicExch(&c[KUMI_RL_EXITED], 0u);
    s->launch = rl.launch;
}
KUMI_GPU_FN void kumi_rl_block(kumi_rl_t rl, unsigned tid, kumi_gpu_t g, int blk, const kumi_gpu_request *req)
{
    (void)tid;
    unsigned b = kumi_rl_bid();
    uint32_t k = atomicAdd(&rl.cnt[(size_t)b * KUMI_RL_NCNT + KUMI_RL_BLOCKED], 1u);
    struct kumi_rl_wait *w = &rl.wait[(size_t)b * rl.tpb + k];
    w->idx = (uint32_t)blk * g.depth + (uint32_t)req->slot;
    w->gen = req->gen;
    kumi_rl_exit_(rl, b);
}
KUMI_GPU_FN void kumi_rl_state(kumi_rl_t rl, unsigned tid, uint32_t state)
{
    (void)tid;
    unsigned b = kumi_rl_bid();
    atomicAdd(&rl.cnt[(size_t)b * KUMI_RL_NCNT + state], 1u);
    kumi_rl_exit_(rl, b);
}
KUMI_GPU_FN int kumi_rl_released(kumi_rl_t rl, int grid)
{
    return grid ? (int)rl.grid_rel : rl.rel[kumi_rl_bid()];
}

/* ------------------------------------------------ host side (host functions: nvcc's device pass skips them) */
#if defined(__CUDACC__)
#define KUMI_RL_LAUNCH(kern, grid, block, args) (kern<<<(grid), (block)>>> args)
#else
#define KUMI_RL_LAUNCH(kern, grid, block, args) KUMI_CPU_LAUNCH(kern, grid, block, args)
#endif

typedef void (*kumi_rl_launch_fn)(void *ctx, kumi_gpu_t g, kumi_rl_t rl);

/* A failure of the host loop itself: said on stderr, then through comm's error handler. */
static inline int kumi_rl_fail_(MPI_Comm comm, const char *what, const char *why)
{
    fprintf(stderr, "kumi-gpucc relaunch: %s: %s\n", what, why);
    MPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

static inline void *kumi_rl_alloc_mapped_(size_t n)
{
#if defined(__CUDACC__)
    void *p = NULL;
    if (cudaHostAlloc(&p, n, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) return NULL;
    memset(p, 0, n);
    return p;
#else
    return calloc(1, n);
#endif
}
static inline void *kumi_rl_devptr_(void *h)
{
#if defined(__CUDACC__)
    void *d = NULL;
    if (cudaHostGetDevicePointer(&d, h, 0) != cudaSuccess) return NULL;
    return d;
#else
    return h;
#endif
}
static inline void kumi_rl_free_mapped_(void *p)
{
#if defined(__CUDACC__)
    if (p) cudaFreeHost(p);
#else
    free(p);
#endif
}

/* Run a split kernel to its end: nblocks blocks of tpb threads, each thread
 * with a state record of state_size bytes (zeroed: every thread starts at its
 * beginning).  depth: requests a block may have outstanding (0: 4).  The MPI
 * calls use comm (point-to-point) and one duplicate of it per block
 * (collectives), as with MPIX_Gpu_start.  Returns MPI_SUCCESS, the error a
 * block reported with kumi_gpu_fail, or MPI_ERR_OTHER when a launch
 * failed (said on stderr), both through comm's error handler. */
static inline int kumi_rl_run(MPI_Comm comm, unsigned nblocks, unsigned tpb, size_t state_size, int depth,
                              kumi_rl_launch_fn launch, void *ctx)
{
    if (depth <= 0) depth = 4;
    unsigned long long nthreads = (unsigned long long)nblocks * tpb;
    if (nblocks == 0 || tpb == 0 || nthreads > 0xffffffffull)
        return kumi_rl_fail_(comm, "launch", "empty grid or more than 2^32 threads");
    /* every block can have depth requests published during one launch: a ring that holds them all never fills */
    unsigned long long need = (unsigned long long)nblocks * (unsigned)depth;
    unsigned qsize = 2;
    while (qsize < need && qsize < (1u << 20)) qsize <<= 1;
    if (qsize < need) return kumi_rl_fail_(comm, "launch", "more than 2^20 requests could be outstanding");
#if defined(__CUDACC__)
    int kind = MPIX_GPU_CUDA | MPIX_GPU_NOTHREAD;
#else
    int kind = MPIX_GPU_CPU | MPIX_GPU_NOTHREAD;
#endif
    kumi_gpu_t g;
    MPIX_Gpu p = MPIX_GPU_NULL;
    int rc = MPIX_Gpu_start(comm, kind, (int)nblocks, depth, (int)qsize, &g, &p);
    if (rc != MPI_SUCCESS) return rc;
    struct kumi_rl_sum *sum = (struct kumi_rl_sum *)kumi_rl_alloc_mapped_(nblocks * sizeof *sum);
    struct kumi_rl_wait *waits = (struct kumi_rl_wait *)kumi_rl_alloc_mapped_(nthreads * sizeof *waits);
    unsigned char *rel = (unsigned char *)kumi_rl_alloc_mapped_(nblocks);
    void *states = NULL, *cnt = NULL;
    const char *err = NULL;
    kumi_rl_t rl;
    memset(&rl, 0, sizeof rl);
    size_t cntsize = (size_t)nblocks * KUMI_RL_NCNT * sizeof(uint32_t);
#if defined(__CUDACC__)
    if (cudaMalloc(&states, nthreads * state_size) != cudaSuccess ||
        cudaMemset(states, 0, nthreads * state_size) != cudaSuccess)
        states = NULL;
    if (cudaMalloc(&cnt, cntsize) != cudaSuccess || cudaMemset(cnt, 0, cntsize) != cudaSuccess) cnt = NULL;
#else
    states = calloc(nthreads, state_size);
    cnt = calloc(1, cntsize);
#endif
    if (!sum || !waits || !rel || !states || !cnt) err = "out of memory for the threads' state";
    else {
        rl.cnt = (uint32_t *)cnt;
        rl.sum = (struct kumi_rl_sum *)kumi_rl_devptr_(sum);
        rl.wait = (struct kumi_rl_wait *)kumi_rl_devptr_(waits);
        rl.rel = (unsigned char *)kumi_rl_devptr_(rel);
        rl.states = states;
        rl.nthreads = (uint32_t)nthreads;
        rl.nblocks = nblocks;
        rl.tpb = tpb;
        if (!rl.sum || !rl.wait || !rl.rel) err = "no device address of host-mapped memory";
    }
    /* per block: threads not returned for good, and of them at __syncthreads(); the waits of the BLOCKED */
    unsigned *nlive = (unsigned *)calloc(nblocks, sizeof(unsigned)), *nsync = (unsigned *)calloc(nblocks, sizeof(unsigned));
    struct kumi_rl_wait *blocked = (struct kumi_rl_wait *)malloc(nthreads * sizeof *blocked);
    if (!err && (!nlive || !nsync || !blocked)) err = "out of memory";
    /* the completion records as the host sees them */
    struct kumi_gpu_completion *hcomp = g.comp;
#if defined(__CUDACC__)
    if (!err) {
        struct cudaPointerAttributes pa;
        if (cudaPointerGetAttributes(&pa, g.comp) != cudaSuccess || !pa.hostPointer)
            err = "no host address of the completion records";
        else
            hcomp = (struct kumi_gpu_completion *)pa.hostPointer;
    }
#endif
    const unsigned long long nrec = (unsigned long long)nblocks * (unsigned)depth;
    unsigned long long launches = 0;
    while (!err) {
        rl.launch = (uint32_t)(launches % 0xffffffffull) + 1;
        launch(ctx, g, rl);
        launches++;
#if defined(__CUDACC__)
        cudaError_t ce = cudaGetLastError();
        if (ce == cudaSuccess) ce = cudaDeviceSynchronize();
        if (ce != cudaSuccess) { err = cudaGetErrorString(ce); break; }
#endif
        memset(rel, 0, nblocks);
        rl.grid_rel = 0;
        /* where the launch left the threads: the blocks' summaries */
        unsigned long long done = 0, yield = 0, glive = 0, gsync = 0;
        size_t nblocked = 0;
        for (unsigned b = 0; b < nblocks && !err; b++) {
            const struct kumi_rl_sum *s = &sum[b];
            unsigned long long all = 0;
            for (int k = 0; k < KUMI_RL_NSTATES; k++) all += s->n[k];
            if (__atomic_load_n(&s->launch, __ATOMIC_ACQUIRE) != rl.launch || all != tpb || s->n[KUMI_RL_RUNNING] ||
                s->n[KUMI_RL_BLOCKED] > tpb) {
                err = "a thread returned from the launch without saying where it stopped (a kernel kumi-gpucc did not split?)";
                break;
            }
            done += s->n[KUMI_RL_DONE];
            nlive[b] = tpb - s->n[KUMI_RL_DONE];
            nsync[b] = s->n[KUMI_RL_SYNC_BLOCK];
            glive += nlive[b];
            gsync += s->n[KUMI_RL_SYNC_GRID];
            yield += s->n[KUMI_RL_YIELD];
            memcpy(&blocked[nblocked], &waits[(size_t)b * tpb], s->n[KUMI_RL_BLOCKED] * sizeof *blocked);
            nblocked += s->n[KUMI_RL_BLOCKED];
        }
        if (err || done == nthreads) break;
        /* released: the threads at a barrier that every live thread of its block (the grid) reached */
        int go = yield > 0;
        if (gsync && gsync == glive) rl.grid_rel = go = 1;
        for (unsigned b = 0; b < nblocks; b++)
            if (nlive[b] && nsync[b] == nlive[b]) rel[b] = 1, go = 1;
        if (!go && !nblocked) {                /* nothing can release any thread: a launch would change nothing */
            err = "every live thread waits at a barrier that cannot be released (threads of one block at "
                  "__syncthreads() and others at grid.sync())";
            break;
        }
        MPIX_Gpu_progress(p, NULL);            /* start what the launch published */
        unsigned spins = 0;
        for (int ev = 1; !go; ) {
            if (ev) {                          /* a blocked thread whose record was written goes on */
                for (size_t i = 0; i < nblocked && !go; i++)
                    go = blocked[i].idx >= nrec || kumi_gpu_load_acq32(&hcomp[blocked[i].idx].done) == blocked[i].gen;
                if (go) break;
            }
            MPIX_Gpu_progress(p, &ev);         /* nothing new: serve MPI, then look again */
            if (!ev) kumi_gpu_pause(&spins);
        }
    }
    free(nlive);
    free(nsync);
    free(blocked);
    kumi_rl_free_mapped_(sum);
    kumi_rl_free_mapped_(waits);
    kumi_rl_free_mapped_(rel);
#if defined(__CUDACC__)
    if (states) cudaFree(states);
    if (cnt) cudaFree(cnt);
#else
    free(states);
    free(cnt);
#endif
    int rs = MPIX_Gpu_stop(&p);
    if (getenv("GPUCC_VERBOSE")) fprintf(stderr, "kumi-gpucc relaunch: %llu launches\n", launches);
    if (err) return kumi_rl_fail_(comm, "launch", err);
    return rs;
}
#endif
