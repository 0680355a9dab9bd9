/* The kernel-module engine of schedules (kumi_base_sched_engine = kmod): the
 * KACC module (kmod/kumi_kacc.c, /dev/kumi_kacc) runs schedules in the
 * kernel.
 *
 * At start-up the engine opens the device, checks the module's ABI version
 * (KACC_IOC_VERSION) and maps the shared area; an absent device or another
 * version: one line under KUMI_VERBOSE, and the loop engine runs instead.
 *
 * Connections: as the io_uring engine's (uring.c), one TCP connection of
 * the engine's own per pair of ranks (the lower world rank connects at
 * first use, to the address the tcp transport uses and the port the peer
 * published under "sched.kmod.port", and says who it is in 4 bytes; the
 * higher one accepts it in its progress).  Each socket goes to the module
 * by descriptor (KACC_IOC_ADD_SOCKET); from then on only the module reads
 * and writes it.  A peer the higher rank waits for is a module peer without
 * a socket yet: the module queues its sends until the socket comes.  A pair
 * uses the engine only if both ranks published a port.  The framing is the
 * module's (kmod/kumi_kacc_uapi.h: a 24-byte header and the bytes; the
 * io_uring engine's header is 56 bytes since, see uring.c "Framing").
 *
 * Direct copies (kumi_base_sched_kmod_direct, default 1; kmod/kacc_direct.c):
 * each rank publishes its context's cookie (id and secret, KACC_IOC_DIRECT_ID)
 * under "sched.kmod.direct", and links every new module peer whose cookie
 * the module finds in this kernel (KACC_IOC_DIRECT_LINK, before the pair's
 * first schedule on either side): the module then copies the pair's
 * messages from the sender's pinned pages into the receiver's, and the
 * socket stays idle.  ENOENT (another kernel) or a module without the ioctl:
 * the socket.  A RECV into the schedule's scratch (kumi_sched_alloc) is
 * flagged KACC_F_SCRATCH: the module may reduce from the sender's pages into
 * the CALC that consumes it without writing the scratch (a RECV into the
 * inout of the CALC after it needs no flag: the module fuses it on its own).
 *
 * Schedules: at its first start a schedule's nodes are translated into the
 * module's format (struct kacc_node) straight into the shared area, with
 * the successor array and a state block, and registered (the module
 * validates a copy and pins the buffers).  Node tags are the schedule's own
 * (0..4095): each START (KACC_IOC_START_TAG) adds the schedule's tag base.
 * A non-blocking collective's registration is kept when its schedule is
 * freed (kumi_base_sched_kmod_reuse, the most kept), and the next schedule
 * whose translated nodes and successors are the same bytes (the same
 * collective on the same buffers, peers and communicator context) starts
 * it again: no REGISTER / UNREGISTER per operation, which cost an 8-byte
 * MPI_Iallreduce more than the whole operation on the loop engine.  Those
 * registrations are KACC_REG_RUNPIN: their buffers are pinned by each START
 * and unpinned at the run's end, so an idle one holds no pages and memory
 * freed or mapped anew at the same addresses is never written through
 * stale pages.  Persistent and CAD schedules pin once, at REGISTER (the
 * standard keeps their buffers until the request is freed).
 *
 * START runs a schedule in the kernel; MPI_Test / MPI_Wait /
 * MPIX_Cad_test read the state block (no system call) in the progress
 * hook, and a blocking wait sleeps in poll() on the device.  While the rank
 * waits (wait_hook, kumi_base_sched_kmod_wait_runs) the module hands it the
 * work that arrives instead of waking a worker on its CPU: the rank runs it
 * in its progress hook (KACC_IOC_PROGRESS) or in its poll() on the device.
 * What the module cannot do is chosen per node and done by the
 * rank in its next MPI call (the module flags the node in the area and
 * waits for KACC_IOC_NODE_DONE): CALC with user-defined operations or
 * types it has no arithmetic for, COPY of non-contiguous data, packing a
 * SEND / unpacking a RECV of a non-contiguous datatype (the module moves
 * the packed bytes), and messages to peers not reached through the module
 * (they go through the point-to-point layer). */
#define _GNU_SOURCE                     /* accept4 */
#include "sched/sched.h"
#include <kumi/param.h>
#include <kumi/p2p.h>
#include <kumi/rpim.h>
#include <kumi/coll.h>

static long long expect_abi;
static long long area_mb = 16;
static long long direct_on = 1;
static long long reuse_max = 16;
static int wait_runs = 1;

