/* rpim/vmpi: the client side of rpim for a job started by a vendor MPI's
 * own launcher (`mpirun.openmpi -np 4 ./prog`, `mpiexec.mpich ...`), the
 * program being linked with Kumi: Kumi takes rank and size from the vendor
 * MPI, and p2p/vmpi can move Kumi's messages through it (GridMPI's way into
 * clusters whose fast network only the vendor's MPI reaches).
 *
 * The vendor library is loaded into a dlmopen namespace of its own (see
 * vmpi_vendor.h for how, and why the dlopen imports inside it are
 * redirected), then:
 *   rank, size          the vendor's MPI_Comm_rank / MPI_Comm_size of its
 *                       MPI_COMM_WORLD (after MPI_Init_thread, SERIALIZED:
 *                       Kumi calls it from one thread at a time);
 *   put / fence / get   this rank's keys are kept here; a fence gathers
 *                       every rank's keys with the vendor's MPI_Allgather (the
 *                       lengths) and MPI_Allgatherv (the "key\0value\0" lists);
 *   abort               the vendor's MPI_Abort (its launcher ends the job);
 *   finalize            the vendor's MPI_Finalize.
 * Like rpim/pmix it provides what the rest of Kumi reads from mpiexec's
 * environment: KUMI_JOB_SECRET (made by rank 0, broadcast through the vendor),
 * KUMI_JOBID (a hash of it), KUMI_INTERNAL_NHOSTS (distinct host names,
 * gathered) and KUMI_INTERNAL_UNIVERSE_SIZE (OMPI_UNIVERSE_SIZE).
 *
 * It joins when the vendor launcher's environment is there and KUMI_RANK is
 * not: Open MPI (OMPI_COMM_WORLD_RANK; default library libmpi.so.40) or
 * MPICH's Hydra (PMI_RANK with PMI_FD or PMI_PORT; libmpich.so.12), or when
 * MPI_COMPONENTS names it (rpim=vmpi: a vendor singleton otherwise).
 * Priority 30: above rpim/pmix, which would also see Open MPI's PMIX_RANK.
 * Parameter rpim_vmpi_lib: the vendor library to load (a path, or a name
 * the dynamic loader searches for).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "vmpi_vendor.h"
#include <errno.h>
#include <sys/random.h>
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <kumi/launch_proto.h>
#include <kumi/jobkey.h>

#define VMPI_OMPI_LIB "libmpi.so.40"
#if defined(__x86_64__)
#define VMPI_LIBDIR "/usr/lib/x86_64-linux-gnu/"
#elif defined(__aarch64__)
#define VMPI_LIBDIR "/usr/lib/aarch64-linux-gnu/"
#else
#define VMPI_LIBDIR "/usr/lib/"
#endif
#define VMPI_THREAD_SERIALIZED 2            /* the same in Open MPI and MPICH */

static const char *rpim_vmpi_lib_param;
static struct vmpi_vendor rpim_vmpi_v;
static int rpim_vmpi_joined, rpim_vmpi_join_rc, rpim_vmpi_up, rpim_vmpi_done;
static int rpim_vmpi_rank = -1, rpim_vmpi_size;
static long rpim_vmpi_jobid;
static vmpi_h rpim_vmpi_comm[2];               /* for p2p/vmpi: headers, payloads */

struct rpim_vmpi_kv { struct rpim_vmpi_kv *next; char *key, *val; };
static struct rpim_vmpi_kv *rpim_vmpi_own;
static char *rpim_vmpi_all;                    /* every rank's "key\0value\0" lists, after a fence */
static int *rpim_vmpi_len, *rpim_vmpi_off;     /* [size] */

static void rpim_vmpi_register(void)
{
    kumi_param_register_string("rpim", "vmpi", "lib", "",
                               "The vendor MPI library rpim/vmpi loads (dlmopen) when a job is started by a "
                               "vendor launcher; empty: the distribution's libmpi.so.40 under Open MPI's mpirun, "
                               "libmpich.so.12 under MPICH's mpiexec (" VMPI_LIBDIR ", else searched)",
                               KUMI_LEVEL_USER, &rpim_vmpi_lib_param);
}

