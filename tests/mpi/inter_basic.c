/* Intercommunicators: Intercomm_create (leaders other than rank 0 too),
 * test_inter, remote size / group, point-to-point across the groups
 * (ANY_SOURCE, status, both directions), Intercomm_merge with every high
 * combination, dup / split / create / compare / free, and error classes
 * (scan and exscan, bad roots, MPI_IN_PLACE, intracommunicator arguments).
 * argv[1]: size of group A (see inter_common.h). */
#include "inter_common.h"

/* Checks merged (of e->inter, this group's high = hi, other's = ho). */
static void check_merge(const struct inter_env *e, MPI_Comm m, int hi, int ho)
{
    int r, n, flag;
    KT_MPI(MPI_Comm_size(m, &n));
    KT_EQ_INT(n, e->wsize);
    KT_MPI(MPI_Comm_rank(m, &r));
    KT_MPI(MPI_Comm_test_inter(m, &flag));
    KT_EQ_INT(flag, 0);
    /* world rank of every merged rank */
    int *w = malloc(sizeof(int) * (size_t)n);
    KT_MPI(MPI_Allgather(&e->wrank, 1, MPI_INT, w, 1, MPI_INT, m));
    KT_EQ_INT(w[r], e->wrank);
    /* which group is first: the one with high false; equal: either, but
     * each group contiguous and in its local order */
    int first;
    if (hi != ho) first = hi ? 1 - e->side : e->side;
    else first = w[0] == inter_world(e, 0, 0) ? 0 : 1;
    if (hi == ho) KT_CHECK(w[0] == inter_world(e, 0, 0) || w[0] == inter_world(e, 1, 0), "w[0] = %d", w[0]);
    int n0 = first == 0 ? e->na : e->nb;
    for (int i = 0; i < n; i++) {
        int s = i < n0 ? first : 1 - first, lr = i < n0 ? i : i - n0;
        KT_EQ_INT(w[i], inter_world(e, s, lr));
    }
    KT_EQ_INT(r, e->side == first ? e->lrank : (first == 0 ? e->na : e->nb) + e->lrank);
    /* the merged communicator works */
    int sum = 0;
    KT_MPI(MPI_Allreduce(&e->wrank, &sum, 1, MPI_INT, MPI_SUM, m));
    KT_EQ_INT(sum, e->wsize * (e->wsize - 1) / 2);
    free(w);
}

