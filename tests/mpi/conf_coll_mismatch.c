/* conf_coll_mismatch: collectives whose ranks disagree on the count (issue
 * 16 item 16): a rank that receives a message longer than it expects gets
 * MPI_ERR_TRUNCATE (through the communicator's error handler, here
 * MPI_ERRORS_RETURN), as a receive of point-to-point does, instead of
 * success with wrong data; and every rank still returns (a rank that saw
 * the truncation goes on with the algorithm, so that no peer waits forever
 * for a message it owes).
 *
 * Rank r gives count (4 - r) * n: rank 0 sends more than anyone expects,
 * and every rank gets its data from ranks below it, so each rank but 0
 * receives a longer message whatever the algorithm (trees rooted at rank 0
 * whose parents have lower ranks: binomial, linear, chain; recursive
 * doubling and reduce + bcast for allreduce; linear and pairwise
 * alltoall, where block s -> r is (4 - s) * n elements and r expects
 * (4 - r) * n):
 *   MPI_Bcast (root 0), MPI_Allreduce (MPI_SUM, small counts only: above
 *   4 KiB coll/tuned splits the vector by each rank's own count, so which
 *   rank gets a longer piece depends on the split), MPI_Alltoall, and
 *   their non-blocking forms;
 *   and MPI_Alltoall where rank 0 sends blocks of 2n and every rank,
 *   0 included, expects n: all four see a truncation (rank 0 in the copy
 *   of its own block).
 * Ranks 1..3 must get MPI_ERR_TRUNCATE; rank 0 succeeds or (never here
 * with the algorithms of these sizes, but allowed) gets MPI_ERR_TRUNCATE.
 * After each mismatch the same collective with matching counts must give
 * the right data (no message of the bad call is left over).  n = 3 (eager)
 * and 20000 ints (rendezvous; not for allreduce).  4 ranks; run with the
 * default components, coll=basic and coll=tuned, and with coll/sm's Bcast
 * in pieces (argument "pieces": a root in pieces, readers in one). */
#include "kt.h"
#include <string.h>

static int me, np;

static void expect(int rc, const char *what, int n)
{
    int cls = -1;
    char s[MPI_MAX_ERROR_STRING];
    int l = 0;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    if (me == 0) {
        if (rc != MPI_SUCCESS && cls != MPI_ERR_TRUNCATE) {
            MPI_Error_string(rc, s, &l);
            KT_FAIL("%s (n %d) at rank 0: %s", what, n, s);
        }
        return;
    }
    if (rc == MPI_SUCCESS) KT_FAIL("%s (n %d): rank %d received a longer message and got MPI_SUCCESS", what, n, me);
    if (cls != MPI_ERR_TRUNCATE) {
        MPI_Error_string(rc, s, &l);
        KT_FAIL("%s (n %d): class %d (%s), expected MPI_ERR_TRUNCATE", what, n, cls, s);
    }
    MPI_Error_string(rc, s, &l);
    KT_CHECK(strstr(s, what) != NULL, "the message of %s does not name it: %s", what, s);
}

/* every rank, 0 included, must see the truncation */
static void expect_all(int rc, const char *what, int n)
{
    int cls = -1;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_TRUNCATE) {
        char s[MPI_MAX_ERROR_STRING];
        int l = 0;
        MPI_Error_string(rc, s, &l);
        KT_FAIL("%s (n %d, rank 0 sends 2n per block, expects n): %s, expected MPI_ERR_TRUNCATE", what, n,
                rc == MPI_SUCCESS ? "MPI_SUCCESS" : s);
    }
}

