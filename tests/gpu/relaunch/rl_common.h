/* Helpers of the relaunch tests (kumi-gpucc --relaunch): one source runs the
 * persistent kernel and its relaunched form, on a GPU (nvcc) or on the CPU
 * device (g++ with kumi_gpu_cpu.h included first). */
#ifndef RL_COMMON_H
#define RL_COMMON_H
#include <mpi.h>
#include <mpi-ext.h>
#include <kumi_gpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>

#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: `%s` ", __FILE__, __LINE__, #c); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)
#define MPICHK(call) do { int r_ = (call); CHECK(r_ == MPI_SUCCESS, "%s returned %d", #call, r_); } while (0)

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#define CU(call) do { cudaError_t e_ = (call); CHECK(e_ == cudaSuccess, "%s", cudaGetErrorString(e_)); } while (0)
#define RL_KIND MPIX_GPU_CUDA
static inline void rl_device(int rank)
{
    int n = 0;
    CU(cudaGetDeviceCount(&n));
    CU(cudaSetDevice(rank % n));
    CU(cudaFree(0));
}
/* host-mapped memory: with unified addressing the kernel uses the same address */
template <typename T> static inline T *rl_alloc(size_t n)
{
    T *h;
    CU(cudaHostAlloc((void **)&h, n * sizeof(T) + 8, cudaHostAllocMapped | cudaHostAllocPortable));
    memset((void *)h, 0, n * sizeof(T));
    return h;
}
/* the persistent kernel: a cooperative launch (grid.sync) */
template <typename... P>
static inline void rl_persistent(void (*k)(P...), dim3 grid, dim3 block, typename std::common_type<P>::type... a)
{
    void *args[] = { (void *)&a... };
    CU(cudaLaunchCooperativeKernel((void *)k, grid, block, args, 0, 0));
    CU(cudaDeviceSynchronize());
}
#else
#define RL_KIND MPIX_GPU_CPU
static inline void rl_device(int rank) { (void)rank; }
template <typename T> static inline T *rl_alloc(size_t n) { return (T *)calloc(n + 1, sizeof(T)); }
template <typename... P>
static inline void rl_persistent(void (*k)(P...), dim3 grid, dim3 block, typename std::common_type<P>::type... a)
{
    KUMI_CPU_LAUNCH_THREADS(k, grid, block, (a...));
}
#endif
#endif
