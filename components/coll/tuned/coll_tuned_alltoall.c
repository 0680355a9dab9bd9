/* coll/tuned: alltoall, alltoallv and alltoallw algorithms.
 *
 * Block i of the send side goes to rank i, block i of the receive side
 * comes from rank i.  With MPI_IN_PLACE the send blocks are the receive
 * blocks (same counts, displacements and types): the algorithms first copy
 * them aside into a temporary, since receiving overwrites them.  Ranks may
 * use different datatypes of the same signature; a message is always one
 * whole block (or, in Bruck's algorithm, a set of whole blocks) on both
 * sides.  In the v and w variants zero-byte blocks are never sent (both
 * sides agree on which they are: a block has the same size in bytes on
 * both).
 */
#include "coll_tuned.h"

#include <stdlib.h>

/* ----------------------------------------------------------------- alltoall */
/* What linear and pairwise do first: MPI_IN_PLACE copies rbuf aside whole
 * (it becomes the send side), otherwise the own block is copied (in the
 * first round, once its sends are posted).  Returns 0
 * when nothing more is to be done (no data, an error, in place on 1 rank);
 * *sb and *rb are the send and receive block strides in bytes. */
static int a2a_start(struct tuned_cx *cx, const void **sbuf, size_t *scount, MPI_Datatype *sdt,
                     void *rbuf, size_t rcount, MPI_Datatype rdt, MPI_Aint *sb, MPI_Aint *rb)
{
    int rank = cx->rank, size = cx->size;
    *rb = (MPI_Aint)rcount * tuned_ext(rdt);
    if (rcount * kumi_dt_size(rdt) == 0 || cx->err) return 0;
    if (*sbuf == MPI_IN_PLACE) {
        if (size == 1) return 0;
        char *tmp = tuned_tmp(cx, (size_t)size * rcount, rdt);
        if (!tmp) return 0;
        tuned_copy(cx, rbuf, (size_t)size * rcount, rdt, tmp, (size_t)size * rcount, rdt);
        tuned_round(cx);
        *sbuf = tmp;
        *scount = rcount;
        *sdt = rdt;
        *sb = *rb;
        return 1;
    }
    *sb = (MPI_Aint)*scount * tuned_ext(*sdt);
    /* copied while the first round's messages go (it reads and writes no
     * block they do) */
    tuned_copy_late(cx, tuned_at(*sbuf, rank, *sb), *scount, *sdt, tuned_at(rbuf, rank, *rb), rcount,
                    rdt);
    return 1;
}

/* Linear: every receive and every send is posted in one round (and the own
 * block copied).  MPI_IN_PLACE: rbuf is first copied aside whole.  1 round,
 * p-1 messages each way at once: for small messages. */
int tuned_alltoall_linear(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                          void *rbuf, size_t rcount, MPI_Datatype rdt)
{
    int rank = cx->rank, size = cx->size;
    MPI_Aint sb, rb;
    if (!a2a_start(cx, &sbuf, &scount, &sdt, rbuf, rcount, rdt, &sb, &rb)) return cx->err;
    for (int k = 1; k < size; k++) {
        int src = (rank - k + size) % size;
        tuned_recv(cx, tuned_at(rbuf, src, rb), rcount, rdt, src);
    }
    for (int k = 1; k < size; k++) {
        int dst = (rank + k) % size;
        tuned_send(cx, tuned_at(sbuf, dst, sb), scount, sdt, dst);
    }
    return cx->err;
}

/* Pairwise: the own block is copied, then p-1 rounds; in round k rank r
 * sends its block for r+k and receives the one from r-k (mod p), one
 * message each way at a time.  MPI_IN_PLACE: rbuf is first copied aside.
 * For long messages. */
int tuned_alltoall_pairwise(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                            void *rbuf, size_t rcount, MPI_Datatype rdt)
{
    int rank = cx->rank, size = cx->size;
    MPI_Aint sb, rb;
    if (!a2a_start(cx, &sbuf, &scount, &sdt, rbuf, rcount, rdt, &sb, &rb)) return cx->err;
    for (int k = 1; k < size; k++) {
        int dst = (rank + k) % size, src = (rank - k + size) % size;
        tuned_send(cx, tuned_at(sbuf, dst, sb), scount, sdt, dst);
        tuned_recv(cx, tuned_at(rbuf, src, rb), rcount, rdt, src);
        tuned_round(cx);
    }
    return cx->err;
}

