/* Graph and distributed-graph topologies at any size: Graph_create (with a
 * self loop and, at 2 ranks, a double edge; nnodes smaller than the
 * communicator), Graph_get / Graphdims_get / Graph_neighbors(_count) /
 * Graph_map; Dist_graph_create_adjacent (weighted, MPI_UNWEIGHTED,
 * MPI_WEIGHTS_EMPTY) and Dist_graph_create (edges declared by ranks other
 * than their ends) with Dist_graph_neighbors(_count); Topo_test; errors. */
#include "kt.h"


static int rank, size;

static int cmp_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[0] != y[0]) return x[0] - y[0];
    return x[1] - y[1];
}

/* neighbours of node r in the test graph: r+1, r-1 (a ring), and r itself at node 0 */
static int graph_nbrs(int r, int n, int *out)
{
    int k = 0;
    out[k++] = (r + 1) % n;
    out[k++] = (r - 1 + n) % n;
    if (r == 0) out[k++] = 0;
    return k;
}

static void test_graph(int nnodes)
{
    int index[64], edges[192], ne = 0;
    for (int r = 0; r < nnodes; r++) {
        ne += graph_nbrs(r, nnodes, edges + ne);
        index[r] = ne;
    }
    MPI_Comm g;
    KT_MPI(MPI_Graph_create(MPI_COMM_WORLD, nnodes, index, edges, 0, &g));
    if (rank >= nnodes) {
        KT_CHECK(g == MPI_COMM_NULL, "rank %d outside a graph of %d nodes got a communicator", rank, nnodes);
        return;
    }
    KT_CHECK(g != MPI_COMM_NULL, "rank %d of a graph of %d nodes got MPI_COMM_NULL", rank, nnodes);
    int st, nn, nedges, s, r;
    KT_MPI(MPI_Topo_test(g, &st));
    KT_EQ_INT(st, MPI_GRAPH);
    KT_MPI(MPI_Comm_size(g, &s));
    KT_EQ_INT(s, nnodes);
    KT_MPI(MPI_Comm_rank(g, &r));
    KT_EQ_INT(r, rank);
    KT_MPI(MPI_Graphdims_get(g, &nn, &nedges));
    KT_EQ_INT(nn, nnodes);
    KT_EQ_INT(nedges, ne);
    int gi[64], ge[192];
    KT_MPI(MPI_Graph_get(g, 64, 192, gi, ge));
    for (int i = 0; i < nnodes; i++) KT_EQ_INT(gi[i], index[i]);
    for (int e = 0; e < ne; e++) KT_EQ_INT(ge[e], edges[e]);
    for (int q = 0; q < nnodes; q++) {
        int exp[3], ne_q = graph_nbrs(q, nnodes, exp), cnt, nb[3];
        KT_MPI(MPI_Graph_neighbors_count(g, q, &cnt));
        KT_EQ_INT(cnt, ne_q);
        KT_MPI(MPI_Graph_neighbors(g, q, 3, nb));
        for (int k = 0; k < ne_q; k++) KT_EQ_INT(nb[k], exp[k]);
    }
    int a;
    KT_ERRCLASS(MPI_Graph_neighbors_count(g, nnodes, &a), MPI_ERR_RANK);
    KT_ERRCLASS(MPI_Cartdim_get(g, &a), MPI_ERR_TOPOLOGY);
    /* a message to a neighbour through the graph communicator */
    int nb[3], got = -1;
    KT_MPI(MPI_Graph_neighbors(g, rank, 3, nb));
    KT_MPI(MPI_Sendrecv(&rank, 1, MPI_INT, nb[0], 3, &got, 1, MPI_INT, nb[1], 3, g, MPI_STATUS_IGNORE));
    KT_EQ_INT(got, nb[1]);
    KT_MPI(MPI_Comm_free(&g));
}

