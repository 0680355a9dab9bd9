/* RMA with device memory through host MPI calls (framework/rma/rma_accel.c):
 * a window on cudaMalloc memory (MPI_WIN_SEPARATE), written by a kernel
 * (local stores into the private copy) and by the neighbour's MPI_Put /
 * MPI_Accumulate from device buffers, read with MPI_Get into a device
 * buffer; fence and lock epochs; values checked on the host. */
#include "gpu_common.h"

__global__ void fill(int *w, int n, int v)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) w[i] = v + i;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gpu_pick(rank);
    const int n = 1 << 20;                      /* 4 MiB of ints: the merges go through the pipeline */
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    int *dw, *dsrc, *dres, *h = (int *)malloc(n * sizeof(int));
    CU(cudaMalloc((void **)&dw, n * sizeof(int)));
    CU(cudaMalloc((void **)&dsrc, 1024 * sizeof(int)));
    CU(cudaMalloc((void **)&dres, 1024 * sizeof(int)));
    fill<<<64, 256>>>(dw, n, rank * 10000000);
    CU(cudaDeviceSynchronize());
    MPI_Win win;
    MPICHK(MPI_Win_create(dw, (MPI_Aint)n * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    int *model, flag;
    MPICHK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && *model == MPI_WIN_SEPARATE, "MPI_WIN_MODEL is not MPI_WIN_SEPARATE");
    MPICHK(MPI_Win_fence(0, win));
    fill<<<4, 256>>>(dsrc, 1024, 7000000 + rank);
    CU(cudaDeviceSynchronize());
    MPICHK(MPI_Put(dsrc, 1024, MPI_INT, right, 4096, 1024, MPI_INT, win));
    MPICHK(MPI_Accumulate(dsrc, 1024, MPI_INT, right, 8192, 1024, MPI_INT, MPI_SUM, win));
    MPICHK(MPI_Get(dres, 1024, MPI_INT, right, n - 1024, 1024, MPI_INT, win));
    MPICHK(MPI_Win_fence(0, win));
    CU(cudaMemcpy(h, dres, 1024 * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 1024; i++) CHECK(h[i] == right * 10000000 + n - 1024 + i, "Get: %d is %d", i, h[i]);
    CU(cudaMemcpy(h, dw, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 1024; i++) {
        CHECK(h[4096 + i] == 7000000 + left + i, "Put: %d is %d", i, h[4096 + i]);
        CHECK(h[8192 + i] == rank * 10000000 + 8192 + i + 7000000 + left + i, "Accumulate: %d is %d", i, h[8192 + i]);
    }
    /* a kernel stores into the window; the neighbour reads it after the fence */
    fill<<<4, 256>>>(dw + 16384, 1024, -5000000 - rank);
    CU(cudaDeviceSynchronize());
    MPICHK(MPI_Win_fence(0, win));
    MPICHK(MPI_Get(dres, 1024, MPI_INT, right, 16384, 1024, MPI_INT, win));
    MPICHK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CU(cudaMemcpy(h, dres, 1024 * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 1024; i++) CHECK(h[i] == -5000000 - right + i, "kernel store: %d is %d", i, h[i]);
    /* passive target: the target sees the update after locking its own window */
    MPICHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MPICHK(MPI_Put(dsrc, 16, MPI_INT, right, 32768, 16, MPI_INT, win));
    MPICHK(MPI_Win_unlock(right, win));
    MPI_Barrier(MPI_COMM_WORLD);
    MPICHK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    CU(cudaMemcpy(h, dw + 32768, 16 * sizeof(int), cudaMemcpyDeviceToHost));
    MPICHK(MPI_Win_unlock(rank, win));
    for (int i = 0; i < 16; i++) CHECK(h[i] == 7000000 + left + i, "lock Put: %d is %d", i, h[i]);
    MPICHK(MPI_Win_free(&win));
    if (rank == 0) printf("gpu_rma: %d ranks ok\n", size);
    CU(cudaFree(dw));
    CU(cudaFree(dsrc));
    CU(cudaFree(dres));
    free(h);
    MPI_Finalize();
    return 0;
}
