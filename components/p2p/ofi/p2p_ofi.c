/* p2p/ofi: libfabric RDM endpoints — the modern form of YAMPII's PMv2 layer.
 *
 * Loading.  libfabric is dlopen'ed by open(), not linked: loading it runs the
 * constructors of every provider's support library (psm, verbs, efa, ...),
 * about 0.2 s per process on Debian 12, which a job that never uses ofi must
 * not pay.  In an MPI job open() therefore loads it only when the job spans
 * more than one host, or MPI_COMPONENTS names ofi ("p2p=self,ofi"); kumi_info
 * always probes, to say which provider a job would get.
 *
 * Provider.  p2p_ofi_provider is a comma-separated list tried in order; the
 * first that offers an RDM endpoint with send/receive, RMA read, send-after-
 * send ordering and manual progress wins ("shm,tcp;ofi_rxm,net" by default;
 * shm only when every rank is on this host, since it reaches no other; the
 * "sockets" provider hangs on these machines and is tried only when named).
 * Every rank publishes "p2p.ofi.prov" and its endpoint name "p2p.ofi.addr";
 * a peer that chose another provider is not reached through ofi.
 *
 * Wire.  Every message starts with an 8-byte preamble {type, per-pair
 * sequence number, world source}:
 *   MSG   preamble + kumi_hdr + payload        (eager data and control)
 *   RMA   preamble + kumi_hdr(DATA) + {address, key, cookie}
 *   FIN   preamble + {cookie}                  (the receiver has read it all)
 * Small messages go out with fi_inject (no completion); larger ones with
 * fi_sendmsg straight from the user's buffer (header and payload as two
 * iovecs).  The receiver keeps p2p_ofi_rx_bufs buffers posted, each large
 * enough for the eager limit, and processes messages of each peer in
 * sequence order (SAS ordering makes that the arrival order; anything else
 * is held back until its turn).
 *
 * Rendezvous.  Above the eager limit the request layer sends an RTS marked
 * KUMI_HDR_F_RGET (ops->rget says yes for every peer), which goes as RMA:
 * the sender registers its buffer for remote read (through a small LRU
 * registration cache) and sends the RTS with {address, key, cookie}; when a
 * receive matches, the request layer calls pull() and the receiver
 * fi_read()s the bytes straight into the receive buffer (zero copy; bytes
 * beyond the receive buffer are not read: truncation), then answers FIN, on
 * which the sender's operation completes.  One message and one read, no CTS.
 * A DATA message (the CTS/DATA protocol) goes the same way.
 *
 * Windows.  For MPI one-sided communication the transport offers remote
 * memory access (ops mem_reg / rma): window memory is registered for remote
 * read and write, and an RMA operation is a series of fi_writemsg /
 * fi_readmsg of up to p2p_ofi_read_chunk bytes each, 8 in flight; writes ask
 * for FI_DELIVERY_COMPLETE, so an operation is done only once its bytes are
 * in the target's memory, which is what MPI_Win_flush needs.  A provider
 * that does no remote writes still carries messages, but offers no window
 * access (windows then use active messages).  With the software
 * providers of Debian (tcp;ofi_rxm; shm where CMA is refused) the target's
 * progress engine moves the bytes (manual progress), as it does for active
 * messages; on hardware that writes memory itself it does not.  Nothing at
 * the target signals those bytes, so a blocked rank with registered window
 * memory and no wait fd (see below) keeps polling instead of napping when it
 * is bound to a core of its own: a nap would cost every remote write a
 * millisecond.
 *
 * Progress.  progress() reads the completion queue (which also drives the
 * provider's manual progress) and retries what the provider refused with
 * -FI_EAGAIN.  pollfds() hands out the CQ's wait fd after fi_trywait() says
 * sleeping is safe (p2p_ofi_wait: a rank bound to a core of its own opens the
 * CQ without a wait fd, whose signal costs a system call per completion).
 * A provider without a wait fd (shm), or such a CQ, gives nothing to
 * sleep on: a rank that stays blocked past the spin and yield phases of the
 * progress engine naps a millisecond between polls, so it costs next to no
 * CPU but may answer up to a millisecond late (a bound rank with registered
 * window memory does not nap: see Windows).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <kumi/p2p.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_errno.h>

#define OFI_API       FI_VERSION(1, 10)
#define OFI_LIBNAME   "libfabric.so.1"
#define OFI_DEFAULT_PROVIDERS "shm,tcp;ofi_rxm,net"
#define OFI_NAME_MAX  256                 /* endpoint names we accept */
#define OFI_CQ_BATCH  32
#define OFI_RXM_BUF_MAX (128u * 1024 + 64)  /* larger rxm buffers cost much memory */
#define OFI_READ_WINDOW 8                 /* fi_reads of one transfer in flight */

enum { OFI_T_MSG = 1, OFI_T_RMA, OFI_T_FIN };
enum { OFI_C_TX = 1, OFI_C_RX, OFI_C_READ, OFI_C_RMA };

struct ofi_pre {                          /* 8 bytes before every message: with the */
    uint8_t type;                         /* 56-byte header, a message without payload */
    uint8_t magic;                        /* is 64 bytes, what tcp;ofi_rxm injects */
    uint16_t seq;                         /* per (sender, receiver), wraps */
    uint32_t src;                         /* world rank of the sender */
};
#define OFI_MAGIC 0x4b                    /* "K" */
#define OFI_READ_MAGIC 0x4f464952u        /* a pending pull: "OFIR" */

