/* kumi_gpu.h: MPI calls from inside a running (persistent) GPU kernel.
 *
 * A kernel asks the host for MPI calls through a request queue; a host proxy
 * thread (MPIX_Gpu_start / MPIX_Gpu_stop, mpi-ext.h) performs them with
 * Kumi's ordinary paths and writes each completion back.  Nothing is
 * relaunched.  This header is the whole protocol, written once: it compiles
 * as C (the proxy, and the "CPU device" whose threads stand in for blocks in
 * the tests) and as CUDA C++ (__device__ functions under __CUDACC__).
 *
 * Device side, one thread per block (or warp) calls, with blk its block
 * index (0 .. nblocks-1 given to MPIX_Gpu_start) and g the kumi_gpu_t that
 * MPIX_Gpu_start filled in (passed to the kernel by value):
 *
 *   kumi_gpu_send(g, blk, buf, count, KUMI_GPU_DOUBLE, dest, tag)
 *   kumi_gpu_recv(g, blk, buf, count, KUMI_GPU_DOUBLE, source, tag, &st)   (st may be NULL)
 *   kumi_gpu_isend / kumi_gpu_irecv (..., &req); kumi_gpu_wait(g, blk, &req, &st);
 *   kumi_gpu_test(g, blk, &req, &flag, &st)
 *   kumi_gpu_barrier(g, blk)
 *   kumi_gpu_bcast(g, blk, buf, count, type, root)
 *   kumi_gpu_allreduce(g, blk, sendbuf or KUMI_GPU_IN_PLACE, recvbuf, count, type, KUMI_GPU_SUM)
 *   kumi_gpu_fail(g, blk, errorclass)    report a failure of the kernel to the host
 *
 * Each returns an MPI error class (0 = MPI_SUCCESS): a bad argument (unknown
 * request kind, datatype or op, a rank or tag out of range, a negative count,
 * a communicator index other than 0) or an error of the MPI call comes back
 * in the completion record, never as a crash of the proxy.  Point-to-point
 * traffic uses the communicator given to MPIX_Gpu_start (a device send
 * matches a host receive on it, and the reverse); a block's requests start
 * in the order it issued them (MPI's non-overtaking order holds per block).
 * Collectives of block b involve block b of every rank (each block has its
 * own duplicate of the communicator), so blocks may run collectives at once.
 * Buffers are contiguous: host-mapped (pinned), managed or device memory
 * (with kind MPIX_GPU_CUDA the proxy's calls stage device memory through host
 * memory with copies that never wait for the running kernel).
 *
 * The protocol.  One ring of qsize (a power of two) request entries in
 * host-mapped memory, shared by all blocks; a ticket counter in device
 * memory (device-side atomics only: no atomic read-modify-write ever crosses
 * the bus); per block, depth completion records in host-mapped memory.
 *   issue:   t = fetch_add(tail, 1); e = ring[t % qsize];
 *            wait until e.seq == t          (the slot is free: a full ring makes the block wait)
 *            fill e; release-store e.seq = t + 1
 *   proxy:   e = ring[head % qsize]; if acquire-load e.seq == head + 1: copy e,
 *            release-store e.seq = head + qsize (free for the next lap); head++
 *   done:    proxy fills the record, release-store rec.done = gen;
 *            the block waits until acquire-load rec.done == gen, reads the record.
 * A block has at most depth requests outstanding (issued, not yet waited or
 * tested complete); one more returns MPI_ERR_NO_MEM at once.
 * Small messages travel in the record: a send or receive of at most g.inl
 * bytes (KUMI_GPU_INLINE, 32; 0 with kumi_base_gpu_inline = 0) is flagged
 * KUMI_GPU_F_INLINE; the block copies a send's data into the record before
 * it publishes the entry, the proxy sends from there; the proxy receives
 * into the record and the block copies the data to its buffer when it
 * waits (or tests) the request complete.  So a halo of a few numbers in
 * device memory costs the host no staging copy through a copy engine (two
 * per message otherwise, one on each side, each several microseconds).
 */
