/* Every blocking collective on an intercommunicator, in both directions,
 * against values computed by hand: barrier (waits for the other group),
 * bcast, gather(v), scatter(v), reduce (every root of both groups),
 * allgather(v), alltoall(v,w), allreduce, reduce_scatter(_block).
 * argv[1]: size of group A (see inter_common.h). */
#include "inter_common.h"
#include <unistd.h>

/* The value element k of the data that process (side s, local rank r)
 * contributes, addressed to remote rank t. */
static int val(int s, int r, int t, int k)
{
    return 100000 * s + 1000 * r + 10 * t + k;
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

int main(int argc, char **argv)
{
    struct inter_env e;
    MPI_Init(&argc, &argv);
    inter_setup(&e, argc, argv);
    MPI_Comm ic = e.inter;
    const int S = e.side, O = 1 - e.side, L = e.lsize, R = e.rsize, me = e.lrank;
    enum { C = 3 };
    int *sb = malloc(sizeof(int) * 4096), *rb = malloc(sizeof(int) * 4096);
    int counts[64], displs[64], rcounts[64], rdispls[64];
    KT_CHECK(L <= 64 && R <= 64, "too many ranks");

    /* ---- barrier: a group that arrives late holds the other one */
    for (int late = 0; late < 2; late++) {
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        double t0 = MPI_Wtime();
        if (S == late) usleep(300000);
        KT_MPI(MPI_Barrier(ic));
        double dt = MPI_Wtime() - t0;
        KT_CHECK(dt > 0.25, "barrier returned after %.3f s, before the late group arrived", dt);
    }

    for (int rs = 0; rs < 2; rs++) {              /* the root's side */
        int nroot = rs == 0 ? e.na : e.nb;
        for (int root = 0; root < nroot; root++) {
            int amroot = S == rs && me == root;
            int rarg = S == rs ? (amroot ? MPI_ROOT : MPI_PROC_NULL) : root;

            /* ---- bcast */
            for (int k = 0; k < C; k++) rb[k] = amroot ? val(rs, root, 0, k) : -1;
            KT_MPI(MPI_Bcast(rb, C, MPI_INT, rarg, ic));
            for (int k = 0; k < C; k++)
                KT_EQ_INT(rb[k], S == rs && !amroot ? -1 : val(rs, root, 0, k));

            /* ---- gather */
            for (int k = 0; k < C; k++) sb[k] = val(S, me, 0, k);
            for (int i = 0; i < R * C; i++) rb[i] = -1;
            KT_MPI(MPI_Gather(sb, C, MPI_INT, rb, C, MPI_INT, rarg, ic));
            if (amroot)
                for (int i = 0; i < R; i++)
                    for (int k = 0; k < C; k++) KT_EQ_INT(rb[i * C + k], val(O, i, 0, k));
            else KT_EQ_INT(rb[0], -1);

            /* ---- gatherv: remote rank i sends i+1 elements, placed in reverse order */
            for (int k = 0; k < me + 1; k++) sb[k] = val(S, me, 0, k);
            if (amroot) {
                int d = 0;
                for (int i = R - 1; i >= 0; i--) { counts[i] = i + 1; displs[i] = d; d += i + 2; }
                for (int i = 0; i < d; i++) rb[i] = -1;
            }
            KT_MPI(MPI_Gatherv(sb, me + 1, MPI_INT, rb, counts, displs, MPI_INT, rarg, ic));
            if (amroot)
                for (int i = 0; i < R; i++) {
                    for (int k = 0; k < i + 1; k++) KT_EQ_INT(rb[displs[i] + k], val(O, i, 0, k));
                    KT_EQ_INT(rb[displs[i] + i + 1], -1);       /* the gap */
                }

            /* ---- scatter */
            if (amroot)
                for (int i = 0; i < R; i++)
                    for (int k = 0; k < C; k++) sb[i * C + k] = val(S, me, i, k);
            for (int k = 0; k < C; k++) rb[k] = -1;
            KT_MPI(MPI_Scatter(sb, C, MPI_INT, rb, C, MPI_INT, rarg, ic));
            for (int k = 0; k < C; k++)
                KT_EQ_INT(rb[k], S == rs ? -1 : val(rs, root, me, k));

            /* ---- scatterv: remote rank i gets i+1 elements from offset i*(R+1) */
            if (amroot)
                for (int i = 0; i < R; i++) {
                    counts[i] = i + 1;
                    displs[i] = i * (R + 1);
                    for (int k = 0; k < i + 1; k++) sb[displs[i] + k] = val(S, me, i, k);
                }
            for (int k = 0; k < me + 2; k++) rb[k] = -1;
            KT_MPI(MPI_Scatterv(sb, counts, displs, MPI_INT, rb, me + 1, MPI_INT, rarg, ic));
            if (S != rs) {
                for (int k = 0; k < me + 1; k++) KT_EQ_INT(rb[k], val(rs, root, me, k));
                KT_EQ_INT(rb[me + 1], -1);
            } else KT_EQ_INT(rb[0], -1);

            /* ---- reduce: sum and max of the other group's contributions */
            for (int k = 0; k < C; k++) sb[k] = val(S, me, 0, k);
            for (int k = 0; k < C; k++) rb[k] = -1;
            KT_MPI(MPI_Reduce(sb, rb, C, MPI_INT, MPI_SUM, rarg, ic));
            for (int k = 0; k < C; k++) {
                int want = 0;
                for (int i = 0; i < R; i++) want += val(O, i, 0, k);
                KT_EQ_INT(rb[k], amroot ? want : -1);
            }
            double ds = S * 0.5 + me, dr = -1;
            KT_MPI(MPI_Reduce(&ds, &dr, 1, MPI_DOUBLE, MPI_MAX, rarg, ic));
            if (amroot) KT_CHECK(dr == O * 0.5 + (R - 1), "max %g", dr);
            else KT_CHECK(dr == -1, "non-root got %g", dr);
        }
    }

    /* ---- allgather: every process gets the other group's blocks */
    for (int k = 0; k < C; k++) sb[k] = val(S, me, 0, k);
    for (int i = 0; i < R * C; i++) rb[i] = -1;
    KT_MPI(MPI_Allgather(sb, C, MPI_INT, rb, C, MPI_INT, ic));
    for (int i = 0; i < R; i++)
        for (int k = 0; k < C; k++) KT_EQ_INT(rb[i * C + k], val(O, i, 0, k));

    /* ---- allgatherv: remote rank i contributes i+1 elements, reversed layout */
    for (int k = 0; k < me + 1; k++) sb[k] = val(S, me, 0, k);
    {
        int d = 0;
        for (int i = R - 1; i >= 0; i--) { counts[i] = i + 1; displs[i] = d; d += i + 1; }
        for (int i = 0; i < d; i++) rb[i] = -1;
        KT_MPI(MPI_Allgatherv(sb, me + 1, MPI_INT, rb, counts, displs, MPI_INT, ic));
        for (int i = 0; i < R; i++)
            for (int k = 0; k < i + 1; k++) KT_EQ_INT(rb[displs[i] + k], val(O, i, 0, k));
    }

    /* ---- alltoall: block t goes to remote rank t */
    for (int t = 0; t < R; t++)
        for (int k = 0; k < C; k++) sb[t * C + k] = val(S, me, t, k);
    for (int i = 0; i < R * C; i++) rb[i] = -1;
    KT_MPI(MPI_Alltoall(sb, C, MPI_INT, rb, C, MPI_INT, ic));
    for (int i = 0; i < R; i++)
        for (int k = 0; k < C; k++) KT_EQ_INT(rb[i * C + k], val(O, i, me, k));

    /* ---- alltoallv: (me + t) % 3 + (S) elements from me to remote t */
    {
        int d = 0;
        for (int t = 0; t < R; t++) {
            counts[t] = (me + t) % 3 + S;
            displs[t] = d;
            for (int k = 0; k < counts[t]; k++) sb[d + k] = val(S, me, t, k);
            d += counts[t] + 1;
        }
        d = 0;
        for (int i = R - 1; i >= 0; i--) {
            rcounts[i] = (i + me) % 3 + O;
            rdispls[i] = d;
            d += rcounts[i];
        }
        for (int i = 0; i < d; i++) rb[i] = -1;
        KT_MPI(MPI_Alltoallv(sb, counts, displs, MPI_INT, rb, rcounts, rdispls, MPI_INT, ic));
        for (int i = 0; i < R; i++)
            for (int k = 0; k < rcounts[i]; k++) KT_EQ_INT(rb[rdispls[i] + k], val(O, i, me, k));
    }

    /* ---- alltoallw: one int to each remote rank, int / double alternating by the receiver's rank */
    {
        char sw[64 * 16], rw[64 * 16];
        MPI_Datatype st[64], rt[64];
        int sd[64], rd[64], sc[64], rc[64];
        for (int t = 0; t < R; t++) {
            sc[t] = 1; sd[t] = 16 * t;
            st[t] = t % 2 ? MPI_DOUBLE : MPI_INT;
            if (t % 2) { double v = val(S, me, t, 0); memcpy(sw + sd[t], &v, sizeof v); }
            else { int v = val(S, me, t, 0); memcpy(sw + sd[t], &v, sizeof v); }
        }
        for (int i = 0; i < R; i++) {
            rc[i] = 1; rd[i] = 16 * (R - 1 - i);
            rt[i] = me % 2 ? MPI_DOUBLE : MPI_INT;
        }
        memset(rw, 0xff, sizeof rw);
        KT_MPI(MPI_Alltoallw(sw, sc, sd, st, rw, rc, rd, rt, ic));
        for (int i = 0; i < R; i++) {
            if (me % 2) { double v; memcpy(&v, rw + rd[i], sizeof v); KT_CHECK(v == val(O, i, me, 0), "alltoallw got %g", v); }
            else { int v; memcpy(&v, rw + rd[i], sizeof v); KT_EQ_INT(v, val(O, i, me, 0)); }
        }
    }

    /* ---- allreduce: the other group's sum */
    for (int k = 0; k < C; k++) sb[k] = val(S, me, 0, k);
    KT_MPI(MPI_Allreduce(sb, rb, C, MPI_INT, MPI_SUM, ic));
    for (int k = 0; k < C; k++) {
        int want = 0;
        for (int i = 0; i < R; i++) want += val(O, i, 0, k);
        KT_EQ_INT(rb[k], want);
    }
    {
        long long x = (long long)(me + 1) << (S ? 40 : 0), p = 0, want = 0;
        KT_MPI(MPI_Allreduce(&x, &p, 1, MPI_LONG_LONG, MPI_BOR, ic));
        for (int i = 0; i < R; i++) want |= (long long)(i + 1) << (O ? 40 : 0);
        KT_EQ_INT(p, want);
    }

    /* ---- reduce_scatter: T elements in all; local rank i gets a share of the
     * other group's reduction */
    {
        const int T = 13;
        int d = 0;
        for (int i = 0; i < L; i++) { counts[i] = T / L + (i < T % L); displs[i] = d; d += counts[i]; }
        for (int k = 0; k < T; k++) sb[k] = val(S, me, 0, k);
        for (int k = 0; k < counts[me] + 1; k++) rb[k] = -1;
        KT_MPI(MPI_Reduce_scatter(sb, rb, counts, MPI_INT, MPI_SUM, ic));
        for (int k = 0; k < counts[me]; k++) {
            int want = 0;
            for (int i = 0; i < R; i++) want += val(O, i, 0, displs[me] + k);
            KT_EQ_INT(rb[k], want);
        }
        KT_EQ_INT(rb[counts[me]], -1);
    }

    /* ---- reduce_scatter_block: L * rc == R * rc' elements */
    {
        int lcm = L / gcd(L, R) * R, rcount = lcm / L;
        for (int k = 0; k < lcm; k++) sb[k] = val(S, me, 0, k);
        for (int k = 0; k < rcount + 1; k++) rb[k] = -1;
        KT_MPI(MPI_Reduce_scatter_block(sb, rb, rcount, MPI_INT, MPI_SUM, ic));
        for (int k = 0; k < rcount; k++) {
            int want = 0;
            for (int i = 0; i < R; i++) want += val(O, i, 0, me * rcount + k);
            KT_EQ_INT(rb[k], want);
        }
        KT_EQ_INT(rb[rcount], -1);
    }

    /* ---- a large bcast and allreduce (rendezvous sizes) */
    {
        int n = 200000;
        int *big = malloc(sizeof(int) * (size_t)n), *res = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++) big[i] = e.wrank + i;
        KT_MPI(MPI_Allreduce(big, res, n, MPI_INT, MPI_SUM, ic));
        int wsum = 0;
        for (int i = 0; i < R; i++) wsum += inter_world(&e, O, i);
        for (int i = 0; i < n; i += 997) KT_EQ_INT(res[i], wsum + R * i);
        if (S == 0 && me == 0) for (int i = 0; i < n; i++) big[i] = 3 * i;
        KT_MPI(MPI_Bcast(big, n, MPI_INT, S == 0 ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, ic));
        if (S == 1) for (int i = 0; i < n; i += 991) KT_EQ_INT(big[i], 3 * i);
        free(big);
        free(res);
    }

    KT_MPI(MPI_Comm_free(&e.inter));
    KT_MPI(MPI_Comm_free(&e.local));
    free(sb);
    free(rb);
    MPI_Finalize();
    return 0;
}
