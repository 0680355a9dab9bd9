/* p2p_shmem.h: private to p2p/shmem: the design (below), the layout of a
 * segment and of its rings, the state the files share, and the small ring
 * helpers that the send and receive paths inline.
 *
 * Files: p2p_shmem.c (the component: parameters, init, wireup, finalize),
 * p2p_shmem_seg.c (segments: names, creation checks, attaching a peer's),
 * p2p_shmem_ring.c (rings: sending, receiving, progress), p2p_shmem_cma.c
 * (single copy with process_vm_readv), p2p_shmem_bell.c (the doorbell and
 * sleeping).
 *
 * Segments.  Each rank creates one segment at init,
 * shm_open("/kumi.<jobid>.<rank>.<token>") (so /dev/shm/kumi.<jobid>.<rank>.<token>;
 * mpiexec removes every /dev/shm/kumi.<jobid>.* however the job ends; a normal
 * finalize unlinks its own).  The token is 32 hex digits of an HMAC keyed with
 * the job secret (kumi/jobkey.h): only members of the job can compute a
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
 * Records are made of 64-byte cells (TINY and PAD: half a cell).  A record's first cell starts with a
 * 64-bit stamp, a function of the record's ring position keyed with a random
 * word of the ring's segment (p2p_shmem_stamp): the receiver learns that a
 * record is there from the stamp in the cell itself, without reading the
 * sender's tail counter (another cache line), and a stale cell of an earlier
 * lap, payload bytes included, cannot pass for a record (it would have to
 * hold the keyed stamp of this lap).  The sender writes the rest of the
 * record first and the stamp last (release).  Kinds of records:
 *   SHORT one cell {stamp, kind, flags, type, paylen, ctx, src, tag, seq,
 *        sreq, up to 28 bytes of payload}: an eager message of at most 28
 *        bytes (header and payload in one cache line, read once);
 *   SHORTN the same without sreq (a message with no sender cookie: a
 *        blocking MPI_Send), its payload from offset 28: up to 36 bytes in
 *        one cache line;
 *        either kind carries up to P2P_SHMEM_SHORT_BIG (64) bytes: what does
 *        not fit the first cell continues in the next one (the payload
 *        contiguous from its start in the first cell; a record that would
 *        wrap at the ring's end goes as MSG), written before the stamp;
 *   TINY half a cell {stamp, kind, seq's low byte, type, paylen, ctx, src,
 *        tag, up to 8 bytes of payload}: an eager message of at most 8 bytes
 *        with no sender cookie (send_inline() only), so that two go in one
 *        cache line (a window of them moves half the lines; Open MPI's
 *        fastbox keeps such messages to 32 bytes too).  Its sequence number
 *        is the one after the last record of a matched kind (EAGER,
 *        EAGER_SYNC, RTS) of the ring: both sides count it (peer oseq,
 *        iseq), and the sender writes TINY only when the message's number is
 *        that one (else SHORT, which carries it and resets the count).  An
 *        MPI_Cancel of such a send finds it by its number alone.  Every other
 *        record starts on a cell: after a TINY record in the first half of a
 *        cell, the sender fills the second with a PAD {stamp, type} first.
 *        (What else a window of small messages shares across the two cores:
 *        the receiver's head counter, stored once per batch of records and
 *        read by the sender only when its cached room runs short; the
 *        receiver's sleeping word, read by the sender after each record but
 *        written only around a sleep; eager budget CREDITs, with receives
 *        posted one per half of kumi_base_eager_budget received (about one
 *        per 30,000 messages of 8 bytes).  Request objects stay local.)
 * the others have the cell {stamp, kumi_hdr} (hdr.reserved holds the
 * type, hdr.pad the flags P2P_SHMEM_F_*; both are 0 again when the request
 * layer sees the header; the type is the byte at offset 10 of either kind
 * of cell), then for
 *   MSG  the payload inline (hdr.paylen bytes, padded to 64): eager copy-in /
 *        copy-out; written before the stamp when it fits the free space and
 *        is smaller than p2p_shmem_pipeline_min (P2P_SHMEM_F_WHOLE: the
 *        receiver takes it at once); else the record goes first and the
 *        payload streams through the ring in pieces of at most
 *        p2p_shmem_pipeline_chunk bytes, the tail counter (stored after each
 *        piece, and only then) saying how far the receiver may read: it
 *        copies one piece out while the sender writes the next, and the
 *        sender pushes more from progress() as the receiver frees space.
 *        This is also the two-copy path for large messages without CMA;
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
 * same way.  Eager messages and smaller payloads always go inline.  The
 * switch points (p2p_shmem.c, chosen by measurement): towards a receiver
 * that can read us, eager_limit(peer) is cma_min - 1, so that every message
 * of cma_min bytes or more is pulled in one copy; otherwise eager up to
 * p2p_shmem_eager_limit, pipelined from pipeline_min.  A stream is the
 * exception: while a CMA transfer to the peer is unanswered (or sends to it
 * are queued), eager_limit(peer) is p2p_shmem_stream_limit, or less: what
 * still fits the ring's free room (nothing once sends are queued), and such a
 * message (cma_min..stream_limit bytes) is written whole (MSG, F_WHOLE):
 * one process_vm_readv and one ACK per message, serialised behind the
 * receiver, move fewer bytes per second than the ring's two copies there; a
 * lone message (no transfer outstanding) is still pulled.  Once the ring is
 * full, a stream's messages are pulled again, or, up to
 * p2p_shmem_stream_queue bytes (0 by default), queued for the ring.  With
 * p2p_shmem_cma_adapt=1 (off by default, p2p_shmem_cal.c) both follow the
 * machine's state: towards a receiver that finds its copies out of our ring
 * slow, cma_min is chosen again (lower) and no stream goes through the ring.
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
 * name cannot be bound by someone else first).  A writer publishes its
 * record (the stamp), then reads the receiver's word, and when it is 1 swaps
 * it to 2 and sends one byte (so one datagram per sleep, whatever the number
 * of writers).  A reader that freed ring space does the same for the sender
 * of that ring (a sender may sleep waiting for space or for an ACK).  The
 * store before the load on one side and the store of the word before the
 * re-check on the other need a full barrier between them (or both could miss
 * the other): the sleeper, about to sleep, calls
 * membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), which makes every running
 * thread of the processes registered for it (every rank of the job, at init)
 * execute one, so the writers, on the fast path, make none (a fence there
 * costs the wait for the stamp's cache line to be owned, once per message).
 * A rank whose kernel refuses membarrier says so in its segment's header
 * (membar 0); writers to it, and a rank that could not register, fence.  progress() clears the word and drains the socket,
 * unless another thread of this process still sleeps on it (the thread
 * engine's progress thread while the application polls): pollfds(NULL, 0)
 * tells that a sleep is over.
 *
 * A peer that dies mid-transfer leaves its ring silent; the job is ended by
 * mpiexec (which also removes the segments).
 */
