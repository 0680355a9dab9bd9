/* The MPI functions of packing and element counts: MPI_Pack / MPI_Unpack /
 * MPI_Pack_size, their "external32" forms, MPI_Get_count / MPI_Get_elements
 * and the status setters, over the pack engine (core/dt_pack.c). */
#include "core/core.h"
#include "core/check.h"
#include "core/dt_impl.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

void kumi_status_empty(MPI_Status *st)
{
    memset(st, 0, sizeof *st);
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    st->MPI_ERROR = MPI_SUCCESS;
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

int kumi_dt_status_set_elements(const char *fn, MPI_Status *status, struct kumi_dt *dt, MPI_Count count)
{
    if (!status || status == MPI_STATUS_IGNORE)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument status is NULL", fn));
    if (count < 0)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_COUNT, "%s: invalid count %lld", fn, (long long)count));
    kumi_status_set_bytes(status, kumi_dt_elements_bytes(dt, (uint64_t)count));
    return MPI_SUCCESS;
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
    kumi_dt_external32(dt, tmp, (unsigned char *)outbuf + *position, (size_t)incount, 0);
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
    kumi_dt_external32(dt, (const unsigned char *)inbuf + *position, tmp, (size_t)outcount, 1);
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
