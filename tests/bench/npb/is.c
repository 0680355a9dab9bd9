/* NAS-style IS kernel, written for Kumi from the NPB specification (not NASA's code).
 * Integer bucket sort: 2^n keys in [0, 2^m), each key = (r1 + r2 + r3 + r4) * 2^m / 4 from four
 * numbers of NPB's generator (x <- 5^13 x mod 2^46, seed 314159265), split in equal blocks
 * over the ranks.  Ten iterations; in iteration i, rank 0 first sets its keys i and i + 10 to i
 * and 2^m - i (as the benchmark does); then every key is counted in one of 2^10 buckets (its
 * top bits), the global bucket sizes come from MPI_Allreduce, consecutive buckets are given to
 * the ranks in equal shares of keys, the counts go by MPI_Alltoall and the keys by
 * MPI_Alltoallv, and each rank ranks its keys by counting.
 *   is [CLASS]     CLASS S (2^16 keys < 2^11), W (2^20 < 2^16), A (2^23 < 2^19).  Default A.
 * The number of ranks must divide the number of keys.
 * Verification (after the last iteration): the keys each rank holds, placed by their ranks,
 * are in order, the last key of each rank is at most the first of the next, and the number
 * of keys and their sum are those before the exchange; the "result:" line (a checksum of the
 * sorted sequence, position-weighted) must be the same for every build. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITER 10
#define NB_LOG2 10
#define M46 ((UINT64_C(1) << 46) - 1)
#define M23 ((UINT64_C(1) << 23) - 1)

static uint64_t mulmod46(uint64_t a, uint64_t b)
{
    uint64_t t = ((a >> 23) * (b & M23) + (a & M23) * (b >> 23)) & M23;
    return ((t << 23) + (a & M23) * (b & M23)) & M46;
}
static uint64_t powmod46(uint64_t b, uint64_t e)
{
    uint64_t z = 1;
    for (; e; e >>= 1, b = mulmod46(b, b))
        if (e & 1) z = mulmod46(z, b);
    return z;
}
static double randlc(uint64_t *x)
{
    *x = mulmod46(UINT64_C(1220703125), *x);
    return (double)*x * (1.0 / (double)(UINT64_C(1) << 46));
}

static int rank, np, max_key_log2;
static long total, nlocal;
static int *keys, *sendbuf, *recvbuf, *counts;
static long recv_cap, nrecv;
static int key_lo, key_hi;      /* this rank's key range after the exchange */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "is: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 3); }
    return p;
}

