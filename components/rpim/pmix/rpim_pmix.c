/* rpim/pmix: the client side of rpim for processes started by a PMIx
 * launcher (Slurm's `srun --mpi=pmix`, or any PMIx server), with no Kumi
 * process anywhere else: rank and size, the key-value exchange
 * (PMIx_Put / PMIx_Commit / PMIx_Fence / PMIx_Get), abort (PMIx_Abort) and
 * finalize (PMIx_Finalize with an embedded barrier).  No launcher side:
 * mpiexec does not start ranks through it (spawn is NULL).
 *
 * It joins a job when the PMIx environment is present (PMIX_NAMESPACE and
 * PMIX_RANK, set by the PMIx server for each process it starts) and
 * KUMI_RANK is not (a rank of mpiexec is rpim/fork's, even when mpiexec
 * itself runs inside a Slurm step).
 *
 * What the rest of Kumi reads from mpiexec's environment (kumi/rpim.h) is
 * provided in the same form, so that transports need not know who started
 * the job:
 *   KUMI_JOBID       a number derived from the PMIx namespace (the same in
 *                    every rank, distinct per job step), for the names of the
 *                    job's shared-memory objects (kumi/launch_proto.h);
 *   KUMI_JOB_SECRET  random, made by rank 0 and handed to the others through
 *                    PMIx (one fence in MPI_Init, jobs of more than one rank):
 *                    it authenticates p2p/tcp connections and names the
 *                    shared-memory segments; never on a command line or in
 *                    the environment the process was started with;
 *   KUMI_INTERNAL_NHOSTS  PMIX_NUM_NODES (how many hosts the job spans);
 *   KUMI_INTERNAL_UNIVERSE_SIZE  PMIX_UNIV_SIZE (MPI_UNIVERSE_SIZE), when given;
 *   kumi_hostname()  the node's name for PMIx (PMIX_HOSTNAME of this rank:
 *                    Slurm's node name), set with kumi_set_hostname(): every
 *                    component decides which peers share its host by comparing
 *                    host names ("kumi.host", "p2p.tcp.host", ...) with it, and
 *                    nodes that share a gethostname() (network namespaces of
 *                    one machine) are still different nodes for PMIx.  Without
 *                    PMIX_HOSTNAME: gethostname() followed by "#node<PMIX_NODEID>"
 *                    in a job of more than one node.  PMIX_LOCAL_PEERS is checked
 *                    against it (a warning when they disagree).
 * Variables already set (by the user) are left alone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <pmix.h>
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/rpim.h>
#include <kumi/launch_proto.h>
#include <kumi/jobkey.h>

#define RPIM_PMIX_SECRET_KEY "kumi.job.secret"

static int rpim_pmix_up;                 /* PMIx_Init succeeded, not finalized */
static pmix_proc_t rpim_pmix_me;
static int rpim_pmix_rank = -1, rpim_pmix_size;
static int rpim_pmix_nnodes = 1;
static long rpim_pmix_jobid;
static int rpim_pmix_warned;          /* locality disagreement reported */
static unsigned char *rpim_pmix_local;   /* [size]: 1 for the ranks on this node (this one too) */

/* this rank's own keys, visible to get() at once (as with rpim/fork) */
struct rpim_pmix_kv { struct rpim_pmix_kv *next; char *key, *val; };
static struct rpim_pmix_kv *rpim_pmix_own;

static const char *rpim_pmix_err(pmix_status_t rc)
{
    const char *s = PMIx_Error_string(rc);
    return s ? s : "unknown PMIx error";
}

/* An integer value of a job-level (wildcard) key; -1 when absent. */
static long rpim_pmix_job_uint(const char *key)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    long out = -1;
    PMIX_LOAD_PROCID(&p, rpim_pmix_me.nspace, PMIX_RANK_WILDCARD);
    if (PMIx_Get(&p, key, NULL, 0, &v) != PMIX_SUCCESS || !v) return -1;
    switch (v->type) {
    case PMIX_UINT32: out = (long)v->data.uint32; break;
    case PMIX_INT32: out = (long)v->data.int32; break;
    case PMIX_UINT16: out = (long)v->data.uint16; break;
    case PMIX_UINT64: out = v->data.uint64 > LONG_MAX ? -1 : (long)v->data.uint64; break;
    case PMIX_INT: out = (long)v->data.integer; break;
    case PMIX_UINT: out = (long)v->data.uint; break;
    case PMIX_SIZE: out = v->data.size > LONG_MAX ? -1 : (long)v->data.size; break;
    default: break;
    }
    PMIX_VALUE_RELEASE(v);
    return out;
}

