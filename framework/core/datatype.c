/* Datatypes: the predefined ones (every named type of the standard ABI),
 * references, the helpers components use, and the queries (size, extent,
 * names).  The layout builder is dt_build.c, the constructors dt_ctor.c,
 * envelope / contents and the Fortran kinds dt_contents.c; the pack engine
 * is dt_pack.c. */
#include "core/core.h"
#include "core/check.h"
#include "core/dt_impl.h"
#include <complex.h>
#include <float.h>
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
static struct dt_leaf leaves[NPREDEF];
/* one element of each predefined type: its segments (pairs: value, int),
 * its reduction segment and its signature */
static struct kumi_dt_seg predef_segs[NPREDEF][2], predef_osegs[NPREDEF];
static struct kumi_dt_run predef_runs[NPREDEF][2];

const struct dt_leaf *kumi_dt_leaf(uint32_t leaf) { return &leaves[leaf < NPREDEF ? leaf : 0]; }

static uint32_t predef_index(MPI_Datatype h)
{
    for (uint32_t i = 0; i < NPREDEF; i++)
        if (predefs[i].h == h) return i;
    return 0;
}

MPI_Datatype kumi_dt_basic_handle(const struct kumi_dt *dt)
{
    if (dt->predefined) return dt->handle;
    if (dt->basic_elem == KUMI_B_NONE) return MPI_DATATYPE_NULL;
    for (uint32_t i = 0; i < NPREDEF; i++)
        if (predefs[i].basic == dt->basic_elem) return predefs[i].h;
    return MPI_DATATYPE_NULL;
}

/* external32 class and size of a non-pair predefined type (MPI 4.1 sec. 15.5.2) */
static void leaf_init(struct dt_leaf *l, const struct predef *p)
{
    l->nsize = p->size;
    l->xsize = p->size;
    l->comp = p->size;
    switch (p->basic) {
    case KUMI_B_CHAR: case KUMI_B_SCHAR: case KUMI_B_UCHAR: case KUMI_B_BYTE: case KUMI_B_PACKED:
    case KUMI_B_FCHARACTER: case KUMI_B_INT8: case KUMI_B_UINT8: case KUMI_B_BOOL:
        l->cls = DT_X_RAW; break;
    case KUMI_B_WCHAR: l->cls = DT_X_UINT; l->xsize = 2; break;
    case KUMI_B_LONG: l->cls = DT_X_INT; l->xsize = 4; break;
    case KUMI_B_ULONG: l->cls = DT_X_UINT; l->xsize = 4; break;
    case KUMI_B_USHORT: case KUMI_B_UINT: case KUMI_B_ULLONG: case KUMI_B_UINT16: case KUMI_B_UINT32:
    case KUMI_B_UINT64:
        l->cls = DT_X_UINT; break;
    case KUMI_B_AINT: case KUMI_B_COUNT: case KUMI_B_OFFSET:
        l->cls = DT_X_INT; l->xsize = 8; break;
    case KUMI_B_FLOAT: case KUMI_B_DOUBLE: case KUMI_B_FREAL: case KUMI_B_FDOUBLE:
        l->cls = DT_X_FLT; break;
    case KUMI_B_LDOUBLE:
        l->cls = sizeof(long double) == 16 && LDBL_MANT_DIG == 64 ? DT_X_LDBL : DT_X_FLT;
        l->xsize = 16; break;
    case KUMI_B_CFLOAT: case KUMI_B_CDOUBLE: case KUMI_B_FCOMPLEX: case KUMI_B_FDCOMPLEX:
        l->cls = DT_X_FLT; l->comp = p->size / 2; break;
    case KUMI_B_CLDOUBLE:
        l->cls = sizeof(long double) == 16 && LDBL_MANT_DIG == 64 ? DT_X_LDBL : DT_X_FLT;
        l->comp = 16; l->xsize = 32; break;
    case KUMI_B_NONE:               /* REAL2, REAL16, COMPLEX4, COMPLEX32, INTEGER16 */
        if (p->h == MPI_INTEGER16) l->cls = DT_X_INT;
        else { l->cls = DT_X_FLT; if (p->h == MPI_COMPLEX4 || p->h == MPI_COMPLEX32) l->comp = p->size / 2; }
        break;
    default:                        /* signed integers, Fortran LOGICAL* / INTEGER */
        l->cls = DT_X_INT; break;
    }
}

