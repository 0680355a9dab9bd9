/* ompi_xlate: built with a foreign mpicc (Debian's mpicc.openmpi) and run on Kumi through the
 * Open MPI ABI shim (components/abi/ompi); tests/scripts/abi_ompi_progs.sh runs it.
 *
 * Plain MPI against whatever mpi.h it was compiled with: every constant below is the foreign
 * header's, so each check is one of the shim's translations (handles, ranks, tags, error
 * classes, statuses and their arrays, comparison results, combiners, thread levels,
 * sentinels, string lengths, user ops, error handlers).  It first checks that the library is
 * really Kumi, reached through a libmpi.so.40 of Kumi's abi/ompi folder. */
#include <mpi.h>
#include <stdio.h>
/* tests/abi/mpich_xlate.c includes this file for the MPICH shim with its own names */
#ifndef XLATE_NAME
#define XLATE_NAME "ompi_xlate"
#define XLATE_DIR "/abi/ompi/"
#define XLATE_LIB "libmpi.so.40"
#endif
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

#define FAIL(...) do { fprintf(stderr, "FAIL rank %d line %d: ", rank, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL("`" #c "`: " __VA_ARGS__); } while (0)
#define OK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) FAIL("%s returned %d", #call, rc_); } while (0)
#define EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) FAIL("%s == %lld, expected %s == %lld", #a, a_, #b, b_); } while (0)
#define ERRCLASS(call, cls) do { int e_ = (call), c_ = -1; \
    if (e_ == MPI_SUCCESS) FAIL("%s succeeded, expected class %d", #call, (int)(cls)); \
    OK(MPI_Error_class(e_, &c_)); EQ(c_, cls); } while (0)

static int rank, size;

static void where(void)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = -1;
    OK(MPI_Get_library_version(v, &len));
    CHECK(strstr(v, "Kumi") != NULL, "MPI_Get_library_version says \"%s\": not Kumi", v);
    CHECK(len == (int)strlen(v) && len < MPI_MAX_LIBRARY_VERSION_STRING, "length %d", len);
    int ver, sub;
    OK(MPI_Get_version(&ver, &sub));
    EQ(ver, MPI_VERSION);       /* the version of the header the program was built with */
    EQ(sub, MPI_SUBVERSION);
    /* the libmpi.so.40 in this process is Kumi's shim, next to Kumi's libmpi.so.0 */
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL, "no /proc/self/maps");
    char line[4096];
    int shim = 0, kumi = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, XLATE_DIR) && strstr(line, XLATE_LIB)) shim = 1;
        if (strstr(line, "libmpi.so.0")) kumi = 1;
    }
    fclose(f);
    CHECK(shim, "no " XLATE_LIB " of an " XLATE_DIR " folder mapped");
    CHECK(kumi, "Kumi's libmpi.so.0 is not mapped");
}

static void sum_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    CHECK(*dt == MPI_INT, "user op gets the foreign MPI_INT");
    /* digit-string concatenation: associative, not commutative */
    for (int i = 0; i < *len; i++) {
        int b = ((int *)inout)[i], p = 1;
        for (int t = b; t > 0; t /= 10) p *= 10;
        ((int *)inout)[i] = ((int *)in)[i] * p + b;
    }
}

static int copies, deletes;
static MPI_Comm copy_comm;
static int copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    copies++;
    copy_comm = comm;
    CHECK(*(int *)extra == 77, "extra_state");
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}
static int delete_fn(MPI_Comm comm, int keyval, void *val, void *extra)
{
    deletes++;
    CHECK(*(int *)extra == 77, "extra_state");
    return MPI_SUCCESS;
}

static int handler_calls, handler_code;
static MPI_Comm handler_comm;
static void handler(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_code = *code;
    handler_comm = *comm;
}

