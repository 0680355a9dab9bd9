/* Window objects: the four creation flavours and their attributes (base,
 * size, disp_unit, flavor, model), names, info hints, error handlers on
 * windows (predefined and user, called with the right window and class),
 * user keyvals (delete callbacks at Win_delete_attr and Win_free, with the
 * right values), bad arguments, Win_allocate_shared + Win_shared_query
 * (every rank reads every other rank's part through the queried pointers;
 * contiguous and noncontiguous layouts; size-0 ranks; MPI_PROC_NULL),
 * Win_allocate memory seen through Win_shared_query on one host (on each
 * host, in a job of several hosts or IMPI clients),
 * Win_attach / detach, Alloc_mem / Free_mem, and a window that outlives the
 * communicator it was made on. */
#include "kt.h"
#include <stdint.h>
#include <unistd.h>

static int rank, nprocs;

/* ------------------------------------------------------------ helpers */
static void check_attrs(MPI_Win win, void *base, MPI_Aint size, int disp_unit, int flavor)
{
    void *v = NULL;
    int flag = 0;
    KT_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &v, &flag));
    KT_CHECK(flag == 1, "MPI_WIN_BASE flag");
    KT_CHECK(v == base, "MPI_WIN_BASE is %p, expected %p", v, base);
    flag = 0;
    KT_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &v, &flag));
    KT_CHECK(flag == 1, "MPI_WIN_SIZE flag");
    KT_EQ_INT(*(MPI_Aint *)v, size);
    flag = 0;
    KT_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &v, &flag));
    KT_CHECK(flag == 1, "MPI_WIN_DISP_UNIT flag");
    KT_EQ_INT(*(int *)v, disp_unit);
    flag = 0;
    KT_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &v, &flag));
    KT_CHECK(flag == 1, "MPI_WIN_CREATE_FLAVOR flag");
    KT_EQ_INT(*(int *)v, flavor);
    flag = 0;
    KT_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &v, &flag));
    KT_CHECK(flag == 1, "MPI_WIN_MODEL flag");
    KT_EQ_INT(*(int *)v, MPI_WIN_UNIFIED);
}

static void check_info(MPI_Win win, const char *key, const char *want)
{
    MPI_Info used;
    char val[MPI_MAX_INFO_VAL + 1];
    int flag = -1;
    KT_MPI(MPI_Win_get_info(win, &used));
    KT_CHECK(used != MPI_INFO_NULL, "Win_get_info gave MPI_INFO_NULL");
    KT_MPI(MPI_Info_get(used, key, MPI_MAX_INFO_VAL, val, &flag));
    if (!want) KT_CHECK(!flag, "key %s should not be set", key);
    else {
        KT_CHECK(flag, "key %s missing from Win_get_info", key);
        KT_CHECK(!strcmp(val, want), "key %s = '%s', expected '%s'", key, val, want);
    }
    KT_MPI(MPI_Info_free(&used));
}

/* ------------------------------------------- user error handler, keyvals */
static MPI_Win eh_win;
static int eh_class = -1, eh_calls;

static void win_eh(MPI_Win *win, int *code, ...)
{
    eh_win = *win;
    MPI_Error_class(*code, &eh_class);
    eh_calls++;
}

static int del_calls, del_keyval;
static void *del_value;
static MPI_Win del_win;
static int extra_state = 42;

