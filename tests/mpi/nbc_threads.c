/* nbc_threads: non-blocking and persistent collectives from several threads
 * at once (MPI_THREAD_MULTIPLE), each thread on its own duplicate of
 * MPI_COMM_WORLD: Iallreduce, Ibcast (some of 100000 bytes) and Ialltoall
 * completed by MPI_Test loops or MPI_Wait, and a persistent Allreduce
 * restarted every iteration.  Finally one thread starts collectives that
 * another thread completes. */
#include "kt.h"
#include <pthread.h>

#define NT 3
#define ITERS 60
#define BIG 25000

static int me, n;
static MPI_Comm comms[NT];

static int val(int r, int i, int it, int t) { return r * 1000003 + i + it * 17 + t * 100000; }

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    MPI_Comm c = comms[t];
    int *b = malloc(sizeof(int) * BIG), *s = malloc(sizeof(int) * 2 * n), *r = malloc(sizeof(int) * 2 * n);
    int x[2], y[2], px[2] = { 0, 0 }, py[2] = { 0, 0 };
    MPI_Request rq[3], prq;
    KT_CHECK(b && s && r, "out of memory");
    KT_MPI(MPI_Allreduce_init(px, py, 2, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &prq));
    for (int it = 0; it < ITERS; it++) {
        int cnt = it % 10 == 9 ? BIG : 5, root = (it + t) % n;
        for (int i = 0; i < cnt; i++) b[i] = me == root ? val(root, i, it, t) : -1;
        for (int i = 0; i < 2; i++) {
            x[i] = val(me, i, it, t) % 1000;
            px[i] = x[i] + 1;
        }
        for (int d = 0; d < n; d++) {
            s[2 * d] = val(me, d, it, t);
            s[2 * d + 1] = -val(me, d, it, t);
        }
        KT_MPI(MPI_Iallreduce(x, y, 2, MPI_INT, MPI_SUM, c, &rq[0]));
        KT_MPI(MPI_Ibcast(b, cnt, MPI_INT, root, c, &rq[1]));
        KT_MPI(MPI_Ialltoall(s, 2, MPI_INT, r, 2, MPI_INT, c, &rq[2]));
        KT_MPI(MPI_Start(&prq));
        if (it % 2) {
            int flag = 0;
            while (!flag) KT_MPI(MPI_Testall(3, rq, &flag, MPI_STATUSES_IGNORE));
            KT_MPI(MPI_Wait(&prq, MPI_STATUS_IGNORE));
        } else {
            for (int j = 2; j >= 0; j--) KT_MPI(MPI_Wait(&rq[j], MPI_STATUS_IGNORE));
            int flag = 0;
            while (!flag) KT_MPI(MPI_Test(&prq, &flag, MPI_STATUS_IGNORE));
        }
        for (int i = 0; i < 2; i++) {
            long long want = 0;
            for (int q = 0; q < n; q++) want += val(q, i, it, t) % 1000;
            if (y[i] != want) KT_FAIL("thread %d iteration %d: Iallreduce [%d] = %d, expected %lld", t, it, i, y[i], want);
            if (py[i] != want + n) KT_FAIL("thread %d iteration %d: Allreduce_init [%d] = %d", t, it, i, py[i]);
        }
        for (int i = 0; i < cnt; i++)
            if (b[i] != val(root, i, it, t)) KT_FAIL("thread %d iteration %d: Ibcast [%d] = %d", t, it, i, b[i]);
        for (int q = 0; q < n; q++)
            if (r[2 * q] != val(q, me, it, t) || r[2 * q + 1] != -val(q, me, it, t))
                KT_FAIL("thread %d iteration %d: Ialltoall from %d: %d %d", t, it, q, r[2 * q], r[2 * q + 1]);
    }
    KT_MPI(MPI_Request_free(&prq));
    free(b); free(s); free(r);
    return NULL;
}

/* A request started by one thread and completed by another. */
static MPI_Request handed;
static void *completer(void *arg)
{
    (void)arg;
    KT_MPI(MPI_Wait(&handed, MPI_STATUS_IGNORE));
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    KT_EQ_INT(provided, MPI_THREAD_MULTIPLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    pthread_t th[NT];
    for (int t = 0; t < NT; t++) KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    for (int t = 0; t < NT; t++) KT_CHECK(pthread_create(&th[t], NULL, worker, (void *)(long)t) == 0, "pthread_create");
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);

    int *b = malloc(sizeof(int) * BIG);
    for (int i = 0; i < BIG; i++) b[i] = me == 0 ? i * 3 : -1;
    KT_MPI(MPI_Ibcast(b, BIG, MPI_INT, 0, comms[0], &handed));
    pthread_t c;
    KT_CHECK(pthread_create(&c, NULL, completer, NULL) == 0, "pthread_create");
    pthread_join(c, NULL);
    KT_CHECK(handed == MPI_REQUEST_NULL, "the request was not freed");
    for (int i = 0; i < BIG; i++)
        if (b[i] != i * 3) KT_FAIL("Ibcast completed by another thread: [%d] = %d", i, b[i]);
    free(b);

    for (int t = 0; t < NT; t++) KT_MPI(MPI_Comm_free(&comms[t]));
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return 0;
}