#ifndef KUMI_GPU_H
#define KUMI_GPU_H

#include <stdint.h>
#include <stddef.h>

#if defined(__CUDACC__)
#define KUMI_GPU_FN static __device__ __forceinline__
#define KUMI_GPU_HD static __host__ __device__ __forceinline__
#else
#define KUMI_GPU_FN static inline
#define KUMI_GPU_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define KUMI_GPU_MAGIC 0x4b474e32u   /* "KGN2": the layout of this header (2: messages in the records); a kernel built
                                        against another finds no request accepted (MPI_ERR_ARG) */

/* Request kinds. */
enum { KUMI_GPU_OP_SEND = 1, KUMI_GPU_OP_RECV, KUMI_GPU_OP_BARRIER, KUMI_GPU_OP_BCAST, KUMI_GPU_OP_ALLREDUCE,
       KUMI_GPU_OP_FAIL, KUMI_GPU_OP_MAX };
/* Datatypes (MPI_BYTE, MPI_CHAR, MPI_INT, MPI_UNSIGNED, MPI_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_INT32_T,
 * MPI_INT64_T, MPI_UINT64_T). */
enum { KUMI_GPU_BYTE = 0, KUMI_GPU_CHAR, KUMI_GPU_INT, KUMI_GPU_UNSIGNED, KUMI_GPU_LONG_LONG, KUMI_GPU_FLOAT,
       KUMI_GPU_DOUBLE, KUMI_GPU_INT32, KUMI_GPU_INT64, KUMI_GPU_UINT64, KUMI_GPU_NTYPES };
/* Reduction operations (MPI_SUM ... MPI_BXOR). */
enum { KUMI_GPU_SUM = 0, KUMI_GPU_PROD, KUMI_GPU_MIN, KUMI_GPU_MAX, KUMI_GPU_LAND, KUMI_GPU_LOR, KUMI_GPU_BAND,
       KUMI_GPU_BOR, KUMI_GPU_BXOR, KUMI_GPU_NOPS };
#define KUMI_GPU_ANY_SOURCE (-1)     /* MPI_ANY_SOURCE */
#define KUMI_GPU_ANY_TAG (-2)        /* MPI_ANY_TAG */
#define KUMI_GPU_PROC_NULL (-3)      /* MPI_PROC_NULL */
#define KUMI_GPU_IN_PLACE ((void *)1)
/* MPI error classes the device side itself returns (the standard ABI's values). */
#define KUMI_GPU_SUCCESS 0
#define KUMI_GPU_ERR_NO_MEM 39       /* MPI_ERR_NO_MEM: no free completion record in this block */
#define KUMI_GPU_ERR_ARG 13          /* MPI_ERR_ARG: block index out of range, NULL request */

/* One ring entry (64 bytes).  seq is the only field both sides write. */
struct kumi_gpu_entry {
    uint64_t seq;
    uint64_t buf, buf2;       /* addresses (buf2: allreduce's receive buffer) */
    int64_t count;
    int16_t op, type, redop, comm;
    int32_t peer, tag, block, slot;
    uint32_t gen, flags;      /* flags: KUMI_GPU_F_INLINE */
};
#define KUMI_GPU_F_INLINE 1u  /* a send's data is in its completion record, a receive's goes there */
#define KUMI_GPU_INLINE 32    /* bytes a completion record carries */

/* One completion record (64 bytes).  done, err, source, tag, count: written
 * by the proxy; gen, busy: the block's own bookkeeping (only it writes them). */
struct kumi_gpu_completion {
    uint32_t done;
    int32_t err, source, tag;
    int64_t count;            /* elements received */
    uint32_t gen, busy;
    uint64_t data[KUMI_GPU_INLINE / 8];   /* a small message (KUMI_GPU_F_INLINE): written by the block for a
                                             send, by the proxy for a receive */
};

