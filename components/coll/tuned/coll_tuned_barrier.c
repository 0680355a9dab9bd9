/* coll/tuned: barrier algorithms.
 *
 * Every message is zero bytes; what matters is who waits for whom.  Each
 * algorithm is a sequence of rounds (see coll_tuned.h): a rank only sends
 * the messages of a round once everything it received before has arrived.
 */
#include "coll_tuned.h"

/* Linear: every rank sends a zero-byte message to rank 0; once rank 0 has
 * them all, it sends one to every rank.  2 rounds; rank 0 handles 2(p-1)
 * messages, so latency grows as O(p). */
int tuned_barrier_linear(struct tuned_cx *cx)
{
    int rank = cx->rank, size = cx->size;
    if (size == 1) return cx->err;
    if (rank != 0) {
        tuned_send(cx, NULL, 0, MPI_BYTE, 0);
        tuned_round(cx);
        tuned_recv(cx, NULL, 0, MPI_BYTE, 0);
        return cx->err;
    }
    for (int i = 1; i < size; i++) tuned_recv(cx, NULL, 0, MPI_BYTE, i);
    tuned_round(cx);
    for (int i = 1; i < size; i++) tuned_send(cx, NULL, 0, MPI_BYTE, i);
    return cx->err;
}

/* Binomial: fan-in along a binomial tree rooted at rank 0 (rank r's
 * children are r + m for the powers of two m below r's lowest set bit, its
 * parent is r minus that bit), then the same tree in reverse as fan-out.
 * Each rank waits for all its children, tells its parent, waits for the
 * parent's release and releases its children: 4 rounds per rank, about
 * 2 ceil(log2 p) message latencies end to end. */
int tuned_barrier_binomial(struct tuned_cx *cx)
{
    int rank = cx->rank, size = cx->size;
    int low = 1;                                /* rank's lowest set bit (size for rank 0) */
    if (size == 1) return cx->err;
    while (low < size && !(rank & low)) low <<= 1;
    int parent = rank ? rank - low : MPI_PROC_NULL;

    for (int m = 1; m < low && rank + m < size; m <<= 1)
        tuned_recv(cx, NULL, 0, MPI_BYTE, rank + m);
    tuned_round(cx);
    tuned_send(cx, NULL, 0, MPI_BYTE, parent);
    tuned_round(cx);
    tuned_recv(cx, NULL, 0, MPI_BYTE, parent);
    tuned_round(cx);
    for (int m = low >> 1; m >= 1; m >>= 1)
        if (rank + m < size) tuned_send(cx, NULL, 0, MPI_BYTE, rank + m);
    return cx->err;
}

/* Dissemination (Hensgen, Finkel, Manber): ceil(log2 p) rounds; in round k
 * rank r sends to (r + 2^k) mod p and receives from (r - 2^k) mod p.  After
 * round k every rank has heard, directly or not, from the 2^(k+1) - 1 ranks
 * before it, so after the last round from all.  Works for any p with
 * ceil(log2 p) latencies and p messages per round. */
int tuned_barrier_dissemination(struct tuned_cx *cx)
{
    int rank = cx->rank, size = cx->size;
    for (int d = 1; d < size; d <<= 1) {
        tuned_send(cx, NULL, 0, MPI_BYTE, (rank + d) % size);
        tuned_recv(cx, NULL, 0, MPI_BYTE, (rank - d + size) % size);
        tuned_round(cx);
    }
    return cx->err;
}

/* Recursive doubling: with pof2 the largest power of two <= p, the ranks
 * r < pof2 exchange a zero-byte message with r ^ mask for mask = 1, 2, ...,
 * pof2/2 (log2 pof2 rounds; afterwards each has heard from all of them).
 * Non-power-of-two: each extra rank r >= pof2 first notifies its partner
 * r - pof2, which waits for it before the exchanges and releases it after
 * them; 2 more latencies. */
int tuned_barrier_recursive_doubling(struct tuned_cx *cx)
{
    int rank = cx->rank, size = cx->size;
    int pof2 = tuned_pof2(size);
    if (size == 1) return cx->err;
    if (rank >= pof2) {
        tuned_send(cx, NULL, 0, MPI_BYTE, rank - pof2);
        tuned_round(cx);
        tuned_recv(cx, NULL, 0, MPI_BYTE, rank - pof2);
        return cx->err;
    }
    int extra = rank + pof2 < size ? rank + pof2 : MPI_PROC_NULL;
    tuned_recv(cx, NULL, 0, MPI_BYTE, extra);
    tuned_round(cx);
    for (int mask = 1; mask < pof2; mask <<= 1) {
        tuned_send(cx, NULL, 0, MPI_BYTE, rank ^ mask);
        tuned_recv(cx, NULL, 0, MPI_BYTE, rank ^ mask);
        tuned_round(cx);
    }
    tuned_send(cx, NULL, 0, MPI_BYTE, extra);
    return cx->err;
}
