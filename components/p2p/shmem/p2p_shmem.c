/* p2p/shmem: shared memory between ranks on the same host.
 *
 * Segments.  Each rank creates one segment at init,
 * shm_open("/kumi.<jobid>.<rank>.<token>") (so /dev/shm/kumi.<jobid>.<rank>.<token>;
 * mpiexec removes every /dev/shm/kumi.<jobid>.* however the job ends; a normal
 * finalize unlinks its own).  The token is 32 hex digits of an HMAC keyed with
 * the job secret (p2p_jobkey.h): only members of the job can compute a
 * segment's name, so another local user cannot create it first.  It is
 * created with O_EXCL and mode 0600 (an existing file of that name is not the
 * job's: shared memory is then not used by that rank, and it says so), and a
 * peer maps it only after fstat shows a regular file of this user, mode 0600,
 * of the expected size, and the device and inode its creator published.  It holds a header
 * page (pid, the "sleeping" word of the doorbell, the CMA verdicts) and one
 * ring per possible sender: ring s of rank r's segment carries s -> r.  A
 * sender maps the receiver's segment lazily, on its first send there.
 *
 * Rings.  Single producer / single consumer, lock-free: two 64-bit byte
 * counters (tail written by the sender, head by the receiver, each on its own
 * cache lines) over a power-of-two byte area; C11 acquire/release only.
 * Records are made of 64-byte cells: a record cell {type, aux, kumi_hdr}
 * (exactly one cache line), then for
 *   MSG  the payload inline (hdr.paylen bytes, padded to 64): eager copy-in /
 *        copy-out; a payload larger than the free space streams through the
 *        ring in pieces (the sender pushes more from progress() as the
 *        receiver frees space): this is also the pipelined two-copy path
 *        for large messages when CMA is not possible;
 *   CMA  one more cell {address, cookie}: the receiver copies the payload
 *        with process_vm_readv straight from the sender's buffer into rx->dst
 *        (one copy), then answers with an ACK record carrying the cookie; the
 *        sender keeps the sendop until that ACK and only then calls done();
 *   ACK  (aux = cookie low, hdr.sreq = cookie) completion of a CMA record.
 * Rendezvous messages of at least p2p_shmem_cma_min bytes use CMA when the
 * receiver has said it can read the sender (below): p2p_shmem_rget() says so
 * to the request layer, whose RTS (marked KUMI_HDR_F_RGET) then goes as a CMA
 * record; the receiver keeps the descriptor until a receive matches and the
 * request layer calls p2p_shmem_pull(), which copies and answers ACK (no CTS
 * and no DATA message).  A DATA message of the CTS/DATA protocol goes the
 * same way.  Eager messages and smaller payloads always go inline.
 *
 * CMA detection.  p2p_shmem_cma = auto|on|off.  At start-up (auto/on) the
 * component checks that process_vm_readv works at all (on itself), reads the
 * Yama ptrace_scope (2 and 3 refuse it) and, under scope 1, allows any
 * process of the user to read it (PR_SET_PTRACER_ANY) since the ranks are
 * siblings, not descendants.  At wireup each rank reads a published probe word
 * of every same-host peer with process_vm_readv and stores the verdict per
 * sender in its segment header (1 can read, 2 cannot); a sender uses CMA
 * towards a receiver only once that verdict says 1 (while unknown: inline).
 * The start-up result is the read-only-in-spirit parameter
 * p2p_shmem_cma_status, which kumi_info --param p2p shmem shows.
 *
 * Doorbell.  The fast path makes no system call.  A rank about to sleep
 * (pollfds(), called by the progress engine before poll()) stores 1 in its
 * segment's sleeping word, then re-checks its rings (and the rings it waits
 * to write into); if nothing is there it hands out its doorbell: an
 * abstract-namespace UNIX datagram socket "\0kumi.<jobid>.<rank>.<token>"
 * (nothing on disk; the token as above, from another label, so that the
 * name cannot be bound by someone else first).  A writer publishes its tail, makes a full fence, and when the
 * receiver's word is 1 swaps it to 2 and sends one byte (so one datagram per
 * sleep, whatever the number of writers).  A reader that freed ring space
 * does the same for the sender of that ring (a sender may sleep waiting for
 * space or for an ACK).  progress() clears the word and drains the socket,
 * unless another thread of this process still sleeps on it (the thread
 * engine's progress thread while the application polls): pollfds(NULL, 0)
 * tells that a sleep is over.
 *
 * A peer that dies mid-transfer leaves its ring silent; the job is ended by
 * mpiexec (which also removes the segments).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <kumi/p2p.h>
#include "p2p_jobkey.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/un.h>

#define P2P_SHMEM_MAGIC    0x4b554d53484d454dull   /* "KUMSHMEM" */
#define P2P_SHMEM_CELL     64
#define P2P_SHMEM_CTL      256                    /* ring control block */
#define P2P_SHMEM_BATCH    64                     /* records read from one ring per progress() */

enum { P2P_SHMEM_REC_MSG = 1, P2P_SHMEM_REC_CMA, P2P_SHMEM_REC_ACK };
enum { P2P_SHMEM_CMA_UNKNOWN = 0, P2P_SHMEM_CMA_YES = 1, P2P_SHMEM_CMA_NO = 2 };

struct p2p_shmem_seghdr {
    uint64_t magic;
    int32_t pid;
    int32_t nranks;
    uint64_t ringsize;
    uint64_t hdrsize;
    char pad0[64 - 32];
    _Atomic int sleeping;                 /* 0 awake, 1 sleeping, 2 rung (own line) */
    char pad1[64 - sizeof(int)];
    _Atomic unsigned char canread[];      /* per sender: P2P_SHMEM_CMA_* */
};

struct p2p_shmem_ringctl {
    _Atomic uint64_t tail;                /* bytes written (sender) */
    char pad0[128 - 8];
    _Atomic uint64_t head;                /* bytes consumed (receiver) */
    char pad1[128 - 8];
};

struct p2p_shmem_rec {                   /* one cell */
    uint32_t type;
    uint32_t aux;
    struct kumi_hdr hdr;
};

struct p2p_shmem_cmadesc {               /* the cell after a CMA record */
    uint64_t addr;
    uint64_t cookie;
    int32_t pid;
    char pad[64 - 20];
};

_Static_assert(sizeof(struct p2p_shmem_rec) == P2P_SHMEM_CELL, "record cell is one cache line");
_Static_assert(sizeof(struct p2p_shmem_cmadesc) == P2P_SHMEM_CELL, "descriptor is one cell");
_Static_assert(sizeof(struct p2p_shmem_ringctl) == P2P_SHMEM_CTL, "ring control size");

