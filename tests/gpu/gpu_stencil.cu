/* The 1-D three-point stencil with the halo exchange done from inside a
 * persistent (cooperative) kernel: the edge blocks send and receive through
 * kumi_gpu.h; a grid sync separates the steps; checked against a serial CPU
 * reference; a checksum by allreduce from every block.  Twice: the arrays in
 * host-mapped memory, then in device memory (cudaMalloc: the proxy's calls
 * stage the halos). */
#include "gpu_common.h"
#include <cooperative_groups.h>
#include <math.h>
namespace cg = cooperative_groups;

#define SB 8
#define SL 4096
#define ST 100

__global__ void stencil(kumi_gpu_t g, double *u, double *v, int left, int right, double *sums, int *err)
{
    cg::grid_group grid = cg::this_grid();
    int blk = blockIdx.x, n = SB * SL;
    for (int t = 0; t < ST; t++) {
        if (threadIdx.x == 0) {
            kumi_gpu_request r, s;
            int e = 0;
            if (blk == 0) {
                e |= kumi_gpu_irecv(g, blk, &u[0], 1, KUMI_GPU_DOUBLE, left, 2, &r);
                e |= kumi_gpu_isend(g, blk, &u[1], 1, KUMI_GPU_DOUBLE, left, 1, &s);
                e |= kumi_gpu_wait(g, blk, &r, 0) | kumi_gpu_wait(g, blk, &s, 0);
            }
            if (blk == SB - 1) {
                e |= kumi_gpu_irecv(g, blk, &u[n + 1], 1, KUMI_GPU_DOUBLE, right, 1, &r);
                e |= kumi_gpu_isend(g, blk, &u[n], 1, KUMI_GPU_DOUBLE, right, 2, &s);
                e |= kumi_gpu_wait(g, blk, &r, 0) | kumi_gpu_wait(g, blk, &s, 0);
            }
            if (e) atomicOr(err, e);
        }
        grid.sync();
        for (int i = 1 + blk * SL + threadIdx.x; i <= (blk + 1) * SL; i += blockDim.x)
            v[i] = (u[i - 1] + u[i] + u[i + 1]) / 3.0;
        grid.sync();
        double *w = u; u = v; v = w;
    }
    if (threadIdx.x == 0) {
        double s = 0;
        for (int i = 1 + blk * SL; i <= (blk + 1) * SL; i++) s += u[i];
        sums[blk] = s;
        int e = kumi_gpu_allreduce(g, blk, KUMI_GPU_IN_PLACE, &sums[blk], 1, KUMI_GPU_DOUBLE, KUMI_GPU_SUM);
        if (e) atomicOr(err, e);
    }
}

static double init_val(long i) { return (double)((i * 7919) % 1000) / 10.0; }

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gpu_pick(rank);
    int n = SB * SL;
    long N = (long)size * n;
    double *du, *dv, *dsums;
    int *derr;
    double *u = mapped<double>(n + 2, &du), *v = mapped<double>(n + 2, &dv), *sums = mapped<double>(SB, &dsums);
    int *err = mapped<int>(1, &derr);
    double *a = (double *)calloc(N + 2, sizeof(double)), *b = (double *)calloc(N + 2, sizeof(double));
    for (long i = 1; i <= N; i++) a[i] = init_val(i - 1);
    for (int t = 0; t < ST; t++) {
        for (long i = 1; i <= N; i++) b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0;
        double *w = a; a = b; b = w;
    }
    double total = 0;
    for (long i = 1; i <= N; i++) total += a[i];
    int left = rank > 0 ? rank - 1 : KUMI_GPU_PROC_NULL, right = rank < size - 1 ? rank + 1 : KUMI_GPU_PROC_NULL;
    double *devu = NULL, *devv = NULL;
    CU(cudaMalloc((void **)&devu, (n + 2) * sizeof(double)));
    CU(cudaMalloc((void **)&devv, (n + 2) * sizeof(double)));
    for (int mem = 0; mem < 2; mem++) {   /* 0: host-mapped arrays, 1: device memory */
        for (int i = 0; i < n + 2; i++) u[i] = v[i] = 0;
        for (int i = 1; i <= n; i++) u[i] = init_val((long)rank * n + i - 1);
        *err = 0;
        double *ku = du, *kv = dv;
        if (mem) {
            CU(cudaMemcpy(devu, u, (n + 2) * sizeof(double), cudaMemcpyHostToDevice));
            CU(cudaMemcpy(devv, v, (n + 2) * sizeof(double), cudaMemcpyHostToDevice));
            ku = devu;
            kv = devv;
        }
        kumi_gpu_t g;
        MPIX_Gpu p;
        MPICHK(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CUDA, SB, 4, 1024, &g, &p));
        void *args[] = { &g, &ku, &kv, &left, &right, &dsums, &derr };
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        CU(cudaLaunchCooperativeKernel((void *)stencil, SB, 256, args, 0, 0));
        CU(cudaDeviceSynchronize());
        double t1 = MPI_Wtime();
        MPICHK(MPIX_Gpu_stop(&p));
        CHECK(*err == 0, "%s: a device call returned class %d", mem ? "device memory" : "host-mapped", *err);
        double *res = (ST % 2) ? v : u;
        if (mem) CU(cudaMemcpy(res, (ST % 2) ? devv : devu, (n + 2) * sizeof(double), cudaMemcpyDeviceToHost));
        double cs = 0;
        for (int i = 1; i <= n; i++)
            CHECK(res[i] == a[(long)rank * n + i], "%s: point %d: %.17g, reference %.17g",
                  mem ? "device memory" : "host-mapped", i, res[i], a[(long)rank * n + i]);
        for (int b2 = 0; b2 < SB; b2++) cs += sums[b2];
        CHECK(fabs(cs - total) <= 1e-9 * total, "%s: checksum %.17g, reference %.17g",
              mem ? "device memory" : "host-mapped", cs, total);
        if (rank == 0)
            printf("gpu_stencil: %d ranks, %d points, %d steps, arrays in %s: ok (%.1f us per step)\n", size, (int)N, ST,
                   mem ? "device memory" : "host-mapped memory", (t1 - t0) * 1e6 / ST);
    }
    CU(cudaFree(devu));
    CU(cudaFree(devv));
    MPI_Finalize();
    return 0;
}
