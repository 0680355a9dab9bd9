/* Helpers of the GPU test set (tests/gpu/, ./check.sh --gpu). */
#ifndef GPU_COMMON_H
#define GPU_COMMON_H
#include <mpi.h>
#include <mpi-ext.h>
#include <kumi_gpu.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CU(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: `%s` ", __FILE__, __LINE__, #c); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)
#define MPICHK(call) do { int r_ = (call); CHECK(r_ == MPI_SUCCESS, "%s returned %d", #call, r_); } while (0)

/* One GPU per rank when there are enough, else ranks share. */
static inline void gpu_pick(int rank)
{
    int n = 0;
    CU(cudaGetDeviceCount(&n));
    CU(cudaSetDevice(rank % n));
    CU(cudaFree(0));   /* the primary context, current in this thread */
}

/* Host-mapped (pinned) memory the proxy and the kernel both reach. */
template <typename T> static inline T *mapped(size_t n, T **dev)
{
    T *h;
    CU(cudaHostAlloc((void **)&h, n * sizeof(T) + 1, cudaHostAllocMapped | cudaHostAllocPortable));
    CU(cudaHostGetDevicePointer((void **)dev, h, 0));
    return h;
}
#endif
