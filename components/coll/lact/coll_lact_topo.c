/* coll/lact: parameters, cluster rules, topology file, and the topology of
 * a communicator.
 *
 * Host of a rank: the key-value exchange's "kumi.host", or (for tests on one
 * machine) coll_lact_ranks_per_host=K: job rank j is on fake host "host<j/K>".
 * Cluster of a host, first rule that matches: coll_lact_clusters
 * ("NAME=PATTERN[,PATTERN...];NAME2=..."), then the `cluster` lines of the
 * topology file (coll_lact_topology); a pattern is a host-name glob (fnmatch)
 * or an IPv4 network a.b.c.d/n matched against the host's addresses (networks
 * are skipped for a name that does not resolve).  Hosts no rule names are in
 * cluster "default".  Without any rule, coll_lact_hosts_per_cluster=M (>0)
 * puts host h (fake host h, or the h-th host in job-rank order) in cluster
 * "cluster<h/M>"; otherwise every host is in "default".
 * In an IMPI job of several clients (mpiexec --impi-client, KUMI_INTERNAL_
 * IMPI_JOB) the clients are the clusters instead ("client<K>", K the IMPI
 * client number; coll_lact_impi_clusters=0 keeps the rules above): a rank of
 * another client, whose host this launch's key-value exchange does not know,
 * is on host "client<K>-host<H>" (H: its IMPI host, IMPI's numbering).  A
 * topology file's `link client0 client1 ...` describes the link between two.
 *
 * Topology file, one item a line, # comments:
 *     cluster NAME PATTERN...
 *     link NAME1 NAME2 LATENCY_US BANDWIDTH_MBPS   (wide-area link between two clusters)
 *     node LATENCY_US BANDWIDTH_MBPS                (within a host)
 *     net  LATENCY_US BANDWIDTH_MBPS                (between the hosts of a cluster)
 * Defaults: node 0.3 us / 10000 MB/s, net 20 us / 1000 MB/s, wide area
 * coll_lact_wan_latency_us / coll_lact_wan_bandwidth (5000 us / 100 MB/s). */
#include "coll_lact.h"
#include <kumi/impi.h>
#include <kumi/param.h>
#include <kumi/rpim.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

long long lact_ranks_per_host, lact_hosts_per_cluster, lact_verbose;
static int lact_impi_clusters = 1;
const char *lact_clusters, *lact_topology;
double lact_wan_latency_us, lact_wan_bandwidth;

void lact_register_params(void)
{
    kumi_param_register_int("coll", "lact", "ranks_per_host", 0,
                            "For tests on one machine: >0 puts job rank j on fake host "
                            "\"host<j/K>\" (K = this value) instead of its real host",
                            KUMI_LEVEL_DEV, &lact_ranks_per_host);
    kumi_param_register_int("coll", "lact", "hosts_per_cluster", 0,
                            "When no cluster rule is given: >0 puts host h (fake host h, or the "
                            "h-th host in job-rank order) in cluster \"cluster<h/M>\" (M = this "
                            "value); 0: all hosts in one cluster", KUMI_LEVEL_DEV,
                            &lact_hosts_per_cluster);
    kumi_param_register_string("coll", "lact", "clusters", "",
                               "Clusters of hosts: \"NAME=PATTERN[,PATTERN...];NAME2=...\", a "
                               "pattern being a host-name glob or an IPv4 network a.b.c.d/n; "
                               "hosts no rule names are in cluster \"default\"",
                               KUMI_LEVEL_USER, &lact_clusters);
    kumi_param_register_string("coll", "lact", "topology", "",
                               "Topology file: lines `cluster NAME PATTERN...`, `link NAME1 NAME2 "
                               "LATENCY_US BANDWIDTH_MBPS`, `node LATENCY_US BANDWIDTH_MBPS`, "
                               "`net LATENCY_US BANDWIDTH_MBPS` (# comments)",
                               KUMI_LEVEL_USER, &lact_topology);
    kumi_param_register_double("coll", "lact", "wan_latency_us", 5000.0,
                               "Latency (microseconds) of a wide-area link between clusters that "
                               "the topology file does not describe", KUMI_LEVEL_TUNER,
                               &lact_wan_latency_us);
    kumi_param_register_double("coll", "lact", "wan_bandwidth", 100.0,
                               "Bandwidth (MB/s) of a wide-area link between clusters that the "
                               "topology file does not describe", KUMI_LEVEL_TUNER,
                               &lact_wan_bandwidth);
    kumi_param_register_bool("coll", "lact", "impi_clusters", 1,
                             "In an IMPI job of several clients (mpiexec --impi-client): 1 makes each "
                             "client a cluster (\"client<K>\"); 0 applies the cluster rules as "
                             "without IMPI", KUMI_LEVEL_USER, &lact_impi_clusters);
    kumi_param_register_int("coll", "lact", "verbose", 0,
                            "1: print the topology once per communicator and the algorithm of "
                            "each call on stderr (prefix \"coll/lact[rank]: \")",
                            KUMI_LEVEL_DEV, &lact_verbose);
}

