/* Unit test of the pack engine (framework/core/dt_pack.c) and the datatype
 * constructors (framework/core/datatype.c), in process.
 *
 * Random derived datatypes (contiguous, vector, hvector, indexed, hindexed,
 * indexed_block, hindexed_block, struct, resized, subarray, darray, dup,
 * nested a few levels, int and large-count constructors) are built with the
 * internal constructors; next to each, this test keeps its own type map
 * (a list of (displacement, predefined type)) computed from the MPI
 * standard's definitions, and its bounds (lower-bound / upper-bound markers
 * as the standard defines them; Kumi's alignment padding for struct).
 * Then, for 1 to 3 elements:
 *   - size, lb, extent, true lb / extent and the combiner equal the model's;
 *   - kumi_dt_pack, MPI_Pack and kumi_dt_pack_range in random pieces give
 *     the bytes of a naive packer walking the type map;
 *   - kumi_dt_unpack (and in pieces) writes exactly the type map's bytes
 *     (holes and guard bytes untouched), when the type map does not overlap;
 *   - MPI_Pack_external("external32") gives the model's big-endian bytes
 *     (sizes of MPI 4.1 sec. 15.5.2; x87 long double as IEEE binary128),
 *     and MPI_Unpack_external restores the values.
 * A failure prints the seed, the type's construction and the first
 * differing byte. */
#include "core/core.h"
#include "ut.h"
#include <float.h>

/* ------------------------------------------------------------ basic types */
enum xcls { X_RAW, X_INT, X_UINT, X_FLT, X_LDBL };
struct basic {
    MPI_Datatype h;
    const char *name;
    size_t size, xsize;     /* native and external32 bytes */
    int cls;
    size_t comp;            /* X_FLT / X_LDBL: bytes of one component */
    size_t align;
};
#define LDBL_X87 (sizeof(long double) == 16 && LDBL_MANT_DIG == 64)
static const struct basic basics[] = {
    { MPI_CHAR, "char", 1, 1, X_RAW, 1, 1 },
    { MPI_BYTE, "byte", 1, 1, X_RAW, 1, 1 },
    { MPI_C_BOOL, "bool", 1, 1, X_RAW, 1, 1 },
    { MPI_INT8_T, "int8", 1, 1, X_RAW, 1, 1 },
    { MPI_SHORT, "short", sizeof(short), 2, X_INT, 0, sizeof(short) },
    { MPI_UNSIGNED_SHORT, "ushort", sizeof(short), 2, X_UINT, 0, sizeof(short) },
    { MPI_UINT16_T, "uint16", 2, 2, X_UINT, 0, 2 },
    { MPI_INT, "int", sizeof(int), 4, X_INT, 0, sizeof(int) },
    { MPI_UNSIGNED, "unsigned", sizeof(int), 4, X_UINT, 0, sizeof(int) },
    { MPI_LONG, "long", sizeof(long), 4, X_INT, 0, sizeof(long) },
    { MPI_UNSIGNED_LONG, "ulong", sizeof(long), 4, X_UINT, 0, sizeof(long) },
    { MPI_LONG_LONG, "llong", sizeof(long long), 8, X_INT, 0, sizeof(long long) },
    { MPI_INT64_T, "int64", 8, 8, X_INT, 0, 8 },
    { MPI_AINT, "aint", sizeof(MPI_Aint), 8, X_INT, 0, sizeof(MPI_Aint) },
    { MPI_WCHAR, "wchar", sizeof(wchar_t), 2, X_UINT, 0, sizeof(wchar_t) },
    { MPI_FLOAT, "float", 4, 4, X_FLT, 4, 4 },
    { MPI_DOUBLE, "double", 8, 8, X_FLT, 8, 8 },
    { MPI_C_FLOAT_COMPLEX, "cfloat", 8, 8, X_FLT, 4, 4 },
    { MPI_C_DOUBLE_COMPLEX, "cdouble", 16, 16, X_FLT, 8, 8 },
    { MPI_LONG_DOUBLE, "ldouble", 16, 16, X_LDBL, 16, 16 },
    { MPI_C_LONG_DOUBLE_COMPLEX, "cldouble", 32, 32, X_LDBL, 16, 16 },
};
#define NBASIC ((int)(sizeof basics / sizeof basics[0]))
static int basic_index(MPI_Datatype h)
{
    for (int i = 0; i < NBASIC; i++) if (basics[i].h == h) return i;
    return -1;
}

/* ------------------------------------------------------------- the model */
/* b: index in basics[]; pad: bytes after it that count in the true extent
 * (the padding of a MINLOC/MAXLOC pair: Kumi gives a predefined pair the
 * true extent of its extent, 16 for MPI_LONG_INT where its type map spans 12) */
struct ent { MPI_Aint disp; int b; int pad; };
struct ty {
    MPI_Datatype h;
    struct ent *map;
    size_t n, cap;
    MPI_Aint lb, ub;                           /* bounds (markers or data) */
    bool marked;                               /* lb/ub come from explicit markers */
    size_t align;
    int combiner;
    char desc[512];
};

