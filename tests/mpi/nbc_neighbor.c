/* nbc_neighbor: the non-blocking (MPI_Ineighbor_*) and persistent
 * (MPI_Neighbor_*_init) neighborhood collectives: allgather, allgatherv,
 * alltoall, alltoallv, alltoallw, counts 0, 1, 5 and 25000 ints per block
 * (100000 bytes: rendezvous), on
 *   - a periodic 2-D Cartesian grid (at 1, 2 and 4 processes a periodic
 *     dimension of size 1 or 2 has the same process on both sides),
 *   - the same grid non-periodic (MPI_PROC_NULL neighbours: their blocks
 *     stay untouched),
 *   - a periodic 1-D grid of 2 processes (both neighbours are the other one),
 *   - a ring made with MPI_Graph_create (r's neighbours: r + 1 and r - 1),
 *   - a distributed graph made with MPI_Dist_graph_create_adjacent (out to
 *     me+1 and me+3, in from me-1 and me-3: repeated edges at 1 and 2
 *     processes, self loops at 1 and 3),
 *   - one made with MPI_Dist_graph_create where each edge is declared by a
 *     third process (the order of the neighbours is the library's: read back
 *     with MPI_Dist_graph_neighbors).
 * Which block lands where: on a Cartesian grid my in block i comes from the
 * block my neighbour i sent in the opposite direction (i ^ 1); on a graph
 * the k-th edge s -> me in s's out list fills my k-th in block from s.
 * Persistent ones are started twice with new contents. */
#include "kt.h"

#define BIG 25000
#define MAXD 8
#define NOTSET (-1)

static int me, n;

struct topo {
    const char *name;
    MPI_Comm comm;
    int nin, nout, in[MAXD], out[MAXD];
    int match[MAXD];        /* in block i is the sender's out block match[i] */
};

/* element e of the block s sends through its out slot j, in round rd */
static int nv(int s, int j, int e, int rd) { return s * 1000000 + j * 100000 + e + rd * 11; }
/* element e of what s sends to all its neighbours (allgather) */
static int gv(int s, int e, int rd) { return s * 1000000 + 900000 + e + rd * 11; }
/* uneven counts: of the allgatherv block of s; of the alltoallv block s sends through slot j */
static int gcount(int s, int c) { return c == 0 ? 0 : c - s % 2; }
static int acount(int s, int j, int c) { return c == 0 ? 0 : c - (s + j) % 2; }

static int *ialloc(size_t cnt)
{
    int *p = malloc(sizeof(int) * (cnt ? cnt : 1));
    KT_CHECK(p != NULL, "out of memory");
    return p;
}

static void fill(int *p, size_t cnt, int x)
{
    for (size_t i = 0; i < cnt; i++) p[i] = x;
}

/* Read the neighbours back from the communicator and work out match[]. */
static void learn(struct topo *t, const char *name, MPI_Comm c)
{
    int st, cart;
    t->name = name;
    t->comm = c;
    KT_MPI(MPI_Topo_test(c, &st));
    cart = st == MPI_CART;
    if (cart) {
        int nd, dims[2], per[2], co[2];
        KT_MPI(MPI_Cartdim_get(c, &nd));
        KT_CHECK(nd <= 2, "dimensions");
        KT_MPI(MPI_Cart_get(c, nd, dims, per, co));
        t->nin = t->nout = 2 * nd;
        for (int d = 0; d < nd; d++) {
            KT_MPI(MPI_Cart_shift(c, d, 1, &t->in[2 * d], &t->in[2 * d + 1]));
            t->out[2 * d] = t->in[2 * d];
            t->out[2 * d + 1] = t->in[2 * d + 1];
        }
        for (int i = 0; i < t->nin; i++) t->match[i] = i ^ 1;
        return;
    }
    int cs, crank, mine[MAXD + 1], *all;
    KT_MPI(MPI_Comm_size(c, &cs));
    KT_MPI(MPI_Comm_rank(c, &crank));
    if (st == MPI_GRAPH) {          /* send to and receive from the same list */
        KT_MPI(MPI_Graph_neighbors_count(c, crank, &t->nin));
        KT_CHECK(t->nin <= MAXD, "degree");
        KT_MPI(MPI_Graph_neighbors(c, crank, MAXD, t->in));
        t->nout = t->nin;
        memcpy(t->out, t->in, sizeof t->in);
    } else {
        int wt;
        KT_CHECK(st == MPI_DIST_GRAPH, "%s: topology %d", name, st);
        KT_MPI(MPI_Dist_graph_neighbors_count(c, &t->nin, &t->nout, &wt));
        KT_CHECK(t->nin <= MAXD && t->nout <= MAXD, "degrees");
        KT_MPI(MPI_Dist_graph_neighbors(c, MAXD, t->in, MPI_UNWEIGHTED, MAXD, t->out, MPI_UNWEIGHTED));
    }
    all = ialloc((size_t)cs * (MAXD + 1));
    mine[0] = t->nout;
    memcpy(mine + 1, t->out, sizeof t->out);
    KT_MPI(MPI_Allgather(mine, MAXD + 1, MPI_INT, all, MAXD + 1, MPI_INT, c));
    for (int i = 0; i < t->nin; i++) {
        int s = t->in[i], k = 0, found = -1;
        for (int a = 0; a < i; a++) k += t->in[a] == s;
        const int *so = all + (size_t)s * (MAXD + 1);
        for (int j = 0; j < so[0] && found < 0; j++)
            if (so[1 + j] == crank && k-- == 0) found = j;
        KT_CHECK(found >= 0, "%s: no out edge of %d matches my in edge %d", name, s, i);
        t->match[i] = found;
    }
    free(all);
}

