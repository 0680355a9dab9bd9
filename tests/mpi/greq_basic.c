/* Generalized requests (MPI 4.1 sec. 13.2): query_fn / free_fn / cancel_fn
 * call counts and arguments; completion from the same thread and from
 * another thread (a blocked MPI_Wait must wake up); Test before and after
 * MPI_Grequest_complete; MPI_Request_get_status (query only, request stays);
 * MPI_Request_free before and after completion (free_fn runs once, at the
 * later of the two); MPI_Cancel (cancel_fn gets "complete"); mixed arrays
 * with point-to-point requests in Waitall / Waitany / Waitsome / Testall;
 * and error propagation: a failing query_fn or free_fn makes Wait return
 * its code, and the multiple-completion calls MPI_ERR_IN_STATUS with the
 * code in the request's status. */
#include "kt.h"
#include <pthread.h>
#include <unistd.h>

struct st {
    int id;
    int nquery, nfree, ncancel;
    int last_complete_flag;
    int query_rc, free_rc, cancel_rc;
    int cancelled;                  /* query_fn reports cancelled */
    int freed_order;                /* value of a global counter when free_fn ran */
};
static int free_counter;

static int query_fn(void *extra, MPI_Status *status)
{
    struct st *s = extra;
    s->nquery++;
    KT_CHECK(status != NULL && status != MPI_STATUS_IGNORE, "query_fn gets a real status");
    MPI_Status_set_elements(status, MPI_INT, 3 + s->id);
    MPI_Status_set_cancelled(status, s->cancelled);
    status->MPI_SOURCE = 40 + s->id;
    status->MPI_TAG = 50 + s->id;
    return s->query_rc;
}

static int free_fn(void *extra)
{
    struct st *s = extra;
    s->nfree++;
    s->freed_order = ++free_counter;
    return s->free_rc;
}

static int cancel_fn(void *extra, int complete)
{
    struct st *s = extra;
    s->ncancel++;
    s->last_complete_flag = complete;
    if (!complete) s->cancelled = 1;
    return s->cancel_rc;
}

static void check_status(const MPI_Status *st, int id)
{
    int c = -1;
    KT_EQ_INT(st->MPI_SOURCE, 40 + id);
    KT_EQ_INT(st->MPI_TAG, 50 + id);
    KT_MPI(MPI_Get_count(st, MPI_INT, &c));
    KT_EQ_INT(c, 3 + id);
}

static MPI_Request start(struct st *s, int id)
{
    MPI_Request r = MPI_REQUEST_NULL;
    memset(s, 0, sizeof *s);
    s->id = id;
    KT_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, s, &r));
    KT_CHECK(r != MPI_REQUEST_NULL, "a request");
    return r;
}

