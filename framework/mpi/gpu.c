/* The host proxy of device-initiated MPI (kumi_gpu.h, mpi-ext.h):
 * MPIX_Gpu_start / MPIX_Gpu_stop.
 *
 * A proxy is a host thread that polls one request ring (kumi_gpu.h's
 * protocol), starts each request as a non-blocking MPI operation with the
 * library's own functions (so one block waiting for a message never keeps
 * the proxy from serving another), tests the operations in flight and
 * writes each completion back with release ordering.  The thread shares the
 * library: MPIX_Gpu_start switches the library lock on, as
 * MPI_THREAD_MULTIPLE does (the application keeps calling MPI at the level
 * it asked for: the proxy is the library's own thread, like the progress
 * thread of KUMI_BASE_SCHED_ENGINE=thread).  The proxy takes the lock for
 * each batch of calls and never blocks inside the library.
 *
 * Memory: kind MPIX_GPU_CPU (the CPU device of the tests) uses ordinary
 * memory; MPIX_GPU_CUDA asks the accel framework (kumi/accel.h) for
 * host-mapped memory (ring, completion records) and device memory (the
 * ticket counter). */
#define _GNU_SOURCE                     /* cpu_set_t, pthread_attr_setaffinity_np */
#include "mpi/mpi_front.h"
#include "core/cpus.h"
#include <kumi/accel.h>
#include <kumi_gpu.h>
#include <kumi/param.h>
#include <mpi-ext.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(sizeof(struct kumi_gpu_entry) == 64, "ring entry: 64 bytes");
_Static_assert(sizeof(struct kumi_gpu_completion) == 64, "completion record: 64 bytes");
_Static_assert(KUMI_GPU_ERR_NO_MEM == MPI_ERR_NO_MEM && KUMI_GPU_ERR_ARG == MPI_ERR_ARG, "error classes");
_Static_assert(KUMI_GPU_ANY_SOURCE == MPI_ANY_SOURCE && KUMI_GPU_ANY_TAG == MPI_ANY_TAG &&
               KUMI_GPU_PROC_NULL == MPI_PROC_NULL, "wildcards");

struct gop {                     /* an operation in flight */
    struct kumi_gpu_entry e;
    MPI_Request req;
    size_t elsize;
};

struct kumi_mpix_gpu {
    int kind;
    struct kumi_comm *comm;      /* point-to-point (the application's communicator, retained) */
    MPI_Comm *bcomm;             /* per block: a duplicate for its collectives */
    kumi_gpu_t dev;              /* what the device sees */
    struct kumi_gpu_entry *ring; /* host views */
    struct kumi_gpu_completion *comp;
    unsigned long long *tail;
    uint64_t head;
    struct gop *ops;
    int nops, capops;
    pthread_t thr;
    int running, stop;           /* atomics */
    int nothread;                /* MPIX_GPU_NOTHREAD: the caller serves with MPIX_Gpu_progress */
    int fail_class, fail_block;  /* the first kumi_gpu_fail */
    int bad_entries;             /* entries naming no block / record (no completion possible) */
    int held;                    /* the accel component holds its frees for this proxy */
    int blocking;                /* the application's waits for the device sleep (accel 1.4) */
    struct kumi_mpix_gpu *next;
};

KUMI_EXPORT void kumi_gpu_host_pause(unsigned spins)
{
    if (spins < 256) { sched_yield(); return; }
    struct timespec ts = { 0, 20000 };
    nanosleep(&ts, NULL);
}

static struct kumi_mpix_gpu *live;   /* running proxies (under the library lock) */
static const char pfn[] = "MPIX_Gpu proxy";

