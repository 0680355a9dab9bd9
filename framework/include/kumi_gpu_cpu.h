/* kumi_gpu_cpu.h: the CPU device for CUDA kernels written with kumi_gpu.h.
 *
 * Include it first, instead of the CUDA headers, to compile a .cu file as
 * host C++ (g++ -x c++ -std=c++17 -pthread): kernels become functions, the
 * built-in variables thread-locals, and
 *   KUMI_CPU_LAUNCH(kern, grid, block, (args...))          runs every thread in turn, to its end
 *     (enough for a kernel split by kumi-gpucc --relaunch: it never waits inside a launch);
 *   KUMI_CPU_LAUNCH_THREADS(kern, grid, block, (args...))  one host thread per CUDA thread, at once,
 *     with __syncthreads() and cooperative_groups' grid.sync() as barriers (a persistent kernel).
 * Atomics, fences and the cooperative-groups calls the tests use are mapped;
 * nothing else of CUDA is (no __shared__ memory, no warp functions). */
#ifndef KUMI_GPU_CPU_H
#define KUMI_GPU_CPU_H
#if defined(__CUDACC__)
#error "kumi_gpu_cpu.h is for compiling CUDA sources as host C++, not under nvcc"
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

struct uint3 { unsigned x, y, z; };
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;
inline thread_local pthread_barrier_t *kumi_cpu_block_bar_, *kumi_cpu_grid_bar_;

static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __syncthreads(void)
{
    if (kumi_cpu_block_bar_) pthread_barrier_wait(kumi_cpu_block_bar_);
    else { fprintf(stderr, "kumi_gpu_cpu.h: __syncthreads() in a sequential launch\n"); abort(); }
}
template <typename T> static inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline double atomicAdd(double *p, double v)
{
    double o, n;
    __atomic_load(p, &o, __ATOMIC_RELAXED);
    do n = o + v; while (!__atomic_compare_exchange(p, &o, &n, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
    return o;
}
template <typename T> static inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicMax(T *p, T v)
{
    T o = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (o < v && !__atomic_compare_exchange_n(p, &o, v, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {}
    return o;
}

namespace cooperative_groups {
struct grid_group {
    void sync() const
    {
        if (kumi_cpu_grid_bar_) pthread_barrier_wait(kumi_cpu_grid_bar_);
        else { fprintf(stderr, "kumi_gpu_cpu.h: grid.sync() in a sequential launch\n"); abort(); }
    }
};
struct thread_block {
    void sync() const { __syncthreads(); }
};
static inline grid_group this_grid() { return grid_group(); }
static inline thread_block this_thread_block() { return thread_block(); }
template <typename G> static inline void sync(const G &g) { g.sync(); }
}

static inline void kumi_cpu_set_(dim3 grid, dim3 block, unsigned b, unsigned t)
{
    gridDim = grid;
    blockDim = block;
    blockIdx.x = b % grid.x; blockIdx.y = b / grid.x % grid.y; blockIdx.z = b / grid.x / grid.y;
    threadIdx.x = t % block.x; threadIdx.y = t / block.x % block.y; threadIdx.z = t / block.x / block.y;
}

/* Every thread in turn (block by block), each to the end of the kernel. */
#define KUMI_CPU_LAUNCH(kern, grid, block, args) do { \
    dim3 kg_ = (grid), kb_ = (block); \
    unsigned nb_ = kg_.x * kg_.y * kg_.z, nt_ = kb_.x * kb_.y * kb_.z; \
    for (unsigned b_ = 0; b_ < nb_; b_++) \
        for (unsigned t_ = 0; t_ < nt_; t_++) { kumi_cpu_set_(kg_, kb_, b_, t_); kern args; } \
} while (0)

/* All threads at once (a persistent kernel): one host thread per CUDA thread. */
#define KUMI_CPU_LAUNCH_THREADS(kern, grid, block, args) do { \
    dim3 kg_ = (grid), kb_ = (block); \
    unsigned nb_ = kg_.x * kg_.y * kg_.z, nt_ = kb_.x * kb_.y * kb_.z; \
    std::vector<pthread_barrier_t> bb_(nb_); \
    pthread_barrier_t gb_; \
    pthread_barrier_init(&gb_, NULL, nb_ * nt_); \
    for (unsigned b_ = 0; b_ < nb_; b_++) pthread_barrier_init(&bb_[b_], NULL, nt_); \
    kumi_cpu_run_threads_(nb_ * nt_, [&](unsigned i_) { \
        kumi_cpu_set_(kg_, kb_, i_ / nt_, i_ % nt_); \
        kumi_cpu_block_bar_ = &bb_[i_ / nt_]; kumi_cpu_grid_bar_ = &gb_; \
        kern args; \
        kumi_cpu_block_bar_ = NULL; kumi_cpu_grid_bar_ = NULL; }); \
    for (unsigned b_ = 0; b_ < nb_; b_++) pthread_barrier_destroy(&bb_[b_]); \
    pthread_barrier_destroy(&gb_); \
} while (0)

#include <functional>
static inline void kumi_cpu_run_threads_(unsigned n, const std::function<void(unsigned)> &f)
{
    struct A { const std::function<void(unsigned)> *f; unsigned i; };
    std::vector<pthread_t> th(n);
    std::vector<A> a(n);
    for (unsigned i = 0; i < n; i++) {
        a[i] = A{ &f, i };
        if (pthread_create(&th[i], NULL, [](void *p) -> void * { A *x = (A *)p; (*x->f)(x->i); return NULL; }, &a[i])) {
            fprintf(stderr, "kumi_gpu_cpu.h: cannot start thread %u of the launch\n", i);
            abort();
        }
    }
    for (unsigned i = 0; i < n; i++) pthread_join(th[i], NULL);
}
#endif
