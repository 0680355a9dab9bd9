/* Slow paths of the argument checks: build the error message. */
#include "core/check.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void kumi_chk_state_fail(const char *fn)
{
    if (kumi_state == KUMI_STATE_PRE)
        kumi_err_fatal("%s called before MPI_Init", fn);
    kumi_err_fatal("%s called after MPI_Finalize", fn);
}

static int bad_handle(const char *fn, const char *arg, const void *h, int cls, const char *what,
                      const void *null_h, const char *null_name)
{
    if (h == null_h)
        return kumi_error(cls, "%s: argument %s is %s", fn, arg, null_name);
    return kumi_error(cls, "%s: argument %s (%p) is not a valid %s", fn, arg, h, what);
}

int kumi_chk_bad_comm(const char *fn, const char *arg, MPI_Comm h)
{
    return bad_handle(fn, arg, h, MPI_ERR_COMM, "communicator", MPI_COMM_NULL, "MPI_COMM_NULL");
}
int kumi_chk_bad_datatype(const char *fn, const char *arg, MPI_Datatype h)
{
    return bad_handle(fn, arg, h, MPI_ERR_TYPE, "datatype", MPI_DATATYPE_NULL, "MPI_DATATYPE_NULL");
}
int kumi_chk_bad_op(const char *fn, const char *arg, MPI_Op h)
{
    return bad_handle(fn, arg, h, MPI_ERR_OP, "operation", MPI_OP_NULL, "MPI_OP_NULL");
}
int kumi_chk_bad_errhandler(const char *fn, const char *arg, MPI_Errhandler h)
{
    return bad_handle(fn, arg, h, MPI_ERR_ARG, "error handler", MPI_ERRHANDLER_NULL, "MPI_ERRHANDLER_NULL");
}
int kumi_chk_bad_win(const char *fn, const char *arg, MPI_Win h)
{
    return bad_handle(fn, arg, h, MPI_ERR_WIN, "window", MPI_WIN_NULL, "MPI_WIN_NULL");
}
int kumi_chk_bad_file(const char *fn, const char *arg, MPI_File h)
{
    return bad_handle(fn, arg, h, MPI_ERR_FILE, "file", MPI_FILE_NULL, "MPI_FILE_NULL");
}
int kumi_chk_dt_usable_slow(const char *fn, const char *arg, const struct kumi_dt *dt)
{
    return kumi_error(MPI_ERR_TYPE, "%s: datatype %s (argument %s) is not committed",
                      fn, kumi_dt_name(dt), arg);
}
int kumi_chk_count_slow(const char *fn, const char *arg, MPI_Count n)
{
    return kumi_error(MPI_ERR_COUNT, "%s: invalid count %lld (argument %s must not be negative)",
                      fn, (long long)n, arg);
}
int kumi_chk_rank_slow(const char *fn, const char *arg, int r, const struct kumi_comm *c, int kind)
{
    if (kind == 2)
        return kumi_error(MPI_ERR_ROOT, "%s: invalid root %d in a%s communicator of %ssize %d (argument %s)",
                          fn, r, c->inter ? "n inter" : "", c->inter ? "remote " : "",
                          c->inter ? c->remote_size : c->size, arg);
    return kumi_error(MPI_ERR_RANK, "%s: invalid rank %d in a%s communicator of %ssize %d (argument %s)",
                      fn, r, c->inter ? "n inter" : "", c->inter ? "remote " : "", kumi_comm_peer_size(c), arg);
}
int kumi_tag_ub = KUMI_TAG_UB;

/* An IMPI job's agreed IMPI_Tag_ub (the minimum of the clients' C_TAGUB,
 * PROTOCOL.md §1.10): p2p/impi sets it in MPI_Init, before any user call. */
KUMI_EXPORT void kumi_set_tag_ub(int ub)
{
    kumi_tag_ub = ub > 0 && ub <= KUMI_TAG_UB ? ub : KUMI_TAG_UB;
}

int kumi_chk_tag_slow(const char *fn, const char *arg, int tag, int recv)
{
    if (tag == MPI_ANY_TAG)
        return kumi_error(MPI_ERR_TAG, "%s: MPI_ANY_TAG is not allowed for argument %s of a send", fn, arg);
    return kumi_error(MPI_ERR_TAG, "%s: invalid tag %d (argument %s must be in 0..%d%s)", fn, tag, arg,
                      kumi_tag_ub, recv ? " or MPI_ANY_TAG" : "");
}
int kumi_chk_op_dt(const char *fn, const struct kumi_op *op, const struct kumi_dt *dt)
{
    if (kumi_op_valid_for(op, dt)) return MPI_SUCCESS;
    return kumi_error(MPI_ERR_OP, "%s: operation %s is not defined for datatype %s", fn,
                      kumi_op_name(op), kumi_dt_name(dt));
}
int kumi_chk_req_ptr_slow(const char *fn, const char *arg)
{
    return kumi_error(MPI_ERR_REQUEST, "%s: argument %s is NULL (a pointer to a request handle)", fn, arg);
}

int kumi_chk_buf_slow(const char *fn, const char *arg, MPI_Count count, const struct kumi_dt *dt)
{
    if (dt->size == 0 || kumi_dt_absolute(dt)) return MPI_SUCCESS;   /* MPI_BOTTOM with absolute addresses */
    return kumi_error(MPI_ERR_BUFFER, "%s: argument %s is NULL with count %lld of %s", fn, arg,
                      (long long)count, kumi_dt_name(dt));
}

const char *kumi_op_name(const struct kumi_op *op)
{
    static const struct { int id; const char *name; } names[] = {
        { 0x21, "MPI_SUM" }, { 0x22, "MPI_MIN" }, { 0x23, "MPI_MAX" }, { 0x24, "MPI_PROD" },
        { 0x28, "MPI_BAND" }, { 0x29, "MPI_BOR" }, { 0x2a, "MPI_BXOR" }, { 0x30, "MPI_LAND" },
        { 0x31, "MPI_LOR" }, { 0x32, "MPI_LXOR" }, { 0x38, "MPI_MINLOC" }, { 0x39, "MPI_MAXLOC" },
        { 0x3c, "MPI_REPLACE" }, { 0x3d, "MPI_NO_OP" },
    };
    if (op->predefined)
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (names[i].id == (int)(uintptr_t)op->handle) return names[i].name;
    return "(user-defined operation)";
}

bool kumi_sig_counts(const struct kumi_comm *c, const void *counts, size_t elsize)
{
    if (!counts) return true;
    int n = kumi_comm_peer_size(c);
    for (int i = 0; i < n; i++)
        if (elsize == sizeof(MPI_Count) ? ((const MPI_Count *)counts)[i] != 0 : ((const int *)counts)[i] != 0)
            return true;
    return false;
}
