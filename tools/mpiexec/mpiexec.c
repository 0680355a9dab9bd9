/* mpiexec (and mpirun, a symlink): start an MPI job on this host, or
 * across hosts (-host, --hostfile: hosts.c places the ranks; remote.c starts
 * one kumi_proxy per host over ssh and relays everything; proxy.c is the
 * proxy).  Options: options.c; output forwarding: output.c.
 *
 *   mpiexec [options] prog [args]
 *
 * What follows describes the job on this host (also what each proxy does
 * for its own host's ranks).
 * Starts N ranks through the first usable rpim component (rpim/fork),
 * each the leader of its own process group, with the environment of
 * mpiexec plus the rpim contract variables (kumi/rpim.h).  One thread,
 * one poll() loop over: a signalfd (SIGCHLD, SIGINT, SIGTERM, SIGHUP), the
 * control listener and connections (control.c), every rank's stdout and
 * stderr pipe, mpiexec's stdin (forwarded to rank 0), and the timers
 * (--timeout, the grace period before SIGKILL, late HELLOs).
 *
 * Exit status: 0 when every rank exited 0 (after MPI_Finalize if it called
 * MPI_Init); otherwise that of the first failure: the rank's exit status,
 * 128+signal for a rank killed by a signal, the MPI_Abort error code (1 if
 * that is 0 modulo 256), 1 for a rank that exited 0 without MPI_Finalize,
 * 124 for --timeout, 128+signal when mpiexec itself got SIGINT/SIGTERM/SIGHUP,
 * 127 when the program cannot be found, 126 when it is not executable,
 * 1 for bad usage or a launch failure (a program of an MPI ABI this Kumi
 * does not provide, or whose shim is not installed, included).  Jobs that
 * ranks spawn (spawn.c) count too: mpiexec waits for them, and the first
 * failure of one of their ranks (or their MPI_Abort) is a failure. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/rpim.h>
#include "registry/registry.h"
#include "mpiexec.h"
#include "abi_detect.h"

extern char **environ;

#define MX_KILL_GRACE 1.0           /* seconds between SIGTERM and SIGKILL */
#define MX_PIPE_GRACE 1.0           /* seconds to wait for pipes after every rank exited */

#define job mx_job_main
struct mx_job mx_job_main;
const struct kumi_rpim_ops *mx_rpim_ops;
int mx_hosts_user;

/* job control state */
static int stopping;                   /* the job is being stopped */
static int remote;                     /* the ranks run behind per-host proxies (remote.c) */
static int nhosts_used;                /* hosts with ranks */
static int exit_code = -1;             /* first failure, or -1 */
static double kill_deadline;           /* SIGKILL time while stopping */
static int killed_hard;

/* stdin forwarding to rank 0 */
static int stdin_open;                 /* still reading fd 0 */
static int stdin_pipe = -1;            /* write end to rank 0 */
static char stdin_buf[65536];
static size_t stdin_len, stdin_off;

double mx_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}


/* Find the program like execvp does; exits 127 (not found) or 126. */
static char *resolve_program(const char *prog)
{
    struct stat st;
    if (strchr(prog, '/')) {
        if (stat(prog, &st) < 0) {
            mx_msg("cannot find program '%s': %s", prog, strerror(errno));
            exit(127);
        }
        if (S_ISDIR(st.st_mode) || access(prog, X_OK) < 0) {
            mx_msg("cannot execute '%s': %s", prog, S_ISDIR(st.st_mode) ? "Is a directory" : strerror(errno));
            exit(126);
        }
        return mx_xstrdup(prog);
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    int found_noexec = 0;
    const char *p = path;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t dl = colon ? (size_t)(colon - p) : strlen(p);
        char *cand = mx_xcalloc(1, dl + strlen(prog) + 3);
        if (dl == 0) strcpy(cand, "./");   /* empty entry: current folder */
        else {
            memcpy(cand, p, dl);
            cand[dl] = '/';
        }
        strcat(cand, prog);
        if (stat(cand, &st) == 0 && !S_ISDIR(st.st_mode)) {
            if (access(cand, X_OK) == 0) return cand;
            found_noexec = 1;
        }
        free(cand);
        if (!colon) break;
        p = colon + 1;
    }
    if (found_noexec) {
        mx_msg("cannot execute '%s': Permission denied", prog);
        exit(126);
    }
    mx_msg("cannot find program '%s' in PATH", prog);
    exit(127);
}

static int name_is(const char *entry, const char *name)
{
    size_t nl = strcspn(name, "=");
    return strncmp(entry, name, nl) == 0 && entry[nl] == '=';
}

/* ------------------------------------------------------------ ABI
 *
 * Which ABI the program needs (abi.c reads its DT_NEEDED, transitively),
 * unless --abi or KUMI_ABI says; for ompi and mpich the ranks get the shim
 * folder <abi dir>/<abi> (abi.h) first in LD_LIBRARY_PATH, so that the
 * program's libmpi.so.40 / libmpich.so.12 is Kumi's shim; the standard ABI
 * needs that only for its libmpi_abi.so.1 (Kumi's libmpi.so.0 is found as
 * usual).  A library the loader would find through a DT_RPATH (before
 * LD_LIBRARY_PATH) gets its shim first in LD_PRELOAD, where the loader
 * takes it by its soname.  The ranks get KUMI_ABI=<abi> (removed for a program that is no
 * MPI program).  A program of an ABI Kumi does not provide, or whose shim
 * this installation lacks, is refused before any rank starts. */

static struct {
    enum mx_abi abi;
    int mixed;               /* both foreign ABIs: both shim folders, the agent preloaded */
    char dir[PATH_MAX];      /* to put first in LD_LIBRARY_PATH, or "" */
    char preload[4 * PATH_MAX];   /* to put first in LD_PRELOAD, or "" */
} abi_choice;

static const char *which_of(const char *by)
{
    static char b[PATH_MAX + 32];
    if (!by || !*by) return "";
    snprintf(b, sizeof b, " (through %s)", by);
    return b;
}

/* "standard (libmpi.so.0, libmpi_abi.so.1), ompi (Open MPI 4.x, libmpi.so.40)": what this Kumi has */
static void abis_provided(char *out, size_t len)
{
    const char *dir = mx_abi_dir();
    snprintf(out, len, "standard (MPI 5.0 ABI: libmpi.so.0, libmpi_abi.so.1)");
    for (int i = 0; i < MX_NABIS; i++) {
        if (mx_abis[i].abi == MX_ABI_STANDARD) continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s/%s", dir, mx_abis[i].name, mx_abis[i].main_lib);
        if (access(p, F_OK) != 0) continue;
        size_t l = strlen(out);
        snprintf(out + l, len - l, ", %s (%s: %s)", mx_abis[i].name, mx_abis[i].what, mx_abis[i].main_lib);
    }
}

