/* A stand-in for libcuda.so.1 (tests/scripts/gpu_fakecuda.sh): the CUDA
 * driver calls accel/cuda uses, with "device memory" that the host cannot
 * touch: cuMemAlloc maps a memfd twice, once PROT_NONE (the device address
 * handed out: a load or store through it is a segmentation fault) and once
 * read-write (what cuMemcpy* use).  So an MPI call that reads or writes a
 * device buffer without staging it crashes, and one that stages it works.
 * FAKECUDA_NODEV=1: cuDeviceGetCount says 0 devices.  FAKECUDA_DEVRW=1: the
 * device address is readable and writable too (the CPU device of gpu_cpu
 * then plays the GPU on memory from the component).  FAKECUDA_NOSTREAM=1:
 * cuStreamCreate fails (no asynchronous copies).
 *
 * A kernel that runs (fakecuda_kernel(1) .. fakecuda_kernel(0), a test's CPU
 * threads standing in for a persistent kernel): the calls that would wait
 * for it on a GPU, namely work on the legacy default stream (the synchronous
 * cuMemcpy* and cuMemsetD8), cuCtxSynchronize, cuMemFree, cuMemFreeHost and
 * cuIpcCloseMemHandle (which may, as a free), are counted and named on
 * stderr; fakecuda_kernel returns the count.  Allocations made meanwhile are
 * counted apart (fakecuda_kernel_allocs). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

struct region { char *dev, *rw; size_t len; int fd; int opened; unsigned long gen; };
static unsigned long gens;   /* allocations made: a handle names one (as CUDA's do) */
static struct region regs[256];
static int nregs;
static void *pinned[256];
static int npinned;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static __thread void *cur;
/* what the driver did (tests read it through fakecuda_stats, found with dlsym) */
static unsigned long long b_dtoh, b_htod, b_dtod, n_ipc_open, n_async;
static volatile int kernel_on;
static unsigned long long n_kernel_waits;
/* a call that would wait for the running kernel */
static void kwait(const char *fn)
{
    if (!kernel_on) return;
    pthread_mutex_lock(&mu);
    n_kernel_waits++;
    pthread_mutex_unlock(&mu);
    fprintf(stderr, "fakecuda: %s while a kernel runs: on a GPU it would wait for the kernel\n", fn);
}
/* allocations (cuMemAlloc, cuMemHostAlloc) made while a kernel runs: counted
 * apart (whether a GPU's driver waits for the kernel there is not known) */
static unsigned long long n_kernel_allocs;
static void kalloc(void)
{
    if (!kernel_on) return;
    pthread_mutex_lock(&mu);
    n_kernel_allocs++;
    pthread_mutex_unlock(&mu);
}
unsigned long long fakecuda_kernel_allocs(void)
{
    pthread_mutex_lock(&mu);
    unsigned long long n = n_kernel_allocs;
    pthread_mutex_unlock(&mu);
    return n;
}
unsigned long long fakecuda_kernel(int on)
{
    kernel_on = on;
    pthread_mutex_lock(&mu);
    unsigned long long n = n_kernel_waits;
    pthread_mutex_unlock(&mu);
    return n;
}
static void count(unsigned long long *c, unsigned long long n)
{
    pthread_mutex_lock(&mu);
    *c += n;
    pthread_mutex_unlock(&mu);
}
/* out[0] bytes copied device to host (synchronous and asynchronous), [1] host
 * to device, [2] device to device, [3] IPC handles opened, [4] asynchronous
 * copies waited for through events (Kumi's pipelines; a copy queued and then
 * waited for with cuStreamSynchronize is a synchronous copy on a stream) */
void fakecuda_stats(unsigned long long out[5])
{
    pthread_mutex_lock(&mu);
    out[0] = b_dtoh;
    out[1] = b_htod;
    out[2] = b_dtod;
    out[3] = n_ipc_open;
    out[4] = n_async;
    pthread_mutex_unlock(&mu);
}

static struct region *find(uintptr_t p)
{
    for (int i = 0; i < nregs; i++)
        if (regs[i].dev && p >= (uintptr_t)regs[i].dev && p < (uintptr_t)regs[i].dev + regs[i].len) return &regs[i];
    return NULL;
}

/* cuInit starts threads of the driver's own, as the real one does: they
 * leave every signal unblocked (a process-directed signal that another
 * thread waits for with a signalfd may land here and be dropped: mpiexec
 * lost its SIGCHLD so on a GPU machine), and they stay (the library is not
 * to be unloaded under them: accel/cuda never dlcloses it). */
