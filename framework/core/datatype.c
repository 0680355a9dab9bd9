/* Datatypes: the predefined ones (every named type of the standard ABI), the
 * helpers components use, the queries, every constructor (each one flattens
 * its type into the pack engine's segments, see dt_pack.c), envelope and
 * contents, and the Fortran kinds. */
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

/* ---------------------------------------------------- layout builder */
struct bld {
    struct kumi_dt_seg *segs, *osegs;
    size_t nsegs, capsegs, nosegs, caposegs;
    struct kumi_dt_run *runs;
    size_t nruns, capruns;
    bool any, tany, be_set, mixed, explicit_bounds;
    MPI_Aint lb, ub, tlb, tub;
    size_t size, nelem, xsize, align;
    enum kumi_basic be;
    int err;
};

static void seg_emit(struct bld *b, struct kumi_dt_seg **list, size_t *n, size_t *cap, struct kumi_dt_seg s)
{
    if (s.len == 0 || s.count == 0) return;
    if (s.count == 1) s.stride = 0;
    if (*n) {
        struct kumi_dt_seg *l = &(*list)[*n - 1];
        if (l->count == 1 && s.count == 1 && l->off + (MPI_Aint)l->len == s.off) { l->len += s.len; return; }
        if (s.len == l->len && s.count == 1 && l->count > 1 && s.off == l->off + (MPI_Aint)l->count * l->stride) {
            l->count++; return;
        }
        if (s.len == l->len && s.count == 1 && l->count == 1) {
            l->stride = s.off - l->off; l->count = 2; return;
        }
        if (s.len == l->len && s.count > 1 && l->count > 1 && s.stride == l->stride &&
            s.off == l->off + (MPI_Aint)l->count * l->stride) {
            l->count += s.count; return;
        }
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        struct kumi_dt_seg *t = realloc(*list, nc * sizeof *t);
        if (!t) { b->err = 1; return; }
        *list = t; *cap = nc;
    }
    (*list)[(*n)++] = s;
}

struct lvl { size_t n; MPI_Aint s; };

/* Blocks of len bytes at off + sum(i_k * lv[k].s), innermost level first. */
static void pattern_emit(struct bld *b, struct kumi_dt_seg **list, size_t *n, size_t *cap, MPI_Aint off,
                         size_t len, struct lvl *lv, int nl)
{
    int i, j;
    for (i = j = 0; i < nl; i++) if (lv[i].n != 1) lv[j++] = lv[i];
    nl = j;
    for (;;) {
        if (nl && lv[0].s == (MPI_Aint)len) {
            len *= lv[0].n;
            memmove(lv, lv + 1, (size_t)(nl - 1) * sizeof *lv); nl--;
            continue;
        }
        if (nl >= 2 && lv[1].s == (MPI_Aint)lv[0].n * lv[0].s) {
            lv[0].n *= lv[1].n;
            memmove(lv + 1, lv + 2, (size_t)(nl - 2) * sizeof *lv); nl--;
            continue;
        }
        break;
    }
    if (nl == 0) { seg_emit(b, list, n, cap, (struct kumi_dt_seg){ off, len, 1, 0 }); return; }
    if (nl == 1) { seg_emit(b, list, n, cap, (struct kumi_dt_seg){ off, len, lv[0].n, lv[0].s }); return; }
    if (nl == 2) {
        for (size_t a = 0; a < lv[1].n && !b->err; a++)
            seg_emit(b, list, n, cap, (struct kumi_dt_seg){ off + (MPI_Aint)a * lv[1].s, len, lv[0].n, lv[0].s });
        return;
    }
    for (size_t c = 0; c < lv[2].n && !b->err; c++)
        for (size_t a = 0; a < lv[1].n && !b->err; a++)
            seg_emit(b, list, n, cap, (struct kumi_dt_seg){ off + (MPI_Aint)c * lv[2].s + (MPI_Aint)a * lv[1].s,
                                                          len, lv[0].n, lv[0].s });
}

static void compose(struct bld *b, struct kumi_dt_seg **list, size_t *n, size_t *cap,
                    const struct kumi_dt_seg *cs, size_t nc, MPI_Aint disp, size_t bl, MPI_Aint ext,
                    size_t nrep, MPI_Aint rstride)
{
    if (nc == 1) {
        struct lvl lv[3] = { { cs[0].count, cs[0].stride }, { bl, ext }, { nrep, rstride } };
        pattern_emit(b, list, n, cap, disp + cs[0].off, cs[0].len, lv, 3);
        return;
    }
    for (size_t r = 0; r < nrep && !b->err; r++)
        for (size_t j = 0; j < bl && !b->err; j++)
            for (size_t k = 0; k < nc; k++) {
                struct kumi_dt_seg s = cs[k];
                s.off += disp + (MPI_Aint)r * rstride + (MPI_Aint)j * ext;
                seg_emit(b, list, n, cap, s);
            }
}

static void run_emit(struct bld *b, struct kumi_dt_run r)
{
    if (!r.n) return;
    if (b->nruns && b->runs[b->nruns - 1].leaf == r.leaf) { b->runs[b->nruns - 1].n += r.n; return; }
    if (b->nruns == b->capruns) {
        size_t nc = b->capruns ? b->capruns * 2 : 4;
        struct kumi_dt_run *t = realloc(b->runs, nc * sizeof *t);
        if (!t) { b->err = 1; return; }
        b->runs = t; b->capruns = nc;
    }
    b->runs[b->nruns++] = r;
}

static inline MPI_Aint amin(MPI_Aint a, MPI_Aint b) { return a < b ? a : b; }
static inline MPI_Aint amax(MPI_Aint a, MPI_Aint b) { return a > b ? a : b; }

/* nrep times (at disp + r * rstride) a block of bl consecutive children. */
static void bld_add(struct bld *b, const struct kumi_dt *c, MPI_Aint disp, size_t bl, size_t nrep, MPI_Aint rstride)
{
    if (!bl || !nrep || b->err) return;
    MPI_Aint ext = c->extent;
    MPI_Aint r0 = amin(0, (MPI_Aint)(nrep - 1) * rstride), r1 = amax(0, (MPI_Aint)(nrep - 1) * rstride);
    MPI_Aint j0 = amin(0, (MPI_Aint)(bl - 1) * ext), j1 = amax(0, (MPI_Aint)(bl - 1) * ext);
    MPI_Aint clo = amin(c->lb, c->lb + ext), chi = amax(c->lb, c->lb + ext);
    MPI_Aint lo = disp + r0 + j0 + clo, hi = disp + r1 + j1 + chi;
    if (!b->any) { b->lb = lo; b->ub = hi; b->any = true; }
    else { b->lb = amin(b->lb, lo); b->ub = amax(b->ub, hi); }
    if (c->size) {
        MPI_Aint tlo = disp + r0 + j0 + c->true_lb, thi = disp + r1 + j1 + c->true_lb + c->true_extent;
        if (!b->tany) { b->tlb = tlo; b->tub = thi; b->tany = true; }
        else { b->tlb = amin(b->tlb, tlo); b->tub = amax(b->tub, thi); }
        if (!b->be_set) { b->be = c->basic_elem; b->be_set = true; }
        else if (b->be != c->basic_elem) b->mixed = true;
    }
    b->size += bl * nrep * c->size;
    b->nelem += bl * nrep * c->nelem;
    b->xsize += bl * nrep * c->xsize;
    if (c->align > b->align) b->align = c->align;
    if (c->explicit_bounds) b->explicit_bounds = true;
    if (!c->size) return;
    compose(b, &b->segs, &b->nsegs, &b->capsegs, c->segs, c->nsegs, disp, bl, ext, nrep, rstride);
    compose(b, &b->osegs, &b->nosegs, &b->caposegs, c->osegs, c->nosegs, disp, bl, ext, nrep, rstride);
    if (c->nruns == 1) {
        struct kumi_dt_run r = c->runs[0];
        r.n *= bl * nrep;
        run_emit(b, r);
    } else {
        for (size_t i = 0; i < bl * nrep && !b->err; i++)
            for (size_t k = 0; k < c->nruns; k++) run_emit(b, c->runs[k]);
    }
}

