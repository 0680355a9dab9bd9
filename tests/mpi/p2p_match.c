/* Matching order: wildcards and the non-overtaking rule, with eager and
 * rendezvous messages mixed; receives posted before and after arrival. */
#include "kt.h"
#define N 400
#define BIG 100000   /* ints: above any eager limit */

static int payload_len(int i) { return i % 97 == 13 ? BIG : 3; }

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size >= 2, "needs 2 ranks");
    int *buf = calloc(BIG, sizeof(int));
    for (int phase = 0; phase < 3; phase++) {
        if (rank != 0) {
            if (phase == 2) MPI_Barrier(MPI_COMM_WORLD);   /* receives are posted */
            /* non-blocking: rendezvous sends complete only when matched,
             * and phase 1 receives them out of order */
            int **sb = malloc(N * sizeof *sb);
            MPI_Request *rq = malloc(N * sizeof *rq);
            for (int i = 0; i < N; i++) {
                int len = payload_len(i);
                sb[i] = malloc(len * sizeof(int));
                sb[i][0] = rank; sb[i][1] = i; sb[i][len - 1] = i * 7;
                KT_MPI(MPI_Isend(sb[i], len, MPI_INT, 0, i % 4, MPI_COMM_WORLD, &rq[i]));
            }
            KT_MPI(MPI_Waitall(N, rq, MPI_STATUSES_IGNORE));
            for (int i = 0; i < N; i++) free(sb[i]);
            free(sb); free(rq);
        } else if (phase == 0) {
            /* ANY_SOURCE + ANY_TAG: per sender the order must be the send order */
            int *next = calloc(size, sizeof(int));
            for (int k = 0; k < (size - 1) * N; k++) {
                MPI_Status st;
                KT_MPI(MPI_Recv(buf, BIG, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                int s = st.MPI_SOURCE, cnt;
                KT_CHECK(s >= 1 && s < size, "source %d", s);
                KT_EQ_INT(buf[0], s);
                KT_EQ_INT(buf[1], next[s]);
                KT_EQ_INT(st.MPI_TAG, next[s] % 4);
                MPI_Get_count(&st, MPI_INT, &cnt);
                KT_EQ_INT(cnt, payload_len(next[s]));
                KT_EQ_INT(buf[cnt - 1], next[s] * 7);
                next[s]++;
            }
            free(next);
        } else if (phase == 1) {
            /* per source: first every tag-3 message, then the rest with ANY_TAG */
            for (int s = 1; s < size; s++) {
                for (int i = 3; i < N; i += 4) {
                    MPI_Status st;
                    KT_MPI(MPI_Recv(buf, BIG, MPI_INT, s, 3, MPI_COMM_WORLD, &st));
                    KT_EQ_INT(buf[1], i);
                    KT_EQ_INT(st.MPI_TAG, 3);
                }
                for (int i = 0; i < N; i++) {
                    if (i % 4 == 3) continue;
                    MPI_Status st;
                    KT_MPI(MPI_Recv(buf, BIG, MPI_INT, s, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                    KT_EQ_INT(buf[1], i);
                    KT_EQ_INT(st.MPI_SOURCE, s);
                }
            }
        } else {
            /* pre-posted receives (ANY_SOURCE, fixed tag) complete in posting order per source */
            int total = (size - 1) * N;
            MPI_Request *rq = malloc(total * sizeof *rq);
            int **bufs = malloc(total * sizeof *bufs);
            int *next = calloc(size * 4, sizeof(int));
            for (int k = 0; k < total; k++) {
                bufs[k] = malloc(BIG * sizeof(int));
                KT_MPI(MPI_Irecv(bufs[k], BIG, MPI_INT, MPI_ANY_SOURCE, k % 4, MPI_COMM_WORLD, &rq[k]));
            }
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Status *st = malloc(total * sizeof *st);
            KT_MPI(MPI_Waitall(total, rq, st));
            for (int k = 0; k < total; k++) {
                int s = st[k].MPI_SOURCE, t = k % 4;
                KT_EQ_INT(st[k].MPI_TAG, t);
                KT_EQ_INT(bufs[k][0], s);
                /* i of the messages of tag t from s, in order: t, t+4, ... */
                KT_EQ_INT(bufs[k][1], next[s * 4 + t] * 4 + t);
                next[s * 4 + t]++;
                free(bufs[k]);
            }
            free(rq); free(bufs); free(next); free(st);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