#ifndef KUMI_P2P_SHMEM_H
#define KUMI_P2P_SHMEM_H

#define _GNU_SOURCE
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <kumi/p2p.h>
#include <kumi/jobkey.h>
#include "p2p_shmem_cal.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
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
#define P2P_SHMEM_KEEPFDS  256                    /* peers' segment descriptors kept open from wire-up */

enum { P2P_SHMEM_REC_MSG = 1, P2P_SHMEM_REC_CMA, P2P_SHMEM_REC_ACK, P2P_SHMEM_REC_SHORT, P2P_SHMEM_REC_SHORTN,
       P2P_SHMEM_REC_TINY, P2P_SHMEM_REC_PAD };
#define P2P_SHMEM_F_WHOLE  1u                     /* MSG: the whole payload follows the record cell */
#define P2P_SHMEM_SHORT_MAX 28                    /* payload bytes in the first cell of a SHORT record */
#define P2P_SHMEM_SHORTN_MAX 36                   /* the same, SHORTN (no sreq) */
#define P2P_SHMEM_SHORT_BIG 64                    /* payload bytes of a SHORT or SHORTN record (two cells) */
#define P2P_SHMEM_HALF     32                     /* a TINY or PAD record */
#define P2P_SHMEM_TINY_MAX 8                      /* payload bytes of a TINY record */
enum { P2P_SHMEM_CMA_UNKNOWN = 0, P2P_SHMEM_CMA_YES = 1, P2P_SHMEM_CMA_NO = 2 };

