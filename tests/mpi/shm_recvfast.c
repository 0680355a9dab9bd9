/* shm_recvfast: MPI_Recv's fast path (contract 1.9 recv_inline: a blocking
 * receive from one source takes the next message straight out of the
 * transport while no receive is posted and no message waits unexpected),
 * between ranks 0 and 1.  Checks, for 0..64 bytes: payload, status (source,
 * tag, MPI_Get_count) with a status and with MPI_STATUS_IGNORE, the order of
 * messages (MPI_ANY_TAG receives in a stream of tags), receives posted
 * earlier (Irecv from the source and MPI_ANY_SOURCE) that must take their
 * message first, unexpected messages (one waiting from the source, one from
 * the rank itself through p2p/self), another communicator's message at the
 * head of the ring, truncation (MPI_ERR_TRUNCATE, the bytes that fit, the
 * status), a contiguous type with a lower bound, Ssend (not taken: the
 * sender waits for its acknowledgement) and a probe before the receive.
 * Argument "inline": the fast path must take each message that waits in the
 * ring when MPI_Recv starts (rank 1, out of MPI, raises a ready flag in a
 * shared window; rank 0 then sends and raises a flag that rank 1 polls with
 * plain loads: no progress takes the message first), counted by the MPI_T counter p2p_recv_inline; "none": it must take
 * none (another transport). */
#include "kt.h"
#include <sched.h>

#define NPP 200

static void check_st(const MPI_Status *st, int src, int tag, MPI_Datatype t, int count, const char *what)
{
    int c = -5;
    if (st->MPI_SOURCE != src || st->MPI_TAG != tag)
        KT_FAIL("%s: status source %d tag %d, expected %d %d", what, st->MPI_SOURCE, st->MPI_TAG, src, tag);
    MPI_Get_count(st, t, &c);
    if (c != count) KT_FAIL("%s: MPI_Get_count %d, expected %d", what, c, count);
}

/* The MPI_T counter p2p_recv_inline (-1: not there). */
static long long inline_count(void)
{
    static MPI_T_pvar_session ses = MPI_T_PVAR_SESSION_NULL;
    static MPI_T_pvar_handle h = MPI_T_PVAR_HANDLE_NULL;
    if (ses == MPI_T_PVAR_SESSION_NULL) {
        int idx = -1, n = 0;
        KT_MPI(MPI_T_pvar_get_index("p2p_recv_inline", MPI_T_PVAR_CLASS_COUNTER, &idx));
        KT_MPI(MPI_T_pvar_session_create(&ses));
        KT_MPI(MPI_T_pvar_handle_alloc(ses, idx, NULL, &h, &n));
        KT_MPI(MPI_T_pvar_start(ses, h));
    }
    unsigned long long v = 0;
    KT_MPI(MPI_T_pvar_read(ses, h, &v));
    return (long long)v;
}