static void test_adjacent(void)
{
    /* out: r+1, r+2; in: r-1, r-2 (weights 10*src + dst) */
    int out[2] = { (rank + 1) % size, (rank + 2) % size };
    int in[2] = { (rank - 1 + size) % size, (rank - 2 + 2 * size) % size };
    int ow[2] = { 10 * rank + out[0], 10 * rank + out[1] };
    int iw[2] = { 10 * in[0] + rank, 10 * in[1] + rank };
    MPI_Comm d;
    KT_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, in, iw, 2, out, ow, MPI_INFO_NULL, 0, &d));
    int st, ni, no, w, s[4], sw[4], dd[4], dw[4];
    KT_MPI(MPI_Topo_test(d, &st));
    KT_EQ_INT(st, MPI_DIST_GRAPH);
    KT_MPI(MPI_Dist_graph_neighbors_count(d, &ni, &no, &w));
    KT_EQ_INT(ni, 2);
    KT_EQ_INT(no, 2);
    KT_CHECK(w, "weighted graph reported unweighted");
    KT_MPI(MPI_Dist_graph_neighbors(d, 4, s, sw, 4, dd, dw));
    for (int k = 0; k < 2; k++) {
        KT_EQ_INT(s[k], in[k]);
        KT_EQ_INT(sw[k], iw[k]);
        KT_EQ_INT(dd[k], out[k]);
        KT_EQ_INT(dw[k], ow[k]);
    }
    /* weights not asked for */
    KT_MPI(MPI_Dist_graph_neighbors(d, 2, s, MPI_UNWEIGHTED, 2, dd, MPI_UNWEIGHTED));
    KT_EQ_INT(s[1], in[1]);
    KT_EQ_INT(dd[1], out[1]);
    KT_MPI(MPI_Comm_free(&d));

    /* unweighted */
    KT_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, in, MPI_UNWEIGHTED, 2, out, MPI_UNWEIGHTED,
                                          MPI_INFO_NULL, 1, &d));
    KT_MPI(MPI_Dist_graph_neighbors_count(d, &ni, &no, &w));
    KT_EQ_INT(ni, 2);
    KT_EQ_INT(no, 2);
    KT_CHECK(!w, "unweighted graph reported weighted");
    KT_MPI(MPI_Dist_graph_neighbors(d, 2, s, MPI_UNWEIGHTED, 2, dd, MPI_UNWEIGHTED));
    KT_EQ_INT(s[0], in[0]);
    KT_EQ_INT(dd[0], out[0]);
    KT_MPI(MPI_Comm_free(&d));

    /* no edges at all, weighted: MPI_WEIGHTS_EMPTY */
    KT_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, MPI_WEIGHTS_EMPTY, 0, NULL,
                                          MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &d));
    KT_MPI(MPI_Dist_graph_neighbors_count(d, &ni, &no, &w));
    KT_EQ_INT(ni, 0);
    KT_EQ_INT(no, 0);
    KT_CHECK(w, "MPI_WEIGHTS_EMPTY graph reported unweighted");
    KT_MPI(MPI_Comm_free(&d));

    /* errors */
    int bad[1] = { size };
    KT_ERRCLASS(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, bad, MPI_UNWEIGHTED, 0, NULL,
                                               MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &d), MPI_ERR_RANK);
    KT_ERRCLASS(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, -1, in, MPI_UNWEIGHTED, 0, NULL,
                                               MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &d), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, in, MPI_WEIGHTS_EMPTY, 0, NULL,
                                               MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &d), MPI_ERR_ARG);
}

/* General form: rank r declares the edges r -> r+1 (weight 100+r) and, on
 * behalf of others, (r+2) -> (r+3) (weight 200+r).  Expected: out edges of
 * x: x+1 (declared by x), x+3... see below; checked as sorted sets, then
 * the order rule (by declaring rank) on the in-list. */