struct p2p_shmem_seghdr {
    uint64_t magic;
    int32_t pid;
    int32_t nranks;
    uint64_t ringsize;
    uint64_t hdrsize;
    uint64_t stampkey;                    /* random: keys the stamps of this segment's rings */
    int32_t membar;                       /* 1: its owner calls membarrier() before it sleeps */
    char pad0[64 - 44];
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

struct p2p_shmem_rec {                   /* one cell: MSG, CMA, ACK */
    uint64_t stamp;
    struct kumi_hdr hdr;                  /* reserved: the type; pad: P2P_SHMEM_F_* */
};

struct p2p_shmem_short {                 /* the first cell of SHORT and SHORTN */
    uint64_t stamp;
    uint8_t kind, flags, type, paylen;
    int32_t ctx, src, tag;
    uint32_t seq;
    union {
        struct {                          /* SHORT */
            uint32_t sreq_lo, sreq_hi;    /* (8-byte aligned it would not fit) */
            char data[P2P_SHMEM_SHORT_MAX];
        } s;
        char ndata[P2P_SHMEM_SHORTN_MAX]; /* SHORTN */
    } u;
};

struct p2p_shmem_tiny {                  /* TINY and PAD: half a cell */
    uint64_t stamp;
    uint8_t kind, seqlo, type, paylen;    /* as in a SHORT cell, seqlo in place of flags */
    int32_t ctx, src, tag;
    char data[P2P_SHMEM_TINY_MAX];
};

struct p2p_shmem_cmadesc {               /* the cell after a CMA record */
    uint64_t addr;
    uint64_t cookie;
    int32_t pid;
    char pad[64 - 20];
};

_Static_assert(sizeof(struct p2p_shmem_rec) == P2P_SHMEM_CELL, "record cell is one cache line");
_Static_assert(sizeof(struct p2p_shmem_short) == P2P_SHMEM_CELL, "a short record is one cache line");
_Static_assert(offsetof(struct p2p_shmem_short, u.ndata) + P2P_SHMEM_SHORTN_MAX == P2P_SHMEM_CELL &&
               offsetof(struct p2p_shmem_short, u.s.data) + P2P_SHMEM_SHORT_MAX == P2P_SHMEM_CELL,
               "the payload of a short record fills its first cell");
_Static_assert(offsetof(struct p2p_shmem_short, type) == offsetof(struct p2p_shmem_rec, hdr.reserved),
               "the type is at the same place in both kinds of cells");
_Static_assert(sizeof(struct p2p_shmem_tiny) == P2P_SHMEM_HALF &&
               offsetof(struct p2p_shmem_tiny, type) == offsetof(struct p2p_shmem_short, type) &&
               offsetof(struct p2p_shmem_tiny, ctx) == offsetof(struct p2p_shmem_short, ctx) &&
               offsetof(struct p2p_shmem_tiny, tag) == offsetof(struct p2p_shmem_short, tag),
               "a tiny record is half a cell, laid out as a short one up to its tag");
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
    int segfd;                            /* opened and checked at wire-up, until mapped; -1 if not */
    /* sending: ring me -> peer, in the peer's segment */
    struct p2p_shmem_ringctl *octl;
    char *odata;
    uint64_t otail, ohead;                /* our tail; cached head */
    int cma;                              /* cached verdict of the peer on us */
    size_t elim;                          /* eager_limit(peer) + 1 once the verdict is known; 0: not yet */
    struct kumi_sendop *qhead, *qtail;    /* queued (head op may be half written) */
    int qhdr_done;                        /* record cell(s) of qhead written */
    struct kumi_sendop *acks;             /* CMA ops waiting for the peer's ACK */
    uint32_t oseq;                        /* the sequence number a TINY record would have (see TINY) */
    /* receiving: ring peer -> me, in our segment */
    struct p2p_shmem_ringctl *ictl;
    char *idata;
    uint64_t ihead, itail;                /* our head; cached tail */
    uint32_t iseq;                        /* the sequence number of the next TINY record */
    int in_msg;
    struct kumi_hdr ihdr;
    struct kumi_rx *rx;
    size_t paylen, paygot;
    struct sockaddr_un bell;
    socklen_t bell_len;
    /* the state switch (p2p_shmem_cal.c): the peer's verdict on our ring
     * to it as last read, the eager limit + 1 while it says slow (0: fast),
     * and the sends since then (a probe through the ring now and then);
     * receiving: our timing of its ring */
    _Atomic uint32_t *swp;                /* its verdict in its segment; NULL: no switching */
    uint32_t swv;
    size_t selim;
    unsigned sprobe;
    struct p2p_shmem_sw sw;
    double swacc;                         /* a streamed payload being timed: its copies so far (us), */
    size_t swbytes;                       /* their bytes, */
    int swtime;                           /* and the pieces still to time */
};

