/* The CAD API (mpi-ext.h): user-built schedules.
 *
 * An MPIX_Cad is a small handle around a schedule and the internal
 * persistent request (kind KUMI_REQ_COLL) that runs it: issue starts the
 * request, test / wait complete it, free releases both.  The entry points
 * are written by hand (the generated bindings cover MPI_* only) but follow
 * them: state check, library lock, errors through the communicator's
 * error handler. */
#include "sched/sched.h"
#include "core/check.h"
#include <mpi-ext.h>
#include <stdlib.h>

struct kumi_mpix_cad {
    uint32_t magic;                 /* KUMI_CAD_MAGIC */
    struct kumi_sched *s;
    struct kumi_req *r;             /* owns s */
};
#define KUMI_CAD_MAGIC 0x4b434144u   /* "KCAD" */

static struct kumi_mpix_cad *cad_get(MPIX_Cad h)
{
    return h && h->magic == KUMI_CAD_MAGIC ? h : NULL;
}

static int bad_cad(const char *fn)
{
    return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument cad is not a valid CAD schedule", fn));
}

/* Leave the library: errors to the communicator's handler. */
static int done(struct kumi_mpix_cad *c, int rc)
{
    if (rc != MPI_SUCCESS) rc = kumi_err_handle(c ? c->s->comm : NULL, rc);
    kumi_unlock();
    return rc;
}

KUMI_EXPORT int MPIX_Cad_create(MPI_Comm comm, MPIX_Cad *cad)
{
    static const char fn[] = "MPIX_Cad_create";
    KUMI_CHECK_STATE(fn);
    kumi_lock();
    struct kumi_comm *c = kumi_comm_get(comm);
    int rc;
    if (!c) {
        rc = kumi_chk_bad_comm(fn, "comm", comm);
        kumi_unlock();
        return kumi_err_handle(NULL, rc);
    }
    if (!cad) {
        rc = kumi_err_handle(c, kumi_error(MPI_ERR_ARG, "%s: argument cad is NULL", fn));
        kumi_unlock();
        return rc;
    }
    *cad = MPIX_CAD_NULL;
    struct kumi_mpix_cad *h = calloc(1, sizeof *h);
    struct kumi_sched *s = NULL;
    struct kumi_req *r = NULL;
    rc = h ? kumi_sched_create(c, KUMI_SCHED_CAD, &s) : kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    if (rc == MPI_SUCCESS && !(r = kumi_req_new(KUMI_REQ_COLL, c, c->ctx + 1, "MPIX_Cad schedule", false)))
        rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    if (rc != MPI_SUCCESS) {
        kumi_sched_destroy(s);
        free(h);
        rc = kumi_err_handle(c, rc);
        kumi_unlock();
        return rc;
    }
    s->cad = true;
    s->req = r;
    r->persistent = true;
    r->internal = true;
    r->ext = s;
    h->magic = KUMI_CAD_MAGIC;
    h->s = s;
    h->r = r;
    *cad = h;
    kumi_unlock();
    return MPI_SUCCESS;
}

/* Checks shared by the node makers; on success the caller adds the node. */
static int node_args(const char *fn, struct kumi_mpix_cad *c, MPI_Count count, MPI_Datatype dt,
                     const char *dtarg, int *node)
{
    if (!node) return kumi_error(MPI_ERR_ARG, "%s: argument node is NULL", fn);
    if (c->s->sealed)
        return kumi_error(MPI_ERR_OTHER, "%s: the schedule was issued already; nodes can no longer be added", fn);
    int rc = kumi_chk_count(fn, "count", count);
    if (rc) return rc;
    struct kumi_dt *d = kumi_dt_get(dt);
    if (!d) return kumi_chk_bad_datatype(fn, dtarg, dt);
    return kumi_chk_dt_usable(fn, dtarg, d);
}

/* The builder's index, or its error (the schedule stays usable). */
static int node_result(struct kumi_sched *s, int idx, int *node)
{
    if (idx >= 0) {
        *node = idx;
        return MPI_SUCCESS;
    }
    int rc = s->err;
    s->err = MPI_SUCCESS;
    return rc;
}

