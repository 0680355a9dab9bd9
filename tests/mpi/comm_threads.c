/* Context ids never collide when threads create communicators concurrently
 * on overlapping groups: 4 threads per rank, thread t dups and splits its own
 * communicator (overlapping process sets: all of world, and pairs) many
 * times, and checks each new communicator by traffic that would mix if two
 * shared a context. */
#include "kt.h"
#include <pthread.h>

#define NT 4
#define ITERS 30
static int me, n;
static MPI_Comm base[NT];

static void *work(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < ITERS; i++) {
        MPI_Comm d, s;
        KT_MPI(MPI_Comm_dup(base[t], &d));
        /* overlapping subsets: thread t splits into groups of rank / (t + 1) */
        KT_MPI(MPI_Comm_split(d, me / (t + 1), me, &s));
        int v = me * 100 + t, sum = 0, size;
        MPI_Comm_size(s, &size);
        KT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, s));
        int lo = (me / (t + 1)) * (t + 1), expect = 0;
        for (int r = lo; r < lo + size; r++) expect += r * 100 + t;
        if (sum != expect) KT_FAIL("thread %d iter %d: sum %d, expected %d", t, i, sum, expect);
        int sr, tok = v, got = -1;
        MPI_Comm_rank(s, &sr);
        KT_MPI(MPI_Sendrecv(&tok, 1, MPI_INT, (sr + 1) % size, t, &got, 1, MPI_INT, (sr + size - 1) % size, t, s,
                            MPI_STATUS_IGNORE));
        KT_EQ_INT(got % 100, t);
        MPI_Comm_free(&s);
        MPI_Comm_free(&d);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) KT_FAIL("MPI_THREAD_MULTIPLE not provided (%d)", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (int t = 0; t < NT; t++) KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &base[t]));
    pthread_t th[NT];
    for (int t = 0; t < NT; t++) pthread_create(&th[t], NULL, work, (void *)(long)t);
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NT; t++) MPI_Comm_free(&base[t]);
    MPI_Finalize();
    return 0;
}