int main(int argc, char **argv)
{
    int provided = -1;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided));
    CHECK(provided == MPI_THREAD_SINGLE || provided == MPI_THREAD_FUNNELED ||
          provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    int q = -1;
    OK(MPI_Query_thread(&q));
    EQ(q, provided);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    where();

    /* predefined handles come back as the foreign objects */
    MPI_Comm c;
    MPI_Group g, gw;
    MPI_Errhandler eh;
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "default handler");
    OK(MPI_Errhandler_free(&eh));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "handler set");
    OK(MPI_Errhandler_free(&eh));
    int res = -1;
    OK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res));
    EQ(res, MPI_IDENT);
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    OK(MPI_Comm_compare(MPI_COMM_WORLD, c, &res));
    EQ(res, MPI_CONGRUENT);
    OK(MPI_Comm_free(&c));
    CHECK(c == MPI_COMM_NULL, "freed comm is MPI_COMM_NULL");
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &c));
    if (rank == 0) CHECK(c == MPI_COMM_NULL, "split with MPI_UNDEFINED");
    else { OK(MPI_Comm_compare(MPI_COMM_WORLD, c, &res)); EQ(res, size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL); OK(MPI_Comm_free(&c)); }
    OK(MPI_Comm_group(MPI_COMM_WORLD, &gw));
    OK(MPI_Group_compare(gw, gw, &res));
    EQ(res, MPI_IDENT);
    int r1[2] = { 0, MPI_PROC_NULL }, r2[2] = { -7, -7 };
    OK(MPI_Group_incl(gw, 1, r1, &g));
    OK(MPI_Group_translate_ranks(gw, 2, r1, g, r2));
    EQ(r2[0], 0);
    EQ(r2[1], MPI_PROC_NULL);
    if (size > 1) {
        int r3 = size - 1;
        OK(MPI_Group_translate_ranks(gw, 1, &r3, g, r2));
        EQ(r2[0], MPI_UNDEFINED);
    }
    OK(MPI_Group_free(&g));
    CHECK(g == MPI_GROUP_NULL, "freed group");
    OK(MPI_Group_free(&gw));
    int kind = -1;
    OK(MPI_Topo_test(MPI_COMM_WORLD, &kind));
    EQ(kind, MPI_UNDEFINED);

    OK(MPI_Pcontrol(1));

    /* Fortran integers of handles, both ways */
    MPI_Fint fw = MPI_Comm_c2f(MPI_COMM_WORLD);
    CHECK(MPI_Comm_f2c(fw) == MPI_COMM_WORLD, "c2f/f2c of MPI_COMM_WORLD");
    CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE, "c2f/f2c of MPI_DOUBLE");
    CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_SUM)) == MPI_SUM, "c2f/f2c of MPI_SUM");
    CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "c2f/f2c of MPI_REQUEST_NULL");

    /* attributes with predefined keys */
    int *tagub = NULL, flag = 0;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tagub, &flag));
    CHECK(flag && *tagub >= 32767, "MPI_TAG_UB");

    /* attribute keyvals: the program's callbacks, and the predefined ones compared by address */
    static int extra = 77;
    int kv_user, kv_dup, kv_null;
    static char anchor[4];
    OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &kv_user, &extra));
    OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kv_dup, NULL));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kv_null, NULL));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    OK(MPI_Comm_set_attr(c, kv_user, anchor));
    OK(MPI_Comm_set_attr(c, kv_dup, anchor + 2));
    OK(MPI_Comm_set_attr(c, kv_null, anchor + 3));
    MPI_Comm c2;
    OK(MPI_Comm_dup(c, &c2));
    EQ(copies, 1);
    CHECK(copy_comm == c, "copy callback gets the old communicator");
    void *av = NULL;
    OK(MPI_Comm_get_attr(c2, kv_user, &av, &flag));
    CHECK(flag && av == anchor + 1, "copied by the program's callback");
    OK(MPI_Comm_get_attr(c2, kv_dup, &av, &flag));
    CHECK(flag && av == anchor + 2, "MPI_COMM_DUP_FN");
    OK(MPI_Comm_get_attr(c2, kv_null, &av, &flag));
    CHECK(!flag, "MPI_COMM_NULL_COPY_FN");
    OK(MPI_Comm_free(&c2));
    EQ(deletes, 1);
    OK(MPI_Comm_delete_attr(c, kv_user));
    EQ(deletes, 2);
    OK(MPI_Comm_free(&c));
    OK(MPI_Comm_free_keyval(&kv_user));
    CHECK(kv_user == MPI_KEYVAL_INVALID, "freed keyval");
    OK(MPI_Comm_free_keyval(&kv_dup));
    OK(MPI_Comm_free_keyval(&kv_null));
    int tkv;
    MPI_Datatype tdup;
    OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &tkv, NULL));
    OK(MPI_Type_dup(MPI_INT, &tdup));
    OK(MPI_Type_set_attr(tdup, tkv, anchor));
    MPI_Datatype tdup2;
    OK(MPI_Type_dup(tdup, &tdup2));
    OK(MPI_Type_get_attr(tdup2, tkv, &av, &flag));
    CHECK(flag && av == anchor, "MPI_TYPE_DUP_FN");
    OK(MPI_Type_free(&tdup2));
    OK(MPI_Type_free(&tdup));
    OK(MPI_Type_free_keyval(&tkv));

    /* point-to-point: statuses, wildcards, MPI_PROC_NULL */
    MPI_Status st;
    memset(&st, 0x5a, sizeof st);
    int x = 0;
    OK(MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st));
    EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    EQ(st.MPI_TAG, MPI_ANY_TAG);
    int cnt = -1;
    OK(MPI_Get_count(&st, MPI_INT, &cnt));
    EQ(cnt, 0);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int sbuf[4] = { rank, rank + 1, rank + 2, rank + 3 }, rbuf[4] = { 0 };
    MPI_Request rq[2];
    OK(MPI_Irecv(rbuf, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Isend(sbuf, 3, MPI_INT, right, 42, MPI_COMM_WORLD, &rq[1]));
    MPI_Status sts[2];
    OK(MPI_Waitall(2, rq, sts));
    CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "completed requests are MPI_REQUEST_NULL");
    EQ(sts[0].MPI_SOURCE, left);
    EQ(sts[0].MPI_TAG, 42);
    OK(MPI_Get_count(&sts[0], MPI_INT, &cnt));
    EQ(cnt, 3);
    OK(MPI_Get_elements(&sts[0], MPI_SHORT, &cnt));
    EQ(cnt, (int)(3 * sizeof(int) / sizeof(short)));
    OK(MPI_Get_count(&sts[0], MPI_DOUBLE, &cnt));
    if (sizeof(int) * 3 % sizeof(double)) EQ(cnt, MPI_UNDEFINED);
    EQ(rbuf[2], left + 2);
    /* truncation: the error class and the status of MPI_ERRORS_RETURN */
    OK(MPI_Isend(sbuf, 4, MPI_INT, right, 7, MPI_COMM_WORLD, &rq[1]));
    ERRCLASS(MPI_Recv(rbuf, 2, MPI_INT, left, 7, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE);
    OK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    /* probe, then Waitany / Testsome with indices and statuses */
    OK(MPI_Send(sbuf, 2, MPI_INT, right, 9, MPI_COMM_WORLD));
    OK(MPI_Probe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &st));
    EQ(st.MPI_SOURCE, left);
    OK(MPI_Get_count(&st, MPI_INT, &cnt));
    EQ(cnt, 2);
    OK(MPI_Recv(rbuf, 4, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    /* MPI_Status_c2f / f2c (mpi4py imports them): the foreign Fortran status is the C one as
     * integers, round trip keeps source, tag, error and count; the ignore sentinels and NULL are
     * refused (MPI_ERR_ARG, through MPI_COMM_WORLD's handler: MPI_ERRORS_RETURN here) */
    {
        MPI_Fint fst[sizeof(MPI_Status) / sizeof(MPI_Fint) + 1];
        MPI_Status back;
        memset(fst, 0x5a, sizeof fst);
        st.MPI_ERROR = MPI_ERR_TAG;
        OK(MPI_Status_c2f(&st, fst));
        EQ(fst[offsetof(MPI_Status, MPI_SOURCE) / sizeof(MPI_Fint)], left);
        EQ(fst[offsetof(MPI_Status, MPI_TAG) / sizeof(MPI_Fint)], 9);
        EQ(fst[offsetof(MPI_Status, MPI_ERROR) / sizeof(MPI_Fint)], MPI_ERR_TAG);
        EQ(fst[sizeof(MPI_Status) / sizeof(MPI_Fint)], 0x5a5a5a5a);   /* nothing written beyond */
        memset(&back, 0, sizeof back);
        OK(MPI_Status_f2c(fst, &back));
        CHECK(memcmp(&back, &st, sizeof st) == 0, "c2f then f2c gives the status back");
        EQ(back.MPI_SOURCE, left);
        EQ(back.MPI_ERROR, MPI_ERR_TAG);
        OK(MPI_Get_count(&back, MPI_INT, &cnt));
        EQ(cnt, 2);
        ERRCLASS(MPI_Status_c2f(MPI_STATUS_IGNORE, fst), MPI_ERR_ARG);
        ERRCLASS(MPI_Status_c2f(MPI_STATUSES_IGNORE, fst), MPI_ERR_ARG);
        ERRCLASS(MPI_Status_c2f(&st, NULL), MPI_ERR_ARG);
        ERRCLASS(MPI_Status_f2c(NULL, &back), MPI_ERR_ARG);
        ERRCLASS(MPI_Status_f2c(fst, MPI_STATUS_IGNORE), MPI_ERR_ARG);
    }
    int idx = -5;
    rq[0] = MPI_REQUEST_NULL;
    OK(MPI_Irecv(rbuf, 4, MPI_INT, left, 11, MPI_COMM_WORLD, &rq[1]));
    OK(MPI_Send(sbuf, 1, MPI_INT, right, 11, MPI_COMM_WORLD));
    OK(MPI_Waitany(2, rq, &idx, &st));
    EQ(idx, 1);
    EQ(st.MPI_TAG, 11);
    OK(MPI_Waitany(2, rq, &idx, &st));
    EQ(idx, MPI_UNDEFINED);
    int outc = -5, ind[2];
    OK(MPI_Testsome(2, rq, &outc, ind, sts));
    EQ(outc, MPI_UNDEFINED);
    OK(MPI_Irecv(rbuf, 4, MPI_INT, left, 12, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Send(sbuf, 1, MPI_INT, right, 12, MPI_COMM_WORLD));
    outc = 0;
    while (outc == 0) OK(MPI_Testsome(2, rq, &outc, ind, sts));
    EQ(outc, 1);
    EQ(ind[0], 0);
    EQ(sts[0].MPI_SOURCE, left);
    /* cancel */
    OK(MPI_Irecv(rbuf, 1, MPI_INT, left, 999, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Cancel(&rq[0]));
    OK(MPI_Wait(&rq[0], &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "cancelled");
    OK(MPI_Status_set_cancelled(&st, 0));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(!flag, "set_cancelled");
    OK(MPI_Status_set_elements(&st, MPI_INT, 5));
    OK(MPI_Get_count(&st, MPI_INT, &cnt));
    EQ(cnt, 5);

    /* errors: classes, codes, strings bounded by the foreign MPI_MAX_ERROR_STRING */
    ERRCLASS(MPI_Send(sbuf, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    ERRCLASS(MPI_Send(sbuf, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
    ERRCLASS(MPI_Send(sbuf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    ERRCLASS(MPI_Send(sbuf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    ERRCLASS(MPI_Send(sbuf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    char es[MPI_MAX_ERROR_STRING + 64];
    memset(es, 'z', sizeof es);
    int el = -1;
    OK(MPI_Error_string(MPI_ERR_RMA_SYNC, es, &el));
    CHECK(el >= 0 && el < MPI_MAX_ERROR_STRING && es[el] == 0 && es[MPI_MAX_ERROR_STRING] == 'z', "error string bound");
    int ec = -1;
    OK(MPI_Error_class(MPI_ERR_IN_STATUS, &ec));
    EQ(ec, MPI_ERR_IN_STATUS);
    int ucls, ucode;
    OK(MPI_Add_error_class(&ucls));
    OK(MPI_Add_error_code(ucls, &ucode));
    OK(MPI_Error_class(ucode, &ec));
    EQ(ec, ucls);
    CHECK(ucls > MPI_ERR_LASTCODE && ucode > MPI_ERR_LASTCODE, "user classes above the predefined ones");

    /* a user error handler gets the foreign communicator and code */
    MPI_Errhandler mine;
    OK(MPI_Comm_create_errhandler(handler, &mine));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    OK(MPI_Comm_set_errhandler(c, mine));
    int rc = MPI_Send(sbuf, 1, MPI_INT, size + 3, 0, c);
    EQ(handler_calls, 1);
    CHECK(handler_comm == c, "handler gets the communicator");
    OK(MPI_Error_class(handler_code, &ec));
    EQ(ec, MPI_ERR_RANK);
    OK(MPI_Error_class(rc, &ec));
    EQ(ec, MPI_ERR_RANK);
    OK(MPI_Comm_call_errhandler(c, MPI_ERR_OTHER));
    EQ(handler_calls, 2);
    EQ(handler_code, MPI_ERR_OTHER);
    OK(MPI_Comm_free(&c));
    OK(MPI_Errhandler_free(&mine));

    /* collectives: MPI_IN_PLACE, predefined and user ops, MPI_ROOT-free intracomm roots */
    int v = rank + 1, sum = 0;
    OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    EQ(sum, size * (size + 1) / 2);
    v = rank + 1;
    OK(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    EQ(v, size);
    MPI_Op op;
    OK(MPI_Op_create(sum_op, 0, &op));
    v = rank % 9 + 1;
    OK(MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &v, rank == 0 ? &v : NULL, 1, MPI_INT, op, 0, MPI_COMM_WORLD));
    if (rank == 0 && size <= 9) { int e = 0; for (int i = 0; i < size; i++) e = e * 10 + i + 1; EQ(v, e); }
    OK(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL, "freed op");
    int *all = malloc(sizeof(int) * size);
    all[rank] = rank * 3;
    OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) EQ(all[i], i * 3);
    free(all);

    /* derived datatypes: combiners, envelopes, MPI_BOTTOM */
    MPI_Datatype vec, st2;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    int ni, na, nd, comb;
    OK(MPI_Type_get_envelope(vec, &ni, &na, &nd, &comb));
    EQ(comb, MPI_COMBINER_VECTOR);
    OK(MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb));
    EQ(comb, MPI_COMBINER_NAMED);
    int bl[2] = { 1, 1 };
    MPI_Aint dis[2];
    int pair[2] = { 0, 0 };
    OK(MPI_Get_address(&pair[0], &dis[0]));
    OK(MPI_Get_address(&pair[1], &dis[1]));
    MPI_Datatype tys[2] = { MPI_INT, MPI_INT };
    OK(MPI_Type_create_struct(2, bl, dis, tys, &st2));
    OK(MPI_Type_commit(&st2));
    if (rank == 0) { pair[0] = 17; pair[1] = 19; }
    OK(MPI_Bcast(MPI_BOTTOM, 1, st2, 0, MPI_COMM_WORLD));
    EQ(pair[0], 17);
    EQ(pair[1], 19);
    char tn[MPI_MAX_OBJECT_NAME];
    int tl;
    OK(MPI_Type_get_name(MPI_INT, tn, &tl));
    CHECK(tl < MPI_MAX_OBJECT_NAME && strcmp(tn, "MPI_INT") == 0, "type name %s", tn);
    int ci[8];
    MPI_Aint ca[2];
    MPI_Datatype ct[2];
    OK(MPI_Type_get_envelope(st2, &ni, &na, &nd, &comb));
    EQ(comb, MPI_COMBINER_STRUCT);
    EQ(nd, 2);
    OK(MPI_Type_get_contents(st2, 8, 2, 2, ci, ca, ct));
    CHECK(ct[0] == MPI_INT && ct[1] == MPI_INT, "contents: predefined types");
    int gs[2] = { 4, 6 }, ss[2] = { 2, 3 }, so[2] = { 1, 2 };
    MPI_Datatype sub;
    OK(MPI_Type_create_subarray(2, gs, ss, so, MPI_ORDER_FORTRAN, MPI_DOUBLE, &sub));
    OK(MPI_Type_get_envelope(sub, &ni, &na, &nd, &comb));
    EQ(comb, MPI_COMBINER_SUBARRAY);
    int si[16];
    OK(MPI_Type_get_contents(sub, 16, 0, 1, si, ca, ct));
    EQ(si[0], 2);
    EQ(si[7], MPI_ORDER_FORTRAN);
    CHECK(ct[0] == MPI_DOUBLE, "subarray of MPI_DOUBLE");
    OK(MPI_Type_free(&sub));
    OK(MPI_Type_free(&vec));
    OK(MPI_Type_free(&st2));
    CHECK(st2 == MPI_DATATYPE_NULL, "freed type");

    /* topology: MPI_PROC_NULL neighbours */
    int dims[1] = { size }, periods[1] = { 0 }, src, dst;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c));
    OK(MPI_Topo_test(c, &kind));
    EQ(kind, MPI_CART);
    OK(MPI_Cart_shift(c, 0, 1, &src, &dst));
    if (rank == 0) EQ(src, MPI_PROC_NULL);
    if (rank == size - 1) EQ(dst, MPI_PROC_NULL);
    OK(MPI_Comm_free(&c));
    /* neighbour alltoallw on a ring: the type arrays' lengths come from the topology */
    periods[0] = 1;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c));
    int nb_s[2] = { rank, rank }, nb_r[2] = { -1, -1 }, nb_c[2] = { 1, 1 };
    MPI_Aint nb_d[2] = { 0, sizeof(int) };
    MPI_Datatype nb_t[2] = { MPI_INT, MPI_INT };
    OK(MPI_Neighbor_alltoallw(nb_s, nb_c, nb_d, nb_t, nb_r, nb_c, nb_d, nb_t, c));
    EQ(nb_r[0], left);
    EQ(nb_r[1], right);
    OK(MPI_Comm_free(&c));

    /* one-sided: MPI_MODE_* asserts, lock types, MPI_PROC_NULL targets */
    MPI_Win win;
    int wbuf = -1;
    OK(MPI_Win_create(&wbuf, sizeof wbuf, sizeof wbuf, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    int *flavor = NULL, *model = NULL;
    OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "MPI_WIN_CREATE_FLAVOR %d", flag ? *flavor : -1);
    OK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && (*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE), "MPI_WIN_MODEL %d", flag ? *model : -1);
    void *base = NULL;
    OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == &wbuf, "MPI_WIN_BASE");
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    OK(MPI_Put(&rank, 1, MPI_INT, right, 0, 1, MPI_INT, win));
    OK(MPI_Put(&rank, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED | MPI_MODE_NOSTORE, win));
    EQ(wbuf, left);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_lock(MPI_LOCK_SHARED, left, MPI_MODE_NOCHECK, win));
    int got = -1;
    OK(MPI_Get(&got, 1, MPI_INT, left, 0, 1, MPI_INT, win));
    OK(MPI_Win_unlock(left, win));
    EQ(got, (left + size - 1) % size);
    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "freed win");

    /* info: key lengths bounded by the foreign MPI_MAX_INFO_KEY */
    MPI_Info info;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "shim_key", "value"));
    char key[MPI_MAX_INFO_KEY], val[MPI_MAX_INFO_VAL];
    OK(MPI_Info_get_nthkey(info, 0, key));
    CHECK(strcmp(key, "shim_key") == 0, "key %s", key);
    OK(MPI_Info_get(info, key, sizeof val - 1, val, &flag));
    CHECK(flag && strcmp(val, "value") == 0, "value");
    OK(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL, "freed info");

    OK(MPI_Barrier(MPI_COMM_WORLD));
#ifdef XLATE_EXTRA
    XLATE_EXTRA();
#endif
    if (rank == 0) printf(XLATE_NAME ": %d ranks ok\n", size);
    OK(MPI_Finalize());
    return 0;
}