/* Bruck: log2 p exchanges of about n/2 bytes instead of p-1 messages.
 * 1. Local rotation into a temporary: tmp[i] = send block for rank r+i.
 * 2. For d = 1, 2, 4, ... < p: the blocks tmp[i] whose index has bit d set
 *    are packed (tuned_copy) into a send temporary, sent to r+d, and the
 *    same number of blocks received from r-d are unpacked to the same
 *    indices.  A block of index i thus moves i ranks forward in all; at
 *    the end tmp[i] holds the block that rank r-i sent to r.
 * 3. Inverse rotation: rbuf block (r-i) mod p = tmp[i].
 * MPI_IN_PLACE needs nothing more: rbuf is read (1.) before it is written
 * (3.).  ceil(log2 p) message rounds and three local copies of the data
 * per round: for small blocks on many ranks. */
int tuned_alltoall_bruck(struct tuned_cx *cx, const void *sbuf, size_t scount, MPI_Datatype sdt,
                         void *rbuf, size_t rcount, MPI_Datatype rdt)
{
    int rank = cx->rank, size = cx->size;
    MPI_Aint rb = (MPI_Aint)rcount * tuned_ext(rdt);
    if (rcount * kumi_dt_size(rdt) == 0) return cx->err;
    if (sbuf == MPI_IN_PLACE) {
        if (size == 1) return cx->err;
        sbuf = rbuf;
        scount = rcount;
        sdt = rdt;
    }
    MPI_Aint sb = (MPI_Aint)scount * tuned_ext(sdt);
    if (size == 1) {
        tuned_copy(cx, sbuf, scount, sdt, rbuf, rcount, rdt);
        return cx->err;
    }
    int half = size / 2, first = size - rank;
    char *tmp = tuned_tmp(cx, (size_t)size * rcount, rdt);
    char *pk = tuned_tmp(cx, (size_t)half * rcount, rdt);
    char *upk = tuned_tmp(cx, (size_t)half * rcount, rdt);
    if (!tmp || !pk || !upk) return cx->err;

    tuned_copy(cx, tuned_at(sbuf, rank, sb), (size_t)first * scount, sdt, tmp,
               (size_t)first * rcount, rdt);
    tuned_copy(cx, sbuf, (size_t)rank * scount, sdt, tuned_at(tmp, first, rb),
               (size_t)rank * rcount, rdt);
    tuned_round(cx);
    for (int d = 1; d < size; d <<= 1) {
        int n = 0;
        for (int j = d; j < size; j += 2 * d) {             /* runs of indices with bit d */
            int len = d < size - j ? d : size - j;
            tuned_copy(cx, tuned_at(tmp, j, rb), (size_t)len * rcount, rdt, tuned_at(pk, n, rb),
                       (size_t)len * rcount, rdt);
            n += len;
        }
        tuned_round(cx);
        tuned_send(cx, pk, (size_t)n * rcount, rdt, (rank + d) % size);
        tuned_recv(cx, upk, (size_t)n * rcount, rdt, (rank - d + size) % size);
        tuned_round(cx);
        n = 0;
        for (int j = d; j < size; j += 2 * d) {
            int len = d < size - j ? d : size - j;
            tuned_copy(cx, tuned_at(upk, n, rb), (size_t)len * rcount, rdt, tuned_at(tmp, j, rb),
                       (size_t)len * rcount, rdt);
            n += len;
        }
        tuned_round(cx);
    }
    for (int i = 0; i < size; i++)
        tuned_copy(cx, tuned_at(tmp, i, rb), rcount, rdt,
                   tuned_at(rbuf, (rank - i + size) % size, rb), rcount, rdt);
    return cx->err;
}

/* ------------------------------------------------------ alltoallv / alltoallw */
/* The blocks of one side: count, displacement in bytes, datatype. */
struct a2a_side {
    const MPI_Count *count;
    MPI_Aint *disp;
    MPI_Datatype *type;
};

struct a2a {
    struct a2a_side s, r;
    void *mem;
};

static int a2a_nomem(struct tuned_cx *cx)
{
    return tuned_fail(cx, kumi_error(MPI_ERR_NO_MEM, "coll/tuned: out of memory"));
}

/* Describe both sides; displs are in elements of dt (v: sdts == NULL) or in
 * bytes (w).  With MPI_IN_PLACE the send side is left empty (a2a_aside). */