static MPI_Datatype type_of(int t)
{
    switch (t) {
    case KUMI_GPU_BYTE: return MPI_BYTE;
    case KUMI_GPU_CHAR: return MPI_CHAR;
    case KUMI_GPU_INT: return MPI_INT;
    case KUMI_GPU_UNSIGNED: return MPI_UNSIGNED;
    case KUMI_GPU_LONG_LONG: return MPI_LONG_LONG;
    case KUMI_GPU_FLOAT: return MPI_FLOAT;
    case KUMI_GPU_DOUBLE: return MPI_DOUBLE;
    case KUMI_GPU_INT32: return MPI_INT32_T;
    case KUMI_GPU_INT64: return MPI_INT64_T;
    case KUMI_GPU_UINT64: return MPI_UINT64_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op op_of(int o)
{
    static const MPI_Op ops[KUMI_GPU_NOPS] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR,
                                               MPI_BAND, MPI_BOR, MPI_BXOR };
    return o >= 0 && o < KUMI_GPU_NOPS ? ops[o] : MPI_OP_NULL;
}

static int class_of(int code)
{
    int cls = MPI_ERR_OTHER;
    if (code == MPI_SUCCESS) return MPI_SUCCESS;
    if (kumi_mpi_error_class(code, &cls) != MPI_SUCCESS) cls = MPI_ERR_OTHER;
    return cls;
}

/* Complete the entry's record (the entry names a valid block and record). */
static void complete(struct kumi_mpix_gpu *g, const struct kumi_gpu_entry *e, int err, int source, int tag,
                     int64_t count)
{
    struct kumi_gpu_completion *c = &g->comp[(size_t)e->block * g->dev.depth + (size_t)e->slot];
    if (err) kumi_log(2, "MPIX_Gpu: block %d request kind %d: error class %d", e->block, e->op, err);
    kumi_gpu_host_complete(c, e->gen, err, source, tag, count);
}

static int bad(int cls, const char *fmt, int v)
{
    return kumi_error(cls, fmt, v);
}

/* Check and start one request: MPI_SUCCESS (*op holds it), or the error to
 * report.  Called with the library lock held. */
static int start_op(struct kumi_mpix_gpu *g, struct gop *op)
{
    const struct kumi_gpu_entry *e = &op->e;
    struct kumi_comm *c = g->comm;
    void *buf = (void *)(uintptr_t)e->buf;
    op->req = MPI_REQUEST_NULL;
    op->elsize = 1;
    if (e->op <= 0 || e->op >= KUMI_GPU_OP_MAX)
        return bad(MPI_ERR_ARG, "MPIX_Gpu: unknown request kind %d", e->op);
    if (e->comm != 0) return bad(MPI_ERR_COMM, "MPIX_Gpu: communicator index %d: only 0 is registered", e->comm);
    if (e->op == KUMI_GPU_OP_BARRIER)
        return kumi_coll_barrier(pfn, KUMI_FORM_NB, MPI_INFO_NULL, &op->req, kumi_comm_get(g->bcomm[e->block]));
    struct kumi_dt *dt = kumi_dt_get(type_of(e->type));
    if (!dt) return bad(MPI_ERR_TYPE, "MPIX_Gpu: unknown datatype %d", e->type);
    op->elsize = dt->size;
    if (e->count < 0) return bad(MPI_ERR_COUNT, "MPIX_Gpu: count %d is negative", (int)e->count);
    if (e->flags & KUMI_GPU_F_INLINE) {         /* the data is (goes) in the request's record */
        if (e->op != KUMI_GPU_OP_SEND && e->op != KUMI_GPU_OP_RECV)
            return bad(MPI_ERR_ARG, "MPIX_Gpu: request kind %d with its data in the record", e->op);
        if (e->count > (int64_t)g->dev.inl || (uint64_t)e->count * dt->size > g->dev.inl)   /* (no wrap-around) */
            return kumi_error(MPI_ERR_ARG, "MPIX_Gpu: %lld elements of %zu bytes in a record: more than its %u bytes",
                              (long long)e->count, dt->size, g->dev.inl);
        buf = g->comp[(size_t)e->block * g->dev.depth + (size_t)e->slot].data;
    }
    if (!buf && e->count > 0 && e->op != KUMI_GPU_OP_ALLREDUCE)
        return bad(MPI_ERR_BUFFER, "MPIX_Gpu: NULL buffer with count %d", (int)e->count);
    switch (e->op) {
    case KUMI_GPU_OP_SEND:
        if (e->peer != MPI_PROC_NULL && (e->peer < 0 || e->peer >= c->size))
            return bad(MPI_ERR_RANK, "MPIX_Gpu: send to rank %d: out of range", e->peer);
        if (e->tag < 0 || e->tag > kumi_tag_ub) return bad(MPI_ERR_TAG, "MPIX_Gpu: send tag %d is invalid", e->tag);
        return kumi_pt2pt_isend(pfn, KUMI_MODE_STD, KUMI_FORM_NB, buf, e->count, dt, e->peer, e->tag, c, &op->req);
    case KUMI_GPU_OP_RECV:
        if (e->peer != MPI_PROC_NULL && e->peer != MPI_ANY_SOURCE && (e->peer < 0 || e->peer >= c->size))
            return bad(MPI_ERR_RANK, "MPIX_Gpu: receive from rank %d: out of range", e->peer);
        if (e->tag != MPI_ANY_TAG && (e->tag < 0 || e->tag > kumi_tag_ub))
            return bad(MPI_ERR_TAG, "MPIX_Gpu: receive tag %d is invalid", e->tag);
        return kumi_pt2pt_recv(pfn, KUMI_FORM_NB, buf, e->count, dt, e->peer, e->tag, c, NULL, &op->req);
    case KUMI_GPU_OP_BCAST:
        if (e->peer < 0 || e->peer >= c->size) return bad(MPI_ERR_ROOT, "MPIX_Gpu: bcast root %d: out of range", e->peer);
        return kumi_coll_bcast(pfn, KUMI_FORM_NB, MPI_INFO_NULL, &op->req, buf, e->count, dt, e->peer,
                               kumi_comm_get(g->bcomm[e->block]));
    case KUMI_GPU_OP_ALLREDUCE: {
        struct kumi_op *o = kumi_op_get(op_of(e->redop));
        if (!o) return bad(MPI_ERR_OP, "MPIX_Gpu: unknown reduction %d", e->redop);
        void *rbuf = (void *)(uintptr_t)e->buf2;
        if ((!buf || !rbuf) && e->count > 0)
            return bad(MPI_ERR_BUFFER, "MPIX_Gpu: allreduce: NULL buffer with count %d", (int)e->count);
        const void *sbuf = buf == KUMI_GPU_IN_PLACE ? MPI_IN_PLACE : buf;
        return kumi_coll_allreduce(pfn, KUMI_FORM_NB, MPI_INFO_NULL, &op->req, sbuf, rbuf, e->count, dt, o,
                                   kumi_comm_get(g->bcomm[e->block]));
    }
    default: /* KUMI_GPU_OP_FAIL */
        if (!g->fail_class) {
            g->fail_class = e->peer > 0 ? e->peer : MPI_ERR_OTHER;
            g->fail_block = e->block;
        }
        return MPI_SUCCESS;
    }
}

/* Take what the ring holds; start it.  Returns the number taken. */
static int take(struct kumi_mpix_gpu *g)
{
    int n = 0;
    struct kumi_gpu_entry e;
    while (kumi_gpu_host_take(g->ring, g->dev.qsize, &g->head, &e)) {
        n++;
        if (e.block < 0 || (uint32_t)e.block >= g->dev.nblocks || e.slot < 0 || (uint32_t)e.slot >= g->dev.depth) {
            if (!g->bad_entries++)
                kumi_warn("MPIX_Gpu: a request names block %d, record %d (of %u blocks, %u records): dropped",
                          e.block, e.slot, g->dev.nblocks, g->dev.depth);
            continue;
        }
        if (g->nops == g->capops) {
            int cap = g->capops ? 2 * g->capops : 64;
            struct gop *p = realloc(g->ops, (size_t)cap * sizeof *p);
            if (!p) { complete(g, &e, MPI_ERR_NO_MEM, 0, 0, 0); continue; }
            g->ops = p;
            g->capops = cap;
        }
        struct gop *op = &g->ops[g->nops];
        op->e = e;
        kumi_lock();
        int rc = start_op(g, op);
        kumi_unlock();
        if (rc || op->req == MPI_REQUEST_NULL)
            complete(g, &e, class_of(rc), MPI_ANY_SOURCE, MPI_ANY_TAG, 0);
        else
            g->nops++;
    }
    return n;
}

/* Test the operations in flight; complete those done.  Returns how many. */
static int poll_ops(struct kumi_mpix_gpu *g)
{
    int n = 0;
    if (!g->nops) return 0;
    kumi_lock();
    for (int i = 0; i < g->nops;) {
        struct gop *op = &g->ops[i];
        int flag = 0;
        MPI_Status st;
        int rc = kumi_mpi_test(&op->req, &flag, &st);
        if (!rc && !flag) { i++; continue; }
        int64_t count = 0;
        if (!rc && op->e.op == KUMI_GPU_OP_RECV) count = (int64_t)(kumi_status_bytes(&st) / op->elsize);
        if (op->e.op == KUMI_GPU_OP_RECV && !rc)
            complete(g, &op->e, MPI_SUCCESS, st.MPI_SOURCE, st.MPI_TAG, count);
        else
            complete(g, &op->e, class_of(rc), MPI_ANY_SOURCE, MPI_ANY_TAG, 0);
        g->ops[i] = g->ops[--g->nops];   /* the order of tests does not matter: each was started in order */
        n++;
    }
    kumi_unlock();
    return n;
}

/* After stop: receives nobody will match are cancelled; the rest finish. */
static void drain(struct kumi_mpix_gpu *g)
{
    take(g);
    kumi_lock();
    for (int i = 0; i < g->nops; i++)
        if (g->ops[i].e.op == KUMI_GPU_OP_RECV) kumi_mpi_cancel(&g->ops[i].req);
    kumi_unlock();
    unsigned spins = 0;
    while (g->nops) {
        if (!poll_ops(g)) kumi_gpu_pause(&spins);
    }
}

static long long spin_us = 1000;     /* kumi_base_gpu_proxy_spin_us */
static long long proxy_anycpu = 1;   /* kumi_base_gpu_proxy_anycpu */
static long long blocking_sync = 1;  /* kumi_base_gpu_proxy_blocking_sync */
static int inline_small = 1;         /* kumi_base_gpu_inline */

void kumi_gpu_register_params(void)
{
    kumi_param_register_int("kumi", "base", "gpu_proxy_spin_us", 1000,
                            "Time (microseconds) the device proxy of MPIX_Gpu_start keeps polling "
                            "(yielding the CPU) after its last request or completion before it sleeps "
                            "20 us between polls (-1: never sleeps)", KUMI_LEVEL_TUNER, &spin_us);
    kumi_param_register_int("kumi", "base", "gpu_proxy_blocking_sync", 1,
                            "While a device proxy of kind MPIX_GPU_CUDA runs (with its thread), the "
                            "application's waits for the device (cudaDeviceSynchronize...) sleep instead of "
                            "spinning (the context's blocking synchronization, put back at MPIX_Gpu_stop; "
                            "CUDA 12.1 or later): 0 leaves them as they are", KUMI_LEVEL_TUNER, &blocking_sync);
    kumi_param_register_bool("kumi", "base", "gpu_inline", 1,
                             "Device-initiated sends and receives of at most 32 bytes carry their data in "
                             "their completion record (host-mapped memory) instead of having the proxy "
                             "copy a device buffer through host memory (kumi_gpu.h, KUMI_GPU_F_INLINE)",
                             KUMI_LEVEL_TUNER, &inline_small);
    kumi_param_register_int("kumi", "base", "gpu_proxy_anycpu", 1,
                            "Where the device proxy of MPIX_Gpu_start runs in a rank mpiexec bound to a core: "
                            "0, on the rank's core (where a CUDA application's thread spins in "
                            "cudaDeviceSynchronize while its kernel runs, and the proxy waits for a time slice "
                            "at each request); 1, on the CPUs of the rank's NUMA nodes, those bound to no rank "
                            "where there are any; 2, on every online CPU, likewise", KUMI_LEVEL_TUNER,
                            &proxy_anycpu);
}

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void *proxy_main(void *arg)
{
    struct kumi_mpix_gpu *g = arg;
    kumi_call = pfn;
    unsigned idle = 0;
    long long last = now_us();
    while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
        int n = take(g);
        n += poll_ops(g);
        if (n) { idle = 0; continue; }
        if (++idle < 256) continue;
        if (idle == 256) last = now_us();
        if (spin_us < 0 || now_us() - last < spin_us) {
            sched_yield();           /* more ranks than cores: the others run */
            continue;
        }
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
    }
    drain(g);
    return NULL;
}

