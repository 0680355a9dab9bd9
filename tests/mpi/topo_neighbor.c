/* The five blocking neighborhood collectives on Cartesian (2-D and 3-D,
 * periodic and not: at 1 and 2 ranks a periodic dimension has the same
 * process on both sides), graph (ring + self loop; a double edge at 2
 * ranks) and distributed-graph communicators (adjacent, non-symmetric;
 * general).  Every value received is checked against what the sender put in
 * the block it addressed to this process; MPI_PROC_NULL blocks stay
 * untouched.
 *
 * Which block of sender s lands in my block i: for Cartesian topologies the
 * block s sent in the opposite direction (slot i^1); for graphs the k-th
 * edge s -> me (in s's list) fills my k-th block from s. */
#include "kt.h"


static int rank, size;

#define MAXN 16          /* neighbours per process in these tests */
#define UNTOUCHED -7

struct nbr {
    int cart;
    int nin, nout, in[MAXN], out[MAXN];
    int *allout;         /* size * MAXN: every rank's out list */
    int *alldeg;         /* size: every rank's out degree */
};

/* out slot of sender s that fills my in slot i */
static int match(const struct nbr *t, int i)
{
    int s = t->in[i];
    if (t->cart) return i ^ 1;
    int k = 0;
    for (int a = 0; a < i; a++) if (t->in[a] == s) k++;
    for (int j = 0; j < t->alldeg[s]; j++)
        if (t->allout[s * MAXN + j] == rank && k-- == 0) return j;
    KT_FAIL("rank %d: no out edge of %d matches my in edge %d", rank, s, i);
}

static int val(int sender, int slot, int e) { return sender * 10000 + slot * 100 + e; }
static int gval(int sender, int e) { return sender * 10000 + 99 * 100 + e; }
static int vcount(int sender, int slot) { return (sender + slot) % 3 + 1; }   /* 1..3 */

static void learn(MPI_Comm c, struct nbr *t, int cart)
{
    int st;
    memset(t, 0, sizeof *t);
    t->cart = cart;
    KT_MPI(MPI_Topo_test(c, &st));
    if (st == MPI_CART) {
        int nd, dims[3], per[3], co[3];
        KT_MPI(MPI_Cartdim_get(c, &nd));
        KT_MPI(MPI_Cart_get(c, nd, dims, per, co));
        t->nin = t->nout = 2 * nd;
        for (int d = 0; d < nd; d++) {
            int cc[3];
            for (int dir = 0; dir < 2; dir++) {
                memcpy(cc, co, sizeof cc);
                cc[d] += dir ? 1 : -1;
                int r;
                if (cc[d] < 0 || cc[d] >= dims[d]) {
                    if (!per[d]) { t->in[2 * d + dir] = t->out[2 * d + dir] = MPI_PROC_NULL; continue; }
                    cc[d] = (cc[d] + dims[d]) % dims[d];
                }
                KT_MPI(MPI_Cart_rank(c, cc, &r));
                t->in[2 * d + dir] = t->out[2 * d + dir] = r;
            }
        }
    } else if (st == MPI_GRAPH) {
        int n;
        KT_MPI(MPI_Graph_neighbors_count(c, rank, &n));
        KT_CHECK(n <= MAXN, "too many neighbours");
        KT_MPI(MPI_Graph_neighbors(c, rank, MAXN, t->in));
        memcpy(t->out, t->in, sizeof t->in);
        t->nin = t->nout = n;
    } else {
        int w;
        KT_MPI(MPI_Dist_graph_neighbors_count(c, &t->nin, &t->nout, &w));
        KT_CHECK(t->nin <= MAXN && t->nout <= MAXN, "too many neighbours");
        KT_MPI(MPI_Dist_graph_neighbors(c, MAXN, t->in, MPI_UNWEIGHTED, MAXN, t->out, MPI_UNWEIGHTED));
    }
    int n;
    MPI_Comm_size(c, &n);
    t->allout = malloc(sizeof(int) * MAXN * n);
    t->alldeg = malloc(sizeof(int) * n);
    KT_MPI(MPI_Allgather(t->out, MAXN, MPI_INT, t->allout, MAXN, MPI_INT, c));
    KT_MPI(MPI_Allgather(&t->nout, 1, MPI_INT, t->alldeg, 1, MPI_INT, c));
}

