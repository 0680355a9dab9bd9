/* p2p/shmem: message sizes 0 .. 16 MiB around the eager limit, the CMA
 * threshold and the ring size, in both directions between every pair of
 * ranks, with values checked; many outstanding requests of mixed sizes;
 * truncation at every protocol (eager inline, streamed, CMA); ANY_SOURCE
 * receives from all peers.  Run also with p2p_shmem_cma=off (two-copy path)
 * and with a 4 KiB ring (every large message streams and wraps). */
#include "kt.h"
#include <stdint.h>

static unsigned char val(int src, int tag, size_t i)
{
    return (unsigned char)(src * 31 + tag * 7 + i * 13 + (i >> 9));
}

static void fill(unsigned char *b, size_t n, int src, int tag)
{
    for (size_t i = 0; i < n; i++) b[i] = val(src, tag, i);
}

static void check(const unsigned char *b, size_t n, int src, int tag, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != val(src, tag, i))
            KT_FAIL("%s: byte %zu of %zu from rank %d tag %d is %d, expected %d", what, i, n, src, tag,
                    b[i], val(src, tag, i));
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 0, 1, 7, 8, 55, 56, 63, 64, 65, 127, 128, 1000, 4095, 4096,
                                    4097, 8191, 8192, 16383, 16384, 16385, 32767, 32768, 32769,
                                    65535, 65536, 65537, 100000, 262144, 1048575, 1048576,
                                    4194304 + 3, 16777216 };
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    size_t maxn = sizes[nsizes - 1];
    unsigned char *sb = malloc(maxn), *rb = malloc(maxn + 64);
    KT_CHECK(sb && rb);

    /* 1. every size, every ordered pair, blocking */
    for (int a = 0; a < size; a++)
        for (int b = 0; b < size; b++) {
            if (a == b) continue;
            for (int k = 0; k < nsizes; k++) {
                size_t n = sizes[k];
                if (size > 2 && n > 4194304 + 3) continue;      /* keep the 4-rank run short */
                if (rank == a) {
                    fill(sb, n, a, k);
                    KT_MPI(MPI_Send(sb, (int)n, MPI_BYTE, b, k, MPI_COMM_WORLD));
                } else if (rank == b) {
                    MPI_Status st;
                    int cnt = -1;
                    memset(rb, 0xee, n + 64);
                    KT_MPI(MPI_Recv(rb, (int)n + 64, MPI_BYTE, a, k, MPI_COMM_WORLD, &st));
                    MPI_Get_count(&st, MPI_BYTE, &cnt);
                    KT_EQ_INT(cnt, n);
                    KT_EQ_INT(st.MPI_SOURCE, a);
                    check(rb, n, a, k, "blocking");
                    for (int i = 0; i < 64; i++) KT_CHECK(rb[n + i] == 0xee, "wrote past the message");
                }
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }

    /* 2. many outstanding requests of mixed sizes to and from every peer */
    {
        enum { NMSG = 96 };
        size_t msz[NMSG];
        size_t tot = 0;
        for (int i = 0; i < NMSG; i++) {
            msz[i] = sizes[(i * 7) % (nsizes - 3)];
            tot += msz[i];
        }
        int np = size - 1;
        unsigned char *sbig = malloc(tot), *rbig = malloc(tot * (size_t)np);
        MPI_Request *req = malloc(sizeof *req * (size_t)NMSG * 2 * (size_t)np);
        KT_CHECK(sbig && rbig && req);
        int nr = 0;
        size_t off = 0, roff = 0;
        for (int p = 0; p < size; p++) {
            if (p == rank) continue;
            size_t o = 0;
            for (int i = 0; i < NMSG; i++) {
                KT_MPI(MPI_Irecv(rbig + roff + o, (int)msz[i], MPI_BYTE, p, 1000 + i, MPI_COMM_WORLD, &req[nr++]));
                o += msz[i];
            }
            roff += tot;
        }
        for (int i = 0; i < NMSG; i++) {
            fill(sbig + off, msz[i], rank, 1000 + i);
            off += msz[i];
        }
        for (int p = 0; p < size; p++) {
            if (p == rank) continue;
            off = 0;
            for (int i = 0; i < NMSG; i++) {
                KT_MPI(MPI_Isend(sbig + off, (int)msz[i], MPI_BYTE, p, 1000 + i, MPI_COMM_WORLD, &req[nr++]));
                off += msz[i];
            }
        }
        KT_MPI(MPI_Waitall(nr, req, MPI_STATUSES_IGNORE));
        roff = 0;
        for (int p = 0; p < size; p++) {
            if (p == rank) continue;
            size_t o = 0;
            for (int i = 0; i < NMSG; i++) {
                check(rbig + roff + o, msz[i], p, 1000 + i, "outstanding");
                o += msz[i];
            }
            roff += tot;
        }
        free(sbig); free(rbig); free(req);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. truncation at each protocol: rank 1 sends n, rank 0 posts n/2 */
    {
        static const size_t tsz[] = { 100, 4000, 16384, 16385, 70000, 1048576 };
        for (int k = 0; k < 6; k++) {
            size_t n = tsz[k], half = n / 2;
            if (rank == 1) {
                fill(sb, n, 1, 50 + k);
                KT_MPI(MPI_Send(sb, (int)n, MPI_BYTE, 0, 50 + k, MPI_COMM_WORLD));
            } else if (rank == 0) {
                MPI_Status st;
                memset(rb, 0xee, n);
                KT_ERRCLASS(MPI_Recv(rb, (int)half, MPI_BYTE, 1, 50 + k, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE);
                check(rb, half, 1, 50 + k, "truncated prefix");
                for (size_t i = half; i < n; i++) KT_CHECK(rb[i] == 0xee, "truncated receive wrote byte %zu", i);
            }
            /* the next message still arrives intact */
            if (rank == 1) {
                fill(sb, 1000, 1, 60 + k);
                KT_MPI(MPI_Send(sb, 1000, MPI_BYTE, 0, 60 + k, MPI_COMM_WORLD));
            } else if (rank == 0) {
                KT_MPI(MPI_Recv(rb, 1000, MPI_BYTE, 1, 60 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                check(rb, 1000, 1, 60 + k, "after truncation");
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 4. ANY_SOURCE / ANY_TAG: every other rank sends 3 sizes to rank 0, in order per sender */
    {
        static const size_t asz[] = { 10, 20000, 300000 };
        if (rank != 0) {
            for (int k = 0; k < 3; k++) {
                fill(sb, asz[k], rank, 70 + k);
                KT_MPI(MPI_Send(sb, (int)asz[k], MPI_BYTE, 0, 70 + k, MPI_COMM_WORLD));
            }
        } else {
            int *next = calloc((size_t)size, sizeof *next);
            for (int m = 0; m < 3 * (size - 1); m++) {
                MPI_Status st;
                int cnt;
                KT_MPI(MPI_Recv(rb, (int)maxn, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                int s = st.MPI_SOURCE, k = next[s]++;
                KT_CHECK(s > 0 && s < size && k < 3, "source %d, message %d", s, k);
                KT_EQ_INT(st.MPI_TAG, 70 + k);
                MPI_Get_count(&st, MPI_BYTE, &cnt);
                KT_EQ_INT(cnt, asz[k]);
                check(rb, asz[k], s, 70 + k, "ANY_SOURCE");
            }
            free(next);
        }
    }
    free(sb); free(rb);
    MPI_Finalize();
    return 0;
}