/* The proxy thread, off the rank's core where mpiexec bound the rank
 * (core/cpus.c; kumi_base_gpu_proxy_anycpu): the CPUs found once, at the
 * first start, the launch's bindings known by then. */
static int start_proxy(struct kumi_mpix_gpu *g)
{
    static int found;          /* 0: not looked; 1: a set; -1: none (the rank's CPUs) */
    static cpu_set_t set;
    if (!found) {
        cpu_set_t free_set;
        found = kumi_cpus_helper((int)proxy_anycpu, &set) ? 1 : -1;
        if (found > 0 && kumi_cpus_free(&set, &free_set)) set = free_set;
        if (found > 0) kumi_log(2, "MPIX_Gpu: the proxy thread runs on %d CPUs, not only the rank's", CPU_COUNT(&set));
    }
    pthread_attr_t at;
    if (pthread_attr_init(&at)) return -1;
    if (found > 0 && pthread_attr_setaffinity_np(&at, sizeof set, &set))
        kumi_log(2, "MPIX_Gpu: the proxy thread keeps the rank's CPUs");
    int rc = pthread_create(&g->thr, &at, proxy_main, g);
    if (rc == EINVAL && found > 0) {           /* a set the cgroup refuses: the rank's CPUs */
        found = -1;
        pthread_attr_destroy(&at);
        pthread_attr_init(&at);
        rc = pthread_create(&g->thr, &at, proxy_main, g);
    }
    pthread_attr_destroy(&at);
    if (!rc) pthread_setname_np(g->thr, "kumi-gpuproxy");   /* for top -H, ps -L, a debugger */
    return rc;
}

