/* coll_wide: the v-collectives, whose int count and displacement arrays the
 * MPI front end widens to the coll contract's MPI_Count / MPI_Aint arrays
 * (on the stack up to kumi_base_coll_widen_stack entries, else in allocated
 * memory), and the neighbourhood ones with a small (3) and a large (70,
 * beyond the stack buffer) degree.  Every operation runs blocking,
 * non-blocking and persistent; a persistent one is started twice with its
 * count and displacement arrays scribbled over after MPI_*_init (the
 * schedule must have copied what it needs).  Counts differ per pair (zeros
 * included), blocks lie in reverse order with gaps that must stay untouched.
 *
 *   coll_wide          the above
 *   coll_wide bigdisp  MPI_Neighbor_alltoallv_c with a receive displacement
 *                      beyond INT_MAX (a sparse mapping: one page touched)
 *   coll_wide bigcount MPI_Bcast_c of 2^31 + 8 bytes (2 GiB per rank)
 * and, for the collectives without arrays, the large-count (_c) forms with
 * ordinary counts. */
#include "kt.h"
#include <limits.h>
#include <stdint.h>
#include <sys/mman.h>

#define HOLE (-1)       /* receive buffers outside the blocks */
#define SGAP (-2)       /* send buffers outside the blocks: an overlong send shows */
static int rank, size;

static int val(int from, int to, int k) { return from * 1000000 + to * 1000 + k; }
/* elements rank `from` sends to rank `to` (0..3) */
static int cnt(int from, int to) { return (from * 3 + to * 5 + 1) % 4; }

/* Blocks of counts c[0..n) laid out in reverse order with `gap` elements
 * between them: d[i] = displacements; returns the buffer length. */
static int layout(const int *c, int *d, int n, int gap)
{
    int off = gap;
    for (int i = n - 1; i >= 0; i--) {
        d[i] = off;
        off += c[i] + gap;
    }
    return off;
}

static int *ints(int n, int v)
{
    int *b = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    KT_CHECK(b != NULL, "out of memory");
    for (int i = 0; i < n; i++) b[i] = v;
    return b;
}

/* Every element of buf[0..len) is HOLE except the blocks (c, d), which hold
 * want(i, k). */
#define CHECK_BLOCKS(what, buf, len, n, c, d, want) do {                                \
    int *seen_ = ints(len, 0);                                                         \
    for (int i = 0; i < (n); i++)                                                      \
        for (int k = 0; k < (c)[i]; k++) {                                             \
            int got_ = (buf)[(d)[i] + k], exp_ = (want);                               \
            if (got_ != exp_)                                                          \
                KT_FAIL("%s: block %d element %d is %d, expected %d", what, i, k, got_, exp_); \
            seen_[(d)[i] + k] = 1;                                                     \
        }                                                                              \
    for (int j = 0; j < (len); j++)                                                    \
        if (!seen_[j] && (buf)[j] != HOLE)                                             \
            KT_FAIL("%s: element %d outside the blocks was written (%d)", what, j, (buf)[j]); \
    free(seen_);                                                                       \
} while (0)

/* form 0: blocking; 1: non-blocking + wait; 2: persistent, the arrays
 * scribbled over after init (scribble), started twice, cleared between
 * (clear). */
#define FORMS(form, blk, nb, init, check, scribble, clear) do {                         \
    MPI_Request req_;                                                                  \
    if ((form) == 0) {                                                                 \
        KT_MPI(blk);                                                                   \
        check;                                                                         \
    } else if ((form) == 1) {                                                          \
        KT_MPI(nb);                                                                    \
        KT_MPI(MPI_Wait(&req_, MPI_STATUS_IGNORE));                                    \
        check;                                                                         \
    } else {                                                                           \
        KT_MPI(init);                                                                  \
        scribble;                                                                      \
        for (int t_ = 0; t_ < 2; t_++) {                                               \
            clear;                                                                     \
            KT_MPI(MPI_Start(&req_));                                                  \
            KT_MPI(MPI_Wait(&req_, MPI_STATUS_IGNORE));                                \
            check;                                                                     \
        }                                                                              \
        KT_MPI(MPI_Request_free(&req_));                                               \
    }                                                                                  \
} while (0)

static void scribble(int *a, int n)
{
    for (int i = 0; i < n; i++) a[i] = 77777 + i;
}

