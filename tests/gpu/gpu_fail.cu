/* A kernel that fails mid-way: block 3 reports MPI_ERR_INTERN after some
 * rounds and stops; the others finish their rounds.  The failure reaches the
 * host (MPIX_Gpu_stop returns it), and the job ends cleanly. */
#include "gpu_common.h"

#define NB 8

__global__ void kern(kumi_gpu_t g, int *done)
{
    int blk = blockIdx.x;
    if (threadIdx.x) return;
    for (int r = 0; r < 10; r++) {
        if (blk == 3 && r == 4) { kumi_gpu_fail(g, blk, MPI_ERR_INTERN); return; }
        if (blk != 3) kumi_gpu_barrier(g, blk);
    }
    atomicAdd(done, 1);
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    gpu_pick(rank);
    int *ddone, *done = mapped<int>(1, &ddone);
    *done = 0;
    kumi_gpu_t g;
    MPIX_Gpu p;
    MPICHK(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CUDA, NB, 4, 64, &g, &p));
    kern<<<NB, 32>>>(g, ddone);
    CU(cudaDeviceSynchronize());
    int rc = MPIX_Gpu_stop(&p), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_INTERN, "MPIX_Gpu_stop returned class %d, expected MPI_ERR_INTERN", cls);
    CHECK(*done == NB - 1, "%d blocks finished", *done);
    char s[MPI_MAX_ERROR_STRING];
    int l = 0;
    MPI_Error_string(rc, s, &l);
    if (rank == 0) printf("gpu_fail: the failure reached the host: %s\n", s);
    MPI_Finalize();
    return 0;
}
