/* framework/sched: collective schedules (the builder API is kumi/sched.h).
 * Private to the framework (core + request + sched). */
#ifndef KUMI_SCHED_IMPL_H
#define KUMI_SCHED_IMPL_H

#include "request/request.h"
#include <kumi/sched.h>

enum kumi_sched_kind {
    KUMI_SCHED_START = 1, KUMI_SCHED_END, KUMI_SCHED_SEND, KUMI_SCHED_RECV, KUMI_SCHED_CALC,
    KUMI_SCHED_COPY, KUMI_SCHED_NOP
};

/* One node: fixed size, no pointers to other nodes (successors are indices
 * into the schedule's succ array). */
struct kumi_sched_node {
    uint8_t kind;                   /* enum kumi_sched_kind */
    uint8_t reserved;
    uint16_t tag;                   /* SEND / RECV: added to the schedule's tag base */
    int32_t peer;                   /* SEND / RECV: rank in the communicator (remote group
                                       of an intercommunicator), or MPI_PROC_NULL */
    uint32_t npred;                 /* nodes this one comes after */
    uint32_t nsucc;                 /* nodes that come after this one: succ[first .. first+nsucc) */
    uint32_t first;
    uint32_t pad;
    uint64_t count;                 /* SEND / RECV / CALC elements; COPY: source elements */
    uint64_t count2;                /* COPY: destination elements */
    uint64_t buf;                   /* SEND / RECV buffer; CALC in; COPY source */
    uint64_t buf2;                  /* CALC inout; COPY destination */
    uint64_t dt;                    /* MPI_Datatype */
    uint64_t dt2;                   /* COPY destination type; CALC: MPI_Op */
};

struct kumi_sched_edge { uint32_t from, to; };

struct kumi_sched {
    uint32_t magic;                 /* KUMI_SCHED_MAGIC */
    struct kumi_comm *comm;         /* holds a reference */
    struct kumi_sched *cnext, *cprev;   /* comm->scheds: the schedules alive on comm */
    int32_t tagbase;
    int err;                        /* first error while building */
    /* the DAG: node 0 is START, node 1 is END */
    uint32_t n, cap;
    struct kumi_sched_node *node;
    uint32_t *succ;                 /* after kumi_sched_seal */
    uint32_t scap, pcap;            /* capacity of succ; of pending and ready (each) */
    struct kumi_sched_edge *edge;   /* while building */
    uint32_t nedge, ecap;
    bool sealed;
    bool cad;                       /* made with the CAD API (mpi-ext.h) */
    /* what the schedule owns: scratch memory, references to datatypes and ops */
    void **mem;
    int nmem, memcap;
    struct kumi_dt **dts;
    int ndts, dtcap;
    struct kumi_op **ops;
    int nops, opcap;
    /* a run */
    uint32_t *pending;              /* per node: predecessors not done yet */
    uint32_t *ready;                /* nodes whose predecessors are all done, FIFO */
    uint32_t rhead, rtail;
    uint32_t inflight;              /* SEND / RECV requests not complete */
    uint32_t unsent;                /* SEND nodes of this run not started yet (counted in kumi_sched_unsent) */
    bool busy;                      /* kumi_sched_advance is running */
    int rerr;                       /* first error of this run */
    struct kumi_req *req;           /* the user's request (kind KUMI_REQ_COLL) */
    uint8_t *uflag;                 /* io_uring engine: per node, started ahead (linked) */
    struct kx *kx;                  /* kmod engine: the schedule's registration with the module */
    void (*on_destroy)(void *);     /* called with on_destroy_arg first when the schedule is destroyed
                                       (memory it does not own: mpi/coll_accel.c) */
    void *on_destroy_arg;
};
#define KUMI_SCHED_MAGIC 0x4b534348u   /* "KSCH" */

/* Tag bases in the collective context, away from the tags of the blocking
 * algorithms (small) and of the neighborhood ones (< 2^21) and from the
 * negative ones of MPI_Comm_idup (-0x4000001x): each schedule has 4096 node
 * tags; the n-th schedule of a kind made on a communicator takes slot
 * n mod SLOTS of its kind's space.  A slot is reused only after SLOTS more
 * schedules of that kind; kumi_sched_create refuses (instead of letting
 * messages mix) when the schedule that had it is still alive on this rank. */
#define KUMI_SCHED_TAG_NBC   KUMI_TAG_NBC    /* .. 0x3fffffff: 2^17 slots (core/ids.h) */
#define KUMI_SCHED_TAG_PERS  KUMI_TAG_PERS   /* .. 0x7fffffff: 2^18 slots */
#define KUMI_SCHED_TAG_CAD   KUMI_TAG_CAD    /* .. -0x60000001: 2^17 slots */
#define KUMI_SCHED_SLOTS_NBC  (1u << 17)
#define KUMI_SCHED_SLOTS_PERS (1u << 18)
#define KUMI_SCHED_SLOTS_CAD  (1u << 17)

