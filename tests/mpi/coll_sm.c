/* coll_sm: the shared-memory collectives of coll/sm (issue 22 item 4).
 *
 * Checks first that coll/sm is there (its parameter coll_sm_max_bytes is a
 * control variable; the run's MPI_COMPONENTS makes it the one selected),
 * then, many rounds over MPI_COMM_WORLD, a reversed split of it and a
 * communicator of the odd ranks, with sizes on both sides of the switch
 * point (max_bytes: the small ones run on the segment, the large ones are
 * passed on to coll/tuned) and values checked on every rank:
 *   MPI_Barrier: a counter in a shared window, incremented before, must
 *     hold every rank's increment after (no rank leaves early);
 *   MPI_Bcast from every root, MPI_INT and a strided vector type (packed);
 *   MPI_Reduce to every root and MPI_Allreduce with SUM, PROD, MAX, MIN,
 *     BAND, BOR, BXOR, LAND, LOR, LXOR on int, SUM and MAX on double,
 *     MAXLOC and MINLOC on MPI_2INT, a commutative user op, a
 *     non-commutative one (2x2 matrix products: rank order), a contiguous
 *     derived type and a non-contiguous one (passed on); also MPI_IN_PLACE;
 *   MPI_Allgather and MPI_Alltoall (also MPI_IN_PLACE);
 *   MPI_Bcast above max_bytes (in pieces through the root's slots where
 *     coll_sm_bcast_pieces says so), from every root and back to back;
 *   and communicators made and freed in a loop with a collective each (no
 *   mapping is left behind).
 * Back-to-back collectives with no barrier between them shake out races on
 * the slots; run oversubscribed (16 ranks on 2 cores) the waits must sleep.
 * argv[1]: rounds (default 20). */
#include "kt.h"
#include "kt_coll.h"

static int wme, wnp, rounds = 20;
static long maxb = 4096;

static void check_sm_present(void)
{
    int idx = -1;
    int provided;
    KT_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    int rc = MPI_T_cvar_get_index("coll_sm_max_bytes", &idx);
    KT_CHECK(rc == MPI_SUCCESS, "coll/sm's parameter coll_sm_max_bytes is unknown (rc %d): no coll/sm", rc);
    MPI_T_cvar_handle h;
    int cnt;
    KT_MPI(MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt));
    long long v = 0;
    KT_MPI(MPI_T_cvar_read(h, &v));
    MPI_T_cvar_handle_free(&h);
    MPI_T_finalize();
    maxb = (long)v;
    KT_CHECK(maxb >= 8, "coll_sm_max_bytes %ld", maxb);
}

/* element k of rank r in round s */
static int ival(int s, int r, long k) { return (s * 31 + r * 1009 + (int)k * 7) % 2000 - 1000; }