void kumi_sched_kmod_register_params(void)
{
    kumi_param_register_int("kumi", "base", "sched_kmod_abi", 0,
                            "The ABI version of the KACC module the library expects; 0: its own (tests: "
                            "another one makes kumi_base_sched_engine=kmod fall back to the loop engine)",
                            KUMI_LEVEL_DEV, &expect_abi);
    kumi_param_register_int("kumi", "base", "sched_kmod_area_mb", 16,
                            "MiB of the area shared with the KACC module (the schedules' node arrays)",
                            KUMI_LEVEL_TUNER, &area_mb);
    kumi_param_register_int("kumi", "base", "sched_kmod_direct", 1,
                            "1: a pair of ranks on one kernel (the same host) has the KACC module copy its "
                            "messages directly between their pinned buffers (one copy, no socket); 0: "
                            "always through the pair's TCP socket",
                            KUMI_LEVEL_TUNER, &direct_on);
    kumi_param_register_int("kumi", "base", "sched_kmod_reuse", 16,
                            "Registrations of non-blocking collectives the kmod engine keeps after their "
                            "schedule is freed, for the next one with the same nodes (the same collective "
                            "on the same buffers): it then skips registering with the KACC module; 0: "
                            "register and unregister each operation",
                            KUMI_LEVEL_TUNER, &reuse_max);
    kumi_param_register_bool("kumi", "base", "sched_kmod_wait_runs", 1,
                             "1: while the rank is in a blocking wait the KACC module hands it the work "
                             "that arrives (the rank runs it at once, in its wait or its poll() on the "
                             "device) instead of waking a kernel worker on its CPU; 0: always the worker",
                             KUMI_LEVEL_TUNER, &wait_runs);
}

#ifndef __linux__
int kumi_sched_kmod_init(void) { return -1; }
void kumi_sched_kmod_stop(void) {}
bool kumi_sched_kmod_start(struct kumi_sched *s) { (void)s; return false; }
void kumi_sched_kmod_free(struct kumi_sched *s) { (void)s; }
#else

#include "../../kmod/kumi_kacc_uapi.h"
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* A schedule's part of the area and what the rank does for it. */
struct kx {
    uint32_t id;
    size_t off, len;                    /* its block of the area */
    struct kacc_node *kn;
    struct kacc_state *st;
    uint8_t *uflag;
    uint32_t useq;                      /* flags seen */
    void **tmp;                         /* per node: packed data of a non-contiguous SEND / RECV */
    struct kx *next;                    /* running */
    struct kumi_sched *s;               /* NULL while kept for reuse */
    uint32_t n, nsucc;
    bool running;
    bool reusable;                      /* KACC_REG_RUNPIN: kept for reuse when its schedule goes */
};

enum { P_NONE, P_WAIT_ACCEPT, P_UP };
struct upeer { int state, index, fd; };

static bool up;
static int devfd = -1, lfd = -1;
static char *area;
static size_t area_size;
static struct kacc_area_hdr *ahdr;
static struct upeer *peers;             /* by world rank */
static int8_t *usable;
static int nworld, me, nwaiting;
static struct kx *running;
static unsigned long long nruns, nuser, nfree_running, nreused;
static struct kx **kept;                /* registrations kept for reuse, the newest last */
static int nkept, kept_cap;
static struct kacc_node *tnodes;        /* a translation to compare with them */
static size_t tcap;
static void kx_free(struct kx *x);
static bool direct_pub;                 /* this rank published its module cookie (sched.kmod.direct) */
static int ndirect;                     /* module peers linked for direct copies */

/* ------------------------------------------------------------ the area: first fit in 64-byte units */
struct fblk { size_t off, len; };
static struct fblk *fb;
static int nfb, fbcap;

static size_t area_alloc(size_t len)
{
    len = (len + 63) & ~(size_t)63;
    for (int i = 0; i < nfb; i++)
        if (fb[i].len >= len) {
            size_t off = fb[i].off;
            fb[i].off += len;
            fb[i].len -= len;
            if (!fb[i].len) { memmove(&fb[i], &fb[i + 1], (size_t)(nfb - i - 1) * sizeof *fb); nfb--; }
            return off;
        }
    return 0;                           /* 0 is the header's: never a block */
}

static void area_free(size_t off, size_t len)
{
    len = (len + 63) & ~(size_t)63;
    int i = 0;
    while (i < nfb && fb[i].off < off) i++;
    if (i > 0 && fb[i - 1].off + fb[i - 1].len == off) {            /* joins the one before */
        fb[i - 1].len += len;
        if (i < nfb && fb[i - 1].off + fb[i - 1].len == fb[i].off) {
            fb[i - 1].len += fb[i].len;
            memmove(&fb[i], &fb[i + 1], (size_t)(nfb - i - 1) * sizeof *fb);
            nfb--;
        }
        return;
    }
    if (i < nfb && off + len == fb[i].off) { fb[i].off = off; fb[i].len += len; return; }
    if (nfb == fbcap) {
        struct fblk *n = realloc(fb, (size_t)(fbcap ? fbcap * 2 : 64) * sizeof *fb);
        if (!n) return;                 /* lost: only the area shrinks */
        fb = n;
        fbcap = fbcap ? fbcap * 2 : 64;
    }
    memmove(&fb[i + 1], &fb[i], (size_t)(nfb - i) * sizeof *fb);
    fb[i].off = off;
    fb[i].len = len;
    nfb++;
}

/* ------------------------------------------------------------ start-up */
static int complete(void);
static int fds(struct pollfd *f, int max);

