/* Thread engine: a progress thread asleep is woken by the message it waits
 * for, and by the start of a collective (issue 22).  Run with a long
 * kumi_base_progress_sleep_ms (60 s): what wakes the thread must be the
 * event itself, not the end of a timed sleep.
 *
 *  1. Both ranks stay out of the library for 0.3 s: rank 0's progress
 *     thread falls asleep until work comes.  Rank 0 then starts an
 *     MPI_Ibcast of 8 bytes (root 1) and computes without calling MPI,
 *     watching its buffer: the start must wake the thread, which takes the
 *     schedule over.  Rank 1 (the root) starts its MPI_Ibcast only 0.3 s
 *     later, so the thread sleeps meanwhile (in poll() on the transports'
 *     descriptors); the arriving message must wake it: the buffer changes
 *     within 0.3 s + 0.5 s of rank 0's start, not after the 60 s sleep.
 *  2. While it waited, rank 0's progress thread switched a handful of
 *     times, not once per millisecond (a sleep, not a poll loop).
 *  3. Several rounds in a row, each after the thread fell asleep again.
 *  4. An application that starts a collective every millisecond and waits
 *     for it at once (MPI_Iallreduce + MPI_Wait, then 1 ms outside the
 *     library) keeps the thread dozing (dozes of at most 4 ms: ~0.3
 *     switches of the progress thread per operation), instead of letting
 *     it fall asleep after each operation and waking it at each start
 *     (before: 1.1-1.4 per operation, a FUTEX_WAKE by the application and
 *     a switch each).  The bound is 20 + 1.5 x the run's time / 4 ms,
 *     whatever the machine's speed.
 *  5. The same with 8 ms outside the library between operations (more
 *     than the 5 ms after which the thread used to fall asleep, less than
 *     its linger of 3 x kumi_base_sched_thread_doze_max_us), after a second
 *     without a take-over (the linger's condition): values checked,
 *     switches bounded as in 4.  That the starts then find the thread
 *     dozing, so that none pays a FUTEX_WAKE, shows in the thread's
 *     KUMI_VERBOSE=2 summary ("woken by N starts"): tests/scripts/
 *     sched_thread_linger.sh checks it.
 *
 * usage: -n 2 sched_thread_wake [nobound]   (nobound: switch counts not checked) */
#define _GNU_SOURCE
#include "kt.h"
#include "kt_threads.h"
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "usage: -n 2 sched_thread_wake");
    /* "nobound": the switch counts are printed, not checked (sched_thread_linger.sh with other dozes) */
    bool bound = !(argc > 1 && !strcmp(argv[1], "nobound"));

    /* One collective first: the progress thread exists from then on. */
    volatile double buf = 0;
    MPI_Request req;
    double one = 1;
    KT_MPI(MPI_Ibcast(&one, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD, &req));
    KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));

    enum { ROUNDS = 3 };
    for (int round = 0; round < ROUNDS; round++) {
        double want = 100.0 + round;
        buf = rank == 1 ? want : -1;
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        usleep(300000);                 /* the progress thread falls asleep */
        if (rank == 1) {
            usleep(300000);             /* rank 0's thread sleeps in its wait for the message */
            KT_MPI(MPI_Ibcast((void *)&buf, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD, &req));
            KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            long s0 = kt_other_switches(NULL);
            double t0 = kt_now(), t = 0;
            KT_MPI(MPI_Ibcast((void *)&buf, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD, &req));
            volatile double x = 1;
            while (buf != want && (t = kt_now() - t0) < 10)   /* computing: no MPI call */
                for (int i = 0; i < 1000; i++) x = x * 1.0000001;
            t = kt_now() - t0;
            long sw = kt_other_switches(NULL) - s0;
            int flag = 0;
            KT_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
            if (!flag) KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            printf("sched_thread_wake round %d: the broadcast arrived %.3f s after the start (the root "
                   "sent after ~0.3 s); progress thread: %ld context switches meanwhile\n", round, t, sw);
            KT_CHECK(buf == want, "round %d: buf = %g after 10 s of computing (the progress thread was not "
                     "woken: by the start, or by the arriving message)", round, (double)buf);
            KT_CHECK(t < 0.8, "round %d: the broadcast arrived %.3f s after the start (the root sent after "
                     "~0.3 s): the progress thread was woken late", round, t);
            KT_CHECK(!bound || sw <= 60, "round %d: the progress thread switched %ld times in %.3f s (it should sleep)",
                     round, sw, t);
        }
    }

    /* 4., 5. */
    static const struct { int ops, gap_us; } part[2] = { { 400, 1000 }, { 100, 8000 } };
    for (int p = 0; p < 2; p++) {
        int ops = part[p].ops;
        if (p == 1) usleep(1100000);    /* part 5: a second after rank 0's thread last took a schedule over (parts
                                           1-3): it lingers its 12 ms only where the application waits at once */
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        long s0 = kt_other_switches(NULL);
        double t0 = kt_now();
        for (int i = 0; i < ops; i++) {
            double a = rank + i, b = 0;
            KT_MPI(MPI_Iallreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req));
            KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            if (b != 2.0 * i + 1) KT_FAIL("operation %d: b = %g, expected %g", i, b, 2.0 * i + 1);
            usleep((useconds_t)part[p].gap_us);
        }
        long sw = kt_other_switches(NULL) - s0;
        double secs = kt_now() - t0;
        printf("sched_thread_wake rank %d: %d x (Iallreduce + Wait, %d ms out) in %.3f s: progress thread %ld "
               "context switches (%.2f per operation)\n", rank, ops, part[p].gap_us / 1000, secs, sw, (double)sw / ops);
        KT_CHECK(!bound || sw <= 20 + (long)(secs / 0.004 * 1.5), "the progress thread switched %ld times for %d operations "
                 "%d ms apart (it should doze on while they keep coming, not sleep and be woken by each start)",
                 sw, ops, part[p].gap_us / 1000);
    }
    MPI_Finalize();
    return 0;
}
