/* coll/tuned: allgather and allgatherv algorithms.
 *
 * Everything moves in the receive datatype: each rank first puts its own
 * block at its place (unless MPI_IN_PLACE says it is there already), then
 * the algorithms send and receive blocks of rbuf (rcount elements of rdt
 * each, block i at element i * rcount; allgatherv: rcounts[i] elements at
 * displs[i]).  A message of several blocks is nblocks * rcount elements of
 * the local rdt on each side; ranks may use different receive types of the
 * same signature.  Zero-byte blocks are never sent (every rank agrees on
 * which they are: the block sizes in bytes are the same everywhere).
 */
#include "coll_tuned.h"

#include <stdlib.h>

/* Own block into its place in rbuf (not for MPI_IN_PLACE). */
static void own_block(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                      void *dst, size_t rcount, MPI_Datatype rdt)
{
    if (sbuf != MPI_IN_PLACE) tuned_copy(cx, sbuf, scount, sdt, dst, rcount, rdt);
}

/* The own block for the first round that sends it: where sbuf holds it (not
 * MPI_IN_PLACE, as many bytes as a block), that round sends it from sbuf and
 * copies it into its place meanwhile (tuned_copy_late); otherwise it is put
 * in place first and sent from there.  A block sent from rbuf just after the
 * local copy wrote it is read by the peer from this core's cache (at 2 ranks
 * with CMA, 64 KiB: 15.5 us against 8.7 from sbuf).  *buf, *count, *dt: what
 * the first round sends. */
static void own_first(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt, void *dst,
                      size_t rcount, MPI_Datatype rdt, const void **buf, size_t *count, MPI_Datatype *dt)
{
    if (sbuf != MPI_IN_PLACE && scount * kumi_dt_size(sdt) == rcount * kumi_dt_size(rdt)) {
        tuned_copy_late(cx, sbuf, scount, sdt, dst, rcount, rdt);
        *buf = sbuf, *count = scount, *dt = sdt;
        return;
    }
    own_block(cx, sbuf, scount, sdt, dst, rcount, rdt);
    tuned_round(cx);
    *buf = dst, *count = rcount, *dt = rdt;
}

/* An algorithm called outside its precondition (the dispatcher prevents it). */
static int precondition(struct tuned_cx *cx, const char *alg, const char *what)
{
    return tuned_fail(cx, kumi_error(MPI_ERR_INTERN, "coll/tuned: %s needs a process count that is "
                                     "%s, not %d", alg, what, cx->size));
}

/* ---------------------------------------------------------------- allgather */
/* Linear: after placing its block, every rank sends it to every other rank
 * and receives theirs, all in one round (as coll/basic).  p-1 messages each
 * way per rank: for small p. */
int tuned_allgather_linear(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                           void *rbuf, size_t rcount, MPI_Datatype rdt)
{
    int rank = cx->rank, size = cx->size;
    MPI_Aint bext = (MPI_Aint)rcount * tuned_ext(rdt);
    if (rcount * kumi_dt_size(rdt) == 0) return cx->err;
    const void *ob;
    size_t oc;
    MPI_Datatype odt;
    own_first(cx, sbuf, scount, sdt, tuned_at(rbuf, rank, bext), rcount, rdt, &ob, &oc, &odt);
    for (int k = 1; k < size; k++) {
        int src = (rank - k + size) % size;
        tuned_recv(cx, tuned_at(rbuf, src, bext), rcount, rdt, src);
    }
    for (int k = 1; k < size; k++) tuned_send(cx, ob, oc, odt, (rank + k) % size);
    return cx->err;
}

/* Recursive doubling.  PRECONDITION: p is a power of two.  Before the step
 * with distance mask, rank r holds the mask blocks of ranks
 * [r & ~(mask-1), +mask) (contiguous in rbuf); it exchanges them with
 * r ^ mask, which holds the neighbouring range.  log2 p rounds, n (p-1)/p
 * bytes received per rank. */