static void fill(int *b, int n, int v)
{
    for (int i = 0; i < n; i++) b[i] = v;
}

static void t_alltoallv(int form)
{
    int *sc = ints(size, 0), *sd = ints(size, 0), *rc = ints(size, 0), *rd = ints(size, 0);
    int *ec = ints(size, 0), *ed = ints(size, 0);
    for (int j = 0; j < size; j++) {
        sc[j] = cnt(rank, j);
        ec[j] = rc[j] = cnt(j, rank);
    }
    int slen = layout(sc, sd, size, 1), rlen = layout(rc, rd, size, 2);
    layout(ec, ed, size, 2);
    int *sb = ints(slen, SGAP), *rb = ints(rlen, HOLE);
    for (int j = 0; j < size; j++)
        for (int k = 0; k < sc[j]; k++) sb[sd[j] + k] = val(rank, j, k);
    FORMS(form, (MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD)),
          (MPI_Ialltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, &req_)),
          (MPI_Alltoallv_init(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req_)),
          CHECK_BLOCKS("alltoallv", rb, rlen, size, ec, ed, val(i, rank, k)),
          (scribble(sc, size), scribble(sd, size), scribble(rc, size), scribble(rd, size)),
          fill(rb, rlen, HOLE));
    free(sc); free(sd); free(rc); free(rd); free(ec); free(ed); free(sb); free(rb);
}

static void t_allgatherv(int form)
{
    int *rc = ints(size, 0), *rd = ints(size, 0), *ec = ints(size, 0), *ed = ints(size, 0);
    for (int j = 0; j < size; j++) ec[j] = rc[j] = cnt(j, 0);
    int rlen = layout(rc, rd, size, 1);
    layout(ec, ed, size, 1);
    int n = cnt(rank, 0), *sb = ints(n + 1, SGAP), *rb = ints(rlen, HOLE);
    for (int k = 0; k < n; k++) sb[k] = val(rank, 0, k);
    FORMS(form, (MPI_Allgatherv(sb, n, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD)),
          (MPI_Iallgatherv(sb, n, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, &req_)),
          (MPI_Allgatherv_init(sb, n, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                               &req_)),
          CHECK_BLOCKS("allgatherv", rb, rlen, size, ec, ed, val(i, 0, k)),
          (scribble(rc, size), scribble(rd, size)), fill(rb, rlen, HOLE));
    free(rc); free(rd); free(ec); free(ed); free(sb); free(rb);
}

/* Gatherv to the last rank; the other ranks pass NULL arrays (not significant there). */
static void t_gatherv(int form)
{
    int root = size - 1, me_root = rank == root;
    int *rc = NULL, *rd = NULL, *ec = ints(size, 0), *ed = ints(size, 0), rlen = 1;
    for (int j = 0; j < size; j++) ec[j] = cnt(j, root);
    if (me_root) {
        rc = ints(size, 0);
        rd = ints(size, 0);
        for (int j = 0; j < size; j++) rc[j] = cnt(j, root);
        rlen = layout(rc, rd, size, 3);
    }
    layout(ec, ed, size, 3);
    int n = cnt(rank, root), *sb = ints(n + 1, SGAP), *rb = ints(rlen, HOLE);
    for (int k = 0; k < n; k++) sb[k] = val(rank, root, k);
    FORMS(form, (MPI_Gatherv(sb, n, MPI_INT, rb, rc, rd, MPI_INT, root, MPI_COMM_WORLD)),
          (MPI_Igatherv(sb, n, MPI_INT, rb, rc, rd, MPI_INT, root, MPI_COMM_WORLD, &req_)),
          (MPI_Gatherv_init(sb, n, MPI_INT, rb, rc, rd, MPI_INT, root, MPI_COMM_WORLD,
                            MPI_INFO_NULL, &req_)),
          if (me_root) CHECK_BLOCKS("gatherv", rb, rlen, size, ec, ed, val(i, root, k)),
          if (me_root) { scribble(rc, size); scribble(rd, size); }, fill(rb, rlen, HOLE));
    free(rc); free(rd); free(ec); free(ed); free(sb); free(rb);
}

