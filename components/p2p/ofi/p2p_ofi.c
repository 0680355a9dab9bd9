/* p2p/ofi: the component: parameters, loading libfabric (dlopen), choosing
 * the provider, set-up of the endpoint and the address exchange, progress
 * (the completion queue), pollfds, tear-down, and the state the files
 * share.  The design is described in p2p_ofi.h. */
#include "p2p_ofi.h"

/* ---- libfabric entry points that are real symbols (the rest are inline) */
void *ofi_lib;
int (*p_fi_getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                    struct fi_info **);
void (*p_fi_freeinfo)(struct fi_info *);
struct fi_info *(*p_fi_dupinfo)(const struct fi_info *);
int (*p_fi_fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
const char *(*p_fi_strerror)(int);

/* ---- parameters */
const char *ofi_prov_param;
static const char *ofi_if_include, *ofi_if_exclude;
size_t ofi_eager;
long long ofi_nrxbufs, ofi_cache_max;
size_t ofi_read_chunk;
const char *ofi_status;
const char *ofi_wait_param;
int ofi_rget_param;
long long ofi_drop_fin;
char ofi_status_buf[256];

/* ---- state */
struct fi_info *ofi_info;          /* the chosen provider */
struct fid_fabric *ofi_fabric;
struct fid_domain *ofi_domain;
struct fid_av *ofi_av;
struct fid_cq *ofi_cq;
struct fid_ep *ofi_ep;
int ofi_waitfd = -1;
int ofi_me, ofi_n, ofi_virt_addr, ofi_prov_key, ofi_mr_endpoint;
size_t ofi_inject, ofi_bufsz;
uint64_t ofi_next_key = 1;
struct ofi_peer *ofi_peers;
struct ofi_rxbuf *ofi_rxbufs;
int ofi_nposted;                   /* receive buffers posted */
struct ofi_rxbuf **ofi_repost;     /* refused by the provider, to post again */
int ofi_nrepost;
struct ofi_tx *ofi_txfree;
struct ofi_tx *ofi_finwait;        /* RMA sends waiting for FIN */
struct ofi_read *ofi_rdq;          /* reads that have more to issue */
struct ofi_mr *ofi_lru_head, *ofi_lru_tail;
int ofi_ncached;
int ofi_nqueued;                   /* ops not completed yet */
int ofi_have_peers_queued;
int ofi_can_write;                 /* the provider does remote writes (window access) */
struct ofi_rchunk *ofi_rcfree;
struct kumi_p2p_rma *ofi_rmaq, *ofi_rmaq_tail;   /* RMA with pieces the provider refused */
struct kumi_p2p_rma *ofi_rmafin;   /* RMA over whose done() has not run yet */
int ofi_nrma;                      /* RMA operations not done */
int ofi_nwinmr;                    /* window memory registered for remote access */
int ofi_bound;                     /* mpiexec bound this rank to a core of its own */
char ofi_provname[64];
int ofi_released;                  /* between ckpt_release and the next wireup */
int ofi_ckpt_able;                 /* the provider can be checkpointed (p2p_ofi_ckpt.c) */

const char *ofi_err(int rc)
{
    return p_fi_strerror ? p_fi_strerror(rc < 0 ? -rc : rc) : "libfabric error";
}

static void p2p_ofi_register(void)
{
    kumi_param_register_string("p2p", "ofi", "provider", OFI_DEFAULT_PROVIDERS,
                               "libfabric providers to try, in order, comma-separated (e.g. "
                               "\"tcp;ofi_rxm\"); the first with RDM endpoints, RMA read and "
                               "send-after-send ordering wins.  shm is skipped in a job that "
                               "spans hosts; sockets only when named",
                               KUMI_LEVEL_USER, &ofi_prov_param);
    kumi_param_register_string("p2p", "ofi", "if_include", "",
                               "Interfaces an IP provider (tcp;ofi_rxm, udp;ofi_rxd) may use: names "
                               "(eth*), subnets (10.1.0.0/16, fd00::/64) or addresses, comma-separated; "
                               "empty = the provider's first (a loopback one only for a job on one host)",
                               KUMI_LEVEL_USER, &ofi_if_include);
    kumi_param_register_string("p2p", "ofi", "if_exclude", "",
                               "Interfaces an IP provider must not use (names, subnets, addresses)",
                               KUMI_LEVEL_USER, &ofi_if_exclude);
    kumi_param_register_size("p2p", "ofi", "eager_limit", 64 * 1024,
                             "Largest message sent eagerly over libfabric; larger ones are read "
                             "by the receiver with fi_read (rendezvous)",
                             KUMI_LEVEL_TUNER, &ofi_eager);
    kumi_param_register_int("p2p", "ofi", "rx_bufs", 64,
                            "Receive buffers kept posted (each holds one eager message)",
                            KUMI_LEVEL_TUNER, &ofi_nrxbufs);
    kumi_param_register_int("p2p", "ofi", "mr_cache", -1,
                            "Memory registrations of send buffers kept for reuse (0: register and "
                            "release for every rendezvous; -1: 32 with providers whose RMA is done in "
                            "software (shm, tcp, net, udp), which pin nothing, else 0: a registration "
                            "kept past free() could let a peer read pages the buffer no longer owns)",
                            KUMI_LEVEL_TUNER, &ofi_cache_max);
    kumi_param_register_string("p2p", "ofi", "wait", "auto",
                               "How a blocked rank waits for libfabric: fd (sleeps on the completion "
                               "queue's wait fd, which costs a system call per completion), none "
                               "(spins, then naps a millisecond at a time), auto (none when mpiexec "
                               "bound the rank to a core of its own, else fd)",
                               KUMI_LEVEL_TUNER, &ofi_wait_param);
    if (!ofi_wait_param || (strcmp(ofi_wait_param, "auto") && strcmp(ofi_wait_param, "fd") &&
                            strcmp(ofi_wait_param, "none"))) {
        kumi_warn("p2p/ofi: p2p_ofi_wait must be auto, fd or none (not '%s'); using auto",
                  ofi_wait_param ? ofi_wait_param : "");
        ofi_wait_param = "auto";
    }
    kumi_param_register_bool("p2p", "ofi", "rget", 1,
                             "Rendezvous pulled by the receiver on the RTS (one message and a read); "
                             "false: RTS, CTS, then the DATA message is read (one round trip more)",
                             KUMI_LEVEL_TUNER, &ofi_rget_param);
    kumi_param_register_size("p2p", "ofi", "read_chunk", 4u << 20,
                             "Largest single fi_read of a rendezvous payload (larger payloads are "
                             "read in pieces, up to 8 in flight)",
                             KUMI_LEVEL_TUNER, &ofi_read_chunk);
    kumi_param_register_int("p2p", "ofi", "drop_fin", 0,
                            "Tests: the FIN of the first N rendezvous this rank reads is not sent, as if "
                            "lost at a checkpoint's cut; their sends then finish only when a checkpoint's "
                            "ASK brings the FIN (tests/scripts/ckpt_ofi_ask.sh)",
                            KUMI_LEVEL_DEV, &ofi_drop_fin);
}

static int ofi_load(char *why, size_t whylen)
{
    if (ofi_lib) return KUMI_OK;
    void *h = dlopen(OFI_LIBNAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, whylen, "cannot load %s (%s)", OFI_LIBNAME, dlerror());
        return KUMI_UNAVAILABLE;
    }
    uint32_t (*ver)(void) = (uint32_t (*)(void))dlsym(h, "fi_version");
    p_fi_getinfo = (int (*)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                            struct fi_info **))dlsym(h, "fi_getinfo");
    p_fi_freeinfo = (void (*)(struct fi_info *))dlsym(h, "fi_freeinfo");
    p_fi_dupinfo = (struct fi_info * (*)(const struct fi_info *))dlsym(h, "fi_dupinfo");
    p_fi_fabric = (int (*)(struct fi_fabric_attr *, struct fid_fabric **, void *))dlsym(h, "fi_fabric");
    p_fi_strerror = (const char *(*)(int))dlsym(h, "fi_strerror");
    if (!ver || !p_fi_getinfo || !p_fi_freeinfo || !p_fi_dupinfo || !p_fi_fabric || !p_fi_strerror) {
        snprintf(why, whylen, "%s lacks fi_getinfo/fi_fabric/...: not libfabric 1.x", OFI_LIBNAME);
        dlclose(h);
        return KUMI_UNAVAILABLE;
    }
    if (ver() < OFI_API) {
        snprintf(why, whylen, "libfabric %u.%u is older than 1.10", FI_MAJOR(ver()), FI_MINOR(ver()));
        dlclose(h);
        return KUMI_UNAVAILABLE;
    }
    ofi_lib = h;
    return KUMI_OK;
}