static int crank_of(const struct topo *t)
{
    int r;
    MPI_Comm_rank(t->comm, &r);
    return r;
}

#define EXPECT(t, what, c, rd, got, want, idx) do { long long g_ = (got), w_ = (want); if (g_ != w_) \
    KT_FAIL("%s %s count %d round %d: element %d is %lld, expected %lld", (t)->name, what, c, rd, (int)(idx), \
            g_, w_); } while (0)

enum { AG, AGV, A2A, A2AV, A2AW, NOPS };
static const char *const opname[NOPS] = { "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw" };

/* One operation: persistent (two rounds) or not (one round per call). */
static void run_op(const struct topo *t, int op, int c, int persistent)
{
    int r = crank_of(t);
    int nin = t->nin, nout = t->nout;
    int sc[MAXD], sd[MAXD], rc[MAXD], rdsp[MAXD], stot = 0, rtot = 0;
    MPI_Aint sdb[MAXD], rdb[MAXD];
    MPI_Datatype sty[MAXD], rty[MAXD], one;
    KT_MPI(MPI_Type_contiguous(1, MPI_INT, &one));
    KT_MPI(MPI_Type_commit(&one));
    for (int j = 0; j < nout; j++) {
        sc[j] = op == AGV ? gcount(r, c) : op >= A2AV ? acount(r, j, c) : c;
        sd[j] = stot;
        stot += sc[j] + 1;
        sdb[j] = (MPI_Aint)sd[j] * (MPI_Aint)sizeof(int);
        sty[j] = MPI_INT;
    }
    for (int i = nin - 1; i >= 0; i--) {         /* receive blocks in reverse order, a gap of 2 */
        int s = t->in[i];
        rc[i] = s == MPI_PROC_NULL ? c : op == AGV ? gcount(s, c) : op >= A2AV ? acount(s, t->match[i], c) : c;
        rdsp[i] = rtot;
        rtot += rc[i] + 2;
        rdb[i] = (MPI_Aint)rdsp[i] * (MPI_Aint)sizeof(int);
        rty[i] = i % 2 ? one : MPI_INT;
    }
    int *s = ialloc((size_t)stot + (size_t)c + 1), *rb = ialloc((size_t)rtot + (size_t)c * nin + 1);
    MPI_Request rq;
    MPI_Comm cm = t->comm;
    int rounds = persistent ? 2 : 1;
    for (int rd = 0; rd < rounds; rd++) {
        /* contents of this round: (re)written before every start */
        fill(s, (size_t)stot + (size_t)c + 1, NOTSET);
        fill(rb, (size_t)rtot + (size_t)c * nin + 1, NOTSET);
        if (op == AG || op == AGV)
            for (int e = 0; e < (op == AG ? c : gcount(r, c)); e++) s[e] = gv(r, e, rd);
        else if (op == A2A)
            for (int j = 0; j < nout; j++)
                for (int e = 0; e < c; e++) s[j * c + e] = nv(r, j, e, rd);
        else
            for (int j = 0; j < nout; j++)
                for (int e = 0; e < sc[j]; e++) s[sd[j] + e] = nv(r, j, e, rd);
        if (rd == 0 || !persistent) {
            if (persistent) {
                MPI_Info ni = MPI_INFO_NULL;
                switch (op) {
                case AG: KT_MPI(MPI_Neighbor_allgather_init(s, c, MPI_INT, rb, c, MPI_INT, cm, ni, &rq)); break;
                case AGV:
                    KT_MPI(MPI_Neighbor_allgatherv_init(s, gcount(r, c), MPI_INT, rb, rc, rdsp, MPI_INT, cm, ni, &rq));
                    break;
                case A2A: KT_MPI(MPI_Neighbor_alltoall_init(s, c, MPI_INT, rb, c, MPI_INT, cm, ni, &rq)); break;
                case A2AV:
                    KT_MPI(MPI_Neighbor_alltoallv_init(s, sc, sd, MPI_INT, rb, rc, rdsp, MPI_INT, cm, ni, &rq));
                    break;
                default:
                    KT_MPI(MPI_Neighbor_alltoallw_init(s, sc, sdb, sty, rb, rc, rdb, rty, cm, ni, &rq));
                    break;
                }
            } else {
                switch (op) {
                case AG: KT_MPI(MPI_Ineighbor_allgather(s, c, MPI_INT, rb, c, MPI_INT, cm, &rq)); break;
                case AGV:
                    KT_MPI(MPI_Ineighbor_allgatherv(s, gcount(r, c), MPI_INT, rb, rc, rdsp, MPI_INT, cm, &rq));
                    break;
                case A2A: KT_MPI(MPI_Ineighbor_alltoall(s, c, MPI_INT, rb, c, MPI_INT, cm, &rq)); break;
                case A2AV: KT_MPI(MPI_Ineighbor_alltoallv(s, sc, sd, MPI_INT, rb, rc, rdsp, MPI_INT, cm, &rq)); break;
                default: KT_MPI(MPI_Ineighbor_alltoallw(s, sc, sdb, sty, rb, rc, rdb, rty, cm, &rq)); break;
                }
            }
        }
        if (persistent) KT_MPI(MPI_Start(&rq));
        if ((rd + op) % 2 == 0) {
            KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        } else {
            int flag = 0;
            while (!flag) KT_MPI(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
        }
        KT_CHECK((rq == MPI_REQUEST_NULL) == !persistent, "%s %s: request after completion", t->name, opname[op]);
        char what[64];
        snprintf(what, sizeof what, "%s%s", persistent ? "persistent " : "", opname[op]);
        for (int i = 0; i < nin; i++) {
            int src = t->in[i];
            int *blk = op == AG || op == A2A ? rb + (size_t)i * c : rb + rdsp[i];
            int len = op == AG || op == A2A ? c : rc[i];
            for (int e = 0; e < len; e++) {
                int want = src == MPI_PROC_NULL ? NOTSET
                         : op == AG || op == AGV ? gv(src, e, rd) : nv(src, t->match[i], e, rd);
                EXPECT(t, what, c, rd, blk[e], want, (int)(blk - rb) + e);
            }
            if (op != AG && op != A2A) {         /* the gap after each block */
                EXPECT(t, what, c, rd, blk[len], NOTSET, (int)(blk - rb) + len);
                EXPECT(t, what, c, rd, blk[len + 1], NOTSET, (int)(blk - rb) + len + 1);
            }
        }
        if (op == AG || op == A2A) EXPECT(t, what, c, rd, rb[(size_t)nin * c], NOTSET, nin * c);
    }
    if (persistent) KT_MPI(MPI_Request_free(&rq));
    MPI_Type_free(&one);
    free(s);
    free(rb);
}

static void test_topo(const struct topo *t)
{
    int cnts[4] = { 0, 1, 5, BIG };
    for (int k = 0; k < 4; k++)
        for (int op = 0; op < NOPS; op++)
            for (int p = 0; p < 2; p++) run_op(t, op, cnts[k], p);

    /* all five in flight at once (non-blocking), then completed in reverse */
    int c = 3, r = crank_of(t), nin = t->nin, nout = t->nout;
    int *s = ialloc((size_t)(nout * c + 1)), *rbuf[NOPS], cnt[MAXD], dsp[MAXD];
    MPI_Aint bd[MAXD];
    MPI_Datatype ty[MAXD];
    MPI_Request rq[NOPS];
    for (int j = 0; j < nout; j++)
        for (int e = 0; e < c; e++) s[j * c + e] = nv(r, j, e, 5);
    for (int i = 0; i < MAXD; i++) {
        cnt[i] = c;
        dsp[i] = i * c;
        bd[i] = (MPI_Aint)i * c * (MPI_Aint)sizeof(int);
        ty[i] = MPI_INT;
    }
    for (int op = 0; op < NOPS; op++) {
        rbuf[op] = ialloc((size_t)(nin * c + 1));
        fill(rbuf[op], (size_t)(nin * c + 1), NOTSET);
    }
    /* allgather(v) send s's first block: nv(r, 0, e, 5) */
    KT_MPI(MPI_Ineighbor_allgather(s, c, MPI_INT, rbuf[AG], c, MPI_INT, t->comm, &rq[AG]));
    KT_MPI(MPI_Ineighbor_allgatherv(s, c, MPI_INT, rbuf[AGV], cnt, dsp, MPI_INT, t->comm, &rq[AGV]));
    KT_MPI(MPI_Ineighbor_alltoall(s, c, MPI_INT, rbuf[A2A], c, MPI_INT, t->comm, &rq[A2A]));
    KT_MPI(MPI_Ineighbor_alltoallv(s, cnt, dsp, MPI_INT, rbuf[A2AV], cnt, dsp, MPI_INT, t->comm, &rq[A2AV]));
    KT_MPI(MPI_Ineighbor_alltoallw(s, cnt, bd, ty, rbuf[A2AW], cnt, bd, ty, t->comm, &rq[A2AW]));
    for (int op = NOPS - 1; op >= 0; op--) KT_MPI(MPI_Wait(&rq[op], MPI_STATUS_IGNORE));
    for (int op = 0; op < NOPS; op++) {
        for (int i = 0; i < nin; i++)
            for (int e = 0; e < c; e++) {
                int src = t->in[i];
                int want = src == MPI_PROC_NULL ? NOTSET : nv(src, op <= AGV ? 0 : t->match[i], e, 5);
                EXPECT(t, opname[op], c, -1, rbuf[op][i * c + e], want, i * c + e);
            }
        EXPECT(t, opname[op], c, -1, rbuf[op][nin * c], NOTSET, nin * c);
        free(rbuf[op]);
    }
    free(s);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    struct topo t;
    MPI_Comm c;

    int dims[2] = { 0, 0 }, per[2] = { 1, 1 };
    KT_MPI(MPI_Dims_create(n, 2, dims));
    for (int p = 1; p >= 0; p--) {
        per[0] = per[1] = p;
        KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &c));
        learn(&t, p ? "periodic 2-D grid" : "2-D grid", c);
        test_topo(&t);
        KT_MPI(MPI_Comm_free(&c));
    }

    if (n >= 2) {
        int d2 = 2, p1 = 1;
        KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, &d2, &p1, 0, &c));
        if (me < 2) {
            learn(&t, "periodic 1-D grid of 2", c);
            KT_EQ_INT(t.in[0], 1 - me);
            KT_EQ_INT(t.in[1], 1 - me);
            test_topo(&t);
            KT_MPI(MPI_Comm_free(&c));
        } else {
            KT_CHECK(c == MPI_COMM_NULL, "a rank outside the grid got a communicator");
        }
    }

    {
        /* a ring: r's neighbours are r + 1 and r - 1 (the same process twice at 2, itself at 1) */
        int *index = ialloc((size_t)n), *edges = ialloc((size_t)n * 2);
        for (int r = 0; r < n; r++) {
            index[r] = 2 * (r + 1);
            edges[2 * r] = (r + 1) % n;
            edges[2 * r + 1] = (r + n - 1) % n;
        }
        KT_MPI(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &c));
        learn(&t, "graph", c);
        test_topo(&t);
        KT_MPI(MPI_Comm_free(&c));
        free(index);
        free(edges);
    }

    {
        int src[2] = { (me + n - 1) % n, (me + 3 * n - 3) % n }, dst[2] = { (me + 1) % n, (me + 3) % n };
        KT_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst, MPI_UNWEIGHTED,
                                              MPI_INFO_NULL, 0, &c));
        learn(&t, "adjacent distributed graph", c);
        test_topo(&t);
        KT_MPI(MPI_Comm_free(&c));
    }

    {
        /* rank r declares the edges (r+1) -> (r+2) and (r+1) -> (r+1+n/2): none is its own */
        int s1 = (me + 1) % n, d[2] = { (me + 2) % n, (me + 1 + n / 2) % n }, deg = 2;
        KT_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &s1, &deg, d, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c));
        learn(&t, "distributed graph", c);
        KT_EQ_INT(t.nout, 2);
        KT_EQ_INT(t.nin, 2);
        test_topo(&t);
        KT_MPI(MPI_Comm_free(&c));
    }

    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return 0;
}
