/* mpiexec inside a Slurm allocation (salloc, sbatch), as MPICH's Hydra
 * does it: the hosts and slots come from the allocation, and the per-host
 * proxies are started by ONE job step,
 *
 *   srun --mpi=none -N H --ntasks=H --ntasks-per-node=1 --nodelist=h1,...
 *        --kill-on-bad-exit=1 --input=all --cpu-bind=none --overlap
 *        kumi_proxy --slurm ADDR:PORT,ADDR:PORT,...
 *
 * srun's stdout is one stream for all tasks, so the proxies do not speak
 * over it: each connects back to mpiexec (a TCP port mpiexec listens on,
 * its addresses on the command line: those rpim_if_include / _exclude
 * allow, IPv4 and IPv6) and the link is that connection.
 * The job secret goes to every proxy through srun's stdin (--input=all:
 * one line, then end of input), never on a command line; a proxy presents
 * it with the name of its node (SLURMD_NODENAME, else SLURM_NODEID as an
 * index into the step's nodes):  "KUMI-PROXY <node> <nodeid> <secret>\n".
 * srun's stderr (the proxies' messages, srun's own) is shown by the first
 * host's link; srun's exit before every proxy called back ends the start
 * with its words.  After the start, a proxy that dies or is killed closes
 * its connection: mpiexec names the host and its ranks (remote.c).
 *
 * srun: KUMI_SRUN overrides the command (words split on blanks). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <kumi/netif.h>
#include <kumi/param.h>
#include "mpiexec.h"
#include "../common/slurm_hosts.h"

#define SL_START_TIMEOUT 60.0      /* seconds for every proxy to call back */

int mx_slurm_inside(void)
{
    const char *j = getenv("SLURM_JOB_ID"), *l = getenv("SLURM_JOB_NODELIST");
    return j && *j && l && *l;
}

/* Hosts and slots of the allocation: SLURM_JOB_NODELIST, with
 * SLURM_TASKS_PER_NODE (else SLURM_JOB_CPUS_PER_NODE, else 1 each). */
int mx_slurm_hosts(struct mx_hostlist *hl)
{
    char err[300];
    char **hosts = NULL;
    int n = 0, *cnt = NULL, nc = 0;
    if (kumi_slurm_hosts_expand(getenv("SLURM_JOB_NODELIST"), &hosts, &n, err, sizeof err) < 0) {
        mx_msg("SLURM_JOB_NODELIST: %s", err);
        return -1;
    }
    const char *tpn = getenv("SLURM_TASKS_PER_NODE");
    const char *what = "SLURM_TASKS_PER_NODE";
    if (!tpn || !*tpn) {
        tpn = getenv("SLURM_JOB_CPUS_PER_NODE");
        what = "SLURM_JOB_CPUS_PER_NODE";
    }
    if (tpn && *tpn && kumi_slurm_counts_expand(tpn, &cnt, &nc, err, sizeof err) < 0) {
        mx_msg("%s: %s", what, err);
        kumi_slurm_hosts_free(hosts, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int slots = i < nc && cnt[i] > 0 ? cnt[i] : 1;
        if (mx_hosts_add(hl, hosts[i], strlen(hosts[i]), slots) < 0) exit(1);
    }
    free(cnt);
    kumi_slurm_hosts_free(hosts, n);
    return 0;
}

/* A parameter of mpiexec's: --param NAME=V (stored as KUMI_NAME=V), else
 * the registry (the environment KUMI_NAME, params.conf); registered by
 * rpim/fork too, so that kumi_info lists it. */
static const char *mx_param(const char *envname, const char *name, const char *help)
{
    size_t el = strlen(envname);
    for (int j = mx_opt.nparams - 1; j >= 0; j--)
        if (strncmp(mx_opt.params[j], envname, el) == 0 && mx_opt.params[j][el] == '=')
            return mx_opt.params[j] + el + 1;
    const char *reg = NULL;
    if (kumi_param_register_string("rpim", NULL, name, "", help, KUMI_LEVEL_USER, &reg) == MPI_SUCCESS && reg)
        return reg;
    return getenv(envname);
}

/* The socket the proxies call back to, and "ADDR:PORT,ADDR:PORT,..." (IPv6
 * as "[ADDR]:PORT"): this machine's addresses that rpim_if_include /
 * rpim_if_exclude allow, loopback only when nothing else is left.  IPv6
 * addresses are offered when a dual-stack socket can be had.  Returns the
 * listening socket, or -1 with a message. */
static int callback_listen(char *out, size_t len)
{
    const char *inc = mx_param("KUMI_RPIM_IF_INCLUDE", "if_include",
                               "mpiexec under Slurm: interfaces, subnets or addresses the proxies may call back "
                               "to (comma-separated, e.g. \"eth0,10.1.0.0/16\"; empty = all)");
    const char *exc = mx_param("KUMI_RPIM_IF_EXCLUDE", "if_exclude",
                               "mpiexec under Slurm: interfaces, subnets or addresses the proxies never call back "
                               "to (same form as rpim_if_include)");
    struct kumi_netif ifs[KUMI_NETIF_MAX];
    char err[256];
    int n = kumi_netif_choose(ifs, KUMI_NETIF_MAX, inc, exc, KUMI_NETIF_V4 | KUMI_NETIF_V6 | KUMI_NETIF_KEEP_LO, err,
                              sizeof err);
    if (n < 0) {
        mx_msg("rpim_if_include / rpim_if_exclude: %s", err);
        return -1;
    }
    int nonlo = 0, v6 = 0;
    for (int i = 0; i < n; i++) {
        nonlo += !ifs[i].loopback;
        v6 |= ifs[i].family == AF_INET6;
    }
    if (n == 0) {
        mx_msg("no address of this host is left for the proxies to call back to (rpim_if_include \"%s\", "
               "rpim_if_exclude \"%s\")", inc ? inc : "", exc ? exc : "");
        return -1;
    }
    int ls = -1, port = 0;
    if (v6) {                              /* one dual-stack socket for both families */
        ls = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int off = 0;
        struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_addr = in6addr_any };
        socklen_t sl = sizeof sa6;
        if (ls >= 0 && (setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) < 0 ||
                        bind(ls, (struct sockaddr *)&sa6, sizeof sa6) < 0 ||
                        getsockname(ls, (struct sockaddr *)&sa6, &sl) < 0)) {
            close(ls);
            ls = -1;
        }
        if (ls >= 0) port = ntohs(sa6.sin6_port);
        else v6 = 0;                       /* no IPv6 here after all: IPv4 only */
    }
    if (ls < 0) {
        ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
        socklen_t sl = sizeof sa;
        if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 ||
            getsockname(ls, (struct sockaddr *)&sa, &sl) < 0) {
            mx_msg("cannot listen for the proxies: %s", strerror(errno));
            if (ls >= 0) close(ls);
            return -1;
        }
        port = ntohs(sa.sin_port);
    }
    if (listen(ls, 64) < 0) {
        mx_msg("cannot listen for the proxies: %s", strerror(errno));
        close(ls);
        return -1;
    }
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if ((nonlo && ifs[i].loopback) || (!v6 && ifs[i].family == AF_INET6)) continue;
        char a[KUMI_NETIF_ADDRSTR];
        if (ifs[i].family == AF_INET6) ifs[i].addr.in6.sin6_port = htons((uint16_t)port);
        else ifs[i].addr.in4.sin_port = htons((uint16_t)port);
        kumi_netif_format(&ifs[i].addr.sa, 1, a, sizeof a);
        if (o + strlen(a) + 2 < len) o += (size_t)snprintf(out + o, len - o, "%s%s", o ? "," : "", a);
    }
    if (!o) {
        mx_msg("no IPv4 address is left for the proxies to call back to (this host has no IPv6 socket)");
        close(ls);
        return -1;
    }
    return ls;
}

