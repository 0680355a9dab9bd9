/* The point-to-point helpers of the collective components (kumi/coll.h:
 * kumi_coll_send / recv / isend / irecv / sendrecv / wait / waitall): internal
 * requests on the communicator's collective context, over the request layer's
 * public functions (request.c). */
#include "request/request.h"
#include <stdlib.h>
#include <string.h>

static int coll_args(MPI_Comm comm, MPI_Datatype dt, struct kumi_comm **c, struct kumi_dt **d,
                     const char *fn)
{
    *c = kumi_comm_get(comm);
    if (!*c) return kumi_error(MPI_ERR_COMM, "%s: invalid communicator", fn);
    *d = kumi_dt_get(dt);
    if (!*d) return kumi_error(MPI_ERR_TYPE, "%s: invalid datatype", fn);
    return MPI_SUCCESS;
}

KUMI_EXPORT int kumi_coll_isend(const void *buf, size_t count, MPI_Datatype dt, int dest, int tag,
                                MPI_Comm comm, kumi_coll_req *req)
{
    struct kumi_comm *c; struct kumi_dt *d;
    int rc = coll_args(comm, dt, &c, &d, "kumi_coll_isend");
    *req = NULL;
    if (rc) return rc;
    if (dest != MPI_PROC_NULL && (dest < 0 || dest >= kumi_comm_peer_size(c)))
        return kumi_error(MPI_ERR_RANK, "kumi_coll_isend: invalid rank %d in a communicator of size %d", dest, kumi_comm_peer_size(c));
    struct kumi_req *r = kumi_req_internal(KUMI_REQ_SEND, c, c->ctx + 1, "collective send", (void *)buf, count, d,
                                           dest, tag, NULL, NULL, 0);
    if (!r) return kumi_error(MPI_ERR_NO_MEM, "kumi_coll_isend: out of memory");
    rc = kumi_req_start_send(r);
    if (rc) { kumi_req_free(r); return rc; }
    *req = r;
    return MPI_SUCCESS;
}

KUMI_EXPORT int kumi_coll_irecv(void *buf, size_t count, MPI_Datatype dt, int src, int tag,
                                MPI_Comm comm, kumi_coll_req *req)
{
    struct kumi_comm *c; struct kumi_dt *d;
    int rc = coll_args(comm, dt, &c, &d, "kumi_coll_irecv");
    *req = NULL;
    if (rc) return rc;
    if (src != MPI_PROC_NULL && src != MPI_ANY_SOURCE && (src < 0 || src >= kumi_comm_peer_size(c)))
        return kumi_error(MPI_ERR_RANK, "kumi_coll_irecv: invalid rank %d in a communicator of size %d", src, kumi_comm_peer_size(c));
    struct kumi_req *r = kumi_req_internal(KUMI_REQ_RECV, c, c->ctx + 1, "collective receive", buf, count, d,
                                           src, tag, NULL, NULL, 0);
    if (!r) return kumi_error(MPI_ERR_NO_MEM, "kumi_coll_irecv: out of memory");
    rc = kumi_req_start_recv(r);
    if (rc) { kumi_req_free(r); return rc; }
    *req = r;
    return MPI_SUCCESS;
}

static int coll_done(void *arg) { return ((struct kumi_req *)arg)->complete; }

/* Where a blocking collective keeps its first truncated receive (NULL: not
 * inside one; kumi_coll_keep_trunc). */
static _Thread_local int *trunc_slot __attribute__((tls_model("initial-exec")));   /* no __tls_get_addr per collective */

int *kumi_coll_keep_trunc(int *slot)
{
    int *prev = trunc_slot;
    trunc_slot = slot;
    return prev;
}

KUMI_EXPORT int kumi_coll_wait(kumi_coll_req *req)
{
    struct kumi_req *r = *req;
    int rc;
    if (!r) return MPI_SUCCESS;
    if (!r->complete) kumi_progress_wait(coll_done, r);
    rc = r->status.MPI_ERROR;
    if (rc == MPI_ERR_TRUNCATE) {
        /* the message was consumed (its first bytes are in the buffer): the
         * algorithm may go on; inside a blocking collective it does, and the
         * error is reported when the collective returns */
        if (!trunc_slot || *trunc_slot == MPI_SUCCESS)
            rc = kumi_error(MPI_ERR_TRUNCATE, "collective: a message of %llu bytes from rank %d was truncated "
                            "to %zu bytes (the ranks disagree on counts or datatypes)",
                            (unsigned long long)r->msglen, r->status.MPI_SOURCE, r->rx.cap);
        if (trunc_slot) {
            if (*trunc_slot == MPI_SUCCESS) *trunc_slot = rc;
            rc = MPI_SUCCESS;
        }
    }
    kumi_req_free(r);
    *req = NULL;
    return rc;
}

KUMI_EXPORT int kumi_coll_waitall(int n, kumi_coll_req reqs[])
{
    int rc = MPI_SUCCESS;
    for (int i = 0; i < n; i++) {
        int e = kumi_coll_wait(&reqs[i]);
        if (e && !rc) rc = e;
    }
    return rc;
}

KUMI_EXPORT int kumi_coll_send(const void *buf, size_t count, MPI_Datatype dt, int dest, int tag,
                               MPI_Comm comm)
{
    kumi_coll_req r;
    int rc = kumi_coll_isend(buf, count, dt, dest, tag, comm, &r);
    return rc ? rc : kumi_coll_wait(&r);
}

KUMI_EXPORT int kumi_coll_recv(void *buf, size_t count, MPI_Datatype dt, int src, int tag,
                               MPI_Comm comm)
{
    kumi_coll_req r;
    int rc = kumi_coll_irecv(buf, count, dt, src, tag, comm, &r);
    return rc ? rc : kumi_coll_wait(&r);
}

KUMI_EXPORT int kumi_coll_sendrecv(const void *sbuf, size_t scount, MPI_Datatype sdt, int dest, int stag,
                                   void *rbuf, size_t rcount, MPI_Datatype rdt, int src, int rtag,
                                   MPI_Comm comm)
{
    kumi_coll_req r[2];
    int rc = kumi_coll_irecv(rbuf, rcount, rdt, src, rtag, comm, &r[1]);
    if (rc) return rc;
    rc = kumi_coll_isend(sbuf, scount, sdt, dest, stag, comm, &r[0]);
    if (rc) { kumi_req_cancel(r[1]); kumi_coll_wait(&r[1]); return rc; }
    return kumi_coll_waitall(2, r);
}

KUMI_EXPORT void kumi_coll_wait_until(int (*done)(void *), void *arg, void (*nap)(void *))
{
    if (!done(arg)) kumi_progress_wait_nap(done, arg, nap);
}
