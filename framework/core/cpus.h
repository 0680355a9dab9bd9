/* CPU sets for the library's own threads in a rank bound to cores (cpus.c).
 * Include it with _GNU_SOURCE defined before the first system header
 * (cpu_set_t). */
#ifndef KUMI_CORE_CPUS_H
#define KUMI_CORE_CPUS_H
#include <sched.h>
#include <stdbool.h>

/* The CPUs a helper thread of this rank may run on: false when mpiexec did
 * not bind the rank (or anycpu is 0: the thread keeps the rank's CPUs);
 * anycpu 1: the rank's CPUs and those of its NUMA nodes, 2: every online CPU. */
bool kumi_cpus_helper(int anycpu, cpu_set_t *set);
/* The CPUs of *set bound to no other rank of the launch on this host: false
 * (keep *set) when there are none, a rank's binding is not known, the rank
 * shares its core, or the launch is large. */
bool kumi_cpus_free(const cpu_set_t *set, cpu_set_t *free_set);
#endif
