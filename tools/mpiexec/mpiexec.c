/* mpiexec (and mpirun, a symlink): start an MPI job on this host.
 *
 *   mpiexec [options] prog [args]
 *
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
 * does not provide, or whose shim is not installed, included). */
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

#define MX_LINE_MAX   (64 * 1024)   /* a longer line without '\n' is written in pieces */
#define MX_KILL_GRACE 1.0           /* seconds between SIGTERM and SIGKILL */
#define MX_PIPE_GRACE 1.0           /* seconds to wait for pipes after every rank exited */

static struct mx_job job;

static struct {
    int np;
    char **xvars; int nx;              /* -x NAME or NAME=value */
    char **params; int nparams;        /* KUMI_NAME=value from --param */
    double timeout;
    int tag_output;
    int stdin_none;
    enum mx_bind_level bind;           /* --bind-to */
    int overload;                      /* --oversubscribe, or :overload-allowed */
    int report_bindings;
    const char *abi;                   /* --abi, else $KUMI_ABI; NULL or "auto": from the program */
    char **argv;                       /* program and arguments */
} opt;

/* job control state */
static int stopping;                   /* the job is being stopped */
static int exit_code = -1;             /* first failure, or -1 */
static double kill_deadline;           /* SIGKILL time while stopping */
static int killed_hard;

/* stdin forwarding to rank 0 */
static int stdin_open;                 /* still reading fd 0 */
static int stdin_pipe = -1;            /* write end to rank 0 */
static char stdin_buf[65536];
static size_t stdin_len, stdin_off;

struct mx_sink;
static struct mx_sink *sink_of[3];
static void sink_put(struct mx_sink *k, const void *p, size_t n);
static int sink_flush(struct mx_sink *k, int wait_ms);

void mx_msg(const char *fmt, ...)
{
    char b[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof b - 2) n = (int)sizeof b - 2;
    b[n++] = '\n';
    if (!sink_of[2]) {                   /* before the sinks exist */
        fputs("mpiexec: ", stderr);
        fwrite(b, 1, (size_t)n, stderr);
        fflush(stderr);
        return;
    }
    sink_put(sink_of[2], "mpiexec: ", 9);
    sink_put(sink_of[2], b, (size_t)n);
    sink_flush(sink_of[2], 0);
}

double mx_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: mpiexec [options] program [arguments]\n"
        "Start an MPI job of N processes on this host.\n\n"
        "  -n, -np, --np N      number of processes (default 1)\n"
        "  -x NAME[=VALUE]      export NAME (with VALUE, or its current value) to the\n"
        "                       processes; by default the whole environment is passed\n"
        "  --param NAME=VALUE   set parameter NAME for the processes (environment\n"
        "                       KUMI_<NAME in upper case>); see kumi_info --param;\n"
        "                       also --param NAME VALUE (or --mca NAME VALUE)\n"
        "  --memory-alloc-kinds LIST\n"
        "                       memory allocation kinds the program asks for (MPI 4.1\n"
        "                       info key mpi_memory_alloc_kinds; default mpi,system)\n"
        "  --timeout S          stop the job after S seconds (exit status 124); without\n"
        "                       it, the environment variable MPIEXEC_TIMEOUT (seconds;\n"
        "                       0 or empty: no limit) sets the limit, as in Open MPI\n"
        "                       and MPICH\n"
        "  --tag-output         prefix each output line with [jobid,rank]<stdout>: or <stderr>:\n"
        "  --stdin none         do not forward stdin to rank 0 (it gets /dev/null)\n"
        "  --bind-to L          bind each process to a core, package or hwthread, or\n"
        "                       none (L: core, package, hwthread, none; append\n"
        "                       :overload-allowed to allow more processes than cores).\n"
        "                       Default: one process per core when there are no more\n"
        "                       processes than cores, else unbound\n"
        "  --oversubscribe      allow --bind-to with more processes than cores\n"
        "  --report-bindings    print each process's binding on stderr\n"
        "  --abi A              the MPI ABI the program was built for: ompi (Open MPI\n"
        "                       4.x), mpich (MPICH 4.x), standard (MPI 5.0 ABI, Kumi's\n"
        "                       own) or auto (default; also environment KUMI_ABI): auto\n"
        "                       reads the program's DT_NEEDED (libmpi.so.40: ompi,\n"
        "                       libmpich.so.12 or libmpi.so.12: mpich) and runs it on\n"
        "                       Kumi through that ABI's shim; give it for interpreters\n"
        "                       (python3 with mpi4py) and scripts\n"
        "  -h, --help           this help\n"
        "  --version            print the version\n\n"
        "stdin goes to rank 0, the other ranks read /dev/null.  stdout and stderr of\n"
        "every rank are forwarded line by line.  The exit status is 0 when every rank\n"
        "exited 0; when one fails (non-zero exit, signal, MPI_Abort) the others are\n"
        "stopped and mpiexec returns its status (128+signal, the abort code).\n"
        "Environment: KUMI_VERBOSE=1 prints the control address, the job id and the\n"
        "ABI chosen; KUMI_ABI is --abi's default; KUMI_ABI_DIR replaces the folder of\n"
        "the ABI shims (" KUMI_PKGLIBDIR "/abi).\n");
}

