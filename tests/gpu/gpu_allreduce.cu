/* Allreduce (and barrier, bcast) from inside a kernel: every block of every
 * rank, several rounds, sum / max / in place. */
#include "gpu_common.h"

#define NB 16
#define ROUNDS 20

__global__ void kern(kumi_gpu_t g, int rank, long long *out, int *err)
{
    int blk = blockIdx.x;
    if (threadIdx.x) return;
    int e = 0;
    for (int r = 0; r < ROUNDS; r++) {
        out[2 * blk] = rank + blk + r;
        e |= kumi_gpu_allreduce(g, blk, KUMI_GPU_IN_PLACE, &out[2 * blk], 1, KUMI_GPU_LONG_LONG, KUMI_GPU_SUM);
        out[2 * blk + 1] = rank;
        e |= kumi_gpu_allreduce(g, blk, KUMI_GPU_IN_PLACE, &out[2 * blk + 1], 1, KUMI_GPU_LONG_LONG, KUMI_GPU_MAX);
        e |= kumi_gpu_barrier(g, blk);
    }
    if (e) atomicOr(err, e);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gpu_pick(rank);
    long long *dout;
    int *derr;
    long long *out = mapped<long long>(2 * NB, &dout);
    int *err = mapped<int>(1, &derr);
    *err = 0;
    kumi_gpu_t g;
    MPIX_Gpu p;
    MPICHK(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CUDA, NB, 4, 256, &g, &p));
    kern<<<NB, 32>>>(g, rank, dout, derr);
    CU(cudaDeviceSynchronize());
    MPICHK(MPIX_Gpu_stop(&p));
    CHECK(*err == 0, "a device call returned class %d", *err);
    for (int b = 0; b < NB; b++) {
        long long want = (long long)size * (b + ROUNDS - 1) + (long long)size * (size - 1) / 2;
        CHECK(out[2 * b] == want, "block %d: sum %lld, expected %lld", b, out[2 * b], want);
        CHECK(out[2 * b + 1] == size - 1, "block %d: max %lld", b, out[2 * b + 1]);
    }
    if (rank == 0) printf("gpu_allreduce: %d ranks x %d blocks: ok\n", size, NB);
    MPI_Finalize();
    return 0;
}
