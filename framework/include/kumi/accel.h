/* accel: accelerator memory (GPUs).  The library asks the available accel
 * component of highest priority (at most one is used) about buffers and
 * memory it needs; a process without a usable component pays nothing (the
 * glue answers "host memory" without calling anything).
 *
 *   init()                        at first use (after MPI_Init); MPI_SUCCESS or
 *                                 anything else: not used (reason logged)
 *   mem_kind(ptr)                 KUMI_ACCEL_MEM_HOST (unknown to the driver,
 *                                 or host memory), _DEVICE, _MANAGED or _HOST_PINNED
 *   copy_to_host(dst, src, n)     device -> host (synchronous); 0 or -1
 *   copy_to_dev(dst, src, n)      host -> device (synchronous); 0 or -1
 *                                 Synchronous for the caller, but never waiting
 *                                 for the application's device work (a kernel
 *                                 that runs meanwhile, e.g. a persistent one whose
 *                                 requests a proxy serves with these copies)
 *   host_alloc_mapped(n, &h, &d)  pinned host memory the device can address:
 *                                 h for the host, d for the device; 0 or -1
 *   host_alloc(n, &h)             pinned (page-locked) host memory, staging buffers
 *   host_free(h)                  frees either of those
 *   dev_alloc(n, &d)              device memory, zeroed; 0 or -1
 *   dev_free(d)
 *   finalize()                    at MPI_Finalize
 * Optional (contract 1.1; NULL: the glue copies synchronously):
 *   stream_new(&s), stream_free(s) a queue of asynchronous work of Kumi's own
 *                                 (does not wait for the application's work)
 *   copy_to_host_async(dst, src, n, s)  device -> host, queued on s (dst is
 *                                 pinned memory from host_alloc); 0 or -1
 *   copy_to_dev_async(dst, src, n, s)   host (pinned) -> device, queued on s
 *   event_new(&e), event_free(e)
 *   event_record(e, s)            e is done once the work queued on s before
 *                                 this call is; 0 or -1
 *   event_query(e)                1 done, 0 not yet, -1 error (never blocks)
 *   event_sync(e)                 waits until e is done; 0 or -1
 * Optional (contract 1.2; NULL: device buffers of peers on one host are
 * staged like any other):
 *   ipc_handle(dev, h, &off)      h (KUMI_ACCEL_IPC_SIZE bytes): a handle another
 *                                 process of this host can open for the
 *                                 allocation holding dev; off: dev's offset in it
 *   ipc_open(h, &base)            maps that allocation here: base; 0 or -1
 *   ipc_close(base)
 *   copy_dtod(dst, src, n)        device -> device (synchronous, as the others); 0 or -1
 * Optional (contract 1.3; NULL: frees are done at once):
 *   hold_frees(on)                on (1) / off (0), nested: while held, host_free,
 *                                 dev_free and ipc_close keep what they are given
 *                                 and free / unmap it at the last off (a driver's
 *                                 free may wait for every kernel of the device, and
 *                                 a persistent kernel waits for the proxy that
 *                                 would free)
 * Optional (contract 1.4; NULL: the application's waits stay as they are):
 *   wait_blocking(on)             on (1) / off (0), nested, from a thread of
 *                                 the application: its device's host threads
 *                                 that wait for device work sleep until it is
 *                                 done instead of spinning (CUDA: the context's
 *                                 CU_CTX_SCHED_BLOCKING_SYNC); the last off puts
 *                                 back what was there.  0, or -1 (not possible)
 */
#ifndef KUMI_ACCEL_H
#define KUMI_ACCEL_H

#include <kumi/kumi.h>
#include <kumi/component.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KUMI_ACCEL_CONTRACT_MAJOR 1
#define KUMI_ACCEL_CONTRACT_MINOR 4
#define KUMI_ACCEL_IPC_SIZE 64
#define KUMI_ACCEL_OPS_HDR \
    KUMI_OPS_HDR(struct kumi_accel_ops, KUMI_ACCEL_CONTRACT_MAJOR, KUMI_ACCEL_CONTRACT_MINOR)
#define KUMI_ACCEL_OPS_MIN_SIZE offsetof(struct kumi_accel_ops, stream_new)   /* 1.0's table */

enum kumi_accel_mem { KUMI_ACCEL_MEM_HOST = 0, KUMI_ACCEL_MEM_DEVICE, KUMI_ACCEL_MEM_MANAGED,
                      KUMI_ACCEL_MEM_HOST_PINNED };

struct kumi_accel_ops {
    struct kumi_ops_hdr hdr;  /* KUMI_ACCEL_OPS_HDR */
    int (*init)(void);
    int (*mem_kind)(const void *ptr);
    int (*copy_to_host)(void *dst, const void *src, size_t n);
    int (*copy_to_dev)(void *dst, const void *src, size_t n);
    int (*host_alloc_mapped)(size_t n, void **host, void **dev);
    int (*host_alloc)(size_t n, void **host);
    void (*host_free)(void *host);
    int (*dev_alloc)(size_t n, void **dev);
    void (*dev_free)(void *dev);
    void (*finalize)(void);
    /* 1.1: asynchronous copies (optional) */
    int (*stream_new)(void **stream);
    void (*stream_free)(void *stream);
    int (*copy_to_host_async)(void *dst, const void *src, size_t n, void *stream);
    int (*copy_to_dev_async)(void *dst, const void *src, size_t n, void *stream);
    int (*event_new)(void **event);
    void (*event_free)(void *event);
    int (*event_record)(void *event, void *stream);
    int (*event_query)(void *event);
    int (*event_sync)(void *event);
    /* 1.2: one device-to-device copy between processes of one host (optional) */
    int (*ipc_handle)(const void *dev, void *handle, size_t *off);
    int (*ipc_open)(const void *handle, void **base);
    void (*ipc_close)(void *base);
    int (*copy_dtod)(void *dst, const void *src, size_t n);
    /* contract 1.3 */
    void (*hold_frees)(int on);
    /* contract 1.4 */
    int (*wait_blocking)(int on);
};

#ifdef __cplusplus
}
#endif
#endif
