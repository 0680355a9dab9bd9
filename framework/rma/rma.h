/* One-sided communication (MPI-4 chapter 12): windows and RMA.
 *
 *   rma/win.c    window objects: the four creation flavours, Win_free,
 *                attributes, names, info hints, error handlers, shared
 *                segments (Win_allocate / Win_allocate_shared on one host),
 *                Win_shared_query, Win_attach / detach, Alloc_mem / Free_mem
 *   rma/rma.c    operations (Put, Get, Accumulate, Get_accumulate,
 *                Fetch_and_op, Compare_and_swap and the R* forms) and the
 *                synchronisation modes (fence, post-start-complete-wait,
 *                lock / unlock / lock_all / flush*, Win_sync); the target
 *                side of active messages
 *
 * Every window has, on each host, a shared segment that starts with a
 * control block per local rank (struct kumi_win_ctl: the words of its
 * passive-target lock and of its accumulate lock); dynamic windows add a
 * region table per local rank (struct kumi_win_dyn); Win_allocate[_shared]
 * put the ranks' memory there too.
 *
 * Data paths per (window, origin, target):
 *  - direct, same host: the target's memory is mapped here (peers[r].direct,
 *    Win_allocate[_shared]) or reachable with process_vm_readv/writev
 *    (peers[r].cma, Win_create, and dynamic windows within the regions
 *    the target lists in the segment): loads, stores and reductions done by the
 *    origin, accumulates under the target's accumulate lock word; passive
 *    target locks are taken on the target's lock word.  Nothing runs at the
 *    target, so passive-target epochs complete while it computes;
 *  - transport RMA: Put and Get to a rank served by a transport with remote
 *    memory access (p2p/ofi: fi_write / fi_read into the target's registered
 *    window memory), complete when the bytes are there; accumulates and
 *    locks of such a rank are active messages;
 *  - active messages: everything else (accumulates and locks on other hosts,
 *    dynamic windows there, CMA refused, a dynamic target with more regions
 *    than its table lists, or parameter kumi_base_rma_direct=false): requests
 *    over the window's
 *    private communicator that the target applies in its progress engine
 *    (under its own accumulate lock word; lock requests are granted by
 *    taking its lock word on the origin's behalf).
 *
 * The window's communicator is a private duplicate (its own context ids), so
 * RMA traffic never matches the application's messages. */
#ifndef KUMI_RMA_H
#define KUMI_RMA_H

#include "core/core.h"
#include <kumi/p2p.h>

/* What this rank knows of rank r's part of the window (gathered at creation). */
struct kumi_win_peer {
    uint64_t base;                  /* address of r's memory in r's process (0: none; dynamic: 0) */
    uint64_t size;                  /* bytes (dynamic windows: UINT64_MAX, checked at the target) */
    int disp_unit;
    int local;                      /* index of r among the ranks of this host, or -1 (another host) */
    void *direct;                   /* r's memory mapped in this process (shared segment), or NULL */
    struct kumi_win_ctl *ctl;       /* r's control block in the host's segment, or NULL (another host) */
    struct kumi_win_dyn *dyn;       /* dynamic windows: r's region table there, or NULL (another host) */
    int pid;                        /* r's process id */
    bool cma;                       /* r's memory (Win_create, dynamic) can be read and written with CMA from here */
    bool fab;                       /* Put / Get reach r's memory through its transport's RMA (rkey) */
    struct kumi_p2p_rkey rkey;      /* r's registration of its window memory (fab) */
};

/* Per-rank control block in a host's shared segment (two cache lines),
 * zeroed at creation.  Used by rma.c only. */
struct kumi_win_ctl {
    _Atomic uint32_t acc_lock;      /* accumulates on r's memory: 0 free, 1 held, 2 held + waiters */
    char pad0[60];
    _Atomic int32_t pt_lock;        /* passive target: >0 shared holders, -1 exclusive, 0 free */
    uint32_t pad1;
    _Atomic uint64_t waiters;       /* bit i: the local rank i waits for pt_lock (wake it at release) */
    char pad2[48];
};
_Static_assert(sizeof(struct kumi_win_ctl) == 128, "two cache lines");

/* Device memory in a window (rma_accel.c): MPI_WIN_SEPARATE.  The public
 * copy is host memory (pub: what RMA operations read and write), the private
 * copy the device memory (dev); shadow holds what both held at the last
 * synchronisation, so that a merge tells local stores (private != shadow)
 * from RMA updates (public != shadow). */
struct kumi_win_devmem { void *dev; uint8_t *pub, *shadow, *priv; size_t len; };

/* A region attached to a dynamic window (devm: device memory, or NULL). */
struct kumi_win_region { uint64_t base, len; struct kumi_win_devmem *devm; };

/* Dynamic windows: each rank's attached regions, published in the host's
 * segment (after the control blocks) so that same-host origins check and
 * reach them with CMA.  The owner changes it under a sequence count (odd
 * while it writes); a reader retries until it read one even count on both
 * sides.  n > KUMI_WIN_DYN_MAX: too many regions to list (the rank's origins
 * use active messages). */
#define KUMI_WIN_DYN_MAX 31
struct kumi_win_dyn {
    _Atomic uint32_t seq;
    _Atomic uint32_t n;
    struct { _Atomic uint64_t base, len; } r[KUMI_WIN_DYN_MAX];
    char pad[8];
};
_Static_assert(sizeof(struct kumi_win_dyn) == 512, "eight cache lines");