static struct fi_info *ofi_hints(const char *prov, int write)
{
    struct fi_info *h = p_fi_dupinfo(NULL);
    if (!h) return NULL;
    h->caps = FI_MSG | FI_RMA | FI_READ | FI_REMOTE_READ | (write ? FI_WRITE | FI_REMOTE_WRITE : 0);
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
    h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    h->domain_attr->av_type = FI_AV_TABLE;
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
    h->fabric_attr->prov_name = strdup(prov);
    return h;
}

/* Number of hosts the job spans, as mpiexec says (a singleton: 1). */
static int ofi_job_hosts(void)
{
    const char *s = getenv(KUMI_ENV_NHOSTS);
    int n = s ? atoi(s) : 1;
    return n > 0 ? n : 1;
}

/* The first of the provider's answers (one per interface for IP providers)
 * whose source address p2p_ofi_if_include / if_exclude allow; in a job that
 * spans hosts never a loopback one (it reaches no other host).  Answers
 * without an IP source address (shm) are taken as they are; IPv6 link-local
 * ones only on one host.  NULL: none
 * (*why says why), or a bad list. */
static struct fi_info *ofi_pick(struct fi_info *info, int multi, char *why, size_t whylen)
{
    char err[256];
    for (struct fi_info *fi = info; fi; fi = fi->next) {
        const struct sockaddr *sa = fi->src_addr;
        struct kumi_netif f;
        if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
            fi->src_addrlen < kumi_netif_salen(sa))
            return fi;
        memset(&f, 0, sizeof f);
        snprintf(f.name, sizeof f.name, "%s", fi->domain_attr && fi->domain_attr->name ? fi->domain_attr->name : "");
        memcpy(&f.addr, sa, kumi_netif_salen(sa));
        f.family = sa->sa_family;
        f.prefix = sa->sa_family == AF_INET ? 32 : 128;
        f.up = 1;
        f.loopback = kumi_netif_is_loopback(sa) || !strcmp(f.name, "lo");
        if (multi && f.loopback) continue;
        /* an IPv6 link-local address needs the interface index, which means
         * nothing on another host */
        if (multi && sa->sa_family == AF_INET6 &&
            IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)sa)->sin6_addr))
            continue;
        int in = !ofi_if_include || !*ofi_if_include ? 1 : kumi_netif_match(&f, ofi_if_include, err, sizeof err);
        int ex = !ofi_if_exclude || !*ofi_if_exclude ? 0 : kumi_netif_match(&f, ofi_if_exclude, err, sizeof err);
        if (in < 0 || ex < 0) {
            snprintf(why, whylen, "p2p_ofi_if_%s: %s", in < 0 ? "include" : "exclude", err);
            return NULL;
        }
        if (in && !ex) return fi;
    }
    snprintf(why, whylen, "no interface left (p2p_ofi_if_include / if_exclude%s)",
             multi ? "; loopback ones reach no other host" : "");
    return NULL;
}

