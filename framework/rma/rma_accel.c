/* Device memory in windows (accel framework, kumi/accel.h): the RMA
 * separate memory model (MPI 4.1 sec. 12.4 and 12.7).
 *
 * A window whose memory is on the device (MPI_Win_create on device memory,
 * MPI_Win_attach of device memory) cannot be reached by the host's loads,
 * stores and process_vm_readv/writev, so its rank keeps a public copy in
 * host memory: every RMA operation (direct, transport or active message)
 * reads and writes that copy exactly as it does host window memory; the
 * device memory is the private copy, which the application's kernels and
 * the MPI calls that stage device buffers use.  MPI_WIN_MODEL is then
 * MPI_WIN_SEPARATE.
 *
 * The two are synchronised (kumi_rma_dev_sync, a merge in both directions)
 * at the calls where the separate model makes one visible in the other:
 * MPI_Win_fence (after the epoch's operations arrived, before the closing
 * barrier), MPI_Win_post, MPI_Win_wait / a successful MPI_Win_test,
 * MPI_Win_lock / lock_all once the window of the calling rank is locked,
 * MPI_Win_unlock / unlock_all of it before the lock is released,
 * MPI_Win_sync, and at MPI_Win_free and MPI_Win_detach (the memory leaves
 * the window).  The standard's "at the latest when" allows doing both
 * directions at each of them.
 *
 * A merge must not undo what the other side did since the last one: local
 * stores into the private copy and RMA updates of the public copy may both
 * have happened (to different locations: the same location in one epoch is
 * a conflicting access, erroneous).  So a third copy, shadow, holds what both
 * held after the last merge; a byte whose private value differs from shadow
 * was stored locally and goes public, one whose public value differs was
 * updated by RMA and goes private.  Cost per merge: one device-to-host copy
 * of the whole memory, a compare of three host copies (64-byte blocks where
 * nothing changed), one host-to-device copy of the span that RMA changed.
 * MPI_MODE_NOSTORE at a fence or post (no local stores since the last
 * synchronisation) saves the device-to-host copy. */
#include "rma/rma_impl.h"
#include <kumi/accel.h>

int kumi_rma_devmem_new(const char *fn, void *dev, size_t len, struct kumi_win_devmem **out)
{
    const struct kumi_accel_ops *a = kumi_accel();
    struct kumi_win_devmem *d = calloc(1, sizeof *d);
    *out = NULL;
    if (!d || !(d->pub = malloc(len ? len : 1)) || !(d->shadow = malloc(len ? len : 1)) ||
        !(d->priv = malloc(len ? len : 1))) {
        kumi_rma_devmem_free(d);
        return kumi_error(MPI_ERR_NO_MEM, "%s: no host memory for the public copy of %zu bytes of device memory",
                          fn, len);
    }
    d->dev = dev;
    d->len = len;
    if (len && (!a || kumi_accel_copy_in(d->pub, dev, len))) {
        kumi_rma_devmem_free(d);
        return kumi_error(MPI_ERR_OTHER, "%s: copying %zu bytes of window memory from the device failed", fn, len);
    }
    memcpy(d->shadow, d->pub, len);
    *out = d;
    return MPI_SUCCESS;
}

void kumi_rma_devmem_free(struct kumi_win_devmem *d)
{
    if (!d) return;
    free(d->pub);
    free(d->shadow);
    free(d->priv);
    free(d);
}

int kumi_rma_devmem_sync(struct kumi_win_devmem *d, const char *fn, bool nostore)
{
    const struct kumi_accel_ops *a = kumi_accel();
    size_t n = d->len, lo = n, hi = 0;
    if (!n) return MPI_SUCCESS;
    if (nostore) memcpy(d->priv, d->shadow, n);   /* MPI_MODE_NOSTORE: the private copy is as last merged */
    else if (!a || kumi_accel_copy_in(d->priv, d->dev, n))
        return kumi_error(MPI_ERR_OTHER, "%s: copying %zu bytes of window memory from the device failed", fn, n);
    uint8_t *priv = d->priv, *sh = d->shadow;
    volatile uint8_t *pub = d->pub;     /* same-host origins and transports write it concurrently */
    for (size_t i = 0; i < n; i += 64) {
        size_t k = n - i < 64 ? n - i : 64;
        if (!memcmp(priv + i, sh + i, k) && !memcmp((const uint8_t *)d->pub + i, sh + i, k)) continue;
        for (size_t j = i; j < i + k; j++) {
            uint8_t p = priv[j], u = pub[j];
            if (p != sh[j]) {                   /* a local store: public */
                pub[j] = p;
                sh[j] = p;
            } else if (u != sh[j]) {            /* an RMA update: private */
                priv[j] = u;
                sh[j] = u;
                if (j < lo) lo = j;
                hi = j + 1;
            }
        }
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (hi > lo && kumi_accel_copy_out((char *)d->dev + lo, priv + lo, hi - lo))
        return kumi_error(MPI_ERR_OTHER, "%s: copying %zu bytes of window memory to the device failed", fn, hi - lo);
    return MPI_SUCCESS;
}

int kumi_rma_dev_sync(struct kumi_win *w, const char *fn, int assert)
{
    int rc = MPI_SUCCESS;
    bool nostore = (assert & MPI_MODE_NOSTORE) != 0;
    if (!w->ndev) return rc;
    if (w->devm) rc = kumi_rma_devmem_sync(w->devm, fn, nostore);
    for (int i = 0; !rc && i < w->nregions; i++)
        if (w->regions[i].devm) rc = kumi_rma_devmem_sync(w->regions[i].devm, fn, nostore);
    return rc;
}

uint8_t *kumi_win_dyn_addr(const struct kumi_win *w, uint64_t addr)
{
    for (int i = 0; w->ndev && i < w->nregions; i++) {
        const struct kumi_win_region *r = &w->regions[i];
        if (r->devm && addr >= r->base && addr < r->base + r->len) return r->devm->pub + (addr - r->base);
    }
    return (uint8_t *)(uintptr_t)addr;
}