static int msg(const char *fn, MPIX_Cad cad, bool send, const void *buf, MPI_Count count, MPI_Datatype dt,
               int peer, int tag, int *node)
{
    KUMI_CHECK_STATE(fn);
    kumi_lock();
    struct kumi_mpix_cad *c = cad_get(cad);
    if (!c) { kumi_unlock(); return bad_cad(fn); }
    int rc = node_args(fn, c, count, dt, "datatype", node);
    if (rc) return done(c, rc);
    if (tag < 0 || tag > MPIX_CAD_TAG_UB)
        return done(c, kumi_error(MPI_ERR_TAG, "%s: argument tag = %d is outside 0..MPIX_CAD_TAG_UB (%d)", fn, tag,
                                  MPIX_CAD_TAG_UB));
    int n = kumi_comm_peer_size(c->s->comm);
    if (peer != MPI_PROC_NULL && (peer < 0 || peer >= n))
        return done(c, kumi_error(MPI_ERR_RANK, "%s: argument %s = %d is not a rank of a communicator of size %d",
                                  fn, send ? "dest" : "source", peer, n));
    if (!buf && count > 0 && kumi_dt_get(dt)->size > 0)
        return done(c, kumi_error(MPI_ERR_BUFFER, "%s: argument buf is NULL", fn));
    int idx = send ? kumi_sched_send(c->s, buf, (size_t)count, dt, peer, tag)
                   : kumi_sched_recv(c->s, (void *)buf, (size_t)count, dt, peer, tag);
    return done(c, node_result(c->s, idx, node));
}

KUMI_EXPORT int MPIX_Cad_send(MPIX_Cad cad, const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                  int *node)
{
    return msg("MPIX_Cad_send", cad, true, buf, count, datatype, dest, tag, node);
}

KUMI_EXPORT int MPIX_Cad_recv(MPIX_Cad cad, void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                  int *node)
{
    return msg("MPIX_Cad_recv", cad, false, buf, count, datatype, source, tag, node);
}

KUMI_EXPORT int MPIX_Cad_calc(MPIX_Cad cad, const void *inbuf, void *inoutbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, int *node)
{
    static const char fn[] = "MPIX_Cad_calc";
    KUMI_CHECK_STATE(fn);
    kumi_lock();
    struct kumi_mpix_cad *c = cad_get(cad);
    if (!c) { kumi_unlock(); return bad_cad(fn); }
    int rc = node_args(fn, c, count, datatype, "datatype", node);
    if (rc) return done(c, rc);
    struct kumi_op *o = kumi_op_get(op);
    if (!o) return done(c, kumi_chk_bad_op(fn, "op", op));
    if (!kumi_op_valid_for(o, kumi_dt_get(datatype)))
        return done(c, kumi_error(MPI_ERR_OP, "%s: argument op is not defined for the datatype", fn));
    if ((!inbuf || !inoutbuf) && count > 0 && kumi_dt_get(datatype)->size > 0)
        return done(c, kumi_error(MPI_ERR_BUFFER, "%s: argument %s is NULL", fn, !inbuf ? "inbuf" : "inoutbuf"));
    return done(c, node_result(c->s, kumi_sched_calc(c->s, inbuf, inoutbuf, (size_t)count, datatype, op), node));
}

KUMI_EXPORT int MPIX_Cad_copy(MPIX_Cad cad, const void *src, MPI_Count srccount, MPI_Datatype srctype, void *dst,
                  MPI_Count dstcount, MPI_Datatype dsttype, int *node)
{
    static const char fn[] = "MPIX_Cad_copy";
    KUMI_CHECK_STATE(fn);
    kumi_lock();
    struct kumi_mpix_cad *c = cad_get(cad);
    if (!c) { kumi_unlock(); return bad_cad(fn); }
    int rc = node_args(fn, c, srccount, srctype, "srctype", node);
    if (!rc) rc = node_args(fn, c, dstcount, dsttype, "dsttype", node);
    if (rc) return done(c, rc);
    return done(c, node_result(c->s, kumi_sched_copy(c->s, src, (size_t)srccount, srctype, dst,
                                                     (size_t)dstcount, dsttype), node));
}

