/* The MPI-1 procedures that MPI-2.0 deprecated and MPI-3.0 removed, which old
 * codes (the NAS Parallel Benchmarks among them) still call (issue 16 item
 * 10).  Their prototypes are data (data/mpi-removed.json); their entry points,
 * checks included, are generated like every other (mkbindings.py), and mpi.h
 * declares them unless KUMI_NO_REMOVED is defined.  MPI_Type_hvector is a
 * member of the family of MPI_Type_create_hvector (data/kumi-bindings.json);
 * each of the others is its replacement,
 * except MPI_Type_struct, which also honours the bound markers MPI_LB and
 * MPI_UB: with one, the lower (upper) bound of the new type is the least
 * (greatest) displacement of the MPI_LB (MPI_UB) entries, as in MPI-1 sec.
 * 3.12.3; the type is then the struct of the other entries resized to those
 * bounds (MPI_Type_get_envelope says MPI_COMBINER_RESIZED).  The attribute
 * calls of MPI-1 (MPI_Attr_*, MPI_Keyval_*) are deprecated, not removed:
 * core/attr.c has them. */
#include "core/core.h"
#include <stdlib.h>

int kumi_mpi_address(void *location, MPI_Aint *address)
{
    return kumi_mpi_get_address(location, address);
}

int kumi_mpi_type_extent(struct kumi_dt *datatype, MPI_Aint *extent)
{
    MPI_Aint lb;
    return kumi_mpi_type_get_extent(datatype, &lb, extent);
}

int kumi_mpi_type_lb(struct kumi_dt *datatype, MPI_Aint *displacement)
{
    MPI_Aint extent;
    return kumi_mpi_type_get_extent(datatype, displacement, &extent);
}

int kumi_mpi_type_ub(struct kumi_dt *datatype, MPI_Aint *displacement)
{
    MPI_Aint lb, extent;
    int rc = kumi_mpi_type_get_extent(datatype, &lb, &extent);
    if (rc == MPI_SUCCESS) *displacement = lb + extent;
    return rc;
}

int kumi_mpi_type_hindexed(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                           struct kumi_dt *oldtype, MPI_Datatype *newtype)
{
    return kumi_mpi_type_create_hindexed(count, array_of_blocklengths, array_of_displacements, oldtype, newtype);
}

int kumi_mpi_type_struct(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                         MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    int n = 0;
    bool has_lb = false, has_ub = false;
    MPI_Aint lb = 0, ub = 0, lo_ub = 0, hi_lb = 0;     /* markers: least UB, greatest LB */
    if (count <= 0 || !array_of_blocklengths || !array_of_displacements || !array_of_types)
        return kumi_mpi_type_create_struct(count, array_of_blocklengths, array_of_displacements, array_of_types,
                                           newtype);    /* it reports what is wrong */
    for (int i = 0; i < count; i++) {
        MPI_Aint d = array_of_displacements[i];
        if (array_of_types[i] == MPI_LB) {
            if (!has_lb || d < lb) lb = d;
            if (!has_lb || d > hi_lb) hi_lb = d;
            has_lb = true;
        } else if (array_of_types[i] == MPI_UB) {
            if (!has_ub || d > ub) ub = d;
            if (!has_ub || d < lo_ub) lo_ub = d;
            has_ub = true;
        } else {
            n++;
        }
    }
    if (!has_lb && !has_ub)
        return kumi_mpi_type_create_struct(count, array_of_blocklengths, array_of_displacements, array_of_types,
                                           newtype);
    int *bl = malloc(sizeof *bl * (size_t)(n ? n : 1));
    MPI_Aint *dp = malloc(sizeof *dp * (size_t)(n ? n : 1));
    MPI_Datatype *ty = malloc(sizeof *ty * (size_t)(n ? n : 1));
    if (!bl || !dp || !ty) {
        free(bl);
        free(dp);
        free(ty);
        return kumi_err_handle(NULL, MPI_ERR_NO_MEM);
    }
    for (int i = 0, j = 0; i < count; i++) {
        if (array_of_types[i] == MPI_LB || array_of_types[i] == MPI_UB) continue;
        bl[j] = array_of_blocklengths[i];
        dp[j] = array_of_displacements[i];
        ty[j++] = array_of_types[i];
    }
    MPI_Datatype data = MPI_DATATYPE_NULL;
    int rc = kumi_mpi_type_create_struct(n, bl, dp, ty, &data);
    free(bl);
    free(dp);
    free(ty);
    if (rc != MPI_SUCCESS) return rc;
    struct kumi_dt *dd = kumi_dt_get(data);
    MPI_Aint dlb = 0, dext = 0;
    if (dd) kumi_mpi_type_get_extent(dd, &dlb, &dext);
    /* MPI-1: without an MPI_LB entry the lower bound is the least displacement of
     * all the other entries (data and MPI_UB markers); likewise the upper bound */
    if (!has_lb) {
        lb = n ? dlb : lo_ub;
        if (has_ub && lo_ub < lb) lb = lo_ub;
    }
    if (!has_ub) {
        ub = n ? dlb + dext : hi_lb;
        if (has_lb && hi_lb > ub) ub = hi_lb;
    }
    rc = dd ? kumi_mpi_type_create_resized(dd, lb, ub - lb, newtype) : kumi_err_handle(NULL, MPI_ERR_INTERN);
    kumi_mpi_type_free(&data);
    return rc;
}

int kumi_mpi_errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler)
{
    return kumi_mpi_comm_create_errhandler(function, errhandler);
}

int kumi_mpi_errhandler_set(struct kumi_comm *comm, struct kumi_errhandler *errhandler)
{
    return kumi_mpi_comm_set_errhandler(comm, errhandler);
}

int kumi_mpi_errhandler_get(struct kumi_comm *comm, MPI_Errhandler *errhandler)
{
    return kumi_mpi_comm_get_errhandler(comm, errhandler);
}