/* ------------------------------------------------------- memory */
static int gpu_alloc(struct kumi_mpix_gpu *g, size_t ringsz, size_t compsz)
{
    if (g->kind == MPIX_GPU_CPU) {
        g->ring = aligned_alloc(64, ringsz);
        g->comp = aligned_alloc(64, compsz);
        g->tail = calloc(1, 64);
        if (!g->ring || !g->comp || !g->tail) return kumi_error(MPI_ERR_NO_MEM, "MPIX_Gpu_start: out of memory");
        memset(g->comp, 0, compsz);
        g->dev.ring = g->ring;
        g->dev.comp = g->comp;
        g->dev.tail = g->tail;
        return MPI_SUCCESS;
    }
    const struct kumi_accel_ops *a = kumi_accel();
    if (!a || !a->host_alloc_mapped || !a->dev_alloc)
        return kumi_error(MPI_ERR_UNSUPPORTED_OPERATION, "MPIX_Gpu_start: kind MPIX_GPU_CUDA: no accel component "
                          "is usable in this process (kumi_info shows why)");
    void *dring, *dcomp;
    int rc = a->host_alloc_mapped(ringsz, (void **)&g->ring, &dring);
    if (!rc) rc = a->host_alloc_mapped(compsz, (void **)&g->comp, &dcomp);
    if (!rc) rc = a->dev_alloc(64, (void **)&g->dev.tail);
    if (rc) return kumi_error(MPI_ERR_NO_MEM, "MPIX_Gpu_start: the accel component could not allocate memory");
    memset(g->comp, 0, compsz);
    g->dev.ring = dring;
    g->dev.comp = dcomp;
    return MPI_SUCCESS;
}