/* the right collective right after: must work, with the right data */
static void good_bcast(int n, int *b)
{
    for (int i = 0; i < n; i++) b[i] = me == 0 ? 7 * i + 1 : -1;
    KT_MPI(MPI_Bcast(b, n, MPI_INT, 0, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++) KT_CHECK(b[i] == 7 * i + 1, "bcast after the mismatch: [%d] = %d", i, b[i]);
}

static void good_allreduce(int n, int *b, int *c)
{
    for (int i = 0; i < n; i++) b[i] = me + i;
    KT_MPI(MPI_Allreduce(b, c, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++)
        KT_CHECK(c[i] == np * i + np * (np - 1) / 2, "allreduce after the mismatch: [%d] = %d", i, c[i]);
}

static int a2a(int s, int r, int i) { return s * 1000 + r * 100 + i % 100; }

static void good_alltoall(int n, int *b, int *c)
{
    for (int s = 0; s < np; s++)
        for (int i = 0; i < n; i++) b[s * n + i] = a2a(me, s, i);
    KT_MPI(MPI_Alltoall(b, n, MPI_INT, c, n, MPI_INT, MPI_COMM_WORLD));
    for (int s = 0; s < np; s++)
        for (int i = 0; i < n; i++)
            KT_CHECK(c[s * n + i] == a2a(s, me, i), "alltoall after the mismatch: block %d [%d] = %d",
                     s, i, c[s * n + i]);
}

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    KT_CHECK(np == 4, "needs 4 ranks");
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    /* "pieces" (run with coll_sm_bcast_pieces=1): first a Bcast whose root's
     * 4800 B go through coll/sm's slots in pieces while the others expect
     * 1200-3600 B, one collective of the segment: they read the root's
     * pieces to the end (MPI_ERR_TRUNCATE), and the next Bcast works */
    if (argc > 1 && !strcmp(argv[1], "pieces")) {
        int n = 300, b[1200];
        for (int i = 0; i < 1200; i++) b[i] = i;
        expect(MPI_Bcast(b, (np - me) * n, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast", n);
        for (int i = 0; i < (np - me) * n; i++) KT_CHECK(b[i] == i, "pieces: [%d] = %d", i, b[i]);
        good_bcast(n, b);
    }
    const int sizes[2] = { 3, 20000 };
    for (int k = 0; k < 2; k++) {
        int n = sizes[k], mine = (np - me) * n;
        size_t len = (size_t)np * np * n + 1;
        int *b = calloc(len, sizeof(int)), *c = calloc(len, sizeof(int));
        KT_CHECK(b && c, "out of memory");
        MPI_Request rq;

        for (int nb = 0; nb < 2; nb++) {
            for (size_t i = 0; i < len; i++) b[i] = (int)i;
            if (nb) {
                KT_MPI(MPI_Ibcast(b, mine, MPI_INT, 0, MPI_COMM_WORLD, &rq));
                expect(MPI_Wait(&rq, MPI_STATUS_IGNORE), "MPI_Ibcast", n);
            } else {
                expect(MPI_Bcast(b, mine, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast", n);
            }
            good_bcast(n, b);

            if (k == 0) {
                for (size_t i = 0; i < len; i++) b[i] = 1;
                if (nb) {
                    KT_MPI(MPI_Iallreduce(b, c, mine, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq));
                    expect(MPI_Wait(&rq, MPI_STATUS_IGNORE), "MPI_Iallreduce", n);
                } else {
                    expect(MPI_Allreduce(b, c, mine, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce", n);
                }
                good_allreduce(n, b, c);
            }

            for (size_t i = 0; i < len; i++) b[i] = (int)i;
            if (nb) {
                KT_MPI(MPI_Ialltoall(b, mine, MPI_INT, c, mine, MPI_INT, MPI_COMM_WORLD, &rq));
                expect(MPI_Wait(&rq, MPI_STATUS_IGNORE), "MPI_Ialltoall", n);
            } else {
                expect(MPI_Alltoall(b, mine, MPI_INT, c, mine, MPI_INT, MPI_COMM_WORLD), "MPI_Alltoall", n);
            }
            good_alltoall(n, b, c);

            /* rank 0 sends blocks of 2n and expects n: its own block is
             * truncated too (a local copy), and it still sends the others theirs */
            for (size_t i = 0; i < len; i++) b[i] = (int)i;
            int sc = me == 0 ? 2 * n : n;
            if (nb) {
                KT_MPI(MPI_Ialltoall(b, sc, MPI_INT, c, n, MPI_INT, MPI_COMM_WORLD, &rq));
                expect_all(MPI_Wait(&rq, MPI_STATUS_IGNORE), "MPI_Ialltoall", n);
            } else {
                expect_all(MPI_Alltoall(b, sc, MPI_INT, c, n, MPI_INT, MPI_COMM_WORLD), "MPI_Alltoall", n);
            }
            good_alltoall(n, b, c);
        }
        free(b);
        free(c);
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) printf("conf_coll_mismatch: OK\n");
    KT_MPI(MPI_Finalize());
    return 0;
}