/* The rank's blocking waits (kumi_progress_set_wait_hook; kumi_base_sched_kmod_wait_runs): the
 * area's waiting count says the module may hand work to this rank (kpend) rather than to a
 * worker; a thread leaving its wait runs what was handed meanwhile (the module sets kpend, then
 * reads waiting again: one of the two sees the other).  A wait that begins with no schedule
 * running in the module is not counted (no atomics on, say, a point-to-point MPI_Wait of a rank
 * that has no collective in flight): work for a schedule started meanwhile goes to the worker. */
static int wait_hook(int on)
{
    if (!up) return 0;
    if (on) {
        if (!running) return 0;
        __atomic_add_fetch(&ahdr->waiting, 1, __ATOMIC_SEQ_CST);
        return 1;
    }
    __atomic_sub_fetch(&ahdr->waiting, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&ahdr->kpend, __ATOMIC_SEQ_CST)) ioctl(devfd, KACC_IOC_PROGRESS);
    return 0;
}

static void fallback(const char *why, const char *detail)
{
    kumi_log(1, "kumi_base_sched_engine=kmod: %s%s%s; collectives use the loop engine", why,
             detail ? ": " : "", detail ? detail : "");
}

int kumi_sched_kmod_init(void)
{
    unsigned want = expect_abi > 0 ? (unsigned)expect_abi : KACC_ABI_VERSION;
    int fd = open(KACC_DEVICE, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fallback(KACC_DEVICE, strerror(errno));
        return -1;
    }
    struct kacc_version v;
    memset(&v, 0, sizeof v);
    if (ioctl(fd, KACC_IOC_VERSION, &v) != 0 || v.abi != want) {
        char d[96];
        if (v.abi) snprintf(d, sizeof d, "the module's ABI is version %u, this library's %u", v.abi, want);
        else snprintf(d, sizeof d, "no answer to the version ioctl (%s)", strerror(errno));
        fallback("the KACC module does not match", d);
        close(fd);
        return -1;
    }
    size_t sz = (size_t)(area_mb > 0 ? area_mb : 16) << 20;
    if (sz > v.max_area) sz = v.max_area;
    void *a = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (a == MAP_FAILED) {
        fallback("cannot map the area shared with the module", strerror(errno));
        close(fd);
        return -1;
    }
    int port = 0;
    int l = kumi_sched_listen(&port);
    char pv[16];
    snprintf(pv, sizeof pv, "%d", port);
    if (l < 0 || kumi_rpim_put("sched.kmod.port", pv) != MPI_SUCCESS) {
        fallback("no listening socket", strerror(errno));
        if (l >= 0) close(l);
        munmap(a, sz);
        close(fd);
        return -1;
    }
    /* direct copies: this context's cookie to the job's ranks (a module without them: ENOTTY) */
    struct kacc_direct_id did;
    direct_pub = false;
    if (direct_on > 0 && ioctl(fd, KACC_IOC_DIRECT_ID, &did) == 0) {
        char dv[40];
        snprintf(dv, sizeof dv, "%016llx:%016llx", (unsigned long long)did.id, (unsigned long long)did.secret);
        direct_pub = kumi_rpim_put("sched.kmod.direct", dv) == MPI_SUCCESS;
    } else if (direct_on > 0) {
        kumi_log(1, "kumi_base_sched_engine=kmod: the KACC module has no direct copies (%s); every pair "
                    "uses its socket", strerror(errno));
    }
    devfd = fd;
    lfd = l;
    area = a;
    area_size = sz;
    ahdr = a;
    nfb = 0;
    area_free(64, sz - 64);
    nworld = kumi_world_size();
    me = kumi_world_rank();
    peers = calloc((size_t)nworld, sizeof *peers);
    usable = calloc((size_t)nworld, 1);
    if (!peers || !usable) kumi_err_fatal("kumi_base_sched_engine=kmod: out of memory");
    for (int i = 0; i < nworld; i++) peers[i].index = peers[i].fd = -1;
    up = true;
    kumi_progress_set_hook(complete, fds);
    if (wait_runs) kumi_progress_set_wait_hook(wait_hook);
    kumi_log(1, "kumi_base_sched_engine=kmod: KACC module ABI %u, %zu KiB shared area, listening on port %d",
             v.abi, sz >> 10, port);
    return 0;
}

void kumi_sched_kmod_stop(void)
{
    if (!up) return;
    struct kacc_stats ks;
    memset(&ks, 0, sizeof ks);
    ioctl(devfd, KACC_IOC_STATS, &ks);
    kumi_log(1, "kumi_base_sched_engine=kmod: %llu schedule runs in the kernel, %llu node steps done by the "
                "rank, %d of its peers direct, %llu registrations reused (module, all ranks: %llu runs, %llu "
                "nodes, %llu bytes sent, %llu received on sockets)",
             nruns, nuser, ndirect, nreused, (unsigned long long)ks.runs_done, (unsigned long long)ks.nodes,
             (unsigned long long)ks.bytes_sent, (unsigned long long)ks.bytes_recv);
    kumi_progress_set_hook(NULL, NULL);
    kumi_progress_set_wait_hook(NULL);
    while (nkept > 0) kx_free(kept[--nkept]);  /* the module drops them with the file */
    free(kept); kept = NULL; kept_cap = 0;
    free(tnodes); tnodes = NULL; tcap = 0;
    for (int i = 0; i < nworld; i++)
        if (peers[i].fd >= 0) close(peers[i].fd);
    munmap(area, area_size);
    close(devfd);                       /* the module releases the sockets, pages and schedules */
    close(lfd);
    free(peers); peers = NULL;
    free(usable); usable = NULL;
    free(fb); fb = NULL; nfb = fbcap = 0;
    ndirect = 0;
    devfd = lfd = -1;
    area = NULL;
    running = NULL;
    up = false;
}