/* A string value of rank's key (rank PMIX_RANK_WILDCARD: the job's);
 * PMIX_OPTIONAL: only what this process already holds, never a request to
 * the server that could wait for a key nobody put.  0, -1 (absent) or -2
 * (longer than outlen; *need says how long). */
static int rpim_pmix_get_str(pmix_rank_t rank, const char *key, int optional, char *out, size_t outlen,
                             size_t *need)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    pmix_info_t info;
    bool yes = true;
    PMIX_LOAD_PROCID(&p, rpim_pmix_me.nspace, rank);
    PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &yes, PMIX_BOOL);
    pmix_status_t rc = PMIx_Get(&p, key, optional ? &info : NULL, optional ? 1 : 0, &v);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS || !v) return -1;
    int ret = -1;
    if (v->type == PMIX_STRING && v->data.string) {
        size_t l = strlen(v->data.string);
        if (need) *need = l + 1;
        if (l + 1 <= outlen) memcpy(out, v->data.string, l + 1);
        ret = l + 1 <= outlen ? 0 : -2;
    }
    PMIX_VALUE_RELEASE(v);
    return ret;
}

/* The job's number for shared-memory names: FNV-1a of the namespace and
 * the job secret (Slurm's namespaces, slurm.pmix.<job>.<step>, repeat across
 * clusters that share a machine; the secret does not), in 1..2^31-1 (decimal
 * digits only, as mpiexec's job ids).  A job of one has no secret: its pid. */
static long rpim_pmix_hash_jobid(const char *ns)
{
    uint32_t h = 2166136261u;
    char pid[32];
    const char *sec = kumi_jobkey_secret();
    if (!sec) snprintf(pid, sizeof pid, "%d", (int)getpid());
    for (int part = 0; part < 2; part++)
        for (const unsigned char *s = (const unsigned char *)(part ? (sec ? sec : pid) : ns); *s; s++) {
            h ^= *s;
            h *= 16777619u;
        }
    h &= 0x7fffffffu;
    return h ? (long)h : 1;
}

/* "0,1,5" (PMIX_LOCAL_PEERS) into the local[] flags; ranges "2-4" too. */
static void rpim_pmix_parse_peers(const char *s)
{
    while (s && *s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s) break;
        if (*end == '-') {
            const char *t = end + 1;
            b = strtol(t, &end, 10);
            if (end == t) b = a;
        }
        for (long r = a; r <= b; r++)
            if (r >= 0 && r < rpim_pmix_size) rpim_pmix_local[r] = 1;
        s = *end == ',' ? end + 1 : NULL;
    }
}

static int rpim_pmix_fail(const char *what, pmix_status_t rc)
{
    return kumi_error(MPI_ERR_OTHER, "MPI_Init (rpim/pmix): %s: %s", what, rpim_pmix_err(rc));
}

static int rpim_pmix_put_raw(const char *key, const char *value)
{
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_STRING;
    v.data.string = (char *)value;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    return rc == PMIX_SUCCESS ? 0 : (int)rc;
}

static pmix_status_t rpim_pmix_fence_collect(void)
{
    pmix_info_t info;
    bool yes = true;
    pmix_status_t rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) return rc;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence(NULL, 0, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    return rc;
}