static size_t align_of(const struct predef *p)
{
    switch (p->basic) {
    case KUMI_B_CFLOAT: case KUMI_B_CDOUBLE: case KUMI_B_CLDOUBLE: case KUMI_B_FCOMPLEX:
    case KUMI_B_FDCOMPLEX:
        return p->size / 2;
    case KUMI_B_FLOAT_INT: return _Alignof(struct pair_float_int);
    case KUMI_B_DOUBLE_INT: return _Alignof(struct pair_double_int);
    case KUMI_B_LONG_INT: return _Alignof(struct pair_long_int);
    case KUMI_B_SHORT_INT: return _Alignof(struct pair_short_int);
    case KUMI_B_LDOUBLE_INT: return _Alignof(struct pair_ldouble_int);
    case KUMI_B_2INT: case KUMI_B_2REAL: case KUMI_B_2INTEGER: return 4;
    case KUMI_B_2DOUBLE: return 8;
    default: break;
    }
    if (p->h == MPI_COMPLEX4 || p->h == MPI_COMPLEX32) return p->size / 2;
    size_t a = 1;
    while (a < p->size && a < 16 && p->size % (a * 2) == 0) a *= 2;
    return a;
}

void kumi_dt_init(void)
{
    for (size_t i = 0; i < NPREDEF; i++) {
        const struct predef *p = &predefs[i];
        struct kumi_dt *d = &predef_obj[i];
        memset(d, 0, sizeof *d);
        d->magic = KUMI_MAGIC_DT;
        d->refcount = 1;
        d->basic = p->basic;
        d->basic_elem = p->basic;
        d->size = p->size;
        d->lb = 0;
        d->extent = (MPI_Aint)p->extent;
        d->true_lb = 0;
        d->true_extent = (MPI_Aint)p->extent;
        d->contig = p->size == p->extent;
        d->predefined = true;
        d->committed = true;
        d->handle = p->h;
        d->name = p->name;
        d->combiner = MPI_COMBINER_NAMED;
        d->align = align_of(p);
        pair_layout[i].ioff = p->ioff;
        pair_layout[i].vsize = p->vsize;
        leaf_init(&leaves[i], p);
        kumi_predef[(uintptr_t)p->h] = d;
    }
    /* layouts and signatures (pairs need the leaves of their parts) */
    for (size_t i = 0; i < NPREDEF; i++) {
        const struct predef *p = &predefs[i];
        struct kumi_dt *d = &predef_obj[i];
        predef_osegs[i] = (struct kumi_dt_seg){ 0, p->extent, 1, 0 };
        d->osegs = &predef_osegs[i];
        d->nosegs = 1;
        uint32_t v = 0, n = 1;
        switch (p->basic) {
        case KUMI_B_FLOAT_INT: v = predef_index(MPI_FLOAT); break;
        case KUMI_B_DOUBLE_INT: v = predef_index(MPI_DOUBLE); break;
        case KUMI_B_LONG_INT: v = predef_index(MPI_LONG); break;
        case KUMI_B_SHORT_INT: v = predef_index(MPI_SHORT); break;
        case KUMI_B_LDOUBLE_INT: v = predef_index(MPI_LONG_DOUBLE); break;
        case KUMI_B_2INT: v = predef_index(MPI_INT); n = 2; break;
        case KUMI_B_2REAL: v = predef_index(MPI_REAL); n = 2; break;
        case KUMI_B_2DOUBLE: v = predef_index(MPI_DOUBLE_PRECISION); n = 2; break;
        case KUMI_B_2INTEGER: v = predef_index(MPI_INTEGER); n = 2; break;
        default: v = (uint32_t)i; break;
        }
        d->segs = predef_segs[i];
        d->runs = predef_runs[i];
        if (p->vsize) {
            predef_segs[i][0] = (struct kumi_dt_seg){ 0, p->vsize, 1, 0 };
            predef_segs[i][1] = (struct kumi_dt_seg){ (MPI_Aint)p->ioff, sizeof(int), 1, 0 };
            d->nsegs = 2;
            uint32_t ii = predef_index(MPI_INT);
            predef_runs[i][0] = (struct kumi_dt_run){ v, (uint32_t)p->vsize, 1 };
            predef_runs[i][1] = (struct kumi_dt_run){ ii, sizeof(int), 1 };
            d->nruns = 2;
            d->xsize = leaves[v].xsize + leaves[ii].xsize;
        } else {
            predef_segs[i][0] = (struct kumi_dt_seg){ 0, p->size, 1, 0 };
            d->nsegs = 1;
            predef_runs[i][0] = (struct kumi_dt_run){ v, (uint32_t)(p->size / n), n };
            d->nruns = 1;
            d->xsize = n * leaves[v].xsize;
        }
        d->nelem = 0;
        for (size_t k = 0; k < d->nruns; k++) d->nelem += d->runs[k].n;
    }
}