static int a2a_init(struct tuned_cx *cx, struct a2a *x, const void *sbuf, const MPI_Count scounts[],
                    const MPI_Aint sdispls[], MPI_Datatype sdt, const MPI_Datatype sdts[],
                    const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rdt,
                    const MPI_Datatype rdts[])
{
    int size = cx->size;
    int sides = sbuf == MPI_IN_PLACE ? 1 : 2;
    x->mem = malloc((sizeof(MPI_Aint) + sizeof(MPI_Datatype)) * (size_t)size * (size_t)sides);
    if (!x->mem) return a2a_nomem(cx);
    x->r.disp = x->mem;
    x->r.type = (MPI_Datatype *)(x->r.disp + size);
    x->r.count = rcounts;
    MPI_Aint rext = rdts ? 1 : tuned_ext(rdt);
    for (int i = 0; i < size; i++) {
        x->r.disp[i] = (MPI_Aint)rdispls[i] * rext;
        x->r.type[i] = rdts ? rdts[i] : rdt;
    }
    if (sides == 1) {
        x->s = x->r;
        return MPI_SUCCESS;
    }
    x->s.disp = (MPI_Aint *)(x->r.type + size);
    x->s.type = (MPI_Datatype *)(x->s.disp + size);
    x->s.count = scounts;
    MPI_Aint sext = sdts ? 1 : tuned_ext(sdt);
    for (int i = 0; i < size; i++) {
        x->s.disp[i] = (MPI_Aint)sdispls[i] * sext;
        x->s.type[i] = sdts ? sdts[i] : sdt;
    }
    return MPI_SUCCESS;
}

static inline size_t a2a_bytes(const struct a2a_side *b, int i)
{
    return (size_t)b->count[i] * kumi_dt_size(b->type[i]);
}

/* MPI_IN_PLACE: copy every receive block but the own one into a temporary
 * spanning their bytes, at the same displacements relative to the returned
 * base; the send side then reads there. */
static const char *a2a_aside(struct tuned_cx *cx, const struct a2a *x, void *rbuf)
{
    MPI_Aint lo = 0, hi = 0;
    int any = 0;
    for (int i = 0; i < cx->size; i++) {
        if (i == cx->rank || a2a_bytes(&x->r, i) == 0) continue;
        MPI_Aint ext = tuned_ext(x->r.type[i]), tlb, text;
        kumi_dt_true_extent(x->r.type[i], &tlb, &text);
        MPI_Aint last = (MPI_Aint)(x->r.count[i] - 1) * ext;
        MPI_Aint l = x->r.disp[i] + (last < 0 ? last : 0) + tlb;
        MPI_Aint h = x->r.disp[i] + (last > 0 ? last : 0) + tlb + text;
        if (!any || l < lo) lo = l;
        if (!any || h > hi) hi = h;
        any = 1;
    }
    char *tmp = tuned_tmp(cx, (size_t)(hi - lo), MPI_BYTE);
    if (!tmp) return NULL;
    char *base = tmp - lo;
    for (int i = 0; i < cx->size; i++) {
        if (i == cx->rank || a2a_bytes(&x->r, i) == 0) continue;
        tuned_copy(cx, (char *)rbuf + x->r.disp[i], (size_t)x->r.count[i], x->r.type[i],
                   base + x->r.disp[i], (size_t)x->r.count[i], x->r.type[i]);
    }
    tuned_round(cx);
    return base;
}

/* Linear exchange of general blocks: all receives and sends in one round. */
static int a2a_linear(struct tuned_cx *cx, const void *sbuf, void *rbuf, struct a2a *x)
{
    int rank = cx->rank, size = cx->size;
    int inplace = sbuf == MPI_IN_PLACE;
    if (inplace && size > 1 && !(sbuf = a2a_aside(cx, x, rbuf))) goto out;
    for (int k = 1; k < size; k++) {
        int src = (rank - k + size) % size;
        if (a2a_bytes(&x->r, src))
            tuned_recv(cx, (char *)rbuf + x->r.disp[src], (size_t)x->r.count[src], x->r.type[src],
                       src);
    }
    for (int k = 1; k < size; k++) {
        int dst = (rank + k) % size;
        if (a2a_bytes(&x->s, dst))
            tuned_send(cx, (const char *)sbuf + x->s.disp[dst], (size_t)x->s.count[dst],
                       x->s.type[dst], dst);
    }
    if (!inplace)
        tuned_copy(cx, (const char *)sbuf + x->s.disp[rank], (size_t)x->s.count[rank],
                   x->s.type[rank], (char *)rbuf + x->r.disp[rank], (size_t)x->r.count[rank],
                   x->r.type[rank]);
out:
    free(x->mem);
    return cx->err;
}

