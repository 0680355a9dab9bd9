/* MPI_Intercomm_create_from_groups (MPI-4): from MPI_COMM_WORLD's group and
 * from a session's "mpi://WORLD", leaders anywhere in their groups;
 * point-to-point and collectives across, merge, errors.  Needs >= 2 ranks. */
#include "kt.h"

/* even world ranks against odd ones (group order: by world rank, or reversed) */
static void halves(MPI_Group world, int reversed, MPI_Group *mine, MPI_Group *other, int *in_even)
{
    int n, me, ne = 0, no = 0;
    MPI_Group_size(world, &n);
    MPI_Group_rank(world, &me);
    int *ev = malloc(sizeof(int) * (size_t)n), *od = malloc(sizeof(int) * (size_t)n);
    for (int r = 0; r < n; r++) {
        int x = reversed ? n - 1 - r : r;
        if (x % 2 == 0) ev[ne++] = x; else od[no++] = x;
    }
    MPI_Group ge, go;
    KT_MPI(MPI_Group_incl(world, ne, ev, &ge));
    KT_MPI(MPI_Group_incl(world, no, od, &go));
    *in_even = me % 2 == 0;
    *mine = *in_even ? ge : go;
    *other = *in_even ? go : ge;
    free(ev);
    free(od);
}

static void check_ic(MPI_Comm ic, MPI_Group mine, MPI_Group other, int in_even)
{
    int flag, lsize, rsize, lrank, want_l, want_r, want_lr, res;
    KT_MPI(MPI_Comm_test_inter(ic, &flag));
    KT_CHECK(flag, "an intercommunicator");
    KT_MPI(MPI_Comm_size(ic, &lsize));
    KT_MPI(MPI_Comm_remote_size(ic, &rsize));
    KT_MPI(MPI_Comm_rank(ic, &lrank));
    MPI_Group_size(mine, &want_l);
    MPI_Group_size(other, &want_r);
    MPI_Group_rank(mine, &want_lr);
    KT_EQ_INT(lsize, want_l);
    KT_EQ_INT(rsize, want_r);
    KT_EQ_INT(lrank, want_lr);
    MPI_Group rg;
    KT_MPI(MPI_Comm_remote_group(ic, &rg));
    KT_MPI(MPI_Group_compare(rg, other, &res));
    KT_EQ_INT(res, MPI_IDENT);
    MPI_Group_free(&rg);

    /* point-to-point: local rank i exchanges with remote rank i % rsize */
    int peer = lrank % rsize, token = 1000 * (in_even ? 1 : 2) + lrank;
    MPI_Request rq;
    KT_MPI(MPI_Isend(&token, 1, MPI_INT, peer, 7, ic, &rq));
    /* receive from every remote rank that sends to me */
    for (int r = 0; r < rsize; r++) {
        if (r % lsize != lrank) continue;
        int got = -1;
        MPI_Status st;
        KT_MPI(MPI_Recv(&got, 1, MPI_INT, r, 7, ic, &st));
        KT_EQ_INT(got, 1000 * (in_even ? 2 : 1) + r);
        KT_EQ_INT(st.MPI_SOURCE, r);
    }
    KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));

    /* allreduce on an intercommunicator: the sum over the remote group */
    int v = lrank + 1, sum = 0;
    KT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, ic));
    KT_EQ_INT(sum, rsize * (rsize + 1) / 2);
    KT_MPI(MPI_Barrier(ic));

    /* merge: the even group first (high = odd) */
    MPI_Comm m;
    int msize, mrank;
    KT_MPI(MPI_Intercomm_merge(ic, !in_even, &m));
    KT_MPI(MPI_Comm_size(m, &msize));
    KT_MPI(MPI_Comm_rank(m, &mrank));
    KT_EQ_INT(msize, lsize + rsize);
    KT_EQ_INT(mrank, in_even ? lrank : rsize + lrank);
    int all = 0, one = 1;
    KT_MPI(MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, m));
    KT_EQ_INT(all, msize);
    KT_MPI(MPI_Comm_free(&m));
}

