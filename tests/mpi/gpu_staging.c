/* Device buffers in host MPI calls (CUDA-aware MPI, accel framework), run by
 * tests/scripts/gpu_fakecuda.sh with KUMI_ACCEL_CUDA_LIBRARY naming a
 * stand-in for libcuda.so.1 whose device memory the host cannot touch: a
 * call that reads or writes a device buffer without staging it crashes.
 *  - MPIX_Query_cuda_support() is 1;
 *  - a ring of device-to-device messages 0 B .. 6 MiB (MPI_Send / MPI_Recv by
 *    parity, and MPI_Sendrecv);
 *  - a shorter message leaves the rest of the device buffer alone; a vector
 *    type leaves its gaps alone; MPI_Sendrecv_replace on a device buffer;
 *  - device to host and host to device;
 *  - MPI_Isend / MPI_Irecv on device buffers (Waitall, Test, Wait; a vector
 *    type; 5 MiB);
 *  - MPI_Isendrecv(_replace), MPI_Mrecv, MPI_Imrecv on device buffers;
 *  - persistent requests on device buffers, started three times (new data each time);
 *  - RMA: a window on device memory (one rank's), device origin and result buffers;
 *  - MPIX_Gpu_start with MPIX_GPU_CUDA allocates through the component. */
#include "kt_fakecuda.h"
#include <mpi-ext.h>
#include <kumi_gpu.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    kt_cuda_load();
    KT_EQ_INT(MPIX_Query_cuda_support(), 1);

    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    size_t max = 6u << 20;
    unsigned char *hs = malloc(max), *hr = malloc(max);
    unsigned char *ds = kt_dalloc(max), *dr = kt_dalloc(max);
    for (size_t n = 0; n <= max; n = n ? (n * 4 > max && n < max ? max : n * 4) : 1) {
        for (int way = 0; way < 2; way++) {
            for (size_t i = 0; i < n; i++) hs[i] = (unsigned char)(rank * 31 + i * 7 + n + way);
            kt_to_dev(ds, hs, n);
            MPI_Status st;
            if (way == 0) {
                if (rank % 2 == 0) {
                    KT_MPI(MPI_Send(ds, (int)n, MPI_BYTE, right, 1, MPI_COMM_WORLD));
                    KT_MPI(MPI_Recv(dr, (int)n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &st));
                } else {
                    KT_MPI(MPI_Recv(dr, (int)n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &st));
                    KT_MPI(MPI_Send(ds, (int)n, MPI_BYTE, right, 1, MPI_COMM_WORLD));
                }
            } else {
                KT_MPI(MPI_Sendrecv(ds, (int)n, MPI_BYTE, right, 2, dr, (int)n, MPI_BYTE, left, 2, MPI_COMM_WORLD, &st));
            }
            int cnt = -1;
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            KT_EQ_INT(cnt, n);
            KT_EQ_INT(st.MPI_SOURCE, left);
            kt_to_host(hr, dr, n);
            for (size_t i = 0; i < n; i++)
                if (hr[i] != (unsigned char)(left * 31 + i * 7 + n + way))
                    KT_FAIL("size %zu way %d: byte %zu is %d", n, way, i, hr[i]);
        }
        if (n == max) break;
    }

    /* a shorter message: the rest of the device buffer keeps its bytes */
    memset(hr, 0x5a, 64);
    kt_to_dev(dr, hr, 64);
    int v[16];
    for (int i = 0; i < 16; i++) v[i] = rank * 100 + i;
    kt_to_dev(ds, v, sizeof v);
    KT_MPI(MPI_Sendrecv(ds, 4, MPI_INT, right, 3, dr, 16, MPI_INT, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int got[16];
    kt_to_host(got, dr, sizeof got);
    for (int i = 0; i < 4; i++) KT_EQ_INT(got[i], left * 100 + i);
    for (int i = 4 * 4; i < 64; i++) KT_EQ_INT(((unsigned char *)got)[i], 0x5a);

    /* a vector type: the gaps keep their bytes */
    MPI_Datatype vec;
    KT_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
    KT_MPI(MPI_Type_commit(&vec));
    int pat[8];
    for (int i = 0; i < 8; i++) pat[i] = -1 - i;
    kt_to_dev(dr, pat, sizeof pat);
    KT_MPI(MPI_Sendrecv(ds, 1, vec, right, 4, dr, 1, vec, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    kt_to_host(got, dr, 8 * sizeof(int));
    for (int i = 0; i < 8; i++) KT_EQ_INT(got[i], i % 2 ? -1 - i : left * 100 + i);
    MPI_Type_free(&vec);

    /* MPI_Sendrecv_replace on a device buffer */
    kt_to_dev(ds, v, sizeof v);
    KT_MPI(MPI_Sendrecv_replace(ds, 16, MPI_INT, right, 5, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    kt_to_host(got, ds, sizeof got);
    for (int i = 0; i < 16; i++) KT_EQ_INT(got[i], left * 100 + i);

    /* device -> host and host -> device */
    kt_to_dev(ds, v, sizeof v);
    KT_MPI(MPI_Sendrecv(ds, 16, MPI_INT, right, 6, got, 16, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 16; i++) KT_EQ_INT(got[i], left * 100 + i);
    KT_MPI(MPI_Sendrecv(v, 16, MPI_INT, right, 7, dr, 16, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    kt_to_host(got, dr, sizeof got);
    for (int i = 0; i < 16; i++) KT_EQ_INT(got[i], left * 100 + i);

    /* non-blocking: MPI_Irecv / MPI_Isend on device buffers, completed by Waitall, Test, Wait;
     * a vector receive keeps its gaps; a large one too (rendezvous) */
    for (int round = 0; round < 3; round++) {
        size_t n = round == 2 ? (5u << 20) : 4096;
        MPI_Request q[2];
        for (size_t i = 0; i < n; i++) hs[i] = (unsigned char)(rank + i * 3 + round);
        kt_to_dev(ds, hs, n);
        memset(hr, 0x77, n);
        kt_to_dev(dr, hr, n);
        KT_MPI(MPI_Irecv(dr, (int)n, MPI_BYTE, left, 9, MPI_COMM_WORLD, &q[0]));
        KT_MPI(MPI_Isend(ds, (int)n, MPI_BYTE, right, 9, MPI_COMM_WORLD, &q[1]));
        if (round == 0) KT_MPI(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        else {
            int flag = 0;
            while (!flag) KT_MPI(MPI_Test(&q[0], &flag, MPI_STATUS_IGNORE));
            KT_MPI(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
        }
        kt_to_host(hr, dr, n);
        for (size_t i = 0; i < n; i++)
            if (hr[i] != (unsigned char)(left + i * 3 + round)) KT_FAIL("irecv round %d: byte %zu is %d", round, i, hr[i]);
    }
    KT_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
    KT_MPI(MPI_Type_commit(&vec));
    kt_to_dev(ds, v, sizeof v);
    kt_to_dev(dr, pat, sizeof pat);
    MPI_Request q2[2];
    KT_MPI(MPI_Irecv(dr, 1, vec, left, 10, MPI_COMM_WORLD, &q2[0]));
    KT_MPI(MPI_Isend(ds, 1, vec, right, 10, MPI_COMM_WORLD, &q2[1]));
    KT_MPI(MPI_Waitall(2, q2, MPI_STATUSES_IGNORE));
    kt_to_host(got, dr, 8 * sizeof(int));
    for (int i = 0; i < 8; i++) KT_EQ_INT(got[i], i % 2 ? -1 - i : left * 100 + i);
    MPI_Type_free(&vec);

    /* MPI_Isendrecv, MPI_Isendrecv_replace, MPI_Mrecv, MPI_Imrecv on device buffers */
    MPI_Request rq;
    kt_to_dev(ds, v, sizeof v);
    kt_to_dev(dr, pat, sizeof pat);
    KT_MPI(MPI_Isendrecv(ds, 4, MPI_INT, right, 11, dr, 4, MPI_INT, left, 11, MPI_COMM_WORLD, &rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    kt_to_host(got, dr, 8 * sizeof(int));
    for (int i = 0; i < 8; i++) KT_EQ_INT(got[i], i < 4 ? left * 100 + i : pat[i]);
    kt_to_dev(ds, v, sizeof v);
    KT_MPI(MPI_Isendrecv_replace(ds, 16, MPI_INT, right, 12, left, 12, MPI_COMM_WORLD, &rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    kt_to_host(got, ds, sizeof got);
    for (int i = 0; i < 16; i++) KT_EQ_INT(got[i], left * 100 + i);
    for (int form = 0; form < 2; form++) {
        MPI_Message msg;
        MPI_Status mst;
        kt_to_dev(ds, v, sizeof v);
        kt_to_dev(dr, pat, sizeof pat);
        KT_MPI(MPI_Isend(ds, 6, MPI_INT, right, 13, MPI_COMM_WORLD, &rq));
        KT_MPI(MPI_Mprobe(left, 13, MPI_COMM_WORLD, &msg, &mst));
        if (form == 0) KT_MPI(MPI_Mrecv(dr, 6, MPI_INT, &msg, &mst));
        else {
            MPI_Request rr;
            KT_MPI(MPI_Imrecv(dr, 6, MPI_INT, &msg, &rr));
            KT_MPI(MPI_Wait(&rr, &mst));
        }
        KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        int c = -1;
        MPI_Get_count(&mst, MPI_INT, &c);
        KT_EQ_INT(c, 6);
        kt_to_host(got, dr, 8 * sizeof(int));
        for (int i = 0; i < 8; i++) KT_EQ_INT(got[i], i < 6 ? left * 100 + i : pat[i]);
    }

    /* persistent requests on device buffers: each start sends what the device
     * holds then, each completion writes the device (a shorter message leaves
     * the rest; a vector receive its gaps) */
    MPI_Request pq[4];
    KT_MPI(MPI_Send_init(ds, 4, MPI_INT, right, 8, MPI_COMM_WORLD, &pq[0]));
    KT_MPI(MPI_Recv_init(dr, 6, MPI_INT, left, 8, MPI_COMM_WORLD, &pq[1]));
    KT_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &vec));
    KT_MPI(MPI_Type_commit(&vec));
    unsigned char *dv = kt_dalloc(64), *dw = kt_dalloc(64);
    KT_MPI(MPI_Send_init(dv, 1, vec, right, 14, MPI_COMM_WORLD, &pq[2]));
    KT_MPI(MPI_Recv_init(dw, 1, vec, left, 14, MPI_COMM_WORLD, &pq[3]));
    for (int it = 0; it < 3; it++) {
        int w[8];
        for (int i = 0; i < 16; i++) v[i] = rank * 100 + i + it * 1000;
        for (int i = 0; i < 8; i++) w[i] = rank * 10 + i + it * 10000;
        kt_to_dev(ds, v, sizeof v);
        kt_to_dev(dv, w, sizeof w);
        kt_to_dev(dr, pat, sizeof pat);
        kt_to_dev(dw, pat, sizeof pat);
        KT_MPI(MPI_Startall(4, pq));
        KT_MPI(MPI_Waitall(4, pq, MPI_STATUSES_IGNORE));
        kt_to_host(got, dr, 8 * sizeof(int));
        for (int i = 0; i < 8; i++) KT_EQ_INT(got[i], i < 4 ? left * 100 + i + it * 1000 : pat[i]);
        kt_to_host(got, dw, 8 * sizeof(int));
        for (int i = 0; i < 8; i++) KT_EQ_INT(got[i], i % 2 ? pat[i] : left * 10 + i + it * 10000);
    }
    for (int i = 0; i < 4; i++) KT_MPI(MPI_Request_free(&pq[i]));
    MPI_Type_free(&vec);
    cuMemFree((uintptr_t)dv);
    cuMemFree((uintptr_t)dw);

    /* RMA (tests/mpi/gpu_rma_staging.c tests it through): one rank's window memory on the device,
     * device origin and result buffers */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Win win;
    memset(hr, 0, 64);
    KT_MPI(MPI_Win_create(rank == size - 1 ? (void *)dr : (void *)hr, 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    KT_MPI(MPI_Win_fence(0, win));
    kt_to_dev(ds, v, 16);
    KT_MPI(MPI_Put(ds, 4, MPI_BYTE, right, 0, 4, MPI_BYTE, win));
    KT_MPI(MPI_Win_fence(0, win));
    KT_MPI(MPI_Get(ds, 4, MPI_BYTE, right, 0, 4, MPI_BYTE, win));
    KT_MPI(MPI_Win_fence(0, win));
    kt_to_host(got, ds, 4);
    KT_EQ_INT(got[0], v[0]);
    KT_MPI(MPI_Win_free(&win));

    /* the device proxy's memory from the component */
    kumi_gpu_t g;
    MPIX_Gpu p;
    KT_MPI(MPIX_Gpu_start(MPI_COMM_WORLD, MPIX_GPU_CUDA, 4, 4, 64, &g, &p));
    KT_CHECK(g.ring && g.comp && g.tail && g.nblocks == 4 && g.qsize == 64);
    KT_MPI(MPIX_Gpu_stop(&p));

    cuMemFree((uintptr_t)ds);
    cuMemFree((uintptr_t)dr);
    free(hs);
    free(hr);
    MPI_Finalize();
    if (rank == 0) printf("gpu_staging: %d ranks: ok\n", size);
    return 0;
}
