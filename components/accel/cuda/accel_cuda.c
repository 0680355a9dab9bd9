/* Component accel/cuda: NVIDIA GPUs through the CUDA driver API, loaded at
 * run time with dlopen("libcuda.so.1") (Kumi has no link dependency on
 * CUDA).  Unavailable, with the reason kumi_info shows, where the driver
 * library is missing, cuInit fails or no device is present.
 *
 * Memory kinds come from cuPointerGetAttribute (CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
 * _IS_MANAGED); pinned memory is cuMemHostAlloc (DEVICEMAP for the host-mapped
 * kind).  The synchronous copies (and the memset of dev_alloc) are queued on a
 * CU_STREAM_NON_BLOCKING stream of the component's own (one per context) and
 * waited for with cuStreamSynchronize: never on the legacy default stream, whose work waits
 * for every kernel of the ordinary streams, nor with cuCtxSynchronize (the
 * same), so a kernel of the application that runs meanwhile (a persistent one
 * whose requests the MPIX_Gpu proxy serves with these copies) is not waited
 * for.  As in Open MPI and MPICH, an application hands a device buffer to MPI
 * once the work that writes it is over (cudaStreamSynchronize, ...).  A driver
 * without cuStreamSynchronize / cuMemcpyDtoDAsync / cuMemsetD8Async, or where
 * the stream cannot be made, copies with cuMemcpyDtoH / HtoD / DtoD.  Frees
 * are held (hold_frees) while a proxy runs: a driver's free may wait for the
 * kernels of the device.  Asynchronous copies
 * (contract 1.1, pipelined staging) are cuMemcpyDtoHAsync / HtoDAsync on a
 * CU_STREAM_NON_BLOCKING stream, completion by cuEventRecord / cuEventQuery /
 * cuEventSynchronize (events without timing); a driver without them leaves
 * those operations out (the glue then copies synchronously).  The context is the
 * calling thread's current one, else the primary context of device
 * accel_cuda_device (-1: the rank in MPI_COMM_WORLD modulo the device count). */
#include <kumi/accel.h>
#include <kumi/param.h>
#include <mpi.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Driver API facts (cuda.h): result 0 is CUDA_SUCCESS. */
typedef int cu_result;
typedef int cu_device;
typedef void *cu_context;
typedef unsigned long long cu_ptr;
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_POINTER_ATTRIBUTE_IS_MANAGED 8
#define CU_MEMORYTYPE_HOST 1
#define CU_MEMORYTYPE_DEVICE 2
#define CU_MEMORYTYPE_UNIFIED 4
#define CU_MEMHOSTALLOC_PORTABLE 1
#define CU_MEMHOSTALLOC_DEVICEMAP 2
#define CU_STREAM_NON_BLOCKING 1
#define CU_EVENT_DISABLE_TIMING 2
#define CUDA_ERROR_NOT_READY 600
typedef void *cu_stream;
typedef void *cu_event;
typedef struct { char reserved[64]; } cu_ipc_handle;   /* CUipcMemHandle (CU_IPC_HANDLE_SIZE 64) */
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 1
_Static_assert(sizeof(cu_ipc_handle) == KUMI_ACCEL_IPC_SIZE, "the handle fits the contract's");

