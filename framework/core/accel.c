/* The accel framework's glue (kumi/accel.h): the accel component of highest
 * priority whose init() succeeds, chosen at first use; MPIX_Query_cuda_support.
 * Without one, kumi_accel() is NULL and nothing else is called. */
#include "core/core.h"
#include "registry/registry.h"
#include <kumi/accel.h>
#include <string.h>

static const struct kumi_accel_ops *aops;
static const char *aname;
static int chosen;            /* 0: not yet; 1: chosen (aops may be NULL) */

const struct kumi_accel_ops *kumi_accel(void)
{
    if (__atomic_load_n(&chosen, __ATOMIC_ACQUIRE)) return aops;
    if (kumi_state != KUMI_STATE_INIT) return NULL;
    kumi_lock();
    if (!chosen) {
        int n = 0;
        struct kumi_comp_entry **av = kumi_registry_available("accel", &n);
        for (int i = 0; av && i < n; i++) {
            const struct kumi_accel_ops *ops = av[i]->comp ? av[i]->comp->ops : NULL;
            if (!ops) continue;
            if (ops->init && ops->init() != MPI_SUCCESS) {
                kumi_log(1, "accel: %s: not used in this process", av[i]->name);
                continue;
            }
            av[i]->status = KUMI_COMP_SELECTED;
            aops = ops;
            aname = av[i]->name;
            kumi_log(1, "accel/%s selected", aname);
            break;
        }
        __atomic_store_n(&chosen, 1, __ATOMIC_RELEASE);
    }
    kumi_unlock();
    return aops;
}

const char *kumi_accel_name(void)
{
    return kumi_accel() ? aname : NULL;
}

void kumi_accel_finalize(void)
{
    if (aops && aops->finalize) aops->finalize();
    aops = NULL;
    aname = NULL;
    __atomic_store_n(&chosen, 0, __ATOMIC_RELEASE);
}

/* As in Open MPI and MPICH: 1 when device buffers are supported at run time,
 * i.e. the cuda accel component is usable in this process; else 0. */
KUMI_EXPORT int MPIX_Query_cuda_support(void)
{
    const char *n = kumi_accel_name();
    return n && !strcmp(n, "cuda");
}