static int rpim_vmpi_wanted(const char **lib)
{
    const char *l = vmpi_launcher();
    if (!l && !getenv("KUMI_RANK") && kumi_component_named("rpim", "vmpi")) l = VMPI_OMPI_LIB;
    if (!l) return 0;
    if (rpim_vmpi_lib_param && rpim_vmpi_lib_param[0]) {
        *lib = rpim_vmpi_lib_param;
    } else {
        /* the distribution's library by its path: a bare soname could find
         * Kumi's own libmpi.so.40 (the Open MPI ABI shim) on LD_LIBRARY_PATH */
        static char path[256];
        snprintf(path, sizeof path, "%s%s", VMPI_LIBDIR, l);
        *lib = access(path, R_OK) == 0 ? path : l;
    }
    return 1;
}

static int rpim_vmpi_fail(const char *what, int code)
{
    char s[512];
    return kumi_error(MPI_ERR_OTHER, "MPI_Init (rpim/vmpi): %s MPI's %s failed: %s", rpim_vmpi_v.name, what,
                      vmpi_errstr(&rpim_vmpi_v, code, s, (int)sizeof s));
}

/* Distinct host names of the job (KUMI_INTERNAL_NHOSTS). */
static int rpim_vmpi_hosts(void)
{
    enum { H = 256 };
    char me[H];
    memset(me, 0, sizeof me);
    snprintf(me, sizeof me, "%s", kumi_hostname());
    char *all = calloc((size_t)rpim_vmpi_size, H);
    if (!all) return kumi_error(MPI_ERR_NO_MEM, "MPI_Init (rpim/vmpi): out of memory");
    int rc = rpim_vmpi_v.Allgather(me, H, rpim_vmpi_v.byte, all, H, rpim_vmpi_v.byte, rpim_vmpi_v.world);
    if (rc != 0) {
        free(all);
        return rpim_vmpi_fail("MPI_Allgather (host names)", rc);
    }
    int nhosts = 0, nlocal = 0;
    for (int i = 0; i < rpim_vmpi_size; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = !strncmp(all + (size_t)i * H, all + (size_t)j * H, H);
        nhosts += !seen;
        nlocal += !strncmp(all + (size_t)i * H, me, H);
    }
    free(all);
    if (!getenv(KUMI_ENV_NHOSTS)) {
        char num[32];
        snprintf(num, sizeof num, "%d", nhosts);
        setenv(KUMI_ENV_NHOSTS, num, 1);
    }
    kumi_log(2, "rpim/vmpi: %d host(s); %d rank(s) of the job on %s", nhosts, nlocal, kumi_hostname());
    return MPI_SUCCESS;
}

/* The job secret: rank 0's (its own, or made now), broadcast. */
static int rpim_vmpi_secret(void)
{
    char sec[KUMI_JOBKEY_SECRET_LEN + 1];
    memset(sec, 0, sizeof sec);
    if (rpim_vmpi_rank == 0) {
        const char *old = kumi_jobkey_secret();
        if (old) {
            memcpy(sec, old, KUMI_JOBKEY_SECRET_LEN);
        } else {
            unsigned char raw[KUMI_JOBKEY_SECRET_LEN / 2];
            if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
                return kumi_error(MPI_ERR_OTHER, "MPI_Init (rpim/vmpi): getrandom: %s", strerror(errno));
            for (size_t i = 0; i < sizeof raw; i++) snprintf(sec + 2 * i, 3, "%02x", raw[i]);
        }
    }
    int rc = rpim_vmpi_v.Bcast(sec, (int)sizeof sec, rpim_vmpi_v.byte, 0, rpim_vmpi_v.world);
    if (rc != 0) return rpim_vmpi_fail("MPI_Bcast (job secret)", rc);
    if (strlen(sec) != KUMI_JOBKEY_SECRET_LEN)
        return kumi_error(MPI_ERR_OTHER, "MPI_Init (rpim/vmpi): malformed job secret from rank 0");
    setenv("KUMI_JOB_SECRET", sec, 1);
    uint32_t h = 2166136261u;                      /* FNV-1a: the job's number for shared-memory names */
    for (const unsigned char *s = (const unsigned char *)sec; *s; s++) {
        h ^= *s;
        h *= 16777619u;
    }
    h &= 0x7fffffffu;
    rpim_vmpi_jobid = h ? (long)h : 1;
    const char *j = getenv("KUMI_JOBID");
    char *end;
    long v = j ? strtol(j, &end, 10) : 0;
    if (j && *end == 0 && v > 0) {
        rpim_vmpi_jobid = v;
    } else {
        char num[32];
        snprintf(num, sizeof num, "%ld", rpim_vmpi_jobid);
        setenv("KUMI_JOBID", num, 1);
    }
    return MPI_SUCCESS;
}

