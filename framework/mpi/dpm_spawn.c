/* Dynamic processes, starting processes: MPI_Comm_spawn,
 * MPI_Comm_spawn_multiple (MPI-4.1 sec. 11.3.2-11.3.3) and the children's
 * side, MPI_Comm_get_parent.
 *
 * The parent group (comm) and its root:
 *   1. the root checks its arguments, opens a port (mpi/dpm_port.c) and asks
 *      the launcher to start the children as a job of their own
 *      (kumi_rpim_spawn: mpiexec's SPAWN request; all or nothing), with
 *      KUMI_DPM_PARENT_PORT=<port> in their environment;
 *   2. the root broadcasts the outcome (class, message, the number of
 *      children and their error codes) in comm: on failure every process
 *      returns the root's class (MPI_ERR_SPAWN when the launcher refused) and
 *      array_of_errcodes says MPI_ERR_SPAWN for every child;
 *   3. comm accepts on the port (kumi_dpm_accept, mpi/dpm_connect.c) and the
 *      root closes it.
 * Each child, at the end of MPI_Init / MPI_Init_thread, connects to the
 * port over its MPI_COMM_WORLD (root 0): that intercommunicator is what
 * MPI_Comm_get_parent returns (until it is freed or disconnected; then
 * MPI_COMM_NULL, as the standard says).  The children's MPI_APPNUM is the
 * index of their command (KUMI_APPNUM from the launcher).
 *
 * The parent waits for its children's MPI_Init for at most the info key
 * "timeout" (seconds) of the root's first info, else the parameter
 * kumi_dpm_spawn_timeout (600 s; 0: without limit): a child that dies
 * before MPI_Init then fails the spawn with MPI_ERR_SPAWN instead of leaving
 * the parents waiting for ever.
 *
 * Info keys passed to the launcher (per command): host, add-host, hostfile,
 * add-hostfile, file, wdir, path (README "Spawning processes"); others are
 * ignored, as the standard allows. */
#define _GNU_SOURCE
#include <kumi/param.h>
#include <kumi/rpim.h>
#include "mpi/mpi_front.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MPI_Comm parent_handle = MPI_COMM_NULL;
static struct kumi_comm *parent;
static double spawn_timeout = 600.0;

static const char *const launcher_keys[] = { "host", "add-host", "hostfile", "add-hostfile", "file", "wdir", "path" };
#define NKEYS (int)(sizeof launcher_keys / sizeof launcher_keys[0])

void kumi_dpm_register_spawn_params(void)
{
    kumi_param_register_double("kumi", "dpm", "spawn_timeout", 600.0,
                               "Seconds MPI_Comm_spawn(_multiple) waits for the children to reach MPI_Init "
                               "(0: without limit; info key \"timeout\" of the root's info overrides it)",
                               KUMI_LEVEL_USER, &spawn_timeout);
}

/* ------------------------------------------------------------ children */
int kumi_dpm_child_init(void)
{
    const char *port = getenv("KUMI_DPM_PARENT_PORT");
    if (!port || !*port) return MPI_SUCCESS;
    MPI_Comm pc = MPI_COMM_NULL;
    int rc = kumi_dpm_connect("MPI_Init", port, MPI_INFO_NULL, 0, KUMI_COMM_WORLD, &pc);
    if (rc) return rc;
    parent_handle = pc;
    parent = kumi_comm_get(pc);
    if (parent) snprintf(parent->name, sizeof parent->name, "MPI_COMM_PARENT");
    return MPI_SUCCESS;
}

void kumi_dpm_comm_freed(struct kumi_comm *c)
{
    if (c && c == parent) {
        parent = NULL;
        parent_handle = MPI_COMM_NULL;
    }
}

int kumi_mpi_comm_get_parent(MPI_Comm *p)
{
    if (!p) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Comm_get_parent: argument parent is NULL"));
    *p = parent ? parent_handle : MPI_COMM_NULL;
    return MPI_SUCCESS;
}

/* -------------------------------------------------------------- parents */
static int cls_of(int rc)
{
    int c = MPI_ERR_OTHER;
    kumi_mpi_error_class(rc, &c);
    return c == MPI_SUCCESS ? MPI_ERR_OTHER : c;
}

static const char *msg_of(int rc, char *buf)
{
    int len = 0;
    buf[0] = 0;
    kumi_mpi_error_string(rc, buf, &len);
    return buf;
}

/* What the root broadcasts. */
struct spawn_out {
    int32_t cls;                        /* MPI_SUCCESS or the class every process returns */
    int32_t total;                      /* children asked for (errcodes entries) */
    char msg[400];
};