static void one_iteration(int it)
{
    int nb = 1 << NB_LOG2, shift = max_key_log2 - NB_LOG2, b, d;
    static long *lsize, *gsize, *bptr;
    static int *owner, *scount, *rcount, *sdispl, *rdispl;
    if (!lsize) {
        lsize = xmalloc(sizeof(long) * nb); gsize = xmalloc(sizeof(long) * nb); bptr = xmalloc(sizeof(long) * nb);
        owner = xmalloc(sizeof(int) * nb);
        scount = xmalloc(sizeof(int) * np); rcount = xmalloc(sizeof(int) * np);
        sdispl = xmalloc(sizeof(int) * np); rdispl = xmalloc(sizeof(int) * np);
    }
    if (rank == 0) { keys[it] = it; keys[it + MAX_ITER] = (1 << max_key_log2) - it; }
    memset(lsize, 0, sizeof(long) * nb);
    for (long i = 0; i < nlocal; i++) lsize[keys[i] >> shift]++;
    MPI_Allreduce(lsize, gsize, nb, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    /* bucket b goes to the rank whose share of the keys holds the bucket's first key */
    long cum = 0;
    for (b = 0; b < nb; b++) {
        long o = cum * np / total;
        owner[b] = (int)(o < np ? o : np - 1);
        cum += gsize[b];
    }
    key_lo = -1; key_hi = -1;
    for (b = 0; b < nb; b++)
        if (owner[b] == rank) { if (key_lo < 0) key_lo = b << shift; key_hi = (b + 1) << shift; }
    if (key_lo < 0) key_lo = key_hi = 0;
    /* keys in bucket order into sendbuf */
    memset(scount, 0, sizeof(int) * np);
    long p = 0;
    for (b = 0; b < nb; b++) { bptr[b] = p; p += lsize[b]; scount[owner[b]] += (int)lsize[b]; }
    for (long i = 0; i < nlocal; i++) sendbuf[bptr[keys[i] >> shift]++] = keys[i];
    MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
    sdispl[0] = rdispl[0] = 0;
    for (d = 1; d < np; d++) { sdispl[d] = sdispl[d - 1] + scount[d - 1]; rdispl[d] = rdispl[d - 1] + rcount[d - 1]; }
    nrecv = (long)rdispl[np - 1] + rcount[np - 1];
    if (nrecv > recv_cap) { free(recvbuf); recv_cap = nrecv + nrecv / 8; recvbuf = xmalloc(sizeof(int) * recv_cap); }
    MPI_Alltoallv(sendbuf, scount, sdispl, MPI_INT, recvbuf, rcount, rdispl, MPI_INT, MPI_COMM_WORLD);
    /* rank the received keys: counts, then prefix sums (counts[k - key_lo] = number of keys <= k) */
    int span = key_hi - key_lo;
    memset(counts, 0, sizeof(int) * (size_t)(span + 1));
    for (long i = 0; i < nrecv; i++) counts[recvbuf[i] - key_lo]++;
    for (int k = 1; k < span; k++) counts[k] += counts[k - 1];
}

int main(int argc, char **argv)
{
    const char *cls = argc > 1 ? argv[1] : "A";
    int total_log2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    switch (cls[0]) {
    case 'S': total_log2 = 16; max_key_log2 = 11; break;
    case 'W': total_log2 = 20; max_key_log2 = 16; break;
    case 'A': total_log2 = 23; max_key_log2 = 19; break;
    default:
        if (rank == 0) fprintf(stderr, "is: class must be S, W or A\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
        return 2;
    }
    total = 1L << total_log2;
    if (total % np) {
        if (rank == 0) fprintf(stderr, "is: the number of ranks must divide %ld\n", total);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    nlocal = total / np;
    keys = xmalloc(sizeof(int) * nlocal);
    sendbuf = xmalloc(sizeof(int) * nlocal);
    counts = xmalloc(sizeof(int) * ((size_t)(1 << max_key_log2) + 1));
    recv_cap = 2 * nlocal;
    recvbuf = xmalloc(sizeof(int) * recv_cap);
    uint64_t x = mulmod46(314159265, powmod46(1220703125, (uint64_t)4 * rank * nlocal));
    double k4 = (double)(1 << max_key_log2) / 4.0;
    for (long i = 0; i < nlocal; i++) {
        double r = randlc(&x);
        r += randlc(&x);
        r += randlc(&x);
        r += randlc(&x);
        keys[i] = (int)(k4 * r);
    }

    one_iteration(1);       /* untimed, as the benchmark does */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 1; it <= MAX_ITER; it++) one_iteration(it);
    double t1 = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t1, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    /* full verification: place each received key by its rank */
    int ok = 1;
    long long sum_before = 0, sum_after = 0, g[4], lg[4];
    for (long i = 0; i < nlocal; i++) sum_before += keys[i];
    int *sorted = xmalloc(sizeof(int) * (size_t)(nrecv ? nrecv : 1));
    for (long i = 0; i < nrecv; i++) {
        int k = recvbuf[i];
        if (k < key_lo || k >= key_hi) { ok = 0; continue; }
        sorted[--counts[k - key_lo]] = k;
        sum_after += k;
    }
    for (long i = 1; i < nrecv; i++)
        if (sorted[i - 1] > sorted[i]) ok = 0;
    /* across ranks: my first key is not below the last key of the rank before (ranks with no keys pass on theirs) */
    int last_prev = -1, mine_last;
    for (int r = 0; r < np - 1; r++) {   /* a chain: rank r sends its last (or the inherited) to r + 1 */
        if (rank == r + 1) MPI_Recv(&last_prev, 1, MPI_INT, r, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank == r) {
            mine_last = nrecv ? sorted[nrecv - 1] : last_prev;
            MPI_Send(&mine_last, 1, MPI_INT, r + 1, 7, MPI_COMM_WORLD);
        }
    }
    if (nrecv && last_prev > sorted[0]) ok = 0;
    /* a position-weighted checksum of the sorted sequence */
    long long off = 0, n = nrecv, ck = 0;
    MPI_Exscan(&n, &off, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) off = 0;
    for (long i = 0; i < nrecv; i++) ck += (long long)sorted[i] * ((off + i) % 1021 + 1);
    lg[0] = n; lg[1] = sum_before; lg[2] = sum_after; lg[3] = ck;
    MPI_Allreduce(lg, g, 4, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (g[0] != total || g[1] != g[2]) ok = 0;
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        if (len > 40) len = 40;
        printf(" keys %lld (of %ld), key sum %lld before and %lld after the exchange\n", g[0], total, g[1], g[2]);
        printf("kernel=IS class=%s ranks=%d time=%12.6f verified=%s\n", cls, np, t1, ok ? "yes" : "no");
        printf("library: %.*s\n", len, lib);
        printf("result: keys=%lld sum=%lld checksum=%lld\n", g[0], g[2], g[3]);
    }
    MPI_Finalize();
    return ok ? 0 : 1;
}