struct ofi_rmadesc {
    uint64_t addr;                        /* address (or offset) for fi_read */
    uint64_t key;
    uint64_t cookie;                      /* sender's struct ofi_tx */
};

struct ofi_ctx {                          /* first in every operation context */
    struct fi_context2 fc;
    int kind;                             /* OFI_C_* */
};

struct ofi_mr {                           /* a registration, cached or not */
    struct fid_mr *mr;
    char *base;
    size_t len;
    int refs;
    int cached;
    struct ofi_mr *prev, *next;           /* LRU, most recent first */
};

struct ofi_tx {
    struct ofi_ctx c;
    int peer;
    int pending;                          /* events before it is done: send completion, FIN */
    int infin;                            /* on the FIN wait list */
    struct kumi_sendop *op;               /* NULL for FIN */
    struct ofi_mr *mr;
    struct ofi_tx *next;                  /* peer's queue */
    struct ofi_tx *fnext, *fprev;         /* FIN wait list (RMA) */
    size_t wlen;                          /* bytes of wire[] that go out */
    union {
        char wire[sizeof(struct ofi_pre) + sizeof(struct kumi_hdr) + sizeof(struct ofi_rmadesc)];
        struct ofi_pre pre;
    };
};

struct ofi_rxbuf {
    struct ofi_ctx c;
    struct ofi_rxbuf *next;               /* held back (out of order) */
    size_t len;                           /* bytes received */
    char *data;                           /* 64-byte aligned */
};

struct ofi_read {
    struct ofi_ctx c;
    int peer;
    uint32_t magic;
    struct kumi_rx *rx;
    struct ofi_rmadesc d;
    size_t len;                           /* message bytes */
    size_t want;                          /* bytes to read (<= receive buffer) */
    size_t issued;                        /* bytes handed to fi_read */
    int outstanding;                      /* fi_read calls not yet completed */
    int failed;
    int queued;                           /* on ofi_rdq */
    struct ofi_read *next;                /* waiting to issue more */
};

struct ofi_rchunk {                       /* one fi_writemsg / fi_readmsg of an RMA operation */
    struct ofi_ctx c;
    struct kumi_p2p_rma *op;
    struct ofi_rchunk *next;              /* free list */
};
#define OFI_RMA_QUEUED 1                  /* kumi_p2p_rma.tflags: on ofi_rmaq */

struct ofi_peer {
    fi_addr_t addr;
    int reach;
    uint16_t sseq, rseq;
    struct ofi_tx *qhead, *qtail;         /* not yet accepted by the provider */
    struct ofi_rxbuf *held;               /* arrived ahead of rseq, sorted */
    int lost_warned;
};