/* ------------------------------------------------------------ configuration */
struct lact_pat {
    int isnet;
    char *glob;
    uint32_t net, mask;         /* host byte order */
};
struct lact_rule {
    char *name;
    int npat;
    struct lact_pat *pat;
};
struct lact_link {
    char *a, *b;
    double lat, bw;
};

static struct lact_rule *rules;
static int nrules;
static struct lact_link *links;
static int nlinks;
static double cfg_lat[LACT_NLEVELS], cfg_bw[LACT_NLEVELS];

/* Host name -> cluster name, so that each host is matched (and resolved) once. */
struct lact_hc {
    char *host;
    char *cluster;
};
static struct lact_hc *hcache;
static int nhcache, caphcache;
/* Distinct host names in job-rank order (hosts_per_cluster with real hosts). */
static char **worldhosts;
static int nworldhosts = -1;
static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
/* The IMPI job (read once): each world rank's client and IMPI host, when
 * there are several clients and coll_lact_impi_clusters is on; else none. */
static int impi_read, impi_nprocs;
static int *impi_client, *impi_host;

void lact_config_free(void)
{
    free(impi_client);
    free(impi_host);
    impi_client = impi_host = NULL;
    impi_nprocs = impi_read = 0;
    for (int i = 0; i < nrules; i++) {
        for (int k = 0; k < rules[i].npat; k++) free(rules[i].pat[k].glob);
        free(rules[i].pat);
        free(rules[i].name);
    }
    free(rules);
    rules = NULL;
    nrules = 0;
    for (int i = 0; i < nlinks; i++) {
        free(links[i].a);
        free(links[i].b);
    }
    free(links);
    links = NULL;
    nlinks = 0;
    for (int i = 0; i < nhcache; i++) {
        free(hcache[i].host);
        free(hcache[i].cluster);
    }
    free(hcache);
    hcache = NULL;
    nhcache = caphcache = 0;
    for (int i = 0; i < nworldhosts; i++) free(worldhosts[i]);
    free(worldhosts);
    worldhosts = NULL;
    nworldhosts = -1;
}

/* A pattern: a.b.c.d/n is a network, anything else a glob.  0 or -1. */
static int parse_pat(const char *s, struct lact_pat *pt)
{
    memset(pt, 0, sizeof *pt);
    if (strchr(s, '/')) {
        unsigned a, b, c, d, n;
        char end;
        if (sscanf(s, "%u.%u.%u.%u/%u%c", &a, &b, &c, &d, &n, &end) != 5 || a > 255 || b > 255 ||
            c > 255 || d > 255 || n > 32)
            return -1;
        pt->isnet = 1;
        pt->mask = n ? 0xffffffffu << (32 - n) : 0;
        pt->net = ((a << 24) | (b << 16) | (c << 8) | d) & pt->mask;
        return 0;
    }
    pt->glob = strdup(s);
    return pt->glob ? 0 : -1;
}