static void *driver_thread(void *a)
{
    (void)a;
    for (;;) pause();
    return NULL;
}
static void driver_threads(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, driver_thread, NULL) == 0) pthread_detach(t);
}
int cuInit(unsigned f)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    (void)f;
    pthread_once(&once, driver_threads);
    return 0;
}
int cuDeviceGetCount(int *n) { *n = getenv("FAKECUDA_NODEV") ? 0 : 1; return 0; }
int cuDeviceGet(int *d, int i) { *d = i; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = (void *)0x1; return 0; }
int cuCtxGetCurrent(void **c) { *c = cur; return 0; }
/* the context's scheduling flags (tests/gpu/cpu/cuda_runtime.h's GPUCPU_SPIN reads them) */
static unsigned ctx_flags;
int cuCtxGetFlags(unsigned *f) { *f = __atomic_load_n(&ctx_flags, __ATOMIC_RELAXED); return 0; }
int cuCtxSetFlags(unsigned f) { __atomic_store_n(&ctx_flags, f, __ATOMIC_RELAXED); return 0; }
int cuCtxSetCurrent(void *c) { cur = c; return 0; }
int cuPointerGetAttribute(void *out, int attr, unsigned long long p)
{
    pthread_mutex_lock(&mu);
    int dev = find((uintptr_t)p) != NULL, host = 0;
    for (int i = 0; i < npinned; i++) host |= pinned[i] == (void *)(uintptr_t)p;
    pthread_mutex_unlock(&mu);
    if (!dev && !host) return 1;                  /* CUDA_ERROR_INVALID_VALUE: unknown to the driver */
    if (attr == 2) *(unsigned *)out = dev ? 2 : 1; /* MEMORY_TYPE: DEVICE or HOST */
    else if (attr == 8) *(unsigned *)out = 0;      /* IS_MANAGED */
    else return 1;
    return 0;
}
static char *rw_of(unsigned long long p, size_t n)
{
    pthread_mutex_lock(&mu);
    struct region *r = find((uintptr_t)p);
    pthread_mutex_unlock(&mu);
    if (!r || (uintptr_t)p + n > (uintptr_t)r->dev + r->len) return NULL;
    return r->rw + ((uintptr_t)p - (uintptr_t)r->dev);
}
/* while a test has switched it on (through dlsym), every copy from the
 * device to the host fails (error paths; gpu_coll_pipe) */
static volatile int fail_dtoh;
void fakecuda_fail_dtoh(int on) { fail_dtoh = on; }

int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n)
{
    kwait("cuMemcpyDtoH");
    char *s = rw_of(src, n);
    if (!s || fail_dtoh) return 1;
    memcpy(dst, s, n);
    count(&b_dtoh, n);
    return 0;
}
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n)
{
    kwait("cuMemcpyHtoD");
    char *d = rw_of(dst, n);
    if (!d) return 1;
    memcpy(d, src, n);
    count(&b_htod, n);
    return 0;
}
int cuMemsetD8_v2(unsigned long long dst, unsigned char v, size_t n)
{
    kwait("cuMemsetD8");
    char *d = rw_of(dst, n);
    if (!d) return 1;
    memset(d, v, n);
    return 0;
}
int cuMemAlloc_v2(unsigned long long *out, size_t n)
{
    kalloc();
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (n + pg - 1) / pg * pg;
    if (!len) len = pg;
    int fd = memfd_create("fakecuda", 0);
    if (fd < 0 || ftruncate(fd, (off_t)len)) return 2;
    char *dev = mmap(NULL, len, getenv("FAKECUDA_DEVRW") ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_SHARED, fd, 0);
    char *rw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (dev == MAP_FAILED || rw == MAP_FAILED) { close(fd); return 2; }
    pthread_mutex_lock(&mu);
    int i = 0;
    while (i < nregs && regs[i].dev) i++;
    if (i == 256) { pthread_mutex_unlock(&mu); return 2; }
    regs[i] = (struct region){ dev, rw, len, fd, 0, ++gens };   /* fd kept: IPC handles name it */
    if (i == nregs) nregs++;
    pthread_mutex_unlock(&mu);
    *out = (unsigned long long)(uintptr_t)dev;
    return 0;
}
int cuMemFree_v2(unsigned long long p)
{
    kwait("cuMemFree");
    pthread_mutex_lock(&mu);
    struct region *r = find((uintptr_t)p);
    if (r && r->opened) r = NULL;                 /* opened from another process: cuIpcCloseMemHandle */
    if (r) { munmap(r->dev, r->len); munmap(r->rw, r->len); if (r->fd >= 0) close(r->fd); r->dev = NULL; }
    pthread_mutex_unlock(&mu);
    return r ? 0 : 1;
}

/* IPC: a handle names the owner's process and descriptor of the memfd behind
 * an allocation (opened again through /proc); FAKECUDA_NOIPC=1: opening fails. */