/* ---- libfabric entry points that are real symbols (the rest are inline) */
static void *ofi_lib;
static int (*p_fi_getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                           struct fi_info **);
static void (*p_fi_freeinfo)(struct fi_info *);
static struct fi_info *(*p_fi_dupinfo)(const struct fi_info *);
static int (*p_fi_fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
static const char *(*p_fi_strerror)(int);

/* ---- parameters */
static const char *ofi_prov_param;
static size_t ofi_eager;
static long long ofi_nrxbufs, ofi_cache_max;
static size_t ofi_read_chunk;
static const char *ofi_status;
static const char *ofi_wait_param;
static int ofi_rget_param;
static char ofi_status_buf[256];

/* ---- state */
static struct fi_info *ofi_info;          /* the chosen provider */
static struct fid_fabric *ofi_fabric;
static struct fid_domain *ofi_domain;
static struct fid_av *ofi_av;
static struct fid_cq *ofi_cq;
static struct fid_ep *ofi_ep;
static int ofi_waitfd = -1;
static int ofi_me, ofi_n, ofi_virt_addr, ofi_prov_key, ofi_mr_endpoint;
static size_t ofi_inject, ofi_bufsz;
static uint64_t ofi_next_key = 1;
static struct ofi_peer *ofi_peers;
static struct ofi_rxbuf *ofi_rxbufs;
static int ofi_nposted;                   /* receive buffers posted */
static struct ofi_rxbuf **ofi_repost;     /* refused by the provider, to post again */
static int ofi_nrepost;
static struct ofi_tx *ofi_txfree;
static struct ofi_tx *ofi_finwait;        /* RMA sends waiting for FIN */
static struct ofi_read *ofi_rdq;          /* reads that have more to issue */
static struct ofi_mr *ofi_lru_head, *ofi_lru_tail;
static int ofi_ncached;
static int ofi_nqueued;                   /* ops not completed yet */
static int ofi_have_peers_queued;
static int ofi_can_write;                 /* the provider does remote writes (window access) */
static struct ofi_rchunk *ofi_rcfree;
static struct kumi_p2p_rma *ofi_rmaq, *ofi_rmaq_tail;   /* RMA with pieces the provider refused */
static struct kumi_p2p_rma *ofi_rmafin;   /* RMA over whose done() has not run yet */
static int ofi_nrma;                      /* RMA operations not done */
static int ofi_nwinmr;                    /* window memory registered for remote access */
static int ofi_bound;                     /* mpiexec bound this rank to a core of its own */
static char ofi_provname[64];

static const char *ofi_err(int rc)
{
    return p_fi_strerror ? p_fi_strerror(rc < 0 ? -rc : rc) : "libfabric error";
}

/* ------------------------------------------------------------------ */
/* parameters, loading, provider choice */

static void p2p_ofi_register(void)
{
    kumi_param_register_string("p2p", "ofi", "provider", OFI_DEFAULT_PROVIDERS,
                               "libfabric providers to try, in order, comma-separated (e.g. "
                               "\"tcp;ofi_rxm\"); the first with RDM endpoints, RMA read and "
                               "send-after-send ordering wins.  shm is skipped in a job that "
                               "spans hosts; sockets only when named",
                               KUMI_LEVEL_USER, &ofi_prov_param);
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

/* Try the providers of the parameter in order; keep the first that works. */
static int ofi_choose(char *why, size_t whylen)
{
    char list[512], tried[400] = "";
    int multi = ofi_job_hosts() > 1;
    snprintf(list, sizeof list, "%s", ofi_prov_param && *ofi_prov_param ? ofi_prov_param : OFI_DEFAULT_PROVIDERS);
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
            ofi_info = p_fi_dupinfo(info);       /* the first match (best interface) */
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
    if (rc == KUMI_OK) rc = ofi_choose(why, whylen);
    else snprintf(ofi_status_buf, sizeof ofi_status_buf, "none: %s", why);
    kumi_param_register_string("p2p", "ofi", "provider_status", ofi_status_buf,
                               "The provider this process chose (read-only)", KUMI_LEVEL_USER, &ofi_status);
    if (rc == KUMI_OK) snprintf(why, whylen, "provider %s", ofi_status_buf);
    return rc;
}

static void p2p_ofi_close(void)
{
    if (ofi_info) p_fi_freeinfo(ofi_info);
    ofi_info = NULL;
    /* libfabric stays loaded: providers keep threads and handlers around */
}

/* ------------------------------------------------------------------ */
/* set-up */

static void ofi_teardown(void);

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

static int ofi_post_rx(struct ofi_rxbuf *b)
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
    ofi_bound = getenv(KUMI_ENV_BIND_CPUS) != NULL;
    int want_fd = !strcmp(ofi_wait_param, "fd") ||
                  (strcmp(ofi_wait_param, "none") && !getenv(KUMI_ENV_BIND_CPUS));
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
    ofi_hex(hex, (unsigned char *)name, nl);
    rc = kumi_rpim_put("p2p.ofi.addr", hex);
    if (rc == MPI_SUCCESS) rc = kumi_rpim_put("p2p.ofi.prov", ofi_provname);
    if (rc == MPI_SUCCESS) rc = kumi_rpim_put("p2p.ofi.host", kumi_hostname() ? kumi_hostname() : "");
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
    const char *myhost = kumi_hostname();
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
    return MPI_SUCCESS;
}

static int p2p_ofi_reaches(int peer)
{
    return ofi_peers && peer >= 0 && peer < ofi_n && ofi_peers[peer].reach;
}

static size_t p2p_ofi_eager_limit(int peer)
{
    (void)peer;
    return ofi_eager;
}

/* ------------------------------------------------------------------ */
/* registration cache */

static void ofi_lru_unlink(struct ofi_mr *m)
{
    if (m->prev) m->prev->next = m->next;
    else ofi_lru_head = m->next;
    if (m->next) m->next->prev = m->prev;
    else ofi_lru_tail = m->prev;
    m->prev = m->next = NULL;
}

static void ofi_lru_push(struct ofi_mr *m)
{
    m->prev = NULL;
    m->next = ofi_lru_head;
    if (ofi_lru_head) ofi_lru_head->prev = m;
    ofi_lru_head = m;
    if (!ofi_lru_tail) ofi_lru_tail = m;
}

static void ofi_mr_free(struct ofi_mr *m)
{
    fi_close(&m->mr->fid);
    free(m);
}

static void ofi_mr_release(struct ofi_mr *m)
{
    if (--m->refs > 0) return;
    if (!m->cached) ofi_mr_free(m);
}

/* A registration covering [buf, buf+len) for remote read. */
static struct ofi_mr *ofi_mr_get(const void *buf, size_t len, int *err)
{
    char *b = (char *)buf;
    for (struct ofi_mr *m = ofi_lru_head; m; m = m->next) {
        if (b >= m->base && b + len <= m->base + m->len) {
            ofi_lru_unlink(m);
            ofi_lru_push(m);
            m->refs++;
            return m;
        }
    }
    struct ofi_mr *m = calloc(1, sizeof *m);
    if (!m) {
        *err = -FI_ENOMEM;
        return NULL;
    }
    /* register whole pages: neighbouring buffers then share an entry */
    uintptr_t lo = (uintptr_t)b & ~(uintptr_t)4095, hi = ((uintptr_t)b + len + 4095) & ~(uintptr_t)4095;
    m->base = (char *)lo;
    m->len = hi - lo;
    int rc = fi_mr_reg(ofi_domain, m->base, m->len, FI_REMOTE_READ, 0, ofi_prov_key ? 0 : ofi_next_key++, 0,
                       &m->mr, NULL);
    if (rc) {                               /* the page-rounded range may be refused: exact range */
        m->base = b;
        m->len = len;
        rc = fi_mr_reg(ofi_domain, b, len, FI_REMOTE_READ, 0, ofi_prov_key ? 0 : ofi_next_key++, 0, &m->mr, NULL);
    }
    if (rc == 0 && ofi_mr_endpoint) {
        rc = fi_mr_bind(m->mr, &ofi_ep->fid, 0);
        if (rc == 0) rc = fi_mr_enable(m->mr);
        if (rc) fi_close(&m->mr->fid);
    }
    if (rc) {
        free(m);
        *err = rc;
        return NULL;
    }
    m->refs = 1;
    if (ofi_cache_max > 0) {
        m->cached = 1;
        ofi_lru_push(m);
        if (++ofi_ncached > ofi_cache_max) {
            /* drop the least recently used entry that nobody uses */
            for (struct ofi_mr *v = ofi_lru_tail; v; v = v->prev) {
                if (v->refs > 0) continue;
                ofi_lru_unlink(v);
                ofi_ncached--;
                ofi_mr_free(v);
                break;
            }
        }
    }
    return m;
}

static void ofi_mr_flush(void)
{
    while (ofi_lru_head) {
        struct ofi_mr *m = ofi_lru_head;
        ofi_lru_unlink(m);
        ofi_ncached--;
        m->cached = 0;
        if (m->refs == 0) ofi_mr_free(m);
    }
}

/* ------------------------------------------------------------------ */
/* sending */

static struct ofi_tx *ofi_tx_get(void)
{
    struct ofi_tx *t = ofi_txfree;
    if (t) ofi_txfree = t->next;
    else t = malloc(sizeof *t);
    if (!t) return NULL;
    memset(t, 0, offsetof(struct ofi_tx, wire));
    t->c.kind = OFI_C_TX;
    return t;
}

static void ofi_fin_unlink(struct ofi_tx *t)
{
    if (!t->infin) return;
    if (t->fprev) t->fprev->fnext = t->fnext;
    else ofi_finwait = t->fnext;
    if (t->fnext) t->fnext->fprev = t->fprev;
    t->infin = 0;
}

static void ofi_tx_done(struct ofi_tx *t)
{
    struct kumi_sendop *op = t->op;
    ofi_fin_unlink(t);
    if (t->mr) ofi_mr_release(t->mr);
    t->next = ofi_txfree;
    ofi_txfree = t;
    if (op) {
        ofi_nqueued--;
        op->done(op);
    }
}

static void ofi_tx_event(struct ofi_tx *t)
{
    if (--t->pending <= 0) ofi_tx_done(t);
}

static void ofi_lost(int peer, const char *what, int rc)
{
    struct ofi_peer *p = &ofi_peers[peer];
    if (p->lost_warned) return;
    p->lost_warned = 1;
    kumi_warn("p2p/ofi: %s to or from rank %d failed (%s): the rank is gone or unreachable", what, peer,
              ofi_err(rc));
}

/* Hand t to the provider.  0: accepted (t may be gone), -FI_EAGAIN: try
 * later, other: failed (t is gone). */
static ssize_t ofi_post_tx(struct ofi_tx *t)
{
    struct ofi_peer *p = &ofi_peers[t->peer];
    const struct kumi_sendop *op = t->op;
    size_t plen = (op && t->pre.type == OFI_T_MSG) ? (size_t)op->hdr.paylen : 0;
    ssize_t rc;
    if (t->wlen + plen <= ofi_inject) {
        char buf[sizeof t->wire + 4096];
        if (t->wlen + plen <= sizeof buf) {
            memcpy(buf, t->wire, t->wlen);
            if (plen) memcpy(buf + t->wlen, op->payload, plen);
            rc = fi_inject(ofi_ep, buf, t->wlen + plen, p->addr);
            if (rc == 0) ofi_tx_event(t);    /* no completion comes for an inject */
            goto out;
        }
    }
    struct iovec iov[2] = { { t->wire, t->wlen }, { plen ? (void *)op->payload : NULL, plen } };
    struct fi_msg msg = { .msg_iov = iov, .iov_count = plen ? 2 : 1, .addr = p->addr, .context = &t->c };
    rc = fi_sendmsg(ofi_ep, &msg, FI_COMPLETION);
out:
    if (rc && rc != -FI_EAGAIN) {
        ofi_lost(t->peer, "a send", (int)rc);
        ofi_tx_done(t);                      /* the job ends: do not hold the caller */
    }
    return rc;
}

/* Queue t behind what waits for the same peer (order), and try to post. */
static void ofi_enqueue(struct ofi_tx *t)
{
    struct ofi_peer *p = &ofi_peers[t->peer];
    if (!p->qhead && ofi_post_tx(t) != -FI_EAGAIN) return;
    t->next = NULL;
    if (p->qtail) p->qtail->next = t;
    else p->qhead = t;
    p->qtail = t;
    ofi_have_peers_queued = 1;
}

/* Post what waits per peer, in order.  Returns 1 if anything went out. */
static int ofi_flush_queues(void)
{
    int did = 0, left = 0;
    for (int r = 0; r < ofi_n; r++) {
        struct ofi_peer *p = &ofi_peers[r];
        while (p->qhead) {
            struct ofi_tx *t = p->qhead;
            struct ofi_tx *nx = t->next;
            if (ofi_post_tx(t) == -FI_EAGAIN) break;
            did = 1;
            p->qhead = nx;
            if (!nx) p->qtail = NULL;
        }
        if (p->qhead) left = 1;
    }
    ofi_have_peers_queued = left;
    return did;
}

static void ofi_fill_pre(struct ofi_tx *t, int type, int peer)
{
    struct ofi_peer *p = &ofi_peers[peer];
    t->peer = peer;
    t->pre.type = (uint8_t)type;
    t->pre.magic = OFI_MAGIC;
    t->pre.src = (uint32_t)ofi_me;
    t->pre.seq = p->sseq++;
    t->pending = 1;                          /* the send completion (or the inject) */
}

static int p2p_ofi_send(int peer, struct kumi_sendop *op)
{
    if (!p2p_ofi_reaches(peer))
        return kumi_error(MPI_ERR_OTHER, "p2p/ofi: rank %d is not reachable over %s", peer, ofi_provname);
    struct ofi_tx *t = ofi_tx_get();
    if (!t) return kumi_error(MPI_ERR_NO_MEM, "p2p/ofi: out of memory for a send to rank %d", peer);
    const size_t hl = sizeof(struct ofi_pre) + sizeof(struct kumi_hdr);
    t->op = op;
    /* the payload of a pulled RTS, or of a DATA message: the receiver reads it */
    size_t rlen = op->hdr.kind == KUMI_HDR_DATA ? (size_t)op->hdr.paylen
                  : op->hdr.kind == KUMI_HDR_RTS && (op->hdr.flags & KUMI_HDR_F_RGET) ? (size_t)op->hdr.len : 0;
    if (rlen > 0 && op->payload) {
        int err = 0;
        struct ofi_mr *m = ofi_mr_get(op->payload, rlen, &err);
        if (!m) {
            t->op = NULL;
            ofi_tx_done(t);
            return kumi_error(err == -FI_ENOMEM ? MPI_ERR_NO_MEM : MPI_ERR_OTHER,
                              "p2p/ofi: cannot register %zu bytes for rank %d to read: %s", rlen, peer,
                              ofi_err(err));
        }
        struct ofi_rmadesc d = {
            .addr = ofi_virt_addr ? (uint64_t)(uintptr_t)op->payload
                                  : (uint64_t)((const char *)op->payload - m->base),
            .key = fi_mr_key(m->mr),
            .cookie = (uint64_t)(uintptr_t)t,
        };
        ofi_fill_pre(t, OFI_T_RMA, peer);
        memcpy(t->wire + sizeof(struct ofi_pre), &op->hdr, sizeof op->hdr);
        memcpy(t->wire + hl, &d, sizeof d);
        t->wlen = hl + sizeof d;
        t->mr = m;
        t->pending++;                        /* and the FIN */
        t->infin = 1;                        /* the FIN finds it by its cookie */
        t->fprev = NULL;
        t->fnext = ofi_finwait;
        if (ofi_finwait) ofi_finwait->fprev = t;
        ofi_finwait = t;
    } else {
        ofi_fill_pre(t, OFI_T_MSG, peer);
        memcpy(t->wire + sizeof(struct ofi_pre), &op->hdr, sizeof op->hdr);
        t->wlen = hl;
    }
    ofi_nqueued++;
    ofi_enqueue(t);
    return MPI_SUCCESS;
}

static void ofi_send_fin(int peer, uint64_t cookie)
{
    struct ofi_tx *t = ofi_tx_get();
    if (!t) {
        kumi_warn("p2p/ofi: out of memory: rank %d's rendezvous send cannot be finished", peer);
        return;
    }
    ofi_fill_pre(t, OFI_T_FIN, peer);
    memcpy(t->wire + sizeof(struct ofi_pre), &cookie, sizeof cookie);
    t->wlen = sizeof(struct ofi_pre) + sizeof cookie;
    ofi_enqueue(t);
}

static void ofi_got_fin(int peer, uint64_t cookie)
{
    for (struct ofi_tx *t = ofi_finwait; t; t = t->fnext) {
        if ((uint64_t)(uintptr_t)t == cookie && t->peer == peer) {
            ofi_fin_unlink(t);
            ofi_tx_event(t);
            return;
        }
    }
    kumi_warn("p2p/ofi: FIN from rank %d for an unknown rendezvous", peer);
}

/* ------------------------------------------------------------------ */
/* receiving */

static void ofi_read_finish(struct ofi_read *r)
{
    struct kumi_rx *rx = r->rx;
    if (rx) {
        rx->got = rx->len;
        kumi_p2p_rx_done(rx);
    }
    ofi_send_fin(r->peer, r->d.cookie);
    r->magic = 0;
    free(r);
}

/* Issue what r still needs; 1 if it must wait on ofi_rdq (provider busy). */
static int ofi_issue_reads(struct ofi_read *r)
{
    struct ofi_peer *p = &ofi_peers[r->peer];
    while (r->issued < r->want && !r->failed && r->outstanding < OFI_READ_WINDOW) {
        size_t n = r->want - r->issued;
        if (n > ofi_read_chunk) n = ofi_read_chunk;
        ssize_t rc = fi_read(ofi_ep, r->rx->dst + r->issued, n, NULL, p->addr, r->d.addr + r->issued, r->d.key,
                             &r->c);
        if (rc == -FI_EAGAIN) return 1;
        if (rc) {
            ofi_lost(r->peer, "a rendezvous read", (int)rc);
            r->failed = 1;
            break;
        }
        r->issued += n;
        r->outstanding++;
    }
    return 0;
}

/* r is not queued: finish it if nothing is in flight and nothing is left. */
static void ofi_read_check(struct ofi_read *r)
{
    if (r->outstanding == 0 && (r->failed || r->issued == r->want)) ofi_read_finish(r);
}

static void ofi_read_start(struct ofi_read *r)
{
    if (ofi_issue_reads(r)) {
        r->queued = 1;
        r->next = ofi_rdq;
        ofi_rdq = r;
    } else {
        ofi_read_check(r);
    }
}

static void ofi_read_event(struct ofi_read *r, int failed)
{
    r->outstanding--;
    if (failed) r->failed = 1;
    if (r->queued) return;
    if (!r->failed && r->issued < r->want) ofi_read_start(r);     /* the next pieces */
    else ofi_read_check(r);
}

/* Issue the reads the provider refused before.  Returns 1 if any went out. */
static int ofi_flush_reads(void)
{
    struct ofi_read *list = ofi_rdq;
    int did = 0;
    ofi_rdq = NULL;
    while (list) {
        struct ofi_read *r = list;
        size_t before = r->issued;
        list = r->next;
        r->queued = 0;
        if (!r->failed && ofi_issue_reads(r)) {
            r->queued = 1;
            r->next = ofi_rdq;
            ofi_rdq = r;
            if (r->issued != before) did = 1;
        } else {
            did = 1;
            ofi_read_check(r);               /* may free r */
        }
    }
    return did;
}

static void ofi_handle_rma(int peer, const struct kumi_hdr *hdr, const struct ofi_rmadesc *d)
{
    if (hdr->kind == KUMI_HDR_RTS) {         /* pulled later, when a receive matches */
        struct ofi_read *r = calloc(1, sizeof *r);
        struct kumi_hdr h = *hdr;
        if (!r) {
            kumi_warn("p2p/ofi: out of memory for a rendezvous from rank %d; dropped", peer);
            ofi_send_fin(peer, d->cookie);
            return;
        }
        r->c.kind = OFI_C_READ;
        r->magic = OFI_READ_MAGIC;
        r->peer = peer;
        r->d = *d;
        r->len = (size_t)hdr->len;
        h.rreq = (uint64_t)(uintptr_t)r;
        kumi_p2p_incoming(peer, &h);
        return;
    }
    struct kumi_rx *rx = kumi_p2p_incoming(peer, hdr);
    struct ofi_read *r = calloc(1, sizeof *r);
    if (!r) {
        kumi_warn("p2p/ofi: out of memory for a rendezvous read from rank %d", peer);
        if (rx) {
            rx->got = rx->len;
            kumi_p2p_rx_done(rx);
        }
        ofi_send_fin(peer, d->cookie);
        return;
    }
    size_t len = (size_t)hdr->paylen;
    r->c.kind = OFI_C_READ;
    r->magic = OFI_READ_MAGIC;
    r->peer = peer;
    r->rx = rx;
    r->d = *d;
    r->len = len;
    r->want = rx && rx->dst ? (len < rx->cap ? len : rx->cap) : 0;
    if (rx) rx->got = 0;
    ofi_read_start(r);
}

static int p2p_ofi_rget(int peer, size_t len)
{
    return ofi_rget_param && len > 0 && p2p_ofi_reaches(peer);
}

static void p2p_ofi_pull(int peer, uint64_t handle, struct kumi_rx *rx)
{
    struct ofi_read *r = (struct ofi_read *)(uintptr_t)handle;
    if (!r || r->magic != OFI_READ_MAGIC || r->peer != peer || r->rx) {
        kumi_warn("p2p/ofi: pull from rank %d of an unknown rendezvous", peer);
        return;
    }
    if (!rx) {                               /* cancelled: the sender may go on */
        ofi_send_fin(peer, r->d.cookie);
        r->magic = 0;
        free(r);
        return;
    }
    r->rx = rx;
    r->want = rx->dst ? (r->len < rx->cap ? r->len : rx->cap) : 0;
    rx->got = 0;
    ofi_read_start(r);
}

/* One in-order message from peer. */
static void ofi_deliver(int peer, const char *m, size_t len)
{
    const struct ofi_pre *pre = (const struct ofi_pre *)m;
    const size_t hl = sizeof(struct ofi_pre) + sizeof(struct kumi_hdr);
    if (pre->type == OFI_T_FIN) {
        uint64_t c;
        memcpy(&c, m + sizeof *pre, sizeof c);
        ofi_got_fin(peer, c);
        return;
    }
    struct kumi_hdr hdr;
    memcpy(&hdr, m + sizeof *pre, sizeof hdr);
    if (pre->type == OFI_T_RMA) {
        struct ofi_rmadesc d;
        memcpy(&d, m + hl, sizeof d);
        ofi_handle_rma(peer, &hdr, &d);
        return;
    }
    size_t plen = len - hl;
    if (plen != hdr.paylen) {
        kumi_warn("p2p/ofi: message from rank %d has %zu payload bytes, its header says %llu", peer, plen,
                  (unsigned long long)hdr.paylen);
        if (plen > hdr.paylen) plen = (size_t)hdr.paylen;
    }
    struct kumi_rx *rx = kumi_p2p_incoming(peer, &hdr);
    if (rx && hdr.paylen > 0) {
        size_t k = rx->dst ? (plen < rx->cap ? plen : rx->cap) : 0;
        if (k) memcpy(rx->dst, m + hl, k);
        rx->got = (size_t)hdr.paylen;
        kumi_p2p_rx_done(rx);
    }
}

static void ofi_repost_rx(struct ofi_rxbuf *b)
{
    int rc = ofi_post_rx(b);
    if (rc) kumi_warn("p2p/ofi: cannot post a receive buffer: %s", ofi_err(rc));
}

static void ofi_got_msg(struct ofi_rxbuf *b, size_t len)
{
    const struct ofi_pre *pre = (const struct ofi_pre *)b->data;
    size_t need = sizeof *pre + (pre->type == OFI_T_FIN ? sizeof(uint64_t) : sizeof(struct kumi_hdr)) +
                  (pre->type == OFI_T_RMA ? sizeof(struct ofi_rmadesc) : 0);
    if (len < sizeof *pre || pre->magic != OFI_MAGIC || pre->src >= (uint32_t)ofi_n || pre->type < OFI_T_MSG ||
        pre->type > OFI_T_FIN || len < need) {
        kumi_warn("p2p/ofi: dropped a malformed message of %zu bytes", len);
        ofi_repost_rx(b);
        return;
    }
    int peer = (int)pre->src;
    struct ofi_peer *p = &ofi_peers[peer];
    b->len = len;
    if (pre->seq != p->rseq) {               /* ahead of its turn: held, in sequence order */
        struct ofi_rxbuf **pp = &p->held;
        while (*pp && (int16_t)(((struct ofi_pre *)(*pp)->data)->seq - pre->seq) < 0) pp = &(*pp)->next;
        b->next = *pp;
        *pp = b;
        return;
    }
    for (;;) {
        p->rseq++;
        ofi_deliver(peer, b->data, b->len);
        ofi_repost_rx(b);
        b = p->held;
        if (!b || ((struct ofi_pre *)b->data)->seq != p->rseq) break;
        p->held = b->next;
    }
}

static void ofi_rma_event(struct ofi_rchunk *c, int err);

static void ofi_cq_error(void)
{
    struct fi_cq_err_entry e;
    memset(&e, 0, sizeof e);
    if (fi_cq_readerr(ofi_cq, &e, 0) != 1) return;
    struct ofi_ctx *c = e.op_context;
    if (!c) {
        kumi_warn("p2p/ofi: completion error: %s", ofi_err(e.err));
        return;
    }
    switch (c->kind) {
    case OFI_C_TX: {
        struct ofi_tx *t = (struct ofi_tx *)c;
        ofi_lost(t->peer, "a send", -e.err);
        ofi_tx_done(t);                      /* no FIN will come either */
        break;
    }
    case OFI_C_RX:
        ofi_nposted--;
        if (e.err == FI_ECANCELED) return;
        kumi_warn("p2p/ofi: receive error: %s", ofi_err(e.err));
        ofi_repost_rx((struct ofi_rxbuf *)c);
        break;
    case OFI_C_READ: {
        struct ofi_read *r = (struct ofi_read *)c;
        ofi_lost(r->peer, "a rendezvous read", -e.err);
        ofi_read_event(r, 1);
        break;
    }
    case OFI_C_RMA: {
        struct ofi_rchunk *k = (struct ofi_rchunk *)c;
        kumi_log(1, "p2p/ofi: a remote %s to rank %d failed: %s", k->op->write ? "write" : "read", k->op->tpeer,
                 ofi_err(e.err));
        ofi_rma_event(k, e.err == FI_EACCES || e.err == FI_EINVAL ? MPI_ERR_RMA_RANGE : MPI_ERR_OTHER);
        break;
    }
    }
}

/* ------------------------------------------------------------------ */
/* remote memory access for windows */

static int p2p_ofi_mem_reg(void *base, size_t len, void **handle, struct kumi_p2p_rkey *rkey)
{
    struct fid_mr *mr = NULL;
    if (!ofi_can_write)
        return kumi_error(MPI_ERR_OTHER, "p2p/ofi: provider %s does no remote writes", ofi_provname);
    int rc = fi_mr_reg(ofi_domain, base, len, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                       ofi_prov_key ? 0 : ofi_next_key++, 0, &mr, NULL);
    if (rc == 0 && ofi_mr_endpoint) {
        rc = fi_mr_bind(mr, &ofi_ep->fid, 0);
        if (rc == 0) rc = fi_mr_enable(mr);
        if (rc) fi_close(&mr->fid);
    }
    if (rc == 0 && fi_mr_key(mr) == FI_KEY_NOTAVAIL) {  /* a raw key (FI_MR_RAW): not asked for */
        fi_close(&mr->fid);
        rc = -FI_ENOSYS;
    }
    if (rc)
        return kumi_error(rc == -FI_ENOMEM ? MPI_ERR_NO_MEM : MPI_ERR_OTHER,
                          "p2p/ofi: cannot register %zu bytes of window memory: %s", len, ofi_err(rc));
    *handle = mr;
    ofi_nwinmr++;
    rkey->addr = ofi_virt_addr ? (uint64_t)(uintptr_t)base : 0;
    rkey->key = fi_mr_key(mr);
    return MPI_SUCCESS;
}

static void p2p_ofi_mem_dereg(void *handle)
{
    if (handle && ofi_domain) {
        fi_close(&((struct fid_mr *)handle)->fid);
        ofi_nwinmr--;
    }
}

static struct ofi_rchunk *ofi_rchunk_get(void)
{
    struct ofi_rchunk *c = ofi_rcfree;
    if (c) ofi_rcfree = c->next;
    else c = malloc(sizeof *c);
    if (c) c->c.kind = OFI_C_RMA;
    return c;
}

static void ofi_rchunk_put(struct ofi_rchunk *c)
{
    c->next = ofi_rcfree;
    ofi_rcfree = c;
}

/* Issue the pieces op still needs; 1 if the provider is busy (op waits on ofi_rmaq). */
static int ofi_rma_issue(struct kumi_p2p_rma *op)
{
    struct ofi_peer *p = &ofi_peers[op->tpeer];
    while (op->toff < op->len && !op->terr && op->tpending < OFI_READ_WINDOW) {
        size_t n = op->len - op->toff;
        if (n > ofi_read_chunk) n = ofi_read_chunk;
        struct ofi_rchunk *c = ofi_rchunk_get();
        if (!c) {
            op->terr = MPI_ERR_NO_MEM;
            break;
        }
        c->op = op;
        struct iovec iov = { (char *)op->local + op->toff, n };
        struct fi_rma_iov riov = { .addr = op->raddr + op->toff, .len = n, .key = op->key };
        struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1, .addr = p->addr, .rma_iov = &riov,
                                  .rma_iov_count = 1, .context = &c->c };
        ssize_t rc = op->write ? fi_writemsg(ofi_ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE)
                               : fi_readmsg(ofi_ep, &msg, FI_COMPLETION);
        if (rc == -FI_EAGAIN) {
            ofi_rchunk_put(c);
            return 1;
        }
        if (rc) {
            ofi_rchunk_put(c);
            ofi_lost(op->tpeer, op->write ? "a remote write" : "a remote read", (int)rc);
            op->terr = MPI_ERR_OTHER;
            break;
        }
        op->toff += n;
        op->tpending++;
    }
    return 0;
}

