/* conf_cancel: MPI_Cancel of sends and receives completes, and a send
 * reported cancelled is never received (MPI 4.1 sec. 3.8.4; issue 16
 * item 4).  Rank 0 starts sends of every kind (MPI_Isend, MPI_Issend,
 * MPI_Ibsend, MPI_Irsend, persistent MPI_Send_init / MPI_Ssend_init /
 * MPI_Bsend_init / MPI_Rsend_init + MPI_Start) and of several sizes (0 bytes,
 * small eager, the largest eager, rendezvous) to rank 1, which posts no
 * receive for them; rank 0 cancels them, waits, and tells rank 1 which
 * were cancelled.  A send that no receive matched must be cancelled; after a
 * barrier rank 1 must find none of the cancelled messages (MPI_Iprobe), and
 * a message whose cancel failed must arrive intact.  Also:
 *  - cancel before and after the message reached the receiver (barrier);
 *  - a pending receive is cancelled (Irecv; Irecv after an MPI_Probe / Iprobe
 *    saw another message, which then still arrives);
 *  - cancel of a request that already completed (send matched and received,
 *    receive done): cancelled = false, data there;
 *  - a matched send (received before the cancel): not cancelled;
 *  - the same on MPI_COMM_SELF (sends to oneself), and an MPI_Issend to
 *    oneself that a probe saw: cancelled before MPI_Cancel returns;
 *  - a persistent send cancelled, then started again and received;
 *  - the receiver then probes the whole communicator: nothing left behind.
 * Run with 2 ranks (more ranks idle in the barriers) on each transport. */
#include "kt.h"
#include <stdint.h>

enum { K_ISEND, K_ISSEND, K_IBSEND, K_IRSEND, K_SEND_INIT, K_SSEND_INIT, K_BSEND_INIT, K_RSEND_INIT, NKIND };
static const char *kname[NKIND] = { "MPI_Isend", "MPI_Issend", "MPI_Ibsend", "MPI_Irsend", "MPI_Send_init",
                                    "MPI_Ssend_init", "MPI_Bsend_init", "MPI_Rsend_init" };
#define NSIZE 4
static const int sizes[NSIZE] = { 0, 16, 4000, 1 << 20 };   /* 4000: eager everywhere; 1 MiB: rendezvous */
#define NMSG (NKIND * NSIZE)

static char *sbuf[NMSG];
static int nfail;

/* A failed check is reported and counted; the program fails at the end (every defect shows). */
#define SOFT(cond, ...) do { if (!(cond)) { nfail++; fprintf(stderr, "FAIL rank %d line %d: ", kt_rank_(), __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); fflush(stderr); } } while (0)

static void fill(char *b, int n, int seed)
{
    for (int i = 0; i < n; i++) b[i] = (char)(i * 7 + seed * 13 + 1);
}

static int verify(const char *b, int n, int seed)
{
    for (int i = 0; i < n; i++) if (b[i] != (char)(i * 7 + seed * 13 + 1)) return i;
    return -1;
}

/* Start message m (kind m / NSIZE, size m % NSIZE) to dest with tag base + m. */
static void start_send(int m, int dest, int base, MPI_Comm comm, MPI_Request *rq)
{
    int k = m / NSIZE, n = sizes[m % NSIZE], tag = base + m;
    char *b = sbuf[m];
    switch (k) {
    case K_ISEND: KT_MPI(MPI_Isend(b, n, MPI_BYTE, dest, tag, comm, rq)); break;
    case K_ISSEND: KT_MPI(MPI_Issend(b, n, MPI_BYTE, dest, tag, comm, rq)); break;
    case K_IBSEND: KT_MPI(MPI_Ibsend(b, n, MPI_BYTE, dest, tag, comm, rq)); break;
    case K_IRSEND: KT_MPI(MPI_Irsend(b, n, MPI_BYTE, dest, tag, comm, rq)); break;
    case K_SEND_INIT: KT_MPI(MPI_Send_init(b, n, MPI_BYTE, dest, tag, comm, rq)); break;
    case K_SSEND_INIT: KT_MPI(MPI_Ssend_init(b, n, MPI_BYTE, dest, tag, comm, rq)); break;
    case K_BSEND_INIT: KT_MPI(MPI_Bsend_init(b, n, MPI_BYTE, dest, tag, comm, rq)); break;
    case K_RSEND_INIT: KT_MPI(MPI_Rsend_init(b, n, MPI_BYTE, dest, tag, comm, rq)); break;
    }
    if (k >= K_SEND_INIT) KT_MPI(MPI_Start(rq));
}

