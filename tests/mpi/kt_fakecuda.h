/* kt_fakecuda.h: the driver calls of the programs that run with the
 * stand-in CUDA driver (tests/scripts/lib/fakecuda.c; gpu_staging,
 * gpu_coll_staging, gpu_rma_staging, gpu_ckpt_win, gpu_pipeline,
 * gpu_overlap), and a byte pattern.
 *
 * kt_cuda_load(): opens $KUMI_ACCEL_CUDA_LIBRARY (the driver accel/cuda
 * uses), sets cuMemAlloc / cuMemFree / cuHtoD / cuDtoH and returns the
 * handle (for other symbols).  kt_dalloc(n): n bytes of device memory as a
 * pointer; kt_to_dev / kt_to_host: copies between host and device pointers.
 * kt_pat(r, i, n, way): byte i of a message of n bytes from rank r (way:
 * which of a test's messages). */
#ifndef KT_FAKECUDA_H
#define KT_FAKECUDA_H
#include "kt.h"
#include <dlfcn.h>
#include <stdint.h>

static int (*cuMemAlloc)(unsigned long long *, size_t);
static int (*cuMemFree)(unsigned long long);
static int (*cuHtoD)(unsigned long long, const void *, size_t);
static int (*cuDtoH)(void *, unsigned long long, size_t);

static void *kt_cuda_load(void)
{
    const char *lib = getenv("KUMI_ACCEL_CUDA_LIBRARY");
    KT_CHECK(lib, "KUMI_ACCEL_CUDA_LIBRARY is not set");
    void *h = dlopen(lib, RTLD_NOW);
    KT_CHECK(h, "dlopen %s: %s", lib, dlerror());
    *(void **)&cuMemAlloc = dlsym(h, "cuMemAlloc_v2");
    *(void **)&cuMemFree = dlsym(h, "cuMemFree_v2");
    *(void **)&cuHtoD = dlsym(h, "cuMemcpyHtoD_v2");
    *(void **)&cuDtoH = dlsym(h, "cuMemcpyDtoH_v2");
    KT_CHECK(cuMemAlloc && cuMemFree && cuHtoD && cuDtoH);
    return h;
}

static inline void *kt_dalloc(size_t n)
{
    unsigned long long d;
    KT_CHECK(cuMemAlloc(&d, n) == 0, "cuMemAlloc(%zu)", n);
    return (void *)(uintptr_t)d;
}
static inline void kt_to_dev(void *d, const void *h, size_t n) { KT_CHECK(cuHtoD((uintptr_t)d, h, n) == 0); }
static inline void kt_to_host(void *h, const void *d, size_t n) { KT_CHECK(cuDtoH(h, (uintptr_t)d, n) == 0); }

static inline unsigned char kt_pat(int r, size_t i, size_t n, int way)
{
    return (unsigned char)(r * 37 + i * 13 + (i >> 12) + n + way);
}
#endif