/* parameters */
extern size_t p2p_shmem_eager, p2p_shmem_ringsz, p2p_shmem_cma_min;
extern size_t p2p_shmem_pipe_min, p2p_shmem_pipe_chunk, p2p_shmem_stream_max, p2p_shmem_stream_queue;
extern const char *p2p_shmem_cma_mode;
extern int p2p_shmem_cma_adapt;
extern const char *p2p_shmem_cma_status;
extern char p2p_shmem_cma_status_buf[160];

/* state */
extern int p2p_shmem_me, p2p_shmem_size;
extern char p2p_shmem_jobid[64];
extern char p2p_shmem_segname[128];
extern int p2p_shmem_created;             /* p2p_shmem_segname is ours to unlink */
extern struct p2p_shmem_seghdr *p2p_shmem_seg;
extern size_t p2p_shmem_seglen;
extern struct p2p_shmem_peer *p2p_shmem_peers;
extern int *p2p_shmem_local;              /* same-host peers (not me) */
extern int p2p_shmem_nlocal;
extern int p2p_shmem_bellfd, p2p_shmem_readyfd;
extern int p2p_shmem_cma_ok;              /* this rank may try CMA at all */
/* membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) works and this process is
 * registered for it: see "Doorbell" above (the fast paths make no fence
 * towards a peer whose segment says membar). */
extern int p2p_shmem_membar;
/* Threads of this process asleep on the doorbell (the progress thread of the
 * thread engine while the application polls, or the other way round); while
 * one sleeps, progress() leaves the sleeping word and the socket to it, or
 * writers would stop ringing a sleeper that still waits.  Changed under the
 * library lock (pollfds() is called with it held). */
extern int p2p_shmem_sleepers;
extern size_t p2p_shmem_nqueued;          /* ops queued or waiting for an ACK */
extern int p2p_shmem_in_progress;
extern volatile uint64_t p2p_shmem_probe;                    /* peers read this with CMA */

/* p2p_shmem_seg.c */
size_t p2p_shmem_hdrsize(int n);
int p2p_shmem_token(const char *what, int rank, char tok[33]);
void p2p_shmem_name(char *buf, size_t len, int rank);
int p2p_shmem_check(int fd, const struct p2p_shmem_peer *p, char *why, size_t whylen);
int p2p_shmem_open_peer(const struct p2p_shmem_peer *p, int rank, char *name, size_t namelen,
                        char *why, size_t whylen);
struct p2p_shmem_ringctl *p2p_shmem_ring(struct p2p_shmem_seghdr *seg, int sender, char **data);
void p2p_shmem_prefault(struct p2p_shmem_ringctl *ctl);
int p2p_shmem_attach(struct p2p_shmem_peer *p, int rank);
_Atomic uint32_t *p2p_shmem_swword(struct p2p_shmem_seghdr *seg, int sender);

/* p2p_shmem_bell.c */
void p2p_shmem_bell_addr(struct sockaddr_un *sa, socklen_t *len, int rank);
void p2p_shmem_drain_bell(void);
int p2p_shmem_pollfds(struct pollfd *fds, int max);
void p2p_shmem_membar_init(void);

/* p2p_shmem_cma.c */
int p2p_shmem_yama(void);
int p2p_shmem_cma_detect(char *why, size_t whylen);
int p2p_shmem_do_cma(int peer, struct p2p_shmem_peer *p, const struct p2p_shmem_rec *rec,
                     const struct p2p_shmem_cmadesc *d);
