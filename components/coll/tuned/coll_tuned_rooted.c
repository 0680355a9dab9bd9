/* coll/tuned: gather and scatter algorithms.
 *
 * Block i of the root's buffer is the one of rank i: rcount (gather) or
 * scount (scatter) elements of the root's datatype at element i * count.
 * Other ranks describe their block with their own (count, datatype) of the
 * same signature, so a message carrying several blocks is written as
 * nblocks * count elements of the local datatype on each side.
 *
 * The binomial algorithms use a tree over relative ranks vr = (r - root)
 * mod p: vr's parent is vr minus its lowest set bit `low`, its subtree is
 * the relative ranks [vr, min(vr + low, p)), its children are vr + m for the
 * powers of two m < low (the root: all m < p).  Subtrees are contiguous in
 * relative order; at the root such a range is contiguous in the buffer
 * unless it wraps past rank p-1, and only then goes through a temporary.
 */
#include "coll_tuned.h"

/* Lowest set bit of vr, or the smallest power of two >= size for vr = 0. */
static inline int tree_low(int vr, int size)
{
    int low = 1;
    while (low < size && !(vr & low)) low <<= 1;
    return low;
}

/* ------------------------------------------------------------------ gather */
/* Linear: the root posts a receive from every rank into its block and copies
 * its own (unless MPI_IN_PLACE); the others send theirs.  1 round; the root
 * handles p-1 messages at once. */
int tuned_gather_linear(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                        void *rbuf, size_t rcount, MPI_Datatype rdt, int root)
{
    int rank = cx->rank, size = cx->size;
    if (rank != root) {
        if (scount * kumi_dt_size(sdt) != 0) tuned_send(cx, sbuf, scount, sdt, root);
        return cx->err;
    }
    if (rcount * kumi_dt_size(rdt) == 0) return cx->err;
    MPI_Aint rext = tuned_ext(rdt);
    for (int k = 1; k < size; k++) {
        int i = (root + k) % size;
        tuned_recv(cx, tuned_at(rbuf, (MPI_Aint)i * (MPI_Aint)rcount, rext), rcount, rdt, i);
    }
    if (sbuf != MPI_IN_PLACE)
        tuned_copy(cx, sbuf, scount, sdt, tuned_at(rbuf, (MPI_Aint)root * (MPI_Aint)rcount, rext),
                   rcount, rdt);
    return cx->err;
}

/* Binomial: along the tree above, each subtree's blocks flow up as one
 * message.  A non-root rank with children gathers its block and its
 * children's subtrees in a temporary (relative rank order), then sends it
 * to its parent; a leaf sends its block.  The root receives each child's
 * subtree straight into its place in rbuf, or, for the one range that wraps
 * past rank p-1, into a temporary that it then copies out in two parts.
 * ceil(log2 p) steps; each block travels up to log2 p hops. */
int tuned_gather_binomial(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                          void *rbuf, size_t rcount, MPI_Datatype rdt, int root)
{
    int rank = cx->rank, size = cx->size;
    int vr = (rank - root + size) % size, low = tree_low(vr, size);

    if (vr) {
        if (scount * kumi_dt_size(sdt) == 0) return cx->err;
        int parent = (vr - low + root) % size;
        int n = vr + low < size ? low : size - vr;           /* subtree size */
        if (n == 1) {
            tuned_send(cx, sbuf, scount, sdt, parent);
            return cx->err;
        }
        MPI_Aint sext = tuned_ext(sdt);
        char *tmp = tuned_tmp(cx, (size_t)n * scount, sdt);
        if (!tmp) return cx->err;
        tuned_copy(cx, sbuf, scount, sdt, tmp, scount, sdt);
        for (int m = 1; m < low && vr + m < size; m <<= 1) {
            int cn = vr + 2 * m < size ? m : size - vr - m;
            tuned_recv(cx, tuned_at(tmp, (MPI_Aint)m * (MPI_Aint)scount, sext), (size_t)cn * scount,
                       sdt, (vr + m + root) % size);
        }
        tuned_round(cx);
        tuned_send(cx, tmp, (size_t)n * scount, sdt, parent);
        return cx->err;
    }

    /* the root */
    if (rcount * kumi_dt_size(rdt) == 0) return cx->err;
    MPI_Aint rext = tuned_ext(rdt), bext = (MPI_Aint)rcount * rext;
    char *wrap = NULL;
    int wstart = 0, wn = 0;
    for (int m = 1; m < size; m <<= 1) {
        int cn = 2 * m < size ? m : size - m;
        int start = (root + m) % size;
        char *dst;
        if (start + cn <= size) {
            dst = tuned_at(rbuf, start, bext);
        } else {
            wrap = tuned_tmp(cx, (size_t)cn * rcount, rdt);
            if (!wrap) return cx->err;
            wstart = start;
            wn = cn;
            dst = wrap;
        }
        tuned_recv(cx, dst, (size_t)cn * rcount, rdt, start);
    }
    if (sbuf != MPI_IN_PLACE)
        tuned_copy(cx, sbuf, scount, sdt, tuned_at(rbuf, root, bext), rcount, rdt);
    if (wrap) {
        int first = size - wstart;                            /* blocks before the wrap */
        tuned_round(cx);
        tuned_copy(cx, wrap, (size_t)first * rcount, rdt, tuned_at(rbuf, wstart, bext),
                   (size_t)first * rcount, rdt);
        tuned_copy(cx, tuned_at(wrap, first, bext), (size_t)(wn - first) * rcount, rdt, rbuf,
                   (size_t)(wn - first) * rcount, rdt);
    }
    return cx->err;
}

