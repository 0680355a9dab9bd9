/* The datatype constructors: contiguous, vector / hvector, the indexed
 * family, struct, resized, subarray, darray, dup, and commit / free; each
 * describes its parts to the layout builder (dt_build.c). */
#include "core/core.h"
#include "core/check.h"
#include "core/dt_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ constructors */

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
    kumi_dt_bld_add(&b, old, 0, (size_t)count, 1, 0);
    int rc = kumi_dt_bld_finish(&b, MPI_COMBINER_CONTIGUOUS, false, out);
    if (rc) return rc;
    (*out)->base_count = (size_t)count;
    int ic = (int)count;
    return large ? kumi_dt_set_contents(*out, 0, NULL, 0, NULL, 1, &count, 1, &old)
                 : kumi_dt_set_contents(*out, 1, &ic, 0, NULL, 0, NULL, 1, &old);
}

int kumi_mpi_type_contiguous(int count, struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    if (!newtype) return DT_NULLARG("MPI_Type_contiguous", "newtype");
    struct kumi_dt *d = NULL;
    int rc = contiguous(count, oldtype, false, &d);
    return dt_out("MPI_Type_contiguous", rc, d, newtype);
}

int kumi_mpi_type_contiguous_c(MPI_Count count, struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    if (!newtype) return DT_NULLARG("MPI_Type_contiguous_c", "newtype");
    struct kumi_dt *d = NULL;
    int rc = contiguous(count, oldtype, true, &d);
    return dt_out("MPI_Type_contiguous_c", rc, d, newtype);
}

/* vector (stride in elements) and hvector (stride in bytes) */
int kumi_dt_vector(const char *fn, MPI_Count count, MPI_Count bl, MPI_Count stride, bool bytes, struct kumi_dt *old,
                   bool large, MPI_Datatype *newtype)
{
    if (!newtype) return DT_ERR(MPI_ERR_ARG, "%s: argument newtype is NULL", fn);
    if (count < 0) return DT_ERR(MPI_ERR_COUNT, "%s: invalid count %lld", fn, (long long)count);
    if (bl < 0) return DT_ERR(MPI_ERR_ARG, "%s: invalid blocklength %lld", fn, (long long)bl);
    struct bld b = { 0 };
    MPI_Aint s = bytes ? (MPI_Aint)stride : (MPI_Aint)stride * old->extent;
    kumi_dt_bld_add(&b, old, 0, (size_t)bl, (size_t)count, s);
    struct kumi_dt *d;
    int rc = kumi_dt_bld_finish(&b, bytes ? MPI_COMBINER_HVECTOR : MPI_COMBINER_VECTOR, false, &d);
    if (rc) return kumi_err_handle(NULL, rc);
    MPI_Count lc[3] = { count, bl, stride };
    int ic[3] = { (int)count, (int)bl, (int)stride };
    MPI_Aint a = (MPI_Aint)stride;
    if (large) rc = kumi_dt_set_contents(d, 0, NULL, 0, NULL, 3, lc, 1, &old);
    else if (bytes) rc = kumi_dt_set_contents(d, 2, ic, 1, &a, 0, NULL, 1, &old);
    else rc = kumi_dt_set_contents(d, 3, ic, 0, NULL, 0, NULL, 1, &old);
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
        if (bl < 0) { kumi_dt_bld_free(&b); return DT_ERR(MPI_ERR_ARG, "%s: invalid blocklength %lld in entry %lld", fn,
                                               (long long)bl, (long long)i); }
        struct kumi_dt *t = types ? types[i] : old;
        MPI_Aint disp = bytes ? (MPI_Aint)disps[i] : (MPI_Aint)disps[i] * t->extent;
        kumi_dt_bld_add(&b, t, disp, (size_t)bl, 1, 0);
    }
    struct kumi_dt *d;
    int rc = kumi_dt_bld_finish(&b, ix_combiner[k], k == IX_STRUCT, &d);
    if (rc) return kumi_err_handle(NULL, rc);
    size_t n = (size_t)count;
    int ni = 0, na = 0, nl = 0, nt = types ? (int)n : 1;
    int *iv = malloc(sizeof(int) * (2 * n + 2));
    MPI_Aint *av = malloc(sizeof(MPI_Aint) * (n + 1));
    MPI_Count *lv = malloc(sizeof(MPI_Count) * (2 * n + 2));
    if (!iv || !av || !lv) { free(iv); free(av); free(lv); kumi_dt_release(d);
                             return DT_ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn); }
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
    rc = kumi_dt_set_contents(d, ni, iv, na, av, nl, lv, nt, types ? types : &old);
    free(iv); free(av); free(lv);
    return dt_out(fn, rc, d, newtype);
}

