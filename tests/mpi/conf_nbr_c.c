/* conf_nbr_c: every large-count neighbourhood collective (issue 16 item 11):
 * MPI_Neighbor_{allgather,allgatherv,alltoall,alltoallv,alltoallw}_c, their
 * MPI_Ineighbor_..._c and MPI_Neighbor_..._init_c forms (the persistent ones
 * started twice with new contents), with MPI_Count counts and MPI_Aint
 * displacements, uneven per block, on
 *   - a periodic 1-D Cartesian ring of the 4 processes,
 *   - a non-periodic 2 x 2 Cartesian grid (MPI_PROC_NULL neighbours: their
 *     receive blocks stay untouched),
 *   - a distributed graph (MPI_Dist_graph_create_adjacent: out to me+1 and
 *     me+2, in from me-1 and me-2),
 * each with 3 and 20000 ints per block (80000 bytes: rendezvous).  Every
 * element received is checked, and so are the gaps between the blocks.
 * 4 ranks. */
#include "kt.h"

#define MAXD 4
#define NOTSET (-7)

static int me;

struct topo {
    const char *name;
    MPI_Comm comm;
    int nin, nout, in[MAXD], out[MAXD];
    int match[MAXD];        /* my in block i is the sender's out block match[i] */
};

enum { AG, AGV, A2A, A2AV, A2AW, NOPS };
static const char *const opname[NOPS] = { "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw" };
enum { BLOCKING, NONBLOCKING, PERSISTENT, NFORMS };
static const char *const formname[NFORMS] = { "MPI_Neighbor_*_c", "MPI_Ineighbor_*_c", "MPI_Neighbor_*_init_c" };

/* elements of the block sender s sends through its out slot j (alltoall*),
 * or to all (allgather*: j = 9), in round rd */
static int val(int s, int j, int e, int rd) { return s * 1000000 + j * 100000 + e * 3 + rd; }
/* uneven block lengths: allgatherv's block of s, alltoallv/w's block of s through slot j */
static MPI_Count gcount(int s, MPI_Count c) { return c - s % 3; }
static MPI_Count acount(int s, int j, MPI_Count c) { return c - (s + 2 * j) % 3; }

static int *ialloc(size_t n)
{
    int *p = malloc(sizeof(int) * (n ? n : 1));
    KT_CHECK(p != NULL, "out of memory");
    return p;
}