struct fipc { unsigned magic; int pid, fd; size_t len; unsigned long gen; };
struct fhandle { char b[64]; };                   /* CUipcMemHandle, passed by value */
int cuMemGetAddressRange_v2(unsigned long long *base, size_t *len, unsigned long long p)
{
    pthread_mutex_lock(&mu);
    struct region *r = find((uintptr_t)p);
    if (r) { *base = (uintptr_t)r->dev; *len = r->len; }
    pthread_mutex_unlock(&mu);
    return r ? 0 : 1;
}
int cuIpcGetMemHandle(void *h, unsigned long long p)
{
    pthread_mutex_lock(&mu);
    struct region *r = find((uintptr_t)p);
    int ok = r && (uintptr_t)p == (uintptr_t)r->dev && !r->opened;
    struct fipc f;
    memset(&f, 0, sizeof f);                      /* the padding too: handles are compared whole */
    if (ok) { f.magic = 0x46495043u; f.pid = getpid(); f.fd = r->fd; f.len = r->len; f.gen = r->gen; }
    pthread_mutex_unlock(&mu);
    if (!ok) return 1;
    memset(h, 0, 64);
    memcpy(h, &f, sizeof f);
    return 0;
}
int cuIpcOpenMemHandle_v2(unsigned long long *out, struct fhandle h, unsigned flags)
{
    (void)flags;
    struct fipc f;
    char path[64];
    memcpy(&f, h.b, sizeof f);
    if (getenv("FAKECUDA_NOIPC") || f.magic != 0x46495043u) return 1;
    snprintf(path, sizeof path, "/proc/%d/fd/%d", f.pid, f.fd);
    int fd = open(path, O_RDWR);
    if (fd < 0) return 1;
    char *dev = mmap(NULL, f.len, getenv("FAKECUDA_DEVRW") ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_SHARED, fd, 0);
    char *rw = mmap(NULL, f.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (dev == MAP_FAILED || rw == MAP_FAILED) return 2;
    pthread_mutex_lock(&mu);
    int i = 0;
    while (i < nregs && regs[i].dev) i++;
    if (i == 256) { pthread_mutex_unlock(&mu); return 2; }
    regs[i] = (struct region){ dev, rw, f.len, -1, 1, 0 };
    if (i == nregs) nregs++;
    n_ipc_open++;
    pthread_mutex_unlock(&mu);
    *out = (uintptr_t)dev;
    return 0;
}
int cuIpcCloseMemHandle(unsigned long long p)
{
    kwait("cuIpcCloseMemHandle");
    pthread_mutex_lock(&mu);
    struct region *r = find((uintptr_t)p);
    if (r && r->opened) { munmap(r->dev, r->len); munmap(r->rw, r->len); r->dev = NULL; }
    pthread_mutex_unlock(&mu);
    return r ? 0 : 1;
}
int cuCtxSynchronize(void) { kwait("cuCtxSynchronize"); return 0; }
int cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src, size_t n)
{
    kwait("cuMemcpyDtoD");
    char *d = rw_of(dst, n), *s = rw_of(src, n);
    if (!d || !s) return 1;
    memmove(d, s, n);
    count(&b_dtod, n);
    return 0;
}
int cuMemHostAlloc(void **p, size_t n, unsigned flags)
{
    kalloc();
    (void)flags;
    if (!(*p = malloc(n ? n : 1))) return 2;
    pthread_mutex_lock(&mu);
    if (npinned < 256) pinned[npinned++] = *p;
    pthread_mutex_unlock(&mu);
    return 0;
}
int cuMemHostGetDevicePointer_v2(unsigned long long *d, void *h, unsigned f) { (void)f; *d = (uintptr_t)h; return 0; }
int cuMemFreeHost(void *p)
{
    kwait("cuMemFreeHost");
    pthread_mutex_lock(&mu);
    for (int i = 0; i < npinned; i++)
        if (pinned[i] == p) pinned[i] = pinned[--npinned];
    pthread_mutex_unlock(&mu);
    free(p);
    return 0;
}

/* Streams and events: an asynchronous copy is queued on its stream and done
 * later, so a caller that uses the bytes before its event says done reads
 * stale memory.  Work runs in order: one queued copy per cuEventQuery that
 * answers "not ready" (CUDA_ERROR_NOT_READY, 600), everything up to the
 * event at cuEventSynchronize, everything at cuStreamSynchronize (copies
 * done so count as synchronous ones: not in fakecuda_stats' [4]).
 * FAKECUDA_ASYNC_COUNT=path: at exit, "<async copies> <waits and queries
 * that found their event not done yet>" is appended to path (tests check
 * that the pipeline was used and waited for its copies). */
