/* kt_fakecuda.h: the driver calls of the staging programs that run with
 * the stand-in CUDA driver (tests/scripts/lib/fakecuda.c; gpu_pipeline,
 * gpu_overlap), and their byte pattern.
 *
 * kt_cuda_load(): opens $KUMI_ACCEL_CUDA_LIBRARY (the driver accel/cuda
 * uses), sets cuMemAlloc / cuMemFree / cuHtoD / cuDtoH and returns the
 * handle (for other symbols).  kt_pat(r, i, n, way): byte i of a message
 * of n bytes from rank r (way: which of a test's messages). */
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
    void *h = dlopen(getenv("KUMI_ACCEL_CUDA_LIBRARY"), RTLD_NOW);
    KT_CHECK(h, "dlopen: %s", dlerror());
    *(void **)&cuMemAlloc = dlsym(h, "cuMemAlloc_v2");
    *(void **)&cuMemFree = dlsym(h, "cuMemFree_v2");
    *(void **)&cuHtoD = dlsym(h, "cuMemcpyHtoD_v2");
    *(void **)&cuDtoH = dlsym(h, "cuMemcpyDtoH_v2");
    KT_CHECK(cuMemAlloc && cuMemFree && cuHtoD && cuDtoH);
    return h;
}

static inline unsigned char kt_pat(int r, size_t i, size_t n, int way)
{
    return (unsigned char)(r * 37 + i * 13 + (i >> 12) + n + way);
}
#endif