static void run_all(MPI_Comm c, const char *what, int cart)
{
    struct nbr t;
    learn(c, &t, cart);
    int nin = t.nin, nout = t.nout;
    const int E = 3;
    int *sbuf = malloc(sizeof(int) * (MAXN * 8 + 8));
    int *rbuf = malloc(sizeof(int) * (MAXN * 8 + 8));

    /* allgather: E ints */
    for (int e = 0; e < E; e++) sbuf[e] = gval(rank, e);
    for (int i = 0; i < MAXN * E; i++) rbuf[i] = UNTOUCHED;
    KT_MPI(MPI_Neighbor_allgather(sbuf, E, MPI_INT, rbuf, E, MPI_INT, c));
    for (int i = 0; i < nin; i++)
        for (int e = 0; e < E; e++) {
            int exp = t.in[i] == MPI_PROC_NULL ? UNTOUCHED : gval(t.in[i], e);
            if (rbuf[i * E + e] != exp)
                KT_FAIL("%s allgather: block %d (from %d) elem %d = %d, expected %d", what, i, t.in[i], e,
                        rbuf[i * E + e], exp);
        }

    /* allgatherv: the sender's count varies, blocks land at gaps of 5 from offset 1 */
    {
        int sc = rank % 3 + 1, rc[MAXN], dp[MAXN];
        for (int e = 0; e < sc; e++) sbuf[e] = gval(rank, e);
        for (int i = 0; i < nin; i++) {
            rc[i] = t.in[i] == MPI_PROC_NULL ? 2 : t.in[i] % 3 + 1;
            dp[i] = 5 * (nin - 1 - i) + 1;          /* reversed order */
        }
        for (int i = 0; i < MAXN * 5 + 8; i++) rbuf[i] = UNTOUCHED;
        KT_MPI(MPI_Neighbor_allgatherv(sbuf, sc, MPI_INT, rbuf, rc, dp, MPI_INT, c));
        for (int i = 0; i < nin; i++)
            for (int e = 0; e < 5; e++) {
                int exp = (t.in[i] == MPI_PROC_NULL || e >= rc[i]) ? UNTOUCHED : gval(t.in[i], e);
                if (rbuf[dp[i] + e] != exp)
                    KT_FAIL("%s allgatherv: block %d (from %d) elem %d = %d, expected %d", what, i,
                            t.in[i], e, rbuf[dp[i] + e], exp);
            }
        KT_EQ_INT(rbuf[0], UNTOUCHED);
    }

    /* alltoall: block j of E ints to out neighbour j */
    for (int j = 0; j < nout; j++)
        for (int e = 0; e < E; e++) sbuf[j * E + e] = val(rank, j, e);
    for (int i = 0; i < MAXN * E; i++) rbuf[i] = UNTOUCHED;
    KT_MPI(MPI_Neighbor_alltoall(sbuf, E, MPI_INT, rbuf, E, MPI_INT, c));
    for (int i = 0; i < nin; i++)
        for (int e = 0; e < E; e++) {
            int exp = t.in[i] == MPI_PROC_NULL ? UNTOUCHED : val(t.in[i], match(&t, i), e);
            if (rbuf[i * E + e] != exp)
                KT_FAIL("%s alltoall: block %d (from %d) elem %d = %d, expected %d", what, i, t.in[i], e,
                        rbuf[i * E + e], exp);
        }

    /* alltoallv: count of slot j is vcount(me, j); send blocks reversed at gaps of 4 */
    {
        int sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN];
        for (int j = 0; j < nout; j++) {
            sc[j] = vcount(rank, j);
            sd[j] = 4 * (nout - 1 - j);
            for (int e = 0; e < sc[j]; e++) sbuf[sd[j] + e] = val(rank, j, e);
        }
        for (int i = 0; i < nin; i++) {
            rc[i] = t.in[i] == MPI_PROC_NULL ? 3 : vcount(t.in[i], match(&t, i));
            rd[i] = 4 * i + 1;
        }
        for (int i = 0; i < MAXN * 4 + 8; i++) rbuf[i] = UNTOUCHED;
        KT_MPI(MPI_Neighbor_alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, c));
        for (int i = 0; i < nin; i++)
            for (int e = 0; e < 3; e++) {
                int exp = (t.in[i] == MPI_PROC_NULL || e >= rc[i]) ? UNTOUCHED
                          : val(t.in[i], match(&t, i), e);
                if (rbuf[rd[i] + e] != exp)
                    KT_FAIL("%s alltoallv: block %d (from %d) elem %d = %d, expected %d", what, i,
                            t.in[i], e, rbuf[rd[i] + e], exp);
            }
    }

    /* alltoallw: byte displacements; even slots MPI_INT, odd slots a derived
     * pair type (contiguous 2 ints) with counts halved */
    {
        MPI_Datatype pair;
        KT_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
        KT_MPI(MPI_Type_commit(&pair));
        int sc[MAXN], rc[MAXN];
        MPI_Aint sd[MAXN], rd[MAXN];
        MPI_Datatype st[MAXN], rt[MAXN];
        for (int j = 0; j < nout; j++) {
            sc[j] = j % 2 ? 1 : 2;                  /* 2 ints either way */
            st[j] = j % 2 ? pair : MPI_INT;
            sd[j] = (MPI_Aint)sizeof(int) * 3 * j;
            sbuf[3 * j] = val(rank, j, 0);
            sbuf[3 * j + 1] = val(rank, j, 1);
            sbuf[3 * j + 2] = -1;
        }
        for (int i = 0; i < nin; i++) {
            rc[i] = i % 2 ? 2 : 1;                  /* the other shape on this side */
            rt[i] = i % 2 ? MPI_INT : pair;
            rd[i] = (MPI_Aint)sizeof(int) * 3 * (nin - 1 - i);
        }
        for (int i = 0; i < MAXN * 3 + 8; i++) rbuf[i] = UNTOUCHED;
        KT_MPI(MPI_Neighbor_alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, c));
        for (int i = 0; i < nin; i++)
            for (int e = 0; e < 3; e++) {
                int exp = (t.in[i] == MPI_PROC_NULL || e == 2) ? UNTOUCHED : val(t.in[i], match(&t, i), e);
                int got = rbuf[rd[i] / (MPI_Aint)sizeof(int) + e];
                if (got != exp)
                    KT_FAIL("%s alltoallw: block %d (from %d) elem %d = %d, expected %d", what, i,
                            t.in[i], e, got, exp);
            }
        KT_MPI(MPI_Type_free(&pair));
    }

    /* large-count forms of two of them */
    {
        for (int j = 0; j < nout; j++)
            for (int e = 0; e < E; e++) sbuf[j * E + e] = val(rank, j, e);
        for (int i = 0; i < MAXN * E; i++) rbuf[i] = UNTOUCHED;
        KT_MPI(MPI_Neighbor_alltoall_c(sbuf, E, MPI_INT, rbuf, E, MPI_INT, c));
        for (int i = 0; i < nin; i++) {
            int exp = t.in[i] == MPI_PROC_NULL ? UNTOUCHED : val(t.in[i], match(&t, i), 2);
            KT_EQ_INT(rbuf[i * E + 2], exp);
        }
        MPI_Count rc[MAXN];
        MPI_Aint dp[MAXN];
        for (int i = 0; i < nin; i++) { rc[i] = 1; dp[i] = i; }
        sbuf[0] = gval(rank, 0);
        for (int i = 0; i < MAXN; i++) rbuf[i] = UNTOUCHED;
        KT_MPI(MPI_Neighbor_allgatherv_c(sbuf, 1, MPI_INT, rbuf, rc, dp, MPI_INT, c));
        for (int i = 0; i < nin; i++)
            KT_EQ_INT(rbuf[i], t.in[i] == MPI_PROC_NULL ? UNTOUCHED : gval(t.in[i], 0));
    }

    /* twice in a row with the same data shape: no cross-talk between calls */
    for (int it = 0; it < 3; it++) {
        for (int j = 0; j < nout; j++) sbuf[j] = val(rank, j, it);
        for (int i = 0; i < MAXN; i++) rbuf[i] = UNTOUCHED;
        KT_MPI(MPI_Neighbor_alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, c));
        for (int i = 0; i < nin; i++)
            KT_EQ_INT(rbuf[i], t.in[i] == MPI_PROC_NULL ? UNTOUCHED : val(t.in[i], match(&t, i), it));
    }

    /* errors on a topology communicator */
    KT_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    if (nout > 0)
        KT_ERRCLASS(MPI_Neighbor_alltoall(MPI_IN_PLACE, 1, MPI_INT, rbuf, 1, MPI_INT, c), MPI_ERR_BUFFER);
    if (nin > 0) {
        int rc[MAXN], rd[MAXN];
        for (int i = 0; i < nin; i++) { rc[i] = 1; rd[i] = i; }
        rc[nin - 1] = -1;
        KT_ERRCLASS(MPI_Neighbor_allgatherv(sbuf, 1, MPI_INT, rbuf, rc, rd, MPI_INT, c), MPI_ERR_COUNT);
    }

    free(t.allout);
    free(t.alldeg);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Comm c;

    /* Cartesian */
    static const int pers[4][3] = { { 0, 0, 0 }, { 1, 1, 1 }, { 1, 0, 1 }, { 0, 1, 0 } };
    for (int nd = 1; nd <= 3; nd++)
        for (int p = 0; p < 4; p++) {
            int dims[3] = { 0, 0, 0 };
            char what[64];
            KT_MPI(MPI_Dims_create(size, nd, dims));
            KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, nd, dims, pers[p], 0, &c));
            snprintf(what, sizeof what, "cart %dd periods %d%d%d", nd, pers[p][0], pers[p][1], pers[p][2]);
            run_all(c, what, 1);
            KT_MPI(MPI_Comm_free(&c));
        }
    /* a 1 x size x 1 periodic grid: dimensions of size 1 are their own neighbours */
    {
        int dims[3] = { 1, size, 1 }, per[3] = { 1, 1, 1 };
        KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, 3, dims, per, 0, &c));
        run_all(c, "cart 1 x n x 1 periodic", 1);
        KT_MPI(MPI_Comm_free(&c));
    }

    /* graph: ring both ways, a self loop at 0 */
    {
        int *index = malloc(sizeof(int) * size), *edges = malloc(sizeof(int) * 3 * size), ne = 0;
        for (int r = 0; r < size; r++) {
            edges[ne++] = (r + 1) % size;
            edges[ne++] = (r - 1 + size) % size;
            if (r == 0) edges[ne++] = 0;
            index[r] = ne;
        }
        KT_MPI(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &c));
        run_all(c, "graph", 0);
        KT_MPI(MPI_Comm_free(&c));
        free(index);
        free(edges);
    }

    /* dist graph adjacent: r -> r+1, r+2, r+2 (a double edge); in: the mirror */
    {
        int out[3] = { (rank + 1) % size, (rank + 2) % size, (rank + 2) % size };
        int in[3] = { (rank - 2 + 2 * size) % size, (rank - 1 + size) % size, (rank - 2 + 2 * size) % size };
        KT_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, in, MPI_UNWEIGHTED, 3, out, MPI_UNWEIGHTED,
                                              MPI_INFO_NULL, 0, &c));
        run_all(c, "dist graph adjacent", 0);
        KT_MPI(MPI_Comm_free(&c));
    }
    /* dist graph adjacent, one way only: rank 0 sends to everyone, nobody else sends */
    {
        int *out = malloc(sizeof(int) * size), in0[1] = { 0 };
        for (int q = 0; q < size; q++) out[q] = q;
        KT_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, in0, MPI_UNWEIGHTED,
                                              rank == 0 ? size : 0, out, MPI_UNWEIGHTED,
                                              MPI_INFO_NULL, 0, &c));
        run_all(c, "dist graph fan-out", 0);
        KT_MPI(MPI_Comm_free(&c));
        free(out);
    }
    /* dist graph general: rank r declares r -> r+1 and (r+2) -> r */
    {
        int srcs[2] = { rank, (rank + 2) % size }, degs[2] = { 1, 1 };
        int dsts[2] = { (rank + 1) % size, rank }, w[2] = { 1, 2 };
        KT_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, 2, srcs, degs, dsts, w, MPI_INFO_NULL, 0, &c));
        run_all(c, "dist graph general", 0);
        KT_MPI(MPI_Comm_free(&c));
    }

    MPI_Finalize();
    return 0;
}