static void ofi_rma_queue(struct kumi_p2p_rma *op)
{
    op->tflags |= OFI_RMA_QUEUED;
    op->tnext = NULL;
    if (ofi_rmaq_tail) ofi_rmaq_tail->tnext = op;
    else ofi_rmaq = op;
    ofi_rmaq_tail = op;
}

static void ofi_rma_finish(struct kumi_p2p_rma *op)
{
    ofi_nrma--;
    op->done(op, op->terr);
}

static int p2p_ofi_rma(int peer, struct kumi_p2p_rma *op)
{
    if (!p2p_ofi_reaches(peer) || !ofi_can_write)
        return kumi_error(MPI_ERR_OTHER, "p2p/ofi: no remote memory access to rank %d", peer);
    op->tpeer = peer;
    op->toff = 0;
    op->tpending = op->terr = op->tflags = 0;
    ofi_nrma++;
    if (ofi_rma_issue(op)) {
        ofi_rma_queue(op);
    } else if (op->tpending == 0) {          /* nothing went out (empty, or refused): done at progress */
        if (op->terr && op->toff == 0) {     /* refused at once: the caller learns it now */
            ofi_nrma--;
            return op->terr;
        }
        op->tnext = ofi_rmafin;
        ofi_rmafin = op;
    }
    return MPI_SUCCESS;
}

