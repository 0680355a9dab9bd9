/* Buffered sends: the attached buffer (attach, detach) and the space
 * allocator behind MPI_Bsend / MPI_Ibsend / MPI_Bsend_init (the MPI
 * functions MPI_Buffer_attach / _detach are in mpi/buffer.c).
 *
 * A buffered message occupies its packed size plus MPI_BSEND_OVERHEAD bytes
 * of the attached buffer until it has gone out (first fit): exactly what the
 * standard tells the user to provide (MPI_Pack_size + MPI_BSEND_OVERHEAD per
 * message), so a buffer of that size always holds the message.  The
 * bookkeeping lives outside the buffer; the overhead is kept as slack.  If it does not fit the call fails with MPI_ERR_BUFFER.
 * MPI_BUFFER_AUTOMATIC (MPI 4.1) attaches a buffer without limit: messages
 * are then copied into memory of their own. */
#include "request/request.h"
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct bseg {
    size_t off, len;                 /* in the attached buffer (len includes overhead) */
    void *mem;                       /* automatic mode: the copy */
    struct bseg *next;
};

static char *battached;              /* NULL: none */
static size_t bsize;
static bool bautomatic;
static struct bseg *segs;            /* sorted by off */
static int nsegs;

/* MPI_Buffer_attach(_c) and MPI_Buffer_detach(_c) share these; fn names the call. */
int kumi_bsend_attach(const char *fn, void *buffer, MPI_Count size)
{
    if (battached || bautomatic)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_BUFFER, "%s: a buffer is already attached", fn));
    if (buffer == MPI_BUFFER_AUTOMATIC) {
        bautomatic = true;
        return MPI_SUCCESS;
    }
    if (size < 0 || (uint64_t)size > SIZE_MAX)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: invalid size %lld", fn, (long long)size));
    if (!buffer && size > 0)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_BUFFER, "%s: NULL buffer of size %lld", fn,
                                                (long long)size));
    battached = buffer ? buffer : (char *)&bsize;  /* size 0 with NULL: attached, empty */
    bsize = (size_t)size;
    return MPI_SUCCESS;
}

static int no_segs(void *arg) { (void)arg; return nsegs == 0; }

/* *size gets the size; max: the largest the caller's size argument holds
 * (a larger buffer stays attached: MPI_ERR_VALUE_TOO_LARGE). */
int kumi_bsend_detach(const char *fn, void *buffer_addr, MPI_Count *size, MPI_Count max)
{
    if (!battached && !bautomatic) {
        if (buffer_addr) *(void **)buffer_addr = NULL;
        if (size) *size = 0;
        return MPI_SUCCESS;
    }
    if (!bautomatic && (uint64_t)bsize > (uint64_t)max)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_VALUE_TOO_LARGE, "%s: the attached buffer of %zu bytes is "
                                                "larger than argument size can hold (use MPI_Buffer_detach_c)",
                                                fn, bsize));
    if (nsegs) kumi_progress_wait(no_segs, NULL);
    if (bautomatic) {
        if (buffer_addr) *(void **)buffer_addr = MPI_BUFFER_AUTOMATIC;
        if (size) *size = 0;
    } else {
        if (buffer_addr) *(void **)buffer_addr = battached == (char *)&bsize ? NULL : battached;
        if (size) *size = (MPI_Count)bsize;
    }
    battached = NULL;
    bsize = 0;
    bautomatic = false;
    return MPI_SUCCESS;
}

static struct bseg *alloc_seg(size_t need)
{
    struct bseg *s, **pp = &segs, *n;
    size_t off = 0;
    for (s = segs; s; pp = &s->next, s = s->next) {
        if (s->off - off >= need) break;
        off = s->off + s->len;
    }
    if (!s && (off > bsize || bsize - off < need)) return NULL;
    n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->off = off;
    n->len = need;
    n->next = s;
    *pp = n;
    nsegs++;
    return n;
}

int kumi_bsend_prepare(struct kumi_req *r)
{
    size_t bytes = r->count * r->dt->size;
    size_t need = bytes + MPI_BSEND_OVERHEAD;
    struct bseg *s;
    void *dst;

    if (bautomatic) {
        s = calloc(1, sizeof *s);
        if (!s || !(s->mem = malloc(bytes ? bytes : 1))) {
            free(s);
            return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory buffering %zu bytes", r->fname, bytes);
        }
        nsegs++;
        dst = s->mem;
    } else {
        if (!battached)
            return kumi_error(MPI_ERR_BUFFER, "%s: no buffer attached (MPI_Buffer_attach) for a message of %zu bytes",
                              r->fname, bytes);
        s = alloc_seg(need);
        if (!s) {
            kumi_progress(0);                   /* maybe some went out meanwhile */
            s = alloc_seg(need);
        }
        if (!s)
            return kumi_error(MPI_ERR_BUFFER, "%s: message of %zu bytes (+%d overhead) does not fit in the "
                              "attached buffer of %zu bytes", r->fname, bytes, MPI_BSEND_OVERHEAD, bsize);
        dst = battached + s->off;
    }
    if (bytes) kumi_dt_pack(r->dt, r->buf, r->count, dst);
    r->pack = dst;
    r->bsend_seg = s;
    return MPI_SUCCESS;
}

void kumi_bsend_release(struct kumi_req *r)
{
    struct bseg *s = r->bsend_seg, **pp;
    if (!s) return;
    r->bsend_seg = NULL;
    r->pack = NULL;
    if (s->mem) {
        free(s->mem);
        free(s);
        nsegs--;
        return;
    }
    for (pp = &segs; *pp; pp = &(*pp)->next)
        if (*pp == s) { *pp = s->next; break; }
    free(s);
    nsegs--;
}
