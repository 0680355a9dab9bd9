/* The io_uring schedule engine moves a collective's data while the root
 * computes outside MPI (run with KUMI_BASE_SCHED_ENGINE=uring over tcp).
 *
 * The root starts an MPI_Ibcast of N bytes and then stays out of MPI: it
 * sleeps, watching a side channel (files in a directory the ranks share)
 * until every other rank has finished its MPI_Wait and checked the data.
 *
 *   sched_uring progress [MiB]   every other rank must finish while the root
 *                                is outside MPI (within 30 s)
 *   sched_uring noprogress [MiB] the engine fell back to the loop engine
 *                                (io_uring unavailable): no rank may finish
 *                                while the root stays outside MPI (2 s); the
 *                                collective completes once it calls MPI_Wait
 * Both then run an MPI_Iallreduce and MPI_Ibcast of other sizes and check
 * the values. */
#include "kt.h"
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned char val(size_t i, int k) { return (unsigned char)((i * 131u + (size_t)k * 7u) & 0xff); }

static int count_done(const char *dir, int size)
{
    int n = 0;
    char p[512];
    for (int r = 1; r < size; r++) {
        snprintf(p, sizeof p, "%s/done.%d", dir, r);
        if (access(p, F_OK) == 0) n++;
    }
    return n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bool expect = argc < 2 || strcmp(argv[1], "noprogress") != 0;
    size_t n = (size_t)(argc > 2 ? atoi(argv[2]) : expect ? 1 : 8) << 20;

    char dir[256] = "";
    if (rank == 0) {
        snprintf(dir, sizeof dir, "%s/kumi-uring-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        KT_CHECK(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
    }
    KT_MPI(MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD));

    unsigned char *buf = malloc(n);
    KT_CHECK(buf != NULL, "out of memory");
    for (size_t i = 0; i < n; i++) buf[i] = rank == 0 ? val(i, 1) : 0;
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    MPI_Request req;
    KT_MPI(MPI_Ibcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &req));
    if (rank == 0) {
        /* outside MPI from here until the others are done (or the deadline) */
        double limit = expect ? 30.0 : 2.0, t0 = kt_now();
        int done = 0;
        while ((done = count_done(dir, size)) < size - 1 && kt_now() - t0 < limit) usleep(5000);
        double t = kt_now() - t0;
        if (expect)
            KT_CHECK(done == size - 1, "only %d of %d ranks received the %zu bytes while the root stayed "
                     "outside MPI for %.1f s", done, size - 1, n, t);
        else
            KT_CHECK(done == 0, "%d ranks finished while the root stayed outside MPI, with io_uring said "
                     "unavailable (the loop engine cannot move data then)", done);
        KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (expect) printf("sched_uring: %d ranks got %zu bytes in %.3f s while the root was outside MPI\n",
                           size - 1, n, t);
    } else {
        KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (size_t i = 0; i < n; i++)
            KT_CHECK(buf[i] == val(i, 1), "byte %zu: %d, expected %d", i, buf[i], val(i, 1));
        char p[512];
        snprintf(p, sizeof p, "%s/done.%d", dir, rank);
        FILE *f = fopen(p, "w");
        KT_CHECK(f != NULL, "cannot create %s", p);
        fclose(f);
    }
    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        char p[512];
        for (int r = 1; r < size; r++) {
            snprintf(p, sizeof p, "%s/done.%d", dir, r);
            unlink(p);
        }
        rmdir(dir);
    }

    /* values of other operations and sizes on the same engine */
    for (int k = 0; k < 3; k++) {
        int cnt = k == 0 ? 1 : k == 1 ? 1000 : 200000;
        long long *a = malloc((size_t)cnt * sizeof *a), *b = malloc((size_t)cnt * sizeof *b);
        KT_CHECK(a && b, "out of memory");
        for (int i = 0; i < cnt; i++) a[i] = (long long)rank * 1000 + i;
        KT_MPI(MPI_Iallreduce(a, b, cnt, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &req));
        KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        long long rs = (long long)size * (size - 1) / 2 * 1000;
        for (int i = 0; i < cnt; i++)
            KT_CHECK(b[i] == rs + (long long)size * i, "allreduce[%d]: %lld, expected %lld", i, b[i],
                     rs + (long long)size * i);
        int root = k % size;
        for (int i = 0; i < cnt; i++) a[i] = rank == root ? i * 3 + k : -1;
        KT_MPI(MPI_Ibcast(a, cnt, MPI_LONG_LONG, root, MPI_COMM_WORLD, &req));
        KT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (int i = 0; i < cnt; i++) KT_CHECK(a[i] == i * 3 + k, "bcast[%d]: %lld", i, a[i]);
        free(a);
        free(b);
    }
    free(buf);
    MPI_Finalize();
    if (rank == 0) printf("sched_uring: OK\n");
    return 0;
}
