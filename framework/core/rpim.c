/* The process's state (kumi_state, the thread level, the table of
 * predefined handles) and the glue to the rpim client: choosing the rpim
 * component that joins the job (or none: a singleton), the key-value
 * exchange (kumi/rpim.h), the fence, and aborting the job. */
#define _GNU_SOURCE                     /* sched_getaffinity, CPU_COUNT */
#include "core/core.h"
#include "registry/registry.h"
#include <kumi/rpim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

void *kumi_predef[KUMI_PREDEF_MAX];
enum kumi_state kumi_state = KUMI_STATE_PRE;
int kumi_thread_level = MPI_THREAD_SINGLE;
int kumi_sessions_active;               /* sessions open in this process (mpi/session.c) */
extern int kumi_core_world_rank, kumi_core_world_size;

static const struct kumi_rpim_ops *rpim;          /* NULL: singleton */
static struct kumi_comp_entry *rpim_entry;
/* An IMPI client's launch (mpiexec --impi-client; KUMI_ENV_IMPI_WORLD =
 * "FIRST:SIZE"): the launcher's ranks are MPI_COMM_WORLD ranks FIRST ...
 * FIRST + its size - 1 of a world of SIZE; the key-value exchange holds
 * only them (other clients' ranks have no keys here). */
static int world_first, launch_size = -1;

int kumi_rpim_launch_size(void)
{
    return launch_size >= 0 ? launch_size : kumi_core_world_size;
}

bool kumi_rpim_bound_alone(void)
{
    return getenv(KUMI_ENV_BIND_CPUS) != NULL && getenv(KUMI_ENV_BIND_SHARED) == NULL;
}

/* The ranks of this launch only: an IMPI client's MPI_COMM_WORLD also holds
 * the other clients' ranks, which run elsewhere (counting them made a rank
 * alone on its core yield it at every poll: on a busy machine that gave the
 * core away between the packets of a ping-pong). */
bool kumi_rpim_host_oversubscribed(bool *pinned)
{
    cpu_set_t set;
    int ncpu = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (pinned) *pinned = ncpu > 0 && ncpu < online;
    if (ncpu <= 0) ncpu = (int)online;
    const char *h = getenv(KUMI_ENV_NHOSTS);
    int nhosts = h && atoi(h) > 0 ? atoi(h) : 1;
    int local = (kumi_rpim_launch_size() + nhosts - 1) / nhosts;
    return ncpu > 0 && local > ncpu;
}

bool kumi_rpim_shares_core(void)
{
    if (getenv(KUMI_ENV_BIND_CPUS)) return getenv(KUMI_ENV_BIND_SHARED) != NULL;
    return kumi_rpim_host_oversubscribed(NULL);
}

int kumi_rpim_in_launch(int rank)
{
    if (launch_size >= 0) return rank >= world_first && rank < world_first + launch_size;
    return rank >= 0 && rank < kumi_core_world_size;
}

/* ------------------------------------------------ key-value exchange */
struct kv { struct kv *next; char *key, *val; };
static struct kv *local_kv;                       /* singleton's own table */

int kumi_rpim_put(const char *key, const char *value)
{
    if (rpim) return rpim->put(key, value);
    struct kv *e = malloc(sizeof *e);
    if (!e || !(e->key = strdup(key)) || !(e->val = strdup(value))) {
        free(e);
        return kumi_error(MPI_ERR_NO_MEM, "out of memory in the key-value exchange");
    }
    e->next = local_kv;
    local_kv = e;
    return MPI_SUCCESS;
}

