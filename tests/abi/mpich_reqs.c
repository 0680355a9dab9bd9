/* mpich_reqs: the MPICH shim's request handles (its flat request table, issue 17), built with
 * Debian's mpicc.mpich and run on Kumi through the shim (tests/scripts/abi_mpich_progs.sh):
 * handles of MPICH's shape; a handle completed and its slot reused is no longer the new
 * request's (the slot's generation: a stale copy is refused with MPI_ERR_REQUEST, where a
 * table without one took it for the new request); thousands of requests outstanding at once
 * (Waitall, Testany and Waitsome over arrays holding MPI_REQUEST_NULL); a receive freed while
 * active still delivers; persistent requests keep their handle; a generalized request freed
 * before MPI_Grequest_complete; messages (MPI_Mprobe / MPI_Mrecv).  Prints "mpich_reqs: N ranks ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_check.h"

static int rank, size;

static int gq_query(void *extra, MPI_Status *st)
{
    MPI_Status_set_elements(st, MPI_BYTE, 0);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}
static int gq_freed;
static int gq_free(void *extra) { gq_freed++; return MPI_SUCCESS; }
static int gq_cancel(void *extra, int complete) { return MPI_SUCCESS; }

#define MANY 5000

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int buf = 7, rbuf = -1, flag = 0, idx = -2;
    MPI_Status st;

    /* MPICH's shape: a direct handle of the request kind; completion gives MPI_REQUEST_NULL */
    MPI_Request a, b;
    OK(MPI_Isend(&buf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &a));
    CHECK((((unsigned)a >> 26) & 0xf) == (((unsigned)MPI_REQUEST_NULL >> 26) & 0xf) && ((unsigned)a >> 30) == 2,
          "request handle 0x%x is not MPICH's direct request", (unsigned)a);
    MPI_Request stale = a;
    OK(MPI_Wait(&a, &st));
    CHECK(a == MPI_REQUEST_NULL, "a completed request is 0x%x, not MPI_REQUEST_NULL", (unsigned)a);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "status of a send to MPI_PROC_NULL: %d %d",
          st.MPI_SOURCE, st.MPI_TAG);
    /* the slot is reused at once (a thread's free list is last in, first out): the new handle differs */
    OK(MPI_Isend(&buf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &b));
    CHECK(b != stale, "a new request got the handle 0x%x of a completed one", (unsigned)b);
    int rc = MPI_Request_get_status(stale, &flag, &st), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_REQUEST, "a stale request handle: rc %d class %d, not MPI_ERR_REQUEST", rc, cls);
    OK(MPI_Wait(&b, MPI_STATUS_IGNORE));
    /* MPI_REQUEST_NULL is accepted where the standard allows it */
    a = MPI_REQUEST_NULL;
    OK(MPI_Wait(&a, &st));
    OK(MPI_Test(&a, &flag, &st));
    CHECK(flag && a == MPI_REQUEST_NULL, "MPI_Test of MPI_REQUEST_NULL: flag %d", flag);

    /* many outstanding at once: receives from self, every third slot MPI_REQUEST_NULL */
    MPI_Request *rq = malloc(sizeof *rq * MANY);
    int *in = malloc(sizeof(int) * MANY), *out = malloc(sizeof(int) * MANY);
    MPI_Status *sts = malloc(sizeof *sts * MANY);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < MANY; i++) {
            in[i] = -1;
            out[i] = i * 3 + round;
            if (i % 3 == 2) rq[i] = MPI_REQUEST_NULL;
            else OK(MPI_Irecv(&in[i], 1, MPI_INT, rank, i, MPI_COMM_WORLD, &rq[i]));
        }
        for (int i = 0; i < MANY; i++)
            if (i % 3 != 2) OK(MPI_Send(&out[i], 1, MPI_INT, rank, i, MPI_COMM_WORLD));
        if (round == 0) {
            OK(MPI_Waitall(MANY, rq, sts));
        } else if (round == 1) {
            int left = MANY - MANY / 3;
            while (left > 0) {
                OK(MPI_Testany(MANY, rq, &idx, &flag, &st));
                if (!flag) continue;
                CHECK(idx != MPI_UNDEFINED && st.MPI_TAG == idx, "Testany: index %d tag %d", idx, st.MPI_TAG);
                CHECK(rq[idx] == MPI_REQUEST_NULL, "Testany left request %d at 0x%x", idx, (unsigned)rq[idx]);
                left--;
            }
            OK(MPI_Testany(MANY, rq, &idx, &flag, &st));
            CHECK(flag && idx == MPI_UNDEFINED, "Testany over nulls only: flag %d index %d", flag, idx);
        } else {
            int left = MANY - MANY / 3, outc = 0;
            int *ids = malloc(sizeof(int) * MANY);
            while (left > 0) {
                OK(MPI_Waitsome(MANY, rq, &outc, ids, sts));
                CHECK(outc > 0, "Waitsome: %d", outc);
                for (int k = 0; k < outc; k++) CHECK(rq[ids[k]] == MPI_REQUEST_NULL && sts[k].MPI_TAG == ids[k], "Waitsome");
                left -= outc;
            }
            free(ids);
        }
        for (int i = 0; i < MANY; i++) {
            CHECK(rq[i] == MPI_REQUEST_NULL, "round %d: request %d left at 0x%x", round, i, (unsigned)rq[i]);
            if (i % 3 != 2) CHECK(in[i] == i * 3 + round, "round %d: message %d is %d", round, i, in[i]);
            if (round == 0 && i % 3 != 2) CHECK(sts[i].MPI_SOURCE == rank && sts[i].MPI_TAG == i, "Waitall status %d", i);
        }
    }

    /* a receive freed while active still completes: its buffer fills */
    rbuf = -1;
    OK(MPI_Irecv(&rbuf, 1, MPI_INT, rank, 99, MPI_COMM_WORLD, &a));
    OK(MPI_Request_free(&a));
    CHECK(a == MPI_REQUEST_NULL, "a freed request is 0x%x", (unsigned)a);
    buf = 4242;
    OK(MPI_Send(&buf, 1, MPI_INT, rank, 99, MPI_COMM_WORLD));
    OK(MPI_Barrier(MPI_COMM_SELF));
    for (int i = 0; i < 100000 && rbuf != 4242; i++) OK(MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, &st));
    CHECK(rbuf == 4242, "the freed receive delivered %d", rbuf);

    /* persistent: the same handle over starts, MPI_Startall with a plain request beside */
    MPI_Request p[2];
    OK(MPI_Send_init(&buf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &p[0]));
    OK(MPI_Recv_init(&rbuf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &p[1]));
    MPI_Request p0 = p[0], p1 = p[1];
    for (int i = 0; i < 50; i++) {
        OK(MPI_Startall(2, p));
        if (i & 1) OK(MPI_Waitall(2, p, sts));
        else { OK(MPI_Wait(&p[0], &st)); OK(MPI_Wait(&p[1], &st)); CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "persistent recv status"); }
        CHECK(p[0] == p0 && p[1] == p1, "persistent handles changed: 0x%x 0x%x", (unsigned)p[0], (unsigned)p[1]);
    }
    OK(MPI_Request_free(&p[0]));
    OK(MPI_Request_free(&p[1]));
    CHECK(p[0] == MPI_REQUEST_NULL && p[1] == MPI_REQUEST_NULL, "freed persistent requests");

    /* a generalized request freed before it is complete: the program's copy still completes it */
    MPI_Request g, gcopy;
    OK(MPI_Grequest_start(gq_query, gq_free, gq_cancel, NULL, &g));
    gcopy = g;
    OK(MPI_Request_free(&g));
    CHECK(g == MPI_REQUEST_NULL, "freed generalized request");
    OK(MPI_Grequest_complete(gcopy));
    CHECK(gq_freed == 1, "free_fn called %d times", gq_freed);
    OK(MPI_Grequest_start(gq_query, gq_free, gq_cancel, NULL, &g));
    OK(MPI_Grequest_complete(g));
    OK(MPI_Wait(&g, &st));
    CHECK(g == MPI_REQUEST_NULL && gq_freed == 2, "generalized request waited: free_fn %d", gq_freed);

    /* messages: their own table */
    MPI_Message m;
    buf = 77;
    OK(MPI_Send(&buf, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD));
    OK(MPI_Isend(&buf, 1, MPI_INT, rank, 5, MPI_COMM_WORLD, &a));
    OK(MPI_Mprobe(rank, 5, MPI_COMM_WORLD, &m, &st));
    CHECK(m != MPI_MESSAGE_NULL && m != MPI_MESSAGE_NO_PROC, "Mprobe message 0x%x", (unsigned)m);
    rbuf = -1;
    OK(MPI_Mrecv(&rbuf, 1, MPI_INT, &m, &st));
    CHECK(m == MPI_MESSAGE_NULL && rbuf == 77 && st.MPI_TAG == 5, "Mrecv: message 0x%x, %d", (unsigned)m, rbuf);
    OK(MPI_Wait(&a, MPI_STATUS_IGNORE));
    OK(MPI_Mprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &m, &st));
    CHECK(m == MPI_MESSAGE_NO_PROC, "Mprobe from MPI_PROC_NULL: 0x%x", (unsigned)m);
    OK(MPI_Mrecv(&rbuf, 1, MPI_INT, &m, &st));

    free(rq); free(in); free(out); free(sts);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("mpich_reqs: %d ranks ok\n", size);
    MPI_Finalize();
    return 0;
}