struct p2p_shmem_peer {
    int same_host;
    int pid;
    unsigned long long segdev, segino;   /* of the segment its creator made */
    /* the peer's segment (mapped lazily) */
    struct p2p_shmem_seghdr *seg;
    size_t seglen;
    int attach_failed;
    /* sending: ring me -> peer, in the peer's segment */
    struct p2p_shmem_ringctl *octl;
    char *odata;
    uint64_t otail, ohead;                /* our tail; cached head */
    int cma;                              /* cached verdict of the peer on us */
    struct kumi_sendop *qhead, *qtail;    /* queued (head op may be half written) */
    int qhdr_done;                        /* record cell(s) of qhead written */
    struct kumi_sendop *acks;             /* CMA ops waiting for the peer's ACK */
    /* receiving: ring peer -> me, in our segment */
    struct p2p_shmem_ringctl *ictl;
    char *idata;
    uint64_t ihead, itail;                /* our head; cached tail */
    int in_msg;
    struct kumi_hdr ihdr;
    struct kumi_rx *rx;
    size_t paylen, paygot;
    struct sockaddr_un bell;
    socklen_t bell_len;
};

/* parameters */
static size_t p2p_shmem_eager, p2p_shmem_ringsz, p2p_shmem_cma_min;
static const char *p2p_shmem_cma_mode;
static const char *p2p_shmem_cma_status;
static char p2p_shmem_cma_status_buf[160];

/* state */
static int p2p_shmem_me = -1, p2p_shmem_size;
static char p2p_shmem_jobid[64];
static char p2p_shmem_segname[128];
static int p2p_shmem_created;             /* p2p_shmem_segname is ours to unlink */
static struct p2p_shmem_seghdr *p2p_shmem_seg;
static size_t p2p_shmem_seglen;
static struct p2p_shmem_peer *p2p_shmem_peers;
static int *p2p_shmem_local;              /* same-host peers (not me) */
static int p2p_shmem_nlocal;
static int p2p_shmem_bellfd = -1, p2p_shmem_readyfd = -1;
static int p2p_shmem_cma_ok;              /* this rank may try CMA at all */
/* Threads of this process asleep on the doorbell (the progress thread of the
 * thread engine while the application polls, or the other way round); while
 * one sleeps, progress() leaves the sleeping word and the socket to it, or
 * writers would stop ringing a sleeper that still waits.  Changed under the
 * library lock (pollfds() is called with it held). */
static int p2p_shmem_sleepers;
static size_t p2p_shmem_nqueued;          /* ops queued or waiting for an ACK */
static int p2p_shmem_in_progress;
static volatile uint64_t p2p_shmem_probe = P2P_SHMEM_MAGIC;   /* peers read this with CMA */

/* ------------------------------------------------------------------ */
/* parameters, open */

static int p2p_shmem_yama(void)
{
    int v = -1;
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (f) {
        if (fscanf(f, "%d", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
}

/* Start-up detection: may this process use process_vm_readv at all? */
static int p2p_shmem_cma_detect(char *why, size_t whylen)
{
    uint64_t v = 0;
    struct iovec l = { &v, sizeof v }, r = { (void *)&p2p_shmem_probe, sizeof v };
    int scope;
    if (strcmp(p2p_shmem_cma_mode, "off") == 0) {
        snprintf(why, whylen, "off (p2p_shmem_cma=off): pipelined two-copy through the rings");
        return 0;
    }
    if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)sizeof v || v != P2P_SHMEM_MAGIC) {
        snprintf(why, whylen, "refused (process_vm_readv: %s): pipelined two-copy through the rings",
                 strerror(errno));
        return 0;
    }
    scope = p2p_shmem_yama();
    if (scope >= 2) {
        snprintf(why, whylen, "refused (Yama ptrace_scope=%d): pipelined two-copy through the rings",
                 scope);
        return 0;
    }
    snprintf(why, whylen, "single copy with process_vm_readv (CMA) for payloads >= %zu bytes%s",
             p2p_shmem_cma_min, scope == 1 ? " (Yama scope 1: PR_SET_PTRACER_ANY)" : "");
    return 1;
}

static void p2p_shmem_register(void)
{
    kumi_param_register_size("p2p", "shmem", "eager_limit", 64 * 1024,
                             "Largest message sent eagerly through shared memory (copied in and "
                             "out of the ring); larger ones use rendezvous",
                             KUMI_LEVEL_TUNER, &p2p_shmem_eager);
    kumi_param_register_size("p2p", "shmem", "ring_size", 256 * 1024,
                             "Bytes of each per-pair ring (a power of two, at least 4k)",
                             KUMI_LEVEL_TUNER, &p2p_shmem_ringsz);
    kumi_param_register_string("p2p", "shmem", "cma", "auto",
                               "Single-copy transfers with process_vm_readv (CMA): auto (use it "
                               "where the kernel allows), on (warn if refused), off (always the "
                               "pipelined two-copy path)",
                               KUMI_LEVEL_USER, &p2p_shmem_cma_mode);
    kumi_param_register_size("p2p", "shmem", "cma_min", 16 * 1024,
                             "Smallest payload moved with CMA rather than through the ring",
                             KUMI_LEVEL_TUNER, &p2p_shmem_cma_min);
    if (!p2p_shmem_cma_mode || (strcmp(p2p_shmem_cma_mode, "auto") && strcmp(p2p_shmem_cma_mode, "on") &&
                                strcmp(p2p_shmem_cma_mode, "off"))) {
        static int warned;
        if (!warned++)
            kumi_warn("p2p/shmem: p2p_shmem_cma must be auto, on or off (not '%s'); using auto",
                      p2p_shmem_cma_mode ? p2p_shmem_cma_mode : "");
        p2p_shmem_cma_mode = "auto";
    }
    p2p_shmem_cma_ok = p2p_shmem_cma_detect(p2p_shmem_cma_status_buf, sizeof p2p_shmem_cma_status_buf);
    kumi_param_register_string("p2p", "shmem", "cma_status", p2p_shmem_cma_status_buf,
                               "Read-only: what large transfers use on this machine (detected at "
                               "start-up; setting it changes nothing)",
                               KUMI_LEVEL_USER, &p2p_shmem_cma_status);
}

static int p2p_shmem_open(char *why, size_t whylen)
{
    /* shm_open works on /dev/shm; creating nothing here keeps kumi_info and
     * failed starts from leaving objects outside the /kumi.<jobid>.* names */
    if (access("/dev/shm", W_OK | X_OK) != 0) {
        snprintf(why, whylen, "no usable /dev/shm (%s)", strerror(errno));
        return KUMI_UNAVAILABLE;
    }
    return KUMI_OK;
}

/* ------------------------------------------------------------------ */
/* segments */

static size_t p2p_shmem_hdrsize(int n)
{
    size_t h = sizeof(struct p2p_shmem_seghdr) + (size_t)n;
    return (h + 4095) & ~(size_t)4095;
}

/* The unpredictable part of rank's names: 32 hex digits of an HMAC of the
 * job secret (what: "segment" or "doorbell").  -1 without a secret. */
static int p2p_shmem_token(const char *what, int rank, char tok[33])
{
    char label[160];
    snprintf(label, sizeof label, "kumi p2p/shmem %s %s %d", what, p2p_shmem_jobid, rank);
    return p2p_jobkey_derive_hex(label, tok, 32);
}

static void p2p_shmem_name(char *buf, size_t len, int rank)
{
    char tok[33];
    if (p2p_shmem_token("segment", rank, tok) != 0) tok[0] = 0;
    snprintf(buf, len, "/kumi.%s.%d.%s", p2p_shmem_jobid, rank, tok);
}

/* Is the segment open on fd the one rank made for this job?  (A regular file
 * of this user, not readable or writable by anyone else, of the size the
 * job's parameters give, and, for a peer's, the device and inode its creator
 * published.)  If not, says why in why. */
static int p2p_shmem_check(int fd, const struct p2p_shmem_peer *p, char *why, size_t whylen)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, whylen, "fstat: %s", strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "not a regular file");
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, whylen, "owned by uid %u, not %u", (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(why, whylen, "mode %03o, not 600", (unsigned)(st.st_mode & 0777));
        return -1;
    }
    if ((size_t)st.st_size != p2p_shmem_seglen) {
        snprintf(why, whylen, "%lld bytes, not %zu", (long long)st.st_size, p2p_shmem_seglen);
        return -1;
    }
    if (p && ((unsigned long long)st.st_dev != p->segdev || (unsigned long long)st.st_ino != p->segino)) {
        snprintf(why, whylen, "not the file its rank created (inode %llu, not %llu)",
                 (unsigned long long)st.st_ino, p->segino);
        return -1;
    }
    return 0;
}