static int valid_name(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("_-.:+@", *s)) return 0;
    return 1;
}

static struct lact_rule *add_rule(const char *name)
{
    struct lact_rule *n = realloc(rules, sizeof *n * (size_t)(nrules + 1));
    if (!n) return NULL;
    rules = n;
    memset(&rules[nrules], 0, sizeof rules[nrules]);
    rules[nrules].name = strdup(name);
    if (!rules[nrules].name) return NULL;
    return &rules[nrules++];
}

static int add_pat(struct lact_rule *r, const char *s)
{
    struct lact_pat *n = realloc(r->pat, sizeof *n * (size_t)(r->npat + 1));
    if (!n) return -1;
    r->pat = n;
    if (parse_pat(s, &r->pat[r->npat]) < 0) return -1;
    r->npat++;
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

/* coll_lact_clusters: "NAME=PATTERN[,PATTERN...];NAME2=..." */
static int parse_clusters(const char *text, char *why, size_t whylen)
{
    char *copy = strdup(text), *save = NULL;
    if (!copy) {
        snprintf(why, whylen, "coll_lact_clusters: out of memory");
        return -1;
    }
    int rc = 0;
    for (char *item = strtok_r(copy, ";", &save); item && !rc; item = strtok_r(NULL, ";", &save)) {
        item = trim(item);
        if (!*item) continue;
        char *eq = strchr(item, '=');
        if (!eq) {
            snprintf(why, whylen, "coll_lact_clusters: '%s' is not NAME=PATTERN[,PATTERN...]",
                     item);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *name = trim(item), *pats = eq + 1, *psave = NULL;
        if (!valid_name(name)) {
            snprintf(why, whylen, "coll_lact_clusters: bad cluster name '%s'", name);
            rc = -1;
            break;
        }
        struct lact_rule *r = add_rule(name);
        if (!r) {
            snprintf(why, whylen, "coll_lact_clusters: out of memory");
            rc = -1;
            break;
        }
        for (char *pt = strtok_r(pats, ",", &psave); pt; pt = strtok_r(NULL, ",", &psave)) {
            pt = trim(pt);
            if (!*pt) continue;
            if (add_pat(r, pt) < 0) {
                snprintf(why, whylen, "coll_lact_clusters: cluster %s: bad pattern '%s' (a host "
                         "glob or a network a.b.c.d/n)", name, pt);
                rc = -1;
                break;
            }
        }
        if (!rc && r->npat == 0) {
            snprintf(why, whylen, "coll_lact_clusters: cluster %s has no pattern", name);
            rc = -1;
        }
    }
    free(copy);
    return rc;
}

/* A latency (>= 0, finite) or bandwidth (> 0, finite). */
static int parse_double(const char *s, int positive, double *v)
{
    char *end;
    if (!s) return -1;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(x) || x < 0 || (positive && x <= 0)) return -1;
    *v = x;
    return 0;
}

static int known_cluster(const char *name)
{
    if (!strcmp(name, "default")) return 1;
    for (int i = 0; i < nrules; i++)
        if (!strcmp(rules[i].name, name)) return 1;
    /* clusters of coll_lact_hosts_per_cluster */
    if (!strncmp(name, "cluster", 7) && name[7]) {
        for (const char *s = name + 7; *s; s++)
            if (!isdigit((unsigned char)*s)) return 0;
        return 1;
    }
    return 0;
}

#define FERR(...) do { snprintf(why, whylen, __VA_ARGS__); goto out; } while (0)

static int load_file(const char *path, char *why, size_t whylen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, whylen, "coll_lact_topology: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    /* Links are checked against the cluster names once every line is read. */
    int rc = -1, lineno = 0, *linkline = NULL;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) FERR("%s:%d: line too long", path, lineno);
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *save = NULL, *tok[64];
        int n = 0;
        for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
            if (n == 64) FERR("%s:%d: too many words", path, lineno);
            tok[n++] = t;
        }
        if (n == 0) continue;
        if (!strcmp(tok[0], "cluster")) {
            if (n < 3) FERR("%s:%d: expected `cluster NAME PATTERN...`", path, lineno);
            if (!valid_name(tok[1])) FERR("%s:%d: bad cluster name '%s'", path, lineno, tok[1]);
            struct lact_rule *r = add_rule(tok[1]);
            if (!r) FERR("%s:%d: out of memory", path, lineno);
            for (int k = 2; k < n; k++)
                if (add_pat(r, tok[k]) < 0)
                    FERR("%s:%d: bad pattern '%s' (a host glob or a network a.b.c.d/n)", path,
                         lineno, tok[k]);
        } else if (!strcmp(tok[0], "link")) {
            struct lact_link l = { 0 };
            if (n != 5) FERR("%s:%d: expected `link NAME1 NAME2 LATENCY_US BANDWIDTH_MBPS`", path,
                             lineno);
            if (parse_double(tok[3], 0, &l.lat) < 0)
                FERR("%s:%d: bad latency '%s' (microseconds, >= 0)", path, lineno, tok[3]);
            if (parse_double(tok[4], 1, &l.bw) < 0)
                FERR("%s:%d: bad bandwidth '%s' (MB/s, > 0)", path, lineno, tok[4]);
            struct lact_link *nl = realloc(links, sizeof *nl * (size_t)(nlinks + 1));
            int *nll = realloc(linkline, sizeof *nll * (size_t)(nlinks + 1));
            if (nl) links = nl;
            if (nll) linkline = nll;
            if (!nl || !nll) FERR("%s:%d: out of memory", path, lineno);
            l.a = strdup(tok[1]);
            l.b = strdup(tok[2]);
            links[nlinks] = l;
            linkline[nlinks++] = lineno;
            if (!l.a || !l.b) FERR("%s:%d: out of memory", path, lineno);
        } else if (!strcmp(tok[0], "node") || !strcmp(tok[0], "net")) {
            int lv = tok[0][1] == 'o' ? LACT_NODE : LACT_NET;
            if (n != 3)
                FERR("%s:%d: expected `%s LATENCY_US BANDWIDTH_MBPS`", path, lineno, tok[0]);
            if (parse_double(tok[1], 0, &cfg_lat[lv]) < 0)
                FERR("%s:%d: bad latency '%s' (microseconds, >= 0)", path, lineno, tok[1]);
            if (parse_double(tok[2], 1, &cfg_bw[lv]) < 0)
                FERR("%s:%d: bad bandwidth '%s' (MB/s, > 0)", path, lineno, tok[2]);
        } else {
            FERR("%s:%d: unknown keyword '%s' (cluster, link, node, net)", path, lineno, tok[0]);
        }
    }
    for (int i = 0; i < nlinks; i++) {
        const char *bad = !known_cluster(links[i].a) ? links[i].a :
                          !known_cluster(links[i].b) ? links[i].b : NULL;
        if (bad) FERR("%s:%d: link names unknown cluster '%s'", path, linkline[i], bad);
    }
    rc = 0;
