/* coll/tuned: reduce and allreduce algorithms, written as rounds against
 * the tuned_cx interface (coll_tuned.h).
 *
 * Reductions compute x0 op x1 op ... op x(p-1): tuned_calc(in, inout)
 * computes inout = in op inout, so `in` always holds the lower ranks' part.
 * An algorithm whose comment names no precondition keeps the rank order and
 * is correct for non-commutative ops.  A count of 0 sends nothing (every
 * rank has the same count, so all agree).  Temporaries come from tuned_tmp
 * (laid out by the datatype's extent); element i of a buffer is
 * tuned_at(buf, i, ext), so derived datatypes work everywhere. */
#include "coll_tuned.h"

#include <stdlib.h>

/* Offset (in elements) of block b when count elements are cut into nblk
 * blocks whose sizes differ by at most one (the larger ones first). */
static size_t tr_blk(size_t count, int nblk, int b)
{
    size_t q = count / (size_t)nblk, r = count % (size_t)nblk;
    return (size_t)b * q + ((size_t)b < r ? (size_t)b : r);
}

/* Offsets of the pof2 blocks of count elements (pof2 + 1 entries, the last
 * is count), malloc'd; NULL after recording MPI_ERR_NO_MEM. */
static size_t *tr_offsets(struct tuned_cx *cx, size_t count, int pof2)
{
    size_t *nd = malloc(sizeof *nd * (size_t)(pof2 + 1));
    if (!nd) {
        tuned_fail(cx, kumi_error(MPI_ERR_NO_MEM, "coll/tuned: out of memory"));
        return NULL;
    }
    for (int b = 0; b <= pof2; b++) nd[b] = tr_blk(count, pof2, b);
    return nd;
}

/* Real rank of new rank nr after the non-power-of-two pre-step (the first
 * 2*rem ranks pair up, the odd rank of each pair stays). */
static int tr_real(int nr, int rem)
{
    return nr < rem ? 2 * nr + 1 : nr + rem;
}

/* New rank of a real rank, -1 for an even rank of the pre-step. */
static int tr_new(int r, int rem)
{
    if (r < 2 * rem) return (r & 1) ? r / 2 : -1;
    return r - rem;
}

/* ------------------------------------------------------------ binomial */
/* Binomial reduction of count (> 0) elements of `in` towards the rank
 * `top` (virtual rank 0; top != 0 only for a commutative op, since the
 * tree combines ranges of virtual ranks).  Virtual rank v (v & mask == 0)
 * holds the reduction of [v, v+mask) and receives that of [v+mask, v+2mask)
 * from its child v+mask: acc op received keeps the order.  Round i receives
 * child i while child i-1's data is combined, so three rotating temporaries
 * suffice (the buffer received into is written by its CALC, the one before
 * is read by it).  dst (NULL, or a buffer that does not overlap in): where
 * the top may leave its result (it receives its last child there).
 * Returns, at the top, the buffer holding the result (in when p == 1);
 * elsewhere NULL (this rank's partial went to its parent).  Ends with a
 * round.  log p rounds of count elements. */
static const char *tr_binomial(struct tuned_cx *cx, const void *in, void *dst, size_t count,
                               MPI_Datatype dt, MPI_Op op, int top)
{
    int p = cx->size, vr = (cx->rank - top + p) % p;
    int nch = 0, mask;
    for (mask = 1; mask < p && !(vr & mask); mask <<= 1)
        if (vr + mask < p) nch++;
    /* children: vr + 2^i for i = 0 .. nch-1 (they are the first masks) */
    const char *acc = in;
    char *b[3] = { NULL, NULL, NULL }, *prev = NULL;
    for (int i = 0; i <= nch; i++) {
        char *cur = NULL;
        if (i < nch) {
            if (i == nch - 1 && dst) {
                cur = dst;
            } else {
                if (!b[i % 3] && !(b[i % 3] = tuned_tmp(cx, count, dt))) return NULL;
                cur = b[i % 3];
            }
            tuned_recv(cx, cur, count, dt, (vr + (1 << i) + top) % p);
        }
        if (prev) {
            tuned_calc(cx, acc, prev, count, dt, op);   /* prev = acc op child */
            acc = prev;
        }
        tuned_round(cx);
        prev = cur;
    }
    if (vr == 0) return acc;
    tuned_send(cx, acc, count, dt, (vr - mask + top) % p);
    tuned_round(cx);
    return NULL;
}