static void bld_free(struct bld *b)
{
    free(b->segs); free(b->osegs); free(b->runs);
    memset(b, 0, sizeof *b);
}

static bool is_pair(enum kumi_basic k) { return k >= KUMI_B_FLOAT_INT && k <= KUMI_B_2INTEGER; }

/* A new derived datatype from the builder (which it empties); epsilon: round
 * the extent up to the alignment (MPI_Type_create_struct). */
static int bld_finish(struct bld *b, int combiner, bool epsilon, struct kumi_dt **out)
{
    if (b->err) { bld_free(b); return kumi_error(MPI_ERR_NO_MEM, "out of memory creating a datatype"); }
    struct kumi_dt *d = calloc(1, sizeof *d);
    if (!d) { bld_free(b); return kumi_error(MPI_ERR_NO_MEM, "out of memory creating a datatype"); }
    d->magic = KUMI_MAGIC_DT;
    d->refcount = 1;
    d->basic = KUMI_B_NONE;
    d->size = b->size;
    d->nelem = b->nelem;
    d->xsize = b->xsize;
    d->align = b->align ? b->align : 1;
    d->explicit_bounds = b->explicit_bounds;
    d->lb = b->any ? b->lb : 0;
    d->extent = b->any ? b->ub - b->lb : 0;
    if (epsilon && !b->explicit_bounds && d->align > 1 && d->extent % (MPI_Aint)d->align)
        d->extent += (MPI_Aint)d->align - d->extent % (MPI_Aint)d->align;
    d->true_lb = b->tany ? b->tlb : 0;
    d->true_extent = b->tany ? b->tub - b->tlb : 0;
    d->basic_elem = b->be_set && !b->mixed ? b->be : KUMI_B_NONE;
    d->segs = b->segs; d->nsegs = b->nsegs;
    d->runs = b->runs; d->nruns = b->nruns;
    if (is_pair(d->basic_elem)) { d->osegs = b->osegs; d->nosegs = b->nosegs; }
    else { free(b->osegs); d->osegs = d->segs; d->nosegs = d->nsegs; }
    d->contig = d->size == 0 ||
        (d->nsegs == 1 && d->segs[0].count == 1 && d->segs[0].len == d->size &&
         d->segs[0].off == d->true_lb && d->extent == (MPI_Aint)d->size);
    d->combiner = combiner;
    d->handle = (MPI_Datatype)d;
    memset(b, 0, sizeof *b);
    *out = d;
    return MPI_SUCCESS;
}

/* Constructor arguments for get_envelope / get_contents; takes references on types. */
static int dt_set_contents(struct kumi_dt *d, int ni, const int *ints, int na, const MPI_Aint *addrs,
                           int nl, const MPI_Count *lc, int nt, struct kumi_dt *const *types)
{
    d->ints = ni ? malloc(sizeof(int) * (size_t)ni) : NULL;
    d->addrs = na ? malloc(sizeof(MPI_Aint) * (size_t)na) : NULL;
    d->lcounts = nl ? malloc(sizeof(MPI_Count) * (size_t)nl) : NULL;
    d->types = nt ? malloc(sizeof(struct kumi_dt *) * (size_t)nt) : NULL;
    if ((ni && !d->ints) || (na && !d->addrs) || (nl && !d->lcounts) || (nt && !d->types)) {
        kumi_dt_release(d);
        return kumi_error(MPI_ERR_NO_MEM, "out of memory creating a datatype");
    }
    d->nints = ni; d->naddrs = na; d->nlarge = nl; d->ntypes = nt;
    if (ni) memcpy(d->ints, ints, sizeof(int) * (size_t)ni);
    if (na) memcpy(d->addrs, addrs, sizeof(MPI_Aint) * (size_t)na);
    if (nl) memcpy(d->lcounts, lc, sizeof(MPI_Count) * (size_t)nl);
    for (int i = 0; i < nt; i++) { d->types[i] = types[i]; kumi_dt_retain(types[i]); }
    d->base = nt ? types[0] : NULL;
    d->large = nl > 0;
    return MPI_SUCCESS;
}

/* ------------------------------------------- helpers for components */
static struct kumi_dt *dt_or_die(MPI_Datatype h)
{
    struct kumi_dt *d = kumi_dt_get(h);
    if (!d) kumi_err_fatal("internal: invalid datatype handle %p passed to a component helper", (void *)h);
    return d;
}

size_t kumi_dt_size(MPI_Datatype dt) { return dt_or_die(dt)->size; }
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
#define NULLARG(fn, arg) kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, fn ": argument " arg " is NULL"))

int kumi_mpi_type_size(struct kumi_dt *datatype, int *size)
{
    if (!size) return NULLARG("MPI_Type_size", "size");
    *size = datatype->size > (size_t)INT32_MAX ? MPI_UNDEFINED : (int)datatype->size;
    return MPI_SUCCESS;
}

int kumi_mpi_type_size_c(struct kumi_dt *datatype, MPI_Count *size)
{
    if (!size) return NULLARG("MPI_Type_size_c", "size");
    *size = (MPI_Count)datatype->size;
    return MPI_SUCCESS;
}