static void ofi_rma_event(struct ofi_rchunk *c, int err)
{
    struct kumi_p2p_rma *op = c->op;
    ofi_rchunk_put(c);
    op->tpending--;
    if (err && !op->terr) op->terr = err;
    if (op->tflags & OFI_RMA_QUEUED) return;  /* ofi_flush_rma goes on with it */
    if (!op->terr && op->toff < op->len && ofi_rma_issue(op)) ofi_rma_queue(op);
    else if (op->tpending == 0) ofi_rma_finish(op);
}

/* Issue the pieces the provider refused before; finish what is over.
 * Returns 1 if anything happened. */
static int ofi_flush_rma(void)
{
    struct kumi_p2p_rma *list = ofi_rmaq, *fin = ofi_rmafin;
    int did = fin != NULL;
    ofi_rmaq = ofi_rmaq_tail = NULL;
    ofi_rmafin = NULL;
    while (list) {
        struct kumi_p2p_rma *op = list;
        int before = op->tpending;
        list = op->tnext;
        op->tflags &= ~OFI_RMA_QUEUED;
        if (!op->terr && ofi_rma_issue(op)) {
            ofi_rma_queue(op);
            if (op->tpending != before) did = 1;
        } else {
            did = 1;
            if (op->tpending == 0) ofi_rma_finish(op);
        }
    }
    while (fin) {
        struct kumi_p2p_rma *op = fin;
        fin = op->tnext;
        ofi_rma_finish(op);
    }
    return did;
}

/* ------------------------------------------------------------------ */
/* progress */

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

static void ofi_teardown(void)
{
    if (ofi_ep) fi_close(&ofi_ep->fid);
    ofi_ep = NULL;
    ofi_mr_flush();
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
    ofi_rmaq = ofi_rmaq_tail = ofi_rmafin = NULL;
    ofi_nrma = 0;
    ofi_finwait = NULL;
    ofi_have_peers_queued = 0;
    ofi_nqueued = 0;
}

static void p2p_ofi_finalize(void)
{
    ofi_teardown();
}

static const struct kumi_p2p_ops p2p_ofi_ops = {
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