#define MAXMAP 3000
/* (a map longer than MAXMAP is cut there: the type is then not checked) */
static void ty_add_pad(struct ty *t, MPI_Aint disp, int b, int pad)
{
    if (t->n > MAXMAP) return;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 8;
        t->map = realloc(t->map, sizeof *t->map * t->cap);
    }
    t->map[t->n++] = (struct ent){ disp, b, pad };
}
static void ty_add(struct ty *t, MPI_Aint disp, int b) { ty_add_pad(t, disp, b, 0); }

/* Bounds as the standard defines them, over copies of children: "marked"
 * copies (types with lb/ub markers) decide alone when there are any.  A copy
 * of a type with no data counts with its bounds (Kumi's choice; the
 * standard's type maps say nothing there). */
struct bnd { bool any, anym; MPI_Aint lb, ub, mlb, mub; size_t align; };
static void bnd_copy(struct bnd *bd, const struct ty *c, MPI_Aint shift)
{
    MPI_Aint lo = shift + c->lb, hi = shift + c->ub;
    if (c->align > bd->align) bd->align = c->align;
    if (c->marked) {
        if (!bd->anym) { bd->mlb = lo; bd->mub = hi; bd->anym = true; }
        else { if (lo < bd->mlb) bd->mlb = lo; if (hi > bd->mub) bd->mub = hi; }
    }
    if (!bd->any) { bd->lb = lo; bd->ub = hi; bd->any = true; }
    else { if (lo < bd->lb) bd->lb = lo; if (hi > bd->ub) bd->ub = hi; }
}
/* Append copy of child c at shift: its entries and its bounds. */
static void ty_copy(struct ty *t, struct bnd *bd, const struct ty *c, MPI_Aint shift)
{
    for (size_t i = 0; i < c->n; i++) ty_add_pad(t, shift + c->map[i].disp, c->map[i].b, c->map[i].pad);
    bnd_copy(bd, c, shift);
}
static void ty_bounds(struct ty *t, const struct bnd *bd, bool epsilon)
{
    t->align = bd->align ? bd->align : 1;
    if (bd->anym) { t->lb = bd->mlb; t->ub = bd->mub; t->marked = true; return; }
    t->marked = false;
    t->lb = bd->any ? bd->lb : 0;
    t->ub = bd->any ? bd->ub : 0;
    MPI_Aint ext = t->ub - t->lb;
    if (epsilon && ext % (MPI_Aint)t->align) t->ub += (MPI_Aint)t->align - ext % (MPI_Aint)t->align;
}
static MPI_Aint ty_extent(const struct ty *t) { return t->ub - t->lb; }
static size_t ty_size(const struct ty *t)
{
    size_t s = 0;
    for (size_t i = 0; i < t->n; i++) s += basics[t->map[i].b].size;
    return s;
}
static size_t ty_xsize(const struct ty *t)
{
    size_t s = 0;
    for (size_t i = 0; i < t->n; i++) s += basics[t->map[i].b].xsize;
    return s;
}
static void ty_free(struct ty *t)
{
    if (t->h != MPI_DATATYPE_NULL && !kumi_dt_get(t->h)->predefined) kumi_mpi_type_free(&t->h);
    free(t->map);
    free(t);
}

/* --------------------------------------------------------- random types */
static int ctor_count[16];
static const char *const ctor_name[16] = { "predefined", "pair", "contiguous", "vector", "hvector", "indexed",
                                           "hindexed", "indexed_block", "hindexed_block", "struct", "resized",
                                           "subarray", "darray", "dup" };

static struct ty *leaf(void)
{
    struct ty *t = calloc(1, sizeof *t);
    int b;
    do b = (int)ut_range(0, NBASIC - 1); while (basics[b].cls == X_LDBL && !LDBL_X87);
    t->h = basics[b].h;
    ty_add(t, 0, b);
    t->lb = 0;
    t->ub = (MPI_Aint)basics[b].size;
    t->align = basics[b].align;
    t->combiner = MPI_COMBINER_NAMED;
    snprintf(t->desc, sizeof t->desc, "%s", basics[b].name);
    ctor_count[0]++;
    return t;
}

/* the MINLOC/MAXLOC pairs: value then int, C struct layout */
struct p_di { double v; int i; };
struct p_si { short v; int i; };
struct p_li { long v; int i; };
static struct ty *pair(void)
{
    struct ty *t = calloc(1, sizeof *t);
    int k = (int)ut_range(0, 3), vb;
    MPI_Aint ioff, ext;
    switch (k) {
    case 0: t->h = MPI_DOUBLE_INT; vb = basic_index(MPI_DOUBLE);
            ioff = offsetof(struct p_di, i); ext = sizeof(struct p_di); break;
    case 1: t->h = MPI_SHORT_INT; vb = basic_index(MPI_SHORT);
            ioff = offsetof(struct p_si, i); ext = sizeof(struct p_si); break;
    case 2: t->h = MPI_LONG_INT; vb = basic_index(MPI_LONG);
            ioff = offsetof(struct p_li, i); ext = sizeof(struct p_li); break;
    default: t->h = MPI_2INT; vb = basic_index(MPI_INT); ioff = sizeof(int); ext = 2 * sizeof(int); break;
    }
    ty_add(t, 0, vb);
    ty_add_pad(t, ioff, basic_index(MPI_INT), (int)(ext - ioff - (MPI_Aint)sizeof(int)));
    t->lb = 0;
    t->ub = ext;
    t->align = basics[vb].align > sizeof(int) ? basics[vb].align : sizeof(int);
    t->combiner = MPI_COMBINER_NAMED;
    snprintf(t->desc, sizeof t->desc, "%s", kumi_dt_get(t->h)->name);
    ctor_count[1]++;
    return t;
}