int kumi_mpi_type_size_x(struct kumi_dt *datatype, MPI_Count *size)
{
    if (!size) return NULLARG("MPI_Type_size_x", "size");
    *size = (MPI_Count)datatype->size;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_extent(struct kumi_dt *datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    if (!lb) return NULLARG("MPI_Type_get_extent", "lb");
    if (!extent) return NULLARG("MPI_Type_get_extent", "extent");
    *lb = datatype->lb;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_extent_c(struct kumi_dt *datatype, MPI_Count *lb, MPI_Count *extent)
{
    if (!lb) return NULLARG("MPI_Type_get_extent_c", "lb");
    if (!extent) return NULLARG("MPI_Type_get_extent_c", "extent");
    *lb = datatype->lb;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_extent_x(struct kumi_dt *datatype, MPI_Count *lb, MPI_Count *extent)
{
    if (!lb) return NULLARG("MPI_Type_get_extent_x", "lb");
    if (!extent) return NULLARG("MPI_Type_get_extent_x", "extent");
    *lb = datatype->lb;
    *extent = datatype->extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_true_extent(struct kumi_dt *datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    if (!true_lb) return NULLARG("MPI_Type_get_true_extent", "true_lb");
    if (!true_extent) return NULLARG("MPI_Type_get_true_extent", "true_extent");
    *true_lb = datatype->true_lb;
    *true_extent = datatype->true_extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_true_extent_c(struct kumi_dt *datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    if (!true_lb) return NULLARG("MPI_Type_get_true_extent_c", "true_lb");
    if (!true_extent) return NULLARG("MPI_Type_get_true_extent_c", "true_extent");
    *true_lb = datatype->true_lb;
    *true_extent = datatype->true_extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_true_extent_x(struct kumi_dt *datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    if (!true_lb) return NULLARG("MPI_Type_get_true_extent_x", "true_lb");
    if (!true_extent) return NULLARG("MPI_Type_get_true_extent_x", "true_extent");
    *true_lb = datatype->true_lb;
    *true_extent = datatype->true_extent;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_name(struct kumi_dt *datatype, char *type_name, int *resultlen)
{
    if (!type_name) return NULLARG("MPI_Type_get_name", "type_name");
    if (!resultlen) return NULLARG("MPI_Type_get_name", "resultlen");
    const char *n = datatype->name ? datatype->name : "";
    snprintf(type_name, MPI_MAX_OBJECT_NAME, "%s", n);
    *resultlen = (int)strlen(type_name);
    return MPI_SUCCESS;
}

/* Names a user sets on the standard's predefined datatypes (whose own names
 * are static strings), by handle value. */
static char *predef_user_name[KUMI_PREDEF_MAX];

int kumi_mpi_type_set_name(struct kumi_dt *datatype, const char *type_name)
{
    if (!type_name) return NULLARG("MPI_Type_set_name", "type_name");
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
    if (!address) return NULLARG("MPI_Get_address", "address");
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}

MPI_Aint kumi_mpi_aint_add(MPI_Aint base, MPI_Aint disp) { return base + disp; }
MPI_Aint kumi_mpi_aint_diff(MPI_Aint addr1, MPI_Aint addr2) { return addr1 - addr2; }

/* ------------------------------------------------------ constructors */
#define ERR(cls, ...) kumi_err_handle(NULL, kumi_error(cls, __VA_ARGS__))

static int dt_out(const char *fn, int rc, struct kumi_dt *d, MPI_Datatype *newtype)
{
    if (rc) return kumi_err_handle(NULL, rc);
    (void)fn;
    *newtype = d->handle;
    return MPI_SUCCESS;
}

static int contiguous(MPI_Count count, struct kumi_dt *old, bool large, struct kumi_dt **out)
{
    struct bld b = { 0 };
    bld_add(&b, old, 0, (size_t)count, 1, 0);
    int rc = bld_finish(&b, MPI_COMBINER_CONTIGUOUS, false, out);
    if (rc) return rc;
    (*out)->base_count = (size_t)count;
    int ic = (int)count;
    return large ? dt_set_contents(*out, 0, NULL, 0, NULL, 1, &count, 1, &old)
                 : dt_set_contents(*out, 1, &ic, 0, NULL, 0, NULL, 1, &old);
}

int kumi_mpi_type_contiguous(int count, struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    if (!newtype) return NULLARG("MPI_Type_contiguous", "newtype");
    struct kumi_dt *d = NULL;
    int rc = contiguous(count, oldtype, false, &d);
    return dt_out("MPI_Type_contiguous", rc, d, newtype);
}

int kumi_mpi_type_contiguous_c(MPI_Count count, struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    if (!newtype) return NULLARG("MPI_Type_contiguous_c", "newtype");
    struct kumi_dt *d = NULL;
    int rc = contiguous(count, oldtype, true, &d);
    return dt_out("MPI_Type_contiguous_c", rc, d, newtype);
}

/* vector (stride in elements) and hvector (stride in bytes) */
int kumi_dt_vector(const char *fn, MPI_Count count, MPI_Count bl, MPI_Count stride, bool bytes, struct kumi_dt *old,
                   bool large, MPI_Datatype *newtype)
{
    if (!newtype) return ERR(MPI_ERR_ARG, "%s: argument newtype is NULL", fn);
    if (count < 0) return ERR(MPI_ERR_COUNT, "%s: invalid count %lld", fn, (long long)count);
    if (bl < 0) return ERR(MPI_ERR_ARG, "%s: invalid blocklength %lld", fn, (long long)bl);
    struct bld b = { 0 };
    MPI_Aint s = bytes ? (MPI_Aint)stride : (MPI_Aint)stride * old->extent;
    bld_add(&b, old, 0, (size_t)bl, (size_t)count, s);
    struct kumi_dt *d;
    int rc = bld_finish(&b, bytes ? MPI_COMBINER_HVECTOR : MPI_COMBINER_VECTOR, false, &d);
    if (rc) return kumi_err_handle(NULL, rc);
    MPI_Count lc[3] = { count, bl, stride };
    int ic[3] = { (int)count, (int)bl, (int)stride };
    MPI_Aint a = (MPI_Aint)stride;
    if (large) rc = dt_set_contents(d, 0, NULL, 0, NULL, 3, lc, 1, &old);
    else if (bytes) rc = dt_set_contents(d, 2, ic, 1, &a, 0, NULL, 1, &old);
    else rc = dt_set_contents(d, 3, ic, 0, NULL, 0, NULL, 1, &old);
    return dt_out(fn, rc, d, newtype);
}

/* indexed family: bl[i] (or one blocklength), displacements in elements or bytes,
 * one old type or (struct) one per block.  Arrays come as MPI_Count / MPI_Aint. */
enum ixkind { IX_INDEXED, IX_HINDEXED, IX_INDEXED_BLOCK, IX_HINDEXED_BLOCK, IX_STRUCT };
static const int ix_combiner[] = { MPI_COMBINER_INDEXED, MPI_COMBINER_HINDEXED, MPI_COMBINER_INDEXED_BLOCK,
                                   MPI_COMBINER_HINDEXED_BLOCK, MPI_COMBINER_STRUCT };

static int indexed(const char *fn, enum ixkind k, MPI_Count count, const MPI_Count *bls, MPI_Count bl1,
                   const MPI_Count *disps, struct kumi_dt *old, struct kumi_dt **types, bool large,
                   MPI_Datatype *newtype)
{
    bool block = k == IX_INDEXED_BLOCK || k == IX_HINDEXED_BLOCK;
    bool bytes = k == IX_HINDEXED || k == IX_HINDEXED_BLOCK || k == IX_STRUCT;
    struct bld b = { 0 };
    for (MPI_Count i = 0; i < count; i++) {
        MPI_Count bl = block ? bl1 : bls[i];
        if (bl < 0) { bld_free(&b); return ERR(MPI_ERR_ARG, "%s: invalid blocklength %lld in entry %lld", fn,
                                               (long long)bl, (long long)i); }
        struct kumi_dt *t = types ? types[i] : old;
        MPI_Aint disp = bytes ? (MPI_Aint)disps[i] : (MPI_Aint)disps[i] * t->extent;
        bld_add(&b, t, disp, (size_t)bl, 1, 0);
    }
    struct kumi_dt *d;
    int rc = bld_finish(&b, ix_combiner[k], k == IX_STRUCT, &d);
    if (rc) return kumi_err_handle(NULL, rc);
    size_t n = (size_t)count;
    int ni = 0, na = 0, nl = 0, nt = types ? (int)n : 1;
    int *iv = malloc(sizeof(int) * (2 * n + 2));
    MPI_Aint *av = malloc(sizeof(MPI_Aint) * (n + 1));
    MPI_Count *lv = malloc(sizeof(MPI_Count) * (2 * n + 2));
    if (!iv || !av || !lv) { free(iv); free(av); free(lv); kumi_dt_release(d);
                             return ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn); }
    if (large) {
        lv[nl++] = count;
        if (block) lv[nl++] = bl1; else for (size_t i = 0; i < n; i++) lv[nl++] = bls[i];
        for (size_t i = 0; i < n; i++) lv[nl++] = disps[i];
    } else {
        iv[ni++] = (int)count;
        if (block) iv[ni++] = (int)bl1; else for (size_t i = 0; i < n; i++) iv[ni++] = (int)bls[i];
        if (bytes) for (size_t i = 0; i < n; i++) av[na++] = (MPI_Aint)disps[i];
        else for (size_t i = 0; i < n; i++) iv[ni++] = (int)disps[i];
    }
    rc = dt_set_contents(d, ni, iv, na, av, nl, lv, nt, types ? types : &old);
    free(iv); free(av); free(lv);
    return dt_out(fn, rc, d, newtype);
}

/* Copies of the user's arrays as MPI_Count (NULL arrays with count > 0 are errors). */
#define ARR_ARGS(fn, count, nm) \
    if ((count) < 0) return ERR(MPI_ERR_COUNT, fn ": invalid count %lld", (long long)(count)); \
    if ((count) > 0 && !(nm)) return ERR(MPI_ERR_ARG, fn ": argument " #nm " is NULL");

static MPI_Count *to_counts_i(const int *a, MPI_Count n)
{
    MPI_Count *c = malloc(sizeof *c * (size_t)(n ? n : 1));
    if (c) for (MPI_Count i = 0; i < n; i++) c[i] = a[i];
    return c;
}
static MPI_Count *to_counts_a(const MPI_Aint *a, MPI_Count n)
{
    MPI_Count *c = malloc(sizeof *c * (size_t)(n ? n : 1));
    if (c) for (MPI_Count i = 0; i < n; i++) c[i] = a[i];
    return c;
}

#define NEWTYPE_ARG(fn) if (!newtype) return ERR(MPI_ERR_ARG, fn ": argument newtype is NULL");

int kumi_mpi_type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[],
                          struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    NEWTYPE_ARG("MPI_Type_indexed");
    ARR_ARGS("MPI_Type_indexed", count, array_of_blocklengths);
    ARR_ARGS("MPI_Type_indexed", count, array_of_displacements);
    MPI_Count *b = to_counts_i(array_of_blocklengths, count), *d = to_counts_i(array_of_displacements, count);
    int rc = b && d ? indexed("MPI_Type_indexed", IX_INDEXED, count, b, 0, d, oldtype, NULL, false, newtype)
                    : ERR(MPI_ERR_NO_MEM, "MPI_Type_indexed: out of memory");
    free(b); free(d);
    return rc;
}

int kumi_mpi_type_indexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                            const MPI_Count array_of_displacements[], struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    NEWTYPE_ARG("MPI_Type_indexed_c");
    ARR_ARGS("MPI_Type_indexed_c", count, array_of_blocklengths);
    ARR_ARGS("MPI_Type_indexed_c", count, array_of_displacements);
    return indexed("MPI_Type_indexed_c", IX_INDEXED, count, array_of_blocklengths, 0, array_of_displacements,
                   oldtype, NULL, true, newtype);
}

int kumi_mpi_type_create_hindexed(int count, const int array_of_blocklengths[],
                                  const MPI_Aint array_of_displacements[], struct kumi_dt *oldtype,
                                  MPI_Datatype *newtype)
{
    NEWTYPE_ARG("MPI_Type_create_hindexed");
    ARR_ARGS("MPI_Type_create_hindexed", count, array_of_blocklengths);
    ARR_ARGS("MPI_Type_create_hindexed", count, array_of_displacements);
    MPI_Count *b = to_counts_i(array_of_blocklengths, count), *d = to_counts_a(array_of_displacements, count);
    int rc = b && d ? indexed("MPI_Type_create_hindexed", IX_HINDEXED, count, b, 0, d, oldtype, NULL, false, newtype)
                    : ERR(MPI_ERR_NO_MEM, "MPI_Type_create_hindexed: out of memory");
    free(b); free(d);
    return rc;
}

int kumi_mpi_type_create_hindexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                    const MPI_Count array_of_displacements[], struct kumi_dt *oldtype,
                                    MPI_Datatype *newtype)
{
    NEWTYPE_ARG("MPI_Type_create_hindexed_c");
    ARR_ARGS("MPI_Type_create_hindexed_c", count, array_of_blocklengths);
    ARR_ARGS("MPI_Type_create_hindexed_c", count, array_of_displacements);
    return indexed("MPI_Type_create_hindexed_c", IX_HINDEXED, count, array_of_blocklengths, 0,
                   array_of_displacements, oldtype, NULL, true, newtype);
}

int kumi_mpi_type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                       struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    NEWTYPE_ARG("MPI_Type_create_indexed_block");
    ARR_ARGS("MPI_Type_create_indexed_block", count, array_of_displacements);
    MPI_Count *d = to_counts_i(array_of_displacements, count);
    int rc = d ? indexed("MPI_Type_create_indexed_block", IX_INDEXED_BLOCK, count, NULL, blocklength, d, oldtype,
                         NULL, false, newtype)
               : ERR(MPI_ERR_NO_MEM, "MPI_Type_create_indexed_block: out of memory");
    free(d);
    return rc;
}

int kumi_mpi_type_create_indexed_block_c(MPI_Count count, MPI_Count blocklength,
                                         const MPI_Count array_of_displacements[], struct kumi_dt *oldtype,
                                         MPI_Datatype *newtype)
{
    NEWTYPE_ARG("MPI_Type_create_indexed_block_c");
    ARR_ARGS("MPI_Type_create_indexed_block_c", count, array_of_displacements);
    return indexed("MPI_Type_create_indexed_block_c", IX_INDEXED_BLOCK, count, NULL, blocklength,
                   array_of_displacements, oldtype, NULL, true, newtype);
}

int kumi_mpi_type_create_hindexed_block(int count, int blocklength, const MPI_Aint array_of_displacements[],
                                        struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    NEWTYPE_ARG("MPI_Type_create_hindexed_block");
    ARR_ARGS("MPI_Type_create_hindexed_block", count, array_of_displacements);
    MPI_Count *d = to_counts_a(array_of_displacements, count);
    int rc = d ? indexed("MPI_Type_create_hindexed_block", IX_HINDEXED_BLOCK, count, NULL, blocklength, d, oldtype,
                         NULL, false, newtype)
               : ERR(MPI_ERR_NO_MEM, "MPI_Type_create_hindexed_block: out of memory");
    free(d);
    return rc;
}

int kumi_mpi_type_create_hindexed_block_c(MPI_Count count, MPI_Count blocklength,
                                          const MPI_Count array_of_displacements[], struct kumi_dt *oldtype,
                                          MPI_Datatype *newtype)
{
    NEWTYPE_ARG("MPI_Type_create_hindexed_block_c");
    ARR_ARGS("MPI_Type_create_hindexed_block_c", count, array_of_displacements);
    return indexed("MPI_Type_create_hindexed_block_c", IX_HINDEXED_BLOCK, count, NULL, blocklength,
                   array_of_displacements, oldtype, NULL, true, newtype);
}

static int struct_types(const char *fn, MPI_Count count, const MPI_Datatype *h, struct kumi_dt ***out)
{
    struct kumi_dt **t = malloc(sizeof *t * (size_t)(count ? count : 1));
    if (!t) return ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (MPI_Count i = 0; i < count; i++) {
        t[i] = kumi_dt_get(h[i]);
        if (!t[i]) {
            free(t);
            return kumi_err_handle(NULL, h[i] == MPI_DATATYPE_NULL
                ? kumi_error(MPI_ERR_TYPE, "%s: array_of_types[%lld] is MPI_DATATYPE_NULL", fn, (long long)i)
                : kumi_error(MPI_ERR_TYPE, "%s: array_of_types[%lld] is not a valid datatype", fn, (long long)i));
        }
    }
    *out = t;
    return MPI_SUCCESS;
}

int kumi_mpi_type_create_struct(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[],
                                const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    NEWTYPE_ARG("MPI_Type_create_struct");
    ARR_ARGS("MPI_Type_create_struct", count, array_of_blocklengths);
    ARR_ARGS("MPI_Type_create_struct", count, array_of_displacements);
    ARR_ARGS("MPI_Type_create_struct", count, array_of_types);
    struct kumi_dt **t;
    int rc = struct_types("MPI_Type_create_struct", count, array_of_types, &t);
    if (rc) return rc;
    MPI_Count *b = to_counts_i(array_of_blocklengths, count), *d = to_counts_a(array_of_displacements, count);
    rc = b && d ? indexed("MPI_Type_create_struct", IX_STRUCT, count, b, 0, d, NULL, t, false, newtype)
                : ERR(MPI_ERR_NO_MEM, "MPI_Type_create_struct: out of memory");
    free(b); free(d); free(t);
    return rc;
}

int kumi_mpi_type_create_struct_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                  const MPI_Count array_of_displacements[], const MPI_Datatype array_of_types[],
                                  MPI_Datatype *newtype)
{
    NEWTYPE_ARG("MPI_Type_create_struct_c");
    ARR_ARGS("MPI_Type_create_struct_c", count, array_of_blocklengths);
    ARR_ARGS("MPI_Type_create_struct_c", count, array_of_displacements);
    ARR_ARGS("MPI_Type_create_struct_c", count, array_of_types);
    struct kumi_dt **t;
    int rc = struct_types("MPI_Type_create_struct_c", count, array_of_types, &t);
    if (rc) return rc;
    rc = indexed("MPI_Type_create_struct_c", IX_STRUCT, count, array_of_blocklengths, 0, array_of_displacements,
                 NULL, t, true, newtype);
    free(t);
    return rc;
}

/* resized */
static int resized(const char *fn, struct kumi_dt *old, MPI_Aint lb, MPI_Aint extent, bool large,
                   MPI_Datatype *newtype)
{
    if (!newtype) return ERR(MPI_ERR_ARG, "%s: argument newtype is NULL", fn);
    struct bld b = { 0 };
    bld_add(&b, old, 0, 1, 1, 0);
    struct kumi_dt *d;
    int rc = bld_finish(&b, MPI_COMBINER_RESIZED, false, &d);
    if (rc) return kumi_err_handle(NULL, rc);
    d->lb = lb;
    d->extent = extent;
    d->explicit_bounds = true;
    d->contig = d->size == 0 || (d->nsegs == 1 && d->segs[0].count == 1 && d->extent == (MPI_Aint)d->size);
    MPI_Aint a[2] = { lb, extent };
    MPI_Count l[2] = { lb, extent };
    rc = large ? dt_set_contents(d, 0, NULL, 0, NULL, 2, l, 1, &old) : dt_set_contents(d, 0, NULL, 2, a, 0, NULL, 1, &old);
    return dt_out(fn, rc, d, newtype);
}

int kumi_mpi_type_create_resized(struct kumi_dt *oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype)
{
    return resized("MPI_Type_create_resized", oldtype, lb, extent, false, newtype);
}
int kumi_mpi_type_create_resized_c(struct kumi_dt *oldtype, MPI_Count lb, MPI_Count extent, MPI_Datatype *newtype)
{
    return resized("MPI_Type_create_resized_c", oldtype, (MPI_Aint)lb, (MPI_Aint)extent, true, newtype);
}

/* subarray and darray: per dimension, runs (start, len) of local indices;
 * built from the fastest dimension outwards with hindexed blocks of the
 * inner type resized to the dimension's stride; then resized to the whole array. */
struct drun { MPI_Count start, len; };

static int nd_build(int ndims, const MPI_Count *gsizes, struct drun **runs, const int *nruns, int order,
                    struct kumi_dt *old, struct kumi_dt **out)
{
    struct kumi_dt *cur = old;
    kumi_dt_retain(cur);
    MPI_Aint stride = old->extent;
    int rc = MPI_SUCCESS;
    for (int k = 0; k < ndims; k++) {
        int dim = order == MPI_ORDER_C ? ndims - 1 - k : k;
        struct bld b = { 0 };
        /* the inner type with extent = this dimension's element stride */
        struct kumi_dt *inner = cur;
        struct kumi_dt *rz = NULL;
        if (inner->lb != 0 || inner->extent != stride) {
            bld_add(&b, inner, 0, 1, 1, 0);
            rc = bld_finish(&b, MPI_COMBINER_RESIZED, false, &rz);
            if (rc) break;
            rz->lb = 0; rz->extent = stride; rz->explicit_bounds = true;
            inner = rz;
        }
        for (int i = 0; i < nruns[dim]; i++)
            bld_add(&b, inner, (MPI_Aint)runs[dim][i].start * stride, (size_t)runs[dim][i].len, 1, 0);
        struct kumi_dt *nt;
        rc = bld_finish(&b, MPI_COMBINER_HINDEXED, false, &nt);
        if (rz) kumi_dt_release(rz);
        if (rc) break;
        kumi_dt_release(cur);
        cur = nt;
        stride *= (MPI_Aint)gsizes[dim];
    }
    if (rc) { kumi_dt_release(cur); return rc; }
    /* the whole array: lb 0, extent product of sizes * old extent */
    struct bld b = { 0 };
    bld_add(&b, cur, 0, 1, 1, 0);
    kumi_dt_release(cur);
    struct kumi_dt *d;
    rc = bld_finish(&b, 0, false, &d);
    if (rc) return rc;
    d->lb = 0;
    d->extent = stride;
    d->explicit_bounds = true;
    d->contig = d->size == 0 || (d->nsegs == 1 && d->segs[0].count == 1 && d->segs[0].off == 0 &&
                                 d->extent == (MPI_Aint)d->size);
    *out = d;
    return MPI_SUCCESS;
}

static int subarray(const char *fn, int ndims, const MPI_Count *sizes, const MPI_Count *subsizes,
                    const MPI_Count *starts, int order, struct kumi_dt *old, bool large, MPI_Datatype *newtype)
{
    if (!newtype) return ERR(MPI_ERR_ARG, "%s: argument newtype is NULL", fn);
    if (ndims <= 0) return ERR(MPI_ERR_DIMS, "%s: invalid ndims %d", fn, ndims);
    if (!sizes || !subsizes || !starts)
        return ERR(MPI_ERR_ARG, "%s: argument %s is NULL", fn, !sizes ? "array_of_sizes" :
                   !subsizes ? "array_of_subsizes" : "array_of_starts");
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return ERR(MPI_ERR_ARG, "%s: invalid order %d", fn, order);
    for (int i = 0; i < ndims; i++) {
        if (sizes[i] <= 0) return ERR(MPI_ERR_ARG, "%s: array_of_sizes[%d] = %lld must be positive", fn, i, (long long)sizes[i]);
        if (subsizes[i] <= 0 || subsizes[i] > sizes[i])
            return ERR(MPI_ERR_ARG, "%s: array_of_subsizes[%d] = %lld must be in 1..%lld", fn, i,
                       (long long)subsizes[i], (long long)sizes[i]);
        if (starts[i] < 0 || starts[i] > sizes[i] - subsizes[i])
            return ERR(MPI_ERR_ARG, "%s: array_of_starts[%d] = %lld must be in 0..%lld", fn, i,
                       (long long)starts[i], (long long)(sizes[i] - subsizes[i]));
    }
    struct drun *rv = malloc(sizeof *rv * (size_t)ndims);
    struct drun **runs = malloc(sizeof *runs * (size_t)ndims);
    int *nr = malloc(sizeof *nr * (size_t)ndims);
    int rc = MPI_SUCCESS;
    struct kumi_dt *d = NULL;
    if (!rv || !runs || !nr) rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    else {
        for (int i = 0; i < ndims; i++) { rv[i].start = starts[i]; rv[i].len = subsizes[i]; runs[i] = &rv[i]; nr[i] = 1; }
        rc = nd_build(ndims, sizes, runs, nr, order, old, &d);
    }
    free(rv); free(runs); free(nr);
    if (rc) return kumi_err_handle(NULL, rc);
    d->combiner = MPI_COMBINER_SUBARRAY;
    size_t n = (size_t)ndims;
    int *iv = malloc(sizeof(int) * (3 * n + 2));
    MPI_Count *lv = malloc(sizeof(MPI_Count) * 3 * n);
    if (!iv || !lv) { free(iv); free(lv); kumi_dt_release(d); return ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn); }
    if (large) {
        iv[0] = ndims; iv[1] = order;
        for (size_t i = 0; i < n; i++) { lv[i] = sizes[i]; lv[n + i] = subsizes[i]; lv[2 * n + i] = starts[i]; }
        rc = dt_set_contents(d, 2, iv, 0, NULL, 3 * ndims, lv, 1, &old);
    } else {
        iv[0] = ndims;
        for (size_t i = 0; i < n; i++) { iv[1 + i] = (int)sizes[i]; iv[1 + n + i] = (int)subsizes[i];
                                         iv[1 + 2 * n + i] = (int)starts[i]; }
        iv[1 + 3 * n] = order;
        rc = dt_set_contents(d, 3 * ndims + 2, iv, 0, NULL, 0, NULL, 1, &old);
    }
    free(iv); free(lv);
    return dt_out(fn, rc, d, newtype);
}

int kumi_mpi_type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                                  const int array_of_starts[], int order, struct kumi_dt *oldtype,
                                  MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_subarray";
    if (ndims <= 0) return ERR(MPI_ERR_DIMS, "%s: invalid ndims %d", fn, ndims);
    if (!array_of_sizes || !array_of_subsizes || !array_of_starts)
        return ERR(MPI_ERR_ARG, "%s: an array argument is NULL", fn);
    MPI_Count *a = to_counts_i(array_of_sizes, ndims), *b = to_counts_i(array_of_subsizes, ndims),
              *c = to_counts_i(array_of_starts, ndims);
    int rc = a && b && c ? subarray(fn, ndims, a, b, c, order, oldtype, false, newtype)
                         : ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    free(a); free(b); free(c);
    return rc;
}