typedef struct kumi_gpu {
    struct kumi_gpu_entry *ring;          /* qsize entries, host-mapped */
    struct kumi_gpu_completion *comp;     /* nblocks * depth records, host-mapped */
    unsigned long long *tail;             /* ticket counter, device memory */
    uint32_t nblocks, depth, qsize, magic;
    uint32_t inl, pad;                    /* inl: the largest message carried in the records (0: none) */
} kumi_gpu_t;

/* ibuf, isize: where the data of a receive carried in the record goes, and its element size */
typedef struct kumi_gpu_request { int32_t slot; uint32_t gen; void *ibuf; uint32_t isize, pad; } kumi_gpu_request;
#define KUMI_GPU_REQUEST_NULL_SLOT (-1)

typedef struct kumi_gpu_status { int32_t source, tag, error; int64_t count; } kumi_gpu_status;

/* ------------------------------------------------ memory ordering, once */
KUMI_GPU_HD uint64_t kumi_gpu_load_acq64(const uint64_t *p)
{
#if defined(__CUDA_ARCH__)
    uint64_t v = *(const volatile uint64_t *)p;
    __threadfence_system();
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}
KUMI_GPU_HD void kumi_gpu_store_rel64(uint64_t *p, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    __threadfence_system();
    *(volatile uint64_t *)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}
KUMI_GPU_HD uint32_t kumi_gpu_load_acq32(const uint32_t *p)
{
#if defined(__CUDA_ARCH__)
    uint32_t v = *(const volatile uint32_t *)p;
    __threadfence_system();
    return v;
#else
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}
KUMI_GPU_HD void kumi_gpu_store_rel32(uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
    __threadfence_system();
    *(volatile uint32_t *)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}
/* The ticket: device-scope atomic on device memory (the CPU device: ordinary memory). */
KUMI_GPU_HD uint64_t kumi_gpu_ticket(unsigned long long *tail)
{
#if defined(__CUDA_ARCH__)
    return (uint64_t)atomicAdd(tail, 1ULL);
#else
    return (uint64_t)__atomic_fetch_add(tail, 1ULL, __ATOMIC_RELAXED);
#endif
}
#if !defined(__CUDA_ARCH__)
/* The host's way to wait (libmpi): yields, then sleeps a few microseconds. */
void kumi_gpu_host_pause(unsigned spins);
#endif
/* Waiting: never a bare spin (more ranks than cores, a GPU shared with others). */
KUMI_GPU_HD void kumi_gpu_pause(unsigned *spins)
{
    unsigned s = ++*spins;
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 700
    __nanosleep(s < 64 ? 64 : 1024);
#else
    (void)s;
#endif
#else
    if (s >= 64) kumi_gpu_host_pause(s);
#endif
}

/* ------------------------------------------------ device side */
KUMI_GPU_FN struct kumi_gpu_completion *kumi_gpu_rec_(kumi_gpu_t g, int blk, int slot)
{
    return &g.comp[(size_t)blk * g.depth + (size_t)slot];
}

/* The size of a datatype's element (0: not a datatype; the proxy reports it). */
KUMI_GPU_HD uint32_t kumi_gpu_type_size_(int t)
{
    switch (t) {
    case KUMI_GPU_BYTE: case KUMI_GPU_CHAR: return 1;
    case KUMI_GPU_INT: case KUMI_GPU_UNSIGNED: case KUMI_GPU_FLOAT: case KUMI_GPU_INT32: return 4;
    case KUMI_GPU_LONG_LONG: case KUMI_GPU_DOUBLE: case KUMI_GPU_INT64: case KUMI_GPU_UINT64: return 8;
    default: return 0;
    }
}
/* Copies a small message to or from a completion record (host-mapped: on a
 * GPU each access crosses the bus, so by words where the addresses allow;
 * volatile, so that a record written by the host is read from memory). */
