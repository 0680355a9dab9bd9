/* coll/tuned: what the component's files share (private to the component).
 *
 * Every algorithm is written once, as a sequence of rounds, against the
 * small "program" interface below (struct tuned_cx), and runs two ways:
 *   - blocking (cx->s == NULL): sends and receives of a round are posted at
 *     once, and the round ends by waiting for all of them; CALC and COPY
 *     run at the moment they are called;
 *   - as a schedule (cx->s != NULL, the non-blocking and persistent
 *     collectives): each call adds a node, and every node of a round comes
 *     after all nodes of the round before (the LibNBC model).
 * So within one round everything may happen at once: an algorithm must
 * never, in one round, write memory that another operation of the same
 * round reads or writes.  tuned_round() separates rounds.
 *
 * Algorithms read their arguments (addresses, counts, displacements) while
 * they run, never the data in the buffers (a schedule is built before its
 * data exists).  Errors are sticky: after the first failure every call is
 * a no-op and tuned_end() returns the error.
 */
#ifndef COLL_TUNED_H
#define COLL_TUNED_H
#include <mpi.h>
#include <kumi/kumi.h>
#include <kumi/coll.h>
#include <kumi/sched.h>
#include <stddef.h>

struct tuned_sendop {
    const void *buf;
    size_t count;
    MPI_Datatype dt;
    int peer;
};

struct tuned_cx {
    MPI_Comm comm;
    int rank, size;
    struct kumi_sched *s;          /* NULL: run now (blocking collective) */
    int tag;                       /* blocking: the operation's tag */
    int err;
    int kept;                      /* blocking: a local copy's truncation, reported at the end
                                    * (the algorithm goes on: its peers wait for it) */
    size_t segsize;                /* pipelining segment (bytes); 0: no segmenting */
    /* blocking: requests of the current round, its sends (posted when the
     * round ends, after its receives), temporaries to free */
    kumi_coll_req *reqs;
    int nreq, reqcap;
    struct tuned_sendop *sends;
    int nsend, sendcap;
    void **mem;
    int nmem, memcap;
    /* blocking: a copy of the current round run once its sends are posted
     * (tuned_copy_late) */
    struct tuned_copyop {
        const void *src;
        size_t scount;
        MPI_Datatype sdt;
        void *dst;
        size_t dcount;
        MPI_Datatype ddt;
    } late;
    int nlate;
    /* schedule: nodes of the current round, join of the previous one */
    int *cur;
    int ncur, curcap;
    int prev;
    kumi_coll_req reqbuf[16];
    struct tuned_sendop sendbuf[8];
    void *membuf[8];
    int curbuf[16];
};

void tuned_begin(struct tuned_cx *cx, MPI_Comm comm, struct kumi_sched *s, int tag);
/* Finish the last round, free the temporaries; the first error or MPI_SUCCESS. */
int tuned_end(struct tuned_cx *cx);
/* Everything before completes before anything after starts. */
void tuned_round(struct tuned_cx *cx);
/* Point-to-point within the communicator (peer MPI_PROC_NULL: nothing). */
void tuned_send(struct tuned_cx *cx, const void *buf, size_t count, MPI_Datatype dt, int peer);
void tuned_recv(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt, int peer);
/* inout = in op inout (in holds the lower ranks' part). */
void tuned_calc(struct tuned_cx *cx, const void *in, void *inout, size_t count, MPI_Datatype dt,
                MPI_Op op);
/* dst = src (matched signatures, as kumi_dt_copy). */
void tuned_copy(struct tuned_cx *cx, const void *src, size_t scount, MPI_Datatype sdt, void *dst,
                size_t dcount, MPI_Datatype ddt);
/* As tuned_copy, as part of the current round: a blocking collective runs
 * it after the round's sends are posted (while the peers take the data: a
 * block the local copy writes is not what a send of the round reads), a
 * schedule as one node of the round. */