static struct ty *gen(int depth);

static void desc_child(char *out, size_t len, const struct ty *c)
{
    size_t l = strlen(out);
    snprintf(out + l, len - l, "%s", c->desc);
}

/* Children are freed by the caller right after the parent is built: the
 * parent must hold its own references. */
static struct ty *gen_derived(int depth)
{
    struct ty *t = calloc(1, sizeof *t);
    struct bnd bd = { 0 };
    int kind = (int)ut_range(2, 13);
    bool large = ut_range(0, 3) == 0;
    int rc = MPI_SUCCESS;
    struct ty *c = NULL, *cs[3] = { NULL, NULL, NULL };
    int nc = 0;
    if (kind != 9) { c = gen(depth - 1); cs[nc++] = c; }
    struct kumi_dt *old = c ? kumi_dt_get(c->h) : NULL;
    MPI_Aint ext = c ? ty_extent(c) : 0;
    char *d = t->desc;
    size_t dl = sizeof t->desc;
    switch (kind) {
    case 2: {
        int n = (int)ut_range(0, 4);
        rc = large ? kumi_mpi_type_contiguous_c(n, old, &t->h) : kumi_mpi_type_contiguous(n, old, &t->h);
        for (int i = 0; i < n; i++) ty_copy(t, &bd, c, i * ext);
        t->combiner = MPI_COMBINER_CONTIGUOUS;
        snprintf(d, dl, "contiguous%s(%d, ", large ? "_c" : "", n);
        break;
    }
    case 3: case 4: {
        int n = (int)ut_range(0, 4), bl = (int)ut_range(0, 3);
        MPI_Aint stride = kind == 3 ? ut_range(-3, 5) : ut_range(-2 * ext - 8, 3 * ext + 8);
        if (kind == 3)
            rc = large ? kumi_mpi_type_vector_c(n, bl, stride, old, &t->h)
                       : kumi_mpi_type_vector(n, bl, (int)stride, old, &t->h);
        else
            rc = large ? kumi_mpi_type_create_hvector_c(n, bl, stride, old, &t->h)
                       : kumi_mpi_type_create_hvector(n, bl, stride, old, &t->h);
        MPI_Aint s = kind == 3 ? stride * ext : stride;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < bl; j++) ty_copy(t, &bd, c, i * s + j * ext);
        t->combiner = kind == 3 ? MPI_COMBINER_VECTOR : MPI_COMBINER_HVECTOR;
        snprintf(d, dl, "%s%s(%d, %d, %lld, ", kind == 3 ? "vector" : "hvector", large ? "_c" : "", n, bl,
                 (long long)stride);
        break;
    }
    case 5: case 6: case 7: case 8: {
        int n = (int)ut_range(0, 4), bl1 = (int)ut_range(0, 3);
        int bls[4], idisp[4];
        MPI_Aint adisp[4];
        MPI_Count lbls[4], ldisp[4];
        bool bytes = kind == 6 || kind == 8, block = kind == 7 || kind == 8;
        size_t l = (size_t)snprintf(d, dl, "%s%s(%d, ", kind == 5 ? "indexed" : kind == 6 ? "hindexed" :
                                    kind == 7 ? "indexed_block" : "hindexed_block", large ? "_c" : "", n);
        for (int i = 0; i < n; i++) {
            bls[i] = block ? bl1 : (int)ut_range(0, 3);
            idisp[i] = (int)ut_range(-4, 10);
            adisp[i] = ut_range(-24, 80);
            lbls[i] = bls[i];
            ldisp[i] = bytes ? adisp[i] : idisp[i];
            MPI_Aint base = bytes ? adisp[i] : idisp[i] * ext;
            for (int j = 0; j < bls[i]; j++) ty_copy(t, &bd, c, base + j * ext);
            l += (size_t)snprintf(d + l, dl - l, "%d@%lld ", bls[i], (long long)ldisp[i]);
        }
        switch (kind) {
        case 5: rc = large ? kumi_mpi_type_indexed_c(n, lbls, ldisp, old, &t->h)
                           : kumi_mpi_type_indexed(n, bls, idisp, old, &t->h); break;
        case 6: rc = large ? kumi_mpi_type_create_hindexed_c(n, lbls, ldisp, old, &t->h)
                           : kumi_mpi_type_create_hindexed(n, bls, adisp, old, &t->h); break;
        case 7: rc = large ? kumi_mpi_type_create_indexed_block_c(n, bl1, ldisp, old, &t->h)
                           : kumi_mpi_type_create_indexed_block(n, bl1, idisp, old, &t->h); break;
        default: rc = large ? kumi_mpi_type_create_hindexed_block_c(n, bl1, ldisp, old, &t->h)
                            : kumi_mpi_type_create_hindexed_block(n, bl1, adisp, old, &t->h); break;
        }
        t->combiner = kind == 5 ? MPI_COMBINER_INDEXED : kind == 6 ? MPI_COMBINER_HINDEXED :
                      kind == 7 ? MPI_COMBINER_INDEXED_BLOCK : MPI_COMBINER_HINDEXED_BLOCK;
        break;
    }
    case 9: {
        int n = (int)ut_range(1, 3), bls[3];
        MPI_Aint disp[3];
        MPI_Count lbls[3], ldisp[3];
        MPI_Datatype hs[3];
        size_t l = (size_t)snprintf(d, dl, "struct%s(", large ? "_c" : "");
        bool any_marked = false, any_plain = false;
        for (int i = 0; i < n; i++) {
            cs[i] = gen(depth - 1);
            nc = i + 1;
            if (cs[i]->marked) any_marked = true; else any_plain = true;
        }
        /* Kumi takes the bounds of every block, the standard only those of the blocks with
         * markers when there are some (reported): keep such mixes out of the random types. */
        if (any_marked && any_plain) {
            for (int i = 0; i < n; i++) ty_free(cs[i]);
            free(t);
            return gen(depth);
        }
        for (int i = 0; i < n; i++) {
            bls[i] = (int)ut_range(0, 3);
            disp[i] = ut_range(-16, 96);
            lbls[i] = bls[i];
            ldisp[i] = disp[i];
            hs[i] = cs[i]->h;
            for (int j = 0; j < bls[i]; j++) ty_copy(t, &bd, cs[i], disp[i] + j * ty_extent(cs[i]));
            l += (size_t)snprintf(d + l, dl - l, "%d@%lld ", bls[i], (long long)disp[i]);
            desc_child(d, dl, cs[i]);
            l = strlen(d);
            l += (size_t)snprintf(d + l, dl - l, "%s", i + 1 < n ? ", " : "");
        }
        rc = large ? kumi_mpi_type_create_struct_c(n, lbls, ldisp, hs, &t->h)
                   : kumi_mpi_type_create_struct(n, bls, disp, hs, &t->h);
        t->combiner = MPI_COMBINER_STRUCT;
        ty_bounds(t, &bd, true);
        snprintf(d + l, dl - l, ")");
        goto built;
    }
    case 10: {
        MPI_Aint lb = ut_range(-16, 16), e = ut_range(1, ext + 24);
        rc = large ? kumi_mpi_type_create_resized_c(old, lb, e, &t->h)
                   : kumi_mpi_type_create_resized(old, lb, e, &t->h);
        ty_copy(t, &bd, c, 0);
        t->combiner = MPI_COMBINER_RESIZED;
        ty_bounds(t, &bd, false);
        t->lb = lb;
        t->ub = lb + e;
        t->marked = true;
        snprintf(d, dl, "resized%s(%lld, %lld, ", large ? "_c" : "", (long long)lb, (long long)e);
        desc_child(d, dl, c);
        strncat(d, ")", dl - strlen(d) - 1);
        goto built;
    }
    case 11: case 12: {
        int nd = (int)ut_range(1, 3), order = ut_range(0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
        int g[3], sub[3], st[3], distr[3], darg[3], ps[3];
        MPI_Count lg[3], lsub[3], lst[3];
        int size = 1, rank = 0;
        /* owned indices per dimension, ascending */
        int own[3][8], nown[3];
        for (int i = 0; i < nd; i++) {
            g[i] = (int)ut_range(1, 5);
            lg[i] = g[i];
            if (kind == 11) {
                sub[i] = (int)ut_range(1, g[i]);
                st[i] = (int)ut_range(0, g[i] - sub[i]);
                lsub[i] = sub[i];
                lst[i] = st[i];
                nown[i] = 0;
                for (int k = st[i]; k < st[i] + sub[i]; k++) own[i][nown[i]++] = k;
            } else {
                distr[i] = (int)ut_range(0, 2) == 0 ? MPI_DISTRIBUTE_NONE :
                           ut_range(0, 1) ? MPI_DISTRIBUTE_BLOCK : MPI_DISTRIBUTE_CYCLIC;
                ps[i] = distr[i] == MPI_DISTRIBUTE_NONE ? 1 : (int)ut_range(1, 3);
                size *= ps[i];
                if (distr[i] == MPI_DISTRIBUTE_BLOCK)
                    darg[i] = ut_range(0, 1) ? MPI_DISTRIBUTE_DFLT_DARG : (g[i] + ps[i] - 1) / ps[i] + (int)ut_range(0, 1);
                else if (distr[i] == MPI_DISTRIBUTE_CYCLIC)
                    darg[i] = ut_range(0, 1) ? MPI_DISTRIBUTE_DFLT_DARG : (int)ut_range(1, 3);
                else darg[i] = MPI_DISTRIBUTE_DFLT_DARG;
            }
        }
        if (kind == 12) {
            rank = (int)ut_range(0, size - 1);
            int coord[3];
            for (int i = nd - 1, r = rank; i >= 0; i--) { coord[i] = r % ps[i]; r /= ps[i]; }
            for (int i = 0; i < nd; i++) {
                nown[i] = 0;
                if (distr[i] == MPI_DISTRIBUTE_NONE) {
                    for (int k = 0; k < g[i]; k++) own[i][nown[i]++] = k;
                } else if (distr[i] == MPI_DISTRIBUTE_BLOCK) {
                    int b = darg[i] == MPI_DISTRIBUTE_DFLT_DARG ? (g[i] + ps[i] - 1) / ps[i] : darg[i];
                    for (int k = coord[i] * b; k < (coord[i] + 1) * b && k < g[i]; k++) own[i][nown[i]++] = k;
                } else {
                    int b = darg[i] == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg[i];
                    for (int k = 0; k < g[i]; k++)
                        if ((k / b) % ps[i] == coord[i]) own[i][nown[i]++] = k;
                }
            }
            rc = large ? kumi_mpi_type_create_darray_c(size, rank, nd, lg, distr, darg, ps, order, old, &t->h)
                       : kumi_mpi_type_create_darray(size, rank, nd, g, distr, darg, ps, order, old, &t->h);
            t->combiner = MPI_COMBINER_DARRAY;
        } else {
            rc = large ? kumi_mpi_type_create_subarray_c(nd, lg, lsub, lst, order, old, &t->h)
                       : kumi_mpi_type_create_subarray(nd, g, sub, st, order, old, &t->h);
            t->combiner = MPI_COMBINER_SUBARRAY;
        }
        /* every owned index tuple, slowest dimension first */
        int idx[3] = { 0, 0, 0 };
        long long total = 1;
        for (int i = 0; i < nd; i++) total *= nown[i];
        for (long long k = 0; k < total; k++) {
            long long r = k;
            MPI_Aint lin = 0, mul = 1;
            if (order == MPI_ORDER_C) {
                for (int i = nd - 1; i >= 0; i--) { idx[i] = own[i][r % nown[i]]; r /= nown[i]; }
                for (int i = nd - 1; i >= 0; i--) { lin += idx[i] * mul; mul *= g[i]; }
            } else {
                for (int i = 0; i < nd; i++) { idx[i] = own[i][r % nown[i]]; r /= nown[i]; }
                for (int i = 0; i < nd; i++) { lin += idx[i] * mul; mul *= g[i]; }
            }
            for (size_t e = 0; e < c->n; e++) ty_add_pad(t, lin * ext + c->map[e].disp, c->map[e].b, c->map[e].pad);
        }
        MPI_Aint whole = ext;
        for (int i = 0; i < nd; i++) whole *= g[i];
        t->lb = 0;
        t->ub = whole;
        t->marked = true;
        t->align = c->align;
        size_t l = (size_t)snprintf(d, dl, "%s%s(%s, ", kind == 11 ? "subarray" : "darray", large ? "_c" : "",
                                    order == MPI_ORDER_C ? "C" : "F");
        if (kind == 12) l += (size_t)snprintf(d + l, dl - l, "size %d rank %d, ", size, rank);
        for (int i = 0; i < nd; i++) {
            if (kind == 11) l += (size_t)snprintf(d + l, dl - l, "%d:%d+%d ", g[i], st[i], sub[i]);
            else {
                char da[16];
                if (darg[i] == MPI_DISTRIBUTE_DFLT_DARG) snprintf(da, sizeof da, "dflt");
                else snprintf(da, sizeof da, "%d", darg[i]);
                l += (size_t)snprintf(d + l, dl - l, "%d:%s/%s/%d ", g[i], distr[i] == MPI_DISTRIBUTE_NONE ? "none" :
                                      distr[i] == MPI_DISTRIBUTE_BLOCK ? "block" : "cyclic", da, ps[i]);
            }
        }
        desc_child(d, dl, c);
        strncat(d, ")", dl - strlen(d) - 1);
        goto built;
    }
    default: {
        rc = kumi_mpi_type_dup(old, &t->h);
        ty_copy(t, &bd, c, 0);
        t->combiner = MPI_COMBINER_DUP;
        ty_bounds(t, &bd, false);
        t->lb = c->lb;
        t->ub = c->ub;
        t->marked = c->marked;
        snprintf(d, dl, "dup(");
        desc_child(d, dl, c);
        strncat(d, ")", dl - strlen(d) - 1);
        goto built;
    }
    }
    ty_bounds(t, &bd, false);
    desc_child(d, dl, c);
    strncat(d, ")", dl - strlen(d) - 1);
built:
    ctor_count[kind]++;
    if (rc != MPI_SUCCESS) {
        CHECK(rc == MPI_SUCCESS, "constructor %s failed with %d", t->desc, rc);
        t->h = MPI_DATATYPE_NULL;
    }
    for (int i = 0; i < nc; i++) ty_free(cs[i]);
    if (t->h != MPI_DATATYPE_NULL) kumi_mpi_type_commit(&t->h);
    return t;
}

