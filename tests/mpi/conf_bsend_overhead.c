/* conf_bsend_overhead: MPI_BSEND_OVERHEAD is the overhead Kumi needs (issue
 * 16 item 5).  The standard tells the user to attach, per buffered message,
 * its MPI_Pack_size plus MPI_BSEND_OVERHEAD bytes: messages of 1, 3, 7, 8,
 * 9 and 1000 bytes each fit a buffer of exactly that size, and n messages
 * of 1 byte fit n * (1 + MPI_BSEND_OVERHEAD) bytes; one more byte of data
 * than the buffer holds is MPI_ERR_BUFFER.  2 ranks. */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "needs 2 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static const int lens[] = { 1, 3, 7, 8, 9, 1000 };
    char data[1001], got[1001];
    for (int i = 0; i < 1001; i++) data[i] = (char)i;
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        int n = lens[k], psize;
        KT_MPI(MPI_Pack_size(n, MPI_BYTE, MPI_COMM_WORLD, &psize));
        if (rank == 0) {
            int bsz = psize + MPI_BSEND_OVERHEAD;
            char *buf = malloc((size_t)bsz);
            KT_MPI(MPI_Buffer_attach(buf, bsz));
            int rc = MPI_Bsend(data, n, MPI_BYTE, 1, n, MPI_COMM_WORLD);
            if (rc != MPI_SUCCESS) {
                char s[MPI_MAX_ERROR_STRING];
                int l = 0;
                MPI_Error_string(rc, s, &l);
                KT_FAIL("a message of %d bytes in a buffer of MPI_Pack_size %d + MPI_BSEND_OVERHEAD %d: %s", n,
                        psize, MPI_BSEND_OVERHEAD, s);
            }
            void *b;
            int bs;
            KT_MPI(MPI_Buffer_detach(&b, &bs));
            KT_CHECK(b == buf && bs == bsz, "detach gave %p/%d", b, bs);
            /* one byte more than the buffer holds */
            KT_MPI(MPI_Buffer_attach(buf, bsz - 1));
            KT_ERRCLASS(MPI_Bsend(data, n, MPI_BYTE, 1, 5000 + n, MPI_COMM_WORLD), MPI_ERR_BUFFER);
            KT_MPI(MPI_Buffer_detach(&b, &bs));
            free(buf);
        } else {
            KT_MPI(MPI_Recv(got, n, MPI_BYTE, 0, n, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            KT_CHECK(memcmp(got, data, (size_t)n) == 0, "%d-byte message wrong", n);
        }
    }
    /* 10 one-byte messages at once in 10 * (1 + overhead) */
    if (rank == 0) {
        int psize;
        KT_MPI(MPI_Pack_size(1, MPI_BYTE, MPI_COMM_WORLD, &psize));
        int bsz = 10 * (psize + MPI_BSEND_OVERHEAD);
        char *buf = malloc((size_t)bsz);
        KT_MPI(MPI_Buffer_attach(buf, bsz));
        for (int i = 0; i < 10; i++) KT_MPI(MPI_Bsend(&data[i], 1, MPI_BYTE, 1, 100 + i, MPI_COMM_WORLD));
        void *b;
        int bs;
        KT_MPI(MPI_Buffer_detach(&b, &bs));
        free(buf);
    } else {
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));          /* the sends are all buffered before any receive */
    }
    if (rank == 0) KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 1)
        for (int i = 0; i < 10; i++) {
            KT_MPI(MPI_Recv(got, 1, MPI_BYTE, 0, 100 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            KT_EQ_INT(got[0], data[i]);
        }
    KT_MPI(MPI_Finalize());
    return 0;
}
