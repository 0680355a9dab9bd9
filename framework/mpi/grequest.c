/* Generalized requests (MPI 4.1 sec. 13.2): MPI_Grequest_start and
 * MPI_Grequest_complete.
 *
 * A generalized request is a kumi_req of kind KUMI_REQ_GREQ with no
 * communicator: active from the start, complete once MPI_Grequest_complete
 * is called (from any thread at MPI_THREAD_MULTIPLE: a waiting thread
 * releases the library lock while it yields or sleeps, so it sees the flag).
 * The completion calls (pt2pt.c: consume) ask query_fn for the status, then
 * call free_fn and free the request; the error code of query_fn, else that
 * of free_fn, is the request's error (MPI_ERR_IN_STATUS with it in the
 * status of the multiple-completion calls).  MPI_Request_get_status calls
 * query_fn only.  MPI_Request_free calls free_fn at once if the request is
 * complete, else MPI_Grequest_complete calls it (and returns its error).
 * MPI_Cancel calls cancel_fn(extra_state, complete).  Errors without a
 * communicator go to MPI_COMM_SELF's handler. */
#include "mpi/mpi_front.h"
#include <stdlib.h>

struct kumi_greq {
    MPI_Grequest_query_function *query_fn;
    MPI_Grequest_free_function *free_fn;
    MPI_Grequest_cancel_function *cancel_fn;
    void *extra_state;
    bool free_called;               /* free_fn ran (exactly once per request) */
};

static int greq_query(struct kumi_req *r, MPI_Status *st)
{
    struct kumi_greq *g = r->ext;
    kumi_status_empty(st);
    if (!g || !g->query_fn) return MPI_SUCCESS;
    int rc;
    KUMI_CALLBACK(rc = g->query_fn(g->extra_state, st));     /* the user's function may call MPI */
    return rc;
}

static int greq_call_free(struct kumi_req *r)
{
    struct kumi_greq *g = r->ext;
    if (!g || g->free_called) return MPI_SUCCESS;
    g->free_called = true;
    int rc = MPI_SUCCESS;
    if (g->free_fn) KUMI_CALLBACK(rc = g->free_fn(g->extra_state));
    return rc;
}

static void greq_free(struct kumi_req *r)
{
    greq_call_free(r);
    free(r->ext);
    r->ext = NULL;
}

static int greq_cancel(struct kumi_req *r)
{
    struct kumi_greq *g = r->ext;
    if (!g || !g->cancel_fn) return MPI_SUCCESS;
    int rc;
    KUMI_CALLBACK(rc = g->cancel_fn(g->extra_state, r->complete ? 1 : 0));
    return rc;
}

static const struct kumi_req_ops greq_ops = {
    .name = "generalized", .cancel = greq_cancel, .free = greq_free, .query = greq_query, .release = greq_call_free,
};

void kumi_greq_register(void)
{
    kumi_req_register_kind(KUMI_REQ_GREQ, &greq_ops);
}

int kumi_mpi_grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                            MPI_Grequest_cancel_function *cancel_fn, void *extra_state, MPI_Request *request)
{
    if (!request)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Grequest_start: argument request is NULL"));
    struct kumi_greq *g = calloc(1, sizeof *g);
    struct kumi_req *r = g ? kumi_req_new(KUMI_REQ_GREQ, NULL, 0, "MPI_Grequest_start", true) : NULL;
    if (!r) {
        free(g);
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_NO_MEM, "MPI_Grequest_start: out of memory"));
    }
    g->query_fn = query_fn;
    g->free_fn = free_fn;
    g->cancel_fn = cancel_fn;
    g->extra_state = extra_state;
    r->ext = g;
    r->pending = 0;                     /* MPI_Grequest_complete completes it */
    *request = (MPI_Request)r;
    return MPI_SUCCESS;
}

int kumi_mpi_grequest_complete(MPI_Request request)
{
    struct kumi_req *r = kumi_handle_obj(request, KUMI_MAGIC_REQ);
    if (!r || r->kind != KUMI_REQ_GREQ)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_REQUEST, "MPI_Grequest_complete: argument request is %s",
                                                request == MPI_REQUEST_NULL ? "MPI_REQUEST_NULL"
                                                : !r ? "not a valid request" : "not a generalized request"));
    if (r->complete)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_REQUEST, "MPI_Grequest_complete: the request is "
                                                "already complete"));
    r->complete = true;
    if (r->user_freed) {               /* MPI_Request_free came first: free it now */
        int fc = greq_call_free(r);
        kumi_req_free(r);
        return fc ? kumi_err_handle(NULL, fc) : MPI_SUCCESS;
    }
    return MPI_SUCCESS;
}
