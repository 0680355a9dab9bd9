/* Slurm allocations for tools (mpiexec inside salloc / sbatch): the
 * allocation's host list and tasks per node, from Slurm's compressed syntax.
 *
 *   SLURM_JOB_NODELIST="node[01-03,7],gpu5"  -> node01 node02 node03 node7 gpu5
 *   SLURM_TASKS_PER_NODE="2(x3),1"           -> 2 2 2 1   (same syntax:
 *   SLURM_JOB_CPUS_PER_NODE)
 *
 * Host list syntax (as `scontrol show hostnames` expands it): names
 * separated by commas (or white space) outside brackets; a name may hold
 * bracket groups "[a-b,c,...]" of decimal numbers and ranges; a range keeps
 * the zero padding of its lower bound ("[08-10]" -> 08 09 10, "[8-10]" -> 8 9
 * 10); several groups in one name give every combination, the last group
 * varying fastest ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2).  Order and
 * duplicates are kept as written, empty names (",,") skipped.  Text after
 * the last group ("n[1-2]x") is accepted, although Slurm refuses it.
 *
 * Notes for mpiexec inside an allocation (as MPICH's Hydra does):
 *   - it is inside one when SLURM_JOB_ID is set (salloc's shell, an sbatch
 *     script); hosts: kumi_slurm_hosts_expand(SLURM_JOB_NODELIST), slots per
 *     host: kumi_slurm_counts_expand(SLURM_TASKS_PER_NODE) (what the user
 *     asked with -n / --ntasks-per-node), or SLURM_JOB_CPUS_PER_NODE;
 *   - start one proxy per host as ONE job step:
 *       srun --nodes=H --ntasks=H --ntasks-per-node=1 --nodelist=<hosts>
 *            --kill-on-bad-exit=1 --mpi=none --input=none
 *            --cpu-bind=none --export=ALL  <proxy> ...
 *     (not --exact: since Slurm 21.08 a step without it gets every CPU of
 *     the allocation on its nodes, so that the ranks a proxy forks, which
 *     stay in its step and cgroup, are not held to the one CPU of a one-task
 *     step; --mpi=none: no PMIx server for the proxies; --overlap when
 *     another step already holds the CPUs);
 *     each proxy learns which host it serves from SLURM_NODEID (index into
 *     the expanded list, the step's node order) or SLURMD_NODENAME;
 *   - the job secret must not go on srun's command line: srun passes the
 *     caller's environment (--export=ALL), or the proxy reads it from its
 *     stdin / the control connection;
 *   - killing srun (SIGTERM twice within a second, or SIGKILL of srun plus
 *     `scancel <jobid>.<stepid>`) ends every proxy of the step.
 * Tested by tests/unit/test_slurm_hosts.c (against `scontrol show
 * hostnames` where Slurm is installed).
 */
#ifndef KUMI_TOOLS_SLURM_HOSTS_H
#define KUMI_TOOLS_SLURM_HOSTS_H

#include <stddef.h>

#define KUMI_SLURM_HOSTS_MAX (1 << 20)   /* longest expansion accepted */

/* Expand a host list.  0: *hosts is a malloc'ed array of *n malloc'ed names
 * (free with kumi_slurm_hosts_free); -1: err says what is wrong (where), and
 * *hosts is NULL.  An empty or all-blank list is an error. */
int kumi_slurm_hosts_expand(const char *list, char ***hosts, int *n, char *err, size_t errlen);
void kumi_slurm_hosts_free(char **hosts, int n);

/* Expand "2(x3),1" (SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE) into
 * *counts (malloc'ed, *n entries); 0 or -1 with err. */
int kumi_slurm_counts_expand(const char *spec, int **counts, int *n, char *err, size_t errlen);

#endif