/* The LD_LIBRARY_PATH the ranks would get without a shim */
static const char *ranks_ld_path(void)
{
    for (int j = mx_opt.nx - 1; j >= 0; j--)
        if (name_is(mx_opt.xvars[j], "LD_LIBRARY_PATH") && strchr(mx_opt.xvars[j], '='))
            return strchr(mx_opt.xvars[j], '=') + 1;
    return getenv("LD_LIBRARY_PATH");
}

/* A process of both foreign ABIs (a program built against one linked with, or loading, a
 * library built against the other): both shim folders on LD_LIBRARY_PATH and the GOT swap
 * agent <abi dir>/libkumi_abimix.so preloaded (components/abi/gotswap/abimix.c: each object
 * reaches its own ABI's shim).  0, or -1 with *missing naming what this Kumi lacks. */
static int choose_mixed(char *missing, size_t len)
{
    const char *dir = mx_abi_dir();
    const struct mx_abi_desc *o = mx_abi_desc(MX_ABI_OMPI), *m = mx_abi_desc(MX_ABI_MPICH);
    char p[3][PATH_MAX + 64];
    snprintf(p[0], sizeof p[0], "%s/%s/%s", dir, o->name, o->main_lib);
    snprintf(p[1], sizeof p[1], "%s/%s/%s", dir, m->name, m->main_lib);
    snprintf(p[2], sizeof p[2], "%s/%s", dir, MX_ABI_MIX_AGENT);
    for (int i = 0; i < 3; i++)
        if (access(p[i], F_OK) != 0) {
            size_t l = strlen(p[i]);
            if (l >= len) l = len - 1;
            memcpy(missing, p[i], l);
            missing[l] = 0;
            return -1;
        }
    abi_choice.abi = MX_ABI_OMPI;
    abi_choice.mixed = 1;
    snprintf(abi_choice.dir, sizeof abi_choice.dir, "%s/%s:%s/%s", dir, o->name, dir, m->name);
    snprintf(abi_choice.preload, sizeof abi_choice.preload, "%s", p[2]);
    if (job.verbose) mx_msg("%s: ABIs ompi and mpich, preloading %s", mx_opt.argv[0], p[2]);
    return 0;
}

/* Decide abi_choice for prog; exits 1 with a message when it cannot run. */
static void choose_abi(const char *prog)
{
    const char *shown = mx_opt.argv[0];
    const char *how = mx_opt.abi ? "--abi" : "KUMI_ABI";
    const char *want = mx_opt.abi ? mx_opt.abi : getenv("KUMI_ABI");
    if (want && !*want) want = NULL;
    if (want && strcmp(want, "auto") && !mx_abi_by_name(want) && !mx_abi_is_mix(want)) {
        mx_msg("KUMI_ABI: expected ompi, mpich, ompi+mpich, standard or auto, not '%s'", want);
        exit(1);
    }
    struct mx_abi_result r;
    memset(&r, 0, sizeof r);
    char provided[1024], missing[PATH_MAX + 64];
    if (mx_abi_is_mix(want)) {
        if (choose_mixed(missing, sizeof missing) == 0) return;
        mx_msg("%s %s: this Kumi has no %s (%s missing)", how, want,
               strstr(missing, MX_ABI_MIX_AGENT) ? "GOT swap agent" : "shim of both ABIs", missing);
        exit(1);
    }
    if (want && strcmp(want, "auto")) {
        r.abi = mx_abi_by_name(want)->abi;
        r.libmask = 1;                     /* its main library */
    } else {
        want = NULL;
        mx_abi_detect(prog, ranks_ld_path(), &r);
        if (job.verbose)
            mx_msg("%s: ABI %s%s%s%s (%d ELF object%s read)", shown,
                   r.abi == MX_ABI_NONE ? "none" : r.abi == MX_ABI_UNSUPPORTED ? "unsupported"
                                                                               : mx_abi_desc(r.abi)->name,
                   r.lib[0] ? ", " : "", r.lib, which_of(r.by), r.nobjects, r.nobjects == 1 ? "" : "s");
        if (r.abi == MX_ABI_UNSUPPORTED) {
            abis_provided(provided, sizeof provided);
            if (r.mixed) {
                if (choose_mixed(missing, sizeof missing) == 0) return;
                char by2[PATH_MAX + 32];
                snprintf(by2, sizeof by2, "%s", which_of(r.other_by));
                mx_msg("%s needs both Open MPI's %s%s and MPICH's %s%s; Kumi runs such a process through both "
                       "shims and its GOT swap agent, but %s is missing (ABIs provided: %s)", shown, r.lib,
                       which_of(r.by), r.other, by2, missing, provided);
            } else {
                char where[PATH_MAX + 32] = "";
                if (r.where[0]) snprintf(where, sizeof where, ", found at %s, is not Kumi's", r.where);
                mx_msg("%s needs %s%s%s, the library of an MPI whose ABI Kumi does not provide "
                       "(ABIs provided: %s; --abi overrides)", shown, r.lib, which_of(r.by), where, provided);
            }
            exit(1);
        }
    }
    abi_choice.abi = r.abi;
    if (r.abi == MX_ABI_NONE) return;
    const struct mx_abi_desc *d = mx_abi_desc(r.abi);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", mx_abi_dir(), d->name);
    /* every library of that ABI the program needs must be in the shim folder */
    for (int i = 0; d->libs[i]; i++) {
        if (!(r.libmask & (1u << i))) continue;
        char p[PATH_MAX + 64];
        snprintf(p, sizeof p, "%s/%s", dir, d->libs[i]);
        if (access(p, F_OK) == 0) continue;
        if (r.abi == MX_ABI_STANDARD && want) return;   /* --abi standard: Kumi's libmpi.so.0 will do */
        if (want)
            mx_msg("%s %s: this Kumi has no %s shim (%s missing)", how, want, d->what, p);
        else if (r.abi == MX_ABI_STANDARD)
            mx_msg("%s is a standard-ABI binary (%s%s), but this Kumi has no %s (%s missing)", shown, d->libs[i],
                   which_of(r.by), d->libs[i], p);
        else
            mx_msg("%s is an %s binary (%s%s), but this Kumi has no %s shim%s%s (%s missing)", shown, d->what, d->libs[i], which_of(r.by), d->what,
                   i ? " for " : "", i ? d->libs[i] : "", p);
        exit(1);
    }
    if (r.libmask) snprintf(abi_choice.dir, sizeof abi_choice.dir, "%s", dir);
    /* a library found through a DT_RPATH comes before LD_LIBRARY_PATH: the
     * shim of that name is preloaded (the loader then takes it by soname) */
    for (int i = 0; d->libs[i]; i++) {
        if (!(r.rpathmask & (1u << i))) continue;
        size_t l = strlen(abi_choice.preload);
        snprintf(abi_choice.preload + l, sizeof abi_choice.preload - l, "%s%s/%s", l ? ":" : "", dir, d->libs[i]);
    }
    if (job.verbose && abi_choice.preload[0]) mx_msg("%s: preloading %s (DT_RPATH)", shown, abi_choice.preload);
}