static struct ty *gen(int depth)
{
    if (depth <= 0 || ut_range(0, 3) == 0) return ut_range(0, 5) ? leaf() : pair();
    struct ty *t = gen_derived(depth);
    if (t->n > MAXMAP || t->h == MPI_DATATYPE_NULL) {    /* too big to check quickly: a leaf instead */
        ty_free(t);
        return leaf();
    }
    return t;
}

/* ------------------------------------------------------ reference packers */
static void put_be(unsigned char *out, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}
static uint64_t get_native(const unsigned char *p, size_t n, bool sgn)
{
    switch (n) {
    case 1: { uint8_t v; memcpy(&v, p, 1); return sgn ? (uint64_t)(int64_t)(int8_t)v : v; }
    case 2: { uint16_t v; memcpy(&v, p, 2); return sgn ? (uint64_t)(int64_t)(int16_t)v : v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return sgn ? (uint64_t)(int64_t)(int32_t)v : v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

/* one basic element, native -> external32 */
static void to_x(const struct basic *b, const unsigned char *in, unsigned char *out)
{
    switch (b->cls) {
    case X_RAW: memcpy(out, in, b->size); break;
    case X_INT: case X_UINT: put_be(out, get_native(in, b->size, b->cls == X_INT), b->xsize); break;
    case X_FLT:
        for (size_t c = 0; c < b->size; c += b->comp) put_be(out + c, get_native(in + c, b->comp, false), b->comp);
        break;
    case X_LDBL:        /* x87 extended: 64-bit mantissa with explicit integer bit, 16-bit sign+exponent */
        for (size_t c = 0; c < b->size; c += 16) {
            uint64_t m, se = get_native(in + c + 8, 2, false);
            memcpy(&m, in + c, 8);
            uint64_t frac = m & 0x7fffffffffffffffull;          /* binary128: 112-bit fraction */
            put_be(out + c, se << 48 | frac >> 15, 8);
            put_be(out + c + 8, frac << 49, 8);
        }
        break;
    }
}

/* Well-formed values where external32 is narrower or drops bits, so that
 * unpacking restores them: long / unsigned long fit in 32 bits, wchar in 16,
 * bool is 0 or 1, long doubles are numbers with zero padding. */
static void fill_value(const struct basic *b, unsigned char *p)
{
    if (b->h == MPI_LONG) { long v = (long)(int32_t)ut_rand(); memcpy(p, &v, sizeof v); }
    else if (b->h == MPI_UNSIGNED_LONG) { unsigned long v = (uint32_t)ut_rand(); memcpy(p, &v, sizeof v); }
    else if (b->h == MPI_WCHAR) { wchar_t v = (wchar_t)(ut_rand() & 0xffff); memcpy(p, &v, sizeof v); }
    else if (b->h == MPI_C_BOOL) *p = (unsigned char)(ut_rand() & 1);
    else if (b->cls == X_LDBL)
        for (size_t c = 0; c < b->size; c += 16) {
            long double v = (long double)(int64_t)ut_rand() / (long double)(1 + (ut_rand() & 0xffff));
            memset(p + c, 0, 16);
            memcpy(p + c, &v, 10);
        }
}

/* ------------------------------------------------------------ the checks */
static const struct ty *cur;       /* for failure messages */
static int count_now;

static void check_bytes(const char *what, const unsigned char *got, const unsigned char *want, size_t n)
{
    ut_checks++;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            ut_fail(__FILE__, __LINE__, "%s of %d x %s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, count_now,
                    cur->desc, i, n, got[i], want[i]);
            return;
        }
}

struct span { MPI_Aint lo, hi; };

static int cmp_ent(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    return x->disp < y->disp ? -1 : x->disp > y->disp;
}

static void check_type(struct ty *t)
{
    struct kumi_dt *d = kumi_dt_get(t->h);
    cur = t;
    count_now = 1;
    /* queries */
    size_t size = ty_size(t), xsize = ty_xsize(t);
    CHECK(d->size == size, "size of %s is %zu, expected %zu", t->desc, d->size, size);
    CHECK(d->lb == t->lb && d->extent == ty_extent(t), "lb/extent of %s are %lld/%lld, expected %lld/%lld", t->desc,
          (long long)d->lb, (long long)d->extent, (long long)t->lb, (long long)ty_extent(t));
    MPI_Aint tlb = 0, tub = 0;
    for (size_t i = 0; i < t->n; i++) {
        MPI_Aint lo = t->map[i].disp, hi = lo + (MPI_Aint)basics[t->map[i].b].size + t->map[i].pad;
        if (i == 0 || lo < tlb) tlb = lo;
        if (i == 0 || hi > tub) tub = hi;
    }
    if (size)
        CHECK(d->true_lb == tlb && d->true_extent == tub - tlb,
              "true lb/extent of %s are %lld/%lld, expected %lld/%lld", t->desc, (long long)d->true_lb,
              (long long)d->true_extent, (long long)tlb, (long long)(tub - tlb));
    MPI_Count ni, na, nl, nd;
    int comb = -1;
    kumi_mpi_type_get_envelope_c(d, &ni, &na, &nl, &nd, &comb);
    CHECK(comb == t->combiner, "combiner of %s is %d, expected %d", t->desc, comb, t->combiner);
    MPI_Aint xs = -1;
    kumi_mpi_pack_external_size("external32", 1, d, &xs);
    CHECK(xs == (MPI_Aint)xsize, "external32 size of %s is %lld, expected %zu", t->desc, (long long)xs, xsize);
    if (ut_failed) return;

    int count = (int)ut_range(1, 3);
    count_now = count;
    MPI_Aint ext = ty_extent(t);
    /* the buffer: every byte the elements touch, plus guards */
    MPI_Aint lo = 0, hi = 0;
    for (int e = 0; e < count; e++)
        if (size) {
            MPI_Aint a = e * ext + tlb, b = e * ext + tub;
            if (e == 0 || a < lo) lo = a;
            if (e == 0 || b > hi) hi = b;
        }
    const MPI_Aint guard = 32;
    size_t blen = (size_t)(hi - lo + 2 * guard);
    unsigned char *src = malloc(blen), *dst = malloc(blen), *want = malloc(blen);
    unsigned char *sbase = src + guard - lo, *dbase = dst + guard - lo, *wbase = want + guard - lo;
    size_t nall = size * (size_t)count, xall = xsize * (size_t)count;
    unsigned char *ref = malloc(nall + 1), *got = malloc(nall + 64), *xref = malloc(xall + 1),
                  *xgot = malloc(xall + 64);
    for (size_t i = 0; i < blen; i++) src[i] = (unsigned char)ut_rand();
    for (int e = 0; e < count; e++)
        for (size_t i = 0; i < t->n; i++) fill_value(&basics[t->map[i].b], sbase + e * ext + t->map[i].disp);
    /* the naive packer */
    size_t pos = 0, xpos = 0;
    for (int e = 0; e < count; e++)
        for (size_t i = 0; i < t->n; i++) {
            const struct basic *b = &basics[t->map[i].b];
            const unsigned char *p = sbase + e * ext + t->map[i].disp;
            memcpy(ref + pos, p, b->size);
            to_x(b, p, xref + xpos);
            pos += b->size;
            xpos += b->xsize;
        }

    /* pack: whole, through MPI_Pack at an offset, and in random pieces */
    memset(got, 0xee, nall + 64);
    kumi_dt_pack(d, sbase, (size_t)count, got);
    check_bytes("kumi_dt_pack", got, ref, nall);
    int off = (int)ut_range(0, 7), position = off;
    memset(got, 0xee, nall + 64);
    int rc = kumi_mpi_pack(sbase, count, d, got, (int)nall + off, &position, NULL);
    CHECK(rc == MPI_SUCCESS && position == off + (int)nall, "MPI_Pack of %s: rc %d, position %d, expected %d",
          t->desc, rc, position, off + (int)nall);
    check_bytes("MPI_Pack", got + off, ref, nall);
    memset(got, 0xee, nall + 64);
    for (size_t o = 0; o < nall;) {
        size_t len = (size_t)ut_range(1, 1 + (long long)nall / 3);
        if (len > nall - o) len = nall - o;
        kumi_dt_pack_range(d, sbase, (size_t)count, o, len, got + o);
        o += len;
    }
    check_bytes("kumi_dt_pack_range in pieces", got, ref, nall);
    CHECK(got[nall] == 0xee, "kumi_dt_pack_range of %s wrote past the end", t->desc);

    /* external32 */
    MPI_Aint xp = 0;
    memset(xgot, 0xee, xall + 64);
    rc = kumi_mpi_pack_external("external32", sbase, count, d, xgot, (MPI_Aint)xall, &xp);
    CHECK(rc == MPI_SUCCESS && xp == (MPI_Aint)xall, "MPI_Pack_external of %s: rc %d, position %lld", t->desc, rc,
          (long long)xp);
    check_bytes("MPI_Pack_external", xgot, xref, xall);

    /* unpack, when no two bytes of the type map are the same */
    struct ent *all = malloc(sizeof *all * (t->n * (size_t)count + 1));
    size_t na2 = 0;
    for (int e = 0; e < count; e++)
        for (size_t i = 0; i < t->n; i++) all[na2++] = (struct ent){ e * ext + t->map[i].disp, t->map[i].b, 0 };
    qsort(all, na2, sizeof *all, cmp_ent);
    bool overlap = false;
    for (size_t i = 1; i < na2; i++)
        if (all[i].disp < all[i - 1].disp + (MPI_Aint)basics[all[i - 1].b].size) overlap = true;
    free(all);
    if (!overlap) {
        memset(want, 0x5a, blen);
        for (int e = 0; e < count; e++)
            for (size_t i = 0; i < t->n; i++)
                memcpy(wbase + e * ext + t->map[i].disp, sbase + e * ext + t->map[i].disp, basics[t->map[i].b].size);
        memset(dst, 0x5a, blen);
        kumi_dt_unpack(d, ref, (size_t)count, dbase);
        check_bytes("kumi_dt_unpack", dst, want, blen);
        memset(dst, 0x5a, blen);
        position = 0;
        rc = kumi_mpi_unpack(ref, (int)nall, &position, dbase, count, d, NULL);
        CHECK(rc == MPI_SUCCESS && position == (int)nall, "MPI_Unpack of %s: rc %d, position %d", t->desc, rc,
              position);
        check_bytes("MPI_Unpack", dst, want, blen);
        memset(dst, 0x5a, blen);
        for (size_t o = 0; o < nall;) {
            size_t len = (size_t)ut_range(1, 1 + (long long)nall / 3);
            if (len > nall - o) len = nall - o;
            kumi_dt_unpack_range(d, ref + o, (size_t)count, o, len, dbase);
            o += len;
        }
        check_bytes("kumi_dt_unpack_range in pieces", dst, want, blen);
        memset(dst, 0x5a, blen);
        xp = 0;
        rc = kumi_mpi_unpack_external("external32", xref, (MPI_Aint)xall, &xp, dbase, count, d);
        CHECK(rc == MPI_SUCCESS && xp == (MPI_Aint)xall, "MPI_Unpack_external of %s: rc %d, position %lld", t->desc,
              rc, (long long)xp);
        check_bytes("MPI_Unpack_external", dst, want, blen);
    }
    free(src); free(dst); free(want); free(ref); free(got); free(xref); free(xgot);
}

/* A few fixed cases whose bytes are written out by hand. */
static void test_fixed(void)
{
    UT_CASE("fixed external32 values");
    unsigned char out[64];
    MPI_Aint p = 0;
    int iv[2] = { 1, -2 };
    kumi_mpi_pack_external("external32", iv, 2, kumi_dt_get(MPI_INT), out, sizeof out, &p);
    static const unsigned char iw[] = { 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe };
    CHECK(p == 8 && !memcmp(out, iw, 8), "MPI_INT 1, -2 in external32");
    long lv = -3;
    p = 0;
    kumi_mpi_pack_external("external32", &lv, 1, kumi_dt_get(MPI_LONG), out, sizeof out, &p);
    static const unsigned char lw[] = { 0xff, 0xff, 0xff, 0xfd };
    CHECK(p == 4 && !memcmp(out, lw, 4), "MPI_LONG -3 is 4 bytes in external32");
    double dv = 1.0;
    p = 0;
    kumi_mpi_pack_external("external32", &dv, 1, kumi_dt_get(MPI_DOUBLE), out, sizeof out, &p);
    static const unsigned char dw[] = { 0x3f, 0xf0, 0, 0, 0, 0, 0, 0 };
    CHECK(p == 8 && !memcmp(out, dw, 8), "MPI_DOUBLE 1.0 in external32");
    if (LDBL_X87) {
        long double q = -1.5L;
        p = 0;
        kumi_mpi_pack_external("external32", &q, 1, kumi_dt_get(MPI_LONG_DOUBLE), out, sizeof out, &p);
        static const unsigned char qw[16] = { 0xbf, 0xff, 0x80 };     /* binary128 -1.5 */
        CHECK(p == 16 && !memcmp(out, qw, 16), "MPI_LONG_DOUBLE -1.5 in external32 (binary128)");
    }
    UT_CASE("fixed vector");
    /* vector(3, 2, 3) of int: ints 0 1 _ 3 4 _ 6 7 */
    MPI_Datatype v;
    kumi_mpi_type_vector(3, 2, 3, kumi_dt_get(MPI_INT), &v);
    int buf[9] = { 0, 1, 2, 3, 4, 5, 6, 7, 8 }, pk[6];
    kumi_dt_pack(kumi_dt_get(v), buf, 1, pk);
    CHECK(pk[0] == 0 && pk[1] == 1 && pk[2] == 3 && pk[3] == 4 && pk[4] == 6 && pk[5] == 7,
          "vector(3, 2, 3) of int packs 0 1 3 4 6 7, got %d %d %d %d %d %d", pk[0], pk[1], pk[2], pk[3], pk[4], pk[5]);
    CHECK(kumi_dt_get(v)->extent == 8 * (MPI_Aint)sizeof(int), "extent of vector(3, 2, 3) of int");
    kumi_mpi_type_free(&v);

    UT_CASE("bounds the random types leave out");
    /* MPI 4.1 sec. 5.1.7: with lb / ub markers in a type map, only the markers give the bounds */
    MPI_Datatype r, st;
    kumi_mpi_type_create_resized(kumi_dt_get(MPI_INT), -4, 8, &r);
    int bl[2] = { 1, 1 };
    MPI_Aint disp[2] = { 0, 100 };
    MPI_Datatype ts[2] = { r, MPI_INT };
    kumi_mpi_type_create_struct(2, bl, disp, ts, &st);
    struct kumi_dt *sd = kumi_dt_get(st);
    KNOWN(sd->lb == -4 && sd->extent == 8, "struct { resized(int, -4, 8) at 0, int at 100 }: lb %lld extent %lld, "
          "the standard says -4 and 8 (only the markers count)", (long long)sd->lb, (long long)sd->extent);
    kumi_mpi_type_free(&st);
    kumi_mpi_type_free(&r);
    struct kumi_dt *di = kumi_dt_get(MPI_DOUBLE_INT);
    KNOWN(di->true_extent == (MPI_Aint)(offsetof(struct p_di, i) + sizeof(int)),
          "MPI_DOUBLE_INT: true extent %lld, its type map spans %zu", (long long)di->true_extent,
          offsetof(struct p_di, i) + sizeof(int));
}

int main(void)
{
    ut_seed(15007);
    kumi_dt_init();
    kumi_errh_init();
    test_fixed();
    UT_CASE("random datatypes");
    int ntypes = 400, checked = 0;
    for (int i = 0; i < ntypes && !ut_failed; i++) {
        struct ty *t = gen_derived((int)ut_range(1, 3));
        if (t->h != MPI_DATATYPE_NULL && t->n <= MAXMAP) { check_type(t); checked++; }
        ty_free(t);
    }
    printf("random: %d types checked; constructors used:", checked);
    for (int k = 0; k < 14; k++) printf(" %s %d", ctor_name[k], ctor_count[k]);
    printf("\n");
    return ut_done("test_pack");
}