static void ucsum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;                                /* pairs of ints (type "two") */
    for (int i = 0; i < 2 * *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

static MPI_Op op_ucsum, op_mat;

enum { O_SUM, O_PROD, O_MAX, O_MIN, O_BAND, O_BOR, O_BXOR, O_LAND, O_LOR, O_LXOR, O_NINT };
static MPI_Op iop_tab[O_NINT];

/* the roots tried: -1 (allreduce), then every rank up to 8 ranks, else 0, 1, the middle one, the last */
static int next_root(int root, int np)
{
    if (np <= 8 || root < 1) return root + 1;
    if (root == 1) return np / 2 > 1 ? np / 2 : np - 1;
    if (root < np - 1) return np - 1;
    return np;
}

static int icomb(int o, int a, int b)
{
    switch (o) {
    case O_SUM: return (int)((unsigned)a + (unsigned)b);
    case O_PROD: return (int)((unsigned)a * (unsigned)b);
    case O_MAX: return a > b ? a : b;
    case O_MIN: return a < b ? a : b;
    case O_BAND: return a & b;
    case O_BOR: return a | b;
    case O_BXOR: return a ^ b;
    case O_LAND: return a && b;
    case O_LOR: return a || b;
    default: return !a != !b;
    }
}

/* small values for PROD (no overflow questions), others as they are */
static int opval(int o, int s, int r, long k)
{
    int v = ival(s, r, k);
    if (o == O_PROD) return v % 3 + 2;
    if (o >= O_LAND) return (v & 3) == 0 ? 0 : v;
    return v;
}

static void test_barrier(MPI_Comm comm, MPI_Win win, int *ctr)
{
    int np;
    MPI_Comm_size(comm, &np);
    for (int i = 1; i <= 50; i++) {
        __atomic_add_fetch(ctr, 1, __ATOMIC_SEQ_CST);
        KT_MPI(MPI_Barrier(comm));
        int v = __atomic_load_n(ctr, __ATOMIC_SEQ_CST);
        KT_CHECK(v >= i * np, "barrier %d: counter %d, expected at least %d", i, v, i * np);
    }
    (void)win;
}

static void test_bcast(MPI_Comm comm, int s, long n)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    int *b = malloc(sizeof(int) * (size_t)(2 * n + 2));
    MPI_Datatype vec;
    KT_MPI(MPI_Type_vector((int)n, 1, 2, MPI_INT, &vec));
    KT_MPI(MPI_Type_commit(&vec));
    for (int root = 0; root < np; root++) {
        for (long k = 0; k < n; k++) b[k] = me == root ? ival(s, root, k) : -7;
        KT_MPI(MPI_Bcast(b, (int)n, MPI_INT, root, comm));
        for (long k = 0; k < n; k++)
            KT_CHECK(b[k] == ival(s, root, k), "bcast n=%ld root %d: [%ld] = %d", n, root, k, b[k]);
        /* the root sends a vector, the others receive contiguous ints, or the reverse */
        int vroot = (root + s) % 2;
        for (long k = 0; k < 2 * n; k++) b[k] = -7;
        if (me == root)
            for (long k = 0; k < n; k++) b[(me == root && vroot ? 2 * k : k)] = ival(s + 1, root, k);
        if (vroot == (me == root)) KT_MPI(MPI_Bcast(b, 1, vec, root, comm));
        else KT_MPI(MPI_Bcast(b, (int)n, MPI_INT, root, comm));
        int strided = vroot == (me == root);
        for (long k = 0; k < n; k++)
            KT_CHECK(b[strided ? 2 * k : k] == ival(s + 1, root, k), "bcast (vector) n=%ld root %d: [%ld] = %d",
                     n, root, k, b[strided ? 2 * k : k]);
        if (strided)
            for (long k = 0; k < n; k++) KT_CHECK(b[2 * k + 1] == -7, "bcast (vector) wrote a hole");
    }
    MPI_Type_free(&vec);
    free(b);
}

