/* coll/sm: small collectives through shared memory, for communicators
 * whose ranks are all on this host.
 *
 * Each such communicator gets one segment, made at its first collective
 * that coll/sm provides (comm_query must not communicate): comm rank 0
 * creates "/kumi.<jobid>.csm.<token>" (O_CREAT | O_EXCL, mode 0600; the
 * token is 32 hex characters of HMAC(job secret, "kumi coll/sm <jobid> <job
 * rank> <count>"), so other users cannot guess or take the name; mpiexec
 * removes /dev/shm/kumi.<jobid>.* however the job ends) and broadcasts the
 * name with the collectives the communicator would have without coll/sm
 * (kumi_comm_coll_next); the others open it, check with fstat that it is
 * this user's, private and large enough, and map it; after an agreement
 * (allreduce) rank 0 unlinks it.  A failure on any rank makes every rank
 * pass this communicator's calls on for good.
 *
 * Layout: per rank a control block (two 64-byte lines: the done word the
 * rank writes at every collective on one, the rest on the other, each word
 * with a count of sleepers), a ring of kh heads (one 64-byte line each:
 * stamp, byte count and up to 48 bytes of data; the rings are consecutive
 * lines, so a reader of back-to-back collectives reads consecutive lines)
 * and k slots of max_bytes for larger data (kh = coll_sm_slots, k = kh;
 * fewer slots, then fewer heads, where the segment would exceed
 * coll_sm_seg_bytes: 4 ranks have 64 heads and 16 slots each by default).
 * Collective number n (counted per communicator, alike on every rank: each
 * rank calls the same operations in the same order) uses head n % kh and,
 * when its data does not fit the head, slot n % k of each rank; a
 * rank publishes its data by writing n into the head's stamp (after the
 * data: the readers wait on the line they then read, and successive
 * collectives touch different lines, so a root running ahead does not take
 * back a line a reader is polling) and finishes with done = n (a rank that
 * reads no other rank's data in collective n, the root of a Bcast and every
 * rank in a Barrier, which reads stamps only, writes done with its post:
 * one fence).  Before it writes slot n % k again (collective n + k) every
 * rank must be done with collective n, and before it writes head n % kh
 * again, with collective n + k - kh; it usually knows that already (safe:
 * after an operation in which it saw every rank's post n, all are done with
 * n - 1), so a root of back-to-back broadcasts runs up to kh - 1 ahead of
 * the others (k - 1 with data in slots); one that must wait spins until
 * half the ring is free (one look every k / 2 calls, not one at each), then
 * waits for the one slot.  Many heads matter most where ranks share a
 * core: a root that runs far ahead hands the core over once per kh / 2
 * calls (8 B at 4 ranks on 2 cores: 0.53 us with 16 heads, 0.21 with 64).
 *
 * Algorithms (p ranks; every rank with at most flat_max ranks reads all):
 *   Barrier    with the lead (coll_sm_barrier_lead, agreed at the setup)
 *              rank 0 waits for every other post n, then posts n itself:
 *              the others' release (so rank 0, the usual root of the next
 *              collective, leaves first); without it every rank posts n
 *              and waits for every post n;
 *   Bcast      the root packs into its head or slot and posts; the others
 *              unpack; above max_bytes up to coll_sm_bcast_max_bytes, where
 *              the ranks agreed on pieces at the setup (coll_sm_bcast_pieces;
 *              by default where a rank shares a core), the same per piece of
 *              max_bytes, piece c as collective n + c (sm_bcast_chunks);
 *   Reduce     every rank posts its vector; the root combines them;
 *   Allreduce  every rank posts; each combines all (above flat_max: rank
 *              0 combines into the result area and releases the others
 *              with rel = n);
 *   Allgather, Alltoall (p <= flat_max): every rank posts its block(s) and
 *              copies out what is its.
 * Combining goes from rank p-1 down to rank 0 (x0 op (x1 op (... x_{p-1}))),
 * so non-commutative and user ops keep the rank order, and every rank gets
 * the same bits.  Reductions need a contiguous datatype (the same one on
 * every rank); bcast, allgather and alltoall pack any datatype.
 *
 * Calls above the switch point (coll_sm_max_bytes of data per rank, or of
 * all blocks of one rank for alltoall), reductions on non-contiguous
 * types, intercommunicators and communicators with ranks on another host or
 * of another job are passed on to the next component (coll/tuned).  The
 * non-blocking and persistent forms stay the others'.
 *
 * Checkpoints (mpiexec --ckpt): the segments are kept through a checkpoint
 * and shared again after a restart (section "checkpoints" below).
 *
 * Waiting: first a short spin on the word (coll_sm_spin polls; none when
 * the rank is not bound and the communicator has more ranks than it has
 * CPUs), then the
 * progress engine's blocking wait (polls of the transports, yielding),
 * whose sleep here is a futex on the word with a timeout (0.1 ms after
 * activity, doubling up to coll_sm_nap_ms: the transports are polled
 * between naps): a writer wakes the word's sleepers when its count says
 * there are some. */
#define _GNU_SOURCE
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/ckpt.h>
#include <kumi/coll.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/jobkey.h>
#include <kumi/rpim.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long sm_max_bytes = 4096, sm_flat_max = 8, sm_spin = 200, sm_nap_ms = 10, sm_lead = 1, sm_slots = 64,
                 sm_seg_bytes = 512 << 10, sm_bcast_max = 512 << 10,
                 sm_bcast_pieces = -1;

/* ------------------------------------------------------------ segment */
struct sm_ctl {
    _Atomic uint32_t post_sleep;           /* ranks sleeping on a stamp of my heads */
    _Atomic uint32_t rel, rel_sleep;       /* rank 0: the result of allreduce `rel` (above flat_max)
                                            * is out (on a line of its own: not the done word's,
                                            * which this rank writes at every collective) */
    char pad1[52];
    _Atomic uint32_t done, done_sleep;     /* I am finished with collective `done` */
    char pad2[56];
};
_Static_assert(sizeof(struct sm_ctl) == 128, "two lines");

/* The head of a rank's collective n: one line, in a ring of k consecutive
 * lines per rank (a reader of back-to-back collectives reads consecutive
 * lines, which the hardware prefetches), with the data when it fits. */
#define HEAD_DATA 48
struct sm_head {
    _Atomic uint32_t stamp;                /* the collective whose data this is (written last) */
    uint32_t pad;
    uint64_t bytes;                        /* data bytes (alltoall: per block) */
    char data[HEAD_DATA];                  /* the data when it has at most HEAD_DATA bytes */
};
_Static_assert(sizeof(struct sm_head) == 64, "one line");
#define SLOT_HDR 16                        /* the result areas' header (allreduce above flat_max) */