static int win_copy(MPI_Win win, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)win; (void)keyval; (void)extra;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int win_del(MPI_Win win, int keyval, void *value, void *extra)
{
    if (extra != &extra_state) KT_FAIL("win_del: wrong extra_state");
    del_calls++;
    del_keyval = keyval;
    del_value = value;
    del_win = win;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------ Win_create */
static void test_create(void)
{
    int buf[100];
    MPI_Win win;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "true");
    MPI_Info_set(info, "kumi_test_unknown_key", "kept");
    KT_MPI(MPI_Win_create(buf, sizeof buf, sizeof(int), info, MPI_COMM_WORLD, &win));
    MPI_Info_free(&info);
    KT_CHECK(win != MPI_WIN_NULL, "Win_create gave MPI_WIN_NULL");
    check_attrs(win, buf, sizeof buf, sizeof(int), MPI_WIN_FLAVOR_CREATE);

    /* info: hints given at creation come back; Win_set_info adds to them */
    check_info(win, "no_locks", "true");
    check_info(win, "kumi_test_unknown_key", "kept");
    check_info(win, "accumulate_ordering", NULL);
    MPI_Info_create(&info);
    MPI_Info_set(info, "accumulate_ordering", "none");
    KT_MPI(MPI_Win_set_info(win, info));
    MPI_Info_free(&info);
    check_info(win, "accumulate_ordering", "none");
    check_info(win, "no_locks", "true");

    /* names: empty by default, round trip */
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    KT_MPI(MPI_Win_get_name(win, name, &len));
    KT_EQ_INT(len, 0);
    KT_CHECK(name[0] == 0, "default name is '%s'", name);
    KT_MPI(MPI_Win_set_name(win, "a window of ints"));
    KT_MPI(MPI_Win_get_name(win, name, &len));
    KT_CHECK(!strcmp(name, "a window of ints"), "name is '%s'", name);
    KT_EQ_INT(len, (int)strlen("a window of ints"));

    /* group: the communicator's */
    MPI_Group wg, cg;
    int res = -1;
    KT_MPI(MPI_Win_get_group(win, &wg));
    MPI_Comm_group(MPI_COMM_WORLD, &cg);
    MPI_Group_compare(wg, cg, &res);
    KT_EQ_INT(res, MPI_IDENT);
    MPI_Group_free(&wg);
    MPI_Group_free(&cg);

    /* error handlers: MPI_ERRORS_ARE_FATAL by default */
    MPI_Errhandler eh;
    KT_MPI(MPI_Win_get_errhandler(win, &eh));
    KT_CHECK(eh == MPI_ERRORS_ARE_FATAL, "default window error handler is not MPI_ERRORS_ARE_FATAL");
    MPI_Errhandler_free(&eh);
    KT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    KT_MPI(MPI_Win_get_errhandler(win, &eh));
    KT_CHECK(eh == MPI_ERRORS_RETURN, "window error handler is not MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&eh);
    KT_ERRCLASS(MPI_Win_attach(win, buf, 4), MPI_ERR_RMA_FLAVOR);
    KT_ERRCLASS(MPI_Win_detach(win, buf), MPI_ERR_RMA_FLAVOR);
    {
        /* MPI 4.1: any flavour may be queried; memory not shared with this
         * process gives size 0 and NULL, this process's own its address */
        MPI_Aint sz;
        int du, me, np;
        void *p;
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        MPI_Comm_size(MPI_COMM_WORLD, &np);
        KT_MPI(MPI_Win_shared_query(win, me, &sz, &du, &p));
        KT_CHECK(p == buf && sz == (MPI_Aint)sizeof buf && du == (int)sizeof(int),
                 "shared_query of this rank's Win_create memory: %p %ld %d", p, (long)sz, du);
        if (np > 1) {
            KT_MPI(MPI_Win_shared_query(win, (me + 1) % np, &sz, &du, &p));
            KT_CHECK(p == NULL && sz == 0, "shared_query of another rank's Win_create memory: %p %ld", p, (long)sz);
        }
    }
    /* a communicator's handler does not fit a window */
    MPI_Errhandler ceh;
    MPI_Comm_create_errhandler((MPI_Comm_errhandler_function *)(void *)win_eh, &ceh);
    KT_ERRCLASS(MPI_Win_set_errhandler(win, ceh), MPI_ERR_ARG);
    MPI_Errhandler_free(&ceh);
    /* a user handler: called with this window and the error's class */
    KT_MPI(MPI_Win_create_errhandler(win_eh, &eh));
    KT_MPI(MPI_Win_set_errhandler(win, eh));
    KT_MPI(MPI_Errhandler_free(&eh));          /* the window keeps its reference */
    eh_calls = 0;
    int rc = MPI_Win_attach(win, buf, 4);
    KT_CHECK(rc != MPI_SUCCESS, "Win_attach on a Win_create window succeeded");
    KT_EQ_INT(eh_calls, 1);
    KT_CHECK(eh_win == win, "handler called with another window");
    KT_EQ_INT(eh_class, MPI_ERR_RMA_FLAVOR);
    KT_MPI(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    KT_EQ_INT(eh_calls, 2);
    KT_CHECK(eh_win == win, "handler called with another window");
    KT_EQ_INT(eh_class, MPI_ERR_OTHER);
    /* keyval errors go to the window's handler too */
    rc = MPI_Win_set_attr(win, MPI_WIN_BASE, NULL);
    KT_EQ_INT(eh_calls, 3);
    KT_EQ_INT(eh_class, MPI_ERR_KEYVAL);
    KT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    KT_ERRCLASS(MPI_Win_delete_attr(win, MPI_WIN_SIZE), MPI_ERR_KEYVAL);
    KT_ERRCLASS(MPI_Win_set_attr(win, MPI_TAG_UB, NULL), MPI_ERR_KEYVAL);
    {
        int ck;
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ck, NULL);
        KT_ERRCLASS(MPI_Win_set_attr(win, ck, NULL), MPI_ERR_KEYVAL);
        MPI_Comm_free_keyval(&ck);
    }

    /* keyvals: delete callback at Win_delete_attr, at replacement and at Win_free */
    int k1, k2;
    static int v1, v2, v3, v4;
    KT_MPI(MPI_Win_create_keyval(win_copy, win_del, &k1, &extra_state));
    KT_MPI(MPI_Win_create_keyval(MPI_WIN_DUP_FN, MPI_WIN_NULL_DELETE_FN, &k2, NULL));
    void *v;
    int flag = -1;
    KT_MPI(MPI_Win_get_attr(win, k1, &v, &flag));
    KT_EQ_INT(flag, 0);
    del_calls = 0;
    KT_MPI(MPI_Win_set_attr(win, k1, &v1));
    KT_MPI(MPI_Win_set_attr(win, k2, &v2));
    KT_MPI(MPI_Win_get_attr(win, k1, &v, &flag));
    KT_CHECK(flag == 1 && v == &v1, "attribute k1 reads back wrong");
    KT_MPI(MPI_Win_get_attr(win, k2, &v, &flag));
    KT_CHECK(flag == 1 && v == &v2, "attribute k2 reads back wrong");
    KT_MPI(MPI_Win_delete_attr(win, k1));
    KT_EQ_INT(del_calls, 1);
    KT_CHECK(del_value == &v1 && del_keyval == k1 && del_win == win, "delete callback got wrong arguments");
    KT_MPI(MPI_Win_get_attr(win, k1, &v, &flag));
    KT_EQ_INT(flag, 0);
    KT_MPI(MPI_Win_set_attr(win, k1, &v3));
    KT_MPI(MPI_Win_set_attr(win, k1, &v4));    /* replacing: the old value is deleted */
    KT_EQ_INT(del_calls, 2);
    KT_CHECK(del_value == &v3, "replacement deleted the wrong value");
    KT_MPI(MPI_Win_free_keyval(&k1));           /* still alive for the attribute */
    KT_CHECK(k1 == MPI_KEYVAL_INVALID, "Win_free_keyval did not reset the keyval");
    MPI_Win old = win;
    KT_MPI(MPI_Win_free(&win));
    KT_CHECK(win == MPI_WIN_NULL, "Win_free did not set MPI_WIN_NULL");
    KT_EQ_INT(del_calls, 3);
    KT_CHECK(del_value == &v4 && del_win == old, "Win_free deleted the wrong value");
    KT_MPI(MPI_Win_free_keyval(&k2));

    /* Win_create_c, a size-0 window with a NULL base */
    KT_MPI(MPI_Win_create_c(NULL, 0, 16, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    check_attrs(win, NULL, 0, 16, MPI_WIN_FLAVOR_CREATE);
    check_info(win, "no_locks", NULL);
    KT_MPI(MPI_Win_free(&win));
}

/* ----------------------------------------------------- bad arguments */
static void test_errors(void)
{
    MPI_Win win = MPI_WIN_NULL;
    int buf[4];
    void *p = NULL;
    static uint64_t not_an_info[4];
    KT_ERRCLASS(MPI_Win_create(buf, -1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_SIZE);
    KT_ERRCLASS(MPI_Win_create(buf, sizeof buf, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_DISP);
    KT_ERRCLASS(MPI_Win_create(buf, sizeof buf, -4, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_DISP);
    KT_ERRCLASS(MPI_Win_create(buf, sizeof buf, 1, (MPI_Info)(void *)not_an_info, MPI_COMM_WORLD, &win),
                MPI_ERR_INFO);
    KT_ERRCLASS(MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, MPI_COMM_NULL, &win), MPI_ERR_COMM);
    KT_ERRCLASS(MPI_Win_allocate(-8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &win), MPI_ERR_SIZE);
    KT_ERRCLASS(MPI_Win_allocate(8, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &win), MPI_ERR_DISP);
    KT_ERRCLASS(MPI_Win_allocate_shared(-1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &win), MPI_ERR_SIZE);
    KT_ERRCLASS(MPI_Win_allocate_shared_c(8, (MPI_Aint)1 << 40, MPI_INFO_NULL, MPI_COMM_WORLD, &p, &win),
                MPI_ERR_DISP);
    KT_ERRCLASS(MPI_Win_create_dynamic((MPI_Info)(void *)not_an_info, MPI_COMM_WORLD, &win), MPI_ERR_INFO);
    KT_CHECK(win == MPI_WIN_NULL, "a failed creation changed win");

    /* MPI_WIN_NULL */
    win = MPI_WIN_NULL;
    KT_ERRCLASS(MPI_Win_free(&win), MPI_ERR_WIN);
    KT_ERRCLASS(MPI_Win_set_name(MPI_WIN_NULL, "x"), MPI_ERR_WIN);
    {
        MPI_Group g;
        KT_ERRCLASS(MPI_Win_get_group(MPI_WIN_NULL, &g), MPI_ERR_WIN);
        MPI_Errhandler e;
        KT_ERRCLASS(MPI_Win_get_errhandler(MPI_WIN_NULL, &e), MPI_ERR_WIN);
    }
    KT_ERRCLASS(MPI_Win_attach(MPI_WIN_NULL, buf, 4), MPI_ERR_WIN);

    /* intercommunicators cannot carry windows */
    if (nprocs >= 2) {
        MPI_Comm half, inter;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        KT_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter));
        KT_ERRCLASS(MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, inter, &win), MPI_ERR_COMM);
        KT_ERRCLASS(MPI_Win_allocate_shared(8, 1, MPI_INFO_NULL, inter, &p, &win), MPI_ERR_COMM);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
}

/* ------------------------------------------------ shared memory windows */
static MPI_Aint part_size(int r, int variant)
{
    if (variant == 2) return 0;                 /* every rank: nothing */
    if (r % 3 == 1) return 0;                   /* some ranks: nothing */
    return (MPI_Aint)(r + 1) * 100 + (variant ? 13 : 0);   /* odd sizes too */
}

static unsigned char pattern(int r, MPI_Aint i) { return (unsigned char)(r * 31 + i * 7 + 1); }

/* variant 0: contiguous; 1: alloc_shared_noncontig; 2: every rank size 0 */
static void test_shared(int variant)
{
    /* the ranks of this host (all of them, but for a job of several hosts
     * or IMPI clients: memory is shared only inside one) */
    MPI_Comm shm;
    KT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm));
    int rank, nprocs;
    MPI_Comm_rank(shm, &rank);
    MPI_Comm_size(shm, &nprocs);
    MPI_Info info = MPI_INFO_NULL;
    if (variant == 1) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "alloc_shared_noncontig", "true");
    }
    MPI_Aint mysize = part_size(rank, variant);
    unsigned char *mine = NULL;
    MPI_Win win;
    if (variant == 1)
        KT_MPI(MPI_Win_allocate_shared_c(mysize, 1, info, shm, &mine, &win));
    else
        KT_MPI(MPI_Win_allocate_shared(mysize, 1, info, shm, &mine, &win));
    if (info != MPI_INFO_NULL) {
        check_info(win, "alloc_shared_noncontig", "true");
        MPI_Info_free(&info);
    }
    check_attrs(win, mine, mysize, 1, MPI_WIN_FLAVOR_SHARED);
    KT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (MPI_Aint i = 0; i < mysize; i++) mine[i] = pattern(rank, i);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    MPI_Barrier(shm);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);

    unsigned char **ptr = malloc(sizeof *ptr * (size_t)nprocs);
    long page = sysconf(_SC_PAGESIZE);
    for (int r = 0; r < nprocs; r++) {
        MPI_Aint sz = -1;
        int du = -1;
        void *p = NULL;
        KT_MPI(MPI_Win_shared_query(win, r, &sz, &du, &p));
        KT_EQ_INT(sz, part_size(r, variant));
        KT_EQ_INT(du, 1);
        ptr[r] = p;
        if (r == rank) KT_CHECK(p == mine, "shared_query of my rank gave %p, baseptr was %p", p, (void *)mine);
        for (MPI_Aint i = 0; i < sz; i++)
            if (ptr[r][i] != pattern(r, i))
                KT_FAIL("rank %d's byte %ld reads %d through the shared pointer, expected %d", r, (long)i,
                        ptr[r][i], pattern(r, i));
        if (variant == 1 && sz > 0) KT_EQ_INT((uintptr_t)p & (uintptr_t)(page - 1), 0);      /* noncontig: page-aligned parts */
        if (variant == 0 && r > 0) {
            /* contiguous: each part follows the previous one (parts start on 64-byte boundaries) */
            MPI_Aint prev = part_size(r - 1, variant);
            KT_CHECK(ptr[r] >= ptr[r - 1] + prev && ptr[r] < ptr[r - 1] + prev + 64,
                     "rank %d's part at %p does not follow rank %d's (%p, %ld bytes)", r, (void *)ptr[r], r - 1,
                     (void *)ptr[r - 1], (long)prev);
        }
    }
    /* MPI_PROC_NULL: the first rank with memory */
    {
        MPI_Aint sz = -1, du = -1;
        void *p = (void *)1;
        KT_MPI(MPI_Win_shared_query_c(win, MPI_PROC_NULL, &sz, &du, &p));
        int first = -1;
        for (int r = 0; r < nprocs && first < 0; r++)
            if (part_size(r, variant) > 0) first = r;
        if (first < 0) KT_EQ_INT(sz, 0);
        else {
            KT_EQ_INT(sz, part_size(first, variant));
            KT_CHECK(p == ptr[first], "MPI_PROC_NULL gave %p, rank %d's part is at %p", p, first, (void *)ptr[first]);
        }
        KT_ERRCLASS(MPI_Win_shared_query_c(win, nprocs, &sz, &du, &p), MPI_ERR_RANK);
    }
    /* the other direction: rank r writes into rank r+1's part, everyone checks */
    MPI_Barrier(shm);
    int next = (rank + 1) % nprocs;
    for (MPI_Aint i = 0; i < part_size(next, variant); i++) ptr[next][i] = (unsigned char)~pattern(next, i);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    MPI_Barrier(shm);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (MPI_Aint i = 0; i < mysize; i++)
        if (mine[i] != (unsigned char)~pattern(rank, i))
            KT_FAIL("my byte %ld reads %d after rank %d's store, expected %d", (long)i, mine[i],
                    (rank + nprocs - 1) % nprocs, (unsigned char)~pattern(rank, i));
    free(ptr);
    KT_MPI(MPI_Win_free(&win));
    MPI_Comm_free(&shm);
}

