/* p2p: transports that move bytes to a peer (self, shmem, tcp, ofi, impi).
 *
 * The request layer owns matching and protocols; a transport only moves
 * headers and payloads between world ranks, in order per peer.
 *
 * Sending: the request layer fills a struct kumi_sendop (header + one
 * contiguous payload) and calls ops->send(peer, op).  The transport owns op
 * until it calls op->done(op) — at once if everything went out, or later from
 * progress().  Messages to one peer must be delivered in the order send()
 * was called.
 *
 * Receiving: when a header arrives the transport calls
 * rx = kumi_p2p_incoming(peer, hdr).  If the header carries a payload
 * (hdr->paylen > 0) the request layer returns a struct kumi_rx that says
 * where the bytes go; the transport writes the payload into
 * rx->dst[rx->got ...] (bytes at offsets >= rx->cap are read and dropped:
 * truncation), advances rx->got, and calls kumi_p2p_rx_done(rx) when
 * got == len.  Between two calls into the transport, the request layer may
 * change rx->dst and rx->cap (the early-match rule: a receive posted while
 * its message is still arriving takes what has arrived and redirects the
 * rest into the user buffer), so re-read them before every write.
 */
#ifndef KUMI_P2P_H
#define KUMI_P2P_H

#include <poll.h>
#include <sys/socket.h>
#include <string.h>
#include <kumi/kumi.h>
#include <kumi/component.h>