static struct {
    cu_result (*Init)(unsigned);
    cu_result (*DeviceGetCount)(int *);
    cu_result (*DeviceGet)(cu_device *, int);
    cu_result (*DevicePrimaryCtxRetain)(cu_context *, cu_device);
    cu_result (*CtxGetCurrent)(cu_context *);
    cu_result (*CtxSetCurrent)(cu_context);
    cu_result (*PointerGetAttribute)(void *, int, cu_ptr);
    cu_result (*MemcpyDtoH)(void *, cu_ptr, size_t);
    cu_result (*MemcpyHtoD)(cu_ptr, const void *, size_t);
    cu_result (*MemHostAlloc)(void **, size_t, unsigned);
    cu_result (*MemHostGetDevicePointer)(cu_ptr *, void *, unsigned);
    cu_result (*MemFreeHost)(void *);
    cu_result (*MemAlloc)(cu_ptr *, size_t);
    cu_result (*MemFree)(cu_ptr);
    cu_result (*MemsetD8)(cu_ptr, unsigned char, size_t);
    /* optional: asynchronous copies */
    cu_result (*StreamCreate)(cu_stream *, unsigned);
    cu_result (*StreamDestroy)(cu_stream);
    cu_result (*MemcpyDtoHAsync)(void *, cu_ptr, size_t, cu_stream);
    cu_result (*MemcpyHtoDAsync)(cu_ptr, const void *, size_t, cu_stream);
    cu_result (*EventCreate)(cu_event *, unsigned);
    cu_result (*EventDestroy)(cu_event);
    cu_result (*EventRecord)(cu_event, cu_stream);
    cu_result (*EventQuery)(cu_event);
    cu_result (*EventSynchronize)(cu_event);
    /* optional: the synchronous copies on the component's own stream */
    cu_result (*StreamSynchronize)(cu_stream);
    cu_result (*MemcpyDtoDAsync)(cu_ptr, cu_ptr, size_t, cu_stream);
    cu_result (*MemsetD8Async)(cu_ptr, unsigned char, size_t, cu_stream);
    /* optional: IPC (signatures of CUDA 13's cuda.h: cuIpcGetMemHandle, cuIpcOpenMemHandle_v2,
       cuIpcCloseMemHandle, cuMemGetAddressRange_v2, cuMemcpyDtoD_v2) */
    cu_result (*IpcGetMemHandle)(cu_ipc_handle *, cu_ptr);   /* + cuCtxSynchronize */
    cu_result (*IpcOpenMemHandle)(cu_ptr *, cu_ipc_handle, unsigned);
    cu_result (*IpcCloseMemHandle)(cu_ptr);
    cu_result (*MemGetAddressRange)(cu_ptr *, size_t *, cu_ptr);
    cu_result (*MemcpyDtoD)(cu_ptr, cu_ptr, size_t);
    cu_result (*CtxSynchronize)(void);
    /* optional (cuCtxSetFlags: CUDA 12.1): wait_blocking; cuStreamQuery: own_sync meanwhile */
    cu_result (*CtxGetFlags)(unsigned *);
    cu_result (*CtxSetFlags)(unsigned);
    cu_result (*StreamQuery)(cu_stream);
} cu;
static bool async_ok;                   /* every optional symbol was found */
static bool ipc_ok;
static bool own_ok;                     /* async_ok and the symbols of own[] */

static void *lib;
static int ndev;
static long long cuda_device = -1;
static const char *cuda_library;
static cu_context ctx;

