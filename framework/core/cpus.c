/* Where the library's own threads run in a rank that mpiexec bound to cores
 * (KUMI_ENV_BIND_CPUS): the progress thread of the sched engines
 * (sched/engine.c) and the device proxy of MPIX_Gpu_start (mpi/gpu.c).
 *
 * A helper thread left on the rank's core shares it with the rank's own
 * thread, which may compute or spin there (a CUDA application's thread
 * spins in cudaDeviceSynchronize while its kernel runs): the helper then
 * runs only when the kernel's scheduler takes the core from that thread, a
 * slice later (about 4 ms on a 16-CPU machine), and every request it serves
 * waits that long.  So a helper may run on more CPUs (the kernel intersects
 * the set with the cgroup's): those of the NUMA nodes that hold one of the
 * rank's cores (the thread touches the rank's buffers and the node's shared
 * segments), or every online CPU (and where sysfs says nothing about nodes);
 * and, where CPUs of that set are bound to no rank of the launch on this
 * host, it keeps to those, so that it never lands on a core a rank computes
 * or waits on (the kernel otherwise places a woken thread on the core it
 * last ran on when that one is idle for a moment, and a rank's core often
 * is between two polls). */
#define _GNU_SOURCE                     /* CPU_SET, sched_getaffinity */
#include "core/core.h"
#include "core/cpus.h"
#include <kumi/rpim.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Adds the CPUs of a list such as "0-3,8" to *set; false if it named none. */
static bool cpus_parse(const char *buf, cpu_set_t *set)
{
    bool any = false;
    for (const char *p = buf; *p && *p != '\n';) {
        char *e;
        long a = strtol(p, &e, 10), b = a;
        if (e == p) break;
        if (*e == '-') { p = e + 1; b = strtol(p, &e, 10); if (e == p) break; }
        for (long c = a; c <= b && c < CPU_SETSIZE; c++) if (c >= 0) { CPU_SET((int)c, set); any = true; }
        p = *e == ',' ? e + 1 : e;
    }
    return any;
}

static bool add_cpulist(const char *path, cpu_set_t *set)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return cpus_parse(buf, set);
}

/* The CPUs of the NUMA nodes holding one of mine; false if sysfs has none. */
static bool node_cpus(const cpu_set_t *mine, cpu_set_t *out)
{
    CPU_ZERO(out);
    bool found = false;
    for (int node = 0, misses = 0; node < 4096 && misses < 64; node++) {
        char path[96];
        cpu_set_t nset;
        CPU_ZERO(&nset);
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node);
        if (!add_cpulist(path, &nset)) { misses++; continue; }
        misses = 0;
        cpu_set_t both;
        CPU_AND(&both, &nset, mine);
        if (CPU_COUNT(&both) > 0) { CPU_OR(out, out, &nset); found = true; }
    }
    return found;
}

bool kumi_cpus_helper(int anycpu, cpu_set_t *set)
{
    cpu_set_t mine;
    if (!anycpu || !getenv(KUMI_ENV_BIND_CPUS) || sched_getaffinity(0, sizeof mine, &mine) != 0) return false;
    if (anycpu == 1 && node_cpus(&mine, set)) {
        CPU_OR(set, set, &mine);
        return true;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0) return false;
    CPU_ZERO(set);
    for (long i = 0; i < n && i < CPU_SETSIZE; i++) CPU_SET((int)i, set);
    return true;
}

/* Not for a rank that shares its core with others (oversubscribed: no core
 * is free), nor for launches of more than KUMI_FREE_CPUS_RANKS ranks (the
 * look-ups scan a table that grows with the ranks: some milliseconds at
 * that size).  Two look-ups in the local table per rank, ending once every
 * CPU of the set holds a rank; the launch's bindings are in the key-value
 * exchange once the start-up's fence is behind. */
#define KUMI_FREE_CPUS_RANKS 128
bool kumi_cpus_free(const cpu_set_t *set, cpu_set_t *free_set)
{
    cpu_set_t used, both;
    if (getenv(KUMI_ENV_BIND_SHARED) || kumi_rpim_launch_size() > KUMI_FREE_CPUS_RANKS) return false;
    if (sched_getaffinity(0, sizeof used, &used) != 0) return false;
    int n = kumi_world_size(), me = kumi_world_rank();
    for (int r = 0; r < n; r++) {
        char v[KUMI_KVS_VAL_MAX];
        if (r == me || !kumi_rpim_in_launch(r)) continue;
        /* a rank whose host or binding is not known: keep the set */
        if (kumi_rpim_get(r, "kumi.hostid", v, sizeof v) != MPI_SUCCESS) return false;
        if (strcmp(v, kumi_host_id()) != 0) continue;
        if (kumi_rpim_get(r, KUMI_KVS_BIND_CPUS, v, sizeof v) != MPI_SUCCESS) return false;
        cpus_parse(v, &used);
        CPU_OR(&both, set, &used);
        if (CPU_EQUAL(&both, &used)) return false;    /* every CPU of the set holds a rank */
    }
    CPU_ZERO(free_set);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, set) && !CPU_ISSET(c, &used)) CPU_SET(c, free_set);
    return CPU_COUNT(free_set) > 0;
}
