/* ompi_nbrw: MPI_Ialltoallw and MPI_Ineighbor_alltoallw of a program built against Open MPI,
 * through the shim, whose converted type arrays are freed when the call returns (Kumi's
 * schedule builders copy what they keep: framework/include/kumi/coll.h).  Two requests of each
 * are started back to back with different type arrays (the second conversion reuses the
 * first's memory) and completed together; the results depend on both arrays.
 * Prints "ompi_nbrw: N ranks ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad;
#define CHECK(c, ...) do { if (!(c)) { printf("FAILED %s: ", #c); printf(__VA_ARGS__); printf("\n"); bad++; } } while (0)

int main(int argc, char **argv)
{
    int rank, size, len;
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_library_version(ver, &len);
    if (!strstr(ver, "Kumi")) { printf("not Kumi: %s\n", ver); MPI_Abort(MPI_COMM_WORLD, 1); }
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);

    /* Ialltoallw: block to peer p is 2 ints, sent as 2 x MPI_INT (request a) or 1 x pair (b),
     * received as 1 x pair (a) or 2 x MPI_INT (b) */
    int n = size;
    int *sc = malloc(sizeof(int) * n * 8), *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n;
    int *sc2 = sc + 4 * n, *sd2 = sc + 5 * n, *rc2 = sc + 6 * n, *rd2 = sc + 7 * n;
    MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * n * 4), *rt = st + n, *st2 = st + 2 * n, *rt2 = st + 3 * n;
    int *sa = malloc(sizeof(int) * n * 8), *ra = sa + 2 * n, *sb = sa + 4 * n, *rb = sa + 6 * n;
    for (int p = 0; p < n; p++) {
        sa[2 * p] = rank * 100 + p; sa[2 * p + 1] = -(rank * 100 + p);
        sb[2 * p] = rank * 1000 + p; sb[2 * p + 1] = 7;
        sc[p] = 2; st[p] = MPI_INT; rc[p] = 1; rt[p] = pair;
        sc2[p] = 1; st2[p] = pair; rc2[p] = 2; rt2[p] = MPI_INT;
        sd[p] = rd[p] = sd2[p] = rd2[p] = p * 2 * (int)sizeof(int);
    }
    memset(ra, 0, sizeof(int) * 2 * n);
    memset(rb, 0, sizeof(int) * 2 * n);
    MPI_Request req[4];
    MPI_Ialltoallw(sa, sc, sd, st, ra, rc, rd, rt, MPI_COMM_WORLD, &req[0]);
    MPI_Ialltoallw(sb, sc2, sd2, st2, rb, rc2, rd2, rt2, MPI_COMM_WORLD, &req[1]);

    /* Ineighbor_alltoallw on a periodic ring: to the left neighbour 1 int, to the right a pair */
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    int ns[4] = {rank, rank + 1, rank + 2, rank + 3}, nr[4] = {0, 0, 0, 0}, ns2[4], nr2[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++) ns2[i] = -ns[i];
    /* neighbours: [0] left (source/dest -1), [1] right */
    int nsc[2] = {1, 1}, nrc[2] = {1, 1};
    MPI_Aint nsd[2] = {0, sizeof(int)}, nrd[2] = {0, 2 * sizeof(int)};
    MPI_Datatype nst[2] = {MPI_INT, pair}, nrt[2] = {pair, MPI_INT};
    MPI_Datatype nst2[2] = {MPI_INT, pair}, nrt2[2] = {pair, MPI_INT};
    MPI_Ineighbor_alltoallw(ns, nsc, nsd, nst, nr, nrc, nrd, nrt, ring, &req[2]);
    MPI_Ineighbor_alltoallw(ns2, nsc, nsd, nst2, nr2, nrc, nrd, nrt2, ring, &req[3]);
    MPI_Type_free(&pair);   /* allowed while the requests are pending */
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);

    for (int p = 0; p < n; p++) {
        CHECK(ra[2 * p] == p * 100 + rank && ra[2 * p + 1] == -(p * 100 + rank), "ialltoallw a from %d: %d %d", p,
              ra[2 * p], ra[2 * p + 1]);
        CHECK(rb[2 * p] == p * 1000 + rank && rb[2 * p + 1] == 7, "ialltoallw b from %d: %d %d", p, rb[2 * p],
              rb[2 * p + 1]);
    }
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    /* from the left neighbour: what it sent to its right (a pair from ns+1), received as a pair
     * at nr[0..1]; from the right: what it sent to its left (1 int, ns[0]) received as 1 int at nr[2] */
    if (size == 1) {
        CHECK(nr[0] == rank + 1 && nr[1] == rank + 2 && nr[2] == rank, "neighbor self %d %d %d", nr[0], nr[1], nr[2]);
    } else {
        CHECK(nr[0] == left + 1 && nr[1] == left + 2 && nr[2] == right, "neighbor %d %d %d (left %d right %d)",
              nr[0], nr[1], nr[2], left, right);
        CHECK(nr2[0] == -(left + 1) && nr2[1] == -(left + 2) && nr2[2] == -right, "neighbor 2: %d %d %d",
              nr2[0], nr2[1], nr2[2]);
    }
    MPI_Comm_free(&ring);
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf("ompi_nbrw: %d ranks ok\n", size);
    free(sc); free(st); free(sa);
    MPI_Finalize();
    return all != 0;
}
