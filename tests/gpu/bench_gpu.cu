/* make bench-gpu (tests/gpu/run-gpu.sh --bench): at 2 ranks,
 *  1. the round trip of a device-initiated send/receive pair (a persistent
 *     kernel, kumi_gpu.h) against the same exchange written on the host
 *     (cudaMemcpy to the host, MPI_Send / MPI_Recv, cudaMemcpy back), 4 B to
 *     16 MiB.  The device path twice: on host-mapped buffers (the proxy's MPI
 *     calls read and write them directly) and on device memory (cudaMalloc:
 *     the proxy's calls stage it, as the host-written exchange does); and the
 *     exchange with device pointers in the host MPI calls (CUDA-aware: Kumi
 *     stages them, in pieces overlapped with the transfer above 4 MiB);
 *  2. the 1-D three-point stencil's time per step on device memory: halo
 *     exchange from inside a cooperative kernel (blocks 0 and last ask the
 *     proxy; the grid as large as can be resident, shared among the ranks of
 *     one GPU) against one kernel launch per step with the halos exchanged
 *     by MPI_Sendrecv on device pointers; both results compared bit for bit.
 * Prints one line per size and, last, the targets (issue 24): at most 5 us
 * more per message than host MPI + copy; the stencil within 2 % for large
 * arrays.  run-gpu.sh builds this file through kumi-gpucc --relaunch (which
 * keeps the kernels and adds their split forms, defining
 * KUMI_GPUCC_RELAUNCH): then the same measures are made with the relaunched
 * kernels too (the relaunch path of the GPU-embedded MPI framework: the
 * kernel returns at each wait, the host serves the request and launches it
 * again).  KUMI_BENCH_GPU_SMALL=1: messages up to 256 KiB, 5 iterations, the
 * stencil at 64 K points (the CPU run of tests/scripts/gpu_testset_cpu.sh). */
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

