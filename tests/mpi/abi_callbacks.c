/* abi_callbacks: the callbacks with a context that libmpi offers the
 * foreign-ABI shims (kumi/abi.h): a user op created with
 * kumi_abi_op_create gets its context and the whole count on every call
 * (Allreduce, Reduce_local, an accumulate-free reduction of a derived type),
 * and error handlers created with kumi_abi_errhandler_create get their
 * context, the object kind and a pointer to the native handle of the
 * communicator or window that failed, and the error code; and the codes that
 * failed calls return pass kumi_abi_set_err_out's translation, once. */
#include "kt.h"
#include <kumi/abi.h>

struct opctx { int magic; int calls; int factor; };

static void scaled_sum(void *in, void *inout, MPI_Count len, MPI_Datatype dt, void *ctx)
{
    struct opctx *c = ctx;
    KT_CHECK(c && c->magic == 0x5eed, "op context lost");
    KT_CHECK(dt == MPI_INT, "datatype handle %p is not MPI_INT", (void *)dt);
    c->calls++;
    for (MPI_Count i = 0; i < len; i++) ((int *)inout)[i] += c->factor * ((int *)in)[i];
}

struct ehctx { int magic; int calls; int kind; void *handle; int code; };

static int hook_calls;
static int plus_million(int code)
{
    hook_calls++;
    return code + 1000000;
}

static void handler(int objkind, void *handle, int *errcode, void *ctx)
{
    struct ehctx *c = ctx;
    KT_CHECK(c && c->magic == 0xe44, "error handler context lost");
    c->calls++;
    c->kind = objkind;
    c->handle = objkind == KUMI_ABI_ERRH_COMM ? (void *)*(MPI_Comm *)handle : (void *)*(MPI_Win *)handle;
    c->code = *errcode;
}

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* ops */
    struct opctx oc = { 0x5eed, 0, 1 };
    MPI_Op op;
    KT_MPI(kumi_abi_op_create(scaled_sum, &oc, 1, &op));
    enum { N = 1000 };
    static int v[N], r[N];
    for (int i = 0; i < N; i++) v[i] = rank + i;
    KT_MPI(MPI_Allreduce(v, r, N, MPI_INT, op, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) KT_EQ_INT(r[i], size * (size - 1) / 2 + size * i);
    int calls = 0;
    KT_MPI(MPI_Allreduce(&oc.calls, &calls, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    KT_CHECK(size == 1 || calls > 0, "the op was never called");
    int a[3] = { 1, 2, 3 }, b[3] = { 10, 20, 30 };
    oc.factor = 2;
    oc.calls = 0;
    KT_MPI(MPI_Reduce_local(a, b, 3, MPI_INT, op));
    KT_EQ_INT(oc.calls, 1);
    KT_EQ_INT(b[0], 12); KT_EQ_INT(b[1], 24); KT_EQ_INT(b[2], 36);
    KT_MPI(MPI_Op_free(&op));
    KT_CHECK(op == MPI_OP_NULL, "MPI_Op_free left the handle");

    /* error handlers: communicator */
    struct ehctx ec = { 0xe44, 0, 0, NULL, 0 };
    MPI_Errhandler eh;
    KT_MPI(kumi_abi_errhandler_create(KUMI_ABI_ERRH_COMM, handler, &ec, &eh));
    MPI_Comm dup;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    KT_MPI(MPI_Comm_set_errhandler(dup, eh));
    int x = 0, cls = -1;
    int rc = MPI_Send(&x, 1, MPI_INT, size + 5, 0, dup);
    KT_CHECK(rc != MPI_SUCCESS, "a send to rank %d succeeded", size + 5);
    KT_EQ_INT(ec.calls, 1);
    KT_EQ_INT(ec.kind, KUMI_ABI_ERRH_COMM);
    KT_CHECK(ec.handle == (void *)dup, "the handler got %p, not the communicator %p", ec.handle, (void *)dup);
    MPI_Error_class(ec.code, &cls);
    KT_EQ_INT(cls, MPI_ERR_RANK);
    KT_MPI(MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER));
    KT_EQ_INT(ec.calls, 2);
    KT_EQ_INT(ec.code, MPI_ERR_OTHER);
    KT_MPI(MPI_Errhandler_free(&eh));
    KT_MPI(MPI_Comm_free(&dup));

    /* window */
    struct ehctx wc = { 0xe44, 0, 0, NULL, 0 };
    KT_MPI(kumi_abi_errhandler_create(KUMI_ABI_ERRH_WIN, handler, &wc, &eh));
    MPI_Win w;
    int *base;
    KT_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
    KT_MPI(MPI_Win_set_errhandler(w, eh));
    rc = MPI_Put(&x, 1, MPI_INT, 0, 0, 1, MPI_INT, w);          /* no epoch */
    KT_CHECK(rc != MPI_SUCCESS, "a put outside an epoch succeeded");
    KT_EQ_INT(wc.calls, 1);
    KT_EQ_INT(wc.kind, KUMI_ABI_ERRH_WIN);
    KT_CHECK(wc.handle == (void *)w, "the handler got %p, not the window %p", wc.handle, (void *)w);
    MPI_Error_class(wc.code, &cls);
    KT_EQ_INT(cls, MPI_ERR_RMA_SYNC);
    KT_MPI(MPI_Win_free(&w));
    KT_MPI(MPI_Errhandler_free(&eh));

    /* error codes in the caller's ABI: the hook translates what failed calls return (after
     * the handler, which gets Kumi's code), nothing else */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    hook_calls = 0;
    kumi_abi_set_err_out(plus_million);
    rc = MPI_Send(&x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    KT_CHECK(rc >= 1000000, "the code %d did not pass the hook", rc);
    KT_EQ_INT(hook_calls, 1);
    MPI_Error_class(rc - 1000000, &cls);
    KT_EQ_INT(cls, MPI_ERR_RANK);
    rc = MPI_Waitall(-1, NULL, NULL);                   /* an entry whose own code reports errors */
    KT_CHECK(rc >= 1000000, "MPI_Waitall's code %d did not pass the hook", rc);
    KT_ERRCLASS(kumi_abi_op_create(NULL, &oc, 1, &op) - 1000000, MPI_ERR_ARG);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));                /* success: untouched */
    int n = hook_calls;
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_EQ_INT(hook_calls, n);
    kumi_abi_set_err_out(NULL);
    rc = MPI_Send(&x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    KT_CHECK(rc > 0 && rc < 1000000, "with no hook the code is Kumi's: %d", rc);

    /* bad arguments */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    KT_ERRCLASS(kumi_abi_op_create(NULL, &oc, 1, &op), MPI_ERR_ARG);
    KT_ERRCLASS(kumi_abi_errhandler_create(7, handler, &ec, &eh), MPI_ERR_ARG);
    KT_ERRCLASS(kumi_abi_errhandler_create(KUMI_ABI_ERRH_COMM, handler, &ec, NULL), MPI_ERR_ARG);

    KT_MPI(MPI_Finalize());
    if (rank == 0) printf("abi_callbacks: ok\n");
    return 0;
}