static void test_reduce(MPI_Comm comm, int s, long n)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    int *in = malloc(sizeof(int) * (size_t)(4 * n + 4)), *out = malloc(sizeof(int) * (size_t)(4 * n + 4));
    for (int o = 0; o < O_NINT; o++)
        for (int root = -1; root < np; root = next_root(root, np)) {
            for (int inplace = 0; inplace < 2; inplace++) {
                for (long k = 0; k < n; k++) in[k] = opval(o, s, me, k), out[k] = -5;
                int here = root < 0 || root == me;
                const void *sb = in;
                if (inplace && here) {
                    memcpy(out, in, sizeof(int) * (size_t)n);
                    sb = MPI_IN_PLACE;
                }
                if (root < 0) KT_MPI(MPI_Allreduce(sb, out, (int)n, MPI_INT, iop_tab[o], comm));
                else KT_MPI(MPI_Reduce(sb, out, (int)n, MPI_INT, iop_tab[o], root, comm));
                if (!here) continue;
                for (long k = 0; k < n; k++) {
                    int x = opval(o, s, np - 1, k);
                    for (int r = np - 2; r >= 0; r--) x = icomb(o, opval(o, s, r, k), x);
                    KT_CHECK(out[k] == x, "%s op %d n=%ld root %d inplace %d: [%ld] = %d, expected %d",
                             root < 0 ? "allreduce" : "reduce", o, n, root, inplace, k, out[k], x);
                }
            }
        }
    /* double SUM / MAX */
    double *d = malloc(sizeof(double) * (size_t)(n + 1)), *dr = malloc(sizeof(double) * (size_t)(n + 1));
    for (long k = 0; k < n; k++) d[k] = ival(s, me, k) * 0.5;
    KT_MPI(MPI_Allreduce(d, dr, (int)n, MPI_DOUBLE, MPI_SUM, comm));
    for (long k = 0; k < n; k++) {
        double x = 0;
        for (int r = 0; r < np; r++) x += ival(s, r, k) * 0.5;
        KT_CHECK(dr[k] == x, "allreduce double sum [%ld] = %g, expected %g", k, dr[k], x);
    }
    KT_MPI(MPI_Reduce(d, dr, (int)n, MPI_DOUBLE, MPI_MAX, np - 1, comm));
    if (me == np - 1)
        for (long k = 0; k < n; k++) {
            double x = -1e9;
            for (int r = 0; r < np; r++) x = ival(s, r, k) * 0.5 > x ? ival(s, r, k) * 0.5 : x;
            KT_CHECK(dr[k] == x, "reduce double max [%ld] = %g, expected %g", k, dr[k], x);
        }
    free(d);
    free(dr);
    /* MAXLOC / MINLOC on MPI_2INT (n/2 pairs) */
    long m = n / 2;
    for (long k = 0; k < m; k++) in[2 * k] = ival(s, me, k) % 7, in[2 * k + 1] = me;
    KT_MPI(MPI_Allreduce(in, out, (int)m, MPI_2INT, MPI_MAXLOC, comm));
    for (long k = 0; k < m; k++) {
        int bv = -100, bi = 0;
        for (int r = 0; r < np; r++)
            if (ival(s, r, k) % 7 > bv) bv = ival(s, r, k) % 7, bi = r;
        KT_CHECK(out[2 * k] == bv && out[2 * k + 1] == bi, "maxloc [%ld] = (%d, %d), expected (%d, %d)", k,
                 out[2 * k], out[2 * k + 1], bv, bi);
    }
    KT_MPI(MPI_Allreduce(MPI_IN_PLACE, in, (int)m, MPI_2INT, MPI_MINLOC, comm));
    for (long k = 0; k < m; k++) {
        int bv = 100, bi = 0;
        for (int r = 0; r < np; r++)
            if (ival(s, r, k) % 7 < bv) bv = ival(s, r, k) % 7, bi = r;
        KT_CHECK(in[2 * k] == bv && in[2 * k + 1] == bi, "minloc [%ld] = (%d, %d), expected (%d, %d)", k,
                 in[2 * k], in[2 * k + 1], bv, bi);
    }
    /* a commutative user op on a contiguous type of 2 ints */
    MPI_Datatype two;
    KT_MPI(MPI_Type_contiguous(2, MPI_INT, &two));
    KT_MPI(MPI_Type_commit(&two));
    for (long k = 0; k < 2 * m; k++) in[k] = ival(s, me, k);
    KT_MPI(MPI_Allreduce(in, out, (int)m, two, op_ucsum, comm));
    for (long k = 0; k < 2 * m; k++) {
        int x = 0;
        for (int r = 0; r < np; r++) x += ival(s, r, k);
        KT_CHECK(out[k] == x, "user sum [%ld] = %d, expected %d", k, out[k], x);
    }
    MPI_Type_free(&two);
    /* non-commutative: 2x2 matrices (n/4 of them), rank order */
    MPI_Datatype mat;
    KT_MPI(MPI_Type_contiguous(4, MPI_INT, &mat));
    KT_MPI(MPI_Type_commit(&mat));
    long q = n / 4;
    for (int root = -1; root < np; root = next_root(root, np)) {
        for (long k = 0; k < q; k++) kt_mat_of(s, me, k, in + 4 * k);
        if (root < 0) KT_MPI(MPI_Allreduce(MPI_IN_PLACE, in, (int)q, mat, op_mat, comm));
        else KT_MPI(MPI_Reduce(me == root ? MPI_IN_PLACE : in, in, (int)q, mat, op_mat, root, comm));
        if (root >= 0 && me != root) continue;
        for (long k = 0; k < q; k++) {
            int x[4];
            kt_mat_prod(s, 0, np - 1, k, x);
            KT_CHECK(!memcmp(x, in + 4 * k, sizeof x), "matrix product root %d [%ld]: %d %d %d %d, expected %d %d %d %d",
                     root, k, in[4 * k], in[4 * k + 1], in[4 * k + 2], in[4 * k + 3], x[0], x[1], x[2], x[3]);
        }
    }
    MPI_Type_free(&mat);
    /* a non-contiguous type (every other int): passed on, same answers */
    MPI_Datatype v2, v2r;
    KT_MPI(MPI_Type_vector(1, 1, 2, MPI_INT, &v2));
    KT_MPI(MPI_Type_create_resized(v2, 0, 2 * sizeof(int), &v2r));
    KT_MPI(MPI_Type_commit(&v2r));
    for (long k = 0; k < 2 * m; k++) in[k] = ival(s, me, k), out[k] = -3;
    KT_MPI(MPI_Allreduce(in, out, (int)m, v2r, MPI_SUM, comm));
    for (long k = 0; k < m; k++) {
        int x = 0;
        for (int r = 0; r < np; r++) x += ival(s, r, 2 * k);
        KT_CHECK(out[2 * k] == x && out[2 * k + 1] == -3, "strided sum [%ld] = %d, expected %d", k, out[2 * k], x);
    }
    MPI_Type_free(&v2);
    MPI_Type_free(&v2r);
    free(in);
    free(out);
}