int tuned_allgather_recursive_doubling(struct tuned_cx *cx, const void *sbuf, size_t scount,
                                       MPI_Datatype sdt, void *rbuf, size_t rcount,
                                       MPI_Datatype rdt)
{
    int rank = cx->rank, size = cx->size;
    MPI_Aint bext = (MPI_Aint)rcount * tuned_ext(rdt);
    if (size & (size - 1))
        return precondition(cx, "allgather recursive_doubling", "a power of two");
    if (rcount * kumi_dt_size(rdt) == 0) return cx->err;
    const void *ob;
    size_t oc;
    MPI_Datatype odt;
    own_first(cx, sbuf, scount, sdt, tuned_at(rbuf, rank, bext), rcount, rdt, &ob, &oc, &odt);
    for (int mask = 1; mask < size; mask <<= 1) {
        int peer = rank ^ mask;
        int mine = rank & ~(mask - 1), theirs = peer & ~(mask - 1);
        if (mask == 1) tuned_send(cx, ob, oc, odt, peer);
        else tuned_send(cx, tuned_at(rbuf, mine, bext), (size_t)mask * rcount, rdt, peer);
        tuned_recv(cx, tuned_at(rbuf, theirs, bext), (size_t)mask * rcount, rdt, peer);
        tuned_round(cx);
    }
    return cx->err;
}

/* Bruck: blocks are gathered in a temporary in rotated order, tmp[i] being
 * the block of rank (r + i) mod p.  tmp[0] is the own block; in the step
 * with distance d = 1, 2, 4, ... rank r sends tmp[0, n) to r - d and
 * receives tmp[d, d + n) from r + d, with n = min(d, p - d).  Finally tmp
 * is rotated into rbuf (two copies; rank 0 works in rbuf directly).
 * ceil(log2 p) rounds for any p, n (p-1)/p bytes received per rank. */
int tuned_allgather_bruck(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                          void *rbuf, size_t rcount, MPI_Datatype rdt)
{
    int rank = cx->rank, size = cx->size;
    MPI_Aint bext = (MPI_Aint)rcount * tuned_ext(rdt);
    if (rcount * kumi_dt_size(rdt) == 0) return cx->err;
    char *tmp = rbuf;
    if (rank != 0) {
        if (!(tmp = tuned_tmp(cx, (size_t)size * rcount, rdt))) return cx->err;
        tuned_copy(cx, sbuf == MPI_IN_PLACE ? tuned_at(rbuf, rank, bext) : sbuf,
                   sbuf == MPI_IN_PLACE ? rcount : scount, sbuf == MPI_IN_PLACE ? rdt : sdt,
                   tmp, rcount, rdt);
    } else {
        own_block(cx, sbuf, scount, sdt, rbuf, rcount, rdt);
    }
    if (size == 1) return cx->err;
    tuned_round(cx);
    for (int d = 1; d < size; d <<= 1) {
        int n = d < size - d ? d : size - d;
        tuned_send(cx, tmp, (size_t)n * rcount, rdt, (rank - d + size) % size);
        tuned_recv(cx, tuned_at(tmp, d, bext), (size_t)n * rcount, rdt, (rank + d) % size);
        tuned_round(cx);
    }
    if (rank != 0) {
        int first = size - rank;                 /* tmp[0, first) are ranks rank .. p-1 */
        tuned_copy(cx, tmp, (size_t)first * rcount, rdt, tuned_at(rbuf, rank, bext),
                   (size_t)first * rcount, rdt);
        tuned_copy(cx, tuned_at(tmp, first, bext), (size_t)rank * rcount, rdt, rbuf,
                   (size_t)rank * rcount, rdt);
    }
    return cx->err;
}

/* Ring: p-1 rounds; in round k rank r sends block (r - k) mod p to r+1 and
 * receives block (r - k - 1) mod p from r-1.  Only neighbours talk:
 * bandwidth-optimal for long messages, p-1 latencies. */
int tuned_allgather_ring(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                         void *rbuf, size_t rcount, MPI_Datatype rdt)
{
    int rank = cx->rank, size = cx->size;
    MPI_Aint bext = (MPI_Aint)rcount * tuned_ext(rdt);
    if (rcount * kumi_dt_size(rdt) == 0) return cx->err;
    const void *ob;
    size_t oc;
    MPI_Datatype odt;
    own_first(cx, sbuf, scount, sdt, tuned_at(rbuf, rank, bext), rcount, rdt, &ob, &oc, &odt);
    int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
    for (int k = 0; k < size - 1; k++) {
        int js = (rank - k + size) % size, jr = (rank - k - 1 + size) % size;
        if (k == 0) tuned_send(cx, ob, oc, odt, next);
        else tuned_send(cx, tuned_at(rbuf, js, bext), rcount, rdt, next);
        tuned_recv(cx, tuned_at(rbuf, jr, bext), rcount, rdt, prev);
        tuned_round(cx);
    }
    return cx->err;
}