/* Win_allocate: attributes; on one host its memory is shared too */
static void test_allocate(void)
{
    MPI_Aint mysize = (MPI_Aint)(rank + 1) * 64;
    double *mine = NULL;
    MPI_Win win;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "same_disp_unit", "true");
    KT_MPI(MPI_Win_allocate(mysize, sizeof(double), info, MPI_COMM_WORLD, &mine, &win));
    MPI_Info_free(&info);
    KT_CHECK(mine != NULL, "Win_allocate gave a NULL base");
    KT_EQ_INT((uintptr_t)mine & 7, 0);                 /* 8-byte aligned */
    check_attrs(win, mine, mysize, sizeof(double), MPI_WIN_FLAVOR_ALLOCATE);
    check_info(win, "same_disp_unit", "true");
    for (MPI_Aint i = 0; i < mysize / 8; i++) mine[i] = rank * 1000.0 + (double)i;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    MPI_Barrier(MPI_COMM_WORLD);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    /* every rank's memory on this host is reachable here (on one host: every rank's) */
    MPI_Comm shm;
    MPI_Group wg, sg;
    KT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(shm, &sg);
    for (int r = 0; r < nprocs; r++) {
        int sr;
        MPI_Group_translate_ranks(wg, 1, &r, sg, &sr);
        if (sr == MPI_UNDEFINED) continue;             /* on another host */
        MPI_Aint sz = -1;
        int du = -1;
        double *p = NULL;
        KT_MPI(MPI_Win_shared_query(win, r, &sz, &du, &p));
        KT_EQ_INT(sz, (r + 1) * 64);
        KT_EQ_INT(du, (int)sizeof(double));
        if (r == rank) KT_CHECK(p == mine, "shared_query of my rank differs from baseptr");
        for (int i = 0; i < (r + 1) * 8; i++)
            if (p[i] != r * 1000.0 + i) KT_FAIL("rank %d's double %d reads %g", r, i, p[i]);
    }
    MPI_Group_free(&wg);
    MPI_Group_free(&sg);
    MPI_Comm_free(&shm);
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_Win_free(&win));

    /* Win_allocate_c, size 0 */
    void *z = (void *)1;
    KT_MPI(MPI_Win_allocate_c(0, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &z, &win));
    check_attrs(win, z, 0, 4, MPI_WIN_FLAVOR_ALLOCATE);
    KT_MPI(MPI_Win_free(&win));
}