static void gpu_free(struct kumi_mpix_gpu *g)
{
    if (g->kind == MPIX_GPU_CPU) {
        free(g->ring);
        free(g->comp);
        free(g->tail);
    } else {
        const struct kumi_accel_ops *a = kumi_accel();
        if (a && a->host_free) {
            if (g->ring) a->host_free(g->ring);
            if (g->comp) a->host_free(g->comp);
        }
        if (a && a->dev_free && g->dev.tail) a->dev_free(g->dev.tail);
    }
    free(g->ops);
    free(g->bcomm);
    free(g);
}

/* A driver's free may wait for every kernel of the device, the persistent
 * one too, which waits for this proxy: the component keeps what is freed
 * while a proxy of kind MPIX_GPU_CUDA runs (accel contract 1.3). */
static void hold_frees(struct kumi_mpix_gpu *g, int on)
{
    const struct kumi_accel_ops *a = g->kind == MPIX_GPU_CUDA ? kumi_accel() : NULL;
    if (!a || a->hdr.size <= offsetof(struct kumi_accel_ops, hold_frees) || !a->hold_frees || g->held == on) return;
    a->hold_frees(on);
    g->held = on;
}

/* While a proxy thread of kind MPIX_GPU_CUDA runs, the application's
 * thread waits for its kernel (cudaDeviceSynchronize) asleep, not spinning
 * (accel contract 1.4; kumi_base_gpu_proxy_blocking_sync): where the proxy
 * finds no free core it shares one with such a thread, and a spinning one
 * held the core for a whole time slice at each request (4 ms). */