/* Scatterv from rank 0; the other ranks pass NULL arrays. */
static void t_scatterv(int form)
{
    int root = 0, me_root = rank == root;
    int *sc = NULL, *sd = NULL, slen = 1;
    if (me_root) {
        sc = ints(size, 0);
        sd = ints(size, 0);
        for (int j = 0; j < size; j++) sc[j] = cnt(root, j);
        slen = layout(sc, sd, size, 2);
    }
    int *sb = ints(slen, SGAP);
    if (me_root)
        for (int j = 0; j < size; j++)
            for (int k = 0; k < sc[j]; k++) sb[sd[j] + k] = val(root, j, k);
    int n = cnt(root, rank), one = n, *rb = ints(n + 2, HOLE);
    FORMS(form, (MPI_Scatterv(sb, sc, sd, MPI_INT, rb + 1, n, MPI_INT, root, MPI_COMM_WORLD)),
          (MPI_Iscatterv(sb, sc, sd, MPI_INT, rb + 1, n, MPI_INT, root, MPI_COMM_WORLD, &req_)),
          (MPI_Scatterv_init(sb, sc, sd, MPI_INT, rb + 1, n, MPI_INT, root, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &req_)),
          CHECK_BLOCKS("scatterv", rb, n + 2, 1, &one, (int[]){ 1 }, val(root, rank, k)),
          if (me_root) { scribble(sc, size); scribble(sd, size); }, fill(rb, n + 2, HOLE));
    free(sc); free(sd); free(sb); free(rb);
}

/* Reduce_scatter with MPI_SUM: element j of the vector on rank q is q * 7 + j. */
static void t_reduce_scatter(int form)
{
    int *rc = ints(size, 0), total = 0, off = 0;
    for (int j = 0; j < size; j++) {
        rc[j] = j % 3 + (size > 4 ? 1 : 0);
        if (j < rank) off += rc[j];
        total += rc[j];
    }
    int mine = rc[rank], *sb = ints(total + 1, 0), *rb = ints(mine + 1, HOLE);
    for (int j = 0; j < total; j++) sb[j] = rank * 7 + j;
    long long base = 7LL * size * (size - 1) / 2;
    FORMS(form, (MPI_Reduce_scatter(sb, rb, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD)),
          (MPI_Ireduce_scatter(sb, rb, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req_)),
          (MPI_Reduce_scatter_init(sb, rb, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                   &req_)),
          CHECK_BLOCKS("reduce_scatter", rb, mine + 1, 1, &mine, (int[]){ 0 },
                       (int)(base + (long long)size * (off + k))),
          scribble(rc, size), fill(rb, mine + 1, HOLE));
    free(rc); free(sb); free(rb);
}

/* Neighbor_alltoallv on a ring of deg parallel edges to the next rank (and
 * deg from the previous one); edge e of rank r carries e % 3 + r % 2
 * elements; parallel edges match in list order. */
static void t_neighbor_alltoallv(int form, int deg)
{
    int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
    int *src = ints(deg, prev), *dst = ints(deg, next);
    MPI_Comm g;
    KT_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, deg, src, MPI_UNWEIGHTED, deg, dst,
                                          MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g));
    int *sc = ints(deg, 0), *sd = ints(deg, 0), *rc = ints(deg, 0), *rd = ints(deg, 0);
    int *ec = ints(deg, 0), *ed = ints(deg, 0);
    for (int e = 0; e < deg; e++) {
        sc[e] = e % 3 + rank % 2;
        ec[e] = rc[e] = e % 3 + prev % 2;
    }
    int slen = layout(sc, sd, deg, 1), rlen = layout(rc, rd, deg, 2);
    layout(ec, ed, deg, 2);
    int *sb = ints(slen, SGAP), *rb = ints(rlen, HOLE);
    for (int e = 0; e < deg; e++)
        for (int k = 0; k < sc[e]; k++) sb[sd[e] + k] = val(rank, e, k);
    FORMS(form, (MPI_Neighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, g)),
          (MPI_Ineighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, g, &req_)),
          (MPI_Neighbor_alltoallv_init(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, g, MPI_INFO_NULL,
                                       &req_)),
          CHECK_BLOCKS("neighbor_alltoallv", rb, rlen, deg, ec, ed, val(prev, i, k)),
          (scribble(sc, deg), scribble(sd, deg), scribble(rc, deg), scribble(rd, deg)),
          fill(rb, rlen, HOLE));
    KT_MPI(MPI_Comm_free(&g));
    free(src); free(dst); free(sc); free(sd); free(rc); free(rd); free(ec); free(ed);
    free(sb); free(rb);
}