struct sm_comm {
    struct sm_comm *next;
    MPI_Comm comm;
    int p, me, state;                      /* state: 0 not made yet, 1 ready, -1 pass everything on */
    int spin;
    int k;                                 /* data slots per rank */
    int kh;                                /* heads per rank (k or more: a collective whose data fits
                                            * its head runs up to kh - 1 ahead of the slowest) */
    int lead;                              /* barrier: wait for rank 0's release, not for every rank */
    int pieces;                            /* Bcast above max up to bcast_max in pieces (agreed) */
    uint32_t n;                            /* collectives begun on the segment */
    uint32_t fin;                          /* collectives this rank finished (its own memory: the
                                            * done word may be published before the end) */
    uint32_t safe;                         /* every rank is done with collective `safe` */
    size_t max, slotlen, reslen, seglen;
    struct sm_ctl *ctl;                    /* [p] */
    struct sm_head *heads;                 /* [p][k] */
    char *slots;                           /* [p][k] slots of slotlen bytes (data above HEAD_DATA) */
    char *result;                          /* [2] result areas of reslen bytes (allreduce above flat_max) */
    void *seg;
    char name[96];                         /* of the segment (unlinked): a restart derives the next */
};

static struct sm_comm *sm_table, *sm_last;
static pthread_mutex_t sm_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned sm_made;                   /* segments this process named (part of the name) */

static inline int ge(uint32_t a, uint32_t b) { return (int32_t)(a - b) >= 0; }

static inline struct sm_head *head(const struct sm_comm *e, int r, uint32_t n)
{
    return e->heads + (size_t)r * e->kh + (n & (e->kh - 1));
}
static inline uint64_t slot_bytes(const struct sm_comm *e, int r, uint32_t n) { return head(e, r, n)->bytes; }
/* Where rank r's data of collective n lies: total bytes in all (its head's
 * line up to HEAD_DATA, else its slot) */
static inline char *slot_data(const struct sm_comm *e, int r, uint32_t n, size_t total)
{
    if (total <= HEAD_DATA) return head(e, r, n)->data;
    return e->slots + ((size_t)r * e->k + (n & (e->k - 1))) * e->slotlen;
}

/* ------------------------------------------------------------ waiting */
static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

/* Publish value v in word w (release: the data written before is seen by
 * whoever sees v) and wake its sleepers. */
static inline void publish(_Atomic uint32_t *w, _Atomic uint32_t *sleepers, uint32_t v)
{
    atomic_store_explicit(w, v, memory_order_seq_cst);
    if (atomic_load_explicit(sleepers, memory_order_seq_cst) > 0) futex(w, FUTEX_WAKE, INT_MAX, NULL);
}

struct sm_wait {
    _Atomic uint32_t *w, *sleepers;
    uint32_t target;
    long nap_ns;                           /* this nap's length (0: none yet) */
    struct timespec end;                   /* when the last nap ended */
};

static int wait_done(void *a)
{
    struct sm_wait *x = a;
    return ge(atomic_load_explicit(x->w, memory_order_acquire), x->target);
}

/* A checkpoint (sm_ck_quiesce) closes the gate and waits until no thread
 * naps: the naps run without the library lock and write the segments (the
 * sleepers' counts), which must be alike in every rank's image. */
static _Atomic int sm_gate, sm_napping;

/* The naps of one wait: the transports are polled only between them, so a
 * point-to-point message for this rank (a rendezvous in pieces, each of
 * which needs this rank) would wait up to a nap for each step.  So a nap
 * that follows activity (the progress engine spun and yielded again since
 * the last one: more than NAP_GAP_NS between them) lasts NAP_MIN_NS, and
 * each nap straight after another twice the last, up to coll_sm_nap_ms. */
#define NAP_MIN_NS 100000L
#define NAP_GAP_NS 30000L

static void wait_nap(void *a)
{
    struct sm_wait *x = a;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long gap = (long)(now.tv_sec - x->end.tv_sec) * 1000000000L + (now.tv_nsec - x->end.tv_nsec);
    long cap = (long)(sm_nap_ms > 0 ? sm_nap_ms : 1) * 1000000L;
    x->nap_ns = !x->nap_ns || gap > NAP_GAP_NS ? NAP_MIN_NS : x->nap_ns * 2;
    if (x->nap_ns > cap) x->nap_ns = cap;
    struct timespec ts = { x->nap_ns / 1000000000L, x->nap_ns % 1000000000L };
    atomic_fetch_add_explicit(&sm_napping, 1, memory_order_seq_cst);
    if (!atomic_load_explicit(&sm_gate, memory_order_seq_cst)) {
        atomic_fetch_add_explicit(x->sleepers, 1, memory_order_seq_cst);
        uint32_t v = atomic_load_explicit(x->w, memory_order_seq_cst);
        if (!ge(v, x->target)) futex(x->w, FUTEX_WAIT, v, &ts);
        atomic_fetch_sub_explicit(x->sleepers, 1, memory_order_seq_cst);
    }
    atomic_fetch_sub_explicit(&sm_napping, 1, memory_order_seq_cst);
    clock_gettime(CLOCK_MONOTONIC, &x->end);
}

/* Until word w reaches target. */
static void wait_word(const struct sm_comm *e, _Atomic uint32_t *w, _Atomic uint32_t *sleepers, uint32_t target)
{
    if (ge(atomic_load_explicit(w, memory_order_acquire), target)) return;
    for (int i = 0; i < e->spin; i++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (ge(atomic_load_explicit(w, memory_order_acquire), target)) return;
    }
    struct sm_wait x = { w, sleepers, target, 0, { 0, 0 } };
    kumi_coll_wait_until(wait_done, &x, wait_nap);
}

static void wait_post(const struct sm_comm *e, int r, uint32_t n)
{
    wait_word(e, &head(e, r, n)->stamp, &e->ctl[r].post_sleep, n);
}

/* Every rank has posted collective n: all are done with n - 1. */
static void wait_all_posts(struct sm_comm *e, uint32_t n)
{
    for (int r = 0; r < e->p; r++)
        if (r != e->me) wait_post(e, r, n);
    e->safe = n - 1;
}

/* Before this rank writes its head and slot for collective n (total: its
 * bytes there, as slot_data's): every rank is done with collective n - k
 * (the last one that used that slot), or n - kh when the data fits the
 * head (the last one that used the head; the slots are fewer). */
static void slot_free(struct sm_comm *e, uint32_t n, size_t total)
{
    int ring = total <= HEAD_DATA ? e->kh : e->k;
    uint32_t last = n - (uint32_t)ring, lo = n - 1;
    if (ge(e->safe, last)) return;
    /* a rank that must wait first spins until half the ring is free, not
     * one slot: polling a done word that its owner writes at every
     * collective would take the line from it at each one (a root of
     * back-to-back Bcast running k ahead of a reader would do so at every
     * call).  Past the spin it waits for the one slot only (a sleeper would
     * be woken by each done of the others, and a program whose other ranks
     * stop between the two would hang). */
    uint32_t want = n - (uint32_t)ring / 2;
    for (int r = 0; r < e->p; r++)
        if (r != e->me) {
            _Atomic uint32_t *w = &e->ctl[r].done;
            uint32_t d = atomic_load_explicit(w, memory_order_acquire);
            if (!ge(d, last)) {
                for (int i = 0; i < e->spin && !ge(d, want); i++) {
#if defined(__x86_64__) || defined(__i386__)
                    __builtin_ia32_pause();
#endif
                    d = atomic_load_explicit(w, memory_order_acquire);
                }
                if (!ge(d, last)) wait_word(e, w, &e->ctl[r].done_sleep, last);
                d = atomic_load_explicit(w, memory_order_acquire);
            }
            if (!ge(d, lo)) lo = d;
        }
    e->safe = lo;               /* what they are done with (often more than needed now: fewer looks) */
}