static void test_general(void)
{
    int srcs[2] = { rank, (rank + 2) % size }, degs[2] = { 1, 1 };
    int dsts[2] = { (rank + 1) % size, (rank + 3) % size }, wts[2] = { 100 + rank, 200 + rank };
    MPI_Comm d;
    KT_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, 2, srcs, degs, dsts, wts, MPI_INFO_NULL, 0, &d));
    int st, ni, no, w;
    KT_MPI(MPI_Topo_test(d, &st));
    KT_EQ_INT(st, MPI_DIST_GRAPH);
    KT_MPI(MPI_Dist_graph_neighbors_count(d, &ni, &no, &w));
    KT_EQ_INT(ni, 2);
    KT_EQ_INT(no, 2);
    KT_CHECK(w, "weighted graph reported unweighted");
    int s[2], sw[2], dd[2], dw[2];
    KT_MPI(MPI_Dist_graph_neighbors(d, 2, s, sw, 2, dd, dw));
    /* every edge, generated by everyone: declarer q gives q->q+1 (100+q) and q+2->q+3 (200+q) */
    int ein[4][2], eout[4][2], gin[2][2], gout[2][2], nin = 0, nout = 0;
    for (int q = 0; q < size; q++) {
        int e[2][3] = { { q, (q + 1) % size, 100 + q }, { (q + 2) % size, (q + 3) % size, 200 + q } };
        for (int k = 0; k < 2; k++) {
            if (e[k][1] == rank && nin < 4) { ein[nin][0] = e[k][0]; ein[nin][1] = e[k][2]; nin++; }
            if (e[k][0] == rank && nout < 4) { eout[nout][0] = e[k][1]; eout[nout][1] = e[k][2]; nout++; }
        }
    }
    KT_EQ_INT(nin, 2);
    KT_EQ_INT(nout, 2);
    /* in the order of declaring ranks (the generation order above is that order) */
    for (int k = 0; k < 2; k++) {
        gin[k][0] = s[k]; gin[k][1] = sw[k];
        gout[k][0] = dd[k]; gout[k][1] = dw[k];
    }
    qsort(ein, 2, sizeof ein[0], cmp_pair);
    qsort(gin, 2, sizeof gin[0], cmp_pair);
    qsort(eout, 2, sizeof eout[0], cmp_pair);
    qsort(gout, 2, sizeof gout[0], cmp_pair);
    for (int k = 0; k < 2; k++) {
        if (gin[k][0] != ein[k][0] || gin[k][1] != ein[k][1])
            KT_FAIL("in edge %d: (%d, w %d), expected (%d, w %d)", k, gin[k][0], gin[k][1], ein[k][0], ein[k][1]);
        if (gout[k][0] != eout[k][0] || gout[k][1] != eout[k][1])
            KT_FAIL("out edge %d: (%d, w %d), expected (%d, w %d)", k, gout[k][0], gout[k][1], eout[k][0], eout[k][1]);
    }
    KT_MPI(MPI_Comm_free(&d));

    /* unweighted, only rank 0 declares everything: a ring r -> r+1 */
    int *rs = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size), *rg = malloc(sizeof(int) * size);
    for (int q = 0; q < size; q++) { rs[q] = q; rd[q] = (q + 1) % size; rg[q] = 1; }
    KT_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0 ? size : 0, rs, rg, rd, MPI_UNWEIGHTED,
                                 MPI_INFO_NULL, 0, &d));
    KT_MPI(MPI_Dist_graph_neighbors_count(d, &ni, &no, &w));
    KT_EQ_INT(ni, 1);
    KT_EQ_INT(no, 1);
    KT_CHECK(!w, "unweighted graph reported weighted");
    KT_MPI(MPI_Dist_graph_neighbors(d, 1, s, MPI_UNWEIGHTED, 1, dd, MPI_UNWEIGHTED));
    KT_EQ_INT(s[0], (rank - 1 + size) % size);
    KT_EQ_INT(dd[0], (rank + 1) % size);
    KT_MPI(MPI_Comm_free(&d));
    free(rs); free(rd); free(rg);

    int bad[1] = { -3 }, one[1] = { 1 }, me[1] = { rank };
    KT_ERRCLASS(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, me, one, bad, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &d),
                MPI_ERR_RANK);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    test_graph(size);
    if (size > 1) test_graph(size - 1);
    test_adjacent();
    test_general();

    /* Graph_map and Graph_create errors */
    int index[1] = { 1 }, edges[1] = { 0 }, nr;
    KT_MPI(MPI_Graph_map(MPI_COMM_WORLD, 1, index, edges, &nr));
    KT_EQ_INT(nr, rank == 0 ? 0 : MPI_UNDEFINED);
    MPI_Comm g;
    KT_MPI(MPI_Graph_create(MPI_COMM_WORLD, 0, index, edges, 0, &g));
    KT_CHECK(g == MPI_COMM_NULL, "a graph of 0 nodes gave a communicator");
    edges[0] = 1;      /* node 1 does not exist in a graph of one node */
    KT_ERRCLASS(MPI_Graph_create(MPI_COMM_WORLD, 1, index, edges, 0, &g), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Graph_create(MPI_COMM_WORLD, size + 1, index, edges, 0, &g), MPI_ERR_ARG);

    MPI_Finalize();
    return 0;
}