/* Copies of the user's arrays as MPI_Count (NULL arrays with count > 0 are errors). */
#define ARR_ARGS(fn, count, nm) \
    if ((count) < 0) return DT_ERR(MPI_ERR_COUNT, fn ": invalid count %lld", (long long)(count)); \
    if ((count) > 0 && !(nm)) return DT_ERR(MPI_ERR_ARG, fn ": argument " #nm " is NULL");

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

#define NEWTYPE_ARG(fn) if (!newtype) return DT_ERR(MPI_ERR_ARG, fn ": argument newtype is NULL");

int kumi_mpi_type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[],
                          struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    NEWTYPE_ARG("MPI_Type_indexed");
    ARR_ARGS("MPI_Type_indexed", count, array_of_blocklengths);
    ARR_ARGS("MPI_Type_indexed", count, array_of_displacements);
    MPI_Count *b = to_counts_i(array_of_blocklengths, count), *d = to_counts_i(array_of_displacements, count);
    int rc = b && d ? indexed("MPI_Type_indexed", IX_INDEXED, count, b, 0, d, oldtype, NULL, false, newtype)
                    : DT_ERR(MPI_ERR_NO_MEM, "MPI_Type_indexed: out of memory");
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
                    : DT_ERR(MPI_ERR_NO_MEM, "MPI_Type_create_hindexed: out of memory");
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
               : DT_ERR(MPI_ERR_NO_MEM, "MPI_Type_create_indexed_block: out of memory");
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
               : DT_ERR(MPI_ERR_NO_MEM, "MPI_Type_create_hindexed_block: out of memory");
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
    if (!t) return DT_ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn);
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
                : DT_ERR(MPI_ERR_NO_MEM, "MPI_Type_create_struct: out of memory");
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
    if (!newtype) return DT_ERR(MPI_ERR_ARG, "%s: argument newtype is NULL", fn);
    struct bld b = { 0 };
    kumi_dt_bld_add(&b, old, 0, 1, 1, 0);
    struct kumi_dt *d;
    int rc = kumi_dt_bld_finish(&b, MPI_COMBINER_RESIZED, false, &d);
    if (rc) return kumi_err_handle(NULL, rc);
    d->lb = lb;
    d->extent = extent;
    d->explicit_bounds = true;
    d->contig = d->size == 0 || (d->nsegs == 1 && d->segs[0].count == 1 && d->extent == (MPI_Aint)d->size);
    MPI_Aint a[2] = { lb, extent };
    MPI_Count l[2] = { lb, extent };
    rc = large ? kumi_dt_set_contents(d, 0, NULL, 0, NULL, 2, l, 1, &old) : kumi_dt_set_contents(d, 0, NULL, 2, a, 0, NULL, 1, &old);
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
            kumi_dt_bld_add(&b, inner, 0, 1, 1, 0);
            rc = kumi_dt_bld_finish(&b, MPI_COMBINER_RESIZED, false, &rz);
            if (rc) break;
            rz->lb = 0; rz->extent = stride; rz->explicit_bounds = true;
            inner = rz;
        }
        for (int i = 0; i < nruns[dim]; i++)
            kumi_dt_bld_add(&b, inner, (MPI_Aint)runs[dim][i].start * stride, (size_t)runs[dim][i].len, 1, 0);
        struct kumi_dt *nt;
        rc = kumi_dt_bld_finish(&b, MPI_COMBINER_HINDEXED, false, &nt);
        if (rz) kumi_dt_release(rz);
        if (rc) break;
        kumi_dt_release(cur);
        cur = nt;
        stride *= (MPI_Aint)gsizes[dim];
    }
    if (rc) { kumi_dt_release(cur); return rc; }
    /* the whole array: lb 0, extent product of sizes * old extent */
    struct bld b = { 0 };
    kumi_dt_bld_add(&b, cur, 0, 1, 1, 0);
    kumi_dt_release(cur);
    struct kumi_dt *d;
    rc = kumi_dt_bld_finish(&b, 0, false, &d);
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
    if (!newtype) return DT_ERR(MPI_ERR_ARG, "%s: argument newtype is NULL", fn);
    if (ndims <= 0) return DT_ERR(MPI_ERR_DIMS, "%s: invalid ndims %d", fn, ndims);
    if (!sizes || !subsizes || !starts)
        return DT_ERR(MPI_ERR_ARG, "%s: argument %s is NULL", fn, !sizes ? "array_of_sizes" :
                   !subsizes ? "array_of_subsizes" : "array_of_starts");
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return DT_ERR(MPI_ERR_ARG, "%s: invalid order %d", fn, order);
    for (int i = 0; i < ndims; i++) {
        if (sizes[i] <= 0) return DT_ERR(MPI_ERR_ARG, "%s: array_of_sizes[%d] = %lld must be positive", fn, i, (long long)sizes[i]);
        if (subsizes[i] <= 0 || subsizes[i] > sizes[i])
            return DT_ERR(MPI_ERR_ARG, "%s: array_of_subsizes[%d] = %lld must be in 1..%lld", fn, i,
                       (long long)subsizes[i], (long long)sizes[i]);
        if (starts[i] < 0 || starts[i] > sizes[i] - subsizes[i])
            return DT_ERR(MPI_ERR_ARG, "%s: array_of_starts[%d] = %lld must be in 0..%lld", fn, i,
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
    if (!iv || !lv) { free(iv); free(lv); kumi_dt_release(d); return DT_ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn); }
    if (large) {
        iv[0] = ndims; iv[1] = order;
        for (size_t i = 0; i < n; i++) { lv[i] = sizes[i]; lv[n + i] = subsizes[i]; lv[2 * n + i] = starts[i]; }
        rc = kumi_dt_set_contents(d, 2, iv, 0, NULL, 3 * ndims, lv, 1, &old);
    } else {
        iv[0] = ndims;
        for (size_t i = 0; i < n; i++) { iv[1 + i] = (int)sizes[i]; iv[1 + n + i] = (int)subsizes[i];
                                         iv[1 + 2 * n + i] = (int)starts[i]; }
        iv[1 + 3 * n] = order;
        rc = kumi_dt_set_contents(d, 3 * ndims + 2, iv, 0, NULL, 0, NULL, 1, &old);
    }
    free(iv); free(lv);
    return dt_out(fn, rc, d, newtype);
}