struct fop { char *dst; const char *src; size_t n; struct fop *next; int val; };   /* src NULL: memset to val */
struct fstream { struct fop *head, *tail; unsigned long long queued, done; };
struct fevent { struct fstream *s; unsigned long long upto; };
static unsigned long long n_notready, n_queued;
/* asynchronous copies queued and not done yet (tests call it through dlsym) */
unsigned long long fakecuda_pending(void)
{
    pthread_mutex_lock(&mu);
    unsigned long long n = n_queued;
    pthread_mutex_unlock(&mu);
    return n;
}

static void count_at_exit(void)
{
    const char *p = getenv("FAKECUDA_ASYNC_COUNT");
    if (!p) return;
    FILE *f = fopen(p, "a");
    if (f) { fprintf(f, "%llu %llu\n", n_async, n_notready); fclose(f); }
}
__attribute__((constructor)) static void fake_init(void) { atexit(count_at_exit); }

static void run_one(struct fstream *s, int by_event)
{
    struct fop *o = s->head;
    if (!o) return;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    if (o->src) memmove(o->dst, o->src, o->n);
    else memset(o->dst, o->val, o->n);
    s->done++;
    if (by_event) n_async++;
    n_queued--;
    free(o);
}

int cuStreamCreate(void **s, unsigned flags)
{
    (void)flags;
    if (getenv("FAKECUDA_NOSTREAM")) return 2;    /* no asynchronous copies: Kumi copies synchronously */
    return (*s = calloc(1, sizeof(struct fstream))) ? 0 : 2;
}
int cuStreamSynchronize(void *sp)
{
    struct fstream *s = sp;
    pthread_mutex_lock(&mu);
    while (s->head) run_one(s, 0);
    pthread_mutex_unlock(&mu);
    return 0;
}
/* one queued copy per query, as cuEventQuery: 600 (not ready) while any was left */
int cuStreamQuery(void *sp)
{
    struct fstream *s = sp;
    int r = 0;
    pthread_mutex_lock(&mu);
    if (s->head) {
        run_one(s, 1);
        n_notready++;
        r = 600;
    }
    pthread_mutex_unlock(&mu);
    return r;
}
int cuStreamDestroy_v2(void *s)
{
    cuStreamSynchronize(s);
    free(s);
    return 0;
}
static int enqueue(struct fstream *s, char *dst, const char *src, size_t n, int val)
{
    struct fop *o = malloc(sizeof *o);
    if (!o || !s) { free(o); return 1; }
    *o = (struct fop){ dst, src, n, NULL, val };
    pthread_mutex_lock(&mu);
    if (s->tail) s->tail->next = o; else s->head = o;
    s->tail = o;
    s->queued++;
    n_queued++;
    pthread_mutex_unlock(&mu);
    return 0;
}
int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t n, void *s)
{
    char *p = rw_of(src, n);
    if (!p || fail_dtoh || enqueue(s, dst, p, n, 0)) return 1;
    count(&b_dtoh, n);
    return 0;
}
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t n, void *s)
{
    char *p = rw_of(dst, n);
    if (!p || enqueue(s, p, src, n, 0)) return 1;
    count(&b_htod, n);
    return 0;
}
int cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, size_t n, void *s)
{
    char *d = rw_of(dst, n), *p = rw_of(src, n);
    if (!d || !p || enqueue(s, d, p, n, 0)) return 1;
    count(&b_dtod, n);
    return 0;
}
int cuMemsetD8Async(unsigned long long dst, unsigned char v, size_t n, void *s)
{
    char *d = rw_of(dst, n);
    return !d || enqueue(s, d, NULL, n, v) ? 1 : 0;
}
int cuEventCreate(void **e, unsigned flags)
{
    (void)flags;
    return (*e = calloc(1, sizeof(struct fevent))) ? 0 : 2;
}
int cuEventDestroy_v2(void *e) { free(e); return 0; }
int cuEventRecord(void *ep, void *sp)
{
    struct fevent *e = ep;
    pthread_mutex_lock(&mu);
    e->s = sp;
    e->upto = e->s ? e->s->queued : 0;
    pthread_mutex_unlock(&mu);
    return 0;
}
int cuEventQuery(void *ep)
{
    struct fevent *e = ep;
    int r = 0;
    pthread_mutex_lock(&mu);
    if (e->s && e->s->done < e->upto) {
        run_one(e->s, 1);
        n_notready++;
        r = 600;
    }
    pthread_mutex_unlock(&mu);
    return r;
}
int cuEventSynchronize(void *ep)
{
    struct fevent *e = ep;
    pthread_mutex_lock(&mu);
    if (e->s && e->s->done < e->upto) n_notready++;
    while (e->s && e->s->done < e->upto) run_one(e->s, 1);
    pthread_mutex_unlock(&mu);
    return 0;
}