int kumi_rpim_get(int rank, const char *key, char *value, size_t valuelen)
{
    if (launch_size >= 0) {
        if (rank < world_first || rank >= world_first + launch_size)
            return MPI_ERR_NAME;          /* another IMPI client's rank: no keys here (quietly) */
        rank -= world_first;
    }
    if (rpim) return rpim->get(rank, key, value, valuelen);
    if (rank == 0)
        for (struct kv *e = local_kv; e; e = e->next)
            if (!strcmp(e->key, key)) {
                snprintf(value, valuelen, "%s", e->val);
                return MPI_SUCCESS;
            }
    return kumi_error(MPI_ERR_NAME, "key %s of rank %d not found", key, rank);
}

int kumi_rpim_fence(void)
{
    return rpim ? rpim->fence() : MPI_SUCCESS;
}

static void kv_clear(void)
{
    while (local_kv) {
        struct kv *e = local_kv;
        local_kv = e->next;
        free(e->key);
        free(e->val);
        free(e);
    }
}

/* --------------------------------------------------------------- spawn */
int kumi_rpim_spawn(const struct kumi_spawn_cmd *cmds, int ncmds, const char *const *env, int *errcodes,
                    char *child_jobid, size_t len)
{
    if (child_jobid && len) child_jobid[0] = 0;
    if (ncmds < 1 || !cmds) return kumi_error(MPI_ERR_ARG, "spawn: %d commands (at least 1)", ncmds);
    long total = 0;
    for (int i = 0; i < ncmds; i++) {
        if (!cmds[i].command || !cmds[i].command[0])
            return kumi_error(MPI_ERR_ARG, "spawn: command %d has no program", i);
        if (cmds[i].maxprocs < 1) return kumi_error(MPI_ERR_ARG, "spawn: maxprocs %d of command %d (at least 1)",
                                                    cmds[i].maxprocs, i);
        if (cmds[i].ninfo < 0 || (cmds[i].ninfo > 0 && (!cmds[i].info_keys || !cmds[i].info_vals)))
            return kumi_error(MPI_ERR_ARG, "spawn: bad info of command %d", i);
        total += cmds[i].maxprocs;
        if (total > 1000000) return kumi_error(MPI_ERR_ARG, "spawn: more than 1000000 processes asked for");
    }
    if (env)
        for (int i = 0; env[i]; i++)
            if (!strchr(env[i], '=') || env[i][0] == '=')
                return kumi_error(MPI_ERR_ARG, "spawn: environment entry '%s' is not KEY=VALUE", env[i]);
    const char *why = NULL;
    if (!rpim) why = "this process is a singleton (not started by mpiexec): spawning needs mpiexec";
    else if (!rpim->spawn_job) why = "the launcher that started this job cannot spawn processes";
    if (why) {
        if (errcodes)
            for (long i = 0; i < total; i++) errcodes[i] = MPI_ERR_SPAWN;
        return kumi_error(MPI_ERR_SPAWN, "spawn: %s (rpim %s)", why, kumi_rpim_name());
    }
    return rpim->spawn_job(cmds, ncmds, env, errcodes, child_jobid, len);
}

/* --------------------------------------------------------------- abort */
void kumi_abort_job(int errorcode, const char *msg)
{
    fflush(stdout);
    fflush(stderr);
    if (rpim) rpim->abort(errorcode, msg);
    int st = errorcode & 0xff;
    _exit(st ? st : 1);
}