/* MPI_UNIVERSE_SIZE of the job: the slots mpiexec knows (those of the hosts
 * of -host / --hostfile, else this host's online CPUs), at least the ranks it
 * starts. */
int mx_universe_size(void)
{
    long u = mx_opt.hosts.n > 0 ? mx_hosts_total_slots(&mx_opt.hosts, mx_opt.ppn) : sysconf(_SC_NPROCESSORS_ONLN);
    return u > job.n ? (int)u : job.n;
}

/* Environment of the ranks of job j (the main job, or one spawned:
 * spawn.c), plus extra[0..nextra) KEY=VALUE (replacing inherited ones; the
 * launch variables below cannot be replaced); *rank_slot receives the index
 * of KUMI_RANK, which is followed by room for the four KUMI_ENV_BIND_* and
 * a NULL. */
static char **build_env_of(struct mx_job *j, const char *rpim_name, char *const *extra, int nextra, int nhosts,
                           int *rank_slot)
{
    static const char *const reserved[] = { "KUMI_RANK", "KUMI_SIZE", "KUMI_JOBID", "KUMI_CONTROL", "KUMI_ABI",
                                            "KUMI_JOB_SECRET", "KUMI_RPIM", KUMI_ENV_NHOSTS, KUMI_ENV_UNIVERSE, KUMI_ENV_BIND_CPUS,
                                            KUMI_ENV_BIND_LEVEL, KUMI_ENV_BIND_INDEX, KUMI_ENV_BIND_SHARED, KUMI_ENV_IMPI_WORLD,
                                            KUMI_ENV_IMPI_JOB, KUMI_ENV_IMPI_FDS, KUMI_ENV_IMPI_HOSTS,
                                            KUMI_ENV_IMPI_UID, KUMI_ENV_IMPI_PACING };
    const int nres = (int)(sizeof reserved / sizeof reserved[0]);
    size_t ne = 0;
    while (environ[ne]) ne++;
    char **env = mx_xcalloc(ne + (size_t)mx_opt.nx + (size_t)mx_opt.nparams + (size_t)nextra + 19, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < ne; i++) {
        const char *e = environ[i];
        int skip = 0;
        for (int j = 0; j < nres && !skip; j++) skip = name_is(e, reserved[j]);
        for (int j = 0; j < mx_opt.nx && !skip; j++) skip = name_is(e, mx_opt.xvars[j]);
        for (int j = 0; j < mx_opt.nparams && !skip; j++) skip = name_is(e, mx_opt.params[j]);
        for (int j = 0; j < nextra && !skip; j++) skip = name_is(e, extra[j]);
        if (!skip) env[k++] = (char *)e;
    }
    for (int j = 0; j < mx_opt.nx; j++) {
        const char *x = mx_opt.xvars[j];
        if (strchr(x, '=')) {
            env[k++] = (char *)x;
        } else {
            const char *v = getenv(x);
            if (!v) continue;              /* not set here: nothing to export */
            char *e = mx_xcalloc(1, strlen(x) + strlen(v) + 2);
            sprintf(e, "%s=%s", x, v);
            env[k++] = e;
        }
    }
    for (int j = 0; j < mx_opt.nparams; j++) env[k++] = mx_opt.params[j];
    for (int i = 0; i < nextra; i++) {
        int skip = !strchr(extra[i], '=');
        for (int r = 0; r < nres && !skip; r++) skip = name_is(extra[i], reserved[r]);
        for (size_t e = 0; e < k && !skip; e++)      /* -x / --param of the same name */
            if (name_is(env[e], extra[i])) env[e] = extra[i], skip = 1;
        if (!skip) env[k++] = extra[i];
    }
    char b[256];
    snprintf(b, sizeof b, "KUMI_SIZE=%d", j->n);
    env[k++] = mx_xstrdup(b);
    snprintf(b, sizeof b, "KUMI_JOBID=%ld", j->jobid);
    env[k++] = mx_xstrdup(b);
    snprintf(b, sizeof b, "KUMI_CONTROL=127.0.0.1:%d", j->port);   /* a proxy puts its own */
    env[k++] = mx_xstrdup(b);
    snprintf(b, sizeof b, "KUMI_JOB_SECRET=%s", j->secret);
    env[k++] = mx_xstrdup(b);
    snprintf(b, sizeof b, "KUMI_RPIM=%s", rpim_name);
    env[k++] = mx_xstrdup(b);
    snprintf(b, sizeof b, "%s=%d", KUMI_ENV_NHOSTS, nhosts > 0 ? nhosts : remote ? nhosts_used : 1);
    env[k++] = mx_xstrdup(b);
    snprintf(b, sizeof b, "%s=%d", KUMI_ENV_UNIVERSE, mx_universe_size());
    env[k++] = mx_xstrdup(b);
    if (abi_choice.abi != MX_ABI_NONE) {
        snprintf(b, sizeof b, "KUMI_ABI=%s", abi_choice.mixed ? "ompi+mpich" : mx_abi_desc(abi_choice.abi)->name);
        env[k++] = mx_xstrdup(b);
    }
    /* the shim folder first in LD_LIBRARY_PATH, the shims to preload first
     * in LD_PRELOAD (replacing the entry the ranks would otherwise get, from
     * -x or the environment) */
    for (int w = 0; w < 2; w++) {
        const char *var = w ? "LD_PRELOAD" : "LD_LIBRARY_PATH", *first = w ? abi_choice.preload : abi_choice.dir;
        if (!first[0]) continue;
        size_t j, vl = strlen(var);
        for (j = 0; j < k && !name_is(env[j], var); j++) {}
        const char *old = j < k ? env[j] + vl + 1 : "";
        char *e = mx_xcalloc(1, vl + 1 + strlen(first) + 1 + strlen(old) + 1);
        sprintf(e, "%s=%s%s%s", var, first, *old ? ":" : "", old);
        if (j < k) env[j] = e;
        else env[k++] = e;
    }
    *rank_slot = (int)k;
    for (int j = 0; j < 6; j++) env[k + (size_t)j] = NULL;   /* KUMI_RANK, KUMI_ENV_BIND_*, per rank */
    return env;
}