/* ----------------------------------------------------------------- scatter */
/* Linear: the root sends every rank its block in one round and copies its
 * own (unless rbuf is MPI_IN_PLACE); the others receive.  1 round; the root
 * handles p-1 messages at once. */
int tuned_scatter_linear(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                         void *rbuf, size_t rcount, MPI_Datatype rdt, int root)
{
    int rank = cx->rank, size = cx->size;
    if (rank != root) {
        if (rcount * kumi_dt_size(rdt) != 0) tuned_recv(cx, rbuf, rcount, rdt, root);
        return cx->err;
    }
    if (scount * kumi_dt_size(sdt) == 0) return cx->err;
    MPI_Aint sext = tuned_ext(sdt);
    for (int k = 1; k < size; k++) {
        int i = (root + k) % size;
        tuned_send(cx, tuned_at(sbuf, (MPI_Aint)i * (MPI_Aint)scount, sext), scount, sdt, i);
    }
    if (rbuf != MPI_IN_PLACE)
        tuned_copy(cx, tuned_at(sbuf, (MPI_Aint)root * (MPI_Aint)scount, sext), scount, sdt, rbuf,
                   rcount, rdt);
    return cx->err;
}

/* Binomial: the reverse of the binomial gather.  The root sends each child
 * its subtree's blocks as one message (straight from sbuf, or packed into a
 * temporary for the range that wraps past rank p-1); a non-root rank with
 * children receives its subtree's blocks into a temporary, keeps the first
 * and passes the children's ranges on; a leaf receives into rbuf.
 * ceil(log2 p) steps. */
int tuned_scatter_binomial(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                           void *rbuf, size_t rcount, MPI_Datatype rdt, int root)
{
    int rank = cx->rank, size = cx->size;
    int vr = (rank - root + size) % size, low = tree_low(vr, size);

    if (vr) {
        if (rcount * kumi_dt_size(rdt) == 0) return cx->err;
        int parent = (vr - low + root) % size;
        int n = vr + low < size ? low : size - vr;
        if (n == 1) {
            tuned_recv(cx, rbuf, rcount, rdt, parent);
            return cx->err;
        }
        MPI_Aint rext = tuned_ext(rdt);
        char *tmp = tuned_tmp(cx, (size_t)n * rcount, rdt);
        if (!tmp) return cx->err;
        tuned_recv(cx, tmp, (size_t)n * rcount, rdt, parent);
        tuned_round(cx);
        for (int m = low >> 1; m >= 1; m >>= 1) {
            if (vr + m >= size) continue;
            int cn = vr + 2 * m < size ? m : size - vr - m;
            tuned_send(cx, tuned_at(tmp, (MPI_Aint)m * (MPI_Aint)rcount, rext), (size_t)cn * rcount,
                       rdt, (vr + m + root) % size);
        }
        tuned_copy(cx, tmp, rcount, rdt, rbuf, rcount, rdt);
        return cx->err;
    }

    /* the root: pack the wrapping range first if there is one */
    if (scount * kumi_dt_size(sdt) == 0) return cx->err;
    MPI_Aint sext = tuned_ext(sdt), bext = (MPI_Aint)scount * sext;
    char *wrap = NULL;
    int wm = 0;
    for (int m = 1; m < size; m <<= 1) {
        int cn = 2 * m < size ? m : size - m;
        int start = (root + m) % size;
        if (start + cn <= size) continue;
        int first = size - start;
        wrap = tuned_tmp(cx, (size_t)cn * scount, sdt);
        if (!wrap) return cx->err;
        wm = m;
        tuned_copy(cx, tuned_at(sbuf, start, bext), (size_t)first * scount, sdt, wrap,
                   (size_t)first * scount, sdt);
        tuned_copy(cx, sbuf, (size_t)(cn - first) * scount, sdt, tuned_at(wrap, first, bext),
                   (size_t)(cn - first) * scount, sdt);
        tuned_round(cx);
    }
    for (int m = tree_low(0, size) >> 1; m >= 1; m >>= 1) {
        int cn = 2 * m < size ? m : size - m;
        int start = (root + m) % size;
        const char *src = m == wm ? wrap : tuned_at(sbuf, start, bext);
        tuned_send(cx, src, (size_t)cn * scount, sdt, start);
    }
    if (rbuf != MPI_IN_PLACE)
        tuned_copy(cx, tuned_at(sbuf, root, bext), scount, sdt, rbuf, rcount, rdt);
    return cx->err;
}