KUMI_GPU_HD void kumi_gpu_copy_(volatile void *dst, const volatile void *src, size_t n)
{
    uintptr_t a = (uintptr_t)dst | (uintptr_t)src | (uintptr_t)n;
    if (!(a & 7))
        for (size_t i = 0; i < n / 8; i++) ((volatile uint64_t *)dst)[i] = ((const volatile uint64_t *)src)[i];
    else if (!(a & 3))
        for (size_t i = 0; i < n / 4; i++) ((volatile uint32_t *)dst)[i] = ((const volatile uint32_t *)src)[i];
    else
        for (size_t i = 0; i < n; i++) ((volatile unsigned char *)dst)[i] = ((const volatile unsigned char *)src)[i];
}

/* Take a free completion record of block blk (busy, with a new
 * generation, in *gen): its slot, or -1 when all depth are outstanding. */
KUMI_GPU_FN int kumi_gpu_take_rec_(kumi_gpu_t g, int blk, uint32_t *gen)
{
    for (uint32_t i = 0; i < g.depth; i++) {
        struct kumi_gpu_completion *c = kumi_gpu_rec_(g, blk, (int)i);
        if (c->busy) continue;
        uint32_t n = c->gen + 1;
        if (n == 0) n = 1;
        c->gen = *gen = n;
        c->busy = 1;
        return (int)i;
    }
    return -1;
}
/* Publish the request x (every field but seq) in the ring: a ticket, the
 * entry once free (a full ring makes the block wait for the proxy), then
 * the release store of its sequence number. */
KUMI_GPU_FN void kumi_gpu_post_(kumi_gpu_t g, const struct kumi_gpu_entry *x)
{
    uint64_t t = kumi_gpu_ticket(g.tail);
    struct kumi_gpu_entry *e = &g.ring[t & (uint64_t)(g.qsize - 1)];
    unsigned spins = 0;
    while (kumi_gpu_load_acq64(&e->seq) != t) kumi_gpu_pause(&spins);
    e->buf = x->buf;
    e->buf2 = x->buf2;
    e->count = x->count;
    e->op = x->op;
    e->type = x->type;
    e->redop = x->redop;
    e->comm = x->comm;
    e->peer = x->peer;
    e->tag = x->tag;
    e->block = x->block;
    e->slot = x->slot;
    e->gen = x->gen;
    e->flags = x->flags;
    kumi_gpu_store_rel64(&e->seq, t + 1);
}

/* Issue one request on communicator index comm (0: the one of MPIX_Gpu_start);
 * *req names its completion record. */
KUMI_GPU_FN int kumi_gpu_issue_(kumi_gpu_t g, int blk, int op, const void *buf, const void *buf2, int64_t count,
                                int type, int peer, int tag, int redop, int comm, kumi_gpu_request *req)
{
    req->slot = KUMI_GPU_REQUEST_NULL_SLOT;
    req->gen = 0;
    req->ibuf = 0;
    req->isize = 0;
    if (blk < 0 || (uint32_t)blk >= g.nblocks || g.magic != KUMI_GPU_MAGIC) return KUMI_GPU_ERR_ARG;
    uint32_t gen = 0;
    int slot = kumi_gpu_take_rec_(g, blk, &gen);
    if (slot < 0) return KUMI_GPU_ERR_NO_MEM;
    /* a small send or receive: its data travels in the record (no copy of
     * device memory by the host, which stages it through a copy engine) */
    uint32_t flags = 0, tsz = kumi_gpu_type_size_(type);
    if ((op == KUMI_GPU_OP_SEND || op == KUMI_GPU_OP_RECV) && buf && tsz && count > 0 && count <= (int64_t)g.inl &&
        (uint64_t)count * tsz <= g.inl && g.inl <= KUMI_GPU_INLINE) {
        flags = KUMI_GPU_F_INLINE;
        if (op == KUMI_GPU_OP_SEND) kumi_gpu_copy_(kumi_gpu_rec_(g, blk, slot)->data, buf, (size_t)count * tsz);
    }
    struct kumi_gpu_entry x;
    x.seq = 0;
    x.buf = (uint64_t)(uintptr_t)buf;
    x.buf2 = (uint64_t)(uintptr_t)buf2;
    x.count = count;
    x.op = (int16_t)op;
    x.type = (int16_t)type;
    x.redop = (int16_t)redop;
    x.comm = (int16_t)comm;
    x.peer = peer;
    x.tag = tag;
    x.block = blk;
    x.slot = slot;
    x.gen = gen;
    x.flags = flags;
    kumi_gpu_post_(g, &x);
    req->slot = slot;
    req->gen = gen;
    if (flags && op == KUMI_GPU_OP_RECV) {
        req->ibuf = (void *)buf;
        req->isize = tsz;
    }
    return KUMI_GPU_SUCCESS;
}