int kumi_mpi_type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                                  const int array_of_starts[], int order, struct kumi_dt *oldtype,
                                  MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_subarray";
    if (ndims <= 0) return DT_ERR(MPI_ERR_DIMS, "%s: invalid ndims %d", fn, ndims);
    if (!array_of_sizes || !array_of_subsizes || !array_of_starts)
        return DT_ERR(MPI_ERR_ARG, "%s: an array argument is NULL", fn);
    MPI_Count *a = to_counts_i(array_of_sizes, ndims), *b = to_counts_i(array_of_subsizes, ndims),
              *c = to_counts_i(array_of_starts, ndims);
    int rc = a && b && c ? subarray(fn, ndims, a, b, c, order, oldtype, false, newtype)
                         : DT_ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn);
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
    if (!newtype) return DT_ERR(MPI_ERR_ARG, "%s: argument newtype is NULL", fn);
    if (size <= 0) return DT_ERR(MPI_ERR_ARG, "%s: invalid size %d", fn, size);
    if (rank < 0 || rank >= size) return DT_ERR(MPI_ERR_RANK, "%s: invalid rank %d for size %d", fn, rank, size);
    if (ndims <= 0) return DT_ERR(MPI_ERR_DIMS, "%s: invalid ndims %d", fn, ndims);
    if (!gsizes || !distribs || !dargs || !psizes) return DT_ERR(MPI_ERR_ARG, "%s: an array argument is NULL", fn);
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN) return DT_ERR(MPI_ERR_ARG, "%s: invalid order %d", fn, order);
    long long prod = 1;
    for (int i = 0; i < ndims; i++) {
        if (gsizes[i] <= 0) return DT_ERR(MPI_ERR_ARG, "%s: array_of_gsizes[%d] must be positive", fn, i);
        if (psizes[i] <= 0) return DT_ERR(MPI_ERR_ARG, "%s: array_of_psizes[%d] must be positive", fn, i);
        if (distribs[i] != MPI_DISTRIBUTE_BLOCK && distribs[i] != MPI_DISTRIBUTE_CYCLIC &&
            distribs[i] != MPI_DISTRIBUTE_NONE)
            return DT_ERR(MPI_ERR_ARG, "%s: invalid array_of_distribs[%d] = %d", fn, i, distribs[i]);
        if (distribs[i] == MPI_DISTRIBUTE_NONE && psizes[i] != 1)
            return DT_ERR(MPI_ERR_ARG, "%s: dimension %d is not distributed but array_of_psizes[%d] = %d", fn, i, i, psizes[i]);
        if (dargs[i] != MPI_DISTRIBUTE_DFLT_DARG && dargs[i] <= 0)
            return DT_ERR(MPI_ERR_ARG, "%s: invalid array_of_dargs[%d] = %d", fn, i, dargs[i]);
        if (distribs[i] == MPI_DISTRIBUTE_BLOCK && dargs[i] != MPI_DISTRIBUTE_DFLT_DARG &&
            (long long)dargs[i] * psizes[i] < gsizes[i])
            return DT_ERR(MPI_ERR_ARG, "%s: block size %d times %d processes does not cover %lld elements in dimension %d",
                       fn, dargs[i], psizes[i], (long long)gsizes[i], i);
        prod *= psizes[i];
    }
    if (prod != size) return DT_ERR(MPI_ERR_ARG, "%s: the process grid has %lld processes, size is %d", fn, prod, size);
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
        rc = kumi_dt_set_contents(d, ni, iv, 0, NULL, large ? ndims : 0, lv, 1, &old);
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
    if (ndims <= 0) return DT_ERR(MPI_ERR_DIMS, "%s: invalid ndims %d", fn, ndims);
    if (!array_of_gsizes) return DT_ERR(MPI_ERR_ARG, "%s: argument array_of_gsizes is NULL", fn);
    MPI_Count *g = to_counts_i(array_of_gsizes, ndims);
    if (!g) return DT_ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn);
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
    if (!newtype) return DT_NULLARG("MPI_Type_dup", "newtype");
    struct bld b = { 0 };
    kumi_dt_bld_add(&b, oldtype, 0, 1, 1, 0);
    struct kumi_dt *d;
    int rc = kumi_dt_bld_finish(&b, MPI_COMBINER_DUP, false, &d);
    if (rc) return kumi_err_handle(NULL, rc);
    d->lb = oldtype->lb;
    d->extent = oldtype->extent;
    d->explicit_bounds = oldtype->explicit_bounds;
    d->contig = oldtype->contig;
    d->basic = oldtype->basic;      /* same type map: predefined ops still apply */
    d->base_count = 1;
    d->committed = oldtype->committed || oldtype->predefined;
    rc = kumi_dt_set_contents(d, 0, NULL, 0, NULL, 0, NULL, 1, &oldtype);
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
