/* MPI_Dims_create: a table of (nnodes, dims in) -> dims out cases, the
 * properties of every factorisation up to 300 nodes and 4 dimensions, and the
 * errors (MPI_ERR_DIMS for impossible fixed entries).
 *
 * Balanced (issue 16 item 15) means: the smallest spread (largest minus
 * smallest entry); among equal spreads the largest smallest entry, then the
 * smallest sum (MPICH's choice: e.g. 21 x 16 x 15 for 5,040 in 3, not the
 * 20 x 18 x 14 of a greedy split, which has the same spread). */
#include "kt.h"

struct dcase { int nnodes, ndims, in[4], out[4]; };

static const struct dcase cases[] = {
    { 1, 1, {0}, {1} },
    { 6, 2, {0, 0}, {3, 2} },             /* the standard's examples */
    { 7, 2, {0, 0}, {7, 1} },
    { 6, 3, {0, 3, 0}, {2, 3, 1} },
    { 12, 2, {0, 0}, {4, 3} },
    { 16, 2, {0, 0}, {4, 4} },
    { 16, 3, {0, 0, 0}, {4, 2, 2} },
    { 16, 4, {0, 0, 0, 0}, {2, 2, 2, 2} },
    { 24, 3, {0, 0, 0}, {4, 3, 2} },
    { 32, 3, {0, 0, 0}, {4, 4, 2} },
    { 36, 3, {0, 0, 0}, {4, 3, 3} },
    { 60, 3, {0, 0, 0}, {5, 4, 3} },
    { 64, 3, {0, 0, 0}, {4, 4, 4} },
    { 8, 3, {0, 0, 0}, {2, 2, 2} },
    { 9, 2, {0, 0}, {3, 3} },
    { 30, 2, {0, 0}, {6, 5} },
    { 1, 3, {0, 0, 0}, {1, 1, 1} },
    { 12, 3, {2, 0, 0}, {2, 3, 2} },
    { 12, 3, {0, 0, 3}, {2, 2, 3} },
    { 8, 2, {8, 0}, {8, 1} },
    { 8, 2, {2, 4}, {2, 4} },             /* everything fixed and right */
    { 20, 2, {0, 5}, {4, 5} },
    { 7, 1, {0}, {7} },
    { 97, 3, {0, 0, 0}, {97, 1, 1} },
    { 100, 2, {0, 0}, {10, 10} },
    { 1000, 3, {0, 0, 0}, {10, 10, 10} },
    { 72, 4, {0, 0, 0, 0}, {4, 3, 3, 2} },
    { 5040, 3, {0, 0, 0}, {21, 16, 15} },  /* what a greedy split gets wrong */
    { 5040, 2, {0, 0}, {72, 70} },
    { 360, 3, {0, 0, 0}, {10, 6, 6} },
    { 3696, 3, {0, 0, 0}, {22, 14, 12} },
    { 2160, 4, {0, 0, 0, 0}, {10, 6, 6, 6} },
    { 20, 4, {0, 0, 0, 0}, {5, 2, 2, 1} },
    { 1000000000, 3, {0, 0, 0}, {1000, 1000, 1000} },
    { 1073741824, 4, {0, 0, 0, 0}, {256, 256, 128, 128} },
    { 2147483647, 2, {0, 0}, {2147483647, 1} },
};

/* better(a, b, nd): 1 if tuple a (non-increasing) is more balanced than b */
static int better(const int *a, const int *b, int nd)
{
    int sa = a[0] - a[nd - 1], sb = b[0] - b[nd - 1];
    if (sa != sb) return sa < sb;
    if (a[nd - 1] != b[nd - 1]) return a[nd - 1] > b[nd - 1];
    long suma = 0, sumb = 0;
    for (int i = 0; i < nd; i++) { suma += a[i]; sumb += b[i]; }
    return suma < sumb;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct dcase *c = &cases[k];
        int d[4];
        memcpy(d, c->in, sizeof d);
        KT_MPI(MPI_Dims_create(c->nnodes, c->ndims, d));
        for (int i = 0; i < c->ndims; i++)
            if (d[i] != c->out[i])
                KT_FAIL("Dims_create(%d, %d) case %zu: dims[%d] = %d, expected %d", c->nnodes,
                        c->ndims, k, i, d[i], c->out[i]);
    }

    /* properties: product right, free entries non-increasing, balanced
     * (checked against a brute force over all non-increasing tuples) */
    for (int n = 1; n <= 300; n++)
        for (int nd = 1; nd <= 4; nd++) {
            int d[4] = { 0, 0, 0, 0 };
            KT_MPI(MPI_Dims_create(n, nd, d));
            long p = 1;
            for (int i = 0; i < nd; i++) {
                KT_CHECK(d[i] >= 1, "n=%d nd=%d dims[%d]=%d", n, nd, i, d[i]);
                p *= d[i];
                if (i) KT_CHECK(d[i] <= d[i - 1], "n=%d nd=%d not non-increasing", n, nd);
            }
            KT_CHECK(p == n, "n=%d nd=%d product %ld", n, nd, p);
            int best[4] = { n, 1, 1, 1 }, t[4];
            for (int a = 1; a <= n; a++) {
                if (n % a) continue;
                for (int b = 1; b <= (nd > 1 ? a : 1); b++) {
                    if ((n / a) % b) continue;
                    for (int c = 1; c <= (nd > 2 ? b : 1); c++) {
                        if ((n / a / b) % c) continue;
                        int e = n / a / b / c;
                        if (nd == 1 && a != n) continue;
                        if (nd == 2 && c != 1) continue;
                        if (nd == 2 && e != 1) continue;
                        if (nd == 3 && e != 1) continue;
                        if (nd == 4 && e > c) continue;
                        t[0] = a; t[1] = b; t[2] = c; t[3] = e;
                        if (nd == 2) t[1] = b;
                        if (better(t, best, nd)) memcpy(best, t, sizeof t);
                    }
                }
            }
            for (int i = 0; i < nd; i++)
                KT_CHECK(d[i] == best[i], "n=%d nd=%d: dims[%d] = %d, the most balanced tuple has %d", n, nd,
                         i, d[i], best[i]);
        }

    /* ndims 0 with nnodes 1 is fine */
    KT_MPI(MPI_Dims_create(1, 0, NULL));

    /* errors */
    int d[3] = { 0, 4, 0 };
    KT_ERRCLASS(MPI_Dims_create(6, 3, d), MPI_ERR_DIMS);          /* 6 not a multiple of 4 */
    KT_CHECK(d[0] == 0 && d[2] == 0, "dims changed on error");
    int e[2] = { 2, 2 };
    KT_ERRCLASS(MPI_Dims_create(8, 2, e), MPI_ERR_DIMS);          /* all fixed, product 4 != 8 */
    int f[2] = { -1, 0 };
    KT_ERRCLASS(MPI_Dims_create(4, 2, f), MPI_ERR_DIMS);          /* negative entry */
    int g[2] = { 0, 0 };
    KT_ERRCLASS(MPI_Dims_create(4, -1, g), MPI_ERR_DIMS);
    int h[2] = { 0, 0 };
    int rc = MPI_Dims_create(0, 2, h);
    KT_CHECK(rc != MPI_SUCCESS, "Dims_create(0, ...) succeeded");

    MPI_Finalize();
    return 0;
}