static char **build_env(const char *rpim_name, int *rank_slot)
{
    return build_env_of(&job, rpim_name, NULL, 0, 0, rank_slot);
}

static const char *rpim_name_used = "fork";

char **mx_child_env(struct mx_job *j, char *const *extra, int nextra, int nhosts, int *rank_slot)
{
    return build_env_of(j, rpim_name_used, extra, nextra, nhosts, rank_slot);
}

int mx_remote_mode(void)
{
    return remote;
}

int mx_make_secret(char *out)
{
    unsigned char r[KUMI_LAUNCH_SECRET_LEN / 2];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = read(fd, r + got, sizeof r - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            close(fd);
            return -1;
        }
        got += (size_t)n;
    }
    close(fd);
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof r; i++) {
        out[2 * i] = hex[r[i] >> 4];
        out[2 * i + 1] = hex[r[i] & 15];
    }
    out[KUMI_LAUNCH_SECRET_LEN] = 0;
    return 0;
}

/* ------------------------------------------------------------ job control */

static void signal_groups(int sig, int all)
{
    mx_spawn_signal(sig, all);         /* spawned jobs (spawn.c) */
    if (remote) {                      /* the proxies signal their ranks */
        mx_remote_signal(sig);
        return;
    }
    for (int r = 0; r < job.n; r++) {
        struct mx_rank *rk = &job.ranks[r];
        if (rk->pid <= 0) continue;
        if (rk->state == MX_RANK_RUNNING || all) {
            if (killpg(rk->pid, sig) < 0 && errno == ESRCH && rk->state == MX_RANK_RUNNING)
                kill(rk->pid, sig);
        }
    }
}

void mx_stop_job(int code, int sig)
{
    if (stopping) return;
    stopping = 1;
    if (exit_code < 0) exit_code = code;
    signal_groups(sig, 0);
    kill_deadline = mx_now() + MX_KILL_GRACE;
    /* stop forwarding stdin */
    stdin_open = 0;
    if (stdin_pipe >= 0) {
        close(stdin_pipe);
        stdin_pipe = -1;
    }
}

int mx_stopping(void)
{
    return stopping;
}

void mx_note_failure(int code)
{
    if (exit_code < 0) exit_code = code;
}

void mx_rank_aborted(struct mx_job *j, int rank, int code, const char *msg)
{
    if (j != &job) {                   /* a spawned job's rank */
        mx_spawn_aborted(j, rank, code, msg);
        return;
    }
    if (stopping) return;
    if (msg && msg[0]) mx_msg("rank %d called MPI_Abort(MPI_COMM_WORLD, %d): %s", rank, code, msg);
    else mx_msg("rank %d called MPI_Abort(MPI_COMM_WORLD, %d)", rank, code);
    int ec = code & 255;
    mx_stop_job(ec ? ec : 1, SIGTERM);
}

void mx_rank_exited(int r, int status)
{
    struct mx_rank *rk = &job.ranks[r];
    rk->state = MX_RANK_EXITED;
    rk->status = status;
    /* What the rank wrote and sent before it exited comes first. */
    mx_out_read(r, &rk->out[0], 1);
    mx_out_read(r, &rk->out[1], 1);
    mx_ctl_drain_rank(&job, r);
    if (r == 0 && stdin_pipe >= 0) {
        close(stdin_pipe);
        stdin_pipe = -1;
        stdin_open = 0;
    }
    if (stopping) return;
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        mx_msg("rank %d (pid %d) exited with status %d; stopping the job", r, (int)rk->pid, WEXITSTATUS(status));
        mx_stop_job(WEXITSTATUS(status), SIGTERM);
    } else if (WIFSIGNALED(status)) {
        int s = WTERMSIG(status);
        mx_msg("rank %d (pid %d) was killed by signal %d (%s); stopping the job", r, (int)rk->pid, s, strsignal(s));
        mx_stop_job(128 + s, SIGTERM);
    } else if (rk->connected && !rk->finalized) {
        mx_msg("rank %d (pid %d) exited without calling MPI_Finalize; stopping the job", r, (int)rk->pid);
        mx_stop_job(1, SIGTERM);
    } else {
        if (job.verbose > 1) mx_msg("rank %d (pid %d) exited with status 0", r, (int)rk->pid);
        mx_ctl_check_fence(&job);
    }
}

void mx_fence_dead(struct mx_job *j, int r)
{
    if (j != &job) {
        mx_spawn_fence_dead(j, r);
        return;
    }
    if (stopping) return;
    mx_msg("rank %d (pid %d) exited without %s while other ranks wait for it in MPI_Init; stopping the job",
           r, (int)job.ranks[r].pid, job.ranks[r].connected ? "completing MPI_Init" : "calling MPI_Init");
    mx_stop_job(1, SIGTERM);
}

static void reap(void)
{
    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p < 0 && errno == EINTR) continue;
        if (p <= 0) return;
        if (remote) {                  /* an agent (the ranks are elsewhere), or a spawned rank */
            if (!mx_remote_reaped(p, st)) mx_spawn_reaped(p, st);
            continue;
        }
        int found = 0;
        for (int r = 0; r < job.n && !found; r++)
            if (job.ranks[r].pid == p && job.ranks[r].state == MX_RANK_RUNNING) {
                mx_rank_exited(r, st);
                found = 1;
            }
        if (!found) mx_spawn_reaped(p, st);
    }
}

int mx_signalled;                      /* mpiexec got SIGINT/SIGTERM/SIGHUP */

static void got_signal(int sig)
{
    if (sig == SIGCHLD) return;
    if (sig == SIGQUIT) {                  /* a checkpoint (ckpt.c) */
        mx_ckpt_request(&job, "SIGQUIT");
        return;
    }
    mx_signalled = 1;
    if (!stopping) {
        mx_msg("received signal %d (%s); stopping the job", sig, strsignal(sig));
        mx_stop_job(128 + sig, sig);
    } else if (!killed_hard) {
        signal_groups(SIGKILL, 1);
        killed_hard = 1;
    }
}

static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static long read_proc_long(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
}

/* Refuse, before starting anything, a job this host cannot hold: mpiexec
 * keeps 3 descriptors per rank (stdout and stderr pipes, control
 * connection), and every rank is a process. */
