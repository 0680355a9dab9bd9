/* kt_threads.h: what the other threads of this process (the progress
 * thread) did, read from /proc (sched_thread_wait, sched_thread_wake).
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
#endif
