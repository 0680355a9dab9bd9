/* The pack engine: copies between a user buffer laid out by a datatype and
 * its packed form, for any byte range of the packed stream (pipelining,
 * short receives); MPI_Pack / MPI_Unpack / MPI_Pack_size, the "external32"
 * representation (big-endian, the sizes of MPI 4.1 sec. 15.5.2), element
 * counts (MPI_Get_elements with partial messages) and the status setters.
 *
 * A datatype's element is a list of segments (struct kumi_dt_seg), each
 * count blocks of len bytes at off + i * stride, packed one after another;
 * element k of a buffer starts at buf + k * extent.  Contiguous types
 * (dt->contig) are one memcpy. */
#include "core/core.h"
#include "core/check.h"
#include "core/dt_impl.h"
#include "request/request.h"
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
static uint64_t elements_bytes(const struct kumi_dt *dt, uint64_t n)
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

int kumi_mpi_get_elements_c(const MPI_Status *status, struct kumi_dt *datatype, MPI_Count *count)
{
    if (status == MPI_STATUS_IGNORE || !count)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Get_elements_c: NULL pointer in argument %s",
                                                !count ? "count" : "status"));
    *count = (MPI_Count)kumi_dt_elements(datatype, kumi_status_bytes(status));
    return MPI_SUCCESS;
}

int kumi_mpi_get_count_c(const MPI_Status *status, struct kumi_dt *datatype, MPI_Count *count)
{
    if (status == MPI_STATUS_IGNORE || !count)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Get_count_c: NULL pointer in argument %s",
                                                !count ? "count" : "status"));
    uint64_t bytes = kumi_status_bytes(status);
    if (datatype->size == 0) *count = 0;
    else *count = bytes % datatype->size ? MPI_UNDEFINED : (MPI_Count)(bytes / datatype->size);
    return MPI_SUCCESS;
}

static int set_elements(const char *fn, MPI_Status *status, struct kumi_dt *dt, MPI_Count count)
{
    if (!status || status == MPI_STATUS_IGNORE)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument status is NULL", fn));
    if (count < 0)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_COUNT, "%s: invalid count %lld", fn, (long long)count));
    kumi_status_set_bytes(status, elements_bytes(dt, (uint64_t)count));
    return MPI_SUCCESS;
}

int kumi_mpi_status_set_elements(MPI_Status *status, struct kumi_dt *datatype, int count)
{
    return set_elements("MPI_Status_set_elements", status, datatype, count);
}
int kumi_mpi_status_set_elements_x(MPI_Status *status, struct kumi_dt *datatype, MPI_Count count)
{
    return set_elements("MPI_Status_set_elements_x", status, datatype, count);
}
int kumi_mpi_status_set_elements_c(MPI_Status *status, struct kumi_dt *datatype, MPI_Count count)
{
    return set_elements("MPI_Status_set_elements_c", status, datatype, count);
}

int kumi_mpi_status_set_cancelled(MPI_Status *status, int flag)
{
    if (!status || status == MPI_STATUS_IGNORE)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Status_set_cancelled: argument status is NULL"));
    status->MPI_internal[2] = flag ? 1 : 0;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------- Pack / Unpack */
/* (these have a communicator: the binding calls its error handler) */
static int pack(const char *fn, const void *inbuf, MPI_Count incount, struct kumi_dt *dt, void *outbuf,
                MPI_Count outsize, MPI_Count *position)
{
    if (incount < 0) return kumi_error(MPI_ERR_COUNT, "%s: invalid count %lld (argument incount)", fn, (long long)incount);
    if (*position < 0 || *position > outsize)
        return kumi_error(MPI_ERR_ARG, "%s: position %lld is outside the buffer of %lld bytes", fn,
                          (long long)*position, (long long)outsize);
    uint64_t bytes = (uint64_t)incount * dt->size;
    if (bytes > (uint64_t)(outsize - *position))
        return kumi_error(MPI_ERR_TRUNCATE, "%s: %llu bytes do not fit at position %lld of a buffer of %lld bytes",
                          fn, (unsigned long long)bytes, (long long)*position, (long long)outsize);
    if (bytes && !outbuf) return kumi_error(MPI_ERR_BUFFER, "%s: argument outbuf is NULL", fn);
    kumi_dt_pack_range(dt, inbuf, (size_t)incount, 0, bytes, (char *)outbuf + *position);
    *position += (MPI_Count)bytes;
    return MPI_SUCCESS;
}

static int unpack(const char *fn, const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf,
                  MPI_Count outcount, struct kumi_dt *dt)
{
    if (outcount < 0)
        return kumi_error(MPI_ERR_COUNT, "%s: invalid count %lld (argument outcount)", fn, (long long)outcount);
    if (*position < 0 || *position > insize)
        return kumi_error(MPI_ERR_ARG, "%s: position %lld is outside the buffer of %lld bytes", fn,
                          (long long)*position, (long long)insize);
    uint64_t bytes = (uint64_t)outcount * dt->size;
    if (bytes > (uint64_t)(insize - *position))
        return kumi_error(MPI_ERR_TRUNCATE, "%s: %llu bytes wanted at position %lld of a buffer of %lld bytes",
                          fn, (unsigned long long)bytes, (long long)*position, (long long)insize);
    if (bytes && !inbuf) return kumi_error(MPI_ERR_BUFFER, "%s: argument inbuf is NULL", fn);
    kumi_dt_unpack_range(dt, (const char *)inbuf + *position, (size_t)outcount, 0, bytes, outbuf);
    *position += (MPI_Count)bytes;
    return MPI_SUCCESS;
}

int kumi_mpi_pack(const void *inbuf, int incount, struct kumi_dt *datatype, void *outbuf, int outsize, int *position,
                  struct kumi_comm *comm)
{
    (void)comm;
    if (!position) return kumi_error(MPI_ERR_ARG, "MPI_Pack: argument position is NULL");
    MPI_Count p = *position;
    int rc = pack("MPI_Pack", inbuf, incount, datatype, outbuf, outsize, &p);
    if (!rc) *position = (int)p;
    return rc;
}

int kumi_mpi_pack_c(const void *inbuf, MPI_Count incount, struct kumi_dt *datatype, void *outbuf, MPI_Count outsize,
                    MPI_Count *position, struct kumi_comm *comm)
{
    (void)comm;
    if (!position) return kumi_error(MPI_ERR_ARG, "MPI_Pack_c: argument position is NULL");
    return pack("MPI_Pack_c", inbuf, incount, datatype, outbuf, outsize, position);
}

int kumi_mpi_unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                    struct kumi_dt *datatype, struct kumi_comm *comm)
{
    (void)comm;
    if (!position) return kumi_error(MPI_ERR_ARG, "MPI_Unpack: argument position is NULL");
    MPI_Count p = *position;
    int rc = unpack("MPI_Unpack", inbuf, insize, &p, outbuf, outcount, datatype);
    if (!rc) *position = (int)p;
    return rc;
}

