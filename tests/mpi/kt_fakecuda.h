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
 * which of a test's messages).
 * kt_stats(out): what the stand-in's driver did in this process
 * (fakecuda_stats: bytes device to host, host to device, device to device,
 * IPC handles opened, asynchronous copies).  kt_pvar(name): an MPI_T counter
 * of Kumi's, started; kt_pvar_read(h): its value. */
#ifndef KT_FAKECUDA_H
#define KT_FAKECUDA_H
#include "kt.h"
#include <dlfcn.h>
#include <stdint.h>

static int (*cuMemAlloc)(unsigned long long *, size_t);
static int (*cuMemFree)(unsigned long long);
static int (*cuHtoD)(unsigned long long, const void *, size_t);
static int (*cuDtoH)(void *, unsigned long long, size_t);
static void (*fakecuda_stats)(unsigned long long *);

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
    *(void **)&fakecuda_stats = dlsym(h, "fakecuda_stats");
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

enum { KT_DTOH, KT_HTOD, KT_DTOD, KT_IPC_OPEN, KT_ASYNC, KT_NSTATS };
static inline void kt_stats(unsigned long long out[KT_NSTATS])
{
    KT_CHECK(fakecuda_stats, "the driver has no fakecuda_stats: not the stand-in?");
    fakecuda_stats(out);
}

static MPI_T_pvar_session kt_ses = MPI_T_PVAR_SESSION_NULL;
static inline MPI_T_pvar_handle kt_pvar(const char *name)
{
    int provided, idx, cnt;
    MPI_T_pvar_handle h;
    if (kt_ses == MPI_T_PVAR_SESSION_NULL) {
        KT_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS);
        KT_CHECK(MPI_T_pvar_session_create(&kt_ses) == MPI_SUCCESS);
    }
    KT_CHECK(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx) == MPI_SUCCESS, "no MPI_T counter %s", name);
    KT_CHECK(MPI_T_pvar_handle_alloc(kt_ses, idx, NULL, &h, &cnt) == MPI_SUCCESS && cnt == 1);
    KT_CHECK(MPI_T_pvar_start(kt_ses, h) == MPI_SUCCESS);
    return h;
}
static inline unsigned long long kt_pvar_read(MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    KT_CHECK(MPI_T_pvar_read(kt_ses, h, &v) == MPI_SUCCESS);
    return v;
}

static inline unsigned char kt_pat(int r, size_t i, size_t n, int way)
{
    return (unsigned char)(r * 37 + i * 13 + (i >> 12) + n + way);
}
#endif
