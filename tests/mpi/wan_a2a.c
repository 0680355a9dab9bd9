/* wan_a2a: all-to-all traffic for the wide-area lab (tests/scripts/pacing_wan.sh,
 * tests/bench/wan-bench.sh).
 *
 *     wan_a2a [-b BYTES] [-n ITERS] [-k KIND] [-w WARMUP]
 *
 * KIND: a2a   MPI_Alltoall of BYTES per pair, every iteration (default);
 *       a2av  MPI_Alltoallv with uneven counts around BYTES (NAS IS's key
 *             exchange: a small MPI_Alltoall of the counts, then the
 *             MPI_Alltoallv of the keys);
 *       mix   MPI_Alltoall, then MPI_Allgather and MPI_Bcast of BYTES
 *             (collectives that are not paced by default), then MPI_Alltoallv.
 * Every received block is checked (its bytes say who sent it, to whom, in
 * which iteration).  Rank 0 prints
 *     wan_a2a: KIND P ranks BYTES B ITERS it: T s (per iteration MS ms)
 * where T is the slowest rank's time of the measured iterations. */
#include "kt.h"
#include <stdint.h>
#include <unistd.h>

static unsigned char val(int from, int to, int it, size_t i)
{
    return (unsigned char)(from * 31 + to * 7 + it * 13 + i * 5 + (i >> 9));
}

static void fill(unsigned char *b, size_t n, int from, int to, int it)
{
    for (size_t i = 0; i < n; i++) b[i] = val(from, to, it, i);
}

static void check(const unsigned char *b, size_t n, int from, int to, int it, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != val(from, to, it, i))
            KT_FAIL("%s iteration %d: byte %zu from rank %d is %u, expected %u", what, it, i, from, b[i],
                    val(from, to, it, i));
}

/* The bytes rank `from` sends rank `to` in an a2av iteration: uneven, like
 * IS's buckets (between half and one and a half BYTES). */
static size_t vcount(size_t bytes, int from, int to, int it)
{
    return bytes / 2 + (size_t)((unsigned)(from * 7 + to * 3 + it) % 11) * bytes / 10;
}

int main(int argc, char **argv)
{
    size_t bytes = 65536;
    int iters = 5, warm = 1, c;
    const char *kind = "a2a";
    while ((c = getopt(argc, argv, "b:n:k:w:")) != -1) {
        if (c == 'b') bytes = strtoull(optarg, NULL, 10);
        else if (c == 'n') iters = atoi(optarg);
        else if (c == 'k') kind = optarg;
        else if (c == 'w') warm = atoi(optarg);
        else { fprintf(stderr, "usage: wan_a2a [-b BYTES] [-n ITERS] [-k a2a|a2av|mix] [-w WARMUP]\n"); return 2; }
    }
    KT_MPI(MPI_Init(&argc, &argv));
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int v = !strcmp(kind, "a2av"), mix = !strcmp(kind, "mix");
    KT_CHECK(v || mix || !strcmp(kind, "a2a"), "unknown kind %s", kind);
    size_t blk = (v || mix) ? bytes * 3 / 2 + 1 : bytes;
    unsigned char *sb = malloc(blk * (size_t)p + 1), *rb = malloc(blk * (size_t)p + 1);
    unsigned char *gb = mix ? malloc(bytes * (size_t)p + 1) : NULL;
    int *sc = malloc(sizeof(int) * (size_t)p), *rc = malloc(sizeof(int) * (size_t)p);
    int *sd = malloc(sizeof(int) * (size_t)p), *rd = malloc(sizeof(int) * (size_t)p);
    KT_CHECK(sb && rb && sc && rc && sd && rd && (!mix || gb), "out of memory");
    double t0 = 0;
    for (int it = 0; it < warm + iters; it++) {
        if (it == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (!v) {
            for (int j = 0; j < p; j++) fill(sb + (size_t)j * bytes, bytes, me, j, it);
            KT_MPI(MPI_Alltoall(sb, (int)bytes, MPI_BYTE, rb, (int)bytes, MPI_BYTE, MPI_COMM_WORLD));
            for (int j = 0; j < p; j++) check(rb + (size_t)j * bytes, bytes, j, me, it, "MPI_Alltoall");
        }
        if (mix) {
            fill(sb, bytes, me, -1, it);
            KT_MPI(MPI_Allgather(sb, (int)bytes, MPI_BYTE, gb, (int)bytes, MPI_BYTE, MPI_COMM_WORLD));
            for (int j = 0; j < p; j++) check(gb + (size_t)j * bytes, bytes, j, -1, it, "MPI_Allgather");
            if (me == 0) fill(gb, bytes, 0, -2, it);
            KT_MPI(MPI_Bcast(gb, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD));
            check(gb, bytes, 0, -2, it, "MPI_Bcast");
        }
        if (v || mix) {
            int so = 0;
            for (int j = 0; j < p; j++) {
                sc[j] = (int)vcount(bytes, me, j, it);
                sd[j] = so;
                fill(sb + so, (size_t)sc[j], me, j, it);
                so += sc[j];
            }
            /* the counts first, as IS does */
            KT_MPI(MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD));
            int ro = 0;
            for (int j = 0; j < p; j++) {
                KT_EQ_INT(rc[j], vcount(bytes, j, me, it));
                rd[j] = ro;
                ro += rc[j];
            }
            KT_MPI(MPI_Alltoallv(sb, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE, MPI_COMM_WORLD));
            for (int j = 0; j < p; j++) check(rb + rd[j], (size_t)rc[j], j, me, it, "MPI_Alltoallv");
        }
    }
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (me == 0)
        printf("wan_a2a: %s %d ranks %zu B %d it: %.3f s (per iteration %.2f ms)\n", kind, p, bytes, iters, tmax,
               iters ? tmax * 1e3 / iters : 0.0);
    free(sb); free(rb); free(gb); free(sc); free(rc); free(sd); free(rd);
    MPI_Finalize();
    return 0;
}