static inline void post(struct sm_comm *e, uint32_t n)
{
    publish(&head(e, e->me, n)->stamp, &e->ctl[e->me].post_sleep, n);
}
static inline void finish(struct sm_comm *e, uint32_t n)
{
    publish(&e->ctl[e->me].done, &e->ctl[e->me].done_sleep, n);
    e->fin = n;
}
/* post and finish at once (one fence), for a rank that reads no other
 * rank's data in collective n (a root of Bcast, the Barrier: it reads
 * stamps only, which only grow, so a slot reused meanwhile is no harm) */
static inline void post_finish(struct sm_comm *e, uint32_t n)
{
    struct sm_ctl *c = &e->ctl[e->me];
    atomic_store_explicit(&c->done, n, memory_order_release);
    atomic_store_explicit(&head(e, e->me, n)->stamp, n, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&c->done_sleep, memory_order_relaxed) > 0) futex(&c->done, FUTEX_WAKE, INT_MAX, NULL);
    if (atomic_load_explicit(&c->post_sleep, memory_order_relaxed) > 0)
        futex(&head(e, e->me, n)->stamp, FUTEX_WAKE, INT_MAX, NULL);
}

/* ------------------------------------------------------------ setup */
static int ncpus(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

struct sm_hello {
    char name[96];
    int32_t err;
    int32_t pad;
};

/* Make, open and map the segment of e (collective over e->comm, with the
 * next component's bcast and allreduce).  Leaves state 1 or -1; returns an
 * MPI error only when those collectives fail. */
static int sm_setup(struct sm_comm *e)
{
    const struct kumi_coll_fns *nx = kumi_comm_coll_next(e->comm);
    if (!nx || !nx->bcast || !nx->allreduce) {
        e->state = -1;
        return MPI_SUCCESS;
    }
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) pg = 4096;
    size_t max = (size_t)(sm_max_bytes < 8 ? 8 : sm_max_bytes);
    e->max = max;
    e->slotlen = (max + 63) & ~(size_t)63;
    e->reslen = (SLOT_HDR + max + 63) & ~(size_t)63;
    size_t ctlbytes = sizeof(struct sm_ctl) * (size_t)e->p, hl = sizeof(struct sm_head);
    /* kh heads and k slots per rank (powers of two: n % k stays right when
     * n wraps): first fewer slots, then fewer heads, where the segment
     * would exceed seg_bytes */
    int kh = 2, k;
#define SEG_BYTES(kh, k) (ctlbytes + (hl * (size_t)(kh) + e->slotlen * (size_t)(k)) * (size_t)e->p)
    while (kh * 2 <= sm_slots && kh < 64) kh *= 2;
    for (k = kh; k > 2 && SEG_BYTES(kh, k) > (size_t)sm_seg_bytes; k /= 2) {
    }
    while (kh > k && SEG_BYTES(kh, k) > (size_t)sm_seg_bytes) kh /= 2;
    e->k = k;
    e->kh = kh;
    size_t len = SEG_BYTES(kh, k) + e->reslen * 2;
#undef SEG_BYTES
    len = (len + (size_t)pg - 1) & ~((size_t)pg - 1);
    e->seglen = len;

    struct sm_hello h;
    memset(&h, 0, sizeof h);
    void *seg = MAP_FAILED;
    int err = 0;
    if (e->me == 0) {
        const char *jobid = getenv("KUMI_JOBID");
        if (!jobid || !*jobid) jobid = "0";
        char label[160], tok[33];
        unsigned k = __atomic_fetch_add(&sm_made, 1, __ATOMIC_RELAXED);
        snprintf(label, sizeof label, "kumi coll/sm %s %d %u", jobid, kumi_world_rank(), k);
        if (kumi_jobkey_derive_hex(label, tok, 32) == 0)
            snprintf(h.name, sizeof h.name, "/kumi.%s.csm.%s", jobid, tok);
        else
            snprintf(h.name, sizeof h.name, "/kumi.%s.csm.%d.%d.%u", jobid, kumi_world_rank(), (int)getpid(), k);
        int fd = shm_open(h.name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0) err = errno;
        else {
            if ((err = posix_fallocate(fd, 0, (off_t)len)) == 0) {
                seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                if (seg == MAP_FAILED) err = errno;
            }
            close(fd);
            if (err) shm_unlink(h.name);
        }
        h.err = err;
        if (err) kumi_log(1, "coll/sm: cannot make %zu bytes of shared memory %s: %s", len, h.name, strerror(err));
    }
    int rc = nx->bcast(&h, (MPI_Count)sizeof h, MPI_BYTE, 0, e->comm);
    if (rc) {
        if (seg != MAP_FAILED) munmap(seg, len);
        if (e->me == 0 && !h.err) shm_unlink(h.name);
        e->state = -1;
        return rc;
    }
    if (h.err) {
        e->state = -1;
        return MPI_SUCCESS;
    }
    if (e->me != 0) {
        h.name[sizeof h.name - 1] = 0;
        int fd = shm_open(h.name, O_RDWR, 0);
        struct stat st;
        if (fd < 0) err = errno;
        else if (fstat(fd, &st) != 0) err = errno;
        else if (st.st_uid != geteuid() || (st.st_mode & 077) || !S_ISREG(st.st_mode)) err = EPERM;
        else if ((size_t)st.st_size < len) err = EINVAL;
        else if ((seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) err = errno;
        if (fd >= 0) close(fd);
        if (err) kumi_log(1, "coll/sm: cannot map the shared memory %s: %s", h.name, strerror(err));
    }
    /* agree on the failures and on the barrier's form (rank 0's post is the
     * others' release when any rank wants the lead: every rank must do alike) */
    int mine[3] = { err, e->lead, e->pieces }, any[3] = { 0, 0, 0 };
    rc = nx->allreduce(mine, any, 3, MPI_INT, MPI_MAX, e->comm);
    if (e->me == 0) shm_unlink(h.name);
    e->lead = any[1] != 0;
    e->pieces = any[2] != 0;
    if (rc || any[0]) {
        if (seg != MAP_FAILED) munmap(seg, len);
        e->state = -1;
        return rc;
    }
    e->seg = seg;
    memcpy(e->name, h.name, sizeof e->name);
    e->ctl = seg;
    e->heads = (struct sm_head *)((char *)seg + ctlbytes);
    e->slots = (char *)(e->heads + (size_t)e->kh * (size_t)e->p);
    e->result = e->slots + e->slotlen * (size_t)e->k * (size_t)e->p;
    e->n = e->fin = 0;
    e->safe = 0;
    e->state = 1;
    return MPI_SUCCESS;
}

static struct sm_comm *sm_find(MPI_Comm comm)
{
    struct sm_comm *e = sm_last;
    if (e && e->comm == comm) return e;
    pthread_mutex_lock(&sm_lock);
    for (e = sm_table; e && e->comm != comm; e = e->next) {
    }
    if (e) sm_last = e;
    pthread_mutex_unlock(&sm_lock);
    return e;
}

/* The entry of comm with its segment, or NULL: pass the call on (*rc: an
 * error of the setup). */
static struct sm_comm *sm_get_slow(MPI_Comm comm, int *rc)
{
    struct sm_comm *e = sm_find(comm);
    if (!e) return NULL;
    if (e->state == 0) *rc = sm_setup(e);
    return e->state == 1 ? e : NULL;
}
static inline struct sm_comm *sm_get(MPI_Comm comm, int *rc)
{
    *rc = MPI_SUCCESS;
    struct sm_comm *e = sm_last;           /* the communicator of the last call, usually */
    if (__builtin_expect(e && e->comm == comm && e->state == 1, 1)) return e;
    return sm_get_slow(comm, rc);
}

#define NEXT(comm) kumi_comm_coll_next(comm)

/* ------------------------------------------------------------ data helpers */
static size_t dt_lb(MPI_Datatype dt)
{
    MPI_Aint lb, ext;
    kumi_dt_true_extent(dt, &lb, &ext);
    return (size_t)lb;
}
static MPI_Aint dt_ext(MPI_Datatype dt)
{
    MPI_Aint lb, ext;
    kumi_dt_extent(dt, &lb, &ext);
    return ext;
}

/* count elements of dt at buf into bytes at dst. */
static void pack(const void *buf, size_t count, MPI_Datatype dt, void *dst, size_t bytes)
{
    if (!bytes) return;
    if (kumi_dt_contiguous(dt)) memcpy(dst, (const char *)buf + dt_lb(dt), bytes);
    else kumi_dt_copy(buf, count, dt, dst, bytes, MPI_BYTE);
}

/* The error of a rank that gets more than it expects, worded as the
 * schedules' and the point-to-point algorithms' (the same error whichever
 * component ran). */
static int truncated(uint64_t bytes, int from, size_t cap)
{
    return kumi_error(MPI_ERR_TRUNCATE, "collective: a message of %llu bytes from rank %d was truncated to %zu bytes "
                      "(the ranks disagree on counts or datatypes)", (unsigned long long)bytes, from, cap);
}

/* bytes from rank `from` at src into count elements of dt at buf (capacity
 * cap bytes); MPI_ERR_TRUNCATE (after copying what fits) if bytes > cap. */
static int unpack(const void *src, size_t bytes, int from, void *buf, size_t count, MPI_Datatype dt, size_t cap)
{
    int rc = MPI_SUCCESS;
    if (bytes > cap) {
        rc = truncated(bytes, from, cap);
        bytes = cap;
    }
    if (!bytes) return rc;
    if (kumi_dt_contiguous(dt)) memcpy((char *)buf + dt_lb(dt), src, bytes);
    else {
        size_t sz = kumi_dt_size(dt);
        size_t whole = sz ? bytes / sz : 0;
        kumi_dt_copy(src, whole * sz, MPI_BYTE, buf, whole, dt);
    }
    (void)count;
    return rc;
}

/* ------------------------------------------------------------ operations */
static int sm_barrier(MPI_Comm comm)
{
    int rc;
    struct sm_comm *e = sm_get(comm, &rc);
    if (!e) return rc ? rc : NEXT(comm)->barrier(comm);
    uint32_t n = ++e->n;
    /* the done word goes with the post (a barrier reads stamps only) */
    if (!e->lead) {                        /* every rank waits for every post */
        post_finish(e, n);
        wait_all_posts(e, n);
    } else if (e->me == 0) {               /* rank 0 posts when all have: the others' release */
        wait_all_posts(e, n);
        post_finish(e, n);
    } else {
        post_finish(e, n);
        wait_post(e, 0, n);
        e->safe = n - 1;
    }
    e->fin = n;
    return MPI_SUCCESS;
}

/* A reader: np pieces of root's Bcast (0: as many as its first piece's head
 * says) into b up to cap bytes (b NULL: read and dropped); *total: the bytes
 * the root sent in them. */
static int bcast_read(struct sm_comm *e, int root, char *b, size_t cap, uint32_t np, uint64_t *total)
{
    bool discover = np == 0;
    if (discover) np = 1;
    uint64_t off = 0;
    for (uint32_t c = 0; c < np; c++) {
        uint32_t n = ++e->n;
        struct sm_head *h = head(e, root, n);
        wait_word(e, &h->stamp, &e->ctl[root].post_sleep, n);
        uint64_t len = h->bytes;
        if (discover && c == 0 && h->pad > 1) np = h->pad;
        size_t room = off < cap ? cap - off : 0;
        if (b && room) memcpy(b + off, slot_data(e, root, n, len), len < room ? len : room);
        off += len;
        finish(e, n);
    }
    *total = off;
    return off > cap ? truncated(off, root, cap) : MPI_SUCCESS;
}

/* Bcast above max up to coll_sm_bcast_max_bytes: the packed bytes in
 * pieces of max, piece c as collective n + c, the root a piece ahead of each
 * reader at least (up to the k slots of its ring).  The root writes the
 * number of pieces into every piece's head (pad; 0 from the one-collective
 * Bcast below), and the readers go by it, not by their own count: ranks that
 * disagree on the count (an erroneous program, MPI_ERR_TRUNCATE where a
 * reader gets more than it has room for) still leave at the same
 * collective, so the next one runs (tests/mpi/conf_coll_mismatch).  A
 * non-contiguous buffer goes through a temporary (packed at the root first,
 * unpacked by the others last). */
static int sm_bcast_chunks(struct sm_comm *e, void *buf, size_t count, MPI_Datatype dt, int root, size_t bytes)
{
    int rc = MPI_SUCCESS, contig = kumi_dt_contiguous(dt);
    char *b = contig ? (char *)buf + dt_lb(dt) : malloc(bytes);
    if (!b) return kumi_error(MPI_ERR_NO_MEM, "coll/sm: no memory for MPI_Bcast of %zu bytes", bytes);
    if (e->me == root) {
        if (!contig) pack(buf, count, dt, b, bytes);
        uint32_t np = (uint32_t)((bytes + e->max - 1) / e->max);
        for (size_t off = 0; off < bytes; off += e->max) {
            size_t len = bytes - off < e->max ? bytes - off : e->max;
            uint32_t n = ++e->n;
            struct sm_head *h = head(e, root, n);
            slot_free(e, n, len);
            h->bytes = len;
            h->pad = np;
            memcpy(slot_data(e, root, n, len), b + off, len);
            post_finish(e, n);
            e->fin = n;
        }
    } else {
        uint64_t got = 0;
        rc = bcast_read(e, root, b, bytes, 0, &got);
        if (!contig) {                     /* what fits (rc: truncated already) */
            int r2 = unpack(b, got < bytes ? got : bytes, root, buf, count, dt, bytes);
            if (!rc) rc = r2;
        }
    }
    if (!contig) free(b);
    return rc;
}

static int sm_bcast(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    int rc;
    struct sm_comm *e = sm_get(comm, &rc);
    size_t bytes = (size_t)count * kumi_dt_size(dt);
    if (e && bytes > e->max && e->pieces && bytes <= (size_t)sm_bcast_max) return sm_bcast_chunks(e, buf, (size_t)count, dt, root, bytes);
    if (!e || bytes > e->max) return rc ? rc : NEXT(comm)->bcast(buf, count, dt, root, comm);
    uint32_t n = ++e->n;
    struct sm_head *h = head(e, root, n);
    if (e->me == root) {
        slot_free(e, n, bytes);
        h->bytes = bytes;
        h->pad = 0;                        /* one collective (see bcast_read) */
        pack(buf, (size_t)count, dt, bytes <= HEAD_DATA ? h->data : slot_data(e, root, n, bytes), bytes);
        post_finish(e, n);                 /* the root reads nothing */
        e->fin = n;
    } else {
        wait_word(e, &h->stamp, &e->ctl[root].post_sleep, n);
        uint64_t b = h->bytes;
        if (b <= HEAD_DATA && b == bytes && kumi_dt_contiguous(dt))   /* the usual case */
            memcpy((char *)buf + dt_lb(dt), h->data, b);
        else rc = unpack(slot_data(e, root, n, b), b, root, buf, (size_t)count, dt, bytes);
        uint32_t np = h->pad;
        finish(e, n);
        if (__builtin_expect(np > 1, 0)) {   /* the root sent pieces: read the rest, dropped */
            uint64_t rest = 0;
            bcast_read(e, root, NULL, 0, np - 1, &rest);
            if (!rc) rc = truncated(b + rest, root, bytes);
        }
    }
    return rc;
}

/* inout := x_0 op x_1 op ... op x_{p-1} (the slots of collective n; x_me
 * too), count elements of contiguous dt (at most what each rank gave). */
static int combine(struct sm_comm *e, uint32_t n, void *inout, size_t count, MPI_Datatype dt, MPI_Op op)
{
    size_t sz = kumi_dt_size(dt), lb = dt_lb(dt), mine = count * sz;
    int rc = MPI_SUCCESS;
    for (int r = 0; r < e->p; r++) {
        uint64_t b = slot_bytes(e, r, n);
        if (b > mine && !rc) rc = truncated(b, r, mine);
    }
    int last = e->p - 1;
    uint64_t b = slot_bytes(e, last, n);
    memcpy((char *)inout + lb, slot_data(e, last, n, b), b < mine ? b : mine);
    for (int r = last - 1; r >= 0; r--) {
        b = slot_bytes(e, r, n);
        size_t c = (b < mine ? b : mine) / (sz ? sz : 1);
        int orc = kumi_op_reduce(op, slot_data(e, r, n, b) - lb, inout, c, dt);
        if (orc && !rc) rc = orc;
    }
    return rc;
}

static int reducible(MPI_Count count, MPI_Datatype dt, const struct sm_comm *e)
{
    return kumi_dt_contiguous(dt) && (size_t)count * kumi_dt_size(dt) <= e->max;
}

static int sm_reduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, int root,
                     MPI_Comm comm)
{
    int rc;
    struct sm_comm *e = sm_get(comm, &rc);
    if (!e || !reducible(count, dt, e))
        return rc ? rc : NEXT(comm)->reduce(sbuf, rbuf, count, dt, op, root, comm);
    size_t bytes = (size_t)count * kumi_dt_size(dt);
    uint32_t n = ++e->n;
    slot_free(e, n, bytes);
    const void *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    head(e, e->me, n)->bytes = bytes;
    if (bytes) memcpy(slot_data(e, e->me, n, bytes), (const char *)src + dt_lb(dt), bytes);
    post(e, n);
    if (e->me == root) {
        wait_all_posts(e, n);
        rc = combine(e, n, rbuf, (size_t)count, dt, op);
    }
    finish(e, n);
    return rc;
}

