/* Thread engine, an application that waits at once: MPI_Iallreduce (8
 * bytes) followed by MPI_Wait costs the application no hand-over to the
 * progress thread (issue 22 item 4): the application runs the schedule
 * itself in its wait, the progress thread is not woken for it, so the
 * progress thread's context switches over 2000 such pairs stay a handful.
 * Before, every start woke the thread (condition variable) and every exit
 * from the library while the schedule ran woke it again (futex): hundreds
 * to thousands of switches.  Run with kumi_base_sched_thread_delay_us set
 * high (0.2 s) so the count does not depend on how fast the machine is.
 *
 * Also: with the delay, a collective the application does not wait for
 * still completes (the thread takes over once the application has stayed
 * out of the library that long), and where mpiexec bound the rank to one
 * CPU of several, the progress thread may run on the others.
 *
 * usage: -n 2 sched_thread_wait */
#define _GNU_SOURCE
#include "kt.h"
#include "kt_threads.h"
#include <sched.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "usage: -n 2 sched_thread_wait");
    (void)argc; (void)argv;

    /* One pair first: the progress thread exists from then on. */
    double a = rank + 1, b = 0;
    MPI_Request req;
    KT_MPI(MPI_Iallreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req));
    KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    KT_CHECK(b == 3, "b = %g", b);
    usleep(100000);                     /* the new thread gets a CPU and sets itself up */
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    enum { PAIRS = 2000 };
    int cpus = 0;
    long s0 = kt_other_switches(&cpus);
    KT_CHECK(s0 >= 0, "cannot read /proc/self/task");
    double t0 = kt_now();
    for (int i = 0; i < PAIRS; i++) {
        a = rank + i;
        KT_MPI(MPI_Iallreduce(&a, &b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req));
        KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (b != 2.0 * i + 1) KT_FAIL("pair %d: b = %g, expected %g", i, b, 2.0 * i + 1);
    }
    double secs = kt_now() - t0;
    long sw = kt_other_switches(&cpus) - s0;
    printf("sched_thread_wait rank %d: %d Iallreduce+Wait in %.3f s (%.2f us each); progress thread: "
           "%ld context switches, may run on %d CPUs\n", rank, PAIRS, secs, secs / PAIRS * 1e6, sw, cpus);
    /* A doze of 0.2 s: at most secs / 0.2 + a few, whatever the machine's speed. */
    KT_CHECK(sw <= 20 + (long)(secs / 0.2) * 2,
             "the progress thread switched %ld times for %d Iallreduce+Wait pairs", sw, PAIRS);

    /* Where the rank is bound to fewer CPUs than the host has online, the
     * progress thread may use the others. */
    cpu_set_t mine;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (getenv("KUMI_INTERNAL_BIND_CPUS") && sched_getaffinity(0, sizeof mine, &mine) == 0 &&
        CPU_COUNT(&mine) < online) {
        KT_CHECK(cpus > CPU_COUNT(&mine), "the progress thread of a rank bound to %d CPU(s) may run on "
                 "%d only (the host has %ld online)", CPU_COUNT(&mine), cpus, online);
    }

    /* A collective the application does not wait for at once still
     * completes: rank 1 stays out of the library for 1.5 s after
     * MPI_Iallreduce of 1 MiB (a rendezvous: rank 1 must act), and rank 0's
     * wait ends well before that once rank 1's progress thread takes over
     * (after 0.2 s). */
    double tb, done = 0;
    enum { N = 1 << 17 };
    double *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    for (int i = 0; i < N; i++) in[i] = rank + i;
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    tb = kt_now();
    KT_MPI(MPI_Iallreduce(in, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req));
    if (rank == 1) {
        volatile double x = 1;
        while (kt_now() - tb < 1.5) x = x * 1.0000001;
        KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        done = kt_now() - tb;
    }
    for (int i = 0; i < N; i++)
        if (out[i] != 1 + 2.0 * i) KT_FAIL("out[%d] = %g", i, out[i]);
    if (rank == 0) {
        printf("sched_thread_wait: rank 0's Iallreduce of 1 MiB ended after %.3f s while rank 1 computed 1.5 s\n",
               done);
        KT_CHECK(done < 1.2, "the progress thread did not take the collective over (%.3f s)", done);
    }
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
