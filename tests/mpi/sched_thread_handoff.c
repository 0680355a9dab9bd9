/* Thread engine below MPI_THREAD_MULTIPLE: the library lock is off, and the
 * progress thread raises the entries' flag when it takes a schedule over
 * (core/lock.c); the application's next call then takes the lock, and the
 * thread lowers the flag once the application is back.  No wake-up may be
 * lost in that hand-over: run with a long kumi_base_progress_sleep_ms (60 s),
 * so a waiter that nobody wakes hangs for a minute.
 *
 * Each round rank 0 starts an MPI_Ibcast (root 1) and computes for c ms
 * without calling MPI (its progress thread takes the schedule over, raises
 * the flag and sleeps in poll() for the message), then waits (MPI_Wait or
 * MPI_Test in a loop, by turns).  Rank 1 starts its MPI_Ibcast d ms after
 * the round's barrier; c and d vary, so the message arrives before, during
 * and after the computation, and rank 0's wait meets the thread asleep in
 * poll(), working, or gone back to dozing.  The wait must end within
 * max(0, d - c) + 2 s (not after the 60 s sleep), with the right value; a
 * second MPI_Iallreduce in the round must give the right sum.
 *
 * usage: -n 2 sched_thread_handoff [ROUNDS (40)] */
#define _GNU_SOURCE
#include "kt.h"
#include <time.h>
#include <unistd.h>

static void compute(double ms)
{
    double t0 = kt_now();
    volatile double x = 1.0;
    while ((kt_now() - t0) * 1e3 < ms)
        for (int i = 0; i < 200; i++) x = x * 1.0000001 + 1e-9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "usage: -n 2 sched_thread_handoff");
    int rounds = argc > 1 ? atoi(argv[1]) : 40;
    double worst = 0;
    for (int i = 0; i < rounds; i++) {
        double c = (i % 5) * 3.0, d = ((i * 7) % 11) * 2.0;   /* ms */
        double want = 1000.0 + i, buf = rank == 1 ? want : -1;
        MPI_Request r;
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 1) {
            usleep((useconds_t)(d * 1000));
            KT_MPI(MPI_Ibcast(&buf, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD, &r));
            KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            KT_MPI(MPI_Ibcast(&buf, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD, &r));
            compute(c);
            double tw = kt_now();
            if (i % 2 == 0) {
                KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
            } else {
                int flag = 0;
                while (!flag) {
                    KT_MPI(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
                    if (!flag) usleep(200);
                }
            }
            double late = kt_now() - tw - (d > c ? (d - c) * 1e-3 : 0);
            if (late > worst) worst = late;
            if (late > 2.0)
                KT_FAIL("round %d (compute %g ms, root %g ms late): the wait took %.3f s too long (a lost "
                        "wake-up: the sleep is 60 s)", i, c, d, late);
        }
        if (buf != want) KT_FAIL("round %d: MPI_Ibcast gave %g, expected %g", i, buf, want);
        int v = rank + i, s = -1;
        KT_MPI(MPI_Iallreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
        if (rank == 0) compute(c);
        KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (s != 1 + 2 * i) KT_FAIL("round %d: MPI_Iallreduce gave %d, expected %d", i, s, 1 + 2 * i);
    }
    if (rank == 0) printf("sched_thread_handoff: %d rounds, worst wait beyond the message %.3f s\n", rounds, worst);
    MPI_Finalize();
    return 0;
}