struct later { MPI_Request r; int delay_ms; };
static void *completer(void *arg)
{
    struct later *l = arg;
    usleep((useconds_t)l->delay_ms * 1000);
    KT_MPI(MPI_Grequest_complete(l->r));
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    KT_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct st a, b, c, d;
    MPI_Request r, rs[4];
    MPI_Status st, sts[4];
    int flag;

    /* 1. same thread: Test (not yet), complete, get_status (query only), Wait */
    r = start(&a, 1);
    KT_MPI(MPI_Test(&r, &flag, &st));
    KT_EQ_INT(flag, 0);
    KT_EQ_INT(a.nquery, 0);
    KT_MPI(MPI_Request_get_status(r, &flag, &st));
    KT_EQ_INT(flag, 0);
    KT_EQ_INT(a.nquery, 0);
    KT_MPI(MPI_Grequest_complete(r));
    KT_MPI(MPI_Request_get_status(r, &flag, &st));
    KT_EQ_INT(flag, 1);
    KT_EQ_INT(a.nquery, 1);
    KT_EQ_INT(a.nfree, 0);
    check_status(&st, 1);
    KT_CHECK(r != MPI_REQUEST_NULL, "get_status leaves the request");
    st.MPI_ERROR = 12345;
    KT_MPI(MPI_Wait(&r, &st));
    KT_EQ_INT(st.MPI_ERROR, 12345);              /* single-completion calls leave MPI_ERROR */
    KT_CHECK(r == MPI_REQUEST_NULL, "Wait frees it");
    KT_EQ_INT(a.nquery, 2);
    KT_EQ_INT(a.nfree, 1);
    check_status(&st, 1);
    int canc = -1;
    KT_MPI(MPI_Test_cancelled(&st, &canc));
    KT_EQ_INT(canc, 0);

    /* 2. completed from another thread while this one blocks in Wait */
    for (int k = 0; k < 5; k++) {
        r = start(&b, 2);
        struct later l = { r, 20 * k };
        pthread_t th;
        pthread_create(&th, NULL, completer, &l);
        KT_MPI(MPI_Wait(&r, &st));
        pthread_join(th, NULL);
        KT_EQ_INT(b.nquery, 1);
        KT_EQ_INT(b.nfree, 1);
        check_status(&st, 2);
    }
    /* ... and in Waitall next to a real message (ring with the neighbours) */
    {
        int out = rank * 3 + 1, in = -1;
        int nxt = (rank + 1) % size, prv = (rank + size - 1) % size;
        rs[0] = start(&b, 2);
        rs[1] = start(&c, 3);
        KT_MPI(MPI_Irecv(&in, 1, MPI_INT, prv, 77, MPI_COMM_WORLD, &rs[2]));
        KT_MPI(MPI_Isend(&out, 1, MPI_INT, nxt, 77, MPI_COMM_WORLD, &rs[3]));
        struct later l1 = { rs[0], 30 }, l2 = { rs[1], 10 };
        pthread_t t1, t2;
        pthread_create(&t1, NULL, completer, &l1);
        pthread_create(&t2, NULL, completer, &l2);
        KT_MPI(MPI_Waitall(4, rs, sts));
        pthread_join(t1, NULL);
        pthread_join(t2, NULL);
        check_status(&sts[0], 2);
        check_status(&sts[1], 3);
        KT_EQ_INT(sts[0].MPI_ERROR, MPI_SUCCESS);
        KT_EQ_INT(in, prv * 3 + 1);
        KT_EQ_INT(b.nquery + b.nfree + c.nquery + c.nfree, 4);
    }

    /* 3. Request_free before completion: free_fn runs in Grequest_complete, once */
    {   /* the handle is nulled by Request_free; the request lives on, completed through a copy */
        MPI_Request saved = start(&d, 4);
        MPI_Request h = saved;
        KT_MPI(MPI_Request_free(&h));
        KT_CHECK(h == MPI_REQUEST_NULL, "handle nulled");
        KT_EQ_INT(d.nfree, 0);
        KT_MPI(MPI_Grequest_complete(saved));
        KT_EQ_INT(d.nfree, 1);
        KT_EQ_INT(d.nquery, 0);                  /* nobody asks for the status */
    }
    /* ... and after completion: free_fn at once */
    r = start(&a, 1);
    KT_MPI(MPI_Grequest_complete(r));
    KT_MPI(MPI_Request_free(&r));
    KT_EQ_INT(a.nfree, 1);
    KT_EQ_INT(a.nquery, 0);

    /* 4. cancel: before and after completion */
    r = start(&a, 1);
    KT_MPI(MPI_Cancel(&r));
    KT_EQ_INT(a.ncancel, 1);
    KT_EQ_INT(a.last_complete_flag, 0);
    KT_MPI(MPI_Grequest_complete(r));
    KT_MPI(MPI_Wait(&r, &st));
    KT_MPI(MPI_Test_cancelled(&st, &canc));
    KT_EQ_INT(canc, 1);
    r = start(&b, 2);
    KT_MPI(MPI_Grequest_complete(r));
    KT_MPI(MPI_Cancel(&r));
    KT_EQ_INT(b.ncancel, 1);
    KT_EQ_INT(b.last_complete_flag, 1);
    KT_MPI(MPI_Wait(&r, &st));
    KT_MPI(MPI_Test_cancelled(&st, &canc));
    KT_EQ_INT(canc, 0);

    /* 5. Waitany / Waitsome / Testall over several */
    rs[0] = start(&a, 1); rs[1] = start(&b, 2); rs[2] = start(&c, 3);
    KT_MPI(MPI_Grequest_complete(rs[1]));
    int idx = -1;
    KT_MPI(MPI_Waitany(3, rs, &idx, &st));
    KT_EQ_INT(idx, 1);
    check_status(&st, 2);
    KT_CHECK(rs[1] == MPI_REQUEST_NULL, "freed");
    KT_MPI(MPI_Testall(3, rs, &flag, sts));
    KT_EQ_INT(flag, 0);
    KT_EQ_INT(a.nquery + c.nquery, 0);
    KT_MPI(MPI_Grequest_complete(rs[0]));
    KT_MPI(MPI_Grequest_complete(rs[2]));
    int outc = -1, ind[3];
    KT_MPI(MPI_Waitsome(3, rs, &outc, ind, sts));
    KT_EQ_INT(outc, 2);
    KT_EQ_INT(ind[0], 0);
    KT_EQ_INT(ind[1], 2);
    check_status(&sts[0], 1);
    check_status(&sts[1], 3);
    KT_EQ_INT(a.nfree + b.nfree + c.nfree, 3);
    KT_CHECK(a.freed_order > b.freed_order && c.freed_order > b.freed_order, "b was freed first");

    /* 6. errors from the callbacks */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    r = start(&a, 1);
    a.query_rc = MPI_ERR_OTHER;
    KT_MPI(MPI_Grequest_complete(r));
    KT_ERRCLASS(MPI_Wait(&r, &st), MPI_ERR_OTHER);
    KT_CHECK(r == MPI_REQUEST_NULL, "freed even though query failed");
    KT_EQ_INT(a.nfree, 1);
    r = start(&a, 1);
    a.free_rc = MPI_ERR_INTERN;
    KT_MPI(MPI_Grequest_complete(r));
    KT_ERRCLASS(MPI_Wait(&r, &st), MPI_ERR_INTERN);
    /* query fails over free */
    r = start(&a, 1);
    a.free_rc = MPI_ERR_INTERN; a.query_rc = MPI_ERR_FILE;
    KT_MPI(MPI_Grequest_complete(r));
    KT_ERRCLASS(MPI_Test(&r, &flag, &st), MPI_ERR_FILE);
    KT_EQ_INT(flag, 1);
    /* in a multiple-completion call: MPI_ERR_IN_STATUS, the code in the status */
    rs[0] = start(&a, 1); rs[1] = start(&b, 2); rs[2] = start(&c, 3);
    b.query_rc = MPI_ERR_OTHER;
    for (int i = 0; i < 3; i++) KT_MPI(MPI_Grequest_complete(rs[i]));
    KT_ERRCLASS(MPI_Waitall(3, rs, sts), MPI_ERR_IN_STATUS);
    KT_EQ_INT(sts[0].MPI_ERROR, MPI_SUCCESS);
    int cls = -1;
    MPI_Error_class(sts[1].MPI_ERROR, &cls);
    KT_EQ_INT(cls, MPI_ERR_OTHER);
    KT_EQ_INT(sts[2].MPI_ERROR, MPI_SUCCESS);
    KT_EQ_INT(a.nfree + b.nfree + c.nfree, 3);
    for (int i = 0; i < 3; i++) KT_CHECK(rs[i] == MPI_REQUEST_NULL, "all freed");
    /* Request_get_status returns query_fn's error */
    r = start(&a, 1);
    a.query_rc = MPI_ERR_OTHER;
    KT_MPI(MPI_Grequest_complete(r));
    KT_ERRCLASS(MPI_Request_get_status(r, &flag, &st), MPI_ERR_OTHER);
    a.query_rc = MPI_SUCCESS;
    KT_MPI(MPI_Wait(&r, &st));
    /* Request_free of a complete one returns free_fn's error; cancel_fn's error goes to MPI_Cancel */
    r = start(&a, 1);
    a.free_rc = MPI_ERR_OTHER;
    KT_MPI(MPI_Grequest_complete(r));
    KT_ERRCLASS(MPI_Request_free(&r), MPI_ERR_OTHER);
    r = start(&a, 1);
    a.cancel_rc = MPI_ERR_OTHER;
    KT_ERRCLASS(MPI_Cancel(&r), MPI_ERR_OTHER);
    KT_MPI(MPI_Grequest_complete(r));
    KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    /* misuse */
    KT_ERRCLASS(MPI_Grequest_complete(MPI_REQUEST_NULL), MPI_ERR_REQUEST);
    r = start(&a, 1);
    KT_MPI(MPI_Grequest_complete(r));
    KT_ERRCLASS(MPI_Grequest_complete(r), MPI_ERR_REQUEST);
    KT_ERRCLASS(MPI_Start(&r), MPI_ERR_REQUEST);                 /* not persistent */
    KT_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    {
        int x;
        MPI_Request p2p;
        KT_MPI(MPI_Irecv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &p2p));
        KT_ERRCLASS(MPI_Grequest_complete(p2p), MPI_ERR_REQUEST);
        KT_MPI(MPI_Wait(&p2p, MPI_STATUS_IGNORE));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