static int sm_allreduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                        MPI_Comm comm)
{
    int rc;
    struct sm_comm *e = sm_get(comm, &rc);
    if (!e || !reducible(count, dt, e))
        return rc ? rc : NEXT(comm)->allreduce(sbuf, rbuf, count, dt, op, comm);
    size_t bytes = (size_t)count * kumi_dt_size(dt), lb = dt_lb(dt);
    uint32_t n = ++e->n;
    slot_free(e, n, bytes);
    const void *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    head(e, e->me, n)->bytes = bytes;
    if (bytes) memcpy(slot_data(e, e->me, n, bytes), (const char *)src + lb, bytes);
    post(e, n);
    if (e->p <= sm_flat_max) {
        wait_all_posts(e, n);
        rc = combine(e, n, rbuf, (size_t)count, dt, op);
    } else {
        /* rank 0 combines into the result area: header (rc) and data */
        char *res = e->result + (size_t)(n & 1) * e->reslen;
        if (e->me == 0) {
            wait_all_posts(e, n);
            rc = combine(e, n, rbuf, (size_t)count, dt, op);
            ((struct sm_head *)res)->bytes = (uint64_t)(uint32_t)rc;
            if (bytes) memcpy(res + SLOT_HDR, (char *)rbuf + lb, bytes);
            publish(&e->ctl[0].rel, &e->ctl[0].rel_sleep, n);    /* (not the barrier's release) */
        } else {
            wait_word(e, &e->ctl[0].rel, &e->ctl[0].rel_sleep, n);
            e->safe = n - 1;
            if (bytes) memcpy((char *)rbuf + lb, res + SLOT_HDR, bytes);
            int r0 = (int)(uint32_t)((struct sm_head *)res)->bytes;
            if (r0) rc = kumi_error(MPI_ERR_OTHER, "coll/sm: MPI_Allreduce failed on rank 0 of the communicator");
            /* my own mismatch, as the flat form would see it */
            for (int r = 0; r < e->p && !rc; r++)
                if (slot_bytes(e, r, n) > bytes) rc = truncated(slot_bytes(e, r, n), r, bytes);
        }
    }
    finish(e, n);
    return rc;
}

