/* Early match: a large eager message (60 KiB, under the usual 64 KiB eager
 * limit) whose receive is posted while it is still arriving; also posted
 * before it arrives and after it fully arrived.  Checks every byte. */
#include "kt.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks");
    int n = 60 * 1024;
    unsigned char *b = malloc(n);
    for (int it = 0; it < 300; it++) {
        if (rank == 0) {
            for (int i = 0; i < n; i++) b[i] = (unsigned char)(i * 13 + it);
            KT_MPI(MPI_Send(b, n, MPI_BYTE, 1, it, MPI_COMM_WORLD));
        } else if (rank == 1) {
            int flag = 0;
            MPI_Status st;
            if (it % 3 == 1) {
                /* post as soon as the header is visible */
                do KT_MPI(MPI_Iprobe(0, it, MPI_COMM_WORLD, &flag, &st)); while (!flag);
            } else if (it % 3 == 2) {
                usleep(2000);
            }
            memset(b, 0, n);
            KT_MPI(MPI_Recv(b, n, MPI_BYTE, 0, it, MPI_COMM_WORLD, &st));
            int c; MPI_Get_count(&st, MPI_BYTE, &c);
            KT_EQ_INT(c, n);
            for (int i = 0; i < n; i++)
                if (b[i] != (unsigned char)(i * 13 + it)) KT_FAIL("iteration %d byte %d", it, i);
        }
    }
    free(b);
    MPI_Finalize();
    return 0;
}