int main(int argc, char **argv)
{
    int rank, size, prov;
    unsigned char sb[128], rb[128];
    MPI_Status st;
    MPI_Request rq[2];
    const char *expect = argc > 1 ? argv[1] : "";
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    long long c0 = inline_count();

    /* 0. a message in the ring when MPI_Recv starts: the fast path takes it */
    MPI_Win win;
    int *flags;
    MPI_Aint wsz = rank == 0 ? 64 * sizeof(int) : 0;
    KT_MPI(MPI_Win_allocate_shared(wsz, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &flags, &win));
    if (rank != 0) {
        MPI_Aint qs;
        int du;
        KT_MPI(MPI_Win_shared_query(win, 0, &qs, &du, &flags));
    }
    if (rank == 0) memset(flags, 0, 64 * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 16; k++) {
        int n = k * 9 % 65;
        if (rank == 0) {
            /* rank 1 is out of every MPI call (no progress of its own takes the
             * message as unexpected: it could in the Barrier above, when rank 1
             * leaves it later than rank 0 on a loaded machine) */
            double t = kt_now();
            while (!__atomic_load_n(&flags[32 + k], __ATOMIC_ACQUIRE)) {
                KT_CHECK(kt_now() - t < 60, "rank 1 not ready for message %d", k);
                sched_yield();
            }
            kt_fill(sb, n, k);
            KT_MPI(MPI_Send(sb, n, MPI_BYTE, 1, 7, MPI_COMM_WORLD));
            __atomic_store_n(&flags[k], 1, __ATOMIC_RELEASE);
        } else if (rank == 1) {
            double t = kt_now();
            __atomic_store_n(&flags[32 + k], 1, __ATOMIC_RELEASE);
            while (!__atomic_load_n(&flags[k], __ATOMIC_ACQUIRE)) {
                KT_CHECK(kt_now() - t < 60, "flag %d not raised", k);
                sched_yield();
            }
            long long b = inline_count();
            memset(rb, 0xee, sizeof rb);
            KT_MPI(MPI_Recv(rb, 64, MPI_BYTE, 0, 7, MPI_COMM_WORLD, k & 1 ? MPI_STATUS_IGNORE : &st));
            if (!(k & 1)) check_st(&st, 0, 7, MPI_BYTE, n, "in the ring");
            kt_check_fill(rb, n, k, "in the ring");
            KT_CHECK(rb[n] == 0xee, "in the ring: byte %d past the message written", n);
            long long a = inline_count() - b;
            if (!strcmp(expect, "inline")) KT_CHECK(a == 1, "message %d (%d B): the fast path took %lld", k, n, a);
            if (!strcmp(expect, "none")) KT_CHECK(a == 0, "message %d: the fast path took %lld", k, a);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    KT_MPI(MPI_Win_free(&win));

    /* 1. ping-pong of 0..64 bytes, with a status and without */
    for (int it = 0; it < NPP; it++) {
        int n = it % 65, tag = it % 7;
        if (rank == 0) {
            kt_fill(sb, n, it);
            KT_MPI(MPI_Send(sb, n, MPI_BYTE, 1, tag, MPI_COMM_WORLD));
            memset(rb, 0xee, sizeof rb);
            KT_MPI(MPI_Recv(rb, 64, MPI_BYTE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            check_st(&st, 1, tag + 1, MPI_BYTE, n, "pong");
            kt_check_fill(rb, n, it + 1, "pong");
            KT_CHECK(rb[n] == 0xee, "pong: byte %d past the message written", n);
        } else if (rank == 1) {
            memset(rb, 0xee, sizeof rb);
            if (it & 1) {
                KT_MPI(MPI_Recv(rb, 64, MPI_BYTE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            } else {
                KT_MPI(MPI_Recv(rb, 64, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st));
                check_st(&st, 0, tag, MPI_BYTE, n, "ping");
            }
            kt_check_fill(rb, n, it, "ping");
            KT_CHECK(rb[n] == 0xee, "ping: byte %d past the message written", n);
            kt_fill(sb, n, it + 1);
            KT_MPI(MPI_Send(sb, n, MPI_BYTE, 0, tag + 1, MPI_COMM_WORLD));
        }
    }
    if (!strcmp(expect, "none")) KT_CHECK(inline_count() == c0, "the fast path took %lld messages", inline_count() - c0);

    /* 2. a stream of tags: MPI_ANY_TAG receives take them in order; every
     * third one an Irecv posted before (from 0, or MPI_ANY_SOURCE) that the
     * next message must go to, not the MPI_Recv after it */
    if (rank == 0) {
        for (int i = 0; i < 300; i++) {
            kt_fill(sb, i % 65, i);
            KT_MPI(MPI_Send(sb, i % 65, MPI_BYTE, 1, 100 + i, MPI_COMM_WORLD));
        }
    } else if (rank == 1) {
        unsigned char ib[72];
        for (int i = 0; i < 300; i++) {
            int pre = i % 3 == 0;
            if (pre) KT_MPI(MPI_Irecv(ib, 72, MPI_BYTE, i % 2 ? MPI_ANY_SOURCE : 0, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[0]));
            KT_MPI(MPI_Recv(rb, 72, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            if (pre) {
                MPI_Status s2;
                KT_MPI(MPI_Wait(&rq[0], &s2));
                check_st(&s2, 0, 100 + i, MPI_BYTE, i % 65, "posted earlier");
                kt_check_fill(ib, i % 65, i, "posted earlier");
                i++;
            }
            check_st(&st, 0, 100 + i, MPI_BYTE, i % 65, "stream");
            kt_check_fill(rb, i % 65, i, "stream");
        }
    }

    /* 3. unexpected messages: tag 1 waits unexpected (the barrier after the
     * send: it is in before tag 2 comes) while a receive of tag 2 runs; a
     * message to itself (p2p/self) waits unexpected on the same communicator;
     * a message on dup at the head of the ring before the one on WORLD */
    if (rank == 0) {
        kt_fill(sb, 5, 1);
        KT_MPI(MPI_Send(sb, 5, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
        MPI_Barrier(MPI_COMM_WORLD);
        kt_fill(sb, 6, 2);
        KT_MPI(MPI_Send(sb, 6, MPI_BYTE, 1, 2, MPI_COMM_WORLD));
        kt_fill(sb, 7, 3);
        KT_MPI(MPI_Send(sb, 7, MPI_BYTE, 1, 3, dup));
        kt_fill(sb, 8, 4);
        KT_MPI(MPI_Send(sb, 8, MPI_BYTE, 1, 3, MPI_COMM_WORLD));
    } else if (rank == 1) {
        unsigned char self[4] = {9, 8, 7, 6}, sr[4];
        int flag = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        KT_MPI(MPI_Isend(self, 4, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[1]));
        /* tag 1 has arrived once it can be probed */
        while (!flag) KT_MPI(MPI_Iprobe(0, 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Recv(rb, 16, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &st));
        check_st(&st, 0, 2, MPI_BYTE, 6, "behind an unexpected one");
        kt_check_fill(rb, 6, 2, "behind an unexpected one");
        KT_MPI(MPI_Recv(rb, 16, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        check_st(&st, 0, 1, MPI_BYTE, 5, "the unexpected one");
        kt_check_fill(rb, 5, 1, "the unexpected one");
        KT_MPI(MPI_Recv(sr, 4, MPI_BYTE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &st));
        check_st(&st, 1, 2, MPI_BYTE, 4, "from itself");
        KT_CHECK(!memcmp(sr, self, 4), "from itself: wrong bytes");
        KT_MPI(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
        KT_MPI(MPI_Recv(rb, 16, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &st));   /* dup's first in the ring */
        check_st(&st, 0, 3, MPI_BYTE, 8, "behind another communicator's");
        kt_check_fill(rb, 8, 4, "behind another communicator's");
        KT_MPI(MPI_Recv(rb, 16, MPI_BYTE, 0, 3, dup, &st));
        check_st(&st, 0, 3, MPI_BYTE, 7, "on dup");
        kt_check_fill(rb, 7, 3, "on dup");
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* 4. truncation, 0 bytes, a type with a lower bound, Ssend, a probe */
    MPI_Datatype lbt;
    int bl = 3;
    MPI_Aint disp = 4;
    MPI_Type_create_hindexed(1, &bl, &disp, MPI_INT, &lbt);
    MPI_Type_commit(&lbt);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int iv[6] = {11, 12, 13, 14, 15, 16};
        KT_MPI(MPI_Send(iv, 6, MPI_INT, 1, 40, MPI_COMM_WORLD));
        KT_MPI(MPI_Send(NULL, 0, MPI_INT, 1, 41, MPI_COMM_WORLD));
        KT_MPI(MPI_Send(NULL, 0, MPI_INT, 1, 42, MPI_COMM_WORLD));
        KT_MPI(MPI_Send(iv, 3, MPI_INT, 1, 43, MPI_COMM_WORLD));
        KT_MPI(MPI_Ssend(iv, 2, MPI_INT, 1, 44, MPI_COMM_WORLD));
        KT_MPI(MPI_Send(iv, 1, MPI_INT, 1, 45, MPI_COMM_WORLD));
        kt_fill(sb, 62, 46);
        KT_MPI(MPI_Send(sb, 62, MPI_BYTE, 1, 46, MPI_COMM_WORLD));
    } else if (rank == 1) {
        int iv[8] = {0};
        st.MPI_ERROR = 12345;
        KT_ERRCLASS(MPI_Recv(iv, 4, MPI_INT, 0, 40, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE);
        check_st(&st, 0, 40, MPI_INT, 4, "truncated");
        KT_CHECK(iv[0] == 11 && iv[3] == 14 && iv[4] == 0, "truncated: %d %d %d", iv[0], iv[3], iv[4]);
        st.MPI_ERROR = 12345;
        KT_MPI(MPI_Recv(NULL, 0, MPI_INT, 0, 41, MPI_COMM_WORLD, &st));
        check_st(&st, 0, 41, MPI_INT, 0, "0 bytes");
        KT_CHECK(st.MPI_ERROR == 12345, "0 bytes: MPI_Recv set MPI_ERROR (%d)", st.MPI_ERROR);
        KT_MPI(MPI_Recv(NULL, 0, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        memset(iv, 0, sizeof iv);
        KT_MPI(MPI_Recv(iv, 1, lbt, 0, 43, MPI_COMM_WORLD, &st));
        check_st(&st, 0, 43, lbt, 1, "lower bound");
        KT_CHECK(iv[0] == 0 && iv[1] == 11 && iv[3] == 13 && iv[4] == 0, "lower bound: %d %d %d %d", iv[0], iv[1],
                 iv[3], iv[4]);
        KT_MPI(MPI_Recv(iv, 8, MPI_INT, 0, 44, MPI_COMM_WORLD, &st));
        check_st(&st, 0, 44, MPI_INT, 2, "Ssend");
        KT_MPI(MPI_Recv(iv, 8, MPI_INT, 0, 45, MPI_COMM_WORLD, &st));
        check_st(&st, 0, 45, MPI_INT, 1, "after Ssend");
        KT_MPI(MPI_Probe(0, 46, MPI_COMM_WORLD, &st));
        check_st(&st, 0, 46, MPI_BYTE, 62, "probed");
        KT_MPI(MPI_Recv(rb, 62, MPI_BYTE, 0, 46, MPI_COMM_WORLD, &st));
        check_st(&st, 0, 46, MPI_INT, MPI_UNDEFINED, "probed, as ints");
        kt_check_fill(rb, 62, 46, "probed");
    }
    MPI_Type_free(&lbt);
    MPI_Comm_free(&dup);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("shm_recvfast: ok (%lld receives on the fast path)\n", inline_count() - c0);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