/* Cancel, wait (MPI_Wait, or MPI_Test in a loop for odd m), return the
 * cancelled flag (persistent requests freed). */
static int cancel_wait(MPI_Request *rq, int m)
{
    MPI_Status st;
    int flag = -1, done = 0;
    KT_MPI(MPI_Cancel(rq));
    if (m % 2) while (!done) KT_MPI(MPI_Test(rq, &done, &st));
    else KT_MPI(MPI_Wait(rq, &st));
    KT_MPI(MPI_Test_cancelled(&st, &flag));
    if (*rq != MPI_REQUEST_NULL) KT_MPI(MPI_Request_free(rq));      /* persistent */
    KT_CHECK(*rq == MPI_REQUEST_NULL, "%s of %d bytes: request not freed", kname[m / NSIZE], sizes[m % NSIZE]);
    return flag;
}

/* Receiver: messages base + m with !cancelled[m] must arrive intact, the others never. */
static void receive_survivors(int src, int base, MPI_Comm comm, const int *cancelled, const char *what)
{
    char *r = malloc((size_t)sizes[NSIZE - 1] + 1);
    MPI_Status st;
    int flag, n;
    for (int m = 0; m < NMSG; m++) {
        KT_MPI(MPI_Iprobe(src, base + m, comm, &flag, &st));
        if (cancelled[m]) {
            SOFT(!flag, "%s: %s of %d bytes reported cancelled but its message is still there", what,
                     kname[m / NSIZE], sizes[m % NSIZE]);
            continue;
        }
        KT_MPI(MPI_Recv(r, sizes[m % NSIZE] + 1, MPI_BYTE, src, base + m, comm, &st));
        KT_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
        int want = sizes[m % NSIZE];
        KT_CHECK(n == want, "%s: %s not cancelled: %d bytes arrived, %d sent", what, kname[m / NSIZE], n, want);
        int bad = verify(r, n, m);
        KT_CHECK(bad < 0, "%s: %s of %d bytes: byte %d differs", what, kname[m / NSIZE], n, bad);
    }
    free(r);
}

/* Nothing at all may be left for this rank on comm (collective). */
static void nothing_left(MPI_Comm comm, const char *what)
{
    int flag;
    MPI_Status st;
    KT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st));
    SOFT(!flag, "%s: a message from rank %d with tag %d is left over", what, st.MPI_SOURCE, st.MPI_TAG);
    MPI_Barrier(comm);                  /* before the next phase sends anything */
}