static int sm_allgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                        MPI_Datatype rdt, MPI_Comm comm)
{
    int rc;
    struct sm_comm *e = sm_get(comm, &rc);
    size_t rbytes = (size_t)rcount * kumi_dt_size(rdt);
    if (!e || e->p > sm_flat_max || rbytes > e->max)
        return rc ? rc : NEXT(comm)->allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm);
    MPI_Aint rext = dt_ext(rdt);
    char *mine_at = (char *)rbuf + (MPI_Aint)e->me * (MPI_Aint)rcount * rext;
    uint32_t n = ++e->n;
    size_t sbytes = sbuf == MPI_IN_PLACE ? rbytes : (size_t)scount * kumi_dt_size(sdt);
    if (sbytes > e->max) sbytes = e->max;
    slot_free(e, n, sbytes);
    if (sbuf == MPI_IN_PLACE) pack(mine_at, (size_t)rcount, rdt, slot_data(e, e->me, n, sbytes), sbytes);
    else pack(sbuf, (size_t)scount, sdt, slot_data(e, e->me, n, sbytes), sbytes);
    head(e, e->me, n)->bytes = sbytes;
    post(e, n);
    wait_all_posts(e, n);
    for (int r = 0; r < e->p; r++) {
        if (r == e->me && sbuf == MPI_IN_PLACE) continue;
        uint64_t b = slot_bytes(e, r, n);
        int urc = unpack(slot_data(e, r, n, b), b, r, (char *)rbuf + (MPI_Aint)r * (MPI_Aint)rcount * rext,
                         (size_t)rcount, rdt, rbytes);
        if (urc && !rc) rc = urc;
    }
    finish(e, n);
    return rc;
}

