/* p2p/shmem: the component: parameters, open, init (this rank's segment
 * and doorbell), wireup (same-host peers, their segments checked, CMA
 * verdicts), reaches, finalize, and the state the files share.  The design
 * is described in p2p_shmem.h. */
#include "p2p_shmem.h"
#include "p2p_shmem_cal.h"
#include <sys/random.h>
#include <time.h>

/* parameters */
size_t p2p_shmem_eager, p2p_shmem_ringsz, p2p_shmem_cma_min = SIZE_MAX, p2p_shmem_cma_min_set;
size_t p2p_shmem_pipe_min, p2p_shmem_pipe_chunk, p2p_shmem_stream_max, p2p_shmem_stream_queue;
static int p2p_shmem_stream_set;   /* p2p_shmem_stream_limit set by the user: used in both states */
const char *p2p_shmem_cma_mode;
int p2p_shmem_cma_adapt;
static double p2p_shmem_sw_slow, p2p_shmem_sw_fast;
static size_t p2p_shmem_sw_min;    /* p2p_shmem_cma_min_slow */
const char *p2p_shmem_cma_status;
char p2p_shmem_cma_status_buf[160];

/* state */
int p2p_shmem_me = -1, p2p_shmem_size;
char p2p_shmem_jobid[64];
char p2p_shmem_segname[128];
int p2p_shmem_created;             /* p2p_shmem_segname is ours to unlink */
struct p2p_shmem_seghdr *p2p_shmem_seg;
size_t p2p_shmem_seglen;
struct p2p_shmem_peer *p2p_shmem_peers;
int *p2p_shmem_local;              /* same-host peers (not me) */
int p2p_shmem_nlocal;
int p2p_shmem_bellfd = -1, p2p_shmem_readyfd = -1;
int p2p_shmem_cma_ok;              /* this rank may try CMA at all */
/* Threads of this process asleep on the doorbell (the progress thread of the
 * thread engine while the application polls, or the other way round); while
 * one sleeps, progress() leaves the sleeping word and the socket to it, or
 * writers would stop ringing a sleeper that still waits.  Changed under the
 * library lock (pollfds() is called with it held). */
int p2p_shmem_sleepers;
size_t p2p_shmem_nqueued;          /* ops queued or waiting for an ACK */
int p2p_shmem_in_progress;
volatile uint64_t p2p_shmem_probe = P2P_SHMEM_MAGIC;   /* peers read this with CMA */

/* Switch points of the 8-64 KiB band, chosen by measurement (mpibench lat
 * and bibw, 2 ranks bound, interleaved with Open MPI and MPICH; 2026-11-28).
 * Where CMA pays depends on the machine: p2p_shmem_cma_min is chosen at
 * start-up (p2p_shmem_cal.c) unless the user sets it.  Where it was first
 * measured, a rendezvous pulled in one copy beat the two copies through the
 * ring in latency from about 6 KiB (8 KiB: 1.31 vs 1.54 us, 16 KiB: 1.59 vs
 * 2.72); on another (2026-11-29) a pull of 8 KiB cost 3.25 us against 1.24
 * through the ring, and the ring stayed ahead up to 32 KiB.  Without CMA,
 * pieces of 4 KiB above 8 KiB (16 KiB: 2.20 vs 2.73 us whole, 32 KiB: 3.73
 * vs 4.66, bibw alike).
 * 8 KiB itself goes whole (one record, its stamp after the payload, no tail
 * counter stored per piece): bi-directional bandwidth 1.10-1.25 x the
 * pipelined one, with CMA or without, latency the same (tests/bench/
 * shm-band.sh -w, 2026-11-28, 5 rounds on a loaded machine: 16.6-17.8 vs
 * 14.2-15.1 GB/s; MPICH 14.7-14.9).
 * Pieces of 16 KiB, not 4 (2026-11-30, an AMD EPYC guest whose two vCPUs
 * sat on one core complex or on two, the "fast" and "slow" states of
 * p2p_shmem_cal.c; shm-band.sh -r 5-7 -m lat,bibw, 8193-65535 B, three runs
 * in the fast state, one in the slow): each piece costs the receiver one
 * more transfer of the tail counter's line, about 0.2 us between core
 * complexes, and 4 KiB of copying hides less than that.  Latency with 16 KiB
 * pieces against 4 KiB: fast 0.62-0.92 x (65535 B 1.32-1.39 us against
 * 2.08-2.12; 8193 B 0.41-0.42 against 0.46, MPICH 0.36-0.37), slow 0.82-0.92 x
 * at 8-16 KiB; bi-directional bandwidth 0.85-1.09 x (alike within the
 * noise).  Above the eager limit, where nothing is pulled (CMA dearer per
 * byte than the ring, p2p_shmem_cal.c): 1 MiB 28.7 against 30.8 us. */