/* ------------------------------------------------------------ peers */
/* A new module peer for world rank w: direct when both ranks published a cookie and the
 * module finds w's context in this kernel.  Both ranks of a pair decide the same way (each
 * links the other before its first schedule with it), so both ends use one path. */
static void link_direct(int w, int index)
{
    char v[40];
    unsigned long long id, secret;
    if (!direct_pub || kumi_rpim_get(w, "sched.kmod.direct", v, sizeof v) != MPI_SUCCESS ||
        sscanf(v, "%16llx:%16llx", &id, &secret) != 2)
        return;
    struct kacc_direct_link l = { .index = index, .id = id, .secret = secret };
    if (ioctl(devfd, KACC_IOC_DIRECT_LINK, &l) == 0) {
        ndirect++;
        kumi_log(2, "kumi_base_sched_engine=kmod: rank %d is on this kernel: direct copies (module peer %d)", w, index);
    } else if (errno == ENOENT) {
        kumi_log(2, "kumi_base_sched_engine=kmod: rank %d is on another kernel: its socket", w);
    } else {
        kumi_log(1, "kumi_base_sched_engine=kmod: the module refused direct copies with rank %d (%s); its socket",
                 w, strerror(errno));
    }
}

static int new_peer(int fd, int index, int w)
{
    struct kacc_sock k = { .fd = fd, .index = index };
    if (ioctl(devfd, KACC_IOC_ADD_SOCKET, &k) != 0)
        kumi_err_fatal("kumi_base_sched_engine=kmod: the module refused a socket: %s", strerror(errno));
    if (index < 0) link_direct(w, k.index);
    return k.index;
}

static bool peer_usable(int w)
{
    if (w < 0 || w >= nworld || w == me) return false;
    if (!usable[w]) usable[w] = kumi_sched_peer_listens(w, "sched.kmod.port") ? 1 : -1;
    return usable[w] > 0;
}

static int peer_index(int w)
{
    struct upeer *p = &peers[w];
    if (p->state != P_NONE) return p->index;
    if (me > w) {                       /* it connects; the module queues until the socket comes */
        p->index = new_peer(-1, -1, w);
        p->state = P_WAIT_ACCEPT;
        nwaiting++;
        return p->index;
    }
    const char *what;
    int fd = kumi_sched_connect(w, "sched.kmod.port", true, &what);
    if (fd < 0) kumi_err_fatal("kumi_base_sched_engine=kmod: %s to rank %d: %s", what, w, strerror(errno));
    p->fd = fd;
    p->index = new_peer(fd, -1, w);
    p->state = P_UP;
    kumi_log(2, "kumi_base_sched_engine=kmod: connection with rank %d up (module peer %d)", w, p->index);
    return p->index;
}

/* Connections from higher ranks: who is it, then to the module. */
static int accept_some(void)
{
    int n = 0;
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) return n;
        int32_t who = -1;
        size_t got = 0;
        struct timeval tv = { 5, 0 };   /* a stranger that says nothing is dropped */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        while (got < sizeof who) {
            ssize_t r = read(fd, (char *)&who + got, sizeof who - got);
            if (r > 0) got += (size_t)r;
            else if (r < 0 && errno == EINTR) continue;
            else break;
        }
        if (got != sizeof who || who < 0 || who >= me || peers[who].state == P_UP) {
            close(fd);
            continue;
        }
        struct timeval none = { 0, 0 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct upeer *p = &peers[who];
        if (p->state == P_WAIT_ACCEPT) nwaiting--;
        p->index = new_peer(fd, p->state == P_WAIT_ACCEPT ? p->index : -1, who);
        p->fd = fd;
        p->state = P_UP;
        kumi_log(2, "kumi_base_sched_engine=kmod: connection with rank %d up (module peer %d)", who, p->index);
        n++;
    }
}