/* Try the providers of the list in order; keep the first that works. */
static int ofi_choose(const char *provs, char *why, size_t whylen)
{
    char list[512], tried[400] = "";
    int multi = ofi_job_hosts() > 1;
    snprintf(list, sizeof list, "%s", provs);
    /* ofi_rxm sends messages up to its buffer size (16 KiB by default) at
     * once and larger ones by segmentation or its own rendezvous; ours are
     * eager up to the eager limit plus the 64-byte preamble and header, so
     * (unless the user set it) rxm's buffers get that size, up to 128 KiB.  Read when
     * providers initialize, at the first fi_getinfo(). */
    if (!getenv("FI_OFI_RXM_BUFFER_SIZE")) {
        char v[32];
        size_t b = ofi_eager + sizeof(struct ofi_pre) + sizeof(struct kumi_hdr);
        snprintf(v, sizeof v, "%zu", b < OFI_RXM_BUF_MAX ? b : OFI_RXM_BUF_MAX);
        setenv("FI_OFI_RXM_BUFFER_SIZE", v, 0);
    }
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        while (*p == ' ') p++;
        if (!*p) continue;
        size_t l = strlen(tried);
        if (multi && !strcmp(p, "shm")) {
            snprintf(tried + l, sizeof tried - l, "%s%s: reaches this host only", l ? "; " : "", p);
            continue;
        }
        struct fi_info *h = ofi_hints(p, 1), *info = NULL;
        if (!h) break;
        int rc = p_fi_getinfo(OFI_API, NULL, NULL, 0, h, &info);
        p_fi_freeinfo(h);
        ofi_can_write = rc == 0 && info;
        if (rc == -FI_ENODATA) {             /* no remote writes: messages only, windows use them */
            if (!(h = ofi_hints(p, 0))) break;
            rc = p_fi_getinfo(OFI_API, NULL, NULL, 0, h, &info);
            p_fi_freeinfo(h);
        }
        if (rc == 0 && info) {
            char pwhy[300];
            struct fi_info *pick = ofi_pick(info, multi, pwhy, sizeof pwhy);
            if (!pick) {
                p_fi_freeinfo(info);
                snprintf(tried + l, sizeof tried - l, "%s%s: %s", l ? "; " : "", p, pwhy);
                continue;
            }
            ofi_info = p_fi_dupinfo(pick);       /* the first allowed (best interface) */
            p_fi_freeinfo(info);
            if (!ofi_info) break;
            snprintf(ofi_provname, sizeof ofi_provname, "%s", ofi_info->fabric_attr->prov_name);
            snprintf(ofi_status_buf, sizeof ofi_status_buf, "%s (fabric %s, domain %s%s)", ofi_provname,
                     ofi_info->fabric_attr->name ? ofi_info->fabric_attr->name : "?",
                     ofi_info->domain_attr->name ? ofi_info->domain_attr->name : "?",
                     ofi_can_write ? "" : "; no remote writes: windows use messages");
            return KUMI_OK;
        }
        snprintf(tried + l, sizeof tried - l, "%s%s: %s", l ? "; " : "", p,
                 rc == -FI_ENODATA ? "no RDM endpoint with RMA read and ordering" : ofi_err(rc));
    }
    snprintf(why, whylen, "no usable libfabric provider (%s)", tried[0] ? tried : "empty p2p_ofi_provider");
    snprintf(ofi_status_buf, sizeof ofi_status_buf, "none: %s", tried[0] ? tried : "empty list");
    return KUMI_UNAVAILABLE;
}