static void wait_blocking(struct kumi_mpix_gpu *g, int on)
{
    const struct kumi_accel_ops *a = g->kind == MPIX_GPU_CUDA ? kumi_accel() : NULL;
    if (!a || a->hdr.size <= offsetof(struct kumi_accel_ops, wait_blocking) || !a->wait_blocking ||
        g->blocking == on || (on && (!blocking_sync || g->nothread)))
        return;
    if (a->wait_blocking(on) == 0 || !on) g->blocking = on;
    else kumi_log(2, "MPIX_Gpu: the application's waits for the device stay as they are (driver too old)");
}

static int is_live(struct kumi_mpix_gpu *g)
{
    struct kumi_mpix_gpu *p;
    for (p = live; p && p != g; p = p->next) {}
    return p != NULL;
}

static void unlink_live(struct kumi_mpix_gpu *g)
{
    for (struct kumi_mpix_gpu **p = &live; *p; p = &(*p)->next)
        if (*p == g) { *p = g->next; break; }
}

/* Stop the thread, free the per-block communicators.  Lock held on entry. */
static int gpu_end(struct kumi_mpix_gpu *g)
{
    if (g->running) {
        __atomic_store_n(&g->stop, 1, __ATOMIC_RELEASE);
        int d = kumi_lock_release_all();
        pthread_join(g->thr, NULL);
        kumi_lock_reacquire(d);
        g->running = 0;
    } else if (g->nothread && g->ring) {
        drain(g);
    }
    int rc = MPI_SUCCESS;
    for (uint32_t b = 0; g->bcomm && b < g->dev.nblocks; b++)
        if (g->bcomm[b] != MPI_COMM_NULL) {
            int r = kumi_mpi_comm_free(&g->bcomm[b]);
            if (!rc) rc = r;
        }
    kumi_comm_release(g->comm);
    unlink_live(g);
    hold_frees(g, 0);
    wait_blocking(g, 0);
    return rc;
}

