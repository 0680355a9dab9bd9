/* kt_threads.h: what the other threads of this process (the progress
 * thread) did, read from /proc (sched_thread_wait, sched_thread_wake), and
 * whether it takes a schedule over while the application computes.
 *
 * kt_other_switches(maxcpus): the context switches (voluntary +
 * involuntary) of every thread but the main one; with maxcpus not NULL, the
 * largest number of CPUs one of them may run on goes there.  -1 when
 * /proc/self/task cannot be read. */
#ifndef KT_THREADS_H
#define KT_THREADS_H
#include "kt.h"
#include <dirent.h>
#include <sched.h>
#include <unistd.h>

static long kt_other_switches(int *maxcpus)
{
    long sum = 0;
    if (maxcpus) *maxcpus = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        int tid = atoi(e->d_name);
        if (tid <= 0 || tid == getpid()) continue;
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        while (fgets(line, sizeof line, f)) {
            long v;
            if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1) sum += v;
            if (sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1) sum += v;
        }
        fclose(f);
        cpu_set_t set;
        if (maxcpus && sched_getaffinity(tid, sizeof set, &set) == 0 && CPU_COUNT(&set) > *maxcpus)
            *maxcpus = CPU_COUNT(&set);
    }
    closedir(d);
    return sum;
}

/* kt_ibcast_computing(v, root): an MPI_Ibcast of one double on
 * MPI_COMM_WORLD that the root starts 5 ms after the others; they compute
 * meanwhile without calling MPI, watching their buffer, so the value
 * arrives only if their progress thread takes the schedule over.  Checks
 * that it arrives (within 10 s) and returns, on the others, how long that
 * took after their start (seconds); 0 on the root. */
static inline double kt_ibcast_computing(double v, int root)
{
    int rank;
    MPI_Request req;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    volatile double buf = rank == root ? v : -1;
    if (rank == root) {
        usleep(5000);                   /* after the others' start: their threads must take it over */
        KT_MPI(MPI_Ibcast((void *)&buf, 1, MPI_DOUBLE, root, MPI_COMM_WORLD, &req));
        KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        return 0;
    }
    double t0 = kt_now(), t;
    KT_MPI(MPI_Ibcast((void *)&buf, 1, MPI_DOUBLE, root, MPI_COMM_WORLD, &req));
    volatile double x = 1;
    while (buf != v && kt_now() - t0 < 10)      /* computing: no MPI call */
        for (int i = 0; i < 1000; i++) x = x * 1.0000001;
    t = kt_now() - t0;
    int flag = 0;
    KT_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
    if (!flag) KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    KT_CHECK(buf == v, "buf = %g after 10 s of computing: the progress thread did not take over", (double)buf);
    return t;
}
#endif
