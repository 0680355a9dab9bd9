/* Buffers of the request layer (split from request.c): the cache of
 * unexpected messages' buffers (kumi_ubuf_*), and the external32 copies of
 * messages to and from peers of a transport that carries external32
 * (KUMI_P2P_CAP_EXTERNAL32: p2p/impi). */
#include "request/request.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Buffers of unexpected messages.  A stream of eager messages that arrive
 * before their receives (a root broadcasting back to back, a window of
 * messages both ways) takes one buffer per message; fresh malloc'd memory
 * page-faults on every copy (glibc hands freed memory at the top of the heap
 * back to the kernel), which cost more than the copy itself.  So freed
 * buffers of each power-of-two class from 4 KiB to 256 KiB are kept for
 * reuse, up to UBUF_KEEP_BYTES per class (a window of 64 messages of 8-16
 * KiB, as in a bi-directional bandwidth test, then reuses its buffers: with
 * 4 kept per class, 15 page faults per window at 8193 B against 8.6 at 8192
 * B, bibw 0.66 x MPICH's at 8193 B; h-state, 2026-11-29), at least
 * UBUF_KEEP_MIN; at most 7 MiB in all, only after such bursts.  Smaller and
 * larger ones come from malloc.  Library lock held. */
#define UBUF_MIN_SHIFT 12
#define UBUF_MAX_SHIFT 18
#define UBUF_KEEP_MIN 4
#define UBUF_KEEP_BYTES ((size_t)1 << 20)
#define UBUF_NCLS (UBUF_MAX_SHIFT - UBUF_MIN_SHIFT + 1)
union ubuf_hdr {
    struct { int cls; union ubuf_hdr *next; } h;   /* next: in the class's free list */
    max_align_t align_;
};
static union ubuf_hdr *ubuf_free[UBUF_NCLS];
static int ubuf_count[UBUF_NCLS];

static int ubuf_keep(int cls)
{
    int n = (int)(UBUF_KEEP_BYTES >> (cls + UBUF_MIN_SHIFT));
    return n > UBUF_KEEP_MIN ? n : UBUF_KEEP_MIN;
}

void *kumi_ubuf_alloc(size_t n)
{
    int cls = -1;
    if (n >= (1u << UBUF_MIN_SHIFT) / 2 && n <= (1u << UBUF_MAX_SHIFT)) {
        cls = 0;
        while (((size_t)1 << (cls + UBUF_MIN_SHIFT)) < n) cls++;
        n = (size_t)1 << (cls + UBUF_MIN_SHIFT);
        union ubuf_hdr *h = ubuf_free[cls];
        if (h) {
            ubuf_free[cls] = h->h.next;
            ubuf_count[cls]--;
            return h + 1;
        }
    }
    union ubuf_hdr *h = malloc(sizeof *h + n);
    if (!h) return NULL;
    h->h.cls = cls;
    return h + 1;
}

void kumi_ubuf_free(void *p)
{
    if (!p) return;
    union ubuf_hdr *h = (union ubuf_hdr *)p - 1;
    int cls = h->h.cls;
    if (cls >= 0 && ubuf_count[cls] < ubuf_keep(cls)) {
        h->h.next = ubuf_free[cls];
        ubuf_free[cls] = h;
        ubuf_count[cls]++;
        return;
    }
    free(h);
}

/* Bytes of buffers kept now (for tests and diagnostics). */
size_t kumi_ubuf_cached(void)
{
    size_t n = 0;
    for (int c = 0; c < UBUF_NCLS; c++) n += (size_t)ubuf_count[c] << (c + UBUF_MIN_SHIFT);
    return n;
}

void kumi_ubuf_drain(void)
{
    for (int c = 0; c < UBUF_NCLS; c++) {
        while (ubuf_free[c]) {
            union ubuf_hdr *h = ubuf_free[c];
            ubuf_free[c] = h->h.next;
            free(h);
        }
        ubuf_count[c] = 0;
    }
}

/* ------------------------------------------------------------ external32 peers */
static bool ext32_copy;                  /* kumi_p2p_external32_copy() */

KUMI_EXPORT void kumi_p2p_external32_copy(int on) { ext32_copy = on != 0; }

/* Does a message of dt to / from a peer of transport ops cross as external32
 * bytes that differ from (or are asked to be copied from) the native ones? */
bool kumi_req_ext32_convert(const struct kumi_p2p_ops *ops, const struct kumi_dt *dt)
{
    return ops && (ops->caps & KUMI_P2P_CAP_EXTERNAL32) && dt && (ext32_copy || !kumi_dt_external32_native(dt));
}

/* A receive matched a message of world rank wpeer: external32 bytes land in
 * r->xbuf (room for the receive's count in external32), converted at the end. */
void kumi_req_ext32_recv_setup(struct kumi_req *r, int wpeer)
{
    if (r->xconv || !r->bytes || !kumi_req_ext32_convert(kumi_req_transport(wpeer), r->dt)) return;
    size_t xb = r->count * r->dt->xsize;
    free(r->xbuf);
    r->xbuf = malloc(xb);
    if (!r->xbuf) {
        if (r->status.MPI_ERROR == MPI_SUCCESS)
            r->status.MPI_ERROR = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory (%zu bytes for external32 data)",
                                             r->fname ? r->fname : "receive", xb);
        r->rx.cap = 0;
        return;
    }
    r->rx.dst = r->xbuf;
    r->rx.cap = xb;
    r->xconv = true;
}

/* At completion: a send drops its external32 copy; a receive converts the
 * whole elements that came into its native form (r->pack or the buffer);
 * the status counts native bytes from then on. */
void kumi_req_ext32_finish(struct kumi_req *r)
{
    if (r->kind == KUMI_REQ_RECV && r->xconv && r->dt->xsize) {
        size_t n = (size_t)kumi_status_bytes(&r->status) / r->dt->xsize;
        void *out = r->pack ? r->pack : (void *)((uintptr_t)r->buf + (uintptr_t)r->dt->true_lb);
        kumi_dt_external32(r->dt, r->xbuf, out, n, 1);
        kumi_status_set_bytes(&r->status, (uint64_t)n * r->dt->size);
    }
    r->xconv = false;
    free(r->xbuf);
    r->xbuf = NULL;
}