/* Neighbor exchange (Chen et al.).  PRECONDITION: p is even.  Ranks form
 * pairs q = (2q, 2q+1) and blocks 2q, 2q+1 form pair block q (contiguous).
 * Step 0: each rank swaps its block with its pair mate, so both hold pair
 * block q.  Steps s = 1 .. p/2-1 alternate between the outer neighbour
 * (odd s: 2q with 2q-1, 2q+1 with 2q+2) and the mate (even s); each rank
 * forwards the pair block it received last and receives a new one:
 *   even rank 2q:  odd s: pair q - (s+1)/2 from 2q-1;  even s: q + s/2 from 2q+1
 *   odd rank 2q+1: odd s: pair q + (s+1)/2 from 2q+2; even s: q - s/2 from 2q
 * (pairs mod p/2).  p/2 rounds, only neighbours talk, n (p-1)/p bytes
 * received per rank. */
int tuned_allgather_neighbor_exchange(struct tuned_cx *cx, const void *sbuf, size_t scount,
                                      MPI_Datatype sdt, void *rbuf, size_t rcount, MPI_Datatype rdt)
{
    int rank = cx->rank, size = cx->size;
    MPI_Aint bext = (MPI_Aint)rcount * tuned_ext(rdt);
    if (size & 1) return precondition(cx, "allgather neighbor_exchange", "even");
    if (rcount * kumi_dt_size(rdt) == 0) return cx->err;
    const void *ob;
    size_t oc;
    MPI_Datatype odt;
    own_first(cx, sbuf, scount, sdt, tuned_at(rbuf, rank, bext), rcount, rdt, &ob, &oc, &odt);
    int half = size / 2, q = rank / 2, odd = rank & 1;
    int mate = rank ^ 1, outer = odd ? (rank + 1) % size : (rank - 1 + size) % size;
    tuned_send(cx, ob, oc, odt, mate);
    tuned_recv(cx, tuned_at(rbuf, mate, bext), rcount, rdt, mate);
    tuned_round(cx);
    int last = q;                                   /* pair block received last */
    for (int s = 1; s < half; s++) {
        int peer = (s & 1) ? outer : mate;
        int dq = (s & 1) ? (s + 1) / 2 : -(s / 2);  /* for an odd rank; the even one mirrors */
        int got = ((odd ? q + dq : q - dq) % half + half) % half;
        tuned_send(cx, tuned_at(rbuf, 2 * last, bext), 2 * rcount, rdt, peer);
        tuned_recv(cx, tuned_at(rbuf, 2 * got, bext), 2 * rcount, rdt, peer);
        tuned_round(cx);
        last = got;
    }
    return cx->err;
}

/* --------------------------------------------------------------- allgatherv */
/* Linear: as the allgather, with per-rank counts and displacements. */
int tuned_allgatherv_linear(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                            void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt)
{
    int rank = cx->rank, size = cx->size;
    MPI_Aint ext = tuned_ext(rdt);
    size_t dsize = kumi_dt_size(rdt);
    char *mine = tuned_at(rbuf, displs[rank], ext);
    own_block(cx, sbuf, scount, sdt, mine, (size_t)rcounts[rank], rdt);
    if (size == 1) return cx->err;
    tuned_round(cx);
    for (int k = 1; k < size; k++) {
        int src = (rank - k + size) % size;
        if ((size_t)rcounts[src] * dsize != 0)
            tuned_recv(cx, tuned_at(rbuf, displs[src], ext), (size_t)rcounts[src], rdt, src);
    }
    if ((size_t)rcounts[rank] * dsize != 0)
        for (int k = 1; k < size; k++)
            tuned_send(cx, mine, (size_t)rcounts[rank], rdt, (rank + k) % size);
    return cx->err;
}