static void run(const struct topo *t, int op, int form, MPI_Count c)
{
    int nin = t->nin, nout = t->nout, j, i;
    MPI_Count sc[MAXD], rc[MAXD], stot = 0, rtot = 0;
    MPI_Aint sd[MAXD], rd[MAXD], sdb[MAXD], rdb[MAXD];
    MPI_Datatype sty[MAXD], rty[MAXD], one;
    MPI_Comm cm = t->comm;
    MPI_Request rq = MPI_REQUEST_NULL;
    MPI_Info ni = MPI_INFO_NULL;
    KT_MPI(MPI_Type_contiguous(1, MPI_INT, &one));
    KT_MPI(MPI_Type_commit(&one));
    for (j = 0; j < nout; j++) {            /* send blocks, a gap of 1 */
        sc[j] = op == AGV ? gcount(me, c) : op >= A2AV ? acount(me, j, c) : c;
        sd[j] = (MPI_Aint)stot;
        stot += sc[j] + 1;
        sdb[j] = sd[j] * (MPI_Aint)sizeof(int);
        sty[j] = j % 2 ? one : MPI_INT;
    }
    for (i = nin - 1; i >= 0; i--) {         /* receive blocks in reverse order, a gap of 2 */
        int s = t->in[i];
        rc[i] = s == MPI_PROC_NULL ? c : op == AGV ? gcount(s, c) : op >= A2AV ? acount(s, t->match[i], c) : c;
        rd[i] = (MPI_Aint)rtot;
        rtot += rc[i] + 2;
        rdb[i] = rd[i] * (MPI_Aint)sizeof(int);
        rty[i] = i % 2 ? MPI_INT : one;
    }
    size_t slen = (size_t)stot + (size_t)c * MAXD + 1, rlen = (size_t)rtot + (size_t)c * MAXD + 1;
    int *sb = ialloc(slen), *rb = ialloc(rlen);
    int rounds = form == PERSISTENT ? 2 : 1;
    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < slen; k++) sb[k] = NOTSET;
        for (size_t k = 0; k < rlen; k++) rb[k] = NOTSET;
        if (op == AG || op == AGV)
            for (MPI_Count e = 0; e < (op == AG ? c : gcount(me, c)); e++) sb[e] = val(me, 9, (int)e, r);
        else if (op == A2A)
            for (j = 0; j < nout; j++)
                for (MPI_Count e = 0; e < c; e++) sb[j * c + e] = val(me, j, (int)e, r);
        else
            for (j = 0; j < nout; j++)
                for (MPI_Count e = 0; e < sc[j]; e++) sb[sd[j] + e] = val(me, j, (int)e, r);
        if (form == BLOCKING) {
            switch (op) {
            case AG: KT_MPI(MPI_Neighbor_allgather_c(sb, c, MPI_INT, rb, c, MPI_INT, cm)); break;
            case AGV: KT_MPI(MPI_Neighbor_allgatherv_c(sb, gcount(me, c), MPI_INT, rb, rc, rd, MPI_INT, cm)); break;
            case A2A: KT_MPI(MPI_Neighbor_alltoall_c(sb, c, MPI_INT, rb, c, MPI_INT, cm)); break;
            case A2AV: KT_MPI(MPI_Neighbor_alltoallv_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, cm)); break;
            default: KT_MPI(MPI_Neighbor_alltoallw_c(sb, sc, sdb, sty, rb, rc, rdb, rty, cm)); break;
            }
        } else if (form == NONBLOCKING) {
            switch (op) {
            case AG: KT_MPI(MPI_Ineighbor_allgather_c(sb, c, MPI_INT, rb, c, MPI_INT, cm, &rq)); break;
            case AGV: KT_MPI(MPI_Ineighbor_allgatherv_c(sb, gcount(me, c), MPI_INT, rb, rc, rd, MPI_INT, cm, &rq)); break;
            case A2A: KT_MPI(MPI_Ineighbor_alltoall_c(sb, c, MPI_INT, rb, c, MPI_INT, cm, &rq)); break;
            case A2AV: KT_MPI(MPI_Ineighbor_alltoallv_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, cm, &rq)); break;
            default: KT_MPI(MPI_Ineighbor_alltoallw_c(sb, sc, sdb, sty, rb, rc, rdb, rty, cm, &rq)); break;
            }
            KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            KT_CHECK(rq == MPI_REQUEST_NULL, "request not freed");
        } else {
            if (r == 0) {
                switch (op) {
                case AG: KT_MPI(MPI_Neighbor_allgather_init_c(sb, c, MPI_INT, rb, c, MPI_INT, cm, ni, &rq)); break;
                case AGV:
                    KT_MPI(MPI_Neighbor_allgatherv_init_c(sb, gcount(me, c), MPI_INT, rb, rc, rd, MPI_INT, cm, ni, &rq));
                    break;
                case A2A: KT_MPI(MPI_Neighbor_alltoall_init_c(sb, c, MPI_INT, rb, c, MPI_INT, cm, ni, &rq)); break;
                case A2AV:
                    KT_MPI(MPI_Neighbor_alltoallv_init_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, cm, ni, &rq));
                    break;
                default:
                    KT_MPI(MPI_Neighbor_alltoallw_init_c(sb, sc, sdb, sty, rb, rc, rdb, rty, cm, ni, &rq));
                    break;
                }
            }
            KT_MPI(MPI_Start(&rq));
            if (r == 0) {
                KT_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            } else {
                int flag = 0;
                while (!flag) KT_MPI(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
            }
            KT_CHECK(rq != MPI_REQUEST_NULL, "persistent request freed by completion");
        }
        /* check: where each block lands (contiguous for allgather/alltoall,
         * at the displacements otherwise), what is around it untouched */
        int *want = ialloc(rlen);
        for (size_t k = 0; k < rlen; k++) want[k] = NOTSET;
        for (i = 0; i < nin; i++) {
            int s = t->in[i];
            MPI_Count at = (op == AG || op == A2A) ? (MPI_Count)i * c : (MPI_Count)rd[i];
            if (s == MPI_PROC_NULL) continue;
            int slot = (op == AG || op == AGV) ? 9 : t->match[i];
            for (MPI_Count e = 0; e < rc[i]; e++) want[at + e] = val(s, slot, (int)e, r);
        }
        for (size_t k = 0; k < rlen; k++)
            if (rb[k] != want[k])
                KT_FAIL("%s %s_c (%s), %lld per block, round %d: element %zu is %d, expected %d", t->name,
                        opname[op], formname[form], (long long)c, r, k, rb[k], want[k]);
        free(want);
    }
    if (form == PERSISTENT) KT_MPI(MPI_Request_free(&rq));
    KT_MPI(MPI_Type_free(&one));
    free(sb);
    free(rb);
}