/* ------------------------------------------------------- MPI extensions */
KUMI_EXPORT int MPIX_Gpu_start(MPI_Comm comm, int kind, int nblocks, int depth, int qsize, kumi_gpu_t *dev,
                               MPIX_Gpu *gpu)
{
    static const char fn[] = "MPIX_Gpu_start";
    if (kumi_state != KUMI_STATE_INIT) kumi_err_fatal("%s: MPI is not initialized", fn);
    struct kumi_comm *c = kumi_comm_get(comm);
    if (!c) return kumi_err_handle(NULL, kumi_error(MPI_ERR_COMM, "%s: argument comm is not a communicator", fn));
    int rc = MPI_SUCCESS;
    int nothread = (kind & MPIX_GPU_NOTHREAD) != 0;
    kind &= ~MPIX_GPU_NOTHREAD;
    if (c->inter) rc = kumi_error(MPI_ERR_COMM, "%s: argument comm is an intercommunicator", fn);
    else if (kind != MPIX_GPU_CPU && kind != MPIX_GPU_CUDA)
        rc = kumi_error(MPI_ERR_ARG, "%s: argument kind = %d: expected MPIX_GPU_CPU or MPIX_GPU_CUDA "
                        "(| MPIX_GPU_NOTHREAD)", fn, kind);
    else if (nblocks < 1 || nblocks > 65536)
        rc = kumi_error(MPI_ERR_ARG, "%s: argument nblocks = %d: expected 1 .. 65536", fn, nblocks);
    else if (depth < 0 || depth > 1024)
        rc = kumi_error(MPI_ERR_ARG, "%s: argument depth = %d: expected 0 (4) .. 1024", fn, depth);
    else if (qsize < 0 || qsize > (1 << 20) || (qsize & (qsize - 1)) || qsize == 1)
        rc = kumi_error(MPI_ERR_ARG, "%s: argument qsize = %d: expected 0 (1024) or a power of two 2 .. 2^20", fn,
                        qsize);
    else if (!dev || !gpu)
        rc = kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fn, dev ? "gpu" : "dev");
    if (rc) return kumi_err_handle(c, rc);
    if (!depth) depth = 4;
    if (!qsize) qsize = 1024;

    /* the proxy thread shares the library (see the head of this file) */
    if (!nothread && !kumi_mt) {
        __atomic_store_n(&kumi_mt, true, __ATOMIC_SEQ_CST);
        kumi_log(2, "%s: library lock on (the proxy thread calls MPI)", fn);
    }
    kumi_lock();
    kumi_call = fn;
    struct kumi_mpix_gpu *g = calloc(1, sizeof *g);
    if (!g) { kumi_unlock(); return kumi_err_handle(c, kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn)); }
    g->kind = kind;
    g->nothread = nothread;
    g->comm = c;
    c->refcount++;
    g->dev.nblocks = (uint32_t)nblocks;
    g->dev.depth = (uint32_t)depth;
    g->dev.qsize = (uint32_t)qsize;
    g->dev.magic = KUMI_GPU_MAGIC;
    g->dev.inl = inline_small ? KUMI_GPU_INLINE : 0;
    g->bcomm = malloc((size_t)nblocks * sizeof *g->bcomm);
    if (!g->bcomm) rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (int b = 0; g->bcomm && b < nblocks; b++) g->bcomm[b] = MPI_COMM_NULL;
    if (!rc) rc = gpu_alloc(g, (size_t)qsize * sizeof(struct kumi_gpu_entry),
                            (size_t)nblocks * (size_t)depth * sizeof(struct kumi_gpu_completion));
    for (int b = 0; !rc && b < nblocks; b++) rc = kumi_mpi_comm_dup(c, &g->bcomm[b]);
    if (!rc) {
        kumi_gpu_host_init(g->ring, (uint32_t)qsize);
        if (g->kind == MPIX_GPU_CPU) *g->tail = 0;   /* the accel component zeroes the device memory it gives */
        hold_frees(g, 1);
        wait_blocking(g, 1);
        if (g->kind == MPIX_GPU_CUDA) kumi_accel_warm();   /* pinned memory made before the kernel */
        g->next = live;
        live = g;
        if (nothread) {}
        else if (start_proxy(g))
            rc = kumi_error(MPI_ERR_OTHER, "%s: cannot start the proxy thread", fn);
        else
            g->running = 1;
    }
    if (rc) {
        gpu_end(g);
        gpu_free(g);
        kumi_unlock();
        return kumi_err_handle(c, rc);
    }
    *dev = g->dev;
    *gpu = g;
    kumi_unlock();
    return MPI_SUCCESS;
}

