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
 *   host_alloc_mapped(n, &h, &d)  pinned host memory the device can address:
 *                                 h for the host, d for the device; 0 or -1
 *   host_alloc(n, &h)             pinned (page-locked) host memory, staging buffers
 *   host_free(h)                  frees either of those
 *   dev_alloc(n, &d)              device memory, zeroed; 0 or -1
 *   dev_free(d)
 *   finalize()                    at MPI_Finalize
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
#define KUMI_ACCEL_CONTRACT_MINOR 0
#define KUMI_ACCEL_OPS_HDR \
    KUMI_OPS_HDR(struct kumi_accel_ops, KUMI_ACCEL_CONTRACT_MAJOR, KUMI_ACCEL_CONTRACT_MINOR)
#define KUMI_ACCEL_OPS_MIN_SIZE sizeof(struct kumi_accel_ops)

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
};

#ifdef __cplusplus
}
#endif
#endif
