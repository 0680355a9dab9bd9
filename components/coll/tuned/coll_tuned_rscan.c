/* coll/tuned: reduce_scatter, scan and exscan algorithms, written as rounds
 * against the tuned_cx interface (coll_tuned.h).
 *
 * tuned_calc(in, inout) computes inout = in op inout: `in` always holds the
 * lower ranks' part, so the algorithms without a precondition keep the rank
 * order (non-commutative ops).  Block i of a reduce_scatter vector starts
 * at element rcounts[0] + ... + rcounts[i-1]; with MPI_IN_PLACE the whole
 * input vector is in rbuf and the result goes to its start.  Empty blocks
 * and counts carry no messages (every rank knows the sizes). */
#include "coll_tuned.h"

#include <stdlib.h>

static int tr_nomem(struct tuned_cx *cx)
{
    return tuned_fail(cx, kumi_error(MPI_ERR_NO_MEM, "coll/tuned: out of memory"));
}

/* displs[i] = rcounts[0] + ... + rcounts[i-1], i = 0 .. p (malloc'd). */
static size_t *tr_displs(struct tuned_cx *cx, const MPI_Count rcounts[])
{
    size_t *d = malloc(sizeof *d * ((size_t)cx->size + 1));
    if (!d) { tr_nomem(cx); return NULL; }
    d[0] = 0;
    for (int i = 0; i < cx->size; i++) d[i + 1] = d[i] + (size_t)rcounts[i];
    return d;
}

/* --------------------------------------------------- reduce_scatter */
/* Reduce (binomial, order kept, any op; tuned_reduce_binomial) of the whole
 * vector to a temporary at rank 0, then a linear scatterv: rank 0 sends
 * every block at once and copies its own.  log p + 1 rounds; rank 0 moves
 * about (log p + 1) * total elements. */
int tuned_reduce_scatter_reduce_scatterv(struct tuned_cx *cx, const void *sbuf, void *rbuf,
                                         const MPI_Count rcounts[], MPI_Datatype dt, MPI_Op op)
{
    int p = cx->size, r = cx->rank;
    MPI_Aint ext = tuned_ext(dt);
    size_t *d = tr_displs(cx, rcounts);
    if (!d) return cx->err;
    size_t total = d[p];
    char *res = NULL;

    if (total == 0) { free(d); return cx->err; }
    if (r == 0 && !(res = tuned_tmp(cx, total, dt))) { free(d); return cx->err; }
    tuned_reduce_binomial(cx, sbuf == MPI_IN_PLACE ? rbuf : sbuf, res, total, dt, op, 0);
    tuned_round(cx);
    if (r == 0) {
        for (int i = 1; i < p; i++)
            if (rcounts[i])
                tuned_send(cx, tuned_at(res, (MPI_Aint)d[i], ext), d[i + 1] - d[i], dt, i);
        tuned_copy(cx, res, d[1], dt, rbuf, d[1], dt);
    } else if (rcounts[r]) {
        tuned_recv(cx, rbuf, d[r + 1] - d[r], dt, 0);
    }
    free(d);
    return cx->err;
}

/* Reduce-scatter by recursive halving.  PRECONDITION: commutative op.  Any
 * rcounts (zeros too).  The non-power-of-two pre-step pairs the first 2*rem
 * ranks (the even rank sends its vector to the odd one, which stands for
 * both as new rank r/2); new rank nr is responsible for the blocks of the
 * real ranks it stands for, a contiguous element range.  Recursive halving
 * over those ranges (tuned_rs_halving), then the odd ranks of the pre-step
 * send the even ones their block and every rank copies its own block out
 * of the temporary.  log p (+2) rounds, about total elements per rank. */