static void show_lines(const char *host, char *buf, size_t *blen, char *last, size_t lastlen, int fd)
{
    char b[2048];
    ssize_t n = read(fd, b, sizeof b);
    for (ssize_t i = 0; i < n; i++) {
        if (b[i] == '\n' || *blen == 511) {
            buf[*blen] = 0;
            /* (srun's complaint about --cpu-bind=none where Slurm has no
             * task/affinity: nothing to bind, nothing to say) */
            if (*blen && !strstr(buf, "lacks support for cpu binding")) {
                mx_msg("srun (host %s): %s", host, buf);
                snprintf(last, lastlen, "%s", buf);
            }
            *blen = 0;
            if (b[i] == '\n') continue;
        }
        buf[(*blen)++] = b[i];
    }
}

int mx_slurm_launch(int nh, char *const *names, const char *proxy, const char *secret, int *fds, pid_t *agent,
                    int *errfd, int verbose)
{
    char addrs[2048], *nodelist = NULL;
    int ls = callback_listen(addrs, sizeof addrs);
    if (ls < 0) return -1;
    size_t nl = 1;
    for (int i = 0; i < nh; i++) nl += strlen(names[i]) + 1;
    nodelist = mx_xcalloc(nl, 1);
    for (int i = 0; i < nh; i++) {
        if (i) strcat(nodelist, ",");
        strcat(nodelist, names[i]);
    }
    /* the command */
    const char *srun = getenv("KUMI_SRUN");
    char *words = strdup(srun && *srun ? srun : "srun");
    char *av[64];
    int ac = 0;
    for (char *w = strtok(words, " \t"); w && ac < 40; w = strtok(NULL, " \t")) av[ac++] = w;
    char nn[32], nt[32];
    snprintf(nn, sizeof nn, "--nodes=%d", nh);
    snprintf(nt, sizeof nt, "--ntasks=%d", nh);
    char *nlarg = mx_xcalloc(nl + 16, 1);
    snprintf(nlarg, nl + 16, "--nodelist=%s", nodelist);
    const char *fixed[] = { "--mpi=none", nn, nt, "--ntasks-per-node=1", nlarg, "--kill-on-bad-exit=1",
                            "--input=all", "--cpu-bind=none", "--overlap", "--export=ALL", "--job-name=kumi_proxy",
                            proxy, "--slurm", addrs, NULL };
    for (int i = 0; fixed[i]; i++) av[ac++] = (char *)fixed[i];
    av[ac] = NULL;
    if (verbose) {
        char b[2048] = "";
        for (int i = 0; av[i]; i++) snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s", i ? " " : "", av[i]);
        mx_msg("starting the proxies of %d host%s: %s", nh, nh == 1 ? "" : "s", b);
    }
    int rfd = -1, wfd = -1;
    pid_t pid = mx_agent_start(av, &rfd, &wfd, errfd);
    free(words);
    free(nlarg);
    if (pid < 0) {
        mx_msg("cannot start srun: %s", strerror(errno));
        close(ls);
        free(nodelist);
        return -1;
    }
    *agent = pid;
    /* the secret, once, to every task; then end of input */
    char line[256];
    int ll = snprintf(line, sizeof line, "%s\n", secret);
    if (write(wfd, line, (size_t)ll) != ll) { /* srun gone: its exit says why */ }
    close(wfd);
    close(rfd);                            /* srun's stdout: nothing expected */
    fcntl(*errfd, F_SETFL, O_NONBLOCK);
    for (int i = 0; i < nh; i++) fds[i] = -1;
    int got = 0;
    double deadline = mx_now() + SL_START_TIMEOUT;
    char ebuf[512], last[512] = "";
    size_t elen = 0;
    int rc = -1;
    while (got < nh) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            struct pollfd e = { .fd = *errfd, .events = POLLIN };
            while (poll(&e, 1, 100) > 0 && (e.revents & (POLLIN | POLLHUP))) {
                size_t before = elen;
                show_lines(names[0], ebuf, &elen, last, sizeof last, *errfd);
                if (elen == before && !(e.revents & POLLIN)) break;
                if (e.revents & POLLHUP && elen == before) break;
            }
            char why[64];
            if (WIFEXITED(st)) snprintf(why, sizeof why, "exited with status %d", WEXITSTATUS(st));
            else snprintf(why, sizeof why, "was killed by signal %d", WTERMSIG(st));
            mx_msg("cannot start the proxies with srun on %s: srun %s%s%s (%d of %d called back)", nodelist, why,
                   *last ? ": " : "", last, got, nh);
            *agent = -1;
            goto out;
        }
        double left = deadline - mx_now();
        if (left <= 0) {
            mx_msg("cannot start the proxies with srun on %s: %d of %d called back within %g seconds", nodelist, got, nh,
                   SL_START_TIMEOUT);
            goto out;
        }
        struct pollfd p[2] = { { .fd = ls, .events = POLLIN }, { .fd = *errfd, .events = POLLIN } };
        int np = *errfd >= 0 ? 2 : 1;
        if (poll(p, (nfds_t)np, left > 0.2 ? 200 : (int)(left * 1000) + 1) < 0 && errno != EINTR) goto out;
        if (np == 2 && (p[1].revents & POLLIN)) show_lines(names[0], ebuf, &elen, last, sizeof last, *errfd);
        if (!(p[0].revents & POLLIN)) continue;
        int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) continue;
        /* "KUMI-PROXY node nodeid secret\n", within 5 seconds */
        char h[512];
        size_t hl = 0;
        double hd = mx_now() + 5.0;
        while (hl < sizeof h - 1 && (hl == 0 || h[hl - 1] != '\n') && mx_now() < hd) {
            struct pollfd q = { .fd = c, .events = POLLIN };
            if (poll(&q, 1, 200) <= 0) continue;
            ssize_t r = read(c, h + hl, 1);
            if (r <= 0) break;
            hl++;
        }
        h[hl] = 0;
        char node[256], sec[128];
        int nid = -1;
        if (hl == 0 || h[hl - 1] != '\n' || sscanf(h, "KUMI-PROXY %255s %d %127s", node, &nid, sec) != 3 ||
            strcmp(sec, secret) != 0) {
            close(c);                      /* not one of ours */
            continue;
        }
        int k = -1;
        for (int i = 0; i < nh && k < 0; i++)
            if (fds[i] < 0 && strcmp(names[i], node) == 0) k = i;
        if (k < 0 && nid >= 0 && nid < nh && fds[nid] < 0) k = nid;
        if (k < 0) {
            mx_msg("a proxy started by srun on node %s (node id %d) is not one of %s; ignored", node, nid, nodelist);
            close(c);
            continue;
        }
        fcntl(c, F_SETFL, O_NONBLOCK);
        fds[k] = c;
        got++;
    }
    rc = 0;
out:
    close(ls);
    if (rc < 0) {
        for (int i = 0; i < nh; i++)
            if (fds[i] >= 0) close(fds[i]);
        if (*agent > 0) {
            kill(*agent, SIGKILL);
            waitpid(*agent, NULL, 0);
        }
    }
    free(nodelist);
    return rc;
}