int kumi_mpi_type_create_subarray_c(int ndims, const MPI_Count array_of_sizes[], const MPI_Count array_of_subsizes[],
                                    const MPI_Count array_of_starts[], int order, struct kumi_dt *oldtype,
                                    MPI_Datatype *newtype)
{
    return subarray("MPI_Type_create_subarray_c", ndims, array_of_sizes, array_of_subsizes, array_of_starts, order,
                    oldtype, true, newtype);
}

static int darray(const char *fn, int size, int rank, int ndims, const MPI_Count *gsizes, const int *distribs,
                  const int *dargs, const int *psizes, int order, struct kumi_dt *old, bool large,
                  MPI_Datatype *newtype)
{
    if (!newtype) return ERR(MPI_ERR_ARG, "%s: argument newtype is NULL", fn);
    if (size <= 0) return ERR(MPI_ERR_ARG, "%s: invalid size %d", fn, size);
    if (rank < 0 || rank >= size) return ERR(MPI_ERR_RANK, "%s: invalid rank %d for size %d", fn, rank, size);
    if (ndims <= 0) return ERR(MPI_ERR_DIMS, "%s: invalid ndims %d", fn, ndims);
    if (!gsizes || !distribs || !dargs || !psizes) return ERR(MPI_ERR_ARG, "%s: an array argument is NULL", fn);
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN) return ERR(MPI_ERR_ARG, "%s: invalid order %d", fn, order);
    long long prod = 1;
    for (int i = 0; i < ndims; i++) {
        if (gsizes[i] <= 0) return ERR(MPI_ERR_ARG, "%s: array_of_gsizes[%d] must be positive", fn, i);
        if (psizes[i] <= 0) return ERR(MPI_ERR_ARG, "%s: array_of_psizes[%d] must be positive", fn, i);
        if (distribs[i] != MPI_DISTRIBUTE_BLOCK && distribs[i] != MPI_DISTRIBUTE_CYCLIC &&
            distribs[i] != MPI_DISTRIBUTE_NONE)
            return ERR(MPI_ERR_ARG, "%s: invalid array_of_distribs[%d] = %d", fn, i, distribs[i]);
        if (distribs[i] == MPI_DISTRIBUTE_NONE && psizes[i] != 1)
            return ERR(MPI_ERR_ARG, "%s: dimension %d is not distributed but array_of_psizes[%d] = %d", fn, i, i, psizes[i]);
        if (dargs[i] != MPI_DISTRIBUTE_DFLT_DARG && dargs[i] <= 0)
            return ERR(MPI_ERR_ARG, "%s: invalid array_of_dargs[%d] = %d", fn, i, dargs[i]);
        if (distribs[i] == MPI_DISTRIBUTE_BLOCK && dargs[i] != MPI_DISTRIBUTE_DFLT_DARG &&
            (long long)dargs[i] * psizes[i] < gsizes[i])
            return ERR(MPI_ERR_ARG, "%s: block size %d times %d processes does not cover %lld elements in dimension %d",
                       fn, dargs[i], psizes[i], (long long)gsizes[i], i);
        prod *= psizes[i];
    }
    if (prod != size) return ERR(MPI_ERR_ARG, "%s: the process grid has %lld processes, size is %d", fn, prod, size);
    /* coordinates of rank in the row-major process grid */
    int *coord = malloc(sizeof(int) * (size_t)ndims), *nr = calloc((size_t)ndims, sizeof(int));
    struct drun **runs = calloc((size_t)ndims, sizeof *runs);
    int rc = MPI_SUCCESS;
    if (!coord || !nr || !runs) { rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); goto out; }
    for (int i = ndims - 1, r = rank; i >= 0; i--) { coord[i] = r % psizes[i]; r /= psizes[i]; }
    for (int i = 0; i < ndims && !rc; i++) {
        MPI_Count g = gsizes[i], p = psizes[i], c = coord[i];
        if (distribs[i] == MPI_DISTRIBUTE_CYCLIC) {
            MPI_Count k = dargs[i] == MPI_DISTRIBUTE_DFLT_DARG ? 1 : dargs[i];
            MPI_Count nb = 0;
            for (MPI_Count s = c * k; s < g; s += p * k) nb++;
            runs[i] = malloc(sizeof **runs * (size_t)(nb ? nb : 1));
            if (!runs[i]) { rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); break; }
            for (MPI_Count s = c * k; s < g; s += p * k) {
                runs[i][nr[i]].start = s;
                runs[i][nr[i]].len = s + k <= g ? k : g - s;
                nr[i]++;
            }
        } else {
            MPI_Count b = distribs[i] == MPI_DISTRIBUTE_NONE ? g
                : dargs[i] == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : dargs[i];
            runs[i] = malloc(sizeof **runs);
            if (!runs[i]) { rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); break; }
            MPI_Count s = c * b, len = g - s < b ? g - s : b;
            runs[i][0].start = s < g ? s : 0;
            runs[i][0].len = len > 0 ? len : 0;
            nr[i] = 1;
        }
    }
    struct kumi_dt *d = NULL;
    if (!rc) rc = nd_build(ndims, gsizes, runs, nr, order, old, &d);
    if (!rc) {
        d->combiner = MPI_COMBINER_DARRAY;
        size_t n = (size_t)ndims;
        int *iv = malloc(sizeof(int) * (5 * n + 4));
        MPI_Count *lv = malloc(sizeof(MPI_Count) * n);
        if (!iv || !lv) { free(iv); free(lv); kumi_dt_release(d); rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); goto out; }
        int ni = 0;
        iv[ni++] = size; iv[ni++] = rank; iv[ni++] = ndims;
        if (!large) for (size_t i = 0; i < n; i++) iv[ni++] = (int)gsizes[i];
        for (size_t i = 0; i < n; i++) iv[ni++] = distribs[i];
        for (size_t i = 0; i < n; i++) iv[ni++] = dargs[i];
        for (size_t i = 0; i < n; i++) iv[ni++] = psizes[i];
        iv[ni++] = order;
        for (size_t i = 0; i < n; i++) lv[i] = gsizes[i];
        rc = dt_set_contents(d, ni, iv, 0, NULL, large ? ndims : 0, lv, 1, &old);
        free(iv); free(lv);
        if (!rc) *newtype = d->handle;
    }
