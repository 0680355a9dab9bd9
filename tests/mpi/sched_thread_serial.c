/* Thread engine at MPI_THREAD_SERIALIZED: the library lock is off, the
 * entries count themselves (core/lock.c) and the progress thread raises
 * their flag when it takes a schedule over.  Two application threads call
 * MPI by turns (a mutex of the program's own serializes them): each starts
 * an MPI_Iallreduce, computes 1-4 ms without MPI (the progress thread takes
 * over), and tests until it completes (computing 0.2 ms between tests
 * every other round); the other thread's turn may come in between.  Every result must
 * be right, and the user op called as often every round (a node run twice
 * by the progress thread and an application thread would not be).
 *
 * usage: sched_thread_serial [ROUNDS per thread (30)] */
#define _GNU_SOURCE
#include "kt.h"
#include <pthread.h>

static pthread_mutex_t turn = PTHREAD_MUTEX_INITIALIZER;
static int rank, size, rounds;
static long calls[2];                   /* each thread's user op's calls */

static void sum(void *in, void *inout, int *len, int t)
{
    __atomic_add_fetch(&calls[t], 1, __ATOMIC_RELAXED);
    for (int i = 0; i < *len; i++) ((long *)inout)[i] += ((long *)in)[i];
}
static void sum0(void *in, void *inout, int *len, MPI_Datatype *dt) { (void)dt; sum(in, inout, len, 0); }
static void sum1(void *in, void *inout, int *len, MPI_Datatype *dt) { (void)dt; sum(in, inout, len, 1); }

static MPI_Op ops[2];
static MPI_Comm comms[2];

static void compute(double ms)
{
    double t0 = kt_now();
    volatile double x = 1.0;
    while ((kt_now() - t0) * 1e3 < ms)
        for (int i = 0; i < 200; i++) x = x * 1.0000001 + 1e-9;
}

static void *worker(void *arg)
{
    int me = (int)(long)arg;
    long first = -1;
    for (int i = 0; i < rounds; i++) {
        long v = rank + 10L * i + 1000L * me, s = -1;
        MPI_Request r;
        pthread_mutex_lock(&turn);
        long c0 = __atomic_load_n(&calls[me], __ATOMIC_RELAXED);
        KT_MPI(MPI_Iallreduce(&v, &s, 1, MPI_LONG, ops[me], comms[me], &r));
        pthread_mutex_unlock(&turn);
        compute(1 + (i + me) % 4);
        /* by MPI_Test (a blocking wait under the program's mutex would keep
         * the other thread from starting the operation a peer waits for) */
        int flag = 0;
        while (!flag) {
            pthread_mutex_lock(&turn);
            KT_MPI(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
            pthread_mutex_unlock(&turn);
            if (!flag && i % 2) compute(0.2);
        }
        long c = __atomic_load_n(&calls[me], __ATOMIC_RELAXED) - c0;
        long want = (long)size * (size - 1) / 2 + (long)size * (10L * i + 1000L * me);
        if (s != want) KT_FAIL("thread %d round %d: MPI_Iallreduce gave %ld, expected %ld", me, i, s, want);
        if (first < 0) first = c;
        if (c != first)
            KT_FAIL("thread %d round %d: the user op was called %ld times, %ld in round 0 (a node run twice, or "
                    "not at all)", me, i, c, first);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    KT_CHECK(provided >= MPI_THREAD_SERIALIZED, "provided %d", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rounds = argc > 1 ? atoi(argv[1]) : 30;
    KT_MPI(MPI_Op_create(sum0, 1, &ops[0]));
    KT_MPI(MPI_Op_create(sum1, 1, &ops[1]));
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]));
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]));
    pthread_t t[2];
    for (long k = 0; k < 2; k++) KT_CHECK(pthread_create(&t[k], NULL, worker, (void *)k) == 0, "pthread_create");
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    KT_MPI(MPI_Comm_free(&comms[0]));
    KT_MPI(MPI_Comm_free(&comms[1]));
    KT_MPI(MPI_Op_free(&ops[0]));
    KT_MPI(MPI_Op_free(&ops[1]));
    if (rank == 0) printf("sched_thread_serial: 2 threads x %d rounds, right\n", rounds);
    MPI_Finalize();
    return 0;
}
