/* A checkpoint request while a window holds device memory (accel framework,
 * framework/rma/rma_ckpt.c), run by tests/scripts/gpu_ckpt_fakecuda.sh
 * under mpiexec --ckpt with KUMI_ACCEL_CUDA_LIBRARY naming the stand-in for
 * libcuda.so.1.  The window (named "devwin") is MPI_Win_create on device
 * memory (mode "create") or a dynamic window with device memory attached
 * (mode "attach"); every iteration each rank puts into its right neighbour's
 * window in a fence epoch and checks what its left neighbour put, read from
 * the device.  Rank 0 prints "iteration I" on stderr every 10 iterations and
 * "result ok" at the end.  Usage: gpu_ckpt_win create|attach ITERS */
#include "kt_fakecuda.h"
#include <string.h>
#include <unistd.h>

enum { W = 64 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    KT_CHECK(argc > 2 && (!strcmp(argv[1], "create") || !strcmp(argv[1], "attach")),
             "usage: gpu_ckpt_win create|attach ITERS");
    int attach = !strcmp(argv[1], "attach"), iters = atoi(argv[2]);
    kt_cuda_load();
    unsigned long long d;
    KT_CHECK(cuMemAlloc(&d, W * sizeof(int)) == 0);
    int *dw = (int *)(uintptr_t)d;
    int hv[W];
    for (int i = 0; i < W; i++) hv[i] = -1;
    KT_CHECK(cuHtoD(d, hv, sizeof hv) == 0);

    MPI_Win win;
    MPI_Aint disp = 0, rdisp = 0;
    if (attach) {
        KT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        KT_MPI(MPI_Win_attach(win, dw, W * sizeof(int)));
        KT_MPI(MPI_Get_address(dw, &disp));
        KT_MPI(MPI_Sendrecv(&disp, 1, MPI_AINT, left, 0, &rdisp, 1, MPI_AINT, right, 0, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
    } else {
        KT_MPI(MPI_Win_create(dw, W * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    KT_MPI(MPI_Win_set_name(win, "devwin"));
    int src[W];
    for (int it = 0; it < iters; it++) {
        if (rank == 0 && it % 10 == 0) fprintf(stderr, "iteration %d\n", it);
        for (int i = 0; i < W; i++) src[i] = it * 1000 + rank * 100 + i;
        KT_MPI(MPI_Win_fence(0, win));
        KT_MPI(MPI_Put(src, W, MPI_INT, right, attach ? rdisp : 0, W, MPI_INT, win));
        KT_MPI(MPI_Win_fence(0, win));
        KT_CHECK(cuDtoH(hv, d, sizeof hv) == 0);
        for (int i = 0; i < W; i++) KT_EQ_INT(hv[i], it * 1000 + left * 100 + i);
        usleep(2000);
    }
    if (attach) KT_MPI(MPI_Win_detach(win, dw));
    KT_MPI(MPI_Win_free(&win));
    cuMemFree(d);
    if (rank == 0) printf("result ok\n");
    MPI_Finalize();
    return 0;
}
