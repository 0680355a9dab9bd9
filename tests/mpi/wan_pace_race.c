/* wan_pace_race: two communicators' paced calls on one shared IMPI host
 * connection (tests/scripts/impi_wan.sh: clients of 2 ranks in two clusters
 * of the wide-area lab, pacing/sockrate on, one IMPI host per client).
 * X = {0, 2}, Y = {1, 3}: ranks 0 and 1 of cluster A write to the same
 * connection to cluster B; rank 0 is the launch's lowest rank in X, rank 1
 * in Y, so each sets the rate for its own communicator's call.
 *   rank 0 enters MPI_Alltoall(X), which waits for rank 2;
 *   rank 1 sees the connection paced (rank 0 set it), runs MPI_Alltoall(Y)
 *   with rank 3 to its end, lets the progress engine run 300 ms (a restore
 *   waits for the queue to drain), and reads the connection's rate: X's call
 *   is still in flight, so it must still be paced at RATE (argv[1]);
 *   then rank 2 joins X, and once both calls are over the rate must go back
 *   to unlimited.
 * Before the count of paced calls per connection (kumi/impi.h's
 * kumi_impi_pacing), rank 1's restore at the end of Y lifted X's rate.
 * Prints "wan_pace_race: ..." lines; exit 0 when both checks pass. */
#include "kt.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#ifndef SO_MAX_PACING_RATE
#define SO_MAX_PACING_RATE 47
#endif

static int shared_fd(void)
{
    const char *h = getenv("KUMI_INTERNAL_IMPI_HOSTS"), *q = h ? strchr(h, '=') : NULL;
    return q ? atoi(q + 1) : -1;
}

static uint64_t rate_of(int fd)
{
    uint64_t v = 0;
    socklen_t l = sizeof v;
    if (getsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &v, &l) != 0) return 0;
    if (l == 4) return (uint32_t)v == UINT32_MAX ? UINT64_MAX : (uint32_t)v;
    return v;
}

/* let the progress engine run for ms milliseconds */
static void progress(double ms)
{
    double t0 = MPI_Wtime();
    int flag;
    while ((MPI_Wtime() - t0) * 1e3 < ms) MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_EQ_INT(size, 4);
    uint64_t want = argc > 1 ? strtoull(argv[1], NULL, 10) : 11875000;
    MPI_Comm c;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c));
    int sb[2] = { rank * 10, rank * 10 + 1 }, rb[2] = { -1, -1 }, z = 0, bad = 0;
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        KT_MPI(MPI_Send(&z, 0, MPI_INT, 1, 1, MPI_COMM_WORLD));
        KT_MPI(MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, c));
    } else if (rank == 2) {
        KT_MPI(MPI_Recv(&z, 0, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, c));
    } else if (rank == 3) {
        KT_MPI(MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, c));
    } else {
        int fd = shared_fd();
        KT_CHECK(fd >= 0, "no shared IMPI host connection in KUMI_INTERNAL_IMPI_HOSTS");
        KT_MPI(MPI_Recv(&z, 0, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        uint64_t r0 = UINT64_MAX;
        for (int i = 0; i < 500 && (r0 = rate_of(fd)) == UINT64_MAX; i++) progress(10);
        printf("wan_pace_race: in X's call (rank 0 inside): %llu B/s\n", (unsigned long long)r0);
        KT_MPI(MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, c));
        progress(300);
        uint64_t r1 = rate_of(fd);
        printf("wan_pace_race: after Y's call, X's still in flight: %s%llu B/s\n",
               r1 == UINT64_MAX ? "unlimited " : "", r1 == UINT64_MAX ? 0ull : (unsigned long long)r1);
        if (r1 != want) bad = 1;
        KT_MPI(MPI_Send(&z, 0, MPI_INT, 2, 3, MPI_COMM_WORLD));
    }
    int partner = rank < 2 ? rank + 2 : rank - 2;      /* the other member of my communicator */
    KT_EQ_INT(rb[rank < 2 ? 1 : 0], partner * 10 + (rank < 2 ? 0 : 1));
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 1) {
        int fd = shared_fd();
        uint64_t r2 = 0;
        for (int i = 0; i < 300 && (r2 = rate_of(fd)) != UINT64_MAX; i++) progress(10);
        printf("wan_pace_race: after both calls: %s\n", r2 == UINT64_MAX ? "unlimited" : "still paced");
        if (r2 != UINT64_MAX) bad = 1;
        printf("wan_pace_race: %s\n", bad ? "FAILED" : "both checks passed");
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    KT_MPI(MPI_Comm_free(&c));
    MPI_Finalize();
    return bad;
}