int main(int argc, char **argv)
{
    struct inter_env e;
    MPI_Init(&argc, &argv);
    inter_setup(&e, argc, argv);
    MPI_Comm ic = e.inter;
    int flag, n, res;

    /* ---- queries */
    KT_MPI(MPI_Comm_test_inter(ic, &flag));
    KT_EQ_INT(flag, 1);
    KT_MPI(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
    KT_EQ_INT(flag, 0);
    KT_MPI(MPI_Comm_size(ic, &n));
    KT_EQ_INT(n, e.lsize);
    KT_MPI(MPI_Comm_rank(ic, &n));
    KT_EQ_INT(n, e.lrank);
    MPI_Group rg, lg, wg;
    KT_MPI(MPI_Comm_remote_group(ic, &rg));
    KT_MPI(MPI_Comm_group(ic, &lg));
    KT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    KT_MPI(MPI_Group_size(rg, &n));
    KT_EQ_INT(n, e.rsize);
    KT_MPI(MPI_Group_rank(rg, &n));
    KT_EQ_INT(n, MPI_UNDEFINED);
    KT_MPI(MPI_Group_rank(lg, &n));
    KT_EQ_INT(n, e.lrank);
    for (int i = 0; i < e.rsize; i++) {
        int w;
        KT_MPI(MPI_Group_translate_ranks(rg, 1, &i, wg, &w));
        KT_EQ_INT(w, inter_world(&e, 1 - e.side, i));
    }
    MPI_Group_free(&rg);
    MPI_Group_free(&lg);
    MPI_Group_free(&wg);

    /* ---- point-to-point across the groups */
    for (int i = 0; i < e.rsize; i++) {
        int v = 1000 * e.wrank + i;
        KT_MPI(MPI_Send(&v, 1, MPI_INT, i, 7, ic));
    }
    for (int k = 0; k < e.rsize; k++) {
        int v = -1;
        MPI_Status st;
        KT_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 7, ic, &st));
        KT_CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < e.rsize, "source %d", st.MPI_SOURCE);
        KT_EQ_INT(v, 1000 * inter_world(&e, 1 - e.side, st.MPI_SOURCE) + e.lrank);
        KT_EQ_INT(st.MPI_TAG, 7);
    }
    /* sendrecv with the "mirror" process */
    {
        int peer = e.lrank % e.rsize, from = -1;
        int v = e.wrank, got = -1;
        /* who sends to me: remote ranks j with j % lsize... use ANY_SOURCE counts */
        int nsend_to_me = 0;
        for (int j = 0; j < e.rsize; j++)
            if (j % e.lsize == e.lrank) nsend_to_me++;
        MPI_Request rq;
        KT_MPI(MPI_Isend(&v, 1, MPI_INT, peer, 8, ic, &rq));
        for (int k = 0; k < nsend_to_me; k++) {
            MPI_Status st;
            KT_MPI(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 8, ic, &st));
            from = st.MPI_SOURCE;
            KT_EQ_INT(from % e.lsize, e.lrank);
            KT_EQ_INT(got, inter_world(&e, 1 - e.side, from));
        }
        KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    }
    /* MPI_PROC_NULL */
    {
        MPI_Status st;
        int v = 5;
        KT_MPI(MPI_Sendrecv(&v, 1, MPI_INT, MPI_PROC_NULL, 1, &v, 1, MPI_INT, MPI_PROC_NULL, 1, ic, &st));
        KT_EQ_INT(st.MPI_SOURCE, MPI_PROC_NULL);
        KT_EQ_INT(v, 5);
    }

    /* ---- a second intercommunicator: leaders are the last local ranks,
     * found through WORLD; on the same tag, interleaved with the first */
    /* group A holds contexts that B does not: the agreement must skip them */
    MPI_Comm extra[3] = { MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL };
    MPI_Request xr[3];
    int xv[3] = { -1, -1, -1 };
    if (e.side == 0)
        for (int k = 0; k < 3; k++) {
            KT_MPI(MPI_Comm_dup(e.local, &extra[k]));
            /* would catch a message of ic2 if the contexts collided */
            KT_MPI(MPI_Irecv(&xv[k], 1, MPI_INT, MPI_ANY_SOURCE, 3, extra[k], &xr[k]));
        }
    MPI_Comm ic2;
    {
        int ll = e.lsize - 1;
        int rl = inter_world(&e, 1 - e.side, e.rsize - 1);
        KT_MPI(MPI_Intercomm_create(e.local, ll, MPI_COMM_WORLD, rl, 42, &ic2));
        KT_MPI(MPI_Comm_remote_size(ic2, &n));
        KT_EQ_INT(n, e.rsize);
        KT_MPI(MPI_Comm_compare(ic, ic2, &res));
        KT_EQ_INT(res, MPI_CONGRUENT);
        /* traffic on ic2 does not match traffic on ic */
        int a = e.wrank, b = -e.wrank, x = 0, y = 0;
        MPI_Request rq[4];
        int peer = e.lrank % e.rsize;
        int nto = 0;
        for (int j = 0; j < e.rsize; j++)
            if (j % e.lsize == e.lrank) nto++;
        KT_MPI(MPI_Isend(&a, 1, MPI_INT, peer, 3, ic, &rq[0]));
        KT_MPI(MPI_Isend(&b, 1, MPI_INT, peer, 3, ic2, &rq[1]));
        for (int k = 0; k < nto; k++) {
            MPI_Status s1, s2;
            KT_MPI(MPI_Recv(&y, 1, MPI_INT, MPI_ANY_SOURCE, 3, ic2, &s2));
            KT_MPI(MPI_Recv(&x, 1, MPI_INT, s2.MPI_SOURCE, 3, ic, &s1));
            KT_EQ_INT(y, -inter_world(&e, 1 - e.side, s2.MPI_SOURCE));
            KT_EQ_INT(x, inter_world(&e, 1 - e.side, s2.MPI_SOURCE));
        }
        KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    }
    if (e.side == 0)
        for (int k = 0; k < 3; k++) {
            int v = 77 + k;
            KT_MPI(MPI_Send(&v, 1, MPI_INT, e.lrank, 3, extra[k]));
            KT_MPI(MPI_Wait(&xr[k], MPI_STATUS_IGNORE));
            KT_EQ_INT(xv[k], 77 + k);
            KT_MPI(MPI_Comm_free(&extra[k]));
        }

    /* ---- merge, every combination of high */
    for (int hA = 0; hA < 2; hA++)
        for (int hB = 0; hB < 2; hB++) {
            MPI_Comm m;
            int hi = e.side ? hB : hA, ho = e.side ? hA : hB;
            KT_MPI(MPI_Intercomm_merge(hA == hB ? ic2 : ic, hi, &m));
            check_merge(&e, m, hi, ho);
            KT_MPI(MPI_Comm_free(&m));
        }

    /* ---- dup */
    MPI_Comm d;
    KT_MPI(MPI_Comm_dup(ic, &d));
    KT_MPI(MPI_Comm_test_inter(d, &flag));
    KT_EQ_INT(flag, 1);
    KT_MPI(MPI_Comm_compare(ic, d, &res));
    KT_EQ_INT(res, MPI_CONGRUENT);
    KT_MPI(MPI_Comm_compare(ic, MPI_COMM_WORLD, &res));
    KT_EQ_INT(res, MPI_UNEQUAL);
    KT_MPI(MPI_Comm_compare(ic, ic, &res));
    KT_EQ_INT(res, MPI_IDENT);
    {
        int s = 0;
        KT_MPI(MPI_Allreduce(&e.wrank, &s, 1, MPI_INT, MPI_SUM, d));
        int want = 0;
        for (int i = 0; i < e.rsize; i++) want += inter_world(&e, 1 - e.side, i);
        KT_EQ_INT(s, want);
    }

    /* ---- split: color = local rank % 2 (rank 1 of each side: MPI_UNDEFINED
     * when the side has 4 or more), key = -local rank */
    {
        int color = e.lrank % 2;
        if (e.lrank == 1 && e.lsize >= 4) color = MPI_UNDEFINED;
        MPI_Comm s;
        KT_MPI(MPI_Comm_split(ic, color, -e.lrank, &s));
        /* expected members of each side with a color */
        int lc = 0, rc = 0, pos = 0;
        for (int i = e.lsize - 1; i >= 0; i--) {
            int c = i % 2;
            if (i == 1 && e.lsize >= 4) c = MPI_UNDEFINED;
            if (c == color && color != MPI_UNDEFINED) { if (i > e.lrank) pos++; lc++; }
        }
        for (int i = 0; i < e.rsize; i++) {
            int c = i % 2;
            if (i == 1 && e.rsize >= 4) c = MPI_UNDEFINED;
            if (c == color && color != MPI_UNDEFINED) rc++;
        }
        if (color == MPI_UNDEFINED || rc == 0) {
            KT_CHECK(s == MPI_COMM_NULL, "expected MPI_COMM_NULL (color %d, remote members %d)", color, rc);
        } else {
            KT_CHECK(s != MPI_COMM_NULL, "expected a communicator");
            KT_MPI(MPI_Comm_test_inter(s, &flag));
            KT_EQ_INT(flag, 1);
            KT_MPI(MPI_Comm_size(s, &n));
            KT_EQ_INT(n, lc);
            KT_MPI(MPI_Comm_rank(s, &n));
            KT_EQ_INT(n, pos);
            KT_MPI(MPI_Comm_remote_size(s, &n));
            KT_EQ_INT(n, rc);
            /* remote rank 0 of s is the remote member with the largest local rank of that color */
            int top = -1;
            for (int i = 0; i < e.rsize; i++) {
                int c = i % 2;
                if (i == 1 && e.rsize >= 4) c = MPI_UNDEFINED;
                if (c == color) top = i;
            }
            int v = e.wrank, got = -1;
            KT_MPI(MPI_Allreduce(&v, &got, 1, MPI_INT, MPI_MAX, s));
            int want = -1;
            for (int i = 0; i < e.rsize; i++) {
                int c = i % 2;
                if (i == 1 && e.rsize >= 4) c = MPI_UNDEFINED;
                if (c == color && inter_world(&e, 1 - e.side, i) > want) want = inter_world(&e, 1 - e.side, i);
            }
            KT_EQ_INT(got, want);
            /* bcast from remote rank 0 of s */
            int root_side = 0;
            int b = -1;
            if (e.side == root_side) {
                if (pos == 0) b = 4242;
                KT_MPI(MPI_Bcast(&b, 1, MPI_INT, pos == 0 ? MPI_ROOT : MPI_PROC_NULL, s));
                if (pos != 0) KT_EQ_INT(b, -1);
            } else {
                KT_MPI(MPI_Bcast(&b, 1, MPI_INT, 0, s));
                KT_EQ_INT(b, 4242);
            }
            (void)top;
            KT_MPI(MPI_Comm_free(&s));
        }
    }

    /* ---- create: the local group without its local rank 0 (when larger than 1) */
    {
        MPI_Group g, sub;
        KT_MPI(MPI_Comm_group(ic, &g));
        int zero = 0;
        if (e.lsize > 1) KT_MPI(MPI_Group_excl(g, 1, &zero, &sub));
        else sub = g;
        MPI_Comm c;
        KT_MPI(MPI_Comm_create(ic, sub, &c));
        int lexp = e.lsize > 1 ? e.lsize - 1 : 1, rexp = e.rsize > 1 ? e.rsize - 1 : 1;
        if (e.lsize > 1 && e.lrank == 0) {
            KT_CHECK(c == MPI_COMM_NULL, "not a member: expected MPI_COMM_NULL");
        } else {
            KT_CHECK(c != MPI_COMM_NULL, "expected a communicator");
            KT_MPI(MPI_Comm_size(c, &n));
            KT_EQ_INT(n, lexp);
            KT_MPI(MPI_Comm_remote_size(c, &n));
            KT_EQ_INT(n, rexp);
            KT_MPI(MPI_Comm_rank(c, &n));
            KT_EQ_INT(n, e.lsize > 1 ? e.lrank - 1 : 0);
            int s = 0, want = 0;
            KT_MPI(MPI_Allreduce(&e.wrank, &s, 1, MPI_INT, MPI_SUM, c));
            for (int i = e.rsize > 1 ? 1 : 0; i < e.rsize; i++) want += inter_world(&e, 1 - e.side, i);
            KT_EQ_INT(s, want);
            KT_MPI(MPI_Comm_free(&c));
        }
        if (sub != g) MPI_Group_free(&sub);
        MPI_Group_free(&g);
    }

    /* ---- errors */
    KT_MPI(MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN));
    KT_MPI(MPI_Comm_set_errhandler(e.local, MPI_ERRORS_RETURN));
    {
        int a = 1, b = 0;
        KT_ERRCLASS(MPI_Scan(&a, &b, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM);
        KT_ERRCLASS(MPI_Exscan(&a, &b, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM);
        KT_ERRCLASS(MPI_Bcast(&a, 1, MPI_INT, e.rsize, ic), MPI_ERR_ROOT);
        KT_ERRCLASS(MPI_Reduce(&a, &b, 1, MPI_INT, MPI_SUM, -7, ic), MPI_ERR_ROOT);
        KT_ERRCLASS(MPI_Allreduce(MPI_IN_PLACE, &b, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_BUFFER);
        KT_ERRCLASS(MPI_Send(&a, 1, MPI_INT, e.rsize, 0, ic), MPI_ERR_RANK);
        KT_ERRCLASS(MPI_Comm_remote_size(e.local, &n), MPI_ERR_COMM);
        MPI_Group g;
        KT_ERRCLASS(MPI_Comm_remote_group(e.local, &g), MPI_ERR_COMM);
        MPI_Comm bad;
        KT_ERRCLASS(MPI_Intercomm_merge(e.local, 0, &bad), MPI_ERR_COMM);
        KT_ERRCLASS(MPI_Intercomm_create(ic, 0, MPI_COMM_WORLD, 0, 1, &bad), MPI_ERR_COMM);
        KT_ERRCLASS(MPI_Intercomm_create(e.local, e.lsize, MPI_COMM_WORLD, 0, 1, &bad), MPI_ERR_RANK);
    }

    /* ---- free; the communicators still in use keep working */
    KT_MPI(MPI_Comm_free(&d));
    KT_CHECK(d == MPI_COMM_NULL, "freed handle not MPI_COMM_NULL");
    KT_MPI(MPI_Comm_free(&ic2));
    KT_MPI(MPI_Barrier(ic));
    for (int k = 0; k < 20; k++) {       /* contexts are given back */
        MPI_Comm t;
        KT_MPI(MPI_Comm_dup(ic, &t));
        KT_MPI(MPI_Barrier(t));
        KT_MPI(MPI_Comm_free(&t));
    }
    KT_MPI(MPI_Comm_free(&e.inter));
    KT_MPI(MPI_Comm_free(&e.local));
    MPI_Finalize();
    return 0;
}