struct kumi_rma;                    /* synchronisation and operation state (rma.c) */

struct kumi_win {
    uint32_t magic;                 /* KUMI_MAGIC_WIN */
    MPI_Win handle;                 /* what the user holds (== the object's address) */
    struct kumi_comm *comm;         /* private duplicate of the creating communicator */
    int rank, size;                 /* in comm */
    int flavor;                     /* MPI_WIN_FLAVOR_CREATE, _ALLOCATE, _DYNAMIC, _SHARED */
    int model;                      /* MPI_WIN_UNIFIED; MPI_WIN_SEPARATE where device memory is in it */
    void *base;                     /* this rank's window memory (NULL: none / dynamic; device: the public copy) */
    struct kumi_win_devmem *devm;   /* Win_create on device memory: its copies (base is devm->pub) */
    int ndev;                       /* device memories of this rank in the window (devm, attached regions) */
    MPI_Aint wsize;                 /* its size in bytes */
    int disp_unit;
    struct kumi_win_peer *peers;    /* [size] */
    /* memory the window owns */
    void *seg;                      /* the host's shared segment, mapped here (NULL: none) */
    size_t seglen;
    void *own;                      /* private memory of Win_allocate off a segment (free()d) */
    const struct kumi_p2p_ops *fab_ops;  /* the transport that registered base for remote access, or NULL */
    void *fab_mr;                   /* its registration handle */
    /* dynamic windows: regions attached by this rank */
    struct kumi_win_region *regions;
    int nregions, cregions;
    /* MPI object state */
    char name[MPI_MAX_OBJECT_NAME];
    struct kumi_errhandler *errh;
    struct kumi_attr *attrs;
    struct kumi_info *info;         /* the hints in force (Win_get_info), never NULL after creation */
    bool no_locks;                  /* info "no_locks" = true */
    bool same_disp_unit;            /* info "same_disp_unit" = true (informational) */
    struct kumi_rma *rma;           /* rma.c */
};

static inline struct kumi_win *kumi_win_get(MPI_Win h) { return kumi_handle_obj(h, KUMI_MAGIC_WIN); }

/* Errors of a call on window w go to its error handler (generated bindings). */
int kumi_win_err_handle(struct kumi_win *w, int code);

/* rma.c: set up / tear down the RMA state of a window.  kumi_rma_win_init is
 * called by every rank at the end of a creation call, when every field above
 * is filled (peers included); it is collective over w->comm.
 * kumi_rma_win_fini is called by Win_free (collective, after the user's
 * epochs are over) before the window's memory and communicator go away;
 * it returns MPI_ERR_RMA_SYNC if an epoch is still open. */
int kumi_rma_win_init(struct kumi_win *w);
extern int kumi_rma_nwins;               /* windows that exist */
/* rma_ckpt.c: checkpoints (mpi/ckpt.c).  _busy: 1 while an epoch other than
 * a fence epoch is open on a window (*why says which), -1 for a window that
 * cannot be checkpointed at all; in a restarted process, after the
 * transports' wire-up, with the launcher's fence between the steps:
 * _placement (-1 when ranks that shared a host are apart now), _lead,
 * _join (pid_of: a rank's new process id), _unlink; -1 and *why on failure. */
int kumi_rma_ckpt_busy(char *why, size_t len);
int kumi_rma_ckpt_placement(char *why, size_t len);
int kumi_rma_ckpt_lead(char *why, size_t len);
int kumi_rma_ckpt_join(int (*pid_of)(int world_rank), char *why, size_t len);
void kumi_rma_ckpt_unlink(void);
void kumi_rma_register_params(void);
void kumi_rma_register(void);          /* registers the request kind KUMI_REQ_RMA */
extern int kumi_rma_direct;         /* parameter kumi_base_rma_direct */
extern int kumi_rma_fabric;         /* parameter kumi_base_rma_fabric */
int kumi_rma_win_fini(struct kumi_win *w, const char *fname);

/* win.c: the memory of an attached region of dynamic window w containing
 * [addr, addr + len) on this rank, or false. */
bool kumi_win_region_ok(const struct kumi_win *w, uint64_t addr, uint64_t len);
/* rma_accel.c: device memory in windows (the separate model).  _new: the
 * copies of len bytes of device memory dev (public = private at the start);
 * _free: frees them (not dev).  kumi_rma_dev_sync: every device memory of
 * w's rank: local stores to the private copy become public and RMA updates
 * of the public copy become private (called at the synchronisation points of
 * the separate model; a no-op where w->ndev is 0).  kumi_win_dyn_addr: the
 * address in this process where RMA reaches address addr of a dynamic
 * window (the public copy of an attached device region, else addr). */
int kumi_rma_devmem_new(const char *fn, void *dev, size_t len, struct kumi_win_devmem **out);
void kumi_rma_devmem_free(struct kumi_win_devmem *d);
int kumi_rma_dev_sync(struct kumi_win *w, const char *fn, int assert);    /* MPI_MODE_NOSTORE: no local stores */
int kumi_rma_devmem_sync(struct kumi_win_devmem *d, const char *fn, bool nostore);   /* one of them */
uint8_t *kumi_win_dyn_addr(const struct kumi_win *w, uint64_t addr);

#endif
