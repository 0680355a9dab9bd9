/* mpiexec: command-line options. */
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
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <mpi.h>
#include <kumi/kumi.h>
#include "mpiexec.h"
#include "abi_detect.h"
#include <kumi/impi.h>

struct mx_opts mx_opt;

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: mpiexec [options] program [arguments]\n"
        "Start an MPI job of N processes on this host, or on the hosts named.\n\n"
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
        "  --oversubscribe      allow --bind-to with more processes than cores, and\n"
        "                       more processes than the hosts' slots\n"
        "  --report-bindings    print each process's binding on stderr\n"
        "  --ckpt               enable coordinated checkpoints: SIGQUIT to mpiexec (or\n"
        "                       kumi_ckpt PID) writes an image of every process and a\n"
        "                       manifest into the checkpoint folder, and the job goes on\n"
        "  --ckpt-dir DIR       the checkpoint folder (default: mpiexec's working\n"
        "                       directory; across hosts, a folder every host sees\n"
        "                       at that path); implies --ckpt\n"
        "  --checkpoint-interval S\n"
        "                       a checkpoint every S seconds (from the start, or from\n"
        "                       the previous checkpoint); implies --ckpt\n"
        "  --restart DIR        start the job again from the checkpoint in DIR (its\n"
        "                       manifest and images), with a new job id, secret, ports\n"
        "                       and shared-memory names, each rank on its host of the\n"
        "                       manifest unless -host / --hostfile place them; no\n"
        "                       program is given; implies --ckpt\n"
        "  --checkpoint-and-stop\n"
        "                       the job ends (exit status 0) once a checkpoint is\n"
        "                       written; implies --ckpt\n"
        "  --abi A              the MPI ABI the program was built for: ompi (Open MPI\n"
        "                       4.x), mpich (MPICH 4.x), standard (MPI 5.0 ABI, Kumi's\n"
        "                       own) or auto (default; also environment KUMI_ABI): auto\n"
        "                       reads the program's DT_NEEDED (libmpi.so.40: ompi,\n"
        "                       libmpich.so.12 or libmpi.so.12: mpich) and runs it on\n"
        "                       Kumi through that ABI's shim (a program that needs\n"
        "                       both: both shims and the GOT swap agent\n"
        "                       libkumi_abimix.so; ompi+mpich says so for plug-ins\n"
        "                       loaded later); give it for interpreters\n"
        "                       (python3 with mpi4py) and scripts\n"
        "Hosts (several hosts: one proxy per host, started over ssh by default):\n"
        "  -host, -H H1,H2:N    run on these hosts (N slots; 1 when not given)\n"
        "  --hostfile FILE      hosts from FILE: lines 'host', 'host slots=N' or\n"
        "                       'host:N'; '#' starts a comment (also -f, --machinefile)\n"
        "  -ppn N               N processes per host (every host gets N slots)\n"
        "  --map-by slot|node   fill each host's slots in turn (slot, the default), or\n"
        "                       one process per host in turn (node)\n"
        "                       -n defaults to the number of slots\n"
        "  --launcher L         how proxies start: ssh (default), rsh, fork (every\n"
        "                       host's proxy on this machine) or slurm (one srun;\n"
        "                       the default inside salloc/sbatch without -host or\n"
        "                       --hostfile: hosts and slots from the allocation)\n"
        "  --launch-agent CMD   start proxies with CMD HOST kumi_proxy (%%h in CMD\n"
        "                       stands for the host instead); also KUMI_RPIM_SSH_AGENT\n"
        "                       or --param rpim_ssh_agent=CMD\n"
        "  --host-timeout S     a host silent for S seconds is lost (default 5)\n"
        "  --fanout K           mpiexec starts at most K proxies, each proxy K more\n"
        "                       (a tree when there are more hosts; default 32)\n"
        "  -wdir DIR            the processes start in DIR (default: this folder)\n"
        "IMPI (several clusters in one job, each started by its own mpiexec):\n"
        "  --impi-client K      this launch is client K of an IMPI job: MPI_COMM_WORLD\n"
        "                       spans every client's processes in client order\n"
        "  --impi-server H:P    the IMPI server (impi_server prints H:P)\n"
        "  --impi-auth KEY      authenticate with KEY (default: $IMPI_AUTH_KEY, else none)\n"
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

