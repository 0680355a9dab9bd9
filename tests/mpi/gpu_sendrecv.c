/* MPI_Sendrecv and MPI_Sendrecv_replace on device buffers take the paths of
 * MPI_Isend + MPI_Irecv (request/req_accel.c), run by
 * tests/scripts/gpu_fakecuda.sh with the stand-in driver at 2 and 3 ranks.
 * Arguments: SIZE MODE CHUNK.  A ring of SIZE-byte messages from device
 * buffers into device buffers; what the driver did in this process is read
 * before and after each call (kt_stats) with Kumi's MPI_T counters:
 *   ipc     the peers of one host open each other's buffers: every message
 *           is one device-to-device copy by its receiver (accel_ipc_receives
 *           + 1), no byte is copied to the device from host memory, and
 *           the sender copies to the host no more than its four slots
 *           before the receiver's answer; Sendrecv_replace copies its
 *           message on the device first (one more such copy)
 *   pieces  (FAKECUDA_NOIPC=1) a send goes in pieces of CHUNK bytes
 *           (accel_send_pieces) after the refused IPC offer, its bytes copied
 *           to the host (the copies issued before the offer may be made
 *           twice) and the received ones to the device once
 * Before the change, Sendrecv staged both buffers whole: no device-to-device
 * copy, no piece.  Then every byte is checked, also for a host send into a
 * device receive and the reverse, a typed Sendrecv_replace (MPI_INT) and one
 * of a vector type (staged whole), and bytes past a message stay as they were. */
#include "kt_fakecuda.h"

static int rank, size, right, left;
static unsigned char *hb;

static void fill(void *d, size_t n, int r, int way)
{
    for (size_t i = 0; i < n; i++) hb[i] = kt_pat(r, i, n, way);
    kt_to_dev(d, hb, n);
}