int p2p_shmem_rget(int peer, size_t len);
void p2p_shmem_pull(int peer, uint64_t handle, struct kumi_rx *rx);
void p2p_shmem_pull_flush(void);
int p2p_shmem_pulls_pending(void);

/* p2p_shmem_ring.c */
void p2p_shmem_wake(struct p2p_shmem_peer *p);
int p2p_shmem_flush(struct p2p_shmem_peer *p);
int p2p_shmem_send(int peer, struct kumi_sendop *op);
int p2p_shmem_send_inline(int peer, const struct kumi_hdr *h, const void *payload);
int p2p_shmem_recv_inline(int peer, int32_t ctx, int src, int tag, void *dst, size_t cap, struct kumi_hdr *h);
void p2p_shmem_send_ack(int peer, uint64_t cookie, int ok);
int p2p_shmem_poll_ring(int peer, struct p2p_shmem_peer *p);
int p2p_shmem_progress(void);
int p2p_shmem_pending(void);
int p2p_shmem_busy(void);

/* p2p_shmem.c */
int p2p_shmem_reaches(int peer);
extern double p2p_shmem_sw_ref;           /* one copy in cache, us per KiB; 0: no switching */
extern struct p2p_shmem_cal p2p_shmem_cal_job;   /* the start-up measurement (p2p_shmem_cma.c) */
void p2p_shmem_sw_time(int peer, struct p2p_shmem_peer *p, size_t bytes, double us);
size_t p2p_shmem_peer_cma_min(const struct p2p_shmem_peer *p);
double p2p_shmem_now(void);

/* ring helpers (inlined into the send and receive paths) */

/* The stamp of the record at ring position pos of a ring of the segment
 * keyed key (multiplication by an odd constant: a bijection of positions). */
static inline uint64_t p2p_shmem_stamp(uint64_t key, uint64_t pos)
{
    return key ^ (pos * 0x9e3779b97f4a7c15ull);
}

/* The cell at ring position pos (cells never wrap). */
static inline char *p2p_shmem_cell(char *data, uint64_t pos)
{
    return data + (size_t)(pos & (p2p_shmem_ringsz - 1));
}

/* A receiver polling the cell at pos also loads the two cells after it (the results unused):
 * when the sender writes a record of two or three cells (a SHORT of 29-64 bytes, 37-64 for
 * a blocking send's; a MSG of up to 128), all its lines leave the receiver's cache and its
 * next poll misses on them at once, so the others arrive with the first instead of one
 * after the other (one line transfer, not two or three, where one costs 0.2 us between the
 * core complexes of an EPYC).  A blocking receive's poll (p2p_shmem_recv_inline) always does; the progress scan
 * (p2p_shmem_scan) does for each idle ring when there are at most P2P_SHMEM_TOUCH_PEERS
 * local peers (more: the lines a poll touches would crowd the cache), and never while a
 * payload streams in (the sender is writing the cells ahead: loading them would take each
 * line from it once more). */
#define P2P_SHMEM_TOUCH_NEXT(data, pos)                                                \
    ((void)*(const volatile char *)p2p_shmem_cell((data), (pos) + P2P_SHMEM_CELL),       \
     (void)*(const volatile char *)p2p_shmem_cell((data), (pos) + 2 * P2P_SHMEM_CELL))
#define P2P_SHMEM_TOUCH_PEERS 8

/* Publish a record cell built in *c at ring position pos of p's ring: the
 * rest first, the stamp last (release). */
static inline void p2p_shmem_put_cell(struct p2p_shmem_peer *p, uint64_t pos, const void *c)
{
    char *cell = p2p_shmem_cell(p->odata, pos);
    memcpy(cell + 8, (const char *)c + 8, P2P_SHMEM_CELL - 8);
    atomic_store_explicit((_Atomic uint64_t *)(void *)cell, p2p_shmem_stamp(p->seg->stampkey, pos),
                          memory_order_release);
}

/* Is there a record at our head of p's ring (ring peer -> me)? */
static inline int p2p_shmem_rec_ready(const struct p2p_shmem_peer *p)
{
    uint64_t s = atomic_load_explicit((_Atomic uint64_t *)(void *)p2p_shmem_cell(p->idata, p->ihead),
                                      memory_order_acquire);
    return s == p2p_shmem_stamp(p2p_shmem_seg->stampkey, p->ihead);
}

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