/* ------------------------------------------------------------ schedules */
static int kacc_type(const struct kumi_dt *dt)
{
    switch (dt->predefined ? dt->basic : dt->basic_elem) {
    case KUMI_B_CHAR: case KUMI_B_SCHAR: case KUMI_B_INT8: return KACC_T_I8;
    case KUMI_B_UCHAR: case KUMI_B_UINT8: case KUMI_B_BYTE: case KUMI_B_BOOL: return KACC_T_U8;
    case KUMI_B_SHORT: case KUMI_B_INT16: return KACC_T_I16;
    case KUMI_B_USHORT: case KUMI_B_UINT16: return KACC_T_U16;
    case KUMI_B_INT: case KUMI_B_INT32: case KUMI_B_FINTEGER: return KACC_T_I32;
    case KUMI_B_UINT: case KUMI_B_UINT32: return KACC_T_U32;
    case KUMI_B_LONG: case KUMI_B_LLONG: case KUMI_B_INT64: case KUMI_B_AINT: case KUMI_B_COUNT:
    case KUMI_B_OFFSET: return KACC_T_I64;
    case KUMI_B_ULONG: case KUMI_B_ULLONG: case KUMI_B_UINT64: return KACC_T_U64;
    case KUMI_B_FLOAT: case KUMI_B_FREAL: return KACC_T_F32;
    case KUMI_B_DOUBLE: case KUMI_B_FDOUBLE: return KACC_T_F64;
    default: return 0;
    }
}

static int kacc_op(const struct kumi_op *op)
{
    if (!op->predefined) return 0;
    MPI_Op h = op->handle;
    if (h == MPI_SUM) return KACC_OP_SUM;
    if (h == MPI_PROD) return KACC_OP_PROD;
    if (h == MPI_MIN) return KACC_OP_MIN;
    if (h == MPI_MAX) return KACC_OP_MAX;
    if (h == MPI_BAND) return KACC_OP_BAND;
    if (h == MPI_BOR) return KACC_OP_BOR;
    if (h == MPI_BXOR) return KACC_OP_BXOR;
    if (h == MPI_LAND) return KACC_OP_LAND;
    if (h == MPI_LOR) return KACC_OP_LOR;
    if (h == MPI_LXOR) return KACC_OP_LXOR;
    return 0;
}

static bool contig(const struct kumi_dt *dt, size_t count) { return dt && (dt->contig || !count || !dt->size); }

static uint64_t data_addr(uint64_t buf, const struct kumi_dt *dt, size_t count)
{
    return count && dt->size ? buf + (uint64_t)dt->true_lb : buf;
}

/* Whether [a, a + len) lies in the schedule's own scratch memory (kumi_sched_alloc): nobody
 * reads it after the run, so the module may leave a RECV into it unwritten (KACC_F_SCRATCH). */
static bool in_scratch(const struct kumi_sched *s, uint64_t a, size_t len)
{
    for (int i = 0; i < s->nmem; i++) {
        uint64_t m = (uint64_t)(uintptr_t)s->mem[i];
        if (a >= m && a + len <= m + malloc_usable_size(s->mem[i])) return true;
    }
    return false;
}

/* Node i of s in the module's format. */
static void translate(struct kumi_sched *s, struct kx *x, uint32_t i)
{
    const struct kumi_sched_node *nd = &s->node[i];
    struct kacc_node *k = &x->kn[i];
    memset(k, 0, sizeof *k);
    k->nsucc = nd->nsucc;
    k->first = nd->first;
    k->peer = -1;
    struct kumi_dt *dt = kumi_dt_get((MPI_Datatype)(uintptr_t)nd->dt);
    size_t bytes = dt ? (size_t)nd->count * dt->size : 0;
    switch (nd->kind) {
    case KUMI_SCHED_START: k->kind = KACC_START; return;
    case KUMI_SCHED_END: k->kind = KACC_END; return;
    case KUMI_SCHED_SEND:
    case KUMI_SCHED_RECV: {
        bool send = nd->kind == KUMI_SCHED_SEND;
        k->kind = send ? KACC_SEND : KACC_RECV;
        if (nd->peer == MPI_PROC_NULL) return;
        int w = kumi_comm_peer_world(s->comm, nd->peer);
        if (!peer_usable(w)) {          /* the point-to-point layer carries it */
            k->kind = KACC_NOP;
            k->flags = KACC_F_USER_PRE;
            return;
        }
        k->peer = peer_index(w);
        k->ctx = s->comm->ctx + 1;
        k->tag = nd->tag;               /* + the tag base at each start (KACC_IOC_START_TAG) */
        k->len = bytes;
        if (contig(dt, nd->count)) {
            k->buf = data_addr(nd->buf, dt, (size_t)nd->count);
            if (!send && direct_pub && bytes && in_scratch(s, k->buf, bytes)) k->flags = KACC_F_SCRATCH;
        } else {                        /* the rank packs / unpacks, the module moves the bytes */
            if (!(x->tmp[i] = malloc(bytes ? bytes : 1))) kumi_err_fatal("kumi_base_sched_engine=kmod: out of memory");
            k->buf = (uint64_t)(uintptr_t)x->tmp[i];
            k->flags = send ? KACC_F_USER_PRE : KACC_F_USER_POST;
        }
        return;
    }
    case KUMI_SCHED_CALC: {
        struct kumi_op *op = kumi_op_get((MPI_Op)(uintptr_t)nd->dt2);
        int t = dt && contig(dt, nd->count) ? kacc_type(dt) : 0, o = op ? kacc_op(op) : 0;
        bool bits = o == KACC_OP_BAND || o == KACC_OP_BOR || o == KACC_OP_BXOR;
        if (t && o && !((t == KACC_T_F32 || t == KACC_T_F64) && bits)) {
            k->kind = KACC_CALC;
            k->type = (uint8_t)t;
            k->op = (uint8_t)o;
            k->buf = data_addr(nd->buf, dt, (size_t)nd->count);
            k->buf2 = data_addr(nd->buf2, dt, (size_t)nd->count);
            k->len = bytes;
            return;
        }
        break;
    }
    case KUMI_SCHED_COPY: {
        struct kumi_dt *dt2 = kumi_dt_get((MPI_Datatype)(uintptr_t)nd->dt2);
        size_t dbytes = dt2 ? (size_t)nd->count2 * dt2->size : 0;
        if (contig(dt, nd->count) && contig(dt2, nd->count2) && bytes <= dbytes) {
            k->kind = KACC_COPY;
            k->buf = data_addr(nd->buf, dt, (size_t)nd->count);
            k->buf2 = data_addr(nd->buf2, dt2, (size_t)nd->count2);
            k->len = bytes;
            return;
        }
        break;
    }
    default:
        k->kind = KACC_NOP;
        return;
    }
    k->kind = KACC_NOP;                 /* the rank does it */
    k->flags = KACC_F_USER_PRE;
}