/* ---------------------------------------------------- dynamic windows */
static void test_dynamic(void)
{
    MPI_Win win;
    char a[256], b[64];
    KT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    check_attrs(win, NULL, 0, 1, MPI_WIN_FLAVOR_DYNAMIC);
    KT_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    KT_MPI(MPI_Win_attach(win, a, sizeof a));
    KT_ERRCLASS(MPI_Win_attach(win, a + 100, 8), MPI_ERR_RMA_ATTACH);   /* inside */
    KT_ERRCLASS(MPI_Win_attach(win, a + 200, 100), MPI_ERR_RMA_ATTACH); /* straddles the end */
    KT_ERRCLASS(MPI_Win_attach(win, a, sizeof a), MPI_ERR_RMA_ATTACH);  /* again */
    KT_MPI(MPI_Win_attach(win, b, sizeof b));
    {
        int cls = -1, rc = MPI_Win_detach(win, a + 1);
        KT_CHECK(rc != MPI_SUCCESS, "detach of an address that is no region's base succeeded");
        MPI_Error_class(rc, &cls);
        KT_CHECK(cls == MPI_ERR_BASE || cls == MPI_ERR_ARG, "detach of an unknown base gave class %d", cls);
    }
    {
        MPI_Aint sz;
        int du;
        void *p;
        KT_MPI(MPI_Win_shared_query(win, 0, &sz, &du, &p));     /* dynamic: nothing shared */
        KT_CHECK(p == NULL && sz == 0, "shared_query of a dynamic window: %p %ld", p, (long)sz);
    }
    KT_MPI(MPI_Win_detach(win, a));
    KT_MPI(MPI_Win_attach(win, a + 16, 32));            /* the space is free again */
    KT_MPI(MPI_Win_detach(win, a + 16));
    KT_MPI(MPI_Win_detach(win, b));
    {
        int cls = -1, rc = MPI_Win_detach(win, b);
        MPI_Error_class(rc, &cls);
        KT_CHECK(cls == MPI_ERR_BASE || cls == MPI_ERR_ARG, "second detach gave class %d", cls);
    }
    KT_MPI(MPI_Win_free(&win));
}

