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
 * Thread states (kumi_rl_t.thr[tid].state), written by the thread as it returns:
 *   KUMI_RL_DONE        the thread has ended
 *   KUMI_RL_BLOCKED     waiting for completion record idx to reach gen
 *   KUMI_RL_YIELD       at a kumi_gpu_test that was not complete: resumes at the next launch
 *   KUMI_RL_SYNC_BLOCK  at __syncthreads(): resumes when every live thread of its block is there
 *   KUMI_RL_SYNC_GRID   at grid.sync(): resumes when every live thread of the grid is there
 * The host relaunches as soon as one thread can go on; a launch where a
 * thread is not released returns at once for that thread.
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

enum { KUMI_RL_RUNNING = 0, KUMI_RL_DONE, KUMI_RL_BLOCKED, KUMI_RL_YIELD, KUMI_RL_SYNC_BLOCK, KUMI_RL_SYNC_GRID };
#define KUMI_RL_PC_DONE (-1)

struct kumi_rl_thread { uint32_t state, idx, gen, pad; };

typedef struct kumi_rl {
    struct kumi_rl_thread *thr;   /* per thread, host-mapped */
    unsigned char *rel;           /* per block: 1 = its threads at a sync go on (host-mapped); rel[nblocks]: grid */
    void *states;                 /* per thread state records (device memory) */
    uint32_t nthreads, nblocks, tpb;
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
KUMI_GPU_FN void kumi_rl_block(kumi_rl_t rl, unsigned tid, kumi_gpu_t g, int blk, const kumi_gpu_request *req)
{
    rl.thr[tid].idx = (uint32_t)blk * g.depth + (uint32_t)req->slot;
    rl.thr[tid].gen = req->gen;
    rl.thr[tid].state = KUMI_RL_BLOCKED;
}
KUMI_GPU_FN void kumi_rl_state(kumi_rl_t rl, unsigned tid, uint32_t state)
{
    rl.thr[tid].state = state;
}
KUMI_GPU_FN int kumi_rl_released(kumi_rl_t rl, int grid)
{
    return rl.rel[grid ? rl.nblocks : kumi_rl_bid()];
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
    struct kumi_rl_thread *thr = (struct kumi_rl_thread *)kumi_rl_alloc_mapped_(nthreads * sizeof *thr);
    unsigned char *rel = (unsigned char *)kumi_rl_alloc_mapped_(nblocks + 1);
    void *states = NULL;
    const char *err = NULL;
    kumi_rl_t rl;
    memset(&rl, 0, sizeof rl);
#if defined(__CUDACC__)
    if (cudaMalloc(&states, nthreads * state_size) != cudaSuccess ||
        cudaMemset(states, 0, nthreads * state_size) != cudaSuccess)
        states = NULL;
#else
    states = calloc(nthreads, state_size);
#endif
    if (!thr || !rel || !states) err = "out of memory for the threads' state";
    else {
        rl.thr = (struct kumi_rl_thread *)kumi_rl_devptr_(thr);
        rl.rel = (unsigned char *)kumi_rl_devptr_(rel);
        rl.states = states;
        rl.nthreads = (uint32_t)nthreads;
        rl.nblocks = nblocks;
        rl.tpb = tpb;
        if (!rl.thr || !rl.rel) err = "no device address of host-mapped memory";
    }
    unsigned *nlive = (unsigned *)calloc(nblocks, sizeof(unsigned)), *nsync = (unsigned *)calloc(nblocks, sizeof(unsigned));
    if (!err && (!nlive || !nsync)) err = "out of memory";
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
    unsigned long long launches = 0;
    while (!err) {
        launch(ctx, g, rl);
        launches++;
#if defined(__CUDACC__)
        cudaError_t ce = cudaGetLastError();
        if (ce == cudaSuccess) ce = cudaDeviceSynchronize();
        if (ce != cudaSuccess) { err = cudaGetErrorString(ce); break; }
#endif
        memset(rel, 0, nblocks + 1);
        int ev = 1;
        MPIX_Gpu_progress(p, NULL);            /* start what the launch published */
        unsigned spins = 0;
        int again = 0, finished = 0;
        while (!again && !finished) {
            if (!ev) {                          /* nothing new: serve MPI, then look again */
                MPIX_Gpu_progress(p, &ev);
                if (!ev) kumi_gpu_pause(&spins);
                continue;
            }
            ev = 0;
            unsigned long long done = 0, go = 0, glive = 0, gsync = 0;
            memset(nlive, 0, nblocks * sizeof *nlive);
            memset(nsync, 0, nblocks * sizeof *nsync);
            for (unsigned long long t = 0; t < nthreads; t++) {
                const struct kumi_rl_thread *s = &thr[t];
                uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
                unsigned b = (unsigned)(t / tpb);
                if (st == KUMI_RL_DONE) { done++; continue; }
                nlive[b]++;
                glive++;
                if (st == KUMI_RL_SYNC_BLOCK) nsync[b]++;
                else if (st == KUMI_RL_SYNC_GRID) gsync++;
                else if (st == KUMI_RL_BLOCKED) {
                    if (s->idx >= (uint64_t)nblocks * (unsigned)depth ||
                        kumi_gpu_load_acq32(&hcomp[s->idx].done) == s->gen) go++;
                } else go++;                      /* yielded (or never ran) */
            }
            if (done == nthreads) { finished = 1; break; }
            if (go) { again = 1; break; }
            if (gsync && gsync == glive) { rel[nblocks] = 1; again = 1; }
            for (unsigned b = 0; b < nblocks; b++)
                if (nlive[b] && nsync[b] == nlive[b]) { rel[b] = 1; again = 1; }
        }
        if (finished) break;
    }
    free(nlive);
    free(nsync);
    kumi_rl_free_mapped_(thr);
    kumi_rl_free_mapped_(rel);
#if defined(__CUDACC__)
    if (states) cudaFree(states);
#else
    free(states);
#endif
    int rs = MPIX_Gpu_stop(&p);
    if (getenv("GPUCC_VERBOSE")) fprintf(stderr, "kumi-gpucc relaunch: %llu launches\n", launches);
    if (err) return kumi_rl_fail_(comm, "launch", err);
    return rs;
}
#endif