static int sm_alltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                       MPI_Datatype rdt, MPI_Comm comm)
{
    int rc;
    struct sm_comm *e = sm_get(comm, &rc);
    size_t rbytes = (size_t)rcount * kumi_dt_size(rdt);
    if (!e || e->p > sm_flat_max || rbytes * (size_t)e->p > e->max)
        return rc ? rc : NEXT(comm)->alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm);
    if (sbuf == MPI_IN_PLACE) {
        sbuf = rbuf;
        scount = rcount;
        sdt = rdt;
    }
    MPI_Aint sext = dt_ext(sdt), rext = dt_ext(rdt);
    size_t sbytes = (size_t)scount * kumi_dt_size(sdt), cap = e->max / (size_t)e->p, sb = sbytes;
    uint32_t n = ++e->n;
    if (sb > cap) {
        sb = cap;
        rc = kumi_error(MPI_ERR_TRUNCATE, "collective: blocks of %zu bytes where the ranks expect %zu "
                        "(the ranks disagree on counts or datatypes)", sbytes, rbytes);
    }
    slot_free(e, n, sb * (size_t)e->p);
    char *d = slot_data(e, e->me, n, sb * (size_t)e->p);
    for (int r = 0; r < e->p; r++) {
        const char *blk = (const char *)sbuf + (MPI_Aint)r * (MPI_Aint)scount * sext;
        if (sb == sbytes) pack(blk, (size_t)scount, sdt, d + (size_t)r * sb, sb);
        else kumi_dt_copy(blk, (size_t)scount, sdt, d + (size_t)r * sb, sb, MPI_BYTE);
    }
    head(e, e->me, n)->bytes = sb;
    post(e, n);
    wait_all_posts(e, n);
    for (int r = 0; r < e->p; r++) {
        uint64_t b = slot_bytes(e, r, n);
        int urc = unpack(slot_data(e, r, n, b * (size_t)e->p) + (size_t)e->me * b, b, r,
                         (char *)rbuf + (MPI_Aint)r * (MPI_Aint)rcount * rext, (size_t)rcount, rdt, rbytes);
        if (urc && !rc) rc = urc;
    }
    finish(e, n);
    return rc;
}

/* ------------------------------------------------------------ component */
static void sm_register_params(void)
{
    kumi_param_register_int("coll", "sm", "max_bytes", 4096,
                            "Largest collective coll/sm runs through shared memory: bytes of data per rank "
                            "(Bcast, Reduce, Allreduce, Allgather) or of all blocks of one rank (Alltoall); "
                            "larger ones go to the next component (coll/tuned).  Also the size of each "
                            "rank's slots in a communicator's segment",
                            KUMI_LEVEL_TUNER, &sm_max_bytes);
    kumi_param_register_int("coll", "sm", "bcast_max_bytes", 512 << 10,
                            "Largest MPI_Bcast coll/sm runs (bytes) when it exceeds coll_sm_max_bytes: the root "
                            "passes it through its slots in pieces of coll_sm_max_bytes where coll_sm_bcast_pieces "
                            "says so (4 ranks on 2 cores: 64 KiB 13.9-16.9 us instead of 25.0-27.7 through "
                            "coll/tuned's binomial tree, Open MPI 20.0; 128 KiB 25 against 46, 38; 512 KiB 106 "
                            "against 128, 114; 1 MiB a tie, 4 MiB slower); larger ones go to the next component",
                            KUMI_LEVEL_TUNER, &sm_bcast_max);
    kumi_param_register_int("coll", "sm", "bcast_pieces", -1,
                            "MPI_Bcast above coll_sm_max_bytes up to coll_sm_bcast_max_bytes through the root's "
                            "slots in pieces: 1 always; 0 never (coll/tuned); -1 where a rank of the communicator "
                            "shares a core (more ranks here than CPUs, not bound alone; at 2 ranks bound to cores "
                            "4 KiB pieces cost 15-60 us at 64 KiB against 8-27 through coll/tuned; the ranks agree: "
                            "pieces when any of them would choose them)",
                            KUMI_LEVEL_TUNER, &sm_bcast_pieces);
    kumi_param_register_int("coll", "sm", "flat_max", 8,
                            "Largest communicator in which every rank reads every rank's slot (Barrier, "
                            "Allreduce; Allgather and Alltoall only up to this size); above it rank 0 "
                            "collects and releases the others",
                            KUMI_LEVEL_TUNER, &sm_flat_max);
    kumi_param_register_int("coll", "sm", "slots", 64,
                            "Heads per rank (a power of two, 2 to 64; data of up to 48 bytes lives in a head): "
                            "how many collectives a rank may run ahead of the slowest (a root of back-to-back "
                            "MPI_Bcast: 8 B at 2 ranks 0.23 us with 2 heads, 0.14 with 8, 0.075 with 16-64; at "
                            "4 ranks on 2 cores 0.53 with 16, 0.21 with 64); also the most slots per rank for "
                            "larger data (fewer where the segment would exceed coll_sm_seg_bytes)",
                            KUMI_LEVEL_TUNER, &sm_slots);
    kumi_param_register_int("coll", "sm", "seg_bytes", 512 << 10,
                            "Largest segment of a communicator: fewer slots per rank (down to 2), then fewer "
                            "heads (down to the slots), above it (2 ranks: 64 heads and 32 slots, 4: 64 and 16, "
                            "8: 64 and 8, 16: 64 and 4, 32: 64 and 2, 64: 2 and 2)",
                            KUMI_LEVEL_TUNER, &sm_seg_bytes);
    kumi_param_register_int("coll", "sm", "barrier_lead", 1,
                            "MPI_Barrier: 1: the ranks but 0 leave after rank 0 (its post, made when all "
                            "arrived), so rank 0, the usual root of what follows, is on its way first (OSU's "
                            "bcast at 2 ranks: 0.2-1 us instead of 2-5 us on a loaded host); 0: each rank as "
                            "soon as it sees every rank arrived (one hop less for the barrier itself); -1: 1 "
                            "above flat_max or when the host has more ranks than CPUs, else 0 (the ranks of a "
                            "communicator agree: 1 when any of them would choose 1)",
                            KUMI_LEVEL_TUNER, &sm_lead);
    kumi_param_register_int("coll", "sm", "spin", 200,
                            "Polls of a shared word before a wait enters the progress engine (none when the "
                            "communicator has more ranks than the CPUs this rank may use)",
                            KUMI_LEVEL_TUNER, &sm_spin);
    kumi_param_register_int("coll", "sm", "nap_ms", 10,
                            "Longest sleep (ms) on a shared word before the transports are polled again",
                            KUMI_LEVEL_TUNER, &sm_nap_ms);
}