out:
    free(linkline);
    fclose(f);
    return rc;
}

int lact_config_load(char *why, size_t whylen)
{
    lact_config_free();
    cfg_lat[LACT_NODE] = 0.3;
    cfg_bw[LACT_NODE] = 10000;
    cfg_lat[LACT_NET] = 20;
    cfg_bw[LACT_NET] = 1000;
    if (lact_ranks_per_host < 0 || lact_ranks_per_host > INT32_MAX) {
        snprintf(why, whylen, "coll_lact_ranks_per_host: %lld is not a number of ranks (0: real "
                 "hosts)", lact_ranks_per_host);
        return KUMI_UNAVAILABLE;
    }
    if (lact_hosts_per_cluster < 0 || lact_hosts_per_cluster > INT32_MAX) {
        snprintf(why, whylen, "coll_lact_hosts_per_cluster: %lld is not a number of hosts (0: "
                 "one cluster)", lact_hosts_per_cluster);
        return KUMI_UNAVAILABLE;
    }
    if (!isfinite(lact_wan_latency_us) || lact_wan_latency_us < 0) {
        snprintf(why, whylen, "coll_lact_wan_latency_us: %g is not a latency (microseconds, >= 0)",
                 lact_wan_latency_us);
        return KUMI_UNAVAILABLE;
    }
    if (!isfinite(lact_wan_bandwidth) || lact_wan_bandwidth <= 0) {
        snprintf(why, whylen, "coll_lact_wan_bandwidth: %g is not a bandwidth (MB/s, > 0)",
                 lact_wan_bandwidth);
        return KUMI_UNAVAILABLE;
    }
    cfg_lat[LACT_WAN] = lact_wan_latency_us;
    cfg_bw[LACT_WAN] = lact_wan_bandwidth;
    if (lact_clusters && *lact_clusters && parse_clusters(lact_clusters, why, whylen) < 0)
        goto bad;
    if (lact_topology && *lact_topology && load_file(lact_topology, why, whylen) < 0) goto bad;
    return KUMI_OK;
bad:
    lact_config_free();
    return KUMI_UNAVAILABLE;
}