/* Binomial broadcast of buf from rank 0 (children of r: r + 2^i below the
 * lowest set bit of r), two rounds per rank: receive, then send to every
 * child at once. */
static void tr_bcast0(struct tuned_cx *cx, void *buf, size_t count, MPI_Datatype dt)
{
    int p = cx->size, r = cx->rank, mask = 1;
    while (mask < p && !(r & mask)) mask <<= 1;
    if (r) {
        tuned_recv(cx, buf, count, dt, r - mask);
        tuned_round(cx);
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (r + mask < p) tuned_send(cx, buf, count, dt, r + mask);
    tuned_round(cx);
}

/* ----------------------------------------------------------- reduce */
/* Linear reduce: every rank sends its vector to the root in round 0.  The
 * root combines from the top down, acc = x(i) op acc for i = p-2 .. 0
 * (order kept: x(i) is the lower part): round s receives x(i) into one of
 * two temporaries while x(i+1), received the round before, is combined
 * into acc (the root's own x is combined from its input, with no
 * message).  acc is rbuf (a temporary in place).  p rounds at the root,
 * (p-1) * count elements into it. */
int tuned_reduce_linear(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                        MPI_Datatype dt, MPI_Op op, int root)
{
    int p = cx->size;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;

    if (count == 0) return cx->err;
    if (cx->rank != root) {
        tuned_send(cx, in, count, dt, root);
        return cx->err;
    }
    if (p == 1) {
        tuned_copy(cx, in, count, dt, rbuf, count, dt);
        return cx->err;
    }
    char *acc = sbuf == MPI_IN_PLACE ? tuned_tmp(cx, count, dt) : rbuf;
    char *t[2] = { NULL, NULL };
    if (!acc) return cx->err;
    if (p - 1 == root) tuned_copy(cx, in, count, dt, acc, count, dt);
    else tuned_recv(cx, acc, count, dt, p - 1);
    tuned_round(cx);

    const void *prev = NULL;   /* contribution received last round, to combine now */
    int slot = 0;
    for (int i = p - 2; i >= -1; i--) {
        const void *cur = NULL;
        if (i == root) {
            cur = in;
        } else if (i >= 0) {
            if (!t[slot] && !(t[slot] = tuned_tmp(cx, count, dt))) return cx->err;
            tuned_recv(cx, t[slot], count, dt, i);
            cur = t[slot];
            slot ^= 1;
        }
        if (prev) tuned_calc(cx, prev, acc, count, dt, op);    /* acc = x(i+1) op acc */
        tuned_round(cx);
        prev = cur;
    }
    if (acc != rbuf) tuned_copy(cx, acc, count, dt, rbuf, count, dt);
    return cx->err;
}

/* Binomial reduce (see tr_binomial): over contiguous ranges of ranks
 * towards rank 0, which then sends the result to the root (order kept, any
 * op); for a commutative op the tree is rooted at the root itself.  The
 * root in place keeps its input in rbuf until the result arrives.
 * log p rounds of count elements (+1 for root != 0, non-commutative). */
int tuned_reduce_binomial(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                          MPI_Datatype dt, MPI_Op op, int root)
{
    int rank = cx->rank;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    int top = kumi_op_commutative(op) ? root : 0;

    if (count == 0) return cx->err;
    void *dst = rank == top && rank == root && sbuf != MPI_IN_PLACE ? rbuf : NULL;
    const char *acc = tr_binomial(cx, in, dst, count, dt, op, top);
    if (cx->err) return cx->err;
    if (rank == top) {
        if (top == root) tuned_copy(cx, acc, count, dt, rbuf, count, dt);
        else tuned_send(cx, acc, count, dt, root);
    } else if (rank == root) {
        tuned_recv(cx, rbuf, count, dt, top);
    }
    return cx->err;
}

/* Pipelined chain reduce: the vector is cut into segments of
 * cx->segsize bytes; rank p-1 sends its segments down to p-2, and every
 * other rank r receives segment j of x(r+1) op ... op x(p-1) from r+1,
 * computes x(r) op partial (order kept) and passes it to r-1: in round j a
 * rank receives segment j, combines segment j-1 and sends segment j-2
 * (three rotating segment buffers).  Rank 0 combines into rbuf (into a
 * temporary, in place, copied segment by segment; into a temporary when
 * root != 0, which it then sends to the root in one message, received after
 * the root's own part of the chain).  About nseg + 2p rounds; every link
 * carries count elements. */
int tuned_reduce_pipeline(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                          MPI_Datatype dt, MPI_Op op, int root)
{
    int p = cx->size, r = cx->rank;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    MPI_Aint ext = tuned_ext(dt);

    if (count == 0) return cx->err;
    if (p == 1) {
        tuned_copy(cx, in, count, dt, rbuf, count, dt);
        return cx->err;
    }
    size_t dsize = kumi_dt_size(dt);
    size_t seg = dsize && cx->segsize ? cx->segsize / dsize : count;
    if (seg == 0) seg = 1;
    if (seg > count) seg = count;
    size_t nseg = (count + seg - 1) / seg;

    if (r == p - 1) {                    /* the chain's start: its own segments */
        for (size_t j = 0; j < nseg; j++) {
            size_t n = j == nseg - 1 ? count - j * seg : seg;
            tuned_send(cx, tuned_at(in, (MPI_Aint)(j * seg), ext), n, dt, r - 1);
            tuned_round(cx);
        }
    } else {
        /* where segment j is received and combined: a full buffer (full)
         * or three rotating segment buffers; then sent to r-1 (r > 0), or
         * copied to rbuf (copyout) */
        char *full = NULL, *b[3] = { NULL, NULL, NULL };
        int copyout = 0;
        if (r == 0 && root == 0 && sbuf != MPI_IN_PLACE) {
            full = rbuf;
        } else if (r == 0) {
            full = tuned_tmp(cx, count, dt);
            if (!full) return cx->err;
            copyout = root == 0;
        } else {
            for (int k = 0; k < 3 && (size_t)k < nseg; k++)
                if (!(b[k] = tuned_tmp(cx, seg, dt))) return cx->err;
        }
        for (size_t j = 0; j < nseg + 2; j++) {
            if (j < nseg) {                              /* receive segment j */
                size_t n = j == nseg - 1 ? count - j * seg : seg;
                char *w = full ? tuned_at(full, (MPI_Aint)(j * seg), ext) : b[j % 3];
                tuned_recv(cx, w, n, dt, r + 1);
            }
            if (j >= 1 && j - 1 < nseg) {                /* combine segment j-1 */
                size_t k = j - 1, n = k == nseg - 1 ? count - k * seg : seg;
                char *w = full ? tuned_at(full, (MPI_Aint)(k * seg), ext) : b[k % 3];
                tuned_calc(cx, tuned_at(in, (MPI_Aint)(k * seg), ext), w, n, dt, op);
            }
            if (j >= 2 && (r > 0 || copyout)) {          /* pass segment j-2 on */
                size_t k = j - 2, n = k == nseg - 1 ? count - k * seg : seg;
                if (r > 0)
                    tuned_send(cx, b[k % 3], n, dt, r - 1);
                else
                    tuned_copy(cx, tuned_at(full, (MPI_Aint)(k * seg), ext), n, dt,
                               tuned_at(rbuf, (MPI_Aint)(k * seg), ext), n, dt);
            }
            tuned_round(cx);
        }
        if (r == 0 && root != 0) tuned_send(cx, full, count, dt, root);
    }
    if (r == root && root != 0) tuned_recv(cx, rbuf, count, dt, 0);
    return cx->err;
}

/* Rabenseifner's reduce.  PRECONDITION: commutative op (any count: blocks
 * may be empty).  Reduce-scatter by recursive halving
 * (tuned_rs_halving: pof2 blocks, new rank nr ends with block nr), then a
 * binomial gather of the blocks towards the root's new rank (XOR-relabelled
 * so that the root is its top; the windows stay contiguous): every rank
 * posts the receives of its children's windows at once, then sends its
 * window to its parent.  If the root is an even rank of the pre-step, its
 * partner (root+1) gathers and sends it the result.  About 2 log p rounds,
 * 2 count elements per rank. */
int tuned_reduce_rabenseifner(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                              MPI_Datatype dt, MPI_Op op, int root)
{
    int p = cx->size, rank = cx->rank;
    int pof2 = tuned_pof2(p), rem = p - pof2;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    MPI_Aint ext = tuned_ext(dt);

    if (count == 0) return cx->err;
    if (p == 1) {
        tuned_copy(cx, in, count, dt, rbuf, count, dt);
        return cx->err;
    }
    size_t *nd = tr_offsets(cx, count, pof2);
    if (!nd) return cx->err;

    char *acc = rank == root && sbuf != MPI_IN_PLACE ? rbuf : NULL;
    if (tr_new(rank, rem) >= 0 && !acc) acc = tuned_tmp(cx, count, dt);
    int nr = cx->err ? -1 : tuned_rs_halving(cx, in, acc, nd, dt, op);
    int newroot = root < 2 * rem ? root / 2 : root - rem, top = tr_real(newroot, rem);

    if (nr >= 0 && !cx->err) {
        int vr = nr ^ newroot, mask;
        for (mask = 1; mask < pof2 && !(vr & mask); mask <<= 1) {
            int lo = (nr ^ mask) & ~(mask - 1);          /* the child's window */
            tuned_recv(cx, tuned_at(acc, (MPI_Aint)nd[lo], ext), nd[lo + mask] - nd[lo], dt,
                       tr_real(nr ^ mask, rem));
        }
        tuned_round(cx);
        if (mask < pof2) {
            int lo = nr & ~(mask - 1);
            tuned_send(cx, tuned_at(acc, (MPI_Aint)nd[lo], ext), nd[lo + mask] - nd[lo], dt,
                       tr_real(nr ^ mask, rem));
            tuned_round(cx);
        }
    }
    free(nd);
    if (rank == top) {
        if (top == root) tuned_copy(cx, acc, count, dt, rbuf, count, dt);
        else tuned_send(cx, acc, count, dt, root);
    } else if (rank == root) {
        tuned_recv(cx, rbuf, count, dt, top);
    }
    return cx->err;
}

/* ------------------------------------------------- reduce-scatter core */
/* Rabenseifner's first phase, shared by reduce, allreduce and
 * reduce_scatter.  The vector (nd[pof2] elements) is cut into pof2 blocks,
 * block i = elements [nd[i], nd[i+1]).
 * Pre-step (p not a power of two, rem = p - pof2): among the first 2*rem
 * ranks each even rank sends its whole input to the next (odd) rank, which
 * combines the two into acc and becomes new rank r/2; the even ranks sit
 * out (-1).  Ranks >= 2*rem become r - rem.
 * Recursive halving: at step mask = pof2/2 .. 1 new rank nr exchanges with
 * nr ^ mask: it keeps the half of its window of blocks on its side of the
 * mask bit (the lower half if the bit is 0), sends the other half and
 * combines what it receives into acc.  At the end nr holds block nr of the
 * reduction of every rank in acc.  PRECONDITION: commutative op (partials
 * are combined in no particular order).
 * acc: nd[pof2] elements; acc == in is allowed (then received data goes
 * through a temporary; otherwise the first step receives straight into acc
 * and combines it with the input).  Ends with a round.  Returns the new
 * rank (-1 for the even ranks of the pre-step). */
int tuned_rs_halving(struct tuned_cx *cx, const void *in, char *acc, const size_t *nd,
                     MPI_Datatype dt, MPI_Op op)
{
    int p = cx->size, r = cx->rank, pof2 = tuned_pof2(p), rem = p - pof2;
    int nr = tr_new(r, rem);
    size_t count = nd[pof2];
    MPI_Aint ext = tuned_ext(dt);
    const char *src = in;        /* what this rank holds so far: its input, or acc */
    char *tmp = NULL;

    if (nr < 0) {
        tuned_send(cx, in, count, dt, r + 1);
        tuned_round(cx);
        return -1;
    }
    /* temporary: the largest half kept, or the whole vector of the pair */
    size_t need = 0;
    for (int mask = pof2 / 2, lo = 0, hi = pof2; mask > 0; mask >>= 1) {
        int mid = lo + mask;
        if (nr & mask) lo = mid; else hi = mid;
        if (nd[hi] - nd[lo] > need) need = nd[hi] - nd[lo];
    }
    if (r < 2 * rem && acc == in && count > need) need = count;
    if (need && !(tmp = tuned_tmp(cx, need, dt))) return nr;

    if (r < 2 * rem) {                                   /* odd rank of a pair */
        char *into = acc == in ? tmp : acc;
        tuned_recv(cx, into, count, dt, r - 1);
        tuned_round(cx);
        if (acc == in) tuned_calc(cx, tmp, acc, count, dt, op);
        else tuned_calc(cx, in, acc, count, dt, op);
        tuned_round(cx);
        src = acc;
    }
    for (int mask = pof2 / 2, lo = 0, hi = pof2; mask > 0; mask >>= 1) {
        int mid = lo + mask, klo, khi, slo, shi;
        if (nr & mask) { klo = mid; khi = hi; slo = lo; shi = mid; }
        else { klo = lo; khi = mid; slo = mid; shi = hi; }
        int peer = tr_real(nr ^ mask, rem);
        size_t kn = nd[khi] - nd[klo];
        char *keep = tuned_at(acc, (MPI_Aint)nd[klo], ext);
        tuned_send(cx, tuned_at(src, (MPI_Aint)nd[slo], ext), nd[shi] - nd[slo], dt, peer);
        if (src == acc) {
            tuned_recv(cx, tmp, kn, dt, peer);
            tuned_round(cx);
            tuned_calc(cx, tmp, keep, kn, dt, op);
        } else {
            tuned_recv(cx, keep, kn, dt, peer);
            tuned_round(cx);
            tuned_calc(cx, tuned_at(in, (MPI_Aint)nd[klo], ext), keep, kn, dt, op);
        }
        tuned_round(cx);
        src = acc;
        lo = klo;
        hi = khi;
    }
    return nr;
}

/* -------------------------------------------------------- allreduce */
/* Allreduce as binomial reduce to rank 0 (order kept, any op) followed by
 * a binomial broadcast from rank 0.  2 log p rounds of count elements. */
int tuned_allreduce_reduce_bcast(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                                 MPI_Datatype dt, MPI_Op op)
{
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;

    if (count == 0) return cx->err;
    void *dst = cx->rank == 0 && sbuf != MPI_IN_PLACE ? rbuf : NULL;
    const char *acc = tr_binomial(cx, in, dst, count, dt, op, 0);
    if (cx->err) return cx->err;
    if (cx->rank == 0 && acc != rbuf) {
        tuned_copy(cx, acc, count, dt, rbuf, count, dt);
        tuned_round(cx);
    }
    if (cx->size > 1) tr_bcast0(cx, rbuf, count, dt);
    return cx->err;
}

/* Recursive doubling allreduce (any op).  Pre-step for p not a power of
 * two: among the first 2*rem ranks the even rank sends its vector to the
 * odd one, which computes x(r-1) op x(r) and stands for both; at the end it
 * sends them the result.  Then log pof2 steps: new rank nr exchanges its
 * whole partial with nr ^ mask; both hold contiguous ranges of ranks, and
 * the lower range's data is `in` of the CALC (the result lands in the
 * received buffer when the partner is higher; two buffers swap roles).
 * log p (+2) rounds of count elements. */
int tuned_allreduce_recursive_doubling(struct tuned_cx *cx, const void *sbuf, void *rbuf,
                                       size_t count, MPI_Datatype dt, MPI_Op op)
{
    int p = cx->size, r = cx->rank, pof2 = tuned_pof2(p), rem = p - pof2;
    int nr = tr_new(r, rem);
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;

    if (count == 0) return cx->err;
    if (p == 1) {
        tuned_copy(cx, in, count, dt, rbuf, count, dt);
        return cx->err;
    }
    if (nr < 0) {                            /* even rank of the pre-step */
        tuned_send(cx, in, count, dt, r + 1);
        tuned_round(cx);
        tuned_recv(cx, rbuf, count, dt, r + 1);
        return cx->err;
    }
    char *tmp = tuned_tmp(cx, count, dt);
    if (!tmp) return cx->err;
    const char *src = in;        /* to send: the input until rbuf holds the partial */
    char *acc = rbuf, *other = tmp;
    /* Out of place, a rank whose first partner is higher (new rank even, no pre-step)
     * receives it straight into rbuf and computes rbuf = in op received: no copy of the
     * input; the others start from a copy of it in rbuf, made with the first messages. */
    int direct = sbuf != MPI_IN_PLACE && r >= 2 * rem && !(nr & 1);
    if (!direct) tuned_copy(cx, in, count, dt, rbuf, count, dt);
    if (r < 2 * rem) {
        tuned_recv(cx, tmp, count, dt, r - 1);
        tuned_round(cx);
        tuned_calc(cx, tmp, rbuf, count, dt, op);        /* x(r-1) op x(r) */
        tuned_round(cx);
        src = rbuf;
    }
    for (int mask = 1; mask < pof2; mask <<= 1) {
        int pnr = nr ^ mask, peer = tr_real(pnr, rem);
        tuned_send(cx, src, count, dt, peer);
        tuned_recv(cx, direct && mask == 1 ? rbuf : other, count, dt, peer);
        tuned_round(cx);
        if (direct && mask == 1) {
            tuned_calc(cx, in, rbuf, count, dt, op);     /* rbuf = in op higher */
        } else if (pnr < nr) {
            tuned_calc(cx, other, acc, count, dt, op);   /* acc = lower op acc */
        } else {
            tuned_calc(cx, acc, other, count, dt, op);   /* other = acc op higher */
            char *t = acc; acc = other; other = t;
        }
        tuned_round(cx);
        src = acc;
    }
    if (acc != rbuf) tuned_copy(cx, acc, count, dt, rbuf, count, dt);
    if (r < 2 * rem) tuned_send(cx, acc, count, dt, r - 1);
    return cx->err;
}

/* Rabenseifner's allreduce.  PRECONDITION: commutative op (any count:
 * blocks may be empty).  Reduce-scatter by recursive halving (tuned_rs_halving, with its
 * non-power-of-two pre-step), then allgather by recursive doubling: at step
 * mask = 1 .. pof2/2 new rank nr sends its window of blocks (aligned on
 * mask) to nr ^ mask and receives the partner's window straight into rbuf;
 * finally the odd ranks of the pre-step send the result to their even
 * partners.  2 log p rounds, about 2 count elements per rank. */
int tuned_allreduce_rabenseifner(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                                 MPI_Datatype dt, MPI_Op op)
{
    int p = cx->size, r = cx->rank, pof2 = tuned_pof2(p), rem = p - pof2;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    MPI_Aint ext = tuned_ext(dt);

    if (count == 0) return cx->err;
    if (p == 1) {
        tuned_copy(cx, in, count, dt, rbuf, count, dt);
        return cx->err;
    }
    size_t *nd = tr_offsets(cx, count, pof2);
    if (!nd) return cx->err;

    int nr = tuned_rs_halving(cx, in, rbuf, nd, dt, op);
    if (nr >= 0 && !cx->err) {
        for (int mask = 1; mask < pof2; mask <<= 1) {
            int peer = tr_real(nr ^ mask, rem);
            int mine = nr & ~(mask - 1), theirs = (nr ^ mask) & ~(mask - 1);
            tuned_send(cx, tuned_at(rbuf, (MPI_Aint)nd[mine], ext), nd[mine + mask] - nd[mine],
                       dt, peer);
            tuned_recv(cx, tuned_at(rbuf, (MPI_Aint)nd[theirs], ext),
                       nd[theirs + mask] - nd[theirs], dt, peer);
            tuned_round(cx);
        }
    }
    free(nd);
    if (r < 2 * rem) {
        if (nr < 0) tuned_recv(cx, rbuf, count, dt, r + 1);
        else tuned_send(cx, rbuf, count, dt, r - 1);
    }
    return cx->err;
}

/* Ring allreduce.  PRECONDITION: commutative op.  The vector is cut into p
 * chunks (sizes differ by at most one; empty ones when count < p, which
 * carry no message).  Reduce-scatter, p-1 rounds: in round k rank r sends
 * chunk r-k to r+1 and receives chunk r-k-1 from r-1, then adds its own
 * part of it (so rank r ends with chunk r+1 complete).  Allgather, p-1
 * rounds: rank r sends chunk r+1-k and receives chunk r-k into rbuf.
 * 3(p-1) rounds, 2 count (p-1)/p elements per rank. */
int tuned_allreduce_ring(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                         MPI_Datatype dt, MPI_Op op)
{
    int p = cx->size, r = cx->rank;
    int next = (r + 1) % p, prev = (r - 1 + p) % p;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    MPI_Aint ext = tuned_ext(dt);

    if (count == 0) return cx->err;
    if (p == 1) {
        tuned_copy(cx, in, count, dt, rbuf, count, dt);
        return cx->err;
    }
    /* In place, the chunks received go through a temporary and are added to rbuf.  Out of
     * place the input is not copied into rbuf: a chunk received goes straight into rbuf and
     * the CALC adds the rank's input to it there (rbuf = own op received, as
     * tuned_rs_halving's; commutative); the rank's own chunk r of rbuf is first written by the
     * allgather.  Round 0 sends from the input (rbuf holds nothing yet). */
    char *tmp = NULL;
    if (in == rbuf && !(tmp = tuned_tmp(cx, tr_blk(count, p, 1), dt)))    /* the largest chunk */
        return cx->err;
    for (int k = 0; k < p - 1; k++) {
        int sc = ((r - k) % p + p) % p, rc = ((r - k - 1) % p + p) % p;
        size_t so = tr_blk(count, p, sc), sn = tr_blk(count, p, sc + 1) - so;
        size_t ro = tr_blk(count, p, rc), rn = tr_blk(count, p, rc + 1) - ro;
        char *rat = tuned_at(rbuf, (MPI_Aint)ro, ext);
        if (sn) tuned_send(cx, tuned_at(k == 0 ? in : rbuf, (MPI_Aint)so, ext), sn, dt, next);
        if (rn) tuned_recv(cx, tmp ? tmp : rat, rn, dt, prev);
        tuned_round(cx);
        if (tmp) tuned_calc(cx, tmp, rat, rn, dt, op);
        else tuned_calc(cx, tuned_at(in, (MPI_Aint)ro, ext), rat, rn, dt, op);
        tuned_round(cx);
    }
    for (int k = 0; k < p - 1; k++) {
        int sc = ((r + 1 - k) % p + p) % p, rc = ((r - k) % p + p) % p;
        size_t so = tr_blk(count, p, sc), sn = tr_blk(count, p, sc + 1) - so;
        size_t ro = tr_blk(count, p, rc), rn = tr_blk(count, p, rc + 1) - ro;
        if (sn) tuned_send(cx, tuned_at(rbuf, (MPI_Aint)so, ext), sn, dt, next);
        if (rn) tuned_recv(cx, tuned_at(rbuf, (MPI_Aint)ro, ext), rn, dt, prev);
        tuned_round(cx);
    }
    return cx->err;
}