static void die_usage(const char *fmt, const char *arg)
{
    fputs("mpiexec: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nTry 'mpiexec --help'.\n", stderr);
    exit(1);
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d) {
        mx_msg("out of memory");
        exit(1);
    }
    return d;
}

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) {
        mx_msg("out of memory");
        exit(1);
    }
    return p;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static void add_param(const char *name, const char *value)
{
    /* the global parameters' full names start with kumi_ (kumi_base_verbose,
     * as kumi_info lists them); their variable is KUMI_BASE_VERBOSE, not
     * KUMI_KUMI_BASE_VERBOSE (the registry's kumi_param_envname rule) */
    if (strncmp(name, "kumi_", 5) == 0 && name[5]) name += 5;
    size_t nl = strlen(name);
    if (nl == 0) die_usage("--param: empty parameter name%s", "");
    char *e = xcalloc(1, 5 + nl + 1 + strlen(value) + 1);
    memcpy(e, "KUMI_", 5);
    for (size_t i = 0; i < nl; i++) {
        char c = name[i];
        if (!(c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            die_usage("--param: invalid parameter name '%s'", name);
        e[5 + i] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    }
    e[5 + nl] = '=';
    strcpy(e + 5 + nl + 1, value);
    opt.params = realloc(opt.params, (size_t)(opt.nparams + 1) * sizeof *opt.params);
    if (!opt.params) exit(1);
    opt.params[opt.nparams++] = e;
}

static int is_number(const char *s)
{
    char *end;
    errno = 0;
    (void)strtod(s, &end);
    return end != s && *end == 0;
}

/* Next argument as the value of option a (--opt value): never an option
 * (a word beginning with '-' that is not a number), which would silently
 * swallow it; "--opt=value" carries any value. */
static const char *next_value(int argc, char **argv, int *i, const char *a, const char *what)
{
    if (*i + 1 >= argc) die_usage("option %s needs a value", what ? what : a);
    const char *v = argv[*i + 1];
    if (v[0] == '-' && !is_number(v)) {
        fprintf(stderr, "mpiexec: option %s needs a value, not the option '%s' (write %s=VALUE for a value that "
                "begins with '-')\nTry 'mpiexec --help'.\n", what ? what : a, v, what ? what : a);
        exit(1);
    }
    return argv[++*i];
}

/* Value of "--opt value" or "--opt=value" forms. */
static const char *optval(int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char *eq = strchr(a, '=');
    if (eq) return eq + 1;
    return next_value(argc, argv, i, a, NULL);
}

static int is_opt(const char *a, const char *name)
{
    size_t nl = strlen(name);
    return strncmp(a, name, nl) == 0 && (a[nl] == 0 || a[nl] == '=');
}

static const struct mx_abi_desc *mx_abi_by_name(const char *s)
{
    for (int i = 0; i < MX_NABIS; i++)
        if (!strcmp(s, mx_abis[i].name)) return &mx_abis[i];
    return NULL;
}

static void parse_args(int argc, char **argv)
{
    opt.np = 1;
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v;
        if (a[0] != '-') break;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (is_opt(a, "-n") || is_opt(a, "-np") || is_opt(a, "--np") || is_opt(a, "--n") || is_opt(a, "-c")) {
            const char *s = optval(argc, argv, &i);
            if (parse_int(s, 1, 1000000, &v)) die_usage("invalid number of processes '%s'", s);
            opt.np = (int)v;
        } else if (is_opt(a, "-x")) {
            const char *s = optval(argc, argv, &i);
            if (!s[0] || s[0] == '=') die_usage("-x: invalid variable '%s'", s);
            opt.xvars = realloc(opt.xvars, (size_t)(opt.nx + 1) * sizeof *opt.xvars);
            if (!opt.xvars) exit(1);
            opt.xvars[opt.nx++] = xstrdup(s);
        } else if (is_opt(a, "--param") || is_opt(a, "--mca")) {
            /* --param NAME=VALUE, or --param NAME VALUE (two arguments, as
             * Open MPI's --mca name value); --param=NAME=VALUE too */
            const char *o = a[2] == 'p' ? "--param" : "--mca";
            const char *s = strchr(a, '=') ? strchr(a, '=') + 1 : NULL;
            if (!s) {
                if (i + 1 >= argc) die_usage("option %s needs NAME=VALUE or NAME VALUE", o);
                s = argv[++i];
            }
            if (s[0] == '-') {
                fprintf(stderr, "mpiexec: option %s needs a parameter name, not the option '%s'\nTry 'mpiexec --help'.\n",
                        o, s);
                exit(1);
            }
            const char *eq = strchr(s, '=');
            if (eq) {
                char *name = xstrdup(s);
                name[eq - s] = 0;
                add_param(name, eq + 1);
                free(name);
            } else {
                char what[300];
                snprintf(what, sizeof what, "%s %s", o, s);
                if (i + 1 >= argc) die_usage("option %s needs a value (NAME=VALUE or NAME VALUE)", what);
                add_param(s, next_value(argc, argv, &i, a, what));
            }
        } else if (is_opt(a, "--memory-alloc-kinds")) {
            add_param("base_memory_alloc_kinds", optval(argc, argv, &i));
        } else if (is_opt(a, "--timeout")) {
            const char *s = optval(argc, argv, &i);
            char *end;
            double t = strtod(s, &end);
            if (end == s || *end || !(t > 0) || t > 1e9) die_usage("--timeout: invalid number of seconds '%s'", s);
            opt.timeout = t;
        } else if (strcmp(a, "--tag-output") == 0) {
            opt.tag_output = 1;
        } else if (is_opt(a, "--stdin")) {
            const char *s = optval(argc, argv, &i);
            if (strcmp(s, "none") == 0) opt.stdin_none = 1;
            else if (strcmp(s, "0") == 0 || strcmp(s, "rank0") == 0) opt.stdin_none = 0;
            else die_usage("--stdin: expected 'none' or '0', not '%s'", s);
        } else if (is_opt(a, "--bind-to") || is_opt(a, "-bind-to")) {
            const char *s = optval(argc, argv, &i);
            size_t l = strcspn(s, ":");
            if (s[l] && strcmp(s + l, ":overload-allowed") == 0) opt.overload = 1;
            else if (s[l]) die_usage("--bind-to: unknown qualifier '%s' (only :overload-allowed)", s + l);
            if (l == 4 && strncmp(s, "none", 4) == 0) opt.bind = MX_BIND_NONE;
            else if (l == 4 && strncmp(s, "core", 4) == 0) opt.bind = MX_BIND_CORE;
            else if ((l == 7 && strncmp(s, "package", 7) == 0) || (l == 6 && strncmp(s, "socket", 6) == 0))
                opt.bind = MX_BIND_PACKAGE;
            else if ((l == 8 && strncmp(s, "hwthread", 8) == 0) || (l == 3 && strncmp(s, "cpu", 3) == 0))
                opt.bind = MX_BIND_HWTHREAD;
            else die_usage("--bind-to: expected core, package, hwthread or none, not '%s'", s);
        } else if (strcmp(a, "--oversubscribe") == 0 || strcmp(a, "-oversubscribe") == 0) {
            opt.overload = 1;
        } else if (strcmp(a, "--report-bindings") == 0 || strcmp(a, "-report-bindings") == 0) {
            opt.report_bindings = 1;
        } else if (is_opt(a, "--abi") || is_opt(a, "-abi")) {
            opt.abi = optval(argc, argv, &i);
            if (strcmp(opt.abi, "auto") && !mx_abi_by_name(opt.abi))
                die_usage("--abi: expected ompi, mpich, standard or auto, not '%s'", opt.abi);
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            printf("mpiexec (Kumi) %s\n", KUMI_VERSION_STRING);
            exit(0);
        } else {
            die_usage("unknown option '%s'", a);
        }
    }
    if (i >= argc) die_usage("no program to run%s", "");
    opt.argv = &argv[i];
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
        return xstrdup(prog);
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    int found_noexec = 0;
    const char *p = path;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t dl = colon ? (size_t)(colon - p) : strlen(p);
        char *cand = xcalloc(1, dl + strlen(prog) + 3);
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
    for (int j = opt.nx - 1; j >= 0; j--)
        if (name_is(opt.xvars[j], "LD_LIBRARY_PATH") && strchr(opt.xvars[j], '='))
            return strchr(opt.xvars[j], '=') + 1;
    return getenv("LD_LIBRARY_PATH");
}

/* Decide abi_choice for prog; exits 1 with a message when it cannot run. */
static void choose_abi(const char *prog)
{
    const char *shown = opt.argv[0];
    const char *how = opt.abi ? "--abi" : "KUMI_ABI";
    const char *want = opt.abi ? opt.abi : getenv("KUMI_ABI");
    if (want && !*want) want = NULL;
    if (want && strcmp(want, "auto") && !mx_abi_by_name(want)) {
        mx_msg("KUMI_ABI: expected ompi, mpich, standard or auto, not '%s'", want);
        exit(1);
    }
    struct mx_abi_result r;
    memset(&r, 0, sizeof r);
    char provided[1024];
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
                char by2[PATH_MAX + 32];
                snprintf(by2, sizeof by2, "%s", which_of(r.other_by));
                mx_msg("%s needs both Open MPI's %s%s and MPICH's %s%s; Kumi runs a process through one ABI "
                       "(ABIs provided: %s)", shown, r.lib, which_of(r.by), r.other, by2, provided);
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

/* Environment of the ranks; *rank_slot receives the index of KUMI_RANK,
 * which is followed by room for the three KUMI_ENV_BIND_* and a NULL. */
static char **build_env(const char *rpim_name, int *rank_slot)
{
    static const char *const reserved[] = { "KUMI_RANK", "KUMI_SIZE", "KUMI_JOBID", "KUMI_CONTROL", "KUMI_ABI",
                                            "KUMI_JOB_SECRET", "KUMI_RPIM", KUMI_ENV_NHOSTS, KUMI_ENV_BIND_CPUS,
                                            KUMI_ENV_BIND_LEVEL, KUMI_ENV_BIND_INDEX };
    const int nres = (int)(sizeof reserved / sizeof reserved[0]);
    size_t ne = 0;
    while (environ[ne]) ne++;
    char **env = xcalloc(ne + (size_t)opt.nx + (size_t)opt.nparams + 18, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < ne; i++) {
        const char *e = environ[i];
        int skip = 0;
        for (int j = 0; j < nres && !skip; j++) skip = name_is(e, reserved[j]);
        for (int j = 0; j < opt.nx && !skip; j++) skip = name_is(e, opt.xvars[j]);
        for (int j = 0; j < opt.nparams && !skip; j++) skip = name_is(e, opt.params[j]);
        if (!skip) env[k++] = (char *)e;
    }
    for (int j = 0; j < opt.nx; j++) {
        const char *x = opt.xvars[j];
        if (strchr(x, '=')) {
            env[k++] = (char *)x;
        } else {
            const char *v = getenv(x);
            if (!v) continue;              /* not set here: nothing to export */
            char *e = xcalloc(1, strlen(x) + strlen(v) + 2);
            sprintf(e, "%s=%s", x, v);
            env[k++] = e;
        }
    }
    for (int j = 0; j < opt.nparams; j++) env[k++] = opt.params[j];
    char b[256];
    snprintf(b, sizeof b, "KUMI_SIZE=%d", job.n);
    env[k++] = xstrdup(b);
    snprintf(b, sizeof b, "KUMI_JOBID=%ld", job.jobid);
    env[k++] = xstrdup(b);
    snprintf(b, sizeof b, "KUMI_CONTROL=127.0.0.1:%d", job.port);
    env[k++] = xstrdup(b);
    snprintf(b, sizeof b, "KUMI_JOB_SECRET=%s", job.secret);
    env[k++] = xstrdup(b);
    snprintf(b, sizeof b, "KUMI_RPIM=%s", rpim_name);
    env[k++] = xstrdup(b);
    env[k++] = xstrdup(KUMI_ENV_NHOSTS "=1");       /* every rank runs on this host */
    if (abi_choice.abi != MX_ABI_NONE) {
        snprintf(b, sizeof b, "KUMI_ABI=%s", mx_abi_desc(abi_choice.abi)->name);
        env[k++] = xstrdup(b);
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
        char *e = xcalloc(1, vl + 1 + strlen(first) + 1 + strlen(old) + 1);
        sprintf(e, "%s=%s%s%s", var, first, *old ? ":" : "", old);
        if (j < k) env[j] = e;
        else env[k++] = e;
    }
    *rank_slot = (int)k;
    for (int j = 0; j < 5; j++) env[k + (size_t)j] = NULL;   /* KUMI_RANK, KUMI_ENV_BIND_*, per rank */
    return env;
}

static int make_secret(char *out)
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

/* ------------------------------------------------------------ output
 *
 * What mpiexec writes to its stdout and stderr (the ranks' output and its
 * own messages) goes through a queue per destination ("sink"), written
 * without blocking from the event loop: a stdout that nobody reads never
 * stops mpiexec from handling signals, dead ranks or the control channel.
 * When a sink holds MX_SINK_MAX bytes, mpiexec stops reading the ranks'
 * pipes that feed it (the ranks then block in their own writes), so memory
 * stays bounded.  A pipe (FIFO) or a terminal is reopened through
 * /proc/self/fd with O_NONBLOCK (a description of our own: the shell's is
 * not changed; where that fails it is written in pieces of at most PIPE_BUF
 * bytes once poll() says it is writable); a socket is written with
 * MSG_DONTWAIT; a regular file never blocks.  stdout and stderr that are the same object
 * (2>&1) share one sink, so their order is kept. */

#define MX_SINK_MAX (1024 * 1024)

enum { SINK_FILE, SINK_NONBLOCK, SINK_SOCKET, SINK_POLL };

struct mx_sink {
    int fd;              /* where to write (fd 1 or 2, or our reopened copy) */
    int mode;
    int broken;          /* EPIPE or the like: output dropped */
    char *q;
    size_t len, off, cap;
};
static struct mx_sink sinks[2];
static struct mx_sink *sink_of[3];    /* [1] stdout, [2] stderr; NULL until sinks_init */

static void sinks_init(void)
{
    struct stat st[3];
    for (int fd = 1; fd <= 2; fd++) {
        struct mx_sink *k = &sinks[fd - 1];
        k->fd = fd;
        k->mode = SINK_FILE;
        sink_of[fd] = k;
        if (fstat(fd, &st[fd]) < 0) continue;
        if (fd == 2 && st[1].st_dev == st[2].st_dev && st[1].st_ino == st[2].st_ino &&
            (st[2].st_mode & S_IFMT) == (st[1].st_mode & S_IFMT)) {
            sink_of[2] = sink_of[1];
            break;
        }
        if (S_ISFIFO(st[fd].st_mode) || S_ISCHR(st[fd].st_mode)) {
            char path[64];
            snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
            int n = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
            struct stat sn;
            if (n >= 0 && fstat(n, &sn) == 0 && sn.st_dev == st[fd].st_dev && sn.st_ino == st[fd].st_ino) {
                k->fd = n;
                k->mode = SINK_NONBLOCK;
            } else {
                if (n >= 0) close(n);
                k->mode = SINK_POLL;
            }
        } else if (S_ISSOCK(st[fd].st_mode)) {
            k->mode = SINK_SOCKET;
        }
    }
}

/* Write what the sink holds, without blocking (wait > 0: for up to that
 * many ms in all).  Returns 1 when it is empty (or broken). */
static int sink_flush(struct mx_sink *k, int wait_ms)
{
    double end = mx_now() + wait_ms / 1000.0;
    while (k->off < k->len && !k->broken) {
        size_t n = k->len - k->off;
        ssize_t w;
        if (k->mode == SINK_POLL) {
            struct pollfd p = { .fd = k->fd, .events = POLLOUT };
            int left = (int)((end - mx_now()) * 1000.0);
            int pr = poll(&p, 1, left > 0 ? left : 0);
            if (pr == 0) return 0;
            if (pr < 0) {
                if (errno == EINTR) continue;
                return 0;
            }
            if (n > PIPE_BUF) n = PIPE_BUF;
            w = write(k->fd, k->q + k->off, n);
        } else if (k->mode == SINK_SOCKET) {
            w = send(k->fd, k->q + k->off, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        } else {
            w = write(k->fd, k->q + k->off, n);
        }
        if (w > 0) {
            k->off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int left = (int)((end - mx_now()) * 1000.0);
            if (left <= 0) return 0;
            struct pollfd p = { .fd = k->fd, .events = POLLOUT };
            poll(&p, 1, left);
            continue;
        }
        k->broken = 1;                    /* EPIPE or the like: drop output */
    }
    if (k->broken) k->len = k->off = 0;
    if (k->off == k->len) k->off = k->len = 0;
    return 1;
}

static void sink_put(struct mx_sink *k, const void *p, size_t n)
{
    if (k->broken || n == 0) return;
    if (k->len + n > k->cap) {
        if (k->off > 0) {
            memmove(k->q, k->q + k->off, k->len - k->off);
            k->len -= k->off;
            k->off = 0;
        }
        size_t cap = k->cap ? k->cap : 4096;
        while (cap < k->len + n) cap *= 2;
        if (cap != k->cap) {
            char *q = realloc(k->q, cap);
            if (!q) {                     /* drop rather than die */
                k->broken = 1;
                return;
            }
            k->q = q;
            k->cap = cap;
        }
    }
    memcpy(k->q + k->len, p, n);
    k->len += n;
}

/* Bytes waiting in the sink of fd 1 or 2. */
static size_t sink_queued(int which)
{
    return sink_of[which]->len - sink_of[which]->off;
}

/* Write o->buf[0..len) of rank r into its sink: complete lines, possibly
 * followed by a piece without '\n' (at EOF, or when the buffer is full).
 * With --tag-output every piece is a line of its own with its tag (a line
 * longer than MX_LINE_MAX is cut into tagged lines); the sink receives each
 * piece whole, so pieces of different ranks never mix. */
static void emit(int r, struct mx_out *o, size_t len, int at_eof)
{
    if (len == 0) return;
    struct mx_sink *k = sink_of[o->which];
    if (!opt.tag_output) {
        sink_put(k, o->buf, len);
        return;
    }
    (void)at_eof;
    char prefix[64];
    int pl = snprintf(prefix, sizeof prefix, "[%ld,%d]<%s>: ", job.jobid, r, o->which == 1 ? "stdout" : "stderr");
    size_t pos = 0;
    while (pos < len) {
        char *nl = memchr(o->buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - o->buf) + 1 : len;
        sink_put(k, prefix, (size_t)pl);
        sink_put(k, o->buf + pos, end - pos);
        if (!nl) sink_put(k, "\n", 1);
        pos = end;
    }
}

/* Emit complete lines of o; with at_eof, also the rest. */
static void out_flush(int r, struct mx_out *o, int at_eof)
{
    if (o->len == 0) return;
    size_t n = 0;
    for (size_t i = o->len; i > 0; i--)
        if (o->buf[i - 1] == '\n') {
            n = i;
            break;
        }
    if (at_eof || (n == 0 && o->len >= MX_LINE_MAX)) n = o->len;
    if (n == 0) return;
    emit(r, o, n, at_eof);
    memmove(o->buf, o->buf + n, o->len - n);
    o->len -= n;
    sink_flush(sink_of[o->which], 0);
}

static void out_close(int r, struct mx_out *o)
{
    close(o->fd);
    o->fd = -1;
    out_flush(r, o, 1);
    free(o->buf);
    o->buf = NULL;
    o->len = o->cap = 0;
}

/* Read what a rank's pipe holds now (bounded); closes it at EOF.  The line
 * buffer is allocated on the first output and grows up to MX_LINE_MAX. */
static void out_read(int r, struct mx_out *o, int drain)
{
    int rounds = drain ? 256 : 16;
    while (o->fd >= 0 && rounds-- > 0) {
        if (o->len == o->cap) {
            if (o->cap < MX_LINE_MAX) {
                size_t cap = o->cap ? 2 * o->cap : 4096;
                char *b = realloc(o->buf, cap);
                if (!b) {
                    mx_msg("out of memory");
                    exit(1);
                }
                o->buf = b;
                o->cap = cap;
            } else {
                out_flush(r, o, 0);
            }
        }
        ssize_t n = read(o->fd, o->buf + o->len, o->cap - o->len);
        if (n > 0) {
            o->len += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        out_close(r, o);                  /* EOF or error */
        return;
    }
    out_flush(r, o, 0);
}

/* ------------------------------------------------------------ job control */

static const char *rpim_name_used = "fork";

static void signal_groups(int sig, int all)
{
    for (int r = 0; r < job.n; r++) {
        struct mx_rank *rk = &job.ranks[r];
        if (rk->pid <= 0) continue;
        if (rk->state == MX_RANK_RUNNING || all) {
            if (killpg(rk->pid, sig) < 0 && errno == ESRCH && rk->state == MX_RANK_RUNNING)
                kill(rk->pid, sig);
        }
    }
}

static void stop_job(int code, int sig)
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

void mx_rank_aborted(struct mx_job *j, int rank, int code, const char *msg)
{
    (void)j;
    if (stopping) return;
    if (msg && msg[0]) mx_msg("rank %d called MPI_Abort(MPI_COMM_WORLD, %d): %s", rank, code, msg);
    else mx_msg("rank %d called MPI_Abort(MPI_COMM_WORLD, %d)", rank, code);
    int ec = code & 255;
    stop_job(ec ? ec : 1, SIGTERM);
}

static void rank_exited(int r, int status)
{
    struct mx_rank *rk = &job.ranks[r];
    rk->state = MX_RANK_EXITED;
    rk->status = status;
    /* What the rank wrote and sent before it exited comes first. */
    out_read(r, &rk->out[0], 1);
    out_read(r, &rk->out[1], 1);
    mx_ctl_drain_rank(&job, r);
    if (r == 0 && stdin_pipe >= 0) {
        close(stdin_pipe);
        stdin_pipe = -1;
        stdin_open = 0;
    }
    if (stopping) return;
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        mx_msg("rank %d (pid %d) exited with status %d; stopping the job", r, (int)rk->pid, WEXITSTATUS(status));
        stop_job(WEXITSTATUS(status), SIGTERM);
    } else if (WIFSIGNALED(status)) {
        int s = WTERMSIG(status);
        mx_msg("rank %d (pid %d) was killed by signal %d (%s); stopping the job", r, (int)rk->pid, s, strsignal(s));
        stop_job(128 + s, SIGTERM);
    } else if (rk->connected && !rk->finalized) {
        mx_msg("rank %d (pid %d) exited without calling MPI_Finalize; stopping the job", r, (int)rk->pid);
        stop_job(1, SIGTERM);
    } else {
        if (job.verbose > 1) mx_msg("rank %d (pid %d) exited with status 0", r, (int)rk->pid);
        mx_ctl_check_fence(&job);
    }
}

void mx_fence_dead(int r)
{
    if (stopping) return;
    mx_msg("rank %d (pid %d) exited without %s while other ranks wait for it in MPI_Init; stopping the job",
           r, (int)job.ranks[r].pid, job.ranks[r].connected ? "completing MPI_Init" : "calling MPI_Init");
    stop_job(1, SIGTERM);
}

static void reap(void)
{
    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p < 0 && errno == EINTR) continue;
        if (p <= 0) return;
        for (int r = 0; r < job.n; r++)
            if (job.ranks[r].pid == p && job.ranks[r].state == MX_RANK_RUNNING) {
                rank_exited(r, st);
                break;
            }
    }
}

static int signalled;                  /* mpiexec got SIGINT/SIGTERM/SIGHUP */

static void got_signal(int sig)
{
    if (sig == SIGCHLD) return;
    signalled = 1;
    if (!stopping) {
        mx_msg("received signal %d (%s); stopping the job", sig, strsignal(sig));
        stop_job(128 + sig, sig);
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
}

/* At the end: write what the sinks hold, waiting as long as the reader
 * takes, unless mpiexec was (or now is) told to stop by a signal: then what
 * cannot be written at once is dropped. */
static void sinks_finish(int sigfd)
{
    for (int w = 0; w < 2; w++) {
        struct mx_sink *k = &sinks[w];
        while (!sink_flush(k, 0) && !signalled) {
            struct pollfd p[2] = { { .fd = k->fd, .events = POLLOUT }, { .fd = sigfd, .events = POLLIN } };
            if (poll(p, 2, -1) < 0 && errno != EINTR) break;
            struct signalfd_siginfo si;
            while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
                if (si.ssi_signo != SIGCHLD) signalled = 1;
        }
        k->len = k->off = 0;
    }
}

static void sinks_at_exit(void)
{
    for (int w = 0; w < 2; w++) sink_flush(&sinks[w], signalled ? 0 : 1000);
}

/* ------------------------------------------------------------ main loop */

enum { T_SIG, T_LISTEN, T_STDIN, T_STDIN_PIPE, T_OUT, T_CONN, T_SINK };
struct tag {
    int kind, rank, which;
    struct mx_conn *conn;
};

static int run_loop(int sigfd, double t_start)
{
    size_t cap = 16;
    struct pollfd *pfd = xcalloc(cap, sizeof *pfd);
    struct tag *tags = xcalloc(cap, sizeof *tags);
    double all_exited_at = -1;

    for (;;) {
        double now = mx_now();
        double next = mx_ctl_housekeeping(&job, now);

        /* timers */
        if (opt.timeout > 0 && !stopping) {
            double dl = t_start + opt.timeout;
            if (now >= dl) {
                mx_msg("job timed out after %g seconds; stopping the job", opt.timeout);
                stop_job(124, SIGTERM);
            } else if (dl < next) next = dl;
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
        if (!running) {
            /* the grace for pipes held open runs only while their output
             * can be taken (not while a slow reader throttles it) */
            if (all_exited_at < 0 || sink_queued(1) >= MX_SINK_MAX || sink_queued(2) >= MX_SINK_MAX)
                all_exited_at = now;
            if (!pipes_open) break;
            /* Something (a child of a rank) still holds a pipe. */
            if (now >= all_exited_at + MX_PIPE_GRACE) {
                signal_groups(SIGKILL, 1);
                for (int r = 0; r < job.n; r++)
                    for (int w = 0; w < 2; w++) {
                        struct mx_out *o = &job.ranks[r].out[w];
                        out_read(r, o, 0);
                        if (o->fd >= 0) out_close(r, o);
                    }
                break;
            }
            if (all_exited_at + MX_PIPE_GRACE < next) next = all_exited_at + MX_PIPE_GRACE;
        }

        /* poll set */
        size_t need = 4 + (size_t)job.n * 2 + 64;
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
        if (stdin_open && stdin_pipe >= 0 && stdin_off == stdin_len) ADD(0, POLLIN, T_STDIN, -1, 0, NULL);
        if (stdin_pipe >= 0 && (stdin_off < stdin_len || !stdin_open))
            ADD(stdin_pipe, stdin_off < stdin_len ? POLLOUT : 0, T_STDIN_PIPE, 0, 0, NULL);
        /* a rank's output is read only while its sink has room */
        int room[3] = { 0, sink_queued(1) < MX_SINK_MAX, sink_queued(2) < MX_SINK_MAX };
        for (int r = 0; r < job.n; r++)
            for (int w = 0; w < 2; w++)
                if (job.ranks[r].out[w].fd >= 0 && room[w + 1])
                    ADD(job.ranks[r].out[w].fd, POLLIN, T_OUT, r, w, NULL);
        for (int w = 0; w < 2; w++)
            if (sinks[w].len > sinks[w].off && sinks[w].mode != SINK_FILE)
                ADD(sinks[w].fd, POLLOUT, T_SINK, -1, w, NULL);
        for (struct mx_conn *c = job.conns; c; c = c->next)
            if (!c->dead) ADD(c->fd, mx_ctl_events(c), T_CONN, c->rank, 0, c);
#undef ADD

        int tmo = -1;
        if (next < 1e299) {
            double d = (next - now) * 1000.0;
            tmo = d <= 0 ? 0 : (d > 60000 ? 60000 : (int)d + 1);
        }
        int nr = poll(pfd, (nfds_t)np, tmo);
        if (nr < 0) {
            if (errno == EINTR) continue;
            mx_msg("poll: %s", strerror(errno));
            stop_job(1, SIGKILL);
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
                out_read(t->rank, &job.ranks[t->rank].out[t->which], 0);
                break;
            case T_CONN:
                mx_ctl_event(&job, t->conn, re);
                break;
            case T_SINK:
                if (re & (POLLERR | POLLNVAL)) sinks[t->which].broken = 1;
                sink_flush(&sinks[t->which], 0);
                break;
            }
        }
    }
    free(pfd);
    free(tags);
    return exit_code < 0 ? 0 : exit_code;
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
    sinks_init();
    atexit(sinks_at_exit);
    parse_args(argc, argv);
    if (opt.timeout == 0) {             /* the variable test runners use to bound a job */
        const char *t = getenv("MPIEXEC_TIMEOUT");
        if (t && *t) {
            char *end;
            double sec = strtod(t, &end);
            while (*end == ' ' || *end == '\t') end++;
            if (end == t || *end || !(sec >= 0) || sec > 1e9) {
                fprintf(stderr, "mpiexec: MPIEXEC_TIMEOUT: invalid number of seconds '%s'\n", t);
                return 1;
            }
            opt.timeout = sec;
        }
    }
    char *prog = resolve_program(opt.argv[0]);
    {
        const char *v = getenv("KUMI_VERBOSE");
        job.verbose = v ? atoi(v) : 0;
    }
    choose_abi(prog);
    raise_fd_limit();
    if (check_limits(opt.np) < 0) return 1;

    const char *v = getenv("KUMI_VERBOSE");
    job.verbose = v ? atoi(v) : 0;
    job.n = opt.np;
    job.jobid = (long)getpid();
    job.listen_fd = -1;
    job.ranks = xcalloc((size_t)job.n, sizeof *job.ranks);
    if (mx_bind_plan(&job, opt.bind, opt.overload) < 0) return 1;
    for (int r = 0; r < job.n; r++)
        if (job.bind[r].bound) {
            char b[32];
            snprintf(b, sizeof b, "%d", job.bind[r].index);
            mx_ctl_kv_put(&job, r, KUMI_KVS_BIND_CPUS, job.bind[r].cpus);
            mx_ctl_kv_put(&job, r, KUMI_KVS_BIND_LEVEL, job.bind[r].level);
            mx_ctl_kv_put(&job, r, KUMI_KVS_BIND_INDEX, b);
        }

    /* the launcher */
    int rc = kumi_registry_open(1), nrpim = 0;
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

    if (make_secret(job.secret) < 0) {
        mx_msg("cannot read /dev/urandom: %s", strerror(errno));
        return 1;
    }
    if (mx_ctl_listen(&job) < 0) return 1;
    /* shared-memory objects of this job id: leftovers of an earlier
     * mpiexec with our pid that was killed, and ours at the end */
    mx_shm_cleanup(job.jobid);
    atexit(shm_cleanup_at_exit);
    if (job.verbose) mx_msg("job %ld: %d process%s of %s, control 127.0.0.1:%d", job.jobid, job.n,
                            job.n == 1 ? "" : "es", prog, job.port);

    /* signals: through a signalfd; children get a clean mask from spawn */
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGCHLD);
    sigaddset(&ss, SIGTERM);
    /* SIGINT and SIGHUP ignored when mpiexec started (a background job of
     * a shell, nohup) stay ignored, as for any program */
    static const int opt_sigs[] = { SIGINT, SIGHUP };
    for (int i = 0; i < 2; i++) {
        struct sigaction old;
        if (sigaction(opt_sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaddset(&ss, opt_sigs[i]);
    }
    sigprocmask(SIG_BLOCK, &ss, NULL);
    int sigfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigfd < 0) {
        mx_msg("signalfd: %s", strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);

    int rank_slot;
    char **env = build_env(rpim_name_used, &rank_slot);
    int nargs = 0;
    while (opt.argv[nargs]) nargs++;
    char **cargv = xcalloc((size_t)nargs + 1, sizeof *cargv);
    cargv[0] = prog;
    for (int i = 1; i < nargs; i++) cargv[i] = opt.argv[i];

    stdin_open = !opt.stdin_none;
    double t_start = mx_now();
    for (int r = 0; r < job.n; r++) {
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
            stop_job(1, SIGTERM);
            continue;
        }
        char rb[32], bl[64], bi[48];
        snprintf(rb, sizeof rb, "KUMI_RANK=%d", r);
        env[rank_slot] = rb;
        const struct mx_binding *bd = &job.bind[r];
        char *bc = NULL;
        if (bd->bound) {
            bc = xcalloc(1, strlen(bd->cpus) + sizeof KUMI_ENV_BIND_CPUS + 1);
            sprintf(bc, "%s=%s", KUMI_ENV_BIND_CPUS, bd->cpus);
            snprintf(bl, sizeof bl, "%s=%s", KUMI_ENV_BIND_LEVEL, bd->level);
            snprintf(bi, sizeof bi, "%s=%d", KUMI_ENV_BIND_INDEX, bd->index);
            env[rank_slot + 1] = bc;
            env[rank_slot + 2] = bl;
            env[rank_slot + 3] = bi;
        } else {
            env[rank_slot + 1] = NULL;
        }
        if (opt.report_bindings) mx_bind_report(&job, r);
        struct kumi_spawn sp = {
            .rank = r, .host = NULL, .argv = cargv, .envp = env,
            .stdin_fd = inp[0], .stdout_fd = outp[1], .stderr_fd = errp[1],
            .close_fds = NULL, .nclose_fds = 0,
            .cpuset = bd->bound ? bd->cpuset : NULL, .cpuset_size = bd->bound ? bd->setsize : 0,
        };
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
            stop_job(1, SIGTERM);
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
    if (stdin_pipe < 0) stdin_open = 0;

    int code = run_loop(sigfd, t_start);
    mx_shm_cleanup(job.jobid);             /* every rank has exited */
    sinks_finish(sigfd);                   /* output still queued for a slow reader */

    mx_ctl_close_all(&job);
    if (stdin_pipe >= 0) close(stdin_pipe);
    close(sigfd);
    if (job.verbose > 1) mx_msg("job %ld ends with status %d", job.jobid, code);
    return code;
}
