/* rpim: process start (launch, wire-up, stdio, signals).
 *
 * Two sides share one component:
 *  - launcher side, used by mpiexec: spawn one rank on a host;
 *  - client side, used inside MPI_Init: learn rank/size, and a key-value
 *    exchange (put, fence, get) held by the launcher, plus abort.
 *
 * Environment handed to every rank by mpiexec (the contract between
 * mpiexec and rpim clients; a rank without KUMI_RANK is a singleton):
 *   KUMI_RANK, KUMI_SIZE          rank and size of MPI_COMM_WORLD
 *   KUMI_JOBID                    job identifier (decimal)
 *   KUMI_CONTROL                  host:port of mpiexec's control listener
 *   KUMI_JOB_SECRET               random hex key that the rank presents
 *   KUMI_RPIM                     name of the rpim component that started it
 *   KUMI_ENV_NHOSTS               number of hosts the job spans (absent: 1)
 *   KUMI_ENV_UNIVERSE             MPI_UNIVERSE_SIZE: slots mpiexec knows (absent:
 *                                 the job's size)
 * and, only when mpiexec bound the rank to CPUs (see tools/mpiexec/mpiexec.h;
 * names below as macros, under the KUMI_INTERNAL_ prefix that the parameter
 * registry does not warn about):
 *   KUMI_ENV_BIND_CPUS            OS CPU numbers the rank is bound to ("0-3,8")
 *   KUMI_ENV_BIND_LEVEL           hwthread, core or package
 *   KUMI_ENV_BIND_INDEX           logical index of that hwthread/core/package
 *   KUMI_ENV_BIND_SHARED          "1" when other ranks of the launch were bound
 *                                 to the same core / hwthread (more ranks than
 *                                 cores: --oversubscribe, :overload-allowed)
 * An unbound rank has none of them (kumi_rpim_bound_alone() reads them).  mpiexec also puts each bound
 * rank's binding into the key-value exchange (visible after the first fence,
 * so every rank can see its peers'): keys KUMI_KVS_BIND_CPUS,
 * KUMI_KVS_BIND_LEVEL, KUMI_KVS_BIND_INDEX of that rank, same values.
 *
 * A rank started by a PMIx launcher (srun --mpi=pmix: PMIX_NAMESPACE and
 * PMIX_RANK, no KUMI_RANK) is rpim/pmix's: it sets KUMI_JOBID,
 * KUMI_JOB_SECRET and KUMI_ENV_NHOSTS itself (components/rpim/pmix), and the
 * node's name through kumi_set_hostname(), so that components read the same
 * things whoever started the job.
 *
 * Children started by kumi_rpim_spawn (MPI_Comm_spawn's launcher side) are
 * a job of their own (their own KUMI_JOBID, KUMI_JOB_SECRET, KUMI_SIZE =
 * the total maxprocs, ranks in the order of the commands) and also get:
 *   KUMI_SPAWNED=1                started by another job's spawn request
 *   KUMI_PARENT_JOBID             KUMI_JOBID of the job that asked for them
 *   KUMI_APPNUM                   index of the child's command (MPI_APPNUM)
 *   and every KEY=VALUE string the request carried (e.g.
 *   KUMI_DPM_PARENT_PORT=<port name>), which replace inherited ones.
 *
 * The control channel behind KUMI_CONTROL (frames, message codes, limits, the
 * job's shared-memory naming rule) is kumi/launch_proto.h.
 */
#ifndef KUMI_RPIM_H
#define KUMI_RPIM_H

#include <stdbool.h>
#include <sys/types.h>
#include <kumi/kumi.h>
#include <kumi/component.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KUMI_ENV_NHOSTS     "KUMI_INTERNAL_NHOSTS"
#define KUMI_ENV_UNIVERSE   "KUMI_INTERNAL_UNIVERSE_SIZE"
#define KUMI_ENV_BIND_CPUS  "KUMI_INTERNAL_BIND_CPUS"
#define KUMI_ENV_BIND_LEVEL "KUMI_INTERNAL_BIND_LEVEL"
#define KUMI_ENV_BIND_INDEX "KUMI_INTERNAL_BIND_INDEX"
#define KUMI_ENV_BIND_SHARED "KUMI_INTERNAL_BIND_SHARED"
/* mpiexec --impi-client (tools/mpiexec/impi.c, components/p2p/impi):
 * this launch is one IMPI client; its ranks are MPI_COMM_WORLD ranks FIRST ...
 * of SIZE ("FIRST:SIZE"); the key-value exchange knows only them (rank
 * numbers are world ranks, the others have no keys).  JOB: a file with the
 * start-up's replies (p2p/impi reads it); FDS: the listening sockets of the
 * IMPI hosts, one per rank ("fd,fd,..." by rank in this launch). */