static int rpim_vmpi_join(void)
{
    const char *lib = NULL;
    char err[768];
    if (rpim_vmpi_joined) return rpim_vmpi_join_rc;
    rpim_vmpi_joined = 1;
    if (rpim_vmpi_done)
        return rpim_vmpi_join_rc = kumi_error(MPI_ERR_OTHER, "MPI_Init (rpim/vmpi): the vendor MPI was finalized "
                                              "in this process and cannot be initialized again");
    if (!rpim_vmpi_wanted(&lib)) return rpim_vmpi_join_rc = KUMI_UNAVAILABLE;
    if (vmpi_load(&rpim_vmpi_v, lib, err, sizeof err) != 0)
        return rpim_vmpi_join_rc = kumi_error(MPI_ERR_OTHER, "MPI_Init (rpim/vmpi): cannot use the vendor MPI "
                                              "library '%s' (parameter rpim_vmpi_lib): %s", lib, err);
    int prov = 0, rc, flag = 0;
    rc = rpim_vmpi_v.Initialized(&flag);
    if (rc == 0 && !flag) rc = rpim_vmpi_v.Init_thread(NULL, NULL, VMPI_THREAD_SERIALIZED, &prov);
    if (rc != 0) return rpim_vmpi_join_rc = rpim_vmpi_fail("MPI_Init_thread", rc);
    rpim_vmpi_up = 1;
    rpim_vmpi_v.Comm_set_errhandler(rpim_vmpi_v.world, rpim_vmpi_v.errors_return);
    if ((rc = rpim_vmpi_v.Comm_rank(rpim_vmpi_v.world, &rpim_vmpi_rank)) != 0 ||
        (rc = rpim_vmpi_v.Comm_size(rpim_vmpi_v.world, &rpim_vmpi_size)) != 0)
        return rpim_vmpi_join_rc = rpim_vmpi_fail("MPI_Comm_rank/size", rc);
    for (int i = 0; i < 2; i++) {
        uint64_t c = 0;
        if ((rc = rpim_vmpi_v.Comm_dup(rpim_vmpi_v.world, &c)) != 0)
            return rpim_vmpi_join_rc = rpim_vmpi_fail("MPI_Comm_dup", rc);
        rpim_vmpi_comm[i] = (vmpi_h)c;
        rpim_vmpi_v.Comm_set_errhandler(rpim_vmpi_comm[i], rpim_vmpi_v.errors_return);
    }
    if ((rc = rpim_vmpi_hosts()) != MPI_SUCCESS || (rc = rpim_vmpi_secret()) != MPI_SUCCESS)
        return rpim_vmpi_join_rc = rc;
    const char *us = getenv("OMPI_UNIVERSE_SIZE");
    if (us && atoi(us) > 0 && !getenv(KUMI_ENV_UNIVERSE)) setenv(KUMI_ENV_UNIVERSE, us, 1);
    char hand[700];
    snprintf(hand, sizeof hand, "%ld:%ld:%llx:%llx:%s", (long)getpid(), (long)rpim_vmpi_v.lmid,
             (unsigned long long)rpim_vmpi_comm[0], (unsigned long long)rpim_vmpi_comm[1], rpim_vmpi_v.path);
    setenv(VMPI_ENV, hand, 1);
    kumi_log(2, "rpim/vmpi: %s (%s, namespace %ld): rank %d of %d, thread level %d, job id %ld",
             rpim_vmpi_v.name, rpim_vmpi_v.path, (long)rpim_vmpi_v.lmid, rpim_vmpi_rank, rpim_vmpi_size, prov,
             rpim_vmpi_jobid);
    return rpim_vmpi_join_rc = MPI_SUCCESS;
}

/* The vendor is joined in client_init, not here: mpiexec and kumi_info
 * open the registry too (and must not start a vendor MPI); the transports
 * initialize after client_init (p2p/vmpi finds the vendor then). */
static int rpim_vmpi_open(char *why, size_t whylen)
{
    if (kumi_registry_listing())
        snprintf(why, whylen, "joins jobs started by mpirun.openmpi / mpiexec.mpich (vendor library %s)",
                 rpim_vmpi_lib_param && rpim_vmpi_lib_param[0] ? rpim_vmpi_lib_param : VMPI_OMPI_LIB);
    return KUMI_OK;
}

static int rpim_vmpi_client_init(struct kumi_rpim_info *info)
{
    int rc = rpim_vmpi_join();
    if (rc != MPI_SUCCESS) return rc;
    info->rank = rpim_vmpi_rank;
    info->size = rpim_vmpi_size;
    info->jobid = rpim_vmpi_jobid;
    return MPI_SUCCESS;
}

