/* Thread engine, ranks bound by mpiexec (--bind-to core): where the host
 * has CPUs that no rank of the job is bound to, the progress thread
 * ("kumi-progress") keeps to those (set at the end of MPI_Init),
 * so its dozes and take-overs never take a rank's core (issue 22 item 4);
 * where every CPU holds a rank, it may still run on the rank's own CPUs
 * and more (kumi_base_sched_thread_anycpu 1).  The thread's CPUs are read
 * from /proc/self/task/TID (Cpus_allowed through sched_getaffinity).
 *
 * usage: --bind-to core -n N sched_thread_cpus (all ranks on one host) */
#define _GNU_SOURCE
#include "kt.h"
#include <dirent.h>
#include <stdbool.h>
#include <sched.h>
#include <unistd.h>

/* the progress thread's CPUs; false if there is no such thread */
static bool progress_cpus(cpu_set_t *set)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return false;
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(d))) {
        int tid = atoi(e->d_name);
        if (tid <= 0) continue;
        char path[64], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (!fgets(name, sizeof name, f)) name[0] = 0;
        fclose(f);
        name[strcspn(name, "\n")] = 0;
        if (strcmp(name, "kumi-progress") == 0 && sched_getaffinity(tid, sizeof *set, set) == 0) found = true;
    }
    closedir(d);
    return found;
}

static void list(const cpu_set_t *s, char *out, size_t n)
{
    size_t k = 0;
    out[0] = 0;
    for (int c = 0; c < CPU_SETSIZE && k + 8 < n; c++)
        if (CPU_ISSET(c, s)) k += (size_t)snprintf(out + k, n - k, "%s%d", k ? "," : "", c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(getenv("KUMI_INTERNAL_BIND_CPUS") != NULL, "run with --bind-to core (the rank is not bound)");

    /* every rank's CPUs: their union is what the job uses on this host */
    cpu_set_t mine, used, *all = malloc((size_t)size * sizeof *all);
    KT_CHECK(all && sched_getaffinity(0, sizeof mine, &mine) == 0, "sched_getaffinity");
    KT_MPI(MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, MPI_COMM_WORLD));
    CPU_ZERO(&used);
    for (int r = 0; r < size; r++) CPU_OR(&used, &used, &all[r]);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int nfree = 0;
    for (long c = 0; c < online && c < CPU_SETSIZE; c++)
        if (!CPU_ISSET((int)c, &used)) nfree++;

    /* non-blocking collectives (MPI_COMM_SELF: no other rank involved)
     * until the thread's CPUs leave the job's, at most 5 s */
    cpu_set_t th;
    bool seen = false, apart = false;
    double t0 = kt_now();
    do {
        int v = rank;
        MPI_Request req;
        KT_MPI(MPI_Ibcast(&v, 1, MPI_INT, 0, MPI_COMM_SELF, &req));
        KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (progress_cpus(&th)) {
            seen = true;
            cpu_set_t both;
            CPU_AND(&both, &th, &used);
            apart = CPU_COUNT(&th) > 0 && CPU_COUNT(&both) == 0;
        }
        if (nfree == 0 || apart) break;
        usleep(10000);
    } while (kt_now() - t0 < 5.0);
    KT_CHECK(seen, "no thread named kumi-progress (the thread engine's progress thread)");
    char t[256], u[256];
    list(&th, t, sizeof t);
    list(&used, u, sizeof u);
    printf("sched_thread_cpus rank %d: ranks on CPUs %s, %d of %ld CPUs free; progress thread on %s\n", rank, u,
           nfree, online, t);
    if (nfree > 0) {
        KT_CHECK(apart, "the progress thread may run on CPUs %s, some of them the job's (%s), while %d CPU(s) "
                 "hold no rank", t, u, nfree);
    } else {
        cpu_set_t both;
        CPU_AND(&both, &th, &mine);
        KT_CHECK(CPU_EQUAL(&both, &mine), "no CPU free: the progress thread (CPUs %s) should keep the rank's", t);
    }
    free(all);
    MPI_Finalize();
    return 0;
}
