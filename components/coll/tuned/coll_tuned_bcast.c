/* coll/tuned: broadcast algorithms.
 *
 * Ranks may describe the buffer with different (count, datatype) pairs of
 * the same type signature, e.g. 2 x MPI_INT contiguous at the root and
 * 2*count MPI_INT elsewhere.  Algorithms that move the whole buffer in each
 * message (linear, binomial) just send (buf, count, dt).  Those that cut it
 * into pieces (pipeline, scatter_allgather) cut the packed byte stream,
 * whose length count * size(dt) is the same on every rank, so that every
 * rank cuts at the same places whatever its datatype: a buffer whose bytes
 * are contiguous and in type-map order is used in place as bytes, any other
 * is packed into (root) or unpacked from (other ranks) a temporary.
 */
#include "coll_tuned.h"

/* Linear: the root sends the buffer to every other rank in one round.
 * 1 round, p-1 messages from the root: O(p) latency at the root; for small
 * messages and few ranks. */
int tuned_bcast_linear(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt, int root)
{
    int rank = cx->rank, size = cx->size;
    if (size == 1 || count * kumi_dt_size(dt) == 0) return cx->err;
    if (rank != root) {
        tuned_recv(cx, buf, count, dt, root);
        return cx->err;
    }
    for (int k = 1; k < size; k++) tuned_send(cx, buf, count, dt, (root + k) % size);
    return cx->err;
}

/* Binomial tree rooted at the root (relative ranks vr = (r - root) mod p):
 * vr receives the buffer from vr minus its lowest set bit, then sends it to
 * vr + m for the powers of two m below that bit (largest subtree first).
 * ceil(log2 p) steps of a full message: good for small messages. */
int tuned_bcast_binomial(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt, int root)
{
    int rank = cx->rank, size = cx->size;
    int vr = (rank - root + size) % size, low = 1;
    if (size == 1 || count * kumi_dt_size(dt) == 0) return cx->err;
    while (low < size && !(vr & low)) low <<= 1;
    if (vr) {
        tuned_recv(cx, buf, count, dt, (vr - low + root) % size);
        tuned_round(cx);
    }
    for (int m = low >> 1; m >= 1; m >>= 1)
        if (vr + m < size) tuned_send(cx, buf, count, dt, (vr + m + root) % size);
    return cx->err;
}

/* The buffer as a byte stream for the segmented algorithms: where the
 * count elements of dt are exactly count * size(dt) bytes in order, the
 * buffer itself (shifted by the true lower bound); otherwise a temporary,
 * which the root fills now (*unpack = 0) and other ranks copy out at the end
 * (*unpack = 1).  NULL on failure. */
static char *bcast_bytes(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt, int root,
                         size_t nbytes, int *unpack)
{
    MPI_Aint tlb, text;
    *unpack = 0;
    if (kumi_dt_contiguous(dt)) {
        kumi_dt_true_extent(dt, &tlb, &text);
        return (char *)buf + tlb;
    }
    char *tmp = tuned_tmp(cx, nbytes, MPI_BYTE);
    if (!tmp) return NULL;
    if (cx->rank == root) {
        tuned_copy(cx, buf, count, dt, tmp, nbytes, MPI_BYTE);
        tuned_round(cx);
    } else {
        *unpack = 1;
    }
    return tmp;
}

/* Pipeline: a chain in relative rank order root -> root+1 -> ... -> root-1
 * carrying the bytes in segments of cx->segsize bytes.  The root sends
 * segment k in its round k (in a schedule: 16 segments a round, below); a
 * middle rank in its round k receives segment k and forwards segment k-1;
 * the last rank receives all segments at once.
 * nseg + p - 2 segment steps: for long messages, where the bandwidth of
 * every link is used at the same time. */