static int check_limits(long n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)(3 * n + 64) > rl.rlim_cur) {
        mx_msg("cannot start %ld processes: mpiexec needs 3 file descriptors per process and may open %llu "
               "(ulimit -n); at most %lld processes", n, (unsigned long long)rl.rlim_cur,
               rl.rlim_cur > 64 ? (long long)((rl.rlim_cur - 64) / 3) : 0LL);
        return -1;
    }
    if (geteuid() != 0 && getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)n > rl.rlim_cur) {
        mx_msg("cannot start %ld processes: this user may run at most %llu (ulimit -u)", n,
               (unsigned long long)rl.rlim_cur);
        return -1;
    }
    static const char *const lim[] = { "/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max" };
    for (int i = 0; i < 2; i++) {
        long m = read_proc_long(lim[i]);
        if (m > 0 && n >= m) {
            mx_msg("cannot start %ld processes: the system holds at most %ld (%s)", n, m, lim[i]);
            return -1;
        }
    }
    return 0;
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Also on the exit() paths that do not return from main (out of memory). */
static void shm_cleanup_at_exit(void)
{
    mx_shm_cleanup(job.jobid);
    mx_spawn_cleanup();
}


/* ------------------------------------------------------------ main loop */

enum { T_SIG, T_LISTEN, T_STDIN, T_STDIN_PIPE, T_OUT, T_CONN, T_SINK, T_REMOTE, T_SPAWN, T_IMPI, T_IMPI_RELAY };
struct tag {
    int kind, rank, which;
    struct mx_conn *conn;
};