static int handled;
static void on_error(MPI_Comm *c, int *code, ...) { (void)c; (void)code; handled++; }

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    KT_CHECK(size >= 2, "run with at least 2 ranks");
    MPI_Group wg, mine, other;
    int in_even;
    KT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));

    /* world model, leaders = rank 0 of each group */
    halves(wg, 0, &mine, &other, &in_even);
    MPI_Comm ic;
    KT_MPI(MPI_Intercomm_create_from_groups(mine, 0, other, 0, "misc3.ic.a", MPI_INFO_NULL,
                                            MPI_ERRORS_RETURN, &ic));
    check_ic(ic, mine, other, in_even);
    MPI_Errhandler eh;
    KT_MPI(MPI_Comm_get_errhandler(ic, &eh));
    KT_CHECK(eh == MPI_ERRORS_RETURN, "the new intercommunicator has the handler given");
    MPI_Errhandler_free(&eh);
    /* a second one on the same groups at once with another tag, leaders last */
    int lsz, rsz;
    MPI_Group_size(mine, &lsz);
    MPI_Group_size(other, &rsz);
    MPI_Comm ic2;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "misc3_hint", "yes");
    KT_MPI(MPI_Intercomm_create_from_groups(mine, lsz - 1, other, rsz - 1, "misc3.ic.b", info,
                                            MPI_ERRORS_ARE_FATAL, &ic2));
    MPI_Info_free(&info);
    check_ic(ic2, mine, other, in_even);
    int cmp;
    KT_MPI(MPI_Comm_compare(ic, ic2, &cmp));
    KT_EQ_INT(cmp, MPI_CONGRUENT);
    /* messages on the two do not mix */
    if (rank < 2) {
        int a = 11, b = 22, ga = 0, gb = 0;
        MPI_Request r[4];
        MPI_Isend(&a, 1, MPI_INT, 0, 1, ic, &r[0]);
        MPI_Isend(&b, 1, MPI_INT, 0, 1, ic2, &r[1]);
        MPI_Irecv(&gb, 1, MPI_INT, 0, 1, ic2, &r[2]);
        MPI_Irecv(&ga, 1, MPI_INT, 0, 1, ic, &r[3]);
        KT_MPI(MPI_Waitall(4, r, MPI_STATUSES_IGNORE));
        KT_EQ_INT(ga, 11);
        KT_EQ_INT(gb, 22);
    }
    KT_MPI(MPI_Comm_free(&ic2));
    KT_MPI(MPI_Comm_free(&ic));
    MPI_Group_free(&mine);
    MPI_Group_free(&other);

    /* errors, reported to the handler given (a user's one: the process's) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    KT_ERRCLASS(MPI_Intercomm_create_from_groups(wg, 0, wg, 0, "misc3.bad", MPI_INFO_NULL, MPI_ERRORS_RETURN, &ic),
                MPI_ERR_GROUP);
    halves(wg, 0, &mine, &other, &in_even);
    KT_ERRCLASS(MPI_Intercomm_create_from_groups(mine, 99, other, 0, "misc3.bad", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                                 &ic), MPI_ERR_RANK);
    KT_ERRCLASS(MPI_Intercomm_create_from_groups(other, 0, mine, 0, "misc3.bad", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                                 &ic), MPI_ERR_GROUP);      /* not in local_group */
    KT_ERRCLASS(MPI_Intercomm_create_from_groups(mine, 0, MPI_GROUP_EMPTY, 0, "misc3.bad", MPI_INFO_NULL,
                                                 MPI_ERRORS_RETURN, &ic), MPI_ERR_GROUP);
    MPI_Group_free(&mine);
    MPI_Group_free(&other);
    MPI_Group_free(&wg);

    /* from a session's process set, groups in reverse order of world rank */
    MPI_Session s;
    MPI_Group sg;
    KT_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    KT_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &sg));
    halves(sg, 1, &mine, &other, &in_even);
    KT_MPI(MPI_Comm_create_errhandler(on_error, &eh));
    KT_MPI(MPI_Intercomm_create_from_groups(mine, 0, other, 0, "misc3.ic.session", MPI_INFO_NULL, eh, &ic));
    check_ic(ic, mine, other, in_even);
    KT_MPI(MPI_Comm_call_errhandler(ic, MPI_ERR_OTHER));
    KT_EQ_INT(handled, 1);
    KT_MPI(MPI_Errhandler_free(&eh));
    KT_MPI(MPI_Comm_free(&ic));
    MPI_Group_free(&mine);
    MPI_Group_free(&other);
    MPI_Group_free(&sg);
    KT_MPI(MPI_Session_finalize(&s));
    KT_MPI(MPI_Finalize());
    return 0;
}
