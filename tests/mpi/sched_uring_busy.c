/* The io_uring engine moves a collective's data while the root computes
 * (busy, no MPI call and no system call), not only while it sleeps
 * (sched_uring): with IORING_SETUP_COOP_TASKRUN the kernel's task work for
 * the root's sends runs at its next entry into the kernel, a scheduler tick
 * at the latest, without an interrupt of its own.  The root starts an
 * MPI_Ibcast of 8 MiB and computes for BUSY_MS (2 s); the other ranks
 * must have finished their MPI_Wait within LIMIT_MS (1 s) of the start
 * (with the loop engine: only after the root's MPI_Wait, BUSY_MS).  Run with KUMI_BASE_SCHED_ENGINE=uring
 * over tcp (tests/scripts/sched_uring.sh).  The data is checked.
 *
 * usage: sched_uring_busy */
#include "kt.h"

#define MIB 8
#define BUSY_MS 2000.0
#define LIMIT_MS 1000.0

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t n = (size_t)MIB << 20;
    unsigned char *b = malloc(n);
    KT_CHECK(b != NULL, "out of memory");
    for (size_t i = 0; i < n; i++) b[i] = rank ? 0 : (unsigned char)(i * 7 + 1);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = kt_now(), took = 0;
    volatile double s = 0;
    MPI_Request r;
    KT_MPI(MPI_Ibcast(b, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &r));
    if (rank == 0) {
        while (kt_now() - t0 < BUSY_MS * 1e-3) s = s * 0.999 + 1.0;
        KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
        KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        took = (kt_now() - t0) * 1e3;
        for (size_t i = 0; i < n; i += 4093)
            KT_CHECK(b[i] == (unsigned char)(i * 7 + 1), "byte %zu is %u", i, b[i]);
    }
    double worst = 0;
    KT_MPI(MPI_Reduce(&took, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        printf("sched_uring_busy: %d ranks got %d MiB within %.1f ms while the root computed %.0f ms\n", size - 1,
               MIB, worst, BUSY_MS);
        KT_CHECK(worst <= LIMIT_MS, "the data arrived after %.1f ms: not while the root computed", worst);
    }
    /* every rank sends and receives through the engine (the script checks its counts) */
    int one = 1, sum = 0;
    KT_MPI(MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    KT_EQ_INT(sum, size);
    free(b);
    MPI_Finalize();
    return 0;
}
