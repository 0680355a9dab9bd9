/* make bench-gpu (tests/gpu/run-gpu.sh --bench): at 2 ranks,
 *  1. the round trip of a device-initiated send/receive pair (a persistent
 *     kernel, kumi_gpu.h) against the same exchange written on the host
 *     (cudaMemcpy to the host, MPI_Send / MPI_Recv, cudaMemcpy back), 4 B to
 *     16 MiB; the device path works on host-mapped buffers; and the same
 *     exchange with device pointers in the host MPI calls (CUDA-aware: Kumi
 *     stages them, in pieces overlapped with the transfer above 4 MiB);
 *  2. the stencil's time per step: halo exchange from inside a cooperative
 *     kernel against one kernel launch per step with the exchange on the host.
 * Prints one line per size; the targets (issue 24): at most 5 us more per
 * message than host MPI + copy; the stencil within 2 % for large arrays.
 * run-gpu.sh builds this file through kumi-gpucc --relaunch (which keeps the
 * kernels and adds their split forms, defining KUMI_GPUCC_RELAUNCH): then the
 * same two measures are made with the relaunched kernels too (the relaunch
 * path of the GPU-embedded MPI framework: the kernel returns at each wait,
 * the host serves the request and launches it again). */
#include "gpu_common.h"
#include <cooperative_groups.h>
#include <string.h>
namespace cg = cooperative_groups;

__global__ void pingpong(kumi_gpu_t g, char *buf, long long n, int peer, int iters, int first, int *err)
{
    if (threadIdx.x || blockIdx.x) return;
    int e = 0;
    for (int i = 0; i < iters; i++) {
        if (first) {
            e |= kumi_gpu_send(g, 0, buf, n, KUMI_GPU_BYTE, peer, 0);
            e |= kumi_gpu_recv(g, 0, buf, n, KUMI_GPU_BYTE, peer, 0, 0);
        } else {
            e |= kumi_gpu_recv(g, 0, buf, n, KUMI_GPU_BYTE, peer, 0, 0);
            e |= kumi_gpu_send(g, 0, buf, n, KUMI_GPU_BYTE, peer, 0);
        }
    }
    *err = e;
}

