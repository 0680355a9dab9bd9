/* The layout builder behind every constructor: a new type's segments (the
 * pack engine's blocks, see dt_pack.c), its runs of basic elements, bounds,
 * size and alignment, built from its parts (kumi_dt_bld_add) and finished
 * into a datatype object (kumi_dt_bld_finish); the contents a type keeps
 * for MPI_Type_get_contents. */
#include "core/core.h"
#include "core/check.h"
#include "core/dt_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lvl { size_t n; MPI_Aint s; };

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
void kumi_dt_bld_add(struct bld *b, const struct kumi_dt *c, MPI_Aint disp, size_t bl, size_t nrep, MPI_Aint rstride)
{
    if (!bl || !nrep || b->err) return;
    MPI_Aint ext = c->extent;
    MPI_Aint r0 = amin(0, (MPI_Aint)(nrep - 1) * rstride), r1 = amax(0, (MPI_Aint)(nrep - 1) * rstride);
    MPI_Aint j0 = amin(0, (MPI_Aint)(bl - 1) * ext), j1 = amax(0, (MPI_Aint)(bl - 1) * ext);
    /* MPI 4.1 sec. 5.1.7: lb is the least of the copies' lower bounds, ub
     * the greatest of their upper bounds (lb + extent, below lb when the
     * extent is negative: the two are not swapped) */
    MPI_Aint lo = disp + r0 + j0 + c->lb, hi = disp + r1 + j1 + c->lb + ext;
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

void kumi_dt_bld_free(struct bld *b)
{
    free(b->segs); free(b->osegs); free(b->runs);
    memset(b, 0, sizeof *b);
}

static bool is_pair(enum kumi_basic k) { return k >= KUMI_B_FLOAT_INT && k <= KUMI_B_2INTEGER; }

/* A new derived datatype from the builder (which it empties); epsilon: round
 * the extent up to the alignment (MPI_Type_create_struct). */
int kumi_dt_bld_finish(struct bld *b, int combiner, bool epsilon, struct kumi_dt **out)
{
    if (b->err) { kumi_dt_bld_free(b); return kumi_error(MPI_ERR_NO_MEM, "out of memory creating a datatype"); }
    struct kumi_dt *d = calloc(1, sizeof *d);
    if (!d) { kumi_dt_bld_free(b); return kumi_error(MPI_ERR_NO_MEM, "out of memory creating a datatype"); }
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
int kumi_dt_set_contents(struct kumi_dt *d, int ni, const int *ints, int na, const MPI_Aint *addrs,
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