static void kx_free(struct kx *x)
{
    if (!x) return;
    if (x->tmp) {
        for (uint32_t i = 0; i < x->n; i++) free(x->tmp[i]);
        free(x->tmp);
    }
    if (x->len && up) area_free(x->off, x->len);
    free(x);
}

/* Registrations kept for reuse (kumi_base_sched_kmod_reuse): drop the i-th (unregistered,
 * its block freed). */
static void kept_drop(int i)
{
    struct kx *x = kept[i];
    memmove(&kept[i], &kept[i + 1], (size_t)(nkept - i - 1) * sizeof *kept);
    nkept--;
    if (up) ioctl(devfd, KACC_IOC_UNREGISTER, &x->id);
    kx_free(x);
}

/* The kept registration whose nodes and successors are these bytes, taken out; NULL if none. */
static struct kx *kept_take(const struct kacc_node *nk, uint32_t n, const uint32_t *sc, uint32_t nsucc)
{
    size_t nodes = (size_t)n * sizeof *nk;
    for (int i = nkept - 1; i >= 0; i--) {
        struct kx *x = kept[i];
        if (x->n != n || x->nsucc != nsucc || memcmp(x->kn, nk, nodes) ||
            memcmp((const char *)x->kn + nodes, sc, (size_t)nsucc * 4))
            continue;
        memmove(&kept[i], &kept[i + 1], (size_t)(nkept - i - 1) * sizeof *kept);
        nkept--;
        return x;
    }
    return NULL;
}

/* Put s into the area and register it, or take a kept registration of the same nodes; MPI
 * error code. */
static int build(struct kumi_sched *s)
{
    uint32_t n = s->n, nsucc = 0;
    for (uint32_t i = 0; i < n; i++) nsucc += s->node[i].nsucc;
    size_t nodes = (size_t)n * sizeof(struct kacc_node), succ = ((size_t)nsucc * 4 + 7) & ~(size_t)7;
    size_t len = nodes + succ + sizeof(struct kacc_state) + n;
    struct kx *x = calloc(1, sizeof *x);
    if (!x || !(x->tmp = calloc(n, sizeof *x->tmp))) {
        free(x);
        return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", s->req->fname);
    }
    x->s = s;
    x->n = n;
    x->nsucc = nsucc;
    /* a non-blocking collective: translated aside first, to compare with the kept ones */
    bool reuse = reuse_max > 0 && !s->req->persistent && !s->cad, aside = false;
    if (reuse && nodes > tcap) {
        struct kacc_node *t = realloc(tnodes, nodes);
        if (t) { tnodes = t; tcap = nodes; } else reuse = false;
    }
    if (reuse) {
        x->kn = tnodes;
        aside = true;
        for (uint32_t i = 0; i < n; i++) translate(s, x, i);
        for (uint32_t i = 0; i < n && reuse; i++)
            if (x->tmp[i]) reuse = false;       /* packed data: buffers of its own, new each time */
        struct kx *k = reuse ? kept_take(tnodes, n, s->succ, nsucc) : NULL;
        if (k) {
            kx_free(x);
            k->s = s;
            s->kx = k;
            nreused++;
            return MPI_SUCCESS;
        }
    }
    size_t off = area_alloc(len);
    while (!off && nkept > 0) {         /* room from the kept ones, the oldest first */
        kept_drop(0);
        off = area_alloc(len);
    }
    if (!off) {
        kx_free(x);
        return kumi_error(MPI_ERR_NO_MEM, "%s: the schedule (%u nodes) does not fit in the area shared with the "
                          "KACC module (kumi_base_sched_kmod_area_mb = %lld)", s->req->fname, n, area_mb);
    }
    x->off = off;
    x->len = len;
    x->kn = (struct kacc_node *)(area + off);
    uint32_t *sc = (uint32_t *)(area + off + nodes);
    x->st = (struct kacc_state *)(area + off + nodes + succ);
    x->uflag = (uint8_t *)(area + off + nodes + succ + sizeof(struct kacc_state));
    if (aside) memcpy(x->kn, tnodes, nodes);
    else for (uint32_t i = 0; i < n; i++) translate(s, x, i);
    memcpy(sc, s->succ, (size_t)nsucc * 4);
    memset(x->st, 0, sizeof *x->st);
    memset(x->uflag, 0, n);
    x->reusable = reuse;
    struct kacc_reg r = {
        .nodes_off = off, .succ_off = off + nodes, .state_off = off + nodes + succ,
        .uflag_off = off + nodes + succ + sizeof(struct kacc_state), .n = n, .nsucc = nsucc,
        .flags = reuse ? KACC_REG_RUNPIN : 0,
    };
    if (ioctl(devfd, KACC_IOC_REGISTER, &r) != 0) {
        int e = errno;
        kx_free(x);
        return kumi_error(e == EFAULT ? MPI_ERR_BUFFER : MPI_ERR_OTHER, "%s: the KACC module refused the schedule "
                          "(%s)", s->req->fname, strerror(e));
    }
    x->id = r.id;
    s->kx = x;
    return MPI_SUCCESS;
}

