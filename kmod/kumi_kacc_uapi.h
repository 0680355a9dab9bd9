/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* The interface between Kumi's schedule engine "kmod" (framework/sched/kmod.c)
 * and the KACC kernel module (kmod/kumi_kacc.c), device /dev/kumi_kacc.
 *
 * One open file of the device is one rank's context: its peers (TCP
 * sockets handed over by descriptor), its shared area (mmap of the device:
 * pages the module allocates, mapped read-write into the rank) and its
 * schedules.  The rank writes a schedule's node array, successor array and
 * state block into the area and registers them (the module validates and
 * snapshots the arrays, pins the nodes' user buffers); START runs it in the
 * kernel, the state block says when it is over.
 *
 * Wire format on the sockets (the io_uring engine's was the same until its
 * header grew to 56 bytes; the two engines never share a socket): each
 * message is a 24-byte header (struct kacc_wire: magic "KURN", context,
 * tag, length) followed by its bytes; receives are matched by (context,
 * tag) in posting order. */
#ifndef KUMI_KACC_UAPI_H
#define KUMI_KACC_UAPI_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <stdint.h>
#include <sys/ioctl.h>
typedef uint8_t __u8;
typedef uint16_t __u16;
typedef uint32_t __u32;
typedef uint64_t __u64;
typedef int32_t __s32;
typedef int64_t __s64;
#endif

/* Changes whenever anything below changes: the library refuses another. */
#define KACC_ABI_VERSION 5u
#define KACC_DEVICE "/dev/kumi_kacc"
#define KACC_WIRE_MAGIC 0x4b55524eu    /* "KURN" */

struct kacc_wire {
    __u32 magic;
    __s32 ctx;
    __s32 tag;
    __u32 pad;
    __u64 len;
};

enum kacc_kind {
    KACC_START = 1, KACC_END, KACC_SEND, KACC_RECV, KACC_CALC, KACC_COPY, KACC_NOP
};

/* Node flags: a step the rank does itself (in its next MPI call), the rest
 * in the kernel.  USER_PRE: when the node is ready the module flags it for
 * the rank and waits for KACC_IOC_NODE_DONE, then does its own part (a SEND
 * of data the rank packed; a NOP standing for a CALC / COPY the module
 * cannot do, or a message over another transport).  USER_POST: after its
 * part (a RECV into a bounce buffer) the module flags it; the rank unpacks
 * and answers KACC_IOC_NODE_DONE. */
#define KACC_F_USER_PRE  0x01
#define KACC_F_USER_POST 0x02
/* RECV: its buffer is the schedule's own scratch, which nobody reads after
 * the run.  From a direct peer (KACC_IOC_DIRECT_LINK), when the one other
 * node touching that buffer is a CALC after the RECV whose input is exactly
 * the buffer, the module reduces straight from the sender's pinned pages
 * into the CALC's inout (once the CALC's ancestors touching the inout are
 * done) and leaves the scratch unwritten (no copy).  A module without
 * direct copies refuses the flag: the library sets it only where
 * KACC_IOC_DIRECT_ID answered.  (Without the flag, a RECV whose buffer is
 * exactly the inout of a CALC after it is fused the same way, into that
 * inout: nothing is left unwritten, no flag is needed.) */
#define KACC_F_SCRATCH   0x04

/* CALC element types and operations (MPI's predefined ones). */
enum kacc_type {
    KACC_T_I8 = 1, KACC_T_U8, KACC_T_I16, KACC_T_U16, KACC_T_I32, KACC_T_U32, KACC_T_I64, KACC_T_U64,
    KACC_T_F32, KACC_T_F64, KACC_T_MAX_
};
enum kacc_op {
    KACC_OP_SUM = 1, KACC_OP_PROD, KACC_OP_MIN, KACC_OP_MAX, KACC_OP_BAND, KACC_OP_BOR, KACC_OP_BXOR,
    KACC_OP_LAND, KACC_OP_LOR, KACC_OP_LXOR, KACC_OP_MAX_
};

/* One node (64 bytes).  Successors: succ[first .. first + nsucc). */
struct kacc_node {
    __u8 kind;              /* enum kacc_kind */
    __u8 flags;             /* KACC_F_* */
    __u8 type;              /* CALC: enum kacc_type */
    __u8 op;                /* CALC: enum kacc_op */
    __s32 peer;             /* SEND / RECV: peer index (KACC_IOC_ADD_SOCKET), -1: nobody */
    __s32 ctx, tag;         /* SEND / RECV: matching */
    __u32 nsucc, first;
    __u64 buf;              /* SEND / RECV buffer; CALC in; COPY source (user addresses) */
    __u64 buf2;             /* CALC inout; COPY destination */
    __u64 len;              /* bytes: SEND, RECV (capacity), COPY, CALC (count * size) */
    __u64 reserved[2];
};

/* A schedule's state block in the shared area (written by the module). */
enum kacc_sstate { KACC_S_IDLE = 0, KACC_S_RUNNING, KACC_S_DONE };
struct kacc_state {
    __u32 state;            /* enum kacc_sstate */
    __s32 err;              /* 0, or a negative errno (-EMSGSIZE: a message was truncated) */
    __u32 useq;             /* bumped when a node is flagged for the rank */
    __u32 runs;             /* runs completed */
    __u64 bytes;            /* bytes received in the last run */
};

/* The area's first 64 bytes: events (bumped by the module on every
 * completion or node flagged for the rank) and acked (written by the rank);
 * poll() on the device says POLLIN while they differ.
 * waiting: how many of the rank's threads are in a blocking wait of the
 * library (it adds 1 on entering, takes 1 on leaving, atomically).  While it
 * is not 0, work that arrives for the context (a socket callback, a direct
 * peer's message) is not handed to a work item: the module sets kpend and
 * wakes the rank's poll() on the device, and the rank runs it itself
 * (KACC_IOC_PROGRESS, or poll() on the device, which runs it first): no
 * switch to a worker and back on the CPU the rank waits on.  A rank that
 * leaves its wait takes 1 from waiting, then reads kpend (after a full
 * fence; the module sets kpend, then fences, then reads waiting again) and
 * runs what is pending, so no work is left behind. */
struct kacc_area_hdr {
    __u32 events;
    __u32 acked;
    __u32 abi;
    __u32 waiting;          /* written by the rank (atomic add / sub) */
    __u32 kpend;            /* set by the module, cleared by it when it runs the work */
    __u32 pad[11];
};

struct kacc_version { __u32 abi; __u32 max_area; };
struct kacc_sock { __s32 fd; __s32 index; };     /* index -1: a new peer (fd -1: attached later) */
struct kacc_reg {
    __u64 nodes_off;        /* offsets into the area: node array (8-aligned) */
    __u64 succ_off;         /* successor array (4-aligned) */
    __u64 state_off;        /* struct kacc_state (8-aligned) */
    __u64 uflag_off;        /* n bytes: 1 = node flagged for the rank (the rank clears it) */
    __u32 n, nsucc;
    __u32 id;               /* out */
    __u32 flags;            /* KACC_REG_* */
};
/* REGISTER flags.  RUNPIN: the nodes' buffers are pinned by each START and
 * unpinned when the run ends, not for the registration's life: a
 * registration the rank keeps between its non-blocking collectives (for the
 * next one with the same nodes) holds no pages while idle, so memory the
 * application frees or maps anew at the same addresses meanwhile is never
 * written through stale pages.  REGISTER then checks the addresses only
 * (access_ok); a buffer that cannot be pinned fails START with EFAULT. */
#define KACC_REG_RUNPIN  0x1u
/* START_TAG: START with the run's tag offset: every SEND / RECV of this run
 * uses tag + tagoff (a 32-bit sum, wrapping); START is START_TAG with 0. */
struct kacc_start { __u32 id; __s32 tagoff; };
struct kacc_node_done { __u32 id, node; __s32 err; __u32 pad; };
struct kacc_stats {
    __u64 registered, runs, runs_done, nodes, user_nodes, bytes_sent, bytes_recv, calc_elems, copies,
          unexpected, rejected, peers;
    __u64 contexts, pinned_pages;   /* now: open files of the device, user pages pinned */
};

#define KACC_IOC_VERSION    _IOR('K', 1, struct kacc_version)
#define KACC_IOC_ADD_SOCKET _IOWR('K', 2, struct kacc_sock)
#define KACC_IOC_REGISTER   _IOWR('K', 3, struct kacc_reg)
#define KACC_IOC_START      _IOW('K', 4, __u32)
#define KACC_IOC_UNREGISTER _IOW('K', 5, __u32)
#define KACC_IOC_NODE_DONE  _IOW('K', 6, struct kacc_node_done)
#define KACC_IOC_STATS      _IOR('K', 7, struct kacc_stats)
#define KACC_IOC_START_TAG  _IOW('K', 10, struct kacc_start)
#define KACC_IOC_PROGRESS   _IO('K', 11)            /* run the context's pending work now */

/* Direct copies between two contexts of one kernel (ranks on the same host;
 * added to ABI 4 without changing it: a module without them answers ENOTTY
 * and the pair keeps its socket).  DIRECT_ID gives the context's cookie: an
 * id and a secret the module drew at open, which only the opener learns.
 * The rank hands both to the peer ranks of its job through MPI (the
 * runtime's key-value store).  DIRECT_LINK(index, the peer's id and secret)
 * makes peer `index` a direct one: its SENDs are taken by the peer context
 * straight from the pinned pages of this rank's buffer into those of its
 * RECV (one copy, no socket), and its RECVs are matched against the peer's
 * SENDs the same way; both ranks of a pair must link each other before
 * their first schedule with the pair.  ENOENT: no such context in this
 * kernel (another host: keep the socket); EACCES: the secret is wrong
 * (refused, counted); EBUSY: the pair is linked already. */
struct kacc_direct_id { __u64 id, secret; };
struct kacc_direct_link { __s32 index; __u32 pad; __u64 id, secret; };
#define KACC_IOC_DIRECT_ID   _IOR('K', 8, struct kacc_direct_id)
#define KACC_IOC_DIRECT_LINK _IOW('K', 9, struct kacc_direct_link)

#define KACC_MAX_AREA   (64u << 20)    /* bytes of one rank's shared area */
#define KACC_MAX_NODES  (1u << 20)
#define KACC_MAX_PEERS  4096
#define KACC_MAX_SCHEDS 65536

#endif