#define TUNED_PIPE_ROOT_ROUND 16
int tuned_bcast_pipeline(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt, int root)
{
    int rank = cx->rank, size = cx->size;
    int vr = (rank - root + size) % size, unpack;
    size_t nbytes = count * kumi_dt_size(dt);
    if (size == 1 || nbytes == 0) return cx->err;
    size_t seg = cx->segsize ? cx->segsize : nbytes;
    size_t nseg = (nbytes + seg - 1) / seg;
    char *b = bcast_bytes(cx, buf, count, dt, root, nbytes, &unpack);
    if (!b) return cx->err;
    int prev = vr > 0 ? (rank - 1 + size) % size : MPI_PROC_NULL;
    int next = vr < size - 1 ? (rank + 1) % size : MPI_PROC_NULL;
#define SEG_LEN(k) ((k) == nseg - 1 ? nbytes - (k) * seg : seg)

    if (vr == 0) {
        /* In a schedule (MPI_Ibcast) the root's segments depend on nothing
         * but its data: TUNED_PIPE_ROOT_ROUND of them per round, so an engine
         * that moves them itself has them all at once (the io_uring engine
         * writes them in one gathered send; one round per segment let each
         * start only when the one before it had completed: 2 ranks, 1 MiB in
         * 64 KiB segments, waited at once, 260-300 us against 146-172; the
         * thread engine's 256-277 either way, kacc bench, fast rounds). */
        for (size_t k = 0; k < nseg; k++) {
            tuned_send(cx, b + k * seg, SEG_LEN(k), MPI_BYTE, next);
            if (!cx->s || (k + 1) % TUNED_PIPE_ROOT_ROUND == 0 || k + 1 == nseg) tuned_round(cx);
        }
    } else if (next == MPI_PROC_NULL) {
        for (size_t k = 0; k < nseg; k++) tuned_recv(cx, b + k * seg, SEG_LEN(k), MPI_BYTE, prev);
        tuned_round(cx);
    } else {
        for (size_t k = 0; k <= nseg; k++) {
            if (k < nseg) tuned_recv(cx, b + k * seg, SEG_LEN(k), MPI_BYTE, prev);
            if (k > 0) tuned_send(cx, b + (k - 1) * seg, SEG_LEN(k - 1), MPI_BYTE, next);
            tuned_round(cx);
        }
    }
#undef SEG_LEN
    if (unpack) tuned_copy(cx, b, nbytes, MPI_BYTE, buf, count, dt);
    return cx->err;
}

/* Byte offset of chunk j of nbytes cut into chunks of `chunk` bytes. */
static inline size_t chunk_at(size_t j, size_t chunk, size_t nbytes)
{
    size_t o = j * chunk;
    return o < nbytes ? o : nbytes;
}

/* Scatter + allgather (van de Geijn): the bytes are cut into p chunks of
 * ceil(nbytes/p) bytes (the last ones short or empty when nbytes is not a
 * multiple or smaller than p); chunk j belongs to relative rank j.
 * 1. Binomial scatter from the root: relative rank vr receives from its
 *    parent the chunks of its subtree [vr, vr + lowest bit of vr), then
 *    passes on the chunks of its children's subtrees.
 * 2. Ring allgather of the chunks: in round k relative rank vr sends chunk
 *    vr-k to vr+1 and receives chunk vr-k-1 from vr-1 (the root already has
 *    everything: the rank before it sends it nothing).
 * Empty chunks are never sent.  About 2 n (p-1)/p bytes per rank and
 * log2 p + p - 1 steps: for long messages on many ranks. */
int tuned_bcast_scatter_allgather(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt,
                                  int root)
{
    int rank = cx->rank, size = cx->size;
    int vr = (rank - root + size) % size, low = 1, unpack;
    size_t nbytes = count * kumi_dt_size(dt);
    if (size == 1 || nbytes == 0) return cx->err;
    size_t chunk = (nbytes + (size_t)size - 1) / (size_t)size;
    char *b = bcast_bytes(cx, buf, count, dt, root, nbytes, &unpack);
    if (!b) return cx->err;
#define REL(v) (((v) + root) % size)
#define AT(j) chunk_at((size_t)(j), chunk, nbytes)

    /* binomial scatter of the subtrees' chunks */
    while (low < size && !(vr & low)) low <<= 1;
    if (vr) {
        int end = vr + low < size ? vr + low : size;
        size_t lo = AT(vr), hi = AT(end);
        if (hi > lo) tuned_recv(cx, b + lo, hi - lo, MPI_BYTE, REL(vr - low));
        tuned_round(cx);
    }
    for (int m = low >> 1; m >= 1; m >>= 1) {
        if (vr + m >= size) continue;
        int end = vr + 2 * m < size ? vr + 2 * m : size;
        size_t lo = AT(vr + m), hi = AT(end);
        if (hi > lo) tuned_send(cx, b + lo, hi - lo, MPI_BYTE, REL(vr + m));
    }
    tuned_round(cx);

    /* ring allgather */
    int next = vr < size - 1 ? REL(vr + 1) : MPI_PROC_NULL;     /* the root needs nothing */
    int prev = vr > 0 ? REL(vr - 1) : MPI_PROC_NULL;
    for (int k = 0; k < size - 1; k++) {
        int js = (vr - k + size) % size, jr = (vr - k - 1 + size) % size;
        size_t slo = AT(js), shi = AT(js + 1), rlo = AT(jr), rhi = AT(jr + 1);
        if (shi > slo) tuned_send(cx, b + slo, shi - slo, MPI_BYTE, next);
        if (rhi > rlo) tuned_recv(cx, b + rlo, rhi - rlo, MPI_BYTE, prev);
        tuned_round(cx);
    }
#undef REL
#undef AT
    if (unpack) tuned_copy(cx, b, nbytes, MPI_BYTE, buf, count, dt);
    return cx->err;
}
