/* Nothing lost silently (issue 15 item 8): when no memory is left for the
 * payload of a message that arrives before its receive, the receive that
 * takes it fails with MPI_ERR_NO_MEM (through the communicator's error
 * handler, here MPI_ERRORS_RETURN) and names the sender; the messages after
 * it arrive intact, in order.
 *
 * Memory "runs out" through this program's own malloc, which libmpi's calls
 * reach (the executable's definition interposes): while armed, every
 * allocation of at least FAIL_MIN bytes fails.  Rank 1 arms it only around a
 * barrier during which rank 0's eager message (EAGER_BYTES) arrives. */
#include "kt.h"
#include <stdint.h>
#include <unistd.h>

extern void *__libc_malloc(size_t n);
static volatile int armed;
static volatile long refused;
#define FAIL_MIN 20000
#define EAGER_BYTES 30000            /* below every transport's eager limit */

void *malloc(size_t n)
{
    if (armed && n >= FAIL_MIN) {
        refused++;
        return NULL;
    }
    return __libc_malloc(n);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "run with 2 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    unsigned char *buf = __libc_malloc(EAGER_BYTES);
    if (rank == 0) {
        for (int i = 0; i < EAGER_BYTES; i++) buf[i] = (unsigned char)(i * 7);
        KT_MPI(MPI_Send(buf, EAGER_BYTES, MPI_BYTE, 1, 5, MPI_COMM_WORLD));   /* eager: done locally */
        int after = 4242;
        KT_MPI(MPI_Send(&after, 1, MPI_INT, 1, 6, MPI_COMM_WORLD));
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    } else {
        /* wait until both messages are here, unexpected, with large allocations refused */
        armed = 1;
        int flag = 0;
        for (int spins = 0; !flag && spins < 200000; spins++) {
            KT_MPI(MPI_Iprobe(0, 6, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            if (!flag) usleep(100);
        }
        armed = 0;
        KT_CHECK(flag, "the second message never arrived");
        KT_CHECK(refused > 0, "no allocation was refused: the test did not exercise anything");
        memset(buf, 0, EAGER_BYTES);
        MPI_Status st;
        int rc = MPI_Recv(buf, EAGER_BYTES, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        KT_CHECK(cls == MPI_ERR_NO_MEM, "the lost message's receive gave class %d (%s), expected MPI_ERR_NO_MEM",
                 cls, msg);
        KT_CHECK(strstr(msg, "rank 0") && strstr(msg, "lost"), "the message does not say what was lost: %s", msg);
        int after = 0;
        KT_MPI(MPI_Recv(&after, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_EQ_INT(after, 4242);
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_Finalize();
    return 0;
}
