/* Thread engine, bursts of operations waited at once (issue 22 item 4: a
 * non-blocking collective costs no more with the thread engine than with
 * the loop engine when the application waits at once).
 *
 *  1. Twenty bursts, each after a pause of 30 ms out of the library (the
 *     progress thread falls asleep), each 2 ms of 8-byte MPI_Iallreduce +
 *     MPI_Wait back to back.  The burst's first start wakes the thread;
 *     then it must doze on (its first doze kumi_base_sched_thread_burst_us,
 *     4 ms, since it never took a schedule over), not wake every few tens of
 *     microseconds: before, every burst began with dozes of
 *     kumi_base_sched_thread_delay_us (50 us) doubling, so the thread woke
 *     at 50, 150, 350, 750 and 1550 us of every burst (6 switches a burst
 *     of 2 ms), each wake-up in a rank's place when no core is free.
 *     Bound: per burst 2.5 + log2(1 + its length / 1 ms) switches of the
 *     other threads (4.1 for 2 ms; the thread now switches 1-2 times), summed
 *     over the bursts, whatever the machine's speed.
 *  2. The thread still takes a schedule over when the application
 *     computes: rank 0 starts an MPI_Ibcast (root 1) and computes without
 *     calling MPI, watching its buffer; the root sends 5 ms later; the
 *     value must arrive within 0.5 s (the take-over comes after at most
 *     4 ms + delay_us).
 *
 * usage: -n 2 sched_thread_burst */
#define _GNU_SOURCE
#include "kt.h"
#include "kt_threads.h"
#include <unistd.h>

/* log2(v) for v >= 1, from above (linear between powers of 2): no libm */
static double lg2(double v)
{
    double r = 0;
    while (v >= 2) { v /= 2; r++; }
    return r + (v - 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "usage: -n 2 sched_thread_burst");
    (void)argc; (void)argv;

    MPI_Request req;
    double a = 1, b = 0;
    KT_MPI(MPI_Iallreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req));
    KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    KT_CHECK(b == 2, "b = %g", b);

    /* 1. */
    enum { BURSTS = 20 };
    long sw = 0, ops = 0;
    double allowed = 0, secs = 0;
    for (int burst = 0; burst < BURSTS; burst++) {
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        usleep(30000);                  /* the progress thread falls asleep (after 5 ms) */
        long s0 = kt_other_switches(NULL);
        double t0 = kt_now(), t;
        for (int i = 0;; i++, ops++) {
            /* rank 0 says when 2 ms have passed; both stop after the same operation */
            double x[2] = { rank == 0 && kt_now() - t0 > 0.002 ? 1 : 0, rank + i }, y[2];
            KT_MPI(MPI_Iallreduce(x, y, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &req));
            KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            if (y[1] != 1 + i) KT_FAIL("burst %d, operation %d: max = %g, expected %d", burst, i, y[1], 1 + i);
            if (y[0] != 0) break;
        }
        t = kt_now() - t0;
        sw += kt_other_switches(NULL) - s0;
        secs += t;
        allowed += 2.5 + lg2(1 + t / 0.001);
    }
    printf("sched_thread_burst rank %d: %d bursts of %.2f ms on average (%ld operations): %ld switches of the "
           "progress thread (%.2f a burst; bound %.1f in all)\n", rank, BURSTS, secs / BURSTS * 1e3, ops, sw,
           (double)sw / BURSTS, allowed);
    KT_CHECK(sw <= (long)allowed, "the progress thread switched %ld times in %d bursts of operations waited at "
             "once (bound %.0f): it woke again and again at the start of each burst", sw, BURSTS, allowed);

    /* 2. */
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    usleep(30000);
    double t = kt_ibcast_computing(42, 1);
    if (rank == 0) {
        printf("sched_thread_burst: computing after the start, the broadcast arrived after %.2f ms\n", t * 1e3);
        KT_CHECK(t < 0.5, "the broadcast arrived %.3f s after the start: the progress thread took over late", t);
    }
    MPI_Finalize();
    return 0;
}
