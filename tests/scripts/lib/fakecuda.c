/* A stand-in for libcuda.so.1 (tests/scripts/gpu_fakecuda.sh): the CUDA
 * driver calls accel/cuda uses, with "device memory" that the host cannot
 * touch: cuMemAlloc maps a memfd twice, once PROT_NONE (the device address
 * handed out: a load or store through it is a segmentation fault) and once
 * read-write (what cuMemcpy* use).  So an MPI call that reads or writes a
 * device buffer without staging it crashes, and one that stages it works.
 * FAKECUDA_NODEV=1: cuDeviceGetCount says 0 devices.  FAKECUDA_DEVRW=1: the
 * device address is readable and writable too (the CPU device of gpu_cpu
 * then plays the GPU on memory from the component). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct region { char *dev, *rw; size_t len; };
static struct region regs[256];
static int nregs;
static void *pinned[256];
static int npinned;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static __thread void *cur;

static struct region *find(uintptr_t p)
{
    for (int i = 0; i < nregs; i++)
        if (regs[i].dev && p >= (uintptr_t)regs[i].dev && p < (uintptr_t)regs[i].dev + regs[i].len) return &regs[i];
    return NULL;
}

int cuInit(unsigned f) { (void)f; return 0; }
int cuDeviceGetCount(int *n) { *n = getenv("FAKECUDA_NODEV") ? 0 : 1; return 0; }
int cuDeviceGet(int *d, int i) { *d = i; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = (void *)0x1; return 0; }
int cuCtxGetCurrent(void **c) { *c = cur; return 0; }
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
int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n)
{
    char *s = rw_of(src, n);
    if (!s) return 1;
    memcpy(dst, s, n);
    return 0;
}
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n)
{
    char *d = rw_of(dst, n);
    if (!d) return 1;
    memcpy(d, src, n);
    return 0;
}
int cuMemsetD8_v2(unsigned long long dst, unsigned char v, size_t n)
{
    char *d = rw_of(dst, n);
    if (!d) return 1;
    memset(d, v, n);
    return 0;
}
int cuMemAlloc_v2(unsigned long long *out, size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (n + pg - 1) / pg * pg;
    if (!len) len = pg;
    int fd = memfd_create("fakecuda", 0);
    if (fd < 0 || ftruncate(fd, (off_t)len)) return 2;
    char *dev = mmap(NULL, len, getenv("FAKECUDA_DEVRW") ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_SHARED, fd, 0);
    char *rw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (dev == MAP_FAILED || rw == MAP_FAILED) return 2;
    pthread_mutex_lock(&mu);
    int i = 0;
    while (i < nregs && regs[i].dev) i++;
    if (i == 256) { pthread_mutex_unlock(&mu); return 2; }
    regs[i] = (struct region){ dev, rw, len };
    if (i == nregs) nregs++;
    pthread_mutex_unlock(&mu);
    *out = (unsigned long long)(uintptr_t)dev;
    return 0;
}
int cuMemFree_v2(unsigned long long p)
{
    pthread_mutex_lock(&mu);
    struct region *r = find((uintptr_t)p);
    if (r) { munmap(r->dev, r->len); munmap(r->rw, r->len); r->dev = NULL; }
    pthread_mutex_unlock(&mu);
    return r ? 0 : 1;
}
int cuMemHostAlloc(void **p, size_t n, unsigned flags)
{
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
    pthread_mutex_lock(&mu);
    for (int i = 0; i < npinned; i++)
        if (pinned[i] == p) pinned[i] = pinned[--npinned];
    pthread_mutex_unlock(&mu);
    free(p);
    return 0;
}