int kumi_mpi_unpack_c(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf, MPI_Count outcount,
                      struct kumi_dt *datatype, struct kumi_comm *comm)
{
    (void)comm;
    if (!position) return kumi_error(MPI_ERR_ARG, "MPI_Unpack_c: argument position is NULL");
    return unpack("MPI_Unpack_c", inbuf, insize, position, outbuf, outcount, datatype);
}

int kumi_mpi_pack_size(int incount, struct kumi_dt *datatype, struct kumi_comm *comm, int *size)
{
    (void)comm;
    if (!size) return kumi_error(MPI_ERR_ARG, "MPI_Pack_size: argument size is NULL");
    uint64_t b = (uint64_t)incount * datatype->size;
    if (b > INT_MAX)
        return kumi_error(MPI_ERR_COUNT, "MPI_Pack_size: %llu bytes do not fit in an int (use MPI_Pack_size_c)",
                          (unsigned long long)b);
    *size = (int)b;
    return MPI_SUCCESS;
}

int kumi_mpi_pack_size_c(MPI_Count incount, struct kumi_dt *datatype, struct kumi_comm *comm, MPI_Count *size)
{
    (void)comm;
    if (!size) return kumi_error(MPI_ERR_ARG, "MPI_Pack_size_c: argument size is NULL");
    *size = incount * (MPI_Count)datatype->size;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------- external32 */
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
static void ext_convert(const struct kumi_dt *dt, const unsigned char *in, unsigned char *out, size_t count, int dir)
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

static int datarep_ok(const char *fn, const char *datarep)
{
    if (!datarep) return kumi_error(MPI_ERR_ARG, "%s: argument datarep is NULL", fn);
    if (strcmp(datarep, "external32"))
        return kumi_error(MPI_ERR_ARG, "%s: unknown data representation \"%s\" (only \"external32\")", fn, datarep);
    return MPI_SUCCESS;
}

static int pack_external(const char *fn, const char *datarep, const void *inbuf, MPI_Count incount,
                         struct kumi_dt *dt, void *outbuf, MPI_Count outsize, MPI_Count *position)
{
    int rc = datarep_ok(fn, datarep);
    if (rc) return rc;
    if (!position) return kumi_error(MPI_ERR_ARG, "%s: argument position is NULL", fn);
    if (incount < 0) return kumi_error(MPI_ERR_COUNT, "%s: invalid count %lld (argument incount)", fn, (long long)incount);
    if (*position < 0 || *position > outsize)
        return kumi_error(MPI_ERR_ARG, "%s: position %lld is outside the buffer of %lld bytes", fn,
                          (long long)*position, (long long)outsize);
    uint64_t xb = (uint64_t)incount * dt->xsize, nb = (uint64_t)incount * dt->size;
    if (xb > (uint64_t)(outsize - *position))
        return kumi_error(MPI_ERR_TRUNCATE, "%s: %llu bytes do not fit at position %lld of a buffer of %lld bytes",
                          fn, (unsigned long long)xb, (long long)*position, (long long)outsize);
    if (!xb) return MPI_SUCCESS;
    if (!outbuf) return kumi_error(MPI_ERR_BUFFER, "%s: argument outbuf is NULL", fn);
    unsigned char *tmp = malloc(nb ? nb : 1);
    if (!tmp) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory (%llu bytes)", fn, (unsigned long long)nb);
    kumi_dt_pack_range(dt, inbuf, (size_t)incount, 0, nb, tmp);
    ext_convert(dt, tmp, (unsigned char *)outbuf + *position, (size_t)incount, 0);
    free(tmp);
    *position += (MPI_Count)xb;
    return MPI_SUCCESS;
}

static int unpack_external(const char *fn, const char *datarep, const void *inbuf, MPI_Count insize,
                           MPI_Count *position, void *outbuf, MPI_Count outcount, struct kumi_dt *dt)
{
    int rc = datarep_ok(fn, datarep);
    if (rc) return rc;
    if (!position) return kumi_error(MPI_ERR_ARG, "%s: argument position is NULL", fn);
    if (outcount < 0)
        return kumi_error(MPI_ERR_COUNT, "%s: invalid count %lld (argument outcount)", fn, (long long)outcount);
    if (*position < 0 || *position > insize)
        return kumi_error(MPI_ERR_ARG, "%s: position %lld is outside the buffer of %lld bytes", fn,
                          (long long)*position, (long long)insize);
    uint64_t xb = (uint64_t)outcount * dt->xsize, nb = (uint64_t)outcount * dt->size;
    if (xb > (uint64_t)(insize - *position))
        return kumi_error(MPI_ERR_TRUNCATE, "%s: %llu bytes wanted at position %lld of a buffer of %lld bytes",
                          fn, (unsigned long long)xb, (long long)*position, (long long)insize);
    if (!xb) return MPI_SUCCESS;
    if (!inbuf) return kumi_error(MPI_ERR_BUFFER, "%s: argument inbuf is NULL", fn);
    unsigned char *tmp = malloc(nb ? nb : 1);
    if (!tmp) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory (%llu bytes)", fn, (unsigned long long)nb);
    ext_convert(dt, (const unsigned char *)inbuf + *position, tmp, (size_t)outcount, 1);
    kumi_dt_unpack_range(dt, tmp, (size_t)outcount, 0, nb, outbuf);
    free(tmp);
    *position += (MPI_Count)xb;
    return MPI_SUCCESS;
}

int kumi_mpi_pack_external(const char datarep[], const void *inbuf, int incount, struct kumi_dt *datatype,
                           void *outbuf, MPI_Aint outsize, MPI_Aint *position)
{
    if (!position) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Pack_external: argument position is NULL"));
    MPI_Count p = *position;
    int rc = pack_external("MPI_Pack_external", datarep, inbuf, incount, datatype, outbuf, outsize, &p);
    if (rc) return kumi_err_handle(NULL, rc);
    *position = (MPI_Aint)p;
    return MPI_SUCCESS;
}

int kumi_mpi_pack_external_c(const char datarep[], const void *inbuf, MPI_Count incount, struct kumi_dt *datatype,
                             void *outbuf, MPI_Count outsize, MPI_Count *position)
{
    int rc = pack_external("MPI_Pack_external_c", datarep, inbuf, incount, datatype, outbuf, outsize, position);
    return rc ? kumi_err_handle(NULL, rc) : MPI_SUCCESS;
}

int kumi_mpi_unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize, MPI_Aint *position,
                             void *outbuf, int outcount, struct kumi_dt *datatype)
{
    if (!position)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Unpack_external: argument position is NULL"));
    MPI_Count p = *position;
    int rc = unpack_external("MPI_Unpack_external", datarep, inbuf, insize, &p, outbuf, outcount, datatype);
    if (rc) return kumi_err_handle(NULL, rc);
    *position = (MPI_Aint)p;
    return MPI_SUCCESS;
}