KUMI_EXPORT int MPIX_Cad_connect(MPIX_Cad cad, int from, int to)
{
    static const char fn[] = "MPIX_Cad_connect";
    KUMI_CHECK_STATE(fn);
    kumi_lock();
    struct kumi_mpix_cad *c = cad_get(cad);
    if (!c) { kumi_unlock(); return bad_cad(fn); }
    int n = (int)c->s->n;
    if (c->s->sealed)
        return done(c, kumi_error(MPI_ERR_OTHER, "%s: the schedule was issued already; it can no longer change", fn));
    if (from < 2 || from >= n || to < 2 || to >= n || from == to)
        return done(c, kumi_error(MPI_ERR_ARG, "%s: arguments from = %d, to = %d: %s", fn, from, to,
                                  from == to ? "a node cannot come after itself"
                                             : "not nodes of this schedule"));
    kumi_sched_after(c->s, to, from);
    int rc = c->s->err;
    c->s->err = MPI_SUCCESS;
    return done(c, rc);
}

KUMI_EXPORT int MPIX_Cad_issue(MPIX_Cad cad)
{
    static const char fn[] = "MPIX_Cad_issue";
    KUMI_CHECK_STATE(fn);
    kumi_lock();
    struct kumi_mpix_cad *c = cad_get(cad);
    if (!c) { kumi_unlock(); return bad_cad(fn); }
    if (c->r->active)
        return done(c, kumi_error(MPI_ERR_REQUEST, "%s: the previous run was not completed with MPIX_Cad_test "
                                  "or MPIX_Cad_wait", fn));
    int rc = kumi_sched_seal(c->s);
    if (rc) return done(c, rc);
    return done(c, kumi_sched_start(c->r));
}

static int req_finished(void *arg) { return ((struct kumi_req *)arg)->complete; }

/* The run is complete: the request becomes inactive, its error is ours. */
static int collect(struct kumi_mpix_cad *c)
{
    c->r->active = false;
    return c->r->status.MPI_ERROR;
}

KUMI_EXPORT int MPIX_Cad_test(MPIX_Cad cad, int *flag)
{
    static const char fn[] = "MPIX_Cad_test";
    KUMI_CHECK_STATE(fn);
    kumi_lock();
    struct kumi_mpix_cad *c = cad_get(cad);
    if (!c) { kumi_unlock(); return bad_cad(fn); }
    if (!flag) return done(c, kumi_error(MPI_ERR_ARG, "%s: argument flag is NULL", fn));
    *flag = 1;
    if (!c->r->active) return done(c, MPI_SUCCESS);
    if (!c->r->complete) kumi_progress(0);
    *flag = c->r->complete;
    return done(c, c->r->complete ? collect(c) : MPI_SUCCESS);
}

KUMI_EXPORT int MPIX_Cad_wait(MPIX_Cad cad)
{
    static const char fn[] = "MPIX_Cad_wait";
    KUMI_CHECK_STATE(fn);
    kumi_lock();
    struct kumi_mpix_cad *c = cad_get(cad);
    if (!c) { kumi_unlock(); return bad_cad(fn); }
    if (!c->r->active) return done(c, MPI_SUCCESS);
    if (!c->r->complete) kumi_progress_wait(req_finished, c->r);
    return done(c, collect(c));
}

KUMI_EXPORT int MPIX_Cad_free(MPIX_Cad *cad)
{
    static const char fn[] = "MPIX_Cad_free";
    KUMI_CHECK_STATE(fn);
    kumi_lock();
    struct kumi_mpix_cad *c = cad ? cad_get(*cad) : NULL;
    if (!c) { kumi_unlock(); return bad_cad(fn); }
    if (c->r->active && !c->r->complete) kumi_progress_wait(req_finished, c->r);   /* finish the run */
    struct kumi_comm *comm = c->s->comm;
    comm->refcount++;                   /* for the error handler, past the free */
    int rc = c->r->active ? c->r->status.MPI_ERROR : MPI_SUCCESS;
    kumi_req_free(c->r);                /* and the schedule */
    c->magic = KUMI_MAGIC_DEAD;
    free(c);
    *cad = MPIX_CAD_NULL;
    if (rc != MPI_SUCCESS) rc = kumi_err_handle(comm, rc);
    kumi_comm_release(comm);
    kumi_unlock();
    return rc;
}
