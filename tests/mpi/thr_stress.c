/* MPI_THREAD_MULTIPLE stress: 4 threads per rank.  Thread t works on its own
 * duplicate of MPI_COMM_WORLD (ring Sendrecv with payloads from 0 B to
 * rendezvous size, Allreduce, Bcast, Barrier), and all threads also exchange
 * messages on one shared communicator, told apart by tag (thread t receives
 * tag t with MPI_ANY_SOURCE).  Every value is checked. */
#include "kt.h"
#include <pthread.h>

#define NT 4
static int rank, size, iters;
static MPI_Comm own[NT], shared;

static void *work(void *arg)
{
    int t = (int)(intptr_t)arg;
    MPI_Comm c = own[t];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int big = 20000;                                    /* ints: 80 KB, rendezvous over tcp */
    int *sb = malloc(sizeof(int) * big), *rb = malloc(sizeof(int) * big);
    for (int it = 0; it < iters; it++) {
        int n = (it % 3 == 0) ? 0 : (it % 3 == 1 ? 7 : big);
        for (int i = 0; i < n; i++) sb[i] = rank * 1000 + t * 100 + it + i;
        MPI_Status st;
        KT_MPI(MPI_Sendrecv(sb, n, MPI_INT, right, it, rb, big, MPI_INT, left, it, c, &st));
        int cnt;
        MPI_Get_count(&st, MPI_INT, &cnt);
        KT_EQ_INT(cnt, n);
        for (int i = 0; i < n; i++)
            if (rb[i] != left * 1000 + t * 100 + it + i) KT_FAIL("thread %d it %d: rb[%d] = %d", t, it, i, rb[i]);
        int x = rank + t + it, sum = 0;
        KT_MPI(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, c));
        KT_EQ_INT(sum, size * (size - 1) / 2 + size * (t + it));
        int b = rank == it % size ? 1000 * t + it : -1;
        KT_MPI(MPI_Bcast(&b, 1, MPI_INT, it % size, c));
        KT_EQ_INT(b, 1000 * t + it);
        if (it % 10 == 0) KT_MPI(MPI_Barrier(c));
        /* shared communicator: send to every rank's thread t, receive from anyone on tag t */
        int v = rank * 10 + t, got;
        MPI_Request rq[2];
        KT_MPI(MPI_Isend(&v, 1, MPI_INT, right, t, shared, &rq[0]));
        KT_MPI(MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, t, shared, &rq[1]));
        KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
        KT_EQ_INT(got, left * 10 + t);
    }
    free(sb);
    free(rb);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    KT_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    iters = argc > 1 ? atoi(argv[1]) : 200;
    for (int t = 0; t < NT; t++) KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &own[t]));
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &shared));
    pthread_t th[NT];
    double t0 = MPI_Wtime();
    for (int t = 0; t < NT; t++) pthread_create(&th[t], NULL, work, (void *)(intptr_t)t);
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    double el = MPI_Wtime() - t0;
    for (int t = 0; t < NT; t++) KT_MPI(MPI_Comm_free(&own[t]));
    KT_MPI(MPI_Comm_free(&shared));
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("thr_stress: %d threads x %d iterations on %d ranks in %.2f s\n", NT, iters, size, el);
    MPI_Finalize();
    return 0;
}