static int rpim_vmpi_put(const char *key, const char *value)
{
    if (!key || !value) return kumi_error(MPI_ERR_ARG, "rpim/vmpi put: NULL key or value");
    size_t kl = strlen(key), vl = strlen(value);
    if (kl == 0 || kl >= KUMI_KVS_KEY_MAX)
        return kumi_error(MPI_ERR_ARG, "rpim/vmpi put: key length %zu not in 1..%d", kl, KUMI_KVS_KEY_MAX - 1);
    if (vl >= KUMI_KVS_VAL_MAX)
        return kumi_error(MPI_ERR_ARG, "rpim/vmpi put: value of key '%s' longer than %d", key, KUMI_KVS_VAL_MAX - 1);
    for (struct rpim_vmpi_kv *e = rpim_vmpi_own; e; e = e->next)
        if (!strcmp(e->key, key)) {
            char *v = strdup(value);
            if (!v) return kumi_error(MPI_ERR_NO_MEM, "rpim/vmpi put: out of memory");
            free(e->val);
            e->val = v;
            return MPI_SUCCESS;
        }
    struct rpim_vmpi_kv *e = calloc(1, sizeof *e);
    if (!e || !(e->key = strdup(key)) || !(e->val = strdup(value))) {
        if (e) free(e->key);
        free(e);
        return kumi_error(MPI_ERR_NO_MEM, "rpim/vmpi put: out of memory");
    }
    e->next = rpim_vmpi_own;
    rpim_vmpi_own = e;
    return MPI_SUCCESS;
}

static int rpim_vmpi_fence(void)
{
    if (!rpim_vmpi_up) return kumi_error(MPI_ERR_OTHER, "rpim/vmpi fence: the vendor MPI is not initialized");
    size_t n = 0;
    for (struct rpim_vmpi_kv *e = rpim_vmpi_own; e; e = e->next) n += strlen(e->key) + strlen(e->val) + 2;
    if (n > INT32_MAX) return kumi_error(MPI_ERR_OTHER, "rpim/vmpi fence: %zu bytes of keys", n);
    char *mine = malloc(n ? n : 1), *p = mine;
    int *len = calloc((size_t)rpim_vmpi_size, sizeof *len), *off = calloc((size_t)rpim_vmpi_size, sizeof *off);
    if (!mine || !len || !off) goto nomem;
    for (struct rpim_vmpi_kv *e = rpim_vmpi_own; e; e = e->next) {
        size_t a = strlen(e->key) + 1, b = strlen(e->val) + 1;
        memcpy(p, e->key, a);
        memcpy(p + a, e->val, b);
        p += a + b;
    }
    int me = (int)n, rc = rpim_vmpi_v.Allgather(&me, (int)sizeof me, rpim_vmpi_v.byte, len, (int)sizeof me,
                                                rpim_vmpi_v.byte, rpim_vmpi_v.world);
    if (rc != 0) goto vfail;
    size_t total = 0;
    for (int i = 0; i < rpim_vmpi_size; i++) {
        off[i] = (int)total;
        total += (size_t)len[i];
        if (total > INT32_MAX) {
            free(mine); free(len); free(off);
            return kumi_error(MPI_ERR_OTHER, "rpim/vmpi fence: more than 2 GiB of keys");
        }
    }
    char *all = malloc(total ? total : 1);
    if (!all) goto nomem;
    rc = rpim_vmpi_v.Allgatherv(mine, me, rpim_vmpi_v.byte, all, len, off, rpim_vmpi_v.byte, rpim_vmpi_v.world);
    if (rc != 0) {
        free(all);
        goto vfail;
    }
    free(mine);
    free(rpim_vmpi_all); free(rpim_vmpi_len); free(rpim_vmpi_off);
    rpim_vmpi_all = all;
    rpim_vmpi_len = len;
    rpim_vmpi_off = off;
    return MPI_SUCCESS;
vfail:
    free(mine); free(len); free(off);
    {
        char s[512];
        return kumi_error(MPI_ERR_OTHER, "rpim/vmpi fence: the vendor's collective failed: %s",
                          vmpi_errstr(&rpim_vmpi_v, rc, s, (int)sizeof s));
    }
nomem:
    free(mine); free(len); free(off);
    return kumi_error(MPI_ERR_NO_MEM, "rpim/vmpi fence: out of memory");
}