void tuned_copy_late(struct tuned_cx *cx, const void *src, size_t scount, MPI_Datatype sdt, void *dst,
                     size_t dcount, MPI_Datatype ddt);
/* A temporary for count elements of dt (the buffer pointer to use, laid out
 * by the datatype's true extent); lives until tuned_end() or, for a
 * schedule, as long as the schedule.  NULL on failure (error recorded). */
char *tuned_tmp(struct tuned_cx *cx, size_t count, MPI_Datatype dt);
/* Record an error (an MPI error code); returns it. */
int tuned_fail(struct tuned_cx *cx, int err);

/* Datatype helpers. */
MPI_Aint tuned_ext(MPI_Datatype dt);
static inline char *tuned_at(const void *buf, MPI_Aint idx, MPI_Aint ext)
{
    return (char *)buf + idx * ext;
}
/* Largest power of two <= n (n >= 1). */
static inline int tuned_pof2(int n)
{
    int p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}

/* ------------------------------------------------------------------ algorithms
 * Each operation's algorithms have the blocking signature with a tuned_cx
 * in front (cx already begun on comm); the dispatcher (coll_tuned.c) calls
 * tuned_end().  Every algorithm is correct for every process count, count,
 * datatype and op it is given: where one needs a property (a commutative
 * op, an even process count, count >= a power of two) the dispatcher checks
 * it with the algorithm's `usable` function and otherwise falls back to the
 * operation's first algorithm (see coll_tuned.c). */
/* barrier (coll_tuned_barrier.c) */
int tuned_barrier_linear(struct tuned_cx *cx);
int tuned_barrier_binomial(struct tuned_cx *cx);
int tuned_barrier_dissemination(struct tuned_cx *cx);
int tuned_barrier_recursive_doubling(struct tuned_cx *cx);

/* bcast (coll_tuned_bcast.c) */
int tuned_bcast_linear(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt, int root);
int tuned_bcast_binomial(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt, int root);
int tuned_bcast_pipeline(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt, int root);
int tuned_bcast_scatter_allgather(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt,
                                  int root);

/* gather / scatter (coll_tuned_rooted.c) */
int tuned_gather_linear(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                        void *rbuf, size_t rcount, MPI_Datatype rdt, int root);
int tuned_gather_binomial(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                          void *rbuf, size_t rcount, MPI_Datatype rdt, int root);
int tuned_scatter_linear(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                         void *rbuf, size_t rcount, MPI_Datatype rdt, int root);
int tuned_scatter_binomial(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                           void *rbuf, size_t rcount, MPI_Datatype rdt, int root);

/* allgather(v) (coll_tuned_allgather.c) */
int tuned_allgather_linear(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                           void *rbuf, size_t rcount, MPI_Datatype rdt);
int tuned_allgather_recursive_doubling(struct tuned_cx *cx, const void *sbuf, size_t scount,
                                       MPI_Datatype sdt, void *rbuf, size_t rcount, MPI_Datatype rdt);
int tuned_allgather_bruck(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                          void *rbuf, size_t rcount, MPI_Datatype rdt);
int tuned_allgather_ring(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                         void *rbuf, size_t rcount, MPI_Datatype rdt);
int tuned_allgather_neighbor_exchange(struct tuned_cx *cx, const void *sbuf, size_t scount,
                                      MPI_Datatype sdt, void *rbuf, size_t rcount, MPI_Datatype rdt);
int tuned_allgatherv_linear(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                            void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt);
int tuned_allgatherv_ring(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                          void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt);
int tuned_allgatherv_recursive_doubling(struct tuned_cx *cx, const void *sbuf, size_t scount,
                                        MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                                        const MPI_Aint displs[], MPI_Datatype rdt);

