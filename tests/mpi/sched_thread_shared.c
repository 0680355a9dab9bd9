/* Thread engine where the ranks share one core (issue 22 item 4: a
 * non-blocking collective costs no more with the thread engine than with
 * the loop engine when the application waits at once, oversubscribed too).
 * Each rank keeps itself to the first CPU it may run on before MPI_Init
 * (launched --bind-to none: every rank of the job then on one CPU, more
 * ranks than CPUs on the host), so each wake-up of a progress thread takes
 * a rank's place there.
 *
 *  1. 400 ms of 8-byte MPI_Iallreduce + MPI_Wait back to back.  The
 *     progress thread's dozes must grow past kumi_base_sched_thread_doze_max_us
 *     (4 ms) up to kumi_base_sched_thread_shared_doze_max_us (50 ms), not
 *     wake it every 4 ms (about 100 switches in 400 ms, as before).
 *     Bound: 12 + t / 20 ms switches of the other threads (32 for 400 ms;
 *     the thread now switches about 11 times).
 *  2. The thread still takes a schedule over when the application leaves
 *     to compute: rank 0 starts an MPI_Ibcast (root 1) and computes
 *     without calling MPI, watching its buffer; the root sends 5 ms later;
 *     the value must arrive within 0.5 s (the take-over comes at most
 *     50 ms + delay_us after the application left), three times in a row.
 *
 * usage: --bind-to none -n 2 sched_thread_shared */
#define _GNU_SOURCE
#include "kt.h"
#include "kt_threads.h"
#include <sched.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    cpu_set_t set, one;
    KT_CHECK(sched_getaffinity(0, sizeof set, &set) == 0, "sched_getaffinity");
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) { CPU_SET(c, &one); break; }
    KT_CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "sched_setaffinity");

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "usage: --bind-to none -n 2 sched_thread_shared");

    MPI_Request req;
    double a = 1, b = 0;
    KT_MPI(MPI_Iallreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req));
    KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    KT_CHECK(b == 2, "b = %g", b);

    /* 1. */
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    long s0 = kt_other_switches(NULL), ops = 0;
    double t0 = kt_now(), t;
    for (int i = 0;; i++, ops++) {
        /* rank 0 says when 400 ms have passed; both stop after the same operation */
        double x[2] = { rank == 0 && kt_now() - t0 > 0.4 ? 1 : 0, rank + i }, y[2];
        KT_MPI(MPI_Iallreduce(x, y, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &req));
        KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (y[1] != 1 + i) KT_FAIL("operation %d: max = %g, expected %d", i, y[1], 1 + i);
        if (y[0] != 0) break;
    }
    t = kt_now() - t0;
    long sw = kt_other_switches(NULL) - s0, allowed = 12 + (long)(t / 0.020);
    printf("sched_thread_shared rank %d: %ld operations in %.1f ms on one CPU with the other rank: %ld switches "
           "of the progress thread (bound %ld)\n", rank, ops, t * 1e3, sw, allowed);
    KT_CHECK(sw <= allowed, "the progress thread switched %ld times in %.1f ms of operations waited at once "
             "(bound %ld): its dozes did not grow past 4 ms where the ranks share a core", sw, t * 1e3, allowed);

    /* 2. */
    for (int round = 0; round < 3; round++) {
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        double c = kt_ibcast_computing(42 + round, 1);
        if (rank == 0) {
            printf("sched_thread_shared: computing after the start (round %d), the broadcast arrived after "
                   "%.2f ms\n", round, c * 1e3);
            KT_CHECK(c < 0.5, "the broadcast arrived %.3f s after the start: the progress thread took over "
                     "late", c);
        }
    }
    MPI_Finalize();
    return 0;
}