void mx_die_usage(const char *fmt, const char *arg)
{
    fputs("mpiexec: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nTry 'mpiexec --help'.\n", stderr);
    exit(1);
}

char *mx_xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d) {
        mx_msg("out of memory");
        exit(1);
    }
    return d;
}

void *mx_xcalloc(size_t n, size_t sz)
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
    if (nl == 0) mx_die_usage("--param: empty parameter name%s", "");
    char *e = mx_xcalloc(1, 5 + nl + 1 + strlen(value) + 1);
    memcpy(e, "KUMI_", 5);
    for (size_t i = 0; i < nl; i++) {
        char c = name[i];
        if (!(c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            mx_die_usage("--param: invalid parameter name '%s'", name);
        e[5 + i] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    }
    e[5 + nl] = '=';
    strcpy(e + 5 + nl + 1, value);
    mx_opt.params = realloc(mx_opt.params, (size_t)(mx_opt.nparams + 1) * sizeof *mx_opt.params);
    if (!mx_opt.params) exit(1);
    mx_opt.params[mx_opt.nparams++] = e;
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
    if (*i + 1 >= argc) mx_die_usage("option %s needs a value", what ? what : a);
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

const struct mx_abi_desc *mx_abi_by_name(const char *s)
{
    for (int i = 0; i < MX_NABIS; i++)
        if (!strcmp(s, mx_abis[i].name)) return &mx_abis[i];
    return NULL;
}

void mx_parse_args(int argc, char **argv)
{
    mx_opt.np = 1;
    mx_opt.host_timeout = 5.0;
    mx_opt.impi_client = -1;
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
            if (parse_int(s, 1, 1000000, &v)) mx_die_usage("invalid number of processes '%s'", s);
            mx_opt.np = (int)v;
            mx_opt.np_given = 1;
        } else if (is_opt(a, "-host") || is_opt(a, "--host") || is_opt(a, "-H") || is_opt(a, "-hosts") ||
                   is_opt(a, "--hosts")) {
            char err[600];
            if (mx_hosts_add_spec(&mx_opt.hosts, optval(argc, argv, &i), err, sizeof err) < 0)
                mx_die_usage("%s", err);
        } else if (is_opt(a, "--hostfile") || is_opt(a, "-hostfile") || is_opt(a, "-f") ||
                   is_opt(a, "--machinefile") || is_opt(a, "-machinefile")) {
            char err[1200];
            if (mx_hosts_read_file(&mx_opt.hosts, optval(argc, argv, &i), err, sizeof err) < 0) {
                fprintf(stderr, "mpiexec: %s\n", err);
                exit(1);
            }
        } else if (is_opt(a, "-ppn") || is_opt(a, "--ppn") || is_opt(a, "-npernode") || is_opt(a, "--npernode")) {
            const char *s = optval(argc, argv, &i);
            if (parse_int(s, 1, 1000000, &v)) mx_die_usage("-ppn: invalid number of processes per host '%s'", s);
            mx_opt.ppn = (int)v;
        } else if (is_opt(a, "--map-by") || is_opt(a, "-map-by")) {
            const char *s = optval(argc, argv, &i);
            if (strcmp(s, "slot") == 0 || strcmp(s, "core") == 0) mx_opt.bynode = 0;
            else if (strcmp(s, "node") == 0) mx_opt.bynode = 1;
            else mx_die_usage("--map-by: expected slot or node, not '%s'", s);
        } else if (is_opt(a, "-wdir") || is_opt(a, "--wdir") || is_opt(a, "-wd") || is_opt(a, "--wd")) {
            mx_opt.wdir = optval(argc, argv, &i);
            if (!mx_opt.wdir[0]) mx_die_usage("-wdir: empty folder name%s", "");
        } else if (is_opt(a, "--launcher") || is_opt(a, "-launcher")) {
            const char *s = optval(argc, argv, &i);
            if (strcmp(s, "ssh") && strcmp(s, "rsh") && strcmp(s, "fork") && strcmp(s, "slurm"))
                mx_die_usage("--launcher: expected ssh, rsh, fork or slurm, not '%s'", s);
            mx_opt.launcher = s;
        } else if (is_opt(a, "--launch-agent") || is_opt(a, "-launch-agent") || is_opt(a, "-launcher-exec") ||
                   is_opt(a, "--launcher-exec")) {
            mx_opt.agent = optval(argc, argv, &i);
            if (!mx_opt.agent[0]) mx_die_usage("--launch-agent: empty command%s", "");
        } else if (is_opt(a, "--fanout")) {
            const char *s = optval(argc, argv, &i);
            if (parse_int(s, 1, 100000, &v)) mx_die_usage("--fanout: invalid number of hosts '%s'", s);
            mx_opt.fanout = (int)v;
        } else if (is_opt(a, "--host-timeout")) {
            const char *s = optval(argc, argv, &i);
            char *end;
            double t = strtod(s, &end);
            if (end == s || *end || !(t > 0) || t > 1e6) mx_die_usage("--host-timeout: invalid number of seconds '%s'", s);
            mx_opt.host_timeout = t;
        } else if (is_opt(a, "--impi-client") || is_opt(a, "-client")) {
            const char *s = optval(argc, argv, &i);
            if (parse_int(s, 0, KUMI_IMPI_MAX_CLIENTS - 1, &v))
                mx_die_usage("--impi-client: expected a client rank from 0 to 31, not '%s'", s);
            mx_opt.impi_client = (int)v;
        } else if (is_opt(a, "--impi-server")) {
            mx_opt.impi_server = optval(argc, argv, &i);
            if (!strchr(mx_opt.impi_server, ':')) mx_die_usage("--impi-server: expected HOST:PORT, not '%s'", mx_opt.impi_server);
        } else if (is_opt(a, "--impi-auth")) {
            mx_opt.impi_auth = optval(argc, argv, &i);
        } else if (is_opt(a, "-x")) {
            const char *s = optval(argc, argv, &i);
            if (!s[0] || s[0] == '=') mx_die_usage("-x: invalid variable '%s'", s);
            mx_opt.xvars = realloc(mx_opt.xvars, (size_t)(mx_opt.nx + 1) * sizeof *mx_opt.xvars);
            if (!mx_opt.xvars) exit(1);
            mx_opt.xvars[mx_opt.nx++] = mx_xstrdup(s);
        } else if (is_opt(a, "--param") || is_opt(a, "--mca")) {
            /* --param NAME=VALUE, or --param NAME VALUE (two arguments, as
             * Open MPI's --mca name value); --param=NAME=VALUE too */
            const char *o = a[2] == 'p' ? "--param" : "--mca";
            const char *s = strchr(a, '=') ? strchr(a, '=') + 1 : NULL;
            if (!s) {
                if (i + 1 >= argc) mx_die_usage("option %s needs NAME=VALUE or NAME VALUE", o);
                s = argv[++i];
            }
            if (s[0] == '-') {
                fprintf(stderr, "mpiexec: option %s needs a parameter name, not the option '%s'\nTry 'mpiexec --help'.\n",
                        o, s);
                exit(1);
            }
            const char *eq = strchr(s, '=');
            if (eq) {
                char *name = mx_xstrdup(s);
                name[eq - s] = 0;
                add_param(name, eq + 1);
                free(name);
            } else {
                char what[300];
                snprintf(what, sizeof what, "%s %s", o, s);
                if (i + 1 >= argc) mx_die_usage("option %s needs a value (NAME=VALUE or NAME VALUE)", what);
                add_param(s, next_value(argc, argv, &i, a, what));
            }
        } else if (is_opt(a, "--memory-alloc-kinds")) {
            add_param("base_memory_alloc_kinds", optval(argc, argv, &i));
        } else if (is_opt(a, "--timeout")) {
            const char *s = optval(argc, argv, &i);
            char *end;
            double t = strtod(s, &end);
            if (end == s || *end || !(t > 0) || t > 1e9) mx_die_usage("--timeout: invalid number of seconds '%s'", s);
            mx_opt.timeout = t;
        } else if (strcmp(a, "--tag-output") == 0) {
            mx_opt.tag_output = 1;
        } else if (is_opt(a, "--stdin")) {
            const char *s = optval(argc, argv, &i);
            if (strcmp(s, "none") == 0) mx_opt.stdin_none = 1;
            else if (strcmp(s, "0") == 0 || strcmp(s, "rank0") == 0) mx_opt.stdin_none = 0;
            else mx_die_usage("--stdin: expected 'none' or '0', not '%s'", s);
        } else if (is_opt(a, "--bind-to") || is_opt(a, "-bind-to")) {
            const char *s = optval(argc, argv, &i);
            size_t l = strcspn(s, ":");
            if (s[l] && strcmp(s + l, ":overload-allowed") == 0) mx_opt.overload = 1;
            else if (s[l]) mx_die_usage("--bind-to: unknown qualifier '%s' (only :overload-allowed)", s + l);
            if (l == 4 && strncmp(s, "none", 4) == 0) mx_opt.bind = MX_BIND_NONE;
            else if (l == 4 && strncmp(s, "core", 4) == 0) mx_opt.bind = MX_BIND_CORE;
            else if ((l == 7 && strncmp(s, "package", 7) == 0) || (l == 6 && strncmp(s, "socket", 6) == 0))
                mx_opt.bind = MX_BIND_PACKAGE;
            else if ((l == 8 && strncmp(s, "hwthread", 8) == 0) || (l == 3 && strncmp(s, "cpu", 3) == 0))
                mx_opt.bind = MX_BIND_HWTHREAD;
            else mx_die_usage("--bind-to: expected core, package, hwthread or none, not '%s'", s);
        } else if (strcmp(a, "--oversubscribe") == 0 || strcmp(a, "-oversubscribe") == 0) {
            mx_opt.overload = 1;
        } else if (strcmp(a, "--ckpt") == 0) {
            mx_opt.ckpt = 1;
        } else if (is_opt(a, "--checkpoint-interval")) {
            const char *s = optval(argc, argv, &i);
            char *end;
            double t = strtod(s, &end);
            if (end == s || *end || !(t > 0) || t > 1e9)
                mx_die_usage("--checkpoint-interval: invalid number of seconds '%s'", s);
            mx_opt.ckpt_interval = t;
            mx_opt.ckpt = 1;
        } else if (is_opt(a, "--restart")) {
            mx_opt.restart = optval(argc, argv, &i);
            mx_opt.ckpt = 1;
            if (!mx_opt.restart[0]) mx_die_usage("--restart: empty folder name%s", "");
        } else if (strcmp(a, "--checkpoint-and-stop") == 0) {
            mx_opt.ckpt = 1;
            mx_opt.ckpt_stop = 1;
        } else if (is_opt(a, "--ckpt-dir")) {
            mx_opt.ckpt = 1;
            mx_opt.ckpt_dir = optval(argc, argv, &i);
            if (!mx_opt.ckpt_dir[0]) mx_die_usage("--ckpt-dir: empty folder name%s", "");
        } else if (strcmp(a, "--report-bindings") == 0 || strcmp(a, "-report-bindings") == 0) {
            mx_opt.report_bindings = 1;
        } else if (is_opt(a, "--abi") || is_opt(a, "-abi")) {
            mx_opt.abi = optval(argc, argv, &i);
            if (strcmp(mx_opt.abi, "auto") && !mx_abi_by_name(mx_opt.abi) && !mx_abi_is_mix(mx_opt.abi))
                mx_die_usage("--abi: expected ompi, mpich, ompi+mpich, standard or auto, not '%s'", mx_opt.abi);
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            printf("mpiexec (Kumi) %s\n", KUMI_VERSION_STRING);
            exit(0);
        } else {
            mx_die_usage("unknown option '%s'", a);
        }
    }
    if (mx_opt.restart && i < argc) mx_die_usage("--restart: no program to give (the checkpoint's images are the "
                                                  "program), not '%s'", argv[i]);
    if (i >= argc && !mx_opt.restart) mx_die_usage("no program to run%s", "");
    if ((mx_opt.impi_client >= 0) != (mx_opt.impi_server != NULL))
        mx_die_usage("%s", mx_opt.impi_server ? "--impi-server needs --impi-client K" : "--impi-client needs --impi-server HOST:PORT");
    mx_opt.argv = &argv[i];
    if (mx_opt.ckpt) add_param("ckpt_enable", "1");
}