#define KUMI_ENV_IMPI_WORLD "KUMI_INTERNAL_IMPI_WORLD"
#define KUMI_ENV_IMPI_JOB   "KUMI_INTERNAL_IMPI_JOB"
#define KUMI_ENV_IMPI_FDS   "KUMI_INTERNAL_IMPI_FDS"
/* "LOCKFD:H=FD,H=FD,...": the connections of this launch's IMPI host to the
 * other hosts (global host rank H, descriptor FD), shared by the ranks, which
 * write their packets to them directly, a whole packet under the host's
 * process-shared mutex (entry H of the pthread_mutex_t array in LOCKFD, a
 * memfd); what comes in on them the agent (mpiexec) relays.  With
 * p2p_impi_host_per_rank=1: "LOCKFD:LIST;LIST;..." one list per launch rank
 * (each rank its own IMPI host, reading its connections itself). */
#define KUMI_ENV_IMPI_HOSTS "KUMI_INTERNAL_IMPI_HOSTS"
/* "FD:NHOSTS": a memfd holding one struct kumi_impi_pacing (kumi/impi.h) per
 * IMPI host (global host rank), the pacing state of this launch's shared
 * connections (pacing/sockrate); absent with p2p_impi_host_per_rank=1. */
#define KUMI_ENV_IMPI_PACING "KUMI_INTERNAL_IMPI_PACING"
/* The job's identity (kumi_req_job_uid, 16 hex digits), the same in every
 * client: a hash of the server's label replies, which every client got
 * alike (each launch's own job secret differs from client to client). */
#define KUMI_ENV_IMPI_UID   "KUMI_INTERNAL_IMPI_UID"
#define KUMI_KVS_BIND_CPUS  "kumi.bind.cpus"
#define KUMI_KVS_BIND_LEVEL "kumi.bind.level"
#define KUMI_KVS_BIND_INDEX "kumi.bind.index"

#define KUMI_KVS_KEY_MAX 256
#define KUMI_KVS_VAL_MAX 1024

struct kumi_rpim_info {
    int rank;                  /* out */
    int size;                  /* out */
    long jobid;                /* out */
};

/* What mpiexec asks a launcher to start. */
struct kumi_spawn {
    int rank;
    const char *host;          /* NULL or "localhost": this host */
    char *const *argv;         /* program and its arguments */
    char *const *envp;         /* full environment of the new rank */
    int stdin_fd;              /* child's stdin (read end), or -1 for /dev/null */
    int stdout_fd;             /* child's stdout (write end) */
    int stderr_fd;             /* child's stderr (write end) */
    const int *close_fds;      /* fds the child must close (other ranks' pipes) */
    int nclose_fds;
    /* CPU binding, applied in the child before exec: a cpu_set_t of
     * cpuset_size bytes (CPU_ALLOC'ed) for sched_setaffinity; NULL: the
     * child keeps the launcher's affinity.  A launcher that cannot bind
     * on the target host ignores it. */
    const void *cpuset;
    size_t cpuset_size;
};

/* One command of a spawn request (MPI_Comm_spawn_multiple's arrays). */
struct kumi_spawn_cmd {
    const char *command;           /* program: a path, or a name searched in the
                                      info key "path", then in mpiexec's PATH */
    char *const *argv;             /* arguments after the program, NULL-terminated
                                      (NULL: none) */
    int maxprocs;                  /* >= 1 */
    int ninfo;                     /* info keys understood by mpiexec: host, add-host,
                                      hostfile, add-hostfile, file, wdir, path */
    const char *const *info_keys;
    const char *const *info_vals;
};

/* The rpim contract (see kumi/component.h for the rules):
 *   1.0  spawn ... client_finalize; the whole table is mandatory (an
 *        operation a component does not offer is NULL).
 *   1.1  spawn_job (optional).
 * Operations added later go at the end and raise the minor. */
#define KUMI_RPIM_CONTRACT_MAJOR 1
#define KUMI_RPIM_CONTRACT_MINOR 1
#define KUMI_RPIM_OPS_HDR KUMI_OPS_HDR(struct kumi_rpim_ops, KUMI_RPIM_CONTRACT_MAJOR, KUMI_RPIM_CONTRACT_MINOR)
/* Size of the mandatory part: every table is at least this long. */
#define KUMI_RPIM_OPS_MIN_SIZE (offsetof(struct kumi_rpim_ops, client_finalize) + \
                                sizeof(int (*)(void)))

