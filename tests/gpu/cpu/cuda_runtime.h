/* The part of the CUDA runtime the GPU test set (the .cu files of tests/gpu) uses, for
 * running those programs on the CPU (tests/scripts/gpu_testset_cpu.sh):
 * compiled as host C++ with kumi_gpu_cpu.h included first and this folder
 * ahead of CUDA's headers.  Memory comes from the stand-in driver
 * (tests/scripts/lib/fakecuda.c, opened at $KUMI_ACCEL_CUDA_LIBRARY, the
 * driver Kumi's accel/cuda uses), whose device memory the threads standing in
 * for the kernel's reach with FAKECUDA_DEVRW=1; copies go through it too.
 * Launches run at once (the script rewrites K<<<g, b>>>(a) and
 * cudaLaunchCooperativeKernel into the launches below): one host thread per
 * CUDA thread, the block's threads capped at $GPUCPU_BLOCK (default 4; the
 * kernels of the test set stride by blockDim), so the synchronizations are
 * no-ops.  While a launch runs, the stand-in counts the driver calls that
 * would wait for a running kernel on a GPU (fakecuda_kernel: legacy-stream
 * work, device-wide synchronizations, frees): one made meanwhile (by the
 * MPIX_Gpu proxy serving the kernel) aborts the program, naming it.  One
 * device, 2 multiprocessors, one block each. */
#ifndef KUMI_TEST_CUDA_RUNTIME_CPU_H
#define KUMI_TEST_CUDA_RUNTIME_CPU_H
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <utility>

typedef enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2, cudaErrorInvalidValue = 1 } cudaError_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
#define cudaHostAllocPortable 1
#define cudaHostAllocMapped 2
typedef void *cudaStream_t;

static inline const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : e == cudaErrorMemoryAllocation ? "out of memory" : "invalid argument";
}

struct kumi_cpu_cu_ {
    int (*alloc)(unsigned long long *, size_t);
    int (*free_)(unsigned long long);
    int (*htod)(unsigned long long, const void *, size_t);
    int (*dtoh)(void *, unsigned long long, size_t);
    int (*dtod)(unsigned long long, unsigned long long, size_t);
    int (*memset8)(unsigned long long, unsigned char, size_t);
    int (*host_alloc)(void **, size_t, unsigned);
    int (*host_free)(void *);
    unsigned long long (*kernel)(int);
    int (*get_flags)(unsigned *);   /* cuCtxGetFlags (optional) */
};
static inline kumi_cpu_cu_ &kumi_cpu_cu(void)
{
    static kumi_cpu_cu_ c;
    static bool done;
    if (!done) {
        const char *lib = getenv("KUMI_ACCEL_CUDA_LIBRARY");
        void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
        if (!h) { fprintf(stderr, "cuda_runtime (CPU): no stand-in driver at KUMI_ACCEL_CUDA_LIBRARY\n"); abort(); }
        *(void **)&c.alloc = dlsym(h, "cuMemAlloc_v2");
        *(void **)&c.free_ = dlsym(h, "cuMemFree_v2");
        *(void **)&c.htod = dlsym(h, "cuMemcpyHtoD_v2");
        *(void **)&c.dtoh = dlsym(h, "cuMemcpyDtoH_v2");
        *(void **)&c.dtod = dlsym(h, "cuMemcpyDtoD_v2");
        *(void **)&c.memset8 = dlsym(h, "cuMemsetD8_v2");
        *(void **)&c.host_alloc = dlsym(h, "cuMemHostAlloc");
        *(void **)&c.host_free = dlsym(h, "cuMemFreeHost");
        *(void **)&c.kernel = dlsym(h, "fakecuda_kernel");
        *(void **)&c.get_flags = dlsym(h, "cuCtxGetFlags");
        if (!c.alloc || !c.free_ || !c.htod || !c.dtoh || !c.dtod || !c.memset8 || !c.host_alloc || !c.host_free ||
            !c.kernel) {
            fprintf(stderr, "cuda_runtime (CPU): the driver at %s lacks a call\n", lib);
            abort();
        }
        done = true;
    }
    return c;
}
#define KUMI_CPU_P_(p) ((unsigned long long)(uintptr_t)(p))

static inline cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
static inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidValue; }
static inline cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }
static inline cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
static inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
static inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int)
{
    *v = a == cudaDevAttrMultiProcessorCount ? 2 : 0;
    return cudaSuccess;
}
template <typename K> static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, K, int, size_t)
{
    *n = 1;
    return cudaSuccess;
}
template <typename T> static inline cudaError_t cudaMalloc(T **p, size_t n)
{
    unsigned long long d;
    if (kumi_cpu_cu().alloc(&d, n)) return cudaErrorMemoryAllocation;
    *p = (T *)(uintptr_t)d;
    return cudaSuccess;
}
static inline cudaError_t cudaFree(void *p)
{
    if (!p) return cudaSuccess;   /* cudaFree(0): makes the context */
    return kumi_cpu_cu().free_(KUMI_CPU_P_(p)) ? cudaErrorInvalidValue : cudaSuccess;
}
static inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind k)
{
    kumi_cpu_cu_ &c = kumi_cpu_cu();
    int r = k == cudaMemcpyHostToDevice   ? c.htod(KUMI_CPU_P_(dst), src, n)
            : k == cudaMemcpyDeviceToHost ? c.dtoh(dst, KUMI_CPU_P_(src), n)
            : k == cudaMemcpyDeviceToDevice ? c.dtod(KUMI_CPU_P_(dst), KUMI_CPU_P_(src), n)
                                            : 1;
    return r ? cudaErrorInvalidValue : cudaSuccess;
}
static inline cudaError_t cudaMemset(void *p, int v, size_t n)
{
    return kumi_cpu_cu().memset8(KUMI_CPU_P_(p), (unsigned char)v, n) ? cudaErrorInvalidValue : cudaSuccess;
}
static inline cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags)
{
    return kumi_cpu_cu().host_alloc(p, n, flags) ? cudaErrorMemoryAllocation : cudaSuccess;
}
static inline cudaError_t cudaFreeHost(void *p) { return kumi_cpu_cu().host_free(p) ? cudaErrorInvalidValue : cudaSuccess; }
static inline cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned)
{
    *d = h;   /* as the stand-in's cuMemHostGetDevicePointer */
    return cudaSuccess;
}