static int run_loop(int sigfd, double t_start)
{
    size_t cap = 16;
    struct pollfd *pfd = mx_xcalloc(cap, sizeof *pfd);
    struct tag *tags = mx_xcalloc(cap, sizeof *tags);
    double all_exited_at = -1, sweep_at = mx_now() + MX_REAP_SWEEP;

    for (;;) {
        double now = mx_now();
        double next = mx_ctl_housekeeping(&job, now);
        /* Children are also looked for without a SIGCHLD: a thread that
         * existed before main blocked the signals (a preloaded library's)
         * may take the signal and drop it. */
        if (now >= sweep_at) {
            reap();
            sweep_at = now + MX_REAP_SWEEP;
        }
        if (sweep_at < next) next = sweep_at;
        {
            double t = mx_spawn_timers(now);
            if (t < next) next = t;
        }
        if (remote) {
            double t = mx_remote_timers(now);
            if (t < next) next = t;
        }

        /* timers */
        if (mx_opt.timeout > 0 && !stopping) {
            double dl = t_start + mx_opt.timeout;
            if (now >= dl) {
                mx_msg("job timed out after %g seconds; stopping the job", mx_opt.timeout);
                mx_stop_job(124, SIGTERM);
            } else if (dl < next) next = dl;
        }
        if (mx_opt.ckpt_interval > 0 && !stopping) {   /* --checkpoint-interval (ckpt.c) */
            double t = mx_ckpt_timer(&job, now);
            if (t < next) next = t;
        }
        if (stopping && !killed_hard) {
            if (now >= kill_deadline) {
                signal_groups(SIGKILL, 1);
                killed_hard = 1;
            } else if (kill_deadline < next) next = kill_deadline;
        }

        /* done? */
        int running = 0, pipes_open = 0;
        for (int r = 0; r < job.n; r++) {
            if (job.ranks[r].state == MX_RANK_RUNNING) running++;
            pipes_open += (job.ranks[r].out[0].fd >= 0) + (job.ranks[r].out[1].fd >= 0);
        }
        mx_spawn_busy(&running, &pipes_open);     /* spawned jobs: mpiexec waits for them too */
        mx_impi_busy(&running, now, &next);       /* IMPI: the other hosts' FINIs */
        if (!running && remote) {
            mx_remote_end();           /* the proxies send what is left, then BYE */
            pipes_open += mx_remote_open();
        }
        if (!running) {
            /* the grace for pipes held open runs only while their output
             * can be taken (not while a slow reader throttles it) */
            if (all_exited_at < 0 || mx_sink_queued(1) >= MX_SINK_MAX || mx_sink_queued(2) >= MX_SINK_MAX)
                all_exited_at = now;
            if (!pipes_open) break;
            /* Something (a child of a rank) still holds a pipe. */
            double grace = remote ? 3 * MX_PIPE_GRACE : MX_PIPE_GRACE;
            if (now >= all_exited_at + grace) {
                if (remote) mx_remote_kill();
                signal_groups(SIGKILL, 1);
                mx_spawn_close_pipes();
                for (int r = 0; r < job.n; r++)
                    for (int w = 0; w < 2; w++) {
                        struct mx_out *o = &job.ranks[r].out[w];
                        mx_out_read(r, o, 0);
                        if (o->fd >= 0) mx_out_close(r, o);
                    }
                break;
            }
            if (all_exited_at + grace < next) next = all_exited_at + grace;
        }

        /* poll set */
        size_t need = 4 + (size_t)job.n * 2 + 64 + (remote ? mx_remote_maxfds() : 0) + mx_spawn_maxfds() +
                      mx_impi_maxfds();
        for (struct mx_conn *c = job.conns; c; c = c->next) need++;
        if (need > cap) {
            cap = need * 2;
            pfd = realloc(pfd, cap * sizeof *pfd);
            tags = realloc(tags, cap * sizeof *tags);
            if (!pfd || !tags) {
                mx_msg("out of memory");
                exit(1);
            }
        }
        size_t np = 0;
#define ADD(fd_, ev_, kind_, rank_, which_, conn_) do { \
        pfd[np].fd = (fd_); pfd[np].events = (ev_); pfd[np].revents = 0; \
        tags[np].kind = (kind_); tags[np].rank = (rank_); tags[np].which = (which_); tags[np].conn = (conn_); np++; } while (0)
        ADD(sigfd, POLLIN, T_SIG, -1, 0, NULL);
        if (job.listen_fd >= 0) ADD(job.listen_fd, POLLIN, T_LISTEN, -1, 0, NULL);
        if (mx_impi_fd() >= 0) ADD(mx_impi_fd(), POLLIN, T_IMPI, -1, 0, NULL);
        if (stdin_open && stdin_pipe >= 0 && stdin_off == stdin_len) ADD(0, POLLIN, T_STDIN, -1, 0, NULL);
        if (remote && stdin_open && mx_remote_stdin_room()) ADD(0, POLLIN, T_STDIN, -1, 0, NULL);
        if (stdin_pipe >= 0 && (stdin_off < stdin_len || !stdin_open))
            ADD(stdin_pipe, stdin_off < stdin_len ? POLLOUT : 0, T_STDIN_PIPE, 0, 0, NULL);
        /* a rank's output is read only while its sink has room */
        int room[3] = { 0, mx_sink_queued(1) < MX_SINK_MAX, mx_sink_queued(2) < MX_SINK_MAX };
        for (int r = 0; r < job.n; r++)
            for (int w = 0; w < 2; w++)
                if (job.ranks[r].out[w].fd >= 0 && room[w + 1])
                    ADD(job.ranks[r].out[w].fd, POLLIN, T_OUT, r, w, NULL);
        for (int w = 0; w < 2; w++)
            if (mx_sink_poll_fd(w) >= 0) ADD(mx_sink_poll_fd(w), POLLOUT, T_SINK, -1, w, NULL);
        for (struct mx_conn *c = job.conns; c; c = c->next)
            if (!c->dead) ADD(c->fd, mx_ctl_events(c), T_CONN, c->rank, 0, c);
#undef ADD
        {
            size_t k = mx_spawn_pollset(pfd + np, room);
            for (size_t i = 0; i < k; i++) {
                tags[np + i].kind = T_SPAWN;
                tags[np + i].rank = (int)i;
            }
            np += k;
        }
        if (mx_impi_maxfds()) {
            static int *iaux;
            static size_t iauxcap;
            if (iauxcap < mx_impi_maxfds()) {
                iauxcap = mx_impi_maxfds();
                iaux = realloc(iaux, iauxcap * sizeof *iaux);
                if (!iaux) exit(1);
            }
            size_t k = mx_impi_pollset(pfd + np, iaux);
            for (size_t i = 0; i < k; i++) {
                tags[np + i].kind = T_IMPI_RELAY;
                tags[np + i].rank = iaux[i];
            }
            np += k;
        }
        if (remote) {
            static int *aux;
            static size_t auxcap;
            if (auxcap < mx_remote_maxfds()) {
                auxcap = mx_remote_maxfds();
                aux = realloc(aux, auxcap * sizeof *aux);
                if (!aux) exit(1);
            }
            size_t k = mx_remote_pollset(pfd + np, aux, room[1] && room[2]);
            for (size_t i = 0; i < k; i++) {
                tags[np + i].kind = T_REMOTE;
                tags[np + i].rank = aux[i];
            }
            np += k;
        }

        int tmo = -1;
        if (next < 1e299) {
            double d = (next - now) * 1000.0;
            tmo = d <= 0 ? 0 : (d > 60000 ? 60000 : (int)d + 1);
        }
        if (tmo != 0 && mx_impi_spinning(now)) tmo = 0;   /* the IMPI relay polls a while after traffic */
        int nr = poll(pfd, (nfds_t)np, tmo);
        if (nr < 0) {
            if (errno == EINTR) continue;
            mx_msg("poll: %s", strerror(errno));
            mx_stop_job(1, SIGKILL);
            continue;
        }
        now = mx_now();
        for (size_t i = 0; i < np; i++) {
            short re = pfd[i].revents;
            if (!re) continue;
            struct tag *t = &tags[i];
            switch (t->kind) {
            case T_SIG: {
                struct signalfd_siginfo si;
                int sigchld = 0;
                while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
                    if (si.ssi_signo == SIGCHLD) sigchld = 1;
                    else got_signal((int)si.ssi_signo);
                }
                if (sigchld) reap();
                break;
            }
            case T_LISTEN:
                mx_ctl_accept(&job, now);
                break;
            case T_STDIN: {
                if (remote) {
                    char b[65536];
                    ssize_t n = (re & POLLNVAL) ? 0 : read(0, b, sizeof b);
                    if (n > 0) {
                        mx_remote_stdin(b, (size_t)n);
                    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                        stdin_open = 0;
                        mx_remote_stdin(b, 0);
                    }
                    break;
                }
                if (re & POLLNVAL) {
                    stdin_open = 0;
                } else {
                    ssize_t n = read(0, stdin_buf, sizeof stdin_buf);
                    if (n > 0) {
                        stdin_len = (size_t)n;
                        stdin_off = 0;
                    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                        stdin_open = 0;
                    }
                }
                if (!stdin_open && stdin_off == stdin_len && stdin_pipe >= 0) {
                    close(stdin_pipe);
                    stdin_pipe = -1;
                }
                break;
            }
            case T_STDIN_PIPE:
                if (stdin_off < stdin_len && (re & POLLOUT)) {
                    ssize_t w = write(stdin_pipe, stdin_buf + stdin_off, stdin_len - stdin_off);
                    if (w > 0) stdin_off += (size_t)w;
                    else if (w < 0 && errno != EINTR && errno != EAGAIN) re |= POLLERR;
                }
                if (re & (POLLERR | POLLHUP | POLLNVAL)) {    /* rank 0 closed its stdin */
                    close(stdin_pipe);
                    stdin_pipe = -1;
                    stdin_open = 0;
                    stdin_off = stdin_len = 0;
                } else if (stdin_off == stdin_len) {
                    stdin_off = stdin_len = 0;
                    if (!stdin_open) {
                        close(stdin_pipe);
                        stdin_pipe = -1;
                    }
                }
                break;
            case T_OUT:
                mx_out_read(t->rank, &job.ranks[t->rank].out[t->which], 0);
                break;
            case T_CONN:
                mx_ctl_event(&job, t->conn, re);
                break;
            case T_SINK:
                mx_sink_event(t->which, re);
                break;
            case T_REMOTE:
                mx_remote_event(t->rank, re, now);
                break;
            case T_SPAWN:
                mx_spawn_event(t->rank, re, now);
                break;
            case T_IMPI:
                mx_impi_event(re);
                break;
            case T_IMPI_RELAY:
                mx_impi_relay_event(t->rank, re);
                break;
            }
        }
    }
    free(pfd);
    free(tags);
    return exit_code < 0 ? 0 : exit_code;
}

/* Is name this machine? */
int mx_host_is_local(const char *name)
{
    char me[256] = "";
    if (!strcmp(name, "localhost") || !strcmp(name, "127.0.0.1")) return 1;
    if (gethostname(me, sizeof me - 1) != 0) return 0;
    size_t sl = strcspn(me, ".");
    return !strcmp(name, me) || (strlen(name) == sl && !strncmp(name, me, sl));
}

/* Hosts given (-host, --hostfile): where each rank goes, and whether the
 * job goes through proxies (remote); one local host without --launcher or
 * --launch-agent is today's path, the slots counted. */