#define PIPE_MIN_DEFAULT   (8 * 1024 + 1)
#define PIPE_CHUNK_DEFAULT (16 * 1024)
/* A window of back-to-back sends just above cma_min: one process_vm_readv
 * and one ACK per message, serialised behind the receiver, moved 0.6-0.7 x
 * the bytes per second of the eager copy through the ring just below it
 * (mpibench bw, 8193 B).  A message sent while an earlier CMA transfer to the
 * same receiver is unanswered (or sends to it are queued) goes eagerly,
 * written whole, up to this size instead; a lone one (latency) is still
 * pulled.  Measured (tests/bench/shm-band.sh, interleaved): one-way the eager
 * stream wins up to 24 KiB and more (1.2-1.7 x), but both ways at once each
 * core copies twice what CMA copies and it lost from 14-16 KiB (0.77 x at
 * 16 KiB) where a pull cost 1.3 us (2026-11-28).  On the machine where it
 * costs 1.5-3.3 us (2026-11-29, 1 MiB rings, the payload written whole while
 * the receiver is behind: p2p_shmem_whole_ok), the ring's two copies, in
 * cache, won both ways up to 80 KiB: tests/bench/shm-band.sh -w 200, 2 ranks
 * bound, 10th percentile of the windows, 3-5 interleaved rounds on a loaded
 * machine, stream_limit 12 KiB (pulled) against 128 KiB (the ring), GB/s:
 * 32 KiB 13.7 vs 29.8, 65537 B 7.2 vs 19.6, 80 KiB 18.7 vs 25.7, 96 KiB
 * 17.2 vs 14.7, 128 KiB 15.4 vs 8.9 (MPICH 14.1, 10.9, 18.4, 19.2, 17.4). */
#define STREAM_MAX_DEFAULT (80 * 1024)
/* ... with 1 MiB rings.  With 256 KiB rings (jobs of more than 4 ranks) a
 * window of 64 such messages each way overflows the ring and the sender
 * waits for the receiver: the same run with ring_size 256k, 7 rounds, the
 * ring 0.75-0.85 x the pull at 32-64 KiB.  So the default is at most a
 * twelfth of the ring (80 KiB of 1 MiB, 21845 B of 256 KiB); a value the
 * user sets is used as given. */
#define STREAM_RING_DIV 12
#define STREAM_RING_DIV_S "12"
/* The ring: a window of sends larger than the ring stalls the sender until
 * the receiver drains it, and a window both ways stalls both.  mpibench's
 * bibw window is 64 messages (512 KiB of 8 KiB ones): with 1 MiB rings
 * instead of 256 KiB, 2 ranks bound (tests/bench/shm-band.sh -b -w 300,
 * 4 interleaved rounds, 2026-11-29): 26.3 vs 12.5 GB/s at 4 KiB, 34.1 vs
 * 10.5 at 8191 B, 26.4 vs 12.1 at 8193, 29.6 vs 12.5 at 12289 (MPICH
 * 18-19 at 8 KiB).  A ring costs /dev/shm only once written, but the room
 * asked for at start-up grows with it: 1 MiB rings in small jobs only. */
#define RING_BIG_RANKS 4
#define RING_BIG_RANKS_S "4"