int tuned_reduce_scatter_recursive_halving(struct tuned_cx *cx, const void *sbuf, void *rbuf,
                                           const MPI_Count rcounts[], MPI_Datatype dt, MPI_Op op)
{
    int p = cx->size, r = cx->rank, pof2 = tuned_pof2(p), rem = p - pof2;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    MPI_Aint ext = tuned_ext(dt);
    int even = r < 2 * rem && !(r & 1);  /* sits out after the pre-step */
    size_t *d = tr_displs(cx, rcounts), *nd = NULL, total;
    char *acc = NULL;

    if (!d) return cx->err;
    total = d[p];
    if (total == 0) goto out;
    if (p == 1) {
        tuned_copy(cx, in, total, dt, rbuf, total, dt);
        goto out;
    }
    nd = malloc(sizeof *nd * (size_t)(pof2 + 1));
    if (!nd) { tr_nomem(cx); goto out; }
    for (int i = 0; i < pof2; i++) nd[i] = d[i < rem ? 2 * i : i + rem];
    nd[pof2] = total;
    if (!even && !(acc = tuned_tmp(cx, total, dt))) goto out;
    tuned_rs_halving(cx, in, acc, nd, dt, op);
    if (cx->err) goto out;
    if (even) {
        if (rcounts[r]) tuned_recv(cx, rbuf, (size_t)rcounts[r], dt, r + 1);
    } else {
        if (r < 2 * rem && rcounts[r - 1])
            tuned_send(cx, tuned_at(acc, (MPI_Aint)d[r - 1], ext), (size_t)rcounts[r - 1], dt,
                       r - 1);
        tuned_copy(cx, tuned_at(acc, (MPI_Aint)d[r], ext), (size_t)rcounts[r], dt, rbuf,
                   (size_t)rcounts[r], dt);
    }
out:
    free(nd);
    free(d);
    return cx->err;
}

/* Ring reduce-scatter.  PRECONDITION: commutative op.  p-1 rounds: in
 * round k rank r sends its partial of block r-k-1 to r+1 (round 0: its own
 * input) and receives block r-k-2 from r-1, to which it adds its own input
 * (so block b travels b+1 -> b+2 -> ... -> b, gathering every rank's part,
 * and the last round brings each rank its own block).  Two rotating block
 * temporaries; the last block is received into rbuf (a temporary in place,
 * where rbuf still holds the input).  2(p-1) rounds, (p-1)/p of the vector
 * per rank. */
int tuned_reduce_scatter_ring(struct tuned_cx *cx, const void *sbuf, void *rbuf,
                              const MPI_Count rcounts[], MPI_Datatype dt, MPI_Op op)
{
    int p = cx->size, r = cx->rank;
    int next = (r + 1) % p, prev = (r - 1 + p) % p;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    MPI_Aint ext = tuned_ext(dt);
    size_t *d = tr_displs(cx, rcounts);
    char *t[2] = { NULL, NULL };
    const char *partial = in;            /* what goes out next round */
    size_t big = 0;

    if (!d) return cx->err;
    if (d[p] == 0) goto out;
    if (p == 1) {
        tuned_copy(cx, in, d[1], dt, rbuf, d[1], dt);
        goto out;
    }
    for (int i = 0; i < p; i++)
        if ((size_t)rcounts[i] > big) big = (size_t)rcounts[i];
    for (int i = 0; i < 2 && (i < p - 2 || (i == p - 2 && sbuf == MPI_IN_PLACE)); i++)
        if (!(t[i] = tuned_tmp(cx, big, dt))) goto out;

    for (int k = 0; k < p - 1; k++) {
        int sb = ((r - k - 1) % p + p) % p, rb = ((r - k - 2) % p + p) % p;
        size_t sn = (size_t)rcounts[sb], rn = (size_t)rcounts[rb];
        char *into = k == p - 2 && sbuf != MPI_IN_PLACE ? rbuf : t[k & 1];
        if (k == 0) partial = tuned_at(in, (MPI_Aint)d[sb], ext);
        if (sn) tuned_send(cx, partial, sn, dt, next);
        if (rn) tuned_recv(cx, into, rn, dt, prev);
        tuned_round(cx);
        tuned_calc(cx, tuned_at(in, (MPI_Aint)d[rb], ext), into, rn, dt, op);   /* mine op rest */
        tuned_round(cx);
        partial = into;
    }
    if (partial != rbuf)
        tuned_copy(cx, partial, (size_t)rcounts[r], dt, rbuf, (size_t)rcounts[r], dt);
out:
    free(d);
    return cx->err;
}

/* ------------------------------------------------------------- scan */
/* Linear scan: chain 0 -> 1 -> ... -> p-1.  Rank r receives
 * x0 op ... op x(r-1) from r-1, computes prefix op x(r) in rbuf and sends
 * it to r+1 (order kept, any op).  About 2p rounds end to end. */
int tuned_scan_linear(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                      MPI_Datatype dt, MPI_Op op)
{
    int p = cx->size, r = cx->rank;

    if (count == 0) return cx->err;
    if (sbuf != MPI_IN_PLACE) tuned_copy(cx, sbuf, count, dt, rbuf, count, dt);
    if (r > 0) {
        char *tmp = tuned_tmp(cx, count, dt);
        if (!tmp) return cx->err;
        tuned_recv(cx, tmp, count, dt, r - 1);
        tuned_round(cx);
        tuned_calc(cx, tmp, rbuf, count, dt, op);        /* prefix op mine */
    }
    tuned_round(cx);
    if (r < p - 1) tuned_send(cx, rbuf, count, dt, r + 1);
    return cx->err;
}