/* the launches (gpu_testset_cpu.sh rewrites the sources to call them) */
/* GPUCPU_SPIN=1: a launch leaves the CPUs as a GPU's does: the kernel's
 * threads run on every CPU (a GPU's kernel takes none of the rank's), and a
 * thread of the rank spins on the rank's CPUs until the kernel ends, as the
 * application's thread does in cudaDeviceSynchronize (CUDA's default where
 * CPUs outnumber contexts): what a helper thread left on the rank's core
 * (the MPIX_Gpu proxy) must share it with.  Unless the stand-in's context
 * flags say blocking synchronization (4): then that thread sleeps, as it
 * would on a GPU. */
struct kumi_cpu_spin_ {
    pthread_t thr;
    cpu_set_t mine;
    volatile int stop;
    bool on;
};
static inline kumi_cpu_spin_ &kumi_cpu_spin(void)
{
    static kumi_cpu_spin_ s;
    return s;
}
static inline void *kumi_cpu_spinner_(void *)
{
    while (!__atomic_load_n(&kumi_cpu_spin().stop, __ATOMIC_RELAXED)) {}
    return NULL;
}
static inline void kumi_cpu_spin_begin_(void)
{
    kumi_cpu_spin_ &s = kumi_cpu_spin();
    const char *e = getenv("GPUCPU_SPIN");
    unsigned flags = 0;
    if (kumi_cpu_cu().get_flags) kumi_cpu_cu().get_flags(&flags);
    s.on = e && atoi(e) > 0 && (flags & 7) != 4 && sched_getaffinity(0, sizeof s.mine, &s.mine) == 0;
    if (!s.on) return;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setaffinity_np(&at, sizeof s.mine, &s.mine);
    s.stop = 0;
    if (pthread_create(&s.thr, &at, kumi_cpu_spinner_, NULL)) s.on = false;
    pthread_attr_destroy(&at);
    cpu_set_t all;
    CPU_ZERO(&all);
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; c++) CPU_SET((int)c, &all);
    sched_setaffinity(0, sizeof all, &all);   /* the kernel's threads inherit it */
}
static inline void kumi_cpu_spin_end_(void)
{
    kumi_cpu_spin_ &s = kumi_cpu_spin();
    if (!s.on) return;
    __atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
    pthread_join(s.thr, NULL);
    sched_setaffinity(0, sizeof s.mine, &s.mine);
    s.on = false;
}
static inline unsigned long long kumi_cpu_kernel_begin(void)
{
    kumi_cpu_spin_begin_();
    return kumi_cpu_cu().kernel(1);
}
static inline void kumi_cpu_kernel_end(unsigned long long w0, const char *name)
{
    kumi_cpu_spin_end_();
    unsigned long long w = kumi_cpu_cu().kernel(0) - w0;
    if (w) {
        fprintf(stderr, "FAIL: %llu driver call(s) during kernel %s would have waited for it on a GPU (named above)\n",
                w, name);
        abort();
    }
}
#define KUMI_CPU_KERNEL(kern, grid, block, args) do { \
    unsigned long long kw_ = kumi_cpu_kernel_begin(); \
    KUMI_CPU_LAUNCH_THREADS(kern, grid, kumi_cpu_cap(block), args); \
    kumi_cpu_kernel_end(kw_, #kern); \
} while (0)
static inline dim3 kumi_cpu_cap(dim3 b)
{
    static unsigned cap;
    if (!cap) {
        const char *s = getenv("GPUCPU_BLOCK");
        cap = s && atoi(s) > 0 ? (unsigned)atoi(s) : 4;
    }
    if (b.x > cap) b.x = cap;
    return b;
}
template <typename... P, size_t... I>
static inline void kumi_cpu_coop_(void (*k)(P...), dim3 g, dim3 b, void **args, std::index_sequence<I...>)
{
    unsigned long long w0 = kumi_cpu_kernel_begin();
    KUMI_CPU_LAUNCH_THREADS(k, g, kumi_cpu_cap(b), (*(P *)args[I]...));
    kumi_cpu_kernel_end(w0, "(cooperative launch)");
}
template <typename... P>
static inline cudaError_t kumi_cpu_coop(void (*k)(P...), dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t)
{
    (void)shmem;
    kumi_cpu_coop_(k, g, b, args, std::index_sequence_for<P...>{});
    return cudaSuccess;
}
#endif