/* The record's fields are read through volatile: the proxy wrote them after
 * the last use of this record, whose values a GPU's L1 may still hold. */
KUMI_GPU_FN int kumi_gpu_finish_(kumi_gpu_t g, int blk, kumi_gpu_request *req, kumi_gpu_status *st)
{
    volatile struct kumi_gpu_completion *c = kumi_gpu_rec_(g, blk, req->slot);
    int err = c->err;
    int64_t count = c->count;
    if (st) {
        st->source = c->source;
        st->tag = c->tag;
        st->error = err;
        st->count = count;
    }
    if (req->ibuf && !err && count > 0) {      /* a receive carried in the record */
        uint64_t n = (uint64_t)count * req->isize;
        kumi_gpu_copy_(req->ibuf, c->data, (size_t)(n < KUMI_GPU_INLINE ? n : KUMI_GPU_INLINE));
    }
    c->busy = 0;
    req->slot = KUMI_GPU_REQUEST_NULL_SLOT;
    req->ibuf = 0;
    return err;
}

KUMI_GPU_FN int kumi_gpu_test(kumi_gpu_t g, int blk, kumi_gpu_request *req, int *flag, kumi_gpu_status *st)
{
    if (!req || blk < 0 || (uint32_t)blk >= g.nblocks) return KUMI_GPU_ERR_ARG;
    if (req->slot == KUMI_GPU_REQUEST_NULL_SLOT) { *flag = 1; return KUMI_GPU_SUCCESS; }
    if (kumi_gpu_load_acq32(&kumi_gpu_rec_(g, blk, req->slot)->done) != req->gen) { *flag = 0; return 0; }
    *flag = 1;
    return kumi_gpu_finish_(g, blk, req, st);
}

KUMI_GPU_FN int kumi_gpu_wait(kumi_gpu_t g, int blk, kumi_gpu_request *req, kumi_gpu_status *st)
{
    if (!req || blk < 0 || (uint32_t)blk >= g.nblocks) return KUMI_GPU_ERR_ARG;
    if (req->slot == KUMI_GPU_REQUEST_NULL_SLOT) return KUMI_GPU_SUCCESS;
    const uint32_t *done = &kumi_gpu_rec_(g, blk, req->slot)->done;
    unsigned spins = 0;
    while (kumi_gpu_load_acq32(done) != req->gen) kumi_gpu_pause(&spins);
    return kumi_gpu_finish_(g, blk, req, st);
}

KUMI_GPU_FN int kumi_gpu_call_(kumi_gpu_t g, int blk, int op, const void *buf, const void *buf2, int64_t count,
                               int type, int peer, int tag, int redop, kumi_gpu_status *st)
{
    kumi_gpu_request r;
    int rc = kumi_gpu_issue_(g, blk, op, buf, buf2, count, type, peer, tag, redop, 0, &r);
    if (rc) return rc;
    return kumi_gpu_wait(g, blk, &r, st);
}