/* Once the room is used up, a stream's messages are pulled again (see
 * p2p_shmem_stream_limit()); up to p2p_shmem_stream_queue bytes they may wait
 * for room instead, queued behind the ring, the two ranks copying through it
 * in step.  Off by default: it wins only while both ranks have a core.
 * mpibench's window of 64 sends each way (4 MiB of 64 KiB messages through a
 * 1 MiB ring), 2 ranks bound, 4-6 interleaved rounds on a loaded machine
 * (load average 5-9, 2026-11-29), stream_queue 64k against 0, GB/s: the
 * 10th percentile of 100 windows (the windows in which both ranks ran) 65535
 * B 25.2-30.6 vs 19.9-21.0, 65536 B 27.2-28.1 vs 20.8-21.4 (MPICH 18.3-18.7);
 * but the median window 9.3-15.2 vs 14.2-15.5 and 11.9-12.1 vs 15.5-16.8,
 * the mean over all windows 5.5 vs 8.1 and 6.0 vs 11.3, and mpibench's own
 * figure (41 rounds, -x 4) 0.65 x: a rank that loses its core stops the
 * other, where a pull needs only the receiver.  A lone message (no transfer
 * outstanding) is pulled either way. */
#define STREAM_QUEUE_DEFAULT 0

/* The stream limit in use with rings of ringsz bytes: p2p_shmem_stream_limit
 * as the user set it, or its default, at most a twelfth of the ring; shown
 * in the read-only p2p_shmem_stream_limit_effective.  p2p_shmem_stream_queue
 * becomes at most that (p2p_shmem_stream_queue_effective). */
static size_t p2p_shmem_stream_effective(size_t ringsz)
{
    static size_t eff, qeff;
    size_t v = p2p_shmem_stream_max, q = p2p_shmem_stream_queue;
    p2p_shmem_stream_set = kumi_param_is_default("p2p_shmem_stream_limit") == 0;
    if (kumi_param_is_default("p2p_shmem_stream_limit") == 1 && v > ringsz / STREAM_RING_DIV)
        v = ringsz / STREAM_RING_DIV;
    eff = v;
    qeff = q < v ? q : v;
    kumi_param_register_size("p2p", "shmem", "stream_limit_effective", eff,
                             "Read-only: the stream limit in use in this process, p2p_shmem_stream_limit "
                             "as set, or its default bounded by the ring (kumi_info: for a job of up to "
                             "4 ranks; setting it changes nothing)",
                             KUMI_LEVEL_TUNER, &eff);
    kumi_param_register_size("p2p", "shmem", "stream_queue_effective", qeff,
                             "Read-only: p2p_shmem_stream_queue in use in this process: as set, at most "
                             "the stream limit in use (kumi_info: for a job of up to 4 ranks; setting it "
                             "changes nothing)",
                             KUMI_LEVEL_TUNER, &qeff);
    p2p_shmem_stream_queue = qeff;
    return v;
}

