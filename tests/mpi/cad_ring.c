/* The CAD API (mpi-ext.h): a user-built pipelined ring broadcast (KACC's
 * example: each chunk is received from the left neighbour, then sent on to
 * the right one), rerun with new data; a ring reduction with CALC and COPY
 * nodes; a diamond of dependencies whose order is observable; and the
 * errors: bad tag, rank, node, datatype, a cycle, a second issue before
 * the first run completed, nodes added after issue. */
#include "kt.h"
#include <mpi-ext.h>
#include <stdint.h>

#define CHUNKS 64

/* Ring broadcast of n doubles from root in CHUNKS pieces. */
static MPIX_Cad ring_bcast(double *buf, int n, int root, MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int left = (rank - 1 + size) % size, right = (rank + 1) % size;
    MPIX_Cad cad;
    KT_MPI(MPIX_Cad_create(comm, &cad));
    int per = (n + CHUNKS - 1) / CHUNKS;
    for (int k = 0; k < CHUNKS; k++) {
        int off = k * per, len = off >= n ? 0 : (n - off < per ? n - off : per);
        int r = -1, s = -1;
        if (rank != root) KT_MPI(MPIX_Cad_recv(cad, buf + off, len, MPI_DOUBLE, left, k, &r));
        if (right != root) KT_MPI(MPIX_Cad_send(cad, buf + off, len, MPI_DOUBLE, right, k, &s));
        if (r >= 0 && s >= 0) KT_MPI(MPIX_Cad_connect(cad, r, s));
    }
    return cad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. pipelined ring broadcast, three runs with new data, two roots, a size over the eager limit */
    int n = 100003;
    double *buf = malloc(n * sizeof *buf);
    for (int root = 0; root < size && root < 2; root++) {
        MPIX_Cad cad = ring_bcast(buf, n, root, MPI_COMM_WORLD);
        for (int run = 0; run < 3; run++) {
            for (int i = 0; i < n; i++) buf[i] = rank == root ? i * 0.5 + run * 1000 + root : -1;
            KT_MPI(MPIX_Cad_issue(cad));
            if (run == 1) {
                int flag = 0;
                while (!flag) KT_MPI(MPIX_Cad_test(cad, &flag));
            } else {
                KT_MPI(MPIX_Cad_wait(cad));
            }
            for (int i = 0; i < n; i++)
                if (buf[i] != i * 0.5 + run * 1000 + root)
                    KT_FAIL("ring bcast root %d run %d: buf[%d] = %g, expected %g", root, run, i, buf[i],
                            i * 0.5 + run * 1000 + root);
        }
        int flag = 0;
        KT_MPI(MPIX_Cad_test(cad, &flag));          /* nothing running: flag 1 */
        KT_EQ_INT(flag, 1);
        KT_MPI(MPIX_Cad_free(&cad));
        KT_CHECK(cad == MPIX_CAD_NULL, "MPIX_Cad_free sets the handle to MPIX_CAD_NULL");
    }

    /* 2. ring reduction: rank r's vector travels around the ring; each rank adds its own
     *    (CALC) to what arrives and passes the partial sum on; rank 0 keeps a COPY of the total */
    {
        enum { M = 1000 };
        int *mine = malloc(M * sizeof(int)), *acc = malloc(M * sizeof(int)), *total = malloc(M * sizeof(int));
        for (int i = 0; i < M; i++) { mine[i] = rank * 7 + i; total[i] = -1; }
        int left = (rank - 1 + size) % size, right = (rank + 1) % size;
        MPIX_Cad cad;
        KT_MPI(MPIX_Cad_create(MPI_COMM_WORLD, &cad));
        int c0, r, c, s, cp;
        /* acc = mine (rank 0 starts the chain) */
        KT_MPI(MPIX_Cad_copy(cad, mine, M, MPI_INT, acc, M, MPI_INT, &c0));
        if (size == 1) {
            KT_MPI(MPIX_Cad_copy(cad, acc, M, MPI_INT, total, M, MPI_INT, &cp));
            KT_MPI(MPIX_Cad_connect(cad, c0, cp));
        } else if (rank == 0) {
            KT_MPI(MPIX_Cad_send(cad, acc, M, MPI_INT, right, 1, &s));
            KT_MPI(MPIX_Cad_connect(cad, c0, s));
            KT_MPI(MPIX_Cad_recv(cad, total, M, MPI_INT, left, 1, &r));
        } else {
            int *in = malloc(M * sizeof(int));
            KT_MPI(MPIX_Cad_recv(cad, in, M, MPI_INT, left, 1, &r));
            KT_MPI(MPIX_Cad_calc(cad, in, acc, M, MPI_INT, MPI_SUM, &c));
            KT_MPI(MPIX_Cad_connect(cad, r, c));
            KT_MPI(MPIX_Cad_connect(cad, c0, c));
            KT_MPI(MPIX_Cad_send(cad, acc, M, MPI_INT, right, 1, &s));
            KT_MPI(MPIX_Cad_connect(cad, c, s));
            KT_MPI(MPIX_Cad_issue(cad));
            KT_MPI(MPIX_Cad_wait(cad));
            free(in);
        }
        if (rank == 0) {
            KT_MPI(MPIX_Cad_issue(cad));
            KT_MPI(MPIX_Cad_wait(cad));
            for (int i = 0; i < M; i++) {
                int want = 7 * size * (size - 1) / 2 + size * i;
                if (total[i] != want) KT_FAIL("ring reduction: total[%d] = %d, expected %d", i, total[i], want);
            }
        }
        KT_MPI(MPIX_Cad_free(&cad));
        free(mine); free(acc); free(total);
    }

    /* 3. a diamond on one rank: a -> (b, c) -> d; the order shows in the data
     *    (b and c each add into their own slot from a's result, d sums both) */
    {
        int x = 5, y[2] = { 0, 0 }, z = 0;
        int one[2] = { 1, 2 };
        MPIX_Cad cad;
        KT_MPI(MPIX_Cad_create(MPI_COMM_SELF, &cad));
        int a, b, c, d1, d2, cz;
        KT_MPI(MPIX_Cad_copy(cad, &x, 1, MPI_INT, &y[0], 1, MPI_INT, &a));     /* y0 = 5 */
        KT_MPI(MPIX_Cad_copy(cad, &y[0], 1, MPI_INT, &y[1], 1, MPI_INT, &b));  /* y1 = 5 */
        KT_MPI(MPIX_Cad_calc(cad, &one[0], &y[0], 1, MPI_INT, MPI_SUM, &c));   /* y0 = 6 */
        KT_MPI(MPIX_Cad_copy(cad, &y[1], 1, MPI_INT, &z, 1, MPI_INT, &cz));    /* z = 5 */
        KT_MPI(MPIX_Cad_calc(cad, &y[0], &z, 1, MPI_INT, MPI_SUM, &d1));       /* z = 11 */
        KT_MPI(MPIX_Cad_calc(cad, &one[1], &z, 1, MPI_INT, MPI_PROD, &d2));    /* z = 22 */
        KT_MPI(MPIX_Cad_connect(cad, a, b));
        KT_MPI(MPIX_Cad_connect(cad, b, c));       /* b reads y0 before c changes it */
        KT_MPI(MPIX_Cad_connect(cad, b, cz));
        KT_MPI(MPIX_Cad_connect(cad, c, d1));
        KT_MPI(MPIX_Cad_connect(cad, cz, d1));
        KT_MPI(MPIX_Cad_connect(cad, d1, d2));
        KT_MPI(MPIX_Cad_issue(cad));
        KT_MPI(MPIX_Cad_wait(cad));
        KT_EQ_INT(y[0], 6);
        KT_EQ_INT(y[1], 5);
        KT_EQ_INT(z, 22);
        KT_MPI(MPIX_Cad_free(&cad));
    }

    /* 4. errors: each is reported with its class and leaves the schedule usable */
    {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);   /* errors of no communicator */
        MPIX_Cad cad;
        int v = 0, node = -1, a, b;
        KT_MPI(MPIX_Cad_create(MPI_COMM_WORLD, &cad));
        KT_ERRCLASS(MPIX_Cad_send(cad, &v, 1, MPI_INT, size, 0, &node), MPI_ERR_RANK);
        KT_ERRCLASS(MPIX_Cad_recv(cad, &v, 1, MPI_INT, -5, 0, &node), MPI_ERR_RANK);
        KT_ERRCLASS(MPIX_Cad_send(cad, &v, 1, MPI_INT, 0, MPIX_CAD_TAG_UB + 1, &node), MPI_ERR_TAG);
        KT_ERRCLASS(MPIX_Cad_send(cad, &v, -1, MPI_INT, 0, 0, &node), MPI_ERR_COUNT);
        KT_ERRCLASS(MPIX_Cad_send(cad, &v, 1, MPI_DATATYPE_NULL, 0, 0, &node), MPI_ERR_TYPE);
        KT_ERRCLASS(MPIX_Cad_calc(cad, &v, &v, 1, MPI_INT, MPI_OP_NULL, &node), MPI_ERR_OP);
        KT_ERRCLASS(MPIX_Cad_calc(cad, &v, &v, 1, MPI_DOUBLE_INT, MPI_SUM, &node), MPI_ERR_OP);
        KT_ERRCLASS(MPIX_Cad_send(MPIX_CAD_NULL, &v, 1, MPI_INT, 0, 0, &node), MPI_ERR_ARG);
        KT_MPI(MPIX_Cad_copy(cad, &v, 1, MPI_INT, &v, 1, MPI_INT, &a));
        KT_MPI(MPIX_Cad_copy(cad, &v, 1, MPI_INT, &v, 1, MPI_INT, &b));
        KT_ERRCLASS(MPIX_Cad_connect(cad, a, a), MPI_ERR_ARG);
        KT_ERRCLASS(MPIX_Cad_connect(cad, a, 999), MPI_ERR_ARG);
        KT_ERRCLASS(MPIX_Cad_connect(cad, 0, b), MPI_ERR_ARG);    /* START is not the user's */
        KT_MPI(MPIX_Cad_connect(cad, a, b));
        KT_MPI(MPIX_Cad_connect(cad, b, a));                       /* a cycle: found at issue */
        KT_ERRCLASS(MPIX_Cad_issue(cad), MPI_ERR_ARG);
        KT_MPI(MPIX_Cad_free(&cad));

        /* a second issue before the run completed; a node after issue */
        int in = 0, out = 0, peer = (rank + 1) % size, from = (rank - 1 + size) % size;
        KT_MPI(MPIX_Cad_create(MPI_COMM_WORLD, &cad));
        KT_MPI(MPIX_Cad_recv(cad, &in, 1, MPI_INT, from, 0, &a));
        KT_MPI(MPIX_Cad_send(cad, &out, 1, MPI_INT, peer, 0, &b));
        out = rank + 100;
        MPI_Barrier(MPI_COMM_WORLD);              /* nobody's run can complete before everyone issued */
        KT_MPI(MPIX_Cad_issue(cad));
        int flag = 1;
        KT_MPI(MPIX_Cad_test(cad, &flag));
        if (!flag) KT_ERRCLASS(MPIX_Cad_issue(cad), MPI_ERR_REQUEST);
        KT_ERRCLASS(MPIX_Cad_send(cad, &out, 1, MPI_INT, peer, 0, &node), MPI_ERR_OTHER);
        if (!flag) KT_MPI(MPIX_Cad_wait(cad));
        KT_EQ_INT(in, from + 100);
        KT_MPI(MPIX_Cad_free(&cad));
        KT_ERRCLASS(MPIX_Cad_free(&cad), MPI_ERR_ARG);            /* already freed: NULL handle */
    }

    free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("cad_ring: ok on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
