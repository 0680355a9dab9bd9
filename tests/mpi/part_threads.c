/* Partitioned communication with threads (MPI_THREAD_MULTIPLE): per round,
 * 4 worker threads each fill their share of the send partitions and
 * MPI_Pready them (the OpenMP-style use the feature is for), while also
 * polling MPI_Parrived for their share of the receive partitions and
 * checking the data as soon as it says it arrived.  The main thread starts
 * and waits.  Ring: rank -> rank+1; 16 sender partitions, 8 receiver ones. */
#include "kt.h"
#include <pthread.h>
#include <stdint.h>

#define NT 4
#define SP 16
#define RP 8
#define PC 1000            /* doubles per sender partition */
#define ROUNDS 40

static int rank, size, next, prev;
static double sbuf[SP * PC], rbuf[SP * PC];
static MPI_Request sreq, rreq;
static pthread_barrier_t bar;
static int round_no;

static double val(int round, int from, int i) { return round * 1e7 + from * 1e5 + i; }

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(&bar);                 /* main has started the requests */
        for (int p = t; p < SP; p += NT) {
            for (int i = p * PC; i < (p + 1) * PC; i++) sbuf[i] = val(round, rank, i);
            KT_MPI(MPI_Pready(p, sreq));
        }
        int left = RP / NT;
        char got[RP] = { 0 };
        double t0 = MPI_Wtime();
        while (left) {
            for (int q = t; q < RP; q += NT) {
                if (got[q]) continue;
                int f = 0;
                KT_MPI(MPI_Parrived(rreq, q, &f));
                if (!f) continue;
                got[q] = 1; left--;
                for (int i = q * (SP * PC / RP); i < (q + 1) * (SP * PC / RP); i++)
                    if (rbuf[i] != val(round, prev, i))
                        KT_FAIL("thread %d round %d: partition %d arrived, rbuf[%d] = %g, expected %g", t, round, q, i,
                                rbuf[i], val(round, prev, i));
            }
            if (MPI_Wtime() - t0 > 60) KT_FAIL("thread %d round %d: partitions never arrived", t, round);
        }
        pthread_barrier_wait(&bar);                 /* main waits for the requests */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    KT_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;
    KT_MPI(MPI_Psend_init(sbuf, SP, PC, MPI_DOUBLE, next, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq));
    KT_MPI(MPI_Precv_init(rbuf, RP, SP * PC / RP, MPI_DOUBLE, prev, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq));
    pthread_barrier_init(&bar, NULL, NT + 1);
    pthread_t th[NT];
    for (int t = 0; t < NT; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (round_no = 0; round_no < ROUNDS; round_no++) {
        for (int i = 0; i < SP * PC; i++) rbuf[i] = -1;
        KT_MPI(MPI_Start(&rreq));
        KT_MPI(MPI_Start(&sreq));
        pthread_barrier_wait(&bar);
        pthread_barrier_wait(&bar);
        MPI_Status st;
        KT_MPI(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        KT_MPI(MPI_Wait(&rreq, &st));
        int c = -1;
        KT_MPI(MPI_Get_count(&st, MPI_DOUBLE, &c));
        KT_EQ_INT(c, SP * PC);
        for (int i = 0; i < SP * PC; i++)
            if (rbuf[i] != val(round_no, prev, i)) KT_FAIL("round %d: rbuf[%d] = %g", round_no, i, rbuf[i]);
    }
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    KT_MPI(MPI_Request_free(&sreq));
    KT_MPI(MPI_Request_free(&rreq));
    MPI_Finalize();
    return 0;
}