out:
    if (runs) for (int i = 0; i < ndims; i++) free(runs[i]);
    free(runs); free(nr); free(coord);
    return rc ? kumi_err_handle(NULL, rc) : MPI_SUCCESS;
}

int kumi_mpi_type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                                const int array_of_distribs[], const int array_of_dargs[],
                                const int array_of_psizes[], int order, struct kumi_dt *oldtype,
                                MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_darray";
    if (ndims <= 0) return ERR(MPI_ERR_DIMS, "%s: invalid ndims %d", fn, ndims);
    if (!array_of_gsizes) return ERR(MPI_ERR_ARG, "%s: argument array_of_gsizes is NULL", fn);
    MPI_Count *g = to_counts_i(array_of_gsizes, ndims);
    if (!g) return ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    int rc = darray(fn, size, rank, ndims, g, array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype,
                    false, newtype);
    free(g);
    return rc;
}

int kumi_mpi_type_create_darray_c(int size, int rank, int ndims, const MPI_Count array_of_gsizes[],
                                  const int array_of_distribs[], const int array_of_dargs[],
                                  const int array_of_psizes[], int order, struct kumi_dt *oldtype,
                                  MPI_Datatype *newtype)
{
    return darray("MPI_Type_create_darray_c", size, rank, ndims, array_of_gsizes, array_of_distribs,
                  array_of_dargs, array_of_psizes, order, oldtype, true, newtype);
}