/* Who makes a schedule: each has its own sequence of tag bases. */
enum kumi_sched_space { KUMI_SCHED_NBC, KUMI_SCHED_PERSISTENT, KUMI_SCHED_CAD };

/* Check the request (and, persistent, the info) arguments of a
 * non-blocking or persistent collective call fn, then create its schedule. */
int kumi_sched_begin(struct kumi_comm *comm, const char *fn, bool persistent, MPI_Info info,
                     MPI_Request *request, struct kumi_sched **s);
/* A new schedule on comm (space: enum kumi_sched_space). */
int kumi_sched_create(struct kumi_comm *comm, int space, struct kumi_sched **out);
/* Fix the DAG (see sched.c); MPI_ERR_ARG if it has a cycle. */
int kumi_sched_seal(struct kumi_sched *s);
void kumi_sched_destroy(struct kumi_sched *s);
void kumi_sched_spares_free(void);     /* at shut-down: the arrays kept for reuse (sched.c) */
/* After the builder: report its error (code rc or the schedule's), else
 * make the request (kind KUMI_REQ_COLL) that owns s; a non-persistent one
 * is started at once.  On error s is destroyed. */
int kumi_sched_issue(struct kumi_sched *s, int rc, bool persistent, const char *fname, MPI_Request *request);
/* Start a (persistent, inactive) collective request: rerun its schedule. */
int kumi_sched_start(struct kumi_req *r);
void kumi_sched_register(void);       /* registers the request kind KUMI_REQ_COLL */


/* Engines (engine.c): parameter kumi_base_sched_engine = loop | thread | uring | kmod. */
void kumi_sched_register_params(void);
int kumi_sched_engine_init(void);       /* at start-up: checks the parameter */
int kumi_sched_listen(int *port);        /* (engine.c) listening socket of the uring / kmod engines */
bool kumi_sched_peer_listens(int w, const char *key);   /* (engine.c) w reached over sockets, a port under key */
/* (engine.c) their connection to world rank w (port under key), hello written; -1 with errno and *what */
int kumi_sched_connect(int w, const char *key, bool nodelay, const char **what);
void kumi_sched_engine_stop(void);      /* at shut-down: ends the progress thread */
void kumi_sched_engine_ready(void);     /* start-up after the first fence: the bindings are known */
const char *kumi_sched_engine(void);
void kumi_sched_engine_started(void);   /* a schedule starts a run */
void kumi_sched_engine_finished(void);  /* a run is over */
void kumi_sched_engine_ran(void);       /* a start call has started its schedule's first nodes */
/* SEND nodes of the running schedules (sched.c's runs, not the module's) not
 * started yet: read by the uring engine's thread without the library */
int kumi_sched_unsent(void);
/* Another engine ran the whole of s: its run is over (err: MPI_SUCCESS or an error code). */
void kumi_sched_engine_done(struct kumi_sched *s, int err);


/* The io_uring engine (uring.c). */
void kumi_sched_uring_register_params(void);
int kumi_sched_uring_init(void);        /* 0: running; -1: unavailable (said under KUMI_VERBOSE) */
void kumi_sched_uring_stop(void);
bool kumi_sched_uring_thread(void);      /* kumi_base_sched_uring_thread: a completion thread */
bool kumi_sched_uring_may_hold(void);    /* the thread may hold off on a busy host (engine.c) */
/* Node i (SEND / RECV) is ready: true if the engine took it (its peer is
 * reached over a socket), false to run it as a point-to-point request. */
bool kumi_sched_uring_take(struct kumi_sched *s, uint32_t i);
/* for engine.c's completion thread, without the library: */
bool kumi_sched_uring_quiet(void);      /* nothing waits to be submitted */
unsigned long long kumi_sched_uring_declined(void);     /* nodes left to the request layer so far */
bool kumi_sched_uring_cq_ready(void);   /* a completion waits to be reaped */
int kumi_sched_uring_fd(void);           /* the ring's descriptor (-1: none) */
bool kumi_sched_uring_woke(void);       /* after a sleep on it: true when a completion waits */
void kumi_sched_uring_doze_woke(void);  /* a doze of the completion thread ended at a completion (counted) */
bool kumi_sched_uring_big_recv(void);   /* a posted (or the last) receive's payload goes past the stream buffer */
unsigned long kumi_sched_uring_thread_sends(void);   /* SEND nodes the completion thread started so far */
/* From the engine: node i is over (err: MPI_SUCCESS or an error code). */
void kumi_sched_msg_done(struct kumi_sched *s, uint32_t i, int err);


/* The kernel-module engine (kmod.c, the KACC module of kmod/). */
void kumi_sched_kmod_register_params(void);
int kumi_sched_kmod_init(void);         /* 0: running; -1: unavailable (said under KUMI_VERBOSE) */
void kumi_sched_kmod_stop(void);
/* Run s in the module: true if the engine took it (its completion comes
 * through kumi_sched_engine_done), false to run it in the loop engine. */
bool kumi_sched_kmod_start(struct kumi_sched *s);
void kumi_sched_kmod_free(struct kumi_sched *s);   /* s is destroyed */

#endif
