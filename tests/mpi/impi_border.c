/* impi_border: a job of several IMPI clients (mpiexec --impi-client, run by
 * tests/scripts/impi_clients.sh): MPI_COMM_WORLD spans the clients in client
 * order; point-to-point across the border both ways (eager, rendezvous,
 * synchronous, many tags, any-source, probe, cancel), collectives of the
 * generic components over world, a communicator split across the border,
 * and external32 at the border bit for bit (doubles with NaN payloads, -0,
 * subnormals and infinities; integer extremes; a struct with padding;
 * bytes).
 *
 *   impi_border SIZE NPERCLIENT [die R]
 * SIZE: the world size expected; NPERCLIENT: ranks per client (a rank's
 * client is rank / NPERCLIENT); "die R": world rank R kills itself with
 * SIGKILL after the first exchange (the others then must end, not hang). */
#include "kt.h"
#include <float.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

static int rank, size, nper;

static int peer_across(int r)            /* same position in the next client */
{
    return (r + nper) % size;
}

static void fill_doubles(double *d, int n, int seed)
{
    static const uint64_t special[] = {
        0x7ff8000000000001ull,            /* quiet NaN with a payload */
        0x7ff0000000000123ull,            /* signalling NaN with a payload */
        0x8000000000000000ull,            /* -0.0 */
        0x0000000000000001ull,            /* smallest subnormal */
        0x800fffffffffffffull,            /* largest negative subnormal */
        0x7ff0000000000000ull,            /* +inf */
        0xfff0000000000000ull,            /* -inf */
        0x7fefffffffffffffull,            /* DBL_MAX */
    };
    for (int i = 0; i < n; i++) {
        uint64_t b;
        if (i < 8) b = special[i];
        else {
            double v = (double)(i * 7919 + seed) / 3.0 - 1e6;
            memcpy(&b, &v, 8);
            b ^= (uint64_t)(i & 0xff);   /* scramble the low mantissa bits */
        }
        memcpy(&d[i], &b, 8);
    }
}

struct rec { int i; double d; char c[3]; short s; long long ll; };

static MPI_Datatype rec_type(void)
{
    MPI_Datatype t, r;
    int bl[5] = { 1, 1, 3, 1, 1 };
    MPI_Aint disp[5] = { offsetof(struct rec, i), offsetof(struct rec, d), offsetof(struct rec, c),
                         offsetof(struct rec, s), offsetof(struct rec, ll) };
    MPI_Datatype ty[5] = { MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_SHORT, MPI_LONG_LONG };
    KT_MPI(MPI_Type_create_struct(5, bl, disp, ty, &t));
    KT_MPI(MPI_Type_create_resized(t, 0, sizeof(struct rec), &r));
    KT_MPI(MPI_Type_commit(&r));
    MPI_Type_free(&t);
    return r;
}

static void fill_rec(struct rec *x, int n, int seed)
{
    memset(x, 0x5a, (size_t)n * sizeof *x);
    for (int k = 0; k < n; k++) {
        x[k].i = k % 3 == 0 ? INT_MIN + k : k % 3 == 1 ? INT_MAX - k : -k * seed;
        uint64_t b = 0x8000000000000000ull | (uint64_t)(k * 0x9e3779b97f4a7c15ull >> 12);
        memcpy(&x[k].d, &b, 8);
        x[k].c[0] = (char)k; x[k].c[1] = (char)(k * 3); x[k].c[2] = (char)-k;
        x[k].s = (short)(k % 2 ? SHRT_MIN + k : SHRT_MAX - k);
        x[k].ll = (long long)((uint64_t)seed << 40 | (uint64_t)k) * (k % 2 ? -1 : 1);
    }
}

static int rec_equal(const struct rec *a, const struct rec *b, int n)
{
    for (int k = 0; k < n; k++)
        if (a[k].i != b[k].i || memcmp(&a[k].d, &b[k].d, 8) || memcmp(a[k].c, b[k].c, 3) || a[k].s != b[k].s ||
            a[k].ll != b[k].ll)
            return 0;
    return 1;
}

