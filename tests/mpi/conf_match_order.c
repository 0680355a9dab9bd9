/* conf_match_order: MPI's matching order with the queues kept per
 * communicator and per source (issue 22 item 5).
 *   1. posted receives naming a source and MPI_ANY_SOURCE receives
 *      interleaved: each message goes to the FIRST posted receive that
 *      matches it, whichever list it sits on;
 *   2. wildcard tags on both lists;
 *   3. unexpected messages: a receive with a source takes its sender's
 *      earliest matching message; an MPI_ANY_SOURCE receive takes the
 *      earliest matching message of the communicator (order of arrival is
 *      forced by a barrier between the senders);
 *   4. messages on other communicators (1000 of them waiting unexpected, and
 *      1000 receives posted on other communicators) do not disturb any of
 *      that, and all of them are received right afterwards;
 *   5. MPI_Cancel of a posted receive, from either list, leaves the order of
 *      the others.
 * Run with 3 ranks: rank 0 receives, ranks 1 and 2 send. */
#include "kt.h"
#include <stdlib.h>

#define NCOMM 1000

static void recv_expect(MPI_Request *r, int n, const int *got, const int *want, const char *what)
{
    KT_MPI(MPI_Waitall(n, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < n; i++)
        KT_CHECK(got[i] == want[i], "%s: receive %d got %d, expected %d", what, i, got[i], want[i]);
}

int main(int argc, char **argv)
{
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 3, "run with 3 ranks (got %d)", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm *cs = malloc(NCOMM * sizeof *cs);
    for (int i = 0; i < NCOMM; i++) KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &cs[i]));
    MPI_Request r[8];
    int got[8];

    /* 1 + 2: posted receives interleaved */
    if (rank == 0) {
        KT_MPI(MPI_Irecv(&got[0], 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &r[0]));
        KT_MPI(MPI_Irecv(&got[1], 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &r[1]));
        KT_MPI(MPI_Irecv(&got[2], 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &r[2]));
        KT_MPI(MPI_Irecv(&got[3], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r[3]));
        KT_MPI(MPI_Irecv(&got[4], 1, MPI_INT, 2, 6, MPI_COMM_WORLD, &r[4]));
        KT_MPI(MPI_Irecv(&got[5], 1, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &r[5]));
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));               /* all posted before anything is sent */
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));               /* rank 1 sent */
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));               /* rank 2 sent */
        /* rank 1: tag 5 (10), tag 5 (11), tag 9 (12), tag 5 (13)
         *   10 -> r0 (src 1, tag 5: posted first)
         *   11 -> r1 (any, tag 5: posted before r2)
         *   12 -> r2 (src 1, any tag)
         *   13 -> r3 (any, any)
         * rank 2: tag 6 (20), tag 6 (21): 20 -> r4, 21 -> r5 */
        static const int want[] = { 10, 11, 12, 13, 20, 21 };
        recv_expect(r, 6, got, want, "posted receives");
    } else {
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 1) {
            int v[] = { 10, 11, 12, 13 }, tags[] = { 5, 5, 9, 5 };
            for (int i = 0; i < 4; i++) KT_MPI(MPI_Send(&v[i], 1, MPI_INT, 0, tags[i], MPI_COMM_WORLD));
        }
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 2) {
            int v[] = { 20, 21 };
            for (int i = 0; i < 2; i++) KT_MPI(MPI_Send(&v[i], 1, MPI_INT, 0, 6, MPI_COMM_WORLD));
        }
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }

    /* 3 + 4: unexpected messages, with 1000 others on other communicators
     * and 1000 receives posted on other communicators */
    int *other = malloc(NCOMM * sizeof *other);
    MPI_Request *orq = malloc(NCOMM * sizeof *orq);
    if (rank == 0) {
        for (int i = 0; i < NCOMM; i++) KT_MPI(MPI_Irecv(&other[i], 1, MPI_INT, 2, 3, cs[i], &orq[i]));
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 1) {                       /* first: 1000 messages to wait on other communicators */
        for (int i = 0; i < NCOMM; i++) KT_MPI(MPI_Send(&i, 1, MPI_INT, 0, 1, cs[i]));
        int v[] = { 30, 31, 32 }, tags[] = { 7, 8, 7 };
        for (int i = 0; i < 3; i++) KT_MPI(MPI_Send(&v[i], 1, MPI_INT, 0, tags[i], MPI_COMM_WORLD));
    }
    if (rank == 0) {                       /* rank 1's 30 and 31 are here before rank 2 sends */
        MPI_Status st;
        KT_MPI(MPI_Probe(1, 8, MPI_COMM_WORLD, &st));
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 2) {
        int v[] = { 40, 41 }, tags[] = { 7, 8 };
        for (int i = 0; i < 2; i++) KT_MPI(MPI_Send(&v[i], 1, MPI_INT, 0, tags[i], MPI_COMM_WORLD));
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        MPI_Status st;
        KT_MPI(MPI_Probe(2, 8, MPI_COMM_WORLD, &st));   /* rank 2's are here too */
        int v;
        /* specific source, tag 8 from 2: 41 (not rank 1's 31) */
        KT_MPI(MPI_Recv(&v, 1, MPI_INT, 2, 8, MPI_COMM_WORLD, &st));
        KT_EQ_INT(v, 41);
        /* any source, tag 7: rank 1's 30 arrived before rank 2's 40 */
        KT_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st));
        KT_EQ_INT(v, 30);
        KT_EQ_INT(st.MPI_SOURCE, 1);
        /* any source, any tag: 31 (rank 1, tag 8) is the earliest left */
        KT_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        KT_EQ_INT(v, 31);
        KT_EQ_INT(st.MPI_TAG, 8);
        /* source 2, any tag: 40 */
        KT_MPI(MPI_Recv(&v, 1, MPI_INT, 2, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        KT_EQ_INT(v, 40);
        /* source 1, tag 7: 32 */
        KT_MPI(MPI_Recv(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &st));
        KT_EQ_INT(v, 32);
        int flag;
        KT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        KT_CHECK(!flag, "a message is left on MPI_COMM_WORLD (tag %d from %d)", st.MPI_TAG, st.MPI_SOURCE);
        /* the 1000 on the other communicators, newest communicator first */
        for (int i = NCOMM - 1; i >= 0; i--) {
            KT_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 1, cs[i], &st));
            KT_EQ_INT(v, i);
        }
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 2) {                       /* the 1000 posted receives */
        for (int i = NCOMM - 1; i >= 0; i--) {
            int v = 1000 + i;
            KT_MPI(MPI_Send(&v, 1, MPI_INT, 0, 3, cs[i]));
        }
    }
    if (rank == 0) {
        KT_MPI(MPI_Waitall(NCOMM, orq, MPI_STATUSES_IGNORE));
        for (int i = 0; i < NCOMM; i++) KT_EQ_INT(other[i], 1000 + i);
    }

    /* 5: cancel from both lists */
    if (rank == 0) {
        KT_MPI(MPI_Irecv(&got[0], 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &r[0]));
        KT_MPI(MPI_Irecv(&got[1], 1, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &r[1]));
        KT_MPI(MPI_Irecv(&got[2], 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &r[2]));
        KT_MPI(MPI_Irecv(&got[3], 1, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &r[3]));
        KT_MPI(MPI_Cancel(&r[0]));
        KT_MPI(MPI_Cancel(&r[1]));
        MPI_Status st[2];
        KT_MPI(MPI_Waitall(2, r, st));
        int c0, c1;
        MPI_Test_cancelled(&st[0], &c0);
        MPI_Test_cancelled(&st[1], &c1);
        KT_CHECK(c0 && c1, "cancelled receives not marked cancelled (%d %d)", c0, c1);
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        static const int want[] = { 50, 51 };
        recv_expect(r + 2, 2, got + 2, want, "after cancels");
    } else {
        KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 1) {
            int v[] = { 50, 51 };
            for (int i = 0; i < 2; i++) KT_MPI(MPI_Send(&v[i], 1, MPI_INT, 0, 4, MPI_COMM_WORLD));
        }
    }

    for (int i = 0; i < NCOMM; i++) MPI_Comm_free(&cs[i]);
    free(cs);
    free(other);
    free(orq);
    MPI_Finalize();
    if (rank == 0) printf("conf_match_order: ok\n");
    return 0;
}