static void check(const void *d, size_t n, int r, int way, size_t tail, const char *what)
{
    kt_to_host(hb, d, n + tail);
    for (size_t i = 0; i < n; i++)
        if (hb[i] != kt_pat(r, i, n, way))
            KT_FAIL("%s: byte %zu of %zu is %#x, expected %#x", what, i, n, hb[i], kt_pat(r, i, n, way));
    for (size_t i = n; i < n + tail; i++)
        if (hb[i] != 0x5a) KT_FAIL("%s: byte %zu past the message of %zu bytes was written", what, i, n);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(argc > 3, "usage: gpu_sendrecv SIZE ipc|pieces CHUNK");
    size_t n = (size_t)atol(argv[1]), chunk = (size_t)atol(argv[3]);
    int ipc = !strcmp(argv[2], "ipc");
    KT_CHECK(n >= 8 && chunk > 0 && (ipc || !strcmp(argv[2], "pieces")));
    kt_cuda_load();
    right = (rank + 1) % size;
    left = (rank - 1 + size) % size;
    MPI_T_pvar_handle pv_ipc = kt_pvar("accel_ipc_receives"), pv_pieces = kt_pvar("accel_send_pieces");
    size_t tail = 64;
    void *ds = kt_dalloc(n + tail), *dr = kt_dalloc(n + tail);
    hb = malloc(n + tail);
    unsigned char *hs = malloc(n + tail);
    KT_CHECK(hb && hs);
    unsigned long long b[KT_NSTATS], a[KT_NSTATS], pi0, pp0;
    size_t npieces = (n + chunk - 1) / chunk;
    size_t ahead = 4 * chunk;                 /* KUMI_ACCEL_NSLOT slots copied before the answer comes */

    /* 1: MPI_Sendrecv, device to device */
    fill(ds, n, rank, 1);
    memset(hb, 0x5a, n + tail);
    kt_to_dev(dr, hb, n + tail);
    kt_stats(b);
    pi0 = kt_pvar_read(pv_ipc);
    pp0 = kt_pvar_read(pv_pieces);
    KT_MPI(MPI_Sendrecv(ds, (int)n, MPI_BYTE, right, 1, dr, (int)(n + tail), MPI_BYTE, left, 1, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
    kt_stats(a);
    unsigned long long pi = kt_pvar_read(pv_ipc) - pi0, pp = kt_pvar_read(pv_pieces) - pp0;
    if (ipc) {
        if (a[KT_DTOD] - b[KT_DTOD] != n || a[KT_DTOH] - b[KT_DTOH] > ahead || a[KT_HTOD] != b[KT_HTOD] || pi != 1)
            KT_FAIL("MPI_Sendrecv of %zu device bytes: %llu bytes device to device (expected %zu: one IPC copy), "
                    "%llu to the host (at most %zu, the first slots), %llu to the device (expected 0); %llu IPC "
                    "receives (expected 1)", n,
                    a[KT_DTOD] - b[KT_DTOD], n, a[KT_DTOH] - b[KT_DTOH], ahead, a[KT_HTOD] - b[KT_HTOD], pi);
    } else if (pp != npieces || a[KT_DTOH] - b[KT_DTOH] < n || a[KT_HTOD] - b[KT_HTOD] != n || pi != 0 ||
               a[KT_DTOD] != b[KT_DTOD]) {
        KT_FAIL("MPI_Sendrecv of %zu device bytes without IPC: %llu pieces sent (expected %zu), %llu bytes to the "
                "host and %llu to the device (expected %zu each), %llu device to device, %llu IPC receives", n, pp,
                npieces, a[KT_DTOH] - b[KT_DTOH], a[KT_HTOD] - b[KT_HTOD], n, a[KT_DTOD] - b[KT_DTOD], pi);
    }
    check(dr, n, left, 1, tail, "MPI_Sendrecv device to device");

    /* 2: MPI_Sendrecv_replace, device (bytes) */
    fill(dr, n, rank, 2);
    kt_stats(b);
    pi0 = kt_pvar_read(pv_ipc);
    pp0 = kt_pvar_read(pv_pieces);
    KT_MPI(MPI_Sendrecv_replace(dr, (int)n, MPI_BYTE, right, 2, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    kt_stats(a);
    pi = kt_pvar_read(pv_ipc) - pi0;
    pp = kt_pvar_read(pv_pieces) - pp0;
    if (ipc) {
        if (a[KT_DTOD] - b[KT_DTOD] != 2 * n || a[KT_DTOH] - b[KT_DTOH] > ahead || a[KT_HTOD] != b[KT_HTOD] ||
            pi != 1)
            KT_FAIL("MPI_Sendrecv_replace of %zu device bytes: %llu bytes device to device (expected %zu: the copy "
                    "to send, the IPC copy), %llu to the host (at most %zu), %llu to the device (expected 0); %llu "
                    "IPC receives", n, a[KT_DTOD] - b[KT_DTOD], 2 * n, a[KT_DTOH] - b[KT_DTOH], ahead,
                    a[KT_HTOD] - b[KT_HTOD], pi);
    } else if (pp != npieces || a[KT_DTOD] - b[KT_DTOD] != n || a[KT_DTOH] - b[KT_DTOH] < n ||
               a[KT_HTOD] - b[KT_HTOD] != n) {
        KT_FAIL("MPI_Sendrecv_replace of %zu device bytes without IPC: %llu pieces (expected %zu), %llu bytes device "
                "to device, %llu to the host, %llu to the device (expected %zu each)", n, pp, npieces,
                a[KT_DTOD] - b[KT_DTOD], a[KT_DTOH] - b[KT_DTOH], a[KT_HTOD] - b[KT_HTOD], n);
    }
    check(dr, n, left, 2, tail, "MPI_Sendrecv_replace");

    /* 3: host send into a device receive, device send into a host receive */
    for (size_t i = 0; i < n; i++) hs[i] = kt_pat(rank, i, n, 3);
    fill(ds, n, rank, 4);
    memset(hb, 0x5a, n + tail);
    kt_to_dev(dr, hb, n + tail);
    KT_MPI(MPI_Sendrecv(hs, (int)n, MPI_BYTE, right, 3, dr, (int)(n + tail), MPI_BYTE, left, 3, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
    check(dr, n, left, 3, tail, "MPI_Sendrecv host to device");
    unsigned char *hr = malloc(n);
    KT_CHECK(hr);
    MPI_Status st;
    KT_MPI(MPI_Sendrecv(ds, (int)n, MPI_BYTE, right, 4, hr, (int)n, MPI_BYTE, left, 4, MPI_COMM_WORLD, &st));
    int got;
    MPI_Get_count(&st, MPI_BYTE, &got);
    KT_CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 4 && (size_t)got == n);
    for (size_t i = 0; i < n; i++)
        if (hr[i] != kt_pat(left, i, n, 4)) KT_FAIL("MPI_Sendrecv device to host: byte %zu", i);

    /* 4: MPI_Sendrecv_replace of ints, and of a vector type (every other int: staged whole) */
    int cnt = (int)(n / 4);
    fill(dr, (size_t)cnt * 4, rank, 5);
    KT_MPI(MPI_Sendrecv_replace(dr, cnt, MPI_INT, right, 5, left, 5, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_INT, &got);
    KT_CHECK(got == cnt && st.MPI_SOURCE == left);
    check(dr, (size_t)cnt * 4, left, 5, 0, "MPI_Sendrecv_replace of MPI_INT");
    MPI_Datatype vec;
    MPI_Type_vector(cnt / 2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    fill(dr, (size_t)cnt * 4, rank, 6);
    KT_MPI(MPI_Sendrecv_replace(dr, 1, vec, right, 6, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    kt_to_host(hb, dr, (size_t)cnt * 4);
    for (int i = 0; i < (cnt / 2) * 2 - 1; i++) {
        int r = i % 2 ? rank : left;              /* the gaps keep this rank's bytes */
        for (int k = 0; k < 4; k++)
            if (hb[4 * i + k] != kt_pat(r, (size_t)(4 * i + k), (size_t)cnt * 4, 6))
                KT_FAIL("MPI_Sendrecv_replace of a vector: int %d byte %d", i, k);
    }
    MPI_Type_free(&vec);

    cuMemFree((uintptr_t)ds);
    cuMemFree((uintptr_t)dr);
    free(hb);
    free(hs);
    free(hr);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("gpu_sendrecv: %d ranks, %zu bytes, %s: ok\n", size, n, argv[2]);
    MPI_Finalize();
    return 0;
}
