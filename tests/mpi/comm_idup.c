/* comm_idup: MPI_Comm_idup / MPI_Comm_idup_with_info are non-blocking.
 *  - the call returns before the other members call it (rank 0 idups, then
 *    sends to rank 1, which receives before it idups: no deadlock);
 *  - several idups in flight at once, Waitall; each new communicator is
 *    independent (messages posted in a different order on each rank land
 *    on the right communicator) and congruent to the parent;
 *  - idups of one communicator complete in call order;
 *  - idup overlapping blocking Comm_dup / Comm_split on other communicators,
 *    called in a different order on different ranks, and an MPI_Wait on
 *    the idup before a blocking dup that the other ranks enter first;
 *  - MPI_Test polling loop;
 *  - attribute copy callback runs once per idup, at completion; info and
 *    error handler carried over;
 *  - MPI_THREAD_MULTIPLE: threads idup their own duplicates while other
 *    threads do blocking dups. */
#include "kt.h"
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

static int rank, size;
static int copies;                       /* copy callback calls */

static int copy_fn(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag)
{
    (void)old; (void)key; (void)extra;
    __atomic_fetch_add(&copies, 1, __ATOMIC_SEQ_CST);
    *(void **)out = (void *)((char *)in + 1);
    *flag = 1;
    return MPI_SUCCESS;
}

/* c is a working duplicate of parent: congruent, collectives and p2p on it. */
static void check_comm(MPI_Comm c, MPI_Comm parent, int salt)
{
    int r, s, res, sum;
    KT_CHECK(c != MPI_COMM_NULL, "new communicator is MPI_COMM_NULL");
    KT_MPI(MPI_Comm_compare(c, parent, &res));
    KT_EQ_INT(res, MPI_CONGRUENT);
    KT_MPI(MPI_Comm_rank(c, &r));
    KT_MPI(MPI_Comm_size(c, &s));
    int pr, ps;
    MPI_Comm_rank(parent, &pr);
    MPI_Comm_size(parent, &ps);
    KT_EQ_INT(r, pr);
    KT_EQ_INT(s, ps);
    int v = r + salt;
    KT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c));
    KT_EQ_INT(sum, s * (s - 1) / 2 + s * salt);
    int out = salt * 1000 + r, in = -1;
    KT_MPI(MPI_Sendrecv(&out, 1, MPI_INT, (r + 1) % s, 7, &in, 1, MPI_INT, (r + s - 1) % s, 7, c,
                        MPI_STATUS_IGNORE));
    KT_EQ_INT(in, salt * 1000 + (r + s - 1) % s);
}