static void test_gather(MPI_Comm comm, int s, long n)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    long nb = n / np > 0 ? n / np : 1;      /* alltoall: blocks of nb, p blocks */
    int *in = malloc(sizeof(int) * (size_t)(np * n + 1)), *out = malloc(sizeof(int) * (size_t)(np * n + 1));
    for (int inplace = 0; inplace < 2; inplace++) {
        for (long k = 0; k < (long)np * n; k++) out[k] = -9;
        for (long k = 0; k < n; k++) in[k] = ival(s, me, k);
        if (inplace) memcpy(out + (long)me * n, in, sizeof(int) * (size_t)n);
        KT_MPI(MPI_Allgather(inplace ? MPI_IN_PLACE : in, (int)n, MPI_INT, out, (int)n, MPI_INT, comm));
        for (int r = 0; r < np; r++)
            for (long k = 0; k < n; k++)
                KT_CHECK(out[r * n + k] == ival(s, r, k), "allgather n=%ld inplace %d: [%d][%ld] = %d", n, inplace, r,
                         k, out[r * n + k]);
        for (int d = 0; d < np; d++)
            for (long k = 0; k < nb; k++) in[d * nb + k] = ival(s, me * 64 + d, k);
        if (inplace) memcpy(out, in, sizeof(int) * (size_t)(np * nb));
        KT_MPI(MPI_Alltoall(inplace ? MPI_IN_PLACE : in, (int)nb, MPI_INT, out, (int)nb, MPI_INT, comm));
        for (int r = 0; r < np; r++)
            for (long k = 0; k < nb; k++)
                KT_CHECK(out[r * nb + k] == ival(s, r * 64 + me, k), "alltoall nb=%ld inplace %d: [%d][%ld] = %d", nb,
                         inplace, r, k, out[r * nb + k]);
    }
    free(in);
    free(out);
}