/* Open rank's segment and check it (p2p_shmem_check); -1 with why set, or
 * -2 when there is no such segment (any more: a rank that finished unlinks
 * its own, so this is no sign of an intruder). */
static int p2p_shmem_open_peer(const struct p2p_shmem_peer *p, int rank, char *name, size_t namelen,
                               char *why, size_t whylen)
{
    int fd;
    p2p_shmem_name(name, namelen, rank);
    fd = shm_open(name, O_RDWR | O_NOFOLLOW, 0);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return errno == ENOENT ? -2 : -1;
    }
    if (p2p_shmem_check(fd, p, why, whylen) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static struct p2p_shmem_ringctl *p2p_shmem_ring(struct p2p_shmem_seghdr *seg, int sender, char **data)
{
    char *base = (char *)seg + seg->hdrsize + (size_t)sender * (P2P_SHMEM_CTL + seg->ringsize);
    *data = base + P2P_SHMEM_CTL;
    return (struct p2p_shmem_ringctl *)base;
}

/* Map in the pages of a ring now (allocated if need be, and this process's
 * page tables filled): otherwise the first few thousand messages of a pair
 * each take a page fault every 64 cells.  Best effort: without
 * MADV_POPULATE_WRITE (Linux 5.14) the ring fills its pages as it goes. */
static void p2p_shmem_prefault(struct p2p_shmem_ringctl *ctl)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t a = (uintptr_t)ctl & ~(uintptr_t)4095;
    size_t len = ((uintptr_t)ctl + P2P_SHMEM_CTL + p2p_shmem_ringsz - a + 4095) & ~(size_t)4095;
    if (madvise((void *)a, len, MADV_POPULATE_WRITE) != 0)
        kumi_log(3, "p2p/shmem: MADV_POPULATE_WRITE: %s", strerror(errno));
#else
    (void)ctl;
#endif
}

static int p2p_shmem_attach(struct p2p_shmem_peer *p, int rank)
{
    char name[128], why[160];
    void *m;
    int fd;
    if (p->seg) return 0;
    if (p->attach_failed) return -1;
    fd = p2p_shmem_open_peer(p, rank, name, sizeof name, why, sizeof why);
    if (fd < 0) {
        if (fd == -1)
            kumi_warn("p2p/shmem: segment /dev/shm%s of rank %d is not this job's (%s)", name, rank, why);
        p->attach_failed = 1;
        return -1;
    }
    m = mmap(NULL, p2p_shmem_seglen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        p->attach_failed = 1;
        return -1;
    }
    p->seg = m;
    p->seglen = p2p_shmem_seglen;
    if (p->seg->magic != P2P_SHMEM_MAGIC || p->seg->ringsize != p2p_shmem_ringsz) {
        munmap(m, p->seglen);
        p->seg = NULL;
        p->attach_failed = 1;
        return -1;
    }
    p->octl = p2p_shmem_ring(p->seg, p2p_shmem_me, &p->odata);
    p2p_shmem_prefault(p->octl);
    p->otail = atomic_load_explicit(&p->octl->tail, memory_order_relaxed);
    p->ohead = atomic_load_explicit(&p->octl->head, memory_order_acquire);
    return 0;
}

/* ------------------------------------------------------------------ */
/* doorbell */

static void p2p_shmem_bell_addr(struct sockaddr_un *sa, socklen_t *len, int rank)
{
    int n;
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    char tok[33];
    if (p2p_shmem_token("doorbell", rank, tok) != 0) tok[0] = 0;
    n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "kumi.%s.%d.%s", p2p_shmem_jobid, rank, tok);
    if (n < 0) n = 0;
    if ((size_t)n > sizeof sa->sun_path - 2) n = (int)sizeof sa->sun_path - 2;
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* After publishing something in a ring of rank p's: wake p if it sleeps. */
static void p2p_shmem_ring_bell(struct p2p_shmem_peer *p)
{
    int one = 1;
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&p->seg->sleeping, memory_order_relaxed) == 1 &&
        atomic_compare_exchange_strong(&p->seg->sleeping, &one, 2)) {
        char b = 1;
        ssize_t w = sendto(p2p_shmem_bellfd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
                           (struct sockaddr *)&p->bell, p->bell_len);
        (void)w;
    }
}

