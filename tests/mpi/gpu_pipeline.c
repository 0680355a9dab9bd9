/* Pipelined staging of large device buffers (core/accel.c: chunks through
 * pinned slots with asynchronous copies and events), run by
 * tests/scripts/gpu_fakecuda.sh with the stand-in driver, whose asynchronous
 * copies happen only when an event is waited for or queried: a staging
 * that used a slot before its copy was done would move stale bytes.
 * Argument: the chunk size the job runs with (kumi_base_accel_chunk).  A ring
 * of messages at sizes around multiples of the chunk above the 4 MiB that
 * are staged in pinned memory at once, device to device (blocking and
 * non-blocking), device to host and host to device; every byte checked. */
#include "kt_fakecuda.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(argc > 1, "usage: gpu_pipeline CHUNK");
    size_t c = (size_t)atol(argv[1]);
    KT_CHECK(c > 0);
    kt_cuda_load();
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    size_t k0 = ((4u << 20) + c - 1) / c + 1;   /* first multiple of c above 4 MiB (+1) */
    size_t sizes[] = { k0 * c - 1, k0 * c, k0 * c + 1, (k0 + 3) * c + c / 2, (k0 + 4) * c - 7 };
    size_t max = (k0 + 4) * c + 8;
    unsigned char *hs = malloc(max), *hr = malloc(max);
    unsigned long long ds, dr;
    KT_CHECK(cuMemAlloc(&ds, max) == 0 && cuMemAlloc(&dr, max) == 0);
    KT_CHECK(hs && hr);
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        size_t n = sizes[z];
        for (int way = 0; way < 4; way++) {
            for (size_t i = 0; i < n + 8; i++) hs[i] = kt_pat(rank, i, n, way);
            KT_CHECK(cuHtoD(ds, hs, n + 8) == 0);
            memset(hr, 0xa5, n + 8);
            KT_CHECK(cuHtoD(dr, hr, n + 8) == 0);
            void *sb = way == 3 ? (void *)hs : (void *)(uintptr_t)ds;
            void *rb = way == 2 ? (void *)hr : (void *)(uintptr_t)dr;
            if (way == 1) {
                MPI_Request q[2];
                KT_MPI(MPI_Irecv(rb, (int)n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &q[0]));
                KT_MPI(MPI_Isend(sb, (int)n, MPI_BYTE, right, 1, MPI_COMM_WORLD, &q[1]));
                KT_MPI(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
            } else {
                KT_MPI(MPI_Sendrecv(sb, (int)n, MPI_BYTE, right, 2, rb, (int)n, MPI_BYTE, left, 2, MPI_COMM_WORLD,
                                    MPI_STATUS_IGNORE));
            }
            if (way != 2) KT_CHECK(cuDtoH(hr, dr, n + 8) == 0);
            for (size_t i = 0; i < n; i++)
                if (hr[i] != kt_pat(left, i, n, way))
                    KT_FAIL("size %zu (chunk %zu) way %d: byte %zu is %#x, expected %#x", n, c, way, i, hr[i],
                            kt_pat(left, i, n, way));
            for (size_t i = n; i < n + 8; i++)
                if (hr[i] != 0xa5) KT_FAIL("size %zu way %d: byte %zu past the message was written", n, way, i);
        }
    }
    cuMemFree(ds);
    cuMemFree(dr);
    free(hs);
    free(hr);
    if (rank == 0) printf("gpu_pipeline: %d ranks, chunk %zu: ok\n", size, c);
    MPI_Finalize();
    return 0;
}