#ifdef __cplusplus
extern "C" {
#endif

enum kumi_hdr_kind {
    KUMI_HDR_EAGER = 1,       /* whole message follows (paylen = len) */
    KUMI_HDR_EAGER_SYNC,      /* same, sender waits for SYNC_ACK */
    KUMI_HDR_RTS,             /* rendezvous request: len bytes wait at sender; sreq set */
    KUMI_HDR_CTS,             /* receiver matched the RTS: sreq, rreq set */
    KUMI_HDR_DATA,            /* rendezvous payload for rreq (paylen = bytes) */
    KUMI_HDR_SYNC_ACK,        /* receiver matched an EAGER_SYNC: sreq set */
    KUMI_HDR_CANCEL_REQ,      /* sender wants to cancel sreq (ctx, src, tag, seq identify it) */
    KUMI_HDR_CANCEL_ACK,      /* answer: flags & KUMI_HDR_F_CANCELLED */
    KUMI_HDR_CONTROL,         /* framework-internal control (payload) */
    KUMI_HDR_CREDIT           /* receiver gives back len bytes of the sender's eager budget */
};

#define KUMI_HDR_F_CANCELLED 0x01
#define KUMI_HDR_F_RGET      0x02   /* RTS: the receiver pulls the payload (see rget/pull) */
#define KUMI_HDR_F_PIECE     0x04   /* DATA: one piece of the payload, at byte offset
                                       (uint32_t)src << 32 | (uint32_t)tag (request/req_accel.c) */
#define KUMI_HDR_F_IPC       0x08   /* CTS: the receiver can open the sender's device memory; DATA
                                       piece: its payload is the handle; CTS again: the answer */

/* Return values of pollfds() besides a count. */
#define KUMI_P2P_NOSLEEP (-1)
#define KUMI_P2P_NAP     (-2)

/* The wire header: 56 bytes, host byte order (homogeneous jobs; the impi
 * transport converts at the cluster border). */
struct kumi_hdr {
    uint8_t  kind;            /* enum kumi_hdr_kind */
    uint8_t  flags;
    uint16_t reserved;
    int32_t  ctx;             /* context id of the communicator (+1 for collectives) */
    int32_t  src;             /* sender's rank in that communicator */
    int32_t  tag;
    uint32_t seq;             /* per (sender, receiver) sequence number */
    uint32_t pad;
    uint64_t len;             /* total message length in bytes */
    uint64_t paylen;          /* bytes of payload that follow this header */
    uint64_t sreq;            /* sender's request cookie */
    uint64_t rreq;            /* receiver's request cookie */
};

struct kumi_sendop {
    struct kumi_hdr hdr;
    const void *payload;      /* hdr.paylen bytes, valid until done() */
    void (*done)(struct kumi_sendop *op);
    void *owner;              /* request layer's */
    /* transport-private scratch */
    struct kumi_sendop *tnext;
    size_t toff;
    void *tptr;
};

struct kumi_rx {
    char *dst;                /* where payload offset 0 goes */
    size_t cap;               /* bytes that fit at dst; the rest is dropped */
    size_t len;               /* payload bytes expected */
    size_t got;               /* payload bytes written so far (transport updates) */
    void *owner;              /* request layer's */
};

/* Remote memory access (optional ops below): what a peer needs to reach a
 * registration — the address of its first byte in the transport's terms and
 * the key. */
struct kumi_p2p_rkey { uint64_t addr, key; };

/* One remote write or read, owned by the caller until done() runs. */
struct kumi_p2p_rma {
    int write;                /* 1: local -> peer's memory (put); 0: peer's memory -> local (get) */
    void *local;              /* len bytes here (valid until done()) */
    size_t len;
    uint64_t raddr;           /* the peer's rkey.addr + byte offset into its registration */
    uint64_t key;             /* the peer's rkey.key */
    /* Runs from progress(), never from inside rma(): err is MPI_SUCCESS or an
     * MPI error class.  A write is done when its bytes are in the peer's
     * memory (visible to the peer), a read when they are in local. */
    void (*done)(struct kumi_p2p_rma *op, int err);
    void *owner;              /* the caller's */
    /* transport-private scratch */
    struct kumi_p2p_rma *tnext;
    size_t toff;
    int tpeer, tpending, terr, tflags;
};

/* The p2p contract (see kumi/component.h for the rules):
 *   1.0  the mandatory part, hdr ... finalize;
 *   1.1  adds rget, pull (KUMI_P2P_CAP_RGET);
 *   1.2  adds mem_reg, mem_dereg, rma (KUMI_P2P_CAP_RMA);
 *   1.3  adds describe (optional, no capability flag: NULL or absent = none);
 *   1.4  adds peer_sockets, peer_sockaddr (optional, for pacing: NULL or
 *        absent = the transport has no sockets to pace);
 *   1.5  adds xjob_card, xjob_add (optional, for processes of other jobs:
 *        MPI_Comm_accept / connect / join; NULL or absent = none);
 *   1.6  adds the capabilities KUMI_P2P_CAP_EXTERNAL32 and _NOBUDGET (no new
 *        entries: a library older than 1.6 would not honour them, so a
 *        component that sets them says 1.6);
 *   1.7  adds ckpt_quiet, ckpt_release (optional, for coordinated
 *        checkpoints: NULL or absent = finalize and busy() serve);
 *   1.8  adds send_inline (optional: NULL or absent = every message goes
 *        through send());
 *   1.9  adds recv_inline (optional: NULL or absent = every message goes
 *        up through the upcalls);
 *   1.10 adds pull_flush (optional: NULL or absent = pull() reads or
 *        schedules each pull itself).
 * (1.1 and 1.2 were component ABI versions 2 and 5 before the tables
 * carried versions.)  A table built against 1.0 ends at finalize and may
 * advertise no capability; one built against 1.1 ends at pull. */
#define KUMI_P2P_CONTRACT_MAJOR 1
#define KUMI_P2P_CONTRACT_MINOR 10
#define KUMI_P2P_OPS_HDR KUMI_OPS_HDR(struct kumi_p2p_ops, KUMI_P2P_CONTRACT_MAJOR, KUMI_P2P_CONTRACT_MINOR)
/* Size of the mandatory part: every table is at least this long. */
#define KUMI_P2P_OPS_MIN_SIZE offsetof(struct kumi_p2p_ops, rget)

/* Capabilities (ops->caps): what a transport can do beyond moving messages.
 * The request layer and the RMA layer test these flags, never the
 * operation pointers; the registry refuses a table that sets a flag without
 * all of its operations (an operation whose flag is clear is never called).
 * Bits the library does not know (from a newer minor) are ignored. */
#define KUMI_P2P_CAP_RGET  (UINT64_C(1) << 0)  /* receiver-pulled rendezvous: rget and pull */
#define KUMI_P2P_CAP_RMA   (UINT64_C(1) << 1)  /* remote memory access for windows: mem_reg,
                                                  mem_dereg and rma */
/* Flags without operations (a transport that speaks a foreign wire protocol,
 * p2p/impi):
 * EXTERNAL32: payloads to and from this transport's peers are in the
 *   "external32" representation: the request layer converts the user's data
 *   with the pack engine at send (hdr.len counts external32 bytes) and into
 *   the receive's datatype when a message of such a peer matches; data whose
 *   external32 bytes are its native bytes (bytes, chars) go unconverted
 *   unless kumi_p2p_external32_copy(1) asked for the copy anyway (testing).
 * NOBUDGET: no eager budget / KUMI_HDR_CREDIT with this transport's peers
 *   (its protocol has its own flow control); eager messages go up to
 *   eager_limit, longer ones as an RTS that always carries eager_limit bytes. */
#define KUMI_P2P_CAP_EXTERNAL32 (UINT64_C(1) << 2)
#define KUMI_P2P_CAP_NOBUDGET   (UINT64_C(1) << 3)

/* A process of another job (contract 1.5): who it is and how to reach it.
 * job: a 64-bit identity of a job (the same on all its processes, different
 * between jobs: kumi_req_job_uid()), rank: its rank in its job; card: what
 * its transport's xjob_card wrote (exchanged out of band by the roots of an
 * MPI_Comm_accept / connect); key: a secret both sides got out of band
 * (from the connection of the roots), which their connections prove to know
 * (key_id: a public name of it, which tells keys apart in a handshake). */
#define KUMI_P2P_XKEY_LEN 32
struct kumi_p2p_xpeer {
    uint64_t my_job, job;
    int32_t my_rank, rank;
    const char *card;
    unsigned char key[KUMI_P2P_XKEY_LEN];
    uint64_t key_id;
};

struct kumi_p2p_ops {
    struct kumi_ops_hdr hdr;  /* KUMI_P2P_OPS_HDR */
    uint64_t caps;            /* KUMI_P2P_CAP_* */

    /* ---- Contract 1.0, every transport.  reaches, eager_limit and send
     * must be set (the registry refuses a table without them); the others
     * may be NULL (nothing to do). */
    /* After open: set up and publish this rank's address(es) with
     * kumi_rpim_put("p2p.<name>.addr", ...) (keys are per rank). */
    int (*init)(void);
    /* After the fence: read peers' addresses (kumi_rpim_get). */
    int (*wireup)(void);
    /* 1 if this transport can reach world rank `peer`. */
    int (*reaches)(int peer);
    /* Largest message sent eagerly to `peer`. */
    size_t (*eager_limit)(int peer);
    /* Queue op for `peer`; connections open lazily on first use. Returns
     * MPI_SUCCESS or an MPI error code (peer unreachable). */
    int (*send)(int peer, struct kumi_sendop *op);
    /* Move data without blocking; return >0 if anything happened. */
    int (*progress)(void);
    /* File descriptors to sleep on when there is nothing to do: fill up to
     * max entries (events set as needed), return how many; or
     * KUMI_P2P_NOSLEEP when the caller must not sleep now (work is pending):
     * it yields the CPU and polls again; or KUMI_P2P_NAP when no descriptor
     * wakes this transport: the caller sleeps at most a millisecond.
     * After the sleep (or instead of it) the caller calls pollfds(NULL, 0)
     * (return value ignored): a transport whose wake-up depends on who
     * sleeps (a doorbell armed by pollfds) learns that this sleeper is
     * awake again; another thread may still sleep.  Transports of older
     * builds return 0 for max 0, which is harmless. */
    int (*pollfds)(struct pollfd *fds, int max);
    /* 1 while sends are queued (MPI_Finalize drains them before closing). */
    int (*busy)(void);
    void (*finalize)(void);

    /* ---- Contract 1.1: receiver-pulled rendezvous (RGET), optional: set
     * both and KUMI_P2P_CAP_RGET when the transport can read the sender's
     * memory. */
    /* 1 if a rendezvous message of len bytes to peer may be pulled.  The
     * request layer then sends the RTS with KUMI_HDR_F_RGET and
     * op->payload = the (contiguous) payload, and sends no DATA: the
     * transport makes the payload readable by the peer and calls op->done()
     * only once the receiver has pulled it or dropped it. */
    int (*rget)(int peer, size_t len);
    /* Receiving side: the transport delivers such an RTS to
     * kumi_p2p_incoming() with KUMI_HDR_F_RGET set and a handle of its own
     * in hdr->rreq.  When a receive matches, the request layer calls
     * pull(peer, handle, rx) (never from inside an upcall): the transport
     * copies min(hdr->len, rx->cap) bytes to rx->dst, now or later, then
     * sets rx->got = rx->len and calls kumi_p2p_rx_done(rx), and lets the
     * sender's op complete.  rx == NULL: the message was cancelled; release
     * it without reading. */
    void (*pull)(int peer, uint64_t handle, struct kumi_rx *rx);

    /* ---- Contract 1.2: remote memory access for RMA windows, optional:
     * set all three and KUMI_P2P_CAP_RMA when the transport has it (without
     * it, windows use active messages). */
    /* Register [base, base+len) of this process for remote reads and writes
     * by the peers this transport reaches; *handle is for mem_dereg, *rkey
     * what peers pass in their operations.  MPI_SUCCESS or an MPI error. */
    int (*mem_reg)(void *base, size_t len, void **handle, struct kumi_p2p_rkey *rkey);
    void (*mem_dereg)(void *handle);
    /* Start op on peer's memory; no ordering between operations is promised.
     * MPI_SUCCESS (done() will run) or an MPI error (it will not). */
    int (*rma)(int peer, struct kumi_p2p_rma *op);

    /* ---- Contract 1.3, optional (may be NULL): how this transport reaches
     * peer, for KUMI_VERBOSE's table (e.g. tcp: "10.0.0.2:40123").  Writes
     * a short text to buf; returns 0, or -1 when there is nothing to say. */
    int (*describe)(int peer, char *buf, size_t len);

    /* ---- Contract 1.4, optional (may be NULL): the sockets of a socket
     * transport, for the pacing framework (kumi/pacing.h).
     * The socket descriptors open now that carry this process's bytes to
     * peer (at most max into fds); returns how many (0: none open yet).  The
     * caller may set socket options on them (e.g. SO_MAX_PACING_RATE) but
     * must not read, write or close them.  A transport that creates such a
     * socket later calls kumi_p2p_socket_opened(peer, fd). */
    int (*peer_sockets)(int peer, int *fds, int max);
    /* The address this transport connects to (or would connect to) for
     * peer: 0, or -1 when it has none (*sa untouched). */
    int (*peer_sockaddr)(int peer, struct sockaddr_storage *sa);

    /* ---- Contract 1.5, optional (both or neither): peers of other jobs.
     * xjob_card: make this process reachable by processes of other jobs
     * (listen again where wireup stopped) and write its address card (a
     * NUL-terminated text of at most len bytes); MPI_SUCCESS or an MPI error.
     * xjob_add: from now on peer (a new peer number the request layer gave,
     * >= the world size) is the process x describes; connections between the
     * two authenticate with x->key instead of the job secret, both ways (a
     * connection from a process that cannot prove the key is dropped).
     * MPI_SUCCESS or an MPI error (bad card). */
    int (*xjob_card)(char *buf, size_t len);
    int (*xjob_add)(int peer, const struct kumi_p2p_xpeer *x);

    /* ---- Contract 1.7, optional (both or neither): coordinated checkpoints
     * (framework/mpi/ckpt.c).  A transport without them is checkpointed
     * with busy() and finalize, which must then be exact: nothing of a
     * message stays inside it once busy() is 0 and the peer has received
     * it, and finalize loses nothing the job still needs.
     * ckpt_quiet: 1 when nothing this rank sent is still inside the
     * transport (queued, or written but not yet read by the peer, e.g. in
     * a shared-memory ring, internal acknowledgements included); operations
     * parked until the peer acknowledges them (a pulled rendezvous that no
     * receive has matched yet) do not count.  0 otherwise; -1 when this
     * transport cannot be checkpointed in this job at all (the checkpoint
     * is refused before the cut; p2p/ofi with some providers).
     * ckpt_release: like finalize (every descriptor and shared object let
     * go of), but the parked operations survive: the next init and wireup
     * (in this process, or in it restarted from its image) take them back,
     * and the peer's acknowledgements complete them then.  A transport
     * with KUMI_P2P_CAP_RMA keeps its registrations too: mem_reg's handles
     * and the rkeys peers hold serve again once every rank's next init is
     * done (p2p/ofi registers them again with the same keys). */
    int (*ckpt_quiet)(void);
    void (*ckpt_release)(void);

    /* ---- Contract 1.8, optional (may be NULL): a small eager message
     * written at once, without a sendop.  h is a KUMI_HDR_EAGER header
     * (paylen == len, at most eager_limit(peer)) and payload its paylen
     * bytes.  When the message can go now without waiting or queueing
     * (nothing queued to peer, room for it): write it, return 1; the
     * payload has been copied, nothing more happens for it (no done()).
     * Otherwise return 0 having done nothing: the caller then passes the
     * message to send() (which also reports the errors).  The receiver
     * may see such a message with sreq 0 (no cookie: nobody answers an
     * eager message, and a cancel finds it by its sequence number). */
    int (*send_inline)(int peer, const struct kumi_hdr *h, const void *payload);

    /* ---- Contract 1.9, optional (may be NULL): a blocking receive takes
     * the next message from peer itself, without the upcalls (the request
     * layer calls it only while no receive is posted and no message waits
     * unexpected, so that the next message from peer is the first the
     * receive could match).  When the next record from peer is whole in
     * the transport and is a KUMI_HDR_EAGER message (paylen == len) on
     * context ctx from rank src there whose tag is tag (any, for
     * MPI_ANY_TAG): copy
     * min(paylen, cap) payload bytes to dst, fill *h with its header,
     * step past it (it is gone from the transport, as after
     * kumi_p2p_incoming_whole) and return 1.  Nothing from peer yet: 0.
     * Anything else (another context or tag, another kind, a record that
     * is not whole yet, the transport inside its own progress): -1, having
     * done nothing; the caller then waits the usual way. */
    int (*recv_inline)(int peer, int32_t ctx, int src, int tag, void *dst, size_t cap, struct kumi_hdr *h);

    /* ---- Contract 1.10, optional (may be NULL): pull() may keep the pulls
     * it is given to read several with one system call; pull_flush() then
     * reads (and completes) every pull it keeps.  The request layer calls it
     * (never from inside an upcall) once its pass over deferred work that
     * called pull() on this transport is over, so that a pull is read in the
     * MPI call that asked for it (an MPI_Irecv matching a message that waits
     * unexpected), not at the receiver's next call. */
    void (*pull_flush)(void);
};

/* Upcalls into the request layer, for transports. */
KUMI_EXPORT struct kumi_rx *kumi_p2p_incoming(int peer, const struct kumi_hdr *hdr);
KUMI_EXPORT void kumi_p2p_rx_done(struct kumi_rx *rx);
/* A message whose header and whole payload the transport holds at once
 * (data: hdr->paylen bytes, read during the call only): the same as
 * kumi_p2p_incoming, copying the payload to the rx it would return and
 * kumi_p2p_rx_done, but cheaper for small eager messages. */
KUMI_EXPORT void kumi_p2p_incoming_whole(int peer, const struct kumi_hdr *hdr, const void *data);
/* Convert through a copy even data whose external32 form is its native
 * form (KUMI_P2P_CAP_EXTERNAL32; for tests of the conversion path). */
KUMI_EXPORT void kumi_p2p_external32_copy(int on);
/* A transport created socket fd, which will carry this process's bytes to
 * world rank peer (contract 1.4; call it before the first byte is written). */
KUMI_EXPORT void kumi_p2p_socket_opened(int peer, int fd);

/* For the pacing framework: the same as the ops above, asked of the
 * transport that serves world rank peer (0 / -1 where it has none). */
KUMI_EXPORT int kumi_p2p_peer_sockets(int peer, int *fds, int max);
KUMI_EXPORT int kumi_p2p_peer_sockaddr(int peer, struct sockaddr_storage *sa);

/* Copy n <= 32 bytes with a few moves and no call (overlapping moves of 8
 * or 4 bytes cover every length): the payload of a small message, for the
 * transports and the request layer (a call of memcpy for 8 bytes costs
 * more than the copy). */
static inline void kumi_p2p_copy_small(void *dst, const void *src, size_t n)
{
    char *d = (char *)dst;
    const char *s = (const char *)src;
    if (n >= 8) {
        uint64_t a, b;
        if (n > 16) {
            uint64_t c, e;
            memcpy(&a, s, 8); memcpy(&b, s + 8, 8); memcpy(&c, s + n - 16, 8); memcpy(&e, s + n - 8, 8);
            memcpy(d, &a, 8); memcpy(d + 8, &b, 8); memcpy(d + n - 16, &c, 8); memcpy(d + n - 8, &e, 8);
        } else {
            memcpy(&a, s, 8); memcpy(&b, s + n - 8, 8);
            memcpy(d, &a, 8); memcpy(d + n - 8, &b, 8);
        }
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4); memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4); memcpy(d + n - 4, &b, 4);
    } else {
        for (size_t i = 0; i < n; i++) d[i] = s[i];
    }
}

/* Copy n <= 64 bytes without a call (two overlapping 32-byte moves above 32). */
static inline void kumi_p2p_copy64(void *dst, const void *src, size_t n)
{
    if (n <= 32) {
        kumi_p2p_copy_small(dst, src, n);
    } else {                    /* (vectors: kept in registers, no stack frame) */
        typedef char kumi_v16 __attribute__((vector_size(16)));
        kumi_v16 a, b, c, e;
        const char *s = (const char *)src;
        char *d = (char *)dst;
        memcpy(&a, s, 16); memcpy(&b, s + 16, 16); memcpy(&c, s + n - 32, 16); memcpy(&e, s + n - 16, 16);
        memcpy(d, &a, 16); memcpy(d + 16, &b, 16); memcpy(d + n - 32, &c, 16); memcpy(d + n - 16, &e, 16);
    }
}

#ifdef __cplusplus
}
#endif
#endif