/* dup: same type map, same contents of the envelope (combiner DUP) */

int kumi_mpi_type_dup(struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    if (!newtype) return NULLARG("MPI_Type_dup", "newtype");
    struct bld b = { 0 };
    bld_add(&b, oldtype, 0, 1, 1, 0);
    struct kumi_dt *d;
    int rc = bld_finish(&b, MPI_COMBINER_DUP, false, &d);
    if (rc) return kumi_err_handle(NULL, rc);
    d->lb = oldtype->lb;
    d->extent = oldtype->extent;
    d->explicit_bounds = oldtype->explicit_bounds;
    d->contig = oldtype->contig;
    d->basic = oldtype->basic;      /* same type map: predefined ops still apply */
    d->base_count = 1;
    d->committed = oldtype->committed || oldtype->predefined;
    rc = dt_set_contents(d, 0, NULL, 0, NULL, 0, NULL, 1, &oldtype);
    if (rc) return kumi_err_handle(NULL, rc);
    {
        rc = kumi_attr_type_dup(oldtype, d);
        if (rc) { kumi_dt_release(d); return kumi_err_handle(NULL, rc); }
    }
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
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_TYPE, "MPI_Type_free: cannot free the predefined datatype %s",
                                                kumi_dt_name(d)));
    {
        int rc = kumi_attr_type_free(d);
        if (rc) return kumi_err_handle(NULL, rc);
    }
    kumi_dt_release(d);
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}

