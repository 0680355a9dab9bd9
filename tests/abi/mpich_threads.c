/* mpich_threads: built with mpicc.mpich, run on Kumi through the MPICH ABI shim
 * (tests/scripts/abi_mpich_progs.sh).  MPI_THREAD_MULTIPLE: several threads at once create
 * and free communicators, datatypes and requests through the shim's handle tables (its
 * lock-free lookups, per-thread request free lists, chunk publication while other threads
 * read), exchange messages with the neighbour ranks on their own communicators, and check
 * that every handle has the right kind, stays valid while in use and is reused once freed;
 * then each thread completes requests that another thread created. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NT 4
#define ITERS 300
#define FAIL(...) do { fprintf(stderr, "FAIL rank %d: ", rank); fprintf(stderr, __VA_ARGS__); \
    fputc('\n', stderr); exit(1); } while (0)
#define OK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) FAIL("%s returned %d (line %d)", #call, rc_, __LINE__); } while (0)
#define KIND(h) (((unsigned)(h) >> 26) & 0xf)

static int rank, size;
static MPI_Comm tcomm[NT];   /* one communicator per thread, dup'd by the main thread */
/* phase 2: requests created by one thread and completed by another (entries move between the
 * threads' free lists) */
#define K 16
static MPI_Request xreq[NT][2 * K];
static int xbuf[NT][2 * K];
static pthread_barrier_t bar;

static void *cross(void *arg)
{
    int t = (int)(long)arg, o = (t + 1) % NT;
    for (int i = 0; i < 100; i++) {
        for (int k = 0; k < K; k++) {
            xbuf[t][K + k] = i * K + k;
            OK(MPI_Irecv(&xbuf[t][k], 1, MPI_INT, 0, k, tcomm[t], &xreq[t][k]));
            OK(MPI_Isend(&xbuf[t][K + k], 1, MPI_INT, 0, k, tcomm[t], &xreq[t][K + k]));
        }
        pthread_barrier_wait(&bar);
        OK(MPI_Waitall(2 * K, xreq[o], MPI_STATUSES_IGNORE));
        for (int k = 0; k < 2 * K; k++)
            if (xreq[o][k] != MPI_REQUEST_NULL) FAIL("cross: request not MPI_REQUEST_NULL");
        for (int k = 0; k < K; k++)
            if (xbuf[o][k] != i * K + k) FAIL("cross: got %d, expected %d", xbuf[o][k], i * K + k);
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

static void *work(void *arg)
{
    int t = (int)(long)arg;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned long sum = 0;
    for (int i = 0; i < ITERS; i++) {
        /* a communicator of this thread's own, created and freed while other threads do the same */
        MPI_Comm c;
        OK(MPI_Comm_dup(MPI_COMM_SELF, &c));
        if (KIND(c) != KIND(MPI_COMM_WORLD)) FAIL("comm handle 0x%x of the wrong kind", (unsigned)c);
        MPI_Datatype dt;
        OK(MPI_Type_vector(2, 1, 2, MPI_INT, &dt));
        OK(MPI_Type_commit(&dt));
        if (KIND(dt) != KIND(MPI_INT)) FAIL("datatype handle 0x%x of the wrong kind", (unsigned)dt);
        /* requests: a burst on the thread's own communicator with the neighbours, and one to self */
        enum { N = 8 };
        MPI_Request r[2 * N + 2];
        int sb[N], rbuf[N], v[4] = { i, -1, t, -1 }, w[4] = { -1, -1, -1, -1 };
        for (int k = 0; k < N; k++) {
            sb[k] = i * 100 + k;
            OK(MPI_Irecv(&rbuf[k], 1, MPI_INT, left, k, tcomm[t], &r[k]));
            OK(MPI_Isend(&sb[k], 1, MPI_INT, right, k, tcomm[t], &r[N + k]));
        }
        OK(MPI_Irecv(w, 1, dt, 0, 7, c, &r[2 * N]));
        OK(MPI_Isend(v, 1, dt, 0, 7, c, &r[2 * N + 1]));
        for (int k = 0; k < 2 * N + 2; k++)
            if (KIND(r[k]) != KIND(MPI_REQUEST_NULL)) FAIL("request handle 0x%x of the wrong kind", (unsigned)r[k]);
        if (i % 3 == 0) {
            OK(MPI_Waitall(2 * N + 2, r, MPI_STATUSES_IGNORE));
        } else {
            for (int k = 0; k < 2 * N + 2; k++) {
                MPI_Status st;
                int idx = -1;
                OK(MPI_Waitany(2 * N + 2, r, &idx, &st));
                if (idx < 0 || idx >= 2 * N + 2) FAIL("Waitany index %d", idx);
            }
        }
        for (int k = 0; k < 2 * N + 2; k++)
            if (r[k] != MPI_REQUEST_NULL) FAIL("request %d not MPI_REQUEST_NULL after completion", k);
        for (int k = 0; k < N; k++)
            if (rbuf[k] != i * 100 + k) FAIL("thread %d got %d, expected %d", t, rbuf[k], i * 100 + k);
        if (w[0] != i || w[2] != t) FAIL("thread %d: vector to self got %d %d", t, w[0], w[2]);
        sum += (unsigned)c & 0x3ffffff;
        OK(MPI_Type_free(&dt));
        OK(MPI_Comm_free(&c));
        if (c != MPI_COMM_NULL || dt != MPI_DATATYPE_NULL) FAIL("freed handles not null");
    }
    return (void *)sum;
}

int main(int argc, char **argv)
{
    int provided;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (provided != MPI_THREAD_MULTIPLE) FAIL("provided %d", provided);
    for (int t = 0; t < NT; t++) OK(MPI_Comm_dup(MPI_COMM_WORLD, &tcomm[t]));
    pthread_t th[NT];
    for (int t = 0; t < NT; t++)
        if (pthread_create(&th[t], NULL, work, (void *)(long)t)) FAIL("pthread_create");
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    /* requests completed by other threads than their creators, on MPI_COMM_SELF copies */
    for (int t = 0; t < NT; t++) OK(MPI_Comm_free(&tcomm[t]));
    for (int t = 0; t < NT; t++) OK(MPI_Comm_dup(MPI_COMM_SELF, &tcomm[t]));
    pthread_barrier_init(&bar, NULL, NT);
    for (int t = 0; t < NT; t++)
        if (pthread_create(&th[t], NULL, cross, (void *)(long)t)) FAIL("pthread_create");
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&bar);
    /* all freed: a new communicator reuses a small index */
    MPI_Comm c;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    if ((((unsigned)c) & 0x3ffffff) > 64 + 2 * NT + 8) FAIL("comm index %u: freed entries not reused", (unsigned)c & 0x3ffffff);
    OK(MPI_Comm_free(&c));
    for (int t = 0; t < NT; t++) OK(MPI_Comm_free(&tcomm[t]));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("mpich_threads: %d ranks x %d threads ok\n", size, NT);
    OK(MPI_Finalize());
    return 0;
}