static void p2p_shmem_register(void)
{
    kumi_param_register_size("p2p", "shmem", "eager_limit", 64 * 1024,
                             "Largest message sent eagerly through shared memory (copied in and "
                             "out of the ring); larger ones use rendezvous",
                             KUMI_LEVEL_TUNER, &p2p_shmem_eager);
    kumi_param_register_size("p2p", "shmem", "ring_size", 0,
                             "Bytes of each per-pair ring (a power of two, at least 4k); 0: 1 MiB "
                             "in jobs of up to " RING_BIG_RANKS_S " ranks, 256 KiB in larger ones",
                             KUMI_LEVEL_TUNER, &p2p_shmem_ringsz);
    kumi_param_register_size("p2p", "shmem", "pipeline_min", PIPE_MIN_DEFAULT,
                             "Smallest payload copied through the ring in pieces that the receiver "
                             "copies out while the sender writes the next (pipelined); smaller ones "
                             "are written whole before the receiver sees them (0: never pipelined)",
                             KUMI_LEVEL_TUNER, &p2p_shmem_pipe_min);
    kumi_param_register_size("p2p", "shmem", "pipeline_chunk", PIPE_CHUNK_DEFAULT,
                             "Bytes of one piece of a pipelined payload (a multiple of 64; at most "
                             "a quarter of the ring)",
                             KUMI_LEVEL_TUNER, &p2p_shmem_pipe_chunk);
    kumi_param_register_string("p2p", "shmem", "cma", "auto",
                               "Single-copy transfers with process_vm_readv (CMA): auto (use it "
                               "where the kernel allows), on (warn if refused), off (always the "
                               "pipelined two-copy path)",
                               KUMI_LEVEL_USER, &p2p_shmem_cma_mode);
    kumi_param_register_size("p2p", "shmem", "cma_min", 0,
                             "Smallest message moved with CMA (rendezvous, one copy) rather than "
                             "through the ring, when the receiver can read the sender (below it, "
                             "eager up to eager_limit); 0: chosen at start-up by timing a "
                             "process_vm_readv against the ring's copies (the value in use is "
                             "p2p_shmem_cma_min_effective)",
                             KUMI_LEVEL_TUNER, &p2p_shmem_cma_min_set);
    kumi_param_register_bool("p2p", "shmem", "cma_adapt", 0,
                             "1: follow the machine's state: a "
                             "receiver that finds its copies out of a peer's ring several times "
                             "slower than a copy in its own cache (lines moving between the two "
                             "cores slowly) tells that sender, which then pulls from a lower size "
                             "(chosen as cma_min is, with the ratio measured) and no longer sends "
                             "streams through the ring, until the copies are fast again; 0 (the "
                             "default: with pieces of 16 KiB the ring stayed ahead of the pulls "
                             "in the slow state too, 32 KiB-1 MiB latency 0.5-0.6 x): the start-up "
                             "choice throughout",
                             KUMI_LEVEL_TUNER, &p2p_shmem_cma_adapt);
    kumi_param_register_double("p2p", "shmem", "cma_adapt_slow", P2P_SHMEM_SW_SLOW,
                               "p2p_shmem_cma_adapt: the ratio of a receiver's copies out of a ring "
                               "(the least of a window of 8 timed copies of 8 KiB or more) to one copy "
                               "in its cache above which that ring is slow",
                               KUMI_LEVEL_TUNER, &p2p_shmem_sw_slow);
    kumi_param_register_double("p2p", "shmem", "cma_adapt_fast", P2P_SHMEM_SW_FAST,
                               "p2p_shmem_cma_adapt: the ratio below which a slow ring is fast again "
                               "(at most two thirds of p2p_shmem_cma_adapt_slow)",
                               KUMI_LEVEL_TUNER, &p2p_shmem_sw_fast);
    kumi_param_register_size("p2p", "shmem", "cma_min_slow", 0,
                             "p2p_shmem_cma_adapt: the smallest message pulled with CMA towards a "
                             "receiver whose copies out of the ring are slow (0: chosen as "
                             "cma_min is, with the ratio that receiver measured; never above "
                             "the start-up choice)",
                             KUMI_LEVEL_TUNER, &p2p_shmem_sw_min);
    kumi_param_register_size("p2p", "shmem", "stream_limit", STREAM_MAX_DEFAULT,
                             "Towards a receiver that pulls with CMA: largest message sent eagerly "
                             "(written whole into the ring) while an earlier CMA transfer to that "
                             "receiver is still unanswered or sends to it are queued (a stream of "
                             "messages); a lone message of cma_min bytes or more is pulled (0: never; "
                             "unless set, 80k or p2p_shmem_ring_size / " STREAM_RING_DIV_S
                             " where that is less: see p2p_shmem_stream_limit_effective)",
                             KUMI_LEVEL_TUNER, &p2p_shmem_stream_max);
    kumi_param_register_size("p2p", "shmem", "stream_queue", STREAM_QUEUE_DEFAULT,
                             "Largest message of a stream (see p2p_shmem_stream_limit) that waits for "
                             "room in a full ring, queued behind it, rather than being pulled with CMA "
                             "(0, the default: none wait; at most the stream limit in use: see "
                             "p2p_shmem_stream_queue_effective)",
                             KUMI_LEVEL_TUNER, &p2p_shmem_stream_queue);
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
    if (kumi_registry_listing()) {          /* kumi_info: what a job would choose */
        p2p_shmem_cma_choose(1);
        p2p_shmem_stream_effective(p2p_shmem_ringsz ? p2p_shmem_ringsz : (size_t)1 << 20);
    }
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

static void p2p_shmem_cleanup(void)
{
    if (p2p_shmem_peers) {
        for (int r = 0; r < p2p_shmem_size; r++) {
            if (p2p_shmem_peers[r].seg) munmap(p2p_shmem_peers[r].seg, p2p_shmem_peers[r].seglen);
            if (p2p_shmem_peers[r].segfd >= 0) close(p2p_shmem_peers[r].segfd);
        }
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

/* Coordinated checkpoints (p2p contract 1.7).  The sends parked until the
 * peer's ACK (a CMA rendezvous no receive has matched yet: the receiver
 * holds its descriptor in the request layer's unexpected queue, the data
 * stay in our memory) outlive the segments: kept here across
 * ckpt_release, taken back by the next init, completed by the ACK that the
 * peer sends once it pulls them (over the new rings). */
static struct kumi_sendop **p2p_shmem_held;
static int p2p_shmem_nheld;

static void p2p_shmem_ckpt_restore(void)
{
    if (!p2p_shmem_held) return;
    size_t n = 0;
    for (int r = 0; r < p2p_shmem_nheld && r < p2p_shmem_size; r++) {
        p2p_shmem_peers[r].acks = p2p_shmem_held[r];
        for (struct kumi_sendop *op = p2p_shmem_held[r]; op; op = op->tnext) n++;
    }
    p2p_shmem_nqueued += n;
    kumi_log(2, "p2p/shmem: %zu send%s waiting for a peer's pull kept across the checkpoint", n, n == 1 ? "" : "s");
    free(p2p_shmem_held);
    p2p_shmem_held = NULL;
    p2p_shmem_nheld = 0;
}

/* Nothing of ours in a queue or in a peer's ring that it has not read. */
static int p2p_shmem_ckpt_quiet(void)
{
    if (!p2p_shmem_peers) return 1;
    if (p2p_shmem_pulls_pending()) return 0;
    for (int r = 0; r < p2p_shmem_size; r++) {
        struct p2p_shmem_peer *p = &p2p_shmem_peers[r];
        if (p->qhead) return 0;
        if (p->octl && atomic_load_explicit(&p->octl->head, memory_order_acquire) != p->otail) return 0;
        if (p->in_msg) return 0;
    }
    return 1;
}

static void p2p_shmem_ckpt_release(void)
{
    if (p2p_shmem_peers && !p2p_shmem_held) {
        p2p_shmem_held = calloc((size_t)p2p_shmem_size, sizeof *p2p_shmem_held);
        if (p2p_shmem_held) {
            p2p_shmem_nheld = p2p_shmem_size;
            for (int r = 0; r < p2p_shmem_size; r++) {
                p2p_shmem_held[r] = p2p_shmem_peers[r].acks;
                p2p_shmem_peers[r].acks = NULL;
            }
        }
    }
    p2p_shmem_cleanup();
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
    if (p2p_shmem_ringsz == 0)                       /* every rank of the job picks the same */
        p2p_shmem_ringsz = p2p_shmem_size <= RING_BIG_RANKS ? (size_t)1 << 20 : (size_t)256 << 10;
    if (p2p_shmem_ringsz < 4096 || (p2p_shmem_ringsz & (p2p_shmem_ringsz - 1)))
        return p2p_shmem_fail(MPI_ERR_OTHER, 1, "p2p_shmem_ring_size (%zu) must be a power of "
                              "two of at least 4096", p2p_shmem_ringsz);
    /* pieces: whole cells, at most a quarter of the ring */
    p2p_shmem_pipe_chunk &= ~(size_t)(P2P_SHMEM_CELL - 1);
    if (p2p_shmem_pipe_chunk > p2p_shmem_ringsz / 4) p2p_shmem_pipe_chunk = p2p_shmem_ringsz / 4;
    if (p2p_shmem_pipe_chunk < P2P_SHMEM_CELL) p2p_shmem_pipe_chunk = P2P_SHMEM_CELL;
    p2p_shmem_stream_max = p2p_shmem_stream_effective(p2p_shmem_ringsz);
    if (!kumi_jobkey_secret())
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
    for (int r = 0; r < p2p_shmem_size; r++) p2p_shmem_peers[r].segfd = -1;
    p2p_shmem_ckpt_restore();

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
    p2p_shmem_membar_init();
    {                                     /* the key of the records' stamps (p2p_shmem.h) */
        uint64_t key = 0;
        if (getrandom(&key, sizeof key, GRND_NONBLOCK) != (ssize_t)sizeof key)
            key = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)p2p_shmem_seg ^ (uint64_t)time(NULL);
        p2p_shmem_seg->stampkey = key | 1;
    }
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
    char val[KUMI_KVS_VAL_MAX];
    int ncma = 0, nkept = 0;
    if (p2p_shmem_size <= 1 || !p2p_shmem_seg) {
        p2p_shmem_cma_choose(0);
        return MPI_SUCCESS;
    }
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
        /* same host: same boot id and network namespace (kumi_host_id), so
         * ranks in two network namespaces of one machine never use shared
         * memory or CMA between them, as two machines could not */
        if (!kumi_same_host(r)) continue;
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
            /* kept open (up to P2P_SHMEM_KEEPFDS of them) until the first
             * send maps it: a rank that aborts removes the job's segments
             * at once, and a peer still alive must not then fail to reach
             * one it had not written to yet */
            if (fd >= 0) {
                if (nkept < P2P_SHMEM_KEEPFDS) {
                    p->segfd = fd;
                    nkept++;
                } else {
                    close(fd);
                }
            }
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
    p2p_shmem_cma_choose(ncma);
    return MPI_SUCCESS;
}

int p2p_shmem_reaches(int peer)
{
    return p2p_shmem_peers && peer >= 0 && peer < p2p_shmem_size && peer != p2p_shmem_me &&
           p2p_shmem_peers[peer].same_host;
}

/* A stream towards p, a peer that pulls: eager (whole) up to stream_limit,
 * as long as the message fits the room left in the ring; once the ring is
 * full (sends queued), up to stream_queue bytes queued behind it (written as
 * the receiver frees room), larger ones pulled again.  A stream that
 * overfills the ring waits for the receiver to drain it; with 256 KiB rings,
 * or where the two ranks do not both have a core most of the time, that wait
 * cost more than the pulls (32 KiB both ways, load average 14, 0.37 x the
 * pull: tests/bench/shm-band.sh -w 300), where the pull does not need the
 * sender to run; only while both ranks run is the ring ahead (see
 * STREAM_QUEUE_DEFAULT). */
static size_t p2p_shmem_stream_limit(struct p2p_shmem_peer *p)
{
    size_t lim = p->elim - 1, fr;
    if (lim < p2p_shmem_stream_queue) lim = p2p_shmem_stream_queue;
    if (p->qhead) return lim;
    fr = p2p_shmem_ofree(p, p2p_shmem_stream_max + 2 * P2P_SHMEM_CELL);
    if (fr < 2 * P2P_SHMEM_CELL) return lim;
    fr -= 2 * P2P_SHMEM_CELL;                      /* the record cell and the rounding */
    if (fr > p2p_shmem_stream_max) fr = p2p_shmem_stream_max;
    return fr > lim ? fr : lim;
}

/* The state switch (p2p_shmem_cal.c, "The state").  The receiver's side:
 * a copy of bytes out of peer's ring took us; a verdict that changes is
 * published in our segment, where peer reads it (eager_limit). */
double p2p_shmem_sw_ref;
struct p2p_shmem_cal p2p_shmem_cal_job;

double p2p_shmem_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

void p2p_shmem_sw_time(int peer, struct p2p_shmem_peer *p, size_t bytes, double us)
{
    int changed = p2p_shmem_sw_add(&p->sw, bytes, us, p2p_shmem_sw_ref, p2p_shmem_sw_slow, p2p_shmem_sw_fast);
    if (p->sw.n == 0)
        kumi_log(3, "p2p/shmem: copies out of the ring from rank %d: %.2f x one in cache (%s)", peer,
                 p->sw.last, p->sw.verdict ? "slow" : "fast");
    if (changed) {
        atomic_store_explicit(p2p_shmem_swword(p2p_shmem_seg, peer), p->sw.verdict, memory_order_relaxed);
        kumi_log(2, "p2p/shmem: copies out of the ring from rank %d cost %.2f x one in cache: %s", peer,
                 p->sw.last, p->sw.verdict ? "slow (it pulls from a lower size)" : "fast again");
    }
}

/* The sender's side: peer's verdict on our ring changed to v (0: fast, the
 * start-up limits; else slow: cma_min chosen again with the ring's copies
 * at the ratio measured, never above the start-up one, and no stream
 * through the ring, whatever cma_min that gives: the slow state's ring moved
 * a flat 4.2 GB/s both ways at 12-64 KiB, 0.3-0.67 x MPICH, issue 22). */
static void p2p_shmem_sw_apply(int peer, struct p2p_shmem_peer *p, uint32_t v)
{
    char why[240] = "";
    size_t m = 0;
    p->swv = v;
    p->sprobe = 0;
    if (v && p2p_shmem_sw_min) {
        m = p2p_shmem_sw_min;
        snprintf(why, sizeof why, "p2p_shmem_cma_min_slow");
    } else if (v) {
        m = p2p_shmem_cal_choose_x(&p2p_shmem_cal_job, p2p_shmem_sw_xcore(v), P2P_SHMEM_SW_GRID, why, sizeof why);
        if (m < P2P_SHMEM_SW_FLOOR) m = P2P_SHMEM_SW_FLOOR;
    }
    if (v && (m == 0 || m > p->elim)) m = p->elim;   /* slow all the same: no stream through the ring */
    p->selim = m;
    kumi_log(2, "p2p/shmem: towards rank %d: CMA from %zu bytes (%s%s)", peer, m ? m : p->elim,
             v ? "its copies out of our ring are slow: " : "its copies out of our ring are fast", why);
}

size_t p2p_shmem_peer_cma_min(const struct p2p_shmem_peer *p)
{
    return p->selim ? p->selim : p2p_shmem_cma_min;
}

/* Towards a peer that can read us with CMA, messages of at least cma_min
 * bytes go by rendezvous, pulled in one copy (p2p_shmem_rget); else
 * eagerly up to eager_limit (written whole, or pipelined from
 * pipeline_min), rendezvous through the ring above. */
static size_t p2p_shmem_eager_limit(int peer)
{
    struct p2p_shmem_peer *p;
    if (p2p_shmem_peers && (unsigned)peer < (unsigned)p2p_shmem_size && p2p_shmem_peers[peer].elim) {
        p = &p2p_shmem_peers[peer];                /* decided (the peer's verdict on us is final) */
        if (__builtin_expect(p->swp != NULL, 0)) { /* the state switch: the peer's verdict on our ring */
            uint32_t v = atomic_load_explicit(p->swp, memory_order_relaxed);
            if (__builtin_expect(v != p->swv, 0)) p2p_shmem_sw_apply(peer, p, v);
            if (p->selim && !p2p_shmem_stream_set) {
                if (++p->sprobe < P2P_SHMEM_SW_PROBE) return p->selim - 1;
                p->sprobe = 0;                     /* a probe: the peer goes on timing the ring */
                return p->elim - 1;
            }
        }
        if (__builtin_expect(p->acks != NULL || p->qhead != NULL, 0) && p->elim - 1 < p2p_shmem_stream_max &&
            p->cma == P2P_SHMEM_CMA_YES)
            return p2p_shmem_stream_limit(p);
        return p->elim - 1;
    }
    if (p2p_shmem_cma_min > p2p_shmem_eager && !p2p_shmem_sw_ref) return p2p_shmem_eager;
    if (!p2p_shmem_reaches(peer)) return p2p_shmem_eager;
    p = &p2p_shmem_peers[peer];
    if ((p->seg || p2p_shmem_attach(p, peer) == 0) && p2p_shmem_peer_cma(p)) {
        size_t m = p2p_shmem_cma_min < p2p_shmem_eager + 1 ? p2p_shmem_cma_min : p2p_shmem_eager + 1;
        p->elim = (m ? m - 1 : 0) + 1;
        if (p2p_shmem_sw_ref > 0) p->swp = p2p_shmem_swword(p->seg, p2p_shmem_me);
    } else if (p->seg && p->cma != P2P_SHMEM_CMA_UNKNOWN) {
        p->elim = p2p_shmem_eager + 1;
    }
    return p->elim ? p->elim - 1 : p2p_shmem_eager;
}

static void p2p_shmem_finalize(void)
{
    p2p_shmem_cleanup();
}

static const struct kumi_p2p_ops p2p_shmem_ops = {
    .hdr = KUMI_P2P_OPS_HDR,
    .caps = KUMI_P2P_CAP_RGET,
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
    .ckpt_quiet = p2p_shmem_ckpt_quiet,
    .ckpt_release = p2p_shmem_ckpt_release,
    .send_inline = p2p_shmem_send_inline,
    .recv_inline = p2p_shmem_recv_inline,
    .pull_flush = p2p_shmem_pull_flush,
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