/* Pairwise exchange of general blocks: own block, then in round k send to
 * r+k and receive from r-k. */
static int a2a_pairwise(struct tuned_cx *cx, const void *sbuf, void *rbuf, struct a2a *x)
{
    int rank = cx->rank, size = cx->size;
    int inplace = sbuf == MPI_IN_PLACE;
    if (inplace && size > 1 && !(sbuf = a2a_aside(cx, x, rbuf))) goto out;
    if (!inplace)
        tuned_copy(cx, (const char *)sbuf + x->s.disp[rank], (size_t)x->s.count[rank],
                   x->s.type[rank], (char *)rbuf + x->r.disp[rank], (size_t)x->r.count[rank],
                   x->r.type[rank]);
    for (int k = 1; k < size; k++) {
        int dst = (rank + k) % size, src = (rank - k + size) % size;
        if (a2a_bytes(&x->s, dst))
            tuned_send(cx, (const char *)sbuf + x->s.disp[dst], (size_t)x->s.count[dst],
                       x->s.type[dst], dst);
        if (a2a_bytes(&x->r, src))
            tuned_recv(cx, (char *)rbuf + x->r.disp[src], (size_t)x->r.count[src], x->r.type[src],
                       src);
        tuned_round(cx);
    }
out:
    free(x->mem);
    return cx->err;
}

/* Alltoallv, linear: every receive and send posted in one round (as
 * coll/basic); MPI_IN_PLACE copies the receive blocks aside first. */
int tuned_alltoallv_linear(struct tuned_cx *cx, const void *sbuf, const MPI_Count scounts[],
                           const MPI_Aint sdispls[], MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                           const MPI_Aint rdispls[], MPI_Datatype rdt)
{
    struct a2a x;
    if (a2a_init(cx, &x, sbuf, scounts, sdispls, sdt, NULL, rcounts, rdispls, rdt, NULL))
        return cx->err;
    return a2a_linear(cx, sbuf, rbuf, &x);
}

/* Alltoallv, pairwise: p-1 rounds, round k sends to r+k and receives from
 * r-k; MPI_IN_PLACE copies the receive blocks aside first. */
int tuned_alltoallv_pairwise(struct tuned_cx *cx, const void *sbuf, const MPI_Count scounts[],
                             const MPI_Aint sdispls[], MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[],
                             const MPI_Aint rdispls[], MPI_Datatype rdt)
{
    struct a2a x;
    if (a2a_init(cx, &x, sbuf, scounts, sdispls, sdt, NULL, rcounts, rdispls, rdt, NULL))
        return cx->err;
    return a2a_pairwise(cx, sbuf, rbuf, &x);
}

/* Alltoallw, linear (displacements in bytes, one datatype per block). */
int tuned_alltoallw_linear(struct tuned_cx *cx, const void *sbuf, const MPI_Count scounts[],
                           const MPI_Aint sdispls[], const MPI_Datatype sdts[], void *rbuf,
                           const MPI_Count rcounts[], const MPI_Aint rdispls[], const MPI_Datatype rdts[])
{
    struct a2a x;
    if (a2a_init(cx, &x, sbuf, scounts, sdispls, MPI_DATATYPE_NULL, sdts, rcounts, rdispls,
                 MPI_DATATYPE_NULL, rdts))
        return cx->err;
    return a2a_linear(cx, sbuf, rbuf, &x);
}

/* Alltoallw, pairwise (displacements in bytes, one datatype per block). */
int tuned_alltoallw_pairwise(struct tuned_cx *cx, const void *sbuf, const MPI_Count scounts[],
                             const MPI_Aint sdispls[], const MPI_Datatype sdts[], void *rbuf,
                             const MPI_Count rcounts[], const MPI_Aint rdispls[], const MPI_Datatype rdts[])
{
    struct a2a x;
    if (a2a_init(cx, &x, sbuf, scounts, sdispls, MPI_DATATYPE_NULL, sdts, rcounts, rdispls,
                 MPI_DATATYPE_NULL, rdts))
        return cx->err;
    return a2a_pairwise(cx, sbuf, rbuf, &x);
}
