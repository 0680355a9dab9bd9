/* shm_small: small messages between ranks 0 and 1 (issue 22 item 1: the
 * direct eager path, contract 1.8 send_inline, and kumi_p2p_incoming_whole,
 * which hands the receiver a message whose payload is all there).  Each
 * size from 0 to 300 bytes (one-cell SHORT records, then whole MSG records,
 * wrapping around small rings): posted receives and unexpected messages,
 * a window of 600 Isends (more than a small ring holds: the inline path,
 * then the queue, then the inline path again, in order), Issend (the
 * sendop path), truncation (MPI_ERR_TRUNCATE, the bytes that fit), wildcard
 * receives, MPI_Cancel of a send that completed at once, the status
 * fields, and blocking sends (SHORTN records) of 0..70 bytes mixed with
 * Isends, so that two-cell records fall at every ring offset.  Other ranks only take part in the barriers. */
#include "kt.h"

#define WIN 600
#define MAXB 300

int main(int argc, char **argv)
{
    int rank, size;
    static unsigned char sb[WIN][MAXB], rb[WIN][MAXB + 8];
    static MPI_Request rq[WIN];
    static MPI_Status st[WIN];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* 1. every size, posted receive (rank 1 posts first, then tells rank 0) */
    for (int n = 0; n <= MAXB; n++) {
        if (rank == 0) {
            kt_fill(sb[0], n, n);
            KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 1099, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            KT_MPI(MPI_Send(sb[0], n, MPI_BYTE, 1, n, MPI_COMM_WORLD));
        } else if (rank == 1) {
            int cnt;
            memset(rb[0], 0xee, MAXB + 8);
            KT_MPI(MPI_Irecv(rb[0], MAXB + 8, MPI_BYTE, 0, n, MPI_COMM_WORLD, &rq[0]));
            KT_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, 1099, MPI_COMM_WORLD));
            KT_MPI(MPI_Wait(&rq[0], &st[0]));
            MPI_Get_count(&st[0], MPI_BYTE, &cnt);
            KT_EQ_INT(cnt, n);
            KT_EQ_INT(st[0].MPI_SOURCE, 0);
            KT_EQ_INT(st[0].MPI_TAG, n);
            kt_check_fill(rb[0], n, n, "posted");
            KT_EQ_INT(rb[0][n], 0xee);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2. a window of Isends of every size before any receive (unexpected,
     * and more than a small ring holds), received in order with MPI_ANY_TAG */
    if (rank == 0) {
        for (int i = 0; i < WIN; i++) {
            int n = i % (MAXB + 1);
            kt_fill(sb[i], n, i);
            KT_MPI(MPI_Isend(sb[i], n, MPI_BYTE, 1, i, MPI_COMM_WORLD, &rq[i]));
        }
        KT_MPI(MPI_Waitall(WIN, rq, MPI_STATUSES_IGNORE));
        KT_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, 1098, MPI_COMM_WORLD));
    } else if (rank == 1) {
        KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 1098, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < WIN; i++) {
            int n = i % (MAXB + 1), cnt;
            KT_MPI(MPI_Recv(rb[i], MAXB, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st[0]));
            KT_EQ_INT(st[0].MPI_TAG, i);
            MPI_Get_count(&st[0], MPI_BYTE, &cnt);
            KT_EQ_INT(cnt, n);
            kt_check_fill(rb[i], n, i, "unexpected");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. the same window with the receives posted: rank 1 pre-posts */
    if (rank == 1) {
        for (int i = 0; i < WIN; i++) KT_MPI(MPI_Irecv(rb[i], MAXB, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &rq[i]));
        KT_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, 1097, MPI_COMM_WORLD));
        KT_MPI(MPI_Waitall(WIN, rq, st));
        for (int i = 0; i < WIN; i++) {
            int n = (i * 13) % (MAXB + 1), cnt;
            MPI_Get_count(&st[i], MPI_BYTE, &cnt);
            KT_EQ_INT(cnt, n);
            kt_check_fill(rb[i], n, i, "posted window");
        }
    } else if (rank == 0) {
        KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 1097, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < WIN; i++) {
            int n = (i * 13) % (MAXB + 1);
            kt_fill(sb[i], n, i);
            /* every 5th one synchronous: the sendop path between inline ones */
            if (i % 5 == 4) KT_MPI(MPI_Issend(sb[i], n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &rq[i]));
            else KT_MPI(MPI_Isend(sb[i], n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &rq[i]));
        }
        KT_MPI(MPI_Waitall(WIN, rq, MPI_STATUSES_IGNORE));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 4. truncation, posted and unexpected: the error class, the bytes that fit */
    for (int pass = 0; pass < 2; pass++) {
        for (int n = 2; n <= MAXB; n += 37) {
            if (rank == 0) {
                kt_fill(sb[0], n, n + 1);
                if (pass == 0) KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 1096, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                KT_MPI(MPI_Send(sb[0], n, MPI_BYTE, 1, 5, MPI_COMM_WORLD));
                if (pass == 1) KT_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, 1096, MPI_COMM_WORLD));
            } else if (rank == 1) {
                memset(rb[0], 0xee, MAXB + 8);
                if (pass == 0) {
                    KT_MPI(MPI_Irecv(rb[0], n - 1, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &rq[0]));
                    KT_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, 1096, MPI_COMM_WORLD));
                    KT_ERRCLASS(MPI_Wait(&rq[0], &st[0]), MPI_ERR_TRUNCATE);
                } else {
                    KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 1096, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                    KT_ERRCLASS(MPI_Recv(rb[0], n - 1, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st[0]), MPI_ERR_TRUNCATE);
                }
                kt_check_fill(rb[0], n - 1, n + 1, "truncated");
                KT_EQ_INT(rb[0][n - 1], 0xee);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 5. MPI_Cancel of an eager send that completed at once: the message is
     * either cancelled (then never received) or delivered, never both */
    if (rank == 0) {
        int flag = 0, canc = 0;
        kt_fill(sb[0], 8, 3);
        KT_MPI(MPI_Isend(sb[0], 8, MPI_BYTE, 1, 4, MPI_COMM_WORLD, &rq[0]));
        KT_MPI(MPI_Cancel(&rq[0]));
        KT_MPI(MPI_Wait(&rq[0], &st[0]));
        MPI_Test_cancelled(&st[0], &canc);
        KT_MPI(MPI_Send(&canc, 1, MPI_INT, 1, 1095, MPI_COMM_WORLD));
        (void)flag;
    } else if (rank == 1) {
        int canc = -1, flag = 0;
        KT_MPI(MPI_Recv(&canc, 1, MPI_INT, 0, 1095, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Iprobe(0, 4, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        KT_EQ_INT(flag, !canc);
        if (flag) {
            KT_MPI(MPI_Recv(rb[0], 8, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            kt_check_fill(rb[0], 8, 3, "not cancelled");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 6. blocking MPI_Sends (no sender cookie: SHORTN records, one cell up
     * to 36 bytes, two up to 64) mixed with Isends (SHORT, one cell up to
     * 28 bytes, two up to 64) and larger MSG records, of sizes 0..70 in an
     * order that puts two-cell records at every offset, so at the ring's
     * end too (they go as MSG there): unexpected (rank 1 waits), then
     * posted, with specific and wildcard receives */
    for (int pass = 0; pass < 2; pass++) {
        if (rank == 0) {
            int k = 0;
            if (pass == 1) KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 1, 1093, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = 0; i < WIN; i++) {
                int n = (i * 29 + pass) % 71;
                kt_fill(sb[i], n, i + pass);
                if (i % 3 == 2) KT_MPI(MPI_Isend(sb[i], n, MPI_BYTE, 1, i, MPI_COMM_WORLD, &rq[k++]));
                else KT_MPI(MPI_Send(sb[i], n, MPI_BYTE, 1, i, MPI_COMM_WORLD));
            }
            KT_MPI(MPI_Waitall(k, rq, MPI_STATUSES_IGNORE));
            if (pass == 0) KT_MPI(MPI_Send(NULL, 0, MPI_BYTE, 1, 1094, MPI_COMM_WORLD));
        } else if (rank == 1) {
            if (pass == 0) {
                KT_MPI(MPI_Recv(NULL, 0, MPI_BYTE, 0, 1094, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            } else {
                for (int i = 0; i < WIN; i++)
                    KT_MPI(MPI_Irecv(rb[i], MAXB, MPI_BYTE, i % 2 ? MPI_ANY_SOURCE : 0, i % 4 == 1 ? MPI_ANY_TAG : i,
                                     MPI_COMM_WORLD, &rq[i]));
                KT_MPI(MPI_Send(NULL, 0, MPI_BYTE, 0, 1093, MPI_COMM_WORLD));
                KT_MPI(MPI_Waitall(WIN, rq, st));
            }
            for (int i = 0; i < WIN; i++) {
                int n = (i * 29 + pass) % 71, cnt;
                if (pass == 0) {
                    memset(rb[i], 0xee, MAXB + 8);
                    KT_MPI(MPI_Recv(rb[i], MAXB, MPI_BYTE, i % 2 ? MPI_ANY_SOURCE : 0, i % 4 == 1 ? MPI_ANY_TAG : i,
                                    MPI_COMM_WORLD, &st[i]));
                    KT_EQ_INT(rb[i][n], 0xee);
                }
                KT_EQ_INT(st[i].MPI_SOURCE, 0);
                KT_EQ_INT(st[i].MPI_TAG, i);
                MPI_Get_count(&st[i], MPI_BYTE, &cnt);
                KT_EQ_INT(cnt, n);
                kt_check_fill(rb[i], n, i + pass, pass ? "mixed, posted" : "mixed, unexpected");
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) printf("shm_small: ok\n");
    MPI_Finalize();
    return 0;
}