int kumi_rpim_select(void)
{
    int n = 0, why = KUMI_UNAVAILABLE;
    struct kumi_comp_entry **list = kumi_registry_available("rpim", &n);
    for (int i = 0; i < n; i++) {
        const struct kumi_rpim_ops *ops = list[i]->comp->ops;
        struct kumi_rpim_info info;
        int rc = ops && ops->client_init ? ops->client_init(&info) : KUMI_UNAVAILABLE;
        if (rc != KUMI_OK) {
            /* a component that tried to join and failed says why (kept for the message below) */
            if (rc != KUMI_UNAVAILABLE && why == KUMI_UNAVAILABLE) why = rc;
            continue;
        }
        rpim = ops;
        rpim_entry = list[i];
        list[i]->status = KUMI_COMP_SELECTED;
        kumi_core_world_rank = info.rank;
        kumi_core_world_size = info.size;
        const char *iw = getenv(KUMI_ENV_IMPI_WORLD);
        if (iw) {
            int first, size;
            char c;
            if (sscanf(iw, "%d:%d%c", &first, &size, &c) != 2 || first < 0 || size < info.size ||
                first > size - info.size)
                return kumi_error(MPI_ERR_OTHER, "MPI_Init: %s=%s is not FIRST:SIZE for %d ranks",
                                  KUMI_ENV_IMPI_WORLD, iw, info.size);
            world_first = first;
            launch_size = info.size;
            kumi_core_world_rank = first + info.rank;
            kumi_core_world_size = size;
        }
        return MPI_SUCCESS;
    }
    const char *launcher = getenv("KUMI_RPIM");
    if (getenv("KUMI_RANK")) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        if (why != KUMI_UNAVAILABLE) kumi_mpi_error_string(why, msg, &len);
        return kumi_error(MPI_ERR_OTHER, "started by mpiexec (rpim %s) but no rpim component could join the job%s%s",
                          launcher ? launcher : "?", msg[0] ? ": " : "", msg);
    }
    if (getenv("OMPI_COMM_WORLD_RANK") && why != KUMI_UNAVAILABLE) {
        /* started by Open MPI's mpirun: rpim/vmpi's job (rpim/pmix steps
         * aside unless named), and it could not join */
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        kumi_mpi_error_string(why, msg, &len);
        return kumi_error(MPI_ERR_OTHER, "started by Open MPI's mpirun (OMPI_COMM_WORLD_RANK=%s) but rpim/vmpi "
                          "could not join the job: %s", getenv("OMPI_COMM_WORLD_RANK"), msg);
    }
    if (getenv("PMIX_NAMESPACE") && getenv("PMIX_RANK")) {
        /* started by a PMIx launcher (srun --mpi=pmix): a singleton here
         * would run the job's ranks as so many jobs of one, each rank 0 */
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0, have = 0;
        for (int i = 0; i < n; i++)
            if (list[i]->comp && !strcmp(list[i]->comp->name, "pmix")) have = 1;
        if (why != KUMI_UNAVAILABLE) kumi_mpi_error_string(why, msg, &len);
        if (have)
            return kumi_error(MPI_ERR_OTHER, "started by a PMIx launcher (PMIX_RANK=%s, e.g. srun --mpi=pmix) but "
                              "rpim/pmix could not join the job%s%s", getenv("PMIX_RANK"), msg[0] ? ": " : "", msg);
        return kumi_error(MPI_ERR_OTHER, "started by a PMIx launcher (PMIX_RANK=%s, e.g. srun --mpi=pmix) but this "
                          "Kumi has no rpim/pmix component (built without PMIx: install libpmix-dev and "
                          "rebuild; or excluded by MPI_COMPONENTS); see kumi_info", getenv("PMIX_RANK"));
    }
    {
        /* srun without PMIx (--mpi=none, or MpiDefault=none): every task is
         * a job of one; say so, the user most likely wanted one job */
        const char *nt = getenv("SLURM_STEP_NUM_TASKS");
        if (nt && atoi(nt) > 1 && getenv("SLURM_STEP_ID"))
            kumi_warn("started by Slurm as one of %s tasks without PMIx: this process is a job of one "
                      "(MPI_COMM_WORLD of size 1); use srun --mpi=pmix for one job of %s ranks", nt, nt);
    }
    kumi_core_world_rank = 0;      /* singleton */
    kumi_core_world_size = 1;
    return MPI_SUCCESS;
}

const char *kumi_rpim_name(void)
{
    return rpim_entry ? rpim_entry->comp->name : "singleton";
}

void kumi_rpim_finalize(void)
{
    if (rpim && rpim->client_finalize) rpim->client_finalize();
    kv_clear();
}