static int *plan_hosts(void)
{
    struct mx_hostlist *hl = &mx_opt.hosts;
    if (hl->n == 0) {
        if (mx_opt.ppn && !mx_opt.np_given) mx_opt.np = mx_opt.ppn;
        if (mx_opt.launcher && !strcmp(mx_opt.launcher, "fork")) {   /* proxies on this host */
            if (mx_hosts_add(hl, "localhost", 9, mx_opt.np) < 0) exit(1);
        } else if (mx_opt.launcher ? !strcmp(mx_opt.launcher, "slurm") : !mx_opt.agent && mx_slurm_inside()) {
            /* inside salloc / sbatch: the allocation's hosts, proxies by srun (slurm.c) */
            if (!mx_slurm_inside()) {
                mx_msg("--launcher slurm: not inside a Slurm allocation (no SLURM_JOB_ID / SLURM_JOB_NODELIST)");
                exit(1);
            }
            if (mx_slurm_hosts(hl) < 0) exit(1);
            mx_opt.launcher = "slurm";
        } else {
            return NULL;
        }
    }
    if (!mx_opt.np_given) mx_opt.np = mx_hosts_total_slots(hl, mx_opt.ppn);
    int *host_of = mx_xcalloc((size_t)mx_opt.np, sizeof *host_of);
    char err[600];
    if (mx_hosts_map(hl, mx_opt.np, mx_opt.ppn, mx_opt.bynode, mx_opt.overload, host_of, err, sizeof err) < 0) {
        mx_msg("%s", err);
        exit(1);
    }
    mx_ckpt_restart_place(hl, host_of);     /* --restart: the manifest's hosts */
    char *used = mx_xcalloc((size_t)hl->n, 1);
    for (int r = 0; r < mx_opt.np; r++) nhosts_used += !used[host_of[r]]++;
    free(used);
    remote = hl->n > 1 || !mx_host_is_local(hl->h[0].name) ||
             (mx_opt.launcher && (!strcmp(mx_opt.launcher, "fork") || !strcmp(mx_opt.launcher, "slurm")));
    return host_of;
}