/* 1. the deadlock example of the issue */
static void t_no_block(void)
{
    MPI_Comm n = MPI_COMM_NULL;
    MPI_Request rq;
    int x = 42;
    if (size >= 2 && rank == 1) {
        KT_MPI(MPI_Recv(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_EQ_INT(x, 42);
    }
    KT_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &n, &rq));
    KT_CHECK(rq != MPI_REQUEST_NULL, "idup returned no request");
    if (size >= 2 && rank == 0) KT_MPI(MPI_Send(&x, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    KT_CHECK(rq == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
    check_comm(n, MPI_COMM_WORLD, 1);
    KT_MPI(MPI_Comm_free(&n));
}

/* 2. several at once, independent, in call order */
#define NI 5
static void t_many(MPI_Comm parent)
{
    MPI_Comm n[NI];
    MPI_Request rq[NI];
    for (int i = 0; i < NI; i++) {
        n[i] = MPI_COMM_NULL;
        KT_MPI(MPI_Comm_idup(parent, &n[i], &rq[i]));
    }
    KT_MPI(MPI_Waitall(NI, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < NI; i++) KT_CHECK(n[i] != MPI_COMM_NULL, "idup %d gave no communicator", i);
    for (int i = 0; i < NI; i++)
        for (int j = i + 1; j < NI; j++) KT_CHECK(n[i] != n[j], "idups %d and %d gave the same handle", i, j);
    /* independence: the same (peer, tag) on every communicator, posted in
     * opposite orders on even and odd ranks */
    int pr, ps;
    MPI_Comm_rank(parent, &pr);
    MPI_Comm_size(parent, &ps);
    int out[NI], in[NI];
    MPI_Request q[2 * NI];
    for (int k = 0; k < NI; k++) {
        int i = pr % 2 ? NI - 1 - k : k;
        out[i] = 100 * i + pr;
        in[i] = -1;
        KT_MPI(MPI_Irecv(&in[i], 1, MPI_INT, (pr + ps - 1) % ps, 3, n[i], &q[2 * k]));
        KT_MPI(MPI_Isend(&out[i], 1, MPI_INT, (pr + 1) % ps, 3, n[i], &q[2 * k + 1]));
    }
    KT_MPI(MPI_Waitall(2 * NI, q, MPI_STATUSES_IGNORE));
    for (int i = 0; i < NI; i++) KT_EQ_INT(in[i], 100 * i + (pr + ps - 1) % ps);
    for (int i = 0; i < NI; i++) {
        check_comm(n[i], parent, i + 2);
        KT_MPI(MPI_Comm_free(&n[i]));
    }

    /* call order: when idup k is seen complete, every earlier one is */
    int done[NI] = { 0 }, left = NI;
    for (int i = 0; i < NI; i++) KT_MPI(MPI_Comm_idup(parent, &n[i], &rq[i]));
    while (left) {
        for (int k = 0; k < NI; k++) {
            if (done[k]) continue;
            int f = 0;
            KT_MPI(MPI_Test(&rq[k], &f, MPI_STATUS_IGNORE));
            if (!f) continue;
            done[k] = 1;
            left--;
            for (int j = 0; j < k; j++)
                if (!done[j]) {
                    int fj = 0;
                    KT_MPI(MPI_Request_get_status(rq[j], &fj, MPI_STATUS_IGNORE));
                    KT_CHECK(fj, "idup %d completed before idup %d", k, j);
                }
        }
    }
    for (int i = 0; i < NI; i++) {
        check_comm(n[i], parent, 10 + i);
        KT_MPI(MPI_Comm_free(&n[i]));
    }
}

/* 3. overlapping blocking creations on other communicators */
static void t_overlap(void)
{
    MPI_Comm a, b, na = MPI_COMM_NULL, nb, sp, half;
    MPI_Request rq;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &b));
    /* different order on even and odd ranks */
    if (rank % 2 == 0) {
        KT_MPI(MPI_Comm_idup(a, &na, &rq));
        KT_MPI(MPI_Comm_split(b, rank % 3, -rank, &sp));
        KT_MPI(MPI_Comm_dup(b, &nb));
    } else {
        KT_MPI(MPI_Comm_split(b, rank % 3, -rank, &sp));
        KT_MPI(MPI_Comm_dup(b, &nb));
        KT_MPI(MPI_Comm_idup(a, &na, &rq));
    }
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    check_comm(na, a, 3);
    check_comm(nb, b, 4);
    int sr, ss;
    MPI_Comm_rank(sp, &sr);
    MPI_Comm_size(sp, &ss);
    KT_EQ_INT(ss, (size - rank % 3 + 2) / 3);
    int srsum = 0;
    KT_MPI(MPI_Allreduce(&sr, &srsum, 1, MPI_INT, MPI_SUM, sp));
    KT_EQ_INT(srsum, ss * (ss - 1) / 2);
    KT_MPI(MPI_Comm_free(&na));
    KT_MPI(MPI_Comm_free(&nb));

    /* odd ranks wait for the idup before the blocking dup that even ranks
     * are already in (the idup must progress inside that dup) */
    KT_MPI(MPI_Comm_idup(a, &na, &rq));
    if (rank % 2) KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    KT_MPI(MPI_Comm_dup(b, &nb));
    if (rank % 2 == 0) KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    check_comm(na, a, 5);
    check_comm(nb, b, 6);
    KT_MPI(MPI_Comm_free(&na));
    KT_MPI(MPI_Comm_free(&nb));

    /* idup of a subcommunicator while blocking creations on its parent */
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    KT_MPI(MPI_Comm_idup(half, &na, &rq));
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &nb));
    MPI_Comm sp2;
    KT_MPI(MPI_Comm_split(nb, rank < size / 2, rank, &sp2));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    check_comm(na, half, 7);
    check_comm(nb, MPI_COMM_WORLD, 8);
    KT_MPI(MPI_Comm_free(&sp2));
    KT_MPI(MPI_Comm_free(&na));
    KT_MPI(MPI_Comm_free(&nb));
    KT_MPI(MPI_Comm_free(&half));
    KT_MPI(MPI_Comm_free(&sp));
    KT_MPI(MPI_Comm_free(&a));
    KT_MPI(MPI_Comm_free(&b));
}

