/* conf_idup_inter: MPI_Comm_idup / MPI_Comm_idup_with_info on an
 * intercommunicator are non-blocking (issue 16 item 4; MPI 4.1 sec. 7.4.2).
 * Before, the context-id agreement ran inside the call and waited for the
 * other group, so this deadlocked: the even ranks' group idups and then
 * sends to its partner in the odd group, which receives that message before
 * it idups.  Also: two idups in flight at once (Waitall), an MPI_Test loop,
 * the new intercommunicators work (congruent to the parent, collectives and
 * point-to-point across the groups, independent of each other), attribute
 * copy callbacks run, info hints are kept.  A deadlock fails after 30 s
 * (alarm).  Needs 2 or more ranks. */
#include "kt.h"
#include <signal.h>
#include <unistd.h>

static int copies;
static int copy_fn(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag)
{
    (void)old; (void)key; (void)extra;
    copies++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char m[] = "FAIL: deadlock: MPI_Comm_idup on an intercommunicator blocked\n";
    if (write(2, m, sizeof m - 1)) {}
    _exit(1);
}

/* c: a working duplicate of the intercommunicator parent */
static void check_inter(MPI_Comm c, MPI_Comm parent, int salt)
{
    int flag, res, r, s, rs, pr, ps, prs, wr;
    KT_CHECK(c != MPI_COMM_NULL, "MPI_COMM_NULL");
    KT_MPI(MPI_Comm_test_inter(c, &flag));
    KT_CHECK(flag, "not an intercommunicator");
    KT_MPI(MPI_Comm_compare(c, parent, &res));
    KT_EQ_INT(res, MPI_CONGRUENT);
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &s);
    MPI_Comm_remote_size(c, &rs);
    MPI_Comm_rank(parent, &pr);
    MPI_Comm_size(parent, &ps);
    MPI_Comm_remote_size(parent, &prs);
    KT_EQ_INT(r, pr);
    KT_EQ_INT(s, ps);
    KT_EQ_INT(rs, prs);
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    /* the remote group's sum of world ranks, by an allreduce across */
    int sum = 0, want = 0, *rw = malloc(sizeof(int) * (size_t)rs);
    KT_MPI(MPI_Allgather(&wr, 1, MPI_INT, rw, 1, MPI_INT, parent));
    for (int i = 0; i < rs; i++) want += rw[i] + salt;
    int v = wr + salt;
    KT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c));
    KT_EQ_INT(sum, want);
    /* point-to-point across: rank i of each group with rank i of the other */
    if (r < rs) {
        int out = salt * 1000 + wr, in = -1;
        KT_MPI(MPI_Sendrecv(&out, 1, MPI_INT, r, 5, &in, 1, MPI_INT, r, 5, c, MPI_STATUS_IGNORE));
        KT_EQ_INT(in, salt * 1000 + rw[r]);
    }
    free(rw);
}

int main(int argc, char **argv)
{
    int rank, size;
    signal(SIGALRM, on_alarm);
    alarm(30);
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 or more ranks");

    int odd = rank % 2;
    MPI_Comm local, inter;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, odd, rank, &local));
    KT_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - odd, 3, &inter));
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int key;
    static char base[4];
    KT_MPI(MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    KT_MPI(MPI_Comm_set_attr(inter, key, base));

    /* 1. the deadlock: evens idup, then send to their odd partner, which
     *    receives before it idups */
    MPI_Comm d = MPI_COMM_NULL;
    MPI_Request rq;
    int partner = odd ? rank - 1 : rank + 1, token = 0;
    if (!odd) {
        KT_MPI(MPI_Comm_idup(inter, &d, &rq));
        if (partner < size) KT_MPI(MPI_Send(&rank, 1, MPI_INT, partner, 9, MPI_COMM_WORLD));
    } else {
        KT_MPI(MPI_Recv(&token, 1, MPI_INT, partner, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_EQ_INT(token, partner);
        KT_MPI(MPI_Comm_idup(inter, &d, &rq));
    }
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    check_inter(d, inter, 1);
    KT_EQ_INT(copies, 1);
    void *v;
    int flag;
    KT_MPI(MPI_Comm_get_attr(d, key, &v, &flag));
    KT_CHECK(flag && v == base + 1, "attribute of the duplicate");

    /* 2. two in flight (one with info), completed together; then an MPI_Test loop */
    MPI_Comm e = MPI_COMM_NULL, f = MPI_COMM_NULL, g = MPI_COMM_NULL;
    MPI_Request two[2];
    MPI_Info info;
    KT_MPI(MPI_Info_create(&info));
    KT_MPI(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
    KT_MPI(MPI_Comm_idup(inter, &e, &two[0]));
    KT_MPI(MPI_Comm_idup_with_info(d, info, &f, &two[1]));
    KT_MPI(MPI_Info_free(&info));
    KT_MPI(MPI_Waitall(2, two, MPI_STATUSES_IGNORE));
    check_inter(e, inter, 2);
    check_inter(f, d, 3);
    MPI_Info used;
    char val[16];
    int len = sizeof val;
    KT_MPI(MPI_Comm_get_info(f, &used));
    KT_MPI(MPI_Info_get_string(used, "mpi_assert_no_any_tag", &len, val, &flag));
    KT_CHECK(flag && !strcmp(val, "true"), "the hint of MPI_Comm_idup_with_info was lost");
    KT_MPI(MPI_Info_free(&used));
    KT_MPI(MPI_Comm_idup(e, &g, &rq));
    flag = 0;
    while (!flag) KT_MPI(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
    check_inter(g, e, 4);
    /* the duplicates are independent: a message on one does not land on another */
    int rs;
    MPI_Comm_remote_size(inter, &rs);
    int r;
    MPI_Comm_rank(inter, &r);
    if (r < rs) {
        int a = 100 + rank, b = 200 + rank, got1 = -1, got2 = -1;
        MPI_Request s2[2];
        KT_MPI(MPI_Isend(&a, 1, MPI_INT, r, 0, e, &s2[0]));
        KT_MPI(MPI_Isend(&b, 1, MPI_INT, r, 0, g, &s2[1]));
        KT_MPI(MPI_Recv(&got2, 1, MPI_INT, r, 0, g, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Recv(&got1, 1, MPI_INT, r, 0, e, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Waitall(2, s2, MPI_STATUSES_IGNORE));
        KT_EQ_INT(got1 / 100, 1);
        KT_EQ_INT(got2 / 100, 2);
    }
    KT_MPI(MPI_Comm_free(&g));
    KT_MPI(MPI_Comm_free(&f));
    KT_MPI(MPI_Comm_free(&e));
    KT_MPI(MPI_Comm_free(&d));
    KT_MPI(MPI_Comm_free(&inter));
    KT_MPI(MPI_Comm_free(&local));
    KT_MPI(MPI_Comm_free_keyval(&key));
    KT_MPI(MPI_Finalize());
    alarm(0);
    return 0;
}