/* ------------------------------------------------------------------ */
/* init, wireup */

static void p2p_shmem_cleanup(void)
{
    if (p2p_shmem_peers) {
        for (int r = 0; r < p2p_shmem_size; r++)
            if (p2p_shmem_peers[r].seg) munmap(p2p_shmem_peers[r].seg, p2p_shmem_peers[r].seglen);
        free(p2p_shmem_peers);
        p2p_shmem_peers = NULL;
    }
    free(p2p_shmem_local);
    p2p_shmem_local = NULL;
    p2p_shmem_nlocal = 0;
    if (p2p_shmem_seg) {
        munmap(p2p_shmem_seg, p2p_shmem_seglen);
        p2p_shmem_seg = NULL;
    }
    if (p2p_shmem_created) shm_unlink(p2p_shmem_segname);   /* never a name someone else made */
    p2p_shmem_created = 0;
    if (p2p_shmem_bellfd >= 0) close(p2p_shmem_bellfd);
    if (p2p_shmem_readyfd >= 0) close(p2p_shmem_readyfd);
    p2p_shmem_bellfd = p2p_shmem_readyfd = -1;
    p2p_shmem_nqueued = 0;
}

/* Init failed: say why on stderr, once per rank (the request layer then
 * leaves this transport out and same-host peers go over the next one; a
 * silent fall-back to TCP would hide a misconfiguration or an attack), undo
 * what was made, and return the error.  everyone: the reason is the same on
 * every rank (a parameter), so only rank 0 prints it. */