/* 4. Test polling; attributes, info, error handler; idup of COMM_SELF */
static void t_test_attr(void)
{
    MPI_Comm c, n = MPI_COMM_NULL;
    MPI_Request rq;
    int key, flag, f = 0;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    KT_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    KT_MPI(MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    static char base[8];
    KT_MPI(MPI_Comm_set_attr(c, key, base));
    int before = copies;
    MPI_Info info;
    KT_MPI(MPI_Info_create(&info));
    KT_MPI(MPI_Info_set(info, "kumi_idup_test", "yes"));
    KT_MPI(MPI_Comm_idup_with_info(c, info, &n, &rq));
    KT_MPI(MPI_Info_free(&info));           /* the call keeps its own copy */
    long polls = 0;
    while (!f) {
        KT_MPI(MPI_Test(&rq, &f, MPI_STATUS_IGNORE));
        polls++;
    }
    KT_CHECK(rq == MPI_REQUEST_NULL, "request not freed by MPI_Test");
    KT_EQ_INT(copies - before, 1);
    void *v = NULL;
    KT_MPI(MPI_Comm_get_attr(n, key, &v, &flag));
    KT_CHECK(flag && v == base + 1, "attribute not copied (flag %d)", flag);
    MPI_Info got;
    char val[MPI_MAX_INFO_VAL + 1];
    KT_MPI(MPI_Comm_get_info(n, &got));
    KT_MPI(MPI_Info_get(got, "kumi_idup_test", MPI_MAX_INFO_VAL, val, &flag));
    KT_CHECK(flag && !strcmp(val, "yes"), "info hint not carried to the idup'd communicator");
    KT_MPI(MPI_Info_free(&got));
    MPI_Errhandler eh;
    KT_MPI(MPI_Comm_get_errhandler(n, &eh));
    KT_CHECK(eh == MPI_ERRORS_RETURN, "error handler not inherited");
    KT_MPI(MPI_Errhandler_free(&eh));
    check_comm(n, c, 9);

    /* three at once: three copies */
    MPI_Comm m[3];
    MPI_Request r3[3];
    before = copies;
    for (int i = 0; i < 3; i++) KT_MPI(MPI_Comm_idup(n, &m[i], &r3[i]));
    KT_MPI(MPI_Waitall(3, r3, MPI_STATUSES_IGNORE));
    KT_EQ_INT(copies - before, 3);
    for (int i = 0; i < 3; i++) {
        KT_MPI(MPI_Comm_get_attr(m[i], key, &v, &flag));
        KT_CHECK(flag && v == base + 2, "attribute of idup %d not copied", i);
        KT_MPI(MPI_Comm_free(&m[i]));
    }
    KT_MPI(MPI_Comm_free(&n));

    /* a group of one, and a freshly freed parent */
    KT_MPI(MPI_Comm_idup(MPI_COMM_SELF, &n, &rq));
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    check_comm(n, MPI_COMM_SELF, 11);
    KT_MPI(MPI_Comm_free(&n));
    MPI_Comm tmp;
    KT_MPI(MPI_Comm_dup(c, &tmp));
    KT_MPI(MPI_Comm_idup(tmp, &n, &rq));
    KT_MPI(MPI_Comm_free(&tmp));           /* pending operations complete normally */
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    int s2;
    KT_MPI(MPI_Comm_size(n, &s2));
    KT_EQ_INT(s2, size);
    KT_MPI(MPI_Barrier(n));
    KT_MPI(MPI_Comm_free(&n));

    /* error: NULL request */
    KT_ERRCLASS(MPI_Comm_idup(c, &n, NULL), MPI_ERR_REQUEST);
    KT_MPI(MPI_Comm_free_keyval(&key));
    KT_MPI(MPI_Comm_free(&c));
}

/* 5. threads */
#define NT 4
#define ITERS 12
static MPI_Comm tcomm[NT];
static void *thread_main(void *arg)
{
    int t = (int)(long)arg;
    for (int it = 0; it < ITERS; it++) {
        MPI_Comm n[2];
        if (t % 2 == 0 && !getenv("KT_ALL_BLOCKING")) {   /* idups, two in flight */
            MPI_Request rq[2];
            KT_MPI(MPI_Comm_idup(tcomm[t], &n[0], &rq[0]));
            KT_MPI(MPI_Comm_idup(tcomm[t], &n[1], &rq[1]));
            if (it % 2) {
                KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
            } else {
                int f = 0;
                while (!f) { KT_MPI(MPI_Testall(2, rq, &f, MPI_STATUSES_IGNORE)); if (!f) sched_yield(); }
            }
        } else {                       /* blocking dups and splits */
            KT_MPI(MPI_Comm_dup(tcomm[t], &n[0]));
            KT_MPI(MPI_Comm_split(tcomm[t], 0, rank, &n[1]));
        }
        for (int i = 0; i < 2; i++) {
            check_comm(n[i], tcomm[t], 20 + t * 3 + i);
            KT_MPI(MPI_Comm_free(&n[i]));
        }
    }
    return NULL;
}

static void t_threads(void)
{
    pthread_t th[NT];
    for (int t = 0; t < NT; t++) KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &tcomm[t]));
    for (int t = 0; t < NT; t++) KT_CHECK(!pthread_create(&th[t], NULL, thread_main, (void *)(long)t), "pthread_create");
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NT; t++) KT_MPI(MPI_Comm_free(&tcomm[t]));
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    alarm(120);                          /* a blocking idup deadlocks: fail instead of hanging */
    if (argc > 1 && !strcmp(argv[1], "single")) KT_MPI(MPI_Init(&argc, &argv));   /* no library lock */
    else KT_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    t_no_block();
    t_many(MPI_COMM_WORLD);
    MPI_Comm odd;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &odd));
    t_many(odd);
    KT_MPI(MPI_Comm_free(&odd));
    t_overlap();
    t_test_attr();
    double t0 = MPI_Wtime();
    if (provided == MPI_THREAD_MULTIPLE && !getenv("KT_NO_THREADS")) t_threads();
    if (getenv("KT_TIME") && rank == 0) printf("threads part %.2fs\n", MPI_Wtime() - t0);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("comm_idup: %d ranks ok (threads: %s)\n", size, provided == MPI_THREAD_MULTIPLE ? "yes" : "no");
    MPI_Finalize();
    return 0;
}
