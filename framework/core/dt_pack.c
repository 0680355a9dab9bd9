/* The pack engine: copies between a user buffer laid out by a datatype and
 * its packed form, for any byte range of the packed stream (pipelining,
 * short receives); the "external32" representation (big-endian, the sizes
 * of MPI 4.1 sec. 15.5.2); element counts (MPI_Get_elements with partial
 * messages).  The MPI functions over it (MPI_Pack & co., MPI_Get_count,
 * the status setters) are in core/pack.c.
 *
 * A datatype's element is a list of segments (struct kumi_dt_seg), each
 * count blocks of len bytes at off + i * stride, packed one after another;
 * element k of a buffer starts at buf + k * extent.  Contiguous types
 * (dt->contig) are one memcpy. */
#include "core/core.h"
#include "core/check.h"
#include "core/dt_impl.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* n blocks of len bytes, strided on the user side; dir 0: user -> packed. */
static inline void blocks(char *user, MPI_Aint stride, size_t n, size_t len, char *packed, int dir)
{
#define LOOP(L)                                                                   \
    do {                                                                          \
        if (dir == 0) for (size_t i = 0; i < n; i++, user += stride, packed += (L)) \
            memcpy(packed, user, (L));                                            \
        else for (size_t i = 0; i < n; i++, user += stride, packed += (L))        \
            memcpy(user, packed, (L));                                            \
    } while (0)
    switch (len) {
    case 1: LOOP(1); break;
    case 2: LOOP(2); break;
    case 4: LOOP(4); break;
    case 8: LOOP(8); break;
    case 12: LOOP(12); break;
    case 16: LOOP(16); break;
    case 24: LOOP(24); break;
    case 32: LOOP(32); break;
    default: LOOP(len); break;
    }
#undef LOOP
}

static inline void one(char *user, size_t n, char *packed, int dir)
{
    if (dir == 0) memcpy(packed, user, n);
    else memcpy(user, packed, n);
}

static void xfer(const struct kumi_dt *dt, char *user, size_t count, size_t off, size_t len, char *packed, int dir)
{
    size_t total = count * dt->size;
    if (off >= total) return;
    if (len > total - off) len = total - off;
    if (!len) return;
    if (dt->contig) {
        one((char *)((uintptr_t)user + (uintptr_t)dt->true_lb + off), len, packed, dir);
        return;
    }
    size_t e = off / dt->size, r = off % dt->size;
    while (len) {
        char *ub = (char *)((uintptr_t)user + (uintptr_t)((MPI_Aint)e * dt->extent));
        for (size_t k = 0; k < dt->nsegs && len; k++) {
            const struct kumi_dt_seg *s = &dt->segs[k];
            size_t sbytes = s->len * s->count;
            if (r >= sbytes) { r -= sbytes; continue; }
            size_t bi = r / s->len, bo = r % s->len;
            r = 0;
            char *p = (char *)((uintptr_t)ub + (uintptr_t)(s->off + (MPI_Aint)bi * s->stride));
            if (bo) {
                size_t n = s->len - bo < len ? s->len - bo : len;
                one(p + bo, n, packed, dir);
                packed += n; len -= n; bi++;
                p = (char *)((uintptr_t)p + (uintptr_t)s->stride);
                if (!len) break;
            }
            size_t nfull = s->count - bi;
            if (nfull > len / s->len) nfull = len / s->len;
            if (nfull) {
                blocks(p, s->stride, nfull, s->len, packed, dir);
                packed += nfull * s->len; len -= nfull * s->len; bi += nfull;
                p = (char *)((uintptr_t)p + (uintptr_t)((MPI_Aint)nfull * s->stride));
            }
            if (len && bi < s->count) {      /* the range ends inside this block */
                one(p, len, packed, dir);
                len = 0;
            }
        }
        e++;
    }
}

void kumi_dt_pack_range(const struct kumi_dt *dt, const void *buf, size_t count, size_t off, size_t len, void *out)
{
    xfer(dt, (char *)buf, count, off, len, out, 0);
}

void kumi_dt_unpack_range(const struct kumi_dt *dt, const void *in, size_t count, size_t off, size_t len, void *buf)
{
    xfer(dt, buf, count, off, len, (char *)in, 1);
}

void kumi_dt_pack(const struct kumi_dt *dt, const void *buf, size_t count, void *out)
{
    xfer(dt, (char *)buf, count, 0, count * dt->size, out, 0);
}

void kumi_dt_unpack(const struct kumi_dt *dt, const void *in, size_t count, void *buf)
{
    xfer(dt, buf, count, 0, count * dt->size, (char *)in, 1);
}

/* ------------------------------------------------------ element counts */
int64_t kumi_dt_elements(const struct kumi_dt *dt, uint64_t bytes)
{
    if (dt->size == 0) return 0;
    uint64_t full = bytes / dt->size, rem = bytes % dt->size;
    int64_t n = (int64_t)(full * dt->nelem);
    for (size_t k = 0; k < dt->nruns && rem; k++) {
        const struct kumi_dt_run *r = &dt->runs[k];
        uint64_t rb = (uint64_t)r->n * r->esize;
        if (rem >= rb) { n += (int64_t)r->n; rem -= rb; }
        else {
            if (rem % r->esize) return MPI_UNDEFINED;     /* ends inside a basic element */
            n += (int64_t)(rem / r->esize);
            break;
        }
    }
    return n;
}