/* The job secret: rank 0 makes it, the others read it after a fence. */
static int rpim_pmix_secret(void)
{
    char sec[KUMI_JOBKEY_SECRET_LEN + 1];
    if (kumi_jobkey_secret()) return MPI_SUCCESS;       /* the user's (or an earlier init's) */
    if (rpim_pmix_size <= 1) return MPI_SUCCESS;        /* a job of one needs none */
    if (rpim_pmix_rank == 0) {
        unsigned char raw[KUMI_JOBKEY_SECRET_LEN / 2];
        if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
            return kumi_error(MPI_ERR_OTHER, "MPI_Init (rpim/pmix): getrandom: %s", strerror(errno));
        for (size_t i = 0; i < sizeof raw; i++) snprintf(sec + 2 * i, 3, "%02x", raw[i]);
        int rc = rpim_pmix_put_raw(RPIM_PMIX_SECRET_KEY, sec);
        if (rc) return rpim_pmix_fail("PMIx_Put of the job secret", rc);
    }
    pmix_status_t rc = rpim_pmix_fence_collect();
    if (rc != PMIX_SUCCESS) return rpim_pmix_fail("PMIx_Fence (job secret)", rc);
    if (rpim_pmix_rank != 0 && rpim_pmix_get_str(0, RPIM_PMIX_SECRET_KEY, 1, sec, sizeof sec, NULL) != 0)
        return kumi_error(MPI_ERR_OTHER, "MPI_Init (rpim/pmix): rank 0 did not hand out the job secret");
    if (strlen(sec) != KUMI_JOBKEY_SECRET_LEN)
        return kumi_error(MPI_ERR_OTHER, "MPI_Init (rpim/pmix): malformed job secret from rank 0");
    setenv("KUMI_JOB_SECRET", sec, 1);
    return MPI_SUCCESS;
}

/* This process's host as the job knows it (see the top of this file). */
static void rpim_pmix_node_name(void)
{
    char h[MPI_MAX_PROCESSOR_NAME];
    if (rpim_pmix_get_str(rpim_pmix_me.rank, PMIX_HOSTNAME, 0, h, sizeof h, NULL) != 0) {
        h[0] = 0;
        if (rpim_pmix_nnodes > 1) {
            pmix_value_t *v = NULL;
            unsigned long id = 0;
            if (PMIx_Get(&rpim_pmix_me, PMIX_NODEID, NULL, 0, &v) == PMIX_SUCCESS && v) {
                if (v->type == PMIX_UINT32) id = v->data.uint32;
                PMIX_VALUE_RELEASE(v);
            }
            snprintf(h, sizeof h, "%s#node%lu", kumi_hostname(), id);
        }
    }
    if (h[0]) kumi_set_hostname(h);
}

/* Started by a PMIx launcher, for rpim/pmix to join? */
static int rpim_pmix_env(void)
{
    return !getenv("KUMI_RANK") &&                  /* mpiexec's rank: rpim/fork */
           /* Open MPI's mpirun (a PMIx server too): rpim/vmpi's, whose vendor
            * library would meet a second PMIx client of this process;
            * MPI_COMPONENTS=rpim=pmix takes such a job through PMIx */
           (!getenv("OMPI_COMM_WORLD_RANK") || kumi_component_named("rpim", "pmix")) &&
           getenv("PMIX_NAMESPACE") && getenv("PMIX_RANK");
}

static int rpim_pmix_joined;            /* rpim_pmix_join ran; its result: */
static int rpim_pmix_join_rc;

/* PMIx_Init, rank, size, nodes, this node's name and KUMI_INTERNAL_NHOSTS:
 * what the other components may read when they open (see open below). */