int main(int argc, char **argv)
{
    /* fds 0-2 must exist, so that no pipe or socket ends up there */
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0) {
            int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
            if (n >= 0 && n != fd) {
                dup2(n, fd);
                close(n);
            }
        }
    /* Signals: through a signalfd (run_loop); children get a clean mask
     * from spawn.  Blocked here, first, so that every thread of mpiexec
     * has them blocked: a thread started before (a library's, such as the
     * CUDA driver's when a component's open calls cuInit) that has SIGCHLD
     * unblocked takes it and drops it (its action is to ignore it), and
     * the job never ends: every GPU program's mpiexec hung after its ranks
     * exited.  SIGCHLD as the default: a parent that ran mpiexec with it
     * ignored (a disposition exec keeps) would have the kernel reap the
     * ranks unseen and send no SIGCHLD at all. */
    signal(SIGCHLD, SIG_DFL);
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGCHLD);
    sigaddset(&ss, SIGTERM);
    sigaddset(&ss, SIGQUIT);               /* a checkpoint request (ckpt.c) */
    /* SIGINT and SIGHUP ignored when mpiexec started (a background job of
     * a shell, nohup) stay ignored, as for any program */
    static const int opt_sigs[] = { SIGINT, SIGHUP };
    for (int i = 0; i < 2; i++) {
        struct sigaction old;
        if (sigaction(opt_sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaddset(&ss, opt_sigs[i]);
    }
    sigprocmask(SIG_BLOCK, &ss, NULL);
    mx_sinks_init();
    atexit(mx_sinks_at_exit);
    mx_parse_args(argc, argv);
    if (mx_opt.timeout == 0) {             /* the variable test runners use to bound a job */
        const char *t = getenv("MPIEXEC_TIMEOUT");
        if (t && *t) {
            char *end;
            double sec = strtod(t, &end);
            while (*end == ' ' || *end == '\t') end++;
            if (end == t || *end || !(sec >= 0) || sec > 1e9) {
                fprintf(stderr, "mpiexec: MPIEXEC_TIMEOUT: invalid number of seconds '%s'\n", t);
                return 1;
            }
            mx_opt.timeout = sec;
        }
    }
    if (mx_opt.restart) mx_ckpt_restart_plan();   /* -n and the program from the checkpoint */
    mx_hosts_user = mx_opt.hosts.n > 0;    /* (plan_hosts may add the hosts of --launcher fork/slurm) */
    int *host_of = plan_hosts();
    char *prog = resolve_program(mx_opt.argv[0]);
    if (mx_opt.wdir && !remote) {
        /* the ranks of this host start in -wdir: so does mpiexec, once it
         * has found the program from here */
        char *abs = prog[0] == '/' ? prog : realpath(prog, NULL);
        if (abs) prog = abs;
        if (chdir(mx_opt.wdir) < 0) {
            mx_msg("-wdir %s: %s", mx_opt.wdir, strerror(errno));
            return 1;
        }
    }
    {
        const char *v = getenv("KUMI_VERBOSE");
        job.verbose = v ? atoi(v) : 0;
    }
    choose_abi(prog);
    raise_fd_limit();
    if (!remote && check_limits(mx_opt.np) < 0) return 1;

    const char *v = getenv("KUMI_VERBOSE");
    job.verbose = v ? atoi(v) : 0;
    job.n = mx_opt.np;
    job.jobid = (long)getpid();
    job.listen_fd = -1;
    job.ranks = mx_xcalloc((size_t)job.n, sizeof *job.ranks);
    if (mx_bind_plan(&job, remote ? MX_BIND_NONE : mx_opt.bind, mx_opt.overload) < 0) return 1;
    for (int r = 0; r < job.n; r++)
        if (job.bind[r].bound) {
            char b[32];
            snprintf(b, sizeof b, "%d", job.bind[r].index);
            mx_ctl_kv_put(&job, r, KUMI_KVS_BIND_CPUS, job.bind[r].cpus);
            mx_ctl_kv_put(&job, r, KUMI_KVS_BIND_LEVEL, job.bind[r].level);
            mx_ctl_kv_put(&job, r, KUMI_KVS_BIND_INDEX, b);
        }

    /* the launcher */
    int rc = kumi_registry_open_framework("rpim"), nrpim = 0;
    struct kumi_comp_entry **rpims = kumi_registry_available("rpim", &nrpim);
    const struct kumi_rpim_ops *ops = NULL;
    for (int i = 0; i < nrpim && !ops; i++) {
        const struct kumi_rpim_ops *o = rpims[i]->comp ? rpims[i]->comp->ops : NULL;
        if (o && o->spawn) {
            ops = o;
            rpim_name_used = rpims[i]->comp->name;
        }
    }
    if (!ops) {
        char s[MPI_MAX_ERROR_STRING] = "";
        int l = 0;
        if (rc != MPI_SUCCESS) MPI_Error_string(rc, s, &l);
        mx_msg("no process launcher (rpim component) is available%s%s; see kumi_info", rc ? ": " : "", s);
        return 1;
    }

    if (mx_make_secret(job.secret) < 0) {
        mx_msg("cannot read /dev/urandom: %s", strerror(errno));
        return 1;
    }
    if (!remote && mx_ctl_listen(&job) < 0) return 1;
    mx_rpim_ops = ops;
    /* MPI_Comm_spawn (spawn.c): from ranks of this host through the
     * control channel, from ranks behind proxies through them (remote.c) */
    job.spawn_hook = mx_spawn_request;
    /* shared-memory objects of this job id: leftovers of an earlier
     * mpiexec with our pid that was killed, and ours at the end */
    mx_shm_cleanup(job.jobid);
    atexit(shm_cleanup_at_exit);
    if (job.verbose && !remote)
        mx_msg("job %ld: %d process%s of %s, control 127.0.0.1:%d", job.jobid, job.n, job.n == 1 ? "" : "es", prog,
               job.port);
    if (job.verbose && remote)
        mx_msg("job %ld: %d process%s of %s on %d hosts, through proxies", job.jobid, job.n, job.n == 1 ? "" : "es",
               prog, mx_opt.hosts.n);

    if (mx_opt.impi_server) {               /* the IMPI start-up, before any rank starts */
        if (remote) {
            mx_msg("--impi-client: the ranks of an IMPI client run on this host (no -host / --hostfile / "
                   "--launcher here)");
            return 1;
        }
        /* it may wait minutes for the IMPI server and its other clients:
         * meanwhile the signals act as for any program (^C ends mpiexec;
         * no rank runs yet), blocked again for the job */
        sigprocmask(SIG_UNBLOCK, &ss, NULL);
        int irc = mx_impi_startup(job.n);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        if (irc < 0) return 1;
    }

    int sigfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigfd < 0) {
        mx_msg("signalfd: %s", strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);

    int rank_slot;
    char **env = build_env(rpim_name_used, &rank_slot);
    int nargs = 0;
    while (mx_opt.argv[nargs]) nargs++;
    char **cargv = mx_xcalloc((size_t)nargs + 1, sizeof *cargv);
    cargv[0] = prog;
    for (int i = 1; i < nargs; i++) cargv[i] = mx_opt.argv[i];

    stdin_open = !mx_opt.stdin_none;
    double t_start = mx_now();
    if (remote) mx_remote_start(&job, host_of, cargv, env, rank_slot, stdin_open);
    for (int r = 0; r < job.n && !remote; r++) {
        struct mx_rank *rk = &job.ranks[r];
        int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, inp[2] = { -1, -1 };
        for (int w = 0; w < 2; w++) {
            rk->out[w].fd = -1;
            rk->out[w].which = w + 1;      /* buffer allocated at the first output */
        }
        if (stopping) continue;
        if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
            (r == 0 && stdin_open && pipe2(inp, O_CLOEXEC) < 0)) {
            mx_msg("cannot start rank %d: pipe: %s", r, strerror(errno));
            for (int k = 0; k < 2; k++) {
                if (outp[k] >= 0) close(outp[k]);
                if (errp[k] >= 0) close(errp[k]);
            }
            mx_stop_job(1, SIGTERM);
            continue;
        }
        char rb[32], bl[64], bi[48];
        if (mx_opt.restart) cargv[1] = (char *)mx_ckpt_image(r);   /* kumi_restart IMAGE */
        snprintf(rb, sizeof rb, "KUMI_RANK=%d", r);
        env[rank_slot] = rb;
        const struct mx_binding *bd = &job.bind[r];
        char *bc = NULL;
        if (bd->bound) {
            bc = mx_xcalloc(1, strlen(bd->cpus) + sizeof KUMI_ENV_BIND_CPUS + 1);
            sprintf(bc, "%s=%s", KUMI_ENV_BIND_CPUS, bd->cpus);
            snprintf(bl, sizeof bl, "%s=%s", KUMI_ENV_BIND_LEVEL, bd->level);
            snprintf(bi, sizeof bi, "%s=%d", KUMI_ENV_BIND_INDEX, bd->index);
            env[rank_slot + 1] = bc;
            env[rank_slot + 2] = bl;
            env[rank_slot + 3] = bi;
            env[rank_slot + 4] = bd->shared ? KUMI_ENV_BIND_SHARED "=1" : NULL;
        } else {
            env[rank_slot + 1] = NULL;
        }
        if (mx_opt.report_bindings) mx_bind_report(&job, r);
        struct kumi_spawn sp = {
            .rank = r, .host = NULL, .argv = cargv, .envp = env,
            .stdin_fd = inp[0], .stdout_fd = outp[1], .stderr_fd = errp[1],
            .close_fds = NULL, .nclose_fds = 0,
            .cpuset = bd->bound ? bd->cpuset : NULL, .cpuset_size = bd->bound ? bd->setsize : 0,
        };
        sp.close_fds = mx_impi_close_fds(r, &sp.nclose_fds);   /* NULL, 0 unless --impi-client */
        pid_t pid = -1;
        int src = ops->spawn(&sp, &pid);
        env[rank_slot + 1] = NULL;
        free(bc);
        close(outp[1]);
        close(errp[1]);
        if (inp[0] >= 0) close(inp[0]);
        if (src != 0 || pid <= 0) {
            mx_msg("cannot start rank %d: %s", r, src > 0 && src < 4096 ? strerror(src) : "spawn failed");
            close(outp[0]);
            close(errp[0]);
            if (inp[1] >= 0) close(inp[1]);
            mx_stop_job(1, SIGTERM);
            continue;
        }
        rk->pid = pid;
        rk->state = MX_RANK_RUNNING;
        rk->out[0].fd = outp[0];
        rk->out[1].fd = errp[0];
        set_nonblock(outp[0]);
        set_nonblock(errp[0]);
        if (inp[1] >= 0) {
            stdin_pipe = inp[1];
            set_nonblock(stdin_pipe);
        }
    }
    if (stdin_pipe < 0 && !remote) stdin_open = 0;
    mx_impi_started();

    int code = run_loop(sigfd, t_start);
    mx_impi_end(code);
    mx_shm_cleanup(job.jobid);             /* every rank has exited */
    mx_spawn_cleanup();
    mx_sinks_finish(sigfd);                   /* output still queued for a slow reader */

    mx_ctl_close_all(&job);
    if (stdin_pipe >= 0) close(stdin_pipe);
    close(sigfd);
    if (job.verbose > 1) mx_msg("job %ld ends with status %d", job.jobid, code);
    return code;
}