int kumi_mpi_unpack_external_c(const char datarep[], const void *inbuf, MPI_Count insize, MPI_Count *position,
                               void *outbuf, MPI_Count outcount, struct kumi_dt *datatype)
{
    int rc = unpack_external("MPI_Unpack_external_c", datarep, inbuf, insize, position, outbuf, outcount, datatype);
    return rc ? kumi_err_handle(NULL, rc) : MPI_SUCCESS;
}

int kumi_mpi_pack_external_size(const char datarep[], int incount, struct kumi_dt *datatype, MPI_Aint *size)
{
    int rc = datarep_ok("MPI_Pack_external_size", datarep);
    if (!rc && !size) rc = kumi_error(MPI_ERR_ARG, "MPI_Pack_external_size: argument size is NULL");
    if (rc) return kumi_err_handle(NULL, rc);
    *size = (MPI_Aint)incount * (MPI_Aint)datatype->xsize;
    return MPI_SUCCESS;
}

int kumi_mpi_pack_external_size_c(const char datarep[], MPI_Count incount, struct kumi_dt *datatype, MPI_Count *size)
{
    int rc = datarep_ok("MPI_Pack_external_size_c", datarep);
    if (!rc && !size) rc = kumi_error(MPI_ERR_ARG, "MPI_Pack_external_size_c: argument size is NULL");
    if (rc) return kumi_err_handle(NULL, rc);
    *size = incount * (MPI_Count)datatype->xsize;
    return MPI_SUCCESS;
}
