/* p2p_ofi.h: private to p2p/ofi: the design (below), the wire format and
 * operation contexts, the state the files share, and their functions.
 *
 * Files: p2p_ofi.c (the component: parameters, loading libfabric, choosing
 * the provider, set-up, progress, tear-down), p2p_ofi_send.c (sending and
 * the FIN of a pulled rendezvous), p2p_ofi_recv.c (receiving, fi_read
 * rendezvous, completion errors), p2p_ofi_mr.c (the registration cache),
 * p2p_ofi_rma.c (remote memory access for windows), p2p_ofi_ckpt.c
 * (coordinated checkpoints: everything closed at the cut and opened again,
 * registrations made again with their keys, lost FINs asked for).
 *
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
 *   ASK   preamble + {cookie}                  (after a checkpoint: FIN again if done)
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
#ifndef KUMI_P2P_OFI_H
#define KUMI_P2P_OFI_H

#define _GNU_SOURCE
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/rpim.h>
#include <kumi/p2p.h>
#include <kumi/netif.h>

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

enum { OFI_T_MSG = 1, OFI_T_RMA, OFI_T_FIN, OFI_T_ASK };
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

struct ofi_mr {                           /* a registration, cached or not, or a window's */
    struct fid_mr *mr;                    /* NULL between ckpt_release and the next init */
    char *base;
    size_t len;
    uint64_t access;                      /* FI_REMOTE_READ [| FI_REMOTE_WRITE] */
    uint64_t key;                         /* the key asked for (registered again with it) */
    int refs;
    int cached;
    int win;                              /* a window's (mem_reg): freed by mem_dereg only */
    struct ofi_mr *prev, *next;           /* LRU, most recent first */
    struct ofi_mr *aprev, *anext;         /* every registration (ofi_regs) */
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
    uint64_t cookie;                      /* RMA: names it in FIN and ASK, never reused */
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
    struct ofi_read *aprev, *anext;       /* every read not finished (ofi_reads) */
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
extern void *ofi_lib;
extern int (*p_fi_getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                           struct fi_info **);
extern void (*p_fi_freeinfo)(struct fi_info *);
extern struct fi_info *(*p_fi_dupinfo)(const struct fi_info *);
extern int (*p_fi_fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
extern const char *(*p_fi_strerror)(int);

/* ---- parameters */
extern const char *ofi_prov_param;
extern size_t ofi_eager;
extern long long ofi_nrxbufs, ofi_cache_max;
extern size_t ofi_read_chunk;
extern const char *ofi_status;
extern const char *ofi_wait_param;
extern int ofi_rget_param;
extern long long ofi_drop_fin;           /* tests: FINs of reads not to send (p2p_ofi_ckpt.c) */
extern char ofi_status_buf[256];

/* ---- state */
extern struct fi_info *ofi_info;          /* the chosen provider */
extern struct fid_fabric *ofi_fabric;
extern struct fid_domain *ofi_domain;
extern struct fid_av *ofi_av;
extern struct fid_cq *ofi_cq;
extern struct fid_ep *ofi_ep;
extern int ofi_waitfd;
extern int ofi_me, ofi_n, ofi_virt_addr, ofi_prov_key, ofi_mr_endpoint;
extern size_t ofi_inject, ofi_bufsz;
extern uint64_t ofi_next_key;
extern struct ofi_peer *ofi_peers;
extern struct ofi_rxbuf *ofi_rxbufs;
extern int ofi_nposted;                   /* receive buffers posted */
extern struct ofi_rxbuf **ofi_repost;     /* refused by the provider, to post again */
extern int ofi_nrepost;
extern struct ofi_tx *ofi_txfree;
extern struct ofi_tx *ofi_finwait;        /* RMA sends waiting for FIN */
extern struct ofi_read *ofi_rdq;          /* reads that have more to issue */
extern struct ofi_mr *ofi_lru_head, *ofi_lru_tail;
extern int ofi_ncached;
extern int ofi_nqueued;                   /* ops not completed yet */
extern int ofi_have_peers_queued;
extern int ofi_can_write;                 /* the provider does remote writes (window access) */
extern struct ofi_rchunk *ofi_rcfree;
extern struct kumi_p2p_rma *ofi_rmaq, *ofi_rmaq_tail;   /* RMA with pieces the provider refused */
extern struct kumi_p2p_rma *ofi_rmafin;   /* RMA over whose done() has not run yet */
extern int ofi_nrma;                      /* RMA operations not done */
extern int ofi_nwinmr;                    /* window memory registered for remote access */
extern int ofi_bound;                     /* mpiexec bound this rank to a core of its own */
extern char ofi_provname[64];
extern struct ofi_mr *ofi_regs;           /* every registration */
extern struct ofi_read *ofi_reads;        /* every rendezvous not finished (parked or being read) */
extern int ofi_released;                  /* between ckpt_release and the next wireup */
extern int ofi_ckpt_able;                 /* not FI_MR_PROV_KEY, not shm */
extern int ofi_asked;                     /* ASKs went out: a FIN may come twice */

/* p2p_ofi.c */
const char *ofi_err(int rc);
int ofi_post_rx(struct ofi_rxbuf *b);
int p2p_ofi_reaches(int peer);
void ofi_teardown(void);
void ofi_close_fabric(void);

/* p2p_ofi_mr.c */
void ofi_mr_release(struct ofi_mr *m);
struct ofi_mr *ofi_mr_get(const void *buf, size_t len, int *err);
void ofi_mr_flush(void);
int ofi_mr_register(struct ofi_mr *m);
void ofi_mr_link(struct ofi_mr *m);
void ofi_mr_unlink(struct ofi_mr *m);

/* p2p_ofi_send.c */
void ofi_tx_done(struct ofi_tx *t);
void ofi_tx_event(struct ofi_tx *t);
void ofi_lost(int peer, const char *what, int rc);
int ofi_flush_queues(void);
int p2p_ofi_send(int peer, struct kumi_sendop *op);
void ofi_send_fin(int peer, uint64_t cookie);
void ofi_got_fin(int peer, uint64_t cookie);
void ofi_send_ask(int peer, uint64_t cookie);

/* p2p_ofi_recv.c */
void ofi_read_event(struct ofi_read *r, int failed);
int ofi_flush_reads(void);
int p2p_ofi_rget(int peer, size_t len);
void p2p_ofi_pull(int peer, uint64_t handle, struct kumi_rx *rx);
void ofi_repost_rx(struct ofi_rxbuf *b);
void ofi_got_msg(struct ofi_rxbuf *b, size_t len);
void ofi_cq_error(void);
void ofi_read_unlink(struct ofi_read *r);

/* p2p_ofi_ckpt.c */
int p2p_ofi_ckpt_quiet(void);
void p2p_ofi_ckpt_release(void);
int ofi_ckpt_reinit(void);
void ofi_ckpt_rewired(void);
void ofi_got_ask(int peer, uint64_t cookie);

/* p2p_ofi_rma.c */
int p2p_ofi_mem_reg(void *base, size_t len, void **handle, struct kumi_p2p_rkey *rkey);
void p2p_ofi_mem_dereg(void *handle);
int p2p_ofi_rma(int peer, struct kumi_p2p_rma *op);
void ofi_rma_event(struct ofi_rchunk *c, int err);
int ofi_flush_rma(void);

#endif