int main(int argc, char **argv)
{
    int rank, size, flag, cancelled[NMSG];
    MPI_Status st;
    MPI_Request rq[NMSG];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks");
    int bsize = NMSG * (sizes[NSIZE - 1] + MPI_BSEND_OVERHEAD) * 2;
    void *battach = malloc((size_t)bsize);
    KT_MPI(MPI_Buffer_attach(battach, bsize));
    for (int m = 0; m < NMSG; m++) {
        sbuf[m] = malloc((size_t)sizes[m % NSIZE] + 1);
        fill(sbuf[m], sizes[m % NSIZE], m);
    }

    /* 1. Cancel at once (the message may still be on its way), then cancel
     *    after the receiver surely has it (a barrier in between). */
    for (int late = 0; late < 2; late++) {
        int base = 1000 * (late + 1);
        const char *what = late ? "cancel after a barrier" : "cancel at once";
        if (rank == 0) {
            for (int m = 0; m < NMSG; m++) {
                start_send(m, 1, base, MPI_COMM_WORLD, &rq[m]);
                if (!late) cancelled[m] = cancel_wait(&rq[m], m);
            }
            if (late) {
                MPI_Barrier(MPI_COMM_WORLD);
                for (int m = 0; m < NMSG; m++) cancelled[m] = cancel_wait(&rq[m], m);
            }
            for (int m = 0; m < NMSG; m++)
                SOFT(cancelled[m] == 1, "%s: %s of %d bytes that no receive matched was not cancelled", what,
                         kname[m / NSIZE], sizes[m % NSIZE]);
            KT_MPI(MPI_Send(cancelled, NMSG, MPI_INT, 1, 1, MPI_COMM_WORLD));
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            if (late) MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 1) KT_MPI(MPI_Recv(cancelled, NMSG, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 1) receive_survivors(0, base, MPI_COMM_WORLD, cancelled, what);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        nothing_left(MPI_COMM_WORLD, what);
    }

    /* 2. Matched sends: rank 1 receives them before rank 0 cancels; the
     *    cancel fails and the data is intact.  Then cancel of a request that
     *    completed (waited for by Test loop first). */
    if (rank == 0) {
        for (int m = 0; m < NMSG; m++) {
            if (m / NSIZE == K_IRSEND || m / NSIZE == K_RSEND_INIT) continue;   /* needs a posted receive */
            start_send(m, 1, 3000, MPI_COMM_WORLD, &rq[m]);
            MPI_Barrier(MPI_COMM_WORLD);                     /* rank 1 received it */
            SOFT(cancel_wait(&rq[m], m) == 0, "matched %s of %d bytes reported cancelled", kname[m / NSIZE],
                     sizes[m % NSIZE]);
        }
    } else {
        for (int m = 0; m < NMSG; m++) {
            if (m / NSIZE == K_IRSEND || m / NSIZE == K_RSEND_INIT) continue;
            if (rank == 1) {
                char *r = malloc((size_t)sizes[m % NSIZE] + 1);
                int n;
                KT_MPI(MPI_Recv(r, sizes[m % NSIZE], MPI_BYTE, 0, 3000 + m, MPI_COMM_WORLD, &st));
                KT_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
                KT_EQ_INT(n, sizes[m % NSIZE]);
                KT_CHECK(verify(r, n, m) < 0, "matched %s: data differs", kname[m / NSIZE]);
                free(r);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    /* a complete send and a complete receive: cancel has no effect */
    if (rank < 2) {
        int v = 41 + rank, w = -1, peer = 1 - rank;
        MPI_Request r2[2];
        KT_MPI(MPI_Irecv(&w, 1, MPI_INT, peer, 3999, MPI_COMM_WORLD, &r2[0]));
        KT_MPI(MPI_Isend(&v, 1, MPI_INT, peer, 3999, MPI_COMM_WORLD, &r2[1]));
        do { KT_MPI(MPI_Request_get_status(r2[0], &flag, MPI_STATUS_IGNORE)); } while (!flag);
        do { KT_MPI(MPI_Request_get_status(r2[1], &flag, MPI_STATUS_IGNORE)); } while (!flag);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < 2; i++) {
            KT_MPI(MPI_Cancel(&r2[i]));
            KT_MPI(MPI_Wait(&r2[i], &st));
            KT_MPI(MPI_Test_cancelled(&st, &flag));
            KT_CHECK(!flag, "a completed %s reported cancelled", i ? "send" : "receive");
        }
        KT_EQ_INT(w, 41 + peer);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    nothing_left(MPI_COMM_WORLD, "matched sends");

    /* 3. Receives: a pending receive is cancelled; one posted after a probe
     *    saw another message is cancelled, and that message still arrives. */
    {
        int x = -1, y = -1;
        MPI_Request r1;
        KT_MPI(MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 4001, MPI_COMM_WORLD, &r1));
        KT_MPI(MPI_Cancel(&r1));
        KT_MPI(MPI_Wait(&r1, &st));
        KT_MPI(MPI_Test_cancelled(&st, &flag));
        KT_CHECK(flag, "a pending MPI_Irecv was not cancelled");
        if (rank == 0) {
            int v = 4242;
            KT_MPI(MPI_Send(&v, 1, MPI_INT, 1, 4002, MPI_COMM_WORLD));
            KT_MPI(MPI_Send(&v, 1, MPI_INT, 1, 4003, MPI_COMM_WORLD));
        } else if (rank == 1) {
            KT_MPI(MPI_Probe(0, 4002, MPI_COMM_WORLD, &st));
            KT_MPI(MPI_Irecv(&x, 1, MPI_INT, 0, 4004, MPI_COMM_WORLD, &r1));
            KT_MPI(MPI_Cancel(&r1));
            KT_MPI(MPI_Wait(&r1, &st));
            KT_MPI(MPI_Test_cancelled(&st, &flag));
            KT_CHECK(flag, "MPI_Irecv after MPI_Probe was not cancelled");
            do { KT_MPI(MPI_Iprobe(0, 4003, MPI_COMM_WORLD, &flag, &st)); } while (!flag);
            /* a receive that matches the probed message: cancel fails, the data arrives */
            KT_MPI(MPI_Irecv(&x, 1, MPI_INT, 0, 4002, MPI_COMM_WORLD, &r1));
            KT_MPI(MPI_Cancel(&r1));
            KT_MPI(MPI_Wait(&r1, &st));
            KT_MPI(MPI_Test_cancelled(&st, &flag));
            KT_CHECK(!flag && x == 4242, "MPI_Irecv of a probed message: cancelled %d, got %d", flag, x);
            KT_MPI(MPI_Recv(&y, 1, MPI_INT, 0, 4003, MPI_COMM_WORLD, &st));
            KT_EQ_INT(y, 4242);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        nothing_left(MPI_COMM_WORLD, "receives");
    }

    /* 4. The same on MPI_COMM_SELF: sends to oneself, never received. */
    for (int m = 0; m < NMSG; m++) {
        if (m / NSIZE == K_IRSEND || m / NSIZE == K_RSEND_INIT) { cancelled[m] = 1; continue; }
        start_send(m, 0, 5000, MPI_COMM_SELF, &rq[m]);
        cancelled[m] = cancel_wait(&rq[m], m);
        SOFT(cancelled[m] == 1, "MPI_COMM_SELF: %s of %d bytes to oneself was not cancelled", kname[m / NSIZE],
                 sizes[m % NSIZE]);
    }
    receive_survivors(0, 5000, MPI_COMM_SELF, cancelled, "MPI_COMM_SELF");
    nothing_left(MPI_COMM_SELF, "MPI_COMM_SELF");

    /* 5. A synchronous send to oneself that a probe saw, then cancelled (what
     *    mpi4py's testProbeCancel does): the outcome of a cancel to oneself
     *    needs nobody else, so MPI_Request_get_status reports it at once; a
     *    program that sees "not cancelled" receives the message, which must
     *    then be there.  Then freed, and a receive of the same envelope finds
     *    nothing (MPICH's issendselfcancel). */
    {
        MPI_Comm self;
        MPI_Request r1;
        int c = 0;
        KT_MPI(MPI_Comm_dup(MPI_COMM_SELF, &self));
        KT_MPI(MPI_Issend(NULL, 0, MPI_BYTE, 0, 123, self, &r1));
        KT_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, self, &st));
        KT_CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 123, "probe of the message to oneself");
        KT_MPI(MPI_Cancel(&r1));
        KT_CHECK(r1 != MPI_REQUEST_NULL, "MPI_Cancel freed the request");
        memset(&st, 0, sizeof st);
        KT_MPI(MPI_Request_get_status(r1, &flag, &st));
        if (flag) KT_MPI(MPI_Test_cancelled(&st, &c));
        SOFT(flag && c, "MPI_Request_get_status right after MPI_Cancel of an Issend to oneself: flag %d, "
             "cancelled %d (expected both)", flag, c);
        if (flag && !c) {
            KT_MPI(MPI_Iprobe(0, 123, self, &flag, &st));
            KT_CHECK(flag, "the Issend to oneself was not cancelled, yet its message is gone");
            KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 123, self, &st));
            KT_MPI(MPI_Wait(&r1, &st));
        } else {
            KT_MPI(MPI_Request_free(&r1));
        }
        KT_MPI(MPI_Irecv(NULL, 0, MPI_BYTE, 0, 123, self, &r1));
        KT_MPI(MPI_Cancel(&r1));
        KT_MPI(MPI_Wait(&r1, &st));
        KT_MPI(MPI_Test_cancelled(&st, &flag));
        SOFT(flag, "a receive after the Issend to oneself was handled found a message");
        nothing_left(self, "MPI_Issend to oneself, probed, cancelled");
        KT_MPI(MPI_Comm_free(&self));
    }

    /* 6. A persistent send cancelled, then started again: the second message
     *    arrives (once, intact), the cancelled one never. */
    for (int m = K_SEND_INIT * NSIZE; m < NMSG; m++) {
        int k = m / NSIZE, n = sizes[m % NSIZE];
        if (k == K_RSEND_INIT) continue;
        if (rank == 0) {
            MPI_Request p;
            switch (k) {
            case K_SEND_INIT: KT_MPI(MPI_Send_init(sbuf[m], n, MPI_BYTE, 1, 6000 + m, MPI_COMM_WORLD, &p)); break;
            case K_SSEND_INIT: KT_MPI(MPI_Ssend_init(sbuf[m], n, MPI_BYTE, 1, 6000 + m, MPI_COMM_WORLD, &p)); break;
            default: KT_MPI(MPI_Bsend_init(sbuf[m], n, MPI_BYTE, 1, 6000 + m, MPI_COMM_WORLD, &p)); break;
            }
            KT_MPI(MPI_Start(&p));
            KT_MPI(MPI_Cancel(&p));
            KT_MPI(MPI_Wait(&p, &st));
            KT_MPI(MPI_Test_cancelled(&st, &flag));
            SOFT(flag, "%s of %d bytes: the first start was not cancelled", kname[k], n);
            MPI_Barrier(MPI_COMM_WORLD);           /* rank 1 posts its receive after the cancel */
            KT_MPI(MPI_Start(&p));
            KT_MPI(MPI_Wait(&p, &st));
            KT_MPI(MPI_Test_cancelled(&st, &flag));
            SOFT(!flag, "%s of %d bytes: the second start reported cancelled", kname[k], n);
            KT_MPI(MPI_Request_free(&p));
        } else if (rank == 1) {
            char *r = malloc((size_t)n + 1);
            int got;
            MPI_Barrier(MPI_COMM_WORLD);
            KT_MPI(MPI_Recv(r, n + 1, MPI_BYTE, 0, 6000 + m, MPI_COMM_WORLD, &st));
            KT_MPI(MPI_Get_count(&st, MPI_BYTE, &got));
            SOFT(got == n && verify(r, n, m) < 0, "%s restarted after a cancel: %d bytes arrived, %d sent", kname[k],
                 got, n);
            free(r);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    nothing_left(MPI_COMM_WORLD, "persistent sends cancelled and started again");

    /* (before the detach, which waits for buffered messages nobody may receive) */
    KT_CHECK(nfail == 0, "%d check(s) failed", nfail);
    void *ba; int bs;
    KT_MPI(MPI_Buffer_detach(&ba, &bs));
    free(battach);
    for (int m = 0; m < NMSG; m++) free(sbuf[m]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("conf_cancel: ok\n");
    MPI_Finalize();
    return 0;
}