/* Every rank of comm on this host and of this job? (The same answer on
 * every rank: "same host" is an equivalence.) */
static signed char *sm_here;                /* [world size] -1 unknown, 0 elsewhere, 1 here */

static int all_here(MPI_Comm comm, int p)
{
    int ws = kumi_world_size();
    pthread_mutex_lock(&sm_lock);
    if (!sm_here && ws > 0 && (sm_here = malloc((size_t)ws)) != NULL) memset(sm_here, -1, (size_t)ws);
    int ok = sm_here != NULL;
    for (int r = 0; ok && r < p; r++) {
        int j = kumi_comm_job_rank(comm, r);
        if (j < 0 || j >= ws) ok = 0;          /* another job's process (dpm) */
        else {
            if (sm_here[j] < 0) sm_here[j] = (signed char)(kumi_same_host(j) ? 1 : 0);
            ok = sm_here[j] == 1;
        }
    }
    pthread_mutex_unlock(&sm_lock);
    return ok;
}

/* ------------------------------------------------------------ checkpoints
 * (mpiexec --ckpt; the coordinator is framework/mpi/ckpt.c, the hooks
 * kumi/ckpt.h's struct kumi_ckpt_hook.)  A collective may be in progress
 * at the cut: a rank waiting in one lets the checkpoint in at its wait's
 * yield or sleep (the coordinator does not run collectives to an agreed
 * point), so what its peers posted lives in the segment only.  So the
 * segment is kept, as RMA's host segments are (rma/rma_ckpt.c): it has no
 * name in /dev/shm (unlinked at its setup) and each rank's image holds its
 * contents, alike in every image, because no rank writes it from the
 * start of the cut (quiesce: the naps, which run without the library lock,
 * are held off) until the checkpoint ends.  Checkpoint-and-continue keeps
 * the mapping as it is.  A restarted process has it back as a private copy
 * at the same address; after the transports' wire-up:
 *   lead    rank 0 of each communicator makes a new segment (its name from
 *           the new job's id and secret and the old name), writes its copy
 *           into it and maps it over the copy, at the same address;
 *   join    the others map it over their copies (so every pointer, those
 *           of a rank waiting in a collective too, stays valid);
 *   unlink  rank 0 unlinks the name.
 * A communicator whose ranks are no longer on one host (another placement)
 * gives its segment up: its calls go to the next component (coll/tuned)
 * from then on, which is sound when no collective on it was in progress at
 * the cut (every rank finished the same last one, and none had begun the
 * next); otherwise the rank that sees it refuses the restart (the job is
 * aborted with the reason: restart it with the communicator's ranks on
 * one host). */
static _Atomic int sm_hooked;

static void sm_ck_quiesce(void)
{
    atomic_store_explicit(&sm_gate, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&sm_napping, memory_order_seq_cst) > 0) usleep(100);   /* <= nap_ms */
    int segs = 0, busy = 0;
    pthread_mutex_lock(&sm_lock);
    for (struct sm_comm *e = sm_table; e; e = e->next)
        if (e->state == 1) {
            segs++;
            busy += e->fin != e->n;
        }
    pthread_mutex_unlock(&sm_lock);
    if (segs)
        kumi_log(1, "coll/sm: %d segment%s kept through the checkpoint (%d with a collective of this rank "
                 "in progress)", segs, segs == 1 ? "" : "s", busy);
}

static void sm_ck_resume(void)
{
    atomic_store_explicit(&sm_gate, 0, memory_order_seq_cst);
}

/* The name of e's segment in the restarted job. */
static void ck_name(const struct sm_comm *e, char *name, size_t len)
{
    const char *jobid = getenv("KUMI_JOBID");
    char label[200], tok[33];
    if (!jobid || !*jobid) jobid = "0";
    snprintf(label, sizeof label, "kumi coll/sm restart %s", e->name);
    if (kumi_jobkey_derive_hex(label, tok, 32) != 0) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (const char *c = e->name; *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
        snprintf(tok, sizeof tok, "x%016llx", (unsigned long long)h);
    }
    snprintf(name, len, "/kumi.%s.csm.%s", jobid, tok);
}

/* No collective of e in progress (every rank finished the same last one
 * and none had begun the next: as the segment and this rank tell)? */
static int ck_quiet(const struct sm_comm *e)
{
    uint32_t d = atomic_load(&e->ctl[0].done);
    if (e->n != d || e->fin != d) return 0;   /* fin: a done word may be published before the end */
    for (int r = 0; r < e->p; r++)
        if (atomic_load(&e->ctl[r].done) != d || atomic_load(&head(e, r, d + 1)->stamp) == d + 1)
            return 0;
    return 1;
}

static void ck_drop(struct sm_comm *e)
{
    if (e->seg) munmap(e->seg, e->seglen);
    e->seg = NULL;
    e->state = -1;
}