/* The large-count (_c) forms of the collectives without arrays, with
 * ordinary counts: the forwarders pass their MPI_Count counts through. */
static void t_scalar_c(int form)
{
    MPI_Count m = 5;
    int root = size - 1;
    int *a = ints((int)m * size + 1, HOLE), *b = ints((int)m * size + 1, HOLE);
    /* bcast */
    if (rank == root) for (int k = 0; k < m; k++) a[k] = val(root, 1, k);
    FORMS(form, (MPI_Bcast_c(a, m, MPI_INT, root, MPI_COMM_WORLD)),
          (MPI_Ibcast_c(a, m, MPI_INT, root, MPI_COMM_WORLD, &req_)),
          (MPI_Bcast_init_c(a, m, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          for (int k = 0; k < m; k++) KT_EQ_INT(a[k], val(root, 1, k)), (void)0,
          if (rank != root) fill(a, (int)m, HOLE));
    /* allreduce: sum over ranks q of q + k */
    for (int k = 0; k < m; k++) a[k] = rank + k;
    FORMS(form, (MPI_Allreduce_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD)),
          (MPI_Iallreduce_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req_)),
          (MPI_Allreduce_init_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          for (int k = 0; k < m; k++) KT_EQ_INT(b[k], size * (size - 1) / 2 + size * k), (void)0,
          fill(b, (int)m, HOLE));
    /* reduce to root, scan, exscan */
    FORMS(form, (MPI_Reduce_c(a, b, m, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD)),
          (MPI_Ireduce_c(a, b, m, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &req_)),
          (MPI_Reduce_init_c(a, b, m, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          if (rank == root) for (int k = 0; k < m; k++) KT_EQ_INT(b[k], size * (size - 1) / 2 + size * k),
          (void)0, fill(b, (int)m, HOLE));
    FORMS(form, (MPI_Scan_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD)),
          (MPI_Iscan_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req_)),
          (MPI_Scan_init_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          for (int k = 0; k < m; k++) KT_EQ_INT(b[k], rank * (rank + 1) / 2 + (rank + 1) * k), (void)0,
          fill(b, (int)m, HOLE));
    FORMS(form, (MPI_Exscan_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD)),
          (MPI_Iexscan_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req_)),
          (MPI_Exscan_init_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          if (rank > 0) for (int k = 0; k < m; k++) KT_EQ_INT(b[k], rank * (rank - 1) / 2 + rank * k),
          (void)0, fill(b, (int)m, HOLE));
    /* gather / allgather of m, alltoall of m per rank, scatter, reduce_scatter_block */
    for (int k = 0; k < m; k++) a[k] = val(rank, 2, k);
    FORMS(form, (MPI_Gather_c(a, m, MPI_INT, b, m, MPI_INT, root, MPI_COMM_WORLD)),
          (MPI_Igather_c(a, m, MPI_INT, b, m, MPI_INT, root, MPI_COMM_WORLD, &req_)),
          (MPI_Gather_init_c(a, m, MPI_INT, b, m, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          if (rank == root) for (int q = 0; q < size; q++) for (int k = 0; k < m; k++)
              KT_EQ_INT(b[q * m + k], val(q, 2, k)),
          (void)0, fill(b, (int)m * size, HOLE));
    FORMS(form, (MPI_Allgather_c(a, m, MPI_INT, b, m, MPI_INT, MPI_COMM_WORLD)),
          (MPI_Iallgather_c(a, m, MPI_INT, b, m, MPI_INT, MPI_COMM_WORLD, &req_)),
          (MPI_Allgather_init_c(a, m, MPI_INT, b, m, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          for (int q = 0; q < size; q++) for (int k = 0; k < m; k++) KT_EQ_INT(b[q * m + k], val(q, 2, k)),
          (void)0, fill(b, (int)m * size, HOLE));
    for (int q = 0; q < size; q++) for (int k = 0; k < m; k++) a[q * m + k] = val(rank, q, k);
    FORMS(form, (MPI_Alltoall_c(a, m, MPI_INT, b, m, MPI_INT, MPI_COMM_WORLD)),
          (MPI_Ialltoall_c(a, m, MPI_INT, b, m, MPI_INT, MPI_COMM_WORLD, &req_)),
          (MPI_Alltoall_init_c(a, m, MPI_INT, b, m, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          for (int q = 0; q < size; q++) for (int k = 0; k < m; k++) KT_EQ_INT(b[q * m + k], val(q, rank, k)),
          (void)0, fill(b, (int)m * size, HOLE));
    for (int q = 0; q < size; q++) for (int k = 0; k < m; k++) a[q * m + k] = val(root, q, k);
    FORMS(form, (MPI_Scatter_c(a, m, MPI_INT, b, m, MPI_INT, root, MPI_COMM_WORLD)),
          (MPI_Iscatter_c(a, m, MPI_INT, b, m, MPI_INT, root, MPI_COMM_WORLD, &req_)),
          (MPI_Scatter_init_c(a, m, MPI_INT, b, m, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          for (int k = 0; k < m; k++) KT_EQ_INT(b[k], val(root, rank, k)), (void)0, fill(b, (int)m, HOLE));
    for (int j = 0; j < m * size; j++) a[j] = rank + j;
    FORMS(form, (MPI_Reduce_scatter_block_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD)),
          (MPI_Ireduce_scatter_block_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req_)),
          (MPI_Reduce_scatter_block_init_c(a, b, m, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                           &req_)),
          for (int k = 0; k < m; k++)
              KT_EQ_INT(b[k], size * (size - 1) / 2 + size * (rank * m + k)),
          (void)0, fill(b, (int)m, HOLE));
    free(a);
    free(b);
}

/* The large-count (_c) forms of the v-collectives, with ordinary counts:
 * MPI_Count / MPI_Aint arrays go to the component as they are. */
static void cscribble(MPI_Count *c, MPI_Aint *d, int n)
{
    for (int i = 0; i < n; i++) {
        if (c) c[i] = 88888 + i;
        if (d) d[i] = 99999 + i;
    }
}

static void t_v_c(int form)
{
    int *ic = ints(size, 0), *id = ints(size, 0), *sc32 = ints(size, 0), *sd32 = ints(size, 0);
    MPI_Count *sc = malloc(sizeof(MPI_Count) * (size_t)size), *rc = malloc(sizeof(MPI_Count) * (size_t)size);
    MPI_Aint *sd = malloc(sizeof(MPI_Aint) * (size_t)size), *rd = malloc(sizeof(MPI_Aint) * (size_t)size);
    MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * (size_t)size);
    KT_CHECK(sc && rc && sd && rd && ty, "out of memory");
    int root = size - 1;
#define SET_SEND() do { for (int j = 0; j < size; j++) sc32[j] = cnt(rank, j);                \
        layout(sc32, sd32, size, 1);                                                        \
        for (int j = 0; j < size; j++) { sc[j] = sc32[j]; sd[j] = sd32[j]; } } while (0)
#define SET_RECV(from_fn) do { for (int j = 0; j < size; j++) ic[j] = (from_fn);           \
        layout(ic, id, size, 2);                                                            \
        for (int j = 0; j < size; j++) { rc[j] = ic[j]; rd[j] = id[j]; } } while (0)
    /* alltoallv_c */
    SET_SEND();
    SET_RECV(cnt(j, rank));
    int slen = layout(sc32, sd32, size, 1), rlen = layout(ic, id, size, 2);
    int rbn = rlen + 4 * size, *sb = ints(slen + 4 * size, SGAP), *rb = ints(rbn, HOLE);
    for (int j = 0; j < size; j++)
        for (int k = 0; k < sc32[j]; k++) sb[sd32[j] + k] = val(rank, j, k);
    FORMS(form, (MPI_Alltoallv_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD)),
          (MPI_Ialltoallv_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, &req_)),
          (MPI_Alltoallv_init_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &req_)),
          CHECK_BLOCKS("alltoallv_c", rb, rlen, size, ic, id, val(i, rank, k)),
          (cscribble(sc, sd, size), cscribble(rc, rd, size)), fill(rb, rlen, HOLE));
    /* alltoallw_c: the same blocks, displacements in bytes, one type per block */
    SET_SEND();
    SET_RECV(cnt(j, rank));
    for (int j = 0; j < size; j++) {
        sd[j] *= (MPI_Aint)sizeof(int);
        rd[j] *= (MPI_Aint)sizeof(int);
        ty[j] = MPI_INT;
    }
    FORMS(form, (MPI_Alltoallw_c(sb, sc, sd, ty, rb, rc, rd, ty, MPI_COMM_WORLD)),
          (MPI_Ialltoallw_c(sb, sc, sd, ty, rb, rc, rd, ty, MPI_COMM_WORLD, &req_)),
          (MPI_Alltoallw_init_c(sb, sc, sd, ty, rb, rc, rd, ty, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          CHECK_BLOCKS("alltoallw_c", rb, rlen, size, ic, id, val(i, rank, k)),
          (cscribble(sc, sd, size), cscribble(rc, rd, size)), fill(rb, rlen, HOLE));
    /* allgatherv_c: rank j contributes cnt(j, 0) elements val(j, 0, k) */
    SET_RECV(cnt(j, 0));
    rlen = layout(ic, id, size, 2);
    KT_CHECK(rlen <= rbn, "layout");
    fill(rb, rbn, HOLE);
    int n = cnt(rank, 0);
    for (int k = 0; k < n; k++) sb[k] = val(rank, 0, k);
    FORMS(form, (MPI_Allgatherv_c(sb, n, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD)),
          (MPI_Iallgatherv_c(sb, n, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, &req_)),
          (MPI_Allgatherv_init_c(sb, n, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                                 &req_)),
          CHECK_BLOCKS("allgatherv_c", rb, rlen, size, ic, id, val(i, 0, k)),
          cscribble(rc, rd, size), fill(rb, rlen, HOLE));
    /* gatherv_c to the last rank (the same blocks), NULL arrays elsewhere */
    SET_RECV(cnt(j, 0));
    fill(rb, rbn, HOLE);
    FORMS(form, (MPI_Gatherv_c(sb, n, MPI_INT, rb, rank == root ? rc : NULL, rank == root ? rd : NULL,
                               MPI_INT, root, MPI_COMM_WORLD)),
          (MPI_Igatherv_c(sb, n, MPI_INT, rb, rank == root ? rc : NULL, rank == root ? rd : NULL,
                          MPI_INT, root, MPI_COMM_WORLD, &req_)),
          (MPI_Gatherv_init_c(sb, n, MPI_INT, rb, rank == root ? rc : NULL, rank == root ? rd : NULL,
                              MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          if (rank == root) CHECK_BLOCKS("gatherv_c", rb, rlen, size, ic, id, val(i, 0, k)),
          cscribble(rc, rd, size), fill(rb, rlen, HOLE));
    /* scatterv_c from the last rank: the gathered layout back */
    SET_RECV(cnt(j, 0));
    if (rank == root)
        for (int j = 0; j < size; j++)
            for (int k = 0; k < ic[j]; k++) rb[id[j] + k] = val(j, 0, k);
    int one = n, *out = ints(n + 2, HOLE);
    FORMS(form, (MPI_Scatterv_c(rb, rank == root ? rc : NULL, rank == root ? rd : NULL, MPI_INT, out + 1, n,
                                MPI_INT, root, MPI_COMM_WORLD)),
          (MPI_Iscatterv_c(rb, rank == root ? rc : NULL, rank == root ? rd : NULL, MPI_INT, out + 1, n,
                           MPI_INT, root, MPI_COMM_WORLD, &req_)),
          (MPI_Scatterv_init_c(rb, rank == root ? rc : NULL, rank == root ? rd : NULL, MPI_INT, out + 1,
                               n, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          CHECK_BLOCKS("scatterv_c", out, n + 2, 1, &one, (int[]){ 1 }, val(rank, 0, k)),
          cscribble(rc, rd, size), fill(out, n + 2, HOLE));
    /* reduce_scatter_c: as t_reduce_scatter */
    int total = 0, off = 0;
    for (int j = 0; j < size; j++) {
        rc[j] = j % 3 + 1;
        if (j < rank) off += (int)rc[j];
        total += (int)rc[j];
    }
    int mine = (int)rc[rank], *v = ints(total + 1, 0);
    for (int j = 0; j < total; j++) v[j] = rank * 7 + j;
    long long base = 7LL * size * (size - 1) / 2;
    FORMS(form, (MPI_Reduce_scatter_c(v, out, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD)),
          (MPI_Ireduce_scatter_c(v, out, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req_)),
          (MPI_Reduce_scatter_init_c(v, out, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req_)),
          CHECK_BLOCKS("reduce_scatter_c", out, mine, 1, &mine, (int[]){ 0 },
                       (int)(base + (long long)size * (off + k))),
          cscribble(rc, NULL, size), (void)0);
#undef SET_SEND
#undef SET_RECV
    free(ic); free(id); free(sc32); free(sd32); free(sc); free(rc); free(sd); free(rd); free(ty);
    free(sb); free(rb); free(out); free(v);
}

/* MPI_Neighbor_alltoallv_c on a ring with one edge each way: the receive
 * block lies 2^31 + 100 bytes into a sparse mapping. */
static int t_bigdisp(void)
{
    const MPI_Aint far = (MPI_Aint)INT_MAX + 101;
    size_t len = (size_t)far + 4096;
    char *big = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
    int ok = big != MAP_FAILED, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all) {
        if (rank == 0) fprintf(stderr, "coll_wide bigdisp: cannot map %zu bytes (sparse); skipped\n", len);
        if (ok) munmap(big, len);
        return 77;
    }
    int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
    MPI_Comm g;
    KT_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &prev, MPI_UNWEIGHTED, 1, &next,
                                          MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g));
    char sb[64];
    for (int k = 0; k < 64; k++) sb[k] = (char)(rank * 3 + k);
    MPI_Count sc = 64, rc = 64;
    MPI_Aint sd = 0, rd = far;
    KT_MPI(MPI_Neighbor_alltoallv_c(sb, &sc, &sd, MPI_BYTE, big, &rc, &rd, MPI_BYTE, g));
    for (int k = 0; k < 64; k++)
        KT_EQ_INT(big[far + k], (char)(prev * 3 + k));
    KT_EQ_INT(big[far - 1], 0);
    KT_EQ_INT(big[far + 64], 0);
    KT_MPI(MPI_Comm_free(&g));
    munmap(big, len);
    return 0;
}

/* MPI_Bcast_c of 2^31 + 8 bytes (2 GiB per rank): a count beyond INT_MAX
 * through the front end, the contract and the component. */
static int t_bigcount(void)
{
    const MPI_Count n = (MPI_Count)INT_MAX + 9;
    unsigned char *buf = malloc((size_t)n);
    int ok = buf != NULL, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all) {
        if (rank == 0) fprintf(stderr, "coll_wide bigcount: cannot allocate %lld bytes; skipped\n", (long long)n);
        free(buf);
        return 77;
    }
    /* chunk c of 1 MiB holds the byte c * 37 + 1 (memset and memcmp: quick) */
    const size_t chunk = (size_t)1 << 20;
    int root = size - 1;
    unsigned char *ref = malloc(chunk);
    KT_CHECK(ref != NULL, "out of memory");
    for (size_t off = 0, c = 0; off < (size_t)n; off += chunk, c++) {
        size_t len = (size_t)n - off < chunk ? (size_t)n - off : chunk;
        memset(buf + off, rank == root ? (int)((c * 37 + 1) & 0xff) : 0, len);
    }
    KT_MPI(MPI_Bcast_c(buf, n, MPI_BYTE, root, MPI_COMM_WORLD));
    for (size_t off = 0, c = 0; off < (size_t)n; off += chunk, c++) {
        size_t len = (size_t)n - off < chunk ? (size_t)n - off : chunk;
        memset(ref, (int)((c * 37 + 1) & 0xff), len);
        if (memcmp(buf + off, ref, len))
            KT_FAIL("bigcount: the MiB at byte %zu differs from what the root sent", off);
    }
    free(ref);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && (!strcmp(argv[1], "bigdisp") || !strcmp(argv[1], "bigcount"))) {
        int rc = !strcmp(argv[1], "bigdisp") ? t_bigdisp() : t_bigcount();
        MPI_Finalize();
        return rc;
    }
    for (int form = 0; form < 3; form++) {
        t_alltoallv(form);
        t_allgatherv(form);
        t_gatherv(form);
        t_scatterv(form);
        t_reduce_scatter(form);
        t_neighbor_alltoallv(form, 3);
        t_neighbor_alltoallv(form, 70);
        t_scalar_c(form);
        t_v_c(form);
    }
    MPI_Finalize();
    return 0;
}