static int rpim_pmix_join(void)
{
    if (rpim_pmix_joined) return rpim_pmix_join_rc;
    rpim_pmix_joined = 1;
    pmix_status_t rc = PMIx_Init(&rpim_pmix_me, NULL, 0);
    if (rc != PMIX_SUCCESS)
        return rpim_pmix_join_rc = kumi_error(MPI_ERR_OTHER, "MPI_Init (rpim/pmix): PMIx_Init failed (%s): the PMIx "
                                              "server of the launcher (srun --mpi=pmix?) cannot be reached",
                                              rpim_pmix_err(rc));
    rpim_pmix_up = 1;
    long size = rpim_pmix_job_uint(PMIX_JOB_SIZE);
    if (size < 1 || size > INT_MAX || rpim_pmix_me.rank >= (pmix_rank_t)size) {
        PMIx_Finalize(NULL, 0);
        rpim_pmix_up = 0;
        return rpim_pmix_join_rc = kumi_error(MPI_ERR_OTHER, "MPI_Init (rpim/pmix): PMIx gives no valid job size "
                                              "(%ld) for rank %u", size, (unsigned)rpim_pmix_me.rank);
    }
    rpim_pmix_rank = (int)rpim_pmix_me.rank;
    rpim_pmix_size = (int)size;
    long nn = rpim_pmix_job_uint(PMIX_NUM_NODES);
    rpim_pmix_nnodes = nn > 0 && nn <= INT_MAX ? (int)nn : 1;

    rpim_pmix_local = calloc((size_t)rpim_pmix_size, 1);
    if (!rpim_pmix_local) {
        PMIx_Finalize(NULL, 0);
        rpim_pmix_up = 0;
        return rpim_pmix_join_rc = kumi_error(MPI_ERR_NO_MEM, "MPI_Init (rpim/pmix): out of memory");
    }
    {
        size_t need = 0;
        char small[256], *peers = small;
        int g = rpim_pmix_get_str(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, 0, small, sizeof small, &need);
        if (g == -2 && (peers = malloc(need)) != NULL)
            g = rpim_pmix_get_str(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, 0, peers, need, NULL);
        if (g == 0) rpim_pmix_parse_peers(peers);
        else if (rpim_pmix_nnodes == 1) memset(rpim_pmix_local, 1, (size_t)rpim_pmix_size);
        if (peers && peers != small) free(peers);
        rpim_pmix_local[rpim_pmix_rank] = 1;
    }
    rpim_pmix_node_name();
    if (!getenv(KUMI_ENV_NHOSTS)) {
        char num[32];
        snprintf(num, sizeof num, "%d", rpim_pmix_nnodes);
        setenv(KUMI_ENV_NHOSTS, num, 1);
    }
    long us = rpim_pmix_job_uint(PMIX_UNIV_SIZE);     /* MPI_UNIVERSE_SIZE, as mpiexec gives it */
    if (us > 0 && us <= INT_MAX && !getenv(KUMI_ENV_UNIVERSE)) {
        char num[32];
        snprintf(num, sizeof num, "%ld", us);
        setenv(KUMI_ENV_UNIVERSE, num, 1);
    }
    return rpim_pmix_join_rc = MPI_SUCCESS;
}

/* Components open framework by framework, rpim's first: joining here lets
 * the transports' open() see KUMI_INTERNAL_NHOSTS as under mpiexec (p2p/ofi
 * opens only for jobs across hosts).  Always available: a failure is
 * client_init's to report. */
static int rpim_pmix_open(char *why, size_t whylen)
{
    (void)why;
    (void)whylen;
    if (!kumi_registry_listing() && rpim_pmix_env()) rpim_pmix_join();
    return KUMI_OK;
}

static int rpim_pmix_client_init(struct kumi_rpim_info *info)
{
    if (!rpim_pmix_env()) return KUMI_UNAVAILABLE;
    if (rpim_pmix_jobid) {                                   /* already joined */
        info->rank = rpim_pmix_rank;
        info->size = rpim_pmix_size;
        info->jobid = rpim_pmix_jobid;
        return MPI_SUCCESS;
    }
    int r = rpim_pmix_join();
    if (r != MPI_SUCCESS) return r;
    r = rpim_pmix_secret();
    if (r != MPI_SUCCESS) return r;
    rpim_pmix_jobid = rpim_pmix_hash_jobid(rpim_pmix_me.nspace);
    /* the environment the rest of Kumi reads (see the top of this file) */
    const char *j = getenv("KUMI_JOBID");
    if (!j) {
        char num[32];
        snprintf(num, sizeof num, "%ld", rpim_pmix_jobid);
        setenv("KUMI_JOBID", num, 1);
    } else {
        char *end;
        long v = strtol(j, &end, 10);
        if (*end == 0 && v > 0) rpim_pmix_jobid = v;
    }
    int nlocal = 0;
    for (int i = 0; i < rpim_pmix_size; i++) nlocal += rpim_pmix_local[i];
    kumi_log(2, "rpim/pmix: namespace %s, rank %d of %d, job id %ld, %d node(s); on %s with %d rank(s) of the job",
             rpim_pmix_me.nspace, rpim_pmix_rank, rpim_pmix_size, rpim_pmix_jobid, rpim_pmix_nnodes, kumi_hostname(),
             nlocal);
    info->rank = rpim_pmix_rank;
    info->size = rpim_pmix_size;
    info->jobid = rpim_pmix_jobid;
    return MPI_SUCCESS;
}