bool kumi_sched_kmod_start(struct kumi_sched *s)
{
    if (!up) return false;
    if (!s->kx) {
        int rc = build(s);
        if (rc != MPI_SUCCESS) {
            kumi_sched_engine_done(s, rc);
            return true;
        }
    }
    struct kx *x = s->kx;
    memset(x->uflag, 0, s->n);
    x->useq = __atomic_load_n(&x->st->useq, __ATOMIC_ACQUIRE);
    s->rerr = MPI_SUCCESS;
    struct kacc_start t = { .id = x->id, .tagoff = s->tagbase };
    if (ioctl(devfd, KACC_IOC_START_TAG, &t) != 0) {
        int e = errno;          /* EFAULT: a buffer (pinned at each start) is not the rank's memory */
        kumi_sched_engine_done(s, kumi_error(e == EFAULT ? MPI_ERR_BUFFER : MPI_ERR_OTHER, "%s: the KACC module did "
                                             "not start the schedule (%s)", s->req->fname, strerror(e)));
        return true;
    }
    nruns++;
    x->running = true;
    x->next = running;
    running = x;
    return true;
}

void kumi_sched_kmod_free(struct kumi_sched *s)
{
    struct kx *x = s->kx;
    if (!x) return;
    s->kx = NULL;
    if (up && x->reusable && !x->running && reuse_max > 0) {   /* kept for the next one like it */
        int cap = reuse_max > 1024 ? 1024 : (int)reuse_max;
        if (!kept && (kept = calloc((size_t)cap, sizeof *kept))) kept_cap = cap;
        if (kept_cap > 0) {
            if (nkept >= kept_cap) kept_drop(0);
            x->s = NULL;
            kept[nkept++] = x;
            return;
        }
    }
    if (up) ioctl(devfd, KACC_IOC_UNREGISTER, &x->id);
    if (x->running) {                   /* the module keeps it to the end: its block stays taken */
        for (struct kx **pp = &running; *pp; pp = &(*pp)->next)
            if (*pp == x) { *pp = x->next; break; }
        nfree_running++;
        x->len = 0;
    }
    kx_free(x);
}

static void node_done(struct kx *x, uint32_t i, int err)
{
    struct kacc_node_done d = { .id = x->id, .node = i, .err = err == MPI_SUCCESS ? 0 : -EIO };
    if (err != MPI_SUCCESS && x->s->rerr == MPI_SUCCESS) x->s->rerr = err;
    if (ioctl(devfd, KACC_IOC_NODE_DONE, &d) != 0)
        kumi_err_fatal("kumi_base_sched_engine=kmod: the module refused the end of node %u: %s", i, strerror(errno));
}

/* A message of node cb_idx to a peer outside the module is over. */
static void msg_done(struct kumi_req *r)
{
    struct kumi_sched *s = r->ext;
    uint32_t i = (uint32_t)r->cb_idx;
    int e = r->status.MPI_ERROR;
    if (e == MPI_ERR_TRUNCATE)
        e = kumi_error(MPI_ERR_TRUNCATE, "%s: a message of %llu bytes from rank %d was truncated to %zu bytes "
                       "(the ranks disagree on counts or datatypes)", s->req->fname,
                       (unsigned long long)r->msglen, r->status.MPI_SOURCE, r->rx.cap);
    kumi_req_free(r);
    if (s->kx) node_done(s->kx, i, e);
}