static int p2p_ofi_open(char *why, size_t whylen)
{
    if (!kumi_registry_listing() && !kumi_component_named("p2p", "ofi") && ofi_job_hosts() <= 1) {
        snprintf(why, whylen, "every rank is on this host (self and shmem serve them; name ofi in "
                 "MPI_COMPONENTS to use it anyway)");
        return KUMI_UNAVAILABLE;
    }
    int rc = ofi_load(why, whylen);
    if (rc == KUMI_OK)
        rc = ofi_choose(ofi_prov_param && *ofi_prov_param ? ofi_prov_param : OFI_DEFAULT_PROVIDERS, why, whylen);
    else snprintf(ofi_status_buf, sizeof ofi_status_buf, "none: %s", why);
    kumi_param_register_string("p2p", "ofi", "provider_status", ofi_status_buf,
                               "The provider this process chose (read-only)", KUMI_LEVEL_USER, &ofi_status);
    if (rc == KUMI_OK) snprintf(why, whylen, "provider %s", ofi_status_buf);
    /* shm (libfabric 1.17) does not come back after checkpoint-and-continue:
     * opened again in the same process, its endpoints carry nothing more
     * (the job hangs or crashes at its next rendezvous); a restart works,
     * but a checkpoint must serve both.  ckpt_quiet then says -1: refused */
    if (rc == KUMI_OK)
        ofi_ckpt_able = !(ofi_info->domain_attr->mr_mode & FI_MR_PROV_KEY) && strcmp(ofi_provname, "shm") != 0;
    return rc;
}

static void p2p_ofi_close(void)
{
    if (ofi_info) p_fi_freeinfo(ofi_info);
    ofi_info = NULL;
    /* libfabric stays loaded: providers keep threads and handlers around */
}

static int ofi_fail(const char *what, int rc)
{
    kumi_log(1, "p2p/ofi: %s: %s", what, ofi_err(rc));
    ofi_teardown();
    return MPI_ERR_OTHER;
}

static void ofi_hex(char *out, const unsigned char *in, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[in[i] >> 4];
        out[2 * i + 1] = hx[in[i] & 15];
    }
    out[2 * n] = 0;
}

static size_t ofi_unhex(unsigned char *out, size_t max, const char *in)
{
    size_t n = strlen(in) / 2;
    if (n > max) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(in + 2 * i, "%2x", &v) != 1) return 0;
        out[i] = (unsigned char)v;
    }
    return n;
}