static int maps_count(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    int n = 0, c;
    if (!f) return -1;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wme);
    MPI_Comm_size(MPI_COMM_WORLD, &wnp);
    if (argc > 1) rounds = atoi(argv[1]);
    check_sm_present();
    MPI_Op_create(ucsum, 1, &op_ucsum);
    MPI_Op_create(kt_matmul, 0, &op_mat);
    MPI_Op t[O_NINT] = { MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR };
    memcpy(iop_tab, t, sizeof t);

    /* a counter shared by the ranks (the barrier check) */
    MPI_Comm node;
    KT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_Win win;
    int *ctr;
    KT_MPI(MPI_Win_allocate_shared(wme == 0 ? 64 : 0, 1, MPI_INFO_NULL, node, &ctr, &win));
    MPI_Aint sz;
    int du;
    KT_MPI(MPI_Win_shared_query(win, 0, &sz, &du, &ctr));
    if (wme == 0) *ctr = 0;
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    MPI_Comm rev, odd;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, wnp - wme, &rev));
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, wme % 2 ? 1 : MPI_UNDEFINED, wme, &odd));
    long sizes[] = { 1, 2, 3, 8, 17, maxb / 4 - 1, maxb / 4, maxb / 4 + 1, maxb / 2 + 3 };
    int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    for (int s = 0; s < rounds; s++) {
        MPI_Comm comms[3] = { MPI_COMM_WORLD, rev, odd };
        for (int c = 0; c < 3; c++) {
            if (comms[c] == MPI_COMM_NULL) continue;
            long n = sizes[(s + c) % nsizes];
            if (n < 1) n = 1;
            if (c == 0 && s % 4 == 0) {
                if (wme == 0) *ctr = 0;
                KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
                test_barrier(MPI_COMM_WORLD, win, ctr);
                KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
            }
            test_bcast(comms[c], s, n);
            test_reduce(comms[c], s, n);
            test_gather(comms[c], s, n < 64 ? n : n / 8);
        }
    }
    /* back-to-back broadcasts from one root (it runs ahead of the others
     * by up to coll_sm_slots - 1), then from a moving root */
    for (int i = 0; i < 2000; i++) {
        int v[3] = { wme == 0 ? i : -1, wme == 0 ? i * 3 : -1, wme == 0 ? -i : -1 };
        KT_MPI(MPI_Bcast(v, 3, MPI_INT, 0, MPI_COMM_WORLD));
        KT_CHECK(v[0] == i && v[1] == 3 * i && v[2] == -i, "back-to-back bcast %d: %d %d %d", i, v[0], v[1], v[2]);
    }
    /* the same with data that needs a slot every third call (fewer slots
     * than heads per rank: the root runs ahead less on those), its values
     * checked after every call: a slot written again too early shows */
    enum { BIG = 200 };
    int *big = malloc(sizeof(int) * BIG);
    for (int i = 0; i < 3000; i++) {
        int n = i % 3 ? 2 : (int)(maxb / (long)sizeof(int) < BIG ? maxb / (long)sizeof(int) : BIG);
        for (int k = 0; k < n; k++) big[k] = wme == 0 ? i * 7 + k : -1;
        KT_MPI(MPI_Bcast(big, n, MPI_INT, 0, MPI_COMM_WORLD));
        for (int k = 0; k < n; k++)
            KT_CHECK(big[k] == i * 7 + k, "back-to-back bcast %d (%d ints): [%d] = %d", i, n, k, big[k]);
    }
    free(big);
    for (int i = 0; i < 500; i++) {
        int root = (i / 7) % wnp, v = wme == root ? i * 11 : -1;
        KT_MPI(MPI_Bcast(&v, 1, MPI_INT, root, MPI_COMM_WORLD));
        KT_EQ_INT(v, i * 11);
    }
    /* broadcasts above max_bytes: where coll_sm_bcast_pieces says so (-1: ranks
     * sharing cores; the list forces 1 too) in pieces of max_bytes through
     * the root's slots, the last piece in a head (48 bytes) or not, more
     * pieces than the ring has slots with a small segment; from every root,
     * contiguous and strided, then back to back from one root, checked after
     * every call (a slot written again too early shows) */
    long pn[] = { maxb / 4 + 1, maxb / 2 + 12, 5 * maxb / 4 + 3, 16 * maxb / 4 - 1, 40 * maxb / 4 + 5 };
    for (int s = 0; s < 10; s++) test_bcast(s % 2 ? rev : MPI_COMM_WORLD, s, pn[s % 5]);
    long nbig = 40 * maxb / 4 + 5;
    big = malloc(sizeof(int) * (size_t)nbig);
    for (int i = 0; i < 300; i++) {
        long n = pn[i % 5];
        int root = (i / 50) % wnp;
        for (long k = 0; k < n; k++) big[k] = wme == root ? (int)(i * 13 + k) : -1;
        KT_MPI(MPI_Bcast(big, (int)n, MPI_INT, root, MPI_COMM_WORLD));
        for (long k = 0; k < n; k++)
            KT_CHECK(big[k] == (int)(i * 13 + k), "back-to-back bcast in pieces %d (%ld ints): [%ld] = %d", i, n, k,
                     big[k]);
    }
    free(big);
    /* communicators made and freed: each maps a segment, none stays */
    int before = maps_count();
    for (int i = 0; i < 100; i++) {
        MPI_Comm d;
        KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        int x = wme + i, y = 0;
        KT_MPI(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, d));
        KT_EQ_INT(y, wnp * (wnp - 1) / 2 + wnp * i);
        KT_MPI(MPI_Comm_free(&d));
    }
    int after = maps_count();
    KT_CHECK(after <= before + 2, "mappings: %d before 100 communicators, %d after", before, after);

    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    MPI_Comm_free(&rev);
    if (odd != MPI_COMM_NULL) MPI_Comm_free(&odd);
    MPI_Op_free(&op_ucsum);
    MPI_Op_free(&op_mat);
    if (wme == 0) printf("coll_sm: %d rounds on %d ranks, max_bytes %ld: ok\n", rounds, wnp, maxb);
    MPI_Finalize();
    return 0;
}
