/* A ring of device-to-device messages through host MPI calls with device
 * pointers (CUDA-aware MPI: the accel framework stages them through pinned
 * host memory), 0 B to 64 MiB: MPI_Sendrecv, then MPI_Irecv + MPI_Isend
 * (above 4 MiB the payload goes in pieces while it is copied, and the
 * receive copies pieces to the device as they arrive: request/req_accel.c).
 * Then MPI_Iallreduce and MPI_Ibcast on device buffers above 4 MiB (odd
 * sizes): a schedule of pieces with copies between them (mpi/coll_accel.c). */
#include "gpu_common.h"
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gpu_pick(rank);
    CHECK(MPIX_Query_cuda_support() == 1, "MPIX_Query_cuda_support() is 0 on a GPU machine");
    size_t max = 64u << 20;
    unsigned char *dsend, *drecv, *h = (unsigned char *)malloc(max);
    CU(cudaMalloc((void **)&dsend, max));
    CU(cudaMalloc((void **)&drecv, max));
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    for (size_t n = 0; n <= max; n = n ? 2 * n : 1) {
        for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(rank * 31 + i * 7 + n);
        CU(cudaMemcpy(dsend, h, n, cudaMemcpyHostToDevice));
        CU(cudaMemset(drecv, 0xee, n ? n : 1));
        MPI_Status st;
        MPICHK(MPI_Sendrecv(dsend, (int)n, MPI_BYTE, right, 0, drecv, (int)n, MPI_BYTE, left, 0, MPI_COMM_WORLD, &st));
        int cnt = -1;
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        CHECK((size_t)cnt == n, "size %zu: count %d", n, cnt);
        CU(cudaMemcpy(h, drecv, n, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            CHECK(h[i] == (unsigned char)(left * 31 + i * 7 + n), "size %zu: byte %zu is %d", n, i, h[i]);
        CU(cudaMemset(drecv, 0xee, n ? n : 1));
        MPI_Request q[2];
        MPICHK(MPI_Irecv(drecv, (int)n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &q[0]));
        MPICHK(MPI_Isend(dsend, (int)n, MPI_BYTE, right, 1, MPI_COMM_WORLD, &q[1]));
        MPICHK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        CU(cudaMemcpy(h, drecv, n, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            CHECK(h[i] == (unsigned char)(left * 31 + i * 7 + n), "Isend/Irecv size %zu: byte %zu is %d", n, i, h[i]);
        if (rank == 0) printf("gpu_ring: %zu B ok\n", n);
    }
    size_t ni = (9u << 20) / sizeof(int) + 3;          /* non-blocking collectives, in pieces */
    int *hi = (int *)h;
    for (size_t i = 0; i < ni; i++) hi[i] = rank * 1000 + (int)(i % 977);
    CU(cudaMemcpy(dsend, hi, ni * sizeof(int), cudaMemcpyHostToDevice));
    MPI_Request q;
    MPICHK(MPI_Iallreduce(dsend, drecv, (int)ni, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q));
    MPICHK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CU(cudaMemcpy(hi, drecv, ni * sizeof(int), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < ni; i++)
        CHECK(hi[i] == 1000 * size * (size - 1) / 2 + size * (int)(i % 977), "Iallreduce: int %zu is %d", i, hi[i]);
    size_t nb = (9u << 20) + 1;
    for (size_t i = 0; i < nb; i++) h[i] = rank ? 0 : (unsigned char)(i * 13 + 5);
    CU(cudaMemcpy(drecv, h, nb, cudaMemcpyHostToDevice));
    MPICHK(MPI_Ibcast(drecv, (int)nb, MPI_BYTE, 0, MPI_COMM_WORLD, &q));
    MPICHK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CU(cudaMemcpy(h, drecv, nb, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < nb; i++) CHECK(h[i] == (unsigned char)(i * 13 + 5), "Ibcast: byte %zu is %d", i, h[i]);
    if (rank == 0) printf("gpu_ring: MPI_Iallreduce of %zu ints, MPI_Ibcast of %zu B on device buffers ok\n", ni, nb);
    MPI_Finalize();
    return 0;
}