/* bytes of the first n basic elements of a message of type dt */
uint64_t kumi_dt_elements_bytes(const struct kumi_dt *dt, uint64_t n)
{
    if (dt->nelem == 0) return 0;
    uint64_t full = n / dt->nelem, rem = n % dt->nelem, b = full * dt->size;
    for (size_t k = 0; k < dt->nruns && rem; k++) {
        const struct kumi_dt_run *r = &dt->runs[k];
        uint64_t take = rem < r->n ? rem : r->n;
        b += take * r->esize;
        rem -= take;
    }
    return b;
}

static const int host_le = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

/* byte j (0 = least significant) of an n-byte native integer */
static inline unsigned char nat_byte(const unsigned char *p, size_t n, size_t j)
{
    return host_le ? p[j] : p[n - 1 - j];
}
static inline unsigned char *nat_at(unsigned char *p, size_t n, size_t j)
{
    return host_le ? &p[j] : &p[n - 1 - j];
}

static void int_to_x(const unsigned char *in, size_t n, unsigned char *out, size_t x, bool sgn)
{
    unsigned char fill = sgn && (nat_byte(in, n, n - 1) & 0x80) ? 0xff : 0;
    for (size_t i = 0; i < x; i++) {
        size_t j = x - 1 - i;
        out[i] = j < n ? nat_byte(in, n, j) : fill;
    }
}

static void int_from_x(const unsigned char *in, size_t x, unsigned char *out, size_t n, bool sgn)
{
    unsigned char fill = sgn && (in[0] & 0x80) ? 0xff : 0;
    for (size_t j = 0; j < n; j++) *nat_at(out, n, j) = j < x ? in[x - 1 - j] : fill;
}

static void flt_to_x(const unsigned char *in, size_t n, unsigned char *out)
{
    for (size_t i = 0; i < n; i++) out[i] = host_le ? in[n - 1 - i] : in[i];
}

/* x87 80-bit extended (in 16 bytes) <-> IEEE binary128, big-endian */
static void ldbl_to_x(const unsigned char *in, unsigned char *out)
{
    uint64_t m = 0;
    uint16_t se = (uint16_t)(in[8] | in[9] << 8);
    for (int i = 7; i >= 0; i--) m = m << 8 | in[i];
    uint64_t f = m & 0x7fffffffffffffffull;
    uint64_t hi = (uint64_t)se << 48 | f >> 15, lo = f << 49;
    for (int i = 0; i < 8; i++) { out[i] = (unsigned char)(hi >> (56 - 8 * i)); out[8 + i] = (unsigned char)(lo >> (56 - 8 * i)); }
}

static void ldbl_from_x(const unsigned char *in, unsigned char *out)
{
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 8; i++) { hi = hi << 8 | in[i]; lo = lo << 8 | in[8 + i]; }
    uint16_t se = (uint16_t)(hi >> 48);
    uint64_t f = (hi & 0xffffffffffffull) << 15 | lo >> 49;
    if (se & 0x7fff) f |= 1ull << 63;
    memset(out, 0, 16);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(f >> (8 * i));
    out[8] = (unsigned char)se;
    out[9] = (unsigned char)(se >> 8);
}

/* convert n basic elements of leaf l; dir 0: native -> external */
static void convert(const struct dt_leaf *l, const unsigned char *in, unsigned char *out, size_t n, int dir)
{
    size_t is = dir ? l->xsize : l->nsize, os = dir ? l->nsize : l->xsize;
    for (size_t k = 0; k < n; k++, in += is, out += os) {
        switch (l->cls) {
        case DT_X_RAW: memcpy(out, in, l->nsize); break;
        case DT_X_INT: case DT_X_UINT:
            if (dir) int_from_x(in, l->xsize, out, l->nsize, l->cls == DT_X_INT);
            else int_to_x(in, l->nsize, out, l->xsize, l->cls == DT_X_INT);
            break;
        case DT_X_FLT:
            for (size_t c = 0; c < l->nsize; c += l->comp) flt_to_x(in + c, l->comp, out + c);
            break;
        case DT_X_LDBL:
            for (size_t c = 0; c < l->nsize / 16; c++) {
                if (dir) ldbl_from_x(in + 16 * c, out + 16 * c);
                else ldbl_to_x(in + 16 * c, out + 16 * c);
            }
            break;
        }
    }
}

/* native packed <-> external32 for count elements of dt */
void kumi_dt_external32(const struct kumi_dt *dt, const unsigned char *in, unsigned char *out, size_t count, int dir)
{
    for (size_t e = 0; e < count; e++)
        for (size_t k = 0; k < dt->nruns; k++) {
            const struct kumi_dt_run *r = &dt->runs[k];
            const struct dt_leaf *l = kumi_dt_leaf(r->leaf);
            convert(l, in, out, r->n, dir);
            in += r->n * (dir ? l->xsize : l->nsize);
            out += r->n * (dir ? l->nsize : l->xsize);
        }
}

/* Are the external32 bytes of dt its native packed bytes (every basic
 * element raw bytes of the same size: MPI_BYTE, MPI_CHAR, ...)? */
bool kumi_dt_external32_native(const struct kumi_dt *dt)
{
    if (dt->xsize != dt->size) return false;
    for (size_t k = 0; k < dt->nruns; k++) {
        const struct dt_leaf *l = kumi_dt_leaf(dt->runs[k].leaf);
        if (l->cls != DT_X_RAW || l->xsize != l->nsize) return false;
    }
    return true;
}