/* At the root: check the arguments, open a port, ask the launcher.  Fills
 * out (class and message on failure), errs (total entries, malloc'd) and
 * port. */
static void root_spawn(const char *fn, int count, char *commands[], char **argvs[], const int maxprocs[],
                       const MPI_Info infos[], struct spawn_out *out, int **errs, char *port, double *timeout)
{
    out->cls = MPI_SUCCESS;
    out->total = 0;
    out->msg[0] = 0;
    struct kumi_spawn_cmd *cmds = NULL;
    const char **keys = NULL, **vals = NULL;
    int rc = MPI_SUCCESS;
#define BAD(cls_, ...) do { out->cls = (cls_); snprintf(out->msg, sizeof out->msg, __VA_ARGS__); goto done; } while (0)
    if (count <= 0) BAD(MPI_ERR_ARG, "%s: argument count is %d, not positive", fn, count);
    if (!commands) BAD(MPI_ERR_ARG, "%s: argument array_of_commands is NULL", fn);
    if (!maxprocs) BAD(MPI_ERR_ARG, "%s: argument array_of_maxprocs is NULL", fn);
    long total = 0;
    for (int i = 0; i < count; i++) {
        if (!commands[i] || !*commands[i])
            BAD(MPI_ERR_ARG, "%s: command %d is %s", fn, i, commands[i] ? "empty" : "NULL");
        if (maxprocs[i] < 1)
            BAD(MPI_ERR_ARG, "%s: maxprocs of command %d (%s) is %d, not positive", fn, i, commands[i], maxprocs[i]);
        if (infos && infos[i] != MPI_INFO_NULL && !kumi_info_get(infos[i]))
            BAD(MPI_ERR_INFO, "%s: info of command %d (%s) is not an info object", fn, i, commands[i]);
        total += maxprocs[i];
        if (total > 1 << 20) BAD(MPI_ERR_ARG, "%s: %ld processes asked for", fn, total);
    }
    out->total = (int32_t)total;
    /* the root's first info: "timeout" */
    struct kumi_info *i0 = infos ? kumi_info_get(infos[0]) : NULL;
    const char *tv = i0 ? kumi_info_value(i0, "timeout") : NULL;
    if (tv) {
        char *end;
        double t = strtod(tv, &end);
        if (end == tv || *end || t < 0) BAD(MPI_ERR_INFO, "%s: info key \"timeout\" is \"%s\", not a number of seconds", fn, tv);
        *timeout = t;
    }
    cmds = calloc((size_t)count, sizeof *cmds);
    keys = calloc((size_t)count * NKEYS, sizeof *keys);
    vals = calloc((size_t)count * NKEYS, sizeof *vals);
    *errs = calloc((size_t)total, sizeof **errs);
    if (!cmds || !keys || !vals || !*errs) BAD(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (int i = 0; i < count; i++) {
        cmds[i].command = commands[i];
        cmds[i].argv = argvs ? argvs[i] : NULL;
        cmds[i].maxprocs = maxprocs[i];
        cmds[i].info_keys = keys + (size_t)i * NKEYS;
        cmds[i].info_vals = vals + (size_t)i * NKEYS;
        struct kumi_info *in = infos ? kumi_info_get(infos[i]) : NULL;
        for (int k = 0; in && k < NKEYS; k++) {
            const char *v = kumi_info_value(in, launcher_keys[k]);
            if (!v) continue;
            keys[(size_t)i * NKEYS + (size_t)cmds[i].ninfo] = launcher_keys[k];
            vals[(size_t)i * NKEYS + (size_t)cmds[i].ninfo] = v;
            cmds[i].ninfo++;
        }
    }
    char why[MPI_MAX_ERROR_STRING];
    if ((rc = kumi_dpm_open_port(port))) BAD(cls_of(rc), "%s: cannot open a port for the children: %s", fn, msg_of(rc, why));
    char envv[MPI_MAX_PORT_NAME + 32];
    snprintf(envv, sizeof envv, "KUMI_DPM_PARENT_PORT=%s", port);
    const char *env[] = { envv, NULL };
    char jobid[64];
    rc = kumi_rpim_spawn(cmds, count, env, *errs, jobid, sizeof jobid);
    if (rc) {
        kumi_dpm_close_port(port);
        port[0] = 0;
        BAD(cls_of(rc), "%s", msg_of(rc, why));
    }
    kumi_log(2, "%s: %ld children started as job %s", fn, total, jobid);
done:
#undef BAD
    free(cmds);
    free(keys);
    free(vals);
}

/* The error codes of the children, as the caller's ABI numbers them: a
 * foreign ABI's shim (components/abi) passes its program's array here and has
 * Kumi write its codes (kumi_abi_set_err_out), since only Kumi knows at every
 * process how many there are (maxprocs is significant at the root only). */
static void errcodes_out(int errcodes[], int n)
{
    if (kumi_err_out_hook)
        for (int i = 0; i < n; i++) errcodes[i] = KUMI_ERR_OUT(errcodes[i]);
}

static int spawn(const char *fn, int count, char *commands[], char **argvs[], const int maxprocs[],
                 const MPI_Info infos[], int root, struct kumi_comm *comm, MPI_Comm *intercomm, int errcodes[])
{
    if (!intercomm) return kumi_error(MPI_ERR_ARG, "%s: argument intercomm is NULL", fn);
    *intercomm = MPI_COMM_NULL;
    if (comm->inter) return kumi_error(MPI_ERR_COMM, "%s: comm is an intercommunicator", fn);
    struct spawn_out out;
    int *errs = NULL;
    char port[MPI_MAX_PORT_NAME] = "";
    double timeout = spawn_timeout;
    if (comm->rank == root)
        root_spawn(fn, count, commands, argvs, maxprocs, infos, &out, &errs, port, &timeout);
    int brc = comm->coll.bcast(&out, (int)sizeof out, MPI_BYTE, root, (MPI_Comm)comm);
    if (brc) {
        if (port[0]) kumi_dpm_close_port(port);
        free(errs);
        return brc;
    }
    /* the children's codes, only when the launch went through (every process
     * knows out.cls now, and the root has them all then) */
    if (!out.cls && out.total > 0) {
        int *buf = comm->rank == root ? errs : errcodes;
        if (!buf && !(buf = errs = calloc((size_t)out.total, sizeof *errs)))
            kumi_err_fatal("%s: out of memory for %d error codes (the other processes wait for them)", fn,
                           (int)out.total);
        brc = comm->coll.bcast(buf, out.total, MPI_INT, root, (MPI_Comm)comm);
        if (brc) out.cls = cls_of(brc);
        if (errcodes && buf != errcodes) memcpy(errcodes, buf, (size_t)out.total * sizeof *errcodes);
        if (errcodes && !out.cls) errcodes_out(errcodes, out.total);
    }
    if (errcodes && out.cls) {
        for (int i = 0; i < out.total; i++) errcodes[i] = MPI_ERR_SPAWN;
        errcodes_out(errcodes, out.total);
    }
    free(errs);
    if (out.cls) {
        if (port[0]) kumi_dpm_close_port(port);
        return kumi_error(out.cls, "%s", out.msg[0] ? out.msg : "spawn failed at the root");
    }
    /* the children connect from their MPI_Init */
    MPI_Info ti = MPI_INFO_NULL;
    struct kumi_info *tinfo = NULL;
    if (comm->rank == root && timeout > 0) {
        char t[32];
        snprintf(t, sizeof t, "%g", timeout);
        if ((tinfo = kumi_info_dup(NULL)) && kumi_info_set_value(tinfo, "timeout", t) == MPI_SUCCESS)
            ti = kumi_info_handle(tinfo);
    }
    int rc = kumi_dpm_accept(fn, port, ti, root, comm, intercomm);
    kumi_info_release(tinfo);
    if (port[0]) kumi_dpm_close_port(port);
    if (rc) {
        char why[MPI_MAX_ERROR_STRING];
        if (errcodes) {
            for (int i = 0; i < out.total; i++) errcodes[i] = MPI_ERR_SPAWN;
            errcodes_out(errcodes, out.total);
        }
        return kumi_error(MPI_ERR_SPAWN, "%s: the children did not connect to their parents: %s", fn, msg_of(rc, why));
    }
    return MPI_SUCCESS;
}

int kumi_mpi_comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root,
                        struct kumi_comm *comm, MPI_Comm *intercomm, int array_of_errcodes[])
{
    char *cmds[1] = { (char *)command };
    char **argvs[1] = { argv };
    int mp[1] = { maxprocs };
    MPI_Info in[1] = { info };
    return spawn("MPI_Comm_spawn", 1, cmds, argvs, mp, in, root, comm, intercomm, array_of_errcodes);
}

int kumi_mpi_comm_spawn_multiple(int count, char *array_of_commands[], char **array_of_argv[],
                                 const int array_of_maxprocs[], const MPI_Info array_of_info[], int root,
                                 struct kumi_comm *comm, MPI_Comm *intercomm, int array_of_errcodes[])
{
    return spawn("MPI_Comm_spawn_multiple", count, array_of_commands, array_of_argv, array_of_maxprocs,
                 array_of_info, root, comm, intercomm, array_of_errcodes);
}
