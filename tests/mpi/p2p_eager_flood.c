/* The probe: a flood of eager messages sent before any receive.
 *
 *   p2p_eager_flood [N [SIZE [isend|send [MAX_MIB]]]]   (20000, 65536, isend, 300)
 *
 * Rank 0 sends N messages of SIZE bytes (tag 7) to rank 1 before rank 1
 * posts any receive on that communicator:
 *   isend  every one is an MPI_Isend; then a 0-byte message on another
 *          communicator says "all issued", and rank 0 waits for them all;
 *   send   every one is an MPI_Send (which may block once the receiver's
 *          budget is used up); rank 1 waits for the "all sent" message at
 *          most 4 seconds, polling with MPI_Iprobe on the other communicator.
 * With 1 rank, rank 0 sends them to itself with MPI_Isend (p2p/self).
 * Then rank 1 receives them all, in order, and checks every byte (message i
 * is bytes 8i .. 8i+SIZE-1 of one pattern, so rank 0 needs no copy per
 * message).  Rank 1's peak resident memory (VmHWM of /proc/self/status) may
 * grow by at most MAX_MIB MiB over what it was before the flood: without a
 * bound on unexpected eager messages 20000 x 64 KiB take 1.25 GiB or more. */
#include "kt.h"
#include <stdint.h>

static long vm_hwm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) { v = strtol(line + 6, NULL, 10); break; }
    fclose(f);
    return v;
}

static unsigned char pat(size_t k) { return (unsigned char)((k * 2654435761u) >> 13); }

int main(int argc, char **argv)
{
    int rank, size;
    long n = argc > 1 ? atol(argv[1]) : 20000;
    long len = argc > 2 ? atol(argv[2]) : 65536;
    int blocking = argc > 3 && !strcmp(argv[3], "send");
    long max_mib = argc > 4 ? atol(argv[4]) : 300;
    MPI_Comm sig;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size <= 2, "needs 1 or 2 ranks");
    int peer = size - 1;                      /* who receives the flood */
    KT_CHECK(n > 0 && len >= 0 && max_mib > 0, "bad arguments");
    KT_CHECK(!blocking || size == 2, "blocking sends need a second rank to receive them");
    MPI_Comm_dup(MPI_COMM_WORLD, &sig);
    long hwm0 = vm_hwm_kib();
    if (rank == peer && hwm0 < 0) {
        fprintf(stderr, "no VmHWM in /proc/self/status\n");
        MPI_Abort(MPI_COMM_WORLD, 77);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    unsigned char *src = NULL;
    MPI_Request *rq = NULL;
    if (rank == 0) {
        src = malloc((size_t)len + 8 * (size_t)n);
        KT_CHECK(src != NULL, "out of memory");
        for (size_t k = 0; k < (size_t)len + 8 * (size_t)n; k++) src[k] = pat(k);
        if (!blocking) rq = malloc((size_t)n * sizeof *rq);
        for (long i = 0; i < n; i++) {
            if (blocking) KT_MPI(MPI_Send(src + 8 * i, (int)len, MPI_BYTE, peer, 7, MPI_COMM_WORLD));
            else KT_MPI(MPI_Isend(src + 8 * i, (int)len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &rq[i]));
        }
        KT_MPI(MPI_Send(NULL, 0, MPI_BYTE, peer, 1, sig));
    }
    if (rank == peer) {
        int flag = 0;
        if (blocking) {                       /* the sends may be waiting for us */
            double end = kt_now() + 4.0;
            while (!flag && kt_now() < end) KT_MPI(MPI_Iprobe(0, 1, sig, &flag, MPI_STATUS_IGNORE));
        } else {
            flag = 1;
        }
        if (flag) KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 1, sig, MPI_STATUS_IGNORE));
        long hwm_flood = vm_hwm_kib();
        unsigned char *buf = malloc((size_t)len + 1);
        KT_CHECK(buf != NULL, "out of memory");
        for (long i = 0; i < n; i++) {
            MPI_Status st;
            int c;
            KT_MPI(MPI_Recv(buf, (int)len + 1, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &c);
            KT_EQ_INT(c, len);
            for (long k = 0; k < len; k++)
                if (buf[k] != pat((size_t)(8 * i + k)))
                    KT_FAIL("message %ld byte %ld: %u, expected %u (out of order?)", i, k, buf[k],
                            pat((size_t)(8 * i + k)));
        }
        if (!flag) KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 1, sig, MPI_STATUS_IGNORE));
        long hwm = vm_hwm_kib();
        long grew = (hwm - hwm0) / 1024;
        printf("peak RSS of the receiver: %ld MiB before, %ld MiB after the flood arrived, %ld MiB at the end "
               "(grew %ld MiB, limit %ld)\n", hwm0 / 1024, hwm_flood / 1024, hwm / 1024, grew, max_mib);
        free(buf);
        if (grew >= max_mib)
            KT_FAIL("%ld messages of %ld bytes sent before their receives took the receiver's peak RSS "
                    "up by %ld MiB (limit %ld MiB)", n, len, grew, max_mib);
    }
    if (rank == 0) {
        if (!blocking) KT_MPI(MPI_Waitall((int)n, rq, MPI_STATUSES_IGNORE));
        free(rq);
        free(src);
    }
    MPI_Comm_free(&sig);
    MPI_Finalize();
    return 0;
}
