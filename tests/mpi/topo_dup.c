/* MPI_Comm_dup keeps the topology (MPI 4.1 sec. 7.4.2): a duplicated
 * Cartesian, graph and distributed-graph communicator answers the same
 * queries and runs neighborhood collectives; the original can be freed
 * first.  (Needs comm.c to call kumi_topo_dup / kumi_topo_free.) */
#include "kt.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int dims[2] = { 0, 0 }, per[2] = { 1, 0 }, st, nd;
    KT_MPI(MPI_Dims_create(size, 2, dims));
    MPI_Comm cart, dup;
    KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &cart));
    KT_MPI(MPI_Comm_dup(cart, &dup));
    KT_MPI(MPI_Comm_free(&cart));
    KT_MPI(MPI_Topo_test(dup, &st));
    KT_EQ_INT(st, MPI_CART);
    KT_MPI(MPI_Cartdim_get(dup, &nd));
    KT_EQ_INT(nd, 2);
    int gd[2], gp[2], gc[2];
    KT_MPI(MPI_Cart_get(dup, 2, gd, gp, gc));
    KT_EQ_INT(gd[0], dims[0]);
    KT_EQ_INT(gd[1], dims[1]);
    KT_EQ_INT(gp[0], 1);
    KT_EQ_INT(gp[1], 0);
    KT_EQ_INT(gc[0], rank / dims[1]);
    KT_EQ_INT(gc[1], rank % dims[1]);
    /* neighbours along dimension 0 (periodic): allgather of ranks */
    int src, dst, rb[4] = { -1, -1, -1, -1 };
    KT_MPI(MPI_Cart_shift(dup, 0, 1, &src, &dst));
    KT_MPI(MPI_Neighbor_allgather(&rank, 1, MPI_INT, rb, 1, MPI_INT, dup));
    KT_EQ_INT(rb[0], src);
    KT_EQ_INT(rb[1], dst);
    KT_MPI(MPI_Comm_free(&dup));

    int out[1] = { (rank + 1) % size }, in[1] = { (rank - 1 + size) % size }, w[1] = { 7 };
    MPI_Comm dg;
    KT_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, in, w, 1, out, w, MPI_INFO_NULL, 0, &dg));
    KT_MPI(MPI_Comm_dup(dg, &dup));
    KT_MPI(MPI_Comm_free(&dg));
    int ni, no, wt, s[1], sw[1], d[1], dw[1];
    KT_MPI(MPI_Topo_test(dup, &st));
    KT_EQ_INT(st, MPI_DIST_GRAPH);
    KT_MPI(MPI_Dist_graph_neighbors_count(dup, &ni, &no, &wt));
    KT_EQ_INT(ni, 1);
    KT_EQ_INT(no, 1);
    KT_CHECK(wt, "weights lost in the duplicate");
    KT_MPI(MPI_Dist_graph_neighbors(dup, 1, s, sw, 1, d, dw));
    KT_EQ_INT(s[0], in[0]);
    KT_EQ_INT(d[0], out[0]);
    KT_EQ_INT(sw[0], 7);
    int got = -1;
    KT_MPI(MPI_Neighbor_alltoall(&rank, 1, MPI_INT, &got, 1, MPI_INT, dup));
    KT_EQ_INT(got, in[0]);
    KT_MPI(MPI_Comm_free(&dup));

    /* a split of a topology communicator has none */
    KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &cart));
    KT_MPI(MPI_Comm_split(cart, 0, rank, &dup));
    KT_MPI(MPI_Topo_test(dup, &st));
    KT_EQ_INT(st, MPI_UNDEFINED);
    KT_MPI(MPI_Comm_free(&dup));
    KT_MPI(MPI_Comm_free(&cart));

    MPI_Finalize();
    return 0;
}
