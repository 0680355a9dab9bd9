/* Helpers shared by the point-to-point front ends (mpi/pt2pt.c: sends,
 * receives, wait / test; mpi/pt2pt_sr.c: MPI_Sendrecv(_replace),
 * MPI_Isendrecv(_replace) and the probes). */
#ifndef KUMI_MPI_PT2PT_H
#define KUMI_MPI_PT2PT_H

#include "mpi/mpi_front.h"
#include <limits.h>
#include <stdlib.h>

static inline struct kumi_req *new_req(int kind, const char *fn, void *buf, size_t count, struct kumi_dt *dt,
                                       int peer, int tag, struct kumi_comm *comm)
{
    return kumi_req_msg(kind, comm, comm->ctx, fn, buf, count, dt, peer, tag);
}

static inline int req_done(void *arg) { return ((struct kumi_req *)arg)->complete; }

static inline void wait_req(struct kumi_req *r)
{
    if (!r->complete) kumi_progress_wait(req_done, r);
}

/* The error code for a completed request whose status holds an error, as
 * call fn reports it: "MPI_Wait: request of MPI_Irecv: message of ..." (fn
 * and the call that made the request, once when they are the same). */
static inline int trunc_error(uint64_t msglen, int src, int tag, size_t count, size_t cap)
{
    return kumi_error(MPI_ERR_TRUNCATE, "message of %llu bytes from rank %d (tag %d) truncated: "
                      "the receive buffer (argument count = %zu) holds %zu bytes",
                      (unsigned long long)msglen, src, tag, count, cap);
}

static inline int req_error_code(const struct kumi_req *r, const char *fn)
{
    int e = r->status.MPI_ERROR;
    if (e == MPI_ERR_TRUNCATE) e = trunc_error(r->msglen, r->status.MPI_SOURCE, r->status.MPI_TAG, r->count, r->rx.cap);
    return kumi_err_via(e, fn, r->fname);
}

/* Status out of a call that reports one request: every field but MPI_ERROR,
 * which MPI leaves to the calls that return several statuses. */
static inline void status_out(MPI_Status *st, const MPI_Status *from)
{
    if (st == MPI_STATUS_IGNORE) return;
    int keep = st->MPI_ERROR;
    *st = *from;
    st->MPI_ERROR = keep;
}

/* The empty status (an inactive or null request, nothing found) out of a
 * call that reports one request: MPI_ERROR stays as the caller left it. */
static inline void status_empty_out(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE) return;
    int keep = st->MPI_ERROR;
    kumi_status_empty(st);
    st->MPI_ERROR = keep;
}


/* ------------------------------------------------------------ device buffers
 * With an accel component in use (kumi_accel_on), a device buffer goes
 * through a host copy (core/accel.c): blocking calls stage it around the
 * call; non-blocking ones keep the copy in the request (accel_stage) until
 * MPI_Wait / MPI_Test ... completes it, which copies a received message back
 * (MPI_Isendrecv(_replace), MPI_(I)mrecv too); a persistent request keeps
 * its copy from init to free: read from the device again at each start,
 * written back at each completion. */
/* End the staging of a receive buffer: on success or truncation (as into
 * host memory: the part that fits), copy back what arrived (a contiguous
 * buffer: the bytes received; else the whole span). */
static inline int stage_recv_end(struct kumi_stage *s, int rc, const struct kumi_dt *dt, const MPI_Status *st)
{
    if (rc && st->MPI_ERROR != MPI_ERR_TRUNCATE) { kumi_stage_end(s, false); return rc; }
    if (dt->contig && kumi_status_bytes(st) < s->len) s->len = (size_t)kumi_status_bytes(st);
    int rc2 = kumi_stage_end(s, true);
    return rc ? rc : rc2;
}

/* A request with a host copy completes (consume): copy back, free the copy
 * (a collective's: each of its buffers that it wrote). */
static inline int stage_done(struct kumi_req *r, int code)
{
    struct kumi_stage *s = r->accel_stage;
    if (r->persistent) {             /* kept until the request is freed */
        if (code != MPI_SUCCESS) return code;
        return kumi_stage_flush(s, r->kind == KUMI_REQ_RECV && r->dt->contig ? (size_t)kumi_status_bytes(&r->status)
                                                                            : (size_t)-1);
    }
    r->accel_stage = NULL;
    if (r->kind == KUMI_REQ_RECV) code = stage_recv_end(s, code, r->dt, &r->status);
    else if (r->kind == KUMI_REQ_COLL) {        /* framework/mpi/coll_accel.c: every buffer of the call */
        int c2 = kumi_stage_end_all(s, code == MPI_SUCCESS);
        if (code == MPI_SUCCESS) code = c2;
    } else {
        kumi_req_accel_forget(r);               /* a send in pieces (request/req_accel.c) */
        kumi_stage_end(s, false);
    }
    free(s);
    return code;
}

/* Non-blocking call on a possibly device buffer: *sp NULL (not device: go
 * on), or a host copy to use instead (attach it to the request once made). */
static inline int stage_nb(const char *fn, struct kumi_stage **sp, const void *buf, MPI_Count count,
                           const struct kumi_dt *dt, int send)   /* 2: a send that may fill lazily */
{
    struct kumi_stage s;
    *sp = NULL;
    int rc = send ? kumi_stage_begin_send(fn, &s, buf, count, dt, send == 2) : kumi_stage_begin(fn, &s, buf, count, dt, !dt->contig);
    if (rc || !s.host) return rc;
    if (!(*sp = malloc(sizeof s))) {
        kumi_stage_end(&s, false);
        return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
    }
    **sp = s;
    return MPI_SUCCESS;
}

/* A host copy made for a call that then failed: freed, nothing copied back. */
static inline void stage_drop(struct kumi_stage *s)
{
    if (!s) return;
    kumi_stage_end(s, false);
    free(s);
}

static inline int nomem(const char *fn)
{
    return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory for a request", fn);
}

/* The int and the large-count (_c) variants of a call share one function
 * taking MPI_Count.  count elements of dt must be at most INT64_MAX bytes
 * (statuses carry 64-bit byte counts), else MPI_ERR_COUNT (no handler). */
static inline int count_check_slow(const char *fn, const char *arg, MPI_Count count, const struct kumi_dt *dt)
{
    size_t bytes;
    if (count < 0)
        return kumi_error(MPI_ERR_COUNT, "%s: argument %s = %lld is negative", fn, arg, (long long)count);
    if (__builtin_mul_overflow((size_t)count, dt->size, &bytes) || bytes > (size_t)INT64_MAX)
        return kumi_error(MPI_ERR_COUNT, "%s: argument %s = %lld elements of %zu bytes: the message size "
                          "overflows a 64-bit byte count", fn, arg, (long long)count, dt->size);
    return MPI_SUCCESS;
}
static inline int count_check(const char *fn, const char *arg, MPI_Count count, const struct kumi_dt *dt)
{
    size_t bytes;
    if (__builtin_expect(count >= 0 && !__builtin_mul_overflow((size_t)count, dt->size, &bytes) &&
                         bytes <= (size_t)INT64_MAX, 1)) return MPI_SUCCESS;
    return count_check_slow(fn, arg, count, dt);
}


static inline void status_proc_null(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE) return;
    status_empty_out(st);
    st->MPI_SOURCE = MPI_PROC_NULL;
    st->MPI_TAG = MPI_ANY_TAG;
}

#endif
