/* Datatypes: what datatype.c (objects, queries), dt_build.c (the layout
 * builder), dt_ctor.c (constructors), dt_contents.c (envelope, contents,
 * Fortran kinds) and dt_pack.c (the pack engine) share. */
#ifndef KUMI_DT_IMPL_H
#define KUMI_DT_IMPL_H

#include "core/core.h"

/* external32 conversion class of a leaf (a non-pair predefined type) */
enum dt_xcls { DT_X_RAW, DT_X_INT, DT_X_UINT, DT_X_FLT, DT_X_LDBL };
struct dt_leaf {
    size_t nsize;                   /* native bytes */
    size_t xsize;                   /* external32 bytes */
    int cls;                        /* enum dt_xcls */
    size_t comp;                    /* DT_X_FLT / DT_X_LDBL: bytes of one component (complex: 2) */
};
const struct dt_leaf *kumi_dt_leaf(uint32_t leaf);

/* Walk the segments of count elements: calls fn for every block in packed order. */

/* Errors of the datatype calls (no communicator: MPI_COMM_SELF's handler). */
#define DT_NULLARG(fn, arg) kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, fn ": argument " arg " is NULL"))
#define DT_ERR(cls, ...) kumi_err_handle(NULL, kumi_error(cls, __VA_ARGS__))

/* ---- dt_build.c: the layout builder */
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
void kumi_dt_bld_add(struct bld *b, const struct kumi_dt *c, MPI_Aint disp, size_t bl, size_t nrep, MPI_Aint rstride);
int kumi_dt_bld_finish(struct bld *b, int combiner, bool epsilon, struct kumi_dt **out);
void kumi_dt_bld_free(struct bld *b);
int kumi_dt_set_contents(struct kumi_dt *d, int ni, const int *ints, int na, const MPI_Aint *addrs,
                           int nl, const MPI_Count *lc, int nt, struct kumi_dt *const *types);

#endif