/* ------------------------------------------------- envelope / contents */
static int envelope(const char *fn, struct kumi_dt *d, MPI_Count *ni, MPI_Count *na, MPI_Count *nl, MPI_Count *nt,
                    int *combiner)
{
    (void)fn;
    *combiner = d->combiner;
    if (d->combiner == MPI_COMBINER_NAMED) { *ni = *na = *nl = *nt = 0; return MPI_SUCCESS; }
    *ni = d->nints; *na = d->naddrs; *nl = d->nlarge; *nt = d->ntypes;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_envelope(struct kumi_dt *datatype, int *num_integers, int *num_addresses, int *num_datatypes,
                               int *combiner)
{
    const char *fn = "MPI_Type_get_envelope";
    if (!num_integers || !num_addresses || !num_datatypes || !combiner)
        return ERR(MPI_ERR_ARG, "%s: an output argument is NULL", fn);
    if (datatype->large)
        return ERR(MPI_ERR_TYPE, "%s: the datatype was made by a large-count constructor: use MPI_Type_get_envelope_c", fn);
    MPI_Count a, b, c, e;
    envelope(fn, datatype, &a, &b, &c, &e, combiner);
    *num_integers = (int)a; *num_addresses = (int)b; *num_datatypes = (int)e;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_envelope_c(struct kumi_dt *datatype, MPI_Count *num_integers, MPI_Count *num_addresses,
                                 MPI_Count *num_large_counts, MPI_Count *num_datatypes, int *combiner)
{
    if (!num_integers || !num_addresses || !num_large_counts || !num_datatypes || !combiner)
        return ERR(MPI_ERR_ARG, "MPI_Type_get_envelope_c: an output argument is NULL");
    return envelope("MPI_Type_get_envelope_c", datatype, num_integers, num_addresses, num_large_counts,
                    num_datatypes, combiner);
}

static int contents(const char *fn, struct kumi_dt *d, MPI_Count mi, MPI_Count ma, MPI_Count ml, MPI_Count mt,
                    int *ints, MPI_Aint *addrs, MPI_Count *lc, MPI_Datatype *types)
{
    if (d->combiner == MPI_COMBINER_NAMED)
        return ERR(MPI_ERR_ARG, "%s: %s is a named predefined datatype (no contents)", fn, kumi_dt_name(d));
    if (mi < d->nints || ma < d->naddrs || ml < d->nlarge || mt < d->ntypes)
        return ERR(MPI_ERR_ARG, "%s: arrays too small (need %d integers, %d addresses, %d large counts, %d datatypes)",
                   fn, d->nints, d->naddrs, d->nlarge, d->ntypes);
    if ((d->nints && !ints) || (d->naddrs && !addrs) || (d->nlarge && !lc) || (d->ntypes && !types))
        return ERR(MPI_ERR_ARG, "%s: a needed output array is NULL", fn);
    if (d->nints) memcpy(ints, d->ints, sizeof(int) * (size_t)d->nints);
    if (d->naddrs) memcpy(addrs, d->addrs, sizeof(MPI_Aint) * (size_t)d->naddrs);
    if (d->nlarge) memcpy(lc, d->lcounts, sizeof(MPI_Count) * (size_t)d->nlarge);
    for (int i = 0; i < d->ntypes; i++) {
        kumi_dt_retain(d->types[i]);     /* derived: a new reference the caller frees */
        types[i] = d->types[i]->handle;
    }
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_contents(struct kumi_dt *datatype, int max_integers, int max_addresses, int max_datatypes,
                               int array_of_integers[], MPI_Aint array_of_addresses[],
                               MPI_Datatype array_of_datatypes[])
{
    if (datatype->large)
        return ERR(MPI_ERR_TYPE, "MPI_Type_get_contents: the datatype was made by a large-count constructor: "
                   "use MPI_Type_get_contents_c");
    return contents("MPI_Type_get_contents", datatype, max_integers, max_addresses, 0, max_datatypes,
                    array_of_integers, array_of_addresses, NULL, array_of_datatypes);
}

int kumi_mpi_type_get_contents_c(struct kumi_dt *datatype, MPI_Count max_integers, MPI_Count max_addresses,
                                 MPI_Count max_large_counts, MPI_Count max_datatypes, int array_of_integers[],
                                 MPI_Aint array_of_addresses[], MPI_Count array_of_large_counts[],
                                 MPI_Datatype array_of_datatypes[])
{
    return contents("MPI_Type_get_contents_c", datatype, max_integers, max_addresses, max_large_counts,
                    max_datatypes, array_of_integers, array_of_addresses, array_of_large_counts,
                    array_of_datatypes);
}

/* ------------------------------------------- match_size, f90 types */
int kumi_mpi_type_match_size(int typeclass, int size, MPI_Datatype *datatype)
{
    if (!datatype) return NULLARG("MPI_Type_match_size", "datatype");
    MPI_Datatype t = MPI_DATATYPE_NULL;
    switch (typeclass) {
    case MPI_TYPECLASS_REAL:
        t = size == 4 ? MPI_REAL4 : size == 8 ? MPI_REAL8 : size == 16 ? MPI_REAL16 : size == 2 ? MPI_REAL2
                                                                                                   : MPI_DATATYPE_NULL;
        break;
    case MPI_TYPECLASS_INTEGER:
        t = size == 1 ? MPI_INTEGER1 : size == 2 ? MPI_INTEGER2 : size == 4 ? MPI_INTEGER4 : size == 8 ? MPI_INTEGER8
            : size == 16 ? MPI_INTEGER16 : MPI_DATATYPE_NULL;
        break;
    case MPI_TYPECLASS_COMPLEX:
        t = size == 8 ? MPI_COMPLEX8 : size == 16 ? MPI_COMPLEX16 : size == 32 ? MPI_COMPLEX32
            : size == 4 ? MPI_COMPLEX4 : MPI_DATATYPE_NULL;
        break;
    default:
        return ERR(MPI_ERR_ARG, "MPI_Type_match_size: invalid typeclass %d", typeclass);
    }
    if (t == MPI_DATATYPE_NULL)
        return ERR(MPI_ERR_ARG, "MPI_Type_match_size: no type of class %d has size %d", typeclass, size);
    *datatype = t;
    return MPI_SUCCESS;
}

/* MPI_Type_create_f90_*: one predefined-like object per (combiner, p, r),
 * kept until the library is unloaded (they cannot be freed). */
struct f90 { int comb, p, r; struct kumi_dt *d; struct f90 *next; };
static struct f90 *f90_list;

static int f90_type(const char *fn, int comb, int p, int r, MPI_Datatype base, MPI_Datatype *newtype)
{
    for (struct f90 *f = f90_list; f; f = f->next)
        if (f->comb == comb && f->p == p && f->r == r) { *newtype = f->d->handle; return MPI_SUCCESS; }
    struct kumi_dt *old = kumi_dt_get(base), *d;
    struct f90 *f = calloc(1, sizeof *f);
    if (!f || !old) { free(f); return ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn); }
    struct bld b = { 0 };
    bld_add(&b, old, 0, 1, 1, 0);
    int rc = bld_finish(&b, comb, false, &d);
    if (rc) { free(f); return kumi_err_handle(NULL, rc); }
    int iv[2] = { p, r };
    d->basic = old->basic;
    d->contig = old->contig;
    if (comb == MPI_COMBINER_F90_INTEGER) rc = dt_set_contents(d, 1, &iv[1], 0, NULL, 0, NULL, 0, NULL);
    else rc = dt_set_contents(d, 2, iv, 0, NULL, 0, NULL, 0, NULL);
    if (rc) { free(f); return kumi_err_handle(NULL, rc); }
    d->predefined = true;
    d->committed = true;
    d->name = NULL;
    f->comb = comb; f->p = p; f->r = r; f->d = d;
    f->next = f90_list;
    f90_list = f;
    *newtype = d->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_type_create_f90_real(int p, int r, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_f90_real";
    if (!newtype) return NULLARG("MPI_Type_create_f90_real", "newtype");
    if (p == MPI_UNDEFINED && r == MPI_UNDEFINED) return ERR(MPI_ERR_ARG, "%s: p and r are both MPI_UNDEFINED", fn);
    int pp = p == MPI_UNDEFINED ? 0 : p, rr = r == MPI_UNDEFINED ? 0 : r;
    if (pp < 0 || rr < 0) return ERR(MPI_ERR_ARG, "%s: invalid precision %d or range %d", fn, p, r);
    MPI_Datatype t = pp <= 6 && rr <= 37 ? MPI_REAL4 : pp <= 15 && rr <= 307 ? MPI_REAL8
                   : pp <= 33 && rr <= 4931 ? MPI_REAL16 : MPI_DATATYPE_NULL;
    if (t == MPI_DATATYPE_NULL) return ERR(MPI_ERR_ARG, "%s: no real kind has precision %d and range %d", fn, p, r);
    return f90_type(fn, MPI_COMBINER_F90_REAL, p, r, t, newtype);
}

int kumi_mpi_type_create_f90_complex(int p, int r, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_f90_complex";
    if (!newtype) return NULLARG("MPI_Type_create_f90_complex", "newtype");
    if (p == MPI_UNDEFINED && r == MPI_UNDEFINED) return ERR(MPI_ERR_ARG, "%s: p and r are both MPI_UNDEFINED", fn);
    int pp = p == MPI_UNDEFINED ? 0 : p, rr = r == MPI_UNDEFINED ? 0 : r;
    if (pp < 0 || rr < 0) return ERR(MPI_ERR_ARG, "%s: invalid precision %d or range %d", fn, p, r);
    MPI_Datatype t = pp <= 6 && rr <= 37 ? MPI_COMPLEX8 : pp <= 15 && rr <= 307 ? MPI_COMPLEX16
                   : pp <= 33 && rr <= 4931 ? MPI_COMPLEX32 : MPI_DATATYPE_NULL;
    if (t == MPI_DATATYPE_NULL) return ERR(MPI_ERR_ARG, "%s: no complex kind has precision %d and range %d", fn, p, r);
    return f90_type(fn, MPI_COMBINER_F90_COMPLEX, p, r, t, newtype);
}

int kumi_mpi_type_create_f90_integer(int r, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_f90_integer";
    if (!newtype) return NULLARG("MPI_Type_create_f90_integer", "newtype");
    if (r == MPI_UNDEFINED || r < 0) return ERR(MPI_ERR_ARG, "%s: invalid range %d", fn, r);
    MPI_Datatype t = r <= 2 ? MPI_INTEGER1 : r <= 4 ? MPI_INTEGER2 : r <= 9 ? MPI_INTEGER4 : r <= 18 ? MPI_INTEGER8
                   : r <= 38 ? MPI_INTEGER16 : MPI_DATATYPE_NULL;
    if (t == MPI_DATATYPE_NULL) return ERR(MPI_ERR_ARG, "%s: no integer kind has range %d", fn, r);
    return f90_type(fn, MPI_COMBINER_F90_INTEGER, 0, r, t, newtype);
}

/* MPI 4.1: the predefined pair type for (value, index) */
int kumi_mpi_type_get_value_index(struct kumi_dt *value_type, struct kumi_dt *index_type, MPI_Datatype *pair_type)
{
    if (!pair_type) return NULLARG("MPI_Type_get_value_index", "pair_type");
    MPI_Datatype v = value_type->handle, i = index_type->handle, t = MPI_DATATYPE_NULL;
    if (i == MPI_INT) {
        t = v == MPI_FLOAT ? MPI_FLOAT_INT : v == MPI_DOUBLE ? MPI_DOUBLE_INT : v == MPI_LONG ? MPI_LONG_INT
          : v == MPI_SHORT ? MPI_SHORT_INT : v == MPI_LONG_DOUBLE ? MPI_LONG_DOUBLE_INT : v == MPI_INT ? MPI_2INT
          : MPI_DATATYPE_NULL;
    } else if (i == MPI_INTEGER && v == MPI_INTEGER) t = MPI_2INTEGER;
    else if (i == MPI_REAL && v == MPI_REAL) t = MPI_2REAL;
    else if (i == MPI_DOUBLE_PRECISION && v == MPI_DOUBLE_PRECISION) t = MPI_2DOUBLE_PRECISION;
    *pair_type = t;                 /* MPI_DATATYPE_NULL: no such pair type */
    return MPI_SUCCESS;
}