int ofi_post_rx(struct ofi_rxbuf *b)
{
    b->c.kind = OFI_C_RX;
    ssize_t rc = fi_recv(ofi_ep, b->data, ofi_bufsz, NULL, FI_ADDR_UNSPEC, &b->c);
    if (rc == 0) {
        ofi_nposted++;
        return 0;
    }
    if (rc == -FI_EAGAIN) {
        ofi_repost[ofi_nrepost++] = b;
        return 0;
    }
    return (int)rc;
}

static int p2p_ofi_init(void)
{
    int rc;
    char name[OFI_NAME_MAX], hex[2 * OFI_NAME_MAX + 1];
    size_t nl = sizeof name;
    ofi_me = kumi_world_rank();
    ofi_n = kumi_world_size();
    if (ofi_released && ofi_info) {
        /* After a checkpoint the same provider is chosen again: a restart
         * may run on another host, where the interface (the source address
         * in ofi_info) of the host that wrote the image does not exist. */
        char prov[sizeof ofi_provname], why[400];
        struct fi_info *old = ofi_info;
        snprintf(prov, sizeof prov, "%s", ofi_provname);
        ofi_info = NULL;
        if (ofi_choose(prov, why, sizeof why) != KUMI_OK) {
            kumi_log(0, "p2p/ofi: provider %s again after the checkpoint: %s", prov, why);
            ofi_info = old;
            return MPI_ERR_OTHER;
        }
        p_fi_freeinfo(old);
    }
    if (!ofi_info) return MPI_ERR_OTHER;
    ofi_virt_addr = (ofi_info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
    ofi_prov_key = (ofi_info->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
    ofi_mr_endpoint = (ofi_info->domain_attr->mr_mode & FI_MR_ENDPOINT) != 0;
    ofi_inject = ofi_info->tx_attr->inject_size;
    if (ofi_eager < 1024) ofi_eager = 1024;
    if (ofi_eager > ofi_info->ep_attr->max_msg_size - 128) ofi_eager = ofi_info->ep_attr->max_msg_size - 128;
    if (ofi_nrxbufs < 4) ofi_nrxbufs = 4;
    if (ofi_read_chunk < 64 * 1024) ofi_read_chunk = 64 * 1024;
    if (ofi_read_chunk > ofi_info->ep_attr->max_msg_size) ofi_read_chunk = ofi_info->ep_attr->max_msg_size;
    ofi_bufsz = sizeof(struct ofi_pre) + sizeof(struct kumi_hdr) + ofi_eager;
    if (ofi_cache_max < 0) {
        static const char *const soft[] = { "shm", "tcp", "net", "udp", "sockets" };
        ofi_cache_max = 0;
        for (size_t i = 0; i < sizeof soft / sizeof soft[0]; i++)
            if (!strncmp(ofi_provname, soft[i], strlen(soft[i]))) ofi_cache_max = 32;
    }

    rc = p_fi_fabric(ofi_info->fabric_attr, &ofi_fabric, NULL);
    if (rc) return ofi_fail("fi_fabric", rc);
    rc = fi_domain(ofi_fabric, ofi_info, &ofi_domain, NULL);
    if (rc) return ofi_fail("fi_domain", rc);
    /* A CQ with a wait fd signals it (a write to a socketpair) on every
     * completion: a microsecond or more per message.  A rank that has a core
     * of its own (mpiexec bound it) spins, then naps; only one that shares its
     * core sleeps on the fd. */
    ofi_bound = kumi_rpim_bound_alone();
    int want_fd = !strcmp(ofi_wait_param, "fd") || (strcmp(ofi_wait_param, "none") && !ofi_bound);
    struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA, .wait_obj = want_fd ? FI_WAIT_FD : FI_WAIT_NONE,
                             .size = (size_t)ofi_nrxbufs * 4 + 1024 };
    rc = fi_cq_open(ofi_domain, &ca, &ofi_cq, NULL);
    if (rc == -FI_ENOSYS || rc == -FI_EINVAL || rc == -FI_ENODATA) {
        ca.wait_obj = FI_WAIT_NONE;
        rc = fi_cq_open(ofi_domain, &ca, &ofi_cq, NULL);
    } else if (rc == 0 && fi_control(&ofi_cq->fid, FI_GETWAIT, &ofi_waitfd) != 0) {
        ofi_waitfd = -1;
    }
    if (rc) return ofi_fail("fi_cq_open", rc);
    struct fi_av_attr aa = { .type = FI_AV_TABLE, .count = (size_t)ofi_n };
    rc = fi_av_open(ofi_domain, &aa, &ofi_av, NULL);
    if (rc) return ofi_fail("fi_av_open", rc);
    rc = fi_endpoint(ofi_domain, ofi_info, &ofi_ep, NULL);
    if (rc) return ofi_fail("fi_endpoint", rc);
    if (!strcmp(ofi_provname, "shm")) {
        /* name the shared region so that mpiexec's clean-up of
         * /dev/shm/kumi.<jobid>.* also removes it after a kill -9 */
        const char *job = getenv("KUMI_JOBID");
        char nm[96];
        snprintf(nm, sizeof nm, "kumi.%s.%d.ofi", job ? job : "0", ofi_me);
        if (fi_setname(&ofi_ep->fid, nm, strlen(nm) + 1) != 0)
            kumi_log(2, "p2p/ofi: shm provider did not take the name %s", nm);
    }
    rc = fi_ep_bind(ofi_ep, &ofi_cq->fid, FI_TRANSMIT | FI_RECV);
    if (rc) return ofi_fail("fi_ep_bind(cq)", rc);
    rc = fi_ep_bind(ofi_ep, &ofi_av->fid, 0);
    if (rc) return ofi_fail("fi_ep_bind(av)", rc);
    rc = fi_enable(ofi_ep);
    if (rc) return ofi_fail("fi_enable", rc);
    rc = fi_getname(&ofi_ep->fid, name, &nl);
    if (rc || nl > sizeof name) return ofi_fail("fi_getname", rc ? rc : -FI_ETOOSMALL);

    ofi_rxbufs = calloc((size_t)ofi_nrxbufs, sizeof *ofi_rxbufs);
    ofi_repost = calloc((size_t)ofi_nrxbufs, sizeof *ofi_repost);
    ofi_peers = calloc((size_t)ofi_n, sizeof *ofi_peers);
    if (!ofi_rxbufs || !ofi_repost || !ofi_peers) return ofi_fail("out of memory", -FI_ENOMEM);
    for (long long i = 0; i < ofi_nrxbufs; i++) {
        if (posix_memalign((void **)&ofi_rxbufs[i].data, 64, ofi_bufsz)) return ofi_fail("out of memory", -FI_ENOMEM);
        rc = ofi_post_rx(&ofi_rxbufs[i]);
        if (rc) return ofi_fail("fi_recv", rc);
    }
    if (ofi_released && (rc = ofi_ckpt_reinit()) != 0) return ofi_fail("registering memory again", rc);
    ofi_hex(hex, (unsigned char *)name, nl);
    rc = kumi_rpim_put("p2p.ofi.addr", hex);
    if (rc == MPI_SUCCESS) rc = kumi_rpim_put("p2p.ofi.prov", ofi_provname);
    if (rc == MPI_SUCCESS) rc = kumi_rpim_put("p2p.ofi.host", kumi_host_id());
    if (rc != MPI_SUCCESS) {
        ofi_teardown();
        return rc;
    }
    kumi_log(2, "p2p/ofi: %s, eager limit %zu, %lld receive buffers, %s", ofi_status_buf, ofi_eager,
             ofi_nrxbufs, ofi_waitfd >= 0 ? "sleeps on the CQ's wait fd" : "no wait fd (never sleeps)");
    return MPI_SUCCESS;
}

static int p2p_ofi_wireup(void)
{
    char hex[2 * OFI_NAME_MAX + 8], prov[64], host[256];
    unsigned char name[OFI_NAME_MAX];
    const char *myhost = kumi_host_id();
    int shm = !strcmp(ofi_provname, "shm"), nreach = 0;
    for (int r = 0; r < ofi_n; r++) {
        struct ofi_peer *p = &ofi_peers[r];
        p->addr = FI_ADDR_NOTAVAIL;
        if (kumi_rpim_get(r, "p2p.ofi.prov", prov, sizeof prov) != MPI_SUCCESS || strcmp(prov, ofi_provname))
            continue;
        if (kumi_rpim_get(r, "p2p.ofi.addr", hex, sizeof hex) != MPI_SUCCESS) continue;
        if (shm && (kumi_rpim_get(r, "p2p.ofi.host", host, sizeof host) != MPI_SUCCESS || !myhost ||
                    strcmp(host, myhost)))
            continue;
        size_t nl = ofi_unhex(name, sizeof name, hex);
        if (!nl) continue;
        int rc = fi_av_insert(ofi_av, name, 1, &p->addr, 0, NULL);
        if (rc != 1) {
            kumi_log(1, "p2p/ofi: cannot insert the address of rank %d: %s", r, ofi_err(rc < 0 ? rc : -FI_EINVAL));
            p->addr = FI_ADDR_NOTAVAIL;
            continue;
        }
        p->reach = 1;
        nreach++;
    }
    kumi_log(2, "p2p/ofi: %d of %d ranks reachable over %s", nreach, ofi_n, ofi_provname);
    if (ofi_released) ofi_ckpt_rewired();
    return MPI_SUCCESS;
}

int p2p_ofi_reaches(int peer)
{
    return ofi_peers && peer >= 0 && peer < ofi_n && ofi_peers[peer].reach;
}

static size_t p2p_ofi_eager_limit(int peer)
{
    (void)peer;
    return ofi_eager;
}

static int p2p_ofi_progress(void)
{
    struct fi_cq_data_entry ev[OFI_CQ_BATCH];
    int did = 0;
    for (int round = 0; round < 8; round++) {
        ssize_t n = fi_cq_read(ofi_cq, ev, OFI_CQ_BATCH);
        if (n == -FI_EAVAIL) {
            ofi_cq_error();
            did = 1;
            continue;
        }
        if (n <= 0) break;
        did = 1;
        for (ssize_t i = 0; i < n; i++) {
            struct ofi_ctx *c = ev[i].op_context;
            if (!c) continue;
            if (c->kind == OFI_C_RX) {
                ofi_nposted--;
                ofi_got_msg((struct ofi_rxbuf *)c, ev[i].len);
            } else if (c->kind == OFI_C_TX) {
                ofi_tx_event((struct ofi_tx *)c);
            } else if (c->kind == OFI_C_READ) {
                ofi_read_event((struct ofi_read *)c, 0);
            } else if (c->kind == OFI_C_RMA) {
                ofi_rma_event((struct ofi_rchunk *)c, MPI_SUCCESS);
            }
        }
        if (n < OFI_CQ_BATCH) break;
    }
    if (ofi_nrepost) {
        int k = ofi_nrepost;
        ofi_nrepost = 0;
        for (int i = 0; i < k; i++) ofi_repost_rx(ofi_repost[i]);
    }
    if (ofi_have_peers_queued && ofi_flush_queues()) did = 1;
    if (ofi_rdq && ofi_flush_reads()) did = 1;
    if ((ofi_rmaq || ofi_rmafin) && ofi_flush_rma()) did = 1;
    return did;
}

static int p2p_ofi_pollfds(struct pollfd *fds, int max)
{
    if (ofi_have_peers_queued || ofi_rdq || ofi_nrepost || ofi_rmaq || ofi_rmafin) return KUMI_P2P_NOSLEEP;
    if (ofi_waitfd < 0) return ofi_nwinmr > 0 && ofi_bound ? KUMI_P2P_NOSLEEP : KUMI_P2P_NAP;
    if (max < 1) return 0;
    struct fid *f = &ofi_cq->fid;
    if (fi_trywait(ofi_fabric, &f, 1) != FI_SUCCESS) return KUMI_P2P_NOSLEEP;   /* events pending */
    fds[0].fd = ofi_waitfd;
    fds[0].events = POLLIN;
    fds[0].revents = 0;
    return 1;
}

static int p2p_ofi_busy(void)
{
    return ofi_nqueued > 0 || ofi_rdq != NULL || ofi_nrma > 0;
}

/* Close what libfabric holds for this process: every registration (the
 * records stay, mr NULL), the endpoint, the address vector, the completion
 * queue, the domain and the fabric; free the receive buffers, the peers and
 * their queues, the free lists.  What is parked (sends waiting for their
 * FIN, rendezvous not read yet, the records of registrations) stays. */
void ofi_close_fabric(void)
{
    for (struct ofi_mr *m = ofi_regs; m; m = m->anext)
        if (m->mr) {
            fi_close(&m->mr->fid);
            m->mr = NULL;
        }
    if (ofi_ep) fi_close(&ofi_ep->fid);
    ofi_ep = NULL;
    if (ofi_av) fi_close(&ofi_av->fid);
    ofi_av = NULL;
    if (ofi_cq) fi_close(&ofi_cq->fid);
    ofi_cq = NULL;
    ofi_waitfd = -1;
    if (ofi_domain) fi_close(&ofi_domain->fid);
    ofi_domain = NULL;
    if (ofi_fabric) fi_close(&ofi_fabric->fid);
    ofi_fabric = NULL;
    if (ofi_rxbufs)
        for (long long i = 0; i < ofi_nrxbufs; i++) free(ofi_rxbufs[i].data);
    free(ofi_rxbufs);
    ofi_rxbufs = NULL;
    free(ofi_repost);
    ofi_repost = NULL;
    ofi_nrepost = ofi_nposted = 0;
    if (ofi_peers) {
        for (int r = 0; r < ofi_n; r++) {
            struct ofi_tx *t = ofi_peers[r].qhead;
            while (t) {
                struct ofi_tx *nx = t->next;
                free(t);
                t = nx;
            }
        }
    }
    free(ofi_peers);
    ofi_peers = NULL;
    ofi_have_peers_queued = 0;
    while (ofi_txfree) {
        struct ofi_tx *t = ofi_txfree;
        ofi_txfree = t->next;
        free(t);
    }
    while (ofi_rcfree) {
        struct ofi_rchunk *c = ofi_rcfree;
        ofi_rcfree = c->next;
        free(c);
    }
}

void ofi_teardown(void)
{
    ofi_mr_flush();
    ofi_close_fabric();
    for (struct ofi_tx *t = ofi_finwait; t; t = t->fnext) t->mr = NULL;
    /* the send buffers' registrations still in use go; windows' records
     * stay until mem_dereg */
    for (struct ofi_mr *m = ofi_regs, *nx; m; m = nx) {
        nx = m->anext;
        if (!m->win) {
            ofi_mr_unlink(m);
            free(m);
        }
    }
    ofi_rmaq = ofi_rmaq_tail = ofi_rmafin = NULL;
    ofi_nrma = 0;
    ofi_finwait = NULL;
    ofi_nqueued = 0;
    ofi_released = 0;
}

static void p2p_ofi_finalize(void)
{
    ofi_teardown();
}

/* KUMI_VERBOSE's table: the provider, and the peer's address where its
 * endpoint name is an IP socket address (tcp;ofi_rxm, udp;ofi_rxd). */
static int p2p_ofi_describe(int peer, char *buf, size_t len)
{
    char hex[2 * OFI_NAME_MAX + 8], a[KUMI_NETIF_ADDRSTR];
    unsigned char name[OFI_NAME_MAX];
    size_t nl = 0;
    if (kumi_rpim_get(peer, "p2p.ofi.addr", hex, sizeof hex) == MPI_SUCCESS)
        nl = ofi_unhex(name, sizeof name, hex);
    if (nl >= sizeof(struct sockaddr_in)) {
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        memcpy(&ss, name, nl < sizeof ss ? nl : sizeof ss);
        if ((ss.ss_family == AF_INET || ss.ss_family == AF_INET6) &&
            nl >= kumi_netif_salen((struct sockaddr *)&ss)) {
            snprintf(buf, len, "%s %s", ofi_provname, kumi_netif_format((struct sockaddr *)&ss, 1, a, sizeof a));
            return 0;
        }
    }
    snprintf(buf, len, "%s", ofi_provname);
    return 0;
}

static const struct kumi_p2p_ops p2p_ofi_ops = {
    .hdr = KUMI_P2P_OPS_HDR,
    .caps = KUMI_P2P_CAP_RGET | KUMI_P2P_CAP_RMA,
    .init = p2p_ofi_init,
    .wireup = p2p_ofi_wireup,
    .reaches = p2p_ofi_reaches,
    .eager_limit = p2p_ofi_eager_limit,
    .send = p2p_ofi_send,
    .progress = p2p_ofi_progress,
    .pollfds = p2p_ofi_pollfds,
    .busy = p2p_ofi_busy,
    .finalize = p2p_ofi_finalize,
    .rget = p2p_ofi_rget,
    .pull = p2p_ofi_pull,
    .mem_reg = p2p_ofi_mem_reg,
    .mem_dereg = p2p_ofi_mem_dereg,
    .rma = p2p_ofi_rma,
    .describe = p2p_ofi_describe,
    .ckpt_quiet = p2p_ofi_ckpt_quiet,
    .ckpt_release = p2p_ofi_ckpt_release,
};

KUMI_EXPORT const struct kumi_component kumi_p2p_ofi_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "p2p", .name = "ofi",
    .version = { 0, 1, 0 },
    .description = "libfabric RDM endpoints: eager messages, fi_read zero-copy rendezvous, window RMA",
    .priority = 30,
    .register_params = p2p_ofi_register,
    .open = p2p_ofi_open, .close = p2p_ofi_close,
    .ops = &p2p_ofi_ops,
};