static int rpim_pmix_own_set(const char *key, const char *value)
{
    for (struct rpim_pmix_kv *e = rpim_pmix_own; e; e = e->next)
        if (!strcmp(e->key, key)) {
            char *v = strdup(value);
            if (!v) return -1;
            free(e->val);
            e->val = v;
            return 0;
        }
    struct rpim_pmix_kv *e = calloc(1, sizeof *e);
    if (!e || !(e->key = strdup(key)) || !(e->val = strdup(value))) {
        if (e) free(e->key);
        free(e);
        return -1;
    }
    e->next = rpim_pmix_own;
    rpim_pmix_own = e;
    return 0;
}

static int rpim_pmix_put(const char *key, const char *value)
{
    if (!rpim_pmix_up) return kumi_error(MPI_ERR_OTHER, "rpim/pmix put: PMIx is not initialized");
    if (!key || !value) return kumi_error(MPI_ERR_ARG, "rpim/pmix put: NULL key or value");
    size_t kl = strlen(key), vl = strlen(value);
    if (kl == 0 || kl >= KUMI_KVS_KEY_MAX || kl > PMIX_MAX_KEYLEN)
        return kumi_error(MPI_ERR_ARG, "rpim/pmix put: key length %zu not in 1..%d", kl, KUMI_KVS_KEY_MAX - 1);
    if (vl >= KUMI_KVS_VAL_MAX)
        return kumi_error(MPI_ERR_ARG, "rpim/pmix put: value of key '%s' longer than %d", key, KUMI_KVS_VAL_MAX - 1);
    int rc = rpim_pmix_put_raw(key, value);
    if (rc) return kumi_error(MPI_ERR_OTHER, "rpim/pmix put of '%s': %s", key, rpim_pmix_err(rc));
    if (rpim_pmix_own_set(key, value) < 0) return kumi_error(MPI_ERR_NO_MEM, "rpim/pmix put: out of memory");
    return MPI_SUCCESS;
}

static int rpim_pmix_fence(void)
{
    if (!rpim_pmix_up) return kumi_error(MPI_ERR_OTHER, "rpim/pmix fence: PMIx is not initialized");
    pmix_status_t rc = rpim_pmix_fence_collect();
    if (rc != PMIX_SUCCESS) return kumi_error(MPI_ERR_OTHER, "rpim/pmix fence: %s", rpim_pmix_err(rc));
    return MPI_SUCCESS;
}

static int rpim_pmix_copy(const char *v, int rank, const char *key, char *value, size_t valuelen)
{
    size_t l = strlen(v);
    if (l + 1 > valuelen)
        return kumi_error(MPI_ERR_TRUNCATE, "rpim/pmix get: value of '%s' from rank %d needs %zu bytes, buffer has %zu",
                          key, rank, l + 1, valuelen);
    memcpy(value, v, l + 1);
    return MPI_SUCCESS;
}

static int rpim_pmix_get(int rank, const char *key, char *value, size_t valuelen)
{
    if (!rpim_pmix_up) return kumi_error(MPI_ERR_OTHER, "rpim/pmix get: PMIx is not initialized");
    if (!key || !value) return kumi_error(MPI_ERR_ARG, "rpim/pmix get: NULL key or value");
    if (rank < 0 || rank >= rpim_pmix_size)
        return kumi_error(MPI_ERR_RANK, "rpim/pmix get: invalid rank %d in a job of size %d", rank, rpim_pmix_size);
    if (rank == rpim_pmix_rank) {
        for (struct rpim_pmix_kv *e = rpim_pmix_own; e; e = e->next)
            if (!strcmp(e->key, key)) return rpim_pmix_copy(e->val, rank, key, value, valuelen);
    } else {
        size_t need = 0;
        int g = rpim_pmix_get_str((pmix_rank_t)rank, key, 1, value, valuelen, &need);
        if (g == 0 && !strcmp(key, "kumi.host") && !rpim_pmix_warned &&
            (strcmp(value, kumi_hostname()) == 0) != (rpim_pmix_local[rank] != 0)) {
            rpim_pmix_warned = 1;
            kumi_warn("rpim/pmix: rank %d is on host '%s' (this rank: '%s') but PMIX_LOCAL_PEERS says it is %s",
                      rank, value, kumi_hostname(), rpim_pmix_local[rank] ? "on this node" : "on another node");
        }
        if (g == 0) return MPI_SUCCESS;
        if (g == -2)
            return kumi_error(MPI_ERR_TRUNCATE, "rpim/pmix get: value of '%s' from rank %d needs %zu bytes, buffer has %zu",
                              key, rank, need, valuelen);
    }
    return kumi_error(MPI_ERR_OTHER, "rpim/pmix get: rank %d has not put key '%s' (before the last fence)", rank, key);
}