KUMI_GPU_FN int kumi_gpu_isend(kumi_gpu_t g, int blk, const void *buf, int64_t count, int type, int dest, int tag,
                               kumi_gpu_request *req)
{
    return kumi_gpu_issue_(g, blk, KUMI_GPU_OP_SEND, buf, 0, count, type, dest, tag, 0, 0, req);
}
KUMI_GPU_FN int kumi_gpu_irecv(kumi_gpu_t g, int blk, void *buf, int64_t count, int type, int source, int tag,
                               kumi_gpu_request *req)
{
    return kumi_gpu_issue_(g, blk, KUMI_GPU_OP_RECV, buf, 0, count, type, source, tag, 0, 0, req);
}
KUMI_GPU_FN int kumi_gpu_send(kumi_gpu_t g, int blk, const void *buf, int64_t count, int type, int dest, int tag)
{
    return kumi_gpu_call_(g, blk, KUMI_GPU_OP_SEND, buf, 0, count, type, dest, tag, 0, 0);
}
KUMI_GPU_FN int kumi_gpu_recv(kumi_gpu_t g, int blk, void *buf, int64_t count, int type, int source, int tag,
                              kumi_gpu_status *st)
{
    return kumi_gpu_call_(g, blk, KUMI_GPU_OP_RECV, buf, 0, count, type, source, tag, 0, st);
}
KUMI_GPU_FN int kumi_gpu_barrier(kumi_gpu_t g, int blk)
{
    return kumi_gpu_call_(g, blk, KUMI_GPU_OP_BARRIER, 0, 0, 0, 0, 0, 0, 0, 0);
}
KUMI_GPU_FN int kumi_gpu_bcast(kumi_gpu_t g, int blk, void *buf, int64_t count, int type, int root)
{
    return kumi_gpu_call_(g, blk, KUMI_GPU_OP_BCAST, buf, 0, count, type, root, 0, 0, 0);
}
KUMI_GPU_FN int kumi_gpu_allreduce(kumi_gpu_t g, int blk, const void *sendbuf, void *recvbuf, int64_t count, int type,
                                   int redop)
{
    return kumi_gpu_call_(g, blk, KUMI_GPU_OP_ALLREDUCE, sendbuf, recvbuf, count, type, 0, 0, redop, 0);
}
/* The kernel failed: the host's MPIX_Gpu_stop reports errorclass (the first one reported). */
KUMI_GPU_FN int kumi_gpu_fail(kumi_gpu_t g, int blk, int errorclass)
{
    return kumi_gpu_call_(g, blk, KUMI_GPU_OP_FAIL, 0, 0, 0, 0, errorclass, 0, 0, 0);
}

/* ------------------------------------------------ host (proxy) side */
#if !defined(__CUDA_ARCH__)
/* Take the entry at *head if published: copies it to *out, frees the slot. */
static inline int kumi_gpu_host_take(struct kumi_gpu_entry *ring, uint32_t qsize, uint64_t *head,
                                     struct kumi_gpu_entry *out)
{
    struct kumi_gpu_entry *e = &ring[*head & (uint64_t)(qsize - 1)];
    if (kumi_gpu_load_acq64(&e->seq) != *head + 1) return 0;
    *out = *e;
    kumi_gpu_store_rel64(&e->seq, *head + qsize);
    ++*head;
    return 1;
}
/* Write a completion record, then release it to the block. */
static inline void kumi_gpu_host_complete(struct kumi_gpu_completion *c, uint32_t gen, int err, int source, int tag,
                                          int64_t count)
{
    c->err = err;
    c->source = source;
    c->tag = tag;
    c->count = count;
    kumi_gpu_store_rel32(&c->done, gen);
}
/* A fresh ring: entry i free for ticket i. */
static inline void kumi_gpu_host_init(struct kumi_gpu_entry *ring, uint32_t qsize)
{
    for (uint32_t i = 0; i < qsize; i++) ring[i].seq = i;
}
#endif

#ifdef __cplusplus
}
#endif
#endif