int main(int argc, char **argv)
{
    int size;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 4, "needs 4 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    struct topo tp[3];
    memset(tp, 0, sizeof tp);
    /* periodic ring: in/out block 0 is the - side, 1 the + side */
    int dims1[1] = { 4 }, per1[1] = { 1 }, dims2[2] = { 2, 2 }, per2[2] = { 0, 0 };
    tp[0].name = "periodic ring";
    KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims1, per1, 0, &tp[0].comm));
    tp[1].name = "2x2 grid";
    KT_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims2, per2, 0, &tp[1].comm));
    for (int k = 0; k < 2; k++) {
        int nd = k == 0 ? 1 : 2, crank;
        KT_MPI(MPI_Comm_rank(tp[k].comm, &crank));
        KT_CHECK(crank == me, "reordered");
        tp[k].nin = tp[k].nout = 2 * nd;
        for (int d = 0; d < nd; d++) {
            KT_MPI(MPI_Cart_shift(tp[k].comm, d, 1, &tp[k].in[2 * d], &tp[k].in[2 * d + 1]));
            tp[k].out[2 * d] = tp[k].in[2 * d];
            tp[k].out[2 * d + 1] = tp[k].in[2 * d + 1];
        }
        for (int i = 0; i < tp[k].nin; i++) tp[k].match[i] = i ^ 1;
    }
    tp[2].name = "dist graph";
    tp[2].nin = tp[2].nout = 2;
    tp[2].in[0] = (me + 3) % 4;
    tp[2].in[1] = (me + 2) % 4;
    tp[2].out[0] = (me + 1) % 4;
    tp[2].out[1] = (me + 2) % 4;
    tp[2].match[0] = 0;        /* me-1 sends to me through its slot 0 (me-1+1) */
    tp[2].match[1] = 1;        /* me-2 through its slot 1 (me-2+2) */
    KT_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, tp[2].in, MPI_UNWEIGHTED, 2, tp[2].out,
                                          MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &tp[2].comm));

    const MPI_Count counts[2] = { 3, 20000 };
    for (int k = 0; k < 3; k++) {
        MPI_Comm_set_errhandler(tp[k].comm, MPI_ERRORS_RETURN);
        for (int ci = 0; ci < 2; ci++)
            for (int op = 0; op < NOPS; op++)
                for (int form = 0; form < NFORMS; form++) run(&tp[k], op, form, counts[ci]);
    }
    for (int k = 0; k < 3; k++) KT_MPI(MPI_Comm_free(&tp[k].comm));
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 0) printf("conf_nbr_c: OK\n");
    KT_MPI(MPI_Finalize());
    return 0;
}