static void rpim_pmix_abort(int errorcode, const char *msg)
{
    if (!rpim_pmix_up) return;
    /* the launcher ends the other ranks with SIGKILL: nobody else will
     * remove the job's shared-memory objects of this machine */
    kumi_launch_shm_cleanup(rpim_pmix_jobid);
    char b[512];
    int l = snprintf(b, sizeof b, "kumi: %s: aborting the job (PMIx_Abort)\n", msg ? msg : "MPI_Abort");
    if (l > 0) {
        ssize_t w = write(2, b, (size_t)l < sizeof b ? (size_t)l : sizeof b - 1);
        (void)w;
    }
    PMIx_Abort(errorcode ? errorcode : 1, msg ? msg : "MPI_Abort", NULL, 0);
}

static void rpim_pmix_own_clear(void)
{
    while (rpim_pmix_own) {
        struct rpim_pmix_kv *e = rpim_pmix_own;
        rpim_pmix_own = e->next;
        free(e->key);
        free(e->val);
        free(e);
    }
}

static int rpim_pmix_client_finalize(void)
{
    int ret = MPI_SUCCESS;
    if (rpim_pmix_up) {
        /* nobody leaves before everyone has finished: a fence, then
         * PMIx_Finalize (MPI_Finalize's own barrier ran over the transports).
         * Not PMIX_EMBED_BARRIER: OpenPMIx 4.2.2's PMIx_Finalize calls
         * PMIx_Fence with its global lock held and never returns. */
        pmix_status_t rc = PMIx_Fence(NULL, 0, NULL, 0);
        if (rc != PMIX_SUCCESS) ret = kumi_error(MPI_ERR_OTHER, "MPI_Finalize: PMIx_Fence: %s", rpim_pmix_err(rc));
        rc = PMIx_Finalize(NULL, 0);
        if (rc != PMIX_SUCCESS && ret == MPI_SUCCESS)
            ret = kumi_error(MPI_ERR_OTHER, "MPI_Finalize: PMIx_Finalize: %s", rpim_pmix_err(rc));
        rpim_pmix_up = 0;
    }
    rpim_pmix_joined = 0;
    rpim_pmix_jobid = 0;
    rpim_pmix_own_clear();
    free(rpim_pmix_local);
    rpim_pmix_local = NULL;
    return ret;
}

/* Spawning under a PMIx launcher (srun --mpi=pmix) is not offered: Slurm's
 * PMIx plugin does not implement PMIx_Spawn; say so clearly. */
static int rpim_pmix_spawn_job(const struct kumi_spawn_cmd *cmds, int ncmds, const char *const *env, int *errcodes,
                               char *child_jobid, size_t len)
{
    long total = 0;
    (void)env;
    for (int i = 0; i < ncmds; i++) total += cmds[i].maxprocs;
    if (errcodes)
        for (long i = 0; i < total; i++) errcodes[i] = MPI_ERR_SPAWN;
    if (child_jobid && len) child_jobid[0] = 0;
    return kumi_error(MPI_ERR_SPAWN, "spawn: not supported for a job started by a PMIx launcher (srun --mpi=pmix; "
                      "rpim/pmix); start the job with Kumi's mpiexec to spawn processes");
}

static const struct kumi_rpim_ops rpim_pmix_ops = {
    .hdr = KUMI_RPIM_OPS_HDR,
    .spawn = NULL,
    .client_init = rpim_pmix_client_init,
    .put = rpim_pmix_put,
    .fence = rpim_pmix_fence,
    .get = rpim_pmix_get,
    .abort = rpim_pmix_abort,
    .client_finalize = rpim_pmix_client_finalize,
    .spawn_job = rpim_pmix_spawn_job,
};

KUMI_EXPORT const struct kumi_component kumi_rpim_pmix_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "rpim",
    .name = "pmix",
    .version = { 0, 1, 0 },
    .description = "processes started by a PMIx launcher (srun --mpi=pmix); key exchange through PMIx",
    .priority = 20,
    .register_params = NULL,
    .open = rpim_pmix_open,
    .close = NULL,
    .ops = &rpim_pmix_ops,
};
