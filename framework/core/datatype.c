/* Datatypes: the predefined ones (every named type of the standard ABI), the
 * helpers components use, and the simple MPI queries.  Derived datatypes
 * come with the complete core (issue 3); the pack/unpack entry points are
 * already the ones the request layer calls for non-contiguous data. */
#include "core/core.h"
#include "core/check.h"
#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pair types for MINLOC / MAXLOC: value then int, with C layout. */
struct pair_float_int { float v; int i; };
struct pair_double_int { double v; int i; };
struct pair_long_int { long v; int i; };
struct pair_short_int { short v; int i; };
struct pair_ldouble_int { long double v; int i; };

#define PAIR(t) sizeof(((t *)0)->v) + sizeof(int), sizeof(t), offsetof(t, i), sizeof(((t *)0)->v)

static const struct predef {
    MPI_Datatype h;
    const char *name;
    enum kumi_basic basic;
    size_t size;          /* data bytes */
    size_t extent;
    size_t ioff, vsize;   /* pairs: offset of the int, size of the value (0: not a pair) */
} predefs[] = {
    { MPI_CHAR, "MPI_CHAR", KUMI_B_CHAR, 1, 1, 0, 0 },
    { MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", KUMI_B_SCHAR, 1, 1, 0, 0 },
    { MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", KUMI_B_UCHAR, 1, 1, 0, 0 },
    { MPI_BYTE, "MPI_BYTE", KUMI_B_BYTE, 1, 1, 0, 0 },
    { MPI_PACKED, "MPI_PACKED", KUMI_B_PACKED, 1, 1, 0, 0 },
    { MPI_WCHAR, "MPI_WCHAR", KUMI_B_WCHAR, sizeof(wchar_t), sizeof(wchar_t), 0, 0 },
    { MPI_SHORT, "MPI_SHORT", KUMI_B_SHORT, sizeof(short), sizeof(short), 0, 0 },
    { MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", KUMI_B_USHORT, sizeof(short), sizeof(short), 0, 0 },
    { MPI_INT, "MPI_INT", KUMI_B_INT, sizeof(int), sizeof(int), 0, 0 },
    { MPI_UNSIGNED, "MPI_UNSIGNED", KUMI_B_UINT, sizeof(int), sizeof(int), 0, 0 },
    { MPI_LONG, "MPI_LONG", KUMI_B_LONG, sizeof(long), sizeof(long), 0, 0 },
    { MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", KUMI_B_ULONG, sizeof(long), sizeof(long), 0, 0 },
    { MPI_LONG_LONG, "MPI_LONG_LONG", KUMI_B_LLONG, sizeof(long long), sizeof(long long), 0, 0 },
    { MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", KUMI_B_ULLONG, sizeof(long long), sizeof(long long), 0, 0 },
    { MPI_FLOAT, "MPI_FLOAT", KUMI_B_FLOAT, sizeof(float), sizeof(float), 0, 0 },
    { MPI_DOUBLE, "MPI_DOUBLE", KUMI_B_DOUBLE, sizeof(double), sizeof(double), 0, 0 },
    { MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", KUMI_B_LDOUBLE, sizeof(long double), sizeof(long double), 0, 0 },
    { MPI_C_BOOL, "MPI_C_BOOL", KUMI_B_BOOL, sizeof(_Bool), sizeof(_Bool), 0, 0 },
    { MPI_CXX_BOOL, "MPI_CXX_BOOL", KUMI_B_BOOL, sizeof(_Bool), sizeof(_Bool), 0, 0 },
    { MPI_INT8_T, "MPI_INT8_T", KUMI_B_INT8, 1, 1, 0, 0 },
    { MPI_UINT8_T, "MPI_UINT8_T", KUMI_B_UINT8, 1, 1, 0, 0 },
    { MPI_INT16_T, "MPI_INT16_T", KUMI_B_INT16, 2, 2, 0, 0 },
    { MPI_UINT16_T, "MPI_UINT16_T", KUMI_B_UINT16, 2, 2, 0, 0 },
    { MPI_INT32_T, "MPI_INT32_T", KUMI_B_INT32, 4, 4, 0, 0 },
    { MPI_UINT32_T, "MPI_UINT32_T", KUMI_B_UINT32, 4, 4, 0, 0 },
    { MPI_INT64_T, "MPI_INT64_T", KUMI_B_INT64, 8, 8, 0, 0 },
    { MPI_UINT64_T, "MPI_UINT64_T", KUMI_B_UINT64, 8, 8, 0, 0 },
    { MPI_AINT, "MPI_AINT", KUMI_B_AINT, sizeof(MPI_Aint), sizeof(MPI_Aint), 0, 0 },
    { MPI_COUNT, "MPI_COUNT", KUMI_B_COUNT, sizeof(MPI_Count), sizeof(MPI_Count), 0, 0 },
    { MPI_OFFSET, "MPI_OFFSET", KUMI_B_OFFSET, sizeof(MPI_Offset), sizeof(MPI_Offset), 0, 0 },
    { MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", KUMI_B_CFLOAT, sizeof(float _Complex), sizeof(float _Complex), 0, 0 },
    { MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", KUMI_B_CDOUBLE, sizeof(double _Complex), sizeof(double _Complex), 0, 0 },
    { MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", KUMI_B_CLDOUBLE, sizeof(long double _Complex), sizeof(long double _Complex), 0, 0 },
    { MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", KUMI_B_CFLOAT, sizeof(float _Complex), sizeof(float _Complex), 0, 0 },
    { MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", KUMI_B_CDOUBLE, sizeof(double _Complex), sizeof(double _Complex), 0, 0 },
    { MPI_CXX_LONG_DOUBLE_COMPLEX, "MPI_CXX_LONG_DOUBLE_COMPLEX", KUMI_B_CLDOUBLE, sizeof(long double _Complex), sizeof(long double _Complex), 0, 0 },
    /* Fortran types, with the sizes of a gfortran build */
    { MPI_LOGICAL, "MPI_LOGICAL", KUMI_B_FLOGICAL, 4, 4, 0, 0 },
    { MPI_INTEGER, "MPI_INTEGER", KUMI_B_FINTEGER, 4, 4, 0, 0 },
    { MPI_REAL, "MPI_REAL", KUMI_B_FREAL, 4, 4, 0, 0 },
    { MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", KUMI_B_FDOUBLE, 8, 8, 0, 0 },
    { MPI_COMPLEX, "MPI_COMPLEX", KUMI_B_FCOMPLEX, 8, 8, 0, 0 },
    { MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", KUMI_B_FDCOMPLEX, 16, 16, 0, 0 },
    { MPI_CHARACTER, "MPI_CHARACTER", KUMI_B_FCHARACTER, 1, 1, 0, 0 },
    { MPI_LOGICAL1, "MPI_LOGICAL1", KUMI_B_FLOGICAL1, 1, 1, 0, 0 },
    { MPI_LOGICAL2, "MPI_LOGICAL2", KUMI_B_FLOGICAL2, 2, 2, 0, 0 },
    { MPI_LOGICAL4, "MPI_LOGICAL4", KUMI_B_FLOGICAL4, 4, 4, 0, 0 },
    { MPI_LOGICAL8, "MPI_LOGICAL8", KUMI_B_FLOGICAL8, 8, 8, 0, 0 },
    { MPI_LOGICAL16, "MPI_LOGICAL16", KUMI_B_FLOGICAL16, 16, 16, 0, 0 },
    { MPI_INTEGER1, "MPI_INTEGER1", KUMI_B_INT8, 1, 1, 0, 0 },
    { MPI_INTEGER2, "MPI_INTEGER2", KUMI_B_INT16, 2, 2, 0, 0 },
    { MPI_INTEGER4, "MPI_INTEGER4", KUMI_B_INT32, 4, 4, 0, 0 },
    { MPI_INTEGER8, "MPI_INTEGER8", KUMI_B_INT64, 8, 8, 0, 0 },
    { MPI_INTEGER16, "MPI_INTEGER16", KUMI_B_NONE, 16, 16, 0, 0 },
    { MPI_REAL2, "MPI_REAL2", KUMI_B_NONE, 2, 2, 0, 0 },
    { MPI_REAL4, "MPI_REAL4", KUMI_B_FLOAT, 4, 4, 0, 0 },
    { MPI_REAL8, "MPI_REAL8", KUMI_B_DOUBLE, 8, 8, 0, 0 },
    { MPI_REAL16, "MPI_REAL16", KUMI_B_NONE, 16, 16, 0, 0 },
    { MPI_COMPLEX4, "MPI_COMPLEX4", KUMI_B_NONE, 4, 4, 0, 0 },
    { MPI_COMPLEX8, "MPI_COMPLEX8", KUMI_B_CFLOAT, 8, 8, 0, 0 },
    { MPI_COMPLEX16, "MPI_COMPLEX16", KUMI_B_CDOUBLE, 16, 16, 0, 0 },
    { MPI_COMPLEX32, "MPI_COMPLEX32", KUMI_B_NONE, 32, 32, 0, 0 },
    /* pairs */
    { MPI_FLOAT_INT, "MPI_FLOAT_INT", KUMI_B_FLOAT_INT, PAIR(struct pair_float_int) },
    { MPI_DOUBLE_INT, "MPI_DOUBLE_INT", KUMI_B_DOUBLE_INT, PAIR(struct pair_double_int) },
    { MPI_LONG_INT, "MPI_LONG_INT", KUMI_B_LONG_INT, PAIR(struct pair_long_int) },
    { MPI_SHORT_INT, "MPI_SHORT_INT", KUMI_B_SHORT_INT, PAIR(struct pair_short_int) },
    { MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", KUMI_B_LDOUBLE_INT, PAIR(struct pair_ldouble_int) },
    { MPI_2INT, "MPI_2INT", KUMI_B_2INT, 2 * sizeof(int), 2 * sizeof(int), 0, 0 },
    { MPI_2REAL, "MPI_2REAL", KUMI_B_2REAL, 8, 8, 0, 0 },
    { MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION", KUMI_B_2DOUBLE, 16, 16, 0, 0 },
    { MPI_2INTEGER, "MPI_2INTEGER", KUMI_B_2INTEGER, 8, 8, 0, 0 },
};
#define NPREDEF (sizeof predefs / sizeof predefs[0])

static struct kumi_dt predef_obj[NPREDEF];
struct pair_layout { size_t ioff, vsize; };
static struct pair_layout pair_layout[NPREDEF];

void kumi_dt_init(void)
{
    for (size_t i = 0; i < NPREDEF; i++) {
        const struct predef *p = &predefs[i];
        struct kumi_dt *d = &predef_obj[i];
        d->magic = KUMI_MAGIC_DT;
        d->refcount = 1;
        d->basic = p->basic;
        d->size = p->size;
        d->lb = 0;
        d->extent = (MPI_Aint)p->extent;
        d->true_lb = 0;
        d->true_extent = (MPI_Aint)p->extent;
        d->nelem = p->vsize ? 2 : (d->basic >= KUMI_B_2INT && d->basic <= KUMI_B_2INTEGER ? 2 : 1);
        d->contig = p->size == p->extent;
        d->predefined = true;
        d->committed = true;
        d->handle = p->h;
        d->name = p->name;
        d->combiner = MPI_COMBINER_NAMED;
        pair_layout[i].ioff = p->ioff;
        pair_layout[i].vsize = p->vsize;
        kumi_predef[(uintptr_t)p->h] = d;
    }
}

const char *kumi_dt_name(const struct kumi_dt *dt)
{
    return dt->name ? dt->name : "(derived datatype)";
}

/* Non-contiguous predefined types are the pairs with padding: value, then int. */
static const struct pair_layout *pair_of(const struct kumi_dt *dt)
{
    if (dt < predef_obj || dt >= predef_obj + NPREDEF) return NULL;
    size_t i = (size_t)(dt - predef_obj);
    return pair_layout[i].vsize ? &pair_layout[i] : NULL;
}

void kumi_dt_pack(const struct kumi_dt *dt, const void *buf, size_t count, void *out)
{
    const char *s = (const char *)buf + dt->true_lb;
    char *o = out;
    if (dt->contig) { memcpy(o, s, count * dt->size); return; }
    if (dt->base) {                 /* contiguous / dup: count * base_count base elements */
        kumi_dt_pack(dt->base, buf, count * dt->base_count, out);
        return;
    }
    const struct pair_layout *p = pair_of(dt);
    if (p) {
        for (size_t k = 0; k < count; k++, s += dt->extent, o += dt->size) {
            memcpy(o, s, p->vsize);
            memcpy(o + p->vsize, s + p->ioff, sizeof(int));
        }
        return;
    }
    kumi_err_fatal("internal: no pack routine for datatype %s", kumi_dt_name(dt));
}

void kumi_dt_unpack(const struct kumi_dt *dt, const void *in, size_t count, void *buf)
{
    char *d = (char *)buf + dt->true_lb;
    const char *i = in;
    if (dt->contig) { memcpy(d, i, count * dt->size); return; }
    if (dt->base) {
        kumi_dt_unpack(dt->base, in, count * dt->base_count, buf);
        return;
    }
    const struct pair_layout *p = pair_of(dt);
    if (p) {
        for (size_t k = 0; k < count; k++, d += dt->extent, i += dt->size) {
            memcpy(d, i, p->vsize);
            memcpy(d + p->ioff, i + p->vsize, sizeof(int));
        }
        return;
    }
    kumi_err_fatal("internal: no unpack routine for datatype %s", kumi_dt_name(dt));
}

/* ---------------------------------------------- helpers for components */
static struct kumi_dt *dt_or_die(MPI_Datatype h)
{
    struct kumi_dt *d = kumi_dt_get(h);
    if (!d) kumi_err_fatal("internal: invalid datatype handle %p passed to a component helper", (void *)h);
    return d;
}

size_t kumi_dt_size(MPI_Datatype dt) { return dt_or_die(dt)->size; }

void kumi_dt_extent(MPI_Datatype dt, MPI_Aint *lb, MPI_Aint *extent)
{
    struct kumi_dt *d = dt_or_die(dt);
    if (lb) *lb = d->lb;
    if (extent) *extent = d->extent;
}

void kumi_dt_true_extent(MPI_Datatype dt, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    struct kumi_dt *d = dt_or_die(dt);
    if (true_lb) *true_lb = d->true_lb;
    if (true_extent) *true_extent = d->true_extent;
}

int kumi_dt_copy(const void *sbuf, size_t scount, MPI_Datatype sdt, void *rbuf, size_t rcount,
                 MPI_Datatype rdt)
{
    struct kumi_dt *s = dt_or_die(sdt), *r = dt_or_die(rdt);
    size_t sbytes = scount * s->size, rbytes = rcount * r->size;
    int rc = MPI_SUCCESS;
    if (sbytes > rbytes) {
        rc = kumi_error(MPI_ERR_TRUNCATE, "message of %zu bytes truncated to a buffer of %zu bytes",
                        sbytes, rbytes);
        sbytes = rbytes;
    }
    if (sbytes == 0) return rc;
    if (s->contig && r->contig) {
        memmove((char *)rbuf + r->true_lb, (const char *)sbuf + s->true_lb, sbytes);
        return rc;
    }
    size_t n_s = s->size ? sbytes / s->size : 0;
    char *tmp = malloc(scount * s->size);
    if (!tmp) return kumi_error(MPI_ERR_NO_MEM, "out of memory copying %zu bytes", sbytes);
    kumi_dt_pack(s, sbuf, scount, tmp);
    size_t n_r = r->size ? sbytes / r->size : 0;
    (void)n_s;
    kumi_dt_unpack(r, tmp, n_r, rbuf);
    free(tmp);
    return rc;
}

/* ------------------------------------------------------- MPI functions */
int kumi_mpi_type_size(struct kumi_dt *datatype, int *size)
{
    if (!size) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Type_size: argument size is NULL"));
    *size = datatype->size > (size_t)INT32_MAX ? MPI_UNDEFINED : (int)datatype->size;
    return MPI_SUCCESS;
}

int kumi_mpi_type_size_c(struct kumi_dt *datatype, MPI_Count *size)
{
    if (!size) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Type_size_c: argument size is NULL"));
    *size = (MPI_Count)datatype->size;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_extent(struct kumi_dt *datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    if (!lb || !extent)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Type_get_extent: argument %s is NULL",
                                                lb ? "extent" : "lb"));
    *lb = datatype->lb;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_true_extent(struct kumi_dt *datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    if (!true_lb || !true_extent)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Type_get_true_extent: argument %s is NULL",
                                                true_lb ? "true_extent" : "true_lb"));
    *true_lb = datatype->true_lb;
    *true_extent = datatype->true_extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_name(struct kumi_dt *datatype, char *type_name, int *resultlen)
{
    if (!type_name || !resultlen)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Type_get_name: argument %s is NULL",
                                                type_name ? "resultlen" : "type_name"));
    const char *n = datatype->name ? datatype->name : "";
    snprintf(type_name, MPI_MAX_OBJECT_NAME, "%s", n);
    *resultlen = (int)strlen(type_name);
    return MPI_SUCCESS;
}

int kumi_mpi_get_address(const void *location, MPI_Aint *address)
{
    if (!address) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Get_address: argument address is NULL"));
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}

MPI_Aint kumi_mpi_aint_add(MPI_Aint base, MPI_Aint disp) { return base + disp; }
MPI_Aint kumi_mpi_aint_diff(MPI_Aint addr1, MPI_Aint addr2) { return addr1 - addr2; }

/* ------------------------------------------- derived types (first ones) */
static int dt_new(struct kumi_dt *base, size_t n, int combiner, struct kumi_dt **out)
{
    struct kumi_dt *d = calloc(1, sizeof *d);
    if (!d) return kumi_error(MPI_ERR_NO_MEM, "out of memory creating a datatype");
    d->magic = KUMI_MAGIC_DT;
    d->refcount = 1;
    d->basic = KUMI_B_NONE;
    d->size = n * base->size;
    d->nelem = n * base->nelem;
    d->lb = base->lb;
    d->extent = (MPI_Aint)n * base->extent;
    d->true_lb = base->true_lb;
    d->true_extent = n ? (MPI_Aint)(n - 1) * base->extent + base->true_extent : 0;
    /* n base elements form one block when the base has no holes */
    d->contig = base->contig && (MPI_Aint)base->size == base->extent;
    d->combiner = combiner;
    d->base = base;
    d->base_count = n;
    base->refcount++;
    d->handle = (MPI_Datatype)d;
    *out = d;
    return MPI_SUCCESS;
}

static void dt_release(struct kumi_dt *d)
{
    if (d->predefined || --d->refcount > 0) return;
    struct kumi_dt *b = d->base;
    d->magic = KUMI_MAGIC_DEAD;
    free(d);
    if (b) dt_release(b);
}

int kumi_mpi_type_contiguous(int count, struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    if (!newtype) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Type_contiguous: argument newtype is NULL"));
    struct kumi_dt *d;
    int rc = dt_new(oldtype, (size_t)count, MPI_COMBINER_CONTIGUOUS, &d);
    if (rc) return kumi_err_handle(NULL, rc);
    *newtype = d->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_type_dup(struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    if (!newtype) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Type_dup: argument newtype is NULL"));
    struct kumi_dt *d;
    int rc = dt_new(oldtype, 1, MPI_COMBINER_DUP, &d);
    if (rc) return kumi_err_handle(NULL, rc);
    d->basic = oldtype->basic;      /* same type map: predefined ops still apply */
    d->committed = oldtype->committed || oldtype->predefined;
    *newtype = d->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_type_commit(MPI_Datatype *datatype)
{
    struct kumi_dt *d = datatype ? kumi_dt_get(*datatype) : NULL;
    if (!d) return kumi_err_handle(NULL, kumi_chk_bad_datatype("MPI_Type_commit", "datatype", datatype ? *datatype : NULL));
    d->committed = true;
    return MPI_SUCCESS;
}

int kumi_mpi_type_free(MPI_Datatype *datatype)
{
    struct kumi_dt *d = datatype ? kumi_dt_get(*datatype) : NULL;
    if (!d) return kumi_err_handle(NULL, kumi_chk_bad_datatype("MPI_Type_free", "datatype", datatype ? *datatype : NULL));
    if (d->predefined)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_TYPE, "MPI_Type_free: cannot free the predefined datatype %s", d->name));
    dt_release(d);
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}