/* Linear exscan: chain 0 -> 1 -> ... -> p-1.  Rank r receives
 * x0 op ... op x(r-1) (its result) from r-1 and sends that op x(r) to r+1;
 * its own input is first copied to a temporary (rbuf may hold it, in
 * place).  rbuf of rank 0 is left alone (undefined). */
int tuned_exscan_linear(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                        MPI_Datatype dt, MPI_Op op)
{
    int p = cx->size, r = cx->rank;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;

    if (count == 0 || p == 1) return cx->err;
    if (r == 0) {
        tuned_send(cx, in, count, dt, 1);
        return cx->err;
    }
    if (r == p - 1) {
        tuned_recv(cx, rbuf, count, dt, r - 1);
        return cx->err;
    }
    char *mine = tuned_tmp(cx, count, dt);
    char *prefix = sbuf == MPI_IN_PLACE ? tuned_tmp(cx, count, dt) : rbuf;
    if (!mine || !prefix) return cx->err;
    tuned_copy(cx, in, count, dt, mine, count, dt);
    tuned_recv(cx, prefix, count, dt, r - 1);
    tuned_round(cx);
    tuned_calc(cx, prefix, mine, count, dt, op);         /* prefix op mine */
    tuned_copy(cx, prefix, count, dt, rbuf, count, dt);  /* in place */
    tuned_round(cx);
    tuned_send(cx, mine, count, dt, r + 1);
    return cx->err;
}

/* Prefix by recursive doubling (scan, and exscan when excl): ceil(log p)
 * steps; at step mask rank r exchanges `partial` (the reduction of the
 * ranks of its aligned group of mask ranks) with r ^ mask (when that rank
 * exists).  From a lower partner: result = recv op result (exscan: the
 * first one just becomes the result) and partial = recv op partial; from a
 * higher one: partial = partial op recv.  Any op, any p (a group cut short
 * by p only ever sends to ranks that do not exist).  2 ceil(log p) rounds of
 * count elements. */
static int tr_prefix_rd(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                        MPI_Datatype dt, MPI_Op op, int excl)
{
    int p = cx->size, r = cx->rank;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;

    if (count == 0) return cx->err;
    if (p == 1) {
        if (!excl) tuned_copy(cx, in, count, dt, rbuf, count, dt);
        return cx->err;
    }
    char *part = tuned_tmp(cx, count, dt), *recv = tuned_tmp(cx, count, dt);
    if (!part || !recv) return cx->err;
    int have = !excl;                    /* rbuf holds a result */
    const void *src = in;                /* the partial, to send */
    tuned_copy(cx, in, count, dt, part, count, dt);
    if (!excl) tuned_copy(cx, in, count, dt, rbuf, count, dt);
    for (int mask = 1; mask < p; mask <<= 1) {
        int peer = r ^ mask;
        if (peer >= p) continue;
        tuned_send(cx, src, count, dt, peer);
        tuned_recv(cx, recv, count, dt, peer);
        tuned_round(cx);
        if (peer < r) {
            if (have) tuned_calc(cx, recv, rbuf, count, dt, op);
            else tuned_copy(cx, recv, count, dt, rbuf, count, dt);
            tuned_calc(cx, recv, part, count, dt, op);
            have = 1;
        } else {
            tuned_calc(cx, part, recv, count, dt, op);  /* partial op higher */
            char *t = part; part = recv; recv = t;
        }
        tuned_round(cx);
        src = part;
    }
    return cx->err;
}

/* Scan by recursive doubling (tr_prefix_rd). */
int tuned_scan_recursive_doubling(struct tuned_cx *cx, const void *sbuf, void *rbuf, size_t count,
                                  MPI_Datatype dt, MPI_Op op)
{
    return tr_prefix_rd(cx, sbuf, rbuf, count, dt, op, 0);
}

/* Exscan by recursive doubling (tr_prefix_rd); rank 0's rbuf is left
 * alone (undefined). */
int tuned_exscan_recursive_doubling(struct tuned_cx *cx, const void *sbuf, void *rbuf,
                                    size_t count, MPI_Datatype dt, MPI_Op op)
{
    return tr_prefix_rd(cx, sbuf, rbuf, count, dt, op, 1);
}