static int rpim_vmpi_copy(const char *v, int rank, const char *key, char *value, size_t valuelen)
{
    size_t l = strlen(v);
    if (l + 1 > valuelen)
        return kumi_error(MPI_ERR_TRUNCATE, "rpim/vmpi get: value of '%s' from rank %d needs %zu bytes, buffer has %zu",
                          key, rank, l + 1, valuelen);
    memcpy(value, v, l + 1);
    return MPI_SUCCESS;
}

static int rpim_vmpi_get(int rank, const char *key, char *value, size_t valuelen)
{
    if (!key || !value) return kumi_error(MPI_ERR_ARG, "rpim/vmpi get: NULL key or value");
    if (rank < 0 || rank >= rpim_vmpi_size)
        return kumi_error(MPI_ERR_RANK, "rpim/vmpi get: invalid rank %d in a job of size %d", rank, rpim_vmpi_size);
    if (rank == rpim_vmpi_rank) {
        for (struct rpim_vmpi_kv *e = rpim_vmpi_own; e; e = e->next)
            if (!strcmp(e->key, key)) return rpim_vmpi_copy(e->val, rank, key, value, valuelen);
    } else if (rpim_vmpi_all) {
        const char *p = rpim_vmpi_all + rpim_vmpi_off[rank], *end = p + rpim_vmpi_len[rank];
        while (p < end) {
            const char *v = p + strlen(p) + 1;
            if (!strcmp(p, key)) return rpim_vmpi_copy(v, rank, key, value, valuelen);
            p = v + strlen(v) + 1;
        }
    }
    return kumi_error(MPI_ERR_OTHER, "rpim/vmpi get: rank %d has not put key '%s' (before the last fence)", rank, key);
}

static void rpim_vmpi_abort(int errorcode, const char *msg)
{
    if (!rpim_vmpi_up) return;
    /* the vendor's launcher kills the other ranks: nobody else removes the
     * job's shared-memory objects of this machine */
    kumi_launch_shm_cleanup(rpim_vmpi_jobid);
    char b[512];
    int l = snprintf(b, sizeof b, "kumi: %s: aborting the job (%s MPI_Abort)\n", msg ? msg : "MPI_Abort",
                     rpim_vmpi_v.name);
    if (l > 0) {
        ssize_t w = write(2, b, (size_t)l < sizeof b ? (size_t)l : sizeof b - 1);
        (void)w;
    }
    rpim_vmpi_v.Abort(rpim_vmpi_v.world, errorcode ? errorcode : 1);
}

static int rpim_vmpi_client_finalize(void)
{
    int ret = MPI_SUCCESS;
    if (rpim_vmpi_up) {
        int rc = rpim_vmpi_v.Finalize();
        if (rc != 0) {
            char s[512];
            ret = kumi_error(MPI_ERR_OTHER, "MPI_Finalize: the vendor's MPI_Finalize failed: %s",
                             vmpi_errstr(&rpim_vmpi_v, rc, s, (int)sizeof s));
        }
        rpim_vmpi_up = 0;
        rpim_vmpi_done = 1;
    }
    unsetenv(VMPI_ENV);
    rpim_vmpi_joined = 0;
    while (rpim_vmpi_own) {
        struct rpim_vmpi_kv *e = rpim_vmpi_own;
        rpim_vmpi_own = e->next;
        free(e->key); free(e->val); free(e);
    }
    free(rpim_vmpi_all); free(rpim_vmpi_len); free(rpim_vmpi_off);
    rpim_vmpi_all = NULL;
    rpim_vmpi_len = rpim_vmpi_off = NULL;
    return ret;
}

static const struct kumi_rpim_ops rpim_vmpi_ops = {
    .hdr = KUMI_RPIM_OPS_HDR,
    .spawn = NULL,
    .client_init = rpim_vmpi_client_init,
    .put = rpim_vmpi_put,
    .fence = rpim_vmpi_fence,
    .get = rpim_vmpi_get,
    .abort = rpim_vmpi_abort,
    .client_finalize = rpim_vmpi_client_finalize,
};

KUMI_EXPORT const struct kumi_component kumi_rpim_vmpi_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "rpim",
    .name = "vmpi",
    .version = { 0, 1, 0 },
    .description = "processes started by a vendor MPI's launcher (mpirun.openmpi); rank, size and key "
                   "exchange through the vendor MPI (dlmopen)",
    .priority = 30,
    .register_params = rpim_vmpi_register,
    .open = rpim_vmpi_open,
    .close = NULL,
    .ops = &rpim_vmpi_ops,
};
