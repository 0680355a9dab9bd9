/* What a datatype says about itself (MPI_Type_get_envelope /
 * _get_contents), MPI_Type_match_size, the Fortran kinds
 * (MPI_Type_create_f90_*) and MPI_Type_get_value_index. */
#include "core/core.h"
#include "core/check.h"
#include "core/dt_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        return DT_ERR(MPI_ERR_ARG, "%s: an output argument is NULL", fn);
    if (datatype->large)
        return DT_ERR(MPI_ERR_TYPE, "%s: the datatype was made by a large-count constructor: use MPI_Type_get_envelope_c", fn);
    MPI_Count a, b, c, e;
    envelope(fn, datatype, &a, &b, &c, &e, combiner);
    *num_integers = (int)a; *num_addresses = (int)b; *num_datatypes = (int)e;
    return MPI_SUCCESS;
}

int kumi_mpi_type_get_envelope_c(struct kumi_dt *datatype, MPI_Count *num_integers, MPI_Count *num_addresses,
                                 MPI_Count *num_large_counts, MPI_Count *num_datatypes, int *combiner)
{
    if (!num_integers || !num_addresses || !num_large_counts || !num_datatypes || !combiner)
        return DT_ERR(MPI_ERR_ARG, "MPI_Type_get_envelope_c: an output argument is NULL");
    return envelope("MPI_Type_get_envelope_c", datatype, num_integers, num_addresses, num_large_counts,
                    num_datatypes, combiner);
}

static int contents(const char *fn, struct kumi_dt *d, MPI_Count mi, MPI_Count ma, MPI_Count ml, MPI_Count mt,
                    int *ints, MPI_Aint *addrs, MPI_Count *lc, MPI_Datatype *types)
{
    if (d->combiner == MPI_COMBINER_NAMED)
        return DT_ERR(MPI_ERR_ARG, "%s: %s is a named predefined datatype (no contents)", fn, kumi_dt_name(d));
    if (mi < d->nints || ma < d->naddrs || ml < d->nlarge || mt < d->ntypes)
        return DT_ERR(MPI_ERR_ARG, "%s: arrays too small (need %d integers, %d addresses, %d large counts, %d datatypes)",
                   fn, d->nints, d->naddrs, d->nlarge, d->ntypes);
    if ((d->nints && !ints) || (d->naddrs && !addrs) || (d->nlarge && !lc) || (d->ntypes && !types))
        return DT_ERR(MPI_ERR_ARG, "%s: a needed output array is NULL", fn);
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
        return DT_ERR(MPI_ERR_TYPE, "MPI_Type_get_contents: the datatype was made by a large-count constructor: "
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
    if (!datatype) return DT_NULLARG("MPI_Type_match_size", "datatype");
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
        return DT_ERR(MPI_ERR_ARG, "MPI_Type_match_size: invalid typeclass %d", typeclass);
    }
    if (t == MPI_DATATYPE_NULL)
        return DT_ERR(MPI_ERR_ARG, "MPI_Type_match_size: no type of class %d has size %d", typeclass, size);
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
    if (!f || !old) { free(f); return DT_ERR(MPI_ERR_NO_MEM, "%s: out of memory", fn); }
    struct bld b = { 0 };
    kumi_dt_bld_add(&b, old, 0, 1, 1, 0);
    int rc = kumi_dt_bld_finish(&b, comb, false, &d);
    if (rc) { free(f); return kumi_err_handle(NULL, rc); }
    int iv[2] = { p, r };
    d->basic = old->basic;
    d->contig = old->contig;
    if (comb == MPI_COMBINER_F90_INTEGER) rc = kumi_dt_set_contents(d, 1, &iv[1], 0, NULL, 0, NULL, 0, NULL);
    else rc = kumi_dt_set_contents(d, 2, iv, 0, NULL, 0, NULL, 0, NULL);
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
    if (!newtype) return DT_NULLARG("MPI_Type_create_f90_real", "newtype");
    if (p == MPI_UNDEFINED && r == MPI_UNDEFINED) return DT_ERR(MPI_ERR_ARG, "%s: p and r are both MPI_UNDEFINED", fn);
    int pp = p == MPI_UNDEFINED ? 0 : p, rr = r == MPI_UNDEFINED ? 0 : r;
    if (pp < 0 || rr < 0) return DT_ERR(MPI_ERR_ARG, "%s: invalid precision %d or range %d", fn, p, r);
    MPI_Datatype t = pp <= 6 && rr <= 37 ? MPI_REAL4 : pp <= 15 && rr <= 307 ? MPI_REAL8
                   : pp <= 33 && rr <= 4931 ? MPI_REAL16 : MPI_DATATYPE_NULL;
    if (t == MPI_DATATYPE_NULL) return DT_ERR(MPI_ERR_ARG, "%s: no real kind has precision %d and range %d", fn, p, r);
    return f90_type(fn, MPI_COMBINER_F90_REAL, p, r, t, newtype);
}

int kumi_mpi_type_create_f90_complex(int p, int r, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_f90_complex";
    if (!newtype) return DT_NULLARG("MPI_Type_create_f90_complex", "newtype");
    if (p == MPI_UNDEFINED && r == MPI_UNDEFINED) return DT_ERR(MPI_ERR_ARG, "%s: p and r are both MPI_UNDEFINED", fn);
    int pp = p == MPI_UNDEFINED ? 0 : p, rr = r == MPI_UNDEFINED ? 0 : r;
    if (pp < 0 || rr < 0) return DT_ERR(MPI_ERR_ARG, "%s: invalid precision %d or range %d", fn, p, r);
    MPI_Datatype t = pp <= 6 && rr <= 37 ? MPI_COMPLEX8 : pp <= 15 && rr <= 307 ? MPI_COMPLEX16
                   : pp <= 33 && rr <= 4931 ? MPI_COMPLEX32 : MPI_DATATYPE_NULL;
    if (t == MPI_DATATYPE_NULL) return DT_ERR(MPI_ERR_ARG, "%s: no complex kind has precision %d and range %d", fn, p, r);
    return f90_type(fn, MPI_COMBINER_F90_COMPLEX, p, r, t, newtype);
}

int kumi_mpi_type_create_f90_integer(int r, MPI_Datatype *newtype)
{
    const char *fn = "MPI_Type_create_f90_integer";
    if (!newtype) return DT_NULLARG("MPI_Type_create_f90_integer", "newtype");
    if (r == MPI_UNDEFINED || r < 0) return DT_ERR(MPI_ERR_ARG, "%s: invalid range %d", fn, r);
    MPI_Datatype t = r <= 2 ? MPI_INTEGER1 : r <= 4 ? MPI_INTEGER2 : r <= 9 ? MPI_INTEGER4 : r <= 18 ? MPI_INTEGER8
                   : r <= 38 ? MPI_INTEGER16 : MPI_DATATYPE_NULL;
    if (t == MPI_DATATYPE_NULL) return DT_ERR(MPI_ERR_ARG, "%s: no integer kind has range %d", fn, r);
    return f90_type(fn, MPI_COMBINER_F90_INTEGER, 0, r, t, newtype);
}

/* MPI 4.1: the predefined pair type for (value, index) */
int kumi_mpi_type_get_value_index(struct kumi_dt *value_type, struct kumi_dt *index_type, MPI_Datatype *pair_type)
{
    if (!pair_type) return DT_NULLARG("MPI_Type_get_value_index", "pair_type");
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