const char *kumi_dt_name(const struct kumi_dt *dt)
{
    return dt->name ? dt->name : "(derived datatype)";
}

/* ---------------------------------------------------- references */
void kumi_dt_retain(struct kumi_dt *dt)
{
    if (dt && !dt->predefined) dt->refcount++;
}

void kumi_dt_release(struct kumi_dt *d)
{
    if (!d || d->predefined || --d->refcount > 0) return;
    for (int i = 0; i < d->ntypes; i++) kumi_dt_release(d->types[i]);
    if (d->osegs != d->segs) free(d->osegs);
    free(d->segs);
    free(d->runs);
    free(d->ints);
    free(d->addrs);
    free(d->lcounts);
    free(d->types);
    free((char *)d->name);
    d->magic = KUMI_MAGIC_DEAD;
    free(d);
}

/* ------------------------------------------- helpers for components */
static struct kumi_dt *dt_or_die(MPI_Datatype h)
{
    struct kumi_dt *d = kumi_dt_get(h);
    if (!d) kumi_err_fatal("internal: invalid datatype handle %p passed to a component helper", (void *)h);
    return d;
}

size_t kumi_dt_size(MPI_Datatype dt) { return dt_or_die(dt)->size; }

/* Size of predefined datatype h from the table (also before MPI_Init), 0 if none. */
size_t kumi_dt_predefined_size(MPI_Datatype h)
{
    for (size_t i = 0; i < NPREDEF; i++)
        if (predefs[i].h == h) return predefs[i].size;
    return 0;
}
int kumi_dt_contiguous(MPI_Datatype dt) { return dt_or_die(dt)->contig; }

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
    if (s->contig) {
        kumi_dt_unpack_range(r, (const char *)sbuf + s->true_lb, rcount, 0, sbytes, rbuf);
        return rc;
    }
    if (r->contig) {
        kumi_dt_pack_range(s, sbuf, scount, 0, sbytes, (char *)rbuf + r->true_lb);
        return rc;
    }
    char *tmp = malloc(sbytes);
    if (!tmp) return kumi_error(MPI_ERR_NO_MEM, "out of memory copying %zu bytes", sbytes);
    kumi_dt_pack_range(s, sbuf, scount, 0, sbytes, tmp);
    kumi_dt_unpack_range(r, tmp, rcount, 0, sbytes, rbuf);
    free(tmp);
    return rc;
}

/* ------------------------------------------------------- MPI queries */

int kumi_mpi_type_size(struct kumi_dt *datatype, int *size)
{
    if (!size) return DT_NULLARG("MPI_Type_size", "size");
    *size = datatype->size > (size_t)INT32_MAX ? MPI_UNDEFINED : (int)datatype->size;
    return MPI_SUCCESS;
}

int kumi_mpi_type_size_c(struct kumi_dt *datatype, MPI_Count *size)
{
    if (!size) return DT_NULLARG("MPI_Type_size_c", "size");
    *size = (MPI_Count)datatype->size;
    return MPI_SUCCESS;
}