/* ------------------------------------------------------------ hosts and clusters */
static int host_in_net(const char *host, const struct lact_rule *r, int *resolved,
                       uint32_t *addrs, int *naddrs)
{
    if (!*resolved) {
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        *resolved = 1;
        *naddrs = 0;
        if (getaddrinfo(host, NULL, &hints, &res) == 0) {
            for (struct addrinfo *a = res; a && *naddrs < 16; a = a->ai_next)
                addrs[(*naddrs)++] = ntohl(((struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr);
            freeaddrinfo(res);
        }
    }
    for (int k = 0; k < r->npat; k++) {
        if (!r->pat[k].isnet) continue;
        for (int i = 0; i < *naddrs; i++)
            if ((addrs[i] & r->pat[k].mask) == r->pat[k].net) return 1;
    }
    return 0;
}

/* Index of host among the distinct hosts in job-rank order (cfg_lock held). */
static int world_host_index(const char *host)
{
    if (nworldhosts < 0) {
        int w = kumi_comm_size(MPI_COMM_WORLD);
        nworldhosts = 0;
        worldhosts = calloc((size_t)(w > 0 ? w : 1), sizeof *worldhosts);
        for (int j = 0; worldhosts && j < w; j++) {
            char buf[KUMI_KVS_VAL_MAX];
            if (kumi_rpim_get(j, "kumi.host", buf, sizeof buf) != MPI_SUCCESS) continue;
            int k = 0;
            while (k < nworldhosts && strcmp(worldhosts[k], buf)) k++;
            if (k == nworldhosts && (worldhosts[k] = strdup(buf))) nworldhosts++;
        }
    }
    for (int k = 0; k < nworldhosts; k++)
        if (!strcmp(worldhosts[k], host)) return k;
    return 0;
}

static void impi_load(void)
{
    const char *path = getenv(KUMI_ENV_IMPI_JOB);
    struct kumi_impi_job job;
    char err[400];
    impi_read = 1;
    if (!lact_impi_clusters || !path || !*path) return;
    if (kumi_impi_job_read(path, &job, NULL, err, sizeof err) != 0) {
        kumi_warn("coll/lact: clusters not taken from the IMPI clients: %s", err);
        return;
    }
    if (job.nclients > 1 && job.nprocs > 0 && (impi_client = malloc(sizeof(int) * (size_t)job.nprocs)) &&
        (impi_host = malloc(sizeof(int) * (size_t)job.nprocs))) {
        for (int p = 0; p < job.nprocs; p++) {
            impi_host[p] = kumi_impi_job_proc_host(&job, p);
            impi_client[p] = kumi_impi_job_host_client(&job, impi_host[p]);
        }
        impi_nprocs = job.nprocs;
    } else {
        free(impi_client);
        impi_client = NULL;
    }
    kumi_impi_job_free(&job);
}

/* The IMPI client of job rank j (-1: no IMPI clusters). */
static int impi_client_of(int j)
{
    pthread_mutex_lock(&cfg_lock);
    if (!impi_read) impi_load();
    int c = j >= 0 && j < impi_nprocs ? impi_client[j] : -1;
    pthread_mutex_unlock(&cfg_lock);
    return c;
}

/* The cluster name of host (fake: its fake host number, or -1); a new string or NULL. */
static char *cluster_of(const char *host, int fake)
{
    pthread_mutex_lock(&cfg_lock);
    char *res = NULL;
    for (int i = 0; i < nhcache && !res; i++)
        if (!strcmp(hcache[i].host, host)) res = strdup(hcache[i].cluster);
    if (res) goto done;
    const char *name = NULL;
    char gen[64];
    int resolved = 0, naddrs = 0;
    uint32_t addrs[16];
    for (int i = 0; i < nrules && !name; i++) {
        for (int k = 0; k < rules[i].npat && !name; k++)
            if (!rules[i].pat[k].isnet && fnmatch(rules[i].pat[k].glob, host, 0) == 0)
                name = rules[i].name;
        if (!name && host_in_net(host, &rules[i], &resolved, addrs, &naddrs)) name = rules[i].name;
    }
    if (!name && nrules == 0 && lact_hosts_per_cluster > 0) {
        int h = fake >= 0 ? fake : world_host_index(host);
        snprintf(gen, sizeof gen, "cluster%lld", h / lact_hosts_per_cluster);
        name = gen;
    }
    if (!name) name = "default";
    res = strdup(name);
    if (res && nhcache == caphcache) {
        int ncap = caphcache ? caphcache * 2 : 16;
        struct lact_hc *n = realloc(hcache, sizeof *n * (size_t)ncap);
        if (n) {
            hcache = n;
            caphcache = ncap;
        }
    }
    if (res && nhcache < caphcache) {
        hcache[nhcache].host = strdup(host);
        hcache[nhcache].cluster = strdup(res);
        if (hcache[nhcache].host && hcache[nhcache].cluster) nhcache++;
        else {
            free(hcache[nhcache].host);
            free(hcache[nhcache].cluster);
        }
    }
done:
    pthread_mutex_unlock(&cfg_lock);
    return res;
}

static void link_of(const char *a, const char *b, double *lat, double *bw)
{
    *lat = cfg_lat[LACT_WAN];
    *bw = cfg_bw[LACT_WAN];
    for (int i = 0; i < nlinks; i++)
        if ((!strcmp(links[i].a, a) && !strcmp(links[i].b, b)) ||
            (!strcmp(links[i].a, b) && !strcmp(links[i].b, a))) {
            *lat = links[i].lat;
            *bw = links[i].bw;
        }
}

/* ------------------------------------------------------------ topology */
void lact_topo_free(struct lact_topo *t)
{
    free(t->host_of);
    free(t->lidx);
    free(t->pos);
    free(t->hsize);
    free(t->hoff);
    free(t->hrank);
    free(t->hcl);
    free(t->hcidx);
    free(t->coff);
    free(t->chost);
    free(t->cnranks);
    free(t->crankoff);
    for (int h = 0; t->hname && h < t->nhosts; h++) free(t->hname[h]);
    for (int c = 0; t->cname && c < t->ncl; c++) free(t->cname[c]);
    free(t->hname);
    free(t->cname);
    memset(t, 0, sizeof *t);
}

static int *ialloc(int n)
{
    return calloc((size_t)(n > 0 ? n : 1), sizeof(int));
}

int lact_topo_build(MPI_Comm comm, struct lact_topo *t)
{
    memset(t, 0, sizeof *t);
    int p = t->p = kumi_comm_size(comm);
    t->me = kumi_comm_rank(comm);
    int *fake = ialloc(p), *hcli = ialloc(p);
    t->host_of = ialloc(p);
    t->lidx = ialloc(p);
    t->pos = ialloc(p);
    t->hname = calloc((size_t)p, sizeof *t->hname);
    if (!fake || !hcli || !t->host_of || !t->lidx || !t->pos || !t->hname) goto fail;

    /* Hosts, numbered by first appearance in comm rank order. */
    for (int r = 0; r < p; r++) {
        char buf[KUMI_KVS_VAL_MAX];
        int jr = kumi_comm_job_rank(comm, r), fk = -1, cl = impi_client_of(jr);
        if (jr < 0) goto fail;
        if (lact_ranks_per_host > 0) {
            fk = (int)(jr / lact_ranks_per_host);
            if (cl >= 0) snprintf(buf, sizeof buf, "client%d-host%d", cl, fk);   /* never across clients */
            else snprintf(buf, sizeof buf, "host%d", fk);
        } else if (kumi_rpim_get(jr, "kumi.host", buf, sizeof buf) != MPI_SUCCESS) {
            if (cl < 0) goto fail;
            snprintf(buf, sizeof buf, "client%d-host%d", cl, impi_host[jr]);   /* another client's */
        }
        int h = 0;
        while (h < t->nhosts && strcmp(t->hname[h], buf)) h++;
        if (h == t->nhosts) {
            if (!(t->hname[h] = strdup(buf))) goto fail;
            fake[h] = fk;
            hcli[h] = cl;
            t->nhosts++;
        }
        t->host_of[r] = h;
    }
    int H = t->nhosts;
    t->hsize = ialloc(H);
    t->hoff = ialloc(H + 1);
    t->hrank = ialloc(p);
    t->hcl = ialloc(H);
    t->hcidx = ialloc(H);
    t->cname = calloc((size_t)H, sizeof *t->cname);
    if (!t->hsize || !t->hoff || !t->hrank || !t->hcl || !t->hcidx || !t->cname) goto fail;
    for (int r = 0; r < p; r++) t->lidx[r] = t->hsize[t->host_of[r]]++;
    for (int h = 0; h < H; h++) {
        t->hoff[h + 1] = t->hoff[h] + t->hsize[h];
        if (t->hsize[h] > t->maxpn) t->maxpn = t->hsize[h];
    }
    for (int r = 0; r < p; r++) t->hrank[t->hoff[t->host_of[r]] + t->lidx[r]] = r;

    /* Clusters, numbered by first appearance in host order. */
    for (int h = 0; h < H; h++) {
        char *cn, gen[32];
        if (hcli[h] >= 0) {            /* the IMPI clients are the clusters */
            snprintf(gen, sizeof gen, "client%d", hcli[h]);
            cn = strdup(gen);
        } else {
            cn = cluster_of(t->hname[h], fake[h]);
        }
        if (!cn) goto fail;
        int c = 0;
        while (c < t->ncl && strcmp(t->cname[c], cn)) c++;
        if (c == t->ncl) t->cname[t->ncl++] = cn;
        else free(cn);
        t->hcl[h] = c;
    }
    int C = t->ncl;
    t->coff = ialloc(C + 1);
    t->chost = ialloc(H);
    t->cnranks = ialloc(C);
    t->crankoff = ialloc(C);
    if (!t->coff || !t->chost || !t->cnranks || !t->crankoff) goto fail;
    int *cnh = ialloc(C);
    if (!cnh) goto fail;
    for (int h = 0; h < H; h++) {
        t->hcidx[h] = cnh[t->hcl[h]]++;
        t->cnranks[t->hcl[h]] += t->hsize[h];
    }
    for (int c = 0; c < C; c++) t->coff[c + 1] = t->coff[c] + cnh[c];
    for (int h = 0; h < H; h++) t->chost[t->coff[t->hcl[h]] + t->hcidx[h]] = h;

    /* The hierarchical order: cluster, host, comm rank. */
    int k = 0, multihost = 0;
    t->contiguous = 1;
    for (int c = 0; c < C; c++) {
        t->crankoff[c] = k;
        if (cnh[c] > 1) multihost = 1;
        for (int i = t->coff[c]; i < t->coff[c + 1]; i++) {
            int h = t->chost[i];
            for (int j = t->hoff[h]; j < t->hoff[h + 1]; j++) {
                int r = t->hrank[j];
                if (r != k) t->contiguous = 0;
                t->pos[r] = k++;
            }
        }
    }
    free(cnh);
    t->nlevels = (t->maxpn > 1) + multihost + (C > 1);

    for (int lv = 0; lv < LACT_NLEVELS; lv++) {
        t->lat[lv] = cfg_lat[lv];
        t->bw[lv] = cfg_bw[lv];
    }
    if (C > 1) {
        t->lat[LACT_WAN] = 0;
        t->bw[LACT_WAN] = INFINITY;
        for (int a = 0; a < C; a++)
            for (int b = a + 1; b < C; b++) {
                double lat, bw;
                link_of(t->cname[a], t->cname[b], &lat, &bw);
                if (lat > t->lat[LACT_WAN]) t->lat[LACT_WAN] = lat;
                if (bw < t->bw[LACT_WAN]) t->bw[LACT_WAN] = bw;
            }
    }
    free(fake);
    free(hcli);
    return KUMI_OK;
fail:
    free(fake);
    free(hcli);
    lact_topo_free(t);
    return KUMI_UNAVAILABLE;
}

void lact_topo_describe(const struct lact_topo *t, char *buf, size_t len)
{
    static const char *lvname[LACT_NLEVELS] = { "node", "net", "wan" };
    int multihost = t->nhosts > t->ncl;
    int has[LACT_NLEVELS] = { t->maxpn > 1, multihost, t->ncl > 1 };
    size_t n = 0;
#define ADD(...) do { if (n < len) { int w_ = snprintf(buf + n, len - n, __VA_ARGS__); \
    if (w_ > 0) n += (size_t)w_; } } while (0)
    ADD("%d ranks, %d level%s (", t->p, t->nlevels, t->nlevels == 1 ? "" : "s");
    const char *sep = "";
    for (int lv = 0; lv < LACT_NLEVELS; lv++)
        if (has[lv]) {
            ADD("%s%s", sep, lvname[lv]);
            sep = " ";
        }
    ADD("), %d host%s, %d cluster%s:", t->nhosts, t->nhosts == 1 ? "" : "s", t->ncl,
        t->ncl == 1 ? "" : "s");
    for (int c = 0; c < t->ncl; c++) {
        ADD(" %s{", t->cname[c]);
        for (int i = t->coff[c]; i < t->coff[c + 1]; i++) {
            int h = t->chost[i];
            ADD("%s%s:", i > t->coff[c] ? " " : "", t->hname[h]);
            for (int j = t->hoff[h]; j < t->hoff[h + 1]; j++)
                ADD("%s%d", j > t->hoff[h] ? "," : "", t->hrank[j]);
        }
        ADD("}");
    }
    ADD("; %s; node %g us %g MB/s, net %g us %g MB/s", t->contiguous ? "contiguous" :
        "not contiguous", t->lat[LACT_NODE], t->bw[LACT_NODE], t->lat[LACT_NET], t->bw[LACT_NET]);
    if (t->ncl > 1) ADD(", wan %g us %g MB/s", t->lat[LACT_WAN], t->bw[LACT_WAN]);
#undef ADD
    if (n >= len && len > 4) strcpy(buf + len - 4, "...");
}