/* blocks 0 and gridDim.x - 1 exchange the halos (communication blocks 0 and 1) */
__global__ void st_persistent(kumi_gpu_t g, double *u, double *v, long long n, int left, int right, int steps)
{
    cg::grid_group grid = cg::this_grid();
    int blk = blockIdx.x, last = (int)gridDim.x - 1;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (int t = 0; t < steps; t++) {
        if (threadIdx.x == 0 && (blk == 0 || blk == last)) {
            kumi_gpu_request r, s;
            int lo = blk == 0, cb = blk == 0 ? 0 : 1;
            kumi_gpu_irecv(g, cb, lo ? &u[0] : &u[n + 1], 1, KUMI_GPU_DOUBLE, lo ? left : right, lo ? 2 : 1, &r);
            kumi_gpu_isend(g, cb, lo ? &u[1] : &u[n], 1, KUMI_GPU_DOUBLE, lo ? left : right, lo ? 1 : 2, &s);
            kumi_gpu_wait(g, cb, &r, 0);
            kumi_gpu_wait(g, cb, &s, 0);
        }
        grid.sync();
        for (long long i = 1 + (long long)blk * blockDim.x + threadIdx.x; i <= n; i += stride)
            v[i] = (u[i - 1] + u[i] + u[i + 1]) / 3.0;
        grid.sync();
        double *w = u;
        u = v;
        v = w;
    }
}
__global__ void st_step(const double *u, double *v, long long n)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = 1 + (long long)blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += stride)
        v[i] = (u[i - 1] + u[i] + u[i + 1]) / 3.0;
}
__global__ void st_init(double *u, double *v, long long n, long long first)
{
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i <= n + 1; i += stride) {
        u[i] = i == 0 || i == n + 1 ? 0.0 : (double)(((first + i - 1) * 7919) % 1000) / 10.0;
        v[i] = 0.0;
    }
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
    int small = getenv("KUMI_BENCH_GPU_SMALL") && atoi(getenv("KUMI_BENCH_GPU_SMALL")) > 0;
    size_t max = small ? 256u << 10 : 16u << 20;
    char *dmap, *map = mapped<char>(max, &dmap), *dbuf, *host = (char *)malloc(max);
    (void)map;
    int *derr, *err = mapped<int>(1, &derr);
    CU(cudaMalloc((void **)&dbuf, max));
    CU(cudaMemset(dbuf, 0, max));
    kumi_gpu_t g;
    MPIX_Gpu p;
    MPICHK(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CUDA, 2, 4, 1024, &g, &p));
    if (rank == 0)
        printf("# size_B  device_us  devmem_us  host_us  cudaaware_us  relaunch_us  (round trip / 2; device: host-mapped "
               "buffer, devmem: cudaMalloc; device-side messages of <= %u B in the completion records)\n", g.inl);
    double worst_map = -1e9, worst_dev = -1e9;
    for (size_t n = 4; n <= max; n *= 4) {
        int iters = small ? 5 : n <= 65536 ? 200 : 20;
        double tdev[2];
        for (int mem = 0; mem < 2; mem++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            pingpong<<<1, 32>>>(g, mem ? dbuf : dmap, (long long)n, peer, iters, rank == 0, derr);
            CU(cudaDeviceSynchronize());
            tdev[mem] = (MPI_Wtime() - t0) / iters / 2;
            CHECK(*err == 0, "device pingpong (%s): class %d", mem ? "device memory" : "host-mapped", *err);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
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
        if (tdev[0] - thost > worst_map) worst_map = tdev[0] - thost;
        if (tdev[1] - thost > worst_dev) worst_dev = tdev[1] - thost;
        if (rank == 0)
            printf("%9zu  %9.2f  %9.2f  %7.2f  %12.2f  %11.2f\n", n, tdev[0] * 1e6, tdev[1] * 1e6, thost * 1e6, tca * 1e6,
                   trel * 1e6);
    }
    MPICHK(MPIX_Gpu_stop(&p));
    if (rank == 0)
        printf("# target 1 (<= 5 us more per message than host MPI + cudaMemcpy, worst size): host-mapped %+.2f us, "
               "device memory %+.2f us\n", worst_map * 1e6, worst_dev * 1e6);

    /* 2. the stencil: the cooperative grid as large as can be resident, shared by this GPU's ranks */
    MPI_Comm node;
    int nlocal = 1, ndev = 1, sms = 1, bpsm = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nlocal);
    CU(cudaGetDeviceCount(&ndev));
    int dev = 0;
    CU(cudaGetDevice(&dev));
    CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bpsm, st_persistent, 256, 0));
    int share = (nlocal + ndev - 1) / ndev, nblk = bpsm * sms / (share > 0 ? share : 1);
    if (nblk < 2) nblk = 2;
    int left = rank == 0 ? KUMI_GPU_PROC_NULL : 0, right = rank == 0 ? 1 : KUMI_GPU_PROC_NULL;
    int l = left == KUMI_GPU_PROC_NULL ? MPI_PROC_NULL : left, r = right == KUMI_GPU_PROC_NULL ? MPI_PROC_NULL : right;
    double worst_st = -1e9;
    long long worst_n = 0;
    for (long long n = small ? 1 << 16 : 1 << 20; n <= (small ? 1 << 16 : 1 << 26); n *= 8) {
        int steps = small ? 9 : n <= (1 << 20) ? 400 : n <= (1 << 23) ? 100 : 40;
        double *u = NULL, *v = NULL, *res = NULL;
        CU(cudaMalloc((void **)&u, (n + 2) * sizeof(double)));
        CU(cudaMalloc((void **)&v, (n + 2) * sizeof(double)));
        CU(cudaMalloc((void **)&res, (n + 2) * sizeof(double)));
        /* device-side MPI */
        st_init<<<nblk, 256>>>(u, v, n, (long long)rank * n);
        CU(cudaDeviceSynchronize());
        MPICHK(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CUDA, 2, 4, 64, &g, &p));
        void *args[] = { &g, &u, &v, &n, &left, &right, &steps };
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        CU(cudaLaunchCooperativeKernel((void *)st_persistent, nblk, 256, args, 0, 0));
        CU(cudaDeviceSynchronize());
        double tp = (MPI_Wtime() - t0) / steps;
        MPICHK(MPIX_Gpu_stop(&p));
        CU(cudaMemcpy(res, steps % 2 ? v : u, (n + 2) * sizeof(double), cudaMemcpyDeviceToDevice));
        /* host-side MPI: a launch per step, halos by MPI_Sendrecv on device pointers */
        st_init<<<nblk, 256>>>(u, v, n, (long long)rank * n);
        CU(cudaDeviceSynchronize());
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        double *a = u, *b = v;
        for (int t = 0; t < steps; t++) {
            MPI_Sendrecv(&a[1], 1, MPI_DOUBLE, l, 1, &a[n + 1], 1, MPI_DOUBLE, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Sendrecv(&a[n], 1, MPI_DOUBLE, r, 2, &a[0], 1, MPI_DOUBLE, l, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            st_step<<<nblk, 256>>>(a, b, n);
            CU(cudaStreamSynchronize(0));
            double *w = a;
            a = b;
            b = w;
        }
        double th = (MPI_Wtime() - t0) / steps;
        /* the two results, bit for bit (interior points; the halos differ in when they were written) */
        double *hp = (double *)malloc((n + 2) * sizeof(double)), *hh = (double *)malloc((n + 2) * sizeof(double));
        CU(cudaMemcpy(hp, res, (n + 2) * sizeof(double), cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(hh, a, (n + 2) * sizeof(double), cudaMemcpyDeviceToHost));
        CHECK(!memcmp(hp + 1, hh + 1, n * sizeof(double)), "stencil of %lld points: device-side and host-side results differ",
              n);
        double tr = 0;
#ifdef KUMI_GPUCC_RELAUNCH
        st_init<<<nblk, 256>>>(u, v, n, (long long)rank * n);
        CU(cudaDeviceSynchronize());
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        MPICHK(st_persistent_relaunch(MPI_COMM_WORLD, nblk, 256, 0, u, v, n, left, right, steps));
        tr = (MPI_Wtime() - t0) / steps;
        CU(cudaMemcpy(hp, steps % 2 ? v : u, (n + 2) * sizeof(double), cudaMemcpyDeviceToHost));
        CHECK(!memcmp(hp + 1, hh + 1, n * sizeof(double)), "stencil of %lld points: relaunched and host-side results differ",
              n);
#endif
        free(hp);
        free(hh);
        double d = (tp - th) / th * 100;
        if (n >= (1 << 23) && d > worst_st) { worst_st = d; worst_n = n; }
        if (rank == 0)
            printf("# stencil %lld points per rank, grid %d x 256, %d steps: device-side MPI %.1f us/step, host-side %.1f "
                   "us/step (%+.1f %%), relaunched %.1f us/step\n", n, nblk, steps, tp * 1e6, th * 1e6, d, tr * 1e6);
        CU(cudaFree(u));
        CU(cudaFree(v));
        CU(cudaFree(res));
    }
    if (rank == 0 && worst_n)
        printf("# target 2 (stencil within 2 %% of host-side for large arrays, >= 8 M points): worst %+.1f %% (%lld points)\n",
               worst_st, worst_n);
    else if (rank == 0)
        printf("# target 2 (stencil within 2 %% of host-side for large arrays): no array of 8 M points or more in this run\n");
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