struct kumi_rpim_ops {
    struct kumi_ops_hdr hdr;   /* KUMI_RPIM_OPS_HDR */
    /* ---- launcher side (mpiexec) ---- */
    /* Start one rank; the child is the leader of its own process group.
     * *pid receives the local process id that mpiexec waits for. */
    int (*spawn)(const struct kumi_spawn *sp, pid_t *pid);

    /* ---- client side (inside an MPI process) ---- */
    /* Fill info if this process was started by this component (see the
     * environment above); KUMI_UNAVAILABLE otherwise. */
    int (*client_init)(struct kumi_rpim_info *info);
    /* Key-value exchange: put before fence; after fence every rank can get
     * every rank's keys.  Values are NUL-terminated strings. */
    int (*put)(const char *key, const char *value);
    int (*fence)(void);
    int (*get)(int rank, const char *key, char *value, size_t valuelen);
    /* Tell the launcher this job aborts with errorcode (message may be
     * NULL); the launcher stops every rank. Returns after the launcher has
     * been told (or could not be), the caller then exits. */
    void (*abort)(int errorcode, const char *msg);
    /* Orderly end of this rank (after MPI_Finalize's last communication). */
    int (*client_finalize)(void);
    /* ---- 1.1 (optional: NULL or absent in older tables) ----
     * Start a new job of the children of cmds (see kumi_rpim_spawn). */
    int (*spawn_job)(const struct kumi_spawn_cmd *cmds, int ncmds, const char *const *env, int *errcodes,
                     char *child_jobid, size_t len);
};

/* Framework access to the selected rpim client (singleton jobs get a local
 * table).  For use by transports at wire-up. */
KUMI_EXPORT int kumi_rpim_put(const char *key, const char *value);
KUMI_EXPORT int kumi_rpim_get(int rank, const char *key, char *value, size_t valuelen);
/* The number of ranks this launcher started: MPI_COMM_WORLD's size, except
 * in an IMPI client's launch (mpiexec --impi-client), whose world also holds
 * the other clients' ranks, started elsewhere. */
KUMI_EXPORT int kumi_rpim_launch_size(void);
/* Whether mpiexec bound this rank to CPUs that no other rank of its launch
 * was bound to (KUMI_ENV_BIND_CPUS without KUMI_ENV_BIND_SHARED): a rank
 * that may spin while it waits, since nobody else of the job wants its core. */
KUMI_EXPORT bool kumi_rpim_bound_alone(void);
/* More ranks of this launch on this host (the launch spread evenly over
 * KUMI_ENV_NHOSTS hosts) than CPUs this rank may run on?  *pinned (may be
 * NULL): the rank may run on fewer CPUs than the host has online. */
KUMI_EXPORT bool kumi_rpim_host_oversubscribed(bool *pinned);
/* Does this rank share its core with another rank of its launch: bound by
 * mpiexec with others to it (KUMI_ENV_BIND_SHARED), or unbound on a host
 * that is oversubscribed (kumi_rpim_host_oversubscribed)? */
KUMI_EXPORT bool kumi_rpim_shares_core(void);
/* Whether MPI_COMM_WORLD rank `rank` was started by this launcher (false
 * for another IMPI client's rank: it has no keys here, and shares no
 * host's memory with this process). */
KUMI_EXPORT int kumi_rpim_in_launch(int rank);

/* Ask the launcher that started this process (mpiexec) to start a new job:
 * cmds[0..ncmds) each with maxprocs children; its MPI_COMM_WORLD has the
 * total maxprocs ranks, in command order; env: NULL or a NULL-terminated
 * list of KEY=VALUE given to every child (besides KUMI_SPAWNED=1,
 * KUMI_PARENT_JOBID, KUMI_APPNUM above).  All or nothing: returns
 * MPI_SUCCESS when every child was started (errcodes[i] = MPI_SUCCESS for
 * each of the total maxprocs, child_jobid = the new job's KUMI_JOBID);
 * otherwise MPI_ERR_SPAWN (with the launcher's reason as the error's
 * message; nothing was started, every errcodes[i] = MPI_ERR_SPAWN,
 * child_jobid = "") -- also for a singleton, and under a launcher that
 * cannot spawn (rpim/pmix, ranks behind mpiexec's per-host proxies);
 * MPI_ERR_ARG for bad arguments.  errcodes may be NULL; child_jobid may be
 * NULL (len 0).  Only the calling process talks to the launcher (the MPI
 * glue calls it at the root).  Returns once the children were started, not
 * once they called MPI_Init. */
KUMI_EXPORT int kumi_rpim_spawn(const struct kumi_spawn_cmd *cmds, int ncmds, const char *const *env,
                                int *errcodes, char *child_jobid, size_t len);

#ifdef __cplusplus
}
#endif
#endif