static void p2p_across(void)
{
    int to = peer_across(rank), from = (rank - nper + size) % size;
    /* eager ints, both ways at once */
    int sv[16], rv[16];
    for (int i = 0; i < 16; i++) sv[i] = rank * 1000 + i;
    KT_MPI(MPI_Sendrecv(sv, 16, MPI_INT, to, 1, rv, 16, MPI_INT, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 16; i++) KT_EQ_INT(rv[i], from * 1000 + i);

    /* rendezvous: 1 Mi doubles (8 MiB, many packets), bit for bit */
    int n = 1 << 20;
    double *sd = malloc((size_t)n * 8), *rd = malloc((size_t)n * 8), *want = malloc((size_t)n * 8);
    fill_doubles(sd, n, rank);
    fill_doubles(want, n, from);
    MPI_Request rq[2];
    MPI_Status st;
    KT_MPI(MPI_Irecv(rd, n, MPI_DOUBLE, from, 2, MPI_COMM_WORLD, &rq[0]));
    KT_MPI(MPI_Isend(sd, n, MPI_DOUBLE, to, 2, MPI_COMM_WORLD, &rq[1]));
    KT_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    KT_CHECK(memcmp(rd, want, (size_t)n * 8) == 0, "rendezvous doubles from rank %d differ", from);

    /* synchronous, short and long, one direction then the other (2 clients) */
    for (int dir = 0; dir < 2; dir++) {
        int sender = dir == 0 ? rank < nper : rank >= nper;
        for (int len = 3; len <= n; len = len < n ? n : n + 1) {
            if (sender) {
                fill_doubles(sd, len, rank + len);
                KT_MPI(MPI_Ssend(sd, len, MPI_DOUBLE, to, 3, MPI_COMM_WORLD));
            } else {
                KT_MPI(MPI_Recv(rd, len, MPI_DOUBLE, from, 3, MPI_COMM_WORLD, &st));
                fill_doubles(want, len, from + len);
                int cnt;
                MPI_Get_count(&st, MPI_DOUBLE, &cnt);
                KT_EQ_INT(cnt, len);
                KT_CHECK(memcmp(rd, want, (size_t)len * 8) == 0, "Ssend of %d doubles differs", len);
            }
        }
    }

    /* many tags: 200 messages sent with tags 0..199 in order, received in reverse tag order */
    enum { NT = 200 };
    MPI_Request trq[NT];
    int tv[NT], tr[NT];
    for (int t = 0; t < NT; t++) {
        tv[t] = rank * 100000 + t;
        KT_MPI(MPI_Isend(&tv[t], 1, MPI_INT, to, 100 + t, MPI_COMM_WORLD, &trq[t]));
    }
    for (int t = NT - 1; t >= 0; t--) {
        KT_MPI(MPI_Recv(&tr[t], 1, MPI_INT, from, 100 + t, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_EQ_INT(tr[t], from * 100000 + t);
    }
    KT_MPI(MPI_Waitall(NT, trq, MPI_STATUSES_IGNORE));

    /* any-source + probe at rank 0: one message from every other rank, long ones from the other clients */
    if (rank == 0) {
        for (int k = 1; k < size; k++) {
            KT_MPI(MPI_Probe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st));
            int cnt, src = st.MPI_SOURCE;
            MPI_Get_count(&st, MPI_DOUBLE, &cnt);
            KT_EQ_INT(cnt, src >= nper ? 100000 : 10);
            KT_MPI(MPI_Recv(rd, cnt, MPI_DOUBLE, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st));
            KT_EQ_INT(st.MPI_SOURCE, src);
            fill_doubles(want, cnt, src);
            KT_CHECK(memcmp(rd, want, (size_t)cnt * 8) == 0, "any-source message of rank %d differs", src);
        }
    } else {
        int cnt = rank >= nper ? 100000 : 10;
        fill_doubles(sd, cnt, rank);
        KT_MPI(MPI_Send(sd, cnt, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD));
    }
    free(sd); free(rd); free(want);

    /* cancel: a send across the border that nobody receives is cancelled */
    int never = 7;
    MPI_Request cr;
    KT_MPI(MPI_Isend(&never, 1, MPI_INT, to, 999, MPI_COMM_WORLD, &cr));
    KT_MPI(MPI_Cancel(&cr));
    KT_MPI(MPI_Wait(&cr, &st));
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    KT_CHECK(cancelled, "an unreceived send to rank %d was not cancelled", to);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int flag = 1;
    KT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    KT_CHECK(!flag, "a cancelled message arrived anyway");
}

static void external32_values(void)
{
    int to = peer_across(rank), from = (rank - nper + size) % size;
    /* integers at their extremes */
    long long li[6] = { LLONG_MIN, LLONG_MAX, -1, 0, 0x0102030405060708ll, (long long)rank };
    long long lr[6];
    unsigned short us[4] = { 0, 1, 0x8001, USHRT_MAX }, ur[4];
    KT_MPI(MPI_Sendrecv(li, 6, MPI_LONG_LONG, to, 20, lr, 6, MPI_LONG_LONG, from, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_CHECK(lr[0] == LLONG_MIN && lr[1] == LLONG_MAX && lr[2] == -1 && lr[3] == 0 && lr[4] == 0x0102030405060708ll &&
             lr[5] == from, "long long values differ");
    KT_MPI(MPI_Sendrecv(us, 4, MPI_UNSIGNED_SHORT, to, 21, ur, 4, MPI_UNSIGNED_SHORT, from, 21, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
    KT_CHECK(!memcmp(us, ur, sizeof us), "unsigned short values differ");
    /* doubles, every special value, bit for bit */
    double ds[64], dr[64], dw[64];
    fill_doubles(ds, 64, rank);
    fill_doubles(dw, 64, from);
    KT_MPI(MPI_Sendrecv(ds, 64, MPI_DOUBLE, to, 22, dr, 64, MPI_DOUBLE, from, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_CHECK(!memcmp(dr, dw, sizeof dr), "doubles differ bit for bit");
    float fs[3] = { -0.0f, FLT_MIN / 4, -FLT_MAX }, fr[3];
    KT_MPI(MPI_Sendrecv(fs, 3, MPI_FLOAT, to, 23, fr, 3, MPI_FLOAT, from, 23, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_CHECK(!memcmp(fs, fr, sizeof fs), "floats differ bit for bit");
    /* a struct with padding, eager and rendezvous */
    MPI_Datatype rt = rec_type();
    for (int n = 5; n <= 20000; n *= 4000) {
        struct rec *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b), *w = malloc((size_t)n * sizeof *w);
        fill_rec(a, n, rank + 1);
        fill_rec(w, n, from + 1);
        memset(b, 0, (size_t)n * sizeof *b);
        KT_MPI(MPI_Sendrecv(a, n, rt, to, 24, b, n, rt, from, 24, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_CHECK(rec_equal(b, w, n), "struct records (%d) differ", n);
        free(a); free(b); free(w);
    }
    MPI_Type_free(&rt);
    /* bytes (no conversion, unless p2p_impi_external32_copy) and a vector of ints */
    unsigned char by[300], bw[300];
    for (int i = 0; i < 300; i++) { by[i] = (unsigned char)(i * 7 + rank); bw[i] = (unsigned char)(i * 7 + from); }
    KT_MPI(MPI_Sendrecv_replace(by, 300, MPI_BYTE, to, 25, from, 25, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_CHECK(!memcmp(by, bw, 300), "bytes differ");
    MPI_Datatype vec;
    KT_MPI(MPI_Type_vector(10, 1, 3, MPI_INT, &vec));
    KT_MPI(MPI_Type_commit(&vec));
    int vs[30], vr[30];
    for (int i = 0; i < 30; i++) { vs[i] = rank * 100 + i; vr[i] = -1; }
    KT_MPI(MPI_Sendrecv(vs, 1, vec, to, 26, vr, 1, vec, from, 26, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 30; i++) KT_EQ_INT(vr[i], i % 3 == 0 ? from * 100 + i : -1);
    MPI_Type_free(&vec);
}

static void collectives(MPI_Comm c, const char *name)
{
    int r, n;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    KT_MPI(MPI_Barrier(c));
    double b[1000];
    int root = n - 1;
    for (int i = 0; i < 1000; i++) b[i] = r == root ? i * 0.5 + root : -1;
    KT_MPI(MPI_Bcast(b, 1000, MPI_DOUBLE, root, c));
    for (int i = 0; i < 1000; i++) KT_CHECK(b[i] == i * 0.5 + root, "%s: bcast value %d", name, i);
    long long s = r + 1, sum = 0;
    KT_MPI(MPI_Allreduce(&s, &sum, 1, MPI_LONG_LONG, MPI_SUM, c));
    KT_EQ_INT(sum, (long long)n * (n + 1) / 2);
    int mx = -1;
    KT_MPI(MPI_Reduce(&r, &mx, 1, MPI_INT, MPI_MAX, 0, c));
    if (r == 0) KT_EQ_INT(mx, n - 1);
    int *all = malloc((size_t)n * 2 * sizeof *all), mine[2] = { r, r * r };
    KT_MPI(MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, c));
    for (int i = 0; i < n; i++) KT_CHECK(all[2 * i] == i && all[2 * i + 1] == i * i, "%s: allgather %d", name, i);
    int *sa = malloc((size_t)n * sizeof *sa), *ra = malloc((size_t)n * sizeof *ra);
    for (int i = 0; i < n; i++) sa[i] = r * 100 + i;
    KT_MPI(MPI_Alltoall(sa, 1, MPI_INT, ra, 1, MPI_INT, c));
    for (int i = 0; i < n; i++) KT_CHECK(ra[i] == i * 100 + r, "%s: alltoall from %d", name, i);
    KT_MPI(MPI_Gather(&r, 1, MPI_INT, ra, 1, MPI_INT, 0, c));
    if (r == 0) for (int i = 0; i < n; i++) KT_EQ_INT(ra[i], i);
    int got = -1;
    KT_MPI(MPI_Scatter(sa, 1, MPI_INT, &got, 1, MPI_INT, root, c));
    KT_EQ_INT(got, root * 100 + r);
    int sc = 0, one = r;
    KT_MPI(MPI_Scan(&one, &sc, 1, MPI_INT, MPI_SUM, c));
    KT_EQ_INT(sc, r * (r + 1) / 2);
    double big[50000], bigr[50000];           /* a reduction past the packet size */
    for (int i = 0; i < 50000; i++) big[i] = r + i;
    KT_MPI(MPI_Allreduce(big, bigr, 50000, MPI_DOUBLE, MPI_SUM, c));
    for (int i = 0; i < 50000; i += 997) KT_CHECK(bigr[i] == (double)n * i + n * (n - 1) / 2.0, "%s: big allreduce", name);
    free(all); free(sa); free(ra);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(argc >= 3, "usage: impi_border SIZE NPERCLIENT [die R]");
    KT_EQ_INT(size, atoi(argv[1]));
    nper = atoi(argv[2]);
    int die = argc >= 5 && !strcmp(argv[3], "die") ? atoi(argv[4]) : -1;
    char host[MPI_MAX_PROCESSOR_NAME];
    int hl;
    MPI_Get_processor_name(host, &hl);
    printf("impi_border: rank %d of %d (client %d) on %s\n", rank, size, rank / nper, host);
    fflush(stdout);

    int v = rank, w = -1;                     /* the first exchange across the border */
    KT_MPI(MPI_Sendrecv(&v, 1, MPI_INT, peer_across(rank), 0, &w, 1, MPI_INT, (rank - nper + size) % size, 0,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_EQ_INT(w, (rank - nper + size) % size);
    if (die >= 0) {
        if (rank == die) {
            fprintf(stderr, "impi_border: rank %d kills itself\n", rank);
            fflush(stderr);
            raise(SIGKILL);
        }
        double x[10];                          /* wait for a message that never comes */
        MPI_Recv(x, 10, MPI_DOUBLE, die, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        KT_FAIL("a message from the dead rank %d arrived", die);
    }
    p2p_across();
    external32_values();
    collectives(MPI_COMM_WORLD, "world");
    MPI_Comm split;                           /* one rank of every client per colour: each spans the border */
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % nper, -rank, &split));
    int sr, sn;
    MPI_Comm_rank(split, &sr);
    MPI_Comm_size(split, &sn);
    KT_EQ_INT(sn, size / nper);
    KT_EQ_INT(sr, sn - 1 - rank / nper);      /* keys -rank: reversed order */
    collectives(split, "split");
    MPI_Comm dup;
    KT_MPI(MPI_Comm_dup(split, &dup));
    int tok = sr == 0 ? 4242 : -1;
    if (sr == 0) KT_MPI(MPI_Send(&tok, 1, MPI_INT, sn - 1, 9, dup));
    if (sr == sn - 1) { KT_MPI(MPI_Recv(&tok, 1, MPI_INT, 0, 9, dup, MPI_STATUS_IGNORE)); KT_EQ_INT(tok, 4242); }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&split);
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    printf("impi_border: rank %d: all checks passed\n", rank);
    MPI_Finalize();
    return 0;
}