#define SB 16
__global__ void st_persistent(kumi_gpu_t g, double *u, double *v, int per, int left, int right, int steps)
{
    cg::grid_group grid = cg::this_grid();
    int blk = blockIdx.x, n = SB * per;
    for (int t = 0; t < steps; t++) {
        if (threadIdx.x == 0 && (blk == 0 || blk == SB - 1)) {
            kumi_gpu_request r, s;
            int lo = blk == 0;
            kumi_gpu_irecv(g, blk, lo ? &u[0] : &u[n + 1], 1, KUMI_GPU_DOUBLE, lo ? left : right, lo ? 2 : 1, &r);
            kumi_gpu_isend(g, blk, lo ? &u[1] : &u[n], 1, KUMI_GPU_DOUBLE, lo ? left : right, lo ? 1 : 2, &s);
            kumi_gpu_wait(g, blk, &r, 0);
            kumi_gpu_wait(g, blk, &s, 0);
        }
        grid.sync();
        for (int i = 1 + blk * per + threadIdx.x; i <= (blk + 1) * per; i += blockDim.x)
            v[i] = (u[i - 1] + u[i] + u[i + 1]) / 3.0;
        grid.sync();
        double *w = u; u = v; v = w;
    }
}
__global__ void st_step(const double *u, double *v, int n)
{
    for (int i = 1 + blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += gridDim.x * blockDim.x)
        v[i] = (u[i - 1] + u[i] + u[i + 1]) / 3.0;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "run at 2 ranks");
    gpu_pick(rank);
    int peer = 1 - rank;
    size_t max = 16u << 20;
    char *dmap, *map = mapped<char>(max, &dmap), *dbuf, *host = (char *)malloc(max);
    int *derr, *err = mapped<int>(1, &derr);
    CU(cudaMalloc((void **)&dbuf, max));
    kumi_gpu_t g;
    MPIX_Gpu p;
    MPICHK(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CUDA, SB, 4, 1024, &g, &p));
    if (rank == 0) printf("# size_B  device_us  host_us  cudaaware_us  relaunch_us  (round trip / 2)\n");
    for (size_t n = 4; n <= max; n *= 4) {
        int iters = n <= 65536 ? 200 : 20;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        pingpong<<<1, 32>>>(g, dmap, (long long)n, peer, iters, rank == 0, derr);
        CU(cudaDeviceSynchronize());
        double tdev = (MPI_Wtime() - t0) / iters / 2;
        CHECK(*err == 0, "device pingpong: class %d", *err);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (rank == 0) {
                CU(cudaMemcpy(host, dbuf, n, cudaMemcpyDeviceToHost));
                MPI_Send(host, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                MPI_Recv(host, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CU(cudaMemcpy(dbuf, host, n, cudaMemcpyHostToDevice));
            } else {
                MPI_Recv(host, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CU(cudaMemcpy(dbuf, host, n, cudaMemcpyHostToDevice));
                CU(cudaMemcpy(host, dbuf, n, cudaMemcpyDeviceToHost));
                MPI_Send(host, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            }
        }
        double thost = (MPI_Wtime() - t0) / iters / 2, trel = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (rank == 0) {
                MPI_Send(dbuf, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                MPI_Recv(dbuf, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(dbuf, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(dbuf, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            }
        }
        double tca = (MPI_Wtime() - t0) / iters / 2;
#ifdef KUMI_GPUCC_RELAUNCH
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        MPICHK(pingpong_relaunch(MPI_COMM_WORLD, 1, 32, 0, dmap, (long long)n, peer, iters, rank == 0, derr));
        trel = (MPI_Wtime() - t0) / iters / 2;
        CHECK(*err == 0, "relaunched pingpong: class %d", *err);
#endif
        if (rank == 0) printf("%9zu  %9.2f  %7.2f  %12.2f  %11.2f\n", n, tdev * 1e6, thost * 1e6, tca * 1e6, trel * 1e6);
    }
    /* stencil, per step */
    int per = 1 << 16, n = SB * per, steps = 200;
    double *u, *v;
    CU(cudaMallocManaged((void **)&u, (n + 2) * sizeof(double)));
    CU(cudaMallocManaged((void **)&v, (n + 2) * sizeof(double)));
    memset(u, 0, (n + 2) * sizeof(double));
    memset(v, 0, (n + 2) * sizeof(double));
    int left = rank == 0 ? KUMI_GPU_PROC_NULL : 0, right = rank == 0 ? 1 : KUMI_GPU_PROC_NULL;
    void *args[] = { &g, &u, &v, &per, &left, &right, &steps };
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    CU(cudaLaunchCooperativeKernel((void *)st_persistent, SB, 256, args, 0, 0));
    CU(cudaDeviceSynchronize());
    double tp = (MPI_Wtime() - t0) / steps;
    MPICHK(MPIX_Gpu_stop(&p));
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int t = 0; t < steps; t++) {
        int l = left == KUMI_GPU_PROC_NULL ? MPI_PROC_NULL : left, r = right == KUMI_GPU_PROC_NULL ? MPI_PROC_NULL : right;
        MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, l, 1, &u[n + 1], 1, MPI_DOUBLE, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[n], 1, MPI_DOUBLE, r, 2, &u[0], 1, MPI_DOUBLE, l, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        st_step<<<SB * 8, 256>>>(u, v, n);
        CU(cudaDeviceSynchronize());
        double *w = u; u = v; v = w;
    }
    double th = (MPI_Wtime() - t0) / steps;
    if (rank == 0) printf("# stencil %d points per rank: device-side MPI %.1f us/step, host-side %.1f us/step (%+.1f %%)\n",
                          n, tp * 1e6, th * 1e6, (tp - th) / th * 100);
#ifdef KUMI_GPUCC_RELAUNCH
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPICHK(st_persistent_relaunch(MPI_COMM_WORLD, SB, 256, 0, u, v, per, left, right, steps));
    double tr = (MPI_Wtime() - t0) / steps;
    if (rank == 0) printf("# stencil relaunched (kumi-gpucc --relaunch): %.1f us/step (%+.1f %% against host-side)\n",
                          tr * 1e6, (tr - th) / th * 100);
#endif
    MPI_Finalize();
    return 0;
}