/* Map the segment name at e->seg (rank 0: made from its copy). */
static const char *ck_map(struct sm_comm *e, const char *name, int *err)
{
    const char *what = NULL;
    int fd;
    struct stat st;
    *err = 0;
    if (e->me == 0) {
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno == EEXIST) {   /* a leftover of this job's own failed restart */
            shm_unlink(name);
            fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        }
        size_t done = 0;
        if (fd < 0) what = "shm_open";
        else if (ftruncate(fd, (off_t)e->seglen) != 0) what = "ftruncate";
        while (!what && done < e->seglen) {
            ssize_t k = pwrite(fd, (char *)e->seg + done, e->seglen - done, (off_t)done);
            if (k <= 0) what = "write";
            else done += (size_t)k;
        }
    } else {
        fd = shm_open(name, O_RDWR, 0);
        if (fd < 0) what = "shm_open";
        else if (fstat(fd, &st) != 0) what = "fstat";
        else if (st.st_uid != geteuid() || (st.st_mode & 077) || !S_ISREG(st.st_mode) ||
                 (size_t)st.st_size < e->seglen) {
            what = "the segment is not this job's (owner, mode or size)";
            errno = EPERM;
        }
    }
    if (!what && mmap(e->seg, e->seglen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
        what = "mmap";
    if (what) *err = errno;
    if (fd >= 0) close(fd);
    if (what && e->me == 0 && fd >= 0) shm_unlink(name);
    return what;
}

/* lead (mine 0) and join (mine 1): rank 0 of each communicator, then the others */
static int ck_shared, ck_gone;              /* segments of this rank shared again, given up */

static int ck_share(int join, char *why, size_t len)
{
    int rc = 0;
    if (!join) ck_shared = ck_gone = 0;
    pthread_mutex_lock(&sm_lock);
    if (!join && sm_here) memset(sm_here, -1, (size_t)kumi_world_size());   /* another placement, maybe */
    pthread_mutex_unlock(&sm_lock);
    for (struct sm_comm *e = sm_table; e && !rc; e = e->next) {
        if (e->state < 0 || (e->me == 0) == join) continue;
        if (!all_here(e->comm, e->p)) {    /* the same answer on every rank of the communicator */
            if (e->state == 1 && !ck_quiet(e)) {
                snprintf(why, len, "coll/sm: a communicator of %d ranks (rank %d here) had a collective in "
                         "progress at the checkpoint, and its ranks are no longer on one host: restart the job "
                         "with them on one host", e->p, e->me);
                rc = -1;
            }
            if (e->state == 1) ck_gone++;
            ck_drop(e);
            continue;
        }
        if (e->state != 1) continue;
        char name[96];
        int err;
        ck_name(e, name, sizeof name);
        const char *what = ck_map(e, name, &err);
        if (what) {
            snprintf(why, len, "coll/sm: cannot %s the segment %s of a communicator of %d ranks again (%s: %s)",
                     join ? "map" : "make", name, e->p, what, strerror(err));
            rc = -1;
        } else ck_shared++;
    }
    return rc;
}

static int sm_ck_lead(char *why, size_t len) { return ck_share(0, why, len); }
static int sm_ck_join(char *why, size_t len) { return ck_share(1, why, len); }

static void sm_ck_unlink(void)
{
    if (ck_shared || ck_gone)
        kumi_log(1, "coll/sm: restart: %d segment%s shared again, %d given up (their ranks no longer on one host: "
                 "the next component runs their collectives)", ck_shared, ck_shared == 1 ? "" : "s", ck_gone);
    for (struct sm_comm *e = sm_table; e; e = e->next)
        if (e->state == 1) {
            char name[96];
            ck_name(e, name, sizeof name);
            if (e->me == 0) shm_unlink(name);
            memcpy(e->name, name, sizeof e->name);
        }
}

static const struct kumi_ckpt_hook sm_ck_hook = {
    .quiesce = sm_ck_quiesce,
    .lead = sm_ck_lead,
    .join = sm_ck_join,
    .unlink = sm_ck_unlink,
    .resume = sm_ck_resume,
};

static int sm_comm_query(MPI_Comm comm, int *priority, struct kumi_coll_fns *fns)
{
    (void)priority;                 /* the default: parameter coll_sm_priority */
    if (kumi_comm_is_inter(comm)) return KUMI_UNAVAILABLE;
    if (kumi_ckpt_enabled() && !atomic_load(&sm_hooked)) {   /* a job with checkpoints: coll_sm_ckpt.c */
        if (kumi_ckpt_hook_add(&sm_ck_hook) != 0) return KUMI_UNAVAILABLE;
        atomic_store(&sm_hooked, 1);
    }
    int p = kumi_comm_size(comm);
    if (p < 2 || !all_here(comm, p)) return KUMI_UNAVAILABLE;
    struct sm_comm *e = calloc(1, sizeof *e);
    if (!e) return KUMI_UNAVAILABLE;
    e->comm = comm;
    e->p = p;
    e->me = kumi_comm_rank(comm);
    /* a core of its own (mpiexec binds only when there are enough), or
     * no more ranks here than CPUs: spin first, and every rank leaves the
     * barrier as soon as it sees all; otherwise no spinning, and the others
     * leave the barrier after rank 0 (the usual root of what follows,
     * which then finds them waiting instead of being waited for) */
    int own = kumi_rpim_bound_alone() || (!getenv(KUMI_ENV_BIND_CPUS) && p <= ncpus());
    e->spin = own ? (int)(sm_spin > 0 ? sm_spin : 0) : 0;
    e->lead = sm_lead >= 0 ? sm_lead > 0 : !own || p > sm_flat_max;
    e->pieces = sm_bcast_pieces >= 0 ? sm_bcast_pieces > 0 : !own;
    pthread_mutex_lock(&sm_lock);
    struct sm_comm **pp = &sm_table, *old = NULL;
    while (*pp && (*pp)->comm != comm) pp = &(*pp)->next;
    if (*pp) {                      /* a handle reused without release: forget the old */
        old = *pp;
        *pp = old->next;
    }
    e->next = sm_table;
    sm_table = e;
    if (sm_last == old) sm_last = NULL;
    pthread_mutex_unlock(&sm_lock);
    if (old) {
        if (old->seg) munmap(old->seg, old->seglen);
        free(old);
    }
    fns->barrier = sm_barrier;
    fns->bcast = sm_bcast;
    fns->reduce = sm_reduce;
    fns->allreduce = sm_allreduce;
    fns->allgather = sm_allgather;
    fns->alltoall = sm_alltoall;
    return KUMI_OK;
}

static void sm_comm_release(MPI_Comm comm)
{
    pthread_mutex_lock(&sm_lock);
    struct sm_comm **pp = &sm_table, *e = NULL;
    while (*pp && (*pp)->comm != comm) pp = &(*pp)->next;
    if (*pp) {
        e = *pp;
        *pp = e->next;
    }
    if (sm_last == e) sm_last = NULL;
    pthread_mutex_unlock(&sm_lock);
    if (e) {
        if (e->seg) munmap(e->seg, e->seglen);
        free(e);
    }
}

static void sm_close(void)
{
    if (atomic_load(&sm_hooked)) kumi_ckpt_hook_remove(&sm_ck_hook);
    atomic_store(&sm_hooked, 0);
    pthread_mutex_lock(&sm_lock);
    struct sm_comm *e = sm_table;
    sm_table = sm_last = NULL;
    free(sm_here);
    sm_here = NULL;
    pthread_mutex_unlock(&sm_lock);
    while (e) {
        struct sm_comm *nx = e->next;
        if (e->seg) munmap(e->seg, e->seglen);
        free(e);
        e = nx;
    }
}

static const struct kumi_coll_ops sm_ops_table = {
    .hdr = KUMI_COLL_OPS_HDR,
    .comm_query = sm_comm_query,
    .comm_release = sm_comm_release,
};

KUMI_EXPORT const struct kumi_component kumi_coll_sm_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "coll",
    .name = "sm",
    .version = { 0, 1, 0 },
    .description = "Small collectives through a shared-memory segment per communicator (ranks on one host)",
    .priority = 35,
    .register_params = sm_register_params,
    .close = sm_close,
    .ops = &sm_ops_table,
};