static const struct { const char *name; size_t off; } syms[] = {
#define S(f, n) { n, offsetof(__typeof__(cu), f) }
    S(Init, "cuInit"), S(DeviceGetCount, "cuDeviceGetCount"), S(DeviceGet, "cuDeviceGet"),
    S(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"), S(CtxGetCurrent, "cuCtxGetCurrent"),
    S(CtxSetCurrent, "cuCtxSetCurrent"), S(PointerGetAttribute, "cuPointerGetAttribute"),
    S(MemcpyDtoH, "cuMemcpyDtoH_v2"), S(MemcpyHtoD, "cuMemcpyHtoD_v2"), S(MemHostAlloc, "cuMemHostAlloc"),
    S(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2"), S(MemFreeHost, "cuMemFreeHost"),
    S(MemAlloc, "cuMemAlloc_v2"), S(MemFree, "cuMemFree_v2"), S(MemsetD8, "cuMemsetD8_v2"),
};
static const struct { const char *name; size_t off; } async_syms[] = {
    S(StreamCreate, "cuStreamCreate"), S(StreamDestroy, "cuStreamDestroy_v2"),
    S(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"), S(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    S(EventCreate, "cuEventCreate"), S(EventDestroy, "cuEventDestroy_v2"), S(EventRecord, "cuEventRecord"),
    S(EventQuery, "cuEventQuery"), S(EventSynchronize, "cuEventSynchronize"),
};
static const struct { const char *name; size_t off; } own_syms[] = {
    S(StreamSynchronize, "cuStreamSynchronize"), S(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    S(MemsetD8Async, "cuMemsetD8Async"),
};
static const struct { const char *name; size_t off; } ipc_syms[] = {
    S(IpcGetMemHandle, "cuIpcGetMemHandle"), S(IpcOpenMemHandle, "cuIpcOpenMemHandle_v2"),
    S(IpcCloseMemHandle, "cuIpcCloseMemHandle"), S(MemGetAddressRange, "cuMemGetAddressRange_v2"),
    S(MemcpyDtoD, "cuMemcpyDtoD_v2"), S(CtxSynchronize, "cuCtxSynchronize"),
#undef S
};

static long long ipc_cache_max = 16;

static void cuda_register(void)
{
    kumi_param_register_int("accel", "cuda", "device", -1,
                            "CUDA device whose primary context Kumi uses in a thread without a current "
                            "context (-1: the rank in MPI_COMM_WORLD modulo the device count)", KUMI_LEVEL_USER, &cuda_device);
    kumi_param_register_string("accel", "cuda", "library", "libcuda.so.1",
                               "The CUDA driver library, opened with dlopen at MPI_Init (tests: a stand-in)",
                               KUMI_LEVEL_DEV, &cuda_library);
    kumi_param_register_int("accel", "cuda", "ipc_cache", 16,
                            "Device allocations of other processes kept open (CUDA IPC) after a message, "
                            "so that the next message from the same allocation does not open its handle "
                            "again (0: each message opens and closes its handle)", KUMI_LEVEL_TUNER,
                            &ipc_cache_max);
}

static int cuda_open(char *why, size_t whylen)
{
    const char *name = cuda_library && *cuda_library ? cuda_library : "libcuda.so.1";
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, whylen, "%s not found (no NVIDIA driver on this machine)", name);
        return KUMI_UNAVAILABLE;
    }
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *f = dlsym(lib, syms[i].name);
        if (!f) {
            snprintf(why, whylen, "%s has no %s (driver too old)", name, syms[i].name);
            goto fail;
        }
        memcpy((char *)&cu + syms[i].off, &f, sizeof f);
    }
    async_ok = true;
    for (size_t i = 0; i < sizeof async_syms / sizeof async_syms[0]; i++) {
        void *f = dlsym(lib, async_syms[i].name);
        if (!f) async_ok = false;
        memcpy((char *)&cu + async_syms[i].off, &f, sizeof f);
    }
    own_ok = async_ok;
    for (size_t i = 0; i < sizeof own_syms / sizeof own_syms[0]; i++) {
        void *f = dlsym(lib, own_syms[i].name);
        if (!f) own_ok = false;
        memcpy((char *)&cu + own_syms[i].off, &f, sizeof f);
    }
    ipc_ok = true;
    for (size_t i = 0; i < sizeof ipc_syms / sizeof ipc_syms[0]; i++) {
        void *f = dlsym(lib, ipc_syms[i].name);
        if (!f) ipc_ok = false;
        memcpy((char *)&cu + ipc_syms[i].off, &f, sizeof f);
    }
    void *gf = dlsym(lib, "cuCtxGetFlags"), *sf = dlsym(lib, "cuCtxSetFlags"), *qf = dlsym(lib, "cuStreamQuery");
    memcpy(&cu.CtxGetFlags, &gf, sizeof gf);
    memcpy(&cu.CtxSetFlags, &sf, sizeof sf);
    memcpy(&cu.StreamQuery, &qf, sizeof qf);
    cu_result r = cu.Init(0);
    if (r) {
        snprintf(why, whylen, "cuInit failed (CUDA error %d): no CUDA device usable", r);
        goto keep;
    }
    if (cu.DeviceGetCount(&ndev) || ndev < 1) {
        snprintf(why, whylen, "no CUDA device");
        goto keep;
    }
    snprintf(why, whylen, "%d CUDA device%s", ndev, ndev > 1 ? "s" : "");
    return KUMI_OK;
fail:
    dlclose(lib);       /* before cuInit: nothing of the driver runs yet */
keep:                   /* after: it may have started threads (cuda_close) */
    lib = NULL;
    return KUMI_UNAVAILABLE;
}

static void ipc_cache_drop(void);
static void own_drop(void);

/* The driver library stays mapped: cuInit started threads of its own,
 * which would run on in unmapped code (the handle is dropped, so the next
 * open's dlopen finds it loaded). */
static void cuda_close(void)
{
    ipc_cache_drop();
    own_drop();
    lib = NULL;
}

/* A current context in the calling thread: 0, or -1. */
static int current(void)
{
    cu_context c = NULL;
    if (!cu.CtxGetCurrent(&c) && c) return 0;
    if (!ctx) return -1;
    return cu.CtxSetCurrent(ctx) ? -1 : 0;
}

static int cuda_init(void)
{
    cu_context c = NULL;
    if (!cu.CtxGetCurrent(&c) && c) { ctx = c; return MPI_SUCCESS; }
    int d = (int)cuda_device;
    if (d < 0) {
        d = kumi_world_rank() % ndev;   /* one host: the rank; across hosts, set accel_cuda_device */
    }
    cu_device dev;
    if (cu.DeviceGet(&dev, d) || cu.DevicePrimaryCtxRetain(&ctx, dev) || cu.CtxSetCurrent(ctx)) {
        kumi_log(1, "accel/cuda: device %d: no context", d);
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

static int cuda_mem_kind(const void *p)
{
    unsigned int mt = 0, managed = 0;
    if (!p || current()) return KUMI_ACCEL_MEM_HOST;
    if (cu.PointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (cu_ptr)(uintptr_t)p))
        return KUMI_ACCEL_MEM_HOST;   /* not known to the driver: ordinary host memory */
    if (!cu.PointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (cu_ptr)(uintptr_t)p) && managed)
        return KUMI_ACCEL_MEM_MANAGED;
    if (mt == CU_MEMORYTYPE_DEVICE || mt == CU_MEMORYTYPE_UNIFIED) return KUMI_ACCEL_MEM_DEVICE;
    return KUMI_ACCEL_MEM_HOST_PINNED;
}

/* The component's own streams: one per context a copy was made in (a stream
 * belongs to its context, and a thread may have another device's context
 * current), made at first use and kept until the end; or NULL: the legacy
 * default stream's calls (no stream could be made).  Shared by the threads:
 * each waits for its copy with cuStreamSynchronize (and for another thread's
 * copy queued just before it on that stream, which is short). */
#define OWN_MAX 16
static struct { cu_context c; cu_stream s; } owns[OWN_MAX];
static int nown;                        /* entries published (atomic) */
static bool own_failed;                 /* a stream was refused: the legacy stream from then on */
static pthread_mutex_t own_mu = PTHREAD_MUTEX_INITIALIZER;

/* Called with a current context (current() == 0). */
static cu_stream own_stream(void)
{
    cu_context c = NULL;
    if (!own_ok || __atomic_load_n(&own_failed, __ATOMIC_RELAXED) || cu.CtxGetCurrent(&c) || !c) return NULL;
    int n = __atomic_load_n(&nown, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (owns[i].c == c) return owns[i].s;
    cu_stream s = NULL;
    pthread_mutex_lock(&own_mu);
    for (int i = 0; i < nown; i++)
        if (owns[i].c == c) s = owns[i].s;
    if (!s && !own_failed) {
        if (nown < OWN_MAX && !cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING)) {
            owns[nown].c = c;
            owns[nown].s = s;
            __atomic_store_n(&nown, nown + 1, __ATOMIC_RELEASE);
        } else {
            s = NULL;
            __atomic_store_n(&own_failed, true, __ATOMIC_RELAXED);
            kumi_log(1, "accel/cuda: no stream of its own: copies on the legacy default stream "
                     "(they wait for the application's kernels)");
        }
    }
    pthread_mutex_unlock(&own_mu);
    return s;
}

/* The wait for a copy on an own stream.  While wait_blocking holds the
 * context's waits asleep, a cuStreamSynchronize would sleep too (the flags
 * are the context's, every thread's) and the proxy's staging copy would pay
 * a wake-up each: the component polls the stream instead, yielding. */
static bool blk_set;
static cu_result own_sync(cu_stream s)
{
    if (!__atomic_load_n(&blk_set, __ATOMIC_RELAXED) || !cu.StreamQuery) return cu.StreamSynchronize(s);
    for (unsigned i = 0;; i++) {
        cu_result r = cu.StreamQuery(s);
        if (r != CUDA_ERROR_NOT_READY) return r;
        if (i >= 64) sched_yield();
    }
}

static int cuda_to_host(void *dst, const void *src, size_t n)
{
    if (current()) return -1;
    cu_stream s = own_stream();
    if (s) return cu.MemcpyDtoHAsync(dst, (cu_ptr)(uintptr_t)src, n, s) || own_sync(s) ? -1 : 0;
    return cu.MemcpyDtoH(dst, (cu_ptr)(uintptr_t)src, n) ? -1 : 0;
}

static int cuda_to_dev(void *dst, const void *src, size_t n)
{
    if (current()) return -1;
    cu_stream s = own_stream();
    if (s) return cu.MemcpyHtoDAsync((cu_ptr)(uintptr_t)dst, src, n, s) || own_sync(s) ? -1 : 0;
    return cu.MemcpyHtoD((cu_ptr)(uintptr_t)dst, src, n) ? -1 : 0;
}

/* Frees held while a proxy runs (hold_frees): a list, done at the last off.
 * The unmapping of a peer's allocation opened through IPC is held too (it
 * may wait for the device as a free does). */
enum { HELD_HOST, HELD_DEV, HELD_IPC };
struct held { void *p; int kind; struct held *next; };
static struct held *held_list;
static int holds;
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;

static bool held(void *p, int kind)
{
    pthread_mutex_lock(&held_mu);
    struct held *h = holds > 0 ? malloc(sizeof *h) : NULL;
    if (h) {
        *h = (struct held){ p, kind, held_list };
        held_list = h;
    }
    pthread_mutex_unlock(&held_mu);
    return h != NULL;
}

/* wait_blocking: the context's scheduling flags (CUDA's CU_CTX_SCHED_*) set
 * to blocking synchronization while held, those found put back at the end. */
#define CU_CTX_SCHED_MASK 0x07
#define CU_CTX_SCHED_BLOCKING_SYNC 0x04
static pthread_mutex_t blk_mu = PTHREAD_MUTEX_INITIALIZER;
static int blk_holds;
static unsigned blk_saved;

static int cuda_wait_blocking(int on)
{
    int rc;
    pthread_mutex_lock(&blk_mu);
    if (on) {
        if (blk_holds++ == 0) {
            unsigned f = 0;
            bool set = cu.CtxGetFlags && cu.CtxSetFlags && !current() && !cu.CtxGetFlags(&f) &&
                       !cu.CtxSetFlags((f & ~CU_CTX_SCHED_MASK) | CU_CTX_SCHED_BLOCKING_SYNC);
            __atomic_store_n(&blk_set, set, __ATOMIC_RELAXED);
            blk_saved = f;
            if (blk_set)
                kumi_log(2, "accel/cuda: waits for the device block while a proxy runs (scheduling flags %#x before)",
                         f & CU_CTX_SCHED_MASK);
        }
        rc = blk_set ? 0 : -1;
    } else {
        if (blk_holds > 0 && --blk_holds == 0 && blk_set) {
            unsigned f = 0;
            if (!current() && !cu.CtxGetFlags(&f))
                cu.CtxSetFlags((f & ~CU_CTX_SCHED_MASK) | (blk_saved & CU_CTX_SCHED_MASK));
            __atomic_store_n(&blk_set, false, __ATOMIC_RELAXED);
        }
        rc = 0;
    }
    pthread_mutex_unlock(&blk_mu);
    return rc;
}

static void cuda_hold_frees(int on)
{
    pthread_mutex_lock(&held_mu);
    struct held *l = NULL;
    if (on) holds++;
    else if (holds > 0 && --holds == 0) {
        l = held_list;
        held_list = NULL;
    }
    pthread_mutex_unlock(&held_mu);
    int n = 0;
    for (struct held *h; (h = l); n++) {
        l = h->next;
        if (!current()) {
            if (h->kind == HELD_DEV) cu.MemFree((cu_ptr)(uintptr_t)h->p);
            else if (h->kind == HELD_IPC) cu.IpcCloseMemHandle((cu_ptr)(uintptr_t)h->p);
            else cu.MemFreeHost(h->p);
        }
        free(h);
    }
    if (n) kumi_log(2, "accel/cuda: %d frees held while a proxy ran, done now", n);
}

/* At the component's close: the stream, and frees still held (a proxy never stopped). */
static void own_drop(void)
{
    pthread_mutex_lock(&held_mu);
    holds = holds > 0 ? 1 : 0;
    pthread_mutex_unlock(&held_mu);
    cuda_hold_frees(0);
    pthread_mutex_lock(&own_mu);
    for (int i = 0; i < nown; i++) cu.StreamDestroy(owns[i].s);
    nown = 0;
    own_failed = false;
    pthread_mutex_unlock(&own_mu);
}

static int cuda_host_alloc_mapped(size_t n, void **host, void **dev)
{
    cu_ptr d;
    if (current() || cu.MemHostAlloc(host, n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP)) return -1;
    if (cu.MemHostGetDevicePointer(&d, *host, 0)) {
        cu.MemFreeHost(*host);
        return -1;
    }
    *dev = (void *)(uintptr_t)d;
    return 0;
}

static int cuda_host_alloc(size_t n, void **host)
{
    if (current()) return -1;
    return cu.MemHostAlloc(host, n, CU_MEMHOSTALLOC_PORTABLE) ? -1 : 0;
}

static void cuda_host_free(void *h)
{
    if (!held(h, HELD_HOST) && !current()) cu.MemFreeHost(h);
}

static int cuda_dev_alloc(size_t n, void **dev)
{
    cu_ptr d;
    if (current() || cu.MemAlloc(&d, n)) return -1;
    cu_stream s = own_stream();
    if (s ? cu.MemsetD8Async(d, 0, n, s) || cu.StreamSynchronize(s) : cu.MemsetD8(d, 0, n)) {
        cu.MemFree(d);
        return -1;
    }
    *dev = (void *)(uintptr_t)d;
    return 0;
}

static void cuda_dev_free(void *d)
{
    if (!held(d, HELD_DEV) && !current()) cu.MemFree((cu_ptr)(uintptr_t)d);
}

static int cuda_stream_new(void **s)
{
    if (!async_ok || current()) return -1;
    return cu.StreamCreate((cu_stream *)s, CU_STREAM_NON_BLOCKING) ? -1 : 0;
}

static void cuda_stream_free(void *s)
{
    if (async_ok && !current()) cu.StreamDestroy(s);
}

static int cuda_to_host_async(void *dst, const void *src, size_t n, void *s)
{
    if (!async_ok || current()) return -1;
    return cu.MemcpyDtoHAsync(dst, (cu_ptr)(uintptr_t)src, n, s) ? -1 : 0;
}

static int cuda_to_dev_async(void *dst, const void *src, size_t n, void *s)
{
    if (!async_ok || current()) return -1;
    return cu.MemcpyHtoDAsync((cu_ptr)(uintptr_t)dst, src, n, s) ? -1 : 0;
}

static int cuda_event_new(void **e)
{
    if (!async_ok || current()) return -1;
    return cu.EventCreate((cu_event *)e, CU_EVENT_DISABLE_TIMING) ? -1 : 0;
}

static void cuda_event_free(void *e)
{
    if (async_ok && !current()) cu.EventDestroy(e);
}

static int cuda_event_record(void *e, void *s)
{
    if (!async_ok || current()) return -1;
    return cu.EventRecord(e, s) ? -1 : 0;
}

static int cuda_event_query(void *e)
{
    if (!async_ok || current()) return -1;
    cu_result r = cu.EventQuery(e);
    return r == 0 ? 1 : r == CUDA_ERROR_NOT_READY ? 0 : -1;
}

static int cuda_event_sync(void *e)
{
    if (!async_ok || current()) return -1;
    return cu.EventSynchronize(e) ? -1 : 0;
}

/* IPC: the handle is for the allocation that holds dev (cuIpcGetMemHandle
 * wants its start: cuMemGetAddressRange). */
static int cuda_ipc_handle(const void *dev, void *h, size_t *off)
{
    cu_ptr base = 0;
    size_t len = 0;
    cu_ipc_handle hd;
    if (!ipc_ok || current() || cu.MemGetAddressRange(&base, &len, (cu_ptr)(uintptr_t)dev) ||
        cu.IpcGetMemHandle(&hd, base))
        return -1;
    memcpy(h, &hd, sizeof hd);
    *off = (size_t)((cu_ptr)(uintptr_t)dev - base);
    return 0;
}

/* Opened handles are cached (accel_cuda_ipc_cache entries), keyed by the
 * handle's bytes: a handle names one allocation of its owner (a new
 * allocation at the same address gets another handle), so an entry is never
 * stale while the owner's allocation lives; the mapping keeps its memory
 * until the entry is closed.  An entry is closed when it is the least
 * recently used one without a user and a new handle needs its place, and at
 * MPI_Finalize.  Opening a handle costs a driver call and the mapping of
 * the peer's memory (tens of microseconds), which a pipeline of messages
 * from one buffer would otherwise pay per message. */
struct ipc_entry {
    cu_ipc_handle h;
    cu_ptr base;
    unsigned refs;
    unsigned long long used;                 /* LRU stamp; 0: free slot */
};
#define IPC_CACHE_SLOTS 64
static struct ipc_entry ipc_cache[IPC_CACHE_SLOTS];
static unsigned long long ipc_clock;
static pthread_mutex_t ipc_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long ipc_opens, ipc_hits;

static int cache_limit(void)
{
    return ipc_cache_max < 0 ? 0 : ipc_cache_max > IPC_CACHE_SLOTS ? IPC_CACHE_SLOTS : (int)ipc_cache_max;
}

static int cuda_ipc_open(const void *h, void **base)
{
    cu_ipc_handle hd;
    cu_ptr p = 0;
    memcpy(&hd, h, sizeof hd);
    if (!ipc_ok || current()) return -1;
    int lim = cache_limit();
    pthread_mutex_lock(&ipc_mu);
    for (int i = 0; i < IPC_CACHE_SLOTS; i++)   /* all: the limit may have been lowered */
        if (ipc_cache[i].used && !memcmp(&ipc_cache[i].h, &hd, sizeof hd)) {
            ipc_cache[i].refs++;
            ipc_cache[i].used = ++ipc_clock;
            *base = (void *)(uintptr_t)ipc_cache[i].base;
            ipc_hits++;
            pthread_mutex_unlock(&ipc_mu);
            kumi_log(2, "accel/cuda: IPC handle of a peer's allocation reused (opened %lu, reused %lu)",
                     ipc_opens, ipc_hits);
            return 0;
        }
    /* a place: a free slot, else the least recently used entry without a user */
    int slot = -1;
    for (int i = 0; i < lim; i++) {
        if (!ipc_cache[i].used) { slot = i; break; }
        if (!ipc_cache[i].refs && (slot < 0 || ipc_cache[i].used < ipc_cache[slot].used)) slot = i;
    }
    if (slot >= 0 && ipc_cache[slot].used) {
        if (!held((void *)(uintptr_t)ipc_cache[slot].base, HELD_IPC)) cu.IpcCloseMemHandle(ipc_cache[slot].base);
        ipc_cache[slot].used = 0;
    }
    if (cu.IpcOpenMemHandle(&p, hd, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) {
        pthread_mutex_unlock(&ipc_mu);
        return -1;
    }
    ipc_opens++;
    if (slot >= 0) ipc_cache[slot] = (struct ipc_entry){ hd, p, 1, ++ipc_clock };
    pthread_mutex_unlock(&ipc_mu);
    kumi_log(2, "accel/cuda: IPC handle of a peer's allocation opened (opened %lu, reused %lu%s)", ipc_opens,
             ipc_hits, slot >= 0 ? "" : "; not cached");
    *base = (void *)(uintptr_t)p;
    return 0;
}

static void cuda_ipc_close(void *base)
{
    if (!ipc_ok || current()) return;
    pthread_mutex_lock(&ipc_mu);
    for (int i = 0; i < IPC_CACHE_SLOTS; i++)
        if (ipc_cache[i].used && ipc_cache[i].refs && ipc_cache[i].base == (cu_ptr)(uintptr_t)base) {
            ipc_cache[i].refs--;             /* stays open for the next message */
            pthread_mutex_unlock(&ipc_mu);
            return;
        }
    pthread_mutex_unlock(&ipc_mu);
    if (!held(base, HELD_IPC)) cu.IpcCloseMemHandle((cu_ptr)(uintptr_t)base);
}

static void ipc_cache_drop(void)
{
    pthread_mutex_lock(&ipc_mu);
    for (int i = 0; i < IPC_CACHE_SLOTS; i++)
        if (ipc_cache[i].used) {
            if (ipc_ok && !current()) cu.IpcCloseMemHandle(ipc_cache[i].base);
            ipc_cache[i].used = 0;
        }
    pthread_mutex_unlock(&ipc_mu);
}

static int cuda_dtod(void *dst, const void *src, size_t n)
{
    if (!ipc_ok || current()) return -1;
    /* waited for: the sender's buffer is released at the answer (cuMemcpyDtoD may return
       before a device-to-device copy is over, and cuCtxSynchronize would wait for every kernel) */
    cu_stream s = own_stream();
    if (s)
        return cu.MemcpyDtoDAsync((cu_ptr)(uintptr_t)dst, (cu_ptr)(uintptr_t)src, n, s) || own_sync(s)
                   ? -1 : 0;
    return cu.MemcpyDtoD((cu_ptr)(uintptr_t)dst, (cu_ptr)(uintptr_t)src, n) || cu.CtxSynchronize() ? -1 : 0;
}

static const struct kumi_accel_ops cuda_ops = {
    .hdr = KUMI_ACCEL_OPS_HDR,
    .init = cuda_init,
    .mem_kind = cuda_mem_kind,
    .copy_to_host = cuda_to_host,
    .copy_to_dev = cuda_to_dev,
    .host_alloc_mapped = cuda_host_alloc_mapped,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .dev_alloc = cuda_dev_alloc,
    .dev_free = cuda_dev_free,
    .stream_new = cuda_stream_new,
    .stream_free = cuda_stream_free,
    .copy_to_host_async = cuda_to_host_async,
    .copy_to_dev_async = cuda_to_dev_async,
    .event_new = cuda_event_new,
    .event_free = cuda_event_free,
    .event_record = cuda_event_record,
    .event_query = cuda_event_query,
    .event_sync = cuda_event_sync,
    .ipc_handle = cuda_ipc_handle,
    .ipc_open = cuda_ipc_open,
    .ipc_close = cuda_ipc_close,
    .copy_dtod = cuda_dtod,
    .hold_frees = cuda_hold_frees,
    .wait_blocking = cuda_wait_blocking,
};

KUMI_EXPORT const struct kumi_component kumi_accel_cuda_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "accel", .name = "cuda",
    .version = { 0, 1, 0 },
    .description = "NVIDIA GPUs through the CUDA driver (libcuda.so.1, loaded at run time)",
    .priority = 10,
    .register_params = cuda_register,
    .open = cuda_open, .close = cuda_close,
    .ops = &cuda_ops,
};
