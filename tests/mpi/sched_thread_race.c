/* The thread engine's progress thread and the application advance the same
 * schedules: each node must run once.  With kumi_base_sched_thread_delay_us=0
 * the progress thread takes over at every start and every exit from the
 * library, so it races the application's MPI_Test / MPI_Wait on every
 * operation.  OPS rounds of MPI_Iallreduce (4 MPI_DOUBLE, a user op that
 * counts its calls), MPI_Ibcast and MPI_Iallgather, waited for three ways in
 * turn: at once; after computing without MPI calls (the thread's turn); by
 * MPI_Test in a loop with computing between tests.  Every result is checked,
 * and the user op must be called as often in every round as in the first
 * (a CALC node run twice would double both the count and its addend; a SEND
 * run twice would leave a message that spoils a later round's data).
 *
 * usage: sched_thread_race [OPS (300)] */
#include "kt.h"
#include <time.h>

static long calls;                      /* the user op's calls (either thread may make them) */

static void countsum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < *len; i++) ((double *)inout)[i] += ((double *)in)[i];
}

static void compute(double us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile double x = 1.0;
    do {
        for (int i = 0; i < 200; i++) x = x * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1e6 + (t.tv_nsec - t0.tv_nsec) * 1e-3 < us);
}

static void finish(MPI_Request *r, int n, int how, int i)
{
    if (how == 0) {
        KT_MPI(MPI_Waitall(n, r, MPI_STATUSES_IGNORE));
    } else if (how == 1) {
        compute(50 + (i % 7) * 20);      /* out of the library: the progress thread's turn */
        KT_MPI(MPI_Waitall(n, r, MPI_STATUSES_IGNORE));
    } else {
        int flag = 0;
        while (!flag) {
            KT_MPI(MPI_Testall(n, r, &flag, MPI_STATUSES_IGNORE));
            if (!flag) compute(5 + i % 11);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int ops = argc > 1 ? atoi(argv[1]) : 300;
    MPI_Op op;
    KT_MPI(MPI_Op_create(countsum, 1, &op));
    long first = -1;
    int *gath = malloc(sizeof(int) * (size_t)size);
    KT_CHECK(gath != NULL, "out of memory");
    for (int i = 0; i < ops; i++) {
        double a[4], s[4];
        for (int k = 0; k < 4; k++) { a[k] = rank + i + k; s[k] = -1; }
        MPI_Request r[3];
        long c0 = __atomic_load_n(&calls, __ATOMIC_RELAXED);
        KT_MPI(MPI_Iallreduce(a, s, 4, MPI_DOUBLE, op, MPI_COMM_WORLD, &r[0]));
        finish(r, 1, i % 3, i);
        long c = __atomic_load_n(&calls, __ATOMIC_RELAXED) - c0;
        for (int k = 0; k < 4; k++) {
            double want = (double)size * (size - 1) / 2 + (double)size * (i + k);
            if (s[k] != want) KT_FAIL("round %d: MPI_Iallreduce element %d = %g, expected %g", i, k, s[k], want);
        }
        if (first < 0) first = c;
        if (c != first)
            KT_FAIL("round %d: the user op was called %ld times, %ld in round 0 (a node run twice, or not at all)",
                    i, c, first);
        int b = rank == i % size ? 1000 + i : -1;
        for (int k = 0; k < size; k++) gath[k] = -1;
        int mine = rank * 100000 + i;
        KT_MPI(MPI_Ibcast(&b, 1, MPI_INT, i % size, MPI_COMM_WORLD, &r[1]));
        KT_MPI(MPI_Iallgather(&mine, 1, MPI_INT, gath, 1, MPI_INT, MPI_COMM_WORLD, &r[2]));
        finish(r + 1, 2, (i + 1) % 3, i);
        if (b != 1000 + i) KT_FAIL("round %d: MPI_Ibcast gave %d, expected %d", i, b, 1000 + i);
        for (int k = 0; k < size; k++)
            if (gath[k] != k * 100000 + i) KT_FAIL("round %d: MPI_Iallgather block %d = %d, expected %d", i, k,
                                                    gath[k], k * 100000 + i);
    }
    long all = 0;                       /* some ranks may take no part in the reduction */
    KT_MPI(MPI_Allreduce(&first, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    KT_CHECK(size == 1 || all > 0, "the user op was never called");
    if (rank == 0) printf("sched_thread_race: %d rounds, the user op called %ld times a round (all ranks)\n", ops, all);
    free(gath);
    KT_MPI(MPI_Op_free(&op));
    MPI_Finalize();
    return 0;
}