int kumi_mpi_type_size_x(struct kumi_dt *datatype, MPI_Count *size)
{
    if (!size) return DT_NULLARG("MPI_Type_size_x", "size");
    *size = (MPI_Count)datatype->size;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_extent(struct kumi_dt *datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    if (!lb) return DT_NULLARG("MPI_Type_get_extent", "lb");
    if (!extent) return DT_NULLARG("MPI_Type_get_extent", "extent");
    *lb = datatype->lb;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_extent_c(struct kumi_dt *datatype, MPI_Count *lb, MPI_Count *extent)
{
    if (!lb) return DT_NULLARG("MPI_Type_get_extent_c", "lb");
    if (!extent) return DT_NULLARG("MPI_Type_get_extent_c", "extent");
    *lb = datatype->lb;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_extent_x(struct kumi_dt *datatype, MPI_Count *lb, MPI_Count *extent)
{
    if (!lb) return DT_NULLARG("MPI_Type_get_extent_x", "lb");
    if (!extent) return DT_NULLARG("MPI_Type_get_extent_x", "extent");
    *lb = datatype->lb;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_true_extent(struct kumi_dt *datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    if (!true_lb) return DT_NULLARG("MPI_Type_get_true_extent", "true_lb");
    if (!true_extent) return DT_NULLARG("MPI_Type_get_true_extent", "true_extent");
    *true_lb = datatype->true_lb;
    *true_extent = datatype->true_extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_true_extent_c(struct kumi_dt *datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    if (!true_lb) return DT_NULLARG("MPI_Type_get_true_extent_c", "true_lb");
    if (!true_extent) return DT_NULLARG("MPI_Type_get_true_extent_c", "true_extent");
    *true_lb = datatype->true_lb;
    *true_extent = datatype->true_extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_true_extent_x(struct kumi_dt *datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    if (!true_lb) return DT_NULLARG("MPI_Type_get_true_extent_x", "true_lb");
    if (!true_extent) return DT_NULLARG("MPI_Type_get_true_extent_x", "true_extent");
    *true_lb = datatype->true_lb;
    *true_extent = datatype->true_extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_name(struct kumi_dt *datatype, char *type_name, int *resultlen)
{
    if (!type_name) return DT_NULLARG("MPI_Type_get_name", "type_name");
    if (!resultlen) return DT_NULLARG("MPI_Type_get_name", "resultlen");
    /* MPI 4.1 sec. 7.8: the null handle is predefined and has its name */
    const char *n = !datatype ? "MPI_DATATYPE_NULL" : datatype->name ? datatype->name : "";
    snprintf(type_name, MPI_MAX_OBJECT_NAME, "%s", n);
    *resultlen = (int)strlen(type_name);
    return MPI_SUCCESS;
}

/* Names a user sets on the standard's predefined datatypes (whose own names
 * are static strings), by handle value. */
static char *predef_user_name[KUMI_PREDEF_MAX];

int kumi_mpi_type_set_name(struct kumi_dt *datatype, const char *type_name)
{
    if (!type_name) return DT_NULLARG("MPI_Type_set_name", "type_name");
    /* longer names are truncated to MPI_MAX_OBJECT_NAME-1 characters (MPI 4.1 sec. 7.8) */
    size_t n = strnlen(type_name, MPI_MAX_OBJECT_NAME - 1);
    char *c = malloc(n + 1);
    if (!c) return kumi_err_handle(NULL, kumi_error(MPI_ERR_NO_MEM, "MPI_Type_set_name: out of memory"));
    memcpy(c, type_name, n);
    c[n] = 0;
    uintptr_t h = (uintptr_t)datatype->handle;
    if (datatype->predefined && h < KUMI_PREDEF_MAX) {
        free(predef_user_name[h]);
        predef_user_name[h] = c;
    } else {
        /* derived and MPI_Type_create_f90_* types: the name is theirs (or NULL) */
        free((char *)datatype->name);
    }
    datatype->name = c;
    return MPI_SUCCESS;
}

int kumi_mpi_get_address(const void *location, MPI_Aint *address)
{
    if (!address) return DT_NULLARG("MPI_Get_address", "address");
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}

MPI_Aint kumi_mpi_aint_add(MPI_Aint base, MPI_Aint disp) { return base + disp; }
MPI_Aint kumi_mpi_aint_diff(MPI_Aint addr1, MPI_Aint addr2) { return addr1 - addr2; }