/* Has the receiver not yet read all we wrote into p's ring (a backlog)?
 * One load of its head counter (refreshes the cached one). */
static inline int p2p_shmem_backlog(struct p2p_shmem_peer *p)
{
    p->ohead = atomic_load_explicit(&p->octl->head, memory_order_acquire);
    return p->ohead != p->otail;
}

/* An eager payload written whole before its record's stamp (else the
 * record goes first and the payload streams after it in pieces): below
 * pipeline_min; a message of a stream towards a peer that pulls
 * (cma_min..stream_limit bytes: only a stream sends those eagerly, see
 * p2p_shmem_eager_limit); and any payload while the receiver has not read
 * all that is in the ring before it: it would take the pieces only after
 * that, so piece by piece gains no overlap and costs a tail store and a
 * read of it per piece (bi-directional windows of 8-64 KiB, see
 * p2p_shmem.c).  A lone message (ping-pong) still streams in pieces. */
static inline int p2p_shmem_whole_ok(struct p2p_shmem_peer *p, size_t paylen)
{
    return !p2p_shmem_pipe_min || paylen < p2p_shmem_pipe_min ||
           (paylen >= p2p_shmem_cma_min && paylen <= p2p_shmem_stream_max && p->cma == P2P_SHMEM_CMA_YES) ||
           p2p_shmem_backlog(p);
}

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

/* After publishing something in a ring of rank p's (a record's stamp, or
 * our head): wake p if it sleeps.  The store must be ordered before the load
 * of p's sleeping word, as p's store of that word is before its re-check of
 * its rings (pollfds()).  When both sides can, that order comes from p's
 * membarrier() before it sleeps (a barrier on every CPU running us), so this
 * side needs only a compiler barrier; else from a full fence here. */
static inline void p2p_shmem_ring_bell(struct p2p_shmem_peer *p)
{
    if (__builtin_expect(p2p_shmem_membar && p->seg->membar, 1))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
    /* the waking itself out of line (p2p_shmem_ring.c): the common case
     * (p awake) is one load, and the send paths that inline this save no
     * registers for a system call they do not make */
    if (__builtin_expect(atomic_load_explicit(&p->seg->sleeping, memory_order_relaxed) == 1, 0))
        p2p_shmem_wake(p);
}

/* The tail counter is stored only by a streamed payload (the receiver finds
 * records by their stamps): publishing a record is ringing the bell. */
static inline void p2p_shmem_publish(struct p2p_shmem_peer *p)
{
    p2p_shmem_ring_bell(p);
}

/* Is type a SHORT, SHORTN, TINY or PAD record (read in place, by
 * p2p_shmem_take_short)? */
static inline int p2p_shmem_is_short(unsigned type)
{
    return type - P2P_SHMEM_REC_SHORT <= P2P_SHMEM_REC_PAD - P2P_SHMEM_REC_SHORT;
}

/* Does a record of this kind take a sequence number (and so set the count
 * that TINY records go by)? */
static inline int p2p_shmem_seq_kind(unsigned kind)
{
    return kind == KUMI_HDR_EAGER || kind == KUMI_HDR_EAGER_SYNC || kind == KUMI_HDR_RTS;
}

/* A record other than TINY starts on a cell: where our tail is at a half
 * (after a TINY record), write a PAD there first.  0: no room for it now. */
static inline int p2p_shmem_align(struct p2p_shmem_peer *p)
{
    if (__builtin_expect(!(p->otail & P2P_SHMEM_HALF), 1)) return 1;
    if (p2p_shmem_ofree(p, P2P_SHMEM_HALF) < P2P_SHMEM_HALF) return 0;
    char *cell = p2p_shmem_cell(p->odata, p->otail);
    ((struct p2p_shmem_tiny *)(void *)cell)->type = P2P_SHMEM_REC_PAD;
    atomic_store_explicit((_Atomic uint64_t *)(void *)cell, p2p_shmem_stamp(p->seg->stampkey, p->otail),
                          memory_order_release);
    p->otail += P2P_SHMEM_HALF;
    return 1;
}

#endif