static int p2p_shmem_fail(int cls, int everyone, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int p2p_shmem_fail(int cls, int everyone, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p2p_shmem_cleanup();
    if (!everyone || p2p_shmem_me == 0)
        kumi_warn("p2p/shmem: not used: %s; same-host peers go over another transport", msg);
    return kumi_error(cls, "p2p/shmem: %s", msg);
}

static int p2p_shmem_init(void)
{
    const char *jobid = getenv("KUMI_JOBID");
    char val[160], why[160];
    struct statvfs vfs;
    struct sockaddr_un sa;
    struct stat st;
    socklen_t salen;
    int fd;

    p2p_shmem_me = kumi_world_rank();
    p2p_shmem_size = kumi_world_size();
    if (p2p_shmem_size <= 1) return MPI_SUCCESS;     /* nobody to reach: nothing to create */
    if (p2p_shmem_ringsz < 4096 || (p2p_shmem_ringsz & (p2p_shmem_ringsz - 1)))
        return p2p_shmem_fail(MPI_ERR_OTHER, 1, "p2p_shmem_ring_size (%zu) must be a power of "
                              "two of at least 4096", p2p_shmem_ringsz);
    if (!p2p_jobkey_secret())
        return p2p_shmem_fail(MPI_ERR_OTHER, 1, "no job secret (KUMI_JOB_SECRET) to name the "
                              "segments with");
    snprintf(p2p_shmem_jobid, sizeof p2p_shmem_jobid, "%s", jobid && *jobid ? jobid : "0");
    p2p_shmem_name(p2p_shmem_segname, sizeof p2p_shmem_segname, p2p_shmem_me);
    p2p_shmem_seglen = p2p_shmem_hdrsize(p2p_shmem_size) +
                       (size_t)p2p_shmem_size * (P2P_SHMEM_CTL + p2p_shmem_ringsz);
    /* tmpfs pages are allocated when first written: a ring costs memory only
     * once its sender uses it.  Ask for room for 16 busy rings per rank
     * (writing past a full /dev/shm would be SIGBUS, not an error). */
    {
        double want = (double)p2p_shmem_hdrsize(p2p_shmem_size) +
                      (double)(p2p_shmem_size < 16 ? p2p_shmem_size : 16) *
                      (double)(P2P_SHMEM_CTL + p2p_shmem_ringsz);
        if (statvfs("/dev/shm", &vfs) == 0 &&
            (double)vfs.f_bavail * (double)vfs.f_bsize < want * (p2p_shmem_size < 16 ? p2p_shmem_size : 16))
            return p2p_shmem_fail(MPI_ERR_OTHER, 0, "not enough room in /dev/shm (%.0f bytes free)",
                                  (double)vfs.f_bavail * (double)vfs.f_bsize);
    }

    p2p_shmem_peers = calloc((size_t)p2p_shmem_size, sizeof *p2p_shmem_peers);
    p2p_shmem_local = calloc((size_t)p2p_shmem_size, sizeof *p2p_shmem_local);
    if (!p2p_shmem_peers || !p2p_shmem_local)
        return p2p_shmem_fail(MPI_ERR_NO_MEM, 0, "out of memory");

    /* O_EXCL: a file of this name that exists already is not ours (the name
     * is new to this job), whoever made it */
    fd = shm_open(p2p_shmem_segname, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
    if (fd < 0) {
        int e = errno;
        char n[160] = "", o[64] = "";
        snprintf(n, sizeof n, "/dev/shm%s", p2p_shmem_segname);
        if (e == EEXIST && lstat(n, &st) == 0)
            snprintf(o, sizeof o, ", owner uid %u", (unsigned)st.st_uid);
        if (e == EEXIST)
            return p2p_shmem_fail(MPI_ERR_OTHER, 0, "segment %s exists already and is not this "
                                  "job's%s", n, o);
        return p2p_shmem_fail(MPI_ERR_OTHER, 0, "shm_open %s: %s", n, strerror(e));
    }
    p2p_shmem_created = 1;
    if (ftruncate(fd, (off_t)p2p_shmem_seglen) != 0) {
        int e = errno;
        close(fd);
        return p2p_shmem_fail(MPI_ERR_OTHER, 0, "ftruncate /dev/shm%s: %s", p2p_shmem_segname, strerror(e));
    }
    if (p2p_shmem_check(fd, NULL, why, sizeof why) != 0 || fstat(fd, &st) != 0) {
        close(fd);
        return p2p_shmem_fail(MPI_ERR_OTHER, 0, "segment /dev/shm%s: %s", p2p_shmem_segname, why);
    }
    p2p_shmem_seg = mmap(NULL, p2p_shmem_seglen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p2p_shmem_seg == MAP_FAILED) {
        int e = errno;
        p2p_shmem_seg = NULL;
        return p2p_shmem_fail(MPI_ERR_OTHER, 0, "mmap /dev/shm%s: %s", p2p_shmem_segname, strerror(e));
    }
    p2p_shmem_seg->pid = (int32_t)getpid();
    p2p_shmem_seg->nranks = p2p_shmem_size;
    p2p_shmem_seg->ringsize = p2p_shmem_ringsz;
    p2p_shmem_seg->hdrsize = p2p_shmem_hdrsize(p2p_shmem_size);
    atomic_store(&p2p_shmem_seg->sleeping, 0);
    atomic_store_explicit((_Atomic uint64_t *)&p2p_shmem_seg->magic, P2P_SHMEM_MAGIC,
                          memory_order_release);

    p2p_shmem_bellfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    p2p_shmem_bell_addr(&sa, &salen, p2p_shmem_me);
    if (p2p_shmem_bellfd < 0 || bind(p2p_shmem_bellfd, (struct sockaddr *)&sa, salen) != 0) {
        int e = errno;
        return p2p_shmem_fail(MPI_ERR_OTHER, 0, "doorbell socket @%s: %s%s", sa.sun_path + 1, strerror(e),
                              e == EADDRINUSE ? " (bound by a process that is not this rank)" : "");
    }
    p2p_shmem_readyfd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);   /* always readable */

    if (p2p_shmem_cma_ok) {
        if (p2p_shmem_yama() == 1) prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    }
    /* pid, probe word, and the segment's device and inode (peers map only that file) */
    snprintf(val, sizeof val, "%d %llx %llx %llx", (int)getpid(),
             (unsigned long long)(uintptr_t)&p2p_shmem_probe, (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    return kumi_rpim_put("p2p.shmem.addr", val);
}

static int p2p_shmem_wireup(void)
{
    char host[KUMI_KVS_VAL_MAX], val[KUMI_KVS_VAL_MAX];
    const char *me = kumi_hostname();
    int ncma = 0;
    if (p2p_shmem_size <= 1 || !p2p_shmem_seg) return MPI_SUCCESS;
    /* Mapping in a ring allocates and zeroes its pages: every rank of a job
     * on one host doing so for all its incoming rings costs size^2 rings
     * (1 GiB of /dev/shm and most of a second of system time for 64 ranks of
     * 256 KiB rings, 4 GiB for 128) before the program starts.  Hold the
     * host's total to 64 MiB: 32 MiB per rank at 2 ranks, 64 MiB / size
     * above (all rings up to 16 ranks of 256 KiB rings, a few at 64). */
    size_t prefault_max = ((size_t)64 << 20) / (size_t)p2p_shmem_size;
    if (prefault_max > ((size_t)32 << 20)) prefault_max = (size_t)32 << 20;
    for (int r = 0; r < p2p_shmem_size; r++) {
        struct p2p_shmem_peer *p = &p2p_shmem_peers[r];
        unsigned long long addr = 0;
        int pid = 0;
        char name[128], why[160];
        if (r == p2p_shmem_me) continue;
        if (kumi_rpim_get(r, "kumi.host", host, sizeof host) != 0 || strcmp(host, me) != 0) continue;
        if (kumi_rpim_get(r, "p2p.shmem.addr", val, sizeof val) != 0 ||
            sscanf(val, "%d %llx %llx %llx", &pid, &addr, &p->segdev, &p->segino) != 4)
            continue;
        /* the segment we shall write into must be the one rank r made: if
         * not, r is not reached through shared memory (and we say so) */
        {
            int fd = p2p_shmem_open_peer(p, r, name, sizeof name, why, sizeof why);
            if (fd == -1) {
                kumi_warn("p2p/shmem: not used towards rank %d: segment /dev/shm%s is not this "
                          "job's (%s)", r, name, why);
                continue;
            }
            if (fd >= 0) close(fd);
        }
        p->same_host = 1;
        p->pid = pid;
        p2p_shmem_bell_addr(&p->bell, &p->bell_len, r);
        p->ictl = p2p_shmem_ring(p2p_shmem_seg, r, &p->idata);
        p2p_shmem_local[p2p_shmem_nlocal++] = r;
        /* our incoming rings: up to prefault_max of them now, the rest as they are used */
        if ((size_t)p2p_shmem_nlocal * (P2P_SHMEM_CTL + p2p_shmem_ringsz) <= prefault_max)
            p2p_shmem_prefault(p->ictl);
        {
            unsigned char verdict = P2P_SHMEM_CMA_NO;
            if (p2p_shmem_cma_ok) {
                uint64_t v = 0;
                struct iovec l = { &v, sizeof v }, rem = { (void *)(uintptr_t)addr, sizeof v };
                if (process_vm_readv(pid, &l, 1, &rem, 1, 0) == (ssize_t)sizeof v && v == P2P_SHMEM_MAGIC) {
                    verdict = P2P_SHMEM_CMA_YES;
                    ncma++;
                } else if (strcmp(p2p_shmem_cma_mode, "on") == 0) {
                    kumi_warn("p2p/shmem: cannot read rank %d with process_vm_readv (%s); "
                              "using the two-copy path from it", r, strerror(errno));
                }
            }
            atomic_store_explicit(&p2p_shmem_seg->canread[r], verdict, memory_order_release);
        }
    }
    kumi_log(2, "p2p/shmem: %d same-host peer(s), CMA from %d; %s", p2p_shmem_nlocal, ncma,
             p2p_shmem_cma_status_buf);
    return MPI_SUCCESS;
}

static int p2p_shmem_reaches(int peer)
{
    return p2p_shmem_peers && peer >= 0 && peer < p2p_shmem_size && peer != p2p_shmem_me &&
           p2p_shmem_peers[peer].same_host;
}

static size_t p2p_shmem_eager_limit(int peer)
{
    (void)peer;
    return p2p_shmem_eager;
}

/* ------------------------------------------------------------------ */
/* sending */

static inline uint64_t p2p_shmem_round(uint64_t n)
{
    return (n + P2P_SHMEM_CELL - 1) & ~(uint64_t)(P2P_SHMEM_CELL - 1);
}

static inline size_t p2p_shmem_ofree(struct p2p_shmem_peer *p, size_t want)
{
    size_t fr = p2p_shmem_ringsz - (size_t)(p->otail - p->ohead);
    if (fr < want) {
        p->ohead = atomic_load_explicit(&p->octl->head, memory_order_acquire);
        fr = p2p_shmem_ringsz - (size_t)(p->otail - p->ohead);
    }
    return fr;
}

/* Copy n bytes into the ring at our tail (wrapping), without publishing. */
static inline void p2p_shmem_put(struct p2p_shmem_peer *p, uint64_t pos, const void *src, size_t n)
{
    size_t off = (size_t)(pos & (p2p_shmem_ringsz - 1));
    size_t first = p2p_shmem_ringsz - off;
    if (first >= n) {
        memcpy(p->odata + off, src, n);
    } else {
        memcpy(p->odata + off, src, first);
        memcpy(p->odata, (const char *)src + first, n - first);
    }
}

static inline int p2p_shmem_peer_cma(struct p2p_shmem_peer *p)
{
    if (p->cma == P2P_SHMEM_CMA_UNKNOWN)
        p->cma = atomic_load_explicit(&p->seg->canread[p2p_shmem_me], memory_order_acquire);
    return p->cma == P2P_SHMEM_CMA_YES;
}

static inline int p2p_shmem_use_cma(struct p2p_shmem_peer *p, const struct kumi_sendop *op)
{
    /* a pulled RTS (the request layer asked p2p_shmem_rget first) */
    if (op->hdr.kind == KUMI_HDR_RTS) return (op->hdr.flags & KUMI_HDR_F_RGET) && op->payload;
    /* rendezvous payloads only: an eager send completes without waiting for the receiver */
    if (op->hdr.kind != KUMI_HDR_DATA || op->hdr.paylen < p2p_shmem_cma_min || !op->payload) return 0;
    return p2p_shmem_peer_cma(p);
}

/* Write as much of op as fits.  Returns 1 when op is fully written (the
 * caller then publishes, unlinks and completes or parks it), 0 otherwise. */
static int p2p_shmem_write_op(struct p2p_shmem_peer *p, struct kumi_sendop *op, int *hdr_done)
{
    if (!*hdr_done) {
        struct p2p_shmem_rec rec;
        int cma = p2p_shmem_use_cma(p, op);
        size_t need = P2P_SHMEM_CELL * (cma ? 2u : 1u);
        if (p2p_shmem_ofree(p, need) < need) return 0;
        rec.aux = 0;
        rec.hdr = op->hdr;
        if (op->hdr.kind == 0) {                      /* an ACK of ours */
            rec.type = P2P_SHMEM_REC_ACK;
        } else if (cma) {
            struct p2p_shmem_cmadesc d;
            rec.type = P2P_SHMEM_REC_CMA;
            memset(&d, 0, sizeof d);
            d.addr = (uint64_t)(uintptr_t)op->payload;
            d.cookie = (uint64_t)(uintptr_t)op;
            d.pid = (int32_t)getpid();
            p2p_shmem_put(p, p->otail + P2P_SHMEM_CELL, &d, sizeof d);
        } else {
            rec.type = P2P_SHMEM_REC_MSG;
        }
        p2p_shmem_put(p, p->otail, &rec, sizeof rec);
        p->otail += need;
        op->toff = 0;
        op->tptr = cma ? (void *)op : NULL;            /* non-NULL: waits for an ACK */
        *hdr_done = 1;
        if (rec.type != P2P_SHMEM_REC_MSG) return 1;
    }
    /* inline payload, in pieces as space allows */
    {
        size_t paylen = (size_t)op->hdr.paylen;
        while (op->toff < paylen) {
            size_t left = paylen - op->toff;
            size_t fr = p2p_shmem_ofree(p, p2p_shmem_round(left) < P2P_SHMEM_CELL ? P2P_SHMEM_CELL
                                                                                    : p2p_shmem_round(left));
            size_t n;
            fr &= ~(size_t)(P2P_SHMEM_CELL - 1);
            if (fr == 0) return 0;
            n = left < fr ? left : fr;
            p2p_shmem_put(p, p->otail, (const char *)op->payload + op->toff, n);
            op->toff += n;
            p->otail += p2p_shmem_round(n);
            if (op->toff < paylen) {
                /* publish what is there so the receiver can start */
                atomic_store_explicit(&p->octl->tail, p->otail, memory_order_release);
            }
        }
    }
    return 1;
}

static inline void p2p_shmem_publish(struct p2p_shmem_peer *p)
{
    atomic_store_explicit(&p->octl->tail, p->otail, memory_order_release);
    p2p_shmem_ring_bell(p);
}

/* Push queued ops to p.  Returns 1 if anything went out. */
static int p2p_shmem_flush(struct p2p_shmem_peer *p)
{
    int did = 0;
    struct kumi_sendop *done = NULL, **donetail = &done;
    uint64_t t0 = p->otail;
    while (p->qhead) {
        struct kumi_sendop *op = p->qhead;
        uint64_t before = p->otail;
        int full = p2p_shmem_write_op(p, op, &p->qhdr_done);
        if (p->otail != before) did = 1;
        if (!full) break;
        p->qhead = op->tnext;
        if (!p->qhead) p->qtail = NULL;
        p->qhdr_done = 0;
        op->tnext = NULL;
        if (op->tptr) {                               /* CMA: park until the ACK */
            op->tnext = p->acks;
            p->acks = op;
        } else {
            p2p_shmem_nqueued--;
            *donetail = op;
            donetail = &op->tnext;
        }
    }
    if (p->otail != t0) p2p_shmem_publish(p);
    while (done) {
        struct kumi_sendop *op = done;
        done = op->tnext;
        op->tnext = NULL;
        op->done(op);
    }
    return did;
}

static void p2p_shmem_ack_done(struct kumi_sendop *op)
{
    free(op);
}

static int p2p_shmem_send(int peer, struct kumi_sendop *op)
{
    struct p2p_shmem_peer *p;
    if (!p2p_shmem_reaches(peer))
        return kumi_error(MPI_ERR_OTHER, "p2p/shmem: rank %d is not on this host", peer);
    p = &p2p_shmem_peers[peer];
    if (!p->seg && p2p_shmem_attach(p, peer) != 0)
        return kumi_error(MPI_ERR_OTHER, "p2p/shmem: cannot attach the segment of rank %d", peer);
    op->tnext = NULL;
    op->toff = 0;
    op->tptr = NULL;
    if (!p->qhead) {                                  /* fast path: straight into the ring */
        int hd = 0;
        uint64_t t0 = p->otail;
        int full = p2p_shmem_write_op(p, op, &hd);
        if (full) {
            p2p_shmem_publish(p);
            if (op->tptr) {
                op->tnext = p->acks;
                p->acks = op;
                p2p_shmem_nqueued++;
            } else {
                op->done(op);
            }
            return MPI_SUCCESS;
        }
        if (p->otail != t0) p2p_shmem_publish(p);
        p->qhdr_done = hd;
    }
    if (p->qtail) p->qtail->tnext = op;
    else p->qhead = op;
    p->qtail = op;
    p2p_shmem_nqueued++;
    return MPI_SUCCESS;
}

/* Queue an ACK of a CMA record to peer (internal op). */
static void p2p_shmem_send_ack(int peer, uint64_t cookie, int ok)
{
    struct kumi_sendop *op = calloc(1, sizeof *op);
    if (!op) {
        kumi_warn("p2p/shmem: out of memory for an ACK to rank %d", peer);
        return;
    }
    op->hdr.kind = 0;
    op->hdr.flags = ok ? 0 : 1;
    op->hdr.sreq = cookie;
    op->done = p2p_shmem_ack_done;
    if (p2p_shmem_send(peer, op) != MPI_SUCCESS) free(op);
}

/* ------------------------------------------------------------------ */
/* receiving */

static inline void p2p_shmem_get(struct p2p_shmem_peer *p, uint64_t pos, void *dst, size_t n)
{
    size_t off = (size_t)(pos & (p2p_shmem_ringsz - 1));
    size_t first = p2p_shmem_ringsz - off;
    if (first >= n) {
        memcpy(dst, p->idata + off, n);
    } else {
        memcpy(dst, p->idata + off, first);
        memcpy((char *)dst + first, p->idata, n - first);
    }
}

static void p2p_shmem_finish_msg(struct p2p_shmem_peer *p)
{
    struct kumi_rx *rx = p->rx;
    p->in_msg = 0;
    p->rx = NULL;
    if (rx) {
        rx->got = p->paylen;
        kumi_p2p_rx_done(rx);
    }
}

static void p2p_shmem_got_ack(int peer, struct p2p_shmem_peer *p, const struct p2p_shmem_rec *rec)
{
    struct kumi_sendop **pp = &p->acks;
    for (; *pp; pp = &(*pp)->tnext) {
        struct kumi_sendop *op = *pp;
        if ((uint64_t)(uintptr_t)op == rec->hdr.sreq) {
            *pp = op->tnext;
            op->tnext = NULL;
            op->tptr = NULL;
            p2p_shmem_nqueued--;
            if (rec->hdr.flags)
                kumi_warn("p2p/shmem: rank %d could not read a message of %llu bytes (CMA); "
                          "its data are lost", peer, (unsigned long long)op->hdr.paylen);
            op->done(op);
            return;
        }
    }
    kumi_warn("p2p/shmem: ACK from rank %d for an unknown transfer", peer);
}

/* Copy len bytes (at most rx->cap) of the peer's memory at d into rx, finish
 * rx and answer the sender.  */
static void p2p_shmem_cma_into(int peer, const struct p2p_shmem_cmadesc *d, size_t len, struct kumi_rx *rx)
{
    int ok = 1;
    if (rx) {
        size_t want = rx->dst ? (len < rx->cap ? len : rx->cap) : 0;
        size_t got = 0;
        rx->got = 0;
        while (got < want) {
            struct iovec l = { rx->dst + got, want - got };
            struct iovec r = { (void *)(uintptr_t)(d->addr + got), want - got };
            ssize_t n = process_vm_readv(d->pid, &l, 1, &r, 1, 0);
            if (n <= 0) {
                if (n < 0 && errno == EINTR) continue;
                ok = 0;
                kumi_warn("p2p/shmem: process_vm_readv from rank %d: %s", peer,
                          n < 0 ? strerror(errno) : "short read");
                break;
            }
            got += (size_t)n;
        }
        rx->got = rx->len;
        kumi_p2p_rx_done(rx);
    }
    p2p_shmem_send_ack(peer, d->cookie, ok);
}

/* A pulled RTS waiting for its receive (handle given to the request layer). */
struct p2p_shmem_pull {
    uint32_t magic;
    int peer;
    size_t len;
    struct p2p_shmem_cmadesc d;
};
#define P2P_SHMEM_PULL_MAGIC 0x5348504cu     /* "SHPL" */

static int p2p_shmem_do_cma(int peer, struct p2p_shmem_peer *p, const struct p2p_shmem_rec *rec,
                            const struct p2p_shmem_cmadesc *d)
{
    (void)p;
    if (rec->hdr.kind == KUMI_HDR_RTS) {     /* read when a receive matches: pull() */
        struct p2p_shmem_pull *pl = malloc(sizeof *pl);
        struct kumi_hdr h = rec->hdr;
        if (!pl) {
            kumi_warn("p2p/shmem: out of memory for a rendezvous from rank %d; dropped", peer);
            p2p_shmem_send_ack(peer, d->cookie, 0);
            return 1;
        }
        pl->magic = P2P_SHMEM_PULL_MAGIC;
        pl->peer = peer;
        pl->len = (size_t)rec->hdr.len;
        pl->d = *d;
        h.rreq = (uint64_t)(uintptr_t)pl;
        kumi_p2p_incoming(peer, &h);
        return 1;
    }
    struct kumi_rx *rx = kumi_p2p_incoming(peer, &rec->hdr);
    if (rx) rx->len = (size_t)rec->hdr.paylen;
    p2p_shmem_cma_into(peer, d, (size_t)rec->hdr.paylen, rx);
    return 1;
}

static int p2p_shmem_rget(int peer, size_t len)
{
    if (!p2p_shmem_reaches(peer) || len < p2p_shmem_cma_min) return 0;
    struct p2p_shmem_peer *p = &p2p_shmem_peers[peer];
    if (!p->seg && p2p_shmem_attach(p, peer) != 0) return 0;
    return p2p_shmem_peer_cma(p);
}

static void p2p_shmem_pull(int peer, uint64_t handle, struct kumi_rx *rx)
{
    struct p2p_shmem_pull *pl = (struct p2p_shmem_pull *)(uintptr_t)handle;
    if (!pl || pl->magic != P2P_SHMEM_PULL_MAGIC || pl->peer != peer) {
        kumi_warn("p2p/shmem: pull from rank %d of an unknown rendezvous", peer);
        return;
    }
    pl->magic = 0;
    p2p_shmem_cma_into(peer, &pl->d, pl->len, rx);   /* rx NULL (cancelled): only the answer */
    free(pl);
}

/* Read what ring peer -> me holds.  Returns 1 if anything happened. */
static int p2p_shmem_poll_ring(int peer, struct p2p_shmem_peer *p)
{
    int did = 0, recs = 0;
    uint64_t h0 = p->ihead;
    for (;;) {
        size_t avail = (size_t)(p->itail - p->ihead);
        if (avail == 0 || (!p->in_msg && avail < P2P_SHMEM_CELL)) {
            p->itail = atomic_load_explicit(&p->ictl->tail, memory_order_acquire);
            avail = (size_t)(p->itail - p->ihead);
            if (avail == 0) break;
        }
        if (p->in_msg) {
            size_t left = p->paylen - p->paygot;
            size_t n = left < avail ? left : avail;
            struct kumi_rx *rx = p->rx;
            if (rx && rx->dst && p->paygot < rx->cap) {
                size_t k = rx->cap - p->paygot < n ? rx->cap - p->paygot : n;
                p2p_shmem_get(p, p->ihead, rx->dst + p->paygot, k);
            }
            p->paygot += n;
            if (rx) rx->got = p->paygot;
            if (p->paygot == p->paylen) {
                p->ihead += p2p_shmem_round(n);
                p2p_shmem_finish_msg(p);
                recs++;
            } else {
                p->ihead += n;               /* a piece: always a multiple of 64 */
            }
            did = 1;
        } else {
            struct p2p_shmem_rec rec;
            if (avail < P2P_SHMEM_CELL) break;
            p2p_shmem_get(p, p->ihead, &rec, sizeof rec);
            if (rec.type == P2P_SHMEM_REC_CMA) {
                struct p2p_shmem_cmadesc d;
                if (avail < 2 * P2P_SHMEM_CELL) break;
                p2p_shmem_get(p, p->ihead + P2P_SHMEM_CELL, &d, sizeof d);
                p->ihead += 2 * P2P_SHMEM_CELL;
                p2p_shmem_do_cma(peer, p, &rec, &d);
            } else if (rec.type == P2P_SHMEM_REC_ACK) {
                p->ihead += P2P_SHMEM_CELL;
                p2p_shmem_got_ack(peer, p, &rec);
            } else {
                p->ihead += P2P_SHMEM_CELL;
                p->ihdr = rec.hdr;
                p->paylen = (size_t)rec.hdr.paylen;
                p->paygot = 0;
                p->rx = kumi_p2p_incoming(peer, &p->ihdr);
                if (p->rx) p->rx->got = 0;
                if (p->paylen == 0) {
                    p->in_msg = 1;
                    p2p_shmem_finish_msg(p);
                } else {
                    p->in_msg = 1;
                }
                if (p->paylen == 0) recs++;
            }
            did = 1;
        }
        if (recs >= P2P_SHMEM_BATCH) break;
        /* free space early for a streaming sender */
        if (p->in_msg && p->ihead - h0 >= p2p_shmem_ringsz / 2) {
            atomic_store_explicit(&p->ictl->head, p->ihead, memory_order_release);
            if (p->seg || p2p_shmem_attach(p, peer) == 0) p2p_shmem_ring_bell(p);
            h0 = p->ihead;
        }
    }
    if (p->ihead != h0) {
        atomic_store_explicit(&p->ictl->head, p->ihead, memory_order_release);
        /* the sender may sleep waiting for space */
        if (p->seg || p2p_shmem_attach(p, peer) == 0) p2p_shmem_ring_bell(p);
    }
    return did;
}

/* ------------------------------------------------------------------ */
/* progress, poll, busy, finalize */

static void p2p_shmem_drain_bell(void)
{
    char buf[64];
    while (recv(p2p_shmem_bellfd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
}

static int p2p_shmem_progress(void)
{
    int did = 0;
    if (!p2p_shmem_seg || p2p_shmem_in_progress) return 0;
    p2p_shmem_in_progress = 1;
    if (p2p_shmem_sleepers == 0 &&
        atomic_load_explicit(&p2p_shmem_seg->sleeping, memory_order_relaxed) != 0) {
        atomic_store_explicit(&p2p_shmem_seg->sleeping, 0, memory_order_relaxed);
        p2p_shmem_drain_bell();
    }
    for (int i = 0; i < p2p_shmem_nlocal; i++) {
        int r = p2p_shmem_local[i];
        struct p2p_shmem_peer *p = &p2p_shmem_peers[r];
        did |= p2p_shmem_poll_ring(r, p);
        if (p->qhead) did |= p2p_shmem_flush(p);
    }
    p2p_shmem_in_progress = 0;
    return did;
}

/* Would progress() find something to do right now? */
static int p2p_shmem_pending(void)
{
    for (int i = 0; i < p2p_shmem_nlocal; i++) {
        struct p2p_shmem_peer *p = &p2p_shmem_peers[p2p_shmem_local[i]];
        if (atomic_load_explicit(&p->ictl->tail, memory_order_acquire) != p->ihead) return 1;
        if (p->qhead && p->seg &&
            atomic_load_explicit(&p->octl->head, memory_order_acquire) != p->ohead)
            return 1;
    }
    return 0;
}

static int p2p_shmem_pollfds(struct pollfd *fds, int max)
{
    if (!p2p_shmem_seg || p2p_shmem_nlocal == 0) return 0;
    if (!fds || max < 1) {               /* a sleep is over */
        if (p2p_shmem_sleepers > 0 && !fds) p2p_shmem_sleepers--;
        return 0;
    }
    p2p_shmem_sleepers++;
    atomic_store_explicit(&p2p_shmem_seg->sleeping, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    fds[0].fd = p2p_shmem_pending() ? p2p_shmem_readyfd : p2p_shmem_bellfd;
    fds[0].events = POLLIN;
    fds[0].revents = 0;
    return 1;
}

static int p2p_shmem_busy(void)
{
    return p2p_shmem_nqueued > 0;
}

static void p2p_shmem_finalize(void)
{
    p2p_shmem_cleanup();
}

static const struct kumi_p2p_ops p2p_shmem_ops = {
    .init = p2p_shmem_init,
    .wireup = p2p_shmem_wireup,
    .reaches = p2p_shmem_reaches,
    .eager_limit = p2p_shmem_eager_limit,
    .send = p2p_shmem_send,
    .progress = p2p_shmem_progress,
    .pollfds = p2p_shmem_pollfds,
    .busy = p2p_shmem_busy,
    .finalize = p2p_shmem_finalize,
    .rget = p2p_shmem_rget,
    .pull = p2p_shmem_pull,
};

KUMI_EXPORT const struct kumi_component kumi_p2p_shmem_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "p2p", .name = "shmem",
    .version = { 0, 1, 0 },
    .description = "Shared memory between ranks of one host (lock-free rings; single copy with "
                   "process_vm_readv, see p2p_shmem_cma_status)",
    .priority = 50,
    .register_params = p2p_shmem_register,
    .open = p2p_shmem_open, .close = NULL,
    .ops = &p2p_shmem_ops,
};