KUMI_EXPORT int MPIX_Gpu_stop(MPIX_Gpu *gpu)
{
    static const char fn[] = "MPIX_Gpu_stop";
    if (!gpu || !*gpu)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument gpu is %s", fn, gpu ? "MPIX_GPU_NULL" : "NULL"));
    kumi_lock();
    kumi_call = fn;
    struct kumi_mpix_gpu *g = *gpu, *p;
    for (p = live; p && p != g; p = p->next) {}
    if (!p) {
        kumi_unlock();
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument gpu is not a running proxy", fn));
    }
    struct kumi_comm *c = g->comm;
    c->refcount++;                       /* for the error handler below */
    int rc = gpu_end(g);
    if (!rc && g->fail_class)
        rc = kumi_error(g->fail_class, "%s: block %d of the device reported a failure (%s)", fn, g->fail_block,
                        kumi_err_class_name(g->fail_class));
    else if (!rc && g->bad_entries)
        rc = kumi_error(MPI_ERR_OTHER, "%s: %d requests named no block or record and were dropped", fn,
                        g->bad_entries);
    gpu_free(g);
    *gpu = MPIX_GPU_NULL;
    if (rc) rc = kumi_err_handle(c, rc);
    kumi_comm_release(c);
    kumi_unlock();
    return rc;
}

/* A proxy started with MPIX_GPU_NOTHREAD: take what the ring holds, start
 * it, complete what finished, once; *events (may be NULL) = how many. */
KUMI_EXPORT int MPIX_Gpu_progress(MPIX_Gpu gpu, int *events)
{
    static const char fn[] = "MPIX_Gpu_progress";
    if (events) *events = 0;
    kumi_lock();
    kumi_call = fn;
    if (!gpu || !is_live(gpu)) {
        kumi_unlock();
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument gpu is not a running proxy", fn));
    }
    if (!gpu->nothread) {
        struct kumi_comm *c = gpu->comm;
        kumi_unlock();
        return kumi_err_handle(c, kumi_error(MPI_ERR_ARG, "%s: argument gpu has its own proxy thread "
                                             "(started without MPIX_GPU_NOTHREAD)", fn));
    }
    kumi_unlock();
    int n = take(gpu);
    n += poll_ops(gpu);
    if (events) *events = n;
    return MPI_SUCCESS;
}

/* MPI_Finalize: proxies still running are stopped (their failures were the
 * application's to collect). */
void kumi_gpu_finalize(void)
{
    while (live) {
        struct kumi_mpix_gpu *g = live;
        kumi_log(1, "MPI_Finalize: stopping a device proxy MPIX_Gpu_stop did not stop");
        gpu_end(g);
        gpu_free(g);
    }
}