/* Ring: as the allgather ring, with per-rank counts and displacements. */
int tuned_allgatherv_ring(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                          void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt)
{
    int rank = cx->rank, size = cx->size;
    MPI_Aint ext = tuned_ext(rdt);
    size_t dsize = kumi_dt_size(rdt);
    own_block(cx, sbuf, scount, sdt, tuned_at(rbuf, displs[rank], ext), (size_t)rcounts[rank], rdt);
    tuned_round(cx);
    int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
    for (int k = 0; k < size - 1; k++) {
        int js = (rank - k + size) % size, jr = (rank - k - 1 + size) % size;
        if ((size_t)rcounts[js] * dsize != 0)
            tuned_send(cx, tuned_at(rbuf, displs[js], ext), (size_t)rcounts[js], rdt, next);
        if ((size_t)rcounts[jr] * dsize != 0)
            tuned_recv(cx, tuned_at(rbuf, displs[jr], ext), (size_t)rcounts[jr], rdt, prev);
        tuned_round(cx);
    }
    return cx->err;
}

/* Recursive doubling with blocks of different sizes.  PRECONDITION: p is a
 * power of two.  The exchanges of the allgather recursive doubling run on
 * the blocks laid out in rank order without gaps (block i at element
 * off[i] = rcounts[0] + ... + rcounts[i-1]), so that each step's range is
 * one message.  Where displs already describe that layout, rbuf is used
 * directly; otherwise a temporary in that layout receives the own block
 * first and is copied out to the displacements at the end.  log2 p rounds. */
int tuned_allgatherv_recursive_doubling(struct tuned_cx *cx, const void *sbuf, size_t scount,
                                        MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                                        const MPI_Aint displs[], MPI_Datatype rdt)
{
    int rank = cx->rank, size = cx->size;
    MPI_Aint ext = tuned_ext(rdt);
    size_t dsize = kumi_dt_size(rdt);
    if (size & (size - 1))
        return precondition(cx, "allgatherv recursive_doubling", "a power of two");
    size_t *off = malloc(sizeof *off * ((size_t)size + 1));
    if (!off) return tuned_fail(cx, kumi_error(MPI_ERR_NO_MEM, "coll/tuned: out of memory"));
    int packed = 1;
    off[0] = 0;
    for (int i = 0; i < size; i++) {
        off[i + 1] = off[i] + (size_t)rcounts[i];
        if ((MPI_Aint)displs[i] != (MPI_Aint)displs[0] + (MPI_Aint)off[i]) packed = 0;
    }
    char *base = tuned_at(rbuf, displs[0], ext);
    if (!packed && !(base = tuned_tmp(cx, off[size], rdt))) goto out;

    if (packed) {
        own_block(cx, sbuf, scount, sdt, tuned_at(rbuf, displs[rank], ext), (size_t)rcounts[rank],
                  rdt);
    } else {
        const void *src = sbuf == MPI_IN_PLACE ? tuned_at(rbuf, displs[rank], ext) : sbuf;
        tuned_copy(cx, src, sbuf == MPI_IN_PLACE ? (size_t)rcounts[rank] : scount,
                   sbuf == MPI_IN_PLACE ? rdt : sdt, tuned_at(base, (MPI_Aint)off[rank], ext),
                   (size_t)rcounts[rank], rdt);
    }
    tuned_round(cx);
    for (int mask = 1; mask < size; mask <<= 1) {
        int peer = rank ^ mask;
        int mine = rank & ~(mask - 1), theirs = peer & ~(mask - 1);
        size_t ns = off[mine + mask] - off[mine], nr = off[theirs + mask] - off[theirs];
        if (ns * dsize != 0)
            tuned_send(cx, tuned_at(base, (MPI_Aint)off[mine], ext), ns, rdt, peer);
        if (nr * dsize != 0)
            tuned_recv(cx, tuned_at(base, (MPI_Aint)off[theirs], ext), nr, rdt, peer);
        tuned_round(cx);
    }
    if (!packed)
        for (int i = 0; i < size; i++)
            if (i != rank || sbuf != MPI_IN_PLACE)
                tuned_copy(cx, tuned_at(base, (MPI_Aint)off[i], ext), (size_t)rcounts[i], rdt,
                           tuned_at(rbuf, displs[i], ext), (size_t)rcounts[i], rdt);
out:
    free(off);
    return cx->err;
}