/* alltoall(v,w) (coll_tuned_alltoall.c) */
int tuned_alltoall_linear(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                          void *rbuf, size_t rcount, MPI_Datatype rdt);
int tuned_alltoall_pairwise(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                            void *rbuf, size_t rcount, MPI_Datatype rdt);
int tuned_alltoall_bruck(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                         void *rbuf, size_t rcount, MPI_Datatype rdt);
int tuned_alltoallv_linear(struct tuned_cx *cx, const void *sbuf, const MPI_Count scounts[],
                           const MPI_Aint sdispls[], MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                           const MPI_Aint rdispls[], MPI_Datatype rdt);
int tuned_alltoallv_pairwise(struct tuned_cx *cx, const void *sbuf, const MPI_Count scounts[],
                             const MPI_Aint sdispls[], MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                             const MPI_Aint rdispls[], MPI_Datatype rdt);
int tuned_alltoallw_linear(struct tuned_cx *cx, const void *sbuf, const MPI_Count scounts[],
                           const MPI_Aint sdispls[], const MPI_Datatype sdts[], void *rbuf,
                           const MPI_Count rcounts[], const MPI_Aint rdispls[], const MPI_Datatype rdts[]);
int tuned_alltoallw_pairwise(struct tuned_cx *cx, const void *sbuf, const MPI_Count scounts[],
                             const MPI_Aint sdispls[], const MPI_Datatype sdts[], void *rbuf,
                             const MPI_Count rcounts[], const MPI_Aint rdispls[], const MPI_Datatype rdts[]);

/* reduce / allreduce (coll_tuned_reduce.c) */
int tuned_reduce_linear(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                        MPI_Datatype dt, MPI_Op op, int root);
int tuned_reduce_binomial(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                          MPI_Datatype dt, MPI_Op op, int root);
int tuned_reduce_pipeline(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                          MPI_Datatype dt, MPI_Op op, int root);
int tuned_reduce_rabenseifner(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                              MPI_Datatype dt, MPI_Op op, int root);
int tuned_allreduce_reduce_bcast(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                                 MPI_Datatype dt, MPI_Op op);
int tuned_allreduce_recursive_doubling(struct tuned_cx *cx, const void *sbuf, void *rbuf,
                                       size_t count, MPI_Datatype dt, MPI_Op op);
int tuned_allreduce_rabenseifner(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                                 MPI_Datatype dt, MPI_Op op);
int tuned_allreduce_ring(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                         MPI_Datatype dt, MPI_Op op);

/* The first phase of Rabenseifner's algorithms (coll_tuned_reduce.c): the
 * non-power-of-two pre-step, then reduce-scatter by recursive halving of the
 * element ranges [nd[i], nd[i+1]) over the pof2 remaining ranks, into acc.
 * Commutative ops.  Returns the rank's new rank (-1: sat out). */
int tuned_rs_halving(struct tuned_cx *cx, const void *in, char *acc, const size_t *nd,
                     MPI_Datatype dt, MPI_Op op);

/* reduce_scatter(_block), scan, exscan (coll_tuned_rscan.c) */
int tuned_reduce_scatter_reduce_scatterv(struct tuned_cx *cx, const void *sbuf, void *rbuf,
                                         const MPI_Count rcounts[], MPI_Datatype dt, MPI_Op op);
int tuned_reduce_scatter_recursive_halving(struct tuned_cx *cx, const void *sbuf, void *rbuf,
                                           const MPI_Count rcounts[], MPI_Datatype dt, MPI_Op op);
int tuned_reduce_scatter_ring(struct tuned_cx *cx, const void *sbuf, void *rbuf,
                              const MPI_Count rcounts[], MPI_Datatype dt, MPI_Op op);
int tuned_scan_linear(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                      MPI_Datatype dt, MPI_Op op);
int tuned_scan_recursive_doubling(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                                  MPI_Datatype dt, MPI_Op op);
int tuned_exscan_linear(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                        MPI_Datatype dt, MPI_Op op);
int tuned_exscan_recursive_doubling(struct tuned_cx *cx, const void *sbuf, void *rbuf,
                                    size_t count, MPI_Datatype dt, MPI_Op op);

#endif
