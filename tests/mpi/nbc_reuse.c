/* nbc_reuse: the same non-blocking collective again and again, on the same
 * buffers, and on buffers whose memory changes under the same address
 * between operations: what an engine that keeps a collective's set-up for
 * the next one like it must get right (the kmod engine keeps its
 * registrations with the KACC module, kumi_base_sched_kmod_reuse, and pins
 * the buffers at each start: tests/kmod/vm-init.sh runs this program there
 * and checks that registrations were reused).
 *  1. 300 rounds of MPI_Iallreduce (8 ints, sum) on the same two buffers
 *     and MPI_Ibcast (1000 bytes, the root rotating), new values each round.
 *  2. the result buffer (one page and 16 pages) unmapped and mapped again
 *     at the same address between two MPI_Iallreduce on it (MAP_FIXED: new
 *     zero pages), then given back with madvise(MADV_DONTNEED) between two
 *     more, and the send buffer too: every result must be in the memory the
 *     program sees at that address, computed from what it wrote there.
 *  3. a count that changes every round (nothing alike to reuse).
 * Every value is checked against one computed from rank, index and round. */
#define _GNU_SOURCE
#include "kt.h"
#include <sys/mman.h>
#include <unistd.h>

static int me, n;

static int val(int r, int i, int rd) { return r * 1009 + i * 7 + rd * 31; }

static int sum_of(int i, int rd)
{
    int s = 0;
    for (int r = 0; r < n; r++) s += val(r, i, rd);
    return s;
}

static void allreduce_check(int *sb, int *rb, int cnt, int rd, const char *what)
{
    MPI_Request q;
    for (int i = 0; i < cnt; i++) { sb[i] = val(me, i, rd); rb[i] = -1; }
    KT_MPI(MPI_Iallreduce(sb, rb, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q));
    KT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int i = 0; i < cnt; i++)
        if (rb[i] != sum_of(i, rd))
            KT_FAIL("%s, round %d, %d ints: element %d is %d, want %d", what, rd, cnt, i, rb[i], sum_of(i, rd));
}

/* 2: the pages under sb / rb change between operations on the same addresses */
static void remapped(int pages)
{
    size_t len = (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
    int cnt = (int)(len / sizeof(int));
    int *sb = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int *rb = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    KT_CHECK(sb != MAP_FAILED && rb != MAP_FAILED, "mmap: out of memory");
    char what[64];
    snprintf(what, sizeof what, "%d page(s), before any change", pages);
    allreduce_check(sb, rb, cnt, 1, what);
    allreduce_check(sb, rb, cnt, 2, what);
    /* new pages at the same address */
    KT_CHECK(munmap(rb, len) == 0, "munmap");
    int *rb2 = mmap(rb, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    KT_CHECK(rb2 == rb, "mmap MAP_FIXED did not give the same address back");
    snprintf(what, sizeof what, "%d page(s), result buffer mapped anew", pages);
    allreduce_check(sb, rb, cnt, 3, what);
    /* the pages given back: the next touch faults in new ones */
    KT_CHECK(madvise(rb, len, MADV_DONTNEED) == 0, "madvise");
    KT_CHECK(madvise(sb, len, MADV_DONTNEED) == 0, "madvise");
    snprintf(what, sizeof what, "%d page(s), both buffers given back (MADV_DONTNEED)", pages);
    allreduce_check(sb, rb, cnt, 4, what);
    allreduce_check(sb, rb, cnt, 5, what);
    munmap(sb, len);
    munmap(rb, len);
}

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int sb[8], rb[8];
    static unsigned char bb[1000];
    for (int rd = 0; rd < 300; rd++) {
        allreduce_check(sb, rb, 8, rd, "same buffers");
        int root = rd % n;
        MPI_Request q;
        for (int i = 0; i < (int)sizeof bb; i++) bb[i] = (unsigned char)(me == root ? i * 3 + rd : 0);
        KT_MPI(MPI_Ibcast(bb, sizeof bb, MPI_BYTE, root, MPI_COMM_WORLD, &q));
        KT_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
        for (int i = 0; i < (int)sizeof bb; i++)
            if (bb[i] != (unsigned char)(i * 3 + rd))
                KT_FAIL("MPI_Ibcast round %d from %d: byte %d is %d, want %d", rd, root, i, bb[i],
                        (unsigned char)(i * 3 + rd));
    }
    remapped(1);
    remapped(16);
    int *vs = malloc(sizeof(int) * 64), *vr = malloc(sizeof(int) * 64);
    KT_CHECK(vs && vr, "out of memory");
    for (int rd = 0; rd < 40; rd++) allreduce_check(vs, vr, 1 + rd % 64, rd, "a new count each round");
    free(vs);
    free(vr);
    if (me == 0) printf("nbc_reuse: %d ranks, all values right\n", n);
    KT_MPI(MPI_Finalize());
    return 0;
}