/* The rank's step of node i (flagged by the module). */
static void user_step(struct kumi_sched *s, struct kx *x, uint32_t i)
{
    const struct kumi_sched_node *nd = &s->node[i];
    const struct kacc_node *k = &x->kn[i];
    int rc = MPI_SUCCESS;
    nuser++;
    switch (nd->kind) {
    case KUMI_SCHED_SEND:
    case KUMI_SCHED_RECV: {
        struct kumi_dt *dt = kumi_dt_get((MPI_Datatype)(uintptr_t)nd->dt);
        size_t bytes = (size_t)nd->count * dt->size;
        if (x->tmp[i] && nd->kind == KUMI_SCHED_SEND) {
            rc = kumi_dt_copy((const void *)(uintptr_t)nd->buf, (size_t)nd->count, (MPI_Datatype)(uintptr_t)nd->dt,
                              x->tmp[i], bytes, MPI_BYTE);
        } else if (x->tmp[i]) {
            rc = kumi_dt_copy(x->tmp[i], bytes, MPI_BYTE, (void *)(uintptr_t)nd->buf, (size_t)nd->count,
                              (MPI_Datatype)(uintptr_t)nd->dt);
        } else if (k->kind == KACC_NOP) {
            bool send = nd->kind == KUMI_SCHED_SEND;
            struct kumi_comm *c = s->comm;
            struct kumi_req *r = kumi_req_internal(send ? KUMI_REQ_SEND : KUMI_REQ_RECV, c, c->ctx + 1,
                                                   s->req->fname, (void *)(uintptr_t)nd->buf, (size_t)nd->count,
                                                   dt, nd->peer, s->tagbase + nd->tag, msg_done, s, (int)i);
            if (!r) { rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", s->req->fname); break; }
            rc = send ? kumi_req_start_send(r) : kumi_req_start_recv(r);
            if (rc != MPI_SUCCESS) { kumi_req_free(r); break; }
            return;                     /* msg_done answers the module */
        }
        break;
    }
    case KUMI_SCHED_CALC:
        rc = kumi_op_reduce((MPI_Op)(uintptr_t)nd->dt2, (const void *)(uintptr_t)nd->buf, (void *)(uintptr_t)nd->buf2,
                            (size_t)nd->count, (MPI_Datatype)(uintptr_t)nd->dt);
        break;
    case KUMI_SCHED_COPY:
        rc = kumi_dt_copy((const void *)(uintptr_t)nd->buf, (size_t)nd->count, (MPI_Datatype)(uintptr_t)nd->dt,
                          (void *)(uintptr_t)nd->buf2, (size_t)nd->count2, (MPI_Datatype)(uintptr_t)nd->dt2);
        break;
    default:
        break;
    }
    node_done(x, i, rc);
}

static int run_error(struct kumi_sched *s, int kerr)
{
    if (kerr == -EMSGSIZE)
        return kumi_error(MPI_ERR_TRUNCATE, "%s: a message was truncated (the ranks disagree on counts or datatypes)",
                          s->req->fname);
    return kumi_error(MPI_ERR_OTHER, "%s: the KACC module failed the schedule: %s", s->req->fname, strerror(-kerr));
}

/* The progress hook: schedules over, nodes flagged for the rank, connections to accept. */
static int complete(void)
{
    if (!up) return 0;
    int n = 0;
    if (nwaiting > 0) n += accept_some();
    if (__atomic_load_n(&ahdr->kpend, __ATOMIC_RELAXED)) ioctl(devfd, KACC_IOC_PROGRESS);   /* handed to this rank */
    uint32_t ev = __atomic_load_n(&ahdr->events, __ATOMIC_ACQUIRE);
    if (ev == ahdr->acked) return n;
    __atomic_store_n(&ahdr->acked, ev, __ATOMIC_RELEASE);
    for (struct kx *x = running, *nx; x; x = nx) {
        nx = x->next;
        struct kumi_sched *s = x->s;
        uint32_t q = __atomic_load_n(&x->st->useq, __ATOMIC_ACQUIRE);
        if (q != x->useq) {
            x->useq = q;
            for (uint32_t i = 0; i < s->n; i++)
                if (__atomic_load_n(&x->uflag[i], __ATOMIC_ACQUIRE)) {
                    x->uflag[i] = 0;
                    user_step(s, x, i);
                    n++;
                }
        }
        if (__atomic_load_n(&x->st->state, __ATOMIC_ACQUIRE) == KACC_S_DONE) {
            for (struct kx **pp = &running; *pp; pp = &(*pp)->next)
                if (*pp == x) { *pp = x->next; break; }
            x->running = false;
            x->st->state = KACC_S_IDLE;
            int kerr = x->st->err, rc = s->rerr;
            if (rc == MPI_SUCCESS && kerr) rc = run_error(s, kerr);
            kumi_sched_engine_done(s, rc);     /* may free s (and x) */
            n++;
        }
    }
    return n;
}

static int fds(struct pollfd *f, int max)
{
    if (!up || max < 1) return 0;
    int n = 0;
    f[n].fd = devfd;
    f[n].events = POLLIN;
    f[n++].revents = 0;
    if (nwaiting > 0 && n < max) {
        f[n].fd = lfd;
        f[n].events = POLLIN;
        f[n++].revents = 0;
    }
    return n;
}
#endif