/* ------------------------------------------------ Alloc_mem / Free_mem */
static void test_alloc_mem(void)
{
    static const int aligns[] = { 0, 256, 4096, 65536 };
    for (size_t k = 0; k < sizeof aligns / sizeof *aligns; k++) {
        MPI_Info info = MPI_INFO_NULL;
        char val[32];
        if (aligns[k]) {
            MPI_Info_create(&info);
            snprintf(val, sizeof val, "%d", aligns[k]);
            MPI_Info_set(info, "mpi_minimum_memory_alignment", val);
        }
        unsigned char *p = NULL;
        KT_MPI(MPI_Alloc_mem(10000, info, &p));
        KT_CHECK(p != NULL, "Alloc_mem gave NULL");
        if (aligns[k]) KT_EQ_INT((uintptr_t)p & (uintptr_t)(aligns[k] - 1), 0);
        memset(p, 0xab, 10000);
        KT_MPI(MPI_Free_mem(p));
        if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    }
    void *z = NULL;
    KT_MPI(MPI_Alloc_mem(0, MPI_INFO_NULL, &z));
    KT_MPI(MPI_Free_mem(z));
    KT_MPI(MPI_Free_mem(NULL));
    void *m = malloc(64);
    KT_ERRCLASS(MPI_Free_mem(m), MPI_ERR_BASE);
    free(m);
    KT_MPI(MPI_Alloc_mem(64, MPI_INFO_NULL, &z));
    KT_MPI(MPI_Free_mem(z));
    KT_ERRCLASS(MPI_Free_mem(z), MPI_ERR_BASE);            /* twice */
    KT_ERRCLASS(MPI_Alloc_mem(-1, MPI_INFO_NULL, &z), MPI_ERR_SIZE);

    /* a window over Alloc_mem memory */
    int *w = NULL;
    MPI_Win win;
    KT_MPI(MPI_Alloc_mem(sizeof(int) * 10, MPI_INFO_NULL, &w));
    KT_MPI(MPI_Win_create(w, sizeof(int) * 10, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    check_attrs(win, w, sizeof(int) * 10, sizeof(int), MPI_WIN_FLAVOR_CREATE);
    KT_MPI(MPI_Win_free(&win));
    KT_MPI(MPI_Free_mem(w));
}

/* ------------------------------ a window outlives its communicator */
static void test_comm_freed(void)
{
    MPI_Comm c;
    MPI_Win wa, wc;
    int *mine = NULL, created = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    KT_MPI(MPI_Win_allocate(sizeof(int) * nprocs, sizeof(int), MPI_INFO_NULL, c, &mine, &wa));
    KT_MPI(MPI_Win_create(&created, sizeof created, sizeof created, MPI_INFO_NULL, c, &wc));
    KT_MPI(MPI_Comm_free(&c));
    for (int i = 0; i < nprocs; i++) mine[i] = -1;
    /* traffic on MPI_COMM_WORLD in between must not disturb the windows */
    int x = rank, sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    KT_EQ_INT(sum, nprocs * (nprocs - 1) / 2);
    MPI_Group g;
    int gs = -1;
    KT_MPI(MPI_Win_get_group(wc, &g));
    MPI_Group_size(g, &gs);
    KT_EQ_INT(gs, nprocs);
    MPI_Group_free(&g);
    check_attrs(wa, mine, sizeof(int) * nprocs, sizeof(int), MPI_WIN_FLAVOR_ALLOCATE);
    KT_MPI(MPI_Win_free(&wc));
    KT_MPI(MPI_Win_free(&wa));
}

/* the same with RMA traffic on the window after its communicator is gone */
static void test_comm_freed_rma(void)
{
    MPI_Comm c;
    MPI_Win win;
    int *mine = NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    KT_MPI(MPI_Win_allocate(sizeof(int) * nprocs, sizeof(int), MPI_INFO_NULL, c, &mine, &win));
    KT_MPI(MPI_Comm_free(&c));
    for (int i = 0; i < nprocs; i++) mine[i] = -1;
    KT_MPI(MPI_Win_fence(0, win));
    for (int r = 0; r < nprocs; r++) {
        int v = rank * 10 + r;
        KT_MPI(MPI_Put(&v, 1, MPI_INT, r, rank, 1, MPI_INT, win));
    }
    KT_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < nprocs; i++) KT_EQ_INT(mine[i], i * 10 + rank);
    KT_MPI(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    test_create();
    test_errors();
    test_shared(0);
    test_shared(1);
    test_shared(2);
    test_allocate();
    test_dynamic();
    test_alloc_mem();
    test_comm_freed();
    test_comm_freed_rma();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("win_obj: %d ranks ok\n", nprocs);
    MPI_Finalize();
    return 0;
}
